// Polytope physics: built-in scenes as data, defined once and shared by the tests, bench/, the server's
// built-in scenes and the viewer.
//
// Units: metres, kilograms, seconds; gravity along -y; the ground is the plane y = 0 (jolt_pyramid: a static
// box whose top face is y = 0; terrain: a heightfield; convex_vs_mesh: a triangle mesh). Benchmark scenes use
// unit cubes (1 m, density 1000 kg/m^3) with friction 0.6; jolt_pyramid uses Jolt's boxes and friction.
#pragma once

#include "polytope/physics/world.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace polytope::physics
{

struct SceneInfo
{
    std::string_view name;
    std::string_view description;
    /// Adds the scene's bodies to an empty world. Returns false if the world refused a body (capacity).
    bool (*build)(World& world);
};

/// Every built-in scene, in a fixed order.
std::span<const SceneInfo> builtinScenes();
/// The built-in scene of that name, or nullptr. parseSceneName also accepts the sized names.
const SceneInfo* findScene(std::string_view name);

// ---- Scene names ----------------------------------------------------------------------------------------
// One grammar for every program that takes a scene by name (viewer, bench, server):
//   NAME        a built-in scene (builtinScenes(): "default", "stack10", "pile1000", "mixed", ...)
//   pile:N      buildPile(world, N):    N unit cubes dropped in a heap, N = 1 .. kMaxSizedSceneCubes
//   stack:N     buildStack(world, N):   N unit cubes stacked,           N = 1 .. kMaxSizedSceneCubes
//   pyramid:N   buildPyramid(world, N): N unit cubes at the base,       N = 1 .. kMaxPyramidBase
// N is decimal, without sign or spaces. "stack30" and "stack:30" build the same scene.

/// Most cubes a sized scene may hold: a default World (65536 bodies) takes them with the ground plane.
inline constexpr int kMaxSizedSceneCubes = 65535;
/// Largest base of pyramid:N, whose N (N + 1) / 2 cubes stay within kMaxSizedSceneCubes.
inline constexpr int kMaxPyramidBase = 361;
static_assert(kMaxPyramidBase * (kMaxPyramidBase + 1) / 2 <= kMaxSizedSceneCubes &&
              (kMaxPyramidBase + 1) * (kMaxPyramidBase + 2) / 2 > kMaxSizedSceneCubes);

/// Friction of every body in the stacks, pyramids, piles and heavy_on_light (pairs combine by geometric
/// mean).
inline constexpr float kSceneFriction = 0.6f;
/// Friction of every body in jolt_pyramid: Jolt's default (BodyCreationSettings::mFriction).
inline constexpr float kJoltPyramidFriction = 0.2f;

/// The families of sized scene names.
enum class SizedScene : std::uint8_t
{
    Pile,    ///< pile:N, buildPile
    Stack,   ///< stack:N, buildStack
    Pyramid, ///< pyramid:N, buildPyramid
};

/// A parsed scene name: a built-in scene, or a sized family with its N.
struct SceneName
{
    const SceneInfo* builtin = nullptr; ///< the built-in scene; nullptr for a sized name
    SizedScene family = SizedScene::Pile;
    int count = 0; ///< N of a sized name (cubes of a pile or a stack, base of a pyramid)
};

/// Parses `name` by the grammar above. On failure returns false and sets `error` to a message that names
/// the accepted forms (and, for a sized name, the range of N).
bool parseSceneName(std::string_view name, SceneName& out, std::string& error);

/// Adds the scene's bodies to an empty world (default frictions). False when the world refused a body.
bool buildScene(World& world, const SceneName& scene);

/// parseSceneName, then buildScene. On failure returns false and sets `error` (an unknown name, or a scene
/// the world had no room for).
bool buildNamedScene(World& world, std::string_view name, std::string& error);

/// The accepted names, for help text: every built-in name, then "pile:N, stack:N, pyramid:N".
std::string acceptedSceneNames();

/// The static ground: the plane y = 0 with the given friction.
bool addGroundPlane(World& world, float friction = kSceneFriction);

/// A vertical stack of `count` unit cubes resting exactly on each other on the ground (the lowest cube's
/// centre at y = 0.5), all with `friction`.
bool buildStack(World& world, int count, float friction = kSceneFriction);

/// A single wall of unit cubes in the xy plane: `base` cubes on the ground, one fewer on each row above,
/// centred on x = 0, each row resting exactly on the one below and cubes touching side by side.
bool buildPyramid(World& world, int base, float friction = kSceneFriction);

/// `count` unit cubes dropped onto the ground from a grid 10 layers high (side ceil(sqrt(count / 10))),
/// 1.5 m apart, each slightly turned (deterministically) so the pile does not stay a grid.
bool buildPile(World& world, int count, float friction = kSceneFriction);

/// Jolt Physics' performance-test pyramid (PerformanceTest/PyramidScene.h): 1240 cubes of 2 m in 15 levels,
/// level i holding (15 - i)^2 cubes that touch side by side, odd levels shifted by half a cube in x and z;
/// level i's centres at y = 1 + 2.5 i, so each level starts 0.5 m above the one below and falls onto it. The
/// ground is a static box of 100 x 2 x 100 m whose top face is y = 0. Every body has friction
/// kJoltPyramidFriction and density 1000 kg/m^3; the cubes never sleep (allowSleep false), as in Jolt's test.
bool buildJoltPyramid(World& world);

/// A cube of 20 m (8e6 kg) resting on four unit cubes (1000 kg each: 8000:1 in mass) on the ground, one under
/// each corner of its bottom face, inset 0.5 m so that each lies wholly under it (centres at x, z = +-9). The
/// big cube's bottom face rests exactly on the small cubes' tops (y = 1). Density 1000 kg/m^3, friction
/// kSceneFriction.
bool buildHeavyOnLight(World& world);

/// Spheres, capsules, boxes and convex hulls (a tetrahedron, an octahedron, a wedge and a 20-point
/// blob) falling in a heap onto the ground; some bouncy, some slippery.
bool buildMixed(World& world);

/// A unit cube at rest on a static slab tilted by `angleRadians` about z.
bool buildRamp(World& world, float angleRadians = 0.35f, float friction = kSceneFriction);

/// A 2D scene in the xy plane: boxes with planar degrees of freedom (planarDofs(2)) falling onto three
/// slopes turned about z, with the ground below.
bool buildPlanar(World& world);

// ---- Jointed scenes (scenes_joints.cpp) -----------------------------------------------------------------
// Each returns false when the world refused a body or a joint (capacity).

/// Links of the chain scene, and metres between a link's two joint anchors.
inline constexpr int kChainLinks = 20;
inline constexpr float kChainLinkPitchMeters = 0.6f;
/// Where the chain hangs from: the centre of its static anchor block, and the first link's joint.
inline constexpr Vec3 kChainAnchor{0.0f, 14.0f, 0.0f};

/// A chain of kChainLinks capsules (radius 0.1 m, axis 0.5 m, 1000 kg/m^3, damping 0.2/s) joined end to end
/// by Ball joints, the first to a static block at kChainAnchor, laid out along +x from it and let go, so that
/// it swings down and, within about a minute, comes to hang (12 m long: its end 2 m above the ground). Link
/// i's axis is its local y: its joint with link i - 1 (or the block) is at local (0, -kChainLinkPitchMeters /
/// 2, 0), its joint with link i + 1 at (0, +kChainLinkPitchMeters / 2, 0). Bodies in order: the ground plane,
/// the block, the links from the block outward; joints likewise.
bool buildChain(World& world);

/// Planks of the bridge scene, metres between the anchors on its two posts, and their height.
inline constexpr int kBridgePlanks = 40;
inline constexpr float kBridgeSpanMeters = 19.0f;
inline constexpr float kBridgeAnchorHeightMeters = 6.0f;
/// Boxes dropped on the bridge.
inline constexpr int kBridgeBoxes = 4;

/// A rope bridge: kBridgePlanks planks (0.5 x 0.1 x 3 m, 600 kg/m^3, damping 0.5/s, 20 m end to end) joined
/// edge to edge by Hinge joints about z, the end planks hinged to two static posts standing on the ground,
/// whose anchors are kBridgeSpanMeters apart at height kBridgeAnchorHeightMeters (x = -+kBridgeSpanMeters /
/// 2). The planks start on the circular arc that makes that span, so every joint starts without error; the
/// bridge sags about 2.6 m in the middle. kBridgeBoxes boxes (0.6 m, 500 kg/m^3) fall onto it from 1 m above,
/// 4 m apart; it comes to rest with them in about 15 s. Bodies in order: the ground plane, the two posts (-x
/// first), the planks from -x, the boxes.
bool buildBridge(World& world);

/// Wheels of the car scene: radius, the speed their motors drive them at, and the motors' torque limit.
inline constexpr float kCarWheelRadiusMeters = 0.4f;
inline constexpr float kCarWheelSpeedRadiansPerSecond = 8.0f;
inline constexpr float kCarMotorTorqueNewtonMeters = 400.0f;
/// The car's starting x (it drives toward +x), where the ramp starts, and the ramp's slope.
inline constexpr float kCarStartX = -8.0f;
inline constexpr float kCarRampStartX = -3.0f;
inline constexpr float kCarRampDegrees = 10.0f;

/// A car: a box chassis (2.4 x 0.5 x 1.2 m, 300 kg/m^3) on four sphere wheels (kCarWheelRadiusMeters,
/// 500 kg/m^3), each on a Hinge joint about z whose motor (MotorMode::Velocity, at most
/// kCarMotorTorqueNewtonMeters) turns it at kCarWheelSpeedRadiansPerSecond so that the car rolls toward +x.
/// It starts on the ground at x = kCarStartX and drives up a ramp of static boxes: a 10 m incline of
/// kCarRampDegrees from x = kCarRampStartX, a 12 m platform at its top, and a wall at the platform's end
/// that stops it (where it comes to rest, motors stalled, after about 9 s). Bodies in order: the ground
/// plane, the incline, the platform, the wall, the chassis, the wheels (front left, front right, back left,
/// back right); joints in the wheels' order.
bool buildCar(World& world);

/// Samples per side of the terrain scene's heightfield, and metres between them: a 128 m square centred on
/// the origin.
inline constexpr std::uint32_t kTerrainSamples = 129;
inline constexpr float kTerrainCellMeters = 1.0f;

/// Hills in a basin: a heightfield of kTerrainSamples x kTerrainSamples samples (generated in code, heights
/// from about -1.6 m in the valleys to 5.5 m at the corners, slopes under 15 degrees near the middle) with 36
/// dynamic bodies dropped 2.5 to 3.5 m above it on a 6 x 6 grid 3 m apart: spheres, boxes, capsules and two
/// compounds (a dumbbell, a table on four legs). No ground plane: the heightfield is the ground. Adds one
/// heightfield and two compounds to the catalogues.
bool buildTerrain(World& world);

/// A static triangle-mesh level built in code: a round bowl 32 m across (a flat floor of radius 9 m at
/// y = 0, then a parabolic wall 4.9 m high at the rim), with a staircase of four 0.3 m steps and a ramp up to
/// the same 1.2 m, both standing on the floor and closed at their sides; 64 bodies fall into it from a 4 x 4
/// grid in 4 layers (spheres, boxes, capsules, octahedral hulls, and three compounds: a dumbbell, a table
/// and an arrow whose head is a hull). No ground plane: the mesh is the ground. Adds one mesh, two hulls and
/// three compounds to the catalogues.
bool buildConvexVsMesh(World& world);

// ---- Ragdolls (scenes_ragdoll.cpp) ------------------------------------------------------------------------
// One humanoid ragdoll, described as data so that the tests, the `ragdolls` scene and bench/ (which builds
// the same ragdoll in Bullet) share every number. The ragdoll frame: standing, the soles at y = 0, facing +z,
// its left side toward +x. At rest every part is upright (identity rotation): boxes for the pelvis and the
// chest, capsules along their local y for the head and the limbs (arms hanging at the sides).

/// The parts of a ragdoll, in the order addRagdoll creates their bodies.
enum class RagdollPart : std::uint8_t
{
    Pelvis,
    Chest,
    Head,
    UpperArmLeft,
    LowerArmLeft,
    UpperArmRight,
    LowerArmRight,
    UpperLegLeft,
    LowerLegLeft,
    UpperLegRight,
    LowerLegRight,
};
inline constexpr int kRagdollPartCount = 11;
/// Joints of a ragdoll: spine, neck, shoulders and hips (cone-twist), elbows and knees (hinges).
inline constexpr int kRagdollJointCount = 10;

/// One part: its shape and where its shape origin sits in the ragdoll frame at rest (no rotation).
struct RagdollPartDesc
{
    std::string_view name;
    Shape shape{};   ///< a box or a capsule (along local y)
    Vec3 position{}; ///< metres, ragdoll frame
};

/// One joint. Body A is the part nearer the pelvis (`parent`), body B the other (`child`). `frame` is the
/// joint's frame in the ragdoll frame at rest, where both bodies' frames coincide: the anchor, and as its x
/// axis the twist axis (cone-twist, pointing from the parent into the child) or the hinge axis (the angle
/// grows as the joint bends: elbows bend the forearm forward, knees the shin backward).
struct RagdollJointDesc
{
    std::string_view name;
    JointType type = JointType::ConeTwist; ///< ConeTwist or Hinge
    RagdollPart parent = RagdollPart::Pelvis;
    RagdollPart child = RagdollPart::Chest;
    Transform frame{};      ///< ragdoll frame, at rest
    float coneAngle = 0.0f; ///< ConeTwist: the largest angle between the two twist axes, radians
    JointLimit limit{}; ///< ConeTwist: the twist range (symmetric, -t .. t); Hinge: the angle range (radians)
};

/// The whole ragdoll: parts, joints and material. Masses follow from the shapes and `density` (about 79 kg).
struct RagdollModel
{
    std::array<RagdollPartDesc, kRagdollPartCount> parts;
    std::array<RagdollJointDesc, kRagdollJointCount> joints;
    float density = 1000.0f; ///< kg/m^3, every part
    float friction = kSceneFriction;
};

/// The humanoid ragdoll that addRagdoll builds (the same object on every call).
const RagdollModel& humanoidRagdoll();

/// A joint's frame in the local frame of its part `part` (the parent's or the child's): what JointDesc's
/// frameA or frameB gets.
Transform ragdollLocalFrame(const RagdollModel& model, const RagdollJointDesc& joint, RagdollPart part);

/// The bodies and joints addRagdoll made, in the order of RagdollModel's parts and joints.
struct RagdollIds
{
    std::array<BodyId, kRagdollPartCount> bodies{};
    std::array<JointId, kRagdollJointCount> joints{};
};

/// Adds one humanoidRagdoll() with its frame at `placement` (world), every part a dynamic body in collision
/// group `group` (non-zero: the parts never collide with each other, but do with everything else), joined as
/// the model says (collideConnected false). Writes the ids to `out` when given. False when the world refused
/// a body or a joint (capacity); what was added before stays.
bool addRagdoll(World& world, const Transform& placement, std::uint32_t group, RagdollIds* out = nullptr);

/// Ragdolls in the `ragdolls` scene.
inline constexpr int kRagdollPileCount = 20;

/// Where ragdoll i (0 .. kRagdollPileCount - 1) of the `ragdolls` scene starts: lying face down, its middle
/// over the origin at 0.3 + 0.4 i metres, turned about the vertical by i times 137.5 degrees, so that each
/// crosses the one below it.
Transform ragdollPilePlacement(int i);

/// The `ragdolls` scene: the ground plane and kRagdollPileCount ragdolls at ragdollPilePlacement(i), ragdoll
/// i in collision group i + 1, dropped together into a pile.
bool buildRagdolls(World& world);

} // namespace polytope::physics

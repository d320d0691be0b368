// Polytope physics: the world, its bodies and the fixed-step simulation.
//
// Bodies are addressed by generational ids: a slot index plus a generation that changes whenever the slot
// is reused, so a stale id is detected instead of silently naming another body. Per-body data lives in
// contiguous arrays indexed by slot, iterated in slot order; contacts are kept in a vector sorted by body
// pair; nothing in a step depends on hash-map order or on addresses. A step is therefore deterministic for
// the same binary and the same sequence of calls, and saveState/restoreState capture everything that
// shapes the future, so a restored world re-simulates bit-exactly (network rollback).
//
// One step (World::step, see world.cpp and contact_solver.h for the details):
//   1. broadphase pairs: new overlaps of the bodies' fat boxes become contacts;
//   2. narrowphase: every contact with an awake body gets a fresh manifold (narrowphase.h), matched to the
//      previous one by feature id to carry the accumulated impulses (warm starting);
//   3. bodies touching an awake body wake up (whole sleeping islands at a time);
//   4. the soft-step solver (Box2D v3's "soft step"): substeps of integrate velocities, warm start, solve
//      with soft position bias, integrate positions, relax; then restitution and storing impulses. Islands
//      that would sag or buckle at the base rate (tall stacks and walls, heavy bodies on light ones) are
//      solved with 2, 4, .. times the substeps and as much stiffer contacts (chooseSubstepLevels);
//   5. fat boxes follow the bodies; islands whose bodies all rested long enough fall asleep;
//   6. sensors (BodyDesc::isSensor) find which bodies overlap them at the poses the step ended with
//      (world_sensors.cpp).
//
// Capacities (bodies, contacts, hulls) are fixed by WorldConfig and reserved at creation, so a step
// allocates nothing; running out is reported (createBody's status, step's StepStatus), never a crash.
#pragma once

#include "polytope/physics/broadphase.h"
#include "polytope/physics/collide_composite.h"
#include "polytope/physics/constraint_graph.h"
#include "polytope/physics/contact_solver.h"
#include "polytope/physics/function_ref.h"
#include "polytope/physics/heightfield.h"
#include "polytope/physics/ids.h"
#include "polytope/physics/island.h"
#include "polytope/physics/joint_solver.h"
#include "polytope/physics/joints.h"
#include "polytope/physics/manifold.h"
#include "polytope/physics/math.h"
#include "polytope/physics/raycast.h"
#include "polytope/physics/shape_cast.h"
#include "polytope/physics/shapes.h"
#include "polytope/physics/triangle_mesh.h"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace polytope::physics
{

enum class BodyType : std::uint8_t
{
    Static = 0,    ///< never moves; infinite mass
    Kinematic = 1, ///< moved by its velocity only; infinite mass; pushes dynamic bodies
    Dynamic = 2,   ///< moved by gravity, forces and contacts
};

/// Degrees of freedom, as bits of BodyDesc::allowedDofs: translation along and rotation about the world
/// axes. A locked axis gets neither velocity nor impulse along it.
inline constexpr std::uint8_t kDofTranslationX = 1u << 0;
inline constexpr std::uint8_t kDofTranslationY = 1u << 1;
inline constexpr std::uint8_t kDofTranslationZ = 1u << 2;
inline constexpr std::uint8_t kDofRotationX = 1u << 3;
inline constexpr std::uint8_t kDofRotationY = 1u << 4;
inline constexpr std::uint8_t kDofRotationZ = 1u << 5;
inline constexpr std::uint8_t kDofAll = 0x3Fu;

/// Planar motion: translation in the plane perpendicular to world axis `normalAxis` (0 = x, 1 = y,
/// 2 = z) and rotation about that axis only. planarDofs(2) is the usual 2D game in the xy plane.
constexpr std::uint8_t planarDofs(int normalAxis)
{
    const std::uint8_t translation = static_cast<std::uint8_t>(0x7u & ~(1u << normalAxis));
    return static_cast<std::uint8_t>(translation | (kDofRotationX << normalAxis));
}

/// Bodies live within this distance of the origin (metres, per coordinate). Farther out float precision is
/// worse than a metre; createBody and setTransform refuse poses beyond it, and a body that a step would
/// carry beyond it is stopped where it was (StepFlag::NonFiniteBodyState).
inline constexpr float kWorldBoundMeters = 1.0e6f;
/// Largest accumulated contact impulse a contact keeps for warm starting (N s): 1e12 kg at 1000 m/s. A
/// solve that ends beyond it (or not finite: bodies with absurd but finite properties) starts the next step
/// cold instead of applying it again.
inline constexpr float kMaxContactImpulse = 1e15f;
/// Whether p is within kWorldBoundMeters on every axis (false for NaN).
inline bool withinWorldBound(const Vec3& p)
{
    return std::fabs(p.x) <= kWorldBoundMeters && std::fabs(p.y) <= kWorldBoundMeters &&
           std::fabs(p.z) <= kWorldBoundMeters;
}
/// Substep levels an island can be solved at: WorldConfig::substeps times 1, 2, 4, .. 64.
inline constexpr int kMaxSubstepLevels = 7;
/// Seconds an island keeps a substep level after it stops asking for it, so that contacts coming and going
/// do not switch the level (and the contacts' stiffness) step by step.
inline constexpr float kSubstepLevelHoldSeconds = 1.0f;
/// Largest sag (metres) the most loaded joint of an island hanging from static or kinematic bodies is let
/// have at the island's substep level: its load over its stiffness, see chooseSubstepLevels.
inline constexpr float kJointSagTolerance = 2e-4f;
/// An island is slender when it is this many times taller (along gravity) than its narrower width: such a
/// structure can buckle, so the weight its supported bodies carry raises its substeps (see
/// WorldConfig::substepLoadRatio).
inline constexpr float kSlenderIslandRatio = 4.0f;

/// Collision layers a body can be on: 0 .. kMaxCollisionLayers - 1 (one bit of a 32-bit mask each).
inline constexpr std::uint32_t kMaxCollisionLayers = 32;

/// Everything needed to create a body.
struct BodyDesc
{
    BodyType type = BodyType::Dynamic;
    Shape shape{};
    Transform transform{};              ///< world frame; the shape's local origin
    Vec3 linearVelocity{};              ///< m/s, of the centre of mass
    Vec3 angularVelocity{};             ///< rad/s, world frame
    float density = 1000.0f;            ///< kg/m^3, > 0 for dynamic bodies
    float friction = 0.6f;              ///< Coulomb coefficient, >= 0; pairs combine by geometric mean
    float restitution = 0.0f;           ///< 0 (no bounce) .. 1 (elastic); pairs combine by max
    float linearDamping = 0.0f;         ///< 1/s, >= 0: dv/dt = -linearDamping * v
    float angularDamping = 0.0f;        ///< 1/s, >= 0
    float gravityScale = 1.0f;          ///< multiplies the world's gravity for this body
    std::uint8_t allowedDofs = kDofAll; ///< kDof* bits; see planarDofs
    bool allowSleep = true;             ///< false keeps this body (and its island) awake
    std::uint8_t layer = 0;             ///< collision layer, 0 .. kMaxCollisionLayers - 1: which other
                                        ///< layers it meets is the world's table (World::setLayersCollide)
    std::uint32_t group = 0;            ///< 0: none; bodies sharing a non-zero group never collide with
                                        ///< each other (a ragdoll's parts, a player and its projectiles)
    std::uint64_t userData = 0;
    bool isSensor = false; ///< a trigger: reports the bodies that overlap it (World::sensorEvents) and
                           ///< has no contact response at all (see "Sensors" below). Fixed at creation
};

/// A read-only view of one body's state.
struct BodyState
{
    BodyId id{};
    BodyType type = BodyType::Dynamic;
    Shape shape{};
    Transform transform{};   ///< world frame; the shape's local origin
    Vec3 centerOfMass{};     ///< metres, world frame
    Vec3 linearVelocity{};   ///< m/s, of the centre of mass
    Vec3 angularVelocity{};  ///< rad/s, world frame
    float mass = 0.0f;       ///< kg; 0 for static and kinematic bodies
    bool sleeping = false;   ///< asleep: not simulated until something wakes it
    std::uint8_t layer = 0;  ///< collision layer (BodyDesc::layer)
    std::uint32_t group = 0; ///< collision group (BodyDesc::group)
    std::uint64_t userData = 0;
    bool isSensor = false; ///< BodyDesc::isSensor
};

/// Every tunable of the world, with defaults for metre-sized objects at 60 Hz.
struct WorldConfig
{
    Vec3 gravity{0.0f, -9.81f, 0.0f}; ///< m/s^2

    // Capacities, fixed at creation (memory is reserved up front so that steps do not allocate).
    std::uint32_t maxBodies = 65536;    ///< bodies alive at once
    std::uint32_t maxContacts = 65536;  ///< body pairs with overlapping fat boxes (touching or not)
    std::uint32_t maxHulls = 1024;      ///< entries of the hull catalogue
    std::uint32_t maxCompounds = 1024;  ///< entries of the compound catalogue
    std::uint32_t maxMeshes = 256;      ///< entries of the triangle mesh catalogue
    std::uint32_t maxHeightFields = 64; ///< entries of the heightfield catalogue
    std::uint32_t maxJoints = 65536;    ///< joints alive at once (their storage is reserved with the first)

    // Solver (Box2D v3's soft step).
    int substeps = 4;                    ///< solver substeps per step, 1 .. 64
    int relaxIterations = 1;             ///< rigid (bias-free) passes per substep, 1 .. 16
    int limitIterations = 4;             ///< passes of the joints that have a limit (or a swing cone) in
                                         ///< each substep's solve, 1 .. 8: the first solves every joint, the
                                         ///< others only those. A limb struck as 20 ragdolls land on each
                                         ///< other passed its hinge limit by 2.6 degrees with 1 pass, 1.14
                                         ///< with 2, 0.84 with 3 and 0.23 with 4
    int maxSubsteps = 32;                ///< substeps of the most heavily loaded islands, substeps .. 64:
                                         ///< an island whose contacts carry much more than their bodies'
                                         ///< weight (tall stacks, a heavy body on light ones) is solved
                                         ///< with substeps times a power of two, and stiffer contacts
    float substepLoadRatio = 10.0f;      ///< a slender island's (a tall stack or wall) substeps double for
                                         ///< each doubling beyond this of its mass over the mass of its
                                         ///< bodies that rest on static or kinematic ones, >= 1
    float substepMassRatio = 16.0f;      ///< an island's substeps double for each 4x of the largest mass
                                         ///< ratio between touching bodies beyond this, >= 1
    float contactHertz = 30.0f;          ///< stiffness of contact position correction, Hz, at `substeps`
                                         ///< (an island solved with k times as many substeps gets k times
                                         ///< this), capped at a quarter of the substep rate
    float contactDampingRatio = 10.0f;   ///< damping ratio of contact position correction (10: no bounce)
    float contactPushoutVelocity = 3.0f; ///< m/s: cap on the velocity that resolves penetration
    float jointHertz = 60.0f;            ///< stiffness of joint drift correction, Hz, at `substeps` (scaled
                                         ///< with the substeps like contactHertz, capped at a quarter of the
                                         ///< substep rate)
    float jointDampingRatio = 2.0f;      ///< damping ratio of joint drift correction
    float linearSlop = 0.0f;             ///< metres of penetration left uncorrected (each resting contact
                                         ///< sinks this far, so tall stacks want 0)
    float speculativeDistance = 0.02f;   ///< metres: contacts are made this far before shapes touch
    float maxSpeculativeDistance = 4.0f; ///< metres: cap on the velocity-grown speculative distance of a
                                         ///< body (|v| dt + |w| dt * extent + |a| dt^2)
    float restitutionThreshold = 1.0f;   ///< m/s: slower impacts do not bounce
    float maxLinearSpeed = 400.0f;       ///< m/s, per body
    float broadphaseMargin = 0.1f;       ///< metres added around each body's box in the broadphase

    // Threads.
    int threads = 1; ///< threads that step the world, the caller included, 1 .. 64: narrowphase, solver
                     ///< colours and body updates are shared out; any count gives the same bits

    // Sleeping.
    bool enableSleep = true;
    float sleepVelocity = 0.05f; ///< m/s: a body rests while |v| + |w| * extent stays below this
    float timeToSleep = 0.5f;    ///< seconds an island must rest before it sleeps

    // Contact events (World::contactEvents).
    bool enableContactEvents = true;    ///< false: no events are gathered and their buffers are not reserved
    float hitEventThreshold = 1.0f;     ///< m/s: a touching contact whose normal approach speed exceeds this
                                        ///< in a step (and that was pushed apart) reports a hit
    std::uint32_t maxContactEvents = 0; ///< events of each kind (begin, end, hit) a step can report; 0:
                                        ///< maxContacts. Beyond it they are dropped and counted

    // Sensor events (World::sensorEvents). Sensors track their overlaps either way (World::sensorOverlaps).
    bool enableSensorEvents = true;    ///< false: no sensor events are gathered
    std::uint32_t maxSensorEvents = 0; ///< sensor events of each kind (begin, end) a step can report; 0:
                                       ///< maxContacts. Beyond it they are dropped and counted. Reserved
                                       ///< when the first sensor is created
};

enum class WorldStatus : std::uint8_t
{
    Ok = 0,
    BodyCapacityReached,  ///< createBody refused: maxBodies bodies exist
    InvalidBodyDesc,      ///< refused: a size, density or number is out of range or not finite
    StaleBodyId,          ///< the id names no live body
    HullCapacityReached,  ///< addHull refused: maxHulls hulls exist
    InvalidHull,          ///< addHull refused: the hull is not a closed, finite solid
    WrongBodyType,        ///< the call does not apply to this body's type (e.g. a force on a static body)
    CatalogueFull,        ///< addCompound, addMesh or addHeightField refused: that catalogue is full
    InvalidShape,         ///< addCompound, addMesh or addHeightField refused: invalid or empty geometry
    JointCapacityReached, ///< createJoint refused: maxJoints joints exist
    InvalidJointDesc, ///< createJoint (or a setter) refused: a body stale, the same body twice, no dynamic
                      ///< body, or a number out of range or not finite
    StaleJointId,     ///< the id names no live joint
};

/// Result of createBody: the id, or a null id and the reason.
struct CreateBodyResult
{
    BodyId id{};
    WorldStatus status = WorldStatus::Ok;
};

/// Result of createJoint: the id, or a null id and the reason.
struct CreateJointResult
{
    JointId id{};
    WorldStatus status = WorldStatus::Ok;
};

/// Result of addHull, addCompound, addMesh and addHeightField: the catalogue index to put in the Shape
/// (Shape::hullIndex, or Shape::catalogueIndex), or the reason it was refused.
struct AddShapeResult
{
    std::uint32_t index = 0;
    WorldStatus status = WorldStatus::Ok;
};
using AddHullResult = AddShapeResult;

/// What went wrong in a step, as bits (like Jolt's EPhysicsUpdateError). The step still completes.
enum class StepFlag : std::uint32_t
{
    InvalidTimeStep = 1u << 0,             ///< dt was not finite and > 0: nothing was simulated
    ContactCapacityReached = 1u << 1,      ///< some new body pairs got no contact (WorldConfig::maxContacts)
    ContactEventCapacityReached = 1u << 3, ///< some contact events were dropped (maxContactEvents)
    SensorEventCapacityReached = 1u << 4,  ///< some sensor events were dropped (maxSensorEvents)
    NonFiniteBodyState = 1u << 2, ///< a body's state became NaN/inf or left kWorldBoundMeters (bad forces?)
                                  ///< and was stopped at its last good pose
};

/// Flags of one step; ok() when none is set.
struct StepStatus
{
    std::uint32_t flags = 0;

    constexpr bool ok() const { return flags == 0; }
    constexpr bool has(StepFlag f) const { return (flags & static_cast<std::uint32_t>(f)) != 0; }
    constexpr void set(StepFlag f) { flags |= static_cast<std::uint32_t>(f); }
};

/// Outcome of restoreState. Anything but Ok leaves the world exactly as it was.
enum class RestoreStatus : std::uint8_t
{
    Ok = 0,
    Truncated,           ///< the buffer ends early
    BadMagic,            ///< not a saved world
    BadVersion,          ///< saved by another format version
    ConfigMismatch,      ///< saved by a world with different capacities or solver settings
    HullCatalogMismatch, ///< saved by a world whose catalogues (hulls, compounds, meshes, heightfields)
                         ///< differ from this world's
    Corrupt,             ///< sizes, indices or numbers out of range (including NaN/inf), or trailing bytes
};

/// Where the last step's time went, in milliseconds of wall time on the calling thread (after Box2D v3's
/// b2Profile). Phases that run on the worker threads count their whole span, so on 1 and 2 threads the
/// figures show which phases scale.
struct StepProfile
{
    float step = 0.0f;     ///< the whole step
    float boxes = 0.0f;    ///< broadphase boxes checked and replaced (tree changes)
    float pairs = 0.0f;    ///< new pairs found and merged
    float collide = 0.0f;  ///< narrowphase, waking, begin/end events
    float levels = 0.0f;   ///< islands and substep levels (chooseSubstepLevels)
    float setup = 0.0f;    ///< solver bodies and constraints gathered, filled, coloured, prepared
    float solver = 0.0f;   ///< substeps: integrate, warm start, solve, relax; restitution
    float store = 0.0f;    ///< impulses stored back, hit events
    float finalize = 0.0f; ///< poses, tight and fat boxes of the moved bodies
    float sleep = 0.0f;    ///< islands' rest, sleep, sensors
};

/// Counters of the last step, for tests, benchmarks and metrics.
struct StepStats
{
    std::uint32_t awakeBodies = 0; ///< dynamic and kinematic bodies simulated
    std::uint32_t sleepingBodies = 0;
    std::uint32_t contacts = 0;         ///< body pairs with overlapping fat boxes (sensor pairs included)
    std::uint32_t touchingContacts = 0; ///< contacts with at least one manifold point (solved)
    std::uint32_t contactPoints = 0;    ///< manifold points solved
    std::uint32_t islands = 0;          ///< awake islands
    std::uint32_t droppedPairs = 0;     ///< new pairs refused for lack of contact capacity
    std::uint32_t raisedBodies = 0; ///< bodies solved with more than WorldConfig::substeps (loaded islands)
    std::uint32_t mostSubsteps = 0; ///< the most substeps any island was solved with
    std::uint32_t droppedContactEvents = 0; ///< events of the step beyond WorldConfig::maxContactEvents
    StepProfile profile{};                  ///< time per phase
    std::uint32_t sensorOverlaps = 0;       ///< (sensor, visitor) pairs overlapping after the step
    std::uint32_t droppedSensorEvents = 0;  ///< sensor events of the step beyond WorldConfig::maxSensorEvents
    std::uint32_t joints = 0;               ///< joints solved (at least one body awake)
    std::uint32_t brokenJoints = 0;         ///< joints that broke in the step
};

// ---- Contact events (World::contactEvents) --------------------------------------------------------------
// What changed between touching bodies in the last step, like Box2D v3's begin/end/hit events. "Touching"
// means the pair's manifold has points, speculative ones included (shapes within the speculative distance,
// about to meet): begin and end follow the manifold's point count going from 0 to some and back. Rules:
//  - a sleeping pair keeps its manifold, so falling asleep and waking report nothing (as in Box2D);
//  - a touching contact removed for any reason reports end: its boxes came apart, a body was destroyed
//    (destroyBody; reported with the next step's events, ahead of that step's own), or the filters no
//    longer let the pair collide;
//  - restoreState discards pending events, and a contact restored touching is still touching: no begin.
// Each kind is in contact key order (the pair's lower body slot, then the higher), so the sequence is the
// same for any thread count; the ends of contacts removed by destroyBody or by a filter change come first.
// Bodies are in the contact's roles: the normal points from bodyA to bodyB.

/// Two bodies started touching in the step.
struct ContactBeginEvent
{
    BodyId bodyA{};
    BodyId bodyB{};
    Vec3 point{};  ///< metres, world frame: the manifold's first point (midway between the surfaces)
    Vec3 normal{}; ///< unit, world frame, from A towards B
};

/// Two bodies stopped touching in the step (or their contact was removed since the last step). Either id
/// may name a body destroyed since (destroyBody), so check isValid before using it.
struct ContactEndEvent
{
    BodyId bodyA{};
    BodyId bodyB{};
};

/// A touching contact that approached faster than WorldConfig::hitEventThreshold in the step and was pushed
/// apart (some normal impulse was applied): an impact, for sounds and damage.
struct ContactHitEvent
{
    BodyId bodyA{};
    BodyId bodyB{};
    Vec3 point{};                  ///< metres, world frame: the manifold point that approached fastest
    Vec3 normal{};                 ///< unit, world frame, from A towards B
    float approachSpeed = 0.0f;    ///< m/s, > threshold: the fastest normal approach seen in the step
    float maxNormalImpulse = 0.0f; ///< N s: the largest normal impulse one substep applied, summed over the
                                   ///< points (the impact's impulse when it is stopped in one substep)
};

/// The last step's events; the spans stay valid until the next step, restoreState or the world's end.
struct ContactEvents
{
    std::span<const ContactBeginEvent> begin;
    std::span<const ContactEndEvent> end;
    std::span<const ContactHitEvent> hit;
};

// ---- Sensors (world_sensors.cpp) ------------------------------------------------------------------------
// A sensor (BodyDesc::isSensor) is a body of any type that reports which other bodies overlap it, as Box2D
// v3's sensor shapes and Jolt's sensor bodies do, and takes no part in contact response: it makes no
// constraint, pushes and is pushed by nothing, joins no island, wakes or keeps awake nothing, and has no
// contact events. A static or kinematic sensor is the usual trigger volume; a dynamic one moves under
// gravity, velocities and forces like any dynamic body and passes through everything.
//  - What a sensor detects ("visitors"): bodies that are not sensors, whose shapes overlap or touch its
//    shape (the narrowphase manifold has a point of separation <= 0; the speculative margin plays no part),
//    and that the collision filters (layers, groups) let meet it. A static sensor detects dynamic and
//    kinematic bodies, a kinematic one dynamic and kinematic bodies, a dynamic one every body, static ones
//    included. Sensors never detect sensors.
//  - When: at the end of each step, at the poses the step ended with (after the solve and sleep), as in
//    Box2D v3.1: an overlap seen after step() is reported by that step. A pair is evaluated again whenever
//    the two bodies' relative pose changed since it was last evaluated, whatever moved them (velocities,
//    setTransform, either body awake or not) and is otherwise kept, so a visitor that falls asleep inside a
//    sensor stays inside (no end), and a kinematic sensor sweeping over sleeping bodies detects them without
//    waking them. A sensor created between steps reports its first overlaps at the end of the next step.
//  - Ends are also reported when the pair goes away for any other reason: a body was destroyed (reported
//    with the next step's events, ahead of that step's own), the filters no longer let the pair meet, or
//    a teleport took the bodies apart.
//  - Order: ends of pairs removed since the last step first, then the step's changes in contact key order
//    (the pair's lower body slot, then the higher), the same for any thread count. Snapshots carry each
//    pair's overlap, so a restore reports no begin for visitors already inside.
// Sensor pairs are contacts of the pair machinery without a manifold, so they count against
// WorldConfig::maxContacts. World queries leave sensors out unless QueryFilter::includeSensors is set.

/// A body started overlapping a sensor in the step.
struct SensorBeginEvent
{
    BodyId sensor{};
    BodyId visitor{};
};

/// A body stopped overlapping a sensor in the step (or their pair was removed since the last step). Either
/// id may name a body destroyed since (destroyBody), so check isValid before using it.
struct SensorEndEvent
{
    BodyId sensor{};
    BodyId visitor{};
};

/// The last step's sensor events; the spans stay valid until the next step, restoreState or the world's end.
struct SensorEvents
{
    std::span<const SensorBeginEvent> begin;
    std::span<const SensorEndEvent> end;
};

// ---- World queries (world_queries.cpp) ------------------------------------------------------------------
// Rays, shape casts, overlaps and distances against every body (planes included), between steps. Each
// query is const and touches no shared scratch, so several threads may query one world at once (but not
// while it steps or changes); none allocates. Results are in the world frame. Queries see the bodies where
// the last step (or createBody, setTransform, restoreState) left them; sleeping bodies count.
// Compounds, meshes and heightfields are queried piece by piece: each compound child, each mesh or
// heightfield triangle (heightfield holes have none), and the first piece hit, or the nearest, stands for
// the body, with its index in `subShape` (ties to the lower index). Triangles are two-sided for queries, as
// for rays (rayTriangle in raycast.h): flat convex sets with no inside, met from either face, at their
// edges and at their vertices, so a shape under a floor touches it as one above does, and a start in
// contact reports the shortest way out of that triangle, through either face or past an edge. (Contacts
// treat triangles as one-sided; see collide_triangle.h.) A shape cast moving in a triangle's plane hits its
// edge; a ray there does not (rays are edge-on within about 1e-6 rad).

/// Bits of QueryFilter::bodyTypes.
inline constexpr std::uint8_t kQueryStatic = 1u << 0;
inline constexpr std::uint8_t kQueryKinematic = 1u << 1;
inline constexpr std::uint8_t kQueryDynamic = 1u << 2;
inline constexpr std::uint8_t kQueryAllBodyTypes = kQueryStatic | kQueryKinematic | kQueryDynamic;

/// Which bodies a query sees. Every test must pass: cheap fields first, the callback last. The default sees
/// every body. To query as a body on layer L in group G would collide, use layerMask = world.layerMask(L)
/// and ignoreGroup = G. Sensors are left out unless includeSensors is set.
struct QueryFilter
{
    std::uint32_t layerMask = 0xFFFFFFFFu;       ///< bit l set: bodies on layer l are seen
    std::uint32_t ignoreGroup = 0;               ///< non-zero: bodies in this group are skipped
    BodyId ignoreBody{};                         ///< not null: this body is skipped (the caster itself)
    std::uint8_t bodyTypes = kQueryAllBodyTypes; ///< kQuery* bits: the body types seen
    bool includeSensors = false;                 ///< true: sensor bodies are seen too
    /// Optional, called last for a body that passed the rest: false skips it. Called on the querying
    /// thread, possibly for bodies the query then finds no hit on; it must not change the world. A
    /// FunctionRef refers to the callable without copying it: assign a named lambda that outlives the
    /// query, never a temporary.
    FunctionRef<bool(BodyId)> accept{};
};

/// A ray's hit on a body.
struct RayQueryHit
{
    BodyId body{};
    float fraction = 0.0f; ///< t of the hit along the ray, in [0, maxFraction]
    Vec3 point{};          ///< metres, world frame
    Vec3 normal{};         ///< unit, world frame, out of the body's surface (see raycast.h for starts inside)
    std::uint32_t subShape = 0; ///< the compound child or the mesh or heightfield triangle hit; 0 otherwise
};

/// A shape cast's hit on a body (ShapeCastHit of shape_cast.h, with the body).
struct ShapeQueryHit
{
    BodyId body{};
    float fraction = 0.0f;         ///< time of impact, in [0, maxFraction]
    Vec3 point{};                  ///< metres, world frame: contact point on the body's surface
    Vec3 normal{0.0f, 1.0f, 0.0f}; ///< unit, world frame: from the body toward the moving shape
    float penetrationDepth = 0.0f; ///< metres, >= 0: overlap at the start (startPenetrating only)
    bool startPenetrating = false; ///< the shape overlaps the body at fraction 0
    std::uint32_t subShape = 0; ///< the compound child or the mesh or heightfield triangle hit; 0 otherwise
};

/// The distance from a query shape to a body, with the closest points (or, overlapping, the deepest ones).
struct DistanceQueryResult
{
    BodyId body{};
    float distance = 0.0f;         ///< metres, signed: the gap when apart, minus the penetration depth when
                                   ///< overlapping
    Vec3 pointOnShape{};           ///< metres, world frame: on the query shape
    Vec3 pointOnBody{};            ///< metres, world frame: on the body
    Vec3 normal{0.0f, 1.0f, 0.0f}; ///< unit, world frame, from the body toward the query shape:
                                   ///< pointOnShape - pointOnBody = distance * normal
    std::uint32_t subShape = 0; ///< the nearest compound child or mesh or heightfield triangle; 0 otherwise
};

/// What a query's per-hit callback returns (Box2D's b2CastResultFcn convention): a negative value to ignore
/// this hit and go on; 0 to stop the query; a fraction in (0, current maximum) to clip the ray or cast there
/// (farther hits are not reported after it); the current maximum (e.g. ray.maxFraction) or more to go on.
using RayHitCallback = FunctionRef<float(const RayQueryHit&)>;
/// See RayHitCallback.
using ShapeHitCallback = FunctionRef<float(const ShapeQueryHit&)>;
/// Called per body found; false stops the query.
using BodyCallback = FunctionRef<bool(BodyId)>;
/// Called per body within the distance; false stops the query.
using DistanceCallback = FunctionRef<bool(const DistanceQueryResult&)>;

class World
{
  public:
    explicit World(const WorldConfig& config = {});

    /// Adds a convex hull to the catalogue and returns its index for Shape::hullIndex. The hull must be a
    /// closed solid as built by buildConvexHull or makeBoxHull (checked: indices, finite numbers, volume).
    /// Hulls are never removed: bodies refer to them by index.
    AddHullResult addHull(const ConvexHull& hull);
    /// The hull catalogue.
    std::span<const ConvexHull> hulls() const { return m_hulls; }
    /// Adds a compound (see CompoundShape; checked by validateCompound against the hull catalogue, so add
    /// its hulls first) and returns its index for Shape::catalogueIndex (Shape::makeCatalogued). Compounds
    /// may be on bodies of any type.
    AddShapeResult addCompound(const CompoundShape& compound);
    /// Adds a triangle mesh, shared (worlds of one server may hold the same level without copying it), and
    /// returns its index for Shape::catalogueIndex. Meshes go on static or kinematic bodies. InvalidShape for
    /// a null or empty mesh.
    AddShapeResult addMesh(std::shared_ptr<const TriangleMesh> mesh);
    /// Adds a heightfield, shared, for static or kinematic bodies; as addMesh.
    AddShapeResult addHeightField(std::shared_ptr<const HeightField> heightField);
    /// Every catalogue, for the narrowphase and queries (views valid until the next add).
    ShapeCatalogue catalogue() const { return {m_hulls, m_compounds, m_meshPointers, m_heightFieldPointers}; }
    std::span<const CompoundShape> compounds() const { return m_compounds; }
    /// The mesh at a catalogue index (< meshCount()).
    const TriangleMesh& mesh(std::uint32_t index) const { return *m_meshes[index]; }
    std::uint32_t meshCount() const { return static_cast<std::uint32_t>(m_meshes.size()); }
    /// The heightfield at a catalogue index (< heightFieldCount()).
    const HeightField& heightField(std::uint32_t index) const { return *m_heightFields[index]; }
    std::uint32_t heightFieldCount() const { return static_cast<std::uint32_t>(m_heightFields.size()); }
    /// Whether `shape` can go on a body of `type` in this world: valid numbers, catalogue indices in range,
    /// planes static, meshes and heightfields not dynamic.
    bool shapeFits(const Shape& shape, BodyType type) const;

    /// Adds a body. Refuses (with a status, never a crash) when full or when the description is invalid.
    CreateBodyResult createBody(const BodyDesc& desc);
    /// Removes a body; its id becomes stale. Bodies it touched wake up. Returns StaleBodyId when it names
    /// no live body.
    WorldStatus destroyBody(BodyId id);
    bool isValid(BodyId id) const;

    // ---- Joints (joints.h; world_joints.cpp) -----------------------------------------------------------

    /// Adds a joint between two bodies, with its frames in the bodies' local frames. Wakes both bodies; when
    /// !collideConnected their contact (if any) goes at the next step. InvalidJointDesc for a stale body,
    /// the same body twice, no dynamic body, or numbers out of range; JointCapacityReached when full.
    CreateJointResult createJoint(const JointDesc& desc);
    /// As createJoint, with both frames given by one world frame at the bodies' current poses (the joint
    /// starts with no error); desc.frameA and frameB are ignored.
    CreateJointResult createJoint(const JointDesc& desc, const Transform& worldFrame);
    /// Removes a joint (its id becomes stale) and wakes its bodies. No event is reported. StaleJointId.
    WorldStatus destroyJoint(JointId id);
    bool isValid(JointId id) const;
    /// The joint's state; false when the id is stale.
    bool getJoint(JointId id, JointState& out) const;
    /// Changes a joint's motor, limit, spring or break thresholds between steps, waking its bodies.
    /// InvalidJointDesc when the values are out of range (see JointDesc), StaleJointId.
    WorldStatus setJointMotor(JointId id, const JointMotor& motor);
    WorldStatus setJointLimit(JointId id, const JointLimit& limit);
    WorldStatus setJointSpring(JointId id, const JointSpring& spring);
    WorldStatus setJointBreakThresholds(JointId id, float breakForce, float breakTorque);
    /// The frame `world` (world coordinates) in body `id`'s local frame at its current pose; false when the
    /// id is stale.
    bool localFrameOf(BodyId id, const Transform& world, Transform& local) const;
    std::uint32_t jointCount() const { return m_jointCount; }
    /// Calls fn(const JointState&) for every live joint, in slot order.
    template <class Fn> void forEachJoint(Fn&& fn) const
    {
        JointState state;
        for (std::uint32_t j = 0; j < static_cast<std::uint32_t>(m_joints.size()); ++j)
        {
            if (m_joints[j].alive)
            {
                fillJointState(j, state);
                fn(static_cast<const JointState&>(state));
            }
        }
    }
    /// The joints that went away: those destroyed with a body since the previous step, then those that
    /// broke in the last step, each in joint slot order. Valid until the next step, restoreState or the
    /// world's end.
    std::span<const JointEvent> jointEvents() const { return m_jointEvents; }

    /// Advances the simulation by dt seconds (a fixed step: callers keep dt constant for best results).
    StepStatus step(float dt);

    /// The body's state; false when the id is stale.
    bool getBody(BodyId id, BodyState& out) const;
    /// Sets the velocities (m/s of the centre of mass, rad/s) and wakes the body. Static bodies ignore it.
    WorldStatus setVelocity(BodyId id, const Vec3& linear, const Vec3& angular);
    /// Moves the body (teleport: no velocity change) and wakes it.
    WorldStatus setTransform(BodyId id, const Transform& transform);
    /// Adds a force (N) acting at `pointWorld` (metres) during the next step; wakes the body. Dynamic only.
    WorldStatus applyForce(BodyId id, const Vec3& force, const Vec3& pointWorld);
    /// Adds a force (N) at the centre of mass during the next step; wakes the body. Dynamic only.
    WorldStatus applyCentralForce(BodyId id, const Vec3& force);
    /// Adds a torque (N m, world frame) during the next step; wakes the body. Dynamic only.
    WorldStatus applyTorque(BodyId id, const Vec3& torque);
    /// Applies an impulse (N s) at `pointWorld` now, changing the velocities at once; wakes the body.
    WorldStatus applyImpulse(BodyId id, const Vec3& impulse, const Vec3& pointWorld);
    /// Applies an angular impulse (N m s, world frame) now; wakes the body.
    WorldStatus applyAngularImpulse(BodyId id, const Vec3& angularImpulse);
    /// Wakes the body and its island.
    WorldStatus wakeBody(BodyId id);

    // Collision filtering. Two bodies collide only when the layer table lets their layers meet and they do
    // not share a non-zero group (and, as always, at least one is dynamic). Filtered pairs never become
    // contacts. Changes take effect at the next step: contacts that became filtered are removed then (their
    // bodies woken if they touched), and pairs newly allowed are found then (see setBodyFilter).

    /// Sets whether layers a and b (0 .. kMaxCollisionLayers - 1; the table is symmetric, a == b allowed)
    /// collide; every pair collides in a new world. When a pair of layers is allowed again, the bodies on
    /// them are searched for new pairs at the next step, and the sleeping ones whose broadphase boxes
    /// overlap a body of the other layer are woken. InvalidBodyDesc for a layer out of range.
    WorldStatus setLayersCollide(std::uint32_t a, std::uint32_t b, bool collide);
    /// Whether layers a and b collide; false when either is out of range.
    bool layersCollide(std::uint32_t a, std::uint32_t b) const;
    /// The layers that `layer` collides with, as bits (bit l: layer l); 0 when out of range. Handy as a
    /// QueryFilter::layerMask.
    std::uint32_t layerMask(std::uint32_t layer) const;
    /// Moves the body to `layer` (0 .. kMaxCollisionLayers - 1) and `group` (0: none). The body, and the
    /// sleeping bodies whose broadphase boxes overlap its own, wake; its pairs are searched again at the
    /// next step. StaleBodyId, or InvalidBodyDesc for a layer out of range.
    WorldStatus setBodyFilter(BodyId id, std::uint8_t layer, std::uint32_t group);

    /// Calls fn(const BodyState&) for every live body, in slot order.
    template <class Fn> void forEachBody(Fn&& fn) const
    {
        BodyState state;
        for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(m_bodies.size()); ++i)
        {
            if (m_bodies[i].alive)
            {
                fillState(i, state);
                fn(static_cast<const BodyState&>(state));
            }
        }
    }

    std::uint32_t bodyCount() const { return m_bodyCount; }
    std::uint64_t stepCount() const { return m_stepCount; }
    const WorldConfig& config() const { return m_config; }
    void setGravity(const Vec3& g) { m_config.gravity = g; }
    /// Counters of the last step.
    const StepStats& stepStats() const { return m_stats; }
    /// The last step's contact events (see ContactEvents above); empty when
    /// WorldConfig::enableContactEvents is false.
    ContactEvents contactEvents() const { return {m_beginEvents, m_endEvents, m_hitEvents}; }
    /// The last step's sensor events (see "Sensors" above); empty when WorldConfig::enableSensorEvents is
    /// false.
    SensorEvents sensorEvents() const { return {m_sensorBeginEvents, m_sensorEndEvents}; }
    /// Calls onVisitor for each body overlapping `sensor` as of the last step (see "Sensors" above), in
    /// ascending slot order, until it returns false. A visitor destroyed since is no longer listed; a sensor
    /// created since lists nothing yet. Visits every contact of the world: O(contacts). StaleBodyId, or
    /// WrongBodyType when the body is not a sensor.
    WorldStatus sensorOverlaps(BodyId sensor, BodyCallback onVisitor) const;

    // ---- Queries (world_queries.cpp; see QueryFilter above). Invalid input (NaN or infinite numbers, a
    // negative maxFraction, a shape that is not valid for this world's hull catalogue) reports nothing.
    // Ties (two bodies at the same fraction) go to the lower body index, so results are deterministic.

    /// The closest body the ray (world frame; see raycast.h) hits: smallest fraction. False on a miss.
    bool castRayClosest(const RayCastInput& ray, const QueryFilter& filter, RayQueryHit& hit) const;
    /// Some body the ray hits, the first one found (cheapest for line-of-sight tests). False on a miss.
    bool castRayAny(const RayCastInput& ray, const QueryFilter& filter, RayQueryHit& hit) const;
    /// Every body the ray hits, each once, in no particular order (planes first), through `onHit` (see
    /// RayHitCallback: it may clip the ray or stop).
    void castRayAll(const RayCastInput& ray, const QueryFilter& filter, RayHitCallback onHit) const;

    /// The first body a translating shape (sphere, capsule, box or hull; see shape_cast.h) touches: the
    /// smallest fraction. Bodies it starts in contact with have fraction 0, so among them the lowest index
    /// wins, not the deepest (castShapeAll reports each with its depth). The same holds for the pieces of
    /// a body: on a mesh, the first triangle touched, and at the start the lowest-indexed triangle in
    /// contact, with its own depth. Mesh and heightfield triangles are cast by castShapeTriangle, with its
    /// accuracy (shape_cast.h). False on a miss.
    bool castShapeClosest(const ShapeCastInput& cast, const QueryFilter& filter, ShapeQueryHit& hit) const;
    /// Every body a translating shape touches, each once with its first contact, in no particular order
    /// (planes first), through `onHit` (see ShapeHitCallback: it may clip the cast or stop).
    void castShapeAll(const ShapeCastInput& cast, const QueryFilter& filter, ShapeHitCallback onHit) const;

    /// Every body that overlaps or touches `shape` (sphere, capsule, box or hull) placed at `transform`:
    /// exact, by GJK on the two shapes (closed form for planes; each child of a compound, each triangle of
    /// a mesh or heightfield, not its box), touching within GJK's tolerance (1e-6 of the shapes' size)
    /// counting. Bodies in no particular order (planes first).
    void overlapShape(const Shape& shape, const Transform& transform, const QueryFilter& filter,
                      BodyCallback onBody) const;
    /// Every body whose tight box (the shape's box at its pose) overlaps or touches `box` (world frame,
    /// metres); a plane when `box` reaches into its half-space. Candidates come from the broadphase's fat
    /// boxes and are then checked against the tight ones. In no particular order (planes first).
    void overlapAabb(const Aabb& box, const QueryFilter& filter, BodyCallback onBody) const;
    /// Every body within `maxDistance` metres (>= 0) of `shape` placed at `transform`, with the signed
    /// distance and the closest points (GJK; overlapping bodies, distance < 0, get EPA's penetration depth
    /// and deepest points). A compound, mesh or heightfield reports its nearest piece (the deepest, when
    /// overlapping): each triangle is measured alone, so a shape sunk deep into a mesh gets the depth of
    /// the triangle it leaves most slowly, which may be sideways, off it. In no particular order (planes
    /// first).
    void closestPoints(const Shape& shape, const Transform& transform, float maxDistance,
                       const QueryFilter& filter, DistanceCallback onBody) const;

    /// A 64-bit hash of every live body's id, transform, velocities and sleep state and of the step
    /// count: equal hashes mean (with overwhelming likelihood) bit-identical simulation states.
    std::uint64_t stateHash() const;

    /// Replaces `out` with a snapshot of everything that shapes the future (bodies, contacts with their
    /// impulses and feature ids, fat boxes, sleep state, forces pending, gravity, step count) and a
    /// fingerprint of the hull catalogue (hulls themselves are not stored). May allocate.
    void saveState(std::vector<std::uint8_t>& out) const;
    /// Replaces the world's state with a snapshot made by saveState of a world with the same WorldConfig
    /// capacities and solver settings and the same hull catalogue (add the hulls first). Either everything
    /// is loaded or nothing is: a truncated, corrupt or foreign buffer is refused with a status and the
    /// world is left unchanged. May allocate.
    RestoreStatus restoreState(std::span<const std::uint8_t> data);

  private:
    struct Body
    {
        std::uint32_t generation = 0;
        bool alive = false;
        BodyType type = BodyType::Dynamic;
        bool sleeping = false;
        bool allowSleep = true;
        bool sensor = false;           ///< BodyDesc::isSensor
        bool pendingPlaneTest = false; ///< fat box changed since the last plane-pair check
        bool proxyMoved = false;       ///< fat box changed since the last broadphase pair update
        std::uint8_t allowedDofs = kDofAll;
        std::uint8_t layer = 0;               ///< collision layer, < kMaxCollisionLayers
        std::uint32_t group = 0;              ///< collision group, 0: none
        std::int32_t proxy = kNullProxy;      ///< broadphase proxy; kNullProxy for planes
        std::uint32_t islandNext = kNoIsland; ///< next body of its sleeping island, or kNoIsland
        std::uint32_t jointList = kNoJoint;   ///< first joint of the body's list (Joint::next), or kNoJoint
        std::uint64_t userData = 0;
    };
    static constexpr std::uint32_t kNoIsland = 0xFFFFFFFFu;
    static constexpr std::uint32_t kNoJoint = 0xFFFFFFFFu;

    /// A joint (by slot). desc.bodyA and bodyB name its bodies (their slots and generations).
    struct Joint
    {
        std::uint32_t generation = 0;
        bool alive = false;
        JointDesc desc{};
        std::uint32_t next[2] = {kNoJoint, kNoJoint}; ///< next joint in body A's list, in body B's list
        JointImpulses impulses{};                     ///< over the last step: the next step's warm start
        Vec3 force{};                                 ///< N, on B over the last step
        Vec3 torque{};                                ///< N m
    };
    /// Per joint slot: what the per-step passes over every joint read (12 bytes, not a Joint's 250), kept
    /// with m_joints by createJoint, removeJoint, setJointBreakThresholds and restoreState.
    struct JointLink
    {
        std::uint32_t a = 0; ///< body A's slot
        std::uint32_t b = 0; ///< body B's slot
        bool alive = false;
        bool breakable = false; ///< a finite breakForce or breakTorque
    };

    /// Motion state and mass of a body (by slot).
    struct BodySim
    {
        Transform transform{}; ///< shape origin, world
        Vec3 center{};         ///< centre of mass, world
        Vec3 localCenter{};    ///< centre of mass, shape frame
        Vec3 linearVelocity{};
        Vec3 angularVelocity{};
        Vec3 force{};  ///< N, accumulated until the next step
        Vec3 torque{}; ///< N m
        float inverseMass = 0.0f;
        Mat3 inertiaLocal = Mat3::zero();        ///< kg m^2 about the centre of mass, shape axes
        Mat3 inverseInertiaLocal = Mat3::zero(); ///< inverse of inertiaLocal (zero for non-dynamic)
        float extent = 0.0f;                     ///< metres: farthest surface point from the centre of mass
        float sleepTime = 0.0f;                  ///< seconds at rest
        std::uint8_t substepLevel = 0;           ///< the substep level its island last ran at (or holds)
        float substepLevelHold = 0.0f;           ///< seconds that level is kept once no load asks for it
        bool isotropicInertia = true; ///< inertia is a multiple of identity (spheres, cubes): no gyroscopic
                                      ///< term
    };

    struct Material
    {
        float friction = 0.6f;
        float restitution = 0.0f;
        float linearDamping = 0.0f;
        float angularDamping = 0.0f;
        float gravityScale = 1.0f;
    };

    /// A persistent contact between two bodies whose fat boxes overlap. Roles are ordered so that the
    /// narrowphase routine exists for (type of A, type of B) without mirroring where possible.
    struct Contact
    {
        std::uint32_t bodyA = 0;
        std::uint32_t bodyB = 0;
        ContactManifold manifold{};                  ///< A's frame
        float normalImpulse[kMaxManifoldPoints]{};   ///< N s over the last step, for warm starting
        float tangentImpulse1[kMaxManifoldPoints]{}; ///< along the manifold's first tangent (A's frame)
        float tangentImpulse2[kMaxManifoldPoints]{};
        float friction = 0.0f;
        float restitution = 0.0f;
        Transform cacheRelative{};  ///< B's pose in A's frame the manifold's points are placed for
        Transform madeRelative{};   ///< B's pose in A's frame when the manifold was computed
        float cacheMargin = -1.0f;  ///< metres it was computed with (see reuseManifold); < 0: recompute
        bool sensor = false;        ///< one body is a sensor: no manifold, no response (world_sensors.cpp);
                                    ///< cacheRelative is then the pose sensorOverlap was found at, and
                                    ///< cacheMargin >= 0 once it has been
        bool sensorOverlap = false; ///< a sensor pair whose shapes overlapped at the last evaluation
    };

    /// Sorted index of the contacts: key = (smaller slot << 32) | larger slot. `state` mirrors what the
    /// passes over every contact ask first (kKey* bits), so that they read the contact pool only for the
    /// contacts that matter: most pairs of a pile are fat-box neighbours that do not touch.
    struct ContactKey
    {
        std::uint64_t key = 0;
        std::uint32_t contact = 0;
        std::uint8_t state = 0;
    };
    static constexpr std::uint8_t kKeyTouching = 1; ///< the manifold has points
    static constexpr std::uint8_t kKeyClear = 2;    ///< no points, no reuse cache: as a new contact
    static constexpr int kKeyPointShift = 2;        ///< the manifold's point count, in the bits above
    /// The kKey* bits of contact c, and its point count.
    static std::uint8_t keyStateOf(const Contact& c)
    {
        const std::uint8_t flags = c.manifold.pointCount > 0 ? kKeyTouching
                                   : c.cacheMargin < 0.0f    ? kKeyClear
                                                             : std::uint8_t{0};
        return static_cast<std::uint8_t>(flags | (c.manifold.pointCount << kKeyPointShift));
    }
    static std::uint32_t keyPointCount(const ContactKey& entry) { return entry.state >> kKeyPointShift; }
    /// The pair's body slots, lower first (the contact's roles A and B may be either way round).
    static std::uint32_t keyLow(const ContactKey& entry)
    {
        return static_cast<std::uint32_t>(entry.key >> 32);
    }
    static std::uint32_t keyHigh(const ContactKey& entry)
    {
        return static_cast<std::uint32_t>(entry.key & 0xFFFFFFFFu);
    }

    /// fn(begin, end, thread) over [0, count) in chunks of `grain`: on the pool's threads when there is a
    /// pool and more than one chunk, else on the caller.
    template <typename F> void forRange(std::uint32_t count, std::uint32_t grain, F&& fn)
    {
        if (m_tasks != nullptr && count > grain)
        {
            m_tasks->parallelFor(count, grain, fn);
        }
        else if (count > 0)
        {
            fn(0u, count, 0);
        }
    }
    /// forRange, and beside it side(0, 1, thread) once on one thread (TaskPool::parallelFor with a side
    /// task); without a pool, after fn.
    template <typename F, typename S>
    void forRangeBeside(std::uint32_t count, std::uint32_t grain, F&& fn, S&& side)
    {
        if (m_tasks != nullptr)
        {
            m_tasks->parallelFor(count, grain, fn, side);
            return;
        }
        if (count > 0)
        {
            fn(0u, count, 0);
        }
        side(0u, 1u, 0);
    }

    void fillState(std::uint32_t index, BodyState& out) const;
    /// Whether the layer table and the groups let bodies a and b collide.
    bool filtersAllow(std::uint32_t a, std::uint32_t b) const
    {
        const Body& ba = m_bodies[a];
        const Body& bb = m_bodies[b];
        return ((m_layerMasks[ba.layer] >> bb.layer) & 1u) != 0 && (ba.group == 0 || ba.group != bb.group) &&
               (ba.jointList == kNoJoint || bb.jointList == kNoJoint || !joinedWithoutCollision(a, b));
    }
    /// Whether a joint without collideConnected joins bodies a and b.
    bool joinedWithoutCollision(std::uint32_t a, std::uint32_t b) const;
    /// Makes the next step look for every pair of body `index` again (its proxy is touched, its plane tests
    /// are redone; for a plane, every body's plane tests).
    void requeryPairs(std::uint32_t index);
    /// Removes the contacts the filters no longer allow, waking the bodies of those that touched.
    void removeFilteredContacts();
    /// Whether body `index` passes the query filter.
    bool queryAccepts(const QueryFilter& filter, std::uint32_t index) const;
    /// The hits of the ray or cast on body `index` in the world frame: false on a miss. A cast may skip
    /// mesh and heightfield triangles it would touch only past `clip` (the query's best so far).
    bool rayOnBody(const RayCastInput& ray, std::uint32_t index, RayQueryHit& hit) const;
    bool castOnBody(const ShapeCastInput& cast, std::uint32_t index, float clip, ShapeQueryHit& hit) const;
    /// The solver's records of body slot i (awake, not static) at the start of a step.
    void fillSolverBody(std::uint32_t i, SolverBody& state, SolverBodyMass& mass,
                        SolverBodyMotion& motion) const;
    /// The constraint set-up of a touching contact whose bodies have their solver indices.
    /// The constraint set-up of a touching contact whose bodies have their solver indices; the contact's
    /// step impulses times `substepsInverse` give the warm start of each substep.
    void fillConstraintSetup(const Contact& c, const Softness& contactSoftness,
                             const Softness& staticSoftness, float substepsInverse,
                             ContactConstraintSetup& setup) const;
    /// The substep level (0 .. m_maxSubstepLevel) that the mass ratio between bodies a and b (touching or
    /// joined) asks for.
    int massRatioLevel(std::uint32_t a, std::uint32_t b) const;
    /// Whether slot i is a dynamic body that is awake.
    bool awakeDynamic(std::uint32_t i) const
    {
        return m_bodies[i].type == BodyType::Dynamic && !m_bodies[i].sleeping;
    }
    /// Over the touching contacts: with `unite`, rebuilds m_islands from those between two awake dynamic
    /// bodies; calls touchingOther(body, other) for each between an awake dynamic body and any other.
    template <class Fn> void linkIslands(bool unite, Fn&& touchingOther);
    /// m_substepLevel for the awake bodies: each island's, from its most loaded contact.
    void chooseSubstepLevels(float dt);
    static std::uint64_t pairKey(std::uint32_t a, std::uint32_t b);
    Aabb computeTightBox(std::uint32_t index) const;
    Vec3 predictedDisplacement(std::uint32_t index, float dt) const; ///< metres over dt; zero if static
    /// The region the body may cover in the coming step of dt seconds; `beyond` is its
    /// reachBeyondVelocity over that step.
    Aabb sweptBox(std::uint32_t index, const Aabb& tight, float dt, float beyond) const;
    /// Whether the stored box of `index` fails to cover its coming step of dt (or `force`); then `wanted` is
    /// the box to store. `beyond` as for sweptBox. Reads only: safe on any thread.
    bool fatBoxStale(std::uint32_t index, float dt, float beyond, bool force, Aabb& wanted) const;
    /// Changes the broadphase tree now, or when `deferred` at the tree's commitMoves (many boxes at once).
    void storeFatBox(std::uint32_t index, const Aabb& wanted, bool deferred = false);
    /// finalizeBodies for solver body s: its pose, velocities, tight box, rest time, and whether its fat
    /// box must be replaced (by wantedBox). Touches only that body: safe on any thread. False when the
    /// state was not finite (then reset to rest at the last good pose).
    bool finalizeBody(std::uint32_t s, float dt, std::uint8_t& boxStale, Aabb& wantedBox);
    bool fatBoxesOverlap(std::uint32_t a, std::uint32_t b) const;
    bool pairEligible(std::uint32_t a, std::uint32_t b) const;
    void wakeIsland(std::uint32_t index);
    void updatePairs(StepStatus& status);
    bool collectPairCandidates(); ///< false when the candidate list overflowed
    /// Adds contacts for the new pairs; whether it added any.
    bool mergeNewPairs(StepStatus& status);
    /// Copies the contacts into key order when the pool has become scattered (see world.cpp).
    void orderContactPool();
    /// Whether the tight boxes of a and b are apart by more than the margin their manifold would be
    /// computed with (then it has no points). False when either is a plane.
    bool tightBoxesApart(std::uint32_t a, std::uint32_t b) const;
    /// The narrowphase of one pair, with the margins m_reach holds, on thread `thread`.
    bool updateContact(Contact& contact, int thread);
    /// Moves the contact's manifold with B when the pair has moved too little since it was computed to
    /// change which points it has; false (and nothing changed) when it must be computed again.
    bool reuseManifold(Contact& contact, const Transform& relative, float margin) const;
    /// Metres beyond the margin a manifold is computed with, and how far its features may slide before it
    /// is computed again (reuseManifold).
    static constexpr float kManifoldReuseSlack = 0.005f;
    void collide(); ///< the narrowphase of every pair that needs it (m_reach set)
    /// m_touchingKeys from the key list as collide() left it.
    void listTouchingKeys();
    void solve(float dt);
    /// The substeps of one level, pass by pass (each pass's colours a parallelFor each), then restitution.
    void solveLevelPassByPass(int substeps, float h, std::uint32_t kinematicEnd, std::uint32_t bodyBegin,
                              std::uint32_t bodyEnd, std::uint32_t jointBegin, std::uint32_t jointEnd);
    /// The substeps of one level as one job of the task pool (TaskPool::runStages): the same operations
    /// in the same order per body as solveLevelPassByPass, so the same bits.
    void solveLevelStaged(int substeps, float h, std::uint32_t kinematicEnd, std::uint32_t bodyBegin,
                          std::uint32_t bodyEnd, std::uint32_t jointBegin, std::uint32_t jointEnd);
    void finalizeBodies(float dt, StepStatus& status);
    void updateSleep();
    float reachBeyondVelocity(std::uint32_t index, float dt) const; ///< metres: turning and acceleration
    Mat3 inverseInertiaWorld(std::uint32_t index) const;
    void rebuildBroadphase(); ///< recreates the trees from m_fatBoxes and the proxyMoved flags
    /// The tree that holds body `index`'s proxy: m_staticTree for static bodies, else m_broadphase.
    BroadphaseTree& treeOf(std::uint32_t index)
    {
        return m_bodies[index].type == BodyType::Static ? m_staticTree : m_broadphase;
    }
    /// Calls fn(body slot) -> bool (false stops) for every body whose fat box overlaps `box`, both trees
    /// (planes not included).
    template <class Fn> void queryTrees(const Aabb& box, Fn&& fn) const
    {
        bool go = true;
        m_staticTree.queryAabb(box, [&](std::int32_t proxy)
                               { return go = fn(static_cast<std::uint32_t>(m_staticTree.userData(proxy))); });
        if (go)
        {
            m_broadphase.queryAabb(box, [&](std::int32_t proxy)
                                   { return fn(static_cast<std::uint32_t>(m_broadphase.userData(proxy))); });
        }
    }
    BodyId idOf(std::uint32_t index) const { return {index, m_bodies[index].generation}; }
    /// Appends an end event for contact c to `out` (m_endEvents or m_pendingEndEvents) when events are on
    /// and c touches; counts it as dropped when `out` is full.
    void reportEnd(const Contact& c, std::vector<ContactEndEvent>& out);
    /// The begin and end events of the contacts collide() updated or removed, in key order.
    void gatherTouchEvents();
    /// The hit events of the contacts solve() solved, in key order.
    void gatherHitEvents();

    // Joints (world_joints.cpp).
    void fillJointState(std::uint32_t j, JointState& out) const;
    /// The link of a live joint of this description.
    static JointLink linkOf(const JointDesc& desc);
    /// Checks `desc` and resolves its bodies to slots; InvalidJointDesc (or StaleBodyId) when it is not
    /// valid. Normalises the frames' rotations into `out`.
    WorldStatus checkJointDesc(const JointDesc& desc, JointDesc& out) const;
    /// Applies change(JointDesc&) to the joint's description if the result is valid, waking its bodies.
    template <class Change> WorldStatus changeJoint(JointId id, Change&& change);
    /// Removes joint slot j from its bodies' lists, frees it and wakes its bodies; a contact between them
    /// may be made again from the next step.
    void removeJoint(std::uint32_t j);
    /// Grows the per-step joint arrays to hold every live joint (outside steps).
    void reserveJointBuffers();
    /// Wakes sleeping islands joined to awake bodies (a joint made or changed since, a kinematic body
    /// moving).
    void wakeJointedIslands();
    /// The solver's joints of level `level`: m_jointConstraints[m_jointLevelStart[level] ..), coloured.
    void prepareJoints(int level, float h, float substepsInverse);
    void warmStartJoints(std::uint32_t begin, std::uint32_t end);
    /// One solve (useBias) or relax pass over the level's joints; a solve pass then goes over the joints
    /// with limits WorldConfig::limitIterations - 1 more times.
    void solveJoints(std::uint32_t begin, std::uint32_t end, float inverseH, bool useBias);
    /// The joint passes, for the staged solver.
    enum class JointPass : std::uint8_t
    {
        WarmStart,
        Solve,        ///< with the soft bias
        Relax,        ///< without it
        SolveLimited, ///< with it, the joints with limits or cones only (solveJoints' extra passes)
    };
    /// Blocks of the prepared level's joint colour `color` (0 .. the colour count; the last is the rest,
    /// which is one block, run in order).
    std::uint32_t jointStageBlocks(std::uint32_t color) const;
    /// Blocks of joint colour `color` (< the colours) that hold its ball bundles.
    std::uint32_t ballStageBlocks(std::uint32_t color) const;
    /// `pass` over block `block` of joint colour `color`.
    void runJointStageBlock(JointPass pass, std::uint32_t color, std::uint32_t block, float inverseH);
    /// `pass` over the prepared level's joints, colour by colour (each colour's blocks on the pool's
    /// threads), then the joints that fit no colour, in order.
    void runJointPass(JointPass pass, float inverseH);
    /// Joint colours, the rest included (jointStageBlocks' colours).
    static std::uint32_t jointStageColors();
    /// For solver bodies [begin, end) that turn gyroscopically and have joints: the world inverse inertia at
    /// the substep's new rotation. Joints read it as they solve (contacts keep the step's, prepared with
    /// them): with the step's, a thin link tumbling fast was given spin along its axis by joint impulses
    /// meant for the others, and a whipping chain of capsules gained energy until it flew apart (measured).
    void refreshJointedInertia(std::uint32_t begin, std::uint32_t end);
    /// Stores the level's joint impulses for the next step and the forces they applied over dt.
    void storeJointImpulses(std::uint32_t begin, std::uint32_t end, int substeps, float dt);
    /// Destroys the joints whose force or torque exceeded their thresholds in the step, reporting each.
    void breakJoints();

    // Sensors (world_sensors.cpp).
    /// Whether a sensor pair (exactly one of a, b a sensor) may become a contact: see "Sensors" above.
    bool sensorPairEligible(std::uint32_t a, std::uint32_t b) const;
    /// Reserves the sensor scratch and event buffers (once, when the first sensor appears).
    void reserveSensorBuffers();
    /// The sensor and the visitor of sensor pair c.
    std::uint32_t sensorOf(const Contact& c) const { return m_bodies[c.bodyA].sensor ? c.bodyA : c.bodyB; }
    std::uint32_t visitorOf(const Contact& c) const { return m_bodies[c.bodyA].sensor ? c.bodyB : c.bodyA; }
    /// Appends an end event for contact c to `out` (m_sensorEndEvents or m_pendingSensorEndEvents) when
    /// sensor events are on and c is a sensor pair that overlapped; counts it as dropped when `out` is full.
    void reportSensorEnd(const Contact& c, std::vector<SensorEndEvent>& out);
    /// Clears the last step's sensor events and moves the pending ends in (at the start of a step).
    void beginSensorStep();
    /// Evaluates every sensor pair at the poses the step ended with and reports what changed, in key order.
    void updateSensors();

    WorldConfig m_config;
    std::vector<ConvexHull> m_hulls;
    std::vector<CompoundShape> m_compounds;
    std::vector<std::shared_ptr<const TriangleMesh>> m_meshes;
    std::vector<const TriangleMesh*> m_meshPointers; ///< m_meshes' raw pointers, for ShapeCatalogue
    std::vector<std::shared_ptr<const HeightField>> m_heightFields;
    std::vector<const HeightField*> m_heightFieldPointers;
    /// A fingerprint of the compound, mesh and heightfield catalogues, mixed in as each is added (snapshots
    /// check it; world_state.cpp).
    std::uint64_t m_geometryFingerprint = 0;
    static std::uint64_t fingerprintAfter(std::uint64_t previous, const CompoundShape& compound);
    static std::uint64_t fingerprintAfter(std::uint64_t previous, const TriangleMesh& mesh);
    static std::uint64_t fingerprintAfter(std::uint64_t previous, const HeightField& field);
    /// Per thread: the pieces' manifolds of a compound, mesh or heightfield contact (collideComposite).
    PerThread<std::vector<TriangleContactManifold>> m_pieceScratch;
    std::vector<Body> m_bodies;
    std::vector<BodySim> m_sims;
    std::vector<Material> m_materials;
    std::vector<Shape> m_shapes;
    std::vector<Aabb> m_fatBoxes;           ///< per slot; planes have none
    std::vector<Aabb> m_tightBoxes;         ///< per slot: the shape's box at its current pose (not planes)
    std::vector<std::uint32_t> m_freeSlots; ///< LIFO; reuse order is deterministic
    std::vector<std::uint32_t> m_planes;    ///< slots of plane bodies, ascending
    std::uint32_t m_bodyCount = 0;
    std::uint64_t m_stepCount = 0;
    /// Row l: the layers layer l collides with, as bits (symmetric).
    std::array<std::uint32_t, kMaxCollisionLayers> m_layerMasks;
    bool m_filtersChanged = false; ///< contacts may have become filtered since the last step

    FatBoxPolicy m_fatBoxPolicy; ///< the broadphase margin, from m_config (see fatBoxStale)
    BroadphaseTree m_broadphase; ///< kinematic and dynamic bodies (planes have no proxy)
    BroadphaseTree m_staticTree; ///< static bodies: never moved by a step, so never queried for pairs;
                                 ///< moving bodies that moved query it (Box2D v3 and Jolt keep them apart)
    std::vector<std::int32_t> m_movedScratch;                 ///< m_broadphase's moved proxies of this step
    PerThread<std::vector<std::uint64_t>> m_threadKeys;       ///< per thread: candidate pair keys it found
    PerThread<std::vector<std::uint64_t>> m_threadKeyScratch; ///< per thread: its radix sort's buffer
    std::vector<std::uint8_t> m_newKeyIsContact; ///< per m_newKeys entry: 1 if a contact has the key
    std::vector<ContactKey> m_addedKeys;         ///< the contacts mergeNewPairs adds, in key order
    std::vector<BroadphasePair> m_pairScratch;
    std::vector<std::uint64_t> m_newKeys;       ///< candidate pair keys of this step, sorted
    std::vector<std::uint64_t> m_keyScratch;    ///< the second buffer of m_newKeys' radix sort
    std::vector<ContactKey> m_contactKeys;      ///< sorted by key
    std::vector<ContactKey> m_contactKeysMerge; ///< scratch for the merge
    std::vector<Contact> m_contacts;            ///< pool
    std::vector<std::uint8_t> m_poolLive;       ///< orderContactPool: per pool slot, whether it is live
    std::vector<std::uint32_t> m_poolSource;    ///< orderContactPool: per position, the slot it takes
    std::vector<std::uint32_t> m_freeContacts;  ///< LIFO
    std::vector<std::uint8_t> m_contactUpdated; ///< per pool entry: updated this step
    std::vector<std::uint8_t> m_fatBoxStale;    ///< per slot (or solver body): its fat box is to be replaced
    std::vector<Aabb> m_wantedBoxes;            ///< per slot (or solver body): by this box
    std::vector<float> m_reach; ///< per slot: |v| dt + reachBeyondVelocity over this step (set as it starts)
    std::vector<std::uint8_t> m_collideWake; ///< per key position: collide()'s update touches a sleeping body
    std::vector<std::uint32_t>
        m_touchingKeys; ///< positions of the touching keys, from collide() to the step's end
    PerThread<std::vector<std::uint32_t>> m_removedKeys; ///< per thread: key positions collide() removed
    std::vector<std::uint32_t> m_removedKeyOrder;        ///< those, in key order

    // Per-step solver arrays (capacity reserved at creation).
    std::vector<std::uint32_t> m_solverIndex; ///< per slot: index into the solver arrays (0 = static dummy)
    std::vector<std::uint32_t> m_solverSlots; ///< per solver body: its slot
    std::vector<SolverBody> m_solverBodies;
    std::vector<SolverBodyMass> m_solverMasses;
    std::vector<SolverBodyMotion> m_solverMotions;
    std::vector<ContactConstraintSetup> m_constraintSetups; ///< this step's touching contacts, in key order
    std::vector<std::uint32_t> m_constraintContacts;        ///< per setup: its contact (pool index)
    std::vector<ContactImpulses> m_constraintImpulses;      ///< per setup: the impulses it ends with
    ConstraintGraph m_graph; ///< m_constraintSetups coloured and prepared for the wide solver
    /// A stage of the staged solver (solveLevelStaged): a body integration, or a contact pass's colour or
    /// overflow part.
    struct SolverStage
    {
        enum Kind : std::uint8_t
        {
            IntegrateVelocities,
            IntegratePositions,
            ContactColor,    ///< `pass` over colour `color`'s blocks
            ContactOverflow, ///< the end of `pass`: the dummy reset and the overflow set
            JointColor,      ///< `jointPass` over joint colour `color`'s blocks
        };
        Kind kind = IntegrateVelocities;
        ContactPass pass = ContactPass::WarmStart;
        std::uint8_t color = 0;
        JointPass jointPass = JointPass::WarmStart; ///< of a JointColor stage
    };
    std::vector<SolverStage> m_solverStages;
    std::vector<std::uint32_t> m_solverStageBlocks; ///< per stage: its blocks
    std::unique_ptr<TaskPool> m_tasks; ///< null when the world steps on the caller alone (threads == 1)
    IslandBuilder m_islands;
    std::vector<std::uint8_t> m_substepLevel; ///< per slot: its island's substep level this step
    /// Per slot: whether it rests on a static or kinematic body; per island root: the island's mass, the
    /// mass of its grounded bodies and the level it asks for.
    struct IslandSupport
    {
        float mass = 0.0f;
        float groundedMass = 0.0f;
        float hangingMass = 0.0f; ///< of its bodies joined to a static or kinematic body
        int level = 0;
        bool grounded = false;
        bool hangs = false; ///< joined to a static or kinematic body
    };
    std::vector<IslandSupport> m_islandSupport;
    bool m_islandsBuilt =
        false; ///< m_islands holds this step's awake islands (chooseSubstepLevels built them)
    std::vector<Aabb> m_islandBoxes;                ///< per island root: the box of its bodies
    int m_maxSubstepLevel = 0;                      ///< substeps << level stays within maxSubsteps
    int m_highestSubstepLevel = 0;                  ///< the highest level of any awake body this step
    std::vector<SolverBodyMotion> m_kinematicStart; ///< kinematic bodies' motion at the step's start
    std::vector<float> m_islandSleep;        ///< per slot (island roots): least rest time in the island
    std::vector<std::uint32_t> m_islandTail; ///< per slot (island roots): last body linked while sleeping

    StepStats m_stats;

    // Contact events (capacity m_eventCapacity each, reserved at creation when events are on).
    std::uint32_t m_eventCapacity = 0;
    std::uint32_t m_droppedPendingEvents = 0;          ///< pending ends dropped since the last step
    std::vector<std::uint8_t> m_touchChange;           ///< per pool entry: kTouch* of this step's update
    PerThread<std::vector<std::uint32_t>> m_eventKeys; ///< per thread: key positions collide() removed or
                                                       ///< changed the touch of (gatherTouchEvents)
    std::vector<std::uint32_t> m_eventKeyOrder;        ///< gatherTouchEvents: those, in key order
    std::vector<ContactBeginEvent> m_beginEvents;      ///< the last step's
    std::vector<ContactEndEvent> m_endEvents;          ///< the last step's
    std::vector<ContactHitEvent> m_hitEvents;          ///< the last step's
    std::vector<ContactEndEvent> m_pendingEndEvents;   ///< contacts removed since the last step
    /// A solved contact's fastest approaching point that took a load, if faster than hitEventThreshold.
    struct HitCandidate
    {
        float speed = 0.0f;   ///< m/s
        float impulse = 0.0f; ///< N s: the largest normal impulses of its points, summed
        int point = -1;       ///< the manifold point; -1: no hit
    };
    std::vector<HitCandidate> m_hits;      ///< per solved contact (m_constraintContacts index)
    std::vector<std::uint32_t> m_hitOrder; ///< the solved contacts that hit, in key order

    // Sensors (capacity reserved when the first sensor is created, see reserveSensorBuffers).
    std::uint32_t m_sensorCount = 0;                   ///< live sensor bodies
    bool m_sensorBuffersReserved = false;              ///< reserveSensorBuffers has run
    std::uint32_t m_sensorEventCapacity = 0;           ///< of each sensor event kind
    std::uint32_t m_droppedPendingSensorEvents = 0;    ///< pending sensor ends dropped since the last step
    std::vector<std::uint32_t> m_sensorList;           ///< this step's sensor pairs (pool indices), key order
    std::vector<std::uint8_t> m_sensorChange;          ///< per m_sensorList entry: 0 same, 1 began, 2 ended
    std::vector<SensorBeginEvent> m_sensorBeginEvents; ///< the last step's
    std::vector<SensorEndEvent> m_sensorEndEvents;     ///< the last step's
    std::vector<SensorEndEvent> m_pendingSensorEndEvents; ///< sensor pairs removed since the last step

    // Joints.
    std::vector<Joint> m_joints;                  ///< by slot
    std::vector<JointLink> m_jointLinks;          ///< by slot (see JointLink)
    std::vector<std::uint32_t> m_freeJoints;      ///< LIFO
    std::uint32_t m_jointCount = 0;               ///< live joints
    std::vector<JointEvent> m_jointEvents;        ///< the last step's
    std::vector<JointEvent> m_pendingJointEvents; ///< joints destroyed with a body since the last step
    // Per step: the solved joints by level (each level in slot order), then coloured within the level.
    std::vector<std::uint32_t> m_jointSlots;         ///< per solved joint: its slot
    std::vector<JointConstraint> m_jointConstraints; ///< per solved joint
    std::uint32_t m_jointLevelStart[kMaxSubstepLevels + 1] = {};
    std::vector<std::uint32_t> m_jointOrder; ///< the level's joints grouped by colour (indices)
    bool m_levelHasLimitedJoints = false;    ///< some joint of the level has a limit or a cone
    bool m_levelTurnsJointedInertia = false; ///< some joint of the level has a gyroscopic body, whose
                                             ///< inertia refreshJointedInertia turns each substep
    std::vector<std::uint8_t> m_jointColors; ///< per joint of the level: its colour, and whether it is wide
    std::vector<std::uint32_t> m_jointColorStart; ///< colour c: m_jointOrder[start[c] .. start[c + 1])
    std::vector<std::uint32_t> m_jointBallEnd;    ///< colour c's ball joints: m_jointOrder[start[c] .. this)
    std::vector<std::uint32_t> m_ballBundleStart; ///< colour c's bundles: [start[c], start[c + 1])
    BallJointBundles m_ballBundles;               ///< the level's plain ball joints, W to a bundle
    std::vector<std::uint64_t> m_jointColorBits;  ///< per colour: bitset of the solver bodies in it
};

} // namespace polytope::physics

#include "polytope/physics/scenes.h"

#include "polytope/physics/heightfield.h"
#include "polytope/physics/hull.h"
#include "polytope/physics/triangle_mesh.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <memory>
#include <system_error>
#include <vector>

namespace polytope::physics
{

namespace
{

constexpr Vec3 kUnitHalfExtents{0.5f, 0.5f, 0.5f};

bool add(World& world, const BodyDesc& desc)
{
    return world.createBody(desc).status == WorldStatus::Ok;
}

BodyDesc unitCube(const Vec3& position, float friction)
{
    BodyDesc desc;
    desc.shape = Shape::makeBox(kUnitHalfExtents);
    desc.transform.p = position;
    desc.friction = friction;
    return desc;
}

/// A 5 x 5 grid of spheres, boxes and capsules dropped from staggered heights onto the ground.
bool buildDefault(World& world)
{
    if (!addGroundPlane(world))
    {
        return false;
    }
    constexpr int kSide = 5;
    constexpr float kSpacing = 2.5f;
    for (int row = 0; row < kSide; ++row)
    {
        for (int column = 0; column < kSide; ++column)
        {
            const int i = row * kSide + column;
            BodyDesc desc;
            switch (i % 3)
            {
            case 0:
                desc.shape = Shape::makeBox({0.5f, 0.5f, 0.5f});
                break;
            case 1:
                desc.shape = Shape::makeSphere(0.5f);
                desc.restitution = 0.3f;
                break;
            default:
                desc.shape = Shape::makeCapsule(0.4f, 0.3f);
                break;
            }
            const float x = (static_cast<float>(column) - 0.5f * (kSide - 1)) * kSpacing;
            const float z = (static_cast<float>(row) - 0.5f * (kSide - 1)) * kSpacing;
            desc.transform.p = {x, 4.0f + 0.6f * static_cast<float>(i), z};
            desc.transform.q =
                quatFromAxisAngle(normalize(Vec3{1.0f, 0.3f * static_cast<float>(i % 4), 0.5f}),
                                  0.25f * static_cast<float>(i % 7));
            desc.angularVelocity = {0.0f, 0.5f * static_cast<float>(i % 3), 0.0f};
            if (!add(world, desc))
            {
                return false;
            }
        }
    }
    return true;
}

bool buildStack10(World& world)
{
    return buildStack(world, 10);
}
bool buildStack30(World& world)
{
    return buildStack(world, 30);
}
bool buildStack50(World& world)
{
    return buildStack(world, 50);
}
bool buildPyramid20(World& world)
{
    return buildPyramid(world, 20);
}
bool buildPyramid40(World& world)
{
    return buildPyramid(world, 40);
}
bool buildPyramid60(World& world)
{
    return buildPyramid(world, 60);
}
bool buildPyramid100(World& world)
{
    return buildPyramid(world, 100);
}
bool buildPile1000(World& world)
{
    return buildPile(world, 1000);
}
bool buildPile4000(World& world)
{
    return buildPile(world, 4000);
}
bool buildRampDefault(World& world)
{
    return buildRamp(world);
}

/// Adds the hull of `points` to the world's catalogue; false if it cannot be built or added.
bool addHullOf(World& world, std::span<const Vec3> points, std::uint32_t& index)
{
    const HullResult built = buildConvexHull(points);
    if (!built.ok())
    {
        return false;
    }
    const AddHullResult added = world.addHull(built.hull);
    index = added.index;
    return added.status == WorldStatus::Ok;
}

/// The sized families: prefix before the ':', and the largest N.
struct SizedFamily
{
    std::string_view prefix;
    SizedScene family;
    int maxCount;
};
constexpr SizedFamily kSizedFamilies[] = {
    {"pile", SizedScene::Pile, kMaxSizedSceneCubes},
    {"stack", SizedScene::Stack, kMaxSizedSceneCubes},
    {"pyramid", SizedScene::Pyramid, kMaxPyramidBase},
};

constexpr std::array kScenes{
    SceneInfo{"default", "a 5 x 5 grid of boxes, spheres and capsules falling onto the ground",
              &buildDefault},
    SceneInfo{"stack10", "10 unit cubes stacked on the ground", &buildStack10},
    SceneInfo{"stack30", "30 unit cubes stacked on the ground", &buildStack30},
    SceneInfo{"stack50", "50 unit cubes stacked on the ground", &buildStack50},
    SceneInfo{"pyramid20", "a wall of unit cubes, 20 at the base (210 cubes)", &buildPyramid20},
    SceneInfo{"pyramid40", "a wall of unit cubes, 40 at the base (820 cubes)", &buildPyramid40},
    SceneInfo{"pyramid60", "a wall of unit cubes, 60 at the base (1830 cubes)", &buildPyramid60},
    SceneInfo{"pyramid100", "a wall of unit cubes, 100 at the base (5050 cubes)", &buildPyramid100},
    SceneInfo{
        "jolt_pyramid",
        "Jolt's performance-test pyramid: 1240 cubes of 2 m in 15 levels 0.5 m apart, friction 0.2, no sleep",
        &buildJoltPyramid},
    SceneInfo{"heavy_on_light", "a 20 m cube (8e6 kg) on four unit cubes (1000 kg each: 8000:1 in mass)",
              &buildHeavyOnLight},
    SceneInfo{"pile1000", "1000 unit cubes dropped in a heap", &buildPile1000},
    SceneInfo{"pile4000", "4000 unit cubes dropped in a heap", &buildPile4000},
    SceneInfo{"mixed", "spheres, capsules, boxes and convex hulls falling in a heap", &buildMixed},
    SceneInfo{"ramp", "a cube resting on a 20 degree incline", &buildRampDefault},
    SceneInfo{"planar", "2D boxes (planar motion in xy) falling onto rotated slopes", &buildPlanar},
    SceneInfo{"chain", "a chain of 20 capsule links on ball joints swinging down from a static anchor",
              &buildChain},
    SceneInfo{"bridge",
              "a rope bridge of 40 planks on hinge joints between two posts, with boxes dropped on it",
              &buildBridge},
    SceneInfo{"car", "a box chassis on four sphere wheels driven by hinge motors up a ramp of static boxes",
              &buildCar},
    SceneInfo{
        "terrain",
        "a 129 x 129-sample heightfield of hills in a basin with spheres, boxes, capsules and compounds "
        "dropped on it",
        &buildTerrain},
    SceneInfo{"convex_vs_mesh",
              "a triangle-mesh bowl with a staircase and a ramp, and a pile of convex shapes and compounds "
              "falling into it",
              &buildConvexVsMesh},
    SceneInfo{"ragdolls", "20 ragdolls of 11 bodies (cone-twist and hinge joints) dropped into a pile",
              &buildRagdolls},
};

} // namespace

bool addGroundPlane(World& world, float friction)
{
    BodyDesc ground;
    ground.type = BodyType::Static;
    ground.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
    ground.friction = friction;
    return add(world, ground);
}

bool buildStack(World& world, int count, float friction)
{
    if (!addGroundPlane(world, friction))
    {
        return false;
    }
    for (int i = 0; i < count; ++i)
    {
        if (!add(world, unitCube({0.0f, 0.5f + static_cast<float>(i), 0.0f}, friction)))
        {
            return false;
        }
    }
    return true;
}

bool buildPyramid(World& world, int base, float friction)
{
    if (!addGroundPlane(world, friction))
    {
        return false;
    }
    for (int row = 0; row < base; ++row)
    {
        const int inRow = base - row;
        for (int i = 0; i < inRow; ++i)
        {
            const float x = static_cast<float>(i) - 0.5f * static_cast<float>(inRow - 1);
            if (!add(world, unitCube({x, 0.5f + static_cast<float>(row), 0.0f}, friction)))
            {
                return false;
            }
        }
    }
    return true;
}

bool buildPile(World& world, int count, float friction)
{
    if (!addGroundPlane(world, friction))
    {
        return false;
    }
    constexpr int kLayers = 10;
    constexpr float kSpacing = 1.5f;
    const int side = std::max(1, static_cast<int>(std::ceil(std::sqrt(static_cast<float>(count) / kLayers))));
    for (int i = 0; i < count; ++i)
    {
        const int layer = i / (side * side);
        const int row = (i / side) % side;
        const int column = i % side;
        const float x = (static_cast<float>(column) - 0.5f * static_cast<float>(side - 1)) * kSpacing;
        const float z = (static_cast<float>(row) - 0.5f * static_cast<float>(side - 1)) * kSpacing;
        BodyDesc desc = unitCube({x, 1.0f + kSpacing * static_cast<float>(layer), z}, friction);
        const Vec3 axis =
            normalize(Vec3{static_cast<float>(i % 5) - 2.0f, 1.0f, static_cast<float>(i % 3) - 1.0f});
        desc.transform.q = quatFromAxisAngle(axis, 0.1f * static_cast<float>(i % 11));
        if (!add(world, desc))
        {
            return false;
        }
    }
    return true;
}

bool buildJoltPyramid(World& world)
{
    constexpr int kLevels = 15;
    constexpr float kCubeSize = 2.0f;
    constexpr float kHalfCube = 0.5f * kCubeSize;
    // At the start, between a level's bottom and the top of the level below.
    constexpr float kLevelGap = 0.5f;

    BodyDesc ground;
    ground.type = BodyType::Static;
    ground.shape = Shape::makeBox({50.0f, 1.0f, 50.0f});
    ground.transform.p = {0.0f, -1.0f, 0.0f};
    ground.friction = kJoltPyramidFriction;
    if (!add(world, ground))
    {
        return false;
    }
    // Jolt's indices: level i keeps columns and rows i / 2 .. kLevels - (i + 1) / 2 - 1 of the grid of
    // kCubeSize cells starting at -kLevels, shifted by half a cube on odd levels (so the pyramid is not
    // centred on the origin: that is Jolt's layout).
    for (int level = 0; level < kLevels; ++level)
    {
        const float shift = (level & 1) != 0 ? kHalfCube : 0.0f;
        const float y = kHalfCube + (kCubeSize + kLevelGap) * static_cast<float>(level);
        for (int column = level / 2; column < kLevels - (level + 1) / 2; ++column)
        {
            for (int row = level / 2; row < kLevels - (level + 1) / 2; ++row)
            {
                BodyDesc cube;
                cube.shape = Shape::makeBox({kHalfCube, kHalfCube, kHalfCube});
                cube.transform.p = {
                    static_cast<float>(-kLevels) + kCubeSize * static_cast<float>(column) + shift, y,
                    static_cast<float>(-kLevels) + kCubeSize * static_cast<float>(row) + shift};
                cube.friction = kJoltPyramidFriction;
                cube.allowSleep = false;
                if (!add(world, cube))
                {
                    return false;
                }
            }
        }
    }
    return true;
}

bool buildHeavyOnLight(World& world)
{
    if (!addGroundPlane(world))
    {
        return false;
    }
    constexpr float kBigHalfExtent = 10.0f;
    constexpr float kInset = 0.5f; // from the small cubes' outer faces to the big cube's sides
    constexpr float kCorner = kBigHalfExtent - kInset - 0.5f; // the small cubes' centres: x, z = +-9
    for (const float x : {-kCorner, kCorner})
    {
        for (const float z : {-kCorner, kCorner})
        {
            if (!add(world, unitCube({x, 0.5f, z}, kSceneFriction)))
            {
                return false;
            }
        }
    }
    BodyDesc big;
    big.shape = Shape::makeBox({kBigHalfExtent, kBigHalfExtent, kBigHalfExtent});
    big.transform.p = {0.0f, 1.0f + kBigHalfExtent, 0.0f};
    big.friction = kSceneFriction;
    return add(world, big);
}

bool buildMixed(World& world)
{
    if (!addGroundPlane(world))
    {
        return false;
    }
    // The hull catalogue: a tetrahedron, an octahedron, a wedge and a blob of 20 points on a sphere.
    std::uint32_t hulls[4];
    const Vec3 tetrahedron[] = {
        {0.5f, 0.5f, 0.5f}, {-0.5f, -0.5f, 0.5f}, {-0.5f, 0.5f, -0.5f}, {0.5f, -0.5f, -0.5f}};
    const Vec3 octahedron[] = {{0.6f, 0.0f, 0.0f},  {-0.6f, 0.0f, 0.0f}, {0.0f, 0.6f, 0.0f},
                               {0.0f, -0.6f, 0.0f}, {0.0f, 0.0f, 0.6f},  {0.0f, 0.0f, -0.6f}};
    const Vec3 wedge[] = {{-0.6f, -0.3f, -0.4f}, {0.6f, -0.3f, -0.4f}, {-0.6f, -0.3f, 0.4f},
                          {0.6f, -0.3f, 0.4f},   {-0.6f, 0.3f, -0.4f}, {0.6f, 0.3f, -0.4f}};
    Vec3 blob[20];
    for (int i = 0; i < 20; ++i)
    {
        // A Fibonacci sphere, squashed: deterministic and without coplanar quadruples in practice.
        const float t = (static_cast<float>(i) + 0.5f) / 20.0f;
        const float polar = std::acos(1.0f - 2.0f * t);
        const float azimuth = 2.39996323f * static_cast<float>(i);
        blob[i] = {0.55f * std::sin(polar) * std::cos(azimuth), 0.4f * std::cos(polar),
                   0.5f * std::sin(polar) * std::sin(azimuth)};
    }
    if (!addHullOf(world, tetrahedron, hulls[0]) || !addHullOf(world, octahedron, hulls[1]) ||
        !addHullOf(world, wedge, hulls[2]) || !addHullOf(world, blob, hulls[3]))
    {
        return false;
    }

    constexpr int kSide = 4;
    constexpr int kLayers = 5;
    for (int i = 0; i < kSide * kSide * kLayers; ++i)
    {
        const int layer = i / (kSide * kSide);
        const int row = (i / kSide) % kSide;
        const int column = i % kSide;
        BodyDesc desc;
        switch (i % 7)
        {
        case 0:
            desc.shape = Shape::makeSphere(0.4f);
            desc.restitution = 0.5f;
            break;
        case 1:
            desc.shape = Shape::makeCapsule(0.35f, 0.25f);
            break;
        case 2:
            desc.shape = Shape::makeBox({0.5f, 0.3f, 0.4f});
            desc.friction = 0.3f;
            break;
        default:
        {
            Shape hull;
            hull.type = ShapeType::Hull;
            hull.hullIndex = hulls[(i % 7) - 3];
            desc.shape = hull;
            break;
        }
        }
        desc.transform.p = {(static_cast<float>(column) - 1.5f) * 1.6f + 0.1f * static_cast<float>(layer % 2),
                            1.0f + 1.6f * static_cast<float>(layer), (static_cast<float>(row) - 1.5f) * 1.6f};
        desc.transform.q = quatFromAxisAngle(normalize(Vec3{1.0f, static_cast<float>(i % 3), 0.5f}),
                                             0.3f * static_cast<float>(i % 5));
        desc.angularVelocity = {0.0f, 0.3f * static_cast<float>(i % 4), 0.0f};
        if (!add(world, desc))
        {
            return false;
        }
    }
    return true;
}

bool buildRamp(World& world, float angleRadians, float friction)
{
    if (!addGroundPlane(world, friction))
    {
        return false;
    }
    const Quat tilt = quatFromAxisAngle({0.0f, 0.0f, 1.0f}, angleRadians);
    BodyDesc slab;
    slab.type = BodyType::Static;
    slab.shape = Shape::makeBox({6.0f, 0.25f, 2.0f});
    slab.transform = {{0.0f, 3.0f, 0.0f}, tilt};
    slab.friction = friction;
    if (!add(world, slab))
    {
        return false;
    }
    // The cube rests on the slab's top face, at its middle.
    const Vec3 up = rotate(tilt, Vec3{0.0f, 1.0f, 0.0f});
    BodyDesc cube = unitCube(slab.transform.p + up * (0.25f + 0.5f), friction);
    cube.transform.q = tilt;
    return add(world, cube);
}

bool buildPlanar(World& world)
{
    if (!addGroundPlane(world))
    {
        return false;
    }
    const float angles[3] = {-0.4f, 0.3f, -0.2f};
    const Vec3 centers[3] = {{-4.0f, 8.0f, 0.0f}, {4.0f, 5.0f, 0.0f}, {-3.0f, 2.0f, 0.0f}};
    for (int s = 0; s < 3; ++s)
    {
        BodyDesc slope;
        slope.type = BodyType::Static;
        slope.shape = Shape::makeBox({4.0f, 0.2f, 1.0f});
        slope.transform = {centers[s], quatFromAxisAngle({0.0f, 0.0f, 1.0f}, angles[s])};
        if (!add(world, slope))
        {
            return false;
        }
    }
    for (int i = 0; i < 24; ++i)
    {
        BodyDesc box;
        box.shape = Shape::makeBox({0.3f + 0.05f * static_cast<float>(i % 3), 0.3f, 0.5f});
        box.transform.p = {-6.0f + 0.9f * static_cast<float>(i % 8), 11.0f + 1.2f * static_cast<float>(i / 8),
                           0.0f};
        box.transform.q = quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.2f * static_cast<float>(i % 5));
        box.allowedDofs = planarDofs(2);
        box.friction = 0.4f;
        if (!add(world, box))
        {
            return false;
        }
    }
    return true;
}

namespace
{

// ---- Composite-shape scenes (terrain, convex_vs_mesh) ---------------------------------------------------

/// The compounds both scenes drop: a dumbbell (two spheres on a bar along x) and a table (a top on four
/// legs). Children are laid out so that each compound's centre of mass is near its origin.
CompoundShape dumbbellCompound()
{
    CompoundShape dumbbell;
    const Quat alongX = quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.5f * kPi); // a capsule's axis is local y
    dumbbell.children.push_back({Shape::makeSphere(0.3f), {{-0.6f, 0.0f, 0.0f}, Quat{}}});
    dumbbell.children.push_back({Shape::makeSphere(0.3f), {{0.6f, 0.0f, 0.0f}, Quat{}}});
    dumbbell.children.push_back({Shape::makeCapsule(0.45f, 0.1f), {{0.0f, 0.0f, 0.0f}, alongX}});
    return dumbbell;
}

CompoundShape tableCompound()
{
    CompoundShape table;
    table.children.push_back({Shape::makeBox({0.6f, 0.06f, 0.4f}), {{0.0f, 0.2f, 0.0f}, Quat{}}});
    for (const float x : {-0.5f, 0.5f})
    {
        for (const float z : {-0.3f, 0.3f})
        {
            table.children.push_back({Shape::makeBox({0.05f, 0.2f, 0.05f}), {{x, -0.06f, z}, Quat{}}});
        }
    }
    return table;
}

/// An arrow: a box shaft along x with a square pyramid (a hull, catalogue index `headHull`) as its head.
CompoundShape arrowCompound(std::uint32_t headHull)
{
    CompoundShape arrow;
    arrow.children.push_back({Shape::makeBox({0.45f, 0.08f, 0.08f}), {{-0.2f, 0.0f, 0.0f}, Quat{}}});
    arrow.children.push_back({Shape::makeHull(headHull), {{0.25f, 0.0f, 0.0f}, Quat{}}});
    return arrow;
}

bool addCompoundOf(World& world, const CompoundShape& compound, std::uint32_t& index)
{
    const AddShapeResult added = world.addCompound(compound);
    index = added.index;
    return added.status == WorldStatus::Ok;
}

/// The terrain's height over world (x, z), metres: a basin (rising 0.0006 r^2) with two sine hills over it.
float terrainHeightAt(float x, float z)
{
    return 0.0006f * (x * x + z * z) + 1.2f * std::sin(0.15f * x) * std::cos(0.12f * z) +
           0.6f * std::sin(0.07f * x + 0.11f * z);
}

/// Triangles put together in code, each wound so that its front faces a given direction.
struct MeshBuilder
{
    std::vector<Vec3> vertices;
    std::vector<std::uint32_t> indices;

    std::uint32_t vertex(const Vec3& v)
    {
        vertices.push_back(v);
        return static_cast<std::uint32_t>(vertices.size() - 1);
    }
    /// The triangle a, b, c, wound counter-clockwise seen from the side `outward` points to.
    void triangle(std::uint32_t a, std::uint32_t b, std::uint32_t c, const Vec3& outward)
    {
        const Vec3 normal = cross(vertices[b] - vertices[a], vertices[c] - vertices[a]);
        if (dot(normal, outward) < 0.0f)
        {
            std::swap(b, c);
        }
        indices.insert(indices.end(), {a, b, c});
    }
    /// The planar quad a, b, c, d (corners in order around it), as two triangles facing `outward`.
    void quad(const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d, const Vec3& outward)
    {
        const std::uint32_t ia = vertex(a), ib = vertex(b), ic = vertex(c), id = vertex(d);
        triangle(ia, ib, ic, outward);
        triangle(ia, ic, id, outward);
    }
};

/// The bowl's height at radius r (metres): a flat floor out to kBowlFloorRadius, then a parabolic wall.
constexpr float kBowlFloorRadius = 9.0f;
constexpr float kBowlRadius = 16.0f; // at the rim the wall is 4.9 m high
float bowlHeight(float r)
{
    const float out = std::max(0.0f, r - kBowlFloorRadius);
    return 0.1f * out * out;
}

/// The convex_vs_mesh level: a round bowl (rings one metre apart out to kBowlRadius, 40 segments), a
/// staircase of four 0.3 m steps climbing toward -z and a ramp rising toward +z to the same height, both
/// standing on the floor and closed on their sides and backs.
std::shared_ptr<const TriangleMesh> bowlLevelMesh()
{
    constexpr int kRings = static_cast<int>(kBowlRadius);
    constexpr int kSegments = 40;
    MeshBuilder mesh;
    const Vec3 up{0.0f, 1.0f, 0.0f};
    const std::uint32_t centre = mesh.vertex({0.0f, 0.0f, 0.0f});
    const auto ringVertex = [&](int ring, int segment)
    { return centre + 1 + static_cast<std::uint32_t>((ring - 1) * kSegments + segment % kSegments); };
    for (int ring = 1; ring <= kRings; ++ring)
    {
        const float r = static_cast<float>(ring);
        for (int segment = 0; segment < kSegments; ++segment)
        {
            const float angle = 2.0f * kPi * static_cast<float>(segment) / kSegments;
            mesh.vertex({r * std::cos(angle), bowlHeight(r), r * std::sin(angle)});
        }
    }
    for (int segment = 0; segment < kSegments; ++segment)
    {
        mesh.triangle(centre, ringVertex(1, segment), ringVertex(1, segment + 1), up);
        for (int ring = 1; ring < kRings; ++ring)
        {
            const std::uint32_t a = ringVertex(ring, segment), b = ringVertex(ring, segment + 1);
            const std::uint32_t c = ringVertex(ring + 1, segment + 1), d = ringVertex(ring + 1, segment);
            mesh.triangle(a, b, c, up);
            mesh.triangle(a, c, d, up);
        }
    }

    // The staircase: x in [-2, 2], step i's riser at z = -2 - i, its top 0.3 (i + 1) m high.
    constexpr int kSteps = 4;
    constexpr float kRise = 0.3f;
    constexpr float kHalfWidth = 2.0f;
    for (int i = 0; i < kSteps; ++i)
    {
        const float front = -2.0f - static_cast<float>(i);
        const float back = front - 1.0f;
        const float low = kRise * static_cast<float>(i);
        const float top = low + kRise;
        mesh.quad({-kHalfWidth, low, front}, {kHalfWidth, low, front}, {kHalfWidth, top, front},
                  {-kHalfWidth, top, front}, {0.0f, 0.0f, 1.0f});
        mesh.quad({-kHalfWidth, top, front}, {kHalfWidth, top, front}, {kHalfWidth, top, back},
                  {-kHalfWidth, top, back}, up);
        for (const float side : {-1.0f, 1.0f})
        {
            const float x = side * kHalfWidth;
            mesh.quad({x, 0.0f, front}, {x, top, front}, {x, top, back}, {x, 0.0f, back}, {side, 0.0f, 0.0f});
        }
    }
    const float stairsBack = -2.0f - kSteps;
    const float stairsTop = kRise * kSteps;
    mesh.quad({-kHalfWidth, 0.0f, stairsBack}, {kHalfWidth, 0.0f, stairsBack},
              {kHalfWidth, stairsTop, stairsBack}, {-kHalfWidth, stairsTop, stairsBack}, {0.0f, 0.0f, -1.0f});

    // The ramp: from the floor at z = 2 up to the stairs' height at z = 6.
    constexpr float kRampFoot = 2.0f;
    constexpr float kRampHead = 6.0f;
    mesh.quad({-kHalfWidth, 0.0f, kRampFoot}, {kHalfWidth, 0.0f, kRampFoot},
              {kHalfWidth, stairsTop, kRampHead}, {-kHalfWidth, stairsTop, kRampHead}, {0.0f, 1.0f, -0.3f});
    mesh.quad({-kHalfWidth, 0.0f, kRampHead}, {kHalfWidth, 0.0f, kRampHead},
              {kHalfWidth, stairsTop, kRampHead}, {-kHalfWidth, stairsTop, kRampHead}, {0.0f, 0.0f, 1.0f});
    for (const float side : {-1.0f, 1.0f})
    {
        const float x = side * kHalfWidth;
        const std::uint32_t a = mesh.vertex({x, 0.0f, kRampFoot});
        const std::uint32_t b = mesh.vertex({x, 0.0f, kRampHead});
        const std::uint32_t c = mesh.vertex({x, stairsTop, kRampHead});
        mesh.triangle(a, b, c, {side, 0.0f, 0.0f});
    }

    TriangleMeshBuildResult built = buildTriangleMesh(mesh.vertices, mesh.indices);
    if (!built.ok())
    {
        return nullptr;
    }
    return std::make_shared<const TriangleMesh>(std::move(built.mesh));
}

} // namespace

bool buildTerrain(World& world)
{
    std::vector<float> heights(std::size_t{kTerrainSamples} * kTerrainSamples);
    const float half = 0.5f * kTerrainCellMeters * static_cast<float>(kTerrainSamples - 1);
    for (std::uint32_t iz = 0; iz < kTerrainSamples; ++iz)
    {
        for (std::uint32_t ix = 0; ix < kTerrainSamples; ++ix)
        {
            heights[std::size_t{iz} * kTerrainSamples + ix] =
                terrainHeightAt(kTerrainCellMeters * static_cast<float>(ix) - half,
                                kTerrainCellMeters * static_cast<float>(iz) - half);
        }
    }
    HeightFieldDesc fieldDesc;
    fieldDesc.sampleCountX = kTerrainSamples;
    fieldDesc.sampleCountZ = kTerrainSamples;
    fieldDesc.cellSizeX = kTerrainCellMeters;
    fieldDesc.cellSizeZ = kTerrainCellMeters;
    fieldDesc.heights = heights;
    HeightFieldBuildResult built = buildHeightField(fieldDesc);
    if (!built.ok())
    {
        return false;
    }
    const AddShapeResult field =
        world.addHeightField(std::make_shared<const HeightField>(std::move(built.heightField)));
    std::uint32_t dumbbell = 0;
    std::uint32_t table = 0;
    if (field.status != WorldStatus::Ok || !addCompoundOf(world, dumbbellCompound(), dumbbell) ||
        !addCompoundOf(world, tableCompound(), table))
    {
        return false;
    }
    BodyDesc ground;
    ground.type = BodyType::Static;
    ground.shape = Shape::makeCatalogued(ShapeType::HeightField, field.index);
    ground.transform.p = {-half, 0.0f, -half}; // the field's corner: its middle is at the origin
    if (!add(world, ground))
    {
        return false;
    }

    // 36 bodies on a 6 x 6 grid 3 m apart, each dropped from 2.5 to 3.5 m above the ground under it.
    constexpr int kSide = 6;
    constexpr float kSpacing = 3.0f;
    for (int i = 0; i < kSide * kSide; ++i)
    {
        const float x = (static_cast<float>(i % kSide) - 0.5f * (kSide - 1)) * kSpacing;
        const float z = (static_cast<float>(i / kSide) - 0.5f * (kSide - 1)) * kSpacing;
        BodyDesc desc;
        // Damped, so that what rolls (spheres, capsules, dumbbells) settles in a valley instead of rocking
        // across the hills for ever.
        desc.linearDamping = 0.1f;
        desc.angularDamping = 0.5f;
        switch (i % 4)
        {
        case 0:
            desc.shape = Shape::makeSphere(0.5f);
            break;
        case 1:
            desc.shape = Shape::makeBox({0.5f, 0.4f, 0.6f});
            break;
        case 2:
            desc.shape = Shape::makeCapsule(0.4f, 0.3f);
            break;
        default:
            desc.shape = Shape::makeCatalogued(ShapeType::Compound, (i / 4) % 2 == 0 ? dumbbell : table);
            break;
        }
        desc.transform.p = {x, terrainHeightAt(x, z) + 2.5f + 0.5f * static_cast<float>(i % 3), z};
        desc.transform.q = quatFromAxisAngle(normalize(Vec3{0.3f, 1.0f, static_cast<float>(i % 3) - 1.0f}),
                                             0.4f * static_cast<float>(i % 5));
        if (!add(world, desc))
        {
            return false;
        }
    }
    return true;
}

bool buildConvexVsMesh(World& world)
{
    const AddShapeResult mesh = world.addMesh(bowlLevelMesh());
    if (mesh.status != WorldStatus::Ok)
    {
        return false;
    }
    const Vec3 octahedron[] = {{0.5f, 0.0f, 0.0f},  {-0.5f, 0.0f, 0.0f}, {0.0f, 0.5f, 0.0f},
                               {0.0f, -0.5f, 0.0f}, {0.0f, 0.0f, 0.5f},  {0.0f, 0.0f, -0.5f}};
    const Vec3 pyramid[] = {{-0.15f, -0.2f, -0.2f},
                            {-0.15f, 0.2f, -0.2f},
                            {-0.15f, -0.2f, 0.2f},
                            {-0.15f, 0.2f, 0.2f},
                            {0.25f, 0.0f, 0.0f}};
    std::uint32_t octahedronHull = 0;
    std::uint32_t pyramidHull = 0;
    std::uint32_t dumbbell = 0;
    std::uint32_t table = 0;
    std::uint32_t arrow = 0;
    if (!addHullOf(world, octahedron, octahedronHull) || !addHullOf(world, pyramid, pyramidHull) ||
        !addCompoundOf(world, dumbbellCompound(), dumbbell) ||
        !addCompoundOf(world, tableCompound(), table) ||
        !addCompoundOf(world, arrowCompound(pyramidHull), arrow))
    {
        return false;
    }
    BodyDesc level;
    level.type = BodyType::Static;
    level.shape = Shape::makeCatalogued(ShapeType::Mesh, mesh.index);
    if (!add(world, level))
    {
        return false;
    }

    // 64 bodies in 4 layers of a 4 x 4 grid 2 m apart, over the floor between the stairs and the ramp.
    constexpr int kSide = 4;
    constexpr int kLayers = 4;
    constexpr float kSpacing = 2.0f;
    for (int i = 0; i < kSide * kSide * kLayers; ++i)
    {
        const int layer = i / (kSide * kSide);
        BodyDesc desc;
        desc.linearDamping = 0.1f; // so that what rolls comes to rest on the floor
        desc.angularDamping = 0.5f;
        switch (i % 7)
        {
        case 0:
            desc.shape = Shape::makeSphere(0.4f);
            desc.restitution = 0.3f;
            break;
        case 1:
            desc.shape = Shape::makeBox({0.4f, 0.3f, 0.35f});
            break;
        case 2:
            desc.shape = Shape::makeCapsule(0.35f, 0.25f);
            break;
        case 3:
            desc.shape = Shape::makeHull(octahedronHull);
            break;
        case 4:
            desc.shape = Shape::makeCatalogued(ShapeType::Compound, dumbbell);
            break;
        case 5:
            desc.shape = Shape::makeCatalogued(ShapeType::Compound, table);
            break;
        default:
            desc.shape = Shape::makeCatalogued(ShapeType::Compound, arrow);
            break;
        }
        desc.transform.p = {(static_cast<float>(i % kSide) - 0.5f * (kSide - 1)) * kSpacing +
                                0.2f * static_cast<float>(layer % 2),
                            3.0f + 1.8f * static_cast<float>(layer),
                            (static_cast<float>((i / kSide) % kSide) - 0.5f * (kSide - 1)) * kSpacing};
        desc.transform.q = quatFromAxisAngle(normalize(Vec3{1.0f, static_cast<float>(i % 3), 0.5f}),
                                             0.35f * static_cast<float>(i % 5));
        desc.angularVelocity = {0.0f, 0.3f * static_cast<float>(i % 4), 0.0f};
        if (!add(world, desc))
        {
            return false;
        }
    }
    return true;
}

std::span<const SceneInfo> builtinScenes()
{
    return kScenes;
}

const SceneInfo* findScene(std::string_view name)
{
    for (const SceneInfo& scene : kScenes)
    {
        if (scene.name == name)
        {
            return &scene;
        }
    }
    return nullptr;
}

bool parseSceneName(std::string_view name, SceneName& out, std::string& error)
{
    if (const SceneInfo* scene = findScene(name))
    {
        out = SceneName{scene, SizedScene::Pile, 0};
        return true;
    }
    const std::size_t colon = name.find(':');
    if (colon != std::string_view::npos)
    {
        const std::string_view prefix = name.substr(0, colon);
        const std::string_view digits = name.substr(colon + 1);
        for (const SizedFamily& sized : kSizedFamilies)
        {
            if (sized.prefix != prefix)
            {
                continue;
            }
            int count = 0;
            const char* last = digits.data() + digits.size();
            const auto [end, status] = std::from_chars(digits.data(), last, count);
            if (status != std::errc{} || end != last || count < 1 || count > sized.maxCount)
            {
                error = "scene '" + std::string(name) + "': N of " + std::string(prefix) +
                        ":N must be a whole number from 1 to " + std::to_string(sized.maxCount);
                return false;
            }
            out = SceneName{nullptr, sized.family, count};
            return true;
        }
    }
    error = "unknown scene '" + std::string(name) + "'; accepted: " + acceptedSceneNames() +
            " (pile and stack: N = 1.." + std::to_string(kMaxSizedSceneCubes) + "; pyramid: N = 1.." +
            std::to_string(kMaxPyramidBase) + ")";
    return false;
}

bool buildScene(World& world, const SceneName& scene)
{
    if (scene.builtin != nullptr)
    {
        return scene.builtin->build(world);
    }
    switch (scene.family)
    {
    case SizedScene::Pile:
        return buildPile(world, scene.count);
    case SizedScene::Stack:
        return buildStack(world, scene.count);
    case SizedScene::Pyramid:
        return buildPyramid(world, scene.count);
    }
    return false;
}

bool buildNamedScene(World& world, std::string_view name, std::string& error)
{
    SceneName scene;
    if (!parseSceneName(name, scene, error))
    {
        return false;
    }
    if (!buildScene(world, scene))
    {
        error = "scene '" + std::string(name) + "' did not fit in the world (a body was refused)";
        return false;
    }
    return true;
}

std::string acceptedSceneNames()
{
    std::string names;
    for (const SceneInfo& scene : kScenes)
    {
        names += std::string(scene.name) + ", ";
    }
    for (const SizedFamily& sized : kSizedFamilies)
    {
        names += std::string(sized.prefix) + ":N, ";
    }
    names.resize(names.size() - 2); // the last ", "
    return names;
}

} // namespace polytope::physics

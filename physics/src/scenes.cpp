#include "polytope/physics/scenes.h"

#include "polytope/physics/hull.h"

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>

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

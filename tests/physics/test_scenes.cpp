// Scene names: every built-in name and the sized forms pile:N, stack:N, pyramid:N, their bounds and errors;
// the big benchmark scenes (pyramid100, jolt_pyramid, heavy_on_light) as issue 16 defines them; terrain and
// convex_vs_mesh (a heightfield and a mesh as the ground) settle sanely, deterministically and restorably.
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace polytope::physics;

namespace
{

std::uint64_t hashOfNamed(std::string_view name)
{
    World world;
    std::string error;
    REQUIRE(buildNamedScene(world, name, error));
    CHECK(error.empty());
    return world.stateHash();
}

} // namespace

TEST_CASE("every built-in scene name builds the built-in scene", "[scenes]")
{
    for (const SceneInfo& scene : builtinScenes())
    {
        CAPTURE(scene.name);
        SceneName parsed;
        std::string error;
        REQUIRE(parseSceneName(scene.name, parsed, error));
        CHECK(parsed.builtin == &scene);
        World direct;
        REQUIRE(scene.build(direct));
        CHECK(hashOfNamed(scene.name) == direct.stateHash());
    }
}

TEST_CASE("sized scene names build the sized scenes", "[scenes]")
{
    SceneName parsed;
    std::string error;
    REQUIRE(parseSceneName("pile:1000", parsed, error));
    CHECK(parsed.builtin == nullptr);
    CHECK(parsed.family == SizedScene::Pile);
    CHECK(parsed.count == 1000);
    CHECK(hashOfNamed("pile:1000") == hashOfNamed("pile1000"));
    CHECK(hashOfNamed("stack:30") == hashOfNamed("stack30"));
    CHECK(hashOfNamed("pyramid:20") == hashOfNamed("pyramid20"));

    World world;
    REQUIRE(buildNamedScene(world, "stack:7", error));
    CHECK(world.bodyCount() == 8); // seven cubes and the ground

    REQUIRE(parseSceneName("stack:1", parsed, error));
    CHECK((parsed.family == SizedScene::Stack && parsed.count == 1));
    REQUIRE(parseSceneName("pile:65535", parsed, error));
    CHECK(parsed.count == kMaxSizedSceneCubes);
    REQUIRE(parseSceneName("pyramid:361", parsed, error));
    CHECK((parsed.family == SizedScene::Pyramid && parsed.count == kMaxPyramidBase));
}

TEST_CASE("the big benchmark scenes build with their body counts", "[scenes]")
{
    std::string error;
    World pyramid;
    REQUIRE(buildNamedScene(pyramid, "pyramid100", error));
    CHECK(pyramid.bodyCount() == 5050 + 1); // 100 + 99 + ... + 1 cubes and the ground
    CHECK(hashOfNamed("pyramid:100") == pyramid.stateHash());

    World heavy;
    REQUIRE(buildNamedScene(heavy, "heavy_on_light", error));
    CHECK(heavy.bodyCount() == 4 + 1 + 1);
    float bigMass = 0.0f;
    float bigBottom = 0.0f;
    int smallCubes = 0;
    heavy.forEachBody(
        [&](const BodyState& b)
        {
            if (b.type != BodyType::Dynamic)
            {
                return;
            }
            const Vec3 h = b.shape.box.halfExtents;
            if (h.x > 1.0f)
            {
                bigMass = b.mass;
                bigBottom = b.transform.p.y - h.y;
                CHECK(h.x == 10.0f);
                return;
            }
            ++smallCubes;
            CHECK(b.mass == Approx(1000.0f));
            CHECK(b.transform.p.y + h.y == 1.0f);            // its top touches the big cube's bottom face
            CHECK(std::fabs(b.transform.p.x) + h.x < 10.0f); // wholly under the big cube
            CHECK(std::fabs(b.transform.p.z) + h.z < 10.0f);
        });
    CHECK(smallCubes == 4);
    CHECK(bigBottom == 1.0f);
    CHECK(bigMass == Approx(8000.0f * 1000.0f));

    // Jolt's PyramidScene: 15 levels of (15 - i)^2 cubes of 2 m, 2.5 m apart, on a static box ground.
    World jolt;
    REQUIRE(buildNamedScene(jolt, "jolt_pyramid", error));
    CHECK(jolt.bodyCount() == 1240 + 1);
    std::map<int, int> cubesPerLevel;
    int staticBoxes = 0;
    jolt.forEachBody(
        [&](const BodyState& b)
        {
            REQUIRE(b.shape.type == ShapeType::Box);
            if (b.type == BodyType::Static)
            {
                ++staticBoxes;
                CHECK(b.transform.p.y + b.shape.box.halfExtents.y == 0.0f); // the ground's top is y = 0
                return;
            }
            CHECK(b.shape.box.halfExtents.x == 1.0f);
            const float level = (b.transform.p.y - 1.0f) / 2.5f;
            REQUIRE(level == std::round(level));
            ++cubesPerLevel[static_cast<int>(level)];
        });
    CHECK(staticBoxes == 1);
    REQUIRE(cubesPerLevel.size() == 15);
    for (const auto& [level, cubes] : cubesPerLevel)
    {
        CAPTURE(level);
        CHECK(cubes == (15 - level) * (15 - level));
    }
}

TEST_CASE("bad scene names are refused with the accepted forms", "[scenes]")
{
    for (const char* name : {"pile:0", "pile:-3", "pile:", "pile:12x", "pile: 5", "pile:+5", "pile:65536",
                             "stack:99999999999", "pyramid:362"})
    {
        CAPTURE(name);
        SceneName parsed;
        std::string error;
        CHECK_FALSE(parseSceneName(name, parsed, error));
        CHECK(error.find("from 1 to") != std::string::npos);
    }
    for (const char* name : {"", "foo", "cube:3", "pile", "Mixed", "mixed:2", ":5"})
    {
        CAPTURE(name);
        SceneName parsed;
        std::string error;
        CHECK_FALSE(parseSceneName(name, parsed, error));
        CHECK(error.find("unknown scene") != std::string::npos);
        CHECK(error.find("mixed") != std::string::npos);
        CHECK(error.find("pyramid:N") != std::string::npos);
    }

    WorldConfig small;
    small.maxBodies = 10;
    World world(small);
    std::string error;
    CHECK_FALSE(buildNamedScene(world, "stack:20", error));
    CHECK(error.find("did not fit") != std::string::npos);
}

TEST_CASE("the help list names every accepted form", "[scenes]")
{
    const std::string names = acceptedSceneNames();
    for (const SceneInfo& scene : builtinScenes())
    {
        CHECK(names.find(std::string(scene.name) + ", ") != std::string::npos);
    }
    const std::string sized = "pile:N, stack:N, pyramid:N";
    REQUIRE(names.size() > sized.size());
    CHECK(names.compare(names.size() - sized.size(), sized.size(), sized) == 0);
}

namespace
{

/// The height of the static ground (heightfield, mesh, or anything static) under world (x, z): a ray straight
/// down from 100 m; false where there is none.
bool groundUnder(const World& world, float x, float z, float& height)
{
    RayCastInput ray;
    ray.origin = {x, 100.0f, z};
    ray.translation = {0.0f, -200.0f, 0.0f};
    QueryFilter filter;
    filter.bodyTypes = kQueryStatic;
    RayQueryHit hit;
    if (!world.castRayClosest(ray, filter, hit))
    {
        return false;
    }
    height = hit.point.y;
    return true;
}

struct SceneCensus
{
    std::map<ShapeType, int> dynamicShapes;
    int statics = 0;
};

SceneCensus censusOf(const World& world)
{
    SceneCensus census;
    world.forEachBody(
        [&](const BodyState& b)
        {
            if (b.type == BodyType::Dynamic)
            {
                ++census.dynamicShapes[b.shape.type];
            }
            else
            {
                ++census.statics;
            }
        });
    return census;
}

} // namespace

TEST_CASE("terrain and convex_vs_mesh: bodies fall onto a heightfield or a mesh and come to rest on it",
          "[scenes]")
{
    for (const char* name : {"terrain", "convex_vs_mesh"})
    {
        CAPTURE(name);
        World world;
        std::string error;
        REQUIRE(buildNamedScene(world, name, error));
        const SceneCensus census = censusOf(world);
        CHECK(census.statics == 1); // the heightfield or the mesh; no ground plane
        CHECK(census.dynamicShapes.at(ShapeType::Sphere) > 0);
        CHECK(census.dynamicShapes.at(ShapeType::Box) > 0);
        CHECK(census.dynamicShapes.at(ShapeType::Capsule) > 0);
        CHECK(census.dynamicShapes.at(ShapeType::Compound) > 0);
        const bool terrain = std::string_view(name) == "terrain";
        if (terrain)
        {
            CHECK(world.bodyCount() == 1 + 36);
            REQUIRE(world.heightFieldCount() == 1);
            CHECK(world.meshCount() == 0);
            CHECK(world.compounds().size() == 2);
            const HeightField& field = world.heightField(0);
            CHECK(field.sampleCountX() == kTerrainSamples);
            CHECK(field.sampleCountZ() == kTerrainSamples);
            CHECK(field.localBounds().min.y > -2.0f);
            CHECK(field.localBounds().max.y < 7.0f);
        }
        else
        {
            CHECK(world.bodyCount() == 1 + 64);
            REQUIRE(world.meshCount() == 1);
            CHECK(world.heightFieldCount() == 0);
            CHECK(world.compounds().size() == 3);
            CHECK(world.hulls().size() == 2);
            CHECK(census.dynamicShapes.at(ShapeType::Hull) > 0);
            // Every floor and wall triangle faces up (one-sided triangles collide from their front only).
            const TriangleMesh& mesh = world.mesh(0);
            int up = 0;
            for (std::uint32_t t = 0; t < mesh.triangleCount(); ++t)
            {
                const Triangle tri = mesh.triangle(t);
                const Vec3 normal = cross(tri.b - tri.a, tri.c - tri.a);
                up += normal.y > 0.0f ? 1 : 0;
            }
            CHECK(up >= 40 * 16 * 2 - 40 + 4 * 2 + 2); // the bowl, the step tops and the ramp
        }

        // Ten seconds. The bodies' translational kinetic plus potential energy never exceeds what they had
        // when dropped (nothing is pushed out of the ground or flung), nothing falls through the ground or
        // leaves it, and at the end most bodies have come to rest (rolling ones may still roll).
        const auto energyOf = [&]
        {
            double energy = 0.0;
            world.forEachBody(
                [&](const BodyState& b)
                {
                    if (b.type == BodyType::Dynamic)
                    {
                        energy += b.mass * (0.5 * lengthSquared(b.linearVelocity) + 9.81 * b.centerOfMass.y);
                    }
                });
            return energy;
        };
        const double dropped = energyOf();
        double most = dropped;
        for (int step = 0; step < 600; ++step)
        {
            const StepStatus status = world.step(1.0f / 60.0f);
            REQUIRE(status.ok());
            most = std::max(most, energyOf());
        }
        CHECK(most <= dropped + 1e-3 * std::fabs(dropped));
        const float reach = terrain ? 0.5f * kTerrainCellMeters * (kTerrainSamples - 1) : 16.0f;
        int resting = 0;
        int dynamic = 0;
        world.forEachBody(
            [&](const BodyState& b)
            {
                if (b.type != BodyType::Dynamic)
                {
                    return;
                }
                CAPTURE(b.id.index, static_cast<int>(b.shape.type), b.transform.p.x, b.transform.p.y,
                        b.transform.p.z);
                REQUIRE(isFinite(b.transform.p));
                CHECK(std::hypot(b.transform.p.x, b.transform.p.z) < reach);
                float ground = 0.0f;
                REQUIRE(groundUnder(world, b.transform.p.x, b.transform.p.z, ground));
                CHECK(b.transform.p.y > ground); // every body's origin lies inside it, above the surface
                CHECK(b.transform.p.y < ground + 1.5f);
                ++dynamic;
                resting += length(b.linearVelocity) < 0.5f ? 1 : 0;
            });
        CHECK(resting * 4 >= dynamic * 3);
    }
}

TEST_CASE("terrain and convex_vs_mesh: the same bits on one and two threads, and a snapshot restores into a "
          "world that built the scene again",
          "[scenes]")
{
    for (const char* name : {"terrain", "convex_vs_mesh"})
    {
        CAPTURE(name);
        WorldConfig two;
        two.threads = 2;
        World single;
        World paired(two);
        REQUIRE(findScene(name)->build(single));
        REQUIRE(findScene(name)->build(paired));
        for (int step = 0; step < 120; ++step)
        {
            single.step(1.0f / 60.0f);
            paired.step(1.0f / 60.0f);
            REQUIRE(single.stateHash() == paired.stateHash());
        }
        std::vector<std::uint8_t> saved;
        single.saveState(saved);

        // The snapshot holds a fingerprint of the catalogues, not the geometry: the scene builds them again.
        World rebuilt;
        REQUIRE(findScene(name)->build(rebuilt));
        REQUIRE(rebuilt.restoreState(saved) == RestoreStatus::Ok);
        CHECK(rebuilt.stateHash() == single.stateHash());
        for (int step = 0; step < 60; ++step)
        {
            single.step(1.0f / 60.0f);
            rebuilt.step(1.0f / 60.0f);
        }
        CHECK(rebuilt.stateHash() == single.stateHash());

        // A world without the scene's geometry refuses it and stays as it was.
        World bare;
        CHECK(bare.restoreState(saved) == RestoreStatus::HullCatalogMismatch);
        CHECK(bare.bodyCount() == 0);
    }
}

// Scene names: every built-in name and the sized forms pile:N, stack:N, pyramid:N, their bounds and errors;
// the big benchmark scenes (pyramid100, jolt_pyramid, heavy_on_light) as issue 16 defines them.
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

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

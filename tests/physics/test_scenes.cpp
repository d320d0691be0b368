// Scene names: every built-in name and the sized forms pile:N, stack:N, pyramid:N, their bounds and errors.
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

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

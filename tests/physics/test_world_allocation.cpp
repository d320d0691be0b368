// World::step allocates nothing once the world is warm (allocations counted by support/allocation_counter.h).
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"
#include "support/allocation_counter.h"

#include <catch2/catch.hpp>

#include <string_view>

using namespace polytope::physics;

TEST_CASE("warm steps allocate nothing, in every built-in scene and through sleep and wake", "[allocation]")
{
    // Two threads as well: the task pool hands out work without allocating.
    for (const char* name : {"default", "mixed", "pyramid20", "planar", "ramp", "stack10", "pile1000",
                             "terrain", "convex_vs_mesh", "ragdolls"})
    {
        WorldConfig config;
        config.maxBodies = 4096;
        config.maxContacts = 16384;
        config.threads =
            std::string_view(name) == "pyramid20" || std::string_view(name) == "pile1000" ? 2 : 1;
        World world(config);
        REQUIRE(findScene(name)->build(world));
        for (int i = 0; i < 30; ++i)
        {
            world.step(1.0f / 60.0f);
        }
        polytope::test::AllocationCounter counter;
        for (int i = 0; i < 300; ++i)
        {
            world.step(1.0f / 60.0f);
        }
        const std::int64_t allocations = counter.stop();
        INFO("scene " << name);
        CHECK(allocations == 0);
    }
}

TEST_CASE("contact overflow is reported by step(), not a crash", "[allocation]")
{
    WorldConfig config;
    config.maxContacts = 8;
    World world(config);
    REQUIRE(buildPyramid(world, 6)); // 21 cubes: far more than 8 pairs
    StepStatus status;
    for (int i = 0; i < 10; ++i)
    {
        status = world.step(1.0f / 60.0f);
        if (!status.ok())
        {
            break;
        }
    }
    CHECK(status.has(StepFlag::ContactCapacityReached));
    CHECK(world.stepStats().contacts <= 8);
    for (int i = 0; i < 60; ++i)
    {
        world.step(1.0f / 60.0f); // keeps running
    }
}

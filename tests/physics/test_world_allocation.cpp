// World::step allocates nothing once the world is warm. This file replaces the global operator new and
// delete (for the whole test program: a replacement is program-wide) with versions that count calls while
// g_countAllocations is set; the count is only switched on around step() calls, never around Catch2.
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

namespace
{
std::atomic<bool> g_countAllocations{false};
std::atomic<long> g_allocations{0};
} // namespace

namespace
{
void* countedAllocation(std::size_t size) noexcept
{
    if (g_countAllocations.load(std::memory_order_relaxed))
    {
        g_allocations.fetch_add(1, std::memory_order_relaxed);
    }
    return std::malloc(size == 0 ? 1 : size);
}
} // namespace

// Every non-aligned form, so that allocation and release always pair up (the sanitizer checks that).
void* operator new(std::size_t size)
{
    if (void* p = countedAllocation(size))
    {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new[](std::size_t size)
{
    if (void* p = countedAllocation(size))
    {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    return countedAllocation(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    return countedAllocation(size);
}
void operator delete(void* p) noexcept
{
    std::free(p);
}
void operator delete[](void* p) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept
{
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept
{
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept
{
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept
{
    std::free(p);
}

using namespace polytope::physics;

TEST_CASE("warm steps allocate nothing, in every built-in scene and through sleep and wake", "[allocation]")
{
    for (const char* name : {"default", "mixed", "pyramid20", "planar", "ramp", "stack10"})
    {
        WorldConfig config;
        config.maxBodies = 4096;
        config.maxContacts = 16384;
        World world(config);
        REQUIRE(findScene(name)->build(world));
        for (int i = 0; i < 30; ++i)
        {
            world.step(1.0f / 60.0f);
        }
        g_allocations = 0;
        g_countAllocations = true;
        for (int i = 0; i < 300; ++i)
        {
            world.step(1.0f / 60.0f);
        }
        g_countAllocations = false;
        INFO("scene " << name);
        CHECK(g_allocations.load() == 0);
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

// Contact events (World::contactEvents): begin, end and hit reports after each step.
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"
#include "support/allocation_counter.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace polytope::physics;

namespace
{

constexpr float kDt = 1.0f / 60.0f;

BodyId addGround(World& world)
{
    BodyDesc ground;
    ground.type = BodyType::Static;
    ground.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
    return world.createBody(ground).id;
}

BodyId addBody(World& world, const Shape& shape, const Vec3& position, bool allowSleep = true)
{
    BodyDesc desc;
    desc.shape = shape;
    desc.transform.p = position;
    desc.allowSleep = allowSleep;
    return world.createBody(desc).id;
}

bool involves(BodyId a, BodyId b, BodyId x, BodyId y)
{
    return (a == x && b == y) || (a == y && b == x);
}

/// One step's events, copied (the spans die at the next step).
struct StepEvents
{
    std::vector<ContactBeginEvent> begin;
    std::vector<ContactEndEvent> end;
    std::vector<ContactHitEvent> hit;
};

StepEvents copyEvents(const World& world)
{
    const ContactEvents e = world.contactEvents();
    return {{e.begin.begin(), e.begin.end()}, {e.end.begin(), e.end.end()}, {e.hit.begin(), e.hit.end()}};
}

bool sameVec(const Vec3& a, const Vec3& b)
{
    return a.x == b.x && a.y == b.y && a.z == b.z;
}

bool sameEvents(const StepEvents& x, const StepEvents& y)
{
    if (x.begin.size() != y.begin.size() || x.end.size() != y.end.size() || x.hit.size() != y.hit.size())
    {
        return false;
    }
    for (std::size_t i = 0; i < x.begin.size(); ++i)
    {
        const ContactBeginEvent& a = x.begin[i];
        const ContactBeginEvent& b = y.begin[i];
        if (!(a.bodyA == b.bodyA && a.bodyB == b.bodyB && sameVec(a.point, b.point) &&
              sameVec(a.normal, b.normal)))
        {
            return false;
        }
    }
    for (std::size_t i = 0; i < x.end.size(); ++i)
    {
        if (!(x.end[i].bodyA == y.end[i].bodyA && x.end[i].bodyB == y.end[i].bodyB))
        {
            return false;
        }
    }
    for (std::size_t i = 0; i < x.hit.size(); ++i)
    {
        const ContactHitEvent& a = x.hit[i];
        const ContactHitEvent& b = y.hit[i];
        if (!(a.bodyA == b.bodyA && a.bodyB == b.bodyB && sameVec(a.point, b.point) &&
              sameVec(a.normal, b.normal) && a.approachSpeed == b.approachSpeed &&
              a.maxNormalImpulse == b.maxNormalImpulse))
        {
            return false;
        }
    }
    return true;
}

} // namespace

TEST_CASE("a dropped sphere begins once, hits at sqrt(2 g h) and ends when lifted away", "[events]")
{
    World world;
    const BodyId ground = addGround(world);
    const float radius = 0.5f;
    const float height = 5.0f; // of the sphere's lowest point above the ground
    const BodyId sphere = addBody(world, Shape::makeSphere(radius), {0.0f, height + radius, 0.0f}, false);

    int begins = 0;
    int ends = 0;
    std::vector<ContactHitEvent> hits;
    for (int i = 0; i < 180; ++i)
    {
        REQUIRE(world.step(kDt).ok());
        const ContactEvents e = world.contactEvents();
        for (const ContactBeginEvent& b : e.begin)
        {
            CHECK(involves(b.bodyA, b.bodyB, ground, sphere));
            CHECK(std::fabs(b.point.y) < 0.1f);
            CHECK(std::fabs(std::fabs(b.normal.y) - 1.0f) < 1e-4f);
            ++begins;
        }
        ends += static_cast<int>(e.end.size());
        hits.insert(hits.end(), e.hit.begin(), e.hit.end());
    }
    CHECK(begins == 1);
    CHECK(ends == 0);
    REQUIRE(hits.size() == 1);
    const ContactHitEvent& hit = hits[0];
    CHECK(involves(hit.bodyA, hit.bodyB, ground, sphere));
    const float expected = std::sqrt(2.0f * 9.81f * height);
    CHECK(std::fabs(hit.approachSpeed - expected) < 0.02f * expected);
    CHECK(std::fabs(hit.point.y) < 0.05f);
    CHECK(std::fabs(hit.normal.y) == Approx(1.0f).margin(1e-4f));
    // The largest substep impulse: most of m v (the speculative contact may spread the stop over two
    // substeps), never more than m v and a step's weight.
    BodyState state;
    REQUIRE(world.getBody(sphere, state));
    CHECK(hit.maxNormalImpulse > 0.5f * state.mass * expected);
    CHECK(hit.maxNormalImpulse < state.mass * (expected + 9.81f * kDt));

    SECTION("teleported away")
    {
        Transform up;
        up.p = {0.0f, 20.0f, 0.0f};
        REQUIRE(world.setTransform(sphere, up) == WorldStatus::Ok);
    }
    SECTION("knocked away by an impulse")
    {
        REQUIRE(world.applyImpulse(sphere, {0.0f, state.mass * 20.0f, 0.0f}, state.centerOfMass) ==
                WorldStatus::Ok);
    }
    // The manifold is speculative: a pair separating fast keeps its points while the gap stays within the
    // velocity-grown margin, so the end may come a step or two later. Exactly one, and nothing else.
    int ended = 0;
    int others = 0;
    for (int i = 0; i < 30; ++i)
    {
        REQUIRE(world.step(kDt).ok());
        const ContactEvents e = world.contactEvents();
        for (const ContactEndEvent& end : e.end)
        {
            CHECK(involves(end.bodyA, end.bodyB, ground, sphere));
            ++ended;
        }
        others += static_cast<int>(e.begin.size() + e.hit.size());
    }
    CHECK(ended == 1);
    CHECK(others == 0);
}

TEST_CASE("a resting box begins once, through sleep and wake", "[events]")
{
    World world;
    addGround(world);
    const BodyId box = addBody(world, Shape::makeBox({0.5f, 0.5f, 0.5f}), {0.0f, 0.6f, 0.0f});
    int begins = 0;
    int ends = 0;
    for (int i = 0; i < 300; ++i)
    {
        world.step(kDt);
        begins += static_cast<int>(world.contactEvents().begin.size());
        ends += static_cast<int>(world.contactEvents().end.size());
        if (i == 200)
        {
            BodyState state;
            REQUIRE(world.getBody(box, state));
            CHECK(state.sleeping); // asleep: no end
            REQUIRE(world.wakeBody(box) == WorldStatus::Ok);
        }
    }
    CHECK(begins == 1);
    CHECK(ends == 0);
}

TEST_CASE("destroying a body reports end for its touching contacts at the next step", "[events]")
{
    World world;
    const BodyId ground = addGround(world);
    const BodyId lower = addBody(world, Shape::makeBox({0.5f, 0.5f, 0.5f}), {0.0f, 0.5f, 0.0f});
    const BodyId upper = addBody(world, Shape::makeBox({0.5f, 0.5f, 0.5f}), {0.0f, 1.5f, 0.0f});
    for (int i = 0; i < 60; ++i)
    {
        world.step(kDt);
    }
    REQUIRE(world.destroyBody(lower) == WorldStatus::Ok);
    REQUIRE(world.step(kDt).ok());
    const ContactEvents e = world.contactEvents();
    REQUIRE(e.end.size() >= 2);
    // The destroyed body's two contacts come first, in key order: (ground, lower) then (lower, upper).
    CHECK(involves(e.end[0].bodyA, e.end[0].bodyB, ground, lower));
    CHECK(involves(e.end[1].bodyA, e.end[1].bodyB, lower, upper));
    CHECK_FALSE(world.isValid(lower));
}

TEST_CASE("contact events are identical on 1 and 2 threads over a pile of 200 cubes", "[events]")
{
    WorldConfig config1;
    WorldConfig config2;
    config2.threads = 2;
    World one(config1);
    World two(config2);
    REQUIRE(buildPile(one, 200));
    REQUIRE(buildPile(two, 200));
    std::size_t begins = 0;
    std::size_t ends = 0;
    std::size_t hits = 0;
    bool same = true;
    for (int i = 0; i < 300 && same; ++i)
    {
        REQUIRE(one.step(kDt).ok());
        REQUIRE(two.step(kDt).ok());
        const StepEvents a = copyEvents(one);
        same = sameEvents(a, copyEvents(two));
        INFO("step " << i);
        CHECK(same);
        begins += a.begin.size();
        ends += a.end.size();
        hits += a.hit.size();
    }
    CHECK(one.stateHash() == two.stateHash());
    CHECK(begins > 200);
    CHECK(ends > 0);
    CHECK(hits > 100);
}

TEST_CASE("contact events: warm steps allocate nothing, on 1 and 2 threads", "[events][allocation]")
{
    for (int threads : {1, 2})
    {
        WorldConfig config;
        config.maxBodies = 1024;
        config.maxContacts = 8192;
        config.threads = threads;
        World world(config);
        REQUIRE(buildPile(world, 200));
        std::size_t events = 0;
        const std::int64_t allocations = polytope::test::allocationsOfWarmSteps(
            30, 300,
            [&](bool measured)
            {
                world.step(kDt);
                events +=
                    measured ? world.contactEvents().begin.size() + world.contactEvents().hit.size() : 0;
            });
        INFO("threads " << threads);
        CHECK(allocations == 0);
        CHECK(events > 0);
    }
}

TEST_CASE("contact event overflow is flagged and counted, not a crash", "[events]")
{
    WorldConfig config;
    config.maxContactEvents = 2;
    World world(config);
    REQUIRE(buildPile(world, 50));
    bool flagged = false;
    std::uint32_t dropped = 0;
    for (int i = 0; i < 120; ++i)
    {
        const StepStatus status = world.step(kDt);
        flagged = flagged || status.has(StepFlag::ContactEventCapacityReached);
        dropped += world.stepStats().droppedContactEvents;
        const ContactEvents e = world.contactEvents();
        CHECK(e.begin.size() <= 2);
        CHECK(e.end.size() <= 2);
        CHECK(e.hit.size() <= 2);
        CHECK(status.has(StepFlag::ContactEventCapacityReached) ==
              (world.stepStats().droppedContactEvents > 0));
    }
    CHECK(flagged);
    CHECK(dropped > 0);
}

TEST_CASE("contact events off: empty spans, and events never change the simulation", "[events]")
{
    WorldConfig off;
    off.enableContactEvents = false;
    World quiet(off);
    World noisy;
    REQUIRE(buildPile(quiet, 100));
    REQUIRE(buildPile(noisy, 100));
    std::size_t noisyEvents = 0;
    for (int i = 0; i < 200; ++i)
    {
        REQUIRE(quiet.step(kDt).ok());
        REQUIRE(noisy.step(kDt).ok());
        const ContactEvents e = quiet.contactEvents();
        CHECK((e.begin.empty() && e.end.empty() && e.hit.empty()));
        noisyEvents += noisy.contactEvents().begin.size();
    }
    CHECK(noisyEvents > 0);
    CHECK(quiet.stateHash() == noisy.stateHash());
}

TEST_CASE("a restored snapshot reports no begin for contacts already touching", "[events]")
{
    World world;
    REQUIRE(buildPile(world, 50));
    for (int i = 0; i < 90; ++i)
    {
        world.step(kDt);
    }
    std::vector<std::uint8_t> saved;
    world.saveState(saved);
    // The original's next steps are the reference: a restored world (fresh, or rolled back) must match.
    std::vector<StepEvents> expected;
    for (int i = 0; i < 5; ++i)
    {
        world.step(kDt);
        expected.push_back(copyEvents(world));
    }

    World fresh;
    REQUIRE(buildPile(fresh, 50)); // the same hull catalogue
    REQUIRE(fresh.restoreState(saved) == RestoreStatus::Ok);
    CHECK(fresh.contactEvents().begin.empty());
    REQUIRE(world.restoreState(saved) == RestoreStatus::Ok);
    CHECK(world.contactEvents().end.empty());
    for (int i = 0; i < 5; ++i)
    {
        fresh.step(kDt);
        world.step(kDt);
        INFO("step " << i);
        CHECK(sameEvents(copyEvents(fresh), expected[static_cast<std::size_t>(i)]));
        CHECK(sameEvents(copyEvents(world), expected[static_cast<std::size_t>(i)]));
    }

    // A sphere resting (kept awake) on the ground: touching before the save, so no begin after a restore.
    World rest;
    addGround(rest);
    addBody(rest, Shape::makeSphere(0.5f), {0.0f, 0.5f, 0.0f}, false);
    for (int i = 0; i < 30; ++i)
    {
        rest.step(kDt);
    }
    REQUIRE(rest.stepStats().touchingContacts == 1);
    rest.saveState(saved);
    World restRestored;
    addGround(restRestored);
    REQUIRE(restRestored.restoreState(saved) == RestoreStatus::Ok);
    restRestored.step(kDt);
    CHECK(restRestored.contactEvents().begin.empty());
    CHECK(restRestored.contactEvents().end.empty());
    CHECK(restRestored.stepStats().touchingContacts == 1);
}

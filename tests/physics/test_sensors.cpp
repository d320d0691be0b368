// Sensors (BodyDesc::isSensor, World::sensorEvents, World::sensorOverlaps): overlap begin and end with no
// contact response, for static, kinematic and dynamic sensors, through sleep, destruction, filters, threads
// and snapshots.
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

BodyId addBody(World& world, BodyType type, const Shape& shape, const Vec3& position, bool sensor = false)
{
    BodyDesc desc;
    desc.type = type;
    desc.shape = shape;
    desc.transform.p = position;
    desc.isSensor = sensor;
    const CreateBodyResult created = world.createBody(desc);
    REQUIRE(created.status == WorldStatus::Ok);
    return created.id;
}

BodyId addSensor(World& world, BodyType type, const Shape& shape, const Vec3& position)
{
    return addBody(world, type, shape, position, true);
}

/// One step's sensor events, copied (the spans die at the next step).
struct StepSensorEvents
{
    std::vector<SensorBeginEvent> begin;
    std::vector<SensorEndEvent> end;
};

StepSensorEvents copyEvents(const World& world)
{
    const SensorEvents e = world.sensorEvents();
    return {{e.begin.begin(), e.begin.end()}, {e.end.begin(), e.end.end()}};
}

bool sameEvents(const StepSensorEvents& x, const StepSensorEvents& y)
{
    if (x.begin.size() != y.begin.size() || x.end.size() != y.end.size())
    {
        return false;
    }
    for (std::size_t i = 0; i < x.begin.size(); ++i)
    {
        if (!(x.begin[i].sensor == y.begin[i].sensor && x.begin[i].visitor == y.begin[i].visitor))
        {
            return false;
        }
    }
    for (std::size_t i = 0; i < x.end.size(); ++i)
    {
        if (!(x.end[i].sensor == y.end[i].sensor && x.end[i].visitor == y.end[i].visitor))
        {
            return false;
        }
    }
    return true;
}

/// The visitors World::sensorOverlaps lists for `sensor`.
std::vector<BodyId> visitorsOf(const World& world, BodyId sensor)
{
    std::vector<BodyId> visitors;
    auto collect = [&](BodyId id)
    {
        visitors.push_back(id);
        return true;
    };
    REQUIRE(world.sensorOverlaps(sensor, collect) == WorldStatus::Ok);
    return visitors;
}

Transform poseOf(const World& world, BodyId id)
{
    BodyState state;
    REQUIRE(world.getBody(id, state));
    return state.transform;
}

bool samePose(const Transform& a, const Transform& b)
{
    return a.p.x == b.p.x && a.p.y == b.p.y && a.p.z == b.p.z && a.q.x == b.q.x && a.q.y == b.q.y &&
           a.q.z == b.q.z && a.q.w == b.q.w;
}

bool sleeping(const World& world, BodyId id)
{
    BodyState state;
    REQUIRE(world.getBody(id, state));
    return state.sleeping;
}

/// Whether any contact event of the last step names `id`.
bool inContactEvents(const World& world, BodyId id)
{
    const ContactEvents e = world.contactEvents();
    for (const ContactBeginEvent& b : e.begin)
    {
        if (b.bodyA == id || b.bodyB == id)
        {
            return true;
        }
    }
    for (const ContactEndEvent& b : e.end)
    {
        if (b.bodyA == id || b.bodyB == id)
        {
            return true;
        }
    }
    for (const ContactHitEvent& b : e.hit)
    {
        if (b.bodyA == id || b.bodyB == id)
        {
            return true;
        }
    }
    return false;
}

/// A pile of 200 cubes with three sensors: a static slab the cubes fall through, a static box on the ground
/// they land in, and a kinematic bar sweeping along the ground; shared by the thread, snapshot and
/// allocation tests.
void buildSensorPile(World& world, BodyId& sweeper)
{
    REQUIRE(buildPile(world, 200));
    addSensor(world, BodyType::Static, Shape::makeBox({6.0f, 0.25f, 6.0f}), {0.0f, 6.0f, 0.0f});
    addSensor(world, BodyType::Static, Shape::makeBox({1.5f, 1.0f, 1.5f}), {0.0f, 1.0f, 0.0f});
    BodyDesc bar;
    bar.type = BodyType::Kinematic;
    bar.shape = Shape::makeBox({0.5f, 0.5f, 8.0f});
    bar.transform.p = {-10.0f, 0.5f, 0.0f};
    bar.linearVelocity = {2.0f, 0.0f, 0.0f};
    bar.isSensor = true;
    sweeper = world.createBody(bar).id;
    REQUIRE(!sweeper.isNull());
}

} // namespace

TEST_CASE("a static sensor reports a ball falling through it and leaves its fall bit-identical", "[sensors]")
{
    // The same world with and without the sensor (created last, so the other slots are the same).
    World plain;
    World sensed;
    BodyId ball;
    for (World* world : {&plain, &sensed})
    {
        addGround(*world);
        ball = addBody(*world, BodyType::Dynamic, Shape::makeSphere(0.5f), {0.0f, 12.0f, 0.0f});
    }
    const float top = 5.5f;
    const float bottom = 4.5f;
    const BodyId sensor =
        addSensor(sensed, BodyType::Static, Shape::makeBox({2.0f, 0.5f, 2.0f}), {0.0f, 5.0f, 0.0f});

    int beginStep = -1;
    int endStep = -1;
    for (int i = 0; i < 240; ++i)
    {
        REQUIRE(plain.step(kDt).ok());
        REQUIRE(sensed.step(kDt).ok());
        const Transform pose = poseOf(sensed, ball);
        INFO("step " << i);
        REQUIRE(samePose(pose, poseOf(plain, ball)));
        CHECK_FALSE(inContactEvents(sensed, sensor));
        const SensorEvents e = sensed.sensorEvents();
        // Reported in the step that ends with the ball overlapping (or touching) the slab, no earlier.
        const bool overlaps = pose.p.y - 0.5f <= top && pose.p.y + 0.5f >= bottom;
        for (const SensorBeginEvent& b : e.begin)
        {
            CHECK(b.sensor == sensor);
            CHECK(b.visitor == ball);
            CHECK(beginStep == -1);
            beginStep = i;
        }
        for (const SensorEndEvent& b : e.end)
        {
            CHECK(b.sensor == sensor);
            CHECK(b.visitor == ball);
            CHECK(endStep == -1);
            endStep = i;
        }
        const bool inside = beginStep >= 0 && endStep < 0;
        CHECK(inside == overlaps);
        CHECK(visitorsOf(sensed, sensor).size() == (inside ? 1u : 0u));
        CHECK(sensed.stepStats().sensorOverlaps == (inside ? 1u : 0u));
    }
    CHECK(beginStep > 0);
    CHECK(endStep > beginStep);
    CHECK(plain.stateHash() != 0);
}

TEST_CASE("a kinematic sensor sweeping over sleeping boxes reports each and leaves them asleep", "[sensors]")
{
    WorldConfig config;
    config.gravity = {0.0f, -9.81f, 0.0f};
    World world(config);
    addGround(world);
    std::vector<BodyId> boxes;
    for (int k = 0; k < 3; ++k)
    {
        boxes.push_back(addBody(world, BodyType::Dynamic, Shape::makeBox({0.5f, 0.5f, 0.5f}),
                                {3.0f * static_cast<float>(k), 0.5f, 0.0f}));
    }
    for (int i = 0; i < 120; ++i)
    {
        REQUIRE(world.step(kDt).ok());
    }
    std::vector<Transform> rest;
    for (const BodyId box : boxes)
    {
        REQUIRE(sleeping(world, box));
        rest.push_back(poseOf(world, box));
    }
    BodyDesc desc;
    desc.type = BodyType::Kinematic;
    desc.shape = Shape::makeBox({0.5f, 1.0f, 0.5f});
    desc.transform.p = {-3.0f, 1.0f, 0.0f};
    desc.linearVelocity = {3.0f, 0.0f, 0.0f};
    desc.isSensor = true;
    const BodyId sensor = world.createBody(desc).id;
    REQUIRE(!sensor.isNull());

    std::vector<BodyId> began;
    std::vector<BodyId> ended;
    for (int i = 0; i < 240; ++i) // 4 s: from x = -3 to x = 9
    {
        REQUIRE(world.step(kDt).ok());
        for (const SensorBeginEvent& b : world.sensorEvents().begin)
        {
            CHECK(b.sensor == sensor);
            began.push_back(b.visitor);
        }
        for (const SensorEndEvent& b : world.sensorEvents().end)
        {
            CHECK(b.sensor == sensor);
            ended.push_back(b.visitor);
        }
        CHECK(world.contactEvents().begin.empty());
        for (std::size_t k = 0; k < boxes.size(); ++k)
        {
            INFO("step " << i << ", box " << k);
            REQUIRE(sleeping(world, boxes[k]));
            REQUIRE(samePose(poseOf(world, boxes[k]), rest[k]));
        }
    }
    CHECK(began == boxes); // in the order the sensor reached them
    CHECK(ended == boxes);
    CHECK(world.stepStats().touchingContacts == 0);
}

TEST_CASE("a dynamic sensor falls through a static slab and detects it", "[sensors]")
{
    World world;
    const BodyId slab =
        addBody(world, BodyType::Static, Shape::makeBox({5.0f, 0.5f, 5.0f}), {0.0f, -0.5f, 0.0f});
    const BodyId sensor = addSensor(world, BodyType::Dynamic, Shape::makeSphere(0.5f), {0.0f, 2.0f, 0.0f});
    int begins = 0;
    int ends = 0;
    bool sawInside = false;
    for (int i = 0; i < 120; ++i)
    {
        REQUIRE(world.step(kDt).ok());
        const SensorEvents e = world.sensorEvents();
        for (const SensorBeginEvent& b : e.begin)
        {
            CHECK(b.sensor == sensor);
            CHECK(b.visitor == slab);
            ++begins;
        }
        for (const SensorEndEvent& b : e.end)
        {
            CHECK(b.sensor == sensor);
            CHECK(b.visitor == slab);
            ++ends;
        }
        CHECK_FALSE(inContactEvents(world, sensor));
        const float y = poseOf(world, sensor).p.y;
        const bool overlaps = y - 0.5f <= 0.0f && y + 0.5f >= -1.0f;
        CHECK(overlaps == (begins == 1 && ends == 0));
        sawInside = sawInside || overlaps;
    }
    CHECK(sawInside);
    CHECK(begins == 1);
    CHECK(ends == 1);
    // It fell freely, as far as 2 s of gravity take it (the explicit steps land a little below).
    BodyState state;
    REQUIRE(world.getBody(sensor, state));
    CHECK(state.isSensor);
    CHECK(state.linearVelocity.y == Approx(-9.81f * 2.0f).epsilon(1e-3));
    CHECK(state.transform.p.y < 2.0f - 0.5f * 9.81f * 4.0f + 0.5f);
}

TEST_CASE("which body types each sensor type detects", "[sensors]")
{
    // Zero gravity; the sensor and the other body overlap from the start and nothing moves.
    const BodyType types[] = {BodyType::Static, BodyType::Kinematic, BodyType::Dynamic};
    for (const BodyType sensorType : types)
    {
        for (const BodyType otherType : types)
        {
            WorldConfig config;
            config.gravity = {};
            World world(config);
            const BodyId sensor = addSensor(world, sensorType, Shape::makeBox({1.0f, 1.0f, 1.0f}), {});
            const BodyId other = addBody(world, otherType, Shape::makeSphere(0.5f), {0.5f, 0.0f, 0.0f});
            REQUIRE(world.step(kDt).ok());
            const bool expected = sensorType == BodyType::Dynamic || otherType != BodyType::Static;
            INFO("sensor " << static_cast<int>(sensorType) << ", other " << static_cast<int>(otherType));
            CHECK(world.sensorEvents().begin.size() == (expected ? 1u : 0u));
            CHECK(visitorsOf(world, sensor).size() == (expected ? 1u : 0u));
            // Nothing was pushed.
            BodyState state;
            REQUIRE(world.getBody(other, state));
            CHECK(state.transform.p.x == 0.5f);
            CHECK(lengthSquared(state.linearVelocity) == 0.0f);
        }
    }
}

TEST_CASE("a body that falls asleep inside a static sensor stays reported", "[sensors]")
{
    World world;
    addGround(world);
    const BodyId sensor =
        addSensor(world, BodyType::Static, Shape::makeBox({2.0f, 1.0f, 2.0f}), {0.0f, 1.0f, 0.0f});
    const BodyId box =
        addBody(world, BodyType::Dynamic, Shape::makeBox({0.5f, 0.5f, 0.5f}), {0.0f, 3.0f, 0.0f});
    int begins = 0;
    int ends = 0;
    for (int i = 0; i < 400; ++i)
    {
        REQUIRE(world.step(kDt).ok());
        begins += static_cast<int>(world.sensorEvents().begin.size());
        ends += static_cast<int>(world.sensorEvents().end.size());
    }
    CHECK(sleeping(world, box));
    CHECK(begins == 1);
    CHECK(ends == 0);
    const std::vector<BodyId> visitors = visitorsOf(world, sensor);
    REQUIRE(visitors.size() == 1);
    CHECK(visitors[0] == box);
    CHECK(world.stepStats().sensorOverlaps == 1);

    // Woken and lifted out: the end follows.
    Transform up;
    up.p = {0.0f, 10.0f, 0.0f};
    REQUIRE(world.setTransform(box, up) == WorldStatus::Ok);
    REQUIRE(world.step(kDt).ok());
    REQUIRE(world.sensorEvents().end.size() == 1);
    CHECK(world.sensorEvents().end[0].visitor == box);
    CHECK(visitorsOf(world, sensor).empty());
}

TEST_CASE("a static sensor teleported onto sleeping bodies detects them without waking them", "[sensors]")
{
    World world;
    addGround(world);
    const BodyId box =
        addBody(world, BodyType::Dynamic, Shape::makeBox({0.5f, 0.5f, 0.5f}), {0.0f, 0.5f, 0.0f});
    for (int i = 0; i < 120; ++i)
    {
        REQUIRE(world.step(kDt).ok());
    }
    REQUIRE(sleeping(world, box));
    const BodyId sensor =
        addSensor(world, BodyType::Static, Shape::makeBox({1.0f, 1.0f, 1.0f}), {20.0f, 1.0f, 0.0f});
    REQUIRE(world.step(kDt).ok());
    CHECK(world.sensorEvents().begin.empty());
    Transform onto;
    onto.p = {0.0f, 1.0f, 0.0f};
    REQUIRE(world.setTransform(sensor, onto) == WorldStatus::Ok);
    REQUIRE(world.step(kDt).ok());
    REQUIRE(world.sensorEvents().begin.size() == 1);
    CHECK(world.sensorEvents().begin[0].visitor == box);
    CHECK(sleeping(world, box));
    Transform away;
    away.p = {-20.0f, 1.0f, 0.0f};
    REQUIRE(world.setTransform(sensor, away) == WorldStatus::Ok);
    REQUIRE(world.step(kDt).ok());
    REQUIRE(world.sensorEvents().end.size() == 1);
    CHECK(world.sensorEvents().end[0].visitor == box);
    CHECK(sleeping(world, box));
    // Created right over it: found at the next step.
    const BodyId second = addSensor(world, BodyType::Static, Shape::makeSphere(0.2f), {0.0f, 0.5f, 0.0f});
    REQUIRE(world.step(kDt).ok());
    REQUIRE(world.sensorEvents().begin.size() == 1);
    CHECK(world.sensorEvents().begin[0].sensor == second);
    CHECK(world.sensorEvents().begin[0].visitor == box);
    CHECK(sleeping(world, box));
}

TEST_CASE("destroying a visitor or a sensor reports end at the next step, first", "[sensors]")
{
    WorldConfig config;
    config.gravity = {};
    World world(config);
    const BodyId sensor = addSensor(world, BodyType::Static, Shape::makeBox({3.0f, 1.0f, 1.0f}), {});
    const BodyId a = addBody(world, BodyType::Dynamic, Shape::makeSphere(0.5f), {-2.0f, 0.0f, 0.0f});
    const BodyId b = addBody(world, BodyType::Dynamic, Shape::makeSphere(0.5f), {0.0f, 0.0f, 0.0f});
    const BodyId c = addBody(world, BodyType::Dynamic, Shape::makeSphere(0.5f), {2.0f, 0.0f, 0.0f});
    REQUIRE(world.step(kDt).ok());
    REQUIRE(world.sensorEvents().begin.size() == 3);
    CHECK(world.sensorEvents().begin[0].visitor == a);
    CHECK(world.sensorEvents().begin[1].visitor == b);
    CHECK(world.sensorEvents().begin[2].visitor == c);

    REQUIRE(world.destroyBody(b) == WorldStatus::Ok);
    const std::vector<BodyId> left = visitorsOf(world, sensor);
    REQUIRE(left.size() == 2);
    CHECK(left[0] == a);
    CHECK(left[1] == c);
    REQUIRE(world.step(kDt).ok());
    REQUIRE(world.sensorEvents().end.size() == 1);
    CHECK(world.sensorEvents().end[0].sensor == sensor);
    CHECK(world.sensorEvents().end[0].visitor == b);
    CHECK(world.sensorEvents().begin.empty());

    REQUIRE(world.destroyBody(sensor) == WorldStatus::Ok);
    REQUIRE(world.step(kDt).ok());
    const SensorEvents e = world.sensorEvents();
    REQUIRE(e.end.size() == 2);
    CHECK(e.end[0].sensor == sensor);
    CHECK(e.end[0].visitor == a);
    CHECK(e.end[1].visitor == c);
    CHECK_FALSE(world.isValid(sensor));
    REQUIRE(world.step(kDt).ok());
    CHECK(world.sensorEvents().end.empty());
}

TEST_CASE("collision layers and groups filter sensors like any pair", "[sensors][filter]")
{
    WorldConfig config;
    config.gravity = {};
    World world(config);
    REQUIRE(world.setLayersCollide(1, 2, false) == WorldStatus::Ok);
    BodyDesc desc;
    desc.type = BodyType::Static;
    desc.shape = Shape::makeBox({3.0f, 1.0f, 1.0f});
    desc.isSensor = true;
    desc.layer = 1;
    desc.group = 7;
    const BodyId sensor = world.createBody(desc).id;
    const BodyId onLayer2 = addBody(world, BodyType::Dynamic, Shape::makeSphere(0.5f), {-2.0f, 0.0f, 0.0f});
    REQUIRE(world.setBodyFilter(onLayer2, 2, 0) == WorldStatus::Ok);
    const BodyId inGroup = addBody(world, BodyType::Dynamic, Shape::makeSphere(0.5f), {0.0f, 0.0f, 0.0f});
    REQUIRE(world.setBodyFilter(inGroup, 0, 7) == WorldStatus::Ok);
    const BodyId free = addBody(world, BodyType::Dynamic, Shape::makeSphere(0.5f), {2.0f, 0.0f, 0.0f});
    REQUIRE(world.step(kDt).ok());
    REQUIRE(world.sensorEvents().begin.size() == 1);
    CHECK(world.sensorEvents().begin[0].visitor == free);

    // Filtered while inside: end at the next step; allowed again: begin.
    REQUIRE(world.setBodyFilter(free, 2, 0) == WorldStatus::Ok);
    REQUIRE(world.step(kDt).ok());
    REQUIRE(world.sensorEvents().end.size() == 1);
    CHECK(world.sensorEvents().end[0].visitor == free);
    CHECK(visitorsOf(world, sensor).empty());
    REQUIRE(world.setLayersCollide(1, 2, true) == WorldStatus::Ok);
    REQUIRE(world.step(kDt).ok());
    const SensorEvents e = world.sensorEvents();
    REQUIRE(e.begin.size() == 2);
    CHECK(e.begin[0].visitor == onLayer2);
    CHECK(e.begin[1].visitor == free);
    CHECK(e.end.empty());
}

TEST_CASE("sensors do not detect sensors", "[sensors]")
{
    World world;
    const BodyId trigger =
        addSensor(world, BodyType::Static, Shape::makeBox({2.0f, 0.5f, 2.0f}), {0.0f, 0.0f, 0.0f});
    addSensor(world, BodyType::Kinematic, Shape::makeBox({1.0f, 1.0f, 1.0f}), {0.5f, 0.0f, 0.0f});
    const BodyId falling = addSensor(world, BodyType::Dynamic, Shape::makeSphere(0.5f), {0.0f, 3.0f, 0.0f});
    const BodyId ball = addBody(world, BodyType::Dynamic, Shape::makeSphere(0.25f), {0.6f, 3.0f, 0.0f});
    std::size_t begins = 0;
    for (int i = 0; i < 90; ++i)
    {
        REQUIRE(world.step(kDt).ok());
        for (const SensorBeginEvent& b : world.sensorEvents().begin)
        {
            CHECK(b.visitor == ball); // the ball enters the three sensors; no sensor enters another
            ++begins;
        }
    }
    CHECK(begins == 3);
    CHECK(poseOf(world, falling).p.y < -3.0f);
    CHECK(world.isValid(trigger));
}

TEST_CASE("sensor events are identical on 1 and 2 threads", "[sensors][tasks]")
{
    WorldConfig config1;
    WorldConfig config2;
    config2.threads = 2;
    World one(config1);
    World two(config2);
    BodyId sweeperOne;
    BodyId sweeperTwo;
    buildSensorPile(one, sweeperOne);
    buildSensorPile(two, sweeperTwo);
    std::size_t begins = 0;
    std::size_t ends = 0;
    for (int i = 0; i < 400; ++i)
    {
        REQUIRE(one.step(kDt).ok());
        REQUIRE(two.step(kDt).ok());
        const StepSensorEvents a = copyEvents(one);
        INFO("step " << i);
        REQUIRE(sameEvents(a, copyEvents(two)));
        REQUIRE(one.stateHash() == two.stateHash());
        begins += a.begin.size();
        ends += a.end.size();
    }
    CHECK(begins > 200);
    CHECK(ends > 150);
}

TEST_CASE("save and restore in the middle of overlaps re-simulates the same sensor events", "[sensors]")
{
    World world;
    BodyId sweeper;
    buildSensorPile(world, sweeper);
    for (int i = 0; i < 150; ++i)
    {
        world.step(kDt);
    }
    REQUIRE(world.stepStats().sensorOverlaps > 10);
    std::vector<std::uint8_t> saved;
    world.saveState(saved);
    std::vector<StepSensorEvents> expected;
    std::size_t count = 0;
    for (int i = 0; i < 150; ++i)
    {
        world.step(kDt);
        expected.push_back(copyEvents(world));
        count += expected.back().begin.size() + expected.back().end.size();
    }
    CHECK(count > 20);
    const std::uint64_t expectedHash = world.stateHash();

    World fresh;
    REQUIRE(buildPile(fresh, 1)); // any world with the same (empty) hull catalogue
    REQUIRE(fresh.restoreState(saved) == RestoreStatus::Ok);
    REQUIRE(world.restoreState(saved) == RestoreStatus::Ok);
    CHECK(world.sensorEvents().begin.empty());
    CHECK(world.sensorEvents().end.empty());
    BodyState state;
    REQUIRE(fresh.getBody(sweeper, state));
    CHECK(state.isSensor);
    for (int i = 0; i < 150; ++i)
    {
        fresh.step(kDt);
        world.step(kDt);
        INFO("step " << i);
        REQUIRE(sameEvents(copyEvents(fresh), expected[static_cast<std::size_t>(i)]));
        REQUIRE(sameEvents(copyEvents(world), expected[static_cast<std::size_t>(i)]));
    }
    CHECK(fresh.stateHash() == expectedHash);
    CHECK(world.stateHash() == expectedHash);
}

TEST_CASE("sensor events have their own switch and contact events do not turn them off", "[sensors][events]")
{
    WorldConfig noSensorEvents;
    noSensorEvents.enableSensorEvents = false;
    WorldConfig noContactEvents;
    noContactEvents.enableContactEvents = false;
    World quiet(noSensorEvents);
    World loud(noContactEvents);
    World both;
    BodyId sweeper;
    buildSensorPile(quiet, sweeper);
    buildSensorPile(loud, sweeper);
    buildSensorPile(both, sweeper);
    std::size_t loudEvents = 0;
    for (int i = 0; i < 200; ++i)
    {
        REQUIRE(quiet.step(kDt).ok());
        REQUIRE(loud.step(kDt).ok());
        REQUIRE(both.step(kDt).ok());
        CHECK(quiet.sensorEvents().begin.empty());
        CHECK(quiet.sensorEvents().end.empty());
        CHECK(loud.contactEvents().begin.empty());
        const StepSensorEvents l = copyEvents(loud);
        CHECK(sameEvents(l, copyEvents(both)));
        loudEvents += l.begin.size();
        // The overlaps are tracked either way.
        CHECK(quiet.stepStats().sensorOverlaps == both.stepStats().sensorOverlaps);
    }
    CHECK(loudEvents > 100);
    CHECK(visitorsOf(quiet, sweeper) == visitorsOf(both, sweeper));
    CHECK(quiet.stateHash() == both.stateHash());
    CHECK(loud.stateHash() == both.stateHash());
}

TEST_CASE("sensor events: warm steps allocate nothing, on 1 and 2 threads", "[sensors][allocation]")
{
    for (int threads : {1, 2})
    {
        WorldConfig config;
        config.maxBodies = 1024;
        config.maxContacts = 8192;
        config.threads = threads;
        World world(config);
        BodyId sweeper;
        buildSensorPile(world, sweeper);
        std::size_t events = 0;
        const std::int64_t allocations = polytope::test::allocationsOfWarmSteps(
            30, 300,
            [&](bool measured)
            {
                world.step(kDt);
                events += measured ? world.sensorEvents().begin.size() + world.sensorEvents().end.size() : 0;
            });
        INFO("threads " << threads);
        CHECK(allocations == 0);
        CHECK(events > 100);
    }
}

TEST_CASE("sensor event overflow is flagged and counted, not a crash", "[sensors]")
{
    WorldConfig config;
    config.gravity = {};
    config.maxSensorEvents = 2;
    World world(config);
    addSensor(world, BodyType::Static, Shape::makeBox({5.0f, 1.0f, 1.0f}), {});
    for (int k = 0; k < 5; ++k)
    {
        addBody(world, BodyType::Dynamic, Shape::makeSphere(0.4f),
                {2.0f * static_cast<float>(k) - 4.0f, 0.0f, 0.0f});
    }
    const StepStatus status = world.step(kDt);
    CHECK(status.has(StepFlag::SensorEventCapacityReached));
    CHECK(world.sensorEvents().begin.size() == 2);
    CHECK(world.stepStats().droppedSensorEvents == 3);
    CHECK(world.stepStats().sensorOverlaps == 5);
    CHECK(world.step(kDt).ok());
}

TEST_CASE("world queries leave sensors out unless asked for", "[sensors][queries]")
{
    WorldConfig config;
    config.gravity = {};
    World world(config);
    const BodyId sensor = addSensor(world, BodyType::Static, Shape::makeBox({1.0f, 1.0f, 1.0f}), {});
    const BodyId solid =
        addBody(world, BodyType::Static, Shape::makeBox({1.0f, 1.0f, 1.0f}), {5.0f, 0.0f, 0.0f});
    REQUIRE(world.step(kDt).ok());
    const RayCastInput ray{{-10.0f, 0.0f, 0.0f}, {20.0f, 0.0f, 0.0f}, 1.0f};
    RayQueryHit hit;
    QueryFilter filter;
    REQUIRE(world.castRayClosest(ray, filter, hit));
    CHECK(hit.body == solid);
    filter.includeSensors = true;
    REQUIRE(world.castRayClosest(ray, filter, hit));
    CHECK(hit.body == sensor);
    std::vector<BodyId> found;
    auto collect = [&](BodyId id)
    {
        found.push_back(id);
        return true;
    };
    world.overlapAabb({{-10.0f, -10.0f, -10.0f}, {10.0f, 10.0f, 10.0f}}, QueryFilter{}, collect);
    REQUIRE(found.size() == 1);
    CHECK(found[0] == solid);
    CHECK(world.sensorOverlaps(solid, collect) == WorldStatus::WrongBodyType);
    CHECK(world.sensorOverlaps(BodyId{99, 1}, collect) == WorldStatus::StaleBodyId);
}

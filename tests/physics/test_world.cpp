// The world: free fall, resting, ids, the state hash, sleeping and waking, planar motion, kinematic bodies,
// hull bodies, forces and impulses, and bad inputs.
#include "polytope/physics/hull.h"
#include "polytope/physics/island.h"
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace polytope::physics;

namespace
{
constexpr float kDt = 1.0f / 60.0f;

World worldWithGround()
{
    World world;
    BodyDesc ground;
    ground.type = BodyType::Static;
    ground.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
    REQUIRE(world.createBody(ground).status == WorldStatus::Ok);
    return world;
}
} // namespace

TEST_CASE("a sphere dropped from 10 m lands within one tick of sqrt(2h/g) and rests without sinking",
          "[world]")
{
    World world = worldWithGround();
    const float radius = 0.5f;
    const float height = 10.0f; // of the sphere's lowest point above the ground
    BodyDesc ball;
    ball.shape = Shape::makeSphere(radius);
    ball.transform.p = {0.0f, height + radius, 0.0f};
    const BodyId id = world.createBody(ball).id;
    REQUIRE_FALSE(id.isNull());

    const float g = -world.config().gravity.y;
    const float expected = std::sqrt(2.0f * height / g);
    int landingStep = -1;
    BodyState state;
    for (int step = 1; step <= 600; ++step)
    {
        world.step(kDt);
        REQUIRE(world.getBody(id, state));
        if (landingStep < 0 && state.transform.p.y - radius <= 1e-3f)
        {
            landingStep = step;
        }
    }
    REQUIRE(landingStep > 0);
    CHECK(std::fabs(landingStep * kDt - expected) <= kDt);

    // Eight seconds after landing: still on the plane, neither sunk past the slop nor bouncing.
    CHECK(state.transform.p.y - radius > -world.config().linearSlop - 1e-3f);
    CHECK(state.transform.p.y - radius < 1e-3f);
    CHECK(std::fabs(state.linearVelocity.y) < 1e-3f);
}

TEST_CASE("a box dropped at a tilt settles flat on the ground", "[world]")
{
    World world = worldWithGround();
    BodyDesc box;
    box.shape = Shape::makeBox({0.5f, 0.5f, 0.5f});
    box.transform.p = {0.0f, 3.0f, 0.0f};
    box.transform.q = quatFromAxisAngle(normalize(Vec3{1.0f, 0.0f, 1.0f}), 0.3f);
    const BodyId id = world.createBody(box).id;
    for (int step = 0; step < 600; ++step)
    {
        world.step(kDt);
    }
    BodyState state;
    REQUIRE(world.getBody(id, state));
    CHECK(state.transform.p.y == Approx(0.5f).margin(0.01f));
    CHECK(length(state.linearVelocity) < 0.01f);
    // Some face points straight down: the local axis closest to -y is within 1 degree of it.
    const Mat3 r = toMat3(state.transform.q);
    const float best = std::max({std::fabs(r.c0.y), std::fabs(r.c1.y), std::fabs(r.c2.y)});
    CHECK(best > std::cos(1.0f * kPi / 180.0f));
}

TEST_CASE("body ids are generational: a stale id is refused after its slot is reused", "[world]")
{
    World world;
    BodyDesc desc;
    desc.shape = Shape::makeSphere(0.5f);
    const BodyId first = world.createBody(desc).id;
    REQUIRE(world.destroyBody(first) == WorldStatus::Ok);
    const BodyId second = world.createBody(desc).id;
    CHECK(second.index == first.index);
    CHECK(second.generation != first.generation);
    CHECK_FALSE(world.isValid(first));
    CHECK(world.destroyBody(first) == WorldStatus::StaleBodyId);
    CHECK(world.isValid(second));
    CHECK(world.bodyCount() == 1);
}

TEST_CASE("invalid body descriptions and a full world are refused with a status", "[world]")
{
    WorldConfig config;
    config.maxBodies = 2;
    World world(config);
    BodyDesc desc;
    desc.shape = Shape::makeSphere(-1.0f);
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc.shape = Shape::makeBox({1.0f, NAN, 1.0f});
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc.shape = Shape::makeSphere(1.0f);
    desc.transform.p.x = INFINITY;
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc.transform.p.x = 0.0f;
    desc.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f); // a dynamic plane
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc.shape = Shape::makeSphere(1.0f);
    CHECK(world.createBody(desc).status == WorldStatus::Ok);
    CHECK(world.createBody(desc).status == WorldStatus::Ok);
    CHECK(world.createBody(desc).status == WorldStatus::BodyCapacityReached);
    CHECK(world.bodyCount() == 2);
}

TEST_CASE("the state hash is reproducible and sensitive to the state", "[world]")
{
    auto run = [](float nudge)
    {
        World world = worldWithGround();
        for (int i = 0; i < 10; ++i)
        {
            BodyDesc desc;
            desc.shape = i % 2 ? Shape::makeSphere(0.4f) : Shape::makeBox({0.3f, 0.4f, 0.5f});
            desc.transform.p = {static_cast<float>(i) * 1.5f, 2.0f + static_cast<float>(i), nudge};
            desc.angularVelocity = {0.1f * static_cast<float>(i), 0.0f, 0.2f};
            world.createBody(desc);
        }
        for (int step = 0; step < 240; ++step)
        {
            world.step(kDt);
        }
        return world.stateHash();
    };
    const std::uint64_t a = run(0.0f);
    CHECK(a == run(0.0f));
    CHECK(a != run(1e-3f));
}

namespace
{
/// Steps until `id` sleeps or `maxSteps` pass; returns the number of steps taken, or -1 if it never slept.
int stepsUntilSleep(World& world, BodyId id, int maxSteps)
{
    BodyState state;
    for (int step = 1; step <= maxSteps; ++step)
    {
        world.step(kDt);
        REQUIRE(world.getBody(id, state));
        if (state.sleeping)
        {
            return step;
        }
    }
    return -1;
}

BodyDesc cubeAt(const Vec3& p)
{
    BodyDesc desc;
    desc.shape = Shape::makeBox({0.5f, 0.5f, 0.5f});
    desc.transform.p = p;
    return desc;
}
} // namespace

TEST_CASE("a resting body falls asleep after timeToSleep and wakes on velocity, impulse and force", "[world]")
{
    World world = worldWithGround();
    const BodyId box = world.createBody(cubeAt({0.0f, 0.5f, 0.0f})).id;
    const int slept = stepsUntilSleep(world, box, 600);
    REQUIRE(slept > 0);
    // Resting from the start: it sleeps once it has been still for timeToSleep (plus a few settling steps).
    CHECK(slept * kDt >= world.config().timeToSleep);
    CHECK(slept * kDt < world.config().timeToSleep + 0.5f);
    BodyState state;
    REQUIRE(world.getBody(box, state));
    CHECK(state.linearVelocity == Vec3{});
    const std::uint64_t before = world.stateHash();
    world.step(kDt);
    REQUIRE(world.getBody(box, state));
    CHECK(state.sleeping);
    CHECK(world.stepStats().awakeBodies == 0);
    CHECK(world.stateHash() != before); // the step count is part of the hash

    REQUIRE(world.setVelocity(box, {1.0f, 0.0f, 0.0f}, {}) == WorldStatus::Ok);
    REQUIRE(world.getBody(box, state));
    CHECK_FALSE(state.sleeping);
    world.step(kDt);
    REQUIRE(world.getBody(box, state));
    CHECK(state.transform.p.x > 0.0f);

    REQUIRE(stepsUntilSleep(world, box, 600) > 0);
    REQUIRE(world.applyImpulse(box, {0.0f, 2000.0f, 0.0f}, state.centerOfMass) == WorldStatus::Ok);
    REQUIRE(world.getBody(box, state));
    CHECK_FALSE(state.sleeping);
    CHECK(state.linearVelocity.y == Approx(2.0f));

    REQUIRE(stepsUntilSleep(world, box, 900) > 0);
    REQUIRE(world.applyCentralForce(box, {0.0f, 30000.0f, 0.0f}) == WorldStatus::Ok);
    world.step(kDt);
    REQUIRE(world.getBody(box, state));
    CHECK_FALSE(state.sleeping);
    CHECK(state.linearVelocity.y > 0.0f);
}

TEST_CASE("sleeping islands sleep and wake together; a falling body wakes a sleeping stack", "[world]")
{
    World world = worldWithGround();
    BodyId stack[3];
    for (int i = 0; i < 3; ++i)
    {
        stack[i] = world.createBody(cubeAt({0.0f, 0.5f + static_cast<float>(i), 0.0f})).id;
    }
    const BodyId loner = world.createBody(cubeAt({5.0f, 0.5f, 0.0f})).id;
    REQUIRE(stepsUntilSleep(world, stack[2], 600) > 0);
    BodyState state;
    for (const BodyId id : stack)
    {
        REQUIRE(world.getBody(id, state));
        CHECK(state.sleeping);
    }
    REQUIRE(world.getBody(loner, state));
    CHECK(state.sleeping);

    // Waking the bottom cube wakes its island (the stack) but not the separate cube.
    REQUIRE(world.wakeBody(stack[0]) == WorldStatus::Ok);
    for (const BodyId id : stack)
    {
        REQUIRE(world.getBody(id, state));
        CHECK_FALSE(state.sleeping);
    }
    REQUIRE(world.getBody(loner, state));
    CHECK(state.sleeping);

    REQUIRE(stepsUntilSleep(world, stack[2], 600) > 0);
    // A cube dropped on the sleeping stack wakes all of it when it lands.
    const BodyId dropped = world.createBody(cubeAt({0.0f, 5.0f, 0.0f})).id;
    bool allAwake = false;
    for (int step = 0; step < 120 && !allAwake; ++step)
    {
        world.step(kDt);
        allAwake = true;
        for (const BodyId id : stack)
        {
            REQUIRE(world.getBody(id, state));
            allAwake = allAwake && !state.sleeping;
        }
    }
    CHECK(allAwake);
    REQUIRE(world.getBody(dropped, state));
    CHECK(state.transform.p.y < 4.0f);

    // Destroying a body wakes what it touched.
    REQUIRE(stepsUntilSleep(world, dropped, 900) > 0);
    REQUIRE(world.destroyBody(stack[1]) == WorldStatus::Ok);
    REQUIRE(world.getBody(stack[2], state));
    CHECK_FALSE(state.sleeping);
    REQUIRE(world.getBody(stack[0], state));
    CHECK_FALSE(state.sleeping);
}

TEST_CASE("with sleeping disabled nothing sleeps", "[world]")
{
    WorldConfig config;
    config.enableSleep = false;
    World world(config);
    BodyDesc ground;
    ground.type = BodyType::Static;
    ground.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
    world.createBody(ground);
    const BodyId box = world.createBody(cubeAt({0.0f, 0.5f, 0.0f})).id;
    CHECK(stepsUntilSleep(world, box, 120) == -1);
}

TEST_CASE("planar bodies stay in their plane and turn only about its normal", "[world]")
{
    WorldConfig config;
    config.enableSleep = false;
    World world(config);
    REQUIRE(findScene("planar")->build(world));
    std::vector<float> startZ;
    world.forEachBody([&](const BodyState& b) { startZ.push_back(b.transform.p.z); });
    float maxSpeed = 0.0f;
    for (int step = 0; step < 600; ++step)
    {
        world.step(kDt);
        std::size_t k = 0;
        world.forEachBody(
            [&](const BodyState& b)
            {
                if (b.type == BodyType::Dynamic)
                {
                    CHECK(b.transform.p.z == startZ[k]);
                    CHECK(b.transform.q.x == 0.0f);
                    CHECK(b.transform.q.y == 0.0f);
                    CHECK(b.linearVelocity.z == 0.0f);
                    CHECK(b.angularVelocity.x == 0.0f);
                    CHECK(b.angularVelocity.y == 0.0f);
                    maxSpeed = std::max(maxSpeed, length(b.linearVelocity));
                }
                ++k;
            });
    }
    CHECK(maxSpeed > 1.0f); // they did move
}

TEST_CASE("a moving kinematic body pushes dynamic bodies and is not pushed back", "[world]")
{
    World world = worldWithGround();
    BodyDesc pusher;
    pusher.type = BodyType::Kinematic;
    pusher.shape = Shape::makeBox({0.5f, 0.5f, 2.0f});
    pusher.transform.p = {-2.0f, 0.5f, 0.0f};
    pusher.linearVelocity = {1.0f, 0.0f, 0.0f};
    const BodyId kinematic = world.createBody(pusher).id;
    const BodyId box = world.createBody(cubeAt({0.0f, 0.5f, 0.0f})).id;
    for (int step = 0; step < 180; ++step)
    {
        world.step(kDt);
    }
    BodyState k;
    BodyState b;
    REQUIRE(world.getBody(kinematic, k));
    REQUIRE(world.getBody(box, b));
    CHECK(k.transform.p.x == Approx(1.0f).margin(1e-3f));
    CHECK(k.linearVelocity.x == 1.0f);
    CHECK(b.transform.p.x > 1.9f); // ahead of the pusher's face (at x = 1.5)
    CHECK_FALSE(b.sleeping);
}

TEST_CASE("hull bodies: the catalogue refuses bad hulls; a hull cube rests like a box", "[world]")
{
    World world = worldWithGround();
    ConvexHull broken = makeBoxHull({0.5f, 0.5f, 0.5f});
    broken.faceVertices[0] = 200; // out of range
    CHECK(world.addHull(broken).status == WorldStatus::InvalidHull);
    ConvexHull nan = makeBoxHull({0.5f, 0.5f, 0.5f});
    nan.vertices[3].x = NAN;
    CHECK(world.addHull(nan).status == WorldStatus::InvalidHull);

    const AddHullResult added = world.addHull(makeBoxHull({0.5f, 0.5f, 0.5f}));
    REQUIRE(added.status == WorldStatus::Ok);
    BodyDesc desc;
    desc.shape.type = ShapeType::Hull;
    desc.shape.hullIndex = added.index + 1; // not in the catalogue
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc.shape.hullIndex = added.index;
    desc.transform.p = {0.0f, 2.0f, 0.0f};
    const BodyId hull = world.createBody(desc).id;
    REQUIRE_FALSE(hull.isNull());
    for (int step = 0; step < 240; ++step)
    {
        world.step(kDt);
    }
    BodyState state;
    REQUIRE(world.getBody(hull, state));
    CHECK(state.mass == Approx(1000.0f));
    CHECK(state.transform.p.y == Approx(0.5f).margin(2e-3f));
    CHECK(length(state.linearVelocity) < 1e-2f);
}

TEST_CASE("bad inputs are refused with a status and change nothing", "[world]")
{
    World world = worldWithGround();
    const BodyId box = world.createBody(cubeAt({0.0f, 0.5f, 0.0f})).id;
    BodyDesc staticDesc = cubeAt({3.0f, 0.5f, 0.0f});
    staticDesc.type = BodyType::Static;
    const BodyId wall = world.createBody(staticDesc).id;
    const BodyId stale{box.index + 100, 1};
    const std::uint64_t hash = world.stateHash();

    CHECK(world.setVelocity(stale, {}, {}) == WorldStatus::StaleBodyId);
    CHECK(world.applyForce(stale, {}, {}) == WorldStatus::StaleBodyId);
    CHECK(world.applyImpulse(stale, {}, {}) == WorldStatus::StaleBodyId);
    CHECK(world.applyTorque(stale, {}) == WorldStatus::StaleBodyId);
    CHECK(world.applyCentralForce(stale, {}) == WorldStatus::StaleBodyId);
    CHECK(world.applyAngularImpulse(stale, {}) == WorldStatus::StaleBodyId);
    CHECK(world.setTransform(stale, {}) == WorldStatus::StaleBodyId);
    CHECK(world.wakeBody(stale) == WorldStatus::StaleBodyId);
    CHECK(world.destroyBody(BodyId{}) == WorldStatus::StaleBodyId);

    CHECK(world.setVelocity(box, {NAN, 0.0f, 0.0f}, {}) == WorldStatus::InvalidBodyDesc);
    CHECK(world.setVelocity(box, {}, {0.0f, INFINITY, 0.0f}) == WorldStatus::InvalidBodyDesc);
    CHECK(world.applyForce(box, {NAN, 0.0f, 0.0f}, {}) == WorldStatus::InvalidBodyDesc);
    CHECK(world.applyImpulse(box, {}, {0.0f, NAN, 0.0f}) == WorldStatus::InvalidBodyDesc);
    CHECK(world.applyTorque(box, {0.0f, 0.0f, NAN}) == WorldStatus::InvalidBodyDesc);
    Transform badPose;
    badPose.q = {0.0f, 0.0f, 0.0f, 0.0f};
    CHECK(world.setTransform(box, badPose) == WorldStatus::InvalidBodyDesc);
    CHECK(world.applyForce(wall, {1.0f, 0.0f, 0.0f}, {}) == WorldStatus::WrongBodyType);
    CHECK(world.setVelocity(wall, {1.0f, 0.0f, 0.0f}, {}) == WorldStatus::WrongBodyType);
    CHECK(world.stateHash() == hash);

    BodyDesc desc = cubeAt({0.0f, 5.0f, 0.0f});
    desc.density = 0.0f;
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc = cubeAt({0.0f, 5.0f, 0.0f});
    desc.friction = -1.0f;
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc = cubeAt({0.0f, 5.0f, 0.0f});
    desc.restitution = 1.5f;
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc = cubeAt({0.0f, 5.0f, 0.0f});
    desc.linearDamping = NAN;
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc = cubeAt({0.0f, 5.0f, 0.0f});
    desc.transform.q = {0.0f, 0.0f, 0.0f, 0.0f};
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc = cubeAt({0.0f, 5.0f, 0.0f});
    desc.allowedDofs = 0x40;
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    CHECK(world.bodyCount() == 3);

    for (const float dt : {0.0f, -kDt, NAN, INFINITY})
    {
        const StepStatus status = world.step(dt);
        CHECK(status.has(StepFlag::InvalidTimeStep));
    }
    CHECK(world.stepCount() == 0);
    CHECK(world.stateHash() == hash);
    CHECK(world.step(kDt).ok());
}

TEST_CASE("forces, torques and impulses change the motion by the closed forms", "[world]")
{
    WorldConfig config;
    config.gravity = {};
    World world(config);
    BodyDesc desc;
    desc.shape = Shape::makeSphere(0.5f);
    const BodyId ball = world.createBody(desc).id;
    BodyState s;
    REQUIRE(world.getBody(ball, s));
    const float mass = s.mass;
    CHECK(mass == Approx(1000.0f * 4.0f / 3.0f * kPi * 0.125f));
    const float inertia = 0.4f * mass * 0.25f;

    // F for one step: dv = F dt / m.
    REQUIRE(world.applyCentralForce(ball, {mass * 6.0f, 0.0f, 0.0f}) == WorldStatus::Ok);
    world.step(kDt);
    REQUIRE(world.getBody(ball, s));
    CHECK(s.linearVelocity.x == Approx(6.0f * kDt).epsilon(1e-5));
    world.step(kDt); // the force was used up
    REQUIRE(world.getBody(ball, s));
    CHECK(s.linearVelocity.x == Approx(6.0f * kDt).epsilon(1e-5));

    // Torque: dw = T dt / I.
    REQUIRE(world.applyTorque(ball, {0.0f, 0.0f, inertia * 3.0f}) == WorldStatus::Ok);
    world.step(kDt);
    REQUIRE(world.getBody(ball, s));
    CHECK(s.angularVelocity.z == Approx(3.0f * kDt).epsilon(1e-5));

    // An off-centre impulse: dv = J / m, dw = r x J / I.
    REQUIRE(world.setVelocity(ball, {}, {}) == WorldStatus::Ok);
    REQUIRE(world.getBody(ball, s));
    REQUIRE(world.applyImpulse(ball, {0.0f, mass, 0.0f}, s.centerOfMass + Vec3{0.5f, 0.0f, 0.0f}) ==
            WorldStatus::Ok);
    REQUIRE(world.getBody(ball, s));
    CHECK(s.linearVelocity.y == Approx(1.0f));
    CHECK(s.angularVelocity.z == Approx(0.5f * mass / inertia));
}

TEST_CASE("island builder: after flatten, each element's root is the smallest element linked to it",
          "[world]")
{
    // Against a brute-force labelling: repeated relaxation of "smallest label among the linked" to a fixed
    // point, over random links (chains, stars and merges of sets already merged).
    std::mt19937 rng(7);
    for (int trial = 0; trial < 50; ++trial)
    {
        const std::uint32_t count = 1 + rng() % 300;
        const std::uint32_t linkCount = rng() % (2 * count);
        std::vector<std::pair<std::uint32_t, std::uint32_t>> links;
        IslandBuilder islands;
        islands.reset(count);
        for (std::uint32_t k = 0; k < linkCount; ++k)
        {
            links.emplace_back(rng() % count, rng() % count);
            islands.unite(links.back().first, links.back().second);
        }
        islands.flatten();
        std::vector<std::uint32_t> label(count);
        for (std::uint32_t i = 0; i < count; ++i)
        {
            label[i] = i;
        }
        for (bool changed = true; changed;)
        {
            changed = false;
            for (const auto& [a, b] : links)
            {
                const std::uint32_t smallest = std::min(label[a], label[b]);
                changed = changed || label[a] != smallest || label[b] != smallest;
                label[a] = smallest;
                label[b] = smallest;
            }
        }
        for (std::uint32_t i = 0; i < count; ++i)
        {
            INFO("trial " << trial << ", element " << i);
            REQUIRE(islands.root(i) == label[i]);
            REQUIRE(islands.find(i) == label[i]);
        }
    }
}

// The skeleton world: free fall, resting on the ground plane, ids and the state hash.
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

#include <cmath>

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

TEST_CASE("a sphere dropped from 10 m lands within one tick of sqrt(2h/g) and rests without sinking", "[world]")
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
    CHECK(state.transform.p.y - radius > -world.config().contactSlop - 1e-4f);
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

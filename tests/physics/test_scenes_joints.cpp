// The jointed built-in scenes (scenes_joints.cpp): each builds with its bodies and joints and stays finite
// and sensible for seconds at 60 Hz: the chain holds together as it swings down, the bridge carries its boxes
// above the ground, the car's motors drive it up the ramp. Each re-simulates bit-exactly from a snapshot, and
// steps without allocating once warm.
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"
#include "support/allocation_counter.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

using namespace polytope::physics;

namespace
{

constexpr float kDt = 1.0f / 60.0f;

/// The dynamic bodies in creation order (a fresh world fills its slots in order).
std::vector<BodyState> dynamicBodies(const World& world)
{
    std::vector<BodyState> bodies;
    world.forEachBody(
        [&](const BodyState& b)
        {
            if (b.type == BodyType::Dynamic)
            {
                bodies.push_back(b);
            }
        });
    return bodies;
}

/// Every body's pose and velocities are finite, and every joint's separation; returns the largest
/// separation of the joints that pin anchors together.
float requireFiniteAndLargestSeparation(const World& world)
{
    world.forEachBody(
        [&](const BodyState& b)
        {
            CAPTURE(b.id.index);
            REQUIRE(isFinite(b.transform.p));
            REQUIRE(isFinite(b.transform.q));
            REQUIRE(isFinite(b.linearVelocity));
            REQUIRE(isFinite(b.angularVelocity));
        });
    float largest = 0.0f;
    world.forEachJoint(
        [&](const JointState& j)
        {
            REQUIRE(std::isfinite(j.anchorSeparation));
            largest = std::max(largest, j.anchorSeparation);
        });
    return largest;
}

/// The scene's world after `steps` steps, a snapshot taken there, and the same world `more` steps later;
/// a second world built from the scene restores the snapshot and must reach the same bits.
void checkRestoresBitExactly(const char* name, int steps, int more)
{
    CAPTURE(name);
    World world;
    REQUIRE(findScene(name)->build(world));
    for (int i = 0; i < steps; ++i)
    {
        world.step(kDt);
    }
    std::vector<std::uint8_t> saved;
    world.saveState(saved);
    World restored;
    REQUIRE(findScene(name)->build(restored));
    REQUIRE(restored.restoreState(saved) == RestoreStatus::Ok);
    CHECK(restored.jointCount() == world.jointCount());
    CHECK(restored.stateHash() == world.stateHash());
    for (int i = 0; i < more; ++i)
    {
        world.step(kDt);
        restored.step(kDt);
    }
    CHECK(restored.stateHash() == world.stateHash());
}

} // namespace

TEST_CASE("chain: 20 links on ball joints swing down from the anchor and hang within 1 cm of each other",
          "[scenes][joints]")
{
    World world;
    REQUIRE(buildChain(world));
    CHECK(world.bodyCount() == 2 + kChainLinks); // the ground, the anchor block and the links
    CHECK(world.jointCount() == kChainLinks);
    world.forEachJoint([](const JointState& j) { CHECK(j.desc.type == JointType::Ball); });

    // Each link's joint anchors, from its pose alone: toward the anchor, and away from it.
    const auto anchorsOf = [](const BodyState& link, Vec3& inner, Vec3& outer)
    {
        inner = transformPoint(link.transform, {0.0f, -0.5f * kChainLinkPitchMeters, 0.0f});
        outer = transformPoint(link.transform, {0.0f, 0.5f * kChainLinkPitchMeters, 0.0f});
    };
    float lowestEnd = kChainAnchor.y;
    float largestGap = 0.0f;
    for (int step = 0; step < 4 * 60; ++step)
    {
        REQUIRE(world.step(kDt).ok());
        CHECK(requireFiniteAndLargestSeparation(world) < 0.01f);
        const std::vector<BodyState> links = dynamicBodies(world);
        REQUIRE(links.size() == static_cast<std::size_t>(kChainLinks));
        Vec3 previousOuter = kChainAnchor;
        for (const BodyState& link : links)
        {
            Vec3 inner;
            Vec3 outer;
            anchorsOf(link, inner, outer);
            largestGap = std::max(largestGap, distance(inner, previousOuter));
            previousOuter = outer;
        }
        lowestEnd = std::min(lowestEnd, previousOuter.y);
    }
    CHECK(largestGap < 0.01f);
    // Let go level with the anchor, the 12 m chain swings down through the vertical.
    CHECK(lowestEnd < kChainAnchor.y - 0.9f * kChainLinkPitchMeters * kChainLinks);
    CHECK(lowestEnd > 0.0f);
}

TEST_CASE("bridge: 40 hinged planks between two posts carry the dropped boxes above the ground",
          "[scenes][joints]")
{
    World world;
    REQUIRE(buildBridge(world));
    CHECK(world.bodyCount() == 1 + 2 + kBridgePlanks + kBridgeBoxes);
    CHECK(world.jointCount() == kBridgePlanks + 1);
    // Built on the arc that spans the posts: no joint starts with an error.
    world.forEachJoint(
        [](const JointState& j)
        {
            CHECK(j.desc.type == JointType::Hinge);
            CHECK(j.anchorSeparation < 1e-4f);
        });

    float largestSeparation = 0.0f;
    for (int step = 0; step < 5 * 60; ++step)
    {
        REQUIRE(world.step(kDt).ok());
        largestSeparation = std::max(largestSeparation, requireFiniteAndLargestSeparation(world));
    }
    CHECK(largestSeparation < 0.02f);
    const std::vector<BodyState> bodies = dynamicBodies(world);
    REQUIRE(bodies.size() == static_cast<std::size_t>(kBridgePlanks + kBridgeBoxes));
    const float halfSpan = 0.5f * kBridgeSpanMeters;
    for (int i = 0; i < kBridgePlanks; ++i)
    {
        const Vec3 p = bodies[static_cast<std::size_t>(i)].transform.p;
        CAPTURE(i, p.x, p.y, p.z);
        CHECK(std::fabs(p.x) < halfSpan);
        CHECK(p.y < kBridgeAnchorHeightMeters);
        CHECK(p.y > 1.0f); // sagging under the boxes, but well above the ground
        CHECK(std::fabs(p.z) < 0.1f);
    }
    // The boxes lie on the planks: between the posts, above the posts' base, on the bridge's width.
    for (int i = 0; i < kBridgeBoxes; ++i)
    {
        const BodyState& box = bodies[static_cast<std::size_t>(kBridgePlanks + i)];
        const Vec3 p = box.transform.p;
        CAPTURE(i, p.x, p.y, p.z);
        CHECK(std::fabs(p.x) < halfSpan);
        CHECK(p.y > 1.5f);
        CHECK(p.y < kBridgeAnchorHeightMeters);
        CHECK(std::fabs(p.z) < 1.0f);
        CHECK(length(box.linearVelocity) < 1.0f);
    }
}

TEST_CASE("car: four motored wheels drive the chassis forward and up the ramp", "[scenes][joints]")
{
    World world;
    REQUIRE(buildCar(world));
    CHECK(world.bodyCount() == 4 + 1 + 4); // ground, incline, platform, wall; chassis; wheels
    CHECK(world.jointCount() == 4);
    world.forEachJoint(
        [](const JointState& j)
        {
            CHECK(j.desc.type == JointType::Hinge);
            CHECK(j.desc.motor.mode == MotorMode::Velocity);
            CHECK(j.desc.motor.maxForce == kCarMotorTorqueNewtonMeters);
        });

    std::vector<BodyState> bodies = dynamicBodies(world);
    REQUIRE(bodies.size() == 5);
    const Vec3 start = bodies[0].transform.p;
    CHECK(start.x == kCarStartX);
    float largestSeparation = 0.0f;
    float highest = start.y;
    float flatSpeed = 0.0f;
    for (int step = 0; step < 6 * 60; ++step)
    {
        REQUIRE(world.step(kDt).ok());
        largestSeparation = std::max(largestSeparation, requireFiniteAndLargestSeparation(world));
        bodies = dynamicBodies(world);
        const BodyState& chassis = bodies[0];
        highest = std::max(highest, chassis.transform.p.y);
        // Upright and going straight: the chassis' up axis stays near world up, and it keeps to its lane.
        CHECK(rotate(chassis.transform.q, Vec3{0.0f, 1.0f, 0.0f}).y > 0.9f);
        CHECK(std::fabs(chassis.transform.p.z) < 1.0f);
        if (step == 60)
        {
            flatSpeed = chassis.linearVelocity.x; // after a second, still on the flat before the ramp
            CHECK(chassis.transform.p.x < kCarRampStartX);
        }
    }
    CHECK(largestSeparation < 0.01f);
    const Vec3 end = bodies[0].transform.p;
    CAPTURE(end.x, end.y, end.z, highest);
    // At about 3 m/s for 6 s: well up the 10 m incline, which starts 5 m ahead.
    CHECK(end.x > kCarRampStartX + 5.0f);
    const float rise = std::tan(kCarRampDegrees * kPi / 180.0f) * 5.0f;
    CHECK(highest > start.y + 0.8f * rise);
    // On the flat the wheels roll at about the motors' speed.
    CHECK(flatSpeed == Approx(kCarWheelSpeedRadiansPerSecond * kCarWheelRadiusMeters).epsilon(0.1));
}

TEST_CASE("jointed scenes re-simulate bit-exactly from a snapshot restored into a rebuilt world",
          "[scenes][joints]")
{
    checkRestoresBitExactly("chain", 60, 60);
    checkRestoresBitExactly("bridge", 90, 60);
    checkRestoresBitExactly("car", 60, 60);
}

TEST_CASE("jointed scenes step without allocating once warm", "[scenes][joints][allocation]")
{
    for (const char* name : {"chain", "bridge", "car"})
    {
        CAPTURE(name);
        World world;
        REQUIRE(findScene(name)->build(world));
        const std::int64_t allocations =
            polytope::test::allocationsOfWarmSteps(30, 300, [&](bool) { world.step(kDt); });
        CHECK(allocations == 0);
    }
}

TEST_CASE("jointed scenes hold together until they come to rest: the chain hangs straight, the bridge "
          "holds its boxes, the car stands at the wall",
          "[scenes][joints]")
{
    struct Case
    {
        const char* name;
        int seconds; // by when every body sleeps
    };
    for (const Case& c : {Case{"chain", 75}, Case{"bridge", 30}, Case{"car", 15}})
    {
        CAPTURE(c.name);
        World world;
        REQUIRE(findScene(c.name)->build(world));
        float largestSeparation = 0.0f;
        for (int step = 0; step < c.seconds * 60; ++step)
        {
            REQUIRE(world.step(kDt).ok());
            largestSeparation = std::max(largestSeparation, requireFiniteAndLargestSeparation(world));
        }
        CHECK(largestSeparation < 0.01f);
        const std::vector<BodyState> bodies = dynamicBodies(world);
        for (const BodyState& b : bodies)
        {
            CHECK(b.sleeping);
        }
        const std::string_view name = c.name;
        if (name == "chain")
        {
            const Vec3 end =
                transformPoint(bodies.back().transform, {0.0f, 0.5f * kChainLinkPitchMeters, 0.0f});
            CAPTURE(end.x, end.y, end.z);
            // Within about a degree of straight down (it falls asleep at the end of its last slow swing).
            CHECK(std::fabs(end.x) < 0.25f);
            CHECK(std::fabs(end.z) < 0.25f);
            CHECK(end.y == Approx(kChainAnchor.y - kChainLinkPitchMeters * kChainLinks).margin(0.05f));
        }
        else if (name == "bridge")
        {
            for (int i = 0; i < kBridgeBoxes; ++i)
            {
                const Vec3 p = bodies[static_cast<std::size_t>(kBridgePlanks + i)].transform.p;
                CAPTURE(i, p.x, p.y, p.z);
                CHECK(p.y > 1.5f);
                CHECK(std::fabs(p.z) < 1.0f);
            }
        }
        else
        {
            // Against the wall at the platform's far end, still upright.
            const BodyState& chassis = bodies.front();
            CHECK(chassis.transform.p.x > kCarRampStartX + 19.0f);
            CHECK(rotate(chassis.transform.q, Vec3{0.0f, 1.0f, 0.0f}).y > 0.99f);
        }
    }
}

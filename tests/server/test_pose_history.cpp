// PoseHistory (server/pose_history.h): rewound rays and shape casts against the moving bodies as a client
// saw them. A sphere target moves at 10 m/s across a World stepped at 60 Hz (1/6 m a tick) and is recorded
// every tick; rays aimed at where it was 150 ms (9 ticks) ago hit it rewound and miss it live. Then blended
// views, static geometry in front, filters, bodies created or destroyed since, the ring wrapping, clamping,
// orientations blended the short way, shape casts, a compound target, agreement with the World's own queries
// on the world as it is and as it was (saved at a past tick and restored into a second World), no allocation
// once warm, and several threads querying at once.
#include "polytope/physics/world.h"
#include "polytope/server/pose_history.h"

#include "support/allocation_counter.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace polytope;
using physics::BodyId;
using physics::Vec3;
using server::PoseHistory;
using server::RewindResult;
using server::RewindStatus;
using server::ViewTime;

namespace
{

constexpr float kDt = 1.0f / 60.0f;
constexpr float kSpeed = 10.0f;       ///< m/s along +x
constexpr float kTargetRadius = 0.5f; ///< metres
constexpr float kShooterZ = -20.0f;   ///< rays start here and run along +z through the target's lane (z = 0)
constexpr std::uint64_t kTicks = 30;  ///< T: the newest tick recorded

physics::WorldConfig noGravity()
{
    physics::WorldConfig config;
    config.gravity = {0.0f, 0.0f, 0.0f};
    config.maxBodies = 256;
    config.maxContacts = 1024;
    return config;
}

/// A ray from the shooter's line along +z through (x, y, 0), 40 m long.
physics::RayCastInput rayAt(float x, float y = 0.0f)
{
    return {{x, y, kShooterZ}, {0.0f, 0.0f, 40.0f}, 1.0f};
}

/// A world with a kinematic sphere moving at kSpeed along x from the origin, stepped and recorded for ticks
/// 1 .. kTicks (tick k is the state after k steps); `positions[k]` is the target's centre x at tick k.
struct MovingTarget
{
    physics::World world{noGravity()};
    PoseHistory history;
    BodyId target{};
    std::vector<float> positions;

    explicit MovingTarget(const server::PoseHistoryConfig& config = {},
                          physics::BodyType type = physics::BodyType::Kinematic)
        : history(config)
    {
        physics::BodyDesc desc;
        desc.type = type;
        desc.shape = physics::Shape::makeSphere(kTargetRadius);
        desc.linearVelocity = {kSpeed, 0.0f, 0.0f};
        desc.allowSleep = false;
        target = world.createBody(desc).id;
        REQUIRE(!target.isNull());
        positions.push_back(0.0f);
        advance(kTicks);
    }

    void advance(std::uint64_t ticks)
    {
        for (std::uint64_t i = 0; i < ticks; ++i)
        {
            world.step(kDt);
            history.record(world, world.stepCount());
            physics::BodyState state;
            positions.push_back(world.getBody(target, state) ? state.transform.p.x : positions.back());
        }
    }

    std::uint64_t now() const { return world.stepCount(); }
};

bool hitsLive(const physics::World& world, const physics::RayCastInput& ray, BodyId body)
{
    physics::RayQueryHit hit;
    return world.castRayClosest(ray, {}, hit) && hit.body == body;
}

} // namespace

TEST_CASE("PoseHistory: the window is the longest round trip, the interpolation delay and a snapshot "
          "interval, capped at 1 s",
          "[server][pose_history]")
{
    server::PoseHistoryConfig config;
    config.tickRateHz = 60.0;
    config.maxRoundTripSeconds = 0.2;
    config.interpolationDelaySeconds = 0.1;
    config.snapshotIntervalSeconds = 0.05;
    CHECK(PoseHistory::ticksFor(config) == 22); // 0.35 s = 21 ticks, both ends held
    config.maxRoundTripSeconds = 5.0;
    CHECK(PoseHistory::ticksFor(config) == 61); // capped at 1 s
    config = {};
    config.maxRoundTripSeconds = 0.0;
    config.interpolationDelaySeconds = 0.0;
    config.snapshotIntervalSeconds = 0.0;
    CHECK(PoseHistory::ticksFor(config) == 2);
    CHECK(PoseHistory(config).capacityTicks() == 2);
}

TEST_CASE("PoseHistory: a ray at where the target was 150 ms ago hits it rewound and misses it live",
          "[server][pose_history]")
{
    for (const physics::BodyType type : {physics::BodyType::Kinematic, physics::BodyType::Dynamic})
    {
        MovingTarget scene({}, type);
        const std::uint64_t then = scene.now() - 9;
        const float x = scene.positions[then];
        REQUIRE(std::fabs(scene.positions[scene.now()] - x) == Approx(1.5f).margin(1e-3));
        const physics::RayCastInput ray = rayAt(x);

        CHECK_FALSE(hitsLive(scene.world, ray, scene.target));
        physics::RayQueryHit hit;
        const RewindResult result = scene.history.castRayAt(scene.world, {then, then, 0.0f}, ray, {}, hit);
        CHECK(result.hit);
        CHECK(result.status == RewindStatus::Exact);
        CHECK(hit.body == scene.target);
        CHECK(hit.fraction == Approx((-kShooterZ - kTargetRadius) / 40.0f).margin(1e-5));
        CHECK(hit.point.x == Approx(x).margin(1e-4));
        CHECK(hit.normal.z == Approx(-1.0f).margin(1e-4));

        // The same aim, judged against the picture of 50 ms ago (1 m further on): a miss.
        physics::RayQueryHit later;
        CHECK_FALSE(
            scene.history.castRayAt(scene.world, {scene.now() - 3, scene.now() - 3, 0.0f}, ray, {}, later)
                .hit);
    }
}

TEST_CASE("PoseHistory: a blended view hits where the client drew the target between two snapshots",
          "[server][pose_history]")
{
    MovingTarget scene;
    // Snapshots 6 ticks (1 m) apart; halfway is where the target was at the tick in between.
    const std::uint64_t from = scene.now() - 12;
    const std::uint64_t to = scene.now() - 6;
    const float mid = 0.5f * (scene.positions[from] + scene.positions[to]);
    physics::Transform pose;
    REQUIRE(scene.history.poseAt({from, to, 0.5f}, scene.target, pose).hit);
    CHECK(pose.p.x == Approx(mid).margin(1e-5));

    // 0.4 m ahead of the midpoint: inside the blended sphere, outside the one at `from`.
    const physics::RayCastInput ray = rayAt(mid + 0.4f);
    physics::RayQueryHit hit;
    CHECK(scene.history.castRayAt(scene.world, {from, to, 0.5f}, ray, {}, hit).hit);
    CHECK(hit.body == scene.target);
    const float depth = std::sqrt(kTargetRadius * kTargetRadius - 0.4f * 0.4f);
    CHECK(hit.fraction == Approx((-kShooterZ - depth) / 40.0f).margin(1e-5));
    CHECK_FALSE(scene.history.castRayAt(scene.world, {from, to, 0.0f}, ray, {}, hit).hit);
    CHECK(scene.history.castRayAt(scene.world, {from, to, 1.0f}, ray, {}, hit).hit);

    // A fractional tick: between consecutive ticks. Aimed 0.6 m ahead of the centre at T - 9, the target of
    // T - 9 is missed; three quarters of a tick later it is 0.125 m further on, 0.475 m from the aim: a hit.
    const std::uint64_t then = scene.now() - 9;
    const ViewTime quarter = ViewTime::atTick(static_cast<double>(then) + 0.75);
    CHECK(quarter.fromTick == then);
    CHECK(quarter.toTick == then + 1);
    CHECK(quarter.fraction == Approx(0.75f));
    const float ahead = scene.positions[then] + 0.6f;
    CHECK_FALSE(scene.history.castRayAt(scene.world, {then, then, 0.0f}, rayAt(ahead), {}, hit).hit);
    CHECK(scene.history.castRayAt(scene.world, quarter, rayAt(ahead), {}, hit).hit);
    const ViewTime whole = ViewTime::atTick(static_cast<double>(then));
    CHECK((whole.fromTick == then && whole.toTick == then && whole.fraction == 0.0f));
}

TEST_CASE("PoseHistory: static geometry in front of the rewound target blocks the ray",
          "[server][pose_history]")
{
    MovingTarget scene;
    physics::BodyDesc wall;
    wall.type = physics::BodyType::Static;
    wall.shape = physics::Shape::makeBox({20.0f, 2.0f, 0.1f});
    wall.transform.p = {0.0f, 0.0f, -5.0f};
    const BodyId wallId = scene.world.createBody(wall).id;
    REQUIRE(!wallId.isNull());

    const std::uint64_t then = scene.now() - 9;
    const physics::RayCastInput ray = rayAt(scene.positions[then]);
    physics::RayQueryHit hit;
    REQUIRE(scene.history.castRayAt(scene.world, {then, then, 0.0f}, ray, {}, hit).hit);
    CHECK(hit.body == wallId);
    CHECK(hit.fraction == Approx((-kShooterZ - 5.1f) / 40.0f).margin(1e-5));

    // Without static bodies in the filter, the target behind the wall.
    physics::QueryFilter movingOnly;
    movingOnly.bodyTypes = physics::kQueryKinematic | physics::kQueryDynamic;
    REQUIRE(scene.history.castRayAt(scene.world, {then, then, 0.0f}, ray, movingOnly, hit).hit);
    CHECK(hit.body == scene.target);
}

TEST_CASE("PoseHistory: filters apply as in the World's queries, with the body's current layer and group",
          "[server][pose_history]")
{
    MovingTarget scene;
    const std::uint64_t then = scene.now() - 9;
    const ViewTime view{then, then, 0.0f};
    const physics::RayCastInput ray = rayAt(scene.positions[then]);
    physics::RayQueryHit hit;

    physics::QueryFilter ignoreTarget;
    ignoreTarget.ignoreBody = scene.target;
    CHECK_FALSE(scene.history.castRayAt(scene.world, view, ray, ignoreTarget, hit).hit);

    physics::QueryFilter noKinematic;
    noKinematic.bodyTypes = physics::kQueryStatic | physics::kQueryDynamic;
    CHECK_FALSE(scene.history.castRayAt(scene.world, view, ray, noKinematic, hit).hit);

    // Moved to layer 3 and group 7 after the view was recorded: the live values count.
    REQUIRE(scene.world.setBodyFilter(scene.target, 3, 7) == physics::WorldStatus::Ok);
    physics::QueryFilter notLayer3;
    notLayer3.layerMask = ~(1u << 3);
    CHECK_FALSE(scene.history.castRayAt(scene.world, view, ray, notLayer3, hit).hit);
    physics::QueryFilter onlyLayer3;
    onlyLayer3.layerMask = 1u << 3;
    CHECK(scene.history.castRayAt(scene.world, view, ray, onlyLayer3, hit).hit);
    physics::QueryFilter ignoreGroup7;
    ignoreGroup7.ignoreGroup = 7;
    CHECK_FALSE(scene.history.castRayAt(scene.world, view, ray, ignoreGroup7, hit).hit);

    int asked = 0;
    const auto refuse = [&](BodyId id)
    {
        ++asked;
        return id != scene.target;
    };
    physics::QueryFilter byCallback;
    byCallback.accept = refuse;
    CHECK_FALSE(scene.history.castRayAt(scene.world, view, ray, byCallback, hit).hit);
    CHECK(asked >= 1);
}

TEST_CASE("PoseHistory: sensors are seen only with includeSensors", "[server][pose_history]")
{
    physics::World world(noGravity());
    physics::BodyDesc desc;
    desc.type = physics::BodyType::Kinematic;
    desc.shape = physics::Shape::makeSphere(1.0f);
    desc.isSensor = true;
    const BodyId sensor = world.createBody(desc).id;
    PoseHistory history;
    world.step(kDt);
    history.record(world, 1);
    physics::RayQueryHit hit;
    CHECK_FALSE(history.castRayAt(world, {1, 1, 0.0f}, rayAt(0.0f), {}, hit).hit);
    physics::QueryFilter withSensors;
    withSensors.includeSensors = true;
    CHECK(history.castRayAt(world, {1, 1, 0.0f}, rayAt(0.0f), withSensors, hit).hit);
    CHECK(hit.body == sensor);
}

TEST_CASE("PoseHistory: a body created after the view is not hit; one destroyed since is, with its old id",
          "[server][pose_history]")
{
    MovingTarget scene;
    const std::uint64_t then = scene.now() - 9;

    // A new still box, created now at the target's old place: not in the picture of T - 9.
    physics::BodyDesc late;
    late.type = physics::BodyType::Dynamic;
    late.shape = physics::Shape::makeBox({0.3f, 0.3f, 0.3f});
    late.transform.p = {scene.positions[then], 3.0f, 0.0f};
    const BodyId lateId = scene.world.createBody(late).id;
    REQUIRE(!lateId.isNull());
    scene.advance(1);
    const physics::RayCastInput atLate = rayAt(scene.positions[then], 3.0f);
    physics::RayQueryHit hit;
    CHECK_FALSE(scene.history.castRayAt(scene.world, {then, then, 0.0f}, atLate, {}, hit).hit);
    CHECK(scene.history.castRayAt(scene.world, {scene.now(), scene.now(), 0.0f}, atLate, {}, hit).hit);
    CHECK(hit.body == lateId);
    // Created between the view's two ticks: not drawn (nothing is interpolated across a creation).
    CHECK_FALSE(
        scene.history.castRayAt(scene.world, {scene.now() - 1, scene.now(), 0.9f}, atLate, {}, hit).hit);

    // The target destroyed, and its slot reused by another body: the past still holds the target.
    const BodyId old = scene.target;
    REQUIRE(scene.world.destroyBody(old) == physics::WorldStatus::Ok);
    physics::BodyDesc reuse;
    reuse.type = physics::BodyType::Kinematic;
    reuse.shape = physics::Shape::makeSphere(0.2f);
    reuse.transform.p = {100.0f, 0.0f, 0.0f};
    const BodyId newcomer = scene.world.createBody(reuse).id;
    scene.advance(2);
    CHECK(newcomer.index == old.index);
    CHECK(newcomer.generation != old.generation);
    REQUIRE(
        scene.history.castRayAt(scene.world, {then, then, 0.0f}, rayAt(scene.positions[then]), {}, hit).hit);
    CHECK(hit.body == old);
    CHECK_FALSE(scene.world.isValid(hit.body));
    // Seen across its destruction (in `from`, not in `to`): drawn at `from`'s pose, as the client does.
    const std::uint64_t lastSeen = scene.now() - 2;
    physics::Transform pose;
    REQUIRE(scene.history.poseAt({lastSeen, lastSeen + 1, 0.5f}, old, pose).hit);
    CHECK(pose.p.x == Approx(scene.positions[lastSeen]).margin(1e-5));
    CHECK_FALSE(scene.history.poseAt({scene.now(), scene.now(), 0.0f}, old, pose).hit);
}

TEST_CASE("PoseHistory: the ring wraps, keeps the last N ticks, and clamps and reports views outside them",
          "[server][pose_history]")
{
    server::PoseHistoryConfig config;
    config.maxRoundTripSeconds = 0.1;
    config.interpolationDelaySeconds = 0.05;
    config.snapshotIntervalSeconds = 0.0; // 0.15 s: 9 ticks, 10 held
    MovingTarget scene(config);
    const std::uint32_t n = scene.history.capacityTicks();
    REQUIRE(n == 10);
    scene.advance(3 * n + 2);
    CHECK(scene.history.sizeTicks() == n);
    CHECK(scene.history.newestTick() == scene.now());
    CHECK(scene.history.oldestTick() == scene.now() - n + 1);

    // Every tick held answers with its own pose.
    for (std::uint64_t tick = scene.history.oldestTick(); tick <= scene.now(); ++tick)
    {
        physics::Transform pose;
        const RewindResult result = scene.history.poseAt({tick, tick, 0.0f}, scene.target, pose);
        REQUIRE(result.hit);
        CHECK(result.status == RewindStatus::Exact);
        CHECK(pose.p.x == scene.positions[tick]);
    }

    // Older than held: the oldest tick, reported.
    const std::uint64_t oldest = scene.history.oldestTick();
    physics::RayQueryHit hit;
    RewindResult result = scene.history.castRayAt(scene.world, {oldest - 5, oldest - 4, 0.5f},
                                                  rayAt(scene.positions[oldest]), {}, hit);
    CHECK(result.status == RewindStatus::ClampedToOldest);
    CHECK(result.hit);
    CHECK((result.used.fromTick == oldest && result.used.toTick == oldest));
    // Only the older end out of range: blended from the oldest toward the end asked for.
    result = scene.history.castRayAt(scene.world, {oldest - 1, oldest + 2, 0.0f}, rayAt(0.0f), {}, hit);
    CHECK(result.status == RewindStatus::ClampedToOldest);
    CHECK((result.used.fromTick == oldest && result.used.toTick == oldest + 2));

    // Newer than the newest: the newest, reported (a client cannot have seen it).
    result = scene.history.castRayAt(scene.world, {scene.now() + 3, scene.now() + 4, 0.2f},
                                     rayAt(scene.positions[scene.now()]), {}, hit);
    CHECK(result.status == RewindStatus::ClampedToNewest);
    CHECK(result.hit);
    CHECK((result.used.fromTick == scene.now() && result.used.toTick == scene.now()));

    // Views that name no moment: nothing is queried.
    CHECK(scene.history.castRayAt(scene.world, {oldest + 3, oldest + 2, 0.0f}, rayAt(0.0f), {}, hit).status ==
          RewindStatus::InvalidView);
    CHECK(scene.history.castRayAt(scene.world, {oldest, oldest + 1, NAN}, rayAt(0.0f), {}, hit).status ==
          RewindStatus::InvalidView);
    CHECK(scene.history.castRayAt(scene.world, {oldest, oldest + 1, 1.5f}, rayAt(0.0f), {}, hit).status ==
          RewindStatus::InvalidView);
    CHECK_FALSE(scene.history.castRayAt(scene.world, {oldest, oldest + 1, -0.1f}, rayAt(0.0f), {}, hit).hit);

    // A gap in the ticks recorded starts afresh; so does clear().
    scene.history.record(scene.world, scene.now() + 5);
    CHECK(scene.history.sizeTicks() == 1);
    CHECK(scene.history.oldestTick() == scene.now() + 5);
    scene.history.clear();
    CHECK(scene.history.castRayAt(scene.world, {1, 1, 0.0f}, rayAt(0.0f), {}, hit).status ==
          RewindStatus::NoHistory);
    CHECK(std::string(server::rewindStatusName(RewindStatus::ClampedToNewest)) == "clamped_to_newest");
}

TEST_CASE("PoseHistory: orientations are blended the short way, as the client draws them",
          "[server][pose_history]")
{
    physics::World world(noGravity());
    PoseHistory history;
    // A thin board, 4 m long along its x axis, turned about y by 10 degrees a tick (set each tick).
    physics::BodyDesc desc;
    desc.type = physics::BodyType::Kinematic;
    desc.shape = physics::Shape::makeBox({2.0f, 0.1f, 0.1f});
    const BodyId board = world.createBody(desc).id;
    REQUIRE(!board.isNull());
    const Vec3 up{0.0f, 1.0f, 0.0f};
    const auto degrees = [](float d) { return d * physics::kPi / 180.0f; };
    for (std::uint64_t tick = 1; tick <= 12; ++tick)
    {
        physics::Quat q = physics::quatFromAxisAngle(up, degrees(10.0f * static_cast<float>(tick)));
        if (tick == 9)
        {
            q = {-q.x, -q.y, -q.z, -q.w}; // the same rotation, from the other hemisphere
        }
        REQUIRE(world.setTransform(board, {{}, q}) == physics::WorldStatus::Ok);
        world.step(kDt);
        history.record(world, tick);
    }
    // Ticks 3 (30 degrees) and 9 (90 degrees) halfway: 60 degrees. A vertical ray through the point 1.5 m
    // along the board's axis at 60 degrees hits the board only there (at 30 or 90 degrees it is 0.75 m off
    // the axis; at 45 or 75, 0.39 m).
    const Vec3 axis = physics::rotate(physics::quatFromAxisAngle(up, degrees(60.0f)), Vec3{1.0f, 0.0f, 0.0f});
    const Vec3 aim = axis * 1.5f;
    const physics::RayCastInput down{{aim.x, 10.0f, aim.z}, {0.0f, -20.0f, 0.0f}, 1.0f};
    physics::RayQueryHit hit;
    REQUIRE(history.castRayAt(world, {3, 9, 0.5f}, down, {}, hit).hit);
    CHECK(hit.body == board);
    CHECK(hit.fraction == Approx(9.9f / 20.0f).margin(1e-5));
    CHECK_FALSE(history.castRayAt(world, {3, 3, 0.0f}, down, {}, hit).hit);
    CHECK_FALSE(history.castRayAt(world, {9, 9, 0.0f}, down, {}, hit).hit);
    CHECK_FALSE(history.castRayAt(world, {3, 9, 0.25f}, down, {}, hit).hit);
    CHECK_FALSE(history.castRayAt(world, {3, 9, 0.75f}, down, {}, hit).hit);
    CHECK(history.castRayAt(world, {5, 7, 0.5f}, down, {}, hit).hit);

    physics::Transform pose;
    REQUIRE(history.poseAt({3, 9, 0.5f}, board, pose).hit);
    const Vec3 shownAxis = physics::rotate(pose.q, Vec3{1.0f, 0.0f, 0.0f});
    CHECK(shownAxis.x == Approx(axis.x).margin(1e-5));
    CHECK(shownAxis.z == Approx(axis.z).margin(1e-5));
}

TEST_CASE("PoseHistory: shape casts at a past tick", "[server][pose_history]")
{
    MovingTarget scene;
    const std::uint64_t then = scene.now() - 9;
    const float x = scene.positions[then];
    const ViewTime view{then, then, 0.0f};

    physics::ShapeCastInput ball;
    ball.shape = physics::Shape::makeSphere(0.2f);
    ball.start.p = {x + 0.3f, 0.0f, kShooterZ};
    ball.translation = {0.0f, 0.0f, 40.0f};
    physics::ShapeQueryHit hit;
    physics::ShapeQueryHit live;
    CHECK_FALSE(scene.world.castShapeClosest(ball, {}, live));
    REQUIRE(scene.history.castShapeAt(scene.world, view, ball, {}, hit).hit);
    CHECK(hit.body == scene.target);
    // Centres 0.3 m apart sideways, touching at 0.7 m: along z at sqrt(0.49 - 0.09).
    CHECK(hit.fraction == Approx((-kShooterZ - std::sqrt(0.4f)) / 40.0f).margin(1e-4));
    CHECK(hit.normal.z < 0.0f);
    CHECK_FALSE(hit.startPenetrating);

    physics::ShapeCastInput box = ball;
    box.shape = physics::Shape::makeBox({0.25f, 0.25f, 0.25f});
    box.start.p = {x, 0.0f, kShooterZ};
    REQUIRE(scene.history.castShapeAt(scene.world, view, box, {}, hit).hit);
    CHECK(hit.body == scene.target);
    CHECK(hit.fraction == Approx((-kShooterZ - 0.75f) / 40.0f).margin(1e-4));
    CHECK_FALSE(
        scene.history.castShapeAt(scene.world, {scene.now() - 3, scene.now() - 3, 0.0f}, box, {}, hit).hit);

    physics::ShapeCastInput capsule = ball;
    capsule.shape = physics::Shape::makeCapsule(0.5f, 0.1f);
    capsule.start.p = {x, 0.0f, kShooterZ};
    CHECK(scene.history.castShapeAt(scene.world, view, capsule, {}, hit).hit);
    // Invalid casts report nothing.
    physics::ShapeCastInput plane = ball;
    plane.shape = physics::Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
    CHECK_FALSE(scene.history.castShapeAt(scene.world, view, plane, {}, hit).hit);
}

TEST_CASE("PoseHistory: overlaps at a past tick", "[server][pose_history]")
{
    MovingTarget scene;
    physics::BodyDesc floor;
    floor.type = physics::BodyType::Static;
    floor.shape = physics::Shape::makeBox({50.0f, 0.5f, 50.0f});
    floor.transform.p = {0.0f, -1.2f, 0.0f};
    const BodyId floorId = scene.world.createBody(floor).id;
    const std::uint64_t then = scene.now() - 9;
    // A ball touching both the floor (top at -0.7) and where the target was.
    const physics::Shape ball = physics::Shape::makeSphere(0.3f);
    const physics::Transform at{{scene.positions[then] - 0.6f, -0.5f, 0.0f}, {}};
    std::vector<BodyId> seen;
    const auto collect = [&](BodyId id)
    {
        seen.push_back(id);
        return true;
    };
    RewindResult result = scene.history.overlapAt(scene.world, {then, then, 0.0f}, ball, at, {}, collect);
    CHECK(result.hit);
    REQUIRE(seen.size() == 2);
    CHECK(seen[0] == floorId);
    CHECK(seen[1] == scene.target);

    // Live, and at T - 3, only the floor.
    seen.clear();
    scene.world.overlapShape(ball, at, {}, collect);
    CHECK(seen.size() == 1);
    seen.clear();
    result =
        scene.history.overlapAt(scene.world, {scene.now() - 3, scene.now() - 3, 0.0f}, ball, at, {}, collect);
    CHECK(seen.size() == 1);

    // Stopping at the first body.
    seen.clear();
    const auto first = [&](BodyId id)
    {
        seen.push_back(id);
        return false;
    };
    scene.history.overlapAt(scene.world, {then, then, 0.0f}, ball, at, {}, first);
    CHECK(seen.size() == 1);
}

TEST_CASE("PoseHistory: a compound target is hit child by child", "[server][pose_history]")
{
    physics::World world(noGravity());
    physics::CompoundShape dumbbell;
    dumbbell.children.push_back({physics::Shape::makeSphere(0.4f), {{-1.0f, 0.0f, 0.0f}, {}}});
    dumbbell.children.push_back({physics::Shape::makeSphere(0.4f), {{1.0f, 0.0f, 0.0f}, {}}});
    const physics::AddShapeResult added = world.addCompound(dumbbell);
    REQUIRE(added.status == physics::WorldStatus::Ok);
    physics::BodyDesc desc;
    desc.type = physics::BodyType::Kinematic;
    desc.shape = physics::Shape::makeCatalogued(physics::ShapeType::Compound, added.index);
    desc.linearVelocity = {kSpeed, 0.0f, 0.0f};
    const BodyId body = world.createBody(desc).id;
    PoseHistory history;
    for (std::uint64_t tick = 1; tick <= 20; ++tick)
    {
        world.step(kDt);
        history.record(world, tick);
    }
    // At tick 5 the centre is at 5/6 m: the second child's centre at 11/6 m.
    physics::RayQueryHit hit;
    REQUIRE(history.castRayAt(world, {5, 5, 0.0f}, rayAt(11.0f / 6.0f), {}, hit).hit);
    CHECK(hit.body == body);
    CHECK(hit.subShape == 1);
    CHECK(hit.fraction == Approx((-kShooterZ - 0.4f) / 40.0f).margin(1e-4));
    CHECK_FALSE(history.castRayAt(world, {5, 5, 0.0f}, rayAt(5.0f / 6.0f), {}, hit).hit); // between the balls
}

TEST_CASE("PoseHistory: rewound queries agree with the World's own on the world as it was",
          "[server][pose_history]")
{
    std::mt19937 rng(20);
    const auto uniform = [&](float lo, float hi)
    { return std::uniform_real_distribution<float>(lo, hi)(rng); };
    physics::World world(noGravity());
    for (int i = 0; i < 60; ++i)
    {
        physics::BodyDesc desc;
        desc.type = i % 4 == 0 ? physics::BodyType::Static
                               : (i % 4 == 1 ? physics::BodyType::Kinematic : physics::BodyType::Dynamic);
        switch (i % 3)
        {
        case 0:
            desc.shape = physics::Shape::makeSphere(uniform(0.2f, 0.8f));
            break;
        case 1:
            desc.shape = physics::Shape::makeCapsule(uniform(0.2f, 0.8f), uniform(0.1f, 0.4f));
            break;
        default:
            desc.shape =
                physics::Shape::makeBox({uniform(0.1f, 0.8f), uniform(0.1f, 0.8f), uniform(0.1f, 0.8f)});
            break;
        }
        desc.transform = {
            {uniform(-8.0f, 8.0f), uniform(-8.0f, 8.0f), uniform(-8.0f, 8.0f)},
            physics::normalize(physics::Quat{uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), 1.0f})};
        desc.linearVelocity = {uniform(-3.0f, 3.0f), uniform(-3.0f, 3.0f), uniform(-3.0f, 3.0f)};
        desc.angularVelocity = {uniform(-2.0f, 2.0f), uniform(-2.0f, 2.0f), uniform(-2.0f, 2.0f)};
        desc.layer = static_cast<std::uint8_t>(i % 3);
        desc.group = static_cast<std::uint32_t>(i % 5);
        REQUIRE(!world.createBody(desc).id.isNull());
    }
    PoseHistory history;
    std::vector<std::uint8_t> saved;
    for (std::uint64_t tick = 1; tick <= 10; ++tick)
    {
        world.step(kDt);
        history.record(world, tick);
        if (tick == 5)
        {
            world.saveState(saved);
        }
    }
    // The world as it was at tick 5, restored whole: what a rewound query at tick 5 must see.
    physics::World past(noGravity());
    REQUIRE(past.restoreState(saved) == physics::RestoreStatus::Ok);
    std::vector<Vec3> centres;
    world.forEachBody([&](const physics::BodyState& body) { centres.push_back(body.transform.p); });
    const ViewTime now{10, 10, 0.0f};
    const ViewTime then{5, 5, 0.0f};
    int hits = 0;
    int movingHits = 0;
    for (int i = 0; i < 300; ++i)
    {
        // Every other ray aimed at a body's centre, from outside the scene.
        const Vec3 from{uniform(-12.0f, 12.0f), uniform(-12.0f, 12.0f), 12.0f};
        const Vec3 aim = centres[static_cast<std::size_t>(i) % centres.size()];
        const Vec3 to = i % 4 < 2 ? from + (aim - from) * 2.0f
                                  : Vec3{uniform(-12.0f, 12.0f), uniform(-12.0f, 12.0f), -12.0f};
        physics::QueryFilter filter;
        if (i % 2 == 1)
        {
            filter.layerMask = 1u << (i % 3);
            filter.ignoreGroup = static_cast<std::uint32_t>(i % 5);
            filter.bodyTypes = static_cast<std::uint8_t>(1 + i % 7);
        }
        const physics::RayCastInput ray{from, to - from, 1.0f};
        physics::RayQueryHit expected;
        physics::RayQueryHit got;
        const bool wantPast = past.castRayClosest(ray, filter, expected);
        REQUIRE(history.castRayAt(world, then, ray, filter, got).hit == wantPast);
        if (wantPast)
        {
            CHECK(got.body == expected.body);
            CHECK(got.fraction == expected.fraction);
        }
        const bool want = world.castRayClosest(ray, filter, expected);
        REQUIRE(history.castRayAt(world, now, ray, filter, got).hit == want);
        if (want)
        {
            ++hits;
            physics::BodyState state;
            movingHits += world.getBody(got.body, state) && state.type != physics::BodyType::Static ? 1 : 0;
            CHECK(got.body == expected.body);
            CHECK(got.fraction == expected.fraction);
            CHECK(got.subShape == expected.subShape);
        }
        physics::ShapeCastInput cast;
        cast.shape = physics::Shape::makeSphere(0.3f);
        cast.start.p = from;
        cast.translation = to - from;
        physics::ShapeQueryHit expectedCast;
        physics::ShapeQueryHit gotCast;
        const bool wantCast = world.castShapeClosest(cast, filter, expectedCast);
        REQUIRE(history.castShapeAt(world, now, cast, filter, gotCast).hit == wantCast);
        if (wantCast)
        {
            CHECK(gotCast.body == expectedCast.body);
            CHECK(gotCast.fraction == expectedCast.fraction);
        }
    }
    CHECK(hits > 100);
    CHECK(movingHits > 25);
}

TEST_CASE("PoseHistory: record() allocates nothing once warm, nor do the queries", "[server][pose_history]")
{
    MovingTarget scene; // 30 ticks: the default ring (about 24 ticks) has gone round
    REQUIRE(scene.history.sizeTicks() == scene.history.capacityTicks());
    for (int i = 0; i < 10; ++i)
    {
        physics::BodyDesc desc;
        desc.shape = physics::Shape::makeBox({0.2f, 0.2f, 0.2f});
        desc.transform.p = {static_cast<float>(i), 5.0f, 0.0f};
        REQUIRE(!scene.world.createBody(desc).id.isNull());
    }
    scene.advance(scene.history.capacityTicks()); // every frame has held the 11 bodies
    std::int64_t allocations = 0;
    for (int i = 0; i < 100; ++i)
    {
        scene.world.step(kDt);
        test::AllocationCounter counter;
        scene.history.record(scene.world, scene.world.stepCount());
        allocations += counter.stop();
        physics::BodyState state;
        REQUIRE(scene.world.getBody(scene.target, state));
        scene.positions.push_back(state.transform.p.x);
    }
    CHECK(allocations == 0);

    const std::uint64_t then = scene.now() - 9;
    physics::RayQueryHit hit;
    physics::ShapeQueryHit shapeHit;
    physics::ShapeCastInput ball;
    ball.shape = physics::Shape::makeSphere(0.2f);
    ball.start.p = {scene.positions[then], 0.0f, kShooterZ};
    ball.translation = {0.0f, 0.0f, 40.0f};
    test::AllocationCounter counter;
    const physics::RayCastInput ray = rayAt(scene.positions[then]);
    const bool rayHit = scene.history.castRayAt(scene.world, {then, then + 1, 0.5f}, ray, {}, hit).hit;
    const bool castHit =
        scene.history.castShapeAt(scene.world, {then, then + 1, 0.5f}, ball, {}, shapeHit).hit;
    CHECK(counter.stop() == 0);
    CHECK(rayHit);
    CHECK(castHit);
}

TEST_CASE("PoseHistory: several threads query one history at once", "[server][pose_history]")
{
    MovingTarget scene;
    const std::uint64_t newest = scene.now();
    std::vector<std::uint64_t> views;
    for (std::uint64_t back = 0; back < 12; ++back)
    {
        views.push_back(newest - back);
    }
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
    {
        threads.emplace_back(
            [&, t]
            {
                for (int round = 0; round < 200; ++round)
                {
                    const std::uint64_t view = views[static_cast<std::size_t>(round + t) % views.size()];
                    physics::RayQueryHit hit;
                    const bool aimed =
                        scene.history
                            .castRayAt(scene.world, {view, view, 0.0f}, rayAt(scene.positions[view]), {}, hit)
                            .hit &&
                        hit.body == scene.target;
                    const bool offAim = scene.history
                                            .castRayAt(scene.world, {view, view, 0.0f},
                                                       rayAt(scene.positions[view] + 0.8f), {}, hit)
                                            .hit;
                    if (!aimed || offAim)
                    {
                        ++wrong;
                    }
                }
            });
    }
    for (std::thread& thread : threads)
    {
        thread.join();
    }
    CHECK(wrong == 0);
}

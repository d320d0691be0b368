// Issue 20 (must-have 5): own-body prediction, end to end in one process. A real Server runs the built-in
// "stack10" scene (the client's player sphere spawns 6 m from the stack, and is driven away from it, so the
// sphere meets only the ground: what the local World can predict exactly). The Client talks to it over the
// seeded NetworkSimulator; a Predictor drives the sphere with inputs that change every second (velocity
// turns, pushes, a jump, a circle), and the game's frame (60 Hz) is sampled.
//
// The visible correction of a frame, precisely. Let D(f) be the drawn position of the owned body at frame
// f, R(f) the raw prediction drawn without smoothing, and J(f) the jump that reconciliations during frame
// f gave R (the new prediction minus the old one, both at the instant of the previous frame). The motion
// predicted without correction is R(f) - R(f-1) - J(f): how the (corrected) prediction itself moves between
// the two frames. The visible correction is what the drawn pose does beyond that:
//     visible(f) = | (D(f) - D(f-1)) - (R(f) - R(f-1) - J(f)) |
// With the smoothing it is the spring's own motion in one frame; without it (time constant 0) it is the
// whole jump |J(f)|. The same for orientations with rotation angles. Run with -s to see the figures
// ([figures] tests print them with WARN).
#include "polytope/client/prediction.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/server/server.h"
#include "support/allocation_counter.h"
#include "support/geometry_scene.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>

using namespace polytope;

namespace
{

const protocol::Address kClientAddress = protocol::Address::ipv4(10, 0, 0, 2, 5000);
const server::ConnectCookies::Key kCookieKey{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
                                             9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
constexpr double kPi = 3.14159265358979323846;
constexpr int kStepsPerSecond = 240; // the network and the peers; the game's frames every 4th step (60 Hz)
constexpr double kDriveFrom = 3.0;   // the sphere has spawned (3 m up) and landed by then
constexpr double kMeasureFrom = 4.0; // and the first corrections of its spawn are over
constexpr double kWarmFrom = 8.0;    // every buffer has grown to its size (2 s of history and more)

struct Scenario
{
    protocol::NetworkConditions network;
    std::uint64_t seed = 1;
    double seconds = 24.0; // simulated seconds from the start (20 measured)
    client::PredictionConfig prediction;
    /// At this time (seconds; < 0: never) the server teleports the owned body 10 m along x.
    double teleportAt = -1.0;
    /// From 12 to 16 s of driving the sphere charges the stack of cubes at 4 m/s instead, and presses against
    /// it: contacts with bodies that are dynamic on the server (10 t of cubes: they do not move much) and
    /// kinematic in the local World, mispredicted by millimetres and corrected.
    bool chargeTheStack = false;
    /// Once a second, an input for a body the client does not own (the first such in the catalogue): the
    /// server refuses it, the Predictor ignores it.
    bool strayInputs = false;
};

struct Figures
{
    std::uint64_t frames = 0;
    double largestVisibleMeters = 0.0; ///< of visible(f), computed here from D, R and J
    double largestVisibleRadians = 0.0;
    double largestReportedMeters = 0.0;      ///< the Predictor's own PredictedBody::visibleCorrectionMeters
    double largestMismatch = 0.0;            ///< |visible(f) - reported(f)|
    double largestRawErrorMeters = 0.0;      ///< snapshot vs prediction at its tick, after kMeasureFrom
    double largestDrawnToServerMeters = 0.0; ///< after a teleport: see teleportSettledMeters
    double teleportSettledMeters = std::numeric_limits<double>::infinity(); ///< drawn vs server pose 0.3 s on
    std::uint64_t correctionsMeasured = 0; ///< corrections after kMeasureFrom
    /// Metres from the stack's axis to the drawn sphere's centre, at the closest: 0.9 is touching (cubes of
    /// half extent 0.5, a sphere of radius 0.4).
    double closestToStack = std::numeric_limits<double>::infinity();
    /// Heap allocations in Predictor::addSnapshot and update after kWarmFrom (bodies do not change then).
    std::int64_t allocations = 0;
    std::uint64_t inputsLate = 0;
    std::uint64_t inputsApplied = 0;
    std::uint64_t inputsNotOwned = 0; ///< refused by the server
    std::uint64_t strayInputs = 0;    ///< sent for bodies not owned
    client::PredictionStats stats;
    double leadSeconds = 0.0;
    double rttSeconds = 0.0;
};

/// The driving pattern at `s` seconds of driving: one kind of input per second, in an 8 s cycle; or, from 12
/// to 16 s when charging, straight at the stack (at the origin) from `position`.
bool drive(double s, double previous, bool charge, const physics::Vec3& position,
           protocol::InputCommand& input)
{
    if (charge && s >= 12.0 && s < 16.0)
    {
        const physics::Vec3 to =
            physics::normalizeOr(physics::Vec3{-position.x, 0.0f, -position.z}, {1.0f, 0.0f, 0.0f});
        input.kind = protocol::wire::InputKind::TargetVelocity;
        input.vector = {4.0f * to.x, 0.0f, 4.0f * to.z};
        return true;
    }
    const int segment = static_cast<int>(std::floor(s)) % 8;
    const double within = s - std::floor(s);
    switch (segment)
    {
    case 0:
    case 1:
    case 2:
    case 3: // a 3 m square at 3 m/s: a sharp turn every second
    {
        const double heading = 0.5 * kPi * segment;
        input.kind = protocol::wire::InputKind::TargetVelocity;
        input.vector = {static_cast<float>(3.0 * std::cos(heading)), 0.0f,
                        static_cast<float>(3.0 * std::sin(heading))};
        return true;
    }
    case 4: // pushed along +x
        input.kind = protocol::wire::InputKind::Force;
        input.vector = {400.0f, 0.0f, 150.0f};
        return true;
    case 5: // and braked
        input.kind = protocol::wire::InputKind::Force;
        input.vector = {-400.0f, 0.0f, -150.0f};
        return true;
    case 6: // a jump at the start of the second, with a spin
        if (std::floor(previous) == std::floor(s))
        {
            return false;
        }
        input.kind = protocol::wire::InputKind::Impulse;
        input.vector = {0.0f, 500.0f, 100.0f};
        return true;
    default: // a circle at 2 m/s
    {
        const double heading = 2.0 * kPi * within;
        input.kind = protocol::wire::InputKind::TargetVelocity;
        input.vector = {static_cast<float>(2.0 * std::cos(heading)), 0.0f,
                        static_cast<float>(2.0 * std::sin(heading))};
        return true;
    }
    }
}

double length3(const physics::Vec3& v)
{
    return std::sqrt(static_cast<double>(v.x) * v.x + static_cast<double>(v.y) * v.y +
                     static_cast<double>(v.z) * v.z);
}

double angleOf(const physics::Quat& q)
{
    return 2.0 * std::atan2(std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z), std::fabs(q.w));
}

Figures run(const Scenario& scenario)
{
    test::InProcessNetwork net;
    net.simulate(scenario.network, scenario.seed);
    server::RoomConfig config;
    config.scene = "stack10";
    const auto server = test::makeServer(net, config, kCookieKey);
    client::Client& c = net.addClient(kClientAddress);
    client::Predictor predictor(scenario.prediction);
    Figures f;
    c.connect(0.0);

    std::uint32_t owned = 0;
    std::uint32_t ownedGeneration = 0;
    bool havePrevious = false;
    physics::Transform previousDrawn;
    physics::Transform previousRaw;
    std::uint64_t compared = 0;
    double lastFrame = 0.0;
    bool teleported = false;
    std::uint64_t correctionsBefore = 0;
    for (int step = 1;; ++step)
    {
        const double now = static_cast<double>(step) / kStepsPerSecond;
        if (now > scenario.seconds)
        {
            break;
        }
        net.frameAt(now);
        if (scenario.teleportAt >= 0.0 && !teleported && now >= scenario.teleportAt && owned != 0)
        {
            physics::World& world = server->room(0).world();
            physics::BodyState state;
            REQUIRE(world.getBody({owned, ownedGeneration}, state));
            state.transform.p.x += 10.0f;
            REQUIRE(world.setTransform({owned, ownedGeneration}, state.transform) ==
                    physics::WorldStatus::Ok);
            teleported = true;
        }
        if (step % 4 != 0)
        {
            continue;
        }
        client::ReceivedSnapshot s;
        while (c.popSnapshot(s))
        {
            test::AllocationCounter counter;
            predictor.addSnapshot(c, s);
            f.allocations += now >= kWarmFrom ? counter.stop() : 0;
        }
        if (owned == 0 && !c.ownedBodies().empty())
        {
            owned = c.ownedBodies().front().id;
            ownedGeneration = c.ownedBodies().front().generation;
        }
        protocol::InputCommand input;
        input.bodyId = owned;
        input.bodyGeneration = ownedGeneration;
        const client::PredictedBody* drawn = predictor.body(owned);
        if (drawn && predictor.isReady() && now >= kDriveFrom &&
            drive(now - kDriveFrom, lastFrame - kDriveFrom, scenario.chargeTheStack, drawn->drawn.p, input))
        {
            CHECK(predictor.sendInput(c, input) != 0);
        }
        if (scenario.strayInputs && owned != 0 && predictor.isReady() && step % kStepsPerSecond == 0)
        {
            for (const auto& [id, entry] : c.catalogue())
            {
                if (!entry.owned && !entry.removed)
                {
                    protocol::InputCommand stray;
                    stray.bodyId = id;
                    stray.bodyGeneration = entry.generation;
                    stray.kind = protocol::wire::InputKind::Impulse;
                    stray.vector = {0.0f, 1000.0f, 0.0f};
                    CHECK(predictor.sendInput(c, stray) != 0);
                    ++f.strayInputs;
                    break;
                }
            }
        }
        lastFrame = now;
        {
            test::AllocationCounter counter;
            predictor.update(c, now);
            f.allocations += now >= kWarmFrom ? counter.stop() : 0;
        }
        const client::PredictedBody* b = predictor.body(owned);
        if (!b)
        {
            havePrevious = false;
            continue;
        }
        if (predictor.stats().snapshotsCompared != compared)
        {
            compared = predictor.stats().snapshotsCompared;
            if (now >= kMeasureFrom)
            {
                f.largestRawErrorMeters =
                    std::max(f.largestRawErrorMeters, double(predictor.stats().lastRawErrorMeters));
            }
        }
        if (now < kMeasureFrom)
        {
            correctionsBefore = predictor.stats().corrections;
        }
        if (havePrevious && now >= kMeasureFrom)
        {
            // visible(f) = | (D(f) - D(f-1)) - (R(f) - R(f-1) - J(f)) |, see the file comment.
            const physics::Vec3 visible =
                (b->drawn.p - previousDrawn.p) - ((b->raw.p - previousRaw.p) - b->rawJump);
            const double meters = length3(visible);
            // Orientation: the raw motion without correction is M = rawTurn * conj(jump); visible is the
            // drawn rotation over the frame beyond it, drawnTurn * conj(M).
            const physics::Quat drawnTurn = b->drawn.q * physics::conjugate(previousDrawn.q);
            const physics::Quat rawTurn = b->raw.q * physics::conjugate(previousRaw.q);
            const physics::Vec3 j = b->rawJumpRotation;
            const float ja = physics::length(j);
            const physics::Quat jump = ja > 1e-9f ? physics::quatFromAxisAngle(j / ja, ja) : physics::Quat{};
            const double radians = angleOf(drawnTurn * jump * physics::conjugate(rawTurn));
            ++f.frames;
            f.largestVisibleMeters = std::max(f.largestVisibleMeters, meters);
            f.largestVisibleRadians = std::max(f.largestVisibleRadians, radians);
            f.largestReportedMeters = std::max(f.largestReportedMeters, double(b->visibleCorrectionMeters));
            f.largestMismatch = std::max(f.largestMismatch, std::fabs(meters - b->visibleCorrectionMeters));
        }
        if (teleported && now >= scenario.teleportAt + 0.3 && !std::isfinite(f.teleportSettledMeters))
        {
            // Where the server has the body at the tick the prediction shows is not known; its newest pose
            // plus the lead is close enough for a 10 m jump (the body moves at a few m/s).
            physics::BodyState state;
            REQUIRE(server->room(0).world().getBody({owned, ownedGeneration}, state));
            f.teleportSettledMeters = length3(b->drawn.p - state.transform.p);
        }
        f.closestToStack = std::min(f.closestToStack, std::hypot(double(b->drawn.p.x), double(b->drawn.p.z)));
        previousDrawn = b->drawn;
        previousRaw = b->raw;
        havePrevious = true;
    }
    REQUIRE(c.isConnected());
    REQUIRE(owned != 0);
    f.inputsLate = server->room(0).metrics().inputsLate;
    f.inputsApplied = server->room(0).metrics().inputsApplied;
    f.inputsNotOwned = server->room(0).metrics().inputsNotOwned;
    f.stats = predictor.stats();
    f.correctionsMeasured = f.stats.corrections - correctionsBefore;
    f.leadSeconds = predictor.leadSeconds();
    f.rttSeconds = c.rttSeconds();
    return f;
}

void print(const char* name, const Figures& f)
{
    WARN(name << ": " << f.frames << " frames measured; largest visible correction "
              << f.largestVisibleMeters * 1e3 << " mm and " << f.largestVisibleRadians * 180.0 / kPi
              << " deg per frame (predictor's own " << f.largestReportedMeters * 1e3
              << " mm); largest raw error at reconciliation " << f.largestRawErrorMeters * 1e3
              << " mm (whole run " << f.stats.largestRawErrorMeters * 1e3 << " mm, "
              << f.stats.largestRawErrorRadians * 180.0 / kPi << " deg); snapshots compared "
              << f.stats.snapshotsCompared << ", corrections " << f.stats.corrections << ", snaps "
              << f.stats.snaps << ", outside history " << f.stats.snapshotsOutsideHistory << "; inputs sent "
              << f.stats.inputsSent << ", applied by the server " << f.inputsApplied << ", late "
              << f.inputsLate << "; ticks predicted " << f.stats.ticksPredicted << ", re-simulated "
              << f.stats.ticksResimulated << "; lead " << f.leadSeconds * 1e3 << " ms, RTT "
              << f.rttSeconds * 1e3 << " ms; allocations when warm " << f.allocations
              << "; closest to the stack " << f.closestToStack << " m");
}

/// 50 ms one way on average (45 ms plus a uniform [0, 10) ms: about 100 ms RTT), 5% loss each way.
protocol::NetworkConditions lossyNetwork()
{
    protocol::NetworkConditions n;
    n.latencySeconds = 0.045;
    n.jitterSeconds = 0.01;
    n.lossProbability = 0.05;
    return n;
}

} // namespace

TEST_CASE("prediction: no visible snaps at 5% loss and 100 ms RTT", "[client][prediction][figures]")
{
    for (const std::uint64_t seed : {1u, 2026u, 3u, 4u, 5u, 6u, 7u, 8u})
    {
        DYNAMIC_SECTION("seed " << seed)
        {
            Scenario scenario;
            scenario.network = lossyNetwork();
            scenario.seed = seed;
            scenario.chargeTheStack = true;
            const Figures smooth = run(scenario);
            print("smoothed", smooth);
            // The same run with the smoothing removed: every correction shows whole in one frame.
            scenario.prediction.smoothingTimeConstantSeconds = 0.0;
            const Figures raw = run(scenario);
            print("without smoothing", raw);

            CHECK(smooth.frames > 1000);
            // The bound: the drawn pose never moves more than 3 mm or 1 degree in a frame beyond the
            // prediction's own motion. A 0.8 m sphere at 3 m/s covers 50 mm a frame; a 3 mm step in that is
            // below what the eye picks out, while the unsmoothed corrections of this run show as a stutter.
            // Measured over seeds 1-8 and 2026: 1.65-2.07 mm and 0.22-0.41 degrees smoothed; 5.8-12.5 mm and
            // 1.07-2.90 degrees without.
            CHECK(smooth.largestVisibleMeters < 0.003);
            CHECK(smooth.largestVisibleRadians < 1.0 * kPi / 180.0);
            CHECK(smooth.largestMismatch < 1e-4);        // the figure computed here is the Predictor's own
            CHECK(smooth.closestToStack < 0.95);         // the sphere did press against the stack
            CHECK(smooth.largestRawErrorMeters > 0.003); // so there were corrections to smooth
            CHECK(smooth.stats.snaps == 1);              // the spawn's first comparison only
            // Inputs chosen for the server's future arrive in time (one lost ClientInput is covered by the
            // next).
            CHECK(smooth.inputsLate * 100 <= smooth.stats.inputsSent);
            // Removing the smoothing shows: the bound fails.
            CHECK(raw.largestVisibleMeters > 0.003);
            CHECK(raw.largestVisibleRadians > 2.0 * smooth.largestVisibleRadians);
        }
    }
}

TEST_CASE("prediction: without loss the local simulation matches the server", "[client][prediction][figures]")
{
    Scenario scenario;
    scenario.network.latencySeconds = 0.05;
    scenario.strayInputs = true;
    const Figures f = run(scenario);
    print("lossless", f);
    CHECK(f.strayInputs > 10);
    CHECK(f.inputsNotOwned <= f.strayInputs); // the newest may still be on its way
    CHECK(f.inputsNotOwned + 1 >= f.strayInputs);
    CHECK(f.inputsLate == 0);
    // Every input is applied, but for those still on their way or queued for their tick when the run ends
    // (sent in its last 200 ms: 12 frames).
    CHECK(f.inputsApplied <= f.stats.inputsSent - f.strayInputs);
    CHECK(f.inputsApplied + 12 >= f.stats.inputsSent - f.strayInputs);
    // Within the snapshot's quantization (1/1024 m steps: half a step per axis, 0.85 mm at most), so once the
    // spawn's fall is over nothing is corrected and nothing moves the drawn pose.
    CHECK(f.largestRawErrorMeters < 0.001);
    CHECK(f.correctionsMeasured == 0);
    CHECK(f.largestVisibleMeters < 1e-6);
    // Warm, a frame allocates nothing (a correction does: World::restoreState stages the state it reads).
    CHECK(f.allocations == 0);
}

TEST_CASE("prediction: a teleport snaps", "[client][prediction]")
{
    Scenario scenario;
    scenario.network.latencySeconds = 0.05;
    scenario.seconds = 12.0;
    scenario.teleportAt = 8.0;
    const Figures f = run(scenario);
    CHECK(f.stats.snaps == 2); // the spawn, then the teleport
    CHECK(f.teleportSettledMeters < 1.0);
}

TEST_CASE("prediction: bad input is refused, never a crash", "[client][prediction]")
{
    client::Client c({}, [](std::span<const std::uint8_t>) {});
    client::Predictor predictor;
    protocol::InputCommand input;
    input.bodyId = 1;
    CHECK(predictor.sendInput(c, input) == 0); // no clock yet
    predictor.update(c, std::numeric_limits<double>::quiet_NaN());
    predictor.update(c, 1.0);

    client::ReceivedSnapshot s;
    s.tick = 10;
    s.serverTime = 10.0 / 60.0;
    s.receiveTime = 0.3;
    client::SnapshotBody nan;
    nan.id = 3;
    nan.position = {std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f};
    client::SnapshotBody zeroSphere; // a sphere of radius 0: no shape
    zeroSphere.id = 4;
    client::SnapshotBody box;
    box.id = 5;
    box.shape = protocol::wire::ShapeKind::Box;
    box.extent = {1.0f, 1.0f, 1.0f};
    s.bodies = {nan, zeroSphere, box};
    predictor.addSnapshot(c, s);
    CHECK(predictor.isReady());
    CHECK(predictor.stats().bodiesWithoutShape == 1);
    CHECK(predictor.world().bodyCount() == 1);
    CHECK(predictor.bodies().empty()); // nothing owned: the client is not connected
    input.vector = {std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f};
    CHECK(predictor.sendInput(c, input) == 0); // refused by the client (not connected, and not finite)
    predictor.update(c, 0.35);
    s.tick = 5; // older than the one taken: ignored
    predictor.addSnapshot(c, s);
    predictor.update(c, 0.4);
    CHECK(predictor.stats().inputsRefused == 2);
}

TEST_CASE("prediction: hulls, meshes and heightfields join the local World once their geometry arrives",
          "[client][prediction]")
{
    test::InProcessNetwork net;
    server::RoomConfig config;
    config.scene = "geometry";
    config.buildScene = test::buildGeometryScene;
    const auto server = test::makeServer(net, config, kCookieKey);
    client::Client& c = net.addClient(kClientAddress);
    client::Predictor predictor;
    c.connect(0.0);
    net.runUntil(6.0,
                 [&]
                 {
                     client::ReceivedSnapshot s;
                     while (c.popSnapshot(s))
                     {
                         predictor.addSnapshot(c, s);
                     }
                     predictor.update(c, net.now());
                 });
    REQUIRE(c.isConnected());
    // Every body but the compounds (not predicted) is in the local World, with the same kind of shape.
    std::map<physics::ShapeType, std::uint32_t> onServer;
    std::map<physics::ShapeType, std::uint32_t> local;
    server->room(0).world().forEachBody([&](const physics::BodyState& b) { ++onServer[b.shape.type]; });
    predictor.world().forEachBody([&](const physics::BodyState& b) { ++local[b.shape.type]; });
    CHECK(onServer[physics::ShapeType::Hull] > 0);
    CHECK(onServer[physics::ShapeType::Mesh] > 0);
    CHECK(onServer[physics::ShapeType::HeightField] > 0);
    CHECK(onServer[physics::ShapeType::Compound] > 0);
    for (const auto type : {physics::ShapeType::Sphere, physics::ShapeType::Capsule, physics::ShapeType::Box,
                            physics::ShapeType::Hull, physics::ShapeType::Plane, physics::ShapeType::Mesh,
                            physics::ShapeType::HeightField})
    {
        CHECK(local[type] == onServer[type]);
    }
    CHECK(local[physics::ShapeType::Compound] == 0);
    // The hulls' bodies share their hulls in the local catalogue too.
    CHECK(predictor.world().hulls().size() <= server->room(0).world().hulls().size());
}

// The snapshot interpolation buffer on synthetic snapshots: exact answers, then continuity under loss.
#include "polytope/client/interpolation.h"
#include "polytope/protocol/network_simulator.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace polytope;
using client::InterpolationBuffer;
using client::ReceivedSnapshot;
using client::SampleKind;
using client::SnapshotBody;

namespace
{

constexpr double kPi = 3.14159265358979323846;

SnapshotBody makeBody(std::uint32_t id, std::array<float, 3> position,
                      std::array<float, 4> orientation = {0, 0, 0, 1}, std::uint32_t generation = 1)
{
    SnapshotBody b;
    b.id = id;
    b.generation = generation;
    b.shape = protocol::wire::ShapeKind::Box;
    b.extent = {0.5f, 0.5f, 0.5f};
    b.position = position;
    b.orientation = orientation;
    return b;
}

ReceivedSnapshot makeSnapshot(std::uint64_t tick, double serverTime, double receiveTime,
                              std::vector<SnapshotBody> bodies)
{
    ReceivedSnapshot s;
    s.tick = tick;
    s.serverTime = serverTime;
    s.receiveTime = receiveTime;
    s.bodies = std::move(bodies);
    return s;
}

std::array<float, 4> aboutAxis(std::array<double, 3> axis, double angle)
{
    const double s = std::sin(angle / 2);
    return {static_cast<float>(axis[0] * s), static_cast<float>(axis[1] * s), static_cast<float>(axis[2] * s),
            static_cast<float>(std::cos(angle / 2))};
}

/// |dot| of two unit quaternions: 1 when they are the same rotation.
double sameRotation(const std::array<float, 4>& a, const std::array<float, 4>& b)
{
    return std::abs(double(a[0]) * b[0] + double(a[1]) * b[1] + double(a[2]) * b[2] + double(a[3]) * b[3]);
}

client::InterpolationConfig config50ms()
{
    client::InterpolationConfig c;
    c.snapshotIntervalSeconds = 0.05;
    return c;
}

} // namespace

TEST_CASE("interpolation: the midpoint between two snapshots is exact", "[client][interpolation]")
{
    InterpolationBuffer buffer(config50ms());
    // Both took 100 ms to arrive: offset 0.1, jitter 0, target delay 3 * 0.05 = 0.15.
    buffer.add(makeSnapshot(3, 0.0, 0.1, {makeBody(1, {0, 0, 0}), makeBody(2, {4, 2, -2})}));
    buffer.add(makeSnapshot(6, 0.05, 0.15, {makeBody(1, {1, 2, 3}), makeBody(2, {4, 2, -2})}));
    CHECK(buffer.stats().offsetSeconds == Approx(0.1));
    CHECK(buffer.stats().jitterSeconds == Approx(0.0).margin(1e-12));
    CHECK(buffer.stats().targetDelaySeconds == Approx(0.15));

    std::vector<SnapshotBody> out;
    const auto r = buffer.sample(0.1 + 0.15 + 0.025, out); // render time 0.025: halfway
    REQUIRE(r.kind == SampleKind::Interpolated);
    CHECK(r.renderTime == Approx(0.025).margin(1e-12));
    CHECK(r.delaySeconds == Approx(0.15).margin(1e-12));
    CHECK(r.fromTick == 3);
    CHECK(r.toTick == 6);
    CHECK(r.alpha == Approx(0.5).margin(1e-9));
    REQUIRE(out.size() == 2);
    CHECK(out[0].position[0] == Approx(0.5f).margin(1e-6));
    CHECK(out[0].position[1] == Approx(1.0f).margin(1e-6));
    CHECK(out[0].position[2] == Approx(1.5f).margin(1e-6));
    CHECK(out[1].position == std::array<float, 3>{4, 2, -2});
    CHECK(buffer.stats().framesInterpolated == 1);
}

TEST_CASE("interpolation: orientations take the short way", "[client][interpolation]")
{
    InterpolationBuffer buffer(config50ms());
    const auto a = aboutAxis({0, 0, 1}, 0.0);
    auto b = aboutAxis({0, 0, 1}, 20.0 * kPi / 180.0);
    for (float& c : b)
    {
        c = -c; // the same rotation, written the long way round
    }
    buffer.add(makeSnapshot(1, 0.0, 0.1, {makeBody(1, {0, 0, 0}, a)}));
    buffer.add(makeSnapshot(2, 0.05, 0.15, {makeBody(1, {0, 0, 0}, b)}));
    std::vector<SnapshotBody> out;
    REQUIRE(buffer.sample(0.275, out).kind == SampleKind::Interpolated);
    REQUIRE(out.size() == 1);
    CHECK(sameRotation(out[0].orientation, aboutAxis({0, 0, 1}, 10.0 * kPi / 180.0)) > 1.0 - 1e-6);

    // The helpers alone, at both ends and between.
    CHECK(sameRotation(client::nlerpOrientation(a, b, 0.0), a) > 0.999999);
    CHECK(sameRotation(client::nlerpOrientation(a, b, 1.0), b) > 0.999999);
    CHECK(sameRotation(client::extrapolateOrientation(a, b, 1.0), aboutAxis({0, 0, 1}, 40.0 * kPi / 180.0)) >
          0.999999);
}

TEST_CASE("interpolation: extrapolation follows the last velocity for at most 250 ms, then holds",
          "[client][interpolation]")
{
    InterpolationBuffer buffer(config50ms());
    // 20 m/s along x and 10 degrees per snapshot about y.
    const double step = 10.0 * kPi / 180.0;
    buffer.add(makeSnapshot(1, 0.0, 0.1, {makeBody(1, {0, 0, 0}, aboutAxis({0, 1, 0}, 0.0))}));
    buffer.add(makeSnapshot(2, 0.05, 0.15, {makeBody(1, {1, 0, 0}, aboutAxis({0, 1, 0}, step))}));
    std::vector<SnapshotBody> out;

    // target(t) = t - 0.1 - 0.15: render time 0.15 is 100 ms past the newest snapshot.
    auto r = buffer.sample(0.4, out);
    REQUIRE(r.kind == SampleKind::Extrapolated);
    CHECK(r.alpha == Approx(0.1));
    REQUIRE(out.size() == 1);
    CHECK(out[0].position[0] == Approx(3.0f).margin(1e-5));
    CHECK(sameRotation(out[0].orientation, aboutAxis({0, 1, 0}, 3 * step)) > 1.0 - 1e-6);

    // 240 ms past: still extrapolated.
    r = buffer.sample(0.54, out);
    REQUIRE(r.kind == SampleKind::Extrapolated);
    CHECK(out[0].position[0] == Approx(1.0f + 20.0f * 0.24f).margin(1e-4));

    // 400 ms past: held where 250 ms of extrapolation left it.
    r = buffer.sample(0.7, out);
    CHECK(r.kind == SampleKind::Held);
    CHECK(r.renderTime == Approx(0.45));
    CHECK(out[0].position[0] == Approx(6.0f).margin(1e-4));
    CHECK(sameRotation(out[0].orientation, aboutAxis({0, 1, 0}, 6 * step)) > 1.0 - 1e-6);
    CHECK(buffer.stats().framesExtrapolated == 2);
    CHECK(buffer.stats().framesHeld == 1);
}

TEST_CASE("interpolation: bodies appearing and disappearing are not interpolated across",
          "[client][interpolation]")
{
    InterpolationBuffer buffer(config50ms());
    buffer.add(makeSnapshot(
        1, 0.0, 0.1,
        {makeBody(1, {0, 0, 0}), makeBody(2, {5, 0, 0}), makeBody(4, {7, 0, 0}, {0, 0, 0, 1}, 1)}));
    // Body 2 destroyed, body 3 created, body 4's slot reused by a new body (generation 2) far away.
    buffer.add(makeSnapshot(
        2, 0.05, 0.15,
        {makeBody(1, {1, 0, 0}), makeBody(3, {9, 0, 0}), makeBody(4, {-50, 0, 0}, {0, 0, 0, 1}, 2)}));
    std::vector<SnapshotBody> out;
    REQUIRE(buffer.sample(0.275, out).kind == SampleKind::Interpolated);
    REQUIRE(out.size() == 3);
    CHECK(out[0].id == 1);
    CHECK(out[0].position[0] == Approx(0.5f));
    CHECK(out[1].id == 2); // still there at render time, at its last pose
    CHECK(out[1].position[0] == 5.0f);
    CHECK(out[2].id == 4);
    CHECK(out[2].generation == 1); // the old body, not a blend with the new one
    CHECK(out[2].position[0] == 7.0f);

    // Past the second snapshot (held at it after the cap), the set is the second one's.
    REQUIRE(buffer.sample(0.275 + 1.0, out).kind != SampleKind::Empty);
    REQUIRE(out.size() == 3);
    CHECK(out[1].id == 3);
    CHECK(out[1].position[0] == 9.0f); // new: no velocity to extrapolate with
    CHECK(out[2].generation == 2);
    CHECK(out[2].position[0] == -50.0f);
}

TEST_CASE("interpolation: the delay follows 3 intervals plus the measured jitter, smoothly",
          "[client][interpolation]")
{
    client::InterpolationConfig config;
    config.snapshotIntervalSeconds = 0.0; // estimated from the snapshots
    InterpolationBuffer buffer(config);
    // 20 Hz snapshots, arriving 100 ms late, every other one 40 ms later still: jitter (half range) 20 ms.
    std::vector<SnapshotBody> out;
    double lastRender = -1e9;
    for (int i = 0; i < 100; ++i)
    {
        const double serverTime = i * 0.05;
        buffer.add(makeSnapshot(static_cast<std::uint64_t>(i), serverTime, serverTime + 0.1 + (i % 2) * 0.04,
                                {makeBody(1, {float(i), 0, 0})}));
        for (int f = 0; f < 3; ++f)
        {
            const auto r = buffer.sample(serverTime + 0.14 + f / 60.0, out);
            CHECK(r.renderTime >= lastRender);
            lastRender = r.renderTime;
        }
    }
    CHECK(buffer.stats().intervalSeconds == Approx(0.05));
    CHECK(buffer.stats().offsetSeconds == Approx(0.1));
    CHECK(buffer.stats().jitterSeconds == Approx(0.02).margin(1e-3));
    CHECK(buffer.stats().targetDelaySeconds == Approx(0.17).margin(1e-3));
    CHECK(buffer.stats().currentDelaySeconds == Approx(0.17).margin(0.01));
    CHECK(buffer.delayPercentile(1.0) < 0.2);
    CHECK(std::abs(buffer.stats().playbackRate - 1.0) <= 0.1 + 1e-12);
}

TEST_CASE("interpolation: continuous across lost and late snapshots (no jump larger than the motion)",
          "[client][interpolation][continuity]")
{
    // One body at constant velocity; 60 Hz snapshots cross a seeded lossy, jittery link (NetworkSimulator:
    // 10% loss, 70 ms + [0, 60) ms) and a receiver that, like the Client, drops a snapshot older than one
    // already handed out. Frames are sampled at 50 fps (not a multiple of the snapshot rate).
    //
    // Criterion, for every pair of consecutive frames k-1, k:
    //   render time never decreases, and advances at most (1 + maxRateChange) * frame interval;
    //   |p_k - p_{k-1}| <= |v| * (r_k - r_{k-1}) + 1e-4 m   (the motion over the render time elapsed, plus
    //   float rounding): the shown body never moves further than the body itself did.
    const std::array<double, 3> velocity{3.0, -0.5, 1.25};
    const double speed =
        std::sqrt(velocity[0] * velocity[0] + velocity[1] * velocity[1] + velocity[2] * velocity[2]);
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.07;
    conditions.jitterSeconds = 0.06;
    conditions.lossProbability = 0.1;
    protocol::NetworkSimulator net(conditions, 42);
    const auto from = protocol::Address::ipv4(10, 0, 0, 1, 1);
    const auto to = protocol::Address::ipv4(10, 0, 0, 2, 2);

    client::InterpolationConfig config;
    config.snapshotIntervalSeconds = 1.0 / 60.0;
    InterpolationBuffer buffer(config);
    std::vector<SnapshotBody> out;
    const double frameSeconds = 1.0 / 50.0;
    std::uint64_t nextTick = 0;
    std::uint64_t newestHandedOut = 0;
    bool any = false;
    bool havePrevious = false;
    double previousRender = 0.0;
    std::array<float, 3> previousPosition{};
    std::uint64_t gapsBridged = 0;
    std::uint64_t frames = 0;
    const auto positionAt = [&](double t)
    {
        return std::array<float, 3>{static_cast<float>(1.0 + velocity[0] * t),
                                    static_cast<float>(2.0 + velocity[1] * t),
                                    static_cast<float>(-3.0 + velocity[2] * t)};
    };
    for (double now = 0.0; now < 30.0; now += 1.0 / 600.0)
    {
        while (nextTick / 60.0 <= now)
        {
            std::uint8_t bytes[8];
            std::memcpy(bytes, &nextTick, 8);
            net.send(from, to, bytes, now);
            ++nextTick;
        }
        for (const protocol::SimulatedDatagram& d : net.receive(to, now))
        {
            std::uint64_t tick = 0;
            std::memcpy(&tick, d.bytes.data(), 8);
            if (any && tick <= newestHandedOut)
            {
                continue;
            }
            any = true;
            newestHandedOut = tick;
            const double serverTime = static_cast<double>(tick) / 60.0;
            buffer.add(makeSnapshot(tick, serverTime, now, {makeBody(7, positionAt(serverTime))}));
        }
        const double frameTime = static_cast<double>(frames) * frameSeconds;
        if (now + 1e-9 < frameTime || !any)
        {
            continue;
        }
        ++frames;
        const auto r = buffer.sample(now, out);
        REQUIRE(out.size() == 1);
        if (r.kind == SampleKind::Interpolated && r.toTick > r.fromTick + 1)
        {
            ++gapsBridged;
        }
        if (havePrevious)
        {
            const double advanced = r.renderTime - previousRender;
            REQUIRE(advanced >= 0.0);
            REQUIRE(advanced <= (1.0 + config.maxRateChange) * (frameSeconds + 1.0 / 600.0) + 1e-9);
            double moved = 0.0;
            for (int i = 0; i < 3; ++i)
            {
                const double d = double(out[0].position[std::size_t(i)]) - previousPosition[std::size_t(i)];
                moved += d * d;
            }
            moved = std::sqrt(moved);
            INFO("frame " << frames << " render " << r.renderTime << " kind "
                          << client::sampleKindName(r.kind));
            REQUIRE(moved <= speed * advanced + 1e-4);
        }
        havePrevious = true;
        previousRender = r.renderTime;
        previousPosition = out[0].position;
    }
    const auto& stats = buffer.stats();
    CHECK(net.stats().lost > 100); // the link did lose snapshots...
    CHECK(gapsBridged > 100);      // ...and frames were interpolated across the gaps
    CHECK(stats.framesSampled == frames);
    CHECK(stats.renderClockSnaps == 1); // only the first sample set the clock
    WARN("continuity: " << frames << " frames, " << stats.framesExtrapolated << " extrapolated, "
                        << stats.framesHeld << " held, " << gapsBridged << " across gaps; delay p95 "
                        << buffer.delayPercentile(0.95) * 1e3 << " ms, jitter " << stats.jitterSeconds * 1e3
                        << " ms");
}

TEST_CASE("interpolation: across a 1 s outage poses hold, then resume without going backwards",
          "[client][interpolation][continuity]")
{
    // 60 Hz snapshots of a body moving along +x at 2 m/s, each arriving 100 ms after it was taken, except
    // those taken in [3, 4) s, which are lost. Sampled at 60 fps.
    client::InterpolationConfig config;
    config.snapshotIntervalSeconds = 1.0 / 60.0;
    InterpolationBuffer buffer(config);
    std::vector<SnapshotBody> out;
    std::uint64_t tick = 0;
    double lastRender = -1e9;
    float lastX = -1e9f;
    std::uint64_t heldDuringOutage = 0;
    for (int frame = 0; frame < 600; ++frame)
    {
        const double now = frame / 60.0;
        while (tick / 60.0 + 0.1 <= now + 1e-9)
        {
            const double serverTime = static_cast<double>(tick) / 60.0;
            if (serverTime < 3.0 || serverTime >= 4.0)
            {
                buffer.add(makeSnapshot(tick, serverTime, serverTime + 0.1,
                                        {makeBody(1, {static_cast<float>(2.0 * serverTime), 0, 0})}));
            }
            ++tick;
        }
        const auto r = buffer.sample(now, out);
        if (r.kind == SampleKind::Empty)
        {
            continue;
        }
        REQUIRE(out.size() == 1);
        CHECK(r.renderTime >= lastRender);
        CHECK(out[0].position[0] >= lastX);
        heldDuringOutage += r.kind == SampleKind::Held && r.renderTime > 3.0 ? 1 : 0;
        lastRender = r.renderTime;
        lastX = out[0].position[0];
    }
    CHECK(heldDuringOutage > 30); // 1 s of outage less 250 ms of extrapolation, less the delay's slack
    CHECK(buffer.stats().framesExtrapolated >= 14);
    CHECK(lastX > 2.0f * 9.0f); // playing again after the outage
}

// Suite "bandwidth": protocol version 3 on Fiedler's "Snapshot Compression" scene, built with the engine and
// streamed through the real Server and Client cores joined by the seeded NetworkSimulator.
//
// Scene: 900 cubes (0.5 m, density 1000) resting on a 30 x 30 grid (1 m apart) on the ground plane, and one
// large kinematic cube (2 m half extent) driven along a figure-eight through them by setting its velocity
// before every step (so it reaches the scripted point of the next tick exactly). 60 ticks and 60 snapshots
// a second, 12 simulated seconds; 5% loss in both directions; latency one-way 50 ms and 100 ms (round trips
// 100 and 200 ms). Then "idle": the same cubes with the large one parked away from them, at rest.
//
// Figures: kbps_avg (server to client, every datagram counted with 28 bytes of IP + UDP, over the whole run
// including the connection), kbps_steady (after the first 2 s), kbps_up (client to server, same counting),
// datagram_bytes_max, moving_share (share of bodies whose quantized state changed from one snapshot tick to
// the next, mean over ticks), encode_us_per_tick (encoder time per client per snapshot tick, thread CPU time),
// mismatches (shown snapshots whose decoded state differs from the server's quantized state: must be 0),
// snapshots_shown, full_snapshots, catalogue_datagrams.
#include "bench_common.h"

#include "polytope/client/client.h"
#include "polytope/physics/scenes.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace polytope::bench
{
namespace
{
namespace ph = polytope::physics;

constexpr float kCubeHalf = 0.25f;
constexpr float kPusherHalf = 2.0f;

/// The figure-eight of the large cube at time t (seconds): 13 m across, one loop every 8 s.
ph::Vec3 pusherPath(double t)
{
    const double w = 2.0 * 3.14159265358979 / 8.0;
    return {static_cast<float>(13.0 * std::sin(w * t)), kPusherHalf, static_cast<float>(9.0 * std::sin(2.0 * w * t))};
}

bool buildCubeScene(ph::World& world, bool idle, ph::BodyId& pusher)
{
    if (!ph::addGroundPlane(world))
    {
        return false;
    }
    for (int i = 0; i < 30; ++i)
    {
        for (int k = 0; k < 30; ++k)
        {
            ph::BodyDesc cube;
            cube.shape = ph::Shape::makeBox({kCubeHalf, kCubeHalf, kCubeHalf});
            cube.transform.p = {static_cast<float>(i) - 14.5f, kCubeHalf, static_cast<float>(k) - 14.5f};
            if (world.createBody(cube).id.isNull())
            {
                return false;
            }
        }
    }
    ph::BodyDesc big;
    big.type = ph::BodyType::Kinematic;
    big.shape = ph::Shape::makeBox({kPusherHalf, kPusherHalf, kPusherHalf});
    big.transform.p = idle ? ph::Vec3{40.0f, kPusherHalf, 40.0f} : pusherPath(0.0);
    pusher = world.createBody(big).id;
    return !pusher.isNull();
}

struct CaseResult
{
    double kbps = 0.0, kbpsSteady = 0.0, kbpsUp = 0.0, movingShare = 0.0, encodeMicros = 0.0;
    std::size_t largest = 0, mismatches = 0, shown = 0, bodies = 0;
    std::uint64_t fullSnapshots = 0, catalogueDatagrams = 0;
};

CaseResult runCase(double oneWaySeconds, bool idle, double seconds)
{
    const protocol::Address serverAddress = protocol::Address::ipv4(10, 0, 0, 1, 7777);
    const protocol::Address clientAddress = protocol::Address::ipv4(10, 0, 0, 2, 5000);
    constexpr double kIpUdpBytes = 28.0;
    constexpr double kWarmupSeconds = 2.0;
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = oneWaySeconds;
    conditions.lossProbability = 0.05;
    protocol::NetworkSimulator net(conditions, 2024);
    double now = 0.0;
    CaseResult r;
    double bytesDown = 0.0, bytesDownSteady = 0.0, bytesUp = 0.0;

    ph::BodyId pusher;
    server::RoomConfig config;
    config.scene = idle ? "fiedler-cubes-idle" : "fiedler-cubes";
    config.snapshotRateHz = 60;
    config.buildScene = [&](ph::World& world) { return buildCubeScene(world, idle, pusher); };
    std::string error;
    server::ServerConfig serverConfig;
    serverConfig.rooms = {config};
    serverConfig.security.insecure = true; // a tokenless client: snapshot bytes without the seal's overhead
    auto front = server::Server::create(
        serverConfig,
        [&](const protocol::Address& to, std::span<const std::uint8_t> d)
        {
            const double bytes = static_cast<double>(d.size()) + kIpUdpBytes;
            bytesDown += bytes;
            bytesDownSteady += now >= kWarmupSeconds ? bytes : 0.0;
            r.largest = std::max(r.largest, d.size());
            net.send(serverAddress, to, d, now);
        },
        error);
    if (!front)
    {
        std::fprintf(stderr, "bandwidth: %s\n", error.c_str());
        return r;
    }
    server::Room* server = &front->room(0);
    // Encode time as this thread's processor time: on a loaded machine wall-clock figures mostly measure the
    // other processes.
    server->setProfileClock(
        []
        {
            timespec t{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
            return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
        });
    const double tickSeconds = 1.0 / config.tickRateHz;
    if (!idle)
    {
        server->setPreStepHook(
            [&](std::uint64_t tick)
            {
                ph::BodyState state;
                if (server->world().getBody(pusher, state))
                {
                    const ph::Vec3 target = pusherPath(static_cast<double>(tick) * tickSeconds);
                    server->world().setVelocity(pusher, (target - state.transform.p) * static_cast<float>(1.0 / tickSeconds),
                                                {0.0f, 0.0f, 0.0f});
                }
            });
    }
    client::Client c({}, [&](std::span<const std::uint8_t> d)
                     {
                         bytesUp += static_cast<double>(d.size()) + kIpUdpBytes;
                         net.send(clientAddress, serverAddress, d, now);
                     });
    c.connect(0.0);

    std::uint64_t previousTick = 0;
    double movingSum = 0.0;
    std::size_t movingCount = 0;
    while (now < seconds)
    {
        now += 1.0 / 240.0;
        for (const protocol::SimulatedDatagram& d : net.receive(serverAddress, now))
        {
            front->receive(d.from, d.bytes, now);
        }
        front->update(now);
        for (const protocol::SimulatedDatagram& d : net.receive(clientAddress, now))
        {
            c.receive(d.bytes, now);
        }
        c.update(now);
        client::ReceivedSnapshot s;
        while (c.popSnapshot(s))
        {
            ++r.shown;
            const protocol::SnapshotFrame* truth = server->history().find(s.tick);
            if (truth == nullptr || !std::equal(s.quantized.begin(), s.quantized.end(), truth->bodies.begin(),
                                                truth->bodies.end()))
            {
                ++r.mismatches;
            }
        }
        // Moving share, from the server's own consecutive snapshot ticks.
        if (const protocol::SnapshotFrame* newest = server->history().newest(); newest && newest->tick != previousTick)
        {
            if (const protocol::SnapshotFrame* before = server->history().find(newest->tick - 1))
            {
                std::size_t changed = 0;
                for (std::size_t i = 0; i < newest->bodies.size() && i < before->bodies.size(); ++i)
                {
                    changed += newest->bodies[i].sameState(before->bodies[i]) ? 0 : 1;
                }
                movingSum += static_cast<double>(changed) / static_cast<double>(newest->bodies.size());
                ++movingCount;
            }
            previousTick = newest->tick;
            r.bodies = newest->bodies.size();
        }
    }
    const server::RoomMetrics& m = server->metrics();
    r.kbps = bytesDown * 8.0 / seconds / 1000.0;
    r.kbpsSteady = bytesDownSteady * 8.0 / (seconds - kWarmupSeconds) / 1000.0;
    r.kbpsUp = bytesUp * 8.0 / seconds / 1000.0;
    r.movingShare = movingCount ? movingSum / static_cast<double>(movingCount) : 0.0;
    const double encodes = static_cast<double>(m.snapshotsSent + m.snapshotsSkipped);
    r.encodeMicros = encodes > 0 ? m.encodeSeconds * 1e6 / encodes : 0.0;
    r.fullSnapshots = m.fullSnapshots;
    r.catalogueDatagrams = m.catalogueDatagrams;
    return r;
}

} // namespace

void runBandwidthSuite(Report& report, const SuiteOptions& options)
{
    spdlog::set_level(spdlog::level::warn);
    const double seconds = options.count > 0 ? static_cast<double>(options.count) : 12.0;
    struct Case
    {
        const char* name;
        double oneWay;
        bool idle;
    };
    const Case cases[] = {
        {"cubes_5pct_loss_50ms_one_way", 0.05, false},
        {"cubes_5pct_loss_100ms_one_way", 0.10, false},
        {"idle_5pct_loss_50ms_one_way", 0.05, true},
    };
    for (const Case& k : cases)
    {
        const CaseResult r = runCase(k.oneWay, k.idle, seconds);
        report.add(k.name, "polytope", static_cast<std::int64_t>(r.bodies))
            .add("one_way_ms", k.oneWay * 1000.0)
            .add("rtt_ms", k.oneWay * 2000.0)
            .add("kbps_avg", r.kbps)
            .add("kbps_steady", r.kbpsSteady)
            .add("kbps_up", r.kbpsUp)
            .add("datagram_bytes_max", static_cast<double>(r.largest))
            .add("moving_share", r.movingShare)
            .add("encode_us_per_tick", r.encodeMicros)
            .add("mismatches", static_cast<double>(r.mismatches))
            .add("snapshots_shown", static_cast<double>(r.shown))
            .add("full_snapshots", static_cast<double>(r.fullSnapshots))
            .add("catalogue_datagrams", static_cast<double>(r.catalogueDatagrams));
    }
}

} // namespace polytope::bench

// Suite "bandwidth": the snapshot protocol on Fiedler's "Snapshot Compression" scene, built with the engine
// and streamed through the real Server and Client cores joined by the seeded NetworkSimulator.
//
// Scene (fiedler_cubes.h): 900 cubes (0.5 m, density 1000) resting on a 30 x 30 grid (1 m apart) on the
// ground plane, and one large kinematic cube (2 m half extent) driven along a figure-eight through them by
// setting its velocity before every step (so it reaches the scripted point of the next tick exactly). 60
// ticks and 60 snapshots a second, 12 simulated seconds; 5% loss in both directions; latency one-way 50 ms
// and 100 ms (round trips 100 and 200 ms). Then "idle": the same cubes with the large one parked away from
// them, at rest.
//
// Figures: kbps_avg (server to client, every datagram counted with 28 bytes of IP + UDP, over the whole run
// including the connection), kbps_steady (after the first 2 s), kbps_up (client to server, same counting),
// datagram_bytes_max, moving_share (share of bodies whose quantized state changed from one snapshot tick to
// the next, mean over ticks), encode_us_per_tick (encoder time per client per snapshot tick, thread CPU
// time), mismatches (shown snapshots whose decoded state differs from the server's quantized state: must be
// 0), snapshots_shown, full_snapshots, catalogue_datagrams.
//
// The structured_ cases are the same runs with a client that asked for structured snapshots (STANDARD.md
// section 14: plain tables of 28-byte body structs, what a tool in any language reads), the
// structured_velocities_ case with velocities too; same fields. These runs have the room's default bandwidth
// budget (2048 kbps), which binds the structured client on the moving scenes (bodies_deferred tells how
// often); the structured_unbudgeted_ case has no budget: what structured snapshots of this scene cost.
// mismatches compare each shown snapshot with what that client was sent.
//
// The codec_ cases run the snapshot codec alone on the same scene and links, without the Server and Client,
// through the stream protocol_tests checks (tests/support/codec_stream.h): each tick the World's bodies are
// quantized and encoded against the newest tick the receiver acknowledged (with the one before it as
// reference), identical snapshots are skipped except every 15th tick, and the receiver decodes, reassembles
// and acknowledges every complete tick (newest tick and a 64-tick mask) over the simulated link. Each
// datagram is counted with 28 bytes of IP + UDP and an assumed 72-byte envelope.
// Figures: kbps_avg, kbps_steady (after the first second), kbps_payload (payload bytes alone), datagrams,
// payload_bytes_max, datagram_bytes_max, changed_share and awake_share (of bodies per tick),
// baseline_age_mean and baseline_age_max (ticks), full_snapshots, encode_us_median and encode_us_max (wall
// clock), encode_us_cpu (thread CPU time, the first client of a tick) and encode_us_cpu_extra_client (each
// further client with the same acknowledgements, whose frame is already checked), ticks_decoded, mismatches
// and decode_errors (both must be 0).
#include "bench_common.h"
#include "fiedler_cubes.h"
#include "support/codec_stream.h"

#include "polytope/client/client.h"
#include "polytope/physics/scenes.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/protocol/snapshot_codec.h"
#include "polytope/server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <vector>

namespace polytope::bench
{
namespace
{
namespace ph = polytope::physics;

/// This thread's processor time, seconds: on a loaded machine wall-clock figures mostly measure the other
/// processes.
double threadCpuSeconds()
{
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct CaseResult
{
    double kbps = 0.0, kbpsSteady = 0.0, kbpsUp = 0.0, movingShare = 0.0, encodeMicros = 0.0;
    std::size_t largest = 0, mismatches = 0, shown = 0, bodies = 0;
    std::uint64_t fullSnapshots = 0, catalogueDatagrams = 0, bodiesDeferred = 0;
};

/// How the bench client asks for its snapshots.
enum class Format : std::uint8_t
{
    Compressed,
    Structured,
    StructuredWithVelocities,
};

CaseResult runCase(double oneWaySeconds, bool idle, double seconds, Format format, bool budgeted)
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
    config.maxClientKbps = budgeted ? config.maxClientKbps : 0;
    config.buildScene = [&](ph::World& world) { return buildFiedlerCubes(world, idle, pusher); };
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
    server->setProfileClock(threadCpuSeconds);
    const double tickSeconds = 1.0 / config.tickRateHz;
    if (!idle)
    {
        server->setPreStepHook([&](std::uint64_t tick)
                               { driveFiedlerPusher(server->world(), pusher, tick, tickSeconds); });
    }
    client::ClientConfig clientConfig;
    if (format != Format::Compressed)
    {
        clientConfig.snapshotFormat = protocol::wire::SnapshotFormat::Structured;
        clientConfig.snapshotVelocities = format == Format::StructuredWithVelocities;
    }
    client::Client c(clientConfig,
                     [&](std::span<const std::uint8_t> d)
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
            // What this client was sent: the simulation's frame, or under a binding budget its own.
            const protocol::SnapshotFrame* truth = server->sentFrame(c.clientId(), s.tick);
            if (truth == nullptr || !std::equal(s.quantized.begin(), s.quantized.end(), truth->bodies.begin(),
                                                truth->bodies.end()))
            {
                ++r.mismatches;
            }
        }
        // Moving share, from the server's own consecutive snapshot ticks.
        if (const protocol::SnapshotFrame* newest = server->history().newest();
            newest && newest->tick != previousTick)
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
    r.bodiesDeferred = m.bodiesDeferred;
    return r;
}

struct CodecResult
{
    test::CodecStreamResult stream; ///< the stream's own counts
    double kbps = 0.0, kbpsSteady = 0.0, kbpsPayload = 0.0, changedShare = 0.0, awakeShare = 0.0;
    double baselineAgeMean = 0.0, encodeMedianMicros = 0.0, encodeMaxMicros = 0.0, cpuMicros = 0.0;
    double cpuExtraClientMicros = 0.0;
    std::size_t datagrams = 0, bodies = 0;
};

/// The snapshot codec alone on the scene over the simulated link (see the file comment), streamed by the
/// tests' test::runCodecStream.
CodecResult runCodecCase(double oneWaySeconds, bool idle, double seconds)
{
    using protocol::QuantizedBody;
    constexpr int kTickRateHz = 60;
    constexpr double kIpUdpBytes = 28.0;
    constexpr double kEnvelopeBytes = 72.0; // the Packet around a payload, assumed
    constexpr double kWarmupSeconds = 1.0;
    CodecResult result;
    ph::World world;
    ph::BodyId pusher;
    if (!buildFiedlerCubes(world, idle, pusher))
    {
        std::fprintf(stderr, "bandwidth: the scene did not fit the world\n");
        return result;
    }
    test::CodecStreamSettings settings;
    settings.seconds = seconds;
    settings.tickRateHz = kTickRateHz;
    settings.network.latencySeconds = oneWaySeconds;
    settings.network.lossProbability = 0.05;
    settings.idleHeartbeatTicks = 15;

    const int ticks = static_cast<int>(seconds * kTickRateHz);
    const std::uint64_t warmupTicks = static_cast<std::uint64_t>(kWarmupSeconds * kTickRateHz);
    const double dt = 1.0 / kTickRateHz;
    double totalBytes = 0.0, steadyBytes = 0.0, payloadBytes = 0.0, changed = 0.0, awake = 0.0;
    std::size_t awakeNow = 0;
    test::CodecStreamHooks hooks;
    hooks.snapshot = [&](std::uint64_t tick)
    {
        if (!idle)
        {
            driveFiedlerPusher(world, pusher, tick, dt);
        }
        (void)world.step(static_cast<float>(dt));
        std::vector<QuantizedBody> bodies;
        awakeNow = 0;
        world.forEachBody(
            [&](const ph::BodyState& body)
            {
                bodies.push_back(server::quantizeBodyState(settings.codec.position, body));
                awakeNow += bodies.back().atRest ? 0 : 1;
            });
        result.bodies = bodies.size();
        return bodies;
    };
    using Bodies = std::span<const QuantizedBody>;
    hooks.consecutiveSnapshots = [&](Bodies before, Bodies now)
    {
        std::size_t c = 0;
        for (std::size_t i = 0; i < now.size() && i < before.size(); ++i)
        {
            c += now[i].sameState(before[i]) ? 0 : 1;
        }
        changed += static_cast<double>(c) / static_cast<double>(now.size());
        awake += static_cast<double>(awakeNow) / static_cast<double>(now.size());
    };
    hooks.sentSlice = [&](std::uint64_t tick, std::size_t payload)
    {
        const double bytes = static_cast<double>(payload) + kEnvelopeBytes + kIpUdpBytes;
        totalBytes += bytes;
        steadyBytes += tick - settings.firstTick >= warmupTicks ? bytes : 0.0;
        payloadBytes += static_cast<double>(payload);
        ++result.datagrams;
    };
    hooks.wallClock = [] { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); };
    hooks.cpuClock = threadCpuSeconds;
    result.stream = test::runCodecStream(settings, hooks);
    const test::CodecStreamResult& stream = result.stream;
    if (stream.encodeError != protocol::CodecError::None)
    {
        std::fprintf(stderr, "bandwidth: the encoder refused tick %llu\n",
                     static_cast<unsigned long long>(stream.refusedTick));
        return result;
    }
    result.kbps = totalBytes * 8.0 / seconds / 1000.0;
    result.kbpsSteady = steadyBytes * 8.0 / (seconds - kWarmupSeconds) / 1000.0;
    result.kbpsPayload = payloadBytes * 8.0 / seconds / 1000.0;
    result.changedShare = changed / std::max(1, ticks - 1);
    result.awakeShare = awake / std::max(1, ticks - 1);
    result.baselineAgeMean = static_cast<double>(stream.baselineAgeSum) /
                             static_cast<double>(std::max<std::size_t>(stream.deltaSnapshots, 1));
    std::vector<double> encodeMicros = stream.encodeWallSeconds;
    for (double& e : encodeMicros)
    {
        e *= 1e6;
    }
    const double encodes = static_cast<double>(std::max<std::size_t>(encodeMicros.size(), 1));
    result.cpuMicros = stream.encodeCpuSeconds * 1e6 / encodes;
    result.cpuExtraClientMicros = stream.secondClientEncodeCpuSeconds * 1e6 / encodes;
    if (!encodeMicros.empty())
    {
        result.encodeMaxMicros = *std::max_element(encodeMicros.begin(), encodeMicros.end());
        result.encodeMedianMicros = median(encodeMicros);
    }
    return result;
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
    struct Run
    {
        const char* prefix;
        Format format;
        bool allCases;
        bool budgeted;
    };
    const Run runs[] = {{"", Format::Compressed, true, true},
                        {"structured_", Format::Structured, true, true},
                        {"structured_velocities_", Format::StructuredWithVelocities, false, true},
                        {"structured_unbudgeted_", Format::Structured, false, false}};
    for (const Run& run : runs)
    {
        for (const Case& k : cases)
        {
            if (!run.allCases && &k != &cases[0])
            {
                continue;
            }
            const CaseResult r = runCase(k.oneWay, k.idle, seconds, run.format, run.budgeted);
            report.add(std::string(run.prefix) + k.name, "polytope", static_cast<std::int64_t>(r.bodies))
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
                .add("catalogue_datagrams", static_cast<double>(r.catalogueDatagrams))
                .add("bodies_deferred", static_cast<double>(r.bodiesDeferred));
        }
    }
    for (const Case& k : cases)
    {
        const CodecResult r = runCodecCase(k.oneWay, k.idle, seconds);
        report.add(std::string("codec_") + k.name, "polytope", static_cast<std::int64_t>(r.bodies))
            .add("one_way_ms", k.oneWay * 1000.0)
            .add("rtt_ms", k.oneWay * 2000.0)
            .add("kbps_avg", r.kbps)
            .add("kbps_steady", r.kbpsSteady)
            .add("kbps_payload", r.kbpsPayload)
            .add("datagrams", static_cast<double>(r.datagrams))
            .add("payload_bytes_max", static_cast<double>(r.stream.largestPayload))
            .add("datagram_bytes_max", static_cast<double>(r.stream.largestPayload) + 72.0)
            .add("changed_share", r.changedShare)
            .add("awake_share", r.awakeShare)
            .add("baseline_age_mean", r.baselineAgeMean)
            .add("baseline_age_max", static_cast<double>(r.stream.maxBaselineAge))
            .add("full_snapshots", static_cast<double>(r.stream.fullSnapshots))
            .add("encode_us_median", r.encodeMedianMicros)
            .add("encode_us_max", r.encodeMaxMicros)
            .add("encode_us_cpu", r.cpuMicros)
            .add("encode_us_cpu_extra_client", r.cpuExtraClientMicros)
            .add("ticks_decoded", static_cast<double>(r.stream.ticksDecoded))
            .add("mismatches", static_cast<double>(r.stream.mismatches))
            .add("decode_errors", static_cast<double>(r.stream.decodeErrors));
    }
}

} // namespace polytope::bench

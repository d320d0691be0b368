// The soak test: 64 clients with connect tokens, in sealed sessions, joining and leaving for a bounded time
// over a hostile simulated network (25% loss, 25% duplicates, 100 +- 50 ms, a 2 s blackout every 10 s),
// all in one process with a test clock. It checks that
//   - every snapshot a client decodes is exactly what the server sent it;
//   - after each blackout, every client connected through it is back in sync (has decoded a snapshot the
//     server made after the blackout ended) within 1 s;
//   - every input is applied at most once, never before its tick;
//   - a fresh room fed the same datagrams at the same times ends in the same state, bit for bit (the state
//     is a function of what the server received, whatever the network did to it).
// Built with ASan and UBSan in CI, it is also the leak and memory-error check of the whole server and
// client under churn. POLYTOPE_SOAK_SECONDS sets the simulated length (default 20 s); bench/soak.sh runs a
// long one and watches the process's resident memory.
#include "polytope/client/client.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/protocol/token.h"
#include "polytope/server/server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>

using namespace polytope;

namespace
{

constexpr std::uint16_t kPort = 7777; // test::kServerAddress's
constexpr double kFrame = 1.0 / 120.0;
constexpr double kWallStart = 1.8e9;

double fromEnvironment(const char* name, double fallback)
{
    const char* text = std::getenv(name);
    const double value = text ? std::atof(text) : 0.0;
    return value > 0.0 ? value : fallback;
}

struct SoakConfig
{
    int clients = 64;
    double seconds = 20.0;
    std::uint64_t seed = 2026;
    double blackoutPeriod = 10.0; ///< a blackout starts every this many seconds (from blackoutFirst)
    double blackoutFirst = 6.0;
    double blackoutLength = 2.0;
    double minSession = 4.0; ///< each client leaves after a session of [minSession, maxSession)
    double maxSession = 14.0;
    double rejoinDelay = 0.5;
};

struct SoakReport
{
    std::uint64_t sessionsOpened = 0;
    std::uint64_t connectsFailed = 0;
    std::uint64_t snapshotsDecoded = 0;
    std::uint64_t mismatches = 0;
    std::uint64_t inputsSent = 0;
    std::uint64_t inputsApplied = 0;
    std::uint64_t inputsAppliedTwice = 0;
    std::uint64_t inputsAppliedEarly = 0;
    int blackouts = 0;
    std::uint64_t resyncsMeasured = 0; ///< (client, blackout) pairs
    std::uint64_t resyncsMissing = 0;  ///< clients connected through a blackout that never resynced
    double maxResyncSeconds = 0.0;
    std::uint64_t finalHash = 0;
    std::uint64_t replayHash = 0;
    std::uint64_t replayInputsApplied = 0;
    std::uint64_t serverDrops = 0;
    std::uint64_t clientDrops = 0;
};

/// One client slot: a Client that connects, plays, leaves and comes back with a new token and port.
struct Slot
{
    std::unique_ptr<client::Client> client;
    protocol::Address address;
    double leaveAt = 0.0;
    double joinAt = 0.0;
    double nextInput = 0.0;
    bool counted = false; ///< its session was counted as opened
    std::uint64_t lastTick = 0;
};

class Soak
{
  public:
    explicit Soak(const SoakConfig& config) : m_config(config), m_random(config.seed)
    {
        protocol::NetworkConditions conditions;
        conditions.latencySeconds = 0.05;
        conditions.jitterSeconds = 0.10; // one way: 50 .. 150 ms
        conditions.lossProbability = 0.25;
        conditions.duplicateProbability = 0.25;
        for (double t = config.blackoutFirst; t + config.blackoutLength < config.seconds;
             t += config.blackoutPeriod)
        {
            conditions.blackouts.push_back({t, t + config.blackoutLength});
        }
        m_net.simulate(conditions, config.seed);
        m_net.frameSeconds = kFrame;
        m_key.fill(0x5C);
        server::ServerConfig host;
        server::RoomConfig room;
        room.room = "main";
        room.port = kPort;
        room.maxClients = 2 * config.clients; // room for sessions whose goodbyes were all lost
        host.rooms = {room};
        host.security.tokenKey = m_key;
        host.security.listenPort = kPort;
        host.cookieKey = server::ConnectCookies::Key{4, 4, 4};
        host.wallClock = [this] { return kWallStart + m_net.now(); };
        m_host = test::makeServer(m_net, host);
        server::Room& main = m_host->room(0);
        // The replica: a second Server with the same configuration, keys and clocks, fed in lockstep exactly
        // the datagrams this one receives and the same update() calls. Nothing is stored, so memory stays
        // flat however long the soak runs.
        m_replica = test::makeServer(host, [](const protocol::Address&, std::span<const std::uint8_t>) {});
        m_replica->room(0).setInputObserver([this](const server::AppliedInput&)
                                            { ++m_report.replayInputsApplied; });
        main.setInputObserver([this](const server::AppliedInput& a) { onApplied(a); });
        m_slots.resize(static_cast<std::size_t>(config.clients));
        for (std::size_t i = 0; i < m_slots.size(); ++i)
        {
            m_slots[i].joinAt = 0.02 * static_cast<double>(i); // a join storm, spread over 1.3 s
        }
    }

    SoakReport run()
    {
        while (m_net.now() < m_config.seconds)
        {
            frame();
        }
        for (Slot& slot : m_slots)
        {
            if (slot.client)
            {
                m_report.clientDrops += slot.client->stats().drops.total();
            }
        }
        m_report.finalHash = m_host->room(0).world().stateHash();
        m_report.serverDrops = m_host->room(0).metrics().drops.total() + m_host->metrics().drops.total();
        m_report.blackouts = static_cast<int>(m_net.simulator()->conditions().blackouts.size());
        finishResync();
        m_report.replayHash = m_replica->room(0).world().stateHash();
        return m_report;
    }

  private:
    void frame()
    {
        m_now = m_net.advance();
        // The replica receives what the host receives, as the host receives it.
        m_net.deliverToServer(m_now,
                              [this](const protocol::Address& from, std::span<const std::uint8_t> datagram)
                              { m_replica->receive(from, test::AlignedDatagram(datagram).view(), m_now); });
        m_replica->update(m_now);
        m_host->update(m_now);
        for (std::size_t i = 0; i < m_slots.size(); ++i)
        {
            tickSlot(m_slots[i], i);
        }
        // Nobody listens at a departed client's address: what arrives there is lost (and must leave the
        // simulator, whose queue is bounded).
        for (const auto& [address, until] : m_retired)
        {
            m_net.discard(address, m_now);
        }
        std::erase_if(m_retired, [this](const auto& r) { return r.second < m_now; });
        std::erase_if(m_applied, [this](const auto& a) { return a.second.lastTime < m_now - 30.0; });
        checkBlackouts();
    }

    void join(Slot& slot, std::size_t index)
    {
        protocol::TokenRequest request;
        request.clientId = ++m_nextClientId;
        request.serverAddresses = {"10.0.0.1:7777"};
        request.rooms = {"main"};
        request.lifetimeSeconds = 60;
        client::ClientConfig config;
        config.name = "soak-" + std::to_string(index);
        config.token.emplace();
        std::string error;
        REQUIRE(protocol::makeConnectToken(m_key, request, static_cast<std::uint64_t>(kWallStart + m_now),
                                           *config.token, error));
        // A new port per session, as a restarted client would have.
        slot.address = protocol::Address::ipv4(10, 1, static_cast<std::uint8_t>(index / 200),
                                               static_cast<std::uint8_t>(index % 200 + 1),
                                               static_cast<std::uint16_t>(20000 + (m_nextClientId % 40000)));
        const protocol::Address address = slot.address;
        slot.client = std::make_unique<client::Client>(config, m_net.clientSend(address));
        slot.client->connect(m_now);
        slot.counted = false;
        slot.lastTick = 0;
        std::uniform_real_distribution<double> length(m_config.minSession, m_config.maxSession);
        slot.leaveAt = m_now + length(m_random);
        slot.nextInput = m_now + 0.5;
    }

    void tickSlot(Slot& slot, std::size_t index)
    {
        if (!slot.client)
        {
            if (m_now >= slot.joinAt)
            {
                join(slot, index);
            }
            return;
        }
        client::Client& c = *slot.client;
        m_net.deliverTo(slot.address, c, m_now);
        c.update(m_now);
        if (c.isConnected() && !slot.counted)
        {
            slot.counted = true;
            ++m_report.sessionsOpened;
        }
        client::ReceivedSnapshot snapshot;
        while (c.popSnapshot(snapshot))
        {
            checkSnapshot(slot, snapshot);
        }
        if (c.isConnected() && m_now >= slot.nextInput)
        {
            sendInput(slot);
        }
        if (c.isFinished() || m_now >= slot.leaveAt)
        {
            if (!c.isConnected() && !slot.counted)
            {
                ++m_report.connectsFailed;
            }
            c.disconnect(m_now);
            m_report.clientDrops += c.stats().drops.total();
            m_retired.emplace_back(slot.address, m_now + 15.0); // its datagrams still in flight are discarded
            slot.client.reset();
            slot.joinAt = m_now + m_config.rejoinDelay;
        }
    }

    void sendInput(Slot& slot)
    {
        client::Client& c = *slot.client;
        slot.nextInput = m_now + 0.1;
        for (const auto& [id, entry] : c.catalogue())
        {
            if (!entry.owned || entry.removed || c.receiver() == nullptr)
            {
                continue;
            }
            std::uniform_real_distribution<float> push(-3.0f, 3.0f);
            protocol::InputCommand input;
            input.tick = c.receiver()->newestComplete() + 12;
            input.bodyId = entry.id;
            input.bodyGeneration = entry.generation;
            input.kind =
                (m_random() % 2) ? protocol::wire::InputKind::Impulse : protocol::wire::InputKind::Force;
            input.vector = {push(m_random), std::fabs(push(m_random)), push(m_random)};
            if (c.sendInput(input) != 0)
            {
                ++m_report.inputsSent;
            }
        }
    }

    void checkSnapshot(Slot& slot, const client::ReceivedSnapshot& snapshot)
    {
        ++m_report.snapshotsDecoded;
        slot.lastTick = snapshot.tick;
        const server::Room& room = m_host->room(0);
        const protocol::SnapshotFrame* truth = room.sentFrame(slot.client->clientId(), snapshot.tick);
        if (truth == nullptr)
        {
            truth = room.history().find(snapshot.tick);
        }
        const bool same =
            truth != nullptr && snapshot.quantized.size() == truth->bodies.size() &&
            std::equal(snapshot.quantized.begin(), snapshot.quantized.end(), truth->bodies.begin());
        m_report.mismatches += same ? 0 : 1;
    }

    void onApplied(const server::AppliedInput& a)
    {
        ++m_report.inputsApplied;
        Applied& applied = m_applied[a.clientId];
        applied.lastTime = m_now;
        if (!applied.sequences.insert(a.input.sequence).second)
        {
            ++m_report.inputsAppliedTwice;
        }
        if (a.appliedTick < a.input.tick)
        {
            ++m_report.inputsAppliedEarly;
        }
    }

    /// At each blackout's end, note who is connected and the server's tick; each must decode a snapshot of
    /// a later tick within 1 s.
    void checkBlackouts()
    {
        const auto& blackouts = m_net.simulator()->conditions().blackouts;
        while (m_nextBlackout < blackouts.size() && m_now >= blackouts[m_nextBlackout].endSeconds)
        {
            finishResync();
            m_watchTick = m_host->room(0).tick();
            m_watchStart = m_now;
            m_watching.clear();
            for (std::size_t i = 0; i < m_slots.size(); ++i)
            {
                const Slot& slot = m_slots[i];
                // In sync before the blackout (it had shown a snapshot), connected now, and staying for at
                // least 1.5 s more.
                if (slot.client && slot.client->isConnected() && slot.lastTick > 0 &&
                    slot.leaveAt > m_now + 1.5)
                {
                    m_watching[i] = -1.0;
                }
            }
            ++m_nextBlackout;
        }
        for (auto& [index, resynced] : m_watching)
        {
            const Slot& slot = m_slots[index];
            if (resynced < 0.0 && slot.client && slot.lastTick > m_watchTick)
            {
                resynced = m_now - m_watchStart;
            }
        }
    }

    void finishResync()
    {
        for (const auto& [index, resynced] : m_watching)
        {
            ++m_report.resyncsMeasured;
            if (resynced < 0.0)
            {
                ++m_report.resyncsMissing;
            }
            else
            {
                m_report.maxResyncSeconds = std::max(m_report.maxResyncSeconds, resynced);
            }
        }
        m_watching.clear();
    }

    SoakConfig m_config;
    std::mt19937_64 m_random;
    test::InProcessNetwork m_net; ///< the simulated network, the test clock and the host's transport
    protocol::TokenKey m_key{};
    std::unique_ptr<server::Server> m_host;
    std::vector<Slot> m_slots;
    std::vector<std::pair<protocol::Address, double>> m_retired; ///< departed clients' addresses, until when
    double m_now = 0.0;                                          ///< m_net.now(), as of this frame
    std::uint64_t m_nextClientId = 0;
    SoakReport m_report;
    std::unique_ptr<server::Server> m_replica;
    struct Applied
    {
        std::set<std::uint32_t> sequences;
        double lastTime = 0.0;
    };
    std::map<std::uint32_t, Applied> m_applied; ///< per session id; sessions idle for 30 s are forgotten
    std::size_t m_nextBlackout = 0;
    std::uint64_t m_watchTick = 0;
    double m_watchStart = 0.0;
    std::map<std::size_t, double> m_watching; ///< slot -> seconds to resync (-1: not yet)
};

} // namespace

TEST_CASE("soak: 64 clients join and leave through loss, duplicates, jitter and blackouts", "[server][soak]")
{
    SoakConfig config;
    config.seconds = fromEnvironment("POLYTOPE_SOAK_SECONDS", 20.0);
    config.seed = static_cast<std::uint64_t>(fromEnvironment("POLYTOPE_SOAK_SEED", 2026.0));
    Soak soak(config);
    const SoakReport r = soak.run();
    INFO("simulated " << config.seconds << " s: sessions " << r.sessionsOpened << ", failed connects "
                      << r.connectsFailed << ", snapshots " << r.snapshotsDecoded << ", mismatches "
                      << r.mismatches << ", inputs sent " << r.inputsSent << " applied " << r.inputsApplied
                      << ", blackouts " << r.blackouts << ", resyncs " << r.resyncsMeasured << " (missing "
                      << r.resyncsMissing << ", slowest " << r.maxResyncSeconds << " s), drops server "
                      << r.serverDrops << " clients " << r.clientDrops);
    CHECK(r.sessionsOpened > static_cast<std::uint64_t>(config.clients)); // churn happened
    CHECK(r.snapshotsDecoded > 1000);
    CHECK(r.mismatches == 0);
    CHECK(r.inputsApplied > 100);
    CHECK(r.inputsAppliedTwice == 0);
    CHECK(r.inputsAppliedEarly == 0);
    CHECK(r.blackouts >= 1);
    CHECK(r.resyncsMeasured >= 20);
    CHECK(r.resyncsMissing == 0);
    CHECK(r.maxResyncSeconds <= 1.0);
    CHECK(r.replayInputsApplied == r.inputsApplied);
    CHECK(r.replayHash == r.finalHash);
    WARN("soak " << config.seconds << " s: " << r.sessionsOpened << " sessions, " << r.snapshotsDecoded
                 << " snapshots, 0 mismatches, " << r.inputsApplied << " inputs, " << r.resyncsMeasured
                 << " resyncs after " << r.blackouts << " blackouts, slowest " << r.maxResyncSeconds << " s");
}

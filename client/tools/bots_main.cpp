// polytope-bots: a load generator. N headless clients in one thread, each a client::Client core on its own
// UDP socket (its own ephemeral port), all driven by one asio::io_context and one steady timer. Each bot
// connects (the starts are spread over --connect-spread seconds), acknowledges snapshots (the Client does it)
// and plays a behaviour (client/bot_behaviour.h) on what its own interpolation buffer shows: "push" (the
// default) sends random impulses at --input-hz to the first body the server gave it; "soccer" plays the
// example game (examples/soccer/). At the end, or on SIGINT/SIGTERM, it
// says goodbye and prints a report: connects, time to connect, snapshots per second, kbps down and up, RTT
// percentiles (client.h: the figure includes the server's acknowledgement delay), loss, inputs.
//
//   polytope-bots HOST:PORT --clients N --seconds S [--behaviour NAME] [--input-hz H] [--connect-spread S]
//                 [--json] [--min-connected M]
//
// Exit status: 0 when at least --min-connected bots (default: all) connected, 1 on bad usage or when the
// host cannot be resolved, 2 when fewer connected.
#include "polytope/client/bot_behaviour.h"
#include "polytope/client/client.h"
#include "polytope/client/json_output.h"
#include "polytope/client/udp_socket.h"
#include "range/range_bot.h"
#include "soccer/soccer_bot.h"

#include <CLI/CLI.hpp>
#include <asio.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace
{
using namespace polytope;
using asio::ip::udp;

struct Options
{
    std::string target;
    int clients = 16;
    double seconds = 10.0;
    double inputHz = 10.0;
    double connectSpreadSeconds = 1.0;
    int minConnected = -1; ///< -1: all
    bool json = false;
    std::string room;     ///< empty: the server's first room
    std::string tokenKey; ///< hex; set: each bot gets its own connect token made with it (as a backend would)
    std::uint64_t clientIdBase = 0; ///< token client ids are base + 1 .. base + clients; 0: random base
    std::string behaviour = "push"; ///< a registered bot behaviour (bot_behaviour.h)
};

/// Aligned for the FlatBuffers Verifier; one byte over the limit so oversized datagrams show as such.
struct alignas(8) ReceiveBuffer : std::array<std::uint8_t, protocol::kMaxDatagramBytes + 1>
{
};

struct Bot
{
    Bot(asio::io_context& io, std::size_t botIndex, const client::ClientConfig& config,
        std::unique_ptr<client::BotBehaviour> behaviour)
        : index(botIndex), socket(io), client(config, [this](std::span<const std::uint8_t> d) { send(d); }),
          driver(std::move(behaviour))
    {
    }

    void send(std::span<const std::uint8_t> datagram)
    {
        asio::error_code ec;
        socket.send(asio::buffer(datagram.data(), datagram.size()), 0, ec);
        sendErrors += ec ? 1 : 0; // a lost send is like a lost datagram: the protocol copes
    }

    std::size_t index;
    udp::socket socket;
    client::Client client;
    ReceiveBuffer buffer{};
    client::BotDriver driver;
    double startTime = 0.0; ///< when it is due to connect
    bool started = false;
    double connectedAt = -1.0; ///< seconds; < 0 until connected
    std::uint64_t rttSamplesTaken = 0;
    std::uint64_t sendErrors = 0;
};

double percentile(std::vector<double> values, double p)
{
    if (values.empty())
    {
        return 0.0;
    }
    std::sort(values.begin(), values.end());
    const double rank = p * static_cast<double>(values.size() - 1);
    const auto low = static_cast<std::size_t>(std::floor(rank));
    const std::size_t high = std::min(low + 1, values.size() - 1);
    return values[low] + (values[high] - values[low]) * (rank - static_cast<double>(low));
}

class BotRunner
{
  public:
    BotRunner(const Options& options, const udp::endpoint& server)
        : m_options(options), m_server(server), m_timer(m_io), m_signals(m_io, SIGINT, SIGTERM)
    {
        client::ClientConfig config;
        config.room = options.room;
        protocol::TokenKey key{};
        std::uint64_t idBase = options.clientIdBase;
        if (!options.tokenKey.empty())
        {
            std::string error;
            if (!protocol::parseTokenKeyHex(options.tokenKey, key, error))
            {
                m_setupError = "--token-key: " + error;
                return;
            }
            if (idBase == 0)
            {
                idBase = (static_cast<std::uint64_t>(std::random_device{}()) << 20) + 1;
            }
        }
        const auto unixNow =
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count());
        for (int i = 0; i < options.clients; ++i)
        {
            config.name = "bot-" + std::to_string(i);
            if (!options.tokenKey.empty())
            {
                protocol::TokenRequest request;
                request.clientId = idBase + static_cast<std::uint64_t>(i);
                if (!options.room.empty())
                {
                    request.rooms.push_back(options.room);
                }
                request.serverAddresses.push_back(options.target);
                request.lifetimeSeconds =
                    static_cast<std::uint64_t>(options.seconds + options.connectSpreadSeconds) + 60;
                protocol::ConnectToken token;
                std::string error;
                if (!protocol::makeConnectToken(key, request, unixNow, token, error))
                {
                    m_setupError = "cannot make a connect token: " + error;
                    return;
                }
                config.token = std::move(token);
            }
            const auto index = static_cast<std::size_t>(i);
            // The seed 1000 + index keeps "push" sending what the load generator always sent.
            auto bot = std::make_unique<Bot>(
                m_io, index, config,
                client::makeBotBehaviour(options.behaviour, index, static_cast<std::uint32_t>(1000 + i)));
            bot->startTime =
                options.clients > 1 ? options.connectSpreadSeconds * i / (options.clients - 1) : 0.0;
            m_bots.push_back(std::move(bot));
        }
    }

    /// Runs until --seconds have passed or a signal arrives. Returns false when no socket could be opened.
    bool run(std::string& error)
    {
        if (!m_setupError.empty())
        {
            error = m_setupError;
            return false;
        }
        for (auto& bot : m_bots)
        {
            // An ephemeral port of its own; only the server's datagrams reach it.
            if (!client::connectUdpSocket(bot->socket, m_server, error))
            {
                error = "bot " + std::to_string(bot->index) + ": " + error;
                return false;
            }
        }
        m_signals.async_wait(
            [this](const asio::error_code& ec, int)
            {
                if (!ec)
                {
                    m_interrupted = true;
                    finish();
                }
            });
        m_start = Clock::now();
        for (auto& bot : m_bots)
        {
            startReceive(*bot);
        }
        m_timer.expires_at(m_start);
        m_timer.async_wait([this](const asio::error_code& ec) { onTimer(ec); });
        m_io.run();
        return true;
    }

    void report(bool json) const;
    /// Bots that reached Connected at some point.
    int connected() const { return static_cast<int>(m_connectSeconds.size()); }

  private:
    using Clock = std::chrono::steady_clock;
    static constexpr double kUpdateHz = 120.0;

    double now() const { return std::chrono::duration<double>(Clock::now() - m_start).count(); }

    void startReceive(Bot& bot)
    {
        bot.socket.async_receive(asio::buffer(bot.buffer),
                                 [this, &bot](const asio::error_code& ec, std::size_t bytes)
                                 { onReceive(bot, ec, bytes); });
    }

    void onReceive(Bot& bot, const asio::error_code& ec, std::size_t bytes)
    {
        if (m_finished || ec == asio::error::operation_aborted)
        {
            return;
        }
        // Other errors (ICMP port unreachable before the server listens): keep listening until time-out.
        if (!ec)
        {
            const double t = now();
            bot.client.receive({bot.buffer.data(), bytes}, t);
            // Drain what else is queued without another trip through the reactor.
            for (int more = 0; more < 64; ++more)
            {
                asio::error_code again;
                const std::size_t n = bot.socket.receive(asio::buffer(bot.buffer), 0, again);
                if (again)
                {
                    break;
                }
                bot.client.receive({bot.buffer.data(), n}, t);
            }
            bot.client.update(t); // acknowledge promptly: the ack delay is part of the RTT the server sees
            noteConnected(bot, t);
        }
        startReceive(bot);
    }

    void noteConnected(Bot& bot, double t)
    {
        if (bot.connectedAt < 0.0 && bot.client.isConnected())
        {
            bot.connectedAt = t;
            m_connectSeconds.push_back(t - bot.startTime);
        }
    }

    void onTimer(const asio::error_code& ec)
    {
        if (ec || m_finished)
        {
            return;
        }
        const double t = now();
        for (auto& botPointer : m_bots)
        {
            Bot& bot = *botPointer;
            if (!bot.started)
            {
                if (t >= bot.startTime)
                {
                    bot.started = true;
                    bot.startTime = t;
                    bot.client.connect(t);
                }
                continue;
            }
            bot.client.update(t);
            noteConnected(bot, t);
            bot.driver.frame(bot.client, t, m_options.inputHz);
            collectRtt(bot);
        }
        if (t >= m_options.seconds)
        {
            finish();
            return;
        }
        // A fixed period; when late (a slow pass), the next tick is at once rather than a burst of them.
        const auto period =
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / kUpdateHz));
        m_timer.expires_at(std::max(m_timer.expiry() + period, Clock::now()));
        m_timer.async_wait([this](const asio::error_code& e) { onTimer(e); });
    }

    void collectRtt(Bot& bot)
    {
        const std::uint64_t total = bot.client.stats().rttSamples;
        const auto& recent = bot.client.rttSamples();
        const std::size_t fresh =
            static_cast<std::size_t>(std::min<std::uint64_t>(total - bot.rttSamplesTaken, recent.size()));
        m_rttSeconds.insert(m_rttSeconds.end(), recent.end() - static_cast<std::ptrdiff_t>(fresh),
                            recent.end());
        bot.rttSamplesTaken = total;
    }

    void finish()
    {
        if (m_finished)
        {
            return;
        }
        m_finished = true;
        m_end = now();
        for (auto& bot : m_bots)
        {
            collectRtt(*bot);
            m_finalStates.push_back(bot->client.state());
            bot->client.disconnect(m_end);
            asio::error_code ignored;
            bot->socket.close(ignored);
        }
        m_timer.cancel();
        m_signals.cancel();
        m_io.stop();
    }

    Options m_options;
    std::string m_setupError; ///< from the constructor (bad token key)
    udp::endpoint m_server;
    asio::io_context m_io{1};
    asio::steady_timer m_timer;
    asio::signal_set m_signals;
    std::vector<std::unique_ptr<Bot>> m_bots;
    Clock::time_point m_start;
    double m_end = 0.0;
    bool m_finished = false;
    bool m_interrupted = false;
    std::vector<double> m_connectSeconds;
    std::vector<double> m_rttSeconds;
    std::vector<client::ClientState> m_finalStates;
};

void BotRunner::report(bool json) const
{
    int attempted = 0, denied = 0, failed = 0, pending = 0, lostAfter = 0;
    double snapshotsPerSecond = 0.0, snapshotsMin = -1.0, downKbps = 0.0, upKbps = 0.0;
    double sentLoss = 0.0, receivedLoss = 0.0;
    std::uint64_t inputsSent = 0, inputsAcked = 0, inputsRefused = 0, sendErrors = 0, snapshots = 0;
    std::uint64_t messagesSent = 0, messagesAcked = 0;
    for (std::size_t i = 0; i < m_bots.size(); ++i)
    {
        const Bot& bot = *m_bots[i];
        const client::ClientState state = i < m_finalStates.size() ? m_finalStates[i] : bot.client.state();
        attempted += bot.started ? 1 : 0;
        denied += state == client::ClientState::ConnectionDenied ? 1 : 0;
        failed += state == client::ClientState::ConnectTimedOut ? 1 : 0;
        pending += state == client::ClientState::Connecting ? 1 : 0;
        const client::ClientStats& s = bot.client.stats();
        inputsSent += s.inputsSent;
        inputsAcked += s.inputsAcknowledged;
        inputsRefused += bot.driver.counters().inputsRefused;
        messagesSent += s.gameMessagesSent;
        messagesAcked += s.gameMessagesAcknowledged;
        sendErrors += bot.sendErrors;
        snapshots += s.snapshotsCompleted;
        if (bot.connectedAt < 0.0)
        {
            continue;
        }
        lostAfter += state != client::ClientState::Connected ? 1 : 0;
        // Rates over the time each bot was connected.
        const double seconds = std::max(1e-3, m_end - bot.connectedAt);
        const double rate = static_cast<double>(s.snapshotsCompleted) / seconds;
        snapshotsPerSecond += rate;
        snapshotsMin = snapshotsMin < 0.0 ? rate : std::min(snapshotsMin, rate);
        downKbps += static_cast<double>(s.bytesReceived) * 8.0 / 1000.0 / seconds;
        upKbps += static_cast<double>(s.bytesSent) * 8.0 / 1000.0 / seconds;
        sentLoss += bot.client.lossFraction();
        receivedLoss += bot.client.receiveLossFraction();
    }
    const int ok = connected();
    const double perClient = ok > 0 ? 1.0 / ok : 0.0;
    const double c50 = percentile(m_connectSeconds, 0.50), c95 = percentile(m_connectSeconds, 0.95),
                 c99 = percentile(m_connectSeconds, 0.99), cMax = percentile(m_connectSeconds, 1.0);
    const double r0 = percentile(m_rttSeconds, 0.0) * 1e3, r50 = percentile(m_rttSeconds, 0.50) * 1e3,
                 r95 = percentile(m_rttSeconds, 0.95) * 1e3, r99 = percentile(m_rttSeconds, 0.99) * 1e3;
    snapshotsMin = std::max(0.0, snapshotsMin);
    const double cpuSeconds = static_cast<double>(std::clock()) / CLOCKS_PER_SEC; // this process, all bots
    if (json)
    {
        using client::roundedDecimals;
        nlohmann::ordered_json out;
        out["target"] = m_options.target;
        out["clients"] = m_options.clients;
        out["behaviour"] = m_options.behaviour;
        out["seconds"] = roundedDecimals(m_end, 3);
        out["interrupted"] = m_interrupted;
        out["input_hz"] = client::roundedSignificant(m_options.inputHz, 6);
        out["connects"] = {{"attempted", attempted}, {"succeeded", ok},    {"failed", failed},
                           {"denied", denied},       {"pending", pending}, {"lost_after_connect", lostAfter}};
        out["connect_seconds"] = {{"p50", roundedDecimals(c50, 4)},
                                  {"p95", roundedDecimals(c95, 4)},
                                  {"p99", roundedDecimals(c99, 4)},
                                  {"max", roundedDecimals(cMax, 4)}};
        out["snapshots"] = snapshots;
        out["snapshots_per_second"] = {
            {"total", roundedDecimals(snapshotsPerSecond, 1)},
            {"per_client_mean", roundedDecimals(snapshotsPerSecond * perClient, 2)},
            {"per_client_min", roundedDecimals(snapshotsMin, 2)}};
        out["kbps_down"] = {{"total", roundedDecimals(downKbps, 1)},
                            {"per_client_mean", roundedDecimals(downKbps * perClient, 2)}};
        out["kbps_up"] = {{"total", roundedDecimals(upKbps, 1)},
                          {"per_client_mean", roundedDecimals(upKbps * perClient, 2)}};
        out["rtt_ms"] = {{"samples", m_rttSeconds.size()},
                         {"min", roundedDecimals(r0, 2)},
                         {"p50", roundedDecimals(r50, 2)},
                         {"p95", roundedDecimals(r95, 2)},
                         {"p99", roundedDecimals(r99, 2)}};
        out["loss"] = {{"sent_mean", roundedDecimals(sentLoss * perClient, 4)},
                       {"received_mean", roundedDecimals(receivedLoss * perClient, 4)}};
        out["inputs"] = {{"sent", inputsSent}, {"acked", inputsAcked}, {"refused_locally", inputsRefused}};
        out["game_messages"] = {{"sent", messagesSent}, {"acked", messagesAcked}};
        out["send_errors"] = sendErrors;
        out["cpu_seconds"] = roundedDecimals(cpuSeconds, 2);
        std::printf("%s\n", client::jsonText(out).c_str());
        return;
    }
    std::printf("polytope-bots: %d bots (%s) against %s for %.1f s%s\n", m_options.clients,
                m_options.behaviour.c_str(), m_options.target.c_str(), m_end,
                m_interrupted ? " (interrupted)" : "");
    std::printf("  connects     %d attempted, %d succeeded, %d failed, %d denied, %d still connecting, "
                "%d lost after connecting\n",
                attempted, ok, failed, denied, pending, lostAfter);
    std::printf("  connect time p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms\n", c50 * 1e3, c95 * 1e3,
                c99 * 1e3, cMax * 1e3);
    std::printf("  snapshots    %.1f /s in total, %.2f /s per client (mean), %.2f /s (lowest client)\n",
                snapshotsPerSecond, snapshotsPerSecond * perClient, snapshotsMin);
    std::printf("  down         %.1f kbps in total, %.2f kbps per client\n", downKbps, downKbps * perClient);
    std::printf("  up           %.1f kbps in total, %.2f kbps per client\n", upKbps, upKbps * perClient);
    std::printf("  RTT          min %.2f ms, p50 %.2f ms, p95 %.2f ms, p99 %.2f ms (%zu samples; each "
                "includes up to one\n"
                "               snapshot interval of the server's ack delay)\n",
                r0, r50, r95, r99, m_rttSeconds.size());
    std::printf("  loss         %.2f%% of sent, %.2f%% of received (mean over clients, recent window)\n",
                100.0 * sentLoss * perClient, 100.0 * receivedLoss * perClient);
    std::printf("  inputs       %llu sent, %llu acknowledged\n", static_cast<unsigned long long>(inputsSent),
                static_cast<unsigned long long>(inputsAcked));
    std::printf("  messages     %llu game messages sent, %llu acknowledged\n",
                static_cast<unsigned long long>(messagesSent),
                static_cast<unsigned long long>(messagesAcked));
    std::printf("  bots' CPU    %.2f s (%.0f%% of one core)\n", cpuSeconds,
                100.0 * cpuSeconds / std::max(1e-3, m_end));
    if (sendErrors > 0)
    {
        std::printf("  send errors  %llu\n", static_cast<unsigned long long>(sendErrors));
    }
}

} // namespace

int main(int argc, char** argv)
{
    soccer::registerSoccerBot(); // the example games' bots (examples/soccer/, examples/range/)
    range::registerRangeBot();
    Options options;
    CLI::App app{"polytope-bots: headless clients that load a polytope-server and report what they measured"};
    app.add_option("target", options.target, "the server, HOST:PORT")->required();
    app.add_option("--room", options.room, "room to join (default: the server's first)");
    app.add_option("--clients", options.clients, "bots to run")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    app.add_option("--seconds", options.seconds, "run this long, connects included")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 86400.0));
    app.add_option("--input-hz", options.inputHz,
                   "inputs per second from each bot for steady-rate behaviours such as push (0: none)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 120.0));
    app.add_option("--connect-spread", options.connectSpreadSeconds,
                   "start the bots' connects over this many seconds")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 3600.0));
    app.add_option("--min-connected", options.minConnected, "exit 2 when fewer bots connected (default: all)")
        ->check(CLI::Range(0, 4096));
    app.add_flag("--json", options.json, "print the report as one JSON object");
    app.add_option(
           "--token-key", options.tokenKey,
           "the server's token key (64 hex digits; default: POLYTOPE_TOKEN_KEY): each bot gets a connect "
           "token of its own, as from a backend. Without it, only an --insecure server accepts the bots")
        ->envname("POLYTOPE_TOKEN_KEY");
    app.add_option("--client-id-base", options.clientIdBase,
                   "token client ids are BASE+0 .. BASE+clients-1 (default: random)");
    std::string names;
    for (const std::string& name : client::botBehaviourNames())
    {
        names += (names.empty() ? "" : ", ") + name;
    }
    app.add_option("--behaviour", options.behaviour, "what each bot plays: " + names)->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (!client::makeBotBehaviour(options.behaviour, 0, 1))
    {
        std::fprintf(stderr, "polytope-bots: unknown behaviour '%s' (known: %s)\n", options.behaviour.c_str(),
                     names.c_str());
        return 1;
    }
    const int required = options.minConnected < 0 ? options.clients : options.minConnected;

    try
    {
        std::string error;
        asio::io_context resolverContext;
        udp::endpoint server;
        if (!client::resolveUdpServer(resolverContext, options.target, server, error))
        {
            std::fprintf(stderr, "polytope-bots: %s\n", error.c_str());
            return 1;
        }
        BotRunner runner(options, server);
        if (!runner.run(error))
        {
            std::fprintf(stderr, "polytope-bots: %s\n", error.c_str());
            return 1;
        }
        runner.report(options.json);
        std::fflush(stdout);
        if (runner.connected() < required)
        {
            std::fprintf(stderr, "polytope-bots: %d of %d bots connected (at least %d required)\n",
                         runner.connected(), options.clients, required);
            return 2;
        }
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "polytope-bots: fatal: %s\n", e.what());
        return 1;
    }
    return 0;
}

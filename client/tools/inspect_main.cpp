// polytope-inspect: shows the state of a running polytope-server from afar, records it, replays recordings.
//
//   polytope-inspect HOST:PORT [view options]      live table (tick, bodies, rates, a body list)
//   polytope-inspect HOST:PORT --json              one JSON object per snapshot, for jq
//   ... --snapshots N | --seconds S                stop after N snapshots or S seconds
//   polytope-inspect record HOST:PORT FILE         write what arrives to FILE (--seconds, --snapshots)
//   polytope-inspect replay FILE [view options]    play a recording through the same views (--speed X)
//   polytope-inspect stats FILE                    summarize a recording (with its geometry)
//   polytope-inspect geometry HOST:PORT | FILE     list the geometry a server sends, or a recording holds
// View options: --json, --rows, --refresh-hz, --body ID (follow one body), --filter, --sort. docs/INSPECT.md
// has the details.
//
// Exit status: 0 when done, 1 on bad usage, 2 when no server answers (or it refuses), 3 when the
// connection is lost or the server closes it, 4 when a recording cannot be written or read.
#include "polytope/client/admin.h"
#include "polytope/client/inspect_json.h"
#include "polytope/client/json_output.h"
#include "polytope/client/recording.h"
#include "polytope/client/token_file.h"
#include "polytope/client/udp_client.h"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace
{

using polytope::client::ReceivedSnapshot;
using polytope::client::SnapshotBody;
using polytope::protocol::wire::ShapeKind;

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void onInterrupt(int)
{
    g_interrupted = 1;
}

const char* shapeName(ShapeKind kind)
{
    return polytope::protocol::shapeKindName(kind);
}

// --- body filter and sort ----------------------------------------------------------------------------------

/// `--filter`: comma-separated terms, all of which must hold: shape=KIND[|KIND...], moving, rest,
/// id=N or id=LO-HI, above=Y (height >= Y), below=Y (height < Y).
struct BodyFilter
{
    unsigned shapes = 0; ///< bit per ShapeKind; 0: any
    bool movingOnly = false;
    bool restOnly = false;
    std::uint32_t idLow = 0;
    std::uint32_t idHigh = UINT32_MAX;
    double above = -INFINITY;
    double below = INFINITY;

    bool accepts(const SnapshotBody& b) const
    {
        return (shapes == 0 || (shapes & (1u << static_cast<unsigned>(b.shape))) != 0) &&
               !(movingOnly && b.atRest) && !(restOnly && !b.atRest) && b.id >= idLow && b.id <= idHigh &&
               b.position[1] >= above && b.position[1] < below;
    }
};

bool parseNumber(const std::string& text, double& out)
{
    try
    {
        std::size_t used = 0;
        out = std::stod(text, &used);
        return used == text.size() && std::isfinite(out);
    }
    catch (const std::exception&)
    {
        return false;
    }
}

bool parseId(const std::string& text, std::uint32_t& out)
{
    double value = 0.0;
    if (!parseNumber(text, value) || value < 0.0 || value > UINT32_MAX || value != std::floor(value))
    {
        return false;
    }
    out = static_cast<std::uint32_t>(value);
    return true;
}

bool parseFilter(const std::string& text, BodyFilter& filter, std::string& error)
{
    std::size_t start = 0;
    while (start <= text.size() && !text.empty())
    {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string term = text.substr(start, comma - start);
        start = comma + 1;
        const std::size_t eq = term.find('=');
        const std::string key = term.substr(0, eq);
        const std::string value = eq == std::string::npos ? std::string() : term.substr(eq + 1);
        if (term == "moving")
        {
            filter.movingOnly = true;
        }
        else if (term == "rest" || term == "at-rest")
        {
            filter.restOnly = true;
        }
        else if (key == "shape" && !value.empty())
        {
            std::size_t s = 0;
            while (s <= value.size())
            {
                const std::size_t bar = std::min(value.find('|', s), value.size());
                const std::string name = value.substr(s, bar - s);
                s = bar + 1;
                bool found = false;
                for (unsigned k = 0; k <= static_cast<unsigned>(ShapeKind::MAX); ++k)
                {
                    if (name == shapeName(static_cast<ShapeKind>(k)))
                    {
                        filter.shapes |= 1u << k;
                        found = true;
                    }
                }
                if (!found)
                {
                    error = "unknown shape '" + name + "' (sphere, capsule, box, hull, plane)";
                    return false;
                }
            }
        }
        else if (key == "id" && !value.empty())
        {
            const std::size_t dash = value.find('-');
            const bool ok = dash == std::string::npos
                                ? parseId(value, filter.idLow) && parseId(value, filter.idHigh)
                                : parseId(value.substr(0, dash), filter.idLow) &&
                                      parseId(value.substr(dash + 1), filter.idHigh);
            if (!ok || filter.idLow > filter.idHigh)
            {
                error = "bad id range '" + value + "' (id=N or id=LO-HI)";
                return false;
            }
        }
        else if ((key == "above" || key == "below") && !value.empty())
        {
            double y = 0.0;
            if (!parseNumber(value, y))
            {
                error = "bad height '" + value + "'";
                return false;
            }
            (key == "above" ? filter.above : filter.below) = y;
        }
        else
        {
            error =
                "unknown filter term '" + term + "' (shape=KIND, moving, rest, id=LO-HI, above=Y, below=Y)";
            return false;
        }
        if (comma == text.size())
        {
            break;
        }
    }
    return true;
}

enum class SortKey
{
    Id,
    Speed,
    Height,
    Distance,
};

// --- views -------------------------------------------------------------------------------------------------

struct ViewOptions
{
    bool json = false;
    int rows = 12;
    double refreshHz = 4.0;
    std::int64_t followId = -1; ///< --body
    std::string filterText;
    std::string sortText = "id";
    BodyFilter filter;
    SortKey sort = SortKey::Id;

    bool finish(std::string& error)
    {
        if (!filterText.empty() && !parseFilter(filterText, filter, error))
        {
            return false;
        }
        static const std::map<std::string, SortKey> keys{{"id", SortKey::Id},
                                                         {"speed", SortKey::Speed},
                                                         {"height", SortKey::Height},
                                                         {"distance", SortKey::Distance}};
        const auto it = keys.find(sortText);
        if (it == keys.end())
        {
            error = "unknown sort key '" + sortText + "' (id, speed, height, distance)";
            return false;
        }
        sort = it->second;
        return true;
    }
};

void addViewOptions(CLI::App& app, ViewOptions& options)
{
    app.add_flag("--json", options.json, "print one JSON object per snapshot instead of the table");
    app.add_option("--rows", options.rows, "bodies listed in the table")
        ->capture_default_str()
        ->check(CLI::Range(0, 10000));
    app.add_option("--refresh-hz", options.refreshHz, "table refreshes per second")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 60.0));
    app.add_option("--body", options.followId, "follow one body: its pose and velocity at every snapshot")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{UINT32_MAX}));
    app.add_option("--filter", options.filterText,
                   "list only bodies matching every comma-separated term: shape=KIND[|KIND], moving, rest, "
                   "id=N or id=LO-HI, above=Y, below=Y (height y)");
    app.add_option("--sort", options.sortText,
                   "order of the body list: id, speed (fastest first), height (highest "
                   "first), distance (farthest from the origin first)")
        ->capture_default_str();
}

/// Velocity of each body from the previous snapshot (same id and generation), metres per second.
struct Velocities
{
    std::map<std::uint32_t, std::pair<std::uint32_t, std::array<float, 3>>>
        previous; ///< id -> generation, position
    double previousTime = 0.0;
    bool havePrevious = false;
    std::map<std::uint32_t, std::array<double, 3>> current;

    void update(const ReceivedSnapshot& s)
    {
        current.clear();
        const double dt = s.serverTime - previousTime;
        for (const SnapshotBody& b : s.bodies)
        {
            std::array<double, 3> v{0.0, 0.0, 0.0};
            const auto it = previous.find(b.id);
            if (havePrevious && dt > 0.0 && it != previous.end() && it->second.first == b.generation)
            {
                for (std::size_t i = 0; i < 3; ++i)
                {
                    v[i] = (double(b.position[i]) - it->second.second[i]) / dt;
                }
            }
            current[b.id] = v;
        }
        previous.clear();
        for (const SnapshotBody& b : s.bodies)
        {
            previous[b.id] = {b.generation, b.position};
        }
        previousTime = s.serverTime;
        havePrevious = true;
    }
    std::array<double, 3> of(std::uint32_t id) const
    {
        const auto it = current.find(id);
        return it == current.end() ? std::array<double, 3>{} : it->second;
    }
};

double length(const std::array<double, 3>& v)
{
    return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/// What the table's header line shows about the source.
struct SourceInfo
{
    std::string title; ///< "HOST:PORT  scene 'x'  client N  connected" or "FILE  scene 'x'  (replay)"
    std::uint64_t dropped = 0;
    bool showDropped = true;
};

/// The views shared by live mode and replay: the table, JSON lines, and following one body.
class View
{
  public:
    View(const ViewOptions& options, bool tty) : m_options(options), m_tty(tty) {}

    /// Shows one snapshot; `clock` is the time (seconds) the table refresh is paced by.
    void onSnapshot(const ReceivedSnapshot& s, double clock, const SourceInfo& source)
    {
        m_velocities.update(s);
        m_rateWindow.push_back({s.receiveTime, s.bytes});
        while (m_rateWindow.size() > 1 && m_rateWindow.front().first < s.receiveTime - 1.0)
        {
            m_rateWindow.pop_front();
        }
        if (m_options.followId >= 0)
        {
            printFollow(s);
            return;
        }
        if (m_options.json)
        {
            printJson(s);
            return;
        }
        if (clock >= m_nextTable)
        {
            printTable(s, source);
            m_nextTable = clock + (m_tty ? 1.0 / m_options.refreshHz : 1.0);
        }
    }

    /// Shows the table of the last snapshot if it was not shown (the end of a replay).
    void finish(const ReceivedSnapshot& last, const SourceInfo& source)
    {
        if (!m_options.json && m_options.followId < 0 && m_lastTableTick != last.tick)
        {
            printTable(last, source);
        }
    }

  private:
    void rates(double& snapshotsPerSecond, double& bytesPerSecond) const
    {
        snapshotsPerSecond = bytesPerSecond = 0.0;
        if (m_rateWindow.size() < 2)
        {
            return;
        }
        const double span = m_rateWindow.back().first - m_rateWindow.front().first;
        if (span <= 0.0)
        {
            return;
        }
        std::uint64_t bytes = 0;
        for (std::size_t i = 1; i < m_rateWindow.size(); ++i)
        {
            bytes += m_rateWindow[i].second;
        }
        snapshotsPerSecond = static_cast<double>(m_rateWindow.size() - 1) / span;
        bytesPerSecond = static_cast<double>(bytes) / span;
    }

    void printJson(const ReceivedSnapshot& s) const
    {
        const auto json = polytope::client::snapshotJson(s, [&](const SnapshotBody& b)
                                                         { return m_options.filter.accepts(b); });
        std::printf("%s\n", polytope::client::jsonText(json).c_str());
        std::fflush(stdout);
    }

    void printFollow(const ReceivedSnapshot& s)
    {
        const auto id = static_cast<std::uint32_t>(m_options.followId);
        const auto it = std::lower_bound(s.bodies.begin(), s.bodies.end(), id,
                                         [](const SnapshotBody& b, std::uint32_t v) { return b.id < v; });
        const bool present = it != s.bodies.end() && it->id == id;
        if (m_options.json)
        {
            const auto json =
                polytope::client::followedBodyJson(s, present ? &*it : nullptr, m_velocities.of(id));
            std::printf("%s\n", polytope::client::jsonText(json).c_str());
            std::fflush(stdout);
            return;
        }
        if (!m_followHeader)
        {
            std::printf("%10s %10s %9s %9s %9s  %8s %8s %8s %8s  %8s %8s %8s %8s  %s\n", "tick", "time", "x",
                        "y", "z", "qx", "qy", "qz", "qw", "vx", "vy", "vz", "speed", "state");
            m_followHeader = true;
        }
        if (!present)
        {
            std::printf("%10llu %10.3f  body %u is not in this snapshot\n",
                        static_cast<unsigned long long>(s.tick), s.serverTime, id);
        }
        else
        {
            const auto v = m_velocities.of(id);
            std::printf(
                "%10llu %10.3f %9.3f %9.3f %9.3f  %8.4f %8.4f %8.4f %8.4f  %8.3f %8.3f %8.3f %8.3f  %s %s\n",
                static_cast<unsigned long long>(s.tick), s.serverTime, static_cast<double>(it->position[0]),
                static_cast<double>(it->position[1]), static_cast<double>(it->position[2]),
                static_cast<double>(it->orientation[0]), static_cast<double>(it->orientation[1]),
                static_cast<double>(it->orientation[2]), static_cast<double>(it->orientation[3]), v[0], v[1],
                v[2], length(v), shapeName(it->shape), it->atRest ? "rest" : "moving");
        }
        std::fflush(stdout);
    }

    void printTable(const ReceivedSnapshot& s, const SourceInfo& source)
    {
        if (m_tty)
        {
            std::fputs("\x1b[H\x1b[2J", stdout);
        }
        m_lastTableTick = s.tick;
        double snapshotsPerSecond = 0.0;
        double bytesPerSecond = 0.0;
        rates(snapshotsPerSecond, bytesPerSecond);
        std::printf("polytope-inspect  %s\n", source.title.c_str());
        std::printf("%10s %8s %12s %10s %8s\n", "tick", "bodies", "snapshots/s", "kbit/s", "dropped");
        char dropped[32] = "-";
        if (source.showDropped)
        {
            std::snprintf(dropped, sizeof dropped, "%llu", static_cast<unsigned long long>(source.dropped));
        }
        std::printf("%10llu %8zu %12.1f %10.1f %8s\n", static_cast<unsigned long long>(s.tick),
                    s.bodies.size(), snapshotsPerSecond, bytesPerSecond * 8.0 / 1e3, dropped);
        if (m_options.rows > 0)
        {
            std::vector<const SnapshotBody*> listed;
            for (const SnapshotBody& b : s.bodies)
            {
                // Planes (the ground) only when asked for by shape.
                const bool plane = b.shape == ShapeKind::Plane && m_options.filter.shapes == 0;
                if (!plane && m_options.filter.accepts(b))
                {
                    listed.push_back(&b);
                }
            }
            sortBodies(listed);
            std::printf("\n%6s %4s %-8s %10s %10s %10s %9s  %s\n", "id", "gen", "shape", "x", "y", "z",
                        "speed", "state");
            int shown = 0;
            for (const SnapshotBody* b : listed)
            {
                if (shown++ == m_options.rows)
                {
                    std::printf("   ... %zu bodies listed, %zu in all\n", listed.size(), s.bodies.size());
                    break;
                }
                std::printf("%6u %4u %-8s %10.3f %10.3f %10.3f %9.3f  %s\n", b->id, b->generation,
                            shapeName(b->shape), static_cast<double>(b->position[0]),
                            static_cast<double>(b->position[1]), static_cast<double>(b->position[2]),
                            length(m_velocities.of(b->id)), b->atRest ? "rest" : "moving");
            }
        }
        if (!m_tty)
        {
            std::printf("\n");
        }
        std::fflush(stdout);
    }

    void sortBodies(std::vector<const SnapshotBody*>& bodies) const
    {
        const auto key = [&](const SnapshotBody* b) -> double
        {
            switch (m_options.sort)
            {
            case SortKey::Speed:
                return -length(m_velocities.of(b->id));
            case SortKey::Height:
                return -static_cast<double>(b->position[1]);
            case SortKey::Distance:
                return -length({b->position[0], b->position[1], b->position[2]});
            case SortKey::Id:
                break;
            }
            return static_cast<double>(b->id);
        };
        std::stable_sort(bodies.begin(), bodies.end(),
                         [&](const SnapshotBody* a, const SnapshotBody* b) { return key(a) < key(b); });
    }

    const ViewOptions& m_options;
    bool m_tty;
    double m_nextTable = -INFINITY;
    bool m_followHeader = false;
    std::uint64_t m_lastTableTick = UINT64_MAX;
    Velocities m_velocities;
    std::deque<std::pair<double, std::uint64_t>> m_rateWindow; ///< receive time, bytes
};

// --- live and record
// ----------------------------------------------------------------------------------------

struct ConnectOptions
{
    std::string server;
    std::uint64_t maxSnapshots = 0;
    double seconds = 0.0;
    double timeout = 5.0;
    std::string name = "polytope-inspect";
    std::string room;      ///< empty: the server's first room
    std::string tokenFile; ///< empty: tokenKey, else connect without a token (an --insecure server)
    std::string tokenKey;  ///< hex: make a token with the server's key (operators)
};

void addConnectOptions(CLI::App& app, ConnectOptions& options)
{
    app.add_option("--snapshots", options.maxSnapshots, "exit after this many snapshots (0: no limit)");
    app.add_option("--seconds", options.seconds, "exit after this many seconds (0: no limit)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--timeout", options.timeout, "seconds to wait for the server to answer")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--name", options.name, "client name the server logs")->capture_default_str();
    app.add_option("--room", options.room, "room to watch (default: the server's first)");
    app.add_option("--token", options.tokenFile,
                   "connect token file from the game's backend or polytope-token (default: POLYTOPE_TOKEN; "
                   "none: only an --insecure server accepts the connection)")
        ->envname("POLYTOPE_TOKEN");
    app.add_option("--token-key", options.tokenKey,
                   "without --token: make a token with the server's token key, as a backend would "
                   "(default: POLYTOPE_TOKEN_KEY)")
        ->envname("POLYTOPE_TOKEN_KEY");
}

/// Connects, hands each snapshot to `onSnapshot`, and returns the exit status.
int runConnected(const ConnectOptions& options, bool quietSummary,
                 const std::function<bool(polytope::client::UdpClient&, ReceivedSnapshot&)>& onSnapshot,
                 const std::function<void(polytope::client::UdpClient&)>& onIdle)
{
    std::string host;
    std::uint16_t port = 0;
    std::string error;
    if (!polytope::client::parseHostPort(options.server, host, port, error))
    {
        std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
        return 1;
    }
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);

    polytope::client::ClientConfig config;
    config.name = options.name;
    config.connectTimeoutSeconds = options.timeout;
    config.room = options.room;
    config.spectator = true; // inspecting: no player body
    if (!polytope::client::toolToken(options.tokenFile, options.tokenKey, options.server, options.room,
                                     config.token, error))
    {
        std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
        return 1;
    }
    polytope::client::UdpClient udp(config);
    if (!udp.connect(host, port, error))
    {
        std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
        return 2;
    }
    polytope::client::Client& client = udp.client();
    const double start = udp.now();
    std::uint64_t received = 0;
    ReceivedSnapshot snapshot;
    bool failed = false;
    while (!g_interrupted && !failed)
    {
        udp.poll(0.02);
        while (client.popSnapshot(snapshot))
        {
            ++received;
            if (!onSnapshot(udp, snapshot))
            {
                failed = true;
                break;
            }
            if (options.maxSnapshots > 0 && received >= options.maxSnapshots)
            {
                break;
            }
        }
        if (onIdle)
        {
            onIdle(udp);
        }
        const double now = udp.now();
        if ((options.maxSnapshots > 0 && received >= options.maxSnapshots) ||
            (options.seconds > 0.0 && now - start >= options.seconds) || client.isFinished())
        {
            break;
        }
    }
    if (failed)
    {
        udp.disconnect();
        return 4;
    }

    const auto state = client.state();
    if (state == polytope::client::ClientState::ConnectTimedOut)
    {
        // A server drops connects without a valid token silently (no amplification, nothing to probe).
        std::fprintf(
            stderr,
            "polytope-inspect: no answer from %s within %.1f s (is polytope-server running there? %s)\n",
            options.server.c_str(), options.timeout,
            config.token ? "does it take this token: its key, address, room, expiry, not used before?"
                         : "it needs a connect token unless --insecure: --token FILE or --token-key");
        return 2;
    }
    if (state == polytope::client::ClientState::ConnectionDenied)
    {
        std::fprintf(stderr, "polytope-inspect: %s refused the connection (server full?)\n",
                     options.server.c_str());
        return 2;
    }
    if (state == polytope::client::ClientState::ConnectionLost ||
        state == polytope::client::ClientState::ServerClosed)
    {
        std::fprintf(stderr, "polytope-inspect: %s after %llu snapshots\n",
                     polytope::client::clientStateName(state), static_cast<unsigned long long>(received));
        return 3;
    }
    udp.disconnect();
    if (!quietSummary)
    {
        std::printf("received %llu snapshots in %.1f s\n", static_cast<unsigned long long>(received),
                    udp.now() - start);
    }
    return 0;
}

int runLive(const ConnectOptions& connect, const ViewOptions& view)
{
    const bool tty = !view.json && view.followId < 0 && ::isatty(STDOUT_FILENO);
    View table(view, tty);
    return runConnected(connect, view.json,
                        [&](polytope::client::UdpClient& udp, ReceivedSnapshot& s)
                        {
                            const polytope::client::Client& c = udp.client();
                            SourceInfo source;
                            char title[512];
                            std::snprintf(
                                title, sizeof title,
                                "%s  scene '%s'  client %u  %s  rtt %.1f ms  loss up %.1f%% down %.1f%%",
                                connect.server.c_str(), c.sceneName().c_str(), c.clientId(),
                                polytope::client::clientStateName(c.state()), c.rttSeconds() * 1e3,
                                c.lossFraction() * 100.0, c.receiveLossFraction() * 100.0);
                            source.title = title;
                            source.dropped = c.stats().drops.total();
                            table.onSnapshot(s, udp.now(), source);
                            return true;
                        },
                        {});
}

/// Prints the geometry the client holds and what the catalogue names (polytope-inspect geometry).
void printGeometry(const polytope::client::Client& c, bool json)
{
    // Bodies naming each hash, from the catalogue.
    std::map<std::uint64_t, std::pair<polytope::protocol::wire::ShapeKind, std::size_t>> named;
    for (const auto& [id, entry] : c.catalogue())
    {
        if (entry.geometry != 0 && !entry.removed)
        {
            auto& [kind, bodies] = named[entry.geometry];
            kind = entry.shape;
            ++bodies;
        }
    }
    const polytope::protocol::GeometryAssembler& held = c.geometry();
    for (const auto& [hash, received] : held.complete())
    {
        named.emplace(hash, std::make_pair(received.kind, std::size_t{0}));
    }
    if (!json)
    {
        std::printf("%-18s %-12s %10s %7s %7s  %s\n", "hash", "kind", "bytes", "slices", "bodies", "state");
    }
    else
    {
        std::printf("{\"geometry\":[");
    }
    bool first = true;
    for (const auto& [hash, info] : named)
    {
        const polytope::protocol::ReceivedGeometry* received = held.find(hash);
        const std::size_t bytes = received ? received->bytes.size() : 0;
        const char* state = received ? "complete" : "missing";
        if (json)
        {
            std::printf(
                "%s{\"hash\":\"%016llx\",\"kind\":\"%s\",\"bytes\":%zu,\"bodies\":%zu,\"complete\":%s}",
                first ? "" : ",", static_cast<unsigned long long>(hash),
                polytope::protocol::shapeKindName(info.first), bytes, info.second,
                received ? "true" : "false");
        }
        else
        {
            std::printf("%016llx %-12s %10zu %7u %7zu  %s\n", static_cast<unsigned long long>(hash),
                        polytope::protocol::shapeKindName(info.first), bytes,
                        polytope::protocol::geometrySliceCount(bytes), info.second, state);
        }
        first = false;
    }
    const polytope::protocol::GeometryReceiveStats& stats = held.stats();
    if (json)
    {
        std::printf("],\"memory_bytes\":%zu,\"slices\":%llu,\"duplicates\":%llu,\"refused\":%llu}\n",
                    held.memoryBytes(), static_cast<unsigned long long>(stats.slicesAccepted),
                    static_cast<unsigned long long>(stats.slicesDuplicate),
                    static_cast<unsigned long long>(stats.refusedTotal()));
        return;
    }
    std::printf("%zu geometries, %zu bytes held; %llu slices taken, %llu duplicates, %llu refused",
                named.size(), held.memoryBytes(), static_cast<unsigned long long>(stats.slicesAccepted),
                static_cast<unsigned long long>(stats.slicesDuplicate),
                static_cast<unsigned long long>(stats.refusedTotal()));
    for (std::size_t e = 1; e < polytope::protocol::kGeometryErrorCount; ++e)
    {
        if (stats.refused[e] != 0)
        {
            std::printf(
                " %s %llu",
                polytope::protocol::geometryErrorName(static_cast<polytope::protocol::GeometryError>(e)),
                static_cast<unsigned long long>(stats.refused[e]));
        }
    }
    std::printf("\n");
}

/// Connects until every geometry the catalogue names has arrived (or `seconds` pass), then lists them.
int runGeometry(const ConnectOptions& connect, double seconds, bool json)
{
    double start = -1.0;
    bool printed = false;
    const int status = runConnected(
        connect, true,
        [&](polytope::client::UdpClient& udp, ReceivedSnapshot&)
        {
            const polytope::client::Client& c = udp.client();
            start = start < 0.0 ? udp.now() : start;
            bool complete = true;
            for (const auto& [id, entry] : c.catalogue())
            {
                complete = complete && (entry.geometry == 0 || c.geometry().find(entry.geometry) != nullptr);
            }
            if (complete || udp.now() - start >= seconds)
            {
                printGeometry(c, json);
                printed = true;
                return false;
            }
            return true;
        },
        {});
    // The callback stops the session once it printed: that is success, not a failed frame.
    return printed && status == 4 ? 0 : status;
}

/// `state`: prints the room's game state (and this spectator's own) as JSON, once the room state arrives,
/// or every time it changes with --follow, until --seconds.
int runState(const ConnectOptions& connect, const std::string& schemaPath, bool follow, double seconds)
{
    polytope::client::GameStateDecoder decoder;
    if (!schemaPath.empty())
    {
        std::string text;
        std::string error;
        std::ifstream file(schemaPath, std::ios::binary);
        std::ostringstream read;
        read << file.rdbuf();
        if (!file || !decoder.setSchema(read.str(), error))
        {
            std::fprintf(stderr, "polytope-inspect: %s: %s\n", schemaPath.c_str(),
                         file ? error.c_str() : "cannot be read");
            return 1;
        }
    }
    double start = -1.0;
    std::uint32_t printedRoom = 0;
    std::uint32_t printedOwn = 0;
    const int status =
        runConnected(connect, true,
                     [&](polytope::client::UdpClient& udp, ReceivedSnapshot& s)
                     {
                         const polytope::client::Client& c = udp.client();
                         start = start < 0.0 ? udp.now() : start;
                         const bool changed =
                             c.roomState().version != printedRoom || c.playerState().version != printedOwn;
                         if (changed && c.roomState().version != 0)
                         {
                             const auto json = polytope::client::gameStatesJson(s.tick, c.roomState(),
                                                                                c.playerState(), decoder);
                             std::printf("%s\n", polytope::client::jsonText(json).c_str());
                             std::fflush(stdout);
                             printedRoom = c.roomState().version;
                             printedOwn = c.playerState().version;
                             if (!follow)
                             {
                                 return false;
                             }
                         }
                         if (udp.now() - start >= seconds)
                         {
                             if (printedRoom == 0)
                             {
                                 std::fprintf(stderr,
                                              "polytope-inspect: no room state within %.1f s (does the "
                                              "room run a game logic?)\n",
                                              seconds);
                             }
                             return false;
                         }
                         return true;
                     },
                     {});
    // The callback stops the session when done (printed, or out of time): success once a state was printed.
    return status == 4 ? (printedRoom != 0 ? 0 : 4) : status;
}

int runRecord(const ConnectOptions& connect, const std::string& path)
{
    polytope::client::RecordingWriter writer;
    std::string error;
    double nextStatus = 0.0;
    const bool tty = ::isatty(STDERR_FILENO);
    const int status = runConnected(
        connect, true,
        [&](polytope::client::UdpClient& udp, ReceivedSnapshot& s)
        {
            if (!writer.isOpen() &&
                !writer.open(
                    path, polytope::client::RecordingHeader::fromClient(udp.client(), connect.server), error))
            {
                std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
                return false;
            }
            // Geometry the client completed since the last frame goes first: a replay finds what frames name.
            if (!writer.writeGeometry(udp.client().geometry(), error) || !writer.write(s, error))
            {
                std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
                return false;
            }
            return true;
        },
        [&](polytope::client::UdpClient& udp)
        {
            const double now = udp.now();
            if (now >= nextStatus)
            {
                std::fprintf(stderr, "%srecording %s: %llu snapshots, %llu geometries, %.1f kB%s",
                             tty ? "\r" : "", path.c_str(),
                             static_cast<unsigned long long>(writer.framesWritten()),
                             static_cast<unsigned long long>(writer.geometryWritten()),
                             static_cast<double>(writer.bytesWritten()) / 1e3, tty ? "   " : "\n");
                nextStatus = now + (tty ? 0.25 : 5.0);
            }
        });
    const std::uint64_t frames = writer.framesWritten();
    if (writer.isOpen() && !writer.close(error))
    {
        std::fprintf(stderr, "\npolytope-inspect: %s\n", error.c_str());
        return 4;
    }
    std::fprintf(stderr, "%s", tty ? "\n" : "");
    if (frames > 0)
    {
        std::printf("recorded %llu snapshots to %s\n", static_cast<unsigned long long>(frames), path.c_str());
    }
    else if (status == 0)
    {
        std::printf("no snapshot arrived; %s not written\n", path.c_str());
    }
    return status;
}

// --- replay and stats
// ---------------------------------------------------------------------------------------

bool openRecording(polytope::client::RecordingReader& reader, const std::string& path)
{
    std::string error;
    if (!reader.open(path, error))
    {
        std::fprintf(stderr, "polytope-inspect: %s: %s\n", path.c_str(), error.c_str());
        return false;
    }
    if (!reader.warning().empty())
    {
        std::fprintf(stderr, "polytope-inspect: %s: %s\n", path.c_str(), reader.warning().c_str());
    }
    return true;
}

int runReplay(const std::string& path, double speed, const ViewOptions& view)
{
    polytope::client::RecordingReader reader;
    if (!openRecording(reader, path))
    {
        return 4;
    }
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    const bool tty = !view.json && view.followId < 0 && ::isatty(STDOUT_FILENO);
    const bool progressTty = ::isatty(STDERR_FILENO);
    View table(view, tty);
    SourceInfo source;
    source.title =
        path + "  scene '" + reader.header().scene + "'  from " + reader.header().server + "  (replay)";
    source.showDropped = false;
    const std::size_t count = reader.frameCount();
    // Progress on stderr for long replays: more than 10 s of playing, or more than 2000 frames.
    double span = 0.0;
    if (count > 1)
    {
        span = reader.index().back().serverTime - reader.index().front().serverTime;
    }
    const bool showProgress = (speed > 0.0 && span / speed > 10.0) || count > 2000;
    const auto started = std::chrono::steady_clock::now();
    ReceivedSnapshot frame;
    std::string error;
    double firstReceive = 0.0;
    int lastPercent = -1;
    std::uint64_t corrupt = 0;
    for (std::size_t i = 0; i < count && !g_interrupted; ++i)
    {
        if (!reader.readFrame(i, frame, error))
        {
            std::fprintf(stderr, "polytope-inspect: %s: %s (skipped)\n", path.c_str(), error.c_str());
            ++corrupt;
            continue;
        }
        if (i == 0)
        {
            firstReceive = frame.receiveTime;
        }
        const double at = frame.receiveTime - firstReceive; // recorded seconds since the first frame
        if (speed > 0.0)
        {
            std::this_thread::sleep_until(started + std::chrono::duration<double>(at / speed));
        }
        table.onSnapshot(frame, at, source);
        const int percent = static_cast<int>(100 * (i + 1) / count);
        if (showProgress && percent != lastPercent && (progressTty || percent % 10 == 0))
        {
            std::fprintf(stderr, "%sreplay %s: %3d%% (%zu of %zu snapshots)%s", progressTty ? "\r" : "",
                         path.c_str(), percent, i + 1, count, progressTty ? "" : "\n");
            lastPercent = percent;
        }
    }
    if (count > 0 && !g_interrupted && corrupt < count)
    {
        table.finish(frame, source);
    }
    if (showProgress && progressTty)
    {
        std::fprintf(stderr, "\n");
    }
    return corrupt > 0 ? 4 : 0;
}

/// The geometry table of a recording (stats, geometry FILE): hash, kind, bytes, distinct bodies naming it.
void printRecordingGeometry(const std::vector<polytope::client::RecordingSummary::Geometry>& geometry)
{
    std::printf("%-18s %-12s %10s %7s  %s\n", "hash", "kind", "bytes", "bodies", "state");
    for (const auto& g : geometry)
    {
        std::printf("%016llx %-12s %10zu %7llu  %s\n", static_cast<unsigned long long>(g.hash),
                    polytope::protocol::shapeKindName(g.kind), g.bytes,
                    static_cast<unsigned long long>(g.bodies),
                    g.stored ? "stored" : "missing (named, never received by the recorder)");
    }
}

/// `geometry FILE`: the geometry a recording holds and the bodies naming it (reads every frame).
int runRecordingGeometry(const std::string& path, bool json)
{
    polytope::client::RecordingReader reader;
    if (!openRecording(reader, path))
    {
        return 4;
    }
    const auto s = polytope::client::summarizeRecording(reader);
    if (json)
    {
        const auto all =
            polytope::client::recordingSummaryJson(path, reader.header(), s, reader.indexRebuilt());
        nlohmann::ordered_json out;
        out["file"] = path;
        out["geometry"] = all.at("geometry");
        out["geometry_bytes"] = reader.geometryBytes();
        std::printf("%s\n", polytope::client::jsonText(out).c_str());
    }
    else
    {
        printRecordingGeometry(s.geometry);
        std::printf("%zu geometries stored, %zu bytes\n", reader.geometry().size(), reader.geometryBytes());
    }
    return s.corruptFrames > 0 ? 4 : 0;
}

int runStats(const std::string& path, bool json)
{
    polytope::client::RecordingReader reader;
    if (!openRecording(reader, path))
    {
        return 4;
    }
    const bool progressTty = ::isatty(STDERR_FILENO);
    const bool showProgress = reader.frameCount() > 20000;
    const auto s = polytope::client::summarizeRecording(
        reader,
        [&](std::size_t done, std::size_t all)
        {
            if (showProgress && all > 0)
            {
                std::fprintf(stderr, "%sreading %s: %3zu%%%s", progressTty ? "\r" : "", path.c_str(),
                             100 * done / all, progressTty ? (done == all ? "\n" : "") : "\n");
            }
        });
    const auto& h = reader.header();
    if (json)
    {
        std::printf("%s\n", polytope::client::jsonText(
                                polytope::client::recordingSummaryJson(path, h, s, reader.indexRebuilt()))
                                .c_str());
    }
    else
    {
        std::printf("recording     %s%s\n", path.c_str(),
                    reader.indexRebuilt() ? "  (not closed: index rebuilt)" : "");
        std::printf("scene         '%s' from %s, %d ticks/s, %d snapshots/s announced\n", h.scene.c_str(),
                    h.server.c_str(), h.tickRateHz, h.snapshotRateHz);
        std::printf("snapshots     %llu, ticks %llu .. %llu\n", static_cast<unsigned long long>(s.frames),
                    static_cast<unsigned long long>(s.firstTick),
                    static_cast<unsigned long long>(s.lastTick));
        std::printf("duration      %.3f s of server time (%.3f s received), %.2f snapshots/s\n",
                    s.durationSeconds, s.receiveSpanSeconds, s.snapshotsPerSecond);
        std::printf("bodies        mean %.1f, max %zu\n", s.meanBodies, s.maxBodies);
        std::printf("bytes         %llu received as snapshots (%.1f kbit/s), file %llu\n",
                    static_cast<unsigned long long>(s.snapshotBytes),
                    s.durationSeconds > 0.0
                        ? static_cast<double>(s.snapshotBytes) * 8.0 / 1e3 / s.durationSeconds
                        : 0.0,
                    static_cast<unsigned long long>(s.fileBytes));
        std::printf("gaps          %llu (%llu snapshots missing; largest %.3f s)\n",
                    static_cast<unsigned long long>(s.gaps),
                    static_cast<unsigned long long>(s.missingSnapshots), s.largestGapSeconds);
        if (s.corruptFrames > 0)
        {
            std::printf("corrupt       %llu frames could not be read\n",
                        static_cast<unsigned long long>(s.corruptFrames));
        }
        std::printf("geometry      %zu stored, %zu bytes%s\n", reader.geometry().size(),
                    reader.geometryBytes(), reader.version() < 2 ? " (version 1 recording: none kept)" : "");
        if (!s.geometry.empty())
        {
            printRecordingGeometry(s.geometry);
        }
    }
    return s.corruptFrames > 0 ? 4 : 0;
}

/// `admin HOST:PORT COMMAND [ARGS...]`: one authenticated admin command; prints the server's reply.
int runAdmin(const std::string& server, const std::vector<std::string>& words, std::string key,
             const std::string& room, double timeout)
{
    namespace wire = polytope::protocol::wire;
    if (key.empty())
    {
        if (const char* fromEnvironment = std::getenv("POLYTOPE_ADMIN_KEY"))
        {
            key = fromEnvironment;
        }
    }
    if (key.empty())
    {
        std::fprintf(stderr,
                     "polytope-inspect: admin needs the server's admin key (--key or POLYTOPE_ADMIN_KEY)\n");
        return 1;
    }
    polytope::protocol::AdminCommandFields command;
    command.room = room;
    const std::string& verb = words.empty() ? std::string() : words.front();
    const auto number = [&](std::size_t i, double& out)
    {
        if (i >= words.size())
        {
            return false;
        }
        char* end = nullptr;
        out = std::strtod(words[i].c_str(), &end);
        return end != words[i].c_str() && *end == '\0' && std::isfinite(out);
    };
    double a = 0.0, b = 0.0, c = 0.0;
    bool ok = true;
    if (verb == "status" && words.size() == 1)
    {
        command.op = wire::AdminOp::Status;
    }
    else if (verb == "pause" && words.size() == 1)
    {
        command.op = wire::AdminOp::Pause;
    }
    else if (verb == "resume" && words.size() == 1)
    {
        command.op = wire::AdminOp::Resume;
    }
    else if (verb == "reset" && words.size() == 1)
    {
        command.op = wire::AdminOp::Reset;
    }
    else if (verb == "step" && words.size() == 2 && number(1, a) && a >= 1 && a <= 3600)
    {
        command.op = wire::AdminOp::Step;
        command.count = static_cast<std::uint32_t>(a);
    }
    else if (verb == "load" && words.size() == 2)
    {
        command.op = wire::AdminOp::LoadScene;
        command.text = words[1];
    }
    else if (verb == "gravity" && words.size() == 4 && number(1, a) && number(2, b) && number(3, c))
    {
        command.op = wire::AdminOp::SetGravity;
        command.vector = {static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)};
    }
    else if (verb == "timescale" && words.size() == 2 && number(1, a))
    {
        command.op = wire::AdminOp::SetTimeScale;
        command.value = static_cast<float>(a);
    }
    else if (verb == "kick" && words.size() == 2 && number(1, a) && a >= 1 && a <= 4294967295.0)
    {
        command.op = wire::AdminOp::Kick;
        command.count = static_cast<std::uint32_t>(a);
    }
    else if (verb == "reload" && words.size() == 1)
    {
        command.op = wire::AdminOp::ReloadLogic;
    }
    else
    {
        ok = false;
    }
    if (!ok)
    {
        std::fprintf(
            stderr,
            "polytope-inspect: admin commands: status | pause | resume | step N | reset | load SCENE | "
            "gravity X Y Z | timescale S | kick CLIENT_ID | reload\n");
        return 1;
    }
    std::string host;
    std::uint16_t port = 0;
    std::string error;
    if (!polytope::client::parseHostPort(server, host, port, error))
    {
        std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
        return 1;
    }
    polytope::client::AdminOutcome outcome;
    if (!polytope::client::sendAdminCommand(host, port, command, key, timeout, outcome, error))
    {
        std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
        return 2;
    }
    if (!outcome.replied)
    {
        std::fprintf(
            stderr, "polytope-inspect: no reply from %s within %.1f s (wrong key, admin off, or no server)\n",
            server.c_str(), timeout);
        return 2;
    }
    std::printf("%s\n", outcome.message.c_str());
    return outcome.ok ? 0 : 5;
}

} // namespace

int main(int argc, char** argv)
{
    ConnectOptions live;
    ViewOptions view;

    CLI::App app{
        "polytope-inspect: shows the state of a running polytope-server, records it and replays recordings"};
    app.footer("Without a subcommand: the live view of HOST:PORT. See docs/INSPECT.md.");
    app.add_option("server", live.server, "HOST:PORT of the server (live view)");
    addConnectOptions(app, live);
    addViewOptions(app, view);

    ConnectOptions recordOptions;
    std::string recordFile;
    CLI::App* record =
        app.add_subcommand("record", "record the snapshots of HOST:PORT to FILE (Ctrl-C stops)");
    record->add_option("server", recordOptions.server, "HOST:PORT of the server")->required();
    record->add_option("file", recordFile, "recording to write (replaced)")->required();
    addConnectOptions(*record, recordOptions);

    std::string replayFile;
    double speed = 1.0;
    ViewOptions replayView;
    CLI::App* replay = app.add_subcommand("replay", "play a recording through the live views");
    replay->add_option("file", replayFile, "recording to play")->required();
    replay->add_option("--speed", speed, "playback speed (1: as recorded, 0: as fast as possible)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    addViewOptions(*replay, replayView);

    std::string statsFile;
    bool statsJson = false;
    CLI::App* stats = app.add_subcommand("stats", "summarize a recording");
    stats->add_option("file", statsFile, "recording to read")->required();
    stats->add_flag("--json", statsJson, "print the summary as one JSON object");
    ConnectOptions geometryOptions;
    bool geometryJson = false;
    CLI::App* geometry = app.add_subcommand(
        "geometry", "list the hulls, meshes, heightfields and compounds HOST:PORT sends, or a recording FILE "
                    "holds (hash, kind, size, bodies)");
    geometry->add_option("server", geometryOptions.server, "HOST:PORT of the server, or a recording file")
        ->required();
    geometry->add_flag("--json", geometryJson, "print the list as one JSON object");
    addConnectOptions(*geometry, geometryOptions);

    ConnectOptions stateOptions;
    std::string stateSchema;
    bool stateFollow = false;
    CLI::App* state = app.add_subcommand(
        "state",
        "print the room's game state (docs/GAME_RULES.md) as JSON: the game's FlatBuffers table with "
        "--schema, JSON text as it is, other bytes in hex");
    state->add_option("server", stateOptions.server, "HOST:PORT of the server")->required();
    state->add_option("--schema", stateSchema, "the game's .fbs schema of its state (root_type: the table)");
    state->add_flag("--follow", stateFollow, "print every change until --seconds (default 10 s)");
    addConnectOptions(*state, stateOptions);

    std::string adminServer;
    std::vector<std::string> adminWords;
    std::string adminKey;
    std::string adminRoom;
    double adminTimeout = 2.0;
    CLI::App* admin = app.add_subcommand(
        "admin", "send an authenticated admin command: status, pause, resume, step N, reset, load SCENE, "
                 "gravity X Y Z, timescale S, kick CLIENT_ID, reload");
    admin->add_option("server", adminServer, "HOST:PORT of the server")->required();
    admin->add_option("command", adminWords, "the command and its arguments")->required();
    admin->add_option("--key", adminKey, "the server's admin key (default: POLYTOPE_ADMIN_KEY)");
    admin->add_option("--room", adminRoom, "room to act on (default: the server's first)");
    admin->add_option("--timeout", adminTimeout, "seconds to wait for the reply")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.require_subcommand(0, 1);

    CLI11_PARSE(app, argc, argv);

    std::string error;
    if (admin->parsed())
    {
        return runAdmin(adminServer, adminWords, adminKey, adminRoom, adminTimeout);
    }
    if (geometry->parsed())
    {
        std::error_code ignored;
        if (std::filesystem::is_regular_file(geometryOptions.server, ignored))
        {
            return runRecordingGeometry(geometryOptions.server, geometryJson);
        }
        // --seconds bounds the wait for geometry here (10 s when not given).
        return runGeometry(geometryOptions, geometryOptions.seconds > 0.0 ? geometryOptions.seconds : 10.0,
                           geometryJson);
    }
    if (state->parsed())
    {
        return runState(stateOptions, stateSchema, stateFollow,
                        stateOptions.seconds > 0.0 ? stateOptions.seconds : 10.0);
    }
    if (record->parsed())
    {
        return runRecord(recordOptions, recordFile);
    }
    if (replay->parsed())
    {
        if (!replayView.finish(error))
        {
            std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
            return 1;
        }
        return runReplay(replayFile, speed, replayView);
    }
    if (stats->parsed())
    {
        return runStats(statsFile, statsJson);
    }
    if (live.server.empty())
    {
        std::fprintf(stderr,
                     "polytope-inspect: HOST:PORT is required (or a subcommand: record, replay, stats)\n%s",
                     app.help().c_str());
        return 1;
    }
    if (!view.finish(error))
    {
        std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
        return 1;
    }
    return runLive(live, view);
}

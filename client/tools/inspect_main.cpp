// polytope-inspect: shows the state of a running polytope-server from afar.
//
//   polytope-inspect HOST:PORT                 live table (tick, bodies, rates, a body list)
//   polytope-inspect HOST:PORT --json          one JSON object per snapshot, for jq
//   ... --snapshots N | --seconds S            stop after N snapshots or S seconds
//
// Exit status: 0 when done, 1 on bad usage, 2 when no server answers (or it refuses), 3 when the
// connection is lost or the server closes it.
#include "polytope/client/udp_client.h"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>

namespace
{

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void onInterrupt(int) { g_interrupted = 1; }

const char* shapeName(polytope::protocol::wire::ShapeKind kind)
{
    switch (kind)
    {
    case polytope::protocol::wire::ShapeKind::Sphere:
        return "sphere";
    case polytope::protocol::wire::ShapeKind::Capsule:
        return "capsule";
    case polytope::protocol::wire::ShapeKind::Box:
        return "box";
    case polytope::protocol::wire::ShapeKind::Hull:
        return "hull";
    case polytope::protocol::wire::ShapeKind::Plane:
        return "plane";
    }
    return "unknown";
}

void printJson(const polytope::client::ReceivedSnapshot& snapshot)
{
    std::string line;
    line.reserve(128 + snapshot.bodies.size() * 160);
    char buffer[256];
    std::snprintf(buffer, sizeof buffer, "{\"tick\":%llu,\"time\":%.6f,\"bodies\":[",
                  static_cast<unsigned long long>(snapshot.tick), snapshot.serverTime);
    line += buffer;
    bool first = true;
    for (const auto& b : snapshot.bodies)
    {
        std::snprintf(buffer, sizeof buffer,
                      "%s{\"id\":%u,\"generation\":%u,\"shape\":\"%s\",\"at_rest\":%s,"
                      "\"position\":[%.9g,%.9g,%.9g],\"orientation\":[%.9g,%.9g,%.9g,%.9g]}",
                      first ? "" : ",", b.id, b.generation, shapeName(b.shape), b.atRest ? "true" : "false",
                      static_cast<double>(b.position[0]), static_cast<double>(b.position[1]),
                      static_cast<double>(b.position[2]), static_cast<double>(b.orientation[0]),
                      static_cast<double>(b.orientation[1]), static_cast<double>(b.orientation[2]),
                      static_cast<double>(b.orientation[3]));
        line += buffer;
        first = false;
    }
    line += "]}\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
}

struct Rates
{
    double lastTime = 0.0;
    std::uint64_t lastSnapshots = 0;
    std::uint64_t lastBytes = 0;
    double snapshotsPerSecond = 0.0;
    double bytesPerSecond = 0.0;

    void sample(double now, std::uint64_t snapshots, std::uint64_t bytes)
    {
        const double dt = now - lastTime;
        if (dt <= 0.0)
        {
            return;
        }
        snapshotsPerSecond = static_cast<double>(snapshots - lastSnapshots) / dt;
        bytesPerSecond = static_cast<double>(bytes - lastBytes) / dt;
        lastTime = now;
        lastSnapshots = snapshots;
        lastBytes = bytes;
    }
};

void printTable(const std::string& server, const polytope::client::Client& client,
                const polytope::client::ReceivedSnapshot& snapshot, const Rates& rates, int rows, bool tty)
{
    const auto& stats = client.stats();
    if (tty)
    {
        std::fputs("\x1b[H\x1b[2J", stdout);
    }
    std::printf("polytope-inspect  %s  scene '%s'  client %u  %s\n", server.c_str(), client.sceneName().c_str(),
                client.clientId(), polytope::client::clientStateName(client.state()));
    std::printf("%10s %8s %12s %10s %8s\n", "tick", "bodies", "snapshots/s", "bytes/s", "dropped");
    std::printf("%10llu %8zu %12.1f %10.0f %8llu\n", static_cast<unsigned long long>(snapshot.tick),
                snapshot.bodies.size(), rates.snapshotsPerSecond, rates.bytesPerSecond,
                static_cast<unsigned long long>(stats.drops.total()));
    if (rows > 0)
    {
        std::printf("\n%6s %4s %-8s %10s %10s %10s  %s\n", "id", "gen", "shape", "x", "y", "z", "state");
        int shown = 0;
        for (const auto& b : snapshot.bodies)
        {
            if (b.shape == polytope::protocol::wire::ShapeKind::Plane)
            {
                continue;
            }
            if (shown++ == rows)
            {
                std::printf("   ... %zu bodies in all\n", snapshot.bodies.size());
                break;
            }
            std::printf("%6u %4u %-8s %10.3f %10.3f %10.3f  %s\n", b.id, b.generation, shapeName(b.shape),
                        static_cast<double>(b.position[0]), static_cast<double>(b.position[1]),
                        static_cast<double>(b.position[2]), b.atRest ? "rest" : "moving");
        }
    }
    if (!tty)
    {
        std::printf("\n");
    }
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv)
{
    std::string server;
    bool json = false;
    std::uint64_t maxSnapshots = 0;
    double seconds = 0.0;
    double timeout = 5.0;
    int rows = 12;
    double refreshHz = 4.0;
    std::string name = "polytope-inspect";

    CLI::App app{"polytope-inspect: shows the state of a running polytope-server"};
    app.add_option("server", server, "HOST:PORT of the server")->required();
    app.add_flag("--json", json, "print one JSON object per snapshot instead of the table");
    app.add_option("--snapshots", maxSnapshots, "exit after this many snapshots (0: no limit)");
    app.add_option("--seconds", seconds, "exit after this many seconds (0: no limit)")->check(CLI::NonNegativeNumber);
    app.add_option("--timeout", timeout, "seconds to wait for the server to answer")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--rows", rows, "bodies listed in the table")->capture_default_str()->check(CLI::Range(0, 10000));
    app.add_option("--refresh-hz", refreshHz, "table refreshes per second")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 60.0));
    app.add_option("--name", name, "client name the server logs")->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    std::string host;
    std::uint16_t port = 0;
    std::string error;
    if (!polytope::client::parseHostPort(server, host, port, error))
    {
        std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
        return 1;
    }

    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);

    polytope::client::ClientConfig config;
    config.name = name;
    config.connectTimeoutSeconds = timeout;
    polytope::client::UdpClient udp(config);
    if (!udp.connect(host, port, error))
    {
        std::fprintf(stderr, "polytope-inspect: %s\n", error.c_str());
        return 2;
    }
    polytope::client::Client& client = udp.client();

    const bool tty = !json && ::isatty(STDOUT_FILENO);
    const double start = udp.now();
    double nextTable = start;
    Rates rates;
    rates.lastTime = start;
    std::uint64_t received = 0;
    polytope::client::ReceivedSnapshot snapshot;
    polytope::client::ReceivedSnapshot latest;
    bool haveLatest = false;

    while (!g_interrupted)
    {
        udp.poll(0.02);
        while (client.popSnapshot(snapshot))
        {
            ++received;
            if (json)
            {
                printJson(snapshot);
            }
            latest = std::move(snapshot);
            haveLatest = true;
            if (maxSnapshots > 0 && received >= maxSnapshots)
            {
                break;
            }
        }
        const double now = udp.now();
        if (!json && haveLatest && now >= nextTable)
        {
            rates.sample(now, client.stats().snapshotsCompleted, client.stats().bytesReceived);
            printTable(server, client, latest, rates, rows, tty);
            nextTable = now + (tty ? 1.0 / refreshHz : 1.0);
        }
        if ((maxSnapshots > 0 && received >= maxSnapshots) || (seconds > 0.0 && now - start >= seconds))
        {
            break;
        }
        if (client.isFinished())
        {
            break;
        }
    }

    const auto state = client.state();
    if (state == polytope::client::ClientState::ConnectTimedOut)
    {
        std::fprintf(stderr, "polytope-inspect: no answer from %s within %.1f s (is polytope-server running there?)\n",
                     server.c_str(), timeout);
        return 2;
    }
    if (state == polytope::client::ClientState::ConnectionDenied)
    {
        std::fprintf(stderr, "polytope-inspect: %s refused the connection (server full?)\n", server.c_str());
        return 2;
    }
    if (state == polytope::client::ClientState::ConnectionLost || state == polytope::client::ClientState::ServerClosed)
    {
        std::fprintf(stderr, "polytope-inspect: %s after %llu snapshots\n",
                     polytope::client::clientStateName(state), static_cast<unsigned long long>(received));
        return 3;
    }
    udp.disconnect();
    if (!json)
    {
        std::printf("received %llu snapshots in %.1f s\n", static_cast<unsigned long long>(received),
                    udp.now() - start);
    }
    return 0;
}

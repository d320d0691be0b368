// polytope-server: the authoritative server core, independent of sockets and clocks.
//
// Time and transport are injected: the owner calls receive() for every datagram and update() with the
// current time, and the server sends through the SendFunction it was given. The same core runs behind real
// UDP sockets (UdpServer) and, in tests, behind an in-process transport with a test clock.
#pragma once

#include "polytope/physics/world.h"
#include "polytope/protocol/address.h"
#include "polytope/protocol/packet.h"
#include "polytope/server/server_config.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace polytope::server
{

using SendFunction = std::function<void(const protocol::Address& to, std::span<const std::uint8_t> datagram)>;

/// Counters for logs, tests and (later) /metrics.
struct ServerMetrics
{
    std::uint64_t ticks = 0;
    std::uint64_t overruns = 0;      ///< updates that hit maxCatchUpTicks and dropped simulation time
    std::uint64_t datagramsIn = 0;   ///< accepted datagrams
    std::uint64_t bytesIn = 0;       ///< of every received datagram, accepted or not
    std::uint64_t datagramsOut = 0;
    std::uint64_t bytesOut = 0;
    std::uint64_t snapshotsSent = 0; ///< whole snapshots (all their slices), summed over clients
    std::uint64_t clientsAccepted = 0;
    std::uint64_t clientsDenied = 0;
    std::uint64_t clientsTimedOut = 0;
    std::uint64_t clientsDisconnected = 0;
    protocol::DropCounters drops;    ///< datagrams dropped, by reason
};

class Server
{
public:
    /// Builds the scene named in config; returns nullptr and sets error when the config or scene is bad.
    static std::unique_ptr<Server> create(const ServerConfig& config, SendFunction send, std::string& error);

    /// Handles one received datagram at time `now` (seconds, the caller's monotonic clock).
    void receive(const protocol::Address& from, std::span<const std::uint8_t> datagram, double now);
    /// Runs the ticks that are due, sends due snapshots and drops silent clients.
    void update(double now);
    /// Tells every client the server is going away (sent several times, as UDP may lose it).
    void shutdown(double now);

    /// The time at which update() next has work to do.
    double nextUpdateTime() const { return m_nextTickTime; }
    std::size_t clientCount() const { return m_sessions.size(); }
    const ServerMetrics& metrics() const { return m_metrics; }
    const ServerConfig& config() const { return m_config; }
    const physics::World& world() const { return m_world; }

private:
    struct Session
    {
        std::uint32_t clientId = 0;
        std::string name;
        protocol::AckTracker acks;
        double lastReceiveTime = 0.0;
    };

    Server(const ServerConfig& config, SendFunction send);
    void send(const protocol::Address& to, std::span<const std::uint8_t> datagram);
    void handleConnectRequest(const protocol::Address& from, const protocol::wire::Packet& packet, double now);
    void tick();
    void captureSnapshot();
    void sendSnapshot(const protocol::Address& to, Session& session);

    ServerConfig m_config;
    SendFunction m_send;
    physics::World m_world;
    protocol::PacketWriter m_writer;
    std::map<protocol::Address, Session> m_sessions; ///< ordered: iteration is deterministic
    std::vector<protocol::SnapshotBody> m_snapshotBodies;
    ServerMetrics m_metrics;
    double m_tickSeconds = 1.0 / 60.0;
    double m_nextTickTime = 0.0;
    bool m_started = false;
    std::uint32_t m_nextClientId = 1;
    int m_ticksPerSnapshot = 3;
};

} // namespace polytope::server

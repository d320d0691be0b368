// Polytope client library: the connection to a server, independent of sockets and clocks.
//
// Like the server core, the Client is driven from outside: receive() for every datagram from the server,
// update() with the current time, and it sends through the SendFunction it was given. UdpClient (udp_client.h)
// binds it to a real socket; tests can use an in-process transport and a test clock.
#pragma once

#include "polytope/protocol/packet.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace polytope::client
{

using SendFunction = std::function<void(std::span<const std::uint8_t> datagram)>;

struct ClientConfig
{
    std::string name = "polytope-client";  ///< sent in the connect request (logs)
    double connectTimeoutSeconds = 5.0;    ///< give up when no accept arrives within this
    double connectResendSeconds = 0.1;     ///< resend the connect request this often while connecting
    double keepAliveSeconds = 1.0;         ///< send a keep-alive this often once connected
    double serverTimeoutSeconds = 10.0;    ///< connection lost when the server is silent this long
    std::size_t maxQueuedSnapshots = 256;  ///< older complete snapshots are dropped past this
};

enum class ClientState : std::uint8_t
{
    Disconnected = 0,  ///< not started, or disconnect() called
    Connecting,        ///< sending connect requests
    Connected,         ///< accepted; receiving snapshots
    ConnectTimedOut,   ///< nothing answered within connectTimeoutSeconds
    ConnectionDenied,  ///< the server refused (e.g. full)
    ConnectionLost,    ///< the server went silent for serverTimeoutSeconds
    ServerClosed,      ///< the server said goodbye
};

const char* clientStateName(ClientState state);

/// A whole snapshot (all of its slices), as received.
struct ReceivedSnapshot
{
    std::uint64_t tick = 0;
    double serverTime = 0.0;  ///< seconds, server's simulation clock
    double receiveTime = 0.0; ///< seconds, the client's clock, when the last slice arrived
    std::size_t bytes = 0;    ///< datagram bytes of all its slices
    std::vector<protocol::SnapshotBody> bodies;
};

struct ClientStats
{
    std::uint64_t datagramsReceived = 0; ///< accepted
    std::uint64_t bytesReceived = 0;     ///< every datagram, accepted or not
    std::uint64_t datagramsSent = 0;
    std::uint64_t bytesSent = 0;
    std::uint64_t snapshotsCompleted = 0;
    std::uint64_t snapshotsIncomplete = 0; ///< given up: a newer tick arrived before all slices
    std::uint64_t staleSlices = 0;         ///< slices of a tick older than the newest seen
    protocol::DropCounters drops;
};

class Client
{
public:
    Client(const ClientConfig& config, SendFunction send);

    /// Starts the handshake.
    void connect(double now);
    /// Handles one datagram from the server.
    void receive(std::span<const std::uint8_t> datagram, double now);
    /// Resends, keeps alive and checks time-outs.
    void update(double now);
    /// Says goodbye (several times, as UDP may lose it) and stops.
    void disconnect(double now);

    ClientState state() const { return m_state; }
    bool isConnected() const { return m_state == ClientState::Connected; }
    /// True once the connection has ended for any reason (time-out, denial, server closed, lost).
    bool isFinished() const;
    std::uint32_t clientId() const { return m_clientId; }
    int tickRateHz() const { return m_tickRateHz; }
    int snapshotRateHz() const { return m_snapshotRateHz; }
    const std::string& sceneName() const { return m_scene; }
    const ClientStats& stats() const { return m_stats; }

    /// Takes the oldest complete snapshot not yet taken. Returns false when there is none.
    bool popSnapshot(ReceivedSnapshot& out);

private:
    void send(std::span<const std::uint8_t> datagram, double now);
    void onSnapshot(const protocol::wire::Snapshot& slice, std::size_t bytes, double now);

    ClientConfig m_config;
    SendFunction m_send;
    protocol::PacketWriter m_writer;
    protocol::AckTracker m_acks;
    ClientState m_state = ClientState::Disconnected;
    double m_connectStartTime = 0.0;
    double m_lastSendTime = -1e9;
    double m_lastReceiveTime = 0.0;
    std::uint32_t m_clientId = 0;
    int m_tickRateHz = 0;
    int m_snapshotRateHz = 0;
    std::string m_scene;
    ClientStats m_stats;

    // The snapshot being assembled from slices.
    bool m_assembling = false;
    std::uint64_t m_newestTick = 0;
    bool m_anyTick = false;
    ReceivedSnapshot m_partial;
    std::vector<bool> m_slicesSeen;
    std::size_t m_slicesMissing = 0;
    std::deque<ReceivedSnapshot> m_complete;
};

} // namespace polytope::client

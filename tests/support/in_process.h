// Tests: the server and its clients in one process, the one harness every client/server test uses.
//
//   - makeServer: a Server for the test (tokenless rooms as --insecure, or a whole ServerConfig with tokens,
//     an admin key and a wall clock), sending into an InProcessNetwork.
//   - InProcessNetwork: carries datagrams between that server (at kServerAddress) and any number of peers,
//     either at once and in order, or through a seeded protocol::NetworkSimulator (loss, latency, jitter,
//     duplicates, blackouts). Peers are client::Client instances attached by address, or raw-datagram peers
//     (raw_peer.h) whose datagrams the test writes itself and whose received datagrams it reads. Every
//     datagram is handed over as an 8-byte-aligned copy, as a socket's receive buffer holds it.
//   - A test clock: frame() advances it by frameSeconds and runs one frame in the chosen FrameOrder;
//     run()/runUntil() repeat frames. The order of the calls within a frame is part of a test's inputs (the
//     simulator's random draws follow the order in which datagrams are sent), so it is chosen, not assumed.
#pragma once

#include "polytope/client/client.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/protocol/packet.h"
#include "polytope/server/server.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace polytope::test
{

/// The server's address on every in-process network.
inline const protocol::Address kServerAddress = protocol::Address::ipv4(10, 0, 0, 1, 7777);
/// The Unix time (seconds) an InProcessNetwork's wall clock starts at: tokens and admin commands are checked
/// against it.
inline constexpr double kWallTime = 1.8e9;

/// A datagram copied into 8-byte-aligned storage (flatbuffers::Verifier checks alignment).
class AlignedDatagram
{
  public:
    explicit AlignedDatagram(std::span<const std::uint8_t> bytes);
    std::span<const std::uint8_t> view() const
    {
        return {reinterpret_cast<const std::uint8_t*>(m_storage.data()), m_size};
    }
    std::size_t size() const { return m_size; }
    /// decodePacket of the bytes (a plain datagram; a sealed one does not decode).
    protocol::DecodeResult decode() const { return protocol::decodePacket(view()); }
    /// The decoded packet, or nullptr when the datagram does not decode. Valid while this datagram lives.
    const protocol::wire::Packet* packet() const { return decode().packet; }

  private:
    std::vector<std::uint64_t> m_storage;
    std::size_t m_size = 0;
};

/// One datagram the server sent, and to whom.
struct SentDatagram
{
    protocol::Address to;
    AlignedDatagram datagram;
};

/// The order of the calls within one frame().
enum class FrameOrder : std::uint8_t
{
    /// The clock advances; the server takes the datagrams due for it and updates; then each attached client,
    /// in the order attached, takes the datagrams due for it and updates.
    ServerThenClients,
    /// The datagrams in flight are delivered at the current time (the server's first, then each client's);
    /// then the clock advances and the server updates, then each client.
    DeliverThenUpdate,
    /// The clock advances; the server updates, then each client; then pump() delivers everything in flight.
    UpdateThenDeliver,
};

/// Delivers datagrams between one server and many peers; see the file comment.
class InProcessNetwork
{
  public:
    InProcessNetwork() = default;
    InProcessNetwork(const InProcessNetwork&) = delete;
    InProcessNetwork& operator=(const InProcessNetwork&) = delete;

    /// The server at kServerAddress (set by makeServer; not owned).
    server::Server* server = nullptr;
    /// frame() advances the clock by this (seconds).
    double frameSeconds = 1.0 / 120.0;
    FrameOrder order = FrameOrder::ServerThenClients;
    /// What the server's wall clock reads when makeServer installs it (ServerConfig::wallClock left empty).
    double wallTime = kWallTime;
    /// frame() advances wallTime with the test clock.
    bool advanceWallClock = false;

    // ---- The network ----
    /// Datagrams go through a simulated network with these conditions and seed from now on.
    void simulate(const protocol::NetworkConditions& conditions, std::uint64_t seed = 1);
    /// The simulated network, or nullptr when datagrams are delivered at once.
    protocol::NetworkSimulator* simulator() { return m_simulator ? &*m_simulator : nullptr; }
    /// Sends a datagram at time `now` (the server's go through serverSend(), a client's through
    /// clientSend()).
    void post(const protocol::Address& from, const protocol::Address& to, std::span<const std::uint8_t> bytes,
              double now);
    server::SendFunction serverSend();
    client::SendFunction clientSend(const protocol::Address& self);
    /// True when no datagram is in flight.
    bool idle() const;
    /// When set, sees every datagram handed to an attached client, just before the client does.
    std::function<void(const protocol::Address& to, std::span<const std::uint8_t> datagram)>
        onDeliverToClient;

    // ---- Clients ----
    /// A client the test owns, at `address`: frames deliver its datagrams and update it.
    void attach(const protocol::Address& address, client::Client& c);
    void detach(const protocol::Address& address);
    /// A new client at `address` (10.0.0.host:5000 for the overload), sending through this network, attached
    /// and owned by it.
    client::Client& addClient(const protocol::Address& address, const client::ClientConfig& config = {});
    client::Client& addClient(std::uint8_t host, const client::ClientConfig& config = {});

    // ---- Raw datagrams ----
    /// Hands `bytes` (an aligned copy) from `from` to the server at once, at the current time.
    void deliver(const protocol::Address& from, std::span<const std::uint8_t> bytes);
    /// From now on the server's datagrams to `address` are kept in its inbox as they are sent, not delivered.
    void capture(const protocol::Address& address);
    /// What the server sent to a captured address, oldest first (the test may clear it).
    std::vector<AlignedDatagram>& inbox(const protocol::Address& address) { return m_inboxes[address]; }
    void clearInboxes();
    /// From now on every datagram the server sends is also logged, in order, with its destination.
    void recordServerSends() { m_recording = true; }
    const std::vector<SentDatagram>& serverSent() const { return m_serverSent; }
    /// The logged datagrams sent to `to`, oldest first.
    std::vector<const AlignedDatagram*> serverSentTo(const protocol::Address& to) const;
    void clearServerSent() { m_serverSent.clear(); }

    // ---- Delivery, one step at a time ----
    /// Hands the server every datagram due for it by `now`; `observer` (if set) sees each after the server.
    void deliverToServer(double now,
                         const std::function<void(const protocol::Address& from,
                                                  std::span<const std::uint8_t> bytes)>& observer = {});
    /// Hands `c` every datagram due for `address` by `now`.
    void deliverTo(const protocol::Address& address, client::Client& c, double now);
    /// Drops every datagram due for `address` by `now` (nobody listens there any more).
    void discard(const protocol::Address& address, double now);
    /// Hands every datagram due by `now` to its receiver: without a simulator, in the order sent, including
    /// those sent in answer, until none is left (datagrams for nobody are dropped); with one, the server's
    /// first, then each client's.
    void pump(double now);

    // ---- The clock ----
    /// The test clock, seconds.
    double now() const { return m_now; }
    void setNow(double now) { m_now = now; }
    /// Advances the clock (and the wall clock, when advancing) by frameSeconds; returns the new time.
    double advance();
    /// One frame in `order`.
    void frame();
    /// One frame at the given time instead of now + frameSeconds (tests that compute each frame's time).
    void frameAt(double now);
    /// Frames until the clock reaches `seconds`; `afterFrame` (if set) runs after each.
    void runUntil(double seconds, const std::function<void()>& afterFrame = {});
    /// Frames for `seconds` more.
    void run(double seconds, const std::function<void()>& afterFrame = {});

  private:
    struct InFlight
    {
        protocol::Address from;
        protocol::Address to;
        AlignedDatagram datagram;
    };
    struct Attached
    {
        protocol::Address address;
        client::Client* client = nullptr;
        std::unique_ptr<client::Client> owned;
    };
    Attached* findClient(const protocol::Address& address);
    /// Takes the datagrams for `to` out of the instant queue, in order.
    std::vector<InFlight> takeQueued(const protocol::Address& to);
    void deliverToClients(double now);
    void handOver(const protocol::Address& to, client::Client& c, std::span<const std::uint8_t> bytes,
                  double now);
    void updateClients(double now);
    void runFrame(std::optional<double> at);

    std::deque<InFlight> m_queue; ///< instant delivery: in the order sent
    std::optional<protocol::NetworkSimulator> m_simulator;
    std::vector<Attached> m_clients; ///< in the order attached
    std::map<protocol::Address, std::vector<AlignedDatagram>> m_inboxes;
    bool m_recording = false;
    std::vector<SentDatagram> m_serverSent;
    double m_now = 0.0;
};

/// A Server with the given rooms that takes tokenless clients (as --insecure), optionally with a fixed
/// cookie key. Returns nullptr and sets error when the configuration is refused.
std::unique_ptr<server::Server> makeServer(std::vector<server::RoomConfig> rooms, server::SendFunction send,
                                           std::string& error,
                                           std::optional<server::ConnectCookies::Key> cookieKey = {});
/// The same with one room.
std::unique_ptr<server::Server> makeServer(const server::RoomConfig& room, server::SendFunction send,
                                           std::string& error,
                                           std::optional<server::ConnectCookies::Key> cookieKey = {});
/// A Server from a whole configuration, sending through `send` (REQUIREs success).
std::unique_ptr<server::Server> makeServer(const server::ServerConfig& config, server::SendFunction send);

/// A tokenless server with one room on `net`, created for the test (REQUIREs success).
std::unique_ptr<server::Server> makeServer(InProcessNetwork& net, const server::RoomConfig& room = {},
                                           std::optional<server::ConnectCookies::Key> cookieKey = {});
/// A server from a whole configuration on `net` (REQUIREs success). An empty wallClock reads net.wallTime.
std::unique_ptr<server::Server> makeServer(InProcessNetwork& net, server::ServerConfig config);

/// Pops and drops every snapshot the client holds.
void dropSnapshots(client::Client& c);

/// What a datagram the server must ignore may not change: sessions, and every room's world, tick, inputs
/// applied and bodies.
struct ServerState
{
    std::size_t clients = 0;
    std::vector<std::uint64_t> hashes;
    std::vector<std::uint64_t> ticks;
    std::vector<std::uint64_t> inputsApplied;
    std::vector<std::size_t> bodies;
    bool operator==(const ServerState&) const = default;
};
ServerState serverState(const server::Server& server);

/// Datagrams dropped for `reason`, by the server and all its rooms.
std::uint64_t droppedCount(const server::Server& server, protocol::DropReason reason);

} // namespace polytope::test

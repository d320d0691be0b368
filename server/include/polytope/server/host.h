// polytope-server: several rooms behind one socket, admin commands, and checkpoints of them all.
//
// A Host owns one Server per room (each with its own World, tick and clients) and routes each datagram:
// from an address with a session, to that session's room; a ConnectRequest or ChallengeResponse to the
// room it names (empty: the first room; unknown: ConnectDenied UnknownRoom); an AdminRequest to the admin
// handler, which checks the keyed hash (protocol/admin_auth.h), the command's time and its nonce before
// the named room carries it out. Like Server, it never reads a clock or touches a socket.
//
// Security (protocol version 4, STANDARD.md §11). Before any room sees a handshake or admin datagram from an
// address without a session, the ConnectGate (connect_gate.h) applies the connection rate limits and checks
// the connect token. When a session opens with a token, the Host derives its keys from the token's keys and
// the salt in the challenge cookie and from then on seals every datagram to that address and opens every
// datagram from it (seal.h): a datagram that does not authenticate, replays a sequence or comes plain is
// dropped and counted before it can reach the room. Tokenless sessions exist only on --insecure servers.
#pragma once

#include "polytope/protocol/admin_auth.h"
#include "polytope/protocol/seal.h"
#include "polytope/server/connect_gate.h"
#include "polytope/server/server.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::server
{

struct HostConfig
{
    std::vector<ServerConfig> rooms; ///< at least one; names unique
    std::string adminKey;            ///< empty: admin commands are refused
    SecurityConfig security;         ///< tokens, insecure mode, connection limits
    /// The rooms' challenge-cookie key; empty: random per process (always, outside tests).
    std::optional<ConnectCookies::Key> cookieKey;
    /// Unix time in seconds, for the admin commands' freshness check (tests pass their own).
    std::function<double()> wallClock;
};

/// Datagrams the Host itself handled or dropped (rooms count theirs in ServerMetrics).
struct HostMetrics
{
    std::uint64_t bytesIn = 0;            ///< datagrams dropped here, and admin requests
    protocol::DropCounters drops;         ///< dropped before reaching a room
    std::uint64_t unknownRoom = 0;        ///< connects naming no room
    std::uint64_t adminAccepted = 0;
    std::uint64_t adminDisabled = 0;      ///< no admin key configured
    std::uint64_t adminBadMac = 0;
    std::uint64_t adminMalformed = 0;     ///< the command inside does not decode
    std::uint64_t adminStale = 0;         ///< time outside the window
    std::uint64_t adminReplayed = 0;      ///< nonce already used
    std::uint64_t adminUnknownRoom = 0;
    std::uint64_t datagramsOut = 0;       ///< replies sent by the Host itself
    std::uint64_t bytesOut = 0;           ///< and the seal overhead of every sealed datagram
    std::uint64_t sealedSessions = 0;     ///< sessions opened with a token (encrypted)
    std::uint64_t plainSessions = 0;      ///< tokenless sessions (--insecure)
    std::uint64_t datagramsSealed = 0;
    std::uint64_t datagramsOpened = 0;
};

class Host
{
public:
    static std::unique_ptr<Host> create(const HostConfig& config, SendFunction send, std::string& error);

    void receive(const protocol::Address& from, std::span<const std::uint8_t> datagram, double now);
    void update(double now);
    void shutdown(double now);
    double nextUpdateTime() const;

    std::size_t roomCount() const { return m_rooms.size(); }
    Server& room(std::size_t index) { return *m_rooms[index]; }
    const Server& room(std::size_t index) const { return *m_rooms[index]; }
    /// The room of that name (empty: the first), or nullptr.
    Server* findRoom(std::string_view name);
    std::size_t clientCount() const;
    const HostMetrics& metrics() const { return m_metrics; }

    /// Every room's state (Server::saveState), named, in one buffer (see checkpoint.h for the file).
    void saveState(std::vector<std::uint8_t>& out) const;
    /// Restores every room from saveState's buffer; the rooms must match by name. All or nothing.
    bool restoreState(std::span<const std::uint8_t> data, std::string& error);

    /// True when the session at that address is sealed (tests, logs).
    bool isSealed(const protocol::Address& address) const { return m_secure.count(address) != 0; }
    const ConnectGate& gate() const { return m_gate; }

private:
    Host(const HostConfig& config, SendFunction send);
    struct SecureSession
    {
        protocol::SealedChannel channel;
        std::array<std::uint8_t, protocol::kCookieSaltBytes> salt{};
        std::uint64_t tokenClientId = 0;
    };
    void send(const protocol::Address& to, std::span<const std::uint8_t> datagram);
    /// A room's datagram: sealed when the address has a sealed session.
    void sendFromRoom(const protocol::Address& to, std::span<const std::uint8_t> datagram);
    void onSession(std::size_t room, const protocol::Address& address, bool opened);
    void drop(const protocol::Address& from, protocol::DropReason reason, std::size_t bytes, const char* what);
    /// Token checks for a handshake datagram with no session yet, or a repeat from a session's address.
    /// False when it was dropped.
    bool screenHandshake(const protocol::Address& from, const protocol::wire::Packet& packet, Server& room,
                         std::size_t bytes);
    void handleAdmin(const protocol::Address& from, const protocol::wire::Packet& packet, double now);
    bool freshNonce(std::uint64_t nonce, double wallNow);

    HostConfig m_config;
    SendFunction m_send;
    std::vector<std::unique_ptr<Server>> m_rooms;
    std::map<protocol::Address, std::size_t> m_route; ///< session address -> room index
    ConnectGate m_gate;
    std::map<protocol::Address, SecureSession> m_secure; ///< sealed sessions, by address
    /// The sealed session a ChallengeResponse being handled would open (taken by onSession).
    std::optional<std::pair<protocol::Address, SecureSession>> m_pending;
    TokenCheck m_pendingToken;
    double m_lastSweep = -1e9;
    protocol::PacketWriter m_writer;
    protocol::AdminMacKey m_adminKey{};
    std::deque<std::pair<double, std::uint64_t>> m_nonceOrder; ///< (wall time, nonce), oldest first
    std::set<std::uint64_t> m_nonces;
    HostMetrics m_metrics;
};

} // namespace polytope::server

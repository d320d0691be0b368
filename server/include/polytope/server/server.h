// polytope-server: the front door. One socket's datagrams, the connections, the handshake, admin commands,
// and the rooms behind them.
//
// The path of a datagram (receive()):
//   1. A sealed datagram (seal.h) is opened with the keys of the connection at its source address; one that
//      does not authenticate, replays a sequence or has no connection is dropped and counted here.
//   2. It is decoded (protocol::decodePacket); a plain datagram from a sealed connection's address is
//      dropped, unless it is a repeat of the handshake (only the handshake is plain).
//   3. ConnectRequest and ChallengeResponse go to the handshake (handshake.cpp): rate limits, room, token,
//      cookie, keys, then accept or deny. AdminRequest goes to the admin handler (admin.cpp).
//   4. Any other datagram from a connection goes to the connection's room (room.h), after its header's
//      sequence is recorded and the connection marked alive. Datagrams from unknown addresses are counted
//      by the first room, as dropped.
// Each room runs behind a RoomHost (room_host.h): inline, update() runs every room's due ticks and times out
// silent clients; after startRoomThreads(), each room runs on its own thread and receive() and update()
// only hand work over, so that the network thread never waits for a tick. Like the rooms, the Server never
// reads a clock or touches a socket: the owner (UdpServer in udp_server.h, or a test) passes the time and a
// SendFunction, which must be safe to call from several threads once the rooms have threads.
//
// Security (STANDARD.md §11): with a connect token a session's datagrams are sealed in both directions with
// keys derived from the token's keys and the salt in the challenge cookie. Tokenless sessions exist only on
// --insecure servers.
#pragma once

#include "polytope/protocol/address.h"
#include "polytope/protocol/admin_auth.h"
#include "polytope/protocol/packet.h"
#include "polytope/server/connect_cookie.h"
#include "polytope/server/connect_gate.h"
#include "polytope/server/connection_table.h"
#include "polytope/server/room.h"
#include "polytope/server/room_config.h"
#include "polytope/server/room_host.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::server
{

using SendFunction = std::function<void(const protocol::Address& to, std::span<const std::uint8_t> datagram)>;

struct ServerConfig
{
    std::vector<RoomConfig> rooms; ///< at least one; names unique
    std::string adminKey;          ///< empty: admin commands are refused
    SecurityConfig security;       ///< tokens, insecure mode, connection limits
    /// The challenge-cookie key; empty: random per process (always, outside tests).
    std::optional<ConnectCookies::Key> cookieKey;
    /// How long a challenge cookie is honoured, 1..60 s.
    double cookieLifetimeSeconds = 5.0;
    /// Unix time in seconds, for tokens and the admin commands' freshness check (tests pass their own).
    std::function<double()> wallClock;
};

/// Datagrams the Server itself handled or dropped (rooms count theirs in RoomMetrics).
struct ServerMetrics
{
    std::uint64_t bytesIn = 0;     ///< datagrams dropped here, handshakes and admin requests
    protocol::DropCounters drops;  ///< dropped before reaching a room
    std::uint64_t unknownRoom = 0; ///< connects naming no room
    /// ConnectRequests of another protocol version answered with ConnectDenied (Version) (STANDARD.md
    /// section 9); each is also a drop under WrongVersion
    std::uint64_t versionDenied = 0;
    std::uint64_t challengesSent = 0;
    std::uint64_t cookiesForged = 0; ///< ChallengeResponses with a forged, tampered or foreign cookie
    std::uint64_t cookiesExpired = 0;
    std::uint64_t adminAccepted = 0;
    std::uint64_t adminDisabled = 0; ///< no admin key configured
    std::uint64_t adminBadMac = 0;
    std::uint64_t adminMalformed = 0; ///< the command inside does not decode
    std::uint64_t adminStale = 0;     ///< time outside the window
    std::uint64_t adminReplayed = 0;  ///< nonce already used
    std::uint64_t adminUnknownRoom = 0;
    std::uint64_t datagramsOut = 0;   ///< handshake and admin replies sent by the Server itself
    std::uint64_t bytesOut = 0;       ///< of those, and the seal overhead of every sealed datagram
    std::uint64_t sealedSessions = 0; ///< sessions opened with a token (encrypted)
    std::uint64_t plainSessions = 0;  ///< tokenless sessions (--insecure)
    std::uint64_t datagramsSealed = 0;
    std::uint64_t datagramsOpened = 0;
    std::uint64_t lateAfterClose =
        0; ///< sealed datagrams from a session closed moments before (late goodbyes)
};

class Server
{
  public:
    static std::unique_ptr<Server> create(const ServerConfig& config, SendFunction send, std::string& error);

    ~Server();

    void receive(const protocol::Address& from, std::span<const std::uint8_t> datagram, double now);
    void update(double now);
    /// Tells every client the server is going away, and stops the rooms' threads.
    void shutdown();
    /// Inline rooms: the time the next tick is due. With room threads: infinity (the rooms wake themselves).
    double nextUpdateTime() const;
    /// From now on each room runs on a thread of its own, reading `clock` (the clock of `now`).
    void startRoomThreads(std::function<double()> clock);
    bool roomThreads() const { return !m_hosts.empty() && m_hosts.front()->threaded(); }

    std::size_t roomCount() const { return m_rooms.size(); }
    /// A room itself: only while rooms have no threads (tests, tools; before startRoomThreads() or after
    /// shutdown()). Otherwise read roomStatus().
    Room& room(std::size_t index) { return *m_rooms[index]; }
    const Room& room(std::size_t index) const { return *m_rooms[index]; }
    /// A copy of a room's figures, safe to read from the network thread at any time.
    RoomStatus roomStatus(std::size_t index) const { return m_hosts[index]->status(); }
    /// The room of that name (empty: the first), or nullptr.
    Room* findRoom(std::string_view name);
    std::size_t clientCount() const { return m_connections.size(); }
    /// The Server's own counters (a copy: some are counted on the rooms' threads).
    ServerMetrics metrics() const;

    /// Every room's state (Room::saveState), named, in one buffer (see checkpoint.h for the file). With room
    /// threads, each room saves between two of its ticks (this waits for them).
    void saveState(std::vector<std::uint8_t>& out) const;
    /// Restores every room from saveState's buffer; the rooms must match by name. All or nothing. Only
    /// before startRoomThreads().
    bool restoreState(std::span<const std::uint8_t> data, std::string& error);

    /// True when the connection at that address is sealed (tests, logs).
    bool isSealed(const protocol::Address& address) const;
    const ConnectGate& gate() const { return m_gate; }

  private:
    Server(const ServerConfig& config, SendFunction send, std::size_t capacity);

    /// Sends as the Server itself (handshake and admin replies to addresses without a session).
    void send(const protocol::Address& to, std::span<const std::uint8_t> datagram);
    /// Sends to a connection: sealed when it is sealed.
    void sendTo(ClientSlot slot, std::span<const std::uint8_t> datagram);
    /// A room ended a client's session (on the room's thread): the slot is freed on the network thread.
    void closeConnection(ClientSlot slot);
    /// Frees the slots the rooms' threads closed.
    void collectClosed();
    void freeSlot(ClientSlot slot);
    /// True when a sealed session at `address` closed within the last few seconds.
    bool closedLately(const protocol::Address& address, double now);
    void drop(const protocol::Address& from, protocol::DropReason reason, std::size_t bytes,
              const char* what);
    std::size_t roomIndex(const Room& room) const;
    RoomHost& hostOf(const Room& room) { return *m_hosts[roomIndex(room)]; }

    // handshake.cpp
    void handleConnectRequest(const protocol::Address& from, const protocol::wire::Packet& packet,
                              std::size_t bytes, double now);
    void handleChallengeResponse(const protocol::Address& from, const protocol::wire::Packet& packet,
                                 std::size_t bytes, double now);
    /// A ConnectRequest of protocol version `version` (not ours): ConnectDenied (Version) in that version,
    /// within the connection rate limits (STANDARD.md section 9).
    void denyVersion(const protocol::Address& from, std::uint16_t version, std::size_t bytes, double now);
    /// Rate limits, the connect token and the room a handshake datagram names; nullptr when it was dropped
    /// or denied (`token`: the token's verdict, clientId 0 when tokenless).
    Room* admitHandshake(const protocol::Address& from, ClientSlot slot, std::string_view roomName,
                         const protocol::wire::TokenCredential* credential, AdmitKind kind, std::size_t bytes,
                         double now, TokenCheck& token);
    /// The connect token's checks for a connect to `roomName`; false when the datagram was dropped.
    bool checkToken(const protocol::Address& from, const protocol::wire::TokenCredential* credential,
                    ClientSlot slot, std::string_view roomName, std::size_t bytes, const char* what,
                    TokenCheck& out);

    // admin.cpp
    void handleAdmin(const protocol::Address& from, const protocol::wire::Packet& packet, double now);
    bool freshNonce(std::uint64_t nonce, double wallNow);

    ServerConfig m_config;
    SendFunction m_send;
    ConnectionTable m_connections;
    std::vector<std::unique_ptr<Room>> m_rooms;
    std::vector<std::unique_ptr<RoomHost>> m_hosts; ///< one per room, same order
    std::vector<std::size_t> m_roomConnections;     ///< connections per room (the network thread's count)
    std::mutex m_closedMutex;
    std::vector<ClientSlot> m_closed; ///< slots the rooms' threads closed, not yet freed
    std::vector<ClientSlot> m_closedScratch;
    static constexpr std::size_t kRecentlyClosedMax = 1024; ///< bounded: a flood of closes cannot grow it
    std::deque<std::pair<protocol::Address, double>> m_recentlyClosed; ///< (address, when), oldest first
    double m_lastNow = 0.0;
    std::atomic<std::uint64_t> m_datagramsSealed{0}; ///< counted on the rooms' threads
    std::atomic<std::uint64_t> m_sealOverheadBytes{0};
    ConnectCookies m_cookies;
    ConnectGate m_gate;
    double m_lastSweep = -1e9;
    protocol::PacketWriter m_writer;
    protocol::AdminMacKey m_adminKey{};
    std::deque<std::pair<double, std::uint64_t>> m_nonceOrder; ///< (wall time, nonce), oldest first
    std::set<std::uint64_t> m_nonces;
    ServerMetrics m_metrics;
};

} // namespace polytope::server

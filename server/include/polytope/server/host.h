// polytope-server: several rooms behind one socket, admin commands, and checkpoints of them all.
//
// A Host owns one Server per room (each with its own World, tick and clients) and routes each datagram:
// from an address with a session, to that session's room; a ConnectRequest or ChallengeResponse to the
// room it names (empty: the first room; unknown: ConnectDenied UnknownRoom); an AdminRequest to the admin
// handler, which checks the keyed hash (protocol/admin_auth.h), the command's time and its nonce before
// the named room carries it out. Like Server, it never reads a clock or touches a socket.
#pragma once

#include "polytope/protocol/admin_auth.h"
#include "polytope/server/server.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
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
    std::uint64_t bytesOut = 0;
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

private:
    Host(const HostConfig& config, SendFunction send);
    void send(const protocol::Address& to, std::span<const std::uint8_t> datagram);
    void handleAdmin(const protocol::Address& from, const protocol::wire::Packet& packet, double now);
    bool freshNonce(std::uint64_t nonce, double wallNow);

    HostConfig m_config;
    SendFunction m_send;
    std::vector<std::unique_ptr<Server>> m_rooms;
    std::map<protocol::Address, std::size_t> m_route; ///< session address -> room index
    protocol::PacketWriter m_writer;
    protocol::AdminMacKey m_adminKey{};
    std::deque<std::pair<double, std::uint64_t>> m_nonceOrder; ///< (wall time, nonce), oldest first
    std::set<std::uint64_t> m_nonces;
    HostMetrics m_metrics;
};

} // namespace polytope::server

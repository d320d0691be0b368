#include "polytope/server/server.h"

#include "polytope/server/log_format.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

namespace polytope::server
{
namespace wire = protocol::wire;

namespace
{
/// Expired tokens and idle per-IP buckets are forgotten this often (seconds).
constexpr double kGateSweepSeconds = 1.0;
/// Sealed sessions closed within this many seconds, whose late datagrams are not counted as forged: a
/// Disconnect is sent three times, and a round trip rarely takes longer.
constexpr double kRecentlyClosedSeconds = 3.0;

double systemUnixTime()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::size_t capacityOf(const ServerConfig& config)
{
    std::size_t capacity = 0;
    for (const RoomConfig& room : config.rooms)
    {
        capacity += static_cast<std::size_t>(std::max(0, room.maxClients));
    }
    return capacity;
}
} // namespace

std::unique_ptr<Server> Server::create(const ServerConfig& config, SendFunction send, std::string& error)
{
    if (config.rooms.empty())
    {
        error = "no room configured";
        return nullptr;
    }
    if (!(config.cookieLifetimeSeconds >= 1.0 && config.cookieLifetimeSeconds <= 60.0))
    {
        error = "cookie lifetime must be 1..60 s";
        return nullptr;
    }
    if (!validateSecurityConfig(config.security, error))
    {
        return nullptr;
    }
    for (std::size_t i = 0; i < config.rooms.size(); ++i)
    {
        for (std::size_t j = 0; j < i; ++j)
        {
            if (config.rooms[i].room == config.rooms[j].room)
            {
                error = "room '" + config.rooms[i].room + "' is configured twice";
                return nullptr;
            }
        }
    }
    std::unique_ptr<Server> server(new Server(config, std::move(send), capacityOf(config)));
    Server* self = server.get();
    for (const RoomConfig& roomConfig : config.rooms)
    {
        auto room = Room::create(
            roomConfig, server->m_connections,
            [self](ClientSlot slot, std::span<const std::uint8_t> d) { self->sendTo(slot, d); },
            [self](const protocol::Address& to, std::span<const std::uint8_t> d) { self->m_send(to, d); },
            [self](ClientSlot slot) { self->closeConnection(slot); }, error);
        if (!room)
        {
            error = "room '" + roomConfig.room + "': " + error;
            return nullptr;
        }
        server->m_hosts.push_back(std::make_unique<RoomHost>(*room));
        server->m_rooms.push_back(std::move(room));
        server->m_roomConnections.push_back(0);
    }
    server->m_closed.reserve(server->m_connections.capacity());
    server->m_closedScratch.reserve(server->m_connections.capacity());
    return server;
}

Server::~Server()
{
    for (auto& host : m_hosts)
    {
        host->stop();
    }
}

void Server::startRoomThreads(std::function<double()> clock)
{
    for (auto& host : m_hosts)
    {
        host->start(clock);
    }
}

ServerMetrics Server::metrics() const
{
    ServerMetrics out = m_metrics;
    out.datagramsSealed = m_datagramsSealed.load(std::memory_order_relaxed);
    out.bytesOut += m_sealOverheadBytes.load(std::memory_order_relaxed);
    return out;
}

Server::Server(const ServerConfig& config, SendFunction send, std::size_t capacity)
    : m_config(config), m_send(std::move(send)), m_connections(capacity),
      m_cookies(config.cookieKey ? ConnectCookies(*config.cookieKey, config.cookieLifetimeSeconds)
                                 : ConnectCookies(config.cookieLifetimeSeconds)),
      m_gate(config.security)
{
    if (!m_config.wallClock)
    {
        m_config.wallClock = systemUnixTime;
    }
    if (!m_config.adminKey.empty())
    {
        m_adminKey = protocol::deriveAdminMacKey(m_config.adminKey);
    }
}

Room* Server::findRoom(std::string_view name)
{
    if (name.empty())
    {
        return m_rooms.front().get();
    }
    for (auto& room : m_rooms)
    {
        if (room->config().room == name)
        {
            return room.get();
        }
    }
    return nullptr;
}

std::size_t Server::roomIndex(const Room& room) const
{
    for (std::size_t i = 0; i < m_rooms.size(); ++i)
    {
        if (m_rooms[i].get() == &room)
        {
            return i;
        }
    }
    return 0;
}

bool Server::isSealed(const protocol::Address& address) const
{
    const ClientSlot slot = m_connections.find(address);
    return slot != kNoSlot && m_connections[slot].channel.active();
}

// ---- Sending
// -----------------------------------------------------------------------------------------------

void Server::send(const protocol::Address& to, std::span<const std::uint8_t> datagram)
{
    ++m_metrics.datagramsOut;
    m_metrics.bytesOut += datagram.size();
    m_send(to, datagram);
}

void Server::sendTo(ClientSlot slot, std::span<const std::uint8_t> datagram)
{
    Connection& connection = m_connections[slot];
    if (!connection.channel.active())
    {
        m_send(connection.address, datagram);
        return;
    }
    const std::span<const std::uint8_t> sealed = connection.channel.seal(datagram);
    if (sealed.empty())
    {
        // Larger than a sealed datagram can carry: a bug in the sender's size limits, never sent plain.
        spdlog::error("datagram of {} bytes to {} is too large to seal; not sent", datagram.size(),
                      connection.address.toString());
        return;
    }
    m_datagramsSealed.fetch_add(1, std::memory_order_relaxed);
    m_sealOverheadBytes.fetch_add(sealed.size() - datagram.size(), std::memory_order_relaxed);
    m_send(connection.address, sealed);
}

void Server::closeConnection(ClientSlot slot)
{
    if (!roomThreads())
    {
        freeSlot(slot);
        return;
    }
    const std::lock_guard lock(m_closedMutex);
    m_closed.push_back(slot);
}

void Server::collectClosed()
{
    {
        const std::lock_guard lock(m_closedMutex);
        std::swap(m_closed, m_closedScratch);
    }
    for (const ClientSlot slot : m_closedScratch)
    {
        freeSlot(slot);
    }
    m_closedScratch.clear();
}

void Server::freeSlot(ClientSlot slot)
{
    const Connection& connection = m_connections[slot];
    if (!connection.used)
    {
        return;
    }
    if (connection.channel.active())
    {
        m_gate.sessionEnded(connection.tokenClientId);
    }
    --m_roomConnections[connection.room];
    if (connection.channel.active())
    {
        // Remembered for a few seconds: sealed datagrams still on their way are not counted as forged.
        if (m_recentlyClosed.size() == kRecentlyClosedMax)
        {
            m_recentlyClosed.pop_front();
        }
        m_recentlyClosed.emplace_back(connection.address, m_lastNow);
    }
    m_connections.close(slot);
}

void Server::drop(const protocol::Address& from, protocol::DropReason reason, std::size_t bytes,
                  const char* what)
{
    m_metrics.bytesIn += bytes;
    m_metrics.drops.add(reason);
    spdlog::debug("dropped {} from {}: {} ({} bytes)", what, from, protocol::dropReasonName(reason), bytes);
}

// ---- Receiving
// ---------------------------------------------------------------------------------------------

bool Server::closedLately(const protocol::Address& address, double now)
{
    while (!m_recentlyClosed.empty() && m_recentlyClosed.front().second < now - kRecentlyClosedSeconds)
    {
        m_recentlyClosed.pop_front();
    }
    for (const auto& [closed, when] : m_recentlyClosed)
    {
        if (closed == address)
        {
            return true;
        }
    }
    return false;
}

void Server::receive(const protocol::Address& from, std::span<const std::uint8_t> datagram, double now)
{
    m_lastNow = now;
    collectClosed();
    // 1. Open a sealed datagram with its connection's keys.
    const ClientSlot slot = m_connections.find(from);
    const bool sealedConnection = slot != kNoSlot && m_connections[slot].channel.active();
    std::span<const std::uint8_t> bytes = datagram;
    if (protocol::isSealed(datagram))
    {
        if (!sealedConnection)
        {
            if (closedLately(from, now))
            {
                // A late copy of a closed session's goodbye (sent several times) or traffic in flight when it
                // closed: no attack, and nothing to open it with any more.
                m_metrics.bytesIn += datagram.size();
                ++m_metrics.lateAfterClose;
                return;
            }
            drop(from, protocol::DropReason::BadSeal, datagram.size(), "sealed datagram without a session");
            return;
        }
        std::span<const std::uint8_t> plain;
        const protocol::OpenError error = m_connections[slot].channel.open(datagram, plain);
        if (error != protocol::OpenError::None)
        {
            drop(from,
                 error == protocol::OpenError::Replayed   ? protocol::DropReason::Replayed
                 : error == protocol::OpenError::TooLarge ? protocol::DropReason::TooLarge
                                                          : protocol::DropReason::BadSeal,
                 datagram.size(), "sealed datagram");
            return;
        }
        ++m_metrics.datagramsOpened;
        bytes = plain;
    }

    // 2. Decode; only the handshake is plain on a sealed connection.
    const protocol::DecodeResult decoded = protocol::decodePacket(bytes);
    const wire::PacketType type = decoded.ok() ? decoded.type() : wire::PacketType::KeepAlive;
    const bool handshake = decoded.ok() && (type == wire::PacketType::ConnectRequest ||
                                            type == wire::PacketType::ChallengeResponse);
    if (sealedConnection && bytes.data() == datagram.data() && !handshake)
    {
        // Plain from a sealed session's address: forged or spoofed.
        drop(from, decoded.ok() ? protocol::DropReason::Unsealed : decoded.reason, datagram.size(),
             "datagram");
        return;
    }

    // 3. A connection's datagram goes to its room.
    if (slot != kNoSlot && !handshake)
    {
        // The room counts it and carries it out (on its thread: from a copy, not checked again).
        m_hosts[m_connections[slot].room]->postDatagram(slot, decoded, datagram.size(), now);
        return;
    }
    if (decoded.connectRequestOfOtherVersion)
    {
        denyVersion(from, decoded.otherVersion, datagram.size(), now);
        return;
    }
    if (!decoded.ok())
    {
        drop(from, decoded.reason, datagram.size(), "datagram");
        return;
    }

    // 4. The handshake, admin, and strays.
    switch (type)
    {
    case wire::PacketType::ConnectRequest:
        handleConnectRequest(from, *decoded.packet, datagram.size(), now);
        break;
    case wire::PacketType::ChallengeResponse:
        handleChallengeResponse(from, *decoded.packet, datagram.size(), now);
        break;
    case wire::PacketType::AdminRequest:
        if (!m_gate.admit(from, now, AdmitKind::Admin))
        {
            drop(from, protocol::DropReason::RateLimited, datagram.size(), "admin request");
            return;
        }
        m_metrics.bytesIn += datagram.size();
        handleAdmin(from, *decoded.packet, now);
        break;
    case wire::PacketType::Disconnect:
        // A late copy of a goodbye already handled (a Disconnect is sent several times): not an error.
        m_metrics.bytesIn += datagram.size();
        break;
    default:
        drop(from, protocol::DropReason::UnexpectedMessage, datagram.size(), "datagram without a session");
        break;
    }
}

// ---- The loop
// ----------------------------------------------------------------------------------------------

void Server::update(double now)
{
    m_lastNow = now;
    collectClosed();
    if (now - m_lastSweep >= kGateSweepSeconds)
    {
        m_lastSweep = now;
        m_gate.sweep(now, m_config.wallClock());
    }
    for (auto& host : m_hosts)
    {
        host->update(now); // inline: the due ticks and time-outs; threaded: the room's thread does them
    }
    collectClosed();
}

void Server::shutdown()
{
    for (auto& host : m_hosts)
    {
        host->call([](Room& room) { room.shutdown(); });
        host->stop();
    }
    collectClosed();
}

double Server::nextUpdateTime() const
{
    double next = std::numeric_limits<double>::infinity();
    for (const auto& host : m_hosts)
    {
        next = host->threaded() ? next : std::min(next, host->nextUpdateTime());
    }
    return next;
}

// ---- Checkpoints
// -------------------------------------------------------------------------------------------

void Server::saveState(std::vector<std::uint8_t>& out) const
{
    const auto put32 = [&](std::uint32_t v)
    {
        const auto* b = reinterpret_cast<const std::uint8_t*>(&v);
        out.insert(out.end(), b, b + 4);
    };
    put32(static_cast<std::uint32_t>(m_rooms.size()));
    for (std::size_t i = 0; i < m_rooms.size(); ++i)
    {
        const std::string& name = m_rooms[i]->config().room;
        put32(static_cast<std::uint32_t>(name.size()));
        out.insert(out.end(), name.begin(), name.end());
        std::vector<std::uint8_t> state;
        m_hosts[i]->call([&state](Room& room) { room.saveState(state); });
        put32(static_cast<std::uint32_t>(state.size()));
        out.insert(out.end(), state.begin(), state.end());
    }
}

bool Server::restoreState(std::span<const std::uint8_t> data, std::string& error)
{
    if (roomThreads())
    {
        error = "rooms are running: restore before they start";
        return false;
    }
    const auto take32 = [&](std::uint32_t& v)
    {
        if (data.size() < 4)
        {
            return false;
        }
        std::memcpy(&v, data.data(), 4);
        data = data.subspan(4);
        return true;
    };
    std::uint32_t count = 0;
    if (!take32(count) || count != m_rooms.size())
    {
        error = "checkpoint holds " + std::to_string(count) + " room(s), the server runs " +
                std::to_string(m_rooms.size());
        return false;
    }
    // Check every room's part first (into scratch servers would need their scenes; instead, keep each
    // room's current state and roll back if a later one fails).
    std::vector<std::vector<std::uint8_t>> previous(m_rooms.size());
    for (std::size_t i = 0; i < m_rooms.size(); ++i)
    {
        m_rooms[i]->saveState(previous[i]);
    }
    std::string rollbackError;
    for (std::size_t i = 0; i < m_rooms.size(); ++i)
    {
        std::uint32_t nameBytes = 0, stateBytes = 0;
        bool ok = take32(nameBytes) && nameBytes <= data.size();
        std::string name;
        if (ok)
        {
            name.assign(reinterpret_cast<const char*>(data.data()), nameBytes);
            data = data.subspan(nameBytes);
            ok = take32(stateBytes) && stateBytes <= data.size();
        }
        if (ok && name != m_rooms[i]->config().room)
        {
            error = "checkpoint room " + std::to_string(i) + " is '" + name + "', the server's is '" +
                    m_rooms[i]->config().room + "'";
            ok = false;
        }
        else if (!ok)
        {
            error = "checkpoint truncated";
        }
        if (ok && !m_rooms[i]->restoreState(data.subspan(0, stateBytes), error))
        {
            error = "room '" + name + "': " + error;
            ok = false;
        }
        if (!ok)
        {
            for (std::size_t j = 0; j < i; ++j)
            {
                m_rooms[j]->restoreState(previous[j], rollbackError);
            }
            return false;
        }
        data = data.subspan(stateBytes);
    }
    if (!data.empty())
    {
        error = "checkpoint has trailing bytes";
        for (std::size_t j = 0; j < m_rooms.size(); ++j)
        {
            m_rooms[j]->restoreState(previous[j], rollbackError);
        }
        return false;
    }
    return true;
}

} // namespace polytope::server

#include "polytope/server/host.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

namespace polytope::server
{
namespace wire = protocol::wire;

namespace
{
constexpr std::size_t kMaxNoncesRemembered = 4096;

double systemUnixTime()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string roomOf(const flatbuffers::String* name) { return name ? name->str() : std::string(); }
} // namespace

std::unique_ptr<Host> Host::create(const HostConfig& config, SendFunction send, std::string& error)
{
    if (config.rooms.empty())
    {
        error = "no room configured";
        return nullptr;
    }
    std::unique_ptr<Host> host(new Host(config, std::move(send)));
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
        Host* self = host.get();
        const std::size_t index = i;
        auto room = Server::create(
            config.rooms[i], [self](const protocol::Address& to, std::span<const std::uint8_t> d) { self->m_send(to, d); },
            error);
        if (!room)
        {
            error = "room '" + config.rooms[i].room + "': " + error;
            return nullptr;
        }
        room->setSessionObserver(
            [self, index](const protocol::Address& address, bool opened)
            {
                if (opened)
                {
                    self->m_route[address] = index;
                }
                else
                {
                    self->m_route.erase(address);
                }
            });
        host->m_rooms.push_back(std::move(room));
    }
    return host;
}

Host::Host(const HostConfig& config, SendFunction send) : m_config(config), m_send(std::move(send))
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

void Host::send(const protocol::Address& to, std::span<const std::uint8_t> datagram)
{
    ++m_metrics.datagramsOut;
    m_metrics.bytesOut += datagram.size();
    m_send(to, datagram);
}

Server* Host::findRoom(std::string_view name)
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

std::size_t Host::clientCount() const
{
    std::size_t count = 0;
    for (const auto& room : m_rooms)
    {
        count += room->clientCount();
    }
    return count;
}

void Host::receive(const protocol::Address& from, std::span<const std::uint8_t> datagram, double now)
{
    const protocol::DecodeResult decoded = protocol::decodePacket(datagram);
    if (const auto route = m_route.find(from); route != m_route.end())
    {
        m_rooms[route->second]->receive(from, decoded, datagram.size(), now);
        return;
    }
    if (!decoded.ok())
    {
        m_metrics.bytesIn += datagram.size();
        m_metrics.drops.add(decoded.reason);
        spdlog::debug("ignored datagram from {}: {} ({} bytes)", from.toString(),
                      protocol::dropReasonName(decoded.reason), datagram.size());
        return;
    }
    const wire::Packet& packet = *decoded.packet;
    std::string room;
    switch (decoded.type())
    {
    case wire::PacketType::ConnectRequest:
        room = roomOf(packet.message_as_ConnectRequest()->room());
        break;
    case wire::PacketType::ChallengeResponse:
        room = roomOf(packet.message_as_ChallengeResponse()->room());
        break;
    case wire::PacketType::AdminRequest:
        m_metrics.bytesIn += datagram.size();
        handleAdmin(from, packet, now);
        return;
    default:
        // No session here: the first room counts it (as it would with one room).
        m_rooms.front()->receive(from, decoded, datagram.size(), now);
        return;
    }
    if (Server* target = findRoom(room))
    {
        target->receive(from, decoded, datagram.size(), now);
        return;
    }
    m_metrics.bytesIn += datagram.size();
    ++m_metrics.unknownRoom;
    spdlog::debug("denied {}: no room '{}'", from.toString(), room);
    // Smaller than the padded request that caused it: no amplification.
    send(from, m_writer.connectDenied({}, wire::DenyReason::UnknownRoom));
}

bool Host::freshNonce(std::uint64_t nonce, double wallNow)
{
    while (!m_nonceOrder.empty() && (m_nonceOrder.front().first < wallNow - 2.0 * protocol::kAdminTimeWindowSeconds ||
                                     m_nonceOrder.size() >= kMaxNoncesRemembered))
    {
        m_nonces.erase(m_nonceOrder.front().second);
        m_nonceOrder.pop_front();
    }
    if (!m_nonces.insert(nonce).second)
    {
        return false;
    }
    m_nonceOrder.emplace_back(wallNow, nonce);
    return true;
}

void Host::handleAdmin(const protocol::Address& from, const wire::Packet& packet, double now)
{
    if (m_config.adminKey.empty())
    {
        ++m_metrics.adminDisabled;
        spdlog::debug("admin request from {} refused: no admin key configured", from.toString());
        return;
    }
    const auto* request = packet.message_as_AdminRequest(); // sizes checked by decodePacket
    const std::span<const std::uint8_t> command(request->command()->data(), request->command()->size());
    if (!protocol::verifyAdminMac(m_adminKey, command, {request->mac()->data(), request->mac()->size()}))
    {
        ++m_metrics.adminBadMac; // no reply: forged requests learn nothing
        spdlog::debug("admin request from {} refused: bad key", from.toString());
        return;
    }
    protocol::AdminCommandFields fields;
    if (!protocol::decodeAdminCommand(command, fields))
    {
        ++m_metrics.adminMalformed;
        send(from, m_writer.adminReply({}, 0, false, "malformed admin command"));
        return;
    }
    // A replayed nonce gets no reply (the original got one); a stale time does (clock skew is common).
    const double wallNow = m_config.wallClock();
    if (!(std::fabs(fields.time - wallNow) <= protocol::kAdminTimeWindowSeconds))
    {
        ++m_metrics.adminStale;
        send(from, m_writer.adminReply({}, fields.nonce, false,
                                       "command time is more than 30 s from the server's clock (" +
                                           std::to_string(static_cast<long long>(wallNow)) + ")"));
        return;
    }
    if (!freshNonce(fields.nonce, wallNow))
    {
        ++m_metrics.adminReplayed;
        spdlog::debug("admin request from {} refused: nonce replayed", from.toString());
        return;
    }
    Server* target = findRoom(fields.room);
    if (target == nullptr)
    {
        ++m_metrics.adminUnknownRoom;
        send(from, m_writer.adminReply({}, fields.nonce, false, "no room '" + fields.room + "'"));
        return;
    }
    ++m_metrics.adminAccepted;
    const AdminResult result = target->admin(fields, now);
    send(from, m_writer.adminReply({}, fields.nonce, result.ok, result.message));
}

void Host::update(double now)
{
    for (auto& room : m_rooms)
    {
        room->update(now);
    }
}

void Host::shutdown(double now)
{
    for (auto& room : m_rooms)
    {
        room->shutdown(now);
    }
}

double Host::nextUpdateTime() const
{
    double next = std::numeric_limits<double>::infinity();
    for (const auto& room : m_rooms)
    {
        next = std::min(next, room->nextUpdateTime());
    }
    return next;
}

void Host::saveState(std::vector<std::uint8_t>& out) const
{
    const auto put32 = [&](std::uint32_t v)
    {
        const auto* b = reinterpret_cast<const std::uint8_t*>(&v);
        out.insert(out.end(), b, b + 4);
    };
    put32(static_cast<std::uint32_t>(m_rooms.size()));
    for (const auto& room : m_rooms)
    {
        const std::string& name = room->config().room;
        put32(static_cast<std::uint32_t>(name.size()));
        out.insert(out.end(), name.begin(), name.end());
        std::vector<std::uint8_t> state;
        room->saveState(state);
        put32(static_cast<std::uint32_t>(state.size()));
        out.insert(out.end(), state.begin(), state.end());
    }
}

bool Host::restoreState(std::span<const std::uint8_t> data, std::string& error)
{
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

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
    if (!validateSecurityConfig(config.security, error))
    {
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
        SendFunction roomSend = [self](const protocol::Address& to, std::span<const std::uint8_t> d)
        { self->sendFromRoom(to, d); };
        auto room = config.cookieKey ? Server::create(config.rooms[i], std::move(roomSend), error, *config.cookieKey)
                                     : Server::create(config.rooms[i], std::move(roomSend), error);
        if (!room)
        {
            error = "room '" + config.rooms[i].room + "': " + error;
            return nullptr;
        }
        room->setSessionObserver([self, index](const protocol::Address& address, bool opened)
                                 { self->onSession(index, address, opened); });
        host->m_rooms.push_back(std::move(room));
    }
    return host;
}

Host::Host(const HostConfig& config, SendFunction send)
    : m_config(config), m_send(std::move(send)), m_gate(config.security)
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

void Host::sendFromRoom(const protocol::Address& to, std::span<const std::uint8_t> datagram)
{
    const auto secure = m_secure.find(to);
    if (secure == m_secure.end())
    {
        m_send(to, datagram);
        return;
    }
    const std::span<const std::uint8_t> sealed = secure->second.channel.seal(datagram);
    if (sealed.empty())
    {
        // Larger than a sealed datagram can carry: a bug in the sender's size limits, never sent plain.
        spdlog::error("datagram of {} bytes to {} is too large to seal; not sent", datagram.size(), to.toString());
        return;
    }
    ++m_metrics.datagramsSealed;
    m_metrics.bytesOut += sealed.size() - datagram.size();
    m_send(to, sealed);
}

void Host::onSession(std::size_t room, const protocol::Address& address, bool opened)
{
    if (opened)
    {
        m_route[address] = room;
        if (m_pending && m_pending->first == address)
        {
            m_gate.markUsed(m_pendingToken, address);
            m_secure.insert_or_assign(address, std::move(m_pending->second));
            m_pending.reset();
            ++m_metrics.sealedSessions;
        }
        else
        {
            ++m_metrics.plainSessions;
        }
        return;
    }
    m_route.erase(address);
    if (const auto secure = m_secure.find(address); secure != m_secure.end())
    {
        m_gate.sessionEnded(secure->second.tokenClientId);
        m_secure.erase(secure);
    }
}

void Host::drop(const protocol::Address& from, protocol::DropReason reason, std::size_t bytes, const char* what)
{
    m_metrics.bytesIn += bytes;
    m_metrics.drops.add(reason);
    spdlog::debug("dropped {} from {}: {} ({} bytes)", what, from.toString(), protocol::dropReasonName(reason), bytes);
}

bool Host::screenHandshake(const protocol::Address& from, const wire::Packet& packet, Server& room,
                           std::size_t bytes)
{
    const bool isResponse = packet.header()->type() == wire::PacketType::ChallengeResponse;
    const wire::TokenCredential* credential = isResponse ? packet.message_as_ChallengeResponse()->token()
                                                         : packet.message_as_ConnectRequest()->token();
    const bool openSession = m_route.count(from) != 0;
    const auto secure = m_secure.find(from);
    protocol::TokenCredentialFields fields;
    if (!protocol::readTokenCredential(credential, fields))
    {
        // Tokenless: only on an --insecure server, and never to repeat a sealed session's handshake.
        if (!m_config.security.insecure || secure != m_secure.end())
        {
            drop(from, protocol::DropReason::NoToken, bytes, "tokenless connect");
            return false;
        }
        return true;
    }
    if (openSession && secure == m_secure.end())
    {
        drop(from, protocol::DropReason::TokenReused, bytes, "token for a plain session");
        return false;
    }
    const TokenCheck check = m_gate.check(fields, room.config().room, from, openSession, m_config.wallClock());
    if (check.reason)
    {
        drop(from, *check.reason, bytes, isResponse ? "challenge response" : "connect request");
        return false;
    }
    if (!isResponse)
    {
        return true;
    }
    const auto* cookie = packet.message_as_ChallengeResponse()->cookie(); // kCookieBytes: decodePacket checked
    std::array<std::uint8_t, protocol::kCookieSaltBytes> salt{};
    std::copy_n(cookie->data(), salt.size(), salt.begin());
    if (secure != m_secure.end())
    {
        // A repeat for the open session: its ConnectAccepted goes out under the session's own keys, so it
        // must carry the same salt (the cookie the session was opened with).
        if (secure->second.salt != salt)
        {
            drop(from, protocol::DropReason::TokenReused, bytes, "challenge response with another salt");
            return false;
        }
        return true;
    }
    SecureSession session;
    session.salt = salt;
    session.tokenClientId = check.token.clientId;
    session.channel = protocol::SealedChannel(protocol::deriveSessionKeys(
        check.token.clientToServerKey, check.token.serverToClientKey,
        std::span<const std::uint8_t, protocol::kSessionSaltBytes>(salt.data(), salt.size()), true));
    if (m_gate.usedTokens() >= m_config.security.maxUsedTokens)
    {
        spdlog::warn("used-token table full ({} entries): refusing connects until tokens expire",
                     m_gate.usedTokens());
        drop(from, protocol::DropReason::TokenRefused, bytes, "challenge response");
        return false;
    }
    m_pending.emplace(from, std::move(session));
    m_pendingToken = check;
    return true;
}

void Host::receive(const protocol::Address& from, std::span<const std::uint8_t> datagram, double now)
{
    const auto secure = m_secure.find(from);
    std::span<const std::uint8_t> bytes = datagram;
    if (protocol::isSealed(datagram))
    {
        if (secure == m_secure.end())
        {
            drop(from, protocol::DropReason::BadSeal, datagram.size(), "sealed datagram without a session");
            return;
        }
        std::span<const std::uint8_t> plain;
        const protocol::OpenError error = secure->second.channel.open(datagram, plain);
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
    const protocol::DecodeResult decoded = protocol::decodePacket(bytes);
    const bool handshake = decoded.ok() && (decoded.type() == wire::PacketType::ConnectRequest ||
                                            decoded.type() == wire::PacketType::ChallengeResponse);
    if (secure != m_secure.end() && bytes.data() == datagram.data() && !handshake)
    {
        // Plain from a sealed session's address: forged or spoofed (only the handshake is plain).
        drop(from, decoded.ok() ? protocol::DropReason::Unsealed : decoded.reason, datagram.size(), "datagram");
        return;
    }
    const auto route = m_route.find(from);
    if (route != m_route.end() && !handshake)
    {
        m_rooms[route->second]->receive(from, decoded, datagram.size(), now);
        return;
    }
    if (!decoded.ok())
    {
        drop(from, decoded.reason, datagram.size(), "datagram");
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
        if (!m_gate.admit(from, now))
        {
            drop(from, protocol::DropReason::RateLimited, datagram.size(), "admin request");
            return;
        }
        m_metrics.bytesIn += datagram.size();
        handleAdmin(from, packet, now);
        return;
    default:
        // No session here: the first room counts it (as it would with one room).
        m_rooms.front()->receive(from, decoded, datagram.size(), now);
        return;
    }
    if (route == m_route.end() && !m_gate.admit(from, now))
    {
        drop(from, protocol::DropReason::RateLimited, datagram.size(), "connect");
        return;
    }
    // A repeat from an open session goes to its own room, whatever it names.
    Server* target = route != m_route.end() ? m_rooms[route->second].get() : findRoom(room);
    if (target == nullptr)
    {
        m_metrics.bytesIn += datagram.size();
        ++m_metrics.unknownRoom;
        spdlog::debug("denied {}: no room '{}'", from.toString(), room);
        // Smaller than the padded request that caused it: no amplification.
        send(from, m_writer.connectDenied({}, wire::DenyReason::UnknownRoom));
        return;
    }
    if (!screenHandshake(from, packet, *target, datagram.size()))
    {
        return;
    }
    target->receive(from, decoded, datagram.size(), now);
    m_pending.reset(); // not taken: the room refused (full, bad cookie), or it was a repeat
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
    if (now - m_lastSweep >= 1.0)
    {
        m_lastSweep = now;
        m_gate.sweep(now, m_config.wallClock());
    }
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

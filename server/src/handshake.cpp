// polytope-server: the handshake, from a first ConnectRequest to ConnectAccepted (STANDARD.md §3, §11).
//
//   client                                   server
//   ConnectRequest(room, token) ─────────▶  rate limits, room, token  ─▶ Challenge(cookie)
//   ChallengeResponse(cookie, token) ─────▶ rate limits, room, token, cookie, space
//                                            ─▶ keys from the token and the cookie's salt, a connection slot,
//                                               the room's join  ─▶ ConnectAccepted (sealed)
//
// A ConnectRequest costs the server no state: the cookie (connect_cookie.h) proves on the response that the
// client receives at its address. The token (connect_gate.h) proves the backend let it in, to this server
// and room, until it expires; a token opens one session (repeats of the handshake from the same address are
// answered again, since the answer may have been lost). Every refusal is counted; a refusal is never
// answered with more bytes than the datagram that caused it, and most are not answered at all.
#include "polytope/server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace polytope::server
{
namespace wire = protocol::wire;

namespace
{
std::string roomOf(const flatbuffers::String* name) { return name ? name->str() : std::string(); }
} // namespace

void Server::reply(const protocol::Address& to, ClientSlot slot, std::span<const std::uint8_t> datagram)
{
    if (slot == kNoSlot)
    {
        send(to, datagram);
        return;
    }
    ++m_metrics.datagramsOut;
    m_metrics.bytesOut += datagram.size();
    sendTo(slot, datagram); // sealed on a sealed connection
}

Room* Server::admitHandshake(const protocol::Address& from, ClientSlot slot, std::string_view roomName,
                             std::size_t bytes, double now)
{
    if (slot != kNoSlot)
    {
        // A repeat from an open connection goes to its own room, whatever it names.
        return m_rooms[m_connections[slot].room].get();
    }
    if (!m_gate.admit(from, now))
    {
        drop(from, protocol::DropReason::RateLimited, bytes, "connect");
        return nullptr;
    }
    Room* room = findRoom(roomName);
    if (room == nullptr)
    {
        m_metrics.bytesIn += bytes;
        ++m_metrics.unknownRoom;
        spdlog::debug("denied {}: no room '{}'", from.toString(), roomName);
        // Smaller than the padded request that caused it: no amplification.
        send(from, m_writer.connectDenied({}, wire::DenyReason::UnknownRoom));
    }
    return room;
}

bool Server::checkToken(const protocol::Address& from, const wire::TokenCredential* credential, ClientSlot slot,
                        const Room& room, std::size_t bytes, const char* what, TokenCheck& out)
{
    const bool sealedConnection = slot != kNoSlot && m_connections[slot].channel.active();
    protocol::TokenCredentialFields fields;
    if (!protocol::readTokenCredential(credential, fields))
    {
        // Tokenless: only on an --insecure server, and never to repeat a sealed session's handshake.
        if (!m_config.security.insecure || sealedConnection)
        {
            drop(from, protocol::DropReason::NoToken, bytes, "tokenless connect");
            return false;
        }
        out = TokenCheck{};
        out.token.clientId = 0; // no token
        return true;
    }
    if (slot != kNoSlot && !sealedConnection)
    {
        drop(from, protocol::DropReason::TokenReused, bytes, "token for a plain session");
        return false;
    }
    out = m_gate.check(fields, room.config().room, from, slot != kNoSlot, m_config.wallClock());
    if (out.reason)
    {
        drop(from, *out.reason, bytes, what);
        return false;
    }
    return true;
}

void Server::handleConnectRequest(const protocol::Address& from, const wire::Packet& packet, std::size_t bytes,
                                  double now)
{
    const ClientSlot slot = m_connections.find(from);
    const auto* message = packet.message_as_ConnectRequest();
    Room* room = admitHandshake(from, slot, roomOf(message->room()), bytes, now);
    TokenCheck token;
    if (room == nullptr || !checkToken(from, message->token(), slot, *room, bytes, "connect request", token))
    {
        return;
    }
    // Stateless: answer with a cookie only the requester's address can echo, and forget the request.
    m_metrics.bytesIn += bytes;
    ++m_metrics.challengesSent;
    const ConnectCookies::Cookie cookie = m_cookies.issue(from, now);
    reply(from, slot, m_writer.challenge({}, cookie));
}

void Server::handleChallengeResponse(const protocol::Address& from, const wire::Packet& packet, std::size_t bytes,
                                     double now)
{
    ClientSlot slot = m_connections.find(from);
    const auto* message = packet.message_as_ChallengeResponse();
    Room* room = admitHandshake(from, slot, roomOf(message->room()), bytes, now);
    TokenCheck token;
    if (room == nullptr || !checkToken(from, message->token(), slot, *room, bytes, "challenge response", token))
    {
        return;
    }
    const bool withToken = token.token.clientId != 0;
    const auto* cookie = message->cookie(); // kCookieBytes: decodePacket checked
    std::array<std::uint8_t, protocol::kCookieSaltBytes> salt{};
    std::copy_n(cookie->data(), salt.size(), salt.begin());
    if (withToken && slot != kNoSlot && m_connections[slot].salt != salt)
    {
        // A repeat for the open session: its ConnectAccepted goes out under the session's own keys, so it
        // must carry the same salt (the cookie the session was opened with).
        drop(from, protocol::DropReason::TokenReused, bytes, "challenge response with another salt");
        return;
    }
    if (withToken && slot == kNoSlot && m_gate.usedTokens() >= m_config.security.maxUsedTokens)
    {
        spdlog::warn("used-token table full ({} entries): refusing connects until tokens expire", m_gate.usedTokens());
        drop(from, protocol::DropReason::TokenRefused, bytes, "challenge response");
        return;
    }

    // The cookie: issued by this server, to this address, recently.
    m_metrics.bytesIn += bytes;
    const CookieCheck check = m_cookies.verify(from, {cookie->data(), cookie->size()}, now);
    if (check != CookieCheck::Valid)
    {
        m_metrics.drops.add(protocol::DropReason::BadCookie);
        ++(check == CookieCheck::Expired ? m_metrics.cookiesExpired : m_metrics.cookiesForged);
        spdlog::debug("ignored challenge response from {}: bad_cookie ({})", from.toString(), cookieCheckName(check));
        return;
    }

    if (slot == kNoSlot)
    {
        // A new session: space in the room, a connection slot, keys, and the room's join.
        if (!room->hasSpace() || (slot = m_connections.open(from)) == kNoSlot)
        {
            room->countDenied();
            send(from, m_writer.connectDenied({}, wire::DenyReason::ServerFull));
            spdlog::debug("denied {}: room '{}' full ({} clients)", from.toString(), room->config().room,
                          room->clientCount());
            return;
        }
        Connection& connection = m_connections[slot];
        connection.room = roomIndex(*room);
        connection.salt = salt;
        connection.lastReceiveTime = now;
        if (withToken)
        {
            connection.tokenClientId = token.token.clientId;
            connection.channel = protocol::SealedChannel(protocol::deriveSessionKeys(
                token.token.clientToServerKey, token.token.serverToClientKey,
                std::span<const std::uint8_t, protocol::kSessionSaltBytes>(salt.data(), salt.size()), true));
            m_gate.markUsed(token, from);
            ++m_metrics.sealedSessions;
        }
        else
        {
            ++m_metrics.plainSessions;
        }
        const auto* name = message->client_name();
        connection.clientId =
            room->join(slot, name ? name->str() : std::string(), message->snapshot_rate_hz(), message->spectator(), now);
    }
    // Repeated responses get the same answer: the first reply may have been lost.
    Connection& connection = m_connections[slot];
    connection.acks.onReceived(packet.header()->sequence());
    connection.lastReceiveTime = now;
    reply(from, slot, m_writer.connectAccepted(connection.acks.nextOutgoing(), room->sessionParameters(slot)));
}

} // namespace polytope::server

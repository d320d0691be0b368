// polytope-server: the handshake, from a first ConnectRequest to ConnectAccepted (STANDARD.md §3, §11).
//
//   client                                   server
//   ConnectRequest(room, token) ─────────▶  rate limits, token, room  ─▶ Challenge(cookie)
//   ChallengeResponse(cookie, token) ─────▶ cookie, rate limit, token, room, space
//                                            ─▶ keys from the token and the cookie's salt, a connection slot,
//                                               the room's join  ─▶ ConnectAccepted (sealed)
//
// A ConnectRequest costs the server no state: the cookie (connect_cookie.h) proves on the response that the
// client receives at its address. The token (connect_gate.h) proves the backend let it in, to this server
// and room, until it expires; a token opens one session (repeats of the handshake from the same address are
// answered again, since the answer may have been lost). Every refusal is counted; a refusal is never
// answered with more bytes than the datagram that caused it, and most are not answered at all.
#include "polytope/server/server.h"

#include "polytope/server/log_format.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace polytope::server
{
namespace wire = protocol::wire;

namespace
{
std::string roomOf(const flatbuffers::String* name)
{
    return name ? name->str() : std::string();
}
} // namespace

Room* Server::admitHandshake(const protocol::Address& from, ClientSlot slot, std::string_view roomName,
                             const wire::TokenCredential* credential, AdmitKind kind, std::size_t bytes,
                             double now, TokenCheck& token)
{
    // Every handshake datagram pays the rate limits, from a connected address too.
    const char* what = kind == AdmitKind::Connect ? "connect request" : "challenge response";
    if (!m_gate.admit(from, now, kind))
    {
        drop(from, protocol::DropReason::RateLimited, bytes, what);
        return nullptr;
    }
    // A repeat from an open connection goes to its own room, whatever it names.
    Room* room = slot != kNoSlot ? m_rooms[m_connections[slot].room].get() : findRoom(roomName);
    // The token before the room: without one (or with a bad one) nothing, not even whether a room exists,
    // is answered.
    const std::string_view asked = room != nullptr ? std::string_view(room->config().room) : roomName;
    if (!checkToken(from, credential, slot, asked, bytes, what, token))
    {
        return nullptr;
    }
    if (room == nullptr)
    {
        m_metrics.bytesIn += bytes;
        ++m_metrics.unknownRoom;
        spdlog::debug("denied {}: no room '{}'", from, roomName);
        // Smaller than the padded request that caused it: no amplification.
        send(from, m_writer.connectDenied({}, wire::DenyReason::UnknownRoom));
    }
    return room;
}

bool Server::checkToken(const protocol::Address& from, const wire::TokenCredential* credential,
                        ClientSlot slot, std::string_view roomName, std::size_t bytes, const char* what,
                        TokenCheck& out)
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
    out = m_gate.check(fields, roomName, from, slot != kNoSlot, m_config.wallClock());
    if (out.reason)
    {
        drop(from, *out.reason, bytes, what);
        return false;
    }
    return true;
}

void Server::denyVersion(const protocol::Address& from, std::uint16_t version, std::size_t bytes, double now)
{
    // No token check: a token is bound to its protocol version, and this server cannot open another's. So
    // the rate limits alone stand between a spoofed flood and its victim, which gets at most the per-IP
    // rate of 64-byte denials for requests of at least 512 bytes.
    if (!m_gate.admit(from, now, AdmitKind::Connect))
    {
        drop(from, protocol::DropReason::RateLimited, bytes, "connect request of another version");
        return;
    }
    drop(from, protocol::DropReason::WrongVersion, bytes, "connect request of another version");
    ++m_metrics.versionDenied;
    send(from, m_writer.connectDenied({}, wire::DenyReason::Version, version));
}

void Server::handleConnectRequest(const protocol::Address& from, const wire::Packet& packet,
                                  std::size_t bytes, double now)
{
    const ClientSlot slot = m_connections.find(from);
    const auto* message = packet.message_as_ConnectRequest();
    TokenCheck token;
    if (admitHandshake(from, slot, roomOf(message->room()), message->token(), AdmitKind::Connect, bytes, now,
                       token) == nullptr)
    {
        return;
    }
    // Stateless: answer with a cookie only the requester's address can echo, and forget the request.
    m_metrics.bytesIn += bytes;
    ++m_metrics.challengesSent;
    const ConnectCookies::Cookie cookie = m_cookies.issue(from, now);
    if (slot == kNoSlot)
    {
        send(from, m_writer.challenge({}, cookie));
        return;
    }
    // A connection's datagrams are the room's to send (sealed on a sealed connection).
    m_hosts[m_connections[slot].room]->post([slot, cookie](Room& r) { r.sendChallenge(slot, cookie); });
}

void Server::handleChallengeResponse(const protocol::Address& from, const wire::Packet& packet,
                                     std::size_t bytes, double now)
{
    ClientSlot slot = m_connections.find(from);
    const auto* message = packet.message_as_ChallengeResponse();
    // The cookie first: it is cheap, and it proves the sender receives at its address, so that the rest is
    // limited per address only (a spoofed flood cannot use up what real clients need).
    const auto* cookie = message->cookie(); // kCookieBytes: decodePacket checked
    const CookieCheck check = m_cookies.verify(from, {cookie->data(), cookie->size()}, now);
    if (check != CookieCheck::Valid)
    {
        m_metrics.bytesIn += bytes;
        m_metrics.drops.add(protocol::DropReason::BadCookie);
        ++(check == CookieCheck::Expired ? m_metrics.cookiesExpired : m_metrics.cookiesForged);
        spdlog::debug("ignored challenge response from {}: bad_cookie ({})", from, cookieCheckName(check));
        return;
    }
    TokenCheck token;
    Room* room = admitHandshake(from, slot, roomOf(message->room()), message->token(), AdmitKind::Response,
                                bytes, now, token);
    if (room == nullptr)
    {
        return;
    }
    const bool withToken = token.token.clientId != 0;
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
        spdlog::warn("used-token table full ({} entries): refusing connects until tokens expire",
                     m_gate.usedTokens());
        drop(from, protocol::DropReason::TokenRefused, bytes, "challenge response");
        return;
    }

    m_metrics.bytesIn += bytes;

    const std::size_t roomNumber = roomIndex(*room);
    RoomHost& host = *m_hosts[roomNumber];
    if (slot == kNoSlot)
    {
        // A new session: space in the room, a connection slot, keys, and the room's join.
        if (m_roomConnections[roomNumber] >= static_cast<std::size_t>(room->config().maxClients) ||
            (slot = m_connections.open(from)) == kNoSlot)
        {
            host.post([](Room& r) { r.countDenied(); });
            send(from, m_writer.connectDenied({}, wire::DenyReason::ServerFull));
            spdlog::debug("denied {}: room '{}' full ({} clients)", from, room->config().room,
                          m_roomConnections[roomNumber]);
            return;
        }
        ++m_roomConnections[roomNumber];
        Connection& connection = m_connections[slot];
        connection.room = roomNumber;
        connection.salt = salt;
        connection.lastReceiveTime = now; // the room's from now on
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
    }
    // The room joins a new client, and answers every response with ConnectAccepted: a repeat gets the same
    // answer, since the first may have been lost.
    Room::JoinOptions options;
    options.name = message->client_name() ? message->client_name()->str() : std::string();
    options.snapshotRateHz = message->snapshot_rate_hz();
    options.spectator = message->spectator();
    options.snapshotFormat = message->snapshot_format(); // decodePacket checked both
    options.snapshotVelocities = message->snapshot_velocities();
    host.post([slot, options = std::move(options), sequence = packet.header()->sequence(),
               now](Room& r) mutable { r.admit(slot, std::move(options), sequence, now); });
}

} // namespace polytope::server

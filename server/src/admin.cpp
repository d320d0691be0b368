// polytope-server: authenticated admin commands (protocol/admin_auth.h), carried out by the named room.
//
// An AdminRequest is answered only when its keyed hash checks out (a forged one learns nothing, not even
// that the server has admin enabled beyond the rate limit), its time is within the window of the server's
// clock and its nonce was not seen before within twice that window.
#include "polytope/server/server.h"

#include "polytope/server/log_format.h"

#include <spdlog/spdlog.h>

#include <cmath>

namespace polytope::server
{
namespace wire = protocol::wire;

namespace
{
/// Nonces remembered at most; older ones are forgotten first (their time is then outside the window anyway
/// unless more than this many commands arrive within a minute).
constexpr std::size_t kMaxNoncesRemembered = 4096;
} // namespace

bool Server::freshNonce(std::uint64_t nonce, double wallNow)
{
    while (!m_nonceOrder.empty() &&
           (m_nonceOrder.front().first < wallNow - 2.0 * protocol::kAdminTimeWindowSeconds ||
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

void Server::handleAdmin(const protocol::Address& from, const wire::Packet& packet, double now)
{
    if (m_config.adminKey.empty())
    {
        ++m_metrics.adminDisabled;
        spdlog::debug("admin request from {} refused: no admin key configured", from);
        return;
    }
    const auto* request = packet.message_as_AdminRequest(); // sizes checked by decodePacket
    const std::span<const std::uint8_t> command(request->command()->data(), request->command()->size());
    if (!protocol::verifyAdminMac(m_adminKey, command, {request->mac()->data(), request->mac()->size()}))
    {
        ++m_metrics.adminBadMac; // no reply: forged requests learn nothing
        spdlog::debug("admin request from {} refused: bad key", from);
        return;
    }
    protocol::AdminCommandFields fields;
    if (!protocol::decodeAdminCommand(command, fields))
    {
        ++m_metrics.adminMalformed;
        send(from, m_writer.adminReply({}, 0, false, "malformed admin command", &m_adminKey));
        return;
    }
    // A replayed nonce gets no reply (the original got one); a stale time does (clock skew is common).
    const double wallNow = m_config.wallClock();
    if (!(std::fabs(fields.time - wallNow) <= protocol::kAdminTimeWindowSeconds))
    {
        ++m_metrics.adminStale;
        send(from, m_writer.adminReply({}, fields.nonce, false,
                                       "command time is more than 30 s from the server's clock (" +
                                           std::to_string(static_cast<long long>(wallNow)) + ")",
                                       &m_adminKey));
        return;
    }
    if (!freshNonce(fields.nonce, wallNow))
    {
        ++m_metrics.adminReplayed;
        spdlog::debug("admin request from {} refused: nonce replayed", from);
        return;
    }
    Room* target = findRoom(fields.room);
    if (target == nullptr)
    {
        ++m_metrics.adminUnknownRoom;
        send(from,
             m_writer.adminReply({}, fields.nonce, false, "no room '" + fields.room + "'", &m_adminKey));
        return;
    }
    ++m_metrics.adminAccepted;
    // Carried out by the room between two of its ticks; the room replies.
    hostOf(*target).post([fields, from, now, key = m_adminKey](Room& room)
                         { room.runAdmin(fields, from, now, key); });
}

} // namespace polytope::server

#include "support/raw_peer.h"

#include "polytope/protocol/admin_auth.h"

#include <catch2/catch.hpp>

namespace polytope::test
{

namespace wire = protocol::wire;

RawPeer::RawPeer(InProcessNetwork& net, const protocol::Address& address, std::string name)
    : m_net(net), m_address(address), m_name(std::move(name))
{
    m_net.capture(m_address);
}

RawPeer::RawPeer(InProcessNetwork& net, const protocol::Address& address, protocol::ConnectToken connectToken,
                 std::string name)
    : RawPeer(net, address, std::move(name))
{
    credential.expireTime = connectToken.expireTime;
    credential.nonce = connectToken.nonce;
    credential.sealed = connectToken.sealed;
    token = std::move(connectToken);
}

void RawPeer::send(std::span<const std::uint8_t> datagram)
{
    m_net.deliver(m_address, datagram);
}

std::optional<protocol::SessionParameters> RawPeer::join(std::string_view room, std::uint16_t snapshotRateHz,
                                                         wire::DenyReason* denied, bool spectator)
{
    return token ? joinSealed(room, snapshotRateHz, spectator)
                 : joinTokenless(room, snapshotRateHz, denied, spectator);
}

std::optional<protocol::SessionParameters> RawPeer::joinTokenless(std::string_view room,
                                                                  std::uint16_t snapshotRateHz,
                                                                  wire::DenyReason* denied, bool spectator)
{
    std::vector<AlignedDatagram>& inbox = received();
    inbox.clear();
    send(writer.connectRequest({}, m_name, room));
    if (inbox.empty())
    {
        return std::nullopt;
    }
    const wire::Packet* challenge = inbox.back().packet();
    REQUIRE(challenge);
    if (challenge->message_type() == wire::Message::ConnectDenied)
    {
        if (denied)
        {
            *denied = challenge->message_as_ConnectDenied()->reason();
        }
        return std::nullopt;
    }
    REQUIRE(challenge->message_type() == wire::Message::Challenge);
    const auto* cookieBytes = challenge->message_as_Challenge()->cookie();
    cookie.assign(cookieBytes->begin(), cookieBytes->end());
    inbox.clear();
    send(writer.challengeResponse({1, 0, 0, 0}, cookie, m_name, room, snapshotRateHz, spectator));
    REQUIRE(!inbox.empty());
    const wire::Packet* reply = inbox.back().packet();
    REQUIRE(reply);
    if (reply->message_type() != wire::Message::ConnectAccepted)
    {
        return std::nullopt;
    }
    session = protocol::readSessionParameters(*reply->message_as_ConnectAccepted());
    return session;
}

std::optional<protocol::SessionParameters> RawPeer::joinSealed(std::string_view room,
                                                               std::uint16_t snapshotRateHz, bool spectator)
{
    std::vector<AlignedDatagram>& inbox = received();
    const std::size_t before = inbox.size();
    send(writer.connectRequest({}, m_name, room, &credential));
    if (inbox.size() == before)
    {
        return std::nullopt;
    }
    const protocol::DecodeResult decoded = inbox.back().decode();
    if (!decoded.ok() || decoded.type() != wire::PacketType::Challenge)
    {
        return std::nullopt;
    }
    const auto* cookieBytes = decoded.packet->message_as_Challenge()->cookie();
    cookie.assign(cookieBytes->begin(), cookieBytes->end());
    const std::span<const std::uint8_t, protocol::kSessionSaltBytes> salt(cookie.data(),
                                                                          protocol::kSessionSaltBytes);
    channel = protocol::SealedChannel(
        protocol::deriveSessionKeys(token->clientToServerKey, token->serverToClientKey, salt, false));
    send(
        writer.challengeResponse({1, 0, 0, 0}, cookie, m_name, room, snapshotRateHz, spectator, &credential));
    std::span<const std::uint8_t> plain;
    if (inbox.empty() || !protocol::isSealed(inbox.back().view()) ||
        channel.open(inbox.back().view(), plain) != protocol::OpenError::None)
    {
        return std::nullopt;
    }
    const protocol::DecodeResult reply = protocol::decodePacket(plain);
    if (!reply.ok() || reply.type() != wire::PacketType::ConnectAccepted)
    {
        return std::nullopt;
    }
    session = protocol::readSessionParameters(*reply.packet->message_as_ConnectAccepted());
    return session;
}

std::vector<std::uint8_t> RawPeer::seal(std::span<const std::uint8_t> plain)
{
    const auto sealed = channel.seal(plain);
    return {sealed.begin(), sealed.end()};
}

void RawPeer::sendInputs(std::span<const protocol::InputCommand> inputs)
{
    const auto datagram = writer.clientInput({++sequence(), 0, 0, 0}, inputs);
    if (channel.active())
    {
        send(seal(datagram));
    }
    else
    {
        send(datagram);
    }
}

std::optional<std::pair<bool, std::string>> RawPeer::sendAdmin(protocol::AdminCommandFields command,
                                                               std::string_view key)
{
    if (command.time == 0.0)
    {
        command.time = m_net.wallTime;
    }
    if (command.nonce == 0)
    {
        command.nonce = ++m_nonce;
    }
    const std::vector<std::uint8_t> bytes = protocol::encodeAdminCommand(command);
    const protocol::AdminMac mac = protocol::adminMac(protocol::deriveAdminMacKey(key), bytes);
    const auto datagram = writer.adminRequest({}, bytes, mac);
    CHECK(datagram.size() >= protocol::kMinAdminRequestBytes);
    std::vector<AlignedDatagram>& inbox = received();
    inbox.clear();
    send(datagram);
    if (inbox.empty())
    {
        return std::nullopt;
    }
    const wire::Packet* reply = inbox.back().packet();
    REQUIRE(reply);
    REQUIRE(reply->message_type() == wire::Message::AdminReply);
    CHECK(inbox.back().size() <= protocol::kMinAdminRequestBytes); // no amplification
    const auto* r = reply->message_as_AdminReply();
    CHECK(r->nonce() == command.nonce);
    return std::make_pair(r->ok(), r->message() ? r->message()->str() : std::string());
}

std::map<std::uint32_t, protocol::CatalogueEntry> RawPeer::catalogue()
{
    std::map<std::uint32_t, protocol::CatalogueEntry> out;
    std::vector<protocol::CatalogueEntry> entries;
    for (const AlignedDatagram& d : received())
    {
        const wire::Packet* p = d.packet();
        if (p && p->message_type() == wire::Message::Catalogue)
        {
            protocol::readCatalogue(*p->message_as_Catalogue(), entries);
            for (const protocol::CatalogueEntry& e : entries)
            {
                out[e.id] = e;
            }
        }
    }
    return out;
}

} // namespace polytope::test

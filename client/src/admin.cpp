#include "polytope/client/admin.h"

#include "polytope/client/udp_socket.h"
#include "polytope/protocol/admin_auth.h"

#include <array>
#include <chrono>

namespace polytope::client
{

bool sendAdminCommand(const std::string& host, std::uint16_t port, protocol::AdminCommandFields command,
                      const std::string& adminKey, double timeoutSeconds, AdminOutcome& outcome,
                      std::string& error)
{
    outcome = {};
    if (command.time == 0.0)
    {
        command.time =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    }
    while (command.nonce == 0)
    {
        command.nonce = protocol::randomAdminNonce();
    }
    const std::vector<std::uint8_t> bytes = protocol::encodeAdminCommand(command);
    const protocol::AdminMacKey key = protocol::deriveAdminMacKey(adminKey);
    const protocol::AdminMac mac = protocol::adminMac(key, bytes);
    protocol::PacketWriter writer;
    const std::span<const std::uint8_t> request = writer.adminRequest({}, bytes, mac);

    asio::io_context io{1};
    asio::ip::udp::socket socket(io);
    if (!connectUdpSocket(io, socket, host, port, error))
    {
        return false;
    }
    asio::error_code ec;
    socket.send(asio::buffer(request.data(), request.size()), 0, ec);
    if (ec)
    {
        error = "cannot send to " + host + ":" + std::to_string(port) + ": " + ec.message();
        return false;
    }

    struct alignas(8) Buffer : std::array<std::uint8_t, protocol::kMaxDatagramBytes + 1>
    {
    } buffer{};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
    for (auto now = std::chrono::steady_clock::now(); now < deadline; now = std::chrono::steady_clock::now())
    {
        if (!waitReadable(io, socket, std::chrono::duration<double>(deadline - now).count()))
        {
            continue; // the deadline passed
        }
        const std::size_t received = socket.receive(asio::buffer(buffer), 0, ec);
        if (ec)
        {
            continue; // would block, or an ICMP error from a closed port: keep waiting until the deadline
        }
        const protocol::DecodeResult decoded = protocol::decodePacket({buffer.data(), received});
        if (!decoded.ok() || decoded.type() != protocol::wire::PacketType::AdminReply)
        {
            continue;
        }
        const auto* reply = decoded.packet->message_as_AdminReply();
        const std::string_view text =
            reply->message() ? std::string_view(reply->message()->c_str(), reply->message()->size())
                             : std::string_view();
        if (reply->nonce() != command.nonce || !reply->mac() ||
            !protocol::verifyAdminReplyMac(key, reply->nonce(), reply->ok(), text,
                                           {reply->mac()->data(), reply->mac()->size()}))
        {
            continue; // not the answer to this command, or not from a server with this key: not trusted
        }
        outcome.replied = true;
        outcome.ok = reply->ok();
        outcome.message = reply->message() ? reply->message()->str() : std::string();
        return true;
    }
    return true;
}

} // namespace polytope::client

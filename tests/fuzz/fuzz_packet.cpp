// libFuzzer target: protocol::decodePacket on arbitrary bytes. Whatever it accepts must satisfy the
// documented invariants; nothing it is given may crash, hang, or trip a sanitizer.
#include "polytope/protocol/packet.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope::protocol;
    // Receive buffers are 8-byte aligned; copy there as the server does.
    std::vector<std::uint64_t> storage(size / 8 + 1);
    std::memcpy(storage.data(), data, size);
    const DecodeResult result = decodePacket({reinterpret_cast<const std::uint8_t*>(storage.data()), size});
    if (!result.ok())
    {
        return 0;
    }
    if (size < kMinDatagramBytes || size > kMaxDatagramBytes)
    {
        std::abort(); // accepted a datagram of a size it must refuse
    }
    switch (result.type())
    {
    case wire::PacketType::Snapshot:
    {
        const auto* snapshot = result.packet->message_as_Snapshot();
        if (!snapshot || !snapshot->payload() || snapshot->payload()->size() == 0 ||
            snapshot->payload()->size() > kMaxSnapshotPayloadBytes || !std::isfinite(snapshot->server_time()))
        {
            std::abort();
        }
        break;
    }
    case wire::PacketType::ConnectAccepted:
    {
        const SessionParameters p = readSessionParameters(*result.packet->message_as_ConnectAccepted());
        if (!p.position.isValid() || p.clientId == 0 || p.maxBaselineAgeTicks == 0)
        {
            std::abort();
        }
        break;
    }
    case wire::PacketType::Challenge:
    case wire::PacketType::ChallengeResponse:
    case wire::PacketType::ConnectRequest:
        if ((result.type() != wire::PacketType::Challenge && size < kMinConnectRequestBytes))
        {
            std::abort();
        }
        break;
    case wire::PacketType::AdminRequest:
    {
        const auto* request = result.packet->message_as_AdminRequest();
        if (size < kMinAdminRequestBytes || request->mac()->size() != kAdminMacBytes)
        {
            std::abort();
        }
        AdminCommandFields command;
        if (decodeAdminCommand({request->command()->data(), request->command()->size()}, command) &&
            (command.room.size() > kMaxRoomNameBytes || command.text.size() > kMaxAdminTextBytes))
        {
            std::abort();
        }
        break;
    }
    default:
        break;
    }
    return 0;
}

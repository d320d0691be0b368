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
    if (result.type() == wire::PacketType::Snapshot)
    {
        const auto* snapshot = result.packet->message_as_Snapshot();
        if (!snapshot || snapshot->slice_index() >= snapshot->slice_count())
        {
            std::abort();
        }
        if (const auto* bodies = snapshot->bodies())
        {
            for (const wire::BodyState* b : *bodies)
            {
                if (!std::isfinite(b->position().x()) || !std::isfinite(b->orientation().w()) || b->generation() == 0)
                {
                    std::abort();
                }
            }
        }
    }
    return 0;
}

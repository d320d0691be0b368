// libFuzzer target: Catalogue datagrams (decodePacket, then readCatalogue as the client does). Every entry
// of an accepted datagram must satisfy the documented ranges.
#include "polytope/protocol/packet.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope::protocol;
    std::vector<std::uint64_t> storage(size / 8 + 1);
    std::memcpy(storage.data(), data, size);
    const DecodeResult result = decodePacket({reinterpret_cast<const std::uint8_t*>(storage.data()), size});
    if (!result.ok() || result.type() != wire::PacketType::Catalogue)
    {
        return 0;
    }
    std::vector<CatalogueEntry> entries;
    readCatalogue(*result.packet->message_as_Catalogue(), entries);
    if (entries.empty() || entries.size() > kMaxCatalogueEntriesPerDatagram)
    {
        std::abort();
    }
    for (const CatalogueEntry& e : entries)
    {
        if (e.generation == 0 || static_cast<int>(e.shape) > static_cast<int>(wire::ShapeKind::MAX))
        {
            std::abort();
        }
        for (float v : e.extent)
        {
            if (!std::isfinite(v) || v < 0.0f || v > kMaxShapeExtentMeters)
            {
                std::abort();
            }
        }
    }
    return 0;
}

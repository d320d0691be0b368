// libFuzzer target: RecordingReader on arbitrary bytes (a recording file). It must refuse or read them, never
// crash, every frame it lists must read or fail with a message, and every geometry it accepted must be what
// its hash names.
#include "polytope/client/recording.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    polytope::client::RecordingReader reader;
    std::string error;
    if (!reader.openMemory({data, size}, error))
    {
        return 0;
    }
    for (const auto& [hash, geometry] : reader.geometry())
    {
        if (polytope::protocol::geometryHash(geometry.bytes) != hash ||
            geometry.geometry.kind != geometry.kind)
        {
            __builtin_trap(); // open() verifies every geometry
        }
    }
    polytope::client::ReceivedSnapshot frame;
    for (std::size_t i = 0; i < reader.frameCount(); ++i)
    {
        if (!reader.readFrame(i, frame, error) && error.empty())
        {
            __builtin_trap(); // a refusal must say why
        }
    }
    if (reader.frameCount() > 0)
    {
        (void)reader.findTick(reader.index().back().tick);
        (void)reader.findServerTime(reader.index().front().serverTime);
    }
    return 0;
}

// libFuzzer target: the delta-coded snapshot payload, decoded by a SnapshotReceiver that holds two real
// baselines. Whatever it accepts must be in range; nothing may crash, hang or trip a sanitizer.
#include "fuzz_snapshot_setup.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope;
    const protocol::SnapshotCodecConfig config = fuzz::fuzzCodecConfig();
    static const protocol::SnapshotReceiver primed = []
    {
        protocol::SnapshotEncoder encoder(fuzz::fuzzCodecConfig());
        protocol::SnapshotReceiver r(fuzz::fuzzCodecConfig());
        fuzz::primeReceiver(r, encoder);
        return r;
    }();
    protocol::SnapshotReceiver receiver = primed;
    const protocol::SliceOutcome outcome = receiver.onSlice(120, {data, size});
    if (outcome.error != protocol::CodecError::None || !outcome.completed)
    {
        return 0;
    }
    const auto* bodies = receiver.find(120);
    if (bodies == nullptr || bodies->size() > config.maxBodies)
    {
        std::abort();
    }
    for (std::size_t i = 0; i < bodies->size(); ++i)
    {
        const protocol::QuantizedBody& b = (*bodies)[i];
        if (b.generation == 0 || (i > 0 && (*bodies)[i - 1].id >= b.id) ||
            !protocol::isValidOrientation({b.largest, b.orientation}))
        {
            std::abort();
        }
        for (int axis = 0; axis < 3; ++axis)
        {
            if (b.position[static_cast<std::size_t>(axis)] > config.position.maxCode(axis))
            {
                std::abort();
            }
        }
    }
    return 0;
}

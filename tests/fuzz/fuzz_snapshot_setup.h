// Shared by fuzz_snapshot_payload and make_packet_corpus: a receiver that holds two complete ticks (100 and
// 110) of a small scene, so fuzzed slices for tick 120 can name real baselines and references.
#pragma once

#include "polytope/protocol/snapshot_channel.h"

#include <vector>

namespace polytope::fuzz
{

inline protocol::SnapshotCodecConfig fuzzCodecConfig()
{
    protocol::SnapshotCodecConfig config;
    config.maxBaselineAgeTicks = 64;
    config.maxBodies = 4096;
    config.maxSlicePayloadBytes = 1100;
    return config;
}

/// The scene at a tick: 40 bodies, some moving, ids with gaps.
inline std::vector<protocol::QuantizedBody> fuzzScene(std::uint64_t tick)
{
    std::vector<protocol::QuantizedBody> bodies;
    for (std::uint32_t i = 0; i < 40; ++i)
    {
        protocol::QuantizedBody b;
        b.id = i * 4 + (i % 3);
        b.generation = 1 + i % 3;
        b.atRest = i % 5 == 0;
        const auto t = static_cast<std::uint32_t>(tick);
        b.position = {200000u + i * 1000u + (b.atRest ? 0u : t * 7u), 60000u + i * 11u,
                      250000u - (b.atRest ? 0u : t)};
        b.orientation[1] =
            static_cast<std::uint16_t>(protocol::kOrientationZeroCode + (b.atRest ? 0 : (t % 50)));
        bodies.push_back(b);
    }
    return bodies;
}

/// A receiver holding ticks 100 and 110 (fed through full snapshots).
inline void primeReceiver(protocol::SnapshotReceiver& receiver, protocol::SnapshotEncoder& encoder)
{
    for (std::uint64_t tick : {100u, 110u})
    {
        const auto bodies = fuzzScene(tick);
        encoder.encode(protocol::SnapshotFrame(tick, bodies), nullptr, nullptr);
        for (const protocol::EncodedSlice& slice : encoder.slices())
        {
            receiver.onSlice(tick, slice.payload);
        }
    }
}

} // namespace polytope::fuzz

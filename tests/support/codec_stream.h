// Tests and benchmarks: the snapshot codec alone, streamed from a sender to one receiver over the seeded
// protocol::NetworkSimulator, without the Server and the Client. protocol_tests checks that it decodes every
// complete tick bit-exactly under loss; polytope-bench's codec_* cases measure its bandwidth on Fiedler's
// scene.
//
// Each tick the sender takes the caller's snapshot, encodes it against the newest tick the receiver
// acknowledged (with the acknowledged one before it as reference), encodes it again for a second client with
// the same acknowledgements (whose frame is then already checked), skips snapshots identical to their
// baseline except every idleHeartbeatTicks, and sends the slices, each behind an 8-byte tick (the envelope,
// reduced). The receiver decodes what arrived, reassembles ticks whose slices all came, compares them with
// what the sender had, and acknowledges every tick with its newest complete tick and a 64-bit mask of the
// ones before (through the simulator too).
#pragma once

#include "polytope/protocol/network_simulator.h"
#include "polytope/protocol/snapshot_codec.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace polytope::test
{

/// How a codec stream runs.
struct CodecStreamSettings
{
    double seconds = 12.0;               ///< simulated time
    int tickRateHz = 60;                 ///< one snapshot a tick
    std::uint64_t firstTick = 1;         ///< the first snapshot's tick (ticks are arbitrary)
    protocol::NetworkConditions network; ///< both directions
    std::uint64_t networkSeed = 1;
    int idleHeartbeatTicks = 15; ///< a snapshot identical to its baseline is sent once in this many ticks
    protocol::SnapshotCodecConfig codec;
};

/// What the caller supplies (snapshot) and may watch (the rest, optional).
struct CodecStreamHooks
{
    /// The sender's quantized bodies at `tick`, in ascending id order; called once a tick, in tick order.
    std::function<std::vector<protocol::QuantizedBody>(std::uint64_t tick)> snapshot;
    /// Sees each snapshot but the first, right after snapshot() made it, beside the one of the tick before.
    std::function<void(std::span<const protocol::QuantizedBody> before,
                       std::span<const protocol::QuantizedBody> now)>
        consecutiveSnapshots;
    /// Each slice as it is sent: its tick and its payload's size, bytes (without the 8-byte tick).
    std::function<void(std::uint64_t tick, std::size_t payloadBytes)> sentSlice;
    /// Clocks to time the encoder with, seconds: the wall clock and this thread's processor time.
    std::function<double()> wallClock, cpuClock;
};

struct CodecStreamResult
{
    std::size_t largestPayload = 0;   ///< bytes, of any slice sent
    std::size_t fullSnapshots = 0;    ///< ticks encoded without a baseline
    std::size_t deltaSnapshots = 0;   ///< ticks encoded against a baseline
    std::uint64_t baselineAgeSum = 0; ///< ticks, over the delta snapshots
    std::size_t maxBaselineAge = 0;   ///< ticks
    std::size_t ticksDecoded = 0;     ///< ticks whose slices all arrived and decoded
    std::size_t mismatches = 0;       ///< decoded ticks unlike the sender's snapshot
    std::size_t decodeErrors = 0;     ///< slices refused, or whose baseline or reference the receiver lacked
    /// Ticks at which the second client's encode returned another error than the first client's.
    std::size_t secondClientDisagreements = 0;
    /// The encoder's first refusal, which ends the stream (None: every tick was encoded), and its tick.
    protocol::CodecError encodeError = protocol::CodecError::None;
    std::uint64_t refusedTick = 0;
    /// With wallClock: the first client's encode time, seconds, one entry a tick.
    std::vector<double> encodeWallSeconds;
    /// With cpuClock: processor time of the first client's encodes and of the second client's, seconds,
    /// summed.
    double encodeCpuSeconds = 0.0, secondClientEncodeCpuSeconds = 0.0;
};

/// Runs the stream for settings.seconds (see the file comment).
CodecStreamResult runCodecStream(const CodecStreamSettings& settings, const CodecStreamHooks& hooks);

} // namespace polytope::test

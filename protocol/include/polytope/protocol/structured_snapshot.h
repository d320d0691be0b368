// Polytope wire protocol: structured snapshots, the plain-table alternative to the range-coded codec
// (STANDARD.md section 14).
//
// Rationale. The compressed codec (snapshot_codec.h) costs a reader some 400 lines before it sees one
// position; a tool, a bot or a test harness in another language wants the world from flatc-generated code
// alone. A structured slice lists, for one id range of one tick, the bodies that differ from a tick the
// client holds (the baseline, named in the slice) as 28-byte structs of their quantized state, the ids
// whose body is gone, and the CRC-32 of the whole range at that tick. A reader keeps its complete ticks,
// copies the baseline's bodies of the range, drops the removed ids, overwrites with the listed bodies, and
// has the tick: no prediction, no models, no bit reading. It costs what it costs (28 bytes a changed body,
// 52 with velocities, against 2-8 in the codec), so players keep the codec. The slicing, the baseline/ack
// rule (a baseline is a tick every datagram of which the client acknowledged), the idle heartbeat, the
// full-snapshot pacing and the bandwidth budget are the codec's, so the server's bookkeeping is shared.
#pragma once

#include "polytope/protocol/constants.h"
#include "polytope/protocol/snapshot_codec.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace polytope::protocol
{

/// Exclusive end of the id space: the last slice of a tick ends here.
inline constexpr std::uint64_t kIdSpaceEnd = std::uint64_t{1} << 32;

/// A body's velocities as a structured snapshot carries them (float32, world frame).
struct BodyVelocity
{
    std::array<float, 3> linear{};  ///< m/s of the centre of mass
    std::array<float, 3> angular{}; ///< rad/s

    bool operator==(const BodyVelocity&) const = default;
};

/// One structured slice, as the writer takes it and the receiver applies it (views into their owners).
struct StructuredSliceView
{
    std::uint64_t tick = 0;
    double serverTime = 0.0; ///< seconds of simulated time
    bool hasBaseline = false;
    std::uint64_t baselineTick = 0; ///< with hasBaseline: a tick the client holds, before `tick`
    std::uint32_t firstId = 0;      ///< the slice covers firstId <= id < endId
    std::uint64_t endId = kIdSpaceEnd;
    std::uint32_t checksum = 0;               ///< quantizedStateChecksum of every body of the range at `tick`
    std::span<const QuantizedBody> bodies;    ///< created or changed since the baseline, id ascending
    std::span<const std::uint32_t> removed;   ///< gone since the baseline, ascending
    std::span<const BodyVelocity> velocities; ///< empty, or one per entry of `bodies`
};

/// A structured slice read from a datagram (readStructuredSnapshot), owning its bodies.
struct StructuredSlice
{
    std::uint64_t tick = 0;
    double serverTime = 0.0;
    bool hasBaseline = false;
    std::uint64_t baselineTick = 0;
    std::uint32_t firstId = 0;
    std::uint64_t endId = kIdSpaceEnd;
    std::uint32_t checksum = 0;
    std::vector<QuantizedBody> bodies;
    std::vector<std::uint32_t> removed;
    std::vector<BodyVelocity> velocities;

    StructuredSliceView view() const
    {
        return {tick,  serverTime, hasBaseline, baselineTick, firstId,
                endId, checksum,   bodies,      removed,      velocities};
    }
};

/// Bytes a StructuredSnapshot datagram spends on one listed body, its velocities and one removed id; and
/// the most it spends on everything else (the Packet, the header, the table, vector lengths and alignment):
/// a slice is cut so that these add up to at most kMaxPacketBytes (test_structured_snapshot checks the
/// bound on the largest slices).
inline constexpr std::size_t kStructuredBodyBytes = 28;
inline constexpr std::size_t kStructuredVelocityBytes = 24;
inline constexpr std::size_t kStructuredRemovedBytes = 4;
inline constexpr std::size_t kStructuredSliceOverheadBytes = 192;

/// Cuts the difference between two frames into structured slices. One encoder's results stay valid until
/// its next encode(); no allocation once its buffers have grown.
class StructuredSnapshotEncoder
{
  public:
    /// Lists every body of `current` (sorted by id) absent from `baseline` (nullptr: a full snapshot), of
    /// another generation, or of another state (pose or rest flag), and every id of `baseline` absent from
    /// `current`. `velocityById`, when not empty, gives each listed body's velocities by id (ids past its end
    /// get zero): then the slices carry them. `serverTime` is copied into every slice.
    void encode(const SnapshotFrame& current, const SnapshotFrame* baseline, double serverTime,
                std::span<const BodyVelocity> velocityById = {}, bool withVelocities = false);

    /// The slices of the last encode, in id order; they partition [0, 2^32).
    std::span<const StructuredSliceView> slices() const { return m_slices; }
    /// True when the last encode had a baseline and found nothing to list.
    bool identicalToBaseline() const { return m_identical; }
    /// Bodies listed by the last encode, over all slices.
    std::size_t listedBodies() const { return m_bodies.size(); }

  private:
    std::vector<QuantizedBody> m_bodies;
    std::vector<BodyVelocity> m_velocities;
    std::vector<std::uint32_t> m_removed;
    struct Cut
    {
        std::uint32_t firstId;
        std::uint64_t endId;
        std::size_t bodyBegin, bodyEnd, removedBegin, removedEnd;
    };
    std::vector<Cut> m_cuts;
    std::vector<StructuredSliceView> m_slices;
    bool m_identical = false;
};

/// Applies a structured slice to the bodies of its range in `baseline` (sorted by id; empty without a
/// baseline) and writes the range's bodies at the slice's tick, sorted, to `out` (cleared first). Checks
/// everything the datagram checks could not: removed ids must be in the baseline, position codes within
/// `position`'s bounds, and the result must match the slice's checksum. Returns CodecError::None or why not.
CodecError applyStructuredSlice(const PositionQuantization& position, const StructuredSliceView& slice,
                                std::span<const QuantizedBody> baseline, std::vector<QuantizedBody>& out);

} // namespace polytope::protocol

// Polytope wire protocol: the bookkeeping around the snapshot codec on both ends of a connection.
//
// Server side: SnapshotHistory keeps the quantized snapshot of every recent snapshot tick, made once per
// tick and shared by all clients (a ring indexed by tick, long enough for maxBaselineAgeTicks).
// SnapshotSendState is one client's view: which datagram carried which tick's slices, and so which ticks
// the client holds completely; a tick is held once every datagram of its slices is acknowledged through the
// packet header's ack/ack_bits (the client only acknowledges slices it decoded, so held implies decoded).
// The newest held tick is the baseline of the next snapshot, the newest held one before it the reference.
//
// Client side: SnapshotReceiver decodes slices as they arrive, in any order, against the complete ticks it
// keeps (the last maxBaselineAgeTicks), and assembles a tick once its slices cover the whole id space.
// Nothing here trusts the payload: every failure is a CodecError the caller counts. A slice whose decoded
// bodies do not match its checksum (CodecError::ChecksumMismatch) is refused like any other error, so a
// wrong state is never kept as a tick the server could name as a baseline.
#pragma once

#include "polytope/protocol/snapshot_codec.h"
#include "polytope/protocol/structured_snapshot.h"

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace polytope::protocol
{

/// The server's recent quantized snapshots, one per snapshot tick, shared by every client.
class SnapshotHistory
{
  public:
    /// Keeps snapshots up to `maxBaselineAgeTicks` ticks older than the newest.
    explicit SnapshotHistory(std::uint32_t maxBaselineAgeTicks);

    /// Starts the snapshot of `tick` (greater than every earlier one): returns its body array, cleared, to
    /// be filled sorted by strictly increasing id. Call commit() when it is filled.
    std::vector<QuantizedBody>& begin(std::uint64_t tick);
    /// Finishes the snapshot begun last (computes its unchanged-since hints from the previous one).
    void commit();

    /// The snapshot of `tick`, or nullptr when it was never made or is too old.
    const SnapshotFrame* find(std::uint64_t tick) const;
    /// The newest committed snapshot, or nullptr.
    const SnapshotFrame* newest() const { return m_newest >= 0 ? find(m_newestTick) : nullptr; }
    std::uint32_t maxBaselineAgeTicks() const { return m_maxAge; }

  private:
    struct Slot
    {
        bool valid = false;
        std::vector<QuantizedBody> bodies;
        std::vector<std::uint64_t> unchangedSince;
        RangeChecksumCache checksums;
        SnapshotFrame frame;
    };
    std::uint32_t m_maxAge;
    std::vector<Slot> m_slots;  ///< indexed by tick mod size
    std::int64_t m_newest = -1; ///< slot of the newest committed snapshot
    std::uint64_t m_newestTick = 0;
    std::int64_t m_pending = -1; ///< slot begun but not committed
    std::uint64_t m_pendingTick = 0;
};

/// One client's snapshot acknowledgements, on the server.
class SnapshotSendState
{
  public:
    explicit SnapshotSendState(std::uint32_t maxBaselineAgeTicks);

    /// Records that datagram `sequence` carries one of the `sliceCount` slices of `tick`. Call once per
    /// slice datagram sent.
    void onSliceSent(std::uint64_t tick, std::uint16_t sequence, std::uint32_t sliceCount);
    /// Records that the client acknowledged datagram `sequence` (call for every acked sequence; repeats and
    /// sequences that carried no slice are ignored).
    void onAcked(std::uint16_t sequence);

    /// The baseline (newest held tick still in `history` and within the age limit of `currentTick`) and
    /// reference (the newest held one before it), each nullptr when there is none.
    void choose(const SnapshotHistory& history, std::uint64_t currentTick, const SnapshotFrame*& baseline,
                const SnapshotFrame*& reference) const;

    /// True once the client holds `tick` completely.
    bool holds(std::uint64_t tick) const;

    bool sentAny = false; ///< some snapshot was sent (idle-skip policy)
    std::uint64_t lastSentTick = 0;

  private:
    struct SentSlice
    {
        std::uint64_t tick = 0;
        std::uint16_t sequence = 0;
        bool pending = false;
    };
    struct PendingTick
    {
        std::uint64_t tick;
        std::uint32_t unacked; ///< slice datagrams not yet acknowledged
    };
    void forget(std::uint64_t olderThan);

    static constexpr std::size_t kSentRing = 1024; ///< datagrams remembered (sequence mod this)
    std::uint32_t m_maxAge;
    std::vector<SentSlice> m_sent;
    std::vector<PendingTick> m_pending; ///< ticks sent and not yet held, increasing
    std::vector<std::uint64_t> m_held;  ///< held ticks, increasing, within the age limit
};

/// What SnapshotReceiver::onSlice did with a slice.
struct SliceOutcome
{
    CodecError error = CodecError::None; ///< why it was refused (then nothing else is set)
    bool duplicate = false;              ///< a slice (or tick) already had: harmless, nothing changed
    bool stale = false;                  ///< older than the ticks kept: ignored
    bool completed = false;              ///< this slice completed its tick (completedBodies() holds it)
    bool full = false;                   ///< decoded without a baseline (part of a full snapshot)
    std::uint64_t tick = 0;
    std::uint32_t bodies = 0; ///< bodies decoded from this slice

    bool accepted() const { return error == CodecError::None && !stale; }
};

/// One client's snapshot decoder and store of complete ticks.
class SnapshotReceiver
{
  public:
    explicit SnapshotReceiver(const SnapshotCodecConfig& config);

    /// Decodes one slice payload of `tick` (the envelope's) against the complete ticks held.
    SliceOutcome onSlice(std::uint64_t tick, std::span<const std::uint8_t> payload);

    /// Applies one structured slice (STANDARD.md section 14) to the complete tick it names as its baseline,
    /// with the same bookkeeping as onSlice: refused slices (a missing baseline, a bad id, a code out of
    /// range, a checksum mismatch) change nothing.
    SliceOutcome onStructuredSlice(const StructuredSliceView& slice);

    /// The bodies of a complete tick still kept, sorted by id; nullptr otherwise.
    const std::vector<QuantizedBody>* find(std::uint64_t tick) const;
    /// Newest complete tick (0 when none).
    std::uint64_t newestComplete() const { return m_newestComplete; }
    bool anyComplete() const { return m_anyComplete; }
    const SnapshotCodecConfig& config() const { return m_decoder.config(); }
    /// Tests only: see SnapshotDecoder::setFaultForTesting.
    void setDecodeFaultForTesting(SnapshotDecoder::FaultForTesting fault)
    {
        m_decoder.setFaultForTesting(std::move(fault));
    }

  private:
    struct Partial
    {
        std::vector<std::pair<std::uint32_t, std::uint64_t>> ranges; ///< [firstId, endId) received
        std::uint64_t covered = 0;
        std::vector<QuantizedBody> bodies;
    };
    /// A stale tick or one complete already (admitTick), a range already had or overlapping another
    /// (admitRange): fills `outcome` and returns false when the slice goes no further.
    bool admitTick(std::uint64_t tick, SliceOutcome& outcome) const;
    bool admitRange(std::uint64_t tick, std::uint32_t firstId, std::uint64_t endId,
                    SliceOutcome& outcome) const;
    /// Adds a decoded slice's bodies to its tick, completing it when the ranges cover the id space.
    void addRange(std::uint64_t tick, std::uint32_t firstId, std::uint64_t endId,
                  std::span<const QuantizedBody> bodies, SliceOutcome& outcome);

    SnapshotDecoder m_decoder;
    std::vector<QuantizedBody> m_applied; ///< scratch: a structured slice's range after applying it
    std::map<std::uint64_t, std::vector<QuantizedBody>> m_complete;
    std::map<std::uint64_t, Partial> m_partial;
    std::uint64_t m_newestComplete = 0;
    bool m_anyComplete = false;
};

} // namespace polytope::protocol

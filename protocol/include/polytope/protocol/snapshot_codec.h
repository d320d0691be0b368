// Polytope wire protocol: delta compression of snapshots of quantized rigid bodies.
//
// Rationale (CODEC.md has the format to the bit). The server quantizes every body once per tick
// (quantizeBody) into a sorted array shared by all clients. For each client it then codes that array
// relative to the newest snapshot the client acknowledged (the baseline) and, for prediction, one older
// snapshot the client also acknowledged (the reference), so the client can decode with what it surely has:
//
// - Bodies equal to their baseline cost a fraction of a bit: an adaptive binary range coder (bitstream.h)
//   learns within the datagram which bodies change, in the context of each body's motion between reference
//   and baseline (its "motion class") and of whether its predecessor changed. Bodies asleep and unmoved
//   ("quiet": most of a pile at any time) are not visited one by one at all: the few of them that changed
//   are sent as run lengths, which also keeps encoding fast.
// - A changed body's position is predicted by linear extrapolation from reference to baseline (only when it
//   was clearly moving: jitter is not extrapolated), less a horizontal deceleration that the encoder measures
//   and sends in the slice header (sliding bodies slow down), its orientation likewise in smallest-three
//   space, with the prediction re-expressed exactly (integer arithmetic) when the largest component changes;
//   the residuals are coded as zero/sign/magnitude-class/mantissa with contexts per motion class, so small
//   corrections are cheap and big ones still bounded.
// - Bodies created since the baseline (new id, or new generation in an old slot) are listed with their id,
//   generation and full state (predicted from the previous created body, which makes the full, baseline-less
//   snapshot of a regular scene compact too); bodies gone since the baseline are flagged.
// - A snapshot that does not fit one datagram is split into slices covering contiguous id ranges, each coded
//   on its own against the same baseline and reference, so each datagram decodes alone, in any order, and a
//   lost one costs only its own bodies (CODEC.md says why this beats fragmentation).
//
// Everything is integer arithmetic with rounding spelled out, so decoders in any language agree bit for
// bit. Decoding never trusts the payload: every count is bounded by the slice's id range and by
// SnapshotCodecConfig::maxBodies, every value is range-checked, and a bad payload returns a CodecError.
// Since version 5 each slice also carries a CRC-32 of the bodies it describes (quantizedStateChecksum),
// which the decoder compares with what it decoded: a decoder that drifts from the encoder (a bug, or an
// implementation that reads CODEC.md differently) finds out on the first slice it gets wrong, instead of
// acknowledging a wrong state that the server would then code against.
#pragma once

#include "polytope/protocol/bitstream.h"
#include "polytope/protocol/quantize.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

namespace polytope::protocol
{

/// One body as the codec sees it: identity, rest flag and quantized pose. 28 bytes, compared bytewise.
struct QuantizedBody
{
    std::uint32_t id = 0;                    ///< body slot index
    std::uint32_t generation = 1;            ///< never 0; (id, generation) is the body's identity
    std::array<std::uint32_t, 3> position{}; ///< codes, each in [0, PositionQuantization::maxCode(axis)]
    /// Smallest-three codes, each in [0, kOrientationCodeMax]; the default is the identity rotation.
    std::array<std::uint16_t, 3> orientation{kOrientationZeroCode, kOrientationZeroCode,
                                             kOrientationZeroCode};
    std::uint8_t largest = 3; ///< index of the dropped component (0 x .. 3 w)
    bool atRest = false;      ///< the engine has put the body to sleep

    bool operator==(const QuantizedBody&) const = default;
    /// Same pose and rest flag (identity not compared).
    bool sameState(const QuantizedBody& other) const
    {
        return std::memcmp(&position, &other.position, kStateBytes) == 0;
    }
    /// Same position and orientation (rest flag not compared).
    bool samePose(const QuantizedBody& other) const
    {
        return std::memcmp(&position, &other.position, kStateBytes - 1) == 0;
    }

    /// position, orientation, largest and atRest are contiguous, in this order, with no padding.
    static constexpr std::size_t kStateBytes = 12 + 6 + 1 + 1;
};
static_assert(sizeof(QuantizedBody) == 28,
              "QuantizedBody is the per-body snapshot cache entry: keep it small");
static_assert(offsetof(QuantizedBody, generation) == 4 && offsetof(QuantizedBody, position) == 8 &&
                  offsetof(QuantizedBody, orientation) == offsetof(QuantizedBody, position) + 12 &&
                  offsetof(QuantizedBody, largest) == offsetof(QuantizedBody, position) + 18 &&
                  offsetof(QuantizedBody, atRest) == offsetof(QuantizedBody, position) + 19,
              "sameState compares position..atRest as one block of bytes; quantizedStateChecksum hashes the "
              "whole struct as CODEC.md's 28-byte record");

/// The checksum a slice carries (CODEC.md 4.5): CRC-32 (checksum.h) of the bodies' 28-byte records in the
/// order given (a slice's bodies are in id order), each record being id, generation (u32), the three
/// position codes (u32), the three orientation codes (u16), largest and atRest (u8), all little-endian. 0
/// for no bodies.
std::uint32_t quantizedStateChecksum(std::span<const QuantizedBody> bodies);

/// Quantizes one body (position in metres, orientation x, y, z, w). `clamped`, if given, is set when the
/// position was outside the bounds.
QuantizedBody quantizeBody(const PositionQuantization& config, std::uint32_t id, std::uint32_t generation,
                           bool atRest, const std::array<float, 3>& positionMetres,
                           const std::array<float, 4>& orientationXyzw, bool* clamped = nullptr);

/// What both peers must agree on (the server announces it; CODEC.md).
struct SnapshotCodecConfig
{
    PositionQuantization position;
    /// Most bodies a decoded slice may hold; bounds the decoder's allocation. At most 2^24.
    std::uint32_t maxBodies = 65536;
    /// Oldest baseline (and reference) a payload may name, in ticks before the current tick.
    std::uint32_t maxBaselineAgeTicks = 1024;
    /// Largest payload of one slice, bytes: what is left of a datagram for the payload (1200 bytes minus the
    /// FlatBuffers envelope, with room to spare). At least 64.
    std::size_t maxSlicePayloadBytes = 1100;
};

/// The checksums (quantizedStateChecksum) of id ranges of one frame, kept by whoever owns the frame and
/// emptied whenever its bodies change (SnapshotHistory does both), so that the encoder hashes a range once
/// for every client cut the same way, and takes the baseline's for a snapshot identical to it.
struct RangeChecksumCache
{
    struct Entry
    {
        std::uint32_t firstId = 0;
        std::uint64_t endId = 0;
        std::uint32_t checksum = 0;
    };
    static constexpr std::size_t kMaxEntries = 16; ///< beyond this, new ranges are hashed and not kept
    std::vector<Entry> entries;

    const Entry* find(std::uint32_t firstId, std::uint64_t endId) const
    {
        for (const Entry& entry : entries)
        {
            if (entry.firstId == firstId && entry.endId == endId)
            {
                return &entry;
            }
        }
        return nullptr;
    }
};

/// A snapshot as both peers store it: bodies sorted by strictly increasing id.
struct SnapshotFrame
{
    SnapshotFrame() = default;
    SnapshotFrame(std::uint64_t frameTick, std::span<const QuantizedBody> frameBodies,
                  std::span<const std::uint64_t> frameUnchangedSince = {},
                  RangeChecksumCache* frameChecksums = nullptr)
        : tick(frameTick), bodies(frameBodies), unchangedSince(frameUnchangedSince), checksums(frameChecksums)
    {
    }

    std::uint64_t tick = 0;
    std::span<const QuantizedBody> bodies;
    /// Optional, for the encoder's speed only (the payload is the same with or without it): per body, the
    /// tick since which the body, same id and generation, has had exactly this state in every snapshot the
    /// server made (updateUnchangedSince computes it once per tick for all clients). Empty, or one per body.
    std::span<const std::uint64_t> unchangedSince;
    /// Optional, for the encoder's speed only: where it keeps the checksums of this frame's id ranges. Its
    /// owner must empty it whenever the bodies change.
    RangeChecksumCache* checksums = nullptr;
};

/// Computes `current`'s unchangedSince from the previous snapshot the server made (whose own
/// unchangedSince may be empty: then its tick stands for it). `since` is resized to current's body count.
void updateUnchangedSince(const SnapshotFrame& previous, const SnapshotFrame& current,
                          std::vector<std::uint64_t>& since);

/// Why decoding (or encoding) refused.
enum class CodecError : std::uint8_t
{
    None = 0,
    Truncated, ///< the payload ends inside its header
    BadHeader, ///< ages past maxBaselineAgeTicks, an id range past 2^32, or a reference without baseline
    MissingBaseline, ///< the baseline or reference the header names was not passed (or has another tick)
    TooManyBodies,   ///< more bodies than the slice's id range or SnapshotCodecConfig::maxBodies allow
    BadBodyId,       ///< a created id outside the slice, not ascending, or equal to a kept body's
    BadGeneration,   ///< a generation of 0
    ValueOutOfRange, ///< a position or orientation code out of range (or not a unit quaternion)
    Corrupt,         ///< the range-coded part cannot come from an encoder
    /// the slice decoded, but not to the state its checksum describes (a decoder that disagrees with the
    /// encoder, or a payload altered in transit): the decoded bodies must not be used
    ChecksumMismatch,
    InvalidInput,    ///< encoder: bodies not sorted by unique id, or a value out of range (programmer error)
    PayloadTooLarge, ///< encoder: a single body does not fit maxSlicePayloadBytes (config too small)
    Count
};
inline constexpr std::size_t kCodecErrorCount = static_cast<std::size_t>(CodecError::Count);

/// Stable snake_case name of an error (logs, metrics).
const char* codecErrorName(CodecError error);

/// The uncoded front of a slice payload: what the client needs to find the baseline and reference.
struct SliceHeader
{
    bool hasBaseline = false;
    bool hasReference = false;
    std::uint32_t baselineAge = 0;  ///< ticks from the baseline to the current snapshot (>= 1), if any
    std::uint32_t referenceGap = 0; ///< ticks from the reference to the baseline (>= 1), if any
    /// Horizontal deceleration of sliding bodies for extrapolation, 1/16 code per tick^2, in [0, 4095]; 0
    /// without a reference.
    std::uint32_t deceleration = 0;
    std::uint32_t firstId = 0; ///< the slice holds every body with firstId <= id < endId
    std::uint64_t endId = 0;   ///< exclusive, at most 2^32; the last slice of a snapshot ends at 2^32
    /// quantizedStateChecksum of the slice's bodies as the encoder had them (4 bytes after the header bits)
    std::uint32_t checksum = 0;
    std::size_t headerBytes = 0; ///< where the range-coded part starts (after the checksum)

    bool isLastSlice() const { return endId == (1ull << 32); }
};

struct SliceHeaderResult
{
    SliceHeader header;
    CodecError error = CodecError::None;
    bool ok() const { return error == CodecError::None; }
};

/// Reads and checks a slice payload's header (cheap; no baseline needed).
SliceHeaderResult readSliceHeader(const SnapshotCodecConfig& config, std::span<const std::uint8_t> payload);

/// One encoded slice: a view into the encoder's buffer, valid until its next encode().
struct EncodedSlice
{
    std::span<const std::uint8_t> payload;
    std::uint32_t firstId = 0;
    std::uint64_t endId = 0;
    std::uint32_t bodyCount = 0; ///< bodies of the current snapshot in [firstId, endId)
};

/// Statistics of the last encode (tests, metrics, benchmarks).
struct EncodeStats
{
    std::uint32_t changedBodies = 0; ///< kept bodies whose state differs from the baseline
    std::uint32_t createdBodies = 0;
    std::uint32_t removedBodies = 0;
    std::size_t payloadBytes = 0; ///< over all slices
    /// Nothing created, removed or changed: the client already has this state (a server may skip sending).
    bool identicalToBaseline = false;
};

namespace detail
{
/// A changed kept body's predicted state and sign contexts (CODEC.md 4.3); internal to the codec.
struct BodyPrediction
{
    std::array<std::int64_t, 3> position{};
    QuantizedOrientation orientation;               ///< in the baseline's smallest-three frame
    std::uint8_t predictedLargest = 3;              ///< the index of its largest component
    std::array<std::uint8_t, 3> positionTrend{};    ///< 0 none, 1 increasing, 2 decreasing, per axis
    std::array<std::uint8_t, 3> orientationTrend{}; ///< the same per component, in the baseline's frame
};
} // namespace detail

/// Encodes snapshots for clients. One instance can serve every client in turn (it only keeps reusable
/// buffers, and checks a current frame once when it is encoded for several clients in a row: the frame's
/// bodies must not change while its tick stays the same); after the buffers have grown, encode() does not
/// allocate.
class SnapshotEncoder
{
  public:
    explicit SnapshotEncoder(const SnapshotCodecConfig& config);

    /// Encodes `current` against `baseline` (nullptr: a full snapshot) with `reference` for prediction
    /// (nullptr: none; requires a baseline). Ticks must increase: reference < baseline < current, and ages
    /// within config.maxBaselineAgeTicks. Bodies sorted by unique id, generations != 0, codes in range.
    /// On success, slices() holds one or more payloads of at most config.maxSlicePayloadBytes each.
    CodecError encode(const SnapshotFrame& current, const SnapshotFrame* baseline,
                      const SnapshotFrame* reference);

    std::span<const EncodedSlice> slices() const { return m_slices; }
    const EncodeStats& stats() const { return m_stats; }
    const SnapshotCodecConfig& config() const { return m_config; }

  private:
    /// A created body: new, or replacing a baseline body of the same id.
    struct Match
    {
        static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
        std::uint32_t currentIndex;
        std::uint32_t replacedIndex; ///< index in the baseline, or kNone
    };
    struct BodyCost
    {
        std::uint32_t id;
        std::uint32_t eighths; ///< estimated coded size, 1/8 bit
    };
    /// A kept body that is coded one by one (not quiet, or quiet and changed), classified once per encode.
    struct KeptBody
    {
        std::uint32_t currentIndex;
        std::uint32_t baselineIndex;
        const QuantizedBody* reference;
        std::uint32_t quietOrdinal; ///< quiet bodies before it (the frame's, in id order), if it is quiet
        std::uint8_t motionClass;
        bool changed;
    };
    /// Sorts the bodies of the whole snapshot into created, removed, quiet and coded-one-by-one kept bodies,
    /// chooses the deceleration and predicts every changed body: everything slices share.
    void classify(const SnapshotFrame& current, const SnapshotFrame* baseline,
                  const SnapshotFrame* reference);
    CodecError encodeRange(const SnapshotFrame& current, const SnapshotFrame* baseline,
                           const SnapshotFrame* reference, std::uint32_t firstId, std::uint64_t endId,
                           std::span<std::uint8_t> out, std::size_t& written);
    CodecError encodeSplit(const SnapshotFrame& current, const SnapshotFrame* baseline,
                           const SnapshotFrame* reference, std::uint32_t firstId, std::uint64_t endId,
                           int depth);

    SnapshotCodecConfig m_config;
    std::vector<std::uint8_t> m_buffer;
    std::vector<EncodedSlice> m_slices;
    std::vector<std::size_t> m_sliceOffsets;
    std::vector<Match> m_createdBodies;                ///< in id order
    std::vector<KeptBody> m_keptBodies;                ///< in id order
    std::vector<detail::BodyPrediction> m_predictions; ///< one per kept body (set for changed ones)
    std::vector<std::uint32_t>
        m_quietBefore; ///< per current body (and one past the end): quiet bodies before
    std::vector<std::uint8_t> m_baselineKept; ///< per baseline body
    std::vector<float> m_decelerationSamples;
    std::uint32_t m_deceleration = 0;
    std::vector<BodyCost> m_estimatedCosts; ///< estimated by classify(), 1/8 bit, in id order
    std::uint64_t m_estimatedBits = 0;      ///< their sum, 1/8 bit
    std::size_t m_used = 0;
    EncodeStats m_stats;
    /// The last current frame found valid (checked once when encoded for several clients in a row).
    struct
    {
        const QuantizedBody* data = nullptr;
        std::size_t size = 0;
        std::uint64_t tick = 0;
    } m_validated;
    std::uint32_t rangeChecksum(const SnapshotFrame& current, const SnapshotFrame* baseline,
                                std::uint32_t firstId, std::uint64_t endId);
};

/// Decodes slice payloads for one client. Keeps reusable buffers; after they have grown, decode() does not
/// allocate, and they never grow past config.maxBodies bodies whatever the payload says.
class SnapshotDecoder
{
  public:
    explicit SnapshotDecoder(const SnapshotCodecConfig& config);

    /// Decodes one slice payload. `currentTick` is the snapshot's tick (from the envelope); `baseline` and
    /// `reference` must be the client's decoded snapshots of the ticks the header names (readSliceHeader),
    /// or nullptr when it names none. On success bodies() holds the slice's bodies (ids in
    /// [header().firstId, header().endId)) sorted by id. Never reads outside `payload`.
    CodecError decode(std::span<const std::uint8_t> payload, std::uint64_t currentTick,
                      const SnapshotFrame* baseline, const SnapshotFrame* reference);

    /// The last successful decode's bodies; valid until the next decode().
    std::span<const QuantizedBody> bodies() const { return m_bodies; }
    const SliceHeader& header() const { return m_header; }
    const SnapshotCodecConfig& config() const { return m_config; }

    /// How the last decode coded one kept body (CODEC.md 4.3): its id, motion class (0..6) and whether it
    /// changed from the baseline.
    struct KeptCoding
    {
        std::uint32_t id = 0;
        std::uint8_t motionClass = 0;
        bool changed = false;
    };
    /// Fills `out` (cleared first) with the last decode's kept bodies in id order; meaningful after a decode
    /// that returned None or ChecksumMismatch. Read from what decode() keeps anyway, so it costs nothing
    /// unless called (test vectors, tools).
    void keptCoding(std::vector<KeptCoding>& out) const;

    /// Tests only: a function that alters the decoded bodies of a slice (its tick and header given) just
    /// before the checksum is compared, standing for a decoder that gets some value wrong. Empty (the
    /// default) in every real decoder, where it costs one test of an empty std::function per slice.
    using FaultForTesting =
        std::function<void(std::uint64_t tick, const SliceHeader& header, std::span<QuantizedBody> bodies)>;
    void setFaultForTesting(FaultForTesting fault) { m_fault = std::move(fault); }

  private:
    SnapshotCodecConfig m_config;
    SliceHeader m_header;
    FaultForTesting m_fault;
    struct KeptInfo
    {
        const QuantizedBody* reference;
        std::uint8_t motionClass;
        bool changed;
    };
    std::vector<QuantizedBody> m_kept;
    std::vector<KeptInfo> m_keptInfo;
    std::vector<QuantizedBody> m_created;
    std::vector<QuantizedBody> m_bodies;
};

/// Re-expresses a smallest-three orientation with another dropped component, exactly in integers
/// (CODEC.md, "re-expression"). Used for prediction; exposed for tests.
QuantizedOrientation reexpressOrientation(const QuantizedOrientation& orientation, std::uint8_t newLargest);

} // namespace polytope::protocol

// Polytope wire protocol: bit-level writing and reading of untrusted payloads.
//
// Two layers, both writing into caller-owned fixed buffers and reading from spans, neither allocating:
//
// - BitWriter / BitReader: plain bit packing, most significant bit of each byte first. In the spirit of
//   yojimbo's serialize_int(value, min, max): a field is written in exactly the bits its range needs, and
//   the reader checks the range. Writing past the buffer sets a sticky overflow flag and writes nothing;
//   reading past the end (or an out-of-range value) sets a sticky error flag and returns 0 (or min). Code
//   keeps going after an error and checks the flag once at the end, as netcode does.
//
// - RangeEncoder / RangeDecoder: an adaptive binary range coder in the style of LZMA's "rc" (a 32-bit range,
//   carry propagation through a cached byte and a count of pending 0xFF bytes, bytes written most
//   significant first), with two changes that matter for tiny payloads: the always-zero first byte LZMA
//   emits is not sent, and the final flush writes only as many bytes as needed to single out the interval,
//   with trailing zero bytes dropped; the decoder reads zero for every byte past the end of its input.
//   Probabilities are 15-bit. Each adaptive bit first counts (the Krichevsky-Trofimov estimate, exact for
//   its first 31 symbols) and then forgets exponentially (weight 1/32 on the newest bit), which learns
//   quickly from the few hundred symbols of one datagram yet reaches probabilities near 1 (a symbol that
//   is almost always 0 then costs about 0.002 bit). Multi-bit symbols are built from binary decisions in
//   snapshot_codec.cpp. CODEC.md specifies all of it exactly, to the bit, so that another language can
//   decode.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace polytope::protocol
{

/// Bits needed to write any integer in [0, range] (0 for range 0).
constexpr int bitsRequired(std::uint64_t range)
{
    int bits = 0;
    while (bits < 64 && (range >> bits) != 0)
    {
        ++bits;
    }
    return bits;
}

/// Packs bits into a caller buffer, most significant bit of each byte first.
class BitWriter
{
  public:
    /// Writes into `buffer`; nothing is ever written past its end.
    explicit BitWriter(std::span<std::uint8_t> buffer);

    /// Writes the low `bits` bits of value (bits in [0, 32]), most significant first. Higher bits of value
    /// are ignored. Sets the overflow flag, and writes nothing, if the bits do not fit.
    void writeBits(std::uint32_t value, int bits);
    void writeBool(bool value) { writeBits(value ? 1u : 0u, 1); }
    /// Writes value - min in bitsRequired(max - min) bits. A value outside [min, max] is a programmer error:
    /// it is clamped (and sets the overflow flag, so the caller notices).
    void writeInt(std::int64_t value, std::int64_t min, std::int64_t max);
    /// Exp-Golomb code of order 0 for any uint32: n zero bits then the n+1 bits of value + 1, where n is the
    /// bit length of value + 1 minus one. 1 bit for 0, 3 bits for 1..2, 2n + 1 bits in general.
    void writeVarUint(std::uint32_t value);
    /// Zero bits up to the next byte boundary.
    void alignToByte();

    std::size_t bitsWritten() const { return m_bitPosition; }
    /// Bytes touched so far (bitsWritten rounded up).
    std::size_t bytesWritten() const { return (m_bitPosition + 7) / 8; }
    /// True once any write did not fit (or a writeInt value was out of range); sticky.
    bool overflowed() const { return m_overflow; }

  private:
    std::span<std::uint8_t> m_buffer;
    std::size_t m_bitPosition = 0;
    bool m_overflow = false;
};

/// Reads bits written by BitWriter. Every read is bounds-checked; past the end it returns 0 and sets a
/// sticky error flag. Never reads outside the span.
class BitReader
{
  public:
    explicit BitReader(std::span<const std::uint8_t> bytes);

    /// Reads `bits` bits (in [0, 32]); 0 and the error flag when fewer remain.
    std::uint32_t readBits(int bits);
    bool readBool() { return readBits(1) != 0; }
    /// Reads a writeInt field; a value above max sets the error flag and returns min.
    std::int64_t readInt(std::int64_t min, std::int64_t max);
    /// Reads a writeVarUint field; more than 31 leading zeros (or a value past UINT32_MAX) is an error (0).
    std::uint32_t readVarUint();
    /// Skips to the next byte boundary; the skipped bits need not be zero.
    void alignToByte();

    std::size_t bitsRead() const { return m_bitPosition; }
    std::size_t bitsRemaining() const { return m_bitCount - m_bitPosition; }
    /// Index of the first byte not yet (partly) read.
    std::size_t bytesRead() const { return (m_bitPosition + 7) / 8; }
    bool failed() const { return m_error; }
    /// Marks the stream as bad (a caller's own range check failed); sticky.
    void fail() { m_error = true; }

  private:
    std::span<const std::uint8_t> m_bytes;
    std::size_t m_bitCount = 0;
    std::size_t m_bitPosition = 0;
    bool m_error = false;
};

namespace detail
{
/// ceil(2^32 / d) for d in [1, 32] (index 0 unused).
constexpr std::array<std::uint64_t, 33> ceilReciprocals()
{
    std::array<std::uint64_t, 33> table{};
    for (std::uint64_t d = 1; d < table.size(); ++d)
    {
        table[d] = ((1ull << 32) + d - 1) / d;
    }
    return table;
}
} // namespace detail

/// An adaptive estimate of the probability that the next bit is 0, in 15-bit fixed point. It starts at one
/// half and, for its first kAdaptationLimit updates, is the running frequency of zeros with half a zero and
/// half a one as prior (the Krichevsky-Trofimov estimator, p = (zeros + 1/2) / (bits + 1), kept
/// incrementally); after that it forgets exponentially, with weight 1/32 on the newest bit. A context thus
/// learns from its first few symbols as fast as counting allows, yet keeps following a drifting source.
/// The probability stays within [31, kOne - 31] (the counting phase cannot leave [512, kOne - 512], and a
/// shift by 5 stops moving it at 31 from either end), so neither outcome ever has probability zero.
struct AdaptiveBit
{
    static constexpr int kProbabilityBits = 15;
    static constexpr std::uint32_t kOne = 1u << kProbabilityBits;
    static constexpr std::uint32_t kAdaptationLimit = 31;

    std::uint16_t probability = kOne / 2; ///< of a 0, in [31, kOne - 31]
    std::uint16_t count = 0;              ///< updates so far, saturating at kAdaptationLimit

    std::uint32_t probabilityOfZero() const { return probability; }
    void update(bool bit)
    {
        const std::uint32_t p = probability;
        if (count >= kAdaptationLimit)
        {
            // The steady state, and the common case: a division by kAdaptationLimit + 1 = 32 is a shift.
            probability = static_cast<std::uint16_t>(bit ? p - (p >> 5) : p + ((kOne - p) >> 5));
            return;
        }
        ++count;
        // x / (count + 1) for x < 2^15 by a multiplication: (x * ceil(2^32 / d)) >> 32 equals x / d exactly
        // when x * d < 2^32, which holds here (d <= 32).
        const std::uint64_t reciprocal = kReciprocals[count + 1u];
        const std::uint32_t moved = bit ? p : kOne - p;
        const auto step = static_cast<std::uint32_t>((moved * reciprocal) >> 32);
        probability = static_cast<std::uint16_t>(bit ? p - step : p + step);
    }

  private:
    static constexpr std::array<std::uint64_t, 33> kReciprocals = detail::ceilReciprocals();
    static_assert(kAdaptationLimit + 1 == 32, "update() divides by kAdaptationLimit + 1 with a shift by 5");
    static_assert(kAdaptationLimit + 2 <= kReciprocals.size());
};

/// Binary range encoder into a caller buffer; see the file comment. Overflow is sticky and never writes
/// past the buffer.
class RangeEncoder
{
  public:
    explicit RangeEncoder(std::span<std::uint8_t> buffer);

    /// Codes one bit with an adaptive probability, then adapts it.
    void encode(AdaptiveBit& model, bool bit)
    {
        const std::uint32_t bound = (m_range >> AdaptiveBit::kProbabilityBits) * model.probabilityOfZero();
        if (!bit)
        {
            m_range = bound;
        }
        else
        {
            m_low += bound;
            m_range -= bound;
        }
        model.update(bit);
        while (m_range < kTopValue)
        {
            m_range <<= 8;
            shiftLow();
        }
    }
    /// Codes the low `bits` bits of value (bits in [0, 32]) at probability one half each, most significant
    /// first.
    void encodeDirect(std::uint32_t value, int bits);
    /// Ends the stream; returns the number of bytes used (trailing zero bytes dropped). Call once.
    std::size_t finish();

    /// Bytes certain to be emitted so far, plus the pending ones: a running size estimate (for slicing).
    std::size_t approximateBytes() const;
    bool overflowed() const { return m_overflow; }

    /// The range is renormalised (shifted by a byte) whenever it falls below this.
    static constexpr std::uint32_t kTopValue = 1u << 24;

  private:
    void shiftLow();
    void emit(std::uint8_t byte);

    std::span<std::uint8_t> m_buffer;
    std::size_t m_position = 0;
    std::uint64_t m_low = 0;
    std::uint32_t m_range = 0xFFFFFFFFu;
    std::uint8_t m_cache = 0;
    std::uint64_t m_cacheSize = 1;
    bool m_skipFirst = true; ///< LZMA's first byte is always 0: not sent
    bool m_overflow = false;
};

/// Binary range decoder over a span; bytes past its end read as zero (see the file comment), so it never
/// fails on short input: the caller range-checks what it decodes. `corrupt()` reports an impossible state.
class RangeDecoder
{
  public:
    explicit RangeDecoder(std::span<const std::uint8_t> bytes);

    /// Decodes one bit with an adaptive probability, then adapts it (mirrors RangeEncoder::encode).
    bool decode(AdaptiveBit& model)
    {
        const std::uint32_t bound = (m_range >> AdaptiveBit::kProbabilityBits) * model.probabilityOfZero();
        bool bit = false;
        if (m_code < bound)
        {
            m_range = bound;
        }
        else
        {
            m_code -= bound;
            m_range -= bound;
            bit = true;
        }
        model.update(bit);
        while (m_range < RangeEncoder::kTopValue)
        {
            m_range <<= 8;
            m_code = (m_code << 8) | next();
        }
        return bit;
    }
    std::uint32_t decodeDirect(int bits);

    /// True when the first four bytes were all 0xFF (no encoder writes that: the code must lie below range).
    bool corrupt() const { return m_corrupt; }
    /// Bytes consumed past the end of the input (read as zero).
    std::size_t bytesPastEnd() const { return m_pastEnd; }

  private:
    std::uint8_t next()
    {
        if (m_position < m_bytes.size())
        {
            return m_bytes[m_position++];
        }
        ++m_pastEnd;
        return 0;
    }
    void normalize();

    std::span<const std::uint8_t> m_bytes;
    std::size_t m_position = 0;
    std::size_t m_pastEnd = 0;
    std::uint32_t m_range = 0xFFFFFFFFu;
    std::uint32_t m_code = 0;
    bool m_corrupt = false;
};

} // namespace polytope::protocol

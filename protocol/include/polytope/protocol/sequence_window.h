// Polytope protocol: which sequence numbers were received lately.
//
// One mechanism serves every "have I seen this one?" question of the protocol and the server:
//   - the replay window of a sealed channel (seal.h: 256 recent 64-bit datagram sequences, netcode.io's
//     replay protection);
//   - the acknowledgements a packet header carries (AckTracker in packet.h: the newest 16-bit sequence
//     received and a mask of the 32 before it, unwrapped to 64 bits here);
//   - the de-duplication of resent client inputs (the server's per-client input queue: 1024 recent 32-bit
//     input sequences).
// A window remembers the newest sequence recorded and, for the Size sequences ending at it, whether each was
// recorded. A sequence is fresh when it was never recorded and is newer than newest - Size; recording a
// newer one than the newest slides the window and forgets what falls out. It never allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace polytope::protocol
{

template <std::size_t Size> class SequenceWindow
{
    static_assert(Size >= 1, "a window holds at least the newest sequence");

  public:
    /// True when nothing was recorded yet.
    bool empty() const { return !m_any; }
    /// The newest sequence recorded (0 while empty).
    std::uint64_t newest() const { return m_newest; }

    /// False when `sequence` was recorded already or is Size or more behind the newest.
    bool isFresh(std::uint64_t sequence) const
    {
        if (!m_any || sequence > m_newest)
        {
            return true;
        }
        return m_newest - sequence < Size && !test(sequence);
    }

    /// True when `sequence` was recorded and is still inside the window.
    bool contains(std::uint64_t sequence) const
    {
        return m_any && sequence <= m_newest && m_newest - sequence < Size && test(sequence);
    }

    /// Records `sequence` if it is fresh; returns whether it was.
    bool record(std::uint64_t sequence)
    {
        if (!isFresh(sequence))
        {
            return false;
        }
        if (!m_any)
        {
            m_any = true;
            m_newest = sequence;
        }
        else if (sequence > m_newest)
        {
            // Slide: the sequences between the old newest and this one were not received.
            const std::uint64_t advance = sequence - m_newest;
            if (advance >= Size)
            {
                m_bits.fill(0);
            }
            else
            {
                for (std::uint64_t s = m_newest + 1; s < sequence; ++s)
                {
                    set(s, false);
                }
            }
            m_newest = sequence;
        }
        set(sequence, true);
        return true;
    }

    /// Bit i set: newest - 1 - i was recorded, for i below min(32, Size - 1) (the ack mask of a header).
    std::uint32_t maskBeforeNewest() const
    {
        std::uint32_t mask = 0;
        for (std::uint64_t i = 0; i < 32 && i + 1 < Size && i + 1 <= m_newest; ++i)
        {
            mask |= contains(m_newest - 1 - i) ? (1u << i) : 0u;
        }
        return mask;
    }

  private:
    static constexpr std::size_t kWords = (Size + 63) / 64;

    bool test(std::uint64_t sequence) const
    {
        const std::size_t slot = static_cast<std::size_t>(sequence % Size);
        return ((m_bits[slot / 64] >> (slot % 64)) & 1u) != 0;
    }
    void set(std::uint64_t sequence, bool value)
    {
        const std::size_t slot = static_cast<std::size_t>(sequence % Size);
        const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
        m_bits[slot / 64] = value ? (m_bits[slot / 64] | bit) : (m_bits[slot / 64] & ~bit);
    }

    std::array<std::uint64_t, kWords> m_bits{};
    std::uint64_t m_newest = 0;
    bool m_any = false;
};

} // namespace polytope::protocol

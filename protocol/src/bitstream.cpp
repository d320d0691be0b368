#include "polytope/protocol/bitstream.h"

namespace polytope::protocol
{

// ---------------------------------------------------------------------------------------------- BitWriter

BitWriter::BitWriter(std::span<std::uint8_t> buffer) : m_buffer(buffer) {}

void BitWriter::writeBits(std::uint32_t value, int bits)
{
    if (bits <= 0 || bits > 32)
    {
        m_overflow = m_overflow || bits != 0;
        return;
    }
    if (m_overflow || m_bitPosition + static_cast<std::size_t>(bits) > m_buffer.size() * 8)
    {
        m_overflow = true;
        return;
    }
    for (int i = bits - 1; i >= 0; --i)
    {
        const std::size_t byte = m_bitPosition >> 3;
        const int shift = 7 - static_cast<int>(m_bitPosition & 7);
        const auto mask = static_cast<std::uint8_t>(1u << shift);
        if ((value >> i) & 1u)
        {
            m_buffer[byte] = static_cast<std::uint8_t>(m_buffer[byte] | mask);
        }
        else
        {
            m_buffer[byte] = static_cast<std::uint8_t>(m_buffer[byte] & ~mask);
        }
        ++m_bitPosition;
    }
}

void BitWriter::writeInt(std::int64_t value, std::int64_t min, std::int64_t max)
{
    if (max < min || max - min > 0xFFFFFFFFll)
    {
        m_overflow = true;
        return;
    }
    if (value < min || value > max)
    {
        m_overflow = true;
        value = value < min ? min : max;
    }
    writeBits(static_cast<std::uint32_t>(value - min), bitsRequired(static_cast<std::uint64_t>(max - min)));
}

void BitWriter::writeVarUint(std::uint32_t value)
{
    const std::uint64_t shifted = static_cast<std::uint64_t>(value) + 1u;
    const int length = bitsRequired(shifted); // 1..33
    const int zeros = length - 1;
    writeBits(0, zeros > 32 ? 32 : zeros);
    if (zeros > 32)
    {
        writeBits(0, zeros - 32);
    }
    if (length > 32)
    {
        writeBits(static_cast<std::uint32_t>(shifted >> 32), length - 32);
        writeBits(static_cast<std::uint32_t>(shifted), 32);
    }
    else
    {
        writeBits(static_cast<std::uint32_t>(shifted), length);
    }
}

void BitWriter::alignToByte()
{
    const int pad = static_cast<int>((8 - (m_bitPosition & 7)) & 7);
    writeBits(0, pad);
}

// ---------------------------------------------------------------------------------------------- BitReader

BitReader::BitReader(std::span<const std::uint8_t> bytes) : m_bytes(bytes), m_bitCount(bytes.size() * 8) {}

std::uint32_t BitReader::readBits(int bits)
{
    if (bits < 0 || bits > 32 || m_error || static_cast<std::size_t>(bits) > m_bitCount - m_bitPosition)
    {
        m_error = true;
        return 0;
    }
    std::uint32_t value = 0;
    for (int i = 0; i < bits; ++i)
    {
        const std::size_t byte = m_bitPosition >> 3;
        const int shift = 7 - static_cast<int>(m_bitPosition & 7);
        value = (value << 1) | ((m_bytes[byte] >> shift) & 1u);
        ++m_bitPosition;
    }
    return value;
}

std::int64_t BitReader::readInt(std::int64_t min, std::int64_t max)
{
    if (max < min || max - min > 0xFFFFFFFFll)
    {
        m_error = true;
        return min;
    }
    const std::uint32_t offset = readBits(bitsRequired(static_cast<std::uint64_t>(max - min)));
    if (m_error || static_cast<std::int64_t>(offset) > max - min)
    {
        m_error = true;
        return min;
    }
    return min + static_cast<std::int64_t>(offset);
}

std::uint32_t BitReader::readVarUint()
{
    int zeros = 0;
    while (!m_error && readBits(1) == 0)
    {
        if (++zeros > 32)
        {
            m_error = true;
        }
    }
    if (m_error)
    {
        return 0;
    }
    // The leading 1 was consumed; `zeros` more bits follow.
    std::uint64_t shifted = 1;
    if (zeros > 0)
    {
        const int high = zeros > 32 ? zeros - 32 : 0;
        shifted = (shifted << high) | readBits(high);
        shifted = (shifted << (zeros - high)) | readBits(zeros - high);
    }
    if (m_error || shifted - 1u > 0xFFFFFFFFull)
    {
        m_error = true;
        return 0;
    }
    return static_cast<std::uint32_t>(shifted - 1u);
}

void BitReader::alignToByte()
{
    const std::size_t pad = (8 - (m_bitPosition & 7)) & 7;
    if (pad > m_bitCount - m_bitPosition)
    {
        m_error = true;
        m_bitPosition = m_bitCount;
        return;
    }
    m_bitPosition += pad;
}

// ------------------------------------------------------------------------------------------- RangeEncoder

RangeEncoder::RangeEncoder(std::span<std::uint8_t> buffer) : m_buffer(buffer) {}

void RangeEncoder::emit(std::uint8_t byte)
{
    if (m_skipFirst)
    {
        m_skipFirst = false; // LZMA's leading byte: always 0, since the code value stays below 1
        return;
    }
    if (m_position >= m_buffer.size())
    {
        m_overflow = true;
        return;
    }
    m_buffer[m_position++] = byte;
}

void RangeEncoder::shiftLow()
{
    if (static_cast<std::uint32_t>(m_low) < 0xFF000000u || (m_low >> 32) != 0)
    {
        const auto carry = static_cast<std::uint8_t>(m_low >> 32);
        std::uint8_t pending = m_cache;
        do
        {
            emit(static_cast<std::uint8_t>(pending + carry));
            pending = 0xFF;
        } while (--m_cacheSize != 0);
        m_cache = static_cast<std::uint8_t>(m_low >> 24);
    }
    ++m_cacheSize;
    m_low = (m_low & 0x00FFFFFFu) << 8;
}

void RangeEncoder::encodeDirect(std::uint32_t value, int bits)
{
    for (int i = bits - 1; i >= 0; --i)
    {
        m_range >>= 1;
        if ((value >> i) & 1u)
        {
            m_low += m_range;
        }
        while (m_range < RangeEncoder::kTopValue)
        {
            m_range <<= 8;
            shiftLow();
        }
    }
}

std::size_t RangeEncoder::finish()
{
    // Pick, inside [low, low + range), the value with the most trailing zero bytes: the decoder pads with
    // zeros, so those bytes need not be sent. Four bytes always suffice (low itself).
    for (int kept = 0; kept <= 4; ++kept)
    {
        const int droppedBits = 32 - 8 * kept;
        const std::uint64_t unit = 1ull << droppedBits;
        const std::uint64_t candidate = (m_low + unit - 1) & ~(unit - 1);
        if (candidate >= m_low && candidate < m_low + m_range)
        {
            m_low = candidate;
            break;
        }
    }
    for (int i = 0; i < 5; ++i)
    {
        shiftLow();
    }
    while (m_position > 0 && m_buffer[m_position - 1] == 0)
    {
        --m_position;
    }
    return m_position;
}

std::size_t RangeEncoder::approximateBytes() const
{
    return m_position + static_cast<std::size_t>(m_cacheSize) + 4;
}

// ------------------------------------------------------------------------------------------- RangeDecoder

RangeDecoder::RangeDecoder(std::span<const std::uint8_t> bytes) : m_bytes(bytes)
{
    for (int i = 0; i < 4; ++i)
    {
        m_code = (m_code << 8) | next();
    }
    m_corrupt = m_code == 0xFFFFFFFFu;
}

void RangeDecoder::normalize()
{
    while (m_range < RangeEncoder::kTopValue)
    {
        m_range <<= 8;
        m_code = (m_code << 8) | next();
    }
}

std::uint32_t RangeDecoder::decodeDirect(int bits)
{
    std::uint32_t value = 0;
    for (int i = 0; i < bits; ++i)
    {
        m_range >>= 1;
        std::uint32_t bit = 0;
        if (m_code >= m_range)
        {
            m_code -= m_range;
            bit = 1;
        }
        value = (value << 1) | bit;
        normalize();
    }
    return value;
}

} // namespace polytope::protocol

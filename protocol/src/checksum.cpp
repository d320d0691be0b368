#include "polytope/protocol/checksum.h"

#include <array>

namespace polytope::protocol
{
namespace
{

constexpr std::uint32_t kReflectedPolynomial = 0xEDB88320u;

/// table[0] is the classic byte-at-a-time table; table[k][b] is the CRC of byte b followed by k zero bytes,
/// so that eight table lookups advance the CRC by eight bytes at once.
using CrcTables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr CrcTables makeTables()
{
    CrcTables tables{};
    for (std::uint32_t b = 0; b < 256; ++b)
    {
        std::uint32_t crc = b;
        for (int bit = 0; bit < 8; ++bit)
        {
            crc = (crc & 1u) != 0 ? (crc >> 1) ^ kReflectedPolynomial : crc >> 1;
        }
        tables[0][b] = crc;
    }
    for (std::size_t k = 1; k < tables.size(); ++k)
    {
        for (std::size_t b = 0; b < 256; ++b)
        {
            tables[k][b] = (tables[k - 1][b] >> 8) ^ tables[0][tables[k - 1][b] & 0xFFu];
        }
    }
    return tables;
}

constexpr CrcTables kTables = makeTables();

std::uint32_t littleEndian32(const std::uint8_t* p)
{
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

} // namespace

std::uint32_t crc32(std::span<const std::uint8_t> bytes, std::uint32_t crc)
{
    std::uint32_t c = ~crc;
    const std::uint8_t* p = bytes.data();
    std::size_t n = bytes.size();
    while (n >= 8)
    {
        const std::uint32_t low = c ^ littleEndian32(p);
        const std::uint32_t high = littleEndian32(p + 4);
        c = kTables[7][low & 0xFFu] ^ kTables[6][(low >> 8) & 0xFFu] ^ kTables[5][(low >> 16) & 0xFFu] ^
            kTables[4][low >> 24] ^ kTables[3][high & 0xFFu] ^ kTables[2][(high >> 8) & 0xFFu] ^
            kTables[1][(high >> 16) & 0xFFu] ^ kTables[0][high >> 24];
        p += 8;
        n -= 8;
    }
    for (; n != 0; --n, ++p)
    {
        c = (c >> 8) ^ kTables[0][(c ^ *p) & 0xFFu];
    }
    return ~c;
}

} // namespace polytope::protocol

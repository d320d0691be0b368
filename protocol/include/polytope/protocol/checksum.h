// Polytope wire protocol: CRC-32, the checksum of a snapshot slice's quantized state (CODEC.md 4.5).
//
// Why CRC-32 and not a faster or a cryptographic hash: the checksum is there to catch a decoder that
// decodes something other than what the encoder coded (a bug, not an attacker: sealed sessions already
// authenticate every datagram). CRC-32 detects every error confined to 32 consecutive bits for certain (so
// one wrong position or orientation code, the usual symptom, never passes) and any other with probability
// 1 - 2^-32; it is byte-oriented and written out in a few lines, and it is in the standard library of most
// languages a client may be written in (Python's zlib.crc32, Java's java.util.zip.CRC32, Go's
// hash/crc32.ChecksumIEEE, Node's zlib.crc32), which FNV-1a, say, is not. Table-driven, eight bytes a step
// ("slicing-by-8", Intel 2006), it runs at one or two cycles a byte: some 15 us for a 900-body slice.
#pragma once

#include <cstdint>
#include <span>

namespace polytope::protocol
{

/// CRC-32 as zlib's crc32() and ISO-HDLC/IEEE 802.3 define it: reflected polynomial 0xEDB88320, initial
/// value and final xor 0xFFFFFFFF. crc32("123456789") == 0xCBF43926. To continue a running checksum, pass
/// the previous result as `crc` (0 to start): crc32(b, crc32(a)) == crc32(a followed by b).
std::uint32_t crc32(std::span<const std::uint8_t> bytes, std::uint32_t crc = 0);

} // namespace polytope::protocol

// CRC-32 of slices (CODEC.md 4.5): the published check values, the document's record vectors, and the
// running form.
#include "polytope/protocol/checksum.h"
#include "polytope/protocol/snapshot_codec.h"

#include <catch2/catch.hpp>

#include <random>
#include <string_view>
#include <vector>

using namespace polytope::protocol;

namespace
{
std::span<const std::uint8_t> bytesOf(std::string_view text)
{
    return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

/// The bit-at-a-time definition CODEC.md writes out, to check the table-driven one against.
std::uint32_t crc32BitByBit(std::span<const std::uint8_t> bytes)
{
    std::uint32_t crc = 0xFFFFFFFFu;
    for (const std::uint8_t b : bytes)
    {
        crc ^= b;
        for (int k = 0; k < 8; ++k)
        {
            crc = (crc & 1u) != 0 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
        }
    }
    return crc ^ 0xFFFFFFFFu;
}
} // namespace

TEST_CASE("CRC-32 gives the published check values", "[checksum]")
{
    CHECK(crc32(bytesOf("123456789")) == 0xCBF43926u);
    CHECK(crc32({}) == 0u);
    CHECK(crc32(bytesOf("The quick brown fox jumps over the lazy dog")) == 0x414FA339u);
}

TEST_CASE("CRC-32 eight bytes a step equals the bit-by-bit definition, at every length and split",
          "[checksum]")
{
    std::mt19937 random(3);
    std::vector<std::uint8_t> bytes(300);
    for (std::uint8_t& b : bytes)
    {
        b = static_cast<std::uint8_t>(random());
    }
    for (std::size_t length = 0; length <= bytes.size(); ++length)
    {
        const std::span<const std::uint8_t> data(bytes.data(), length);
        REQUIRE(crc32(data) == crc32BitByBit(data));
        const std::size_t split = length / 3;
        REQUIRE(crc32(data.subspan(split), crc32(data.first(split))) == crc32(data));
    }
}

TEST_CASE("a slice's checksum is the CRC-32 of CODEC.md's 28-byte records (the document's vectors)",
          "[checksum][codec]")
{
    QuantizedBody first;
    first.id = 7;
    first.generation = 1;
    first.position = {262144, 65536, 262144};
    first.orientation = {2047, 2047, 2047};
    first.largest = 3;
    first.atRest = false;
    QuantizedBody second;
    second.id = 8;
    second.generation = 2;
    second.position = {262145, 65537, 262143};
    second.orientation = {0, 2047, 4094};
    second.largest = 1;
    second.atRest = true;

    const std::vector<std::uint8_t> firstRecord = {0x07, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
                                                   0x04, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 0x00,
                                                   0xff, 0x07, 0xff, 0x07, 0xff, 0x07, 0x03, 0x00};
    CHECK(crc32(firstRecord) == 0xDF7F7B94u);
    const QuantizedBody one[] = {first};
    CHECK(quantizedStateChecksum(one) == 0xDF7F7B94u);
    const QuantizedBody both[] = {first, second};
    CHECK(quantizedStateChecksum(both) == 0xADE6F80Bu);
    CHECK(quantizedStateChecksum({}) == 0u);

    // Any single field differing changes it.
    for (int field = 0; field < 10; ++field)
    {
        QuantizedBody changed[] = {first, second};
        QuantizedBody& b = changed[1];
        switch (field)
        {
        case 0:
            b.id += 1;
            break;
        case 1:
            b.generation += 1;
            break;
        case 2:
            b.position[0] ^= 1u;
            break;
        case 3:
            b.position[1] ^= 1u << 17;
            break;
        case 4:
            b.position[2] += 1;
            break;
        case 5:
            b.orientation[0] += 1;
            break;
        case 6:
            b.orientation[2] -= 1;
            break;
        case 7:
            b.largest = 2;
            break;
        case 8:
            b.atRest = false;
            break;
        default:
            std::swap(changed[0], changed[1]);
            break; // order matters too
        }
        INFO("field " << field);
        CHECK(quantizedStateChecksum(changed) != 0xADE6F80Bu);
    }
}

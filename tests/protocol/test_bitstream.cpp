// Bit packing and the adaptive range coder: round trips of random mixed fields, and what happens at the
// edges (overflow, underflow, out-of-range values, random input).
#include "polytope/protocol/bitstream.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <variant>
#include <vector>

using namespace polytope::protocol;

namespace
{

struct RawBits
{
    std::uint32_t value;
    int bits;
};
struct RangedInt
{
    std::int64_t value;
    std::int64_t min;
    std::int64_t max;
};
struct VarUint
{
    std::uint32_t value;
};
using Field = std::variant<RawBits, RangedInt, VarUint>;

/// A random field and its exact size in bits.
std::pair<Field, std::size_t> randomField(std::mt19937_64& random)
{
    switch (random() % 3)
    {
    case 0:
    {
        const int bits = static_cast<int>(random() % 33);
        const std::uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1u;
        return {RawBits{static_cast<std::uint32_t>(random()) & mask, bits}, static_cast<std::size_t>(bits)};
    }
    case 1:
    {
        const std::int64_t min = static_cast<std::int64_t>(random() % 2000001) - 1000000;
        const std::int64_t span = static_cast<std::int64_t>(random() % (random() % 2 ? 7ull : 4294967296ull));
        const std::int64_t value =
            min +
            (span == 0 ? 0 : static_cast<std::int64_t>(random() % (static_cast<std::uint64_t>(span) + 1)));
        return {RangedInt{value, min, min + span},
                static_cast<std::size_t>(bitsRequired(static_cast<std::uint64_t>(span)))};
    }
    default:
    {
        const int magnitude = static_cast<int>(random() % 33);
        const std::uint64_t value = magnitude == 0 ? 0 : (random() >> (64 - magnitude));
        const auto v = static_cast<std::uint32_t>(std::min<std::uint64_t>(value, 0xFFFFFFFFull));
        return {VarUint{v},
                static_cast<std::size_t>(2 * bitsRequired(static_cast<std::uint64_t>(v) + 1) - 1)};
    }
    }
}

} // namespace

TEST_CASE("bitsRequired counts the bits of a range", "[bitstream]")
{
    CHECK(bitsRequired(0) == 0);
    CHECK(bitsRequired(1) == 1);
    CHECK(bitsRequired(2) == 2);
    CHECK(bitsRequired(255) == 8);
    CHECK(bitsRequired(256) == 9);
    CHECK(bitsRequired(0xFFFFFFFFull) == 32);
    CHECK(bitsRequired(~0ull) == 64);
}

TEST_CASE("random mixed fields survive a bit-packing round trip, in exactly their size", "[bitstream]")
{
    std::mt19937_64 random(20240601);
    for (int trial = 0; trial < 300; ++trial)
    {
        std::vector<Field> fields;
        std::size_t expectedBits = 0;
        const int count = 1 + static_cast<int>(random() % 200);
        for (int i = 0; i < count; ++i)
        {
            auto [field, bits] = randomField(random);
            fields.push_back(field);
            expectedBits += bits;
        }
        std::vector<std::uint8_t> buffer((expectedBits + 7) / 8);
        BitWriter writer(buffer);
        for (const Field& field : fields)
        {
            if (const auto* raw = std::get_if<RawBits>(&field))
            {
                writer.writeBits(raw->value, raw->bits);
            }
            else if (const auto* ranged = std::get_if<RangedInt>(&field))
            {
                writer.writeInt(ranged->value, ranged->min, ranged->max);
            }
            else
            {
                writer.writeVarUint(std::get<VarUint>(field).value);
            }
        }
        REQUIRE_FALSE(writer.overflowed());
        REQUIRE(writer.bitsWritten() == expectedBits);

        BitReader reader(buffer);
        for (const Field& field : fields)
        {
            if (const auto* raw = std::get_if<RawBits>(&field))
            {
                REQUIRE(reader.readBits(raw->bits) == raw->value);
            }
            else if (const auto* ranged = std::get_if<RangedInt>(&field))
            {
                REQUIRE(reader.readInt(ranged->min, ranged->max) == ranged->value);
            }
            else
            {
                REQUIRE(reader.readVarUint() == std::get<VarUint>(field).value);
            }
        }
        REQUIRE_FALSE(reader.failed());
        CHECK(reader.bitsRead() == expectedBits);
        CHECK(reader.bitsRemaining() == buffer.size() * 8 - expectedBits);
    }
}

TEST_CASE("bits are packed most significant first", "[bitstream]")
{
    std::vector<std::uint8_t> buffer(2);
    BitWriter writer(buffer);
    writer.writeBits(0b101, 3);
    writer.writeBits(0b11110000, 8);
    writer.alignToByte();
    CHECK(writer.bitsWritten() == 16);
    CHECK(buffer[0] == 0b10111110);
    CHECK(buffer[1] == 0b00000000);
}

TEST_CASE("a writer never writes past its buffer and reports the overflow", "[bitstream]")
{
    std::vector<std::uint8_t> storage(8, 0xA5);
    BitWriter writer(std::span<std::uint8_t>(storage).subspan(2, 4)); // 32 writable bits, guards around
    writer.writeBits(0, 20);
    CHECK_FALSE(writer.overflowed());
    writer.writeBits(0xFFF, 13); // 33 > 32: refused whole
    CHECK(writer.overflowed());
    CHECK(writer.bitsWritten() == 20);
    writer.writeBits(1, 1); // sticky: nothing more is written
    CHECK(writer.bitsWritten() == 20);
    CHECK(storage[0] == 0xA5);
    CHECK(storage[1] == 0xA5);
    CHECK(storage[6] == 0xA5);
    CHECK(storage[7] == 0xA5);

    std::vector<std::uint8_t> small(1);
    BitWriter ranged(small);
    ranged.writeInt(9, 0, 7); // out of range: a programmer error, flagged
    CHECK(ranged.overflowed());
}

TEST_CASE("reading past the end returns zero and sets a sticky error", "[bitstream]")
{
    const std::vector<std::uint8_t> bytes{0xFF, 0xFF};
    BitReader reader(bytes);
    CHECK(reader.readBits(12) == 0xFFF);
    CHECK_FALSE(reader.failed());
    CHECK(reader.readBits(5) == 0); // only 4 left
    CHECK(reader.failed());
    CHECK(reader.readBits(1) == 0); // sticky, even though a bit remains
    CHECK(reader.failed());

    BitReader empty(std::span<const std::uint8_t>{});
    CHECK(empty.readVarUint() == 0);
    CHECK(empty.failed());

    BitReader bad(bytes);
    CHECK(bad.readBits(33) == 0); // more than 32 bits at once is refused
    CHECK(bad.failed());
}

TEST_CASE("range checks on read: an int above its max and an over-long varint fail", "[bitstream]")
{
    std::vector<std::uint8_t> buffer(16);
    {
        BitWriter writer(buffer);
        writer.writeBits(6, 3); // 6 in a field for [0, 4] (3 bits)
        writer.writeBits(0, 32);
        writer.writeBits(0, 8); // 40 leading zeros: no uint32 is that long
    }
    BitReader reader(buffer);
    CHECK(reader.readInt(10, 14) == 10);
    CHECK(reader.failed());

    BitReader varint(std::span<const std::uint8_t>(buffer).subspan(1));
    CHECK(varint.readVarUint() == 0);
    CHECK(varint.failed());

    // The largest varint round-trips (33 bits of value + 1).
    std::vector<std::uint8_t> big(16);
    BitWriter writer(big);
    writer.writeVarUint(0xFFFFFFFFu);
    CHECK(writer.bitsWritten() == 65);
    BitReader back(big);
    CHECK(back.readVarUint() == 0xFFFFFFFFu);
    CHECK_FALSE(back.failed());
}

TEST_CASE("the adaptive probability counts, then forgets, and never reaches 0 or 1", "[bitstream]")
{
    AdaptiveBit bit;
    CHECK(bit.probabilityOfZero() == AdaptiveBit::kOne / 2);
    bit.update(false); // KT estimator: (1 + 1/2) / 2
    CHECK(bit.probabilityOfZero() == 24576);
    bit.update(true); // (1 + 1/2) / 3
    CHECK(bit.probabilityOfZero() == 16384);

    std::mt19937_64 random(5);
    for (int run = 0; run < 50; ++run)
    {
        AdaptiveBit model;
        const double skew = static_cast<double>(random() % 1000) / 1000.0;
        for (int i = 0; i < 3000; ++i)
        {
            model.update(static_cast<double>(random() % 100000) / 100000.0 < skew);
            REQUIRE(model.probabilityOfZero() >= 31);
            REQUIRE(model.probabilityOfZero() <= AdaptiveBit::kOne - 31);
        }
    }
    AdaptiveBit zeros;
    for (int i = 0; i < 10000; ++i)
    {
        zeros.update(false);
    }
    CHECK(zeros.probabilityOfZero() == AdaptiveBit::kOne - 31);
}

TEST_CASE("the range coder round-trips random adaptive and direct bits near the entropy", "[bitstream]")
{
    std::mt19937_64 random(77);
    for (int trial = 0; trial < 40; ++trial)
    {
        // A few contexts with different skews, interleaved with direct bits.
        const int contexts = 1 + static_cast<int>(random() % 6);
        std::vector<double> skew(static_cast<std::size_t>(contexts));
        double entropyBits = 0.0;
        for (double& p : skew)
        {
            p = static_cast<double>(random() % 1000) / 1000.0;
        }
        struct Symbol
        {
            int context; // -1: direct
            std::uint32_t value;
            int bits;
        };
        std::vector<Symbol> symbols;
        const int count = 100 + static_cast<int>(random() % 5000);
        for (int i = 0; i < count; ++i)
        {
            if (random() % 8 == 0)
            {
                const int bits = static_cast<int>(random() % 33);
                const std::uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1u;
                symbols.push_back({-1, static_cast<std::uint32_t>(random()) & mask, bits});
                entropyBits += bits;
            }
            else
            {
                const int c = static_cast<int>(random() % static_cast<std::uint64_t>(contexts));
                const double p = skew[static_cast<std::size_t>(c)];
                const bool one = static_cast<double>(random() % 1000000) / 1000000.0 < p;
                symbols.push_back({c, one ? 1u : 0u, 1});
                entropyBits += p <= 0.0 || p >= 1.0 ? 0.0 : -(p * std::log2(p) + (1 - p) * std::log2(1 - p));
            }
        }
        std::vector<std::uint8_t> buffer(count * 5 + 16);
        RangeEncoder encoder(buffer);
        std::vector<AdaptiveBit> models(static_cast<std::size_t>(contexts));
        for (const Symbol& s : symbols)
        {
            if (s.context < 0)
            {
                encoder.encodeDirect(s.value, s.bits);
            }
            else
            {
                encoder.encode(models[static_cast<std::size_t>(s.context)], s.value != 0);
            }
        }
        const std::size_t size = encoder.finish();
        REQUIRE_FALSE(encoder.overflowed());
        if (size > 0)
        {
            CHECK(buffer[size - 1] != 0); // trailing zeros are not sent
        }
        // Adaptive coding of a stationary source costs little more than its entropy: learning each context
        // (a few bits), forgetting with weight 1/32 (about 1/(64 ln 2) = 0.023 bit a symbol) and the flush.
        CHECK(static_cast<double>(size) * 8.0 <= entropyBits * 1.02 + 0.03 * count + 64.0 + 12.0 * contexts);

        RangeDecoder decoder(std::span<const std::uint8_t>(buffer.data(), size));
        REQUIRE_FALSE(decoder.corrupt());
        std::vector<AdaptiveBit> decodeModels(static_cast<std::size_t>(contexts));
        for (const Symbol& s : symbols)
        {
            if (s.context < 0)
            {
                REQUIRE(decoder.decodeDirect(s.bits) == s.value);
            }
            else
            {
                REQUIRE(decoder.decode(decodeModels[static_cast<std::size_t>(s.context)]) == (s.value != 0));
            }
        }
    }
}

TEST_CASE("the range encoder stops at its buffer's end and says so", "[bitstream]")
{
    std::vector<std::uint8_t> storage(40, 0x5A);
    RangeEncoder encoder(std::span<std::uint8_t>(storage).subspan(4, 32));
    std::mt19937_64 random(3);
    for (int i = 0; i < 2000; ++i)
    {
        encoder.encodeDirect(static_cast<std::uint32_t>(random()), 32);
    }
    encoder.finish();
    CHECK(encoder.overflowed());
    for (std::size_t i : {0u, 1u, 2u, 3u, 36u, 37u, 38u, 39u})
    {
        CHECK(storage[i] == 0x5A);
    }
}

TEST_CASE("the range decoder reads zeros past its input and copes with any bytes", "[bitstream]")
{
    // An empty stream decodes (as zeros) without reading anything.
    RangeDecoder empty(std::span<const std::uint8_t>{});
    AdaptiveBit model;
    for (int i = 0; i < 100; ++i)
    {
        empty.decode(model);
    }
    CHECK(empty.bytesPastEnd() > 0);
    CHECK_FALSE(empty.corrupt());

    const std::vector<std::uint8_t> allOnes{0xFF, 0xFF, 0xFF, 0xFF, 0x12};
    CHECK(RangeDecoder(allOnes).corrupt());

    // Random bytes: any decode sequence is well defined and stays inside the input.
    std::mt19937_64 random(11);
    for (int trial = 0; trial < 200; ++trial)
    {
        std::vector<std::uint8_t> bytes(random() % 64);
        for (auto& b : bytes)
        {
            b = static_cast<std::uint8_t>(random());
        }
        RangeDecoder decoder(bytes);
        std::vector<AdaptiveBit> models(4);
        for (int i = 0; i < 500; ++i)
        {
            if (i % 7 == 0)
            {
                const int bits = static_cast<int>(random() % 32);
                REQUIRE((decoder.decodeDirect(bits) >> bits) == 0);
            }
            else
            {
                decoder.decode(models[static_cast<std::size_t>(i % 4)]);
            }
        }
        CHECK(decoder.bytesPastEnd() <= 4 + 500 * 4);
    }
}

// Sealed datagrams (seal.h): round trips, every kind of tampering, replays, the window, key derivation.
#include "polytope/protocol/seal.h"

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace polytope::protocol;

namespace
{

SessionKey keyOf(std::uint8_t seed)
{
    SessionKey key{};
    for (std::size_t i = 0; i < key.size(); ++i)
    {
        key[i] = static_cast<std::uint8_t>(seed * 31 + i);
    }
    return key;
}

std::array<std::uint8_t, kSessionSaltBytes> saltOf(std::uint8_t seed)
{
    std::array<std::uint8_t, kSessionSaltBytes> salt{};
    salt.fill(seed);
    return salt;
}

struct Pair
{
    explicit Pair(std::uint8_t saltSeed = 1)
    {
        const auto salt = saltOf(saltSeed);
        server = SealedChannel(deriveSessionKeys(keyOf(1), keyOf(2), salt, true));
        client = SealedChannel(deriveSessionKeys(keyOf(1), keyOf(2), salt, false));
    }
    SealedChannel server;
    SealedChannel client;
};

std::vector<std::uint8_t> bytes(std::size_t n, std::uint8_t seed = 7)
{
    std::vector<std::uint8_t> out(n);
    for (std::size_t i = 0; i < n; ++i)
    {
        out[i] = static_cast<std::uint8_t>(seed + i * 13);
    }
    return out;
}

std::vector<std::uint8_t> copy(std::span<const std::uint8_t> s)
{
    return {s.begin(), s.end()};
}

} // namespace

TEST_CASE("seal: round trips in both directions, from 1 byte to the largest Packet", "[protocol][seal]")
{
    Pair pair;
    for (const std::size_t n : {std::size_t{1}, std::size_t{40}, kMaxSealedPlaintextBytes})
    {
        const auto plain = bytes(n);
        const auto sealed = copy(pair.client.seal(plain));
        REQUIRE(sealed.size() == n + kSealOverheadBytes);
        CHECK(sealed.size() <= kMaxDatagramBytes);
        CHECK(isSealed(sealed));
        std::span<const std::uint8_t> opened;
        REQUIRE(pair.server.open(sealed, opened) == OpenError::None);
        CHECK(copy(opened) == plain);
        CHECK(reinterpret_cast<std::uintptr_t>(opened.data()) % 8 == 0);
        const auto back = copy(pair.server.seal(plain));
        REQUIRE(pair.client.open(back, opened) == OpenError::None);
        CHECK(copy(opened) == plain);
    }
    CHECK(pair.client.nextSendSequence() == 3);
    // Too large, empty, or inactive: nothing is sealed.
    CHECK(pair.client.seal(bytes(kMaxSealedPlaintextBytes + 1)).empty());
    CHECK(pair.client.seal({}).empty());
    SealedChannel inactive;
    CHECK(inactive.seal(bytes(10)).empty());
    // Same plaintext twice: different bytes (the sequence is the nonce).
    const auto a = copy(pair.client.seal(bytes(10)));
    const auto b = copy(pair.client.seal(bytes(10)));
    CHECK(a != b);
}

TEST_CASE("seal: every flipped bit, another key, another salt or another direction fails", "[protocol][seal]")
{
    Pair pair;
    const auto plain = bytes(100);
    const auto sealed = copy(pair.client.seal(plain));
    std::span<const std::uint8_t> opened;
    for (std::size_t bit = 0; bit < sealed.size() * 8; ++bit)
    {
        auto tampered = sealed;
        tampered[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        const OpenError error = pair.server.open(tampered, opened);
        INFO("bit " << bit);
        if (bit < 32)
        {
            CHECK(error == OpenError::NotSealed); // the magic
        }
        else
        {
            CHECK(error == OpenError::Forged);
        }
    }
    // Untouched, it still opens: no failed attempt moved the window.
    REQUIRE(pair.server.open(sealed, opened) == OpenError::None);

    Pair otherSalt(2);
    const auto sealed2 = copy(pair.client.seal(plain));
    CHECK(otherSalt.server.open(sealed2, opened) == OpenError::Forged);
    SealedChannel wrongKey(deriveSessionKeys(keyOf(9), keyOf(2), saltOf(1), true));
    CHECK(wrongKey.open(sealed2, opened) == OpenError::Forged);
    // A client's datagram reflected back to the client does not open (each direction has its own key).
    CHECK(pair.client.open(sealed2, opened) == OpenError::Forged);
    // Truncated: shorter than the overhead is not sealed at all; a shorter ciphertext does not authenticate.
    CHECK(pair.server.open(std::span(sealed2.data(), kSealOverheadBytes - 1), opened) ==
          OpenError::NotSealed);
    CHECK(pair.server.open(std::span(sealed2.data(), sealed2.size() - 1), opened) == OpenError::Forged);
    std::vector<std::uint8_t> huge(kMaxDatagramBytes + 1, 0);
    std::copy(kSealedMagic.begin(), kSealedMagic.end(), huge.begin());
    CHECK(pair.server.open(huge, opened) == OpenError::TooLarge);
}

TEST_CASE("seal: replays are refused, reordering within the window is not", "[protocol][seal]")
{
    Pair pair;
    std::vector<std::vector<std::uint8_t>> sent;
    for (int i = 0; i < 600; ++i)
    {
        sent.push_back(copy(pair.client.seal(bytes(20, static_cast<std::uint8_t>(i)))));
    }
    std::span<const std::uint8_t> opened;
    // Out of order within 256: all accepted once, then each refused as a replay.
    for (int i = 299; i >= 100; --i)
    {
        REQUIRE(pair.server.open(sent[static_cast<std::size_t>(i)], opened) == OpenError::None);
    }
    for (int i = 100; i < 300; ++i)
    {
        CHECK(pair.server.open(sent[static_cast<std::size_t>(i)], opened) == OpenError::Replayed);
    }
    // Newest 299; 43 and older are outside the window (299 - 256).
    CHECK(pair.server.open(sent[43], opened) == OpenError::Replayed);
    CHECK(pair.server.open(sent[44], opened) == OpenError::None);
    REQUIRE(pair.server.open(sent[599], opened) == OpenError::None);
    CHECK(pair.server.open(sent[343], opened) == OpenError::Replayed);
    CHECK(pair.server.open(sent[344], opened) == OpenError::None);

    // A forged datagram with a huge sequence does not move the window.
    Pair fresh;
    auto forged = copy(fresh.client.seal(bytes(20)));
    for (int i = 4; i < 12; ++i)
    {
        forged[static_cast<std::size_t>(i)] = 0xFF;
    }
    CHECK(fresh.server.open(forged, opened) == OpenError::Forged);
    const auto next = copy(fresh.client.seal(bytes(20)));
    CHECK(fresh.server.open(next, opened) == OpenError::None);
}

TEST_CASE("seal: session keys depend on both token keys and the salt", "[protocol][seal]")
{
    const auto a = deriveSessionKeys(keyOf(1), keyOf(2), saltOf(1), true);
    const auto b = deriveSessionKeys(keyOf(1), keyOf(2), saltOf(1), false);
    CHECK(a.send == b.receive);
    CHECK(a.receive == b.send);
    CHECK(a.send != a.receive);
    CHECK(deriveSessionKeys(keyOf(1), keyOf(2), saltOf(3), true).send != a.send);
    CHECK(deriveSessionKeys(keyOf(1), keyOf(4), saltOf(1), true).send != a.send);
    CHECK(deriveSessionKeys(keyOf(4), keyOf(2), saltOf(1), true).receive != a.receive);
    CHECK(deriveSessionKeys(keyOf(1), keyOf(2), saltOf(1), true).send == a.send); // deterministic
    // A plain Packet is never taken for a sealed datagram.
    std::vector<std::uint8_t> packet(64, 0);
    packet[0] = 12;
    std::copy_n("PLTP", 4, packet.begin() + 4);
    CHECK_FALSE(isSealed(packet));
}

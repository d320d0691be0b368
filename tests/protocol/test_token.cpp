// Connect tokens (token.h): make and open, forgery, expiry, limits, the token file, hex keys.
#include "polytope/protocol/token.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace polytope::protocol;

namespace
{

constexpr std::uint64_t kNow = 1800000000ull;

TokenKey keyOf(std::uint8_t seed)
{
    TokenKey key{};
    for (std::size_t i = 0; i < key.size(); ++i)
    {
        key[i] = static_cast<std::uint8_t>(seed + 3 * i);
    }
    return key;
}

TokenRequest fullRequest()
{
    TokenRequest request;
    request.clientId = 0x123456789ull;
    request.rooms = {"main", "arena"};
    request.serverAddresses = {"203.0.113.9:7777", "[2001:db8::1]:7777"};
    request.lifetimeSeconds = 45;
    request.timeoutSeconds = 12;
    request.userData = {1, 2, 3, 250};
    return request;
}

ConnectToken make(const TokenRequest& request = fullRequest(), const TokenKey& key = keyOf(1))
{
    ConnectToken token;
    std::string error;
    const bool ok = makeConnectToken(key, request, kNow, token, error);
    INFO(error);
    REQUIRE(ok);
    return token;
}

TokenError open(const ConnectToken& token, ConnectTokenPrivate& out, const TokenKey& key = keyOf(1),
                std::uint64_t now = kNow)
{
    return openConnectToken(key, token.expireTime, token.nonce, token.sealed, now, out);
}

} // namespace

TEST_CASE("token: what the backend puts in, the server reads out", "[protocol][token]")
{
    const ConnectToken token = make();
    CHECK(token.clientId == 0x123456789ull);
    CHECK(token.createTime == kNow);
    CHECK(token.expireTime == kNow + 45);
    CHECK(token.sealed.size() <= kMaxSealedTokenBytes);
    CHECK(token.clientToServerKey != token.serverToClientKey);
    ConnectTokenPrivate read;
    REQUIRE(open(token, read) == TokenError::None);
    CHECK(read.clientId == 0x123456789ull);
    CHECK(read.rooms == std::vector<std::string>{"main", "arena"});
    CHECK(read.serverAddresses == std::vector<std::string>{"203.0.113.9:7777", "[2001:db8::1]:7777"});
    CHECK(read.clientToServerKey == token.clientToServerKey);
    CHECK(read.serverToClientKey == token.serverToClientKey);
    CHECK(read.timeoutSeconds == 12);
    CHECK(read.userData == std::vector<std::uint8_t>{1, 2, 3, 250});
    // Fresh keys, nonce and ciphertext every time.
    const ConnectToken again = make();
    CHECK(again.nonce != token.nonce);
    CHECK(again.clientToServerKey != token.clientToServerKey);
    CHECK(tokenId(again.sealed) != tokenId(token.sealed));
    // Still good at its expire time, not a second after.
    CHECK(open(token, read, keyOf(1), kNow + 45) == TokenError::None);
    CHECK(open(token, read, keyOf(1), kNow + 46) == TokenError::Expired);
}

TEST_CASE("token: another key, any flipped bit, or another expire time is a forgery", "[protocol][token]")
{
    const ConnectToken token = make();
    ConnectTokenPrivate read;
    CHECK(open(token, read, keyOf(2)) == TokenError::Forged);
    for (std::size_t bit = 0; bit < token.sealed.size() * 8; bit += 7)
    {
        ConnectToken tampered = token;
        tampered.sealed[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        INFO("bit " << bit);
        CHECK(open(tampered, read) == TokenError::Forged);
    }
    for (std::size_t i = 0; i < token.nonce.size(); ++i)
    {
        ConnectToken tampered = token;
        tampered.nonce[i] ^= 0x80;
        CHECK(open(tampered, read) == TokenError::Forged);
    }
    ConnectToken longer = token;
    longer.expireTime += 3600;
    CHECK(open(longer, read) == TokenError::Forged);
    // Wrong sizes are malformed before any cryptography.
    CHECK(openConnectToken(keyOf(1), token.expireTime, std::span(token.nonce.data(), 23), token.sealed, kNow,
                           read) == TokenError::Malformed);
    CHECK(openConnectToken(keyOf(1), token.expireTime, token.nonce, std::span(token.sealed.data(), 16), kNow,
                           read) == TokenError::Malformed);
}

TEST_CASE("token: requests out of range are refused with a reason", "[protocol][token]")
{
    const auto refused = [](TokenRequest request)
    {
        ConnectToken token;
        std::string error;
        const bool ok = makeConnectToken(keyOf(1), request, kNow, token, error);
        CHECK_FALSE(error.empty());
        return !ok;
    };
    TokenRequest r = fullRequest();
    r.clientId = 0;
    CHECK(refused(r));
    r = fullRequest();
    r.serverAddresses.clear();
    CHECK(refused(r));
    r = fullRequest();
    r.serverAddresses.assign(9, "a:1");
    CHECK(refused(r));
    r = fullRequest();
    r.rooms.assign(9, "room");
    CHECK(refused(r));
    r = fullRequest();
    r.rooms = {std::string(65, 'r')};
    CHECK(refused(r));
    r = fullRequest();
    r.lifetimeSeconds = 0;
    CHECK(refused(r));
    r = fullRequest();
    r.timeoutSeconds = 3601;
    CHECK(refused(r));
    r = fullRequest();
    r.userData.assign(129, 0);
    CHECK(refused(r));
    // The largest legal request still fits the credential's limit.
    r = fullRequest();
    r.rooms.assign(kMaxTokenRooms, std::string(kMaxRoomNameBytes, 'r'));
    r.serverAddresses.assign(kMaxTokenAddresses, std::string(kMaxTokenAddressBytes, 'a'));
    r.userData.assign(kMaxTokenUserDataBytes, 9);
    CHECK(refused(r)); // 8 x 64 + 8 x 64 bytes of names: more than 640; the error says what to cut
    r.rooms.resize(2);
    r.serverAddresses.resize(2);
    ConnectTokenPrivate read;
    CHECK(open(make(r), read) == TokenError::None);
}

TEST_CASE("token: the private part is checked after decryption too", "[protocol][token]")
{
    ConnectTokenPrivate read;
    const std::vector<std::uint8_t> junk(100, 0x41);
    CHECK(readTokenPrivate(junk, read) == TokenError::Malformed);
    CHECK(readTokenPrivate({}, read) == TokenError::Malformed);
}

TEST_CASE("token: the token file round trip, and damaged files are refused", "[protocol][token]")
{
    const ConnectToken token = make();
    const std::vector<std::uint8_t> file = encodeConnectTokenFile(token);
    ConnectToken read;
    std::string error;
    REQUIRE(decodeConnectTokenFile(file, read, error));
    CHECK(read.clientId == token.clientId);
    CHECK(read.createTime == token.createTime);
    CHECK(read.expireTime == token.expireTime);
    CHECK(read.nonce == token.nonce);
    CHECK(read.sealed == token.sealed);
    CHECK(read.serverAddresses == token.serverAddresses);
    CHECK(read.clientToServerKey == token.clientToServerKey);
    CHECK(read.serverToClientKey == token.serverToClientKey);
    CHECK(read.timeoutSeconds == token.timeoutSeconds);
    // Misaligned input is fine.
    std::vector<std::uint8_t> shifted(file.size() + 1);
    std::copy(file.begin(), file.end(), shifted.begin() + 1);
    CHECK(decodeConnectTokenFile(std::span(shifted).subspan(1), read, error));

    for (std::size_t cut : {std::size_t{0}, std::size_t{10}, file.size() / 2, file.size() - 1})
    {
        error.clear();
        CHECK_FALSE(decodeConnectTokenFile(std::span(file.data(), cut), read, error));
        CHECK_FALSE(error.empty());
    }
    std::vector<std::uint8_t> wrongId = file;
    wrongId[4] = 'X';
    CHECK_FALSE(decodeConnectTokenFile(wrongId, read, error));
    std::vector<std::uint8_t> badOffset = file;
    badOffset[0] = 0xF0;
    badOffset[1] = 0xFF;
    CHECK_FALSE(decodeConnectTokenFile(badOffset, read, error));
}

TEST_CASE("token: keys in hex", "[protocol][token]")
{
    TokenKey key{};
    std::string error;
    const std::string hex = toHex(keyOf(5));
    CHECK(hex.size() == 64);
    REQUIRE(parseTokenKeyHex(hex, key, error));
    CHECK(key == keyOf(5));
    REQUIRE(parseTokenKeyHex(hex + "\n", key, error)); // as read from a file
    std::string upper = hex;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](char c) { return static_cast<char>(std::toupper(c)); });
    CHECK(parseTokenKeyHex(upper, key, error));
    CHECK_FALSE(parseTokenKeyHex(hex.substr(2), key, error));
    CHECK_FALSE(parseTokenKeyHex(hex.substr(0, 63) + "g", key, error));
    CHECK_FALSE(parseTokenKeyHex("", key, error));
    CHECK(error.find("64 hex digits") != std::string::npos);
}

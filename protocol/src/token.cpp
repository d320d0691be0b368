#include "polytope/protocol/token.h"

#include "polytope/wire/token_generated.h"

#include "polytope/protocol/sodium_ready.h"

#include <sodium.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace polytope::protocol
{
namespace wire = ::polytope::wire;

namespace
{
static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == kTokenKeyBytes);
static_assert(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES == kTokenNonceBytes);
static_assert(crypto_aead_xchacha20poly1305_ietf_ABYTES == 16);

constexpr std::size_t kTagBytes = 16;
constexpr std::size_t kMaxPrivateBytes = kMaxSealedTokenBytes - kTagBytes;
constexpr std::size_t kAdditionalBytes = 4 + 4 + 2 + 8;

/// "PLTK", the protocol id, the version and the expire time: what the seal binds besides the plaintext.
void additionalOf(std::uint64_t expireTime, std::uint8_t (&ad)[kAdditionalBytes])
{
    std::memcpy(ad, "PLTK", 4);
    for (int i = 0; i < 4; ++i)
    {
        ad[4 + i] = static_cast<std::uint8_t>(kProtocolId >> (8 * i));
    }
    ad[8] = static_cast<std::uint8_t>(kProtocolVersion & 0xFF);
    ad[9] = static_cast<std::uint8_t>(kProtocolVersion >> 8);
    for (int i = 0; i < 8; ++i)
    {
        ad[10 + i] = static_cast<std::uint8_t>(expireTime >> (8 * i));
    }
}

bool validNames(const std::vector<std::string>& names, std::size_t maxCount, std::size_t maxBytes,
                bool needOne)
{
    if (names.size() > maxCount || (needOne && names.empty()))
    {
        return false;
    }
    return std::all_of(names.begin(), names.end(),
                       [&](const std::string& n) { return !n.empty() && n.size() <= maxBytes; });
}

bool readNames(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* in, std::size_t maxCount,
               std::size_t maxBytes, bool needOne, std::vector<std::string>& out)
{
    out.clear();
    if (in == nullptr)
    {
        return !needOne;
    }
    if (in->size() > maxCount)
    {
        return false;
    }
    for (const flatbuffers::String* name : *in)
    {
        out.push_back(name->str());
    }
    return validNames(out, maxCount, maxBytes, needOne);
}

bool readKey(const flatbuffers::Vector<std::uint8_t>* in, SessionKey& out)
{
    if (in == nullptr || in->size() != out.size())
    {
        return false;
    }
    std::copy(in->begin(), in->end(), out.begin());
    return true;
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>>
writeNames(flatbuffers::FlatBufferBuilder& builder, const std::vector<std::string>& names)
{
    return builder.CreateVectorOfStrings(names);
}

/// Copies untrusted bytes to 8-byte-aligned storage for the verifier.
std::span<const std::uint8_t> aligned(std::span<const std::uint8_t> bytes,
                                      std::vector<std::uint64_t>& storage)
{
    storage.assign(bytes.size() / 8 + 1, 0);
    std::memcpy(storage.data(), bytes.data(), bytes.size());
    return {reinterpret_cast<const std::uint8_t*>(storage.data()), bytes.size()};
}

flatbuffers::Verifier::Options verifierOptions()
{
    flatbuffers::Verifier::Options options;
    options.max_depth = 4;
    options.max_tables = 4;
    return options;
}
} // namespace

bool makeConnectToken(const TokenKey& key, const TokenRequest& request, std::uint64_t nowUnixSeconds,
                      ConnectToken& out, std::string& error)
{
    ensureSodium();
    if (request.clientId == 0)
    {
        error = "client id must be at least 1";
        return false;
    }
    if (!validNames(request.rooms, kMaxTokenRooms, kMaxRoomNameBytes, false))
    {
        error = "at most 8 rooms, each 1 to 64 bytes";
        return false;
    }
    if (!validNames(request.serverAddresses, kMaxTokenAddresses, kMaxTokenAddressBytes, true))
    {
        error = "1 to 8 server addresses (HOST:PORT), each 1 to 64 bytes";
        return false;
    }
    if (request.lifetimeSeconds == 0 || request.lifetimeSeconds > kMaxTokenLifetimeSeconds)
    {
        error = "lifetime must be 1 to 86400 seconds";
        return false;
    }
    if (request.timeoutSeconds == 0 || request.timeoutSeconds > kMaxTokenTimeoutSeconds)
    {
        error = "timeout must be 1 to 3600 seconds";
        return false;
    }
    if (request.userData.size() > kMaxTokenUserDataBytes)
    {
        error = "user data is at most 128 bytes";
        return false;
    }
    ConnectToken token;
    token.clientId = request.clientId;
    token.createTime = nowUnixSeconds;
    token.expireTime = nowUnixSeconds + request.lifetimeSeconds;
    token.serverAddresses = request.serverAddresses;
    token.timeoutSeconds = request.timeoutSeconds;
    randombytes_buf(token.clientToServerKey.data(), token.clientToServerKey.size());
    randombytes_buf(token.serverToClientKey.data(), token.serverToClientKey.size());
    randombytes_buf(token.nonce.data(), token.nonce.size());

    flatbuffers::FlatBufferBuilder builder(1024);
    const auto rooms = writeNames(builder, request.rooms);
    const auto addresses = writeNames(builder, request.serverAddresses);
    const auto c2s = builder.CreateVector(token.clientToServerKey.data(), token.clientToServerKey.size());
    const auto s2c = builder.CreateVector(token.serverToClientKey.data(), token.serverToClientKey.size());
    const auto user = builder.CreateVector(request.userData.data(), request.userData.size());
    builder.Finish(wire::CreateTokenPrivate(builder, request.clientId, rooms, addresses, c2s, s2c,
                                            request.timeoutSeconds, user));
    if (builder.GetSize() > kMaxPrivateBytes)
    {
        error = "the token's private part is " + std::to_string(builder.GetSize()) + " bytes, more than " +
                std::to_string(kMaxPrivateBytes) + ": fewer or shorter rooms, addresses or user data";
        return false;
    }
    std::uint8_t ad[kAdditionalBytes];
    additionalOf(token.expireTime, ad);
    token.sealed.resize(builder.GetSize() + kTagBytes);
    unsigned long long sealedBytes = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(token.sealed.data(), &sealedBytes, builder.GetBufferPointer(),
                                               builder.GetSize(), ad, sizeof ad, nullptr, token.nonce.data(),
                                               key.data());
    token.sealed.resize(static_cast<std::size_t>(sealedBytes));
    out = std::move(token);
    return true;
}

TokenError readTokenPrivate(std::span<const std::uint8_t> plaintext, ConnectTokenPrivate& out)
{
    if (plaintext.size() < 8 || plaintext.size() > kMaxPrivateBytes)
    {
        return TokenError::Malformed;
    }
    std::vector<std::uint64_t> storage;
    const std::span<const std::uint8_t> bytes = aligned(plaintext, storage);
    flatbuffers::Verifier verifier(bytes.data(), bytes.size(), verifierOptions());
    if (!verifier.VerifyBuffer<wire::TokenPrivate>(nullptr))
    {
        return TokenError::Malformed;
    }
    const auto* in = flatbuffers::GetRoot<wire::TokenPrivate>(bytes.data());
    ConnectTokenPrivate token;
    token.clientId = in->client_id();
    token.timeoutSeconds = in->timeout_seconds();
    if (token.clientId == 0 || token.timeoutSeconds == 0 || token.timeoutSeconds > kMaxTokenTimeoutSeconds ||
        !readNames(in->rooms(), kMaxTokenRooms, kMaxRoomNameBytes, false, token.rooms) ||
        !readNames(in->server_addresses(), kMaxTokenAddresses, kMaxTokenAddressBytes, true,
                   token.serverAddresses) ||
        !readKey(in->client_to_server_key(), token.clientToServerKey) ||
        !readKey(in->server_to_client_key(), token.serverToClientKey) ||
        (in->user_data() != nullptr && in->user_data()->size() > kMaxTokenUserDataBytes))
    {
        return TokenError::Malformed;
    }
    if (in->user_data() != nullptr)
    {
        token.userData.assign(in->user_data()->begin(), in->user_data()->end());
    }
    out = std::move(token);
    return TokenError::None;
}

TokenError openConnectToken(const TokenKey& key, std::uint64_t expireTime,
                            std::span<const std::uint8_t> nonce, std::span<const std::uint8_t> sealed,
                            std::uint64_t nowUnixSeconds, ConnectTokenPrivate& out)
{
    ensureSodium();
    if (nonce.size() != kTokenNonceBytes || sealed.size() <= kTagBytes ||
        sealed.size() > kMaxSealedTokenBytes)
    {
        return TokenError::Malformed;
    }
    if (expireTime < nowUnixSeconds)
    {
        return TokenError::Expired;
    }
    std::uint8_t ad[kAdditionalBytes];
    additionalOf(expireTime, ad);
    std::array<std::uint8_t, kMaxSealedTokenBytes> plain{};
    unsigned long long plainBytes = 0;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain.data(), &plainBytes, nullptr, sealed.data(),
                                                   sealed.size(), ad, sizeof ad, nonce.data(),
                                                   key.data()) != 0)
    {
        return TokenError::Forged;
    }
    const TokenError read = readTokenPrivate({plain.data(), static_cast<std::size_t>(plainBytes)}, out);
    sodium_memzero(plain.data(), plain.size()); // the session keys
    return read;
}

std::array<std::uint8_t, 16> tokenId(std::span<const std::uint8_t> sealed)
{
    std::array<std::uint8_t, 16> id{};
    const std::size_t n = std::min(sealed.size(), id.size());
    std::copy(sealed.end() - static_cast<std::ptrdiff_t>(n), sealed.end(), id.begin());
    return id;
}

std::vector<std::uint8_t> encodeConnectTokenFile(const ConnectToken& token)
{
    flatbuffers::FlatBufferBuilder builder(2048);
    const auto nonce = builder.CreateVector(token.nonce.data(), token.nonce.size());
    const auto sealed = builder.CreateVector(token.sealed.data(), token.sealed.size());
    const auto addresses = writeNames(builder, token.serverAddresses);
    const auto c2s = builder.CreateVector(token.clientToServerKey.data(), token.clientToServerKey.size());
    const auto s2c = builder.CreateVector(token.serverToClientKey.data(), token.serverToClientKey.size());
    wire::FinishConnectTokenBuffer(builder,
                                   wire::CreateConnectToken(builder, kProtocolVersion, token.clientId,
                                                            token.createTime, token.expireTime, nonce, sealed,
                                                            addresses, c2s, s2c, token.timeoutSeconds));
    return {builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize()};
}

bool decodeConnectTokenFile(std::span<const std::uint8_t> bytes, ConnectToken& out, std::string& error)
{
    if (bytes.size() < 16 || bytes.size() > 4096)
    {
        error = "not a connect token (size " + std::to_string(bytes.size()) + " bytes)";
        return false;
    }
    std::vector<std::uint64_t> storage;
    const std::span<const std::uint8_t> data = aligned(bytes, storage);
    if (!wire::ConnectTokenBufferHasIdentifier(data.data()))
    {
        error = "not a connect token (no \"PLTK\" identifier)";
        return false;
    }
    flatbuffers::Verifier verifier(data.data(), data.size(), verifierOptions());
    if (!wire::VerifyConnectTokenBuffer(verifier))
    {
        error = "corrupt connect token (FlatBuffers verification failed)";
        return false;
    }
    const wire::ConnectToken* in = wire::GetConnectToken(data.data());
    if (in->version() != kProtocolVersion)
    {
        error = "connect token made for protocol version " + std::to_string(in->version()) + ", not " +
                std::to_string(kProtocolVersion);
        return false;
    }
    ConnectToken token;
    token.clientId = in->client_id();
    token.createTime = in->create_time();
    token.expireTime = in->expire_time();
    token.timeoutSeconds = in->timeout_seconds();
    if (in->nonce() == nullptr || in->nonce()->size() != token.nonce.size() || in->sealed() == nullptr ||
        in->sealed()->size() <= kTagBytes || in->sealed()->size() > kMaxSealedTokenBytes)
    {
        error = "connect token: nonce or sealed part of the wrong size";
        return false;
    }
    std::copy(in->nonce()->begin(), in->nonce()->end(), token.nonce.begin());
    token.sealed.assign(in->sealed()->begin(), in->sealed()->end());
    if (!readNames(in->server_addresses(), kMaxTokenAddresses, kMaxTokenAddressBytes, true,
                   token.serverAddresses) ||
        !readKey(in->client_to_server_key(), token.clientToServerKey) ||
        !readKey(in->server_to_client_key(), token.serverToClientKey) || token.clientId == 0 ||
        token.expireTime < token.createTime || token.timeoutSeconds == 0 ||
        token.timeoutSeconds > kMaxTokenTimeoutSeconds)
    {
        error = "connect token: a field is out of range (client id, times, addresses, keys or time-out)";
        return false;
    }
    out = std::move(token);
    return true;
}

bool fromHex(std::string_view hex, std::vector<std::uint8_t>& out)
{
    out.clear();
    if (hex.size() % 2 != 0)
    {
        return false;
    }
    const auto digit = [](char c) -> int
    {
        if (c >= '0' && c <= '9')
        {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f')
        {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F')
        {
            return c - 'A' + 10;
        }
        return -1;
    };
    for (std::size_t i = 0; i < hex.size(); i += 2)
    {
        const int high = digit(hex[i]);
        const int low = digit(hex[i + 1]);
        if (high < 0 || low < 0)
        {
            out.clear();
            return false;
        }
        out.push_back(static_cast<std::uint8_t>(high * 16 + low));
    }
    return true;
}

bool parseTokenKeyHex(std::string_view hex, TokenKey& out, std::string& error)
{
    while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r' || hex.back() == ' '))
    {
        hex.remove_suffix(1); // a key read from a file
    }
    std::vector<std::uint8_t> bytes;
    if (hex.size() != 2 * kTokenKeyBytes || !fromHex(hex, bytes))
    {
        error = "a token key is 64 hex digits (32 bytes; polytope-token keygen makes one), got " +
                std::to_string(hex.size()) + " characters";
        return false;
    }
    std::copy(bytes.begin(), bytes.end(), out.begin());
    return true;
}

std::string toHex(std::span<const std::uint8_t> bytes)
{
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const std::uint8_t b : bytes)
    {
        out.push_back(kDigits[b >> 4]);
        out.push_back(kDigits[b & 15]);
    }
    return out;
}

} // namespace polytope::protocol

// Polytope wire protocol: connect tokens (version 4), after netcode.io's.
//
// A game's backend, which has authenticated a player its own way, makes a token with a key it shares with
// the servers. The token's private part (TokenPrivate in schema/token.fbs: client id, rooms, server
// addresses, the session's two keys, time-out, user data) is sealed with XChaCha20-Poly1305 under that key,
// with the protocol id, version and expire time as additional data, so that nobody without the key can
// read it, change it or extend its life. The client receives the whole token (the sealed part plus the
// public fields and the two keys) over the backend's HTTPS, shows the server the sealed part, expire time
// and nonce (a TokenCredential), and keeps the keys to seal its session (seal.h).
//
// Every reader here takes untrusted bytes: sizes are checked first, FlatBuffers are verified, every field is
// range-checked, and a failure comes back as a reason, never an exception or an assert.
#pragma once

#include "polytope/protocol/seal.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::protocol
{

inline constexpr std::size_t kTokenKeyBytes = 32;
using TokenKey = std::array<std::uint8_t, kTokenKeyBytes>;
inline constexpr std::size_t kTokenNonceBytes = kTokenCredentialNonceBytes;
inline constexpr std::size_t kMaxTokenRooms = 8;
inline constexpr std::size_t kMaxTokenAddresses = 8;
inline constexpr std::size_t kMaxTokenAddressBytes = 64;
inline constexpr std::size_t kMaxTokenUserDataBytes = 128;
inline constexpr std::size_t kMaxSealedTokenBytes = kMaxTokenCredentialSealedBytes;
inline constexpr std::uint32_t kMaxTokenTimeoutSeconds = 3600;
/// The longest life a token may be made with (a day); short lives (seconds to minutes) are the norm.
inline constexpr std::uint64_t kMaxTokenLifetimeSeconds = 86400;

/// The part of a token only the server reads.
struct ConnectTokenPrivate
{
    std::uint64_t clientId = 0;               ///< >= 1
    std::vector<std::string> rooms;           ///< rooms the client may join; empty: any
    std::vector<std::string> serverAddresses; ///< "HOST:PORT" it is good for, 1 .. kMaxTokenAddresses
    SessionKey clientToServerKey{};
    SessionKey serverToClientKey{};
    std::uint32_t timeoutSeconds = 10;  ///< 1 .. kMaxTokenTimeoutSeconds
    std::vector<std::uint8_t> userData; ///< opaque, at most kMaxTokenUserDataBytes
};

/// A whole token, as a backend hands it to one client (polytope-token writes it as a file).
struct ConnectToken
{
    std::uint64_t clientId = 0;
    std::uint64_t createTime = 0; ///< Unix seconds
    std::uint64_t expireTime = 0; ///< Unix seconds
    std::array<std::uint8_t, kTokenNonceBytes> nonce{};
    std::vector<std::uint8_t> sealed; ///< the private part, encrypted (17 .. kMaxSealedTokenBytes)
    std::vector<std::string> serverAddresses;
    SessionKey clientToServerKey{};
    SessionKey serverToClientKey{};
    std::uint32_t timeoutSeconds = 10;
};

/// What a backend asks for.
struct TokenRequest
{
    std::uint64_t clientId = 0;
    std::vector<std::string> rooms;
    std::vector<std::string> serverAddresses;
    std::uint64_t lifetimeSeconds = 30; ///< 1 .. kMaxTokenLifetimeSeconds
    std::uint32_t timeoutSeconds = 10;
    std::vector<std::uint8_t> userData;
};

/// Makes a token: fresh random session keys and nonce, the private part sealed under `key`. False with an
/// error naming the field when the request is out of range.
bool makeConnectToken(const TokenKey& key, const TokenRequest& request, std::uint64_t nowUnixSeconds,
                      ConnectToken& out, std::string& error);

enum class TokenError : std::uint8_t
{
    None = 0,
    Malformed, ///< wrong sizes, or the private part does not verify or has a field out of range
    Forged,    ///< does not open with the key: another key, tampered, or another expire time
    Expired,   ///< expireTime is before now
};

/// The server's check of a TokenCredential: sizes, expiry against `nowUnixSeconds`, decryption, then
/// readTokenPrivate.
TokenError openConnectToken(const TokenKey& key, std::uint64_t expireTime,
                            std::span<const std::uint8_t> nonce, std::span<const std::uint8_t> sealed,
                            std::uint64_t nowUnixSeconds, ConnectTokenPrivate& out);

/// Verifies and range-checks a decrypted private part (any alignment).
TokenError readTokenPrivate(std::span<const std::uint8_t> plaintext, ConnectTokenPrivate& out);

/// A token's identity for the server's used-token table: the tag of its sealed part (its last 16 bytes),
/// which no two tokens share.
std::array<std::uint8_t, 16> tokenId(std::span<const std::uint8_t> sealed);

/// The token file (ConnectToken in schema/token.fbs, file identifier "PLTK").
std::vector<std::uint8_t> encodeConnectTokenFile(const ConnectToken& token);
/// Verifies (any alignment) and range-checks a token file; false with an error.
bool decodeConnectTokenFile(std::span<const std::uint8_t> bytes, ConnectToken& out, std::string& error);

/// 64 hex digits to a key; false with a reason for anything else.
bool parseTokenKeyHex(std::string_view hex, TokenKey& out, std::string& error);
/// Lower-case hex of any bytes.
std::string toHex(std::span<const std::uint8_t> bytes);
/// Hex to bytes (even length, hex digits only); false otherwise.
bool fromHex(std::string_view hex, std::vector<std::uint8_t>& out);

} // namespace polytope::protocol

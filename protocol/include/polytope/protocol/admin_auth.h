// Polytope wire protocol: authentication of admin commands (STANDARD.md, "Admin commands").
//
// The admin key is a secret string shared by the server and its operators (polytope-server --admin-key or
// POLYTOPE_ADMIN_KEY). An AdminRequest carries an AdminCommand's bytes and their BLAKE2b-256 hash keyed with
// K = BLAKE2b-256(admin key); the server recomputes it and compares in constant time. The command's time
// and nonce (checked by the server) stop replays.
#pragma once

#include "polytope/protocol/constants.h"

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace polytope::protocol
{

using AdminMac = std::array<std::uint8_t, kAdminMacBytes>;
using AdminMacKey = std::array<std::uint8_t, 32>;

/// K from the admin key string.
AdminMacKey deriveAdminMacKey(std::string_view adminKey);
/// The keyed hash of an AdminCommand's bytes.
AdminMac adminMac(const AdminMacKey& key, std::span<const std::uint8_t> command);
/// Constant-time check of a received mac (any size; wrong sizes fail).
bool verifyAdminMac(const AdminMacKey& key, std::span<const std::uint8_t> command,
                    std::span<const std::uint8_t> mac);
/// A random 64-bit nonce (libsodium's generator).
std::uint64_t randomAdminNonce();

/// The keyed hash of an AdminReply: BLAKE2b-256 keyed with K of "PLTR" || nonce (u64 little-endian) ||
/// ok (1 byte: 0 or 1) || the message's bytes (as sent, after any cut to kMaxAdminMessageBytes). An operator
/// trusts a reply only when it verifies: anyone on the path could forge an unauthenticated one.
AdminMac adminReplyMac(const AdminMacKey& key, std::uint64_t nonce, bool ok, std::string_view message);
bool verifyAdminReplyMac(const AdminMacKey& key, std::uint64_t nonce, bool ok, std::string_view message,
                         std::span<const std::uint8_t> mac);

} // namespace polytope::protocol

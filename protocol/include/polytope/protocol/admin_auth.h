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
bool verifyAdminMac(const AdminMacKey& key, std::span<const std::uint8_t> command, std::span<const std::uint8_t> mac);
/// A random 64-bit nonce (libsodium's generator).
std::uint64_t randomAdminNonce();

} // namespace polytope::protocol

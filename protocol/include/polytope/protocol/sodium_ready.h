// Polytope: libsodium's one-time start-up, shared by everything that uses it (tokens, sealed sessions,
// cookies, admin and checkpoint hashes).
#pragma once

namespace polytope::protocol
{

/// Calls sodium_init() (idempotent and thread-safe). A libsodium that cannot start leaves nothing secure
/// to do: that is a platform failure, not input, and the process aborts.
void ensureSodium();

} // namespace polytope::protocol

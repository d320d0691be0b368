// polytope-server: stateless connect challenges (after netcode.io's challenge tokens).
//
// A ConnectRequest costs the server nothing: it answers with a Challenge carrying a cookie and forgets the
// request. The cookie is a random salt, a coarse timestamp and a keyed hash (libsodium's crypto_generichash,
// BLAKE2b, with a random per-process key) of both and the requester's address and port. The salt becomes the
// session's: with a connect token, the session keys are derived from the token's keys and it (seal.h), so a
// session's keys are new even when a token is shown again, and a restarted server (new cookie key) cannot be
// made to accept an old salt. Only a peer that
// receives at that address can echo it in a ChallengeResponse, and only within cookieLifetimeSeconds; the
// server then checks the hash and opens a session. Forged cookies, cookies issued to another address and
// expired ones are refused and counted, and a spoofed request gets its (small) challenge sent to the
// spoofed address, never anything larger than the padded request.
#pragma once

#include "polytope/protocol/address.h"
#include "polytope/protocol/constants.h"

#include <array>
#include <cstdint>
#include <span>

namespace polytope::server
{

/// Why a cookie was refused.
enum class CookieCheck : std::uint8_t
{
    Valid = 0,
    BadSize, ///< not kCookieBytes long
    Forged,  ///< the hash does not match: forged, tampered, or issued to another address
    Expired, ///< issued more than the lifetime ago (or in the future)
};

const char* cookieCheckName(CookieCheck check);

class ConnectCookies
{
  public:
    using Cookie = std::array<std::uint8_t, protocol::kCookieBytes>;
    using Key = std::array<std::uint8_t, 32>;

    /// A fresh random key. `lifetimeSeconds` > 0: how long a cookie stays valid (granularity one second).
    explicit ConnectCookies(double lifetimeSeconds = 5.0);
    /// A given key (tests).
    ConnectCookies(const Key& key, double lifetimeSeconds);

    /// The cookie for `address` at time `now` (seconds, the server's clock, >= 0).
    Cookie issue(const protocol::Address& address, double now) const;
    /// Checks an echoed cookie from `address` at time `now`.
    CookieCheck verify(const protocol::Address& address, std::span<const std::uint8_t> cookie,
                       double now) const;

  private:
    void mac(const protocol::Address& address, std::span<const std::uint8_t> saltAndStamp,
             std::uint8_t* out) const;

    Key m_key{};
    double m_lifetimeSeconds;
};

} // namespace polytope::server

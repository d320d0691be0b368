#include "polytope/server/connect_cookie.h"

#include "polytope/protocol/sodium_ready.h"

#include <sodium.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace polytope::server
{
namespace
{
// Layout: salt (kCookieSaltBytes, random) | stamp (4, little-endian seconds) | keyed hash (16).
constexpr std::size_t kSaltBytes = protocol::kCookieSaltBytes;
constexpr std::size_t kStampBytes = 4;
constexpr std::size_t kMacBytes = protocol::kCookieBytes - kSaltBytes - kStampBytes;
static_assert(kMacBytes >= crypto_generichash_BYTES_MIN, "the cookie's hash is too short for BLAKE2b");

std::uint32_t stampOf(double now)
{
    return static_cast<std::uint32_t>(std::floor(std::fmax(0.0, now)));
}
} // namespace

const char* cookieCheckName(CookieCheck check)
{
    switch (check)
    {
    case CookieCheck::Valid:
        return "valid";
    case CookieCheck::BadSize:
        return "bad_size";
    case CookieCheck::Forged:
        return "forged";
    case CookieCheck::Expired:
        return "expired";
    }
    return "unknown";
}

ConnectCookies::ConnectCookies(double lifetimeSeconds) : m_lifetimeSeconds(lifetimeSeconds)
{
    protocol::ensureSodium();
    crypto_generichash_keygen(m_key.data());
}

ConnectCookies::ConnectCookies(const Key& key, double lifetimeSeconds)
    : m_key(key), m_lifetimeSeconds(lifetimeSeconds)
{
    protocol::ensureSodium();
}

void ConnectCookies::mac(const protocol::Address& address, std::span<const std::uint8_t> saltAndStamp,
                         std::uint8_t* out) const
{
    // Hashed: family, the 16 address bytes, port (little-endian), then salt and stamp as they are in the
    // cookie.
    std::uint8_t message[1 + 16 + 2 + kSaltBytes + kStampBytes];
    message[0] = static_cast<std::uint8_t>(address.family);
    std::memcpy(message + 1, address.bytes.data(), 16);
    message[17] = static_cast<std::uint8_t>(address.port & 0xFF);
    message[18] = static_cast<std::uint8_t>(address.port >> 8);
    std::memcpy(message + 19, saltAndStamp.data(), kSaltBytes + kStampBytes);
    crypto_generichash(out, kMacBytes, message, sizeof message, m_key.data(), m_key.size());
}

ConnectCookies::Cookie ConnectCookies::issue(const protocol::Address& address, double now) const
{
    Cookie cookie{};
    randombytes_buf(cookie.data(), kSaltBytes); // the session salt: fresh for every challenge
    const std::uint32_t stamp = stampOf(now);
    for (std::size_t i = 0; i < kStampBytes; ++i)
    {
        cookie[kSaltBytes + i] = static_cast<std::uint8_t>(stamp >> (8 * i));
    }
    mac(address, {cookie.data(), kSaltBytes + kStampBytes}, cookie.data() + kSaltBytes + kStampBytes);
    return cookie;
}

CookieCheck ConnectCookies::verify(const protocol::Address& address, std::span<const std::uint8_t> cookie,
                                   double now) const
{
    if (cookie.size() != protocol::kCookieBytes)
    {
        return CookieCheck::BadSize;
    }
    std::uint32_t stamp = 0;
    for (std::size_t i = 0; i < kStampBytes; ++i)
    {
        stamp |= static_cast<std::uint32_t>(cookie[kSaltBytes + i]) << (8 * i);
    }
    std::uint8_t expected[kMacBytes];
    mac(address, cookie.subspan(0, kSaltBytes + kStampBytes), expected);
    if (sodium_memcmp(expected, cookie.data() + kSaltBytes + kStampBytes, kMacBytes) != 0)
    {
        return CookieCheck::Forged;
    }
    const std::uint32_t current = stampOf(now);
    if (stamp > current || static_cast<double>(current - stamp) > m_lifetimeSeconds)
    {
        return CookieCheck::Expired;
    }
    return CookieCheck::Valid;
}

} // namespace polytope::server

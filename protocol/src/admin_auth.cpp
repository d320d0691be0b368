#include "polytope/protocol/admin_auth.h"

#include <sodium.h>

namespace polytope::protocol
{
namespace
{
bool sodiumReady()
{
    static const bool ready = sodium_init() >= 0;
    return ready;
}
} // namespace

AdminMacKey deriveAdminMacKey(std::string_view adminKey)
{
    AdminMacKey key{};
    if (sodiumReady())
    {
        crypto_generichash(key.data(), key.size(), reinterpret_cast<const unsigned char*>(adminKey.data()),
                           adminKey.size(), nullptr, 0);
    }
    return key;
}

AdminMac adminMac(const AdminMacKey& key, std::span<const std::uint8_t> command)
{
    AdminMac mac{};
    if (sodiumReady())
    {
        crypto_generichash(mac.data(), mac.size(), command.data(), command.size(), key.data(), key.size());
    }
    return mac;
}

bool verifyAdminMac(const AdminMacKey& key, std::span<const std::uint8_t> command, std::span<const std::uint8_t> mac)
{
    if (mac.size() != kAdminMacBytes || !sodiumReady())
    {
        return false;
    }
    const AdminMac expected = adminMac(key, command);
    return sodium_memcmp(expected.data(), mac.data(), expected.size()) == 0;
}

std::uint64_t randomAdminNonce()
{
    std::uint64_t nonce = 0;
    if (sodiumReady())
    {
        randombytes_buf(&nonce, sizeof nonce);
    }
    return nonce;
}

} // namespace polytope::protocol

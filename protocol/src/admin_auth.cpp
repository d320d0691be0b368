#include "polytope/protocol/admin_auth.h"

#include "polytope/protocol/sodium_ready.h"

#include <sodium.h>

#include <cstring>

namespace polytope::protocol
{
namespace
{
bool sodiumReady()
{
    ensureSodium(); // aborts when libsodium cannot start
    return true;
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

bool verifyAdminMac(const AdminMacKey& key, std::span<const std::uint8_t> command,
                    std::span<const std::uint8_t> mac)
{
    if (mac.size() != kAdminMacBytes || !sodiumReady())
    {
        return false;
    }
    const AdminMac expected = adminMac(key, command);
    return sodium_memcmp(expected.data(), mac.data(), expected.size()) == 0;
}

AdminMac adminReplyMac(const AdminMacKey& key, std::uint64_t nonce, bool ok, std::string_view message)
{
    // "PLTR" || nonce (u64, little-endian) || ok (one byte) || the message's bytes: a reply's mac can never
    // be a request's (those hash an AdminCommand FlatBuffer, which starts with its offset, not "PLTR").
    AdminMac mac{};
    sodiumReady();
    crypto_generichash_state state;
    crypto_generichash_init(&state, key.data(), key.size(), mac.size());
    const std::uint8_t tag[4] = {'P', 'L', 'T', 'R'};
    crypto_generichash_update(&state, tag, sizeof(tag));
    std::uint8_t fields[9];
    for (int i = 0; i < 8; ++i)
    {
        fields[i] = static_cast<std::uint8_t>(nonce >> (8 * i));
    }
    fields[8] = ok ? 1 : 0;
    crypto_generichash_update(&state, fields, sizeof(fields));
    crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(message.data()), message.size());
    crypto_generichash_final(&state, mac.data(), mac.size());
    return mac;
}

bool verifyAdminReplyMac(const AdminMacKey& key, std::uint64_t nonce, bool ok, std::string_view message,
                         std::span<const std::uint8_t> mac)
{
    if (mac.size() != kAdminMacBytes)
    {
        return false;
    }
    const AdminMac expected = adminReplyMac(key, nonce, ok, message);
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

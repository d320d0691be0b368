#include "polytope/protocol/seal.h"

#include "polytope/protocol/sodium_ready.h"

#include <sodium.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace polytope::protocol
{
namespace
{
static_assert(crypto_aead_chacha20poly1305_IETF_KEYBYTES == kSessionKeyBytes);
static_assert(crypto_aead_chacha20poly1305_IETF_ABYTES == kSealTagBytes);
static_assert(crypto_aead_chacha20poly1305_IETF_NPUBBYTES == 12);

constexpr std::size_t kAdditionalBytes = kSealedHeaderBytes + 2;

void put64(std::uint8_t* out, std::uint64_t value)
{
    for (int i = 0; i < 8; ++i)
    {
        out[i] = static_cast<std::uint8_t>(value >> (8 * i));
    }
}

std::uint64_t get64(const std::uint8_t* in)
{
    std::uint64_t value = 0;
    for (int i = 0; i < 8; ++i)
    {
        value |= static_cast<std::uint64_t>(in[i]) << (8 * i);
    }
    return value;
}

void nonceOf(std::uint64_t sequence, std::uint8_t (&nonce)[12])
{
    std::memset(nonce, 0, 4);
    put64(nonce + 4, sequence);
}

void additionalOf(const std::uint8_t* header, std::uint8_t (&ad)[kAdditionalBytes])
{
    std::memcpy(ad, header, kSealedHeaderBytes);
    ad[kSealedHeaderBytes] = static_cast<std::uint8_t>(kProtocolVersion & 0xFF);
    ad[kSealedHeaderBytes + 1] = static_cast<std::uint8_t>(kProtocolVersion >> 8);
}

SessionKey derive(const SessionKey& key, const char* label,
                  std::span<const std::uint8_t, kSessionSaltBytes> salt)
{
    const std::size_t labelBytes = std::strlen(label);
    std::uint8_t message[32 + kSessionSaltBytes];
    std::memcpy(message, label, labelBytes);
    std::memcpy(message + labelBytes, salt.data(), salt.size());
    SessionKey out{};
    crypto_generichash(out.data(), out.size(), message, labelBytes + salt.size(), key.data(), key.size());
    return out;
}
} // namespace

bool isSealed(std::span<const std::uint8_t> datagram)
{
    return datagram.size() >= kSealOverheadBytes &&
           std::equal(kSealedMagic.begin(), kSealedMagic.end(), datagram.begin());
}

SessionKeys deriveSessionKeys(const SessionKey& clientToServer, const SessionKey& serverToClient,
                              std::span<const std::uint8_t, kSessionSaltBytes> salt, bool forServer)
{
    ensureSodium();
    const SessionKey c2s = derive(clientToServer, "polytope c2s v4", salt);
    const SessionKey s2c = derive(serverToClient, "polytope s2c v4", salt);
    return forServer ? SessionKeys{s2c, c2s} : SessionKeys{c2s, s2c};
}

SealedChannel::SealedChannel(const SessionKeys& keys)
    : m_keys(keys), m_active(true), m_sealed(kMaxDatagramBytes / 8 + 1), m_opened(kMaxDatagramBytes / 8 + 1)
{
    ensureSodium();
}

std::span<const std::uint8_t> SealedChannel::seal(std::span<const std::uint8_t> plaintext)
{
    if (!m_active || plaintext.empty() || plaintext.size() > kMaxSealedPlaintextBytes)
    {
        return {};
    }
    auto* out = reinterpret_cast<std::uint8_t*>(m_sealed.data());
    const std::uint64_t sequence = m_sendSequence++;
    std::memcpy(out, kSealedMagic.data(), kSealedMagic.size());
    put64(out + 4, sequence);
    std::uint8_t nonce[12];
    nonceOf(sequence, nonce);
    std::uint8_t ad[kAdditionalBytes];
    additionalOf(out, ad);
    unsigned long long cipherBytes = 0;
    crypto_aead_chacha20poly1305_ietf_encrypt(out + kSealedHeaderBytes, &cipherBytes, plaintext.data(),
                                              plaintext.size(), ad, sizeof ad, nullptr, nonce,
                                              m_keys.send.data());
    return {out, kSealedHeaderBytes + static_cast<std::size_t>(cipherBytes)};
}

OpenError SealedChannel::open(std::span<const std::uint8_t> datagram,
                              std::span<const std::uint8_t>& plaintext)
{
    plaintext = {};
    if (!m_active || !isSealed(datagram))
    {
        return OpenError::NotSealed;
    }
    if (datagram.size() > kMaxDatagramBytes)
    {
        return OpenError::TooLarge;
    }
    const std::uint64_t sequence = get64(datagram.data() + 4);
    if (!m_window.isFresh(sequence))
    {
        return OpenError::Replayed;
    }
    std::uint8_t nonce[12];
    nonceOf(sequence, nonce);
    std::uint8_t ad[kAdditionalBytes];
    additionalOf(datagram.data(), ad);
    auto* out = reinterpret_cast<std::uint8_t*>(m_opened.data());
    unsigned long long plainBytes = 0;
    if (crypto_aead_chacha20poly1305_ietf_decrypt(
            out, &plainBytes, nullptr, datagram.data() + kSealedHeaderBytes,
            datagram.size() - kSealedHeaderBytes, ad, sizeof ad, nonce, m_keys.receive.data()) != 0)
    {
        return OpenError::Forged;
    }
    m_window.record(sequence); // only now: a forged datagram must not move the window
    plaintext = {out, static_cast<std::size_t>(plainBytes)};
    return OpenError::None;
}

} // namespace polytope::protocol

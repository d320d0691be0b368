#include "polytope/server/connect_gate.h"

#include "polytope/protocol/sodium_ready.h"

#include <sodium.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

namespace polytope::server
{
namespace wire = protocol::wire;

bool isAnyAddress(std::string_view publicAddress)
{
    return publicAddress == "any" || publicAddress == "*";
}

bool isWildcardAddress(std::string_view bindAddress)
{
    return bindAddress == "0.0.0.0" || bindAddress == "::" || bindAddress == "[::]";
}

bool validateSecurityConfig(const SecurityConfig& config, std::string& error)
{
    if (config.tokenKey && config.publicAddresses.empty() && !config.bindAddress.empty() &&
        (isWildcardAddress(config.bindAddress) || config.listenPort == 0))
    {
        // A token names the server it is for. Bound to every address or to a port the kernel picks, this
        // server cannot tell which tokens name it, and taking any host on its port would let one token open
        // a session on every server of a fleet.
        error =
            "--public-address: the server is bound to " + config.bindAddress.substr(0, 64) + ":" +
            std::to_string(config.listenPort) +
            " and cannot know its public address; name it as tokens name it (--public-address HOST:PORT), "
            "or accept tokens for any address with --public-address any";
        return false;
    }

    if (!config.insecure && !config.tokenKey)
    {
        error = "no token key: set --token-key (or POLYTOPE_TOKEN_KEY), or run with --insecure for local "
                "development";
        return false;
    }
    const auto positive = [&](double value, const char* name)
    {
        if (!(std::isfinite(value) && value > 0.0))
        {
            error = std::string(name) + " must be positive";
            return false;
        }
        return true;
    };
    if (!positive(config.attemptsPerSecondPerIp, "attemptsPerSecondPerIp") ||
        !positive(config.attemptBurstPerIp, "attemptBurstPerIp") ||
        !positive(config.attemptsPerSecond, "attemptsPerSecond") ||
        !positive(config.attemptBurst, "attemptBurst"))
    {
        return false;
    }
    if (config.maxTrackedIps == 0 || config.maxUsedTokens == 0)
    {
        error = "maxTrackedIps and maxUsedTokens must be at least 1";
        return false;
    }
    for (const std::string& address : config.publicAddresses)
    {
        if (isAnyAddress(address))
        {
            continue;
        }
        if (address.empty() || address.size() > 64 || address.find(':') == std::string::npos)
        {
            error = "public address '" + address + "' is not HOST:PORT";
            return false;
        }
    }
    return true;
}

ConnectGate::ConnectGate(const SecurityConfig& config) : m_config(config)
{
    m_globalConnect.tokens = m_config.attemptBurst;
    m_globalAdmin.tokens = m_config.attemptBurst;
    const std::size_t sets = std::max<std::size_t>(1, (m_config.maxTrackedIps + kWays - 1) / kWays);
    m_ips.resize(sets * kWays);
    protocol::ensureSodium();
    randombytes_buf(m_hashKey.data(), m_hashKey.size());
}

ConnectGate::IpEntry& ConnectGate::entryOf(const IpKey& ip, double now)
{
    static_assert(crypto_shorthash_KEYBYTES == 16 && crypto_shorthash_BYTES == 8);
    std::array<std::uint8_t, crypto_shorthash_BYTES> hash{};
    crypto_shorthash(hash.data(), ip.data(), ip.size(), m_hashKey.data());
    std::uint64_t index = 0;
    std::memcpy(&index, hash.data(), sizeof(index));
    IpEntry* set = &m_ips[(index % (m_ips.size() / kWays)) * kWays];
    IpEntry* victim = set;
    for (std::size_t way = 0; way < kWays; ++way)
    {
        IpEntry& entry = set[way];
        if (entry.used && entry.ip == ip)
        {
            entry.lastSeen = now;
            return entry;
        }
        // An empty way first, else the one seen longest ago.
        if (victim->used && (!entry.used || entry.lastSeen < victim->lastSeen))
        {
            victim = &entry;
        }
    }
    if (victim->used)
    {
        ++m_evictedIps;
    }
    else
    {
        ++m_trackedIps;
    }
    *victim = IpEntry{ip, Bucket{m_config.attemptBurstPerIp, now}, now, true};
    return *victim;
}

ConnectGate::IpKey ConnectGate::ipOf(const protocol::Address& address)
{
    IpKey key{};
    key[0] = static_cast<std::uint8_t>(address.family);
    std::copy(address.bytes.begin(), address.bytes.end(), key.begin() + 1);
    return key;
}

bool ConnectGate::take(Bucket& bucket, double now, double rate, double burst)
{
    if (now > bucket.time)
    {
        bucket.tokens = std::min(burst, bucket.tokens + (now - bucket.time) * rate);
        bucket.time = now;
    }
    if (bucket.tokens < 1.0)
    {
        return false;
    }
    bucket.tokens -= 1.0;
    return true;
}

bool ConnectGate::admit(const protocol::Address& from, double now, AdmitKind kind)
{
    IpEntry& entry = entryOf(ipOf(from), now);
    // The source's own limit first, so that one flooding IP does not use up the server's allowance.
    if (!take(entry.bucket, now, m_config.attemptsPerSecondPerIp, m_config.attemptBurstPerIp))
    {
        return false;
    }
    switch (kind)
    {
    case AdmitKind::Connect:
        return take(m_globalConnect, now, m_config.attemptsPerSecond, m_config.attemptBurst);
    case AdmitKind::Admin:
        return take(m_globalAdmin, now, m_config.attemptsPerSecond, m_config.attemptBurst);
    case AdmitKind::Response:
        break;
    }
    return true;
}

bool ConnectGate::namesThisServer(const std::vector<std::string>& addresses) const
{
    if (std::any_of(m_config.publicAddresses.begin(), m_config.publicAddresses.end(), isAnyAddress))
    {
        return true;
    }
    if (m_config.publicAddresses.empty() && !m_config.bindAddress.empty() &&
        !isWildcardAddress(m_config.bindAddress))
    {
        // The one address this server is bound to (and the only one it can vouch for).
        const std::string self =
            (m_config.bindAddress.find(':') != std::string::npos ? "[" + m_config.bindAddress + "]"
                                                                 : m_config.bindAddress) +
            ":" + std::to_string(m_config.listenPort);
        return std::find(addresses.begin(), addresses.end(), self) != addresses.end();
    }
    for (const std::string& address : addresses)
    {
        if (!m_config.publicAddresses.empty())
        {
            if (std::find(m_config.publicAddresses.begin(), m_config.publicAddresses.end(), address) !=
                m_config.publicAddresses.end())
            {
                return true;
            }
            continue;
        }
        if (m_config.listenPort == 0)
        {
            return true;
        }
        const std::size_t colon = address.rfind(':');
        unsigned port = 0;
        if (colon != std::string::npos)
        {
            const char* first = address.data() + colon + 1;
            const char* last = address.data() + address.size();
            const auto [end, ec] = std::from_chars(first, last, port);
            if (ec == std::errc() && end == last && port == m_config.listenPort)
            {
                return true;
            }
        }
    }
    return false;
}

TokenCheck ConnectGate::check(const protocol::TokenCredentialFields& credential, std::string_view room,
                              const protocol::Address& from, bool openSession, double wallNow) const
{
    TokenCheck result;
    result.expireTime = credential.expireTime;
    if (!m_config.tokenKey)
    {
        result.reason = protocol::DropReason::BadToken; // no key to open it with (an --insecure server)
        return result;
    }
    const auto now = static_cast<std::uint64_t>(std::max(0.0, std::floor(wallNow)));
    switch (protocol::openConnectToken(*m_config.tokenKey, credential.expireTime, credential.nonce,
                                       credential.sealed, now, result.token))
    {
    case protocol::TokenError::None:
        break;
    case protocol::TokenError::Expired:
        result.reason = protocol::DropReason::TokenExpired;
        return result;
    default:
        result.reason = protocol::DropReason::BadToken;
        return result;
    }
    if (!namesThisServer(result.token.serverAddresses) ||
        (!result.token.rooms.empty() &&
         std::find(result.token.rooms.begin(), result.token.rooms.end(), room) == result.token.rooms.end()))
    {
        result.reason = protocol::DropReason::TokenRefused;
        return result;
    }
    result.id = protocol::tokenId(credential.sealed);
    if (const auto used = m_used.find(result.id); used != m_used.end())
    {
        // The address that opened a session with it may repeat its handshake while that session lives.
        if (!(openSession && used->second.address == from))
        {
            result.reason = protocol::DropReason::TokenReused;
        }
        return result;
    }
    if (m_connectedClients.count(result.token.clientId) != 0)
    {
        result.reason = protocol::DropReason::TokenReused; // that client is connected already
    }
    return result;
}

bool ConnectGate::markUsed(const TokenCheck& accepted, const protocol::Address& from)
{
    if (m_used.count(accepted.id) != 0)
    {
        return true;
    }
    if (m_used.size() >= m_config.maxUsedTokens)
    {
        return false;
    }
    m_used.emplace(accepted.id, Used{from, accepted.expireTime});
    m_connectedClients.insert(accepted.token.clientId);
    return true;
}

void ConnectGate::sessionEnded(std::uint64_t tokenClientId)
{
    if (const auto it = m_connectedClients.find(tokenClientId); it != m_connectedClients.end())
    {
        m_connectedClients.erase(it);
    }
}

void ConnectGate::sweep(double now, double wallNow)
{
    for (IpEntry& entry : m_ips)
    {
        // Idle long enough to have refilled completely: forgetting it changes nothing.
        const double refill = m_config.attemptBurstPerIp / m_config.attemptsPerSecondPerIp;
        if (entry.used && now - entry.bucket.time >= refill)
        {
            entry.used = false;
            --m_trackedIps;
        }
    }
    const auto wall = static_cast<std::uint64_t>(std::max(0.0, std::floor(wallNow)));
    for (auto it = m_used.begin(); it != m_used.end();)
    {
        it = it->second.expireTime < wall ? m_used.erase(it) : std::next(it);
    }
}

} // namespace polytope::server

// polytope-server: who may start a handshake (after netcode.io's server-side checks).
//
// The Server's handshake (handshake.cpp) asks the ConnectGate about every ConnectRequest, ChallengeResponse
// and AdminRequest that does not belong to an open session, before any room sees it:
//   - rate limits: a token bucket per source IP (any port), and server-wide buckets per kind of datagram
//     (connect requests, admin requests), so that a flood costs a bounded amount of work and memory. The
//     per-IP table is allocated once: a set-associative cache indexed by a keyed hash of the IP (SipHash
//     with a random per-process key, so that a sender cannot aim at one set), and a new IP takes the least
//     recently seen entry of its set. A flood from spoofed addresses therefore only evicts other idle
//     sources: a legitimate client always finds room, and an IP that keeps sending keeps its entry.
//     ChallengeResponses are limited per IP only, after their cookie proved the sender receives at its
//     address (connect_cookie.h): a spoofed flood of any kind cannot use up the budget that real clients
//     finish their handshake with;
//   - connect tokens (token.h): the credential must open with the server's token key, be unexpired, name
//     this server's address and the room asked for, and not have opened a session before: a used token is
//     remembered until it expires (bounded too), except that the address it opened its session from may
//     repeat its handshake while that session lives, since its ConnectAccepted can be lost. A client id
//     named by a token has at most one session at a time.
// Everything is in memory: after a restart, tokens used before it could open a session again until they
// expire, but never with the old session keys (the salt in the cookie is new, connect_cookie.h).
#pragma once

#include "polytope/protocol/address.h"
#include "polytope/protocol/packet.h"
#include "polytope/protocol/token.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::server
{

struct SecurityConfig
{
    /// Accept tokenless connects; their sessions are not encrypted. For local development only: the server
    /// logs a warning at start. Tokens are still checked (and their sessions sealed) when a key is set.
    bool insecure = false;
    /// The key shared with the backend that makes tokens. Required unless insecure.
    std::optional<protocol::TokenKey> tokenKey;
    /// "host:port" strings a token must name one of. "any" (or "*"): any address, for servers behind port
    /// mapping that cannot know their own (Agones): give each fleet its own token key then. Empty: the
    /// address the server is bound to, bindAddress:listenPort; validateSecurityConfig refuses tokens with no
    /// public address and a wildcard or port-0 bind, since a token for any host on that port would open a
    /// session (one token, every server of a fleet). In-process servers (no bindAddress) match the port only.
    std::vector<std::string> publicAddresses;
    std::uint16_t listenPort = 0;
    std::string bindAddress;              ///< the UDP socket's address; empty: no socket (in-process servers)
    double attemptsPerSecondPerIp = 32.0; ///< sustained handshake/admin datagrams per source IP
    double attemptBurstPerIp = 128.0;
    double attemptsPerSecond = 4000.0; ///< the same over all sources, for each kind (connects, admin)
    double attemptBurst = 8000.0;
    std::size_t maxTrackedIps = 16384;  ///< entries of the per-IP table (allocated at start, rounded up to 4)
    std::size_t maxUsedTokens = 262144; ///< cap of the used-token table (entries leave when they expire)
};

/// True for "any" and "*": tokens may name any address.
bool isAnyAddress(std::string_view publicAddress);
/// True when `bindAddress` names every address of the machine (0.0.0.0, ::).
bool isWildcardAddress(std::string_view bindAddress);

/// Checks config; false with a message naming the field.
bool validateSecurityConfig(const SecurityConfig& config, std::string& error);

/// A token's verdict: drop `reason`, or accept with the token's contents.
struct TokenCheck
{
    std::optional<protocol::DropReason> reason; ///< empty: accepted
    protocol::ConnectTokenPrivate token;
    std::array<std::uint8_t, 16> id{};
    std::uint64_t expireTime = 0; ///< Unix seconds
};

/// What a datagram asks the gate for; each kind has its own server-wide budget.
enum class AdmitKind : std::uint8_t
{
    Connect,  ///< a ConnectRequest: the per-IP and the server-wide connect budget
    Response, ///< a ChallengeResponse whose cookie checked out: the per-IP budget only
    Admin,    ///< an AdminRequest: the per-IP and the server-wide admin budget
};

class ConnectGate
{
  public:
    explicit ConnectGate(const SecurityConfig& config);

    const SecurityConfig& config() const { return m_config; }

    /// One handshake or admin datagram from `from` at `now` (seconds, monotonic): false when over a limit.
    bool admit(const protocol::Address& from, double now, AdmitKind kind);
    /// Checks a credential for a connect to `room` (the room's real name) from `from`. `openSession`: the
    /// address already has a session (a repeated handshake). `wallNow`: Unix seconds.
    TokenCheck check(const protocol::TokenCredentialFields& credential, std::string_view room,
                     const protocol::Address& from, bool openSession, double wallNow) const;
    /// A session opened with this token: remember it until it expires. False when the table is full.
    bool markUsed(const TokenCheck& accepted, const protocol::Address& from);
    /// The session of that token's client ended.
    void sessionEnded(std::uint64_t tokenClientId);
    /// Forgets expired tokens and idle per-IP buckets; call about once a second.
    void sweep(double now, double wallNow);

    std::size_t trackedIps() const { return m_trackedIps; }
    std::uint64_t evictedIps() const { return m_evictedIps; }
    std::size_t usedTokens() const { return m_used.size(); }

  private:
    struct Bucket
    {
        double tokens = 0.0;
        double time = 0.0;
    };
    struct Used
    {
        protocol::Address address;
        std::uint64_t expireTime = 0;
    };
    using IpKey = std::array<std::uint8_t, 17>;
    struct IpEntry
    {
        IpKey ip{};
        Bucket bucket;
        double lastSeen = 0.0;
        bool used = false;
    };
    static constexpr std::size_t kWays = 4; ///< entries per set of the per-IP table
    static IpKey ipOf(const protocol::Address& address);
    static bool take(Bucket& bucket, double now, double rate, double burst);
    bool namesThisServer(const std::vector<std::string>& addresses) const;
    /// The IP's entry, made (evicting the least recently seen of its set if need be) when it has none.
    IpEntry& entryOf(const IpKey& ip, double now);

    SecurityConfig m_config;
    Bucket m_globalConnect;
    Bucket m_globalAdmin;
    std::vector<IpEntry> m_ips; ///< sets of kWays entries
    std::array<std::uint8_t, 16> m_hashKey{};
    std::size_t m_trackedIps = 0;
    std::uint64_t m_evictedIps = 0;
    std::map<std::array<std::uint8_t, 16>, Used> m_used;
    std::multiset<std::uint64_t> m_connectedClients; ///< token client ids with an open session
};

} // namespace polytope::server

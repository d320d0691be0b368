// Polytope wire protocol: sealed datagrams, the encryption and authentication of a session (version 4).
//
// After the handshake of a token session, every datagram is sealed (STANDARD.md section 11):
//
//   bytes 0..3    "PLTE"
//   bytes 4..11   sequence, u64 little-endian: the sender's datagram counter in this session, from 0
//   bytes 12..    ciphertext of the Packet FlatBuffer (ChaCha20, IETF variant)
//   last 16       Poly1305 tag over the additional data and the ciphertext
//
// The nonce is 4 zero bytes and the sequence (little-endian); the additional data is the 12 header bytes
// and the protocol version (u16 little-endian). Each direction has its own key, derived from the connect
// token's keys and the session salt the server put in its challenge cookie, so (key, nonce) never repeats:
// not within a session (the sequence only grows), not across sessions (a fresh salt each time), not across
// a restart of the server. A receiver keeps a window of the last 256 sequences and refuses any it has seen
// or that is older than the window, and records a sequence only once its datagram has authenticated, so a
// forged datagram cannot move the window.
#pragma once

#include "polytope/protocol/constants.h"
#include "polytope/protocol/sequence_window.h"

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace polytope::protocol
{

inline constexpr std::size_t kSessionKeyBytes = 32;
using SessionKey = std::array<std::uint8_t, kSessionKeyBytes>;
inline constexpr std::size_t kSessionSaltBytes = kCookieSaltBytes;
inline constexpr std::array<std::uint8_t, 4> kSealedMagic{'P', 'L', 'T', 'E'};
inline constexpr std::size_t kSealedHeaderBytes = 12;
inline constexpr std::size_t kSealTagBytes = 16;
inline constexpr std::size_t kSealOverheadBytes = kSealedHeaderBytes + kSealTagBytes;
inline constexpr std::size_t kMaxSealedPlaintextBytes = kMaxDatagramBytes - kSealOverheadBytes;
inline constexpr std::uint64_t kReplayWindowSize = 256;
static_assert(kMaxSealedPlaintextBytes == kMaxPacketBytes, "every Packet must fit in a sealed datagram");

/// True when the datagram is long enough to be sealed and starts with kSealedMagic. (A Packet FlatBuffer
/// starts with its root offset, which is never "PLTE" in a datagram of at most 1200 bytes.)
bool isSealed(std::span<const std::uint8_t> datagram);

/// A session's two keys as one side uses them.
struct SessionKeys
{
    SessionKey send{};
    SessionKey receive{};
};

/// The session keys from a connect token's keys and the salt of the server's challenge cookie:
/// client-to-server = BLAKE2b-256 keyed with clientToServer over "polytope c2s v4" || salt, and
/// server-to-client likewise with serverToClient and "polytope s2c v4". forServer: send = s2c, receive =
/// c2s; otherwise the reverse.
SessionKeys deriveSessionKeys(const SessionKey& clientToServer, const SessionKey& serverToClient,
                              std::span<const std::uint8_t, kSessionSaltBytes> salt, bool forServer);

enum class OpenError : std::uint8_t
{
    None = 0,
    NotSealed, ///< too short, or not "PLTE"
    TooLarge,  ///< more than kMaxDatagramBytes
    Forged,    ///< does not authenticate: forged, tampered, or another key
    Replayed,  ///< its sequence was received already or is too old
};

/// Both directions of one session. Movable; an inactive channel (default) seals and opens nothing.
class SealedChannel
{
  public:
    SealedChannel() = default;
    explicit SealedChannel(const SessionKeys& keys);

    bool active() const { return m_active; }
    /// Seals a Packet (1 .. kMaxSealedPlaintextBytes bytes; otherwise, or when inactive, returns an empty
    /// span) with the next send sequence. The view is valid until the next seal() on this channel.
    std::span<const std::uint8_t> seal(std::span<const std::uint8_t> plaintext);
    /// Opens a received datagram. On None, `plaintext` views an 8-byte-aligned buffer (FlatBuffers'
    /// verifier checks alignment) valid until the next open() on this channel.
    OpenError open(std::span<const std::uint8_t> datagram, std::span<const std::uint8_t>& plaintext);
    std::uint64_t nextSendSequence() const { return m_sendSequence; }

  private:
    SessionKeys m_keys{};
    bool m_active = false;
    std::uint64_t m_sendSequence = 0;
    SequenceWindow<kReplayWindowSize> m_window; ///< replay protection (netcode.io)
    std::vector<std::uint64_t> m_sealed;        ///< 8-byte words: output of seal()
    std::vector<std::uint64_t> m_opened;        ///< 8-byte words: output of open()
};

} // namespace polytope::protocol

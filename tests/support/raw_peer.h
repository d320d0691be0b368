// Tests: a raw-datagram peer of an in-process server (in_process.h). Unlike client::Client it does only what
// the test tells it: it sends PacketWriter datagrams (sealed once it holds session keys), performs the
// handshake by hand (tokenless, or sealed with a connect token) and signs admin commands, and it reads what
// the server sent to its address from its inbox, where each datagram lands, aligned, as it is sent.
#pragma once

#include "polytope/protocol/packet.h"
#include "polytope/protocol/seal.h"
#include "polytope/protocol/token.h"
#include "support/in_process.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace polytope::test
{

class RawPeer
{
  public:
    /// A tokenless peer at `address` of the server on `net`; its name goes into its connect requests.
    RawPeer(InProcessNetwork& net, const protocol::Address& address, std::string name = "tester");
    /// A peer holding a connect token: its handshake carries the token and its session is sealed.
    RawPeer(InProcessNetwork& net, const protocol::Address& address, protocol::ConnectToken token,
            std::string name = "peer");

    const protocol::Address& address() const { return m_address; }

    /// Hands `datagram` (an aligned copy) to the server at once.
    void send(std::span<const std::uint8_t> datagram);
    /// What the server sent to this address, oldest first.
    std::vector<AlignedDatagram>& received() { return m_net.inbox(m_address); }

    /// The handshake into `room` (empty: the server's first). Returns the session, or nothing when the server
    /// did not accept (`denied` then holds a ConnectDenied's reason, if one came).
    ///
    /// Tokenless: the inbox is cleared before each step, and a step the server answers with something other
    /// than a packet fails the test. With a token: the challenge's salt gives the session keys, the accept
    /// must come sealed, and any unexpected answer returns nothing (the security tests probe refusals).
    std::optional<protocol::SessionParameters> join(std::string_view room = {},
                                                    std::uint16_t snapshotRateHz = 0,
                                                    protocol::wire::DenyReason* denied = nullptr,
                                                    bool spectator = false);

    /// `plain` sealed with the session's keys (join() with a token first).
    std::vector<std::uint8_t> seal(std::span<const std::uint8_t> plain);
    /// A ClientInput with the next header sequence, sealed when the session is.
    void sendInputs(std::span<const protocol::InputCommand> inputs);

    /// Sends `command` signed with `key` (its time defaults to the network's wall time, its nonce to the
    /// peer's next). Returns the reply (ok, message), or nothing when none came. Checks that the request has
    /// its minimum size, that the reply is no larger (no amplification) and that it names the nonce.
    std::optional<std::pair<bool, std::string>> sendAdmin(protocol::AdminCommandFields command,
                                                          std::string_view key);

    /// The catalogue entries received so far (the latest per id).
    std::map<std::uint32_t, protocol::CatalogueEntry> catalogue();

    /// The header sequence of the last ClientInput sent; sendInputs() sends the next.
    std::uint16_t& sequence() { return *m_sequence; }
    /// Header sequences from now on come from one counter with `other`'s (peers that were driven from one
    /// writer).
    void shareSequenceWith(const RawPeer& other) { m_sequence = other.m_sequence; }

    protocol::PacketWriter writer;
    /// Set when constructed with a token.
    std::optional<protocol::ConnectToken> token;
    protocol::TokenCredentialFields credential;
    /// Active once a sealed join() has seen the challenge.
    protocol::SealedChannel channel;
    std::vector<std::uint8_t> cookie;    ///< from the last Challenge
    protocol::SessionParameters session; ///< from the last ConnectAccepted

  private:
    std::optional<protocol::SessionParameters> joinTokenless(std::string_view room,
                                                             std::uint16_t snapshotRateHz,
                                                             protocol::wire::DenyReason* denied,
                                                             bool spectator);
    std::optional<protocol::SessionParameters> joinSealed(std::string_view room, std::uint16_t snapshotRateHz,
                                                          bool spectator);

    InProcessNetwork& m_net;
    protocol::Address m_address;
    std::string m_name;
    std::shared_ptr<std::uint16_t> m_sequence = std::make_shared<std::uint16_t>(1);
    std::uint64_t m_nonce = 100;
};

} // namespace polytope::test

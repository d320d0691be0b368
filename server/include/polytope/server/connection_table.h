// polytope-server: the connection layer below the rooms (as netcode.io's server keeps its clients).
//
// One slot per client, allocated once for the server's capacity (the sum of its rooms' maxClients). A slot
// holds what belongs to the connection rather than to the game: the peer's address, the room it joined
// (which keeps the client's id), the session keys and replay window of a sealed session (seal.h), the header
// sequence/ack state of both directions (AckTracker) and the time the peer was last heard from, for the
// time-out. Rooms refer to their clients by slot index; the Server (server.h) finds a datagram's slot by its
// source address.
#pragma once

#include "polytope/protocol/address.h"
#include "polytope/protocol/constants.h"
#include "polytope/protocol/packet.h"
#include "polytope/protocol/seal.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace polytope::server
{

/// A slot of the ConnectionTable.
using ClientSlot = std::uint32_t;
inline constexpr ClientSlot kNoSlot = ~ClientSlot{0};

struct Connection
{
    bool used = false;
    protocol::Address address;
    std::size_t room = 0;      ///< index of the room the client joined
    protocol::AckTracker acks; ///< sequences and acknowledgements of the plain packet headers
    double lastReceiveTime = 0.0;
    // A sealed session (opened with a connect token); inactive on tokenless --insecure sessions.
    protocol::SealedChannel channel;
    std::array<std::uint8_t, protocol::kCookieSaltBytes> salt{}; ///< of the cookie the session opened with
    std::uint64_t tokenClientId = 0;                             ///< the token's client id
};

class ConnectionTable
{
  public:
    explicit ConnectionTable(std::size_t capacity);

    /// The slot of a connection from `address`, or kNoSlot.
    ClientSlot find(const protocol::Address& address) const;
    /// A free slot, now used by `address` (which must have none); kNoSlot when the table is full.
    ClientSlot open(const protocol::Address& address);
    /// Frees a used slot (its state is reset).
    void close(ClientSlot slot);

    Connection& operator[](ClientSlot slot) { return m_slots[slot]; }
    const Connection& operator[](ClientSlot slot) const { return m_slots[slot]; }
    std::size_t size() const { return m_byAddress.size(); }
    std::size_t capacity() const { return m_slots.size(); }

  private:
    std::vector<Connection> m_slots;
    std::vector<ClientSlot> m_free; ///< lowest slot last: slots are handed out in increasing order
    std::map<protocol::Address, ClientSlot> m_byAddress;
};

} // namespace polytope::server

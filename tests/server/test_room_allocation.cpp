// A room's steady tick allocates nothing: once a client has joined and the world is warm, receiving its
// inputs, stepping, replicating (catalogue, snapshots under the bandwidth budget) and sending allocate no
// memory in the server. Allocations are counted around the server's calls only
// (support/allocation_counter.h): the client and this test's transport run outside the count, and the
// server's datagrams go into storage allocated before it.
#include "polytope/client/client.h"
#include "polytope/server/server.h"
#include "support/allocation_counter.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <vector>

using namespace polytope;

namespace
{

/// Datagrams kept in storage allocated up front: copying one in allocates nothing.
class Mailbox
{
  public:
    explicit Mailbox(std::size_t capacity) : m_slots(capacity) {}
    void put(std::span<const std::uint8_t> bytes)
    {
        if (m_count == m_slots.size() || bytes.size() > sizeof(Slot::words))
        {
            ++m_overflow;
            return;
        }
        Slot& slot = m_slots[m_count++];
        std::memcpy(slot.words.data(), bytes.data(), bytes.size());
        slot.size = bytes.size();
    }
    template <class Fn> void drain(Fn&& fn)
    {
        for (std::size_t i = 0; i < m_count; ++i)
        {
            fn(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(m_slots[i].words.data()),
                                             m_slots[i].size));
        }
        m_count = 0;
    }
    std::size_t overflow() const { return m_overflow; }

  private:
    struct Slot
    {
        std::array<std::uint64_t, 160> words{}; ///< 1280 bytes, 8-byte aligned like a receive buffer
        std::size_t size = 0;
    };
    std::vector<Slot> m_slots;
    std::size_t m_count = 0;
    std::size_t m_overflow = 0;
};

} // namespace

TEST_CASE("a room's steady tick allocates nothing: inputs, step, catalogue, snapshots and sends",
          "[server][allocation]")
{
    const protocol::Address clientAddress = protocol::Address::ipv4(10, 0, 0, 2, 5000);
    Mailbox toClient(512);
    Mailbox toServer(512);
    server::RoomConfig room;
    room.scene = "default";
    room.snapshotRateHz = 60; // a snapshot every tick: the most work per tick
    std::string error;
    auto server = test::makeServer(
        room, [&](const protocol::Address&, std::span<const std::uint8_t> d) { toClient.put(d); }, error);
    REQUIRE(server);
    client::Client c({}, [&](std::span<const std::uint8_t> d) { toServer.put(d); });
    c.connect(0.0);

    std::int64_t allocations = 0;
    const double frame = 1.0 / 120.0;
    for (int step = 1; step <= 120 * 10; ++step)
    {
        const double now = step * frame;
        // After the join, the catalogue, the first full snapshots and one turn of the snapshot history's ring
        // (maxBaselineAgeTicks + 1 frames: 4.3 s at 60 snapshots a second), whose frames keep their memory.
        const bool measuring = now >= 6.0;
        {
            test::AllocationCounter counter;
            toServer.drain([&](std::span<const std::uint8_t> d) { server->receive(clientAddress, d, now); });
            server->update(now);
            allocations += measuring ? counter.stop() : 0;
        }
        toClient.drain([&](std::span<const std::uint8_t> d) { c.receive(d, now); });
        c.update(now);
        client::ReceivedSnapshot snapshot;
        while (c.popSnapshot(snapshot))
        {
        }
        const std::vector<protocol::CatalogueEntry> owned = c.ownedBodies();
        if (c.isConnected() && !owned.empty() && step % 2 == 0)
        {
            // Push the player's ball around: bodies move, so snapshots carry changes.
            protocol::InputCommand input;
            input.tick = server->room(0).tick() + 2;
            input.bodyId = owned.front().id;
            input.bodyGeneration = owned.front().generation;
            input.kind = protocol::wire::InputKind::Force;
            const float angle = 0.05f * static_cast<float>(step);
            input.vector = {400.0f * std::cos(angle), 0.0f, 400.0f * std::sin(angle)};
            c.sendInput(input);
        }
    }
    const server::RoomMetrics& m = server->room(0).metrics();
    INFO("inputs applied " << m.inputsApplied << ", snapshots sent " << m.snapshotsSent << ", encodes "
                           << m.snapshotEncodes);
    REQUIRE(c.isConnected());
    REQUIRE(toClient.overflow() == 0);
    REQUIRE(toServer.overflow() == 0);
    CHECK(m.inputsApplied > 500);
    CHECK(m.snapshotsSent > 500);
    CHECK(allocations == 0);
}

// The seeded network simulator: determinism, and the statistics of latency, jitter, loss, duplication,
// reordering and blackouts.
#include "polytope/protocol/network_simulator.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

using namespace polytope::protocol;

namespace
{

const Address kServer = Address::ipv4(10, 0, 0, 1, 4000);
const Address kClient = Address::ipv4(10, 0, 0, 2, 5000);
const Address kOther = Address::ipv4(10, 0, 0, 3, 6000);

struct Received
{
    std::uint32_t sequence;
    double sent;
    double delivered;
    bool operator==(const Received&) const = default;
};

std::vector<std::uint8_t> numbered(std::uint32_t sequence, std::size_t size)
{
    std::vector<std::uint8_t> bytes(std::max<std::size_t>(size, 4));
    std::memcpy(bytes.data(), &sequence, 4);
    for (std::size_t i = 4; i < bytes.size(); ++i)
    {
        bytes[i] = static_cast<std::uint8_t>(sequence * 31 + i);
    }
    return bytes;
}

/// Sends `count` numbered datagrams at 60 Hz and collects what arrives (checking each payload's bytes).
std::vector<Received> run(const NetworkConditions& conditions, std::uint64_t seed, int count)
{
    NetworkSimulator network(conditions, seed);
    std::vector<Received> received;
    const double dt = 1.0 / 60.0;
    for (int tick = 0; tick < count + 120; ++tick)
    {
        const double now = tick * dt;
        if (tick < count)
        {
            const auto sequence = static_cast<std::uint32_t>(tick);
            network.send(kServer, kClient, numbered(sequence, 20 + (sequence % 50)), now);
        }
        for (const SimulatedDatagram& d : network.receive(kClient, now))
        {
            REQUIRE(reinterpret_cast<std::uintptr_t>(d.bytes.data()) % 8 == 0);
            std::uint32_t sequence = 0;
            REQUIRE(d.bytes.size() >= 4);
            std::memcpy(&sequence, d.bytes.data(), 4);
            const auto expected = numbered(sequence, 20 + (sequence % 50));
            REQUIRE(std::equal(d.bytes.begin(), d.bytes.end(), expected.begin(), expected.end()));
            REQUIRE(d.deliverySeconds <= now);
            REQUIRE(d.from == kServer);
            received.push_back({sequence, d.sentSeconds, d.deliverySeconds});
        }
    }
    return received;
}

} // namespace

TEST_CASE("the same seed gives the same deliveries; another seed does not", "[netsim]")
{
    NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    conditions.jitterSeconds = 0.02;
    conditions.lossProbability = 0.1;
    conditions.duplicateProbability = 0.05;
    conditions.reorderProbability = 0.05;
    const auto first = run(conditions, 7, 2000);
    const auto second = run(conditions, 7, 2000);
    const auto other = run(conditions, 8, 2000);
    CHECK(first == second);
    CHECK_FALSE(first == other);
}

TEST_CASE("fixed latency without jitter delivers in order, exactly on time", "[netsim]")
{
    NetworkConditions conditions;
    conditions.latencySeconds = 0.1;
    NetworkSimulator network(conditions, 1);
    const std::vector<std::uint8_t> payload{1, 2, 3};
    network.send(kServer, kClient, payload, 1.0);
    network.send(kServer, kClient, payload, 1.01);
    CHECK(network.receive(kClient, 1.0999).empty());
    CHECK(network.receive(kServer, 5.0).empty()); // nothing for the server
    const auto due = network.receive(kClient, 1.1);
    REQUIRE(due.size() == 1);
    CHECK(due[0].deliverySeconds == Approx(1.1));
    CHECK(due[0].sentSeconds == 1.0);
    CHECK(network.inFlight() == 1);
    CHECK(network.receive(kClient, 2.0).size() == 1);
    CHECK(network.inFlight() == 0);
}

TEST_CASE("loss, duplication, reordering and jitter match their probabilities", "[netsim]")
{
    NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    conditions.jitterSeconds = 0.01;
    conditions.lossProbability = 0.05;
    conditions.duplicateProbability = 0.03;
    conditions.reorderProbability = 0.04;
    conditions.reorderDelaySeconds = 0.1;
    const int count = 40000;
    const auto received = run(conditions, 2024, count);

    std::vector<int> copies(count, 0);
    int outOfOrder = 0;
    std::uint32_t newest = 0;
    bool any = false;
    for (const Received& r : received)
    {
        ++copies[r.sequence];
        const double delay = r.delivered - r.sent;
        REQUIRE(delay >= conditions.latencySeconds - 1e-9);
        REQUIRE(delay <
                conditions.latencySeconds + conditions.jitterSeconds + conditions.reorderDelaySeconds + 1e-9);
        if (any && r.sequence < newest)
        {
            ++outOfOrder;
        }
        newest = any ? std::max(newest, r.sequence) : r.sequence;
        any = true;
    }
    int lost = 0, duplicated = 0;
    for (int c : copies)
    {
        lost += c == 0 ? 1 : 0;
        duplicated += c == 2 ? 1 : 0;
        REQUIRE(c <= 2);
    }
    // Expected: lost 5%; duplicated 3% x 95% x 95%; out of order about the 4% held back.
    CHECK(lost / double(count) == Approx(0.05).margin(0.006));
    CHECK(duplicated / double(count) == Approx(0.03 * 0.95 * 0.95).margin(0.005));
    CHECK(outOfOrder / double(count) > 0.03);
    CHECK(outOfOrder / double(count) < 0.08);
}

TEST_CASE("blackout windows drop everything sent inside them", "[netsim]")
{
    NetworkConditions conditions;
    conditions.latencySeconds = 0.02;
    conditions.blackouts = {{1.0, 2.0}, {3.0, 3.5}};
    const auto received = run(conditions, 3, 300); // 5 s at 60 Hz
    std::vector<bool> arrived(300, false);
    for (const Received& r : received)
    {
        arrived[r.sequence] = true;
    }
    for (int tick = 0; tick < 300; ++tick)
    {
        const double sent = tick / 60.0;
        const bool dark = (sent >= 1.0 && sent < 2.0) || (sent >= 3.0 && sent < 3.5);
        REQUIRE(arrived[static_cast<std::size_t>(tick)] == !dark);
    }
}

TEST_CASE("datagrams are routed by destination and the queue is bounded", "[netsim]")
{
    NetworkSimulator network({}, 1, 4);
    const std::vector<std::uint8_t> payload{9};
    for (int i = 0; i < 6; ++i)
    {
        network.send(kServer, i % 2 ? kClient : kOther, payload, 0.0);
    }
    CHECK(network.inFlight() == 4);
    CHECK(network.stats().lost == 2);
    CHECK(network.receive(kClient, 0.0).size() == 2);
    CHECK(network.receive(kOther, 0.0).size() == 2);
    CHECK(network.stats().delivered == 4);
    CHECK(network.stats().sent == 6);

    const std::vector<std::uint8_t> huge(NetworkSimulator::kMaxDatagramBytes + 1);
    network.send(kServer, kClient, huge, 0.0);
    CHECK(network.receive(kClient, 1.0).empty());
}

// Structured snapshots end to end (STANDARD.md section 14): a client that asks for them at connect gets
// StructuredSnapshot datagrams, never above the datagram limit, and tracks the server's quantized state
// exactly under loss, beside a player on the compressed codec; its bandwidth budget binds the same way;
// malformed join requests are dropped and counted.
#include "polytope/client/client.h"
#include "polytope/physics/scenes.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/server/server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace polytope;

namespace
{

client::ClientConfig structuredConfig(bool velocities)
{
    client::ClientConfig config;
    config.name = "structured";
    config.snapshotFormat = protocol::wire::SnapshotFormat::Structured;
    config.snapshotVelocities = velocities;
    return config;
}

/// Pops every snapshot the client holds and compares each with the frame `expected` gives for its tick.
/// Returns (compared, mismatched).
template <class Expected>
std::pair<std::size_t, std::size_t> compareAll(client::Client& c, Expected&& expected)
{
    std::size_t compared = 0, mismatched = 0;
    client::ReceivedSnapshot s;
    while (c.popSnapshot(s))
    {
        const protocol::SnapshotFrame* truth = expected(s.tick);
        REQUIRE(truth != nullptr);
        mismatched +=
            std::equal(s.quantized.begin(), s.quantized.end(), truth->bodies.begin(), truth->bodies.end())
                ? 0
                : 1;
        ++compared;
    }
    return {compared, mismatched};
}

} // namespace

TEST_CASE("a structured client tracks the server's quantized state exactly under 5% loss",
          "[server][netcode][structured]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.07;
    conditions.jitterSeconds = 0.06;
    conditions.lossProbability = 0.05;
    server::RoomConfig config;
    config.snapshotRateHz = 60;
    config.maxClientKbps = 0; // no budget: every snapshot is the simulation's (the budget has its own test)
    config.buildScene = [](physics::World& world) { return physics::buildPile(world, 300); };
    test::InProcessNetwork net;
    net.simulate(conditions, 42);
    net.recordServerSends();
    const auto server = test::makeServer(net, config);
    const protocol::Address structuredAddress = protocol::Address::ipv4(10, 0, 0, 2, 5000);
    const protocol::Address playerAddress = protocol::Address::ipv4(10, 0, 0, 3, 5000);
    const bool velocities = GENERATE(false, true);
    client::Client& reader = net.addClient(structuredAddress, structuredConfig(velocities));
    client::Client& player = net.addClient(playerAddress);
    reader.connect(0.0);
    player.connect(0.0);

    const server::Room& room = server->room(0);
    const auto truth = [&](std::uint64_t tick) { return room.history().find(tick); };
    std::size_t compared = 0, mismatched = 0, playerCompared = 0, playerMismatched = 0, moving = 0;
    while (net.now() < 6.0)
    {
        net.frame();
        client::ReceivedSnapshot s;
        while (reader.popSnapshot(s))
        {
            const protocol::SnapshotFrame* frame = truth(s.tick);
            REQUIRE(frame != nullptr);
            mismatched +=
                std::equal(s.quantized.begin(), s.quantized.end(), frame->bodies.begin(), frame->bodies.end())
                    ? 0
                    : 1;
            ++compared;
            for (const client::SnapshotBody& b : s.bodies)
            {
                moving += !b.atRest && std::fabs(b.velocity.linear[1]) > 0.1f ? 1 : 0;
            }
        }
        const auto [n, bad] = compareAll(player, truth);
        playerCompared += n;
        playerMismatched += bad;
    }
    REQUIRE(reader.isConnected());
    REQUIRE(player.isConnected());
    CHECK(reader.session().snapshotFormat == protocol::wire::SnapshotFormat::Structured);
    CHECK(reader.session().snapshotVelocities == velocities);
    CHECK(player.session().snapshotFormat == protocol::wire::SnapshotFormat::Compressed);
    CHECK(mismatched == 0);
    CHECK(compared > 80); // of 360 ticks: a tick of 300 falling boxes takes up to 16 slices, all needed
    CHECK(playerMismatched == 0);
    CHECK(playerCompared > 150);
    CHECK((moving > 0) == velocities); // falling cubes come with their velocities when asked for
    const auto& errors = reader.stats().sliceErrors;
    CHECK(std::accumulate(errors.begin(), errors.end(), std::uint64_t{0}) == 0);
    CHECK(reader.stats().drops[protocol::DropReason::BadPayload] == 0);

    // What each was sent: structured datagrams to the reader only, within the limit, and more bytes.
    std::size_t structuredBytes = 0, compressedBytes = 0, structuredDatagrams = 0;
    for (const test::SentDatagram& sent : net.serverSent())
    {
        const protocol::DecodeResult decoded = sent.datagram.decode();
        REQUIRE(decoded.ok());
        CHECK(sent.datagram.size() <= protocol::kMaxPacketBytes);
        if (sent.to == structuredAddress)
        {
            CHECK(decoded.type() != protocol::wire::PacketType::Snapshot);
            structuredDatagrams += decoded.type() == protocol::wire::PacketType::StructuredSnapshot ? 1 : 0;
            structuredBytes += sent.datagram.size();
        }
        else
        {
            CHECK(decoded.type() != protocol::wire::PacketType::StructuredSnapshot);
            compressedBytes += sent.datagram.size();
        }
    }
    INFO("structured " << structuredBytes << " bytes, compressed " << compressedBytes << " bytes");
    CHECK(structuredDatagrams > 150);
    CHECK(structuredBytes > compressedBytes);
}

TEST_CASE("a structured client's bandwidth budget holds like a player's",
          "[server][netcode][structured][budget]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.04;
    conditions.lossProbability = 0.02;
    server::RoomConfig config;
    config.snapshotRateHz = 30;
    config.maxClientKbps = 256; // 32 kB a second: far below what 300 falling boxes need as plain structs
    config.buildScene = [](physics::World& world) { return physics::buildPile(world, 300); };
    test::InProcessNetwork net;
    net.simulate(conditions, 9);
    const auto server = test::makeServer(net, config);
    client::Client& c = net.addClient(2, structuredConfig(false));
    c.connect(0.0);
    net.runUntil(1.0);
    REQUIRE(c.isConnected());
    const server::Room& room = server->room(0);
    test::dropSnapshots(c);

    const std::uint64_t bytesAtStart = room.metrics().bytesOut;
    const double start = net.now();
    std::size_t compared = 0, mismatched = 0;
    net.run(6.0,
            [&]
            {
                // The client holds exactly what it was sent (some bodies deferred, in their older state).
                const auto [n, bad] =
                    compareAll(c, [&](std::uint64_t tick) { return room.sentFrame(c.clientId(), tick); });
                compared += n;
                mismatched += bad;
            });
    const double kbps =
        static_cast<double>(room.metrics().bytesOut - bytesAtStart) * 8.0 / 1000.0 / (net.now() - start);
    INFO("sent " << kbps << " kbps to a structured client with a 256 kbps budget; " << compared
                 << " snapshots");
    CHECK(kbps <= 256.0 * 1.05);
    CHECK(kbps >= 150.0);
    CHECK(compared > 60);
    CHECK(mismatched == 0);
    CHECK(room.metrics().budgetLimitedSnapshots > 0);
}

TEST_CASE("malformed structured-mode join requests are dropped and counted", "[server][structured]")
{
    test::InProcessNetwork net;
    net.recordServerSends();
    const auto server = test::makeServer(net);
    server->update(0.0);
    protocol::PacketWriter writer;
    const auto from = protocol::Address::ipv4(10, 0, 0, 2, 5000);
    server->receive(from, test::AlignedDatagram(writer.connectRequest({}, "reader")).view(), 1.0);
    REQUIRE(net.serverSent().size() == 1);
    const protocol::DecodeResult challenge = net.serverSent()[0].datagram.decode();
    REQUIRE(challenge.type() == protocol::wire::PacketType::Challenge);
    const auto* cookieVector = challenge.packet->message_as_Challenge()->cookie();
    const std::vector<std::uint8_t> cookie(cookieVector->begin(), cookieVector->end());
    net.clearServerSent();

    const std::uint64_t invalidBefore = server->metrics().drops[protocol::DropReason::InvalidField];
    protocol::JoinRequest join;
    join.clientName = "reader";
    join.snapshotFormat = protocol::wire::SnapshotFormat::Compressed;
    join.snapshotVelocities = true; // velocities without the structured format
    server->receive(from, test::AlignedDatagram(writer.challengeResponse({1, 0, 0, 0}, cookie, join)).view(),
                    1.1);
    join.snapshotFormat = static_cast<protocol::wire::SnapshotFormat>(200); // unknown format
    join.snapshotVelocities = false;
    server->receive(from, test::AlignedDatagram(writer.challengeResponse({2, 0, 0, 0}, cookie, join)).view(),
                    1.2);
    server->update(1.3);
    CHECK(server->metrics().drops[protocol::DropReason::InvalidField] == invalidBefore + 2);
    CHECK(server->clientCount() == 0);
    CHECK(net.serverSent().empty());

    // The same cookie with a well-formed structured request opens the session.
    join.snapshotFormat = protocol::wire::SnapshotFormat::Structured;
    server->receive(from, test::AlignedDatagram(writer.challengeResponse({3, 0, 0, 0}, cookie, join)).view(),
                    1.4);
    server->update(1.5);
    CHECK(server->clientCount() == 1);
}

TEST_CASE("a client drops the snapshot format it did not ask for", "[server][structured]")
{
    test::InProcessNetwork net;
    const auto server = test::makeServer(net);
    client::Client& reader = net.addClient(2, structuredConfig(false));
    client::Client& player = net.addClient(3);
    reader.connect(0.0);
    player.connect(0.0);
    net.runUntil(0.5);
    REQUIRE(reader.isConnected());
    REQUIRE(player.isConnected());

    protocol::PacketWriter writer;
    const std::vector<std::uint8_t> payload{0x20, 0x41, 0x00, 0x17, 0x99};
    const std::vector<protocol::QuantizedBody> bodies(1);
    protocol::StructuredSliceView slice;
    slice.tick = 1000;
    slice.bodies = bodies;
    const auto unexpected = protocol::DropReason::UnexpectedMessage;
    const std::uint64_t readerBefore = reader.stats().drops[unexpected];
    const std::uint64_t playerBefore = player.stats().drops[unexpected];
    reader.receive(test::AlignedDatagram(writer.snapshot({9000, 0, 0, 0}, 1000, 1.0, payload)).view(),
                   net.now());
    player.receive(test::AlignedDatagram(writer.structuredSnapshot({9000, 0, 0, 0}, slice)).view(),
                   net.now());
    CHECK(reader.stats().drops[unexpected] == readerBefore + 1);
    CHECK(player.stats().drops[unexpected] == playerBefore + 1);
    net.run(0.5);
    CHECK(reader.isConnected());
    CHECK(player.isConnected());
}

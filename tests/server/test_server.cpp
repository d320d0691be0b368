// The server core and the client library in one process, over an in-process transport with a test clock;
// then the real thing over loopback UDP.
#include "polytope/client/client.h"
#include "polytope/client/udp_client.h"
#include "polytope/server/server.h"
#include "polytope/server/udp_server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

using namespace polytope;

using test::InProcessNetwork;
using test::makeServer;

TEST_CASE("a client connects, receives whole snapshots at the snapshot rate and sees bodies fall", "[server]")
{
    InProcessNetwork net;
    net.order = test::FrameOrder::UpdateThenDeliver;
    auto server = makeServer(net);
    client::Client& c = net.addClient(2);

    c.connect(0.0);
    std::vector<client::ReceivedSnapshot> snapshots;
    for (int frame = 0; frame < 120; ++frame) // two seconds at 60 Hz
    {
        net.frameAt(frame / 60.0);
        client::ReceivedSnapshot s;
        while (c.popSnapshot(s))
        {
            snapshots.push_back(std::move(s));
        }
    }
    REQUIRE(c.isConnected());
    CHECK(c.clientId() == 1);
    CHECK(c.tickRateHz() == 60);
    CHECK(c.sceneName() == "default");
    CHECK(server->clientCount() == 1);
    // 20 Hz over ~2 s.
    CHECK(snapshots.size() >= 38);
    CHECK(snapshots.size() <= 41);
    for (std::size_t i = 1; i < snapshots.size(); ++i)
    {
        CHECK(snapshots[i].tick == snapshots[i - 1].tick + 3);
        CHECK(snapshots[i].bodies.size() == server->room(0).world().bodyCount());
    }
    // Some body falls: its height decreases between the first and a later snapshot.
    const auto& first = snapshots.front().bodies;
    const auto& later = snapshots[10].bodies;
    int falling = 0;
    for (std::size_t i = 0; i < first.size(); ++i)
    {
        REQUIRE(first[i].id == later[i].id);
        falling += later[i].position[1] < first[i].position[1] - 0.1f ? 1 : 0;
    }
    CHECK(falling >= 20);
    CHECK(c.stats().drops.total() == 0);
    CHECK(server->metrics().drops.total() + server->room(0).metrics().drops.total() == 0);
}

TEST_CASE("a silent client is dropped after the time-out and a full server denies", "[server]")
{
    InProcessNetwork net;
    server::RoomConfig config;
    config.maxClients = 1;
    auto server = makeServer(net, config);
    const auto a = protocol::Address::ipv4(10, 0, 0, 2, 5000);
    const auto b = protocol::Address::ipv4(10, 0, 0, 3, 5000);
    client::Client first({}, net.clientSend(a));
    client::Client second({}, net.clientSend(b));
    net.attach(a, first);
    net.attach(b, second);

    first.connect(0.0);
    server->update(0.0);
    net.pump(0.0);
    REQUIRE(first.isConnected());

    second.connect(0.05);
    net.pump(0.05);
    CHECK(second.state() == client::ClientState::ConnectionDenied);
    CHECK(server->room(0).metrics().clientsDenied == 1);

    // The first client keeps quiet (no update calls): after 10 s the server drops it and says so.
    double now = 0.0;
    while (now < 10.5)
    {
        now += 1.0 / 60.0;
        server->update(now);
        net.pump(now);
    }
    CHECK(server->clientCount() == 0);
    CHECK(server->room(0).metrics().clientsTimedOut == 1);
    CHECK(first.state() == client::ClientState::ServerClosed);
}

TEST_CASE("a client that keeps alive stays and one that leaves is removed at once", "[server]")
{
    InProcessNetwork net;
    net.order = test::FrameOrder::UpdateThenDeliver;
    auto server = makeServer(net);
    client::Client& c = net.addClient(2);
    c.connect(0.0);
    for (int frame = 0; frame < 60 * 15; ++frame)
    {
        net.frameAt(frame / 60.0);
        test::dropSnapshots(c);
    }
    const double now = net.now();
    CHECK(c.isConnected());
    CHECK(server->clientCount() == 1);
    c.disconnect(now);
    net.pump(now);
    CHECK(server->clientCount() == 0);
    CHECK(server->room(0).metrics().clientsDisconnected == 1);
}

TEST_CASE("bad datagrams are dropped and counted by reason, and change nothing else", "[server]")
{
    InProcessNetwork net;
    auto server = makeServer(net);
    const auto stranger = protocol::Address::ipv4(10, 0, 0, 9, 1234);
    server->update(0.0);
    const std::uint64_t hashBefore = server->room(0).world().stateHash();

    std::vector<std::uint64_t> storage(200, 0x5A5A5A5A5A5A5A5Aull);
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(storage.data());
    server->receive(stranger, {bytes, 3}, 0.0);
    server->receive(stranger, {bytes, 1500}, 0.0);
    server->receive(stranger, {bytes, 100}, 0.0);
    protocol::PacketWriter writer;
    // A keep-alive from someone with no session.
    net.deliver(stranger, writer.keepAlive({}, 1.0));

    const auto& drops = server->metrics().drops;
    CHECK(drops[protocol::DropReason::TooShort] == 1);
    CHECK(drops[protocol::DropReason::TooLarge] == 1);
    CHECK(drops[protocol::DropReason::BadIdentifier] == 1);
    CHECK(drops[protocol::DropReason::UnexpectedMessage] == 1);
    CHECK(server->clientCount() == 0);
    CHECK(net.idle()); // nothing was answered
    CHECK(server->room(0).world().stateHash() == hashBefore);
}

TEST_CASE("a bad configuration is refused with a message naming the problem", "[server]")
{
    InProcessNetwork net;
    std::string error;
    server::RoomConfig config;
    config.scene = "no-such-scene";
    CHECK_FALSE(makeServer(config, net.serverSend(), error));
    CHECK(error.find("no-such-scene") != std::string::npos);
    config = {};
    config.snapshotRateHz = 120;
    CHECK_FALSE(makeServer(config, net.serverSend(), error));
    CHECK(error.find("snapshot rate") != std::string::npos);
}

TEST_CASE("end to end over loopback UDP with the UdpServer and a UdpClient", "[server][udp]")
{
    server::RoomConfig config;
    config.port = 0; // ephemeral
    config.bindAddress = "127.0.0.1";
    server::UdpServer udpServer;
    std::string error;
    REQUIRE(udpServer.open(config, error));
    const std::uint16_t port = udpServer.localPort();
    REQUIRE(port != 0);
    std::thread serverThread([&] { udpServer.run(false); });

    client::UdpClient udpClient;
    REQUIRE(udpClient.connect("127.0.0.1", port, error));
    std::vector<client::ReceivedSnapshot> snapshots;
    const double start = udpClient.now();
    while (snapshots.size() < 20 && udpClient.now() - start < 10.0 && !udpClient.client().isFinished())
    {
        udpClient.poll(0.01);
        client::ReceivedSnapshot s;
        while (udpClient.client().popSnapshot(s))
        {
            snapshots.push_back(std::move(s));
        }
    }
    udpClient.disconnect();
    udpServer.stop();
    serverThread.join();

    REQUIRE(snapshots.size() == 20);
    CHECK(udpClient.client().isConnected() == false); // disconnect() was called
    for (std::size_t i = 1; i < snapshots.size(); ++i)
    {
        CHECK(snapshots[i].tick > snapshots[i - 1].tick);
    }
    // A dynamic body (the first non-plane) is lower in the last snapshot than in the first.
    const auto& first = snapshots.front().bodies;
    const auto& last = snapshots.back().bodies;
    REQUIRE(first.size() == last.size());
    bool fell = false;
    for (std::size_t i = 0; i < first.size(); ++i)
    {
        fell = fell || (first[i].shape != protocol::wire::ShapeKind::Plane &&
                        last[i].position[1] < first[i].position[1] - 0.5f);
    }
    CHECK(fell);
    CHECK(udpServer.server().room(0).metrics().clientsAccepted == 1);
}

TEST_CASE("stopping the UDP server drains: clients are told and run() returns at once", "[server][udp]")
{
    server::RoomConfig config;
    config.port = 0;
    config.bindAddress = "127.0.0.1";
    server::UdpServer udpServer;
    std::string error;
    REQUIRE(udpServer.open(config, error));
    std::thread serverThread([&] { udpServer.run(false); });
    client::UdpClient udpClient;
    REQUIRE(udpClient.connect("127.0.0.1", udpServer.localPort(), error));
    const double start = udpClient.now();
    while (!udpClient.client().isConnected() && udpClient.now() - start < 5.0)
    {
        udpClient.poll(0.01);
    }
    REQUIRE(udpClient.client().isConnected());

    const auto stopAt = std::chrono::steady_clock::now();
    udpServer.stop(); // what SIGTERM does
    serverThread.join();
    const double stopSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - stopAt).count();
    CHECK(stopSeconds < 1.0);
    const double toldAt = udpClient.now();
    while (!udpClient.client().isFinished() && udpClient.now() - toldAt < 2.0)
    {
        udpClient.poll(0.01);
    }
    CHECK(udpClient.client().state() == client::ClientState::ServerClosed);
    CHECK(udpServer.server().room(0).clientCount() == 0);
}

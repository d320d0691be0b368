// The server under overload and abuse, in process:
//   F1. a room that overruns (its ticks far longer than its tick interval) on its own thread does not stop
//       the network thread: datagrams keep being counted, handshakes and another room's admin commands keep
//       being answered, and the other room keeps its pace;
//   F2. a flood of admin requests from 20,000 spoofed addresses fills no table that legitimate clients need:
//       a token client connects with its first or second handshake;
//   F3. inputs are queued per client: one client filling its queue refuses only its own inputs;
//   F4. the socket counts every datagram in and out, and /metrics shows it;
//   F8. a token opens a session only on the server it names.
#include "polytope/client/client.h"
#include "polytope/protocol/admin_auth.h"
#include "polytope/protocol/token.h"
#include "polytope/server/metrics_text.h"
#include "polytope/server/options.h"
#include "polytope/server/server.h"
#include "polytope/server/udp_server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>

using namespace polytope;
using test::AlignedDatagram;
namespace wire = protocol::wire;

namespace
{

constexpr double kWallTime = 1.8e9; // Unix seconds the server's wall clock reads

/// An admin request signed with `key` for `room`.
std::vector<std::uint8_t> adminRequest(std::string_view key, std::string room, std::uint64_t nonce,
                                       wire::AdminOp op = wire::AdminOp::Status)
{
    protocol::AdminCommandFields command;
    command.op = op;
    command.room = std::move(room);
    command.nonce = nonce;
    command.time = kWallTime;
    const std::vector<std::uint8_t> bytes = protocol::encodeAdminCommand(command);
    const protocol::AdminMac mac = protocol::adminMac(protocol::deriveAdminMacKey(key), bytes);
    protocol::PacketWriter writer;
    const auto datagram = writer.adminRequest({}, bytes, mac);
    return {datagram.begin(), datagram.end()};
}

} // namespace

TEST_CASE("F1: a room that overruns on its thread stops neither the network thread nor the other room",
          "[server][overload]")
{
    // Room "slow" takes 300 ms a tick (at 60 Hz: 18 ticks late every tick); room "fast" is ordinary.
    server::RoomConfig slow;
    slow.room = "slow";
    server::RoomConfig fast;
    fast.room = "fast";
    server::ServerConfig config;
    config.rooms = {slow, fast};
    config.adminKey = "secret";
    config.security.insecure = true;
    config.wallClock = [] { return kWallTime; };
    std::mutex sentMutex;
    std::vector<std::pair<double, std::vector<std::uint8_t>>> sentToAdmin;
    std::size_t challenges = 0;
    const auto start = std::chrono::steady_clock::now();
    const auto clock = [start]
    { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    const protocol::Address admin = protocol::Address::ipv4(10, 0, 0, 99, 4000);
    std::string error;
    auto server = server::Server::create(
        config,
        [&](const protocol::Address& to, std::span<const std::uint8_t> d)
        {
            const std::lock_guard lock(sentMutex);
            const AlignedDatagram copy(d);
            const protocol::DecodeResult decoded = protocol::decodePacket(copy.view());
            if (to == admin)
            {
                sentToAdmin.emplace_back(clock(), std::vector<std::uint8_t>(d.begin(), d.end()));
            }
            else if (decoded.ok() && decoded.type() == wire::PacketType::Challenge)
            {
                ++challenges;
            }
        },
        error);
    INFO(error);
    REQUIRE(server);
    server->room(0).setPreStepHook([](std::uint64_t)
                                   { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
    server->startRoomThreads(clock);

    // The network thread's part, on this thread, for 1.5 s: junk, connect requests and admin requests to the
    // fast room, all the while the slow room is inside its ticks.
    std::vector<std::uint64_t> junk(40, 0x5A5A5A5A5A5A5A5Aull);
    protocol::PacketWriter writer;
    std::size_t junkSent = 0, connectsSent = 0, adminSent = 0;
    std::vector<double> adminSentAt;
    std::uint64_t fastTickAtStart = 0;
    while (clock() < 1.5)
    {
        const double now = clock();
        if (fastTickAtStart == 0 && now > 0.2)
        {
            fastTickAtStart = server->roomStatus(1).tick;
        }
        for (int i = 0; i < 20; ++i)
        {
            server->receive(protocol::Address::ipv4(10, 9, static_cast<std::uint8_t>(i), 1, 9000),
                            {reinterpret_cast<const std::uint8_t*>(junk.data()), 100}, now);
            ++junkSent;
        }
        const protocol::Address player =
            protocol::Address::ipv4(10, 1, 0, static_cast<std::uint8_t>(connectsSent % 200 + 1), 5000);
        server->receive(player, AlignedDatagram(writer.connectRequest({}, "player", "fast")).view(), now);
        ++connectsSent;
        if (adminSent < 10 && now > 0.1 * static_cast<double>(adminSent + 1))
        {
            const auto request = adminRequest("secret", "fast", 1000 + adminSent);
            server->receive(admin, AlignedDatagram(request).view(), now);
            adminSentAt.push_back(now);
            ++adminSent;
        }
        server->update(now);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const server::RoomStatus slowStatus = server->roomStatus(0);
    const server::RoomStatus fastStatus = server->roomStatus(1);
    const server::ServerMetrics front = server->metrics();
    server->shutdown(); // waits for the slow room's update in progress: its overrun is counted by then

    INFO("slow room: tick " << slowStatus.tick << "; fast room: tick " << fastStatus.tick << " (from "
                            << fastTickAtStart << ")");
    CHECK(server->room(0).metrics().overruns >= 1);
    // Every junk datagram was read and counted at once by the front door.
    CHECK(front.drops.total() == junkSent);
    // Every connect request was answered while the slow room was busy.
    {
        const std::lock_guard lock(sentMutex);
        CHECK(challenges == connectsSent);
        // Every admin request to the fast room was answered, each within 0.25 s of being sent.
        REQUIRE(sentToAdmin.size() == adminSent);
        for (std::size_t i = 0; i < sentToAdmin.size(); ++i)
        {
            CHECK(sentToAdmin[i].first - adminSentAt[i] < 0.25);
        }
    }
    // The fast room kept about its 60 ticks a second (over 1.3 s: at least 50 ticks, allowing for a loaded
    // machine), while the slow room made a handful.
    CHECK(fastStatus.tick - fastTickAtStart >= 50);
    CHECK(slowStatus.tick <= 10);
}

TEST_CASE("F2: a spoofed flood from 20,000 addresses costs a token client at most a retry",
          "[server][overload]")
{
    protocol::TokenKey key{};
    key.fill(0x42);
    server::RoomConfig room;
    room.room = "main";
    server::ServerConfig config;
    config.rooms = {room};
    config.adminKey = "secret";
    config.security.tokenKey = key;
    config.security.publicAddresses = {"10.0.0.1:7777"};
    double now = 0.0;
    config.wallClock = [&now] { return kWallTime + now; };
    test::InProcessNetwork net;
    std::string error;
    auto server = server::Server::create(config, net.serverSend(), error);
    INFO(error);
    REQUIRE(server);
    net.server = server.get();

    protocol::TokenRequest request;
    request.clientId = 7;
    request.rooms = {"main"};
    request.serverAddresses = {"10.0.0.1:7777"};
    client::ClientConfig clientConfig;
    clientConfig.token.emplace();
    REQUIRE(protocol::makeConnectToken(key, request, static_cast<std::uint64_t>(kWallTime),
                                       *clientConfig.token, error));
    const protocol::Address clientAddress = protocol::Address::ipv4(192, 0, 2, 10, 5000);
    std::size_t handshakesSent = 0;
    client::Client c(clientConfig,
                     [&](std::span<const std::uint8_t> d)
                     {
                         const AlignedDatagram copy(d);
                         const protocol::DecodeResult decoded = protocol::decodePacket(copy.view());
                         handshakesSent +=
                             decoded.ok() && (decoded.type() == wire::PacketType::ConnectRequest ||
                                              decoded.type() == wire::PacketType::ChallengeResponse)
                                 ? 1
                                 : 0;
                         net.post(clientAddress, test::kServerAddress, d, now);
                     });
    net.attach(clientAddress, c);

    // The flood: 320-byte admin requests with random MACs from 20,000 addresses, 7,000 a second (about 18
    // Mbit/s), for 3 s before the client starts and all through its handshake.
    std::mt19937_64 random(5);
    std::vector<std::uint8_t> forged = adminRequest("not the key", "main", 1);
    REQUIRE(forged.size() >= 320);
    auto floodUntil = [&](double until)
    {
        while (now < until)
        {
            now += 1.0 / 7000.0;
            const auto n = static_cast<std::uint32_t>(random() % 20000);
            const protocol::Address spoofed = protocol::Address::ipv4(
                100, static_cast<std::uint8_t>(64 + n / 65536), static_cast<std::uint8_t>(n / 256 % 256),
                static_cast<std::uint8_t>(n % 256), static_cast<std::uint16_t>(1024 + random() % 60000));
            forged[forged.size() - 1] = static_cast<std::uint8_t>(random()); // a random MAC byte
            server->receive(spoofed, AlignedDatagram(forged).view(), now);
            if (static_cast<long>(now * 7000.0) % 70 == 0)
            {
                server->update(now);
                net.pump(now);
                c.update(now);
            }
        }
    };
    floodUntil(3.0);
    CHECK(server->gate().trackedIps() >= 10000); // the flood filled the per-IP table
    c.connect(now);
    floodUntil(6.0);
    INFO("handshake datagrams sent " << handshakesSent << ", per-IP evictions "
                                     << server->gate().evictedIps());
    CHECK(c.isConnected());
    // One ConnectRequest and one ChallengeResponse on the first try; a retry would add one or two.
    CHECK(handshakesSent <= 4);
    CHECK(server->metrics().adminBadMac + server->metrics().drops[protocol::DropReason::RateLimited] > 10000);
}

TEST_CASE("F3: one client filling its input queue refuses only its own inputs", "[server][overload]")
{
    test::InProcessNetwork net;
    server::RoomConfig room;
    room.maxInputsPerSecond = 1e6; // the rate limit out of the way: the queue is what is tested
    room.maxInputBurst = 1e6;
    room.maxQueuedInputsPerClient = 64;
    auto server = test::makeServer(net, room);
    const protocol::Address greedyAddress = protocol::Address::ipv4(10, 0, 0, 2, 5000);
    const protocol::Address politeAddress = protocol::Address::ipv4(10, 0, 0, 3, 5000);
    client::Client greedy({}, net.clientSend(greedyAddress));
    client::Client polite({}, net.clientSend(politeAddress));
    net.attach(greedyAddress, greedy);
    net.attach(politeAddress, polite);
    greedy.connect(0.0);
    polite.connect(0.0);
    double now = 0.0;
    auto frame = [&]
    {
        now += 1.0 / 120.0;
        net.pump(now);
        server->update(now);
        greedy.update(now);
        polite.update(now);
        net.pump(now);
    };
    while (now < 1.0)
    {
        frame();
    }
    REQUIRE(greedy.isConnected());
    REQUIRE(polite.isConnected());
    const auto input = [&](const client::Client& c, std::uint64_t ahead)
    {
        protocol::InputCommand in;
        in.tick = server->room(0).tick() + ahead;
        in.bodyId = c.ownedBodies().front().id;
        in.bodyGeneration = c.ownedBodies().front().generation;
        in.kind = wire::InputKind::Force;
        in.vector = {1.0f, 0.0f, 0.0f};
        return in;
    };
    // The greedy client queues inputs 500 ticks ahead, far more than its queue holds.
    for (int i = 0; i < 400; ++i)
    {
        greedy.sendInput(input(greedy, 500));
        if (i % 20 == 0)
        {
            frame();
        }
    }
    const std::uint64_t refusedBefore = server->room(0).metrics().inputsRefused;
    REQUIRE(refusedBefore > 0); // the greedy client's own queue is full
    std::vector<server::AppliedInput> applied;
    server->room(0).setInputObserver([&](const server::AppliedInput& a) { applied.push_back(a); });
    for (int i = 0; i < 24; ++i)
    {
        polite.sendInput(input(polite, 3));
        frame();
    }
    for (int i = 0; i < 60; ++i)
    {
        frame();
    }
    std::size_t politeApplied = 0;
    for (const server::AppliedInput& a : applied)
    {
        politeApplied += a.clientId == polite.clientId() && a.status == physics::WorldStatus::Ok ? 1 : 0;
    }
    CHECK(politeApplied == 24);
}

TEST_CASE("F4: the socket counters count every datagram in and out, and /metrics shows them",
          "[server][overload][udp]")
{
    server::RoomConfig config;
    config.bindAddress = "127.0.0.1";
    config.port = 0;
    server::UdpServer udp;
    std::string error;
    REQUIRE(udp.open(config, error));
    const std::uint16_t port = udp.localPort();
    std::thread serverThread([&] { udp.run(false); });

    // 500 junk datagrams of 100 bytes from a plain socket, then a goodbye-free wait for the server to read
    // them.
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::vector<std::uint8_t> junk(100, 0x5A);
    for (int i = 0; i < 500; ++i)
    {
        REQUIRE(::sendto(fd, junk.data(), junk.size(), 0, reinterpret_cast<const sockaddr*>(&to),
                         sizeof(to)) == 100);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (udp.socketCounters().datagramsReceived < 500 && std::chrono::steady_clock::now() < deadline)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    udp.stop();
    serverThread.join();
    ::close(fd);

    const server::SocketCounters socket = udp.socketCounters();
    const server::ServerMetrics front = udp.server().metrics();
    CHECK(socket.datagramsReceived == 500);
    CHECK(socket.bytesReceived == 500 * 100);
    CHECK(socket.kernelDrops == 0);
    CHECK(socket.receiveBufferBytes > 0);
    // Every one of them was counted by the front door as dropped, with its bytes.
    CHECK(front.drops.total() == 500);
    CHECK(front.bytesIn == 500 * 100);
    const std::string text = server::renderServerPrometheus(front, &socket);
    CHECK_THAT(text, Catch::Contains("polytope_socket_datagrams_received_total 500\n"));
    CHECK_THAT(text, Catch::Contains("polytope_socket_received_bytes_total 50000\n"));
    CHECK_THAT(text, Catch::Contains("polytope_host_received_bytes_total 50000\n"));
}

TEST_CASE("F8: a token opens a session only on the server it names; with no address to go by the server "
          "refuses to start",
          "[server][overload][tokens]")
{
    server::ServerOptions options;
    options.tokenKey = std::string(64, 'a');
    std::string error;
    server::SecurityConfig security;
    SECTION("a wildcard or port-0 bind with tokens and no --public-address is refused, naming the setting")
    {
        options.server.bindAddress = "0.0.0.0";
        options.server.port = 7777;
        CHECK_FALSE(server::securityConfig(options, security, error));
        CHECK_THAT(error, Catch::StartsWith("--public-address:") && Catch::Contains("--public-address any"));
        options.server.bindAddress = "127.0.0.1";
        options.server.port = 0;
        CHECK_FALSE(server::securityConfig(options, security, error));
        options.publicAddresses = {"any"};
        CHECK(server::securityConfig(options, security, error));
        options.publicAddresses = {"game.example.com:7777"};
        CHECK(server::securityConfig(options, security, error));
        options.publicAddresses = {};
        options.insecure = true;
        options.tokenKey.clear();
        CHECK(server::securityConfig(options, security, error)); // no tokens: nothing to tell apart
    }
    SECTION("bound to one address, the server takes only tokens that name it")
    {
        options.server.bindAddress = "127.0.0.1";
        options.server.port = 7777;
        REQUIRE(server::securityConfig(options, security, error));
        const server::ConnectGate gate(security);
        const auto credentialFor = [&](std::string address)
        {
            protocol::TokenRequest request;
            request.clientId = 9;
            request.serverAddresses = {std::move(address)};
            protocol::ConnectToken token;
            REQUIRE(protocol::makeConnectToken(*security.tokenKey, request,
                                               static_cast<std::uint64_t>(kWallTime), token, error));
            protocol::TokenCredentialFields fields;
            fields.expireTime = token.expireTime;
            std::copy_n(token.nonce.begin(), fields.nonce.size(), fields.nonce.begin());
            fields.sealed = token.sealed;
            return fields;
        };
        const protocol::Address from = protocol::Address::ipv4(127, 0, 0, 1, 5000);
        CHECK_FALSE(gate.check(credentialFor("127.0.0.1:7777"), "main", from, false, kWallTime).reason);
        // Another host on the same port (another server of a fleet that shares a key): refused.
        const auto other =
            gate.check(credentialFor("other-game.example.com:7777"), "main", from, false, kWallTime);
        REQUIRE(other.reason);
        CHECK(*other.reason == protocol::DropReason::TokenRefused);
    }
}

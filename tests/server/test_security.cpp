// Security of the server's front door (protocol version 6): connect tokens, sealed sessions, connection
// rate limits, and the catalogue of bad input. Every case drives a Server through raw datagrams on an
// in-process loopback (no clock, no sockets) and checks three things: the datagram is dropped and counted
// under its reason (in the counters and in /metrics), a debug line names the reason, and nothing else
// changes (sessions, every room's World, ticks, and no reply before a session exists).
#include "polytope/client/client.h"
#include "polytope/protocol/admin_auth.h"
#include "polytope/protocol/seal.h"
#include "polytope/protocol/token.h"
#include "polytope/server/metrics_text.h"
#include "polytope/server/scene_file.h"
#include "polytope/server/server.h"
#include "support/in_process.h"
#include "support/raw_peer.h"

#include <catch2/catch.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <random>

using namespace polytope;
namespace wire = protocol::wire;

namespace
{

using test::kWallTime;                // Unix seconds the Server's wall clock starts at (token expiry)
constexpr std::uint16_t kPort = 7777; // test::kServerAddress's

protocol::TokenKey testKey(std::uint8_t seed)
{
    protocol::TokenKey key{};
    for (std::size_t i = 0; i < key.size(); ++i)
    {
        key[i] = static_cast<std::uint8_t>(seed + 7 * i);
    }
    return key;
}

server::RoomConfig roomConfig(const std::string& name)
{
    server::RoomConfig config;
    config.room = name;
    config.scene = "default";
    config.port = kPort;
    return config;
}

server::SecurityConfig secureConfig()
{
    server::SecurityConfig security;
    security.tokenKey = testKey(1);
    security.listenPort = kPort;
    return security;
}

protocol::ConnectToken makeToken(std::uint64_t clientId, std::vector<std::string> rooms = {},
                                 std::string address = "203.0.113.5:7777", std::uint64_t lifetime = 60,
                                 const protocol::TokenKey& key = testKey(1), double now = kWallTime)
{
    protocol::TokenRequest request;
    request.clientId = clientId;
    request.rooms = std::move(rooms);
    request.serverAddresses = {std::move(address)};
    request.lifetimeSeconds = lifetime;
    protocol::ConnectToken token;
    std::string error;
    const bool made = protocol::makeConnectToken(key, request, static_cast<std::uint64_t>(now), token, error);
    INFO(error);
    REQUIRE(made);
    return token;
}

protocol::TokenCredentialFields credentialOf(const protocol::ConnectToken& token)
{
    protocol::TokenCredentialFields credential;
    credential.expireTime = token.expireTime;
    credential.nonce = token.nonce;
    credential.sealed = token.sealed;
    return credential;
}

/// A server with the rooms "main" and "arena", admin key "admin-secret" and `security`, on `net`, whose
/// wall clock advances with its frames (1/120 s); every datagram it sends is logged.
std::unique_ptr<server::Server> startServer(test::InProcessNetwork& net,
                                            server::SecurityConfig security = secureConfig())
{
    server::ServerConfig config;
    config.rooms = {roomConfig("main"), roomConfig("arena")};
    config.adminKey = "admin-secret";
    config.security = std::move(security);
    net.advanceWallClock = true;
    net.recordServerSends();
    return test::makeServer(net, config);
}

/// The value /metrics shows for a reason: the host's series plus every room's.
std::uint64_t droppedInMetrics(const server::Server& host, protocol::DropReason reason)
{
    const std::string name = protocol::dropReasonName(reason);
    std::uint64_t total = 0;
    const auto sum = [&](const std::string& text, const std::string& series)
    {
        std::size_t at = 0;
        while ((at = text.find(series, at)) != std::string::npos)
        {
            const std::size_t label = text.find("reason=\"" + name + "\"}", at);
            const std::size_t eol = text.find('\n', at);
            if (label != std::string::npos && label < eol)
            {
                total += std::stoull(text.substr(text.rfind(' ', eol) + 1, eol - text.rfind(' ', eol) - 1));
            }
            at = eol;
        }
    };
    sum(server::renderServerPrometheus(host.metrics()), "polytope_host_datagrams_dropped_total{");
    std::vector<server::RoomMetricsView> views;
    for (std::size_t i = 0; i < host.roomCount(); ++i)
    {
        server::RoomMetricsView view;
        view.room = host.room(i).config().room;
        view.metrics = &host.room(i).metrics();
        views.push_back(view);
    }
    sum(server::renderPrometheus(views), "polytope_datagrams_dropped_total{");
    return total;
}

/// Captures log lines (at debug level) for the life of the object.
struct LogCapture
{
    LogCapture()
        : sink(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)), previous(spdlog::default_logger())
    {
        auto logger = std::make_shared<spdlog::logger>("capture", sink);
        logger->set_level(spdlog::level::debug);
        spdlog::set_default_logger(logger);
    }
    ~LogCapture() { spdlog::set_default_logger(previous); }
    bool mentions(const std::string& text) const
    {
        for (const std::string& line : sink->last_formatted())
        {
            if (line.find(text) != std::string::npos)
            {
                return true;
            }
        }
        return false;
    }
    std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink;
    std::shared_ptr<spdlog::logger> previous;
};

/// Checks the three promises for a bad datagram: counted under `reason` (counters and /metrics), logged at
/// debug level, and nothing else changed.
void expectDropped(const server::Server& host, const LogCapture& log, protocol::DropReason reason,
                   std::uint64_t countBefore, std::uint64_t metricsBefore,
                   const test::ServerState& stateBefore, std::uint64_t expected = 1)
{
    INFO("reason " << protocol::dropReasonName(reason));
    std::string counts;
    for (std::size_t i = 0; i < protocol::kDropReasonCount; ++i)
    {
        const auto r = static_cast<protocol::DropReason>(i);
        if (test::droppedCount(host, r) != 0)
        {
            counts += std::string(protocol::dropReasonName(r)) + "=" +
                      std::to_string(test::droppedCount(host, r)) + " ";
        }
    }
    INFO("drops: " << counts);
    CHECK(test::droppedCount(host, reason) == countBefore + expected);
    CHECK(droppedInMetrics(host, reason) == metricsBefore + expected);
    CHECK(log.mentions(protocol::dropReasonName(reason)));
    CHECK(test::serverState(host) == stateBefore);
}

/// Runs `bad` and checks it was dropped under `reason` with no other effect, and that nothing was sent
/// in reply when `silent`.
template <class Fn>
void checkDrop(test::InProcessNetwork& net, protocol::DropReason reason, Fn&& bad, bool silent = true)
{
    const server::Server& host = *net.server;
    const LogCapture log;
    const std::uint64_t before = test::droppedCount(host, reason);
    const std::uint64_t metricsBefore = droppedInMetrics(host, reason);
    const test::ServerState state = test::serverState(host);
    const std::size_t sentBefore = net.serverSent().size();
    bad();
    expectDropped(host, log, reason, before, metricsBefore, state);
    if (silent)
    {
        CHECK(net.serverSent().size() == sentBefore);
    }
}

} // namespace

TEST_CASE("security: a client with a connect token gets a sealed session and decodes snapshots", "[security]")
{
    test::InProcessNetwork net;
    net.order = test::FrameOrder::DeliverThenUpdate; // what the client sent, then what it was sent, then run
    const auto host = startServer(net);
    const protocol::Address clientAddress = protocol::Address::ipv4(10, 0, 0, 2, 40000);
    client::ClientConfig config;
    config.token = makeToken(42);
    client::Client& client = net.addClient(clientAddress, config);
    std::size_t sealedToClient = 0;
    std::size_t plainToClient = 0;
    net.onDeliverToClient = [&](const protocol::Address&, std::span<const std::uint8_t> bytes)
    { ++(protocol::isSealed(bytes) ? sealedToClient : plainToClient); };
    client.connect(net.now());
    std::uint64_t snapshots = 0;
    client::ReceivedSnapshot snapshot;
    for (int frame = 0; frame < 240; ++frame)
    {
        net.frame();
        while (client.popSnapshot(snapshot))
        {
            ++snapshots;
        }
    }
    for (const test::SentDatagram& sent : net.serverSent())
    {
        REQUIRE(sent.to == clientAddress);
    }
    REQUIRE(client.isConnected());
    CHECK(host->isSealed(clientAddress));
    CHECK(host->metrics().sealedSessions == 1);
    CHECK(plainToClient == 1);  // the Challenge: the only plain datagram of a token session
    CHECK(sealedToClient > 30); // ConnectAccepted, catalogue, 2 s of snapshots
    CHECK(snapshots > 30);
    CHECK(client.stats().drops.total() == 0);
    CHECK(test::droppedCount(*host, protocol::DropReason::BadSeal) == 0);
    CHECK(host->metrics().datagramsOpened > 10); // the client's acks and keep-alives, sealed
}

TEST_CASE(
    "security: tokens that are missing, forged, expired, for another server or room, or reused are refused "
    "without a reply",
    "[security]")
{
    test::InProcessNetwork net;
    const auto host = startServer(net);
    protocol::PacketWriter writer;
    const protocol::Address from = protocol::Address::ipv4(10, 0, 0, 3, 40000);

    SECTION("no token")
    {
        checkDrop(net, protocol::DropReason::NoToken,
                  [&] { net.deliver(from, writer.connectRequest({}, "x", "")); });
    }
    SECTION("made with another key")
    {
        const auto credential = credentialOf(makeToken(7, {}, "203.0.113.5:7777", 60, testKey(99)));
        checkDrop(net, protocol::DropReason::BadToken,
                  [&] { net.deliver(from, writer.connectRequest({}, "x", "", &credential)); });
    }
    SECTION("tampered")
    {
        auto credential = credentialOf(makeToken(7));
        credential.sealed[credential.sealed.size() / 2] ^= 0x20;
        checkDrop(net, protocol::DropReason::BadToken,
                  [&] { net.deliver(from, writer.connectRequest({}, "x", "", &credential)); });
        credential = credentialOf(makeToken(7));
        credential.expireTime += 3600; // bound into the ciphertext: a longer life cannot be forged
        checkDrop(net, protocol::DropReason::BadToken,
                  [&] { net.deliver(from, writer.connectRequest({}, "x", "", &credential)); });
    }
    SECTION("expired")
    {
        const auto credential =
            credentialOf(makeToken(7, {}, "203.0.113.5:7777", 30, testKey(1), kWallTime - 100));
        checkDrop(net, protocol::DropReason::TokenExpired,
                  [&] { net.deliver(from, writer.connectRequest({}, "x", "", &credential)); });
    }
    SECTION("for another server's port")
    {
        const auto credential = credentialOf(makeToken(7, {}, "203.0.113.5:7778"));
        checkDrop(net, protocol::DropReason::TokenRefused,
                  [&] { net.deliver(from, writer.connectRequest({}, "x", "", &credential)); });
    }
    SECTION("for another room")
    {
        const auto credential = credentialOf(makeToken(7, {"arena"}));
        checkDrop(net, protocol::DropReason::TokenRefused,
                  [&] { net.deliver(from, writer.connectRequest({}, "x", "main", &credential)); });
        // ... and the room it names is open to it.
        test::RawPeer peer(net, from, makeToken(8, {"arena"}));
        CHECK(peer.join("arena"));
        CHECK(peer.session.room == "arena");
    }
    SECTION("used already, from another address")
    {
        const protocol::ConnectToken token = makeToken(7);
        test::RawPeer first(net, from, token);
        REQUIRE(first.join());
        test::RawPeer thief(net, protocol::Address::ipv4(10, 0, 0, 66, 40000), token);
        checkDrop(
            net, protocol::DropReason::TokenReused,
            [&]
            { net.deliver(thief.address(), thief.writer.connectRequest({}, "x", "", &thief.credential)); });
        // Its client id has a session: another token for the same client is refused while it lasts.
        test::RawPeer twin(net, protocol::Address::ipv4(10, 0, 0, 67, 40000), makeToken(7));
        checkDrop(
            net, protocol::DropReason::TokenReused,
            [&] { net.deliver(twin.address(), twin.writer.connectRequest({}, "x", "", &twin.credential)); });
        // The first session's own address may repeat its handshake (its ConnectAccepted can be lost).
        const std::size_t before = net.serverSent().size();
        net.deliver(from, first.writer.challengeResponse({2, 0, 0, 0}, first.cookie, "peer", "", 0, false,
                                                         &first.credential));
        REQUIRE(net.serverSent().size() == before + 1);
        std::span<const std::uint8_t> plain;
        CHECK(first.channel.open(net.serverSent().back().datagram.view(), plain) ==
              protocol::OpenError::None);
    }
}

TEST_CASE("security: replayed, tampered, plain and spoofed datagrams of a sealed session are dropped",
          "[security]")
{
    test::InProcessNetwork net;
    const auto host = startServer(net);
    test::RawPeer peer(net, protocol::Address::ipv4(10, 0, 0, 4, 40000), makeToken(11));
    REQUIRE(peer.join());
    net.run(0.5);
    const protocol::InputCommand push{host->room(0).tick() + 30, 1, 0, 0, wire::InputKind::Force,
                                      {0.0f, 0.0f, 0.0f}};
    const auto owned = host->room(0).ownedBodies(peer.session.clientId);
    REQUIRE(owned.size() == 1);
    protocol::InputCommand input = push;
    input.bodyId = owned[0].index;
    input.bodyGeneration = owned[0].generation;
    input.vector = {10.0f, 0.0f, 0.0f};
    const std::vector<std::uint8_t> sealed =
        peer.seal(peer.writer.clientInput({++peer.sequence(), 0, 0, 0}, {&input, 1}));
    net.deliver(peer.address(), sealed);
    REQUIRE(host->room(0).metrics().inputsReceived == 1);

    SECTION("replayed")
    {
        checkDrop(net, protocol::DropReason::Replayed, [&] { net.deliver(peer.address(), sealed); });
    }
    SECTION("every bit flipped, one at a time")
    {
        const LogCapture log;
        const std::uint64_t before = test::droppedCount(*host, protocol::DropReason::BadSeal);
        const std::uint64_t metricsBefore = droppedInMetrics(*host, protocol::DropReason::BadSeal);
        const test::ServerState state = test::serverState(*host);
        std::uint64_t flips = 0;
        const std::size_t bytes = peer.seal(peer.writer.keepAlive({++peer.sequence(), 0, 0, 0}, 1.0)).size();
        // Past the magic (still "sealed"). The sequence's top bytes only: a flip low in it could name an
        // older datagram (replayed) instead of a forged one.
        for (std::size_t bit = 8 * 8; bit < bytes * 8; bit += 3)
        {
            std::vector<std::uint8_t> tampered =
                peer.seal(peer.writer.keepAlive({++peer.sequence(), 0, 0, 0}, 1.0));
            REQUIRE(tampered.size() == bytes);
            tampered[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
            net.deliver(peer.address(), tampered);
            ++flips;
        }
        expectDropped(*host, log, protocol::DropReason::BadSeal, before, metricsBefore, state, flips);
    }
    SECTION("plain from the session's address (spoofed source)")
    {
        protocol::PacketWriter forger;
        checkDrop(net, protocol::DropReason::Unsealed,
                  [&] {
                      net.deliver(peer.address(), forger.clientInput({500, 0, 0, 0}, {&input, 1}));
                  });
        checkDrop(net, protocol::DropReason::Unsealed,
                  [&] {
                      net.deliver(peer.address(),
                                  forger.disconnect({501, 0, 0, 0}, wire::DisconnectReason::ClientQuit));
                  });
        CHECK(host->isSealed(peer.address()));
    }
    SECTION("the session's sealed datagram from another address")
    {
        const std::vector<std::uint8_t> fresh =
            peer.seal(peer.writer.keepAlive({++peer.sequence(), 0, 0, 0}, 1.0));
        checkDrop(net, protocol::DropReason::BadSeal,
                  [&] { net.deliver(protocol::Address::ipv4(10, 0, 0, 5, 40000), fresh); });
        // Still fresh for the real session: the spoofed copy moved nothing.
        const std::uint64_t opened = host->metrics().datagramsOpened;
        net.deliver(peer.address(), fresh);
        CHECK(host->metrics().datagramsOpened == opened + 1);
    }
    SECTION("a challenge response with a cookie issued to another address")
    {
        test::RawPeer other(net, protocol::Address::ipv4(10, 0, 0, 6, 40000), makeToken(12));
        checkDrop(net, protocol::DropReason::BadCookie,
                  [&]
                  {
                      net.deliver(other.address(),
                                  other.writer.challengeResponse({1, 0, 0, 0}, peer.cookie, "x", "", 0, false,
                                                                 &other.credential));
                  });
    }
}

TEST_CASE("security: a restarted server never reuses a session's keys", "[security]")
{
    // The same token shown to two server processes (a restart forgets used tokens) opens sessions with
    // different keys: each challenge carries a fresh salt, so nothing sealed by one opens in the other.
    const protocol::ConnectToken token = makeToken(21);
    const protocol::Address address = protocol::Address::ipv4(10, 0, 0, 7, 40000);
    test::InProcessNetwork before;
    const auto firstHost = startServer(before);
    test::RawPeer first(before, address, token);
    REQUIRE(first.join());
    const std::vector<std::uint8_t> fromFirst = first.seal(first.writer.keepAlive({5, 0, 0, 0}, 1.0));
    test::InProcessNetwork after;
    const auto secondHost = startServer(after);
    test::RawPeer second(after, address, token);
    REQUIRE(second.join());
    CHECK(first.cookie != second.cookie);
    const std::vector<std::uint8_t> fromSecond = second.seal(second.writer.keepAlive({5, 0, 0, 0}, 1.0));
    // Same plaintext, same sequence (0 after the handshake in both): different bytes, so different keys.
    CHECK(fromFirst != fromSecond);
    checkDrop(after, protocol::DropReason::BadSeal, [&] { after.deliver(address, fromFirst); });
}

TEST_CASE("security: connection attempts over the per-address and overall limits are refused", "[security]")
{
    server::SecurityConfig security = secureConfig();
    security.attemptsPerSecondPerIp = 10.0;
    security.attemptBurstPerIp = 20.0;
    security.attemptsPerSecond = 100.0;
    security.attemptBurst = 50.0;
    test::InProcessNetwork net;
    const auto host = startServer(net, security);
    protocol::PacketWriter writer;
    const auto credential = credentialOf(makeToken(31));
    // One IP, changing ports: the limit is per IP.
    for (int i = 0; i < 100; ++i)
    {
        net.deliver(protocol::Address::ipv4(10, 0, 1, 1, static_cast<std::uint16_t>(40000 + i)),
                    writer.connectRequest({}, "x", "", &credential));
    }
    CHECK(host->metrics().challengesSent == 20);
    CHECK(test::droppedCount(*host, protocol::DropReason::RateLimited) == 80);
    // Many IPs: the overall burst (50, of which 20 are spent) caps them together.
    for (int i = 0; i < 100; ++i)
    {
        net.deliver(protocol::Address::ipv4(10, 0, 2, static_cast<std::uint8_t>(i), 40000),
                    writer.connectRequest({}, "x", "", &credential));
    }
    CHECK(host->metrics().challengesSent == 50);
    CHECK(test::droppedCount(*host, protocol::DropReason::RateLimited) == 150);
    // One second later each bucket has refilled by its rate.
    net.run(1.0);
    for (int i = 0; i < 30; ++i)
    {
        net.deliver(protocol::Address::ipv4(10, 0, 1, 1, 40000),
                    writer.connectRequest({}, "x", "", &credential));
    }
    CHECK(host->metrics().challengesSent == 60);
    CHECK(host->gate().trackedIps() <= 101);
}

TEST_CASE("security: an --insecure server takes tokenless clients, unencrypted, and still checks tokens",
          "[security]")
{
    server::SecurityConfig security = secureConfig();
    security.insecure = true;
    test::InProcessNetwork net;
    const auto host = startServer(net, security);
    protocol::PacketWriter writer;
    const protocol::Address plain = protocol::Address::ipv4(10, 0, 0, 8, 40000);
    net.deliver(plain, writer.connectRequest({}, "x", ""));
    REQUIRE(net.serverSentTo(plain).size() == 1);
    test::RawPeer peer(net, protocol::Address::ipv4(10, 0, 0, 9, 40000), makeToken(41));
    REQUIRE(peer.join());
    CHECK(host->isSealed(peer.address()));
    CHECK_FALSE(host->isSealed(plain));

    server::SecurityConfig none;
    std::string error;
    CHECK_FALSE(server::validateSecurityConfig(none, error));
    CHECK(error.find("token key") != std::string::npos);
}

TEST_CASE("security: the catalogue of bad input", "[security][catalogue]")
{
    test::InProcessNetwork net;
    const auto host = startServer(net);
    test::RawPeer peer(net, protocol::Address::ipv4(10, 0, 0, 10, 40000), makeToken(51));
    REQUIRE(peer.join());
    net.run(0.25);
    const protocol::Address stranger = protocol::Address::ipv4(192, 0, 2, 1, 50000);
    protocol::PacketWriter writer;
    const auto credential = credentialOf(makeToken(52));
    const std::span<const std::uint8_t> request = writer.connectRequest({}, "x", "", &credential);
    const std::vector<std::uint8_t> valid(request.begin(), request.end());

    SECTION("random bytes")
    {
        std::mt19937_64 rng(5);
        const LogCapture log;
        const test::ServerState state = test::serverState(*host);
        const std::size_t sentBefore = net.serverSent().size();
        const std::uint64_t dropsBefore = host->metrics().drops.total();
        for (int i = 0; i < 2000; ++i)
        {
            std::vector<std::uint8_t> junk(rng() % 1300);
            for (auto& b : junk)
            {
                b = static_cast<std::uint8_t>(rng());
            }
            net.deliver(stranger, junk);
            net.deliver(peer.address(), junk); // a session's address too: never reaches its room
        }
        CHECK(host->metrics().drops.total() == dropsBefore + 4000);
        CHECK(test::serverState(*host) == state);
        CHECK(net.serverSent().size() == sentBefore);
        CHECK(log.mentions("bad_identifier"));
    }
    SECTION("truncated")
    {
        // Below the smallest datagram; cut through the FlatBuffer; a request one byte short of its padding.
        const std::pair<std::size_t, protocol::DropReason> cases[] = {
            {0, protocol::DropReason::TooShort},    {8, protocol::DropReason::TooShort},
            {31, protocol::DropReason::TooShort},   {100, protocol::DropReason::Malformed},
            {300, protocol::DropReason::Malformed}, {valid.size() - 1, protocol::DropReason::TooShort}};
        REQUIRE(valid.size() == protocol::kMinConnectRequestBytes);
        for (const auto& [size, reason] : cases)
        {
            INFO(size);
            checkDrop(net, reason, [&] { net.deliver(stranger, std::span(valid.data(), size)); });
        }
    }
    SECTION("oversized")
    {
        std::vector<std::uint8_t> big(valid);
        big.resize(protocol::kMaxDatagramBytes + 1, 0);
        checkDrop(net, protocol::DropReason::TooLarge, [&] { net.deliver(stranger, big); });
    }
    SECTION("wrong protocol id or version")
    {
        const auto patched = [&](std::uint32_t id, std::uint16_t version)
        {
            flatbuffers::FlatBufferBuilder builder;
            const wire::PacketHeader header(id, version, wire::PacketType::KeepAlive, 0, 1, 0, 0);
            const auto message = wire::CreateKeepAlive(builder, 1.0);
            wire::FinishPacketBuffer(
                builder, wire::CreatePacket(builder, &header, wire::Message::KeepAlive, message.Union()));
            return std::vector<std::uint8_t>(builder.GetBufferPointer(),
                                             builder.GetBufferPointer() + builder.GetSize());
        };
        checkDrop(
            net, protocol::DropReason::WrongProtocol,
            [&] { net.deliver(stranger, patched(protocol::kProtocolId ^ 1u, protocol::kProtocolVersion)); });
        checkDrop(net, protocol::DropReason::WrongVersion,
                  [&] { net.deliver(stranger, patched(protocol::kProtocolId, 3)); });
        // Inside a sealed session too.
        checkDrop(net, protocol::DropReason::WrongVersion,
                  [&] { net.deliver(peer.address(), peer.seal(patched(protocol::kProtocolId, 3))); });
    }
    SECTION("bad FlatBuffers offsets")
    {
        std::vector<std::uint8_t> bad(valid);
        const std::uint32_t outside = static_cast<std::uint32_t>(bad.size() + 64);
        std::memcpy(bad.data(), &outside, 4); // the root offset points past the end
        checkDrop(net, protocol::DropReason::Malformed, [&] { net.deliver(stranger, bad); });
        std::vector<std::uint8_t> inner(valid);
        std::uint32_t root = 0;
        std::memcpy(&root, inner.data(), 4);
        std::int32_t vtable = 0;
        std::memcpy(&vtable, inner.data() + root, 4);
        vtable = -0x7ff0; // the root table's vtable far outside the buffer
        std::memcpy(inner.data() + root, &vtable, 4);
        checkDrop(net, protocol::DropReason::Malformed, [&] { net.deliver(stranger, inner); });
    }
    SECTION("deep nesting in a scene file")
    {
        std::string json = "{\"bodies\": ";
        for (int i = 0; i < 5000; ++i)
        {
            json += '[';
        }
        server::SceneDescription scene;
        std::string error;
        CHECK_FALSE(server::parseSceneJson(json, scene, error));
        CHECK_FALSE(error.empty());
    }
    SECTION("NaN and infinity in inputs")
    {
        for (const float bad :
             {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
        {
            // PacketWriter would write them; decodePacket refuses them on arrival.
            protocol::InputCommand input{host->room(0).tick() + 10, 100, 1, 1, wire::InputKind::Force,
                                         {bad, 0.0f, 0.0f}};
            flatbuffers::FlatBufferBuilder builder;
            const wire::Input in(input.tick, input.sequence, input.bodyId, input.bodyGeneration,
                                 wire::Vec3f(bad, 0.0f, 0.0f), input.kind);
            const auto inputs = builder.CreateVectorOfStructs(&in, 1);
            const wire::PacketHeader header(protocol::kProtocolId, protocol::kProtocolVersion,
                                            wire::PacketType::ClientInput, 0, ++peer.sequence(), 0, 0);
            wire::FinishPacketBuffer(builder,
                                     wire::CreatePacket(builder, &header, wire::Message::ClientInput,
                                                        wire::CreateClientInput(builder, inputs).Union()));
            const std::span<const std::uint8_t> plain(builder.GetBufferPointer(), builder.GetSize());
            checkDrop(net, protocol::DropReason::InvalidField,
                      [&] { net.deliver(peer.address(), peer.seal(plain)); });
        }
    }
    SECTION("ids out of range, and bodies the client does not own")
    {
        const server::Room& room = host->room(0);
        const std::uint64_t notOwned = room.metrics().inputsNotOwned;
        const test::ServerState state = test::serverState(*host);
        const protocol::InputCommand outOfRange{
            room.tick() + 10, 1, 4000000000u, 1, wire::InputKind::Impulse, {0.0f, 50.0f, 0.0f}};
        const protocol::InputCommand someoneElses{room.tick() + 10,   2, 1, 1, wire::InputKind::Impulse,
                                                  {0.0f, 50.0f, 0.0f}};
        peer.sendInputs(std::vector{outOfRange, someoneElses});
        CHECK(room.metrics().inputsNotOwned == notOwned + 2);
        CHECK(test::serverState(*host) == state);
        // And they stay out of the simulation when it runs on.
        const std::uint64_t applied = room.metrics().inputsApplied;
        net.run(0.5);
        CHECK(room.metrics().inputsApplied == applied);
    }
    SECTION("admin commands without the key")
    {
        protocol::AdminCommandFields command;
        command.op = wire::AdminOp::Pause;
        command.nonce = 9;
        command.time = net.wallTime;
        const std::vector<std::uint8_t> bytes = protocol::encodeAdminCommand(command);
        const protocol::AdminMacKey wrongKey = protocol::deriveAdminMacKey("not-the-key");
        const auto mac = protocol::adminMac(wrongKey, bytes);
        const test::ServerState state = test::serverState(*host);
        const std::size_t sentBefore = net.serverSent().size();
        net.deliver(stranger, writer.adminRequest({}, bytes, mac));
        CHECK(host->metrics().adminBadMac == 1);
        CHECK_FALSE(host->room(0).paused());
        CHECK(test::serverState(*host) == state);
        CHECK(net.serverSent().size() == sentBefore);
    }
}

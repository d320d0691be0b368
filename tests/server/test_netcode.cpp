// The protocol end to end in one process: the Server and Client cores over the seeded NetworkSimulator
// (protocol/network_simulator.h) with a test clock, no sleeps. Handshake and cookies, snapshots under loss
// and jitter compared bit for bit with what the server quantized, the shape catalogue and inputs under loss.
#include "polytope/client/client.h"
#include "polytope/physics/scenes.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/server/server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

using namespace polytope;

namespace
{

const server::ConnectCookies::Key kCookieKey{1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                             17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

} // namespace

TEST_CASE("handshake: the server keeps no state before a valid challenge response", "[server][handshake]")
{
    test::InProcessNetwork net;
    net.recordServerSends();
    const auto server = test::makeServer(net, {}, kCookieKey);
    protocol::PacketWriter writer;
    const auto alice = protocol::Address::ipv4(10, 0, 0, 2, 5000);
    const auto mallory = protocol::Address::ipv4(10, 0, 0, 66, 5000);
    server->update(0.0);

    // A request gets a challenge no larger than itself, and nothing else happens.
    const test::AlignedDatagram request(writer.connectRequest({}, "alice"));
    server->receive(alice, request.view(), 1.0);
    REQUIRE(net.serverSent().size() == 1);
    CHECK(net.serverSent()[0].to == alice);
    CHECK(net.serverSent()[0].datagram.size() < request.size());
    CHECK(server->clientCount() == 0);
    const test::AlignedDatagram challenge = net.serverSent()[0].datagram;
    const protocol::DecodeResult decoded = protocol::decodePacket(challenge.view());
    REQUIRE(decoded.ok());
    REQUIRE(decoded.type() == protocol::wire::PacketType::Challenge);
    const auto* cookieVector = decoded.packet->message_as_Challenge()->cookie();
    std::vector<std::uint8_t> cookie(cookieVector->begin(), cookieVector->end());
    net.clearServerSent();

    SECTION("forged cookies are refused and counted")
    {
        auto forged = cookie;
        forged[10] ^= 1;
        server->receive(alice, test::AlignedDatagram(writer.challengeResponse({}, forged, "alice")).view(),
                        1.5);
        std::vector<std::uint8_t> zeros(protocol::kCookieBytes, 0);
        server->receive(alice, test::AlignedDatagram(writer.challengeResponse({}, zeros, "alice")).view(),
                        1.5);
        CHECK(server->metrics().cookiesForged == 2);
        CHECK(server->metrics().drops[protocol::DropReason::BadCookie] == 2);
        CHECK(server->clientCount() == 0);
        CHECK(net.serverSent().empty());
    }
    SECTION("a cookie echoed from another address or port is refused")
    {
        server->receive(mallory,
                        test::AlignedDatagram(writer.challengeResponse({}, cookie, "mallory")).view(), 1.5);
        auto otherPort = alice;
        otherPort.port = 5001;
        server->receive(otherPort,
                        test::AlignedDatagram(writer.challengeResponse({}, cookie, "alice")).view(), 1.5);
        CHECK(server->metrics().cookiesForged == 2);
        CHECK(server->clientCount() == 0);
        CHECK(net.serverSent().empty());
    }
    SECTION("an expired cookie is refused, a fresh one accepted")
    {
        server->receive(alice, test::AlignedDatagram(writer.challengeResponse({}, cookie, "alice")).view(),
                        1.0 + 6.5);
        CHECK(server->metrics().cookiesExpired == 1);
        CHECK(server->clientCount() == 0);
        CHECK(net.serverSent().empty());
        server->receive(alice, test::AlignedDatagram(writer.challengeResponse({}, cookie, "alice")).view(),
                        1.0 + 4.0);
        CHECK(server->clientCount() == 1);
        REQUIRE(net.serverSent().size() == 1);
        const test::AlignedDatagram& accepted = net.serverSent()[0].datagram;
        const protocol::DecodeResult r = protocol::decodePacket(accepted.view());
        REQUIRE(r.ok());
        REQUIRE(r.type() == protocol::wire::PacketType::ConnectAccepted);
        CHECK(accepted.size() < request.size());
        const protocol::SessionParameters p =
            protocol::readSessionParameters(*r.packet->message_as_ConnectAccepted());
        CHECK(p.clientId == 1);
        CHECK(p.maxBaselineAgeTicks == server->room(0).config().maxBaselineAgeTicks);
        CHECK(p.position.stepsPerMetre == server->room(0).config().quantization.stepsPerMetre);
        // The same response again (the accept may have been lost) gets the same session.
        server->receive(alice, test::AlignedDatagram(writer.challengeResponse({}, cookie, "alice")).view(),
                        1.0 + 4.1);
        CHECK(server->clientCount() == 1);
        CHECK(server->room(0).metrics().clientsAccepted == 1);
    }
    SECTION("a cookie from another server process (another key) is refused")
    {
        server::ConnectCookies other(2.0);
        const auto foreign = other.issue(alice, 1.0);
        server->receive(alice, test::AlignedDatagram(writer.challengeResponse({}, foreign, "alice")).view(),
                        1.5);
        CHECK(server->metrics().cookiesForged == 1);
        CHECK(server->clientCount() == 0);
    }
}

TEST_CASE("a ConnectRequest of another version gets ConnectDenied (Version), in its version, no larger",
          "[server][handshake]")
{
    test::InProcessNetwork net;
    net.recordServerSends();
    const auto server = test::makeServer(net, {}, kCookieKey);
    protocol::PacketWriter writer;
    server->update(0.0);
    // Rewrites the version in a datagram's header struct (protocol id u32, then version u16, little-endian).
    const auto withVersion = [](std::span<const std::uint8_t> bytes, std::uint16_t version)
    {
        std::vector<std::uint8_t> copy(bytes.begin(), bytes.end());
        const auto* header =
            reinterpret_cast<const std::uint8_t*>(protocol::wire::GetPacket(bytes.data())->header());
        const std::size_t at = static_cast<std::size_t>(header - bytes.data()) + 4;
        copy[at] = static_cast<std::uint8_t>(version & 0xFF);
        copy[at + 1] = static_cast<std::uint8_t>(version >> 8);
        return test::AlignedDatagram(copy);
    };

    std::uint64_t denied = 0;
    for (const std::uint16_t version : {std::uint16_t{4}, std::uint16_t{5}, std::uint16_t{7}})
    {
        INFO("version " << version);
        const auto from = protocol::Address::ipv4(10, 0, 1, static_cast<std::uint8_t>(version), 5000);
        const test::AlignedDatagram request = withVersion(writer.connectRequest({}, "old client"), version);
        net.clearServerSent();
        server->receive(from, request.view(), 1.0);
        REQUIRE(net.serverSent().size() == 1);
        const test::SentDatagram& reply = net.serverSent()[0];
        CHECK(reply.to == from);
        CHECK(reply.datagram.size() <= request.size()); // no amplification
        CHECK(reply.datagram.size() == 64);
        // Not a datagram of our version (a peer of our version drops it) but one of the requester's: its
        // header says so.
        CHECK(reply.datagram.decode().reason == protocol::DropReason::WrongVersion);
        const protocol::wire::Packet* packet = protocol::wire::GetPacket(reply.datagram.view().data());
        CHECK(packet->header()->protocol_id() == protocol::kProtocolId);
        CHECK(packet->header()->version() == version);
        REQUIRE(packet->header()->type() == protocol::wire::PacketType::ConnectDenied);
        REQUIRE(packet->message_as_ConnectDenied() != nullptr);
        CHECK(packet->message_as_ConnectDenied()->reason() == protocol::wire::DenyReason::Version);
        ++denied;
    }
    CHECK(server->metrics().versionDenied == denied);
    CHECK(server->metrics().drops[protocol::DropReason::WrongVersion] == denied);
    CHECK(server->clientCount() == 0);

    // An unpadded request of another version, or another message of another version: no answer at all.
    {
        flatbuffers::FlatBufferBuilder fbb;
        const protocol::wire::PacketHeader header(protocol::kProtocolId, 4,
                                                  protocol::wire::PacketType::ConnectRequest, 0, 0, 0, 0);
        const auto message = protocol::wire::CreateConnectRequest(fbb, fbb.CreateString("short"));
        protocol::wire::FinishPacketBuffer(
            fbb, protocol::wire::CreatePacket(fbb, &header, protocol::wire::Message::ConnectRequest,
                                              message.Union()));
        const test::AlignedDatagram small(
            std::span<const std::uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()));
        REQUIRE(small.size() < protocol::kMinConnectRequestBytes);
        net.clearServerSent();
        const auto from = protocol::Address::ipv4(10, 0, 2, 1, 5000);
        server->receive(from, small.view(), 2.0);
        server->receive(from, withVersion(writer.keepAlive({}, 1.0), 4).view(), 2.0);
        CHECK(net.serverSent().empty());
        CHECK(server->metrics().versionDenied == denied);
    }

    // A flood from one (spoofed) address gets no more denials than the per-address rate limit allows.
    net.clearServerSent();
    const auto victim = protocol::Address::ipv4(10, 0, 3, 1, 5000);
    const test::AlignedDatagram old = withVersion(writer.connectRequest({}, "flood"), 4);
    for (int i = 0; i < 400; ++i)
    {
        server->receive(victim, old.view(), 3.0);
    }
    CHECK(net.serverSent().size() <= 128);
    CHECK(net.serverSent().size() >= 32);
    CHECK(server->metrics().drops[protocol::DropReason::RateLimited] >= 272);
}

TEST_CASE("a client told that its version is refused says so", "[server][handshake]")
{
    client::Client c({}, [](std::span<const std::uint8_t>) {});
    c.connect(0.0);
    protocol::PacketWriter writer;
    c.receive(test::AlignedDatagram(writer.connectDenied({}, protocol::wire::DenyReason::Version)).view(),
              0.1);
    CHECK(c.state() == client::ClientState::ConnectionDenied);
    REQUIRE(c.denyReason().has_value());
    CHECK(*c.denyReason() == protocol::wire::DenyReason::Version);
}

TEST_CASE("a client at 5% loss and 100 +- 30 ms jitter decodes only correct snapshots", "[server][netcode]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.07;
    conditions.jitterSeconds = 0.06;
    conditions.lossProbability = 0.05;
    server::RoomConfig config;
    config.snapshotRateHz = 60;
    test::InProcessNetwork net;
    net.simulate(conditions, 42);
    const auto server = test::makeServer(net, config, kCookieKey);
    client::Client& c = net.addClient(2);
    c.connect(0.0);

    std::size_t compared = 0, mismatched = 0;
    std::uint64_t lastTick = 0;
    bool increasing = true;
    std::set<std::uint32_t> moved;
    std::map<std::uint32_t, float> firstHeight;
    while (net.now() < 10.0)
    {
        net.frame();
        client::ReceivedSnapshot s;
        while (c.popSnapshot(s))
        {
            increasing = increasing && s.tick > lastTick;
            lastTick = s.tick;
            const protocol::SnapshotFrame* truth = server->room(0).history().find(s.tick);
            REQUIRE(truth != nullptr);
            const bool same = s.quantized.size() == truth->bodies.size() &&
                              std::equal(s.quantized.begin(), s.quantized.end(), truth->bodies.begin());
            mismatched += same ? 0 : 1;
            ++compared;
            for (const client::SnapshotBody& b : s.bodies)
            {
                if (!firstHeight.count(b.id))
                {
                    firstHeight[b.id] = b.position[1];
                }
                else if (b.position[1] < firstHeight[b.id] - 0.5f)
                {
                    moved.insert(b.id);
                }
            }
        }
    }
    REQUIRE(c.isConnected());
    CHECK(mismatched == 0);
    CHECK(increasing);
    CHECK(compared > 300); // of ~590 snapshot ticks; lost slices and idle skips account for the rest
    CHECK(moved.size() >= 20);
    const auto& errors = c.stats().sliceErrors;
    CHECK(std::accumulate(errors.begin(), errors.end(), std::uint64_t{0}) == 0);
    // Full snapshots only until the first one is acknowledged, about one round trip (~0.2 s, 12 ticks) later.
    CHECK(server->room(0).metrics().fullSnapshots < 30);
    CHECK(server->room(0).metrics().snapshotEncodeErrors == 0);
    INFO("server sent " << server->room(0).metrics().snapshotsSent << " snapshots, skipped "
                        << server->room(0).metrics().snapshotsSkipped);
}

TEST_CASE("the shape catalogue arrives reliably under loss and follows removals and new bodies",
          "[server][netcode]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    conditions.jitterSeconds = 0.02;
    conditions.lossProbability = 0.25;
    test::InProcessNetwork net;
    net.simulate(conditions, 9);
    const auto server = test::makeServer(net, {}, kCookieKey);
    client::Client& c = net.addClient(2);
    c.connect(0.0);
    net.runUntil(4.0);
    REQUIRE(c.isConnected());

    auto serverCatalogue = [&]
    {
        std::map<std::uint32_t, std::pair<std::uint32_t, protocol::wire::ShapeKind>> out;
        server->room(0).world().forEachBody(
            [&](const physics::BodyState& b) {
                out[b.id.index] = {b.id.generation, static_cast<protocol::wire::ShapeKind>(b.shape.type)};
            });
        return out;
    };
    auto clientCatalogue = [&]
    {
        std::map<std::uint32_t, std::pair<std::uint32_t, protocol::wire::ShapeKind>> out;
        for (const auto& [id, e] : c.catalogue())
        {
            out[id] = {e.generation, e.shape};
        }
        return out;
    };
    CHECK(clientCatalogue() == serverCatalogue());
    CHECK(server->room(0).metrics().catalogueEntriesResent > 0); // 25% loss: some had to be resent

    // Remove three bodies and add a sphere (which reuses a freed slot with a new generation).
    std::vector<physics::BodyId> victims;
    server->room(0).world().forEachBody(
        [&](const physics::BodyState& b)
        {
            if (b.type == physics::BodyType::Dynamic && victims.size() < 3)
            {
                victims.push_back(b.id);
            }
        });
    REQUIRE(victims.size() == 3);
    for (const physics::BodyId id : victims)
    {
        REQUIRE(server->room(0).world().destroyBody(id) == physics::WorldStatus::Ok);
    }
    physics::BodyDesc sphere;
    sphere.shape = physics::Shape::makeSphere(0.75f);
    sphere.transform.p = {0.0f, 8.0f, 0.0f};
    const physics::BodyId added = server->room(0).world().createBody(sphere).id;
    REQUIRE_FALSE(added.isNull());
    net.runUntil(8.0);
    CHECK(clientCatalogue() == serverCatalogue());
    REQUIRE(c.catalogue().count(added.index) == 1);
    CHECK(c.catalogue().at(added.index).extent[0] == 0.75f);
    client::ReceivedSnapshot s, latest;
    while (c.popSnapshot(s))
    {
        latest = std::move(s);
    }
    REQUIRE(latest.tick > 0);
    CHECK(latest.bodies.size() == server->room(0).world().bodyCount());
    for (const client::SnapshotBody& b : latest.bodies)
    {
        for (const physics::BodyId id : victims)
        {
            CHECK_FALSE((b.id == id.index && b.generation == id.generation));
        }
    }
}

TEST_CASE("inputs under loss arrive exactly once and are applied at their tick", "[server][netcode]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    conditions.jitterSeconds = 0.03;
    conditions.lossProbability = 0.2;
    test::InProcessNetwork net;
    net.simulate(conditions, 5);
    const auto server = test::makeServer(net, {}, kCookieKey);
    std::vector<server::AppliedInput> applied;
    server->room(0).setInputObserver([&](const server::AppliedInput& a) { applied.push_back(a); });
    client::Client& c = net.addClient(2);
    c.connect(0.0);
    net.runUntil(1.0);
    REQUIRE(c.isConnected());

    // A client may push only what it owns: the ball the default scene gives each player.
    const std::vector<physics::BodyId> targets = server->room(0).ownedBodies(c.clientId());
    REQUIRE(targets.size() == 1);
    std::map<std::uint32_t, protocol::InputCommand> sentInputs;
    int frame = 0;
    while (net.now() < 6.0)
    {
        if (frame % 6 == 0 && sentInputs.size() < 120)
        {
            // 0.5 s ahead of the newest snapshot: enough for a few resends at 20% loss.
            const std::uint64_t newest = c.receiver() ? c.receiver()->newestComplete() : 0;
            protocol::InputCommand in;
            in.tick = newest + 30;
            const physics::BodyId target = targets[sentInputs.size() % targets.size()];
            in.bodyId = target.index;
            in.bodyGeneration = target.generation;
            in.kind = static_cast<protocol::wire::InputKind>(sentInputs.size() % 4);
            in.vector = {0.5f, 1.0f, -0.25f};
            const std::uint32_t sequence = c.sendInput(in);
            REQUIRE(sequence != 0);
            in.sequence = sequence;
            sentInputs[sequence] = in;
        }
        net.frame();
        ++frame;
    }
    net.runUntil(8.0);
    std::map<std::uint32_t, int> times;
    for (const server::AppliedInput& a : applied)
    {
        ++times[a.input.sequence];
        REQUIRE(sentInputs.count(a.input.sequence) == 1);
        CHECK(a.input == sentInputs[a.input.sequence]);
        CHECK(a.appliedTick == a.input.tick);
        CHECK(a.status == physics::WorldStatus::Ok);
    }
    CHECK(times.size() == sentInputs.size());
    for (const auto& [sequence, count] : times)
    {
        CHECK(count == 1);
    }
    const server::RoomMetrics& m = server->room(0).metrics();
    CHECK(m.inputsLate == 0);
    CHECK(m.inputsApplied == sentInputs.size());
    CHECK(m.inputsDuplicate > 0); // resends of inputs whose acknowledgement was lost or not yet back
    CHECK(c.pendingInputs() == 0);
    CHECK(c.stats().inputsAcknowledged == sentInputs.size());
}

TEST_CASE("a client's bandwidth budget holds and its own body goes first", "[server][netcode][budget]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.04;
    conditions.jitterSeconds = 0.01;
    conditions.lossProbability = 0.02;
    server::RoomConfig config;
    config.snapshotRateHz = 30;
    config.maxClientKbps = 48; // 6000 bytes a second: far below what 300 falling boxes need
    config.buildScene = [](physics::World& world) { return physics::buildPile(world, 300); };
    config.spawnPlayer = [](physics::World& world, std::uint32_t, const physics::Vec3*, physics::BodyId& out)
    {
        physics::BodyDesc desc;
        desc.shape = physics::Shape::makeSphere(0.4f);
        desc.transform.p = {30.0f, 0.4f, 0.0f};
        desc.linearVelocity = {0.0f, 0.0f, 2.0f}; // rolls on: it changes every snapshot
        const physics::CreateBodyResult r = world.createBody(desc);
        out = r.id;
        return r.status == physics::WorldStatus::Ok;
    };
    test::InProcessNetwork net;
    net.simulate(conditions, 9);
    const auto server = test::makeServer(net, config, kCookieKey);
    client::Client& c = net.addClient(2);
    c.connect(0.0);
    net.runUntil(1.0);
    REQUIRE(c.isConnected());
    const physics::BodyId own = server->room(0).ownedBodies(c.clientId()).at(0);

    const std::uint64_t bytesAtStart = server->room(0).metrics().bytesOut;
    const double start = net.now();
    std::size_t compared = 0, mismatched = 0, ownFresh = 0, lagging = 0;
    while (net.now() < 9.0)
    {
        net.frame();
        client::ReceivedSnapshot s;
        while (c.popSnapshot(s))
        {
            // The client decodes exactly what it was sent ...
            const protocol::SnapshotFrame* sent = server->room(0).sentFrame(c.clientId(), s.tick);
            REQUIRE(sent != nullptr);
            mismatched +=
                std::equal(s.quantized.begin(), s.quantized.end(), sent->bodies.begin(), sent->bodies.end())
                    ? 0
                    : 1;
            ++compared;
            // ... where its own body is always current, while others may lag behind the truth.
            const protocol::SnapshotFrame* truth = server->room(0).history().find(s.tick);
            REQUIRE(truth != nullptr);
            for (const protocol::QuantizedBody& b : s.quantized)
            {
                const auto t = std::lower_bound(truth->bodies.begin(), truth->bodies.end(), b.id,
                                                [](const protocol::QuantizedBody& q, std::uint32_t id)
                                                { return q.id < id; });
                const bool current = t != truth->bodies.end() && *t == b;
                if (b.id == own.index)
                {
                    ownFresh += current ? 1 : 0;
                }
                else
                {
                    lagging += current ? 0 : 1;
                }
            }
        }
    }
    const double seconds = net.now() - start;
    const double kbps =
        static_cast<double>(server->room(0).metrics().bytesOut - bytesAtStart) * 8.0 / 1000.0 / seconds;
    INFO("sent " << kbps << " kbps to a client with a 48 kbps budget; " << compared << " snapshots, "
                 << server->room(0).metrics().bodiesDeferred << " bodies deferred");
    CHECK(kbps <= 48.0 * 1.05);
    CHECK(kbps >= 30.0); // and it uses what it is given
    CHECK(compared > 100);
    CHECK(mismatched == 0);
    CHECK(ownFresh == compared);
    CHECK(lagging > 0); // the budget really did bind
    CHECK(server->room(0).metrics().budgetLimitedSnapshots > 0);
}

TEST_CASE("the server's state equals a local replay of the inputs it applied, bit for bit",
          "[server][netcode]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    conditions.jitterSeconds = 0.02;
    conditions.lossProbability = 0.1;
    test::InProcessNetwork net;
    net.simulate(conditions, 21);
    const auto server = test::makeServer(net, {}, kCookieKey);
    client::Client& c = net.addClient(2);
    c.connect(0.0);
    net.runUntil(1.0);
    REQUIRE(c.isConnected());
    const physics::BodyId own = server->room(0).ownedBodies(c.clientId()).at(0);

    // The world as it was before the first tick recorded, and every input applied from then on.
    std::vector<std::uint8_t> startState;
    std::uint64_t startTick = 0;
    server->room(0).setPreStepHook(
        [&](std::uint64_t tick)
        {
            if (startState.empty())
            {
                server->room(0).world().saveState(startState);
                startTick = tick;
            }
        });
    std::vector<server::AppliedInput> applied;
    server->room(0).setInputObserver([&](const server::AppliedInput& a) { applied.push_back(a); });
    int frame = 0;
    while (net.now() < 5.0)
    {
        if (frame % 4 == 0)
        {
            protocol::InputCommand in;
            in.tick = (c.receiver() ? c.receiver()->newestComplete() : 0) + 20;
            in.bodyId = own.index;
            in.bodyGeneration = own.generation;
            in.kind = static_cast<protocol::wire::InputKind>(frame / 4 % 4);
            in.vector = {0.3f * static_cast<float>(frame % 7) - 1.0f, 2.0f, -0.5f};
            c.sendInput(in);
        }
        net.frame();
        ++frame;
    }
    REQUIRE(!startState.empty());
    REQUIRE(applied.size() > 50);

    // Replay: the same scene's hulls, the saved state, the same World calls at the same ticks.
    physics::World replay;
    REQUIRE(physics::findScene("default")->build(replay));
    REQUIRE(replay.restoreState(startState) == physics::RestoreStatus::Ok);
    std::size_t next = 0;
    const float dt = 1.0f / 60.0f;
    for (std::uint64_t tick = startTick; tick <= server->room(0).tick(); ++tick)
    {
        for (; next < applied.size() && applied[next].appliedTick == tick; ++next)
        {
            const protocol::InputCommand& in = applied[next].input;
            const physics::BodyId id{in.bodyId, in.bodyGeneration};
            const physics::Vec3 v{in.vector[0], in.vector[1], in.vector[2]};
            physics::BodyState body;
            REQUIRE(replay.getBody(id, body));
            switch (in.kind)
            {
            case protocol::wire::InputKind::Force:
                replay.applyCentralForce(id, v);
                break;
            case protocol::wire::InputKind::Impulse:
                replay.applyImpulse(id, v, body.centerOfMass);
                break;
            case protocol::wire::InputKind::Torque:
                replay.applyTorque(id, v);
                break;
            case protocol::wire::InputKind::TargetVelocity:
                replay.setVelocity(id, v, body.angularVelocity);
                break;
            default:
                FAIL("unexpected input kind");
            }
        }
        replay.step(dt);
    }
    CHECK(next == applied.size());
    CHECK(replay.stateHash() == server->room(0).world().stateHash());
}

// Rooms, owned bodies, Spawn/Remove inputs, input rate limits, admin commands and checkpoints, driven
// through raw datagrams on an in-process loopback (no clock, no sockets).
#include "polytope/protocol/admin_auth.h"
#include "polytope/server/checkpoint.h"
#include "polytope/server/server.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

using namespace polytope;
namespace wire = protocol::wire;

namespace
{

/// One received datagram, copied to aligned storage.
struct Received
{
    explicit Received(std::span<const std::uint8_t> bytes) : storage(bytes.size() / 8 + 1), size(bytes.size())
    {
        std::memcpy(storage.data(), bytes.data(), bytes.size());
    }
    std::span<const std::uint8_t> view() const { return {reinterpret_cast<const std::uint8_t*>(storage.data()), size}; }
    const wire::Packet* packet() const
    {
        const protocol::DecodeResult r = protocol::decodePacket(view());
        return r.packet;
    }
    std::vector<std::uint64_t> storage;
    std::size_t size;
};

constexpr double kWallTime = 1.8e9; // a fixed Unix time for the admin freshness check

struct Loopback
{
    explicit Loopback(std::vector<server::RoomConfig> rooms, std::string adminKey = "secret")
    {
        server::ServerConfig config;
        config.rooms = std::move(rooms);
        config.adminKey = std::move(adminKey);
        config.security.insecure = true; // tokenless joins; test_security.cpp covers tokens
        config.wallClock = [this] { return wallTime; };
        std::string error;
        host = server::Server::create(
            config, [this](const protocol::Address& to, std::span<const std::uint8_t> d) { inbox[to].emplace_back(d); },
            error);
        INFO(error);
        REQUIRE(host);
    }

    void deliver(const protocol::Address& from, std::span<const std::uint8_t> datagram)
    {
        Received aligned(datagram);
        host->receive(from, aligned.view(), now);
    }

    /// Runs the host for `seconds` in 1/120 s frames.
    void run(double seconds)
    {
        const double end = now + seconds;
        while (now < end)
        {
            now += 1.0 / 120.0;
            host->update(now);
        }
    }

    /// Handshake into `room` from `from`; returns the accepted session (or the deny reason).
    std::optional<protocol::SessionParameters> join(const protocol::Address& from, std::string_view room,
                                                    std::uint16_t rateHz = 0, wire::DenyReason* denied = nullptr,
                                                    bool spectator = false)
    {
        protocol::PacketWriter writer;
        inbox[from].clear();
        deliver(from, writer.connectRequest({}, "tester", room));
        if (inbox[from].empty())
        {
            return std::nullopt;
        }
        const wire::Packet* challenge = inbox[from].back().packet();
        REQUIRE(challenge);
        if (challenge->message_type() == wire::Message::ConnectDenied)
        {
            if (denied)
            {
                *denied = challenge->message_as_ConnectDenied()->reason();
            }
            return std::nullopt;
        }
        REQUIRE(challenge->message_type() == wire::Message::Challenge);
        const auto* cookie = challenge->message_as_Challenge()->cookie();
        const std::vector<std::uint8_t> cookieBytes(cookie->begin(), cookie->end());
        inbox[from].clear();
        deliver(from, writer.challengeResponse({1, 0, 0, 0}, cookieBytes, "tester", room, rateHz, spectator));
        REQUIRE(!inbox[from].empty());
        const wire::Packet* reply = inbox[from].back().packet();
        REQUIRE(reply);
        if (reply->message_type() != wire::Message::ConnectAccepted)
        {
            return std::nullopt;
        }
        return protocol::readSessionParameters(*reply->message_as_ConnectAccepted());
    }

    void sendInputs(const protocol::Address& from, std::span<const protocol::InputCommand> inputs)
    {
        protocol::PacketWriter writer;
        deliver(from, writer.clientInput({++sequence, 0, 0, 0}, inputs));
    }

    /// Sends an admin command signed with `key`; returns the reply, if any.
    std::optional<std::pair<bool, std::string>> admin(protocol::AdminCommandFields command,
                                                      std::string_view key = "secret")
    {
        if (command.time == 0.0)
        {
            command.time = wallTime;
        }
        if (command.nonce == 0)
        {
            command.nonce = ++nonce;
        }
        const std::vector<std::uint8_t> bytes = protocol::encodeAdminCommand(command);
        const protocol::AdminMac mac = protocol::adminMac(protocol::deriveAdminMacKey(key), bytes);
        protocol::PacketWriter writer;
        const auto datagram = writer.adminRequest({}, bytes, mac);
        CHECK(datagram.size() >= protocol::kMinAdminRequestBytes);
        inbox[kAdmin].clear();
        deliver(kAdmin, datagram);
        if (inbox[kAdmin].empty())
        {
            return std::nullopt;
        }
        const wire::Packet* reply = inbox[kAdmin].back().packet();
        REQUIRE(reply);
        REQUIRE(reply->message_type() == wire::Message::AdminReply);
        CHECK(inbox[kAdmin].back().size <= protocol::kMinAdminRequestBytes); // no amplification
        const auto* r = reply->message_as_AdminReply();
        CHECK(r->nonce() == command.nonce);
        return std::make_pair(r->ok(), r->message() ? r->message()->str() : std::string());
    }

    /// The catalogue entries `to` received so far (latest per id).
    std::map<std::uint32_t, protocol::CatalogueEntry> catalogue(const protocol::Address& to)
    {
        std::map<std::uint32_t, protocol::CatalogueEntry> out;
        std::vector<protocol::CatalogueEntry> entries;
        for (const Received& d : inbox[to])
        {
            const wire::Packet* p = d.packet();
            if (p && p->message_type() == wire::Message::Catalogue)
            {
                protocol::readCatalogue(*p->message_as_Catalogue(), entries);
                for (const protocol::CatalogueEntry& e : entries)
                {
                    out[e.id] = e;
                }
            }
        }
        return out;
    }

    inline static const protocol::Address kAdmin = protocol::Address::ipv4(10, 9, 9, 9, 4000);
    double now = 0.0;
    double wallTime = kWallTime;
    std::uint16_t sequence = 1;
    std::uint64_t nonce = 100;
    std::unique_ptr<server::Server> host;
    std::map<protocol::Address, std::vector<Received>> inbox;
};

server::RoomConfig roomConfig(const std::string& name, const std::string& scene)
{
    server::RoomConfig config;
    config.room = name;
    config.scene = scene;
    return config;
}

const protocol::Address kAlice = protocol::Address::ipv4(10, 0, 0, 2, 5000);
const protocol::Address kBob = protocol::Address::ipv4(10, 0, 0, 3, 5000);

protocol::InputCommand inputFor(physics::BodyId id, wire::InputKind kind, std::uint32_t sequence, std::uint64_t tick)
{
    protocol::InputCommand in;
    in.tick = tick;
    in.sequence = sequence;
    in.bodyId = id.index;
    in.bodyGeneration = id.generation;
    in.kind = kind;
    in.vector = kind == wire::InputKind::Remove ? std::array<float, 3>{} : std::array<float, 3>{0.0f, 2.0f, 0.0f};
    return in;
}

} // namespace

TEST_CASE("clients join rooms by name and each room runs its own world", "[server][rooms]")
{
    Loopback net({roomConfig("lobby", "default"), roomConfig("arena", "stack10")});
    wire::DenyReason reason = wire::DenyReason::ServerFull;
    const auto alice = net.join(kAlice, "arena");
    REQUIRE(alice);
    CHECK(alice->room == "arena");
    CHECK(alice->scene == "stack10");
    const auto bob = net.join(kBob, ""); // the first room
    REQUIRE(bob);
    CHECK(bob->room == "lobby");
    CHECK_FALSE(net.join(protocol::Address::ipv4(10, 0, 0, 4, 5000), "nowhere", 0, &reason));
    CHECK(reason == wire::DenyReason::UnknownRoom);
    CHECK(net.host->metrics().unknownRoom == 1);
    CHECK(net.host->findRoom("arena")->clientCount() == 1);
    CHECK(net.host->findRoom("lobby")->clientCount() == 1);

    const std::uint32_t lobbyBodies = net.host->findRoom("lobby")->world().bodyCount();
    net.run(0.5);
    CHECK(net.host->findRoom("arena")->tick() >= 29);
    CHECK(net.host->findRoom("lobby")->world().bodyCount() == lobbyBodies);
    // Datagrams from Alice reach the arena only.
    protocol::PacketWriter writer;
    const std::uint64_t arenaIn = net.host->findRoom("arena")->metrics().datagramsIn;
    net.deliver(kAlice, writer.keepAlive({7, 0, 0, 0}, 1.0));
    CHECK(net.host->findRoom("arena")->metrics().datagramsIn == arenaIn + 1);
}

TEST_CASE("per-client snapshot rates are granted at or below what was asked", "[server][rooms]")
{
    server::RoomConfig config = roomConfig("main", "default");
    config.snapshotRateHz = 20;
    config.fullSnapshotResendSeconds = 0.0; // nothing acknowledges here: count every snapshot tick
    Loopback net({config});
    const auto fast = net.join(kAlice, "main", 60);
    const auto slow = net.join(kBob, "main", 7);
    REQUIRE(fast);
    REQUIRE(slow);
    CHECK(fast->snapshotRateHz == 60);
    CHECK(slow->snapshotRateHz == 6); // every ceil(60 / 7) = 9 ticks: 6.7 Hz, announced rounded down
    net.inbox.clear();
    net.run(1.0);
    auto countSnapshotTicks = [&](const protocol::Address& a)
    {
        std::set<std::uint64_t> ticks;
        for (const Received& d : net.inbox[a])
        {
            const wire::Packet* p = d.packet();
            if (p && p->message_type() == wire::Message::Snapshot)
            {
                ticks.insert(p->message_as_Snapshot()->tick());
            }
        }
        return ticks.size();
    };
    // Nothing acknowledges, so every snapshot is full and none is skipped as identical.
    CHECK(countSnapshotTicks(kAlice) >= 55);
    CHECK(countSnapshotTicks(kBob) <= 8);
    CHECK(countSnapshotTicks(kBob) >= 5);
}

TEST_CASE("clients own their bodies and act only on them", "[server][ownership]")
{
    server::RoomConfig config = roomConfig("main", "default");
    config.allowClientSpawn = true;
    config.maxBodiesPerClient = 2;
    Loopback net({config});
    server::Room& room = *net.host->findRoom("main");
    const std::uint32_t before = room.world().bodyCount();
    const auto alice = net.join(kAlice, "main");
    const auto bob = net.join(kBob, "main");
    REQUIRE(alice);
    REQUIRE(bob);
    CHECK(room.world().bodyCount() == before + 2);
    const auto aliceBodies = room.ownedBodies(alice->clientId);
    const auto bobBodies = room.ownedBodies(bob->clientId);
    REQUIRE(aliceBodies.size() == 1);
    REQUIRE(bobBodies.size() == 1);

    net.run(0.2);
    // The catalogue marks each client's own body, and only to that client.
    const auto aliceCatalogue = net.catalogue(kAlice);
    const auto bobCatalogue = net.catalogue(kBob);
    REQUIRE(aliceCatalogue.count(aliceBodies[0].index));
    REQUIRE(bobCatalogue.count(aliceBodies[0].index));
    CHECK(aliceCatalogue.at(aliceBodies[0].index).owned);
    CHECK_FALSE(bobCatalogue.at(aliceBodies[0].index).owned);
    CHECK(bobCatalogue.at(bobBodies[0].index).owned);

    const std::uint64_t tick = room.tick() + 2;
    const protocol::InputCommand mine = inputFor(aliceBodies[0], wire::InputKind::TargetVelocity, 1, tick);
    const protocol::InputCommand theirs = inputFor(bobBodies[0], wire::InputKind::TargetVelocity, 2, tick);
    net.sendInputs(kAlice, std::array{mine, theirs});
    CHECK(room.metrics().inputsNotOwned == 1);
    net.run(0.1);
    CHECK(room.metrics().inputsApplied == 1);

    // Spawn up to the limit, then Remove.
    protocol::InputCommand spawn;
    spawn.tick = room.tick() + 1;
    spawn.sequence = 3;
    spawn.kind = wire::InputKind::Spawn;
    spawn.bodyGeneration = 0;
    spawn.vector = {3.0f, 4.0f, 5.0f};
    protocol::InputCommand spawnAgain = spawn;
    spawnAgain.sequence = 4;
    net.sendInputs(kAlice, std::array{spawn, spawnAgain});
    net.run(0.1);
    auto owned = room.ownedBodies(alice->clientId);
    CHECK(owned.size() == 2); // the limit refused the third
    CHECK(room.metrics().bodiesSpawned == 3);
    net.sendInputs(kAlice, std::array{inputFor(owned[1], wire::InputKind::Remove, 5, room.tick() + 1)});
    net.run(0.1);
    CHECK(room.ownedBodies(alice->clientId).size() == 1);
    CHECK(room.metrics().bodiesRemoved == 1);

    // A spectator owns nothing.
    const protocol::Address carol = protocol::Address::ipv4(10, 0, 0, 5, 5000);
    const auto spectator = net.join(carol, "main", 0, nullptr, true);
    REQUIRE(spectator);
    CHECK(room.ownedBodies(spectator->clientId).empty());

    // Bob's Remove of Alice's body is refused; leaving removes a client's bodies.
    net.sendInputs(kBob, std::array{inputFor(aliceBodies[0], wire::InputKind::Remove, 1, room.tick() + 1)});
    CHECK(room.metrics().inputsNotOwned == 2);
    protocol::PacketWriter writer;
    net.deliver(kBob, writer.disconnect({50, 0, 0, 0}, wire::DisconnectReason::ClientQuit));
    CHECK(room.clientCount() == 2);
    CHECK(room.world().bodyCount() == before + 1);
}

TEST_CASE("spawning is refused where the room does not allow it", "[server][ownership]")
{
    Loopback net({roomConfig("main", "default")});
    server::Room& room = *net.host->findRoom("main");
    REQUIRE(net.join(kAlice, "main"));
    protocol::InputCommand spawn;
    spawn.tick = 5;
    spawn.sequence = 1;
    spawn.kind = wire::InputKind::Spawn;
    spawn.bodyGeneration = 0;
    net.sendInputs(kAlice, std::array{spawn});
    CHECK(room.metrics().inputsNotOwned == 1);
    net.run(0.2);
    CHECK(room.metrics().bodiesSpawned == 1); // only the join's
}

TEST_CASE("inputs beyond a client's rate are refused and counted", "[server][ownership]")
{
    server::RoomConfig config = roomConfig("main", "default");
    config.maxInputsPerSecond = 10.0;
    config.maxInputBurst = 5.0;
    Loopback net({config});
    server::Room& room = *net.host->findRoom("main");
    const auto alice = net.join(kAlice, "main");
    REQUIRE(alice);
    const physics::BodyId body = room.ownedBodies(alice->clientId).at(0);
    std::vector<protocol::InputCommand> burst;
    for (std::uint32_t s = 1; s <= 20; ++s)
    {
        burst.push_back(inputFor(body, wire::InputKind::Impulse, s, 10));
    }
    net.sendInputs(kAlice, burst);
    CHECK(room.metrics().inputsRateLimited == 15);
    // One second later ten more tokens (capped at the burst of five).
    net.run(1.0);
    std::vector<protocol::InputCommand> more;
    for (std::uint32_t s = 21; s <= 30; ++s)
    {
        more.push_back(inputFor(body, wire::InputKind::Impulse, s, room.tick() + 1));
    }
    net.sendInputs(kAlice, more);
    CHECK(room.metrics().inputsRateLimited == 20);
}

TEST_CASE("admin commands need the key, a fresh time and a new nonce", "[server][admin]")
{
    Loopback net({roomConfig("main", "default"), roomConfig("other", "stack10")});
    server::Room& room = *net.host->findRoom("main");
    protocol::AdminCommandFields pause;
    pause.op = wire::AdminOp::Pause;

    CHECK_FALSE(net.admin(pause, "wrong key")); // no reply at all
    CHECK(net.host->metrics().adminBadMac == 1);
    CHECK_FALSE(room.paused());

    protocol::AdminCommandFields stale = pause;
    stale.time = kWallTime - 120.0;
    const auto staleReply = net.admin(stale);
    REQUIRE(staleReply);
    CHECK_FALSE(staleReply->first);
    CHECK(net.host->metrics().adminStale == 1);

    pause.nonce = 4242;
    const auto ok = net.admin(pause);
    REQUIRE(ok);
    CHECK(ok->first);
    CHECK(room.paused());
    CHECK_FALSE(net.host->findRoom("other")->paused());
    CHECK_FALSE(net.admin(pause)); // the same nonce again: replay, no reply
    CHECK(net.host->metrics().adminReplayed == 1);

    protocol::AdminCommandFields unknown;
    unknown.room = "nowhere";
    const auto unknownReply = net.admin(unknown);
    REQUIRE(unknownReply);
    CHECK_FALSE(unknownReply->first);

    // A garbage command with a valid mac is refused as malformed.
    const std::vector<std::uint8_t> garbage(40, 0xab);
    const protocol::AdminMac mac = protocol::adminMac(protocol::deriveAdminMacKey("secret"), garbage);
    protocol::PacketWriter writer;
    net.deliver(Loopback::kAdmin, writer.adminRequest({}, garbage, mac));
    CHECK(net.host->metrics().adminMalformed == 1);
}

TEST_CASE("admin commands are refused when no key is configured", "[server][admin]")
{
    Loopback net({roomConfig("main", "default")}, "");
    protocol::AdminCommandFields pause;
    pause.op = wire::AdminOp::Pause;
    CHECK_FALSE(net.admin(pause, ""));
    CHECK(net.host->metrics().adminDisabled == 1);
    CHECK_FALSE(net.host->findRoom("main")->paused());
}

TEST_CASE("admin pause, step, resume, gravity, time scale, reset, load and kick", "[server][admin]")
{
    Loopback net({roomConfig("main", "default")});
    server::Room& room = *net.host->findRoom("main");
    const auto alice = net.join(kAlice, "main");
    REQUIRE(alice);
    net.run(0.5);
    auto command = [&](wire::AdminOp op)
    {
        protocol::AdminCommandFields c;
        c.op = op;
        return c;
    };
    REQUIRE(net.admin(command(wire::AdminOp::Pause))->first);
    const std::uint64_t pausedAt = room.tick();
    net.run(1.0);
    CHECK(room.tick() == pausedAt);
    CHECK(room.clientCount() == 1);
    // Paused rooms keep their clients' connections alive.
    CHECK(room.metrics().datagramsOut > 0);

    auto step = command(wire::AdminOp::Step);
    step.count = 7;
    REQUIRE(net.admin(step)->first);
    net.run(0.5);
    CHECK(room.tick() == pausedAt + 7);
    step.count = 0;
    CHECK_FALSE(net.admin(step)->first);

    REQUIRE(net.admin(command(wire::AdminOp::Resume))->first);
    auto stepRunning = command(wire::AdminOp::Step);
    stepRunning.count = 3;
    CHECK_FALSE(net.admin(stepRunning)->first); // only while paused

    auto gravity = command(wire::AdminOp::SetGravity);
    gravity.vector = {0.0f, -1.62f, 0.0f};
    REQUIRE(net.admin(gravity)->first);
    CHECK(room.world().config().gravity.y == Approx(-1.62f));
    gravity.vector = {0.0f, -5000.0f, 0.0f};
    CHECK_FALSE(net.admin(gravity)->first);

    auto scale = command(wire::AdminOp::SetTimeScale);
    scale.value = 0.5f;
    REQUIRE(net.admin(scale)->first);
    const std::uint64_t t0 = room.tick();
    net.run(1.0);
    CHECK(room.tick() - t0 == Approx(30).margin(2)); // half speed: 30 ticks a second
    scale.value = 100.0f;
    CHECK_FALSE(net.admin(scale)->first);

    auto load = command(wire::AdminOp::LoadScene);
    load.text = "no-such-scene";
    const auto refused = net.admin(load);
    REQUIRE(refused);
    CHECK_FALSE(refused->first);
    CHECK(room.config().scene == "default");
    load.text = "stack10";
    REQUIRE(net.admin(load)->first);
    CHECK(room.config().scene == "stack10");
    CHECK(room.world().bodyCount() == 12); // ground, ten cubes and Alice's respawned ball
    CHECK(room.ownedBodies(alice->clientId).size() == 1);

    REQUIRE(net.admin(command(wire::AdminOp::Reset))->first);
    CHECK(room.world().bodyCount() == 12);

    auto kick = command(wire::AdminOp::Kick);
    kick.count = 999;
    CHECK_FALSE(net.admin(kick)->first);
    kick.count = alice->clientId;
    REQUIRE(net.admin(kick)->first);
    CHECK(room.clientCount() == 0);
    CHECK(room.metrics().clientsKicked == 1);
    CHECK(room.world().bodyCount() == 11);
}

TEST_CASE("a checkpoint restores every room bit-identically", "[server][checkpoint]")
{
    std::vector<server::RoomConfig> rooms{roomConfig("a", "mixed"), roomConfig("b", "pile1000")};
    Loopback original(rooms);
    original.run(1.0);
    std::vector<std::uint8_t> state;
    original.host->saveState(state);
    const std::vector<std::uint8_t> file = server::frameCheckpoint(state);

    Loopback restored(rooms);
    std::vector<std::uint8_t> payload;
    std::string error;
    REQUIRE(server::unframeCheckpoint(file, payload, error));
    REQUIRE(restored.host->restoreState(payload, error));
    CHECK(restored.host->room(0).tick() == original.host->room(0).tick());
    restored.now = original.now;
    original.run(1.0);
    restored.run(1.0);
    for (std::size_t i = 0; i < 2; ++i)
    {
        CHECK(restored.host->room(i).tick() == original.host->room(i).tick());
        CHECK(restored.host->room(i).world().stateHash() == original.host->room(i).world().stateHash());
    }
}

TEST_CASE("corrupt, truncated and foreign checkpoints are refused whole", "[server][checkpoint]")
{
    std::vector<server::RoomConfig> rooms{roomConfig("a", "stack10")};
    Loopback original(rooms);
    original.run(0.5);
    std::vector<std::uint8_t> state;
    original.host->saveState(state);
    const std::vector<std::uint8_t> file = server::frameCheckpoint(state);
    std::vector<std::uint8_t> payload;
    std::string error;

    std::vector<std::uint8_t> flipped = file;
    flipped[flipped.size() / 2] ^= 0x10;
    CHECK_FALSE(server::unframeCheckpoint(flipped, payload, error));
    CHECK(error.find("hash") != std::string::npos);
    for (const std::size_t cut : {std::size_t{0}, std::size_t{10}, file.size() / 2, file.size() - 1})
    {
        CHECK_FALSE(server::unframeCheckpoint(std::span(file).first(cut), payload, error));
    }
    std::vector<std::uint8_t> magic = file;
    magic[0] = 'X';
    CHECK_FALSE(server::unframeCheckpoint(magic, payload, error));

    // A well-framed payload for other rooms, or with a damaged world inside, leaves the server unchanged.
    Loopback other({roomConfig("b", "stack10")});
    const std::uint64_t hashBefore = other.host->room(0).world().stateHash();
    CHECK_FALSE(other.host->restoreState(state, error));
    CHECK(error.find("room") != std::string::npos);
    std::vector<std::uint8_t> damaged = state;
    damaged.resize(damaged.size() - 3);
    Loopback same(rooms);
    CHECK_FALSE(same.host->restoreState(damaged, error));
    CHECK(same.host->room(0).world().stateHash() != original.host->room(0).world().stateHash());
    CHECK(other.host->room(0).world().stateHash() == hashBefore);
}

TEST_CASE("checkpoint files are written atomically and read back", "[server][checkpoint]")
{
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "polytope_checkpoint_test";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "world.ckpt").string();
    const std::vector<std::uint8_t> payload{1, 2, 3, 4, 5, 6, 7, 8, 9};
    std::string error;
    REQUIRE(server::writeCheckpointFile(path, payload, error));
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    std::vector<std::uint8_t> back;
    REQUIRE(server::readCheckpointFile(path, back, error));
    CHECK(back == payload);
    CHECK_FALSE(server::readCheckpointFile((dir / "missing.ckpt").string(), back, error));
    CHECK(error.find("missing.ckpt") != std::string::npos);
    CHECK_FALSE(server::writeCheckpointFile((dir / "no-such-dir" / "x.ckpt").string(), payload, error));
    std::filesystem::remove_all(dir);
}

namespace
{
std::string arenaPath()
{
    return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "scenes" / "arena.json")
        .string();
}
} // namespace

TEST_CASE("a room runs a scene file with its player template and rules", "[server][rooms][scenefile]")
{
    Loopback net({roomConfig("arena", arenaPath())});
    server::Room& room = *net.host->findRoom("arena");
    const std::uint32_t before = room.world().bodyCount();
    const auto alice = net.join(kAlice, "arena");
    REQUIRE(alice);
    const auto owned = room.ownedBodies(alice->clientId);
    REQUIRE(owned.size() == 1);
    physics::BodyState body;
    REQUIRE(room.world().getBody(owned[0], body));
    CHECK(body.shape.type == physics::ShapeType::Capsule); // the file's template
    CHECK(body.transform.p.x == Approx(-2.0f));             // at its first spawn point
    CHECK(body.transform.p.z == Approx(-2.0f));
    CHECK(room.world().bodyCount() == before + 1);

    // The file allows client spawns.
    protocol::InputCommand spawn;
    spawn.tick = room.tick() + 1;
    spawn.sequence = 1;
    spawn.kind = wire::InputKind::Spawn;
    spawn.bodyGeneration = 0;
    spawn.vector = {0.0f, 3.0f, 0.0f};
    net.sendInputs(kAlice, std::array{spawn});
    net.run(0.1);
    CHECK(room.ownedBodies(alice->clientId).size() == 2);
    CHECK(room.metrics().inputsNotOwned == 0);
}

TEST_CASE("admin load takes a scene file, and a bad one leaves the old scene running", "[server][admin][scenefile]")
{
    Loopback net({roomConfig("main", "stack10")});
    server::Room& room = *net.host->findRoom("main");
    protocol::AdminCommandFields load;
    load.op = wire::AdminOp::LoadScene;
    load.text = "/no/such/scene.json";
    const auto refused = net.admin(load);
    REQUIRE(refused);
    CHECK_FALSE(refused->first);
    CHECK(refused->second.find("/no/such/scene.json") != std::string::npos);
    CHECK(room.config().scene == "stack10");
    CHECK(room.world().bodyCount() == 11);
    load.text = arenaPath();
    const auto loaded = net.admin(load);
    REQUIRE(loaded);
    CHECK(loaded->first);
    CHECK(room.config().scene == arenaPath());
    CHECK(room.world().bodyCount() > 5);
    CHECK(room.config().allowClientSpawn);
}

TEST_CASE("clients with the same baseline share one encoding of a snapshot", "[server][rooms]")
{
    server::RoomConfig config = roomConfig("main", "pile1000");
    config.snapshotRateHz = 20;
    config.fullSnapshotResendSeconds = 0.0;
    Loopback net({config});
    server::Room& room = *net.host->findRoom("main");
    for (std::uint8_t host = 2; host < 10; ++host)
    {
        REQUIRE(net.join(protocol::Address::ipv4(10, 0, 0, host, 5000), "main", 0, nullptr, true));
    }
    net.run(1.0);
    // Nobody acknowledges: every client wants the same full snapshot at each snapshot tick.
    const server::RoomMetrics& m = room.metrics();
    CHECK(m.snapshotsSent >= 8 * 19);
    CHECK(m.snapshotEncodes * 8 <= m.snapshotsSent + 8);
}

TEST_CASE("a client that holds nothing gets a full snapshot only every so often", "[server][rooms]")
{
    server::RoomConfig config = roomConfig("main", "pile1000");
    config.snapshotRateHz = 60;
    config.fullSnapshotResendSeconds = 0.2;
    Loopback net({config});
    REQUIRE(net.join(kAlice, "main", 60, nullptr, true));
    net.run(1.0);
    const server::RoomMetrics& m = net.host->findRoom("main")->metrics();
    CHECK(m.fullSnapshots >= 4);
    CHECK(m.fullSnapshots <= 6); // not 60
}

// Rooms, owned bodies, Spawn/Remove inputs, input rate limits, admin commands and checkpoints, driven
// through raw datagrams on an in-process loopback (no clock, no sockets).
#include "polytope/protocol/admin_auth.h"
#include "polytope/server/checkpoint.h"
#include "polytope/server/server.h"
#include "support/in_process.h"
#include "support/raw_peer.h"
#include "support/temp_files.h"

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

/// A server with these rooms (tokenless joins; test_security.cpp covers tokens) and this admin key, on
/// `net`, whose wall clock stands still at test::kWallTime. Runs in frames of 1/120 s.
std::unique_ptr<server::Server> startServer(test::InProcessNetwork& net,
                                            std::vector<server::RoomConfig> rooms,
                                            std::string adminKey = "secret")
{
    server::ServerConfig config;
    config.rooms = std::move(rooms);
    config.adminKey = std::move(adminKey);
    config.security.insecure = true;
    return test::makeServer(net, config);
}

server::RoomConfig roomConfig(const std::string& name, const std::string& scene)
{
    server::RoomConfig config;
    config.room = name;
    config.scene = scene;
    return config;
}

const protocol::Address kAlice = protocol::Address::ipv4(10, 0, 0, 2, 5000);
const protocol::Address kBob = protocol::Address::ipv4(10, 0, 0, 3, 5000);
const protocol::Address kAdmin = protocol::Address::ipv4(10, 9, 9, 9, 4000);
constexpr std::string_view kAdminKey = "secret";

protocol::InputCommand inputFor(physics::BodyId id, wire::InputKind kind, std::uint32_t sequence,
                                std::uint64_t tick)
{
    protocol::InputCommand in;
    in.tick = tick;
    in.sequence = sequence;
    in.bodyId = id.index;
    in.bodyGeneration = id.generation;
    in.kind = kind;
    in.vector =
        kind == wire::InputKind::Remove ? std::array<float, 3>{} : std::array<float, 3>{0.0f, 2.0f, 0.0f};
    return in;
}

} // namespace

TEST_CASE("clients join rooms by name and each room runs its own world", "[server][rooms]")
{
    test::InProcessNetwork net;
    const auto host = startServer(net, {roomConfig("lobby", "default"), roomConfig("arena", "stack10")});
    wire::DenyReason reason = wire::DenyReason::ServerFull;
    test::RawPeer alicePeer(net, kAlice);
    const auto alice = alicePeer.join("arena");
    REQUIRE(alice);
    CHECK(alice->room == "arena");
    CHECK(alice->scene == "stack10");
    const auto bob = test::RawPeer(net, kBob).join(""); // the first room
    REQUIRE(bob);
    CHECK(bob->room == "lobby");
    CHECK_FALSE(test::RawPeer(net, protocol::Address::ipv4(10, 0, 0, 4, 5000)).join("nowhere", 0, &reason));
    CHECK(reason == wire::DenyReason::UnknownRoom);
    CHECK(host->metrics().unknownRoom == 1);
    CHECK(host->findRoom("arena")->clientCount() == 1);
    CHECK(host->findRoom("lobby")->clientCount() == 1);

    const std::uint32_t lobbyBodies = host->findRoom("lobby")->world().bodyCount();
    net.run(0.5);
    CHECK(host->findRoom("arena")->tick() >= 29);
    CHECK(host->findRoom("lobby")->world().bodyCount() == lobbyBodies);
    // Datagrams from Alice reach the arena only.
    protocol::PacketWriter writer;
    const std::uint64_t arenaIn = host->findRoom("arena")->metrics().datagramsIn;
    alicePeer.send(writer.keepAlive({7, 0, 0, 0}, 1.0));
    CHECK(host->findRoom("arena")->metrics().datagramsIn == arenaIn + 1);
}

TEST_CASE("per-client snapshot rates are granted at or below what was asked", "[server][rooms]")
{
    server::RoomConfig config = roomConfig("main", "default");
    config.snapshotRateHz = 20;
    config.fullSnapshotResendSeconds = 0.0; // nothing acknowledges here: count every snapshot tick
    test::InProcessNetwork net;
    const auto host = startServer(net, {config});
    test::RawPeer alicePeer(net, kAlice);
    test::RawPeer bobPeer(net, kBob);
    const auto fast = alicePeer.join("main", 60);
    const auto slow = bobPeer.join("main", 7);
    REQUIRE(fast);
    REQUIRE(slow);
    CHECK(fast->snapshotRateHz == 60);
    CHECK(slow->snapshotRateHz == 6); // every ceil(60 / 7) = 9 ticks: 6.7 Hz, announced rounded down
    net.clearInboxes();
    net.run(1.0);
    auto countSnapshotTicks = [&](test::RawPeer& peer)
    {
        std::set<std::uint64_t> ticks;
        for (const test::AlignedDatagram& d : peer.received())
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
    CHECK(countSnapshotTicks(alicePeer) >= 55);
    CHECK(countSnapshotTicks(bobPeer) <= 8);
    CHECK(countSnapshotTicks(bobPeer) >= 5);
}

TEST_CASE("clients own their bodies and act only on them", "[server][ownership]")
{
    server::RoomConfig config = roomConfig("main", "default");
    config.allowClientSpawn = true;
    config.maxBodiesPerClient = 2;
    test::InProcessNetwork net;
    const auto host = startServer(net, {config});
    server::Room& room = *host->findRoom("main");
    const std::uint32_t before = room.world().bodyCount();
    test::RawPeer alicePeer(net, kAlice);
    test::RawPeer bobPeer(net, kBob);
    bobPeer.shareSequenceWith(alicePeer); // one header sequence for both, as when they shared a writer
    const auto alice = alicePeer.join("main");
    const auto bob = bobPeer.join("main");
    REQUIRE(alice);
    REQUIRE(bob);
    CHECK(room.world().bodyCount() == before + 2);
    const auto aliceBodies = room.ownedBodies(alice->clientId);
    const auto bobBodies = room.ownedBodies(bob->clientId);
    REQUIRE(aliceBodies.size() == 1);
    REQUIRE(bobBodies.size() == 1);

    net.run(0.2);
    // The catalogue marks each client's own body, and only to that client.
    const auto aliceCatalogue = alicePeer.catalogue();
    const auto bobCatalogue = bobPeer.catalogue();
    REQUIRE(aliceCatalogue.count(aliceBodies[0].index));
    REQUIRE(bobCatalogue.count(aliceBodies[0].index));
    CHECK(aliceCatalogue.at(aliceBodies[0].index).owned);
    CHECK_FALSE(bobCatalogue.at(aliceBodies[0].index).owned);
    CHECK(bobCatalogue.at(bobBodies[0].index).owned);

    const std::uint64_t tick = room.tick() + 2;
    const protocol::InputCommand mine = inputFor(aliceBodies[0], wire::InputKind::TargetVelocity, 1, tick);
    const protocol::InputCommand theirs = inputFor(bobBodies[0], wire::InputKind::TargetVelocity, 2, tick);
    alicePeer.sendInputs(std::array{mine, theirs});
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
    alicePeer.sendInputs(std::array{spawn, spawnAgain});
    net.run(0.1);
    auto owned = room.ownedBodies(alice->clientId);
    CHECK(owned.size() == 2); // the limit refused the third
    CHECK(room.metrics().bodiesSpawned == 3);
    alicePeer.sendInputs(std::array{inputFor(owned[1], wire::InputKind::Remove, 5, room.tick() + 1)});
    net.run(0.1);
    CHECK(room.ownedBodies(alice->clientId).size() == 1);
    CHECK(room.metrics().bodiesRemoved == 1);

    // A spectator owns nothing.
    const protocol::Address carol = protocol::Address::ipv4(10, 0, 0, 5, 5000);
    const auto spectator = test::RawPeer(net, carol).join("main", 0, nullptr, true);
    REQUIRE(spectator);
    CHECK(room.ownedBodies(spectator->clientId).empty());

    // Bob's Remove of Alice's body is refused; leaving removes a client's bodies.
    bobPeer.sendInputs(std::array{inputFor(aliceBodies[0], wire::InputKind::Remove, 1, room.tick() + 1)});
    CHECK(room.metrics().inputsNotOwned == 2);
    protocol::PacketWriter writer;
    bobPeer.send(writer.disconnect({50, 0, 0, 0}, wire::DisconnectReason::ClientQuit));
    CHECK(room.clientCount() == 2);
    CHECK(room.world().bodyCount() == before + 1);
}

TEST_CASE("spawning is refused where the room does not allow it", "[server][ownership]")
{
    test::InProcessNetwork net;
    const auto host = startServer(net, {roomConfig("main", "default")});
    server::Room& room = *host->findRoom("main");
    test::RawPeer alicePeer(net, kAlice);
    REQUIRE(alicePeer.join("main"));
    protocol::InputCommand spawn;
    spawn.tick = 5;
    spawn.sequence = 1;
    spawn.kind = wire::InputKind::Spawn;
    spawn.bodyGeneration = 0;
    alicePeer.sendInputs(std::array{spawn});
    CHECK(room.metrics().inputsNotOwned == 1);
    net.run(0.2);
    CHECK(room.metrics().bodiesSpawned == 1); // only the join's
}

TEST_CASE("inputs beyond a client's rate are refused and counted", "[server][ownership]")
{
    server::RoomConfig config = roomConfig("main", "default");
    config.maxInputsPerSecond = 10.0;
    config.maxInputBurst = 5.0;
    test::InProcessNetwork net;
    const auto host = startServer(net, {config});
    server::Room& room = *host->findRoom("main");
    test::RawPeer alicePeer(net, kAlice);
    const auto alice = alicePeer.join("main");
    REQUIRE(alice);
    const physics::BodyId body = room.ownedBodies(alice->clientId).at(0);
    std::vector<protocol::InputCommand> burst;
    for (std::uint32_t s = 1; s <= 20; ++s)
    {
        burst.push_back(inputFor(body, wire::InputKind::Impulse, s, 10));
    }
    alicePeer.sendInputs(burst);
    CHECK(room.metrics().inputsRateLimited == 15);
    // One second later ten more tokens (capped at the burst of five).
    net.run(1.0);
    std::vector<protocol::InputCommand> more;
    for (std::uint32_t s = 21; s <= 30; ++s)
    {
        more.push_back(inputFor(body, wire::InputKind::Impulse, s, room.tick() + 1));
    }
    alicePeer.sendInputs(more);
    CHECK(room.metrics().inputsRateLimited == 20);
}

TEST_CASE("admin commands need the key, a fresh time and a new nonce", "[server][admin]")
{
    test::InProcessNetwork net;
    const auto host = startServer(net, {roomConfig("main", "default"), roomConfig("other", "stack10")});
    server::Room& room = *host->findRoom("main");
    test::RawPeer console(net, kAdmin);
    protocol::AdminCommandFields pause;
    pause.op = wire::AdminOp::Pause;

    CHECK_FALSE(console.sendAdmin(pause, "wrong key")); // no reply at all
    CHECK(host->metrics().adminBadMac == 1);
    CHECK_FALSE(room.paused());

    protocol::AdminCommandFields stale = pause;
    stale.time = test::kWallTime - 120.0;
    const auto staleReply = console.sendAdmin(stale, kAdminKey);
    REQUIRE(staleReply);
    CHECK_FALSE(staleReply->first);
    CHECK(host->metrics().adminStale == 1);

    pause.nonce = 4242;
    const auto ok = console.sendAdmin(pause, kAdminKey);
    REQUIRE(ok);
    CHECK(ok->first);
    CHECK(room.paused());
    CHECK_FALSE(host->findRoom("other")->paused());
    CHECK_FALSE(console.sendAdmin(pause, kAdminKey)); // the same nonce again: replay, no reply
    CHECK(host->metrics().adminReplayed == 1);

    protocol::AdminCommandFields unknown;
    unknown.room = "nowhere";
    const auto unknownReply = console.sendAdmin(unknown, kAdminKey);
    REQUIRE(unknownReply);
    CHECK_FALSE(unknownReply->first);

    // A garbage command with a valid mac is refused as malformed.
    const std::vector<std::uint8_t> garbage(40, 0xab);
    const protocol::AdminMac mac = protocol::adminMac(protocol::deriveAdminMacKey("secret"), garbage);
    protocol::PacketWriter writer;
    console.send(writer.adminRequest({}, garbage, mac));
    CHECK(host->metrics().adminMalformed == 1);
}

TEST_CASE("admin commands are refused when no key is configured", "[server][admin]")
{
    test::InProcessNetwork net;
    const auto host = startServer(net, {roomConfig("main", "default")}, "");
    test::RawPeer console(net, kAdmin);
    protocol::AdminCommandFields pause;
    pause.op = wire::AdminOp::Pause;
    CHECK_FALSE(console.sendAdmin(pause, ""));
    CHECK(host->metrics().adminDisabled == 1);
    CHECK_FALSE(host->findRoom("main")->paused());
}

TEST_CASE("admin pause, step, resume, gravity, time scale, reset, load and kick", "[server][admin]")
{
    test::InProcessNetwork net;
    const auto host = startServer(net, {roomConfig("main", "default")});
    server::Room& room = *host->findRoom("main");
    test::RawPeer console(net, kAdmin);
    const auto alice = test::RawPeer(net, kAlice).join("main");
    REQUIRE(alice);
    net.run(0.5);
    auto command = [&](wire::AdminOp op)
    {
        protocol::AdminCommandFields c;
        c.op = op;
        return c;
    };
    REQUIRE(console.sendAdmin(command(wire::AdminOp::Pause), kAdminKey)->first);
    const std::uint64_t pausedAt = room.tick();
    net.run(1.0);
    CHECK(room.tick() == pausedAt);
    CHECK(room.clientCount() == 1);
    // Paused rooms keep their clients' connections alive.
    CHECK(room.metrics().datagramsOut > 0);

    auto step = command(wire::AdminOp::Step);
    step.count = 7;
    REQUIRE(console.sendAdmin(step, kAdminKey)->first);
    net.run(0.5);
    CHECK(room.tick() == pausedAt + 7);
    step.count = 0;
    CHECK_FALSE(console.sendAdmin(step, kAdminKey)->first);

    REQUIRE(console.sendAdmin(command(wire::AdminOp::Resume), kAdminKey)->first);
    auto stepRunning = command(wire::AdminOp::Step);
    stepRunning.count = 3;
    CHECK_FALSE(console.sendAdmin(stepRunning, kAdminKey)->first); // only while paused

    auto gravity = command(wire::AdminOp::SetGravity);
    gravity.vector = {0.0f, -1.62f, 0.0f};
    REQUIRE(console.sendAdmin(gravity, kAdminKey)->first);
    CHECK(room.world().config().gravity.y == Approx(-1.62f));
    gravity.vector = {0.0f, -5000.0f, 0.0f};
    CHECK_FALSE(console.sendAdmin(gravity, kAdminKey)->first);

    auto scale = command(wire::AdminOp::SetTimeScale);
    scale.value = 0.5f;
    REQUIRE(console.sendAdmin(scale, kAdminKey)->first);
    const std::uint64_t t0 = room.tick();
    net.run(1.0);
    CHECK(room.tick() - t0 == Approx(30).margin(2)); // half speed: 30 ticks a second
    scale.value = 100.0f;
    CHECK_FALSE(console.sendAdmin(scale, kAdminKey)->first);

    auto load = command(wire::AdminOp::LoadScene);
    load.text = "no-such-scene";
    const auto refused = console.sendAdmin(load, kAdminKey);
    REQUIRE(refused);
    CHECK_FALSE(refused->first);
    CHECK(room.config().scene == "default");
    load.text = "stack10";
    REQUIRE(console.sendAdmin(load, kAdminKey)->first);
    CHECK(room.config().scene == "stack10");
    CHECK(room.world().bodyCount() == 12); // ground, ten cubes and Alice's respawned ball
    CHECK(room.ownedBodies(alice->clientId).size() == 1);

    REQUIRE(console.sendAdmin(command(wire::AdminOp::Reset), kAdminKey)->first);
    CHECK(room.world().bodyCount() == 12);

    auto kick = command(wire::AdminOp::Kick);
    kick.count = 999;
    CHECK_FALSE(console.sendAdmin(kick, kAdminKey)->first);
    kick.count = alice->clientId;
    REQUIRE(console.sendAdmin(kick, kAdminKey)->first);
    CHECK(room.clientCount() == 0);
    CHECK(room.metrics().clientsKicked == 1);
    CHECK(room.world().bodyCount() == 11);
}

TEST_CASE("a checkpoint restores every room bit-identically", "[server][checkpoint]")
{
    std::vector<server::RoomConfig> rooms{roomConfig("a", "mixed"), roomConfig("b", "pile1000")};
    test::InProcessNetwork originalNet;
    const auto original = startServer(originalNet, rooms);
    originalNet.run(1.0);
    std::vector<std::uint8_t> state;
    original->saveState(state);
    const std::vector<std::uint8_t> file = server::frameCheckpoint(state);

    test::InProcessNetwork restoredNet;
    const auto restored = startServer(restoredNet, rooms);
    std::vector<std::uint8_t> payload;
    std::string error;
    REQUIRE(server::unframeCheckpoint(file, payload, error));
    REQUIRE(restored->restoreState(payload, error));
    CHECK(restored->room(0).tick() == original->room(0).tick());
    restoredNet.setNow(originalNet.now());
    originalNet.run(1.0);
    restoredNet.run(1.0);
    for (std::size_t i = 0; i < 2; ++i)
    {
        CHECK(restored->room(i).tick() == original->room(i).tick());
        CHECK(restored->room(i).world().stateHash() == original->room(i).world().stateHash());
    }
}

TEST_CASE("corrupt, truncated and foreign checkpoints are refused whole", "[server][checkpoint]")
{
    std::vector<server::RoomConfig> rooms{roomConfig("a", "stack10")};
    test::InProcessNetwork originalNet;
    const auto original = startServer(originalNet, rooms);
    originalNet.run(0.5);
    std::vector<std::uint8_t> state;
    original->saveState(state);
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
    test::InProcessNetwork otherNet;
    const auto other = startServer(otherNet, {roomConfig("b", "stack10")});
    const std::uint64_t hashBefore = other->room(0).world().stateHash();
    CHECK_FALSE(other->restoreState(state, error));
    CHECK(error.find("room") != std::string::npos);
    std::vector<std::uint8_t> damaged = state;
    damaged.resize(damaged.size() - 3);
    test::InProcessNetwork sameNet;
    const auto same = startServer(sameNet, rooms);
    CHECK_FALSE(same->restoreState(damaged, error));
    CHECK(same->room(0).world().stateHash() != original->room(0).world().stateHash());
    CHECK(other->room(0).world().stateHash() == hashBefore);
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
    return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "scenes" /
            "arena.json")
        .string();
}
} // namespace

TEST_CASE("a room runs a scene file with its player template and rules", "[server][rooms][scenefile]")
{
    test::InProcessNetwork net;
    const auto host = startServer(net, {roomConfig("arena", arenaPath())});
    server::Room& room = *host->findRoom("arena");
    const std::uint32_t before = room.world().bodyCount();
    test::RawPeer alicePeer(net, kAlice);
    const auto alice = alicePeer.join("arena");
    REQUIRE(alice);
    const auto owned = room.ownedBodies(alice->clientId);
    REQUIRE(owned.size() == 1);
    physics::BodyState body;
    REQUIRE(room.world().getBody(owned[0], body));
    CHECK(body.shape.type == physics::ShapeType::Capsule); // the file's template
    CHECK(body.transform.p.x == Approx(-2.0f));            // at its first spawn point
    CHECK(body.transform.p.z == Approx(-2.0f));
    CHECK(room.world().bodyCount() == before + 1);

    // The file allows client spawns.
    protocol::InputCommand spawn;
    spawn.tick = room.tick() + 1;
    spawn.sequence = 1;
    spawn.kind = wire::InputKind::Spawn;
    spawn.bodyGeneration = 0;
    spawn.vector = {0.0f, 3.0f, 0.0f};
    alicePeer.sendInputs(std::array{spawn});
    net.run(0.1);
    CHECK(room.ownedBodies(alice->clientId).size() == 2);
    CHECK(room.metrics().inputsNotOwned == 0);
}

namespace
{
/// A floor mesh (level.obj, 20 x 20 m at y = 0), a raw heightfield beside it (hills.raw, 3 x 3 samples) and
/// a scene using both with a compound player, a sensor and a layer table, written into `dir`; returns the
/// scene file's path.
std::string writeGeometryScene(const test::TempDirectory& dir, const std::string& floorHeight = "0")
{
    test::writeFile(dir / "level.obj",
                    "v -10 " + floorHeight + " -10\nv -10 0 10\nv 10 0 10\nv 10 0 -10\nf 1 2 3 4\n");
    std::string raw;
    for (const int sample : {0, 0, 0, 0, 40, 0, 0, 0, 0})
    {
        raw += static_cast<char>(sample);
        raw += '\0';
    }
    test::writeFile(dir / "hills.raw", raw);
    test::writeFile(dir / "scene.json", R"({"name": "geometry", "bodies": [
        {"motion": "Static", "shape_type": "Mesh", "shape": {"file": "level.obj"}},
        {"motion": "Static", "shape_type": "HeightField",
         "shape": {"file": "hills.raw", "samples_x": 3, "samples_z": 3, "cell_size_x": 2, "cell_size_z": 2,
                   "height_scale": 0.05}, "position": {"x": 10, "y": 0, "z": -2}},
        {"motion": "Static", "shape_type": "Box", "shape": {"half_extents": {"x": 1, "y": 1, "z": 1}},
         "position": {"x": 0, "y": 1, "z": 0}, "is_sensor": true, "layer": 3},
        {"shape_type": "Compound", "shape": {"children": [
           {"shape_type": "Box", "shape": {"half_extents": {"x": 0.5, "y": 0.1, "z": 0.3}}},
           {"shape_type": "Sphere", "shape": {"radius": 0.2}, "position": {"x": 0, "y": 0.3, "z": 0}}]},
         "position": {"x": 2, "y": 1, "z": 2}, "layer": 1},
        {"shape_type": "Sphere", "shape": {"radius": 0.4}, "position": {"x": -3, "y": 2, "z": 1},
         "group": 5}],
      "player": {"shape_type": "Compound", "shape": {"children": [
           {"shape_type": "Capsule", "shape": {"radius": 0.3, "half_height": 0.4}},
           {"shape_type": "Box", "shape": {"half_extents": {"x": 0.2, "y": 0.2, "z": 0.1}},
            "position": {"x": 0, "y": 0.2, "z": -0.35}}]}},
      "spawn_points": [{"x": -5, "y": 1.5, "z": -5}, {"x": 5, "y": 1.5, "z": 5}],
      "layer_pairs": [{"a": 1, "b": 3, "collide": false}]})");
    return dir / "scene.json";
}

/// Half the extents of `shape`'s local box: what a catalogue entry of a compound, mesh or heightfield
/// carries.
std::array<float, 3> localHalfExtents(const physics::World& world, const physics::Shape& shape)
{
    const physics::Aabb box =
        physics::shapeBoundsAt(shape, physics::Transform::identity(), world.catalogue());
    return {0.5f * (box.max.x - box.min.x), 0.5f * (box.max.y - box.min.y), 0.5f * (box.max.z - box.min.z)};
}
} // namespace

TEST_CASE(
    "a room runs a scene file with a mesh, a heightfield, compounds, a sensor and layers, and clients get "
    "their catalogue entries",
    "[server][rooms][scenefile]")
{
    test::TempDirectory dir("room_geometry");
    test::InProcessNetwork net;
    const auto host = startServer(net, {roomConfig("geometry", writeGeometryScene(dir))});
    server::Room& room = *host->findRoom("geometry");
    CHECK(room.world().meshCount() == 1);
    CHECK(room.world().heightFieldCount() == 1);
    CHECK(room.world().compounds().size() == 2); // the scene's and the player template's
    CHECK_FALSE(room.world().layersCollide(1, 3));

    client::ClientConfig config;
    config.room = "geometry";
    client::Client& c = net.addClient(2, config);
    c.connect(net.now());
    net.run(2.0);
    REQUIRE(c.isConnected());
    CHECK(room.world().compounds().size() == 2); // the player found its compound in the catalogue

    std::map<physics::ShapeType, int> kinds;
    room.world().forEachBody(
        [&](const physics::BodyState& b)
        {
            CAPTURE(b.id.index);
            ++kinds[b.shape.type];
            REQUIRE(c.catalogue().count(b.id.index) == 1);
            const protocol::CatalogueEntry& entry = c.catalogue().at(b.id.index);
            CHECK(entry.generation == b.id.generation);
            CHECK(static_cast<int>(entry.shape) == static_cast<int>(b.shape.type));
            if (physics::isCompositeType(b.shape.type))
            {
                const std::array<float, 3> expected = localHalfExtents(room.world(), b.shape);
                for (int axis = 0; axis < 3; ++axis)
                {
                    CHECK(entry.extent[axis] == Approx(expected[axis]));
                }
                CHECK(entry.extent[0] > 0.0f);
            }
        });
    CHECK(kinds[physics::ShapeType::Mesh] == 1);
    CHECK(kinds[physics::ShapeType::HeightField] == 1);
    CHECK(kinds[physics::ShapeType::Compound] == 2); // the scene's and the client's player
    const std::vector<protocol::CatalogueEntry> owned = c.ownedBodies();
    REQUIRE(owned.size() == 1);
    CHECK(owned[0].shape == wire::ShapeKind::Compound);
    const protocol::CatalogueEntry& mesh = c.catalogue().at(0);
    CHECK(mesh.shape == wire::ShapeKind::Mesh);
    CHECK(mesh.extent == std::array<float, 3>{10.0f, 0.0f, 10.0f});
    CHECK(c.catalogue().at(1).shape == wire::ShapeKind::HeightField);
    CHECK(c.catalogue().at(1).extent[1] == Approx(0.5f * 0.05f * 40.0f));
    CHECK(room.metrics().snapshotEncodeErrors == 0);
}

TEST_CASE(
    "a checkpointed room with a mesh scene restores into a room that loaded the scene again, and not when a "
    "geometry file changed",
    "[server][checkpoint][scenefile]")
{
    test::TempDirectory dir("checkpoint_geometry");
    const std::vector<server::RoomConfig> rooms{roomConfig("geometry", writeGeometryScene(dir))};
    test::InProcessNetwork originalNet;
    const auto original = startServer(originalNet, rooms);
    originalNet.run(1.0);
    std::vector<std::uint8_t> state;
    original->saveState(state);

    test::InProcessNetwork restoredNet;
    const auto restored = startServer(restoredNet, rooms);
    std::string error;
    REQUIRE(restored->restoreState(state, error));
    CHECK(restored->room(0).world().stateHash() == original->room(0).world().stateHash());
    restoredNet.setNow(originalNet.now());
    originalNet.run(1.0);
    restoredNet.run(1.0);
    CHECK(restored->room(0).tick() == original->room(0).tick());
    CHECK(restored->room(0).world().stateHash() == original->room(0).world().stateHash());

    // The floor's first corner raised 1 cm: another scene, which the checkpoint does not fit.
    writeGeometryScene(dir, "0.01");
    test::InProcessNetwork changedNet;
    const auto changed = startServer(changedNet, rooms);
    const std::uint64_t before = changed->room(0).world().stateHash();
    CHECK_FALSE(changed->restoreState(state, error));
    CHECK(error.find("the checkpoint holds scene") != std::string::npos);
    CHECK(error.find("its definition changed since") != std::string::npos);
    CHECK(changed->room(0).world().stateHash() == before);
}

TEST_CASE(
    "the built-in terrain and convex_vs_mesh scenes run in rooms, clients see their heightfield, mesh and "
    "compounds, and a checkpoint restores them",
    "[server][rooms][checkpoint]")
{
    const std::vector<server::RoomConfig> rooms{roomConfig("terrain", "terrain"),
                                                roomConfig("bowl", "convex_vs_mesh")};
    test::InProcessNetwork net;
    const auto host = startServer(net, rooms);
    client::ClientConfig config;
    config.room = "bowl";
    client::Client& c = net.addClient(2, config);
    c.connect(net.now());
    net.run(2.0);
    REQUIRE(c.isConnected());
    std::map<wire::ShapeKind, int> kinds;
    for (const auto& [id, entry] : c.catalogue())
    {
        ++kinds[entry.shape];
    }
    CHECK(kinds[wire::ShapeKind::Mesh] == 1);
    CHECK(kinds[wire::ShapeKind::Compound] > 0);
    CHECK(kinds[wire::ShapeKind::Hull] > 0);
    CHECK(kinds[wire::ShapeKind::Sphere] > 0); // the scene's spheres and the client's player
    CHECK(c.catalogue().size() == host->findRoom("bowl")->world().bodyCount());
    const server::Room& terrain = *host->findRoom("terrain");
    CHECK(terrain.world().heightFieldCount() == 1);
    CHECK(terrain.metrics().snapshotEncodeErrors == 0);

    std::vector<std::uint8_t> state;
    host->saveState(state);
    test::InProcessNetwork restoredNet;
    const auto restored = startServer(restoredNet, rooms);
    std::string error;
    REQUIRE(restored->restoreState(state, error));
    for (std::size_t i = 0; i < rooms.size(); ++i)
    {
        CHECK(restored->room(i).world().stateHash() == host->room(i).world().stateHash());
    }
}

TEST_CASE("admin load takes a scene file by name, and a bad one leaves the old scene running",
          "[server][admin][scenefile]")
{
    test::InProcessNetwork net;
    server::RoomConfig config = roomConfig("main", "stack10");
    config.sceneDirectory = std::filesystem::path(arenaPath()).parent_path().string();
    const auto host = startServer(net, {config});
    server::Room& room = *host->findRoom("main");
    test::RawPeer console(net, kAdmin);
    protocol::AdminCommandFields load;
    load.op = wire::AdminOp::LoadScene;
    load.text = "/no/such/scene.json";
    const auto refused = console.sendAdmin(load, kAdminKey);
    REQUIRE(refused);
    CHECK_FALSE(refused->first);
    CHECK(refused->second.find("/no/such/scene.json") != std::string::npos);
    CHECK(room.config().scene == "stack10");
    CHECK(room.world().bodyCount() == 11);
    load.text = "arena"; // scenes/arena.json, from the room's scene directory
    const auto loaded = console.sendAdmin(load, kAdminKey);
    REQUIRE(loaded);
    CHECK(loaded->first);
    CHECK(room.config().scene == "arena");
    CHECK(room.world().bodyCount() > 5);
    CHECK(room.config().allowClientSpawn);
}

TEST_CASE("clients with the same baseline share one encoding of a snapshot", "[server][rooms]")
{
    server::RoomConfig config = roomConfig("main", "pile1000");
    config.snapshotRateHz = 20;
    config.fullSnapshotResendSeconds = 0.0;
    test::InProcessNetwork net;
    const auto host = startServer(net, {config});
    server::Room& room = *host->findRoom("main");
    for (std::uint8_t address = 2; address < 10; ++address)
    {
        REQUIRE(test::RawPeer(net, protocol::Address::ipv4(10, 0, 0, address, 5000))
                    .join("main", 0, nullptr, true));
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
    test::InProcessNetwork net;
    const auto host = startServer(net, {config});
    REQUIRE(test::RawPeer(net, kAlice).join("main", 60, nullptr, true));
    net.run(1.0);
    const server::RoomMetrics& m = host->findRoom("main")->metrics();
    CHECK(m.fullSnapshots >= 4);
    CHECK(m.fullSnapshots <= 6); // not 60
}

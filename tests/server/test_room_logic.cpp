// A room's game logic (room_logic.h) through the whole stack: hooks, game messages, game states, refusals,
// kicks, errors, events and reloads, with clients over the in-process network.
#include "polytope/server/room_logic.h"

#include "polytope/server/lua_logic.h"

#include "polytope/protocol/packet.h"
#include "polytope/server/server.h"
#include "support/in_process.h"
#include "support/temp_files.h"

#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace polytope;

namespace
{

std::span<const std::uint8_t> bytesOf(std::string_view text)
{
    return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

std::string textOf(std::span<const std::uint8_t> bytes)
{
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// What the test logic saw, shared with the test (the room owns the logic).
struct Journal
{
    std::vector<std::string> calls;                              ///< hook names, in order (ticks left out)
    std::vector<std::pair<std::uint64_t, std::string>> messages; ///< (tick delivered, text)
    std::uint64_t ticksBegun = 0;
    std::uint64_t ticksEnded = 0;
    std::uint64_t sensorBegins = 0;
    std::uint64_t lastTickEnded = 0;
    bool tickSeenInOrder = true;
    physics::BodyId sensor{};
};

/// Echoes each message into its sender's state, counts it in the room state, refuses "banned", kicks on
/// "kick me", throws on "throw", and keeps a static sensor over the spawn area.
class TestLogic final : public server::RoomLogic
{
  public:
    explicit TestLogic(Journal& journal) : m_journal(journal) {}

    std::uint32_t wantedEvents() const override { return server::kLogicSensorEvents; }
    void onStart(server::RoomContext& room) override
    {
        m_journal.calls.push_back("start");
        physics::BodyDesc sensor;
        sensor.type = physics::BodyType::Static;
        sensor.shape = physics::Shape::makeBox({20.0f, 20.0f, 20.0f});
        sensor.isSensor = true;
        m_journal.sensor = room.world().createBody(sensor).id;
    }
    server::JoinDecision onJoinAttempt(server::RoomContext&, const server::ClientInfo& client) override
    {
        m_journal.calls.push_back("attempt " + std::string(client.name));
        return client.name == "banned" ? server::JoinDecision::refuse("no banned players here")
                                       : server::JoinDecision::allow();
    }
    void onJoin(server::RoomContext& room, const server::ClientInfo& client) override
    {
        m_journal.calls.push_back("join " + std::string(client.name));
        const physics::BodyId body = room.spawnPlayer(client.clientId);
        CHECK(room.world().isValid(body));
        CHECK(room.ownedBodies(client.clientId).size() == 1);
    }
    void onLeave(server::RoomContext&, const server::ClientInfo& client, server::LeaveReason reason) override
    {
        m_journal.calls.push_back("leave " + std::string(client.name) + " " +
                                  std::to_string(static_cast<int>(reason)));
    }
    void onMessage(server::RoomContext& room, const server::GameMessage& message) override
    {
        const std::string text = textOf(message.data);
        m_journal.messages.emplace_back(message.tick, text);
        CHECK(room.tick() == message.tick);
        if (text == "throw")
        {
            throw std::runtime_error("the test logic was told to throw");
        }
        if (text == "kick me")
        {
            CHECK(room.kick(message.clientId, "asked to be kicked"));
            return;
        }
        CHECK(room.setClientState(message.clientId, message.data));
        ++m_count;
        const std::string count = "messages " + std::to_string(m_count);
        CHECK(room.setRoomState(bytesOf(count)));
    }
    void onTickBegin(server::RoomContext& room) override
    {
        ++m_journal.ticksBegun;
        m_journal.tickSeenInOrder = m_journal.tickSeenInOrder && room.tick() == m_journal.lastTickEnded + 1;
    }
    void onTickEnd(server::RoomContext& room) override
    {
        ++m_journal.ticksEnded;
        m_journal.lastTickEnded = room.tick();
    }
    void onSensorBegin(server::RoomContext&, const physics::SensorBeginEvent& event) override
    {
        m_journal.sensorBegins += event.sensor == m_journal.sensor ? 1 : 0;
    }

  private:
    Journal& m_journal;
    int m_count = 0;
};

server::RoomConfig logicRoom(Journal& journal)
{
    server::RoomConfig config;
    config.room = "main";
    config.scene = "default";
    config.logic = [&journal] { return std::make_unique<TestLogic>(journal); };
    return config;
}

client::ClientConfig named(const std::string& name)
{
    client::ClientConfig config;
    config.name = name;
    return config;
}

/// A server with one room running TestLogic (its config adjusted by the test), and its clients.
struct LogicFixture
{
    explicit LogicFixture(const std::function<void(server::RoomConfig&)>& adjust = {},
                          const std::optional<protocol::NetworkConditions>& conditions = {})
    {
        if (conditions)
        {
            net.simulate(*conditions, 7);
        }
        server::RoomConfig config = logicRoom(journal);
        if (adjust)
        {
            adjust(config);
        }
        server = test::makeServer(net, config);
    }

    Journal journal;
    test::InProcessNetwork net;
    std::unique_ptr<server::Server> server;
};

/// A client named `name` at 10.0.0.`host`, connecting, given `seconds` to join.
client::Client& joinAs(test::InProcessNetwork& net, std::uint8_t host, const std::string& name,
                       double seconds = 0.5)
{
    client::Client& c = net.addClient(host, named(name));
    c.connect(net.now());
    net.run(seconds);
    return c;
}

} // namespace

TEST_CASE("a room's logic sees starts, joins, messages at their tick, ticks and leaves", "[server][logic]")
{
    LogicFixture fixture;
    auto& [journal, net, server] = fixture;
    client::Client& alice = joinAs(net, 2, "alice");
    REQUIRE(alice.isConnected());
    REQUIRE(journal.calls.size() >= 3);
    CHECK(journal.calls[0] == "start");
    CHECK(journal.calls[1] == "attempt alice");
    CHECK(journal.calls[2] == "join alice");
    CHECK(server->room(0).ownedBodies(alice.clientId()).size() == 1);

    // Messages for a tick ahead are delivered at that tick, in the order sent.
    const std::uint64_t tick = server->room(0).tick() + 10;
    REQUIRE(alice.sendGameMessage(bytesOf("first"), tick) == 1);
    REQUIRE(alice.sendGameMessage(bytesOf("second"), tick) == 2);
    net.run(0.5);
    REQUIRE(journal.messages.size() == 2);
    CHECK(journal.messages[0] == std::pair<std::uint64_t, std::string>{tick, "first"});
    CHECK(journal.messages[1] == std::pair<std::uint64_t, std::string>{tick, "second"});
    CHECK(alice.pendingGameMessages() == 0);
    CHECK(alice.stats().gameMessagesAcknowledged == 2);
    // A message for a tick already run is delivered at the next one.
    REQUIRE(alice.sendGameMessage(bytesOf("late"), 1) == 3);
    net.run(0.2);
    REQUIRE(journal.messages.size() == 3);
    CHECK(journal.messages[2].first > tick);
    CHECK(server->room(0).metrics().gameMessagesLate == 1);
    CHECK(server->room(0).metrics().gameMessagesDelivered == 3);

    // States come back: the sender's own, and the room's to everyone.
    CHECK(textOf(alice.playerState().data) == "late");
    CHECK(textOf(alice.roomState().data) == "messages 3");
    CHECK(textOf(server->room(0).roomState()) == "messages 3");

    // Every tick is begun and ended once, in order; the sensor saw the player arrive.
    CHECK(journal.tickSeenInOrder);
    CHECK(journal.ticksBegun == server->room(0).tick());
    CHECK(journal.ticksEnded == server->room(0).tick());
    CHECK(journal.sensorBegins >= 1);

    alice.disconnect(net.now());
    net.run(0.2);
    CHECK(journal.calls.back() ==
          "leave alice " + std::to_string(static_cast<int>(server::LeaveReason::Disconnected)));
}

TEST_CASE("a room's logic refuses a client with a reason the client is told", "[server][logic]")
{
    LogicFixture fixture;
    auto& [journal, net, server] = fixture;
    client::Client& banned = joinAs(net, 2, "banned");
    CHECK(banned.state() == client::ClientState::ConnectionDenied);
    REQUIRE(banned.denyReason().has_value());
    CHECK(*banned.denyReason() == protocol::wire::DenyReason::RefusedByGame);
    CHECK(banned.serverMessage() == "no banned players here");
    CHECK(server->room(0).clientCount() == 0);
    CHECK(server->clientCount() == 0); // the connection was freed
    CHECK(server->room(0).metrics().joinsRefusedByLogic >= 1);
    CHECK(std::count(journal.calls.begin(), journal.calls.end(), "join banned") == 0);
}

TEST_CASE("a room's logic kicks a client, telling it why", "[server][logic]")
{
    LogicFixture fixture;
    auto& [journal, net, server] = fixture;
    client::Client& bob = joinAs(net, 2, "bob");
    REQUIRE(bob.isConnected());
    REQUIRE(bob.sendGameMessage(bytesOf("kick me"), server->room(0).tick() + 2) != 0);
    net.run(0.5);
    CHECK(bob.state() == client::ClientState::ServerClosed);
    REQUIRE(bob.disconnectReason().has_value());
    CHECK(*bob.disconnectReason() == protocol::wire::DisconnectReason::Kicked);
    CHECK(bob.serverMessage() == "asked to be kicked");
    CHECK(server->room(0).clientCount() == 0);
    CHECK(journal.calls.back() ==
          "leave bob " + std::to_string(static_cast<int>(server::LeaveReason::Kicked)));
}

TEST_CASE("a hook that throws is counted and the room runs on", "[server][logic]")
{
    LogicFixture fixture;
    auto& [journal, net, server] = fixture;
    client::Client& c = joinAs(net, 2, "carol");
    const std::uint64_t tick = server->room(0).tick();
    REQUIRE(c.sendGameMessage(bytesOf("throw"), tick + 2) != 0);
    REQUIRE(c.sendGameMessage(bytesOf("after"), tick + 3) != 0);
    net.run(0.5);
    CHECK(server->room(0).metrics().logicErrors == 1);
    CHECK(server->room(0).tick() > tick + 20);
    CHECK(c.isConnected());
    CHECK(textOf(c.playerState().data) == "after");
}

TEST_CASE("with stopOnLogicError a failing hook stops the room and its clients are told", "[server][logic]")
{
    LogicFixture fixture([](server::RoomConfig& config) { config.stopOnLogicError = true; });
    auto& [journal, net, server] = fixture;
    client::Client& c = joinAs(net, 2, "dave");
    REQUIRE(c.sendGameMessage(bytesOf("throw"), server->room(0).tick() + 2) != 0);
    net.run(0.5);
    CHECK(server->room(0).logicStopped());
    CHECK(server->room(0).paused());
    CHECK(c.state() == client::ClientState::ServerClosed);
    REQUIRE(c.disconnectReason().has_value());
    CHECK(*c.disconnectReason() == protocol::wire::DisconnectReason::RoomStopped);
    CHECK(c.serverMessage().find("the test logic was told to throw") != std::string::npos);
    // Nobody joins a stopped room.
    client::Client& late = joinAs(net, 3, "erin");
    CHECK(late.state() == client::ClientState::ConnectionDenied);
    CHECK(late.serverMessage() == "the room has stopped");
}

TEST_CASE("game states arrive whole and newest under 20% loss", "[server][logic]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    conditions.jitterSeconds = 0.02;
    conditions.lossProbability = 0.2;
    LogicFixture fixture({}, conditions);
    auto& [journal, net, server] = fixture;
    client::Client& a = net.addClient(2, named("a"));
    a.connect(net.now());
    client::Client& b = net.addClient(3, named("b"));
    b.connect(net.now());
    net.run(1.5);
    REQUIRE(a.isConnected());
    REQUIRE(b.isConnected());
    for (int i = 0; i < 30; ++i)
    {
        const std::string text = "a says " + std::to_string(i);
        REQUIRE(a.sendGameMessage(bytesOf(text), server->room(0).tick() + 6) != 0);
        net.run(0.05);
    }
    net.run(2.0);
    // Every message arrived once, in order, despite the loss.
    REQUIRE(journal.messages.size() == 30);
    for (int i = 0; i < 30; ++i)
    {
        CHECK(journal.messages[static_cast<std::size_t>(i)].second == "a says " + std::to_string(i));
    }
    CHECK(server->room(0).metrics().gameMessagesDuplicate > 0); // resends happened and were dropped
    CHECK(textOf(a.playerState().data) == "a says 29");
    CHECK(b.playerState().version == 0); // a's state is a's
    CHECK(textOf(a.roomState().data) == "messages 30");
    CHECK(textOf(b.roomState().data) == "messages 30");
    CHECK(a.roomState().version == server->room(0).roomStateVersion());
    CHECK(server->room(0).metrics().gameStatesResent > 0);
}

TEST_CASE("a client's game messages are bounded by size and rate", "[server][logic]")
{
    LogicFixture fixture(
        [](server::RoomConfig& config)
        {
            config.maxGameMessagesPerSecond = 10.0;
            config.maxGameMessageBurst = 5.0;
        });
    auto& [journal, net, server] = fixture;
    client::Client& c = joinAs(net, 2, "flood");
    const std::vector<std::uint8_t> tooBig(protocol::kMaxGameMessageBytes + 1, 7);
    CHECK(c.sendGameMessage(tooBig, server->room(0).tick() + 2) == 0);
    CHECK(c.sendGameMessage({}, server->room(0).tick() + 2) == 0);
    for (int i = 0; i < 40; ++i)
    {
        REQUIRE(c.sendGameMessage(bytesOf("m"), server->room(0).tick() + 2) != 0);
    }
    net.run(0.5);
    const server::RoomMetrics& m = server->room(0).metrics();
    CHECK(m.gameMessagesRateLimited > 0);
    CHECK(m.gameMessagesDelivered < 20); // the burst of 5, then 10 a second
    CHECK(m.gameMessagesDelivered >= 5);
    CHECK(c.isConnected());
}

namespace
{
/// Counts how it was started, and reads its settings.
class SpecLogic final : public server::RoomLogic
{
  public:
    static inline int starts = 0;
    static inline int reloads = 0;
    static inline std::string settingsSeen;
    void onStart(server::RoomContext& room) override
    {
        ++starts;
        settingsSeen = std::string(room.settings());
        room.setRoomState(bytesOf("kept across reloads"));
    }
    void onReload(server::RoomContext& room) override
    {
        ++reloads;
        CHECK(textOf(room.roomState()) == "kept across reloads");
    }
};
} // namespace

TEST_CASE("a scene file names its logic; the registry makes it; an admin reload replaces it",
          "[server][logic]")
{
    server::registerLogic("test_spec_logic", [](const server::LogicSpec&, std::string&)
                          { return std::make_unique<SpecLogic>(); });
    CHECK(server::logicRegistered("test_spec_logic"));
    const test::TempDirectory dir("logic");
    const std::string scene = dir / "game.json";
    test::writeFile(scene, R"({"name": "game", "builtin": "default",
        "logic": {"name": "test_spec_logic", "settings": {"goal": 3, "teams": ["red", "blue"]}}})");
    SpecLogic::starts = 0;
    SpecLogic::reloads = 0;
    test::InProcessNetwork net;
    server::RoomConfig config;
    config.scene = scene;
    const auto server = test::makeServer(net, config);
    CHECK(SpecLogic::starts == 1);
    CHECK(SpecLogic::settingsSeen == R"({ "goal": 3, "teams": [ "red", "blue" ] })");
    server::Room& room = server->room(0);
    REQUIRE(room.logic() != nullptr);

    protocol::AdminCommandFields reload;
    reload.op = protocol::wire::AdminOp::ReloadLogic;
    const server::AdminResult result = room.admin(reload, 0.0);
    CHECK(result.ok);
    CHECK(SpecLogic::reloads == 1);
    CHECK(SpecLogic::starts == 1);
    CHECK(room.metrics().logicReloads == 1);

    // A scene naming a logic nobody registered is refused with its name.
    std::string error;
    server::RoomConfig unknown;
    unknown.scene = dir / "unknown.json";
    test::writeFile(unknown.scene, R"({"builtin": "default", "logic": {"name": "nobody"}})");
    CHECK(test::makeServer(unknown, net.serverSend(), error) == nullptr);
    CHECK(error.find("no room logic named 'nobody'") != std::string::npos);
}

TEST_CASE("a Lua script edited on disk is reloaded into its running room; a broken edit is refused",
          "[server][logic][lua]")
{
    server::registerLuaLogic();
    const test::TempDirectory dir("lua_reload");
    const std::string scene = dir / "game.json";
    const std::string script = dir / "rules.lua";
    test::writeFile(scene, R"({"builtin": "default", "logic": {"name": "lua", "script": "rules.lua"}})");
    test::writeFile(script, R"(
function on_start(room) room:set_room_state("v1") end
function on_message(room, msg) room:set_client_state(msg.client, "v1:" .. msg.data) end
)");
    test::InProcessNetwork net;
    server::RoomConfig config;
    config.scene = scene;
    const auto server = test::makeServer(net, config);
    server::Room& room = server->room(0);
    client::Client& c = joinAs(net, 2, "player");
    REQUIRE(c.isConnected());
    REQUIRE(c.sendGameMessage(bytesOf("a"), room.tick() + 2) != 0);
    net.run(0.3);
    CHECK(textOf(c.roomState().data) == "v1");
    CHECK(textOf(c.playerState().data) == "v1:a");

    protocol::AdminCommandFields reload;
    reload.op = protocol::wire::AdminOp::ReloadLogic;
    test::writeFile(script, R"(
function on_reload(room) room:set_room_state(room:room_state() .. " then v2") end
function on_message(room, msg) room:set_client_state(msg.client, "v2:" .. msg.data) end
)");
    CHECK(room.admin(reload, net.now()).ok);
    REQUIRE(c.sendGameMessage(bytesOf("b"), room.tick() + 2) != 0);
    net.run(0.3);
    CHECK(textOf(c.roomState().data) == "v1 then v2");
    CHECK(textOf(c.playerState().data) == "v2:b");
    CHECK(c.isConnected()); // the room ran on: same world, same client

    test::writeFile(script, "function on_message(room, msg) room:set_client_state(msg.client, 'v3' end\n");
    const server::AdminResult refused = room.admin(reload, net.now());
    CHECK_FALSE(refused.ok);
    CHECK(refused.message.find("rules.lua:1:") != std::string::npos);
    REQUIRE(c.sendGameMessage(bytesOf("c"), room.tick() + 2) != 0);
    net.run(0.3);
    CHECK(textOf(c.playerState().data) == "v2:c"); // the old script kept running
    CHECK(room.metrics().logicReloads == 1);
    CHECK(room.metrics().logicErrors == 0);
}

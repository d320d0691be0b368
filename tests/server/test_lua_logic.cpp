// Lua room logic (lua_logic.h): the hooks reach the script with their arguments; the room object changes
// the world and the room through RoomContext; the sandbox has no way out (files, OS, loading, debug); the
// instruction budget stops endless loops for the tick and the memory cap refuses unbounded growth, and the
// logic works on afterwards; load and hook errors name the script and line; every binding refuses bad
// arguments with an error naming itself, leaving the world as it was. Driven by FakeRoomContext over a real
// World: deterministic, no clock, no network.
#include "polytope/server/lua_logic.h"

#include "support/fake_room_context.h"
#include "support/temp_files.h"

#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace
{

using namespace polytope;
using polytope::test::FakeRoomContext;
using polytope::test::TempFile;
using server::LuaLimits;
using server::RoomLogic;

/// A script in a temporary file, loaded.
struct Script
{
    explicit Script(const std::string& text, const LuaLimits& limits = {}) : file("lua_logic", ".lua", text)
    {
        logic = server::makeLuaLogic({"lua", file.path(), "{}"}, limits, error);
    }
    RoomLogic& operator*() const
    {
        REQUIRE(logic != nullptr);
        return *logic;
    }

    TempFile file;
    std::string error;
    std::unique_ptr<RoomLogic> logic;
};

physics::BodyId bodyFrom(const std::string& text)
{
    const auto packed = static_cast<std::uint64_t>(std::stoll(text));
    return {static_cast<std::uint32_t>(packed & 0xFFFFFFFFu), static_cast<std::uint32_t>(packed >> 32)};
}

std::string packed(physics::BodyId id)
{
    return std::to_string(
        static_cast<std::int64_t>((static_cast<std::uint64_t>(id.generation) << 32) | id.index));
}

/// The message of the std::runtime_error `fn` throws ("" when it throws none).
template <class Fn> std::string thrownBy(Fn&& fn)
{
    try
    {
        fn();
    }
    catch (const std::runtime_error& e)
    {
        return e.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("Lua logic: hooks reach the script with their arguments", "[lua]")
{
    const Script script(R"(
function on_start(room) room:log("start", room:name(), room:tick()) end
function on_stop(room) room:log("stop") end
function on_join_attempt(room, client) room:log("attempt", client.id, client.name, client.spectator) return true end
function on_join(room, client) room:log("join", client.id, client.name) end
function on_leave(room, client, reason) room:log("leave", client.id, reason) end
function on_message(room, msg)
  room:log("message", msg.client, msg.sequence, msg.tick, msg.data, #msg.data, msg.view.from, msg.view.to, msg.view.fraction)
end
function on_tick_begin(room) room:log("begin", room:tick(), room:tick_seconds()) end
function on_tick_end(room) room:log("end", room:tick()) end
function on_sensor_begin(room, sensor, visitor) room:log("sensor+", sensor, visitor) end
function on_sensor_end(room, sensor, visitor) room:log("sensor-", sensor, visitor) end
function on_contact_begin(room, a, b, p, n) room:log("contact+", a, b, p.x, p.y, p.z, n.y) end
function on_contact_end(room, a, b) room:log("contact-", a, b) end
function on_contact_hit(room, a, b, speed, p, n, impulse) room:log("hit", a, b, speed, p.x, n.z, impulse) end
function on_joint_event(room, joint, a, b, kind, force, torque) room:log("joint", joint, a, b, kind, force.x, torque.z) end
)");
    RoomLogic& logic = *script;
    CHECK(logic.wantedEvents() ==
          (server::kLogicSensorEvents | server::kLogicContactBegin | server::kLogicContactEnd |
           server::kLogicContactHit | server::kLogicJointEvents));

    FakeRoomContext room;
    room.currentTick = 7;
    room.addClient(3, "ann", true);
    logic.onStart(room);
    CHECK(logic.onJoinAttempt(room, {3, "ann", true}).accept);
    logic.onJoin(room, {3, "ann", true});
    const std::uint8_t bytes[] = {'h', 'i', 0, 'x'};
    logic.onMessage(room, {3, 12, 7, {5, 6, 0.25f}, bytes});
    logic.onTickBegin(room);
    const physics::BodyId a{4, 1};
    const physics::BodyId b{9, 2};
    logic.onSensorBegin(room, {a, b});
    logic.onSensorEnd(room, {a, b});
    logic.onContactBegin(room, {a, b, {1.0f, 2.0f, 3.0f}, {0.0f, 1.0f, 0.0f}});
    logic.onContactEnd(room, {a, b});
    logic.onContactHit(room, {a, b, {0.5f, 0.0f, 0.0f}, {0.0f, 0.0f, -1.0f}, 4.5f, 2.0f});
    logic.onJointEvent(
        room, {{2, 3}, a, b, physics::JointEventKind::Broke, {10.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 1.5f}, 0});
    logic.onTickEnd(room);
    logic.onLeave(room, {3, "ann", true}, server::LeaveReason::TimedOut);
    logic.onStop(room);

    const std::string pa = packed(a);
    const std::string pb = packed(b);
    const std::vector<std::string> expected = {
        "start\ttest-room\t7",
        "attempt\t3\tann\ttrue",
        "join\t3\tann",
        std::string("message\t3\t12\t7\thi") + '\0' + "x\t4\t5\t6\t0.25",
        "begin\t7\t0.016666666666667",
        "sensor+\t" + pa + "\t" + pb,
        "sensor-\t" + pa + "\t" + pb,
        "contact+\t" + pa + "\t" + pb + "\t1.0\t2.0\t3.0\t1.0",
        "contact-\t" + pa + "\t" + pb,
        "hit\t" + pa + "\t" + pb + "\t4.5\t0.5\t-1.0\t2.0",
        "joint\t" + packed({2, 3}) + "\t" + pa + "\t" + pb + "\tbroke\t10.0\t1.5",
        "end\t7",
        "leave\t3\ttimed_out",
        "stop",
    };
    CHECK(room.logLines == expected);
}

TEST_CASE("Lua logic: wantedEvents follows the hooks the script defines", "[lua]")
{
    CHECK((*Script("function on_tick_end(room) end")).wantedEvents() == 0);
    CHECK((*Script("function on_sensor_end(room) end")).wantedEvents() == server::kLogicSensorEvents);
    CHECK((*Script("on_contact_hit = function() end")).wantedEvents() == server::kLogicContactHit);
}

TEST_CASE("Lua logic: on_join_attempt accepts or refuses with a reason", "[lua]")
{
    const Script script(R"(
function on_join_attempt(room, client)
  if client.spectator then return false, "no spectators in this room" end
  if client.name == "" then return false end
  return true
end
)");
    FakeRoomContext room;
    CHECK((*script).onJoinAttempt(room, {1, "bo", false}).accept);
    const server::JoinDecision refused = (*script).onJoinAttempt(room, {2, "cy", true});
    CHECK_FALSE(refused.accept);
    CHECK(refused.reason == "no spectators in this room");
    const server::JoinDecision silent = (*script).onJoinAttempt(room, {3, "", false});
    CHECK_FALSE(silent.accept);
    CHECK_FALSE(silent.reason.empty());

    // Anything but a boolean is a mistake: an error, not a silent accept.
    const Script wrong("function on_join_attempt(room, client) return 'yes' end");
    CHECK(contains(thrownBy(
                       [&] {
                           (void)(*wrong).onJoinAttempt(room, {1, "bo", false});
                       }),
                   "must return true"));
    // No hook: everyone is welcome.
    CHECK((*Script("x = 1")).onJoinAttempt(room, {1, "bo", false}).accept);
}

TEST_CASE("Lua logic: bodies made, moved, pushed, cast at and removed from Lua change the world", "[lua]")
{
    const Script script(R"(
function on_start(room)
  ball = room:create_body{type = "dynamic", shape = {kind = "sphere", radius = 0.5}, position = {x = 0, y = 5, z = 0},
                          density = 500, friction = 0.4, restitution = 0.2, layer = 2, group = 7}
  crate = room:create_body{type = "static", shape = {kind = "box", half = {x = 1, y = 1, z = 1}}, position = {x = 10, y = 0, z = 0}}
  pill = room:create_body{shape = {kind = "capsule", half_height = 0.5, radius = 0.25}, sensor = true}
  room:log("made", ball, crate, pill, room:is_valid(ball), room:body_type(ball), room:body_type(crate))
end
function on_tick_begin(room)
  room:set_position(ball, 1, 6, 2)
  room:set_velocity(ball, 0, 0, 3)
  room:apply_impulse(ball, 500, 0, 0)
  room:apply_force(ball, 0, 10, 0)
  room:set_angular_velocity(ball, 0, 1, 0)
  room:wake(ball)
  local x, y, z = room:position(ball)
  local vx, vy, vz = room:velocity(ball)
  local hit = room:raycast(0, 0, 0, 1, 0, 0, 100, {ignore_body = ball})
  local miss = room:raycast(0, 50, 0, 0, 1, 0, 10)
  room:log("moved", x, y, z, vx, vy, vz, hit.body == crate, hit.x, hit.nx,
           string.format("%.4f %.4f", hit.distance, hit.fraction), miss)
  local seen, status = room:raycast_as_seen({from = 5, to = 6, fraction = 0.5}, 0, 0, 0, 1, 0, 0, 100)
  room:log("seen", seen.body == crate, status)
  room:remove_body(pill)
  room:log("removed", room:is_valid(pill))
end
)");
    FakeRoomContext room;
    RoomLogic& logic = *script;
    logic.onStart(room);
    REQUIRE(room.logLines.size() == 1);
    CHECK(room.physicsWorld.bodyCount() == 3);
    const std::string made = room.logLines[0];
    REQUIRE(made.rfind("made\t", 0) == 0);
    const std::size_t t1 = made.find('\t', 5);
    const physics::BodyId ball = bodyFrom(made.substr(5, t1 - 5));
    physics::BodyState state;
    REQUIRE(room.physicsWorld.getBody(ball, state));
    CHECK(state.type == physics::BodyType::Dynamic);
    CHECK(state.transform.p.y == 5.0f);
    CHECK(state.layer == 2);
    CHECK(state.group == 7);
    CHECK(state.mass == Approx(500.0 * 4.0 / 3.0 * 3.14159265 * 0.125).epsilon(1e-4));
    CHECK(contains(made, "\ttrue\tdynamic\tstatic"));

    logic.onTickBegin(room);
    REQUIRE(room.logLines.size() == 4);
    REQUIRE(room.physicsWorld.getBody(ball, state));
    CHECK(state.transform.p.x == 1.0f);
    CHECK(state.transform.p.z == 2.0f);
    // 500 N s on the ball's mass, on top of the velocity set just before.
    CHECK(state.linearVelocity.x == Approx(500.0 / state.mass).epsilon(1e-4));
    CHECK(state.linearVelocity.z == 3.0f);
    CHECK(state.angularVelocity.y == 1.0f);
    INFO(room.logLines[1]);
    CHECK(room.logLines[1].rfind("moved\t1.0\t6.0\t2.0\t", 0) == 0);
    CHECK(contains(room.logLines[1], "\ttrue\t9.0\t-1.0\t9.0000 0.0900\tnil"));
    CHECK(room.logLines[2] == "seen\ttrue\texact");
    CHECK(room.lastView.fromTick == 5);
    CHECK(room.lastView.toTick == 6);
    CHECK(room.lastView.fraction == 0.5f);
    CHECK(room.logLines[3] == "removed\tfalse");
    CHECK(room.physicsWorld.bodyCount() == 2);
}

TEST_CASE("Lua logic: clients, owned bodies, kicks and the room's and clients' state from Lua", "[lua]")
{
    const Script script(R"(
function on_join(room, client)
  local body = room:spawn_player(client.id, 3, 4, 5)
  local spare = room:create_body{shape = {kind = "sphere", radius = 1}}
  room:log("gave", room:give_body(client.id, spare), room:give_body(client.id, spare))
  room:log("owned", #room:owned_bodies(client.id), room:owned_bodies(client.id)[1] == body)
  room:log("took", room:take_body(spare), room:take_body(spare))
  room:set_room_state(json.encode({score = {red = 1, blue = 0}}))
  room:set_client_state(client.id, "you are " .. client.name)
  room:log("too big", room:set_room_state(string.rep("x", 1025)))
  local listed = room:clients()
  room:log("clients", #listed, listed[1].id, listed[2].name, room:client(99), room:client(client.id).name)
  room:log("state", json.decode(room:room_state()).score.red, room:client_state(client.id))
  room:kick(5, "cheating")
end
)");
    FakeRoomContext room;
    room.addClient(4, "dee");
    room.addClient(5, "eve");
    (*script).onJoin(room, {4, "dee", false});
    const std::vector<std::string> expected = {
        "gave\ttrue\tfalse",
        "owned\t2\ttrue",
        "took\ttrue\tfalse",
        "too big\tfalse",
        "clients\t2\t4\teve\tnil\tdee",
        "state\t1\tyou are dee",
    };
    CHECK(room.logLines == expected);
    REQUIRE(room.find(4)->owned.size() == 1);
    physics::BodyState player;
    REQUIRE(room.physicsWorld.getBody(room.find(4)->owned[0], player));
    CHECK(player.transform.p.x == 3.0f);
    CHECK(FakeRoomContext::text(room.publicState) == R"({"score":{"blue":0,"red":1}})");
    CHECK(FakeRoomContext::text(room.find(4)->state) == "you are dee");
    REQUIRE(room.kicks.size() == 1);
    CHECK(room.kicks[0] == std::pair<std::uint32_t, std::string>(5, "cheating"));
}

TEST_CASE("Lua logic: settings and JSON", "[lua]")
{
    const Script script(R"(
function on_start(room)
  local s = room:settings()
  room:log(s.rounds, s.name, s.teams[2], s.flags.hard, s.nothing == json.null, #s.teams)
  local text = json.encode({1, 2.5, "three", true, json.null, {a = {}}})
  room:log(text)
  local back = json.decode(text)
  room:log(back[3], back[5] == json.null, math.type(back[1]), json.encode(json.decode("[]")))
  room:log(pcall(json.encode, {1, 2, nil, 4}))
  room:log(pcall(json.encode, {[{}] = 1}))
  room:log(pcall(json.encode, 0/0))
  room:log(pcall(json.decode, "{nope"))
  local deep = {}
  local node = deep
  for i = 1, 100 do node.next = {} node = node.next end
  room:log(pcall(json.encode, deep))
  local cycle = {} cycle.self = cycle
  room:log(pcall(json.encode, cycle))
  room:log(pcall(json.decode, string.rep("[", 100) .. string.rep("]", 100)))
end
)");
    FakeRoomContext room;
    room.settingsText =
        R"({"rounds": 3, "name": "arena", "teams": ["red", "blue"], "flags": {"hard": false}, "nothing": null})";
    (*script).onStart(room);
    REQUIRE(room.logLines.size() == 10);
    CHECK(room.logLines[0] == "3\tarena\tblue\tfalse\ttrue\t2");
    CHECK(room.logLines[1] == R"([1,2.5,"three",true,null,{"a":{}}])");
    CHECK(room.logLines[2] == "three\ttrue\tinteger\t{}");
    for (std::size_t i = 3; i < 10; ++i)
    {
        INFO(room.logLines[i]);
        CHECK(room.logLines[i].rfind("false\t", 0) == 0);
        CHECK(contains(room.logLines[i], "json."));
    }
}

TEST_CASE("Lua logic: the sandbox has no file, OS, loading or debug access", "[lua]")
{
    const Script script(R"(
function on_start(room)
  room:log(io, os, require, package, debug, dofile, loadfile, load, loadstring, string.dump, string.gsub,
           string.match, string.gmatch, module, warn)
  room:log(pcall(collectgarbage), pcall(collectgarbage, "stop"))
  room:log(type(collectgarbage("count")))
  room:log(string.find("a.b", ".", 1), ("x+y"):find("+"))
  room:log(pcall(math.randomseed))
  room:log(getmetatable(room))
  room:log(pcall(setmetatable, room, {}))
end
)");
    FakeRoomContext room;
    (*script).onStart(room);
    REQUIRE(room.logLines.size() == 7);
    INFO(room.logLines[1]);
    CHECK(room.logLines[0] == "nil\tnil\tnil\tnil\tnil\tnil\tnil\tnil\tnil\tnil\tnil\tnil\tnil\tnil\tnil");
    CHECK(room.logLines[1] ==
          "false\tfalse\tcollectgarbage: option 'stop' is not allowed in the sandbox (only \"count\")");
    CHECK(room.logLines[2] == "number");
    CHECK(room.logLines[3] == "2\t2\t2"); // always a plain search: "." and "+" are themselves
    CHECK(contains(room.logLines[4], "false\t"));
    CHECK(contains(room.logLines[4], "a seed is required"));
    CHECK(room.logLines[5] == "room");
    CHECK(contains(room.logLines[6], "false\t"));
}

TEST_CASE("Lua logic: math.random is the same sequence in every sandbox", "[lua]")
{
    const std::string text = "function on_start(room) room:log(math.random(1, 1000000), math.random()) end";
    const Script first(text);
    const Script second(text);
    FakeRoomContext a;
    FakeRoomContext b;
    (*first).onStart(a);
    (*second).onStart(b);
    CHECK(a.logLines == b.logLines);
}

TEST_CASE("Lua logic: pairs visits keys in a defined order", "[lua]")
{
    // Lua seeds string hashes from the clock and addresses: next's order over string keys differs between
    // runs, so the sandbox's pairs sorts (numbers, then strings, then booleans).
    const Script script(R"(
function on_start(room)
  local t = {}
  for _, name in ipairs({"zed", "amy", "kim", "bob", "joe", "al", "ann"}) do t[name] = #name end
  t[10] = "ten" t[2.5] = "x" t[-1] = "m" t[true] = 1 t[false] = 0
  local seen = {}
  for k, v in pairs(t) do
    seen[#seen + 1] = tostring(k)
    if k == "bob" then t.joe = nil t.amy = 99 end -- removing and changing during the traversal is allowed
  end
  room:log(table.concat(seen, " "))
  local mt = setmetatable({}, {__pairs = function(self) return function(_, k) if not k then return 1, "custom" end end, self, nil end})
  for k, v in pairs(mt) do room:log(k, v) end
  room:log(pcall(function() for k in pairs(nil) do end end))
end
)");
    FakeRoomContext room;
    (*script).onStart(room);
    REQUIRE(room.logLines.size() == 3);
    CHECK(room.logLines[0] == "-1 2.5 10 al amy ann bob kim zed false true");
    CHECK(room.logLines[1] == "1\tcustom");
    CHECK(contains(room.logLines[2], "false\t"));
    CHECK(contains(room.logLines[2], "table expected"));
}

TEST_CASE("Lua logic: an endless loop is stopped by the budget, counted, and the next tick runs", "[lua]")
{
    const Script script(R"(
ticks = 0
function on_tick_begin(room)
  ticks = ticks + 1
  room:log("begin", room:tick(), ticks)
end
function on_tick_end(room)
  if room:tick() == 2 then while true do end end
  if room:tick() == 3 then
    -- a script cannot outlast the stop by catching it
    while true do pcall(function() while true do end end) end
  end
  if room:tick() == 4 then
    while true do coroutine.resume(coroutine.create(function() while true do end end)) end
  end
  if room:tick() == 5 then local s = string.rep("x", 1000000) while true do local t = s .. "y" end end
  if room:tick() == 6 then local t = {} for i = 1, 100000 do t[i] = i end while true do table.insert(t, 1, 0) table.remove(t, 1) end end
  if room:tick() == 7 then while true do local s = string.rep("", 1 << 40) end end
  if room:tick() == 8 then
    -- a table whose __len claims it is huge makes table.insert shift "elements" in C, with no Lua code
    local t = setmetatable({}, {__len = function() return 1 << 50 end})
    table.insert(t, 1, 0)
  end
  if room:tick() == 9 then
    -- Lua runs finalizers with hooks off: one that never returned would hang the room, so none are allowed
    local mt = {}
    local t = setmetatable({}, mt)
    mt.__gc = function() while true do end end -- too late: t was not marked for finalization
    setmetatable({}, {__gc = function() while true do end end})
  end
  if room:tick() == 10 then
    -- Lua calls a message handler again for an error inside it: it is not called once the budget is spent
    xpcall(function() error("once") end, function(m) while true do end end)
  end
  if room:tick() == 11 then
    -- each yield and each protected call is a C++ throw, charged as such
    local co = coroutine.wrap(function() while true do pcall(coroutine.yield) end end)
    while true do co() end
  end
end
function on_message(room, msg) room:log("message", room:tick()) end
)");
    RoomLogic& logic = *script;
    FakeRoomContext room;
    for (std::uint64_t tick = 1; tick <= 12; ++tick)
    {
        room.currentTick = tick;
        logic.onTickBegin(room);
        INFO("tick " << tick);
        const std::string error = thrownBy([&] { logic.onTickEnd(room); });
        if ((tick >= 2 && tick <= 8) || tick == 10 || tick == 11)
        {
            CHECK(contains(error, script.file.path() + ":"));
            CHECK(contains(error, "instruction budget spent"));
            CHECK(logic.stats().budgetStops == (tick <= 8 ? tick - 1 : tick - 2));
            // The tick's remaining hooks are skipped, quietly.
            const std::size_t lines = room.logLines.size();
            CHECK(thrownBy([&] { logic.onMessage(room, {1, 1, tick, {}, {}}); }).empty());
            CHECK(room.logLines.size() == lines);
        }
        else if (tick == 9)
        {
            CHECK(contains(error, script.file.path() + ":"));
            CHECK(contains(error, "setmetatable: __gc metamethods are not allowed"));
        }
        else
        {
            CHECK(error.empty());
        }
    }
    CHECK(room.logLines.back() == "begin\t12\t12");
    CHECK(logic.stats().budgetStops == 9);
    // Tick 9 left garbage whose metatable has a __gc added after setmetatable: never called, so the state
    // closes at the end of this test.

    // Lifecycle hooks run on a budget of their own, even in a tick whose budget is spent.
    const Script lifecycle(R"(
function on_tick_end(room) while true do end end
function on_stop(room) room:log("stopping") end
function on_join_attempt(room, client) return true end
)");
    room.currentTick = 9;
    CHECK_FALSE(thrownBy([&] { (*lifecycle).onTickEnd(room); }).empty());
    CHECK_FALSE((*lifecycle).onJoinAttempt(room, {1, "x", false}).accept); // skipped: refused
    (*lifecycle).onStop(room);
    CHECK(room.logLines.back() == "stopping");
}

TEST_CASE("Lua logic: unbounded allocation hits the memory cap, and the logic works on", "[lua]")
{
    LuaLimits limits;
    limits.memoryBytes = 2u << 20;
    limits.instructionsPerTick = 100'000'000;
    const Script script(R"(
hoard = {}
function on_tick_end(room)
  if room:tick() == 1 then
    local t = {}
    for i = 1, 1e9 do t[i] = {i} end
  end
  if room:tick() == 2 then
    local ok, err = pcall(function() hoard = {} for i = 1, 1e9 do hoard[i] = string.rep("m", 100) .. i end end)
    hoard = nil
    room:log("caught", ok, err)
  end
  room:log("tick", room:tick(), collectgarbage("count") < 2048)
end
)",
                        limits);
    RoomLogic& logic = *script;
    FakeRoomContext room;
    const std::string error = thrownBy([&] { logic.onTickEnd(room); });
    CHECK(contains(error, "not enough memory"));
    CHECK(contains(error, script.file.path()));
    CHECK(logic.stats().memoryRefusals > 0);
    CHECK(logic.stats().memoryBytes <= limits.memoryBytes);
    CHECK(room.logLines.empty());

    room.currentTick = 2;
    CHECK(thrownBy([&] { logic.onTickEnd(room); }).empty());
    REQUIRE(room.logLines.size() == 2);
    CHECK(room.logLines[0] == "caught\tfalse\tnot enough memory");
    CHECK(room.logLines[1] == "tick\t2\ttrue");

    room.currentTick = 3;
    logic.onTickEnd(room);
    CHECK(room.logLines.back() == "tick\t3\ttrue");
}

TEST_CASE("Lua logic: scripts that fail to load are refused with the file and line", "[lua]")
{
    const Script syntax("x = 1\nfunction on_start(room)\n  if then\nend\n");
    CHECK(syntax.logic == nullptr);
    CHECK(syntax.error.rfind(syntax.file.path() + ":3:", 0) == 0);

    const Script chunk("local a = 1\nerror('no arena configured')\n");
    CHECK(chunk.logic == nullptr);
    CHECK(chunk.error == chunk.file.path() + ":2: no arena configured");

    const Script spin("while true do end");
    CHECK(spin.logic == nullptr);
    CHECK(contains(spin.error, "instruction budget spent"));

    // Precompiled chunks are refused (text only).
    const Script binary(std::string("\x1bLua\x54\x00", 6));
    CHECK(binary.logic == nullptr);
    CHECK(contains(binary.error, "binary"));

    std::string error;
    CHECK(server::makeLuaLogic({"lua", "/nonexistent/rules.lua", "{}"}, {}, error) == nullptr);
    CHECK(error.rfind("/nonexistent/rules.lua: ", 0) == 0);
    CHECK(server::makeLuaLogic({"lua", "/dev/zero", "{}"}, {}, error) == nullptr);
    CHECK(server::makeLuaLogic({"lua", "", "{}"}, {}, error) == nullptr);
    LuaLimits small;
    small.maxScriptBytes = 4;
    CHECK(server::makeLuaLogic({"lua", syntax.file.path(), "{}"}, small, error) == nullptr);
    LuaLimits tiny;
    tiny.memoryBytes = 4096; // less than Lua needs to start
    CHECK(server::makeLuaLogic({"lua", chunk.file.path(), "{}"}, tiny, error) == nullptr);
    CHECK(contains(error, "memory cap"));
}

TEST_CASE("Lua logic: a runtime error in a hook throws with the file and line, and the logic goes on",
          "[lua]")
{
    const Script script(
        "function on_tick_begin(room)\n  local t = nil\n  if room:tick() == 1 then return t.x end\n"
        "  room:log('fine')\nend\n"
        "function on_tick_end(room) error({code = 1}) end\n");
    RoomLogic& logic = *script;
    FakeRoomContext room;
    const std::string error = thrownBy([&] { logic.onTickBegin(room); });
    CHECK(error.rfind(script.file.path() + ":3: attempt to index a nil value", 0) == 0);
    CHECK(thrownBy([&] { logic.onTickEnd(room); }) ==
          script.file.path() + ": (error object is a table value)");
    room.currentTick = 2;
    logic.onTickBegin(room);
    CHECK(room.logLines == std::vector<std::string>{"fine"});
    CHECK(logic.stats().budgetStops == 0);
}

TEST_CASE("Lua logic: every binding refuses bad arguments with an error naming it", "[lua]")
{
    // Each case: the function's name (which the error must name) and a call with a bad argument.
    const Script script(R"(
cases = {
  {"tick", function(r) return r.tick({}) end},
  {"create_body", function(r) return r:create_body(5) end},
  {"create_body", function(r) return r:create_body{} end},
  {"create_body", function(r) return r:create_body{shape = {kind = "cone"}} end},
  {"create_body", function(r) return r:create_body{shape = {kind = "sphere", radius = -1}} end},
  {"create_body", function(r) return r:create_body{shape = {kind = "sphere", radius = 0/0}} end},
  {"create_body", function(r) return r:create_body{shape = {kind = "box", half = {x = 1, y = 1}}} end},
  {"create_body", function(r) return r:create_body{type = "floaty", shape = {kind = "sphere", radius = 1}} end},
  {"create_body", function(r) return r:create_body{shape = {kind = "sphere", radius = 1}, position = {x = 1e9, y = 0, z = 0}} end},
  {"create_body", function(r) return r:create_body{shape = {kind = "sphere", radius = 1}, layer = 40} end},
  {"create_body", function(r) return r:create_body{shape = {kind = "sphere", radius = 1}, density = -5} end},
  {"create_body", function(r) return r:create_body{shape = {kind = "sphere", radius = 1}, sensor = "yes"} end},
  {"create_body", function(r) return r:create_body{shape = {kind = "sphere", radius = 1}, velocity = {x = "1", y = 0, z = 0}} end},
  {"remove_body", function(r) return r:remove_body(12345) end},
  {"remove_body", function(r) return r:remove_body("ball") end},
  {"is_valid", function(r) return r:is_valid(1.5) end},
  {"position", function(r) return r:position(0) end},
  {"orientation", function(r) return r:orientation(nil) end},
  {"body_type", function(r) return r:body_type({}) end},
  {"velocity", function(r) return r:velocity(7) end},
  {"angular_velocity", function(r) return r:angular_velocity(true) end},
  {"set_position", function(r) return r:set_position(ball, 0/0, 0, 0) end},
  {"set_position", function(r) return r:set_position(ball, 1, 2) end},
  {"set_position", function(r) return r:set_position(ball, 2e6, 0, 0) end},
  {"set_orientation", function(r) return r:set_orientation(ball, 0, 0, 0, 0) end},
  {"set_velocity", function(r) return r:set_velocity(ball, 1/0, 0, 0) end},
  {"set_angular_velocity", function(r) return r:set_angular_velocity(ball, "x", 0, 0) end},
  {"apply_impulse", function(r) return r:apply_impulse(ball, 1, 2, 0/0) end},
  {"apply_impulse", function(r) return r:apply_impulse(wall, 1, 0, 0) end},
  {"apply_force", function(r) return r:apply_force(wall, 1, 0, 0) end},
  {"apply_force", function(r) return r:apply_force(ball, 1e39, 0, 0) end},
  {"wake", function(r) return r:wake(-1) end},
  {"raycast", function(r) return r:raycast(0, 0, 0, 0, 0, 0, 10) end},
  {"raycast", function(r) return r:raycast(0, 0, 0, 1, 0, 0, -1) end},
  {"raycast", function(r) return r:raycast(0, 0, 0, 1, 0, 0, 10, 5) end},
  {"raycast", function(r) return r:raycast(0, 0, 0, 1, 0, 0, 10, {layer_mask = -1}) end},
  {"raycast", function(r) return r:raycast(0, 0, 0, 1, 0, 0, 10, {ignore_body = "me"}) end},
  {"raycast_as_seen", function(r) return r:raycast_as_seen(nil, 0, 0, 0, 1, 0, 0, 10) end},
  {"raycast_as_seen", function(r) return r:raycast_as_seen({from = 1}, 0, 0, 0, 1, 0, 0, 10) end},
  {"raycast_as_seen", function(r) return r:raycast_as_seen({from = 1, to = 2, fraction = 2}, 0, 0, 0, 1, 0, 0, 10) end},
  {"client", function(r) return r:client(0) end},
  {"client", function(r) return r:client("ann") end},
  {"owned_bodies", function(r) return r:owned_bodies(1 << 40) end},
  {"give_body", function(r) return r:give_body(1, 999) end},
  {"take_body", function(r) return r:take_body(nil) end},
  {"spawn_player", function(r) return r:spawn_player(1, 0, 0/0, 0) end},
  {"kick", function(r) return r:kick(1, 42) end},
  {"set_room_state", function(r) return r:set_room_state({}) end},
  {"set_client_state", function(r) return r:set_client_state(1) end},
  {"client_state", function(r) return r:client_state(-3) end},
  {"json.decode", function(r) return json.decode(nil) end},
  {"json.encode", function(r) return json.encode(print) end},
}
function on_start(room)
  ball = room:create_body{shape = {kind = "sphere", radius = 1}}
  wall = room:create_body{type = "static", shape = {kind = "box", half = {x = 1, y = 1, z = 1}}, position = {x = 5, y = 0, z = 0}}
end
function on_tick_begin(room)
  for i, case in ipairs(cases) do
    local ok, err = pcall(case[2], room)
    room:log(case[1], tostring(ok), tostring(err))
  end
end
)");
    RoomLogic& logic = *script;
    FakeRoomContext room;
    room.addClient(1, "ann");
    logic.onStart(room);
    std::vector<std::uint8_t> before;
    room.physicsWorld.saveState(before);
    logic.onTickBegin(room);
    REQUIRE(room.logLines.size() == 52);
    for (const std::string& line : room.logLines)
    {
        INFO(line);
        const std::size_t tab = line.find('\t');
        const std::string function = line.substr(0, tab);
        const std::string rest = line.substr(tab + 1);
        CHECK(rest.rfind("false\t", 0) == 0);
        // From the script's line, naming the function.
        CHECK(contains(rest, script.file.path() + ":"));
        CHECK(contains(rest, function + ": "));
    }
    std::vector<std::uint8_t> after;
    room.physicsWorld.saveState(after);
    CHECK(before == after);
    CHECK(room.publicState.empty());
    CHECK(room.kicks.empty());
    CHECK(room.find(1)->owned.empty());
}

TEST_CASE("Lua logic: a room object kept after its hook errors cleanly", "[lua]")
{
    const Script script(R"(
function on_start(room) kept = room end
function on_tick_begin(room)
  local ok, err = pcall(kept.tick, kept)
  room:log(ok, err, tostring(kept), kept == room)
end
)");
    FakeRoomContext room;
    (*script).onStart(room);
    (*script).onTickBegin(room);
    REQUIRE(room.logLines.size() == 1);
    CHECK(contains(room.logLines[0], "false\t"));
    CHECK(contains(room.logLines[0], "tick: this room object is no longer valid"));
    CHECK(contains(room.logLines[0], "\troom (no longer valid)\tfalse"));
}

TEST_CASE("Lua logic: print goes to the room's log, lines printed while loading included", "[lua]")
{
    const Script script("print('loaded', 1 + 1)\nfunction on_start(room) print('started', nil, true) end\n");
    FakeRoomContext room;
    (*script).onStart(room);
    CHECK(room.logLines == std::vector<std::string>{"loaded\t2", "started\tnil\ttrue"});
}

TEST_CASE("Lua logic: a reloaded script carries the game on from the room's state", "[lua]")
{
    const std::string text = R"(
function on_start(room) room:set_room_state(json.encode({round = 1})) end
function on_reload(room)
  local state = json.decode(room:room_state())
  state.round = state.round + 1
  room:set_room_state(json.encode(state))
  room:log("reloaded", state.round)
end
)";
    FakeRoomContext room;
    const Script first(text);
    (*first).onStart(room);
    // The room makes a fresh logic from the same spec and calls onReload on it instead of onStart.
    std::string error;
    const std::unique_ptr<RoomLogic> second =
        server::makeLuaLogic({"lua", first.file.path(), "{}"}, {}, error);
    REQUIRE(second != nullptr);
    second->onReload(room);
    CHECK(FakeRoomContext::text(room.publicState) == R"({"round":2})");
    CHECK(room.logLines == std::vector<std::string>{"reloaded\t2"});
}

TEST_CASE("Lua logic: registered under the name lua", "[lua]")
{
    server::registerLuaLogic();
    CHECK(server::logicRegistered("lua"));
    const TempFile file("lua_logic", ".lua", "function on_start(room) room:log('hi') end");
    std::string error;
    const std::unique_ptr<RoomLogic> logic = server::makeLogic({"lua", file.path(), "{}"}, error);
    REQUIRE(logic != nullptr);
    FakeRoomContext room;
    logic->onStart(room);
    CHECK(room.logLines == std::vector<std::string>{"hi"});
    const TempFile broken("lua_logic", ".lua", "function (");
    CHECK(server::makeLogic({"lua", broken.path(), "{}"}, error) == nullptr);
    CHECK(error.rfind("logic 'lua': " + broken.path() + ":1:", 0) == 0);
}

TEST_CASE("Lua logic: a C++ exception from the room becomes a Lua error", "[lua]")
{
    const Script script(R"(
function on_tick_begin(room)
  local ok, err = pcall(room.kick, room, 1, "bye")
  room:log(ok, err)
  room:kick(1, "bye")
end
)");
    FakeRoomContext room;
    room.throwOnKick = true;
    const std::string error = thrownBy([&] { (*script).onTickBegin(room); });
    CHECK(error == script.file.path() + ":5: the room refused: kick");
    REQUIRE(room.logLines.size() == 1);
    CHECK(room.logLines[0] == "false\tthe room refused: kick"); // called by pcall: no Lua line to name
}

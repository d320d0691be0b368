// polytope-server: RoomLogic scripted in Lua 5.4 (lua_logic.h, docs/GAME_RULES_LUA.md).
//
// Each hook call runs inside one protected call (Sandbox::call): the arguments are built there too, since
// building them allocates and an allocation may be refused. The room object handed to the hook is cleared
// as the call returns, so a script that kept it gets an error, not a dangling RoomContext.
//
// Budget: hooks between two room ticks share the tick's budget (RoomContext::tick() names the tick). Once a
// hook spends it, that hook is stopped (a std::runtime_error, counted in LogicStats::budgetStops as well as
// by the room as a logic error) and the tick's remaining hooks are skipped without a call or an error; a
// skipped onJoinAttempt refuses the client. onStart, onStop and onReload run with a full budget of their
// own and leave the tick's as it was.
#include "polytope/server/lua_logic.h"

#include "lua_bindings.h"
#include "lua_sandbox.h"

#include "polytope/physics/function_ref.h"
#include "polytope/server/regular_file.h"

#include <stdexcept>
#include <vector>

namespace polytope::server
{
namespace
{

using lua::Sandbox;

/// Lines print()ed while no hook runs (the top-level chunk), held for the first hook's room log.
constexpr std::size_t kMaxPendingLines = 16;
/// The reason a client is refused when on_join_attempt is skipped (the tick's budget is spent).
constexpr const char* kBudgetRefusal = "the room's rules are over their budget; try again";

/// One hook call, handed to runHookProtected.
struct HookCall
{
    const char* name = nullptr;
    RoomContext* room = nullptr;
    physics::FunctionRef<int(lua_State*)> pushArguments; ///< pushes the arguments after the room; returns
                                                         ///< how many
    int results = 0;
    physics::FunctionRef<void(lua_State*)> readResults; ///< reads the `results` values on the stack top
    lua::RoomRef* ref = nullptr;
};

int runHookProtected(lua_State* L)
{
    HookCall& call = *static_cast<HookCall*>(lua_touserdata(L, 1));
    if (lua_getglobal(L, call.name) != LUA_TFUNCTION)
    {
        return 0;
    }
    std::string failure;
    try
    {
        call.ref = lua::pushRoom(L, *call.room, &call);
        const int arguments = call.pushArguments ? call.pushArguments(L) : 0;
        lua_call(L, 1 + arguments, call.results);
        if (call.readResults)
        {
            call.readResults(L);
        }
        return 0;
    }
    catch (const std::exception& e) // a C++ exception must not cross Lua's frames; Lua's own pass
    {
        failure = e.what();
    }
    return luaL_error(L, "%s: %s", call.name, failure.c_str());
}

int installBindingsProtected(lua_State* L)
{
    return lua::installBindings(L);
}

struct WantedEvents
{
    std::uint32_t bits = 0;
};

int findWantedEventsProtected(lua_State* L)
{
    auto& wanted = *static_cast<WantedEvents*>(lua_touserdata(L, 1));
    const struct
    {
        const char* name;
        std::uint32_t bit;
    } hooks[] = {
        {"on_sensor_begin", kLogicSensorEvents},  {"on_sensor_end", kLogicSensorEvents},
        {"on_contact_begin", kLogicContactBegin}, {"on_contact_end", kLogicContactEnd},
        {"on_contact_hit", kLogicContactHit},     {"on_joint_event", kLogicJointEvents},
    };
    for (const auto& hook : hooks)
    {
        if (lua_getglobal(L, hook.name) == LUA_TFUNCTION)
        {
            wanted.bits |= hook.bit;
        }
        lua_pop(L, 1);
    }
    return 0;
}

class LuaLogic final : public RoomLogic
{
  public:
    explicit LuaLogic(const LuaLimits& limits) : m_sandbox(limits)
    {
        m_sandbox.print = [this](std::string_view line)
        {
            if (m_room != nullptr)
            {
                m_room->log(line);
            }
            else if (m_pendingLines.size() < kMaxPendingLines)
            {
                m_pendingLines.emplace_back(line);
            }
        };
    }

    /// Installs the bindings and runs the script's chunk; false with a one-line error.
    bool load(const std::string& path, std::string_view text, std::string& error)
    {
        if (m_sandbox.state() == nullptr)
        {
            error = "cannot start a Lua state within the memory cap";
            return false;
        }
        if (m_sandbox.call(installBindingsProtected, nullptr, error) != Sandbox::CallStatus::Ok)
        {
            error = "cannot install the room bindings within the memory cap: " + error;
            return false;
        }
        if (!m_sandbox.runChunk(text, path, error))
        {
            return false;
        }
        WantedEvents wanted;
        if (m_sandbox.call(findWantedEventsProtected, &wanted, error) != Sandbox::CallStatus::Ok)
        {
            return false;
        }
        m_wanted = wanted.bits;
        return true;
    }

    std::uint32_t wantedEvents() const override { return m_wanted; }
    LogicStats stats() const override { return m_sandbox.stats(); }

    void onStart(RoomContext& room) override { runLifecycle(room, "on_start"); }
    void onStop(RoomContext& room) override { runLifecycle(room, "on_stop"); }
    void onReload(RoomContext& room) override { runLifecycle(room, "on_reload"); }

    JoinDecision onJoinAttempt(RoomContext& room, const ClientInfo& client) override
    {
        JoinDecision decision;
        const auto push = [&client](lua_State* L)
        {
            lua::pushClient(L, client);
            return 1;
        };
        const auto read = [&decision](lua_State* L)
        {
            if (lua_type(L, -2) != LUA_TBOOLEAN)
            {
                lua::raiseError(L, "on_join_attempt", "must return true, or false and a reason");
            }
            decision.accept = lua_toboolean(L, -2) != 0;
            if (!decision.accept)
            {
                std::size_t length = 0;
                const char* reason = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &length) : nullptr;
                decision.reason = reason != nullptr
                                      ? std::string(reason, std::min(length, kMaxLogicReasonBytes))
                                      : std::string("refused by the room's rules");
            }
        };
        HookCall call;
        call.name = "on_join_attempt";
        call.pushArguments = push;
        call.results = 2;
        call.readResults = read;
        if (!runTick(room, call))
        {
            return JoinDecision::refuse(kBudgetRefusal);
        }
        return decision;
    }

    void onJoin(RoomContext& room, const ClientInfo& client) override
    {
        const auto push = [&client](lua_State* L)
        {
            lua::pushClient(L, client);
            return 1;
        };
        runTick(room, "on_join", push);
    }

    void onLeave(RoomContext& room, const ClientInfo& client, LeaveReason reason) override
    {
        const auto push = [&client, reason](lua_State* L)
        {
            lua::pushClient(L, client);
            lua_pushstring(L, lua::leaveReasonName(reason));
            return 2;
        };
        runTick(room, "on_leave", push);
    }

    void onMessage(RoomContext& room, const GameMessage& message) override
    {
        const auto push = [&message](lua_State* L)
        {
            lua::pushMessage(L, message);
            return 1;
        };
        runTick(room, "on_message", push);
    }

    void onTickBegin(RoomContext& room) override { runTick(room, "on_tick_begin", {}); }
    void onTickEnd(RoomContext& room) override { runTick(room, "on_tick_end", {}); }

    void onSensorBegin(RoomContext& room, const physics::SensorBeginEvent& event) override
    {
        runTick(room, "on_sensor_begin",
                [&event](lua_State* L) { return pushPair(L, event.sensor, event.visitor); });
    }
    void onSensorEnd(RoomContext& room, const physics::SensorEndEvent& event) override
    {
        runTick(room, "on_sensor_end",
                [&event](lua_State* L) { return pushPair(L, event.sensor, event.visitor); });
    }
    void onContactBegin(RoomContext& room, const physics::ContactBeginEvent& event) override
    {
        const auto push = [&event](lua_State* L)
        {
            pushPair(L, event.bodyA, event.bodyB);
            lua::pushVec3(L, event.point);
            lua::pushVec3(L, event.normal);
            return 4;
        };
        runTick(room, "on_contact_begin", push);
    }
    void onContactEnd(RoomContext& room, const physics::ContactEndEvent& event) override
    {
        runTick(room, "on_contact_end",
                [&event](lua_State* L) { return pushPair(L, event.bodyA, event.bodyB); });
    }
    void onContactHit(RoomContext& room, const physics::ContactHitEvent& event) override
    {
        const auto push = [&event](lua_State* L)
        {
            pushPair(L, event.bodyA, event.bodyB);
            lua_pushnumber(L, event.approachSpeed);
            lua::pushVec3(L, event.point);
            lua::pushVec3(L, event.normal);
            lua_pushnumber(L, event.maxNormalImpulse);
            return 6;
        };
        runTick(room, "on_contact_hit", push);
    }
    void onJointEvent(RoomContext& room, const physics::JointEvent& event) override
    {
        const auto push = [&event](lua_State* L)
        {
            lua::pushBody(L, physics::BodyId{event.joint.index, event.joint.generation});
            pushPair(L, event.bodyA, event.bodyB);
            lua_pushstring(L, event.kind == physics::JointEventKind::Broke ? "broke" : "body_destroyed");
            lua::pushVec3(L, event.force);
            lua::pushVec3(L, event.torque);
            return 6;
        };
        runTick(room, "on_joint_event", push);
    }

  private:
    static int pushPair(lua_State* L, physics::BodyId a, physics::BodyId b)
    {
        lua::pushBody(L, a);
        lua::pushBody(L, b);
        return 2;
    }

    /// A hook of the tick's budget; false when skipped (the budget is spent).
    bool runTick(RoomContext& room, const char* name, physics::FunctionRef<int(lua_State*)> push)
    {
        HookCall call;
        call.name = name;
        call.pushArguments = push;
        return runTick(room, call);
    }
    bool runTick(RoomContext& room, HookCall& call)
    {
        m_sandbox.beginTick(room.tick());
        if (m_sandbox.spent())
        {
            return false;
        }
        run(room, call);
        return true;
    }

    void runLifecycle(RoomContext& room, const char* name)
    {
        const Sandbox::Budget tickBudget = m_sandbox.budget();
        m_sandbox.setBudget({});
        HookCall call;
        call.name = name;
        try
        {
            run(room, call);
        }
        catch (...)
        {
            m_sandbox.setBudget(tickBudget);
            throw;
        }
        m_sandbox.setBudget(tickBudget);
    }

    /// Calls the hook; throws std::runtime_error("script:line: message") when it fails or is stopped.
    void run(RoomContext& room, HookCall& call)
    {
        call.room = &room;
        RoomContext* const outer = m_room; // a hook called from inside another (the room should not)
        m_room = &room;
        for (const std::string& line : m_pendingLines)
        {
            room.log(line);
        }
        m_pendingLines.clear();
        std::string error;
        const Sandbox::CallStatus status = m_sandbox.call(runHookProtected, &call, error);
        lua::releaseRoom(m_sandbox.state(), call.ref, &call);
        m_room = outer;
        if (status != Sandbox::CallStatus::Ok)
        {
            throw std::runtime_error(error);
        }
    }

    Sandbox m_sandbox;
    std::uint32_t m_wanted = 0;
    RoomContext* m_room = nullptr; ///< during a hook: where print() goes
    std::vector<std::string> m_pendingLines;
};

} // namespace

std::unique_ptr<RoomLogic> makeLuaLogic(const LogicSpec& spec, const LuaLimits& limits, std::string& error)
{
    if (spec.script.empty())
    {
        error = "the lua logic needs a script (\"script\": \"rules.lua\")";
        return nullptr;
    }
    std::string text;
    std::string why;
    if (readRegularFile(spec.script, FileRules{limits.maxScriptBytes, true}, text, why) != FileStatus::Ok)
    {
        error = spec.script + ": " + why;
        return nullptr;
    }
    auto logic = std::make_unique<LuaLogic>(limits);
    if (!logic->load(spec.script, text, error))
    {
        return nullptr;
    }
    return logic;
}

void registerLuaLogic(const LuaLimits& limits)
{
    registerLogic("lua", [limits](const LogicSpec& spec, std::string& error)
                  { return makeLuaLogic(spec, limits, error); });
}

} // namespace polytope::server

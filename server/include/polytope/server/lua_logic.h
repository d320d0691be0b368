// polytope-server: room logic scripted in Lua 5.4 (docs/GAME_RULES_LUA.md).
//
// A scene names the logic "lua" and a script; the script defines global functions named like RoomLogic's
// hooks (on_start, on_join_attempt, on_tick_end, ..) and acts on the room through a `room` object passed to
// each hook. Each logic runs in a Lua state of its own, a sandbox: no file, OS, network or debug access, no
// loading of code, no clock; every hook draws on an instruction budget per tick and the state on a memory cap
// (LuaLimits). See lua_sandbox.h for how the limits are enforced and lua_logic.cpp for how hooks are run.
#pragma once

#include "polytope/server/room_logic.h"

#include <cstdint>
#include <memory>
#include <string>

namespace polytope::server
{

/// A script's limits. Defaults suit a room at 60 Hz on a shared core.
struct LuaLimits
{
    /// VM instructions a script may run per room tick, over all its hooks of that tick. Work done inside
    /// library functions (copying, searching, sorting) and memory allocated are charged as instructions
    /// too (lua_sandbox.h). A hook that goes over is stopped and the tick's remaining hooks are skipped.
    std::uint64_t instructionsPerTick = 1'000'000;
    /// Bytes the script's Lua state may hold; allocations beyond it are refused (a Lua memory error).
    std::uint64_t memoryBytes = 16u << 20;
    /// The largest script file read (bytes); larger files are refused.
    std::uint64_t maxScriptBytes = 1u << 20;
};

/// Loads the script at spec.script (a regular file of at most limits.maxScriptBytes) into a fresh sandbox and
/// runs its top-level chunk. Returns nullptr with a one-line `error` when the file cannot be read, does not
/// compile ("rules.lua:12: unexpected symbol near 'end'") or its chunk fails ("rules.lua:3: ..."). Errors
/// in hooks later reach the room as std::runtime_error("rules.lua:40: ..."); see docs/GAME_RULES_LUA.md.
std::unique_ptr<RoomLogic> makeLuaLogic(const LogicSpec& spec, const LuaLimits& limits, std::string& error);

/// Registers makeLuaLogic with these limits under the name "lua" (registerLogic).
void registerLuaLogic(const LuaLimits& limits = {});

} // namespace polytope::server

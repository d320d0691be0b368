// polytope-server: what a Lua room logic sees (docs/GAME_RULES_LUA.md): the `room` object handed to each
// hook, the `json` table, and the Lua forms of clients, messages, bodies and events.
//
// Every function checks its arguments (types, finite numbers, live bodies) and raises a Lua error naming
// itself and the argument, "set_position: argument 'x' must be finite", from the calling line. A C++
// exception from the room or from the JSON library becomes a Lua error the same way, so nothing but Lua
// errors leaves a binding. The World is changed only through its API, which checks again.
#pragma once

#include "polytope/server/room_logic.h"

#include <lua.hpp>

namespace polytope::server::lua
{

/// A room object: valid while `room` is set, i.e. during the hook call it was made for.
struct RoomRef
{
    RoomContext* room = nullptr;
};

/// Installs the room object's metatable and the global `json` table (a protected C function: its
/// allocations may fail).
int installBindings(lua_State* L);

/// Pushes a new room object for `room`, anchored in the registry under the light userdata `anchor` so that
/// the caller may clear it after the hook even when the script dropped it; then releaseRoom.
RoomRef* pushRoom(lua_State* L, RoomContext& room, const void* anchor);
/// Clears the room object anchored under `anchor` (if any) and drops the anchor. Never raises: removing a
/// registry entry allocates nothing.
void releaseRoom(lua_State* L, RoomRef* ref, const void* anchor);

/// A body as Lua sees it: one integer, generation << 32 | index (0: none).
void pushBody(lua_State* L, physics::BodyId id);
/// {x=, y=, z=}
void pushVec3(lua_State* L, const physics::Vec3& v);
/// {id=, name=, spectator=}
void pushClient(lua_State* L, const ClientInfo& client);
/// {client=, sequence=, tick=, data=, view={from=, to=, fraction=}}
void pushMessage(lua_State* L, const GameMessage& message);
/// "disconnected", "timed_out", "kicked" or "shutdown"
const char* leaveReasonName(LeaveReason reason);

} // namespace polytope::server::lua

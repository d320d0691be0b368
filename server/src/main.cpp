// polytope-server: the authoritative physics server (server_main.cpp), with the room logics it ships: "lua"
// runs a scene's Lua script (lua_logic.h, docs/GAME_RULES_LUA.md).
#include "polytope/server/lua_logic.h"
#include "polytope/server/server_main.h"

int main(int argc, char** argv)
{
    polytope::server::registerLuaLogic();
    return polytope::server::serverMain(argc, argv);
}

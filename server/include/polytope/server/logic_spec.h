// polytope-server: what a scene file says about its room's game logic (room_logic.h). Plain data, so that
// the scene file library needs nothing of the server's.
#pragma once

#include <string>

namespace polytope::server
{

/// A scene file's "logic" (docs/SCENES.md): which registered logic runs the room, and its inputs.
struct LogicSpec
{
    std::string name;   ///< the registered logic ("lua" for scripts)
    std::string script; ///< a script's path, resolved against the scene file's folder; may be empty
    std::string settingsJson = "{}"; ///< the "settings" value as JSON text ("{}" when absent)
};

} // namespace polytope::server

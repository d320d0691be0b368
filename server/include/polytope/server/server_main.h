// polytope-server's main as a library function, so that a game builds its own server binary: register the
// game's room logics by name (room_logic.h: registerLogic), then call serverMain with the command line. The
// binary then takes polytope-server's options and behaves as it does (docs/OPERATIONS.md), and scene files
// may name the game's logics (docs/GAME_RULES.md). Link polytope::server_main.
#pragma once

namespace polytope::server
{

/// Parses polytope-server's options from the command line, runs the server until it is told to stop, and
/// returns the process's exit status.
int serverMain(int argc, char** argv);

} // namespace polytope::server

// polytope-server: command-line, config-file and environment configuration.
//
// Every setting can come from three places, in this order of precedence: a command-line flag
// (`--tick-hz 30`), a key of the config file named by `--config FILE` or POLYTOPE_CONFIG (`tick-hz = 30`,
// the TOML/INI subset CLI11 2.1 reads), and an environment variable (POLYTOPE_TICK_HZ=30). An empty
// variable counts as unset. docs/OPERATIONS.md lists every setting.
#pragma once

#include "polytope/server/connect_gate.h"
#include "polytope/server/room_config.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace polytope::server
{

/// polytope-server's exit statuses (docs/OPERATIONS.md). 0: stopped by a signal after a clean shutdown, or
/// --help / --list-scenes.
inline constexpr int kExitStartFailed = 1; ///< did not start: a bad setting, file, port or scene
/// Ran and stopped, but the final checkpoint (--checkpoint) was not written: the state since the last
/// periodic checkpoint is lost, which whatever restarts the server should know.
inline constexpr int kExitFinalCheckpointFailed = 3;

/// Config files larger than this are refused unread. 1 MiB: a file with every setting and a long list of
/// rooms is a few KiB; one a thousand times that is not a config file.
inline constexpr std::size_t kMaxConfigFileBytes = 1u << 20;

/// Everything polytope-server is configured with.
struct ServerOptions
{
    RoomConfig server;             ///< the core's settings (port, scene, rates, limits)
    std::string logLevel = "info"; ///< trace, debug, info, warn, error, critical or off
    bool listScenes = false;       ///< print the built-in scenes and exit
    std::uint16_t httpPort = 8080; ///< TCP port of /healthz and /metrics; 0 disables the HTTP server
    std::string httpBind = "0.0.0.0";
    bool agonesAllocateOnJoin =
        true;               ///< under Agones: mark the GameServer Allocated when the first client joins
    std::string configFile; ///< the config file that was read; empty when none
    /// Rooms as "NAME" or "NAME=SCENE" (scene: built-in name or scene file; default --scene). Empty: one
    /// room, server.room, running server.scene.
    std::vector<std::string> rooms;
    std::string adminKey;  ///< empty: admin commands are refused
    std::string tokenKey;  ///< 64 hex digits shared with the token backend; required unless insecure
    bool insecure = false; ///< accept tokenless, unencrypted sessions (local development)
    std::vector<std::string> publicAddresses; ///< HOST:PORT a connect token must name; empty: the port only
    double connectRatePerIp = 32.0; ///< handshake and admin datagrams per second from one IP (bursts of 4x)
    double connectRate = 4000.0;    ///< the same over all sources (bursts of 2x)
    std::string checkpointFile;     ///< written every checkpointSeconds and at shutdown; empty: none
    double checkpointSeconds = 60.0;
    std::string restoreFile; ///< a checkpoint to resume from at start; empty: none
};

/// The rooms ServerOptions describes, each a copy of options.server with its name and scene. Returns false
/// with an error naming the bad entry (empty name, duplicate).
bool roomConfigs(const ServerOptions& options, std::vector<RoomConfig>& out, std::string& error);

/// The start-up checks that look at the file system, after parseServerOptions and before anything opens:
/// the checkpoint file can be written (probeCheckpointPath: its temporary file is created and removed, an
/// existing checkpoint is not touched), the restore file is a regular file within kMaxCheckpointFileBytes,
/// each room's scene is a built-in name, a regular scene file within kMaxSceneFileBytes, or a name with
/// such a file in the scene directory, and the scene directory is a directory if it exists. Nothing is
/// opened in a way that could block (regular_file.h). False with one line that starts with the flag:
/// "--checkpoint '/proc/x.ckpt': cannot create the temporary file ...".
bool checkServerFiles(const ServerOptions& options, std::string& error);

/// The security settings ServerOptions describes (token key parsed, limits at their defaults); false with an
/// error naming the flag.
bool securityConfig(const ServerOptions& options, SecurityConfig& out, std::string& error);

enum class OptionsStatus
{
    Run,   ///< options parsed: start the server
    Exit,  ///< --help: print `message` to stdout and exit with exitCode (0)
    Error, ///< bad command line, config file or variable: print `message` to stderr, exit with exitCode
};

struct OptionsResult
{
    OptionsStatus status = OptionsStatus::Run;
    int exitCode = 0; ///< 0 for Run and Exit; kExitStartFailed for Error
    /// Help text, or one line (printable ASCII: what the file or variable held is quoted escaped and cut
    /// short) naming the flag, config key or variable.
    std::string message;
};

/// One setting, as it can be given in each of the three places (documentation and tests).
struct OptionName
{
    std::string flag;      ///< e.g. "--tick-hz"
    std::string configKey; ///< e.g. "tick-hz"
    std::string variable;  ///< e.g. "POLYTOPE_TICK_HZ"
};

/// Parses argv (argv[0] is the program name), the config file and the POLYTOPE_* environment into `out`,
/// which holds the defaults on entry. The config file is read as regular_file.h reads (a regular file of at
/// most kMaxConfigFileBytes; a FIFO or a device is refused without blocking) and must be text. Every
/// floating-point setting must be finite and within its range (options.cpp says why each). Never throws and
/// never exits; on Error `out` may be partly written.
OptionsResult parseServerOptions(int argc, const char* const* argv, ServerOptions& out);

/// The settings that parseServerOptions reads from all three places (not --config, --help, --list-scenes).
std::vector<OptionName> serverOptionNames();

} // namespace polytope::server

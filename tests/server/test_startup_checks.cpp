// polytope-server start-up checks (issue 15, F5): what cannot work is refused before anything opens, with one
// line naming the setting and a non-zero status. Floating-point settings finite and in range; checkpoint
// paths writable (probed without touching an existing checkpoint); FIFOs, devices, directories and oversized
// files refused unread as scene, config and checkpoint files; a checkpoint of another scene or tick rate
// refused naming the room and both scenes; a failed final checkpoint a non-zero exit status (the built
// polytope-server is run for what only main() does).
#include "polytope/server/checkpoint.h"
#include "polytope/server/options.h"
#include "polytope/server/regular_file.h"
#include "polytope/server/scene_file.h"
#include "polytope/server/server.h"
#include "support/server_options.h"
#include "support/temp_files.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace polytope;
using namespace polytope::server;
using polytope::test::parseArguments;
using polytope::test::readFile;
using polytope::test::ScopedEnvironment;
using polytope::test::sparseFile;
using polytope::test::TempDirectory;
using polytope::test::writeFile;
namespace fs = std::filesystem;

namespace
{

void makeFifo(const std::string& path)
{
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
}

/// A message fit for one line on a terminal: printable ASCII only, and short.
void checkOneLine(const std::string& message)
{
    INFO(server::printableExcerpt(message, 1000));
    CHECK(!message.empty());
    CHECK(message.size() <= 400);
    for (const char c : message)
    {
        CHECK((c >= 0x20 && c < 0x7f));
    }
}

/// Parses `args`; expects an Error whose message names `setting`.
void expectRefused(const std::vector<std::string>& args, const std::string& setting)
{
    ServerOptions options;
    const OptionsResult result = parseArguments(args, options);
    INFO(server::printableExcerpt(args.empty() ? std::string() : args.back()) << " -> " << result.message);
    CHECK(result.status == OptionsStatus::Error);
    CHECK(result.exitCode == kExitStartFailed);
    CHECK_THAT(result.message, Catch::Contains(setting));
    checkOneLine(result.message);
}

/// Options with defaults and the given files, for checkServerFiles.
ServerOptions optionsWith(const std::string& checkpoint, const std::string& restore, const std::string& scene,
                          const std::string& sceneDirectory = "scenes")
{
    ServerOptions options;
    options.checkpointFile = checkpoint;
    options.restoreFile = restore;
    if (!scene.empty())
    {
        options.server.scene = scene;
    }
    options.server.sceneDirectory = sceneDirectory;
    return options;
}

/// checkServerFiles' error for `options`, or "" when it accepts them.
std::string fileCheckError(const ServerOptions& options)
{
    std::string error;
    if (checkServerFiles(options, error))
    {
        return {};
    }
    CHECK(!error.empty());
    checkOneLine(error);
    return error;
}

/// A server with one room "main" (rooms inline, nothing sent anywhere).
std::unique_ptr<Server> makeServer(const std::string& scene, int tickRateHz = 60,
                                   const std::string& sceneDirectory = "scenes")
{
    RoomConfig room;
    room.room = "main";
    room.scene = scene;
    room.tickRateHz = tickRateHz;
    room.snapshotRateHz = std::min(room.snapshotRateHz, tickRateHz);
    room.sceneDirectory = sceneDirectory;
    ServerConfig config;
    config.rooms = {room};
    config.security.insecure = true;
    config.wallClock = [] { return 1.8e9; };
    std::string error;
    std::unique_ptr<Server> server = Server::create(
        config, [](const protocol::Address&, std::span<const std::uint8_t>) {}, error);
    INFO(error);
    REQUIRE(server);
    return server;
}

void runFor(Server& server, double seconds)
{
    for (double now = 1.0 / 120.0; now <= seconds; now += 1.0 / 120.0)
    {
        server.update(now);
    }
}

} // namespace

TEST_CASE("startup: quoted input is escaped and cut at an escape's boundary", "[server][startup]")
{
    CHECK(printableExcerpt("plain text") == "plain text");
    CHECK(printableExcerpt("a\nb\x1b[0m\\") == "a\\x0ab\\x1b[0m\\\\");
    CHECK(printableExcerpt("caf\xc3\xa9") == "caf\\xc3\\xa9");
    CHECK(printableExcerpt(std::string("\0", 1)) == "\\x00");
    CHECK(printableExcerpt(std::string(64, 'x'), 64) == std::string(64, 'x'));
    CHECK(printableExcerpt(std::string(65, 'x'), 64) == std::string(61, 'x') + "...");
    // Never half an escape: "\x0a" is kept whole or left out.
    for (std::size_t cap = 4; cap < 40; ++cap)
    {
        const std::string cut = printableExcerpt(std::string(100, '\n'), cap);
        INFO(cap << ": " << cut);
        CHECK(cut.size() <= cap);
        CHECK(cut.ends_with("..."));
        CHECK((cut.size() - 3) % 4 == 0);
    }
}

// ---- Floating-point settings ---------------------------------------------------------------------------

TEST_CASE("startup: every floating-point setting must be finite and within its range", "[server][startup]")
{
    ScopedEnvironment env;
    struct FloatFlag
    {
        const char* flag;
        const char* min;
        const char* max;
        const char* below;
        const char* above;
    };
    // Every floating-point setting of ServerOptions (the others are integers, strings and booleans).
    const std::vector<FloatFlag> flags = {
        {"--client-timeout", "0.1", "3600", "0.09", "3600.5"},
        {"--connect-rate-per-ip", "1", "1000000", "0.5", "1000001"},
        {"--connect-rate", "1", "10000000", "0.999", "10000001"},
        {"--checkpoint-interval", "1", "86400", "0.5", "86401"},
    };
    const std::vector<OptionName> names = serverOptionNames();
    for (const FloatFlag& f : flags)
    {
        INFO(f.flag);
        const auto named =
            std::find_if(names.begin(), names.end(), [&](const OptionName& n) { return n.flag == f.flag; });
        REQUIRE(named != names.end());

        for (const char* good : {f.min, f.max})
        {
            ServerOptions options;
            const OptionsResult result = parseArguments({f.flag, good}, options);
            INFO(good << " -> " << result.message);
            CHECK(result.status == OptionsStatus::Run);
        }
        for (const std::string& bad :
             std::vector<std::string>{"nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e308", "1e400", "-1",
                                      "0", "abc", "1,5", "0x", f.below, f.above})
        {
            expectRefused({f.flag, bad}, f.flag);
            expectRefused({std::string(f.flag) + "=" + bad}, f.flag);
        }
        // The same checks whatever the value came from.
        {
            ScopedEnvironment inner;
            inner.set(named->variable, "nan");
            ServerOptions options;
            const OptionsResult result = parseArguments({}, options);
            CHECK(result.status == OptionsStatus::Error);
            CHECK_THAT(result.message, Catch::Contains(f.flag) && Catch::Contains(named->variable));
        }
        {
            TempDirectory dir("startup");
            writeFile(dir / "server.toml", named->configKey + " = inf\n");
            ServerOptions options;
            const OptionsResult result = parseArguments({"--config", dir / "server.toml"}, options);
            CHECK(result.status == OptionsStatus::Error);
            CHECK_THAT(result.message,
                       Catch::Contains(f.flag) && Catch::Contains("key '" + named->configKey + "'"));
        }
    }

    ServerOptions options;
    REQUIRE(parseArguments({"--client-timeout", "0.1", "--connect-rate-per-ip", "1e6", "--connect-rate",
                            "2.5", "--checkpoint-interval", "86400"},
                           options)
                .status == OptionsStatus::Run);
    CHECK(options.server.clientTimeoutSeconds == 0.1);
    CHECK(options.connectRatePerIp == 1e6);
    CHECK(options.connectRate == 2.5);
    CHECK(options.checkpointSeconds == 86400.0);
}

TEST_CASE("startup: each message names the setting at fault", "[server][startup]")
{
    ScopedEnvironment env;
    {
        ServerOptions options;
        const OptionsResult result = parseArguments({"--connect-rate", "nan"}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("--connect-rate") && !Catch::Contains("--public-address"));
    }
    // securityConfig on options filled in by hand (not through the parser) names the flags too.
    {
        ServerOptions options;
        options.insecure = true;
        SecurityConfig security;
        std::string error;
        options.connectRate = std::nan("");
        CHECK_FALSE(securityConfig(options, security, error));
        CHECK_THAT(error, Catch::StartsWith("--connect-rate:"));
        options.connectRate = 4000.0;
        options.connectRatePerIp = 0.0;
        CHECK_FALSE(securityConfig(options, security, error));
        CHECK_THAT(error, Catch::StartsWith("--connect-rate-per-ip:"));
        options.connectRatePerIp = 32.0;
        options.publicAddresses = {"no port here"};
        CHECK_FALSE(securityConfig(options, security, error));
        CHECK_THAT(error, Catch::StartsWith("--public-address:"));
        options.publicAddresses = {};
        options.tokenKey = "zz";
        CHECK_FALSE(securityConfig(options, security, error));
        CHECK_THAT(error, Catch::StartsWith("--token-key:"));
    }
    expectRefused({"--tick-hz", "30", "--snapshot-hz", "60"}, "--snapshot-hz");
    expectRefused({"--scene-dir", ""}, "--scene-dir");
    expectRefused({"--config", "/nonexistent/a.toml", "--config", "/nonexistent/b.toml"}, "--config");
}

// ---- Config files --------------------------------------------------------------------------------------

TEST_CASE("startup: what a config file or variable holds is quoted escaped and short", "[server][startup]")
{
    ScopedEnvironment env;
    TempDirectory dir("startup");
    SECTION("a binary config file is refused as such, not echoed")
    {
        std::string bytes;
        for (int i = 0; i < 4096; ++i)
        {
            bytes += static_cast<char>((i * 7919 + 13) & 0xff);
        }
        writeFile(dir / "binary.toml", bytes);
        expectRefused({"--config", dir / "binary.toml"}, "--config");
        ServerOptions options;
        CHECK_THAT(parseArguments({"--config", dir / "binary.toml"}, options).message,
                   Catch::Contains("not a text file"));

        writeFile(dir / "nul.toml", std::string("tick-hz = 30\n\0\n", 15));
        expectRefused({"--config", dir / "nul.toml"}, "--config");
    }
    SECTION("bytes outside ASCII in a key are escaped")
    {
        writeFile(dir / "high.toml", "\xff\xfe\xc3\xa9t\xe9 = 1\n");
        expectRefused({"--config", dir / "high.toml"}, "--config");
        ServerOptions options;
        CHECK_THAT(parseArguments({"--config", dir / "high.toml"}, options).message,
                   Catch::Contains("\\xff\\xfe"));
    }
    SECTION("a very long line is cut")
    {
        writeFile(dir / "long.toml", std::string(100000, 'x') + "\n");
        expectRefused({"--config", dir / "long.toml"}, "--config");
    }
    SECTION("a variable holding control characters")
    {
        env.set("POLYTOPE_TICK_HZ", "\x1b[2J\x1b[31m60");
        ServerOptions options;
        const OptionsResult result = parseArguments({}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("POLYTOPE_TICK_HZ") && Catch::Contains("\\x1b"));
        checkOneLine(result.message);
    }
    SECTION("a room entry holding control characters")
    {
        expectRefused({"--room", "a\nb=", "--insecure"}, "--room");
    }
}

TEST_CASE("startup: config files that are not regular files, or too large, are refused unread",
          "[server][startup]")
{
    ScopedEnvironment env;
    TempDirectory dir("startup");
    makeFifo(dir / "fifo.toml");
    fs::create_directories(dir.path() / "folder.toml");
    sparseFile(dir / "huge.toml", kMaxConfigFileBytes + 1);

    const std::vector<std::pair<std::string, std::string>> cases = {
        {dir / "fifo.toml", "a FIFO"},
        {dir / "folder.toml", "a directory"},
        {"/dev/zero", "a character device"},
        {dir / "huge.toml", "larger than"},
        {dir / "missing.toml", "cannot be opened"},
    };
    for (const auto& [path, why] : cases)
    {
        INFO(path);
        ServerOptions options;
        OptionsResult result = parseArguments({"--config", path}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message,
                   Catch::StartsWith("--config: config file '" + path + "'") && Catch::Contains(why));
        checkOneLine(result.message);

        ScopedEnvironment inner;
        inner.set("POLYTOPE_CONFIG", path);
        ServerOptions fromVariable;
        result = parseArguments({}, fromVariable);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message,
                   Catch::StartsWith("POLYTOPE_CONFIG: config file '" + path + "'") && Catch::Contains(why));
    }

    // At the cap exactly: read.
    std::string text = "tick-hz = 30\n";
    while (text.size() < kMaxConfigFileBytes)
    {
        text += "# " + std::string(std::min<std::size_t>(77, kMaxConfigFileBytes - text.size()), '-') + "\n";
    }
    text.resize(kMaxConfigFileBytes - 1);
    text += "\n";
    writeFile(dir / "full.toml", text);
    ServerOptions options;
    const OptionsResult result = parseArguments({"--config", dir / "full.toml"}, options);
    INFO(result.message);
    CHECK(result.status == OptionsStatus::Run);
    CHECK(options.server.tickRateHz == 30);
}

// ---- Checkpoint paths ----------------------------------------------------------------------------------

TEST_CASE("startup: a checkpoint path that cannot be written is refused", "[server][startup][checkpoint]")
{
    TempDirectory dir("startup");
    makeFifo(dir / "fifo.ckpt");
    const std::vector<std::pair<std::string, std::string>> refused = {
        {dir / "no-such-dir/state.ckpt", "No such file or directory"},
        {dir.path().string(), "is a directory"},
        {dir / "sub/", "not a file name"},
        {"/proc/self/polytope-state.ckpt", "cannot create"},
        {"/proc/version", "cannot create"}, // exists, but nothing can be created next to it
        {"/dev/null", "not a regular file"},
        {dir / "fifo.ckpt", "not a regular file"},
    };
    for (const auto& [path, why] : refused)
    {
        INFO(path);
        const std::string error = fileCheckError(optionsWith(path, "", ""));
        CHECK_THAT(error, Catch::StartsWith("--checkpoint '" + path + "'") && Catch::Contains(why));
    }
    CHECK_FALSE(fs::exists(dir / "no-such-dir"));

    // A new file in a writable directory: accepted, and nothing is left behind.
    CHECK(fileCheckError(optionsWith(dir / "new.ckpt", "", "")).empty());
    CHECK_FALSE(fs::exists(dir / "new.ckpt"));
    CHECK_FALSE(fs::exists(dir / "new.ckpt.tmp"));
}

TEST_CASE(
    "startup: probing a checkpoint path leaves an existing checkpoint and a left-over temporary file alone",
    "[server][startup][checkpoint]")
{
    TempDirectory dir("startup");
    const std::string path = dir / "state.ckpt";
    const std::vector<std::uint8_t> payload = {1, 2, 3, 4, 5};
    std::string error;
    REQUIRE(writeCheckpointFile(path, payload, error));
    const std::string before = readFile(path);
    const auto modified = fs::last_write_time(path);

    CHECK(probeCheckpointPath(path, error));
    CHECK(readFile(path) == before);
    CHECK(fs::last_write_time(path) == modified);
    CHECK_FALSE(fs::exists(checkpointTemporaryPath(path)));

    writeFile(checkpointTemporaryPath(path), "left over");
    CHECK(probeCheckpointPath(path, error));
    CHECK(readFile(checkpointTemporaryPath(path)) == "left over");
    CHECK(readFile(path) == before);

    // The temporary file's name taken by a FIFO or a link: refused by the probe and by the writer, at once.
    fs::remove(checkpointTemporaryPath(path));
    makeFifo(checkpointTemporaryPath(path));
    CHECK_FALSE(probeCheckpointPath(path, error));
    CHECK_FALSE(writeCheckpointFile(path, payload, error));
    CHECK(readFile(path) == before);
    fs::remove(checkpointTemporaryPath(path));
    fs::create_symlink(dir / "elsewhere", checkpointTemporaryPath(path));
    CHECK_FALSE(probeCheckpointPath(path, error));
    CHECK_FALSE(writeCheckpointFile(path, payload, error));
    CHECK_FALSE(fs::exists(dir / "elsewhere"));
    CHECK(readFile(path) == before);
}

// ---- Restore, scene and scene-directory files ----------------------------------------------------------

TEST_CASE("startup: restore files that are not regular files, or too large, are refused unread",
          "[server][startup][checkpoint]")
{
    TempDirectory dir("startup");
    makeFifo(dir / "fifo.ckpt");
    sparseFile(dir / "huge.ckpt", kMaxCheckpointFileBytes + 1);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {dir / "fifo.ckpt", "a FIFO"},
        {dir.path().string(), "a directory"},
        {"/dev/zero", "a character device"},
        {dir / "huge.ckpt", "larger than"},
    };
    for (const auto& [path, why] : cases)
    {
        INFO(path);
        const std::string error = fileCheckError(optionsWith("", path, ""));
        CHECK_THAT(error, Catch::StartsWith("--restore '" + path + "'") && Catch::Contains(why));
        std::vector<std::uint8_t> payload;
        std::string readError;
        CHECK_FALSE(readCheckpointFile(path, payload, readError));
        CHECK_THAT(readError, Catch::Contains(why));
    }
    // A missing restore file is refused at start-up too.
    CHECK_THAT(fileCheckError(optionsWith("", dir / "missing.ckpt", "")), Catch::StartsWith("--restore"));
}

TEST_CASE("startup: scene files and the scene directory are checked, naming --scene, --room or --scene-dir",
          "[server][startup]")
{
    TempDirectory dir("startup");
    makeFifo(dir / "fifo.json");
    fs::create_directories(dir.path() / "folder.json");
    sparseFile(dir / "huge.json", kMaxSceneFileBytes + 1);
    writeFile(dir / "fine.json", R"({"builtin": "stack10"})");
    const std::string sceneDirectory = dir.path().string();

    for (const auto& [path, why] : std::vector<std::pair<std::string, std::string>>{
             {dir / "fifo.json", "a FIFO"},
             {dir / "folder.json", "a directory"},
             {dir / "huge.json", "larger than"},
             {dir / "missing.json", "cannot be opened"},
         })
    {
        INFO(path);
        std::string error = fileCheckError(optionsWith("", "", path, sceneDirectory));
        CHECK_THAT(error, Catch::StartsWith("--scene '" + path + "'") && Catch::Contains(why));

        ServerOptions rooms = optionsWith("", "", "stack10", sceneDirectory);
        rooms.rooms = {"lobby", "arena=" + path};
        error = fileCheckError(rooms);
        CHECK_THAT(error, Catch::StartsWith("--room arena=") && Catch::Contains(why));

        // The room itself reads by the same rules (a FIFO does not block Server::create).
        RoomConfig room;
        room.scene = path;
        ServerConfig config;
        config.rooms = {room};
        config.security.insecure = true;
        std::string createError;
        CHECK_FALSE(Server::create(
            config, [](const protocol::Address&, std::span<const std::uint8_t>) {}, createError));
        CHECK_THAT(createError, Catch::Contains(why));
    }
    // Names: built in, NAME.json in the scene directory, or refused naming the flag.
    CHECK(fileCheckError(optionsWith("", "", "stack10", sceneDirectory)).empty());
    CHECK(fileCheckError(optionsWith("", "", "fine", sceneDirectory)).empty());
    CHECK(fileCheckError(optionsWith("", "", dir / "fine.json", sceneDirectory)).empty());
    CHECK_THAT(fileCheckError(optionsWith("", "", "nosuch", sceneDirectory)),
               Catch::StartsWith("--scene 'nosuch'"));
    CHECK_THAT(fileCheckError(optionsWith("", "", "fifo", sceneDirectory)),
               Catch::StartsWith("--scene 'fifo'"));
    CHECK_THAT(fileCheckError(optionsWith("", "", "bad name!", sceneDirectory)),
               Catch::StartsWith("--scene 'bad name!'"));
    CHECK_THAT(fileCheckError(optionsWith("", "", "stack10", dir / "fine.json")),
               Catch::StartsWith("--scene-dir"));
    // A missing scene directory is not an error by itself: only the built-in scenes are there to load.
    CHECK(fileCheckError(optionsWith("", "", "stack10", dir / "no-such-dir")).empty());

    // --scene-dir is a setting like the others.
    ScopedEnvironment env;
    ServerOptions options;
    REQUIRE(
        parseArguments({"--scene-dir", sceneDirectory, "--room", "a=fine", "--room", "b"}, options).status ==
        OptionsStatus::Run);
    std::vector<RoomConfig> rooms;
    std::string error;
    REQUIRE(roomConfigs(options, rooms, error));
    REQUIRE(rooms.size() == 2);
    CHECK(rooms[0].sceneDirectory == sceneDirectory);
    CHECK(rooms[1].sceneDirectory == sceneDirectory);
    env.set("POLYTOPE_SCENE_DIR", "/srv/polytope/scenes");
    ServerOptions fromVariable;
    REQUIRE(parseArguments({}, fromVariable).status == OptionsStatus::Run);
    CHECK(fromVariable.server.sceneDirectory == "/srv/polytope/scenes");
    ServerOptions defaults;
    CHECK(defaults.server.sceneDirectory == "scenes");
}

// ---- Checkpoints of another scene ----------------------------------------------------------------------

TEST_CASE("startup: a checkpoint of another scene or tick rate is refused, naming the room and both scenes",
          "[server][startup][checkpoint]")
{
    std::unique_ptr<Server> pile = makeServer("pile1000");
    runFor(*pile, 0.5);
    std::vector<std::uint8_t> state;
    pile->saveState(state);

    std::unique_ptr<Server> stack = makeServer("stack10");
    runFor(*stack, 0.1);
    const std::uint64_t tickBefore = stack->room(0).tick();
    const std::size_t bodiesBefore = stack->room(0).world().bodyCount();
    std::string error;
    CHECK_FALSE(stack->restoreState(state, error));
    INFO(error);
    CHECK_THAT(error, Catch::Contains("room 'main'") && Catch::Contains("'pile1000'") &&
                          Catch::Contains("'stack10'"));
    CHECK(stack->room(0).tick() == tickBefore);
    CHECK(stack->room(0).world().bodyCount() == bodiesBefore);

    // Through a checkpoint file, as --restore does.
    TempDirectory dir("startup");
    REQUIRE(writeCheckpointFile(dir / "pile.ckpt", state, error));
    std::vector<std::uint8_t> fromFile;
    REQUIRE(readCheckpointFile(dir / "pile.ckpt", fromFile, error));
    CHECK_FALSE(stack->restoreState(fromFile, error));
    CHECK_THAT(error, Catch::Contains("'pile1000'"));

    // The same scene, however named, restores.
    std::unique_ptr<Server> sameScene = makeServer("pile:1000");
    REQUIRE(sameScene->restoreState(state, error));
    CHECK(sameScene->room(0).tick() == pile->room(0).tick());

    // The same scene at another tick rate does not.
    std::unique_ptr<Server> slower = makeServer("pile1000", 30);
    CHECK_FALSE(slower->restoreState(state, error));
    CHECK_THAT(error, Catch::Contains("room 'main'") && Catch::Contains("60 Hz") && Catch::Contains("30 Hz"));
}

TEST_CASE("startup: a checkpoint of a scene file whose definition changed since is refused",
          "[server][startup][checkpoint]")
{
    TempDirectory dir("startup");
    const std::string spheres = R"({"bodies": [
        {"shape_type": "Sphere", "shape": {"radius": 0.5}, "position": {"x": 0, "y": 2, "z": 0}}]})";
    writeFile(dir / "arena.json", spheres);
    std::unique_ptr<Server> before = makeServer("arena", 60, dir.path().string());
    std::vector<std::uint8_t> state;
    before->saveState(state);

    std::string error;
    std::unique_ptr<Server> same = makeServer("arena", 60, dir.path().string());
    CHECK(same->restoreState(state, error));

    writeFile(dir / "arena.json", R"({"bodies": [
        {"shape_type": "Sphere", "shape": {"radius": 0.75}, "position": {"x": 0, "y": 2, "z": 0}}]})");
    std::unique_ptr<Server> after = makeServer("arena", 60, dir.path().string());
    CHECK_FALSE(after->restoreState(state, error));
    CHECK_THAT(error, Catch::Contains("room 'main'") && Catch::Contains("'arena'") &&
                          Catch::Contains("definition changed"));
}

TEST_CASE("startup: a checkpoint of the room state version before scene identities is refused clearly",
          "[server][startup][checkpoint]")
{
    std::unique_ptr<Server> server = makeServer("stack10");
    std::vector<std::uint8_t> state;
    server->saveState(state);
    // The room's part starts with "ROOM" and its version: make it version 1.
    const std::uint8_t magic[4] = {'R', 'O', 'O', 'M'};
    const auto at = std::search(state.begin(), state.end(), std::begin(magic), std::end(magic));
    REQUIRE(at != state.end());
    REQUIRE(state.end() - at >= 8);
    const std::uint32_t version = 1;
    std::memcpy(&*(at + 4), &version, 4);
    std::string error;
    CHECK_FALSE(server->restoreState(state, error));
    CHECK_THAT(error, Catch::Contains("room 'main'") && Catch::Contains("version 1") &&
                          Catch::Contains("--restore"));
}

// ---- The polytope-server program -----------------------------------------------------------------------

namespace
{

/// The built polytope-server: POLYTOPE_SERVER_PATH when the build defines it, else the one next to this test
/// program (both land in the build's bin/); empty when there is none.
std::string serverProgram()
{
#ifdef POLYTOPE_SERVER_PATH
    return POLYTOPE_SERVER_PATH;
#else
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    if (error)
    {
        return {};
    }
    const fs::path candidate = self.parent_path() / "polytope-server";
    return ::access(candidate.c_str(), X_OK) == 0 ? candidate.string() : std::string();
#endif
}

/// A polytope-server process with its stdout and stderr in files.
class ServerProcess
{
  public:
    ServerProcess(const std::string& program, const std::vector<std::string>& args, const TempDirectory& dir)
        : m_out(dir / "stdout.txt"), m_err(dir / "stderr.txt")
    {
        std::vector<std::string> argv = {program};
        argv.insert(argv.end(), args.begin(), args.end());
        std::vector<char*> argvPointers;
        for (std::string& a : argv)
        {
            argvPointers.push_back(a.data());
        }
        argvPointers.push_back(nullptr);
        // The environment without POLYTOPE_* settings of the machine running the tests.
        std::vector<std::string> environment;
        for (char** e = environ; *e; ++e)
        {
            if (std::strncmp(*e, "POLYTOPE_", 9) != 0)
            {
                environment.emplace_back(*e);
            }
        }
        std::vector<char*> environmentPointers;
        for (std::string& e : environment)
        {
            environmentPointers.push_back(e.data());
        }
        environmentPointers.push_back(nullptr);

        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 1, m_out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        posix_spawn_file_actions_addopen(&actions, 2, m_err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int spawned = ::posix_spawn(&m_pid, program.c_str(), &actions, nullptr, argvPointers.data(),
                                          environmentPointers.data());
        posix_spawn_file_actions_destroy(&actions);
        REQUIRE(spawned == 0);
    }
    ~ServerProcess()
    {
        if (m_pid > 0)
        {
            ::kill(m_pid, SIGKILL);
            ::waitpid(m_pid, nullptr, 0);
        }
    }
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;

    /// Waits until stdout holds `text`; false after `seconds`.
    bool waitForOutput(const std::string& text, double seconds) const
    {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        while (std::chrono::steady_clock::now() < end)
        {
            if (readFile(m_out).find(text) != std::string::npos)
            {
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return false;
    }
    void signal(int number) const { ::kill(m_pid, number); }
    /// The exit status, or -1 when it did not exit normally within `seconds` (it is then killed).
    int wait(double seconds)
    {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        int status = 0;
        while (std::chrono::steady_clock::now() < end)
        {
            const pid_t done = ::waitpid(m_pid, &status, WNOHANG);
            if (done == m_pid)
            {
                m_pid = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return -1;
    }
    std::string standardError() const { return readFile(m_err); }

  private:
    std::string m_out;
    std::string m_err;
    pid_t m_pid = -1;
};

std::size_t lineCount(const std::string& text)
{
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

} // namespace

TEST_CASE("polytope-server: a refused start is one line on stderr and a non-zero status", "[server][startup]")
{
    const std::string program = serverProgram();
    if (program.empty())
    {
        WARN("polytope-server not found next to the test program; build it to run this test");
        return;
    }
    TempDirectory dir("startup");
    makeFifo(dir / "fifo");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--checkpoint-interval", "nan"}, "--checkpoint-interval"},
        {{"--client-timeout", "1e308"}, "--client-timeout"},
        {{"--connect-rate", "nan"}, "--connect-rate"},
        {{"--checkpoint", dir / "no-such-dir/state.ckpt"}, "--checkpoint"},
        {{"--checkpoint", dir.path().string()}, "--checkpoint"},
        {{"--checkpoint", "/proc/self/state.ckpt"}, "--checkpoint"},
        {{"--restore", "/dev/zero"}, "--restore"},
        {{"--restore", dir / "fifo"}, "--restore"},
        {{"--scene", dir / "fifo"}, "--scene"},
        {{"--config", dir / "fifo"}, "--config"},
        {{"--scene", "no-such-scene"}, "--scene"},
    };
    for (const auto& [args, setting] : cases)
    {
        INFO(args.front() << " " << args.back());
        std::vector<std::string> all = {"--insecure", "--port", "0", "--http-port", "0"};
        all.insert(all.end(), args.begin(), args.end());
        ServerProcess process(program, all, dir);
        const int status = process.wait(20.0);
        CHECK(status == kExitStartFailed);
        const std::string err = process.standardError();
        INFO(err);
        CHECK(lineCount(err) == 1);
        CHECK_THAT(err, Catch::StartsWith("polytope-server: ") && Catch::Contains(setting));
    }
}

TEST_CASE("polytope-server: a failed final checkpoint is a non-zero exit status, said on stderr",
          "[server][startup][checkpoint]")
{
    const std::string program = serverProgram();
    if (program.empty())
    {
        WARN("polytope-server not found next to the test program; build it to run this test");
        return;
    }
    TempDirectory dir("startup");
    const fs::path place = dir.path() / "checkpoints";
    fs::create_directories(place);
    const std::string path = (place / "state.ckpt").string();
    const std::vector<std::string> args = {"--insecure", "--port",      "0",       "--http-port",
                                           "0",          "--scene",     "stack10", "--checkpoint",
                                           path,         "--log-level", "info",    "--checkpoint-interval",
                                           "3600"};
    SECTION("written: exit 0")
    {
        ServerProcess process(program, args, dir);
        REQUIRE(process.waitForOutput("listening on UDP", 20.0));
        process.signal(SIGTERM);
        CHECK(process.wait(20.0) == 0);
        CHECK(process.standardError().empty());
        std::vector<std::uint8_t> state;
        std::string error;
        CHECK(readCheckpointFile(path, state, error));
    }
    SECTION("not written: exit kExitFinalCheckpointFailed")
    {
        ServerProcess process(program, args, dir);
        REQUIRE(process.waitForOutput("listening on UDP", 20.0));
        // The directory goes away while the server runs (the start-up probe left nothing in it).
        REQUIRE(fs::is_empty(place));
        fs::remove(place);
        process.signal(SIGTERM);
        CHECK(process.wait(20.0) == kExitFinalCheckpointFailed);
        const std::string err = process.standardError();
        INFO(err);
        CHECK(lineCount(err) == 1);
        CHECK_THAT(err, Catch::Contains("--checkpoint") && Catch::Contains("final checkpoint not written"));
    }
}

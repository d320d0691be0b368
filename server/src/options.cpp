// polytope-server options: flags, config file and POLYTOPE_* variables (options.h).
// Longer than 600 lines on purpose: every flag is declared here with its range, its environment variable
// and its config-file key, and checked beside its declaration; split, a flag would drift from its check.
#include "polytope/server/options.h"

#include "polytope/physics/scenes.h"
#include "polytope/server/checkpoint.h"
#include "polytope/server/regular_file.h"
#include "polytope/server/scene_file.h"

#include <CLI/CLI.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <memory>
#include <sstream>
#include <string_view>
#include <system_error>

namespace polytope::server
{
namespace
{

constexpr const char* kConfigVariable = "POLYTOPE_CONFIG";
/// CLI11's messages quote what they were given (a value, a config file's line): at most this much of them
/// is shown, escaped, so that a binary file or variable cannot fill the terminal or drive it.
constexpr std::size_t kMaxLibraryMessageBytes = 200;
constexpr std::size_t kMaxQuotedPathBytes = 256;

/// The range of a floating-point setting. Every one must be finite and within its range: CLI11's own
/// Range check lets NaN through (NaN < min and NaN > max are both false), and +-inf or 1e308 mean "never".
struct FloatRange
{
    double min;
    double max;
    const char* unit;
};

/// --client-timeout: below 0.1 s a client would be dropped between two of its own datagrams on any real
/// link (clients send at 10..60 Hz, and networks jitter by tens of ms); above an hour a client that vanished
/// keeps its slot (of --max-clients) and its bodies long after anyone could tell.
constexpr FloatRange kClientTimeoutRange{0.1, 3600.0, "seconds"};
/// --connect-rate-per-ip: below 1 per second a client cannot even resend a lost handshake datagram; a
/// million per second is more than one UDP socket reads, so anything above means "no limit".
constexpr FloatRange kConnectRatePerIpRange{1.0, 1.0e6, "datagrams per second"};
/// --connect-rate: the same over all sources; ten million per second is beyond any one socket.
constexpr FloatRange kConnectRateRange{1.0, 1.0e7, "datagrams per second"};
/// --checkpoint-interval: below a second, writing and fsyncing the whole state would take a large share of
/// the loop's time; above a day a crash loses more than a day, and the final checkpoint at shutdown is
/// written anyway.
constexpr FloatRange kCheckpointIntervalRange{1.0, 86400.0, "seconds"};

/// The shortest text that reads back as `value` ("0.1", "1e+06").
std::string number(double value)
{
    char text[32];
    const std::to_chars_result result = std::to_chars(text, text + sizeof text, value);
    return std::string(text, result.ptr);
}

bool inRange(double value, const FloatRange& range)
{
    return std::isfinite(value) && value >= range.min && value <= range.max;
}

std::string rangeText(const FloatRange& range)
{
    return "a finite number of " + std::string(range.unit) + " in " + number(range.min) + ".." +
           number(range.max);
}

/// A CLI11 check of a floating-point setting: the whole text is a number, finite, within `range`.
CLI::Validator finiteIn(const FloatRange& range)
{
    return CLI::Validator(
        [range](std::string& text)
        {
            double value = 0.0;
            const char* end = text.data() + text.size();
            const std::from_chars_result parsed = std::from_chars(text.data(), end, value);
            if ((parsed.ec != std::errc() && parsed.ec != std::errc::result_out_of_range) ||
                parsed.ptr != end)
            {
                return "not a number: '" + printableExcerpt(text) + "'";
            }
            if (parsed.ec == std::errc::result_out_of_range || !inRange(value, range))
            {
                return "must be " + rangeText(range) + ", got " + printableExcerpt(text);
            }
            return std::string();
        },
        "FLOAT in [" + number(range.min) + " - " + number(range.max) + "]");
}

/// The offset of the first byte that has no place in a text file (NUL, and control characters other than
/// tab, line feed and carriage return), or npos.
std::size_t firstBinaryByte(std::string_view text)
{
    for (std::size_t i = 0; i < text.size(); ++i)
    {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
        {
            return i;
        }
    }
    return std::string_view::npos;
}

/// CLI11's TOML/INI reader over the text read (and checked) beforehand. CLI11 still opens the path itself
/// before calling from_config, only to pass a stream that is ignored here: what is parsed is what was
/// checked. (A FIFO swapped in for the file between the check and that open would block it; doing so needs
/// write access to the config file's directory, which is the operator's.)
class CheckedConfig : public CLI::ConfigTOML
{
  public:
    explicit CheckedConfig(std::string text) : m_text(std::move(text)) {}

    std::vector<CLI::ConfigItem> from_config(std::istream& /*ignored*/) const override
    {
        std::istringstream in(m_text);
        return CLI::ConfigTOML::from_config(in);
    }

  private:
    std::string m_text;
};

/// Where the config file's name comes from: the values of every --config on the command line, else
/// POLYTOPE_CONFIG.
struct ConfigFileSource
{
    std::vector<std::string> flagValues; ///< one per --config given
    std::string path;                    ///< the file to read; empty: none
    std::string setting;                 ///< "--config" or "POLYTOPE_CONFIG"
};

/// POLYTOPE_ + the flag's name in upper case with '-' as '_': --tick-hz -> POLYTOPE_TICK_HZ.
std::string variableFor(std::string_view longName)
{
    std::string out = "POLYTOPE_";
    for (const char c : longName)
    {
        out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

std::string environment(const char* name)
{
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

ConfigFileSource findConfigFile(int argc, const char* const* argv)
{
    ConfigFileSource source;
    const std::string_view flag = "--config";
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg = argv[i] ? argv[i] : "";
        if (arg == flag && i + 1 < argc && argv[i + 1])
        {
            source.flagValues.emplace_back(argv[++i]);
        }
        else if (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag && arg[flag.size()] == '=')
        {
            source.flagValues.emplace_back(arg.substr(flag.size() + 1));
        }
    }
    if (!source.flagValues.empty())
    {
        source.path = source.flagValues.back();
        source.setting = "--config";
    }
    else
    {
        source.path = environment(kConfigVariable);
        source.setting = kConfigVariable;
    }
    return source;
}

/// Declares every setting on `app`, writing into `out`. CLI11 itself gives the precedence: command-line
/// results are taken first, the config file fills options that are still empty, and an option's
/// environment variable is read only when neither gave it a value (App::_process, CLI11 2.1.2).
void declare(CLI::App& app, ServerOptions& out)
{
    const auto withVariable = [](CLI::Option* option)
    { return option->envname(variableFor(option->get_lnames().front()))->capture_default_str(); };
    RoomConfig& config = out.server;
    withVariable(app.add_option("--port", config.port, "UDP port to listen on (0: any free port)"));
    withVariable(app.add_option("--bind", config.bindAddress, "address to bind the UDP socket to"));
    withVariable(app.add_option("--scene", config.scene, "built-in scene or scene file (.json) to simulate"));
    withVariable(app.add_option("--tick-hz", config.tickRateHz, "simulation steps per second")
                     ->check(CLI::Range(1, 1000)));
    withVariable(app.add_option("--snapshot-hz", config.snapshotRateHz, "snapshots per second to each client")
                     ->check(CLI::Range(1, 1000)));
    withVariable(
        app.add_option("--max-clients", config.maxClients, "sessions at once")->check(CLI::Range(1, 4096)));
    withVariable(app.add_option("--client-timeout", config.clientTimeoutSeconds,
                                "seconds of silence before a client is dropped")
                     ->check(finiteIn(kClientTimeoutRange)));
    withVariable(
        app.add_option("--log-level", out.logLevel, "trace, debug, info, warn, error, critical or off")
            ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"})));
    withVariable(
        app.add_option("--http-port", out.httpPort, "TCP port of /healthz and /metrics (0: no HTTP server)"));
    withVariable(app.add_option("--http-bind", out.httpBind, "address to bind the HTTP server to"));
    withVariable(app.add_option("--agones-allocate-on-join", out.agonesAllocateOnJoin,
                                "under Agones, mark the GameServer Allocated when the first client joins "
                                "(true or false)"));
    withVariable(
        app.add_option("--room", out.rooms,
                       "a room as NAME or NAME=SCENE; repeat for several (POLYTOPE_ROOM: comma-separated); "
                       "default: one room named main")
            ->delimiter(','));
    withVariable(
        app.add_option("--admin-key", out.adminKey,
                       "secret that authenticates admin commands (POLYTOPE_ADMIN_KEY); empty: admin off"));
    withVariable(app.add_option("--token-key", out.tokenKey,
                                "64 hex digits shared with the backend that makes connect tokens "
                                "(polytope-token); required unless --insecure"));
    withVariable(app.add_flag("--insecure", out.insecure,
                              "accept clients without connect tokens, unencrypted (local development only); "
                              "POLYTOPE_INSECURE and the config file take true or false"));
    withVariable(app.add_option("--public-address", out.publicAddresses,
                                "HOST:PORT that connect tokens must name (repeat, or comma-separated); "
                                "default: any address with this server's port")
                     ->delimiter(','));
    withVariable(
        app.add_option("--connect-rate-per-ip", out.connectRatePerIp,
                       "handshake and admin datagrams per second accepted from one IP address, bursts "
                       "of four times that (raise it for load tests from one machine)")
            ->check(finiteIn(kConnectRatePerIpRange)));
    withVariable(
        app.add_option("--connect-rate", out.connectRate,
                       "handshake and admin datagrams per second accepted from all addresses together, "
                       "bursts of twice that")
            ->check(finiteIn(kConnectRateRange)));
    withVariable(app.add_option("--checkpoint", out.checkpointFile,
                                "write the whole state to this file periodically and at shutdown"));
    withVariable(app.add_option("--checkpoint-interval", out.checkpointSeconds, "seconds between checkpoints")
                     ->check(finiteIn(kCheckpointIntervalRange)));
    withVariable(app.add_option("--restore", out.restoreFile, "resume from this checkpoint file at start"));
    withVariable(app.add_option("--max-client-kbps", config.maxClientKbps,
                                "bandwidth budget per client in kbit/s (0: unlimited)")
                     ->check(CLI::Range(0, 1000000)));
    // Last, so that the order of the others (serverOptionNames) stays as it was.
    withVariable(
        app.add_option("--scene-dir", config.sceneDirectory,
                       "directory of scene files: a scene name that is not built in (--scene, --room, "
                       "admin load) stands for NAME.json in it; admin load reads nothing else"));
    app.add_flag("--list-scenes", out.listScenes, "print the built-in scenes and exit")->configurable(false);
}

/// The long option name (without "--") that a CLI11 error message is about, or "" when none is named.
std::string optionNamedIn(const CLI::App& app, const std::string& message)
{
    std::string best;
    for (const CLI::Option* option : app.get_options())
    {
        for (const std::string& name : option->get_lnames())
        {
            const std::string flag = "--" + name;
            std::size_t at = message.find(flag);
            while (at != std::string::npos)
            {
                const std::size_t end = at + flag.size();
                const bool whole =
                    end == message.size() || !(std::isalnum(static_cast<unsigned char>(message[end])) ||
                                               message[end] == '-' || message[end] == '_');
                if (whole && name.size() > best.size())
                {
                    best = name;
                }
                at = message.find(flag, at + 1);
            }
        }
    }
    return best;
}

bool givenOnCommandLine(int argc, const char* const* argv, const std::string& name)
{
    const std::string flag = "--" + name;
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg = argv[i];
        if (arg == flag ||
            (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag && arg[flag.size()] == '='))
        {
            return true;
        }
    }
    return false;
}

bool givenInConfigFile(const std::string& configText, const std::string& name)
{
    try
    {
        std::istringstream in(configText);
        for (const CLI::ConfigItem& item : CLI::ConfigTOML().from_config(in))
        {
            if (item.parents.empty() && item.name == name)
            {
                return true;
            }
        }
    }
    catch (const std::exception&)
    {
    }
    return false;
}

/// Says where the value of a failed option came from, so that the message names what to fix.
std::string describeSource(int argc, const char* const* argv, const std::string& configFile,
                           const std::string& configText, const std::string& name)
{
    if (givenOnCommandLine(argc, argv, name))
    {
        return "command-line flag --" + name;
    }
    if (!configFile.empty() && givenInConfigFile(configText, name))
    {
        return "key '" + name + "' in config file " + printableExcerpt(configFile, kMaxQuotedPathBytes);
    }
    const std::string variable = variableFor(name);
    const std::string value = environment(variable.c_str());
    if (!value.empty())
    {
        return "environment variable " + variable + "='" + printableExcerpt(value) + "'";
    }
    return "";
}

OptionsResult failure(std::string message)
{
    return {OptionsStatus::Error, kExitStartFailed, std::move(message)};
}

/// A message of CLI11's, which may quote anything it was given, made printable and short.
std::string libraryMessage(const std::exception& e)
{
    return printableExcerpt(e.what(), kMaxLibraryMessageBytes);
}

/// Why `room`'s scene cannot be built, checked without building it; empty when it can be tried.
std::string sceneProblem(const RoomConfig& room)
{
    std::string why;
    if (room.buildScene)
    {
        return why;
    }
    if (isScenePath(room.scene))
    {
        if (checkRegularFile(room.scene, FileRules{kMaxSceneFileBytes, true}, why) != FileStatus::Ok)
        {
            return why;
        }
        return {};
    }
    physics::SceneName name;
    if (physics::parseSceneName(room.scene, name, why))
    {
        return {};
    }
    if (!isSceneName(room.scene))
    {
        // The built-in names, not parseSceneName's message: that repeats the name and grows with the ranges.
        return "unknown scene '" + printableExcerpt(room.scene, kMaxQuotedPathBytes) +
               "': not a scene name or a path, nor a built-in scene (" + physics::acceptedSceneNames() + ")";
    }
    const std::string file = sceneFileFor(room.sceneDirectory, room.scene);
    if (checkRegularFile(file, kSceneDirectoryFileRules, why) != FileStatus::Ok)
    {
        return "unknown scene '" + printableExcerpt(room.scene, kMaxQuotedPathBytes) +
               "': not a built-in scene, and the scene file '" + printableExcerpt(file, kMaxQuotedPathBytes) +
               "' (--scene-dir) " + why;
    }
    return {};
}

} // namespace

std::vector<OptionName> serverOptionNames()
{
    ServerOptions scratch;
    CLI::App app;
    declare(app, scratch);
    std::vector<OptionName> names;
    for (const CLI::Option* option : app.get_options())
    {
        if (!option->get_envname().empty())
        {
            const std::string& name = option->get_lnames().front();
            names.push_back({"--" + name, name, option->get_envname()});
        }
    }
    return names;
}

OptionsResult parseServerOptions(int argc, const char* const* argv, ServerOptions& out)
{
    // The config file is read here, before CLI11 sees it: a regular file (a FIFO would block CLI11's open,
    // /dev/zero would never end), of bounded size, and text.
    const ConfigFileSource config = findConfigFile(argc, argv);
    if (config.flagValues.size() > 1)
    {
        return failure("--config: given " + std::to_string(config.flagValues.size()) +
                       " times (one config file at most)");
    }
    std::string configText;
    if (!config.path.empty())
    {
        std::string why;
        const std::string named =
            config.setting + ": config file '" + printableExcerpt(config.path, kMaxQuotedPathBytes) + "'";
        if (readRegularFile(config.path, FileRules{kMaxConfigFileBytes, true}, configText, why) !=
            FileStatus::Ok)
        {
            return failure(named + ": " + why);
        }
        if (const std::size_t at = firstBinaryByte(configText); at != std::string_view::npos)
        {
            static constexpr char kHex[] = "0123456789abcdef";
            const auto byte = static_cast<unsigned char>(configText[at]);
            return failure(named + ": not a text file (byte 0x" + kHex[byte >> 4] + kHex[byte & 0xf] +
                           " at offset " + std::to_string(at) + ")");
        }
    }

    try
    {
        CLI::App app{
            "polytope-server: an authoritative rigid-body physics server over UDP.\n"
            "Every setting is also read from the config file (key without the leading --) and from\n"
            "POLYTOPE_<NAME> environment variables; flags win over the file, the file over variables."};
        app.name(argc > 0 && argv[0] ? argv[0] : "polytope-server");
        // CLI11 reads the config option before any environment variable, so POLYTOPE_CONFIG cannot be an
        // ordinary envname: it becomes the option's default, and a file named that way must exist.
        const std::string configFromEnvironment = environment(kConfigVariable);
        app.set_config("--config", configFromEnvironment,
                       "TOML/INI file of settings (also POLYTOPE_CONFIG); unknown keys are refused",
                       !configFromEnvironment.empty());
        app.config_formatter(std::make_shared<CheckedConfig>(configText));
        app.allow_config_extras(CLI::config_extras_mode::error);
        declare(app, out);

        const std::string quotedConfig = printableExcerpt(config.path, kMaxQuotedPathBytes);
        try
        {
            app.parse(argc, argv);
        }
        catch (const CLI::CallForAllHelp&)
        {
            return {OptionsStatus::Exit, 0, app.help("", CLI::AppFormatMode::All)};
        }
        catch (const CLI::Success&) // --help (CallForHelp)
        {
            return {OptionsStatus::Exit, 0, app.help()};
        }
        catch (const CLI::FileError& e)
        {
            return failure(config.setting + ": config file: " + libraryMessage(e));
        }
        catch (const CLI::ConfigError& e)
        {
            return failure(config.setting + ": config file " + quotedConfig + ": " + libraryMessage(e));
        }
        catch (const CLI::ParseError& e)
        {
            std::string message = libraryMessage(e);
            const std::string name = optionNamedIn(app, e.what());
            const std::string source =
                name.empty() ? "" : describeSource(argc, argv, config.path, configText, name);
            if (!source.empty())
            {
                message += " (from " + source + ")";
            }
            return failure(message);
        }
        out.configFile = config.path;
    }
    catch (const std::exception& e)
    {
        return failure("cannot parse options: " + libraryMessage(e));
    }

    // Settings that are fine alone but not together, named by flag; RoomConfig::validate is the backstop.
    if (out.server.snapshotRateHz > out.server.tickRateHz)
    {
        return failure("--snapshot-hz: snapshot rate must be 1..--tick-hz (" +
                       std::to_string(out.server.tickRateHz) + ") Hz, got " +
                       std::to_string(out.server.snapshotRateHz));
    }
    if (out.server.sceneDirectory.empty())
    {
        return failure("--scene-dir: empty (name a directory, or leave the default 'scenes')");
    }
    if (const std::string invalid = out.server.validate(); !invalid.empty())
    {
        return failure("invalid configuration: " + invalid);
    }
    std::vector<RoomConfig> rooms;
    std::string error;
    if (!roomConfigs(out, rooms, error))
    {
        return failure("--room: " + error);
    }
    // The key's format and the addresses here; whether a key is required (it is, unless --insecure) when the
    // server starts (securityConfig), so that tools and tests can parse options without one.
    SecurityConfig security;
    ServerOptions check = out;
    check.insecure = true;
    if (!securityConfig(check, security, error))
    {
        return failure(error);
    }
    return {};
}

bool checkServerFiles(const ServerOptions& options, std::string& error)
{
    const auto fail = [&](const std::string& flag, const std::string& path, const std::string& why)
    {
        error = flag + " '" + printableExcerpt(path, kMaxQuotedPathBytes) + "': " + why;
        return false;
    };
    std::string why;
    if (!options.checkpointFile.empty() && !probeCheckpointPath(options.checkpointFile, why))
    {
        return fail("--checkpoint", options.checkpointFile, why);
    }
    if (!options.restoreFile.empty() &&
        checkRegularFile(options.restoreFile, FileRules{kMaxCheckpointFileBytes, true}, why) !=
            FileStatus::Ok)
    {
        return fail("--restore", options.restoreFile, why);
    }
    const std::string& directory = options.server.sceneDirectory;
    struct stat info
    {
    };
    if (::stat(directory.c_str(), &info) == 0 && !S_ISDIR(info.st_mode))
    {
        return fail("--scene-dir", directory, "not a directory");
    }
    std::vector<RoomConfig> rooms;
    if (!roomConfigs(options, rooms, why))
    {
        error = "--room: " + why;
        return false;
    }
    for (std::size_t i = 0; i < rooms.size(); ++i)
    {
        if (const std::string problem = sceneProblem(rooms[i]); !problem.empty())
        {
            // A room's scene comes from its --room entry when that names one, else from --scene.
            const bool fromRoom = !options.rooms.empty() && options.rooms[i].find('=') != std::string::npos;
            return fail(fromRoom ? "--room " + printableExcerpt(rooms[i].room) + "=" : "--scene",
                        rooms[i].scene, problem);
        }
    }
    return true;
}

bool securityConfig(const ServerOptions& options, SecurityConfig& out, std::string& error)
{
    out = SecurityConfig();
    out.insecure = options.insecure;
    out.publicAddresses = options.publicAddresses;
    out.listenPort = options.server.port;
    out.bindAddress = options.server.bindAddress;
    out.attemptsPerSecondPerIp = options.connectRatePerIp;
    out.attemptBurstPerIp = 4.0 * options.connectRatePerIp;
    out.attemptsPerSecond = options.connectRate;
    out.attemptBurst = 2.0 * options.connectRate;
    // Each failure names its own flag (parseServerOptions checked the rates already; callers that fill
    // ServerOptions themselves may not have).
    if (!inRange(options.connectRatePerIp, kConnectRatePerIpRange))
    {
        error = "--connect-rate-per-ip: must be " + rangeText(kConnectRatePerIpRange) + ", got " +
                number(options.connectRatePerIp);
        return false;
    }
    if (!inRange(options.connectRate, kConnectRateRange))
    {
        error = "--connect-rate: must be " + rangeText(kConnectRateRange) + ", got " +
                number(options.connectRate);
        return false;
    }
    if (!options.tokenKey.empty())
    {
        protocol::TokenKey key{};
        if (!protocol::parseTokenKeyHex(options.tokenKey, key, error))
        {
            error = "--token-key: " + printableExcerpt(error, kMaxLibraryMessageBytes);
            return false;
        }
        out.tokenKey = key;
    }
    SecurityConfig addressesOnly; // the addresses' own check, everything else valid
    addressesOnly.insecure = true;
    addressesOnly.publicAddresses = options.publicAddresses;
    if (!validateSecurityConfig(addressesOnly, error))
    {
        error = "--public-address: " + printableExcerpt(error, kMaxLibraryMessageBytes);
        return false;
    }
    if (!validateSecurityConfig(out, error))
    {
        // What is left to fail: no key without --insecure (the message names --token-key and --insecure).
        return false;
    }
    return true;
}

bool roomConfigs(const ServerOptions& options, std::vector<RoomConfig>& out, std::string& error)
{
    out.clear();
    if (options.rooms.empty())
    {
        out.push_back(options.server);
        return true;
    }
    for (const std::string& entry : options.rooms)
    {
        RoomConfig room = options.server;
        const std::size_t equals = entry.find('=');
        room.room = entry.substr(0, equals);
        if (equals != std::string::npos)
        {
            room.scene = entry.substr(equals + 1);
        }
        if (room.room.empty() || room.scene.empty())
        {
            error = "'" + printableExcerpt(entry) + "': want NAME or NAME=SCENE";
            return false;
        }
        if (const std::string invalid = room.validate(); !invalid.empty())
        {
            error = "'" + printableExcerpt(entry) + "': " + invalid;
            return false;
        }
        for (const RoomConfig& other : out)
        {
            if (other.room == room.room)
            {
                error = "room '" + printableExcerpt(room.room) + "' given twice";
                return false;
            }
        }
        out.push_back(std::move(room));
    }
    return true;
}

} // namespace polytope::server

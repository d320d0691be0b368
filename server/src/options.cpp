#include "polytope/server/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string_view>

namespace polytope::server
{
namespace
{

constexpr const char* kConfigVariable = "POLYTOPE_CONFIG";
constexpr int kErrorExitCode = 1; // as every other start-up failure: ops tools see one "did not start" status

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
                     ->check(CLI::PositiveNumber));
    withVariable(
        app.add_option("--log-level", out.logLevel, "trace, debug, info, warn, error, critical or off")
            ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"})));
    withVariable(
        app.add_option("--http-port", out.httpPort, "TCP port of /healthz and /metrics (0: no HTTP server)"));
    withVariable(app.add_option("--http-bind", out.httpBind, "address to bind the HTTP server to"));
    withVariable(app.add_option("--agones-allocate-on-join", out.agonesAllocateOnJoin,
                                "under Agones, mark the GameServer Allocated when the first client joins "
                                "(true or false)"));
    withVariable(app.add_option("--room", out.rooms,
                                "a room as NAME or NAME=SCENE; repeat for several (POLYTOPE_ROOM: comma-separated); "
                                "default: one room named main")
                     ->delimiter(','));
    withVariable(app.add_option("--admin-key", out.adminKey,
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
    withVariable(app.add_option("--connect-rate-per-ip", out.connectRatePerIp,
                                "handshake and admin datagrams per second accepted from one IP address, bursts "
                                "of four times that (raise it for load tests from one machine)")
                     ->check(CLI::Range(1.0, 1.0e6)));
    withVariable(app.add_option("--connect-rate", out.connectRate,
                                "handshake and admin datagrams per second accepted from all addresses together, "
                                "bursts of twice that")
                     ->check(CLI::Range(1.0, 1.0e7)));
    withVariable(app.add_option("--checkpoint", out.checkpointFile,
                                "write the whole state to this file periodically and at shutdown"));
    withVariable(app.add_option("--checkpoint-interval", out.checkpointSeconds, "seconds between checkpoints")
                     ->check(CLI::Range(1.0, 86400.0)));
    withVariable(app.add_option("--restore", out.restoreFile, "resume from this checkpoint file at start"));
    withVariable(app.add_option("--max-client-kbps", config.maxClientKbps,
                                "bandwidth budget per client in kbit/s (0: unlimited)")
                     ->check(CLI::Range(0, 1000000)));
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

bool givenInConfigFile(const CLI::App& app, const std::string& file, const std::string& name)
{
    if (file.empty())
    {
        return false;
    }
    try
    {
        for (const CLI::ConfigItem& item : app.get_config_formatter_base()->from_file(file))
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
std::string describeSource(const CLI::App& app, int argc, const char* const* argv,
                           const std::string& configFile, const std::string& name)
{
    if (givenOnCommandLine(argc, argv, name))
    {
        return "command-line flag --" + name;
    }
    if (givenInConfigFile(app, configFile, name))
    {
        return "key '" + name + "' in config file " + configFile;
    }
    const std::string variable = variableFor(name);
    const std::string value = environment(variable.c_str());
    if (!value.empty())
    {
        return "environment variable " + variable + "='" + value + "'";
    }
    return "";
}

OptionsResult failure(std::string message)
{
    return {OptionsStatus::Error, kErrorExitCode, std::move(message)};
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
        CLI::Option* configOption =
            app.set_config("--config", configFromEnvironment,
                           "TOML/INI file of settings (also POLYTOPE_CONFIG); unknown keys are refused",
                           !configFromEnvironment.empty());
        app.allow_config_extras(CLI::config_extras_mode::error);
        declare(app, out);

        const auto configPath = [&]
        { return configOption->results().empty() ? configFromEnvironment : configOption->results().front(); };
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
            return failure(std::string("config file: ") + e.what());
        }
        catch (const CLI::ConfigError& e)
        {
            return failure("config file " + configPath() + ": " + e.what());
        }
        catch (const CLI::ParseError& e)
        {
            std::string message = e.what();
            const std::string name = optionNamedIn(app, message);
            const std::string source =
                name.empty() ? "" : describeSource(app, argc, argv, configPath(), name);
            if (!source.empty())
            {
                message += " (from " + source + ")";
            }
            return failure(message);
        }
        out.configFile = configPath();
    }
    catch (const std::exception& e)
    {
        return failure(std::string("cannot parse options: ") + e.what());
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

bool securityConfig(const ServerOptions& options, SecurityConfig& out, std::string& error)
{
    out = SecurityConfig();
    out.insecure = options.insecure;
    out.publicAddresses = options.publicAddresses;
    out.listenPort = options.server.port;
    out.attemptsPerSecondPerIp = options.connectRatePerIp;
    out.attemptBurstPerIp = 4.0 * options.connectRatePerIp;
    out.attemptsPerSecond = options.connectRate;
    out.attemptBurst = 2.0 * options.connectRate;
    if (!options.tokenKey.empty())
    {
        protocol::TokenKey key{};
        if (!protocol::parseTokenKeyHex(options.tokenKey, key, error))
        {
            error = "--token-key: " + error;
            return false;
        }
        out.tokenKey = key;
    }
    if (!validateSecurityConfig(out, error))
    {
        error = (options.insecure || !options.tokenKey.empty() ? "--public-address: " : "--token-key: ") + error;
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
            error = "'" + entry + "': want NAME or NAME=SCENE";
            return false;
        }
        if (const std::string invalid = room.validate(); !invalid.empty())
        {
            error = "'" + entry + "': " + invalid;
            return false;
        }
        for (const RoomConfig& other : out)
        {
            if (other.room == room.room)
            {
                error = "room '" + room.room + "' given twice";
                return false;
            }
        }
        out.push_back(std::move(room));
    }
    return true;
}

} // namespace polytope::server

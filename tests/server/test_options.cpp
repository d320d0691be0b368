// polytope-server options: flags > config file > POLYTOPE_* variables, every name mapped, bad values refused.
#include "polytope/server/options.h"
#include "support/server_options.h"
#include "support/temp_files.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

using namespace polytope::server;
using polytope::test::parseArguments;
using polytope::test::ScopedEnvironment;
using polytope::test::TempFile;

TEST_CASE("options: defaults when nothing is given", "[server][options]")
{
    ScopedEnvironment env;
    ServerOptions options;
    const OptionsResult result = parseArguments({}, options);
    REQUIRE(result.status == OptionsStatus::Run);
    CHECK(result.exitCode == 0);
    CHECK(options.server.port == 7777);
    CHECK(options.server.bindAddress == "0.0.0.0");
    CHECK(options.server.scene == "default");
    CHECK(options.server.tickRateHz == 60);
    CHECK(options.server.snapshotRateHz == 20);
    CHECK(options.server.maxClients == 64);
    CHECK(options.server.clientTimeoutSeconds == 10.0);
    CHECK(options.logLevel == "info");
    CHECK(options.httpPort == 8080);
    CHECK(options.httpBind == "0.0.0.0");
    CHECK(options.agonesAllocateOnJoin);
    CHECK_FALSE(options.listScenes);
    CHECK(options.configFile.empty());
}

TEST_CASE("options: a flag beats the config file, which beats the environment", "[server][options]")
{
    ScopedEnvironment env;
    env.set("POLYTOPE_TICK_HZ", "20");      // also in the file and on the command line
    env.set("POLYTOPE_SCENE", "pyramid20"); // also in the file
    env.set("POLYTOPE_MAX_CLIENTS", "9");   // only here
    const TempFile file("test_options", ".toml", "tick-hz = 30\nscene = \"stack10\"\nsnapshot-hz = 10\n");

    ServerOptions options;
    const OptionsResult result = parseArguments({"--config", file.path(), "--tick-hz", "40"}, options);
    REQUIRE(result.status == OptionsStatus::Run);
    CHECK(options.server.tickRateHz == 40);     // flag
    CHECK(options.server.scene == "stack10");   // file over environment
    CHECK(options.server.snapshotRateHz == 10); // file
    CHECK(options.server.maxClients == 9);      // environment
    CHECK(options.server.port == 7777);         // default
    CHECK(options.configFile == file.path());

    SECTION("without the flag the file wins")
    {
        ServerOptions again;
        REQUIRE(parseArguments({"--config", file.path()}, again).status == OptionsStatus::Run);
        CHECK(again.server.tickRateHz == 30);
    }
    SECTION("without the file the environment wins over the default")
    {
        ServerOptions again;
        REQUIRE(parseArguments({}, again).status == OptionsStatus::Run);
        CHECK(again.server.tickRateHz == 20);
        CHECK(again.server.scene == "pyramid20");
    }
    SECTION("POLYTOPE_CONFIG names the file when --config is absent")
    {
        env.set("POLYTOPE_CONFIG", file.path());
        ServerOptions again;
        REQUIRE(parseArguments({}, again).status == OptionsStatus::Run);
        CHECK(again.server.tickRateHz == 30);
        CHECK(again.configFile == file.path());
    }
    SECTION("an empty variable counts as unset")
    {
        env.set("POLYTOPE_TICK_HZ", "");
        ServerOptions again;
        REQUIRE(parseArguments({}, again).status == OptionsStatus::Run);
        CHECK(again.server.tickRateHz == 60);
    }
}

TEST_CASE("options: every variable and config key maps to its setting", "[server][options]")
{
    // Values that differ from every default, one per setting.
    const std::map<std::string, std::string> values = {
        {"--port", "7800"},
        {"--bind", "127.0.0.1"},
        {"--scene", "stack10"},
        {"--tick-hz", "50"},
        {"--snapshot-hz", "25"},
        {"--max-clients", "256"},
        {"--client-timeout", "3.5"},
        {"--log-level", "debug"},
        {"--http-port", "9100"},
        {"--http-bind", "127.0.0.2"},
        {"--agones-allocate-on-join", "false"},
        {"--room", "arena=stack10"},
        {"--admin-key", "s3cret"},
        {"--checkpoint", "/tmp/polytope-test.ckpt"},
        {"--checkpoint-interval", "30"},
        {"--restore", "/tmp/polytope-restore.ckpt"},
        {"--max-client-kbps", "512"},
        {"--token-key", std::string(64, 'a')},
        {"--insecure", "true"},
        {"--public-address", "game.example.com:7800"},
        {"--connect-rate-per-ip", "100"},
        {"--connect-rate", "9000"},
        {"--scene-dir", "/srv/scenes"},
    };
    const auto check = [](const ServerOptions& o)
    {
        CHECK(o.server.port == 7800);
        CHECK(o.server.bindAddress == "127.0.0.1");
        CHECK(o.server.scene == "stack10");
        CHECK(o.server.tickRateHz == 50);
        CHECK(o.server.snapshotRateHz == 25);
        CHECK(o.server.maxClients == 256);
        CHECK(o.server.clientTimeoutSeconds == 3.5);
        CHECK(o.logLevel == "debug");
        CHECK(o.httpPort == 9100);
        CHECK(o.httpBind == "127.0.0.2");
        CHECK_FALSE(o.agonesAllocateOnJoin);
        CHECK(o.rooms == std::vector<std::string>{"arena=stack10"});
        CHECK(o.adminKey == "s3cret");
        CHECK(o.checkpointFile == "/tmp/polytope-test.ckpt");
        CHECK(o.checkpointSeconds == 30.0);
        CHECK(o.restoreFile == "/tmp/polytope-restore.ckpt");
        CHECK(o.server.maxClientKbps == 512);
        CHECK(o.tokenKey == std::string(64, 'a'));
        CHECK(o.insecure);
        CHECK(o.publicAddresses == std::vector<std::string>{"game.example.com:7800"});
        CHECK(o.connectRatePerIp == 100.0);
        CHECK(o.connectRate == 9000.0);
        CHECK(o.server.sceneDirectory == "/srv/scenes");
    };

    const std::vector<OptionName> names = serverOptionNames();
    REQUIRE(names.size() == values.size());
    for (const OptionName& name : names)
    {
        INFO(name.flag);
        REQUIRE(values.count(name.flag) == 1);
        CHECK(name.configKey == name.flag.substr(2));
    }
    CHECK(names[3].variable == "POLYTOPE_TICK_HZ");

    SECTION("environment")
    {
        ScopedEnvironment env;
        for (const OptionName& name : names)
        {
            env.set(name.variable, values.at(name.flag));
        }
        ServerOptions options;
        const OptionsResult result = parseArguments({}, options);
        INFO(result.message);
        REQUIRE(result.status == OptionsStatus::Run);
        check(options);
    }
    SECTION("config file")
    {
        ScopedEnvironment env;
        std::string text = "# polytope-server settings\n";
        for (const OptionName& name : names)
        {
            text += name.configKey + " = \"" + values.at(name.flag) + "\"\n";
        }
        const TempFile file("test_options", ".toml", text);
        ServerOptions options;
        const OptionsResult result = parseArguments({"--config", file.path()}, options);
        INFO(result.message);
        REQUIRE(result.status == OptionsStatus::Run);
        check(options);
    }
    SECTION("flags")
    {
        ScopedEnvironment env;
        std::vector<std::string> args;
        for (const OptionName& name : names)
        {
            args.push_back(name.flag);
            if (name.flag != "--insecure") // a flag without a value
            {
                args.push_back(values.at(name.flag));
            }
        }
        ServerOptions options;
        const OptionsResult result = parseArguments(args, options);
        INFO(result.message);
        REQUIRE(result.status == OptionsStatus::Run);
        check(options);
    }
}

TEST_CASE("options: the server needs a token key unless --insecure, and refuses a malformed one",
          "[server][options][security]")
{
    ScopedEnvironment env;
    ServerOptions options;
    REQUIRE(parseArguments({}, options).status == OptionsStatus::Run);
    SecurityConfig security;
    std::string error;
    CHECK_FALSE(securityConfig(options, security, error));
    CHECK_THAT(error, Catch::Contains("--token-key") && Catch::Contains("--insecure"));

    ServerOptions insecure;
    REQUIRE(parseArguments({"--insecure"}, insecure).status == OptionsStatus::Run);
    CHECK(securityConfig(insecure, security, error));
    CHECK(security.insecure);
    CHECK_FALSE(security.tokenKey);

    ServerOptions keyed;
    env.set("POLYTOPE_TOKEN_KEY", std::string(62, '0') + "1f");
    REQUIRE(parseArguments({"--public-address", "a.example:7777,b.example:7777"}, keyed).status ==
            OptionsStatus::Run);
    REQUIRE(securityConfig(keyed, security, error));
    REQUIRE(security.tokenKey);
    CHECK((*security.tokenKey)[31] == 0x1f);
    CHECK(security.publicAddresses == std::vector<std::string>{"a.example:7777", "b.example:7777"});
    CHECK(security.listenPort == 7777);
    CHECK(security.attemptsPerSecondPerIp == 32.0);
    CHECK(security.attemptBurstPerIp == 128.0);

    ServerOptions bad;
    const OptionsResult result = parseArguments({"--token-key", "not-hex"}, bad);
    CHECK(result.status == OptionsStatus::Error);
    CHECK_THAT(result.message, Catch::Contains("--token-key"));
    ServerOptions badAddress;
    CHECK(parseArguments({"--insecure", "--public-address", "nocolon"}, badAddress).status ==
          OptionsStatus::Error);
}

TEST_CASE("options: a bad value is refused with the name of where it came from", "[server][options]")
{
    ScopedEnvironment env;
    ServerOptions options;

    SECTION("flag out of range")
    {
        const OptionsResult result = parseArguments({"--tick-hz", "0"}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK(result.exitCode != 0);
        CHECK_THAT(result.message, Catch::Contains("--tick-hz") && Catch::Contains("command-line flag"));
    }
    SECTION("flag not a number")
    {
        const OptionsResult result = parseArguments({"--port", "70000"}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("--port"));
    }
    SECTION("variable")
    {
        env.set("POLYTOPE_MAX_CLIENTS", "lots");
        const OptionsResult result = parseArguments({}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("POLYTOPE_MAX_CLIENTS") && Catch::Contains("lots"));
    }
    SECTION("variable with a bad boolean")
    {
        env.set("POLYTOPE_AGONES_ALLOCATE_ON_JOIN", "maybe");
        const OptionsResult result = parseArguments({}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("POLYTOPE_AGONES_ALLOCATE_ON_JOIN"));
    }
    SECTION("log level")
    {
        env.set("POLYTOPE_LOG_LEVEL", "loud");
        const OptionsResult result = parseArguments({}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("POLYTOPE_LOG_LEVEL"));
    }
    SECTION("config key, even when the variable is set too")
    {
        env.set("POLYTOPE_CLIENT_TIMEOUT", "4");
        const TempFile file("test_options", ".toml", "client-timeout = -1\n");
        const OptionsResult result = parseArguments({"--config", file.path()}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("key 'client-timeout'") && Catch::Contains(file.path()));
    }
    SECTION("unknown config key")
    {
        const TempFile file("test_options", ".toml", "tick_hz = 30\n");
        const OptionsResult result = parseArguments({"--config", file.path()}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("tick_hz") && Catch::Contains(file.path()));
    }
    SECTION("missing config file")
    {
        const OptionsResult result = parseArguments({"--config", "/nonexistent/polytope.toml"}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("/nonexistent/polytope.toml"));
    }
    SECTION("missing config file named by POLYTOPE_CONFIG")
    {
        env.set("POLYTOPE_CONFIG", "/nonexistent/polytope.toml");
        const OptionsResult result = parseArguments({}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("/nonexistent/polytope.toml"));
    }
    SECTION("settings that are fine alone but not together")
    {
        const OptionsResult result = parseArguments({"--tick-hz", "30", "--snapshot-hz", "60"}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("snapshot rate"));
    }
    SECTION("unknown flag")
    {
        const OptionsResult result = parseArguments({"--tick-rate", "30"}, options);
        CHECK(result.status == OptionsStatus::Error);
        CHECK_THAT(result.message, Catch::Contains("--tick-rate"));
    }
}

TEST_CASE("options: --help and --list-scenes", "[server][options]")
{
    ScopedEnvironment env;
    ServerOptions options;
    const OptionsResult help = parseArguments({"--help"}, options);
    CHECK(help.status == OptionsStatus::Exit);
    CHECK(help.exitCode == 0);
    CHECK_THAT(help.message, Catch::Contains("--http-port") && Catch::Contains("POLYTOPE_HTTP_PORT"));

    ServerOptions list;
    REQUIRE(parseArguments({"--list-scenes"}, list).status == OptionsStatus::Run);
    CHECK(list.listScenes);
}

TEST_CASE("options: rooms are NAME or NAME=SCENE, unique, with valid scenes", "[server][options]")
{
    ServerOptions options;
    REQUIRE(parseArguments({"--scene", "stack10", "--room", "lobby", "--room", "arena=pyramid20"}, options)
                .status == OptionsStatus::Run);
    std::vector<polytope::server::RoomConfig> rooms;
    std::string error;
    REQUIRE(polytope::server::roomConfigs(options, rooms, error));
    REQUIRE(rooms.size() == 2);
    CHECK(rooms[0].room == "lobby");
    CHECK(rooms[0].scene == "stack10");
    CHECK(rooms[1].room == "arena");
    CHECK(rooms[1].scene == "pyramid20");

    ServerOptions twice;
    const OptionsResult duplicate = parseArguments({"--room", "a", "--room", "a=stack10"}, twice);
    CHECK(duplicate.status == OptionsStatus::Error);
    CHECK(duplicate.message.find("given twice") != std::string::npos);
    ServerOptions empty;
    CHECK(parseArguments({"--room", "=stack10"}, empty).status == OptionsStatus::Error);

    ScopedEnvironment env;
    env.set("POLYTOPE_ROOM", "a=stack10,b");
    ServerOptions fromEnvironment;
    REQUIRE(parseArguments({}, fromEnvironment).status == OptionsStatus::Run);
    CHECK(fromEnvironment.rooms == std::vector<std::string>{"a=stack10", "b"});
}

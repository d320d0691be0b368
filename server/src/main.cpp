// polytope-server: the authoritative physics server.
#include "polytope/physics/scenes.h"
#include "polytope/server/udp_server.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv)
{
    using namespace polytope;
    server::ServerConfig config;
    std::string logLevel = "info";
    bool listScenes = false;

    CLI::App app{"polytope-server: an authoritative rigid-body physics server over UDP"};
    app.add_option("--port", config.port, "UDP port to listen on (0: any free port)")->capture_default_str();
    app.add_option("--bind", config.bindAddress, "address to bind")->capture_default_str();
    app.add_option("--scene", config.scene, "built-in scene to simulate")->capture_default_str();
    app.add_option("--tick-hz", config.tickRateHz, "simulation steps per second")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    app.add_option("--snapshot-hz", config.snapshotRateHz, "snapshots per second to each client")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    app.add_option("--max-clients", config.maxClients, "sessions at once")->capture_default_str()->check(CLI::Range(1, 4096));
    app.add_option("--client-timeout", config.clientTimeoutSeconds, "seconds of silence before a client is dropped")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--log-level", logLevel, "trace, debug, info, warn, error, critical or off")
        ->capture_default_str()
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    app.add_flag("--list-scenes", listScenes, "print the built-in scenes and exit");
    CLI11_PARSE(app, argc, argv);

    if (listScenes)
    {
        for (const physics::SceneInfo& scene : physics::builtinScenes())
        {
            std::printf("%-12.*s %.*s\n", static_cast<int>(scene.name.size()), scene.name.data(),
                        static_cast<int>(scene.description.size()), scene.description.data());
        }
        return 0;
    }

    spdlog::set_level(spdlog::level::from_str(logLevel));
    try
    {
        server::UdpServer server;
        std::string error;
        if (!server.open(config, error))
        {
            spdlog::error("{}", error);
            return 1;
        }
        spdlog::info("polytope-server listening on UDP {}:{}, scene '{}', {} Hz ticks, {} Hz snapshots",
                     config.bindAddress, server.localPort(), config.scene, config.tickRateHz, config.snapshotRateHz);
        server.run(true);
        const server::ServerMetrics& m = server.core().metrics();
        spdlog::info("stopped after {} ticks; {} datagrams in, {} out, {} dropped", m.ticks, m.datagramsIn,
                     m.datagramsOut, m.drops.total());
    }
    catch (const std::exception& e)
    {
        spdlog::critical("fatal: {}", e.what());
        return 1;
    }
    return 0;
}

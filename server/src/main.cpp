// polytope-server: the authoritative physics server.
#include "polytope/physics/scenes.h"
#include "polytope/server/agones_sdk.h"
#include "polytope/server/checkpoint.h"
#include "polytope/server/metrics_text.h"
#include "polytope/server/ops_http.h"
#include "polytope/server/options.h"
#include "polytope/server/udp_server.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <vector>

namespace
{

constexpr double kMetricsPublishSeconds = 0.25;

/// Renders every room and the Server's own counters for /metrics.
std::string renderMetrics(const polytope::server::UdpServer& server)
{
    const polytope::server::Server& front = server.server();
    std::vector<polytope::server::RoomMetricsView> views;
    for (std::size_t i = 0; i < front.roomCount(); ++i)
    {
        const polytope::server::Room& room = front.room(i);
        views.push_back({room.config().room, &room.metrics(), room.clientCount(), room.world().bodyCount(),
                         &room.metrics().tickSeconds, i == 0 ? server.sendErrors() : 0, room.tick()});
    }
    return polytope::server::renderPrometheus(views) + polytope::server::renderServerPrometheus(front.metrics());
}

/// Writes a checkpoint of every room; logs the outcome.
bool writeCheckpoint(const polytope::server::UdpServer& server, const std::string& path)
{
    std::vector<std::uint8_t> state;
    server.server().saveState(state);
    std::string error;
    if (!polytope::server::writeCheckpointFile(path, state, error))
    {
        spdlog::error("checkpoint not written: {}", error);
        return false;
    }
    spdlog::debug("checkpoint written to {} ({} bytes)", path, state.size());
    return true;
}

} // namespace

int main(int argc, char** argv)
{
    using namespace polytope;
    server::ServerOptions options;
    const server::OptionsResult parsed = server::parseServerOptions(argc, argv, options);
    if (parsed.status == server::OptionsStatus::Exit)
    {
        std::fputs(parsed.message.c_str(), stdout);
        return parsed.exitCode;
    }
    if (parsed.status == server::OptionsStatus::Error)
    {
        std::fprintf(stderr, "polytope-server: %s\n", parsed.message.c_str());
        return parsed.exitCode;
    }

    if (options.listScenes)
    {
        for (const physics::SceneInfo& scene : physics::builtinScenes())
        {
            std::printf("%-12.*s %.*s\n", static_cast<int>(scene.name.size()), scene.name.data(),
                        static_cast<int>(scene.description.size()), scene.description.data());
        }
        return 0;
    }

    spdlog::set_level(spdlog::level::from_str(options.logLevel));
    const server::RoomConfig& config = options.server;
    try
    {
        if (!options.configFile.empty())
        {
            spdlog::info("read configuration file {}", options.configFile);
        }
        server::UdpServer server;
        std::string error;
        server::ServerConfig serverConfig;
        serverConfig.adminKey = options.adminKey;
        if (!server::securityConfig(options, serverConfig.security, error) ||
            !server::roomConfigs(options, serverConfig.rooms, error) ||
            !server.open(serverConfig, config.bindAddress, config.port, error))
        {
            spdlog::error("{}", error);
            return 1;
        }
        spdlog::info("polytope-server listening on UDP {}:{}, {} Hz ticks, {} Hz snapshots, {} kbps per client",
                     config.bindAddress, server.localPort(), config.tickRateHz, config.snapshotRateHz,
                     config.maxClientKbps);
        for (const server::RoomConfig& room : serverConfig.rooms)
        {
            spdlog::info("room '{}': scene '{}'", room.room, room.scene);
        }
        spdlog::info(options.adminKey.empty() ? "admin commands off (no --admin-key)"
                                              : "admin commands on (authenticated with the admin key)");
        if (options.insecure)
        {
            spdlog::warn("--insecure: clients without connect tokens are accepted and their sessions are NOT "
                         "encrypted or authenticated; never expose this server to the internet");
        }
        if (serverConfig.security.tokenKey)
        {
            spdlog::info("connect tokens required{}; sessions sealed with ChaCha20-Poly1305",
                         options.insecure ? " unless tokenless (--insecure)" : "");
        }
        if (!options.restoreFile.empty())
        {
            std::vector<std::uint8_t> state;
            if (!server::readCheckpointFile(options.restoreFile, state, error) ||
                !server.server().restoreState(state, error))
            {
                spdlog::error("cannot restore {}: {}", options.restoreFile, error);
                return 1;
            }
            spdlog::info("restored {} (room '{}' at tick {})", options.restoreFile, server.firstRoom().config().room,
                         server.firstRoom().tick());
        }

        server::OpsHttpServer http;
        if (options.httpPort != 0)
        {
            server::OpsHttpConfig httpConfig;
            httpConfig.bindAddress = options.httpBind;
            httpConfig.port = options.httpPort;
            if (!http.start(httpConfig, error))
            {
                spdlog::error("{} (--http-port, POLYTOPE_HTTP_PORT; 0 disables HTTP)", error);
                return 1;
            }
            spdlog::info("HTTP /healthz and /metrics on TCP {}:{}", options.httpBind, http.port());
        }
        else
        {
            spdlog::info("HTTP endpoints disabled (--http-port 0)");
        }

        // Under Agones only (AGONES_SDK_HTTP_PORT set). Short time-outs: the sidecar is on loopback, and
        // the Shutdown call at the end must fit in the 5 s a SIGTERM leaves.
        server::AgonesSdkConfig agonesDefaults;
        agonesDefaults.requestTimeoutSeconds = 0.5;
        agonesDefaults.lifecycleAttempts = 3;
        agonesDefaults.retryDelaySeconds = 0.4;
        std::unique_ptr<server::AgonesSdk> agones = server::AgonesSdk::createFromEnvironment(agonesDefaults);
        if (agones)
        {
            spdlog::info("Agones SDK sidecar on {}:{}: health pings every {} s", agones->config().host,
                         agones->config().port, agones->config().healthIntervalSeconds);
            agones->startHealthPings();
            if (agones->ready())
            {
                spdlog::info("Agones: Ready");
            }
            else
            {
                spdlog::error("Agones: Ready was not acknowledged; the GameServer will not be allocated");
            }
        }

        double lastMetricsPublish = -kMetricsPublishSeconds;
        double lastCheckpoint = 0.0;
        bool allocateRequested = false;
        server.setLoopHook(
            [&](double now, bool ticked)
            {
                if (http.running())
                {
                    if (ticked)
                    {
                        http.publishTick(server::OpsHttpServer::Clock::now());
                    }
                    if (now - lastMetricsPublish >= kMetricsPublishSeconds)
                    {
                        lastMetricsPublish = now;
                        http.publishMetrics(renderMetrics(server));
                    }
                }
                if (!options.checkpointFile.empty() && now - lastCheckpoint >= options.checkpointSeconds)
                {
                    lastCheckpoint = now;
                    writeCheckpoint(server, options.checkpointFile);
                }
                if (agones && options.agonesAllocateOnJoin && !allocateRequested &&
                    server.server().clientCount() > 0)
                {
                    allocateRequested = true;
                    spdlog::info("Agones: first client joined, asking for Allocated");
                    if (!agones->requestAllocate())
                    {
                        spdlog::error("Agones: cannot request Allocated (health thread not running)");
                    }
                }
            });
        server.run(true);
        for (std::size_t i = 0; i < server.server().roomCount(); ++i)
        {
            const server::Room& room = server.server().room(i);
            const server::RoomMetrics& m = room.metrics();
            spdlog::info("room '{}' stopped after {} ticks; {} datagrams in, {} out, {} dropped, {} overruns",
                         room.config().room, room.tick(), m.datagramsIn, m.datagramsOut, m.drops.total(), m.overruns);
        }
        if (!options.checkpointFile.empty() && writeCheckpoint(server, options.checkpointFile))
        {
            spdlog::info("final checkpoint written to {}", options.checkpointFile);
        }

        if (agones)
        {
            const bool acknowledged = agones->shutdown();
            agones->stopHealthPings();
            const server::AgonesSdkCounters counters = agones->counters();
            spdlog::info("Agones: Shutdown {}; {} requests, {} failed",
                         acknowledged ? "acknowledged" : "failed", counters.requestsSent,
                         counters.requestsFailed);
        }
        http.stop();
    }
    catch (const std::exception& e)
    {
        spdlog::critical("fatal: {}", e.what());
        return 1;
    }
    return 0;
}

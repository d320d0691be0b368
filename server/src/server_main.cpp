// polytope-server: the authoritative physics server's main (server_main.h), shared with games' own servers.
#include "polytope/server/server_main.h"

#include "polytope/physics/scenes.h"
#include "polytope/server/agones_sdk.h"
#include "polytope/server/checkpoint.h"
#include "polytope/server/metrics_text.h"
#include "polytope/server/ops_http.h"
#include "polytope/server/options.h"
#include "polytope/server/regular_file.h"
#include "polytope/server/udp_server.h"

#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace
{

constexpr double kMetricsPublishSeconds = 0.25;
/// A start-up error is cut to this many bytes: one line on a terminal, even when it quotes a file.
constexpr std::size_t kMaxReportedBytes = 400;

/// Renders every room and the Server's own counters for /metrics.
std::string renderMetrics(const polytope::server::UdpServer& server)
{
    const polytope::server::Server& front = server.server();
    std::vector<polytope::server::RoomMetricsView> views;
    // The rooms run on their own threads: read the copies they publish.
    std::vector<polytope::server::RoomStatus> statuses;
    for (std::size_t i = 0; i < front.roomCount(); ++i)
    {
        statuses.push_back(front.roomStatus(i));
    }
    for (std::size_t i = 0; i < front.roomCount(); ++i)
    {
        const polytope::server::RoomStatus& status = statuses[i];
        views.push_back({front.room(i).config().room, &status.metrics, status.clients, status.bodies,
                         &status.metrics.tickSeconds, i == 0 ? server.sendErrors() : 0, status.tick,
                         status.queueDrops});
    }
    const polytope::server::SocketCounters socket = server.socketCounters();
    return polytope::server::renderPrometheus(views) +
           polytope::server::renderServerPrometheus(front.metrics(), &socket);
}

/// Says why the server cannot start (or did not stop cleanly): one line on stderr, however the log is set,
/// starting with the setting to fix when there is one. What files or clients gave is escaped.
void reportFailure(const std::string& setting, const std::string& message)
{
    const std::string text = polytope::server::printableExcerpt(
        setting.empty() ? message : setting + ": " + message, kMaxReportedBytes);
    std::fprintf(stderr, "polytope-server: %s\n", text.c_str());
}

/// The setting that failed when UdpServer::open did: a room's scene (--scene, or the room's --room entry)
/// when the error names a room, else the socket's address.
std::string settingOfOpenError(const polytope::server::ServerOptions& options,
                               const std::vector<polytope::server::RoomConfig>& rooms,
                               const std::string& error)
{
    for (std::size_t i = 0; i < rooms.size(); ++i)
    {
        if (error.starts_with("room '" + rooms[i].room + "': "))
        {
            const bool fromRoom = !options.rooms.empty() && options.rooms[i].find('=') != std::string::npos;
            return fromRoom ? "--room " + rooms[i].room + "=" + rooms[i].scene : "--scene " + rooms[i].scene;
        }
    }
    return "--bind " + options.server.bindAddress + " --port " + std::to_string(options.server.port);
}

/// Writes a checkpoint of every room; logs the outcome, and says why in `error` on failure.
bool writeCheckpoint(const polytope::server::UdpServer& server, const std::string& path, std::string& error)
{
    std::vector<std::uint8_t> state;
    server.server().saveState(state);
    if (!polytope::server::writeCheckpointFile(path, state, error))
    {
        spdlog::error("checkpoint not written: {}", error);
        return false;
    }
    spdlog::debug("checkpoint written to {} ({} bytes)", path, state.size());
    return true;
}

} // namespace

int polytope::server::serverMain(int argc, char** argv)
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
        reportFailure("", parsed.message);
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
    // What cannot work is refused now, before any socket opens, rather than found out later (a checkpoint
    // that fails at every interval and at shutdown, a FIFO that blocks start-up).
    if (std::string error; !server::checkServerFiles(options, error))
    {
        reportFailure("", error);
        return server::kExitStartFailed;
    }

    spdlog::set_level(spdlog::level::from_str(options.logLevel));
    const server::RoomConfig& config = options.server;
    int exitStatus = 0;
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
        if (!server::securityConfig(options, serverConfig.security, error))
        {
            reportFailure("", error); // names its flag
            return server::kExitStartFailed;
        }
        if (!server::roomConfigs(options, serverConfig.rooms, error))
        {
            reportFailure("--room", error);
            return server::kExitStartFailed;
        }
        if (!server.open(serverConfig, config.bindAddress, config.port, error))
        {
            reportFailure(settingOfOpenError(options, serverConfig.rooms, error), error);
            return server::kExitStartFailed;
        }
        spdlog::info(
            "polytope-server listening on UDP {}:{}, {} Hz ticks, {} Hz snapshots, {} kbps per client",
            config.bindAddress, server.localPort(), config.tickRateHz, config.snapshotRateHz,
            config.maxClientKbps);
        for (const server::RoomConfig& room : serverConfig.rooms)
        {
            spdlog::info("room '{}': scene '{}'", room.room, room.scene);
        }
        if (struct stat info{}; ::stat(config.sceneDirectory.c_str(), &info) == 0)
        {
            spdlog::info(
                "scene directory '{}': scene names that are not built in (admin load) are files in it",
                config.sceneDirectory);
        }
        else
        {
            spdlog::info("no scene directory '{}' (--scene-dir): admin load takes built-in scenes only",
                         config.sceneDirectory);
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
                reportFailure("--restore '" + options.restoreFile + "'", error);
                return server::kExitStartFailed;
            }
            spdlog::info("restored {} (room '{}' at tick {})", options.restoreFile,
                         server.server().room(0).config().room, server.server().room(0).tick());
        }

        server::OpsHttpServer http;
        if (options.httpPort != 0)
        {
            server::OpsHttpConfig httpConfig;
            httpConfig.bindAddress = options.httpBind;
            httpConfig.port = options.httpPort;
            if (!http.start(httpConfig, error))
            {
                reportFailure("--http-bind " + options.httpBind + " --http-port " +
                                  std::to_string(options.httpPort),
                              error + " (--http-port 0 disables HTTP)");
                return server::kExitStartFailed;
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
                    std::string checkpointError;
                    writeCheckpoint(server, options.checkpointFile, checkpointError);
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
                         room.config().room, room.tick(), m.datagramsIn, m.datagramsOut, m.drops.total(),
                         m.overruns);
        }
        if (!options.checkpointFile.empty())
        {
            if (writeCheckpoint(server, options.checkpointFile, error))
            {
                spdlog::info("final checkpoint written to {}", options.checkpointFile);
            }
            else
            {
                // The state since the last periodic checkpoint is lost: whatever restarts the server must
                // know.
                reportFailure("--checkpoint '" + options.checkpointFile + "'",
                              "final checkpoint not written: " + error);
                exitStatus = server::kExitFinalCheckpointFailed;
            }
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
        reportFailure("", std::string("fatal: ") + e.what());
        return server::kExitStartFailed;
    }
    return exitStatus;
}

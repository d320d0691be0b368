// The operations HTTP endpoint: /healthz, /metrics and 404, over real loopback TCP.
#include "polytope/server/metrics_text.h"
#include "polytope/server/ops_http.h"
#include "polytope/server/udp_server.h"

#include <catch2/catch.hpp>
#include <httplib.h>

#include <chrono>
#include <string>

using namespace polytope::server;

namespace
{

OpsHttpConfig loopbackConfig()
{
    OpsHttpConfig config;
    config.bindAddress = "127.0.0.1";
    config.port = 0; // ephemeral
    return config;
}

httplib::Client clientFor(const OpsHttpServer& server)
{
    httplib::Client client("127.0.0.1", server.port());
    client.set_connection_timeout(2, 0);
    client.set_read_timeout(2, 0);
    return client;
}

} // namespace

TEST_CASE("ops http: healthz follows the tick loop, metrics serves the published text", "[server][http]")
{
    OpsHttpServer server;
    std::string error;
    REQUIRE(server.start(loopbackConfig(), error));
    CHECK(error.empty());
    REQUIRE(server.running());
    REQUIRE(server.port() != 0);
    httplib::Client client = clientFor(server);

    SECTION("before the first tick: 503")
    {
        const httplib::Result result = client.Get("/healthz");
        REQUIRE(result);
        CHECK(result->status == 503);
    }
    SECTION("a recent tick: 200 ok")
    {
        server.publishTick(OpsHttpServer::Clock::now());
        const httplib::Result result = client.Get("/healthz");
        REQUIRE(result);
        CHECK(result->status == 200);
        CHECK(result->body == "ok\n");
    }
    SECTION("a tick older than 2 s: 503, and 200 again once the loop ticks")
    {
        server.publishTick(OpsHttpServer::Clock::now() - std::chrono::seconds(3));
        const httplib::Result stale = client.Get("/healthz");
        REQUIRE(stale);
        CHECK(stale->status == 503);
        server.publishTick(OpsHttpServer::Clock::now());
        const httplib::Result fresh = client.Get("/healthz");
        REQUIRE(fresh);
        CHECK(fresh->status == 200);
    }
    SECTION("metrics: the last text published, with Prometheus' content type")
    {
        polytope::server::RoomMetrics metrics;
        const RoomMetricsView room{"default", &metrics, 1, 26, nullptr, 0, 42};
        server.publishMetrics(renderPrometheus({&room, 1}));
        server.publishMetrics(renderPrometheus({&room, 1})); // replaces, not appends
        const httplib::Result result = client.Get("/metrics");
        REQUIRE(result);
        CHECK(result->status == 200);
        CHECK(result->get_header_value("Content-Type") == "text/plain; version=0.0.4");
        CHECK(result->body == renderPrometheus({&room, 1}));
        CHECK_THAT(result->body, Catch::Contains("polytope_ticks_total{room=\"default\"} 42\n"));
    }
    SECTION("anything else: 404")
    {
        for (const char* path : {"/", "/health", "/metrics/x", "/healthzz"})
        {
            INFO(path);
            const httplib::Result result = client.Get(path);
            REQUIRE(result);
            CHECK(result->status == 404);
        }
        const httplib::Result post = client.Post("/healthz", "{}", "application/json");
        REQUIRE(post);
        CHECK(post->status == 404);
    }

    server.stop();
    CHECK_FALSE(server.running());
    CHECK(server.port() == 0);
    server.stop(); // no-op
}

TEST_CASE("ops http: a port in use is a clear error", "[server][http]")
{
    OpsHttpServer first;
    std::string error;
    REQUIRE(first.start(loopbackConfig(), error));

    OpsHttpServer second;
    OpsHttpConfig config = loopbackConfig();
    config.port = first.port();
    CHECK_FALSE(second.start(config, error));
    CHECK_FALSE(second.running());
    CHECK_THAT(error, Catch::Contains("cannot bind") && Catch::Contains(std::to_string(first.port())));
}

TEST_CASE("ops http: stop and start again", "[server][http]")
{
    OpsHttpServer server;
    std::string error;
    REQUIRE(server.start(loopbackConfig(), error));
    CHECK_FALSE(server.start(loopbackConfig(), error)); // already running
    server.stop();
    REQUIRE(server.start(loopbackConfig(), error));
    server.publishTick(OpsHttpServer::Clock::now());
    httplib::Client client = clientFor(server);
    const httplib::Result result = client.Get("/healthz");
    REQUIRE(result);
    CHECK(result->status == 200);
}

TEST_CASE("udp server: the loop hook sees the rooms tick and the histogram counts every tick",
          "[server][http]")
{
    polytope::server::RoomConfig config;
    config.bindAddress = "127.0.0.1";
    config.port = 0;
    config.tickRateHz = 120; // a short test: 12 ticks take 0.1 s
    config.snapshotRateHz = 20;
    polytope::server::UdpServer server;
    std::string error;
    REQUIRE(server.open(config, error));

    OpsHttpServer http;
    REQUIRE(http.start(loopbackConfig(), error));
    int hookCalls = 0;
    std::uint64_t tickingCalls = 0;
    std::uint64_t publishedCount = 0;
    double lastNow = -1.0;
    bool timeWentBack = false;
    server.setLoopHook(
        [&](double now, bool ticked)
        {
            ++hookCalls;
            timeWentBack = timeWentBack || now < lastNow;
            lastNow = now;
            if (ticked)
            {
                ++tickingCalls;
                http.publishTick(OpsHttpServer::Clock::now());
            }
            // The room runs on its own thread: the hook reads the copy it publishes.
            const polytope::server::RoomStatus status = server.server().roomStatus(0);
            if (status.tick >= 12 && hookCalls < 1000)
            {
                const RoomMetricsView room{config.scene,
                                           &status.metrics,
                                           status.clients,
                                           status.bodies,
                                           &status.metrics.tickSeconds,
                                           server.sendErrors(),
                                           status.tick};
                http.publishMetrics(renderPrometheus({&room, 1}));
                publishedCount = status.metrics.tickSeconds.count();
                hookCalls = 1000; // publish and stop once
                server.stop();
            }
        });
    server.run(false);

    CHECK_FALSE(timeWentBack);
    CHECK(tickingCalls >= 1);
    // Every tick is timed into the room's histogram, and the hook saw ticks happen between its calls.
    const polytope::server::Room& room = server.server().room(0);
    CHECK(room.metrics().tickSeconds.count() == room.tick());
    CHECK(tickingCalls <= room.tick());
    httplib::Client client = clientFor(http);
    const httplib::Result health = client.Get("/healthz");
    REQUIRE(health);
    CHECK(health->status == 200);
    const httplib::Result metrics = client.Get("/metrics");
    REQUIRE(metrics);
    CHECK_THAT(metrics->body, Catch::Contains("polytope_tick_duration_seconds_count{room=\"" + config.scene +
                                              "\"} " + std::to_string(publishedCount) + "\n"));
}

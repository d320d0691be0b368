// polytope-server: the operations HTTP endpoint (cpp-httplib), for probes and Prometheus.
//
//   GET /healthz  200 "ok\n" while the tick loop is alive (it ticked within the last staleAfterSeconds),
//                 else 503 "stale\n" (or "starting\n" before the first tick was reported);
//   GET /metrics  the last published Prometheus text (metrics_text.h), content type
//                 "text/plain; version=0.0.4";
//   anything else 404.
// The HTTP server runs its own threads and never touches the game server: the loop thread publishes the
// metrics text and the time of its last tick here, under a mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace polytope::server
{

struct OpsHttpConfig
{
    std::string bindAddress = "0.0.0.0";
    std::uint16_t port = 8080;      ///< 0 picks an ephemeral port (tests)
    double staleAfterSeconds = 2.0; ///< /healthz fails when the last tick is older than this; > 0
    int threads = 2;                ///< request worker threads, >= 1
};

class OpsHttpServer
{
  public:
    using Clock = std::chrono::steady_clock;

    OpsHttpServer();
    /// Stops the server (joins its threads).
    ~OpsHttpServer();
    OpsHttpServer(const OpsHttpServer&) = delete;
    OpsHttpServer& operator=(const OpsHttpServer&) = delete;

    /// Binds and starts serving on a thread of its own. Returns false and sets error when binding fails or
    /// the server already runs.
    bool start(const OpsHttpConfig& config, std::string& error);
    /// Stops serving and joins the threads; open requests finish first. No-op when not running.
    void stop();
    bool running() const;
    /// The bound TCP port (useful when config.port was 0); 0 when not running.
    std::uint16_t port() const;

    /// Thread-safe: the text /metrics serves from now on.
    void publishMetrics(std::string text);
    /// Thread-safe: the tick loop made a tick at `when`.
    void publishTick(Clock::time_point when);

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace polytope::server

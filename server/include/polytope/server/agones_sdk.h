// polytope-server: a client of the Agones SDK sidecar's local REST API.
//
// Under Agones each game server pod runs an SDK sidecar that listens on
// http://localhost:${AGONES_SDK_HTTP_PORT}. The game server tells it Ready (it may take players), pings
// Health every few seconds (missing pings mark the GameServer Unhealthy and get it replaced), may mark
// itself Allocated, and asks for Shutdown when its session is over. Every call is `POST /<verb>` with
// the body "{}" (agones.dev, "REST Game Server Client API").
//
// Failures never leave this class as exceptions: each call returns whether the sidecar answered 2xx,
// and every failed request is logged and counted. The sidecar may start after the game server, so the
// lifecycle calls retry a few times; a request never blocks longer than its time-outs allow, so a dead
// or silent sidecar cannot hang the server.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace polytope::server
{

struct AgonesSdkConfig
{
    std::string host = "localhost";     ///< the sidecar always listens on the pod's loopback
    std::uint16_t port = 0;             ///< AGONES_SDK_HTTP_PORT (Agones sets it; 9358 by default)
    double healthIntervalSeconds = 2.0; ///< time between health pings; > 0
    double requestTimeoutSeconds = 1.0; ///< connect, read and write time-out of one request; > 0
    int lifecycleAttempts = 3;          ///< tries of ready/allocate/shutdown before giving up; >= 1
    double retryDelaySeconds = 0.5;     ///< pause between those tries; >= 0
};

/// Counters since creation; safe to read from any thread.
struct AgonesSdkCounters
{
    std::uint64_t requestsSent = 0;      ///< HTTP requests attempted, retries and health pings included
    std::uint64_t requestsFailed = 0;    ///< of those: no connection, time-out, or an answer other than 2xx
    std::uint64_t healthPingsSent = 0;   ///< health pings attempted (also counted in requestsSent)
    std::uint64_t healthPingsFailed = 0; ///< health pings that failed (also counted in requestsFailed)
};

class AgonesSdk
{
  public:
    /// A client of the sidecar described by config (config.port must not be 0).
    explicit AgonesSdk(AgonesSdkConfig config);
    /// Stops the health pings (joins the thread).
    ~AgonesSdk();
    AgonesSdk(const AgonesSdk&) = delete;
    AgonesSdk& operator=(const AgonesSdk&) = delete;

    /// Returns a client when AGONES_SDK_HTTP_PORT is set to a valid port, else nullptr (not under Agones,
    /// or a bad value, which is logged). The other fields come from `defaults`.
    static std::unique_ptr<AgonesSdk> createFromEnvironment(AgonesSdkConfig defaults = {});
    /// Parses a TCP port 1..65535 written in decimal digits only; nothing otherwise.
    static std::optional<std::uint16_t> parsePort(std::string_view text);

    /// POST /ready: the server listens and may take players. True when the sidecar said 2xx. Blocks while
    /// it tries: a refused connection fails at once, a silent sidecar costs up to a connect and a read
    /// time-out per attempt, so at most about lifecycleAttempts * (2 * requestTimeoutSeconds +
    /// retryDelaySeconds): 7 s with the defaults.
    bool ready();
    /// POST /allocate: marks this GameServer Allocated (no fleet scale-down will remove it). Same limits.
    bool allocate();
    /// POST /shutdown: asks Agones to delete this GameServer. Same limits.
    bool shutdown();
    /// POST /health once, now, without retry.
    bool health();

    /// Starts a thread that calls health() every healthIntervalSeconds (first ping at once). No-op when
    /// already running. Call start/stop/running from one thread (the owner's).
    void startHealthPings();
    /// Stops and joins that thread; returns within about requestTimeoutSeconds (longer only while a
    /// requested allocate() is still retrying; a request not yet started is dropped). No-op when not
    /// running.
    void stopHealthPings();
    bool healthPingsRunning() const { return m_healthThread.joinable(); }
    /// Non-blocking allocate() for the game loop: the health thread makes the call (with its retries)
    /// as soon as it is free. Thread-safe. Returns false, and does nothing, when that thread is not running.
    bool requestAllocate();

    AgonesSdkCounters counters() const;
    const AgonesSdkConfig& config() const { return m_config; }

  private:
    /// One POST of "{}"; counts it. False, with the reason in `failure`, on no answer or a non-2xx status.
    bool post(std::string_view path, std::string& failure);
    bool lifecycleCall(std::string_view path);
    void backgroundLoop();

    AgonesSdkConfig m_config;
    std::atomic<std::uint64_t> m_requestsSent{0};
    std::atomic<std::uint64_t> m_requestsFailed{0};
    std::atomic<std::uint64_t> m_healthPingsSent{0};
    std::atomic<std::uint64_t> m_healthPingsFailed{0};

    std::mutex m_healthMutex;
    std::condition_variable m_healthWake;
    bool m_healthStopRequested = false;       ///< guarded by m_healthMutex
    bool m_allocateRequested = false;         ///< guarded by m_healthMutex
    bool m_healthThreadRunning = false;       ///< guarded by m_healthMutex
    std::atomic<bool> m_healthFailing{false}; ///< the last ping failed (a failing streak is logged once)
    std::thread m_healthThread;
};

} // namespace polytope::server

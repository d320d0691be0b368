// The Agones SDK client against a fake sidecar: a cpp-httplib server on an ephemeral loopback port that
// records every request. Also against a sidecar that is not there and one that never answers.
#include "polytope/server/agones_sdk.h"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace polytope;
using Clock = std::chrono::steady_clock;

namespace
{

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Silences spdlog for one test (the failures under test are logged on purpose), then restores it.
struct QuietLogs
{
    spdlog::level::level_enum saved = spdlog::get_level();
    QuietLogs() { spdlog::set_level(spdlog::level::off); }
    ~QuietLogs() { spdlog::set_level(saved); }
};

/// A stand-in for the Agones SDK sidecar: answers POST on any path with 200 "{}" (or the status set for
/// that path) and records what it was sent.
class FakeSidecar
{
  public:
    struct Request
    {
        std::string method;
        std::string path;
        std::string body;
        std::string contentType;
        Clock::time_point arrival;
    };

    FakeSidecar() { install(); }
    ~FakeSidecar() { stop(); }

    /// Listens on an ephemeral port, or on `port` when it is not 0. Returns false when binding fails.
    bool start(int port = 0)
    {
        m_port = port == 0 ? m_server.bind_to_any_port("127.0.0.1") : port;
        if (port != 0 && !m_server.bind_to_port("127.0.0.1", port))
        {
            return false;
        }
        if (m_port <= 0)
        {
            return false;
        }
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
        // cpp-httplib 0.11 has no wait_until_ready(); stop() before the loop runs would be lost.
        const Clock::time_point start = Clock::now();
        while (!m_server.is_running() && secondsSince(start) < 5.0)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return m_server.is_running();
    }

    void stop()
    {
        if (m_thread.joinable())
        {
            m_server.stop();
            m_thread.join();
        }
    }

    std::uint16_t port() const { return static_cast<std::uint16_t>(m_port); }

    void setStatus(const std::string& path, int status)
    {
        std::lock_guard lock(m_mutex);
        m_statusByPath[path] = status;
    }

    std::vector<Request> requests() const
    {
        std::lock_guard lock(m_mutex);
        return m_requests;
    }

    std::vector<Request> requestsTo(const std::string& path) const
    {
        std::vector<Request> out;
        for (const Request& r : requests())
        {
            if (r.path == path)
            {
                out.push_back(r);
            }
        }
        return out;
    }

  private:
    void install()
    {
        m_server.Post(R"(/.*)",
                      [this](const httplib::Request& request, httplib::Response& response)
                      {
                          std::lock_guard lock(m_mutex);
                          m_requests.push_back({request.method, request.path, request.body,
                                                request.get_header_value("Content-Type"), Clock::now()});
                          const auto it = m_statusByPath.find(request.path);
                          response.status = it == m_statusByPath.end() ? 200 : it->second;
                          response.set_content("{}", "application/json");
                      });
    }

    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
    mutable std::mutex m_mutex;
    std::vector<Request> m_requests;
    std::map<std::string, int> m_statusByPath;
};

/// A loopback TCP port with nothing listening on it (bound, learnt, released).
std::uint16_t deadPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    ::close(fd);
    return ntohs(address.sin_port);
}

/// A loopback TCP socket that listens but never accepts: connections complete in the kernel's backlog,
/// requests are never answered.
struct SilentListener
{
    int fd = -1;
    std::uint16_t port = 0;

    SilentListener()
    {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd >= 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(fd, 16) == 0);
        socklen_t length = sizeof address;
        REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
        port = ntohs(address.sin_port);
    }
    ~SilentListener() { ::close(fd); }
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;
};

server::AgonesSdkConfig configFor(std::uint16_t port)
{
    server::AgonesSdkConfig config;
    config.host = "127.0.0.1";
    config.port = port;
    config.requestTimeoutSeconds = 0.5;
    config.retryDelaySeconds = 0.05;
    return config;
}

/// Sets or unsets an environment variable for one scope, restoring the old value after.
struct ScopedEnv
{
    std::string name;
    bool had = false;
    std::string old;

    ScopedEnv(std::string variable, const char* value) : name(std::move(variable))
    {
        if (const char* current = std::getenv(name.c_str()))
        {
            had = true;
            old = current;
        }
        if (value)
        {
            ::setenv(name.c_str(), value, 1);
        }
        else
        {
            ::unsetenv(name.c_str());
        }
    }
    ~ScopedEnv()
    {
        if (had)
        {
            ::setenv(name.c_str(), old.c_str(), 1);
        }
        else
        {
            ::unsetenv(name.c_str());
        }
    }
};

} // namespace

TEST_CASE("AGONES_SDK_HTTP_PORT decides whether there is an SDK client", "[server][agones]")
{
    CHECK(server::AgonesSdk::parsePort("9358") == std::optional<std::uint16_t>(9358));
    CHECK(server::AgonesSdk::parsePort("1") == std::optional<std::uint16_t>(1));
    CHECK(server::AgonesSdk::parsePort("65535") == std::optional<std::uint16_t>(65535));
    for (const char* bad : {"", "0", "65536", "123456", "-1", "+80", " 80", "80 ", "8o", "0x50"})
    {
        INFO("'" << bad << "'");
        CHECK_FALSE(server::AgonesSdk::parsePort(bad));
    }

    QuietLogs quiet;
    {
        ScopedEnv env("AGONES_SDK_HTTP_PORT", nullptr);
        CHECK(server::AgonesSdk::createFromEnvironment() == nullptr);
    }
    {
        ScopedEnv env("AGONES_SDK_HTTP_PORT", "not-a-port");
        CHECK(server::AgonesSdk::createFromEnvironment() == nullptr);
    }
    {
        ScopedEnv env("AGONES_SDK_HTTP_PORT", "9358");
        server::AgonesSdkConfig defaults;
        defaults.healthIntervalSeconds = 5.0;
        const auto sdk = server::AgonesSdk::createFromEnvironment(defaults);
        REQUIRE(sdk != nullptr);
        CHECK(sdk->config().port == 9358);
        CHECK(sdk->config().host == "localhost");
        CHECK(sdk->config().healthIntervalSeconds == 5.0);
        CHECK_FALSE(sdk->healthPingsRunning());
    }
}

TEST_CASE("ready, allocate and shutdown are POSTs of {} in the order called", "[server][agones]")
{
    QuietLogs quiet;
    FakeSidecar sidecar;
    REQUIRE(sidecar.start());
    server::AgonesSdk sdk(configFor(sidecar.port()));

    CHECK(sdk.ready());
    CHECK(sdk.allocate());
    CHECK(sdk.health());
    CHECK(sdk.shutdown());

    const auto requests = sidecar.requests();
    REQUIRE(requests.size() == 4);
    const char* expected[] = {"/ready", "/allocate", "/health", "/shutdown"};
    for (std::size_t i = 0; i < requests.size(); ++i)
    {
        INFO("request " << i);
        CHECK(requests[i].method == "POST");
        CHECK(requests[i].path == expected[i]);
        CHECK(requests[i].body == "{}");
        CHECK(requests[i].contentType == "application/json");
    }
    const server::AgonesSdkCounters c = sdk.counters();
    CHECK(c.requestsSent == 4);
    CHECK(c.requestsFailed == 0);
    CHECK(c.healthPingsSent == 1);
    CHECK(c.healthPingsFailed == 0);
}

TEST_CASE("health pings keep their cadence and stop cleanly", "[server][agones]")
{
    FakeSidecar sidecar;
    REQUIRE(sidecar.start());
    server::AgonesSdkConfig config = configFor(sidecar.port());
    const double interval = 0.1; // 2 s in production; the cadence logic is the same
    config.healthIntervalSeconds = interval;
    server::AgonesSdk sdk(config);

    const Clock::time_point start = Clock::now();
    sdk.startHealthPings();
    sdk.startHealthPings(); // a second start is a no-op, not a second thread
    CHECK(sdk.healthPingsRunning());
    std::this_thread::sleep_for(std::chrono::milliseconds(1050));
    const Clock::time_point stopAsked = Clock::now();
    sdk.stopHealthPings();
    const double stopSeconds = secondsSince(stopAsked);
    CHECK_FALSE(sdk.healthPingsRunning());
    const std::size_t pingsAtStop = sidecar.requestsTo("/health").size();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));

    const auto pings = sidecar.requestsTo("/health");
    CHECK(pings.size() == pingsAtStop); // nothing after stop
    CHECK(stopSeconds < 0.2);           // the thread was waiting, not sending: it wakes at once
    // First ping at once, then one every 0.1 s: 11 in 1.05 s; allow for a loaded machine.
    CHECK(pings.size() >= 9);
    CHECK(pings.size() <= 12);
    REQUIRE(pings.size() >= 2);
    CHECK(std::chrono::duration<double>(pings.front().arrival - start).count() < 0.1);
    const double span = std::chrono::duration<double>(pings.back().arrival - pings.front().arrival).count();
    const double meanGap = span / static_cast<double>(pings.size() - 1);
    CHECK(meanGap == Approx(interval).margin(0.02));
    for (std::size_t i = 1; i < pings.size(); ++i)
    {
        const double gap = std::chrono::duration<double>(pings[i].arrival - pings[i - 1].arrival).count();
        INFO("gap " << i << ": " << gap << " s");
        CHECK(gap > 0.03);
        CHECK(gap < 0.25);
    }
    const server::AgonesSdkCounters c = sdk.counters();
    CHECK(c.healthPingsSent == pings.size());
    CHECK(c.healthPingsFailed == 0);

    // Restartable after a stop.
    sdk.startHealthPings();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sdk.stopHealthPings();
    CHECK(sidecar.requestsTo("/health").size() == pings.size() + 1);
}

TEST_CASE("requestAllocate hands allocate() to the SDK thread and returns at once", "[server][agones]")
{
    QuietLogs quiet;
    FakeSidecar sidecar;
    REQUIRE(sidecar.start());
    server::AgonesSdkConfig config = configFor(sidecar.port());
    config.healthIntervalSeconds = 0.5;
    server::AgonesSdk sdk(config);

    CHECK_FALSE(sdk.requestAllocate()); // no thread to hand it to
    sdk.startHealthPings();
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the first ping is done; next one at 0.5 s
    const Clock::time_point asked = Clock::now();
    CHECK(sdk.requestAllocate());
    CHECK(secondsSince(asked) < 0.05);
    while (sidecar.requestsTo("/allocate").empty() && secondsSince(asked) < 2.0)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    sdk.stopHealthPings();

    const auto allocations = sidecar.requestsTo("/allocate");
    REQUIRE(allocations.size() == 1);
    CHECK(allocations[0].body == "{}");
    // Made at once, not at the next ping.
    CHECK(std::chrono::duration<double>(allocations[0].arrival - asked).count() < 0.25);
    CHECK(sidecar.requestsTo("/health").size() == 1);
}

TEST_CASE("an error status is a failure: retried, counted, reported", "[server][agones]")
{
    QuietLogs quiet;
    FakeSidecar sidecar;
    REQUIRE(sidecar.start());
    sidecar.setStatus("/allocate", 500);
    sidecar.setStatus("/health", 503);
    server::AgonesSdkConfig config = configFor(sidecar.port());
    config.lifecycleAttempts = 3;
    server::AgonesSdk sdk(config);

    CHECK_FALSE(sdk.allocate());
    CHECK(sidecar.requestsTo("/allocate").size() == 3);
    CHECK_FALSE(sdk.health()); // health is never retried: the next ping is the retry
    CHECK(sidecar.requestsTo("/health").size() == 1);
    CHECK(sdk.ready());

    const server::AgonesSdkCounters c = sdk.counters();
    CHECK(c.requestsSent == 5);
    CHECK(c.requestsFailed == 4);
    CHECK(c.healthPingsSent == 1);
    CHECK(c.healthPingsFailed == 1);
}

TEST_CASE("ready retries until a late sidecar comes up", "[server][agones]")
{
    QuietLogs quiet;
    const std::uint16_t port = deadPort();
    server::AgonesSdkConfig config = configFor(port);
    config.lifecycleAttempts = 40;
    config.retryDelaySeconds = 0.05;
    server::AgonesSdk sdk(config);

    FakeSidecar sidecar;
    bool started = false; // Catch2 v2 assertions are not thread-safe: check it after the join
    std::thread late(
        [&]
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            started = sidecar.start(port);
        });
    const bool ok = sdk.ready();
    late.join();
    REQUIRE(started);
    CHECK(ok);
    CHECK(sidecar.requestsTo("/ready").size() == 1);
    const server::AgonesSdkCounters c = sdk.counters();
    CHECK(c.requestsFailed >= 1); // the attempts before it listened
    CHECK(c.requestsSent == c.requestsFailed + 1);
}

TEST_CASE("a dead sidecar neither hangs nor crashes the caller", "[server][agones]")
{
    QuietLogs quiet;
    server::AgonesSdkConfig config = configFor(deadPort());
    config.lifecycleAttempts = 3;
    config.retryDelaySeconds = 0.05;
    config.healthIntervalSeconds = 0.05;
    server::AgonesSdk sdk(config);

    const Clock::time_point start = Clock::now();
    CHECK_FALSE(sdk.ready());
    CHECK_FALSE(sdk.allocate());
    CHECK_FALSE(sdk.shutdown());
    CHECK(secondsSince(start) < 2.0); // refused connections fail at once; only the retry pauses add up

    sdk.startHealthPings();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const Clock::time_point stopAsked = Clock::now();
    sdk.stopHealthPings();
    CHECK(secondsSince(stopAsked) < 0.5);

    const server::AgonesSdkCounters c = sdk.counters();
    CHECK(c.requestsSent == 9 + c.healthPingsSent);
    CHECK(c.requestsFailed == c.requestsSent);
    CHECK(c.healthPingsSent >= 3);
    CHECK(c.healthPingsFailed == c.healthPingsSent);
}

TEST_CASE("a sidecar that never answers costs one time-out per request, and stop still joins",
          "[server][agones]")
{
    QuietLogs quiet;
    SilentListener silent;
    server::AgonesSdkConfig config = configFor(silent.port);
    config.requestTimeoutSeconds = 0.2;
    config.lifecycleAttempts = 2;
    config.retryDelaySeconds = 0.0;
    config.healthIntervalSeconds = 0.05;
    server::AgonesSdk sdk(config);

    Clock::time_point start = Clock::now();
    CHECK_FALSE(sdk.ready());
    const double readySeconds = secondsSince(start);
    CHECK(readySeconds > 0.3); // two attempts, each waited for its answer...
    CHECK(readySeconds < 1.5); // ...and no longer than its time-out

    sdk.startHealthPings();
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // a ping is in flight now
    start = Clock::now();
    sdk.stopHealthPings();
    CHECK(secondsSince(start) < 1.0);

    // The game loop's allocation request does not wait for the silent sidecar; stopping waits for the
    // allocation's attempts (2 x 0.2 s) at most.
    sdk.startHealthPings();
    start = Clock::now();
    CHECK(sdk.requestAllocate());
    CHECK(secondsSince(start) < 0.05);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    start = Clock::now();
    sdk.stopHealthPings();
    CHECK(secondsSince(start) < 1.5);
    const server::AgonesSdkCounters c = sdk.counters();
    CHECK(c.healthPingsSent >= 1);
    CHECK(c.healthPingsFailed == c.healthPingsSent);
    CHECK(c.requestsFailed == c.requestsSent);
}

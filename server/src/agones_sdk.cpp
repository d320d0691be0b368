#include "polytope/server/agones_sdk.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <utility>

namespace polytope::server
{
namespace
{

/// Agones' REST gateway takes the protobuf Empty message as a JSON object.
constexpr const char* kEmptyBody = "{}";
constexpr const char* kJson = "application/json";

std::chrono::microseconds toMicroseconds(double seconds)
{
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(seconds));
}

} // namespace

AgonesSdk::AgonesSdk(AgonesSdkConfig config) : m_config(std::move(config)) {}

AgonesSdk::~AgonesSdk()
{
    stopHealthPings();
}

std::optional<std::uint16_t> AgonesSdk::parsePort(std::string_view text)
{
    if (text.empty() || text.size() > 5)
    {
        return std::nullopt;
    }
    unsigned value = 0;
    for (const char c : text)
    {
        if (c < '0' || c > '9')
        {
            return std::nullopt;
        }
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value < 1 || value > 65535)
    {
        return std::nullopt;
    }
    return static_cast<std::uint16_t>(value);
}

std::unique_ptr<AgonesSdk> AgonesSdk::createFromEnvironment(AgonesSdkConfig defaults)
{
    const char* value = std::getenv("AGONES_SDK_HTTP_PORT");
    if (value == nullptr)
    {
        return nullptr;
    }
    const std::optional<std::uint16_t> port = parsePort(value);
    if (!port)
    {
        spdlog::warn("agones: ignoring AGONES_SDK_HTTP_PORT='{}' (not a port 1..65535); Agones SDK disabled",
                     value);
        return nullptr;
    }
    defaults.port = *port;
    return std::make_unique<AgonesSdk>(std::move(defaults));
}

bool AgonesSdk::post(std::string_view path, std::string& failure)
{
    ++m_requestsSent;
    failure.clear();
    try
    {
        // One short-lived connection per request: calls come from two threads, a few per minute.
        httplib::Client client(m_config.host, m_config.port);
        const std::chrono::microseconds timeout = toMicroseconds(m_config.requestTimeoutSeconds);
        client.set_connection_timeout(timeout);
        client.set_read_timeout(timeout);
        client.set_write_timeout(timeout);
        const httplib::Result result = client.Post(std::string(path), kEmptyBody, kJson);
        if (!result)
        {
            failure = "no answer (" + httplib::to_string(result.error()) + ")";
        }
        else if (result->status < 200 || result->status > 299)
        {
            failure = "HTTP " + std::to_string(result->status);
        }
    }
    catch (const std::exception& e)
    {
        failure = std::string("exception: ") + e.what();
    }
    if (failure.empty())
    {
        return true;
    }
    ++m_requestsFailed;
    return false;
}

bool AgonesSdk::lifecycleCall(std::string_view path)
{
    const int attempts = std::max(1, m_config.lifecycleAttempts);
    std::string failure;
    for (int attempt = 1; attempt <= attempts; ++attempt)
    {
        if (post(path, failure))
        {
            spdlog::info("agones: {} acknowledged", path);
            return true;
        }
        spdlog::warn("agones: POST {} to {}:{} failed (attempt {} of {}): {}", path, m_config.host,
                     m_config.port, attempt, attempts, failure);
        if (attempt < attempts && m_config.retryDelaySeconds > 0.0)
        {
            std::this_thread::sleep_for(toMicroseconds(m_config.retryDelaySeconds));
        }
    }
    spdlog::error("agones: {} gave up after {} attempts; is the SDK sidecar on port {}?", path, attempts,
                  m_config.port);
    return false;
}

bool AgonesSdk::ready()
{
    return lifecycleCall("/ready");
}
bool AgonesSdk::allocate()
{
    return lifecycleCall("/allocate");
}
bool AgonesSdk::shutdown()
{
    return lifecycleCall("/shutdown");
}

bool AgonesSdk::health()
{
    ++m_healthPingsSent;
    std::string failure;
    const bool ok = post("/health", failure);
    if (!ok)
    {
        ++m_healthPingsFailed;
    }
    // Log a failing streak at warning level when it starts and when it ends, the pings between at debug.
    const bool wasFailing = m_healthFailing.exchange(!ok);
    if (!ok && !wasFailing)
    {
        spdlog::warn("agones: health ping to {}:{} failed: {}; Agones marks the GameServer Unhealthy if this "
                     "goes on",
                     m_config.host, m_config.port, failure);
    }
    else if (!ok)
    {
        spdlog::debug("agones: health ping failed again: {}", failure);
    }
    else if (ok && wasFailing)
    {
        spdlog::info("agones: health pings answered again");
    }
    return ok;
}

void AgonesSdk::startHealthPings()
{
    if (m_healthThread.joinable())
    {
        return;
    }
    std::lock_guard lock(m_healthMutex);
    m_healthStopRequested = false;
    try
    {
        m_healthThread = std::thread([this] { backgroundLoop(); });
        m_healthThreadRunning = true;
    }
    catch (const std::exception& e)
    {
        spdlog::error("agones: cannot start the health thread: {}", e.what());
    }
}

void AgonesSdk::stopHealthPings()
{
    if (!m_healthThread.joinable())
    {
        return;
    }
    {
        std::lock_guard lock(m_healthMutex);
        m_healthStopRequested = true;
        m_healthThreadRunning = false;
    }
    m_healthWake.notify_all();
    m_healthThread.join();
}

bool AgonesSdk::requestAllocate()
{
    {
        std::lock_guard lock(m_healthMutex);
        if (!m_healthThreadRunning)
        {
            spdlog::warn("agones: allocate requested while the SDK thread is not running; ignored");
            return false;
        }
        m_allocateRequested = true;
    }
    m_healthWake.notify_all();
    return true;
}

void AgonesSdk::backgroundLoop()
{
    const auto interval = toMicroseconds(m_config.healthIntervalSeconds);
    auto nextPing = std::chrono::steady_clock::now();
    std::unique_lock lock(m_healthMutex);
    while (!m_healthStopRequested)
    {
        if (m_allocateRequested)
        {
            m_allocateRequested = false;
            lock.unlock();
            allocate();
            lock.lock();
            continue;
        }
        if (std::chrono::steady_clock::now() >= nextPing)
        {
            lock.unlock();
            health();
            lock.lock();
            // Fixed cadence: a slow request does not push later pings back; one slower than the interval
            // is followed at once by the next ping, and the cadence restarts from there (no catch-up burst).
            nextPing += interval;
            nextPing = std::max(nextPing, std::chrono::steady_clock::now());
            continue;
        }
        m_healthWake.wait_until(lock, nextPing,
                                [this] { return m_healthStopRequested || m_allocateRequested; });
    }
}

AgonesSdkCounters AgonesSdk::counters() const
{
    AgonesSdkCounters out;
    out.requestsSent = m_requestsSent.load();
    out.requestsFailed = m_requestsFailed.load();
    out.healthPingsSent = m_healthPingsSent.load();
    out.healthPingsFailed = m_healthPingsFailed.load();
    return out;
}

} // namespace polytope::server

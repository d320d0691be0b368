#include "polytope/server/ops_http.h"

#include "polytope/server/metrics_text.h"

#include <httplib.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <sys/socket.h>

namespace polytope::server
{

struct OpsHttpServer::Impl
{
    std::unique_ptr<httplib::Server> http;
    std::thread thread;
    std::uint16_t port = 0;
    double staleAfterSeconds = 2.0;

    mutable std::mutex mutex; // guards the two fields below
    std::string metricsText;
    std::optional<Clock::time_point> lastTick;

    void install()
    {
        http->Get("/healthz",
                  [this](const httplib::Request&, httplib::Response& response)
                  {
                      std::optional<Clock::time_point> last;
                      {
                          std::lock_guard lock(mutex);
                          last = lastTick;
                      }
                      if (!last)
                      {
                          response.status = 503;
                          response.set_content("starting\n", "text/plain");
                          return;
                      }
                      const double age = std::chrono::duration<double>(Clock::now() - *last).count();
                      const bool alive = age <= staleAfterSeconds;
                      response.status = alive ? 200 : 503;
                      response.set_content(alive ? "ok\n" : "stale\n", "text/plain");
                  });
        http->Get("/metrics",
                  [this](const httplib::Request&, httplib::Response& response)
                  {
                      std::string text;
                      {
                          std::lock_guard lock(mutex);
                          text = metricsText;
                      }
                      response.set_content(text, kPrometheusContentType);
                  });
        // Any other path falls through to cpp-httplib's own 404.
    }
};

OpsHttpServer::OpsHttpServer() : m_impl(std::make_unique<Impl>()) {}

OpsHttpServer::~OpsHttpServer()
{
    stop();
}

bool OpsHttpServer::start(const OpsHttpConfig& config, std::string& error)
{
    Impl& impl = *m_impl;
    if (impl.thread.joinable())
    {
        error = "the HTTP server already runs";
        return false;
    }
    if (!(config.staleAfterSeconds > 0.0) || config.threads < 1)
    {
        error = "bad HTTP server settings (staleAfterSeconds must be > 0, threads >= 1)";
        return false;
    }
    const std::string where = config.bindAddress + ":" + std::to_string(config.port);
    try
    {
        impl.staleAfterSeconds = config.staleAfterSeconds;
        impl.http = std::make_unique<httplib::Server>();
        const std::size_t threads = static_cast<std::size_t>(config.threads);
        impl.http->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
        // Short time-outs: an idle keep-alive connection would otherwise hold stop() for 5 s.
        impl.http->set_keep_alive_timeout(1);
        // cpp-httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and share
        // its traffic unnoticed. SO_REUSEADDR alone still allows a quick restart (TIME_WAIT) but makes a
        // port in use an error.
        impl.http->set_socket_options(
            [](int socket)
            {
                int yes = 1;
                ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
            });
        impl.http->set_read_timeout(2, 0);
        impl.http->set_write_timeout(2, 0);
        impl.install();

        errno = 0;
        int port = 0;
        if (config.port == 0)
        {
            port = impl.http->bind_to_any_port(config.bindAddress);
        }
        else if (impl.http->bind_to_port(config.bindAddress, config.port))
        {
            port = config.port;
        }
        if (port <= 0)
        {
            const int code = errno;
            error = "cannot bind HTTP (TCP) " + where;
            if (code != 0)
            {
                error += std::string(": ") + std::strerror(code);
            }
            impl.http.reset();
            return false;
        }
        impl.port = static_cast<std::uint16_t>(port);
        impl.thread = std::thread([http = impl.http.get()] { http->listen_after_bind(); });
        // cpp-httplib 0.11 has no wait_until_ready(), and a stop() before the loop runs would be lost.
        const Clock::time_point deadline = Clock::now() + std::chrono::seconds(5);
        while (!impl.http->is_running() && Clock::now() < deadline)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (!impl.http->is_running())
        {
            error = "the HTTP server on " + where + " did not start";
            stop();
            return false;
        }
    }
    catch (const std::exception& e)
    {
        error = "cannot start HTTP server on " + where + ": " + e.what();
        stop();
        return false;
    }
    return true;
}

void OpsHttpServer::stop()
{
    Impl& impl = *m_impl;
    if (impl.thread.joinable())
    {
        impl.http->stop();
        impl.thread.join();
    }
    impl.http.reset();
    impl.port = 0;
}

bool OpsHttpServer::running() const
{
    return m_impl->thread.joinable();
}

std::uint16_t OpsHttpServer::port() const
{
    return m_impl->port;
}

void OpsHttpServer::publishMetrics(std::string text)
{
    std::lock_guard lock(m_impl->mutex);
    m_impl->metricsText = std::move(text);
}

void OpsHttpServer::publishTick(Clock::time_point when)
{
    std::lock_guard lock(m_impl->mutex);
    m_impl->lastTick = when;
}

} // namespace polytope::server

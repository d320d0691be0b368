#include "polytope/server/udp_server.h"

#include <asio.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <chrono>

namespace polytope::server
{
namespace
{

protocol::Address toAddress(const asio::ip::udp::endpoint& endpoint)
{
    protocol::Address out;
    out.port = endpoint.port();
    const asio::ip::address address = endpoint.address();
    if (address.is_v4())
    {
        out.family = protocol::Address::Family::IPv4;
        const auto bytes = address.to_v4().to_bytes();
        std::copy(bytes.begin(), bytes.end(), out.bytes.begin());
    }
    else
    {
        out.family = protocol::Address::Family::IPv6;
        const auto bytes = address.to_v6().to_bytes();
        std::copy(bytes.begin(), bytes.end(), out.bytes.begin());
    }
    return out;
}

asio::ip::udp::endpoint toEndpoint(const protocol::Address& address)
{
    if (address.family == protocol::Address::Family::IPv4)
    {
        asio::ip::address_v4::bytes_type bytes;
        std::copy(address.bytes.begin(), address.bytes.begin() + 4, bytes.begin());
        return {asio::ip::address_v4(bytes), address.port};
    }
    asio::ip::address_v6::bytes_type bytes;
    std::copy(address.bytes.begin(), address.bytes.end(), bytes.begin());
    return {asio::ip::address_v6(bytes), address.port};
}

/// Receive buffer, aligned for the FlatBuffers Verifier; one byte larger than the largest valid datagram
/// so that an oversized one is seen as oversized rather than truncated to a valid size.
struct alignas(8) ReceiveBuffer : std::array<std::uint8_t, protocol::kMaxDatagramBytes + 1>
{
};

} // namespace

struct UdpServer::Impl
{
    asio::io_context io{1};
    asio::ip::udp::socket socket{io};
    asio::steady_timer timer{io};
    asio::signal_set signals{io};
    std::unique_ptr<Server> server;
    ReceiveBuffer buffer{};
    asio::ip::udp::endpoint sender;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    std::uint64_t sendErrors = 0;
    TickTimeHistogram tickTimes;
    std::function<void(double, bool)> loopHook;
    bool stopping = false; ///< set by finish(); handlers already queued must not re-arm

    double now() const
    {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

    void send(const protocol::Address& to, std::span<const std::uint8_t> datagram)
    {
        asio::error_code error;
        socket.send_to(asio::buffer(datagram.data(), datagram.size()), toEndpoint(to), 0, error);
        if (error)
        {
            ++sendErrors;
            spdlog::debug("send to {} failed: {}", to.toString(), error.message());
        }
    }

    void receiveNext()
    {
        socket.async_receive_from(asio::buffer(buffer), sender,
                                  [this](const asio::error_code& error, std::size_t bytes)
                                  {
                                      if (error == asio::error::operation_aborted || stopping)
                                      {
                                          return;
                                      }
                                      if (!error)
                                      {
                                          server->receive(toAddress(sender), {buffer.data(), bytes}, now());
                                      }
                                      else
                                      {
                                          spdlog::debug("receive failed: {}", error.message());
                                      }
                                      receiveNext();
                                  });
    }

    void scheduleUpdate()
    {
        const double wake = server->nextUpdateTime();
        timer.expires_at(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(wake)));
        timer.async_wait(
            [this](const asio::error_code& error)
            {
                if (error || stopping)
                {
                    return;
                }
                timedUpdate();
                scheduleUpdate();
            });
    }

    /// update(), timed into tickTimes when it ran a tick, then the loop hook.
    void timedUpdate()
    {
        const std::uint64_t ticksBefore = totalTicks();
        const auto begin = std::chrono::steady_clock::now();
        const double at = std::chrono::duration<double>(begin - start).count();
        server->update(at);
        const bool ticked = totalTicks() != ticksBefore;
        if (ticked)
        {
            const auto elapsed = std::chrono::steady_clock::now() - begin;
            tickTimes.observe(std::chrono::duration<double>(elapsed).count());
        }
        if (loopHook)
        {
            loopHook(at, ticked);
        }
    }

    std::uint64_t totalTicks() const
    {
        std::uint64_t ticks = 0;
        for (std::size_t i = 0; i < server->roomCount(); ++i)
        {
            ticks += server->room(i).tick();
        }
        return ticks;
    }

    void finish()
    {
        if (stopping)
        {
            return;
        }
        stopping = true;
        server->shutdown();
        asio::error_code ignored;
        timer.cancel();
        signals.cancel(ignored);
        socket.close(ignored);
    }
};

UdpServer::UdpServer() : m_impl(std::make_unique<Impl>()) {}
UdpServer::~UdpServer() = default;

bool UdpServer::open(const RoomConfig& config, std::string& error)
{
    ServerConfig host;
    host.rooms.push_back(config);
    host.security.insecure = true; // see the header: tests and local tools
    return open(host, config.bindAddress, config.port, error);
}

bool UdpServer::open(const ServerConfig& config, const std::string& bindAddress, std::uint16_t port, std::string& error)
{
    Impl& impl = *m_impl;
    impl.server = Server::create(
        config, [&impl](const protocol::Address& to, std::span<const std::uint8_t> datagram) { impl.send(to, datagram); },
        error);
    if (!impl.server)
    {
        return false;
    }
    for (std::size_t i = 0; i < impl.server->roomCount(); ++i)
    {
        impl.server->room(i).setProfileClock([&impl] { return impl.now(); });
    }
    asio::error_code ec;
    const asio::ip::address address = asio::ip::make_address(bindAddress, ec);
    if (ec)
    {
        error = "bad bind address '" + bindAddress + "': " + ec.message();
        return false;
    }
    const asio::ip::udp::endpoint endpoint(address, port);
    impl.socket.open(endpoint.protocol(), ec);
    if (!ec)
    {
        impl.socket.bind(endpoint, ec);
    }
    if (ec)
    {
        error = "cannot bind UDP " + bindAddress + ":" + std::to_string(port) + ": " + ec.message();
        return false;
    }
    impl.socket.non_blocking(true, ec);
    return true;
}

std::uint16_t UdpServer::localPort() const
{
    asio::error_code ec;
    return m_impl->socket.local_endpoint(ec).port();
}

void UdpServer::run(bool handleSignals)
{
    Impl& impl = *m_impl;
    if (handleSignals)
    {
        impl.signals.add(SIGINT);
        impl.signals.add(SIGTERM);
        impl.signals.async_wait(
            [&impl](const asio::error_code& error, int signal)
            {
                if (!error)
                {
                    spdlog::info("received signal {}, stopping", signal);
                    impl.finish();
                }
            });
    }
    impl.receiveNext();
    impl.timedUpdate();
    impl.scheduleUpdate();
    impl.io.run();
}

void UdpServer::stop()
{
    asio::post(m_impl->io, [impl = m_impl.get()] { impl->finish(); });
}

Server& UdpServer::server() { return *m_impl->server; }

const Server& UdpServer::server() const { return *m_impl->server; }

const Room& UdpServer::firstRoom() const { return m_impl->server->room(0); }

const TickTimeHistogram& UdpServer::tickTimes() const { return m_impl->tickTimes; }

std::uint64_t UdpServer::sendErrors() const { return m_impl->sendErrors; }

void UdpServer::setLoopHook(std::function<void(double now, bool ticked)> hook) { m_impl->loopHook = std::move(hook); }

} // namespace polytope::server

#include "polytope/server/udp_server.h"

#include "polytope/server/log_format.h"

#include <asio.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>

#include <netinet/in.h>
#include <sys/socket.h>

namespace polytope::server
{
namespace
{

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

/// Datagrams taken from the socket per recvmmsg call.
constexpr unsigned kReceiveBatch = 32;
/// The receive buffer asked of the kernel (bytes): about 4 s of a busy room's traffic, so that a burst
/// waits in the kernel rather than being dropped. Root gets it (SO_RCVBUFFORCE); others get what
/// net.core.rmem_max allows.
constexpr int kReceiveBufferBytes = 8 * 1024 * 1024;
/// The network thread's own period (seconds): the gate's sweep, slots the rooms closed, the loop hook.
constexpr double kLoopSeconds = 0.005;

protocol::Address fromSockaddr(const sockaddr_storage& storage)
{
    protocol::Address out;
    if (storage.ss_family == AF_INET)
    {
        const auto& in = reinterpret_cast<const sockaddr_in&>(storage);
        out.family = protocol::Address::Family::IPv4;
        std::memcpy(out.bytes.data(), &in.sin_addr, 4);
        out.port = ntohs(in.sin_port);
    }
    else
    {
        const auto& in6 = reinterpret_cast<const sockaddr_in6&>(storage);
        out.family = protocol::Address::Family::IPv6;
        std::memcpy(out.bytes.data(), &in6.sin6_addr, 16);
        out.port = ntohs(in6.sin6_port);
    }
    return out;
}

/// One slot of the receive batch: a buffer aligned for the FlatBuffers Verifier, one byte larger than the
/// largest valid datagram (so that an oversized one is seen as oversized rather than cut to a valid size),
/// its source address and room for the kernel's drop counter (SO_RXQ_OVFL).
struct ReceiveSlot
{
    alignas(8) std::array<std::uint8_t, protocol::kMaxDatagramBytes + 1> bytes{};
    sockaddr_storage from{};
    alignas(cmsghdr) std::array<std::uint8_t, CMSG_SPACE(sizeof(std::uint32_t))> control{};
};

} // namespace

struct UdpServer::Impl
{
    asio::io_context io{1};
    asio::ip::udp::socket socket{io};
    asio::steady_timer timer{io};
    asio::signal_set signals{io};
    std::unique_ptr<Server> server;
    std::array<ReceiveSlot, kReceiveBatch> slots{};
    std::array<mmsghdr, kReceiveBatch> messages{};
    std::array<iovec, kReceiveBatch> vectors{};
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    SocketCounters counters;
    std::atomic<std::uint64_t> datagramsSent{0};
    std::atomic<std::uint64_t> bytesSent{0};
    std::atomic<std::uint64_t> sendErrors{0};
    std::function<void(double, bool)> loopHook;
    std::uint64_t ticksSeen = 0;
    bool stopping = false; ///< set by finish(); handlers already queued must not re-arm

    double now() const
    {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

    /// Called from the network thread and the rooms' threads: sendto(2) on the socket is, Asio's socket
    /// object is not.
    void send(const protocol::Address& to, std::span<const std::uint8_t> datagram)
    {
        const asio::ip::udp::endpoint endpoint = toEndpoint(to);
        const ssize_t sent = ::sendto(socket.native_handle(), datagram.data(), datagram.size(), MSG_DONTWAIT,
                                      endpoint.data(), static_cast<socklen_t>(endpoint.size()));
        if (sent < 0)
        {
            sendErrors.fetch_add(1, std::memory_order_relaxed);
            spdlog::debug("send to {} failed: {}", to, std::strerror(errno));
            return;
        }
        datagramsSent.fetch_add(1, std::memory_order_relaxed);
        bytesSent.fetch_add(static_cast<std::uint64_t>(sent), std::memory_order_relaxed);
    }

    void configureSocket()
    {
        const int fd = socket.native_handle();
        const int size = kReceiveBufferBytes;
        if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0)
        {
            ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        }
        const int on = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof(on));
        int granted = 0;
        socklen_t length = sizeof(granted);
        ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted, &length);
        counters.receiveBufferBytes = static_cast<std::uint64_t>(granted);
    }

    /// Takes every datagram waiting in the socket, in batches, then waits for more.
    void receiveNext()
    {
        socket.async_wait(asio::ip::udp::socket::wait_read,
                          [this](const asio::error_code& error)
                          {
                              if (error == asio::error::operation_aborted || stopping)
                              {
                                  return;
                              }
                              drain();
                              receiveNext();
                          });
    }

    void drain()
    {
        const int fd = socket.native_handle();
        for (;;)
        {
            for (unsigned i = 0; i < kReceiveBatch; ++i)
            {
                vectors[i] = {slots[i].bytes.data(), slots[i].bytes.size()};
                messages[i] = {};
                messages[i].msg_hdr.msg_name = &slots[i].from;
                messages[i].msg_hdr.msg_namelen = sizeof(slots[i].from);
                messages[i].msg_hdr.msg_iov = &vectors[i];
                messages[i].msg_hdr.msg_iovlen = 1;
                messages[i].msg_hdr.msg_control = slots[i].control.data();
                messages[i].msg_hdr.msg_controllen = slots[i].control.size();
            }
            const int received = ::recvmmsg(fd, messages.data(), kReceiveBatch, MSG_DONTWAIT, nullptr);
            if (received <= 0)
            {
                return; // EAGAIN: drained (or an error, which the next wait reports again)
            }
            const double at = now();
            for (int i = 0; i < received; ++i)
            {
                const mmsghdr& message = messages[static_cast<std::size_t>(i)];
                const ReceiveSlot& slot = slots[static_cast<std::size_t>(i)];
                for (cmsghdr* c = CMSG_FIRSTHDR(&message.msg_hdr); c != nullptr;
                     c = CMSG_NXTHDR(const_cast<msghdr*>(&message.msg_hdr), c))
                {
                    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
                    {
                        std::uint32_t dropped = 0;
                        std::memcpy(&dropped, CMSG_DATA(c), sizeof(dropped));
                        counters.kernelDrops = std::max<std::uint64_t>(counters.kernelDrops, dropped);
                    }
                }
                // Truncated (MSG_TRUNC): larger than the buffer, which is already larger than any valid one.
                const std::size_t bytes = std::min<std::size_t>(message.msg_len, slot.bytes.size());
                ++counters.datagramsReceived;
                counters.bytesReceived += message.msg_len;
                server->receive(fromSockaddr(slot.from), {slot.bytes.data(), bytes}, at);
            }
            if (received < static_cast<int>(kReceiveBatch))
            {
                return;
            }
        }
    }

    void scheduleUpdate()
    {
        const double wake = std::min(server->nextUpdateTime(), now() + kLoopSeconds);
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

    /// The Server's update, then the loop hook (told whether some room ticked since the last call).
    void timedUpdate()
    {
        const double at = now();
        server->update(at);
        std::uint64_t ticks = 0;
        for (std::size_t i = 0; i < server->roomCount(); ++i)
        {
            ticks += server->roomStatus(i).tick;
        }
        const bool ticked = ticks != ticksSeen;
        ticksSeen = ticks;
        if (loopHook)
        {
            loopHook(at, ticked);
        }
    }

    void finish()
    {
        if (stopping)
        {
            return;
        }
        stopping = true;
        server->shutdown(); // tells the clients, stops the rooms' threads
        asio::error_code ignored;
        timer.cancel();
        signals.cancel(ignored);
        socket.close(ignored);
    }
};

UdpServer::UdpServer() : m_impl(std::make_unique<Impl>()) {}
UdpServer::~UdpServer()
{
    if (m_impl->server)
    {
        m_impl->server->shutdown();
    }
}

bool UdpServer::open(const RoomConfig& config, std::string& error)
{
    ServerConfig host;
    host.rooms.push_back(config);
    host.security.insecure = true; // see the header: tests and local tools
    return open(host, config.bindAddress, config.port, error);
}

bool UdpServer::open(const ServerConfig& config, const std::string& bindAddress, std::uint16_t port,
                     std::string& error)
{
    Impl& impl = *m_impl;
    // The token checks need the socket's own address (connect_gate.h): the one this runner binds.
    ServerConfig bound = config;
    bound.security.bindAddress = bindAddress;
    bound.security.listenPort = port;
    impl.server = Server::create(
        bound,
        [&impl](const protocol::Address& to, std::span<const std::uint8_t> datagram)
        { impl.send(to, datagram); },
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
    impl.configureSocket();
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
    impl.server->startRoomThreads([&impl] { return impl.now(); });
    impl.receiveNext();
    impl.timedUpdate();
    impl.scheduleUpdate();
    impl.io.run();
}

void UdpServer::stop()
{
    asio::post(m_impl->io, [impl = m_impl.get()] { impl->finish(); });
}

Server& UdpServer::server()
{
    return *m_impl->server;
}

const Server& UdpServer::server() const
{
    return *m_impl->server;
}

SocketCounters UdpServer::socketCounters() const
{
    SocketCounters out = m_impl->counters;
    out.datagramsSent = m_impl->datagramsSent.load(std::memory_order_relaxed);
    out.bytesSent = m_impl->bytesSent.load(std::memory_order_relaxed);
    out.sendErrors = m_impl->sendErrors.load(std::memory_order_relaxed);
    return out;
}

std::uint64_t UdpServer::sendErrors() const
{
    return m_impl->sendErrors.load(std::memory_order_relaxed);
}

void UdpServer::setLoopHook(std::function<void(double now, bool ticked)> hook)
{
    m_impl->loopHook = std::move(hook);
}

} // namespace polytope::server

#include "polytope/client/udp_socket.h"

#include "polytope/client/udp_client.h"

#include <chrono>

namespace polytope::client
{

bool resolveUdpServer(asio::io_context& io, const std::string& host, std::uint16_t port,
                      asio::ip::udp::endpoint& server, std::string& error)
{
    asio::error_code ec;
    asio::ip::udp::resolver resolver(io);
    const auto results =
        resolver.resolve(host, std::to_string(port), asio::ip::resolver_base::numeric_service, ec);
    if (ec || results.empty())
    {
        error = "cannot resolve '" + host + "'" + (ec ? ": " + ec.message() : std::string());
        return false;
    }
    server = results.begin()->endpoint();
    for (const auto& entry : results)
    {
        if (entry.endpoint().address().is_v4())
        {
            server = entry.endpoint();
            break;
        }
    }
    return true;
}

bool resolveUdpServer(asio::io_context& io, const std::string& hostPort, asio::ip::udp::endpoint& server,
                      std::string& error)
{
    std::string host;
    std::uint16_t port = 0;
    return parseHostPort(hostPort, host, port, error) && resolveUdpServer(io, host, port, server, error);
}

bool connectUdpSocket(asio::ip::udp::socket& socket, const asio::ip::udp::endpoint& server,
                      std::string& error)
{
    asio::error_code ec;
    socket.open(server.protocol(), ec);
    if (!ec)
    {
        socket.connect(server, ec);
    }
    if (!ec)
    {
        socket.non_blocking(true, ec);
    }
    if (ec)
    {
        error = "cannot open a UDP socket to " + server.address().to_string() + " port " +
                std::to_string(server.port()) + ": " + ec.message();
        asio::error_code ignored;
        socket.close(ignored);
        return false;
    }
    return true;
}

bool connectUdpSocket(asio::io_context& io, asio::ip::udp::socket& socket, const std::string& host,
                      std::uint16_t port, std::string& error)
{
    asio::ip::udp::endpoint server;
    return resolveUdpServer(io, host, port, server, error) && connectUdpSocket(socket, server, error);
}

bool waitReadable(asio::io_context& io, asio::ip::udp::socket& socket, double timeoutSeconds)
{
    if (!socket.is_open())
    {
        return false;
    }
    bool done = false;
    bool readable = false;
    socket.async_wait(asio::socket_base::wait_read,
                      [&](const asio::error_code& ec)
                      {
                          done = true;
                          readable = !ec;
                      });
    io.restart();
    if (timeoutSeconds > 0.0)
    {
        // Returns as soon as the wait completes (no work left), else at the deadline.
        io.run_for(
            std::chrono::ceil<std::chrono::microseconds>(std::chrono::duration<double>(timeoutSeconds)));
    }
    else
    {
        io.poll(); // one non-blocking look at the reactor
    }
    if (!done)
    {
        // Time is up: cancel the wait and let its handler run before `done` and `readable` go out of scope.
        asio::error_code ignored;
        socket.cancel(ignored);
        io.restart();
        io.run();
    }
    return readable;
}

} // namespace polytope::client

// Polytope client library: the one way the client tools find a server and wait on its socket, with Asio.
//
// Every client-side UDP socket (UdpClient, sendAdminCommand, polytope-bots) is opened the same way:
// resolved once, IPv4 preferred (servers bind 0.0.0.0 by default), connected so that only the server's
// datagrams reach it (and the kernel gives it an ephemeral port of its own), and non-blocking. Waiting for a
// datagram with a time-out is an async_wait on the socket's io_context run for at most that long; there is
// no raw poll() anywhere in the client.
//
// This header includes Asio: a target using it links polytope_asio as well as polytope::client.
#pragma once

#include <asio.hpp>

#include <cstdint>
#include <string>

namespace polytope::client
{

/// Resolves `host` and `port` to one UDP endpoint: the first IPv4 address when there is one, else the first
/// IPv6 one. Returns false and sets error when the name does not resolve.
bool resolveUdpServer(asio::io_context& io, const std::string& host, std::uint16_t port,
                      asio::ip::udp::endpoint& server, std::string& error);
/// The same for "host:port" or "[v6]:port" text (parseHostPort, udp_client.h).
bool resolveUdpServer(asio::io_context& io, const std::string& hostPort, asio::ip::udp::endpoint& server,
                      std::string& error);

/// Opens `socket` for `server`'s protocol, connects it to `server` and makes it non-blocking. Returns false
/// and sets error when any of that fails (the socket is then closed).
bool connectUdpSocket(asio::ip::udp::socket& socket, const asio::ip::udp::endpoint& server,
                      std::string& error);
/// resolveUdpServer, then connectUdpSocket; `socket` must belong to `io`.
bool connectUdpSocket(asio::io_context& io, asio::ip::udp::socket& socket, const std::string& host,
                      std::uint16_t port, std::string& error);

/// Waits until `socket` (which belongs to `io`, with no other work queued in `io`) has something to read,
/// or `timeoutSeconds` have passed; 0 only checks. Returns true when it is readable. A pending ICMP error
/// (port unreachable) counts as readable: the next receive reports it and clears it.
bool waitReadable(asio::io_context& io, asio::ip::udp::socket& socket, double timeoutSeconds);

} // namespace polytope::client

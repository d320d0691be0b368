// polytope-server: the Server (server.h) behind a real UDP socket, driven by the steady clock (Asio).
#pragma once

#include "polytope/server/metrics_text.h"
#include "polytope/server/server.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace polytope::server
{

/// The network thread: it drains the socket (recvmmsg, in batches, until nothing is left) each time it is
/// readable, hands every datagram to the Server at once, and never runs a tick: run() starts a thread per
/// room (Server::startRoomThreads). Sends come from every thread (sendto(2)).
class UdpServer
{
  public:
    UdpServer();
    ~UdpServer();
    UdpServer(const UdpServer&) = delete;
    UdpServer& operator=(const UdpServer&) = delete;

    /// Creates the rooms and binds the socket. Returns false and sets error on failure.
    bool open(const ServerConfig& config, const std::string& bindAddress, std::uint16_t port,
              std::string& error);
    /// One room, bound to config.bindAddress:config.port, accepting tokenless (unencrypted) clients like
    /// --insecure: for tests and local tools only.
    bool open(const RoomConfig& config, std::string& error);
    /// The bound UDP port (useful when config.port was 0).
    std::uint16_t localPort() const;
    /// Runs until stop() or SIGINT/SIGTERM (when handleSignals); returns after telling clients goodbye and
    /// stopping the rooms' threads.
    void run(bool handleSignals);
    /// Thread-safe: asks run() to finish.
    void stop();

    /// Valid after open(); use it only from the thread that runs run(), or before run() starts (restoring a
    /// checkpoint), or after run() returned. While run() runs, the rooms are on their own threads: read them
    /// through Server::roomStatus().
    Server& server();
    const Server& server() const;
    /// What crossed the socket. Any thread.
    SocketCounters socketCounters() const;
    /// Datagrams the socket refused to send. Any thread.
    std::uint64_t sendErrors() const;
    /// Called on the run() thread about every 5 ms, with the time (seconds since open()) and whether some
    /// room ticked since the last call. Set it before run(). It may read server() and call stop().
    void setLoopHook(std::function<void(double now, bool ticked)> hook);

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace polytope::server

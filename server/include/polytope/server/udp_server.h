// polytope-server: the Server core behind a real UDP socket, driven by the steady clock (Asio).
#pragma once

#include "polytope/server/server.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace polytope::server
{

class UdpServer
{
public:
    UdpServer();
    ~UdpServer();
    UdpServer(const UdpServer&) = delete;
    UdpServer& operator=(const UdpServer&) = delete;

    /// Creates the server core and binds the socket. Returns false and sets error on failure.
    bool open(const ServerConfig& config, std::string& error);
    /// The bound UDP port (useful when config.port was 0).
    std::uint16_t localPort() const;
    /// Runs until stop() or SIGINT/SIGTERM (when handleSignals); returns after telling clients goodbye.
    void run(bool handleSignals);
    /// Thread-safe: asks run() to finish.
    void stop();

    /// Valid after open(); read it only from the thread that runs run(), or after run() returned.
    const Server& core() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace polytope::server

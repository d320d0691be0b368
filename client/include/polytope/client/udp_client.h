// Polytope client library: a Client bound to a real UDP socket and the steady clock.
#pragma once

#include "polytope/client/client.h"

#include <memory>
#include <string>

namespace polytope::client
{

/// Splits "host:port" or "[v6]:port". Returns false and sets error when it is not of that form.
bool parseHostPort(const std::string& text, std::string& host, std::uint16_t& port, std::string& error);

class UdpClient
{
  public:
    explicit UdpClient(const ClientConfig& config = {});
    ~UdpClient();
    UdpClient(const UdpClient&) = delete;
    UdpClient& operator=(const UdpClient&) = delete;

    /// Resolves the server and starts the handshake. Returns false and sets error when the host cannot be
    /// resolved or no socket can be opened.
    bool connect(const std::string& host, std::uint16_t port, std::string& error);
    /// Waits up to timeoutSeconds for datagrams, hands each to the client, then runs Client::update.
    void poll(double timeoutSeconds);
    /// Says goodbye to the server.
    void disconnect();

    /// Seconds since this object was made (the clock the Client is driven by).
    double now() const;
    Client& client();
    const Client& client() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace polytope::client

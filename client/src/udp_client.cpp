#include "polytope/client/udp_client.h"

#include "polytope/client/udp_socket.h"

#include <array>
#include <chrono>

namespace polytope::client
{
namespace
{
/// Aligned for the FlatBuffers Verifier; one byte over the limit so oversized datagrams show as such.
struct alignas(8) ReceiveBuffer : std::array<std::uint8_t, protocol::kMaxDatagramBytes + 1>
{
};
} // namespace

bool parseHostPort(const std::string& text, std::string& host, std::uint16_t& port, std::string& error)
{
    std::string portText;
    if (!text.empty() && text.front() == '[')
    {
        const auto close = text.find(']');
        if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
        {
            error = "expected [IPv6]:PORT, got '" + text + "'";
            return false;
        }
        host = text.substr(1, close - 1);
        portText = text.substr(close + 2);
    }
    else
    {
        const auto colon = text.rfind(':');
        if (colon == std::string::npos || colon == 0)
        {
            error = "expected HOST:PORT, got '" + text + "'";
            return false;
        }
        host = text.substr(0, colon);
        portText = text.substr(colon + 1);
    }
    if (portText.empty() || portText.size() > 5 ||
        portText.find_first_not_of("0123456789") != std::string::npos)
    {
        error = "bad port '" + portText + "' in '" + text + "'";
        return false;
    }
    const unsigned long value = std::stoul(portText);
    if (value == 0 || value > 65535)
    {
        error = "port out of range 1..65535 in '" + text + "'";
        return false;
    }
    port = static_cast<std::uint16_t>(value);
    return true;
}

struct UdpClient::Impl
{
    explicit Impl(const ClientConfig& config)
        : client(config, [this](std::span<const std::uint8_t> datagram) { send(datagram); })
    {
    }

    void send(std::span<const std::uint8_t> datagram)
    {
        asio::error_code ignored; // a lost send is like a lost datagram: the protocol copes
        socket.send(asio::buffer(datagram.data(), datagram.size()), 0, ignored);
    }

    asio::io_context io{1};
    asio::ip::udp::socket socket{io};
    Client client;
    ReceiveBuffer buffer{};
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

UdpClient::UdpClient(const ClientConfig& config) : m_impl(std::make_unique<Impl>(config)) {}
UdpClient::~UdpClient() = default;

double UdpClient::now() const
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_impl->start).count();
}

Client& UdpClient::client()
{
    return m_impl->client;
}
const Client& UdpClient::client() const
{
    return m_impl->client;
}

bool UdpClient::connect(const std::string& host, std::uint16_t port, std::string& error)
{
    // Connected: only datagrams from the server reach us.
    if (!connectUdpSocket(m_impl->io, m_impl->socket, host, port, error))
    {
        return false;
    }
    m_impl->client.connect(now());
    return true;
}

void UdpClient::poll(double timeoutSeconds)
{
    Impl& impl = *m_impl;
    if (waitReadable(impl.io, impl.socket, timeoutSeconds))
    {
        for (;;)
        {
            asio::error_code ec;
            const std::size_t bytes = impl.socket.receive(asio::buffer(impl.buffer), 0, ec);
            if (ec)
            {
                // Would block: drained. ICMP port unreachable and the like: nothing is listening yet; keep
                // trying until time-out.
                break;
            }
            impl.client.receive({impl.buffer.data(), bytes}, now());
        }
    }
    impl.client.update(now());
}

void UdpClient::disconnect()
{
    m_impl->client.disconnect(now());
}

} // namespace polytope::client

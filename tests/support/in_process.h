// Tests: the server and its clients in one process. One way to make a server for a test (a Server front
// door with its rooms, tokenless unless the test gives it a token key) and one in-process network that
// carries datagrams between it and any number of clients with a test clock.
#pragma once

#include "polytope/client/client.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/server/server.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace polytope::test
{

/// The server's address on every in-process network.
inline const protocol::Address kServerAddress = protocol::Address::ipv4(10, 0, 0, 1, 7777);

/// A Server with the given rooms that takes tokenless clients (as --insecure), optionally with a fixed
/// cookie key. Returns nullptr and sets error when the configuration is refused.
inline std::unique_ptr<server::Server> makeServer(std::vector<server::RoomConfig> rooms, server::SendFunction send,
                                                  std::string& error,
                                                  std::optional<server::ConnectCookies::Key> cookieKey = {})
{
    server::ServerConfig config;
    config.rooms = std::move(rooms);
    config.security.insecure = true;
    config.cookieKey = cookieKey;
    return server::Server::create(config, std::move(send), error);
}

/// The same with one room.
inline std::unique_ptr<server::Server> makeServer(const server::RoomConfig& room, server::SendFunction send,
                                                  std::string& error,
                                                  std::optional<server::ConnectCookies::Key> cookieKey = {})
{
    return makeServer(std::vector<server::RoomConfig>{room}, std::move(send), error, cookieKey);
}

/// Delivers datagrams between one server and many clients when pump() is called: instantly and in order, or
/// through a NetworkSimulator's conditions (loss, latency, jitter, duplicates, blackouts) when set. Each
/// datagram is copied into 8-byte-aligned storage, as a socket's receive buffer would be.
class InProcessNetwork
{
  public:
    server::Server* server = nullptr;

    /// Datagrams go through a simulated network with these conditions from now on.
    void simulate(const protocol::NetworkConditions& conditions, std::uint64_t seed = 1)
    {
        m_simulator.emplace(conditions, seed);
    }
    protocol::NetworkSimulator* simulator() { return m_simulator ? &*m_simulator : nullptr; }

    void attach(const protocol::Address& address, client::Client& c) { m_clients[address] = &c; }
    void detach(const protocol::Address& address) { m_clients.erase(address); }

    void post(const protocol::Address& from, const protocol::Address& to, std::span<const std::uint8_t> bytes,
              double now)
    {
        if (m_simulator)
        {
            m_simulator->send(from, to, bytes, now);
            return;
        }
        InFlight f{from, to, std::vector<std::uint64_t>(bytes.size() / 8 + 1), bytes.size()};
        std::memcpy(f.storage.data(), bytes.data(), bytes.size());
        m_queue.push_back(std::move(f));
    }

    /// Hands every datagram due by `now` to its receiver.
    void pump(double now)
    {
        m_now = now;
        if (m_simulator)
        {
            for (const protocol::SimulatedDatagram& d : m_simulator->receive(kServerAddress, now))
            {
                server->receive(d.from, d.bytes, now);
            }
            for (auto& [address, c] : m_clients)
            {
                for (const protocol::SimulatedDatagram& d : m_simulator->receive(address, now))
                {
                    c->receive(d.bytes, now);
                }
            }
            return;
        }
        while (!m_queue.empty())
        {
            InFlight f = std::move(m_queue.front());
            m_queue.pop_front();
            const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(f.storage.data()), f.size);
            if (f.to == kServerAddress)
            {
                server->receive(f.from, bytes, now);
            }
            else if (auto it = m_clients.find(f.to); it != m_clients.end())
            {
                it->second->receive(bytes, now);
            }
        }
    }

    server::SendFunction serverSend()
    {
        return [this](const protocol::Address& to, std::span<const std::uint8_t> d) { post(kServerAddress, to, d, m_now); };
    }
    client::SendFunction clientSend(const protocol::Address& self)
    {
        return [this, self](std::span<const std::uint8_t> d) { post(self, kServerAddress, d, m_now); };
    }
    /// True when no datagram is in flight.
    bool idle() const { return m_queue.empty() && (!m_simulator || m_simulator->inFlight() == 0); }
    /// The test clock, as last passed to pump() or setNow().
    double now() const { return m_now; }
    void setNow(double now) { m_now = now; }

  private:
    struct InFlight
    {
        protocol::Address from;
        protocol::Address to;
        std::vector<std::uint64_t> storage;
        std::size_t size = 0;
    };
    std::deque<InFlight> m_queue;
    std::map<protocol::Address, client::Client*> m_clients;
    std::optional<protocol::NetworkSimulator> m_simulator;
    double m_now = 0.0;
};

/// A server on an InProcessNetwork, created for the test (REQUIREs success).
inline std::unique_ptr<server::Server> makeServer(InProcessNetwork& net, const server::RoomConfig& room = {})
{
    std::string error;
    auto s = makeServer(room, net.serverSend(), error);
    INFO(error);
    REQUIRE(s);
    net.server = s.get();
    return s;
}

} // namespace polytope::test

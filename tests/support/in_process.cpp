#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

namespace polytope::test
{

AlignedDatagram::AlignedDatagram(std::span<const std::uint8_t> bytes)
    : m_storage(bytes.size() / 8 + 1), m_size(bytes.size())
{
    if (!bytes.empty())
    {
        std::memcpy(m_storage.data(), bytes.data(), bytes.size());
    }
}

// ------------------------------------------------------------------------------------------ the network

void InProcessNetwork::simulate(const protocol::NetworkConditions& conditions, std::uint64_t seed)
{
    m_simulator.emplace(conditions, seed);
}

void InProcessNetwork::post(const protocol::Address& from, const protocol::Address& to,
                            std::span<const std::uint8_t> bytes, double now)
{
    if (m_recording && from == kServerAddress)
    {
        m_serverSent.push_back({to, AlignedDatagram(bytes)});
    }
    if (const auto inbox = m_inboxes.find(to); inbox != m_inboxes.end())
    {
        inbox->second.emplace_back(bytes);
        return;
    }
    if (m_simulator)
    {
        m_simulator->send(from, to, bytes, now);
        return;
    }
    m_queue.push_back({from, to, AlignedDatagram(bytes)});
}

server::SendFunction InProcessNetwork::serverSend()
{
    return [this](const protocol::Address& to, std::span<const std::uint8_t> d)
    { post(kServerAddress, to, d, m_now); };
}

client::SendFunction InProcessNetwork::clientSend(const protocol::Address& self)
{
    return [this, self](std::span<const std::uint8_t> d) { post(self, kServerAddress, d, m_now); };
}

bool InProcessNetwork::idle() const
{
    return m_queue.empty() && (!m_simulator || m_simulator->inFlight() == 0);
}

// ------------------------------------------------------------------------------------------ clients

void InProcessNetwork::attach(const protocol::Address& address, client::Client& c)
{
    if (Attached* a = findClient(address))
    {
        a->client = &c;
        a->owned.reset();
        return;
    }
    m_clients.push_back({address, &c, nullptr});
}

void InProcessNetwork::detach(const protocol::Address& address)
{
    std::erase_if(m_clients, [&](const Attached& a) { return a.address == address; });
}

client::Client& InProcessNetwork::addClient(const protocol::Address& address,
                                            const client::ClientConfig& config)
{
    auto owned = std::make_unique<client::Client>(config, clientSend(address));
    client::Client& c = *owned;
    attach(address, c);
    findClient(address)->owned = std::move(owned);
    return c;
}

client::Client& InProcessNetwork::addClient(std::uint8_t host, const client::ClientConfig& config)
{
    return addClient(protocol::Address::ipv4(10, 0, 0, host, 5000), config);
}

InProcessNetwork::Attached* InProcessNetwork::findClient(const protocol::Address& address)
{
    const auto it = std::find_if(m_clients.begin(), m_clients.end(),
                                 [&](const Attached& a) { return a.address == address; });
    return it == m_clients.end() ? nullptr : &*it;
}

// ------------------------------------------------------------------------------------------ raw datagrams

void InProcessNetwork::deliver(const protocol::Address& from, std::span<const std::uint8_t> bytes)
{
    const AlignedDatagram aligned(bytes);
    server->receive(from, aligned.view(), m_now);
}

void InProcessNetwork::capture(const protocol::Address& address)
{
    m_inboxes.try_emplace(address);
}

void InProcessNetwork::clearInboxes()
{
    for (auto& [address, datagrams] : m_inboxes)
    {
        datagrams.clear();
    }
}

std::vector<const AlignedDatagram*> InProcessNetwork::serverSentTo(const protocol::Address& to) const
{
    std::vector<const AlignedDatagram*> out;
    for (const SentDatagram& s : m_serverSent)
    {
        if (s.to == to)
        {
            out.push_back(&s.datagram);
        }
    }
    return out;
}

// ------------------------------------------------------------------------------------------ delivery

std::vector<InProcessNetwork::InFlight> InProcessNetwork::takeQueued(const protocol::Address& to)
{
    std::vector<InFlight> taken;
    std::deque<InFlight> rest;
    for (InFlight& f : m_queue)
    {
        if (f.to == to)
        {
            taken.push_back(std::move(f));
        }
        else
        {
            rest.push_back(std::move(f));
        }
    }
    m_queue = std::move(rest);
    return taken;
}

void InProcessNetwork::deliverToServer(
    double now, const std::function<void(const protocol::Address&, std::span<const std::uint8_t>)>& observer)
{
    if (m_simulator)
    {
        for (const protocol::SimulatedDatagram& d : m_simulator->receive(kServerAddress, now))
        {
            server->receive(d.from, d.bytes, now);
            if (observer)
            {
                observer(d.from, d.bytes);
            }
        }
        return;
    }
    for (const InFlight& f : takeQueued(kServerAddress))
    {
        server->receive(f.from, f.datagram.view(), now);
        if (observer)
        {
            observer(f.from, f.datagram.view());
        }
    }
}

void InProcessNetwork::deliverTo(const protocol::Address& address, client::Client& c, double now)
{
    if (m_simulator)
    {
        for (const protocol::SimulatedDatagram& d : m_simulator->receive(address, now))
        {
            handOver(address, c, d.bytes, now);
        }
        return;
    }
    for (const InFlight& f : takeQueued(address))
    {
        handOver(address, c, f.datagram.view(), now);
    }
}

void InProcessNetwork::handOver(const protocol::Address& to, client::Client& c,
                                std::span<const std::uint8_t> bytes, double now)
{
    if (onDeliverToClient)
    {
        onDeliverToClient(to, bytes);
    }
    c.receive(bytes, now);
}

void InProcessNetwork::discard(const protocol::Address& address, double now)
{
    if (m_simulator)
    {
        (void)m_simulator->receive(address, now);
        return;
    }
    (void)takeQueued(address);
}

void InProcessNetwork::deliverToClients(double now)
{
    for (Attached& a : m_clients)
    {
        deliverTo(a.address, *a.client, now);
    }
    if (!m_simulator)
    {
        // Nobody is attached at the addresses still queued (the server's own are all delivered): drop them.
        std::erase_if(m_queue, [](const InFlight& f) { return f.to != kServerAddress; });
    }
}

void InProcessNetwork::pump(double now)
{
    m_now = now;
    if (m_simulator)
    {
        deliverToServer(now);
        deliverToClients(now);
        return;
    }
    while (!m_queue.empty())
    {
        InFlight f = std::move(m_queue.front());
        m_queue.pop_front();
        if (f.to == kServerAddress)
        {
            server->receive(f.from, f.datagram.view(), now);
        }
        else if (Attached* a = findClient(f.to))
        {
            handOver(f.to, *a->client, f.datagram.view(), now);
        }
    }
}

// ------------------------------------------------------------------------------------------ the clock

double InProcessNetwork::advance()
{
    m_now += frameSeconds;
    if (advanceWallClock)
    {
        wallTime += frameSeconds;
    }
    return m_now;
}

void InProcessNetwork::updateClients(double now)
{
    for (Attached& a : m_clients)
    {
        a.client->update(now);
    }
}

void InProcessNetwork::runFrame(std::optional<double> at)
{
    const auto tick = [&]
    {
        if (at)
        {
            m_now = *at;
            return;
        }
        advance();
    };
    switch (order)
    {
    case FrameOrder::ServerThenClients:
        tick();
        deliverToServer(m_now);
        server->update(m_now);
        for (Attached& a : m_clients)
        {
            deliverTo(a.address, *a.client, m_now);
            a.client->update(m_now);
        }
        if (!m_simulator)
        {
            std::erase_if(m_queue, [](const InFlight& f) { return f.to != kServerAddress; });
        }
        break;
    case FrameOrder::DeliverThenUpdate:
        deliverToServer(m_now);
        deliverToClients(m_now);
        tick();
        server->update(m_now);
        updateClients(m_now);
        break;
    case FrameOrder::UpdateThenDeliver:
        tick();
        server->update(m_now);
        updateClients(m_now);
        pump(m_now);
        break;
    }
}

void InProcessNetwork::frame()
{
    runFrame(std::nullopt);
}

void InProcessNetwork::frameAt(double now)
{
    runFrame(now);
}

void InProcessNetwork::runUntil(double seconds, const std::function<void()>& afterFrame)
{
    while (m_now < seconds)
    {
        frame();
        if (afterFrame)
        {
            afterFrame();
        }
    }
}

void InProcessNetwork::run(double seconds, const std::function<void()>& afterFrame)
{
    const double end = m_now + seconds;
    runUntil(end, afterFrame);
}

// ------------------------------------------------------------------------------------------ servers

std::unique_ptr<server::Server> makeServer(std::vector<server::RoomConfig> rooms, server::SendFunction send,
                                           std::string& error,
                                           std::optional<server::ConnectCookies::Key> cookieKey)
{
    server::ServerConfig config;
    config.rooms = std::move(rooms);
    config.security.insecure = true;
    config.cookieKey = cookieKey;
    return server::Server::create(config, std::move(send), error);
}

std::unique_ptr<server::Server> makeServer(const server::RoomConfig& room, server::SendFunction send,
                                           std::string& error,
                                           std::optional<server::ConnectCookies::Key> cookieKey)
{
    return makeServer(std::vector<server::RoomConfig>{room}, std::move(send), error, cookieKey);
}

std::unique_ptr<server::Server> makeServer(const server::ServerConfig& config, server::SendFunction send)
{
    std::string error;
    auto s = server::Server::create(config, std::move(send), error);
    INFO(error);
    REQUIRE(s);
    return s;
}

std::unique_ptr<server::Server> makeServer(InProcessNetwork& net, const server::RoomConfig& room,
                                           std::optional<server::ConnectCookies::Key> cookieKey)
{
    std::string error;
    auto s = makeServer(room, net.serverSend(), error, cookieKey);
    INFO(error);
    REQUIRE(s);
    net.server = s.get();
    return s;
}

std::unique_ptr<server::Server> makeServer(InProcessNetwork& net, server::ServerConfig config)
{
    if (!config.wallClock)
    {
        config.wallClock = [&net] { return net.wallTime; };
    }
    auto s = makeServer(config, net.serverSend());
    net.server = s.get();
    return s;
}

void dropSnapshots(client::Client& c)
{
    client::ReceivedSnapshot ignored;
    while (c.popSnapshot(ignored))
    {
    }
}

// ------------------------------------------------------------------------------------------ checks

ServerState serverState(const server::Server& server)
{
    ServerState s;
    s.clients = server.clientCount();
    for (std::size_t i = 0; i < server.roomCount(); ++i)
    {
        const server::Room& room = server.room(i);
        s.hashes.push_back(room.world().stateHash());
        s.ticks.push_back(room.tick());
        s.inputsApplied.push_back(room.metrics().inputsApplied);
        s.bodies.push_back(room.world().bodyCount());
    }
    return s;
}

std::uint64_t droppedCount(const server::Server& server, protocol::DropReason reason)
{
    std::uint64_t count = server.metrics().drops[reason];
    for (std::size_t i = 0; i < server.roomCount(); ++i)
    {
        count += server.room(i).metrics().drops[reason];
    }
    return count;
}

} // namespace polytope::test

#include "polytope/server/server.h"

#include "polytope/physics/scenes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace polytope::server
{
namespace wire = protocol::wire;

std::string ServerConfig::validate() const
{
    if (tickRateHz < 1 || tickRateHz > 1000)
    {
        return "tick rate must be 1..1000 Hz, got " + std::to_string(tickRateHz);
    }
    if (snapshotRateHz < 1 || snapshotRateHz > tickRateHz)
    {
        return "snapshot rate must be 1..tick rate (" + std::to_string(tickRateHz) + ") Hz, got " +
               std::to_string(snapshotRateHz);
    }
    if (!(clientTimeoutSeconds > 0.0) || !std::isfinite(clientTimeoutSeconds))
    {
        return "client timeout must be a positive number of seconds";
    }
    if (maxClients < 1 || maxClients > 4096)
    {
        return "max clients must be 1..4096, got " + std::to_string(maxClients);
    }
    if (maxCatchUpTicks < 1)
    {
        return "max catch-up ticks must be at least 1";
    }
    if (!physics::findScene(scene))
    {
        std::string known;
        for (const physics::SceneInfo& info : physics::builtinScenes())
        {
            known += (known.empty() ? "" : ", ") + std::string(info.name);
        }
        return "unknown scene '" + scene + "' (built-in scenes: " + known + ")";
    }
    return {};
}

std::unique_ptr<Server> Server::create(const ServerConfig& config, SendFunction send, std::string& error)
{
    error = config.validate();
    if (!error.empty())
    {
        return nullptr;
    }
    std::unique_ptr<Server> server(new Server(config, std::move(send)));
    if (!physics::findScene(config.scene)->build(server->m_world))
    {
        error = "scene '" + config.scene + "' does not fit in the world's capacity";
        return nullptr;
    }
    return server;
}

Server::Server(const ServerConfig& config, SendFunction send)
    : m_config(config), m_send(std::move(send)), m_tickSeconds(1.0 / config.tickRateHz),
      m_ticksPerSnapshot(std::max(1, static_cast<int>(std::lround(static_cast<double>(config.tickRateHz) /
                                                                  config.snapshotRateHz))))
{
}

void Server::send(const protocol::Address& to, std::span<const std::uint8_t> datagram)
{
    ++m_metrics.datagramsOut;
    m_metrics.bytesOut += datagram.size();
    m_send(to, datagram);
}

void Server::receive(const protocol::Address& from, std::span<const std::uint8_t> datagram, double now)
{
    m_metrics.bytesIn += datagram.size();
    const protocol::DecodeResult decoded = protocol::decodePacket(datagram);
    if (!decoded.ok())
    {
        m_metrics.drops.add(decoded.reason);
        spdlog::debug("ignored datagram from {}: {} ({} bytes)", from.toString(),
                      protocol::dropReasonName(decoded.reason), datagram.size());
        return;
    }
    const wire::Packet& packet = *decoded.packet;
    if (decoded.type() == wire::PacketType::ConnectRequest)
    {
        ++m_metrics.datagramsIn;
        handleConnectRequest(from, packet, now);
        return;
    }

    auto it = m_sessions.find(from);
    const bool fromClient = decoded.type() == wire::PacketType::KeepAlive || decoded.type() == wire::PacketType::Disconnect;
    if (it == m_sessions.end() || !fromClient)
    {
        m_metrics.drops.add(protocol::DropReason::UnexpectedMessage);
        spdlog::debug("ignored {} from {}: {}", wire::EnumNamePacketType(decoded.type()), from.toString(),
                      it == m_sessions.end() ? "no session" : "not a client message");
        return;
    }
    ++m_metrics.datagramsIn;
    Session& session = it->second;
    session.acks.onReceived(packet.header()->sequence());
    session.lastReceiveTime = now;
    if (decoded.type() == wire::PacketType::Disconnect)
    {
        spdlog::info("client {} ({}, {}) disconnected", session.clientId, session.name, from.toString());
        ++m_metrics.clientsDisconnected;
        m_sessions.erase(it);
    }
}

void Server::handleConnectRequest(const protocol::Address& from, const wire::Packet& packet, double now)
{
    auto it = m_sessions.find(from);
    if (it == m_sessions.end())
    {
        if (m_sessions.size() >= static_cast<std::size_t>(m_config.maxClients))
        {
            ++m_metrics.clientsDenied;
            protocol::AckTracker acks;
            send(from, m_writer.connectDenied(acks.nextOutgoing(), wire::DenyReason::ServerFull));
            spdlog::info("denied {}: server full ({} clients)", from.toString(), m_sessions.size());
            return;
        }
        Session session;
        session.clientId = m_nextClientId++;
        const auto* name = packet.message_as_ConnectRequest()->client_name();
        session.name = name ? name->str() : std::string();
        it = m_sessions.emplace(from, std::move(session)).first;
        ++m_metrics.clientsAccepted;
        spdlog::info("client {} ({}, {}) connected; {} client(s)", it->second.clientId, it->second.name,
                     from.toString(), m_sessions.size());
    }
    // Repeated requests get the same answer: the first reply may have been lost.
    Session& session = it->second;
    session.acks.onReceived(packet.header()->sequence());
    session.lastReceiveTime = now;
    send(from, m_writer.connectAccepted(session.acks.nextOutgoing(), session.clientId,
                                        static_cast<std::uint16_t>(m_config.tickRateHz),
                                        static_cast<std::uint16_t>(m_config.snapshotRateHz), m_config.scene));
}

void Server::update(double now)
{
    if (!m_started)
    {
        m_started = true;
        m_nextTickTime = now;
    }
    int ran = 0;
    while (m_nextTickTime <= now)
    {
        if (ran == m_config.maxCatchUpTicks)
        {
            // Too far behind: drop the debt instead of spiralling.
            ++m_metrics.overruns;
            m_nextTickTime = now + m_tickSeconds;
            break;
        }
        tick();
        m_nextTickTime += m_tickSeconds;
        ++ran;
    }

    for (auto it = m_sessions.begin(); it != m_sessions.end();)
    {
        if (now - it->second.lastReceiveTime > m_config.clientTimeoutSeconds)
        {
            spdlog::info("client {} ({}, {}) timed out", it->second.clientId, it->second.name, it->first.toString());
            ++m_metrics.clientsTimedOut;
            send(it->first, m_writer.disconnect(it->second.acks.nextOutgoing(), wire::DisconnectReason::TimedOut));
            it = m_sessions.erase(it);
        }
        else
        {
            ++it;
        }
    }
}

void Server::tick()
{
    m_world.step(static_cast<float>(m_tickSeconds));
    ++m_metrics.ticks;
    if (m_metrics.ticks % static_cast<std::uint64_t>(m_ticksPerSnapshot) != 0 || m_sessions.empty())
    {
        return;
    }
    captureSnapshot();
    for (auto& [address, session] : m_sessions)
    {
        sendSnapshot(address, session);
    }
}

void Server::captureSnapshot()
{
    m_snapshotBodies.clear();
    m_world.forEachBody(
        [&](const physics::BodyState& body)
        {
            protocol::SnapshotBody out;
            out.id = body.id.index;
            out.generation = body.id.generation;
            const physics::Shape& shape = body.shape;
            out.shape = static_cast<wire::ShapeKind>(shape.type);
            switch (shape.type)
            {
            case physics::ShapeType::Sphere:
                out.extent = {shape.sphere.radius, shape.sphere.radius, shape.sphere.radius};
                break;
            case physics::ShapeType::Capsule:
                out.extent = {shape.capsule.radius, shape.capsule.halfHeight, shape.capsule.radius};
                break;
            case physics::ShapeType::Box:
                out.extent = {shape.box.halfExtents.x, shape.box.halfExtents.y, shape.box.halfExtents.z};
                break;
            case physics::ShapeType::Hull:
            case physics::ShapeType::Plane:
                break;
            }
            const physics::Transform& xf = body.transform;
            out.position = {xf.p.x, xf.p.y, xf.p.z};
            out.orientation = {xf.q.x, xf.q.y, xf.q.z, xf.q.w};
            out.atRest = body.type == physics::BodyType::Static ||
                         (lengthSquared(body.linearVelocity) < 1e-6f && lengthSquared(body.angularVelocity) < 1e-6f);
            m_snapshotBodies.push_back(out);
        });
}

void Server::sendSnapshot(const protocol::Address& to, Session& session)
{
    const std::span<const protocol::SnapshotBody> bodies(m_snapshotBodies);
    const std::size_t perSlice = protocol::kBodiesPerSnapshotSlice;
    const std::size_t sliceCount = std::max<std::size_t>(1, (bodies.size() + perSlice - 1) / perSlice);
    const double serverTime = static_cast<double>(m_metrics.ticks) * m_tickSeconds;
    for (std::size_t slice = 0; slice < sliceCount; ++slice)
    {
        const std::size_t first = slice * perSlice;
        const std::size_t count = std::min(perSlice, bodies.size() - std::min(first, bodies.size()));
        send(to, m_writer.snapshotSlice(session.acks.nextOutgoing(), m_metrics.ticks, serverTime,
                                        static_cast<std::uint16_t>(slice), static_cast<std::uint16_t>(sliceCount),
                                        static_cast<std::uint32_t>(bodies.size()), bodies.subspan(first, count)));
    }
    ++m_metrics.snapshotsSent;
}

void Server::shutdown(double /*now*/)
{
    for (int repeat = 0; repeat < 3; ++repeat)
    {
        for (auto& [address, session] : m_sessions)
        {
            send(address, m_writer.disconnect(session.acks.nextOutgoing(), wire::DisconnectReason::ServerShutdown));
        }
    }
    m_sessions.clear();
}

} // namespace polytope::server

#include "polytope/client/client.h"

#include <algorithm>

namespace polytope::client
{
namespace wire = protocol::wire;

const char* clientStateName(ClientState state)
{
    switch (state)
    {
    case ClientState::Disconnected:
        return "disconnected";
    case ClientState::Connecting:
        return "connecting";
    case ClientState::Connected:
        return "connected";
    case ClientState::ConnectTimedOut:
        return "connect timed out";
    case ClientState::ConnectionDenied:
        return "connection denied";
    case ClientState::ConnectionLost:
        return "connection lost";
    case ClientState::ServerClosed:
        return "server closed the connection";
    }
    return "unknown";
}

Client::Client(const ClientConfig& config, SendFunction send) : m_config(config), m_send(std::move(send)) {}

bool Client::isFinished() const
{
    return m_state == ClientState::ConnectTimedOut || m_state == ClientState::ConnectionDenied ||
           m_state == ClientState::ConnectionLost || m_state == ClientState::ServerClosed;
}

void Client::send(std::span<const std::uint8_t> datagram, double now)
{
    ++m_stats.datagramsSent;
    m_stats.bytesSent += datagram.size();
    m_lastSendTime = now;
    m_send(datagram);
}

void Client::connect(double now)
{
    m_state = ClientState::Connecting;
    m_connectStartTime = now;
    m_lastReceiveTime = now;
    send(m_writer.connectRequest(m_acks.nextOutgoing(), m_config.name), now);
}

void Client::disconnect(double now)
{
    if (m_state == ClientState::Connected || m_state == ClientState::Connecting)
    {
        for (int repeat = 0; repeat < 3; ++repeat)
        {
            send(m_writer.disconnect(m_acks.nextOutgoing(), wire::DisconnectReason::ClientQuit), now);
        }
    }
    m_state = ClientState::Disconnected;
}

void Client::update(double now)
{
    if (m_state == ClientState::Connecting)
    {
        if (now - m_connectStartTime > m_config.connectTimeoutSeconds)
        {
            m_state = ClientState::ConnectTimedOut;
            return;
        }
        if (now - m_lastSendTime >= m_config.connectResendSeconds)
        {
            send(m_writer.connectRequest(m_acks.nextOutgoing(), m_config.name), now);
        }
    }
    else if (m_state == ClientState::Connected)
    {
        if (now - m_lastReceiveTime > m_config.serverTimeoutSeconds)
        {
            m_state = ClientState::ConnectionLost;
            return;
        }
        if (now - m_lastSendTime >= m_config.keepAliveSeconds)
        {
            send(m_writer.keepAlive(m_acks.nextOutgoing(), now), now);
        }
    }
}

void Client::receive(std::span<const std::uint8_t> datagram, double now)
{
    m_stats.bytesReceived += datagram.size();
    const protocol::DecodeResult decoded = protocol::decodePacket(datagram);
    if (!decoded.ok())
    {
        m_stats.drops.add(decoded.reason);
        return;
    }
    const wire::Packet& packet = *decoded.packet;
    const bool live = m_state == ClientState::Connecting || m_state == ClientState::Connected;
    const auto type = decoded.type();
    const bool expected = live && (type == wire::PacketType::ConnectAccepted || type == wire::PacketType::ConnectDenied ||
                                   type == wire::PacketType::Snapshot || type == wire::PacketType::KeepAlive ||
                                   type == wire::PacketType::Disconnect);
    if (!expected || (m_state == ClientState::Connecting && type == wire::PacketType::Snapshot))
    {
        m_stats.drops.add(protocol::DropReason::UnexpectedMessage);
        return;
    }
    ++m_stats.datagramsReceived;
    m_acks.onReceived(packet.header()->sequence());
    m_lastReceiveTime = now;

    switch (type)
    {
    case wire::PacketType::ConnectAccepted:
    {
        const auto* accepted = packet.message_as_ConnectAccepted();
        m_clientId = accepted->client_id();
        m_tickRateHz = accepted->tick_rate_hz();
        m_snapshotRateHz = accepted->snapshot_rate_hz();
        m_scene = accepted->scene() ? accepted->scene()->str() : std::string();
        m_state = ClientState::Connected;
        break;
    }
    case wire::PacketType::ConnectDenied:
        if (m_state == ClientState::Connecting)
        {
            m_state = ClientState::ConnectionDenied;
        }
        break;
    case wire::PacketType::Snapshot:
        onSnapshot(*packet.message_as_Snapshot(), datagram.size(), now);
        break;
    case wire::PacketType::Disconnect:
        m_state = ClientState::ServerClosed;
        break;
    default:
        break;
    }
}

void Client::onSnapshot(const wire::Snapshot& slice, std::size_t bytes, double now)
{
    const std::uint64_t tick = slice.tick();
    if (m_anyTick && tick < m_newestTick)
    {
        ++m_stats.staleSlices;
        return;
    }
    if (!m_anyTick || tick > m_newestTick)
    {
        if (m_assembling)
        {
            ++m_stats.snapshotsIncomplete;
        }
        m_anyTick = true;
        m_newestTick = tick;
        m_assembling = true;
        m_partial.tick = tick;
        m_partial.serverTime = slice.server_time();
        m_partial.bytes = 0;
        m_partial.bodies.clear();
        m_partial.bodies.reserve(std::min<std::size_t>(slice.body_count(), 65536));
        m_slicesSeen.assign(slice.slice_count(), false);
        m_slicesMissing = slice.slice_count();
    }
    if (!m_assembling || slice.slice_count() != m_slicesSeen.size() || m_slicesSeen[slice.slice_index()])
    {
        ++m_stats.staleSlices; // a duplicate, a slice of a finished snapshot, or one that disagrees
        return;
    }
    m_slicesSeen[slice.slice_index()] = true;
    --m_slicesMissing;
    m_partial.bytes += bytes;
    if (const auto* bodies = slice.bodies())
    {
        for (const wire::BodyState* b : *bodies)
        {
            protocol::SnapshotBody body;
            body.id = b->id();
            body.generation = b->generation();
            body.shape = b->shape();
            body.atRest = b->at_rest();
            body.position = {b->position().x(), b->position().y(), b->position().z()};
            body.orientation = {b->orientation().x(), b->orientation().y(), b->orientation().z(), b->orientation().w()};
            body.extent = {b->extent().x(), b->extent().y(), b->extent().z()};
            m_partial.bodies.push_back(body);
        }
    }
    if (m_slicesMissing == 0)
    {
        m_assembling = false;
        m_partial.receiveTime = now;
        std::sort(m_partial.bodies.begin(), m_partial.bodies.end(),
                  [](const protocol::SnapshotBody& a, const protocol::SnapshotBody& b) { return a.id < b.id; });
        ++m_stats.snapshotsCompleted;
        if (m_complete.size() >= m_config.maxQueuedSnapshots)
        {
            m_complete.pop_front();
        }
        m_complete.push_back(std::move(m_partial));
        m_partial = ReceivedSnapshot{};
    }
}

bool Client::popSnapshot(ReceivedSnapshot& out)
{
    if (m_complete.empty())
    {
        return false;
    }
    out = std::move(m_complete.front());
    m_complete.pop_front();
    return true;
}

} // namespace polytope::client

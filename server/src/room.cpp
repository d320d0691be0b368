#include "polytope/server/room.h"

#include "polytope/server/log_format.h"

#include "polytope/physics/scenes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace polytope::server
{
namespace wire = protocol::wire;

namespace
{
/// A Disconnect is sent this many times: UDP may lose any one copy, and the client acts on the first.
constexpr int kGoodbyeCopies = 3;
/// While paused (no ticks, so no snapshots), each client gets a KeepAlive this often (seconds), well within
/// any sensible client time-out.
constexpr double kPausedKeepAliveSeconds = 1.0;
} // namespace

std::unique_ptr<Room> Room::create(const RoomConfig& config, ConnectionTable& connections, SendToSlot send,
                                   SendToAddress sendPlain, CloseConnection close, std::string& error)
{
    error = config.validate();
    if (!error.empty())
    {
        return nullptr;
    }
    std::unique_ptr<Room> room(
        new Room(config, connections, std::move(send), std::move(sendPlain), std::move(close)));
    std::shared_ptr<const SceneDescription> file;
    if (!buildWorld(room->m_config, room->m_world, error, file))
    {
        return nullptr;
    }
    std::optional<LogicSpec> spec;
    std::unique_ptr<RoomLogic> logic = makeRoomLogic(room->m_config, file.get(), spec, error);
    if (!logic && !error.empty())
    {
        return nullptr;
    }
    room->m_explicitSpawn = config.spawnPlayer;
    room->m_explicitStopOnLogicError = config.stopOnLogicError;
    room->adoptSceneRules(std::move(file));
    room->startLogic(std::move(logic), std::move(spec));
    return room;
}

Room::Room(const RoomConfig& config, ConnectionTable& connections, SendToSlot send, SendToAddress sendPlain,
           CloseConnection close)
    : m_config(config), m_connections(connections), m_send(std::move(send)),
      m_sendPlain(std::move(sendPlain)), m_close(std::move(close)),
      m_replicator(m_config, m_metrics,
                   [this](ClientReplication& client, std::span<const std::uint8_t> datagram)
                   { this->send(client.slot, datagram); }),
      m_clients(connections.capacity()), m_tickSeconds(1.0 / config.tickRateHz),
      m_ticksPerSnapshot(std::max(
          1, static_cast<int>(std::lround(static_cast<double>(config.tickRateHz) / config.snapshotRateHz))))
{
    m_members.reserve(static_cast<std::size_t>(config.maxClients));
    m_replicationScratch.reserve(static_cast<std::size_t>(config.maxClients));
}

void Room::setProfileClock(std::function<double()> clock)
{
    m_profileClock = clock;
    m_replicator.setProfileClock(std::move(clock));
}

void Room::send(ClientSlot slot, std::span<const std::uint8_t> datagram)
{
    ++m_metrics.datagramsOut;
    m_metrics.bytesOut += datagram.size();
    if (Client* client = m_clients[slot].get())
    {
        m_replicator.charge(client->replication, datagram.size());
    }
    m_send(slot, datagram);
}

std::span<ClientReplication* const> Room::replications()
{
    m_replicationScratch.clear();
    for (const ClientSlot slot : m_members)
    {
        m_replicationScratch.push_back(&m_clients[slot]->replication);
    }
    return m_replicationScratch;
}

// ---- Clients
// -----------------------------------------------------------------------------------------------

void Room::join(ClientSlot slot, JoinOptions options, double now)
{
    // The rate asked for, rounded down to one the tick rate divides into whole ticks.
    const int snapshotRateHz = options.snapshotRateHz;
    int ticksPerSnapshot = m_ticksPerSnapshot;
    if (snapshotRateHz > 0)
    {
        ticksPerSnapshot =
            std::clamp((m_config.tickRateHz + snapshotRateHz - 1) / snapshotRateHz, 1, m_config.tickRateHz);
    }
    auto client = std::make_unique<Client>(m_config.maxBaselineAgeTicks, ticksPerSnapshot);
    client->clientId = m_nextClientId++;
    client->name = std::move(options.name);
    client->spectator = options.spectator;
    client->inputTokens = m_config.maxInputBurst;
    client->inputTokenTime = now;
    client->owned.reserve(static_cast<std::size_t>(m_config.maxBodiesPerClient));
    client->inputs.reserve(static_cast<std::size_t>(m_config.maxQueuedInputsPerClient));
    client->messageTokens = m_config.maxGameMessageBurst;
    client->messageTokenTime = now;
    if (m_logic)
    {
        client->messages.reserve(static_cast<std::size_t>(m_config.maxQueuedGameMessagesPerClient));
    }
    ClientReplication& replication = client->replication;
    replication.slot = slot;
    replication.clientId = client->clientId;
    replication.acks = &m_connections[slot].acks;
    replication.owned = &client->owned;
    replication.structured = options.snapshotFormat == wire::SnapshotFormat::Structured;
    replication.velocities = replication.structured && options.snapshotVelocities;
    m_replicator.addClient(replication);
    Client& joined = *client;
    m_clients[slot] = std::move(client);
    const protocol::Address& address = m_connections[slot].address;
    const auto at = std::lower_bound(m_members.begin(), m_members.end(), address,
                                     [this](ClientSlot s, const protocol::Address& a)
                                     { return m_connections[s].address < a; });
    m_members.insert(at, slot);
    ++m_metrics.clientsAccepted;
    spdlog::info("client {} ({}, {}) joined room '{}'{}; {} client(s)", joined.clientId, joined.name,
                 address.toString(), m_config.room,
                 joined.replication.structured
                     ? (joined.replication.velocities ? " (structured snapshots with velocities)"
                                                      : " (structured snapshots)")
                     : "",
                 m_members.size());
    if (m_logic)
    {
        // The game gives its players their bodies.
        const ClientInfo info = infoOf(joined);
        m_hookTick = m_tick;
        callLogic("on_join", [&](RoomLogic& l, RoomContext& room) { l.onJoin(room, info); });
        afterLogic();
    }
    else if (!joined.spectator)
    {
        spawnFor(joined, nullptr);
    }
}

void Room::admit(ClientSlot slot, JoinOptions options, std::uint16_t sequence, double now)
{
    Connection& connection = m_connections[slot];
    m_now = now;
    connection.acks.onReceived(sequence); // a refusal acknowledges it too
    if (!m_clients[slot])
    {
        if (!logicAdmits(slot, options))
        {
            return;
        }
        join(slot, std::move(options), now);
    }
    connection.lastReceiveTime = now;
    send(slot, m_writer.connectAccepted(connection.acks.nextOutgoing(), sessionParameters(slot)));
}

void Room::receiveDatagram(ClientSlot slot, const protocol::DecodeResult& decoded, std::size_t wireBytes,
                           double now)
{
    m_metrics.bytesIn += wireBytes;
    m_now = now;
    const wire::PacketType type = decoded.ok() ? decoded.type() : wire::PacketType::KeepAlive;
    if (!m_clients[slot])
    {
        // It left while this datagram was on its way to the room's thread (the slot may be another's by now):
        // a late copy of its goodbye is no error.
        if (type != wire::PacketType::Disconnect)
        {
            m_metrics.drops.add(protocol::DropReason::UnexpectedMessage);
        }
        return;
    }
    const bool fromClient = type == wire::PacketType::KeepAlive || type == wire::PacketType::Disconnect ||
                            type == wire::PacketType::ClientInput;
    if (!decoded.ok() || !fromClient)
    {
        m_metrics.drops.add(decoded.ok() ? protocol::DropReason::UnexpectedMessage : decoded.reason);
        spdlog::debug("ignored datagram from {}: {}", m_connections[slot].address,
                      decoded.ok() ? "not a client message" : protocol::dropReasonName(decoded.reason));
        return;
    }
    Connection& connection = m_connections[slot];
    connection.acks.onReceived(decoded.packet->header()->sequence());
    connection.lastReceiveTime = now;
    receive(slot, decoded, now);
}

void Room::sendChallenge(ClientSlot slot, std::span<const std::uint8_t> cookie)
{
    if (m_clients[slot])
    {
        send(slot, m_writer.challenge({}, cookie));
    }
}

void Room::timeOutSilent(double now)
{
    for (std::size_t i = m_members.size(); i > 0; --i)
    {
        const ClientSlot slot = m_members[i - 1];
        if (now - m_connections[slot].lastReceiveTime > m_config.clientTimeoutSeconds)
        {
            timeOut(slot);
        }
    }
}

void Room::runAdmin(const protocol::AdminCommandFields& command, const protocol::Address& from, double now,
                    const protocol::AdminMacKey& key)
{
    const AdminResult result = admin(command, now);
    const auto reply = m_writer.adminReply({}, command.nonce, result.ok, result.message, &key);
    ++m_metrics.datagramsOut;
    m_metrics.bytesOut += reply.size();
    m_sendPlain(from, reply);
}

protocol::SessionParameters Room::sessionParameters(ClientSlot slot) const
{
    const Client& client = *m_clients[slot];
    protocol::SessionParameters p;
    p.clientId = client.clientId;
    p.tickRateHz = static_cast<std::uint16_t>(m_config.tickRateHz);
    // Rounded down: the granted rate never exceeds the real one (tick rate / ticks per snapshot).
    p.snapshotRateHz =
        static_cast<std::uint16_t>(std::max(1, m_config.tickRateHz / client.replication.ticksPerSnapshot));
    p.scene = m_config.scene;
    p.room = m_config.room;
    p.position = m_config.quantization;
    p.maxBaselineAgeTicks = m_config.maxBaselineAgeTicks;
    p.firstTick = m_tick;
    p.snapshotFormat =
        client.replication.structured ? wire::SnapshotFormat::Structured : wire::SnapshotFormat::Compressed;
    p.snapshotVelocities = client.replication.velocities;
    return p;
}

void Room::receive(ClientSlot slot, const protocol::DecodeResult& decoded, double now)
{
    Client& client = *m_clients[slot];
    ++m_metrics.datagramsIn;
    protocol::forEachAcked(*decoded.packet->header(),
                           [&](std::uint16_t sequence)
                           {
                               m_replicator.onAcked(client.replication, sequence);
                               onStateAcked(client, sequence);
                           });
    if ((decoded.packet->header()->flags() & protocol::kHeaderFlagFullSnapshotRequest) != 0)
    {
        // decodePacket allows the flag on ClientInput and KeepAlive only.
        m_replicator.requestFullSnapshot(client.replication, m_tick, m_tickSeconds);
    }
    switch (decoded.type())
    {
    case wire::PacketType::ClientInput:
        handleInputs(client, *decoded.packet->message_as_ClientInput(), now);
        handleGameMessages(client, *decoded.packet->message_as_ClientInput(), now);
        break;
    case wire::PacketType::Disconnect:
        ++m_metrics.clientsDisconnected;
        leave(slot, "disconnected", LeaveReason::Disconnected);
        break;
    default:
        break; // KeepAlive: its header was all it carried
    }
}

void Room::sayGoodbye(ClientSlot slot, wire::DisconnectReason reason)
{
    for (int copy = 0; copy < kGoodbyeCopies; ++copy)
    {
        send(slot, m_writer.disconnect(m_connections[slot].acks.nextOutgoing(), reason));
    }
}

void Room::timeOut(ClientSlot slot)
{
    ++m_metrics.clientsTimedOut;
    send(slot,
         m_writer.disconnect(m_connections[slot].acks.nextOutgoing(), wire::DisconnectReason::TimedOut));
    leave(slot, "timed out", LeaveReason::TimedOut);
}

void Room::leave(ClientSlot slot, const char* why, LeaveReason reason)
{
    Client& client = *m_clients[slot];
    spdlog::info("client {} ({}, {}) {}; {} client(s) left", client.clientId, client.name,
                 m_connections[slot].address.toString(), why, m_members.size() - 1);
    if (m_logic)
    {
        const ClientInfo info = infoOf(client);
        m_hookTick = m_tick;
        callLogic("on_leave", [&](RoomLogic& l, RoomContext& room) { l.onLeave(room, info, reason); });
    }
    releaseBodies(client);
    m_metrics.inputsFailed += client.inputs.size(); // queued for ticks it is no longer here for
    std::erase(m_members, slot);
    m_clients[slot].reset();
    m_close(slot);
}

bool Room::kick(std::uint32_t clientId)
{
    for (const ClientSlot slot : m_members)
    {
        if (m_clients[slot]->clientId == clientId)
        {
            sayGoodbye(slot, wire::DisconnectReason::Kicked);
            ++m_metrics.clientsKicked;
            leave(slot, "kicked", LeaveReason::Kicked);
            return true;
        }
    }
    return false;
}

void Room::shutdown()
{
    for (const ClientSlot slot : m_members)
    {
        sayGoodbye(slot, wire::DisconnectReason::ServerShutdown);
    }
    while (!m_members.empty())
    {
        leave(m_members.front(), "told the server is shutting down", LeaveReason::Shutdown);
    }
    stopLogic();
}

Room::Client* Room::findClient(std::uint32_t clientId)
{
    for (const ClientSlot slot : m_members)
    {
        if (m_clients[slot]->clientId == clientId)
        {
            return m_clients[slot].get();
        }
    }
    return nullptr;
}

const Room::Client* Room::findClient(std::uint32_t clientId) const
{
    return const_cast<Room*>(this)->findClient(clientId);
}

const protocol::SnapshotFrame* Room::sentFrame(std::uint32_t clientId, std::uint64_t tick) const
{
    const Client* client = findClient(clientId);
    return client ? m_replicator.sentFrame(client->replication, tick) : nullptr;
}

std::vector<physics::BodyId> Room::ownedBodies(std::uint32_t clientId) const
{
    const Client* client = findClient(clientId);
    return client ? client->owned : std::vector<physics::BodyId>{};
}

bool Room::ownsBody(const Client& client, physics::BodyId id)
{
    return std::find(client.owned.begin(), client.owned.end(), id) != client.owned.end();
}

bool Room::spawnFor(Client& client, const physics::Vec3* at)
{
    if (!m_config.spawnPlayer || client.owned.size() >= static_cast<std::size_t>(m_config.maxBodiesPerClient))
    {
        return false;
    }
    physics::BodyId id;
    if (!m_config.spawnPlayer(m_world, m_spawnCount, at, id))
    {
        spdlog::warn("could not spawn a body for client {} (world full?)", client.clientId);
        return false;
    }
    ++m_spawnCount;
    ++m_metrics.bodiesSpawned;
    client.owned.push_back(id);
    return true;
}

void Room::releaseBodies(Client& client)
{
    if (!m_config.keepBodiesOnLeave)
    {
        for (const physics::BodyId id : client.owned)
        {
            if (m_world.destroyBody(id) == physics::WorldStatus::Ok)
            {
                ++m_metrics.bodiesRemoved;
            }
        }
    }
    client.owned.clear();
}

// ---- The tick loop
// -----------------------------------------------------------------------------------------

void Room::update(double now)
{
    m_now = now;
    if (!m_started)
    {
        m_started = true;
        m_nextTickTime = now;
    }
    const double interval = m_tickSeconds / m_timeScale; // real seconds per tick
    int ran = 0;
    while (m_nextTickTime <= now)
    {
        if (ran == m_config.maxCatchUpTicks)
        {
            // Too far behind: drop the debt instead of spiralling.
            ++m_metrics.overruns;
            m_nextTickTime = now + interval;
            break;
        }
        if (m_paused && m_stepBudget == 0)
        {
            ++m_metrics.pausedTicks;
        }
        else
        {
            m_stepBudget -= m_paused ? 1 : 0;
            const double started = m_profileClock ? m_profileClock() : 0.0;
            runTick(now);
            if (m_profileClock)
            {
                m_metrics.tickSeconds.observe(m_profileClock() - started);
            }
        }
        m_nextTickTime += interval;
        ++ran;
    }
    if (m_paused)
    {
        keepAlivePaused(now);
    }
}

void Room::keepAlivePaused(double now)
{
    // No ticks, so no snapshots: keep the clients' connections alive.
    for (const ClientSlot slot : m_members)
    {
        Client& client = *m_clients[slot];
        if (now - client.lastKeepAliveTime >= kPausedKeepAliveSeconds)
        {
            client.lastKeepAliveTime = now;
            send(slot, m_writer.keepAlive(m_connections[slot].acks.nextOutgoing(), now));
        }
    }
}

void Room::runTick(double now)
{
    const std::uint64_t next = m_tick + 1;
    if (m_preStep)
    {
        m_preStep(next);
    }
    applyInputs(next);
    if (m_logic && !m_logicStopped)
    {
        deliverMessages(next);
        m_hookTick = next;
        callLogic("on_tick_begin", [](RoomLogic& l, RoomContext& room) { l.onTickBegin(room); });
        afterLogic();
    }
    m_world.step(static_cast<float>(m_tickSeconds));
    m_tick = next;
    if (m_poseHistory)
    {
        m_poseHistory->record(m_world, m_tick);
    }
    if (m_logic && !m_logicStopped)
    {
        m_hookTick = next;
        dispatchEvents(); // kicks the hooks ask for wait for afterLogic, after every event
        callLogic("on_tick_end", [](RoomLogic& l, RoomContext& room) { l.onTickEnd(room); });
        afterLogic();
        if (m_logic)
        {
            const LogicStats stats = m_logic->stats();
            m_metrics.scriptBudgetStops = stats.budgetStops;
            m_metrics.scriptMemoryRefusals = stats.memoryRefusals;
        }
    }
    m_replicator.refreshCatalogue(m_world, m_tick, replications());
    for (const ClientSlot slot : m_members)
    {
        m_replicator.sendCatalogue(m_clients[slot]->replication, now);
    }
    bool captured = false;
    m_replicator.beginTick();
    for (const ClientSlot slot : m_members)
    {
        ClientReplication& replication = m_clients[slot]->replication;
        if (m_tick % static_cast<std::uint64_t>(replication.ticksPerSnapshot) != 0)
        {
            continue;
        }
        if (!captured)
        {
            m_replicator.captureSnapshot(m_world, m_tick);
            captured = true;
        }
        m_replicator.sendSnapshot(replication, now, m_tickSeconds);
    }
    // Game states next (small, and what the game is about), then geometry: within a tick snapshots have
    // the first claim on the budget.
    for (const ClientSlot slot : m_members)
    {
        sendGameStates(*m_clients[slot], now);
    }
    for (const ClientSlot slot : m_members)
    {
        m_replicator.sendGeometry(m_clients[slot]->replication, now);
    }
}

void Room::resetWorld(physics::World&& world)
{
    // Bodies of the old world are gone: owners forget them, queued inputs are void, and every catalogue
    // slot is rewritten (a new body may reuse an old id and generation with another shape).
    m_world = std::move(world);
    for (const ClientSlot slot : m_members)
    {
        m_clients[slot]->inputs.clear();
    }
    m_replicator.forgetBodies(replications());
    for (const ClientSlot slot : m_members)
    {
        Client& client = *m_clients[slot];
        client.owned.clear();
        if (!client.spectator && !m_logic)
        {
            spawnFor(client, nullptr);
        }
    }
    m_replicator.refreshCatalogue(m_world, m_tick, replications());
}

} // namespace polytope::server

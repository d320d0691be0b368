// polytope-server: a room's game logic (room_logic.h): making and seating it, calling its hooks safely,
// game messages from clients (queued by tick like inputs) and game states to them (reliable, whole).
#include "polytope/server/room.h"

#include "polytope/server/log_format.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>

namespace polytope::server
{
namespace wire = protocol::wire;

namespace
{
/// RoomContext::log lines per second at most (a bucket of this many), per room.
constexpr double kLogLinesPerSecond = 20.0;
/// Logic errors are logged at most once per this many seconds (the rest are counted, and summed in the
/// next line).
constexpr double kErrorLogSeconds = 1.0;
} // namespace

// ---- The context hooks act through ------------------------------------------------------------------------

class Room::LogicContext final : public RoomContext
{
  public:
    explicit LogicContext(Room& room) : m_room(room) {}

    std::string_view roomName() const override { return m_room.m_config.room; }
    std::uint64_t tick() const override { return m_room.m_hookTick; }
    double tickSeconds() const override { return m_room.m_tickSeconds; }
    physics::World& world() override { return m_room.m_world; }
    std::string_view settings() const override
    {
        return m_room.m_logicSpec ? std::string_view(m_room.m_logicSpec->settingsJson)
                                  : std::string_view("{}");
    }

    std::size_t clientCount() const override { return m_room.m_members.size(); }
    ClientInfo clientAt(std::size_t index) const override
    {
        return index < m_room.m_members.size() ? m_room.infoOf(*m_room.m_clients[m_room.m_members[index]])
                                               : ClientInfo{};
    }
    ClientInfo client(std::uint32_t clientId) const override
    {
        const Client* c = m_room.findClient(clientId);
        return c ? m_room.infoOf(*c) : ClientInfo{};
    }
    std::span<const physics::BodyId> ownedBodies(std::uint32_t clientId) const override
    {
        const Client* c = m_room.findClient(clientId);
        return c ? std::span<const physics::BodyId>(c->owned) : std::span<const physics::BodyId>{};
    }
    bool giveBody(std::uint32_t clientId, physics::BodyId body) override
    {
        Client* c = m_room.findClient(clientId);
        if (!c || !m_room.m_world.isValid(body) ||
            c->owned.size() >= static_cast<std::size_t>(m_room.m_config.maxBodiesPerClient) ||
            ownerOf(body) != nullptr)
        {
            return false;
        }
        c->owned.push_back(body);
        m_room.m_replicator.touchEntry(body.index, m_room.replications());
        return true;
    }
    bool takeBody(physics::BodyId body) override
    {
        Client* owner = ownerOf(body);
        if (!owner)
        {
            return false;
        }
        std::erase(owner->owned, body);
        m_room.m_replicator.touchEntry(body.index, m_room.replications());
        return true;
    }
    physics::BodyId spawnPlayer(std::uint32_t clientId, const physics::Vec3* at) override
    {
        Client* c = m_room.findClient(clientId);
        if (!c || (at && !(std::isfinite(at->x) && std::isfinite(at->y) && std::isfinite(at->z))) ||
            !m_room.spawnFor(*c, at))
        {
            return {};
        }
        return c->owned.back();
    }
    bool kick(std::uint32_t clientId, std::string_view reason) override
    {
        if (!m_room.findClient(clientId))
        {
            return false;
        }
        m_room.m_pendingKicks.emplace_back(clientId,
                                           std::string(reason.substr(0, protocol::kMaxLogicReasonBytes)));
        return true;
    }

    bool setRoomState(std::span<const std::uint8_t> state) override
    {
        if (state.size() > kMaxGameStateBytes)
        {
            return false;
        }
        if (!std::ranges::equal(state, m_room.m_roomState))
        {
            m_room.m_roomState.assign(state.begin(), state.end());
            ++m_room.m_roomStateVersion;
        }
        return true;
    }
    bool setClientState(std::uint32_t clientId, std::span<const std::uint8_t> state) override
    {
        Client* c = m_room.findClient(clientId);
        if (!c || state.size() > kMaxGameStateBytes)
        {
            return false;
        }
        if (!std::ranges::equal(state, c->state))
        {
            c->state.assign(state.begin(), state.end());
            ++c->stateVersion;
        }
        return true;
    }
    std::span<const std::uint8_t> roomState() const override { return m_room.m_roomState; }
    std::span<const std::uint8_t> clientState(std::uint32_t clientId) const override
    {
        return m_room.clientState(clientId);
    }

    bool castRayAsSeen(const ViewTime& view, const physics::RayCastInput& ray,
                       const physics::QueryFilter& filter, physics::RayQueryHit& hit,
                       RewindStatus* status) const override
    {
        return rewound(
            status,
            [&](const PoseHistory& history)
            { return history.castRayAt(m_room.m_world, view, ray, filter, hit); },
            [&] { return m_room.m_world.castRayClosest(ray, filter, hit); });
    }
    bool castShapeAsSeen(const ViewTime& view, const physics::ShapeCastInput& cast,
                         const physics::QueryFilter& filter, physics::ShapeQueryHit& hit,
                         RewindStatus* status) const override
    {
        return rewound(
            status,
            [&](const PoseHistory& history)
            { return history.castShapeAt(m_room.m_world, view, cast, filter, hit); },
            [&] { return m_room.m_world.castShapeClosest(cast, filter, hit); });
    }

    void log(std::string_view message) override
    {
        Room& r = m_room;
        r.m_logTokens =
            std::min(kLogLinesPerSecond, r.m_logTokens + (r.m_now - r.m_logTokenTime) * kLogLinesPerSecond);
        r.m_logTokenTime = r.m_now;
        if (r.m_logTokens < 1.0)
        {
            ++r.m_metrics.logicLogLinesDropped;
            return;
        }
        r.m_logTokens -= 1.0;
        spdlog::info("room '{}' logic: {}", r.m_config.room, printableExcerpt(message, 512));
    }

  private:
    /// A query against the pose history (counted by how it went), or against the live world when the room
    /// keeps none.
    template <class Rewound, class Live>
    bool rewound(RewindStatus* status, Rewound&& query, Live&& live) const
    {
        RoomMetrics& metrics = m_room.m_metrics;
        ++metrics.rewoundQueries;
        if (!m_room.m_poseHistory)
        {
            ++metrics.rewoundWithoutHistory;
            if (status)
            {
                *status = RewindStatus::NoHistory;
            }
            return live();
        }
        const RewindResult result = query(*m_room.m_poseHistory);
        metrics.rewoundClamped +=
            result.status == RewindStatus::ClampedToOldest || result.status == RewindStatus::ClampedToNewest;
        metrics.rewoundInvalid += result.status == RewindStatus::InvalidView;
        if (status)
        {
            *status = result.status;
        }
        return result.hit;
    }

    Client* ownerOf(physics::BodyId body) const
    {
        for (const ClientSlot slot : m_room.m_members)
        {
            Client& c = *m_room.m_clients[slot];
            if (std::find(c.owned.begin(), c.owned.end(), body) != c.owned.end())
            {
                return &c;
            }
        }
        return nullptr;
    }

    Room& m_room;
};

// ---- Making, seating and calling the logic ----------------------------------------------------------------

Room::~Room() = default;

std::unique_ptr<RoomLogic> Room::makeRoomLogic(const RoomConfig& config, const SceneDescription* file,
                                               std::optional<LogicSpec>& spec, std::string& error)
{
    spec.reset();
    if (config.logic)
    {
        std::unique_ptr<RoomLogic> logic = config.logic();
        if (!logic)
        {
            error = "the room's logic factory made no logic";
        }
        return logic;
    }
    if (!file || !file->logic)
    {
        return nullptr;
    }
    spec = *file->logic;
    std::unique_ptr<RoomLogic> logic = makeLogic(*spec, error);
    if (!logic)
    {
        spec.reset();
    }
    return logic;
}

void Room::startLogic(std::unique_ptr<RoomLogic> logic, std::optional<LogicSpec> spec)
{
    m_logic = std::move(logic);
    m_logicSpec = std::move(spec);
    m_logicStopped = false;
    if (!m_logicContext)
    {
        m_logicContext = std::make_shared<LogicContext>(*this);
    }
    // Poses for lag compensation, of this world only.
    if (m_logic && m_config.lagCompensationSeconds > 0.0)
    {
        if (!m_poseHistory)
        {
            PoseHistoryConfig history;
            history.tickRateHz = m_config.tickRateHz;
            history.maxRoundTripSeconds = m_config.lagCompensationSeconds; // the whole window
            history.interpolationDelaySeconds = 0.0;
            history.snapshotIntervalSeconds = 0.0;
            m_poseHistory = std::make_unique<PoseHistory>(history);
        }
        m_poseHistory->clear();
        m_poseHistory->record(m_world, m_tick);
    }
    else
    {
        m_poseHistory.reset();
    }
    if (m_logic)
    {
        spdlog::info("room '{}' runs logic '{}'", m_config.room,
                     m_logicSpec ? m_logicSpec->name : "(built in)");
        m_hookTick = m_tick;
        callLogic("on_start", [](RoomLogic& l, RoomContext& room) { l.onStart(room); });
        afterLogic();
    }
}

void Room::stopLogic()
{
    if (m_logic && !m_logicStopped)
    {
        m_hookTick = m_tick;
        callLogic("on_stop", [](RoomLogic& l, RoomContext& room) { l.onStop(room); });
    }
    m_logic.reset();
    m_pendingKicks.clear();
}

bool Room::reloadLogic(std::string& error)
{
    if (!m_logicSpec)
    {
        error = m_logic ? "the room's logic was not made from a scene's spec: nothing to reload"
                        : "the room runs no logic";
        return false;
    }
    std::unique_ptr<RoomLogic> fresh = makeLogic(*m_logicSpec, error);
    if (!fresh)
    {
        return false;
    }
    m_logic = std::move(fresh);
    m_logicStopped = false;
    m_paused = false;
    ++m_metrics.logicReloads;
    m_hookTick = m_tick;
    callLogic("on_reload", [](RoomLogic& l, RoomContext& room) { l.onReload(room); });
    afterLogic();
    return true;
}

void Room::callLogic(const char* name, physics::FunctionRef<void(RoomLogic&, RoomContext&)> hook)
{
    if (!m_logic || m_logicStopped)
    {
        return;
    }
    ++m_logicDepth;
    try
    {
        hook(*m_logic, *m_logicContext);
    }
    catch (const std::exception& e)
    {
        onLogicError(name, e.what());
    }
    catch (...)
    {
        onLogicError(name, "an exception of unknown type");
    }
    --m_logicDepth;
}

void Room::onLogicError(const char* hook, const char* what)
{
    ++m_metrics.logicErrors;
    if (m_config.stopOnLogicError)
    {
        spdlog::error("room '{}' logic failed in {}: {}; the room stops", m_config.room, hook,
                      printableExcerpt(what, 512));
        m_logicStopped = true;
        m_paused = true;
        m_stepBudget = 0;
        const std::string reason = std::string("the game failed: ") + printableExcerpt(what, 96);
        for (const ClientSlot slot : m_members)
        {
            m_pendingKicks.emplace_back(m_clients[slot]->clientId, reason);
        }
        return;
    }
    if (m_now - m_lastLogicErrorLog >= kErrorLogSeconds)
    {
        spdlog::error("room '{}' logic failed in {}: {}{}", m_config.room, hook, printableExcerpt(what, 512),
                      m_logicErrorsUnlogged ? " (and " + std::to_string(m_logicErrorsUnlogged) +
                                                  " more errors since the last one logged)"
                                            : std::string());
        m_lastLogicErrorLog = m_now;
        m_logicErrorsUnlogged = 0;
    }
    else
    {
        ++m_logicErrorsUnlogged;
    }
}

void Room::afterLogic()
{
    if (m_logicDepth > 0)
    {
        return; // the outermost hook's caller does it
    }
    // Kicks first (each leave may call onLeave, which may kick again: the list is taken whole each round).
    while (!m_pendingKicks.empty())
    {
        auto kicks = std::move(m_pendingKicks);
        m_pendingKicks.clear();
        for (const auto& [clientId, reason] : kicks)
        {
            for (const ClientSlot slot : m_members)
            {
                if (m_clients[slot]->clientId == clientId)
                {
                    const bool stopped = m_logicStopped;
                    for (int copy = 0; copy < 3; ++copy)
                    {
                        send(slot, m_writer.disconnect(m_connections[slot].acks.nextOutgoing(),
                                                       stopped ? wire::DisconnectReason::RoomStopped
                                                               : wire::DisconnectReason::Kicked,
                                                       reason));
                    }
                    ++m_metrics.clientsKicked;
                    leave(slot, stopped ? "left: the room's logic stopped it" : "kicked by the room's logic",
                          stopped ? LeaveReason::Shutdown : LeaveReason::Kicked);
                    break;
                }
            }
        }
    }
    // Bodies the logic destroyed are owned no more.
    for (const ClientSlot slot : m_members)
    {
        std::erase_if(m_clients[slot]->owned, [this](physics::BodyId id) { return !m_world.isValid(id); });
    }
}

ClientInfo Room::infoOf(const Client& client) const
{
    return {client.clientId, client.name, client.spectator};
}

std::span<const std::uint8_t> Room::clientState(std::uint32_t clientId) const
{
    const Client* c = findClient(clientId);
    return c ? std::span<const std::uint8_t>(c->state) : std::span<const std::uint8_t>{};
}

bool Room::logicAdmits(ClientSlot slot, const JoinOptions& options)
{
    std::string reason;
    if (m_logicStopped)
    {
        reason = "the room has stopped";
    }
    else if (m_logic)
    {
        const ClientInfo info{m_nextClientId, options.name, options.spectator};
        JoinDecision decision = JoinDecision::refuse("the game could not decide");
        m_hookTick = m_tick;
        callLogic("on_join_attempt",
                  [&](RoomLogic& l, RoomContext& room) { decision = l.onJoinAttempt(room, info); });
        afterLogic();
        if (decision.accept)
        {
            return true;
        }
        reason = decision.reason;
    }
    else
    {
        return true;
    }
    ++m_metrics.joinsRefusedByLogic;
    spdlog::info("room '{}' refused {} ({}): {}", m_config.room, printableExcerpt(options.name),
                 m_connections[slot].address.toString(), printableExcerpt(reason, 128));
    send(slot, m_writer.connectDenied(m_connections[slot].acks.nextOutgoing(),
                                      wire::DenyReason::RefusedByGame, reason));
    m_close(slot);
    return false;
}

// ---- Game messages ----------------------------------------------------------------------------------------

void Room::handleGameMessages(Client& client, const wire::ClientInput& message, double now)
{
    protocol::readGameMessages(message, m_messageScratch); // each range-checked by decodePacket
    if (m_messageScratch.empty())
    {
        return;
    }
    client.messageTokens =
        std::min(m_config.maxGameMessageBurst,
                 client.messageTokens + (now - client.messageTokenTime) * m_config.maxGameMessagesPerSecond);
    client.messageTokenTime = now;
    for (const protocol::GameMessageFields& m : m_messageScratch)
    {
        ++m_metrics.gameMessagesReceived;
        if (!client.messagesSeen.record(m.sequence))
        {
            ++m_metrics.gameMessagesDuplicate;
            continue;
        }
        if (!m_logic || m_logicStopped)
        {
            ++m_metrics.gameMessagesRefused;
            continue;
        }
        if (client.messageTokens < 1.0)
        {
            ++m_metrics.gameMessagesRateLimited;
            continue;
        }
        client.messageTokens -= 1.0;
        if (m.tick > m_tick + static_cast<std::uint64_t>(m_config.maxInputLeadTicks) ||
            client.messages.size() >= static_cast<std::size_t>(m_config.maxQueuedGameMessagesPerClient))
        {
            ++m_metrics.gameMessagesRefused;
            continue;
        }
        std::uint64_t tick = m.tick;
        if (tick <= m_tick)
        {
            ++m_metrics.gameMessagesLate;
            tick = m_tick + 1;
        }
        const auto at = std::upper_bound(client.messages.begin(), client.messages.end(), tick,
                                         [](std::uint64_t t, const QueuedMessage& q) { return t < q.tick; });
        QueuedMessage& queued = *client.messages.emplace(at);
        queued.tick = tick;
        queued.arrival = m_messagesQueued++;
        queued.clientId = client.clientId;
        queued.sequence = m.sequence;
        queued.view = {m.viewFromTick, m.viewToTick, m.viewFraction};
        queued.size = static_cast<std::uint16_t>(m.data.size());
        std::memcpy(queued.data.data(), m.data.data(), m.data.size());
    }
}

void Room::deliverMessages(std::uint64_t tick)
{
    m_dueMessages.clear();
    for (const ClientSlot slot : m_members)
    {
        for (const QueuedMessage& q : m_clients[slot]->messages)
        {
            if (q.tick > tick)
            {
                break;
            }
            m_dueMessages.push_back(&q);
        }
    }
    if (m_dueMessages.empty())
    {
        return;
    }
    std::sort(m_dueMessages.begin(), m_dueMessages.end(),
              [](const QueuedMessage* a, const QueuedMessage* b) { return a->arrival < b->arrival; });
    m_hookTick = tick;
    // Hooks cannot remove clients while this runs (kicks wait for afterLogic, below), so the queues stay put.
    for (const QueuedMessage* q : m_dueMessages)
    {
        const GameMessage message{q->clientId, q->sequence, tick, q->view,
                                  std::span(q->data.data(), q->size)};
        ++m_metrics.gameMessagesDelivered;
        callLogic("on_message", [&](RoomLogic& l, RoomContext& room) { l.onMessage(room, message); });
    }
    for (const ClientSlot slot : m_members)
    {
        auto& queue = m_clients[slot]->messages;
        const auto due = std::find_if(queue.begin(), queue.end(),
                                      [tick](const QueuedMessage& q) { return q.tick > tick; });
        queue.erase(queue.begin(), due);
    }
    afterLogic();
}

// ---- Events -----------------------------------------------------------------------------------------------

void Room::dispatchEvents()
{
    const std::uint32_t wanted = m_logic ? m_logic->wantedEvents() : 0;
    if (wanted == 0)
    {
        return;
    }
    // Copies: a hook may destroy bodies, which the engine records for the next step's events.
    const physics::SensorEvents sensors = m_world.sensorEvents();
    const physics::ContactEvents contacts = m_world.contactEvents();
    const auto copy = [](auto& into, auto from, bool want)
    { want ? into.assign(from.begin(), from.end()) : into.clear(); };
    copy(m_sensorBegins, sensors.begin, (wanted & kLogicSensorEvents) != 0);
    copy(m_sensorEnds, sensors.end, (wanted & kLogicSensorEvents) != 0);
    copy(m_contactBegins, contacts.begin, (wanted & kLogicContactBegin) != 0);
    copy(m_contactEnds, contacts.end, (wanted & kLogicContactEnd) != 0);
    copy(m_contactHits, contacts.hit, (wanted & kLogicContactHit) != 0);
    copy(m_jointEvents, m_world.jointEvents(), (wanted & kLogicJointEvents) != 0);
    for (const auto& e : m_sensorBegins)
    {
        callLogic("on_sensor_begin", [&](RoomLogic& l, RoomContext& room) { l.onSensorBegin(room, e); });
    }
    for (const auto& e : m_sensorEnds)
    {
        callLogic("on_sensor_end", [&](RoomLogic& l, RoomContext& room) { l.onSensorEnd(room, e); });
    }
    for (const auto& e : m_contactBegins)
    {
        callLogic("on_contact_begin", [&](RoomLogic& l, RoomContext& room) { l.onContactBegin(room, e); });
    }
    for (const auto& e : m_contactEnds)
    {
        callLogic("on_contact_end", [&](RoomLogic& l, RoomContext& room) { l.onContactEnd(room, e); });
    }
    for (const auto& e : m_contactHits)
    {
        callLogic("on_contact_hit", [&](RoomLogic& l, RoomContext& room) { l.onContactHit(room, e); });
    }
    for (const auto& e : m_jointEvents)
    {
        callLogic("on_joint_event", [&](RoomLogic& l, RoomContext& room) { l.onJointEvent(room, e); });
    }
}

// ---- Game states ------------------------------------------------------------------------------------------

void Room::sendGameStates(Client& client, double now)
{
    const auto due = [&](const StateSync& sync, std::uint32_t version)
    {
        return version != 0 && sync.acked < version &&
               (sync.sent != version || now - sync.sentTime >= m_config.gameStateResendSeconds);
    };
    for (const bool clientScope : {false, true})
    {
        StateSync& sync = clientScope ? client.clientSync : client.roomSync;
        const std::uint32_t version = clientScope ? client.stateVersion : m_roomStateVersion;
        if (!due(sync, version))
        {
            continue;
        }
        const std::vector<std::uint8_t>& data = clientScope ? client.state : m_roomState;
        const protocol::HeaderFields header = m_connections[client.replication.slot].acks.nextOutgoing();
        m_metrics.gameStatesResent += sync.sent == version ? 1 : 0;
        send(client.replication.slot,
             m_writer.gameState(header,
                                clientScope ? wire::GameStateScope::Client : wire::GameStateScope::Room,
                                version, data));
        ++m_metrics.gameStatesSent;
        sync.sent = version;
        sync.sentTime = now;
        client.stateSent[header.sequence % kStateRecordRing] = {header.sequence, true, clientScope, version};
    }
}

void Room::onStateAcked(Client& client, std::uint16_t sequence)
{
    StateRecord& record = client.stateSent[sequence % kStateRecordRing];
    if (!record.valid || record.sequence != sequence)
    {
        return;
    }
    record.valid = false;
    StateSync& sync = record.clientScope ? client.clientSync : client.roomSync;
    sync.acked = std::max(sync.acked, record.version);
}

} // namespace polytope::server

// polytope-server: a room's inputs: each client's queued by tick (bounded per client), applied to the World
// at their tick in the order they arrived.
#include "polytope/server/room.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace polytope::server
{
namespace wire = protocol::wire;

void Room::handleInputs(Client& session, const wire::ClientInput& message, double now)
{
    protocol::readInputs(message, m_inputScratch); // each already range-checked by decodePacket
    session.inputTokens =
        std::min(m_config.maxInputBurst,
                 session.inputTokens + (now - session.inputTokenTime) * m_config.maxInputsPerSecond);
    session.inputTokenTime = now;
    for (const protocol::InputCommand& input : m_inputScratch)
    {
        ++m_metrics.inputsReceived;
        if (!session.inputsSeen.record(input.sequence))
        {
            ++m_metrics.inputsDuplicate;
            continue;
        }
        if (session.inputTokens < 1.0)
        {
            ++m_metrics.inputsRateLimited;
            continue;
        }
        session.inputTokens -= 1.0;
        const bool spawnKind = input.kind == wire::InputKind::Spawn || input.kind == wire::InputKind::Remove;
        if ((spawnKind && !m_config.allowClientSpawn) ||
            (input.kind != wire::InputKind::Spawn &&
             !ownsBody(session, {input.bodyId, input.bodyGeneration})))
        {
            ++m_metrics.inputsNotOwned;
            spdlog::debug("refused input {} of client {}: {}", input.sequence, session.clientId,
                          spawnKind && !m_config.allowClientSpawn ? "spawning not allowed here"
                                                                  : "body not owned");
            continue;
        }
        if (input.tick > m_tick + static_cast<std::uint64_t>(m_config.maxInputLeadTicks) ||
            session.inputs.size() >= static_cast<std::size_t>(m_config.maxQueuedInputsPerClient))
        {
            ++m_metrics.inputsRefused;
            continue;
        }
        std::uint64_t tick = input.tick;
        if (tick <= m_tick)
        {
            ++m_metrics.inputsLate; // its tick already ran: the next one takes it
            tick = m_tick + 1;
        }
        const auto at = std::upper_bound(session.inputs.begin(), session.inputs.end(), tick,
                                         [](std::uint64_t t, const QueuedInput& q) { return t < q.tick; });
        session.inputs.insert(
            at, QueuedInput{tick, m_inputsQueued++, session.replication.slot, session.clientId, input});
    }
}

void Room::applyInputs(std::uint64_t tick)
{
    // Every client's inputs due now, in the order they arrived (ticks before this one only after a restore).
    m_dueInputs.clear();
    for (const ClientSlot slot : m_members)
    {
        std::vector<QueuedInput>& queue = m_clients[slot]->inputs;
        std::size_t due = 0;
        while (due < queue.size() && queue[due].tick <= tick)
        {
            m_dueInputs.push_back(queue[due++]);
        }
        queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(due));
    }
    std::sort(m_dueInputs.begin(), m_dueInputs.end(),
              [](const QueuedInput& a, const QueuedInput& b)
              { return a.tick != b.tick ? a.tick < b.tick : a.arrival < b.arrival; });
    for (const QueuedInput& queued : m_dueInputs)
    {
        const protocol::InputCommand& in = queued.input;
        const physics::BodyId id{in.bodyId, in.bodyGeneration};
        const physics::Vec3 v{in.vector[0], in.vector[1], in.vector[2]};
        physics::WorldStatus status = physics::WorldStatus::StaleBodyId;
        physics::BodyState body;
        Client* session = m_clients[queued.slot].get();
        if (in.kind == wire::InputKind::Spawn)
        {
            const protocol::PositionQuantization& q = m_config.quantization;
            const bool inside = v.x >= q.boundsMin[0] && v.x <= q.boundsMax[0] && v.y >= q.boundsMin[1] &&
                                v.y <= q.boundsMax[1] && v.z >= q.boundsMin[2] && v.z <= q.boundsMax[2];
            status = inside && spawnFor(*session, &v) ? physics::WorldStatus::Ok
                                                      : physics::WorldStatus::InvalidBodyDesc;
        }
        else if (!ownsBody(*session, id))
        {
            status = physics::WorldStatus::StaleBodyId; // removed since it was queued
        }
        else if (in.kind == wire::InputKind::Remove)
        {
            status = m_world.destroyBody(id);
            if (status == physics::WorldStatus::Ok)
            {
                ++m_metrics.bodiesRemoved;
                std::erase(session->owned, id);
            }
        }
        else if (m_world.getBody(id, body))
        {
            switch (in.kind)
            {
            case wire::InputKind::Force:
                status = m_world.applyCentralForce(id, v);
                break;
            case wire::InputKind::Impulse:
                status = m_world.applyImpulse(id, v, body.centerOfMass);
                break;
            case wire::InputKind::Torque:
                status = m_world.applyTorque(id, v);
                break;
            case wire::InputKind::TargetVelocity:
                status = body.type == physics::BodyType::Static
                             ? physics::WorldStatus::WrongBodyType
                             : m_world.setVelocity(id, v, body.angularVelocity);
                break;
            case wire::InputKind::Spawn:
            case wire::InputKind::Remove:
                break;
            }
        }
        ++(status == physics::WorldStatus::Ok ? m_metrics.inputsApplied : m_metrics.inputsFailed);
        if (m_inputObserver)
        {
            m_inputObserver(AppliedInput{queued.clientId, in, tick, status});
        }
    }
}

} // namespace polytope::server

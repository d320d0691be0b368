// Polytope client library, prediction: the predicted clock, inputs and stepping (see prediction.h for the
// design; prediction_bodies.cpp keeps the local World's bodies, prediction_reconcile.cpp corrects and
// smooths).
#include "polytope/client/prediction.h"

#include <algorithm>
#include <cmath>

namespace polytope::client
{

namespace
{
/// Clock samples kept (one per snapshot: about 4 s at 60 snapshots per second).
constexpr std::size_t kTransitSamples = 256;
} // namespace

Predictor::Predictor(const PredictionConfig& config) : m_config(config), m_world(config.world)
{
    m_history.resize(std::max<std::size_t>(m_config.historyTicks, 2));
    m_transits.resize(kTransitSamples);
    m_inputs.reserve(1024);
}

const PredictedBody* Predictor::body(std::uint32_t id) const
{
    for (const PredictedBody& b : m_view)
    {
        if (b.id == id)
        {
            return &b;
        }
    }
    return nullptr;
}

void Predictor::addSnapshot(const Client& client, const ReceivedSnapshot& snapshot)
{
    if (client.tickRateHz() <= 0 || !std::isfinite(snapshot.receiveTime) ||
        !std::isfinite(snapshot.serverTime) || (m_clockStarted && snapshot.tick <= m_lastSnapshotTick))
    {
        return; // the client hands snapshots out in order; anything else is ignored
    }
    m_tickRateHz = client.tickRateHz();
    m_tickSeconds = 1.0 / static_cast<double>(m_tickRateHz);
    const protocol::SessionParameters& session = client.session();
    m_snapshotVelocities =
        session.snapshotFormat == protocol::wire::SnapshotFormat::Structured && session.snapshotVelocities;
    addTransit(snapshot.receiveTime, snapshot.receiveTime - snapshot.serverTime);
    if (!m_clockStarted)
    {
        // Start the clock where it aims, with the World at that tick (nothing to step yet).
        m_clock = targetClock(client, snapshot.receiveTime);
        m_tick = static_cast<std::uint64_t>(std::max(0.0, std::floor(m_clock * m_tickRateHz)));
        m_lastNow = snapshot.receiveTime;
        m_clockStarted = true;
        ++m_stats.clockJumps;
    }
    m_lastSnapshotTick = snapshot.tick;
    syncBodies(client, snapshot);
    m_pendingSnapshot = true;
    m_pendingTick = snapshot.tick;
}

std::uint32_t Predictor::sendInput(Client& client, const protocol::InputCommand& input)
{
    if (!m_clockStarted)
    {
        ++m_stats.inputsRefused;
        return 0;
    }
    protocol::InputCommand command = input;
    command.tick = inputTick();
    const std::uint32_t sequence = client.sendInput(command);
    if (sequence == 0)
    {
        ++m_stats.inputsRefused;
        return 0;
    }
    ++m_stats.inputsSent;
    if (command.kind != protocol::wire::InputKind::Spawn && command.kind != protocol::wire::InputKind::Remove)
    {
        command.sequence = sequence;
        m_inputs.push_back(KeptInput{command.tick, command}); // ticks never decrease: stays sorted
    }
    return sequence;
}

void Predictor::update(const Client& client, double now)
{
    ++m_stats.updates;
    for (PredictedBody& b : m_view)
    {
        b.rawJump = {};
        b.rawJumpRotation = {};
    }
    if (!m_clockStarted || !std::isfinite(now))
    {
        return;
    }
    const double elapsed = std::max(0.0, now - m_lastNow);
    reconcile();
    advanceClock(client, now);
    readRaw();
    smooth(elapsed);
    publish();
}

void Predictor::addTransit(double receiveTime, double transit)
{
    m_transits[m_transitNext] = TransitSample{receiveTime, transit};
    m_transitNext = (m_transitNext + 1) % m_transits.size();
    m_transitCount = std::min(m_transitCount + 1, m_transits.size());
}

double Predictor::newestServerTime(double now) const
{
    // The fastest transit of the window (or the newest sample when all are older) stands for the clock offset
    // plus the shortest one-way delay: now - that is the newest server time that can have arrived by now.
    double fastest = 0.0;
    bool any = false;
    for (std::size_t i = 0; i < m_transitCount; ++i)
    {
        const TransitSample& s = m_transits[i];
        if (now - s.receiveTime <= m_config.clockWindowSeconds && (!any || s.transit < fastest))
        {
            fastest = s.transit;
            any = true;
        }
    }
    if (!any && m_transitCount > 0)
    {
        fastest = m_transits[(m_transitNext + m_transits.size() - 1) % m_transits.size()].transit;
    }
    return now - fastest;
}

double Predictor::targetClock(const Client& client, double now) const
{
    const double lead = client.rttSeconds() + m_config.safetyMarginSeconds +
                        m_config.marginRttVariations * client.rttVariationSeconds();
    return newestServerTime(now) + (std::isfinite(lead) ? std::max(0.0, lead) : 0.0);
}

void Predictor::advanceClock(const Client& client, double now)
{
    const double elapsed = std::max(0.0, now - m_lastNow);
    m_lastNow = now;
    const double target = targetClock(client, now);
    const double error = target - (m_clock + elapsed);
    if (error > m_config.clockSnapSeconds)
    {
        m_clock = target; // start-up or a long stall: jump forwards (never backwards)
        ++m_stats.clockJumps;
    }
    else
    {
        const double correction =
            m_config.clockCorrectionSeconds > 0.0 ? error / m_config.clockCorrectionSeconds : 0.0;
        const double rate = 1.0 + std::clamp(correction, -m_config.maxRateChange, m_config.maxRateChange);
        m_clock += elapsed * rate;
    }
    m_leadSeconds = m_clock - newestServerTime(now);
    const auto wanted = static_cast<std::uint64_t>(std::max(0.0, std::floor(m_clock * m_tickRateHz)));
    int stepped = 0;
    while (m_tick < wanted && stepped < m_config.maxTicksPerUpdate)
    {
        stepTick(m_tick + 1, false);
        ++stepped;
    }
    if (m_tick < wanted)
    {
        // A stall: skip the rest rather than spend frames catching up; older snapshots cannot compare.
        m_stats.ticksDropped += wanted - m_tick;
        m_tick = wanted;
        invalidateHistory();
    }
}

void Predictor::stepTick(std::uint64_t tick, bool again)
{
    applyInputs(tick);
    m_world.step(static_cast<float>(m_tickSeconds));
    m_tick = tick;
    physics::BodyState state;
    for (Tracked& t : m_tracked)
    {
        if (t.owned && !t.local.isNull() && m_world.getBody(t.local, state))
        {
            t.previous = t.current;
            t.current = state.transform;
        }
    }
    record(tick);
    ++(again ? m_stats.ticksResimulated : m_stats.ticksPredicted);
    if (!again)
    {
        // Inputs older than the history can never be replayed.
        const std::uint64_t keepFrom = tick > m_history.size() ? tick - m_history.size() : 0;
        const auto old = std::find_if(m_inputs.begin(), m_inputs.end(),
                                      [keepFrom](const KeptInput& k) { return k.tick >= keepFrom; });
        m_inputs.erase(m_inputs.begin(), old);
    }
}

void Predictor::applyInputs(std::uint64_t tick)
{
    // As the server's Room::applyInputs: in the order sent, each on its body as it is at this tick.
    const auto first = std::lower_bound(m_inputs.begin(), m_inputs.end(), tick,
                                        [](const KeptInput& k, std::uint64_t t) { return k.tick < t; });
    for (auto it = first; it != m_inputs.end() && it->tick == tick; ++it)
    {
        const protocol::InputCommand& in = it->input;
        const Tracked* t = findTracked(in.bodyId);
        physics::BodyState body;
        if (!t || !t->owned || t->generation != in.bodyGeneration || !m_world.getBody(t->local, body))
        {
            continue; // not a body predicted here (the server refuses it or applies it to a body we lack)
        }
        const physics::Vec3 v{in.vector[0], in.vector[1], in.vector[2]};
        switch (in.kind)
        {
        case protocol::wire::InputKind::Force:
            m_world.applyCentralForce(t->local, v);
            break;
        case protocol::wire::InputKind::Impulse:
            m_world.applyImpulse(t->local, v, body.centerOfMass);
            break;
        case protocol::wire::InputKind::Torque:
            m_world.applyTorque(t->local, v);
            break;
        case protocol::wire::InputKind::TargetVelocity:
            m_world.setVelocity(t->local, v, body.angularVelocity);
            break;
        case protocol::wire::InputKind::Spawn:
        case protocol::wire::InputKind::Remove:
            break;
        }
    }
}

void Predictor::record(std::uint64_t tick)
{
    TickRecord& r = m_history[tick % m_history.size()];
    r.tick = tick;
    r.valid = true;
    m_world.saveState(r.state);
    r.owned.clear();
    for (const Tracked& t : m_tracked)
    {
        if (t.owned && !t.local.isNull())
        {
            r.owned.push_back(OwnedPose{t.id, t.current});
        }
    }
}

void Predictor::invalidateHistory()
{
    m_historyFloor = m_tick;
    record(m_tick);
}

Predictor::TickRecord* Predictor::recordOf(std::uint64_t tick)
{
    TickRecord& r = m_history[tick % m_history.size()];
    return r.valid && r.tick == tick && tick >= m_historyFloor && tick <= m_tick ? &r : nullptr;
}

} // namespace polytope::client

// Polytope client library, prediction: reconciliation with the server's snapshots and the smoothing of the
// corrections (see prediction.h). The offset of each owned body is a critically damped spring towards zero,
// stepped in closed form, so that any frame time gives the same curve:
//   x(t) = (x0 + (v0 + w x0) t) e^(-w t),   v(t) = (v0 - w (v0 + w x0) t) e^(-w t),   w = 1 / time constant.
// Orientation offsets use the same spring on a rotation vector (drawn = rotation(turn) * raw).
#include "polytope/client/prediction.h"

#include <algorithm>
#include <cmath>

namespace polytope::client
{

namespace
{
physics::Quat quatFromRotationVector(const physics::Vec3& r)
{
    const float angle = physics::length(r);
    if (!(angle > 1e-7f))
    {
        return physics::normalize(physics::Quat{0.5f * r.x, 0.5f * r.y, 0.5f * r.z, 1.0f});
    }
    return physics::quatFromAxisAngle(r / angle, angle);
}

/// The rotation vector (axis times angle in [0, pi]) of unit quaternion q.
physics::Vec3 rotationVectorOf(physics::Quat q)
{
    if (q.w < 0.0f)
    {
        q = {-q.x, -q.y, -q.z, -q.w};
    }
    const physics::Vec3 v{q.x, q.y, q.z};
    const float s = physics::length(v);
    if (!(s > 1e-7f))
    {
        return v * 2.0f;
    }
    return v * (2.0f * std::atan2(s, q.w) / s);
}

/// The angle (radians) of the rotation taking b to a.
float angleBetween(const physics::Quat& a, const physics::Quat& b)
{
    return physics::length(rotationVectorOf(a * physics::conjugate(b)));
}

/// One closed-form step of the critically damped spring (see the file comment); omega <= 0: straight to 0.
void dampTowardsZero(physics::Vec3& x, physics::Vec3& v, double omega, double seconds)
{
    if (!(omega > 0.0))
    {
        x = {};
        v = {};
        return;
    }
    const auto w = static_cast<float>(omega);
    const auto t = static_cast<float>(seconds);
    const float decay = std::exp(-w * t);
    const physics::Vec3 b = v + x * w;
    x = (x + b * t) * decay;
    v = (v - b * (w * t)) * decay;
}

physics::Transform interpolate(const physics::Transform& a, const physics::Transform& b, float alpha)
{
    physics::Transform t;
    t.p = a.p + (b.p - a.p) * alpha;
    const float sign = physics::dot(a.q, b.q) < 0.0f ? -1.0f : 1.0f;
    t.q = physics::normalize(
        physics::Quat{a.q.x + (sign * b.q.x - a.q.x) * alpha, a.q.y + (sign * b.q.y - a.q.y) * alpha,
                      a.q.z + (sign * b.q.z - a.q.z) * alpha, a.q.w + (sign * b.q.w - a.q.w) * alpha});
    return t;
}
} // namespace

void Predictor::reconcile()
{
    if (!m_pendingSnapshot)
    {
        return;
    }
    m_pendingSnapshot = false;
    const std::uint64_t tick = m_pendingTick;
    TickRecord* record = recordOf(tick);
    bool snap = false;
    if (tick > m_tick)
    {
        // The server is ahead of the prediction (the clock has not caught up yet): restart from its poses.
        m_tick = tick;
        m_clock = std::max(m_clock, static_cast<double>(tick) * m_tickSeconds);
        ++m_stats.clockJumps;
        invalidateHistory();
        record = recordOf(tick);
        snap = true;
    }
    if (!record)
    {
        ++m_stats.snapshotsOutsideHistory;
    }
    else if (compare(*record, snap) || snap)
    {
        correct(tick, snap);
    }
    for (Tracked& t : m_tracked)
    {
        t.inSnapshot = false;
    }
}

bool Predictor::compare(const TickRecord& record, bool& snap)
{
    ++m_stats.snapshotsCompared;
    bool beyond = false;
    float largest = 0.0f;
    for (Tracked& t : m_tracked)
    {
        if (!t.owned || !t.inSnapshot || t.local.isNull())
        {
            continue;
        }
        const auto predicted = std::find_if(record.owned.begin(), record.owned.end(),
                                            [&](const OwnedPose& o) { return o.id == t.id; });
        if (predicted == record.owned.end())
        {
            continue; // created after that tick
        }
        const float meters = physics::distance(t.server.p, predicted->pose.p);
        const float radians = angleBetween(t.server.q, predicted->pose.q);
        largest = std::max(largest, meters);
        m_stats.largestRawErrorMeters = std::max(m_stats.largestRawErrorMeters, meters);
        m_stats.largestRawErrorRadians = std::max(m_stats.largestRawErrorRadians, radians);
        beyond |= meters > m_config.toleranceMeters || radians > m_config.toleranceRadians || t.snapNext;
        snap |= meters > m_config.snapDistanceMeters || t.snapNext;
    }
    m_stats.lastRawErrorMeters = largest;
    return beyond;
}

void Predictor::correct(std::uint64_t tick, bool snap)
{
    m_beforeScratch.clear();
    for (const PredictedBody& b : m_view)
    {
        m_beforeScratch.push_back(b.raw);
    }
    if (!resimulate(tick))
    {
        return;
    }
    ++m_stats.corrections;
    m_stats.snaps += snap ? 1 : 0;
    for (Tracked& t : m_tracked)
    {
        if (!t.owned || t.local.isNull() || t.view >= m_view.size())
        {
            continue;
        }
        const physics::Transform& before = m_beforeScratch[t.view];
        const physics::Transform after = rawPose(t);
        PredictedBody& view = m_view[t.view];
        view.rawJump = view.rawJump + (after.p - before.p);
        view.rawJumpRotation =
            view.rawJumpRotation + rotationVectorOf(after.q * physics::conjugate(before.q));
        view.raw = after;
        if (snap)
        {
            t.offset = {};
            t.offsetVelocity = {};
            t.turn = {};
            t.turnVelocity = {};
            t.snapNext = false;
            continue;
        }
        // The offset takes up the jump: drawn = raw + offset stays where it was.
        t.offset = t.offset + (before.p - after.p);
        t.turn = rotationVectorOf(quatFromRotationVector(t.turn) * before.q * physics::conjugate(after.q));
    }
}

bool Predictor::resimulate(std::uint64_t from)
{
    const TickRecord* saved = recordOf(from);
    if (!saved)
    {
        return false;
    }
    if (m_world.restoreState(saved->state) != physics::RestoreStatus::Ok)
    {
        ++m_stats.restoreFailures;
        invalidateHistory(); // the World is unchanged; start comparing from now
        return false;
    }
    const std::uint64_t present = m_tick;
    const TickRecord* before = recordOf(from - 1);
    for (Tracked& t : m_tracked)
    {
        if (!t.owned || t.local.isNull())
        {
            continue;
        }
        if (t.inSnapshot)
        {
            m_world.setTransform(t.local, t.server);
            if (m_snapshotVelocities)
            {
                const auto& v = t.velocity;
                m_world.setVelocity(t.local, {v.linear[0], v.linear[1], v.linear[2]},
                                    {v.angular[0], v.angular[1], v.angular[2]});
            }
        }
        physics::BodyState state;
        if (m_world.getBody(t.local, state))
        {
            t.current = state.transform;
        }
        t.previous = t.current;
        if (before)
        {
            for (const OwnedPose& o : before->owned)
            {
                t.previous = o.id == t.id ? o.pose : t.previous;
            }
        }
    }
    placeOthers();
    m_tick = from;
    record(from);
    while (m_tick < present)
    {
        stepTick(m_tick + 1, true);
    }
    return true;
}

physics::Transform Predictor::rawPose(const Tracked& tracked) const
{
    return interpolate(tracked.previous, tracked.current, m_alpha);
}

void Predictor::readRaw()
{
    const double fraction = m_clock * static_cast<double>(m_tickRateHz) - static_cast<double>(m_tick);
    m_alpha = static_cast<float>(std::clamp(fraction, 0.0, 1.0));
}

void Predictor::smooth(double seconds)
{
    const double tau = m_config.smoothingTimeConstantSeconds;
    const double omega = tau > 0.0 ? 1.0 / tau : 0.0;
    for (Tracked& t : m_tracked)
    {
        if (!t.owned || t.local.isNull() || t.view >= m_view.size())
        {
            continue;
        }
        const physics::Vec3 offsetBefore = t.offset;
        const physics::Quat turnBefore = quatFromRotationVector(t.turn);
        dampTowardsZero(t.offset, t.offsetVelocity, omega, seconds);
        dampTowardsZero(t.turn, t.turnVelocity, omega, seconds);
        if (!physics::isFinite(t.offset) || !physics::isFinite(t.offsetVelocity) ||
            !physics::isFinite(t.turn) || !physics::isFinite(t.turnVelocity))
        {
            t.offset = t.offsetVelocity = t.turn = t.turnVelocity = {};
        }
        PredictedBody& view = m_view[t.view];
        view.visibleCorrectionMeters = physics::distance(t.offset, offsetBefore);
        view.visibleCorrectionRadians = angleBetween(quatFromRotationVector(t.turn), turnBefore);
    }
}

void Predictor::publish()
{
    for (Tracked& t : m_tracked)
    {
        if (!t.owned || t.local.isNull() || t.view >= m_view.size())
        {
            continue;
        }
        PredictedBody& view = m_view[t.view];
        view.raw = rawPose(t);
        view.offset = t.offset;
        view.drawn.p = view.raw.p + t.offset;
        view.drawn.q = physics::normalize(quatFromRotationVector(t.turn) * view.raw.q);
        m_stats.largestVisibleCorrectionMeters =
            std::max(m_stats.largestVisibleCorrectionMeters, view.visibleCorrectionMeters);
        m_stats.largestVisibleCorrectionRadians =
            std::max(m_stats.largestVisibleCorrectionRadians, view.visibleCorrectionRadians);
    }
}

} // namespace polytope::client

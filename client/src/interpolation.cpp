#include "polytope/client/interpolation.h"

#include <algorithm>
#include <cmath>

namespace polytope::client
{

const char* sampleKindName(SampleKind kind)
{
    switch (kind)
    {
    case SampleKind::Empty:
        return "empty";
    case SampleKind::Interpolated:
        return "interpolated";
    case SampleKind::Extrapolated:
        return "extrapolated";
    case SampleKind::Held:
        return "held";
    }
    return "unknown";
}

std::array<float, 3> lerpPosition(const std::array<float, 3>& a, const std::array<float, 3>& b, double t)
{
    std::array<float, 3> out{};
    for (int i = 0; i < 3; ++i)
    {
        const double ai = a[static_cast<std::size_t>(i)];
        const double bi = b[static_cast<std::size_t>(i)];
        out[static_cast<std::size_t>(i)] = static_cast<float>(ai + (bi - ai) * t);
    }
    return out;
}

namespace
{

using Quat = std::array<double, 4>;

Quat toDouble(const std::array<float, 4>& q)
{
    return {q[0], q[1], q[2], q[3]};
}

std::array<float, 4> normalizedFloat(const Quat& q)
{
    const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(n > 1e-12))
    {
        return {0.0f, 0.0f, 0.0f, 1.0f};
    }
    return {static_cast<float>(q[0] / n), static_cast<float>(q[1] / n), static_cast<float>(q[2] / n),
            static_cast<float>(q[3] / n)};
}

double dot(const Quat& a, const Quat& b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
}

/// Hamilton product a * b, (x, y, z, w) order.
Quat multiply(const Quat& a, const Quat& b)
{
    return {a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
            a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
            a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
            a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2]};
}

bool sameBody(const SnapshotBody& a, const SnapshotBody& b)
{
    return a.id == b.id && a.generation == b.generation;
}

/// Bodies of `a` (sorted by id) with the matching body of `b` where there is one, through two cursors.
template <typename Function>
void forEachPair(const std::vector<SnapshotBody>& a, const std::vector<SnapshotBody>& b, Function&& function)
{
    std::size_t j = 0;
    for (const SnapshotBody& body : a)
    {
        while (j < b.size() && b[j].id < body.id)
        {
            ++j;
        }
        const SnapshotBody* other = (j < b.size() && sameBody(b[j], body)) ? &b[j] : nullptr;
        function(body, other);
    }
}

} // namespace

std::array<float, 4> nlerpOrientation(const std::array<float, 4>& a, const std::array<float, 4>& b, double t)
{
    const Quat qa = toDouble(a);
    Quat qb = toDouble(b);
    if (dot(qa, qb) < 0.0)
    {
        for (double& c : qb)
        {
            c = -c;
        }
    }
    Quat q{};
    for (std::size_t i = 0; i < 4; ++i)
    {
        q[i] = qa[i] + (qb[i] - qa[i]) * t;
    }
    return normalizedFloat(q);
}

std::array<float, 4> extrapolateOrientation(const std::array<float, 4>& a, const std::array<float, 4>& b,
                                            double t)
{
    const Quat qa = toDouble(a);
    Quat qb = toDouble(b);
    if (dot(qa, qb) < 0.0)
    {
        for (double& c : qb)
        {
            c = -c;
        }
    }
    // delta = b * conj(a): the world-frame rotation carrying a onto b; apply its angle scaled by t after b.
    const Quat conjA{-qa[0], -qa[1], -qa[2], qa[3]};
    Quat delta = multiply(qb, conjA);
    if (delta[3] < 0.0)
    {
        for (double& c : delta)
        {
            c = -c;
        }
    }
    const double sinHalf = std::sqrt(delta[0] * delta[0] + delta[1] * delta[1] + delta[2] * delta[2]);
    if (!(sinHalf > 1e-9))
    {
        return normalizedFloat(qb);
    }
    const double halfAngle = std::atan2(sinHalf, std::clamp(delta[3], -1.0, 1.0)) * t;
    const double s = std::sin(halfAngle) / sinHalf;
    const Quat step{delta[0] * s, delta[1] * s, delta[2] * s, std::cos(halfAngle)};
    return normalizedFloat(multiply(step, qb));
}

InterpolationBuffer::InterpolationBuffer(const InterpolationConfig& config) : m_config(config)
{
    if (m_config.snapshotIntervalSeconds > 0.0)
    {
        m_interval = m_config.snapshotIntervalSeconds;
    }
}

void InterpolationBuffer::reset()
{
    m_snapshots.clear();
    m_arrivals.clear();
    m_haveClock = false;
    m_haveRender = false;
    m_renderTime = 0.0;
    m_lastLocal = 0.0;
}

void InterpolationBuffer::add(const ReceivedSnapshot& snapshot)
{
    ReceivedSnapshot copy = snapshot;
    insert(std::move(copy));
}

void InterpolationBuffer::add(ReceivedSnapshot&& snapshot)
{
    insert(std::move(snapshot));
}

void InterpolationBuffer::insert(ReceivedSnapshot&& snapshot)
{
    if (!std::isfinite(snapshot.serverTime) || !std::isfinite(snapshot.receiveTime) ||
        std::any_of(m_snapshots.begin(), m_snapshots.end(),
                    [&](const ReceivedSnapshot& s) { return s.tick == snapshot.tick; }))
    {
        ++m_stats.snapshotsIgnored;
        return;
    }
    ++m_stats.snapshotsAdded;
    if (m_haveRender && snapshot.serverTime < m_renderTime)
    {
        ++m_stats.snapshotsLate;
    }
    m_arrivals.push_back(
        {snapshot.receiveTime, snapshot.receiveTime - snapshot.serverTime, snapshot.serverTime});
    const auto at =
        std::upper_bound(m_snapshots.begin(), m_snapshots.end(), snapshot.serverTime,
                         [](double time, const ReceivedSnapshot& s) { return time < s.serverTime; });
    m_snapshots.insert(at, std::move(snapshot));
    while (m_snapshots.size() > std::max<std::size_t>(m_config.maxSnapshots, 2))
    {
        m_snapshots.pop_front();
    }
    updateClock();
}

void InterpolationBuffer::updateClock()
{
    double newestArrival = m_arrivals.front().receiveTime;
    for (const Arrival& a : m_arrivals)
    {
        newestArrival = std::max(newestArrival, a.receiveTime);
    }
    while (m_arrivals.size() > 1 &&
           m_arrivals.front().receiveTime < newestArrival - m_config.clockWindowSeconds)
    {
        m_arrivals.pop_front();
    }
    double offset = m_arrivals.front().transit;
    for (const Arrival& a : m_arrivals)
    {
        offset = std::min(offset, a.transit);
    }
    double slowest = offset;
    for (const Arrival& a : m_arrivals)
    {
        slowest = std::max(slowest, a.transit);
    }
    m_offset = offset;
    m_jitter = 0.5 * (slowest - offset);
    m_haveClock = true;

    if (m_config.snapshotIntervalSeconds > 0.0)
    {
        m_interval = m_config.snapshotIntervalSeconds;
    }
    else if (m_snapshots.size() >= 2)
    {
        double smallest = 0.0;
        for (std::size_t i = 1; i < m_snapshots.size(); ++i)
        {
            const double gap = m_snapshots[i].serverTime - m_snapshots[i - 1].serverTime;
            if (gap > 0.0 && (smallest == 0.0 || gap < smallest))
            {
                smallest = gap;
            }
        }
        if (smallest > 0.0)
        {
            m_interval = smallest;
        }
    }
    m_stats.offsetSeconds = m_offset;
    m_stats.jitterSeconds = m_jitter;
    m_stats.intervalSeconds = m_interval;
    m_stats.targetDelaySeconds =
        std::clamp(m_config.intervalMultiple * m_interval + m_jitter, m_config.minDelaySeconds,
                   std::max(m_config.minDelaySeconds, m_config.maxDelaySeconds));
}

double InterpolationBuffer::targetRenderTime(double localNow) const
{
    return localNow - m_offset - m_stats.targetDelaySeconds;
}

double InterpolationBuffer::delayPercentile(double p) const
{
    if (m_delays.empty())
    {
        return 0.0;
    }
    std::vector<float> sorted(m_delays.begin(), m_delays.end());
    std::sort(sorted.begin(), sorted.end());
    const double clamped = std::clamp(p, 0.0, 1.0);
    // Nearest rank: the smallest value with at least p of the values at or below it.
    std::size_t rank = static_cast<std::size_t>(std::ceil(clamped * static_cast<double>(sorted.size())));
    rank = std::clamp<std::size_t>(rank, 1, sorted.size());
    return sorted[rank - 1];
}

SampleResult InterpolationBuffer::sample(double localNow, std::vector<SnapshotBody>& out)
{
    out.clear();
    SampleResult result;
    if (m_snapshots.empty() || !m_haveClock || !std::isfinite(localNow))
    {
        return result;
    }

    // Advance the render clock.
    const double target = targetRenderTime(localNow);
    double rate = 1.0;
    if (!m_haveRender)
    {
        m_renderTime = target;
        m_haveRender = true;
        m_lastLocal = localNow;
        ++m_stats.renderClockSnaps;
    }
    else
    {
        const double elapsed = std::max(0.0, localNow - m_lastLocal);
        const double advanced = m_renderTime + elapsed;
        const double error = target - advanced;
        if (error > m_config.snapSeconds)
        {
            m_renderTime = target;
            ++m_stats.renderClockSnaps;
        }
        else
        {
            const double correction =
                m_config.correctionSeconds > 0.0 ? error / m_config.correctionSeconds : 0.0;
            rate = 1.0 + std::clamp(correction, -m_config.maxRateChange, m_config.maxRateChange);
            m_renderTime += elapsed * std::max(0.0, rate);
        }
        m_lastLocal = std::max(m_lastLocal, localNow);
    }
    const double render = m_renderTime;
    result.renderTime = render;
    result.delaySeconds = (localNow - m_offset) - render;

    // The last snapshot at or before render time.
    const auto after =
        std::upper_bound(m_snapshots.begin(), m_snapshots.end(), render,
                         [](double time, const ReceivedSnapshot& s) { return time < s.serverTime; });
    std::size_t pruneBefore = 0;
    if (after == m_snapshots.begin())
    {
        const ReceivedSnapshot& oldest = m_snapshots.front();
        result.kind = SampleKind::Held;
        result.fromTick = result.toTick = oldest.tick;
        out = oldest.bodies;
    }
    else if (after == m_snapshots.end())
    {
        const std::size_t newestIndex = m_snapshots.size() - 1;
        const ReceivedSnapshot& newest = m_snapshots[newestIndex];
        result.fromTick = result.toTick = newest.tick;
        const double past = render - newest.serverTime;
        if (m_snapshots.size() < 2)
        {
            result.kind = SampleKind::Held;
            out = newest.bodies;
        }
        else
        {
            const ReceivedSnapshot& previous = m_snapshots[newestIndex - 1];
            const double span = newest.serverTime - previous.serverTime;
            const double ahead = std::min(past, m_config.maxExtrapolationSeconds);
            result.kind = past <= 0.0                                ? SampleKind::Interpolated
                          : past <= m_config.maxExtrapolationSeconds ? SampleKind::Extrapolated
                                                                     : SampleKind::Held;
            result.alpha = ahead;
            const double t = span > 0.0 ? ahead / span : 0.0;
            // Extrapolate the bodies of the newest snapshot; those new in it have no velocity and are held.
            out.reserve(newest.bodies.size());
            std::size_t j = 0;
            for (const SnapshotBody& body : newest.bodies)
            {
                while (j < previous.bodies.size() && previous.bodies[j].id < body.id)
                {
                    ++j;
                }
                SnapshotBody shown = body;
                if (t > 0.0 && j < previous.bodies.size() && sameBody(previous.bodies[j], body))
                {
                    const SnapshotBody& before = previous.bodies[j];
                    shown.position = lerpPosition(before.position, body.position, 1.0 + t);
                    shown.orientation = extrapolateOrientation(before.orientation, body.orientation, t);
                }
                out.push_back(shown);
            }
            pruneBefore = newestIndex - 1;
        }
    }
    else
    {
        const std::size_t toIndex = static_cast<std::size_t>(after - m_snapshots.begin());
        const ReceivedSnapshot& a = m_snapshots[toIndex - 1];
        const ReceivedSnapshot& b = m_snapshots[toIndex];
        const double span = b.serverTime - a.serverTime;
        const double alpha = span > 0.0 ? std::clamp((render - a.serverTime) / span, 0.0, 1.0) : 0.0;
        result.kind = SampleKind::Interpolated;
        result.fromTick = a.tick;
        result.toTick = b.tick;
        result.alpha = alpha;
        out.reserve(a.bodies.size());
        forEachPair(a.bodies, b.bodies,
                    [&](const SnapshotBody& body, const SnapshotBody* next)
                    {
                        SnapshotBody shown = body;
                        if (next != nullptr)
                        {
                            shown.position = lerpPosition(body.position, next->position, alpha);
                            shown.orientation = nlerpOrientation(body.orientation, next->orientation, alpha);
                            shown.atRest = body.atRest && next->atRest;
                        }
                        out.push_back(shown);
                    });
        pruneBefore = toIndex >= 2 ? toIndex - 2 : 0; // keep one before `a` for extrapolation
    }
    for (std::size_t i = 0; i < pruneBefore; ++i)
    {
        m_snapshots.pop_front();
    }

    ++m_stats.framesSampled;
    switch (result.kind)
    {
    case SampleKind::Interpolated:
        ++m_stats.framesInterpolated;
        break;
    case SampleKind::Extrapolated:
        ++m_stats.framesExtrapolated;
        break;
    default:
        ++m_stats.framesHeld;
        break;
    }
    m_stats.currentDelaySeconds = result.delaySeconds;
    m_stats.playbackRate = rate;
    m_delays.push_back(static_cast<float>(result.delaySeconds));
    while (m_delays.size() > std::max<std::size_t>(m_config.delayHistoryFrames, 1))
    {
        m_delays.pop_front();
    }
    return result;
}

ViewTime viewOf(const SampleResult& sample)
{
    if (sample.kind == SampleKind::Interpolated)
    {
        return {sample.fromTick, sample.toTick, static_cast<float>(std::clamp(sample.alpha, 0.0, 1.0))};
    }
    return {sample.fromTick, sample.fromTick, 0.0f};
}

} // namespace polytope::client

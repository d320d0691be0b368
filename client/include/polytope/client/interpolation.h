// Polytope client library: the snapshot interpolation buffer.
//
// Rationale (after Fiedler, "Snapshot Interpolation", gafferongames.com, 2014). Snapshots arrive late, out of
// step and some never; the client shows the world a little in the past so that there is (almost) always a
// snapshot on each side of the time shown, and interpolates between the two.
//
// The rule, precisely. For every snapshot added, transit = receiveTime - serverTime (local seconds minus
// server seconds: the clock offset plus this snapshot's delay). Over the last clockWindowSeconds of arrivals:
//   offset   = min(transit)                  the fastest delivery seen: local time of server time s is s +
//   offset jitter   = (max(transit) - min(transit)) / 2    the +- amplitude of the delivery time ("100 ms +-
//   30 ms") interval = snapshotIntervalSeconds       (or, when that is 0, the smallest server-time step seen)
//   newest(t) = t - offset                   the newest server time that can have arrived by local time t
//   targetDelay = intervalMultiple * interval + jitter, clamped to [minDelaySeconds, maxDelaySeconds]
//   target(t)   = newest(t) - targetDelay
// The render clock does not jump to target(t): each sample advances it by the local time elapsed times a
// playback rate 1 + clamp((target - advanced) / correctionSeconds, -maxRateChange, +maxRateChange), so it
// moves continuously and never backwards, converging on the target by gently speeding up or slowing down.
// Only when it is more than snapSeconds behind the target (start, or after a long outage) does it jump, and
// then only forwards. The delay reported for a frame is newest(t) - renderTime.
// The half range rather than a mean deviation: the Client hands out a snapshot only when it is newer than
// every one before it, so the late ones it drops would bias a mean towards the fast ones; the extremes of
// the window are not biased that way. One slow delivery raises the delay for clockWindowSeconds, and the
// render clock then drifts back at most maxRateChange.
//
// Sampling at render time r: with snapshots a, b such that a.serverTime <= r < b.serverTime, every body of a
// is shown: positions lerped, orientations nlerped the short way, when b holds the same body (same id and
// generation); otherwise (destroyed by b, or its id reused) at a's pose. A body only in b is not shown yet:
// nothing is interpolated across a creation. Past the newest snapshot n (with p the one before it) poses are
// extrapolated at the velocity between p and n for at most maxExtrapolationSeconds, then held where that
// left them (so the pose stays continuous). Before the oldest snapshot kept, or with only one, it is held.
#pragma once

#include "polytope/client/client.h"

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

namespace polytope::client
{

struct InterpolationConfig
{
    /// Nominal seconds between snapshots (1 / snapshot rate). 0: use the smallest server-time step seen.
    double snapshotIntervalSeconds = 0.0;
    double intervalMultiple = 3.0; ///< snapshot intervals of delay, before jitter
    double minDelaySeconds = 0.0;  ///< the target delay is clamped to [min, max]
    double maxDelaySeconds = 1.0;
    double clockWindowSeconds = 2.0; ///< arrivals (local seconds) over which offset and jitter are taken
    double maxExtrapolationSeconds = 0.25; ///< past the newest snapshot, then held
    double correctionSeconds = 0.5;        ///< a render-clock error is corrected at error / this per second
    double maxRateChange = 0.1;            ///< playback rate stays within 1 +- this (0.1: 90% .. 110%)
    double snapSeconds = 0.5;              ///< the render clock jumps forward when this far behind the target
    std::size_t maxSnapshots = 1024;       ///< snapshots kept at most (the oldest go first)
    std::size_t delayHistoryFrames = 65536; ///< delays of the last this many frames are kept for percentiles
};

/// How a frame's poses were obtained.
enum class SampleKind : std::uint8_t
{
    Empty = 0,    ///< no snapshot yet; nothing written
    Interpolated, ///< between two snapshots around render time
    Extrapolated, ///< past the newest snapshot, by at most maxExtrapolationSeconds
    Held, ///< a snapshot's pose held: before the oldest, only one snapshot, or past the extrapolation cap
};

const char* sampleKindName(SampleKind kind);

/// What sample() did.
struct SampleResult
{
    SampleKind kind = SampleKind::Empty;
    double renderTime = 0.0;    ///< server seconds shown
    double delaySeconds = 0.0;  ///< newest(t) - renderTime
    std::uint64_t fromTick = 0; ///< snapshot at or before render time (the held or extrapolated-from one)
    std::uint64_t toTick = 0;   ///< snapshot after render time (= fromTick when not interpolating)
    double alpha = 0.0; ///< interpolation weight of toTick in [0, 1); extrapolation: seconds past newest
};

struct InterpolationStats
{
    std::uint64_t snapshotsAdded = 0;
    std::uint64_t snapshotsIgnored = 0; ///< duplicates (same tick) or not finite times
    std::uint64_t snapshotsLate = 0;    ///< arrived older than the render time already shown
    std::uint64_t framesSampled = 0;    ///< sample() calls that wrote poses
    std::uint64_t framesInterpolated = 0;
    std::uint64_t framesExtrapolated = 0;
    std::uint64_t framesHeld = 0;
    std::uint64_t renderClockSnaps = 0; ///< forward jumps of the render clock (the first sample included)
    double currentDelaySeconds = 0.0;   ///< of the last frame
    double targetDelaySeconds = 0.0;
    double jitterSeconds = 0.0;
    double offsetSeconds = 0.0;   ///< local minus server time, fastest path
    double intervalSeconds = 0.0; ///< snapshot interval in use
    double playbackRate = 1.0;    ///< of the last frame
};

class InterpolationBuffer
{
  public:
    explicit InterpolationBuffer(const InterpolationConfig& config = {});

    /// Adds a complete snapshot (bodies sorted by id, as the Client gives them). Snapshots may come in any
    /// order; a second one of the same tick is ignored.
    void add(const ReceivedSnapshot& snapshot);
    void add(ReceivedSnapshot&& snapshot);

    /// Advances the render clock to local time `localNow` (seconds, the clock of receiveTime; calls should
    /// not go backwards, a backwards call does not move the render clock) and writes the bodies' poses at
    /// render time into `out` (cleared first; sorted by id).
    SampleResult sample(double localNow, std::vector<SnapshotBody>& out);

    /// Forgets every snapshot and the clock estimates; stats are kept.
    void reset();

    const InterpolationStats& stats() const { return m_stats; }
    const InterpolationConfig& config() const { return m_config; }
    std::size_t size() const { return m_snapshots.size(); }
    /// Snapshots kept, oldest first by server time.
    const std::deque<ReceivedSnapshot>& snapshots() const { return m_snapshots; }
    /// The delay of each of the last delayHistoryFrames frames (seconds), oldest first.
    const std::deque<float>& delayHistory() const { return m_delays; }
    /// The p-quantile (p in [0, 1]) of delayHistory(), by nearest rank; 0 when empty.
    double delayPercentile(double p) const;

  private:
    void insert(ReceivedSnapshot&& snapshot);
    void updateClock();
    double targetRenderTime(double localNow) const;

    InterpolationConfig m_config;
    std::deque<ReceivedSnapshot> m_snapshots; ///< by server time
    struct Arrival
    {
        double receiveTime;
        double transit;
        double serverTime;
    };
    std::deque<Arrival> m_arrivals; ///< by arrival order
    double m_offset = 0.0;
    double m_jitter = 0.0;
    double m_interval = 0.05;
    bool m_haveClock = false;
    bool m_haveRender = false;
    double m_renderTime = 0.0;
    double m_lastLocal = 0.0;
    std::deque<float> m_delays;
    InterpolationStats m_stats;
};

/// What a frame showed, for a game message's lag compensation (Client::sendGameMessage): between fromTick
/// and toTick at alpha when interpolating; a held or extrapolated frame names the snapshot it started from.
ViewTime viewOf(const SampleResult& sample);

/// Pose helpers (exposed for tests and the viewer).
std::array<float, 3> lerpPosition(const std::array<float, 3>& a, const std::array<float, 3>& b, double t);
/// Normalized lerp of unit quaternions (x, y, z, w) taking the short way (b negated when a.b < 0).
std::array<float, 4> nlerpOrientation(const std::array<float, 4>& a, const std::array<float, 4>& b, double t);
/// The rotation from a to b (short way), applied `t` times after b (t >= 0): constant angular velocity.
std::array<float, 4> extrapolateOrientation(const std::array<float, 4>& a, const std::array<float, 4>& b,
                                            double t);

} // namespace polytope::client

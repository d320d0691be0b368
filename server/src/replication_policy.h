// polytope-server (internal): the numbers of the replication policy, shared by replication.cpp (snapshots,
// the catalogue) and replication_budget.cpp (the bandwidth budget and priority accumulator).
#pragma once

#include "polytope/protocol/snapshot_codec.h"

#include <cstdint>

namespace polytope::server::replication_policy
{

/// Initial estimate of what one changed body costs in a snapshot (bytes), before it is measured.
constexpr double kInitialBytesPerChangedBody = 8.0;
/// How fast that estimate follows the measurement: new = (1 - k) old + k measured. 0.3 settles within a
/// few snapshots without following every slice's noise.
constexpr double kBytesPerBodySmoothing = 0.3;
/// Rough coded size of a snapshot's fixed parts (slice headers, envelopes), bytes.
constexpr double kSnapshotOverheadBytes = 80.0;
/// Frames of its own kept per budgeted client: baselines older than this many ticks are not used (64
/// ticks is about a second at 60 Hz, longer than an acknowledgement takes on any usable link).
constexpr std::uint32_t kBudgetHistoryTicks = 64;
// How much a changed body matters to a client each snapshot it waits (Fiedler's priority accumulator adds
// it up): the client's own bodies go first (it steers them), then bodies it has never seen (they pop into
// view), then moving ones, then ones coming to rest (their last moves matter least).
constexpr float kPriorityOwned = 1000.0f;
constexpr float kPriorityCreated = 100.0f;
constexpr float kPriorityMoving = 10.0f;
constexpr float kPriorityResting = 2.0f;
/// A body counts as at rest for the snapshot's rest flag below these squared speeds (m^2/s^2, rad^2/s^2).
constexpr float kRestSpeedSquared = 1e-6f;

inline float snapshotPriority(const protocol::QuantizedBody& body, bool owned, bool created)
{
    if (owned)
    {
        return kPriorityOwned;
    }
    if (created)
    {
        return kPriorityCreated;
    }
    return body.atRest ? kPriorityResting : kPriorityMoving;
}

} // namespace polytope::server::replication_policy

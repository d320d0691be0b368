// polytope-server: the bandwidth budget of a client's snapshots (RoomConfig::maxClientKbps): a token bucket,
// and Fiedler's priority accumulator choosing which changed bodies fit; deferred bodies keep the state the
// client has, so each budgeted client has frames of its own (replication.h).
#include "polytope/server/replication.h"

#include "replication_policy.h"

#include <algorithm>

namespace polytope::server
{
using namespace replication_policy;

bool Replicator::composeBudgeted(ClientReplication& client, const protocol::SnapshotFrame& current,
                                 const protocol::SnapshotFrame* baseline)
{
    std::vector<protocol::QuantizedBody>& out = client.composite;
    out.clear();
    if (baseline == nullptr)
    {
        // Nothing held: the client needs every body once (the bucket goes into debt if it must).
        out.assign(current.bodies.begin(), current.bodies.end());
        return true;
    }
    // Walk both frames by id: unchanged bodies and removals always go in (they cost next to nothing), changed
    // and new ones compete for the bytes left.
    struct Candidate
    {
        std::uint32_t currentIndex;
        float priority;
        bool owned;
    };
    static thread_local std::vector<Candidate> candidates;
    candidates.clear();
    const auto cur = current.bodies;
    const auto base = baseline->bodies;
    std::size_t i = 0, j = 0;
    if (!cur.empty() && client.priority.size() <= cur.back().id)
    {
        client.priority.resize(static_cast<std::size_t>(cur.back().id) + 1, 0.0f);
    }
    while (i < cur.size())
    {
        while (j < base.size() && base[j].id < cur[i].id)
        {
            ++j; // removed since the baseline: left out, so the client learns it
        }
        const bool kept =
            j < base.size() && base[j].id == cur[i].id && base[j].generation == cur[i].generation;
        if (kept && base[j].sameState(cur[i]))
        {
            client.priority[cur[i].id] = 0.0f;
        }
        else
        {
            const bool owned = owns(client, cur[i].id, cur[i].generation);
            float& accumulated = client.priority[cur[i].id];
            accumulated += snapshotPriority(cur[i], owned, !kept);
            candidates.push_back({static_cast<std::uint32_t>(i), accumulated, owned});
        }
        ++i;
    }
    const double available = client.budgetTokens - kSnapshotOverheadBytes;
    std::size_t take = candidates.size();
    if (static_cast<double>(take) * client.bytesPerChangedBody > available)
    {
        take = available > 0.0 ? static_cast<std::size_t>(available / client.bytesPerChangedBody) : 0;
        // The client's own bodies always go (a few bytes; the bucket pays them back later), then the rest by
        // accumulated priority.
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const Candidate& a, const Candidate& b)
                         { return a.owned != b.owned ? a.owned : a.priority > b.priority; });
        while (take < candidates.size() && candidates[take].owned)
        {
            ++take;
        }
        ++m_metrics.budgetLimitedSnapshots;
        m_metrics.bodiesDeferred += candidates.size() - take;
    }
    static thread_local std::vector<std::uint8_t> chosen;
    chosen.assign(cur.size(), 0);
    for (std::size_t k = 0; k < take; ++k)
    {
        chosen[candidates[k].currentIndex] = 1;
        client.priority[cur[candidates[k].currentIndex].id] = 0.0f;
    }
    // The composite: chosen and unchanged bodies as they are now, deferred ones as the client has them.
    j = 0;
    for (i = 0; i < cur.size(); ++i)
    {
        while (j < base.size() && base[j].id < cur[i].id)
        {
            ++j;
        }
        const bool kept =
            j < base.size() && base[j].id == cur[i].id && base[j].generation == cur[i].generation;
        if ((kept && base[j].sameState(cur[i])) || chosen[i])
        {
            out.push_back(cur[i]);
        }
        else if (kept)
        {
            out.push_back(base[j]); // deferred: unchanged for the client
        }
        else if (j < base.size() && base[j].id == cur[i].id)
        {
            out.push_back(base[j]); // a replaced body deferred: the old one stays a little longer
        }
        // else: a new body deferred: not in this snapshot
    }
    return take == candidates.size();
}

bool Replicator::chooseBudgeted(ClientReplication& client, const protocol::SnapshotFrame*& current,
                                const protocol::SnapshotFrame*& baseline,
                                const protocol::SnapshotFrame*& reference, double now, bool full)
{
    const double rate = m_config.maxClientKbps * 1000.0 / 8.0; // bytes per second
    if (!client.sentFrames)
    {
        client.sentFrames = std::make_unique<protocol::SnapshotHistory>(kBudgetHistoryTicks);
        client.budgetTokens = rate * m_config.budgetBurstSeconds;
        client.budgetTime = now;
    }
    client.budgetTokens =
        std::min(rate * m_config.budgetBurstSeconds, client.budgetTokens + rate * (now - client.budgetTime));
    client.budgetTime = now;
    if (!full)
    {
        client.snapshots.choose(*client.sentFrames, current->tick, baseline, reference);
    }
    // The slot of the frame about to be kept must not be one of these.
    if (reference && current->tick - reference->tick >= kBudgetHistoryTicks)
    {
        reference = nullptr;
    }
    if (baseline && current->tick - baseline->tick >= kBudgetHistoryTicks)
    {
        baseline = nullptr;
        reference = nullptr;
    }
    if (baseline == nullptr && !full)
    {
        // The client's own frames are kept for kBudgetHistoryTicks only. A tick it holds that is older
        // (after an outage, say) is still a baseline if it was sent exactly as simulated: then the
        // simulation's history has the same frame, for up to maxBaselineAgeTicks.
        const protocol::SnapshotFrame* simBaseline = nullptr;
        const protocol::SnapshotFrame* simReference = nullptr;
        client.snapshots.choose(m_history, current->tick, simBaseline, simReference);
        if (simBaseline && !client.deviatedTicks.count(simBaseline->tick))
        {
            baseline = simBaseline;
            reference =
                simReference && !client.deviatedTicks.count(simReference->tick) ? simReference : nullptr;
        }
    }
    // What this client is sent is kept as its own frame (with the history's unchanged-since hints): it is the
    // baseline once acknowledged. A frame skipped later is never held, so never a baseline.
    const bool composedExact = composeBudgeted(client, *current, baseline);
    std::vector<protocol::QuantizedBody>& kept = client.sentFrames->begin(current->tick);
    kept.assign(client.composite.begin(), client.composite.end());
    client.sentFrames->commit();
    auto& deviated = client.deviatedTicks;
    while (!deviated.empty() && *deviated.begin() + m_config.maxBaselineAgeTicks < current->tick)
    {
        deviated.erase(deviated.begin());
    }
    if (!composedExact)
    {
        deviated.insert(current->tick);
    }
    const bool exact = composedExact && (!baseline || !deviated.count(baseline->tick)) &&
                       (!reference || !deviated.count(reference->tick));
    if (exact)
    {
        // The same bodies as the simulation's frames: encode (or reuse) from those.
        baseline = baseline ? m_history.find(baseline->tick) : nullptr;
        reference = reference && baseline ? m_history.find(reference->tick) : nullptr;
    }
    else
    {
        current = client.sentFrames->newest();
    }
    return exact;
}

} // namespace polytope::server

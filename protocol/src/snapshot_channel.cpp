#include "polytope/protocol/snapshot_channel.h"

#include <algorithm>

namespace polytope::protocol
{

// ------------------------------------------------------------------------------------- SnapshotHistory

SnapshotHistory::SnapshotHistory(std::uint32_t maxBaselineAgeTicks)
    : m_maxAge(std::max<std::uint32_t>(1, maxBaselineAgeTicks)),
      m_slots(static_cast<std::size_t>(m_maxAge) + 1)
{
}

std::vector<QuantizedBody>& SnapshotHistory::begin(std::uint64_t tick)
{
    const auto index = static_cast<std::int64_t>(tick % m_slots.size());
    Slot& slot = m_slots[static_cast<std::size_t>(index)];
    slot.valid = false;
    slot.bodies.clear();
    slot.unchangedSince.clear();
    slot.checksums.entries.clear();
    m_pending = index;
    m_pendingTick = tick;
    return slot.bodies;
}

void SnapshotHistory::commit()
{
    if (m_pending < 0)
    {
        return;
    }
    Slot& slot = m_slots[static_cast<std::size_t>(m_pending)];
    const SnapshotFrame* previous = newest();
    if (previous != nullptr && previous->tick < m_pendingTick)
    {
        updateUnchangedSince(*previous, SnapshotFrame(m_pendingTick, slot.bodies), slot.unchangedSince);
    }
    else
    {
        slot.unchangedSince.assign(slot.bodies.size(), m_pendingTick);
    }
    slot.frame = SnapshotFrame(m_pendingTick, slot.bodies, slot.unchangedSince, &slot.checksums);
    slot.valid = true;
    m_newest = m_pending;
    m_newestTick = m_pendingTick;
    m_pending = -1;
}

const SnapshotFrame* SnapshotHistory::find(std::uint64_t tick) const
{
    if (m_newest < 0 || tick > m_newestTick || m_newestTick - tick > m_maxAge)
    {
        return nullptr;
    }
    const Slot& slot = m_slots[tick % m_slots.size()];
    return slot.valid && slot.frame.tick == tick ? &slot.frame : nullptr;
}

// ----------------------------------------------------------------------------------- SnapshotSendState

SnapshotSendState::SnapshotSendState(std::uint32_t maxBaselineAgeTicks)
    : m_maxAge(std::max<std::uint32_t>(1, maxBaselineAgeTicks)), m_sent(kSentRing)
{
}

void SnapshotSendState::forget(std::uint64_t olderThan)
{
    m_pending.erase(std::remove_if(m_pending.begin(), m_pending.end(),
                                   [&](const PendingTick& p) { return p.tick < olderThan; }),
                    m_pending.end());
    m_held.erase(m_held.begin(), std::lower_bound(m_held.begin(), m_held.end(), olderThan));
}

void SnapshotSendState::onSliceSent(std::uint64_t tick, std::uint16_t sequence, std::uint32_t sliceCount)
{
    SentSlice& sent = m_sent[sequence % kSentRing];
    if (sent.pending)
    {
        // The ring wrapped before this datagram was acknowledged: its tick can no longer complete.
        for (PendingTick& p : m_pending)
        {
            if (p.tick == sent.tick)
            {
                p.unacked = 0xFFFFFFFFu;
            }
        }
    }
    sent = {tick, sequence, true};
    auto it = std::find_if(m_pending.begin(), m_pending.end(),
                           [&](const PendingTick& p) { return p.tick == tick; });
    if (it == m_pending.end())
    {
        m_pending.push_back({tick, sliceCount});
    }
    if (tick > m_maxAge)
    {
        forget(tick - m_maxAge);
    }
}

void SnapshotSendState::onAcked(std::uint16_t sequence)
{
    SentSlice& sent = m_sent[sequence % kSentRing];
    if (!sent.pending || sent.sequence != sequence)
    {
        return;
    }
    sent.pending = false;
    auto it = std::find_if(m_pending.begin(), m_pending.end(),
                           [&](const PendingTick& p) { return p.tick == sent.tick; });
    if (it == m_pending.end() || it->unacked == 0xFFFFFFFFu)
    {
        return;
    }
    if (--it->unacked == 0)
    {
        const std::uint64_t tick = it->tick;
        m_pending.erase(it);
        m_held.insert(std::upper_bound(m_held.begin(), m_held.end(), tick), tick);
    }
}

bool SnapshotSendState::holds(std::uint64_t tick) const
{
    return std::binary_search(m_held.begin(), m_held.end(), tick);
}

void SnapshotSendState::choose(const SnapshotHistory& history, std::uint64_t currentTick,
                               const SnapshotFrame*& baseline, const SnapshotFrame*& reference) const
{
    baseline = nullptr;
    reference = nullptr;
    for (auto it = m_held.rbegin(); it != m_held.rend(); ++it)
    {
        const std::uint64_t tick = *it;
        if (tick >= currentTick)
        {
            continue;
        }
        if (currentTick - tick > std::min(m_maxAge, history.maxBaselineAgeTicks()))
        {
            break;
        }
        const SnapshotFrame* frame = history.find(tick);
        if (frame == nullptr)
        {
            continue;
        }
        if (baseline == nullptr)
        {
            baseline = frame;
        }
        else
        {
            reference = frame;
            return;
        }
    }
}

// ------------------------------------------------------------------------------------ SnapshotReceiver

SnapshotReceiver::SnapshotReceiver(const SnapshotCodecConfig& config) : m_decoder(config) {}

const std::vector<QuantizedBody>* SnapshotReceiver::find(std::uint64_t tick) const
{
    const auto it = m_complete.find(tick);
    return it == m_complete.end() ? nullptr : &it->second;
}

bool SnapshotReceiver::admitTick(std::uint64_t tick, SliceOutcome& outcome) const
{
    outcome.tick = tick;
    if (m_anyComplete && tick + m_decoder.config().maxBaselineAgeTicks < m_newestComplete)
    {
        outcome.stale = true;
        return false;
    }
    if (m_complete.count(tick) != 0)
    {
        outcome.duplicate = true;
        return false;
    }
    return true;
}

bool SnapshotReceiver::admitRange(std::uint64_t tick, std::uint32_t firstId, std::uint64_t endId,
                                  SliceOutcome& outcome) const
{
    if (auto it = m_partial.find(tick); it != m_partial.end())
    {
        for (const auto& [first, end] : it->second.ranges)
        {
            if (first == firstId && end == endId)
            {
                outcome.duplicate = true;
                return false;
            }
            if (firstId < end && first < endId)
            {
                outcome.error = CodecError::BadHeader; // overlaps another slice of the same tick
                return false;
            }
        }
    }
    return true;
}

void SnapshotReceiver::addRange(std::uint64_t tick, std::uint32_t firstId, std::uint64_t endId,
                                std::span<const QuantizedBody> bodies, SliceOutcome& outcome)
{
    const std::uint32_t maxAge = m_decoder.config().maxBaselineAgeTicks;
    auto it = m_partial.find(tick);
    if (it == m_partial.end())
    {
        // Bound what a stream of forged, never-completed ticks can hold.
        while (m_partial.size() >= 64)
        {
            m_partial.erase(m_partial.begin());
        }
        it = m_partial.emplace(tick, Partial{}).first;
    }
    Partial& partial = it->second;
    outcome.bodies = static_cast<std::uint32_t>(bodies.size());
    partial.ranges.emplace_back(firstId, endId);
    partial.covered += endId - firstId;
    partial.bodies.insert(partial.bodies.end(), bodies.begin(), bodies.end());
    if (partial.covered != (1ull << 32))
    {
        return;
    }
    std::sort(partial.bodies.begin(), partial.bodies.end(),
              [](const QuantizedBody& a, const QuantizedBody& b) { return a.id < b.id; });
    m_complete[tick] = std::move(partial.bodies);
    m_partial.erase(it);
    outcome.completed = true;
    if (!m_anyComplete || tick > m_newestComplete)
    {
        m_newestComplete = tick;
        m_anyComplete = true;
    }
    // Keep what the server may still name: ticks within maxAge of the newest complete one.
    while (!m_complete.empty() && m_complete.begin()->first + maxAge < m_newestComplete)
    {
        m_complete.erase(m_complete.begin());
    }
    while (!m_partial.empty() && m_partial.begin()->first + maxAge < m_newestComplete)
    {
        m_partial.erase(m_partial.begin());
    }
}

SliceOutcome SnapshotReceiver::onSlice(std::uint64_t tick, std::span<const std::uint8_t> payload)
{
    SliceOutcome outcome;
    if (!admitTick(tick, outcome))
    {
        return outcome;
    }
    const SliceHeaderResult header = readSliceHeader(m_decoder.config(), payload);
    if (!header.ok())
    {
        outcome.error = header.error;
        return outcome;
    }
    SnapshotFrame baselineFrame, referenceFrame;
    const SnapshotFrame* baseline = nullptr;
    const SnapshotFrame* reference = nullptr;
    if (header.header.hasBaseline)
    {
        const std::uint64_t baselineTick = tick - header.header.baselineAge;
        const auto* bodies = header.header.baselineAge <= tick ? find(baselineTick) : nullptr;
        if (bodies == nullptr)
        {
            outcome.error = CodecError::MissingBaseline;
            return outcome;
        }
        baselineFrame = SnapshotFrame(baselineTick, *bodies);
        baseline = &baselineFrame;
        if (header.header.hasReference)
        {
            const std::uint64_t referenceTick = baselineTick - header.header.referenceGap;
            const auto* older = header.header.referenceGap <= baselineTick ? find(referenceTick) : nullptr;
            if (older == nullptr)
            {
                outcome.error = CodecError::MissingBaseline;
                return outcome;
            }
            referenceFrame = SnapshotFrame(referenceTick, *older);
            reference = &referenceFrame;
        }
    }
    if (!admitRange(tick, header.header.firstId, header.header.endId, outcome))
    {
        return outcome;
    }
    const CodecError error = m_decoder.decode(payload, tick, baseline, reference);
    if (error != CodecError::None)
    {
        outcome.error = error;
        return outcome;
    }
    outcome.full = !m_decoder.header().hasBaseline;
    addRange(tick, m_decoder.header().firstId, m_decoder.header().endId, m_decoder.bodies(), outcome);
    return outcome;
}

SliceOutcome SnapshotReceiver::onStructuredSlice(const StructuredSliceView& slice)
{
    SliceOutcome outcome;
    if (!admitTick(slice.tick, outcome) || !admitRange(slice.tick, slice.firstId, slice.endId, outcome))
    {
        return outcome;
    }
    std::span<const QuantizedBody> baseline;
    if (slice.hasBaseline)
    {
        const auto* bodies = slice.baselineTick < slice.tick ? find(slice.baselineTick) : nullptr;
        if (bodies == nullptr)
        {
            outcome.error = CodecError::MissingBaseline;
            return outcome;
        }
        baseline = *bodies;
    }
    const CodecError error = applyStructuredSlice(m_decoder.config().position, slice, baseline, m_applied);
    if (error != CodecError::None)
    {
        outcome.error = error;
        return outcome;
    }
    outcome.full = !slice.hasBaseline;
    addRange(slice.tick, slice.firstId, slice.endId, m_applied, outcome);
    return outcome;
}

} // namespace polytope::protocol

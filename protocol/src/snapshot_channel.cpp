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

SliceOutcome SnapshotReceiver::onSlice(std::uint64_t tick, std::span<const std::uint8_t> payload)
{
    SliceOutcome outcome;
    outcome.tick = tick;
    const std::uint32_t maxAge = m_decoder.config().maxBaselineAgeTicks;
    if (m_anyComplete && tick + maxAge < m_newestComplete)
    {
        outcome.stale = true;
        return outcome;
    }
    if (m_complete.count(tick) != 0)
    {
        outcome.duplicate = true;
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
    Partial* partial = nullptr;
    if (auto it = m_partial.find(tick); it != m_partial.end())
    {
        partial = &it->second;
        for (const auto& [first, end] : partial->ranges)
        {
            if (first == header.header.firstId && end == header.header.endId)
            {
                outcome.duplicate = true;
                return outcome;
            }
            if (header.header.firstId < end && first < header.header.endId)
            {
                outcome.error = CodecError::BadHeader; // overlaps another slice of the same tick
                return outcome;
            }
        }
    }
    const CodecError error = m_decoder.decode(payload, tick, baseline, reference);
    if (error != CodecError::None)
    {
        outcome.error = error;
        return outcome;
    }
    if (partial == nullptr)
    {
        // Bound what a stream of forged, never-completed ticks can hold.
        while (m_partial.size() >= 64)
        {
            m_partial.erase(m_partial.begin());
        }
        partial = &m_partial[tick];
    }
    const std::span<const QuantizedBody> bodies = m_decoder.bodies();
    outcome.bodies = static_cast<std::uint32_t>(bodies.size());
    outcome.full = !m_decoder.header().hasBaseline;
    partial->ranges.emplace_back(m_decoder.header().firstId, m_decoder.header().endId);
    partial->covered += m_decoder.header().endId - m_decoder.header().firstId;
    partial->bodies.insert(partial->bodies.end(), bodies.begin(), bodies.end());
    if (partial->covered != (1ull << 32))
    {
        return outcome;
    }
    std::sort(partial->bodies.begin(), partial->bodies.end(),
              [](const QuantizedBody& a, const QuantizedBody& b) { return a.id < b.id; });
    m_complete[tick] = std::move(partial->bodies);
    m_partial.erase(tick);
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
    return outcome;
}

} // namespace polytope::protocol

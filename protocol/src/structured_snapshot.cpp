#include "polytope/protocol/structured_snapshot.h"

#include <algorithm>

namespace polytope::protocol
{
namespace
{
bool idBefore(const QuantizedBody& body, std::uint64_t id)
{
    return body.id < id;
}

/// The bodies of `frame` with firstId <= id < endId.
std::span<const QuantizedBody> rangeOf(std::span<const QuantizedBody> frame, std::uint32_t firstId,
                                       std::uint64_t endId)
{
    const auto begin = std::lower_bound(frame.begin(), frame.end(), std::uint64_t{firstId}, idBefore);
    const auto end = std::lower_bound(begin, frame.end(), endId, idBefore);
    return {begin, end};
}
} // namespace

void StructuredSnapshotEncoder::encode(const SnapshotFrame& current, const SnapshotFrame* baseline,
                                       double serverTime, std::span<const BodyVelocity> velocityById,
                                       bool withVelocities)
{
    m_bodies.clear();
    m_velocities.clear();
    m_removed.clear();
    m_cuts.clear();
    m_slices.clear();
    const std::size_t bodyCost = kStructuredBodyBytes + (withVelocities ? kStructuredVelocityBytes : 0);
    const std::size_t capacity = kMaxPacketBytes - kStructuredSliceOverheadBytes;
    Cut cut{0, kIdSpaceEnd, 0, 0, 0, 0};
    std::size_t used = 0;
    // Each listed item goes into the open slice if it fits, else the slice ends just before its id. Items
    // come in increasing id order, so the ranges partition the id space.
    const auto take = [&](std::uint32_t id, std::size_t cost)
    {
        if (used + cost > capacity && used > 0)
        {
            cut.endId = id;
            cut.bodyEnd = m_bodies.size();
            cut.removedEnd = m_removed.size();
            m_cuts.push_back(cut);
            cut = Cut{id, kIdSpaceEnd, m_bodies.size(), 0, m_removed.size(), 0};
            used = 0;
        }
        used += cost;
    };
    const std::span<const QuantizedBody> cur = current.bodies;
    const std::span<const QuantizedBody> base =
        baseline ? baseline->bodies : std::span<const QuantizedBody>();
    std::size_t i = 0, j = 0;
    while (i < cur.size() || j < base.size())
    {
        if (i == cur.size() || (j < base.size() && base[j].id < cur[i].id))
        {
            take(base[j].id, kStructuredRemovedBytes);
            m_removed.push_back(base[j].id);
            ++j;
            continue;
        }
        const bool inBaseline = j < base.size() && base[j].id == cur[i].id;
        const bool unchanged =
            inBaseline && base[j].generation == cur[i].generation && base[j].sameState(cur[i]);
        if (!unchanged)
        {
            take(cur[i].id, bodyCost);
            m_bodies.push_back(cur[i]);
            if (withVelocities)
            {
                m_velocities.push_back(cur[i].id < velocityById.size() ? velocityById[cur[i].id]
                                                                       : BodyVelocity{});
            }
        }
        j += inBaseline ? 1 : 0; // a body of another generation replaces the baseline's: listed, not removed
        ++i;
    }
    cut.bodyEnd = m_bodies.size();
    cut.removedEnd = m_removed.size();
    m_cuts.push_back(cut);
    m_identical = baseline != nullptr && m_bodies.empty() && m_removed.empty();

    const std::span<const QuantizedBody> bodies = m_bodies;
    const std::span<const BodyVelocity> velocities = m_velocities;
    const std::span<const std::uint32_t> removed = m_removed;
    for (const Cut& c : m_cuts)
    {
        StructuredSliceView slice;
        slice.tick = current.tick;
        slice.serverTime = serverTime;
        slice.hasBaseline = baseline != nullptr;
        slice.baselineTick = baseline ? baseline->tick : 0;
        slice.firstId = c.firstId;
        slice.endId = c.endId;
        slice.checksum = quantizedStateChecksum(rangeOf(cur, c.firstId, c.endId));
        slice.bodies = bodies.subspan(c.bodyBegin, c.bodyEnd - c.bodyBegin);
        slice.removed = removed.subspan(c.removedBegin, c.removedEnd - c.removedBegin);
        if (withVelocities)
        {
            slice.velocities = velocities.subspan(c.bodyBegin, c.bodyEnd - c.bodyBegin);
        }
        m_slices.push_back(slice);
    }
}

CodecError applyStructuredSlice(const PositionQuantization& position, const StructuredSliceView& slice,
                                std::span<const QuantizedBody> baseline, std::vector<QuantizedBody>& out)
{
    out.clear();
    if (slice.endId > kIdSpaceEnd || slice.firstId >= slice.endId)
    {
        return CodecError::BadHeader;
    }
    const std::array<std::uint32_t, 3> maxCode{position.maxCode(0), position.maxCode(1), position.maxCode(2)};
    const std::span<const QuantizedBody> base = rangeOf(baseline, slice.firstId, slice.endId);
    std::size_t b = 0, r = 0;
    // A baseline body before `nextListed`: dropped when it is the next removed id, else kept. False when a
    // removed id was passed over: not in the baseline, or not ascending.
    const auto keepOrRemove = [&](const QuantizedBody& body, std::uint64_t nextListed)
    {
        if (r < slice.removed.size() && slice.removed[r] < body.id)
        {
            return false;
        }
        if (r < slice.removed.size() && slice.removed[r] == body.id)
        {
            ++r;
        }
        else if (body.id < nextListed)
        {
            out.push_back(body);
        }
        return true;
    };
    // Merge the baseline's bodies of the range with the listed ones (both by id), skipping removed ids.
    for (const QuantizedBody& listed : slice.bodies)
    {
        if (listed.id < slice.firstId || listed.id >= slice.endId ||
            (!out.empty() && listed.id <= out.back().id))
        {
            return CodecError::BadBodyId;
        }
        if (listed.generation == 0)
        {
            return CodecError::BadGeneration;
        }
        for (int axis = 0; axis < 3; ++axis)
        {
            if (listed.position[axis] > maxCode[axis])
            {
                return CodecError::ValueOutOfRange;
            }
        }
        if (!isValidOrientation({listed.largest, listed.orientation}))
        {
            return CodecError::ValueOutOfRange;
        }
        // Baseline bodies up to this id: kept, unless removed; one of this id is replaced by the listed body.
        while (b < base.size() && base[b].id <= listed.id)
        {
            if (!keepOrRemove(base[b], listed.id))
            {
                return CodecError::BadBodyId;
            }
            ++b;
        }
        if (r > 0 && slice.removed[r - 1] == listed.id)
        {
            return CodecError::BadBodyId; // listed and removed both
        }
        out.push_back(listed);
    }
    for (; b < base.size(); ++b)
    {
        if (!keepOrRemove(base[b], kIdSpaceEnd))
        {
            return CodecError::BadBodyId;
        }
    }
    if (r != slice.removed.size())
    {
        return CodecError::BadBodyId; // removed ids the baseline does not have, or not ascending
    }
    if (quantizedStateChecksum(out) != slice.checksum)
    {
        return CodecError::ChecksumMismatch;
    }
    return CodecError::None;
}

} // namespace polytope::protocol

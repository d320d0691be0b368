// The constraint graph's colouring (see constraint_graph.h for the rationale).
#include "polytope/physics/constraint_graph.h"

#include <algorithm>
#include <bit>

namespace polytope::physics
{

void ConstraintGraph::reserve(std::size_t bodies, std::size_t constraints)
{
    order.reserve(constraints);
    colorOf.reserve(constraints);
    overflowConstraints.reserve(constraints);
    overflowSequence.reserve(constraints);
    bodyColors.reserve(bodies);
    sortSlots.reserve(static_cast<std::size_t>(kGraphColorCount + 1) * kMaxTaskThreads *
                      (kMaxManifoldPoints + 1));
    reserveContactBundles(*this, constraints);
}

void ConstraintGraph::color(std::span<const ContactConstraintSetup> constraints, std::size_t bodyCount,
                            int parts)
{
    static_assert(kGraphColorCount <= 16, "bodyColors holds one bit per colour");
    bodyColors.assign(bodyCount, 0);
    colorOf.resize(constraints.size());
    constexpr unsigned kAllColors = (1u << kGraphColorCount) - 1u;
    for (std::size_t i = 0; i < constraints.size(); ++i)
    {
        const std::uint32_t a = constraints[i].bodyA;
        const std::uint32_t b = constraints[i].bodyB;
        // Index 0, the static dummy, never conflicts and is never marked.
        const unsigned used = (a != 0 ? bodyColors[a] : 0u) | (b != 0 ? bodyColors[b] : 0u);
        const unsigned open = ~used & kAllColors;
        // The first colour that holds neither body. As Box2D v3 does: constraints on a static body take the
        // last one instead, so that they are solved after the dynamic-dynamic ones in each pass and have the
        // last word (a stack's base).
        const bool againstStatic = a == 0 || b == 0;
        const int chosen = open == 0       ? kGraphColorCount
                           : againstStatic ? std::bit_width(open) - 1
                                           : std::countr_zero(open);
        if (chosen < kGraphColorCount)
        {
            const auto bit = static_cast<std::uint16_t>(1u << chosen);
            bodyColors[a] = static_cast<std::uint16_t>(bodyColors[a] | (a != 0 ? bit : 0u));
            bodyColors[b] = static_cast<std::uint16_t>(bodyColors[b] | (b != 0 ? bit : 0u));
        }
        colorOf[i] = static_cast<std::uint8_t>(chosen);
    }
    // Within a colour, constraints with more points first: a bundle solves as many points as its fullest
    // lane, so mixing one-point and four-point constraints in a bundle wastes lanes (in a pile, about a
    // third of the point work). But first the colour is cut into `parts` runs in constraint order, one per
    // thread: sorting the whole colour by points would hand each thread constraints from everywhere, and
    // their bodies' data would move between the cores at every colour. Constraints of a colour are
    // independent, so their order there changes no result; the overflow set is solved in order and keeps
    // constraint order.
    constexpr int kBuckets = kMaxManifoldPoints + 1;
    const int runs = std::clamp(parts, 1, kMaxTaskThreads);
    const auto slotOf = [&](std::size_t i, std::uint32_t run)
    {
        const int c = colorOf[i];
        if (c == kGraphColorCount)
        {
            return static_cast<std::size_t>(c) * runs * kBuckets; // the overflow set: one slot
        }
        const int bucket =
            kMaxManifoldPoints - std::min(std::max(constraints[i].pointCount, 0), kMaxManifoldPoints);
        return (static_cast<std::size_t>(c) * runs + run) * kBuckets + static_cast<std::size_t>(bucket);
    };
    std::uint32_t colorCount[kGraphColorCount + 1] = {};
    for (std::size_t i = 0; i < constraints.size(); ++i)
    {
        ++colorCount[colorOf[i]];
    }
    // Run r of a colour of n constraints holds its constraints k (in constraint order) with k * runs / n ==
    // r.
    std::uint32_t seen[kGraphColorCount + 1] = {};
    const auto runOf = [&](std::size_t i)
    {
        const int c = colorOf[i];
        const std::uint64_t k = seen[c]++;
        return static_cast<std::uint32_t>(k * static_cast<std::uint64_t>(runs) / colorCount[c]);
    };
    sortSlots.assign(static_cast<std::size_t>(kGraphColorCount + 1) * runs * kBuckets, 0);
    for (std::size_t i = 0; i < constraints.size(); ++i)
    {
        ++sortSlots[slotOf(i, runOf(i))];
    }
    std::uint32_t start = 0;
    for (int c = 0; c <= kGraphColorCount; ++c)
    {
        colorStart[c] = start;
        for (std::size_t k = 0; k < static_cast<std::size_t>(runs) * kBuckets; ++k)
        {
            std::uint32_t& slot = sortSlots[static_cast<std::size_t>(c) * runs * kBuckets + k];
            const std::uint32_t count = slot;
            slot = start;
            start += count;
        }
    }
    colorStart[kGraphColorCount + 1] = start;
    order.resize(constraints.size());
    std::fill(std::begin(seen), std::end(seen), 0u);
    for (std::size_t i = 0; i < constraints.size(); ++i)
    {
        order[sortSlots[slotOf(i, runOf(i))]++] = static_cast<std::uint32_t>(i);
    }
}
} // namespace polytope::physics

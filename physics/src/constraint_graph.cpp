// The constraint graph's colouring (see constraint_graph.h for the rationale).
#include "polytope/physics/constraint_graph.h"

#include <algorithm>

namespace polytope::physics
{

void ConstraintGraph::reserve(std::size_t bodies, std::size_t constraints)
{
    order.reserve(constraints);
    colorOf.reserve(constraints);
    overflowConstraints.reserve(constraints);
    overflowSequence.reserve(constraints);
    bodyBits.reserve(kGraphColorCount * ((bodies + 63) / 64));
    reserveContactBundles(*this, constraints);
}

void ConstraintGraph::color(std::span<const ContactConstraintSetup> constraints, std::size_t bodyCount)
{
    const std::size_t words = (bodyCount + 63) / 64;
    bodyBits.assign(kGraphColorCount * words, 0);
    colorOf.resize(constraints.size());
    for (std::size_t i = 0; i < constraints.size(); ++i)
    {
        const std::uint32_t a = constraints[i].bodyA;
        const std::uint32_t b = constraints[i].bodyB;
        // As Box2D v3 does: constraints on a static body take the last colours that fit, so that they
        // are solved after the dynamic-dynamic ones in each pass and have the last word (a stack's base).
        const bool againstStatic = a == 0 || b == 0;
        int chosen = kGraphColorCount;
        for (int k = 0; k < kGraphColorCount; ++k)
        {
            const int c = againstStatic ? kGraphColorCount - 1 - k : k;
            std::uint64_t* bits = bodyBits.data() + static_cast<std::size_t>(c) * words;
            // Index 0, the static dummy, never conflicts and is never marked.
            const bool usedA = a != 0 && (bits[a / 64] >> (a % 64) & 1u) != 0;
            const bool usedB = b != 0 && (bits[b / 64] >> (b % 64) & 1u) != 0;
            if (usedA || usedB)
            {
                continue;
            }
            if (a != 0)
            {
                bits[a / 64] |= std::uint64_t{1} << (a % 64);
            }
            if (b != 0)
            {
                bits[b / 64] |= std::uint64_t{1} << (b % 64);
            }
            chosen = c;
            break;
        }
        colorOf[i] = static_cast<std::uint8_t>(chosen);
    }
    // Within a colour, constraints with more points first: a bundle solves as many points as its fullest
    // lane, so mixing one-point and four-point constraints in a bundle wastes lanes (in a pile, about a
    // third of the point work). Constraints of a colour are independent, so their order there changes no
    // result; the overflow set is solved in order and keeps constraint order.
    constexpr int kBuckets = kMaxManifoldPoints + 1;
    const auto bucketOf = [&](std::size_t i)
    {
        return colorOf[i] == kGraphColorCount
                   ? 0
                   : kMaxManifoldPoints -
                         std::min(std::max(constraints[i].pointCount, 0), kMaxManifoldPoints);
    };
    std::uint32_t next[(kGraphColorCount + 1) * kBuckets] = {};
    for (std::size_t i = 0; i < constraints.size(); ++i)
    {
        ++next[colorOf[i] * kBuckets + bucketOf(i)];
    }
    std::uint32_t start = 0;
    for (int c = 0; c <= kGraphColorCount; ++c)
    {
        colorStart[c] = start;
        for (int k = 0; k < kBuckets; ++k)
        {
            const std::uint32_t count = next[c * kBuckets + k];
            next[c * kBuckets + k] = start;
            start += count;
        }
    }
    colorStart[kGraphColorCount + 1] = start;
    order.resize(constraints.size());
    for (std::size_t i = 0; i < constraints.size(); ++i)
    {
        order[next[colorOf[i] * kBuckets + bucketOf(i)]++] = static_cast<std::uint32_t>(i);
    }
}
} // namespace polytope::physics

// Polytope physics (internal): the choice of at most four contact points out of many, shared by the
// polyhedron manifolds (collide_convex.cpp: clipped faces, vertices under a plane) and the triangle
// manifolds and their reduction over many triangles (collide_triangle.cpp).
//
// The four points keep the deepest point and span the largest area, the choice that keeps a resting face
// stable (Gregorius, GDC 2015 "Robust Contact Creation for Physics Simulations"; Box2D and Jolt reduce the
// same way). The two callers differ only in how near-ties are settled (SubsetTies), and each keeps its own
// rule so that its results do not change by a bit.
#pragma once

#include "polytope/physics/manifold.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace polytope::physics
{

/// Coordinates of a contact candidate in the plane of the contact (two tangent axes).
struct PlanarPoint
{
    float u;
    float v;
};

/// Twice the signed area of triangle (p, q, r).
inline float signedArea2(const PlanarPoint& p, const PlanarPoint& q, const PlanarPoint& r)
{
    return (q.u - p.u) * (r.v - p.v) - (q.v - p.v) * (r.u - p.u);
}

/// Metres: points whose separations differ by less than this count as equally deep when a manifold is
/// reduced to four points (see chooseContactSubset).
inline constexpr float kReductionDepthTolerance = 0.5e-3f;

/// How chooseContactSubset settles near-ties between candidates.
enum class SubsetTies : std::uint8_t
{
    /// A strictly larger metric wins, else the lower index; a point adding any positive area counts. For the
    /// points of one clipped face or one shape's vertices, which are distinct.
    Exact,
    /// Metrics equal up to rounding (1e-6 relative) tie and go to the deeper point, then the lower index;
    /// areas below 1e-5 of the two first points' distance squared are rounding and add nothing. For points
    /// gathered from several triangles, where a corner on a seam is met twice (see beatsCandidate).
    Rounding
};

/// Whether a candidate with `metric` and separation `s` beats the best so far (`bestMetric`, `bestS`)
/// under `ties`. With SubsetTies::Rounding: a larger metric, or one equal up to rounding with a deeper
/// separation, which keeps the deeper of two copies of a point (a corner on a seam, met by both
/// triangles).
inline bool beatsCandidate(float metric, float s, float bestMetric, float bestS, SubsetTies ties)
{
    if (ties == SubsetTies::Exact)
    {
        return metric > bestMetric;
    }
    const float slack = 1e-6f * std::fabs(bestMetric);
    return metric > bestMetric + slack || (metric >= bestMetric - slack && s < bestS);
}

/// Picks at most four candidates: the deepest (of those within kReductionDepthTolerance of it, the one
/// farthest from the candidates' centroid), the one farthest from it, the one spanning the largest triangle
/// with those two, and the one adding the most area outside that triangle. Candidates adding no area go;
/// ties are settled by `ties`, then go to the first candidate. `forEach(fn)` calls
/// fn(int index, PlanarPoint, float separation) for every candidate, in a fixed order. Returns the count
/// written to `chosen`.
template <class ForEach>
int chooseContactSubset(ForEach forEach, SubsetTies ties, int chosen[kMaxManifoldPoints])
{
    int deepest = -1;
    PlanarPoint deepestPoint{0.0f, 0.0f};
    float deepestSeparation = 0.0f;
    PlanarPoint centroid{0.0f, 0.0f};
    int count = 0;
    forEach(
        [&](int i, const PlanarPoint& q, float s)
        {
            if (deepest < 0 || s < deepestSeparation)
            {
                deepest = i;
                deepestPoint = q;
                deepestSeparation = s;
            }
            centroid.u += q.u;
            centroid.v += q.v;
            ++count;
        });
    if (deepest < 0)
    {
        return 0;
    }
    centroid.u /= static_cast<float>(count);
    centroid.v /= static_cast<float>(count);

    // A best-so-far search over the candidates by `metricOf`, among those with metric above `floor`.
    struct Best
    {
        int index = -1;
        PlanarPoint point{};
        float metric = 0.0f;
        float separation = 0.0f;
    };
    const auto search = [&](float floor, auto metricOf)
    {
        Best best;
        best.metric = floor;
        forEach(
            [&](int i, const PlanarPoint& q, float s)
            {
                const float metric = metricOf(q, s);
                if (metric > floor &&
                    (best.index < 0 || beatsCandidate(metric, s, best.metric, best.separation, ties)))
                {
                    best = {i, q, metric, s};
                }
            });
        return best;
    };

    // Points within kReductionDepthTolerance of the deepest count as equally deep: among them, the one
    // farthest from the candidates' centroid starts the set. On a face resting flat on a face the depths
    // differ by rounding and tiny tilts, and "the deepest" would jump between a corner and a clipped point
    // far along an edge (an incident edge nearly parallel to a side plane crosses it far from the corner),
    // dropping a corner and the warm-start impulse it carried; the farthest point is a corner.
    Best first =
        search(-1.0f,
               [&](const PlanarPoint& q, float s)
               {
                   const float du = q.u - centroid.u;
                   const float dv = q.v - centroid.v;
                   return s <= deepestSeparation + kReductionDepthTolerance ? du * du + dv * dv : -2.0f;
               });
    if (first.index < 0)
    {
        first = {deepest, deepestPoint, 0.0f, deepestSeparation}; // no distance to compare (not finite)
    }
    chosen[0] = first.index;
    const PlanarPoint p1 = first.point;
    const Best second = search(0.0f,
                               [&](const PlanarPoint& q, float)
                               {
                                   const float du = q.u - p1.u;
                                   const float dv = q.v - p1.v;
                                   return du * du + dv * dv;
                               });
    if (second.index < 0)
    {
        return 1;
    }
    chosen[1] = second.index;
    const PlanarPoint p2 = second.point;
    // With SubsetTies::Rounding, areas below this (twice the area of a triangle whose height over p1-p2 is
    // 1e-5 of its base) are rounding: a point that close to the line, or to the triangle's sides, adds
    // nothing.
    const float minArea2 = ties == SubsetTies::Rounding ? 1e-5f * second.metric : 0.0f;
    const Best third =
        search(minArea2, [&](const PlanarPoint& q, float) { return std::fabs(signedArea2(p1, p2, q)); });
    if (third.index < 0)
    {
        return 2;
    }
    chosen[2] = third.index;
    const PlanarPoint p3 = third.point;
    const float orientation = signedArea2(p1, p2, p3) < 0.0f ? -1.0f : 1.0f;
    const Best fourth = search(minArea2,
                               [&](const PlanarPoint& q, float)
                               {
                                   // Area q adds beyond the triangle's sides (positive only outside).
                                   return std::max(-orientation * signedArea2(p1, p2, q),
                                                   std::max(-orientation * signedArea2(p2, p3, q),
                                                            -orientation * signedArea2(p3, p1, q)));
                               });
    if (fourth.index < 0)
    {
        return 3;
    }
    chosen[3] = fourth.index;
    return 4;
}

} // namespace polytope::physics

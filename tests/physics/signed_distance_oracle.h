// The signed distance of two convex shapes with tight tolerances: the oracle of the shape-cast tests
// (test_shape_cast.cpp, test_composite_queries.cpp), defined once.
#pragma once

#include "physics/convex_minimum.h"
#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <algorithm>
#include <span>

namespace physics_test
{
using namespace polytope::physics;

/// Signed distance (negative: penetration depth) of two shapes given in one frame, with the normal from
/// a toward b: GJK while the cores are apart (exact for rounded shapes even when they overlap), EPA once
/// they intersect. Tolerances 1e-9, far tighter than the engine's defaults (1e-6), so that the oracle's own
/// tolerance does not swamp the errors it measures.
template <class A, class B>
double oracleDistance(const A& a, const B& b, const Vec3& guess, Vec3* normal = nullptr)
{
    GjkSettings gjk;
    gjk.relativeTolerance = 1e-9f;
    gjk.maxIterations = 128;
    const GjkResult g = gjkClosestPoints(a, b, guess, gjk);
    if (g.coreDistance > 0.0f || g.status == GjkStatus::Separated)
    {
        if (normal != nullptr)
        {
            *normal = g.normal;
        }
        return g.distance;
    }
    EpaSettings epa;
    epa.relativeTolerance = 1e-9f;
    const PenetrationResult r = penetrationDepth(a, b, guess, epa, gjk);
    if (normal != nullptr)
    {
        *normal = r.normal;
    }
    return r.status == EpaStatus::NotColliding ? double(r.distance) : -double(r.depth);
}

/// A shape's bounding radius about its local origin, radii included (0 for planes and composite shapes).
inline double boundOf(const Shape& s, std::span<const ConvexHull> hulls)
{
    switch (s.type)
    {
    case ShapeType::Sphere:
        return s.sphere.radius;
    case ShapeType::Capsule:
        return double(s.capsule.halfHeight) + s.capsule.radius;
    case ShapeType::Box:
        return length(s.box.halfExtents);
    case ShapeType::Hull:
    {
        double best = 0.0;
        for (const Vec3& v : hulls[s.hullIndex].vertices)
        {
            best = std::max(best, double(length(v)));
        }
        return best;
    }
    default:
        return 0.0;
    }
}

/// The oracle's answer for a sweep whose signed distance at fraction t is distance(t).
struct SweepOracle
{
    bool hit = false;
    double fraction = 0.0;        ///< time of impact (hit)
    double closestDistance = 0.0; ///< signed distance at the closest approach in [0, maxFraction]
};

/// The first fraction at which distance(t) <= 0 on [0, maxFraction]: golden section for the closest approach
/// (distance is convex in t for convex shapes translating), then bisection before it (56 halvings).
template <class Distance> SweepOracle sweepOracle(Distance&& distance, double maxFraction)
{
    SweepOracle o;
    const double d0 = distance(0.0);
    if (d0 <= 0.0)
    {
        o.hit = true;
        o.closestDistance = d0;
        return o;
    }
    const ConvexMinimum approach = minimiseConvex(distance, 0.0, maxFraction, 48);
    double closestT = approach.x;
    o.closestDistance = approach.value;
    const double dEnd = distance(maxFraction);
    if (dEnd < o.closestDistance)
    {
        o.closestDistance = dEnd;
        closestT = maxFraction;
    }
    if (o.closestDistance > 0.0)
    {
        return o;
    }
    double before = 0.0;
    double after = closestT;
    for (int i = 0; i < 56; ++i)
    {
        const double mid = 0.5 * (before + after);
        (distance(mid) > 0.0 ? before : after) = mid;
    }
    o.hit = true;
    o.fraction = after;
    return o;
}

} // namespace physics_test

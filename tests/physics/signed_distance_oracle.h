// The signed distance of two convex shapes with tight tolerances: the oracle of the shape-cast tests
// (test_shape_cast.cpp, test_composite_queries.cpp), defined once.
#pragma once

#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/math.h"

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

} // namespace physics_test

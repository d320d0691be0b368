// The invariants every contact manifold must meet, whatever routine made it, checked once for the
// narrowphase tests (round shapes, boxes, triangles).
#pragma once

#include "polytope/physics/manifold.h"

#include <catch2/catch.hpp>

#include <cmath>

namespace physics_test
{
using namespace polytope::physics;

/// Requires `m` to be finite with at most kMaxManifoldPoints points and, when it has points: a unit normal;
/// each point's separation equal to dot(pointB - pointA, normal) within `separationTolerance` metres and at
/// most `margin`; distinct feature ids.
inline void requireConsistentManifold(const ContactManifold& m, float margin, double separationTolerance)
{
    REQUIRE(isFinite(m));
    REQUIRE(m.pointCount >= 0);
    REQUIRE(m.pointCount <= kMaxManifoldPoints);
    if (m.pointCount == 0)
    {
        return;
    }
    REQUIRE(std::fabs(length(m.normal) - 1.0f) < 1e-5f);
    for (int i = 0; i < m.pointCount; ++i)
    {
        const ContactPoint& p = m.points[i];
        INFO("point " << i);
        REQUIRE(p.separation == Approx(dot(p.pointB - p.pointA, m.normal)).margin(separationTolerance));
        REQUIRE(p.separation <= margin);
        for (int j = 0; j < i; ++j)
        {
            REQUIRE(p.featureId != m.points[j].featureId);
        }
    }
}

} // namespace physics_test

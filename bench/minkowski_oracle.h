// polytope-bench: exact answers for convex polyhedra, independent of the code under test.
//
// The penetration depth and the distance of two convex polyhedra are the distance from the origin to the
// boundary of their Minkowski difference A - B. Its hull is computed by qhull (libqhull_r, Debian
// libqhull-dev) in double precision from all pairwise vertex differences; the depth is the smallest
// facet-plane distance when the origin is inside, the distance the smallest origin-to-facet distance
// when it is outside. Box pairs also have a closed 15-axis SAT answer for the depth (satBoxDepth).
#pragma once

#include <array>
#include <vector>

namespace polytope::bench
{

using Vec3d = std::array<double, 3>;

struct ExactAnswer
{
    bool valid = false; ///< qhull succeeded
    bool overlapping = false;
    double depth = 0.0;    ///< metres, > 0 when overlapping
    double distance = 0.0; ///< metres, > 0 when apart
    Vec3d normal{};        ///< unit, from A toward B: translating B by depth * normal separates them
};

/// From world-space vertices of A and B.
ExactAnswer minkowskiExact(const std::vector<Vec3d>& verticesA, const std::vector<Vec3d>& verticesB);

/// Box A (half extents ha, rotation columns ra, centre ca) against box B: exact penetration depth by
/// the 15 SAT axes (negative: the largest separation along those axes, not the distance).
double satBoxDepth(const Vec3d& ha, const std::array<Vec3d, 3>& ra, const Vec3d& ca, const Vec3d& hb,
                   const std::array<Vec3d, 3>& rb, const Vec3d& cb, Vec3d* normal = nullptr);

} // namespace polytope::bench

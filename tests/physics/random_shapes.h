// Seeded random inputs for the physics tests, and small checks on their results, defined once: uniform
// numbers, rotations uniform on SO(3), hulls of random point clouds, and a manifold's deepest separation.
#pragma once

#include "polytope/physics/hull.h"
#include "polytope/physics/manifold.h"
#include "polytope/physics/math.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

namespace physics_test
{
using namespace polytope::physics;

inline float uniform(std::mt19937& rng, float lo, float hi)
{
    return std::uniform_real_distribution<float>(lo, hi)(rng);
}

/// A rotation uniform on SO(3): a normalised 4D Gaussian.
inline Quat randomRotation(std::mt19937& rng)
{
    std::normal_distribution<float> n(0.0f, 1.0f);
    return normalize(Quat{n(rng), n(rng), n(rng), n(rng)});
}

/// A hull of `minPoints` to 32 points on a random ellipsoid shell (radii 0.2 .. 1 m), built by
/// buildConvexHull.
inline ConvexHull randomCloudHull(std::mt19937& rng, int minPoints)
{
    const int count = std::uniform_int_distribution<int>(minPoints, 32)(rng);
    const Vec3 axes{uniform(rng, 0.2f, 1.0f), uniform(rng, 0.2f, 1.0f), uniform(rng, 0.2f, 1.0f)};
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<Vec3> points;
    for (int i = 0; i < count; ++i)
    {
        const Vec3 direction = normalize(Vec3{n(rng), n(rng), n(rng)});
        points.push_back(mulPerElem(direction, axes) * uniform(rng, 0.8f, 1.0f));
    }
    const HullResult built = buildConvexHull(points);
    REQUIRE(built.ok());
    return built.hull;
}

/// The smallest separation of a manifold's points (+infinity when it has none).
inline float deepestSeparation(const ContactManifold& m)
{
    float deepest = std::numeric_limits<float>::infinity();
    for (int i = 0; i < m.pointCount; ++i)
    {
        deepest = std::min(deepest, m.points[i].separation);
    }
    return deepest;
}

} // namespace physics_test

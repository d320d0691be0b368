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

/// minPoints to maxPoints points in a random ellipsoid shell: radii 0.2 .. 1 m, each point at innerScale
/// .. 1 of the way out.
inline std::vector<Vec3> randomShellPoints(std::mt19937& rng, int minPoints, int maxPoints, float innerScale)
{
    const int count = std::uniform_int_distribution<int>(minPoints, maxPoints)(rng);
    const Vec3 axes{uniform(rng, 0.2f, 1.0f), uniform(rng, 0.2f, 1.0f), uniform(rng, 0.2f, 1.0f)};
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<Vec3> points;
    for (int i = 0; i < count; ++i)
    {
        const Vec3 direction = normalize(Vec3{n(rng), n(rng), n(rng)});
        points.push_back(mulPerElem(direction, axes) * uniform(rng, innerScale, 1.0f));
    }
    return points;
}

/// A hull of `minPoints` to 32 points on a random ellipsoid shell (randomShellPoints), built by
/// buildConvexHull.
inline ConvexHull randomCloudHull(std::mt19937& rng, int minPoints)
{
    const HullResult built = buildConvexHull(randomShellPoints(rng, minPoints, 32, 0.8f));
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

#include "narrowphase_cases.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace polytope::bench
{
namespace
{

Float4 randomRotation(std::mt19937_64& rng)
{
    // Uniform on SO(3) (Shoemake): normalised 4D Gaussian.
    std::normal_distribution<double> n(0.0, 1.0);
    double q[4];
    double len = 0.0;
    do
    {
        len = 0.0;
        for (double& c : q)
        {
            c = n(rng);
            len += c * c;
        }
    } while (len < 1e-6);
    len = std::sqrt(len);
    return {float(q[0] / len), float(q[1] / len), float(q[2] / len), float(q[3] / len)};
}

Vec3d rotate(const Float4& q, const Vec3d& v)
{
    const double x = q.x, y = q.y, z = q.z, w = q.w;
    // v + 2w (u x v) + 2 u x (u x v)
    const Vec3d u{x, y, z};
    auto crossd = [](const Vec3d& a, const Vec3d& b) -> Vec3d {
        return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
    };
    const Vec3d t = crossd(u, v);
    const Vec3d t2{2 * t[0], 2 * t[1], 2 * t[2]};
    const Vec3d c = crossd(u, t2);
    return {v[0] + w * t2[0] + c[0], v[1] + w * t2[1] + c[1], v[2] + w * t2[2] + c[2]};
}

/// Bounding radius about the local origin of the shape's points.
float boundingRadiusOf(const std::vector<Float3>& points)
{
    double r2 = 0.0;
    for (const Float3& p : points)
    {
        r2 = std::max(r2, double(p.x) * p.x + double(p.y) * p.y + double(p.z) * p.z);
    }
    return float(std::sqrt(r2));
}

ConvexShapeData boxShape(const Float3& halfExtents)
{
    ConvexShapeData s;
    s.isBox = true;
    s.halfExtents = halfExtents;
    for (int i = 0; i < 8; ++i)
    {
        s.points.push_back({i & 1 ? halfExtents.x : -halfExtents.x, i & 2 ? halfExtents.y : -halfExtents.y,
                            i & 4 ? halfExtents.z : -halfExtents.z});
    }
    s.boundingRadius = boundingRadiusOf(s.points);
    return s;
}

ConvexShapeData randomShape(bool box, std::mt19937_64& rng)
{
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    if (box)
    {
        // Half extents 0.1 .. 1 m, so aspect ratios up to 10.
        return boxShape(
            {float(0.1 + 0.9 * unit(rng)), float(0.1 + 0.9 * unit(rng)), float(0.1 + 0.9 * unit(rng))});
    }
    ConvexShapeData s;
    s.isBox = false;
    // 16..32 points in an ellipsoid with semi-axes 0.2 .. 1 m, half on its surface.
    const int n = 16 + int(unit(rng) * 17) % 17;
    const double ax = 0.2 + 0.8 * unit(rng), ay = 0.2 + 0.8 * unit(rng), az = 0.2 + 0.8 * unit(rng);
    std::normal_distribution<double> g(0.0, 1.0);
    for (int i = 0; i < n; ++i)
    {
        double x = g(rng), y = g(rng), z = g(rng);
        const double len = std::sqrt(x * x + y * y + z * z) + 1e-12;
        const double r = (i % 2 == 0) ? 1.0 : std::cbrt(unit(rng));
        x *= r / len;
        y *= r / len;
        z *= r / len;
        s.points.push_back({float(x * ax), float(y * ay), float(z * az)});
    }
    s.boundingRadius = boundingRadiusOf(s.points);
    return s;
}

} // namespace

const char* pairClassName(PairClass c)
{
    switch (c)
    {
    case PairClass::Separated:
        return "separated";
    case PairClass::Shallow:
        return "shallow";
    case PairClass::Deep:
        return "deep";
    }
    return "?";
}

std::vector<Vec3d> worldVertices(const ConvexShapeData& shape, const Float3& position, const Float4& rotation)
{
    std::vector<Vec3d> out;
    out.reserve(shape.points.size());
    for (const Float3& p : shape.points)
    {
        const Vec3d r = rotate(rotation, {p.x, p.y, p.z});
        out.push_back({r[0] + position.x, r[1] + position.y, r[2] + position.z});
    }
    return out;
}

std::vector<ConvexPair> makePairs(bool boxes, PairClass pairClass, int count, std::uint64_t seed)
{
    std::mt19937_64 rng(seed * 7919 + (boxes ? 1 : 2) * 104729 + static_cast<std::uint64_t>(pairClass));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<ConvexPair> pairs;
    pairs.reserve(static_cast<std::size_t>(count));
    while (static_cast<int>(pairs.size()) < count)
    {
        ConvexPair pair;
        pair.a = randomShape(boxes, rng);
        pair.b = randomShape(boxes, rng);
        pair.rotationA = randomRotation(rng);
        pair.rotationB = randomRotation(rng);
        // A somewhere within 10 m of the origin; B along a random direction at a distance that makes the
        // wanted class likely (the exact answer decides).
        pair.positionA = {float(20 * unit(rng) - 10), float(20 * unit(rng) - 10), float(20 * unit(rng) - 10)};
        const double reach = double(pair.a.boundingRadius) + double(pair.b.boundingRadius);
        double fraction = 0.0;
        switch (pairClass)
        {
        case PairClass::Separated:
            fraction = 0.6 + 0.5 * unit(rng);
            break;
        case PairClass::Shallow:
            fraction = 0.3 + 0.3 * unit(rng);
            break;
        case PairClass::Deep:
            fraction = 0.5 * unit(rng);
            break;
        }
        const Float4 dirq = randomRotation(rng);
        const Vec3d dir = rotate(dirq, {1.0, 0.0, 0.0});
        pair.positionB = {float(pair.positionA.x + dir[0] * reach * fraction),
                          float(pair.positionA.y + dir[1] * reach * fraction),
                          float(pair.positionA.z + dir[2] * reach * fraction)};
        pair.exact = minkowskiExact(worldVertices(pair.a, pair.positionA, pair.rotationA),
                                    worldVertices(pair.b, pair.positionB, pair.rotationB));
        if (!pair.exact.valid)
        {
            continue;
        }
        if (pairClass == PairClass::Shallow && pair.exact.overlapping)
        {
            // Random placements rarely land in the thin shallow band: slide B out along the exact normal
            // to a target depth, then ask the oracle again (the class is decided by that second answer).
            const double smallerRadius = std::min(pair.a.boundingRadius, pair.b.boundingRadius);
            const double target = smallerRadius * (0.002 + 0.046 * unit(rng));
            const double shift = pair.exact.depth - target;
            pair.positionB = {float(pair.positionB.x + pair.exact.normal[0] * shift),
                              float(pair.positionB.y + pair.exact.normal[1] * shift),
                              float(pair.positionB.z + pair.exact.normal[2] * shift)};
            pair.exact = minkowskiExact(worldVertices(pair.a, pair.positionA, pair.rotationA),
                                        worldVertices(pair.b, pair.positionB, pair.rotationB));
            if (!pair.exact.valid)
            {
                continue;
            }
        }
        const double smaller = std::min(pair.a.boundingRadius, pair.b.boundingRadius);
        PairClass actual;
        if (!pair.exact.overlapping)
        {
            actual = PairClass::Separated;
            if (pair.exact.distance < 1e-3 * smaller)
            {
                continue; // touching within float noise: neither class
            }
        }
        else if (pair.exact.depth <= 0.05 * smaller)
        {
            actual = PairClass::Shallow;
            if (pair.exact.depth < 1e-3 * smaller)
            {
                continue;
            }
        }
        else
        {
            actual = PairClass::Deep;
        }
        if (actual == pairClass)
        {
            pair.pairClass = actual;
            pairs.push_back(std::move(pair));
        }
    }
    return pairs;
}

std::vector<ConvexPair> makeRestingPairs(int count, std::uint64_t seed)
{
    std::mt19937_64 rng(seed * 7919 + 3 * 104729);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const auto between = [&](double lo, double hi) { return lo + (hi - lo) * unit(rng); };
    const ConvexShapeData cube = boxShape({0.5f, 0.5f, 0.5f});
    std::vector<ConvexPair> pairs;
    pairs.reserve(static_cast<std::size_t>(count));
    while (static_cast<int>(pairs.size()) < count)
    {
        ConvexPair pair;
        pair.a = cube;
        pair.b = cube;
        pair.rotationA = {0.0f, 0.0f, 0.0f, 1.0f};
        pair.positionB = {float(between(-0.2, 0.2)), 0.99f, float(between(-0.2, 0.2))};
        // Twisted by up to 0.3 rad about an axis within 0.05 of vertical.
        const Vec3d axis{between(-0.05, 0.05), 1.0, between(-0.05, 0.05)};
        const double angle = between(-0.3, 0.3);
        const double scale = std::sin(0.5 * angle) / std::sqrt(axis[0] * axis[0] + 1.0 + axis[2] * axis[2]);
        pair.rotationB = {float(axis[0] * scale), float(axis[1] * scale), float(axis[2] * scale),
                          float(std::cos(0.5 * angle))};
        pair.pairClass = PairClass::Shallow;
        pair.exact = minkowskiExact(worldVertices(pair.a, pair.positionA, pair.rotationA),
                                    worldVertices(pair.b, pair.positionB, pair.rotationB));
        if (pair.exact.valid && pair.exact.overlapping)
        {
            pairs.push_back(std::move(pair));
        }
    }
    return pairs;
}

} // namespace polytope::bench

// Independent oracles for the GJK and EPA tests, in double precision and written without the engine's
// convex code: closed forms (point-box, point-segment, segment-segment, point-triangle), a 15-axis SAT
// for box pairs, a brute force over features for box-box distance, and qhull (an independent convex hull
// program) run on the Minkowski difference of two point sets for hull pairs.
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <libqhull_r/qhull_ra.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

namespace convex_oracle
{
using polytope::physics::Quat;
using polytope::physics::Transform;
using polytope::physics::Vec3;

/// A double-precision vector, separate from the engine's so that the oracle shares no code with it.
struct R3
{
    double x = 0.0, y = 0.0, z = 0.0;
};
inline R3 operator+(R3 a, R3 b)
{
    return {a.x + b.x, a.y + b.y, a.z + b.z};
}
inline R3 operator-(R3 a, R3 b)
{
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}
inline R3 operator-(R3 a)
{
    return {-a.x, -a.y, -a.z};
}
inline R3 operator*(R3 a, double s)
{
    return {a.x * s, a.y * s, a.z * s};
}
inline double dot(R3 a, R3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
inline R3 cross(R3 a, R3 b)
{
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
inline double norm(R3 a)
{
    return std::sqrt(dot(a, a));
}
inline R3 unit(R3 a)
{
    return a * (1.0 / norm(a));
}
inline R3 toR3(const Vec3& v)
{
    return {v.x, v.y, v.z};
}
inline double component(R3 a, int i)
{
    return i == 0 ? a.x : (i == 1 ? a.y : a.z);
}

/// A rigid pose in double: columns are the body's axes in the outer frame.
struct Pose
{
    R3 axis[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    R3 position{};

    R3 apply(R3 v) const { return axis[0] * v.x + axis[1] * v.y + axis[2] * v.z + position; }
    R3 applyInverse(R3 v) const
    {
        const R3 d = v - position;
        return {dot(axis[0], d), dot(axis[1], d), dot(axis[2], d)};
    }
};

/// The rotation matrix of a float quaternion, evaluated in double (the standard unit-quaternion formula).
inline Pose poseOf(const Transform& t)
{
    const double x = t.q.x, y = t.q.y, z = t.q.z, w = t.q.w;
    Pose p;
    p.axis[0] = {1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)};
    p.axis[1] = {2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)};
    p.axis[2] = {2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)};
    p.position = toR3(t.p);
    return p;
}

// ---- Random inputs ---------------------------------------------------------------------------------------

inline float uniform(std::mt19937& rng, float lo, float hi)
{
    return std::uniform_real_distribution<float>(lo, hi)(rng);
}

/// A uniformly distributed rotation (normalised 4D Gaussian).
inline Quat randomRotation(std::mt19937& rng)
{
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (;;)
    {
        const Quat q{n(rng), n(rng), n(rng), n(rng)};
        const float len = std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
        if (len > 1e-3f)
        {
            return {q.x / len, q.y / len, q.z / len, q.w / len};
        }
    }
}

inline Vec3 randomVec(std::mt19937& rng, float lo, float hi)
{
    return {uniform(rng, lo, hi), uniform(rng, lo, hi), uniform(rng, lo, hi)};
}

inline Vec3 randomUnit(std::mt19937& rng)
{
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (;;)
    {
        const Vec3 v{n(rng), n(rng), n(rng)};
        const float len = std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
        if (len > 1e-3f)
        {
            return v / len;
        }
    }
}

// ---- Closed forms ----------------------------------------------------------------------------------------

/// Distance from p to the box [-h, h] (0 inside).
inline double pointBoxDistance(R3 p, R3 h)
{
    const R3 c{std::clamp(p.x, -h.x, h.x), std::clamp(p.y, -h.y, h.y), std::clamp(p.z, -h.z, h.z)};
    return norm(p - c);
}

/// Signed distance from p to the box [-h, h] surface: negative inside (minus the distance to the nearest
/// face).
inline double pointBoxSignedDistance(R3 p, R3 h)
{
    const double outside = pointBoxDistance(p, h);
    if (outside > 0.0)
    {
        return outside;
    }
    return -std::min({h.x - std::fabs(p.x), h.y - std::fabs(p.y), h.z - std::fabs(p.z)});
}

inline double pointSegmentDistance(R3 p, R3 a, R3 b)
{
    const R3 d = b - a;
    const double dd = dot(d, d);
    const double t = dd > 0.0 ? std::clamp(dot(p - a, d) / dd, 0.0, 1.0) : 0.0;
    return norm(p - (a + d * t));
}

/// Distance between segments [p0, p1] and [q0, q1]: the minimum of a convex quadratic over the unit
/// square is its stationary point when inside, else on one of the four sides (point-segment distances).
inline double segmentSegmentDistance(R3 p0, R3 p1, R3 q0, R3 q1)
{
    double best = std::min({pointSegmentDistance(p0, q0, q1), pointSegmentDistance(p1, q0, q1),
                            pointSegmentDistance(q0, p0, p1), pointSegmentDistance(q1, p0, p1)});
    const R3 d1 = p1 - p0, d2 = q1 - q0, r = p0 - q0;
    const double a = dot(d1, d1), b = dot(d1, d2), c = dot(d2, d2), d = dot(d1, r), e = dot(d2, r);
    const double det = a * c - b * b;
    if (det > 1e-14 * a * c)
    {
        const double s = (b * e - c * d) / det;
        const double t = (a * e - b * d) / det;
        if (s > 0.0 && s < 1.0 && t > 0.0 && t < 1.0)
        {
            best = std::min(best, norm(r + d1 * s - d2 * t));
        }
    }
    return best;
}

/// Distance from p to triangle (a, b, c).
inline double pointTriangleDistance(R3 p, R3 a, R3 b, R3 c)
{
    const R3 n = cross(b - a, c - a);
    const double nn = dot(n, n);
    if (nn > 0.0)
    {
        const double wa = dot(n, cross(b - p, c - p));
        const double wb = dot(n, cross(c - p, a - p));
        const double wc = dot(n, cross(a - p, b - p));
        if (wa >= 0.0 && wb >= 0.0 && wc >= 0.0)
        {
            return std::fabs(dot(p - a, n)) / std::sqrt(nn);
        }
    }
    return std::min(
        {pointSegmentDistance(p, a, b), pointSegmentDistance(p, b, c), pointSegmentDistance(p, c, a)});
}

// ---- Boxes -----------------------------------------------------------------------------------------------

inline std::array<R3, 8> boxCorners(const Vec3& halfExtents, const Pose& pose)
{
    std::array<R3, 8> out;
    for (int i = 0; i < 8; ++i)
    {
        const R3 local{(i & 1) ? halfExtents.x : -halfExtents.x, (i & 2) ? halfExtents.y : -halfExtents.y,
                       (i & 4) ? halfExtents.z : -halfExtents.z};
        out[static_cast<std::size_t>(i)] = pose.apply(local);
    }
    return out;
}

/// The 12 edges of a box as pairs of corner indices (corners differing in one bit).
inline std::array<std::array<int, 2>, 12> boxEdges()
{
    std::array<std::array<int, 2>, 12> edges{};
    int k = 0;
    for (int i = 0; i < 8; ++i)
    {
        for (int bit = 1; bit < 8; bit <<= 1)
        {
            if (!(i & bit))
            {
                edges[static_cast<std::size_t>(k++)] = {i, i | bit};
            }
        }
    }
    return edges;
}

/// The Minkowski difference's extent along unit n: max over A of a.n minus min over B of b.n. When it is
/// positive it is the distance B must move along n to separate; the penetration depth is its minimum.
inline double overlapAlong(const std::vector<R3>& a, const std::vector<R3>& b, R3 n)
{
    double maxA = -std::numeric_limits<double>::infinity();
    double minB = std::numeric_limits<double>::infinity();
    for (const R3& p : a)
    {
        maxA = std::max(maxA, dot(p, n));
    }
    for (const R3& p : b)
    {
        minB = std::min(minB, dot(p, n));
    }
    return maxA - minB;
}

struct SatResult
{
    double depth = 0.0; ///< > 0: overlap; <= 0: -depth is a lower bound on the gap along the best axis
    R3 normal{};        ///< unit, from A to B, along which the overlap is least
    double secondDepth =
        0.0; ///< the least overlap along an axis not parallel to `normal` (uniqueness margin)
};

/// 15-axis separating-axis test for box A (half extents ha, at the origin, axis-aligned) and box B (half
/// extents hb, at `pose`): the three face normals of each, and the nine cross products of edge directions.
/// The least overlap over these axes (both signs) is the penetration depth of two boxes.
inline SatResult boxBoxSat(const Vec3& ha, const Vec3& hb, const Pose& pose)
{
    const R3 axesA[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    std::vector<R3> axes(axesA, axesA + 3);
    for (const R3& axis : pose.axis)
    {
        axes.push_back(axis);
    }
    for (const R3& ea : axesA)
    {
        for (const R3& eb : pose.axis)
        {
            const R3 c = cross(ea, eb);
            if (norm(c) > 1e-12)
            {
                axes.push_back(unit(c));
            }
        }
    }
    const R3 a{ha.x, ha.y, ha.z};
    const R3 b{hb.x, hb.y, hb.z};
    SatResult result;
    result.depth = std::numeric_limits<double>::infinity();
    result.secondDepth = std::numeric_limits<double>::infinity();
    std::vector<std::pair<double, R3>> overlaps;
    for (const R3& u : axes)
    {
        const double ra = a.x * std::fabs(u.x) + a.y * std::fabs(u.y) + a.z * std::fabs(u.z);
        const double rb = b.x * std::fabs(dot(u, pose.axis[0])) + b.y * std::fabs(dot(u, pose.axis[1])) +
                          b.z * std::fabs(dot(u, pose.axis[2]));
        const double c = dot(u, pose.position);
        overlaps.push_back({ra + rb - std::fabs(c), c >= 0.0 ? u : -u});
    }
    for (const auto& [overlap, n] : overlaps)
    {
        if (overlap < result.depth)
        {
            result.depth = overlap;
            result.normal = n;
        }
    }
    for (const auto& [overlap, n] : overlaps)
    {
        if (norm(cross(n, result.normal)) > 1e-3)
        {
            result.secondDepth = std::min(result.secondDepth, overlap);
        }
    }
    return result;
}

/// Distance between two separated boxes by brute force over features: each corner against the other
/// box (closed form in that box's frame) and every edge pair (segment-segment). The closest pair of two
/// convex polytopes always includes a corner, or lies on two edges.
inline double boxBoxDistance(const Vec3& ha, const Vec3& hb, const Pose& pose)
{
    const Pose identity;
    const std::array<R3, 8> ca = boxCorners(ha, identity);
    const std::array<R3, 8> cb = boxCorners(hb, pose);
    const R3 a{ha.x, ha.y, ha.z};
    const R3 b{hb.x, hb.y, hb.z};
    double best = std::numeric_limits<double>::infinity();
    for (const R3& p : cb)
    {
        best = std::min(best, pointBoxDistance(p, a));
    }
    for (const R3& p : ca)
    {
        best = std::min(best, pointBoxDistance(pose.applyInverse(p), b));
    }
    const auto edges = boxEdges();
    for (const auto& ea : edges)
    {
        for (const auto& eb : edges)
        {
            best = std::min(best, segmentSegmentDistance(ca[static_cast<std::size_t>(ea[0])],
                                                         ca[static_cast<std::size_t>(ea[1])],
                                                         cb[static_cast<std::size_t>(eb[0])],
                                                         cb[static_cast<std::size_t>(eb[1])]));
        }
    }
    return best;
}

// ---- qhull on the Minkowski difference ----------------------------------------------------------------

struct MinkowskiAnswer
{
    bool ok = false;
    bool originInside = false;
    double distance = 0.0; ///< origin outside: its distance to the hull
    double depth = 0.0;    ///< origin inside: its distance to the hull's boundary
    R3 normal{};           ///< origin inside: the outward normal of the nearest facet (from A to B)
};

/// Distance or penetration depth of conv(a) and conv(b) from qhull's hull of all differences a_i - b_j.
inline MinkowskiAnswer minkowskiByQhull(const std::vector<R3>& a, const std::vector<R3>& b)
{
    std::vector<coordT> coords;
    coords.reserve(a.size() * b.size() * 3);
    for (const R3& p : a)
    {
        for (const R3& q : b)
        {
            const R3 d = p - q;
            coords.insert(coords.end(), {d.x, d.y, d.z});
        }
    }
    MinkowskiAnswer answer;
    qhT storage;
    qhT* qh = &storage;
    qh_zero(qh, stderr);
    char options[] = "qhull Qt";
    const int exitCode = qh_new_qhull(qh, 3, static_cast<int>(coords.size() / 3), coords.data(), False,
                                      options, nullptr, stderr);
    if (exitCode == 0)
    {
        answer.ok = true;
        answer.originInside = true;
        answer.depth = std::numeric_limits<double>::infinity();
        answer.distance = std::numeric_limits<double>::infinity();
        facetT* facet = nullptr;
        FORALLfacets
        {
            // Outward normal n, offset o: n . x + o <= 0 inside. The origin's height above the plane is o.
            const double height = facet->offset;
            answer.originInside = answer.originInside && height < 0.0;
            if (-height < answer.depth)
            {
                answer.depth = -height;
                answer.normal = {facet->normal[0], facet->normal[1], facet->normal[2]};
            }
            R3 corner[3];
            int count = 0;
            vertexT* vertex = nullptr;
            vertexT** vertexp = nullptr;
            FOREACHvertex_(facet->vertices)
            {
                if (count < 3)
                {
                    corner[count] = {vertex->point[0], vertex->point[1], vertex->point[2]};
                }
                ++count;
            }
            if (count == 3)
            {
                answer.distance =
                    std::min(answer.distance, pointTriangleDistance(R3{}, corner[0], corner[1], corner[2]));
            }
        }
    }
    qh_freeqhull(qh, !qh_ALL);
    int curlong = 0, totlong = 0;
    qh_memfreeshort(qh, &curlong, &totlong);
    return answer;
}

/// Points of a random convex-ish cloud: `count` points in an ellipsoid with the given semi-axes.
inline std::vector<Vec3> randomCloud(std::mt19937& rng, int count, const Vec3& semiAxes)
{
    std::vector<Vec3> points;
    while (static_cast<int>(points.size()) < count)
    {
        const Vec3 p = randomVec(rng, -1.0f, 1.0f);
        if (p.x * p.x + p.y * p.y + p.z * p.z <= 1.0f)
        {
            points.push_back({p.x * semiAxes.x, p.y * semiAxes.y, p.z * semiAxes.z});
        }
    }
    return points;
}

inline std::vector<R3> placed(const std::vector<Vec3>& local, const Pose& pose)
{
    std::vector<R3> out;
    for (const Vec3& p : local)
    {
        out.push_back(pose.apply(toR3(p)));
    }
    return out;
}

/// The q-th quantile (0..1) of a sample (sorted copy).
inline double quantile(std::vector<double> values, double q)
{
    if (values.empty())
    {
        return 0.0;
    }
    std::sort(values.begin(), values.end());
    const std::size_t index =
        std::min(values.size() - 1, static_cast<std::size_t>(q * double(values.size() - 1) + 0.5));
    return values[index];
}

} // namespace convex_oracle

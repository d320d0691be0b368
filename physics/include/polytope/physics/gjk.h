// Polytope physics: GJK, the distance between two convex shapes and whether they intersect.
//
// Rationale
// - GJK (Gilbert, Johnson, Keerthi 1988) walks a simplex of Minkowski-difference points A - B toward
//   the origin. Shapes are anything with `Vec3 support(const Vec3& dir) const` (see support.h), both
//   given in the same frame, normally A's local frame with B wrapped by transformed(). GJK is a template
//   so that support calls inline; there is no allocation and no virtual call.
// - The closest point of the simplex comes from the signed-volumes sub-algorithm (Montanari, Petrinic,
//   Barbieri 2017, "Improving the GJK algorithm for faster and more reliable distance queries between
//   convex objects"): barycentric weights are ratios of signed volumes/areas, and a sub-simplex is kept
//   only where the signs say the origin projects onto it. It needs no Voronoi-region case tables, and
//   drops degenerate (flat) simplices instead of dividing by their vanishing size.
// - Arithmetic inside is double (DVec3, dvec3.h). Support points stay float (shape data is float), but
//   their difference a - b is then exact, and the determinants that decide which sub-simplex holds the
//   closest point keep their sign for slivers that float would misjudge. On x86-64 scalar double costs what
//   float does.
// - Termination (van den Bergen 2003): the support point w along -v bounds the distance from below by
//   v.w/|v|, and |v| bounds it from above; GJK stops when the two are within a tolerance relative to
//   the shapes' size (the largest support-point coordinate seen), when a support point repeats, when |v|
//   stops shrinking, or at an iteration cap. Touching within that tolerance counts as intersecting.
// - Rounded shapes (CoreWithRadius: spheres, capsules) run on their cores; the radii are subtracted at
//   the end, exactly. The final simplex is returned so that EPA (epa.h) can start from it.
#pragma once

#include "polytope/physics/dvec3.h"
#include "polytope/physics/math.h"
#include "polytope/physics/support.h"

#include <cmath>
#include <cstdint>

namespace polytope::physics
{

/// Outcome of a GJK query.
enum class GjkStatus : std::uint8_t
{
    Separated,    ///< the shapes are apart: `distance` > 0 (converged within tolerance)
    Intersecting, ///< the shapes overlap or touch within tolerance
    Indeterminate ///< no decision (iteration cap, or stalled with no proof of separation); fields are best
                  ///< effort
};

/// Tunables of GJK. The defaults suit float shape data in metres.
struct GjkSettings
{
    int maxIterations = 64;          ///< cap on support calls after the first; >= 1
    float relativeTolerance = 1e-6f; ///< distance tolerance as a fraction of the size scale, in (0, 1)
    float sizeHint = 0.0f; ///< metres, >= 0: a lower bound on the size scale (e.g. the sum of radii)
};

/// The final simplex of GJK on the cores: `count` Minkowski points pointsOnA[i] - pointsOnB[i], with the
/// barycentric weights of the closest point to the origin. In the frame of the query (A's frame).
struct GjkSimplex
{
    Vec3 pointsOnA[4];      ///< metres, support points of A's core
    Vec3 pointsOnB[4];      ///< metres, support points of B's core
    float barycentric[4]{}; ///< weights of the closest point, >= 0, sum 1
    int count = 0;          ///< 0 (not run) .. 4 (a tetrahedron around the origin)
};

/// Distance and closest points between two convex shapes, in the frame of the query (A's frame).
struct GjkResult
{
    GjkStatus status = GjkStatus::Indeterminate;
    float distance =
        0.0f; ///< metres, signed: coreDistance - radiusA - radiusB (<= 0 when touching or overlapping)
    float coreDistance = 0.0f;       ///< metres, >= 0: distance between the cores; 0 when they intersect
    float distanceErrorBound = 0.0f; ///< metres, >= 0: the true core distance is within this of coreDistance
    Vec3 normal{};   ///< unit, from A toward B (pointOnB - pointOnA = distance * normal); zero when the cores
                     ///< intersect
    Vec3 pointOnA{}; ///< metres, closest point on A (on its surface when the cores are apart)
    Vec3 pointOnB{}; ///< metres, closest point on B
    GjkSimplex simplex{};   ///< final simplex of the cores, for EPA
    float sizeScale = 0.0f; ///< metres, the length that the tolerances were relative to
    int iterations = 0;     ///< support calls made after the first
};

namespace convex_detail
{

/// max for values known not to be NaN (std::fmax is an out-of-line libm call on x86-64).
inline double maxOf(double a, double b)
{
    return a > b ? a : b;
}
inline double maxAbsComponent(const Vec3& v)
{
    return maxOf(maxOf(std::fabs(double(v.x)), std::fabs(double(v.y))), std::fabs(double(v.z)));
}

/// One Minkowski-difference point with the support points it came from.
struct SupportVertex
{
    DVec3 w;  ///< onA - onB, exact in double
    Vec3 onA; ///< support point of A
    Vec3 onB; ///< support point of B
};

/// Support of A - B along `dir` (any length > 0).
template <class A, class B> SupportVertex minkowskiSupport(const A& a, const B& b, const DVec3& dir)
{
    SupportVertex s;
    const Vec3 d = toFloat(dir);
    s.onA = a.support(d);
    s.onB = b.support(-d);
    s.w = toDouble(s.onA) - toDouble(s.onB);
    return s;
}

/// Same Minkowski point (exact comparison: the differences are exact in double).
inline bool sameSupport(const SupportVertex& p, const SupportVertex& q)
{
    return (p.w.x == q.w.x) & (p.w.y == q.w.y) & (p.w.z == q.w.z);
}

/// The closest point to the origin of a simplex, by signed volumes.
struct SimplexClosest
{
    int count;             ///< vertices of the smallest sub-simplex holding the closest point, 1..4
    int index[4];          ///< their indices into the input, increasing
    double barycentric[4]; ///< their weights, > 0, sum 1
    DVec3 closest;         ///< the closest point (the origin itself when count == 4)
    double closestSquared; ///< |closest|^2
};

/// Signed-volumes sub-algorithm on the points `w` of 1..4 vertices (gjk.cpp). Degenerate simplices
/// (coincident points, collinear triangles, flat tetrahedra) are reduced to their best non-degenerate faces.
SimplexClosest closestOnSimplex(const SupportVertex* vertices, int count);

/// Raw outcome of GJK on two cores.
struct GjkCoreResult
{
    GjkStatus status;
    bool finite;       ///< false: a support point was NaN or infinite (bad input); nothing else is meaningful
    bool beyondMargin; ///< stopped early: the distance was proven > margin
    SupportVertex vertex[4];
    double barycentric[4];
    int count;
    DVec3 closest; ///< closest point of A - B to the origin (when separated)
    double closestSquared;
    double errorBound; ///< upper minus lower bound on the distance
    double scale;      ///< size scale, metres
    int iterations;
};

/// GJK on two cores. With `earlyOut`, stops as soon as the distance is proven > margin, and also, unless
/// `convergeWithinMargin`, as soon as it is proven <= margin (with it, a distance within the margin is
/// converged, for callers that need the closest-points direction of near pairs).
template <class A, class B>
GjkCoreResult gjkOnCores(const A& a, const B& b, const Vec3& initialDirection, double margin, bool earlyOut,
                         const GjkSettings& settings, bool convergeWithinMargin = false)
{
    GjkCoreResult r;
    r.status = GjkStatus::Indeterminate;
    r.finite = true;
    r.beyondMargin = false;
    r.errorBound = 0.0;
    r.iterations = 0;

    DVec3 dir = toDouble(initialDirection);
    if (!(lengthSquared(dir) > 0.0) || !std::isfinite(lengthSquared(dir)))
    {
        dir = {1.0, 0.0, 0.0};
    }
    r.vertex[0] = minkowskiSupport(a, b, dir);
    r.barycentric[0] = 1.0;
    r.count = 1;
    r.closest = r.vertex[0].w;
    r.closestSquared = lengthSquared(r.closest);
    r.scale =
        maxOf(settings.sizeHint, maxOf(maxAbsComponent(r.vertex[0].onA), maxAbsComponent(r.vertex[0].onB)));

    const double relTol = settings.relativeTolerance;
    for (;;)
    {
        if (!std::isfinite(r.closestSquared))
        {
            r.finite = false;
            break;
        }
        const double absTol = relTol * r.scale;
        if (r.closestSquared <= absTol * absTol)
        {
            r.status = GjkStatus::Intersecting;
            break;
        }
        if (earlyOut && !convergeWithinMargin && r.closestSquared <= margin * margin)
        {
            r.status = GjkStatus::Intersecting;
            break;
        }
        if (r.iterations >= settings.maxIterations)
        {
            r.status = GjkStatus::Indeterminate;
            break;
        }
        ++r.iterations;

        const double vLength = std::sqrt(r.closestSquared);
        const SupportVertex w = minkowskiSupport(a, b, -(r.closest * (1.0 / vLength)));
        if (!std::isfinite(lengthSquared(w.w)))
        {
            r.finite = false;
            break;
        }
        r.scale = maxOf(r.scale, maxOf(maxAbsComponent(w.onA), maxAbsComponent(w.onB)));
        const double lowerBound = dot(r.closest, w.w) / vLength; // every point of A - B is at least this far
        r.errorBound = vLength - lowerBound;
        if (earlyOut && lowerBound > margin)
        {
            r.status = GjkStatus::Separated;
            r.beyondMargin = true;
            break;
        }
        if (r.errorBound <= relTol * maxOf(vLength, r.scale))
        {
            r.status = GjkStatus::Separated;
            break;
        }
        bool repeated = false;
        for (int i = 0; i < r.count; ++i)
        {
            repeated = repeated || sameSupport(w, r.vertex[i]);
        }
        if (repeated)
        {
            // No new point: |v| cannot shrink further. Separation is proven only by a positive lower bound.
            r.status = lowerBound > 0.0 ? GjkStatus::Separated : GjkStatus::Indeterminate;
            break;
        }

        r.vertex[r.count] = w;
        const SimplexClosest sub = closestOnSimplex(r.vertex, r.count + 1);
        const double previousSquared = r.closestSquared;
        for (int i = 0; i < sub.count; ++i) // in place: the indices increase
        {
            if (sub.index[i] != i)
            {
                r.vertex[i] = r.vertex[sub.index[i]];
            }
            r.barycentric[i] = sub.barycentric[i];
        }
        r.count = sub.count;
        r.closest = sub.closest;
        r.closestSquared = sub.closestSquared;
        if (sub.count == 4)
        {
            r.status = GjkStatus::Intersecting;
            r.closestSquared = 0.0;
            r.closest = {0.0, 0.0, 0.0};
            break;
        }
        if (!(r.closestSquared < previousSquared))
        {
            // No progress (rounding): keep what we have; it is an upper bound on the distance.
            r.status = lowerBound > 0.0 ? GjkStatus::Separated : GjkStatus::Indeterminate;
            break;
        }
    }
    if (!r.finite)
    {
        // Bad input (NaN or infinite coordinates): a harmless, clearly undecided answer.
        r.status = GjkStatus::Indeterminate;
        r.count = 0;
        r.closest = {0.0, 0.0, 0.0};
        r.closestSquared = 0.0;
        r.errorBound = 0.0;
        r.scale = 0.0;
    }
    else if (r.status == GjkStatus::Intersecting)
    {
        r.errorBound = std::sqrt(r.closestSquared);
    }
    return r;
}

/// Fills the public simplex from a core result.
inline void copySimplex(const GjkCoreResult& core, GjkSimplex& out)
{
    out.count = core.count;
    for (int i = 0; i < core.count; ++i)
    {
        out.pointsOnA[i] = core.vertex[i].onA;
        out.pointsOnB[i] = core.vertex[i].onB;
        out.barycentric[i] = float(core.barycentric[i]);
    }
}

/// Barycentric combination of the simplex's support points on A and on B.
inline void simplexWitnesses(const GjkCoreResult& core, Vec3& onA, Vec3& onB)
{
    DVec3 sumA{0.0, 0.0, 0.0};
    DVec3 sumB{0.0, 0.0, 0.0};
    for (int i = 0; i < core.count; ++i)
    {
        sumA = sumA + toDouble(core.vertex[i].onA) * core.barycentric[i];
        sumB = sumB + toDouble(core.vertex[i].onB) * core.barycentric[i];
    }
    onA = toFloat(sumA);
    onB = toFloat(sumB);
}

} // namespace convex_detail

/// Whether two convex shapes (supports in one frame, normally A's) overlap or touch within tolerance.
/// Rounded shapes (CoreWithRadius) are handled through their cores. Stops as soon as the answer is
/// proven, so it is cheaper than gjkClosestPoints. An Indeterminate run (iteration cap) answers true.
/// `initialDirection`: a guess of the direction from A to B, e.g. B's position in A's frame.
template <class A, class B>
bool gjkIntersect(const A& a, const B& b, const Vec3& initialDirection = {1.0f, 0.0f, 0.0f},
                  const GjkSettings& settings = {})
{
    const double margin = double(radiusOf(a)) + double(radiusOf(b));
    GjkSettings s = settings;
    s.sizeHint = float(convex_detail::maxOf(s.sizeHint, margin));
    const convex_detail::GjkCoreResult core =
        convex_detail::gjkOnCores(coreOf(a), coreOf(b), initialDirection, margin, true, s);
    if (core.status == GjkStatus::Separated)
    {
        return !core.beyondMargin && std::sqrt(core.closestSquared) <= margin;
    }
    return true; // intersecting, or undecided (iteration cap, bad input): let the caller look closer
}

/// Distance, normal and closest points between two convex shapes given in one frame (normally A's).
/// Rounded shapes (CoreWithRadius) run on their cores and have their radii subtracted; when the cores
/// are apart but the rounded shapes overlap, `distance` is the exact negated penetration depth. When the
/// cores intersect, use penetrationDepth (epa.h), which starts from `simplex`.
/// `initialDirection`: a guess of the direction from A to B, e.g. B's position in A's frame.
template <class A, class B>
GjkResult gjkClosestPoints(const A& a, const B& b, const Vec3& initialDirection = {1.0f, 0.0f, 0.0f},
                           const GjkSettings& settings = {})
{
    const float radiusA = radiusOf(a);
    const float radiusB = radiusOf(b);
    GjkSettings s = settings;
    s.sizeHint = float(convex_detail::maxOf(s.sizeHint, double(radiusA) + double(radiusB)));
    const convex_detail::GjkCoreResult core =
        convex_detail::gjkOnCores(coreOf(a), coreOf(b), initialDirection, 0.0, false, s);

    GjkResult result;
    result.iterations = core.iterations;
    if (!core.finite)
    {
        return result; // Indeterminate, zeros
    }
    result.sizeScale = float(core.scale);
    result.distanceErrorBound = float(core.errorBound);
    convex_detail::copySimplex(core, result.simplex);
    convex_detail::simplexWitnesses(core, result.pointOnA, result.pointOnB);
    if (core.status == GjkStatus::Intersecting)
    {
        result.status = GjkStatus::Intersecting;
        result.coreDistance = 0.0f;
        result.distance = -(radiusA + radiusB);
        return result;
    }
    const double coreDistance = std::sqrt(core.closestSquared);
    const DVec3 normal = core.closest * (-1.0 / coreDistance);
    result.coreDistance = float(coreDistance);
    result.distance = float(coreDistance - double(radiusA) - double(radiusB));
    result.normal = toFloat(normal);
    result.pointOnA = result.pointOnA + result.normal * radiusA;
    result.pointOnB = result.pointOnB - result.normal * radiusB;
    if (core.status == GjkStatus::Indeterminate)
    {
        result.status = GjkStatus::Indeterminate;
    }
    else
    {
        result.status = result.distance > 0.0f ? GjkStatus::Separated : GjkStatus::Intersecting;
    }
    return result;
}

} // namespace polytope::physics

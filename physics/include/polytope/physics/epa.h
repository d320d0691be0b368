// Polytope physics: EPA, penetration depth, normal and witness points of two overlapping convex shapes.
//
// Rationale
// - The Expanding Polytope Algorithm (van den Bergen 2001) grows a polytope inside the Minkowski
//   difference M = A - B, which holds the origin when the shapes overlap, until its face nearest the
//   origin is a face of M itself (to a tolerance). That face's distance is the penetration depth and its
//   outward normal the direction in which B must move to separate: the normal points from A to B.
// - It starts from GJK's final simplex. A point, segment or triangle (shapes touching within tolerance)
//   is first grown into a tetrahedron by support calls along axes perpendicular to it. If no support
//   point leaves its span, M itself is flat (two capsule cores crossing, a sphere centre on a capsule
//   axis, coincident sphere centres): the cores touch with zero depth along a normal of that span, and
//   the radii alone make up the depth.
// - Each step takes the nearest face, asks for the support point w along its normal, and stops when w
//   is no farther out than the face (within the tolerance): the true depth then lies in
//   [face distance, support distance], and that interval is reported as `depthErrorBound`. Otherwise
//   every face that w can see is removed and w is joined to the horizon, the boundary of the removed
//   faces. Before touching the polytope, the horizon is checked to be one simple closed loop (a visible
//   region that is one disc) and each new face to have a usable normal with the origin behind it. On
//   any failure (horizon not a loop, repeated support point, new face degenerate, vertex/face/iteration
//   cap) the polytope is left as it was and the best face so far, the nearest, is returned with status
//   Indeterminate unless its interval is already within the accepting tolerance. No NaN, no endless
//   loop, no allocation: vertices and faces live in fixed arrays on the stack.
// - The polytope's bookkeeping (faces with neighbour links, horizon, free list) is not a template and
//   lives in epa.cpp; only the support calls are inlined here. Arithmetic is double for the reasons
//   given in gjk.h; vertices are exact differences of float support points.
// - Rounded shapes (CoreWithRadius) run on their cores: when the cores are apart, GJK alone gives the
//   depth (radii minus core distance); when they overlap, EPA on the cores gives the core depth and the
//   radii are added (the support function of a core swept by a ball is the core's plus the radius).
#pragma once

#include "polytope/physics/gjk.h"
#include "polytope/physics/math.h"
#include "polytope/physics/support.h"

#include <cmath>
#include <cstdint>

namespace polytope::physics
{

/// Outcome of a penetration query.
enum class EpaStatus : std::uint8_t
{
    NotColliding, ///< the shapes are apart: `distance` and the closest points are valid
    Colliding,    ///< the shapes overlap or touch: depth, normal and points within `depthErrorBound`
    Indeterminate ///< overlapping (or undecided), but the answer did not converge: fields are the best face
                  ///< found
};

/// Tunables of EPA. The defaults suit float shape data in metres.
struct EpaSettings
{
    int maxIterations = 100; ///< cap on expansions; the polytope also caps vertices (128) and faces (256)
    float relativeTolerance =
        1e-6f; ///< convergence: support distance minus face distance, as a fraction of the size scale
    float acceptRelativeTolerance =
        1e-4f; ///< an unconverged stop still counts as Colliding when within this fraction
};

/// Penetration (or separation) of two convex shapes, in the frame of the query (A's frame).
struct PenetrationResult
{
    EpaStatus status = EpaStatus::Indeterminate;
    float depth =
        0.0f; ///< metres, >= 0: how far B must move along `normal` to separate (Colliding/Indeterminate)
    float distance = 0.0f; ///< metres, > 0: the gap between the shapes (NotColliding only)
    float depthErrorBound =
        0.0f; ///< metres, >= 0: the true depth (or distance) is within this of the reported one
    Vec3 normal{0.0f, 1.0f, 0.0f}; ///< unit, from A toward B
    Vec3 pointOnA{};               ///< metres: deepest point of A inside B (closest point when apart)
    Vec3 pointOnB{}; ///< metres: pointOnA - pointOnB = depth * normal; when apart pointOnB - pointOnA =
                     ///< distance * normal
    int gjkIterations = 0;
    int epaIterations = 0;
};

namespace convex_detail
{

inline constexpr int kEpaMaxVertices = 128;
inline constexpr int kEpaMaxFaces = 256;

/// One triangle of the polytope, counter-clockwise seen from outside. neighbor[e] shares the edge from
/// vertex[e] to vertex[(e + 1) % 3]; in that neighbour it is edge neighborEdge[e], running the other way.
struct EpaFace
{
    DVec3 normal;           ///< unit, outward
    double distance;        ///< signed distance of the plane from the origin, metres
    std::uint8_t vertex[3]; ///< indices into EpaPolytope::vertices
    bool alive;
    bool visible; ///< scratch for the current expansion
    std::uint16_t neighbor[3];
    std::uint8_t neighborEdge[3];
};

/// Why an expansion did not happen.
enum class EpaGrowth : std::uint8_t
{
    Expanded,
    HorizonNotLoop, ///< the faces seen from the new point do not form one disc
    DegenerateFace, ///< a new face would have no reliable normal, or the origin in front of it
    Capacity        ///< vertex or face arrays full
};

/// The polytope of EPA in fixed arrays. Deliberately left uninitialised on construction (it is ~20 KB
/// and built fresh per query): init() sets up everything that is read.
struct EpaPolytope
{
    /// A union only so that the vertices are not zeroed on construction (Vec3 zero-initialises): every
    /// entry below vertexCount is written before it is read.
    union VertexArray
    {
        SupportVertex at[kEpaMaxVertices];
        VertexArray() {}
    } vertices;
    EpaFace faces[kEpaMaxFaces];
    std::uint16_t freeFaces[kEpaMaxFaces];
    std::int16_t horizonNext[kEpaMaxVertices]; ///< scratch: horizon edge leaving each vertex, -1 for none
                                               ///< (set for [0, vertexCount))
    int vertexCount;
    int faceEnd; ///< faces[0 .. faceEnd) have been used; dead ones are on the free list
    int freeCount;

    /// Builds the tetrahedron, oriented outward. False when a face is degenerate (no reliable normal).
    bool init(const SupportVertex (&tetrahedron)[4]);
    /// Index of the alive face whose plane is nearest the origin.
    int closestFace() const;
    /// Whether the vertex is already in the polytope.
    bool contains(const SupportVertex& v) const;
    /// Whether the alive faces form a closed, consistently linked, outward-facing mesh (for tests).
    bool isClosedMesh() const;
    /// Adds `w`, seen from face `expanded` (and from every other face it is more than `tolerance` in
    /// front of), unless the repair would break the polytope; then nothing changes. On success
    /// `closest` is the new nearest face.
    EpaGrowth expand(int expanded, const SupportVertex& w, double tolerance, int& closest);
    /// The points on A and B whose difference is the origin's projection onto the plane of face `face`
    /// (found in that face, or in a neighbour tied with it within `tolerance`).
    void witnesses(int face, double tolerance, Vec3& onA, Vec3& onB) const;
};

/// `r` if every field is finite; otherwise (NaN or infinite input data) an Indeterminate result of zeros.
inline PenetrationResult finiteOrIndeterminate(const PenetrationResult& r)
{
    if (std::isfinite(r.depth) && std::isfinite(r.distance) && std::isfinite(r.depthErrorBound) &&
        isFinite(r.normal) && isFinite(r.pointOnA) && isFinite(r.pointOnB))
    {
        return r;
    }
    PenetrationResult bad;
    bad.gjkIterations = r.gjkIterations;
    bad.epaIterations = r.epaIterations;
    return bad;
}

/// Grows a simplex holding the origin (within tolerance) into a tetrahedron. False when the Minkowski
/// difference is flat (no support point leaves the simplex's span by more than `tolerance`); then
/// `flatNormal` is the tried direction along which the difference reaches least far, `flatHeight`.
template <class A, class B>
bool growToTetrahedron(const A& a, const B& b, SupportVertex (&v)[4], int& count, double tolerance,
                       DVec3& flatNormal, double& flatHeight)
{
    flatHeight = 1e300;
    flatNormal = {0.0, 1.0, 0.0};
    auto consider = [&](const DVec3& dir, const SupportVertex& s)
    {
        const double height = dot(dir, s.w);
        if (height < flatHeight)
        {
            flatHeight = height;
            flatNormal = dir;
        }
    };
    if (count == 1)
    {
        static constexpr double kAxes[6][3] = {{1, 0, 0},  {-1, 0, 0}, {0, 1, 0},
                                               {0, -1, 0}, {0, 0, 1},  {0, 0, -1}};
        double bestDistance = -1.0;
        for (const auto& axis : kAxes)
        {
            const DVec3 dir{axis[0], axis[1], axis[2]};
            const SupportVertex s = minkowskiSupport(a, b, dir);
            consider(dir, s);
            const double d = std::sqrt(lengthSquared(s.w - v[0].w));
            if (d > bestDistance)
            {
                bestDistance = d;
                v[1] = s;
            }
        }
        if (!(bestDistance > tolerance))
        {
            return false;
        }
        count = 2;
    }
    if (count == 2)
    {
        const DVec3 edge = v[1].w - v[0].w;
        const DVec3 along = edge * (1.0 / std::sqrt(lengthSquared(edge)));
        // A unit vector perpendicular to the edge, from the coordinate axis least aligned with it.
        const double ax = std::fabs(along.x), ay = std::fabs(along.y), az = std::fabs(along.z);
        const DVec3 axis =
            ax <= ay && ax <= az ? DVec3{1, 0, 0} : (ay <= az ? DVec3{0, 1, 0} : DVec3{0, 0, 1});
        DVec3 u1 = cross(along, axis);
        u1 = u1 * (1.0 / std::sqrt(lengthSquared(u1)));
        const DVec3 u2 = cross(along, u1);
        const DVec3 dirs[4] = {u1, -u1, u2, -u2};
        double bestDistance = -1.0;
        for (const DVec3& dir : dirs)
        {
            const SupportVertex s = minkowskiSupport(a, b, dir);
            consider(dir, s);
            const double d = std::sqrt(lengthSquared(cross(s.w - v[0].w, along)));
            if (d > bestDistance)
            {
                bestDistance = d;
                v[2] = s;
            }
        }
        if (!(bestDistance > tolerance))
        {
            return false;
        }
        count = 3;
    }
    if (count == 3)
    {
        DVec3 normal = cross(v[1].w - v[0].w, v[2].w - v[0].w);
        const double normalLength = std::sqrt(lengthSquared(normal));
        if (!(normalLength > 0.0))
        {
            return false;
        }
        normal = normal * (1.0 / normalLength);
        const SupportVertex up = minkowskiSupport(a, b, normal);
        const SupportVertex down = minkowskiSupport(a, b, -normal);
        consider(normal, up);
        consider(-normal, down);
        const double upDistance = dot(up.w - v[0].w, normal);
        const double downDistance = -dot(down.w - v[0].w, normal);
        if (!(maxOf(upDistance, downDistance) > tolerance))
        {
            return false;
        }
        v[3] = upDistance >= downDistance ? up : down;
        count = 4;
    }
    return true;
}

} // namespace convex_detail

/// EPA on two polytopal supports (plain, not CoreWithRadius) in one frame, starting from a GJK simplex
/// whose hull holds the origin within tolerance (GjkStatus::Intersecting on the same pair).
/// `sizeScale`: metres, the length the tolerances are relative to (GjkResult::sizeScale; the simplex's
/// coordinates are taken into account too).
template <class A, class B>
PenetrationResult epaPenetration(const A& a, const B& b, const GjkSimplex& simplex, float sizeScale,
                                 const EpaSettings& settings = {})
{
    using namespace convex_detail;
    PenetrationResult result;
    result.status = EpaStatus::Indeterminate;

    SupportVertex start[4];
    int count = simplex.count;
    DVec3 simplexOnA{0.0, 0.0, 0.0};
    DVec3 simplexOnB{0.0, 0.0, 0.0};
    double scale = sizeScale;
    for (int i = 0; i < count; ++i)
    {
        start[i].onA = simplex.pointsOnA[i];
        start[i].onB = simplex.pointsOnB[i];
        start[i].w = toDouble(start[i].onA) - toDouble(start[i].onB);
        simplexOnA = simplexOnA + toDouble(start[i].onA) * double(simplex.barycentric[i]);
        simplexOnB = simplexOnB + toDouble(start[i].onB) * double(simplex.barycentric[i]);
        scale = maxOf(scale, maxOf(maxAbsComponent(start[i].onA), maxAbsComponent(start[i].onB)));
    }
    if (count < 1 || count > 4)
    {
        start[0] = minkowskiSupport(a, b, DVec3{1.0, 0.0, 0.0});
        simplexOnA = toDouble(start[0].onA);
        simplexOnB = toDouble(start[0].onB);
        scale = maxOf(scale, maxOf(maxAbsComponent(start[0].onA), maxAbsComponent(start[0].onB)));
        count = 1;
    }
    const double tolerance = double(settings.relativeTolerance) * scale;
    const double acceptTolerance = double(settings.acceptRelativeTolerance) * scale;

    DVec3 flatNormal;
    double flatHeight;
    if (!growToTetrahedron(a, b, start, count, tolerance, flatNormal, flatHeight))
    {
        // M is flat and holds the origin: zero depth across its span.
        result.status = EpaStatus::Colliding;
        result.depth = float(maxOf(flatHeight, 0.0));
        result.depthErrorBound = float(tolerance);
        result.normal = toFloat(flatNormal);
        result.pointOnA = toFloat(simplexOnA);
        result.pointOnB = toFloat(simplexOnB);
        return finiteOrIndeterminate(result);
    }

    EpaPolytope polytope;
    if (!polytope.init(start))
    {
        result.pointOnA = toFloat(simplexOnA);
        result.pointOnB = toFloat(simplexOnB);
        return result; // Indeterminate, depth 0
    }
    int face = polytope.closestFace();
    double gap = 0.0;
    int iteration = 0;
    bool converged = false;
    for (;;)
    {
        const EpaFace& nearest = polytope.faces[face];
        const SupportVertex w = minkowskiSupport(a, b, nearest.normal);
        gap = dot(nearest.normal, w.w) - nearest.distance;
        if (gap <= tolerance)
        {
            converged = true;
            break;
        }
        if (!std::isfinite(gap))
        {
            return PenetrationResult{}; // Indeterminate, zeros: a NaN or infinite support point (bad input)
        }
        if (iteration >= settings.maxIterations || polytope.contains(w))
        {
            break;
        }
        int next = face;
        if (polytope.expand(face, w, tolerance, next) != EpaGrowth::Expanded)
        {
            break;
        }
        face = next;
        ++iteration;
    }

    const EpaFace& best = polytope.faces[face];
    result.epaIterations = iteration;
    result.status = converged || gap <= acceptTolerance ? EpaStatus::Colliding : EpaStatus::Indeterminate;
    result.depth = float(maxOf(best.distance, 0.0));
    result.depthErrorBound = float(maxOf(gap, 0.0));
    result.normal = toFloat(best.normal);
    polytope.witnesses(face, tolerance, result.pointOnA, result.pointOnB);
    return finiteOrIndeterminate(result);
}

/// Penetration depth, normal and witness points of two convex shapes given in one frame (normally A's,
/// with B wrapped by transformed()), or their distance when apart: GJK, then EPA when the shapes' cores
/// overlap. Rounded shapes (CoreWithRadius) are handled through their cores and radii.
/// `initialDirection`: a guess of the direction from A to B, e.g. B's position in A's frame.
template <class A, class B>
PenetrationResult penetrationDepth(const A& a, const B& b, const Vec3& initialDirection = {1.0f, 0.0f, 0.0f},
                                   const EpaSettings& epaSettings = {}, const GjkSettings& gjkSettings = {})
{
    using namespace convex_detail;
    const float radiusA = radiusOf(a);
    const float radiusB = radiusOf(b);
    const double radii = double(radiusA) + double(radiusB);
    GjkSettings settings = gjkSettings;
    settings.sizeHint = float(maxOf(settings.sizeHint, radii));
    const GjkCoreResult gjk = gjkOnCores(coreOf(a), coreOf(b), initialDirection, 0.0, false, settings);

    PenetrationResult result;
    result.gjkIterations = gjk.iterations;
    if (!gjk.finite)
    {
        return result; // Indeterminate, zeros: NaN or infinite input
    }
    if (gjk.status == GjkStatus::Intersecting)
    {
        GjkSimplex simplex;
        copySimplex(gjk, simplex);
        result = epaPenetration(coreOf(a), coreOf(b), simplex, float(gjk.scale), epaSettings);
        result.depth = float(double(result.depth) + radii);
        result.pointOnA = result.pointOnA + result.normal * radiusA;
        result.pointOnB = result.pointOnB - result.normal * radiusB;
        result.gjkIterations = gjk.iterations;
        return finiteOrIndeterminate(result);
    }

    // The cores are apart: GJK's closest points and normal are exact; the radii decide the rest.
    const double coreDistance = std::sqrt(gjk.closestSquared);
    result.gjkIterations = gjk.iterations;
    result.normal = toFloat(gjk.closest * (-1.0 / coreDistance));
    simplexWitnesses(gjk, result.pointOnA, result.pointOnB);
    result.pointOnA = result.pointOnA + result.normal * radiusA;
    result.pointOnB = result.pointOnB - result.normal * radiusB;
    result.depthErrorBound = float(gjk.errorBound);
    const double signedDistance = coreDistance - radii;
    if (signedDistance > 0.0)
    {
        result.status =
            gjk.status == GjkStatus::Separated ? EpaStatus::NotColliding : EpaStatus::Indeterminate;
        result.distance = float(signedDistance);
    }
    else
    {
        result.status = gjk.status == GjkStatus::Separated ? EpaStatus::Colliding : EpaStatus::Indeterminate;
        result.depth = float(-signedDistance);
    }
    return finiteOrIndeterminate(result);
}

} // namespace polytope::physics

// Polytope physics: contact manifolds between a convex shape and triangles, the building block of contacts
// with triangle meshes (triangle_mesh.h) and heightfields (heightfield.h).
//
// Roles and frames. The convex shape is A and the triangle is B, as for planes (narrowphase.h): everything
// is computed and returned in the convex shape's local frame, the normal points from the convex shape
// towards the triangle, and separation = dot(pointB - pointA, normal). The triangle is given in its own
// (mesh or heightfield) frame together with that frame's transform in the convex shape's frame, so a caller
// visiting a mesh passes the triangles as the mesh query returns them. swapManifold (manifold.h) turns a
// result round when the triangle must be A.
//
// One-sided triangles. A triangle collides only with shapes whose centre (the local origin of a sphere,
// capsule or box, the centroid of a hull) lies on its front side, or exactly in its plane; the front side
// is the one from which a, b, c run counter-clockwise (Triangle, raycast.h). This is what level geometry
// wants, and what Jolt's default (EBackFaceMode::IgnoreBackFaces) and Box2D v3's one-sided chain segments
// do: a body that has sunk more than half way into a floor is not pushed out underneath it, and walls can
// be single sheets seen from one side. The face of the triangle is only ever a contact normal from the
// front. Edges and vertices are thin, two-sided features: a shape hooked under the outer edge of a ledge
// (an active edge) is pushed down and out by it.
//
// Method. Spheres and capsules work on their cores (a point, a segment) in closed form: the exact closest
// points between the core and the triangle give the normal and separation minus the radius; a capsule
// lying along the face (within about 3 degrees, normal within about 8) gets its core clipped to the
// triangle, two points; a core that touches or crosses the triangle takes a separating-axis test (the face
// normal and the core segment crossed with each edge). Boxes and hulls take a separating-axis test over the
// triangle's face normal, the shape's face normals, and the edge pairs that pass Gregorius' Gauss-map test
// (sat.h), with the same tolerances as chooseContactAxis but a bias towards the triangle's face (so that
// flat ground gives every triangle the same normal). Then, as in collide_convex.cpp, a face of the shape
// clips the triangle against its side planes, and an edge pair gives one point. The triangle's face clips
// the shape's incident face (through its lowest vertex) against the triangle's side planes when that
// vertex lies over the triangle; when it does not (the shape hangs over an edge, or is mostly over a
// neighbour) every face of the shape's lower surface is clipped, so the points are exactly the lowest part
// of the shape over the triangle, which a single incident face can miss. A face axis that clips to nothing
// while the SAT keeps the shapes within the margin falls back to the closest points (GJK), an edge or vertex
// of the triangle subject to the internal-edge rule, never a face-normal point beside the triangle (which
// would catch a body falling past an edge). Up to four points, reduced by depth and area as the hull
// routines do. Feature ids follow manifold.h: the triangle's face is B's face 0, its edges are edge 0 (ab),
// 1 (bc), 2 (ca) and its vertices 0 (a), 1 (b), 2 (c), so ids depend only on topology and stay put while
// a contact persists.
//
// Internal edges ("ghost collisions", after Jolt's ActiveEdges and Box2D v3's smooth segments). A contact
// normal that comes from an edge or a vertex of the triangle is kept only when that feature is active;
// otherwise the triangle's face normal replaces it. Exactly:
// - face of the triangle: always kept (from the front);
// - edge k: kept when edge k is active;
// - vertex v (between edges v and v+2 mod 3, e.g. vertex a between ab and ca): kept when one of its two
//   edges is active AND the normal leans out across that edge (the normal, seen from the triangle, has a
//   positive component along that edge's outward in-plane normal). Jolt counts a vertex active when either
//   edge is; the lean test also removes bumps at the end of a flat seam whose other edge is active (a
//   vertex on the mesh boundary met from inside);
// - which feature a normal comes from: the feature found by the closest-point computation (rounded
//   shapes), the triangle edge of an edge-pair axis, or, for a face of the convex shape as the axis, the
//   triangle's vertices that are lowest along that normal (within a slope of 1e-3: three make the face, two
//   an edge, one a vertex).
// Replacing the normal means recomputing the contact along the face normal. A box or hull gets the face
// contact (its lower surface clipped to the triangle, separations as heights above it: the points lie over
// the triangle and are exact); when no part of it lies over the triangle within the margin, the triangle
// gives no contact, since an inactive edge has a neighbour whose own face contact covers that part of the
// body. A sphere or capsule keeps its core point and the true distance as separation (as Jolt keeps the
// depth), with its point on the shape moved to the support along the face normal: the height above the
// triangle's plane, measured over the neighbour, would make a body look deeper than it is wherever the
// inactive edge bends slightly convex (below the mesh's activity threshold), and on a flat seam the
// neighbour's own face contact reports that height anyway.
//
// Reduction. A body against many triangles of one mesh gets one manifold (reduceManifolds): the normal of
// the deepest point, the points of every triangle whose normal is within 45 degrees of it (separations
// measured again along that normal), and of those the deepest and the ones spanning the largest area, as
// the hull routines reduce a clipped polygon. Feature ids mix the triangle index into each point's id.
#pragma once

#include "polytope/physics/manifold.h"
#include "polytope/physics/math.h"
#include "polytope/physics/raycast.h"
#include "polytope/physics/shapes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

namespace polytope::physics
{

/// Active-edge flags with every edge active (bit 0 edge ab, bit 1 bc, bit 2 ca, as kMeshEdgeAB, kMeshEdgeBC,
/// kMeshEdgeCA of triangle_mesh.h and HeightField::activeEdges). A lone triangle has all edges active.
inline constexpr std::uint8_t kAllTriangleEdgesActive = 7;

/// The contact manifold between a convex shape A (sphere, capsule, box or hull; planes are not convex
/// shapes here and give an empty manifold) and one triangle B, in A's local frame, normal from A towards
/// the triangle (see the file comment for the one-sided rule and the internal-edge rule).
/// `hulls`: the hull catalogue, for ShapeType::Hull (Shape::hullIndex must be valid, as for collideShapes).
/// `triangleInConvex`: the transform of the triangle's frame (the mesh's or heightfield's local frame) in
/// A's frame, relativeTransform(transformA, transformMesh). `triangle`: in its own frame, counter-clockwise
/// seen from the front. `activeEdges`: bit 0 ab, bit 1 bc, bit 2 ca; kAllTriangleEdgesActive for a lone
/// triangle. Points whose separation is at most `speculativeMarginMeters` are kept, at most
/// kMaxManifoldPoints. Degenerate triangles (area below about 1e-12 of the longest edge squared), input
/// that is not finite (NaN or infinite vertices, transform or shape data) and shapes behind the triangle
/// give an empty manifold. No allocation.
ContactManifold collideConvexTriangle(const Shape& convex, std::span<const ConvexHull> hulls,
                                      const Transform& triangleInConvex, const Triangle& triangle,
                                      std::uint8_t activeEdges, float speculativeMarginMeters);

/// A cheap, conservative first test of collideConvexTriangle's plane rule, for a caller visiting many
/// triangles with one shape and one transform (a mesh or heightfield query): `apart(triangle)` is true only
/// when collideConvexTriangle(convex, hulls, triangleInConvex, triangle, any edges, margin) would certainly
/// give no points, because the shape lies behind the triangle's plane or entirely above it by more than the
/// margin, or (a sphere or capsule, whose contacts are at true distances) beyond one of its side planes by
/// more than the margin. It works in the triangle's frame with the unnormalised face normal, and its limits
/// are widened by a bound on the rounding difference to collideConvexTriangle's own tests (in the shape's
/// frame), so a triangle near a limit is left to collideConvexTriangle, which decides it exactly as without
/// this test.
class TrianglePlaneCull
{
  public:
    TrianglePlaneCull(const Shape& convex, std::span<const ConvexHull> hulls,
                      const Transform& triangleInConvex, float speculativeMarginMeters);

    bool apart(const Triangle& triangle) const
    {
        const Vec3 n = cross(triangle.b - triangle.a, triangle.c - triangle.a);
        const float n2 = lengthSquared(n);
        const Vec3 toOrigin = m_origin - triangle.a;
        const float tolerance = m_tolerance + kRelativeRounding * (maxAbs(triangle.a) + maxAbs(toOrigin));
        const float limit = m_margin + tolerance;
        // Heights times |n|: the one-sided rule's reference point, and the lowest point of the shape's core
        // (its radius is in m_margin).
        const float reference = dot(m_reference - triangle.a, n);
        const float lowest = dot(toOrigin, n) + coreSupport(m_toConvex * n);
        // reference < -tolerance |n| or lowest > limit |n|, without a square root.
        if ((reference < 0.0f && reference * reference > tolerance * tolerance * n2) ||
            (lowest > 0.0f && lowest * lowest > limit * limit * n2))
        {
            return true;
        }
        if (m_type != ShapeType::Sphere && m_type != ShapeType::Capsule)
        {
            return false;
        }
        // A sphere or capsule takes the true distance of its core to the triangle (closest points), which is
        // at least the core's distance beyond any of the triangle's side planes (out across edge j: the
        // unnormalised cross(edge j, n)).
        const float sideLimit =
            limit + kRelativeRounding * (maxAbs(triangle.b - triangle.a) + maxAbs(triangle.c - triangle.a));
        const Vec3* const corners[3] = {&triangle.a, &triangle.b, &triangle.c};
        for (int j = 0; j < 3; ++j)
        {
            const Vec3& from = *corners[j];
            const Vec3 out = cross(*corners[j == 2 ? 0 : j + 1] - from, n);
            const float beyond = dot(m_origin - from, out) - m_halfExtents.y * std::fabs(dot(m_axis, out));
            if (beyond > 0.0f && beyond * beyond > sideLimit * sideLimit * lengthSquared(out))
            {
                return true;
            }
        }
        return false;
    }

  private:
    /// A bound on the relative rounding of either path's heights (about 80 float epsilons).
    static constexpr float kRelativeRounding = 1e-5f;

    static float maxAbs(const Vec3& v)
    {
        return std::max(std::fabs(v.x), std::max(std::fabs(v.y), std::fabs(v.z)));
    }

    /// min over the points x of the shape's core (its frame) of dot(x, m).
    float coreSupport(const Vec3& m) const
    {
        switch (m_type)
        {
        case ShapeType::Capsule:
            return -m_halfExtents.y * std::fabs(m.y);
        case ShapeType::Box:
            return -(m_halfExtents.x * std::fabs(m.x) + m_halfExtents.y * std::fabs(m.y) +
                     m_halfExtents.z * std::fabs(m.z));
        case ShapeType::Hull:
        {
            float low = dot(m_vertices[0], m);
            for (std::size_t i = 1; i < m_vertices.size(); ++i)
            {
                low = std::min(low, dot(m_vertices[i], m));
            }
            return low;
        }
        default: // a sphere's core is its centre
            return 0.0f;
        }
    }

    ShapeType m_type = ShapeType::Sphere;
    Vec3 m_halfExtents{};               ///< box; a capsule's half height in y
    std::span<const Vec3> m_vertices;   ///< hull, not empty
    Mat3 m_toConvex = Mat3::identity(); ///< rotation from the triangles' frame to the shape's
    Vec3 m_origin{};                    ///< the shape's origin in the triangles' frame
    Vec3 m_axis{};                      ///< a capsule's axis (local y) in the triangles' frame
    Vec3 m_reference{};                 ///< the point of the one-sided rule (origin, or the hull's centroid)
    /// The rounding bound's part from the transform and the shape; infinite (never apart, with m_margin
    /// NaN) when the test cannot be made: not a convex shape, input not finite, a negative margin.
    float m_tolerance = std::numeric_limits<float>::infinity();
    float m_margin =
        std::numeric_limits<float>::quiet_NaN(); ///< the margin plus a sphere's or capsule's radius
};

/// One triangle's manifold (collideConvexTriangle) and the triangle's index in its mesh or heightfield.
struct TriangleContactManifold
{
    std::uint32_t triangleIndex = 0;
    ContactManifold manifold{};
};

/// Triangles whose manifold normal is within this cosine (45 degrees) of the chosen normal contribute
/// points to reduceManifolds; the others are left out, since one normal cannot hold them (a box pressed
/// into a concave corner of floor and wall). A caller that wants those contacts too reduces them apart,
/// into a second manifold.
inline constexpr float kTriangleManifoldMergeCosine = 0.70710678f;

/// The feature id of a point of triangle `triangleIndex` whose per-triangle id is `featureId`: the kind bits
/// (30..31) are kept and the rest is a hash of both, so ids differ between triangles and stay the same while
/// a point stays on its triangle. Distinct pairs collide with probability about 2^-30.
constexpr std::uint32_t combineTriangleFeatureId(std::uint32_t triangleIndex, std::uint32_t featureId)
{
    // Two rounds of the MurmurHash3 32-bit finaliser: a bijection each, so only the mixing can collide.
    const auto mix = [](std::uint32_t h)
    {
        h ^= h >> 16;
        h *= 0x85EBCA6Bu;
        h ^= h >> 13;
        h *= 0xC2B2AE35u;
        h ^= h >> 16;
        return h;
    };
    const std::uint32_t h = mix(featureId + mix(triangleIndex + 0x9E3779B9u));
    return (featureId & 0xC0000000u) | (h & 0x3FFFFFFFu);
}

/// Merges the manifolds of one body against several triangles of one mesh (all in the body's frame, as
/// collideConvexTriangle returns them) into `out`, one manifold of at most kMaxManifoldPoints points.
/// The normal is that of the deepest point (the first such on exact ties, in the order given): it is the
/// direction along which the deepest penetration is resolved exactly; on flat ground the internal-edge rule
/// has already given every triangle the same face normal, and across a real crease an average would point
/// along neither face and under-report the deepest point's depth. Points of manifolds whose normal is
/// within kTriangleManifoldMergeCosine of it are candidates, with their separation measured along the
/// chosen normal (dot(pointB - pointA, normal); unchanged for triangles with that very normal). Of these
/// the subset keeps the deepest (of those within 0.5 mm of it, the one farthest from the candidates'
/// centroid), the one farthest from it, the one spanning the largest triangle with those and the one adding
/// the most area (as the hull routines reduce a clipped face), so a box on a tessellated floor keeps its
/// four corners. Duplicates from neighbouring triangles (a corner on a seam) add no area and go; of copies
/// tied up to rounding, the deeper is kept. Feature
/// ids are combineTriangleFeatureId(triangleIndex, id). No candidates give pointCount 0. Deterministic for
/// a given order of `candidates`; no allocation.
void reduceManifolds(std::span<const TriangleContactManifold> candidates, ContactManifold& out);

} // namespace polytope::physics

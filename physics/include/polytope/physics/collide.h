// Polytope physics: narrowphase routines that build contact manifolds.
//
// Every routine is a pure function of (shape A, shape B, B's transform in A's frame, speculative margin)
// and returns a ContactManifold in A's frame whose normal points from A to B. Points whose separation is
// at most `speculativeMarginMeters` are kept (so the solver can make speculative contacts before shapes
// touch); pointCount == 0 means the shapes are farther apart than that. No routine allocates.
//
// Convex polyhedra (boxes, hulls) go through SAT (sat.h; for hulls, searched near the GJK/EPA direction)
// and then clip B's incident face against A's reference face or the other way round (collide_convex.cpp);
// rounded shapes and planes have closed forms (collide_round.cpp). A dispatcher serves the mirrored pairs
// (box-sphere, ...) with swapManifold.
#pragma once

#include "polytope/physics/manifold.h"
#include "polytope/physics/math.h"
#include "polytope/physics/sat.h"
#include "polytope/physics/shapes.h"

namespace polytope::physics
{

// --- Convex polyhedra: SAT + clipping (collide_convex.cpp) ---

/// Box A against box B: 15-axis SAT, then face clipping (up to 4 points) or one edge-edge point.
ContactManifold collideBoxBox(const BoxShape& a, const BoxShape& b, const Transform& bInA,
                              float speculativeMarginMeters);

/// Hull A against hull B: GJK (apart) or EPA (overlapping) for the contact direction, SAT near it
/// (satHullsNear, same axes and face bias as satHulls up to near-ties), then face clipping or one edge-edge
/// point. Hulls without adjacency (see buildHullAdjacency) take the exhaustive satHulls.
ContactManifold collideHullHull(const ConvexHull& a, const ConvexHull& b, const Transform& bInA,
                                float speculativeMarginMeters);

/// Box A against hull B (the box is treated as a hull without allocating), as collideHullHull.
ContactManifold collideBoxHull(const BoxShape& a, const ConvexHull& b, const Transform& bInA,
                               float speculativeMarginMeters);

/// Hull A against box B.
ContactManifold collideHullBox(const ConvexHull& a, const BoxShape& b, const Transform& bInA,
                               float speculativeMarginMeters);

/// Any two polyhedra given as views, with a SAT result for them that was computed by satHulls or satBoxes
/// with the same maxSeparation; builds the manifold on `sat.chosen`. When clipping on a chosen face leaves
/// no point, another axis of `sat` replaces it only if nearly as good by chooseContactAxis's tolerances (the
/// other face, then the edge pair); failing that, the one point is the incident shape's deepest vertex
/// along the face normal. The deepest point is thus never deeper than the face bias allows. Exposed for
/// callers that cache or inspect the SAT step.
ContactManifold manifoldFromSat(const HullView& a, const HullView& b, const Transform& bInA,
                                const SatResult& sat, float speculativeMarginMeters);

/// Box A against plane B: the box's corners within the margin, at most 4 (deepest first, then widest).
ContactManifold collideBoxPlane(const BoxShape& a, const PlaneShape& b, const Transform& bInA,
                                float speculativeMarginMeters);

/// Hull A against plane B: the hull's vertices within the margin, at most 4 (deepest first, then widest).
ContactManifold collideHullPlane(const ConvexHull& a, const PlaneShape& b, const Transform& bInA,
                                 float speculativeMarginMeters);

// --- Rounded shapes: closed forms (collide_round.cpp) ---
//
// A capsule's contact point is a point of its core segment pushed out by the radius along the normal: it
// lies on the sphere of that radius about the core point. That is the capsule's surface, except for the
// shallower of two points of a slightly tilted capsule (lying on a face or on another capsule), which lies
// just inside it; its separation is still measured along the normal, which is what the solver uses.

ContactManifold collideSphereSphere(const SphereShape& a, const SphereShape& b, const Transform& bInA,
                                    float speculativeMarginMeters);

ContactManifold collideSphereCapsule(const SphereShape& a, const CapsuleShape& b, const Transform& bInA,
                                     float speculativeMarginMeters);

/// Two points when the core segments are nearly parallel and overlap along their length (capsules lying
/// side by side), else one.
ContactManifold collideCapsuleCapsule(const CapsuleShape& a, const CapsuleShape& b, const Transform& bInA,
                                      float speculativeMarginMeters);

ContactManifold collideSphereBox(const SphereShape& a, const BoxShape& b, const Transform& bInA,
                                 float speculativeMarginMeters);

/// Two points when the capsule lies against a face of the box (its core segment clipped to the face), else
/// one at the closest points (or, when the core segment enters the box, on the least-penetration axis).
ContactManifold collideCapsuleBox(const CapsuleShape& a, const BoxShape& b, const Transform& bInA,
                                  float speculativeMarginMeters);

ContactManifold collideSpherePlane(const SphereShape& a, const PlaneShape& b, const Transform& bInA,
                                   float speculativeMarginMeters);

/// Up to two points: the ends of the core segment.
ContactManifold collideCapsulePlane(const CapsuleShape& a, const PlaneShape& b, const Transform& bInA,
                                    float speculativeMarginMeters);

// --- Geometry shared by the routines ---

/// Closest points between segments [p0, p1] and [q0, q1]: parameters s, t in [0, 1] along each.
struct SegmentClosestPoints
{
    float s = 0.0f;
    float t = 0.0f;
    Vec3 onP{}; ///< p0 + s (p1 - p0)
    Vec3 onQ{}; ///< q0 + t (q1 - q0)
};

/// Robust for degenerate (point-like) and parallel segments; for parallel overlapping segments it returns
/// one of the (equally close) pairs.
SegmentClosestPoints closestPointsOnSegments(const Vec3& p0, const Vec3& p1, const Vec3& q0, const Vec3& q1);

} // namespace polytope::physics

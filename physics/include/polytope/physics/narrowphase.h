// Polytope physics: the narrowphase dispatch, one routine per pair of shape types.
//
// collideShapes picks the routine for (type of A, type of B) from a table of plain function pointers
// (kShapeTypeCount x kShapeTypeCount), after Box2D's b2_registers: no virtual calls. Every routine works
// in A's local frame with B's transform relative to A, so precision does not depend on the distance from
// the world origin. Pairs whose routine exists only the other way round (box-sphere, plane-anything, ...)
// are computed as (B, A) and mirrored with swapManifold. Plane-plane has no routine: planes are static, and
// static pairs are never tested.
//
// Rounded shapes against hulls have no closed form: GJK on the cores (the sphere's centre, the capsule's
// segment) against the hull gives the closest points while the core is outside, and EPA the penetration
// once it enters (epa.h). A capsule lying along a hull face gets two points, its core segment clipped to
// the face's side planes, like collideCapsuleBox; otherwise one point.
#pragma once

#include "polytope/physics/manifold.h"
#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <span>

namespace polytope::physics
{

/// Sphere A against convex hull B: one point from GJK (core outside) or EPA (core inside).
ContactManifold collideSphereHull(const SphereShape& a, const ConvexHull& b, const Transform& bInA,
                                  float speculativeMarginMeters);

/// Capsule A against convex hull B: two points when the capsule lies along a face of the hull (within
/// about 3 degrees), else one point from GJK/EPA on the core segment.
ContactManifold collideCapsuleHull(const CapsuleShape& a, const ConvexHull& b, const Transform& bInA,
                                   float speculativeMarginMeters);

/// Whether two shapes of these types can make contact: false for two of plane, mesh and heightfield (level
/// geometry, never dynamic) and for types out of range. Pairs of primitives (Sphere .. Plane) are served by
/// collideShapesLocal; pairs with a compound, mesh or heightfield by collideComposite (collide_composite.h).
bool canCollide(ShapeType a, ShapeType b);

/// The contact manifold of shapes A and B, in A's local frame (normal from A to B), with every point whose
/// separation is at most `speculativeMarginMeters`. `bInA` is B's transform in A's frame
/// (relativeTransform(transformA, transformB)). Hull shapes are looked up in `hulls` by Shape::hullIndex;
/// the caller guarantees the index is valid (the World validates shapes at creation). A pair without a
/// routine in the table (plane-plane, and any compound, mesh or heightfield: see collide_composite.h)
/// gives an empty manifold.
ContactManifold collideShapesLocal(const Shape& a, const Shape& b, const Transform& bInA,
                                   float speculativeMarginMeters, std::span<const ConvexHull> hulls);

/// Same as collideShapesLocal, from the two world transforms.
inline ContactManifold collideShapes(const Shape& a, const Transform& transformA, const Shape& b,
                                     const Transform& transformB, float speculativeMarginMeters,
                                     std::span<const ConvexHull> hulls)
{
    return collideShapesLocal(a, b, relativeTransform(transformA, transformB), speculativeMarginMeters,
                              hulls);
}

} // namespace polytope::physics

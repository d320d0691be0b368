// Polytope physics: shape casts (sweeps), the first time of impact of a translating convex shape.
//
// A cast moves a convex shape (sphere, capsule, box or hull) without rotation from its start pose along a
// translation, and asks for the smallest fraction in [0, maxFraction] at which it touches a target shape
// (sphere, capsule, box, hull or plane; or a triangle, castShapeTriangle) held still. It is a pure function
// of the two shapes and their poses, like the narrowphase; the world's sweep queries and continuous collision
// build on it.
//
// Conventions (compare raycast.h, of which this is the generalisation to shapes):
// - Solids are closed sets: touching counts. A hit reports the fraction, a contact point on the target's
//   surface and the unit normal there pointing from the target toward the moving shape (the direction in
//   which to push the moving shape out), all in the world frame.
// - Starts: shapes that intersect at fraction 0 (overlap, or touch within GJK's tolerance, as
//   penetrationDepth in epa.h judges; for a plane, the deepest point on or below it) give a hit at fraction 0
//   with startPenetrating set and EPA's depth (>= 0), normal and deepest point of the target. Shapes apart
//   at fraction 0 by at most the tolerance below give a hit at fraction 0 with startPenetrating clear and
//   depth 0. Both hold whatever the translation, even one moving the shapes apart.
// - A zero translation (or maxFraction 0) is an overlap test: a hit only when the shapes overlap or touch.
// - Misses, and invalid input, return false and leave the output untouched. Invalid input: a NaN or
//   infinite pose, translation or maxFraction, a negative maxFraction, a zero quaternion, a moving plane,
//   shape sizes that are NaN, infinite, <= 0 or above kMaxShapeSizeMeters (mass.h), a hull index outside
//   `hulls`, a hull with no vertices or a non-finite one, a zero or non-finite plane normal or offset, and
//   hits whose point overflows float.
//
// Tolerance and accuracy. Let the size scale s be the larger bounding radius of the two shapes about their
// local origins, radii included (at least 1e-6 m), and tol = kShapeCastRelativeTolerance * s: 1e-5 m for
// 10 m shapes, 5e-8 m for 5 cm ones.
// - Misses are proven: the sweep never reaches a plane that separates the shapes, within maxFraction. A
//   sweep whose shapes never come within tol of each other is not a hit, unless GJK stalls on rounding or
//   meets its iteration cap (not seen in testing), which ends the cast with a hit where it stands.
// - The fraction is a lower bound on the exact time of impact: the cast advances conservatively, in
//   double, and the result is rounded down to float. At it the shapes are apart by at most tol; in
//   practice by about 1e-12 of the coordinates' magnitude (|start offset| + |translation| + s). So the
//   fraction is exact up to float rounding, except where the shapes close at a grazing angle, where a
//   distance error d is worth d / (closing speed along the normal) of fraction. Measured against bisection
//   oracles: within 5e-7 of the exact fraction on sweeps of metres, 6e-5 m on 2e3 m sweeps (the float
//   fraction's resolution there), 6e-8 against sphere-sphere and plane closed forms.
// - The point is on the target's surface, and the normal is the direction between the closest features,
//   both exact to double rounding before they are rounded to float; where polytopes touch at an edge or
//   vertex of their Minkowski difference, the normal is that of a plane separating them at the contact, one
//   of several valid ones.
//
// The algorithm is the GJK ray cast of van den Bergen (2004, "Ray Casting against General Convex Objects
// with Application to Continuous Collision Detection"), run on the shapes' cores in the target's local
// frame; see shape_cast.cpp for the rationale. Planes have a closed form. Nothing allocates; the function
// is reentrant (no shared state).
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/raycast.h"
#include "polytope/physics/shapes.h"

#include <limits>
#include <span>

namespace polytope::physics
{

/// The relative tolerance of shape casts: distances within this times the size scale count as touching
/// (see the file comment).
inline constexpr float kShapeCastRelativeTolerance = 1e-6f;

/// A convex shape translated (not rotated) from `start` by `translation`: it is at pose
/// {start.p + t * translation, start.q} at fraction t, for t in [0, maxFraction].
struct ShapeCastInput
{
    Shape shape{};            ///< sphere, capsule, box or hull (a plane cannot move)
    Transform start{};        ///< world pose at fraction 0 (unit quaternion)
    Vec3 translation{};       ///< metres, world frame: the displacement at fraction 1
    float maxFraction = 1.0f; ///< the largest fraction reported, >= 0
};

/// The first contact of a shape cast.
struct ShapeCastHit
{
    float fraction = 0.0f;         ///< time of impact, in [0, maxFraction], rounded down to float
    Vec3 point{};                  ///< metres, world frame: contact point on the target's surface
    Vec3 normal{0.0f, 1.0f, 0.0f}; ///< unit, world frame: from the target toward the moving shape
    float penetrationDepth = 0.0f; ///< metres, >= 0: the overlap at the start (startPenetrating only)
    bool startPenetrating = false; ///< the shapes overlap at fraction 0 (the fraction is then 0)
    int iterations = 0;            ///< support calls made by the cast (0 for planes), for profiling and tests
};

/// Casts `moving` against `target` at `targetTransform`: the first time of impact in [0, maxFraction], the
/// contact point and the normal (see the file comment for the conventions and the tolerance). Hull shapes
/// (moving or target) are looked up in `hulls` by Shape::hullIndex. Returns false on a miss or invalid
/// input, leaving `hit` untouched.
bool castShape(const ShapeCastInput& moving, const Shape& target, const Transform& targetTransform,
               std::span<const ConvexHull> hulls, ShapeCastHit& hit);

/// Casts `moving` against one triangle (a mesh's or heightfield's; see triangle_mesh.h, heightfield.h),
/// both faces: the triangle is a flat convex set with no inside, as rayTriangle (raycast.h) sees it, and
/// the normal of a hit on its face points toward the side the moving shape comes from. `triangle` is given
/// in the frame that `triangleTransform` places in the world (the mesh's or heightfield's body transform).
/// Conventions and accuracy are castShape's, with the triangle's bounding radius taken about its centroid
/// and the cast run in a frame centred there, so triangles far from their mesh's origin are cast as
/// precisely as near ones. A start touching or overlapping the triangle gets EPA's depth and normal: the
/// shortest way out, through either face or past an edge. A zero-area triangle is cast as the segment or
/// point it is.
/// `cutoffFraction` (>= 0, may be infinite): a caller that already holds a hit at some fraction passes it
/// here, and the cast gives up as soon as it is proven to touch no earlier: a hit whose fraction would
/// exceed the cutoff is a miss, and every other hit is exactly the one the cast without the cutoff reports
/// (lowering maxFraction instead would change the tolerances of casts with maxFraction above 1).
/// Returns false on a miss or invalid input (castShape's, plus a NaN or infinite vertex or a NaN or
/// negative cutoff), leaving `hit` untouched.
bool castShapeTriangle(const ShapeCastInput& moving, const Triangle& triangle,
                       const Transform& triangleTransform, std::span<const ConvexHull> hulls,
                       ShapeCastHit& hit, float cutoffFraction = std::numeric_limits<float>::infinity());

} // namespace polytope::physics

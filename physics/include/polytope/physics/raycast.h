// Polytope physics: rays against single shapes, in the shape's local frame.
//
// A ray is a segment: origin + t * translation for t in [0, maxFraction] (Box2D's b2RayCastInput), so a
// query carries its own length and "closest hit" is the smallest t. Every routine here is a pure function
// of one shape and one ray given in that shape's local frame; the world's queries (world queries, meshes,
// heightfields) transform the ray once and call these.
//
// Conventions shared by every routine:
// - A hit reports the fraction t, the point (origin + t * translation) and the unit surface normal there,
//   pointing out of the solid (for a triangle: against the ray, see rayTriangle).
// - Solids (sphere, capsule, box, hull, the plane's half-space) are closed sets: touching counts. The hit
//   is the smallest t in [0, maxFraction] at which the segment is in the solid. So a ray tangent to a
//   sphere or capsule hits at the tangent point; a ray through an edge or corner of a box or hull hits
//   there; a ray lying in the plane of a face (parallel to it, on it) hits where it enters the face's
//   closure, with the normal of the face it crosses there. Which side a ray within rounding of such a
//   contact falls on is decided in double precision (about 1e-15 of the shape's size).
// - A ray that starts strictly inside a solid hits at t = 0 with the normal opposite to the ray's direction,
//   -normalize(translation) (Jolt's and Box2D's "initial overlap": the caller sees the start is inside). A
//   ray that starts exactly on the surface hits at t = 0 with the surface normal there, whatever its
//   direction (closed sets: the start touches).
// - A zero-length ray (translation exactly 0) hits only when its origin is in the solid (inside or on the
//   surface), at t = 0, with the outward normal of the surface point nearest to the origin: the shortest
//   way out. Each routine documents how it breaks ties (the centre of a sphere, say).
// - Invalid input returns false and never traps: a NaN or infinite origin, translation or maxFraction, a
//   negative maxFraction, or shape data that is NaN, infinite or out of range (radius <= 0, a negative
//   half extent or half height, a hull with no faces, a zero plane normal). So does a hit whose point
//   overflows float (only a plane, hit by a ray reaching past 3e38 m, can do that).
// - Precision: the solids are solved in double, from the float inputs (exact in double). The fraction is
//   then rounded to float; the point is computed from the unrounded fraction, so it lies on the surface to
//   float precision of its own coordinates even when the origin is far away (long rays).
// - Misses return false and leave the output untouched. Nothing allocates.
#pragma once

#include "polytope/physics/dvec3.h"
#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <span>

namespace polytope::physics
{

/// A ray (segment) in some frame: points origin + t * translation, t in [0, maxFraction].
struct RayCastInput
{
    Vec3 origin{};            ///< metres
    Vec3 translation{};       ///< metres: the ray's direction times its length (need not be unit)
    float maxFraction = 1.0f; ///< the largest t reported, >= 0
};

/// Where a ray meets a shape.
struct RayCastHit
{
    float fraction = 0.0f; ///< t of the hit, in [0, maxFraction]
    Vec3 point{};          ///< metres, same frame as the ray
    Vec3 normal{};         ///< unit, same frame as the ray, out of the surface
};

/// A triangle with counter-clockwise vertices seen from its front: the front normal is
/// normalize(cross(b - a, c - a)).
struct Triangle
{
    Vec3 a{};
    Vec3 b{};
    Vec3 c{};
};

/// Ray against a triangle, both faces (a triangle has no inside). The triangle is closed: rays through an
/// edge or a vertex hit. The normal reported faces the ray's origin: the front normal when the ray comes
/// from the front, its opposite otherwise; `backFace` tells which. A ray lying in the triangle's plane, or
/// within about 1e-6 rad of it (edge-on), does not hit, and neither does a zero-length ray. Degenerate
/// (zero-area) triangles never hit.
bool rayTriangle(const Triangle& triangle, const RayCastInput& ray, RayCastHit& hit,
                 bool* backFace = nullptr);

/// A ray checked and converted to double once, for testing it against many triangles (meshes and
/// heightfields walk their trees with one).
struct TriangleRay
{
    DVec3 origin{};
    DVec3 translation{};
    double length = 0.0;      ///< |translation|, metres
    double maxFraction = 0.0; ///< finite, >= 0
    bool valid = false;       ///< false for NaN or infinite input or a negative maxFraction: hits nothing
};
TriangleRay prepareTriangleRay(const RayCastInput& ray);

/// rayTriangle with a prepared ray: the same answers, bit for bit. Precondition: the triangle's vertices
/// are finite (checked by the mesh and heightfield builders).
bool rayTrianglePrepared(const Triangle& triangle, const TriangleRay& ray, RayCastHit& hit,
                         bool* backFace = nullptr);

/// Ray against a solid sphere of `sphere.radius` metres about the local origin. Returns true and fills
/// `hit` (fraction in [0, maxFraction], point in metres, unit outward normal) when the segment touches the
/// ball. A zero-length ray inside reports normalize(origin), or +y at the exact centre.
bool raySphere(const SphereShape& sphere, const RayCastInput& ray, RayCastHit& hit);

/// Ray against a solid capsule (the y-axis segment of half length `halfHeight` swept by `radius`, metres;
/// halfHeight 0 is a sphere). Returns true and fills `hit` as raySphere does; the normal is radial on the
/// cylinder and points from the cap's centre on the end caps. A zero-length ray inside reports the
/// direction from the nearest point of the core segment to the origin, or +x when the origin is on it.
bool rayCapsule(const CapsuleShape& capsule, const RayCastInput& ray, RayCastHit& hit);

/// Ray against a solid box (half extents in metres, each >= 0), by the slab method. Returns true and fills
/// `hit`; the normal is the axis of the face entered (at an edge or corner, where several faces are entered
/// at the same fraction, the first of x, y, z). A zero-length ray inside reports the normal of the nearest
/// face (ties: the first axis; origin coordinate 0 on that axis: the + face).
bool rayBox(const BoxShape& box, const RayCastInput& ray, RayCastHit& hit);

/// Ray against a solid convex hull, clipped against its face planes (the solid is the intersection of the
/// half-spaces dot(face.normal, x) <= face.offset). Returns true and fills `hit`; the normal is the normal
/// of the face entered (ties: the lowest face index). A zero-length ray inside reports the normal of the
/// face whose plane is nearest (ties: the lowest face index). Cost: two passes over the faces.
bool rayHull(const ConvexHull& hull, const RayCastInput& ray, RayCastHit& hit);

/// Ray against the half-space dot(plane.normal, x) <= plane.offset. Returns true and fills `hit`; the
/// normal is plane.normal, normalised. A ray parallel to the plane and outside it misses; one lying on it
/// hits at t = 0. A zero-length ray inside reports plane.normal.
bool rayPlane(const PlaneShape& plane, const RayCastInput& ray, RayCastHit& hit);

/// Ray against a primitive shape (sphere .. plane), dispatched on shape.type. Hull shapes use
/// hulls[shape.hullIndex] (the world's hull catalogue); an index out of range returns false, and so do
/// compounds, meshes and heightfields, whose geometry only the World's queries see.
bool rayShape(const Shape& shape, const RayCastInput& ray, std::span<const ConvexHull> hulls,
              RayCastHit& hit);

} // namespace polytope::physics

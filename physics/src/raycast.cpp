// Rays against single shapes (raycast.h).
//
// Rationale
// - Every solid is solved in double from the float inputs, which double holds exactly: differences of
//   float coordinates and the products in dot and cross products are then exact or nearly so, and the
//   decisions that matter (inside or not, tangent or not, which slab is entered last) keep their sign for
//   rays far longer than the shape (1e4 m rays against 1 m shapes) and far shorter (1e-4 m).
// - Quadratics (sphere, the capsule's cylinder and caps) are solved relative to the closest point of the
//   line to the centre (or axis), after Box2D v3's b2RayCastCircle, with two further steps against
//   cancellation: the line's distance from the centre comes from a cross product, not from
//   |s|^2 - dot(s, u)^2, and the near root comes from the product of the roots, (|s|^2 - r^2) / far root,
//   where far root = halfChord - dot(s, u) is a sum of two non-negative terms. |s|^2 - r^2 is formed
//   directly: the squares of float coordinates are exact in double, so it is exact or nearly so, and
//   exactly tangent rays with exact inputs give exact tangent points.
// - Capsule: its points with |y| <= halfHeight are those of the infinite cylinder of its radius, and its
//   points with y >= halfHeight (<= -halfHeight) are those of its top (bottom) ball. A ray from outside
//   first meets the capsule where it enters the infinite cylinder if that entry has |y| <= halfHeight;
//   otherwise (the entry, or the origin when it is already within the cylinder, is above or below) it can
//   only meet the capsule on that side's ball first, so one ball test settles it.
// - Box and hull: Cyrus-Beck clipping of the segment by the slabs or face planes, with the origin's
//   inside/on/outside status settled first from its signed distances, so that the start-inside and
//   zero-length conventions of raycast.h come from one place per shape.
#include "polytope/physics/raycast.h"

#include "polytope/physics/dvec3.h"

#include <cassert>
#include <cmath>
#include <cstddef>

namespace polytope::physics
{

namespace
{

/// A validated ray in double precision.
struct Ray64
{
    DVec3 origin;
    DVec3 translation;
    double length;      ///< |translation|, metres; 0 for a zero-length ray
    double maxFraction; ///< finite, >= 0
};

/// Converts `in`; false for NaN or infinite input or a negative maxFraction.
bool prepareRay(const RayCastInput& in, Ray64& ray)
{
    if (!isFinite(in.origin) || !isFinite(in.translation) || !std::isfinite(in.maxFraction) ||
        !(in.maxFraction >= 0.0f))
    {
        return false;
    }
    ray.origin = toDouble(in.origin);
    ray.translation = toDouble(in.translation);
    ray.length = length(ray.translation); // no overflow: float squares are far inside double's range
    ray.maxFraction = in.maxFraction;
    return true;
}

/// Fills `hit` for fraction t (in [0, maxFraction]) and outward direction `normal` (any length > 0).
/// False, leaving `hit` alone, when the point overflows float or the normal is zero (bad shape data).
bool writeHit(const Ray64& ray, double t, const DVec3& normal, RayCastHit& hit)
{
    const Vec3 point = toFloat(ray.origin + ray.translation * t);
    const double normalLength = length(normal);
    if (!isFinite(point) || !(normalLength > 0.0))
    {
        return false;
    }
    hit.fraction = float(t); // rounding is monotonic and maxFraction is a float: stays <= maxFraction
    hit.point = point;
    hit.normal = toFloat(normal * (1.0 / normalLength));
    return true;
}

/// The hit of a ray whose origin is in the closed solid: t = 0. `inside` (strictly) gives the normal
/// -translation, or `nearestNormal` (the way out, any length > 0) for a zero-length ray; on the surface
/// `nearestNormal` is the surface normal.
bool writeStartHit(const Ray64& ray, bool inside, const DVec3& nearestNormal, RayCastHit& hit)
{
    const bool againstRay = inside && ray.length > 0.0;
    return writeHit(ray, 0.0, againstRay ? -ray.translation : nearestNormal, hit);
}

/// Distance along the unit direction `u` from the point `s` (relative to a ball's centre), strictly
/// outside the ball of radius r, to where the line through it enters the ball; false when that is never
/// at a distance >= 0. Tangent lines (distance to the centre == r) enter at the tangent point.
bool ballEntry(const DVec3& s, const DVec3& u, double r, double& entry)
{
    const double along = dot(s, u); // the closest point of the line is at distance -along
    if (!(along < 0.0))
    {
        return false; // heading away from the centre (or across it) from outside: both roots are <= 0
    }
    const double offCentre = length(cross(s, u));
    if (offCentre > r)
    {
        return false;
    }
    const double halfChord = std::sqrt((r - offCentre) * (r + offCentre));
    entry = (lengthSquared(s) - r * r) / (halfChord - along);
    return true;
}

/// NaN and infinity fail every ordered comparison: the shape checks below are written to reject them.
bool positiveFinite(float v)
{
    return v > 0.0f && std::isfinite(v);
}
bool nonNegativeFinite(float v)
{
    return v >= 0.0f && std::isfinite(v);
}

} // namespace

TriangleRay prepareTriangleRay(const RayCastInput& input)
{
    TriangleRay out;
    Ray64 ray;
    if (prepareRay(input, ray))
    {
        out = {ray.origin, ray.translation, ray.length, ray.maxFraction, true};
    }
    return out;
}

bool rayTriangle(const Triangle& triangle, const RayCastInput& input, RayCastHit& hit, bool* backFace)
{
    if (!isFinite(triangle.a) || !isFinite(triangle.b) || !isFinite(triangle.c))
    {
        return false;
    }
    return rayTrianglePrepared(triangle, prepareTriangleRay(input), hit, backFace);
}

bool rayTrianglePrepared(const Triangle& triangle, const TriangleRay& ray, RayCastHit& hit, bool* backFace)
{
    // Moeller-Trumbore in the triangle's own terms: solve origin + t d = a + u e1 + v e2 by Cramer's rule.
    // The determinant is the triple product (d, e1, e2) = -dot(d, e1 x e2), so its sign says from which
    // side the ray comes and its size, relative to |d| |e1 x e2|, how far from edge-on the ray is. In
    // double, like the solids: in float, 1e4 m rays' barycentrics on metre-sized triangles were off by up
    // to 7e-3 (cancellation in the triple products), and a NaN origin slipped through every comparison.
    // The cheap rejections (outside the triangle, outside [0, maxFraction]) come first; the degenerate
    // and edge-on tests, which need the normal's length, only for rays that pass them. A zero determinant
    // (edge-on exactly, or zero area) gives an infinite or NaN u, which the first rejection catches.
    assert(isFinite(triangle.a) && isFinite(triangle.b) && isFinite(triangle.c));
    if (!ray.valid || !(ray.length > 0.0))
    {
        return false;
    }
    const DVec3 a = toDouble(triangle.a);
    const DVec3 e1 = toDouble(triangle.b) - a;
    const DVec3 e2 = toDouble(triangle.c) - a;
    const DVec3& d = ray.translation;
    const DVec3 p = cross(d, e2);
    const double det = dot(e1, p);
    const double invDet = 1.0 / det;
    const DVec3 s = ray.origin - a;
    const double u = dot(s, p) * invDet;
    if (!(u >= 0.0 && u <= 1.0))
    {
        return false;
    }
    const DVec3 q = cross(s, e1);
    const double v = dot(d, q) * invDet;
    if (!(v >= 0.0 && u + v <= 1.0))
    {
        return false;
    }
    const double t = dot(e2, q) * invDet;
    if (!(t >= 0.0 && t <= ray.maxFraction))
    {
        return false;
    }
    const DVec3 normal = cross(e1, e2);
    const double area2 = length(normal);
    // Degenerate, or edge-on (within about 1e-6 rad of the plane): no hit, as the header says.
    if (!(area2 > 0.0) || std::fabs(det) <= 1.0e-6 * area2 * ray.length)
    {
        return false;
    }
    const bool fromBehind = det < 0.0; // dot(normal, d) > 0
    const Ray64 ray64{ray.origin, ray.translation, ray.length, ray.maxFraction};
    if (!writeHit(ray64, t, fromBehind ? -normal : normal, hit))
    {
        return false;
    }
    if (backFace != nullptr)
    {
        *backFace = fromBehind;
    }
    return true;
}

bool raySphere(const SphereShape& sphere, const RayCastInput& input, RayCastHit& hit)
{
    Ray64 ray;
    if (!positiveFinite(sphere.radius) || !prepareRay(input, ray))
    {
        return false;
    }
    const double r = sphere.radius;
    const double rr = r * r; // exact
    const double ss = lengthSquared(ray.origin);
    if (ss <= rr)
    {
        const DVec3 out = ss > 0.0 ? ray.origin : DVec3{0.0, 1.0, 0.0};
        return writeStartHit(ray, ss < rr, out, hit);
    }
    if (ray.length == 0.0)
    {
        return false;
    }
    double entry = 0.0;
    if (!ballEntry(ray.origin, ray.translation * (1.0 / ray.length), r, entry))
    {
        return false;
    }
    const double t = entry / ray.length;
    if (!(t <= ray.maxFraction))
    {
        return false;
    }
    return writeHit(ray, t, ray.origin + ray.translation * t, hit);
}

bool rayCapsule(const CapsuleShape& capsule, const RayCastInput& input, RayCastHit& hit)
{
    Ray64 ray;
    if (!positiveFinite(capsule.radius) || !nonNegativeFinite(capsule.halfHeight) || !prepareRay(input, ray))
    {
        return false;
    }
    const double r = capsule.radius;
    const double halfHeight = capsule.halfHeight;
    const DVec3& o = ray.origin;
    const DVec3& d = ray.translation;

    // The origin against the closed solid: its distance to the core segment.
    const double nearestY = o.y > halfHeight ? halfHeight : (o.y < -halfHeight ? -halfHeight : o.y);
    const DVec3 fromCore{o.x, o.y - nearestY, o.z};
    const double coreDistanceSquared = lengthSquared(fromCore);
    if (coreDistanceSquared <= r * r)
    {
        const DVec3 out = coreDistanceSquared > 0.0 ? fromCore : DVec3{1.0, 0.0, 0.0};
        return writeStartHit(ray, coreDistanceSquared < r * r, out, hit);
    }
    if (ray.length == 0.0)
    {
        return false;
    }

    // The infinite cylinder x^2 + z^2 <= r^2, in the xz projection.
    double capSide = o.y > 0.0 ? 1.0 : -1.0; // the ball to try when the cylinder is not hit first
    const double radialSquared = d.x * d.x + d.z * d.z;
    const double originRadial = std::sqrt(o.x * o.x + o.z * o.z);
    if (originRadial > r)
    {
        if (!(radialSquared > 0.0))
        {
            return false; // parallel to the axis, outside the cylinder
        }
        const double radialLength = std::sqrt(radialSquared);
        const double ux = d.x / radialLength;
        const double uz = d.z / radialLength;
        const double along = o.x * ux + o.z * uz;
        if (!(along < 0.0))
        {
            return false; // moving away from the axis
        }
        const double offAxis = std::fabs(o.x * uz - o.z * ux);
        if (offAxis > r)
        {
            return false; // the line passes the cylinder, so it passes the capsule
        }
        const double halfChord = std::sqrt((r - offAxis) * (r + offAxis));
        const double entry = (o.x * o.x + o.z * o.z - r * r) / (halfChord - along);
        const double t = entry / radialLength;
        const double y = o.y + d.y * t;
        if (std::fabs(y) <= halfHeight)
        {
            if (!(t <= ray.maxFraction))
            {
                return false;
            }
            return writeHit(ray, t, DVec3{o.x + d.x * t, 0.0, o.z + d.z * t}, hit);
        }
        capSide = y > 0.0 ? 1.0 : -1.0;
    }
    // Otherwise the origin is within the cylinder but outside the capsule, so above or below it.

    const DVec3 centre{0.0, capSide * halfHeight, 0.0};
    const DVec3 s = o - centre;
    double entry = 0.0;
    if (!ballEntry(s, d * (1.0 / ray.length), r, entry))
    {
        return false;
    }
    const double t = entry / ray.length;
    if (!(t <= ray.maxFraction))
    {
        return false;
    }
    return writeHit(ray, t, s + d * t, hit);
}

bool rayBox(const BoxShape& box, const RayCastInput& input, RayCastHit& hit)
{
    Ray64 ray;
    if (!nonNegativeFinite(box.halfExtents.x) || !nonNegativeFinite(box.halfExtents.y) ||
        !nonNegativeFinite(box.halfExtents.z) || !prepareRay(input, ray))
    {
        return false;
    }
    const double h[3] = {box.halfExtents.x, box.halfExtents.y, box.halfExtents.z};
    const double o[3] = {ray.origin.x, ray.origin.y, ray.origin.z};
    const double d[3] = {ray.translation.x, ray.translation.y, ray.translation.z};
    const auto faceNormal = [](int axis, double sign)
    {
        DVec3 n{0.0, 0.0, 0.0};
        (axis == 0 ? n.x : (axis == 1 ? n.y : n.z)) = sign;
        return n;
    };

    // The origin's largest gap |o_i| - h_i says inside (< 0), on the surface (0) or outside, and its axis
    // is the nearest face.
    int nearestAxis = 0;
    double largestGap = std::fabs(o[0]) - h[0];
    for (int i = 1; i < 3; ++i)
    {
        const double gap = std::fabs(o[i]) - h[i];
        if (gap > largestGap)
        {
            largestGap = gap;
            nearestAxis = i;
        }
    }
    if (largestGap <= 0.0)
    {
        const DVec3 out = faceNormal(nearestAxis, o[nearestAxis] >= 0.0 ? 1.0 : -1.0);
        return writeStartHit(ray, largestGap < 0.0, out, hit);
    }

    // Slabs. The origin is outside, so an entering slab sets tEnter > 0 before any hit.
    double tEnter = 0.0;
    double tExit = ray.maxFraction;
    int enterAxis = -1;
    double enterSign = 0.0;
    for (int i = 0; i < 3; ++i)
    {
        if (d[i] == 0.0)
        {
            if (std::fabs(o[i]) > h[i])
            {
                return false; // parallel to the slab, outside it
            }
            continue; // parallel, within the closed slab (on a face plane included): no constraint
        }
        const double sign = d[i] > 0.0 ? -1.0 : 1.0; // the face entered: -h_i when moving up
        const double tNear = (sign * h[i] - o[i]) / d[i];
        const double tFar = (-sign * h[i] - o[i]) / d[i];
        if (tNear > tEnter)
        {
            tEnter = tNear;
            enterAxis = i;
            enterSign = sign;
        }
        if (tFar < tExit)
        {
            tExit = tFar;
        }
        if (tEnter > tExit)
        {
            return false;
        }
    }
    if (enterAxis < 0)
    {
        return false; // unreachable for an origin outside; kept so a rounding surprise cannot index -1
    }
    return writeHit(ray, tEnter, faceNormal(enterAxis, enterSign), hit);
}

bool rayHull(const ConvexHull& hull, const RayCastInput& input, RayCastHit& hit)
{
    Ray64 ray;
    if (hull.faces.empty() || !prepareRay(input, ray))
    {
        return false;
    }
    const std::size_t faceCount = hull.faces.size();

    // The origin's largest signed distance to a face plane: inside (< 0), on the surface (0), outside.
    std::size_t nearestFace = 0;
    double largestDistance = 0.0;
    for (std::size_t i = 0; i < faceCount; ++i)
    {
        const HullFace& face = hull.faces[i];
        const double distance = dot(toDouble(face.normal), ray.origin) - double(face.offset);
        if (!std::isfinite(distance))
        {
            return false; // bad hull data
        }
        if (i == 0 || distance > largestDistance)
        {
            largestDistance = distance;
            nearestFace = i;
        }
    }
    if (largestDistance <= 0.0)
    {
        return writeStartHit(ray, largestDistance < 0.0, toDouble(hull.faces[nearestFace].normal), hit);
    }

    // Cyrus-Beck: each plane the segment crosses inward raises tEnter, each it crosses outward lowers
    // tExit. The origin is outside some plane, so a hit has tEnter > 0 set by an entering face.
    double tEnter = 0.0;
    double tExit = ray.maxFraction;
    std::size_t enterFace = faceCount;
    for (std::size_t i = 0; i < faceCount; ++i)
    {
        const HullFace& face = hull.faces[i];
        const DVec3 n = toDouble(face.normal);
        const double gap = double(face.offset) - dot(n, ray.origin); // >= 0: origin inside this plane
        const double approach = dot(n, ray.translation);
        if (approach == 0.0)
        {
            if (gap < 0.0)
            {
                return false; // parallel to the plane, outside it
            }
            continue;
        }
        const double t = gap / approach;
        if (approach < 0.0)
        {
            if (t > tEnter)
            {
                tEnter = t;
                enterFace = i;
            }
        }
        else if (t < tExit)
        {
            tExit = t;
        }
        if (tEnter > tExit)
        {
            return false;
        }
    }
    if (enterFace == faceCount)
    {
        return false; // unreachable for an origin outside, see above
    }
    const DVec3 n = toDouble(hull.faces[enterFace].normal);
    if (!(lengthSquared(n) > 0.0))
    {
        return false;
    }
    return writeHit(ray, tEnter, n, hit);
}

bool rayPlane(const PlaneShape& plane, const RayCastInput& input, RayCastHit& hit)
{
    Ray64 ray;
    const DVec3 n = toDouble(plane.normal);
    if (!isFinite(plane.normal) || !std::isfinite(plane.offset) || !(lengthSquared(n) > 0.0) ||
        !prepareRay(input, ray))
    {
        return false;
    }
    const double distance = dot(n, ray.origin) - double(plane.offset);
    if (distance <= 0.0)
    {
        return writeStartHit(ray, distance < 0.0, n, hit);
    }
    const double approach = dot(n, ray.translation);
    if (!(approach < 0.0))
    {
        return false; // parallel (zero-length included) or moving away
    }
    const double t = distance / -approach;
    if (!(t <= ray.maxFraction))
    {
        return false;
    }
    return writeHit(ray, t, n, hit);
}

bool rayShape(const Shape& shape, const RayCastInput& ray, std::span<const ConvexHull> hulls, RayCastHit& hit)
{
    switch (shape.type)
    {
    case ShapeType::Sphere:
        return raySphere(shape.sphere, ray, hit);
    case ShapeType::Capsule:
        return rayCapsule(shape.capsule, ray, hit);
    case ShapeType::Box:
        return rayBox(shape.box, ray, hit);
    case ShapeType::Hull:
        return shape.hullIndex < hulls.size() && rayHull(hulls[shape.hullIndex], ray, hit);
    case ShapeType::Plane:
        return rayPlane(shape.plane, ray, hit);
    case ShapeType::Compound:
    case ShapeType::Mesh:
    case ShapeType::HeightField:
        return false; // their geometry is in the world's catalogues: World::castRayClosest and friends
    }
    return false; // a corrupt type tag
}

} // namespace polytope::physics

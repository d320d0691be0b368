// Contact manifolds for spheres and capsules, in closed form.
//
// Rationale. A sphere is a point with a radius and a capsule a segment with a radius, so every pair reduces
// to the closest points of two "cores" (point, segment, box, plane) followed by pushing each point out by
// its radius along the contact normal. Special cases:
// - Coincident cores have no closest-point direction; a fallback normal is chosen (the relative offset of
//   the shapes' centres where that helps, else a fixed axis) so the result is never NaN.
// - Parallel capsules lying side by side touch along a line; one point would let them roll, so when the
//   segments are nearly parallel and overlap along their length, the overlap's two ends become the points.
// - A capsule against a box uses the exact segment-box closest points (the squared distance is a convex
//   piecewise quadratic in the segment parameter, minimised interval by interval). Over a face it clips
//   the segment to the face (two points, like a face contact); when the core segment enters the box it
//   falls back to a small SAT over the box's face normals and the segment-edge cross products.
#include "polytope/physics/collide.h"

#include "capsule_face_contact.h"

#include <algorithm>
#include <cmath>

namespace polytope::physics
{

namespace
{

/// Capsule segments within this sine of parallel, overlapping along their length, get two points.
constexpr float kCapsuleParallelSine = 0.05f;

/// One point between a core point of A and a core point of B (both in A's frame) with radii.
ContactManifold roundPointContact(const Vec3& coreA, float radiusA, const Vec3& coreB, float radiusB,
                                  const Vec3& fallbackNormal, float margin, std::uint32_t code)
{
    ContactManifold manifold;
    const Vec3 offset = coreB - coreA;
    const float distance = length(offset);
    manifold.normal = distance > 0.0f ? offset / distance : fallbackNormal;
    const float separation = distance - radiusA - radiusB;
    if (separation <= margin)
    {
        const Vec3 pointA = coreA + manifold.normal * radiusA;
        const Vec3 pointB = coreB - manifold.normal * radiusB;
        manifold.points[0] = {pointA, pointB, dot(pointB - pointA, manifold.normal),
                              makeOtherFeatureId(code)};
        manifold.pointCount = 1;
    }
    return manifold;
}

/// A unit vector perpendicular to unit `axis`, as close as possible to `preferred`.
Vec3 perpendicularTowards(const Vec3& axis, const Vec3& preferred)
{
    const Vec3 along = preferred - axis * dot(axis, preferred);
    if (lengthSquared(along) > 1e-12f * std::max(lengthSquared(preferred), 1e-30f))
    {
        return normalize(along);
    }
    Vec3 t1;
    Vec3 t2;
    orthonormalBasis(axis, t1, t2);
    return t1;
}

/// Parameter t in [0, 1] of the point of segment p0 + t d closest to the box |x_i| <= h_i, all in the box
/// frame. The squared distance is convex and quadratic between the parameters where the segment crosses
/// a slab boundary; the minimum is found on each such interval.
float closestSegmentParameterToBox(const Vec3& p0, const Vec3& d, const Vec3& h)
{
    float breaks[8];
    int breakCount = 0;
    breaks[breakCount++] = 0.0f;
    breaks[breakCount++] = 1.0f;
    for (int i = 0; i < 3; ++i)
    {
        if (d[i] != 0.0f)
        {
            for (const float side : {-1.0f, 1.0f})
            {
                const float t = (side * h[i] - p0[i]) / d[i];
                if (t > 0.0f && t < 1.0f)
                {
                    breaks[breakCount++] = t;
                }
            }
        }
    }
    for (int i = 1; i < breakCount; ++i) // insertion sort: at most 8 values
    {
        const float value = breaks[i];
        int j = i;
        for (; j > 0 && breaks[j - 1] > value; --j)
        {
            breaks[j] = breaks[j - 1];
        }
        breaks[j] = value;
    }

    const auto distance2 = [&](float t)
    {
        const Vec3 p = p0 + d * t;
        const Vec3 outside = p - maxPerElem(minPerElem(p, h), -h);
        return lengthSquared(outside);
    };
    float bestT = 0.0f;
    float bestDistance2 = distance2(0.0f);
    for (int k = 0; k + 1 < breakCount; ++k)
    {
        const float t0 = breaks[k];
        const float t1 = breaks[k + 1];
        const Vec3 middle = p0 + d * (0.5f * (t0 + t1));
        float numerator = 0.0f;
        float denominator = 0.0f;
        for (int i = 0; i < 3; ++i)
        {
            const float bound = middle[i] > h[i] ? h[i] : (middle[i] < -h[i] ? -h[i] : 0.0f);
            if (bound != 0.0f)
            {
                numerator += (p0[i] - bound) * d[i];
                denominator += d[i] * d[i];
            }
        }
        const float t = denominator > 0.0f ? std::clamp(-numerator / denominator, t0, t1) : t0;
        const float candidate = distance2(t);
        if (candidate < bestDistance2)
        {
            bestDistance2 = candidate;
            bestT = t;
        }
    }
    return bestT;
}

/// A face of a box for capsuleFaceContact: face = 2 axis + (sign < 0), as in the box numbering of sat.h. Its
/// side planes are the slabs |x_j| <= h_j of the two other axes, with unit normals (only an exactly zero
/// slope is parallel); its foot points are set onto the face exactly.
struct BoxClipFace
{
    Vec3 h;
    int axis;
    float sign;
    Vec3 normal;
    int index;

    BoxClipFace(const Vec3& halfExtents, int face)
        : h(halfExtents), axis(face / 2), sign((face & 1) ? -1.0f : 1.0f), normal(), index(face)
    {
        normal[axis] = sign;
    }

    int sideCount() const { return 4; }
    void side(int i, const Vec3& p0, const Vec3& d, float& start, float& slope) const
    {
        const int j = (axis + 1 + i / 2) % 3;
        const float outward = (i & 1) ? -1.0f : 1.0f;
        start = outward * p0[j] - h[j];
        slope = outward * d[j];
    }
    float height(const Vec3& core) const { return sign * core[axis] - h[axis]; }
    Vec3 foot(const Vec3& core, float /*height*/) const
    {
        Vec3 onFace = core;
        onFace[axis] = sign * h[axis];
        return onFace;
    }
};

} // namespace

ContactManifold collideSphereSphere(const SphereShape& a, const SphereShape& b, const Transform& bInA,
                                    float speculativeMarginMeters)
{
    return roundPointContact(Vec3{}, a.radius, bInA.p, b.radius, Vec3{0.0f, 1.0f, 0.0f},
                             speculativeMarginMeters, 0);
}

ContactManifold collideSphereCapsule(const SphereShape& a, const CapsuleShape& b, const Transform& bInA,
                                     float speculativeMarginMeters)
{
    const Vec3 b0 = transformPoint(bInA, Vec3{0.0f, -b.halfHeight, 0.0f});
    const Vec3 b1 = transformPoint(bInA, Vec3{0.0f, b.halfHeight, 0.0f});
    const Vec3 axis = b1 - b0;
    const float t = std::clamp(dot(-b0, axis) / dot(axis, axis), 0.0f, 1.0f);
    const Vec3 coreB = b0 + axis * t;
    // Sphere centre on the core segment: push out sideways.
    const Vec3 fallback = perpendicularTowards(normalize(axis), Vec3{0.0f, 1.0f, 0.0f});
    return roundPointContact(Vec3{}, a.radius, coreB, b.radius, fallback, speculativeMarginMeters, 0);
}

ContactManifold collideCapsuleCapsule(const CapsuleShape& a, const CapsuleShape& b, const Transform& bInA,
                                      float speculativeMarginMeters)
{
    const Vec3 a0{0.0f, -a.halfHeight, 0.0f};
    const Vec3 a1{0.0f, a.halfHeight, 0.0f};
    const Vec3 b0 = transformPoint(bInA, Vec3{0.0f, -b.halfHeight, 0.0f});
    const Vec3 b1 = transformPoint(bInA, Vec3{0.0f, b.halfHeight, 0.0f});
    const Vec3 axisA{0.0f, 1.0f, 0.0f};
    const Vec3 axisB = normalize(b1 - b0);
    const SegmentClosestPoints closest = closestPointsOnSegments(a0, a1, b0, b1);

    // Fallback for crossing cores: the common perpendicular, or for parallel ones the sideways offset.
    const Vec3 centreOffset = bInA.p;
    Vec3 fallback = cross(axisA, axisB);
    if (lengthSquared(fallback) > 1e-12f)
    {
        fallback = normalize(fallback);
        if (dot(fallback, centreOffset) < 0.0f)
        {
            fallback = -fallback;
        }
    }
    else
    {
        fallback = perpendicularTowards(axisA, centreOffset);
    }
    ContactManifold manifold =
        roundPointContact(closest.onP, a.radius, closest.onQ, b.radius, fallback, speculativeMarginMeters, 0);
    if (manifold.pointCount == 0)
    {
        return manifold;
    }

    // Side by side: clip B's core to A's length, along A's axis (y), and use the overlap's ends.
    const float sine = length(cross(axisA, axisB));
    const float spanB = b1.y - b0.y;
    if (sine > kCapsuleParallelSine || std::fabs(spanB) < 1e-6f)
    {
        return manifold;
    }
    const float low = std::max(std::min(b0.y, b1.y), -a.halfHeight);
    const float high = std::min(std::max(b0.y, b1.y), a.halfHeight);
    if (high - low <= 1e-3f * (a.halfHeight + b.halfHeight))
    {
        return manifold;
    }
    const Vec3 normal = manifold.normal;
    ContactManifold pair;
    pair.normal = normal;
    const float levels[2] = {low, high};
    for (int e = 0; e < 2; ++e)
    {
        const float t = (levels[e] - b0.y) / spanB;
        const Vec3 coreB = b0 + (b1 - b0) * t;
        const Vec3 coreA{0.0f, levels[e], 0.0f};
        const float separation = dot(coreB - coreA, normal) - a.radius - b.radius;
        if (separation <= speculativeMarginMeters)
        {
            pair.points[pair.pointCount++] = {coreA + normal * a.radius, coreB - normal * b.radius,
                                              separation,
                                              makeOtherFeatureId(static_cast<std::uint32_t>(e + 1))};
        }
    }
    return pair.pointCount > 0 ? pair : manifold;
}

ContactManifold collideSphereBox(const SphereShape& a, const BoxShape& b, const Transform& bInA,
                                 float speculativeMarginMeters)
{
    const Vec3 h = b.halfExtents;
    const Vec3 centre = inverseTransformPoint(bInA, Vec3{}); // sphere centre in B's frame
    const Vec3 clamped = maxPerElem(minPerElem(centre, h), -h);
    ContactManifold manifold;
    if (!(clamped == centre))
    {
        const Vec3 outward = centre - clamped; // from the box surface to the sphere centre, B's frame
        const float distance = length(outward);
        if (distance > 0.0f)
        {
            manifold.normal = -rotate(bInA.q, outward / distance);
            const float separation = distance - a.radius;
            if (separation <= speculativeMarginMeters)
            {
                const Vec3 pointA = manifold.normal * a.radius;
                const Vec3 pointB = transformPoint(bInA, clamped);
                manifold.points[0] = {pointA, pointB, dot(pointB - pointA, manifold.normal),
                                      makeOtherFeatureId(0)};
                manifold.pointCount = 1;
            }
            return manifold;
        }
    }
    // Centre inside (or on) the box: leave through the nearest face.
    int axis = 0;
    float depth = h.x - std::fabs(centre.x);
    for (int i = 1; i < 3; ++i)
    {
        const float d = h[i] - std::fabs(centre[i]);
        if (d < depth)
        {
            depth = d;
            axis = i;
        }
    }
    Vec3 faceNormal{};
    faceNormal[axis] = centre[axis] < 0.0f ? -1.0f : 1.0f;
    manifold.normal = -rotate(bInA.q, faceNormal);
    const float separation = -depth - a.radius;
    if (separation <= speculativeMarginMeters)
    {
        Vec3 onFace = centre;
        onFace[axis] = faceNormal[axis] * h[axis];
        const Vec3 pointA = manifold.normal * a.radius;
        const Vec3 pointB = transformPoint(bInA, onFace);
        manifold.points[0] = {pointA, pointB, dot(pointB - pointA, manifold.normal), makeOtherFeatureId(0)};
        manifold.pointCount = 1;
    }
    return manifold;
}

ContactManifold collideCapsuleBox(const CapsuleShape& a, const BoxShape& b, const Transform& bInA,
                                  float speculativeMarginMeters)
{
    const float margin = speculativeMarginMeters;
    const Vec3 h = b.halfExtents;
    // The capsule's core segment in the box's frame.
    const Vec3 p0 = inverseTransformPoint(bInA, Vec3{0.0f, -a.halfHeight, 0.0f});
    const Vec3 p1 = inverseTransformPoint(bInA, Vec3{0.0f, a.halfHeight, 0.0f});
    const Vec3 d = p1 - p0;

    const float t = closestSegmentParameterToBox(p0, d, h);
    const Vec3 core = p0 + d * t;
    const Vec3 onBox = maxPerElem(minPerElem(core, h), -h);
    const Vec3 outward = core - onBox;
    const float distance = length(outward);
    const float scale = std::max(std::max(h.x, std::max(h.y, h.z)), a.halfHeight);

    if (distance > 1e-6f * scale)
    {
        if (distance - a.radius > margin)
        {
            ContactManifold none;
            none.normal = -rotate(bInA.q, outward / distance);
            return none;
        }
        // Over a face (exactly one coordinate clamped): clip the segment to that face.
        int clampedAxis = -1;
        int clampedCount = 0;
        for (int i = 0; i < 3; ++i)
        {
            if (core[i] != onBox[i])
            {
                clampedAxis = i;
                ++clampedCount;
            }
        }
        if (clampedCount == 1)
        {
            const int face = 2 * clampedAxis + (core[clampedAxis] < 0.0f ? 1 : 0);
            ContactManifold manifold =
                capsuleFaceContact(p0, d, a.radius, BoxClipFace(h, face), bInA, margin);
            if (manifold.pointCount > 0)
            {
                return manifold;
            }
        }
        // Near an edge or a corner of the box: one point at the closest points.
        const Vec3 normalInB = outward / distance; // box -> capsule
        ContactManifold manifold;
        manifold.normal = -rotate(bInA.q, normalInB);
        const Vec3 pointA = transformPoint(bInA, core - normalInB * a.radius);
        const Vec3 pointB = transformPoint(bInA, onBox);
        manifold.points[0] = {pointA, pointB, dot(pointB - pointA, manifold.normal), makeOtherFeatureId(0)};
        manifold.pointCount = 1;
        return manifold;
    }

    // The core segment touches or enters the box: SAT over the box's face normals and the crosses of the
    // segment with the box's edges. separation(n) = gap between the segment's and the box's projections.
    struct Candidate
    {
        float separation = -1e30f;
        Vec3 normal{}; // box -> capsule, box frame
        int axisIndex = -1;
    };
    const auto separationAlong = [&](const Vec3& n, Vec3& orientedNormal)
    {
        const float reach = dot(h, absPerElem(n));
        const float s0 = dot(p0, n);
        const float s1 = dot(p1, n);
        const float above = std::min(s0, s1) - reach;  // capsule on the +n side
        const float below = -reach - std::max(s0, s1); // capsule on the -n side
        orientedNormal = above >= below ? n : -n;
        return std::max(above, below);
    };
    Candidate bestFace;
    for (int i = 0; i < 3; ++i)
    {
        Vec3 n{};
        n[i] = 1.0f;
        Vec3 oriented;
        const float s = separationAlong(n, oriented);
        if (s > bestFace.separation)
        {
            bestFace = {s, oriented, i};
        }
    }
    Candidate bestEdge;
    const float segmentLength2 = lengthSquared(d);
    for (int i = 0; i < 3; ++i)
    {
        Vec3 e{};
        e[i] = 1.0f;
        const Vec3 n = cross(d, e);
        const float n2 = lengthSquared(n);
        if (n2 <= kSatParallelSine * kSatParallelSine * segmentLength2)
        {
            continue;
        }
        Vec3 oriented;
        const float s = separationAlong(n / std::sqrt(n2), oriented);
        if (s > bestEdge.separation)
        {
            bestEdge = {s, oriented, i};
        }
    }
    const bool useEdge =
        bestEdge.axisIndex >= 0 &&
        bestEdge.separation > satBiasedThreshold(bestFace.separation, kSatEdgeRelativeTolerance);
    if (!useEdge)
    {
        const int axis = bestFace.axisIndex;
        const int face = 2 * axis + (bestFace.normal[axis] < 0.0f ? 1 : 0);
        return capsuleFaceContact(p0, d, a.radius, BoxClipFace(h, face), bInA, margin);
    }
    // Edge of the box along bestEdge.axisIndex, the support edge along the normal.
    const Vec3 n = bestEdge.normal;
    const int axis = bestEdge.axisIndex;
    Vec3 edge0;
    for (int i = 0; i < 3; ++i)
    {
        edge0[i] = n[i] >= 0.0f ? h[i] : -h[i];
    }
    Vec3 edge1 = edge0;
    edge0[axis] = -h[axis];
    edge1[axis] = h[axis];
    const SegmentClosestPoints closest = closestPointsOnSegments(p0, p1, edge0, edge1);
    ContactManifold manifold;
    manifold.normal = -rotate(bInA.q, n);
    const float separation = dot(closest.onP - closest.onQ, n) - a.radius;
    if (separation <= margin)
    {
        const int i1 = (axis + 1) % 3;
        const int i2 = (axis + 2) % 3;
        const int edgeIndex = 4 * axis + (n[i1] >= 0.0f ? 1 : 0) + 2 * (n[i2] >= 0.0f ? 1 : 0);
        manifold.points[0] = {transformPoint(bInA, closest.onP - n * a.radius),
                              transformPoint(bInA, closest.onQ), separation,
                              makeOtherFeatureId(static_cast<std::uint32_t>(0x100 | edgeIndex))};
        manifold.pointCount = 1;
    }
    return manifold;
}

ContactManifold collideSpherePlane(const SphereShape& a, const PlaneShape& b, const Transform& bInA,
                                   float speculativeMarginMeters)
{
    const Vec3 planeNormal = rotate(bInA.q, b.normal);
    const float planeOffset = b.offset + dot(planeNormal, bInA.p);
    ContactManifold manifold;
    manifold.normal = -planeNormal;
    const float separation = -planeOffset - a.radius; // the sphere's centre is A's origin
    if (separation <= speculativeMarginMeters)
    {
        manifold.points[0] = {-planeNormal * a.radius, planeNormal * planeOffset, separation,
                              makeOtherFeatureId(0)};
        manifold.pointCount = 1;
    }
    return manifold;
}

ContactManifold collideCapsulePlane(const CapsuleShape& a, const PlaneShape& b, const Transform& bInA,
                                    float speculativeMarginMeters)
{
    const Vec3 planeNormal = rotate(bInA.q, b.normal);
    const float planeOffset = b.offset + dot(planeNormal, bInA.p);
    ContactManifold manifold;
    manifold.normal = -planeNormal;
    for (int e = 0; e < 2; ++e)
    {
        const Vec3 core{0.0f, e == 0 ? -a.halfHeight : a.halfHeight, 0.0f};
        const float height = dot(planeNormal, core) - planeOffset;
        const float separation = height - a.radius;
        if (separation <= speculativeMarginMeters)
        {
            manifold.points[manifold.pointCount++] = {core - planeNormal * a.radius,
                                                      core - planeNormal * height, separation,
                                                      makeOtherFeatureId(static_cast<std::uint32_t>(e))};
        }
    }
    return manifold;
}

} // namespace polytope::physics

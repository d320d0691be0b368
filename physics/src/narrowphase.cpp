// The narrowphase dispatch table and the rounded-shape-versus-hull routines (see narrowphase.h).
#include "polytope/physics/narrowphase.h"

#include "capsule_face_contact.h"
#include "polytope/physics/collide.h"
#include "polytope/physics/epa.h"
#include "polytope/physics/support.h"

#include <algorithm>
#include <cmath>

namespace polytope::physics
{
namespace
{

/// A capsule counts as lying along a face when the sine of the angle between its axis and the face's
/// plane is below this (about 3 degrees), as for capsule-box.
constexpr float kCapsuleFaceParallelSine = 0.05f;
/// ... and when the contact normal is within about 8 degrees of the face normal.
constexpr float kCapsuleFaceNormalCosine = 0.99f;

/// One contact point from a GJK/EPA penetration query between a rounded shape A and B (A's frame).
ContactManifold manifoldFromPenetration(const PenetrationResult& r, float margin)
{
    ContactManifold manifold;
    if (r.status == EpaStatus::Indeterminate && r.depth == 0.0f && r.distance == 0.0f &&
        lengthSquared(r.pointOnA - r.pointOnB) == 0.0f)
    {
        return manifold; // no usable answer (non-finite input)
    }
    manifold.normal = r.normal;
    const float separation = r.status == EpaStatus::NotColliding ? r.distance : -r.depth;
    if (separation <= margin)
    {
        manifold.points[0] = {r.pointOnA, r.pointOnB, separation, makeOtherFeatureId(0)};
        manifold.pointCount = 1;
    }
    return manifold;
}

/// A face of a convex hull for capsuleFaceContact: side planes through the edges of its vertex loop,
/// cross(edge, normal) pointing out of the face (not normalised, so a slope below 1e-12 counts as parallel).
struct HullClipFace
{
    const ConvexHull& hull;
    const HullFace& face;
    Vec3 normal;
    int index;

    HullClipFace(const ConvexHull& h, int faceIndex)
        : hull(h), face(h.faces[static_cast<std::size_t>(faceIndex)]), normal(face.normal), index(faceIndex)
    {
    }

    int sideCount() const { return face.indexCount; }
    void side(int i, const Vec3& p0, const Vec3& d, float& start, float& slope) const
    {
        const int next = i + 1 == face.indexCount ? 0 : i + 1;
        const Vec3& v0 = hull.vertices[hull.faceVertices[face.firstIndex + static_cast<std::size_t>(i)]];
        const Vec3& v1 = hull.vertices[hull.faceVertices[face.firstIndex + static_cast<std::size_t>(next)]];
        const Vec3 outward = cross(v1 - v0, face.normal);
        start = dot(outward, p0 - v0);
        slope = dot(outward, d);
        if (std::fabs(slope) < 1e-12f)
        {
            slope = 0.0f;
        }
    }
    float height(const Vec3& core) const { return dot(face.normal, core) - face.offset; }
    Vec3 foot(const Vec3& core, float h) const { return core - face.normal * h; }
};

// ---- Table entries: (Shape, Shape) adapters over the typed routines ------------------------------------

using CollideFn = ContactManifold (*)(const Shape&, const Shape&, const Transform&, float,
                                      std::span<const ConvexHull>);

const ConvexHull& hullOf(const Shape& s, std::span<const ConvexHull> hulls)
{
    return hulls[s.hullIndex];
}

ContactManifold sphereSphere(const Shape& a, const Shape& b, const Transform& x, float m,
                             std::span<const ConvexHull>)
{
    return collideSphereSphere(a.sphere, b.sphere, x, m);
}
ContactManifold sphereCapsule(const Shape& a, const Shape& b, const Transform& x, float m,
                              std::span<const ConvexHull>)
{
    return collideSphereCapsule(a.sphere, b.capsule, x, m);
}
ContactManifold sphereBox(const Shape& a, const Shape& b, const Transform& x, float m,
                          std::span<const ConvexHull>)
{
    return collideSphereBox(a.sphere, b.box, x, m);
}
ContactManifold sphereHull(const Shape& a, const Shape& b, const Transform& x, float m,
                           std::span<const ConvexHull> h)
{
    return collideSphereHull(a.sphere, hullOf(b, h), x, m);
}
ContactManifold spherePlane(const Shape& a, const Shape& b, const Transform& x, float m,
                            std::span<const ConvexHull>)
{
    return collideSpherePlane(a.sphere, b.plane, x, m);
}
ContactManifold capsuleCapsule(const Shape& a, const Shape& b, const Transform& x, float m,
                               std::span<const ConvexHull>)
{
    return collideCapsuleCapsule(a.capsule, b.capsule, x, m);
}
ContactManifold capsuleBox(const Shape& a, const Shape& b, const Transform& x, float m,
                           std::span<const ConvexHull>)
{
    return collideCapsuleBox(a.capsule, b.box, x, m);
}
ContactManifold capsuleHull(const Shape& a, const Shape& b, const Transform& x, float m,
                            std::span<const ConvexHull> h)
{
    return collideCapsuleHull(a.capsule, hullOf(b, h), x, m);
}
ContactManifold capsulePlane(const Shape& a, const Shape& b, const Transform& x, float m,
                             std::span<const ConvexHull>)
{
    return collideCapsulePlane(a.capsule, b.plane, x, m);
}
ContactManifold boxBox(const Shape& a, const Shape& b, const Transform& x, float m,
                       std::span<const ConvexHull>)
{
    return collideBoxBox(a.box, b.box, x, m);
}
ContactManifold boxHull(const Shape& a, const Shape& b, const Transform& x, float m,
                        std::span<const ConvexHull> h)
{
    return collideBoxHull(a.box, hullOf(b, h), x, m);
}
ContactManifold boxPlane(const Shape& a, const Shape& b, const Transform& x, float m,
                         std::span<const ConvexHull>)
{
    return collideBoxPlane(a.box, b.plane, x, m);
}
ContactManifold hullHull(const Shape& a, const Shape& b, const Transform& x, float m,
                         std::span<const ConvexHull> h)
{
    return collideHullHull(hullOf(a, h), hullOf(b, h), x, m);
}
ContactManifold hullPlane(const Shape& a, const Shape& b, const Transform& x, float m,
                          std::span<const ConvexHull> h)
{
    return collideHullPlane(hullOf(a, h), b.plane, x, m);
}

/// (A, B) served by the routine for (B, A): compute in B's frame, then swap roles back into A's frame.
template <CollideFn direct>
ContactManifold mirrored(const Shape& a, const Shape& b, const Transform& bInA, float m,
                         std::span<const ConvexHull> h)
{
    return swapManifold(direct(b, a, inverse(bInA), m, h), bInA);
}

// Rows: A's type; columns: B's type (Sphere, Capsule, Box, Hull, Plane).
constexpr CollideFn kCollideTable[kPrimitiveShapeTypeCount][kPrimitiveShapeTypeCount] = {
    {&sphereSphere, &sphereCapsule, &sphereBox, &sphereHull, &spherePlane},
    {&mirrored<&sphereCapsule>, &capsuleCapsule, &capsuleBox, &capsuleHull, &capsulePlane},
    {&mirrored<&sphereBox>, &mirrored<&capsuleBox>, &boxBox, &boxHull, &boxPlane},
    {&mirrored<&sphereHull>, &mirrored<&capsuleHull>, &mirrored<&boxHull>, &hullHull, &hullPlane},
    {&mirrored<&spherePlane>, &mirrored<&capsulePlane>, &mirrored<&boxPlane>, &mirrored<&hullPlane>, nullptr},
};

} // namespace

ContactManifold collideSphereHull(const SphereShape& a, const ConvexHull& b, const Transform& bInA,
                                  float speculativeMarginMeters)
{
    const auto sphere = supportOf(a);
    const auto hull = transformed(supportOf(b), bInA);
    const PenetrationResult r = penetrationDepth(sphere, hull, normalizeOr(bInA.p, Vec3{0.0f, 1.0f, 0.0f}));
    return manifoldFromPenetration(r, speculativeMarginMeters);
}

ContactManifold collideCapsuleHull(const CapsuleShape& a, const ConvexHull& b, const Transform& bInA,
                                   float speculativeMarginMeters)
{
    const auto capsule = supportOf(a);
    const auto hull = transformed(supportOf(b), bInA);
    const PenetrationResult r = penetrationDepth(capsule, hull, normalizeOr(bInA.p, Vec3{0.0f, 1.0f, 0.0f}));
    ContactManifold single = manifoldFromPenetration(r, speculativeMarginMeters);
    if (single.pointCount == 0 || b.faces.empty())
    {
        return single;
    }
    // Lying along a face? The face of B that faces A most directly, in B's frame.
    const Vec3 towardA = -inverseRotate(bInA.q, single.normal);
    int bestFace = 0;
    float bestCosine = -2.0f;
    for (std::size_t f = 0; f < b.faces.size(); ++f)
    {
        const float c = dot(b.faces[f].normal, towardA);
        if (c > bestCosine)
        {
            bestCosine = c;
            bestFace = static_cast<int>(f);
        }
    }
    const Vec3 p0 = inverseTransformPoint(bInA, Vec3{0.0f, -a.halfHeight, 0.0f});
    const Vec3 p1 = inverseTransformPoint(bInA, Vec3{0.0f, a.halfHeight, 0.0f});
    const Vec3 axis = normalize(p1 - p0);
    if (bestCosine < kCapsuleFaceNormalCosine ||
        std::fabs(dot(axis, b.faces[static_cast<std::size_t>(bestFace)].normal)) > kCapsuleFaceParallelSine)
    {
        return single;
    }
    const ContactManifold onFace =
        capsuleFaceContact(p0, p1 - p0, a.radius, HullClipFace(b, bestFace), bInA, speculativeMarginMeters);
    return onFace.pointCount > 0 ? onFace : single;
}

bool canCollide(ShapeType a, ShapeType b)
{
    const auto i = static_cast<int>(a);
    const auto j = static_cast<int>(b);
    if (i < 0 || i >= kShapeTypeCount || j < 0 || j >= kShapeTypeCount)
    {
        return false;
    }
    if (i < kPrimitiveShapeTypeCount && j < kPrimitiveShapeTypeCount)
    {
        return kCollideTable[i][j] != nullptr;
    }
    // Planes, meshes and heightfields are level geometry (never dynamic): no routine between two of them.
    const auto fixedGeometry = [](ShapeType t)
    { return t == ShapeType::Plane || t == ShapeType::Mesh || t == ShapeType::HeightField; };
    return !(fixedGeometry(a) && fixedGeometry(b));
}

ContactManifold collideShapesLocal(const Shape& a, const Shape& b, const Transform& bInA,
                                   float speculativeMarginMeters, std::span<const ConvexHull> hulls)
{
    const auto i = static_cast<int>(a.type);
    const auto j = static_cast<int>(b.type);
    if (i < 0 || i >= kPrimitiveShapeTypeCount || j < 0 || j >= kPrimitiveShapeTypeCount ||
        kCollideTable[i][j] == nullptr)
    {
        return {};
    }
    return kCollideTable[static_cast<int>(a.type)][static_cast<int>(b.type)](a, b, bInA,
                                                                             speculativeMarginMeters, hulls);
}

} // namespace polytope::physics

// Polytope physics: contact manifolds, the narrowphase's output and the solver's input.
//
// A manifold holds up to four contact points that share one normal. Everything is expressed in the
// first shape's (A's) local frame, like the narrowphase that makes it. Each point carries a feature id
// naming the geometric features that produced it: which face is the reference, and whether the point is a
// vertex of the other shape, an edge of it crossing a side of the reference face, or a corner of the
// reference face. The id depends only on the shapes' topology, never on positions, so it stays the same
// while a contact persists and the solver can match points across steps to warm start them (the idea of
// Box2D's b2ContactFeature and of Gregorius' feature pairs, GDC 2013/2015). Indices are packed into fixed
// bit fields and wrap beyond them (1024 faces, 4096 edges, 64 sides per face, 2^18 vertices); ids may then
// repeat, which only weakens warm starting.
#pragma once

#include "polytope/physics/math.h"

#include <cmath>
#include <cstdint>

namespace polytope::physics
{

/// Most points a manifold holds; four are enough to keep a face resting on a face stable.
inline constexpr int kMaxManifoldPoints = 4;

/// What produced a contact point: bits 30..31 of ContactPoint::featureId.
enum class ContactFeatureKind : std::uint32_t
{
    FaceOfA = 0,  ///< a face of A was the reference face; B's incident face was clipped against it
    FaceOfB = 1,  ///< a face of B was the reference face; A's incident face was clipped against it
    EdgePair = 2, ///< closest points of an edge of A and an edge of B
    Other = 3,    ///< closed-form pairs (spheres, capsules, planes)
};

/// Feature id of a point made by clipping an incident face against a reference face: the kind (bits 30..31),
/// the reference face (bits 20..29) and a clip feature (bits 0..19, see below) naming the point.
constexpr std::uint32_t makeClipFeatureId(ContactFeatureKind kind, std::uint32_t referenceFace,
                                          std::uint32_t clipFeature)
{
    return (static_cast<std::uint32_t>(kind) << 30) | ((referenceFace & 0x3FFu) << 20) |
           (clipFeature & 0xFFFFFu);
}

/// Clip feature: a vertex of the incident shape (its vertex index) that lies inside the reference face.
/// It does not depend on which of the vertex's faces was the incident face.
constexpr std::uint32_t clipFeatureIncidentVertex(std::uint32_t vertex)
{
    return vertex & 0x3FFFFu;
}

/// Clip feature: where an edge of the incident shape (its edge index) crosses the side plane through edge
/// `referenceSide` (loop position) of the reference face.
constexpr std::uint32_t clipFeatureEdgeCrossing(std::uint32_t incidentEdge, std::uint32_t referenceSide)
{
    return (1u << 18) | ((incidentEdge & 0xFFFu) << 6) | (referenceSide & 0x3Fu);
}

/// Clip feature: a corner of the reference face, between side planes `sideIn` and `sideOut` (loop positions).
constexpr std::uint32_t clipFeatureReferenceCorner(std::uint32_t sideIn, std::uint32_t sideOut)
{
    return (2u << 18) | ((sideIn & 0x3Fu) << 6) | (sideOut & 0x3Fu);
}

/// Feature id of an edge-edge point: the two edge indices (15 bits each).
constexpr std::uint32_t makeEdgePairFeatureId(std::uint32_t edgeA, std::uint32_t edgeB)
{
    return (static_cast<std::uint32_t>(ContactFeatureKind::EdgePair) << 30) | ((edgeA & 0x7FFFu) << 15) |
           (edgeB & 0x7FFFu);
}

/// Feature id of a closed-form point: a small routine-specific code (30 bits).
constexpr std::uint32_t makeOtherFeatureId(std::uint32_t code)
{
    return (static_cast<std::uint32_t>(ContactFeatureKind::Other) << 30) | (code & 0x3FFFFFFFu);
}

constexpr ContactFeatureKind featureKind(std::uint32_t featureId)
{
    return static_cast<ContactFeatureKind>(featureId >> 30);
}

/// One contact point. Both points are in A's local frame.
struct ContactPoint
{
    Vec3 pointA{};               ///< metres: on A's surface
    Vec3 pointB{};               ///< metres: on B's surface
    float separation = 0.0f;     ///< metres: dot(pointB - pointA, normal); negative means penetration
    std::uint32_t featureId = 0; ///< stable name of the feature pair, see makeClipFeatureId and friends
};

/// The contact between two shapes A and B. pointCount == 0 means no contact within the speculative margin.
struct ContactManifold
{
    Vec3 normal{0.0f, 1.0f, 0.0f}; ///< unit, A's local frame, pointing from A towards B
    ContactPoint points[kMaxManifoldPoints];
    int pointCount = 0; ///< 0 .. kMaxManifoldPoints
};

/// Whether the normal and every point's positions and separation are finite (no NaN, no infinity).
inline bool isFinite(const ContactManifold& m)
{
    if (!isFinite(m.normal))
    {
        return false;
    }
    for (int i = 0; i < m.pointCount; ++i)
    {
        if (!isFinite(m.points[i].pointA) || !isFinite(m.points[i].pointB) ||
            !std::isfinite(m.points[i].separation))
        {
            return false;
        }
    }
    return true;
}

/// Re-expresses a manifold computed for the pair (B, A) in B's frame as the manifold of (A, B) in A's frame:
/// points swap roles, the normal flips, separations and feature ids are kept. `bInA` is B's transform in
/// A's frame. Lets a dispatcher serve (box, sphere) with the (sphere, box) routine.
constexpr ContactManifold swapManifold(const ContactManifold& manifoldOfBA, const Transform& bInA)
{
    ContactManifold out;
    out.normal = -rotate(bInA.q, manifoldOfBA.normal);
    out.pointCount = manifoldOfBA.pointCount;
    for (int i = 0; i < manifoldOfBA.pointCount; ++i)
    {
        const ContactPoint& in = manifoldOfBA.points[i];
        out.points[i].pointA = transformPoint(bInA, in.pointB);
        out.points[i].pointB = transformPoint(bInA, in.pointA);
        out.points[i].separation = in.separation;
        out.points[i].featureId = in.featureId;
    }
    return out;
}

} // namespace polytope::physics

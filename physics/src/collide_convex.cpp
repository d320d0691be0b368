// Contact manifolds between convex polyhedra (boxes, hulls) and of polyhedra against planes.
//
// Rationale. Hull pairs (hull-hull, box-hull, hull-box) first find the contact direction as Jolt does for
// convex shapes: GJK's closest-points direction when the shapes are apart within the margin, EPA's
// penetration normal when they overlap (EPA at a looser tolerance: the direction only seeds the next step).
// satHullsNear (sat.cpp) then searches the faces and edges near that direction with the exact SAT
// separations and the same face bias, so the chosen axis, the reference face and the feature ids are those
// of the exhaustive SAT (satHulls) except between axes that the bias treats as tied; EPA's depth bounds the
// separation, which lets it skip B's faces and the edge pairs when they cannot win. That replaces the
// O(edgesA x edgesB) edge stage, which dominated the cost, by work proportional to the vertex degrees.
// Hulls without adjacency (assembled by hand), GJK/EPA failures and the rare pair whose face clipping leaves
// nothing with no nearly-as-good axis found nearby take the exhaustive SAT. Box-box keeps its closed-form
// 15-axis SAT. After SAT picks the contact axis:
// - Face axis: the face it came from is the reference face; the incident face is, of the other shape's faces
//   through its deepest vertex along the reference normal, the most anti-parallel one (see incidentFaceAt).
//   The incident polygon is clipped (Sutherland-Hodgman) against the side planes through the reference
//   face's edges; clipped points at most `margin` above the reference plane are kept, and projected onto it
//   for the reference shape's point. (Gregorius, GDC 2015 "Robust Contact Creation for Physics
//   Simulations"; Box2D and Jolt do the same.) When the face bias chose a face over a slightly better axis,
//   clipping can leave nothing; another axis then replaces the face only if it is nearly as good, so the
//   depth keeps the bias's bound (see faceContactOrAlternative).
// - Edge-pair axis: one point, the closest points of the two edges.
// The clipper names each clipped point by the features that made it: the feature ids that warm starting
// needs (polyhedron_contact.h, shared with the triangle manifolds). Up to four kept points are returned as
// they are; more are reduced to four that keep the deepest point and span the largest area, the choice that
// keeps a resting face stable (contact_reduction.h). Box-box contacts take a specialised path that clips in
// the reference box's face coordinates, where the side planes are axis-aligned; it gives the same points and
// ids as the general path on box views. All buffers are fixed-size and on the stack.
#include "polytope/physics/collide.h"

#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/support.h"

#include "contact_reduction.h"
#include "polyhedron_contact.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace polytope::physics
{

namespace
{

/// EPA tolerance (fraction of the size scale) when EPA only seeds the SAT search near its normal.
constexpr float kContactEpaRelativeTolerance = 1e-4f;

/// Keeps the part of `polygon` where -half <= coordinateOf(position) <= half: the two parallel side planes
/// of a box face in one pass, with the same result and the same rules as two clipToHalfSpace calls.
/// Vertices made on the planes get `lowTag` (the -half plane) or `highTag`.
template <typename CoordinateOf>
inline void clipToSlab(ClipPolygon*& polygon, ClipPolygon*& scratch, CoordinateOf coordinateOf, float half,
                       std::uint16_t lowTag, std::uint16_t highTag)
{
    const ClipPolygon& in = *polygon;
    float coordinates[kMaxClipVertices];
    float largest = 0.0f;
    for (int k = 0; k < in.count; ++k)
    {
        coordinates[k] = coordinateOf(in.vertices[k].position);
        largest = std::max(largest, std::fabs(coordinates[k]));
    }
    if (!(largest > half))
    {
        return; // neither plane cuts
    }
    ClipPolygon& out = *scratch;
    out.count = 0;
    int previous = in.count - 1;
    for (int k = 0; k < in.count; ++k)
    {
        const float p = coordinates[previous];
        const float c = coordinates[k];
        // Crossings strictly from one side of a plane to the other, in the order met along the edge.
        const bool enterHigh = p > half && c < half;
        const bool enterLow = p < -half && c > -half;
        const bool leaveHigh = p < half && c > half;
        const bool leaveLow = p > -half && c < -half;
        if (enterHigh || enterLow || leaveHigh || leaveLow)
        {
            const ClipVertex& from = in.vertices[previous];
            const Vec3 along = in.vertices[k].position - from.position;
            const std::uint16_t edgeTag = from.edgeTagOut; // the edge previous -> current
            if (enterHigh || enterLow)
            {
                const float t = ((enterHigh ? half : -half) - p) / (c - p);
                out.push({from.position + along * t, enterHigh ? highTag : lowTag, edgeTag});
            }
            if (leaveHigh || leaveLow)
            {
                const float t = ((leaveHigh ? half : -half) - p) / (c - p);
                out.push({from.position + along * t, edgeTag, leaveHigh ? highTag : lowTag});
            }
        }
        if (c <= half && c >= -half)
        {
            out.push(in.vertices[k]);
        }
        previous = k;
    }
    std::swap(polygon, scratch);
}

/// Index of the vertex of `hull` lowest along `direction` (hull frame; the first on ties).
int deepestVertexOf(const HullView& hull, const Vec3& direction)
{
    int deepest = 0;
    float deepestDot = dot(hull.vertices[0], direction);
    for (int v = 1; v < hull.vertexCount; ++v)
    {
        const float d = dot(hull.vertices[v], direction);
        if (d < deepestDot)
        {
            deepestDot = d;
            deepest = v;
        }
    }
    return deepest;
}

ContactManifold edgeContact(const HullView& a, const HullView& b, const Transform& bInA, const SatAxis& axis,
                            float margin)
{
    const HullEdge& edgeA = a.edges[axis.indexA];
    const HullEdge& edgeB = b.edges[axis.indexB];
    return edgePairManifold(
        a.vertices[edgeA.v0], a.vertices[edgeA.v1], transformPoint(bInA, b.vertices[edgeB.v0]),
        transformPoint(bInA, b.vertices[edgeB.v1]), axis.normal, axis.indexA, axis.indexB, margin);
}

/// The two roles on a face axis: the shape whose face it is (reference) and the other (incident), with the
/// reference plane in A's frame, where contacts are built; `toA` maps a role's frame into it.
struct FaceAxisRoles
{
    bool referenceIsA;
    const HullView& reference;
    const HullView& incident;
    int referenceFaceIndex;
    Transform referenceToA;
    Transform incidentToA;
    Vec3 referenceNormal; ///< A's frame, out of the reference face
    float referenceOffset;

    FaceAxisRoles(const HullView& a, const HullView& b, const Transform& bInA, const SatAxis& axis)
        : referenceIsA(axis.feature == SatFeature::FaceOfA), reference(referenceIsA ? a : b),
          incident(referenceIsA ? b : a), referenceFaceIndex(referenceIsA ? axis.indexA : axis.indexB),
          referenceToA(referenceIsA ? Transform::identity() : bInA),
          incidentToA(referenceIsA ? bInA : Transform::identity()),
          referenceNormal(rotate(referenceToA.q, reference.faces[referenceFaceIndex].normal)),
          referenceOffset(reference.faces[referenceFaceIndex].offset + dot(referenceNormal, referenceToA.p))
    {
    }

    /// The reference normal in the incident shape's frame.
    Vec3 normalInIncident() const { return inverseRotate(incidentToA.q, referenceNormal); }
};

ContactManifold faceContact(const HullView& a, const HullView& b, const Transform& bInA, const SatAxis& axis,
                            float margin)
{
    const FaceAxisRoles roles(a, b, bInA, axis);
    const bool referenceIsA = roles.referenceIsA;
    const HullView& reference = roles.reference;
    const HullView& incident = roles.incident;
    const int referenceFaceIndex = roles.referenceFaceIndex;
    const HullFace& referenceFace = reference.faces[referenceFaceIndex];
    const Transform& referenceToA = roles.referenceToA;
    const Transform& incidentToA = roles.incidentToA;
    const Vec3 referenceNormal = roles.referenceNormal;
    const float referenceOffset = roles.referenceOffset;

    const Vec3 normalInIncident = roles.normalInIncident();
    const int incidentFaceIndex =
        incidentFaceAt(incident, deepestVertexOf(incident, normalInIncident), normalInIncident);
    const HullFace& incidentFace = incident.faces[incidentFaceIndex];

    ClipPolygon buffers[2];
    ClipPolygon* polygon = &buffers[0];
    ClipPolygon* scratch = &buffers[1];
    {
        const std::uint16_t* loop = incident.faceVertices + incidentFace.firstIndex;
        const int n = std::min(static_cast<int>(incidentFace.indexCount), kMaxClipVertices);
        if (n < 3)
        {
            return {}; // not a face: a malformed hull
        }
        std::uint16_t loopEdges[kMaxClipVertices];
        loopEdgeIndices(incident, incidentFaceIndex, n, loopEdges);
        std::uint16_t previousEdge = loopEdges[n - 1];
        for (int k = 0; k < n; ++k)
        {
            const int vertex = loop[k];
            polygon->push(
                {transformPoint(incidentToA, incident.vertices[vertex]), previousEdge, loopEdges[k]});
            previousEdge = loopEdges[k];
        }
    }

    {
        const std::uint16_t* loop = reference.faceVertices + referenceFace.firstIndex;
        const int n = referenceFace.indexCount;
        Vec3 start = transformPoint(referenceToA, reference.vertices[loop[0]]);
        const Vec3 first = start;
        for (int k = 0; k < n && polygon->count > 0; ++k)
        {
            const Vec3 end =
                k + 1 < n ? transformPoint(referenceToA, reference.vertices[loop[k + 1]]) : first;
            // Outward normal of the side plane through this edge (not normalised: only signs and ratios
            // matter).
            const Vec3 sideNormal = cross(end - start, referenceNormal);
            const float sideOffset = dot(sideNormal, start);
            clipToHalfSpace(
                polygon, scratch, [&](const Vec3& x) { return dot(sideNormal, x) - sideOffset; },
                static_cast<std::uint16_t>(kReferenceSideTag | (k & kTagIndexMask)));
            start = end;
        }
    }

    const ClipPolygon& clipped = *polygon;
    Vec3 tangent1;
    Vec3 tangent2;
    orthonormalBasis(referenceNormal, tangent1, tangent2);
    float separations[kMaxClipVertices];
    PlanarPoint planar[kMaxClipVertices];
    for (int i = 0; i < clipped.count; ++i)
    {
        const Vec3& x = clipped.vertices[i].position;
        separations[i] = dot(referenceNormal, x) - referenceOffset;
        planar[i] = {dot(tangent1, x), dot(tangent2, x)};
    }
    int chosen[kMaxManifoldPoints];
    const int chosenCount = chooseClippedContacts(
        clipped.count, [&](int i) { return separations[i]; }, [&](int i) { return planar[i]; }, margin,
        SubsetTies::Exact, chosen);

    ContactManifold manifold;
    manifold.normal = referenceIsA ? referenceNormal : -referenceNormal;
    const ContactFeatureKind kind = referenceIsA ? ContactFeatureKind::FaceOfA : ContactFeatureKind::FaceOfB;
    for (int c = 0; c < chosenCount; ++c)
    {
        const ClipVertex& v = clipped.vertices[chosen[c]];
        const float separation = separations[chosen[c]];
        const Vec3 onReference = v.position - referenceNormal * separation;
        ContactPoint& point = manifold.points[c];
        point.pointA = referenceIsA ? onReference : v.position;
        point.pointB = referenceIsA ? v.position : onReference;
        point.separation = separation;
        point.featureId = makeClipFeatureId(kind, static_cast<std::uint32_t>(referenceFaceIndex),
                                            clipFeatureOf(v, incident.edges));
    }
    manifold.pointCount = chosenCount;
    return manifold;
}

/// One point on face axis `axis`: the incident shape's deepest vertex along the reference normal, at the
/// axis's own separation (that vertex is the support point that defines it), paired with its projection
/// onto the reference plane. The last resort of manifoldFromSat when clipping leaves nothing and no other
/// axis is nearly as good; the projection may then lie a little outside the reference face.
ContactManifold deepestVertexContact(const HullView& a, const HullView& b, const Transform& bInA,
                                     const SatAxis& axis, float margin)
{
    const FaceAxisRoles roles(a, b, bInA, axis);
    const int vertex = deepestVertexOf(roles.incident, roles.normalInIncident());
    const Vec3 onIncident = transformPoint(roles.incidentToA, roles.incident.vertices[vertex]);
    const float separation = dot(roles.referenceNormal, onIncident) - roles.referenceOffset;
    ContactManifold manifold;
    manifold.normal = roles.referenceIsA ? roles.referenceNormal : -roles.referenceNormal;
    if (separation <= margin)
    {
        const Vec3 onReference = onIncident - roles.referenceNormal * separation;
        const ContactFeatureKind kind =
            roles.referenceIsA ? ContactFeatureKind::FaceOfA : ContactFeatureKind::FaceOfB;
        manifold.points[0] = {
            roles.referenceIsA ? onReference : onIncident, roles.referenceIsA ? onIncident : onReference,
            separation,
            makeClipFeatureId(kind, static_cast<std::uint32_t>(roles.referenceFaceIndex),
                              clipFeatureIncidentVertex(static_cast<std::uint32_t>(vertex)))};
        manifold.pointCount = 1;
    }
    return manifold;
}

/// The manifold on the face axis `sat.chosen`; if clipping leaves nothing there, on another axis of `sat`
/// that is nearly as good, and with `lastResort`, on the chosen face's deepest incident vertex.
ContactManifold faceContactOrAlternative(const HullView& a, const HullView& b, const Transform& bInA,
                                         const SatResult& sat, float margin, bool lastResort)
{
    ContactManifold manifold = faceContact(a, b, bInA, sat.chosen, margin);
    if (manifold.pointCount > 0)
    {
        return manifold;
    }
    // On the least-penetration face axis clipping keeps the deepest incident vertex (see incidentFaceAt),
    // so it leaves nothing only when the face bias chose a face over a slightly better axis, or by
    // rounding. That better axis is the one to take, but not just any axis: the best edge pair, say, has
    // no tie to the face's depth and can be many times deeper. Another axis replaces the face only when it
    // is nearly as good by chooseContactAxis's own tolerances (the other face against this one, the edge
    // pair against the best face), so the depth stays within the bias's bound; faces first, as there.
    const SatAxis& otherFace = sat.chosen.feature == SatFeature::FaceOfA ? sat.bestFaceB : sat.bestFaceA;
    if (otherFace.feature != SatFeature::None && otherFace.separation <= margin &&
        satNearlyAsGood(otherFace.separation, sat.chosen.separation, kSatFaceRelativeTolerance))
    {
        manifold = faceContact(a, b, bInA, otherFace, margin);
        if (manifold.pointCount > 0)
        {
            return manifold;
        }
    }
    const float bestFace = std::max(sat.bestFaceA.separation, sat.bestFaceB.separation);
    if (sat.bestEdge.feature == SatFeature::EdgePair && sat.bestEdge.separation <= margin &&
        satNearlyAsGood(sat.bestEdge.separation, bestFace, kSatEdgeRelativeTolerance))
    {
        manifold = edgeContact(a, b, bInA, sat.bestEdge, margin);
        if (manifold.pointCount > 0)
        {
            return manifold;
        }
    }
    return lastResort ? deepestVertexContact(a, b, bInA, sat.chosen, margin) : manifold;
}

/// +1 when bit `bit` of `bits` is set, else -1: a sign picked by arithmetic, because a conditional here
/// compiles to a branch that mispredicts about half the time.
inline float signOfBit(int bits, int bit)
{
    return static_cast<float>(((bits >> bit) & 1) * 2 - 1);
}

/// Corner `vertex` of a box (the numbering of boxAsHull: bit k set means +halfExtents along axis k).
Vec3 boxVertex(const Vec3& halfExtents, int vertex)
{
    return {halfExtents.x * signOfBit(vertex, 0), halfExtents.y * signOfBit(vertex, 1),
            halfExtents.z * signOfBit(vertex, 2)};
}

/// Box-box face contact. The clipping runs in "face coordinates" of the reference box: (u, v, w) are its
/// coordinates along the face's two tangent axes and along the normal axis. The side planes are then
/// |u| <= half extent and |v| <= half extent, and the separation is read off w. Same points and feature
/// ids as faceContact on two BoxAsHull views, with a fraction of the work.
ContactManifold boxBoxFaceContact(const BoxShape& a, const BoxShape& b, const Transform& bInA,
                                  const SatAxis& axis, float margin)
{
    const bool referenceIsA = axis.feature == SatFeature::FaceOfA;
    const Vec3 referenceHalf = referenceIsA ? a.halfExtents : b.halfExtents;
    const Vec3 incidentHalf = referenceIsA ? b.halfExtents : a.halfExtents;
    // The incident box's frame in the reference box's frame, as a matrix: bInA, or its inverse.
    const Mat3 rotationBInA = toMat3(bInA.q);
    const Mat3 incidentRotation = referenceIsA ? rotationBInA : transpose(rotationBInA);
    const Vec3 incidentOrigin = referenceIsA ? bInA.p : -mulTransposed(rotationBInA, bInA.p);
    const int referenceFace = referenceIsA ? axis.indexA : axis.indexB;
    const int normalAxis = referenceFace / 2;
    const int tangentAxis1 = (normalAxis + 1) % 3;
    const int tangentAxis2 = (normalAxis + 2) % 3;
    const float normalSign = (referenceFace & 1) ? -1.0f : 1.0f;
    // (tangent1, tangent2, normal) is a cyclic shift of (x, y, z).
    const auto toFace = [normalAxis](const Vec3& x) {
        return normalAxis == 0 ? Vec3{x.y, x.z, x.x} : (normalAxis == 1 ? Vec3{x.z, x.x, x.y} : x);
    };
    const auto fromFace = [normalAxis](const Vec3& f) {
        return normalAxis == 0 ? Vec3{f.z, f.x, f.y} : (normalAxis == 1 ? Vec3{f.y, f.z, f.x} : f);
    };
    const Vec3 halfFace = toFace(referenceHalf);
    const float halfU = halfFace.x;
    const float halfV = halfFace.y;
    const float halfW = halfFace.z;

    // The incident box's axes in face coordinates. Their w components are the reference normal (up to its
    // sign) in the incident frame: the incident face is the one most anti-parallel to it.
    const Vec3 axesInFace[3] = {toFace(incidentRotation.c0), toFace(incidentRotation.c1),
                                toFace(incidentRotation.c2)};
    const float normalComponents[3] = {normalSign * axesInFace[0].z, normalSign * axesInFace[1].z,
                                       normalSign * axesInFace[2].z};
    int incidentAxis = std::fabs(normalComponents[1]) > std::fabs(normalComponents[0]) ? 1 : 0;
    incidentAxis =
        std::fabs(normalComponents[2]) > std::fabs(normalComponents[incidentAxis]) ? 2 : incidentAxis;
    const int incidentFace = 2 * incidentAxis + (normalComponents[incidentAxis] > 0.0f ? 1 : 0);

    ClipPolygon buffers[2];
    ClipPolygon* polygon = &buffers[0];
    ClipPolygon* scratch = &buffers[1];
    {
        // Corners as the origin plus or minus each scaled axis, all in face coordinates.
        const Vec3 origin = toFace(incidentOrigin);
        const Vec3 scaledAxes[3] = {axesInFace[0] * incidentHalf.x, axesInFace[1] * incidentHalf.y,
                                    axesInFace[2] * incidentHalf.z};
        const std::uint16_t* loop = boxFaceLoops() + 4 * incidentFace;
        const std::uint16_t* loopEdges = boxFaceLoopEdges() + 4 * incidentFace;
        std::uint16_t previousEdge = loopEdges[3];
        for (int k = 0; k < 4; ++k)
        {
            const int vertex = loop[k];
            const Vec3 corner = origin + scaledAxes[0] * signOfBit(vertex, 0) +
                                scaledAxes[1] * signOfBit(vertex, 1) + scaledAxes[2] * signOfBit(vertex, 2);
            polygon->push({corner, previousEdge, loopEdges[k]});
            previousEdge = loopEdges[k];
        }
    }
    {
        // Side k of the reference face runs from loop vertex k to k + 1, which differ in one tangent
        // coordinate; its plane bounds the other tangent coordinate, on the side of those vertices. The
        // two sides bounding u (and the two bounding v) are clipped together as a slab.
        const std::uint16_t* loop = boxFaceLoops() + 4 * referenceFace;
        std::uint16_t sideTags[2][2] = {}; // [bounds v][upper side]
        for (int k = 0; k < 4; ++k)
        {
            const int from = loop[k];
            const int to = loop[(k + 1) & 3];
            const int boundsV = (((from ^ to) >> tangentAxis1) & 1) != 0 ? 1 : 0;
            const int upper = (from >> (boundsV ? tangentAxis2 : tangentAxis1)) & 1;
            sideTags[boundsV][upper] = static_cast<std::uint16_t>(kReferenceSideTag | k);
        }
        clipToSlab(
            polygon, scratch, [](const Vec3& x) { return x.x; }, halfU, sideTags[0][0], sideTags[0][1]);
        if (polygon->count > 0)
        {
            clipToSlab(
                polygon, scratch, [](const Vec3& x) { return x.y; }, halfV, sideTags[1][0], sideTags[1][1]);
        }
    }

    const ClipPolygon& clipped = *polygon;
    float separations[kMaxClipVertices];
    PlanarPoint planar[kMaxClipVertices];
    for (int i = 0; i < clipped.count; ++i)
    {
        const Vec3& x = clipped.vertices[i].position;
        separations[i] = normalSign * x.z - halfW;
        planar[i] = {x.x, x.y};
    }
    int chosen[kMaxManifoldPoints];
    const int chosenCount = chooseClippedContacts(
        clipped.count, [&](int i) { return separations[i]; }, [&](int i) { return planar[i]; }, margin,
        SubsetTies::Exact, chosen);

    ContactManifold manifold;
    Vec3 referenceNormal{};
    referenceNormal[normalAxis] = normalSign;
    manifold.normal = referenceIsA ? referenceNormal : -(rotationBInA * referenceNormal);
    const ContactFeatureKind kind = referenceIsA ? ContactFeatureKind::FaceOfA : ContactFeatureKind::FaceOfB;
    for (int c = 0; c < chosenCount; ++c)
    {
        const ClipVertex& v = clipped.vertices[chosen[c]];
        const Vec3 incidentPoint = fromFace(v.position);
        const Vec3 onReference = fromFace(Vec3{v.position.x, v.position.y, normalSign * halfW});
        ContactPoint& point = manifold.points[c];
        point.pointA = referenceIsA ? onReference : rotationBInA * incidentPoint + bInA.p;
        point.pointB = referenceIsA ? incidentPoint : rotationBInA * onReference + bInA.p;
        point.separation = separations[chosen[c]];
        point.featureId =
            makeClipFeatureId(kind, static_cast<std::uint32_t>(referenceFace), clipFeatureOf(v, boxEdges()));
    }
    manifold.pointCount = chosenCount;
    return manifold;
}

/// End points of box edge `edge` (the numbering of boxAsHull: edge 4k + c runs along axis k).
void boxEdgeEndpoints(const Vec3& halfExtents, int edge, Vec3& from, Vec3& to)
{
    const int axis = edge / 4;
    const int code = edge % 4;
    const int other1 = (axis + 1) % 3;
    const int other2 = (axis + 2) % 3;
    const int low = ((code & 1) << other1) | (((code >> 1) & 1) << other2);
    from = boxVertex(halfExtents, low);
    to = boxVertex(halfExtents, low | (1 << axis));
}

ContactManifold boxBoxEdgeContact(const BoxShape& a, const BoxShape& b, const Transform& bInA,
                                  const SatAxis& axis, float margin)
{
    Vec3 a0;
    Vec3 a1;
    Vec3 b0;
    Vec3 b1;
    boxEdgeEndpoints(a.halfExtents, axis.indexA, a0, a1);
    boxEdgeEndpoints(b.halfExtents, axis.indexB, b0, b1);
    return edgePairManifold(a0, a1, transformPoint(bInA, b0), transformPoint(bInA, b1), axis.normal,
                            axis.indexA, axis.indexB, margin);
}

ContactManifold polyhedronPlane(const HullView& a, const PlaneShape& b, const Transform& bInA, float margin)
{
    const Vec3 planeNormal = rotate(bInA.q, b.normal);
    const float planeOffset = b.offset + dot(planeNormal, bInA.p);
    Vec3 tangent1;
    Vec3 tangent2;
    orthonormalBasis(planeNormal, tangent1, tangent2);
    const auto planarOf = [&](int i) {
        return PlanarPoint{dot(tangent1, a.vertices[i]), dot(tangent2, a.vertices[i])};
    };
    const auto separationOf = [&](int i) { return dot(planeNormal, a.vertices[i]) - planeOffset; };
    int chosen[kMaxManifoldPoints];
    const int chosenCount = chooseContactSubset(
        [&](auto&& fn)
        {
            for (int i = 0; i < a.vertexCount; ++i)
            {
                const float separation = separationOf(i);
                if (separation <= margin)
                {
                    fn(i, planarOf(i), separation);
                }
            }
        },
        SubsetTies::Exact, chosen);

    ContactManifold manifold;
    manifold.normal = -planeNormal; // the solid half-space lies below the plane
    for (int c = 0; c < chosenCount; ++c)
    {
        const Vec3 vertex = a.vertices[chosen[c]];
        const float separation = separationOf(chosen[c]);
        manifold.points[c] = {vertex, vertex - planeNormal * separation, separation,
                              makeOtherFeatureId(static_cast<std::uint32_t>(chosen[c]))};
    }
    manifold.pointCount = chosenCount;
    return manifold;
}

/// manifoldFromSat; without `lastResort`, a face axis whose clipping leaves nothing, with no other axis
/// nearly as good, gives no points (for callers that retry with the exhaustive SAT).
ContactManifold manifoldOnSat(const HullView& a, const HullView& b, const Transform& bInA,
                              const SatResult& sat, float margin, bool lastResort)
{
    if (sat.separated)
    {
        return {};
    }
    switch (sat.chosen.feature)
    {
    case SatFeature::EdgePair:
        return edgeContact(a, b, bInA, sat.chosen, margin);
    case SatFeature::FaceOfA:
    case SatFeature::FaceOfB:
        return faceContactOrAlternative(a, b, bInA, sat, margin, lastResort);
    case SatFeature::None:
        break;
    }
    return {};
}

/// What contactDirection found.
enum class DirectionOutcome : std::uint8_t
{
    Found,    ///< `direction` holds the closest-points direction or the penetration normal
    Apart,    ///< the shapes are apart by more than the margin
    Undecided ///< GJK or EPA gave no trustworthy answer: use the exhaustive SAT
};

/// The contact direction of two polytopal supports in A's frame (unit, from A towards B): GJK's
/// closest-points direction when they are apart by at most `margin`, EPA's normal when they overlap. The
/// direction only seeds satHullsNear, which recomputes every separation exactly, so EPA runs with a
/// looser tolerance than a penetration query would use.
template <class SupportA, class SupportB>
DirectionOutcome contactDirection(const SupportA& a, const SupportB& b, const Vec3& initialDirection,
                                  float margin, SatSearchHint& hint)
{
    using namespace convex_detail;
    const double gjkMargin = std::max(double(margin), 0.0);
    const GjkCoreResult gjk = gjkOnCores(a, b, initialDirection, gjkMargin, true, GjkSettings{}, true);
    if (!gjk.finite)
    {
        return DirectionOutcome::Undecided;
    }
    if (gjk.status == GjkStatus::Separated)
    {
        if (gjk.beyondMargin)
        {
            return DirectionOutcome::Apart;
        }
        const double length = std::sqrt(gjk.closestSquared);
        if (!(length > 0.0))
        {
            return DirectionOutcome::Undecided;
        }
        hint.direction = toFloat(gjk.closest * (-1.0 / length));
        return DirectionOutcome::Found; // no bounds: SAT separations of apart shapes can be below the
                                        // distance
    }
    if (gjk.status != GjkStatus::Intersecting)
    {
        return DirectionOutcome::Undecided;
    }
    GjkSimplex simplex;
    copySimplex(gjk, simplex);
    EpaSettings settings;
    settings.relativeTolerance = kContactEpaRelativeTolerance;
    settings.acceptRelativeTolerance = 1e-2f;
    const PenetrationResult epa = epaPenetration(a, b, simplex, float(gjk.scale), settings);
    if (epa.status != EpaStatus::Colliding || !(lengthSquared(epa.normal) > 0.5f))
    {
        return DirectionOutcome::Undecided;
    }
    // EPA's depth is the distance of a face of a polytope inside the Minkowski difference: no deeper than
    // the true depth, which is within depthErrorBound of it. The slack covers float rounding.
    const float slack = 1e-6f * float(gjk.scale);
    hint.direction = epa.normal;
    hint.separationUpperBound = -epa.depth + slack;
    hint.separationLowerBound = -(epa.depth + epa.depthErrorBound) - slack;
    return DirectionOutcome::Found;
}

/// Polyhedron A against polyhedron B with their supports: GJK/EPA for the contact direction, SAT near it
/// for the exact axis and features, then clipping. Views without adjacency take the exhaustive SAT.
template <class SupportA, class SupportB>
ContactManifold collidePolyhedra(const HullView& a, const HullView& b, const Transform& bInA,
                                 const SupportA& supportA, const SupportB& supportB, float margin)
{
    if (hasAdjacency(a) && hasAdjacency(b))
    {
        SatSearchHint hint;
        switch (contactDirection(supportA, transformed(supportB, bInA), bInA.p, margin, hint))
        {
        case DirectionOutcome::Apart:
            return {};
        case DirectionOutcome::Found:
        {
            const SatResult sat = satHullsNear(a, b, bInA, hint, margin);
            const ContactManifold manifold = manifoldOnSat(a, b, bInA, sat, margin, false);
            if (manifold.pointCount > 0 || sat.separated)
            {
                return manifold;
            }
            // Rare (about 1% of deep overlaps): the face axis left nothing after clipping and no other axis
            // found nearby is nearly as good; the local search may have skipped (by EPA's bound) or missed
            // the one that is: take the exhaustive SAT.
            break;
        }
        case DirectionOutcome::Undecided:
            break;
        }
    }
    return manifoldFromSat(a, b, bInA, satHulls(a, b, bInA, margin), margin);
}

} // namespace

ContactManifold manifoldFromSat(const HullView& a, const HullView& b, const Transform& bInA,
                                const SatResult& sat, float speculativeMarginMeters)
{
    return manifoldOnSat(a, b, bInA, sat, speculativeMarginMeters, true);
}

ContactManifold collideBoxBox(const BoxShape& a, const BoxShape& b, const Transform& bInA,
                              float speculativeMarginMeters)
{
    const SatResult sat = satBoxes(a, b, bInA, speculativeMarginMeters);
    if (sat.separated)
    {
        return {};
    }
    switch (sat.chosen.feature)
    {
    case SatFeature::EdgePair:
        return boxBoxEdgeContact(a, b, bInA, sat.chosen, speculativeMarginMeters);
    case SatFeature::FaceOfA:
    case SatFeature::FaceOfB:
    {
        ContactManifold manifold = boxBoxFaceContact(a, b, bInA, sat.chosen, speculativeMarginMeters);
        if (manifold.pointCount == 0 && sat.bestEdge.feature == SatFeature::EdgePair &&
            sat.bestEdge.separation <= speculativeMarginMeters)
        {
            manifold = boxBoxEdgeContact(a, b, bInA, sat.bestEdge, speculativeMarginMeters);
        }
        return manifold;
    }
    case SatFeature::None:
        break;
    }
    return {};
}

ContactManifold collideHullHull(const ConvexHull& a, const ConvexHull& b, const Transform& bInA,
                                float speculativeMarginMeters)
{
    return collidePolyhedra(viewOf(a), viewOf(b), bInA, supportOf(a), supportOf(b), speculativeMarginMeters);
}

ContactManifold collideBoxHull(const BoxShape& a, const ConvexHull& b, const Transform& bInA,
                               float speculativeMarginMeters)
{
    const BoxAsHull hullA = boxAsHull(a);
    return collidePolyhedra(hullA.view(), viewOf(b), bInA, supportOf(a), supportOf(b),
                            speculativeMarginMeters);
}

ContactManifold collideHullBox(const ConvexHull& a, const BoxShape& b, const Transform& bInA,
                               float speculativeMarginMeters)
{
    const BoxAsHull hullB = boxAsHull(b);
    return collidePolyhedra(viewOf(a), hullB.view(), bInA, supportOf(a), supportOf(b),
                            speculativeMarginMeters);
}

ContactManifold collideBoxPlane(const BoxShape& a, const PlaneShape& b, const Transform& bInA,
                                float speculativeMarginMeters)
{
    const BoxAsHull hullA = boxAsHull(a);
    return polyhedronPlane(hullA.view(), b, bInA, speculativeMarginMeters);
}

ContactManifold collideHullPlane(const ConvexHull& a, const PlaneShape& b, const Transform& bInA,
                                 float speculativeMarginMeters)
{
    return polyhedronPlane(viewOf(a), b, bInA, speculativeMarginMeters);
}

SegmentClosestPoints closestPointsOnSegments(const Vec3& p0, const Vec3& p1, const Vec3& q0, const Vec3& q1)
{
    // Minimise |p0 + s d1 - (q0 + t d2)|^2 over the unit square (the usual derivation, e.g. Ericson,
    // Real-Time Collision Detection, 5.1.9), with relative thresholds for point-like and parallel segments.
    const Vec3 d1 = p1 - p0;
    const Vec3 d2 = q1 - q0;
    const Vec3 r = p0 - q0;
    const float a = dot(d1, d1);
    const float e = dot(d2, d2);
    const float f = dot(d2, r);
    const float tiny = 1e-12f;
    float s = 0.0f;
    float t = 0.0f;
    if (a <= tiny && e <= tiny)
    {
        // both are points
    }
    else if (a <= tiny)
    {
        t = std::clamp(f / e, 0.0f, 1.0f);
    }
    else
    {
        const float c = dot(d1, r);
        if (e <= tiny)
        {
            s = std::clamp(-c / a, 0.0f, 1.0f);
        }
        else
        {
            const float b = dot(d1, d2);
            const float denominator = a * e - b * b; // >= 0, = |d1 x d2|^2
            if (denominator > 1e-7f * a * e)
            {
                s = std::clamp((b * f - c * e) / denominator, 0.0f, 1.0f);
            }
            else
            {
                // Parallel: any s works for the lines; take the middle of the overlap seen from P.
                const float tq0 = std::clamp(-c / a, 0.0f, 1.0f);      // q0 projected on P
                const float tq1 = std::clamp((b - c) / a, 0.0f, 1.0f); // q1 projected on P
                s = 0.5f * (tq0 + tq1);
            }
            t = (b * s + f) / e;
            if (t < 0.0f)
            {
                t = 0.0f;
                s = std::clamp(-c / a, 0.0f, 1.0f);
            }
            else if (t > 1.0f)
            {
                t = 1.0f;
                s = std::clamp((b - c) / a, 0.0f, 1.0f);
            }
        }
    }
    return {s, t, p0 + d1 * s, q0 + d2 * t};
}

} // namespace polytope::physics

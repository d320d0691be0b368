// Contact manifolds between a convex shape and a triangle, and their reduction over many triangles (see
// collide_triangle.h for the conventions, the one-sided rule and the internal-edge rule).
//
// Rationale. A triangle is a polytope with one face, three edges and three vertices, so the polyhedral
// path is the SAT-and-clip scheme of collide_convex.cpp specialised to it: the triangle's face normal (from
// the front only), the convex shape's face normals, and the edge pairs whose Gauss-map arcs cross, where a
// triangle edge's arc is the half circle from the face normal out over the edge to the back normal (a
// triangle is thin: its edges are two-sided). Unlike chooseContactAxis, the bias prefers the triangle's face
// to the shape's faces: on flat ground every triangle then reports the same normal, which the reduction
// relies on. The axis chosen is then checked against the internal-edge rule: an edge-pair axis names its
// triangle edge; a face axis of the shape names the triangle feature lowest along it. A feature that is not
// active sends the contact to the triangle's face axis instead (Jolt's FixNormal does the same with the
// normal of a GJK/EPA contact; working on features keeps the face contact's clipped points and ids). On
// the triangle's face, the shape's lowest vertex is often not over the triangle (on a mesh, a body's lowest
// vertex is over one triangle of the several it touches); then the one face through it says little about
// the shape over this triangle, and the whole lower surface is clipped instead. Rounded shapes use closest
// points of their cores rather than SAT, since SAT separations of a vertex or edge of the triangle against a
// round shape are not distances.
// All buffers are fixed-size and on the stack.
#include "polytope/physics/collide_triangle.h"

#include "polytope/physics/collide.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/sat.h"
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

/// A capsule lies along the triangle when the sine of its axis' angle to the plane is below this (about 3
/// degrees, as capsule-box and capsule-hull) ...
constexpr float kCapsuleLyingSine = 0.05f;
/// ... and its contact normal is within about 8 degrees of the face normal.
constexpr float kCapsuleFaceNormalCosine = 0.99f;
/// Triangle vertices whose height along a normal exceeds the lowest one's by at most this slope times
/// their distance from it also support the triangle along that normal (see supportingFeature).
constexpr float kSupportSlope = 1e-3f;

enum class FeatureKind : std::uint8_t
{
    Face,
    Edge,  ///< index: 0 ab, 1 bc, 2 ca
    Vertex ///< index: 0 a, 1 b, 2 c
};

struct TriangleFeature
{
    FeatureKind kind = FeatureKind::Face;
    int index = 0;
};

/// The triangle in the convex shape's frame. Edge j runs from v[j] to v[(j + 1) % 3].
struct LocalTriangle
{
    Vec3 v[3];
    Vec3 normal;  ///< unit, front
    Vec3 side[3]; ///< unit, in the plane, outward across edge j (addSides)
    std::uint8_t activeEdges;
};

int nextOf(int j)
{
    return j == 2 ? 0 : j + 1;
}

bool edgeActive(const LocalTriangle& t, int edge)
{
    return ((t.activeEdges >> edge) & 1u) != 0;
}

/// The internal-edge rule: whether a contact normal `towardConvex` (unit, from the triangle towards the
/// shape) coming from `feature` is kept.
bool admissible(const LocalTriangle& t, const TriangleFeature& feature, const Vec3& towardConvex)
{
    switch (feature.kind)
    {
    case FeatureKind::Face:
        return dot(towardConvex, t.normal) > 0.0f;
    case FeatureKind::Edge:
        return edgeActive(t, feature.index);
    case FeatureKind::Vertex:
    {
        const int leaving = feature.index;
        const int arriving = (feature.index + 2) % 3;
        return (edgeActive(t, leaving) && dot(towardConvex, t.side[leaving]) > 0.0f) ||
               (edgeActive(t, arriving) && dot(towardConvex, t.side[arriving]) > 0.0f);
    }
    }
    return false;
}

/// The triangle's feature that supports it along `direction` (unit): its vertices lowest along it, within
/// kSupportSlope (three: the face; two: their edge; one: the vertex).
TriangleFeature supportingFeature(const LocalTriangle& t, const Vec3& direction)
{
    float heights[3];
    int lowest = 0;
    for (int i = 0; i < 3; ++i)
    {
        heights[i] = dot(t.v[i], direction);
        if (heights[i] < heights[lowest])
        {
            lowest = i;
        }
    }
    bool supports[3];
    int count = 0;
    for (int i = 0; i < 3; ++i)
    {
        supports[i] =
            i == lowest || heights[i] - heights[lowest] <= kSupportSlope * distance(t.v[i], t.v[lowest]);
        count += supports[i] ? 1 : 0;
    }
    if (count == 3)
    {
        return {FeatureKind::Face, 0};
    }
    if (count == 2)
    {
        for (int j = 0; j < 3; ++j)
        {
            if (supports[j] && supports[nextOf(j)])
            {
                return {FeatureKind::Edge, j};
            }
        }
    }
    return {FeatureKind::Vertex, lowest};
}

/// The triangle in A's frame (its side normals left for addSides), or false when it is degenerate or not
/// finite.
bool makeLocalTriangle(const Triangle& triangle, const Transform& triangleInA, std::uint8_t activeEdges,
                       LocalTriangle& out)
{
    if (!isFinite(triangle.a) || !isFinite(triangle.b) || !isFinite(triangle.c) || !isFinite(triangleInA.p) ||
        !isFinite(triangleInA.q))
    {
        return false;
    }
    const Vec3 ab = triangle.b - triangle.a;
    const Vec3 bc = triangle.c - triangle.b;
    const Vec3 ca = triangle.a - triangle.c;
    const Vec3 areaNormal = cross(ab, triangle.c - triangle.a);
    const float longest2 = std::max(lengthSquared(ab), std::max(lengthSquared(bc), lengthSquared(ca)));
    const float area2 = lengthSquared(areaNormal);
    if (!(area2 > 1e-12f * longest2 * longest2) || !std::isfinite(area2))
    {
        return false;
    }
    // The normal comes from the triangle's own frame, rotated once, so that triangles of one plane give
    // normals equal to rounding whatever the body's pose.
    out.normal = normalize(rotate(triangleInA.q, areaNormal / std::sqrt(area2)));
    out.v[0] = transformPoint(triangleInA, triangle.a);
    out.v[1] = transformPoint(triangleInA, triangle.b);
    out.v[2] = transformPoint(triangleInA, triangle.c);
    out.activeEdges = static_cast<std::uint8_t>(activeEdges & kAllTriangleEdgesActive);
    return true;
}

/// The side normals of `t`. Each shape's routine first rejects the triangle by its plane, which needs only
/// the vertices and the normal (most triangles a shape's box meets on a mesh are rejected there), and only
/// then adds them.
void addSides(LocalTriangle& t)
{
    for (int j = 0; j < 3; ++j)
    {
        t.side[j] = normalize(cross(t.v[nextOf(j)] - t.v[j], t.normal));
    }
}

// ---- Closest points of cores (spheres, capsules) -------------------------------------------------------

struct TrianglePoint
{
    Vec3 point;
    TriangleFeature feature;
};

/// The point of the triangle closest to `p`, and the feature it lies on.
TrianglePoint closestPointOnTriangle(const Vec3& p, const LocalTriangle& t)
{
    // Inside all three side planes: the foot of p on the face. Otherwise the nearest point of the three
    // edges (a point outside is nearest to the boundary).
    const Vec3 foot = p - t.normal * dot(p - t.v[0], t.normal);
    if (dot(foot - t.v[0], t.side[0]) <= 0.0f && dot(foot - t.v[1], t.side[1]) <= 0.0f &&
        dot(foot - t.v[2], t.side[2]) <= 0.0f)
    {
        return {foot, {FeatureKind::Face, 0}};
    }
    TrianglePoint best{t.v[0], {FeatureKind::Vertex, 0}};
    float bestDistance2 = std::numeric_limits<float>::infinity();
    for (int j = 0; j < 3; ++j)
    {
        const Vec3& from = t.v[j];
        const Vec3 along = t.v[nextOf(j)] - from;
        const float s = std::clamp(dot(p - from, along) / lengthSquared(along), 0.0f, 1.0f);
        const Vec3 q = from + along * s;
        const float d2 = lengthSquared(p - q);
        if (d2 < bestDistance2)
        {
            bestDistance2 = d2;
            if (s <= 0.0f)
            {
                best = {from, {FeatureKind::Vertex, j}};
            }
            else if (s >= 1.0f)
            {
                best = {t.v[nextOf(j)], {FeatureKind::Vertex, nextOf(j)}};
            }
            else
            {
                best = {q, {FeatureKind::Edge, j}};
            }
        }
    }
    return best;
}

struct SegmentTriangleClosest
{
    Vec3 onSegment;
    Vec3 onTriangle;
    float distance2;
    TriangleFeature feature;
};

/// Closest points of segment p0 + s d (s in [0, 1]) and the triangle; distance2 == 0 when the segment
/// meets the triangle.
SegmentTriangleClosest closestSegmentTriangle(const Vec3& p0, const Vec3& p1, const LocalTriangle& t)
{
    const float h0 = dot(p0 - t.v[0], t.normal);
    const float h1 = dot(p1 - t.v[0], t.normal);
    if (((h0 <= 0.0f && h1 >= 0.0f) || (h0 >= 0.0f && h1 <= 0.0f)) && h0 != h1)
    {
        const Vec3 crossing = p0 + (p1 - p0) * (h0 / (h0 - h1));
        if (dot(crossing - t.v[0], t.side[0]) <= 0.0f && dot(crossing - t.v[1], t.side[1]) <= 0.0f &&
            dot(crossing - t.v[2], t.side[2]) <= 0.0f)
        {
            return {crossing, crossing, 0.0f, {FeatureKind::Face, 0}};
        }
    }
    // Otherwise an end of the segment is nearest to the triangle, or an inner point of it to an edge. Ends
    // first, so that a segment parallel to the face and over it reports the face.
    SegmentTriangleClosest best{};
    best.distance2 = std::numeric_limits<float>::infinity();
    for (const Vec3& end : {p0, p1})
    {
        const TrianglePoint q = closestPointOnTriangle(end, t);
        const float d2 = lengthSquared(end - q.point);
        if (d2 < best.distance2)
        {
            best = {end, q.point, d2, q.feature};
        }
    }
    for (int j = 0; j < 3; ++j)
    {
        const SegmentClosestPoints c = closestPointsOnSegments(p0, p1, t.v[j], t.v[nextOf(j)]);
        const float d2 = lengthSquared(c.onP - c.onQ);
        if (d2 < best.distance2)
        {
            TriangleFeature feature{FeatureKind::Edge, j};
            if (c.t <= 0.0f)
            {
                feature = {FeatureKind::Vertex, j};
            }
            else if (c.t >= 1.0f)
            {
                feature = {FeatureKind::Vertex, nextOf(j)};
            }
            best = {c.onP, c.onQ, d2, feature};
        }
    }
    return best;
}

/// One point of a rounded shape: core point `core` with `radius`, its contact normal `towardConvex` (from
/// the triangle to the shape) and separation.
ContactManifold roundContact(const Vec3& core, float radius, const Vec3& towardConvex, float separation,
                             float margin, std::uint32_t code)
{
    ContactManifold manifold;
    manifold.normal = -towardConvex;
    if (separation <= margin)
    {
        const Vec3 pointA = core - towardConvex * radius;
        manifold.points[0] = {pointA, pointA - towardConvex * separation, separation,
                              makeOtherFeatureId(code)};
        manifold.pointCount = 1;
    }
    return manifold;
}

ContactManifold sphereTriangle(float radius, LocalTriangle& t, float margin)
{
    ContactManifold none;
    none.normal = -t.normal;
    const Vec3 centre{};
    const float height = dot(centre - t.v[0], t.normal);
    if (!(height >= 0.0f) || height - radius > margin)
    {
        return none; // behind the triangle, or above its plane by more than the margin
    }
    addSides(t);
    const TrianglePoint closest = closestPointOnTriangle(centre, t);
    if (closest.feature.kind == FeatureKind::Face)
    {
        return roundContact(centre, radius, t.normal, height - radius, margin, 0);
    }
    const Vec3 offset = centre - closest.point;
    const float distanceToTriangle = length(offset);
    Vec3 towardConvex = distanceToTriangle > 1e-6f * radius ? offset / distanceToTriangle : t.normal;
    if (!admissible(t, closest.feature, towardConvex))
    {
        towardConvex = t.normal;
    }
    return roundContact(centre, radius, towardConvex, distanceToTriangle - radius, margin, 0);
}

/// The core point of a capsule closest to the triangle: its parameter along the core and its separation.
struct CoreClosest
{
    float parameter = std::numeric_limits<float>::quiet_NaN(); ///< NaN: none known
    float separation = std::numeric_limits<float>::infinity();
};

/// Up to two points of a capsule core p0 + s d lying along the triangle's face: the core clipped to the
/// triangle's side planes, each end within the margin, separated by its height above the face. When the
/// core's closest point to the triangle (`closest`) lies beyond an end (the core runs slightly downhill over
/// an edge), that end moves there and takes the true distance, so the pair is never shallower than the
/// closest points.
ContactManifold capsuleOnFace(const Vec3& p0, const Vec3& d, float radius, const LocalTriangle& t,
                              float margin, const CoreClosest& closest)
{
    ContactManifold manifold;
    manifold.normal = -t.normal;
    float s0 = 0.0f;
    float s1 = 1.0f;
    for (int j = 0; j < 3; ++j)
    {
        const float start = dot(p0 - t.v[j], t.side[j]);
        const float slope = dot(d, t.side[j]);
        if (slope == 0.0f)
        {
            if (start > 0.0f)
            {
                return manifold;
            }
            continue;
        }
        const float s = -start / slope;
        if (slope > 0.0f)
        {
            s1 = std::min(s1, s);
        }
        else
        {
            s0 = std::max(s0, s);
        }
    }
    if (!(s0 <= s1))
    {
        return manifold;
    }
    const float ends[2] = {s0, s1};
    const int endCount = s1 - s0 > 1e-6f ? 2 : 1;
    for (int e = 0; e < endCount; ++e)
    {
        const bool moved = e == 0 ? closest.parameter < s0 : closest.parameter > ends[endCount - 1];
        const Vec3 core = p0 + d * (moved ? closest.parameter : ends[e]);
        const float separation = moved ? closest.separation : dot(core - t.v[0], t.normal) - radius;
        if (separation <= margin)
        {
            const Vec3 pointA = core - t.normal * radius;
            manifold.points[manifold.pointCount++] = {pointA, pointA - t.normal * separation, separation,
                                                      makeOtherFeatureId(static_cast<std::uint32_t>(e + 1))};
        }
    }
    return manifold;
}

ContactManifold capsuleTriangle(const CapsuleShape& capsule, LocalTriangle& t, float margin)
{
    ContactManifold none;
    none.normal = -t.normal;
    const float radius = capsule.radius;
    const Vec3 p0{0.0f, -capsule.halfHeight, 0.0f};
    const Vec3 p1{0.0f, capsule.halfHeight, 0.0f};
    const Vec3 d = p1 - p0;
    const float centreHeight = -dot(t.v[0], t.normal);
    const float h0 = dot(p0 - t.v[0], t.normal);
    const float h1 = dot(p1 - t.v[0], t.normal);
    if (!(centreHeight >= 0.0f) || std::min(h0, h1) - radius > margin)
    {
        return none;
    }
    addSides(t);
    const float scale = std::max(capsule.halfHeight, radius);
    const bool lying = std::fabs(dot(d, t.normal)) <= kCapsuleLyingSine * length(d);
    const SegmentTriangleClosest closest = closestSegmentTriangle(p0, p1, t);
    const float distanceToTriangle = std::sqrt(closest.distance2);

    if (distanceToTriangle > 1e-6f * scale)
    {
        // The core is outside the triangle: closest points.
        if (distanceToTriangle - radius > margin)
        {
            return none;
        }
        const bool onFace = closest.feature.kind == FeatureKind::Face;
        Vec3 towardConvex = onFace ? t.normal : (closest.onSegment - closest.onTriangle) / distanceToTriangle;
        const bool replaced = !onFace && !admissible(t, closest.feature, towardConvex);
        if (replaced)
        {
            towardConvex = t.normal;
        }
        const float separation =
            onFace ? dot(closest.onSegment - t.v[0], t.normal) - radius : distanceToTriangle - radius;
        if (lying && dot(towardConvex, t.normal) >= kCapsuleFaceNormalCosine)
        {
            const CoreClosest core{dot(closest.onSegment - p0, d) / lengthSquared(d), separation};
            const ContactManifold pair = capsuleOnFace(p0, d, radius, t, margin, core);
            if (pair.pointCount > 0)
            {
                return pair;
            }
        }
        return roundContact(closest.onSegment, radius, towardConvex, separation, margin, 0);
    }

    // The core touches or crosses the triangle: SAT on the core (face normal from the front; the core
    // crossed with each edge, either way round), then the radius.
    const float faceSeparation = std::min(h0, h1) - radius;
    float edgeSeparation = -std::numeric_limits<float>::infinity();
    Vec3 edgeNormal{}; // from the capsule towards the triangle
    int edge = -1;
    for (int j = 0; j < 3; ++j)
    {
        const Vec3 along = t.v[nextOf(j)] - t.v[j];
        const Vec3 axis = cross(d, along);
        const float axis2 = lengthSquared(axis);
        if (!(axis2 > kSatParallelSine * kSatParallelSine * lengthSquared(d) * lengthSquared(along)))
        {
            continue;
        }
        for (const float sign : {1.0f, -1.0f})
        {
            const Vec3 l = axis * (sign / std::sqrt(axis2));
            const float triangleLow = std::min(dot(t.v[0], l), std::min(dot(t.v[1], l), dot(t.v[2], l)));
            const float s = triangleLow - std::max(dot(p0, l), dot(p1, l)) - radius;
            if (s > edgeSeparation)
            {
                edgeSeparation = s;
                edgeNormal = l;
                edge = j;
            }
        }
    }
    if (edge >= 0 && edgeActive(t, edge) &&
        edgeSeparation > satBiasedThreshold(faceSeparation, kSatEdgeRelativeTolerance))
    {
        const SegmentClosestPoints c = closestPointsOnSegments(p0, p1, t.v[edge], t.v[nextOf(edge)]);
        ContactManifold manifold;
        manifold.normal = edgeNormal;
        const float separation = dot(c.onQ - c.onP, edgeNormal) - radius;
        if (separation <= margin)
        {
            manifold.points[0] = {c.onP + edgeNormal * radius, c.onQ, separation, makeOtherFeatureId(0)};
            manifold.pointCount = 1;
        }
        return manifold;
    }
    const ContactManifold onFace = capsuleOnFace(p0, d, radius, t, margin, CoreClosest{});
    if (onFace.pointCount > 0)
    {
        return onFace;
    }
    const Vec3 lowest = h0 <= h1 ? p0 : p1; // rounding left nothing over the face: the lower end
    return roundContact(lowest, radius, t.normal, std::min(h0, h1) - radius, margin, 0);
}

// ---- Polyhedra (boxes, hulls) ----------------------------------------------------------------------------

/// The manifold of a clipped polygon against a reference plane: the vertices within the margin (at most
/// four, else chooseContactSubset's four). `separationOf(x)` is the height of x above the reference plane,
/// `makePoint(vertex, separation, contactPoint)` fills a point.
template <class SeparationOf, class MakePoint>
ContactManifold manifoldOfClipped(const ClipPolygon& clipped, const Vec3& referenceNormal, const Vec3& normal,
                                  float margin, SeparationOf separationOf, MakePoint makePoint)
{
    float separations[kMaxClipVertices];
    for (int i = 0; i < clipped.count; ++i)
    {
        separations[i] = separationOf(clipped.vertices[i].position);
    }
    Vec3 tangent1;
    Vec3 tangent2;
    orthonormalBasis(referenceNormal, tangent1, tangent2);
    int chosen[kMaxManifoldPoints];
    const int chosenCount = chooseClippedContacts(
        clipped.count, [&](int i) { return separations[i]; },
        [&](int i)
        {
            const Vec3& x = clipped.vertices[i].position;
            return PlanarPoint{dot(tangent1, x), dot(tangent2, x)};
        },
        margin, SubsetTies::Rounding, chosen);
    ContactManifold manifold;
    manifold.normal = normal;
    for (int c = 0; c < chosenCount; ++c)
    {
        makePoint(clipped.vertices[chosen[c]], separations[chosen[c]], manifold.points[c]);
    }
    manifold.pointCount = chosenCount;
    return manifold;
}

/// A face of the shape counts as facing the triangle (part of its lower surface) when the cosine of its
/// normal with the triangle's is below this: more than about 0.06 degrees from vertical. A vertical face
/// projects onto a line, and its clipped corners would not lie on the lower surface.
constexpr float kLowerFaceCosine = -1e-3f;

/// The triangle's face as the reference. When the shape's lowest vertex lies over the triangle, the
/// shape's incident face (of the faces through that vertex, the most anti-parallel to the normal) clipped
/// to the triangle's side planes, as for any face contact. Otherwise (the shape hangs over an edge, or its
/// lowest point is over a neighbour because an internal edge sent the contact here) that face may miss the
/// triangle while others reach over it, so every face of the shape's lower surface is clipped: the points
/// are then the lower surface over the triangle, whose lowest point is one of them. Separations are
/// heights above the triangle; a point met by two faces (a shared vertex or edge crossing) counts once.
ContactManifold triangleFaceContact(const HullView& hull, const LocalTriangle& t, int deepestVertex,
                                    float margin)
{
    const Vec3 normal = t.normal;
    const Vec3 origin = t.v[0];
    const Vec3& lowest = hull.vertices[deepestVertex];
    bool overTriangle = true;
    for (int j = 0; j < 3; ++j)
    {
        overTriangle = overTriangle && dot(lowest - t.v[j], t.side[j]) <= 0.0f;
    }
    struct Candidate
    {
        Vec3 position;
        float separation;
        std::uint32_t featureId;
    };
    union CandidateBuffer // left uninitialised (Vec3 zeroes itself): only [0, candidateCount) is read
    {
        Candidate candidates[kMaxClipVertices];
        CandidateBuffer() {}
    } buffer;
    Candidate* const candidates = buffer.candidates;
    int candidateCount = 0;
    const auto clipFace = [&](int face)
    {
        const HullFace& f = hull.faces[face];
        const int n = std::min(static_cast<int>(f.indexCount), kMaxClipVertices);
        if (n < 3)
        {
            return;
        }
        ClipPolygon buffers[2];
        ClipPolygon* polygon = &buffers[0];
        ClipPolygon* scratch = &buffers[1];
        std::uint16_t loopEdges[kMaxClipVertices];
        loopEdgeIndices(hull, face, n, loopEdges);
        const std::uint16_t* loop = hull.faceVertices + f.firstIndex;
        for (int k = 0; k < n; ++k)
        {
            polygon->push({hull.vertices[loop[k]], loopEdges[k == 0 ? n - 1 : k - 1], loopEdges[k]});
        }
        for (int j = 0; j < 3 && polygon->count > 0; ++j)
        {
            const Vec3& sideNormal = t.side[j];
            const float sideOffset = dot(sideNormal, t.v[j]);
            clipToHalfSpace(
                polygon, scratch, [&](const Vec3& x) { return dot(sideNormal, x) - sideOffset; },
                static_cast<std::uint16_t>(kReferenceSideTag | j));
        }
        for (int k = 0; k < polygon->count; ++k)
        {
            const ClipVertex& v = polygon->vertices[k];
            const float separation = dot(v.position - origin, normal);
            if (!(separation <= margin))
            {
                continue;
            }
            const std::uint32_t id =
                makeClipFeatureId(ContactFeatureKind::FaceOfB, 0, clipFeatureOf(v, hull.edges));
            Candidate* same = std::find_if(candidates, candidates + candidateCount,
                                           [&](const Candidate& c) { return c.featureId == id; });
            if (same != candidates + candidateCount)
            {
                if (separation < same->separation)
                {
                    *same = {v.position, separation, id};
                }
            }
            else if (candidateCount < kMaxClipVertices)
            {
                candidates[candidateCount++] = {v.position, separation, id};
            }
        }
    };
    if (overTriangle)
    {
        clipFace(incidentFaceAt(hull, deepestVertex, normal));
    }
    else
    {
        for (int f = 0; f < hull.faceCount; ++f)
        {
            if (dot(hull.faces[f].normal, normal) < kLowerFaceCosine)
            {
                clipFace(f);
            }
        }
    }

    Vec3 tangent1;
    Vec3 tangent2;
    orthonormalBasis(normal, tangent1, tangent2);
    int chosen[kMaxManifoldPoints];
    const int chosenCount = chooseClippedContacts(
        candidateCount, [&](int c) { return candidates[c].separation; },
        [&](int c)
        {
            const Vec3& x = candidates[c].position;
            return PlanarPoint{dot(tangent1, x), dot(tangent2, x)};
        },
        margin, SubsetTies::Rounding, chosen);
    ContactManifold manifold;
    manifold.normal = -normal;
    for (int c = 0; c < chosenCount; ++c)
    {
        const Candidate& x = candidates[chosen[c]];
        manifold.points[c] = {x.position, x.position - normal * x.separation, x.separation, x.featureId};
    }
    manifold.pointCount = chosenCount;
    return manifold;
}

/// Face `face` of the shape as the reference: the triangle clipped to its side planes.
ContactManifold convexFaceContact(const HullView& hull, const LocalTriangle& t, int face, float margin)
{
    const HullFace& reference = hull.faces[face];
    ClipPolygon buffers[2];
    ClipPolygon* polygon = &buffers[0];
    ClipPolygon* scratch = &buffers[1];
    for (int k = 0; k < 3; ++k)
    {
        polygon->push({t.v[k], static_cast<std::uint16_t>((k + 2) % 3), static_cast<std::uint16_t>(k)});
    }
    const std::uint16_t* loop = hull.faceVertices + reference.firstIndex;
    const int n = reference.indexCount;
    for (int k = 0; k < n && polygon->count > 0; ++k)
    {
        const Vec3& start = hull.vertices[loop[k]];
        const Vec3& end = hull.vertices[loop[k + 1 < n ? k + 1 : 0]];
        const Vec3 sideNormal = cross(end - start, reference.normal);
        const float sideOffset = dot(sideNormal, start);
        clipToHalfSpace(
            polygon, scratch, [&](const Vec3& x) { return dot(sideNormal, x) - sideOffset; },
            static_cast<std::uint16_t>(kReferenceSideTag | (k & kTagIndexMask)));
    }
    const Vec3 normal = reference.normal;
    const float offset = reference.offset;
    // Triangle edge j leaves vertex j.
    const auto sharedVertex = [](std::uint32_t, std::uint32_t out) { return out; };
    return manifoldOfClipped(
        *polygon, normal, normal, margin, [&](const Vec3& x) { return dot(normal, x) - offset; },
        [&](const ClipVertex& v, float separation, ContactPoint& point)
        {
            point = {v.position - normal * separation, v.position, separation,
                     makeClipFeatureId(ContactFeatureKind::FaceOfA, static_cast<std::uint32_t>(face),
                                       clipFeatureOf(v, sharedVertex))};
        });
}

/// What the SAT of a polyhedron against the triangle found.
enum class AxisKind : std::uint8_t
{
    TriangleFace,
    ConvexFace,
    EdgePair
};

struct PolyhedronSat
{
    float triangleFace = 0.0f; ///< separation along the triangle's face normal (the shape's lowest height)
    int deepestVertex = 0;     ///< the shape's lowest vertex along the triangle normal
    float convexFace = -std::numeric_limits<float>::infinity();
    int face = -1;
    float edgePair = -std::numeric_limits<float>::infinity();
    int convexEdge = -1;
    int triangleEdge = -1;
    Vec3 edgeNormal{}; ///< unit, from the shape towards the triangle
};

/// One point at the closest points of the shape's edge and the triangle's edge of `sat`.
ContactManifold edgePairContact(const HullView& hull, const LocalTriangle& t, const PolyhedronSat& sat,
                                float margin)
{
    const HullEdge& edge = hull.edges[sat.convexEdge];
    return edgePairManifold(hull.vertices[edge.v0], hull.vertices[edge.v1], t.v[sat.triangleEdge],
                            t.v[nextOf(sat.triangleEdge)], sat.edgeNormal, sat.convexEdge, sat.triangleEdge,
                            margin);
}

/// The last resort on the shape's face axis when its clipping left nothing (as collide_convex.cpp): the
/// triangle's lowest vertex along the face normal, paired with its projection onto the face's plane.
ContactManifold deepestTriangleVertexContact(const HullView& hull, const LocalTriangle& t,
                                             const PolyhedronSat& sat, float margin)
{
    ContactManifold manifold;
    const HullFace& reference = hull.faces[sat.face];
    manifold.normal = reference.normal;
    int lowest = 0;
    for (int i = 1; i < 3; ++i)
    {
        lowest = dot(t.v[i], reference.normal) < dot(t.v[lowest], reference.normal) ? i : lowest;
    }
    const float separation = dot(t.v[lowest], reference.normal) - reference.offset;
    if (separation <= margin)
    {
        manifold.points[0] = {
            t.v[lowest] - reference.normal * separation, t.v[lowest], separation,
            makeClipFeatureId(ContactFeatureKind::FaceOfA, static_cast<std::uint32_t>(sat.face),
                              clipFeatureIncidentVertex(static_cast<std::uint32_t>(lowest)))};
        manifold.pointCount = 1;
    }
    return manifold;
}

/// The last resort of a face axis whose clipping left nothing while the SAT keeps the shapes within the
/// margin, for shapes that are apart: one point at their closest points (GJK), normally an edge or vertex of
/// the triangle against the shape, subject to the internal-edge rule like any other contact. A face-normal
/// point there would lie beside the triangle and catch a body falling past its edge. Overlapping shapes
/// (not met in testing: their lower surface over the triangle, or the triangle's deepest vertex under the
/// face, is then clipped) take the shape's face axis's last resort, or nothing.
ContactManifold closestPointsContact(const HullView& hull, const LocalTriangle& t, const PolyhedronSat& sat,
                                     AxisKind axis, float margin)
{
    const HullSupport shape{hull.vertices, static_cast<std::size_t>(hull.vertexCount)};
    const HullSupport triangle{t.v, 3};
    const GjkResult gjk = gjkClosestPoints(shape, triangle, -t.normal);
    if (gjk.status == GjkStatus::Intersecting && axis == AxisKind::ConvexFace)
    {
        return deepestTriangleVertexContact(hull, t, sat, margin);
    }
    ContactManifold manifold;
    manifold.normal = -t.normal;
    if (gjk.status != GjkStatus::Separated || !(gjk.distance <= margin))
    {
        return manifold;
    }
    const TriangleFeature feature = closestPointOnTriangle(gjk.pointOnA, t).feature;
    if (!admissible(t, feature, -gjk.normal))
    {
        return manifold;
    }
    manifold.normal = gjk.normal;
    manifold.points[0] = {gjk.pointOnA, gjk.pointOnB, gjk.distance,
                          makeOtherFeatureId(static_cast<std::uint32_t>(
                              1 + 3 * static_cast<int>(feature.kind) + feature.index))};
    manifold.pointCount = 1;
    return manifold;
}

/// SAT of a polyhedron against the triangle; false when an axis separates them by more than `margin`.
/// The side normals are added to `t` once the faces have not separated the two.
bool polyhedronSat(const HullView& hull, LocalTriangle& t, float margin, PolyhedronSat& sat)
{
    // The triangle's face, from the front: the shape's lowest vertex.
    sat.triangleFace = std::numeric_limits<float>::infinity();
    for (int v = 0; v < hull.vertexCount; ++v)
    {
        const float height = dot(hull.vertices[v] - t.v[0], t.normal);
        if (height < sat.triangleFace)
        {
            sat.triangleFace = height;
            sat.deepestVertex = v;
        }
    }
    if (!(sat.triangleFace <= margin))
    {
        return false;
    }
    // The shape's faces: the triangle's lowest vertex under each.
    for (int f = 0; f < hull.faceCount; ++f)
    {
        const HullFace& face = hull.faces[f];
        const float s =
            std::min(dot(t.v[0], face.normal), std::min(dot(t.v[1], face.normal), dot(t.v[2], face.normal))) -
            face.offset;
        if (!(s <= margin))
        {
            return false;
        }
        if (s > sat.convexFace)
        {
            sat.convexFace = s;
            sat.face = f;
        }
    }
    addSides(t);
    // Edge pairs that make a face of the Minkowski difference: the shape's edge arc (between its two face
    // normals) crosses the great circle normal to the triangle edge, at an axis L (out of the shape) whose
    // opposite lies on the triangle edge's half circle, i.e. L does not point out across the edge. Each
    // face normal's component along each triangle edge serves every edge of that face: computed once when
    // the faces fit the buffer.
    const Vec3 triangleAlongs[3] = {t.v[1] - t.v[0], t.v[2] - t.v[1], t.v[0] - t.v[2]};
    constexpr int kBufferedFaces = 64;
    float faceAlong[kBufferedFaces][3];
    const bool buffered = hull.faceCount <= kBufferedFaces;
    if (buffered)
    {
        for (int f = 0; f < hull.faceCount; ++f)
        {
            for (int j = 0; j < 3; ++j)
            {
                faceAlong[f][j] = dot(hull.faces[f].normal, triangleAlongs[j]);
            }
        }
    }
    const auto normalAlong = [&](int face, int j)
    { return buffered ? faceAlong[face][j] : dot(hull.faces[face].normal, triangleAlongs[j]); };
    for (int e = 0; e < hull.edgeCount; ++e)
    {
        const HullEdge& edge = hull.edges[e];
        const Vec3& normal0 = hull.faces[edge.face0].normal;
        const Vec3& normal1 = hull.faces[edge.face1].normal;
        const Vec3& from = hull.vertices[edge.v0];
        const Vec3 along = hull.vertices[edge.v1] - from;
        for (int j = 0; j < 3; ++j)
        {
            const Vec3& triangleAlong = triangleAlongs[j];
            if (!(normalAlong(edge.face0, j) * normalAlong(edge.face1, j) < 0.0f))
            {
                continue;
            }
            Vec3 axis = cross(along, triangleAlong);
            const float axis2 = lengthSquared(axis);
            if (!(axis2 >
                  kSatParallelSine * kSatParallelSine * lengthSquared(along) * lengthSquared(triangleAlong)))
            {
                continue;
            }
            axis = axis / std::sqrt(axis2);
            if (dot(axis, normal0 + normal1) < 0.0f)
            {
                axis = -axis;
            }
            if (dot(axis, t.side[j]) > 0.0f)
            {
                continue;
            }
            const float s = dot(axis, t.v[j] - from);
            if (!(s <= margin))
            {
                return false;
            }
            if (s > sat.edgePair)
            {
                sat.edgePair = s;
                sat.convexEdge = e;
                sat.triangleEdge = j;
                sat.edgeNormal = axis;
            }
        }
    }
    return true;
}

ContactManifold polyhedronTriangle(const HullView& hull, LocalTriangle& t, float margin)
{
    ContactManifold none;
    none.normal = -t.normal;
    if (hull.vertexCount == 0 || hull.faceCount == 0 || !(dot(hull.interiorPoint - t.v[0], t.normal) >= 0.0f))
    {
        return none;
    }
    PolyhedronSat sat;
    if (!polyhedronSat(hull, t, margin, sat))
    {
        return none;
    }
    // The triangle's face first; the shape's face, then an edge pair, only when clearly better
    // (chooseContactAxis's tolerances, with the roles of the two faces swapped).
    AxisKind axis = AxisKind::TriangleFace;
    if (sat.face >= 0 && sat.convexFace > satBiasedThreshold(sat.triangleFace, kSatFaceRelativeTolerance))
    {
        axis = AxisKind::ConvexFace;
    }
    const float bestFace = std::max(sat.triangleFace, sat.convexFace);
    if (sat.convexEdge >= 0 && sat.edgePair > satBiasedThreshold(bestFace, kSatEdgeRelativeTolerance))
    {
        axis = AxisKind::EdgePair;
    }
    const auto admissibleAxis = [&](AxisKind kind)
    {
        switch (kind)
        {
        case AxisKind::TriangleFace:
            return true;
        case AxisKind::ConvexFace:
        {
            const Vec3& normal = hull.faces[sat.face].normal;
            return admissible(t, supportingFeature(t, normal), -normal);
        }
        case AxisKind::EdgePair:
            return edgeActive(t, sat.triangleEdge);
        }
        return false;
    };
    const auto build = [&](AxisKind kind)
    {
        switch (kind)
        {
        case AxisKind::TriangleFace:
            return triangleFaceContact(hull, t, sat.deepestVertex, margin);
        case AxisKind::ConvexFace:
            return convexFaceContact(hull, t, sat.face, margin);
        case AxisKind::EdgePair:
            return edgePairContact(hull, t, sat, margin);
        }
        return ContactManifold{};
    };
    if (!admissibleAxis(axis))
    {
        // Internal edge: the face contact, or nothing from this triangle (see the header).
        return build(AxisKind::TriangleFace);
    }
    ContactManifold manifold = build(axis);
    if (manifold.pointCount > 0 || axis == AxisKind::EdgePair)
    {
        return manifold;
    }
    // A face axis whose clipping left nothing: another axis if nearly as good and admissible (faces first,
    // as faceContactOrAlternative in collide_convex.cpp), else the closest points.
    const AxisKind otherFace = axis == AxisKind::TriangleFace ? AxisKind::ConvexFace : AxisKind::TriangleFace;
    const float chosenSeparation = axis == AxisKind::TriangleFace ? sat.triangleFace : sat.convexFace;
    const float otherSeparation = axis == AxisKind::TriangleFace ? sat.convexFace : sat.triangleFace;
    if ((otherFace == AxisKind::TriangleFace || sat.face >= 0) &&
        satNearlyAsGood(otherSeparation, chosenSeparation, kSatFaceRelativeTolerance) &&
        admissibleAxis(otherFace))
    {
        manifold = build(otherFace);
        if (manifold.pointCount > 0)
        {
            return manifold;
        }
    }
    if (sat.convexEdge >= 0 && satNearlyAsGood(sat.edgePair, bestFace, kSatEdgeRelativeTolerance) &&
        admissibleAxis(AxisKind::EdgePair))
    {
        manifold = build(AxisKind::EdgePair);
        if (manifold.pointCount > 0)
        {
            return manifold;
        }
    }
    return closestPointsContact(hull, t, sat, axis, margin);
}

} // namespace

ContactManifold collideConvexTriangle(const Shape& convex, std::span<const ConvexHull> hulls,
                                      const Transform& triangleInConvex, const Triangle& triangle,
                                      std::uint8_t activeEdges, float speculativeMarginMeters)
{
    LocalTriangle t;
    if (!makeLocalTriangle(triangle, triangleInConvex, activeEdges, t) || std::isnan(speculativeMarginMeters))
    {
        return {};
    }
    ContactManifold manifold;
    switch (convex.type)
    {
    case ShapeType::Sphere:
        if (!(convex.sphere.radius > 0.0f) || !std::isfinite(convex.sphere.radius))
        {
            return {};
        }
        manifold = sphereTriangle(convex.sphere.radius, t, speculativeMarginMeters);
        break;
    case ShapeType::Capsule:
        if (!(convex.capsule.radius > 0.0f) || !std::isfinite(convex.capsule.radius) ||
            !(convex.capsule.halfHeight >= 0.0f) || !std::isfinite(convex.capsule.halfHeight))
        {
            return {};
        }
        manifold = capsuleTriangle(convex.capsule, t, speculativeMarginMeters);
        break;
    case ShapeType::Box:
    {
        if (!isFinite(convex.box.halfExtents))
        {
            return {};
        }
        const BoxAsHull box = boxAsHull(convex.box);
        manifold = polyhedronTriangle(box.view(), t, speculativeMarginMeters);
        break;
    }
    case ShapeType::Hull:
        if (convex.hullIndex >= hulls.size())
        {
            return {};
        }
        manifold = polyhedronTriangle(viewOf(hulls[convex.hullIndex]), t, speculativeMarginMeters);
        break;
    default: // planes, compounds, meshes, heightfields: not convex shapes (collide_composite.h)
        return {};
    }
    return isFinite(manifold) ? manifold : ContactManifold{};
}

TrianglePlaneCull::TrianglePlaneCull(const Shape& convex, std::span<const ConvexHull> hulls,
                                     const Transform& triangleInConvex, float speculativeMarginMeters)
{
    if (!isFinite(triangleInConvex.p) || !isFinite(triangleInConvex.q) || !(speculativeMarginMeters >= 0.0f))
    {
        return;
    }
    float extent = 0.0f;
    float radius = 0.0f;
    switch (convex.type)
    {
    case ShapeType::Sphere:
        radius = convex.sphere.radius;
        extent = radius;
        break;
    case ShapeType::Capsule:
        radius = convex.capsule.radius;
        m_halfExtents = {0.0f, convex.capsule.halfHeight, 0.0f};
        extent = radius + convex.capsule.halfHeight;
        break;
    case ShapeType::Box:
        m_halfExtents = convex.box.halfExtents;
        extent = m_halfExtents.x + m_halfExtents.y + m_halfExtents.z;
        break;
    case ShapeType::Hull:
    {
        if (convex.hullIndex >= hulls.size() || hulls[convex.hullIndex].vertices.empty())
        {
            return;
        }
        const ConvexHull& hull = hulls[convex.hullIndex];
        m_vertices = hull.vertices;
        m_reference = hull.centroid;
        for (const Vec3& v : m_vertices)
        {
            extent = std::max(extent, maxAbs(v));
        }
        extent *= 3.0f;
        break;
    }
    default:
        return;
    }
    if (!(radius >= 0.0f) || !std::isfinite(extent))
    {
        return;
    }
    const Transform convexInTriangles = inverse(triangleInConvex);
    m_toConvex = toMat3(triangleInConvex.q);
    m_origin = convexInTriangles.p;
    m_axis = m_toConvex.row(1);
    m_reference = transformPoint(convexInTriangles, m_reference);
    m_tolerance = kRelativeRounding * (1.0f + maxAbs(triangleInConvex.p) + maxAbs(m_origin) + extent);
    m_margin = speculativeMarginMeters + radius;
    m_type = convex.type;
}

void reduceManifolds(std::span<const TriangleContactManifold> candidates, ContactManifold& out)
{
    out = ContactManifold{};
    const TriangleContactManifold* deepestOwner = nullptr;
    float deepest = std::numeric_limits<float>::infinity();
    for (const TriangleContactManifold& c : candidates)
    {
        for (int i = 0; i < c.manifold.pointCount; ++i)
        {
            if (deepestOwner == nullptr || c.manifold.points[i].separation < deepest)
            {
                deepest = c.manifold.points[i].separation;
                deepestOwner = &c;
            }
        }
    }
    if (deepestOwner == nullptr)
    {
        return;
    }
    const Vec3 normal = deepestOwner->manifold.normal;
    const auto merged = [&](const ContactManifold& m)
    { return m.pointCount > 0 && dot(m.normal, normal) >= kTriangleManifoldMergeCosine; };
    const auto separationAlong = [&](const ContactManifold& m, const ContactPoint& p)
    { return m.normal == normal ? p.separation : dot(p.pointB - p.pointA, normal); };
    Vec3 tangent1;
    Vec3 tangent2;
    orthonormalBasis(normal, tangent1, tangent2);
    // Candidates are numbered in order: manifold by manifold, point by point. chooseContactSubset visits
    // them five times, so when they fit they are projected once into a buffer on the stack.
    struct Candidate
    {
        PlanarPoint planar;
        float separation;
        const ContactPoint* point;
        std::uint32_t triangleIndex;
    };
    constexpr int kBufferedCandidates = 64;
    Candidate buffered[kBufferedCandidates];
    int bufferedCount = 0;
    for (const TriangleContactManifold& c : candidates)
    {
        if (!merged(c.manifold))
        {
            continue;
        }
        for (int i = 0; i < c.manifold.pointCount && bufferedCount <= kBufferedCandidates; ++i)
        {
            if (bufferedCount < kBufferedCandidates)
            {
                const ContactPoint& p = c.manifold.points[i];
                buffered[bufferedCount] = {PlanarPoint{dot(tangent1, p.pointA), dot(tangent2, p.pointA)},
                                           separationAlong(c.manifold, p), &p, c.triangleIndex};
            }
            ++bufferedCount;
        }
    }
    int chosen[kMaxManifoldPoints];
    int chosenCount = 0;
    if (bufferedCount <= kBufferedCandidates)
    {
        const auto forEachBuffered = [&](auto&& fn)
        {
            for (int i = 0; i < bufferedCount; ++i)
            {
                fn(i, buffered[i].planar, buffered[i].separation);
            }
        };
        chosenCount = chooseContactSubset(forEachBuffered, SubsetTies::Rounding, chosen);
        out.normal = normal;
        for (int k = 0; k < chosenCount; ++k)
        {
            const Candidate& x = buffered[chosen[k]];
            out.points[k] = {x.point->pointA, x.point->pointB, x.separation,
                             combineTriangleFeatureId(x.triangleIndex, x.point->featureId)};
        }
        out.pointCount = chosenCount;
        return;
    }
    // Too many to buffer: projected on every visit.
    const auto forEach = [&](auto&& fn)
    {
        int index = 0;
        for (const TriangleContactManifold& c : candidates)
        {
            if (!merged(c.manifold))
            {
                continue;
            }
            for (int i = 0; i < c.manifold.pointCount; ++i, ++index)
            {
                const ContactPoint& p = c.manifold.points[i];
                fn(index, PlanarPoint{dot(tangent1, p.pointA), dot(tangent2, p.pointA)},
                   separationAlong(c.manifold, p));
            }
        }
    };
    chosenCount = chooseContactSubset(forEach, SubsetTies::Rounding, chosen);
    out.normal = normal;
    for (int k = 0; k < chosenCount; ++k)
    {
        int index = 0;
        for (const TriangleContactManifold& c : candidates)
        {
            if (!merged(c.manifold))
            {
                continue;
            }
            if (chosen[k] < index + c.manifold.pointCount)
            {
                const ContactPoint& p = c.manifold.points[chosen[k] - index];
                out.points[k] = {p.pointA, p.pointB, separationAlong(c.manifold, p),
                                 combineTriangleFeatureId(c.triangleIndex, p.featureId)};
                break;
            }
            index += c.manifold.pointCount;
        }
    }
    out.pointCount = chosenCount;
}

} // namespace polytope::physics

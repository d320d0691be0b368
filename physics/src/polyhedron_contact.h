// Polytope physics (internal): the parts of a polyhedral contact manifold that the polyhedron manifolds
// (collide_convex.cpp) and the convex-triangle manifolds (collide_triangle.cpp) share: face clipping with its
// feature names, the choice of the incident face, and the edge-pair point.
//
// On a face axis, an incident polygon (a face of the other shape, or the triangle) is clipped against the
// side planes through the reference face's edges (Sutherland-Hodgman). Each clip vertex remembers the two
// polygon edges that meet at it: an incident edge, or a reference side. With the reference face these name
// the point independently of positions: the feature ids that warm starting needs (see manifold.h). Naming
// incident features by their global vertex / edge index, not by position in the incident face's loop, keeps
// the ids when two faces tie as the incident face. All buffers are fixed-size and on the stack; a polygon
// with more than kMaxClipVertices vertices loses the excess (the remaining points are still valid contacts).
#pragma once

#include "contact_reduction.h"

#include "polytope/physics/collide.h"
#include "polytope/physics/manifold.h"
#include "polytope/physics/math.h"
#include "polytope/physics/sat.h"
#include "polytope/physics/shapes.h"

#include <algorithm>
#include <concepts>
#include <cstdint>

namespace polytope::physics
{

inline constexpr int kMaxClipVertices = 64;
inline constexpr std::uint16_t kReferenceSideTag = 0x8000; ///< edge tag bit: a side of the reference face
inline constexpr std::uint16_t kTagIndexMask = 0x7FFF;

/// A vertex of the polygon being clipped, with the two polygon edges that meet at it. An edge tag is an
/// edge index of the incident shape (below 0x8000), or kReferenceSideTag | loop position of a reference
/// side. 16 bytes, so that the clipper's copies stay cheap.
struct ClipVertex
{
    Vec3 position;
    std::uint16_t edgeTagIn;  ///< the polygon edge arriving at this vertex
    std::uint16_t edgeTagOut; ///< the polygon edge leaving it
};
static_assert(sizeof(ClipVertex) == 16);

struct ClipPolygon
{
    union
    {
        ClipVertex vertices[kMaxClipVertices]; // left uninitialised: only [0, count) is ever read
    };
    int count = 0;

    ClipPolygon() {}

    void push(const ClipVertex& v)
    {
        if (count < kMaxClipVertices)
        {
            vertices[count++] = v;
        }
    }
};

/// Keeps the part of `polygon` where distanceOf(position) <= 0 (the distance need not be normalised),
/// using `scratch` as the output buffer and swapping the two when the plane cuts. Vertices made on the
/// plane get `planeTag` on the side that runs along the plane. A vertex exactly on the plane is kept and
/// makes no new vertex, so exact contact makes no duplicates. An edge crosses the plane when the product of
/// its ends' distances is negative; that product underflows to zero, and the crossing is missed, only when
/// the two distances multiply to below about 1e-45 (both near 1e-23), far under the rounding of any caller.
template <typename DistanceOf>
void clipToHalfSpace(ClipPolygon*& polygon, ClipPolygon*& scratch, DistanceOf distanceOf,
                     std::uint16_t planeTag)
{
    const ClipPolygon& in = *polygon;
    float distances[kMaxClipVertices];
    float largest = -1.0f;
    for (int k = 0; k < in.count; ++k)
    {
        distances[k] = distanceOf(in.vertices[k].position);
        largest = std::max(largest, distances[k]);
    }
    if (!(largest > 0.0f))
    {
        return; // the plane does not cut: keep the polygon as it is
    }
    ClipPolygon& out = *scratch;
    out.count = 0;
    // Each input vertex adds at most two output vertices; past the capacity, push drops them.
    int previous = in.count - 1;
    for (int k = 0; k < in.count; ++k)
    {
        const float previousDistance = distances[previous];
        const float currentDistance = distances[k];
        if (previousDistance * currentDistance < 0.0f) // strictly opposite sides
        {
            const ClipVertex& from = in.vertices[previous];
            const float t = previousDistance / (previousDistance - currentDistance);
            const Vec3 crossing = from.position + (in.vertices[k].position - from.position) * t;
            const std::uint16_t edgeTag = from.edgeTagOut; // the edge previous -> current
            if (previousDistance < 0.0f)
            {
                // Leaving: arrive along the edge, leave along the plane.
                out.push({crossing, edgeTag, planeTag});
            }
            else
            {
                out.push({crossing, planeTag, edgeTag}); // entering
            }
        }
        if (currentDistance <= 0.0f)
        {
            out.push(in.vertices[k]);
        }
        previous = k;
    }
    std::swap(polygon, scratch);
}

/// The stable name of a clipped vertex (see manifold.h); `sharedVertex(in, out)` names the incident vertex
/// where incident edges `in` and `out` meet.
template <class SharedVertex>
requires std::invocable<SharedVertex, std::uint32_t, std::uint32_t> std::uint32_t
clipFeatureOf(const ClipVertex& v, SharedVertex sharedVertex)
{
    const bool inIsSide = (v.edgeTagIn & kReferenceSideTag) != 0;
    const bool outIsSide = (v.edgeTagOut & kReferenceSideTag) != 0;
    const std::uint32_t in = v.edgeTagIn & kTagIndexMask;
    const std::uint32_t out = v.edgeTagOut & kTagIndexMask;
    if (!inIsSide && !outIsSide)
    {
        return clipFeatureIncidentVertex(sharedVertex(in, out));
    }
    if (inIsSide && outIsSide)
    {
        return clipFeatureReferenceCorner(in, out);
    }
    return inIsSide ? clipFeatureEdgeCrossing(out, in) : clipFeatureEdgeCrossing(in, out);
}

/// clipFeatureOf for an incident polyhedron whose edges are `incidentEdges`.
inline std::uint32_t clipFeatureOf(const ClipVertex& v, const HullEdge* incidentEdges)
{
    return clipFeatureOf(v,
                         [incidentEdges](std::uint32_t in, std::uint32_t out)
                         {
                             // The vertex the two edges share.
                             const HullEdge& arriving = incidentEdges[in];
                             const HullEdge& leaving = incidentEdges[out];
                             return static_cast<std::uint32_t>(
                                 (arriving.v0 == leaving.v0 || arriving.v0 == leaving.v1) ? arriving.v0
                                                                                          : arriving.v1);
                         });
}

/// Edge index of each edge of `face`'s loop (from loop vertex k to k + 1), for the first `count` of them.
inline void loopEdgeIndices(const HullView& hull, int face, int count, std::uint16_t* out)
{
    const HullFace& f = hull.faces[face];
    if (hull.faceEdges != nullptr)
    {
        for (int k = 0; k < count; ++k)
        {
            out[k] = static_cast<std::uint16_t>(hull.faceEdges[f.firstIndex + k] & kTagIndexMask);
        }
        return;
    }
    const std::uint16_t* loop = hull.faceVertices + f.firstIndex;
    std::fill(out, out + count, std::uint16_t{0});
    for (int e = 0; e < hull.edgeCount; ++e)
    {
        const HullEdge& edge = hull.edges[e];
        // An edge runs v0 -> v1 on face0 and v1 -> v0 on face1, both counter-clockwise.
        const int start = edge.face0 == face ? edge.v0 : (edge.face1 == face ? edge.v1 : -1);
        for (int k = 0; k < count && start >= 0; ++k)
        {
            if (loop[k] == start)
            {
                out[k] =
                    static_cast<std::uint16_t>(e & kTagIndexMask); // hulls have far fewer than 2^15 edges
                break;
            }
        }
    }
}

/// The incident face of `hull` for a reference face whose outward normal is `direction` (hull frame), given
/// `vertex`, the hull's deepest vertex along `direction`: of the faces through that vertex, the one most
/// anti-parallel to `direction` (lowest index on ties). The face most anti-parallel over the whole hull need
/// not hold that vertex (the Gauss map is not a Voronoi diagram of the face normals: a long, thin vertex
/// region can lie nearest to another vertex's face normal), and then it can lie entirely outside the
/// reference face's side planes or above the margin, so that clipping leaves nothing although the shapes
/// overlap. A face through the deepest vertex keeps it: on the least-penetration face axis that vertex lies
/// over the reference face, at the axis's separation. A face resting flat on the reference holds the deepest
/// vertex, so there both rules pick the same face.
inline int incidentFaceAt(const HullView& hull, int vertex, const Vec3& direction)
{
    int best = -1;
    float bestDot = 0.0f;
    const auto consider = [&](int face)
    {
        const float d = dot(hull.faces[face].normal, direction);
        if (best < 0 || d < bestDot || (d == bestDot && face < best))
        {
            bestDot = d;
            best = face;
        }
    };
    if (hull.vertexEdgeStart != nullptr && hull.vertexEdges != nullptr)
    {
        for (int k = hull.vertexEdgeStart[vertex]; k < hull.vertexEdgeStart[vertex + 1]; ++k)
        {
            const HullEdge& edge = hull.edges[hull.vertexEdges[k]];
            consider(edge.face0);
            consider(edge.face1);
        }
    }
    else
    {
        for (int f = 0; f < hull.faceCount; ++f)
        {
            const HullFace& face = hull.faces[f];
            const std::uint16_t* loop = hull.faceVertices + face.firstIndex;
            if (std::find(loop, loop + face.indexCount, vertex) != loop + face.indexCount)
            {
                consider(f);
            }
        }
    }
    return best >= 0 ? best : 0;
}

/// The contact subset of `count` clipped points: all those within `margin` (separationOf(i) <= margin)
/// when there are at most four, else chooseContactSubset's four of them, with the planar coordinates
/// `planarOf(i)` and near-ties settled by `ties`. Writes indices in [0, count) to `chosen` and returns how
/// many. `count` is at most kMaxClipVertices.
template <class SeparationOf, class PlanarOf>
int chooseClippedContacts(int count, SeparationOf separationOf, PlanarOf planarOf, float margin,
                          SubsetTies ties, int chosen[kMaxManifoldPoints])
{
    int candidates[kMaxClipVertices];
    int candidateCount = 0;
    for (int i = 0; i < count; ++i)
    {
        candidates[candidateCount] = i;
        candidateCount += separationOf(i) <= margin ? 1 : 0;
    }
    if (candidateCount <= kMaxManifoldPoints)
    {
        std::copy(candidates, candidates + candidateCount, chosen);
        return candidateCount;
    }
    int picked[kMaxManifoldPoints];
    const int pickedCount = chooseContactSubset(
        [&](auto&& fn)
        {
            for (int c = 0; c < candidateCount; ++c)
            {
                fn(c, planarOf(candidates[c]), separationOf(candidates[c]));
            }
        },
        ties, picked);
    for (int c = 0; c < pickedCount; ++c)
    {
        chosen[c] = candidates[picked[c]];
    }
    return pickedCount;
}

/// An edge-pair contact: one point at the closest points of edge `edgeA` of A, [a0, a1], and edge `edgeB` of
/// B, [b0, b1], all in A's frame, with their separation along `normal` (unit, from A towards B); no point
/// when that exceeds `margin`. The normal is set either way.
inline ContactManifold edgePairManifold(const Vec3& a0, const Vec3& a1, const Vec3& b0, const Vec3& b1,
                                        const Vec3& normal, int edgeA, int edgeB, float margin)
{
    ContactManifold manifold;
    manifold.normal = normal;
    const SegmentClosestPoints closest = closestPointsOnSegments(a0, a1, b0, b1);
    const float separation = dot(closest.onQ - closest.onP, normal);
    if (separation <= margin)
    {
        manifold.points[0] = {
            closest.onP, closest.onQ, separation,
            makeEdgePairFeatureId(static_cast<std::uint32_t>(edgeA), static_cast<std::uint32_t>(edgeB))};
        manifold.pointCount = 1;
    }
    return manifold;
}

} // namespace polytope::physics

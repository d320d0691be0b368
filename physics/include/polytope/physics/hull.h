// Polytope physics: building convex hulls from point clouds.
//
// buildConvexHull turns a cloud of points into a ConvexHull (see shapes.h): polygonal faces with
// coplanar neighbours merged, unique edges with their two faces, and the volume centroid. It refuses
// input it cannot turn into a solid (too few points, NaN/Inf, flat or collinear clouds, too many
// vertices) with a reason instead of guessing. makeBoxHull gives the exact hull of a box.
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace polytope::physics
{

/// Most vertices a built hull may have. Hull indices are uint16, but narrowphase cost grows with the
/// square of the edge count and contact feature keys pack a vertex or face index into a byte, so hulls
/// are kept to 255 vertices (then at most 506 faces, 759 edges and 1518 face-vertex indices).
inline constexpr std::size_t kMaxHullVertices = 255;

/// Distance tolerance of buildConvexHull, as a fraction of the cloud's size (its largest bounding-box
/// side). Points this close to a face are treated as lying on it; faces this close to coplanar merge.
inline constexpr float kHullRelativeTolerance = 1e-5f;

/// A cloud thinner than this many tolerances (about 1/1000 of its size) in some direction is refused as
/// (nearly) flat; the same holds, measured from a line, for (nearly) collinear clouds.
inline constexpr float kHullMinThicknessInTolerances = 100.0f;

enum class HullError : std::uint8_t
{
    None = 0,
    TooFewPoints,     ///< fewer than 4 points
    NonFinitePoint,   ///< a coordinate is NaN or infinite
    Degenerate,       ///< the points are (nearly) coincident, collinear or coplanar: they enclose no volume
    TooManyVertices,  ///< the hull would have more than kMaxHullVertices vertices
    NumericalFailure, ///< no hull passed the result checks, even with enlarged tolerances (not seen in
                      ///< testing)
};

/// A short, stable name for the error ("Degenerate", ...), for logs.
const char* toString(HullError error);

/// Result of buildConvexHull: the hull, or the reason it could not be built.
struct HullResult
{
    HullError error = HullError::None;
    std::string message; ///< human-readable detail; empty on success
    ConvexHull hull;     ///< empty unless ok()
    /// Distance tolerance the hull was built with (metres, > 0 on success): points closer than this
    /// to a face count as on it, and no input point lies farther than this outside any face plane.
    float toleranceMeters = 0.0f;

    bool ok() const { return error == HullError::None; }
};

/// The convex hull of `points` (metres, any frame; the hull is expressed in the same frame). Pure, no
/// exceptions, deterministic; O(n log n) work in practice, tens of microseconds for 32 points.
///
/// Guarantees on success (t = toleranceMeters):
/// - every vertex is one of the input points, bit-exact, with no duplicates, and is a corner of at least
///   three faces (no vertex inside a face or on an edge line);
/// - faces are convex polygons (within t) with unit outward normals and counter-clockwise loops; each
///   face's offset is the largest dot(normal, vertex) over all hull vertices (rounded up to float), so
///   every plane supports the vertex set and a face's own vertices lie at most 4t below it;
/// - no two neighbouring faces are coplanar within t: each has a vertex more than t below the other's
///   plane (up to float rounding of the planes);
/// - every input point is inside every face plane or at most t outside it;
/// - edges are unique, each with the face where it runs v0 -> v1 (face0) and the other (face1);
///   V - E + F == 2; `centroid` is the volume centroid.
///
/// t starts at kHullRelativeTolerance times the largest bounding-box side, raised to 4 float epsilons
/// of the largest coordinate for clouds far from the origin (their input is no finer). If the result
/// fails its own checks the hull is rebuilt with t four times larger, at most twice; that is rare (none
/// in tens of thousands of random test clouds of up to 200 points, once in a million-point cloud) and
/// shows in toleranceMeters.
/// Refusals: TooFewPoints, NonFinitePoint, Degenerate (the thickness test of kHullMinThicknessInTolerances
/// uses the first t), TooManyVertices (also returned early, without finishing, once an intermediate
/// hull passes 8 * kMaxHullVertices vertices, to bound the work on huge clouds), NumericalFailure.
HullResult buildConvexHull(std::span<const Vec3> points);

/// Fills the adjacency arrays of `hull` (faceEdges, vertexEdgeStart, vertexEdges) from its faces and
/// edges, which must be consistent (every side of every face loop is one of `edges`). buildConvexHull and
/// makeBoxHull call it; call it on a hull assembled by hand to give it the narrowphase's fast path.
/// Returns false (and leaves the adjacency empty) when a face side has no matching edge.
bool buildHullAdjacency(ConvexHull& hull);

/// The exact hull of a box centred on the origin with the given half extents (metres, each > 0; not
/// checked, see validateShape): 8 vertices, 6 quad faces with axis normals and exact offsets, 12 edges,
/// centroid at the origin. Numbering: vertex v is (v&1 ? +x : -x, v&2 ? +y : -y, v&4 ? +z : -z); faces
/// are +x, -x, +y, -y, +z, -z; edge 4k + c runs along axis k. This matches the box tables of the SAT
/// code (sat.h), so a box and its hull name features alike.
ConvexHull makeBoxHull(const Vec3& halfExtents);

} // namespace polytope::physics

// Polytope physics: separating-axis queries between convex polyhedra (boxes and hulls).
//
// Everything is computed in A's local frame from B's transform in that frame, so a pair far from the world
// origin is as accurate as one at the origin. A query reports the best (largest-separation) axis of each
// kind: a face of A, a face of B, and an edge of A crossed with an edge of B, each with its separation in
// metres (positive: apart; negative: penetration depth along that axis) and its features. The largest of
// the three is the SAT separation of the pair. Queries stop as soon as one axis separates the shapes by
// more than `maxSeparation` (the caller's speculative margin).
//
// Edge pairs are pruned with Gregorius' Gauss-map test (GDC 2013, "The Separating Axis Test between Convex
// Polyhedra"): an edge pair can only give a face of the Minkowski difference when the arcs of the two edges
// on the Gauss map cross; only those pairs are tested, and their support points are the edges themselves.
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace polytope::physics
{

/// The kind of feature pair behind a separating axis.
enum class SatFeature : std::uint8_t
{
    None = 0,     ///< no axis of this kind was tested (early out, or all edge pairs pruned)
    FaceOfA = 1,  ///< a face normal of A
    FaceOfB = 2,  ///< a face normal of B
    EdgePair = 3, ///< the cross product of an edge of A and an edge of B
};

/// One candidate separating axis.
struct SatAxis
{
    SatFeature feature = SatFeature::None;
    float separation = -std::numeric_limits<float>::infinity(); ///< metres along `normal`; < 0 is penetration
    Vec3 normal{};   ///< unit, A's frame, pointing from A towards B
    int indexA = -1; ///< face of A (FaceOfA) or edge of A (EdgePair), else -1
    int indexB = -1; ///< face of B (FaceOfB) or edge of B (EdgePair), else -1
};

/// The outcome of a separating-axis query between A and B.
struct SatResult
{
    bool separated = false; ///< some axis separates the shapes by more than maxSeparation
    SatAxis bestFaceA{};    ///< best face axis of A (or the separating one, if separated there)
    SatAxis bestFaceB{};    ///< best face axis of B (not tested if A's faces already separate)
    SatAxis bestEdge{};     ///< best edge-pair axis (not tested if a face separates)
    SatAxis chosen{};       ///< the axis to build contacts on: the separating axis, or the best with a bias
                            ///< towards faces, and towards A's face over B's (see chooseContactAxis)
    /// Largest separation found: the SAT separation of the pair when `separated` is false.
    float maxSeparation() const;
};

inline constexpr float kSatFaceRelativeTolerance = 0.98f; ///< B's face must beat 0.98 * A's separation
inline constexpr float kSatEdgeRelativeTolerance = 0.95f; ///< an edge pair must beat 0.95 * the best face's
inline constexpr float kSatAbsoluteTolerance = 0.5e-3f;   ///< metres, added to both comparisons

/// The separation a candidate axis must beat to replace `reference` under a relative tolerance (one of the
/// two above) plus kSatAbsoluteTolerance. The relative part is taken of |reference|, so the bias favours
/// the reference both for overlapping shapes (reference < 0: beat tolerance * reference) and for separated
/// ones, where a scaled-down reference would favour the candidate instead (a box resting flat 4 cm above
/// another once took an edge pair parallel to the face normal, and lost its face contact).
inline float satBiasedThreshold(float reference, float relativeTolerance)
{
    return reference + (1.0f - relativeTolerance) * std::fabs(reference) + kSatAbsoluteTolerance;
}

/// Whether an axis of separation `candidate` is nearly as good as one of separation `reference`: the
/// reference would not replace it under the bias (satBiasedThreshold). Overlapping, the candidate is then
/// at most (depth + kSatAbsoluteTolerance) / relativeTolerance deep, so a manifold built on it keeps the
/// face bias's bound on the depth. The manifold builders take such an axis when clipping on the chosen
/// face leaves nothing.
inline bool satNearlyAsGood(float candidate, float reference, float relativeTolerance)
{
    return reference <= satBiasedThreshold(candidate, relativeTolerance);
}

/// Picks the contact axis among the three candidates. Faces win over an edge pair unless the edge pair is
/// clearly shallower (kSatEdgeRelativeTolerance), and A's face wins over B's unless B's is clearly
/// shallower (kSatFaceRelativeTolerance), each plus kSatAbsoluteTolerance. This hysteresis keeps the
/// contact type and the reference face from flickering between nearly equal choices in resting stacks;
/// the price is a chosen depth up to about 7% (plus 1 mm) deeper than the least penetration.
SatAxis chooseContactAxis(const SatAxis& faceA, const SatAxis& faceB, const SatAxis& edge);

/// Two edges count as parallel (no edge-pair axis) when the sine of their angle is below this.
inline constexpr float kSatParallelSine = 1e-3f;

/// A non-owning view of a convex polyhedron's topology, laid out as in ConvexHull. Lets the hull routines
/// run on boxes without building (and allocating) a ConvexHull.
struct HullView
{
    const Vec3* vertices = nullptr;
    const HullFace* faces = nullptr;
    const std::uint16_t* faceVertices = nullptr;
    const HullEdge* edges = nullptr;
    /// Optional, parallel to faceVertices: the index of the edge from each loop vertex to the next. When
    /// null, the manifold builder finds the incident face's edges by a scan of `edges`.
    const std::uint16_t* faceEdges = nullptr;
    /// Optional vertex -> edge adjacency (see ConvexHull::vertexEdgeStart): vertex v's edges are
    /// vertexEdges[vertexEdgeStart[v] .. vertexEdgeStart[v + 1]). With it and faceEdges, satHullsNear can
    /// search locally; without it, it falls back to satHulls.
    const std::uint16_t* vertexEdgeStart = nullptr;
    const std::uint16_t* vertexEdges = nullptr;
    int vertexCount = 0;
    int faceCount = 0;
    int edgeCount = 0;
    Vec3 interiorPoint{}; ///< any point strictly inside (the centroid), used to orient edge-pair axes
};

/// A view of `hull`; valid while `hull` lives and is not modified. Its interior point is hull.centroid,
/// which must lie inside the hull (buildConvexHull guarantees it).
HullView viewOf(const ConvexHull& hull);

/// A box as a polyhedron, held by value (8 vertices, 6 faces; the face loops and the 12 edges are shared
/// static tables). Vertex v has coordinates (v&1 ? +x : -x, v&2 ? +y : -y, v&4 ? +z : -z); face 2k is the
/// +axis-k face and 2k+1 the -axis-k face; edge 4k + c runs along axis k. Box-box queries use the same
/// numbering, so feature ids agree between the box and hull routines.
struct BoxAsHull
{
    Vec3 vertices[8];
    HullFace faces[6];

    /// A view of this object; valid while it lives (do not copy a view out of a temporary).
    HullView view() const;
};

BoxAsHull boxAsHull(const BoxShape& box);

/// The box numbering's static face loops: face f's vertices are boxFaceLoops()[4f .. 4f + 3], counter-
/// clockwise seen from outside. 24 entries.
const std::uint16_t* boxFaceLoops();

/// Parallel to boxFaceLoops(): the index of the box edge from each loop vertex to the next. 24 entries.
const std::uint16_t* boxFaceLoopEdges();

/// The box numbering's 12 edges, with their faces.
const HullEdge* boxEdges();

/// SAT between two boxes, specialised (15 axes in closed form). `bInA`: B's transform in A's frame.
/// `maxSeparation`: metres; the query stops once an axis separates by more than this.
SatResult satBoxes(const BoxShape& a, const BoxShape& b, const Transform& bInA, float maxSeparation);

/// SAT between two convex polyhedra: face axes of A and of B (O(faces x vertices)), then Gauss-map-pruned
/// edge pairs (O(edgesA x edgesB)). `bInA`: B's transform in A's frame; `maxSeparation` as for satBoxes.
SatResult satHulls(const HullView& a, const HullView& b, const Transform& bInA, float maxSeparation);

/// Whether `view` carries the adjacency (faceEdges, vertexEdgeStart, vertexEdges) that satHullsNear needs.
bool hasAdjacency(const HullView& view);

/// What GJK and EPA tell satHullsNear about a pair: where to look, and how far the SAT separation (the
/// largest over all axes) can be from what they measured.
struct SatSearchHint
{
    Vec3 direction{1.0f, 0.0f, 0.0f}; ///< unit, A's frame, from A towards B; may be approximate
    /// Metres: no axis separates the shapes by more than this (e.g. minus EPA's depth, which never
    /// exceeds the true depth). Lets the search skip B's faces or the edge pairs when they cannot pass
    /// chooseContactAxis's test against A's best face, or against the best face.
    float separationUpperBound = std::numeric_limits<float>::infinity();
    /// Metres: some axis separates the shapes by at least this (e.g. minus EPA's depth plus its error
    /// bound). A face that reaches it is the best of its kind up to near-ties: its search stops there.
    float separationLowerBound = std::numeric_limits<float>::infinity();
};

/// SAT between two convex polyhedra restricted to the features near `hint.direction` (the closest-points
/// direction of GJK or the penetration normal of EPA). Candidates are the faces and edges at A's support
/// vertex along the direction and at B's along its opposite, most aligned first; each kind is then
/// improved by hill climbing over the adjacency (to a face or edge pair next to the current best while
/// that separates more). Separations are computed exactly as in satHulls, so when the direction is the
/// true contact normal the least-penetration axis is always found, and the choice agrees with satHulls
/// except between axes that chooseContactAxis treats as tied (a face or edge that is a local optimum away
/// from the direction can be missed). O(degree x vertices) instead of O(edgesA x edgesB). When the
/// bounds show that B's faces or the edge pairs cannot be chosen, they are not searched and bestFaceB or
/// bestEdge stays None. Both views need adjacency (hasAdjacency); otherwise this is satHulls.
SatResult satHullsNear(const HullView& a, const HullView& b, const Transform& bInA, const SatSearchHint& hint,
                       float maxSeparation);

} // namespace polytope::physics

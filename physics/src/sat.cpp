// Separating-axis queries for boxes and convex hulls.
//
// Rationale. For two convex polyhedra the candidate axes are the face normals of A and B and the normals
// of the Minkowski-difference faces made by an edge of A and an edge of B. A face axis is exact with one
// support query on the other shape. For an edge pair, Gregorius (GDC 2013) observes that the pair makes a
// Minkowski face only when the edges' arcs on the Gauss map cross (the arc of an edge joins the normals of
// its two faces; B's arcs are negated because the Minkowski difference uses -B). For such a pair the edges
// are themselves the support features along the axis, so the separation needs no vertex loop. This keeps
// the edge stage at O(EA x EB) cheap tests instead of O(EA x EB x (VA + VB)).
//
// satHullsNear runs the same exact queries on a few candidates only: the faces and edges at the support
// vertices along a direction from GJK/EPA, improved by hill climbing over the hull's adjacency. The least
// penetration axis along that direction is always among the first candidates; what a local search can
// miss is only a face or edge pair that is a local optimum elsewhere, which matters only for the face
// bias between nearly tied axes.
//
// Boxes use the classic 15-axis test in closed form (Gottschalk's OBB test), in A's frame with the
// rotation matrix of B; here every axis can be tested exactly, so no pruning is needed.
//
// The box numbering (vertices by sign bits, faces 2k / 2k+1, edges 4k + c) is shared by boxAsHull and
// satBoxes, so both paths name the same features.
#include "polytope/physics/sat.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace polytope::physics
{

namespace
{

// Box face loops, counter-clockwise seen from outside: +x, -x, +y, -y, +z, -z.
constexpr std::uint16_t kBoxFaceLoops[24] = {1, 3, 7, 5, 0, 4, 6, 2, 2, 6, 7, 3,
                                             0, 1, 5, 4, 4, 5, 7, 6, 0, 2, 3, 1};

/// Index of the box edge joining vertices v0 and v1 (which differ in exactly one sign bit).
constexpr int boxEdgeIndex(int v0, int v1)
{
    const int differingBit = v0 ^ v1;
    const int axis = differingBit == 1 ? 0 : (differingBit == 2 ? 1 : 2);
    const int low = v0 < v1 ? v0 : v1;
    const int other1 = (axis + 1) % 3;
    const int other2 = (axis + 2) % 3;
    return axis * 4 + ((low >> other1) & 1) + 2 * ((low >> other2) & 1);
}

struct BoxEdgeTable
{
    HullEdge edges[12];
};

constexpr BoxEdgeTable makeBoxEdgeTable()
{
    BoxEdgeTable table{};
    for (int face = 0; face < 6; ++face)
    {
        for (int k = 0; k < 4; ++k)
        {
            const int from = kBoxFaceLoops[4 * face + k];
            const int to = kBoxFaceLoops[4 * face + (k + 1) % 4];
            HullEdge& edge = table.edges[boxEdgeIndex(from, to)];
            edge.v0 = static_cast<std::uint16_t>(from < to ? from : to);
            edge.v1 = static_cast<std::uint16_t>(from < to ? to : from);
            if (from < to)
            {
                edge.face0 = static_cast<std::uint16_t>(face);
            }
            else
            {
                edge.face1 = static_cast<std::uint16_t>(face);
            }
        }
    }
    return table;
}

constexpr BoxEdgeTable kBoxEdges = makeBoxEdgeTable();

struct BoxFaceEdgeTable
{
    std::uint16_t edges[24];
};

constexpr BoxFaceEdgeTable makeBoxFaceEdgeTable()
{
    BoxFaceEdgeTable table{};
    for (int face = 0; face < 6; ++face)
    {
        for (int k = 0; k < 4; ++k)
        {
            table.edges[4 * face + k] = static_cast<std::uint16_t>(
                boxEdgeIndex(kBoxFaceLoops[4 * face + k], kBoxFaceLoops[4 * face + (k + 1) % 4]));
        }
    }
    return table;
}

constexpr BoxFaceEdgeTable kBoxFaceEdges = makeBoxFaceEdgeTable();

struct BoxVertexEdgeTable
{
    std::uint16_t start[9];
    std::uint16_t edges[24];
};

/// Vertex v's three edges, along x, y and z: to the vertices v ^ 1, v ^ 2, v ^ 4.
constexpr BoxVertexEdgeTable makeBoxVertexEdgeTable()
{
    BoxVertexEdgeTable table{};
    for (int v = 0; v < 8; ++v)
    {
        table.start[v] = static_cast<std::uint16_t>(3 * v);
        for (int axis = 0; axis < 3; ++axis)
        {
            table.edges[3 * v + axis] = static_cast<std::uint16_t>(boxEdgeIndex(v, v ^ (1 << axis)));
        }
    }
    table.start[8] = 24;
    return table;
}

constexpr BoxVertexEdgeTable kBoxVertexEdges = makeBoxVertexEdgeTable();

/// For the box-box edge axes e_I x b_j (j = 0..2), index 3I + j: the projection of B's centre `along`, the
/// gap between the projections (unnormalised: divide by the axis length) and the squared axis length.
/// I is a template parameter so that every index is a constant after unrolling.
template <int I>
inline void boxEdgeAxesAlong(const float (&R)[3][3], const float (&absR)[3][3], const float (&t)[3],
                             const float (&ha)[3], const float (&hb)[3], float* along, float* gaps,
                             float* length2s)
{
    constexpr int i1 = (I + 1) % 3;
    constexpr int i2 = (I + 2) % 3;
    for (int j = 0; j < 3; ++j)
    {
        const int e = 3 * I + j;
        const float reachA = ha[i1] * absR[i2][j] + ha[i2] * absR[i1][j];
        // n . b_k = n_i1 R[i1][k] + n_i2 R[i2][k] (the term k = j is exactly zero).
        const float reachB = hb[0] * std::fabs(R[i1][j] * R[i2][0] - R[i2][j] * R[i1][0]) +
                             hb[1] * std::fabs(R[i1][j] * R[i2][1] - R[i2][j] * R[i1][1]) +
                             hb[2] * std::fabs(R[i1][j] * R[i2][2] - R[i2][j] * R[i1][2]);
        along[e] = R[i1][j] * t[i2] - R[i2][j] * t[i1];
        gaps[e] = std::fabs(along[e]) - (reachA + reachB);
        length2s[e] = R[i1][j] * R[i1][j] + R[i2][j] * R[i2][j];
    }
}

/// The lowest dot product of `direction` with a vertex of `hull`, by a scan of all vertices.
struct LowestByScan
{
    float operator()(const HullView& hull, const Vec3& direction) const
    {
        float lowest = dot(direction, hull.vertices[0]);
        for (int v = 1; v < hull.vertexCount; ++v)
        {
            lowest = std::min(lowest, dot(direction, hull.vertices[v]));
        }
        return lowest;
    }
};

/// Separation of B from face `i` of A: B's lowest point along the face normal, above the face plane.
/// `rotation` is toMat3(bInA.q); the support of B is found in B's frame, so B's vertices need no transform.
template <typename Lowest>
inline float faceOfASeparation(const HullView& a, const HullView& b, const Transform& bInA,
                               const Mat3& rotation, int i, Lowest& lowestOf)
{
    const HullFace& face = a.faces[i];
    const float lowest = lowestOf(b, mulTransposed(rotation, face.normal));
    return (lowest + dot(face.normal, bInA.p)) - face.offset;
}

/// Separation of A from face `j` of B; `normalInA` receives the face normal in A's frame.
template <typename Lowest>
inline float faceOfBSeparation(const HullView& a, const HullView& b, const Transform& bInA,
                               const Mat3& rotation, int j, Lowest& lowestOf, Vec3& normalInA)
{
    const HullFace& face = b.faces[j];
    normalInA = rotation * face.normal;
    const float lowest = lowestOf(a, normalInA);
    // B's face plane in A's frame is dot(normalInA, x) == offset + dot(normalInA, p).
    return (lowest - dot(normalInA, bInA.p)) - face.offset;
}

/// Edge j of B in A's frame, with its arc on the Gauss map of -B.
struct EdgeOfBInA
{
    Vec3 b0;
    Vec3 direction;
    Vec3 c;       ///< -normal of face0, A's frame
    Vec3 d;       ///< -normal of face1, A's frame
    Vec3 dCrossC; ///< cross(d, c)
    float length2;
};

inline EdgeOfBInA edgeOfBInA(const HullView& b, const Transform& bInA, const Mat3& rotation, int j)
{
    const HullEdge& edgeB = b.edges[j];
    EdgeOfBInA e;
    e.b0 = rotation * b.vertices[edgeB.v0] + bInA.p;
    const Vec3 b1 = rotation * b.vertices[edgeB.v1] + bInA.p;
    e.direction = b1 - e.b0;
    // Gauss map of -B: B's face normals, negated.
    e.c = -(rotation * b.faces[edgeB.face0].normal);
    e.d = -(rotation * b.faces[edgeB.face1].normal);
    e.dCrossC = cross(e.d, e.c);
    e.length2 = lengthSquared(e.direction);
    return e;
}

/// The edge-pair axis of edge i of A and edge B (see EdgeOfBInA): false when the arcs do not cross on the
/// Gauss map (no Minkowski face) or the edges are parallel; else the unit axis, pointing from A towards
/// B, and the separation along it.
inline bool edgePairAxis(const HullView& a, int i, const EdgeOfBInA& edgeB, Vec3& axisOut, float& separation)
{
    const HullEdge& edgeA = a.edges[i];
    const Vec3& na = a.faces[edgeA.face0].normal;
    const Vec3& nb = a.faces[edgeA.face1].normal;
    // Arcs (na, nb) and (c, d) cross iff each great circle separates the other arc's ends and the
    // crossing is not on the far side of the sphere.
    const Vec3 nbCrossNa = cross(nb, na);
    const float cba = dot(edgeB.c, nbCrossNa);
    const float dba = dot(edgeB.d, nbCrossNa);
    const float adc = dot(na, edgeB.dCrossC);
    const float bdc = dot(nb, edgeB.dCrossC);
    if (!(cba * dba < 0.0f && adc * bdc < 0.0f && cba * bdc > 0.0f))
    {
        return false;
    }
    const Vec3& a0 = a.vertices[edgeA.v0];
    const Vec3 directionA = a.vertices[edgeA.v1] - a0;
    Vec3 axis = cross(directionA, edgeB.direction);
    const float axisLength2 = lengthSquared(axis);
    if (axisLength2 <= kSatParallelSine * kSatParallelSine * lengthSquared(directionA) * edgeB.length2)
    {
        return false; // parallel edges: the adjacent face axes cover this direction
    }
    axis = axis / std::sqrt(axisLength2);
    if (dot(axis, a0 - a.interiorPoint) < 0.0f)
    {
        axis = -axis;
    }
    axisOut = axis;
    separation = dot(axis, edgeB.b0 - a0);
    return true;
}

template <typename Lowest>
SatAxis queryFacesOfA(const HullView& a, const HullView& b, const Transform& bInA, const Mat3& rotation,
                      float maxSeparation, Lowest lowestOf)
{
    SatAxis best;
    for (int i = 0; i < a.faceCount; ++i)
    {
        const float separation = faceOfASeparation(a, b, bInA, rotation, i, lowestOf);
        if (separation > best.separation)
        {
            best = {SatFeature::FaceOfA, separation, a.faces[i].normal, i, -1};
            if (separation > maxSeparation)
            {
                break;
            }
        }
    }
    return best;
}

template <typename Lowest>
SatAxis queryFacesOfB(const HullView& a, const HullView& b, const Transform& bInA, const Mat3& rotation,
                      float maxSeparation, Lowest lowestOf)
{
    SatAxis best;
    for (int j = 0; j < b.faceCount; ++j)
    {
        Vec3 normalInA;
        const float separation = faceOfBSeparation(a, b, bInA, rotation, j, lowestOf, normalInA);
        if (separation > best.separation)
        {
            best = {SatFeature::FaceOfB, separation, -normalInA, -1, j};
            if (separation > maxSeparation)
            {
                break;
            }
        }
    }
    return best;
}

/// A's edges with their Gauss-map arcs precomputed, so that the O(EA x EB) loop does no cross product
/// for the arc test. Up to kEdgeCache edges; beyond that edgePairAxis computes them on the fly.
constexpr int kEdgeCache = 768; // buildConvexHull hulls have at most 759 edges

SatAxis queryEdgePairs(const HullView& a, const HullView& b, const Transform& bInA, const Mat3& rotation,
                       float maxSeparation)
{
    SatAxis best;
    if (a.edgeCount > kEdgeCache)
    {
        for (int j = 0; j < b.edgeCount; ++j)
        {
            const EdgeOfBInA edgeB = edgeOfBInA(b, bInA, rotation, j);
            for (int i = 0; i < a.edgeCount; ++i)
            {
                Vec3 axis;
                float separation;
                if (edgePairAxis(a, i, edgeB, axis, separation) && separation > best.separation)
                {
                    best = {SatFeature::EdgePair, separation, axis, i, j};
                    if (separation > maxSeparation)
                    {
                        return best;
                    }
                }
            }
        }
        return best;
    }
    // The arc test first, over flat arrays: na, nb and nb x na of every edge of A. Only the pairs that pass
    // (a few per edge of B) go to edgePairAxis, which repeats the test bit for bit and finishes the axis.
    struct ArcOfA
    {
        Vec3 na;
        Vec3 nb;
        Vec3 nbCrossNa;
    };
    ArcOfA arcs[kEdgeCache];
    for (int i = 0; i < a.edgeCount; ++i)
    {
        const HullEdge& edgeA = a.edges[i];
        arcs[i].na = a.faces[edgeA.face0].normal;
        arcs[i].nb = a.faces[edgeA.face1].normal;
        arcs[i].nbCrossNa = cross(arcs[i].nb, arcs[i].na);
    }
    for (int j = 0; j < b.edgeCount; ++j)
    {
        const EdgeOfBInA edgeB = edgeOfBInA(b, bInA, rotation, j);
        for (int i = 0; i < a.edgeCount; ++i)
        {
            const ArcOfA& arc = arcs[i];
            const float cba = dot(edgeB.c, arc.nbCrossNa);
            const float dba = dot(edgeB.d, arc.nbCrossNa);
            const float adc = dot(arc.na, edgeB.dCrossC);
            const float bdc = dot(arc.nb, edgeB.dCrossC);
            if (!(cba * dba < 0.0f && adc * bdc < 0.0f && cba * bdc > 0.0f))
            {
                continue;
            }
            Vec3 axis;
            float separation;
            if (edgePairAxis(a, i, edgeB, axis, separation) && separation > best.separation)
            {
                best = {SatFeature::EdgePair, separation, axis, i, j};
                if (separation > maxSeparation)
                {
                    return best;
                }
            }
        }
    }
    return best;
}

/// Index of the vertex with the largest dot product with `direction` (the first on ties).
inline int supportVertexIndex(const HullView& hull, const Vec3& direction)
{
    int best = 0;
    float bestDot = dot(hull.vertices[0], direction);
    for (int v = 1; v < hull.vertexCount; ++v)
    {
        const float d = dot(hull.vertices[v], direction);
        if (d > bestDot)
        {
            bestDot = d;
            best = v;
        }
    }
    return best;
}

/// A few indices already looked at, so that a local search evaluates each candidate once.
struct SmallIndexSet
{
    static constexpr int kCapacity = 64;
    int items[kCapacity];
    int count = 0;

    /// Adds `x`; false if it was already there. When full, everything counts as new (that only costs time).
    bool insert(int x)
    {
        for (int k = 0; k < count; ++k)
        {
            if (items[k] == x)
            {
                return false;
            }
        }
        if (count < kCapacity)
        {
            items[count++] = x;
        }
        return true;
    }
};

/// The other face across edge `e` from `face`.
inline int faceAcross(const HullView& hull, int e, int face)
{
    const HullEdge& edge = hull.edges[e];
    return edge.face0 == face ? edge.face1 : edge.face0;
}

/// Best face (largest separation, lowest index on ties) near `startVertex`: first the face around that
/// vertex most aligned with `direction` (hull frame), then the others around it, then hill climbing across
/// face edges while a neighbour separates more. The search stops as soon as a face reaches `good` (no face
/// can do meaningfully better) or `maxSeparation` (separating). `separationOf(face)` is the exact query.
template <typename SeparationOf>
int localBestFace(const HullView& hull, int startVertex, const Vec3& direction, float good,
                  float maxSeparation, SeparationOf separationOf, float& bestSeparation)
{
    SmallIndexSet seen;
    int best = -1;
    bestSeparation = -std::numeric_limits<float>::infinity();
    const auto consider = [&](int face)
    {
        if (!seen.insert(face))
        {
            return;
        }
        const float s = separationOf(face);
        if (s > bestSeparation || (s == bestSeparation && face < best))
        {
            best = face;
            bestSeparation = s;
        }
    };
    const auto done = [&] { return bestSeparation >= good || bestSeparation > maxSeparation; };
    const int first = hull.vertexEdgeStart[startVertex];
    const int last = hull.vertexEdgeStart[startVertex + 1];
    int aligned = -1;
    float alignment = -std::numeric_limits<float>::infinity();
    for (int k = first; k < last; ++k)
    {
        const int face = hull.edges[hull.vertexEdges[k]].face0; // each face around the vertex is some face0
        const float d = dot(hull.faces[face].normal, direction);
        aligned = d > alignment ? face : aligned;
        alignment = d > alignment ? d : alignment;
    }
    if (aligned >= 0)
    {
        consider(aligned);
    }
    for (int k = first; k < last && !done(); ++k)
    {
        const HullEdge& edge = hull.edges[hull.vertexEdges[k]];
        consider(edge.face0);
        consider(edge.face1);
    }
    for (int step = 0; step < hull.faceCount && best >= 0 && !done(); ++step)
    {
        const int current = best;
        const HullFace& face = hull.faces[current];
        for (int k = 0; k < face.indexCount; ++k)
        {
            consider(faceAcross(hull, hull.faceEdges[face.firstIndex + k], current));
        }
        if (best == current)
        {
            break;
        }
    }
    return best;
}

/// Appends the edges at `vertex` to `out` (capacity `capacity`), returns the new count.
inline int appendVertexEdges(const HullView& hull, int vertex, int* out, int count, int capacity)
{
    for (int k = hull.vertexEdgeStart[vertex]; k < hull.vertexEdgeStart[vertex + 1] && count < capacity; ++k)
    {
        out[count++] = hull.vertexEdges[k];
    }
    return count;
}

} // namespace

bool hasAdjacency(const HullView& view)
{
    return view.faceEdges != nullptr && view.vertexEdgeStart != nullptr && view.vertexEdges != nullptr;
}

SatResult satHullsNear(const HullView& a, const HullView& b, const Transform& bInA, const SatSearchHint& hint,
                       float maxSeparation)
{
    if (!hasAdjacency(a) || !hasAdjacency(b) || a.vertexCount == 0 || b.vertexCount == 0)
    {
        return satHulls(a, b, bInA, maxSeparation);
    }
    SatResult result;
    const Mat3 rotation = toMat3(bInA.q);
    const Vec3 directionInB = mulTransposed(rotation, -hint.direction);
    const int supportA = supportVertexIndex(a, hint.direction);
    const int supportB = supportVertexIndex(b, directionInB);
    const float upper = hint.separationUpperBound;

    // Faces of A, always: A's face wins ties.
    LowestByScan lowest;
    float separationA;
    const int faceA = localBestFace(
        a, supportA, hint.direction, hint.separationLowerBound, maxSeparation,
        [&](int i) { return faceOfASeparation(a, b, bInA, rotation, i, lowest); }, separationA);
    if (faceA >= 0)
    {
        result.bestFaceA = {SatFeature::FaceOfA, separationA, a.faces[faceA].normal, faceA, -1};
        if (separationA > maxSeparation)
        {
            result.separated = true;
            result.chosen = result.bestFaceA;
            return result;
        }
    }
    // Faces of B, unless even the upper bound would not beat A's face in chooseContactAxis.
    if (!(faceA >= 0 && upper <= satBiasedThreshold(separationA, kSatFaceRelativeTolerance)))
    {
        Vec3 normalInA;
        float separationB;
        const int faceB = localBestFace(
            b, supportB, directionInB, hint.separationLowerBound, maxSeparation,
            [&](int j) { return faceOfBSeparation(a, b, bInA, rotation, j, lowest, normalInA); },
            separationB);
        if (faceB >= 0)
        {
            result.bestFaceB = {SatFeature::FaceOfB, separationB, -(rotation * b.faces[faceB].normal), -1,
                                faceB};
            if (separationB > maxSeparation)
            {
                result.separated = true;
                result.chosen = result.bestFaceB;
                return result;
            }
        }
    }

    // Edge pairs, unless even the upper bound would not beat the best face in chooseContactAxis.
    const float bestFace = std::max(result.bestFaceA.separation, result.bestFaceB.separation);
    if (result.bestFaceA.feature != SatFeature::None &&
        upper <= satBiasedThreshold(bestFace, kSatEdgeRelativeTolerance))
    {
        result.chosen = chooseContactAxis(result.bestFaceA, result.bestFaceB, result.bestEdge);
        return result;
    }

    // Edge pairs: every pair of an edge at A's support vertex and one at B's, then hill climbing: from the
    // best pair, the pairs that keep one of its edges and take an edge touching the other (neighbouring
    // Minkowski faces share an edge of A or of B), while that separates more.
    constexpr int kCapacity = 32;
    int edgesA[kCapacity];
    int edgesB[kCapacity];
    const int countA = appendVertexEdges(a, supportA, edgesA, 0, kCapacity);
    const int countB = appendVertexEdges(b, supportB, edgesB, 0, kCapacity);
    SatAxis& best = result.bestEdge;
    const auto consider = [&](int i, int j, const EdgeOfBInA& edgeB)
    {
        Vec3 axis;
        float separation;
        if (edgePairAxis(a, i, edgeB, axis, separation) &&
            (separation > best.separation ||
             (separation == best.separation && (i < best.indexA || (i == best.indexA && j < best.indexB)))))
        {
            best = {SatFeature::EdgePair, separation, axis, i, j};
        }
    };
    for (int jb = 0; jb < countB; ++jb)
    {
        const EdgeOfBInA edgeB = edgeOfBInA(b, bInA, rotation, edgesB[jb]);
        for (int ia = 0; ia < countA; ++ia)
        {
            consider(edgesA[ia], edgesB[jb], edgeB);
        }
    }
    for (int step = 0; step < a.edgeCount + b.edgeCount && best.feature != SatFeature::None &&
                       best.separation <= maxSeparation;
         ++step)
    {
        const int currentA = best.indexA;
        const int currentB = best.indexB;
        int around[kCapacity];
        // Keep B's edge, move A's.
        const EdgeOfBInA edgeB = edgeOfBInA(b, bInA, rotation, currentB);
        int count = appendVertexEdges(a, a.edges[currentA].v0, around, 0, kCapacity);
        count = appendVertexEdges(a, a.edges[currentA].v1, around, count, kCapacity);
        for (int k = 0; k < count; ++k)
        {
            consider(around[k], currentB, edgeB);
        }
        // Keep A's edge, move B's.
        count = appendVertexEdges(b, b.edges[currentB].v0, around, 0, kCapacity);
        count = appendVertexEdges(b, b.edges[currentB].v1, around, count, kCapacity);
        for (int k = 0; k < count; ++k)
        {
            consider(currentA, around[k], edgeOfBInA(b, bInA, rotation, around[k]));
        }
        if (best.indexA == currentA && best.indexB == currentB)
        {
            break;
        }
    }
    if (best.separation > maxSeparation)
    {
        result.separated = true;
        result.chosen = best;
        return result;
    }
    result.chosen = chooseContactAxis(result.bestFaceA, result.bestFaceB, result.bestEdge);
    return result;
}

float SatResult::maxSeparation() const
{
    return std::max(bestFaceA.separation, std::max(bestFaceB.separation, bestEdge.separation));
}

SatAxis chooseContactAxis(const SatAxis& faceA, const SatAxis& faceB, const SatAxis& edge)
{
    SatAxis best = faceA;
    if (faceB.feature != SatFeature::None &&
        (best.feature == SatFeature::None ||
         faceB.separation > satBiasedThreshold(best.separation, kSatFaceRelativeTolerance)))
    {
        best = faceB;
    }
    if (edge.feature != SatFeature::None)
    {
        const float bestFace = std::max(faceA.separation, faceB.separation);
        if (best.feature == SatFeature::None ||
            edge.separation > satBiasedThreshold(bestFace, kSatEdgeRelativeTolerance))
        {
            best = edge;
        }
    }
    return best;
}

const std::uint16_t* boxFaceLoops()
{
    return kBoxFaceLoops;
}

const std::uint16_t* boxFaceLoopEdges()
{
    return kBoxFaceEdges.edges;
}

const HullEdge* boxEdges()
{
    return kBoxEdges.edges;
}

HullView viewOf(const ConvexHull& hull)
{
    HullView view;
    view.vertices = hull.vertices.data();
    view.faces = hull.faces.data();
    view.faceVertices = hull.faceVertices.data();
    view.edges = hull.edges.data();
    if (hull.faceEdges.size() == hull.faceVertices.size() &&
        hull.vertexEdgeStart.size() == hull.vertices.size() + 1 &&
        hull.vertexEdges.size() == 2 * hull.edges.size())
    {
        view.faceEdges = hull.faceEdges.data();
        view.vertexEdgeStart = hull.vertexEdgeStart.data();
        view.vertexEdges = hull.vertexEdges.data();
    }
    view.vertexCount = static_cast<int>(hull.vertices.size());
    view.faceCount = static_cast<int>(hull.faces.size());
    view.edgeCount = static_cast<int>(hull.edges.size());
    view.interiorPoint = hull.centroid;
    return view;
}

BoxAsHull boxAsHull(const BoxShape& box)
{
    BoxAsHull out;
    const Vec3 h = box.halfExtents;
    for (int v = 0; v < 8; ++v)
    {
        out.vertices[v] = {(v & 1) ? h.x : -h.x, (v & 2) ? h.y : -h.y, (v & 4) ? h.z : -h.z};
    }
    for (int axis = 0; axis < 3; ++axis)
    {
        Vec3 normal{};
        normal[axis] = 1.0f;
        out.faces[2 * axis] = {normal, h[axis], static_cast<std::uint16_t>(8 * axis), 4};
        out.faces[2 * axis + 1] = {-normal, h[axis], static_cast<std::uint16_t>(8 * axis + 4), 4};
    }
    return out;
}

HullView BoxAsHull::view() const
{
    HullView view;
    view.vertices = vertices;
    view.faces = faces;
    view.faceVertices = kBoxFaceLoops;
    view.edges = kBoxEdges.edges;
    view.faceEdges = kBoxFaceEdges.edges;
    view.vertexEdgeStart = kBoxVertexEdges.start;
    view.vertexEdges = kBoxVertexEdges.edges;
    view.vertexCount = 8;
    view.faceCount = 6;
    view.edgeCount = 12;
    view.interiorPoint = Vec3{};
    return view;
}

SatResult satBoxes(const BoxShape& a, const BoxShape& b, const Transform& bInA, float maxSeparation)
{
    SatResult result;
    // Plain arrays with constant indices after unrolling: R[i][j] is component i of B's axis j in A's frame.
    const Mat3 rotation = toMat3(bInA.q);
    const float R[3][3] = {{rotation.c0.x, rotation.c1.x, rotation.c2.x},
                           {rotation.c0.y, rotation.c1.y, rotation.c2.y},
                           {rotation.c0.z, rotation.c1.z, rotation.c2.z}};
    float absR[3][3];
    for (int i = 0; i < 3; ++i)
    {
        for (int j = 0; j < 3; ++j)
        {
            absR[i][j] = std::fabs(R[i][j]);
        }
    }
    const float t[3] = {bInA.p.x, bInA.p.y, bInA.p.z};
    const float ha[3] = {a.halfExtents.x, a.halfExtents.y, a.halfExtents.z};
    const float hb[3] = {b.halfExtents.x, b.halfExtents.y, b.halfExtents.z};

    // Faces of A. Each group is evaluated in full before its early out: a few axes cost less than the
    // mispredicted branches of an exit per axis.
    float separations[9];
    for (int i = 0; i < 3; ++i)
    {
        separations[i] =
            std::fabs(t[i]) - (ha[i] + hb[0] * absR[i][0] + hb[1] * absR[i][1] + hb[2] * absR[i][2]);
    }
    int best = separations[1] > separations[0] ? 1 : 0;
    best = separations[2] > separations[best] ? 2 : best;
    {
        const bool negative = t[best] < 0.0f;
        float components[3] = {0.0f, 0.0f, 0.0f};
        components[best] = negative ? -1.0f : 1.0f;
        result.bestFaceA = {SatFeature::FaceOfA, separations[best],
                            Vec3{components[0], components[1], components[2]}, 2 * best + (negative ? 1 : 0),
                            -1};
        if (separations[best] > maxSeparation)
        {
            result.separated = true;
            result.chosen = result.bestFaceA;
            return result;
        }
    }

    // Faces of B.
    float alongB[3];
    for (int j = 0; j < 3; ++j)
    {
        alongB[j] = t[0] * R[0][j] + t[1] * R[1][j] + t[2] * R[2][j];
        separations[j] =
            std::fabs(alongB[j]) - (hb[j] + ha[0] * absR[0][j] + ha[1] * absR[1][j] + ha[2] * absR[2][j]);
    }
    best = separations[1] > separations[0] ? 1 : 0;
    best = separations[2] > separations[best] ? 2 : best;
    {
        const bool negative = alongB[best] < 0.0f;
        const Vec3 axis{R[0][best], R[1][best], R[2][best]};
        // B lies along +axis (the normal) from A; its face towards A is the opposite one.
        result.bestFaceB = {SatFeature::FaceOfB, separations[best], negative ? -axis : axis, -1,
                            2 * best + (negative ? 0 : 1)};
        if (separations[best] > maxSeparation)
        {
            result.separated = true;
            result.chosen = result.bestFaceB;
            return result;
        }
    }

    // Edge pairs: axis n = e_i x b_j, whose nonzero components are n[i1] = -R[i2][j], n[i2] = R[i1][j]
    // (i1, i2 the axes after i). The reach of B, sum_k hb_k |n . b_k|, is computed from these components
    // rather than through orthonormality identities, which would amplify the matrix's rounding for nearly
    // parallel edges. Parallel edges (short n) are skipped: the face axes cover that direction.
    // Each axis's separation is its gap over its length. The arg-max is a max reduction and a bit mask of
    // the axes that reach it, without branches: which axis wins is as good as random, and a branch there
    // mispredicts often. Parallel edges (short axes) get -infinity and never win.
    const float parallelSine2 = kSatParallelSine * kSatParallelSine;
    float alongEdge[9];
    float gaps[9];
    float length2s[9];
    boxEdgeAxesAlong<0>(R, absR, t, ha, hb, alongEdge, gaps, length2s);
    boxEdgeAxesAlong<1>(R, absR, t, ha, hb, alongEdge, gaps, length2s);
    boxEdgeAxesAlong<2>(R, absR, t, ha, hb, alongEdge, gaps, length2s);
    float edgeSeparations[9];
    for (int e = 0; e < 9; ++e)
    {
        edgeSeparations[e] = length2s[e] > parallelSine2 ? gaps[e] / std::sqrt(length2s[e])
                                                         : -std::numeric_limits<float>::infinity();
    }
    float bestEdgeSeparation = edgeSeparations[0];
    for (int e = 1; e < 9; ++e)
    {
        bestEdgeSeparation = std::max(bestEdgeSeparation, edgeSeparations[e]);
    }
    unsigned winners = 0; // bit e: axis e reaches the best separation; the lowest such axis wins
    for (int e = 0; e < 9; ++e)
    {
        winners |= static_cast<unsigned>(edgeSeparations[e] == bestEdgeSeparation) << e;
    }
    best = winners != 0 && bestEdgeSeparation > -std::numeric_limits<float>::infinity()
               ? std::countr_zero(winners)
               : -1;
    if (best >= 0)
    {
        const float bestLength = std::sqrt(length2s[best]);
        const float bestSeparation = gaps[best] / bestLength;
        const int bestI = best / 3;
        const int bestJ = best % 3;
        const int i1 = (bestI + 1) % 3;
        const int i2 = (bestI + 2) % 3;
        const float scale = (alongEdge[best] < 0.0f ? -1.0f : 1.0f) / bestLength;
        float components[3] = {0.0f, 0.0f,
                               0.0f}; // an array, not Vec3::operator[], for cheap runtime indexing
        components[i1] = -R[i2][bestJ] * scale;
        components[i2] = R[i1][bestJ] * scale;
        const Vec3 n{components[0], components[1], components[2]};
        // Support edge of A along +n and of B along -n, named as in boxAsHull.
        const int j1 = (bestJ + 1) % 3;
        const int j2 = (bestJ + 2) % 3;
        const Vec3 axisB1{R[0][j1], R[1][j1], R[2][j1]};
        const Vec3 axisB2{R[0][j2], R[1][j2], R[2][j2]};
        const int edgeA = 4 * bestI + (components[i1] >= 0.0f ? 1 : 0) + 2 * (components[i2] >= 0.0f ? 1 : 0);
        const int edgeB = 4 * bestJ + (dot(n, axisB1) <= 0.0f ? 1 : 0) + 2 * (dot(n, axisB2) <= 0.0f ? 1 : 0);
        result.bestEdge = {SatFeature::EdgePair, bestSeparation, n, edgeA, edgeB};
        if (bestSeparation > maxSeparation)
        {
            result.separated = true;
            result.chosen = result.bestEdge;
            return result;
        }
    }

    result.chosen = chooseContactAxis(result.bestFaceA, result.bestFaceB, result.bestEdge);
    return result;
}

SatResult satHulls(const HullView& a, const HullView& b, const Transform& bInA, float maxSeparation)
{
    SatResult result;
    const Mat3 rotation = toMat3(bInA.q);
    result.bestFaceA = queryFacesOfA(a, b, bInA, rotation, maxSeparation, LowestByScan{});
    if (result.bestFaceA.separation > maxSeparation)
    {
        result.separated = true;
        result.chosen = result.bestFaceA;
        return result;
    }
    result.bestFaceB = queryFacesOfB(a, b, bInA, rotation, maxSeparation, LowestByScan{});
    if (result.bestFaceB.separation > maxSeparation)
    {
        result.separated = true;
        result.chosen = result.bestFaceB;
        return result;
    }
    result.bestEdge = queryEdgePairs(a, b, bInA, rotation, maxSeparation);
    if (result.bestEdge.separation > maxSeparation)
    {
        result.separated = true;
        result.chosen = result.bestEdge;
        return result;
    }
    result.chosen = chooseContactAxis(result.bestFaceA, result.bestFaceB, result.bestEdge);
    return result;
}

} // namespace polytope::physics

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
// Boxes use the classic 15-axis test in closed form (Gottschalk's OBB test), in A's frame with the
// rotation matrix of B; here every axis can be tested exactly, so no pruning is needed.
//
// The box numbering (vertices by sign bits, faces 2k / 2k+1, edges 4k + c) is shared by boxAsHull and
// satBoxes, so both paths name the same features.
#include "polytope/physics/sat.h"

#include <algorithm>
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

SatAxis queryFacesOfA(const HullView& a, const HullView& b, const Transform& bInA, float maxSeparation)
{
    SatAxis best;
    for (int i = 0; i < a.faceCount; ++i)
    {
        const HullFace& face = a.faces[i];
        // Support of B along -normal, found in B's frame so that B's vertices need no transform.
        const Vec3 normalInB = inverseRotate(bInA.q, face.normal);
        float lowest = dot(normalInB, b.vertices[0]);
        for (int v = 1; v < b.vertexCount; ++v)
        {
            lowest = std::min(lowest, dot(normalInB, b.vertices[v]));
        }
        const float separation = (lowest + dot(face.normal, bInA.p)) - face.offset;
        if (separation > best.separation)
        {
            best = {SatFeature::FaceOfA, separation, face.normal, i, -1};
            if (separation > maxSeparation)
            {
                break;
            }
        }
    }
    return best;
}

SatAxis queryFacesOfB(const HullView& a, const HullView& b, const Transform& bInA, float maxSeparation)
{
    SatAxis best;
    for (int j = 0; j < b.faceCount; ++j)
    {
        const HullFace& face = b.faces[j];
        const Vec3 normalInA = rotate(bInA.q, face.normal);
        float lowest = dot(normalInA, a.vertices[0]);
        for (int v = 1; v < a.vertexCount; ++v)
        {
            lowest = std::min(lowest, dot(normalInA, a.vertices[v]));
        }
        // B's face plane in A's frame is dot(normalInA, x) == offset + dot(normalInA, p).
        const float separation = (lowest - dot(normalInA, bInA.p)) - face.offset;
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

SatAxis queryEdgePairs(const HullView& a, const HullView& b, const Transform& bInA, float maxSeparation)
{
    SatAxis best;
    const float parallelSine2 = kSatParallelSine * kSatParallelSine;
    for (int j = 0; j < b.edgeCount; ++j)
    {
        const HullEdge& edgeB = b.edges[j];
        const Vec3 b0 = transformPoint(bInA, b.vertices[edgeB.v0]);
        const Vec3 b1 = transformPoint(bInA, b.vertices[edgeB.v1]);
        const Vec3 directionB = b1 - b0;
        // Gauss map of -B: B's face normals, negated.
        const Vec3 c = -rotate(bInA.q, b.faces[edgeB.face0].normal);
        const Vec3 d = -rotate(bInA.q, b.faces[edgeB.face1].normal);
        const Vec3 dCrossC = cross(d, c);
        const float lengthB2 = lengthSquared(directionB);

        for (int i = 0; i < a.edgeCount; ++i)
        {
            const HullEdge& edgeA = a.edges[i];
            const Vec3& na = a.faces[edgeA.face0].normal;
            const Vec3& nb = a.faces[edgeA.face1].normal;
            // Arcs (na, nb) and (c, d) cross iff each great circle separates the other arc's ends and the
            // crossing is not on the far side of the sphere.
            const Vec3 nbCrossNa = cross(nb, na);
            const float cba = dot(c, nbCrossNa);
            const float dba = dot(d, nbCrossNa);
            const float adc = dot(na, dCrossC);
            const float bdc = dot(nb, dCrossC);
            if (!(cba * dba < 0.0f && adc * bdc < 0.0f && cba * bdc > 0.0f))
            {
                continue;
            }
            const Vec3& a0 = a.vertices[edgeA.v0];
            const Vec3 directionA = a.vertices[edgeA.v1] - a0;
            Vec3 axis = cross(directionA, directionB);
            const float axisLength2 = lengthSquared(axis);
            if (axisLength2 <= parallelSine2 * lengthSquared(directionA) * lengthB2)
            {
                continue; // parallel edges: the adjacent face axes cover this direction
            }
            axis = axis / std::sqrt(axisLength2);
            if (dot(axis, a0 - a.interiorPoint) < 0.0f)
            {
                axis = -axis;
            }
            const float separation = dot(axis, b0 - a0);
            if (separation > best.separation)
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

} // namespace

float SatResult::maxSeparation() const
{
    return std::max(bestFaceA.separation, std::max(bestFaceB.separation, bestEdge.separation));
}

SatAxis chooseContactAxis(const SatAxis& faceA, const SatAxis& faceB, const SatAxis& edge)
{
    SatAxis best = faceA;
    if (faceB.feature != SatFeature::None &&
        (best.feature == SatFeature::None ||
         faceB.separation > kSatFaceRelativeTolerance * best.separation + kSatAbsoluteTolerance))
    {
        best = faceB;
    }
    if (edge.feature != SatFeature::None)
    {
        const float bestFace = std::max(faceA.separation, faceB.separation);
        if (best.feature == SatFeature::None ||
            edge.separation > kSatEdgeRelativeTolerance * bestFace + kSatAbsoluteTolerance)
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
    // The best axis is found without a square root per axis: separation = gap / length, and for lengths
    // > 0, gapA / lengthA > gapB / lengthB exactly when gapA |gapA| lengthB^2 > gapB |gapB| lengthA^2.
    const float parallelSine2 = kSatParallelSine * kSatParallelSine;
    float alongEdge[9];
    float gaps[9];
    float length2s[9];
    boxEdgeAxesAlong<0>(R, absR, t, ha, hb, alongEdge, gaps, length2s);
    boxEdgeAxesAlong<1>(R, absR, t, ha, hb, alongEdge, gaps, length2s);
    boxEdgeAxesAlong<2>(R, absR, t, ha, hb, alongEdge, gaps, length2s);
    best = -1;
    float bestKey = 0.0f;
    for (int e = 0; e < 9; ++e)
    {
        if (length2s[e] <= parallelSine2)
        {
            continue;
        }
        const float key = gaps[e] * std::fabs(gaps[e]);
        if (best < 0 || key * length2s[best] > bestKey * length2s[e])
        {
            best = e;
            bestKey = key;
        }
    }
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
    result.bestFaceA = queryFacesOfA(a, b, bInA, maxSeparation);
    if (result.bestFaceA.separation > maxSeparation)
    {
        result.separated = true;
        result.chosen = result.bestFaceA;
        return result;
    }
    result.bestFaceB = queryFacesOfB(a, b, bInA, maxSeparation);
    if (result.bestFaceB.separation > maxSeparation)
    {
        result.separated = true;
        result.chosen = result.bestFaceB;
        return result;
    }
    result.bestEdge = queryEdgePairs(a, b, bInA, maxSeparation);
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

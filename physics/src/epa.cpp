// EPA's polytope: a closed triangle mesh around the origin, kept in fixed arrays, and its repair.
//
// Each face knows its three neighbours, so the horizon (edges between faces that see the new point and
// faces that do not) is found by looking across the edges of the visible faces. Visibility is decided
// for every face, not by a flood from the expanded face, so no face that sees the point survives to
// make the polytope non-convex. The horizon must then be one simple closed loop: each vertex starts at
// most one horizon edge, and following the edges from the first one returns to it after visiting all of
// them. On a closed mesh that makes the visible faces one disc, so replacing them by a fan from the new
// point keeps the mesh closed. All checks run before anything is changed, so a refused expansion leaves
// a valid polytope and its nearest face to fall back on.
//
// Cost: a typical box-box step sees one or two faces and adds three or four. The scan over all faces is
// branch-free (whether a face sees the point is as good as random, and mispredictions dominated it);
// dead faces carry a huge plane distance and a zero normal so that scans need no `alive` test; and each
// face keeps, per edge, the index of that edge in its neighbour, so relinking needs no search.
#include "polytope/physics/epa.h"

#include <bit>
#include <cstdint>

namespace polytope::physics::convex_detail
{
namespace
{

// sin of the angle between two edges of a new face below which its normal is not trusted.
constexpr double kSliverSine = 1e-12;
// Plane distance given to dead faces, so that no scan needs to test `alive`.
constexpr double kDeadFace = 1e300;
// Horizon edges collected before the loop check: three per visible face at most. A step that sees more
// than half of the face cap is refused as not a loop (far beyond anything a sane polytope does).
constexpr int kHorizonCapacity = 3 * kEpaMaxFaces / 2;

struct HorizonEdge
{
    std::uint8_t from;
    std::uint8_t to;
    std::uint8_t outsideEdge; ///< index of this edge in the face beyond it
    std::uint16_t outside;    ///< the face beyond the edge, which stays
};

/// Unit normal and plane distance of triangle (a, b, c), counter-clockwise seen from outside. False when
/// the triangle is a sliver.
inline bool facePlane(const DVec3& a, const DVec3& b, const DVec3& c, DVec3& normal, double& distance)
{
    const DVec3 ab = b - a;
    const DVec3 ac = c - a;
    const DVec3 n = cross(ab, ac);
    const double normSquared = lengthSquared(n);
    if (!(normSquared > kSliverSine * kSliverSine * lengthSquared(ab) * lengthSquared(ac)) ||
        !(normSquared < 1e300))
    {
        return false;
    }
    normal = n * (1.0 / std::sqrt(normSquared));
    distance = dot(normal, a);
    return true;
}

} // namespace

bool EpaPolytope::init(const SupportVertex (&tetrahedron)[4])
{
    for (int i = 0; i < 4; ++i)
    {
        vertices.at[i] = tetrahedron[i];
    }
    // Orient so that face (0, 1, 2) faces away from vertex 3.
    const double volume = dot(cross(vertices.at[1].w - vertices.at[0].w, vertices.at[2].w - vertices.at[0].w),
                              vertices.at[3].w - vertices.at[0].w);
    if (volume > 0.0)
    {
        const SupportVertex swap = vertices.at[1];
        vertices.at[1] = vertices.at[2];
        vertices.at[2] = swap;
    }
    static constexpr std::uint8_t kFaces[4][3] = {{0, 1, 2}, {1, 0, 3}, {2, 1, 3}, {0, 2, 3}};
    for (int f = 0; f < 4; ++f)
    {
        EpaFace& face = faces[f];
        for (int k = 0; k < 3; ++k)
        {
            face.vertex[k] = kFaces[f][k];
        }
        face.alive = true;
        face.visible = false;
        if (!facePlane(vertices.at[face.vertex[0]].w, vertices.at[face.vertex[1]].w,
                       vertices.at[face.vertex[2]].w, face.normal, face.distance))
        {
            return false;
        }
    }
    // Neighbours: the face holding the same edge the other way round (worked out once for kFaces).
    static constexpr std::uint16_t kNeighbors[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};
    static constexpr std::uint8_t kNeighborEdges[4][3] = {{0, 0, 0}, {0, 2, 1}, {1, 2, 1}, {2, 2, 1}};
    for (int f = 0; f < 4; ++f)
    {
        for (int e = 0; e < 3; ++e)
        {
            faces[f].neighbor[e] = kNeighbors[f][e];
            faces[f].neighborEdge[e] = kNeighborEdges[f][e];
        }
    }
    vertexCount = 4;
    faceEnd = 4;
    freeCount = 0;
    for (int i = 0; i < 4; ++i)
    {
        horizonNext[i] = -1; // later vertices clear their own entry when added
    }
    return true;
}

int EpaPolytope::closestFace() const
{
    int best = -1;
    double bestDistance = 0.0;
    for (int f = 0; f < faceEnd; ++f)
    {
        if (faces[f].alive && (best < 0 || faces[f].distance < bestDistance))
        {
            best = f;
            bestDistance = faces[f].distance;
        }
    }
    return best;
}

bool EpaPolytope::isClosedMesh() const
{
    int alive = 0;
    int usedVertices = 0;
    bool used[kEpaMaxVertices] = {};
    for (int f = 0; f < faceEnd; ++f)
    {
        const EpaFace& face = faces[f];
        if (!face.alive)
        {
            continue;
        }
        ++alive;
        for (int e = 0; e < 3; ++e)
        {
            const int n = face.neighbor[e];
            const int k = face.neighborEdge[e];
            if (n >= faceEnd || k > 2 || !faces[n].alive || faces[n].neighbor[k] != f ||
                faces[n].neighborEdge[k] != e || faces[n].vertex[k] != face.vertex[(e + 1) % 3] ||
                faces[n].vertex[(k + 1) % 3] != face.vertex[e])
            {
                return false;
            }
            if (face.vertex[e] >= vertexCount)
            {
                return false;
            }
            if (!used[face.vertex[e]])
            {
                used[face.vertex[e]] = true;
                ++usedVertices;
            }
        }
        if (std::fabs(lengthSquared(face.normal) - 1.0) > 1e-9)
        {
            return false;
        }
    }
    // A closed triangulated sphere: V - E + F = 2 with E = 3F / 2.
    return alive >= 4 && usedVertices - (3 * alive) / 2 + alive == 2;
}

bool EpaPolytope::contains(const SupportVertex& v) const
{
    // Bitwise equality of the exact differences, branch-free (a +0 / -0 mismatch only misses a
    // duplicate that the horizon and face checks then catch).
    const std::uint64_t x = std::bit_cast<std::uint64_t>(v.w.x);
    const std::uint64_t y = std::bit_cast<std::uint64_t>(v.w.y);
    const std::uint64_t z = std::bit_cast<std::uint64_t>(v.w.z);
    bool found = false;
    for (int i = 0; i < vertexCount; ++i)
    {
        const DVec3& p = vertices.at[i].w;
        found |= ((std::bit_cast<std::uint64_t>(p.x) ^ x) | (std::bit_cast<std::uint64_t>(p.y) ^ y) |
                  (std::bit_cast<std::uint64_t>(p.z) ^ z)) == 0;
    }
    return found;
}

EpaGrowth EpaPolytope::expand(int expanded, const SupportVertex& w, double tolerance, int& closest)
{
    if (vertexCount >= kEpaMaxVertices)
    {
        return EpaGrowth::Capacity;
    }

    // 1. Which faces see w. The nearest face among those that stay is remembered on the way. Written
    // without branches: whether a face is visible is as good as random, and dead faces (distance
    // kDeadFace, normal zero) simply never see w and are never nearest.
    std::uint16_t visibleFaces[kEpaMaxFaces];
    int visibleCount = 0;
    int nearestKept = -1;
    double nearestKeptDistance = kDeadFace;
    for (int f = 0; f < faceEnd; ++f)
    {
        EpaFace& face = faces[f];
        const bool visible = (f == expanded) | (dot(face.normal, w.w) - face.distance > tolerance);
        face.visible = visible;
        visibleFaces[visibleCount] = std::uint16_t(f);
        visibleCount += visible ? 1 : 0;
        const bool nearer = !visible & (face.distance < nearestKeptDistance);
        nearestKept = nearer ? f : nearestKept;
        nearestKeptDistance = nearer ? face.distance : nearestKeptDistance;
    }

    // 2. The horizon: edges of visible faces whose neighbour stays.
    if (3 * visibleCount > kHorizonCapacity)
    {
        return EpaGrowth::HorizonNotLoop;
    }
    HorizonEdge horizon[kHorizonCapacity];
    int edgeCount = 0;
    for (int i = 0; i < visibleCount; ++i)
    {
        const EpaFace& face = faces[visibleFaces[i]];
        for (int e = 0; e < 3; ++e)
        {
            horizon[edgeCount] = {face.vertex[e], face.vertex[e == 2 ? 0 : e + 1], face.neighborEdge[e],
                                  face.neighbor[e]};
            edgeCount += faces[face.neighbor[e]].visible ? 0 : 1;
        }
    }

    // 3. It must be one simple closed loop. order[] lists the edges along it.
    if (edgeCount < 3)
    {
        return EpaGrowth::HorizonNotLoop;
    }
    int order[kEpaMaxVertices];
    bool loop = true;
    int marked = 0;
    for (; marked < edgeCount; ++marked)
    {
        std::int16_t& slot = horizonNext[horizon[marked].from];
        if (slot >= 0)
        {
            loop = false; // two horizon edges leave one vertex: the visible region pinches there
            break;
        }
        slot = std::int16_t(marked);
    }
    if (loop)
    {
        int current = 0;
        order[0] = 0;
        for (int step = 1; step < edgeCount && loop; ++step)
        {
            const int next = horizonNext[horizon[current].to];
            loop = next > 0; // -1: the loop is open; 0: it closes early, leaving edges out
            current = next;
            order[step] = next;
        }
        loop = loop && horizonNext[horizon[current].to] == 0;
    }
    for (int i = 0; i < marked; ++i)
    {
        horizonNext[horizon[i].from] = -1;
    }
    if (!loop)
    {
        return EpaGrowth::HorizonNotLoop;
    }

    // 4. The new faces, w joined to each horizon edge, must have normals and keep the origin behind them.
    DVec3 newNormal[kEpaMaxVertices];
    double newDistance[kEpaMaxVertices];
    for (int step = 0; step < edgeCount; ++step)
    {
        const HorizonEdge& edge = horizon[order[step]];
        if (!facePlane(vertices.at[edge.from].w, vertices.at[edge.to].w, w.w, newNormal[step],
                       newDistance[step]) ||
            newDistance[step] < -2.0 * tolerance)
        {
            return EpaGrowth::DegenerateFace;
        }
    }
    if (freeCount + visibleCount + (kEpaMaxFaces - faceEnd) < edgeCount)
    {
        return EpaGrowth::Capacity;
    }

    // 5. Commit: add w, free the visible faces, fan w over the horizon, link neighbours.
    const std::uint8_t apex = std::uint8_t(vertexCount);
    vertices.at[vertexCount] = w;
    horizonNext[vertexCount] = -1;
    ++vertexCount;
    for (int i = 0; i < visibleCount; ++i)
    {
        EpaFace& dead = faces[visibleFaces[i]];
        dead.alive = false;
        dead.normal = {0.0, 0.0, 0.0};
        dead.distance = kDeadFace;
        freeFaces[freeCount++] = visibleFaces[i];
    }
    std::uint16_t newFace[kEpaMaxVertices];
    for (int step = 0; step < edgeCount; ++step)
    {
        newFace[step] = freeCount > 0 ? freeFaces[--freeCount] : std::uint16_t(faceEnd++);
    }
    closest = nearestKept;
    double closestDistance = nearestKeptDistance;
    for (int step = 0; step < edgeCount; ++step)
    {
        const HorizonEdge& edge = horizon[order[step]];
        EpaFace& face = faces[newFace[step]];
        face.vertex[0] = edge.from;
        face.vertex[1] = edge.to;
        face.vertex[2] = apex;
        face.normal = newNormal[step];
        face.distance = newDistance[step];
        face.alive = true;
        face.visible = false;
        // Edge 0 (from -> to) borders the face that stays; edge 1 (to -> apex) the next new face's edge 2
        // (apex -> its from == our to); edge 2 the previous new face's edge 1.
        face.neighbor[0] = edge.outside;
        face.neighborEdge[0] = edge.outsideEdge;
        face.neighbor[1] = newFace[step + 1 == edgeCount ? 0 : step + 1];
        face.neighborEdge[1] = 2;
        face.neighbor[2] = newFace[step == 0 ? edgeCount - 1 : step - 1];
        face.neighborEdge[2] = 1;
        faces[edge.outside].neighbor[edge.outsideEdge] = newFace[step];
        faces[edge.outside].neighborEdge[edge.outsideEdge] = 0;
        const bool nearer =
            face.distance < closestDistance; // closestDistance starts at kDeadFace if none stays
        closest = nearer ? newFace[step] : closest;
        closestDistance = nearer ? face.distance : closestDistance;
    }
    return EpaGrowth::Expanded;
}

void EpaPolytope::witnesses(int face, double tolerance, Vec3& onA, Vec3& onB) const
{
    // The origin's projection q onto the nearest plane lies in the polytope, but when neighbouring faces
    // tie with this one (a flat facet of the Minkowski difference cut into several triangles), it may
    // lie in a neighbour rather than in this triangle. Walk across the edge that q lies beyond, as long
    // as the next face is as near as this one within tolerance, then take barycentric weights.
    const DVec3 q = faces[face].normal * faces[face].distance;
    const double nearest = faces[face].distance;
    double weight[3];
    int current = face;
    for (int step = 0; step < 32; ++step)
    {
        const EpaFace& f = faces[current];
        const DVec3 a = vertices.at[f.vertex[0]].w - q;
        const DVec3 b = vertices.at[f.vertex[1]].w - q;
        const DVec3 c = vertices.at[f.vertex[2]].w - q;
        // Signed areas along the face normal of the triangles with one corner moved to q.
        weight[0] = dot(f.normal, cross(b, c));
        weight[1] = dot(f.normal, cross(c, a));
        weight[2] = dot(f.normal, cross(a, b));
        const double sum = weight[0] + weight[1] + weight[2];
        const int worst =
            weight[0] <= weight[1] ? (weight[0] <= weight[2] ? 0 : 2) : (weight[1] <= weight[2] ? 1 : 2);
        if (!(weight[worst] < -1e-9 * sum))
        {
            break;
        }
        const int beyond = f.neighbor[(worst + 1) % 3]; // across the edge opposite the worst corner
        if (!(faces[beyond].distance <= nearest + tolerance))
        {
            break;
        }
        current = beyond;
    }
    const EpaFace& f = faces[current];
    const SupportVertex& p0 = vertices.at[f.vertex[0]];
    const SupportVertex& p1 = vertices.at[f.vertex[1]];
    const SupportVertex& p2 = vertices.at[f.vertex[2]];
    // Rounding, or a walk stopped at a real edge, can leave a weight slightly negative: clamp, renormalise.
    double sum = 0.0;
    for (double& x : weight)
    {
        x = maxOf(x, 0.0);
        sum += x;
    }
    if (!(sum > 0.0))
    {
        weight[0] = weight[1] = weight[2] = 1.0;
        sum = 3.0;
    }
    const double inv = 1.0 / sum;
    const DVec3 pa =
        (toDouble(p0.onA) * weight[0] + toDouble(p1.onA) * weight[1] + toDouble(p2.onA) * weight[2]) * inv;
    const DVec3 pb =
        (toDouble(p0.onB) * weight[0] + toDouble(p1.onB) * weight[1] + toDouble(p2.onB) * weight[2]) * inv;
    onA = toFloat(pa);
    onB = toFloat(pb);
}

} // namespace polytope::physics::convex_detail

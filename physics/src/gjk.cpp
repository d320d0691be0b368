// GJK's sub-algorithm: the point of a simplex closest to the origin, by signed volumes.
//
// For a simplex of k+1 points, the barycentric weights of the origin's projection onto its affine hull
// are ratios of signed k-volumes: the volume with one vertex replaced by the origin, over the whole.
// Where every weight has the sign of the whole, the projection lies inside and the simplex is kept;
// otherwise the closest point lies on a facet opposite a vertex of the wrong sign, and only those
// facets are searched (Montanari, Petrinic, Barbieri 2017). Weights are exactly zero only on the
// boundary; such a vertex is dropped too, so every kept vertex has a positive weight and later simplices
// do not inherit useless, possibly coincident points. A simplex too flat to carry a reliable sign (its
// volume is tiny next to the product of its edge lengths) is treated as degenerate and replaced by its
// best facet.
#include "polytope/physics/gjk.h"

namespace polytope::physics::convex_detail
{
namespace
{

// sin^2 of the angle between two triangle edges, or the normalised volume of a tetrahedron, below which
// the simplex is treated as flat: the signed areas/volumes would be dominated by rounding.
constexpr double kFlatTriangleSine2 = 1e-20;
constexpr double kFlatTetrahedronRatio = 1e-10;

SimplexClosest vertexOnly(const SupportVertex* p, int i)
{
    SimplexClosest r{};
    r.count = 1;
    r.index[0] = i;
    r.barycentric[0] = 1.0;
    r.closest = p[i].w;
    r.closestSquared = lengthSquared(p[i].w);
    return r;
}

SimplexClosest closestOnSegment(const SupportVertex* p, int first, int second)
{
    // Indices in increasing order, so that GJK can compact its simplex in place.
    const int i0 = first < second ? first : second;
    const int i1 = first < second ? second : first;
    const DVec3 edge = p[i1].w - p[i0].w;
    const double edgeSquared = lengthSquared(edge);
    if (!(edgeSquared > 0.0))
    {
        return vertexOnly(p, i1);
    }
    const double t = -dot(p[i0].w, edge) / edgeSquared;
    if (t <= 0.0)
    {
        return vertexOnly(p, i0);
    }
    if (t >= 1.0)
    {
        return vertexOnly(p, i1);
    }
    SimplexClosest r{};
    r.count = 2;
    r.index[0] = i0;
    r.index[1] = i1;
    r.barycentric[0] = 1.0 - t;
    r.barycentric[1] = t;
    r.closest = p[i0].w + edge * t;
    r.closestSquared = lengthSquared(r.closest);
    return r;
}

void keepCloser(SimplexClosest& best, const SimplexClosest& candidate, bool& haveBest)
{
    if (!haveBest || candidate.closestSquared < best.closestSquared)
    {
        best = candidate;
        haveBest = true;
    }
}

SimplexClosest closestOnTriangle(const SupportVertex* p, int i0, int i1, int i2)
{
    const int idx[3] = {i0, i1, i2};
    const DVec3 e1 = p[i1].w - p[i0].w;
    const DVec3 e2 = p[i2].w - p[i0].w;
    const DVec3 n = cross(e1, e2);
    const double nn = lengthSquared(n);
    bool haveBest = false;
    SimplexClosest best{};
    if (!(nn > kFlatTriangleSine2 * lengthSquared(e1) * lengthSquared(e2)))
    {
        keepCloser(best, closestOnSegment(p, i0, i1), haveBest);
        keepCloser(best, closestOnSegment(p, i1, i2), haveBest);
        keepCloser(best, closestOnSegment(p, i0, i2), haveBest);
        return best;
    }
    // Signed areas, projected on the normal, of the triangles with one vertex moved to the origin's
    // projection. n . (a x b) needs no explicit projection: the projection is parallel to n.
    const double area[3] = {dot(n, cross(p[i1].w, p[i2].w)), dot(n, cross(p[i2].w, p[i0].w)),
                            dot(n, cross(p[i0].w, p[i1].w))};
    const double total = area[0] + area[1] + area[2];
    if (area[0] * total > 0.0 && area[1] * total > 0.0 && area[2] * total > 0.0)
    {
        SimplexClosest r{};
        r.count = 3;
        for (int k = 0; k < 3; ++k)
        {
            r.index[k] = idx[k];
            r.barycentric[k] = area[k] / total;
        }
        // The projection of the origin onto the plane, taken along the normal: its direction stays exact
        // even when it is tiny, which the contact normal relies on.
        r.closest = n * (dot(p[i0].w, n) / nn);
        r.closestSquared = lengthSquared(r.closest);
        return r;
    }
    for (int k = 0; k < 3; ++k)
    {
        if (!(area[k] * total > 0.0))
        {
            keepCloser(best, closestOnSegment(p, idx[(k + 1) % 3], idx[(k + 2) % 3]), haveBest);
        }
    }
    return best;
}

SimplexClosest closestOnTetrahedron(const SupportVertex* p)
{
    const DVec3 e1 = p[1].w - p[0].w;
    const DVec3 e2 = p[2].w - p[0].w;
    const DVec3 e3 = p[3].w - p[0].w;
    // Signed volumes with vertex k replaced by the origin; they sum to the whole volume.
    const double volume[4] = {dot(p[1].w, cross(p[2].w, p[3].w)), -dot(p[0].w, cross(p[2].w, p[3].w)),
                              dot(p[0].w, cross(p[1].w, p[3].w)), -dot(p[0].w, cross(p[1].w, p[2].w))};
    const double total = volume[0] + volume[1] + volume[2] + volume[3];
    const double edgeProduct =
        std::sqrt(lengthSquared(e1)) * std::sqrt(lengthSquared(e2)) * std::sqrt(lengthSquared(e3));
    const bool flat = !(std::fabs(total) > kFlatTetrahedronRatio * edgeProduct);
    bool haveBest = false;
    SimplexClosest best{};
    if (!flat && volume[0] * total > 0.0 && volume[1] * total > 0.0 && volume[2] * total > 0.0 &&
        volume[3] * total > 0.0)
    {
        best.count = 4;
        for (int k = 0; k < 4; ++k)
        {
            best.index[k] = k;
            best.barycentric[k] = volume[k] / total;
        }
        best.closest = {0.0, 0.0, 0.0};
        best.closestSquared = 0.0;
        return best;
    }
    static constexpr int kFaceWithout[4][3] = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}};
    for (int k = 0; k < 4; ++k)
    {
        if (flat || !(volume[k] * total > 0.0))
        {
            keepCloser(best, closestOnTriangle(p, kFaceWithout[k][0], kFaceWithout[k][1], kFaceWithout[k][2]),
                       haveBest);
        }
    }
    return best;
}

} // namespace

SimplexClosest closestOnSimplex(const SupportVertex* points, int count)
{
    switch (count)
    {
    case 1:
        return vertexOnly(points, 0);
    case 2:
        return closestOnSegment(points, 0, 1);
    case 3:
        return closestOnTriangle(points, 0, 1, 2);
    default:
        return closestOnTetrahedron(points);
    }
}

} // namespace polytope::physics::convex_detail

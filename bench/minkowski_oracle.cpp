#include "minkowski_oracle.h"

extern "C"
{
#include <libqhull_r/libqhull_r.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace polytope::bench
{
namespace
{

Vec3d sub(const Vec3d& a, const Vec3d& b)
{
    return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
double dot(const Vec3d& a, const Vec3d& b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
Vec3d cross(const Vec3d& a, const Vec3d& b)
{
    return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
Vec3d scale(const Vec3d& a, double s)
{
    return {a[0] * s, a[1] * s, a[2] * s};
}
Vec3d add(const Vec3d& a, const Vec3d& b)
{
    return {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
}

/// Distance from the origin to triangle abc (Ericson, Real-Time Collision Detection 5.1.5).
double originToTriangle(const Vec3d& a, const Vec3d& b, const Vec3d& c)
{
    const Vec3d p{0.0, 0.0, 0.0};
    const Vec3d ab = sub(b, a), ac = sub(c, a), ap = sub(p, a);
    const double d1 = dot(ab, ap), d2 = dot(ac, ap);
    auto len = [](const Vec3d& v) { return std::sqrt(dot(v, v)); };
    if (d1 <= 0.0 && d2 <= 0.0)
        return len(a);
    const Vec3d bp = sub(p, b);
    const double d3 = dot(ab, bp), d4 = dot(ac, bp);
    if (d3 >= 0.0 && d4 <= d3)
        return len(b);
    const double vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0)
        return len(add(a, scale(ab, d1 / (d1 - d3))));
    const Vec3d cp = sub(p, c);
    const double d5 = dot(ab, cp), d6 = dot(ac, cp);
    if (d6 >= 0.0 && d5 <= d6)
        return len(c);
    const double vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0)
        return len(add(a, scale(ac, d2 / (d2 - d6))));
    const double va = d3 * d6 - d5 * d4;
    if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0)
        return len(add(b, scale(sub(c, b), (d4 - d3) / ((d4 - d3) + (d5 - d6)))));
    const double denom = 1.0 / (va + vb + vc);
    return len(add(a, add(scale(ab, vb * denom), scale(ac, vc * denom))));
}

} // namespace

ExactAnswer minkowskiExact(const std::vector<Vec3d>& verticesA, const std::vector<Vec3d>& verticesB)
{
    ExactAnswer answer;
    std::vector<coordT> points;
    points.reserve(verticesA.size() * verticesB.size() * 3);
    for (const Vec3d& a : verticesA)
    {
        for (const Vec3d& b : verticesB)
        {
            points.push_back(a[0] - b[0]);
            points.push_back(a[1] - b[1]);
            points.push_back(a[2] - b[2]);
        }
    }
    qhT context;
    qhT* qh = &context;
    qh_zero(qh, stderr);
    char options[] = "qhull Qt";
    const int exitCode = qh_new_qhull(qh, 3, static_cast<int>(points.size() / 3), points.data(), False,
                                      options, nullptr, stderr);
    if (exitCode == 0)
    {
        double maxOffset =
            -std::numeric_limits<double>::infinity(); // largest signed plane distance of the origin
        Vec3d bestNormal{};
        double minTriangle = std::numeric_limits<double>::infinity();
        facetT* facet;
        FORALLfacets
        {
            // Plane: normal . x + offset = 0, normal outward; the origin's signed distance is offset.
            const double signedDistance = facet->offset;
            if (signedDistance > maxOffset)
            {
                maxOffset = signedDistance;
                bestNormal = {facet->normal[0], facet->normal[1], facet->normal[2]};
            }
            Vec3d corners[3];
            int n = 0;
            vertexT *vertex, **vertexp;
            FOREACHvertex_(facet->vertices)
            {
                if (n < 3)
                {
                    corners[n] = {vertex->point[0], vertex->point[1], vertex->point[2]};
                }
                ++n;
            }
            if (n == 3)
            {
                minTriangle = std::min(minTriangle, originToTriangle(corners[0], corners[1], corners[2]));
            }
        }
        answer.valid = true;
        answer.overlapping = maxOffset < 0.0;
        if (answer.overlapping)
        {
            answer.depth = -maxOffset;
            answer.normal = bestNormal;
        }
        else
        {
            answer.distance = minTriangle;
        }
    }
    qh_freeqhull(qh, !qh_ALL);
    int curlong = 0, totlong = 0;
    qh_memfreeshort(qh, &curlong, &totlong);
    return answer;
}

double satBoxDepth(const Vec3d& ha, const std::array<Vec3d, 3>& ra, const Vec3d& ca, const Vec3d& hb,
                   const std::array<Vec3d, 3>& rb, const Vec3d& cb, Vec3d* normal)
{
    const Vec3d d = sub(cb, ca);
    double best = std::numeric_limits<double>::infinity();
    Vec3d bestAxis{};
    auto test = [&](Vec3d axis)
    {
        const double len = std::sqrt(dot(axis, axis));
        if (len < 1e-9)
        {
            return; // parallel edges: no axis
        }
        axis = scale(axis, 1.0 / len);
        double projA = 0.0, projB = 0.0;
        for (int i = 0; i < 3; ++i)
        {
            projA += ha[i] * std::fabs(dot(ra[i], axis));
            projB += hb[i] * std::fabs(dot(rb[i], axis));
        }
        const double centre = dot(d, axis);
        const double overlap = projA + projB - std::fabs(centre);
        if (overlap < best)
        {
            best = overlap;
            bestAxis = centre < 0.0 ? scale(axis, -1.0) : axis;
        }
    };
    for (int i = 0; i < 3; ++i)
    {
        test(ra[i]);
        test(rb[i]);
    }
    for (int i = 0; i < 3; ++i)
    {
        for (int j = 0; j < 3; ++j)
        {
            test(cross(ra[i], rb[j]));
        }
    }
    if (normal)
    {
        *normal = bestAxis;
    }
    return best;
}

} // namespace polytope::bench

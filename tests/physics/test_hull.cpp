// buildConvexHull: structural invariants, exact boxes, refusal of degenerate input, and agreement with
// qhull (an independent implementation) on seeded random clouds.
#include "polytope/physics/hull.h"
#include "polytope/physics/mass.h"

#include <catch2/catch.hpp>

#include <libqhull_r/qhull_ra.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <set>
#include <span>
#include <tuple>
#include <vector>

using namespace polytope::physics;

namespace
{

struct D3
{
    double x = 0.0, y = 0.0, z = 0.0;
};
D3 d3(const Vec3& v)
{
    return {v.x, v.y, v.z};
}
D3 sub(const D3& a, const D3& b)
{
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}
D3 crossD(const D3& a, const D3& b)
{
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
double dotD(const D3& a, const D3& b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
double lengthD(const D3& a)
{
    return std::sqrt(dotD(a, a));
}

double signedDistance(const HullFace& f, const Vec3& p)
{
    return dotD(d3(f.normal), d3(p)) - f.offset;
}

std::span<const std::uint16_t> loopOf(const ConvexHull& hull, const HullFace& f)
{
    return {hull.faceVertices.data() + f.firstIndex, f.indexCount};
}

/// Volume by the divergence theorem over fan triangles about the origin (independent of mass.cpp).
double hullVolume(const ConvexHull& hull)
{
    double sixV = 0.0;
    for (const HullFace& f : hull.faces)
    {
        const auto loop = loopOf(hull, f);
        const D3 a = d3(hull.vertices[loop[0]]);
        for (std::size_t k = 1; k + 1 < loop.size(); ++k)
        {
            sixV += dotD(a, crossD(d3(hull.vertices[loop[k]]), d3(hull.vertices[loop[k + 1]])));
        }
    }
    return sixV / 6.0;
}

double hullArea(const ConvexHull& hull)
{
    double area = 0.0;
    for (const HullFace& f : hull.faces)
    {
        const auto loop = loopOf(hull, f);
        D3 n{};
        for (std::size_t k = 0; k < loop.size(); ++k)
        {
            const D3 c = crossD(d3(hull.vertices[loop[k]]), d3(hull.vertices[loop[(k + 1) % loop.size()]]));
            n = {n.x + c.x, n.y + c.y, n.z + c.z};
        }
        area += 0.5 * lengthD(n);
    }
    return area;
}

/// Every promise of buildConvexHull that can be checked from the output and the input alone.
void checkHullInvariants(const ConvexHull& hull, std::span<const Vec3> points, double tol)
{
    const std::size_t V = hull.vertices.size(), F = hull.faces.size(), E = hull.edges.size();
    REQUIRE(V >= 4);
    REQUIRE(F >= 4);
    REQUIRE(V <= kMaxHullVertices);
    CHECK(static_cast<long>(V) - static_cast<long>(E) + static_cast<long>(F) == 2);

    // Vertices: input points, bit-exact, no duplicates.
    std::set<std::tuple<float, float, float>> inputSet, vertexSet;
    for (const Vec3& p : points)
    {
        inputSet.insert({p.x, p.y, p.z});
    }
    for (const Vec3& v : hull.vertices)
    {
        CHECK(inputSet.count({v.x, v.y, v.z}) == 1);
        vertexSet.insert({v.x, v.y, v.z});
    }
    CHECK(vertexSet.size() == V);

    // Faces: unit outward normals, CCW convex loops, planar, every input point inside.
    std::vector<int> facesPerVertex(V, 0);
    std::size_t loopTotal = 0;
    for (const HullFace& f : hull.faces)
    {
        const auto loop = loopOf(hull, f);
        REQUIRE(loop.size() >= 3);
        REQUIRE(std::size_t{f.firstIndex} + f.indexCount <= hull.faceVertices.size());
        loopTotal += loop.size();
        const D3 n = d3(f.normal);
        CHECK(std::fabs(lengthD(n) - 1.0) < 1e-6);
        std::set<std::uint16_t> distinct(loop.begin(), loop.end());
        CHECK(distinct.size() == loop.size());
        D3 newell{};
        double worstTurn = std::numeric_limits<double>::infinity(); // of c off the line a -> b, to the left
        double highest = -std::numeric_limits<double>::infinity(), lowest = -highest;
        for (std::size_t k = 0; k < loop.size(); ++k)
        {
            REQUIRE(loop[k] < V);
            ++facesPerVertex[loop[k]];
            const D3 a = d3(hull.vertices[loop[k]]);
            const D3 b = d3(hull.vertices[loop[(k + 1) % loop.size()]]);
            const D3 c = d3(hull.vertices[loop[(k + 2) % loop.size()]]);
            const D3 ab = crossD(a, b);
            newell = {newell.x + ab.x, newell.y + ab.y, newell.z + ab.z};
            worstTurn = std::min(worstTurn, dotD(crossD(sub(b, a), sub(c, b)), n) / lengthD(sub(b, a)));
            highest = std::max(highest, signedDistance(f, hull.vertices[loop[k]]));
            lowest = std::min(lowest, signedDistance(f, hull.vertices[loop[k]]));
        }
        CHECK(dotD(newell, n) > 0.0); // counter-clockwise about the outward normal
        CHECK(worstTurn >= -tol);     // convex, within tolerance
        CHECK(highest <= 1e-6 * tol); // the plane is on or above its own vertices ...
        CHECK(lowest >= -4.0 * tol);  // ... and no more than a few tolerances above
        double outside = -std::numeric_limits<double>::infinity();
        for (const Vec3& p : points)
        {
            outside = std::max(outside, signedDistance(f, p));
        }
        CHECK(outside <= tol);
        CHECK(signedDistance(f, hull.centroid) < 0.0);
    }
    // No vertex inside a face or on an edge: every vertex is a corner of at least three faces.
    CHECK(*std::min_element(facesPerVertex.begin(), facesPerVertex.end()) >= 3);

    // Edges: unique, and each runs v0 -> v1 on face0 and v1 -> v0 on face1; together they cover every
    // side of every face loop exactly once.
    CHECK(2 * E == loopTotal);
    std::set<std::pair<int, int>> seen;
    auto runsOn = [&](int face, int from, int to)
    {
        const auto loop = loopOf(hull, hull.faces[face]);
        for (std::size_t k = 0; k < loop.size(); ++k)
        {
            if (loop[k] == from && loop[(k + 1) % loop.size()] == to)
            {
                return true;
            }
        }
        return false;
    };
    for (const HullEdge& e : hull.edges)
    {
        REQUIRE(e.v0 < V);
        REQUIRE(e.v1 < V);
        REQUIRE(e.face0 < F);
        REQUIRE(e.face1 < F);
        CHECK(e.v0 != e.v1);
        CHECK(e.face0 != e.face1);
        CHECK(seen.insert({std::min(e.v0, e.v1), std::max(e.v0, e.v1)}).second);
        CHECK(runsOn(e.face0, e.v0, e.v1));
        CHECK(runsOn(e.face1, e.v1, e.v0));
        // Adjacent faces are not coplanar: some vertex of face1 lies clearly below face0's plane.
        double lowest = 0.0;
        for (std::uint16_t v : loopOf(hull, hull.faces[e.face1]))
        {
            lowest = std::min(lowest, signedDistance(hull.faces[e.face0], hull.vertices[v]));
        }
        CHECK(lowest < -0.999 * tol);
    }

    // The centroid is the volume centroid.
    const MassProperties unit = computeMassProperties(hull, 1.0f);
    CHECK(unit.mass == Approx(hullVolume(hull)).epsilon(1e-5));
    CHECK(distance(unit.centerOfMass, hull.centroid) <= 1e-6f * (1.0f + length(hull.centroid)));
}

/// qhull's answer for the same cloud: its vertices, facet planes and volume.
struct QhullAnswer
{
    bool ok = false;
    double volume = 0.0;
    std::vector<Vec3> vertices;
    std::vector<std::array<double, 4>> planes; ///< normal, offset: n . x + offset <= 0 inside
};

QhullAnswer runQhull(std::span<const Vec3> points)
{
    std::vector<coordT> coords;
    for (const Vec3& p : points)
    {
        coords.insert(coords.end(), {p.x, p.y, p.z});
    }
    QhullAnswer answer;
    qhT qhStorage;
    qhT* qh = &qhStorage;
    qh_zero(qh, stderr);
    char options[] = "qhull Qt FA";
    const int exitCode =
        qh_new_qhull(qh, 3, static_cast<int>(points.size()), coords.data(), False, options, nullptr, stderr);
    if (exitCode == 0)
    {
        if (!qh->hasAreaVolume)
        {
            qh_getarea(qh, qh->facet_list);
        }
        answer.ok = true;
        answer.volume = qh->totvol;
        vertexT* vertex = nullptr;
        FORALLvertices
        {
            answer.vertices.push_back(points[static_cast<std::size_t>(qh_pointid(qh, vertex->point))]);
        }
        facetT* facet = nullptr;
        FORALLfacets
        {
            answer.planes.push_back({facet->normal[0], facet->normal[1], facet->normal[2], facet->offset});
        }
    }
    qh_freeqhull(qh, !qh_ALL);
    int curlong = 0, totlong = 0;
    qh_memfreeshort(qh, &curlong, &totlong);
    return answer;
}

/// How far p lies outside qhull's hull (negative inside: minus the distance to its boundary).
double outsideQhull(const QhullAnswer& q, const Vec3& p)
{
    double worst = -std::numeric_limits<double>::infinity();
    for (const auto& h : q.planes)
    {
        worst = std::max(worst, h[0] * p.x + h[1] * p.y + h[2] * p.z + h[3]);
    }
    return worst;
}

double outsideHull(const ConvexHull& hull, const Vec3& p)
{
    double worst = -std::numeric_limits<double>::infinity();
    for (const HullFace& f : hull.faces)
    {
        worst = std::max(worst, signedDistance(f, p));
    }
    return worst;
}

/// Compares our hull with qhull's. Vertex sets must agree except for points within tolerance of the
/// other hull's boundary (there the choice is legitimately ambiguous). Returns true on exact agreement.
bool compareWithQhull(const ConvexHull& hull, std::span<const Vec3> points, double tol)
{
    const QhullAnswer q = runQhull(points);
    REQUIRE(q.ok);
    std::set<std::tuple<float, float, float>> ours, theirs;
    for (const Vec3& v : hull.vertices)
    {
        ours.insert({v.x, v.y, v.z});
    }
    for (const Vec3& v : q.vertices)
    {
        theirs.insert({v.x, v.y, v.z});
    }
    for (const Vec3& v : hull.vertices)
    {
        if (theirs.count({v.x, v.y, v.z}) == 0)
        {
            // Not extreme for qhull: must be within tolerance of its boundary.
            CHECK(outsideQhull(q, v) >= -tol);
        }
    }
    for (const Vec3& v : q.vertices)
    {
        if (ours.count({v.x, v.y, v.z}) == 0)
        {
            // Near our boundary. Inside by up to 5 tolerances: our face planes lie up to 4 above their
            // own vertices (faces are planar within that), and v may be one tolerance below those.
            const double d = outsideHull(hull, v);
            CHECK(d >= -5.0 * tol);
            CHECK(d <= tol);
        }
    }
    const double volume = hullVolume(hull);
    CHECK(std::fabs(volume - q.volume) <= 2.0 * tol * hullArea(hull) + 1e-12 * q.volume);
    return ours == theirs;
}

Vec3 randomUnit(std::mt19937& rng)
{
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (;;)
    {
        const Vec3 v{g(rng), g(rng), g(rng)};
        if (length(v) > 1e-3f)
        {
            return normalize(v);
        }
    }
}

Quat randomRotation(std::mt19937& rng)
{
    std::uniform_real_distribution<float> angle(-kPi, kPi);
    return quatFromAxisAngle(randomUnit(rng), angle(rng));
}

enum class CloudKind
{
    UniformInBox,
    OnSphere,
    WithDuplicates, ///< exact and one-ulp duplicates
    NearCoplanar,   ///< a flat cap of points off its plane by rounding or a millionth, plus apexes
    Lattice,       ///< a random subset of a small integer lattice: many exactly coplanar and collinear points
    Cylinder,      ///< rings of points: coplanar caps, rounding-split side faces
    CubeSurface,   ///< random points on the faces of a rotated cube, corners excluded
    SnappedSphere, ///< sphere points rounded to a coarse grid: exact coplanar quadruples and repeats
    FarAway,       ///< far from the origin, where float spacing sets the tolerance
    DenseBall,     ///< 200 points in a ball: many near-hull points
    BigSphere,     ///< 64-128 points on a sphere: many vertices, some nearly coincident
};

/// A seeded random cloud, of 16-32 points unless the kind says otherwise, scaled and placed at random.
std::vector<Vec3> makeCloud(CloudKind kind, std::mt19937& rng)
{
    std::uniform_int_distribution<int> countDist(16, 32);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_real_distribution<float> logScale(-2.0f, 2.0f);
    const int count = countDist(rng);
    const float scale = std::pow(10.0f, logScale(rng));
    const Vec3 offset = Vec3{unit(rng), unit(rng), unit(rng)} * (10.0f * scale);
    std::vector<Vec3> pts;
    switch (kind)
    {
    case CloudKind::UniformInBox:
        for (int i = 0; i < count; ++i)
        {
            pts.push_back(Vec3{unit(rng), unit(rng), unit(rng)} * scale + offset);
        }
        break;
    case CloudKind::OnSphere:
        for (int i = 0; i < count; ++i)
        {
            pts.push_back(randomUnit(rng) * scale + offset);
        }
        break;
    case CloudKind::WithDuplicates:
    {
        for (int i = 0; i < count / 2; ++i)
        {
            pts.push_back(Vec3{unit(rng), unit(rng), unit(rng)} * scale + offset);
        }
        std::uniform_int_distribution<std::size_t> pick(0, pts.size() - 1);
        for (int i = 0; i < count; ++i)
        {
            Vec3 p = pts[pick(rng)];
            if (i % 3 == 0) // a near-duplicate, one ulp away
            {
                p.y = std::nextafter(p.y, std::numeric_limits<float>::infinity());
            }
            pts.push_back(p);
        }
        break;
    }
    case CloudKind::NearCoplanar:
    {
        // A flat polygonal cap of many nearly coplanar points (off the plane by float rounding or a few
        // millionths of the size), closed by a few apex points; rotated at random.
        const Quat q = randomRotation(rng);
        std::uniform_real_distribution<float> jitter(-1e-6f, 1e-6f);
        for (int i = 0; i < count - 3; ++i)
        {
            const Vec3 local{unit(rng), 0.0f, unit(rng)};
            pts.push_back(rotate(q, local + Vec3{0.0f, jitter(rng), 0.0f}) * scale + offset);
        }
        for (int i = 0; i < 3; ++i)
        {
            const Vec3 local{0.5f * unit(rng), -0.2f - 0.8f * std::fabs(unit(rng)), 0.5f * unit(rng)};
            pts.push_back(rotate(q, local) * scale + offset);
        }
        break;
    }
    case CloudKind::Lattice:
    {
        std::uniform_int_distribution<int> cell(-2, 2);
        while (static_cast<int>(pts.size()) < count)
        {
            pts.push_back(Vec3{static_cast<float>(cell(rng)), static_cast<float>(cell(rng)),
                               static_cast<float>(cell(rng))} *
                              scale +
                          offset);
        }
        break;
    }
    case CloudKind::Cylinder:
    {
        const Quat q = randomRotation(rng);
        const int rings = 2 + count % 3, perRing = count / rings;
        const float phase = unit(rng);
        for (int ring = 0; ring < rings; ++ring)
        {
            const float y = -1.0f + 2.0f * static_cast<float>(ring) / static_cast<float>(rings - 1);
            for (int i = 0; i < perRing; ++i)
            {
                const float a = phase + 2.0f * kPi * static_cast<float>(i) / static_cast<float>(perRing);
                pts.push_back(rotate(q, Vec3{std::cos(a), y, std::sin(a)}) * scale + offset);
            }
        }
        break;
    }
    case CloudKind::CubeSurface:
    {
        const Quat q = randomRotation(rng);
        std::uniform_int_distribution<int> axisDist(0, 2);
        for (int i = 0; i < count; ++i)
        {
            Vec3 p{0.99f * unit(rng), 0.99f * unit(rng), 0.99f * unit(rng)};
            const int axis = axisDist(rng);
            p[axis] = p[axis] < 0.0f ? -1.0f : 1.0f;
            pts.push_back(rotate(q, p) * scale + offset);
        }
        break;
    }
    case CloudKind::SnappedSphere:
        for (int i = 0; i < count; ++i)
        {
            Vec3 p = randomUnit(rng) * 4.0f;
            p = {std::round(p.x), std::round(p.y), std::round(p.z)};
            pts.push_back(p * scale + offset);
        }
        break;
    case CloudKind::FarAway:
        for (int i = 0; i < count; ++i)
        {
            pts.push_back(Vec3{unit(rng), unit(rng), unit(rng)} * scale + offset * 1000.0f);
        }
        break;
    case CloudKind::DenseBall:
        for (int i = 0; i < 200; ++i)
        {
            pts.push_back(randomUnit(rng) * std::cbrt(0.5f + 0.5f * unit(rng)) * scale + offset);
        }
        break;
    case CloudKind::BigSphere:
        for (int i = 0; i < 4 * count; ++i)
        {
            pts.push_back(randomUnit(rng) * scale + offset);
        }
        break;
    }
    return pts;
}

/// Corners of a box plus points strictly inside, on its faces, on its edges and repeated corners.
std::vector<Vec3> boxCloud(const Vec3& h, const Quat& q, const Vec3& offset, std::mt19937& rng,
                           std::vector<Vec3>& corners)
{
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> axisDist(0, 2);
    std::bernoulli_distribution coin(0.5);
    auto place = [&](const Vec3& local) { return rotate(q, local) + offset; };
    corners.clear();
    std::vector<Vec3> local;
    for (int i = 0; i < 8; ++i)
    {
        local.push_back({(i & 1) ? h.x : -h.x, (i & 2) ? h.y : -h.y, (i & 4) ? h.z : -h.z});
    }
    for (int i = 0; i < 20; ++i) // interior
    {
        local.push_back(mulPerElem(Vec3{unit(rng), unit(rng), unit(rng)}, h) * 0.999f);
    }
    for (int i = 0; i < 24; ++i) // on faces
    {
        Vec3 p = mulPerElem(Vec3{unit(rng), unit(rng), unit(rng)}, h);
        const int axis = axisDist(rng);
        p[axis] = coin(rng) ? h[axis] : -h[axis];
        local.push_back(p);
    }
    for (int i = 0; i < 12; ++i) // on edges
    {
        Vec3 p = mulPerElem(Vec3{unit(rng), unit(rng), unit(rng)}, h);
        const int axis = axisDist(rng);
        const int other = (axis + 1) % 3;
        p[axis] = coin(rng) ? h[axis] : -h[axis];
        p[other] = coin(rng) ? h[other] : -h[other];
        local.push_back(p);
    }
    for (int i = 0; i < 4; ++i) // repeated corners
    {
        local.push_back(local[static_cast<std::size_t>(i * 2)]);
    }
    std::shuffle(local.begin(), local.end(), rng);
    std::vector<Vec3> pts;
    for (const Vec3& p : local)
    {
        pts.push_back(place(p));
    }
    for (int i = 0; i < 8; ++i)
    {
        corners.push_back(place({(i & 1) ? h.x : -h.x, (i & 2) ? h.y : -h.y, (i & 4) ? h.z : -h.z}));
    }
    return pts;
}

void requireBox(const HullResult& r, std::span<const Vec3> points, const std::vector<Vec3>& corners,
                const Vec3& h)
{
    REQUIRE(r.ok());
    const ConvexHull& hull = r.hull;
    REQUIRE(hull.vertices.size() == 8);
    REQUIRE(hull.faces.size() == 6);
    REQUIRE(hull.edges.size() == 12);
    for (const HullFace& f : hull.faces)
    {
        CHECK(f.indexCount == 4);
    }
    std::set<std::tuple<float, float, float>> expected, got;
    for (const Vec3& c : corners)
    {
        expected.insert({c.x, c.y, c.z});
    }
    for (const Vec3& v : hull.vertices)
    {
        got.insert({v.x, v.y, v.z});
    }
    CHECK(got == expected);
    checkHullInvariants(hull, points, r.toleranceMeters);
    // The box spanned by the corners as stored (placing them rounds them a little).
    const D3 side0 = sub(d3(corners[1]), d3(corners[0])), side1 = sub(d3(corners[2]), d3(corners[0])),
             side2 = sub(d3(corners[4]), d3(corners[0]));
    const double boxVolume = std::fabs(dotD(side0, crossD(side1, side2)));
    CHECK(hullVolume(hull) == Approx(boxVolume).epsilon(1e-5));
    CHECK(boxVolume == Approx(8.0 * double{h.x} * double{h.y} * double{h.z}).epsilon(1e-4));
}

} // namespace

TEST_CASE("hull of a cube's corners with interior, face, edge and repeated points is exactly the cube",
          "[hull]")
{
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> size(0.05f, 5.0f);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    for (int trial = 0; trial < 50; ++trial)
    {
        const Vec3 h{size(rng), size(rng), size(rng)};
        // Axis-aligned (points exactly on the face planes), half of them far from the origin.
        const Vec3 offset = trial % 2 == 0 ? Vec3{} : Vec3{unit(rng), unit(rng), unit(rng)} * 100.0f;
        std::vector<Vec3> corners;
        const std::vector<Vec3> pts = boxCloud(h, Quat::identity(), offset, rng, corners);
        const HullResult r = buildConvexHull(pts);
        requireBox(r, pts, corners, h);
        if (r.ok() && trial % 2 == 0)
        {
            // Axis-aligned about the origin: normals are exact axes and offsets exact half extents.
            for (const HullFace& f : r.hull.faces)
            {
                const int axis = largestAxis(f.normal);
                CHECK(std::fabs(f.normal[axis]) == 1.0f);
                CHECK(f.offset == h[axis]);
            }
            CHECK(length(r.hull.centroid) <= 1e-6f * length(h));
        }
    }
}

TEST_CASE("hull of a rotated box with points on its faces merges the rounding-split faces into 6 quads",
          "[hull]")
{
    std::mt19937 rng(99);
    std::uniform_real_distribution<float> size(0.05f, 5.0f);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    for (int trial = 0; trial < 50; ++trial)
    {
        const Vec3 h{size(rng), size(rng), size(rng)};
        const Quat q = randomRotation(rng);
        const Vec3 offset = Vec3{unit(rng), unit(rng), unit(rng)} * 10.0f;
        std::vector<Vec3> corners;
        const std::vector<Vec3> pts = boxCloud(h, q, offset, rng, corners);
        const HullResult r = buildConvexHull(pts);
        requireBox(r, pts, corners, h);
        if (r.ok())
        {
            CHECK(distance(r.hull.centroid, offset) <= 1e-5f * (length(offset) + length(h)));
        }
    }
}

TEST_CASE("makeBoxHull is the exact box", "[hull]")
{
    const Vec3 h{0.5f, 1.25f, 3.0f};
    const ConvexHull hull = makeBoxHull(h);
    REQUIRE(hull.vertices.size() == 8);
    REQUIRE(hull.faces.size() == 6);
    REQUIRE(hull.edges.size() == 12);
    std::vector<Vec3> corners = hull.vertices;
    checkHullInvariants(hull, corners, 1e-6);
    for (const HullFace& f : hull.faces)
    {
        const int axis = largestAxis(f.normal);
        CHECK(std::fabs(f.normal[axis]) == 1.0f);
        CHECK(f.offset == h[axis]);
    }
    CHECK(hull.centroid == Vec3{});
    // The documented numbering (shared with the SAT's box tables): faces +x, -x, +y, -y, +z, -z; edge
    // 4k + c runs along axis k.
    for (int k = 0; k < 3; ++k)
    {
        CHECK(hull.faces[static_cast<std::size_t>(2 * k)].normal[k] == 1.0f);
        CHECK(hull.faces[static_cast<std::size_t>(2 * k + 1)].normal[k] == -1.0f);
        for (int c = 0; c < 4; ++c)
        {
            const HullEdge& e = hull.edges[static_cast<std::size_t>(4 * k + c)];
            CHECK((e.v0 ^ e.v1) == (1 << k));
        }
    }
    CHECK(hullVolume(hull) == Approx(8.0 * 0.5 * 1.25 * 3.0).epsilon(1e-12));

    // Same as building it from its corners, face for face (up to order).
    const HullResult built = buildConvexHull(corners);
    REQUIRE(built.ok());
    CHECK(built.hull.vertices == hull.vertices); // both keep input order
    std::set<std::tuple<float, float, float, float>> a, b;
    for (const HullFace& f : hull.faces)
    {
        a.insert({f.normal.x, f.normal.y, f.normal.z, f.offset});
    }
    for (const HullFace& f : built.hull.faces)
    {
        b.insert({f.normal.x, f.normal.y, f.normal.z, f.offset});
    }
    CHECK(a == b);
}

TEST_CASE("hulls of random clouds satisfy every invariant and agree with qhull", "[hull]")
{
    struct Kind
    {
        CloudKind kind;
        const char* name;
        bool generic; ///< no ambiguous points by design: vertex sets should match qhull's exactly
    };
    const std::array<Kind, 11> kinds{{{CloudKind::UniformInBox, "uniform in box", true},
                                      {CloudKind::OnSphere, "on sphere", true},
                                      {CloudKind::WithDuplicates, "with duplicates", false},
                                      {CloudKind::NearCoplanar, "near coplanar", false},
                                      {CloudKind::Lattice, "lattice", false},
                                      {CloudKind::Cylinder, "cylinder", false},
                                      {CloudKind::CubeSurface, "cube surface", false},
                                      {CloudKind::SnappedSphere, "snapped sphere", false},
                                      {CloudKind::FarAway, "far away", false},
                                      {CloudKind::DenseBall, "dense ball", false},
                                      {CloudKind::BigSphere, "big sphere", false}}};
    // POLYTOPE_HULL_STRESS=n runs n clouds of each kind instead (tens of thousands pass).
    const char* stress = std::getenv("POLYTOPE_HULL_STRESS");
    const int clouds = stress ? std::max(1, std::atoi(stress)) : 60;
    for (std::size_t k = 0; k < kinds.size(); ++k)
    {
        std::mt19937 rng(static_cast<unsigned>(2024 + k));
        int exact = 0, retried = 0;
        for (int trial = 0; trial < clouds; ++trial)
        {
            const std::vector<Vec3> pts = makeCloud(kinds[k].kind, rng);
            INFO(kinds[k].name << " cloud " << trial);
            const HullResult r = buildConvexHull(pts);
            INFO(r.message);
            REQUIRE(r.ok());
            REQUIRE(r.toleranceMeters > 0.0f);
            // The base tolerance is 1e-5 of the largest bounding-box side (or a few float ulps of the
            // largest coordinate); a larger one means the builder had to retry.
            float maxAbs = 0.0f, extent = 0.0f;
            for (int axis = 0; axis < 3; ++axis)
            {
                float lo = pts[0][axis], hi = pts[0][axis];
                for (const Vec3& p : pts)
                {
                    lo = std::min(lo, p[axis]);
                    hi = std::max(hi, p[axis]);
                    maxAbs = std::max(maxAbs, std::fabs(p[axis]));
                }
                extent = std::max(extent, hi - lo);
            }
            const double base = 1e-5 * extent + 4.0 * std::numeric_limits<float>::epsilon() * maxAbs;
            retried += r.toleranceMeters > 2.0 * base ? 1 : 0;
            checkHullInvariants(r.hull, pts, r.toleranceMeters);
            exact += compareWithQhull(r.hull, pts, r.toleranceMeters) ? 1 : 0;
        }
        INFO(kinds[k].name << ": " << exact << " of " << clouds << " vertex sets identical to qhull's, "
                           << retried << " needed a larger tolerance");
        if (kinds[k].generic)
        {
            // A point within tolerance of the others' hull is rare in generic clouds.
            CHECK(exact >= clouds * 95 / 100);
        }
        CHECK(retried <= clouds / 50);
    }
}

TEST_CASE("polyhedra with non-triangular faces come out with exactly their faces", "[hull]")
{
    const float phi = (1.0f + std::sqrt(5.0f)) / 2.0f;
    struct Solid
    {
        const char* name;
        std::vector<Vec3> vertices;
        std::size_t faces, edges, sidesPerFace; // sidesPerFace 0: mixed
    };
    std::vector<Solid> solids;
    {
        Solid dodecahedron{"dodecahedron", {}, 12, 30, 5};
        for (int i = 0; i < 8; ++i)
        {
            dodecahedron.vertices.push_back(
                {(i & 1) ? 1.0f : -1.0f, (i & 2) ? 1.0f : -1.0f, (i & 4) ? 1.0f : -1.0f});
        }
        for (int i = 0; i < 4; ++i)
        {
            const float a = (i & 1) ? 1.0f / phi : -1.0f / phi, b = (i & 2) ? phi : -phi;
            dodecahedron.vertices.push_back({0.0f, a, b});
            dodecahedron.vertices.push_back({a, b, 0.0f});
            dodecahedron.vertices.push_back({b, 0.0f, a});
        }
        solids.push_back(dodecahedron);
    }
    {
        Solid icosahedron{"icosahedron", {}, 20, 30, 3};
        for (int i = 0; i < 4; ++i)
        {
            const float a = (i & 1) ? 1.0f : -1.0f, b = (i & 2) ? phi : -phi;
            icosahedron.vertices.push_back({0.0f, a, b});
            icosahedron.vertices.push_back({a, b, 0.0f});
            icosahedron.vertices.push_back({b, 0.0f, a});
        }
        solids.push_back(icosahedron);
    }
    {
        Solid cuboctahedron{"cuboctahedron", {}, 14, 24, 0};
        for (int i = 0; i < 4; ++i)
        {
            const float a = (i & 1) ? 1.0f : -1.0f, b = (i & 2) ? 1.0f : -1.0f;
            cuboctahedron.vertices.push_back({a, b, 0.0f});
            cuboctahedron.vertices.push_back({a, 0.0f, b});
            cuboctahedron.vertices.push_back({0.0f, a, b});
        }
        solids.push_back(cuboctahedron);
    }
    {
        Solid cylinder{"64-sided prism", {}, 66, 192, 0};
        for (int i = 0; i < 64; ++i)
        {
            const float angle = 2.0f * kPi * static_cast<float>(i) / 64.0f;
            cylinder.vertices.push_back({std::cos(angle), -0.7f, std::sin(angle)});
            cylinder.vertices.push_back({std::cos(angle), 0.7f, std::sin(angle)});
        }
        solids.push_back(cylinder);
    }

    std::mt19937 rng(77);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    for (const Solid& solid : solids)
    {
        for (int trial = 0; trial < 10; ++trial)
        {
            INFO(solid.name << " trial " << trial);
            // Rotated (so coplanar vertices are coplanar only up to rounding), moved, and with interior
            // points and repeated vertices mixed in.
            const Quat q = trial == 0 ? Quat::identity() : randomRotation(rng);
            const Vec3 t = Vec3{unit(rng), unit(rng), unit(rng)} * 5.0f;
            std::vector<Vec3> pts, corners;
            for (const Vec3& v : solid.vertices)
            {
                corners.push_back(rotate(q, v) + t);
            }
            pts = corners;
            for (int i = 0; i < 10; ++i)
            {
                pts.push_back(rotate(q, Vec3{unit(rng), unit(rng), unit(rng)} * 0.5f) + t);
                pts.push_back(corners[static_cast<std::size_t>(i) % corners.size()]);
            }
            std::shuffle(pts.begin(), pts.end(), rng);
            const HullResult r = buildConvexHull(pts);
            REQUIRE(r.ok());
            CHECK(r.hull.vertices.size() == solid.vertices.size());
            CHECK(r.hull.faces.size() == solid.faces);
            CHECK(r.hull.edges.size() == solid.edges);
            for (const HullFace& f : r.hull.faces)
            {
                if (solid.sidesPerFace != 0)
                {
                    CHECK(f.indexCount == solid.sidesPerFace);
                }
            }
            checkHullInvariants(r.hull, pts, r.toleranceMeters);
            CHECK(distance(r.hull.centroid, t) < 1e-5f * length(t));
        }
    }
}

TEST_CASE("points on a sphere: every point is a hull vertex up to the vertex cap", "[hull]")
{
    std::mt19937 rng(7);
    for (int count : {64, 128, 255})
    {
        // A Fibonacci sphere: well-separated points, all extreme.
        std::vector<Vec3> pts;
        const float golden = kPi * (3.0f - std::sqrt(5.0f));
        for (int i = 0; i < count; ++i)
        {
            const float y = 1.0f - 2.0f * (static_cast<float>(i) + 0.5f) / static_cast<float>(count);
            const float r = std::sqrt(1.0f - y * y);
            pts.push_back({r * std::cos(golden * static_cast<float>(i)), y,
                           r * std::sin(golden * static_cast<float>(i))});
        }
        std::shuffle(pts.begin(), pts.end(), rng);
        const HullResult r = buildConvexHull(pts);
        REQUIRE(r.ok());
        CHECK(r.hull.vertices.size() == static_cast<std::size_t>(count));
        checkHullInvariants(r.hull, pts, r.toleranceMeters);
        compareWithQhull(r.hull, pts, r.toleranceMeters);
    }
}

TEST_CASE("degenerate input is refused with the right error", "[hull]")
{
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    auto randomPoint = [&] { return Vec3{unit(rng), unit(rng), unit(rng)}; };

    SECTION("fewer than 4 points")
    {
        std::vector<Vec3> pts;
        for (int n = 0; n < 4; ++n)
        {
            const HullResult r = buildConvexHull(pts);
            CHECK(r.error == HullError::TooFewPoints);
            CHECK_FALSE(r.ok());
            CHECK_FALSE(r.message.empty());
            CHECK(r.hull.vertices.empty());
            pts.push_back(randomPoint());
        }
    }
    SECTION("NaN or infinity anywhere")
    {
        for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()})
        {
            for (int where = 0; where < 3; ++where)
            {
                std::vector<Vec3> pts;
                for (int i = 0; i < 12; ++i)
                {
                    pts.push_back(randomPoint());
                }
                pts[7][where] = bad;
                const HullResult r = buildConvexHull(pts);
                CHECK(r.error == HullError::NonFinitePoint);
                CHECK(r.message.find('7') != std::string::npos);
            }
        }
    }
    SECTION("coincident points")
    {
        const Vec3 p = randomPoint() * 50.0f;
        std::vector<Vec3> pts(10, p);
        CHECK(buildConvexHull(pts).error == HullError::Degenerate);
        pts[3].x = std::nextafter(p.x, 1e9f); // one ulp apart: still a point
        CHECK(buildConvexHull(pts).error == HullError::Degenerate);
        CHECK(buildConvexHull(std::vector<Vec3>(6, Vec3{})).error == HullError::Degenerate);
    }
    SECTION("collinear points")
    {
        for (int trial = 0; trial < 20; ++trial)
        {
            const Vec3 origin = randomPoint() * 10.0f, dir = randomUnit(rng);
            std::vector<Vec3> pts;
            for (int i = 0; i < 16; ++i)
            {
                pts.push_back(origin + dir * (3.0f * unit(rng)));
            }
            const HullResult r = buildConvexHull(pts);
            CHECK(r.error == HullError::Degenerate);
            CHECK(r.message.find("collinear") != std::string::npos);
        }
    }
    SECTION("coplanar and nearly coplanar points")
    {
        for (int trial = 0; trial < 40; ++trial)
        {
            const Quat q = randomRotation(rng);
            const Vec3 origin = randomPoint() * 10.0f;
            const float thickness = trial % 2 == 0 ? 0.0f : 1e-5f; // 1e-5 of a cloud about 2 across
            std::vector<Vec3> pts;
            for (int i = 0; i < 20; ++i)
            {
                pts.push_back(origin + rotate(q, Vec3{unit(rng), thickness * unit(rng), unit(rng)}));
            }
            const HullResult r = buildConvexHull(pts);
            CHECK(r.error == HullError::Degenerate);
            CHECK(r.message.find("coplanar") != std::string::npos);
        }
    }
    SECTION("a thin but solid slab is accepted")
    {
        const Quat q = randomRotation(rng);
        std::vector<Vec3> pts;
        for (int i = 0; i < 20; ++i)
        {
            pts.push_back(rotate(q, Vec3{unit(rng), (i % 2 == 0 ? 0.01f : -0.01f), unit(rng)}));
        }
        const HullResult r = buildConvexHull(pts);
        REQUIRE(r.ok());
        checkHullInvariants(r.hull, pts, r.toleranceMeters);
    }
    SECTION("more vertices than the cap")
    {
        std::vector<Vec3> pts;
        for (int i = 0; i < 600; ++i)
        {
            pts.push_back(randomUnit(rng));
        }
        const HullResult r = buildConvexHull(pts);
        CHECK(r.error == HullError::TooManyVertices);
        CHECK(r.hull.vertices.empty());
    }
}

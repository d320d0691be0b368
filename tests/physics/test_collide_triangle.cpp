// Convex-triangle manifolds (collide_triangle.h) against independent answers: closed forms for shapes
// resting on a triangle, double-precision closest-point searches for spheres and capsules, the hull
// narrowphase (collideShapes) against a thin prism standing in for the triangle, sliding across seams
// between coplanar triangles (internal edges), a convex fold (an active edge), and the reduction over a
// tessellated floor.
#include "polytope/physics/collide_triangle.h"

#include "polytope/physics/dvec3.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/hull.h"
#include "polytope/physics/narrowphase.h"

#include "convex_minimum.h"
#include "manifold_checks.h"
#include "random_shapes.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <span>
#include <utility>
#include <vector>

using namespace polytope::physics;
using namespace physics_test;

namespace
{

constexpr float kDegree = kPi / 180.0f;

/// The manifold of `shape` at world pose `body` against `triangle` given in the world frame (the mesh frame
/// is the world's), with the normal and points brought back to the world frame.
ContactManifold collideInWorld(const Shape& shape, std::span<const ConvexHull> hulls, const Transform& body,
                               const Triangle& triangle, std::uint8_t activeEdges, float margin)
{
    ContactManifold m = collideConvexTriangle(shape, hulls, relativeTransform(body, Transform::identity()),
                                              triangle, activeEdges, margin);
    m.normal = rotate(body.q, m.normal);
    for (int i = 0; i < m.pointCount; ++i)
    {
        m.points[i].pointA = transformPoint(body, m.points[i].pointA);
        m.points[i].pointB = transformPoint(body, m.points[i].pointB);
    }
    return m;
}

float angleBetween(const Vec3& a, const Vec3& b)
{
    return std::atan2(length(cross(a, b)), dot(a, b));
}

/// Requires `m` to hold four points whose pointA are the four bottom (-y) corners of a box of half extents
/// `half` at `body`, one each.
void requireBottomCorners(const ContactManifold& m, const Transform& body, const Vec3& half)
{
    REQUIRE(m.pointCount == 4);
    std::set<int> corners;
    for (int i = 0; i < 4; ++i)
    {
        const Vec3 local = inverseTransformPoint(body, m.points[i].pointA);
        REQUIRE(std::fabs(std::fabs(local.x) - half.x) < 1e-5f);
        REQUIRE(std::fabs(local.y + half.y) < 1e-5f);
        REQUIRE(std::fabs(std::fabs(local.z) - half.z) < 1e-5f);
        corners.insert((local.x > 0.0f ? 1 : 0) + (local.z > 0.0f ? 2 : 0));
    }
    REQUIRE(corners.size() == 4);
}

/// A big triangle in the plane y = 0, front face up, containing the square |x|, |z| <= 4.
const Triangle kFloor{{-10.0f, 0.0f, 5.0f}, {10.0f, 0.0f, 5.0f}, {0.0f, 0.0f, -10.0f}};
/// Metres: how exact a separation against kFloor can be. Its vertices lie up to 13 m from a body, and in
/// the body's frame (rotated, in float) they and the face normal carry relative errors of a few 1e-7, which
/// the 13 m lever turns into a few micrometres of height.
constexpr double kFloorRounding = 6e-6;

// ---- Double-precision oracles for rounded shapes ---------------------------------------------------------

/// Closest point of the triangle to p, in double: the foot on the plane when inside, else the nearest
/// point of the three edges.
DVec3 closestOnTriangleD(const DVec3& p, const DVec3 (&v)[3])
{
    const DVec3 n = cross(v[1] - v[0], v[2] - v[0]);
    const DVec3 foot = p - n * (dot(p - v[0], n) / dot(n, n));
    bool inside = true;
    for (int j = 0; j < 3; ++j)
    {
        const DVec3 edge = v[(j + 1) % 3] - v[j];
        inside = inside && dot(cross(edge, foot - v[j]), n) >= 0.0;
    }
    if (inside)
    {
        return foot;
    }
    DVec3 best = v[0];
    double bestD2 = std::numeric_limits<double>::infinity();
    for (int j = 0; j < 3; ++j)
    {
        const DVec3 edge = v[(j + 1) % 3] - v[j];
        const double s = std::clamp(dot(p - v[j], edge) / dot(edge, edge), 0.0, 1.0);
        const DVec3 q = v[j] + edge * s;
        const double d2 = dot(p - q, p - q);
        if (d2 < bestD2)
        {
            bestD2 = d2;
            best = q;
        }
    }
    return best;
}

/// Distance from segment [p0, p1] to the triangle, by golden-section search over the (convex) distance of
/// the segment's points, and the closest segment point.
double segmentTriangleDistanceD(const DVec3& p0, const DVec3& p1, const DVec3 (&v)[3],
                                DVec3& closestOnSegment)
{
    const auto f = [&](double s)
    {
        const DVec3 p = p0 + (p1 - p0) * s;
        return length(p - closestOnTriangleD(p, v));
    };
    const ConvexMinimum inner = minimiseConvex(f, 0.0, 1.0, 200);
    double s = inner.x;
    double best = inner.value;
    for (const double end : {0.0, 1.0})
    {
        if (f(end) <= best)
        {
            best = f(end);
            s = end;
        }
    }
    closestOnSegment = p0 + (p1 - p0) * s;
    return best;
}

Triangle randomTriangle(std::mt19937& rng)
{
    for (;;)
    {
        Triangle t{{uniform(rng, -1.5f, 1.5f), uniform(rng, -0.3f, 0.3f), uniform(rng, -1.5f, 1.5f)},
                   {uniform(rng, -1.5f, 1.5f), uniform(rng, -0.3f, 0.3f), uniform(rng, -1.5f, 1.5f)},
                   {uniform(rng, -1.5f, 1.5f), uniform(rng, -0.3f, 0.3f), uniform(rng, -1.5f, 1.5f)}};
        const Vec3 n = cross(t.b - t.a, t.c - t.a);
        if (length(n) < 0.5f)
        {
            continue; // keep triangles away from slivers: the oracles' thin prisms need some area
        }
        if (n.y < 0.0f)
        {
            std::swap(t.b, t.c);
        }
        return t;
    }
}

Vec3 frontNormal(const Triangle& t)
{
    return normalize(cross(t.b - t.a, t.c - t.a));
}

/// The triangle extruded `thickness` metres behind its face: a thin hull whose top face is the triangle.
ConvexHull thinPrism(const Triangle& t, float thickness)
{
    const Vec3 down = frontNormal(t) * -thickness;
    const Vec3 points[6] = {t.a, t.b, t.c, t.a + down, t.b + down, t.c + down};
    const HullResult built = buildConvexHull(points);
    REQUIRE(built.ok());
    return built.hull;
}

/// Height above the triangle's plane of the lowest point of a convex polyhedron (a hull placed at `body`)
/// over the triangle (inside the prism of the triangle's side planes), in double and by brute force: the
/// minimum of a linear function over the polyhedron cut by the prism is at a vertex of the cut, which is a
/// hull vertex inside the prism, a hull edge crossing a side plane, or the entry of a vertical line through
/// a triangle corner. +infinity when no part of the polyhedron lies over the triangle.
double lowestHeightOverTriangle(const ConvexHull& hull, const Transform& body, const Triangle& tri)
{
    const DVec3 t[3] = {toDouble(tri.a), toDouble(tri.b), toDouble(tri.c)};
    DVec3 n = cross(t[1] - t[0], t[2] - t[0]);
    n = n * (1.0 / length(n));
    const auto height = [&](const DVec3& x) { return dot(x - t[0], n); };
    // Side j: <= 0 inside.
    const auto side = [&](int j, const DVec3& x) { return dot(cross(t[(j + 1) % 3] - t[j], n), x - t[j]); };
    const auto inside = [&](const DVec3& x)
    {
        for (int j = 0; j < 3; ++j)
        {
            if (side(j, x) > 1e-9)
            {
                return false;
            }
        }
        return true;
    };
    // The hull in the world, in double (rotations of exact float data).
    std::vector<DVec3> v;
    for (const Vec3& p : hull.vertices)
    {
        v.push_back(toDouble(transformPoint(body, p)));
    }
    double lowest = std::numeric_limits<double>::infinity();
    for (const DVec3& x : v)
    {
        if (inside(x))
        {
            lowest = std::min(lowest, height(x));
        }
    }
    for (const HullEdge& e : hull.edges)
    {
        for (int j = 0; j < 3; ++j)
        {
            const double s0 = side(j, v[e.v0]);
            const double s1 = side(j, v[e.v1]);
            if ((s0 < 0.0) != (s1 < 0.0))
            {
                const DVec3 x = v[e.v0] + (v[e.v1] - v[e.v0]) * (s0 / (s0 - s1));
                if (inside(x))
                {
                    lowest = std::min(lowest, height(x));
                }
            }
        }
    }
    for (int i = 0; i < 3; ++i)
    {
        double from = -std::numeric_limits<double>::infinity();
        double to = std::numeric_limits<double>::infinity();
        for (const HullFace& f : hull.faces)
        {
            const DVec3 m = toDouble(rotate(body.q, f.normal));
            const double offset = dot(m, v[hull.faceVertices[f.firstIndex]]);
            const double slope = dot(m, n);
            const double room = offset - dot(m, t[i]);
            if (slope < 0.0)
            {
                from = std::max(from, room / slope);
            }
            else if (slope > 0.0)
            {
                to = std::min(to, room / slope);
            }
            else if (room < 0.0)
            {
                from = std::numeric_limits<double>::infinity();
            }
        }
        if (from <= to)
        {
            lowest = std::min(lowest, from);
        }
    }
    return lowest;
}

} // namespace

// ---- Closed forms: shapes resting on a triangle ---------------------------------------------------------

TEST_CASE("a sphere resting on a triangle: one point at the closed form", "[triangle]")
{
    std::mt19937 rng(1);
    const float margin = 0.02f;
    for (int trial = 0; trial < 200; ++trial)
    {
        const float radius = uniform(rng, 0.1f, 1.0f);
        const float gap = uniform(rng, -0.1f, 0.02f);
        const Vec3 centre{uniform(rng, -3.0f, 3.0f), radius + gap, uniform(rng, -3.0f, 3.0f)};
        const Transform body{centre, randomRotation(rng)};
        const ContactManifold m =
            collideInWorld(Shape::makeSphere(radius), {}, body, kFloor, kAllTriangleEdgesActive, margin);
        INFO("trial " << trial);
        requireConsistentManifold(m, margin, 2e-5);
        REQUIRE(m.pointCount == 1);
        REQUIRE(distance(m.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-6f);
        REQUIRE(m.points[0].separation == Approx(gap).margin(kFloorRounding));
        REQUIRE(distance(m.points[0].pointA, centre - Vec3{0.0f, radius, 0.0f}) < 1e-5f);
        REQUIRE(distance(m.points[0].pointB, Vec3{centre.x, 0.0f, centre.z}) < 1e-5f);
    }
}

TEST_CASE("a capsule lying on a triangle: two points at the ends of its core", "[triangle]")
{
    std::mt19937 rng(2);
    const float margin = 0.02f;
    for (int trial = 0; trial < 200; ++trial)
    {
        const CapsuleShape capsule{uniform(rng, 0.1f, 1.0f), uniform(rng, 0.05f, 0.5f)};
        const float gap = uniform(rng, -0.04f, 0.02f);
        const float yaw = uniform(rng, -kPi, kPi);
        // The capsule's axis (local y) laid along the floor, turned by `yaw` about the vertical.
        const Quat q =
            quatFromAxisAngle({0.0f, 1.0f, 0.0f}, yaw) * quatFromAxisAngle({0.0f, 0.0f, 1.0f}, kPi / 2);
        const Vec3 centre{uniform(rng, -2.0f, 2.0f), capsule.radius + gap, uniform(rng, -2.0f, 2.0f)};
        const Transform body{centre, q};
        const ContactManifold m = collideInWorld(Shape::makeCapsule(capsule.halfHeight, capsule.radius), {},
                                                 body, kFloor, kAllTriangleEdgesActive, margin);
        INFO("trial " << trial);
        requireConsistentManifold(m, margin, 2e-5);
        REQUIRE(m.pointCount == 2);
        REQUIRE(distance(m.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-6f);
        for (int i = 0; i < 2; ++i)
        {
            const Vec3 end =
                transformPoint(body, Vec3{0.0f, i == 0 ? -capsule.halfHeight : capsule.halfHeight, 0.0f});
            REQUIRE(m.points[i].separation == Approx(gap).margin(kFloorRounding));
            REQUIRE(distance(m.points[i].pointB, Vec3{end.x, 0.0f, end.z}) < 2e-5f);
            REQUIRE(distance(m.points[i].pointA, end - Vec3{0.0f, capsule.radius, 0.0f}) < 2e-5f);
        }
    }
}

TEST_CASE("a box lying flat on a triangle: its four bottom corners, or the clipped face", "[triangle]")
{
    std::mt19937 rng(3);
    const float margin = 0.02f;
    std::vector<ConvexHull> hulls;
    for (int trial = 0; trial < 200; ++trial)
    {
        const Vec3 half{uniform(rng, 0.1f, 1.0f), uniform(rng, 0.1f, 1.0f), uniform(rng, 0.1f, 1.0f)};
        const float gap = uniform(rng, -0.05f, 0.02f);
        const Quat q = quatFromAxisAngle({0.0f, 1.0f, 0.0f}, uniform(rng, -kPi, kPi));
        const Transform body{Vec3{uniform(rng, -2.5f, 2.5f), half.y + gap, uniform(rng, -2.5f, 2.5f)}, q};
        hulls.assign(1, makeBoxHull(half));
        Shape hullShape;
        hullShape.type = ShapeType::Hull;
        hullShape.hullIndex = 0;
        for (const Shape& shape : {Shape::makeBox(half), hullShape})
        {
            const ContactManifold m =
                collideInWorld(shape, hulls, body, kFloor, kAllTriangleEdgesActive, margin);
            INFO("trial " << trial << " type " << int(shape.type));
            requireConsistentManifold(m, margin, 2e-5);
            requireBottomCorners(m, body, half);
            REQUIRE(distance(m.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-6f);
            for (int i = 0; i < 4; ++i)
            {
                REQUIRE(m.points[i].separation == Approx(gap).margin(kFloorRounding));
                REQUIRE(std::fabs(m.points[i].pointB.y) < 1e-6f);
            }
        }
    }

    // Over the triangle's corner: the face clipped to the triangle, at most four points, all over both.
    const Triangle small{{0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 1.0f}, {1.0f, 0.0f, 0.0f}};
    REQUIRE(frontNormal(small).y > 0.99f);
    for (int trial = 0; trial < 200; ++trial)
    {
        const Vec3 half{0.4f, 0.2f, 0.3f};
        const float gap = uniform(rng, -0.05f, 0.0f);
        const Transform body{Vec3{uniform(rng, -0.2f, 0.5f), half.y + gap, uniform(rng, -0.2f, 0.5f)},
                             quatFromAxisAngle({0.0f, 1.0f, 0.0f}, uniform(rng, -kPi, kPi))};
        const ContactManifold m =
            collideInWorld(Shape::makeBox(half), {}, body, small, kAllTriangleEdgesActive, margin);
        INFO("trial " << trial);
        requireConsistentManifold(m, margin, 2e-5);
        REQUIRE(m.pointCount >= 1);
        REQUIRE(distance(m.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-6f);
        for (int i = 0; i < m.pointCount; ++i)
        {
            const Vec3 p = m.points[i].pointB;
            REQUIRE(m.points[i].separation == Approx(gap).margin(kFloorRounding));
            REQUIRE(p.x >= -1e-5f);
            REQUIRE(p.z >= -1e-5f);
            REQUIRE(p.x + p.z <= 1.0f + 1e-5f);
            const Vec3 local = inverseTransformPoint(body, m.points[i].pointA);
            REQUIRE(std::fabs(local.x) <= half.x + 1e-5f);
            REQUIRE(std::fabs(local.z) <= half.z + 1e-5f);
        }
    }
}

// ---- Oracles --------------------------------------------------------------------------------------------

TEST_CASE("spheres and capsules near a triangle: separation and normal match a double-precision search",
          "[triangle]")
{
    // Every edge active, shapes with their centre in front: the result is the exact distance between the
    // core and the triangle, minus the radius, along the closest-points direction.
    std::mt19937 rng(4);
    const float margin = 0.1f;
    int contacts = 0;
    for (int trial = 0; trial < 20000; ++trial)
    {
        const Triangle tri = randomTriangle(rng);
        const bool sphere = trial % 2 == 0;
        const float radius = uniform(rng, 0.05f, 0.6f);
        const float halfHeight = sphere ? 0.0f : uniform(rng, 0.05f, 0.8f);
        const Shape shape = sphere ? Shape::makeSphere(radius) : Shape::makeCapsule(halfHeight, radius);
        // Near a random point of the triangle's plane (inside or up to 0.6 m outside), in front.
        const float u = uniform(rng, -0.4f, 1.2f);
        const float v = uniform(rng, -0.4f, 1.2f - u);
        const Vec3 onPlane = tri.a + (tri.b - tri.a) * u + (tri.c - tri.a) * v;
        const Vec3 n = frontNormal(tri);
        const Vec3 centre = onPlane + n * uniform(rng, 0.0f, radius + halfHeight + 0.3f);
        const Transform body{centre, randomRotation(rng)};
        const ContactManifold m = collideInWorld(shape, {}, body, tri, kAllTriangleEdgesActive, margin);
        INFO("trial " << trial);
        requireConsistentManifold(m, margin, 2e-5);

        const DVec3 v3[3] = {toDouble(tri.a), toDouble(tri.b), toDouble(tri.c)};
        const DVec3 p0 = toDouble(transformPoint(body, Vec3{0.0f, -halfHeight, 0.0f}));
        const DVec3 p1 = toDouble(transformPoint(body, Vec3{0.0f, halfHeight, 0.0f}));
        DVec3 core{};
        const double coreDistance = segmentTriangleDistanceD(p0, p1, v3, core);
        const double expected = coreDistance - radius;
        if (coreDistance < 1e-3)
        {
            continue; // the core meets the triangle: no closest-point direction (tested elsewhere)
        }
        // With every edge inactive (a triangle inside a flat region), only the face normal remains, and the
        // separation stays the true distance: the same deepest point, pushed along the face normal.
        const ContactManifold flat = collideInWorld(shape, {}, body, tri, 0, margin);
        requireConsistentManifold(flat, margin, 2e-5);
        REQUIRE((flat.pointCount > 0) == (m.pointCount > 0));
        if (flat.pointCount > 0)
        {
            REQUIRE(angleBetween(-flat.normal, frontNormal(tri)) < 1e-3f * kDegree);
            REQUIRE(deepestSeparation(flat) == Approx(deepestSeparation(m)).margin(2e-6));
        }
        // A capsule lying along the face gets two points; the deepest is the closest-points answer.
        if (std::fabs(expected - margin) > 1e-4)
        {
            REQUIRE((m.pointCount > 0) == (expected <= margin));
        }
        if (m.pointCount == 0)
        {
            continue;
        }
        ++contacts;
        INFO("points " << m.pointCount << " sphere " << sphere << " normal " << m.normal.x << " "
                       << m.normal.y << " " << m.normal.z);
        REQUIRE(deepestSeparation(m) == Approx(expected).margin(2e-5));
        const DVec3 q = closestOnTriangleD(core, v3);
        const DVec3 toward = q - core; // from the shape to the triangle
        const Vec3 expectedNormal = normalize(Vec3{float(toward.x), float(toward.y), float(toward.z)});
        // Lying capsules (within about 3 degrees of the plane) take the face normal within about 8 degrees
        // of the closest-points direction.
        const bool lying = !sphere && std::fabs(dot(rotate(body.q, Vec3{0.0f, 1.0f, 0.0f}), n)) <= 0.05f;
        REQUIRE(angleBetween(m.normal, expectedNormal) < (lying ? 8.2f * kDegree : 1e-3f));
    }
    REQUIRE(contacts > 1000);
}

TEST_CASE("boxes and hulls near a triangle agree with the hull narrowphase against a thin prism",
          "[triangle]")
{
    // The prism is the triangle extruded 2 cm behind its face: seen from the front, its top face and top
    // edges are the triangle's, so where the oracle's normal leans to the front (the triangle face or an
    // edge, all edges being active here) and the depth stays well inside the prism, both routines see the
    // same geometry. They differ by the face bias (collideShapes prefers the box's or hull's face, A's, this
    // routine the triangle's), so depths agree within the bias bound (chooseContactAxis: 7% plus 1 mm) and
    // normals wherever no other axis comes within it; and where the shape's lowest vertex is beyond an edge,
    // by the lower part of the shape over the triangle, which collideShapes may miss: face contacts are
    // therefore checked exactly, against a brute-force lowest point over the triangle.
    std::mt19937 rng(5);
    const float margin = 0.05f;
    const float thickness = 0.02f;
    int compared = 0;
    int sameNormal = 0;
    int exactDepth = 0;
    int notFace = 0;
    int penetrating = 0;
    int aboveOracle = 0;
    int faceExact = 0;
    int oracleMissed = 0;
    float worstDepthError = 0.0f;
    int inactiveContacts = 0;
    for (int trial = 0; trial < 12000; ++trial)
    {
        const Triangle tri = randomTriangle(rng);
        const Vec3 n = frontNormal(tri);
        std::vector<ConvexHull> hulls;
        hulls.push_back(thinPrism(tri, thickness));
        Shape shape;
        if (trial % 2 == 0)
        {
            shape = Shape::makeBox(
                Vec3{uniform(rng, 0.05f, 0.6f), uniform(rng, 0.05f, 0.6f), uniform(rng, 0.05f, 0.6f)});
        }
        else
        {
            hulls.push_back(randomCloudHull(rng, 8));
            shape.type = ShapeType::Hull;
            shape.hullIndex = 1;
        }
        Shape prism;
        prism.type = ShapeType::Hull;
        prism.hullIndex = 0;
        // Lowest point `gap` above a random point of the triangle's plane (inside, or up to 0.4 m out).
        const Quat q = randomRotation(rng);
        const Vec3 downLocal = inverseRotate(q, -n);
        Vec3 lowest;
        if (shape.type == ShapeType::Box)
        {
            lowest = Vec3{std::copysign(shape.box.halfExtents.x, downLocal.x),
                          std::copysign(shape.box.halfExtents.y, downLocal.y),
                          std::copysign(shape.box.halfExtents.z, downLocal.z)};
        }
        else
        {
            lowest = hulls[1].vertices[0];
            for (const Vec3& p : hulls[1].vertices)
            {
                lowest = dot(p, downLocal) > dot(lowest, downLocal) ? p : lowest;
            }
        }
        const float u = uniform(rng, -0.3f, 1.1f);
        const float v = uniform(rng, -0.3f, 1.1f - u);
        const Vec3 onPlane = tri.a + (tri.b - tri.a) * u + (tri.c - tri.a) * v;
        const float gap = trial % 4 < 2 ? uniform(rng, -0.009f, 0.0f) : uniform(rng, 0.0f, margin);
        const Vec3 centre = onPlane + n * (gap - dot(rotate(q, lowest), n));
        const Transform body{centre, q};

        const ContactManifold mine = collideInWorld(shape, hulls, body, tri, kAllTriangleEdgesActive, margin);
        ContactManifold oracle = collideShapes(shape, body, prism, Transform::identity(), margin, hulls);
        oracle.normal = rotate(body.q, oracle.normal);
        INFO("trial " << trial);
        requireConsistentManifold(mine, margin, 2e-5);
        // Every edge inactive: the face normal only, and every point over the triangle.
        const ContactManifold flat = collideInWorld(shape, hulls, body, tri, 0, margin);
        requireConsistentManifold(flat, margin, 2e-5);
        inactiveContacts += flat.pointCount > 0 ? 1 : 0;
        if (flat.pointCount > 0)
        {
            REQUIRE(angleBetween(-flat.normal, n) < 1e-3f * kDegree);
            for (int i = 0; i < flat.pointCount; ++i)
            {
                const Vec3 p = flat.points[i].pointB;
                for (const auto& [from, to] :
                     {std::pair{tri.a, tri.b}, std::pair{tri.b, tri.c}, std::pair{tri.c, tri.a}})
                {
                    REQUIRE(dot(cross(to - from, p - from), n) >= -1e-5f);
                }
                REQUIRE(std::fabs(dot(p - tri.a, n)) < 1e-5f);
            }
        }
        if (oracle.pointCount == 0 || dot(-oracle.normal, n) < 0.2f ||
            deepestSeparation(oracle) < -0.5f * thickness)
        {
            continue; // the prism's sides or bottom are involved: not the triangle's geometry
        }
        ++compared;
        REQUIRE(mine.pointCount > 0);
        const float a = deepestSeparation(mine);
        const float b = deepestSeparation(oracle);
        const float bound = 0.07f * std::max(std::fabs(a), std::fabs(b)) + 1.1e-3f;
        if (angleBetween(-mine.normal, n) < 1e-3f * kDegree)
        {
            // The triangle's face: the lowest point of the shape over the triangle, exactly, or a point
            // within 0.5 mm of it that spans more area when more than four were found (chooseContactSubset).
            // The oracle, which clips only the face through the shape's lowest vertex, can miss a lower part
            // of the shape over the triangle when that vertex is beyond an edge, and report less.
            const double lowestOver = lowestHeightOverTriangle(
                shape.type == ShapeType::Box ? makeBoxHull(shape.box.halfExtents) : hulls[1], body, tri);
            REQUIRE(a >= lowestOver - 1e-5);
            REQUIRE(a <= lowestOver + 0.5e-3 + 1e-5);
            ++faceExact;
            oracleMissed += a < b - bound ? 1 : 0;
        }
        else if (b > 0.0f)
        {
            // Apart, on an edge pair or a face of the shape: never closer than both the oracle and the exact
            // distance (GJK) allow.
            const Transform triangleInBody = relativeTransform(body, Transform::identity());
            const Vec3 corners[3] = {transformPoint(triangleInBody, tri.a),
                                     transformPoint(triangleInBody, tri.b),
                                     transformPoint(triangleInBody, tri.c)};
            const HullSupport triangleSupport{corners, 3};
            const float distanceApart = shape.type == ShapeType::Box
                                            ? gjkClosestPoints(supportOf(shape.box), triangleSupport).distance
                                            : gjkClosestPoints(supportOf(hulls[1]), triangleSupport).distance;
            REQUIRE(a >= std::min(b, distanceApart) - bound);
            aboveOracle += a > b + bound ? 1 : 0;
        }
        else
        {
            worstDepthError = std::max(worstDepthError, std::fabs(a - b));
            REQUIRE(std::fabs(a - b) <= bound);
        }
        exactDepth += std::fabs(a - b) < 1e-5f ? 1 : 0;
        sameNormal += angleBetween(mine.normal, oracle.normal) < 1e-3f ? 1 : 0;
        notFace += angleBetween(mine.normal, -n) > kDegree ? 1 : 0;
        penetrating += a < 0.0f ? 1 : 0;
    }
    WARN("compared " << compared << ", same normal " << sameNormal << ", same depth " << exactDepth
                     << ", worst depth difference " << worstDepthError << ", not the face normal " << notFace
                     << ", penetrating " << penetrating << ", apart and above the oracle's bound "
                     << aboveOracle << ", face contacts checked exactly " << faceExact
                     << " (deeper than the oracle " << oracleMissed << ")");
    REQUIRE(compared > 5000);
    REQUIRE(sameNormal >= compared * 98 / 100);
    REQUIRE(inactiveContacts > 5000);
}

// ---- Internal edges ---------------------------------------------------------------------------------------

namespace
{

/// Two coplanar triangles in y = 0 sharing the edge x = 0, |z| <= 4: left (edge bc shared) and right (edge
/// ab shared). Their other edges are boundary edges, active.
const Triangle kLeft{{-8.0f, 0.0f, 4.0f}, {0.0f, 0.0f, 4.0f}, {0.0f, 0.0f, -4.0f}};
const Triangle kRight{{0.0f, 0.0f, -4.0f}, {0.0f, 0.0f, 4.0f}, {8.0f, 0.0f, -4.0f}};
constexpr std::uint8_t kLeftSeamInactive = 1 | 4;
constexpr std::uint8_t kRightSeamInactive = 2 | 4;

/// A body pose whose lowest point along -y is at height -penetration, centred at (x, ., z).
Transform restingPose(const Shape& shape, std::span<const ConvexHull> hulls, float x, float z, const Quat& q,
                      float penetration)
{
    Vec3 lowest{};
    const Vec3 down = inverseRotate(q, Vec3{0.0f, -1.0f, 0.0f});
    switch (shape.type)
    {
    case ShapeType::Hull:
        lowest = hulls[shape.hullIndex].vertices[0];
        for (const Vec3& p : hulls[shape.hullIndex].vertices)
        {
            lowest = dot(p, down) > dot(lowest, down) ? p : lowest;
        }
        break;
    case ShapeType::Sphere:
        lowest = down * shape.sphere.radius;
        break;
    case ShapeType::Capsule:
        lowest = Vec3{0.0f, down.y > 0.0f ? shape.capsule.halfHeight : -shape.capsule.halfHeight, 0.0f} +
                 down * shape.capsule.radius;
        break;
    default:
        lowest = Vec3{std::copysign(shape.box.halfExtents.x, down.x),
                      std::copysign(shape.box.halfExtents.y, down.y),
                      std::copysign(shape.box.halfExtents.z, down.z)};
        break;
    }
    return {Vec3{x, -penetration - rotate(q, lowest).y, z}, q};
}

} // namespace

TEST_CASE("ghost collisions: sliding across a flat seam only ever meets the face normal", "[triangle]")
{
    const float margin = 0.02f;
    const Vec3 up{0.0f, 1.0f, 0.0f};
    std::mt19937 rng(6);
    const std::vector<ConvexHull> hulls{randomCloudHull(rng, 12)};
    Shape hull;
    hull.type = ShapeType::Hull;
    hull.hullIndex = 0;
    const Shape shapes[] = {Shape::makeBox({0.4f, 0.25f, 0.3f}), Shape::makeSphere(0.35f),
                            Shape::makeCapsule(0.4f, 0.2f), hull};
    const float yaws[] = {0.0f, 17.0f * kDegree, 45.0f * kDegree, 90.0f * kDegree};
    const float tilts[] = {0.0f,           2.0f * kDegree, -2.0f * kDegree, 12.0f * kDegree, -12.0f * kDegree,
                           50.0f * kDegree};
    const float penetrations[] = {0.0f, 0.002f, 0.01f, 0.025f, 0.05f};
    int configurations = 0;
    int withContact = 0;
    int ghostsWhenActive = 0;
    float worstAngle = 0.0f;
    for (const Shape& shape : shapes)
    {
        for (const float yaw : yaws)
        {
            for (const float tiltX : tilts)
            {
                for (const float tiltZ : {0.0f, 7.0f * kDegree, -30.0f * kDegree})
                {
                    const Quat q = quatFromAxisAngle({0.0f, 1.0f, 0.0f}, yaw) *
                                   quatFromAxisAngle({1.0f, 0.0f, 0.0f}, tiltX) *
                                   quatFromAxisAngle({0.0f, 0.0f, 1.0f}, tiltZ);
                    for (const float penetration : penetrations)
                    {
                        for (int step = -40; step <= 40; ++step)
                        {
                            // Every 1.5 cm across the seam, exactly on it at step 0.
                            const float x = 0.015f * static_cast<float>(step);
                            const Transform body = restingPose(shape, hulls, x, 0.3f, q, penetration);
                            const ContactManifold left =
                                collideInWorld(shape, hulls, body, kLeft, kLeftSeamInactive, margin);
                            const ContactManifold right =
                                collideInWorld(shape, hulls, body, kRight, kRightSeamInactive, margin);
                            INFO("type " << int(shape.type) << " yaw " << yaw << " tilt " << tiltX << " "
                                         << tiltZ << " penetration " << penetration << " x " << x);
                            ++configurations;
                            requireConsistentManifold(left, margin, 2e-5);
                            requireConsistentManifold(right, margin, 2e-5);
                            for (const ContactManifold* m : {&left, &right})
                            {
                                if (m->pointCount > 0)
                                {
                                    worstAngle = std::max(worstAngle, angleBetween(-m->normal, up));
                                    REQUIRE(angleBetween(-m->normal, up) < 0.1f * kDegree);
                                }
                            }
                            // The body touches or overlaps the floor, so some triangle reports it, and the
                            // deepest point is as deep as the body's lowest point (after the reduction,
                            // within its 0.5 mm depth tolerance).
                            REQUIRE(left.pointCount + right.pointCount > 0);
                            REQUIRE(std::min(deepestSeparation(left), deepestSeparation(right)) ==
                                    Approx(-penetration).margin(2e-5));
                            const TriangleContactManifold both[2] = {{0, left}, {1, right}};
                            ContactManifold merged;
                            reduceManifolds(both, merged);
                            requireConsistentManifold(merged, margin, 2e-5);
                            REQUIRE(merged.pointCount > 0);
                            REQUIRE(angleBetween(-merged.normal, up) < 0.1f * kDegree);
                            REQUIRE(deepestSeparation(merged) == Approx(-penetration).margin(0.52e-3));
                            ++withContact;

                            // The same seam marked active: edge normals are then allowed, and do appear.
                            const ContactManifold activeLeft =
                                collideInWorld(shape, hulls, body, kLeft, kAllTriangleEdgesActive, margin);
                            const ContactManifold activeRight =
                                collideInWorld(shape, hulls, body, kRight, kAllTriangleEdgesActive, margin);
                            for (const ContactManifold* m : {&activeLeft, &activeRight})
                            {
                                if (m->pointCount > 0 && angleBetween(-m->normal, up) > 1.0f * kDegree)
                                {
                                    ++ghostsWhenActive;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    WARN(configurations << " configurations across the seam, worst normal angle " << worstAngle / kDegree
                        << " degrees; with the seam active " << ghostsWhenActive << " edge normals");
    REQUIRE(withContact == configurations);
    REQUIRE(ghostsWhenActive > 100);
}

TEST_CASE("an active edge (a convex fold of 30 degrees) keeps its edge normals", "[triangle]")
{
    const float s = std::sin(15.0f * kDegree);
    const float c = std::cos(15.0f * kDegree);
    // A ridge along z at the origin: the left triangle falls away to -x, the right one to +x.
    const Triangle left{{-8.0f * c, -8.0f * s, 4.0f}, {0.0f, 0.0f, 4.0f}, {0.0f, 0.0f, -4.0f}};
    const Triangle right{{0.0f, 0.0f, -4.0f}, {0.0f, 0.0f, 4.0f}, {8.0f * c, -8.0f * s, -4.0f}};
    const Vec3 leftNormal{-s, c, 0.0f};
    const Vec3 rightNormal{s, c, 0.0f};
    REQUIRE(distance(frontNormal(left), leftNormal) < 1e-6f);
    REQUIRE(distance(frontNormal(right), rightNormal) < 1e-6f);
    const float margin = 0.02f;

    SECTION("a sphere over the ridge: the direction from the ridge to its centre")
    {
        for (const float phiDegrees : {-12.0f, -5.0f, 0.0f, 3.0f, 10.0f})
        {
            for (const float penetration : {0.0f, 0.01f, 0.04f})
            {
                const float radius = 0.5f;
                const float phi = phiDegrees * kDegree;
                const Vec3 direction{std::sin(phi), std::cos(phi), 0.0f};
                const Transform body{direction * (radius - penetration) + Vec3{0.0f, 0.0f, 0.2f},
                                     quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.3f)};
                const Shape sphere = Shape::makeSphere(radius);
                INFO("phi " << phiDegrees << " penetration " << penetration);
                for (const Triangle* t : {&left, &right})
                {
                    const ContactManifold m =
                        collideInWorld(sphere, {}, body, *t, kAllTriangleEdgesActive, margin);
                    requireConsistentManifold(m, margin, 2e-5);
                    REQUIRE(m.pointCount == 1);
                    REQUIRE(angleBetween(-m.normal, direction) < 0.01f * kDegree);
                    REQUIRE(m.points[0].separation == Approx(-penetration).margin(2e-6));
                    // Marked inactive, the fold would give each triangle's face normal instead.
                    const std::uint8_t seamOff = t == &left ? kLeftSeamInactive : kRightSeamInactive;
                    const ContactManifold off = collideInWorld(sphere, {}, body, *t, seamOff, margin);
                    REQUIRE(off.pointCount == 1);
                    REQUIRE(angleBetween(-off.normal, t == &left ? leftNormal : rightNormal) <
                            1e-3f * kDegree);
                }
            }
        }
    }

    SECTION("a box lying level across the ridge: its own face normal, from the ridge edge")
    {
        const Shape box = Shape::makeBox({0.5f, 0.2f, 0.3f});
        for (const float x : {-0.3f, -0.1f, 0.0f, 0.05f, 0.2f})
        {
            for (const float penetration : {0.0f, 0.005f, 0.02f})
            {
                const Transform body{Vec3{x, 0.2f - penetration, 0.4f}, Quat::identity()};
                INFO("x " << x << " penetration " << penetration);
                TriangleContactManifold both[2];
                for (int i = 0; i < 2; ++i)
                {
                    const ContactManifold m =
                        collideInWorld(box, {}, body, i == 0 ? left : right, kAllTriangleEdgesActive, margin);
                    requireConsistentManifold(m, margin, 2e-5);
                    REQUIRE(m.pointCount == 2); // where the ridge crosses the box's bottom face
                    REQUIRE(angleBetween(m.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-3f * kDegree);
                    REQUIRE(deepestSeparation(m) == Approx(-penetration).margin(2e-6));
                    both[i] = {static_cast<std::uint32_t>(i), m};
                }
                ContactManifold merged;
                reduceManifolds(both, merged);
                requireConsistentManifold(merged, margin, 2e-5);
                REQUIRE(merged.pointCount == 2); // the same two points from both sides: duplicates go
                REQUIRE(angleBetween(merged.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-3f * kDegree);
            }
        }
    }
}

// ---- Reduction -------------------------------------------------------------------------------------------

namespace
{

/// A flat 2 x 2-cell grid of 8 triangles in y = 0 over |x|, |z| <= 1.5, each cell split along its diagonal
/// as a heightfield's (heightfield.h); boundary edges active, inner ones not.
struct FlatGrid
{
    Triangle triangles[8];
    std::uint8_t active[8];

    FlatGrid()
    {
        const float cell = 1.5f;
        for (int cz = 0; cz < 2; ++cz)
        {
            for (int cx = 0; cx < 2; ++cx)
            {
                const float x0 = -1.5f + cell * static_cast<float>(cx);
                const float z0 = -1.5f + cell * static_cast<float>(cz);
                const Vec3 p00{x0, 0.0f, z0};
                const Vec3 p01{x0, 0.0f, z0 + cell};
                const Vec3 p10{x0 + cell, 0.0f, z0};
                const Vec3 p11{x0 + cell, 0.0f, z0 + cell};
                const int t = 2 * (2 * cz + cx);
                triangles[t] = {p00, p01, p11};
                active[t] = static_cast<std::uint8_t>((cx == 0 ? 1 : 0) | (cz == 1 ? 2 : 0));
                triangles[t + 1] = {p11, p10, p00};
                active[t + 1] = static_cast<std::uint8_t>((cx == 1 ? 1 : 0) | (cz == 0 ? 2 : 0));
            }
        }
    }

    ContactManifold collide(const Shape& shape, const Transform& body, float margin) const
    {
        std::vector<TriangleContactManifold> candidates;
        for (std::uint32_t t = 0; t < 8; ++t)
        {
            const ContactManifold m = collideInWorld(shape, {}, body, triangles[t], active[t], margin);
            requireConsistentManifold(m, margin, 2e-5);
            if (m.pointCount > 0)
            {
                REQUIRE(angleBetween(m.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-3f * kDegree);
                candidates.push_back({t, m});
            }
        }
        ContactManifold merged;
        reduceManifolds(candidates, merged);
        requireConsistentManifold(merged, margin, 2e-5);
        return merged;
    }
};

std::set<std::uint32_t> idsOf(const ContactManifold& m)
{
    std::set<std::uint32_t> ids;
    for (int i = 0; i < m.pointCount; ++i)
    {
        ids.insert(m.points[i].featureId);
    }
    return ids;
}

} // namespace

TEST_CASE("reduction: a box lying on a tessellated floor keeps its four corners, with stable ids",
          "[triangle]")
{
    const FlatGrid grid;
    const Vec3 half{0.9f, 0.3f, 0.7f};
    const Shape box = Shape::makeBox(half);
    const float margin = 0.02f;
    const float penetration = 0.01f;
    const auto pose = [&](float dx, float dz, float dyaw, float dpenetration)
    {
        return Transform{Vec3{0.13f + dx, half.y - penetration - dpenetration, -0.07f + dz},
                         quatFromAxisAngle({0.0f, 1.0f, 0.0f}, 10.0f * kDegree + dyaw)};
    };
    const Transform body = pose(0.0f, 0.0f, 0.0f, 0.0f);
    const ContactManifold m = grid.collide(box, body, margin);
    requireBottomCorners(m, body, half);
    for (int i = 0; i < 4; ++i)
    {
        REQUIRE(m.points[i].separation == Approx(-penetration).margin(2e-6));
    }

    const std::set<std::uint32_t> ids = idsOf(m);
    REQUIRE(ids.size() == 4);
    const float mm = 0.001f;
    for (const Transform& moved :
         {pose(mm, 0.0f, 0.0f, 0.0f), pose(-mm, 2.0f * mm, 0.0f, 0.0f), pose(0.0f, -3.0f * mm, 0.0f, 0.0f),
          pose(0.0f, 0.0f, 0.2f * kDegree, 0.0f), pose(0.0f, 0.0f, -0.2f * kDegree, 0.0f),
          pose(0.0f, 0.0f, 0.0f, 2.0f * mm), pose(0.0f, 0.0f, 0.0f, -5.0f * mm),
          pose(5.0f * mm, -5.0f * mm, 0.5f * kDegree, mm)})
    {
        const ContactManifold n = grid.collide(box, moved, margin);
        REQUIRE(n.pointCount == 4);
        REQUIRE(idsOf(n) == ids);
    }

    // A sphere and a lying capsule on the same floor: one point, and two.
    const ContactManifold sphere =
        grid.collide(Shape::makeSphere(0.3f), Transform{Vec3{0.0f, 0.29f, 0.0f}, Quat::identity()}, margin);
    REQUIRE(sphere.pointCount == 1);
    REQUIRE(sphere.points[0].separation == Approx(-0.01f).margin(2e-6));
    const ContactManifold capsule = grid.collide(
        Shape::makeCapsule(0.6f, 0.2f),
        Transform{Vec3{0.2f, 0.19f, 0.1f}, quatFromAxisAngle({0.0f, 0.0f, 1.0f}, kPi / 2)}, margin);
    REQUIRE(capsule.pointCount == 2);
    REQUIRE(deepestSeparation(capsule) == Approx(-0.01f).margin(2e-6));
}

TEST_CASE("reduction: a normal far from the deepest one stays out of the manifold", "[triangle]")
{
    // A box pressed into the concave corner of a floor and a wall: one normal cannot hold both, so the
    // wall's points (normal 90 degrees away) are left out when the floor's point is the deepest.
    TriangleContactManifold floor;
    floor.triangleIndex = 3;
    floor.manifold.normal = {0.0f, -1.0f, 0.0f};
    floor.manifold.points[0] = {{0.0f, 0.0f, 0.0f}, {0.0f, 0.02f, 0.0f}, -0.02f, 7};
    floor.manifold.pointCount = 1;
    TriangleContactManifold wall;
    wall.triangleIndex = 4;
    wall.manifold.normal = {1.0f, 0.0f, 0.0f};
    wall.manifold.points[0] = {{0.5f, 0.2f, 0.0f}, {0.49f, 0.2f, 0.0f}, -0.01f, 7};
    wall.manifold.pointCount = 1;
    TriangleContactManifold slope = floor;
    slope.triangleIndex = 5;
    slope.manifold.normal = normalize(Vec3{0.3f, -1.0f, 0.0f});
    slope.manifold.points[0] = {
        {0.3f, 0.0f, 0.2f}, Vec3{0.3f, 0.0f, 0.2f} + slope.manifold.normal * 0.005f, 0.005f, 9};
    const TriangleContactManifold candidates[3] = {wall, floor, slope};
    ContactManifold out;
    reduceManifolds(candidates, out);
    REQUIRE(out.pointCount == 2);
    REQUIRE(out.normal == floor.manifold.normal);
    REQUIRE(out.points[0].featureId != out.points[1].featureId);
    for (int i = 0; i < 2; ++i)
    {
        const ContactPoint& p = out.points[i];
        REQUIRE(p.separation == Approx(dot(p.pointB - p.pointA, out.normal)).margin(1e-6));
        const bool fromFloor = p.featureId == combineTriangleFeatureId(3, 7);
        REQUIRE((fromFloor || p.featureId == combineTriangleFeatureId(5, 9)));
        REQUIRE(p.separation ==
                Approx(fromFloor ? -0.02f : 0.005f * dot(slope.manifold.normal, out.normal)).margin(1e-6));
    }
    // Nothing in, nothing out.
    reduceManifolds({}, out);
    REQUIRE(out.pointCount == 0);
}

// ---- Margin, one-sidedness, bad input ---------------------------------------------------------------------

TEST_CASE("the speculative margin is honoured", "[triangle]")
{
    const float margins[] = {0.0f, 0.01f, 0.05f};
    const float yaw = 0.4f;
    for (const float margin : margins)
    {
        for (const Shape& shape :
             {Shape::makeSphere(0.3f), Shape::makeCapsule(0.5f, 0.2f), Shape::makeBox({0.3f, 0.2f, 0.4f})})
        {
            for (const float offset : {-1e-4f, 1e-4f})
            {
                const Quat q = shape.type == ShapeType::Capsule
                                   ? quatFromAxisAngle({0.0f, 1.0f, 0.0f}, yaw) *
                                         quatFromAxisAngle({0.0f, 0.0f, 1.0f}, kPi / 2)
                                   : quatFromAxisAngle({0.0f, 1.0f, 0.0f}, yaw);
                const Transform body = restingPose(shape, {}, 0.3f, -0.2f, q, -(margin + offset));
                const ContactManifold m =
                    collideInWorld(shape, {}, body, kFloor, kAllTriangleEdgesActive, margin);
                INFO("margin " << margin << " type " << int(shape.type) << " offset " << offset);
                requireConsistentManifold(m, margin, 2e-5);
                const int expected =
                    shape.type == ShapeType::Sphere ? 1 : (shape.type == ShapeType::Capsule ? 2 : 4);
                REQUIRE(m.pointCount == (offset < 0.0f ? expected : 0));
            }
        }
        // Beside the triangle, a sphere near a vertex: the margin applies to the true distance.
        const Triangle small{{0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 1.0f}, {1.0f, 0.0f, 0.0f}};
        const Vec3 away = normalize(Vec3{-1.0f, 1.0f, -1.0f});
        for (const float offset : {-1e-4f, 1e-4f})
        {
            const Transform body{away * (0.25f + margin + offset), Quat::identity()};
            const ContactManifold m =
                collideInWorld(Shape::makeSphere(0.25f), {}, body, small, kAllTriangleEdgesActive, margin);
            REQUIRE(m.pointCount == (offset < 0.0f ? 1 : 0));
            if (m.pointCount == 1)
            {
                REQUIRE(angleBetween(-m.normal, away) < 1e-3f);
            }
        }
    }
}

TEST_CASE("triangles are one-sided: shapes whose centre is behind get nothing", "[triangle]")
{
    std::vector<ConvexHull> hulls{makeBoxHull({0.3f, 0.3f, 0.3f})};
    Shape hull;
    hull.type = ShapeType::Hull;
    hull.hullIndex = 0;
    const float margin = 0.02f;
    for (const Shape& shape :
         {Shape::makeSphere(0.3f), Shape::makeCapsule(0.3f, 0.3f), Shape::makeBox({0.3f, 0.3f, 0.3f}), hull})
    {
        INFO("type " << int(shape.type));
        // Centre 1 cm behind the floor: overlapping it, but from the back.
        const Transform behind{Vec3{0.1f, -0.01f, 0.2f}, quatFromAxisAngle({1.0f, 0.0f, 0.0f}, 0.2f)};
        REQUIRE(collideInWorld(shape, hulls, behind, kFloor, kAllTriangleEdgesActive, margin).pointCount ==
                0);
        // Centre exactly in the plane: pushed out to the front.
        const Transform inPlane{Vec3{0.1f, 0.0f, 0.2f}, Quat::identity()};
        const ContactManifold m =
            collideInWorld(shape, hulls, inPlane, kFloor, kAllTriangleEdgesActive, margin);
        REQUIRE(m.pointCount > 0);
        REQUIRE(angleBetween(m.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-3f * kDegree);
        REQUIRE(deepestSeparation(m) ==
                Approx(-0.3f - (shape.type == ShapeType::Capsule ? 0.3f : 0.0f)).margin(kFloorRounding));
    }
    // A capsule standing through the triangle (its core crosses it): the face, one point at its lower end.
    const Transform standing{Vec3{0.1f, 0.3f, 0.2f}, Quat::identity()};
    const ContactManifold m =
        collideInWorld(Shape::makeCapsule(0.5f, 0.2f), {}, standing, kFloor, kAllTriangleEdgesActive, margin);
    REQUIRE(m.pointCount == 1);
    REQUIRE(m.points[0].separation == Approx(-0.4f).margin(kFloorRounding));
    REQUIRE(angleBetween(m.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-3f * kDegree);
}

TEST_CASE("non-finite input or a degenerate triangle gives an empty manifold", "[triangle]")
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const Transform body{Vec3{0.0f, 0.2f, 0.0f}, Quat::identity()};
    std::vector<ConvexHull> hulls{makeBoxHull({0.3f, 0.3f, 0.3f})};
    Shape hull;
    hull.type = ShapeType::Hull;
    hull.hullIndex = 0;
    for (const Shape& shape :
         {Shape::makeSphere(0.3f), Shape::makeCapsule(0.3f, 0.3f), Shape::makeBox({0.3f, 0.3f, 0.3f}), hull})
    {
        INFO("type " << int(shape.type));
        REQUIRE(collideInWorld(shape, hulls, body, kFloor, kAllTriangleEdgesActive, 0.02f).pointCount > 0);
        for (const float bad : {nan, inf})
        {
            Triangle t = kFloor;
            t.b.y = bad;
            REQUIRE(collideInWorld(shape, hulls, body, t, kAllTriangleEdgesActive, 0.02f).pointCount == 0);
            REQUIRE(collideInWorld(shape, hulls, Transform{Vec3{bad, 0.2f, 0.0f}, Quat::identity()}, kFloor,
                                   kAllTriangleEdgesActive, 0.02f)
                        .pointCount == 0);
            REQUIRE(collideInWorld(shape, hulls, Transform{body.p, Quat{0.0f, bad, 0.0f, 1.0f}}, kFloor,
                                   kAllTriangleEdgesActive, 0.02f)
                        .pointCount == 0);
        }
        REQUIRE(collideInWorld(shape, hulls, body, kFloor, kAllTriangleEdgesActive, nan).pointCount == 0);
        // Collinear and coincident vertices.
        const Triangle line{{0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}, {2.0f, 0.0f, 0.0f}};
        const Triangle point{{0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f}};
        REQUIRE(collideInWorld(shape, hulls, body, line, kAllTriangleEdgesActive, 0.02f).pointCount == 0);
        REQUIRE(collideInWorld(shape, hulls, body, point, kAllTriangleEdgesActive, 0.02f).pointCount == 0);
    }
    // Bad shape data.
    for (const float bad : {nan, inf})
    {
        REQUIRE(collideInWorld(Shape::makeSphere(bad), {}, body, kFloor, kAllTriangleEdgesActive, 0.02f)
                    .pointCount == 0);
        REQUIRE(
            collideInWorld(Shape::makeCapsule(bad, 0.2f), {}, body, kFloor, kAllTriangleEdgesActive, 0.02f)
                .pointCount == 0);
        REQUIRE(collideInWorld(Shape::makeBox({0.3f, bad, 0.3f}), {}, body, kFloor, kAllTriangleEdgesActive,
                               0.02f)
                    .pointCount == 0);
    }
}

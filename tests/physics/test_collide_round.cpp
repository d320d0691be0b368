// Closed-form sphere and capsule contacts against independent answers: distances found by numerical
// minimisation in double (golden-section search on convex functions), exact signed distances to boxes
// and planes, and hand-made configurations (parallel capsules, a capsule lying on a box).
#include "polytope/physics/collide.h"

#include "convex_minimum.h"
#include "manifold_checks.h"
#include "random_shapes.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

using namespace polytope::physics;
using namespace physics_test;

namespace
{

Vec3 randomPoint(std::mt19937& rng, float extent)
{
    return Vec3{uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f)} * extent;
}

/// Minimum of a convex function on [0, 1], in double: golden-section search, and the two ends.
double minimumOnUnitInterval(const std::function<double(double)>& f)
{
    return std::min({f(0.0), f(1.0), minimiseConvex(f, 0.0, 1.0, 80).value});
}

struct Point3d
{
    double x, y, z;
};

Point3d lerpD(const Vec3& p, const Vec3& q, double t)
{
    return {p.x + (q.x - p.x) * t, p.y + (q.y - p.y) * t, p.z + (q.z - p.z) * t};
}

double distanceD(const Point3d& a, const Point3d& b)
{
    return std::sqrt((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z));
}

/// Distance between two segments: the inner minimum over t is convex in s, so nested searches are exact.
double segmentDistance(const Vec3& p0, const Vec3& p1, const Vec3& q0, const Vec3& q1)
{
    return minimumOnUnitInterval(
        [&](double s)
        {
            const Point3d p = lerpD(p0, p1, s);
            return minimumOnUnitInterval([&](double t) { return distanceD(p, lerpD(q0, q1, t)); });
        });
}

/// Exact signed distance from a point to the box |x_i| <= h_i.
double boxSignedDistance(const Vec3& h, const Point3d& p)
{
    const double q[3] = {std::fabs(p.x) - h.x, std::fabs(p.y) - h.y, std::fabs(p.z) - h.z};
    double outside2 = 0.0;
    double inside = -std::numeric_limits<double>::infinity();
    for (const double c : q)
    {
        outside2 += c > 0.0 ? c * c : 0.0;
        inside = std::max(inside, c);
    }
    return outside2 > 0.0 ? std::sqrt(outside2) : inside;
}

double pointSegmentDistance(const Vec3& p, const Vec3& s0, const Vec3& s1)
{
    const Point3d pd{p.x, p.y, p.z};
    return minimumOnUnitInterval([&](double t) { return distanceD(pd, lerpD(s0, s1, t)); });
}

/// True when p lies on the sphere of radius r about some point of segment [s0, s1]: the capsule's surface,
/// or inside it on the end sphere of a clipped core point (points of tilted capsules are made that way).
bool onSweptSphere(const Vec3& p, const Vec3& s0, const Vec3& s1, float r, double tolerance)
{
    const double nearest = pointSegmentDistance(p, s0, s1);
    const double farthest = std::max(distance(p, s0), distance(p, s1));
    return nearest <= r + tolerance && farthest >= r - tolerance;
}

Vec3 capsuleEnd(const CapsuleShape& c, float sign)
{
    return {0.0f, sign * c.halfHeight, 0.0f};
}

/// Invariants shared by all pairs (requireConsistentManifold), and a unit normal even without points: the
/// closed forms always set one.
void requireConsistent(const ContactManifold& m, float margin)
{
    requireConsistentManifold(m, margin, 2e-5);
    REQUIRE(std::fabs(length(m.normal) - 1.0f) < 1e-5f);
}

} // namespace

TEST_CASE("sphere-sphere contacts match the closed form", "[manifold]")
{
    std::mt19937 rng(11);
    const float margin = 0.05f;
    for (int trial = 0; trial < 2000; ++trial)
    {
        const SphereShape a{uniform(rng, 0.05f, 1.0f)};
        const SphereShape b{uniform(rng, 0.05f, 1.0f)};
        const Transform bInA{randomPoint(rng, 1.5f), randomRotation(rng)};
        const ContactManifold m = collideSphereSphere(a, b, bInA, margin);
        INFO("trial " << trial);
        requireConsistent(m, margin);
        const float expected = length(bInA.p) - a.radius - b.radius;
        REQUIRE(m.pointCount == (expected <= margin ? 1 : 0));
        if (m.pointCount == 1)
        {
            REQUIRE(m.points[0].separation == Approx(expected).margin(1e-5));
            REQUIRE(distance(m.normal, normalize(bInA.p)) < 1e-5f);
            REQUIRE(length(m.points[0].pointA) == Approx(a.radius).margin(1e-5));
            REQUIRE(distance(m.points[0].pointB, bInA.p) == Approx(b.radius).margin(1e-5));
        }
    }
    // Concentric: any direction, but finite and fully deep.
    const ContactManifold same = collideSphereSphere({0.5f}, {0.25f}, Transform::identity(), 0.0f);
    REQUIRE(same.pointCount == 1);
    requireConsistent(same, 0.0f);
    REQUIRE(same.points[0].separation == Approx(-0.75f).margin(1e-6));
}

TEST_CASE("sphere-capsule contacts match a numerical closest-point search", "[manifold]")
{
    std::mt19937 rng(12);
    const float margin = 0.05f;
    int contacts = 0;
    for (int trial = 0; trial < 1000; ++trial)
    {
        const SphereShape a{uniform(rng, 0.05f, 1.0f)};
        const CapsuleShape b{uniform(rng, 0.05f, 1.0f), uniform(rng, 0.05f, 0.6f)};
        const Transform bInA{randomPoint(rng, 1.5f), randomRotation(rng)};
        const ContactManifold m = collideSphereCapsule(a, b, bInA, margin);
        const Vec3 b0 = transformPoint(bInA, capsuleEnd(b, -1.0f));
        const Vec3 b1 = transformPoint(bInA, capsuleEnd(b, 1.0f));
        const double expected = pointSegmentDistance(Vec3{}, b0, b1) - a.radius - b.radius;
        INFO("trial " << trial);
        requireConsistent(m, margin);
        REQUIRE(m.pointCount == (expected <= margin ? 1 : 0));
        if (m.pointCount == 1)
        {
            ++contacts;
            REQUIRE(m.points[0].separation == Approx(expected).margin(1e-5));
            REQUIRE(length(m.points[0].pointA) == Approx(a.radius).margin(1e-5));
            REQUIRE(pointSegmentDistance(m.points[0].pointB, b0, b1) == Approx(b.radius).margin(1e-5));
        }
    }
    CHECK(contacts > 200);
    // The sphere's centre on the capsule's core: pushed out sideways, never NaN.
    const ContactManifold centred =
        collideSphereCapsule({0.3f}, {0.5f, 0.2f}, {{0.0f, 0.1f, 0.0f}, Quat::identity()}, 0.0f);
    REQUIRE(centred.pointCount == 1);
    requireConsistent(centred, 0.0f);
    REQUIRE(centred.points[0].separation == Approx(-0.5f).margin(1e-6));
    REQUIRE(std::fabs(centred.normal.y) < 1e-6f);
}

TEST_CASE("capsule-capsule contacts match a numerical segment-distance search", "[manifold]")
{
    std::mt19937 rng(13);
    const float margin = 0.05f;
    int contacts = 0;
    for (int trial = 0; trial < 1000; ++trial)
    {
        const CapsuleShape a{uniform(rng, 0.05f, 1.0f), uniform(rng, 0.05f, 0.6f)};
        const CapsuleShape b{uniform(rng, 0.05f, 1.0f), uniform(rng, 0.05f, 0.6f)};
        Transform bInA{randomPoint(rng, 1.5f), randomRotation(rng)};
        if (trial % 5 == 0)
        {
            // Nearly parallel, to exercise the two-point case.
            bInA.q = quatFromAxisAngle(normalize(randomPoint(rng, 1.0f)), uniform(rng, -0.04f, 0.04f));
            if (trial % 10 == 0)
            {
                bInA.q = quatFromAxisAngle({1.0f, 0.0f, 0.0f}, kPi) * bInA.q; // and antiparallel
            }
        }
        const ContactManifold m = collideCapsuleCapsule(a, b, bInA, margin);
        const Vec3 a0 = capsuleEnd(a, -1.0f);
        const Vec3 a1 = capsuleEnd(a, 1.0f);
        const Vec3 b0 = transformPoint(bInA, capsuleEnd(b, -1.0f));
        const Vec3 b1 = transformPoint(bInA, capsuleEnd(b, 1.0f));
        const double expected = segmentDistance(a0, a1, b0, b1) - a.radius - b.radius;
        INFO("trial " << trial << ", expected " << expected);
        requireConsistent(m, margin);
        REQUIRE((m.pointCount > 0) == (expected <= margin));
        if (m.pointCount == 0)
        {
            continue;
        }
        ++contacts;
        REQUIRE(m.pointCount <= 2);
        REQUIRE(deepestSeparation(m) == Approx(expected).margin(2e-4));
        for (int i = 0; i < m.pointCount; ++i)
        {
            REQUIRE(onSweptSphere(m.points[i].pointA, a0, a1, a.radius, 2e-4));
            REQUIRE(onSweptSphere(m.points[i].pointB, b0, b1, b.radius, 2e-4));
        }
    }
    CHECK(contacts > 150);
}

TEST_CASE("parallel capsules side by side get two points at the ends of their overlap", "[manifold]")
{
    const CapsuleShape a{1.0f, 0.25f};
    const CapsuleShape b{1.0f, 0.25f};
    for (const bool flipped : {false, true})
    {
        Transform bInA{{0.49f, 0.5f, 0.0f},
                       flipped ? quatFromAxisAngle({0.0f, 0.0f, 1.0f}, kPi) : Quat::identity()};
        const ContactManifold m = collideCapsuleCapsule(a, b, bInA, 0.0f);
        INFO("flipped " << flipped);
        requireConsistent(m, 0.0f);
        REQUIRE(m.pointCount == 2);
        REQUIRE(distance(m.normal, Vec3{1.0f, 0.0f, 0.0f}) < 1e-6f);
        const float y0 = std::min(m.points[0].pointA.y, m.points[1].pointA.y);
        const float y1 = std::max(m.points[0].pointA.y, m.points[1].pointA.y);
        REQUIRE(y0 == Approx(-0.5f).margin(1e-6));
        REQUIRE(y1 == Approx(1.0f).margin(1e-6));
        for (int i = 0; i < 2; ++i)
        {
            REQUIRE(m.points[i].separation == Approx(-0.01f).margin(1e-6));
        }
    }
    // Crossed at right angles: one point.
    const ContactManifold crossed = collideCapsuleCapsule(
        a, b, {{0.49f, 0.0f, 0.0f}, quatFromAxisAngle({1.0f, 0.0f, 0.0f}, 0.5f * kPi)}, 0.0f);
    REQUIRE(crossed.pointCount == 1);
    REQUIRE(crossed.points[0].separation == Approx(-0.01f).margin(1e-6));
    // Coincident cores: finite, fully deep, pushed sideways.
    const ContactManifold same = collideCapsuleCapsule(a, b, Transform::identity(), 0.0f);
    requireConsistent(same, 0.0f);
    REQUIRE(same.pointCount == 2);
    REQUIRE(deepestSeparation(same) == Approx(-0.5f).margin(1e-6));
    REQUIRE(std::fabs(same.normal.y) < 1e-6f);
    // Crossing cores (an X): separated sideways along the common perpendicular.
    const ContactManifold x =
        collideCapsuleCapsule(a, b, {Vec3{}, quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.5f * kPi)}, 0.0f);
    requireConsistent(x, 0.0f);
    REQUIRE(x.pointCount == 1);
    REQUIRE(std::fabs(x.normal.z) == Approx(1.0f).margin(1e-6));
    REQUIRE(x.points[0].separation == Approx(-0.5f).margin(1e-6));
}

TEST_CASE("sphere-box contacts match the exact signed distance", "[manifold]")
{
    std::mt19937 rng(14);
    const float margin = 0.05f;
    for (int trial = 0; trial < 2000; ++trial)
    {
        const SphereShape a{uniform(rng, 0.05f, 1.0f)};
        const BoxShape b{{uniform(rng, 0.05f, 1.0f), uniform(rng, 0.05f, 1.0f), uniform(rng, 0.05f, 1.0f)}};
        const Transform bInA{randomPoint(rng, 1.8f), randomRotation(rng)};
        const ContactManifold m = collideSphereBox(a, b, bInA, margin);
        const Vec3 centre = inverseTransformPoint(bInA, Vec3{});
        const double expected = boxSignedDistance(b.halfExtents, {centre.x, centre.y, centre.z}) - a.radius;
        INFO("trial " << trial);
        requireConsistent(m, margin);
        REQUIRE(m.pointCount == (expected <= margin ? 1 : 0));
        if (m.pointCount == 1)
        {
            REQUIRE(m.points[0].separation == Approx(expected).margin(1e-5));
            REQUIRE(length(m.points[0].pointA) == Approx(a.radius).margin(1e-5));
            const Vec3 onB = inverseTransformPoint(bInA, m.points[0].pointB);
            REQUIRE(boxSignedDistance(b.halfExtents, {onB.x, onB.y, onB.z}) == Approx(0.0).margin(1e-5));
        }
    }
    // Centre at the box's centre of a cube: finite, leaves through a face.
    const ContactManifold inside =
        collideSphereBox({0.1f}, {{0.5f, 0.5f, 0.5f}}, Transform::identity(), 0.0f);
    REQUIRE(inside.pointCount == 1);
    requireConsistent(inside, 0.0f);
    REQUIRE(inside.points[0].separation == Approx(-0.6f).margin(1e-6));
}

TEST_CASE("capsule-box contacts match a numerical closest-point search", "[manifold]")
{
    std::mt19937 rng(15);
    const float margin = 0.05f;
    int contacts = 0;
    int twoPoint = 0;
    for (int trial = 0; trial < 1500; ++trial)
    {
        const CapsuleShape a{uniform(rng, 0.05f, 1.0f), uniform(rng, 0.05f, 0.5f)};
        const BoxShape b{{uniform(rng, 0.05f, 1.0f), uniform(rng, 0.05f, 1.0f), uniform(rng, 0.05f, 1.0f)}};
        Transform bInA{randomPoint(rng, 1.8f), randomRotation(rng)};
        if (trial % 4 == 0)
        {
            // The capsule's axis nearly parallel to one of the box's faces.
            bInA.q = quatFromAxisAngle(normalize(randomPoint(rng, 1.0f)), uniform(rng, -0.02f, 0.02f)) *
                     quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.5f * kPi);
        }
        const ContactManifold m = collideCapsuleBox(a, b, bInA, margin);
        // The core segment in the box's frame; the smallest signed distance along it is convex in t.
        const Vec3 p0 = inverseTransformPoint(bInA, capsuleEnd(a, -1.0f));
        const Vec3 p1 = inverseTransformPoint(bInA, capsuleEnd(a, 1.0f));
        const double coreDistance = minimumOnUnitInterval(
            [&](double t) { return boxSignedDistance(b.halfExtents, lerpD(p0, p1, t)); });
        const double expected = coreDistance - a.radius;
        INFO("trial " << trial << ", expected " << expected);
        requireConsistent(m, margin);
        REQUIRE((m.pointCount > 0) == (expected <= margin));
        if (m.pointCount == 0)
        {
            continue;
        }
        ++contacts;
        twoPoint += m.pointCount == 2 ? 1 : 0;
        REQUIRE(m.pointCount <= 2);
        if (coreDistance > 1e-3)
        {
            REQUIRE(deepestSeparation(m) == Approx(expected).margin(1e-4));
        }
        else
        {
            REQUIRE(deepestSeparation(m) <=
                    expected + 1e-4); // the core enters the box: at least as deep as its deepest point
        }
        for (int i = 0; i < m.pointCount; ++i)
        {
            REQUIRE(
                onSweptSphere(m.points[i].pointA, capsuleEnd(a, -1.0f), capsuleEnd(a, 1.0f), a.radius, 1e-4));
            const Vec3 onB = inverseTransformPoint(bInA, m.points[i].pointB);
            REQUIRE(boxSignedDistance(b.halfExtents, {onB.x, onB.y, onB.z}) == Approx(0.0).margin(1e-4));
        }
    }
    INFO(contacts << " contacts, " << twoPoint << " with two points");
    CHECK(contacts > 200);
    CHECK(twoPoint > 50);

    // Lying on the box's top face: two points at the ends of the core, 1 cm deep.
    const CapsuleShape log{0.8f, 0.2f};
    const BoxShape table{{2.0f, 0.5f, 1.0f}};
    const Transform logWorld{{0.3f, 0.5f + 0.2f - 0.01f, 0.1f},
                             quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.5f * kPi)};
    const ContactManifold lying =
        collideCapsuleBox(log, table, relativeTransform(logWorld, Transform::identity()), 0.0f);
    requireConsistent(lying, 0.0f);
    REQUIRE(lying.pointCount == 2);
    REQUIRE(distance(rotate(logWorld.q, lying.normal), Vec3{0.0f, -1.0f, 0.0f}) < 1e-6f);
    for (int i = 0; i < 2; ++i)
    {
        REQUIRE(lying.points[i].separation == Approx(-0.01f).margin(1e-5));
    }
    // Hanging over the table's edge: the overhanging part is clipped off at the edge.
    const Transform overWorld{{2.0f, 0.69f, 0.1f}, logWorld.q};
    const ContactManifold over =
        collideCapsuleBox(log, table, relativeTransform(overWorld, Transform::identity()), 0.0f);
    REQUIRE(over.pointCount == 2);
    const float x0 = transformPoint(overWorld, over.points[0].pointA).x;
    const float x1 = transformPoint(overWorld, over.points[1].pointA).x;
    REQUIRE(std::min(x0, x1) == Approx(1.2f).margin(1e-5));
    REQUIRE(std::max(x0, x1) == Approx(2.0f).margin(1e-5));
    // The core pushed through the box's middle: finite, and deep.
    const ContactManifold skewer = collideCapsuleBox(
        log, table, relativeTransform({{0.0f, 0.0f, 0.0f}, logWorld.q}, Transform::identity()), 0.0f);
    requireConsistent(skewer, 0.0f);
    REQUIRE(skewer.pointCount >= 1);
    REQUIRE(deepestSeparation(skewer) ==
            Approx(-0.7f).margin(1e-5)); // out through the top or bottom: 0.5 + 0.2
}

TEST_CASE("sphere-plane and capsule-plane contacts match the closed form", "[manifold]")
{
    std::mt19937 rng(16);
    const float margin = 0.05f;
    for (int trial = 0; trial < 2000; ++trial)
    {
        const PlaneShape plane{normalize(randomPoint(rng, 1.0f)), uniform(rng, -1.0f, 1.0f)};
        Transform world{plane.normal * (plane.offset + uniform(rng, -0.5f, 1.5f)) + randomPoint(rng, 0.5f),
                        randomRotation(rng)};
        const Transform planeInA = relativeTransform(world, Transform::identity());
        INFO("trial " << trial);

        const SphereShape sphere{uniform(rng, 0.05f, 1.0f)};
        const ContactManifold ms = collideSpherePlane(sphere, plane, planeInA, margin);
        requireConsistent(ms, margin);
        const float sphereExpected = dot(plane.normal, world.p) - plane.offset - sphere.radius;
        REQUIRE(ms.pointCount == (sphereExpected <= margin ? 1 : 0));
        REQUIRE(distance(rotate(world.q, ms.normal), -plane.normal) < 1e-5f);
        if (ms.pointCount == 1)
        {
            REQUIRE(ms.points[0].separation == Approx(sphereExpected).margin(1e-5));
            REQUIRE(length(ms.points[0].pointA) == Approx(sphere.radius).margin(1e-5));
            REQUIRE(dot(plane.normal, transformPoint(world, ms.points[0].pointB)) ==
                    Approx(plane.offset).margin(1e-5));
        }

        const CapsuleShape capsule{uniform(rng, 0.05f, 1.0f), uniform(rng, 0.05f, 0.5f)};
        const ContactManifold mc = collideCapsulePlane(capsule, plane, planeInA, margin);
        requireConsistent(mc, margin);
        int expectedCount = 0;
        float capsuleExpected = std::numeric_limits<float>::infinity();
        for (const float sign : {-1.0f, 1.0f})
        {
            const float s = dot(plane.normal, transformPoint(world, capsuleEnd(capsule, sign))) -
                            plane.offset - capsule.radius;
            expectedCount += s <= margin ? 1 : 0;
            capsuleExpected = std::min(capsuleExpected, s);
        }
        REQUIRE(mc.pointCount == expectedCount);
        if (mc.pointCount > 0)
        {
            REQUIRE(deepestSeparation(mc) == Approx(capsuleExpected).margin(1e-5));
            for (int i = 0; i < mc.pointCount; ++i)
            {
                REQUIRE(onSweptSphere(mc.points[i].pointA, capsuleEnd(capsule, -1.0f),
                                      capsuleEnd(capsule, 1.0f), capsule.radius, 1e-5));
                REQUIRE(dot(plane.normal, transformPoint(world, mc.points[i].pointB)) ==
                        Approx(plane.offset).margin(1e-5));
            }
        }
    }
}

// Box-box (and box-plane) contact manifolds: points on both surfaces, resting contacts, feature-id
// persistence, metamorphic checks (far from the origin, rotated, swapped) and a grid of degenerate
// configurations. The cost of one box-box manifold is measured by polytope-bench's "narrowphase" suite.
#include "polytope/physics/collide.h"
#include "polytope/physics/sat.h"

#include "manifold_checks.h"
#include "random_shapes.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace polytope::physics;
using namespace physics_test;

namespace
{

Quat axisAngle(const Vec3& axis, float angle)
{
    return quatFromAxisAngle(normalize(axis), angle);
}

/// Exact signed distance from p to the surface of the box |x_i| <= h_i (negative inside), in double.
double boxSignedDistance(const Vec3& h, const Vec3& p)
{
    double outside2 = 0.0;
    double inside = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < 3; ++i)
    {
        const double q = std::fabs(static_cast<double>(p[i])) - static_cast<double>(h[i]);
        outside2 += q > 0.0 ? q * q : 0.0;
        inside = std::max(inside, q);
    }
    return outside2 > 0.0 ? std::sqrt(outside2) : inside;
}

/// The invariants every box-box manifold must meet (requireConsistentManifold, and each point on its box's
/// surface); `tolerance` in metres.
void requireValidBoxManifold(const BoxShape& a, const BoxShape& b, const Transform& bInA,
                             const ContactManifold& m, float margin, float tolerance)
{
    requireConsistentManifold(m, margin, tolerance);
    for (int i = 0; i < m.pointCount; ++i)
    {
        const ContactPoint& p = m.points[i];
        INFO("point " << i);
        REQUIRE(std::fabs(boxSignedDistance(a.halfExtents, p.pointA)) <= tolerance);
        REQUIRE(std::fabs(boxSignedDistance(b.halfExtents, inverseTransformPoint(bInA, p.pointB))) <=
                tolerance);
    }
}

std::vector<std::uint32_t> sortedIds(const ContactManifold& m)
{
    std::vector<std::uint32_t> ids;
    for (int i = 0; i < m.pointCount; ++i)
    {
        ids.push_back(m.points[i].featureId);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

/// A random pair that is close or overlapping.
struct BoxPair
{
    BoxShape a;
    BoxShape b;
    Transform bInA;
};

BoxPair randomBoxPair(std::mt19937& rng)
{
    BoxPair pair;
    pair.a.halfExtents = {uniform(rng, 0.1f, 1.5f), uniform(rng, 0.1f, 1.5f), uniform(rng, 0.1f, 1.5f)};
    pair.b.halfExtents = {uniform(rng, 0.1f, 1.5f), uniform(rng, 0.1f, 1.5f), uniform(rng, 0.1f, 1.5f)};
    const float reach = length(pair.a.halfExtents) + length(pair.b.halfExtents);
    pair.bInA.p = Vec3{uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f)} *
                  (0.8f * reach);
    pair.bInA.q = randomRotation(rng);
    return pair;
}

} // namespace

TEST_CASE("box-box manifold points lie on both boxes and match the SAT depth", "[manifold]")
{
    std::mt19937 rng(5150);
    const float margin = 0.02f;
    int contacts = 0;
    int fourPoint = 0;
    int edgeContacts = 0;
    for (int trial = 0; trial < 4000; ++trial)
    {
        const BoxPair pair = randomBoxPair(rng);
        const ContactManifold m = collideBoxBox(pair.a, pair.b, pair.bInA, margin);
        const SatResult sat = satBoxes(pair.a, pair.b, pair.bInA, margin);
        INFO("trial " << trial);
        requireValidBoxManifold(pair.a, pair.b, pair.bInA, m, margin, 2e-5f);
        if (sat.separated)
        {
            REQUIRE(m.pointCount == 0);
            continue;
        }
        if (sat.maxSeparation() < -1e-3f)
        {
            REQUIRE(m.pointCount >= 1);
        }
        if (m.pointCount == 0)
        {
            continue;
        }
        ++contacts;
        fourPoint += m.pointCount == 4 ? 1 : 0;
        const bool edge = featureKind(m.points[0].featureId) == ContactFeatureKind::EdgePair;
        edgeContacts += edge ? 1 : 0;
        REQUIRE(distance(m.normal, sat.chosen.normal) < 1e-5f);
        for (int i = 0; i < m.pointCount; ++i)
        {
            REQUIRE(m.points[i].separation >= sat.chosen.separation - 1e-5f);
        }
        if (edge)
        {
            // Edge contacts: the closest points of the two edges are the SAT depth apart.
            REQUIRE(m.points[0].separation == Approx(sat.chosen.separation).margin(1e-5));
        }
    }
    INFO(contacts << " contacts, " << fourPoint << " with 4 points, " << edgeContacts << " edge-edge");
    CHECK(contacts > 1000);
    CHECK(fourPoint > 100);
    CHECK(edgeContacts > 100);
}

TEST_CASE("a box resting face-down on a bigger box gets 4 points at the right separation", "[manifold]")
{
    const BoxShape ground{{2.0f, 0.5f, 2.0f}};
    const BoxShape crate{{0.5f, 0.5f, 0.5f}};
    for (const float yaw : {0.0f, 0.3f, 0.7854f, 1.2f})
    {
        for (const float gap : {-0.01f, 0.0f, 0.005f})
        {
            Transform bInA;
            bInA.p = {0.3f, 0.5f + 0.5f + gap, -0.2f};
            bInA.q = quatFromAxisAngle({0.0f, 1.0f, 0.0f}, yaw);
            const ContactManifold m = collideBoxBox(ground, crate, bInA, 0.01f);
            INFO("yaw " << yaw << ", gap " << gap);
            requireValidBoxManifold(ground, crate, bInA, m, 0.01f, 1e-5f);
            REQUIRE(m.pointCount == 4);
            REQUIRE(distance(m.normal, Vec3{0.0f, 1.0f, 0.0f}) < 1e-6f);
            for (int i = 0; i < 4; ++i)
            {
                REQUIRE(m.points[i].separation == Approx(gap).margin(1e-6));
                REQUIRE(m.points[i].pointA.y == Approx(0.5f).margin(1e-6));
                // The points are the crate's bottom corners.
                const Vec3 local = inverseTransformPoint(bInA, m.points[i].pointB);
                REQUIRE(std::fabs(local.x) == Approx(0.5f).margin(1e-5));
                REQUIRE(local.y == Approx(-0.5f).margin(1e-5));
                REQUIRE(std::fabs(local.z) == Approx(0.5f).margin(1e-5));
            }
            REQUIRE(featureKind(m.points[0].featureId) == ContactFeatureKind::FaceOfA);
        }
    }
    // Out of the speculative margin: nothing.
    Transform far;
    far.p = {0.3f, 1.0f + 0.011f, -0.2f};
    REQUIRE(collideBoxBox(ground, crate, far, 0.01f).pointCount == 0);
    // Upside down (B under A): the normal points down.
    Transform below;
    below.p = {0.3f, -1.0f + 0.01f, -0.2f};
    const ContactManifold m = collideBoxBox(ground, crate, below, 0.01f);
    REQUIRE(m.pointCount == 4);
    REQUIRE(distance(m.normal, Vec3{0.0f, -1.0f, 0.0f}) < 1e-6f);
    REQUIRE(deepestSeparation(m) == Approx(-0.01f).margin(1e-6));
}

TEST_CASE("feature ids of a resting box stay the same under 1e-4 m perturbations", "[manifold]")
{
    struct Case
    {
        const char* name;
        BoxShape a;
        BoxShape b;
        Transform bInA;
        int expectedPoints;
    };
    const BoxShape ground{{2.0f, 0.5f, 2.0f}};
    const BoxShape crate{{0.5f, 0.5f, 0.5f}};
    std::vector<Case> cases;
    cases.push_back({"inside the top face", ground, crate, {{0.3f, 0.99f, -0.2f}, Quat::identity()}, 4});
    cases.push_back({"overhanging an edge", ground, crate, {{1.8f, 0.99f, 0.3f}, Quat::identity()}, 4});
    cases.push_back({"overhanging a corner, turned",
                     ground,
                     crate,
                     {{1.9f, 0.99f, 1.85f}, quatFromAxisAngle({0.0f, 1.0f, 0.0f}, 0.4f)},
                     4});
    cases.push_back(
        {"same size, offset diagonally", crate, crate, {{0.4f, 0.99f, 0.3f}, Quat::identity()}, 4});
    // B's bottom edge sinks into A's top face and runs off its side: B's two faces at that edge tie as the
    // incident face, and either choice must name the points the same way.
    cases.push_back({"edge into a face, off its side",
                     crate,
                     crate,
                     {{0.3f, 0.5f + 0.5f * std::sqrt(2.0f) - 0.01f, 0.1f},
                      quatFromAxisAngle({1.0f, 0.0f, 0.0f}, 0.25f * kPi)},
                     2});
    std::mt19937 rng(8);
    for (const Case& c : cases)
    {
        INFO(c.name);
        const ContactManifold base = collideBoxBox(c.a, c.b, c.bInA, 0.01f);
        REQUIRE(base.pointCount == c.expectedPoints);
        const std::vector<std::uint32_t> baseIds = sortedIds(base);
        for (int trial = 0; trial < 300; ++trial)
        {
            Transform moved = c.bInA;
            moved.p +=
                Vec3{uniform(rng, -1e-4f, 1e-4f), uniform(rng, -1e-4f, 1e-4f), uniform(rng, -1e-4f, 1e-4f)};
            const Vec3 axis{uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f)};
            moved.q = normalize(axisAngle(axis, uniform(rng, -1e-4f, 1e-4f)) * moved.q);
            const ContactManifold m = collideBoxBox(c.a, c.b, moved, 0.01f);
            INFO("trial " << trial);
            requireValidBoxManifold(c.a, c.b, moved, m, 0.01f, 1e-5f);
            REQUIRE(sortedIds(m) == baseIds);
        }
    }
}

TEST_CASE("box-box manifolds are unchanged far from the origin, under rotation, and when swapped",
          "[manifold]")
{
    std::mt19937 rng(2718);
    const float margin = 0.02f;
    int sameIds = 0;
    int compared = 0;
    int clearSwaps = 0;
    for (int trial = 0; trial < 2000; ++trial)
    {
        const BoxPair pair = randomBoxPair(rng);
        // World transforms whose positions are multiples of 2^-10 m, so adding 1e4 m is exact in float.
        Transform worldA;
        worldA.q = randomRotation(rng);
        worldA.p = Vec3{std::round(uniform(rng, -2.0f, 2.0f) * 1024.0f),
                        std::round(uniform(rng, -2.0f, 2.0f) * 1024.0f),
                        std::round(uniform(rng, -2.0f, 2.0f) * 1024.0f)} /
                   1024.0f;
        Transform worldB = worldA * pair.bInA;
        worldB.p = Vec3{std::round(worldB.p.x * 1024.0f), std::round(worldB.p.y * 1024.0f),
                        std::round(worldB.p.z * 1024.0f)} /
                   1024.0f;
        const Transform bInA = relativeTransform(worldA, worldB);
        const ContactManifold m = collideBoxBox(pair.a, pair.b, bInA, margin);
        INFO("trial " << trial);

        // 1. Both moved by 1e4 m: the relative transform, hence the manifold, is bit-identical.
        const Vec3 offset{10000.0f, -10000.0f, 10000.0f};
        const Transform farA{worldA.p + offset, worldA.q};
        const Transform farB{worldB.p + offset, worldB.q};
        const ContactManifold far = collideBoxBox(pair.a, pair.b, relativeTransform(farA, farB), margin);
        REQUIRE(far.pointCount == m.pointCount);
        for (int i = 0; i < m.pointCount; ++i)
        {
            REQUIRE(far.points[i].pointA == m.points[i].pointA);
            REQUIRE(far.points[i].pointB == m.points[i].pointB);
            REQUIRE(far.points[i].separation == m.points[i].separation);
            REQUIRE(far.points[i].featureId == m.points[i].featureId);
        }

        // 2. The whole pair rotated: A's frame sees (nearly) the same pair.
        const Transform spin{Vec3{}, randomRotation(rng)};
        const ContactManifold rotated =
            collideBoxBox(pair.a, pair.b, relativeTransform(spin * worldA, spin * worldB), margin);
        requireValidBoxManifold(pair.a, pair.b, bInA, rotated, margin, 1e-4f);
        if (m.pointCount > 0 && rotated.pointCount > 0)
        {
            ++compared;
            if (sortedIds(rotated) == sortedIds(m))
            {
                ++sameIds;
                REQUIRE(distance(rotated.normal, m.normal) < 1e-4f);
                REQUIRE(deepestSeparation(rotated) == Approx(deepestSeparation(m)).margin(1e-4));
            }
        }

        // 3. Swapped: (B, A) in B's frame, brought back to A's frame, has the same normal and depth when the
        // contact axis is clear; the unbiased SAT separation always agrees.
        const Transform aInB = inverse(bInA);
        const SatResult satAB = satBoxes(pair.a, pair.b, bInA, margin);
        const SatResult satBA = satBoxes(pair.b, pair.a, aInB, margin);
        REQUIRE(satAB.separated == satBA.separated);
        if (satAB.separated)
        {
            continue;
        }
        REQUIRE(satBA.maxSeparation() == Approx(satAB.maxSeparation()).margin(2e-5));
        const ContactManifold swapped = swapManifold(collideBoxBox(pair.b, pair.a, aInB, margin), bInA);
        requireValidBoxManifold(pair.a, pair.b, bInA, swapped, margin, 1e-4f);
        const float best = satAB.maxSeparation();
        const float faceA = satAB.bestFaceA.separation;
        const float faceB = satAB.bestFaceB.separation;
        const float edge = satAB.bestEdge.separation;
        const float second = best == faceA ? std::max(faceB, edge)
                                           : (best == faceB ? std::max(faceA, edge) : std::max(faceA, faceB));
        if (m.pointCount > 0 && best - second > 0.1f * std::fabs(best) + 0.01f)
        {
            ++clearSwaps;
            REQUIRE(swapped.pointCount > 0);
            REQUIRE(distance(swapped.normal, m.normal) < 1e-4f);
            REQUIRE(deepestSeparation(swapped) == Approx(deepestSeparation(m)).margin(1e-4));
        }
    }
    INFO(compared << " rotated pairs compared, " << sameIds << " with the same feature ids; " << clearSwaps
                  << " clear swaps");
    CHECK(sameIds >= compared * 97 / 100);
    CHECK(clearSwaps > 300);
}

TEST_CASE("degenerate box-box configurations give finite, sane manifolds", "[manifold]")
{
    struct Case
    {
        std::string name;
        BoxShape a;
        BoxShape b;
        Transform worldA;
        Transform worldB;
        int minPoints;
        int maxPoints;
        float expectedDeepest; ///< metres
        Vec3 expectedNormalWorld;
    };
    const BoxShape unit{{0.5f, 0.5f, 0.5f}};
    const float root2 = std::sqrt(2.0f);
    const Quat tiltZ = quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.25f * kPi);
    const Quat tiltX = quatFromAxisAngle({1.0f, 0.0f, 0.0f}, 0.25f * kPi);
    const Vec3 up{0.0f, 1.0f, 0.0f};
    const Transform origin = Transform::identity();
    std::vector<Case> cases = {
        {"faces aligned, same size",
         unit,
         unit,
         origin,
         {{0.0f, 0.99f, 0.0f}, Quat::identity()},
         4,
         4,
         -0.01f,
         up},
        {"faces aligned, just touching",
         unit,
         unit,
         origin,
         {{0.0f, 1.0f, 0.0f}, Quat::identity()},
         4,
         4,
         0.0f,
         up},
        {"coincident", unit, unit, origin, origin, 4, 4, -1.0f, Vec3{}},
        {"edge on edge, crossed",
         unit,
         unit,
         {Vec3{}, tiltZ},
         {{0.0f, root2 - 0.01f, 0.0f}, tiltX},
         1,
         1,
         -0.01f,
         up},
        {"edge on edge, parallel",
         unit,
         unit,
         {Vec3{}, tiltZ},
         {{0.0f, root2 - 0.01f, 0.0f}, tiltZ},
         2,
         4,
         -0.01f / root2,
         Vec3{}},
        {"vertex on face",
         unit,
         unit,
         origin,
         {{0.0f, 0.5f + 0.5f * std::sqrt(3.0f) - 0.01f, 0.0f},
          quatFromAxisAngle(normalize(Vec3{-1.0f, 0.0f, 1.0f}), std::acos(1.0f / std::sqrt(3.0f)))},
         1,
         1,
         -0.01f,
         up},
        {"tilted by 1e-6 rad",
         unit,
         unit,
         origin,
         {{0.1f, 0.99f, 0.0f},
          normalize(quatFromAxisAngle({1.0f, 0.0f, 0.0f}, 1e-6f) *
                    quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 1e-6f))},
         4,
         4,
         -0.01f,
         up},
        {"tilted by 1e-6 rad, just touching",
         unit,
         unit,
         origin,
         {{0.0f, 1.0f, 0.0f}, quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 1e-6f)},
         2,
         4,
         0.0f,
         up},
        {"aspect 100: rod across a plate",
         BoxShape{{5.0f, 0.05f, 5.0f}},
         BoxShape{{0.05f, 0.05f, 5.0f}},
         origin,
         {{0.2f, 0.099f, 0.1f}, quatFromAxisAngle(up, 0.6f)},
         4,
         4,
         -0.001f,
         up},
        {"aspect 100: plate on plate, crossed",
         BoxShape{{5.0f, 0.05f, 0.05f}},
         BoxShape{{0.05f, 0.05f, 5.0f}},
         origin,
         {{0.0f, 0.099f, 0.0f}, Quat::identity()},
         4,
         4,
         -0.001f,
         up},
        {"aspect 100: needle into a slab",
         BoxShape{{1.0f, 1.0f, 1.0f}},
         BoxShape{{0.01f, 1.0f, 0.01f}},
         origin,
         {{0.3f, 1.9f, 0.2f}, quatFromAxisAngle({1.0f, 0.0f, 0.0f}, 0.1f)},
         1,
         4,
         std::numeric_limits<float>::quiet_NaN(),
         Vec3{}},
        {"tiny box on a huge box",
         BoxShape{{100.0f, 100.0f, 100.0f}},
         BoxShape{{0.005f, 0.005f, 0.005f}},
         origin,
         {{3.0f, 100.004f, -7.0f}, Quat::identity()},
         4,
         4,
         -0.001f,
         up},
        {"far from the origin, resting",
         unit,
         unit,
         {{1e4f, 1e4f, -1e4f}, tiltX},
         {transformPoint({{1e4f, 1e4f, -1e4f}, tiltX}, {0.25f, 0.99f, 0.0f}), tiltX},
         4,
         4,
         -0.01f,
         rotate(tiltX, up)},
    };
    for (const Case& c : cases)
    {
        INFO(c.name);
        const Transform bInA = relativeTransform(c.worldA, c.worldB);
        for (const float margin : {0.0f, 0.02f})
        {
            INFO("margin " << margin);
            const ContactManifold m = collideBoxBox(c.a, c.b, bInA, margin);
            const float tolerance = c.name.rfind("far", 0) == 0 ? 2e-3f : 1e-4f;
            requireValidBoxManifold(c.a, c.b, bInA, m, margin, tolerance);
            REQUIRE(m.pointCount >= c.minPoints);
            REQUIRE(m.pointCount <= c.maxPoints);
            if (!std::isnan(c.expectedDeepest))
            {
                REQUIRE(deepestSeparation(m) == Approx(c.expectedDeepest).margin(tolerance));
            }
            if (lengthSquared(c.expectedNormalWorld) > 0.0f)
            {
                REQUIRE(distance(rotate(c.worldA.q, m.normal), c.expectedNormalWorld) < 1e-3f);
            }
            // Swapped, the same pair gives the same depth.
            const ContactManifold swapped =
                swapManifold(collideBoxBox(c.b, c.a, inverse(bInA), margin), bInA);
            requireValidBoxManifold(c.a, c.b, bInA, swapped, margin, tolerance);
            REQUIRE(swapped.pointCount >= 1);
            REQUIRE(deepestSeparation(swapped) == Approx(deepestSeparation(m)).margin(tolerance));
        }
    }
}

TEST_CASE("box-plane manifolds: the corners within the margin, deepest first, at most four", "[manifold]")
{
    std::mt19937 rng(606);
    for (int trial = 0; trial < 2000; ++trial)
    {
        const BoxShape box{{uniform(rng, 0.1f, 1.0f), uniform(rng, 0.1f, 1.0f), uniform(rng, 0.1f, 1.0f)}};
        const PlaneShape plane{
            normalize(Vec3{uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f)}),
            uniform(rng, -1.0f, 1.0f)};
        // Plane in the box's frame: place the box's centre at a random height above the plane.
        Transform boxWorld;
        boxWorld.q = trial % 4 == 0 ? Quat::identity() : randomRotation(rng);
        boxWorld.p = plane.normal * (plane.offset + uniform(rng, -0.5f, 1.5f));
        const Transform planeInBox = relativeTransform(boxWorld, Transform::identity());
        const float margin = 0.02f;
        const ContactManifold m = collideBoxPlane(box, plane, planeInBox, margin);
        INFO("trial " << trial);
        REQUIRE(isFinite(m));
        // Brute force: corner heights above the plane, in the world frame.
        std::vector<float> heights;
        for (int v = 0; v < 8; ++v)
        {
            const Vec3 h = box.halfExtents;
            const Vec3 corner =
                transformPoint(boxWorld, {(v & 1) ? h.x : -h.x, (v & 2) ? h.y : -h.y, (v & 4) ? h.z : -h.z});
            heights.push_back(dot(plane.normal, corner) - plane.offset);
        }
        std::sort(heights.begin(), heights.end());
        const int within = static_cast<int>(
            std::count_if(heights.begin(), heights.end(), [&](float h) { return h <= margin; }));
        REQUIRE(m.pointCount == std::min(within, 4));
        if (m.pointCount == 0)
        {
            continue;
        }
        // The reduction keeps a point as deep as the deepest vertex, up to its 0.5 mm tolerance for equally
        // deep points (kReductionDepthTolerance), and none deeper than the deepest vertex.
        const float deepestKept = deepestSeparation(m);
        INFO("deepest vertex " << heights[0] << ", deepest kept " << deepestKept);
        REQUIRE(deepestKept >= heights[0] - 1e-5);
        REQUIRE(deepestKept <= heights[0] + 0.5e-3 + 1e-5);
        REQUIRE(distance(rotate(boxWorld.q, m.normal), -plane.normal) < 1e-5f);
        for (int i = 0; i < m.pointCount; ++i)
        {
            const ContactPoint& p = m.points[i];
            REQUIRE(std::fabs(boxSignedDistance(box.halfExtents, p.pointA)) < 1e-5);
            REQUIRE(dot(plane.normal, transformPoint(boxWorld, p.pointB)) - plane.offset ==
                    Approx(0.0f).margin(1e-4));
            REQUIRE(p.separation == Approx(dot(p.pointB - p.pointA, m.normal)).margin(1e-5));
        }
    }
    // Flat on the plane: 4 corners, all at the same depth.
    const BoxShape box{{1.0f, 0.25f, 0.5f}};
    const PlaneShape ground{{0.0f, 1.0f, 0.0f}, 0.0f};
    const ContactManifold flat = collideBoxPlane(box, ground, {{0.0f, -0.24f, 0.0f}, Quat::identity()}, 0.0f);
    REQUIRE(flat.pointCount == 4);
    for (int i = 0; i < 4; ++i)
    {
        REQUIRE(flat.points[i].separation == Approx(-0.01f).margin(1e-6));
    }
}

TEST_CASE("the specialised box-box manifold equals the generic polyhedron manifold on box views",
          "[manifold]")
{
    std::mt19937 rng(1234);
    const float margin = 0.02f;
    int compared = 0;
    int differentIds = 0;
    for (int trial = 0; trial < 3000; ++trial)
    {
        const BoxPair pair = randomBoxPair(rng);
        const ContactManifold special = collideBoxBox(pair.a, pair.b, pair.bInA, margin);
        const BoxAsHull hullA = boxAsHull(pair.a);
        const BoxAsHull hullB = boxAsHull(pair.b);
        const SatResult sat = satBoxes(pair.a, pair.b, pair.bInA, margin);
        const ContactManifold generic = manifoldFromSat(hullA.view(), hullB.view(), pair.bInA, sat, margin);
        INFO("trial " << trial);
        REQUIRE(special.pointCount == generic.pointCount);
        if (special.pointCount == 0)
        {
            continue;
        }
        ++compared;
        REQUIRE(distance(special.normal, generic.normal) < 1e-5f);
        REQUIRE(deepestSeparation(special) == Approx(deepestSeparation(generic)).margin(1e-5));
        // The same points under the same names. Exact ties in the 4-point reduction (two candidates on a
        // line parallel to the first two) may go either way under different rounding; those are counted.
        differentIds += sortedIds(special) == sortedIds(generic) ? 0 : 1;
        for (int i = 0; i < special.pointCount; ++i)
        {
            for (int j = 0; j < generic.pointCount; ++j)
            {
                if (generic.points[j].featureId == special.points[i].featureId)
                {
                    REQUIRE(distance(special.points[i].pointA, generic.points[j].pointA) < 1e-4f);
                    REQUIRE(distance(special.points[i].pointB, generic.points[j].pointB) < 1e-4f);
                    REQUIRE(special.points[i].separation ==
                            Approx(generic.points[j].separation).margin(1e-5));
                }
            }
        }
    }
    INFO(compared << " compared, " << differentIds << " with different ids");
    CHECK(compared > 1000);
    CHECK(differentIds * 100 <= compared);
}

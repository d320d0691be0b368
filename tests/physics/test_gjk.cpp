// GJK: distances and closest points against closed forms, a brute force over box features and qhull on
// the Minkowski difference; its signed-volumes sub-algorithm against brute force; metamorphic checks
// (swap, far translation, global rotation) and a grid of degenerate configurations.
#include "polytope/physics/gjk.h"
#include "polytope/physics/support.h"

#include "physics/support_test_utils.h"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <random>
#include <vector>

using namespace polytope::physics;
using namespace convex_oracle;

namespace
{

/// GJK between shape a (at the origin of its own frame) and shape b at `bInA`, in A's frame.
template <class SA, class SB> GjkResult closest(const SA& a, const SB& b, const Transform& bInA)
{
    return gjkClosestPoints(supportOf(a), transformed(supportOf(b), bInA), bInA.p);
}

Transform randomPose(std::mt19937& rng, float range)
{
    return {randomVec(rng, -range, range), randomRotation(rng)};
}

bool finite(const GjkResult& r)
{
    return std::isfinite(r.distance) && std::isfinite(r.coreDistance) &&
           std::isfinite(r.distanceErrorBound) && isFinite(r.normal) && isFinite(r.pointOnA) &&
           isFinite(r.pointOnB);
}

/// Checks a result against the true signed distance `expected` (metres) within `tolerance`: the status
/// agrees outside the tolerance band, and when apart the witnesses are `distance` apart along the normal.
void checkAgainst(const GjkResult& r, double expected, double tolerance)
{
    INFO("expected " << expected << " got " << r.distance << " status " << int(r.status));
    REQUIRE(finite(r));
    REQUIRE(r.status != GjkStatus::Indeterminate);
    if (expected > tolerance)
    {
        CHECK(r.status == GjkStatus::Separated);
    }
    if (expected < -tolerance)
    {
        CHECK(r.status == GjkStatus::Intersecting);
    }
    if (r.coreDistance > 0.0f)
    {
        CHECK(std::fabs(double(r.distance) - expected) <= tolerance);
        CHECK(std::fabs(length(r.normal) - 1.0f) <= 1e-5f);
        const Vec3 gap = r.pointOnB - r.pointOnA;
        CHECK(length(gap - r.normal * r.distance) <= tolerance);
    }
}

} // namespace

TEST_CASE("signed volumes find the closest point of random and degenerate simplices", "[gjk]")
{
    using convex_detail::closestOnSimplex;
    std::mt19937 rng(101);
    auto toD = [](R3 p) { return DVec3{p.x, p.y, p.z}; };
    for (int trial = 0; trial < 10000; ++trial)
    {
        const int count = 1 + trial % 4;
        R3 p[4];
        for (int i = 0; i < count; ++i)
        {
            p[i] = toR3(randomVec(rng, -2.0f, 2.0f));
        }
        // Every fifth case degenerate: a repeated point, or a point on the span of the others.
        if (trial % 5 == 0 && count >= 2)
        {
            const double t = uniform(rng, -1.0f, 2.0f);
            p[count - 1] = count == 2 ? p[0] : p[0] + (p[1] - p[0]) * t;
            if (count == 4)
            {
                p[3] = p[0] + (p[1] - p[0]) * t + (p[2] - p[0]) * (1.0 - t);
            }
        }
        convex_detail::SupportVertex v[4];
        DVec3 d[4];
        for (int i = 0; i < count; ++i)
        {
            d[i] = toD(p[i]);
            v[i].w = d[i];
        }
        double expected = 0.0;
        switch (count)
        {
        case 1:
            expected = norm(p[0]);
            break;
        case 2:
            expected = pointSegmentDistance({}, p[0], p[1]);
            break;
        case 3:
            expected = pointTriangleDistance({}, p[0], p[1], p[2]);
            break;
        default:
        {
            // Inside when the origin is on the same side of each face as the opposite vertex.
            static constexpr int kFace[4][4] = {{1, 2, 3, 0}, {0, 2, 3, 1}, {0, 1, 3, 2}, {0, 1, 2, 3}};
            bool inside = true;
            expected = 1e300;
            for (const auto& f : kFace)
            {
                const R3 n = cross(p[f[1]] - p[f[0]], p[f[2]] - p[f[0]]);
                const double sideOrigin = dot(n, R3{} - p[f[0]]);
                const double sideVertex = dot(n, p[f[3]] - p[f[0]]);
                inside = inside && sideOrigin * sideVertex > 0.0;
                expected = std::min(expected, pointTriangleDistance({}, p[f[0]], p[f[1]], p[f[2]]));
            }
            if (inside)
            {
                expected = 0.0;
            }
        }
        }
        const convex_detail::SimplexClosest s = closestOnSimplex(v, count);
        INFO("trial " << trial << " count " << count);
        REQUIRE(s.count >= 1);
        REQUIRE(s.count <= count);
        CHECK(std::fabs(std::sqrt(s.closestSquared) - expected) <= 1e-9 * (1.0 + expected));
        double weightSum = 0.0;
        DVec3 combination{0.0, 0.0, 0.0};
        for (int i = 0; i < s.count; ++i)
        {
            CHECK(s.barycentric[i] > 0.0);
            weightSum += s.barycentric[i];
            combination = combination + d[s.index[i]] * s.barycentric[i];
        }
        CHECK(std::fabs(weightSum - 1.0) <= 1e-12);
        CHECK(std::sqrt(lengthSquared(combination - s.closest)) <= 1e-9);
    }
}

TEST_CASE("GJK distance between spheres matches |c| - rA - rB", "[gjk]")
{
    std::mt19937 rng(1);
    for (int trial = 0; trial < 10000; ++trial)
    {
        const SphereShape a{uniform(rng, 0.05f, 2.0f)};
        const SphereShape b{uniform(rng, 0.05f, 2.0f)};
        const Transform pose = randomPose(rng, 4.0f);
        const R3 c = toR3(pose.p);
        const double expected = norm(c) - a.radius - b.radius;
        const GjkResult r = closest(a, b, pose);
        INFO("trial " << trial);
        checkAgainst(r, expected, 2e-6 * (norm(c) + a.radius + b.radius));
        CHECK(length(r.normal - normalize(pose.p)) <= 1e-5f);
        CHECK(length(r.pointOnA - r.normal * a.radius) <= 1e-5f * (a.radius + 1.0f));
    }
}

TEST_CASE("GJK distance between a sphere and a capsule matches the point-segment closed form", "[gjk]")
{
    std::mt19937 rng(2);
    for (int trial = 0; trial < 10000; ++trial)
    {
        const CapsuleShape capsule{uniform(rng, 0.05f, 2.0f), uniform(rng, 0.05f, 1.0f)};
        const SphereShape sphere{uniform(rng, 0.05f, 1.5f)};
        const Transform pose = randomPose(rng, 4.0f);
        const Pose p = poseOf(pose);
        const double radii = capsule.radius + sphere.radius;
        const double scale = 2e-6 * (norm(p.position) + capsule.halfHeight + radii);
        INFO("trial " << trial);
        // Capsule at the origin, sphere at pose; and the sphere at the origin, capsule at pose.
        const double sphereOut =
            pointSegmentDistance(p.position, {0, -capsule.halfHeight, 0}, {0, capsule.halfHeight, 0});
        checkAgainst(closest(capsule, sphere, pose), sphereOut - radii, scale);
        const double capsuleOut = pointSegmentDistance({}, p.apply({0, -capsule.halfHeight, 0}),
                                                       p.apply({0, capsule.halfHeight, 0}));
        checkAgainst(closest(sphere, capsule, pose), capsuleOut - radii, scale);
    }
}

TEST_CASE("GJK distance between capsules matches the segment-segment closed form", "[gjk]")
{
    std::mt19937 rng(3);
    for (int trial = 0; trial < 10000; ++trial)
    {
        const CapsuleShape a{uniform(rng, 0.05f, 2.0f), uniform(rng, 0.05f, 1.0f)};
        const CapsuleShape b{uniform(rng, 0.05f, 2.0f), uniform(rng, 0.05f, 1.0f)};
        const Transform pose = randomPose(rng, 4.0f);
        const Pose p = poseOf(pose);
        const double cores =
            segmentSegmentDistance({0, -a.halfHeight, 0}, {0, a.halfHeight, 0},
                                   p.apply({0, -b.halfHeight, 0}), p.apply({0, b.halfHeight, 0}));
        INFO("trial " << trial);
        checkAgainst(closest(a, b, pose), cores - a.radius - b.radius,
                     2e-6 * (norm(p.position) + a.halfHeight + b.halfHeight + a.radius + b.radius));
    }
}

TEST_CASE("GJK distance between a box and a sphere matches the point-box closed form", "[gjk]")
{
    std::mt19937 rng(4);
    for (int trial = 0; trial < 10000; ++trial)
    {
        const BoxShape box{randomVec(rng, 0.05f, 2.0f)};
        const SphereShape sphere{uniform(rng, 0.0f, 1.0f) < 0.2f ? 1e-3f : uniform(rng, 0.05f, 1.5f)};
        const Transform pose = randomPose(rng, 4.0f);
        const R3 c = toR3(pose.p);
        const R3 h = toR3(box.halfExtents);
        const double expected = pointBoxSignedDistance(c, h) - sphere.radius;
        const double tolerance = 2e-6 * (norm(c) + norm(h) + sphere.radius);
        INFO("trial " << trial);
        const GjkResult r = closest(box, sphere, pose);
        checkAgainst(r, expected, tolerance);
        if (pointBoxDistance(c, h) > tolerance)
        {
            // The closest point on the box is the clamped centre.
            const R3 onBox{std::clamp(c.x, -h.x, h.x), std::clamp(c.y, -h.y, h.y),
                           std::clamp(c.z, -h.z, h.z)};
            CHECK(norm(toR3(r.pointOnA) - onBox) <= 1e-3 * (1.0 + norm(h)));
        }
    }
}

TEST_CASE("GJK distance between boxes matches a brute force over their features", "[gjk]")
{
    std::mt19937 rng(5);
    int separated = 0;
    for (int trial = 0; trial < 10000; ++trial)
    {
        const BoxShape a{randomVec(rng, 0.05f, 1.5f)};
        const BoxShape b{randomVec(rng, 0.05f, 1.5f)};
        const Transform pose = randomPose(rng, 3.5f);
        const Pose p = poseOf(pose);
        const SatResult sat = boxBoxSat(a.halfExtents, b.halfExtents, p);
        const double scale = norm(p.position) + norm(toR3(a.halfExtents)) + norm(toR3(b.halfExtents));
        const double expected =
            sat.depth > 0.0 ? -sat.depth : boxBoxDistance(a.halfExtents, b.halfExtents, p);
        const GjkResult r = closest(a, b, pose);
        INFO("trial " << trial);
        if (expected > 0.0)
        {
            ++separated;
            checkAgainst(r, expected, 2e-6 * scale);
            // Witnesses lie on their boxes.
            const R3 onA = toR3(r.pointOnA);
            const R3 onB = p.applyInverse(toR3(r.pointOnB));
            CHECK(pointBoxDistance(onA, toR3(a.halfExtents)) <= 2e-6 * scale);
            CHECK(pointBoxDistance(onB, toR3(b.halfExtents)) <= 2e-6 * scale);
        }
        else
        {
            CHECK(r.status == GjkStatus::Intersecting);
        }
        CHECK(gjkIntersect(supportOf(a), transformed(supportOf(b), pose), pose.p) == (expected <= 0.0));
    }
    CHECK(separated > 3000);
}

TEST_CASE("GJK distance between point-set hulls matches qhull on their Minkowski difference", "[gjk]")
{
    std::mt19937 rng(6);
    int separated = 0;
    for (int trial = 0; trial < 2000; ++trial)
    {
        const std::vector<Vec3> pointsA = randomCloud(rng, 4 + trial % 13, randomVec(rng, 0.1f, 1.5f));
        const std::vector<Vec3> pointsB = randomCloud(rng, 4 + (trial / 13) % 13, randomVec(rng, 0.1f, 1.5f));
        const Transform pose = randomPose(rng, 3.0f);
        const MinkowskiAnswer oracle =
            minkowskiByQhull(placed(pointsA, Pose{}), placed(pointsB, poseOf(pose)));
        REQUIRE(oracle.ok);
        const HullSupport a{pointsA.data(), pointsA.size()};
        const HullSupport b{pointsB.data(), pointsB.size()};
        const GjkResult r = gjkClosestPoints(a, transformed(b, pose), pose.p);
        const double scale = 4.0 + norm(toR3(pose.p));
        INFO("trial " << trial);
        if (oracle.originInside)
        {
            CHECK(r.status == GjkStatus::Intersecting);
        }
        else
        {
            ++separated;
            checkAgainst(r, oracle.distance, 2e-6 * scale);
        }
    }
    CHECK(separated > 500);
}

TEST_CASE("GJK is symmetric, and blind to where the pair sits and how it is turned", "[gjk]")
{
    std::mt19937 rng(7);
    for (int trial = 0; trial < 3000; ++trial)
    {
        const BoxShape a{randomVec(rng, 0.05f, 1.5f)};
        const CapsuleShape b{uniform(rng, 0.05f, 1.5f), uniform(rng, 0.05f, 0.8f)};
        // World poses on a 2^-10 m grid, so that adding 1e4 m (where float spacing is 2^-10) is exact.
        auto snap = [](Vec3 v)
        {
            return Vec3{std::round(v.x * 1024.0f) / 1024.0f, std::round(v.y * 1024.0f) / 1024.0f,
                        std::round(v.z * 1024.0f) / 1024.0f};
        };
        const Transform worldA{snap(randomVec(rng, -2.0f, 2.0f)), randomRotation(rng)};
        const Transform worldB{snap(randomVec(rng, -2.0f, 2.0f) * 2.0f), randomRotation(rng)};
        const Transform bInA = relativeTransform(worldA, worldB);
        const GjkResult r = closest(a, b, bInA);
        INFO("trial " << trial);
        REQUIRE(r.status != GjkStatus::Indeterminate);
        const float tolerance = 1e-5f * (length(bInA.p) + 4.0f);

        // Swap: B's frame, A seen from B. Distance equal, normal reversed, witnesses exchanged.
        const Transform aInB = relativeTransform(worldB, worldA);
        const GjkResult s = closest(b, a, aInB);
        CHECK(s.status == r.status);
        CHECK(std::fabs(s.distance - r.distance) <= tolerance);
        if (r.status == GjkStatus::Separated)
        {
            CHECK(length(rotate(bInA.q, s.normal) + r.normal) <= 1e-4f);
            CHECK(length(transformPoint(bInA, s.pointOnA) - r.pointOnB) <= tolerance * 100.0f);
        }

        // Far away: the relative transform is bit-identical, and so is the answer.
        const Vec3 far{1e4f, -1e4f, 1e4f};
        const Transform bInAFar = relativeTransform({worldA.p + far, worldA.q}, {worldB.p + far, worldB.q});
        REQUIRE(bInAFar.p == bInA.p);
        const GjkResult f = closest(a, b, bInAFar);
        CHECK(f.distance == r.distance);
        CHECK(f.normal == r.normal);

        // Far away without the grid: positions round to 2^-10 m, and the answer moves by no more.
        const Vec3 jitter = randomVec(rng, -0.4f, 0.4f);
        const Transform bInAJitter =
            relativeTransform({worldA.p + far + jitter, worldA.q}, {worldB.p + far + jitter, worldB.q});
        const GjkResult j = closest(a, b, bInAJitter);
        CHECK(std::fabs(j.distance - r.distance) <= 4.0f * 0.0009765625f + tolerance);

        // The whole pair turned: same answer, turned normal.
        const Quat turn = randomRotation(rng);
        const Transform bInATurned = relativeTransform({rotate(turn, worldA.p), turn * worldA.q},
                                                       {rotate(turn, worldB.p), turn * worldB.q});
        const GjkResult t = closest(a, b, bInATurned);
        CHECK(t.status == r.status);
        CHECK(std::fabs(t.distance - r.distance) <= tolerance);
        if (r.status == GjkStatus::Separated && r.distance > 1e-3f)
        {
            CHECK(length(t.normal - r.normal) <= 1e-4f);
        }
    }
}

TEST_CASE("GJK on a grid of degenerate box configurations never returns NaN and never lies", "[gjk]")
{
    const float kTilts[] = {0.0f, 1e-6f, 1e-3f};
    const float kGaps[] = {-0.1f, -1e-4f, 0.0f, 1e-5f, 1e-3f, 0.1f};
    const Vec3 kShapes[] = {
        {0.5f, 0.5f, 0.5f}, {5.0f, 0.05f, 0.05f}, {0.05f, 5.0f, 5.0f}, {1.0f, 0.01f, 1.0f}};
    int cases = 0;
    for (const Vec3& ha : kShapes)
    {
        for (const Vec3& hb : kShapes)
        {
            for (float tilt : kTilts)
            {
                for (float gap : kGaps)
                {
                    for (int layout = 0; layout < 4; ++layout)
                    {
                        // 0: faces aligned, stacked along y; 1: offset sideways too; 2: edge on edge
                        // (both turned 45 degrees about crossing axes); 3: same box, same place.
                        Transform worldA{};
                        Transform worldB{};
                        const Quat tiltQ = quatFromAxisAngle(normalize(Vec3{1.0f, 2.0f, 3.0f}), tilt);
                        if (layout <= 1)
                        {
                            worldB.p = {layout == 1 ? 0.5f * ha.x : 0.0f, ha.y + hb.y + gap,
                                        layout == 1 ? 0.3f * ha.z : 0.0f};
                            worldB.q = tiltQ;
                        }
                        else if (layout == 2)
                        {
                            worldA.q = quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.25f * kPi);
                            worldB.q = quatFromAxisAngle({1.0f, 0.0f, 0.0f}, 0.25f * kPi) * tiltQ;
                            const float reachA = (ha.x + ha.y) * std::sqrt(0.5f);
                            const float reachB = (hb.y + hb.z) * std::sqrt(0.5f);
                            worldB.p = {0.0f, reachA + reachB + gap, 0.0f};
                        }
                        else
                        {
                            worldB = worldA;
                            worldB.q = worldB.q * tiltQ;
                        }
                        const Transform bInA = relativeTransform(worldA, worldB);
                        const BoxShape a{ha};
                        const BoxShape b{layout == 3 ? ha : hb};
                        const Pose p = poseOf(bInA);
                        const SatResult sat = boxBoxSat(a.halfExtents, b.halfExtents, p);
                        const double expected =
                            sat.depth > 0.0 ? -sat.depth : boxBoxDistance(a.halfExtents, b.halfExtents, p);
                        const GjkResult r = closest(a, b, bInA);
                        INFO("shapes " << ha.x << "," << hb.x << " tilt " << tilt << " gap " << gap
                                       << " layout " << layout);
                        ++cases;
                        const double scale = norm(p.position) + norm(toR3(ha)) + norm(toR3(hb));
                        checkAgainst(r, expected, 2e-6 * scale);
                    }
                }
            }
        }
    }
    CHECK(cases == 4 * 4 * 3 * 6 * 4);
}

TEST_CASE("GJK handles repeated and coplanar hull points", "[gjk]")
{
    std::mt19937 rng(8);
    for (int trial = 0; trial < 2000; ++trial)
    {
        // A flat polygon (all points on z = 0, some repeated) against a box.
        std::vector<Vec3> flat;
        for (int i = 0; i < 6; ++i)
        {
            flat.push_back({uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), 0.0f});
        }
        flat.push_back(flat[0]);
        flat.push_back(flat[3]);
        const BoxShape box{randomVec(rng, 0.1f, 1.0f)};
        const Transform pose = randomPose(rng, 2.5f);
        const Pose p = poseOf(pose);
        const std::array<R3, 8> corners = boxCorners(box.halfExtents, p);
        const MinkowskiAnswer oracle =
            minkowskiByQhull(placed(flat, Pose{}), std::vector<R3>(corners.begin(), corners.end()));
        REQUIRE(oracle.ok);
        const HullSupport polygon{flat.data(), flat.size()};
        const GjkResult r = gjkClosestPoints(polygon, transformed(supportOf(box), pose), pose.p);
        INFO("trial " << trial);
        checkAgainst(r, oracle.originInside ? -oracle.depth : oracle.distance,
                     2e-6 * (2.0 + norm(p.position)));
    }
}

TEST_CASE("GJK on a MinkowskiDifference against the origin agrees with GJK on the pair", "[gjk]")
{
    std::mt19937 rng(10);
    for (int trial = 0; trial < 2000; ++trial)
    {
        const BoxSupport a{randomVec(rng, 0.05f, 1.5f)};
        const Transform pose = randomPose(rng, 3.0f);
        const auto b = transformed(BoxSupport{randomVec(rng, 0.05f, 1.5f)}, pose);
        const MinkowskiDifference<BoxSupport, decltype(b)> difference{a, b};
        const Vec3 dir = randomUnit(rng);
        CHECK(difference.support(dir) == a.support(dir) - b.support(-dir));
        const GjkResult pair = gjkClosestPoints(a, b, pose.p);
        const GjkResult single = gjkClosestPoints(difference, PointSupport{}, -pose.p);
        INFO("trial " << trial);
        REQUIRE(pair.status != GjkStatus::Indeterminate);
        CHECK(single.status == pair.status);
        if (pair.status == GjkStatus::Separated)
        {
            CHECK(std::fabs(single.distance - pair.distance) <= 4e-6f * (length(pose.p) + 3.0f));
            // Both see the same set A - B and its point nearest the origin: the same normal.
            CHECK(length(single.normal - pair.normal) <= 1e-4f);
        }
    }
}

// EPA (through penetrationDepth: GJK, then EPA on the cores): depths, normals and witness points against
// closed forms (spheres, capsules, box-sphere), a 15-axis SAT (box-box) and qhull on the Minkowski
// difference (hulls, box-capsule); metamorphic checks; degenerate and flat configurations; EPA started
// from hand-made point, segment and triangle simplices; honest statuses under tight caps.
#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/support.h"

#include "physics/support_test_utils.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace polytope::physics;
using namespace convex_oracle;

namespace
{

template <class SA, class SB>
PenetrationResult penetrate(const SA& a, const SB& b, const Transform& bInA, const EpaSettings& settings = {})
{
    return penetrationDepth(supportOf(a), transformed(supportOf(b), bInA), bInA.p, settings);
}

Transform randomPose(std::mt19937& rng, float range)
{
    return {randomVec(rng, -range, range), randomRotation(rng)};
}

bool finite(const PenetrationResult& r)
{
    return std::isfinite(r.depth) && std::isfinite(r.distance) && std::isfinite(r.depthErrorBound) &&
           isFinite(r.normal) && isFinite(r.pointOnA) && isFinite(r.pointOnB);
}

/// Checks a result against the true overlap `expected` (metres; negative: minus the gap) within
/// `tolerance`. Whatever the status, it must not lie: NotColliding only when apart, and the true value
/// must lie within the reported error bound (plus `tolerance` for the reference's own rounding).
void checkPenetration(const PenetrationResult& r, double expected, double tolerance)
{
    INFO("expected overlap " << expected << " depth " << r.depth << " distance " << r.distance << " bound "
                             << r.depthErrorBound << " status " << int(r.status) << " epa iterations "
                             << r.epaIterations);
    REQUIRE(finite(r));
    CHECK(std::fabs(length(r.normal) - 1.0f) <= 1e-5f);
    CHECK(r.depth >= 0.0f);
    CHECK(r.distance >= 0.0f);
    CHECK(r.status != EpaStatus::Indeterminate);
    if (expected > tolerance)
    {
        CHECK(r.status != EpaStatus::NotColliding);
    }
    if (expected < -tolerance)
    {
        CHECK(r.status == EpaStatus::NotColliding);
    }
    const double reported = r.status == EpaStatus::NotColliding ? -double(r.distance) : double(r.depth);
    CHECK(std::fabs(reported - expected) <= tolerance);
    CHECK(std::fabs(reported - expected) <= double(r.depthErrorBound) + tolerance);
    if (r.status == EpaStatus::Colliding)
    {
        CHECK(length(r.pointOnA - r.pointOnB - r.normal * r.depth) <= float(tolerance) + 1e-6f);
    }
    else if (r.status == EpaStatus::NotColliding)
    {
        CHECK(length(r.pointOnB - r.pointOnA - r.normal * r.distance) <= float(tolerance) + 1e-6f);
    }
}

std::vector<R3> cornersOf(const Vec3& halfExtents, const Pose& pose)
{
    const std::array<R3, 8> c = boxCorners(halfExtents, pose);
    return {c.begin(), c.end()};
}

/// Errors of one random box-box sweep (relative to the depth, and to the pair's size).
struct BoxBoxSweep
{
    std::vector<double> relativeToDepth;
    std::vector<double> relativeToSize;
    int colliding = 0;
    int indeterminate = 0;
};

/// Random overlapping box pairs, checked against the 15-axis SAT.
BoxBoxSweep sweepBoxBox(std::uint32_t seed, int trials)
{
    std::mt19937 rng(seed);
    BoxBoxSweep sweep;
    for (int trial = 0; trial < trials; ++trial)
    {
        const BoxShape a{randomVec(rng, 0.05f, 1.5f)};
        const BoxShape b{randomVec(rng, 0.05f, 1.5f)};
        const Transform pose = randomPose(rng, 1.5f);
        const Pose p = poseOf(pose);
        const SatResult sat = boxBoxSat(a.halfExtents, b.halfExtents, p);
        const double size = norm(toR3(a.halfExtents)) + norm(toR3(b.halfExtents));
        const double scale = norm(p.position) + size;
        const PenetrationResult r = penetrate(a, b, pose);
        if (sat.depth <= 0.0)
        {
            INFO("trial " << trial);
            checkPenetration(r, sat.depth < 0.0 ? -boxBoxDistance(a.halfExtents, b.halfExtents, p) : 0.0,
                             2e-6 * scale);
            continue;
        }
        ++sweep.colliding;
        sweep.indeterminate += r.status == EpaStatus::Indeterminate ? 1 : 0;
        const double error = std::fabs(double(r.depth) - sat.depth);
        sweep.relativeToDepth.push_back(error / sat.depth);
        sweep.relativeToSize.push_back(error / size);
        INFO("trial " << trial << " sat depth " << sat.depth << " second " << sat.secondDepth);
        checkPenetration(r, sat.depth, 2e-6 * scale);
        // The normal is a direction of least overlap: B moved by depth along it just separates.
        const std::vector<R3> ca = cornersOf(a.halfExtents, Pose{});
        const std::vector<R3> cb = cornersOf(b.halfExtents, p);
        CHECK(std::fabs(overlapAlong(ca, cb, toR3(r.normal)) - sat.depth) <= 4e-6 * scale);
        if (sat.secondDepth - sat.depth > 1e-3 * size)
        {
            CHECK(norm(toR3(r.normal) - sat.normal) <= 1e-4);
        }
        // Witnesses: on the surfaces of their boxes.
        CHECK(std::fabs(pointBoxSignedDistance(toR3(r.pointOnA), toR3(a.halfExtents))) <= 4e-6 * scale);
        CHECK(std::fabs(pointBoxSignedDistance(p.applyInverse(toR3(r.pointOnB)), toR3(b.halfExtents))) <=
              4e-6 * scale);
    }
    return sweep;
}

} // namespace

TEST_CASE("EPA depth between spheres matches rA + rB - |c|, coincident centres included", "[epa]")
{
    std::mt19937 rng(11);
    for (int trial = 0; trial < 10000; ++trial)
    {
        const SphereShape a{uniform(rng, 0.05f, 2.0f)};
        const SphereShape b{uniform(rng, 0.05f, 2.0f)};
        Transform pose = randomPose(rng, 2.0f);
        if (trial % 10 == 0)
        {
            pose.p = {};
        }
        const double centres = norm(toR3(pose.p));
        const PenetrationResult r = penetrate(a, b, pose);
        INFO("trial " << trial);
        checkPenetration(r, a.radius + b.radius - centres, 2e-6 * (centres + a.radius + b.radius));
        if (centres > 1e-3)
        {
            CHECK(length(r.normal - normalize(pose.p)) <= 1e-5f);
        }
    }
}

TEST_CASE("EPA depth between spheres and capsules matches the closed forms", "[epa]")
{
    std::mt19937 rng(12);
    for (int trial = 0; trial < 10000; ++trial)
    {
        const CapsuleShape capsule{uniform(rng, 0.05f, 2.0f), uniform(rng, 0.05f, 1.0f)};
        const SphereShape sphere{uniform(rng, 0.05f, 1.5f)};
        Transform pose = randomPose(rng, 1.5f);
        if (trial % 10 == 0)
        {
            pose.p = {0.0f, uniform(rng, -capsule.halfHeight, capsule.halfHeight),
                      0.0f}; // centre on the axis
        }
        const Pose p = poseOf(pose);
        const double radii = capsule.radius + sphere.radius;
        const double tolerance = 2e-6 * (norm(p.position) + capsule.halfHeight + radii);
        const double cores =
            pointSegmentDistance(p.position, {0, -capsule.halfHeight, 0}, {0, capsule.halfHeight, 0});
        INFO("trial " << trial);
        const PenetrationResult r = penetrate(capsule, sphere, pose);
        checkPenetration(r, radii - cores, tolerance);
        if (cores < 1e-6)
        {
            CHECK(std::fabs(r.normal.y) <= 1e-5f); // across the axis
        }
        const PenetrationResult s = penetrate(sphere, capsule, pose);
        const double coresSwapped = pointSegmentDistance({}, p.apply({0, -capsule.halfHeight, 0}),
                                                         p.apply({0, capsule.halfHeight, 0}));
        checkPenetration(s, radii - coresSwapped, tolerance);
    }
}

TEST_CASE("EPA depth between capsules matches the closed form, crossing cores included", "[epa]")
{
    std::mt19937 rng(13);
    for (int trial = 0; trial < 10000; ++trial)
    {
        const CapsuleShape a{uniform(rng, 0.05f, 2.0f), uniform(rng, 0.05f, 1.0f)};
        const CapsuleShape b{uniform(rng, 0.05f, 2.0f), uniform(rng, 0.05f, 1.0f)};
        Transform pose = randomPose(rng, 1.5f);
        if (trial % 4 == 0)
        {
            // Cores crossing: B's centre on A's axis.
            pose.p = {0.0f, uniform(rng, -a.halfHeight, a.halfHeight), 0.0f};
        }
        else if (trial % 4 == 1)
        {
            // Parallel cores overlapping along their length.
            pose.q = Quat::identity();
            pose.p = {0.0f, uniform(rng, -a.halfHeight, a.halfHeight), 0.0f};
        }
        const Pose p = poseOf(pose);
        const R3 b0 = p.apply({0, -b.halfHeight, 0});
        const R3 b1 = p.apply({0, b.halfHeight, 0});
        const double cores = segmentSegmentDistance({0, -a.halfHeight, 0}, {0, a.halfHeight, 0}, b0, b1);
        const PenetrationResult r = penetrate(a, b, pose);
        INFO("trial " << trial << " core distance " << cores);
        checkPenetration(r, a.radius + b.radius - cores,
                         2e-6 * (norm(p.position) + a.halfHeight + b.halfHeight + a.radius + b.radius));
        if (cores == 0.0 && trial % 4 == 0)
        {
            // Crossing cores: the normal is perpendicular to both.
            CHECK(std::fabs(r.normal.y) <= 1e-4f);
            CHECK(std::fabs(dot(toR3(r.normal), unit(b1 - b0))) <= 1e-4);
        }
    }
}

TEST_CASE("EPA depth between a box and a sphere matches the point-box closed form", "[epa]")
{
    std::mt19937 rng(14);
    for (int trial = 0; trial < 10000; ++trial)
    {
        const BoxShape box{randomVec(rng, 0.05f, 2.0f)};
        const SphereShape sphere{uniform(rng, 0.05f, 1.5f)};
        const Transform pose{mulPerElem(randomVec(rng, -1.3f, 1.3f), box.halfExtents), randomRotation(rng)};
        const R3 c = toR3(pose.p);
        const R3 h = toR3(box.halfExtents);
        const double tolerance = 2e-6 * (norm(c) + norm(h) + sphere.radius);
        const PenetrationResult r = penetrate(box, sphere, pose);
        INFO("trial " << trial);
        checkPenetration(r, sphere.radius - pointBoxSignedDistance(c, h), tolerance);
        if (pointBoxDistance(c, h) == 0.0)
        {
            // Centre inside: the normal is the axis of the nearest face.
            const double gaps[3] = {h.x - std::fabs(c.x), h.y - std::fabs(c.y), h.z - std::fabs(c.z)};
            const int k = gaps[0] <= gaps[1] ? (gaps[0] <= gaps[2] ? 0 : 2) : (gaps[1] <= gaps[2] ? 1 : 2);
            const double second = std::min({gaps[(k + 1) % 3], gaps[(k + 2) % 3]});
            if (second - gaps[k] > 1e-4)
            {
                CHECK(std::fabs(std::fabs(r.normal[k]) - 1.0f) <= 1e-5f);
                CHECK(r.normal[k] * float(component(c, k)) >= 0.0f);
            }
        }
    }
}

TEST_CASE("EPA depth and normal between boxes match a 15-axis SAT", "[epa]")
{
    const BoxBoxSweep sweep = sweepBoxBox(15, 10000);
    CHECK(sweep.colliding > 5000);
    CHECK(sweep.indeterminate == 0);
    CHECK(quantile(sweep.relativeToDepth, 0.99) <= 1e-4);
    CHECK(quantile(sweep.relativeToSize, 1.0) <= 1e-5);
}

TEST_CASE("EPA depth between a box and a capsule matches qhull on the cores' Minkowski difference", "[epa]")
{
    std::mt19937 rng(16);
    for (int trial = 0; trial < 3000; ++trial)
    {
        const BoxShape box{randomVec(rng, 0.05f, 1.5f)};
        const CapsuleShape capsule{uniform(rng, 0.05f, 1.5f), uniform(rng, 0.02f, 0.8f)};
        const Transform pose = randomPose(rng, 1.8f);
        const Pose p = poseOf(pose);
        const std::vector<R3> segment = {p.apply({0, -capsule.halfHeight, 0}),
                                         p.apply({0, capsule.halfHeight, 0})};
        const MinkowskiAnswer oracle = minkowskiByQhull(cornersOf(box.halfExtents, Pose{}), segment);
        REQUIRE(oracle.ok);
        const double coreOverlap = oracle.originInside ? oracle.depth : -oracle.distance;
        const PenetrationResult r = penetrate(box, capsule, pose);
        INFO("trial " << trial);
        checkPenetration(
            r, capsule.radius + coreOverlap,
            2e-6 * (norm(p.position) + norm(toR3(box.halfExtents)) + capsule.halfHeight + capsule.radius));
    }
}

TEST_CASE("EPA depth between point-set hulls matches qhull on their Minkowski difference", "[epa]")
{
    std::mt19937 rng(17);
    int colliding = 0;
    for (int trial = 0; trial < 2000; ++trial)
    {
        const std::vector<Vec3> pointsA = randomCloud(rng, 4 + trial % 17, randomVec(rng, 0.1f, 1.5f));
        const std::vector<Vec3> pointsB = randomCloud(rng, 4 + (trial / 17) % 17, randomVec(rng, 0.1f, 1.5f));
        const Transform pose = randomPose(rng, 1.2f);
        const std::vector<R3> placedA = placed(pointsA, Pose{});
        const std::vector<R3> placedB = placed(pointsB, poseOf(pose));
        const MinkowskiAnswer oracle = minkowskiByQhull(placedA, placedB);
        REQUIRE(oracle.ok);
        const HullSupport a{pointsA.data(), pointsA.size()};
        const HullSupport b{pointsB.data(), pointsB.size()};
        const PenetrationResult r = penetrationDepth(a, transformed(b, pose), pose.p);
        const double scale = 3.0 + norm(toR3(pose.p));
        INFO("trial " << trial);
        checkPenetration(r, oracle.originInside ? oracle.depth : -oracle.distance, 2e-6 * scale);
        if (oracle.originInside)
        {
            ++colliding;
            CHECK(std::fabs(overlapAlong(placedA, placedB, toR3(r.normal)) - oracle.depth) <= 4e-6 * scale);
        }
    }
    CHECK(colliding > 500);
}

TEST_CASE("EPA is symmetric, and blind to where the pair sits and how it is turned", "[epa]")
{
    std::mt19937 rng(18);
    for (int trial = 0; trial < 3000; ++trial)
    {
        const BoxShape a{randomVec(rng, 0.05f, 1.5f)};
        const BoxShape b{randomVec(rng, 0.05f, 1.5f)};
        auto snap = [](Vec3 v)
        {
            return Vec3{std::round(v.x * 1024.0f) / 1024.0f, std::round(v.y * 1024.0f) / 1024.0f,
                        std::round(v.z * 1024.0f) / 1024.0f};
        };
        const Transform worldA{snap(randomVec(rng, -1.0f, 1.0f)), randomRotation(rng)};
        const Transform worldB{snap(worldA.p + randomVec(rng, -1.2f, 1.2f)), randomRotation(rng)};
        const Transform bInA = relativeTransform(worldA, worldB);
        const PenetrationResult r = penetrate(a, b, bInA);
        const float size = length(a.halfExtents) + length(b.halfExtents);
        const float tolerance = 4e-6f * (length(bInA.p) + size);
        INFO("trial " << trial);
        REQUIRE(r.status != EpaStatus::Indeterminate);
        const std::vector<R3> ca = cornersOf(a.halfExtents, Pose{});
        const std::vector<R3> cb = cornersOf(b.halfExtents, poseOf(bInA));

        // Swap: same depth; the normal, brought to A's frame, is reversed (checked as a least-overlap
        // direction, since ties between faces make the normal itself non-unique).
        const Transform aInB = relativeTransform(worldB, worldA);
        const PenetrationResult s = penetrate(b, a, aInB);
        CHECK(s.status == r.status);
        if (r.status == EpaStatus::Colliding)
        {
            CHECK(std::fabs(s.depth - r.depth) <= tolerance);
            const Vec3 flipped = -rotate(bInA.q, s.normal);
            CHECK(std::fabs(overlapAlong(ca, cb, toR3(flipped)) - double(r.depth)) <= 2.0 * tolerance);
        }
        else
        {
            CHECK(std::fabs(s.distance - r.distance) <= tolerance);
        }

        // Far away on the grid: the relative transform and the answer are bit-identical.
        const Vec3 far{-1e4f, 1e4f, 1e4f};
        const Transform bInAFar = relativeTransform({worldA.p + far, worldA.q}, {worldB.p + far, worldB.q});
        REQUIRE(bInAFar.p == bInA.p);
        const PenetrationResult f = penetrate(a, b, bInAFar);
        CHECK(f.depth == r.depth);
        CHECK(f.normal == r.normal);

        // Far away off the grid: world positions round to 2^-10 m; the depth moves by no more.
        const Vec3 jitter = randomVec(rng, -0.4f, 0.4f);
        const PenetrationResult j = penetrate(
            a, b,
            relativeTransform({worldA.p + far + jitter, worldA.q}, {worldB.p + far + jitter, worldB.q}));
        CHECK(std::fabs(j.depth - r.depth) <= 4.0f * 0.0009765625f + tolerance);

        // The whole pair turned: same depth.
        const Quat turn = randomRotation(rng);
        const PenetrationResult t = penetrate(a, b,
                                              relativeTransform({rotate(turn, worldA.p), turn * worldA.q},
                                                                {rotate(turn, worldB.p), turn * worldB.q}));
        CHECK(t.status == r.status);
        CHECK(std::fabs(t.depth - r.depth) <= tolerance);
        if (r.status == EpaStatus::Colliding)
        {
            CHECK(std::fabs(overlapAlong(ca, cb, toR3(t.normal)) - double(r.depth)) <= 2.0 * tolerance);
        }
    }
}

TEST_CASE("EPA on a grid of degenerate box configurations never returns NaN and never lies", "[epa]")
{
    const float kTilts[] = {0.0f, 1e-6f, 1e-3f};
    const float kGaps[] = {-0.3f, -0.01f, -1e-4f, 0.0f, 1e-5f, 0.1f};
    const Vec3 kShapes[] = {
        {0.5f, 0.5f, 0.5f}, {5.0f, 0.05f, 0.05f}, {0.05f, 5.0f, 5.0f}, {1.0f, 0.01f, 1.0f}};
    int cases = 0;
    int simplexCounts[5] = {};
    for (const Vec3& ha : kShapes)
    {
        for (const Vec3& hb : kShapes)
        {
            for (float tilt : kTilts)
            {
                for (float gap : kGaps)
                {
                    for (int layout = 0; layout < 5; ++layout)
                    {
                        // 0: faces aligned, stacked along y; 1: offset sideways too; 2: edge on edge
                        // (turned 45 degrees about crossing axes); 3: corner on corner; 4: same box, same
                        // place.
                        Transform worldA{};
                        Transform worldB{};
                        const Quat tiltQ = quatFromAxisAngle(normalize(Vec3{1.0f, 2.0f, 3.0f}), tilt);
                        Vec3 hbUsed = hb;
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
                        else if (layout == 3)
                        {
                            worldB.p = ha + hb + Vec3{gap, gap, gap};
                            worldB.q = tiltQ;
                        }
                        else
                        {
                            hbUsed = ha;
                            worldB.q = tiltQ;
                            worldB.p = {gap, 0.0f, 0.0f};
                        }
                        const Transform bInA = relativeTransform(worldA, worldB);
                        const BoxShape a{ha};
                        const BoxShape b{hbUsed};
                        const Pose p = poseOf(bInA);
                        const SatResult sat = boxBoxSat(a.halfExtents, b.halfExtents, p);
                        const double expected =
                            sat.depth > 0.0 ? sat.depth : -boxBoxDistance(a.halfExtents, b.halfExtents, p);
                        const GjkResult g =
                            gjkClosestPoints(supportOf(a), transformed(supportOf(b), bInA), bInA.p);
                        if (g.status == GjkStatus::Intersecting)
                        {
                            ++simplexCounts[g.simplex.count];
                        }
                        const PenetrationResult r = penetrate(a, b, bInA);
                        INFO("shapes " << ha.x << "," << hb.x << " tilt " << tilt << " gap " << gap
                                       << " layout " << layout);
                        ++cases;
                        const double scale = norm(p.position) + norm(toR3(ha)) + norm(toR3(hbUsed));
                        checkPenetration(r, expected, 2e-6 * scale);
                        if (r.status == EpaStatus::Colliding && expected > 2e-6 * scale)
                        {
                            CHECK(std::fabs(overlapAlong(cornersOf(a.halfExtents, Pose{}),
                                                         cornersOf(b.halfExtents, p), toR3(r.normal)) -
                                            expected) <= 4e-6 * scale);
                        }
                    }
                }
            }
        }
    }
    CHECK(cases == 4 * 4 * 3 * 6 * 5);
    // Touching configurations end GJK on lower-dimensional simplices, which EPA had to grow.
    INFO("GJK simplex sizes at intersection: " << simplexCounts[1] << " " << simplexCounts[2] << " "
                                               << simplexCounts[3] << " " << simplexCounts[4]);
    CHECK(simplexCounts[1] + simplexCounts[2] + simplexCounts[3] > 0);
}

TEST_CASE("EPA grows point, segment and triangle simplices of touching boxes into a tetrahedron", "[epa]")
{
    // Unit boxes, B resting on A's top face: the Minkowski difference has the face y = 0 through the
    // origin, with corners (+-2, 0, +-2) among its points.
    const BoxSupport box{{1.0f, 1.0f, 1.0f}};
    const Transform onTop{{0.0f, 2.0f, 0.0f}, Quat::identity()};
    const auto boxB = transformed(box, onTop);
    auto vertexAlong = [&](Vec3 dir, GjkSimplex& s, int i)
    {
        s.pointsOnA[i] = box.support(dir);
        s.pointsOnB[i] = boxB.support(-dir);
    };
    GjkSimplex segment;
    segment.count = 2;
    vertexAlong({1.0f, 1.0f, 1.0f}, segment, 0);   // (2, 0, 2)
    vertexAlong({-1.0f, 1.0f, -1.0f}, segment, 1); // (-2, 0, -2)
    segment.barycentric[0] = segment.barycentric[1] = 0.5f;
    GjkSimplex triangle;
    triangle.count = 3;
    vertexAlong({1.0f, 1.0f, 1.0f}, triangle, 0);  // (2, 0, 2)
    vertexAlong({-1.0f, 1.0f, 1.0f}, triangle, 1); // (-2, 0, 2)
    vertexAlong({0.0f, 1.0f, -1.0f}, triangle, 2); // (0 or +-2, 0, -2)
    triangle.barycentric[0] = triangle.barycentric[1] = 0.25f;
    triangle.barycentric[2] = 0.5f;
    for (const GjkSimplex& start : {segment, triangle})
    {
        const PenetrationResult r = epaPenetration(box, boxB, start, 2.0f);
        INFO("simplex of " << start.count);
        CHECK(r.status == EpaStatus::Colliding);
        CHECK(r.depth <= 1e-6f);
        CHECK(length(r.normal - Vec3{0.0f, 1.0f, 0.0f}) <= 1e-6f);
    }
    // Corner on corner: the Minkowski difference has a vertex at the origin.
    const Transform cornerToCorner{{2.0f, 2.0f, 2.0f}, Quat::identity()};
    const auto cornerB = transformed(box, cornerToCorner);
    GjkSimplex point;
    point.count = 1;
    point.pointsOnA[0] = box.support({1.0f, 1.0f, 1.0f});
    point.pointsOnB[0] = cornerB.support({-1.0f, -1.0f, -1.0f});
    point.barycentric[0] = 1.0f;
    const PenetrationResult r = epaPenetration(box, cornerB, point, 2.0f);
    CHECK(r.status == EpaStatus::Colliding);
    CHECK(r.depth <= 1e-6f);
    CHECK(overlapAlong(cornersOf({1.0f, 1.0f, 1.0f}, Pose{}),
                       cornersOf({1.0f, 1.0f, 1.0f}, poseOf(cornerToCorner)), toR3(r.normal)) <= 1e-6);
}

TEST_CASE("EPA on flat Minkowski differences: the radii make up the whole depth", "[epa]")
{
    // Coincident sphere centres: the cores' difference is a point.
    const PenetrationResult spheres = penetrate(SphereShape{0.5f}, SphereShape{0.25f}, Transform{});
    CHECK(spheres.status == EpaStatus::Colliding);
    CHECK(spheres.depth == Approx(0.75f).margin(1e-6f));
    // A sphere centred on a capsule's axis: a segment, the normal across it.
    const PenetrationResult onAxis =
        penetrate(CapsuleShape{1.0f, 0.3f}, SphereShape{0.2f}, Transform{{0.0f, 0.4f, 0.0f}, {}});
    CHECK(onAxis.status == EpaStatus::Colliding);
    CHECK(onAxis.depth == Approx(0.5f).margin(1e-6f));
    CHECK(std::fabs(onAxis.normal.y) <= 1e-6f);
    // Crossing capsule cores (B's axis along z): a parallelogram in the y-z plane; the normal is +-x.
    const Transform crossing{{0.0f, 0.25f, 0.0f}, quatFromAxisAngle({1.0f, 0.0f, 0.0f}, 0.5f * kPi)};
    const PenetrationResult capsules =
        penetrate(CapsuleShape{1.0f, 0.3f}, CapsuleShape{0.7f, 0.1f}, crossing);
    CHECK(capsules.status == EpaStatus::Colliding);
    CHECK(capsules.depth == Approx(0.4f).margin(1e-6f));
    CHECK(std::fabs(std::fabs(capsules.normal.x) - 1.0f) <= 1e-5f);
    CHECK(length(capsules.pointOnA - capsules.pointOnB - capsules.normal * capsules.depth) <= 1e-5f);
    // Identical capsules in the same place: a segment along y.
    const PenetrationResult same = penetrate(CapsuleShape{1.0f, 0.3f}, CapsuleShape{1.0f, 0.3f}, Transform{});
    CHECK(same.status == EpaStatus::Colliding);
    CHECK(same.depth == Approx(0.6f).margin(1e-6f));
    CHECK(std::fabs(same.normal.y) <= 1e-6f);
}

TEST_CASE("EPA under tight caps stops with the best face and an honest status", "[epa]")
{
    std::mt19937 rng(19);
    int indeterminate = 0;
    for (int trial = 0; trial < 3000; ++trial)
    {
        const BoxShape a{randomVec(rng, 0.05f, 1.5f)};
        const BoxShape b{randomVec(rng, 0.05f, 1.5f)};
        const Transform pose = randomPose(rng, 1.0f);
        const Pose p = poseOf(pose);
        const SatResult sat = boxBoxSat(a.halfExtents, b.halfExtents, p);
        if (sat.depth <= 0.0)
        {
            continue;
        }
        EpaSettings settings;
        settings.maxIterations = trial % 4;
        const PenetrationResult r = penetrate(a, b, pose, settings);
        const double scale = norm(p.position) + norm(toR3(a.halfExtents)) + norm(toR3(b.halfExtents));
        INFO("trial " << trial << " cap " << settings.maxIterations);
        REQUIRE(finite(r));
        CHECK(r.status != EpaStatus::NotColliding);
        CHECK(r.epaIterations <= settings.maxIterations);
        // The true depth lies in [depth, depth + bound] (up to rounding); Colliding also means the bound
        // is within the accepting tolerance.
        CHECK(sat.depth >= double(r.depth) - 2e-6 * scale);
        CHECK(sat.depth <= double(r.depth) + double(r.depthErrorBound) + 2e-6 * scale);
        if (r.status == EpaStatus::Colliding)
        {
            CHECK(std::fabs(sat.depth - double(r.depth)) <= 1e-4 * scale + 2e-6 * scale);
        }
        indeterminate += r.status == EpaStatus::Indeterminate ? 1 : 0;
    }
    CHECK(indeterminate > 100);
}

TEST_CASE("EPA's polytope stays a closed, linked, convex mesh as it grows", "[epa]")
{
    using convex_detail::EpaGrowth;
    using convex_detail::EpaPolytope;
    using convex_detail::SupportVertex;
    std::mt19937 rng(21);
    auto onSphere = [&]()
    {
        SupportVertex v;
        v.onA = randomUnit(rng);
        v.onB = {};
        v.w = {v.onA.x, v.onA.y, v.onA.z};
        return v;
    };
    int expansions = 0;
    for (int trial = 0; trial < 100; ++trial)
    {
        // A turned regular tetrahedron around the origin (EPA's polytope always holds the origin).
        const Quat turn = randomRotation(rng);
        const Vec3 corners[4] = {{1, 1, 1}, {1, -1, -1}, {-1, 1, -1}, {-1, -1, 1}};
        SupportVertex tetrahedron[4];
        for (int i = 0; i < 4; ++i)
        {
            tetrahedron[i].onA = rotate(turn, corners[i] * 0.57735026f);
            tetrahedron[i].onB = {};
            tetrahedron[i].w = {tetrahedron[i].onA.x, tetrahedron[i].onA.y, tetrahedron[i].onA.z};
        }
        EpaPolytope polytope;
        if (!polytope.init(tetrahedron))
        {
            continue;
        }
        REQUIRE(polytope.isClosedMesh());
        for (int step = 0; step < 150; ++step)
        {
            const SupportVertex w = onSphere();
            int seenBy = -1;
            double height = 1e-9;
            for (int f = 0; f < polytope.faceEnd; ++f)
            {
                const auto& face = polytope.faces[f];
                const double h = face.alive ? dot(face.normal, w.w) - face.distance : 0.0;
                if (h > height)
                {
                    height = h;
                    seenBy = f;
                }
            }
            if (seenBy < 0)
            {
                continue;
            }
            int closest = -1;
            const EpaGrowth growth = polytope.expand(seenBy, w, 1e-12, closest);
            INFO("trial " << trial << " step " << step << " growth " << int(growth));
            REQUIRE(polytope.isClosedMesh());
            if (growth != EpaGrowth::Expanded)
            {
                CHECK(growth == EpaGrowth::Capacity);
                break;
            }
            ++expansions;
            CHECK(closest == polytope.closestFace());
            if (step % 8 != 0)
            {
                continue;
            }
            // Convex (sampled every few steps, it is quadratic): every vertex on or behind every face.
            double worst = -1.0;
            for (int f = 0; f < polytope.faceEnd; ++f)
            {
                const auto& face = polytope.faces[f];
                for (int i = 0; i < polytope.vertexCount && face.alive; ++i)
                {
                    worst = std::max(worst, dot(face.normal, polytope.vertices.at[i].w) - face.distance);
                }
            }
            CHECK(worst <= 1e-9);
        }
    }
    CHECK(expansions > 5000);
}

TEST_CASE("EPA and GJK answer NaN or infinite input with Indeterminate, never with NaN", "[epa][gjk]")
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const BoxShape box{{0.5f, 0.5f, 0.5f}};
    const Transform bad[] = {{{nan, 0.0f, 0.0f}, {}},
                             {{0.0f, inf, 0.0f}, {}},
                             {{0.1f, 0.0f, 0.0f}, {nan, 0.0f, 0.0f, 1.0f}},
                             {{0.1f, 0.0f, 0.0f}, {inf, 0.0f, 0.0f, 1.0f}}};
    for (const Transform& pose : bad)
    {
        const PenetrationResult r = penetrate(box, box, pose);
        CHECK(finite(r));
        CHECK(r.status == EpaStatus::Indeterminate);
        const PenetrationResult s = penetrate(CapsuleShape{0.5f, 0.2f}, SphereShape{0.3f}, pose);
        CHECK(finite(s));
        CHECK(s.status == EpaStatus::Indeterminate);
        const GjkResult g = gjkClosestPoints(supportOf(box), transformed(supportOf(box), pose), pose.p);
        CHECK(g.status == GjkStatus::Indeterminate);
        CHECK((std::isfinite(g.distance) && isFinite(g.normal) && isFinite(g.pointOnA) &&
               isFinite(g.pointOnB)));
        CHECK(gjkIntersect(supportOf(box), transformed(supportOf(box), pose), pose.p));
    }
    // A hull with a NaN point, first (always returned by the scan) or in the middle (returned never).
    for (int where = 0; where < 2; ++where)
    {
        std::vector<Vec3> points = {
            {0.5f, 0.5f, 0.5f}, {-0.5f, 0.5f, -0.5f}, {0.5f, -0.5f, -0.5f}, {-0.5f, -0.5f, 0.5f}};
        points.insert(points.begin() + (where == 0 ? 0 : 2), Vec3{nan, 0.0f, 0.0f});
        const HullSupport hull{points.data(), points.size()};
        const Transform pose{{0.2f, 0.1f, 0.0f}, {}};
        const PenetrationResult r = penetrationDepth(hull, transformed(supportOf(box), pose), pose.p);
        CHECK(finite(r));
    }
}

// Shape casts (shape_cast.h) against oracles built from the engine's other convex code: the signed
// distance of two shapes at any fraction from GJK (gjkClosestPoints, exact for rounded shapes while their
// cores are apart) and EPA (penetrationDepth) once the cores overlap, both run with tolerances of 1e-9
// instead of the engine's 1e-6 so that the oracle's own error stays below what it measures; and the
// narrowphase (collideShapes). The cast shares only GJK's simplex sub-algorithm with the oracle (it calls
// penetrationDepth itself for overlapping starts, where the test checks that EPA's answer is passed on). The
// signed distance is convex in the fraction, so a golden-section search finds the closest approach on
// [0, maxFraction]; the sweep misses when that is positive, and otherwise a bisection on [0, closest] finds
// the time of impact. Planes and sphere pairs also have closed forms.
//
// Every moving type (sphere, capsule, box, hull) against every target type (the same and the plane), with
// seeded random sizes (0.05 to 10 m, log-uniform), rotations and sweeps; then closed forms (sphere-sphere,
// anything-plane), starts overlapping, grazing sweeps constructed to pass at +-1e-4 m, zero-length casts,
// maxFraction, long (1e3 m) and short (1e-3 m) sweeps, boxes sliding along faces, axis-aligned shapes on a
// grid (exact face, edge and vertex contacts), a box against its hull, casts moved 1e4 m from the origin
// (bit-identical fraction and normal), and invalid input.
//
// What is checked at a hit (s: the size scale, the larger bounding radius of the two shapes):
// - hit or miss agrees with the oracle, unless the closest approach is within 1e-5 s of touching;
// - the oracle's signed distance at the reported fraction is within 3e-6 s of 0;
// - the fraction is within 1e-4 of the oracle's, unless the approach is grazing (the relative velocity's
//   component along the normal below 0.05 s per unit fraction, where 1e-6 s of distance is worth more than
//   1e-4 of fraction); always, the distance error along the normal |fraction error| * |normal . translation|
//   is within 1e-5 s;
// - the point is on the target's surface and on the moving shape's (signed distances within 1e-5 s);
// - the normal is unit, and the plane through the point with that normal separates the shapes (each
//   reaches at most 1e-5 s across it). Where the normal is unique and well conditioned, it must also be
//   within 1e-3 rad of the oracle's (its normal at the reported fraction): always when a
//   shape is rounded (the Minkowski difference is then smooth), and for two polytopes when every direction
//   1e-3 rad from the oracle's normal fails the separating-plane test by more than 2e-5 s. The other
//   polytope contacts (at or near an edge or vertex of the Minkowski difference: edge-edge parallel,
//   vertex-vertex, vertex-edge) admit a range of normals and are checked by the plane test alone;
// - the narrowphase, given a margin of 2e-5 s, reports a contact at the reported fraction.
// At starts (fraction 0): the oracle agrees that the shapes touch or overlap, and the depth is EPA's.
#include "polytope/physics/shape_cast.h"

#include "polytope/physics/dvec3.h"
#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/hull.h"
#include "polytope/physics/narrowphase.h"
#include "polytope/physics/support.h"

#include "physics/convex_minimum.h"
#include "physics/random_shapes.h"
#include "physics/signed_distance_oracle.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <vector>

using namespace polytope::physics;
using physics_test::ConvexMinimum;
using physics_test::minimiseConvex;
using physics_test::oracleDistance;
using physics_test::randomRotation;
using physics_test::uniform;

namespace
{

constexpr ShapeType kMovingTypes[] = {ShapeType::Sphere, ShapeType::Capsule, ShapeType::Box, ShapeType::Hull};
constexpr ShapeType kTargetTypes[] = {ShapeType::Sphere, ShapeType::Capsule, ShapeType::Box, ShapeType::Hull,
                                      ShapeType::Plane};

const char* nameOf(ShapeType type)
{
    switch (type)
    {
    case ShapeType::Sphere:
        return "sphere";
    case ShapeType::Capsule:
        return "capsule";
    case ShapeType::Box:
        return "box";
    case ShapeType::Hull:
        return "hull";
    case ShapeType::Plane:
        return "plane";
    default:
        break;
    }
    return "?";
}

Vec3 randomUnit(std::mt19937& rng)
{
    std::normal_distribution<float> n(0.0f, 1.0f);
    return normalize(Vec3{n(rng), n(rng), n(rng)});
}

/// Log-uniform in [0.05, 10] metres.
float randomSize(std::mt19937& rng)
{
    return 0.05f * std::pow(200.0f, uniform(rng, 0.0f, 1.0f));
}

/// A random shape of `type`; hulls are appended to `hulls` (random point clouds scaled to 0.05 .. 10 m).
Shape randomShape(std::mt19937& rng, ShapeType type, std::vector<ConvexHull>& hulls)
{
    switch (type)
    {
    case ShapeType::Sphere:
        return Shape::makeSphere(randomSize(rng));
    case ShapeType::Capsule:
    {
        const float halfHeight = randomSize(rng);
        return Shape::makeCapsule(halfHeight, randomSize(rng));
    }
    case ShapeType::Box:
    {
        const float x = randomSize(rng);
        const float y = randomSize(rng);
        return Shape::makeBox({x, y, randomSize(rng)});
    }
    case ShapeType::Hull:
    {
        const float scale = randomSize(rng);
        std::vector<Vec3> points = physics_test::randomShellPoints(rng, 8, 24, 0.8f);
        Vec3 mean{};
        for (const Vec3& p : points)
        {
            mean += p / float(points.size());
        }
        for (Vec3& p : points)
        {
            p = (p - mean) * scale; // the origin inside, as the sweeps aimed at it assume
        }
        const HullResult built = buildConvexHull(points);
        REQUIRE(built.ok());
        hulls.push_back(built.hull);
        Shape s;
        s.type = ShapeType::Hull;
        s.hullIndex = static_cast<std::uint32_t>(hulls.size() - 1);
        return s;
    }
    case ShapeType::Plane:
        return Shape::makePlane(randomUnit(rng), uniform(rng, -1.0f, 1.0f));
    default:
        break;
    }
    return {};
}

using physics_test::boundOf;

bool isRounded(ShapeType type)
{
    return type == ShapeType::Sphere || type == ShapeType::Capsule;
}

/// One cast, in world terms.
struct CastCase
{
    Shape moving;
    Shape target;
    Transform start;
    Transform targetTransform;
    Vec3 translation;
    float maxFraction = 1.0f;
};

ShapeCastInput inputOf(const CastCase& c)
{
    ShapeCastInput in;
    in.shape = c.moving;
    in.start = c.start;
    in.translation = c.translation;
    in.maxFraction = c.maxFraction;
    return in;
}

/// q * v * conj(q) in double, with q normalised in double first.
DVec3 rotateDouble(const Quat& q, const DVec3& v)
{
    const double len =
        std::sqrt(double(q.x) * q.x + double(q.y) * q.y + double(q.z) * q.z + double(q.w) * q.w);
    const DVec3 u{q.x / len, q.y / len, q.z / len};
    const DVec3 t = cross(u, v) * 2.0;
    return v + t * (q.w / len) + cross(u, t);
}

/// The moving shape's pose at fraction t in the target's frame. The offset is formed in double so that
/// far-away or long sweeps keep their precision near the contact.
Transform movingPose(const CastCase& c, double t)
{
    const DVec3 world = toDouble(c.start.p) + toDouble(c.translation) * t - toDouble(c.targetTransform.p);
    return {toFloat(rotateDouble(conjugate(c.targetTransform.q), world)),
            normalize(conjugate(c.targetTransform.q) * c.start.q)};
}

/// A point given in world coordinates, in the target's frame (double offset).
Vec3 toTargetFrame(const CastCase& c, const Vec3& world)
{
    return toFloat(
        rotateDouble(conjugate(c.targetTransform.q), toDouble(world) - toDouble(c.targetTransform.p)));
}

/// Signed distance between the shapes at fraction t (negative: penetration depth); `normal` (optional) gets
/// the normal from the target toward the moving shape, in the target's frame.
double signedDistance(const CastCase& c, double t, std::span<const ConvexHull> hulls, Vec3* normal = nullptr)
{
    const Transform pose = movingPose(c, t);
    if (c.target.type == ShapeType::Plane)
    {
        const DVec3 raw = toDouble(c.target.plane.normal);
        const double len = length(raw);
        const Vec3 n = toFloat(raw * (1.0 / len));
        if (normal != nullptr)
        {
            *normal = n;
        }
        return withSupport(c.moving, hulls,
                           [&](const auto& m) {
                               return dot(raw, toDouble(transformed(m, pose).support(-n))) / len -
                                      double(c.target.plane.offset) / len;
                           });
    }
    return withSupport(c.target, hulls,
                       [&](const auto& target)
                       {
                           return withSupport(
                               c.moving, hulls,
                               [&](const auto& m)
                               { return oracleDistance(target, transformed(m, pose), pose.p, normal); });
                       });
}

/// Signed distance from a point (target frame) to the target's surface.
double pointToTarget(const CastCase& c, const Vec3& p, std::span<const ConvexHull> hulls)
{
    if (c.target.type == ShapeType::Plane)
    {
        const DVec3 raw = toDouble(c.target.plane.normal);
        return (dot(raw, toDouble(p)) - double(c.target.plane.offset)) / length(raw);
    }
    return withSupport(c.target, hulls,
                       [&](const auto& target)
                       { return oracleDistance(target, PointSupport{p}, p, nullptr); });
}

/// Signed distance from a point (target frame) to the moving shape's surface at fraction t.
double pointToMoving(const CastCase& c, double t, const Vec3& p, std::span<const ConvexHull> hulls)
{
    const Transform pose = movingPose(c, t);
    return withSupport(c.moving, hulls,
                       [&](const auto& m)
                       { return oracleDistance(transformed(m, pose), PointSupport{p}, p, nullptr); });
}

/// How far the shapes reach across the plane through `point` with unit normal `n` (target frame; the target
/// should be below, the moving shape above): the larger of the two, <= 0 when the plane separates them.
double planeViolation(const CastCase& c, double t, const Vec3& point, const Vec3& n,
                      std::span<const ConvexHull> hulls)
{
    const Transform pose = movingPose(c, t);
    const double below =
        withSupport(c.moving, hulls,
                    [&](const auto& m) { return double(dot(n, transformed(m, pose).support(-n) - point)); });
    if (c.target.type == ShapeType::Plane)
    {
        // The half-space reaches across any plane that is not parallel to it; only its own normal counts.
        const double tilt = double(length(cross(n, c.target.plane.normal)));
        return std::max(-below, tilt > 1e-6 ? std::numeric_limits<double>::infinity() : 0.0);
    }
    const double above = withSupport(
        c.target, hulls, [&](const auto& target) { return double(dot(n, target.support(n) - point)); });
    return std::max(above, -below);
}

using Oracle = physics_test::SweepOracle;

Oracle oracleCast(const CastCase& c, std::span<const ConvexHull> hulls)
{
    return physics_test::sweepOracle([&](double t) { return signedDistance(c, t, hulls); }, c.maxFraction);
}

/// Worst errors seen, for the summary.
struct Stats
{
    int cases = 0;
    int hits = 0;
    int misses = 0;
    int starts = 0;
    int ambiguous = 0;
    int degenerateNormals = 0;
    int checkedNormals = 0;
    double fractionError = 0.0;    ///< absolute, non-grazing hits
    double alongNormalError = 0.0; ///< |fraction error| * |n . translation| / s
    double distanceAtHit = 0.0;    ///< |oracle signed distance at the reported fraction| / s
    double pointOffTarget = 0.0;   ///< / s
    double pointOffMoving = 0.0;   ///< / s
    double planeViolation = 0.0;   ///< / s
    double normalAngle = 0.0;      ///< radians, where checked
    int maxIterations = 0;
};

/// Casts `c` and checks it against the oracle (see the file comment). Returns whether the cast hit.
/// `absoluteFraction`: also check the fraction within 1e-4 of the oracle's (off for sweeps so short that
/// the oracle's own distance tolerance is worth more than that).
bool checkCast(const CastCase& c, std::span<const ConvexHull> hulls, Stats& stats,
               bool absoluteFraction = true)
{
    const double scale = std::max({boundOf(c.moving, hulls), boundOf(c.target, hulls), 1e-6});
    ShapeCastHit hit;
    const bool got = castShape(inputOf(c), c.target, c.targetTransform, hulls, hit);
    const Oracle oracle = oracleCast(c, hulls);
    ++stats.cases;
    INFO("moving " << nameOf(c.moving.type) << " target " << nameOf(c.target.type) << " scale " << scale
                   << " oracle hit " << oracle.hit << " at " << oracle.fraction << " closest "
                   << oracle.closestDistance << "; cast hit " << got << " at " << hit.fraction);
    const bool ambiguous = std::fabs(oracle.closestDistance) <= 1e-5 * scale;
    if (ambiguous)
    {
        ++stats.ambiguous;
    }
    else
    {
        CHECK(got == oracle.hit);
    }
    if (!got)
    {
        ++stats.misses;
        return false;
    }
    ++stats.hits;
    stats.maxIterations = std::max(stats.maxIterations, hit.iterations);
    CHECK(hit.fraction >= 0.0f);
    CHECK(hit.fraction <= c.maxFraction);
    CHECK(std::fabs(length(hit.normal) - 1.0f) < 1e-5f);

    const double t = hit.fraction;
    Vec3 oracleNormal;
    const double distance = signedDistance(c, t, hulls, &oracleNormal);
    const Vec3 point = toTargetFrame(c, hit.point);
    const Vec3 normal = inverseRotate(c.targetTransform.q, hit.normal);

    if (hit.fraction == 0.0f && (hit.startPenetrating || oracle.fraction == 0.0))
    {
        ++stats.starts;
        // At the start: the oracle agrees that they touch or overlap, and the depth is EPA's.
        CHECK(distance <= 1e-5 * scale);
        if (hit.startPenetrating)
        {
            CHECK(std::fabs(hit.penetrationDepth - std::max(0.0, -distance)) <= 1e-5 * scale);
        }
        else
        {
            CHECK(hit.penetrationDepth == 0.0f);
        }
        CHECK(planeViolation(c, t, point, normal, hulls) <= 1e-5 * scale + hit.penetrationDepth);
        return true;
    }
    CHECK_FALSE(hit.startPenetrating);
    CHECK(hit.penetrationDepth == 0.0f);

    stats.distanceAtHit = std::max(stats.distanceAtHit, std::fabs(distance) / scale);
    CHECK(std::fabs(distance) <= 3e-6 * scale);

    if (oracle.hit)
    {
        const double error = std::fabs(t - oracle.fraction);
        const Vec3 localTranslation = inverseRotate(c.targetTransform.q, c.translation);
        const double approach = std::fabs(double(dot(oracleNormal, localTranslation)));
        stats.alongNormalError = std::max(stats.alongNormalError, error * approach / scale);
        CHECK(error * approach <= 1e-5 * scale);
        if (absoluteFraction && approach >= 0.05 * scale)
        {
            stats.fractionError = std::max(stats.fractionError, error);
            CHECK(error <= 1e-4);
        }
    }

    const double offTarget = std::fabs(pointToTarget(c, point, hulls));
    const double offMoving = std::fabs(pointToMoving(c, t, point, hulls));
    stats.pointOffTarget = std::max(stats.pointOffTarget, offTarget / scale);
    stats.pointOffMoving = std::max(stats.pointOffMoving, offMoving / scale);
    CHECK(offTarget <= 1e-5 * scale);
    CHECK(offMoving <= 1e-5 * scale);

    const double violation = planeViolation(c, t, point, normal, hulls);
    stats.planeViolation = std::max(stats.planeViolation, violation / scale);
    CHECK(violation <= 1e-5 * scale);

    // Is the normal unique and well conditioned? Rounded pairs: always (smooth Minkowski difference).
    // Polytope pairs: when every direction 1e-3 rad from the oracle's fails the plane test clearly.
    bool wellConditioned =
        isRounded(c.moving.type) || isRounded(c.target.type) || c.target.type == ShapeType::Plane;
    if (!wellConditioned)
    {
        Vec3 t1;
        Vec3 t2;
        orthonormalBasis(oracleNormal, t1, t2);
        wellConditioned = true;
        for (int k = 0; k < 8; ++k)
        {
            const float angle = float(k) * kPi / 4.0f;
            const Vec3 tilted =
                normalize(oracleNormal + (t1 * std::cos(angle) + t2 * std::sin(angle)) * 1e-3f);
            wellConditioned = wellConditioned && planeViolation(c, t, point, tilted, hulls) > 2e-5 * scale;
        }
    }
    if (wellConditioned)
    {
        ++stats.checkedNormals;
        const double angle =
            std::atan2(double(length(cross(normal, oracleNormal))), double(dot(normal, oracleNormal)));
        stats.normalAngle = std::max(stats.normalAngle, angle);
        CHECK(angle <= 1e-3);
    }
    else
    {
        ++stats.degenerateNormals;
    }

    // The narrowphase agrees that they touch there (margin: the tolerance).
    if (c.target.type != ShapeType::Plane)
    {
        Transform moved = c.start;
        moved.p = c.start.p + c.translation * hit.fraction;
        const ContactManifold m =
            collideShapes(c.target, c.targetTransform, c.moving, moved, float(2e-5 * scale), hulls);
        CHECK(m.pointCount > 0);
    }
    return true;
}

/// A random pair for a sweep: the moving shape turned at random (its start position and translation are
/// left to the caller), the target within 5 m of the origin in the plane z = 0, turned at random.
CastCase randomPair(std::mt19937& rng, ShapeType movingType, ShapeType targetType,
                    std::vector<ConvexHull>& hulls)
{
    CastCase c;
    c.moving = randomShape(rng, movingType, hulls);
    c.target = randomShape(rng, targetType, hulls);
    c.targetTransform = {Vec3{uniform(rng, -5.0f, 5.0f), uniform(rng, -5.0f, 5.0f), 0.0f},
                         randomRotation(rng)};
    c.start.q = randomRotation(rng);
    return c;
}

/// Aims `c` at `aim` from `back` metres away along `direction`, sweeping twice that distance. Against a
/// plane the sweep is tilted into it (halfway between `direction` and the plane's inward normal), so that
/// it meets the plane whatever the direction.
void aimThrough(CastCase& c, const Vec3& aim, Vec3 direction, float back)
{
    if (c.target.type == ShapeType::Plane)
    {
        const Vec3 n = rotate(c.targetTransform.q, c.target.plane.normal);
        direction = normalize(-n + direction * 0.5f); // into the plane
    }
    c.start.p = aim - direction * back;
    c.translation = direction * (2.0f * back);
}

/// A random sweep of `moving` toward (near) `target`: a mix of hits, misses, grazes and overlapping starts.
CastCase randomCase(std::mt19937& rng, ShapeType movingType, ShapeType targetType,
                    std::vector<ConvexHull>& hulls)
{
    CastCase c;
    c.moving = randomShape(rng, movingType, hulls);
    c.target = randomShape(rng, targetType, hulls);
    c.targetTransform = {
        Vec3{uniform(rng, -5.0f, 5.0f), uniform(rng, -5.0f, 5.0f), uniform(rng, -5.0f, 5.0f)},
        randomRotation(rng)};
    c.start.q = randomRotation(rng);
    const double bMoving = boundOf(c.moving, hulls);
    const double bTarget = targetType == ShapeType::Plane ? bMoving : boundOf(c.target, hulls);
    const float reach = float(bMoving + bTarget);
    Vec3 aim = c.targetTransform.p + randomUnit(rng) * (uniform(rng, 0.0f, 1.2f) * reach);
    if (targetType == ShapeType::Plane)
    {
        // Aim at the plane's surface point nearest the target's origin, give or take.
        const Vec3 n = rotate(c.targetTransform.q, c.target.plane.normal);
        aim = c.targetTransform.p + n * c.target.plane.offset +
              randomUnit(rng) * (uniform(rng, 0.0f, 1.2f) * reach);
    }
    const Vec3 direction = randomUnit(rng);
    const float back = reach * uniform(rng, 0.7f, 2.0f);
    c.start.p = aim - direction * back;
    c.translation = direction * (back * uniform(rng, 0.3f, 2.5f));
    c.maxFraction = uniform(rng, 0.0f, 1.0f) < 0.8f ? 1.0f : uniform(rng, 0.0f, 1.0f);
    return c;
}

} // namespace

TEST_CASE("shape casts match a bisection on the signed distance for every pair of types", "[shapecast]")
{
    std::mt19937 rng(20240611u);
    Stats total;
    for (ShapeType movingType : kMovingTypes)
    {
        for (ShapeType targetType : kTargetTypes)
        {
            Stats stats;
            int hits = 0;
            for (int i = 0; i < 150; ++i)
            {
                std::vector<ConvexHull> hulls;
                const CastCase c = randomCase(rng, movingType, targetType, hulls);
                hits += checkCast(c, hulls, stats) ? 1 : 0;
            }
            // A useful mix: both outcomes well represented (planes, being infinite, are missed less).
            INFO(nameOf(movingType) << " against " << nameOf(targetType));
            CHECK(hits > 20);
            CHECK(stats.misses > 10);
            total.cases += stats.cases;
            total.hits += stats.hits;
            total.misses += stats.misses;
            total.starts += stats.starts;
            total.ambiguous += stats.ambiguous;
            total.degenerateNormals += stats.degenerateNormals;
            total.checkedNormals += stats.checkedNormals;
            total.fractionError = std::max(total.fractionError, stats.fractionError);
            total.alongNormalError = std::max(total.alongNormalError, stats.alongNormalError);
            total.distanceAtHit = std::max(total.distanceAtHit, stats.distanceAtHit);
            total.pointOffTarget = std::max(total.pointOffTarget, stats.pointOffTarget);
            total.pointOffMoving = std::max(total.pointOffMoving, stats.pointOffMoving);
            total.planeViolation = std::max(total.planeViolation, stats.planeViolation);
            total.normalAngle = std::max(total.normalAngle, stats.normalAngle);
            total.maxIterations = std::max(total.maxIterations, stats.maxIterations);
        }
    }
    WARN("shape casts: " << total.cases << " cases, " << total.hits << " hits (" << total.starts
                         << " at start), " << total.misses << " misses, " << total.ambiguous
                         << " ambiguous; worst fraction error " << total.fractionError << ", along normal "
                         << total.alongNormalError << " s, distance at hit " << total.distanceAtHit
                         << " s, point off target " << total.pointOffTarget << " s, off moving "
                         << total.pointOffMoving << " s, plane violation " << total.planeViolation
                         << " s, normal angle " << total.normalAngle << " rad (" << total.checkedNormals
                         << " checked, " << total.degenerateNormals << " degenerate), max iterations "
                         << total.maxIterations);
}

TEST_CASE("sphere against sphere matches the closed form", "[shapecast]")
{
    std::mt19937 rng(7u);
    int hits = 0;
    int misses = 0;
    double worstFraction = 0.0;
    double worstNormal = 0.0;
    for (int i = 0; i < 2000; ++i)
    {
        const float ra = randomSize(rng);
        const float rb = randomSize(rng);
        const Transform target{
            Vec3{uniform(rng, -3.0f, 3.0f), uniform(rng, -3.0f, 3.0f), uniform(rng, -3.0f, 3.0f)},
            randomRotation(rng)};
        const float reach = ra + rb;
        ShapeCastInput in;
        in.shape = Shape::makeSphere(ra);
        in.start = {target.p + randomUnit(rng) * (reach * uniform(rng, 0.5f, 3.0f)), randomRotation(rng)};
        const Vec3 aim = target.p + randomUnit(rng) * (reach * uniform(rng, 0.0f, 2.0f));
        in.translation = (aim - in.start.p) * uniform(rng, 0.5f, 2.0f);

        // Closed form in double: |s + t r| = ra + rb.
        const DVec3 s = toDouble(in.start.p) - toDouble(target.p);
        const DVec3 r = toDouble(in.translation);
        const double R = double(ra) + double(rb);
        const double a = dot(r, r);
        const double b = dot(s, r);
        const double c = dot(s, s) - R * R;
        const double disc = b * b - a * c;
        bool expectHit = false;
        double expected = 0.0;
        if (c <= 0.0)
        {
            expectHit = true;
        }
        else if (b < 0.0 && disc >= 0.0)
        {
            expected = c / (-b + std::sqrt(disc));
            expectHit = expected <= 1.0;
        }
        // Skip near-tangent sweeps and ones ending within a hair of touching.
        const bool tangent = std::fabs(disc) <= 1e-4 * a * R * R;
        const bool endTouch = std::fabs(length(s + r) - R) <= 1e-5 * R;
        if (tangent || endTouch)
        {
            continue;
        }
        ShapeCastHit hit;
        const bool got = castShape(in, Shape::makeSphere(rb), target, {}, hit);
        INFO("case " << i);
        REQUIRE(got == expectHit);
        if (!got)
        {
            ++misses;
            continue;
        }
        ++hits;
        if (c <= 0.0)
        {
            CHECK(hit.fraction == 0.0f);
            CHECK(hit.startPenetrating);
            CHECK(hit.penetrationDepth == Approx(R - length(s)).margin(1e-6 * R));
            continue;
        }
        worstFraction = std::max(worstFraction, std::fabs(hit.fraction - expected));
        CHECK(hit.fraction == Approx(expected).margin(1e-5));
        const DVec3 centre = s + r * expected;
        const DVec3 n = centre * (1.0 / length(centre));
        const double angle = length(cross(toDouble(hit.normal), n));
        worstNormal = std::max(worstNormal, angle);
        CHECK(angle <= 1e-5);
        const DVec3 point = toDouble(target.p) + n * double(rb);
        CHECK(length(toDouble(hit.point) - point) <= 1e-5 * R + 1e-6);
    }
    CHECK(hits > 300);
    CHECK(misses > 300);
    WARN("sphere-sphere: " << hits << " hits, " << misses << " misses; worst fraction error " << worstFraction
                           << ", normal " << worstNormal << " rad");
}

TEST_CASE("shapes against a plane match the closed form", "[shapecast]")
{
    std::mt19937 rng(11u);
    double worstFraction = 0.0;
    int hits = 0;
    for (ShapeType movingType : kMovingTypes)
    {
        for (int i = 0; i < 300; ++i)
        {
            std::vector<ConvexHull> hulls;
            const Shape moving = randomShape(rng, movingType, hulls);
            const Shape plane = Shape::makePlane(randomUnit(rng), uniform(rng, -2.0f, 2.0f));
            const Transform target{
                Vec3{uniform(rng, -3.0f, 3.0f), uniform(rng, -3.0f, 3.0f), uniform(rng, -3.0f, 3.0f)},
                randomRotation(rng)};
            const double bound = boundOf(moving, hulls);
            const double normalLength = length(toDouble(plane.plane.normal));
            const DVec3 nd = rotateDouble(target.q, toDouble(plane.plane.normal) * (1.0 / normalLength));
            const DVec3 onPlane = toDouble(target.p) + nd * (double(plane.plane.offset) / normalLength);
            const Vec3 n = toFloat(nd);
            ShapeCastInput in;
            in.shape = moving;
            in.start = {toFloat(onPlane) + n * float(bound * uniform(rng, -0.5f, 3.0f)) +
                            randomUnit(rng) * 2.0f,
                        randomRotation(rng)};
            in.translation =
                (randomUnit(rng) - n * uniform(rng, 0.0f, 1.5f)) * float(bound * uniform(rng, 0.5f, 4.0f));

            // Closed form: the lowest point of the moving shape along n, by brute force over its features.
            double lowest = std::numeric_limits<double>::infinity();
            const DVec3 o = toDouble(in.start.p) - onPlane;
            auto consider = [&](const Vec3& local, double radius)
            { lowest = std::min(lowest, dot(nd, o + rotateDouble(in.start.q, toDouble(local))) - radius); };
            switch (movingType)
            {
            case ShapeType::Sphere:
                consider({}, moving.sphere.radius);
                break;
            case ShapeType::Capsule:
                consider({0.0f, moving.capsule.halfHeight, 0.0f}, moving.capsule.radius);
                consider({0.0f, -moving.capsule.halfHeight, 0.0f}, moving.capsule.radius);
                break;
            case ShapeType::Box:
                for (int k = 0; k < 8; ++k)
                {
                    const Vec3& h = moving.box.halfExtents;
                    consider({k & 1 ? h.x : -h.x, k & 2 ? h.y : -h.y, k & 4 ? h.z : -h.z}, 0.0);
                }
                break;
            default:
                for (const Vec3& v : hulls[moving.hullIndex].vertices)
                {
                    consider(v, 0.0);
                }
                break;
            }
            const double closing = -dot(nd, toDouble(in.translation));
            const bool startTouch = lowest <= 1e-6 * bound;
            const double expected = startTouch ? 0.0 : lowest / closing;
            const bool expectHit = startTouch || (closing > 0.0 && expected <= 1.0);
            ShapeCastHit hit;
            const bool got = castShape(in, plane, target, hulls, hit);
            INFO(nameOf(movingType) << " case " << i);
            REQUIRE(got == expectHit);
            if (!got)
            {
                continue;
            }
            ++hits;
            CHECK(hit.fraction == Approx(expected).margin(1e-5));
            worstFraction = std::max(worstFraction, std::fabs(hit.fraction - expected));
            CHECK(length(cross(hit.normal, n)) <= 1e-6f);
            CHECK(dot(hit.normal, n) > 0.0f);
            CHECK(hit.startPenetrating == (lowest <= 0.0));
            CHECK(hit.penetrationDepth == Approx(std::max(0.0, -lowest)).margin(1e-5 * bound));
            CHECK(std::fabs(dot(nd, toDouble(hit.point) - onPlane)) <= 1e-5 * bound + 1e-5);
            CHECK(hit.iterations == 0);
        }
    }
    CHECK(hits > 400);
    WARN("plane: " << hits << " hits; worst fraction error " << worstFraction);
}

TEST_CASE("overlapping starts report EPA's penetration depth and normal", "[shapecast]")
{
    std::mt19937 rng(13u);
    int starts = 0;
    for (ShapeType movingType : kMovingTypes)
    {
        for (ShapeType targetType : kTargetTypes)
        {
            if (targetType == ShapeType::Plane)
            {
                continue; // the plane's closed form is tested above
            }
            for (int i = 0; i < 60; ++i)
            {
                std::vector<ConvexHull> hulls;
                CastCase c;
                c.moving = randomShape(rng, movingType, hulls);
                c.target = randomShape(rng, targetType, hulls);
                c.targetTransform = {Vec3{uniform(rng, -5.0f, 5.0f), 1.0f, 2.0f}, randomRotation(rng)};
                const double reach = boundOf(c.moving, hulls) + boundOf(c.target, hulls);
                c.start = {c.targetTransform.p + randomUnit(rng) * float(reach * uniform(rng, 0.0f, 0.4f)),
                           randomRotation(rng)};
                c.translation = randomUnit(rng) * float(reach * uniform(rng, 0.0f, 2.0f));
                const double d0 = signedDistance(c, 0.0, hulls);
                if (!(d0 < -1e-5 * reach))
                {
                    continue;
                }
                ShapeCastHit hit;
                REQUIRE(castShape(inputOf(c), c.target, c.targetTransform, hulls, hit));
                ++starts;
                CHECK(hit.fraction == 0.0f);
                CHECK(hit.startPenetrating);
                const Transform pose = movingPose(c, 0.0);
                const PenetrationResult expected = withSupport(
                    c.target, hulls,
                    [&](const auto& target)
                    {
                        return withSupport(c.moving, hulls,
                                           [&](const auto& m) {
                                               return penetrationDepth(target, transformed(m, pose), pose.p);
                                           });
                    });
                CHECK(hit.penetrationDepth == Approx(expected.depth).margin(1e-6 * reach));
                CHECK(length(hit.normal - rotate(c.targetTransform.q, expected.normal)) <= 1e-5f);
                CHECK(length(toTargetFrame(c, hit.point) - expected.pointOnA) <= 1e-5 * reach);
            }
        }
    }
    CHECK(starts > 300);
}

TEST_CASE("grazing sweeps passing 1e-4 m apart miss, and 1e-4 m overlapping hit", "[shapecast]")
{
    std::mt19937 rng(17u);
    Stats stats;
    int pairs = 0;
    for (ShapeType movingType : kMovingTypes)
    {
        for (ShapeType targetType : kTargetTypes)
        {
            for (int i = 0; i < 25; ++i)
            {
                std::vector<ConvexHull> hulls;
                CastCase c = randomPair(rng, movingType, targetType, hulls);
                const double bMoving = boundOf(c.moving, hulls);
                const float reach =
                    float(bMoving + (targetType == ShapeType::Plane ? bMoving : boundOf(c.target, hulls)));
                Vec3 direction = randomUnit(rng);
                Vec3 centre = c.targetTransform.p;
                if (targetType == ShapeType::Plane)
                {
                    // Sweep parallel to the plane (the only way to graze a half-space).
                    const Vec3 n = rotate(c.targetTransform.q, c.target.plane.normal);
                    direction = normalize(direction - n * dot(direction, n));
                    centre = centre + n * (c.target.plane.offset + float(bMoving));
                }
                c.start.p = centre - direction * (2.0f * reach) + randomUnit(rng) * reach;
                c.translation = direction * (4.0f * reach);
                // Closest approach along the sweep, and the normal there.
                double bestT = 0.5; // a sweep parallel to a plane is equally close everywhere
                if (targetType != ShapeType::Plane)
                {
                    double lo = 0.0;
                    double hi = 1.0;
                    for (int k = 0; k < 60; ++k)
                    {
                        const double m1 = lo + (hi - lo) / 3.0;
                        const double m2 = hi - (hi - lo) / 3.0;
                        if (signedDistance(c, m1, hulls) < signedDistance(c, m2, hulls))
                        {
                            hi = m2;
                        }
                        else
                        {
                            lo = m1;
                        }
                    }
                    bestT = 0.5 * (lo + hi);
                }
                const double best = signedDistance(c, bestT, hulls);
                if (!(best > 1e-3 * reach) || bestT < 0.05 || bestT > 0.95)
                {
                    continue; // overlapping at the closest approach, or not inside the sweep: no clean graze
                }
                Vec3 localNormal;
                signedDistance(c, bestT, hulls, &localNormal);
                const Vec3 normal = rotate(c.targetTransform.q, localNormal);
                ++pairs;
                for (const double pass : {1e-4, -1e-4})
                {
                    CastCase shifted = c;
                    // Moving the sweep along the closest-approach normal changes its closest distance by
                    // exactly the shift (the distance is 1-Lipschitz and the closest pair moves by the full
                    // shift).
                    shifted.start.p = c.start.p - normal * float(best - pass);
                    ShapeCastHit hit;
                    const bool got =
                        castShape(inputOf(shifted), shifted.target, shifted.targetTransform, hulls, hit);
                    INFO(nameOf(movingType)
                         << " against " << nameOf(targetType) << " pass " << pass << " case " << i);
                    CHECK(got == (pass < 0.0));
                    if (pass < 0.0)
                    {
                        checkCast(shifted, hulls, stats, false);
                    }
                }
            }
        }
    }
    CHECK(pairs > 200);
    WARN("grazing: " << pairs << " pairs; hits: distance at hit " << stats.distanceAtHit
                     << " s, along normal " << stats.alongNormalError << " s, normal angle "
                     << stats.normalAngle << " rad, max iterations " << stats.maxIterations);
}

TEST_CASE("zero-length casts and maxFraction 0 are overlap tests", "[shapecast]")
{
    std::mt19937 rng(19u);
    int overlapping = 0;
    int apart = 0;
    for (ShapeType movingType : kMovingTypes)
    {
        for (ShapeType targetType : kTargetTypes)
        {
            for (int i = 0; i < 40; ++i)
            {
                std::vector<ConvexHull> hulls;
                CastCase c = randomCase(rng, movingType, targetType, hulls);
                const double scale = std::max(boundOf(c.moving, hulls), boundOf(c.target, hulls));
                const bool useZeroLength = (i % 2) == 0;
                c.start.p = c.start.p + c.translation * uniform(rng, 0.3f, 0.9f); // nearer: some overlap
                if (useZeroLength)
                {
                    c.translation = {};
                }
                else
                {
                    c.maxFraction = 0.0f;
                }
                const double d0 = signedDistance(c, 0.0, hulls);
                if (std::fabs(d0) <= 1e-5 * scale)
                {
                    continue;
                }
                ShapeCastHit hit;
                const bool got = castShape(inputOf(c), c.target, c.targetTransform, hulls, hit);
                INFO(nameOf(movingType) << " against " << nameOf(targetType) << " d0 " << d0);
                REQUIRE(got == (d0 < 0.0));
                if (got)
                {
                    ++overlapping;
                    CHECK(hit.fraction == 0.0f);
                    CHECK(hit.startPenetrating);
                    CHECK(hit.penetrationDepth == Approx(-d0).margin(1e-5 * scale));
                }
                else
                {
                    ++apart;
                }
            }
        }
    }
    CHECK(overlapping > 100);
    CHECK(apart > 100);
}

TEST_CASE("a box resting on a box touches at fraction 0, sliding along the face or not", "[shapecast]")
{
    // Two unit boxes stacked exactly: touching, with zero depth, whichever way the upper one moves.
    const Shape box = Shape::makeBox({0.5f, 0.5f, 0.5f});
    const Transform target{};
    for (const Vec3 translation : {Vec3{1.0f, 0.0f, 0.0f}, Vec3{0.3f, 0.0f, -2.0f}, Vec3{0.0f, 1.0f, 0.0f},
                                   Vec3{0.0f, -1.0f, 0.0f}, Vec3{}})
    {
        ShapeCastInput in;
        in.shape = box;
        in.start.p = {0.25f, 1.0f, 0.0f};
        in.start.q = quatFromAxisAngle({0.0f, 1.0f, 0.0f}, 0.3f); // turned about the normal: still flat
        in.translation = translation;
        ShapeCastHit hit;
        REQUIRE(castShape(in, box, target, {}, hit));
        CHECK(hit.fraction == 0.0f);
        CHECK(hit.penetrationDepth <= 1e-6f);
        CHECK(hit.normal.y == Approx(1.0f).margin(1e-6));
        CHECK(hit.point.y == Approx(0.5f).margin(1e-6));
    }
    // Apart by half the tolerance: still a hit at 0; by twice the tolerance, moving away: a miss.
    const double tolerance = kShapeCastRelativeTolerance * length(Vec3{0.5f, 0.5f, 0.5f});
    for (const double gap : {0.5 * tolerance, 2.0 * tolerance})
    {
        ShapeCastInput in;
        in.shape = box;
        in.start.p = {0.25f, float(1.0 + gap), 0.0f};
        in.translation = {0.0f, 1.0f, 0.0f};
        ShapeCastHit hit;
        CHECK(castShape(in, box, target, {}, hit) == (gap < tolerance));
    }
}

TEST_CASE("maxFraction is honoured", "[shapecast]")
{
    std::mt19937 rng(23u);
    int checked = 0;
    for (ShapeType movingType : kMovingTypes)
    {
        for (ShapeType targetType : kTargetTypes)
        {
            for (int i = 0; i < 30; ++i)
            {
                std::vector<ConvexHull> hulls;
                CastCase c = randomCase(rng, movingType, targetType, hulls);
                c.maxFraction = 1.0f;
                const double scale = std::max(boundOf(c.moving, hulls), boundOf(c.target, hulls));
                const Oracle oracle = oracleCast(c, hulls);
                if (!oracle.hit || oracle.fraction < 0.01)
                {
                    continue;
                }
                // Stop short of the impact, where the shapes are still clearly apart: a miss.
                CastCase shortCase = c;
                shortCase.maxFraction = float(oracle.fraction - 0.005);
                if (signedDistance(shortCase, shortCase.maxFraction, hulls) <= 1e-5 * scale)
                {
                    continue; // grazing: the shapes are within the tolerance long before the impact
                }
                ++checked;
                ShapeCastHit hit;
                INFO(nameOf(movingType) << " against " << nameOf(targetType));
                CHECK_FALSE(castShape(inputOf(shortCase), c.target, c.targetTransform, hulls, hit));
                CastCase longCase = c;
                longCase.maxFraction = float(oracle.fraction + 0.005);
                REQUIRE(castShape(inputOf(longCase), c.target, c.targetTransform, hulls, hit));
                CHECK(hit.fraction <= longCase.maxFraction);
                CHECK(hit.fraction == Approx(oracle.fraction).margin(1e-4));
                // maxFraction exactly at the unrestricted cast's impact: the same hit.
                ShapeCastHit full;
                REQUIRE(castShape(inputOf(c), c.target, c.targetTransform, hulls, full));
                CastCase exact = c;
                exact.maxFraction = full.fraction;
                REQUIRE(castShape(inputOf(exact), c.target, c.targetTransform, hulls, hit));
                CHECK(hit.fraction == full.fraction);
            }
        }
    }
    CHECK(checked > 150);
}

TEST_CASE("long (1e3 m) and short (1e-3 m) sweeps", "[shapecast]")
{
    std::mt19937 rng(29u);
    Stats shortStats;
    double worstLongMetres = 0.0;
    int longHits = 0;
    for (ShapeType movingType : kMovingTypes)
    {
        for (ShapeType targetType : kTargetTypes)
        {
            for (int i = 0; i < 20; ++i)
            {
                std::vector<ConvexHull> hulls;
                CastCase c = randomPair(rng, movingType, targetType, hulls);
                const double bMoving = boundOf(c.moving, hulls);
                const double scale = std::max(bMoving, boundOf(c.target, hulls));
                Vec3 centre = c.targetTransform.p;
                if (targetType == ShapeType::Plane)
                {
                    const Vec3 n = rotate(c.targetTransform.q, c.target.plane.normal);
                    centre = centre + n * c.target.plane.offset;
                }
                // Long: start 1e3 m out, sweep 2e3 m at the target, aimed near its centre (no grazing).
                {
                    const Vec3 direction = randomUnit(rng);
                    CastCase longCase = c;
                    const Vec3 aim =
                        centre +
                        randomUnit(rng) * float(0.1 * std::min(bMoving, targetType == ShapeType::Plane
                                                                            ? bMoving
                                                                            : boundOf(c.target, hulls)));
                    aimThrough(longCase, aim, direction, 1000.0f);
                    const Oracle oracle = oracleCast(longCase, hulls);
                    ShapeCastHit hit;
                    const bool got = castShape(inputOf(longCase), c.target, c.targetTransform, hulls, hit);
                    INFO("long " << nameOf(movingType) << " against " << nameOf(targetType));
                    REQUIRE(oracle.hit);
                    REQUIRE(got);
                    ++longHits;
                    // Float fractions of a 2e3 m sweep resolve 1.2e-4 m: half of that is rounding.
                    const double metres = std::fabs(hit.fraction - oracle.fraction) * 2000.0;
                    worstLongMetres = std::max(worstLongMetres, metres);
                    CHECK(metres <= 1e-4 + 1e-5 * scale);
                    const Vec3 point = toTargetFrame(longCase, hit.point);
                    CHECK(std::fabs(pointToTarget(longCase, point, hulls)) <= 1e-5 * scale);
                }
                // Short: a 1e-3 m sweep that starts up to 1e-3 m away.
                {
                    const Vec3 direction = randomUnit(rng);
                    CastCase shortCase = c;
                    aimThrough(shortCase, centre, direction, float(3.0 * scale));
                    const Oracle oracle = oracleCast(shortCase, hulls);
                    INFO("short " << nameOf(movingType) << " against " << nameOf(targetType) << " closest "
                                  << oracle.closestDistance << " d(0.5) "
                                  << signedDistance(shortCase, 0.5, hulls) << " d(0) "
                                  << signedDistance(shortCase, 0.0, hulls) << " scale " << scale);
                    REQUIRE(oracle.hit);
                    REQUIRE(oracle.fraction > 0.0);
                    // Back up to 0.5e-3 m before the impact, and sweep 1e-3 m.
                    const Vec3 unit = normalize(shortCase.translation);
                    shortCase.start.p = shortCase.start.p + shortCase.translation * float(oracle.fraction) -
                                        unit * uniform(rng, 0.0f, 1e-3f);
                    shortCase.translation = unit * 1e-3f;
                    checkCast(shortCase, hulls, shortStats, false);
                }
            }
        }
    }
    CHECK(longHits == 4 * 5 * 20);
    WARN("long sweeps: worst fraction error "
         << worstLongMetres << " m along the sweep; short sweeps: " << shortStats.hits
         << " hits, distance at hit " << shortStats.distanceAtHit << " s, along normal "
         << shortStats.alongNormalError << " s");
}

TEST_CASE("a box sliding in the plane of another box's face", "[shapecast]")
{
    // The moving box's bottom face slides in (or just off) the plane of the target's top face, toward the
    // target's side: it starts at x = -3 and meets the side face x = -0.5 at fraction 0.5.
    const Shape box = Shape::makeBox({0.5f, 0.5f, 0.5f});
    const Transform target{};
    for (const float gap : {0.0f, -1e-4f, 1e-4f})
    {
        ShapeCastInput in;
        in.shape = box;
        in.start.p = {-3.0f, 1.0f + gap, 0.2f};
        in.translation = {4.0f, 0.0f, 0.0f};
        ShapeCastHit hit;
        const bool got = castShape(in, box, target, {}, hit);
        INFO("gap " << gap);
        REQUIRE(got == (gap <= 0.0f));
        if (!got)
        {
            continue;
        }
        CHECK(hit.fraction == Approx(0.5f).margin(1e-6));
        CHECK_FALSE(hit.startPenetrating);
        CHECK(hit.point.x == Approx(-0.5f).margin(1e-6));
        CHECK(hit.point.y >= 0.5f - 1e-4f + gap - 1e-6f);
        CHECK(hit.point.y <= 0.5f + 1e-6f);
        if (gap < 0.0f)
        {
            // The side faces meet over a strip 1e-4 m tall: a face contact, normal -x.
            CHECK(hit.normal.x == Approx(-1.0f).margin(1e-6));
        }
        else
        {
            // Edge on edge line: any normal between -x and +y separates them.
            CHECK(hit.normal.x <= 1e-6f);
            CHECK(hit.normal.y >= -1e-6f);
            CHECK(std::fabs(hit.normal.z) <= 1e-6f);
        }
    }
    // Sliding along the top face 1e-4 m above it: never touches.
    ShapeCastInput above;
    above.shape = box;
    above.start.p = {-0.3f, 1.0001f, 0.0f};
    above.translation = {2.0f, 0.0f, 0.5f};
    ShapeCastHit hit;
    CHECK_FALSE(castShape(above, box, target, {}, hit));
}

TEST_CASE("a sphere passing a sphere 1e-4 m clear misses, 1e-4 m into it hits", "[shapecast]")
{
    const Shape target = Shape::makeSphere(0.5f);
    ShapeCastInput in;
    in.shape = Shape::makeSphere(0.25f);
    in.translation = {4.0f, 0.0f, 0.0f};
    for (const double offset : {0.75 + 1e-4, 0.75 - 1e-4, 0.75 - 1e-2})
    {
        in.start.p = {-2.0f, float(offset), 0.0f};
        ShapeCastHit hit;
        const bool got = castShape(in, target, Transform{}, {}, hit);
        REQUIRE(got == (offset < 0.75));
        if (got)
        {
            const double x = std::sqrt(0.75 * 0.75 - double(in.start.p.y) * in.start.p.y); // closed form
            CHECK(hit.fraction == Approx((-x + 2.0) / 4.0).margin(2e-5));
            const Vec3 centre = in.start.p + in.translation * hit.fraction;
            CHECK(length(centre) == Approx(0.75f).margin(1e-6));
            CHECK(length(hit.normal - normalize(centre)) <= 1e-5f);
        }
    }
}

TEST_CASE("a box and its hull cast alike", "[shapecast]")
{
    std::mt19937 rng(31u);
    int hits = 0;
    for (int i = 0; i < 300; ++i)
    {
        std::vector<ConvexHull> hulls;
        CastCase c = randomCase(rng, ShapeType::Box, ShapeType::Box, hulls);
        hulls.push_back(makeBoxHull(c.moving.box.halfExtents));
        hulls.push_back(makeBoxHull(c.target.box.halfExtents));
        Shape movingHull;
        movingHull.type = ShapeType::Hull;
        movingHull.hullIndex = 0;
        Shape targetHull;
        targetHull.type = ShapeType::Hull;
        targetHull.hullIndex = 1;
        ShapeCastHit boxHit;
        ShapeCastHit hullHit;
        const bool boxGot = castShape(inputOf(c), c.target, c.targetTransform, hulls, boxHit);
        ShapeCastInput in = inputOf(c);
        in.shape = movingHull;
        const bool hullGot = castShape(in, targetHull, c.targetTransform, hulls, hullHit);
        REQUIRE(boxGot == hullGot);
        if (boxGot)
        {
            ++hits;
            CHECK(boxHit.fraction == Approx(hullHit.fraction).margin(1e-6));
            CHECK(boxHit.startPenetrating == hullHit.startPenetrating);
        }
    }
    CHECK(hits > 100);
}

TEST_CASE("casts far from the origin give the same fraction and normal", "[shapecast]")
{
    // Positions on a 1/64 m grid moved by 8192 m stay exact in float, so both casts see the same geometry;
    // computed in the target's frame from exact differences, they must agree bit for bit.
    std::mt19937 rng(37u);
    const Vec3 far{8192.0f, -4096.0f, 16384.0f};
    auto quantize = [](const Vec3& v)
    {
        return Vec3{std::round(v.x * 64.0f) / 64.0f, std::round(v.y * 64.0f) / 64.0f,
                    std::round(v.z * 64.0f) / 64.0f};
    };
    int hits = 0;
    for (ShapeType movingType : kMovingTypes)
    {
        for (ShapeType targetType : kTargetTypes)
        {
            for (int i = 0; i < 20; ++i)
            {
                std::vector<ConvexHull> hulls;
                CastCase c = randomCase(rng, movingType, targetType, hulls);
                c.start.p = quantize(c.start.p);
                c.targetTransform.p = quantize(c.targetTransform.p);
                CastCase moved = c;
                moved.start.p = c.start.p + far;
                moved.targetTransform.p = c.targetTransform.p + far;
                ShapeCastHit near;
                ShapeCastHit away;
                const bool gotNear = castShape(inputOf(c), c.target, c.targetTransform, hulls, near);
                const bool gotAway =
                    castShape(inputOf(moved), moved.target, moved.targetTransform, hulls, away);
                INFO(nameOf(movingType) << " against " << nameOf(targetType));
                REQUIRE(gotNear == gotAway);
                if (!gotNear)
                {
                    continue;
                }
                ++hits;
                CHECK(near.fraction == away.fraction);
                CHECK(near.normal == away.normal);
                CHECK(near.penetrationDepth == away.penetrationDepth);
                CHECK(length(away.point - far - near.point) <= 2e-3f); // float spacing at 16384 m: 2e-3 m
            }
        }
    }
    CHECK(hits > 100);
}

TEST_CASE("a shape cast given NaN, infinite or out-of-range input returns false and leaves the hit alone",
          "[shapecast]")
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<ConvexHull> hulls{makeBoxHull({0.5f, 0.5f, 0.5f}), ConvexHull{}};
    const Shape sphere = Shape::makeSphere(0.5f);
    ShapeCastInput good;
    good.shape = sphere;
    good.start.p = {-2.0f, 0.0f, 0.0f};
    good.translation = {4.0f, 0.0f, 0.0f};
    ShapeCastHit hit;
    REQUIRE(castShape(good, sphere, Transform{}, hulls, hit));

    ShapeCastHit sentinel;
    sentinel.fraction = 42.0f;
    sentinel.iterations = -7;
    auto rejects = [&](const ShapeCastInput& in, const Shape& target, const Transform& targetTransform)
    {
        ShapeCastHit out = sentinel;
        const bool got = castShape(in, target, targetTransform, hulls, out);
        return !got && out.fraction == 42.0f && out.iterations == -7;
    };
    const Transform identity{};
    for (const float bad : {nan, inf, -inf})
    {
        ShapeCastInput in = good;
        in.start.p.y = bad;
        CHECK(rejects(in, sphere, identity));
        in = good;
        in.start.q.z = bad;
        CHECK(rejects(in, sphere, identity));
        in = good;
        in.translation.x = bad;
        CHECK(rejects(in, sphere, identity));
        in = good;
        in.maxFraction = bad;
        CHECK(rejects(in, sphere, identity));
        Transform t{};
        t.p.x = bad;
        CHECK(rejects(good, sphere, t));
        t = Transform{};
        t.q.w = bad;
        CHECK(rejects(good, sphere, t));
        CHECK(rejects(good, Shape::makeSphere(bad), identity));
        CHECK(rejects(good, Shape::makeCapsule(bad, 0.5f), identity));
        CHECK(rejects(good, Shape::makeBox({0.5f, bad, 0.5f}), identity));
        CHECK(rejects(good, Shape::makePlane({0.0f, bad, 0.0f}, 0.0f), identity));
        CHECK(rejects(good, Shape::makePlane({0.0f, 1.0f, 0.0f}, bad), identity));
    }
    ShapeCastInput in = good;
    in.maxFraction = -0.5f;
    CHECK(rejects(in, sphere, identity));
    in = good;
    in.start.q = {0.0f, 0.0f, 0.0f, 0.0f};
    CHECK(rejects(in, sphere, identity));
    in = good;
    in.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f); // planes cannot move
    CHECK(rejects(in, sphere, identity));
    CHECK(rejects(good, Shape::makeSphere(0.0f), identity));
    CHECK(rejects(good, Shape::makeSphere(-1.0f), identity));
    CHECK(rejects(good, Shape::makeSphere(2e6f), identity));
    CHECK(rejects(good, Shape::makeCapsule(0.0f, 0.5f), identity));
    CHECK(rejects(good, Shape::makeBox({0.5f, 0.0f, 0.5f}), identity));
    CHECK(rejects(good, Shape::makePlane({0.0f, 0.0f, 0.0f}, 0.0f), identity));
    Shape hull;
    hull.type = ShapeType::Hull;
    hull.hullIndex = 0;
    {
        ShapeCastHit out;
        CHECK(castShape(good, hull, identity, hulls, out)); // the valid hull
    }
    hull.hullIndex = 1; // no vertices
    CHECK(rejects(good, hull, identity));
    hull.hullIndex = 2; // out of range
    CHECK(rejects(good, hull, identity));
    in = good;
    in.shape = hull;
    CHECK(rejects(in, sphere, identity));
    Shape corrupt = sphere;
    corrupt.type = static_cast<ShapeType>(9);
    CHECK(rejects(good, corrupt, identity));
}

TEST_CASE("axis-aligned shapes on a grid: exact face, edge and vertex contacts", "[shapecast]")
{
    // Aligned boxes (as boxes and as hulls), capsules and spheres at grid positions, swept along axes and
    // diagonals: contacts land exactly on faces, edges and vertices, the degenerate cases of GJK.
    std::mt19937 rng(41u);
    std::vector<ConvexHull> hulls{makeBoxHull({0.5f, 0.5f, 0.5f}), makeBoxHull({1.0f, 0.25f, 0.75f})};
    Shape shapes[6] = {Shape::makeSphere(0.5f),
                       Shape::makeCapsule(0.5f, 0.25f),
                       Shape::makeBox({0.5f, 0.5f, 0.5f}),
                       Shape::makeBox({1.0f, 0.25f, 0.75f}),
                       Shape{},
                       Shape{}};
    shapes[4].type = ShapeType::Hull;
    shapes[4].hullIndex = 0;
    shapes[5].type = ShapeType::Hull;
    shapes[5].hullIndex = 1;
    const Quat turns[3] = {Quat{}, Quat{0.0f, 0.0f, 0.0f, 1.0f}, Quat{0.0f, 1.0f, 0.0f, 0.0f}}; // exact
    auto grid = [&]() { return float(int(rng() % 13) - 6) * 0.25f; };
    Stats stats;
    for (int i = 0; i < 600; ++i)
    {
        CastCase c;
        c.moving = shapes[rng() % 6];
        c.target = shapes[rng() % 6];
        c.start = {Vec3{grid(), grid(), grid()}, turns[rng() % 3]};
        c.targetTransform = {Vec3{grid(), grid(), grid()}, turns[rng() % 3]};
        c.translation = {2.0f * grid(), 2.0f * grid(), 2.0f * grid()};
        if (rng() % 2 == 0)
        {
            c.translation.y = 0.0f;
            c.translation.z = 0.0f;
        }
        checkCast(c, hulls, stats);
    }
    CHECK(stats.hits > 100);
    CHECK(stats.misses > 100);
    WARN("aligned: " << stats.hits << " hits (" << stats.starts << " at start), " << stats.misses
                     << " misses, " << stats.ambiguous << " ambiguous; distance at hit "
                     << stats.distanceAtHit << " s, normal angle " << stats.normalAngle << " rad ("
                     << stats.degenerateNormals << " degenerate), max iterations " << stats.maxIterations);
}

// Ray casts (raycast.h) against oracles written here in long double, sharing no code with the engine: the
// naive quadratics of spheres, cylinders and caps, the six face planes of a box, a brute-force search
// (ternary search, then bisection) for where a segment first meets a hull's face planes, the plane's
// closed form, and a triangle's plane with edge distances. Thousands of seeded random rays and shape
// sizes per shape; then the conventions' edge cases: starts inside or on the surface, zero-length rays,
// tangent and parallel rays, maxFraction, rays stopping short, long (1e4 m) and tiny (1e-4 m) rays, and
// invalid input.
//
// Hit or miss is checked by sandwiching: a shape grown by a hair (1e-9 of the scale) must be hit whenever
// the engine hits, and a shape shrunk by a hair must not be missed. Fractions and normals are then
// compared with the exact shape's oracle.
#include "polytope/physics/raycast.h"

#include "polytope/physics/hull.h"

#include "physics/random_shapes.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <vector>

using namespace polytope::physics;
using physics_test::randomRotation;
using physics_test::uniform;

namespace
{

using Real = long double;

/// The oracles' vector, separate from the engine's.
struct L3
{
    Real x = 0, y = 0, z = 0;
};
L3 toL(const Vec3& v)
{
    return {v.x, v.y, v.z};
}
L3 operator+(L3 a, L3 b)
{
    return {a.x + b.x, a.y + b.y, a.z + b.z};
}
L3 operator-(L3 a, L3 b)
{
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}
L3 operator*(L3 a, Real s)
{
    return {a.x * s, a.y * s, a.z * s};
}
Real dotL(L3 a, L3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
L3 crossL(L3 a, L3 b)
{
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
Real normL(L3 a)
{
    return std::sqrt(dotL(a, a));
}
L3 unitL(L3 a)
{
    return a * (1 / normL(a));
}
Real axisOf(L3 a, int i)
{
    return i == 0 ? a.x : (i == 1 ? a.y : a.z);
}
L3 axisVector(int i, Real sign)
{
    return {i == 0 ? sign : 0, i == 1 ? sign : 0, i == 2 ? sign : 0};
}

/// An oracle's answer for one ray.
struct Expected
{
    bool hit = false;
    bool startsInside = false; ///< the origin is in the closed solid: t = 0
    Real fraction = 0;
    std::vector<L3> normals;      ///< acceptable hit normals (several at an edge or corner)
    std::vector<L3> startNormals; ///< acceptable normals for a zero-length ray inside (nearest surface)
};

Real rayLength(const RayCastInput& ray)
{
    return normL(toL(ray.translation));
}

/// maxFraction extended (grow > 0) or cut (grow < 0) by grow metres of travel.
Real grownMaxFraction(const RayCastInput& ray, Real grow)
{
    const Real length = rayLength(ray);
    const Real extended = length > 0 ? Real(ray.maxFraction) + grow / length : Real(ray.maxFraction);
    return std::max<Real>(0, extended);
}

/// Candidates (t, normal) reduced to the smallest t and every normal within `tieTolerance` of it.
struct Candidates
{
    struct Entry
    {
        Real t;
        L3 normal;
    };
    std::vector<Entry> entries;

    void add(Real t, L3 normal) { entries.push_back({t, normal}); }
    void finish(Expected& e, Real maxFraction, Real tieTolerance) const
    {
        Real best = std::numeric_limits<Real>::infinity();
        for (const Entry& c : entries)
        {
            best = std::min(best, c.t);
        }
        if (!(best <= maxFraction))
        {
            return;
        }
        e.hit = true;
        e.fraction = best;
        for (const Entry& c : entries)
        {
            if (c.t <= best + tieTolerance)
            {
                e.normals.push_back(c.normal);
            }
        }
    }
};

/// Naive quadratic for the first t >= 0 at which o + t d is in the ball (centre, r); origin outside.
void ballCandidate(L3 centre, Real r, L3 o, L3 d, Candidates& out)
{
    const L3 s = o - centre;
    const Real a = dotL(d, d);
    const Real b = dotL(s, d);
    const Real c = dotL(s, s) - r * r;
    const Real disc = b * b - a * c;
    if (a == 0 || disc < 0)
    {
        return;
    }
    const Real t = (-b - std::sqrt(disc)) / a;
    if (t >= 0)
    {
        out.add(t, unitL(s + d * t));
    }
}

Expected sphereOracle(float radius, const RayCastInput& ray, Real grow)
{
    Expected e;
    const Real r = Real(radius) + grow;
    const L3 o = toL(ray.origin);
    if (dotL(o, o) <= r * r)
    {
        e.hit = e.startsInside = true;
        e.startNormals.push_back(normL(o) > 0 ? unitL(o) : L3{0, 1, 0});
        return e;
    }
    Candidates c;
    ballCandidate({}, r, o, toL(ray.translation), c);
    c.finish(e, grownMaxFraction(ray, grow), 0);
    return e;
}

Real capsuleSignedDistance(const CapsuleShape& capsule, L3 p)
{
    const Real h = capsule.halfHeight;
    const L3 rel{p.x, p.y - std::clamp<Real>(p.y, -h, h), p.z};
    return normL(rel) - capsule.radius;
}

Expected capsuleOracle(const CapsuleShape& capsule, const RayCastInput& ray, Real grow)
{
    Expected e;
    const Real r = Real(capsule.radius) + grow;
    const Real h = capsule.halfHeight;
    const L3 o = toL(ray.origin);
    const L3 d = toL(ray.translation);
    const L3 rel{o.x, o.y - std::clamp<Real>(o.y, -h, h), o.z};
    if (normL(rel) <= r)
    {
        e.hit = e.startsInside = true;
        e.startNormals.push_back(normL(rel) > 0 ? unitL(rel) : L3{1, 0, 0});
        return e;
    }
    Candidates c;
    // Cylinder x^2 + z^2 = r^2 for |y| <= h, then the two balls.
    const Real a = d.x * d.x + d.z * d.z;
    const Real b = o.x * d.x + o.z * d.z;
    const Real k = o.x * o.x + o.z * o.z - r * r;
    const Real disc = b * b - a * k;
    if (a > 0 && disc >= 0)
    {
        const Real t = (-b - std::sqrt(disc)) / a;
        const L3 p = o + d * t;
        if (t >= 0 && std::fabs(p.y) <= h)
        {
            c.add(t, unitL(L3{p.x, 0, p.z}));
        }
    }
    ballCandidate({0, h, 0}, r, o, d, c);
    ballCandidate({0, -h, 0}, r, o, d, c);
    c.finish(e, grownMaxFraction(ray, grow), 1e-12L);
    return e;
}

Real boxSignedDistance(const BoxShape& box, L3 p)
{
    Real gap = -std::numeric_limits<Real>::infinity();
    for (int i = 0; i < 3; ++i)
    {
        gap = std::max(gap, std::fabs(axisOf(p, i)) - Real(box.halfExtents[i]));
    }
    return gap;
}

Expected boxOracle(const BoxShape& box, const RayCastInput& ray, Real grow)
{
    Expected e;
    const L3 o = toL(ray.origin);
    const L3 d = toL(ray.translation);
    Real h[3];
    Real scale = 0;
    for (int i = 0; i < 3; ++i)
    {
        h[i] = Real(box.halfExtents[i]) + grow;
        scale = std::max(scale, h[i]);
    }
    const Real gap = boxSignedDistance(box, o) - grow;
    if (gap <= 0)
    {
        e.hit = e.startsInside = true;
        for (int i = 0; i < 3; ++i)
        {
            const Real oi = axisOf(o, i);
            if (std::fabs(oi) - h[i] >= gap - 1e-12L * scale)
            {
                if (oi >= -1e-12L * scale)
                {
                    e.startNormals.push_back(axisVector(i, 1));
                }
                if (oi <= 1e-12L * scale)
                {
                    e.startNormals.push_back(axisVector(i, -1));
                }
            }
        }
        return e;
    }
    Candidates c;
    for (int i = 0; i < 3; ++i)
    {
        for (const Real sign : {Real(1), Real(-1)})
        {
            const Real di = axisOf(d, i);
            if (!(sign * di < 0))
            {
                continue; // only faces the ray enters can be hit first from outside
            }
            const Real t = (sign * h[i] - axisOf(o, i)) / di;
            const L3 p = o + d * t;
            bool onFace = t >= 0;
            for (int j = 0; j < 3; ++j)
            {
                onFace = onFace && (j == i || std::fabs(axisOf(p, j)) <= h[j] * (1 + 1e-12L));
            }
            if (onFace)
            {
                c.add(t, axisVector(i, sign));
            }
        }
    }
    const Real length = rayLength(ray);
    c.finish(e, grownMaxFraction(ray, grow), length > 0 ? 1e-12L * scale / length : 0);
    return e;
}

Real hullSignedDistance(const ConvexHull& hull, L3 p)
{
    Real gap = -std::numeric_limits<Real>::infinity();
    for (const HullFace& face : hull.faces)
    {
        gap = std::max(gap, dotL(toL(face.normal), p) - Real(face.offset));
    }
    return gap;
}

Real hullScale(const ConvexHull& hull)
{
    Real scale = 0;
    for (const Vec3& v : hull.vertices)
    {
        scale = std::max(scale, normL(toL(v)));
    }
    return scale;
}

/// Brute force: f(t) = the largest signed plane distance of o + t d is convex in t; the segment meets the
/// hull where f <= 0. A ternary search finds f's minimum on [0, maxFraction]; if it is <= 0, bisection
/// finds the first t with f(t) <= 0. The normals are those of the planes through that point that the ray
/// crosses inward.
Expected hullOracle(const ConvexHull& hull, const RayCastInput& ray, Real grow)
{
    Expected e;
    const L3 o = toL(ray.origin);
    const L3 d = toL(ray.translation);
    const Real scale = hullScale(hull);
    const auto f = [&](Real t) { return hullSignedDistance(hull, o + d * t) - grow; };
    const Real f0 = f(0);
    if (f0 <= 0)
    {
        e.hit = e.startsInside = true;
        for (const HullFace& face : hull.faces)
        {
            if (dotL(toL(face.normal), o) - Real(face.offset) - grow >= f0 - 1e-12L * scale)
            {
                e.startNormals.push_back(toL(face.normal));
            }
        }
        return e;
    }
    if (rayLength(ray) == 0)
    {
        return e;
    }
    Real lo = 0;
    Real hi = grownMaxFraction(ray, grow);
    for (int i = 0; i < 120; ++i)
    {
        const Real m1 = lo + (hi - lo) / 3;
        const Real m2 = hi - (hi - lo) / 3;
        if (f(m1) <= f(m2))
        {
            hi = m2;
        }
        else
        {
            lo = m1;
        }
    }
    const Real tMin = (lo + hi) / 2;
    if (f(tMin) > 0)
    {
        return e;
    }
    lo = 0;
    hi = tMin;
    for (int i = 0; i < 90; ++i)
    {
        const Real mid = (lo + hi) / 2;
        (f(mid) <= 0 ? hi : lo) = mid;
    }
    e.hit = true;
    e.fraction = hi;
    const L3 p = o + d * hi;
    for (const HullFace& face : hull.faces)
    {
        const L3 n = toL(face.normal);
        if (dotL(n, d) < 0 && std::fabs(dotL(n, p) - Real(face.offset) - grow) <= 1e-9L * scale)
        {
            e.normals.push_back(n);
        }
    }
    return e;
}

Expected planeOracle(const PlaneShape& plane, const RayCastInput& ray, Real grow)
{
    Expected e;
    const L3 n = toL(plane.normal);
    const L3 o = toL(ray.origin);
    const L3 d = toL(ray.translation);
    const Real distance = dotL(n, o) - Real(plane.offset) - grow * normL(n);
    if (distance <= 0)
    {
        e.hit = e.startsInside = true;
        e.startNormals.push_back(unitL(n));
        return e;
    }
    const Real approach = dotL(n, d);
    if (!(approach < 0))
    {
        return e;
    }
    Candidates c;
    c.add(distance / -approach, unitL(n));
    c.finish(e, grownMaxFraction(ray, grow), 0);
    return e;
}

/// One shape under test: the engine's cast, its oracle and signed distance, and its size.
struct ShapeUnderTest
{
    std::function<bool(const RayCastInput&, RayCastHit&)> cast;
    std::function<Expected(const RayCastInput&, Real grow)> oracle;
    std::function<Real(L3)> signedDistance; ///< metres, < 0 inside
    Real scale = 1;                         ///< metres: the shape's size
};

struct RayStats
{
    int rays = 0;
    int hits = 0;
    int startHits = 0;
    int ambiguous = 0;           ///< the engine and the exact oracle disagree within the sandwich (grazing)
    Real worstFractionError = 0; ///< relative
    Real worstNormalError = 0;
};

bool closeToAny(const Vec3& normal, const std::vector<L3>& candidates, Real tolerance, Real& error)
{
    error = std::numeric_limits<Real>::infinity();
    for (const L3& c : candidates)
    {
        error = std::min(error, normL(toL(normal) - c));
    }
    return error <= tolerance;
}

bool sameHit(const RayCastHit& a, const RayCastHit& b)
{
    return a.fraction == b.fraction && a.point == b.point && a.normal == b.normal;
}

/// Checks the engine against the oracle on one ray; also recasts with maxFraction just below and above
/// the hit and with the ray cut just short of it.
void checkRay(const ShapeUnderTest& shape, const RayCastInput& ray, RayStats& stats)
{
    INFO("origin " << ray.origin.x << ", " << ray.origin.y << ", " << ray.origin.z << " translation "
                   << ray.translation.x << ", " << ray.translation.y << ", " << ray.translation.z
                   << " maxFraction " << ray.maxFraction << " scale " << double(shape.scale));
    ++stats.rays;
    const L3 o = toL(ray.origin);
    const L3 d = toL(ray.translation);
    const Real length = normL(d);
    const Real sandwich = 1e-9L * (shape.scale + normL(o));

    RayCastHit hit;
    hit.fraction = -7.0f; // sentinel: a miss must leave it
    const bool engineHit = shape.cast(ray, hit);
    const Expected exact = shape.oracle(ray, 0);
    if (engineHit)
    {
        REQUIRE(shape.oracle(ray, sandwich).hit);
    }
    else
    {
        REQUIRE_FALSE(shape.oracle(ray, -sandwich).hit);
        REQUIRE(hit.fraction == -7.0f);
    }
    if (engineHit != exact.hit)
    {
        ++stats.ambiguous;
    }
    if (!engineHit)
    {
        return;
    }
    ++stats.hits;

    // Invariants of every hit.
    REQUIRE(hit.fraction >= 0.0f);
    REQUIRE(hit.fraction <= ray.maxFraction);
    REQUIRE(std::fabs(normL(toL(hit.normal)) - 1) <= 1e-6L);
    const Real pointTolerance = 1e-6L * (shape.scale + normL(toL(hit.point)));
    const L3 alongRay = o + d * Real(hit.fraction);
    CHECK(normL(toL(hit.point) - alongRay) <= pointTolerance + 1e-6L * Real(hit.fraction) * length);

    if (hit.fraction == 0.0f && exact.startsInside)
    {
        ++stats.startHits;
        CHECK(hit.point == ray.origin);
        const Real originDistance = shape.signedDistance(o);
        if (originDistance < -sandwich)
        {
            Real error = 0;
            if (length > 0)
            {
                CHECK(closeToAny(hit.normal, {unitL(d) * -1}, 1e-6L, error));
            }
            else
            {
                CHECK(closeToAny(hit.normal, exact.startNormals, 1e-6L, error));
            }
        }
        return;
    }

    // A hit from outside: on the surface, outside just before, with the oracle's fraction and normal.
    CHECK(std::fabs(shape.signedDistance(toL(hit.point))) <= pointTolerance);
    // Just before the hit point (taken from the point, which is accurate, not from the rounded fraction),
    // the ray is outside; skipped for glancing hits, where the step is below the point's rounding.
    const Real step = 1e-4L * (shape.scale + normL(toL(hit.point)));
    if (dotL(toL(hit.normal), unitL(d)) < -0.05L && Real(hit.fraction) * length > step)
    {
        CHECK(shape.signedDistance(toL(hit.point) - unitL(d) * step) > 0);
    }
    if (!exact.hit)
    {
        return; // grazing within the sandwich: the invariants above are all that is defined
    }
    REQUIRE_FALSE(exact.startsInside);
    const Real fractionError = std::fabs(Real(hit.fraction) - exact.fraction);
    const Real floor = 1e-12L * (shape.scale + normL(o)) / length;
    CHECK(fractionError <= 1e-5L * exact.fraction + floor);
    stats.worstFractionError =
        std::max(stats.worstFractionError, fractionError / (exact.fraction + floor + 1e-30L));
    Real normalError = 0;
    CHECK(closeToAny(hit.normal, exact.normals, 1e-5L, normalError));
    stats.worstNormalError = std::max(stats.worstNormalError, normalError);

    // maxFraction just below the hit misses; just above, the same hit.
    RayCastInput capped = ray;
    capped.maxFraction = float(exact.fraction * (1 - 1e-5L));
    RayCastHit again;
    if (capped.maxFraction * length > 1e-6L * shape.scale)
    {
        CHECK_FALSE(shape.cast(capped, again));
    }
    capped.maxFraction = float(exact.fraction * (1 + 1e-5L)) + 1e-30f;
    CHECK(shape.cast(capped, again));
    // The segment cut short of the surface misses (unless nearly tangent, where the rounded direction of
    // the shortened translation could touch sooner).
    const Real approach = dotL(toL(hit.normal), unitL(d));
    if (approach < -0.1L && exact.fraction * length > 1e-4L * shape.scale)
    {
        RayCastInput shortRay = ray;
        shortRay.translation = ray.translation * float(exact.fraction * (1 - 1e-5L));
        shortRay.maxFraction = 1.0f;
        CHECK_FALSE(shape.cast(shortRay, again));
    }
}

Real logUniform(std::mt19937& rng, Real lo, Real hi)
{
    return std::exp(uniform(rng, float(std::log(lo)), float(std::log(hi))));
}

Vec3 randomUnit(std::mt19937& rng)
{
    std::normal_distribution<float> n(0.0f, 1.0f);
    return normalize(Vec3{n(rng), n(rng), n(rng)});
}

Vec3 randomInBox(std::mt19937& rng, const Vec3& halfExtents)
{
    return {uniform(rng, -halfExtents.x, halfExtents.x), uniform(rng, -halfExtents.y, halfExtents.y),
            uniform(rng, -halfExtents.z, halfExtents.z)};
}

/// A random ray toward the neighbourhood of a shape whose bounding box has `bounds` half extents: origins
/// from 1e-3 to 30 scales away (some inside), aimed at points around the shape, ending short of the target
/// or past it; a few with maxFraction other than 1 and a few zero-length.
RayCastInput randomRay(std::mt19937& rng, const Vec3& bounds, float scale)
{
    RayCastInput ray;
    const Vec3 target = randomInBox(rng, bounds * 1.3f);
    const int kind = std::uniform_int_distribution<int>(0, 99)(rng);
    if (kind < 10)
    {
        ray.origin = randomInBox(rng, bounds);
    }
    else
    {
        ray.origin = target + randomUnit(rng) * float(logUniform(rng, 1e-3L * scale, 30.0L * scale));
    }
    ray.translation = (target - ray.origin) * uniform(rng, 0.2f, 3.0f);
    if (kind >= 90)
    {
        ray.maxFraction = uniform(rng, 0.0f, 1.5f);
    }
    if (kind >= 97)
    {
        ray.translation = {};
    }
    return ray;
}

/// Long (origin ~1e4 m away, aimed through the shape) and tiny (1e-4 m, straddling the surface) rays.
void checkLongAndTinyRays(std::mt19937& rng, const ShapeUnderTest& shape, const Vec3& bounds, int count,
                          RayStats& stats)
{
    for (int i = 0; i < count; ++i)
    {
        RayCastInput longRay;
        const Vec3 target = randomInBox(rng, bounds * 0.5f);
        longRay.origin = target + randomUnit(rng) * 1e4f;
        longRay.translation = (target - longRay.origin) * 1.2f;
        checkRay(shape, longRay, stats);

        const Expected e = shape.oracle(longRay, 0);
        if (!e.hit || e.startsInside)
        {
            continue;
        }
        const L3 point = toL(longRay.origin) + toL(longRay.translation) * e.fraction;
        const L3 u = unitL(toL(longRay.translation));
        RayCastInput tiny;
        tiny.origin =
            Vec3{float(point.x - u.x * 5e-5L), float(point.y - u.y * 5e-5L), float(point.z - u.z * 5e-5L)};
        tiny.translation = Vec3{float(u.x * 1e-4L), float(u.y * 1e-4L), float(u.z * 1e-4L)};
        checkRay(shape, tiny, stats);
    }
}

void runRandomRays(std::mt19937& rng, const ShapeUnderTest& shape, const Vec3& bounds, int count,
                   RayStats& stats)
{
    for (int i = 0; i < count; ++i)
    {
        checkRay(shape, randomRay(rng, bounds, float(shape.scale)), stats);
    }
}

ShapeUnderTest sphereUnderTest(const SphereShape& sphere)
{
    return {[sphere](const RayCastInput& r, RayCastHit& h) { return raySphere(sphere, r, h); },
            [sphere](const RayCastInput& r, Real grow) { return sphereOracle(sphere.radius, r, grow); },
            [sphere](L3 p) { return normL(p) - sphere.radius; }, sphere.radius};
}

ShapeUnderTest capsuleUnderTest(const CapsuleShape& capsule)
{
    return {[capsule](const RayCastInput& r, RayCastHit& h) { return rayCapsule(capsule, r, h); },
            [capsule](const RayCastInput& r, Real grow) { return capsuleOracle(capsule, r, grow); },
            [capsule](L3 p) { return capsuleSignedDistance(capsule, p); },
            Real(capsule.halfHeight) + capsule.radius};
}

ShapeUnderTest boxUnderTest(const BoxShape& box)
{
    return {[box](const RayCastInput& r, RayCastHit& h) { return rayBox(box, r, h); },
            [box](const RayCastInput& r, Real grow) { return boxOracle(box, r, grow); },
            [box](L3 p) { return boxSignedDistance(box, p); }, normL(toL(box.halfExtents))};
}

/// The hull is borrowed: it must outlive the result.
ShapeUnderTest hullUnderTest(const ConvexHull& hull)
{
    return {[&hull](const RayCastInput& r, RayCastHit& h) { return rayHull(hull, r, h); },
            [&hull](const RayCastInput& r, Real grow) { return hullOracle(hull, r, grow); },
            [&hull](L3 p) { return hullSignedDistance(hull, p); }, hullScale(hull)};
}

ShapeUnderTest planeUnderTest(const PlaneShape& plane)
{
    return {[plane](const RayCastInput& r, RayCastHit& h) { return rayPlane(plane, r, h); },
            [plane](const RayCastInput& r, Real grow) { return planeOracle(plane, r, grow); },
            [plane](L3 p) { return dotL(toL(plane.normal), p) - plane.offset; }, 1};
}

void requireMostlyDecisive(const RayStats& stats)
{
    INFO("rays " << stats.rays << " hits " << stats.hits << " starts inside " << stats.startHits
                 << " ambiguous " << stats.ambiguous << " worst fraction error "
                 << double(stats.worstFractionError) << " worst normal error "
                 << double(stats.worstNormalError));
    CHECK(stats.ambiguous == 0);
    CHECK(stats.hits > stats.rays / 5);
    CHECK(stats.hits - stats.startHits > stats.rays / 10);
    CHECK(stats.startHits > 0);
    CHECK(stats.worstFractionError < 1e-6L); // much tighter than the 1e-5 asked for
    CHECK(stats.worstNormalError < 1e-6L);
}

std::vector<Vec3> boxCorners(const Vec3& h, const Quat& rotation)
{
    std::vector<Vec3> corners;
    for (int v = 0; v < 8; ++v)
    {
        corners.push_back(rotate(rotation, Vec3{v & 1 ? h.x : -h.x, v & 2 ? h.y : -h.y, v & 4 ? h.z : -h.z}));
    }
    return corners;
}

RayCastInput makeRay(const Vec3& origin, const Vec3& translation, float maxFraction = 1.0f)
{
    RayCastInput ray;
    ray.origin = origin;
    ray.translation = translation;
    ray.maxFraction = maxFraction;
    return ray;
}

bool near(const Vec3& a, const Vec3& b, float tolerance = 1e-6f)
{
    return length(a - b) <= tolerance;
}

} // namespace

TEST_CASE("raySphere matches the quadratic over random rays and radii", "[raycast]")
{
    std::mt19937 rng(101);
    RayStats stats;
    for (int s = 0; s < 60; ++s)
    {
        const SphereShape sphere{float(logUniform(rng, 0.01L, 100.0L))};
        const ShapeUnderTest shape = sphereUnderTest(sphere);
        const Vec3 bounds{sphere.radius, sphere.radius, sphere.radius};
        runRandomRays(rng, shape, bounds, 100, stats);
        checkLongAndTinyRays(rng, sphereUnderTest(SphereShape{uniform(rng, 0.3f, 3.0f)}),
                             Vec3{0.3f, 0.3f, 0.3f}, 5, stats);
    }
    requireMostlyDecisive(stats);
}

TEST_CASE("rayCapsule matches cylinder and cap quadratics over random rays and sizes", "[raycast]")
{
    std::mt19937 rng(202);
    RayStats stats;
    for (int s = 0; s < 60; ++s)
    {
        const float scale = float(logUniform(rng, 0.01L, 100.0L));
        CapsuleShape capsule{scale * uniform(rng, 0.0f, 2.0f), scale * uniform(rng, 0.1f, 1.0f)};
        if (s % 10 == 0)
        {
            capsule.halfHeight = 0.0f; // a sphere
        }
        const ShapeUnderTest shape = capsuleUnderTest(capsule);
        const Vec3 bounds{capsule.radius, capsule.halfHeight + capsule.radius, capsule.radius};
        runRandomRays(rng, shape, bounds, 100, stats);
        const CapsuleShape unit{uniform(rng, 0.1f, 1.0f), uniform(rng, 0.2f, 1.0f)};
        checkLongAndTinyRays(rng, capsuleUnderTest(unit), Vec3{0.2f, unit.halfHeight, 0.2f}, 5, stats);
    }
    requireMostlyDecisive(stats);
}

TEST_CASE("rayBox matches the six face planes over random rays and sizes", "[raycast]")
{
    std::mt19937 rng(303);
    RayStats stats;
    for (int s = 0; s < 60; ++s)
    {
        const float scale = float(logUniform(rng, 0.01L, 100.0L));
        const BoxShape box{Vec3{scale * uniform(rng, 0.05f, 1.0f), scale * uniform(rng, 0.05f, 1.0f),
                                scale * uniform(rng, 0.05f, 1.0f)}};
        runRandomRays(rng, boxUnderTest(box), box.halfExtents, 100, stats);
        const BoxShape unit{
            Vec3{uniform(rng, 0.2f, 1.0f), uniform(rng, 0.2f, 1.0f), uniform(rng, 0.2f, 1.0f)}};
        checkLongAndTinyRays(rng, boxUnderTest(unit), unit.halfExtents, 5, stats);
    }
    requireMostlyDecisive(stats);
}

TEST_CASE("rayHull on random hulls matches a brute-force search along the ray", "[raycast]")
{
    std::mt19937 rng(404);
    RayStats stats;
    for (int s = 0; s < 40; ++s)
    {
        const float scale = float(logUniform(rng, 0.05L, 50.0L));
        std::vector<Vec3> points = physics_test::randomShellPoints(rng, 8, 40, 0.8f);
        for (Vec3& p : points)
        {
            p = p * scale;
        }
        const HullResult built = buildConvexHull(points);
        REQUIRE(built.ok());
        const ConvexHull& hull = built.hull;
        Vec3 bounds{};
        for (const Vec3& v : hull.vertices)
        {
            bounds = maxPerElem(bounds, absPerElem(v));
        }
        runRandomRays(rng, hullUnderTest(hull), bounds, 100, stats);

        const ConvexHull unitHull = physics_test::randomCloudHull(rng, 8);
        checkLongAndTinyRays(rng, hullUnderTest(unitHull), Vec3{0.2f, 0.2f, 0.2f}, 5, stats);
    }
    requireMostlyDecisive(stats);
}

TEST_CASE("rayPlane matches the closed form over random rays and planes", "[raycast]")
{
    std::mt19937 rng(505);
    RayStats stats;
    for (int s = 0; s < 60; ++s)
    {
        const PlaneShape plane{randomUnit(rng), uniform(rng, -10.0f, 10.0f)};
        const Vec3 around = plane.normal * plane.offset;
        const ShapeUnderTest shape = planeUnderTest(plane);
        for (int i = 0; i < 100; ++i)
        {
            RayCastInput ray = randomRay(rng, Vec3{10.0f, 10.0f, 10.0f}, 10.0f);
            ray.origin = ray.origin + around;
            checkRay(shape, ray, stats);
        }
        checkLongAndTinyRays(rng, shape, Vec3{1.0f, 1.0f, 1.0f}, 5, stats);
    }
    requireMostlyDecisive(stats);
}

TEST_CASE("a box and its hull give the same hits", "[raycast]")
{
    std::mt19937 rng(606);
    for (int s = 0; s < 40; ++s)
    {
        const float scale = float(logUniform(rng, 0.01L, 100.0L));
        const Vec3 h{scale * uniform(rng, 0.05f, 1.0f), scale * uniform(rng, 0.05f, 1.0f),
                     scale * uniform(rng, 0.05f, 1.0f)};
        const BoxShape box{h};

        // makeBoxHull's planes are the box's faces exactly, in the same order: bit-identical answers.
        const ConvexHull exactHull = makeBoxHull(h);
        for (int i = 0; i < 300; ++i)
        {
            const RayCastInput ray = randomRay(rng, h, scale);
            RayCastHit a;
            RayCastHit b;
            const bool hitBox = rayBox(box, ray, a);
            REQUIRE(hitBox == rayHull(exactHull, ray, b));
            if (hitBox)
            {
                REQUIRE(sameHit(a, b));
            }
        }

        // The hull of the rotated corners (buildConvexHull) against the box in its own frame.
        const Quat rotation = randomRotation(rng);
        const HullResult built = buildConvexHull(boxCorners(h, rotation));
        REQUIRE(built.ok());
        REQUIRE(built.hull.faces.size() == 6);
        int agreed = 0;
        for (int i = 0; i < 300; ++i)
        {
            const RayCastInput drawn = randomRay(rng, h, scale); // around the box, in its frame
            const RayCastInput ray = makeRay(rotate(rotation, drawn.origin),
                                             rotate(rotation, drawn.translation), drawn.maxFraction);
            const RayCastInput local = makeRay(inverseRotate(rotation, ray.origin),
                                               inverseRotate(rotation, ray.translation), ray.maxFraction);
            RayCastHit a;
            RayCastHit b;
            const bool hitHull = rayHull(built.hull, ray, a);
            const bool hitBox = rayBox(box, local, b);
            // Rotated float corners are a box only to float precision: near-grazing rays may differ.
            const Expected grown = boxOracle(box, local, 1e-5L * scale);
            const Expected shrunk = boxOracle(box, local, -1e-5L * scale);
            if (hitHull != hitBox)
            {
                REQUIRE(grown.hit);
                REQUIRE_FALSE(shrunk.hit);
                continue;
            }
            if (!hitHull)
            {
                continue;
            }
            ++agreed;
            // The two solids differ by float rounding of the corners (~1e-7 of the size) across the surface;
            // along a glancing ray that difference grows by 1 / cos(angle to the normal).
            const float travel = std::max(length(ray.translation), 1e-30f);
            const float approach = std::max(std::fabs(dot(b.normal, normalize(local.translation))), 1e-3f);
            const float distanceError = std::fabs(a.fraction - b.fraction) * travel;
            CHECK(distanceError * approach <= 1e-5f * (scale + b.fraction * travel));
            CHECK(
                near(a.point, rotate(rotation, b.point), distanceError + 1e-5f * (scale + length(a.point))));
            const bool startInside = b.fraction == 0.0f;
            if (!startInside && std::fabs(boxSignedDistance(box, toL(b.point))) < 1e-6L * scale)
            {
                // Away from edges the faces agree; at an edge either face is right.
                Real edgeMargin = std::numeric_limits<Real>::infinity();
                for (int axis = 0; axis < 3; ++axis)
                {
                    if (std::fabs(b.normal[axis]) < 0.5f)
                    {
                        edgeMargin = std::min(edgeMargin, Real(h[axis]) - std::fabs(Real(b.point[axis])));
                    }
                }
                if (edgeMargin > 1e-4L * scale)
                {
                    CHECK(near(a.normal, rotate(rotation, b.normal), 1e-5f));
                }
            }
        }
        CHECK(agreed > 100);
    }
}

TEST_CASE("rays starting inside hit at t = 0 against their direction", "[raycast]")
{
    std::mt19937 rng(707);
    const ConvexHull hull = physics_test::randomCloudHull(rng, 8);
    const std::vector<ConvexHull> hulls{hull};
    const Shape shapes[] = {Shape::makeSphere(0.7f), Shape::makeCapsule(0.5f, 0.3f),
                            Shape::makeBox(Vec3{0.4f, 0.8f, 0.2f}), Shape{.type = ShapeType::Hull},
                            Shape::makePlane(normalize(Vec3{1.0f, 2.0f, -0.5f}), 0.3f)};
    for (const Shape& shape : shapes)
    {
        int inside = 0;
        for (int i = 0; i < 4000; ++i)
        {
            const RayCastInput ray =
                makeRay(randomInBox(rng, Vec3{0.5f, 0.5f, 0.5f}),
                        randomUnit(rng) * float(logUniform(rng, 1e-4L, 1e4L)), uniform(rng, 0.0f, 1.0f));
            RayCastHit probe;
            // Strictly inside, by the oracle's distance: t = 0, the origin, -direction.
            const RayCastInput still = makeRay(ray.origin, {});
            if (!rayShape(shape, still, hulls, probe))
            {
                continue;
            }
            RayCastHit hit;
            REQUIRE(rayShape(shape, ray, hulls, hit));
            CHECK(hit.fraction == 0.0f);
            CHECK(hit.point == ray.origin);
            CHECK(near(hit.normal, -normalize(ray.translation)));
            ++inside;
        }
        CHECK(inside > 40);
    }
}

TEST_CASE("zero-length rays hit only inside, with the nearest surface's normal", "[raycast]")
{
    RayCastHit hit;
    const auto still = [](const Vec3& p) { return makeRay(p, Vec3{}); };

    SECTION("sphere")
    {
        const SphereShape sphere{2.0f};
        REQUIRE(raySphere(sphere, still({0.0f, 0.0f, 1.0f}), hit));
        CHECK(hit.fraction == 0.0f);
        CHECK(hit.point == Vec3{0.0f, 0.0f, 1.0f});
        CHECK(near(hit.normal, {0.0f, 0.0f, 1.0f}));
        REQUIRE(raySphere(sphere, still({0.0f, -2.0f, 0.0f}), hit)); // on the surface
        CHECK(near(hit.normal, {0.0f, -1.0f, 0.0f}));
        REQUIRE(raySphere(sphere, still({}), hit)); // the centre: +y
        CHECK(hit.normal == Vec3{0.0f, 1.0f, 0.0f});
        CHECK_FALSE(raySphere(sphere, still({0.0f, 2.001f, 0.0f}), hit));
    }
    SECTION("capsule")
    {
        const CapsuleShape capsule{1.0f, 0.5f};
        REQUIRE(rayCapsule(capsule, still({0.0f, 0.3f, -0.2f}), hit));
        CHECK(near(hit.normal, {0.0f, 0.0f, -1.0f}));
        REQUIRE(rayCapsule(capsule, still({0.1f, 1.2f, 0.0f}), hit)); // in the top cap
        CHECK(near(hit.normal, normalize(Vec3{0.1f, 0.2f, 0.0f})));
        REQUIRE(rayCapsule(capsule, still({0.0f, -0.7f, 0.0f}), hit)); // on the core segment: +x
        CHECK(hit.normal == Vec3{1.0f, 0.0f, 0.0f});
        REQUIRE(rayCapsule(capsule, still({0.0f, 1.5f, 0.0f}), hit)); // the top pole, on the surface
        CHECK(near(hit.normal, {0.0f, 1.0f, 0.0f}));
        CHECK_FALSE(rayCapsule(capsule, still({0.0f, 1.51f, 0.0f}), hit));
        CHECK_FALSE(rayCapsule(capsule, still({0.36f, 1.36f, 0.0f}), hit)); // in the bounds, outside the cap
    }
    SECTION("box")
    {
        const BoxShape box{Vec3{1.0f, 2.0f, 3.0f}};
        REQUIRE(rayBox(box, still({0.5f, 0.0f, 0.0f}), hit));
        CHECK(hit.normal == Vec3{1.0f, 0.0f, 0.0f});
        REQUIRE(rayBox(box, still({0.0f, -1.9f, 0.0f}), hit));
        CHECK(hit.normal == Vec3{0.0f, -1.0f, 0.0f});
        REQUIRE(rayBox(box, still({0.0f, 0.0f, 0.0f}), hit)); // gaps 1, 2, 3: +x (coordinate 0 -> +)
        CHECK(hit.normal == Vec3{1.0f, 0.0f, 0.0f});
        REQUIRE(rayBox(box, still({-0.5f, 1.5f, 0.0f}), hit)); // tie x/y (gap 0.5): the first axis
        CHECK(hit.normal == Vec3{-1.0f, 0.0f, 0.0f});
        REQUIRE(rayBox(box, still({1.0f, 2.0f, 3.0f}), hit)); // a corner, on the surface: the first axis
        CHECK(hit.normal == Vec3{1.0f, 0.0f, 0.0f});
        CHECK_FALSE(rayBox(box, still({1.0f, 2.0f, 3.001f}), hit));
    }
    SECTION("hull")
    {
        const ConvexHull hull = makeBoxHull(Vec3{1.0f, 2.0f, 3.0f});
        REQUIRE(rayHull(hull, still({0.0f, 0.0f, -2.5f}), hit));
        CHECK(hit.normal == Vec3{0.0f, 0.0f, -1.0f});
        REQUIRE(rayHull(hull, still({0.0f, 0.0f, 0.0f}), hit)); // nearest plane +x, the lowest index
        CHECK(hit.normal == Vec3{1.0f, 0.0f, 0.0f});
        CHECK_FALSE(rayHull(hull, still({0.0f, 0.0f, -3.01f}), hit));
    }
    SECTION("plane")
    {
        const PlaneShape plane{Vec3{0.0f, 0.0f, 1.0f}, 1.0f};
        REQUIRE(rayPlane(plane, still({5.0f, -3.0f, -10.0f}), hit));
        CHECK(hit.normal == Vec3{0.0f, 0.0f, 1.0f});
        REQUIRE(rayPlane(plane, still({5.0f, -3.0f, 1.0f}), hit)); // on the plane
        CHECK_FALSE(rayPlane(plane, still({5.0f, -3.0f, 1.01f}), hit));
    }
    SECTION("triangle: never")
    {
        const Triangle tri{{0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}};
        CHECK_FALSE(rayTriangle(tri, still({0.2f, 0.2f, 0.0f}), hit));
    }
}

TEST_CASE("rays starting on the surface hit at t = 0 with the surface normal, whatever their direction",
          "[raycast]")
{
    RayCastHit hit;
    const Vec3 out{1.0f, 0.0f, 0.0f};
    for (const Vec3& direction : {Vec3{1.0f, 0.0f, 0.0f}, Vec3{-1.0f, 0.0f, 0.0f}, Vec3{0.0f, 1.0f, 0.0f}})
    {
        REQUIRE(raySphere(SphereShape{1.0f}, makeRay({1.0f, 0.0f, 0.0f}, direction), hit));
        CHECK((hit.fraction == 0.0f && near(hit.normal, out)));
        REQUIRE(rayCapsule(CapsuleShape{1.0f, 0.5f}, makeRay({0.5f, 0.3f, 0.0f}, direction), hit));
        CHECK((hit.fraction == 0.0f && near(hit.normal, out)));
        REQUIRE(rayBox(BoxShape{Vec3{1.0f, 1.0f, 1.0f}}, makeRay({1.0f, 0.2f, -0.3f}, direction), hit));
        CHECK((hit.fraction == 0.0f && hit.normal == out));
        REQUIRE(rayHull(makeBoxHull(Vec3{1.0f, 1.0f, 1.0f}), makeRay({1.0f, 0.2f, -0.3f}, direction), hit));
        CHECK((hit.fraction == 0.0f && hit.normal == out));
        REQUIRE(rayPlane(PlaneShape{out, 2.0f}, makeRay({2.0f, 5.0f, 0.0f}, direction), hit));
        CHECK((hit.fraction == 0.0f && hit.normal == out));
    }
}

TEST_CASE("tangent and grazing rays touch: they hit at the touching point", "[raycast]")
{
    RayCastHit hit;
    std::mt19937 rng(808);

    SECTION("sphere: tangent lines hit at the tangent point; a hair farther they miss")
    {
        // Exactly tangent (all values exact in float).
        REQUIRE(raySphere(SphereShape{2.0f}, makeRay({-4.0f, 2.0f, 0.0f}, {8.0f, 0.0f, 0.0f}), hit));
        CHECK(hit.fraction == 0.5f);
        CHECK(hit.point == Vec3{0.0f, 2.0f, 0.0f});
        CHECK(hit.normal == Vec3{0.0f, 1.0f, 0.0f});
        // Random tangents, offset by +-1e-5 of the radius (origins round by < 1e-6 of it).
        for (int i = 0; i < 2000; ++i)
        {
            const float r = float(logUniform(rng, 0.01L, 100.0L));
            const Vec3 u = randomUnit(rng);
            Vec3 side;
            Vec3 other;
            orthonormalBasis(u, side, other);
            const float along = uniform(rng, 1.5f, 10.0f) * r;
            for (const float offset : {1.0f + 1e-5f, 1.0f - 1e-5f})
            {
                const RayCastInput ray = makeRay(side * (r * offset) - u * along, u * (2.0f * along));
                const bool expectHit = offset < 1.0f;
                REQUIRE(raySphere(SphereShape{r}, ray, hit) == expectHit);
                if (expectHit)
                {
                    // Near tangency the hit point slides far along the ray; the normal stays near `side`.
                    CHECK(near(hit.normal, side, 1e-2f));
                    CHECK(std::fabs(length(hit.point) - r) <= 1e-6f * r);
                }
            }
        }
    }
    SECTION("capsule: along the cylinder wall and tangent to it")
    {
        const CapsuleShape capsule{1.0f, 0.5f};
        // Along the wall, parallel to the axis: first touches at the bottom of the cylinder.
        REQUIRE(rayCapsule(capsule, makeRay({0.5f, -4.0f, 0.0f}, {0.0f, 8.0f, 0.0f}), hit));
        CHECK(hit.fraction == 0.375f);
        CHECK(near(hit.point, {0.5f, -1.0f, 0.0f}));
        CHECK(near(hit.normal, {1.0f, 0.0f, 0.0f}));
        CHECK_FALSE(rayCapsule(capsule, makeRay({0.5001f, -4.0f, 0.0f}, {0.0f, 8.0f, 0.0f}), hit));
        // Across the cylinder, tangent to it.
        REQUIRE(rayCapsule(capsule, makeRay({-2.0f, 0.25f, 0.5f}, {4.0f, 0.0f, 0.0f}), hit));
        CHECK(hit.fraction == 0.5f);
        CHECK(near(hit.normal, {0.0f, 0.0f, 1.0f}));
        CHECK_FALSE(rayCapsule(capsule, makeRay({-2.0f, 0.25f, 0.5001f}, {4.0f, 0.0f, 0.0f}), hit));
        // Tangent to a cap's pole.
        REQUIRE(rayCapsule(capsule, makeRay({-2.0f, 1.5f, 0.0f}, {4.0f, 0.0f, 0.0f}), hit));
        CHECK(hit.fraction == 0.5f);
        CHECK(near(hit.point, {0.0f, 1.5f, 0.0f}));
        CHECK(near(hit.normal, {0.0f, 1.0f, 0.0f}));
        CHECK_FALSE(rayCapsule(capsule, makeRay({-2.0f, 1.5001f, 0.0f}, {4.0f, 0.0f, 0.0f}), hit));
        // Along the axis, from below and above: the poles.
        REQUIRE(rayCapsule(capsule, makeRay({0.0f, -3.5f, 0.0f}, {0.0f, 4.0f, 0.0f}), hit));
        CHECK(hit.fraction == 0.5f);
        CHECK(near(hit.normal, {0.0f, -1.0f, 0.0f}));
        REQUIRE(rayCapsule(capsule, makeRay({0.0f, 3.5f, 0.0f}, {0.0f, -4.0f, 0.0f}), hit));
        CHECK(hit.fraction == 0.5f);
        CHECK(near(hit.normal, {0.0f, 1.0f, 0.0f}));
    }
    SECTION("box: rays in a face's plane touch it; just outside they miss; edges and corners")
    {
        const BoxShape box{Vec3{1.0f, 2.0f, 3.0f}};
        // In the +y face's plane, along x: enters the face's closure at its -x edge.
        REQUIRE(rayBox(box, makeRay({-3.0f, 2.0f, 0.5f}, {4.0f, 0.0f, 0.0f}), hit));
        CHECK(hit.fraction == 0.5f);
        CHECK(hit.point == Vec3{-1.0f, 2.0f, 0.5f});
        CHECK(hit.normal == Vec3{-1.0f, 0.0f, 0.0f});
        CHECK_FALSE(rayBox(box, makeRay({-3.0f, 2.0001f, 0.5f}, {4.0f, 0.0f, 0.0f}), hit));
        REQUIRE(rayBox(box, makeRay({-3.0f, 1.9999f, 0.5f}, {4.0f, 0.0f, 0.0f}), hit));
        CHECK(hit.normal == Vec3{-1.0f, 0.0f, 0.0f});
        // Along an edge line: touches at the corner.
        REQUIRE(rayBox(box, makeRay({1.0f, 2.0f, -5.0f}, {0.0f, 0.0f, 4.0f}), hit));
        CHECK(hit.fraction == 0.5f);
        CHECK(hit.normal == Vec3{0.0f, 0.0f, -1.0f});
        // Diagonally through an edge (x and y entered together): the first axis.
        REQUIRE(rayBox(box, makeRay({-2.0f, -3.0f, 0.0f}, {2.0f, 2.0f, 0.0f}), hit));
        CHECK(hit.fraction == 0.5f);
        CHECK(hit.point == Vec3{-1.0f, -2.0f, 0.0f});
        CHECK(hit.normal == Vec3{-1.0f, 0.0f, 0.0f});
        // Through a corner from outside all three slabs.
        REQUIRE(rayBox(box, makeRay({2.0f, 3.0f, 4.0f}, {-2.0f, -2.0f, -2.0f}), hit));
        CHECK(hit.fraction == 0.5f);
        CHECK(hit.normal == Vec3{1.0f, 0.0f, 0.0f});
        // Touching only the corner, passing outside otherwise.
        REQUIRE(rayBox(box, makeRay({2.0f, 3.0f, 3.0f}, {-2.0f, -2.0f, 0.0f}), hit));
        CHECK(hit.point == Vec3{1.0f, 2.0f, 3.0f});
        CHECK_FALSE(rayBox(box, makeRay({2.0f, 3.0f, 3.001f}, {-2.0f, -2.0f, 0.0f}), hit));
    }
    SECTION("box: rays nearly parallel to a face, just inside and just outside")
    {
        for (int i = 0; i < 2000; ++i)
        {
            const BoxShape box{
                Vec3{uniform(rng, 0.1f, 2.0f), uniform(rng, 0.1f, 2.0f), uniform(rng, 0.1f, 2.0f)}};
            const int axis = i % 3;
            const float sign = (i / 3) % 2 == 0 ? 1.0f : -1.0f;
            Vec3 inPlane = randomUnit(rng);
            inPlane[axis] = 0.0f;
            inPlane = normalize(inPlane);
            Vec3 onFace = randomInBox(rng, box.halfExtents * 0.9f);
            onFace[axis] = sign * box.halfExtents[axis];
            for (const float offset : {1e-4f, -1e-4f})
            {
                Vec3 origin = onFace - inPlane * 10.0f;
                origin[axis] += sign * offset;
                Vec3 translation = inPlane * 20.0f;
                translation[axis] = uniform(rng, -1e-7f, 1e-7f); // nearly parallel
                RayCastInput ray = makeRay(origin, translation);
                const bool hits = rayBox(box, ray, hit);
                REQUIRE(hits == (offset < 0.0f));
                if (hits)
                {
                    CHECK(std::fabs(hit.normal[axis]) == 0.0f); // entered through a side face
                    CHECK(std::fabs(float(boxSignedDistance(box, toL(hit.point)))) <= 1e-6f);
                }
            }
        }
    }
    SECTION("hull: rays along random faces, just inside and just outside their planes")
    {
        int hits = 0;
        for (int h = 0; h < 50; ++h)
        {
            const ConvexHull hull = physics_test::randomCloudHull(rng, 6);
            const float scale = float(hullScale(hull));
            for (std::size_t f = 0; f < hull.faces.size(); ++f)
            {
                const HullFace& face = hull.faces[f];
                Vec3 centre{};
                for (int k = 0; k < face.indexCount; ++k)
                {
                    centre += hull.vertices[hull.faceVertices[face.firstIndex + k]];
                }
                centre = centre / float(face.indexCount);
                Vec3 t1;
                Vec3 t2;
                orthonormalBasis(face.normal, t1, t2);
                const float angle = uniform(rng, 0.0f, 2.0f * kPi);
                const Vec3 inPlane = t1 * std::cos(angle) + t2 * std::sin(angle);
                for (const float offset : {1e-4f, -1e-4f})
                {
                    const Vec3 through = centre + face.normal * (offset * scale);
                    const RayCastInput ray =
                        makeRay(through - inPlane * (4.0f * scale), inPlane * (8.0f * scale));
                    const bool engine = rayHull(hull, ray, hit);
                    if (offset > 0.0f)
                    {
                        CHECK_FALSE(engine); // outside the face's plane all along
                        continue;
                    }
                    if (hullSignedDistance(hull, toL(through)) >= 0)
                    {
                        continue; // a sliver face: `through` is not inside
                    }
                    REQUIRE(engine);
                    ++hits;
                    CHECK(std::fabs(hullSignedDistance(hull, toL(hit.point))) <= 1e-6L * scale);
                    CHECK(dot(hit.normal, inPlane) < 0.0f);
                    // The point just before is outside some face plane; the normal is the face of one of
                    // the planes through the point.
                    const L3 before = toL(ray.origin) + toL(ray.translation) * (Real(hit.fraction) - 1e-5L);
                    CHECK(hullSignedDistance(hull, before) > 0);
                    bool onItsFace = false;
                    for (const HullFace& g : hull.faces)
                    {
                        onItsFace = onItsFace || (near(g.normal, hit.normal) &&
                                                  std::fabs(dotL(toL(g.normal), toL(hit.point)) - g.offset) <=
                                                      1e-6L * scale);
                    }
                    CHECK(onItsFace);
                }
            }
        }
        CHECK(hits > 200);
    }
}

TEST_CASE("rayTriangle: both faces, edges, vertices, edge-on and degenerate triangles", "[raycast]")
{
    RayCastHit hit;
    bool backFace = false;
    const Triangle tri{{0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}}; // front normal +z

    SECTION("front and back faces")
    {
        REQUIRE(rayTriangle(tri, makeRay({0.25f, 0.25f, 1.0f}, {0.0f, 0.0f, -2.0f}), hit, &backFace));
        CHECK(hit.fraction == 0.5f);
        CHECK(hit.point == Vec3{0.25f, 0.25f, 0.0f});
        CHECK(hit.normal == Vec3{0.0f, 0.0f, 1.0f});
        CHECK_FALSE(backFace);
        REQUIRE(rayTriangle(tri, makeRay({0.25f, 0.25f, -1.0f}, {0.0f, 0.0f, 2.0f}), hit, &backFace));
        CHECK(hit.fraction == 0.5f);
        CHECK(hit.normal == Vec3{0.0f, 0.0f, -1.0f});
        CHECK(backFace);
        REQUIRE(rayTriangle(tri, makeRay({0.25f, 0.25f, -1.0f}, {0.0f, 0.0f, 2.0f}), hit)); // no flag pointer
    }
    SECTION("edges and vertices are part of the triangle; a hair outside is not")
    {
        const Vec3 down{0.0f, 0.0f, -2.0f};
        for (const Vec3& p : {Vec3{0.5f, 0.0f, 1.0f}, Vec3{0.0f, 0.5f, 1.0f}, Vec3{0.5f, 0.5f, 1.0f},
                              Vec3{0.0f, 0.0f, 1.0f}, Vec3{1.0f, 0.0f, 1.0f}, Vec3{0.0f, 1.0f, 1.0f}})
        {
            REQUIRE(rayTriangle(tri, makeRay(p, down), hit));
            CHECK(hit.fraction == 0.5f);
            CHECK(hit.point == Vec3{p.x, p.y, 0.0f});
        }
        for (const Vec3& p : {Vec3{0.5f, -1e-6f, 1.0f}, Vec3{-1e-6f, 0.5f, 1.0f}, Vec3{0.5f, 0.500001f, 1.0f},
                              Vec3{1.000001f, 0.0f, 1.0f}, Vec3{-1e-6f, -1e-6f, 1.0f}})
        {
            CHECK_FALSE(rayTriangle(tri, makeRay(p, down), hit));
        }
    }
    SECTION("edge-on rays miss; slightly tilted ones hit")
    {
        CHECK_FALSE(rayTriangle(tri, makeRay({-1.0f, 0.25f, 0.0f}, {3.0f, 0.0f, 0.0f}), hit));
        CHECK_FALSE(rayTriangle(tri, makeRay({-0.75f, 0.25f, 1e-7f}, {3.0f, 0.0f, -3e-7f}), hit)); // 1e-7 rad
        REQUIRE(rayTriangle(tri, makeRay({-0.75f, 0.25f, 1e-4f}, {3.0f, 0.0f, -3e-4f}), hit));     // 1e-4 rad
        CHECK(std::fabs(hit.fraction - 1.0f / 3.0f) <= 1e-6f);
    }
    SECTION("degenerate triangles never hit")
    {
        const Vec3 down{0.0f, 0.0f, -2.0f};
        const Triangle collinear{{0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 0.0f}, {2.0f, 2.0f, 0.0f}};
        const Triangle coincident{{0.5f, 0.5f, 0.0f}, {0.5f, 0.5f, 0.0f}, {0.5f, 0.5f, 0.0f}};
        const Triangle twoSame{{0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}};
        for (const Triangle& t : {collinear, coincident, twoSame})
        {
            CHECK_FALSE(rayTriangle(t, makeRay({0.5f, 0.5f, 1.0f}, down), hit));
            CHECK_FALSE(rayTriangle(t, makeRay({0.5f, 0.0f, 1.0f}, down), hit));
            CHECK_FALSE(rayTriangle(t, makeRay({0.0f, 0.0f, 1.0f}, down), hit));
        }
    }
    SECTION("maxFraction, stopping short, zero length")
    {
        const RayCastInput ray = makeRay({0.25f, 0.25f, 1.0f}, {0.0f, 0.0f, -2.0f}, 0.5f);
        CHECK(rayTriangle(tri, ray, hit));
        CHECK_FALSE(rayTriangle(tri, makeRay(ray.origin, ray.translation, 0.49999f), hit));
        CHECK_FALSE(rayTriangle(tri, makeRay(ray.origin, {0.0f, 0.0f, -0.99999f}), hit));
        CHECK(rayTriangle(tri, makeRay({0.25f, 0.25f, 0.0f}, {0.0f, 0.0f, -1.0f}), hit)); // starts on it
        CHECK(hit.fraction == 0.0f);
        CHECK_FALSE(rayTriangle(tri, makeRay({0.25f, 0.25f, 1.0f}, {0.0f, 0.0f, 1.0f}), hit)); // away
    }
}

TEST_CASE("rayTriangle matches a plane-and-edges oracle over random triangles and rays", "[raycast]")
{
    std::mt19937 rng(909);
    RayCastHit hit;
    bool backFace = false;
    int hits = 0;
    int misses = 0;
    Real worstFraction = 0;
    for (int i = 0; i < 6000; ++i)
    {
        const float scale = float(logUniform(rng, 0.01L, 100.0L));
        const Vec3 centre = randomInBox(rng, Vec3{scale, scale, scale});
        const Triangle tri{centre + randomUnit(rng) * scale * uniform(rng, 0.2f, 1.0f),
                           centre + randomUnit(rng) * scale * uniform(rng, 0.2f, 1.0f),
                           centre + randomUnit(rng) * scale * uniform(rng, 0.2f, 1.0f)};
        const L3 a = toL(tri.a);
        const L3 b = toL(tri.b);
        const L3 c = toL(tri.c);
        const L3 n = crossL(b - a, c - a);
        const Real area2 = normL(n);
        if (area2 < 0.05L * scale * scale)
        {
            continue; // slivers: edge distances below are too coarse
        }
        const L3 unitNormal = n * (1 / area2);
        // A target in the plane, in or around the triangle, and an origin off the plane.
        const float u = uniform(rng, -0.2f, 1.0f);
        const float v = uniform(rng, -0.2f, 1.0f);
        const Vec3 target = tri.a + (tri.b - tri.a) * u + (tri.c - tri.a) * v;
        const bool longRay = i % 10 == 0;
        const float distance = longRay ? 1e4f : float(logUniform(rng, 1e-3L * scale, 30.0L * scale));
        const Vec3 origin = target + randomUnit(rng) * distance;
        const RayCastInput ray = makeRay(origin, (target - origin) * uniform(rng, 0.7f, 2.0f));

        // The oracle: where the line meets the plane, and that point's distances inside each edge.
        const L3 o = toL(ray.origin);
        const L3 d = toL(ray.translation);
        const Real sine = dotL(unitNormal, d) / normL(d);
        if (std::fabs(sine) < 1e-3L)
        {
            continue; // near edge-on: the threshold is the engine's choice, tested above
        }
        const Real t = dotL(unitNormal, a - o) / dotL(unitNormal, d);
        const L3 p = o + d * t;
        Real inside = std::numeric_limits<Real>::infinity();
        const L3 corners[3] = {a, b, c};
        for (int k = 0; k < 3; ++k)
        {
            const L3 edge = corners[(k + 1) % 3] - corners[k];
            inside = std::min(inside, dotL(crossL(edge, p - corners[k]), unitNormal) / normL(edge));
        }
        const Real fractionMargin = std::min(std::fabs(t), std::fabs(t - 1)) * normL(d);
        const Real tolerance = 1e-9L * (scale + normL(o));
        if (std::fabs(inside) <= tolerance || fractionMargin <= tolerance)
        {
            continue; // on the boundary: either answer
        }
        const bool expectHit = inside > 0 && t >= 0 && t <= 1;
        INFO("case " << i << " inside " << double(inside) << " t " << double(t));
        REQUIRE(rayTriangle(tri, ray, hit, &backFace) == expectHit);
        if (!expectHit)
        {
            ++misses;
            continue;
        }
        ++hits;
        const Real error = std::fabs(Real(hit.fraction) - t);
        worstFraction = std::max(worstFraction, error / t);
        CHECK(error <= 1e-5L * t);
        const bool fromBehind = sine > 0;
        CHECK(backFace == fromBehind);
        const L3 facing = fromBehind ? unitNormal * -1 : unitNormal;
        CHECK(normL(toL(hit.normal) - facing) <= 1e-5L);
        CHECK(std::fabs(dotL(unitNormal, toL(hit.point) - a)) <= 1e-6L * (scale + normL(toL(hit.point))));
    }
    INFO("hits " << hits << " misses " << misses << " worst relative fraction error "
                 << double(worstFraction));
    CHECK(hits > 1000);
    CHECK(misses > 1000);
    CHECK(worstFraction < 1e-6L);
}

TEST_CASE("rayShape dispatches on the type and checks the hull index", "[raycast]")
{
    std::mt19937 rng(1010);
    const std::vector<ConvexHull> hulls{physics_test::randomCloudHull(rng, 6),
                                        makeBoxHull(Vec3{0.3f, 0.4f, 0.5f})};
    Shape hullShape;
    hullShape.type = ShapeType::Hull;
    hullShape.hullIndex = 1;
    const Shape shapes[] = {Shape::makeSphere(0.7f), Shape::makeCapsule(0.5f, 0.3f),
                            Shape::makeBox(Vec3{0.4f, 0.8f, 0.2f}), hullShape,
                            Shape::makePlane(normalize(Vec3{1.0f, 2.0f, -0.5f}), 0.3f)};
    for (int i = 0; i < 2000; ++i)
    {
        const RayCastInput ray = randomRay(rng, Vec3{1.0f, 1.0f, 1.0f}, 1.0f);
        for (const Shape& shape : shapes)
        {
            RayCastHit viaShape;
            RayCastHit direct;
            bool expected = false;
            switch (shape.type)
            {
            case ShapeType::Sphere:
                expected = raySphere(shape.sphere, ray, direct);
                break;
            case ShapeType::Capsule:
                expected = rayCapsule(shape.capsule, ray, direct);
                break;
            case ShapeType::Box:
                expected = rayBox(shape.box, ray, direct);
                break;
            case ShapeType::Hull:
                expected = rayHull(hulls[shape.hullIndex], ray, direct);
                break;
            case ShapeType::Plane:
                expected = rayPlane(shape.plane, ray, direct);
                break;
            default:
                FAIL("only primitives here");
            }
            REQUIRE(rayShape(shape, ray, hulls, viaShape) == expected);
            if (expected)
            {
                CHECK(sameHit(viaShape, direct));
            }
        }
    }
    RayCastHit hit;
    const RayCastInput through = makeRay({0.0f, 0.0f, -5.0f}, {0.0f, 0.0f, 10.0f});
    CHECK(rayShape(hullShape, through, hulls, hit));
    hullShape.hullIndex = 2;
    CHECK_FALSE(rayShape(hullShape, through, hulls, hit));
    CHECK_FALSE(rayShape(hullShape, through, {}, hit));
}

TEST_CASE("NaN, infinite and out-of-range input returns false and leaves the hit alone", "[raycast]")
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<ConvexHull> hulls{makeBoxHull(Vec3{0.5f, 0.5f, 0.5f})};
    Shape hullShape;
    hullShape.type = ShapeType::Hull;
    const Shape shapes[] = {Shape::makeSphere(0.7f), Shape::makeCapsule(0.5f, 0.3f),
                            Shape::makeBox(Vec3{0.4f, 0.8f, 0.2f}), hullShape,
                            Shape::makePlane(Vec3{0.0f, 1.0f, 0.0f}, 0.0f)};
    const Triangle tri{{-1.0f, 0.0f, -1.0f}, {1.0f, 0.0f, -1.0f}, {0.0f, 0.0f, 1.0f}};
    const RayCastInput good = makeRay({0.01f, 3.0f, 0.02f}, {0.0f, -6.0f, 0.0f});
    std::vector<RayCastInput> bad;
    for (const float value : {nan, inf, -inf})
    {
        for (int axis = 0; axis < 3; ++axis)
        {
            RayCastInput ray = good;
            ray.origin[axis] = value;
            bad.push_back(ray);
            ray = good;
            ray.translation[axis] = value;
            bad.push_back(ray);
        }
        RayCastInput ray = good;
        ray.maxFraction = value;
        bad.push_back(ray);
    }
    RayCastInput negative = good;
    negative.maxFraction = -0.5f;
    bad.push_back(negative);

    const RayCastHit sentinel{-3.0f, Vec3{7.0f, 7.0f, 7.0f}, Vec3{7.0f, 7.0f, 7.0f}};
    for (const Shape& shape : shapes)
    {
        RayCastHit hit = sentinel;
        REQUIRE(rayShape(shape, good, hulls, hit));
        for (const RayCastInput& ray : bad)
        {
            hit = sentinel;
            CHECK_FALSE(rayShape(shape, ray, hulls, hit));
            CHECK(sameHit(hit, sentinel));
        }
    }
    RayCastHit hit = sentinel;
    REQUIRE(rayTriangle(tri, good, hit));
    for (const RayCastInput& ray : bad)
    {
        hit = sentinel;
        CHECK_FALSE(rayTriangle(tri, ray, hit));
        CHECK(sameHit(hit, sentinel));
    }

    // Bad shapes.
    RayCastHit out = sentinel;
    for (const float r : {nan, inf, 0.0f, -1.0f})
    {
        CHECK_FALSE(raySphere(SphereShape{r}, good, out));
        CHECK_FALSE(rayCapsule(CapsuleShape{0.5f, r}, good, out));
        CHECK_FALSE(rayBox(BoxShape{Vec3{0.5f, r == 0.0f ? -1.0f : r, 0.5f}}, good, out));
    }
    for (const float r : {nan, inf, 0.0f})
    {
        CHECK_FALSE(rayPlane(PlaneShape{Vec3{0.0f, r, 0.0f}, 0.0f}, good, out));
    }
    for (const float r : {nan, inf})
    {
        CHECK_FALSE(rayTriangle(Triangle{tri.a, Vec3{r, 0.0f, 0.0f}, tri.c}, good, out));
    }
    CHECK_FALSE(rayCapsule(CapsuleShape{-0.5f, 0.3f}, good, out));
    CHECK_FALSE(rayCapsule(CapsuleShape{nan, 0.3f}, good, out));
    CHECK_FALSE(rayPlane(PlaneShape{Vec3{0.0f, 1.0f, 0.0f}, nan}, good, out));
    CHECK_FALSE(rayHull(ConvexHull{}, good, out));
    ConvexHull broken = hulls[0];
    broken.faces[2].offset = nan;
    CHECK_FALSE(rayHull(broken, good, out));
    CHECK(sameHit(out, sentinel));

    // A plane hit whose point overflows float is refused. Rays near float's range (far beyond what double
    // can place to a metre) still answer with finite values.
    const PlaneShape floor{Vec3{0.0f, 1.0f, 0.0f}, 0.0f};
    CHECK_FALSE(rayPlane(floor, makeRay({3e38f, 1.0f, 0.0f}, {3e38f, -2e-38f, 0.0f}, 1e38f), out));
    const RayCastInput huge = makeRay({-3e38f, 0.1f, 0.2f}, {3.4e38f, 0.0f, 0.0f});
    for (const Shape& shape : shapes)
    {
        if (rayShape(shape, huge, hulls, out))
        {
            CHECK(isFinite(out.point));
            CHECK(isFinite(out.normal));
            CHECK(std::isfinite(out.fraction));
        }
    }
}

TEST_CASE("hit points of long rays are accurate where the shape is, not where the ray starts", "[raycast]")
{
    // A 1e4 m ray: the fraction is a float near 1, but the point comes from the unrounded fraction.
    std::mt19937 rng(1111);
    for (int i = 0; i < 1000; ++i)
    {
        const float r = uniform(rng, 0.1f, 1.0f);
        const Vec3 u = randomUnit(rng);
        const RayCastInput ray = makeRay(u * -1e4f + randomInBox(rng, Vec3{0.05f, 0.05f, 0.05f}), u * 2e4f);
        RayCastHit hit;
        REQUIRE(raySphere(SphereShape{r}, ray, hit));
        CHECK(std::fabs(length(hit.point) - r) <= 2e-7f);
        REQUIRE(rayCapsule(CapsuleShape{0.3f, r}, ray, hit));
        CHECK(std::fabs(float(capsuleSignedDistance(CapsuleShape{0.3f, r}, toL(hit.point)))) <= 2e-7f);
        const BoxShape box{Vec3{r, 0.5f, 0.2f}};
        REQUIRE(rayBox(box, ray, hit));
        CHECK(std::fabs(float(boxSignedDistance(box, toL(hit.point)))) <= 2e-7f);
    }
}

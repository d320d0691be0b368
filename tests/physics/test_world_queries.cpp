// World queries (world_queries.cpp) against brute force over every body of seeded random worlds: spheres,
// capsules, boxes and hulls, static, kinematic and dynamic, on four layers and in four groups, with two
// planes. For every ray the closest hit is the minimum over rayShape of every body (ties to the lower body
// index), all-hits is exactly the set of bodies rayShape hits and any-hit agrees on hit or miss; shape casts
// are castShape over every body; overlaps are the bodies a zero-length castShape touches; distances are
// GJK/EPA run in the world frame (the query works in each body's frame); box queries are the tight boxes.
// Each query runs under a random filter (layer mask, group, ignored body, body types, callback) that the
// brute force applies too. Then rays starting inside bodies, zero-length casts, clipping, plane hits,
// invalid input, no allocation, and four threads querying at once.
#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/raycast.h"
#include "polytope/physics/shape_cast.h"
#include "polytope/physics/support.h"
#include "polytope/physics/world.h"

#include "physics/random_shapes.h"
#include "support/allocation_counter.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

using namespace polytope::physics;
using physics_test::randomRotation;
using physics_test::uniform;

namespace
{
constexpr float kDt = 1.0f / 60.0f;

int randomInt(std::mt19937& rng, int lo, int hi)
{
    return std::uniform_int_distribution<int>(lo, hi)(rng);
}

Shape randomShape(std::mt19937& rng, std::uint32_t hullCount)
{
    switch (randomInt(rng, 0, 3))
    {
    case 0:
        return Shape::makeSphere(uniform(rng, 0.2f, 1.2f));
    case 1:
        return Shape::makeCapsule(uniform(rng, 0.1f, 1.0f), uniform(rng, 0.1f, 0.6f));
    case 2:
        return Shape::makeBox({uniform(rng, 0.1f, 1.2f), uniform(rng, 0.1f, 1.2f), uniform(rng, 0.1f, 1.2f)});
    default:
    {
        Shape s;
        s.type = ShapeType::Hull;
        s.hullIndex = static_cast<std::uint32_t>(randomInt(rng, 0, static_cast<int>(hullCount) - 1));
        return s;
    }
    }
}

/// A random world: 4 hulls in the catalogue, two planes (a floor and a wall), `count` bodies in a 24 m
/// cube, stepped a few times without gravity so that the fat boxes come from steps.
World randomWorld(std::uint32_t seed, int count = 150)
{
    std::mt19937 rng(seed);
    WorldConfig config;
    config.gravity = {0.0f, 0.0f, 0.0f};
    config.maxBodies = 1024;
    config.maxContacts = 16384;
    World world(config);
    for (int i = 0; i < 4; ++i)
    {
        REQUIRE(world.addHull(physics_test::randomCloudHull(rng, 8)).status == WorldStatus::Ok);
    }
    BodyDesc floor;
    floor.type = BodyType::Static;
    floor.shape = Shape::makePlane(normalize(Vec3{0.1f, 1.0f, 0.05f}), -12.0f);
    floor.layer = 1;
    REQUIRE(world.createBody(floor).status == WorldStatus::Ok);
    BodyDesc wall;
    wall.type = BodyType::Static;
    wall.shape = Shape::makePlane({-1.0f, 0.0f, 0.0f}, -14.0f);
    wall.transform.q = quatFromAxisAngle({0.0f, 1.0f, 0.0f}, 0.2f);
    wall.group = 2;
    REQUIRE(world.createBody(wall).status == WorldStatus::Ok);
    for (int i = 0; i < count; ++i)
    {
        BodyDesc desc;
        const int type = randomInt(rng, 0, 9);
        desc.type = type < 4 ? BodyType::Static : (type < 5 ? BodyType::Kinematic : BodyType::Dynamic);
        desc.shape = randomShape(rng, 4);
        desc.transform = {
            {uniform(rng, -12.0f, 12.0f), uniform(rng, -12.0f, 12.0f), uniform(rng, -12.0f, 12.0f)},
            randomRotation(rng)};
        if (desc.type != BodyType::Static)
        {
            desc.linearVelocity = {uniform(rng, -3.0f, 3.0f), uniform(rng, -3.0f, 3.0f),
                                   uniform(rng, -3.0f, 3.0f)};
            desc.angularVelocity = {uniform(rng, -2.0f, 2.0f), uniform(rng, -2.0f, 2.0f),
                                    uniform(rng, -2.0f, 2.0f)};
        }
        desc.layer = static_cast<std::uint8_t>(randomInt(rng, 0, 3));
        desc.group = static_cast<std::uint32_t>(std::max(0, randomInt(rng, -3, 3)));
        REQUIRE(world.createBody(desc).status == WorldStatus::Ok);
    }
    for (int i = 0; i < 3; ++i)
    {
        world.step(kDt);
    }
    return world;
}

std::vector<BodyState> bodiesOf(const World& world)
{
    std::vector<BodyState> bodies;
    world.forEachBody([&](const BodyState& b) { bodies.push_back(b); });
    for (std::size_t i = 0; i < bodies.size(); ++i)
    {
        REQUIRE(bodies[i].id.index == i); // no body was destroyed: bodies[i] is slot i
    }
    return bodies;
}

/// A filter callback that lives as long as the program (a FunctionRef refers to it, never copies it).
const auto rejectEveryFifth = [](BodyId id) { return id.index % 5 != 0; };

/// The default filter half the time; otherwise random layers, group, ignored body, body types, and
/// sometimes a callback.
QueryFilter randomFilter(std::mt19937& rng, const std::vector<BodyState>& bodies)
{
    QueryFilter filter;
    if (randomInt(rng, 0, 1) == 0)
    {
        return filter;
    }
    filter.layerMask = static_cast<std::uint32_t>(randomInt(rng, 0, 15)) | 0xFFFFFFF0u;
    filter.ignoreGroup = static_cast<std::uint32_t>(randomInt(rng, 0, 3));
    filter.ignoreBody =
        bodies[static_cast<std::size_t>(randomInt(rng, 0, static_cast<int>(bodies.size()) - 1))].id;
    filter.bodyTypes = static_cast<std::uint8_t>(randomInt(rng, 1, 7));
    if (randomInt(rng, 0, 1) == 0)
    {
        filter.accept = rejectEveryFifth;
    }
    return filter;
}

/// The filter's rule, written out for the brute force.
bool passes(const BodyState& b, const QueryFilter& f)
{
    return ((f.layerMask >> b.layer) & 1u) != 0 && (f.ignoreGroup == 0 || b.group != f.ignoreGroup) &&
           (f.bodyTypes & (1u << static_cast<unsigned>(b.type))) != 0 && !(b.id == f.ignoreBody) &&
           (!f.accept || f.accept(b.id));
}

bool bruteRay(const BodyState& b, const RayCastInput& ray, std::span<const ConvexHull> hulls, RayCastHit& hit)
{
    const RayCastInput local{inverseRotate(b.transform.q, ray.origin - b.transform.p),
                             inverseRotate(b.transform.q, ray.translation), ray.maxFraction};
    return rayShape(b.shape, local, hulls, hit);
}

RayCastInput randomRay(std::mt19937& rng, const std::vector<BodyState>& bodies)
{
    RayCastInput ray;
    ray.origin = {uniform(rng, -16.0f, 16.0f), uniform(rng, -16.0f, 16.0f), uniform(rng, -16.0f, 16.0f)};
    if (randomInt(rng, 0, 4) == 0) // from inside (or near the middle of) a body
    {
        const BodyState& b =
            bodies[static_cast<std::size_t>(randomInt(rng, 0, static_cast<int>(bodies.size()) - 1))];
        if (b.shape.type != ShapeType::Plane)
        {
            ray.origin = b.transform.p + Vec3{uniform(rng, -0.1f, 0.1f), uniform(rng, -0.1f, 0.1f), 0.0f};
        }
    }
    std::normal_distribution<float> n(0.0f, 1.0f);
    ray.translation = normalize(Vec3{n(rng), n(rng), n(rng)}) * uniform(rng, 1.0f, 40.0f);
    if (randomInt(rng, 0, 9) == 0)
    {
        ray.translation = {}; // zero length: hits the bodies holding the origin
    }
    const float fractions[] = {1.0f, 0.5f, 1.7f};
    ray.maxFraction = fractions[randomInt(rng, 0, 2)];
    return ray;
}

ShapeCastInput randomCast(std::mt19937& rng, const std::vector<BodyState>& bodies)
{
    ShapeCastInput cast;
    cast.shape = randomShape(rng, 4);
    const RayCastInput ray = randomRay(rng, bodies);
    cast.start = {ray.origin, randomRotation(rng)};
    cast.translation = ray.translation * 0.6f;
    cast.maxFraction = ray.maxFraction;
    return cast;
}

/// Signed distance from `shape` at `pose` to body b, in the world frame: GJK, or EPA's depth negated.
float bruteDistance(const BodyState& b, const Shape& shape, const Transform& pose,
                    std::span<const ConvexHull> hulls)
{
    if (b.shape.type == ShapeType::Plane)
    {
        const Vec3 n = rotate(b.transform.q, b.shape.plane.normal);
        const float offset = b.shape.plane.offset + dot(n, b.transform.p);
        const Vec3 local =
            withSupport(shape, hulls, [&](const auto& s) { return s.support(inverseRotate(pose.q, -n)); });
        return dot(n, transformPoint(pose, local)) - offset;
    }
    const PenetrationResult pen = withSupport(
        b.shape, hulls,
        [&](const auto& body)
        {
            return withSupport(shape, hulls,
                               [&](const auto& query)
                               {
                                   return penetrationDepth(transformed(body, b.transform),
                                                           transformed(query, pose), pose.p - b.transform.p);
                               });
        });
    return pen.distance > 0.0f ? pen.distance : -pen.depth;
}

bool planeTouchesBox(const BodyState& b, const Aabb& box)
{
    const Vec3 n = rotate(b.transform.q, b.shape.plane.normal);
    const float offset = b.shape.plane.offset + dot(n, b.transform.p);
    return dot(n, box.center()) - dot(absPerElem(n), box.extents()) <= offset;
}

std::vector<std::uint32_t> sorted(std::vector<std::uint32_t> v)
{
    std::sort(v.begin(), v.end());
    return v;
}

/// What brute force expects of a cast (a ray or a shape) over every body that passes the filter.
template <class Hit> struct BruteHits
{
    bool hit = false;
    Hit closest{}; ///< the first body's hit on ties
    std::uint32_t closestBody = 0;
    std::vector<std::uint32_t> all; ///< the bodies hit, ascending
    std::vector<float> fractionOf;  ///< by body index; -1 where missed or filtered out
};

/// hitOn(body, hit) is the single-body test (bruteRay, castShape).
template <class Hit, class HitOn>
BruteHits<Hit> bruteHits(const std::vector<BodyState>& bodies, const QueryFilter& filter, HitOn&& hitOn)
{
    BruteHits<Hit> brute;
    brute.fractionOf.assign(bodies.back().id.index + 1, -1.0f);
    for (const BodyState& b : bodies)
    {
        Hit h;
        if (!passes(b, filter) || !hitOn(b, h))
        {
            continue;
        }
        brute.all.push_back(b.id.index);
        brute.fractionOf[b.id.index] = h.fraction;
        if (!brute.hit || h.fraction < brute.closest.fraction)
        {
            brute.hit = true;
            brute.closest = h;
            brute.closestBody = b.id.index;
        }
    }
    return brute;
}

} // namespace

TEST_CASE("ray queries equal brute force over every body: closest, all and any, under filters", "[queries]")
{
    int hits = 0;
    int startsInside = 0;
    int zeroLength = 0;
    int filtered = 0;
    for (std::uint32_t seed = 1; seed <= 4; ++seed)
    {
        const World world = randomWorld(seed);
        const std::vector<BodyState> bodies = bodiesOf(world);
        std::mt19937 rng(seed * 77);
        for (int q = 0; q < 400; ++q)
        {
            const RayCastInput ray = randomRay(rng, bodies);
            const QueryFilter filter = randomFilter(rng, bodies);
            // Brute force: every body that passes the filter.
            filtered += static_cast<int>(std::count_if(
                bodies.begin(), bodies.end(), [&](const BodyState& b) { return !passes(b, filter); }));
            const BruteHits<RayCastHit> brute = bruteHits<RayCastHit>(
                bodies, filter,
                [&](const BodyState& b, RayCastHit& h) { return bruteRay(b, ray, world.hulls(), h); });
            INFO("seed " << seed << " query " << q);
            RayQueryHit closest;
            REQUIRE(world.castRayClosest(ray, filter, closest) == brute.hit);
            if (brute.hit)
            {
                ++hits;
                startsInside += brute.closest.fraction == 0.0f ? 1 : 0;
                zeroLength += lengthSquared(ray.translation) == 0.0f ? 1 : 0;
                CHECK(closest.body.index == brute.closestBody);
                CHECK(std::fabs(closest.fraction - brute.closest.fraction) <= 1e-6f);
                const BodyState& b = bodies[brute.closestBody];
                CHECK(distance(closest.point, transformPoint(b.transform, brute.closest.point)) <= 1e-4f);
                CHECK(distance(closest.normal, rotate(b.transform.q, brute.closest.normal)) <= 1e-5f);
                CHECK(closest.body == b.id);
            }

            std::vector<std::uint32_t> all;
            world.castRayAll(ray, filter,
                             [&](const RayQueryHit& h)
                             {
                                 all.push_back(h.body.index);
                                 CHECK(h.fraction == brute.fractionOf[h.body.index]);
                                 return ray.maxFraction;
                             });
            REQUIRE(sorted(all) == brute.all); // each once: the brute list has no repeats

            RayQueryHit any;
            REQUIRE(world.castRayAny(ray, filter, any) == brute.hit);
            if (brute.hit)
            {
                REQUIRE(any.body.index < brute.fractionOf.size());
                CHECK(brute.fractionOf[any.body.index] == any.fraction);
            }

            // Clipping at each hit (Box2D's closest-hit callback) ends with the closest hit among those seen.
            float clipped = 2.0f;
            std::uint32_t clippedBody = 0;
            world.castRayAll(ray, filter,
                             [&](const RayQueryHit& h)
                             {
                                 if (h.fraction < clipped ||
                                     (h.fraction == clipped && h.body.index < clippedBody))
                                 {
                                     clipped = h.fraction;
                                     clippedBody = h.body.index;
                                 }
                                 return h.fraction > 0.0f ? h.fraction : -1.0f;
                             });
            if (brute.hit)
            {
                CHECK(clipped == brute.closest.fraction);
            }
        }
    }
    INFO("hits " << hits << " inside " << startsInside << " zero-length " << zeroLength);
    CHECK(hits > 500);
    CHECK(startsInside > 50);
    CHECK(zeroLength > 10);
    CHECK(filtered > 1000);
}

TEST_CASE("shape casts equal castShape over every body: closest and all, under filters", "[queries]")
{
    int hits = 0;
    int penetrating = 0;
    int zeroLength = 0;
    for (std::uint32_t seed = 11; seed <= 13; ++seed)
    {
        const World world = randomWorld(seed);
        const std::vector<BodyState> bodies = bodiesOf(world);
        std::mt19937 rng(seed * 31);
        for (int q = 0; q < 150; ++q)
        {
            ShapeCastInput cast = randomCast(rng, bodies);
            if (q % 10 == 0)
            {
                cast.translation = {};
            }
            const QueryFilter filter = randomFilter(rng, bodies);
            const BruteHits<ShapeCastHit> brute =
                bruteHits<ShapeCastHit>(bodies, filter,
                                        [&](const BodyState& b, ShapeCastHit& h)
                                        { return castShape(cast, b.shape, b.transform, world.hulls(), h); });
            INFO("seed " << seed << " query " << q);
            ShapeQueryHit closest;
            REQUIRE(world.castShapeClosest(cast, filter, closest) == brute.hit);
            if (brute.hit)
            {
                ++hits;
                penetrating += brute.closest.startPenetrating ? 1 : 0;
                zeroLength += lengthSquared(cast.translation) == 0.0f ? 1 : 0;
                CHECK(closest.body.index == brute.closestBody);
                CHECK(std::fabs(closest.fraction - brute.closest.fraction) <= 1e-6f);
                CHECK(distance(closest.point, brute.closest.point) <= 1e-5f);
                CHECK(distance(closest.normal, brute.closest.normal) <= 1e-5f);
                CHECK(closest.startPenetrating == brute.closest.startPenetrating);
                CHECK(closest.penetrationDepth == Approx(brute.closest.penetrationDepth).margin(1e-6f));
            }
            std::vector<std::uint32_t> all;
            world.castShapeAll(cast, filter,
                               [&](const ShapeQueryHit& h)
                               {
                                   all.push_back(h.body.index);
                                   CHECK(h.fraction == brute.fractionOf[h.body.index]);
                                   return cast.maxFraction;
                               });
            REQUIRE(sorted(all) == brute.all);
        }
    }
    INFO("hits " << hits << " penetrating " << penetrating << " zero-length " << zeroLength);
    CHECK(hits > 150);
    CHECK(penetrating > 20);
    CHECK(zeroLength > 5);
}

TEST_CASE("overlap, box and distance queries equal brute force, under filters", "[queries]")
{
    int overlaps = 0;
    int boxHits = 0;
    int near = 0;
    int penetrating = 0;
    for (std::uint32_t seed = 21; seed <= 23; ++seed)
    {
        const World world = randomWorld(seed);
        const std::vector<BodyState> bodies = bodiesOf(world);
        const std::span<const ConvexHull> hulls = world.hulls();
        std::mt19937 rng(seed * 13);
        for (int q = 0; q < 150; ++q)
        {
            const ShapeCastInput cast = randomCast(rng, bodies);
            const Shape shape = cast.shape;
            const Transform pose = cast.start;
            const QueryFilter filter = randomFilter(rng, bodies);
            INFO("seed " << seed << " query " << q);

            // Overlap: a zero-length cast touches exactly the bodies the shape overlaps.
            ShapeCastInput still = cast;
            still.translation = {};
            std::vector<std::uint32_t> expectOverlap;
            for (const BodyState& b : bodies)
            {
                ShapeCastHit h;
                if (passes(b, filter) && castShape(still, b.shape, b.transform, hulls, h))
                {
                    expectOverlap.push_back(b.id.index);
                }
            }
            std::vector<std::uint32_t> overlap;
            world.overlapShape(shape, pose, filter,
                               [&](BodyId id)
                               {
                                   overlap.push_back(id.index);
                                   return true;
                               });
            REQUIRE(sorted(overlap) == expectOverlap);
            overlaps += static_cast<int>(overlap.size());

            // Boxes: the tight boxes (and the planes' half-spaces).
            const Vec3 half{uniform(rng, 0.1f, 4.0f), uniform(rng, 0.1f, 4.0f), uniform(rng, 0.1f, 4.0f)};
            const Aabb box{pose.p - half, pose.p + half};
            std::vector<std::uint32_t> expectBox;
            for (const BodyState& b : bodies)
            {
                const bool touches = b.shape.type == ShapeType::Plane
                                         ? planeTouchesBox(b, box)
                                         : tightBoxOf(b.shape, b.transform, hulls).overlaps(box);
                if (touches && passes(b, filter))
                {
                    expectBox.push_back(b.id.index);
                }
            }
            std::vector<std::uint32_t> inBox;
            world.overlapAabb(box, filter,
                              [&](BodyId id)
                              {
                                  inBox.push_back(id.index);
                                  return true;
                              });
            REQUIRE(sorted(inBox) == expectBox);
            boxHits += static_cast<int>(inBox.size());

            // Distances: GJK/EPA in the world frame; bodies within 1e-3 m of the limit may go either way.
            const float maxDistance = uniform(rng, 0.0f, 3.0f);
            std::vector<std::uint32_t> expectNear;
            std::vector<float> distanceOf(bodies.back().id.index + 1, 1e30f);
            for (const BodyState& b : bodies)
            {
                if (!passes(b, filter))
                {
                    continue;
                }
                distanceOf[b.id.index] = bruteDistance(b, shape, pose, hulls);
                if (distanceOf[b.id.index] <= maxDistance)
                {
                    expectNear.push_back(b.id.index);
                }
            }
            std::vector<std::uint32_t> found;
            world.closestPoints(
                shape, pose, maxDistance, filter,
                [&](const DistanceQueryResult& r)
                {
                    found.push_back(r.body.index);
                    const float expected = distanceOf[r.body.index];
                    CHECK(r.distance == Approx(expected).margin(r.distance < 0.0f ? 2e-3f : 1e-4f));
                    CHECK(length(r.normal) == Approx(1.0f).margin(1e-5f));
                    CHECK(distance(r.pointOnShape - r.pointOnBody, r.normal * r.distance) <= 2e-3f);
                    if (r.distance > 0.0f)
                    {
                        CHECK(distance(r.pointOnShape, r.pointOnBody) == Approx(r.distance).margin(1e-4f));
                    }
                    penetrating += r.distance < 0.0f ? 1 : 0;
                    return true;
                });
            found = sorted(found);
            near += static_cast<int>(found.size());
            for (const BodyState& b : bodies)
            {
                const std::uint32_t i = b.id.index;
                const bool expected = std::binary_search(expectNear.begin(), expectNear.end(), i);
                const bool got = std::binary_search(found.begin(), found.end(), i);
                if (expected != got)
                {
                    INFO("body " << i << " brute distance " << distanceOf[i] << " limit " << maxDistance);
                    CHECK(std::fabs(distanceOf[i] - maxDistance) < 1e-3f);
                }
            }
        }
    }
    INFO("overlaps " << overlaps << " in boxes " << boxHits << " near " << near << " penetrating "
                     << penetrating);
    CHECK(overlaps > 100);
    CHECK(boxHits > 300);
    CHECK(near > 300);
    CHECK(penetrating > 50);
}

TEST_CASE("rays and casts meet the planes; ties go to the lower body index", "[queries]")
{
    World world;
    BodyDesc ground;
    ground.type = BodyType::Static;
    ground.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
    const BodyId plane = world.createBody(ground).id;
    RayQueryHit hit;
    REQUIRE(world.castRayClosest({{1.0f, 4.0f, 2.0f}, {0.0f, -8.0f, 0.0f}, 1.0f}, {}, hit));
    CHECK(hit.body == plane);
    CHECK(hit.fraction == 0.5f);
    CHECK(distance(hit.point, Vec3{1.0f, 0.0f, 2.0f}) < 1e-6f);
    CHECK(distance(hit.normal, Vec3{0.0f, 1.0f, 0.0f}) < 1e-6f);
    CHECK_FALSE(world.castRayClosest({{1.0f, 4.0f, 2.0f}, {0.0f, -3.0f, 0.0f}, 1.0f}, {}, hit));

    // Two static boxes holding the same point: a ray from there hits both at 0, the closest is the first.
    BodyDesc box;
    box.type = BodyType::Static;
    box.shape = Shape::makeBox({1.0f, 1.0f, 1.0f});
    box.transform.p = {0.0f, 3.0f, 0.0f};
    const BodyId first = world.createBody(box).id;
    box.transform.p = {0.5f, 3.0f, 0.0f};
    const BodyId second = world.createBody(box).id;
    for (const Vec3& direction : {Vec3{1.0f, 0.0f, 0.0f}, Vec3{-1.0f, 0.0f, 0.0f}, Vec3{}})
    {
        REQUIRE(world.castRayClosest({{0.2f, 3.0f, 0.0f}, direction, 1.0f}, {}, hit));
        CHECK(hit.body == first);
        CHECK(hit.fraction == 0.0f);
        QueryFilter notFirst;
        notFirst.ignoreBody = first;
        REQUIRE(world.castRayClosest({{0.2f, 3.0f, 0.0f}, direction, 1.0f}, notFirst, hit));
        CHECK(hit.body == second);
    }

    ShapeCastInput sphere;
    sphere.shape = Shape::makeSphere(0.5f);
    sphere.start.p = {5.0f, 5.0f, 0.0f};
    sphere.translation = {0.0f, -10.0f, 0.0f};
    ShapeQueryHit shapeHit;
    REQUIRE(world.castShapeClosest(sphere, {}, shapeHit));
    CHECK(shapeHit.body == plane);
    CHECK(shapeHit.fraction == Approx(0.45f).margin(1e-6f));
    CHECK(distance(shapeHit.normal, Vec3{0.0f, 1.0f, 0.0f}) < 1e-6f);
    sphere.start.p = {0.0f, 5.0f, 0.0f};
    REQUIRE(world.castShapeClosest(sphere, {}, shapeHit));
    CHECK(shapeHit.body == first); // top at y = 4, sphere bottom at 4.5: fraction 0.05
    CHECK(shapeHit.fraction == Approx(0.05f).margin(1e-6f));
    QueryFilter planesOnly;
    auto isPlane = [&](BodyId id) { return id == plane; }; // outlives the filter's reference to it
    planesOnly.accept = isPlane;
    REQUIRE(world.castShapeClosest(sphere, planesOnly, shapeHit));
    CHECK(shapeHit.body == plane);

    // The distance to the plane (the boxes are farther than the limit).
    int reported = 0;
    world.closestPoints(Shape::makeSphere(0.5f), {{3.0f, 1.5f, 5.0f}, {}}, 2.0f, {},
                        [&](const DistanceQueryResult& r)
                        {
                            ++reported;
                            CHECK(r.body == plane);
                            CHECK(r.distance == Approx(1.0f).margin(1e-6f));
                            CHECK(distance(r.pointOnBody, Vec3{3.0f, 0.0f, 5.0f}) < 1e-6f);
                            CHECK(distance(r.pointOnShape, Vec3{3.0f, 1.0f, 5.0f}) < 1e-6f);
                            return true;
                        });
    CHECK(reported == 1);
}

TEST_CASE("queries honour each field of the filter", "[queries][filter]")
{
    World world;
    BodyDesc desc;
    desc.type = BodyType::Static;
    desc.shape = Shape::makeBox({0.5f, 0.5f, 0.5f});
    std::vector<BodyId> ids;
    // Five boxes along x at 2 m spacing: layers 0, 1, 2, 1, 0; groups 0, 3, 0, 3, 0; the last is dynamic.
    const std::uint8_t layers[] = {0, 1, 2, 1, 0};
    const std::uint32_t groups[] = {0, 3, 0, 3, 0};
    for (int i = 0; i < 5; ++i)
    {
        desc.transform.p = {2.0f * static_cast<float>(i + 1), 0.0f, 0.0f};
        desc.layer = layers[i];
        desc.group = groups[i];
        desc.type = i == 4 ? BodyType::Dynamic : BodyType::Static;
        ids.push_back(world.createBody(desc).id);
    }
    auto firstHit = [&](const QueryFilter& filter)
    {
        RayQueryHit hit;
        return world.castRayClosest({{0.0f, 0.0f, 0.0f}, {20.0f, 0.0f, 0.0f}, 1.0f}, filter, hit) ? hit.body
                                                                                                  : BodyId{};
    };
    auto allHits = [&](const QueryFilter& filter)
    {
        std::vector<std::uint32_t> out;
        world.castRayAll({{0.0f, 0.0f, 0.0f}, {20.0f, 0.0f, 0.0f}, 1.0f}, filter,
                         [&](const RayQueryHit& h)
                         {
                             out.push_back(h.body.index);
                             return 1.0f;
                         });
        return sorted(out);
    };
    auto overlapping = [&](const QueryFilter& filter)
    {
        std::vector<std::uint32_t> out;
        world.overlapShape(Shape::makeBox({6.0f, 1.0f, 1.0f}), {{6.0f, 0.0f, 0.0f}, {}}, filter,
                           [&](BodyId id)
                           {
                               out.push_back(id.index);
                               return true;
                           });
        return sorted(out);
    };
    QueryFilter filter;
    CHECK(firstHit(filter) == ids[0]);
    CHECK(allHits(filter).size() == 5);
    filter.layerMask = ~1u; // not layer 0
    CHECK(firstHit(filter) == ids[1]);
    CHECK(allHits(filter) == std::vector<std::uint32_t>{ids[1].index, ids[2].index, ids[3].index});
    CHECK(overlapping(filter) == allHits(filter));
    filter.ignoreGroup = 3;
    CHECK(firstHit(filter) == ids[2]);
    CHECK(overlapping(filter) == std::vector<std::uint32_t>{ids[2].index});
    filter.ignoreBody = ids[2];
    CHECK(firstHit(filter).isNull());
    filter = {};
    filter.bodyTypes = kQueryDynamic;
    CHECK(firstHit(filter) == ids[4]);
    CHECK(overlapping(filter) == std::vector<std::uint32_t>{ids[4].index});
    filter.bodyTypes = kQueryStatic | kQueryKinematic;
    CHECK(allHits(filter).size() == 4);
    filter = {};
    auto oddOnly = [](BodyId id) { return id.index % 2 == 1; };
    filter.accept = oddOnly;
    CHECK(firstHit(filter) == ids[1]);
    CHECK(allHits(filter) == std::vector<std::uint32_t>{ids[1].index, ids[3].index});

    // As a body on layer 2 in group 3 would collide, with layer 1 not meeting layer 2.
    REQUIRE(world.setLayersCollide(1, 2, false) == WorldStatus::Ok);
    filter = {};
    filter.layerMask = world.layerMask(2);
    filter.ignoreGroup = 3;
    CHECK(allHits(filter) == std::vector<std::uint32_t>{ids[0].index, ids[2].index, ids[4].index});
    int count = 0;
    world.overlapAabb({{0.0f, -1.0f, -1.0f}, {20.0f, 1.0f, 1.0f}}, filter,
                      [&](BodyId)
                      {
                          ++count;
                          return true;
                      });
    CHECK(count == 3);
    count = 0;
    world.closestPoints(Shape::makeSphere(0.1f), {{6.0f, 2.0f, 0.0f}, {}}, 10.0f, filter,
                        [&](const DistanceQueryResult&)
                        {
                            ++count;
                            return true;
                        });
    CHECK(count == 3);
    ShapeCastInput cast;
    cast.shape = Shape::makeSphere(0.2f);
    cast.translation = {20.0f, 0.0f, 0.0f};
    count = 0;
    world.castShapeAll(cast, filter,
                       [&](const ShapeQueryHit&)
                       {
                           ++count;
                           return 1.0f;
                       });
    CHECK(count == 3);

    // Stopping: a callback that returns 0 (rays, casts) or false (overlaps) ends the query.
    count = 0;
    world.castRayAll({{0.0f, 0.0f, 0.0f}, {20.0f, 0.0f, 0.0f}, 1.0f}, {},
                     [&](const RayQueryHit&)
                     {
                         ++count;
                         return 0.0f;
                     });
    CHECK(count == 1);
    count = 0;
    world.overlapAabb({{0.0f, -1.0f, -1.0f}, {20.0f, 1.0f, 1.0f}}, {},
                      [&](BodyId)
                      {
                          ++count;
                          return false;
                      });
    CHECK(count == 1);
}

TEST_CASE("invalid query input reports nothing", "[queries]")
{
    const World world = randomWorld(5, 40);
    const float nan = NAN;
    RayQueryHit rayHit;
    CHECK_FALSE(world.castRayClosest({{nan, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}, 1.0f}, {}, rayHit));
    CHECK_FALSE(world.castRayClosest({{0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}, -1.0f}, {}, rayHit));
    CHECK_FALSE(world.castRayAny({{0.0f, 0.0f, 0.0f}, {INFINITY, 0.0f, 0.0f}, 1.0f}, {}, rayHit));
    int calls = 0;
    auto count = [&](BodyId)
    {
        ++calls;
        return true;
    };
    world.castRayAll({{0.0f, 0.0f, 0.0f}, {1.0f, nan, 0.0f}, 1.0f}, {},
                     [&](const RayQueryHit&)
                     {
                         ++calls;
                         return 1.0f;
                     });
    ShapeCastInput cast;
    ShapeQueryHit shapeHit;
    cast.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f); // a plane cannot move
    CHECK_FALSE(world.castShapeClosest(cast, {}, shapeHit));
    cast.shape.type = ShapeType::Hull;
    cast.shape.hullIndex = 99; // not in the catalogue
    CHECK_FALSE(world.castShapeClosest(cast, {}, shapeHit));
    cast.shape = Shape::makeSphere(-1.0f);
    CHECK_FALSE(world.castShapeClosest(cast, {}, shapeHit));
    cast.shape = Shape::makeSphere(1.0f);
    cast.start.q = {0.0f, 0.0f, 0.0f, 0.0f};
    CHECK_FALSE(world.castShapeClosest(cast, {}, shapeHit));
    world.overlapShape(Shape::makeSphere(nan), {}, {}, count);
    world.overlapShape(Shape::makeSphere(100.0f), {{nan, 0.0f, 0.0f}, {}}, {}, count);
    world.overlapAabb({{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 1.0f}}, {}, count); // inverted
    world.closestPoints(Shape::makeSphere(100.0f), {}, -1.0f, {},
                        [&](const DistanceQueryResult&)
                        {
                            ++calls;
                            return true;
                        });
    CHECK(calls == 0);
    // The same queries with valid input do find bodies (the world is full of them).
    world.overlapShape(Shape::makeSphere(100.0f), {}, {}, count);
    CHECK(calls > 30);
}

namespace
{
/// A mixed list of queries and a digest of each one's results, for the threads test.
struct QueryBatch
{
    std::vector<RayCastInput> rays;
    std::vector<ShapeCastInput> casts;
    std::vector<QueryFilter> filters;
};

std::uint64_t mix(std::uint64_t h, std::uint64_t v)
{
    return (h ^ v) * 0x100000001b3ull;
}
std::uint64_t bitsOf(float f)
{
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

/// Runs every query of the batch; out[i] digests query i's results (out must be sized already).
void runBatch(const World& world, const QueryBatch& batch, std::vector<std::uint64_t>& out)
{
    for (std::size_t i = 0; i < batch.rays.size(); ++i)
    {
        const QueryFilter& filter = batch.filters[i];
        std::uint64_t h = 0xcbf29ce484222325ull;
        RayQueryHit rayHit;
        if (world.castRayClosest(batch.rays[i], filter, rayHit))
        {
            h = mix(mix(h, rayHit.body.index), bitsOf(rayHit.fraction));
        }
        world.castRayAll(batch.rays[i], filter,
                         [&](const RayQueryHit& hit)
                         {
                             h = mix(mix(h, hit.body.index),
                                     bitsOf(hit.fraction)); // in the tree's fixed order
                             return 1e9f;
                         });
        ShapeQueryHit shapeHit;
        if (world.castShapeClosest(batch.casts[i], filter, shapeHit))
        {
            h = mix(mix(h, shapeHit.body.index), bitsOf(shapeHit.fraction));
        }
        world.overlapShape(batch.casts[i].shape, batch.casts[i].start, filter,
                           [&](BodyId id)
                           {
                               h = mix(h, id.index);
                               return true;
                           });
        world.closestPoints(batch.casts[i].shape, batch.casts[i].start, 1.0f, filter,
                            [&](const DistanceQueryResult& r)
                            {
                                h = mix(mix(h, r.body.index), bitsOf(r.distance));
                                return true;
                            });
        out[i] = h;
    }
}

QueryBatch makeBatch(const std::vector<BodyState>& bodies, std::uint32_t seed, int count)
{
    std::mt19937 rng(seed);
    QueryBatch batch;
    for (int i = 0; i < count; ++i)
    {
        batch.rays.push_back(randomRay(rng, bodies));
        batch.casts.push_back(randomCast(rng, bodies));
        batch.filters.push_back(randomFilter(rng, bodies));
    }
    return batch;
}
} // namespace

TEST_CASE("four threads querying one world at once get what one thread gets", "[queries][tasks]")
{
    const World world = randomWorld(41);
    const QueryBatch batch = makeBatch(bodiesOf(world), 99, 150);
    std::vector<std::uint64_t> alone(batch.rays.size());
    runBatch(world, batch, alone);
    std::vector<std::vector<std::uint64_t>> results(4, std::vector<std::uint64_t>(batch.rays.size()));
    for (int round = 0; round < 3; ++round)
    {
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
        {
            threads.emplace_back([&, t] { runBatch(world, batch, results[t]); });
        }
        for (std::thread& thread : threads)
        {
            thread.join();
        }
        for (int t = 0; t < 4; ++t)
        {
            INFO("round " << round << " thread " << t);
            CHECK(results[t] == alone);
        }
    }
}

TEST_CASE("queries allocate nothing", "[queries][allocation]")
{
    const World world = randomWorld(51);
    const QueryBatch batch = makeBatch(bodiesOf(world), 7, 100);
    std::vector<std::uint64_t> digests(batch.rays.size());
    runBatch(world, batch, digests); // warm
    std::int64_t allocations = 0;
    {
        polytope::test::AllocationCounter counter;
        runBatch(world, batch, digests);
        int calls = 0;
        for (const RayCastInput& ray : batch.rays)
        {
            RayQueryHit hit;
            calls += world.castRayAny(ray, {}, hit) ? 1 : 0;
            world.overlapAabb({ray.origin - Vec3{2.0f, 2.0f, 2.0f}, ray.origin + Vec3{2.0f, 2.0f, 2.0f}}, {},
                              [&](BodyId)
                              {
                                  ++calls;
                                  return true;
                              });
            world.castShapeAll(batch.casts[0], {},
                               [&](const ShapeQueryHit&)
                               {
                                   ++calls;
                                   return 1.0f;
                               });
        }
        allocations = counter.stop();
        CHECK(calls > 0);
    }
    CHECK(allocations == 0);
}

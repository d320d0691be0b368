// World shape casts, overlaps and closest points against triangle meshes and heightfields (world_queries.cpp
// on castShapeTriangle of shape_cast.h), checked against oracles that share no code with the triangle
// paths but GJK's simplex sub-algorithm:
// - closed forms: a sphere cast straight down onto a flat mesh and a flat heightfield (also on a tilted
//   mesh body), spheres and boxes sliding edge-on into a triangle, depths of starts in a floor, distances
//   to a floor and to the rim of a heightfield hole;
// - a bisection on the signed distance (physics/signed_distance_oracle.h: GJK and EPA with 1e-9 tolerances,
//   run in the world frame about the triangle's first vertex) over every triangle: the first time of impact
//   of spheres, capsules, boxes and hulls swept at angles onto sloped triangles and terrain, edge-on sweeps
//   included; the signed distance is convex in the fraction, so a golden-section search finds the closest
//   approach and a bisection before it the time of impact;
// - brute force: a mesh body's hit is castShapeTriangle's first over every triangle, bit for bit (the
//   query's box pruning and clipping lose nothing), overlaps are the triangles' GJK verdicts, distances the
//   nearest triangle's;
// then holes, the triangle index (subShape), two threads querying at once, and no allocation.
#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/heightfield.h"
#include "polytope/physics/shape_cast.h"
#include "polytope/physics/support.h"
#include "polytope/physics/triangle_mesh.h"
#include "polytope/physics/world.h"

#include "physics/convex_minimum.h"
#include "physics/random_shapes.h"
#include "physics/signed_distance_oracle.h"
#include "support/allocation_counter.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <thread>
#include <vector>

using namespace polytope::physics;
using physics_test::minimiseConvex;
using physics_test::oracleDistance;
using physics_test::randomRotation;
using physics_test::uniform;

namespace
{

// ---- Geometry ------------------------------------------------------------------------------------------

std::shared_ptr<const TriangleMesh> meshOf(const std::vector<Vec3>& vertices,
                                           const std::vector<std::uint32_t>& indices)
{
    TriangleMeshBuildResult built = buildTriangleMesh(vertices, indices, {});
    REQUIRE(built.ok());
    return std::make_shared<const TriangleMesh>(std::move(built.mesh));
}

/// A grid of cells x cells squares of `cell` metres from the origin along +x and +z, two triangles per
/// cell, counter-clockwise from above, vertex (i, j) at height height(i, j).
template <class Height>
std::shared_ptr<const TriangleMesh> gridMesh(std::uint32_t cells, float cell, Height height)
{
    std::vector<Vec3> vertices;
    std::vector<std::uint32_t> indices;
    for (std::uint32_t i = 0; i <= cells; ++i)
    {
        for (std::uint32_t j = 0; j <= cells; ++j)
        {
            vertices.push_back({float(i) * cell, height(i, j), float(j) * cell});
        }
    }
    const auto at = [&](std::uint32_t i, std::uint32_t j) { return i * (cells + 1) + j; };
    for (std::uint32_t i = 0; i < cells; ++i)
    {
        for (std::uint32_t j = 0; j < cells; ++j)
        {
            indices.insert(indices.end(), {at(i, j), at(i, j + 1), at(i + 1, j)});
            indices.insert(indices.end(), {at(i + 1, j), at(i, j + 1), at(i + 1, j + 1)});
        }
    }
    return meshOf(vertices, indices);
}

std::shared_ptr<const TriangleMesh> flatMesh(std::uint32_t cells, float cell)
{
    return gridMesh(cells, cell, [](std::uint32_t, std::uint32_t) { return 0.0f; });
}

/// A heightfield of samples x samples heights (row by row) `cell` metres apart, with the hole cells given.
std::shared_ptr<const HeightField> heightFieldOf(std::uint32_t samples, float cell,
                                                 const std::vector<float>& heights,
                                                 const std::vector<std::uint32_t>& holeCells = {})
{
    std::vector<std::uint8_t> holes;
    const std::uint32_t cells = (samples - 1) * (samples - 1);
    if (!holeCells.empty())
    {
        holes.assign((cells + 7) / 8, 0);
        for (const std::uint32_t c : holeCells)
        {
            holes[c / 8] = static_cast<std::uint8_t>(holes[c / 8] | (1u << (c % 8)));
        }
    }
    HeightFieldDesc desc;
    desc.sampleCountX = samples;
    desc.sampleCountZ = samples;
    desc.cellSizeX = cell;
    desc.cellSizeZ = cell;
    desc.heights = heights;
    desc.holeMask = holes;
    HeightFieldBuildResult built = buildHeightField(desc);
    REQUIRE(built.ok());
    return std::make_shared<const HeightField>(std::move(built.heightField));
}

std::shared_ptr<const HeightField> flatHeightField(std::uint32_t samples, float cell,
                                                   const std::vector<std::uint32_t>& holeCells = {})
{
    return heightFieldOf(samples, cell, std::vector<float>(std::size_t(samples) * samples, 0.0f), holeCells);
}

BodyId addStatic(World& world, const Shape& shape, const Transform& transform)
{
    BodyDesc desc;
    desc.type = BodyType::Static;
    desc.shape = shape;
    desc.transform = transform;
    const CreateBodyResult created = world.createBody(desc);
    REQUIRE(created.status == WorldStatus::Ok);
    return created.id;
}

Shape meshShape(const AddShapeResult& added)
{
    REQUIRE(added.status == WorldStatus::Ok);
    return Shape::makeCatalogued(ShapeType::Mesh, added.index);
}

Shape fieldShape(const AddShapeResult& added)
{
    REQUIRE(added.status == WorldStatus::Ok);
    return Shape::makeCatalogued(ShapeType::HeightField, added.index);
}

Vec3 randomUnit(std::mt19937& rng)
{
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (;;)
    {
        const Vec3 v{n(rng), n(rng), n(rng)};
        if (length(v) > 1e-3f)
        {
            return normalize(v);
        }
    }
}

/// A query shape of kind 0 (sphere), 1 (capsule), 2 (box) or 3 (hull `hullIndex`), 0.1 to 1 m.
Shape queryShape(std::mt19937& rng, int kind, std::uint32_t hullIndex)
{
    switch (kind)
    {
    case 0:
        return Shape::makeSphere(uniform(rng, 0.1f, 0.8f));
    case 1:
        return Shape::makeCapsule(uniform(rng, 0.1f, 0.6f), uniform(rng, 0.1f, 0.5f));
    case 2:
        return Shape::makeBox({uniform(rng, 0.1f, 0.8f), uniform(rng, 0.1f, 0.8f), uniform(rng, 0.1f, 0.8f)});
    default:
    {
        Shape s;
        s.type = ShapeType::Hull;
        s.hullIndex = hullIndex;
        return s;
    }
    }
}

const char* kindName(ShapeType type)
{
    switch (type)
    {
    case ShapeType::Sphere:
        return "sphere";
    case ShapeType::Capsule:
        return "capsule";
    case ShapeType::Box:
        return "box";
    default:
        return "hull";
    }
}

using physics_test::boundOf;

Triangle worldTriangle(const Triangle& local, const Transform& xf)
{
    return {transformPoint(xf, local.a), transformPoint(xf, local.b), transformPoint(xf, local.c)};
}

double triangleBound(const Triangle& t)
{
    const Vec3 centroid = (t.a + t.b + t.c) * (1.0f / 3.0f);
    return std::max(
        {double(length(t.a - centroid)), double(length(t.b - centroid)), double(length(t.c - centroid))});
}

// ---- The oracle ------------------------------------------------------------------------------------------

/// Signed distance between `shape` at `pose` and a world-frame triangle, computed about its first vertex.
double signedDistance(const Shape& shape, const Transform& pose, const Triangle& world,
                      std::span<const ConvexHull> hulls, Vec3* normal = nullptr)
{
    const TriangleSupport triangle{Vec3{}, world.b - world.a, world.c - world.a};
    const Transform local{pose.p - world.a, pose.q};
    return withSupport(shape, hulls,
                       [&](const auto& m)
                       { return oracleDistance(triangle, transformed(m, local), local.p, normal); });
}

/// The pose of a cast at fraction t, the position formed in double.
Transform poseAt(const ShapeCastInput& cast, double t)
{
    return {toFloat(toDouble(cast.start.p) + toDouble(cast.translation) * t), cast.start.q};
}

using Oracle = physics_test::SweepOracle;

/// The bisection oracle of a cast against one world-frame triangle.
Oracle oracleCast(const ShapeCastInput& cast, const Triangle& world, std::span<const ConvexHull> hulls)
{
    return physics_test::sweepOracle([&](double t)
                                     { return signedDistance(cast.shape, poseAt(cast, t), world, hulls); },
                                     cast.maxFraction);
}

/// What the checks of casts against the oracle measured.
struct CastStats
{
    int cases = 0;
    int hits = 0;
    int misses = 0;
    int starts = 0;
    int ambiguous = 0;
    int edgeOnHits = 0;
    double fractionError = 0.0; ///< worst |fraction - bisection|, non-grazing hits
    double distanceAtHit = 0.0; ///< worst |signed distance at the reported fraction| / s
    double alongNormal = 0.0;   ///< worst |fraction error| * |normal . translation| / s
};

/// Checks one cast's outcome (`got`, `hit`) against the oracle `oracle` whose closest approach is judged
/// at scale `scale`; `distanceAt(t)` is the oracle's signed distance to what the hit names.
template <class DistanceAt>
void checkAgainstOracle(bool got, const ShapeCastHit& hit, const Oracle& oracle, const ShapeCastInput& cast,
                        double scale, DistanceAt distanceAt, CastStats& stats)
{
    ++stats.cases;
    INFO("oracle hit " << oracle.hit << " at " << oracle.fraction << " closest " << oracle.closestDistance
                       << "; cast hit " << got << " at " << hit.fraction << " scale " << scale);
    if (std::fabs(oracle.closestDistance) <= 1e-5 * scale)
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
        return;
    }
    ++stats.hits;
    CHECK(hit.fraction >= 0.0f);
    CHECK(hit.fraction <= cast.maxFraction);
    CHECK(std::fabs(length(hit.normal) - 1.0f) < 1e-5f);
    const double distance = distanceAt(double(hit.fraction));
    if (hit.fraction == 0.0f)
    {
        ++stats.starts;
        CHECK(distance <= 1e-5 * scale);
        if (hit.startPenetrating)
        {
            CHECK(std::fabs(hit.penetrationDepth + std::min(distance, 0.0)) <= 1e-5 * scale);
        }
        return;
    }
    CHECK_FALSE(hit.startPenetrating);
    stats.distanceAtHit = std::max(stats.distanceAtHit, std::fabs(distance) / scale);
    CHECK(std::fabs(distance) <= 3e-6 * scale);
    if (oracle.hit)
    {
        const double error = std::fabs(double(hit.fraction) - oracle.fraction);
        const double approach = std::fabs(double(dot(hit.normal, cast.translation)));
        stats.alongNormal = std::max(stats.alongNormal, error * approach / scale);
        CHECK(error * approach <= 1e-5 * scale);
        if (approach >= 0.05 * scale)
        {
            stats.fractionError = std::max(stats.fractionError, error);
            CHECK(error <= 1e-4);
        }
    }
}

// ---- Result digests, for the thread and allocation tests --------------------------------------------------

struct Digest
{
    std::uint64_t value = 1469598103934665603ull;

    void add(const void* data, std::size_t size)
    {
        const auto* bytes = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < size; ++i)
        {
            value = (value ^ bytes[i]) * 1099511628211ull;
        }
    }
    void add(float v) { add(&v, sizeof v); }
    void add(std::uint32_t v) { add(&v, sizeof v); }
    void add(const Vec3& v)
    {
        add(v.x);
        add(v.y);
        add(v.z);
    }
};

} // namespace

// ---- castShapeTriangle
// -------------------------------------------------------------------------------------

TEST_CASE(
    "castShapeTriangle matches a bisection on the signed distance: spheres, capsules, boxes and hulls at "
    "angles and edge-on onto sloped triangles",
    "[queries][composite][shapecast]")
{
    std::mt19937 rng(20250311u);
    std::vector<ConvexHull> hulls;
    for (int i = 0; i < 4; ++i)
    {
        hulls.push_back(physics_test::randomCloudHull(rng, 8));
    }
    CastStats total;
    for (int kind = 0; kind < 4; ++kind)
    {
        CastStats stats;
        for (int i = 0; i < 400; ++i)
        {
            const Shape shape = queryShape(rng, kind, static_cast<std::uint32_t>(i % 4));
            // A triangle of 0.5 to 3 m, 1 to 4 m from its mesh's origin, the mesh turned and moved at random.
            Triangle local;
            const Vec3 around = randomUnit(rng) * uniform(rng, 1.0f, 4.0f);
            do
            {
                local = {around + randomUnit(rng) * uniform(rng, 0.5f, 1.5f),
                         around + randomUnit(rng) * uniform(rng, 0.5f, 1.5f),
                         around + randomUnit(rng) * uniform(rng, 0.5f, 1.5f)};
            } while (length(cross(local.b - local.a, local.c - local.a)) < 0.2f);
            const Transform meshPose{
                {uniform(rng, -5.0f, 5.0f), uniform(rng, -5.0f, 5.0f), uniform(rng, -5.0f, 5.0f)},
                randomRotation(rng)};
            const Triangle world = worldTriangle(local, meshPose);
            const Vec3 normal = normalize(cross(world.b - world.a, world.c - world.a));
            // Aim at a point of the triangle's plane in or near it (weights down to -0.3: beyond an edge).
            float wa = uniform(rng, -0.3f, 1.0f);
            float wb = uniform(rng, -0.3f, 1.0f);
            float wc = uniform(rng, -0.3f, 1.0f);
            const float sum = wa + wb + wc;
            wa /= sum;
            wb /= sum;
            wc /= sum;
            const Vec3 aim = world.a * wa + world.b * wb + world.c * wc;
            const bool edgeOn = i % 3 == 0;
            Vec3 direction = randomUnit(rng);
            Vec3 offset{};
            const double scale = std::max(boundOf(shape, hulls), triangleBound(world));
            if (edgeOn)
            {
                // Parallel to the triangle's plane, the shape's origin at most 0.8 of its size off the plane:
                // it meets an edge or a vertex first, or passes beside.
                direction = normalize(direction - normal * dot(direction, normal));
                offset = normal * (uniform(rng, -0.8f, 0.8f) * float(boundOf(shape, hulls)));
            }
            const float back = float(scale) * uniform(rng, 1.5f, 3.0f);
            ShapeCastInput cast;
            cast.shape = shape;
            cast.start = {aim + offset - direction * back, randomRotation(rng)};
            cast.translation = direction * (back * uniform(rng, 0.4f, 2.0f));
            cast.maxFraction = i % 5 == 0 ? uniform(rng, 0.2f, 1.0f) : 1.0f;

            ShapeCastHit hit;
            const bool got = castShapeTriangle(cast, local, meshPose, hulls, hit);
            const Oracle oracle = oracleCast(cast, world, hulls);
            INFO(kindName(shape.type) << " case " << i << (edgeOn ? " edge-on" : ""));
            checkAgainstOracle(
                got, hit, oracle, cast, scale,
                [&](double t) { return signedDistance(shape, poseAt(cast, t), world, hulls); }, stats);
            if (got && hit.fraction > 0.0f)
            {
                stats.edgeOnHits += edgeOn ? 1 : 0;
                CHECK(dot(hit.normal, cast.translation) <= 0.0f); // the shape arrives against the normal
                // The cutoff: at the hit's fraction the same hit, bit for bit; just below it, a miss.
                ShapeCastHit clipped;
                REQUIRE(castShapeTriangle(cast, local, meshPose, hulls, clipped, hit.fraction));
                CHECK(clipped.fraction == hit.fraction);
                CHECK(clipped.iterations == hit.iterations);
                CHECK((clipped.point.x == hit.point.x && clipped.point.y == hit.point.y &&
                       clipped.point.z == hit.point.z));
                CHECK((clipped.normal.x == hit.normal.x && clipped.normal.y == hit.normal.y &&
                       clipped.normal.z == hit.normal.z));
                CHECK_FALSE(castShapeTriangle(cast, local, meshPose, hulls, clipped,
                                              std::nextafter(hit.fraction, 0.0f)));
            }
            if (got)
            {
                // The point is on the triangle.
                const Vec3 p = hit.point;
                const double off = std::fabs(
                    signedDistance(Shape::makeSphere(1e-6f), {p, Quat::identity()}, world, hulls) + 1e-6);
                CHECK(off <= 1e-5 * scale + (hit.startPenetrating ? hit.penetrationDepth : 0.0f));
            }
        }
        INFO(kindName(queryShape(rng, kind, 0).type));
        CHECK(stats.hits > 60);
        CHECK(stats.misses > 30);
        CHECK(stats.edgeOnHits > 10);
        total.cases += stats.cases;
        total.hits += stats.hits;
        total.misses += stats.misses;
        total.starts += stats.starts;
        total.ambiguous += stats.ambiguous;
        total.edgeOnHits += stats.edgeOnHits;
        total.fractionError = std::max(total.fractionError, stats.fractionError);
        total.distanceAtHit = std::max(total.distanceAtHit, stats.distanceAtHit);
        total.alongNormal = std::max(total.alongNormal, stats.alongNormal);
    }
    WARN("castShapeTriangle: " << total.cases << " cases, " << total.hits << " hits (" << total.starts
                               << " at start, " << total.edgeOnHits << " edge-on), " << total.misses
                               << " misses, " << total.ambiguous
                               << " ambiguous; worst fraction error vs bisection " << total.fractionError
                               << ", along normal " << total.alongNormal << " s, distance at hit "
                               << total.distanceAtHit << " s");
}

TEST_CASE("castShapeTriangle refuses invalid input and leaves the hit alone",
          "[queries][composite][shapecast]")
{
    const Triangle triangle{{0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 1.0f}, {1.0f, 0.0f, 0.0f}};
    ShapeCastInput cast;
    cast.shape = Shape::makeSphere(0.25f);
    cast.start.p = {0.25f, 1.0f, 0.25f};
    cast.translation = {0.0f, -2.0f, 0.0f};
    ShapeCastHit hit;
    REQUIRE(castShapeTriangle(cast, triangle, Transform::identity(), {}, hit));
    CHECK(hit.fraction == Approx(0.375f).margin(1e-6));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    ShapeCastHit untouched;
    untouched.fraction = 7.0f;
    Triangle bad = triangle;
    bad.b.y = nan;
    CHECK_FALSE(castShapeTriangle(cast, bad, Transform::identity(), {}, untouched));
    bad = triangle;
    bad.c.x = std::numeric_limits<float>::infinity();
    CHECK_FALSE(castShapeTriangle(cast, bad, Transform::identity(), {}, untouched));
    CHECK_FALSE(castShapeTriangle(cast, triangle, Transform::identity(), {}, untouched, -1.0f));
    CHECK_FALSE(castShapeTriangle(cast, triangle, Transform::identity(), {}, untouched, nan));
    CHECK_FALSE(
        castShapeTriangle(cast, triangle, {{0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}}, {}, untouched));
    ShapeCastInput plane = cast;
    plane.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
    CHECK_FALSE(castShapeTriangle(plane, triangle, Transform::identity(), {}, untouched));
    ShapeCastInput hull = cast;
    hull.shape.type = ShapeType::Hull;
    hull.shape.hullIndex = 3; // no hulls given
    CHECK_FALSE(castShapeTriangle(hull, triangle, Transform::identity(), {}, untouched));
    ShapeCastInput nanCast = cast;
    nanCast.translation.x = nan;
    CHECK_FALSE(castShapeTriangle(nanCast, triangle, Transform::identity(), {}, untouched));
    CHECK(untouched.fraction == 7.0f);
    // A zero-area triangle is the segment it is: the sphere lands on it.
    const Triangle flat{{0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}, {0.5f, 0.0f, 0.0f}};
    cast.start.p = {0.25f, 1.0f, 0.0f};
    REQUIRE(castShapeTriangle(cast, flat, Transform::identity(), {}, hit));
    CHECK(hit.fraction == Approx(0.375f).margin(1e-6));
}

TEST_CASE("edge-on: spheres, boxes and hulls sliding in a triangle's plane hit its edge at the closed form",
          "[queries][composite][shapecast]")
{
    // The triangle lies in y = 0 with its edge ab on x = 0 (z from -1 to 1); c is at x = 2.
    const Triangle triangle{{0.0f, 0.0f, -1.0f}, {0.0f, 0.0f, 1.0f}, {2.0f, 0.0f, 0.0f}};
    const std::vector<ConvexHull> hulls{makeBoxHull({0.5f, 0.25f, 0.5f})};
    Shape hull;
    hull.type = ShapeType::Hull;
    hull.hullIndex = 0;
    // The shape, its half width along x where it crosses the plane, and its origin's height over the plane
    // and z: each straddles the plane, so it meets edge ab first.
    struct Case
    {
        Shape shape;
        float halfWidth;
        float height;
        float z;
    };
    const Case cases[] = {
        {Shape::makeSphere(0.5f), 0.5f, 0.0f, 0.0f},
        {Shape::makeBox({0.5f, 0.25f, 0.5f}), 0.5f, 0.0f, 0.3f},
        {Shape::makeBox({0.5f, 0.25f, 0.5f}), 0.5f, 0.2f, -0.4f},
        {Shape::makeBox({0.5f, 0.25f, 0.5f}), 0.5f, -0.249f, 0.9f},
        {hull, 0.5f, 0.1f, 0.0f},
        {Shape::makeCapsule(0.5f, 0.25f), 0.25f, 0.3f, 0.0f},
    };
    for (const Case& c : cases)
    {
        INFO(kindName(c.shape.type) << " at height " << c.height << ", z " << c.z);
        ShapeCastInput cast;
        cast.shape = c.shape;
        cast.start.p = {-3.0f, c.height, c.z};
        cast.translation = {4.0f, 0.0f, 0.0f};
        ShapeCastHit hit;
        REQUIRE(castShapeTriangle(cast, triangle, Transform::identity(), hulls, hit));
        CHECK(hit.fraction == Approx((3.0f - c.halfWidth) / 4.0f).margin(1e-6));
        CHECK(hit.normal.x == Approx(-1.0f).margin(1e-5));
        CHECK(hit.point.x == Approx(0.0f).margin(1e-5));
        CHECK_FALSE(hit.startPenetrating);
    }
    // A box whose bottom face slides 1 mm above the plane misses; 1 mm into it, it hits the edge.
    ShapeCastInput cast;
    cast.shape = Shape::makeBox({0.5f, 0.25f, 0.5f});
    cast.start.p = {-3.0f, 0.251f, 0.0f};
    cast.translation = {4.0f, 0.0f, 0.0f};
    ShapeCastHit hit;
    CHECK_FALSE(castShapeTriangle(cast, triangle, Transform::identity(), hulls, hit));
    cast.start.p.y = 0.249f;
    REQUIRE(castShapeTriangle(cast, triangle, Transform::identity(), hulls, hit));
    CHECK(hit.fraction == Approx(2.5f / 4.0f).margin(1e-6));
    // From the other side of the edge (coming back along -x from beyond c), the vertex c comes first.
    cast.shape = Shape::makeSphere(0.5f);
    cast.start.p = {5.0f, 0.0f, 0.0f};
    cast.translation = {-4.0f, 0.0f, 0.0f};
    REQUIRE(castShapeTriangle(cast, triangle, Transform::identity(), hulls, hit));
    CHECK(hit.fraction == Approx(2.5f / 4.0f).margin(1e-6));
    CHECK(hit.point.x == Approx(2.0f).margin(1e-5));
    // A ray along the plane is edge-on and misses (rayTriangle); a shape cast along it is not.
    RayCastHit rayHit;
    CHECK_FALSE(rayTriangle(triangle, {{-3.0f, 0.0f, 0.0f}, {4.0f, 0.0f, 0.0f}}, rayHit));
}

// ---- World: shape casts
// --------------------------------------------------------------------------------------

TEST_CASE(
    "a sphere cast straight down onto a flat mesh and a flat heightfield hits at the closed form, on the "
    "triangle below",
    "[queries][composite]")
{
    World world;
    const Shape mesh = meshShape(world.addMesh(flatMesh(8, 1.0f)));
    const Shape field = fieldShape(world.addHeightField(flatHeightField(9, 1.0f)));
    const BodyId meshBody = addStatic(world, mesh, {{-20.0f, 0.0f, 0.0f}, Quat::identity()});
    const BodyId fieldBody = addStatic(world, field, {{20.0f, 1.5f, 0.0f}, Quat::identity()});
    // A tilted mesh body: its floor's normal is the body's y axis.
    const Transform tilted{{0.0f, 3.0f, 40.0f}, normalize(Quat{0.2f, 0.1f, -0.3f, 1.0f})};
    const BodyId tiltedBody = addStatic(world, mesh, tilted);

    std::mt19937 rng(7u);
    double worst = 0.0;
    for (int i = 0; i < 300; ++i)
    {
        const float radius = uniform(rng, 0.05f, 0.3f);
        // Away from every cell side and diagonal by more than the radius: only the triangle below is touched.
        float x = 0.0f;
        float z = 0.0f;
        for (;;)
        {
            x = uniform(rng, 0.5f, 7.5f);
            z = uniform(rng, 0.5f, 7.5f);
            const float fx = x - std::floor(x);
            const float fz = z - std::floor(z);
            const float toSide = std::min({fx, 1.0f - fx, fz, 1.0f - fz});
            const float toDiagonal =
                std::min(std::fabs(fx - fz), std::fabs(fx + fz - 1.0f)) / std::sqrt(2.0f);
            if (std::min(toSide, toDiagonal) > 0.05f)
            {
                break;
            }
        }
        const float height = uniform(rng, 0.5f, 3.0f);
        const float drop = uniform(rng, 3.5f, 6.0f);
        const float expected = (height - radius) / drop;
        for (int target = 0; target < 3; ++target)
        {
            const BodyId body = target == 0 ? meshBody : (target == 1 ? fieldBody : tiltedBody);
            BodyState state;
            REQUIRE(world.getBody(body, state));
            const Transform& xf = state.transform;
            const Vec3 up = rotate(xf.q, Vec3{0.0f, 1.0f, 0.0f});
            const Vec3 below = transformPoint(xf, Vec3{x, 0.0f, z});
            ShapeCastInput cast;
            cast.shape = Shape::makeSphere(radius);
            cast.start.p = below + up * height;
            cast.translation = up * -drop;
            ShapeQueryHit hit;
            INFO("target " << target << " at " << x << ", " << z);
            REQUIRE(world.castShapeClosest(cast, {}, hit));
            CHECK(hit.body == body);
            worst = std::max(worst, std::fabs(double(hit.fraction) - expected));
            CHECK(hit.fraction == Approx(expected).margin(2e-6));
            CHECK(hit.fraction <= expected + 1e-6f); // a lower bound, up to the closed form's float rounding
            CHECK(dot(hit.normal, up) == Approx(1.0f).margin(1e-5));
            CHECK(length(hit.point - below) < 1e-4f);
            CHECK_FALSE(hit.startPenetrating);
            if (target == 1)
            {
                CHECK(hit.subShape == world.heightField(field.catalogueIndex).height(x, z).triangleIndex);
            }
            else
            {
                // The triangle hit holds (x, z).
                const Triangle t = world.mesh(mesh.catalogueIndex).triangle(hit.subShape);
                const auto side = [&](const Vec3& p, const Vec3& q)
                { return (q.x - p.x) * (z - p.z) - (q.z - p.z) * (x - p.x); };
                const float s0 = side(t.a, t.b);
                const float s1 = side(t.b, t.c);
                const float s2 = side(t.c, t.a);
                CHECK(((s0 >= 0.0f && s1 >= 0.0f && s2 >= 0.0f) || (s0 <= 0.0f && s1 <= 0.0f && s2 <= 0.0f)));
            }
            // castShapeAll reports the body once, with the same hit.
            int reports = 0;
            world.castShapeAll(cast, {},
                               [&](const ShapeQueryHit& h)
                               {
                                   ++reports;
                                   CHECK(h.body == body);
                                   CHECK(h.fraction == hit.fraction);
                                   CHECK(h.subShape == hit.subShape);
                                   return 1.0f;
                               });
            CHECK(reports == 1);
        }
    }
    WARN("sphere dropped on flat mesh / heightfield / tilted mesh: worst |fraction - closed form| " << worst);
}

TEST_CASE(
    "world casts onto sloped terrain (a mesh and a heightfield with a hole) equal castShapeTriangle's first "
    "triangle bit for bit, and a bisection within 1e-4",
    "[queries][composite]")
{
    std::mt19937 rng(99u);
    World world;
    std::vector<ConvexHull> hullList;
    for (int i = 0; i < 2; ++i)
    {
        hullList.push_back(physics_test::randomCloudHull(rng, 8));
        REQUIRE(world.addHull(hullList.back()).status == WorldStatus::Ok);
    }
    // A ramp rising 0.5 m per metre along x, with bumps up to 0.6 m, 6 x 6 cells of 1.5 m.
    std::vector<float> bumps(49);
    for (float& b : bumps)
    {
        b = uniform(rng, 0.0f, 0.6f);
    }
    const Shape mesh = meshShape(world.addMesh(gridMesh(
        6, 1.5f, [&](std::uint32_t i, std::uint32_t j) { return 0.75f * float(i) + bumps[i * 7 + j]; })));
    std::vector<float> heights(49);
    for (std::uint32_t iz = 0; iz < 7; ++iz)
    {
        for (std::uint32_t ix = 0; ix < 7; ++ix)
        {
            heights[iz * 7 + ix] = 0.5f * float(iz) + uniform(rng, 0.0f, 0.6f);
        }
    }
    const Shape field = fieldShape(world.addHeightField(heightFieldOf(7, 1.5f, heights, {14, 15})));
    const BodyId meshBody =
        addStatic(world, mesh, {{-12.0f, 0.0f, 0.0f}, normalize(Quat{0.1f, 0.3f, 0.05f, 1.0f})});
    const BodyId fieldBody =
        addStatic(world, field, {{12.0f, 0.0f, 0.0f}, normalize(Quat{-0.1f, -0.2f, 0.1f, 1.0f})});
    // The poses as the world holds them (it normalises rotations again), for the brute force.
    BodyState meshState;
    BodyState fieldState;
    REQUIRE(world.getBody(meshBody, meshState));
    REQUIRE(world.getBody(fieldBody, fieldState));
    const Transform meshPose = meshState.transform;
    const Transform fieldPose = fieldState.transform;
    const TriangleMesh& meshData = world.mesh(mesh.catalogueIndex);
    const HeightField& fieldData = world.heightField(field.catalogueIndex);

    CastStats stats;
    int exact = 0;
    for (int i = 0; i < 240; ++i)
    {
        const bool onMesh = i % 2 == 0;
        const Transform& pose = onMesh ? meshPose : fieldPose;
        const Shape shape = queryShape(rng, (i / 2) % 4, static_cast<std::uint32_t>(i % 2));
        // Aim at a surface point from above at an angle (up to 70 degrees from the vertical, the body's).
        const float x = uniform(rng, 0.5f, 8.5f);
        const float z = uniform(rng, 0.5f, 8.5f);
        float surface = 0.0f;
        if (onMesh)
        {
            MeshRayCastHit meshHit;
            REQUIRE(meshData.castRay({{x, 20.0f, z}, {0.0f, -40.0f, 0.0f}}, MeshRayMode::Closest, meshHit));
            surface = meshHit.hit.point.y;
        }
        else
        {
            const HeightFieldPoint p = fieldData.height(x, z);
            surface = p.hasSurface ? p.heightMeters : 1.0f;
        }
        const float tilt = uniform(rng, 0.0f, 1.2f);
        const float heading = uniform(rng, 0.0f, 2.0f * kPi);
        const Vec3 localDirection{std::sin(tilt) * std::cos(heading), -std::cos(tilt),
                                  std::sin(tilt) * std::sin(heading)};
        const float back = uniform(rng, 2.0f, 4.0f);
        ShapeCastInput cast;
        cast.shape = shape;
        cast.start = {transformPoint(pose, Vec3{x, surface, z} - localDirection * back), randomRotation(rng)};
        cast.translation = rotate(pose.q, localDirection) * (back * uniform(rng, 0.6f, 1.6f));
        cast.maxFraction = 1.0f;
        INFO((onMesh ? "mesh" : "heightfield") << " case " << i << " " << kindName(shape.type));

        // Brute force: castShapeTriangle on every triangle, the first (ties to the lower index) wins.
        bool bruteFound = false;
        ShapeCastHit brute;
        std::uint32_t bruteTriangle = 0;
        const std::uint32_t count = onMesh ? meshData.triangleCount() : fieldData.triangleCount();
        for (std::uint32_t t = 0; t < count; ++t)
        {
            if (!onMesh && fieldData.isHole(t / 2))
            {
                continue;
            }
            const Triangle local = onMesh ? meshData.triangle(t) : fieldData.triangle(t);
            ShapeCastHit h;
            if (castShapeTriangle(cast, local, pose, world.hulls(), h) &&
                (!bruteFound || h.fraction < brute.fraction))
            {
                bruteFound = true;
                brute = h;
                bruteTriangle = t;
            }
        }
        ShapeQueryHit hit;
        const bool got = world.castShapeClosest(cast, {}, hit);
        REQUIRE(got == bruteFound);
        if (got)
        {
            CHECK(hit.body == (onMesh ? meshBody : fieldBody));
            CHECK(hit.subShape == bruteTriangle);
            CHECK(hit.fraction == brute.fraction);
            CHECK(hit.point.x == brute.point.x);
            CHECK(hit.normal.y == brute.normal.y);
            CHECK(hit.penetrationDepth == brute.penetrationDepth);
            exact += hit.subShape == bruteTriangle && hit.fraction == brute.fraction ? 1 : 0;
        }

        // The bisection over every triangle: the earliest first contact.
        Oracle best;
        double closest = std::numeric_limits<double>::infinity();
        for (std::uint32_t t = 0; t < count; ++t)
        {
            if (!onMesh && fieldData.isHole(t / 2))
            {
                continue;
            }
            const Triangle world3 =
                worldTriangle(onMesh ? meshData.triangle(t) : fieldData.triangle(t), pose);
            const Oracle o = oracleCast(cast, world3, world.hulls());
            closest = std::min(closest, o.closestDistance);
            if (o.hit && (!best.hit || o.fraction < best.fraction))
            {
                best = o;
            }
        }
        best.closestDistance = closest;
        const Triangle hitTriangle =
            worldTriangle(onMesh ? meshData.triangle(hit.subShape) : fieldData.triangle(hit.subShape), pose);
        ShapeCastHit asCast;
        asCast.fraction = hit.fraction;
        asCast.normal = hit.normal;
        asCast.point = hit.point;
        asCast.startPenetrating = hit.startPenetrating;
        asCast.penetrationDepth = hit.penetrationDepth;
        checkAgainstOracle(
            got, asCast, best, cast, std::max(boundOf(shape, world.hulls()), 1.5),
            [&](double t) { return signedDistance(shape, poseAt(cast, t), hitTriangle, world.hulls()); },
            stats);
    }
    CHECK(stats.hits > 150);
    CHECK(exact == stats.hits);
    WARN("world casts onto sloped terrain: "
         << stats.cases << " cases, " << stats.hits << " hits (" << stats.starts << " at start), "
         << stats.misses << " misses, " << stats.ambiguous << " ambiguous; worst fraction error vs bisection "
         << stats.fractionError << ", distance at hit " << stats.distanceAtHit << " s");
}

TEST_CASE(
    "casts starting in a mesh or heightfield floor report the depth; zero-length casts are overlap tests",
    "[queries][composite]")
{
    World world;
    // Large triangles (4 m cells) so that a shape near a cell's middle touches one triangle only.
    const Shape mesh = meshShape(world.addMesh(flatMesh(3, 4.0f)));
    const Shape field = fieldShape(world.addHeightField(flatHeightField(4, 4.0f)));
    const BodyId meshBody = addStatic(world, mesh, {{-20.0f, 0.0f, 0.0f}, Quat::identity()});
    const BodyId fieldBody = addStatic(world, field, {{20.0f, 0.0f, 0.0f}, Quat::identity()});
    const Quat turn = quatFromAxisAngle({0.0f, 1.0f, 0.0f}, 0.4f);
    // The incentre of the first cell's triangle (x + z < 4 for the mesh, z > x for the heightfield), 1.17 m
    // from its sides: the shapes below reach 0.71 m across.
    const float in = 4.0f - 2.0f * std::sqrt(2.0f);
    for (const BodyId body : {meshBody, fieldBody})
    {
        BodyState state;
        REQUIRE(world.getBody(body, state));
        const Vec3 origin =
            state.transform.p + (body == meshBody ? Vec3{in, 0.0f, in} : Vec3{in, 0.0f, 4.0f - in});
        struct Case
        {
            Shape shape;
            float centreY;
            float depth;
            float normalY;
        };
        const Case cases[] = {
            {Shape::makeSphere(0.5f), 0.3f, 0.2f, 1.0f},
            // Two-sided: a sphere whose centre sank below the floor is pushed on down.
            {Shape::makeSphere(0.5f), -0.3f, 0.2f, -1.0f},
            {Shape::makeBox({0.5f, 0.5f, 0.5f}), 0.4f, 0.1f, 1.0f},
            {Shape::makeCapsule(0.5f, 0.25f), 0.5f, 0.25f, 1.0f},
        };
        for (const Case& c : cases)
        {
            INFO(kindName(c.shape.type) << " centre at " << c.centreY);
            ShapeCastInput cast;
            cast.shape = c.shape;
            cast.start = {origin + Vec3{0.0f, c.centreY, 0.0f}, turn};
            cast.translation = {0.0f, -1.0f, 0.0f};
            ShapeQueryHit hit;
            REQUIRE(world.castShapeClosest(cast, {}, hit));
            CHECK(hit.body == body);
            CHECK(hit.fraction == 0.0f);
            CHECK(hit.startPenetrating);
            CHECK(hit.penetrationDepth == Approx(c.depth).margin(1e-5));
            CHECK(hit.normal.y == Approx(c.normalY).margin(1e-5));
            CHECK(hit.point.y == Approx(0.0f).margin(1e-5));
            // Zero-length: the same hit; and lifted clear of the floor, nothing.
            cast.translation = {};
            REQUIRE(world.castShapeClosest(cast, {}, hit));
            CHECK(hit.startPenetrating);
            CHECK(hit.penetrationDepth == Approx(c.depth).margin(1e-5));
            cast.start.p.y =
                origin.y + (c.normalY > 0.0f ? 1.0f : -1.0f) * (std::fabs(c.centreY) + c.depth + 1e-3f);
            CHECK_FALSE(world.castShapeClosest(cast, {}, hit));
        }
    }

    // Zero-length casts against terrain agree with overlapShape and with GJK on every triangle.
    std::mt19937 rng(5u);
    std::vector<float> heights(25);
    for (float& h : heights)
    {
        h = uniform(rng, 0.0f, 1.5f);
    }
    World terrain;
    const Shape bumpy = fieldShape(terrain.addHeightField(heightFieldOf(5, 1.0f, heights)));
    const Transform pose{{0.5f, -0.2f, 0.3f}, normalize(Quat{0.05f, 0.2f, 0.0f, 1.0f})};
    const BodyId bumpyBody = addStatic(terrain, bumpy, pose);
    const HeightField& data = terrain.heightField(bumpy.catalogueIndex);
    int overlaps = 0;
    int apart = 0;
    for (int i = 0; i < 300; ++i)
    {
        const Shape shape = queryShape(rng, i % 3, 0);
        const float x = uniform(rng, 0.0f, 4.0f);
        const float z = uniform(rng, 0.0f, 4.0f);
        const Transform at{
            transformPoint(pose, Vec3{x, data.height(x, z).heightMeters + uniform(rng, -0.5f, 1.0f), z}),
            randomRotation(rng)};
        double nearest = std::numeric_limits<double>::infinity();
        for (std::uint32_t t = 0; t < data.triangleCount(); ++t)
        {
            nearest = std::min(nearest, signedDistance(shape, at, worldTriangle(data.triangle(t), pose), {}));
        }
        ShapeCastInput still;
        still.shape = shape;
        still.start = at;
        ShapeQueryHit hit;
        const bool cast = terrain.castShapeClosest(still, {}, hit);
        bool found = false;
        terrain.overlapShape(shape, at, {},
                             [&](BodyId id)
                             {
                                 CHECK(id == bumpyBody);
                                 found = true;
                                 return true;
                             });
        INFO("case " << i << " nearest " << nearest);
        CHECK(cast == found);
        if (std::fabs(nearest) > 1e-5)
        {
            CHECK(found == (nearest <= 0.0));
            (found ? overlaps : apart) += 1;
        }
    }
    CHECK(overlaps > 50);
    CHECK(apart > 50);
}

TEST_CASE(
    "closest casts clip at the nearest body: a mesh behind a heightfield is reported by castShapeAll only",
    "[queries][composite]")
{
    World world;
    const Shape mesh = meshShape(world.addMesh(flatMesh(4, 1.0f)));
    const Shape field = fieldShape(world.addHeightField(flatHeightField(5, 1.0f)));
    const BodyId lower = addStatic(world, mesh, {{0.0f, 0.0f, 0.0f}, Quat::identity()});
    const BodyId upper = addStatic(world, field, {{0.0f, 2.0f, 0.0f}, Quat::identity()});
    ShapeCastInput cast;
    cast.shape = Shape::makeBox({0.3f, 0.3f, 0.3f});
    cast.start = {{2.2f, 5.0f, 1.7f}, quatFromAxisAngle({0.0f, 1.0f, 0.0f}, 0.3f)};
    cast.translation = {0.0f, -10.0f, 0.0f};
    ShapeQueryHit hit;
    REQUIRE(world.castShapeClosest(cast, {}, hit));
    CHECK(hit.body == upper);
    CHECK(hit.fraction == Approx((5.0f - 2.0f - 0.3f) / 10.0f).margin(1e-6));
    int reports = 0;
    world.castShapeAll(cast, {},
                       [&](const ShapeQueryHit& h)
                       {
                           ++reports;
                           const float expected = h.body == upper ? 0.27f : 0.47f;
                           CHECK(h.fraction == Approx(expected).margin(1e-6));
                           CHECK((h.body == upper || h.body == lower));
                           return 1.0f;
                       });
    CHECK(reports == 2);
    // Filtered out, the heightfield lets the cast through to the mesh.
    QueryFilter filter;
    filter.ignoreBody = upper;
    REQUIRE(world.castShapeClosest(cast, filter, hit));
    CHECK(hit.body == lower);
}

// ---- World: overlaps and distances
// -------------------------------------------------------------------------

TEST_CASE("overlapShape reports a mesh or heightfield only when the shape touches a triangle, not its box",
          "[queries][composite]")
{
    World world;
    // A tent: two slopes meeting at a ridge 2 m high along z, spanning x in [0, 4], z in [0, 4].
    const Shape tent = meshShape(world.addMesh(meshOf({{0.0f, 0.0f, 0.0f},
                                                       {0.0f, 0.0f, 4.0f},
                                                       {2.0f, 2.0f, 0.0f},
                                                       {2.0f, 2.0f, 4.0f},
                                                       {4.0f, 0.0f, 0.0f},
                                                       {4.0f, 0.0f, 4.0f}},
                                                      {0, 1, 2, 2, 1, 3, 2, 3, 4, 4, 3, 5})));
    const Shape floor = meshShape(world.addMesh(flatMesh(4, 1.0f)));
    const Shape field = fieldShape(world.addHeightField(flatHeightField(5, 1.0f)));
    const BodyId tentBody = addStatic(world, tent, {{0.0f, 0.0f, 0.0f}, Quat::identity()});
    const BodyId floorBody = addStatic(world, floor, {{10.0f, 0.0f, 0.0f}, Quat::identity()});
    const BodyId fieldBody = addStatic(world, field, {{20.0f, 0.0f, 0.0f}, Quat::identity()});
    const auto found = [&](const Shape& shape, const Vec3& at)
    {
        std::vector<BodyId> bodies;
        world.overlapShape(shape, {at, Quat::identity()}, {},
                           [&](BodyId id)
                           {
                               bodies.push_back(id);
                               return true;
                           });
        return bodies;
    };
    const Shape ball = Shape::makeSphere(0.2f);
    // Inside the tent's box, 0.3 m over the slope at (1, z): its distance to the slope is 0.3 cos 45 deg.
    CHECK(found(ball, {1.0f, 1.3f, 2.0f}).empty());
    const float touching = 1.0f + 0.2f * std::sqrt(2.0f);
    CHECK(found(ball, {1.0f, touching - 1e-3f, 2.0f}) == std::vector<BodyId>{tentBody});
    CHECK(found(ball, {1.0f, touching + 1e-3f, 2.0f}).empty());
    // A small sphere hovering 1 cm over flat floors, within their fat broadphase boxes: nothing.
    CHECK(found(Shape::makeSphere(0.05f), {12.3f, 0.06f, 2.6f}).empty());
    CHECK(found(Shape::makeSphere(0.05f), {22.3f, 0.06f, 2.6f}).empty());
    CHECK(found(Shape::makeSphere(0.05f), {12.3f, 0.04f, 2.6f}) == std::vector<BodyId>{floorBody});
    CHECK(found(Shape::makeSphere(0.05f), {22.3f, -0.04f, 2.6f}) == std::vector<BodyId>{fieldBody});
    // closestPoints agrees: 1 cm away (and the tent's slope 0.3 cos 45 - 0.2 away).
    const auto distanceTo =
        [&](const Shape& shape, const Vec3& at, BodyId body, std::uint32_t* subShape = nullptr)
    {
        float distance = std::numeric_limits<float>::infinity();
        world.closestPoints(shape, {at, Quat::identity()}, 1.0f, {},
                            [&](const DistanceQueryResult& r)
                            {
                                if (r.body == body)
                                {
                                    distance = r.distance;
                                    CHECK(length(r.pointOnShape - r.pointOnBody - r.normal * r.distance) <
                                          1e-5f);
                                    if (subShape != nullptr)
                                    {
                                        *subShape = r.subShape;
                                    }
                                }
                                return true;
                            });
        return distance;
    };
    CHECK(distanceTo(Shape::makeSphere(0.05f), {12.3f, 0.06f, 2.6f}, floorBody) ==
          Approx(0.01f).margin(1e-6));
    CHECK(distanceTo(Shape::makeSphere(0.05f), {22.3f, 0.06f, 2.6f}, fieldBody) ==
          Approx(0.01f).margin(1e-6));
    std::uint32_t slope = 99;
    CHECK(distanceTo(ball, {1.0f, 1.3f, 2.0f}, tentBody, &slope) ==
          Approx(0.3f * std::sqrt(0.5f) - 0.2f).margin(1e-6));
    CHECK(slope < 4);
    const Triangle t = world.mesh(tent.catalogueIndex).triangle(slope);
    CHECK(std::max({t.a.x, t.b.x, t.c.x}) == 2.0f); // a triangle of the left slope
    CHECK(std::min({t.a.x, t.b.x, t.c.x}) == 0.0f);
}

TEST_CASE("closestPoints to a flat mesh and a flat heightfield equals the closed form, from above and below",
          "[queries][composite]")
{
    World world;
    const Shape mesh = meshShape(world.addMesh(flatMesh(6, 1.0f)));
    const Shape field = fieldShape(world.addHeightField(flatHeightField(7, 1.0f)));
    const Transform meshPose{{-10.0f, 1.0f, 0.0f}, normalize(Quat{0.1f, -0.2f, 0.3f, 1.0f})};
    const BodyId meshBody = addStatic(world, mesh, meshPose);
    const BodyId fieldBody = addStatic(world, field, {{10.0f, -1.0f, 0.0f}, Quat::identity()});
    std::mt19937 rng(3u);
    double worst = 0.0;
    for (int i = 0; i < 200; ++i)
    {
        const bool onMesh = i % 2 == 0;
        BodyState state;
        REQUIRE(world.getBody(onMesh ? meshBody : fieldBody, state));
        const Transform& xf = state.transform;
        const Vec3 up = rotate(xf.q, Vec3{0.0f, 1.0f, 0.0f});
        const Quat q = randomRotation(rng);
        const float side = i % 4 < 2 ? 1.0f : -1.0f; // above or below the floor
        const Vec3 above = transformPoint(xf, Vec3{uniform(rng, 1.5f, 4.5f), 0.0f, uniform(rng, 1.5f, 4.5f)});
        // The closed form holds while the floor's nearest triangle is pushed out of along the floor's normal:
        // spheres at any height (their depth against a triangle is exact from the core's distance), capsules
        // while the core is above the floor, boxes while apart. Deeper, a triangle's own shortest way out may
        // be sideways, off it.
        Shape shape;
        float reach = 0.0f; // how far the shape reaches from its origin along -up * side
        float height = 0.0f;
        const Vec3 down = inverseRotate(q, up * -side);
        switch (i % 3)
        {
        case 0:
            shape = Shape::makeSphere(uniform(rng, 0.1f, 0.5f));
            reach = shape.sphere.radius;
            height = uniform(rng, 0.0f, 2.0f);
            break;
        case 1:
            shape = Shape::makeCapsule(uniform(rng, 0.1f, 0.4f), uniform(rng, 0.1f, 0.3f));
            reach = std::fabs(down.y) * shape.capsule.halfHeight + shape.capsule.radius;
            height = std::fabs(down.y) * shape.capsule.halfHeight + uniform(rng, 0.001f, 2.0f);
            break;
        default:
            shape = Shape::makeBox(
                {uniform(rng, 0.1f, 0.5f), uniform(rng, 0.1f, 0.5f), uniform(rng, 0.1f, 0.5f)});
            reach = dot(absPerElem(down), shape.box.halfExtents);
            height = reach + uniform(rng, 0.0f, 2.0f);
            break;
        }
        const Vec3 at = above + up * (side * height);
        const float expected = height - reach;
        int reports = 0;
        world.closestPoints(shape, {at, q}, 3.0f, {},
                            [&](const DistanceQueryResult& r)
                            {
                                ++reports;
                                CHECK(r.body == (onMesh ? meshBody : fieldBody));
                                INFO(kindName(shape.type) << " height " << height << " side " << side);
                                worst = std::max(worst, std::fabs(double(r.distance) - expected));
                                CHECK(r.distance == Approx(expected).margin(2e-6));
                                if (expected > 1e-4f)
                                {
                                    CHECK(dot(r.normal, up) == Approx(side).margin(1e-4));
                                }
                                CHECK(dot(r.pointOnBody - xf.p, up) == Approx(0.0f).margin(1e-5));
                                return true;
                            });
        CHECK(reports == 1);
        // Beyond maxDistance: nothing.
        if (expected > 0.05f)
        {
            world.closestPoints(shape, {at, q}, expected - 0.02f, {},
                                [&](const DistanceQueryResult&)
                                {
                                    FAIL("reported beyond maxDistance");
                                    return true;
                                });
        }
    }
    WARN("closestPoints to flat mesh / heightfield: worst |distance - closed form| " << worst);
}

TEST_CASE(
    "heightfield holes are not hit, overlapped or measured; the triangle index is the one beside the hole",
    "[queries][composite]")
{
    World world;
    // Cell (2, 2), x and z in [2, 3], is a hole (cell index 2 * 5 + 2 with 5 cells per row).
    const Shape field = fieldShape(world.addHeightField(flatHeightField(6, 1.0f, {12})));
    const BodyId body = addStatic(world, field, Transform::identity());
    ShapeCastInput cast;
    cast.shape = Shape::makeSphere(0.2f);
    cast.start.p = {2.5f, 3.0f, 2.5f};
    cast.translation = {0.0f, -6.0f, 0.0f};
    ShapeQueryHit hit;
    CHECK_FALSE(world.castShapeClosest(cast, {}, hit));
    int reported = 0;
    world.castShapeAll(cast, {},
                       [&](const ShapeQueryHit&)
                       {
                           ++reported;
                           return 1.0f;
                       });
    CHECK(reported == 0);
    // Off centre by 0.4 m toward +x, the sphere meets the rim of cell (3, 2) at x = 3.
    cast.start.p.x = 2.9f;
    REQUIRE(world.castShapeClosest(cast, {}, hit));
    CHECK(hit.body == body);
    CHECK(hit.subShape / 2 == 13);
    CHECK(hit.point.x == Approx(3.0f).margin(1e-5));
    const float rise = std::sqrt(0.2f * 0.2f - 0.1f * 0.1f); // the rim's height over the centre at contact
    CHECK(hit.fraction == Approx((3.0f - rise) / 6.0f).margin(1e-6));

    const Shape ball = Shape::makeSphere(0.2f);
    world.overlapShape(ball, {{2.5f, 0.0f, 2.5f}, Quat::identity()}, {},
                       [&](BodyId)
                       {
                           FAIL("a hole overlapped");
                           return true;
                       });
    int measured = 0;
    world.closestPoints(ball, {{2.5f, 0.0f, 2.7f}, Quat::identity()}, 1.0f, {},
                        [&](const DistanceQueryResult& r)
                        {
                            ++measured;
                            CHECK(r.distance == Approx(0.3f - 0.2f).margin(1e-6)); // the rim at z = 3
                            CHECK(r.pointOnBody.z == Approx(3.0f).margin(1e-5));
                            CHECK(r.subShape / 2 == 17); // cell (2, 3)
                            return true;
                        });
    CHECK(measured == 1);
}

TEST_CASE("closestPoints on terrain is the nearest triangle's GJK distance", "[queries][composite]")
{
    std::mt19937 rng(17u);
    World world;
    std::vector<float> bumps(36);
    for (float& b : bumps)
    {
        b = uniform(rng, 0.0f, 1.0f);
    }
    const Shape mesh = meshShape(
        world.addMesh(gridMesh(5, 1.0f, [&](std::uint32_t i, std::uint32_t j) { return bumps[i * 6 + j]; })));
    const Transform pose{{1.0f, 2.0f, -3.0f}, normalize(Quat{0.2f, 0.1f, 0.0f, 1.0f})};
    const BodyId body = addStatic(world, mesh, pose);
    const TriangleMesh& data = world.mesh(mesh.catalogueIndex);
    double worst = 0.0;
    int measured = 0;
    for (int i = 0; i < 200; ++i)
    {
        const Shape shape = queryShape(rng, i % 3, 0);
        const Transform at{transformPoint(pose, Vec3{uniform(rng, 0.5f, 4.5f), uniform(rng, -0.5f, 2.0f),
                                                     uniform(rng, 0.5f, 4.5f)}),
                           randomRotation(rng)};
        const float maxDistance = 0.6f;
        double nearest = std::numeric_limits<double>::infinity();
        for (std::uint32_t t = 0; t < data.triangleCount(); ++t)
        {
            nearest = std::min(nearest, signedDistance(shape, at, worldTriangle(data.triangle(t), pose), {}));
        }
        bool found = false;
        world.closestPoints(
            shape, at, maxDistance, {},
            [&](const DistanceQueryResult& r)
            {
                found = true;
                CHECK(r.body == body);
                INFO("case " << i << " nearest " << nearest);
                worst = std::max(worst, std::fabs(double(r.distance) - nearest));
                CHECK(r.distance == Approx(nearest).margin(1e-5));
                // The triangle named is that near.
                const double own =
                    signedDistance(shape, at, worldTriangle(data.triangle(r.subShape), pose), {});
                CHECK(own == Approx(nearest).margin(1e-5));
                if (r.distance > 1e-4f)
                {
                    CHECK(length(r.pointOnShape - r.pointOnBody - r.normal * r.distance) < 1e-5f);
                }
                return true;
            });
        if (std::fabs(nearest - maxDistance) > 1e-5)
        {
            CHECK(found == (nearest <= maxDistance));
        }
        measured += found ? 1 : 0;
    }
    CHECK(measured > 60);
    WARN("closestPoints on terrain: worst |distance - nearest triangle's| " << worst);
}

// ---- Threads and allocation
// ----------------------------------------------------------------------------------

namespace
{

/// A world of a mesh, a heightfield with a hole, a compound-free mix of convex bodies and a plane.
struct QueryScene
{
    World world;
    std::vector<ShapeCastInput> casts;
    std::vector<Transform> poses;
    std::vector<Shape> shapes;
};

void buildScene(QueryScene& scene)
{
    std::mt19937 rng(23u);
    World& world = scene.world;
    REQUIRE(world.addHull(physics_test::randomCloudHull(rng, 8)).status == WorldStatus::Ok);
    std::vector<float> bumps(81);
    for (float& b : bumps)
    {
        b = uniform(rng, 0.0f, 1.0f);
    }
    const Shape mesh = meshShape(
        world.addMesh(gridMesh(8, 1.0f, [&](std::uint32_t i, std::uint32_t j) { return bumps[i * 9 + j]; })));
    const Shape field = fieldShape(world.addHeightField(heightFieldOf(9, 1.0f, bumps, {10, 11})));
    addStatic(world, mesh, {{-9.0f, 0.0f, 0.0f}, Quat::identity()});
    addStatic(world, field, {{1.0f, 0.0f, 0.0f}, normalize(Quat{0.0f, 0.2f, 0.0f, 1.0f})});
    addStatic(world, Shape::makePlane({0.0f, 1.0f, 0.0f}, -3.0f), Transform::identity());
    for (int i = 0; i < 10; ++i)
    {
        addStatic(world, queryShape(rng, i % 4, 0),
                  {{uniform(rng, -9.0f, 9.0f), uniform(rng, 1.0f, 3.0f), uniform(rng, 0.0f, 8.0f)},
                   randomRotation(rng)});
    }
    for (int i = 0; i < 60; ++i)
    {
        ShapeCastInput cast;
        cast.shape = queryShape(rng, i % 4, 0);
        cast.start = {{uniform(rng, -9.0f, 9.0f), uniform(rng, 0.5f, 4.0f), uniform(rng, 0.0f, 8.0f)},
                      randomRotation(rng)};
        cast.translation = randomUnit(rng) * uniform(rng, 0.0f, 6.0f);
        scene.casts.push_back(cast);
        scene.shapes.push_back(cast.shape);
        scene.poses.push_back(cast.start);
    }
}

/// Every query of the scene, digested.
std::uint64_t runQueries(const QueryScene& scene)
{
    Digest digest;
    for (std::size_t i = 0; i < scene.casts.size(); ++i)
    {
        ShapeQueryHit hit;
        if (scene.world.castShapeClosest(scene.casts[i], {}, hit))
        {
            digest.add(hit.body.index);
            digest.add(hit.subShape);
            digest.add(hit.fraction);
            digest.add(hit.point);
            digest.add(hit.normal);
            digest.add(hit.penetrationDepth);
        }
        scene.world.castShapeAll(scene.casts[i], {},
                                 [&](const ShapeQueryHit& h)
                                 {
                                     digest.add(h.body.index);
                                     digest.add(h.subShape);
                                     digest.add(h.fraction);
                                     return 1.0f;
                                 });
        scene.world.overlapShape(scene.shapes[i], scene.poses[i], {},
                                 [&](BodyId id)
                                 {
                                     digest.add(id.index);
                                     return true;
                                 });
        scene.world.closestPoints(scene.shapes[i], scene.poses[i], 1.5f, {},
                                  [&](const DistanceQueryResult& r)
                                  {
                                      digest.add(r.body.index);
                                      digest.add(r.subShape);
                                      digest.add(r.distance);
                                      digest.add(r.pointOnBody);
                                      digest.add(r.normal);
                                      return true;
                                  });
    }
    return digest.value;
}

} // namespace

TEST_CASE("mesh and heightfield queries from two threads at once equal one thread's, and allocate nothing",
          "[queries][composite][tasks][allocation]")
{
    QueryScene scene;
    buildScene(scene);
    const std::uint64_t alone = runQueries(scene);
    CHECK(runQueries(scene) == alone);
    for (int round = 0; round < 3; ++round)
    {
        std::uint64_t results[2] = {0, 0};
        std::thread first([&] { results[0] = runQueries(scene); });
        std::thread second([&] { results[1] = runQueries(scene); });
        first.join();
        second.join();
        INFO("round " << round);
        CHECK(results[0] == alone);
        CHECK(results[1] == alone);
    }
    std::int64_t allocations = 0;
    {
        polytope::test::AllocationCounter counter;
        const std::uint64_t again = runQueries(scene);
        allocations = counter.stop();
        CHECK(again == alone);
    }
    CHECK(allocations == 0);
}

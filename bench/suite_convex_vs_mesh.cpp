// Suites "convex_vs_mesh" and "raycast": Jolt's ConvexVsMesh performance scene, Polytope against Bullet 3.24
// in the same run.
//
// The scene (written afresh from its description in Jolt's performance test):
//  - terrain: a 100 x 100-cell grid of 3 m cells, sample (x, z) (integers 0 .. 100) at local
//    (3x, 5 sin(x/2) cos(z/2), 3z), heights rounded to float once; two triangles per cell, counter-clockwise
//    from above, (v(x,z), v(x,z+1), v(x+1,z)) and (v(x+1,z), v(x,z+1), v(x+1,z+1)): every cell is split
//    along its diagonal from (x, z+1) to (x+1, z). 20,000 triangles, static, at (-150, 5, -150);
//  - 1,764 dynamic bodies: for x, z in -10 .. 10 and k in 0 .. 3, one at (7.5x, 15 + 2k, 7.5z) whose shape
//    is by k a box of half extents (0.5, 0.75, 1), a sphere of radius 0.5, a capsule of half height 0.75
//    and radius 0.5 along y, or the convex hull of (0,1,0), (+-1,0,0), (0,0,+-1) (a square pyramid);
//  - friction 0.5 and restitution 0.6 on every body, density 1000 kg/m^3; 500 steps at 60 Hz.
//
// The terrain comes in two forms, one case each:
//  - convex_vs_mesh: Polytope: buildTriangleMesh of the vertices and indices above; Bullet:
//    btBvhTriangleMeshShape (quantized AABB compression) over a btTriangleIndexVertexArray of the same.
//  - convex_vs_heightfield: 101 x 101 samples, cell size 3. Polytope: buildHeightField from the float
//    heights (quantized to 16 bits over their range: at most 0.08 mm off). Polytope's heightfield splits a
//    cell along the other diagonal, (x, z) to (x+1, z+1) (heightfield.h); a quarter turn about y maps one
//    diagonal onto the other, so its body is turned by 90 degrees (local x along world -z, local z along
//    world +x, local sample (i, j) = grid sample (j, 100 - i)) and the surface is the mesh's. Bullet:
//    btHeightfieldTerrainShape over float data (the heights Polytope's field stores, so that both engines
//    hold the same floats), local scaling (3, 1, 3), not turned: its default split (no flipQuadEdges, no
//    diamond subdivision) is the mesh's diagonal already.
//  Each run checks its surface before stepping: 1000 vertical rays at random (x, z) through the empty terrain
//  (below the bodies), hit heights against the surface computed in double from the samples and the split
//  (surface_max_error_m: about 1e-5 m for exact geometry, up to the quantization for heightfields; the
//  other diagonal would be off by up to 0.6 m).
//
// Both engines get the same numbers: Polytope combines friction by geometric mean and restitution by max;
// Bullet multiplies both, so every Bullet body, the terrain included, gets sqrt(0.5) friction and
// sqrt(0.6) restitution, and every pair the same 0.5 and 0.6 as in Polytope. Bullet masses are Polytope's
// (density 1000), inertia from calculateLocalInertia (Bullet's own approximations). Bullet puts a rigid
// body's origin at its centre of mass, so its pyramid's points are moved by minus the centroid Polytope
// computes (y = 0.25) and its body placed that much higher: the same solid, the same mass distribution.
// Bullet keeps its default collision margins (0.04 m; inside btBoxShape's extent, outside btConvexHullShape's
// points; the terrain's is 0): that is what its users run. Bullet: btDiscreteDynamicsWorld with
// btDbvtBroadphase and btSequentialImpulseConstraintSolver, stepSimulation(1/60, 0): one 1/60 s step per
// call.
//
// Records per case: "polytope_1t" and "polytope_2t" (WorldConfig::threads 1 and 2; the same simulation bit
// for bit) and "bullet", sleeping off in both (Polytope: enableSleep false; Bullet: DISABLE_DEACTIVATION on
// every body), then the "_sleep" case with each engine's default sleeping. Each engine runs the scene twice,
// the order of the engines reversed the second time to even out the machine's load (the _sleep cases once,
// in the first order). Figures:
//   ms_per_step_mean, ms_per_step_p99, steps_per_s: wall time of each step call, over both runs
//   ratio_vs_bullet: Polytope's steps_per_s over Bullet's, from the same run (above 1, Polytope is faster)
//   below_terrain: bodies whose centre of mass ended more than 1 m below the terrain's surface there
//   off_terrain: bodies whose centre of mass ended outside the terrain's square (x or z beyond 150 m)
//   asleep: bodies asleep at the end (the _sleep cases)
//   surface_max_error_m: the surface check above
//   contact_points_mean: manifold points after a step (Polytope: StepStats::contactPoints, speculative
//     points included; Bullet: the points of every persistent manifold, within its breaking threshold)
//   phase_*_ms: Polytope only, StepStats::profile per step (boxes, pairs, collide, levels, setup, solver,
//     store, finalize, sleep: world.h says what each holds), where the step's time goes
// The body counts and surface check are taken in the first run (both engines are deterministic).
//
// Suite "raycast": the mesh scene stepped 500 steps (sleeping off) in both engines, then queries into each
// settled world, one thread each. Bullet's bodies come to rest elsewhere than Polytope's, so for comparing
// answers a second Bullet world is built from Polytope's settled poses: a btCollisionWorld holding the same
// mesh and the same shapes at Polytope's final transforms, with margin 0 on boxes and hulls (exact solids,
// as Polytope's; spheres and capsules are all margin, so exact anyway). Records per case: "polytope",
// "bullet" (that mirror world: the figures to compare) and "bullet_own" (Bullet's own settled world, with
// its default margins: speed only).
//   ray_closest  100,000 rays (--count N) from random points 20 .. 30 m up over the whole terrain, 100 m
//                long, directions (u, -1, w) normalised with u, w uniform in [-1, 1] (up to 55 degrees off
//                straight down): World::castRayClosest (default QueryFilter) against btCollisionWorld::
//                rayTest with ClosestRayResultCallback
//   sphere_cast  10,000 (N / 10) spheres of 0.5 m swept 50 m, the same directions, from 20 .. 30 m up over
//                the bodies' part of the terrain (x, z in [-80, 80]): World::castShapeClosest against
//                convexSweepTest with ClosestConvexResultCallback (allowed penetration 0). When Polytope's
//                casts do not reach triangle meshes yet (probed once: a cast straight down that sees
//                static bodies only), the terrain is left out of Bullet's casts too (needsCollision) and the
//                casts are against the bodies only: terrain_in_casts says which
// Figures: queries (per pass), queries_per_s (median of 5 timed passes after one warm-up, the three worlds
// alternating), hit_ratio; on Polytope's record ratio_vs_bullet (over the mirror world's rate) and the
// agreement with the mirror world: disagree (queries whose closest-hit distances differ by more than
// 1e-4 m, or where one engine hits and the other misses), disagree_terrain (of those, the ones where both
// closest hits are on the terrain), max_distance_diff_m (over queries both hit). ray_closest also judges
// each engine's answers by an oracle independent of both (exact solids in double at Polytope's poses, below):
// oracle_wrong counts rays whose closest hit is on a body the ray misses, or on one it enters more than
// 1e-4 m from the reported distance, or behind a body the other engine found that the ray enters more than
// 1e-4 m earlier; oracle_max_error_m is the largest distance error on bodies the ray enters. (The mirror
// world holds Polytope's poses, so the oracle judges both engines on the same solids.)
//
// --scene NAME (repeatable) picks cases: convex_vs_mesh, convex_vs_heightfield, convex_vs_mesh_sleep,
// convex_vs_heightfield_sleep; ray_closest, sphere_cast. --seed S picks the rays and the check points. About
// 70 s for convex_vs_mesh and 12 s for raycast on the 2-core development machine.
#include "bench_common.h"
#include "bullet_world.h"

#include "polytope/physics/heightfield.h"
#include "polytope/physics/hull.h"
#include "polytope/physics/triangle_mesh.h"
#include "polytope/physics/world.h"

#include <BulletCollision/CollisionShapes/btHeightfieldTerrainShape.h>
#include <btBulletDynamicsCommon.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace polytope::bench
{
namespace
{
namespace ph = polytope::physics;

// ---- The scene ----------------------------------------------------------------------------------------

constexpr int kTerrainCells = 100; ///< per side
constexpr int kTerrainSamples = kTerrainCells + 1;
constexpr float kTerrainCellMeters = 3.0f;
constexpr double kTerrainAmplitudeMeters = 5.0;
constexpr float kTerrainExtentMeters = static_cast<float>(kTerrainCells) * kTerrainCellMeters; // 300 m
/// Where the terrain's local origin (sample (0, 0) at height 0) sits in the world.
constexpr float kTerrainOriginX = -150.0f;
constexpr float kTerrainOriginY = 5.0f;
constexpr float kTerrainOriginZ = -150.0f;

constexpr int kBodyGridHalf = 10; ///< bodies at x, z in -10 .. 10
constexpr float kBodySpacingMeters = 7.5f;
constexpr float kBodyBaseHeightMeters = 15.0f;
constexpr float kBodyLayerMeters = 2.0f;
constexpr int kShapeKinds = 4; ///< box, sphere, capsule, pyramid
constexpr int kBodyCount = (2 * kBodyGridHalf + 1) * (2 * kBodyGridHalf + 1) * kShapeKinds; // 1764

constexpr float kFriction = 0.5f;
constexpr float kRestitution = 0.6f;
constexpr float kDensity = 1000.0f; ///< kg/m^3

constexpr int kSteps = 500;
constexpr float kDt = 1.0f / 60.0f;
constexpr int kRepetitions = 2; ///< runs per engine and case, the engines' order reversed the second time

/// A body counts as fallen through when its centre of mass ends this far below the surface.
constexpr double kBelowTerrainMeters = 1.0;

/// The surface check: vertical rays from this height (below every body's start, above the terrain's top).
constexpr int kSurfaceCheckRays = 1000;
constexpr float kSurfaceCheckTopMeters = 12.0f;
constexpr float kSurfaceCheckLengthMeters = 20.0f;

static_assert(sizeof(ph::Vec3) == 3 * sizeof(float), "Bullet reads the mesh's Vec3 array as floats");
static_assert(sizeof(btScalar) == sizeof(float), "the single-precision Bullet build");

enum class TerrainKind : std::uint8_t
{
    Mesh,
    HeightField,
};

/// The terrain's samples and triangles, as the top of this file gives them (local frame).
struct TerrainGrid
{
    std::vector<float> heights;         ///< metres, sample (x, z) at z * kTerrainSamples + x
    std::vector<ph::Vec3> vertices;     ///< (3x, height, 3z), same order
    std::vector<std::uint32_t> indices; ///< two triangles per cell

    float height(int x, int z) const
    {
        return heights[static_cast<std::size_t>(z) * kTerrainSamples + static_cast<std::size_t>(x)];
    }

    /// The surface's world height over world (x, z), in double from the float samples; NAN off the terrain.
    double surfaceHeight(double worldX, double worldZ) const
    {
        const double u = (worldX - kTerrainOriginX) / kTerrainCellMeters;
        const double v = (worldZ - kTerrainOriginZ) / kTerrainCellMeters;
        if (!(u >= 0.0 && u <= kTerrainCells && v >= 0.0 && v <= kTerrainCells))
        {
            return NAN;
        }
        const int cx = std::min(static_cast<int>(u), kTerrainCells - 1);
        const int cz = std::min(static_cast<int>(v), kTerrainCells - 1);
        const double fx = u - cx;
        const double fz = v - cz;
        const double h00 = height(cx, cz);
        const double h10 = height(cx + 1, cz);
        const double h01 = height(cx, cz + 1);
        const double h11 = height(cx + 1, cz + 1);
        // The diagonal runs from (x, z+1) to (x+1, z): the first triangle holds fx + fz <= 1.
        const double h = fx + fz <= 1.0 ? h00 + fx * (h10 - h00) + fz * (h01 - h00)
                                        : h11 + (1.0 - fx) * (h01 - h11) + (1.0 - fz) * (h10 - h11);
        return kTerrainOriginY + h;
    }
};

TerrainGrid makeTerrainGrid()
{
    TerrainGrid g;
    g.heights.resize(std::size_t(kTerrainSamples) * kTerrainSamples);
    g.vertices.resize(g.heights.size());
    for (int z = 0; z < kTerrainSamples; ++z)
    {
        for (int x = 0; x < kTerrainSamples; ++x)
        {
            // sin(x * 50 / 100) cos(z * 50 / 100), in double, rounded to float once.
            const auto h = static_cast<float>(kTerrainAmplitudeMeters * std::sin(x * 50.0 / kTerrainCells) *
                                              std::cos(z * 50.0 / kTerrainCells));
            const std::size_t i = std::size_t(z) * kTerrainSamples + std::size_t(x);
            g.heights[i] = h;
            g.vertices[i] = {static_cast<float>(x) * kTerrainCellMeters, h,
                             static_cast<float>(z) * kTerrainCellMeters};
        }
    }
    const auto vertex = [](int x, int z) { return static_cast<std::uint32_t>(z * kTerrainSamples + x); };
    g.indices.reserve(std::size_t(kTerrainCells) * kTerrainCells * 6);
    for (int x = 0; x < kTerrainCells; ++x)
    {
        for (int z = 0; z < kTerrainCells; ++z)
        {
            g.indices.insert(g.indices.end(), {vertex(x, z), vertex(x, z + 1), vertex(x + 1, z)});
            g.indices.insert(g.indices.end(), {vertex(x + 1, z), vertex(x, z + 1), vertex(x + 1, z + 1)});
        }
    }
    return g;
}

/// Polytope's terrain shapes and the pyramid hull, built once and shared by every world of the suite.
struct SceneAssets
{
    TerrainGrid grid;
    std::shared_ptr<const ph::TriangleMesh> mesh;
    std::shared_ptr<const ph::HeightField> heightField;
    ph::ConvexHull pyramid;
    std::array<float, kShapeKinds> masses{}; ///< kg, per shape kind, as Polytope computes them
    bool ok = false;
};

/// The quarter turn about +y that lays Polytope's heightfield diagonal on the mesh's: local x to world -z,
/// local z to world +x.
const ph::Quat kHeightFieldTurn{0.0f, 0.70710678f, 0.0f, 0.70710678f};

ph::Shape dynamicShape(int kind, std::uint32_t pyramidIndex)
{
    switch (kind)
    {
    case 0:
        return ph::Shape::makeBox({0.5f, 0.75f, 1.0f});
    case 1:
        return ph::Shape::makeSphere(0.5f);
    case 2:
        return ph::Shape::makeCapsule(0.75f, 0.5f);
    default:
        return ph::Shape::makeHull(pyramidIndex);
    }
}

SceneAssets makeAssets()
{
    SceneAssets a;
    a.grid = makeTerrainGrid();
    ph::TriangleMeshBuildResult mesh = ph::buildTriangleMesh(a.grid.vertices, a.grid.indices);
    if (!mesh.ok())
    {
        std::fprintf(stderr, "convex_vs_mesh: buildTriangleMesh failed: %s\n", mesh.message.c_str());
        return a;
    }
    a.mesh = std::make_shared<const ph::TriangleMesh>(std::move(mesh.mesh));

    // Local sample (i, j) of the turned field is grid sample (j, 100 - i) (see the top of this file).
    std::vector<float> turned(a.grid.heights.size());
    for (int j = 0; j < kTerrainSamples; ++j)
    {
        for (int i = 0; i < kTerrainSamples; ++i)
        {
            turned[std::size_t(j) * kTerrainSamples + std::size_t(i)] = a.grid.height(j, kTerrainCells - i);
        }
    }
    ph::HeightFieldDesc desc;
    desc.sampleCountX = kTerrainSamples;
    desc.sampleCountZ = kTerrainSamples;
    desc.cellSizeX = kTerrainCellMeters;
    desc.cellSizeZ = kTerrainCellMeters;
    desc.heights = turned;
    ph::HeightFieldBuildResult field = ph::buildHeightField(desc);
    if (!field.ok())
    {
        std::fprintf(stderr, "convex_vs_mesh: buildHeightField failed: %s\n", field.message.c_str());
        return a;
    }
    a.heightField = std::make_shared<const ph::HeightField>(std::move(field.heightField));

    const ph::Vec3 points[] = {{0, 1, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 0, 1}, {0, 0, -1}};
    ph::HullResult hull = ph::buildConvexHull(points);
    if (!hull.ok())
    {
        std::fprintf(stderr, "convex_vs_mesh: buildConvexHull failed: %s\n", hull.message.c_str());
        return a;
    }
    a.pyramid = std::move(hull.hull);

    ph::World probe;
    const std::uint32_t pyramidIndex = probe.addHull(a.pyramid).index;
    for (int k = 0; k < kShapeKinds; ++k)
    {
        ph::BodyDesc body;
        body.shape = dynamicShape(k, pyramidIndex);
        body.density = kDensity;
        ph::BodyState state;
        probe.getBody(probe.createBody(body).id, state);
        a.masses[static_cast<std::size_t>(k)] = state.mass;
    }
    a.ok = true;
    return a;
}

/// Calls fn(position, kind) for every dynamic body of the scene, in creation order.
template <class Fn> void forEachStart(Fn&& fn)
{
    for (int x = -kBodyGridHalf; x <= kBodyGridHalf; ++x)
    {
        for (int z = -kBodyGridHalf; z <= kBodyGridHalf; ++z)
        {
            for (int k = 0; k < kShapeKinds; ++k)
            {
                const ph::Vec3 p{kBodySpacingMeters * static_cast<float>(x),
                                 kBodyBaseHeightMeters + kBodyLayerMeters * static_cast<float>(k),
                                 kBodySpacingMeters * static_cast<float>(z)};
                fn(p, k);
            }
        }
    }
}

/// Points over the terrain for the surface check, the same for every engine and case.
std::vector<std::pair<float, float>> surfaceCheckPoints(std::uint64_t seed)
{
    std::mt19937 rng(static_cast<std::uint32_t>(seed * 7919));
    std::uniform_real_distribution<float> across(kTerrainOriginX + 0.01f,
                                                 kTerrainOriginX + kTerrainExtentMeters - 0.01f);
    std::vector<std::pair<float, float>> points(kSurfaceCheckRays);
    for (auto& [x, z] : points)
    {
        x = across(rng);
        z = across(rng);
    }
    return points;
}

// ---- Polytope -----------------------------------------------------------------------------------------

struct PolytopeScene
{
    std::unique_ptr<ph::World> world;
    ph::BodyId terrain{};
    std::vector<ph::BodyId> bodies; ///< dynamic, in creation order
};

PolytopeScene buildPolytope(const SceneAssets& assets, TerrainKind kind, int threads, bool sleep)
{
    PolytopeScene s;
    ph::WorldConfig config;
    config.threads = threads;
    config.enableSleep = sleep;
    s.world = std::make_unique<ph::World>(config);
    ph::World& world = *s.world;

    ph::BodyDesc terrain;
    terrain.type = ph::BodyType::Static;
    terrain.friction = kFriction;
    terrain.restitution = kRestitution;
    if (kind == TerrainKind::Mesh)
    {
        terrain.shape = ph::Shape::makeCatalogued(ph::ShapeType::Mesh, world.addMesh(assets.mesh).index);
        terrain.transform.p = {kTerrainOriginX, kTerrainOriginY, kTerrainOriginZ};
    }
    else
    {
        terrain.shape = ph::Shape::makeCatalogued(ph::ShapeType::HeightField,
                                                  world.addHeightField(assets.heightField).index);
        // Local sample (0, 0) is grid sample (0, 100).
        terrain.transform.p = {kTerrainOriginX, kTerrainOriginY, kTerrainOriginZ + kTerrainExtentMeters};
        terrain.transform.q = kHeightFieldTurn;
    }
    s.terrain = world.createBody(terrain).id;

    const std::uint32_t pyramidIndex = world.addHull(assets.pyramid).index;
    s.bodies.reserve(kBodyCount);
    forEachStart(
        [&](const ph::Vec3& p, int k)
        {
            ph::BodyDesc desc;
            desc.shape = dynamicShape(k, pyramidIndex);
            desc.transform.p = p;
            desc.density = kDensity;
            desc.friction = kFriction;
            desc.restitution = kRestitution;
            s.bodies.push_back(world.createBody(desc).id);
        });
    return s;
}

/// The largest error of the surface check in a Polytope world (rays at the terrain only: every body is
/// above the rays' start).
double polytopeSurfaceError(const ph::World& world, const TerrainGrid& grid,
                            std::span<const std::pair<float, float>> points)
{
    double worst = 0.0;
    for (const auto& [x, z] : points)
    {
        ph::RayQueryHit hit;
        const ph::RayCastInput ray{
            {x, kSurfaceCheckTopMeters, z}, {0.0f, -kSurfaceCheckLengthMeters, 0.0f}, 1.0f};
        if (!world.castRayClosest(ray, {}, hit))
        {
            return INFINITY;
        }
        worst = std::max(worst, std::fabs(double(hit.point.y) - grid.surfaceHeight(x, z)));
    }
    return worst;
}

// ---- Bullet -------------------------------------------------------------------------------------------

btVector3 toBullet(const ph::Vec3& v)
{
    return {v.x, v.y, v.z};
}

btTransform toBullet(const ph::Transform& t)
{
    return btTransform(btQuaternion(t.q.x, t.q.y, t.q.z, t.q.w), toBullet(t.p));
}

/// Bullet's copy of the terrain: the shape and the arrays it reads in place.
struct BulletTerrain
{
    std::vector<ph::Vec3> vertices;
    std::vector<std::uint32_t> indices;
    std::vector<float> heights;
    std::unique_ptr<btTriangleIndexVertexArray> meshInterface;
    std::unique_ptr<btCollisionShape> shape;
    btTransform placement;
};

std::unique_ptr<BulletTerrain> makeBulletTerrain(const SceneAssets& assets, TerrainKind kind)
{
    auto t = std::make_unique<BulletTerrain>();
    if (kind == TerrainKind::Mesh)
    {
        t->vertices = assets.grid.vertices;
        t->indices = assets.grid.indices;
        // int indices: the same bits as uint32 here, every index being below 2^31.
        t->meshInterface = std::make_unique<btTriangleIndexVertexArray>(
            static_cast<int>(t->indices.size() / 3), reinterpret_cast<int*>(t->indices.data()),
            3 * sizeof(int), static_cast<int>(t->vertices.size()),
            reinterpret_cast<btScalar*>(t->vertices.data()), sizeof(ph::Vec3));
        t->shape = std::make_unique<btBvhTriangleMeshShape>(t->meshInterface.get(), true /*quantized*/, true);
        t->placement = btTransform(btQuaternion::getIdentity(),
                                   btVector3(kTerrainOriginX, kTerrainOriginY, kTerrainOriginZ));
        return t;
    }
    // The heights Polytope's field stores (quantized), back in grid order: grid sample (x, z) is the turned
    // field's local sample (100 - z, x).
    const ph::HeightField& field = *assets.heightField;
    t->heights.resize(assets.grid.heights.size());
    float lo = INFINITY;
    float hi = -INFINITY;
    for (int z = 0; z < kTerrainSamples; ++z)
    {
        for (int x = 0; x < kTerrainSamples; ++x)
        {
            const float h =
                field.vertex(static_cast<std::uint32_t>(kTerrainCells - z), static_cast<std::uint32_t>(x)).y;
            t->heights[std::size_t(z) * kTerrainSamples + std::size_t(x)] = h;
            lo = std::min(lo, h);
            hi = std::max(hi, h);
        }
    }
    auto shape = std::make_unique<btHeightfieldTerrainShape>(
        kTerrainSamples, kTerrainSamples, t->heights.data(), lo, hi, 1, false /*flipQuadEdges*/);
    shape->setLocalScaling(btVector3(kTerrainCellMeters, 1.0f, kTerrainCellMeters));
    t->shape = std::move(shape);
    // Bullet centres the field on its box: local x and z run from -extent/2, y is re-centred on the middle
    // of [lo, hi].
    t->placement =
        btTransform(btQuaternion::getIdentity(), btVector3(kTerrainOriginX + 0.5f * kTerrainExtentMeters,
                                                           kTerrainOriginY + 0.5f * (lo + hi),
                                                           kTerrainOriginZ + 0.5f * kTerrainExtentMeters));
    return t;
}

/// Bullet's dynamic shapes, by kind (its defaults: margin 0.04). The pyramid's points are moved so that its
/// centroid, Bullet's centre of mass, is the shape's origin.
std::array<std::unique_ptr<btCollisionShape>, kShapeKinds> makeBulletShapes(const SceneAssets& assets)
{
    std::array<std::unique_ptr<btCollisionShape>, kShapeKinds> shapes;
    shapes[0] = std::make_unique<btBoxShape>(btVector3(0.5f, 0.75f, 1.0f));
    shapes[1] = std::make_unique<btSphereShape>(0.5f);
    shapes[2] = std::make_unique<btCapsuleShape>(0.5f, 2.0f * 0.75f); // radius, core length; along y
    auto hull = std::make_unique<btConvexHullShape>();
    for (const ph::Vec3& v : assets.pyramid.vertices)
    {
        hull->addPoint(toBullet(v - assets.pyramid.centroid), false);
    }
    hull->recalcLocalAabb();
    shapes[3] = std::move(hull);
    return shapes;
}

/// The scene in a btDiscreteDynamicsWorld.
struct BulletScene
{
    BulletDynamics dynamics;
    btDiscreteDynamicsWorld& world = dynamics.world;
    std::unique_ptr<BulletTerrain> terrain;
    std::array<std::unique_ptr<btCollisionShape>, kShapeKinds> shapes;
    std::vector<std::unique_ptr<btDefaultMotionState>> motionStates;
    std::vector<std::unique_ptr<btRigidBody>> bodies; ///< [0] the terrain, then the dynamic bodies in order

    ~BulletScene()
    {
        for (auto& body : bodies)
        {
            world.removeRigidBody(body.get());
        }
    }

    btRigidBody& add(btCollisionShape* shape, const btTransform& xf, float mass, bool sleep)
    {
        btVector3 inertia(0, 0, 0);
        if (mass > 0.0f)
        {
            shape->calculateLocalInertia(mass, inertia);
        }
        auto motion = std::make_unique<btDefaultMotionState>(xf);
        btRigidBody::btRigidBodyConstructionInfo info(mass, motion.get(), shape, inertia);
        info.m_friction = std::sqrt(kFriction);
        info.m_restitution = std::sqrt(kRestitution);
        auto body = std::make_unique<btRigidBody>(info);
        if (!sleep)
        {
            body->setActivationState(DISABLE_DEACTIVATION);
        }
        world.addRigidBody(body.get());
        motionStates.push_back(std::move(motion));
        bodies.push_back(std::move(body));
        return *bodies.back();
    }
};

std::unique_ptr<BulletScene> buildBullet(const SceneAssets& assets, TerrainKind kind, bool sleep)
{
    auto s = std::make_unique<BulletScene>();
    const ph::Vec3 g = ph::WorldConfig{}.gravity;
    s->world.setGravity(toBullet(g));
    s->terrain = makeBulletTerrain(assets, kind);
    s->add(s->terrain->shape.get(), s->terrain->placement, 0.0f, sleep);
    s->shapes = makeBulletShapes(assets);
    s->bodies.reserve(kBodyCount + 1);
    forEachStart(
        [&](const ph::Vec3& p, int k)
        {
            const ph::Vec3 centre = k == 3 ? p + assets.pyramid.centroid : p;
            s->add(s->shapes[static_cast<std::size_t>(k)].get(),
                   btTransform(btQuaternion::getIdentity(), toBullet(centre)),
                   assets.masses[static_cast<std::size_t>(k)], sleep);
        });
    return s;
}

template <class World>
double bulletSurfaceError(World& world, const TerrainGrid& grid,
                          std::span<const std::pair<float, float>> points)
{
    double worst = 0.0;
    for (const auto& [x, z] : points)
    {
        const btVector3 from(x, kSurfaceCheckTopMeters, z);
        const btVector3 to(x, kSurfaceCheckTopMeters - kSurfaceCheckLengthMeters, z);
        btCollisionWorld::ClosestRayResultCallback callback(from, to);
        world.rayTest(from, to, callback);
        if (!callback.hasHit())
        {
            return INFINITY;
        }
        worst = std::max(worst, std::fabs(double(callback.m_hitPointWorld.y()) - grid.surfaceHeight(x, z)));
    }
    return worst;
}

// ---- Stepping -----------------------------------------------------------------------------------------

/// One run of the scene by one engine.
struct RunFigures
{
    std::vector<double> msPerStep;
    int belowTerrain = 0;
    int offTerrain = 0;
    int asleep = 0;
    double surfaceErrorMeters = 0.0;
    ph::StepProfile phaseSums{}; ///< Polytope: StepStats::profile summed over the steps
    double contactPoints = 0.0;  ///< manifold points after each step, summed over the steps
};

/// below_terrain and off_terrain from each body's final centre of mass.
void judgeFinalPoses(const TerrainGrid& grid, const ph::Vec3& centre, RunFigures& f)
{
    const double surface = grid.surfaceHeight(centre.x, centre.z);
    if (std::isnan(surface))
    {
        ++f.offTerrain;
    }
    else if (centre.y < surface - kBelowTerrainMeters)
    {
        ++f.belowTerrain;
    }
}

void stepPolytope(PolytopeScene& scene, RunFigures& f)
{
    for (int s = 0; s < kSteps; ++s)
    {
        const auto t0 = Clock::now();
        scene.world->step(kDt);
        f.msPerStep.push_back(secondsSince(t0) * 1e3);
        const ph::StepStats& stats = scene.world->stepStats();
        const ph::StepProfile& p = stats.profile;
        ph::StepProfile& sum = f.phaseSums;
        sum.boxes += p.boxes;
        sum.pairs += p.pairs;
        sum.collide += p.collide;
        sum.levels += p.levels;
        sum.setup += p.setup;
        sum.solver += p.solver;
        sum.store += p.store;
        sum.finalize += p.finalize;
        sum.sleep += p.sleep;
        f.contactPoints += stats.contactPoints;
    }
}

void judgePolytope(const PolytopeScene& scene, const TerrainGrid& grid, RunFigures& f)
{
    ph::BodyState state;
    for (const ph::BodyId id : scene.bodies)
    {
        scene.world->getBody(id, state);
        judgeFinalPoses(grid, state.centerOfMass, f);
        f.asleep += state.sleeping ? 1 : 0;
    }
}

void stepBullet(BulletScene& scene, RunFigures& f)
{
    for (int s = 0; s < kSteps; ++s)
    {
        const auto t0 = Clock::now();
        scene.world.stepSimulation(kDt, 0);
        f.msPerStep.push_back(secondsSince(t0) * 1e3);
        for (int m = 0; m < scene.dynamics.dispatcher.getNumManifolds(); ++m)
        {
            f.contactPoints += scene.dynamics.dispatcher.getManifoldByIndexInternal(m)->getNumContacts();
        }
    }
}

void judgeBullet(const BulletScene& scene, const TerrainGrid& grid, RunFigures& f)
{
    for (std::size_t i = 1; i < scene.bodies.size(); ++i)
    {
        const btRigidBody& body = *scene.bodies[i];
        const btVector3 c = body.getCenterOfMassPosition();
        judgeFinalPoses(grid, {c.x(), c.y(), c.z()}, f);
        f.asleep += body.getActivationState() == ISLAND_SLEEPING ? 1 : 0;
    }
}

using Engine = PeerEngine;
constexpr const auto& kEngines = kPeerEngines;
constexpr const auto& kEngineNames = kPeerEngineNames;

/// One run: builds the world, checks its surface (first run only), steps it, judges it (first run only).
void runOnce(const SceneAssets& assets, TerrainKind kind, bool sleep, Engine engine, bool first,
             std::span<const std::pair<float, float>> checkPoints, RunFigures& f)
{
    if (engine == Engine::Bullet)
    {
        std::unique_ptr<BulletScene> scene = buildBullet(assets, kind, sleep);
        if (first)
        {
            f.surfaceErrorMeters = bulletSurfaceError(scene->world, assets.grid, checkPoints);
        }
        stepBullet(*scene, f);
        if (first)
        {
            judgeBullet(*scene, assets.grid, f);
        }
        return;
    }
    PolytopeScene scene = buildPolytope(assets, kind, engine == Engine::Polytope1 ? 1 : 2, sleep);
    if (first)
    {
        f.surfaceErrorMeters = polytopeSurfaceError(*scene.world, assets.grid, checkPoints);
    }
    stepPolytope(scene, f);
    if (first)
    {
        judgePolytope(scene, assets.grid, f);
    }
}

double mean(const std::vector<double>& v)
{
    double sum = 0.0;
    for (const double x : v)
    {
        sum += x;
    }
    return v.empty() ? NAN : sum / static_cast<double>(v.size());
}

void runSteppingCase(Report& report, const SceneAssets& assets, const char* caseName, TerrainKind kind,
                     bool sleep, std::uint64_t seed)
{
    const auto checkPoints = surfaceCheckPoints(seed);
    std::array<RunFigures, std::size(kEngines)> figures;
    // The sleeping cases once: they are there to show what sleep changes, not for the ratio.
    const int repetitions = sleep ? 1 : kRepetitions;
    for (int rep = 0; rep < repetitions; ++rep)
    {
        for (std::size_t e = 0; e < std::size(kEngines); ++e)
        {
            const std::size_t which = rep % 2 == 0 ? e : std::size(kEngines) - 1 - e;
            runOnce(assets, kind, sleep, kEngines[which], rep == 0, checkPoints, figures[which]);
        }
    }
    const double bulletStepsPerSecond = 1e3 / mean(figures[std::size(kEngines) - 1].msPerStep);
    for (std::size_t e = 0; e < std::size(kEngines); ++e)
    {
        RunFigures& f = figures[e];
        const double ms = mean(f.msPerStep);
        Record& r = report.add(caseName, kEngineNames[e], kBodyCount)
                        .add("steps", kSteps)
                        .add("ms_per_step_mean", ms)
                        .add("ms_per_step_p99", quantile(f.msPerStep, 0.99))
                        .add("steps_per_s", 1e3 / ms);
        if (kEngines[e] != Engine::Bullet)
        {
            r.add("ratio_vs_bullet", 1e3 / ms / bulletStepsPerSecond);
        }
        r.add("below_terrain", f.belowTerrain).add("off_terrain", f.offTerrain);
        if (sleep)
        {
            r.add("asleep", f.asleep);
        }
        const double steps = static_cast<double>(f.msPerStep.size());
        r.add("surface_max_error_m", f.surfaceErrorMeters)
            .add("contact_points_mean", f.contactPoints / steps);
        if (kEngines[e] != Engine::Bullet)
        {
            // Where the time went (StepStats::profile, ms per step; world.h says what each phase holds).
            const ph::StepProfile& p = f.phaseSums;
            r.add("phase_boxes_ms", p.boxes / steps)
                .add("phase_pairs_ms", p.pairs / steps)
                .add("phase_collide_ms", p.collide / steps)
                .add("phase_levels_ms", p.levels / steps)
                .add("phase_setup_ms", p.setup / steps)
                .add("phase_solver_ms", p.solver / steps)
                .add("phase_store_ms", p.store / steps)
                .add("phase_finalize_ms", p.finalize / steps)
                .add("phase_sleep_ms", p.sleep / steps);
        }
    }
}

bool wanted(const SuiteOptions& options, std::string_view caseName)
{
    return options.scenes.empty() ||
           std::find(options.scenes.begin(), options.scenes.end(), caseName) != options.scenes.end();
}

template <std::size_t N>
void warnUnknownCases(const SuiteOptions& options, const char* suite, const char* const (&cases)[N])
{
    for (const std::string& name : options.scenes)
    {
        if (std::none_of(std::begin(cases), std::end(cases), [&](const char* c) { return name == c; }))
        {
            std::fprintf(stderr, "polytope-bench %s: no case '%s' in this suite\n", suite, name.c_str());
        }
    }
}

// ---- Queries ------------------------------------------------------------------------------------------

constexpr std::int64_t kDefaultRays = 100000; ///< per pass (--count N)
constexpr std::int64_t kRaysPerCast = 10;     ///< sphere casts: a tenth as many
constexpr int kTimedPasses = 5;
constexpr float kRayLengthMeters = 100.0f;
constexpr float kCastLengthMeters = 50.0f;
constexpr float kCastRadiusMeters = 0.5f;
constexpr float kQueryStartLowMeters = 20.0f;
constexpr float kQueryStartHighMeters = 30.0f;
constexpr float kCastRegionHalfMeters = 80.0f;
/// Closest hits further apart than this disagree.
constexpr double kAgreementToleranceMeters = 1e-4;

struct Segment
{
    ph::Vec3 origin{};
    ph::Vec3 translation{};
};

/// `count` segments from random points 20 .. 30 m up over the square of half side `half` about the origin,
/// `length` metres long, mostly downward (see the top of this file).
std::vector<Segment> downwardSegments(std::size_t count, float half, float length, std::mt19937& rng)
{
    std::uniform_real_distribution<float> across(-half, half);
    std::uniform_real_distribution<float> up(kQueryStartLowMeters, kQueryStartHighMeters);
    std::uniform_real_distribution<float> slant(-1.0f, 1.0f);
    std::vector<Segment> out(count);
    for (Segment& s : out)
    {
        const float x = across(rng);
        const float z = across(rng);
        s.origin = {x, up(rng), z};
        const float u = slant(rng);
        const float w = slant(rng);
        s.translation = ph::normalize(ph::Vec3{u, -1.0f, w}) * length;
    }
    return out;
}

using Figures = std::vector<std::pair<std::string, double>>;

/// What one query found: a fraction and the body (its Polytope slot; -1 for none).
struct QueryAnswer
{
    bool hit = false;
    float fraction = 0.0f;
    int body = -1;
};

/// The settled Polytope scene as a btCollisionWorld: the same mesh and shapes at Polytope's final transforms,
/// exact solids (margin 0 on boxes and hulls). Object user index: the Polytope body's slot.
struct BulletMirror
{
    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher{&configuration};
    btDbvtBroadphase broadphase;
    btCollisionWorld world{&dispatcher, &broadphase, &configuration};
    std::unique_ptr<BulletTerrain> terrain;
    std::array<std::unique_ptr<btCollisionShape>, kShapeKinds> shapes;
    std::vector<std::unique_ptr<btCollisionObject>> objects; ///< [0] the terrain

    ~BulletMirror()
    {
        for (auto& object : objects)
        {
            world.removeCollisionObject(object.get());
        }
    }

    void add(btCollisionShape* shape, const btTransform& xf, int slot)
    {
        auto object = std::make_unique<btCollisionObject>();
        object->setCollisionShape(shape);
        object->setWorldTransform(xf);
        object->setCollisionFlags(btCollisionObject::CF_STATIC_OBJECT);
        object->setUserIndex(slot);
        world.addCollisionObject(object.get());
        objects.push_back(std::move(object));
    }
};

std::unique_ptr<BulletMirror> mirrorPolytope(const SceneAssets& assets, const PolytopeScene& scene)
{
    auto m = std::make_unique<BulletMirror>();
    m->terrain = makeBulletTerrain(assets, TerrainKind::Mesh);
    m->add(m->terrain->shape.get(), m->terrain->placement, static_cast<int>(scene.terrain.index));
    auto box = std::make_unique<btBoxShape>(btVector3(0.5f, 0.75f, 1.0f));
    box->setMargin(0); // keeps the outer extents; sharp corners, as Polytope's box
    m->shapes[0] = std::move(box);
    m->shapes[1] = std::make_unique<btSphereShape>(0.5f);
    m->shapes[2] = std::make_unique<btCapsuleShape>(0.5f, 2.0f * 0.75f);
    // Polytope's hull as it is, about the shape's origin (the body transform is the shape's).
    auto hull = std::make_unique<btConvexHullShape>();
    for (const ph::Vec3& v : assets.pyramid.vertices)
    {
        hull->addPoint(toBullet(v), false);
    }
    hull->recalcLocalAabb();
    hull->setMargin(0); // btConvexHullShape's margin lies outside its points
    m->shapes[3] = std::move(hull);
    ph::BodyState state;
    for (std::size_t i = 0; i < scene.bodies.size(); ++i)
    {
        scene.world->getBody(scene.bodies[i], state);
        m->add(m->shapes[i % kShapeKinds].get(), toBullet(state.transform), static_cast<int>(state.id.index));
    }
    m->world.updateAabbs();
    return m;
}

/// ClosestConvexResultCallback that can leave one object out (the terrain, when Polytope's casts do not
/// reach meshes).
struct SweepCallback : btCollisionWorld::ClosestConvexResultCallback
{
    const btCollisionObject* skip = nullptr;

    SweepCallback(const btVector3& from, const btVector3& to, const btCollisionObject* skipObject)
        : ClosestConvexResultCallback(from, to), skip(skipObject)
    {
    }

    bool needsCollision(btBroadphaseProxy* proxy) const override
    {
        return proxy->m_clientObject != skip && ClosestConvexResultCallback::needsCollision(proxy);
    }
};

void bulletRays(const btCollisionWorld& world, std::span<const Segment> rays,
                std::vector<QueryAnswer>& answers)
{
    for (std::size_t i = 0; i < rays.size(); ++i)
    {
        const btVector3 from = toBullet(rays[i].origin);
        const btVector3 to = toBullet(rays[i].origin + rays[i].translation);
        btCollisionWorld::ClosestRayResultCallback callback(from, to);
        world.rayTest(from, to, callback);
        answers[i] = {callback.hasHit(), callback.m_closestHitFraction,
                      callback.hasHit() ? callback.m_collisionObject->getUserIndex() : -1};
    }
}

void bulletCasts(const btCollisionWorld& world, const btCollisionObject* skip, std::span<const Segment> casts,
                 std::vector<QueryAnswer>& answers)
{
    const btSphereShape sphere(kCastRadiusMeters);
    for (std::size_t i = 0; i < casts.size(); ++i)
    {
        const btVector3 from = toBullet(casts[i].origin);
        const btVector3 to = toBullet(casts[i].origin + casts[i].translation);
        SweepCallback callback(from, to, skip);
        world.convexSweepTest(&sphere, btTransform(btQuaternion::getIdentity(), from),
                              btTransform(btQuaternion::getIdentity(), to), callback, 0.0f);
        answers[i] = {callback.hasHit(), callback.m_closestHitFraction,
                      callback.hasHit() ? callback.m_hitCollisionObject->getUserIndex() : -1};
    }
}

/// Timings of the three worlds: Polytope's, Bullet's mirror of it, Bullet's own settled world.
struct PassTimes
{
    std::vector<double> polytope;
    std::vector<double> mirror;
    std::vector<double> own;
};

PassTimes timePasses(const std::function<void()>& polytope, const std::function<void()>& mirror,
                     const std::function<void()>& own)
{
    polytope();
    mirror();
    own();
    PassTimes t;
    for (int pass = 0; pass < kTimedPasses; ++pass)
    {
        auto start = Clock::now();
        polytope();
        t.polytope.push_back(secondsSince(start));
        start = Clock::now();
        mirror();
        t.mirror.push_back(secondsSince(start));
        start = Clock::now();
        own();
        t.own.push_back(secondsSince(start));
    }
    return t;
}

double hitRatio(const std::vector<QueryAnswer>& answers)
{
    const auto hits =
        std::count_if(answers.begin(), answers.end(), [](const QueryAnswer& a) { return a.hit; });
    return answers.empty() ? 0.0 : static_cast<double>(hits) / static_cast<double>(answers.size());
}

// ---- Oracle (rays) -------------------------------------------------------------------------------------
// Independent of both engines, in double from the exact shapes of the top of this file at Polytope's final
// poses: each solid as a convex function of the local point that is <= 0 inside (the signed distance for
// spheres and capsules; the largest plane excess for boxes and the pyramid, whose zero set is the same
// surface). Along a segment it is convex in t: ternary search finds its minimum, bisection before the minimum
// the ray's entry. Only bodies some engine reported are checked (the terrain is judged by disagree_terrain).

/// Rays passing within this of a body's surface graze it: either answer (hit or miss) is right; and a hit
/// distance further than this from the oracle's is wrong.
constexpr double kOracleToleranceMeters = 1e-4;

/// A dynamic body as the oracle sees it: its shape kind and Polytope's final pose.
struct OracleBody
{
    int kind = -1; ///< 0 box, 1 sphere, 2 capsule, 3 pyramid; -1 not a dynamic body (the terrain)
    std::array<double, 3> position{};
    std::array<double, 4> rotation{0.0, 0.0, 0.0, 1.0}; ///< x, y, z, w, normalised
};

double solidValue(int kind, const std::array<double, 3>& l)
{
    switch (kind)
    {
    case 0:
        return std::max({std::fabs(l[0]) - 0.5, std::fabs(l[1]) - 0.75, std::fabs(l[2]) - 1.0});
    case 1:
        return std::sqrt(l[0] * l[0] + l[1] * l[1] + l[2] * l[2]) - 0.5;
    case 2:
    {
        const double dy = l[1] - std::clamp(l[1], -0.75, 0.75);
        return std::sqrt(l[0] * l[0] + dy * dy + l[2] * l[2]) - 0.5;
    }
    default:
    {
        // The hull of (0,1,0), (+-1,0,0), (0,0,+-1): y >= 0 and +-x + y +-z <= 1.
        double v = -l[1];
        for (const double sx : {-1.0, 1.0})
        {
            for (const double sz : {-1.0, 1.0})
            {
                v = std::max(v, (sx * l[0] + l[1] + sz * l[2] - 1.0) / std::sqrt(3.0));
            }
        }
        return v;
    }
    }
}

enum class OracleContact : std::uint8_t
{
    Miss,  ///< the ray stays farther than the tolerance from the body
    Graze, ///< within the tolerance of touching it
    Hit,   ///< it goes deeper than the tolerance
};

struct OracleAnswer
{
    OracleContact contact = OracleContact::Miss;
    double fraction = 0.0; ///< Hit: where the ray enters
};

OracleAnswer oracleRay(const OracleBody& body, const Segment& ray)
{
    const auto valueAt = [&](double t)
    {
        const double v[3] = {ray.origin.x + t * ray.translation.x - body.position[0],
                             ray.origin.y + t * ray.translation.y - body.position[1],
                             ray.origin.z + t * ray.translation.z - body.position[2]};
        // Into the body's frame: rotate by the conjugate of the rotation.
        const double x = -body.rotation[0], y = -body.rotation[1], z = -body.rotation[2],
                     w = body.rotation[3];
        const double tx = 2.0 * (y * v[2] - z * v[1]);
        const double ty = 2.0 * (z * v[0] - x * v[2]);
        const double tz = 2.0 * (x * v[1] - y * v[0]);
        return solidValue(body.kind, {v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz),
                                      v[2] + w * tz + (x * ty - y * tx)});
    };
    double lo = 0.0;
    double hi = 1.0;
    for (int i = 0; i < 100; ++i)
    {
        const double a = lo + (hi - lo) / 3.0;
        const double b = hi - (hi - lo) / 3.0;
        if (valueAt(a) < valueAt(b))
        {
            hi = b;
        }
        else
        {
            lo = a;
        }
    }
    const double closest = 0.5 * (lo + hi);
    const double gap = std::min({valueAt(closest), valueAt(0.0), valueAt(1.0)});
    if (gap > kOracleToleranceMeters)
    {
        return {OracleContact::Miss, 0.0};
    }
    if (gap > -kOracleToleranceMeters)
    {
        return {OracleContact::Graze, 0.0};
    }
    // Rays start above every body, so the value falls from positive to negative before `closest`.
    lo = 0.0;
    hi = valueAt(closest) <= 0.0 ? closest : 1.0;
    for (int i = 0; i < 64; ++i)
    {
        const double mid = 0.5 * (lo + hi);
        if (valueAt(mid) <= 0.0)
        {
            hi = mid;
        }
        else
        {
            lo = mid;
        }
    }
    return {OracleContact::Hit, hi};
}

/// One engine's ray answers judged by the oracle.
struct Verdicts
{
    std::size_t wrong = 0;               ///< see judge
    double maxDistanceErrorMeters = 0.0; ///< over closest hits on bodies the ray really enters
};

/// Judges answer `a` of one engine, given answer `b` of the other: wrong when a's closest body is one the
/// ray misses, or one it enters more than the tolerance away from a's distance, or when b's body is one the
/// ray enters more than the tolerance before a's closest hit (or a missed it).
void judge(std::span<const OracleBody> bodies, const Segment& ray, double length, const QueryAnswer& a,
           const QueryAnswer& b, Verdicts& verdicts)
{
    const auto body = [&](int slot) -> const OracleBody*
    {
        return slot >= 0 && static_cast<std::size_t>(slot) < bodies.size() &&
                       bodies[static_cast<std::size_t>(slot)].kind >= 0
                   ? &bodies[static_cast<std::size_t>(slot)]
                   : nullptr;
    };
    bool wrong = false;
    double entry = a.fraction;
    if (a.hit && body(a.body) != nullptr)
    {
        const OracleAnswer o = oracleRay(*body(a.body), ray);
        wrong = o.contact == OracleContact::Miss;
        if (o.contact == OracleContact::Hit)
        {
            entry = o.fraction;
            const double error = std::fabs(a.fraction - o.fraction) * length;
            verdicts.maxDistanceErrorMeters = std::max(verdicts.maxDistanceErrorMeters, error);
            wrong = error > kOracleToleranceMeters;
        }
    }
    if (!wrong && b.hit && b.body != a.body && body(b.body) != nullptr)
    {
        const OracleAnswer o = oracleRay(*body(b.body), ray);
        wrong = o.contact == OracleContact::Hit &&
                (!a.hit || (entry - o.fraction) * length > kOracleToleranceMeters);
    }
    verdicts.wrong += wrong ? 1 : 0;
}

/// Per Polytope slot: the oracle's view of the settled scene.
std::vector<OracleBody> oracleBodies(const PolytopeScene& scene)
{
    std::vector<OracleBody> out;
    ph::BodyState state;
    for (std::size_t i = 0; i < scene.bodies.size(); ++i)
    {
        scene.world->getBody(scene.bodies[i], state);
        const std::size_t slot = state.id.index;
        out.resize(std::max(out.size(), slot + 1));
        const ph::Quat& q = state.transform.q;
        const double norm =
            std::sqrt(double(q.x) * q.x + double(q.y) * q.y + double(q.z) * q.z + double(q.w) * q.w);
        out[slot] = {static_cast<int>(i % kShapeKinds),
                     {state.transform.p.x, state.transform.p.y, state.transform.p.z},
                     {q.x / norm, q.y / norm, q.z / norm, q.w / norm}};
    }
    return out;
}

void reportQueries(Report& report, const char* caseName, std::size_t queries, float length, int terrainSlot,
                   PassTimes& times, const std::vector<QueryAnswer>& polytope,
                   const std::vector<QueryAnswer>& mirror, const std::vector<QueryAnswer>& own,
                   const Figures& polytopeExtra, const Figures& bulletExtra)
{
    std::size_t disagree = 0;
    std::size_t disagreeTerrain = 0;
    double maxDiff = 0.0;
    for (std::size_t i = 0; i < queries; ++i)
    {
        const QueryAnswer& a = polytope[i];
        const QueryAnswer& b = mirror[i];
        const double diff =
            a.hit && b.hit ? std::fabs(static_cast<double>(a.fraction) - b.fraction) * length : 0.0;
        if (a.hit && b.hit)
        {
            maxDiff = std::max(maxDiff, diff);
        }
        if (a.hit != b.hit || diff > kAgreementToleranceMeters)
        {
            ++disagree;
            disagreeTerrain += a.body == terrainSlot && b.body == terrainSlot ? 1 : 0;
        }
    }
    const double q = static_cast<double>(queries);
    const double polytopeRate = q / median(times.polytope);
    const double mirrorRate = q / median(times.mirror);
    Record& p = report.add(caseName, "polytope", static_cast<std::int64_t>(queries))
                    .add("queries", q)
                    .add("queries_per_s", polytopeRate)
                    .add("hit_ratio", hitRatio(polytope))
                    .add("ratio_vs_bullet", polytopeRate / mirrorRate)
                    .add("disagree", static_cast<double>(disagree))
                    .add("disagree_terrain", static_cast<double>(disagreeTerrain))
                    .add("max_distance_diff_m", maxDiff);
    for (const auto& [name, value] : polytopeExtra)
    {
        p.add(name, value);
    }
    Record& b = report.add(caseName, "bullet", static_cast<std::int64_t>(queries))
                    .add("queries", q)
                    .add("queries_per_s", mirrorRate)
                    .add("hit_ratio", hitRatio(mirror));
    for (const auto& [name, value] : bulletExtra)
    {
        b.add(name, value);
    }
    report.add(caseName, "bullet_own", static_cast<std::int64_t>(queries))
        .add("queries", q)
        .add("queries_per_s", q / median(times.own))
        .add("hit_ratio", hitRatio(own));
}

constexpr const char* kSteppingCases[] = {"convex_vs_mesh", "convex_vs_heightfield", "convex_vs_mesh_sleep",
                                          "convex_vs_heightfield_sleep"};
constexpr const char* kQueryCases[] = {"ray_closest", "sphere_cast"};

} // namespace

void runConvexVsMeshSuite(Report& report, const SuiteOptions& options)
{
    warnUnknownCases(options, "convex_vs_mesh", kSteppingCases);
    const SceneAssets assets = makeAssets();
    if (!assets.ok)
    {
        return;
    }
    struct Entry
    {
        const char* name;
        TerrainKind kind;
        bool sleep;
    };
    const Entry entries[] = {{"convex_vs_mesh", TerrainKind::Mesh, false},
                             {"convex_vs_heightfield", TerrainKind::HeightField, false},
                             {"convex_vs_mesh_sleep", TerrainKind::Mesh, true},
                             {"convex_vs_heightfield_sleep", TerrainKind::HeightField, true}};
    for (const Entry& e : entries)
    {
        if (wanted(options, e.name))
        {
            runSteppingCase(report, assets, e.name, e.kind, e.sleep, options.seed);
        }
    }
}

void runRaycastSuite(Report& report, const SuiteOptions& options)
{
    warnUnknownCases(options, "raycast", kQueryCases);
    const SceneAssets assets = makeAssets();
    if (!assets.ok)
    {
        return;
    }
    // The settled worlds: 500 steps, sleeping off, in both engines.
    PolytopeScene polytope = buildPolytope(assets, TerrainKind::Mesh, 1, false);
    RunFigures settle;
    stepPolytope(polytope, settle);
    std::unique_ptr<BulletScene> bullet = buildBullet(assets, TerrainKind::Mesh, false);
    stepBullet(*bullet, settle);
    const std::unique_ptr<BulletMirror> mirror = mirrorPolytope(assets, polytope);
    const ph::World& world = *polytope.world;
    const btCollisionWorld& own = bullet->world;
    const int terrainSlot = static_cast<int>(polytope.terrain.index);

    // One generator per case, so that a case's queries do not depend on which other cases run.
    const auto seed = static_cast<std::uint32_t>(options.seed * 15485863);
    const auto rayCount = static_cast<std::size_t>(options.count > 0 ? options.count : kDefaultRays);

    if (wanted(options, "ray_closest"))
    {
        std::mt19937 rayRng(seed);
        const std::vector<Segment> rays =
            downwardSegments(rayCount, 0.5f * kTerrainExtentMeters, kRayLengthMeters, rayRng);
        std::vector<QueryAnswer> mine(rays.size());
        std::vector<QueryAnswer> theirs(rays.size());
        std::vector<QueryAnswer> theirsOwn(rays.size());
        PassTimes times = timePasses(
            [&]
            {
                const ph::QueryFilter filter;
                for (std::size_t i = 0; i < rays.size(); ++i)
                {
                    ph::RayQueryHit hit;
                    const bool found =
                        world.castRayClosest({rays[i].origin, rays[i].translation, 1.0f}, filter, hit);
                    mine[i] = {found, found ? hit.fraction : 0.0f,
                               found ? static_cast<int>(hit.body.index) : -1};
                }
            },
            [&] { bulletRays(mirror->world, rays, theirs); }, [&] { bulletRays(own, rays, theirsOwn); });
        const std::vector<OracleBody> bodies = oracleBodies(polytope);
        Verdicts mineJudged;
        Verdicts theirsJudged;
        for (std::size_t i = 0; i < rays.size(); ++i)
        {
            judge(bodies, rays[i], kRayLengthMeters, mine[i], theirs[i], mineJudged);
            judge(bodies, rays[i], kRayLengthMeters, theirs[i], mine[i], theirsJudged);
        }
        const auto verdictFigures = [](const Verdicts& v) -> Figures
        {
            return {{"oracle_wrong", static_cast<double>(v.wrong)},
                    {"oracle_max_error_m", v.maxDistanceErrorMeters}};
        };
        reportQueries(report, "ray_closest", rays.size(), kRayLengthMeters, terrainSlot, times, mine, theirs,
                      theirsOwn, verdictFigures(mineJudged), verdictFigures(theirsJudged));
    }

    if (wanted(options, "sphere_cast"))
    {
        std::mt19937 castRng(seed + 1);
        const ph::Shape sphere = ph::Shape::makeSphere(kCastRadiusMeters);
        // Whether Polytope's casts reach the mesh: a cast straight down that sees static bodies only.
        ph::QueryFilter terrainOnly;
        terrainOnly.bodyTypes = ph::kQueryStatic;
        ph::ShapeQueryHit probe;
        const bool terrainInCasts = world.castShapeClosest(
            {sphere, {{0.0f, 20.0f, 0.0f}, {}}, {0.0f, -40.0f, 0.0f}, 1.0f}, terrainOnly, probe);
        const std::size_t castCount = std::max<std::size_t>(1, rayCount / kRaysPerCast);
        const std::vector<Segment> casts =
            downwardSegments(castCount, kCastRegionHalfMeters, kCastLengthMeters, castRng);
        std::vector<QueryAnswer> mine(casts.size());
        std::vector<QueryAnswer> theirs(casts.size());
        std::vector<QueryAnswer> theirsOwn(casts.size());
        const btCollisionObject* skipMirror = terrainInCasts ? nullptr : mirror->objects[0].get();
        const btCollisionObject* skipOwn = terrainInCasts ? nullptr : bullet->bodies[0].get();
        PassTimes times = timePasses(
            [&]
            {
                const ph::QueryFilter filter;
                for (std::size_t i = 0; i < casts.size(); ++i)
                {
                    ph::ShapeQueryHit hit;
                    const bool found = world.castShapeClosest(
                        {sphere, {casts[i].origin, {}}, casts[i].translation, 1.0f}, filter, hit);
                    mine[i] = {found, found ? hit.fraction : 0.0f,
                               found ? static_cast<int>(hit.body.index) : -1};
                }
            },
            [&] { bulletCasts(mirror->world, skipMirror, casts, theirs); },
            [&] { bulletCasts(own, skipOwn, casts, theirsOwn); });
        reportQueries(report, "sphere_cast", casts.size(), kCastLengthMeters, terrainSlot, times, mine,
                      theirs, theirsOwn, {{"terrain_in_casts", terrainInCasts ? 1.0 : 0.0}}, {});
    }
}

} // namespace polytope::bench

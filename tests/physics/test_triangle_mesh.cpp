// Static triangle meshes against brute force: every box query, ray cast and active-edge flag is compared
// with a scan over all triangles (or with answers worked out by hand), on seeded random triangle soups and
// grid terrains; plus validation, the tree's own invariants, its depth bound, determinism, memory and the
// time to build a million triangles.
#include "polytope/physics/triangle_mesh.h"

#include "support/allocation_counter.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <limits>
#include <random>
#include <set>
#include <vector>

using namespace polytope::physics;

namespace
{

// ---- inputs ----------------------------------------------------------------------------------------------

struct MeshInput
{
    std::vector<Vec3> vertices;
    std::vector<std::uint32_t> indices;
};

float uniform(std::mt19937& rng, float lo, float hi)
{
    return std::uniform_real_distribution<float>(lo, hi)(rng);
}

Vec3 randomPoint(std::mt19937& rng, const Aabb& box)
{
    return {uniform(rng, box.min.x, box.max.x), uniform(rng, box.min.y, box.max.y),
            uniform(rng, box.min.z, box.max.z)};
}

/// `count` triangles with their own vertices, centred in [-extent, extent]^3, sizes log-uniform in
/// 0.02 .. 2 m.
MeshInput randomSoup(std::mt19937& rng, int count, float extent)
{
    MeshInput input;
    const Aabb space{Vec3{-extent, -extent, -extent}, Vec3{extent, extent, extent}};
    for (int t = 0; t < count; ++t)
    {
        const Vec3 centre = randomPoint(rng, space);
        const float size = 0.02f * std::pow(100.0f, uniform(rng, 0.0f, 1.0f));
        for (int corner = 0; corner < 3; ++corner)
        {
            input.vertices.push_back(centre + randomPoint(rng, Aabb{Vec3{-1, -1, -1}, Vec3{1, 1, 1}}) * size);
            input.indices.push_back(static_cast<std::uint32_t>(input.vertices.size() - 1));
        }
    }
    return input;
}

/// Vertex (i, j) of a grid terrain, i along x in [0, nx], j along z in [0, nz].
std::uint32_t gridVertex(int nx, int i, int j)
{
    return static_cast<std::uint32_t>(j * (nx + 1) + i);
}

/// nx * nz quads of `cell` metres, two triangles each, front faces up (+y); heights uniform in
/// [0, heightRange].
MeshInput gridTerrain(std::mt19937& rng, int nx, int nz, float cell, float heightRange)
{
    MeshInput input;
    input.vertices.reserve(static_cast<std::size_t>(nx + 1) * (nz + 1));
    for (int j = 0; j <= nz; ++j)
    {
        for (int i = 0; i <= nx; ++i)
        {
            const float h = heightRange > 0.0f ? uniform(rng, 0.0f, heightRange) : 0.0f;
            input.vertices.push_back({static_cast<float>(i) * cell, h, static_cast<float>(j) * cell});
        }
    }
    input.indices.reserve(static_cast<std::size_t>(6) * nx * nz);
    for (int j = 0; j < nz; ++j)
    {
        for (int i = 0; i < nx; ++i)
        {
            const std::uint32_t v00 = gridVertex(nx, i, j), v10 = gridVertex(nx, i + 1, j);
            const std::uint32_t v01 = gridVertex(nx, i, j + 1), v11 = gridVertex(nx, i + 1, j + 1);
            input.indices.insert(input.indices.end(), {v00, v01, v10, v10, v01, v11});
        }
    }
    return input;
}

TriangleMesh buildOrFail(const MeshInput& input, const TriangleMeshBuildOptions& options = {})
{
    TriangleMeshBuildResult built = buildTriangleMesh(input.vertices, input.indices, options);
    INFO(built.message);
    REQUIRE(built.ok());
    return std::move(built.mesh);
}

// ---- brute force -----------------------------------------------------------------------------------------

bool boxesTouch(const Aabb& a, const Aabb& b)
{
    for (int axis = 0; axis < 3; ++axis)
    {
        if (a.min[axis] > b.max[axis] || b.min[axis] > a.max[axis])
        {
            return false;
        }
    }
    return true;
}

Aabb boxOf(const Triangle& t)
{
    Aabb box{t.a, t.a};
    for (const Vec3& p : {t.b, t.c})
    {
        for (int axis = 0; axis < 3; ++axis)
        {
            box.min[axis] = std::min(box.min[axis], p[axis]);
            box.max[axis] = std::max(box.max[axis], p[axis]);
        }
    }
    return box;
}

std::set<std::uint32_t> bruteOverlapping(const TriangleMesh& mesh, const Aabb& box)
{
    std::set<std::uint32_t> found;
    for (std::uint32_t t = 0; t < mesh.triangleCount(); ++t)
    {
        if (boxesTouch(boxOf(mesh.triangle(t)), box))
        {
            found.insert(t);
        }
    }
    return found;
}

/// Every triangle the ray hits, with its hit.
std::vector<MeshRayCastHit> bruteHits(const TriangleMesh& mesh, const RayCastInput& ray)
{
    std::vector<MeshRayCastHit> hits;
    for (std::uint32_t t = 0; t < mesh.triangleCount(); ++t)
    {
        MeshRayCastHit hit;
        hit.triangle = t;
        if (rayTriangle(mesh.triangle(t), ray, hit.hit, &hit.backFace))
        {
            hits.push_back(hit);
        }
    }
    return hits;
}

// ---- checks ----------------------------------------------------------------------------------------------

/// The tree's invariants: exact bounds, every triangle in exactly one leaf (leaves in triangle order),
/// leaf sizes, depth.
/// The four-wide tree rays walk: every triangle under exactly one leaf child, in order (depth first, children
/// in lane order), each child's box the exact box of what it holds, no deeper than the binary tree.
void checkWideTree(const TriangleMesh& mesh, std::uint32_t maxLeafTriangles)
{
    const std::span<const TriangleMeshWideNode> wide = mesh.wideNodes();
    REQUIRE(!wide.empty());
    std::uint32_t nextTriangle = 0;
    std::uint32_t visited = 0;
    int deepest = 0;
    bool exact = true;
    // Returns the exact box of what wide node `index` holds, checking its children's boxes on the way.
    const auto walk = [&](const auto& self, std::uint32_t index, int depth) -> Aabb
    {
        REQUIRE(index < wide.size());
        ++visited;
        deepest = std::max(deepest, depth);
        const TriangleMeshWideNode& node = wide[index];
        REQUIRE(node.childCount >= 1);
        REQUIRE(node.childCount <= 4);
        Aabb all{};
        for (std::uint32_t k = 0; k < node.childCount; ++k)
        {
            Aabb box{};
            if (node.count[k] != 0)
            {
                REQUIRE(node.child[k] == nextTriangle);
                REQUIRE(node.count[k] <= maxLeafTriangles);
                box = boxOf(mesh.triangle(node.child[k]));
                for (std::uint32_t t = node.child[k] + 1; t < node.child[k] + node.count[k]; ++t)
                {
                    box = unionOf(box, boxOf(mesh.triangle(t)));
                }
                nextTriangle += node.count[k];
            }
            else
            {
                REQUIRE(node.child[k] > index);
                box = self(self, node.child[k], depth + 1);
            }
            const Aabb stored{Vec3{node.minX[k], node.minY[k], node.minZ[k]},
                              Vec3{node.maxX[k], node.maxY[k], node.maxZ[k]}};
            exact = exact && stored.min == box.min && stored.max == box.max;
            all = k == 0 ? box : unionOf(all, box);
        }
        return all;
    };
    const Aabb all = walk(walk, 0, 0);
    CHECK(all.min == mesh.bounds().min);
    CHECK(all.max == mesh.bounds().max);
    CHECK(exact);
    CHECK(visited == wide.size());
    CHECK(nextTriangle == mesh.triangleCount());
    CHECK(deepest <= mesh.treeDepth());
}

void checkTree(const TriangleMesh& mesh, std::uint32_t maxLeafTriangles = 4)
{
    checkWideTree(mesh, maxLeafTriangles);
    CHECK(mesh.treeDepth() <= kMaxMeshTreeDepth);
}

/// Each mesh triangle is its source triangle, vertex for vertex; each kept source appears once.
void checkSources(const TriangleMesh& mesh, const MeshInput& input, std::uint32_t dropped)
{
    std::set<std::uint32_t> sources;
    bool same = true;
    for (std::uint32_t t = 0; t < mesh.triangleCount(); ++t)
    {
        const std::uint32_t k = mesh.sourceTriangle(t);
        REQUIRE(3 * std::size_t{k} + 2 < input.indices.size());
        sources.insert(k);
        const Triangle tri = mesh.triangle(t);
        same = same && tri.a == input.vertices[input.indices[3 * k]] &&
               tri.b == input.vertices[input.indices[3 * k + 1]] &&
               tri.c == input.vertices[input.indices[3 * k + 2]];
    }
    CHECK(same);
    CHECK(sources.size() == mesh.triangleCount());
    CHECK(mesh.triangleCount() + dropped == input.indices.size() / 3);
}

void checkBoxQuery(const TriangleMesh& mesh, const Aabb& box)
{
    std::set<std::uint32_t> found;
    bool unique = true;
    mesh.forEachTriangleOverlapping(box,
                                    [&](std::uint32_t t, const Triangle& tri)
                                    {
                                        unique = unique && found.insert(t).second;
                                        CHECK(tri.a == mesh.triangle(t).a);
                                        return true;
                                    });
    CHECK(unique);
    CHECK(found == bruteOverlapping(mesh, box));
}

void checkRay(const TriangleMesh& mesh, const RayCastInput& ray)
{
    const std::vector<MeshRayCastHit> hits = bruteHits(mesh, ray);
    const MeshRayCastHit* closest = nullptr;
    for (const MeshRayCastHit& h : hits)
    {
        if (closest == nullptr || h.hit.fraction < closest->hit.fraction ||
            (h.hit.fraction == closest->hit.fraction && h.triangle < closest->triangle))
        {
            closest = &h;
        }
    }

    MeshRayCastHit hit;
    const bool hitClosest = mesh.castRay(ray, MeshRayMode::Closest, hit);
    REQUIRE(hitClosest == (closest != nullptr));
    if (closest != nullptr)
    {
        // Ties go to the smaller triangle index, so the answer is exactly the brute-force one.
        CHECK(hit.triangle == closest->triangle);
        CHECK(hit.hit.fraction == closest->hit.fraction);
        CHECK(hit.hit.point == closest->hit.point);
        CHECK(hit.hit.normal == closest->hit.normal);
        CHECK(hit.backFace == closest->backFace);
    }

    MeshRayCastHit anyHit;
    const bool hitAny = mesh.castRay(ray, MeshRayMode::Any, anyHit);
    CHECK(hitAny == !hits.empty());
    if (hitAny)
    {
        const bool listed =
            std::any_of(hits.begin(), hits.end(),
                        [&](const MeshRayCastHit& h)
                        { return h.triangle == anyHit.triangle && h.hit.fraction == anyHit.hit.fraction; });
        CHECK(listed);
    }

    std::set<std::uint32_t> all;
    bool unique = true;
    mesh.castRay(ray, MeshRayMode::All,
                 [&](const MeshRayCastHit& h)
                 {
                     unique = unique && all.insert(h.triangle).second;
                     return -1.0f;
                 });
    std::set<std::uint32_t> expected;
    for (const MeshRayCastHit& h : hits)
    {
        expected.insert(h.triangle);
    }
    CHECK(unique);
    CHECK(all == expected);

    // Clipping at each hit leaves the closest fraction among those reported.
    float smallest = std::numeric_limits<float>::infinity();
    mesh.castRay(ray, MeshRayMode::All,
                 [&](const MeshRayCastHit& h)
                 {
                     smallest = std::min(smallest, h.hit.fraction);
                     return h.hit.fraction > 0.0f ? h.hit.fraction : -1.0f;
                 });
    if (closest != nullptr)
    {
        CHECK(smallest == closest->hit.fraction);
    }
}

/// A random box: a random centre in `space`, half sizes log-uniform up to `maxHalf`.
Aabb randomBox(std::mt19937& rng, const Aabb& space, float maxHalf)
{
    const Vec3 c = randomPoint(rng, space);
    Vec3 h;
    for (int axis = 0; axis < 3; ++axis)
    {
        h[axis] = maxHalf * std::pow(1000.0f, uniform(rng, -1.0f, 0.0f));
    }
    return {c - h, c + h};
}

Aabb grown(const Aabb& box, float meters)
{
    const Vec3 m{meters, meters, meters};
    return {box.min - m, box.max + m};
}

/// A ray through a random point of a random triangle (aimed) or between two random points.
RayCastInput randomRay(std::mt19937& rng, const TriangleMesh& mesh, const Aabb& space)
{
    RayCastInput ray;
    ray.origin = randomPoint(rng, space);
    Vec3 target = randomPoint(rng, space);
    if (std::uniform_int_distribution<int>(0, 1)(rng) == 0)
    {
        const Triangle t =
            mesh.triangle(std::uniform_int_distribution<std::uint32_t>(0, mesh.triangleCount() - 1)(rng));
        float u = uniform(rng, 0.0f, 1.0f);
        float v = uniform(rng, 0.0f, 1.0f);
        if (u + v > 1.0f)
        {
            u = 1.0f - u;
            v = 1.0f - v;
        }
        target = t.a + (t.b - t.a) * u + (t.c - t.a) * v;
    }
    ray.translation = (target - ray.origin) * uniform(rng, 0.5f, 2.0f);
    ray.maxFraction = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? uniform(rng, 0.0f, 1.0f) : 1.0f;
    return ray;
}

/// Active-edge flags per input triangle (input order), through sourceTriangle.
std::vector<std::uint8_t> edgesBySource(const TriangleMesh& mesh, std::size_t inputTriangles)
{
    std::vector<std::uint8_t> bySource(inputTriangles, 0xFF);
    for (std::uint32_t t = 0; t < mesh.triangleCount(); ++t)
    {
        bySource[mesh.sourceTriangle(t)] = mesh.activeEdges(t);
    }
    return bySource;
}

} // namespace

TEST_CASE("mesh box queries and rays match brute force on random triangle soups", "[mesh]")
{
    std::mt19937 rng(1234);
    for (int round = 0; round < 6; ++round)
    {
        const int count = std::uniform_int_distribution<int>(1, 3000)(rng);
        const MeshInput input = randomSoup(rng, count, 8.0f);
        TriangleMeshBuildResult built = buildTriangleMesh(input.vertices, input.indices);
        REQUIRE(built.ok());
        const TriangleMesh& mesh = built.mesh;
        INFO("round " << round << ", " << count << " triangles");
        checkTree(mesh);
        checkSources(mesh, input, built.dropped.total());
        const Aabb space = grown(mesh.bounds(), 2.0f);
        for (int q = 0; q < 150; ++q)
        {
            checkBoxQuery(mesh, randomBox(rng, space, 4.0f));
        }
        for (int q = 0; q < 150; ++q)
        {
            checkRay(mesh, randomRay(rng, mesh, space));
        }
    }
}

TEST_CASE("mesh box queries and rays match brute force on grid terrains", "[mesh]")
{
    std::mt19937 rng(99);
    for (int round = 0; round < 4; ++round)
    {
        const int nx = std::uniform_int_distribution<int>(1, 60)(rng);
        const int nz = std::uniform_int_distribution<int>(1, 60)(rng);
        const float cell = uniform(rng, 0.25f, 2.0f);
        const MeshInput input = gridTerrain(rng, nx, nz, cell, round == 0 ? 0.0f : uniform(rng, 0.1f, 5.0f));
        const TriangleMesh mesh = buildOrFail(input);
        INFO("round " << round << ", " << nx << " x " << nz);
        checkTree(mesh);
        checkSources(mesh, input, 0);
        const Aabb space = grown(mesh.bounds(), 1.0f);
        for (int q = 0; q < 150; ++q)
        {
            checkBoxQuery(mesh, randomBox(rng, space, 3.0f));
        }
        for (int q = 0; q < 150; ++q)
        {
            checkRay(mesh, randomRay(rng, mesh, space));
        }
        // Straight down onto grid vertices and grid lines: rays along shared edges and through shared
        // vertices, parallel to two axes, where hits tie between triangles and boxes touch the ray.
        for (int q = 0; q < 100; ++q)
        {
            const float x = static_cast<float>(std::uniform_int_distribution<int>(0, nx)(rng)) * cell;
            const float z = q % 2 == 0
                                ? static_cast<float>(std::uniform_int_distribution<int>(0, nz)(rng)) * cell
                                : uniform(rng, 0.0f, static_cast<float>(nz) * cell);
            checkRay(mesh, RayCastInput{Vec3{x, 10.0f, z}, Vec3{0.0f, -20.0f, 0.0f}, 1.0f});
            checkRay(mesh, RayCastInput{Vec3{z, 10.0f, x}, Vec3{0.0f, -20.0f, 0.0f}, 1.0f});
        }
        // Boxes that exactly touch grid lines.
        for (int q = 0; q < 50; ++q)
        {
            const float x = static_cast<float>(std::uniform_int_distribution<int>(0, nx)(rng)) * cell;
            const float z = static_cast<float>(std::uniform_int_distribution<int>(0, nz)(rng)) * cell;
            checkBoxQuery(mesh, Aabb{Vec3{x, -1.0f, z}, Vec3{x + cell, 10.0f, z}});
            checkBoxQuery(mesh, Aabb{Vec3{x, -1.0f, z}, Vec3{x, 10.0f, z}});
        }
    }
}

TEST_CASE("mesh rays aimed at edges and vertices match brute force (float prefilter, four-wide tree)",
          "[mesh]")
{
    // Rays whose exact answer sits on a triangle's boundary (through a point of an edge, or a vertex), from
    // near and far, short and 10 km long, where the float prefilter's error bound is what keeps the hit:
    // each must give exactly what rayTriangle on every triangle gives.
    std::mt19937 rng(4242);
    const MeshInput soup = randomSoup(rng, 3000, 20.0f);
    const TriangleMesh soupMesh = buildOrFail(soup);
    const MeshInput terrain = gridTerrain(rng, 40, 40, 0.7f, 3.0f);
    const TriangleMesh terrainMesh = buildOrFail(terrain);
    for (const TriangleMesh* mesh : {&soupMesh, &terrainMesh})
    {
        for (int q = 0; q < 3000; ++q)
        {
            const std::uint32_t t =
                std::uniform_int_distribution<std::uint32_t>(0, mesh->triangleCount() - 1)(rng);
            const Triangle tri = mesh->triangle(t);
            const Vec3 corners[3] = {tri.a, tri.b, tri.c};
            const int edge = std::uniform_int_distribution<int>(0, 2)(rng);
            // A vertex one time in four, else a point along an edge.
            const float along = q % 4 == 0 ? 0.0f : uniform(rng, 0.0f, 1.0f);
            const Vec3 target = corners[edge] + (corners[(edge + 1) % 3] - corners[edge]) * along;
            Vec3 direction{uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f)};
            if (lengthSquared(direction) < 1e-4f)
            {
                direction = Vec3{0.0f, -1.0f, 0.0f};
            }
            direction = normalize(direction);
            const float reach = q % 3 == 0 ? 1e4f : (q % 3 == 1 ? 0.05f : uniform(rng, 0.5f, 50.0f));
            const Vec3 origin = target - direction * reach;
            INFO("query " << q << ", triangle " << t << ", reach " << reach);
            checkRay(*mesh, RayCastInput{origin, direction * (reach * 2.0f), 1.0f});
            // Ending exactly at the target, and clipped just short of it.
            checkRay(*mesh, RayCastInput{origin, direction * reach, 1.0f});
            checkRay(*mesh, RayCastInput{origin, direction * (reach * 2.0f), 0.5f});
        }
    }
}

TEST_CASE("mesh queries stop early, reject bad input and allocate nothing", "[mesh]")
{
    std::mt19937 rng(5);
    const MeshInput input = gridTerrain(rng, 30, 30, 1.0f, 1.0f);
    const TriangleMesh mesh = buildOrFail(input);

    int calls = 0;
    mesh.forEachTriangleOverlapping(mesh.bounds(),
                                    [&](std::uint32_t, const Triangle&)
                                    {
                                        ++calls;
                                        return calls < 3;
                                    });
    CHECK(calls == 3);
    calls = 0;
    mesh.forEachTriangleOverlapping(mesh.bounds(), [&](std::uint32_t, const Triangle&) { ++calls; });
    CHECK(calls == static_cast<int>(mesh.triangleCount()));

    const float nan = std::numeric_limits<float>::quiet_NaN();
    calls = 0;
    mesh.forEachTriangleOverlapping(Aabb{Vec3{nan, 0, 0}, Vec3{1, 1, 1}},
                                    [&](std::uint32_t, const Triangle&) { ++calls; });
    mesh.forEachTriangleOverlapping(Aabb{Vec3{1, 1, 1}, Vec3{0, 0, 0}},
                                    [&](std::uint32_t, const Triangle&) { ++calls; });
    CHECK(calls == 0);

    // A ray through the whole terrain at a slant: many hits; stop after the first.
    const RayCastInput slant{Vec3{-1.0f, 0.5f, 15.2f}, Vec3{32.0f, 0.01f, 0.3f}, 1.0f};
    const std::size_t expected = bruteHits(mesh, slant).size();
    REQUIRE(expected > 3);
    calls = 0;
    CHECK(mesh.castRay(slant, MeshRayMode::All,
                       [&](const MeshRayCastHit&)
                       {
                           ++calls;
                           return 0.0f;
                       }));
    CHECK(calls == 1);

    MeshRayCastHit hit;
    CHECK_FALSE(mesh.castRay(RayCastInput{Vec3{nan, 1, 1}, Vec3{0, -1, 0}, 1.0f}, MeshRayMode::Closest, hit));
    CHECK_FALSE(mesh.castRay(RayCastInput{Vec3{5, 5, 5}, Vec3{0, -10, 0}, nan}, MeshRayMode::Closest, hit));
    CHECK_FALSE(mesh.castRay(RayCastInput{Vec3{5, 5, 5}, Vec3{0, -10, 0}, -1.0f}, MeshRayMode::Any, hit));
    // A ray that ends just short of the surface misses; one a little longer hits.
    const RayCastInput down{Vec3{5.3f, 5.0f, 5.6f}, Vec3{0.0f, -10.0f, 0.0f}, 1.0f};
    REQUIRE(mesh.castRay(down, MeshRayMode::Closest, hit));
    const float fraction = hit.hit.fraction;
    CHECK_FALSE(
        mesh.castRay(RayCastInput{down.origin, down.translation, fraction * 0.999f}, MeshRayMode::Any, hit));
    CHECK(
        mesh.castRay(RayCastInput{down.origin, down.translation, fraction * 1.001f}, MeshRayMode::Any, hit));

    // An empty mesh answers nothing.
    const TriangleMesh empty;
    CHECK_FALSE(empty.castRay(down, MeshRayMode::Closest, hit));
    empty.forEachTriangleOverlapping(Aabb{Vec3{-1e9f, -1e9f, -1e9f}, Vec3{1e9f, 1e9f, 1e9f}},
                                     [&](std::uint32_t, const Triangle&) { FAIL("empty mesh"); });
    CHECK(empty.triangleCount() == 0);

    std::mt19937 queryRng(6);
    std::vector<RayCastInput> rays;
    std::vector<Aabb> boxes;
    for (int q = 0; q < 200; ++q)
    {
        rays.push_back(randomRay(queryRng, mesh, grown(mesh.bounds(), 1.0f)));
        boxes.push_back(randomBox(queryRng, grown(mesh.bounds(), 1.0f), 3.0f));
    }
    std::size_t total = 0;
    polytope::test::AllocationCounter counter;
    for (int q = 0; q < 200; ++q)
    {
        mesh.forEachTriangleOverlapping(boxes[q], [&](std::uint32_t, const Triangle&) { ++total; });
        total += mesh.castRay(rays[q], MeshRayMode::Closest, hit) ? 1 : 0;
        total += mesh.castRay(rays[q], MeshRayMode::Any, hit) ? 1 : 0;
        mesh.castRay(rays[q], MeshRayMode::All,
                     [&](const MeshRayCastHit&)
                     {
                         ++total;
                         return -1.0f;
                     });
    }
    CHECK(counter.stop() == 0);
    CHECK(total > 0);
}

TEST_CASE("mesh validation names the offending element", "[mesh]")
{
    const std::vector<Vec3> square{{0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {0, 0, 1}};
    const std::vector<std::uint32_t> twoTriangles{0, 2, 1, 0, 3, 2};

    SECTION("non-finite vertex")
    {
        for (const float bad :
             {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
        {
            std::vector<Vec3> vertices = square;
            vertices[2].y = bad;
            const TriangleMeshBuildResult r = buildTriangleMesh(vertices, twoTriangles);
            CHECK(r.error == TriangleMeshError::NonFiniteVertex);
            CHECK(r.offendingIndex == 2);
            CHECK_FALSE(r.message.empty());
            CHECK(r.mesh.triangleCount() == 0);
        }
    }
    SECTION("index out of range")
    {
        const std::vector<std::uint32_t> indices{0, 2, 1, 0, 4, 2};
        const TriangleMeshBuildResult r = buildTriangleMesh(square, indices);
        CHECK(r.error == TriangleMeshError::IndexOutOfRange);
        CHECK(r.offendingIndex == 4);
        CHECK(std::string(toString(r.error)) == "IndexOutOfRange");
    }
    SECTION("index count not a multiple of three")
    {
        const std::vector<std::uint32_t> indices{0, 2, 1, 0, 3};
        const TriangleMeshBuildResult r = buildTriangleMesh(square, indices);
        CHECK(r.error == TriangleMeshError::IndexCountNotMultipleOfThree);
        CHECK(r.offendingIndex == 5);
    }
    SECTION("nothing to build")
    {
        CHECK(buildTriangleMesh(square, {}).error == TriangleMeshError::NoTriangles);
        const std::vector<std::uint32_t> allBad{0, 0, 1, 2, 2, 2};
        const TriangleMeshBuildResult r = buildTriangleMesh(square, allBad);
        CHECK(r.error == TriangleMeshError::NoTriangles);
        CHECK(r.dropped.repeatedIndex == 2);
    }
    SECTION("options out of range")
    {
        TriangleMeshBuildOptions options;
        options.maxLeafTriangles = 0;
        CHECK(buildTriangleMesh(square, twoTriangles, options).error == TriangleMeshError::InvalidOptions);
        options = {};
        options.maxLeafTriangles = kMaxMeshLeafTriangles + 1;
        CHECK(buildTriangleMesh(square, twoTriangles, options).error == TriangleMeshError::InvalidOptions);
        options = {};
        options.activeEdgeMinAngleRadians = 2.0f;
        CHECK(buildTriangleMesh(square, twoTriangles, options).error == TriangleMeshError::InvalidOptions);
        options = {};
        options.minTriangleAreaSquareMeters = std::numeric_limits<float>::quiet_NaN();
        CHECK(buildTriangleMesh(square, twoTriangles, options).error == TriangleMeshError::InvalidOptions);
    }
    SECTION("degenerate triangles are dropped and counted, or refused")
    {
        std::vector<Vec3> vertices = square;
        vertices.push_back({0.5f, 0.0f, 0.0f});   // 4: on edge 0-1 (collinear with 0 and 1)
        vertices.push_back({0.0f, 0.0f, 0.0f});   // 5: a copy of vertex 0
        vertices.push_back({1e-6f, 0.0f, 0.0f});  // 6: 1 um from vertex 0
        vertices.push_back({0.0f, 0.0f, 1e-6f});  // 7: 1 um from vertex 0 the other way
        vertices.push_back({1.0f, 1e-7f, 1e-7f}); // 8: 1e-7 off the line 0-1
        const std::vector<std::uint32_t> indices{
            0, 2, 1, // 0: fine
            0, 1, 1, // 1: repeated index
            0, 4, 1, // 2: collinear, exactly
            0, 5, 2, // 3: coincident positions (counted as collinear)
            0, 7, 6, // 4: area 5e-13 m^2
            0, 3, 2, // 5: fine
            0, 1, 8, // 6: nearly collinear (height 1.4e-7 of the edge)
            3, 3, 3, // 7: repeated index
        };
        const TriangleMeshBuildResult dropped = buildTriangleMesh(vertices, indices);
        REQUIRE(dropped.ok());
        CHECK(dropped.dropped.repeatedIndex == 2);
        CHECK(dropped.dropped.collinear == 3);
        CHECK(dropped.dropped.tooSmallArea == 1);
        CHECK(dropped.dropped.total() == 6);
        REQUIRE(dropped.mesh.triangleCount() == 2);
        std::set<std::uint32_t> sources{dropped.mesh.sourceTriangle(0), dropped.mesh.sourceTriangle(1)};
        CHECK(sources == std::set<std::uint32_t>{0, 5});
        CHECK(dropped.mesh.vertexCount() == 4); // unused and duplicate vertices are not kept

        TriangleMeshBuildOptions refuse;
        refuse.degenerateTriangles = DegenerateTrianglePolicy::Refuse;
        const TriangleMeshBuildResult refused = buildTriangleMesh(vertices, indices, refuse);
        CHECK(refused.error == TriangleMeshError::DegenerateTriangle);
        CHECK(refused.offendingIndex == 1);
        CHECK(refused.dropped.repeatedIndex == 1);
        CHECK(refused.mesh.triangleCount() == 0);

        // With a zero area threshold the 1 um triangle stays; the collinear ones still go.
        TriangleMeshBuildOptions noArea;
        noArea.minTriangleAreaSquareMeters = 0.0f;
        const TriangleMeshBuildResult kept = buildTriangleMesh(vertices, indices, noArea);
        REQUIRE(kept.ok());
        CHECK(kept.dropped.tooSmallArea == 0);
        CHECK(kept.dropped.collinear == 3);
        CHECK(kept.mesh.triangleCount() == 3);
    }
}

TEST_CASE("mesh active edges: flat grid, cube, concave corner, ridges and odd topology", "[mesh]")
{
    SECTION("a flat grid is inactive inside and active on its border")
    {
        std::mt19937 rng(1);
        const int nx = 7, nz = 5;
        const MeshInput input = gridTerrain(rng, nx, nz, 0.5f, 0.0f);
        const TriangleMesh mesh = buildOrFail(input);
        const std::vector<std::uint8_t> edges = edgesBySource(mesh, input.indices.size() / 3);
        int activeCount = 0;
        for (std::size_t k = 0; k < edges.size(); ++k)
        {
            for (int e = 0; e < 3; ++e)
            {
                const std::uint32_t p = input.indices[3 * k + e];
                const std::uint32_t q = input.indices[3 * k + (e + 1) % 3];
                const int ip = static_cast<int>(p) % (nx + 1), jp = static_cast<int>(p) / (nx + 1);
                const int iq = static_cast<int>(q) % (nx + 1), jq = static_cast<int>(q) / (nx + 1);
                const bool border =
                    (ip == iq && (ip == 0 || ip == nx)) || (jp == jq && (jp == 0 || jp == nz));
                const bool active = (edges[k] >> e & 1) != 0;
                CHECK(active == border);
                activeCount += active ? 1 : 0;
            }
        }
        CHECK(activeCount == 2 * (nx + nz));
    }
    SECTION("a cube's edges are active and its face diagonals inactive, shared or split vertices")
    {
        // Vertex v is (v&1 ? 1 : 0, v&2 ? 1 : 0, v&4 ? 1 : 0); faces counter-clockwise from outside.
        std::vector<Vec3> corners;
        for (int v = 0; v < 8; ++v)
        {
            corners.push_back({(v & 1) ? 1.0f : 0.0f, (v & 2) ? 1.0f : 0.0f, (v & 4) ? 1.0f : 0.0f});
        }
        const std::vector<std::uint32_t> quads{0, 2, 3, 1, 4, 5, 7, 6, 0, 1, 5, 4,
                                               2, 6, 7, 3, 0, 4, 6, 2, 1, 3, 7, 5};
        MeshInput shared{corners, {}};
        for (std::size_t f = 0; f < 6; ++f)
        {
            const std::uint32_t* q = &quads[4 * f];
            shared.indices.insert(shared.indices.end(), {q[0], q[1], q[2], q[0], q[2], q[3]});
        }
        MeshInput split;
        for (const std::uint32_t v : shared.indices)
        {
            split.vertices.push_back(corners[v]);
            split.indices.push_back(static_cast<std::uint32_t>(split.vertices.size() - 1));
        }
        for (const MeshInput* input : {&shared, &split})
        {
            const TriangleMesh mesh = buildOrFail(*input);
            CHECK(mesh.vertexCount() == 8);
            const std::vector<std::uint8_t> edges = edgesBySource(mesh, 12);
            for (std::size_t k = 0; k < 12; ++k)
            {
                // The winding is right: front normals point out of the cube.
                const Vec3 a = input->vertices[input->indices[3 * k]];
                const Vec3 n = cross(input->vertices[input->indices[3 * k + 1]] - a,
                                     input->vertices[input->indices[3 * k + 2]] - a);
                REQUIRE(dot(n, a + n * 0.1f - Vec3{0.5f, 0.5f, 0.5f}) > dot(n, a - Vec3{0.5f, 0.5f, 0.5f}));
                for (int e = 0; e < 3; ++e)
                {
                    const Vec3 d = input->vertices[input->indices[3 * k + (e + 1) % 3]] -
                                   input->vertices[input->indices[3 * k + e]];
                    const int axesChanged = (d.x != 0.0f) + (d.y != 0.0f) + (d.z != 0.0f);
                    const bool active = (edges[k] >> e & 1) != 0;
                    INFO("triangle " << k << " edge " << e);
                    CHECK(active == (axesChanged == 1));
                }
            }
        }
    }
    SECTION("a concave corner is inactive, the same corner convex is active")
    {
        // Floor y = 0 (up), x, z in [0, 1], and a wall on x = 0 facing +x, going up: a concave corner
        // along the z axis. Then the wall going down, facing -x: a convex cliff edge.
        const std::vector<Vec3> vertices{{0, 0, 0}, {0, 0, 1}, {1, 0, 0},  {1, 0, 1},
                                         {0, 1, 0}, {0, 1, 1}, {0, -1, 0}, {0, -1, 1}};
        const std::vector<std::uint32_t> floor{0, 1, 2, 2, 1, 3};
        std::vector<std::uint32_t> concave = floor;
        concave.insert(concave.end(), {0, 4, 1, 1, 4, 5});
        std::vector<std::uint32_t> convex = floor;
        convex.insert(convex.end(), {1, 0, 6, 1, 6, 7});
        const auto sharedEdgeFlags = [&](const std::vector<std::uint32_t>& indices)
        {
            const TriangleMeshBuildResult r = buildTriangleMesh(vertices, indices);
            REQUIRE(r.ok());
            const std::vector<std::uint8_t> edges = edgesBySource(r.mesh, 4);
            // Triangle 0's edge a -> b is 0 -> 1, the corner.
            return edges[0] & kMeshEdgeAB;
        };
        {
            // Check the windings used: normals up, +x for the concave wall, -x for the cliff.
            const auto normalOf = [&](std::uint32_t a, std::uint32_t b, std::uint32_t c)
            { return normalize(cross(vertices[b] - vertices[a], vertices[c] - vertices[a])); };
            REQUIRE(normalOf(0, 1, 2).y > 0.99f);
            REQUIRE(normalOf(0, 4, 1).x > 0.99f);
            REQUIRE(normalOf(1, 0, 6).x < -0.99f);
            REQUIRE(normalOf(1, 6, 7).x < -0.99f);
        }
        CHECK(sharedEdgeFlags(concave) == 0);
        CHECK(sharedEdgeFlags(convex) == kMeshEdgeAB);
    }
    SECTION("ridges: convex beyond the threshold only; wrong winding and non-manifold edges are active")
    {
        // Two triangles sharing the edge (0,0,0) - (0,0,1); the second one bent by `angle` about it
        // (positive: down, convex).
        const auto ridge = [](float angle, bool flipSecond, bool addThird)
        {
            MeshInput input;
            input.vertices = {
                {0, 0, 0}, {0, 0, 1}, {-1, 0, 0.5f}, {std::cos(angle), -std::sin(angle), 0.5f}, {0, 1, 0.5f}};
            input.indices = {0, 2, 1}; // normal +y
            if (flipSecond)
            {
                input.indices.insert(input.indices.end(), {1, 0, 3}); // runs 1 -> 0, as triangle 0 does
            }
            else
            {
                input.indices.insert(input.indices.end(), {1, 3, 0});
            }
            if (addThird)
            {
                input.indices.insert(input.indices.end(), {1, 0, 4});
            }
            const TriangleMesh mesh = buildOrFail(input);
            const std::vector<std::uint8_t> edges = edgesBySource(mesh, input.indices.size() / 3);
            return (edges[0] & kMeshEdgeCA) != 0; // triangle 0's edge c -> a is 1 -> 0
        };
        const float threshold = TriangleMeshBuildOptions{}.activeEdgeMinAngleRadians;
        CHECK_FALSE(ridge(0.0f, false, false));
        CHECK_FALSE(ridge(0.5f * threshold, false, false));
        CHECK(ridge(2.0f * threshold, false, false));
        CHECK(ridge(0.5f, false, false));
        CHECK(ridge(3.1f, false, false));                      // sharply convex
        CHECK(ridge(kPi - 0.5f * threshold, false, false));    // folded back: a knife edge
        CHECK(ridge(-(kPi - 0.5f * threshold), false, false)); // the same, folded to the concave side
        CHECK_FALSE(ridge(-2.0f * threshold, false, false));
        CHECK_FALSE(ridge(-1.5f, false, false));
        CHECK(ridge(0.0f, true, false));  // oppositely wound neighbours
        CHECK(ridge(-0.5f, false, true)); // three triangles on one edge
    }
}

TEST_CASE("mesh tree depth stays within maxTreeDepth where the SAH would go deeper", "[mesh]")
{
    // Triangles growing geometrically, each one 4.5% bigger and farther out than the last: the binned SAH
    // splits off the biggest few at each level, going about twice as deep as a balanced tree.
    MeshInput input;
    float s = 1.0f;
    for (int k = 0; k < 600; ++k, s *= 1.045f)
    {
        const std::uint32_t base = static_cast<std::uint32_t>(input.vertices.size());
        input.vertices.insert(input.vertices.end(), {{s, 0, 0}, {s, s, 0.1f * s}, {s + s, 0.3f * s, s}});
        input.indices.insert(input.indices.end(), {base, base + 1, base + 2});
    }
    TriangleMeshBuildOptions options;
    options.maxLeafTriangles = 1;
    const TriangleMesh free = buildOrFail(input, options);
    checkTree(free, 1);
    const int naturalDepth = free.treeDepth();
    REQUIRE(naturalDepth > 12);
    for (const int limit : {12, 10, 1})
    {
        options.maxTreeDepth = limit;
        const TriangleMesh mesh = buildOrFail(input, options);
        INFO("limit " << limit << ", unlimited depth " << naturalDepth);
        checkTree(mesh, 1);
        CHECK(mesh.treeDepth() <= std::max(limit, 10)); // raised to ceil(log2(600)) = 10
        std::mt19937 rng(3);
        for (int q = 0; q < 100; ++q)
        {
            checkRay(mesh, randomRay(rng, mesh, mesh.bounds()));
            checkBoxQuery(mesh, randomBox(rng, mesh.bounds(), 0.1f * mesh.bounds().extents().x));
        }
    }
}

TEST_CASE("mesh build is deterministic, byte for byte", "[mesh]")
{
    std::mt19937 rng(77);
    for (const MeshInput& input : {randomSoup(rng, 5000, 10.0f), gridTerrain(rng, 40, 30, 1.0f, 3.0f)})
    {
        const TriangleMesh first = buildOrFail(input);
        const TriangleMesh second = buildOrFail(input);
        REQUIRE(first.wideNodes().size() == second.wideNodes().size());
        CHECK(std::memcmp(first.wideNodes().data(), second.wideNodes().data(),
                          first.wideNodes().size_bytes()) == 0);
        REQUIRE(first.vertexCount() == second.vertexCount());
        CHECK(std::memcmp(first.vertices().data(), second.vertices().data(), first.vertices().size_bytes()) ==
              0);
        REQUIRE(first.triangleCount() == second.triangleCount());
        bool same = true;
        for (std::uint32_t t = 0; t < first.triangleCount(); ++t)
        {
            same = same && first.triangleVertexIndices(t) == second.triangleVertexIndices(t) &&
                   first.sourceTriangle(t) == second.sourceTriangle(t) &&
                   first.activeEdges(t) == second.activeEdges(t);
        }
        CHECK(same);
    }
}

TEST_CASE("mesh of a million triangles: build time, memory per triangle, queries", "[mesh]")
{
    // POLYTOPE_MESH_SMALL (sanitizer builds) shrinks the terrain.
#ifdef POLYTOPE_MESH_SMALL
    const int nx = 200, nz = 100;
    const double statedBytes = 40.5; // a smaller terrain has a few more vertices per triangle
#else
    const int nx = 1000, nz = 500;
    const double statedBytes = 37.4; // as triangle_mesh.h states
#endif
    std::mt19937 rng(2024);
    const MeshInput input = gridTerrain(rng, nx, nz, 1.0f, 4.0f);
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t startCpu = std::clock();
    const TriangleMesh mesh = buildOrFail(input);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpuSeconds = static_cast<double>(std::clock() - startCpu) / CLOCKS_PER_SEC;
    REQUIRE(mesh.triangleCount() == 2u * nx * nz);
    const double bytesPerTriangle = static_cast<double>(mesh.memoryBytes()) / mesh.triangleCount();
    WARN("terrain of " << mesh.triangleCount() << " triangles: built in " << seconds << " s (" << cpuSeconds
                       << " s of CPU), " << bytesPerTriangle << " bytes per triangle, "
                       << mesh.wideNodes().size() << " nodes, depth " << mesh.treeDepth());
    CHECK(bytesPerTriangle < statedBytes + 0.5);
    CHECK(mesh.treeDepth() <= kMaxMeshTreeDepth);
    checkSources(mesh, input, 0);
    for (int q = 0; q < 8; ++q)
    {
        checkRay(mesh, randomRay(rng, mesh, grown(mesh.bounds(), 5.0f)));
        checkBoxQuery(mesh, randomBox(rng, mesh.bounds(), 5.0f));
    }

    // A random soup: three vertices of its own per triangle.
    const MeshInput soup = randomSoup(rng, 100000, 50.0f);
    const TriangleMesh soupMesh = buildOrFail(soup);
    const double soupBytes = static_cast<double>(soupMesh.memoryBytes()) / soupMesh.triangleCount();
    WARN("soup of " << soupMesh.triangleCount() << " triangles: " << soupBytes << " bytes per triangle");
    CHECK(soupBytes < 85.5); // triangle_mesh.h states 84.7 for soups
}

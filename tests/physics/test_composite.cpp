// Compounds, triangle meshes and heightfields as World shapes (collide_composite.h): no ghost bumps on a
// tessellated floor, compound mass properties against closed forms, compounds resting and colliding,
// catalogue validation, queries, snapshots and determinism.
#include "polytope/physics/collide_composite.h"
#include "polytope/physics/heightfield.h"
#include "polytope/physics/mass.h"
#include "polytope/physics/triangle_mesh.h"
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

using namespace polytope::physics;

namespace
{
constexpr float kDt = 1.0f / 60.0f;

/// A flat floor at y = 0 of cellsX x cellsZ one-metre cells, two triangles per cell (diagonal from (i, j+1)
/// to (i+1, j)), counter-clockwise from above.
std::shared_ptr<const TriangleMesh> flatGridMesh(std::uint32_t cellsX, std::uint32_t cellsZ)
{
    std::vector<Vec3> vertices;
    std::vector<std::uint32_t> indices;
    for (std::uint32_t i = 0; i <= cellsX; ++i)
    {
        for (std::uint32_t j = 0; j <= cellsZ; ++j)
        {
            vertices.push_back({float(i), 0.0f, float(j)});
        }
    }
    const auto at = [&](std::uint32_t i, std::uint32_t j) { return i * (cellsZ + 1) + j; };
    for (std::uint32_t i = 0; i < cellsX; ++i)
    {
        for (std::uint32_t j = 0; j < cellsZ; ++j)
        {
            indices.insert(indices.end(), {at(i, j), at(i, j + 1), at(i + 1, j)});
            indices.insert(indices.end(), {at(i + 1, j), at(i, j + 1), at(i + 1, j + 1)});
        }
    }
    TriangleMeshBuildResult built = buildTriangleMesh(vertices, indices, {});
    REQUIRE(built.ok());
    return std::make_shared<const TriangleMesh>(std::move(built.mesh));
}

/// Which triangle of flatGridMesh lies under (x, z).
std::int64_t gridTriangleAt(float x, float z)
{
    const float cx = std::floor(x);
    const float cz = std::floor(z);
    const bool second = (x - cx) + (z - cz) > 1.0f;
    return (static_cast<std::int64_t>(cx) * 100000 + static_cast<std::int64_t>(cz)) * 2 + (second ? 1 : 0);
}

std::shared_ptr<const HeightField> flatHeightField(std::uint32_t samplesX, std::uint32_t samplesZ)
{
    std::vector<float> heights(std::size_t(samplesX) * samplesZ, 0.0f);
    HeightFieldDesc desc;
    desc.sampleCountX = samplesX;
    desc.sampleCountZ = samplesZ;
    desc.heights = heights;
    HeightFieldBuildResult built = buildHeightField(desc);
    REQUIRE(built.ok());
    return std::make_shared<const HeightField>(std::move(built.heightField));
}

struct SlideFigures
{
    float maxVerticalSpeed = 0.0f; ///< m/s, while sliding or rolling
    float maxHeadingChange = 0.0f; ///< degrees, of the horizontal velocity from its start
    int trianglesCrossed = 0;      ///< changes of the triangle under the body's centre
    float distance = 0.0f;         ///< metres travelled
};

/// Drops nothing: places `shape` resting on the ground at `restHeight`, lets it settle for a second, then
/// sends it along `direction` at `speed` (rolling without slipping when `roll` is set) and measures.
SlideFigures slideAcross(World& world, const Shape& shape, float restHeight, const Vec3& start,
                         const Vec3& direction, float speed, bool roll, float seconds, bool meshGrid,
                         const HeightField* field)
{
    BodyDesc desc;
    desc.shape = shape;
    desc.transform.p = {start.x, restHeight, start.z};
    desc.friction = roll ? 0.6f : 0.0f;
    desc.allowSleep = false;
    const BodyId id = world.createBody(desc).id;
    REQUIRE_FALSE(id.isNull());
    for (int i = 0; i < 60; ++i)
    {
        world.step(kDt);
    }
    const Vec3 v = direction * speed;
    const Vec3 w = roll ? cross(Vec3{0.0f, 1.0f, 0.0f}, direction) * (speed / shape.sphere.radius) : Vec3{};
    REQUIRE(world.setVelocity(id, v, w) == WorldStatus::Ok);
    SlideFigures out;
    BodyState state;
    REQUIRE(world.getBody(id, state));
    const Vec3 from = state.transform.p;
    const auto triangleUnder = [&](const Vec3& p) -> std::int64_t
    { return meshGrid ? gridTriangleAt(p.x, p.z) : std::int64_t(field->height(p.x, p.z).triangleIndex); };
    std::int64_t last = triangleUnder(from);
    const float heading0 = std::atan2(v.z, v.x);
    const int steps = static_cast<int>(seconds / kDt);
    for (int i = 0; i < steps; ++i)
    {
        world.step(kDt);
        REQUIRE(world.getBody(id, state));
        out.maxVerticalSpeed = std::max(out.maxVerticalSpeed, std::fabs(state.linearVelocity.y));
        const float heading = std::atan2(state.linearVelocity.z, state.linearVelocity.x);
        out.maxHeadingChange = std::max(out.maxHeadingChange, std::fabs(heading - heading0) * 180.0f / kPi);
        const std::int64_t now = triangleUnder(state.transform.p);
        if (now != last)
        {
            ++out.trianglesCrossed;
            last = now;
        }
    }
    out.distance = length(state.transform.p - from);
    return out;
}

} // namespace

TEST_CASE("no ghost bumps: boxes slide and spheres roll across 100 triangle edges of a flat mesh and "
          "heightfield",
          "[composite][mesh]")
{
    const Vec3 direction = normalize(Vec3{std::cos(0.35f), 0.0f, std::sin(0.35f)}); // 20 degrees off the grid
    for (const bool useMesh : {true, false})
    {
        for (const bool roll : {false, true})
        {
            WorldConfig config;
            World world(config);
            std::shared_ptr<const HeightField> field;
            BodyDesc ground;
            ground.type = BodyType::Static;
            if (useMesh)
            {
                const AddShapeResult added = world.addMesh(flatGridMesh(90, 40));
                REQUIRE(added.status == WorldStatus::Ok);
                ground.shape = Shape::makeCatalogued(ShapeType::Mesh, added.index);
            }
            else
            {
                field = flatHeightField(91, 41);
                const AddShapeResult added = world.addHeightField(field);
                REQUIRE(added.status == WorldStatus::Ok);
                ground.shape = Shape::makeCatalogued(ShapeType::HeightField, added.index);
            }
            REQUIRE_FALSE(world.createBody(ground).id.isNull());
            const Shape shape = roll ? Shape::makeSphere(0.5f) : Shape::makeBox({0.5f, 0.5f, 0.5f});
            const SlideFigures f = slideAcross(world, shape, 0.5f, {3.2f, 0.0f, 3.3f}, direction, 8.0f, roll,
                                               9.0f, useMesh, field.get());
            INFO((useMesh ? "mesh " : "heightfield ")
                 << (roll ? "rolling sphere" : "sliding box") << ": |vy| max " << f.maxVerticalSpeed
                 << " m/s, heading change " << f.maxHeadingChange << " deg, triangles crossed "
                 << f.trianglesCrossed << ", " << f.distance << " m");
            CHECK(f.trianglesCrossed >= 100);
            CHECK(f.distance > 60.0f);
            CHECK(f.maxVerticalSpeed < 1e-3f);
            CHECK(f.maxHeadingChange <= 0.1f);
        }
    }
}

TEST_CASE("compound mass properties: two boxes side by side weigh and turn as one box", "[composite]")
{
    CompoundShape compound;
    compound.children.push_back({Shape::makeBox({0.5f, 0.25f, 0.75f}), {{-0.5f, 0.0f, 0.0f}, {}}});
    compound.children.push_back({Shape::makeBox({0.5f, 0.25f, 0.75f}), {{0.5f, 0.0f, 0.0f}, {}}});
    const MassProperties split = computeMassProperties(compound, 700.0f);
    const MassProperties whole = computeMassProperties(BoxShape{{1.0f, 0.25f, 0.75f}}, 700.0f);
    CHECK(split.mass == Approx(whole.mass).epsilon(1e-6));
    CHECK(length(split.centerOfMass) < 1e-6f);
    CHECK(split.inertia.c0.x == Approx(whole.inertia.c0.x).epsilon(1e-5));
    CHECK(split.inertia.c1.y == Approx(whole.inertia.c1.y).epsilon(1e-5));
    CHECK(split.inertia.c2.z == Approx(whole.inertia.c2.z).epsilon(1e-5));
    CHECK(std::fabs(split.inertia.c0.y) < 1e-4f);

    // A child rotated a quarter turn about z is the same box with x and y swapped.
    CompoundShape turned;
    const float s = std::sqrt(0.5f);
    turned.children.push_back(
        {Shape::makeBox({0.25f, 1.0f, 0.75f}), {{0.0f, 2.0f, 0.0f}, {0.0f, 0.0f, s, s}}});
    const MassProperties t = computeMassProperties(turned, 700.0f);
    CHECK(t.mass == Approx(whole.mass).epsilon(1e-6));
    CHECK(t.centerOfMass.y == Approx(2.0f));
    CHECK(t.inertia.c0.x == Approx(whole.inertia.c0.x).epsilon(1e-5));
    CHECK(t.inertia.c1.y == Approx(whole.inertia.c1.y).epsilon(1e-5));
    CHECK(t.inertia.c2.z == Approx(whole.inertia.c2.z).epsilon(1e-5));

    // Off-centre: the parallel-axis term. Two 1 kg/m^3 unit spheres' worth of mass at +-d along x.
    CompoundShape dumbbell;
    dumbbell.children.push_back({Shape::makeSphere(0.3f), {{-1.0f, 0.0f, 0.0f}, {}}});
    dumbbell.children.push_back({Shape::makeSphere(0.3f), {{1.0f, 0.0f, 0.0f}, {}}});
    const MassProperties ball = computeMassProperties(SphereShape{0.3f}, 1000.0f);
    const MassProperties d = computeMassProperties(dumbbell, 1000.0f);
    CHECK(d.inertia.c0.x == Approx(2.0f * ball.inertia.c0.x).epsilon(1e-5));
    CHECK(d.inertia.c1.y == Approx(2.0f * (ball.inertia.c1.y + ball.mass * 1.0f)).epsilon(1e-5));
}

TEST_CASE("catalogues refuse what does not fit, bodies refuse dynamic meshes", "[composite]")
{
    WorldConfig config;
    config.maxCompounds = 2;
    World world(config);
    CompoundShape empty;
    CHECK(world.addCompound(empty).status == WorldStatus::InvalidShape);
    CompoundShape withPlane;
    withPlane.children.push_back({Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f), {}});
    CHECK(world.addCompound(withPlane).status == WorldStatus::InvalidShape);
    CompoundShape badHull;
    badHull.children.push_back({Shape::makeHull(3), {}});
    CHECK(world.addCompound(badHull).status == WorldStatus::InvalidShape);
    CompoundShape badRotation;
    badRotation.children.push_back({Shape::makeSphere(1.0f), {{}, {0.0f, 0.0f, 0.0f, 2.0f}}});
    CHECK(world.addCompound(badRotation).status == WorldStatus::InvalidShape);
    CompoundShape good;
    good.children.push_back({Shape::makeSphere(1.0f), {}});
    CHECK(world.addCompound(good).status == WorldStatus::Ok);
    CHECK(world.addCompound(good).status == WorldStatus::Ok);
    CHECK(world.addCompound(good).status == WorldStatus::CatalogueFull);
    CHECK(world.addMesh(nullptr).status == WorldStatus::InvalidShape);
    CHECK(world.addMesh(std::make_shared<const TriangleMesh>()).status == WorldStatus::InvalidShape);
    CHECK(world.addHeightField(std::make_shared<const HeightField>()).status == WorldStatus::InvalidShape);
    const AddShapeResult mesh = world.addMesh(flatGridMesh(2, 2));
    REQUIRE(mesh.status == WorldStatus::Ok);

    BodyDesc desc;
    desc.shape = Shape::makeCatalogued(ShapeType::Mesh, mesh.index);
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc); // dynamic
    desc.type = BodyType::Kinematic;
    CHECK(world.createBody(desc).status == WorldStatus::Ok);
    desc.type = BodyType::Static;
    desc.shape = Shape::makeCatalogued(ShapeType::Mesh, mesh.index + 1);
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc.shape = Shape::makeCatalogued(ShapeType::HeightField, 0);
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc.type = BodyType::Dynamic;
    desc.shape = Shape::makeCatalogued(ShapeType::Compound, 2);
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc.shape = Shape::makeCatalogued(ShapeType::Compound, 1);
    CHECK(world.createBody(desc).status == WorldStatus::Ok);
}

namespace
{
/// A table: a top and four legs, as one compound (its origin at the top's centre).
CompoundShape tableCompound()
{
    CompoundShape table;
    table.children.push_back({Shape::makeBox({1.0f, 0.05f, 0.6f}), {}});
    for (const float x : {-0.9f, 0.9f})
    {
        for (const float z : {-0.5f, 0.5f})
        {
            table.children.push_back({Shape::makeCapsule(0.35f, 0.05f), {{x, -0.45f, z}, {}}});
        }
    }
    return table;
}
} // namespace

TEST_CASE("a compound table stands on its legs on a plane, a mesh and a heightfield", "[composite]")
{
    for (int ground = 0; ground < 3; ++ground)
    {
        World world;
        const AddShapeResult table = world.addCompound(tableCompound());
        REQUIRE(table.status == WorldStatus::Ok);
        BodyDesc floor;
        floor.type = BodyType::Static;
        if (ground == 0)
        {
            floor.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
        }
        else if (ground == 1)
        {
            floor.shape = Shape::makeCatalogued(ShapeType::Mesh, world.addMesh(flatGridMesh(8, 8)).index);
            floor.transform.p = {-4.0f, 0.0f, -4.0f};
        }
        else
        {
            floor.shape = Shape::makeCatalogued(ShapeType::HeightField,
                                                world.addHeightField(flatHeightField(9, 9)).index);
            floor.transform.p = {-4.0f, 0.0f, -4.0f};
        }
        REQUIRE_FALSE(world.createBody(floor).id.isNull());
        BodyDesc desc;
        desc.shape = Shape::makeCatalogued(ShapeType::Compound, table.index);
        desc.transform.p = {0.3f, 0.85f + 0.2f, 0.2f}; // legs' feet 0.2 m up
        desc.allowSleep = false;
        const BodyId id = world.createBody(desc).id;
        REQUIRE_FALSE(id.isNull());
        for (int i = 0; i < 240; ++i)
        {
            world.step(kDt);
        }
        BodyState state;
        REQUIRE(world.getBody(id, state));
        INFO("ground " << ground << ": top at " << state.transform.p.y);
        // The feet (capsule ends) 0.45 + 0.35 + 0.05 below the top's centre: it rests with the top at 0.85 m.
        CHECK(std::fabs(state.transform.p.y - 0.85f) < 5e-3f);
        const Vec3 up = rotate(state.transform.q, Vec3{0.0f, 1.0f, 0.0f});
        CHECK(up.y > 0.99999f);
        CHECK(length(state.linearVelocity) < 1e-2f);
        CHECK(world.stepStats().contactPoints <= 4);
    }
}

TEST_CASE("compounds collide with compounds and convex shapes: a pile settles above the floor", "[composite]")
{
    World world;
    CompoundShape cross;
    cross.children.push_back({Shape::makeBox({0.6f, 0.1f, 0.1f}), {}});
    cross.children.push_back({Shape::makeBox({0.1f, 0.6f, 0.1f}), {}});
    cross.children.push_back({Shape::makeSphere(0.2f), {{0.0f, 0.0f, 0.3f}, {}}});
    const AddShapeResult added = world.addCompound(cross);
    REQUIRE(added.status == WorldStatus::Ok);
    BodyDesc floor;
    floor.type = BodyType::Static;
    floor.shape = Shape::makeCatalogued(ShapeType::Mesh, world.addMesh(flatGridMesh(10, 10)).index);
    floor.transform.p = {-5.0f, 0.0f, -5.0f};
    REQUIRE_FALSE(world.createBody(floor).id.isNull());
    std::vector<BodyId> ids;
    for (int i = 0; i < 12; ++i)
    {
        BodyDesc desc;
        desc.shape = i % 3 == 2 ? Shape::makeBox({0.3f, 0.3f, 0.3f})
                                : Shape::makeCatalogued(ShapeType::Compound, added.index);
        desc.transform.p = {0.1f * float(i % 3), 1.0f + 0.9f * float(i), -0.1f * float(i % 2)};
        desc.transform.q = normalize(Quat{0.1f * float(i), 0.2f, 0.05f * float(i), 1.0f});
        ids.push_back(world.createBody(desc).id);
        REQUIRE_FALSE(ids.back().isNull());
    }
    for (int i = 0; i < 600; ++i)
    {
        REQUIRE(world.step(kDt).ok());
    }
    float lowest = 1e9f;
    float fastest = 0.0f;
    for (const BodyId id : ids)
    {
        BodyState state;
        REQUIRE(world.getBody(id, state));
        const Aabb box = shapeBoundsAt(state.shape, state.transform, world.catalogue());
        lowest = std::min(lowest, box.min.y);
        fastest = std::max(fastest, length(state.linearVelocity));
    }
    INFO("lowest point " << lowest << " m, fastest " << fastest << " m/s");
    CHECK(lowest > -0.01f); // nothing sank through the mesh
    CHECK(fastest < 0.05f); // settled (or asleep)
}

TEST_CASE("rays hit meshes, heightfields and compounds with the triangle or child index",
          "[composite][queries]")
{
    World world;
    const AddShapeResult mesh = world.addMesh(flatGridMesh(4, 4));
    const AddShapeResult field = world.addHeightField(flatHeightField(5, 5));
    const AddShapeResult table = world.addCompound(tableCompound());
    BodyDesc desc;
    desc.type = BodyType::Static;
    desc.shape = Shape::makeCatalogued(ShapeType::Mesh, mesh.index);
    desc.transform.p = {0.0f, 0.0f, 0.0f};
    const BodyId meshBody = world.createBody(desc).id;
    desc.shape = Shape::makeCatalogued(ShapeType::HeightField, field.index);
    desc.transform.p = {10.0f, 1.0f, 0.0f};
    const BodyId fieldBody = world.createBody(desc).id;
    desc.shape = Shape::makeCatalogued(ShapeType::Compound, table.index);
    desc.transform.p = {20.0f, 2.0f, 0.0f};
    const BodyId tableBody = world.createBody(desc).id;

    RayQueryHit hit;
    REQUIRE(world.castRayClosest({{1.25f, 5.0f, 2.5f}, {0.0f, -10.0f, 0.0f}}, {}, hit));
    CHECK(hit.body == meshBody);
    CHECK(hit.fraction == Approx(0.5f));
    CHECK(hit.normal.y == Approx(1.0f));
    const Triangle t = world.mesh(mesh.index).triangle(hit.subShape);
    CHECK(std::min({t.a.x, t.b.x, t.c.x}) <= 1.25f);
    CHECK(std::max({t.a.x, t.b.x, t.c.x}) >= 1.25f);

    REQUIRE(world.castRayClosest({{12.5f, 5.0f, 1.5f}, {0.0f, -10.0f, 0.0f}}, {}, hit));
    CHECK(hit.body == fieldBody);
    CHECK(hit.fraction == Approx(0.4f));
    CHECK(hit.subShape == world.heightField(field.index).height(2.5f, 1.5f).triangleIndex);

    // Sideways under the top, along the legs at z = +0.5: the leg at x = +0.9 (child 4) comes first.
    REQUIRE(world.castRayClosest({{25.0f, 1.3f, 0.5f}, {-10.0f, 0.0f, 0.0f}}, {}, hit));
    CHECK(hit.body == tableBody);
    CHECK(hit.subShape == 4);
    CHECK(hit.point.x == Approx(20.95f).margin(1e-5));
    CHECK(hit.fraction == Approx((25.0f - 20.95f) / 10.0f).margin(1e-6));
    REQUIRE(world.castRayClosest({{20.0f, 5.0f, 0.0f}, {0.0f, -10.0f, 0.0f}}, {}, hit));
    CHECK(hit.subShape == 0);
    CHECK(hit.point.y == Approx(2.05f).margin(1e-5));
}

TEST_CASE("worlds with meshes, heightfields and compounds restore bit-exactly and step alike on 1 and 2 "
          "threads",
          "[composite][determinism]")
{
    const auto build = [](int threads)
    {
        WorldConfig config;
        config.threads = threads;
        auto world = std::make_unique<World>(config);
        const std::uint32_t table = world->addCompound(tableCompound()).index;
        BodyDesc desc;
        desc.type = BodyType::Static;
        desc.shape = Shape::makeCatalogued(ShapeType::Mesh, world->addMesh(flatGridMesh(12, 12)).index);
        desc.transform.p = {-6.0f, 0.0f, -6.0f};
        world->createBody(desc);
        desc.shape = Shape::makeCatalogued(ShapeType::HeightField,
                                           world->addHeightField(flatHeightField(13, 13)).index);
        desc.transform.p = {-6.0f, 0.0f, 6.0f};
        world->createBody(desc);
        desc.type = BodyType::Dynamic;
        for (int i = 0; i < 40; ++i)
        {
            desc.shape =
                i % 2 == 0 ? Shape::makeCatalogued(ShapeType::Compound, table) : Shape::makeSphere(0.3f);
            desc.transform.p = {-4.0f + 0.37f * float(i % 20), 2.0f + 0.8f * float(i / 20),
                                -3.0f + 0.6f * float(i)};
            desc.linearVelocity = {0.5f, 0.0f, 0.2f * float(i % 3)};
            world->createBody(desc);
        }
        return world;
    };
    auto one = build(1);
    auto two = build(2);
    for (int i = 0; i < 120; ++i)
    {
        one->step(kDt);
        two->step(kDt);
        REQUIRE(one->stateHash() == two->stateHash());
    }
    std::vector<std::uint8_t> saved;
    one->saveState(saved);
    for (int i = 0; i < 60; ++i)
    {
        one->step(kDt);
    }
    const std::uint64_t expected = one->stateHash();
    auto restored = build(1);
    REQUIRE(restored->restoreState(saved) == RestoreStatus::Ok);
    for (int i = 0; i < 60; ++i)
    {
        restored->step(kDt);
    }
    CHECK(restored->stateHash() == expected);

    // A world whose mesh differs refuses the snapshot.
    World other;
    other.addCompound(tableCompound());
    other.addMesh(flatGridMesh(12, 11));
    other.addHeightField(flatHeightField(13, 13));
    CHECK(other.restoreState(saved) == RestoreStatus::HullCatalogMismatch);
}

TEST_CASE("sensors see compounds, and a mesh sensor sees what crosses its surface", "[composite][sensors]")
{
    World world;
    const std::uint32_t table = world.addCompound(tableCompound()).index;
    BodyDesc floor;
    floor.type = BodyType::Static;
    floor.shape = Shape::makeCatalogued(ShapeType::Mesh, world.addMesh(flatGridMesh(10, 10)).index);
    floor.transform.p = {-5.0f, 0.0f, -5.0f};
    const BodyId ground = world.createBody(floor).id;
    // A trigger sheet: a mesh sensor 2 m up, and a box sensor around the floor's middle.
    BodyDesc sheet = floor;
    sheet.shape = Shape::makeCatalogued(ShapeType::Mesh, world.addMesh(flatGridMesh(4, 4)).index);
    sheet.transform.p = {-2.0f, 2.0f, -2.0f};
    sheet.isSensor = true;
    const BodyId sheetSensor = world.createBody(sheet).id;
    BodyDesc zone;
    zone.type = BodyType::Static;
    zone.shape = Shape::makeBox({1.5f, 0.5f, 1.5f});
    zone.transform.p = {0.0f, 0.5f, 0.0f};
    zone.isSensor = true;
    const BodyId zoneSensor = world.createBody(zone).id;
    BodyDesc desc;
    desc.shape = Shape::makeCatalogued(ShapeType::Compound, table);
    desc.transform.p = {0.0f, 4.0f, 0.0f};
    const BodyId falling = world.createBody(desc).id;
    REQUIRE_FALSE(ground.isNull());
    REQUIRE_FALSE(sheetSensor.isNull());
    REQUIRE_FALSE(zoneSensor.isNull());
    REQUIRE_FALSE(falling.isNull());
    bool sheetBegan = false;
    bool sheetEnded = false;
    bool zoneBegan = false;
    for (int i = 0; i < 240; ++i)
    {
        world.step(kDt);
        for (const SensorBeginEvent& e : world.sensorEvents().begin)
        {
            CHECK(e.visitor == falling);
            sheetBegan = sheetBegan || e.sensor == sheetSensor;
            zoneBegan = zoneBegan || e.sensor == zoneSensor;
        }
        for (const SensorEndEvent& e : world.sensorEvents().end)
        {
            CHECK(e.visitor == falling);
            sheetEnded = sheetEnded || e.sensor == sheetSensor;
            CHECK(e.sensor != zoneSensor);
        }
    }
    CHECK(sheetBegan);
    CHECK(sheetEnded);
    CHECK(zoneBegan);
    // It came to rest on the floor, inside the zone, having passed through the sheet.
    BodyState state;
    REQUIRE(world.getBody(falling, state));
    CHECK(std::fabs(state.transform.p.y - 0.85f) < 5e-3f);
    int visitors = 0;
    world.sensorOverlaps(zoneSensor,
                         [&](BodyId id)
                         {
                             visitors += id == falling ? 1 : 0;
                             return true;
                         });
    CHECK(visitors == 1);
}

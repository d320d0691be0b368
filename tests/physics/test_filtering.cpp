// Collision filtering (world_filter.cpp): layers that do not meet pass through each other, bodies of one
// non-zero group never collide, changes of the table or of a body's filter take effect at the next step
// (contacts removed, new ones found, sleeping bodies woken), snapshots carry the filters bit-exactly, and
// out-of-range layers are refused.
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

using namespace polytope::physics;

namespace
{
constexpr float kDt = 1.0f / 60.0f;

BodyId addBox(World& world, BodyType type, const Vec3& position, const Vec3& halfExtents, std::uint8_t layer,
              std::uint32_t group)
{
    BodyDesc desc;
    desc.type = type;
    desc.shape = Shape::makeBox(halfExtents);
    desc.transform.p = position;
    desc.layer = layer;
    desc.group = group;
    const CreateBodyResult created = world.createBody(desc);
    REQUIRE(created.status == WorldStatus::Ok);
    return created.id;
}

BodyId addStaticBox(World& world, const Vec3& position, const Vec3& halfExtents, std::uint8_t layer,
                    std::uint32_t group = 0)
{
    return addBox(world, BodyType::Static, position, halfExtents, layer, group);
}

/// A dynamic 1 m cube.
BodyId addCube(World& world, const Vec3& position, std::uint8_t layer, std::uint32_t group = 0)
{
    return addBox(world, BodyType::Dynamic, position, {0.5f, 0.5f, 0.5f}, layer, group);
}

float heightOf(const World& world, BodyId id)
{
    BodyState state;
    REQUIRE(world.getBody(id, state));
    return state.transform.p.y;
}

bool sleeping(const World& world, BodyId id)
{
    BodyState state;
    REQUIRE(world.getBody(id, state));
    return state.sleeping;
}

void run(World& world, int steps)
{
    for (int i = 0; i < steps; ++i)
    {
        world.step(kDt);
    }
}

/// A platform (top at y = 3, layer 1) above a floor (top at y = 0, layer 0), and a cube on layer 2 dropped
/// from y = 6 onto them.
struct Platforms
{
    World world;
    BodyId platform;
    BodyId floor;
    BodyId cube;
};

void buildPlatforms(Platforms& p)
{
    p.floor = addStaticBox(p.world, {0.0f, -0.25f, 0.0f}, {3.0f, 0.25f, 3.0f}, 0);
    p.platform = addStaticBox(p.world, {0.0f, 2.75f, 0.0f}, {2.0f, 0.25f, 2.0f}, 1);
    p.cube = addCube(p.world, {0.0f, 6.0f, 0.0f}, 2);
}
} // namespace

TEST_CASE("a cube falls through a platform on a layer it does not meet and lands on one it does", "[filter]")
{
    Platforms collides;
    buildPlatforms(collides);
    run(collides.world, 180);
    CHECK(heightOf(collides.world, collides.cube) == Approx(3.5f).margin(0.01f));

    Platforms passes;
    buildPlatforms(passes);
    REQUIRE(passes.world.setLayersCollide(1, 2, false) == WorldStatus::Ok);
    CHECK_FALSE(passes.world.layersCollide(1, 2));
    CHECK_FALSE(passes.world.layersCollide(2, 1)); // symmetric
    CHECK(passes.world.layersCollide(0, 2));
    CHECK(passes.world.layerMask(2) == ~(1u << 1));
    run(passes.world, 180);
    CHECK(heightOf(passes.world, passes.cube) == Approx(0.5f).margin(0.01f));
}

TEST_CASE("bodies sharing a non-zero group never collide; group 0 and different groups do", "[filter]")
{
    auto stackHeight = [](std::uint32_t lower, std::uint32_t upper)
    {
        World world;
        REQUIRE(addGroundPlane(world));
        const BodyId bottom = addCube(world, {0.0f, 0.5f, 0.0f}, 0, lower);
        const BodyId top = addCube(world, {0.0f, 2.0f, 0.0f}, 0, upper);
        run(world, 180);
        CHECK(heightOf(world, bottom) == Approx(0.5f).margin(0.01f));
        return heightOf(world, top);
    };
    CHECK(stackHeight(0, 0) == Approx(1.5f).margin(0.01f));
    CHECK(stackHeight(7, 8) == Approx(1.5f).margin(0.01f));
    CHECK(stackHeight(7, 0) == Approx(1.5f).margin(0.01f));
    CHECK(stackHeight(7, 7) == Approx(0.5f).margin(0.01f)); // through its partner, onto the ground

    // A static body in the group too: the dynamic member falls through it.
    World world;
    REQUIRE(addGroundPlane(world));
    addStaticBox(world, {0.0f, 2.75f, 0.0f}, {2.0f, 0.25f, 2.0f}, 0, 5);
    const BodyId cube = addCube(world, {0.0f, 6.0f, 0.0f}, 0, 5);
    run(world, 240);
    CHECK(heightOf(world, cube) == Approx(0.5f).margin(0.01f));
}

TEST_CASE("turning a pair of layers off removes their contacts at the next step, and the body falls",
          "[filter]")
{
    Platforms p;
    buildPlatforms(p);
    run(p.world, 150); // resting on the platform, asleep
    REQUIRE(heightOf(p.world, p.cube) == Approx(3.5f).margin(0.01f));
    REQUIRE(sleeping(p.world, p.cube));
    REQUIRE(p.world.stepStats().contacts == 1);

    REQUIRE(p.world.setLayersCollide(2, 1, false) == WorldStatus::Ok);
    CHECK(p.world.stepStats().contacts == 1); // not before the step
    p.world.step(kDt);
    CHECK(p.world.stepStats().contacts == 0);
    CHECK_FALSE(sleeping(p.world, p.cube)); // its touching contact went: woken
    run(p.world, 180);
    CHECK(heightOf(p.world, p.cube) == Approx(0.5f).margin(0.01f));

    // Back on, with the cube on the floor, clear of the platform: nothing changes.
    REQUIRE(p.world.setLayersCollide(1, 2, true) == WorldStatus::Ok);
    run(p.world, 60);
    CHECK(heightOf(p.world, p.cube) == Approx(0.5f).margin(0.01f));
}

TEST_CASE("turning a pair of layers on finds their pairs at the next step, waking sleeping bodies",
          "[filter]")
{
    // While the cube falls toward the platform (layers off), they are turned on: it lands on the platform.
    Platforms p;
    buildPlatforms(p);
    REQUIRE(p.world.setLayersCollide(1, 2, false) == WorldStatus::Ok);
    run(p.world, 20); // fat boxes overlap by now: the pair was seen and refused
    REQUIRE(heightOf(p.world, p.cube) > 3.6f);
    REQUIRE(p.world.setLayersCollide(1, 2, true) == WorldStatus::Ok);
    run(p.world, 180);
    CHECK(heightOf(p.world, p.cube) == Approx(3.5f).margin(0.01f));

    // A cube asleep on the ground with a static block (another layer) reaching into it: turning the pair
    // on wakes it, and the block pushes it out.
    World world;
    REQUIRE(addGroundPlane(world));
    const BodyId cube = addCube(world, {0.0f, 0.5f, 0.0f}, 2);
    REQUIRE(world.setLayersCollide(1, 2, false) == WorldStatus::Ok);
    const BodyId block = addStaticBox(world, {0.9f, 0.5f, 0.0f}, {0.5f, 2.0f, 2.0f}, 1);
    run(world, 120);
    REQUIRE(sleeping(world, cube));
    const std::uint32_t contactsBefore = world.stepStats().contacts;
    REQUIRE(world.setLayersCollide(1, 2, true) == WorldStatus::Ok);
    CHECK_FALSE(sleeping(world, cube));
    world.step(kDt);
    CHECK(world.stepStats().contacts == contactsBefore + 1);
    run(world, 120);
    BodyState state;
    REQUIRE(world.getBody(cube, state));
    CHECK(state.transform.p.x < -0.09f); // pushed out: its face at or left of the block's at x = 0.4
    REQUIRE(world.isValid(block));
}

TEST_CASE("setBodyFilter moves a body to another layer and group, taking effect at the next step", "[filter]")
{
    Platforms p;
    buildPlatforms(p);
    run(p.world, 150);
    REQUIRE(sleeping(p.world, p.cube));
    REQUIRE(p.world.setLayersCollide(1, 3, false) == WorldStatus::Ok);

    // To layer 3, which the platform's layer does not meet: it wakes and falls through onto the floor.
    REQUIRE(p.world.setBodyFilter(p.cube, 3, 0) == WorldStatus::Ok);
    CHECK_FALSE(sleeping(p.world, p.cube));
    BodyState state;
    REQUIRE(p.world.getBody(p.cube, state));
    CHECK(state.layer == 3);
    p.world.step(kDt);
    CHECK(p.world.stepStats().contacts == 0);
    run(p.world, 180);
    CHECK(heightOf(p.world, p.cube) == Approx(0.5f).margin(0.01f));

    // A second cube on it, then the two put in one group: the upper one sinks through.
    const BodyId upper = addCube(p.world, {0.0f, 1.6f, 0.0f}, 3);
    run(p.world, 120);
    REQUIRE(heightOf(p.world, upper) == Approx(1.5f).margin(0.01f));
    REQUIRE(p.world.setBodyFilter(p.cube, 3, 9) == WorldStatus::Ok);
    REQUIRE(p.world.setBodyFilter(upper, 3, 9) == WorldStatus::Ok);
    run(p.world, 120);
    CHECK(heightOf(p.world, upper) == Approx(0.5f).margin(0.01f));

    // The platform itself changes layer to one the cube meets, while the cube is dropped again above it.
    REQUIRE(p.world.setTransform(p.cube, {{0.0f, 6.0f, 0.0f}, {}}) == WorldStatus::Ok);
    REQUIRE(p.world.setBodyFilter(p.platform, 0, 0) == WorldStatus::Ok);
    run(p.world, 180);
    CHECK(heightOf(p.world, p.cube) == Approx(3.5f).margin(0.01f));
}

TEST_CASE("filters and pending filter changes survive save and restore bit-exactly", "[filter][determinism]")
{
    auto build = [](World& world)
    {
        REQUIRE(findScene("mixed")->build(world));
        int i = 0;
        world.forEachBody(
            [&](const BodyState& b)
            {
                if (b.type == BodyType::Dynamic)
                {
                    REQUIRE(world.setBodyFilter(b.id, static_cast<std::uint8_t>(i % 3),
                                                i % 4 == 0 ? 1u : 0u) == WorldStatus::Ok);
                    ++i;
                }
            });
        REQUIRE(world.setLayersCollide(1, 2, false) == WorldStatus::Ok);
    };
    World world;
    build(world);
    run(world, 100);
    std::vector<std::uint8_t> saved;

    // Saved between a change and the step that applies it: the contacts to remove and the pairs to find
    // are carried by the snapshot.
    REQUIRE(world.setLayersCollide(0, 1, false) == WorldStatus::Ok);
    REQUIRE(world.setLayersCollide(1, 2, true) == WorldStatus::Ok);
    world.saveState(saved);
    run(world, 200);
    const std::uint64_t expected = world.stateHash();
    std::vector<std::uint8_t> expectedBytes;
    world.saveState(expectedBytes);

    World fresh;
    REQUIRE(findScene("mixed")->build(fresh)); // same hulls; no filters: the snapshot brings them
    REQUIRE(fresh.restoreState(saved) == RestoreStatus::Ok);
    CHECK_FALSE(fresh.layersCollide(0, 1));
    CHECK(fresh.layersCollide(1, 2));
    run(fresh, 200);
    CHECK(fresh.stateHash() == expected);
    std::vector<std::uint8_t> again;
    fresh.saveState(again);
    CHECK(again == expectedBytes);

    // The same on two threads.
    WorldConfig twoThreads;
    twoThreads.threads = 2;
    World other(twoThreads);
    REQUIRE(findScene("mixed")->build(other));
    REQUIRE(other.restoreState(saved) == RestoreStatus::Ok);
    run(other, 200);
    CHECK(other.stateHash() == expected);

    // The filters change the simulation: without them the run differs.
    World unfiltered;
    REQUIRE(findScene("mixed")->build(unfiltered));
    run(unfiltered, 300);
    CHECK(unfiltered.stateHash() != expected);
}

TEST_CASE("out-of-range layers are refused, in calls and in snapshots", "[filter]")
{
    World world;
    BodyDesc desc;
    desc.shape = Shape::makeSphere(0.5f);
    desc.layer = kMaxCollisionLayers;
    CHECK(world.createBody(desc).status == WorldStatus::InvalidBodyDesc);
    desc.layer = kMaxCollisionLayers - 1;
    desc.group = 0xFFFFFFFFu;
    const BodyId id = world.createBody(desc).id;
    REQUIRE_FALSE(id.isNull());
    CHECK(world.setBodyFilter(id, kMaxCollisionLayers, 0) == WorldStatus::InvalidBodyDesc);
    CHECK(world.setBodyFilter(id, 255, 0) == WorldStatus::InvalidBodyDesc);
    CHECK(world.setBodyFilter(BodyId{id.index, id.generation + 1}, 0, 0) == WorldStatus::StaleBodyId);
    CHECK(world.setLayersCollide(kMaxCollisionLayers, 0, false) == WorldStatus::InvalidBodyDesc);
    CHECK(world.setLayersCollide(0, 1000, true) == WorldStatus::InvalidBodyDesc);
    CHECK_FALSE(world.layersCollide(0, kMaxCollisionLayers));
    CHECK(world.layerMask(kMaxCollisionLayers) == 0u);
    CHECK(world.layerMask(0) == 0xFFFFFFFFu);
    BodyState state;
    REQUIRE(world.getBody(id, state));
    CHECK(state.layer == kMaxCollisionLayers - 1);
    CHECK(state.group == 0xFFFFFFFFu);

    // Snapshot layout: magic, version, config fingerprint (8), gravity (12), step count (8), the 32 rows of
    // the layer table, the hull and geometry fingerprints (8 + 8), the slot count, then slot 0: generation,
    // alive, type,
    // sleeping, allowSleep, pendingPlaneTest, proxyMoved, allowedDofs, layer.
    std::vector<std::uint8_t> saved;
    world.saveState(saved);
    constexpr std::size_t kTable = 4 + 4 + 8 + 12 + 8;
    constexpr std::size_t kLayerOfSlot0 = kTable + 4 * kMaxCollisionLayers + 8 + 8 + 4 + 4 + 1 + 6;
    REQUIRE(saved[kLayerOfSlot0] == kMaxCollisionLayers - 1);
    World target;
    std::vector<std::uint8_t> bad = saved;
    bad[kLayerOfSlot0] = kMaxCollisionLayers;
    CHECK(target.restoreState(bad) == RestoreStatus::Corrupt);
    bad = saved;
    bad[kTable] ^= 0x02; // row 0 loses layer 1, row 1 keeps layer 0: not symmetric
    CHECK(target.restoreState(bad) == RestoreStatus::Corrupt);
    CHECK(target.bodyCount() == 0);
    CHECK(target.restoreState(saved) == RestoreStatus::Ok);
    CHECK(target.bodyCount() == 1);
}

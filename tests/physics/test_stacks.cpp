// Stability: stacks, walls and a heavy body on light ones stand on their own, sleeping off.
//
// What "stands" may mean for this solver. Contacts are soft (Box2D v3's soft step): a resting contact holds
// its load as a spring of angular frequency w = 2 pi contactHertz acting on the contact's effective mass, so
// it sinks by its static deflection, load / (m_eff w^2), and then holds still. Between two equal cubes
// m_eff = m / 2; a contact with the static ground is twice as stiff (2 contactHertz) with m_eff = m. With
// n cubes above a contact, the contact between cubes sinks 2 n g / w^2 and the ground contact under all N
// cubes N g / (4 w^2), so the top of a stack of N sinks
//     g / w^2 (N / 4 + 2 (1 + 2 + ... + N - 1)) = g / w^2 (N / 4 + N (N - 1)),
// for N = 10 and contactHertz 30: 92.5 g / w^2 = 25.5 mm (measured: 25.6 mm, settled within a second and
// unchanged to 60 s). The stack10 test holds the engine to that: the top sinks no more than 10% past the
// static deflection and then stays put, and no cube moves sideways by more than 2 cm (a stack of 1 m cubes
// tips only when the cubes above a contact move 0.5 m off it; measured: 8 mm while the stack settles, under
// 1 mm after).
//
// Taller stacks would sink with N^2 and, past about 30 cubes, buckle: the four soft points between two cubes
// resist rocking less than the weight above tips them. The World therefore solves slender islands that
// carry much (WorldConfig::substepLoadRatio) and islands with large mass ratios with more substeps and
// proportionally stiffer contacts (world.cpp, chooseSubstepLevels); the tests below hold it to the figures
// of issue 16.
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

using namespace polytope::physics;

TEST_CASE("stack10 stands for 10 s at 60 Hz with sleeping off: no cube slides, the top sinks only by the "
          "contacts' static deflection",
          "[solver][stack]")
{
    WorldConfig config;
    config.enableSleep = false; // a sleeping stack would stand trivially
    World world(config);
    const SceneInfo* scene = findScene("stack10");
    REQUIRE(scene != nullptr);
    REQUIRE(scene->build(world));

    std::vector<BodyId> cubes;
    std::vector<Vec3> start;
    world.forEachBody(
        [&](const BodyState& b)
        {
            if (b.type == BodyType::Dynamic)
            {
                cubes.push_back(b.id);
                start.push_back(b.transform.p);
            }
        });
    constexpr int kCubes = 10;
    REQUIRE(cubes.size() == kCubes);
    const auto top = static_cast<std::size_t>(
        std::max_element(start.begin(), start.end(), [](const Vec3& a, const Vec3& b) { return a.y < b.y; }) -
        start.begin());
    REQUIRE(start[top].y == Approx(kCubes - 0.5f));

    const double w = 2.0 * std::numbers::pi * config.contactHertz;
    const double g = -config.gravity.y;
    const double staticSag = g / (w * w) * (kCubes / 4.0 + kCubes * (kCubes - 1.0)); // metres, 0.0255

    float worstSideways = 0.0f; // metres: largest horizontal distance of any cube from its start, any step
    float worstSag = 0.0f;      // metres: lowest the top cube went below its start
    float topAfterOneSecond = 0.0f;
    float topMovedSince = 0.0f; // metres: largest |height - height at 1 s| of the top cube after 1 s
    for (int step = 1; step <= 600; ++step)
    {
        REQUIRE(world.step(1.0f / 60.0f).ok());
        for (std::size_t i = 0; i < cubes.size(); ++i)
        {
            BodyState b;
            REQUIRE(world.getBody(cubes[i], b));
            const Vec3 moved = b.transform.p - start[i];
            worstSideways = std::max(worstSideways, std::hypot(moved.x, moved.z));
            if (i != top)
            {
                continue;
            }
            worstSag = std::max(worstSag, -moved.y);
            if (step == 60)
            {
                topAfterOneSecond = b.transform.p.y;
            }
            else if (step > 60)
            {
                topMovedSince = std::max(topMovedSince, std::fabs(b.transform.p.y - topAfterOneSecond));
            }
        }
    }
    INFO("sideways " << worstSideways << " m; top sank " << worstSag << " m (static deflection " << staticSag
                     << " m), then moved " << topMovedSince << " m");
    CHECK(worstSideways <= 0.02f);
    CHECK(worstSag <= 1.1 * staticSag);
    CHECK(topMovedSince <= 0.0005f); // settled: half a millimetre over the last 9 s
    // The premise of the deflection above: ten cubes carried by one are not yet raised.
    CHECK(world.stepStats().mostSubsteps == static_cast<std::uint32_t>(config.substeps));
}

namespace
{

/// Steps the named built-in scene for `seconds` at 60 Hz with sleeping off; returns the largest distance any
/// dynamic body's centre moved from its start, over every step. `mostSubsteps` gets the last step's
/// StepStats::mostSubsteps.
float standingDrift(const char* name, int seconds, std::uint32_t& mostSubsteps, int threads = 1)
{
    WorldConfig config;
    config.enableSleep = false;
    config.threads = threads;
    World world(config);
    const SceneInfo* scene = findScene(name);
    REQUIRE(scene != nullptr);
    REQUIRE(scene->build(world));
    std::vector<BodyId> bodies;
    std::vector<Vec3> start;
    world.forEachBody(
        [&](const BodyState& b)
        {
            if (b.type == BodyType::Dynamic)
            {
                bodies.push_back(b.id);
                start.push_back(b.transform.p);
            }
        });
    float drift = 0.0f;
    for (int step = 0; step < 60 * seconds; ++step)
    {
        REQUIRE(world.step(1.0f / 60.0f).ok());
        for (std::size_t i = 0; i < bodies.size(); ++i)
        {
            BodyState b;
            REQUIRE(world.getBody(bodies[i], b));
            drift = std::max(drift, length(b.transform.p - start[i]));
        }
    }
    mostSubsteps = world.stepStats().mostSubsteps;
    return drift;
}

} // namespace

TEST_CASE("stack30 and stack50 stand for 60 s within 2 cm and 5 cm, solved with 16 and 32 substeps",
          "[solver][stack]")
{
    // Measured: 1.5 cm and 1.6 cm (the base solver, 4 substeps for every island: both fall by 10 s).
    std::uint32_t substeps = 0;
    const float drift30 = standingDrift("stack30", 60, substeps);
    INFO("stack30 drift " << drift30 << " m, " << substeps << " substeps");
    CHECK(drift30 < 0.02f);
    CHECK(substeps == 16);
    const float drift50 = standingDrift("stack50", 60, substeps);
    INFO("stack50 drift " << drift50 << " m, " << substeps << " substeps");
    CHECK(drift50 < 0.05f);
    CHECK(substeps == 32);
}

TEST_CASE("a wall of 820 cubes (pyramid40) stands within 3 cm, on one thread and on two alike",
          "[solver][stack][tasks]")
{
    // 20 s here (the benchmark runs 60 s: polytope-bench scenes --scene pyramid40). Measured: 1.8 cm.
    std::uint32_t substeps = 0;
    const float drift = standingDrift("pyramid40", 20, substeps);
    INFO("pyramid40 drift " << drift << " m, " << substeps << " substeps");
    CHECK(drift < 0.03f);
    CHECK(substeps == 16);
    std::uint32_t substeps2 = 0;
    CHECK(standingDrift("pyramid40", 2, substeps2, 2) == standingDrift("pyramid40", 2, substeps2, 1));
}

TEST_CASE("a 20 m cube on four unit cubes (8000:1) sags less than 2 cm in 60 s", "[solver][stack]")
{
    // Measured: 1.5 cm, at 32 substeps from the first step (the mass ratio is known at once). At 4 substeps
    // the unit cubes are squeezed out and the big cube sinks 1 m.
    std::uint32_t substeps = 0;
    const float drift = standingDrift("heavy_on_light", 60, substeps);
    INFO("heavy_on_light drift " << drift << " m, " << substeps << " substeps");
    CHECK(drift < 0.02f);
    CHECK(substeps == 32);
}

TEST_CASE("an island's substeps follow what it carries: a wide block is not raised, a stack that loses its "
          "top goes back to the base substeps after the hold",
          "[solver][stack]")
{
    WorldConfig config;
    config.enableSleep = false;
    World world(config);
    REQUIRE(addGroundPlane(world));
    // A block of 4 x 4 x 4 unit cubes: each grounded cube carries 4, and the block is not slender.
    for (int x = 0; x < 4; ++x)
    {
        for (int y = 0; y < 4; ++y)
        {
            for (int z = 0; z < 4; ++z)
            {
                BodyDesc d;
                d.shape = Shape::makeBox({0.5f, 0.5f, 0.5f});
                d.transform.p = {20.0f + static_cast<float>(x), 0.5f + static_cast<float>(y),
                                 static_cast<float>(z)};
                REQUIRE(world.createBody(d).status == WorldStatus::Ok);
            }
        }
    }
    // A stack of 30 beside it.
    std::vector<BodyId> stack;
    for (int i = 0; i < 30; ++i)
    {
        BodyDesc d;
        d.shape = Shape::makeBox({0.5f, 0.5f, 0.5f});
        d.transform.p = {0.0f, 0.5f + static_cast<float>(i), 0.0f};
        const CreateBodyResult made = world.createBody(d);
        REQUIRE(made.status == WorldStatus::Ok);
        stack.push_back(made.id);
    }
    for (int step = 0; step < 120; ++step)
    {
        world.step(1.0f / 60.0f);
    }
    CHECK(world.stepStats().mostSubsteps == 16);
    CHECK(world.stepStats().raisedBodies == 30); // the stack only
    // Take the top 25 away: five cubes carried by one ask for nothing, but the level is held a second.
    for (int i = 5; i < 30; ++i)
    {
        REQUIRE(world.destroyBody(stack[static_cast<std::size_t>(i)]) == WorldStatus::Ok);
    }
    for (int step = 0; step < 30; ++step)
    {
        world.step(1.0f / 60.0f);
    }
    CHECK(world.stepStats().mostSubsteps == 16);
    CHECK(world.stepStats().raisedBodies == 5);
    for (int step = 0; step < 60; ++step)
    {
        world.step(1.0f / 60.0f);
    }
    CHECK(world.stepStats().mostSubsteps == 4);
    CHECK(world.stepStats().raisedBodies == 0);
}

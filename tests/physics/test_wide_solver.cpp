// The wide contact solver against the scalar one: the graph colouring keeps the bodies of a colour apart, and
// solving W constraints at once in SIMD lanes gives bit for bit what the scalar solver gives when it visits
// the constraints in the same (colour) order.
#include "polytope/physics/constraint_graph.h"
#include "polytope/physics/contact_solver.h"
#include "polytope/physics/joint_solver.h"

#include "random_shapes.h"

#include <catch2/catch.hpp>

#include <algorithm>

#include <cstring>
#include <random>
#include <vector>

using namespace polytope::physics;
using namespace physics_test;

namespace
{

Vec3 randomVec(std::mt19937& rng, float scale)
{
    return {uniform(rng, -scale, scale), uniform(rng, -scale, scale), uniform(rng, -scale, scale)};
}

struct Problem
{
    std::vector<SolverBody> bodies;
    std::vector<SolverBodyMass> masses;
    std::vector<ContactConstraintSetup> setups;
};

/// A pile-like random problem: `bodyCount` moving bodies plus the static dummy, `constraintCount` contacts
/// between random pairs (a quarter against the dummy), 1 to 4 points, speculative and penetrating ones.
Problem randomProblem(std::uint32_t seed, int bodyCount, int constraintCount)
{
    std::mt19937 rng(seed);
    Problem p;
    p.bodies.push_back({});
    p.masses.push_back({});
    for (int i = 0; i < bodyCount; ++i)
    {
        p.bodies.push_back(
            {randomVec(rng, 3.0f), randomVec(rng, 2.0f), randomVec(rng, 0.01f), randomVec(rng, 0.01f)});
        SolverBodyMass m;
        const float inverseMass = uniform(rng, 0.05f, 2.0f);
        m.inverseMass = {inverseMass, inverseMass, inverseMass};
        m.inverseInertia =
            Mat3::diagonal({uniform(rng, 0.1f, 5.0f), uniform(rng, 0.1f, 5.0f), uniform(rng, 0.1f, 5.0f)});
        p.masses.push_back(m);
    }
    std::uniform_int_distribution<int> pick(1, bodyCount);
    for (int k = 0; k < constraintCount; ++k)
    {
        ContactConstraintSetup c;
        c.bodyA = k % 4 == 0 ? 0u : static_cast<std::uint32_t>(pick(rng));
        do
        {
            c.bodyB = static_cast<std::uint32_t>(pick(rng));
        } while (c.bodyB == c.bodyA);
        c.normal = normalize(randomVec(rng, 1.0f));
        orthonormalBasis(c.normal, c.tangent1, c.tangent2);
        c.friction = uniform(rng, 0.0f, 1.0f);
        // Some bouncy, so that restitution is compared as well.
        c.restitution = k % 3 == 0 ? uniform(rng, 0.2f, 0.9f) : 0.0f;
        c.softness = makeSoftness(uniform(rng, 10.0f, 60.0f), 10.0f, 1.0f / 240.0f);
        c.pointCount = 1 + k % kMaxManifoldPoints;
        for (int i = 0; i < c.pointCount; ++i)
        {
            ContactPointSetup& cp = c.points[i];
            cp.anchorA = randomVec(rng, 0.7f);
            cp.anchorB = randomVec(rng, 0.7f);
            cp.baseSeparation = uniform(rng, -0.05f, 0.05f);
            cp.normalImpulse = uniform(rng, 0.0f, 2.0f);
            cp.tangentImpulse1 = uniform(rng, -0.5f, 0.5f);
            cp.tangentImpulse2 = uniform(rng, -0.5f, 0.5f);
        }
        p.setups.push_back(c);
    }
    return p;
}

bool sameBits(const void* a, const void* b, std::size_t n)
{
    return std::memcmp(a, b, n) == 0;
}

} // namespace

TEST_CASE("the colouring never puts two constraints on one moving body in a colour", "[solver][wide]")
{
    const Problem p = randomProblem(7, 300, 1500);
    for (const int parts : {1, 2, 3})
    {
        INFO("parts " << parts);
        ConstraintGraph graph;
        graph.reserve(p.bodies.size(), p.setups.size());
        graph.color(p.setups, p.bodies.size(), parts);
        REQUIRE(graph.colorStart[kGraphColorCount + 1] == p.setups.size());
        std::vector<int> placed(p.setups.size(), 0);
        for (const std::uint32_t i : graph.order)
        {
            REQUIRE(++placed[i] == 1);
        }
        for (int color = 0; color < kGraphColorCount; ++color)
        {
            std::vector<int> seen(p.bodies.size(), 0);
            const std::uint32_t first = graph.colorStart[color];
            const std::uint32_t count = graph.colorStart[color + 1] - first;
            for (std::uint32_t k = first; k < first + count; ++k)
            {
                const ContactConstraintSetup& c = p.setups[graph.order[k]];
                for (const std::uint32_t body : {c.bodyA, c.bodyB})
                {
                    if (body != 0)
                    {
                        INFO("colour " << color << " body " << body);
                        REQUIRE(++seen[body] == 1);
                    }
                }
            }
            // The colour is cut into `parts` runs in constraint order (thread t takes run t), each run sorted
            // by point count (most first), then constraint order.
            std::vector<std::uint32_t> members(graph.order.begin() + first,
                                               graph.order.begin() + first + count);
            std::sort(members.begin(), members.end());
            std::vector<int> runOf(p.setups.size(), -1);
            for (std::uint32_t k = 0; k < count; ++k)
            {
                runOf[members[k]] = static_cast<int>(static_cast<std::uint64_t>(k) * parts / count);
            }
            for (std::uint32_t k = first + 1; k < first + count; ++k)
            {
                const std::uint32_t before = graph.order[k - 1];
                const std::uint32_t after = graph.order[k];
                INFO("colour " << color << " position " << k);
                REQUIRE(runOf[before] <= runOf[after]);
                if (runOf[before] == runOf[after])
                {
                    const int pointsBefore = p.setups[before].pointCount;
                    const int pointsAfter = p.setups[after].pointCount;
                    REQUIRE(pointsBefore >= pointsAfter);
                    REQUIRE((pointsBefore > pointsAfter || before < after));
                }
            }
        }
        for (std::uint32_t k = graph.colorStart[kGraphColorCount] + 1;
             k < graph.colorStart[kGraphColorCount + 1]; ++k)
        {
            REQUIRE(graph.order[k - 1] < graph.order[k]); // the overflow set in constraint order
        }
    }
}

TEST_CASE("the wide solver gives the scalar solver's bits in colour order", "[solver][wide]")
{
    INFO("lanes " << contactSolverLanes());
    // Seed 2 runs on two threads: the bundles of a colour then go to either, and the bits must not change.
    TaskPool pool(2);
    for (const std::uint32_t seed : {1u, 2u, 3u})
    {
        TaskPool* tasks = seed == 2u ? &pool : nullptr;
        // Dense enough that some constraints overflow the colours and take the scalar path.
        const int constraintCount = seed == 3u ? 4000 : 600;
        Problem wide = randomProblem(seed, 200, constraintCount);
        Problem scalar = wide;
        ConstraintGraph graph;
        graph.reserve(wide.bodies.size(), wide.setups.size());
        graph.color(wide.setups, wide.bodies.size(), tasks != nullptr ? tasks->threadCount() : 1);
        prepareContactBundles(graph, wide.setups, wide.bodies, wide.masses, tasks);
        std::vector<ContactConstraint> constraints(scalar.setups.size());
        for (std::size_t k = 0; k < constraints.size(); ++k)
        {
            prepareContactConstraint(scalar.setups[k], constraints[k], scalar.bodies, scalar.masses);
        }
        const float inverseH = 240.0f;
        for (int substep = 0; substep < 3; ++substep)
        {
            warmStartContactsWide(graph, wide.bodies, tasks);
            solveContactsWide(graph, wide.bodies, inverseH, 3.0f, 0.0f, true, tasks);
            solveContactsWide(graph, wide.bodies, inverseH, 3.0f, 0.0f, false, tasks);

            warmStartContacts(constraints, graph.order, scalar.bodies);
            solveContacts(constraints, graph.order, scalar.bodies, inverseH, 3.0f, 0.0f, true);
            solveContacts(constraints, graph.order, scalar.bodies, inverseH, 3.0f, 0.0f, false);
        }
        applyRestitutionWide(graph, wide.bodies, 0.5f, tasks);
        applyRestitution(constraints, graph.order, scalar.bodies, 0.5f);
        std::vector<ContactImpulses> impulses(wide.setups.size());
        readContactImpulses(graph, impulses, tasks);
        INFO("seed " << seed << ", overflow " << graph.overflow().size());
        if (seed == 3u)
        {
            CHECK(!graph.overflow().empty());
        }
        for (std::size_t i = 0; i < wide.bodies.size(); ++i)
        {
            INFO("body " << i);
            REQUIRE(sameBits(&wide.bodies[i].linearVelocity, &scalar.bodies[i].linearVelocity, sizeof(Vec3)));
            REQUIRE(
                sameBits(&wide.bodies[i].angularVelocity, &scalar.bodies[i].angularVelocity, sizeof(Vec3)));
        }
        int bounced = 0;
        for (std::size_t k = 0; k < constraints.size(); ++k)
        {
            for (int i = 0; i < constraints[k].pointCount; ++i)
            {
                const ContactConstraintPoint& b = constraints[k].points[i];
                INFO("constraint " << k << " point " << i);
                REQUIRE(sameBits(&impulses[k].normal[i], &b.normalImpulse, sizeof(float)));
                REQUIRE(sameBits(&impulses[k].tangent1[i], &b.tangentImpulse1, sizeof(float)));
                REQUIRE(sameBits(&impulses[k].tangent2[i], &b.tangentImpulse2, sizeof(float)));
                bounced += constraints[k].restitution > 0.0f && b.relativeVelocity < -0.5f &&
                           b.maxNormalImpulse > 0.0f;
            }
        }
        // Restitution had work to do.
        CHECK(bounced > 0);
        // And the solve did something.
        CHECK_FALSE(sameBits(&wide.bodies[1].linearVelocity,
                             &randomProblem(seed, 200, constraintCount).bodies[1].linearVelocity,
                             sizeof(Vec3)));
    }
}

TEST_CASE("the wide ball joint solver gives the scalar solver's bits", "[solver][wide][joints]")
{
    const auto W = static_cast<std::uint32_t>(jointSolverLanes());
    INFO("lanes " << W);
    std::mt19937 rng(11);
    const int bodyCount = 150;
    const float h = 1.0f / 240.0f;
    // Bodies: the static dummy, then moving bodies with full (rotated) inverse inertias; body 5 has no mass
    // (a kinematic body: its joints' point block is singular and gets a zero effective mass).
    std::vector<SolverBody> bodies(1);
    std::vector<SolverBodyMass> masses(1);
    std::vector<SolverBodyMotion> motions(1);
    for (int i = 1; i <= bodyCount; ++i)
    {
        bodies.push_back(
            {randomVec(rng, 3.0f), randomVec(rng, 2.0f), randomVec(rng, 0.01f), randomVec(rng, 0.01f)});
        SolverBodyMass m;
        if (i != 5)
        {
            const float inverseMass = uniform(rng, 0.05f, 2.0f);
            m.inverseMass = {inverseMass, inverseMass, inverseMass};
            const Mat3 r = toMat3(randomRotation(rng));
            // Mirrored, as the World keeps world inertias.
            m.inverseInertia =
                mirroredUpper(r *
                              Mat3::diagonal({uniform(rng, 0.1f, 5.0f), uniform(rng, 0.1f, 5.0f),
                                              uniform(rng, 0.1f, 5.0f)}) *
                              transpose(r));
        }
        masses.push_back(m);
        SolverBodyMotion motion;
        motion.center = randomVec(rng, 10.0f);
        motion.rotation = randomRotation(rng);
        motions.push_back(motion);
    }
    // Ball joints between random pairs (every fifth to the dummy), some with their own spring, coloured
    // greedily so that no two in a colour share a moving body; the rest are left out.
    std::vector<JointConstraint> joints;
    std::vector<std::vector<std::uint32_t>> colors(8);
    std::vector<std::vector<bool>> used(colors.size(), std::vector<bool>(bodies.size(), false));
    std::uniform_int_distribution<std::uint32_t> pick(1, bodyCount);
    for (int k = 0; k < 500; ++k)
    {
        JointConstraint c;
        c.bodyA = k % 5 == 0 ? 0u : pick(rng);
        do
        {
            c.bodyB = pick(rng);
        } while (c.bodyB == c.bodyA);
        c.massA = &masses[c.bodyA];
        c.massB = &masses[c.bodyB];
        c.localAnchorA = randomVec(rng, c.bodyA == 0 ? 10.0f : 0.6f);
        c.localAnchorB = randomVec(rng, 0.6f);
        const bool soft = k % 4 == 1;
        c.flags = soft ? kJointSoft : 0;
        c.lockSoftness =
            soft ? makeSoftness(uniform(rng, 2.0f, 20.0f), 0.7f, h) : makeSoftness(60.0f, 2.0f, h);
        c.impulses.linear = randomVec(rng, 0.5f);
        for (std::size_t color = 0; color < colors.size(); ++color)
        {
            if ((c.bodyA == 0 || !used[color][c.bodyA]) && !used[color][c.bodyB])
            {
                used[color][c.bodyA] = c.bodyA != 0;
                used[color][c.bodyB] = true;
                colors[color].push_back(static_cast<std::uint32_t>(joints.size()));
                joints.push_back(c);
                break;
            }
        }
    }
    // The wide side: each colour's joints W to a bundle, in order.
    std::vector<std::uint32_t> bundleStart{0};
    for (const auto& color : colors)
    {
        bundleStart.push_back(bundleStart.back() + static_cast<std::uint32_t>((color.size() + W - 1) / W));
    }
    BallJointBundles bundles;
    reserveBallBundles(bundles, bundleStart.back());
    resetBallBundles(bundles, bundleStart.back());
    for (std::size_t color = 0; color < colors.size(); ++color)
    {
        for (std::size_t i = 0; i < colors[color].size(); ++i)
        {
            bundles.lanes[(bundleStart[color] + i / W) * W + i % W] = colors[color][i];
        }
    }
    std::vector<JointConstraint> wideJoints = joints;
    for (std::uint32_t b = 0; b < bundles.count; ++b)
    {
        packBallBundle(bundles, b, wideJoints, motions);
    }
    const std::vector<SolverBody> initial = bodies;
    std::vector<SolverBody> wideBodies = bodies;
    for (int substep = 0; substep < 3; ++substep)
    {
        for (std::uint32_t b = 0; b < bundles.count; ++b)
        {
            warmStartBallBundle(bundles, b, wideBodies);
        }
        for (std::uint32_t b = 0; b < bundles.count; ++b)
        {
            solveBallBundle(bundles, b, wideBodies, motions, true);
        }
        for (const auto& color : colors)
        {
            for (const std::uint32_t k : color)
            {
                warmStartJoint(joints[k], bodies, motions);
            }
        }
        for (const auto& color : colors)
        {
            for (const std::uint32_t k : color)
            {
                solveJoint(joints[k], bodies, motions, 1.0f / h, true);
            }
        }
        // The poses move between the solve and the relax pass, as integratePositions moves them.
        for (std::size_t i = 1; i < motions.size(); ++i)
        {
            motions[i].center = motions[i].center + wideBodies[i].linearVelocity * h;
            motions[i].rotation = normalize(motions[i].rotation * Quat{0.01f, -0.02f, 0.015f, 1.0f});
        }
        for (std::uint32_t b = 0; b < bundles.count; ++b)
        {
            solveBallBundle(bundles, b, wideBodies, motions, false);
        }
        for (const auto& color : colors)
        {
            for (const std::uint32_t k : color)
            {
                solveJoint(joints[k], bodies, motions, 1.0f / h, false);
            }
        }
    }
    for (std::uint32_t b = 0; b < bundles.count; ++b)
    {
        unpackBallBundle(bundles, b, wideJoints);
    }
    INFO(joints.size() << " joints in " << bundles.count << " bundles");
    REQUIRE(joints.size() > 400);
    for (std::size_t i = 0; i < bodies.size(); ++i)
    {
        INFO("body " << i);
        REQUIRE(sameBits(&wideBodies[i].linearVelocity, &bodies[i].linearVelocity, sizeof(Vec3)));
        REQUIRE(sameBits(&wideBodies[i].angularVelocity, &bodies[i].angularVelocity, sizeof(Vec3)));
    }
    for (std::size_t k = 0; k < joints.size(); ++k)
    {
        INFO("joint " << k);
        REQUIRE(sameBits(&wideJoints[k].impulses.linear, &joints[k].impulses.linear, sizeof(Vec3)));
    }
    // The dummy was never written, and the solve did something.
    CHECK(sameBits(&wideBodies[0], &bodies[0], sizeof(SolverBody)));
    CHECK_FALSE(sameBits(&wideBodies[1].linearVelocity, &initial[1].linearVelocity, sizeof(Vec3)));
}

TEST_CASE("the wide position integrator gives the scalar integrator's bits", "[wide][solver]")
{
    std::mt19937 rng(4242);
    constexpr std::uint32_t kBodies = 203; // not a multiple of the lanes: a tail goes through the scalar code
    std::vector<SolverBody> bodies(kBodies);
    std::vector<SolverBodyMotion> motions(kBodies);
    for (std::uint32_t i = 1; i < kBodies; ++i)
    {
        bodies[i] = {randomVec(rng, 5.0f), randomVec(rng, 20.0f), randomVec(rng, 0.1f), randomVec(rng, 0.1f)};
        SolverBodyMotion& m = motions[i];
        m.center = randomVec(rng, 50.0f);
        m.rotation = randomRotation(rng);
        m.inertiaLocal =
            Mat3::diagonal({uniform(rng, 0.5f, 2.0f), uniform(rng, 0.5f, 2.0f), uniform(rng, 0.5f, 2.0f)});
        // Some gyroscopic bodies (their group of lanes goes through freeRotationStep), a rotation that
        // normalizes to the identity, and a body at rest.
        m.gyroscopic = i % 37 == 0;
        if (i == 50)
        {
            m.rotation = {0.0f, 0.0f, 0.0f, 0.0f};
            bodies[i].angularVelocity = {};
        }
        if (i == 51)
        {
            bodies[i].linearVelocity = {};
            bodies[i].angularVelocity = {};
        }
    }
    std::vector<SolverBody> wideBodies = bodies;
    std::vector<SolverBodyMotion> wideMotions = motions;
    const float h = 1.0f / 240.0f;
    for (int substep = 0; substep < 5; ++substep)
    {
        integratePositions(bodies, motions, 0, kBodies, h);
        integratePositionsWide(wideBodies, wideMotions, 0, kBodies, h);
        // A range that starts past the dummy and ends mid-group.
        integratePositions(bodies, motions, 3, 150, h);
        integratePositionsWide(wideBodies, wideMotions, 3, 150, h);
    }
    for (std::uint32_t i = 0; i < kBodies; ++i)
    {
        INFO("body " << i);
        REQUIRE(sameBits(&wideBodies[i], &bodies[i], sizeof(SolverBody)));
        REQUIRE(sameBits(&wideMotions[i].center, &motions[i].center, sizeof(Vec3)));
        REQUIRE(sameBits(&wideMotions[i].rotation, &motions[i].rotation, sizeof(Quat)));
    }
    CHECK(motions[50].rotation == Quat::identity());
}

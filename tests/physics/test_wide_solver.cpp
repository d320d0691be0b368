// The wide contact solver against the scalar one: the graph colouring keeps the bodies of a colour apart, and
// solving W constraints at once in SIMD lanes gives bit for bit what the scalar solver gives when it visits
// the constraints in the same (colour) order.
#include "polytope/physics/constraint_graph.h"
#include "polytope/physics/contact_solver.h"

#include "random_shapes.h"

#include <catch2/catch.hpp>

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
    ConstraintGraph graph;
    graph.reserve(p.bodies.size(), p.setups.size());
    graph.color(p.setups, p.bodies.size());
    REQUIRE(graph.colorStart[kGraphColorCount + 1] == p.setups.size());
    for (int color = 0; color < kGraphColorCount; ++color)
    {
        std::vector<int> seen(p.bodies.size(), 0);
        for (std::uint32_t k = graph.colorStart[color]; k < graph.colorStart[color + 1]; ++k)
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
        graph.color(wide.setups, wide.bodies.size());
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

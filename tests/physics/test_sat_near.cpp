// The local SAT search (satHullsNear) and the GJK/EPA-seeded polyhedron manifolds (collideHullHull,
// collideBoxHull, collideHullBox) against the exhaustive SAT (satHulls) and the manifolds built on it, on
// thousands of random pairs of hulls of 16 to 32 points: separated within and beyond the margin, shallow
// and deep. Also the hull adjacency that the local search walks.
#include "polytope/physics/collide.h"
#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/hull.h"
#include "polytope/physics/sat.h"
#include "polytope/physics/support.h"

#include "random_shapes.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <utility>
#include <vector>

using namespace polytope::physics;
using namespace physics_test;

namespace
{

/// The contact direction as collidePolyhedra finds it, through the public GJK/EPA API.
bool contactDirectionOf(const ConvexHull& a, const ConvexHull& b, const Transform& bInA, Vec3& direction)
{
    const PenetrationResult p = penetrationDepth(supportOf(a), transformed(supportOf(b), bInA), bInA.p);
    if (p.status == EpaStatus::Indeterminate)
    {
        return false;
    }
    direction = p.normal;
    return true;
}

} // namespace

TEST_CASE("hull adjacency: face edges follow the loops and vertex edges list each edge at both ends",
          "[satnear]")
{
    std::mt19937 rng(5150);
    for (int trial = 0; trial < 200; ++trial)
    {
        const ConvexHull hull = trial == 0 ? makeBoxHull({0.3f, 0.5f, 0.7f}) : randomCloudHull(rng, 16);
        REQUIRE(hull.faceEdges.size() == hull.faceVertices.size());
        REQUIRE(hull.vertexEdgeStart.size() == hull.vertices.size() + 1);
        REQUIRE(hull.vertexEdges.size() == 2 * hull.edges.size());
        REQUIRE(hull.vertexEdgeStart.front() == 0);
        REQUIRE(hull.vertexEdgeStart.back() == hull.vertexEdges.size());
        for (std::size_t f = 0; f < hull.faces.size(); ++f)
        {
            const HullFace& face = hull.faces[f];
            for (int k = 0; k < face.indexCount; ++k)
            {
                const int from = hull.faceVertices[face.firstIndex + k];
                const int to = hull.faceVertices[face.firstIndex + (k + 1) % face.indexCount];
                const HullEdge& e = hull.edges[hull.faceEdges[face.firstIndex + k]];
                // The edge joins the two loop vertices, and runs from -> to on face0 or to -> from on face1.
                const bool forward = e.v0 == from && e.v1 == to && e.face0 == f;
                const bool backward = e.v0 == to && e.v1 == from && e.face1 == f;
                REQUIRE((forward || backward));
            }
        }
        std::vector<int> seen(hull.edges.size(), 0);
        for (std::size_t v = 0; v < hull.vertices.size(); ++v)
        {
            REQUIRE(hull.vertexEdgeStart[v + 1] - hull.vertexEdgeStart[v] >= 3);
            for (int k = hull.vertexEdgeStart[v]; k < hull.vertexEdgeStart[v + 1]; ++k)
            {
                const HullEdge& e = hull.edges[hull.vertexEdges[k]];
                REQUIRE((e.v0 == v || e.v1 == v));
                ++seen[hull.vertexEdges[k]];
            }
        }
        REQUIRE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 2; }));
    }

    // A hand-made hull gets the same adjacency from buildHullAdjacency; a broken one is refused.
    ConvexHull box = makeBoxHull({1.0f, 2.0f, 3.0f});
    const ConvexHull reference = box;
    box.faceEdges.clear();
    box.vertexEdgeStart.clear();
    box.vertexEdges.clear();
    REQUIRE(viewOf(box).faceEdges == nullptr);
    REQUIRE_FALSE(hasAdjacency(viewOf(box)));
    REQUIRE(buildHullAdjacency(box));
    REQUIRE(box.faceEdges == reference.faceEdges);
    REQUIRE(box.vertexEdgeStart == reference.vertexEdgeStart);
    REQUIRE(box.vertexEdges == reference.vertexEdges);
    REQUIRE(hasAdjacency(viewOf(box)));
    box.edges.pop_back();
    REQUIRE_FALSE(buildHullAdjacency(box));
    REQUIRE(box.faceEdges.empty());
}

TEST_CASE("SAT near the EPA normal equals the exhaustive SAT on random hull pairs", "[satnear]")
{
    std::mt19937 rng(8086);
    int overlapping = 0;
    int sameChoice = 0;
    int edgeChoices = 0;
    int tiedDifferences = 0;
    const int trials = 3000;
    for (int trial = 0; trial < trials; ++trial)
    {
        const ConvexHull a = randomCloudHull(rng, 16);
        const ConvexHull b = randomCloudHull(rng, 16);
        Transform bInA;
        bInA.p = Vec3{uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f)} * 0.8f;
        bInA.q = randomRotation(rng);
        const float inf = std::numeric_limits<float>::infinity();
        const SatResult exhaustive = satHulls(viewOf(a), viewOf(b), bInA, inf);
        if (exhaustive.maxSeparation() >= 0.0f)
        {
            continue;
        }
        ++overlapping;
        Vec3 direction;
        REQUIRE(contactDirectionOf(a, b, bInA, direction));
        const SatResult near = satHullsNear(viewOf(a), viewOf(b), bInA, SatSearchHint{direction}, inf);
        INFO("trial " << trial << ": exhaustive " << exhaustive.maxSeparation() << " (feature "
                      << int(exhaustive.chosen.feature) << "), near " << near.maxSeparation() << " (feature "
                      << int(near.chosen.feature) << ")");
        INFO("faces A " << exhaustive.bestFaceA.indexA << " " << exhaustive.bestFaceA.separation << " / "
                        << near.bestFaceA.indexA << " " << near.bestFaceA.separation << "; faces B "
                        << exhaustive.bestFaceB.indexB << " " << exhaustive.bestFaceB.separation << " / "
                        << near.bestFaceB.indexB << " " << near.bestFaceB.separation << "; edges "
                        << exhaustive.bestEdge.separation << " / " << near.bestEdge.separation);
        REQUIRE_FALSE(near.separated);
        // Every separation is exact for its axis, so the local search can only miss: never deeper than the
        // exhaustive one, and it finds the least penetration.
        REQUIRE(near.maxSeparation() <= exhaustive.maxSeparation() + 1e-6f);
        REQUIRE(near.maxSeparation() == Approx(exhaustive.maxSeparation()).margin(1e-5));
        for (const SatAxis* axis : {&near.bestFaceA, &near.bestFaceB, &near.bestEdge})
        {
            if (axis->feature != SatFeature::None)
            {
                REQUIRE(std::fabs(length(axis->normal) - 1.0f) < 1e-5f);
            }
        }
        const bool same = near.chosen.feature == exhaustive.chosen.feature &&
                          near.chosen.indexA == exhaustive.chosen.indexA &&
                          near.chosen.indexB == exhaustive.chosen.indexB;
        if (same)
        {
            ++sameChoice;
            // Supports by descent may stop on a vertex that ties with the lowest within rounding.
            REQUIRE(near.chosen.separation == Approx(exhaustive.chosen.separation).margin(1e-6));
            REQUIRE(distance(near.chosen.normal, exhaustive.chosen.normal) <= 1e-6f);
        }
        else
        {
            // A different axis only among those that chooseContactAxis treats as tied: within its
            // hysteresis band (2% for B's face over A's, 5% for an edge, plus the absolute tolerance each
            // time) of the least penetration, like the exhaustive choice.
            ++tiedDifferences;
            const float best = exhaustive.maxSeparation();
            const float band = 0.08f * std::fabs(best) + 3.0f * kSatAbsoluteTolerance;
            REQUIRE(near.chosen.separation >= best - band);
            REQUIRE(exhaustive.chosen.separation >= best - band);
        }
        edgeChoices += near.chosen.feature == SatFeature::EdgePair ? 1 : 0;
    }
    INFO(overlapping << " overlapping, " << sameChoice << " same axis, " << tiedDifferences
                     << " different near a tie, " << edgeChoices << " edge-edge");
    CHECK(overlapping > trials / 3);
    CHECK(edgeChoices > 20);
    CHECK(sameChoice >= overlapping - overlapping / 50); // ties are rare: at most 2%
}

TEST_CASE("seeded hull manifolds match the exhaustive-SAT manifolds on random pairs", "[satnear]")
{
    std::mt19937 rng(1999);
    const float margin = 0.02f;
    int contacts = 0;
    int identical = 0;
    int separatedWithinMargin = 0;
    const int trials = 3000;
    for (int trial = 0; trial < trials; ++trial)
    {
        const ConvexHull a = randomCloudHull(rng, 16);
        const ConvexHull b = randomCloudHull(rng, 16);
        Transform bInA;
        bInA.p = Vec3{uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f)} * 0.9f;
        bInA.q = randomRotation(rng);
        const SatResult sat = satHulls(viewOf(a), viewOf(b), bInA, margin);
        const ContactManifold exhaustive = manifoldFromSat(viewOf(a), viewOf(b), bInA, sat, margin);
        const ContactManifold seeded = collideHullHull(a, b, bInA, margin);
        INFO("trial " << trial << ": exhaustive " << exhaustive.pointCount << " points, seeded "
                      << seeded.pointCount);
        if (exhaustive.pointCount == 0)
        {
            // Apart: the seeded path agrees, except at grazing contact where SAT and GJK decide within
            // rounding of each other.
            if (seeded.pointCount > 0)
            {
                REQUIRE(deepestSeparation(seeded) >= margin - 1e-4f);
            }
            continue;
        }
        ++contacts;
        separatedWithinMargin += sat.maxSeparation() > 0.0f ? 1 : 0;
        if (seeded.pointCount == 0)
        {
            Vec3 direction;
            const bool found = contactDirectionOf(a, b, bInA, direction);
            const SatResult near = satHullsNear(viewOf(a), viewOf(b), bInA, SatSearchHint{direction}, margin);
            INFO("direction found " << found << " near sep " << near.maxSeparation() << " chosen "
                                    << int(near.chosen.feature) << " " << near.chosen.separation
                                    << " exhaustive chosen " << int(sat.chosen.feature) << " "
                                    << sat.chosen.separation);
            REQUIRE(deepestSeparation(exhaustive) >= margin - 1e-4f);
            continue;
        }
        REQUIRE(std::fabs(length(seeded.normal) - 1.0f) < 1e-5f);
        const float depthTolerance = 0.08f * std::fabs(sat.maxSeparation()) + 2e-3f;
        REQUIRE(deepestSeparation(seeded) == Approx(deepestSeparation(exhaustive)).margin(depthTolerance));
        bool same = seeded.pointCount == exhaustive.pointCount && seeded.normal == exhaustive.normal;
        for (int i = 0; same && i < seeded.pointCount; ++i)
        {
            same = seeded.points[i].featureId == exhaustive.points[i].featureId &&
                   seeded.points[i].separation == exhaustive.points[i].separation;
        }
        identical += same ? 1 : 0;
    }
    INFO(contacts << " contacts, " << identical << " identical, " << separatedWithinMargin
                  << " apart but within the margin");
    CHECK(contacts > trials / 3);
    CHECK(separatedWithinMargin > 10);
    CHECK(identical >= contacts - contacts / 50);
}

TEST_CASE("seeded box-hull and hull-box manifolds match the exhaustive-SAT manifolds", "[satnear]")
{
    std::mt19937 rng(64);
    const float margin = 0.01f;
    int contacts = 0;
    int identical = 0;
    for (int trial = 0; trial < 2000; ++trial)
    {
        const BoxShape box{{uniform(rng, 0.1f, 1.0f), uniform(rng, 0.1f, 1.0f), uniform(rng, 0.1f, 1.0f)}};
        const ConvexHull hull = randomCloudHull(rng, 16);
        Transform bInA;
        bInA.p = Vec3{uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f)} * 1.2f;
        bInA.q = randomRotation(rng);
        const BoxAsHull boxView = boxAsHull(box);
        for (const bool boxIsA : {true, false})
        {
            const HullView a = boxIsA ? boxView.view() : viewOf(hull);
            const HullView b = boxIsA ? viewOf(hull) : boxView.view();
            const ContactManifold exhaustive =
                manifoldFromSat(a, b, bInA, satHulls(a, b, bInA, margin), margin);
            const ContactManifold seeded =
                boxIsA ? collideBoxHull(box, hull, bInA, margin) : collideHullBox(hull, box, bInA, margin);
            INFO("trial " << trial << (boxIsA ? " box-hull" : " hull-box"));
            if (exhaustive.pointCount == 0 || seeded.pointCount == 0)
            {
                REQUIRE(exhaustive.pointCount + seeded.pointCount ==
                        std::max(exhaustive.pointCount, seeded.pointCount));
                const ContactManifold& some = exhaustive.pointCount > 0 ? exhaustive : seeded;
                if (some.pointCount > 0)
                {
                    REQUIRE(deepestSeparation(some) >= margin - 1e-4f);
                }
                continue;
            }
            ++contacts;
            const SatResult sat = satHulls(a, b, bInA, margin);
            INFO("exhaustive: feature " << int(sat.chosen.feature) << " sep " << sat.chosen.separation
                                        << " max " << sat.maxSeparation() << "; seeded normal "
                                        << seeded.normal.x << " " << seeded.normal.y << " " << seeded.normal.z
                                        << " kind " << int(featureKind(seeded.points[0].featureId)));
            REQUIRE(deepestSeparation(seeded) ==
                    Approx(deepestSeparation(exhaustive))
                        .margin(0.08f * std::fabs(deepestSeparation(exhaustive)) + 2e-3f));
            bool same = seeded.pointCount == exhaustive.pointCount && seeded.normal == exhaustive.normal;
            for (int i = 0; same && i < seeded.pointCount; ++i)
            {
                same = seeded.points[i].featureId == exhaustive.points[i].featureId;
            }
            identical += same ? 1 : 0;
        }
    }
    INFO(contacts << " contacts, " << identical << " identical");
    CHECK(contacts > 1000);
    CHECK(identical >= contacts - contacts / 50);
}

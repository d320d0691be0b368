// Hull-hull manifolds against the penetration depth of EPA (penetrationDepth) on random overlapping pairs:
// neither the deepest point nor the overlap along the normal may exceed what chooseContactAxis's face bias
// allows over the least penetration, also when clipping the chosen face leaves nothing and another axis,
// or the deepest incident vertex, takes its place (manifoldFromSat).
#include "polytope/physics/collide.h"
#include "polytope/physics/epa.h"
#include "polytope/physics/hull.h"
#include "polytope/physics/sat.h"
#include "polytope/physics/support.h"

#include "random_shapes.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace polytope::physics;
using namespace physics_test;

namespace
{

/// A pool of random hulls, built once: the pairs below draw two of them and a random pose, so that the
/// 100,000 pairs cost contact queries rather than hull builds.
const std::vector<ConvexHull>& hullPool()
{
    static const std::vector<ConvexHull> pool = []
    {
        std::mt19937 rng(16);
        std::vector<ConvexHull> hulls;
        for (int i = 0; i < 400; ++i)
        {
            hulls.push_back(randomCloudHull(rng, 8));
        }
        return hulls;
    }();
    return pool;
}

struct HullPair
{
    const ConvexHull* a;
    const ConvexHull* b;
    Transform bInA;
};

HullPair randomPair(std::mt19937& rng)
{
    const std::vector<ConvexHull>& pool = hullPool();
    std::uniform_int_distribution<int> pick(0, static_cast<int>(pool.size()) - 1);
    HullPair pair;
    pair.a = &pool[pick(rng)];
    pair.b = &pool[pick(rng)];
    pair.bInA.p =
        Vec3{uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f), uniform(rng, -1.0f, 1.0f)} * 0.9f;
    pair.bInA.q = randomRotation(rng);
    return pair;
}

/// The deepest a manifold may be when the least penetration is `depth` (metres): chooseContactAxis keeps
/// A's face over a better face of B, and a face over a better edge pair, each by its relative tolerance plus
/// kSatAbsoluteTolerance, which compounds to depth / (0.98 * 0.95) + 1.05 mm.
double faceBiasBound(double depth)
{
    const double face = kSatFaceRelativeTolerance;
    const double edge = kSatEdgeRelativeTolerance;
    const double absolute = kSatAbsoluteTolerance;
    return depth / (face * edge) + absolute / (face * edge) + absolute / face;
}

/// Float rounding of separations on shapes of about a metre (metres).
constexpr double kRoundingSlack = 1e-5;

/// How far the two hulls overlap along `normal` (A's frame, from A towards B), in double.
double overlapAlong(const ConvexHull& a, const ConvexHull& b, const Transform& bInA, const Vec3& normal)
{
    double highestA = -std::numeric_limits<double>::infinity();
    double lowestB = std::numeric_limits<double>::infinity();
    for (const Vec3& v : a.vertices)
    {
        highestA =
            std::max(highestA, double(normal.x) * v.x + double(normal.y) * v.y + double(normal.z) * v.z);
    }
    for (const Vec3& v : b.vertices)
    {
        const Vec3 x = transformPoint(bInA, v);
        lowestB = std::min(lowestB, double(normal.x) * x.x + double(normal.y) * x.y + double(normal.z) * x.z);
    }
    return highestA - lowestB;
}

/// Tally of manifolds against the face-bias bound.
struct BoundCheck
{
    int overlapping = 0;
    int empty = 0;      ///< overlapping pairs that got no contact
    int violations = 0; ///< deepest point or overlap along the normal beyond the bound
    int firstViolation = -1;
    double worstRatio = 0.0; ///< of the manifold's depth to the least penetration, over depths above 1 mm
    double worstExcess = -std::numeric_limits<double>::infinity(); ///< metres beyond the bound

    void add(int trial, const ConvexHull& a, const ConvexHull& b, const Transform& bInA, double depth,
             const ContactManifold& m)
    {
        ++overlapping;
        if (m.pointCount == 0)
        {
            ++empty;
            firstViolation = firstViolation < 0 ? trial : firstViolation;
            return;
        }
        const double manifoldDepth =
            std::max(-double(deepestSeparation(m)), overlapAlong(a, b, bInA, m.normal));
        const double excess = manifoldDepth - faceBiasBound(depth);
        worstExcess = std::max(worstExcess, excess);
        if (depth > 1e-3)
        {
            worstRatio = std::max(worstRatio, manifoldDepth / depth);
        }
        if (excess > kRoundingSlack)
        {
            ++violations;
            firstViolation = firstViolation < 0 ? trial : firstViolation;
        }
    }
};

/// The least penetration of an overlapping pair by EPA, rounded up by its error bound; false when EPA does
/// not report Colliding.
bool leastPenetration(const HullPair& pair, double& depth)
{
    const PenetrationResult p =
        penetrationDepth(supportOf(*pair.a), transformed(supportOf(*pair.b), pair.bInA), pair.bInA.p);
    depth = double(p.depth) + double(p.depthErrorBound);
    return p.status == EpaStatus::Colliding;
}

} // namespace

TEST_CASE("hull-hull manifolds stay within the face-bias bound of EPA's depth on 100,000 random pairs",
          "[manifold][hullbound]")
{
    // Before incidentFaceOf and the nearly-as-good rule, 79 of the overlapping pairs here got a manifold up
    // to 9 times deeper than the least penetration (10 cm beyond the bound): the incident face missed the
    // deepest vertex, so clipping left nothing, and the best edge pair replaced the face whatever its depth.
    std::mt19937 rng(20250516);
    const float margin = 0.02f;
    BoundCheck check;
    const int trials = 100000;
    for (int trial = 0; trial < trials; ++trial)
    {
        const HullPair pair = randomPair(rng);
        double depth = 0.0;
        if (!leastPenetration(pair, depth))
        {
            continue;
        }
        check.add(trial, *pair.a, *pair.b, pair.bInA, depth,
                  collideHullHull(*pair.a, *pair.b, pair.bInA, margin));
    }
    INFO(check.overlapping << " overlapping of " << trials << "; " << check.empty << " without contact, "
                           << check.violations << " beyond the bound (first at trial " << check.firstViolation
                           << "); worst ratio to the depth " << check.worstRatio << ", worst excess "
                           << check.worstExcess << " m");
    CHECK(check.overlapping > trials / 3);
    REQUIRE(check.empty == 0);
    REQUIRE(check.violations == 0);
}

TEST_CASE("manifoldFromSat: a face that clips to nothing gives way only to a nearly-as-good axis",
          "[manifold][hullbound]")
{
    std::mt19937 rng(1606);
    const float margin = 0.02f;
    BoundCheck check;
    BoundCheck lastResort;
    int replaced = 0;
    const int trials = 20000;
    for (int trial = 0; trial < trials; ++trial)
    {
        const HullPair pair = randomPair(rng);
        double depth = 0.0;
        if (!leastPenetration(pair, depth))
        {
            continue;
        }
        const HullView a = viewOf(*pair.a);
        const HullView b = viewOf(*pair.b);
        const SatResult sat = satHulls(a, b, pair.bInA, margin);
        const ContactManifold m = manifoldFromSat(a, b, pair.bInA, sat, margin);
        check.add(trial, *pair.a, *pair.b, pair.bInA, depth, m);
        if (sat.chosen.feature == SatFeature::EdgePair || m.pointCount == 0)
        {
            continue;
        }
        const ContactFeatureKind chosenKind = sat.chosen.feature == SatFeature::FaceOfA
                                                  ? ContactFeatureKind::FaceOfA
                                                  : ContactFeatureKind::FaceOfB;
        const std::uint32_t chosenFace = static_cast<std::uint32_t>(
            sat.chosen.feature == SatFeature::FaceOfA ? sat.chosen.indexA : sat.chosen.indexB);
        const std::uint32_t id = m.points[0].featureId;
        if (featureKind(id) == chosenKind && ((id >> 20) & 0x3FFu) == chosenFace)
        {
            continue; // clipping on the chosen face kept points
        }
        // Clipping left nothing and another axis replaced the face. Without the other axes, the one point is
        // the deepest incident vertex, at the chosen axis's own separation, on the incident shape.
        ++replaced;
        SatResult alone = sat;
        alone.bestFaceA = sat.chosen;
        alone.bestFaceB = SatAxis{};
        alone.bestEdge = SatAxis{};
        if (sat.chosen.feature == SatFeature::FaceOfB)
        {
            alone.bestFaceA = SatAxis{};
            alone.bestFaceB = sat.chosen;
        }
        const ContactManifold vertex = manifoldFromSat(a, b, pair.bInA, alone, margin);
        INFO("trial " << trial);
        REQUIRE(vertex.pointCount == 1);
        REQUIRE(featureKind(vertex.points[0].featureId) == chosenKind);
        REQUIRE(vertex.points[0].separation == Approx(sat.chosen.separation).margin(1e-5));
        REQUIRE(distance(vertex.normal, sat.chosen.normal) < 1e-5f);
        const ContactPoint& p = vertex.points[0];
        REQUIRE(p.separation == Approx(dot(p.pointB - p.pointA, vertex.normal)).margin(1e-5));
        lastResort.add(trial, *pair.a, *pair.b, pair.bInA, depth, vertex);
    }
    INFO(check.overlapping << " overlapping of " << trials << "; " << check.empty << " without contact, "
                           << check.violations << " beyond the bound (first at trial " << check.firstViolation
                           << "); worst ratio " << check.worstRatio << "; " << replaced
                           << " faces replaced after clipping left nothing, their last resort "
                           << lastResort.violations << " beyond the bound");
    CHECK(check.overlapping > trials / 3);
    CHECK(replaced > 20);
    REQUIRE(check.empty == 0);
    REQUIRE(check.violations == 0);
    REQUIRE(lastResort.empty == 0);
    REQUIRE(lastResort.violations == 0);
}

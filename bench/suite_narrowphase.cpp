// Suite "narrowphase": random box-box and hull-hull pairs (hulls of 16 to 32 points), fixed seeds, split into
// separated, shallow and deep; for each query the ns per query of Polytope, libccd and Bullet in the same
// run, and each one's accuracy against the exact answer (minkowski_oracle.h).
//
// Box-box pairs also come resting (box-box/resting): two unit cubes, one on the other's top face with a
// little slide and twist, about 1 cm deep; the face contact with 4 points a stacked scene is made of.
//
// Queries and who answers them:
//   boolean      polytope (GJK), libccd-gjk (ccdGJKIntersect), libccd-mpr (ccdMPRIntersect),
//                bullet (btGjkEpaSolver2::Distance reports overlap)
//   distance     polytope (GJK closest points), bullet (btGjkEpaSolver2::Distance); separated pairs only
//   penetration  polytope (GJK+EPA), polytope-sat (SAT: 15 axes for boxes, Gauss-map pruned for hulls),
//                libccd-gjk (ccdGJKPenetration),
//                libccd-mpr (ccdMPRPenetration), bullet (btGjkEpaSolver2::Penetration); overlapping pairs
//   manifold     polytope (SAT + clipping: collideBoxBox / collideHullHull); depth = deepest point
//
// Figures: ns_median (median over passes of the mean time per query), failures (a wrong yes/no answer, a
// failure status, or a non-finite number), rel_err_median / rel_err_p99 / rel_err_max (|x - exact| / exact
// of the depth or distance), size_rel_err_median / size_rel_err_p99 / size_rel_err_max (|x - exact| over the
// sum of the two shapes' bounding radii, so that shallow depths do not inflate it), epa_iterations_mean
// (polytope penetration) and points_mean (manifold: contact points per pair). Timing: one warm-up pass, then
// five; the warm-up pass's answers are checked.
#include "bench_common.h"
#include "narrowphase_cases.h"
#include "peers.h"

#include "polytope/physics/collide.h"
#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/hull.h"
#include "polytope/physics/sat.h"
#include "polytope/physics/support.h"

#include <cmath>
#include <functional>
#include <memory>
#include <optional>

namespace polytope::bench
{
namespace
{
namespace ph = polytope::physics;

/// What one query on one pair produced, for the accuracy check.
struct Answer
{
    bool ok = true; ///< no failure status
    bool overlapping = false;
    double value = 0.0; ///< depth when overlapping, distance when apart (as the query reports)
    bool hasValue = false;
    double count = 0.0; ///< what the query counts, if it counts something (Query::countFigure)
};

/// A pair prepared for Polytope: shapes and transforms as the engine holds them.
struct PolytopePair
{
    bool isBox = true;
    ph::BoxShape boxA, boxB;
    ph::ConvexHull hullA, hullB;
    ph::Transform xfA, xfB;
};

PolytopePair prepare(const ConvexPair& pair)
{
    PolytopePair p;
    p.isBox = pair.a.isBox;
    auto toVec = [](const Float3& f) { return ph::Vec3{f.x, f.y, f.z}; };
    p.xfA = {toVec(pair.positionA), {pair.rotationA.x, pair.rotationA.y, pair.rotationA.z, pair.rotationA.w}};
    p.xfB = {toVec(pair.positionB), {pair.rotationB.x, pair.rotationB.y, pair.rotationB.z, pair.rotationB.w}};
    if (p.isBox)
    {
        p.boxA.halfExtents = toVec(pair.a.halfExtents);
        p.boxB.halfExtents = toVec(pair.b.halfExtents);
    }
    else
    {
        auto build = [&](const ConvexShapeData& s)
        {
            std::vector<ph::Vec3> points;
            for (const Float3& f : s.points)
            {
                points.push_back(toVec(f));
            }
            return ph::buildConvexHull(points).hull;
        };
        p.hullA = build(pair.a);
        p.hullB = build(pair.b);
    }
    return p;
}

template <class Fn> Answer withSupports(const PolytopePair& p, Fn&& fn)
{
    const ph::Transform bInA = ph::relativeTransform(p.xfA, p.xfB);
    if (p.isBox)
    {
        return fn(ph::supportOf(p.boxA), ph::transformed(ph::supportOf(p.boxB), bInA), bInA);
    }
    return fn(ph::supportOf(p.hullA), ph::transformed(ph::supportOf(p.hullB), bInA), bInA);
}

struct Query
{
    std::string name;
    std::string impl;
    bool onSeparated = true; ///< run on separated pairs
    bool onOverlapping = true;
    std::function<Answer(std::size_t)> run;
    const char* countFigure = nullptr; ///< when set, the mean of Answer::count is reported under this name
};

void evaluate(Report& report, const std::string& caseName, const std::vector<ConvexPair>& pairs,
              const Query& query)
{
    const bool separatedCase = !pairs.empty() && pairs.front().pairClass == PairClass::Separated;
    if ((separatedCase && !query.onSeparated) || (!separatedCase && !query.onOverlapping))
    {
        return;
    }
    const std::size_t n = pairs.size();
    std::vector<double> errors;
    std::vector<double> sizeErrors;
    errors.reserve(n);
    sizeErrors.reserve(n);
    std::int64_t failures = 0;
    double counted = 0.0;
    // Warm-up pass, checked.
    for (std::size_t i = 0; i < n; ++i)
    {
        const Answer a = query.run(i);
        counted += a.count;
        const ExactAnswer& exact = pairs[i].exact;
        if (!a.ok || a.overlapping != exact.overlapping || (a.hasValue && !std::isfinite(a.value)))
        {
            ++failures;
            continue;
        }
        if (a.hasValue)
        {
            const double truth = exact.overlapping ? exact.depth : exact.distance;
            const double error = std::fabs(a.value - truth);
            errors.push_back(error / truth);
            sizeErrors.push_back(error /
                                 (double(pairs[i].a.boundingRadius) + double(pairs[i].b.boundingRadius)));
        }
    }
    // Timed passes.
    std::vector<double> nsPerQuery;
    volatile double sink = 0.0;
    for (int pass = 0; pass < 5; ++pass)
    {
        const auto start = Clock::now();
        for (std::size_t i = 0; i < n; ++i)
        {
            sink = sink + query.run(i).value;
        }
        nsPerQuery.push_back(secondsSince(start) * 1e9 / static_cast<double>(n));
    }
    Record& r = report.add(caseName + "/" + query.name, query.impl, static_cast<std::int64_t>(n));
    r.add("ns_median", median(nsPerQuery)).add("failures", static_cast<double>(failures));
    if (!errors.empty())
    {
        r.add("rel_err_median", quantile(errors, 0.5))
            .add("rel_err_p99", quantile(errors, 0.99))
            .add("rel_err_max", quantile(errors, 1.0))
            .add("size_rel_err_median", quantile(sizeErrors, 0.5))
            .add("size_rel_err_p99", quantile(sizeErrors, 0.99))
            .add("size_rel_err_max", quantile(sizeErrors, 1.0));
    }
    if (query.countFigure != nullptr)
    {
        r.add(query.countFigure, counted / static_cast<double>(n));
    }
}

void runPairs(Report& report, const std::string& caseName, const std::vector<ConvexPair>& pairs)
{
    std::vector<PolytopePair> mine;
    std::vector<std::unique_ptr<CcdPeer>> ccd;
    std::vector<std::unique_ptr<BulletPeer>> bullet;
    for (const ConvexPair& pair : pairs)
    {
        mine.push_back(prepare(pair));
        ccd.push_back(std::make_unique<CcdPeer>(pair));
        bullet.push_back(std::make_unique<BulletPeer>(pair));
    }

    std::vector<Query> queries;
    // boolean
    queries.push_back({"boolean", "polytope", true, true,
                       [&](std::size_t i)
                       {
                           return withSupports(mine[i],
                                               [](const auto& a, const auto& b, const ph::Transform& bInA)
                                               {
                                                   Answer r;
                                                   r.overlapping = ph::gjkIntersect(a, b, bInA.p);
                                                   return r;
                                               });
                       }});
    queries.push_back({"boolean", "libccd-gjk", true, true,
                       [&](std::size_t i)
                       {
                           Answer r;
                           r.overlapping = ccd[i]->gjkIntersect();
                           return r;
                       }});
    queries.push_back({"boolean", "libccd-mpr", true, true,
                       [&](std::size_t i)
                       {
                           Answer r;
                           r.overlapping = ccd[i]->mprIntersect();
                           return r;
                       }});
    queries.push_back({"boolean", "bullet", true, true,
                       [&](std::size_t i)
                       {
                           Answer r;
                           r.overlapping = bullet[i]->distance().overlapping;
                           return r;
                       }});
    // distance (separated pairs)
    queries.push_back({"distance", "polytope", true, false,
                       [&](std::size_t i)
                       {
                           return withSupports(mine[i],
                                               [](const auto& a, const auto& b, const ph::Transform& bInA)
                                               {
                                                   const ph::GjkResult g = ph::gjkClosestPoints(a, b, bInA.p);
                                                   Answer r;
                                                   r.ok = g.status != ph::GjkStatus::Indeterminate;
                                                   r.overlapping = g.status == ph::GjkStatus::Intersecting;
                                                   r.value = g.distance;
                                                   r.hasValue = !r.overlapping;
                                                   return r;
                                               });
                       }});
    queries.push_back({"distance", "bullet", true, false,
                       [&](std::size_t i)
                       {
                           const PeerResult p = bullet[i]->distance();
                           return Answer{p.ok, p.overlapping, p.distance, !p.overlapping};
                       }});
    // penetration (overlapping pairs)
    queries.push_back({"penetration", "polytope", false, true,
                       [&](std::size_t i)
                       {
                           return withSupports(mine[i],
                                               [](const auto& a, const auto& b, const ph::Transform& bInA)
                                               {
                                                   const ph::PenetrationResult e =
                                                       ph::penetrationDepth(a, b, bInA.p);
                                                   Answer r;
                                                   r.ok = e.status != ph::EpaStatus::Indeterminate;
                                                   r.overlapping = e.status == ph::EpaStatus::Colliding;
                                                   r.value = r.overlapping ? e.depth : e.distance;
                                                   r.hasValue = true;
                                                   r.count = e.epaIterations;
                                                   return r;
                                               });
                       },
                       "epa_iterations_mean"});
    queries.push_back({"penetration", "polytope-sat", false, true,
                       [&](std::size_t i)
                       {
                           const PolytopePair& p = mine[i];
                           const ph::Transform bInA = ph::relativeTransform(p.xfA, p.xfB);
                           const ph::SatResult sat =
                               p.isBox ? ph::satBoxes(p.boxA, p.boxB, bInA, 0.0f)
                                       : ph::satHulls(ph::viewOf(p.hullA), ph::viewOf(p.hullB), bInA, 0.0f);
                           const double separation = sat.maxSeparation();
                           Answer r;
                           r.overlapping = !sat.separated;
                           r.value = -separation;
                           r.hasValue = r.overlapping;
                           return r;
                       }});
    queries.push_back({"penetration", "libccd-gjk", false, true,
                       [&](std::size_t i)
                       {
                           const PeerResult p = ccd[i]->gjkPenetration();
                           return Answer{true, p.overlapping, p.depth, p.overlapping};
                       }});
    queries.push_back({"penetration", "libccd-mpr", false, true,
                       [&](std::size_t i)
                       {
                           const PeerResult p = ccd[i]->mprPenetration();
                           return Answer{true, p.overlapping, p.depth, p.overlapping};
                       }});
    queries.push_back({"penetration", "bullet", false, true,
                       [&](std::size_t i)
                       {
                           const PeerResult p = bullet[i]->penetration();
                           return Answer{p.ok, p.overlapping, p.overlapping ? p.depth : p.distance, true};
                       }});
    // manifold (SAT + clipping), every class: a manifold with points means contact within the margin.
    queries.push_back({"manifold", "polytope", true, true,
                       [&](std::size_t i)
                       {
                           const PolytopePair& p = mine[i];
                           const ph::Transform bInA = ph::relativeTransform(p.xfA, p.xfB);
                           const ph::ContactManifold m =
                               p.isBox ? ph::collideBoxBox(p.boxA, p.boxB, bInA, 0.0f)
                                       : ph::collideHullHull(p.hullA, p.hullB, bInA, 0.0f);
                           Answer r;
                           r.overlapping = m.pointCount > 0;
                           r.count = m.pointCount;
                           if (r.overlapping)
                           {
                               float deepest = 0.0f;
                               for (int k = 0; k < m.pointCount; ++k)
                               {
                                   deepest = std::min(deepest, m.points[k].separation);
                               }
                               r.value = -deepest;
                               r.hasValue = true;
                           }
                           return r;
                       },
                       "points_mean"});
    for (const Query& q : queries)
    {
        evaluate(report, caseName, pairs, q);
    }
}

} // namespace

void runNarrowphaseSuite(Report& report, const SuiteOptions& options)
{
    const int count = options.count > 0 ? static_cast<int>(options.count) : 2000;
    for (bool boxes : {true, false})
    {
        for (PairClass c : {PairClass::Separated, PairClass::Shallow, PairClass::Deep})
        {
            runPairs(report, std::string(boxes ? "box-box/" : "hull-hull/") + pairClassName(c),
                     makePairs(boxes, c, count, options.seed));
        }
    }
    runPairs(report, "box-box/resting", makeRestingPairs(count, options.seed));
}

} // namespace polytope::bench

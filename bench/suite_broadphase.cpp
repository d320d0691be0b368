// Suite "broadphase": the BroadphaseTree alone (no World) under moving boxes, 1000 and 4000 proxies.
//
// Boxes with half extents 0.25 .. 0.5 m start at random in a cube of side 2 cbrt(n) m (a few neighbours
// each) with velocities up to 3 m/s per axis, and bounce off its walls; 120 steps at 60 Hz. Each step moves
// every proxy as the World does (support/fat_box_motion.h: FatBoxPolicy, displacement ahead x2), then calls
// findNewPairs, then findAllPairs.
//
// Figures per size: ms_per_step_move, ms_per_step_find_new_pairs, ms_per_step_find_all_pairs (means),
// reinsertions_per_step (proxies whose fat box was replaced), new_pairs_per_step, pairs_per_step, and after
// the run tree_height, area_ratio and failures (1 when the tree fails validate() or the last findAllPairs
// differs from a brute-force scan of the fat boxes). --seed S picks the scene.
#include "bench_common.h"

#include "polytope/physics/broadphase.h"

#include "support/fat_box_motion.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace polytope::bench
{
namespace
{
namespace ph = polytope::physics;

constexpr float kDt = 1.0f / 60.0f;
constexpr int kSteps = 120;

ph::Vec3 randomPoint(std::mt19937& rng, float lo, float hi)
{
    std::uniform_real_distribution<float> u(lo, hi);
    return {u(rng), u(rng), u(rng)}; // a braced list runs its calls left to right
}

/// Every pair of overlapping fat boxes by an O(n^2) scan, sorted as the tree reports them.
std::vector<ph::BroadphasePair> bruteForcePairs(const ph::BroadphaseTree& tree,
                                                const std::vector<std::int32_t>& ids)
{
    std::vector<ph::BroadphasePair> out;
    for (std::size_t i = 0; i < ids.size(); ++i)
    {
        for (std::size_t j = i + 1; j < ids.size(); ++j)
        {
            if (tree.fatBox(ids[i]).overlaps(tree.fatBox(ids[j])))
            {
                out.push_back({std::min(ids[i], ids[j]), std::max(ids[i], ids[j])});
            }
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

void runSize(Report& report, int count, std::uint64_t seed)
{
    std::mt19937 rng(static_cast<std::uint32_t>(seed * 1234));
    const float side = 2.0f * std::cbrt(static_cast<float>(count)); // ~ a few neighbours per box
    ph::BroadphaseTree tree;
    const ph::FatBoxPolicy policy;
    std::vector<std::int32_t> ids;
    std::vector<ph::Aabb> boxes;
    std::vector<ph::Vec3> velocities;
    for (int i = 0; i < count; ++i)
    {
        const ph::Vec3 c = randomPoint(rng, 0.0f, side);
        const ph::Vec3 h = randomPoint(rng, 0.25f, 0.5f);
        boxes.push_back({c - h, c + h});
        velocities.push_back(randomPoint(rng, -3.0f, 3.0f));
        ids.push_back(tree.createProxy(policy.fatBox(boxes.back(), {}), 0));
    }
    std::vector<ph::BroadphasePair> pairs;
    tree.findNewPairs(pairs);

    double moveSeconds = 0.0;
    double newPairSeconds = 0.0;
    double allPairSeconds = 0.0;
    std::size_t newPairs = 0;
    std::size_t allPairs = 0;
    std::size_t reinserted = 0;
    for (int step = 0; step < kSteps; ++step)
    {
        const auto t0 = Clock::now();
        for (std::size_t i = 0; i < boxes.size(); ++i)
        {
            ph::Vec3& v = velocities[i];
            ph::Aabb& b = boxes[i];
            for (int axis = 0; axis < 3; ++axis)
            {
                if ((b.min[axis] < 0.0f && v[axis] < 0.0f) || (b.max[axis] > side && v[axis] > 0.0f))
                {
                    v[axis] = -v[axis];
                }
            }
            b.min += v * kDt;
            b.max += v * kDt;
            reinserted +=
                test::moveWithPolicy(tree, policy, ids[i], b, v * kDt * test::kDisplacementScale) ? 1 : 0;
        }
        moveSeconds += secondsSince(t0);
        const auto t1 = Clock::now();
        tree.findNewPairs(pairs);
        newPairSeconds += secondsSince(t1);
        newPairs += pairs.size();
        const auto t2 = Clock::now();
        tree.findAllPairs(pairs);
        allPairSeconds += secondsSince(t2);
        allPairs += pairs.size();
    }
    const bool correct = tree.validate() && pairs == bruteForcePairs(tree, ids);
    const auto perStep = [](double total) { return total / kSteps; };
    report.add("moving-boxes", "polytope", count)
        .add("ms_per_step_move", perStep(1e3 * moveSeconds))
        .add("ms_per_step_find_new_pairs", perStep(1e3 * newPairSeconds))
        .add("ms_per_step_find_all_pairs", perStep(1e3 * allPairSeconds))
        .add("reinsertions_per_step", perStep(static_cast<double>(reinserted)))
        .add("new_pairs_per_step", perStep(static_cast<double>(newPairs)))
        .add("pairs_per_step", perStep(static_cast<double>(allPairs)))
        .add("tree_height", static_cast<double>(tree.height()))
        .add("area_ratio", static_cast<double>(tree.areaRatio()))
        .add("failures", correct ? 0.0 : 1.0);
}

} // namespace

void runBroadphaseSuite(Report& report, const SuiteOptions& options)
{
    for (const int count : {1000, 4000})
    {
        runSize(report, count, options.seed);
    }
}

} // namespace polytope::bench

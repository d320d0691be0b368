// The broadphase tree against brute force: every pair list, query and ray cast is compared with an O(n^2)
// scan of a reference copy of the fat boxes, which the test builds from the documented rules on its own.
#include "polytope/physics/broadphase.h"

#include "support/fat_box_motion.h"

#include "random_shapes.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

using namespace polytope::physics;
using namespace physics_test;
using polytope::test::kDisplacementScale;
using polytope::test::moveWithPolicy;

namespace
{

// ---- independent reference ------------------------------------------------------------------------------

bool boxesTouch(const Aabb& a, const Aabb& b)
{
    return a.min.x <= b.max.x && b.min.x <= a.max.x && a.min.y <= b.max.y && b.min.y <= a.max.y &&
           a.min.z <= b.max.z && b.min.z <= a.max.z;
}

bool sameBox(const Aabb& a, const Aabb& b)
{
    return a.min == b.min && a.max == b.max;
}

bool boxInside(const Aabb& inner, const Aabb& outer)
{
    for (int axis = 0; axis < 3; ++axis)
    {
        if (inner.min[axis] < outer.min[axis] || inner.max[axis] > outer.max[axis])
        {
            return false;
        }
    }
    return true;
}

Aabb expanded(const Aabb& box, float meters)
{
    Aabb out = box;
    for (int axis = 0; axis < 3; ++axis)
    {
        out.min[axis] -= meters;
        out.max[axis] += meters;
    }
    return out;
}

/// The fat box FatBoxPolicy documents: tight + margin, stretched along displacement * kDisplacementScale.
Aabb expectedFatBox(const Aabb& tight, const Vec3& displacement, const FatBoxPolicy& policy)
{
    Aabb out = expanded(tight, policy.marginMeters);
    for (int axis = 0; axis < 3; ++axis)
    {
        const float reach = displacement[axis] * kDisplacementScale;
        if (reach < 0.0f)
        {
            out.min[axis] += reach;
        }
        else
        {
            out.max[axis] += reach;
        }
    }
    return out;
}

/// Slab test by division; returns whether origin + t * translation, t in [0, maxT], meets the closed box,
/// and the entry parameter.
bool segmentHitsBox(const Vec3& origin, const Vec3& translation, float maxT, const Aabb& box, float& entry)
{
    float lo = 0.0f;
    float hi = maxT;
    for (int axis = 0; axis < 3; ++axis)
    {
        const float d = translation[axis];
        if (d == 0.0f)
        {
            if (origin[axis] < box.min[axis] || origin[axis] > box.max[axis])
            {
                return false;
            }
            continue;
        }
        const float a = (box.min[axis] - origin[axis]) / d;
        const float b = (box.max[axis] - origin[axis]) / d;
        lo = std::max(lo, std::min(a, b));
        hi = std::min(hi, std::max(a, b));
    }
    entry = lo;
    return lo <= hi;
}

struct ReferenceProxy
{
    Aabb tight{};
    Aabb fat{};
    std::uint64_t userData = 0;
    std::uint32_t group = 0; ///< 0: none; proxies sharing a non-zero group never pair
};

using Reference = std::map<std::int32_t, ReferenceProxy>; // ordered by id

std::vector<BroadphasePair> bruteForcePairs(const Reference& reference, const std::set<std::int32_t>* moved)
{
    // Flattened first: the O(n^2) loop below runs in sanitizer builds too.
    std::vector<std::int32_t> ids;
    std::vector<Aabb> boxes;
    std::vector<char> isMoved;
    std::vector<std::uint32_t> groups;
    for (const auto& [id, proxy] : reference)
    {
        ids.push_back(id);
        boxes.push_back(proxy.fat);
        groups.push_back(proxy.group);
        isMoved.push_back(moved == nullptr || moved->count(id) != 0 ? 1 : 0);
    }
    std::vector<BroadphasePair> pairs;
    for (std::size_t a = 0; a < ids.size(); ++a)
    {
        for (std::size_t b = a + 1; b < ids.size(); ++b)
        {
            if ((isMoved[a] != 0 || isMoved[b] != 0) && boxesTouch(boxes[a], boxes[b]) &&
                (groups[a] == 0 || groups[a] != groups[b]))
            {
                pairs.push_back({ids[a], ids[b]});
            }
        }
    }
    return pairs; // already ordered: ids ascend in the map and b > a
}

bool strictlyIncreasing(const std::vector<BroadphasePair>& pairs)
{
    for (std::size_t i = 0; i < pairs.size(); ++i)
    {
        if (pairs[i].proxyA >= pairs[i].proxyB || (i > 0 && !(pairs[i - 1] < pairs[i])))
        {
            return false;
        }
    }
    return true;
}

// ---- random scenes ----------------------------------------------------------------------------------------

Vec3 randomPoint(std::mt19937& rng, float lo, float hi)
{
    return {uniform(rng, lo, hi), uniform(rng, lo, hi), uniform(rng, lo, hi)};
}

/// A box in [0, side]^3; a few are flat or a point, a few are huge, to reach degenerate corners.
Aabb randomBox(std::mt19937& rng, float side)
{
    const Vec3 centre = randomPoint(rng, 0.0f, side);
    Vec3 half = randomPoint(rng, 0.05f, 1.0f);
    const int kind = std::uniform_int_distribution<int>(0, 39)(rng);
    if (kind == 0)
    {
        half = {0.0f, 0.0f, 0.0f};
    }
    else if (kind == 1)
    {
        half[std::uniform_int_distribution<int>(0, 2)(rng)] = 0.0f;
    }
    else if (kind == 2)
    {
        half = half * (0.2f * side);
    }
    return {centre - half, centre + half};
}

/// Adds `count` proxies with random boxes in [-side, side]^3 (user data: their number) to the tree and the
/// reference.
void addRandomProxies(BroadphaseTree& tree, Reference& reference, std::mt19937& rng, float side, int count)
{
    for (int i = 0; i < count; ++i)
    {
        const Aabb box = randomBox(rng, side);
        const std::int32_t id = tree.createProxy(box, static_cast<std::uint64_t>(i));
        REQUIRE(id != kNullProxy);
        reference[id] = {box, box, static_cast<std::uint64_t>(i)};
    }
}

/// The reference's proxy ids in a random order.
std::vector<std::int32_t> shuffledIds(const Reference& reference, std::mt19937& rng)
{
    std::vector<std::int32_t> ids;
    for (const auto& entry : reference)
    {
        ids.push_back(entry.first);
    }
    std::shuffle(ids.begin(), ids.end(), rng);
    return ids;
}

/// 300 random proxies in [-side, side]^3 and their pairs taken once (so none counts as moved), for the
/// deferred-move tests.
struct RandomTree
{
    explicit RandomTree(unsigned seed) : rng(seed)
    {
        addRandomProxies(tree, reference, rng, side, 300);
        tree.findNewPairs(pairs);
    }

    std::mt19937 rng;
    float side = 30.0f;
    BroadphaseTree tree{BroadphaseConfig{64}};
    Reference reference;
    std::vector<BroadphasePair> pairs;
};

/// Gives the first `count` of the reference's proxies, in a random order, random boxes through deferMove
/// (each a change), and adds them to `moved`; returns that order.
std::vector<std::int32_t> deferRandomMoves(BroadphaseTree& tree, Reference& reference, std::mt19937& rng,
                                           float side, int count, std::set<std::int32_t>& moved)
{
    const std::vector<std::int32_t> ids = shuffledIds(reference, rng);
    for (int k = 0; k < count; ++k)
    {
        const std::int32_t id = ids[static_cast<std::size_t>(k)];
        const Aabb box = randomBox(rng, side);
        REQUIRE(tree.deferMove(id, box));
        reference[id].fat = box;
        moved.insert(id);
    }
    return ids;
}

/// The tree's new pairs (found on `pool` when given) are brute force's for the `moved` proxies, and all its
/// pairs brute force's.
void requireBruteForcePairs(BroadphaseTree& tree, const Reference& reference,
                            const std::set<std::int32_t>& moved, TaskPool* pool,
                            std::vector<BroadphasePair>& pairs)
{
    tree.findNewPairs(pairs, pool);
    REQUIRE(pairs == bruteForcePairs(reference, &moved));
    tree.findAllPairs(pairs);
    REQUIRE(pairs == bruteForcePairs(reference, nullptr));
}

struct SceneChecker
{
    BroadphaseTree tree;
    FatBoxPolicy policy;
    Reference reference;
    std::set<std::int32_t> moved; ///< ids created or re-inserted since the last findNewPairs
    std::mt19937 rng;
    float side;
    std::uint64_t nextUserData = 1000;

    SceneChecker(const BroadphaseConfig& config, const FatBoxPolicy& fatBoxes, std::uint32_t seed, int count)
        : tree(config), policy(fatBoxes), rng(seed),
          side(2.5f * std::cbrt(static_cast<float>(std::max(count, 1))))
    {
    }

    void create()
    {
        const Aabb tight = randomBox(rng, side);
        const std::uint64_t user = nextUserData++;
        const std::int32_t id = tree.createProxy(policy.fatBox(tight, {}), user);
        REQUIRE(id != kNullProxy);
        REQUIRE(reference.count(id) == 0);
        reference[id] = {tight, expanded(tight, policy.marginMeters), user};
        moved.insert(id);
        REQUIRE(sameBox(tree.fatBox(id), reference[id].fat));
    }

    std::int32_t randomLiveId()
    {
        auto it = reference.begin();
        std::advance(it, std::uniform_int_distribution<std::size_t>(0, reference.size() - 1)(rng));
        return it->first;
    }

    void destroy()
    {
        const std::int32_t id = randomLiveId();
        REQUIRE(tree.destroyProxy(id));
        REQUIRE_FALSE(tree.isProxy(id));
        REQUIRE_FALSE(tree.destroyProxy(id));
        reference.erase(id);
        moved.erase(id);
    }

    void move()
    {
        const std::int32_t id = randomLiveId();
        ReferenceProxy& proxy = reference[id];
        Aabb tight = proxy.tight;
        Vec3 displacement{};
        const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
        if (kind == 0)
        {
            tight = randomBox(rng, side); // teleport
        }
        else if (kind == 1)
        {
            // stop: same box, no predicted motion (exercises shrinking after fast moves)
        }
        else
        {
            const float speed = kind == 2 ? 3.0f : 0.15f;
            displacement = randomPoint(rng, -speed, speed);
            tight.min += displacement;
            tight.max += displacement;
        }
        const Aabb before = proxy.fat;
        const Aabb fat = expectedFatBox(tight, displacement, policy);
        const bool mustReinsert =
            !boxInside(tight, before) || !boxInside(before, expanded(fat, policy.shrinkSlackMeters));

        const bool changed = moveWithPolicy(tree, policy, id, tight, displacement * kDisplacementScale);
        REQUIRE(changed == mustReinsert);
        proxy.tight = tight;
        if (changed)
        {
            proxy.fat = fat;
            moved.insert(id);
        }
        REQUIRE(sameBox(tree.fatBox(id), proxy.fat));
        REQUIRE(boxInside(tight, tree.fatBox(id)));
    }

    void randomOperation(int targetCount)
    {
        const int roll = std::uniform_int_distribution<int>(0, 99)(rng);
        const int count = static_cast<int>(reference.size());
        if (count == 0 || (roll < 15 && count < 2 * targetCount))
        {
            create();
        }
        else if (roll < 30 && count > targetCount / 2)
        {
            destroy();
        }
        else
        {
            move();
        }
    }

    void checkPairs()
    {
        std::vector<BroadphasePair> pairs;
        tree.findAllPairs(pairs);
        REQUIRE(strictlyIncreasing(pairs));
        REQUIRE(pairs == bruteForcePairs(reference, nullptr));

        REQUIRE(tree.movedProxyCount() == static_cast<std::int32_t>(moved.size()));
        tree.findNewPairs(pairs);
        REQUIRE(strictlyIncreasing(pairs));
        REQUIRE(pairs == bruteForcePairs(reference, &moved));
        moved.clear();
        REQUIRE(tree.movedProxyCount() == 0);
        REQUIRE(tree.validate());

        tree.findNewPairs(pairs);
        REQUIRE(pairs.empty());
    }

    void checkQueries(int count)
    {
        for (int q = 0; q < count; ++q)
        {
            const Aabb box = randomBox(rng, side);
            std::vector<std::int32_t> found;
            tree.queryAabb(box,
                           [&](std::int32_t id)
                           {
                               found.push_back(id);
                               return true;
                           });
            std::sort(found.begin(), found.end());
            REQUIRE(std::adjacent_find(found.begin(), found.end()) == found.end());
            std::vector<std::int32_t> expected;
            for (const auto& [id, proxy] : reference)
            {
                if (boxesTouch(proxy.fat, box))
                {
                    expected.push_back(id);
                }
            }
            REQUIRE(found == expected);

            // Early stop: returning false ends the query at once.
            if (expected.size() >= 2)
            {
                int calls = 0;
                tree.queryAabb(box, [&](std::int32_t) { return ++calls < 2; });
                REQUIRE(calls == 2);
            }
        }
    }

    void checkRays(int count)
    {
        for (int r = 0; r < count; ++r)
        {
            const Vec3 origin = randomPoint(rng, -0.2f * side, 1.2f * side);
            Vec3 translation = randomPoint(rng, -side, side);
            if (r % 5 == 0)
            {
                // axis-parallel segments take the parallel branch of the slab test
                const int axis = r / 5 % 3;
                translation[(axis + 1) % 3] = 0.0f;
                translation[(axis + 2) % 3] = 0.0f;
            }
            const float maxFraction = r % 3 == 0 ? 0.5f : 1.0f;

            std::vector<std::int32_t> expected;
            float closest = 2.0f;
            for (const auto& [id, proxy] : reference)
            {
                float entry = 0.0f;
                if (segmentHitsBox(origin, translation, maxFraction, proxy.fat, entry))
                {
                    expected.push_back(id);
                    closest = std::min(closest, entry);
                }
            }

            // Without clipping: exactly the boxes the segment meets.
            std::vector<std::int32_t> found;
            tree.rayCast(origin, translation, maxFraction,
                         [&](std::int32_t id, float clip)
                         {
                             REQUIRE(clip == maxFraction);
                             found.push_back(id);
                             return clip;
                         });
            std::sort(found.begin(), found.end());
            REQUIRE(found == expected);

            // With clipping at each hit's entry: the nearest entry survives the pruning.
            float best = 2.0f;
            float lastClip = maxFraction;
            tree.rayCast(origin, translation, maxFraction,
                         [&](std::int32_t id, float clip)
                         {
                             REQUIRE(clip <= lastClip);
                             lastClip = clip;
                             float entry = 0.0f;
                             if (!segmentHitsBox(origin, translation, clip, reference.at(id).fat, entry))
                             {
                                 return -1.0f;
                             }
                             best = std::min(best, entry);
                             return entry > 0.0f ? entry : 0.0f;
                         });
            REQUIRE(best == closest);

            // A 0 from the callback stops the cast.
            int calls = 0;
            tree.rayCast(origin, translation, maxFraction,
                         [&](std::int32_t, float)
                         {
                             ++calls;
                             return 0.0f;
                         });
            REQUIRE(calls == std::min<int>(1, static_cast<int>(expected.size())));
        }
    }

    void checkUserData()
    {
        REQUIRE(tree.proxyCount() == static_cast<std::int32_t>(reference.size()));
        for (const auto& [id, proxy] : reference)
        {
            REQUIRE(tree.isProxy(id));
            REQUIRE(tree.userData(id) == proxy.userData);
        }
    }
};

/// Runs a scripted random sequence and returns everything observable: pair lists and structure hashes.
std::vector<std::uint64_t> runScript(std::uint32_t seed, int count, int rounds)
{
    std::mt19937 rng(seed);
    BroadphaseTree tree(BroadphaseConfig{8});
    const FatBoxPolicy policy{0.1f, 0.4f};
    std::vector<std::int32_t> live;
    std::vector<Aabb> tight;
    std::vector<std::uint64_t> trace;
    std::vector<BroadphasePair> pairs;
    const float side = 2.5f * std::cbrt(static_cast<float>(count));
    for (int round = 0; round < rounds; ++round)
    {
        for (int op = 0; op < count; ++op)
        {
            const int roll = std::uniform_int_distribution<int>(0, 9)(rng);
            if (live.empty() || roll < 2)
            {
                tight.push_back(randomBox(rng, side));
                live.push_back(
                    tree.createProxy(policy.fatBox(tight.back(), {}), static_cast<std::uint64_t>(op)));
                continue;
            }
            const std::size_t k = std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng);
            if (roll < 4)
            {
                tree.destroyProxy(live[k]);
                live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
                tight.erase(tight.begin() + static_cast<std::ptrdiff_t>(k));
            }
            else
            {
                const Vec3 d = randomPoint(rng, -0.3f, 0.3f);
                tight[k].min += d;
                tight[k].max += d;
                moveWithPolicy(tree, policy, live[k], tight[k], d * kDisplacementScale);
            }
        }
        tree.findNewPairs(pairs);
        trace.push_back(tree.structureHash());
        for (const BroadphasePair& p : pairs)
        {
            trace.push_back((static_cast<std::uint64_t>(p.proxyA) << 32) |
                            static_cast<std::uint32_t>(p.proxyB));
        }
        trace.push_back(~0ull);
    }
    return trace;
}

/// Summed half-surface area of the internal nodes of a top-down median-split tree over `boxes` (split at
/// the median centre along the widest axis of the centres): an independent yardstick for areaRatio().
double medianSplitInternalArea(std::vector<Aabb>::iterator begin, std::vector<Aabb>::iterator end)
{
    if (end - begin < 2)
    {
        return 0.0;
    }
    Aabb bounds = *begin;
    Aabb centres{begin->center(), begin->center()};
    for (auto it = begin; it != end; ++it)
    {
        bounds = unionOf(bounds, *it);
        centres = unionOf(centres, Aabb{it->center(), it->center()});
    }
    const Vec3 spread = centres.max - centres.min;
    const int axis = spread.x >= spread.y ? (spread.x >= spread.z ? 0 : 2) : (spread.y >= spread.z ? 1 : 2);
    const auto middle = begin + (end - begin) / 2;
    std::nth_element(begin, middle, end,
                     [axis](const Aabb& a, const Aabb& b) { return a.center()[axis] < b.center()[axis]; });
    return bounds.perimeter() + medianSplitInternalArea(begin, middle) + medianSplitInternalArea(middle, end);
}

} // namespace

TEST_CASE("broadphase pairs, queries and ray casts equal brute force over random scenes", "[broadphase]")
{
    struct Scene
    {
        int count;
        int rounds;
        int operationsPerRound;
    };
    const Scene scenes[] = {{1, 30, 3}, {2, 30, 4}, {5, 30, 6}, {40, 20, 30}, {300, 10, 120}, {2000, 3, 300}};
    std::uint32_t seed = 7;
    for (const Scene& scene : scenes)
    {
        CAPTURE(scene.count);
        SceneChecker checker(BroadphaseConfig{}, FatBoxPolicy{}, seed++, scene.count);
        for (int i = 0; i < scene.count; ++i)
        {
            checker.create();
        }
        REQUIRE(checker.tree.validate());
        checker.checkPairs();
        for (int round = 0; round < scene.rounds; ++round)
        {
            CAPTURE(round);
            for (int op = 0; op < scene.operationsPerRound; ++op)
            {
                checker.randomOperation(scene.count);
                REQUIRE(checker.tree.validate());
            }
            if (round % 3 == 2)
            {
                // A top-down rebuild keeps every proxy, box, user datum and the moved set; later
                // operations go on from the rebuilt tree.
                const std::int32_t movedBefore = checker.tree.movedProxyCount();
                const std::int32_t nodesBefore = checker.tree.nodeCount();
                checker.tree.rebuild();
                REQUIRE(checker.tree.validate());
                CHECK(checker.tree.movedProxyCount() == movedBefore);
                CHECK(checker.tree.nodeCount() == nodesBefore);
            }
            checker.checkPairs();
            checker.checkQueries(scene.count >= 2000 ? 20 : 10);
            checker.checkRays(scene.count >= 2000 ? 20 : 15);
            checker.checkUserData();
        }
    }
}

TEST_CASE("broadphase handles piles of identical boxes and boxes sharing faces", "[broadphase]")
{
    BroadphaseTree tree;
    const FatBoxPolicy policy;
    Reference reference;
    const Aabb same{{0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}};
    for (int i = 0; i < 64; ++i)
    {
        const std::int32_t id = tree.createProxy(policy.fatBox(same, {}), static_cast<std::uint64_t>(i));
        reference[id] = {same, expanded(same, policy.marginMeters), static_cast<std::uint64_t>(i)};
        REQUIRE(tree.validate());
    }
    // A row of unit cubes whose fat boxes overlap their neighbours', and cubes 2.2 m apart whose fat boxes
    // (margin 0.1) exactly touch: closed boxes count as overlapping.
    for (int i = 0; i < 32; ++i)
    {
        const float x = 10.0f + 2.2f * static_cast<float>(i);
        const Aabb box{{x, 0.0f, 0.0f}, {x + 1.0f, 1.0f, 1.0f}};
        const std::int32_t id = tree.createProxy(policy.fatBox(box, {}), 0);
        reference[id] = {box, expanded(box, policy.marginMeters), 0};
        REQUIRE(tree.validate());
    }
    std::vector<BroadphasePair> pairs;
    tree.findAllPairs(pairs);
    REQUIRE(pairs == bruteForcePairs(reference, nullptr));
    CHECK(pairs.size() >= 64u * 63u / 2u);
    tree.findNewPairs(pairs);
    REQUIRE(pairs == bruteForcePairs(reference, nullptr)); // everything is new
}

TEST_CASE("broadphase tree height stays logarithmic for sorted insertion orders", "[broadphase]")
{
    // With |h(child1) - h(child2)| <= 1 everywhere, a tree of height h has at least Fibonacci(h + 2) >= phi^h
    // leaves, so h <= log_phi(n); the loose bound 2 log2(n) + 2 is also checked.
    const double phi = (1.0 + std::sqrt(5.0)) / 2.0;
    auto checkBounds = [&](const BroadphaseTree& tree)
    {
        const double n = tree.proxyCount();
        REQUIRE(tree.height() <= static_cast<int>(std::floor(std::log(n) / std::log(phi) + 1e-9)));
        REQUIRE(tree.height() <= 2.0 * std::log2(n) + 2.0);
    };

    for (const bool reversed : {false, true})
    {
        CAPTURE(reversed);
        BroadphaseTree tree(BroadphaseConfig{0});
        const FatBoxPolicy policy{0.1f, 0.4f};
        const int n = 4096;
        for (int i = 0; i < n; ++i)
        {
            const float x = static_cast<float>(reversed ? n - i : i);
            const Aabb box{{x, 0.0f, 0.0f}, {x + 0.5f, 0.5f, 0.5f}};
            REQUIRE(tree.createProxy(policy.fatBox(box, {}), 0) != kNullProxy);
            checkBounds(tree);
        }
        REQUIRE(tree.validate());
        CHECK(tree.height() >= 12); // at least log2(4096): the tree is binary
    }

    // A diagonal line moving along itself: every move re-inserts at the end of the line.
    BroadphaseTree tree;
    const FatBoxPolicy policy;
    std::vector<std::int32_t> ids;
    for (int i = 0; i < 1000; ++i)
    {
        const float t = static_cast<float>(i);
        ids.push_back(tree.createProxy(policy.fatBox({{t, t, t}, {t + 0.5f, t + 0.5f, t + 0.5f}}, {}), 0));
    }
    for (int step = 0; step < 1000; ++step)
    {
        const float t = static_cast<float>(1000 + step);
        const std::int32_t id = ids[static_cast<std::size_t>(step)];
        REQUIRE(moveWithPolicy(tree, policy, id, {{t, t, t}, {t + 0.5f, t + 0.5f, t + 0.5f}}, {}));
        checkBounds(tree);
    }
    REQUIRE(tree.validate());
}

TEST_CASE("broadphase ids are stable, reused last-freed first, and bad input is refused", "[broadphase]")
{
    BroadphaseTree tree(BroadphaseConfig{2});
    const Aabb box{{0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}};
    std::vector<std::int32_t> ids;
    for (int i = 0; i < 10; ++i)
    {
        ids.push_back(tree.createProxy({box.min + Vec3{3.0f * i, 0, 0}, box.max + Vec3{3.0f * i, 0, 0}},
                                       static_cast<std::uint64_t>(100 + i)));
        REQUIRE(tree.validate());
    }
    REQUIRE(std::set<std::int32_t>(ids.begin(), ids.end()).size() == ids.size());
    CHECK(tree.nodeCount() == 19);
    CHECK(tree.nodeCapacity() >= 19);

    REQUIRE(tree.destroyProxy(ids[4]));
    REQUIRE(tree.validate());
    REQUIRE_FALSE(tree.destroyProxy(ids[4]));
    REQUIRE_FALSE(tree.touchProxy(ids[4]));
    REQUIRE_FALSE(tree.destroyProxy(-1));
    REQUIRE_FALSE(tree.destroyProxy(1 << 30));
    // The other proxies keep their ids and data through the restructuring.
    for (int i = 0; i < 10; ++i)
    {
        if (i != 4)
        {
            REQUIRE(tree.isProxy(ids[static_cast<std::size_t>(i)]));
            REQUIRE(tree.userData(ids[static_cast<std::size_t>(i)]) == static_cast<std::uint64_t>(100 + i));
        }
    }
    const std::int32_t again = tree.createProxy(box, 7);
    CHECK(again == ids[4]);
    REQUIRE(tree.userData(again) == 7u);

    const float nan = std::nanf("");
    CHECK(tree.createProxy({{0, 0, 0}, {nan, 1, 1}}, 0) == kNullProxy);
    CHECK(tree.createProxy({{0, 0, 0}, {-1, 1, 1}}, 0) == kNullProxy);
    CHECK(tree.createProxy({{0, 0, 0}, {std::numeric_limits<float>::infinity(), 1, 1}}, 0) == kNullProxy);
    CHECK(tree.proxyCount() == 10);
    REQUIRE(tree.validate());

    // Destroy everything: an empty tree, then it fills again.
    for (int i = 0; i < 10; ++i)
    {
        REQUIRE(tree.destroyProxy(ids[static_cast<std::size_t>(i)]));
        REQUIRE(tree.validate());
    }
    CHECK(tree.proxyCount() == 0);
    CHECK(tree.nodeCount() == 0);
    CHECK(tree.height() == 0);
    CHECK(tree.areaRatio() == 0.0f);
    std::vector<BroadphasePair> pairs{{1, 2}};
    tree.findNewPairs(pairs); // moved proxies that were all destroyed
    CHECK(pairs.empty());
    tree.queryAabb(box,
                   [](std::int32_t) -> bool
                   {
                       FAIL("query on an empty tree");
                       return true;
                   });
    REQUIRE(tree.createProxy(box, 1) != kNullProxy);
    REQUIRE(tree.validate());
}

TEST_CASE("broadphase moves inside the fat box leave the tree alone; fast-then-still proxies shrink",
          "[broadphase]")
{
    BroadphaseTree tree(BroadphaseConfig{16});
    const FatBoxPolicy policy{0.1f, 0.4f};
    const Aabb box{{0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}};
    const std::int32_t id = tree.createProxy(policy.fatBox(box, {}), 0);
    const std::int32_t other =
        tree.createProxy(policy.fatBox({{5.0f, 0.0f, 0.0f}, {6.0f, 1.0f, 1.0f}}, {}), 0);
    std::vector<BroadphasePair> pairs;
    tree.findNewPairs(pairs);
    CHECK(pairs.empty());

    // Small wiggles within the 0.1 m margin: no change, nothing moved.
    const std::uint64_t before = tree.structureHash();
    for (int i = 0; i < 10; ++i)
    {
        const Vec3 d{0.009f * static_cast<float>(i), -0.005f * static_cast<float>(i % 3), 0.0f};
        CHECK_FALSE(moveWithPolicy(tree, policy, id, {box.min + d, box.max + d}, {}));
    }
    CHECK(tree.structureHash() == before);
    CHECK(tree.movedProxyCount() == 0);

    // Leaving the fat box re-inserts, stretched ahead along the predicted displacement.
    const Vec3 velocityStep{1.5f, 0.0f, 0.0f};
    Aabb moved{box.min + velocityStep, box.max + velocityStep};
    REQUIRE(moveWithPolicy(tree, policy, id, moved, velocityStep * kDisplacementScale));
    CHECK(tree.fatBox(id).max.x == Approx(2.5f + 0.1f + 3.0f));
    CHECK(tree.fatBox(id).min.x == Approx(1.5f - 0.1f));
    CHECK(tree.movedProxyCount() == 1);
    tree.findNewPairs(pairs);
    REQUIRE(pairs.size() == 1);
    CHECK(pairs[0] == BroadphasePair{std::min(id, other), std::max(id, other)});

    // Stopping inside the stretched box: it is 3 m too long on +x, more than the 0.4 m slack, so it shrinks.
    REQUIRE(moveWithPolicy(tree, policy, id, moved, {}));
    CHECK(tree.fatBox(id).max.x == Approx(2.5f + 0.1f));
    tree.findNewPairs(pairs);
    CHECK(pairs.empty());
    CHECK_FALSE(moveWithPolicy(tree, policy, id, moved, {}));
    REQUIRE(tree.validate());

    // touchProxy reports the pairs again without moving anything.
    REQUIRE(moveWithPolicy(tree, policy, other, {{2.0f, 0.0f, 0.0f}, {3.0f, 1.0f, 1.0f}}, {}));
    tree.findNewPairs(pairs);
    REQUIRE(pairs.size() == 1);
    REQUIRE(tree.touchProxy(id));
    REQUIRE(tree.touchProxy(id)); // no duplicate entry
    tree.findNewPairs(pairs);
    CHECK(pairs.size() == 1);
    REQUIRE(tree.validate());
}

TEST_CASE("broadphase is deterministic: the same calls give the same pairs and the same tree", "[broadphase]")
{
    const std::vector<std::uint64_t> first = runScript(99, 400, 8);
    const std::vector<std::uint64_t> second = runScript(99, 400, 8);
    REQUIRE(first.size() > 8 * 2);
    CHECK(first == second);
    // The trace does depend on the calls (the comparison above could fail).
    CHECK(first != runScript(100, 400, 8));
}

TEST_CASE("broadphase quality: area ratio close to a top-down median-split tree", "[broadphase]")
{
    auto check = [](std::vector<Aabb> boxes, const char* name)
    {
        CAPTURE(name);
        BroadphaseTree tree(BroadphaseConfig{16}); // no fat-box policy applied: stored box == input box
        for (const Aabb& b : boxes)
        {
            REQUIRE(tree.createProxy(b, 0) != kNullProxy);
        }
        REQUIRE(tree.validate());
        Aabb bounds = boxes.front();
        for (const Aabb& b : boxes)
        {
            bounds = unionOf(bounds, b);
        }
        const double reference = medianSplitInternalArea(boxes.begin(), boxes.end()) / bounds.perimeter();
        const double ratio = tree.areaRatio();
        CAPTURE(ratio, reference);
        std::printf("broadphase area ratio (%s, %zu boxes): incremental %.2f, median split %.2f\n", name,
                    boxes.size(), ratio, reference);
        // Measured: 1.0x to 1.6x the median-split tree (incremental insertion under a strict height
        // balance); a sibling choice that ignores areas gives 4x to 11x.
        CHECK(ratio >= 1.0);
        CHECK(ratio < 2.0 * reference);
        // rebuild() is that median split (ties among equal centres aside), and still a valid tree.
        tree.rebuild();
        REQUIRE(tree.validate());
        const double rebuilt = tree.areaRatio();
        std::printf("broadphase area ratio (%s) after rebuild: %.2f\n", name, rebuilt);
        CHECK(rebuilt <= 1.05 * reference);
        CHECK(rebuilt >= 0.95 * reference);
    };

    std::vector<Aabb> grid;
    for (int x = 0; x < 16; ++x)
    {
        for (int y = 0; y < 16; ++y)
        {
            for (int z = 0; z < 4; ++z)
            {
                const Vec3 c{2.0f * x, 2.0f * y, 2.0f * z};
                grid.push_back({c, c + Vec3{1.0f, 1.0f, 1.0f}});
            }
        }
    }
    check(grid, "sorted grid");
    std::mt19937 rng(5);
    std::shuffle(grid.begin(), grid.end(), rng);
    check(grid, "shuffled grid");

    std::vector<Aabb> scattered;
    for (int i = 0; i < 2000; ++i)
    {
        scattered.push_back(randomBox(rng, 30.0f));
    }
    check(scattered, "random boxes");

    std::vector<Aabb> line;
    for (int i = 0; i < 1000; ++i)
    {
        const float x = static_cast<float>(i);
        line.push_back({{x, 0.0f, 0.0f}, {x + 0.5f, 0.5f, 0.5f}});
    }
    check(line, "sorted line");
}

TEST_CASE("broadphase deferred moves: re-inserted or rebuilt, the pairs equal brute force", "[broadphase]")
{
    RandomTree fixture(1234);
    auto& [rng, side, tree, reference, pairs] = fixture;
    TaskPool pool(2);
    int round = 0;
    // A few moved proxies are re-inserted one by one, a quarter or more rebuild the tree: both leave a valid
    // tree with the brute-force pairs, and the moved set names exactly the proxies whose box changed.
    for (const int movedCount : {5, 40, 74, 75, 150, 300, 290, 100})
    {
        CAPTURE(movedCount);
        std::set<std::int32_t> moved;
        const std::vector<std::int32_t> ids = deferRandomMoves(tree, reference, rng, side, movedCount, moved);
        // An unchanged box is no move.
        CHECK_FALSE(tree.deferMove(ids.back(), reference[ids.back()].fat));
        tree.commitMoves();
        REQUIRE(tree.validate());
        REQUIRE(tree.proxyCount() == 300);
        REQUIRE(tree.movedProxyCount() == static_cast<std::int32_t>(moved.size()));
        // Every other round on two threads (the descent against itself is then shared out).
        const bool pooled = ++round % 2 == 0;
        CAPTURE(pooled);
        requireBruteForcePairs(tree, reference, moved, pooled ? &pool : nullptr, pairs);
    }
}

TEST_CASE("broadphase deferred moves: the tree answers exactly before commitMoves, whatever else changes it",
          "[broadphase]")
{
    // The World defers its moves at the end of a step and commits them during the next step's narrowphase,
    // so the tree is queried, and proxies are created, destroyed and moved, while moves wait.
    RandomTree fixture(4321);
    auto& [rng, side, tree, reference, pairs] = fixture;
    std::uint64_t nextUser = 1000;
    for (const int movedCount : {5, 40, 120, 300})
    {
        CAPTURE(movedCount);
        std::set<std::int32_t> moved;
        // Moved twice each: listed once for commitMoves.
        for (int pass = 0; pass < 2; ++pass)
        {
            deferRandomMoves(tree, reference, rng, side, movedCount, moved);
        }
        REQUIRE(tree.hasDeferredMoves());
        REQUIRE(tree.validate()); // the grown ancestors hold their leaves
        tree.findAllPairs(pairs);
        REQUIRE(pairs == bruteForcePairs(reference, nullptr));
        const Aabb probe = randomBox(rng, side);
        std::set<std::int32_t> found;
        tree.queryAabb(probe,
                       [&](std::int32_t id)
                       {
                           found.insert(id);
                           return true;
                       });
        std::set<std::int32_t> expected;
        for (const auto& [id, proxy] : reference)
        {
            if (proxy.fat.overlaps(probe))
            {
                expected.insert(id);
            }
        }
        REQUIRE(found == expected);

        // Other changes while the moves wait: a deferred proxy destroyed (its id handed out again), one
        // moved at once, and a new one.
        const std::vector<std::int32_t> ids = shuffledIds(reference, rng);
        const std::int32_t gone = *moved.begin();
        REQUIRE(tree.destroyProxy(gone));
        reference.erase(gone);
        moved.erase(gone);
        const Aabb reusedBox = randomBox(rng, side);
        const std::int32_t reused = tree.createProxy(reusedBox, nextUser++);
        REQUIRE(reused == gone);
        reference[reused] = {reusedBox, reusedBox, nextUser - 1};
        moved.insert(reused);
        const std::int32_t jumped = ids.front() == reused ? ids.back() : ids.front();
        const Aabb jumpBox = randomBox(rng, side);
        REQUIRE(tree.moveProxy(jumped, jumpBox));
        reference[jumped].fat = jumpBox;
        moved.insert(jumped);
        REQUIRE(tree.validate());
        tree.findAllPairs(pairs);
        REQUIRE(pairs == bruteForcePairs(reference, nullptr));

        tree.commitMoves();
        REQUIRE_FALSE(tree.hasDeferredMoves());
        REQUIRE(tree.validate()); // exact unions again
        requireBruteForcePairs(tree, reference, moved, nullptr, pairs);
    }
}

TEST_CASE("broadphase refits when most proxies moved a little, and rebuilds once the refit grows loose",
          "[broadphase]")
{
    std::mt19937 rng(99);
    const float side = 30.0f;
    BroadphaseTree tree(BroadphaseConfig{64});
    Reference reference;
    addRandomProxies(tree, reference, rng, side, 300);
    tree.rebuild();
    std::vector<BroadphasePair> pairs;
    tree.findNewPairs(pairs);
    // Every proxy drifts a little each round (a refit keeps the shape), then, later, far: the tree stays
    // valid, its pairs brute force's, and its area ratio within 1.5 times a fresh rebuild's (a refit may
    // loosen it by kLooseRefit from the last rebuild's, which may itself be above a fresh one's).
    std::uniform_real_distribution<float> jitter(-0.3f, 0.3f);
    for (int round = 0; round < 40; ++round)
    {
        CAPTURE(round);
        const float scale = round < 20 ? 1.0f : 10.0f;
        const std::uint64_t before = tree.structureHash();
        std::set<std::int32_t> moved;
        for (auto& [id, proxy] : reference)
        {
            const Vec3 shift{jitter(rng) * scale, jitter(rng) * scale, jitter(rng) * scale};
            const Aabb box{proxy.fat.min + shift, proxy.fat.max + shift};
            REQUIRE(tree.deferMove(id, box));
            proxy.fat = box;
            moved.insert(id);
        }
        tree.commitMoves();
        REQUIRE(tree.validate());
        tree.findNewPairs(pairs);
        REQUIRE(pairs == bruteForcePairs(reference, &moved));
        BroadphaseTree fresh = tree;
        fresh.rebuild();
        CHECK(tree.areaRatio() <= 1.5f * fresh.areaRatio());
        if (round == 0)
        {
            CHECK(tree.structureHash() != before);  // the boxes changed...
            CHECK(tree.height() == fresh.height()); // ...over the rebuilt shape
        }
    }
}

TEST_CASE("broadphase groups: proxies sharing a non-zero group never pair, on every path", "[broadphase]")
{
    // Groups mostly follow x (so whole subtrees share one and are passed over at inner nodes), with
    // exceptions scattered through; group 0 pairs with everything.
    std::mt19937 rng(77);
    const float side = 30.0f;
    std::uniform_int_distribution<int> anyGroup(0, 3);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    const auto groupAt = [&](const Aabb& box)
    {
        if (unit(rng) < 0.15f)
        {
            return static_cast<std::uint32_t>(anyGroup(rng));
        }
        return static_cast<std::uint32_t>(box.center().x < 0.0f ? 1 : (box.center().x < 10.0f ? 2 : 0));
    };
    BroadphaseTree tree(BroadphaseConfig{64});
    Reference reference;
    for (int i = 0; i < 300; ++i)
    {
        const Aabb box = randomBox(rng, side);
        const std::uint32_t group = groupAt(box);
        const std::int32_t id = tree.createProxy(box, static_cast<std::uint64_t>(i), group);
        REQUIRE(id != kNullProxy);
        REQUIRE(tree.proxyGroup(id) == group);
        reference[id] = {box, box, static_cast<std::uint64_t>(i), group};
    }
    REQUIRE(tree.validate());
    std::vector<BroadphasePair> pairs;
    tree.findNewPairs(pairs);
    REQUIRE(pairs == bruteForcePairs(reference, nullptr));
    tree.findAllPairs(pairs);
    REQUIRE(pairs == bruteForcePairs(reference, nullptr));
    std::size_t ungrouped = 0;
    {
        Reference plain = reference;
        for (auto& entry : plain)
        {
            entry.second.group = 0;
        }
        ungrouped = bruteForcePairs(plain, nullptr).size();
    }
    CHECK(pairs.size() < ungrouped); // the groups did take pairs away

    TaskPool pool(2);
    int round = 0;
    // Few moves (one query per moved proxy), then many (the tree against itself), with regroupings: the
    // pairs stay brute force's, and the tree's tags stay those of its leaves (validate).
    for (const int movedCount : {5, 150, 20, 300})
    {
        CAPTURE(movedCount);
        std::set<std::int32_t> moved;
        const std::vector<std::int32_t> ids = deferRandomMoves(tree, reference, rng, side, movedCount, moved);
        tree.commitMoves();
        // A few proxies change group; they are touched, as the World requeries them.
        for (int k = 0; k < 10; ++k)
        {
            const std::int32_t id = ids[ids.size() - 1 - static_cast<std::size_t>(k)];
            const std::uint32_t group = groupAt(reference[id].fat);
            REQUIRE(tree.setProxyGroup(id, group));
            REQUIRE(tree.touchProxy(id));
            reference[id].group = group;
            moved.insert(id);
        }
        REQUIRE(tree.validate());
        const bool pooled = ++round % 2 == 0;
        CAPTURE(pooled);
        requireBruteForcePairs(tree, reference, moved, pooled ? &pool : nullptr, pairs);
    }
    CHECK_FALSE(tree.setProxyGroup(kNullProxy, 1));

    // A query that skips a group finds the overlapping proxies of every other group.
    for (int q = 0; q < 50; ++q)
    {
        const Aabb box = randomBox(rng, side);
        const auto skip = static_cast<std::uint32_t>(anyGroup(rng));
        std::vector<std::int32_t> found;
        tree.queryAabb(
            box,
            [&](std::int32_t id)
            {
                found.push_back(id);
                return true;
            },
            skip);
        std::sort(found.begin(), found.end());
        std::vector<std::int32_t> expected;
        for (const auto& [id, proxy] : reference)
        {
            if (boxesTouch(proxy.fat, box) && (skip == 0 || proxy.group != skip))
            {
                expected.push_back(id);
            }
        }
        REQUIRE(found == expected);
    }
}

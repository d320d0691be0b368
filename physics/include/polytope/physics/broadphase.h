// Polytope physics: the broadphase, a dynamic AABB tree.
//
// Each proxy is a leaf holding the box its owner gives it, normally a "fat" box (see FatBoxPolicy below):
// the tight box grown by a margin and stretched along the predicted displacement, so that most small moves
// stay inside it and leave the tree alone. The tree stores boxes as given; deciding how fat they are and
// when to replace them is the owner's (the World's), as in Box2D v3, whose shapes keep their fat boxes.
// Internal nodes hold the exact union of their two children. The design follows the dynamic trees of Box2D
// (b2DynamicTree) and Bullet (btDbvt), written afresh here:
//  - Insertion picks the sibling by the surface-area heuristic (SAH): the cost of a tree is the summed
//    surface area of its internal nodes (Aabb::perimeter() is half the area), and a descent with a lower
//    bound on the cost below each child looks for the cheapest sibling without visiting the whole tree.
//  - The tree is kept strictly height-balanced: every node's children differ in height by at most one, so
//    a tree of n leaves has height at most log_phi(n) ~= 1.44 log2(n) (Fibonacci bound) whatever order the
//    boxes arrive in, and validate() checks it. Three rules keep it so. (1) Only nodes of height <= 1 may
//    become a new leaf's sibling (in such a tree a leaf's sibling is never taller), so an insertion or a
//    removal changes each ancestor's height by at most one. (2) On the way back to the root, a node whose
//    children differ by two lifts its taller child (an AVL rotation; with no key order to respect, the
//    lifted child keeps its taller child and hands the other across, and one rotation always suffices).
//    (3) Each node on that path also tries the four child/grandchild swaps and makes the one that most
//    reduces the area, if it keeps the balance (Box2D v3 rotates for area in the same way, unbalanced).
//    Compared with unconstrained SAH insertion this costs some tree quality (areaRatio() about 30% higher
//    on random scenes; pair finding about 10-15% slower) and buys a hard bound on height and traversal depth.
//  - Proxy ids are leaf node indices. A leaf never moves while its proxy lives, so ids are stable. Freed
//    nodes go on a LIFO free list, so a sequence of calls always yields the same ids and the same tree.
//  - Pair finding queries the tree with each moved proxy's fat box and reports every pair once, sorted by
//    (smaller id, larger id): the order is a function of the tree contents only, never of a hash map.
//
// Capacity: the node pool is a std::vector that doubles when the free list runs dry (a tree of n proxies
// needs 2n - 1 nodes). The World's capacities are fixed, so once the tree has held its largest population,
// creating, moving, destroying and querying allocate nothing; pair lists go into a caller-owned vector
// whose capacity is reused. Queries are const and use a stack on the call stack (the height bound above
// keeps it small; a heap fallback exists for safety only), so concurrent queries are safe.
//
// Pairs are of fat boxes: a caller testing shapes pairs up what findNewPairs reports with its own set of
// existing pairs, and drops a pair when the fat boxes stop overlapping.
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/task_pool.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace polytope::physics
{

/// The proxy id that names no proxy.
inline constexpr std::int32_t kNullProxy = -1;

/// Tunables of the broadphase tree.
struct BroadphaseConfig
{
    /// Proxies the node pool holds before its first growth, >= 0.
    std::int32_t initialProxyCapacity = 256;
};

/// The fat-box policy: how far a proxy's stored box reaches beyond the shape's tight box, and when a stored
/// box is replaced. The tree never applies it (it stores the boxes it is given); the World does, for every
/// body, and nothing else in the engine enlarges broadphase boxes.
struct FatBoxPolicy
{
    /// Metres added on every side of the tight box, >= 0. Larger margins mean fewer tree updates but more
    /// candidate pairs.
    float marginMeters = 0.1f;
    /// Metres, >= 0: a stored box that sticks out of the wanted box (fatBox of now) by more than this on
    /// some side is replaced, e.g. after a fast body slows down.
    float shrinkSlackMeters = 0.4f;

    /// `box` grown by `grow` metres on every side, then stretched on each axis by `displacement` (metres,
    /// e.g. velocity * dt) on the side it points to.
    static Aabb grownAndStretched(const Aabb& box, float grow, const Vec3& displacement)
    {
        const Vec3 margin{grow, grow, grow};
        Aabb out{box.min - margin, box.max + margin};
        for (int axis = 0; axis < 3; ++axis)
        {
            if (displacement[axis] < 0.0f)
            {
                out.min[axis] += displacement[axis];
            }
            else
            {
                out.max[axis] += displacement[axis];
            }
        }
        return out;
    }

    /// The wanted box: `tight` grown by marginMeters on every side, then stretched along
    /// `predictedDisplacement`.
    Aabb fatBox(const Aabb& tight, const Vec3& predictedDisplacement) const
    {
        return grownAndStretched(tight, marginMeters, predictedDisplacement);
    }

    /// Whether a proxy may keep its `stored` box: it still contains `needed` (at least the tight box; the
    /// World passes the whole region the body may sweep in the coming step, so a contact is found before
    /// the step that needs it), and it sticks out of `wanted` (fatBox of now) by at most
    /// shrinkSlackMeters. Otherwise the owner stores `wanted` (moveProxy), which must contain `needed`.
    bool keeps(const Aabb& stored, const Aabb& needed, const Aabb& wanted) const
    {
        const Vec3 slack{shrinkSlackMeters, shrinkSlackMeters, shrinkSlackMeters};
        return stored.contains(needed) && Aabb{wanted.min - slack, wanted.max + slack}.contains(stored);
    }
};

/// Two proxies whose fat boxes overlap; always proxyA < proxyB.
struct BroadphasePair
{
    std::int32_t proxyA = kNullProxy;
    std::int32_t proxyB = kNullProxy;

    constexpr bool operator==(const BroadphasePair&) const = default;
    /// Lexicographic on (proxyA, proxyB): the order in which pairs are reported.
    constexpr bool operator<(const BroadphasePair& o) const
    {
        return proxyA < o.proxyA || (proxyA == o.proxyA && proxyB < o.proxyB);
    }
};

class BroadphaseTree
{
  public:
    explicit BroadphaseTree(const BroadphaseConfig& config = {});

    /// Adds a proxy that stores `box` (metres, world frame; normally a fat box) and returns its id (>= 0),
    /// stable until destroyProxy. The new proxy counts as moved for findNewPairs. Returns kNullProxy (tree
    /// unchanged) when the box is not finite or min > max on some axis, or when the node pool would exceed
    /// 2^31 - 1 nodes. `group` (0: none): proxies sharing a non-zero group are never paired (findNewPairs)
    /// and a query can skip a group (queryAabb): the World's collision groups, so that a ragdoll or a
    /// jointed grid is not searched for pairs it would refuse.
    std::int32_t createProxy(const Aabb& box, std::uint64_t userData, std::uint32_t group = 0);

    /// Removes a proxy; its id may be handed out again (the most recently freed id first). Returns false,
    /// changing nothing, when `proxyId` names no live proxy.
    bool destroyProxy(std::int32_t proxyId);

    /// Replaces the proxy's stored box with `box`, re-inserting the proxy, unless the two are equal. Returns
    /// whether it was re-inserted; a re-inserted proxy counts as moved for findNewPairs. An id that names no
    /// live proxy, or a non-finite or inverted box, is a programmer error: asserted, and in release builds
    /// ignored (returns false).
    bool moveProxy(std::int32_t proxyId, const Aabb& box);

    /// moveProxy for many proxies: stores `box`, grows the proxy's ancestors to hold it and marks the proxy
    /// moved (returns whether the box changed), but restructures the tree only in commitMoves (after Box2D
    /// v3's enlarged proxies). Meanwhile the tree answers every query exactly, only with looser inner
    /// boxes, and may be changed in any other way; commitMoves can run later, beside work that does not
    /// touch the tree.
    bool deferMove(std::int32_t proxyId, const Aabb& box);
    /// Whether deferMove left work for commitMoves.
    bool hasDeferredMoves() const { return !m_deferred.empty(); }
    /// Re-inserts the proxies deferMove changed, one by one, or, when they are at least a
    /// 1 / kRebuildShare share of the tree (a world of swinging or falling bodies), refits the inner
    /// nodes' boxes over the tree's shape, or rebuilds the whole tree over the new boxes at once (rebuild)
    /// when a refit would leave it loose (kLooseRefit): both cheaper than as many re-insertions.
    void commitMoves();
    /// See commitMoves.
    static constexpr std::int32_t kRebuildShare = 4;
    /// commitMoves with a 1 / kRebuildShare share moved refits the inner nodes' boxes over the tree's
    /// shape instead of rebuilding it, while their summed perimeter, relative to the root's, stays within
    /// this factor of the last rebuild's (the bodies kept their neighbours); past it, it rebuilds.
    static constexpr double kLooseRefit = 1.25;

    /// Marks a live proxy as moved without changing its box, so the next findNewPairs reports all its
    /// pairs (e.g. after its collision filter changed). Returns false when `proxyId` names no live proxy.
    bool touchProxy(std::int32_t proxyId);

    /// Moves a live proxy to another group (see createProxy); returns false when `proxyId` names no live
    /// proxy. Pairs it may now make are found once it is marked moved (touchProxy).
    bool setProxyGroup(std::int32_t proxyId, std::uint32_t group);
    /// The group given at creation or by setProxyGroup. Precondition: isProxy(proxyId).
    std::uint32_t proxyGroup(std::int32_t proxyId) const { return m_groups[proxyId]; }

    /// Whether `proxyId` names a live proxy.
    bool isProxy(std::int32_t proxyId) const
    {
        return proxyId >= 0 && proxyId < static_cast<std::int32_t>(m_nodes.size()) &&
               m_nodes[proxyId].isLeaf();
    }
    /// The stored box of a live proxy, metres. Precondition: isProxy(proxyId).
    const Aabb& fatBox(std::int32_t proxyId) const { return m_nodes[proxyId].box; }
    /// The value given at creation. Precondition: isProxy(proxyId).
    std::uint64_t userData(std::int32_t proxyId) const { return m_nodes[proxyId].userData; }

    /// Calls fn(std::int32_t proxyId) -> bool for every proxy whose fat box overlaps `box` (closed boxes:
    /// touching counts), except those in group `skipGroup` when it is non-zero (whole subtrees of it are
    /// passed over). Returning false stops the query. The visiting order is deterministic but otherwise
    /// unspecified.
    template <class Fn> void queryAabb(const Aabb& box, Fn&& fn, std::uint32_t skipGroup = 0) const
    {
        if (m_root == kNullProxy)
        {
            return;
        }
        TraversalStack stack;
        stack.push(m_root);
        while (!stack.empty())
        {
            const std::int32_t index = stack.pop();
            const Node& node = m_nodes[index];
            if (!node.box.overlaps(box) || (skipGroup != 0 && m_groups[index] == skipGroup))
            {
                continue;
            }
            if (node.isLeaf())
            {
                if (!fn(index))
                {
                    return;
                }
            }
            else
            {
                stack.push(node.child1);
                stack.push(node.child2);
            }
        }
    }

    /// Casts the segment origin + t * translation, t in [0, maxFraction] (metres; maxFraction usually 1),
    /// against the fat boxes (closed slab test). For every proxy whose fat box the remaining segment meets,
    /// calls fn(std::int32_t proxyId, float maxFraction) -> float, where maxFraction is the current clip.
    /// The callback returns: 0 to stop; a value in (0, maxFraction) to clip the segment there (e.g. the
    /// fraction of an exact hit on the proxy's shape, so farther proxies are skipped); maxFraction (or
    /// more) to go on unchanged; a negative value to ignore this proxy. Translation components with
    /// magnitude below ~1e-38 are treated as zero.
    template <class Fn>
    void rayCast(const Vec3& origin, const Vec3& translation, float maxFraction, Fn&& fn) const
    {
        sweep(origin, Vec3{}, translation, maxFraction, fn);
    }

    /// Sweeps `box` (metres, world frame) along translation, t in [0, maxFraction], against the fat boxes:
    /// a proxy is reported when the moving box meets its fat box for some t in the remaining range (closed
    /// boxes; the segment of the box's centre against each fat box grown by the box's half extents). The
    /// callback and its return value are as for rayCast.
    template <class Fn>
    void boxCast(const Aabb& box, const Vec3& translation, float maxFraction, Fn&& fn) const
    {
        sweep(box.center(), box.extents(), translation, maxFraction, fn);
    }

    /// The incremental pair update: replaces `out` with every pair of overlapping fat boxes in which at
    /// least one proxy moved (was created, re-inserted by moveProxy, or touched) since the last call, and
    /// which share no non-zero group, each pair once, sorted by (proxyA, proxyB); then forgets the moved set.
    /// Pairs whose fat boxes overlapped before and still do are reported again when one side moved: callers
    /// keep their own pair set. Allocates only when `out` needs more capacity than it has.
    void findNewPairs(std::vector<BroadphasePair>& out);
    /// The same, with the moved proxies' queries shared out on `tasks` (null: the caller alone); the result
    /// is the same. When a 1 / kRebuildShare share of the proxies moved, one descent of the tree against
    /// itself (split over `tasks`) replaces the queries. The threads' finds go through buffers (see
    /// reservePairBuffers). With `sorted` false the pairs are the same set in an order that depends on the
    /// threads, for a caller that sorts them its own way (the World sorts by body slots).
    void findNewPairs(std::vector<BroadphasePair>& out, TaskPool* tasks, bool sorted = true);
    /// Room for `pairs` finds in each of `threads` per-thread buffers, so that findNewPairs on a pool of at
    /// most that many threads allocates nothing.
    void reservePairBuffers(int threads, std::size_t pairs);

    /// Replaces `out` with every pair of overlapping fat boxes that share no non-zero group, each once,
    /// sorted by (proxyA, proxyB).
    /// Leaves the moved set alone.
    void findAllPairs(std::vector<BroadphasePair>& out) const;

    /// Proxies currently marked as moved (pending for findNewPairs).
    std::int32_t movedProxyCount() const;
    /// The moved set itself, in the order the proxies were marked; may name proxies destroyed since (check
    /// isProxy). For an owner that queries another tree with them before findNewPairs forgets them.
    std::span<const std::int32_t> movedProxies() const { return m_moved; }
    /// Forgets the moved set without looking for pairs (an owner that found them itself).
    void forgetMoved();

    /// Rebuilds the internal nodes top down over the live proxies, splitting each set at the median of the
    /// box centres along the axis where the centres spread most (ties by proxy id). Proxy ids, boxes, user
    /// data and the moved set stay; the result is balanced (an AVL tree) and, for proxies that do not move,
    /// a better tree for queries than incremental insertion makes (fewer nodes a ray visits). Deterministic;
    /// O(n log n); allocates only to grow its scratch. For a tree of static boxes after they change.
    void rebuild();

    /// Height of the tree: 0 for an empty tree or a single leaf, else 1 + the height of the taller child.
    int height() const { return m_root == kNullProxy ? 0 : m_nodes[m_root].height; }
    /// Live proxies.
    std::int32_t proxyCount() const { return m_proxyCount; }
    /// Nodes in use (leaves and internal nodes): 2 * proxyCount() - 1 for a non-empty tree.
    std::int32_t nodeCount() const { return m_nodeCount; }
    /// Size of the node pool; it grows only when nodeCount() would exceed it.
    std::int32_t nodeCapacity() const { return static_cast<std::int32_t>(m_nodes.size()); }
    /// Quality metric: summed surface area of the internal nodes over the root's surface area (1 for a
    /// single pair of leaves; lower is better for a given scene). 0 for a tree without internal nodes or
    /// with a flat root.
    float areaRatio() const;
    /// Checks the whole structure: links, heights, AVL balance, exact unions (inner boxes that hold their
    /// children while deferred moves wait for commitMoves), counts, free list, moved and deferred sets. For
    /// tests and debugging; O(nodes), may allocate.
    bool validate() const;
    /// A 64-bit FNV-1a hash of the node pool, root, free list, moved and deferred sets: equal hashes mean
    /// (with overwhelming likelihood) identical trees. For determinism tests.
    std::uint64_t structureHash() const;

    const BroadphaseConfig& config() const { return m_config; }

  private:
    struct Node
    {
        Aabb box{};                       ///< 24 bytes: fat box (leaf) or union of the children
        std::uint64_t userData = 0;       ///< 8 bytes: leaves only
        std::int32_t parent = kNullProxy; ///< 4 bytes: or the next free node while on the free list
        std::int32_t child1 = kNullProxy; ///< 4 bytes: kNullProxy for leaves
        std::int32_t child2 = kNullProxy; ///< 4 bytes
        std::int16_t height = -1;         ///< 2 bytes: 0 leaf, > 0 internal, -1 free
        bool inMovedSet = false; ///< 1 byte: listed in m_moved (kept across free/reuse until flushed)
        bool inDeferred = false; ///< 1 byte: listed in m_deferred (kept across free/reuse until committed)

        bool isLeaf() const { return height == 0; }
    };
    static_assert(sizeof(Node) == 48, "Node is the hot record of every traversal; keep it at 48 bytes");

    /// Depth-first traversal stack: the height bound keeps it within the inline array; the vector is a
    /// fallback that a valid tree never touches.
    template <class T> class Stack
    {
      public:
        void push(const T& item)
        {
            if (m_size < kInline)
            {
                m_inline[m_size] = item;
            }
            else
            {
                m_overflow.push_back(item);
            }
            ++m_size;
        }
        T pop()
        {
            --m_size;
            if (m_size < kInline)
            {
                return m_inline[m_size];
            }
            const T item = m_overflow.back();
            m_overflow.pop_back();
            return item;
        }
        bool empty() const { return m_size == 0; }

      private:
        static constexpr std::size_t kInline = 96;
        std::array<T, kInline> m_inline;
        std::vector<T> m_overflow;
        std::size_t m_size = 0;
    };
    using TraversalStack = Stack<std::int32_t>;

    struct Segment
    {
        Vec3 origin{};
        /// 1 / translation per axis; 1e30 on an axis the segment is parallel to (no 0 * inf NaN in the
        /// slab test: a box missed on that axis by less than about 1e-30 m may be reported, none met is
        /// missed)
        Vec3 inverseTranslation{};
    };
    static Segment makeSegment(const Vec3& origin, const Vec3& translation);
    /// Whether the segment meets `box` grown by `grow` for some t in [0, maxFraction]; `enter` is the first
    /// such t.
    static bool segmentMeetsBox(const Segment& segment, const Aabb& box, const Vec3& grow, float maxFraction,
                                float& enter);
    /// rayCast and boxCast: the segment of the centre against every node box grown by `halfExtents`.
    template <class Fn>
    void sweep(const Vec3& origin, const Vec3& halfExtents, const Vec3& translation, float maxFraction,
               Fn& fn) const
    {
        if (m_root == kNullProxy || !(maxFraction >= 0.0f))
        {
            return;
        }
        const Segment segment = makeSegment(origin, translation);
        struct Entry
        {
            std::int32_t node;
            float enter;
        };
        float rootEnter = 0.0f;
        if (!segmentMeetsBox(segment, m_nodes[m_root].box, halfExtents, maxFraction, rootEnter))
        {
            return;
        }
        Stack<Entry> stack;
        stack.push({m_root, rootEnter});
        while (!stack.empty())
        {
            const Entry entry = stack.pop();
            if (entry.enter > maxFraction)
            {
                continue; // clipped since it was pushed
            }
            const Node& node = m_nodes[entry.node];
            if (node.isLeaf())
            {
                const float value = fn(entry.node, maxFraction);
                if (value == 0.0f)
                {
                    return;
                }
                if (value > 0.0f && value < maxFraction)
                {
                    maxFraction = value;
                }
                continue;
            }
            // Growing every box by the same amount keeps a child's box inside its parent's (rounding is
            // monotonic), so the pruning never loses a leaf the segment meets. The nearer child goes on
            // top, so hits come roughly near to far and clip the rest sooner.
            float enter1 = 0.0f;
            float enter2 = 0.0f;
            const bool meets1 =
                segmentMeetsBox(segment, m_nodes[node.child1].box, halfExtents, maxFraction, enter1);
            const bool meets2 =
                segmentMeetsBox(segment, m_nodes[node.child2].box, halfExtents, maxFraction, enter2);
            if (meets1 && meets2)
            {
                if (enter1 <= enter2)
                {
                    stack.push({node.child2, enter2});
                    stack.push({node.child1, enter1});
                }
                else
                {
                    stack.push({node.child1, enter1});
                    stack.push({node.child2, enter2});
                }
            }
            else if (meets1)
            {
                stack.push({node.child1, enter1});
            }
            else if (meets2)
            {
                stack.push({node.child2, enter2});
            }
        }
    }

    std::int32_t allocateNode();
    void freeNode(std::int32_t index);
    void insertLeaf(std::int32_t leaf);
    void removeLeaf(std::int32_t leaf);
    std::int32_t findBestSibling(const Aabb& box) const;
    void refitAndBalanceUpward(std::int32_t index);
    std::int32_t balance(std::int32_t index);
    std::int32_t liftChild(std::int32_t index, std::int32_t lifted);
    void rotateForArea(std::int32_t index);
    void refit(std::int32_t index);
    /// Sets the boxes of the inner nodes below `index` to their children's union, bottom up, and returns
    /// its box; adds the inner nodes' perimeters to `innerPerimeter`.
    Aabb refitBelow(std::int32_t index, double& innerPerimeter);
    /// The group tag of an inner node with these children (see m_groups).
    std::uint32_t groupOver(std::int32_t child1, std::int32_t child2) const
    {
        return m_groups[child1] == m_groups[child2] ? m_groups[child1] : 0u;
    }
    void replaceChild(std::int32_t parent, std::int32_t oldChild, std::int32_t newChild);
    void markMoved(std::int32_t proxyId);
    /// Two nodes whose leaves' pairs selfPairs is to find (a node with itself: the pairs within its subtree).
    using NodePair = std::pair<std::int32_t, std::int32_t>;
    /// Appends every pair of overlapping leaves, each once as (smaller id, larger), of which at least one is
    /// in the moved set: one descent of the tree against itself, which finds the pairs of many moved
    /// proxies in a fraction of the time of as many queries (findNewPairs uses it when a
    /// 1 / kRebuildShare share of the proxies moved).
    /// On `tasks` (null: the caller alone) the descent is split into node pairs shared out to the threads,
    /// whose finds are appended in thread order (the set is the same; callers sort).
    void selfPairs(std::vector<BroadphasePair>& out, TaskPool* tasks);
    /// fn(k, into, thread) for k in [0, count) on `tasks`, each thread finding into its own buffer
    /// (m_threadPairs); the buffers are then appended to `out` in thread order.
    template <class Fn>
    void findOnThreads(TaskPool& tasks, std::uint32_t count, std::uint32_t grain,
                       std::vector<BroadphasePair>& out, Fn&& fn);
    /// selfPairStep until `stack` is empty.
    void descend(std::vector<NodePair>& stack, std::vector<BroadphasePair>& out) const;
    /// One node pair of selfPairs' descent: pops it from `stack`, pushes the pairs below it, and appends a
    /// pair of overlapping leaves (one moved) to `out`.
    void selfPairStep(std::vector<NodePair>& stack, std::vector<BroadphasePair>& out) const;
    /// rebuild's recursion over proxies [first, first + count) of m_rebuildScratch: returns the subtree.
    std::int32_t buildMedian(std::size_t first, std::size_t count);

    BroadphaseConfig m_config;
    std::vector<Node> m_nodes; ///< the pool; leaves' indices are proxy ids
    /// Per node of the pool (kept beside it: Node is full): a leaf's group; an inner node's, its children's
    /// when they agree, else 0 (every proxy below shares it when non-zero: groupOver).
    std::vector<std::uint32_t> m_groups;
    double m_builtInnerPerimeter = 0.0;   ///< that sum after the last rebuild (0: none yet)
    double m_builtRootPerimeter = 0.0;    ///< the root's perimeter then
    std::vector<std::int32_t> m_moved;    ///< proxies moved since the last findNewPairs, no repeats
    std::vector<std::int32_t> m_deferred; ///< proxies deferMove changed since the last commitMoves
    std::vector<NodePair> m_pairStack;    ///< selfPairs' node pairs to visit
    std::vector<NodePair> m_pairFrontier; ///< selfPairs' split: the level being expanded
    PerThread<std::vector<NodePair>> m_threadStacks; ///< selfPairs' stack per pool thread
    /// A proxy for rebuild: its box's min + max (twice its centre), kept beside its id so that the median
    /// splits read neither the nodes nor a scaled copy.
    struct RebuildEntry
    {
        Vec3 doubledCenter;
        std::int32_t id;
    };
    std::vector<RebuildEntry> m_rebuildScratch;           ///< rebuild's proxies
    PerThread<std::vector<BroadphasePair>> m_threadPairs; ///< findNewPairs' finds per pool thread
    std::int32_t m_root = kNullProxy;
    std::int32_t m_freeList = kNullProxy; ///< LIFO, threaded through Node::parent
    std::int32_t m_nodeCount = 0;
    std::int32_t m_proxyCount = 0;
};

inline BroadphaseTree::Segment BroadphaseTree::makeSegment(const Vec3& origin, const Vec3& translation)
{
    Segment segment;
    segment.origin = origin;
    for (int axis = 0; axis < 3; ++axis)
    {
        const float inverse = 1.0f / translation[axis];
        segment.inverseTranslation[axis] = std::isfinite(inverse) ? inverse : 1e30f;
    }
    return segment;
}

// Slab test. For a box inside another, each per-axis interval of t is inside the other's (float subtraction
// and multiplication are monotonic), so a leaf the segment meets always has ancestors it meets too: the
// traversal never prunes a hit.
inline bool BroadphaseTree::segmentMeetsBox(const Segment& segment, const Aabb& box, const Vec3& grow,
                                            float maxFraction, float& enter)
{
    float first = 0.0f;
    float last = maxFraction;
    for (int axis = 0; axis < 3; ++axis)
    {
        const float o = segment.origin[axis];
        const float inverse = segment.inverseTranslation[axis];
        const float t1 = (box.min[axis] - grow[axis] - o) * inverse;
        const float t2 = (box.max[axis] + grow[axis] - o) * inverse;
        first = std::max(first, std::min(t1, t2));
        last = std::min(last, std::max(t1, t2));
    }
    enter = first;
    return first <= last;
}

} // namespace polytope::physics

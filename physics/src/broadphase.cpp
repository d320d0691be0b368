// Polytope physics: the broadphase tree. The design notes are atop broadphase.h.
#include "polytope/physics/broadphase.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>

namespace polytope::physics
{
namespace
{

constexpr std::int32_t kMaxNodes = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kMinGrowth = 16;

bool isValidBox(const Aabb& box)
{
    return isFinite(box.min) && isFinite(box.max) && box.min.x <= box.max.x && box.min.y <= box.max.y &&
           box.min.z <= box.max.z;
}

BroadphaseConfig sanitized(const BroadphaseConfig& config)
{
    BroadphaseConfig out = config;
    out.initialProxyCapacity = std::clamp(config.initialProxyCapacity, 0, kMaxNodes / 2);
    return out;
}

bool sameBox(const Aabb& a, const Aabb& b)
{
    return a.min == b.min && a.max == b.max;
}

struct Fnv1a
{
    std::uint64_t state = 14695981039346656037ull;

    void bytes(std::uint64_t value, int count)
    {
        for (int i = 0; i < count; ++i)
        {
            state ^= (value >> (8 * i)) & 0xffu;
            state *= 1099511628211ull;
        }
    }
    void add(std::int32_t value) { bytes(static_cast<std::uint32_t>(value), 4); }
    void add(std::uint64_t value) { bytes(value, 8); }
    void add(float value) { bytes(std::bit_cast<std::uint32_t>(value), 4); }
    void add(const Vec3& v)
    {
        add(v.x);
        add(v.y);
        add(v.z);
    }
};

} // namespace

BroadphaseTree::BroadphaseTree(const BroadphaseConfig& config) : m_config(sanitized(config))
{
    // Thread the initial pool onto the free list, lowest index on top.
    const std::int32_t capacity = 2 * m_config.initialProxyCapacity;
    m_nodes.resize(static_cast<std::size_t>(capacity));
    m_groups.resize(static_cast<std::size_t>(capacity), 0u);
    for (std::int32_t i = capacity - 1; i >= 0; --i)
    {
        m_nodes[i].parent = m_freeList;
        m_freeList = i;
    }
    m_moved.reserve(static_cast<std::size_t>(m_config.initialProxyCapacity));
    m_deferred.reserve(static_cast<std::size_t>(m_config.initialProxyCapacity));
    m_rebuildScratch.reserve(static_cast<std::size_t>(m_config.initialProxyCapacity));
    m_pairStack.reserve(256);
    m_pairFrontier.reserve(256);
}

std::int32_t BroadphaseTree::allocateNode()
{
    if (m_freeList == kNullProxy)
    {
        const std::int32_t oldSize = nodeCapacity();
        if (oldSize == kMaxNodes)
        {
            return kNullProxy;
        }
        const std::int32_t newSize = oldSize > kMaxNodes / 2 ? kMaxNodes : std::max(2 * oldSize, kMinGrowth);
        m_nodes.resize(static_cast<std::size_t>(newSize));
        m_groups.resize(static_cast<std::size_t>(newSize), 0u);
        for (std::int32_t i = newSize - 1; i >= oldSize; --i)
        {
            m_nodes[i].parent = m_freeList;
            m_freeList = i;
        }
    }
    const std::int32_t index = m_freeList;
    Node& node = m_nodes[index];
    m_freeList = node.parent;
    // The list flags belong to m_moved's and m_deferred's bookkeeping, not to the node's life.
    const bool inMovedSet = node.inMovedSet;
    const bool inDeferred = node.inDeferred;
    node = Node{};
    node.inMovedSet = inMovedSet;
    node.inDeferred = inDeferred;
    m_groups[index] = 0;
    node.height = 0;
    ++m_nodeCount;
    return index;
}

void BroadphaseTree::freeNode(std::int32_t index)
{
    Node& node = m_nodes[index];
    node.parent = m_freeList;
    node.child1 = kNullProxy;
    node.child2 = kNullProxy;
    node.height = -1;
    node.userData = 0;
    m_groups[index] = 0;
    m_freeList = index;
    --m_nodeCount;
}

void BroadphaseTree::markMoved(std::int32_t proxyId)
{
    Node& node = m_nodes[proxyId];
    if (!node.inMovedSet)
    {
        node.inMovedSet = true;
        m_moved.push_back(proxyId);
    }
}

std::int32_t BroadphaseTree::createProxy(const Aabb& box, std::uint64_t userData, std::uint32_t group)
{
    // A proxy needs its leaf and, unless it is the first, one internal node.
    if (!isValidBox(box) || m_nodeCount > kMaxNodes - 2)
    {
        return kNullProxy;
    }
    const std::int32_t leaf = allocateNode();
    m_nodes[leaf].box = box;
    m_nodes[leaf].userData = userData;
    m_groups[leaf] = group;
    insertLeaf(leaf);
    markMoved(leaf);
    ++m_proxyCount;
    return leaf;
}

bool BroadphaseTree::destroyProxy(std::int32_t proxyId)
{
    if (!isProxy(proxyId))
    {
        return false;
    }
    // Remove first, so the leaf goes on the free list last and is the next id handed out.
    removeLeaf(proxyId);
    freeNode(proxyId);
    --m_proxyCount;
    return true;
}

bool BroadphaseTree::setProxyGroup(std::int32_t proxyId, std::uint32_t group)
{
    if (!isProxy(proxyId))
    {
        return false;
    }
    m_groups[proxyId] = group;
    for (std::int32_t index = m_nodes[proxyId].parent; index != kNullProxy; index = m_nodes[index].parent)
    {
        m_groups[index] = groupOver(m_nodes[index].child1, m_nodes[index].child2);
    }
    return true;
}

bool BroadphaseTree::moveProxy(std::int32_t proxyId, const Aabb& box)
{
    assert(isProxy(proxyId) && isValidBox(box));
    if (!isProxy(proxyId) || !isValidBox(box) || sameBox(m_nodes[proxyId].box, box))
    {
        return false;
    }
    removeLeaf(proxyId);
    m_nodes[proxyId].box = box;
    insertLeaf(proxyId);
    markMoved(proxyId);
    return true;
}

bool BroadphaseTree::deferMove(std::int32_t proxyId, const Aabb& box)
{
    assert(isProxy(proxyId) && isValidBox(box));
    if (!isProxy(proxyId) || !isValidBox(box) || sameBox(m_nodes[proxyId].box, box))
    {
        return false;
    }
    Node& leaf = m_nodes[proxyId];
    leaf.box = box;
    // Every ancestor keeps holding its leaves, so queries stay exact until the re-insertion.
    for (std::int32_t index = leaf.parent; index != kNullProxy; index = m_nodes[index].parent)
    {
        Aabb& held = m_nodes[index].box;
        if (held.contains(box))
        {
            break; // and so do the ones above
        }
        held = unionOf(held, box);
    }
    if (!leaf.inDeferred)
    {
        leaf.inDeferred = true;
        m_deferred.push_back(proxyId);
    }
    markMoved(proxyId);
    return true;
}

void BroadphaseTree::commitMoves()
{
    if (m_deferred.empty())
    {
        return;
    }
    if (static_cast<std::int32_t>(m_deferred.size()) * kRebuildShare >= m_proxyCount)
    {
        // Most of the tree moved (a swinging grid, a falling pile): the boxes of the inner nodes are
        // refitted over the same shape, unless that shape has grown loose since the last rebuild.
        double innerPerimeter = 0.0;
        const double rootPerimeter =
            m_root == kNullProxy ? 0.0 : refitBelow(m_root, innerPerimeter).perimeter();
        if (!(innerPerimeter <= kLooseRefit * m_builtInnerPerimeter * (rootPerimeter / m_builtRootPerimeter)))
        {
            rebuild();
        }
    }
    else
    {
        // Each re-insertion refits its old ancestors from their children (removeLeaf), which takes back the
        // growth deferMove gave them: every grown node has a waiting proxy below it.
        for (const std::int32_t proxy : m_deferred)
        {
            if (isProxy(proxy))
            {
                removeLeaf(proxy);
                insertLeaf(proxy);
            }
        }
    }
    for (const std::int32_t proxy : m_deferred)
    {
        m_nodes[proxy].inDeferred = false;
    }
    m_deferred.clear();
}

bool BroadphaseTree::touchProxy(std::int32_t proxyId)
{
    if (!isProxy(proxyId))
    {
        return false;
    }
    markMoved(proxyId);
    return true;
}

// Greedy branch-and-bound descent. Making node s the sibling costs the area of the new parent,
// area(box + s), plus the growth of every ancestor of s, which all come to contain box. Going below a child c
// costs at least area(box) (the new parent's lower bound) plus the growth of c and its ancestors, so a child
// is entered only while that bound beats the best cost seen; the cheaper bound is followed.
// Only nodes of height <= 1 are candidates: in a tree where every node's children differ in height by at
// most one, a leaf's sibling is never taller than 1, and a new parent over a taller sibling would be out
// of balance by more than one rotation can repair. Such a parent has height <= 2, so every ancestor grows by
// at most one level and refitAndBalanceUpward restores the balance with one rotation per node.
std::int32_t BroadphaseTree::findBestSibling(const Aabb& box) const
{
    constexpr float kInfinity = std::numeric_limits<float>::infinity();
    const float boxArea = box.perimeter();
    std::int32_t best = kNullProxy;
    float bestCost = kInfinity;
    auto consider = [&](std::int32_t candidate, float cost)
    {
        if (m_nodes[candidate].height <= 1 && cost < bestCost)
        {
            best = candidate;
            bestCost = cost;
        }
    };
    consider(m_root, unionOf(box, m_nodes[m_root].box).perimeter());

    float inherited = 0.0f; // growth of the current node and its ancestors if box goes below it
    std::int32_t index = m_root;
    while (!m_nodes[index].isLeaf())
    {
        const Node& node = m_nodes[index];
        inherited += unionOf(box, node.box).perimeter() - node.box.perimeter();

        const Node& first = m_nodes[node.child1];
        const Node& second = m_nodes[node.child2];
        const float unionFirst = unionOf(box, first.box).perimeter();
        const float unionSecond = unionOf(box, second.box).perimeter();
        consider(node.child1, unionFirst + inherited);
        consider(node.child2, unionSecond + inherited);

        const float boundFirst =
            first.isLeaf() ? kInfinity : boxArea + inherited + unionFirst - first.box.perimeter();
        const float boundSecond =
            second.isLeaf() ? kInfinity : boxArea + inherited + unionSecond - second.box.perimeter();
        const bool firstIsCheaper = boundFirst <= boundSecond;
        const float bound = firstIsCheaper ? boundFirst : boundSecond;
        // Keep going while nothing was found: a node of height >= 2 always has a child of height >= 1, so the
        // descent reaches a candidate.
        if (best != kNullProxy && !(bound < bestCost))
        {
            break;
        }
        index = firstIsCheaper ? node.child1 : node.child2;
    }
    assert(best != kNullProxy);
    return best;
}

void BroadphaseTree::replaceChild(std::int32_t parent, std::int32_t oldChild, std::int32_t newChild)
{
    if (parent == kNullProxy)
    {
        m_root = newChild;
        return;
    }
    Node& node = m_nodes[parent];
    if (node.child1 == oldChild)
    {
        node.child1 = newChild;
    }
    else
    {
        assert(node.child2 == oldChild);
        node.child2 = newChild;
    }
}

void BroadphaseTree::insertLeaf(std::int32_t leaf)
{
    if (m_root == kNullProxy)
    {
        m_root = leaf;
        m_nodes[leaf].parent = kNullProxy;
        return;
    }
    const std::int32_t sibling = findBestSibling(m_nodes[leaf].box);
    const std::int32_t newParent = allocateNode(); // may grow the pool: no Node references across this
    const std::int32_t oldParent = m_nodes[sibling].parent;

    Node& parent = m_nodes[newParent];
    parent.parent = oldParent;
    parent.child1 = sibling;
    parent.child2 = leaf;
    parent.box = unionOf(m_nodes[sibling].box, m_nodes[leaf].box);
    parent.height = static_cast<std::int16_t>(m_nodes[sibling].height + 1);
    m_groups[newParent] = groupOver(sibling, leaf);
    m_nodes[sibling].parent = newParent;
    m_nodes[leaf].parent = newParent;
    replaceChild(oldParent, sibling, newParent);

    refitAndBalanceUpward(oldParent);
}

void BroadphaseTree::removeLeaf(std::int32_t leaf)
{
    if (leaf == m_root)
    {
        m_root = kNullProxy;
        return;
    }
    const std::int32_t parent = m_nodes[leaf].parent;
    const std::int32_t grandparent = m_nodes[parent].parent;
    const std::int32_t sibling =
        m_nodes[parent].child1 == leaf ? m_nodes[parent].child2 : m_nodes[parent].child1;

    replaceChild(grandparent, parent, sibling);
    m_nodes[sibling].parent = grandparent;
    m_nodes[leaf].parent = kNullProxy;
    freeNode(parent);

    refitAndBalanceUpward(grandparent);
}

void BroadphaseTree::refit(std::int32_t index)
{
    Node& node = m_nodes[index];
    const Node& first = m_nodes[node.child1];
    const Node& second = m_nodes[node.child2];
    node.box = unionOf(first.box, second.box);
    node.height = static_cast<std::int16_t>(1 + std::max(first.height, second.height));
    m_groups[index] = groupOver(node.child1, node.child2);
}

void BroadphaseTree::refitAndBalanceUpward(std::int32_t index)
{
    while (index != kNullProxy)
    {
        index = balance(index);
        rotateForArea(index);
        refit(index);
        index = m_nodes[index].parent;
    }
}

std::int32_t BroadphaseTree::balance(std::int32_t index)
{
    const Node& node = m_nodes[index];
    if (node.isLeaf())
    {
        return index;
    }
    const int difference = m_nodes[node.child2].height - m_nodes[node.child1].height;
    assert(difference >= -2 && difference <= 2); // the rules in broadphase.h keep one rotation enough
    if (difference > 1)
    {
        return liftChild(index, node.child2);
    }
    if (difference < -1)
    {
        return liftChild(index, node.child1);
    }
    return index;
}

// Rotation: `lifted`, the child of `index` that is two levels taller than its sibling, takes index's place;
// index becomes a child of lifted and adopts one of lifted's children. Lifted keeps its taller child, so both
// end up balanced (lifted's children differ by at most one, being balanced themselves). When both children
// are equally tall either works, and the one whose departure leaves the smaller box at `index` moves across.
std::int32_t BroadphaseTree::liftChild(std::int32_t index, std::int32_t lifted)
{
    Node& down = m_nodes[index];
    Node& up = m_nodes[lifted];
    const std::int32_t stays = down.child1 == lifted ? down.child2 : down.child1; // index's other child
    const Node& first = m_nodes[up.child1];
    const Node& second = m_nodes[up.child2];

    bool moveFirst = false; // which of lifted's children moves across to index
    if (first.height != second.height)
    {
        moveFirst = first.height < second.height;
    }
    else
    {
        const Aabb& staysBox = m_nodes[stays].box;
        moveFirst = unionOf(staysBox, first.box).perimeter() < unionOf(staysBox, second.box).perimeter();
    }
    const std::int32_t moved = moveFirst ? up.child1 : up.child2;

    // lifted takes index's place under index's parent.
    up.parent = down.parent;
    replaceChild(down.parent, index, lifted);
    // index takes the moved child's slot under lifted.
    if (moveFirst)
    {
        up.child1 = index;
    }
    else
    {
        up.child2 = index;
    }
    down.parent = lifted;
    // The moved child takes lifted's slot under index.
    if (down.child1 == lifted)
    {
        down.child1 = moved;
    }
    else
    {
        down.child2 = moved;
    }
    m_nodes[moved].parent = index;

    refit(index);
    refit(lifted);
    return lifted;
}

// Area rotation (the idea of Box2D v3's tree rotations): at node A with children B and C, swapping B with a
// child F of C leaves A's box as it is and changes C's box from area(F + G) to area(B + G). The best of the
// four such swaps (B with C's children, C with B's children) is made when it reduces the area, keeps both
// changed nodes balanced and leaves A's height as it was (so the ancestors' balance is not disturbed; in
// practice this admits only swaps that push the shorter child down). The subtrees moved are untouched, so
// they stay balanced themselves.
void BroadphaseTree::rotateForArea(std::int32_t index)
{
    const Node& node = m_nodes[index];
    if (node.isLeaf())
    {
        return;
    }
    // node.height may be stale here (refit comes after); the children's heights are current.
    const int height = 1 + std::max<int>(m_nodes[node.child1].height, m_nodes[node.child2].height);
    float bestGain = 0.0f;
    std::int32_t bestOuter = kNullProxy; // the child that goes down
    std::int32_t bestInner = kNullProxy; // the grandchild that comes up
    auto tryPair = [&](std::int32_t outer, std::int32_t uncle)
    {
        const Node& parentOfInner = m_nodes[uncle];
        if (parentOfInner.isLeaf())
        {
            return;
        }
        const Node& moving = m_nodes[outer];
        for (const std::int32_t inner : {parentOfInner.child1, parentOfInner.child2})
        {
            const std::int32_t kept =
                inner == parentOfInner.child1 ? parentOfInner.child2 : parentOfInner.child1;
            const Node& keptNode = m_nodes[kept];
            const int newUncleHeight = 1 + std::max<int>(moving.height, keptNode.height);
            const int innerHeight = m_nodes[inner].height;
            if (std::abs(moving.height - keptNode.height) > 1 || std::abs(innerHeight - newUncleHeight) > 1 ||
                1 + std::max(innerHeight, newUncleHeight) != height)
            {
                continue;
            }
            const float gain = parentOfInner.box.perimeter() - unionOf(moving.box, keptNode.box).perimeter();
            if (gain > bestGain)
            {
                bestGain = gain;
                bestOuter = outer;
                bestInner = inner;
            }
        }
    };
    tryPair(node.child1, node.child2);
    tryPair(node.child2, node.child1);
    if (bestOuter == kNullProxy)
    {
        return;
    }
    const std::int32_t uncle = m_nodes[bestInner].parent;
    replaceChild(index, bestOuter, bestInner);
    replaceChild(uncle, bestInner, bestOuter);
    m_nodes[bestInner].parent = index;
    m_nodes[bestOuter].parent = uncle;
    refit(uncle);
}

void BroadphaseTree::findNewPairs(std::vector<BroadphasePair>& out)
{
    findNewPairs(out, nullptr);
}

void BroadphaseTree::reservePairBuffers(int threads, std::size_t pairs)
{
    m_threadPairs.resize(static_cast<std::size_t>(std::max(threads, 1)));
    for (std::vector<BroadphasePair>& buffer : m_threadPairs)
    {
        buffer.reserve(pairs);
    }
    m_threadStacks.resize(static_cast<std::size_t>(std::max(threads, 1)));
    for (std::vector<NodePair>& stack : m_threadStacks)
    {
        stack.reserve(256);
    }
}

template <class Fn>
void BroadphaseTree::findOnThreads(TaskPool& tasks, std::uint32_t count, std::uint32_t grain,
                                   std::vector<BroadphasePair>& out, Fn&& fn)
{
    const auto threads = static_cast<std::size_t>(tasks.threadCount());
    if (m_threadPairs.size() < threads)
    {
        m_threadPairs.resize(threads);
    }
    for (std::vector<BroadphasePair>& buffer : m_threadPairs)
    {
        buffer.clear();
    }
    tasks.parallelFor(count, grain,
                      [&](std::uint32_t begin, std::uint32_t end, int thread)
                      {
                          for (std::uint32_t k = begin; k < end; ++k)
                          {
                              fn(k, m_threadPairs[static_cast<std::size_t>(thread)], thread);
                          }
                      });
    for (const std::vector<BroadphasePair>& buffer : m_threadPairs)
    {
        out.insert(out.end(), buffer.begin(), buffer.end());
    }
}

void BroadphaseTree::findNewPairs(std::vector<BroadphasePair>& out, TaskPool* tasks, bool sorted)
{
    out.clear();
    const auto findFor = [&](std::int32_t query, std::vector<BroadphasePair>& into)
    {
        if (!isProxy(query))
        {
            return; // destroyed after it moved
        }
        queryAabb(
            m_nodes[query].box,
            [&](std::int32_t other)
            {
                // Two moved proxies find each other twice: keep the find made by the smaller id's
                // query.
                const bool otherQueries = m_nodes[other].inMovedSet;
                if (other != query && !(otherQueries && other < query))
                {
                    into.push_back(query < other ? BroadphasePair{query, other}
                                                 : BroadphasePair{other, query});
                }
                return true;
            },
            m_groups[query]);
    };
    // Moved proxies per chunk of the parallel queries.
    constexpr std::uint32_t kQueryGrain = 16;
    const auto movedCount = static_cast<std::uint32_t>(m_moved.size());
    if (static_cast<std::int32_t>(movedCount) * kRebuildShare >= m_proxyCount && m_proxyCount > 1)
    {
        selfPairs(out, tasks);
    }
    else if (tasks == nullptr || movedCount <= kQueryGrain)
    {
        for (const std::int32_t query : m_moved)
        {
            findFor(query, out);
        }
    }
    else
    {
        // The queries only read the tree; each thread keeps its finds apart, and the sort below puts them
        // in the one order whatever thread found what.
        findOnThreads(*tasks, movedCount, kQueryGrain, out,
                      [&](std::uint32_t k, std::vector<BroadphasePair>& into, int)
                      { findFor(m_moved[k], into); });
    }
    for (const std::int32_t index : m_moved)
    {
        m_nodes[index].inMovedSet = false;
    }
    m_moved.clear();
    if (sorted)
    {
        std::sort(out.begin(), out.end());
    }
}

void BroadphaseTree::selfPairStep(std::vector<NodePair>& stack, std::vector<BroadphasePair>& out) const
{
    const auto [a, b] = stack.back();
    stack.pop_back();
    const Node& first = m_nodes[a];
    // Proxies that share a non-zero group never pair: a subtree all of one group is passed over, against
    // itself or against another of the same group.
    if (m_groups[a] != 0 && m_groups[a] == m_groups[b])
    {
        return;
    }
    if (a == b)
    {
        // The pairs within a subtree: within each child, and across them.
        if (!first.isLeaf())
        {
            stack.push_back({first.child1, first.child2});
            stack.push_back({first.child2, first.child2});
            stack.push_back({first.child1, first.child1});
        }
        return;
    }
    const Node& second = m_nodes[b];
    if (!first.box.overlaps(second.box))
    {
        return;
    }
    if (first.isLeaf() && second.isLeaf())
    {
        if (first.inMovedSet || second.inMovedSet)
        {
            out.push_back(a < b ? BroadphasePair{a, b} : BroadphasePair{b, a});
        }
        return;
    }
    // Down the taller side (the inner node when the other is a leaf).
    if (second.isLeaf() || (!first.isLeaf() && first.height >= second.height))
    {
        stack.push_back({first.child2, b});
        stack.push_back({first.child1, b});
    }
    else
    {
        stack.push_back({a, second.child2});
        stack.push_back({a, second.child1});
    }
}

void BroadphaseTree::descend(std::vector<NodePair>& stack, std::vector<BroadphasePair>& out) const
{
    while (!stack.empty())
    {
        selfPairStep(stack, out);
    }
}

void BroadphaseTree::selfPairs(std::vector<BroadphasePair>& out, TaskPool* tasks)
{
    if (m_root == kNullProxy)
    {
        return;
    }
    m_pairStack.clear();
    m_pairStack.push_back({m_root, m_root});
    const int threads = tasks == nullptr ? 1 : tasks->threadCount();
    if (threads <= 1)
    {
        descend(m_pairStack, out);
        return;
    }
    // On a pool: split the descent breadth first, on this thread, into enough node pairs to share out;
    // then each thread descends its share with its own stack into its own buffer.
    constexpr std::size_t kSharedPairs = 64;
    while (!m_pairStack.empty() && m_pairStack.size() < kSharedPairs)
    {
        m_pairFrontier.swap(m_pairStack);
        m_pairStack.clear();
        for (const NodePair& pair : m_pairFrontier)
        {
            m_pairStack.push_back(pair);
            selfPairStep(m_pairStack, out); // pops `pair`, pushes the pairs below it
        }
    }
    if (m_threadStacks.size() < static_cast<std::size_t>(threads))
    {
        m_threadStacks.resize(static_cast<std::size_t>(threads));
    }
    findOnThreads(*tasks, static_cast<std::uint32_t>(m_pairStack.size()), 1, out,
                  [&](std::uint32_t k, std::vector<BroadphasePair>& into, int thread)
                  {
                      std::vector<NodePair>& stack = m_threadStacks[static_cast<std::size_t>(thread)];
                      stack.clear();
                      stack.push_back(m_pairStack[k]);
                      descend(stack, into);
                  });
}

void BroadphaseTree::findAllPairs(std::vector<BroadphasePair>& out) const
{
    out.clear();
    const std::int32_t capacity = nodeCapacity();
    for (std::int32_t query = 0; query < capacity; ++query)
    {
        if (!m_nodes[query].isLeaf())
        {
            continue;
        }
        queryAabb(
            m_nodes[query].box,
            [&](std::int32_t other)
            {
                if (other > query)
                {
                    out.push_back({query, other});
                }
                return true;
            },
            m_groups[query]);
    }
    std::sort(out.begin(), out.end());
}

void BroadphaseTree::rebuild()
{
    if (m_root == kNullProxy || m_nodes[m_root].isLeaf())
    {
        return;
    }
    // Leaves in pool order; every internal node back to the free list, in pool order (both deterministic).
    m_rebuildScratch.clear();
    for (std::int32_t i = 0; i < nodeCapacity(); ++i)
    {
        if (m_nodes[i].height == 0)
        {
            m_rebuildScratch.push_back({m_nodes[i].box.min + m_nodes[i].box.max, i});
        }
    }
    for (std::int32_t i = nodeCapacity() - 1; i >= 0; --i)
    {
        if (m_nodes[i].height > 0)
        {
            freeNode(i);
        }
    }
    m_root = buildMedian(0, m_rebuildScratch.size());
    m_nodes[m_root].parent = kNullProxy;
    // The measure later refits are held to (commitMoves).
    m_builtInnerPerimeter = 0.0;
    refitBelow(m_root, m_builtInnerPerimeter);
    m_builtRootPerimeter = m_nodes[m_root].box.perimeter();
}

std::int32_t BroadphaseTree::buildMedian(std::size_t first, std::size_t count)
{
    RebuildEntry* const entries = m_rebuildScratch.data() + first;
    if (count == 1)
    {
        return entries[0].id;
    }
    // The spread of the doubled centres is exactly twice the centres' (scaling by 2 is exact), so the axis
    // is the one the centres spread most along.
    Vec3 lo = entries[0].doubledCenter;
    Vec3 hi = lo;
    for (std::size_t k = 1; k < count; ++k)
    {
        lo = minPerElem(lo, entries[k].doubledCenter);
        hi = maxPerElem(hi, entries[k].doubledCenter);
    }
    const Vec3 spread = hi - lo;
    const int axis = spread.x >= spread.y && spread.x >= spread.z ? 0 : (spread.y >= spread.z ? 1 : 2);
    // Halves of sizes count / 2 and count - count / 2: their heights differ by at most one, so the tree is
    // balanced the way the incremental updates keep it.
    const std::size_t half = count / 2;
    std::nth_element(entries, entries + half, entries + count,
                     [axis](const RebuildEntry& a, const RebuildEntry& b)
                     {
                         const float ca = a.doubledCenter[axis];
                         const float cb = b.doubledCenter[axis];
                         return ca < cb || (ca == cb && a.id < b.id);
                     });
    const std::int32_t left = buildMedian(first, half);
    const std::int32_t right = buildMedian(first + half, count - half);
    const std::int32_t index = allocateNode(); // a node freed above: the pool does not grow
    Node& node = m_nodes[index];
    node.child1 = left;
    node.child2 = right;
    node.box = unionOf(m_nodes[left].box, m_nodes[right].box);
    node.height = static_cast<std::int16_t>(1 + std::max(m_nodes[left].height, m_nodes[right].height));
    m_groups[index] = groupOver(left, right);
    m_nodes[left].parent = index;
    m_nodes[right].parent = index;
    return index;
}

Aabb BroadphaseTree::refitBelow(std::int32_t index, double& innerPerimeter)
{
    const Node& node = m_nodes[index];
    if (node.isLeaf())
    {
        return node.box;
    }
    const Aabb box =
        unionOf(refitBelow(node.child1, innerPerimeter), refitBelow(node.child2, innerPerimeter));
    m_nodes[index].box = box;
    innerPerimeter += box.perimeter();
    return box;
}

void BroadphaseTree::forgetMoved()
{
    for (const std::int32_t index : m_moved)
    {
        m_nodes[index].inMovedSet = false;
    }
    m_moved.clear();
}

std::int32_t BroadphaseTree::movedProxyCount() const
{
    std::int32_t count = 0;
    for (const std::int32_t index : m_moved)
    {
        count += isProxy(index) ? 1 : 0;
    }
    return count;
}

float BroadphaseTree::areaRatio() const
{
    if (m_root == kNullProxy || m_nodes[m_root].isLeaf())
    {
        return 0.0f;
    }
    const float rootArea = m_nodes[m_root].box.perimeter();
    if (!(rootArea > 0.0f))
    {
        return 0.0f;
    }
    // Summed in double: thousands of terms of mixed size.
    double total = 0.0;
    for (const Node& node : m_nodes)
    {
        if (node.height > 0)
        {
            total += node.box.perimeter();
        }
    }
    return static_cast<float>(total / rootArea);
}

bool BroadphaseTree::validate() const
{
    const std::int32_t capacity = nodeCapacity();
    auto inRange = [&](std::int32_t i) { return i >= 0 && i < capacity; };
    if (m_groups.size() != m_nodes.size())
    {
        return false;
    }
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(capacity), 0);
    // Exact unions, except that while deferred moves wait their ancestors may be grown (deferMove).
    const auto holdsChildren = [&](const Aabb& box, const Aabb& first, const Aabb& second)
    {
        const Aabb exact = unionOf(first, second);
        return m_deferred.empty() ? sameBox(box, exact) : box.contains(exact);
    };

    std::int32_t reached = 0;
    std::int32_t leaves = 0;
    if (m_root != kNullProxy)
    {
        if (!inRange(m_root) || m_nodes[m_root].parent != kNullProxy)
        {
            return false;
        }
        std::vector<std::int32_t> stack{m_root};
        while (!stack.empty())
        {
            const std::int32_t index = stack.back();
            stack.pop_back();
            if (seen[index] != 0)
            {
                return false; // a cycle or a shared child
            }
            seen[index] = 1;
            ++reached;
            const Node& node = m_nodes[index];
            if (node.isLeaf())
            {
                ++leaves;
                if (node.child1 != kNullProxy || node.child2 != kNullProxy || !isValidBox(node.box))
                {
                    return false;
                }
                continue;
            }
            if (node.height < 0 || !inRange(node.child1) || !inRange(node.child2) ||
                node.child1 == node.child2)
            {
                return false;
            }
            const Node& first = m_nodes[node.child1];
            const Node& second = m_nodes[node.child2];
            if (first.parent != index || second.parent != index || first.height < 0 || second.height < 0 ||
                node.height != 1 + std::max(first.height, second.height) ||
                std::abs(first.height - second.height) > 1 ||
                !holdsChildren(node.box, first.box, second.box) ||
                m_groups[index] != groupOver(node.child1, node.child2))
            {
                return false;
            }
            stack.push_back(node.child1);
            stack.push_back(node.child2);
        }
    }
    if (reached != m_nodeCount || leaves != m_proxyCount ||
        (m_proxyCount > 0 && m_nodeCount != 2 * m_proxyCount - 1))
    {
        return false;
    }

    std::int32_t freeCount = 0;
    for (std::int32_t index = m_freeList; index != kNullProxy; index = m_nodes[index].parent)
    {
        if (!inRange(index) || seen[index] != 0 || m_nodes[index].height != -1 || m_groups[index] != 0)
        {
            return false;
        }
        seen[index] = 2;
        ++freeCount;
    }
    if (freeCount + m_nodeCount != capacity)
    {
        return false;
    }

    std::int32_t flagged = 0;
    std::int32_t deferredFlags = 0;
    for (const Node& node : m_nodes)
    {
        flagged += node.inMovedSet ? 1 : 0;
        deferredFlags += node.inDeferred ? 1 : 0;
    }
    if (flagged != static_cast<std::int32_t>(m_moved.size()) ||
        deferredFlags != static_cast<std::int32_t>(m_deferred.size()))
    {
        return false;
    }
    for (const std::int32_t index : m_deferred)
    {
        if (!inRange(index) || !m_nodes[index].inDeferred)
        {
            return false;
        }
    }
    for (const std::int32_t index : m_moved)
    {
        if (!inRange(index) || !m_nodes[index].inMovedSet)
        {
            return false;
        }
    }
    return true;
}

std::uint64_t BroadphaseTree::structureHash() const
{
    Fnv1a hash;
    hash.add(m_root);
    hash.add(m_freeList);
    hash.add(m_nodeCount);
    hash.add(m_proxyCount);
    for (const Node& node : m_nodes)
    {
        hash.add(node.parent);
        hash.add(static_cast<std::int32_t>(node.height));
        hash.add(static_cast<std::int32_t>(node.inMovedSet ? 1 : 0));
        hash.add(static_cast<std::int32_t>(node.inDeferred ? 1 : 0));
        if (node.height >= 0)
        {
            hash.add(node.child1);
            hash.add(node.child2);
            hash.add(node.box.min);
            hash.add(node.box.max);
            hash.add(node.userData);
            hash.add(static_cast<std::int32_t>(m_groups[static_cast<std::size_t>(&node - m_nodes.data())]));
        }
    }
    for (const std::int32_t index : m_moved)
    {
        hash.add(index);
    }
    return hash.state;
}

} // namespace polytope::physics

// Polytope physics: static triangle meshes (triangle_mesh.h).
//
// Build, in order: validate; classify degenerate triangles; weld bit-identical vertex positions (an
// open-addressing table, filled in input order, so ids do not depend on the hash); find active edges with
// a counting sort of the edges by their smaller vertex id; build the binary tree and collapse it to
// four-wide nodes; reorder triangles into leaf order and renumber the vertices by first use.
//
// The tree is a top-down SAH build over 16 centroid bins per axis (Wald 2007; the same binned SAH as
// Jolt's and Embree's builders, written afresh). Primitive records (box + triangle id, 28 bytes) are
// partitioned in place, so every pass reads memory in order. The bins give the children's boxes and the
// partition their centroid boxes, so each level costs one binning pass and one partition pass. A node
// becomes a leaf when it holds at most maxLeafTriangles triangles and the SAH cost of a leaf
// (count * area) is no more than that of the best split (kTraversalCost * area + countL * areaL +
// countR * areaR); a node that has more is always split.
//
// Depth bound. The SAH can split off a few triangles at a time (nested or geometrically growing
// triangles), so the builder keeps the invariant depth + ceil(log2(count)) <= L for every node, where L is
// options.maxTreeDepth (<= kMaxMeshTreeDepth) raised to at least ceil(log2(triangles)), so that it holds at
// the root. Whenever the SAH split would break it for the larger child, the node is split at the median
// instead (along the axis of largest centroid extent): the larger half has ceil(count / 2) triangles, whose
// ceil(log2) is one less, so the children keep the invariant. A leaf (count >= 1) then sits at depth <= L.
// The four-wide tree kept is no deeper (every wide child is at least one binary level down), and a
// depth-first walk of it holds at most three pending siblings per level plus four children: stacks of
// 3 * kMaxMeshTreeDepth + 4.
//
// Rays test boxes grown by a small margin (kRayBoxRelativeMargin of the largest coordinate of the mesh's
// bounds and the ray's origin, about 8 float ulps): a hit that rayTriangle accepts a hair outside a
// triangle's exact box (it works in double, the boxes and slab test in float) is then never pruned, so a
// query finds exactly what testing every triangle would. Before rayTriangle's double-precision test, a leaf's
// triangles go through a float SSE prefilter, four at a time, that drops only those the ray certainly
// misses (mayHitTriangles: the float triple products with bounds on their rounding error).
#include "polytope/physics/triangle_mesh.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace polytope::physics
{
namespace
{

constexpr int kBinCount = 16;
/// Cost of visiting a node, relative to testing one triangle, in the SAH. Chosen by measurement on
/// 1M-triangle terrains and soups, when the binary tree was the one kept: at 1 it had a binary node per
/// triangle (terrain: 54 bytes per triangle in all) and queries were no faster; at 2, 0.58 (40.5 bytes)
/// with the same ray and box query times; at 3 queries were about 30% slower for another 2 bytes saved.
constexpr float kTraversalCost = 2.0f;
constexpr std::uint32_t kNoVertex = 0xFFFFFFFFu;
constexpr float kRayBoxRelativeMargin = 1e-6f;

constexpr float kInfinity = std::numeric_limits<float>::infinity();
/// Traversal stacks hold a child as one word: its index | its triangle count << 24 (0 for a wide node). A
/// mesh has fewer than 2^24 triangles and wide nodes.
constexpr int kMeshRefCountShift = 24;
static_assert(kMaxMeshTriangles <= (1u << kMeshRefCountShift) && kMaxMeshLeafTriangles < 32);

/// One node of the binary tree the build makes before collapsing it to four-wide nodes.
struct TriangleMeshNode
{
    Aabb bounds{};                   ///< metres: the exact union of the triangles' vertices below
    std::uint32_t index = 0;         ///< leaf: first triangle; internal: the second child (the first is next)
    std::uint32_t triangleCount = 0; ///< leaf: 1 .. maxLeafTriangles; internal: 0

    bool isLeaf() const { return triangleCount != 0; }
};

Aabb triangleBox(const Triangle& t)
{
    return {minPerElem(minPerElem(t.a, t.b), t.c), maxPerElem(maxPerElem(t.a, t.b), t.c)};
}

bool isValidQueryBox(const Aabb& box)
{
    return isFinite(box.min) && isFinite(box.max) && box.min.x <= box.max.x && box.min.y <= box.max.y &&
           box.min.z <= box.max.z;
}

int ceilLog2(std::uint32_t n)
{
    int bits = 0;
    while ((std::uint64_t{1} << bits) < n)
    {
        ++bits;
    }
    return bits;
}

// ---- validation and degenerate triangles -----------------------------------------------------------------

enum class Degeneracy
{
    None,
    RepeatedIndex,
    Collinear,
    TooSmallArea,
};

const char* degeneracyName(Degeneracy d)
{
    switch (d)
    {
    case Degeneracy::RepeatedIndex:
        return "two of its indices are equal";
    case Degeneracy::Collinear:
        return "its vertices are coincident or (nearly) collinear";
    case Degeneracy::TooSmallArea:
        return "its area is below minTriangleAreaSquareMeters";
    case Degeneracy::None:
        break;
    }
    return "not degenerate";
}

Degeneracy classifyTriangle(std::span<const Vec3> vertices, std::uint32_t i0, std::uint32_t i1,
                            std::uint32_t i2, float minArea)
{
    if (i0 == i1 || i1 == i2 || i2 == i0)
    {
        return Degeneracy::RepeatedIndex;
    }
    // In double: exact products of the float inputs' differences (up to one rounding each), no overflow.
    const auto toDouble = [](const Vec3& v) { return std::array<double, 3>{v.x, v.y, v.z}; };
    const std::array<double, 3> a = toDouble(vertices[i0]), b = toDouble(vertices[i1]),
                                c = toDouble(vertices[i2]);
    const auto difference = [](const std::array<double, 3>& p, const std::array<double, 3>& q) {
        return std::array<double, 3>{p[0] - q[0], p[1] - q[1], p[2] - q[2]};
    };
    const auto squared = [](const std::array<double, 3>& v)
    { return v[0] * v[0] + v[1] * v[1] + v[2] * v[2]; };
    const std::array<double, 3> e1 = difference(b, a), e2 = difference(c, a), e3 = difference(c, b);
    const std::array<double, 3> n{e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                                  e1[0] * e2[1] - e1[1] * e2[0]};
    const double doubleArea = std::sqrt(squared(n));
    // height / longest edge = doubleArea / longest^2; coincident vertices give 0.
    const double longestSquared = std::max(std::max(squared(e1), squared(e2)), squared(e3));
    if (!(doubleArea > double{kMeshCollinearRelativeHeight} * longestSquared))
    {
        return Degeneracy::Collinear;
    }
    if (0.5 * doubleArea < double{minArea})
    {
        return Degeneracy::TooSmallArea;
    }
    return Degeneracy::None;
}

// ---- welding ---------------------------------------------------------------------------------------------

/// Ids for distinct positions, first come first numbered. The table only answers "seen before?", so the
/// ids follow the order of the calls, never the hash.
class VertexWelder
{
  public:
    explicit VertexWelder(std::size_t expectedPositions)
    {
        std::size_t size = 16;
        while (size < 2 * expectedPositions)
        {
            size *= 2;
        }
        m_slots.assign(size, kNoVertex);
        m_positions.reserve(expectedPositions);
    }

    std::uint32_t idOf(const Vec3& p)
    {
        const Vec3 key{p.x + 0.0f, p.y + 0.0f, p.z + 0.0f}; // -0 + 0 = +0: one key for both zeros
        const std::size_t mask = m_slots.size() - 1;
        for (std::size_t slot = hash(key) & mask;; slot = (slot + 1) & mask)
        {
            const std::uint32_t id = m_slots[slot];
            if (id == kNoVertex)
            {
                m_slots[slot] = static_cast<std::uint32_t>(m_positions.size());
                m_positions.push_back(key);
                return m_slots[slot];
            }
            if (m_positions[id] == key)
            {
                return id;
            }
        }
    }

    const std::vector<Vec3>& positions() const { return m_positions; }

  private:
    static std::uint64_t hash(const Vec3& p)
    {
        std::uint32_t bits[3];
        std::memcpy(bits, &p, sizeof(bits));
        std::uint64_t h = 0x9E3779B97F4A7C15ull;
        for (const std::uint32_t b : bits)
        {
            h = (h ^ b) * 0xBF58476D1CE4E5B9ull;
            h ^= h >> 31;
        }
        return h;
    }

    std::vector<std::uint32_t> m_slots;
    std::vector<Vec3> m_positions;
};

// ---- active edges ----------------------------------------------------------------------------------------

Triangle makeTriangle(const std::vector<Vec3>& positions, const std::array<std::uint32_t, 3>& v)
{
    return {positions[v[0]], positions[v[1]], positions[v[2]]};
}

/// Whether the edge shared by t1 (running from its vertex e1 to the next) and t2 (consistently wound, so
/// running the other way) is active. With unit normals n1, n2 and the edge direction d of t1, the signed
/// dihedral angle theta has cos = n1.n2 and sin along d = (n1 x n2).d, positive where the surface is
/// convex. Active: convex by more than the threshold, or folded back on itself within it (a knife edge,
/// whose convexity rounding decides).
bool sharedEdgeIsActive(const Triangle& t1, int e1, const Triangle& t2, float cosThreshold)
{
    const Vec3 n1 = normalize(cross(t1.b - t1.a, t1.c - t1.a));
    const Vec3 n2 = normalize(cross(t2.b - t2.a, t2.c - t2.a));
    const Vec3 corners[3] = {t1.a, t1.b, t1.c};
    const Vec3 direction = corners[(e1 + 1) % 3] - corners[e1];
    const float cosine = dot(n1, n2);
    const float sine = dot(cross(n1, n2), direction);
    return (sine > 0.0f && cosine < cosThreshold) || cosine < -cosThreshold;
}

/// Active-edge flags per triangle; `welded` holds each triangle's welded vertex ids.
std::vector<std::uint8_t> computeActiveEdges(const std::vector<std::array<std::uint32_t, 3>>& welded,
                                             const std::vector<Vec3>& positions, float cosThreshold)
{
    struct EdgeEntry
    {
        std::uint32_t high = 0; ///< the larger vertex id
        std::uint32_t edge = 0; ///< 3 * triangle + edge slot
    };
    const std::size_t triangleCount = welded.size();
    std::vector<std::uint8_t> active(triangleCount, 0);

    // Counting sort by the smaller vertex id; each bucket is then sorted by (larger id, edge), a total order.
    std::vector<std::uint32_t> start(positions.size() + 1, 0);
    for (const std::array<std::uint32_t, 3>& v : welded)
    {
        for (int e = 0; e < 3; ++e)
        {
            ++start[std::min(v[e], v[(e + 1) % 3]) + 1];
        }
    }
    for (std::size_t i = 1; i < start.size(); ++i)
    {
        start[i] += start[i - 1];
    }
    std::vector<EdgeEntry> entries(3 * triangleCount);
    {
        std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
        for (std::size_t t = 0; t < triangleCount; ++t)
        {
            for (int e = 0; e < 3; ++e)
            {
                const std::uint32_t p = welded[t][e];
                const std::uint32_t q = welded[t][(e + 1) % 3];
                entries[fill[std::min(p, q)]++] = {std::max(p, q), static_cast<std::uint32_t>(3 * t + e)};
            }
        }
    }
    const auto byHighThenEdge = [](const EdgeEntry& x, const EdgeEntry& y)
    { return x.high < y.high || (x.high == y.high && x.edge < y.edge); };
    for (std::size_t bucket = 0; bucket + 1 < start.size(); ++bucket)
    {
        const auto first = entries.begin() + start[bucket];
        const auto last = entries.begin() + start[bucket + 1];
        std::sort(first, last, byHighThenEdge);
        for (auto run = first; run != last;)
        {
            auto runEnd = run + 1;
            while (runEnd != last && runEnd->high == run->high)
            {
                ++runEnd;
            }
            bool isActive = true; // boundary (run of 1) and non-manifold (3 or more) edges
            if (runEnd - run == 2)
            {
                const std::uint32_t t1 = run[0].edge / 3;
                const std::uint32_t t2 = run[1].edge / 3;
                const int e1 = static_cast<int>(run[0].edge % 3);
                const int e2 = static_cast<int>(run[1].edge % 3);
                const bool consistent = welded[t1][e1] == welded[t2][(e2 + 1) % 3];
                isActive =
                    !consistent || sharedEdgeIsActive(makeTriangle(positions, welded[t1]), e1,
                                                      makeTriangle(positions, welded[t2]), cosThreshold);
            }
            for (auto it = run; it != runEnd; ++it)
            {
                if (isActive)
                {
                    active[it->edge / 3] |= static_cast<std::uint8_t>(1u << (it->edge % 3));
                }
            }
            run = runEnd;
        }
    }
    return active;
}

// ---- tree ------------------------------------------------------------------------------------------------

/// A triangle as the builder moves it around: its box and its index in the kept list. Plain arrays, so that
/// loops over a runtime axis index compile to loads, not to Vec3::operator[]'s branches.
struct BuildPrimitive
{
    std::array<float, 3> min{};
    std::array<float, 3> max{};
    std::uint32_t triangle = 0;
};

/// A box as the builder keeps it; empty when min > max.
struct BuildBox
{
    std::array<float, 3> min{kInfinity, kInfinity, kInfinity};
    std::array<float, 3> max{-kInfinity, -kInfinity, -kInfinity};

    void grow(const std::array<float, 3>& lo, const std::array<float, 3>& hi)
    {
        for (int axis = 0; axis < 3; ++axis)
        {
            min[axis] = std::min(min[axis], lo[axis]);
            max[axis] = std::max(max[axis], hi[axis]);
        }
    }
    void grow(const BuildBox& o) { grow(o.min, o.max); }
    /// Half the surface area (Aabb::perimeter), the SAH's measure. Only for non-empty boxes.
    float halfArea() const
    {
        const float dx = max[0] - min[0], dy = max[1] - min[1], dz = max[2] - min[2];
        return dx * dy + dy * dz + dz * dx;
    }
    Aabb toAabb() const { return {Vec3{min[0], min[1], min[2]}, Vec3{max[0], max[1], max[2]}}; }
};

/// Twice the box centre (the factor cancels everywhere it is used).
float centroid2(const BuildPrimitive& p, int axis)
{
    return p.min[axis] + p.max[axis];
}

/// Bin of a centroid coordinate; the binning and the partition both call this, so they agree exactly.
int binOf(float c, float origin, float scale)
{
    const int bin = static_cast<int>((c - origin) * scale);
    return bin < kBinCount - 1 ? bin : kBinCount - 1;
}

class TreeBuilder
{
  public:
    TreeBuilder(std::vector<BuildPrimitive>& primitives, std::uint32_t maxLeafTriangles, int maxDepth,
                std::vector<TriangleMeshNode>& nodes)
        : m_primitives(primitives), m_maxLeaf(maxLeafTriangles),
          m_maxDepth(std::max(maxDepth, ceilLog2(static_cast<std::uint32_t>(primitives.size())))),
          m_nodes(nodes)
    {
    }

    /// Builds the whole tree; returns its depth.
    int build()
    {
        BuildBox bounds;
        BuildBox centroids;
        boundsOf(0, static_cast<std::uint32_t>(m_primitives.size()), bounds, centroids);
        m_nodes.clear();
        m_nodes.reserve(2 * m_primitives.size()); // a binary tree with n leaves has 2n - 1 nodes
        buildNode(0, static_cast<std::uint32_t>(m_primitives.size()), bounds, centroids, 0);
        return m_depth;
    }

  private:
    struct Split
    {
        int axis = -1;
        int bin = 0; ///< the left side takes bins 0 .. bin
        float cost = kInfinity;
        BuildBox leftBounds;
        BuildBox rightBounds;
        std::uint32_t leftCount = 0;
    };

    struct Bin
    {
        BuildBox bounds;
        std::uint32_t count = 0;
    };

    Split findSahSplit(std::uint32_t begin, std::uint32_t end, const BuildBox& centroids) const
    {
        std::array<std::array<Bin, kBinCount>, 3> bins{};
        std::array<float, 3> scale{};
        std::array<int, 3> axes{};
        int axisCount = 0;
        for (int axis = 0; axis < 3; ++axis)
        {
            const float extent = centroids.max[axis] - centroids.min[axis];
            scale[axis] = static_cast<float>(kBinCount) / extent;
            if (extent > 0.0f && std::isfinite(scale[axis]))
            {
                axes[axisCount++] = axis;
            }
        }
        Split best;
        if (axisCount == 0)
        {
            return best;
        }
        for (std::uint32_t i = begin; i < end; ++i)
        {
            const BuildPrimitive& p = m_primitives[i];
            for (int k = 0; k < axisCount; ++k)
            {
                const int axis = axes[k];
                Bin& bin = bins[axis][binOf(centroid2(p, axis), centroids.min[axis], scale[axis])];
                bin.bounds.grow(p.min, p.max);
                ++bin.count;
            }
        }
        const std::uint32_t total = end - begin;
        for (int k = 0; k < axisCount; ++k)
        {
            const int axis = axes[k];
            // Right-to-left sweep stores the right sides; the left-to-right sweep then prices each split.
            std::array<float, kBinCount> rightCost{};
            BuildBox right;
            std::uint32_t rightCount = 0;
            for (int b = kBinCount - 1; b > 0; --b)
            {
                right.grow(bins[axis][b].bounds);
                rightCount += bins[axis][b].count;
                rightCost[b] = rightCount == 0 ? 0.0f : static_cast<float>(rightCount) * right.halfArea();
            }
            BuildBox left;
            std::uint32_t leftCount = 0;
            for (int b = 0; b + 1 < kBinCount; ++b)
            {
                left.grow(bins[axis][b].bounds);
                leftCount += bins[axis][b].count;
                if (leftCount == 0 || leftCount == total)
                {
                    continue;
                }
                const float cost = static_cast<float>(leftCount) * left.halfArea() + rightCost[b + 1];
                if (cost < best.cost) // NaN (overflowing boxes) never wins: such a node is median split
                {
                    best.axis = axis;
                    best.bin = b;
                    best.cost = cost;
                    best.leftCount = leftCount;
                }
            }
        }
        if (best.axis >= 0)
        {
            for (int b = 0; b < kBinCount; ++b)
            {
                (b <= best.bin ? best.leftBounds : best.rightBounds).grow(bins[best.axis][b].bounds);
            }
        }
        return best;
    }

    /// Moves primitives of bins 0 .. split.bin to the front and returns the first of the rest; fills the
    /// two sides' centroid boxes.
    std::uint32_t partition(std::uint32_t begin, std::uint32_t end, const Split& split,
                            const BuildBox& centroids, BuildBox& leftCentroids, BuildBox& rightCentroids)
    {
        const int axis = split.axis;
        const float origin = centroids.min[axis];
        const float scale = static_cast<float>(kBinCount) / (centroids.max[axis] - centroids.min[axis]);
        std::uint32_t i = begin;
        std::uint32_t j = end;
        while (i < j)
        {
            BuildPrimitive& p = m_primitives[i];
            const std::array<float, 3> c{centroid2(p, 0), centroid2(p, 1), centroid2(p, 2)};
            if (binOf(c[axis], origin, scale) <= split.bin)
            {
                leftCentroids.grow(c, c);
                ++i;
            }
            else
            {
                rightCentroids.grow(c, c);
                --j;
                std::swap(p, m_primitives[j]);
            }
        }
        return i;
    }

    /// Splits at the middle position, by (centroid along the widest centroid axis, triangle): a total order,
    /// so the two halves are the same sets whatever nth_element does inside.
    std::uint32_t medianSplit(std::uint32_t begin, std::uint32_t end, const BuildBox& centroids)
    {
        int axis = 0;
        for (int a = 1; a < 3; ++a)
        {
            if (centroids.max[a] - centroids.min[a] > centroids.max[axis] - centroids.min[axis])
            {
                axis = a;
            }
        }
        const std::uint32_t middle = begin + (end - begin) / 2;
        std::nth_element(m_primitives.begin() + begin, m_primitives.begin() + middle,
                         m_primitives.begin() + end,
                         [axis](const BuildPrimitive& x, const BuildPrimitive& y)
                         {
                             const float cx = centroid2(x, axis);
                             const float cy = centroid2(y, axis);
                             return cx < cy || (cx == cy && x.triangle < y.triangle);
                         });
        return middle;
    }

    void boundsOf(std::uint32_t begin, std::uint32_t end, BuildBox& bounds, BuildBox& centroids) const
    {
        bounds = {};
        centroids = {};
        for (std::uint32_t i = begin; i < end; ++i)
        {
            const BuildPrimitive& p = m_primitives[i];
            bounds.grow(p.min, p.max);
            const std::array<float, 3> c{centroid2(p, 0), centroid2(p, 1), centroid2(p, 2)};
            centroids.grow(c, c);
        }
    }

    void buildNode(std::uint32_t begin, std::uint32_t end, const BuildBox& bounds, const BuildBox& centroids,
                   int depth)
    {
        const std::uint32_t nodeIndex = static_cast<std::uint32_t>(m_nodes.size());
        m_nodes.push_back({bounds.toAabb(), begin, end - begin});
        m_depth = std::max(m_depth, depth);
        const std::uint32_t count = end - begin;
        if (count == 1)
        {
            return;
        }
        const Split split = findSahSplit(begin, end, centroids);
        const float area = bounds.halfArea();
        if (count <= m_maxLeaf &&
            (split.axis < 0 || static_cast<float>(count) * area <= kTraversalCost * area + split.cost))
        {
            return;
        }
        std::uint32_t middle = 0;
        BuildBox leftBounds, leftCentroids, rightBounds, rightCentroids;
        const bool sahKeepsDepth =
            split.axis >= 0 &&
            depth + 1 + ceilLog2(std::max(split.leftCount, count - split.leftCount)) <= m_maxDepth;
        if (sahKeepsDepth)
        {
            middle = partition(begin, end, split, centroids, leftCentroids, rightCentroids);
            assert(middle - begin == split.leftCount);
            leftBounds = split.leftBounds;
            rightBounds = split.rightBounds;
        }
        else
        {
            middle = medianSplit(begin, end, centroids);
            boundsOf(begin, middle, leftBounds, leftCentroids);
            boundsOf(middle, end, rightBounds, rightCentroids);
        }
        m_nodes[nodeIndex].triangleCount = 0;
        buildNode(begin, middle, leftBounds, leftCentroids, depth + 1);
        m_nodes[nodeIndex].index = static_cast<std::uint32_t>(m_nodes.size());
        buildNode(middle, end, rightBounds, rightCentroids, depth + 1);
    }

    std::vector<BuildPrimitive>& m_primitives;
    std::uint32_t m_maxLeaf;
    int m_maxDepth; ///< <= kMaxMeshTreeDepth, >= ceil(log2(triangles))
    std::vector<TriangleMeshNode>& m_nodes;
    int m_depth = 0;
};

// ---- the four-wide tree ---------------------------------------------------------------------------------

float halfArea(const Aabb& box)
{
    const Vec3 d = box.max - box.min;
    return d.x * d.y + d.y * d.z + d.z * d.x;
}

/// Collapses the binary tree into four-wide nodes, depth first: a wide node takes its binary node's two
/// children and, while it has room, replaces the inner child of largest area by that child's own two.
/// Returns the wide index of the node made for binary node `node`.
std::uint32_t collapseWide(std::span<const TriangleMeshNode> nodes, std::uint32_t node,
                           std::vector<TriangleMeshWideNode>& wide)
{
    const std::uint32_t index = static_cast<std::uint32_t>(wide.size());
    wide.emplace_back();
    std::array<std::uint32_t, 4> kids{};
    std::uint32_t count = 0;
    if (nodes[node].isLeaf())
    {
        kids[count++] = node;
    }
    else
    {
        kids[count++] = node + 1;
        kids[count++] = nodes[node].index;
    }
    while (count < 4)
    {
        std::uint32_t widest = count;
        float widestArea = -1.0f;
        for (std::uint32_t k = 0; k < count; ++k)
        {
            if (!nodes[kids[k]].isLeaf() && halfArea(nodes[kids[k]].bounds) > widestArea)
            {
                widest = k;
                widestArea = halfArea(nodes[kids[k]].bounds);
            }
        }
        if (widest == count)
        {
            break; // every child is a leaf
        }
        // Keep the binary order: the expanded node's first child takes its place, its second follows it.
        const std::uint32_t expanded = kids[widest];
        for (std::uint32_t k = count; k > widest + 1; --k)
        {
            kids[k] = kids[k - 1];
        }
        kids[widest] = expanded + 1;
        kids[widest + 1] = nodes[expanded].index;
        ++count;
    }
    wide[index].childCount = count;
    for (std::uint32_t k = 0; k < count; ++k)
    {
        const TriangleMeshNode& kid = nodes[kids[k]];
        TriangleMeshWideNode& out = wide[index];
        out.minX[k] = kid.bounds.min.x;
        out.minY[k] = kid.bounds.min.y;
        out.minZ[k] = kid.bounds.min.z;
        out.maxX[k] = kid.bounds.max.x;
        out.maxY[k] = kid.bounds.max.y;
        out.maxZ[k] = kid.bounds.max.z;
        if (kid.isLeaf())
        {
            out.child[k] = kid.index;
            out.count[k] = static_cast<std::uint8_t>(kid.triangleCount);
        }
        else
        {
            const std::uint32_t child = collapseWide(nodes, kids[k], wide); // may move `wide`'s storage
            wide[index].child[k] = child;
            wide[index].count[k] = 0;
        }
    }
    return index;
}

// ---- ray traversal ---------------------------------------------------------------------------------------

/// A hint to start loading the cache line at `p`; nothing where the compiler has no such builtin.
inline void prefetch(const void* p)
{
#if defined(__GNUC__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

/// Which of the node's children's boxes overlap `box` (closed: touching counts): bit k for child k.
unsigned wideBoxOverlaps(const TriangleMeshWideNode& node, const Aabb& box)
{
#if defined(__SSE2__)
    __m128 apart = _mm_setzero_ps();
    const float* const lows[3] = {node.minX, node.minY, node.minZ};
    const float* const highs[3] = {node.maxX, node.maxY, node.maxZ};
    for (int axis = 0; axis < 3; ++axis)
    {
        apart = _mm_or_ps(apart, _mm_cmpgt_ps(_mm_load_ps(lows[axis]), _mm_set1_ps(box.max[axis])));
        apart = _mm_or_ps(apart, _mm_cmplt_ps(_mm_load_ps(highs[axis]), _mm_set1_ps(box.min[axis])));
    }
    return ~static_cast<unsigned>(_mm_movemask_ps(apart)) & ((1u << node.childCount) - 1u);
#else
    unsigned mask = 0;
    for (std::uint32_t k = 0; k < node.childCount; ++k)
    {
        const Aabb child{Vec3{node.minX[k], node.minY[k], node.minZ[k]},
                         Vec3{node.maxX[k], node.maxY[k], node.maxZ[k]}};
        mask |= child.overlaps(box) ? 1u << k : 0u;
    }
    return mask;
#endif
}

/// A ray set up for the four-wide slab test: per axis the origin and 1 / translation, an axis the ray is
/// parallel to getting 1e30 instead of infinity (no 0 * inf NaN; a box it misses on that axis by less than
/// about 1e-30 m can be kept, never one it meets dropped: pruning stays conservative).
struct WideRay
{
    std::array<float, 3> origin{};
    std::array<float, 3> inverse{};
    float margin = 0.0f;
};

/// Which of the node's children the segment meets (grown by the margin) for some t in [0, limit]: bit k
/// for child k, and enter[k] the first such t. A slab test, four lanes at a time.
unsigned wideRayHits(const WideRay& ray, const TriangleMeshWideNode& node, float limit,
                     std::array<float, 4>& enter)
{
#if defined(__SSE2__)
    const __m128 margin = _mm_set1_ps(ray.margin);
    __m128 first = _mm_setzero_ps();
    __m128 last = _mm_set1_ps(limit);
    const float* const lows[3] = {node.minX, node.minY, node.minZ};
    const float* const highs[3] = {node.maxX, node.maxY, node.maxZ};
    for (int axis = 0; axis < 3; ++axis)
    {
        const __m128 o = _mm_set1_ps(ray.origin[axis]);
        const __m128 inverse = _mm_set1_ps(ray.inverse[axis]);
        const __m128 t1 = _mm_mul_ps(_mm_sub_ps(_mm_sub_ps(_mm_load_ps(lows[axis]), margin), o), inverse);
        const __m128 t2 = _mm_mul_ps(_mm_sub_ps(_mm_add_ps(_mm_load_ps(highs[axis]), margin), o), inverse);
        first = _mm_max_ps(first, _mm_min_ps(t1, t2));
        last = _mm_min_ps(last, _mm_max_ps(t1, t2));
    }
    _mm_storeu_ps(enter.data(), first);
    const unsigned valid = (1u << node.childCount) - 1u;
    return static_cast<unsigned>(_mm_movemask_ps(_mm_cmple_ps(first, last))) & valid;
#else
    unsigned mask = 0;
    for (std::uint32_t k = 0; k < node.childCount; ++k)
    {
        const float lows[3] = {node.minX[k], node.minY[k], node.minZ[k]};
        const float highs[3] = {node.maxX[k], node.maxY[k], node.maxZ[k]};
        float first = 0.0f;
        float last = limit;
        for (int axis = 0; axis < 3; ++axis)
        {
            const float t1 = (lows[axis] - ray.margin - ray.origin[axis]) * ray.inverse[axis];
            const float t2 = (highs[axis] + ray.margin - ray.origin[axis]) * ray.inverse[axis];
            first = std::max(first, std::min(t1, t2));
            last = std::min(last, std::max(t1, t2));
        }
        enter[k] = first;
        mask |= first <= last ? 1u << k : 0u;
    }
    return mask;
#endif
}

/// Which of up to four triangles the ray may hit, as a conservative float prefilter of rayTriangle: bit k
/// is clear only when the ray certainly misses triangle k (first + k) by the same equations rayTriangle
/// solves in double. Each of the numerators and the determinant is a triple product of float differences;
/// its float value is within kPrefilterErrorFactor * 2^-24 * (the product of its three vectors' 1-norms) of
/// the exact one (about 8 units of rounding from the differences, cross and dot products, doubled and
/// then some for headroom, and far more than double's own error), so a sign the float value shows beyond
/// that bound is the sign rayTriangle computes. A triangle is dropped when, with the determinant's sign
/// certain, u < 0, v < 0, u + v > 1 or t < 0 is certain; anything else goes to rayTriangle.
constexpr float kPrefilterErrorFactor = 32.0f;
/// Rays shorter than this (1-norm of the translation, metres) skip the prefilter: with the smallest
/// triangles a mesh keeps, the error bounds above stay normal floats down to it.
constexpr float kPrefilterShortestRay = 1e-12f;

struct PrefilterRay
{
    Vec3 origin{};
    Vec3 translation{};
    float translationNorm1 = 0.0f;
};

#if defined(__SSE2__)
__m128 absolute(__m128 v)
{
    return _mm_andnot_ps(_mm_set1_ps(-0.0f), v);
}
#endif

unsigned mayHitTriangles(const TriangleMesh& mesh, std::uint32_t first, std::uint32_t n,
                         const PrefilterRay& ray)
{
#if defined(__SSE2__)
    if (!(ray.translationNorm1 >= kPrefilterShortestRay))
    {
        return (1u << n) - 1u; // the error bounds could underflow: no prefilter
    }
    // Each vertex loaded as one vector (x, y, z, 0), then four of them turned into (x0..3), (y0..3),
    // (z0..3) in registers: writing the floats one by one and reading them back four at a time would stall
    // on store forwarding.
    const std::span<const Vec3> vertices = mesh.vertices();
    const auto load = [&](std::uint32_t vertex)
    {
        const Vec3& v = vertices[vertex];
        // x and y through __m64, a type that may alias anything (a double* would break strict aliasing).
        const __m128 xy = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(&v.x));
        return _mm_movelh_ps(xy, _mm_load_ss(&v.z));
    };
    __m128 va[4];
    __m128 vb[4];
    __m128 vc[4];
    for (std::uint32_t k = 0; k < 4; ++k)
    {
        const std::array<std::uint32_t, 3>& t = mesh.triangleVertexIndices(first + (k < n ? k : 0));
        va[k] = load(t[0]);
        vb[k] = load(t[1]);
        vc[k] = load(t[2]);
    }
    _MM_TRANSPOSE4_PS(va[0], va[1], va[2], va[3]);
    _MM_TRANSPOSE4_PS(vb[0], vb[1], vb[2], vb[3]);
    _MM_TRANSPOSE4_PS(vc[0], vc[1], vc[2], vc[3]);
    __m128 e1[3];
    __m128 e2[3];
    __m128 s[3];
    __m128 d[3];
    __m128 norm1E1 = _mm_setzero_ps();
    __m128 norm1E2 = _mm_setzero_ps();
    __m128 norm1S = _mm_setzero_ps();
    for (int axis = 0; axis < 3; ++axis)
    {
        e1[axis] = _mm_sub_ps(vb[axis], va[axis]);
        e2[axis] = _mm_sub_ps(vc[axis], va[axis]);
        s[axis] = _mm_sub_ps(_mm_set1_ps(ray.origin[axis]), va[axis]);
        d[axis] = _mm_set1_ps(ray.translation[axis]);
        norm1E1 = _mm_add_ps(norm1E1, absolute(e1[axis]));
        norm1E2 = _mm_add_ps(norm1E2, absolute(e2[axis]));
        norm1S = _mm_add_ps(norm1S, absolute(s[axis]));
    }
    const auto cross = [](const __m128* u, const __m128* v, __m128* out)
    {
        out[0] = _mm_sub_ps(_mm_mul_ps(u[1], v[2]), _mm_mul_ps(u[2], v[1]));
        out[1] = _mm_sub_ps(_mm_mul_ps(u[2], v[0]), _mm_mul_ps(u[0], v[2]));
        out[2] = _mm_sub_ps(_mm_mul_ps(u[0], v[1]), _mm_mul_ps(u[1], v[0]));
    };
    const auto dot = [](const __m128* u, const __m128* v) {
        return _mm_add_ps(_mm_add_ps(_mm_mul_ps(u[0], v[0]), _mm_mul_ps(u[1], v[1])), _mm_mul_ps(u[2], v[2]));
    };
    __m128 p[3];
    __m128 q[3];
    cross(d, e2, p);
    cross(s, e1, q);
    const __m128 det = dot(e1, p);
    const __m128 nu = dot(s, p);
    const __m128 nv = dot(d, q);
    const __m128 nt = dot(e2, q);
    const __m128 unit = _mm_set1_ps(kPrefilterErrorFactor * 0x1p-24f);
    const __m128 dNorm = _mm_mul_ps(unit, _mm_set1_ps(ray.translationNorm1));
    const __m128 errorDet = _mm_mul_ps(_mm_mul_ps(dNorm, norm1E1), norm1E2);
    const __m128 errorU = _mm_mul_ps(_mm_mul_ps(dNorm, norm1S), norm1E2);
    const __m128 errorV = _mm_mul_ps(_mm_mul_ps(dNorm, norm1S), norm1E1);
    const __m128 errorT = _mm_mul_ps(_mm_mul_ps(_mm_mul_ps(unit, norm1E2), norm1S), norm1E1);
    // Signed by the determinant: with its sign certain, u < 0 is nu * sign < 0, and so on.
    const __m128 sign = _mm_and_ps(det, _mm_set1_ps(-0.0f));
    const __m128 su = _mm_xor_ps(nu, sign);
    const __m128 sv = _mm_xor_ps(nv, sign);
    const __m128 st = _mm_xor_ps(nt, sign);
    const __m128 sdet = absolute(det);
    const __m128 zero = _mm_setzero_ps();
    // u + v > 1: nu + nv - det, signed, above the three errors and the rounding of the sum itself.
    const __m128 over = _mm_sub_ps(_mm_add_ps(su, sv), sdet);
    const __m128 overError = _mm_add_ps(
        _mm_add_ps(_mm_add_ps(errorU, errorV), errorDet),
        _mm_mul_ps(_mm_set1_ps(0x1p-22f), _mm_add_ps(_mm_add_ps(absolute(su), absolute(sv)), sdet)));
    __m128 miss = _mm_cmplt_ps(su, _mm_sub_ps(zero, errorU));
    miss = _mm_or_ps(miss, _mm_cmplt_ps(sv, _mm_sub_ps(zero, errorV)));
    miss = _mm_or_ps(miss, _mm_cmplt_ps(st, _mm_sub_ps(zero, errorT)));
    miss = _mm_or_ps(miss, _mm_cmpgt_ps(over, overError));
    miss = _mm_and_ps(miss, _mm_cmpgt_ps(sdet, errorDet));
    const unsigned lanes = (1u << n) - 1u;
    return ~static_cast<unsigned>(_mm_movemask_ps(miss)) & lanes;
#else
    (void)mesh;
    (void)first;
    (void)ray;
    return (1u << n) - 1u;
#endif
}

float largestMagnitude(const Vec3& v)
{
    const Vec3 a = absPerElem(v);
    return std::max(std::max(a.x, a.y), a.z);
}

} // namespace

const char* toString(TriangleMeshError error)
{
    switch (error)
    {
    case TriangleMeshError::None:
        return "None";
    case TriangleMeshError::InvalidOptions:
        return "InvalidOptions";
    case TriangleMeshError::IndexCountNotMultipleOfThree:
        return "IndexCountNotMultipleOfThree";
    case TriangleMeshError::TooManyTriangles:
        return "TooManyTriangles";
    case TriangleMeshError::TooManyVertices:
        return "TooManyVertices";
    case TriangleMeshError::NonFiniteVertex:
        return "NonFiniteVertex";
    case TriangleMeshError::IndexOutOfRange:
        return "IndexOutOfRange";
    case TriangleMeshError::DegenerateTriangle:
        return "DegenerateTriangle";
    case TriangleMeshError::NoTriangles:
        return "NoTriangles";
    }
    return "Unknown";
}

TriangleMeshBuildResult buildTriangleMesh(std::span<const Vec3> vertices,
                                          std::span<const std::uint32_t> indices,
                                          const TriangleMeshBuildOptions& options)
{
    TriangleMeshBuildResult result;
    const auto fail = [&result](TriangleMeshError error, std::size_t offending, std::string message)
    {
        result.error = error;
        result.offendingIndex = static_cast<std::uint32_t>(offending);
        result.message = std::move(message);
        return std::move(result);
    };

    if (!(options.minTriangleAreaSquareMeters >= 0.0f) ||
        !std::isfinite(options.minTriangleAreaSquareMeters) || !(options.activeEdgeMinAngleRadians >= 0.0f) ||
        !(options.activeEdgeMinAngleRadians < 0.5f * kPi) || options.maxLeafTriangles < 1 ||
        options.maxLeafTriangles > kMaxMeshLeafTriangles || options.maxTreeDepth < 1 ||
        options.maxTreeDepth > kMaxMeshTreeDepth)
    {
        return fail(TriangleMeshError::InvalidOptions, 0, "an option is outside its documented range");
    }
    if (indices.size() % 3 != 0)
    {
        return fail(TriangleMeshError::IndexCountNotMultipleOfThree, indices.size(),
                    "index count " + std::to_string(indices.size()) + " is not a multiple of 3");
    }
    const std::size_t inputTriangles = indices.size() / 3;
    if (inputTriangles > kMaxMeshTriangles)
    {
        return fail(TriangleMeshError::TooManyTriangles, std::min<std::size_t>(inputTriangles, 0xFFFFFFFFu),
                    std::to_string(inputTriangles) + " triangles, more than kMaxMeshTriangles");
    }
    if (vertices.size() > kMaxMeshVertices)
    {
        return fail(TriangleMeshError::TooManyVertices, std::min<std::size_t>(vertices.size(), 0xFFFFFFFFu),
                    std::to_string(vertices.size()) + " vertices, more than kMaxMeshVertices");
    }
    for (std::size_t v = 0; v < vertices.size(); ++v)
    {
        if (!isFinite(vertices[v]))
        {
            return fail(TriangleMeshError::NonFiniteVertex, v,
                        "vertex " + std::to_string(v) + " has a NaN or infinite coordinate");
        }
    }
    for (std::size_t i = 0; i < indices.size(); ++i)
    {
        if (indices[i] >= vertices.size())
        {
            return fail(TriangleMeshError::IndexOutOfRange, i,
                        "indices[" + std::to_string(i) + "] = " + std::to_string(indices[i]) +
                            " but there are " + std::to_string(vertices.size()) + " vertices");
        }
    }

    // Degenerate triangles; `kept` lists the input triangles that stay, in input order.
    std::vector<std::uint32_t> kept;
    kept.reserve(inputTriangles);
    for (std::size_t k = 0; k < inputTriangles; ++k)
    {
        const Degeneracy d = classifyTriangle(vertices, indices[3 * k], indices[3 * k + 1],
                                              indices[3 * k + 2], options.minTriangleAreaSquareMeters);
        if (d == Degeneracy::None)
        {
            kept.push_back(static_cast<std::uint32_t>(k));
            continue;
        }
        ++(d == Degeneracy::RepeatedIndex ? result.dropped.repeatedIndex
           : d == Degeneracy::Collinear   ? result.dropped.collinear
                                          : result.dropped.tooSmallArea);
        if (options.degenerateTriangles == DegenerateTrianglePolicy::Refuse)
        {
            return fail(TriangleMeshError::DegenerateTriangle, k,
                        "triangle " + std::to_string(k) + " is degenerate: " + degeneracyName(d));
        }
    }
    if (kept.empty())
    {
        return fail(TriangleMeshError::NoTriangles, 0,
                    inputTriangles == 0 ? "no triangles given" : "every triangle is degenerate");
    }
    const std::size_t count = kept.size();

    // Weld positions, in order of use by the kept triangles.
    VertexWelder welder(std::min(vertices.size(), 3 * count));
    std::vector<std::array<std::uint32_t, 3>> welded(count);
    {
        std::vector<std::uint32_t> weldedOf(vertices.size(), kNoVertex);
        for (std::size_t t = 0; t < count; ++t)
        {
            for (int corner = 0; corner < 3; ++corner)
            {
                const std::uint32_t v = indices[3 * std::size_t{kept[t]} + corner];
                if (weldedOf[v] == kNoVertex)
                {
                    weldedOf[v] = welder.idOf(vertices[v]);
                }
                welded[t][corner] = weldedOf[v];
            }
        }
    }
    const std::vector<Vec3>& positions = welder.positions();

    const std::vector<std::uint8_t> active =
        computeActiveEdges(welded, positions, std::cos(options.activeEdgeMinAngleRadians));

    std::vector<BuildPrimitive> primitives(count);
    for (std::size_t t = 0; t < count; ++t)
    {
        const Aabb box = triangleBox(makeTriangle(positions, welded[t]));
        primitives[t] = {{box.min.x, box.min.y, box.min.z},
                         {box.max.x, box.max.y, box.max.z},
                         static_cast<std::uint32_t>(t)};
    }
    TriangleMesh& mesh = result.mesh;
    {
        std::vector<TriangleMeshNode> binary;
        mesh.m_treeDepth =
            TreeBuilder(primitives, options.maxLeafTriangles, options.maxTreeDepth, binary).build();
        mesh.m_bounds = binary[0].bounds;
        mesh.m_wideNodes.reserve(binary.size() / 3 + 1);
        collapseWide(binary, 0, mesh.m_wideNodes);
        mesh.m_wideNodes.shrink_to_fit();
    }

    // Triangles in leaf order; vertices renumbered by first use.
    std::vector<std::uint32_t> finalVertexOf(positions.size(), kNoVertex);
    mesh.m_triangles.resize(count);
    mesh.m_triangleInfo.resize(count);
    mesh.m_vertices.reserve(positions.size());
    for (std::size_t i = 0; i < count; ++i)
    {
        const std::uint32_t t = primitives[i].triangle;
        for (int corner = 0; corner < 3; ++corner)
        {
            std::uint32_t& v = finalVertexOf[welded[t][corner]];
            if (v == kNoVertex)
            {
                v = static_cast<std::uint32_t>(mesh.m_vertices.size());
                mesh.m_vertices.push_back(positions[welded[t][corner]]);
            }
            mesh.m_triangles[i][corner] = v;
        }
        mesh.m_triangleInfo[i] = kept[t] | (std::uint32_t{active[t]} << TriangleMesh::kActiveEdgeShift);
    }
    return result;
}

std::size_t TriangleMesh::memoryBytes() const
{
    return sizeof(TriangleMesh) + m_vertices.capacity() * sizeof(Vec3) +
           m_triangles.capacity() * sizeof(m_triangles[0]) +
           m_triangleInfo.capacity() * sizeof(std::uint32_t) +
           m_wideNodes.capacity() * sizeof(TriangleMeshWideNode);
}

void TriangleMesh::queryOverlapping(const Aabb& box, OverlapVisitor visit, void* context) const
{
    if (m_wideNodes.empty() || !isValidQueryBox(box))
    {
        return;
    }
    // Depth first in lane order, so triangles come in increasing index. An entry is a wide node (count 0)
    // or a leaf's run, packed as in castRayImpl; as there, three pending siblings per wide level above the
    // node being expanded, plus its four children.
    std::array<std::uint32_t, 3 * kMaxMeshTreeDepth + 4> stack;
    std::size_t size = 0;
    stack[size++] = 0;
    while (size > 0)
    {
        const std::uint32_t ref = stack[--size];
        const std::uint32_t index = ref & ((1u << kMeshRefCountShift) - 1u);
        const std::uint32_t count = ref >> kMeshRefCountShift;
        if (count != 0)
        {
            for (std::uint32_t t = index; t < index + count; ++t)
            {
                const Triangle triangleT = triangle(t);
                if (triangleBox(triangleT).overlaps(box) && !visit(context, t, triangleT))
                {
                    return;
                }
            }
            continue;
        }
        const TriangleMeshWideNode& node = m_wideNodes[index];
        unsigned overlapping = wideBoxOverlaps(node, box);
        assert(size + 4 <= stack.size());
        while (overlapping != 0)
        {
            const int k = 31 - std::countl_zero(overlapping); // last lane first: the first is popped first
            overlapping &= ~(1u << k);
            stack[size++] = node.child[k] | std::uint32_t{node.count[k]} << kMeshRefCountShift;
        }
    }
}

bool TriangleMesh::castRay(const RayCastInput& ray, MeshRayMode mode, MeshRayCastHit& hit) const
{
    assert(mode != MeshRayMode::All && "castRay with an output reports one hit: use Closest or Any");
    return castRayImpl(ray, mode == MeshRayMode::All ? MeshRayMode::Closest : mode, nullptr, nullptr, &hit);
}

bool TriangleMesh::castRayImpl(const RayCastInput& ray, MeshRayMode mode, RayHitVisitor visit, void* context,
                               MeshRayCastHit* out) const
{
    if (m_wideNodes.empty() || !isFinite(ray.origin) || !isFinite(ray.translation) ||
        !std::isfinite(ray.maxFraction) || !(ray.maxFraction >= 0.0f))
    {
        return false;
    }
    const TriangleRay exact = prepareTriangleRay(ray);
    const PrefilterRay prefilter{ray.origin, ray.translation,
                                 std::fabs(ray.translation.x) + std::fabs(ray.translation.y) +
                                     std::fabs(ray.translation.z)};
    WideRay wideRay;
    for (int axis = 0; axis < 3; ++axis)
    {
        const float inverse = 1.0f / ray.translation[axis];
        wideRay.origin[axis] = ray.origin[axis];
        wideRay.inverse[axis] = std::isfinite(inverse) ? inverse : 1e30f;
    }
    wideRay.margin =
        kRayBoxRelativeMargin * std::max({largestMagnitude(m_bounds.min), largestMagnitude(m_bounds.max),
                                          largestMagnitude(ray.origin)});

    // An entry is a wide node (count 0) or a leaf's triangle run, packed into 8 bytes (index | count << 24:
    // a mesh has fewer than 2^24 triangles and wide nodes), with the ray's entry into its box.
    struct Entry
    {
        std::uint32_t ref;
        float enter;
    };
    // A wide node's children are at least one binary level below it, so the wide tree is no deeper than
    // the binary one; the stack holds at most three pending siblings per wide level above the node being
    // expanded, plus its four children.
    std::array<Entry, 3 * kMaxMeshTreeDepth + 4> stack;
    std::size_t size = 0;
    float limit = ray.maxFraction; // hits beyond this are not wanted (Closest: the best so far)
    bool found = false;
    MeshRayCastHit best;
    // The walk goes down to the nearest child met without a trip through the stack (one child in most
    // nodes, so most of the descent never touches it); the other children wait on the stack.
    std::uint32_t ref = 0; // the root
    for (;;)
    {
        const std::uint32_t index = ref & ((1u << kMeshRefCountShift) - 1u);
        const std::uint32_t count = ref >> kMeshRefCountShift;
        if (count != 0)
        {
            unsigned candidates = 0;
            for (std::uint32_t group = 0; group < count; group += 4)
            {
                candidates |= mayHitTriangles(*this, index + group, std::min(4u, count - group), prefilter)
                              << group;
            }
            bool stop = false;
            while (candidates != 0)
            {
                const std::uint32_t t = index + static_cast<std::uint32_t>(std::countr_zero(candidates));
                candidates &= candidates - 1;
                MeshRayCastHit candidate;
                candidate.triangle = t;
                // The caller's ray, not one clipped at `limit`: rayTriangle solves in double and rounds the
                // fraction, so a clipped ray could lose a hit that rounds to exactly `limit` (a tie).
                if (!rayTrianglePrepared(triangle(t), exact, candidate.hit, &candidate.backFace) ||
                    candidate.hit.fraction > limit)
                {
                    continue;
                }
                if (mode == MeshRayMode::Closest)
                {
                    // Ties go to the smaller triangle index, so the answer does not depend on the visiting
                    // order.
                    if (!found || candidate.hit.fraction < best.hit.fraction ||
                        (candidate.hit.fraction == best.hit.fraction && t < best.triangle))
                    {
                        best = candidate;
                        limit = candidate.hit.fraction;
                    }
                    found = true;
                    continue;
                }
                found = true;
                if (mode == MeshRayMode::Any)
                {
                    best = candidate;
                    stop = true;
                    break;
                }
                const float value = visit(context, candidate);
                if (value == 0.0f)
                {
                    return true;
                }
                if (value > 0.0f && value < limit)
                {
                    limit = value;
                }
            }
            if (stop)
            {
                break;
            }
        }
        else
        {
            const TriangleMeshWideNode& node = m_wideNodes[index];
            std::array<float, 4> enter;
            unsigned hits = wideRayHits(wideRay, node, limit, enter);
            if (hits != 0)
            {
                // Push the children met, farthest first, then take the nearest back off the top.
                assert(size + 4 <= stack.size());
                const std::size_t base = size;
                while (hits != 0)
                {
                    const int k = std::countr_zero(hits);
                    hits &= hits - 1;
                    const Entry child{node.child[k] | std::uint32_t{node.count[k]} << kMeshRefCountShift,
                                      enter[k]};
                    // Start loading what the child holds while the others are sorted in (a few per cent
                    // faster).
                    if (node.count[k] == 0)
                    {
                        prefetch(&m_wideNodes[node.child[k]]);
                        prefetch(reinterpret_cast<const char*>(&m_wideNodes[node.child[k]]) + 64);
                    }
                    else
                    {
                        prefetch(&m_triangles[node.child[k]]);
                    }
                    std::size_t at = size++;
                    for (; at > base && stack[at - 1].enter < child.enter; --at)
                    {
                        stack[at] = stack[at - 1];
                    }
                    stack[at] = child;
                }
                ref = stack[--size].ref; // met at `limit` or before: no need to check it again
                continue;
            }
        }
        // The next pending child that still starts within the limit (it may have shrunk since the push).
        while (size > 0 && stack[size - 1].enter > limit)
        {
            --size;
        }
        if (size == 0)
        {
            break;
        }
        ref = stack[--size].ref;
    }
    if (!found || mode == MeshRayMode::All)
    {
        return found;
    }
    if (out != nullptr)
    {
        *out = best;
    }
    if (visit != nullptr)
    {
        visit(context, best);
    }
    return true;
}

} // namespace polytope::physics

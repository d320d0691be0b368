// Polytope physics: static triangle meshes (triangle_mesh.h).
//
// Build, in order: validate; classify degenerate triangles; weld bit-identical vertex positions (an
// open-addressing table, filled in input order, so ids do not depend on the hash); find active edges with
// a counting sort of the edges by their smaller vertex id; build the tree; reorder triangles into leaf
// order and renumber the vertices by first use.
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
// A depth-first traversal that pushes both children of a node at depth d holds at most d + 2 entries (one
// pending sibling per level above, and the two children), hence stacks of kMaxMeshTreeDepth + 1.
//
// Rays test boxes grown by a small margin (kRayBoxRelativeMargin of the largest coordinate of the mesh's
// bounds and the ray's origin, about 8 float ulps): a hit that rayTriangle accepts a hair outside a
// triangle's exact box (it works in double, the boxes and slab test in float) is then never pruned, so a
// query finds exactly what testing every triangle would.
#include "polytope/physics/triangle_mesh.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace polytope::physics
{
namespace
{

constexpr int kBinCount = 16;
/// Cost of visiting a node, relative to testing one triangle, in the SAH. Chosen by measurement on
/// 1M-triangle terrains and soups: at 1 the tree has a node per triangle (terrain: 54 bytes per triangle in
/// all) and queries are no faster; at 2 it has 0.58 (40.5 bytes) with the same ray and box query times; at 3
/// queries are about 30% slower for another 2 bytes saved.
constexpr float kTraversalCost = 2.0f;
constexpr std::uint32_t kNoVertex = 0xFFFFFFFFu;
constexpr float kRayBoxRelativeMargin = 1e-6f;

constexpr float kInfinity = std::numeric_limits<float>::infinity();

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

// ---- ray traversal ---------------------------------------------------------------------------------------

struct RaySetup
{
    Vec3 origin{};
    Vec3 inverseTranslation{}; ///< 1 / translation per axis; unused on parallel axes
    std::array<bool, 3> parallel{};
    float margin = 0.0f; ///< metres added to every box on every side
};

/// Whether the segment meets `box` (grown by the margin) for some t in [0, maxFraction]; `enter` is the
/// first such t.
bool rayMeetsBox(const RaySetup& ray, const Aabb& box, float maxFraction, float& enter)
{
    float first = 0.0f;
    float last = maxFraction;
    for (int axis = 0; axis < 3; ++axis)
    {
        const float lo = box.min[axis] - ray.margin;
        const float hi = box.max[axis] + ray.margin;
        const float o = ray.origin[axis];
        if (ray.parallel[axis])
        {
            if (o < lo || o > hi)
            {
                return false;
            }
            continue;
        }
        const float inverse = ray.inverseTranslation[axis];
        float t1 = (lo - o) * inverse;
        float t2 = (hi - o) * inverse;
        if (t1 > t2)
        {
            std::swap(t1, t2);
        }
        first = t1 > first ? t1 : first;
        last = t2 < last ? t2 : last;
        if (first > last)
        {
            return false;
        }
    }
    enter = first;
    return true;
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
    mesh.m_treeDepth =
        TreeBuilder(primitives, options.maxLeafTriangles, options.maxTreeDepth, mesh.m_nodes).build();
    mesh.m_nodes.shrink_to_fit();

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
           m_triangleInfo.capacity() * sizeof(std::uint32_t) + m_nodes.capacity() * sizeof(TriangleMeshNode);
}

void TriangleMesh::queryOverlapping(const Aabb& box, OverlapVisitor visit, void* context) const
{
    if (m_nodes.empty() || !isValidQueryBox(box))
    {
        return;
    }
    std::array<std::uint32_t, kMaxMeshTreeDepth + 1> stack;
    std::size_t size = 0;
    stack[size++] = 0;
    while (size > 0)
    {
        const std::uint32_t nodeIndex = stack[--size];
        const TriangleMeshNode& node = m_nodes[nodeIndex];
        if (!node.bounds.overlaps(box))
        {
            continue;
        }
        if (node.isLeaf())
        {
            for (std::uint32_t t = node.index; t < node.index + node.triangleCount; ++t)
            {
                const Triangle triangleT = triangle(t);
                if (triangleBox(triangleT).overlaps(box) && !visit(context, t, triangleT))
                {
                    return;
                }
            }
            continue;
        }
        assert(size + 2 <= stack.size());
        stack[size++] = node.index;    // second child
        stack[size++] = nodeIndex + 1; // first child, visited first
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
    if (m_nodes.empty() || !isFinite(ray.origin) || !isFinite(ray.translation) ||
        !std::isfinite(ray.maxFraction) || !(ray.maxFraction >= 0.0f))
    {
        return false;
    }
    RaySetup setup;
    setup.origin = ray.origin;
    for (int axis = 0; axis < 3; ++axis)
    {
        const float inverse = 1.0f / ray.translation[axis];
        setup.parallel[axis] = !std::isfinite(inverse);
        setup.inverseTranslation[axis] = setup.parallel[axis] ? 0.0f : inverse;
    }
    setup.margin = kRayBoxRelativeMargin *
                   std::max({largestMagnitude(m_nodes[0].bounds.min), largestMagnitude(m_nodes[0].bounds.max),
                             largestMagnitude(ray.origin)});

    struct Entry
    {
        std::uint32_t node = 0;
        float enter = 0.0f;
    };
    std::array<Entry, kMaxMeshTreeDepth + 1> stack;
    std::size_t size = 0;
    float limit = ray.maxFraction; // hits beyond this are not wanted (Closest: the best so far)
    float rootEnter = 0.0f;
    if (!rayMeetsBox(setup, m_nodes[0].bounds, limit, rootEnter))
    {
        return false;
    }
    stack[size++] = {0, rootEnter};
    bool found = false;
    MeshRayCastHit best;
    while (size > 0)
    {
        const Entry entry = stack[--size];
        if (entry.enter > limit)
        {
            continue;
        }
        const TriangleMeshNode& node = m_nodes[entry.node];
        if (node.isLeaf())
        {
            for (std::uint32_t t = node.index; t < node.index + node.triangleCount; ++t)
            {
                MeshRayCastHit candidate;
                candidate.triangle = t;
                // The caller's ray, not one clipped at `limit`: rayTriangle solves in double and rounds the
                // fraction, so a clipped ray could lose a hit that rounds to exactly `limit` (a tie).
                if (!rayTriangle(triangle(t), ray, candidate.hit, &candidate.backFace) ||
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
                    size = 0;
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
            continue;
        }
        const std::uint32_t first = entry.node + 1;
        const std::uint32_t second = node.index;
        float enterFirst = 0.0f;
        float enterSecond = 0.0f;
        const bool hitsFirst = rayMeetsBox(setup, m_nodes[first].bounds, limit, enterFirst);
        const bool hitsSecond = rayMeetsBox(setup, m_nodes[second].bounds, limit, enterSecond);
        assert(size + 2 <= stack.size());
        // Push the farther child first, so the nearer one is visited next.
        if (hitsFirst && hitsSecond)
        {
            if (enterFirst <= enterSecond)
            {
                stack[size++] = {second, enterSecond};
                stack[size++] = {first, enterFirst};
            }
            else
            {
                stack[size++] = {first, enterFirst};
                stack[size++] = {second, enterSecond};
            }
        }
        else if (hitsFirst)
        {
            stack[size++] = {first, enterFirst};
        }
        else if (hitsSecond)
        {
            stack[size++] = {second, enterSecond};
        }
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

// Polytope physics: a static triangle mesh with its own bounding-volume tree.
//
// buildTriangleMesh checks a vertex and index list, drops (or refuses) degenerate triangles, and builds,
// once, a tree of boxes over the triangles that are kept. The mesh is then immutable: its queries (boxes,
// rays) are const, allocate nothing and may run on any number of threads at once.
//
// Layout, chosen for memory and locality:
//  - Triangles are reordered so that each leaf of the tree owns a contiguous run of them; triangle
//    indices in this API are the mesh's own (0 .. triangleCount() - 1). sourceTriangle(t) maps one back to
//    its position in the input (input triangle k is indices[3k .. 3k + 2]), so hits can be mapped to the
//    game's own data. Each triangle keeps its input winding and vertex order (a, b, c).
//  - Vertices are welded and renumbered: the mesh keeps one copy of each distinct position used by a kept
//    triangle (bit-identical coordinates merge; -0 equals +0), numbered by first use in the reordered
//    triangles. Unused input vertices are not kept.
//  - The tree is built binary, by the surface-area heuristic over 16 centroid bins per axis (Wald 2007,
//    "On fast construction of SAH-based bounding volume hierarchies"), leaves holding up to
//    maxLeafTriangles triangles; then collapsed to four-wide nodes (TriangleMeshWideNode, 128 bytes, stored
//    depth first), each taking its binary node's children and expanding the inner child of largest area
//    until it has four. Only the four-wide tree is kept: one SSE test checks a node's four child boxes
//    against a ray or a box, and a walk visits about half as many nodes.
//  - Per triangle: 3 vertex indices (12 bytes) and one 32-bit word holding the source index (24 bits) and
//    the three active-edge flags.
// Measured memory, everything included (memoryBytes(): vertices + indices + source/edge words + nodes),
// with the default options: 37.4 bytes per triangle on a 1,000,000-triangle grid terrain with random
// heights (6 for its 0.5 vertices per triangle, 12 indices, 4 source/edges, 15.4 for 0.12 nodes; 44.9 on
// the smooth bumpy 1,002,528-triangle terrain of polytope-bench queries), 84.7 bytes per triangle on a
// random soup of 100,000 triangles (36 for its three own vertices, 12, 4, 32.7 for 0.26 nodes). Building
// the 1,000,000-triangle terrain takes about 0.6 s of CPU time in Release (-O3, one core of the 2-core
// development machine).
//
// Active edges (for later internal-edge handling, "ghost collisions"): an edge is active, i.e. may be
// collided with as an edge, unless it is shared by exactly two triangles that are consistently wound and
// meet flat or concave there, or convex by no more than activeEdgeMinAngleRadians. Boundary edges, edges
// of three or more triangles, edges between oppositely wound triangles and knife edges (two triangles
// folded back onto each other, within the same angle of it) are active (the conservative
// answer: an active edge costs at worst a bump, an inactive one could let a body through). Sharing is
// found through the welded vertices, so meshes with split vertices (per-face normals or UVs) still share
// their edges; the edge map is a counting sort, so the result does not depend on hashing.
//
// Traversal depth: the builder keeps every leaf of the binary tree at depth <= kMaxMeshTreeDepth (root at
// depth 0) by falling back to a median split wherever the SAH split would make that impossible further
// down (see the .cpp). A four-wide node's children are at least one binary level below it, so the kept
// tree is no deeper, and the queries' fixed-size stacks (three pending siblings per level, plus four)
// never overflow.
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/raycast.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace polytope::physics
{

/// Most triangles buildTriangleMesh accepts (input triangles, counted before dropping): 2^24 =
/// 16,777,216, since a triangle's source index is packed into 24 bits beside its active-edge flags.
inline constexpr std::uint32_t kMaxMeshTriangles = 1u << 24;
/// Most vertices buildTriangleMesh accepts: enough for a soup of kMaxMeshTriangles triangles with three
/// vertices of their own each.
inline constexpr std::uint32_t kMaxMeshVertices = 3 * kMaxMeshTriangles;
/// Deepest leaf of a mesh's tree (the root is at depth 0). The queries' stacks hold kMaxMeshTreeDepth + 1
/// entries.
inline constexpr int kMaxMeshTreeDepth = 64;
/// Largest value of TriangleMeshBuildOptions::maxLeafTriangles.
inline constexpr std::uint32_t kMaxMeshLeafTriangles = 16;
/// A triangle whose height over its longest edge is at most this fraction of that edge is degenerate
/// ("collinear"): the float cross product that gives its normal carries an error of about 1e-7 of the
/// longest edge squared, which at this height is already 1% of the normal's length.
inline constexpr float kMeshCollinearRelativeHeight = 1e-5f;

/// Bits of TriangleMesh::activeEdges.
inline constexpr std::uint8_t kMeshEdgeAB = 1; ///< edge a -> b
inline constexpr std::uint8_t kMeshEdgeBC = 2; ///< edge b -> c
inline constexpr std::uint8_t kMeshEdgeCA = 4; ///< edge c -> a

/// What buildTriangleMesh does with degenerate triangles.
enum class DegenerateTrianglePolicy : std::uint8_t
{
    Drop = 0, ///< leave them out of the mesh and count them (TriangleMeshBuildResult::dropped)
    Refuse,   ///< refuse the whole mesh, naming the first degenerate triangle
};

struct TriangleMeshBuildOptions
{
    DegenerateTrianglePolicy degenerateTriangles = DegenerateTrianglePolicy::Drop;
    /// Square metres, >= 0 and finite: triangles of a smaller area are degenerate (the default is a
    /// 10 um x 10 um square; no collision cares about anything smaller).
    float minTriangleAreaSquareMeters = 1e-10f;
    /// Radians, in [0, pi/2): a shared edge where the surface is convex by more than this is active (see
    /// the file comment). The default, about 0.29 degrees, is far above the rounding noise of the
    /// triangles' normals (~1e-6 rad) and below any bend a player sees, so only flat and concave edges
    /// go inactive; raise it (Jolt uses 5 degrees) to also smooth tessellated curved surfaces.
    float activeEdgeMinAngleRadians = 5e-3f;
    /// Most triangles in a leaf, in [1, kMaxMeshLeafTriangles]. The SAH decides below that.
    std::uint32_t maxLeafTriangles = 4;
    /// Deepest leaf allowed (root at depth 0), in [1, kMaxMeshTreeDepth]; raised to ceil(log2(kept
    /// triangles)) when lower, the least a tree with one-triangle leaves can have. Lower limits give up SAH
    /// quality where the SAH would go deeper (see triangle_mesh.cpp); for tests.
    int maxTreeDepth = kMaxMeshTreeDepth;
};

enum class TriangleMeshError : std::uint8_t
{
    None = 0,
    InvalidOptions,               ///< an option is outside its documented range
    IndexCountNotMultipleOfThree, ///< offendingIndex: the index count
    TooManyTriangles,             ///< more than kMaxMeshTriangles; offendingIndex: the triangle count
    TooManyVertices,              ///< more than kMaxMeshVertices; offendingIndex: the vertex count
    NonFiniteVertex,              ///< a coordinate is NaN or infinite; offendingIndex: the vertex
    IndexOutOfRange,              ///< offendingIndex: the position in `indices` of the first bad index
    DegenerateTriangle,           ///< policy Refuse; offendingIndex: the first degenerate input triangle
    NoTriangles,                  ///< no triangles given, or every one was degenerate and dropped
};

/// A short, stable name for the error ("IndexOutOfRange", ...), for logs.
const char* toString(TriangleMeshError error);

/// Degenerate input triangles, by reason. Each is counted under the first reason that applies, in the
/// order of the members; with policy Refuse the build stops at the first, which is counted. The tests are
/// made in double precision.
struct TriangleMeshDropCounts
{
    std::uint32_t repeatedIndex = 0; ///< two of its three indices are equal
    std::uint32_t collinear = 0;     ///< coincident or collinear vertices: height over the longest edge at
                                     ///< most kMeshCollinearRelativeHeight of that edge
    std::uint32_t tooSmallArea = 0;  ///< area below minTriangleAreaSquareMeters
    std::uint32_t total() const { return repeatedIndex + collinear + tooSmallArea; }
};

/// One node of a mesh's tree: up to four children, each a leaf (a run of triangles) or another node. The
/// children's boxes are stored axis by axis, so that one SSE test checks all four. 128 bytes, no padding
/// (the determinism test compares node bytes).
struct alignas(64) TriangleMeshWideNode
{
    float minX[4]{}, minY[4]{}, minZ[4]{}; ///< metres, per child: the exact box of what it holds; unused
                                           ///< children hold 0
    float maxX[4]{}, maxY[4]{}, maxZ[4]{};
    std::uint32_t child[4]{};     ///< per child: a leaf's first triangle, or an inner child's wide node index
    std::uint8_t count[4]{};      ///< per child: a leaf's triangle count (1 .. 16), or 0 for an inner child
    std::uint32_t childCount = 0; ///< 1 .. 4
};
static_assert(sizeof(TriangleMeshWideNode) == 128, "a wide node is two cache lines");

/// How castRay reports hits.
enum class MeshRayMode : std::uint8_t
{
    Closest = 0, ///< the hit with the smallest fraction (ties: the smallest triangle index)
    Any,         ///< the first hit found (cheapest; e.g. line of sight)
    All,         ///< every hit, through the callback, which may clip the ray or stop
};

/// A ray's hit on a mesh.
struct MeshRayCastHit
{
    std::uint32_t triangle = 0; ///< the mesh's triangle index (see sourceTriangle)
    RayCastHit hit{};           ///< fraction, point and normal, as rayTriangle reports them
    bool backFace = false;      ///< the ray came from behind the triangle (see rayTriangle)
};

struct TriangleMeshBuildResult;

/// A static triangle mesh and its tree, in the mesh's local frame (metres). Built by buildTriangleMesh;
/// immutable afterwards, movable and copyable. A default-constructed mesh is empty: queries find nothing.
class TriangleMesh
{
  public:
    std::uint32_t triangleCount() const { return static_cast<std::uint32_t>(m_triangles.size()); }
    std::uint32_t vertexCount() const { return static_cast<std::uint32_t>(m_vertices.size()); }

    /// The vertices of triangle t, in their input order. Precondition: t < triangleCount().
    Triangle triangle(std::uint32_t t) const
    {
        const std::array<std::uint32_t, 3>& v = m_triangles[t];
        return {m_vertices[v[0]], m_vertices[v[1]], m_vertices[v[2]]};
    }
    /// The mesh's vertex indices of triangle t. Precondition: t < triangleCount().
    const std::array<std::uint32_t, 3>& triangleVertexIndices(std::uint32_t t) const
    {
        return m_triangles[t];
    }
    /// The input triangle that triangle t came from (it was indices[3k .. 3k + 2] for the k returned).
    /// Precondition: t < triangleCount().
    std::uint32_t sourceTriangle(std::uint32_t t) const { return m_triangleInfo[t] & kSourceMask; }
    /// Active-edge flags of triangle t: kMeshEdgeAB | kMeshEdgeBC | kMeshEdgeCA (see the file comment).
    /// Precondition: t < triangleCount().
    std::uint8_t activeEdges(std::uint32_t t) const
    {
        return static_cast<std::uint8_t>(m_triangleInfo[t] >> kActiveEdgeShift);
    }

    /// The box around every triangle; an all-zero box for an empty mesh.
    Aabb bounds() const { return m_bounds; }
    /// Depth of the deepest leaf of the binary tree the build made (0 when it is one leaf), <=
    /// kMaxMeshTreeDepth. The four-wide tree kept is no deeper.
    int treeDepth() const { return m_treeDepth; }
    std::span<const Vec3> vertices() const { return m_vertices; }
    /// The tree, depth first; node 0 is the root. Empty when the mesh is.
    std::span<const TriangleMeshWideNode> wideNodes() const { return m_wideNodes; }
    /// Bytes this mesh holds: the object and its arrays (see the file comment for typical values).
    std::size_t memoryBytes() const;

    /// Calls fn(std::uint32_t triangle, const Triangle&) for every triangle whose bounding box overlaps
    /// `box` (closed boxes: touching counts). fn may return bool, false to stop the query, or void. The
    /// order is deterministic but otherwise unspecified. A box that is not finite or has min > max on some
    /// axis finds nothing.
    template <class Fn> void forEachTriangleOverlapping(const Aabb& box, Fn&& fn) const
    {
        queryOverlapping(
            box,
            [](void* context, std::uint32_t t, const Triangle& triangle) -> bool
            {
                auto& f = *static_cast<std::remove_reference_t<Fn>*>(context);
                if constexpr (std::is_void_v<decltype(f(t, triangle))>)
                {
                    f(t, triangle);
                    return true;
                }
                else
                {
                    return static_cast<bool>(f(t, triangle));
                }
            },
            const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
    }

    /// Casts `ray` (mesh frame) against the triangles, both faces (rayTriangle). Closest and Any: fills
    /// `hit` and returns true when there is a hit, else returns false and leaves `hit` alone. Mode All is
    /// a programmer error here (use the callback form); it is asserted and answered as Closest. A ray with
    /// a NaN or infinite origin, translation or maxFraction, or a negative maxFraction, hits nothing (as with
    /// rayTriangle).
    bool castRay(const RayCastInput& ray, MeshRayMode mode, MeshRayCastHit& hit) const;

    /// Casts `ray` and reports through fn(const MeshRayCastHit&) -> float. Closest and Any: fn is called
    /// once, with the closest (or first found) hit, and its return value is ignored. All: fn is called for
    /// every hit with fraction <= the current maxFraction, in no particular order (roughly near to far),
    /// and returns, as in Box2D: 0 to stop; a value in (0, maxFraction) to clip the ray there (later hits
    /// are farther than nothing past it); maxFraction or more, or a negative value, to go on unchanged.
    /// Returns whether fn was called.
    template <class Fn> bool castRay(const RayCastInput& ray, MeshRayMode mode, Fn&& fn) const
    {
        return castRayImpl(
            ray, mode,
            [](void* context, const MeshRayCastHit& hit) -> float
            { return static_cast<float>((*static_cast<std::remove_reference_t<Fn>*>(context))(hit)); },
            const_cast<void*>(static_cast<const void*>(std::addressof(fn))), nullptr);
    }

  private:
    friend TriangleMeshBuildResult buildTriangleMesh(std::span<const Vec3>, std::span<const std::uint32_t>,
                                                     const TriangleMeshBuildOptions&);

    using OverlapVisitor = bool (*)(void* context, std::uint32_t triangle, const Triangle& t);
    using RayHitVisitor = float (*)(void* context, const MeshRayCastHit& hit);

    void queryOverlapping(const Aabb& box, OverlapVisitor visit, void* context) const;
    bool castRayImpl(const RayCastInput& ray, MeshRayMode mode, RayHitVisitor visit, void* context,
                     MeshRayCastHit* out) const;

    static constexpr std::uint32_t kSourceMask = kMaxMeshTriangles - 1;
    static constexpr int kActiveEdgeShift = 24;

    std::vector<Vec3> m_vertices;
    std::vector<std::array<std::uint32_t, 3>> m_triangles; ///< vertex indices, in tree order
    std::vector<std::uint32_t> m_triangleInfo;             ///< source index | active edges << 24
    std::vector<TriangleMeshWideNode> m_wideNodes;
    Aabb m_bounds{};
    int m_treeDepth = 0;
};

/// Result of buildTriangleMesh: the mesh, or the reason it could not be built.
struct TriangleMeshBuildResult
{
    TriangleMeshError error = TriangleMeshError::None;
    std::uint32_t offendingIndex = 0; ///< see TriangleMeshError; 0 when ok()
    std::string message;              ///< human-readable detail; empty on success
    TriangleMeshDropCounts dropped;   ///< degenerate triangles met (dropped unless policy Refuse)
    TriangleMesh mesh;                ///< empty unless ok()

    bool ok() const { return error == TriangleMeshError::None; }
};

/// Builds a mesh from `vertices` (metres, finite) and `indices`, three per triangle, each < vertices.size().
/// Pure, no exceptions, deterministic: the same input and options give the same mesh, byte for byte.
/// Checks, in this order, each reported with the first offending element: options, the index count
/// (a multiple of 3), the limits (kMaxMeshTriangles, kMaxMeshVertices), every vertex finite (unused ones
/// too), every index in range, then degenerate triangles (see TriangleMeshDropCounts), which are dropped
/// or refused as options.degenerateTriangles says. O(n log n); about 0.7 us per triangle (see above).
TriangleMeshBuildResult buildTriangleMesh(std::span<const Vec3> vertices,
                                          std::span<const std::uint32_t> indices,
                                          const TriangleMeshBuildOptions& options = {});

} // namespace polytope::physics

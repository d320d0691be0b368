// Polytope physics: a static heightfield, a regular grid of 16-bit height samples.
//
// Layout (local frame: x and z run across the grid from the origin, y is up):
//  - Sample (ix, iz), 0 <= ix < sampleCountX, 0 <= iz < sampleCountZ, sits at
//    (ix * cellSizeX, heightOffset + heightScale * sample, iz * cellSizeZ), computed in float exactly as
//    written (the build uses -ffp-contract=off), so every query sees bit-identical vertices. Samples are
//    stored row by row: sample index = iz * sampleCountX + ix.
//  - Cell (cx, cz) is the square between samples (cx, cz) and (cx + 1, cz + 1); cell index =
//    cz * (sampleCountX - 1) + cx. Each cell is split along its diagonal from p00 = sample (cx, cz) to
//    p11 = sample (cx + 1, cz + 1) (p01 is sample (cx, cz + 1), p10 is sample (cx + 1, cz)):
//        triangle 2 * cell + 0 = (p00, p01, p11): the half with (z - z0) / cellSizeZ >= (x - x0) / cellSizeX
//        triangle 2 * cell + 1 = (p11, p10, p00): the other half
//    Both wind counter-clockwise seen from above (+y), so front normals point up, and both have the
//    diagonal as edge ca. Edge ab of triangle 0 is the cell's x = x0 side and bc its z = z1 side; edge ab
//    of triangle 1 is the x = x1 side and bc the z = z0 side. A neighbour across a side therefore always
//    is the other kind of triangle, across the same edge slot.
//  - A hole is a cell without triangles: one bit per cell, stored only when some cell is a hole.
//  - Each block of kHeightFieldBlockCells x kHeightFieldBlockCells cells keeps the smallest and largest
//    sample of its non-hole cells (as 16-bit samples), so queries skip blocks (and rays skip cells by their
//    four corners) whose height range they cannot meet.
//
// Memory: 2 bytes per sample, plus 4 bytes per 8x8-cell block (1/16 byte per sample), plus 1 bit per cell
// when there are holes: about 2.0625 bytes per sample without holes and 2.1875 with (memoryBytes() says
// exactly). Nothing is stored per triangle: triangles, normals and active edges are made on demand.
//
// Queries are const, allocate nothing and keep no state, so any number of threads may run them at once.
// The design follows the ideas of Jolt's HeightFieldShape (quantized samples, block ranges) and Bullet's
// btHeightfieldTerrainShape (a grid walk for rays), written afresh here. The ray walk visits cells row
// by row along the ray's xz projection (a 2D grid walk), widened by a small margin so that rays along
// grid lines, through grid corners or straight down visit every cell whose triangles rayTriangle could
// hit; the closest hit is then exactly the one a test of every triangle would find.
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/raycast.h"

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace polytope::physics
{

/// Fewest samples along each side: one cell.
inline constexpr std::uint32_t kMinHeightFieldSamplesPerSide = 2;
/// Most samples along each side: a 4096 x 4096-cell terrain (a 4097 x 4097 16-bit image). Keeps triangle
/// indices (2 * 4096 * 4096) and sample indices well inside 32 bits.
inline constexpr std::uint32_t kMaxHeightFieldSamplesPerSide = 4097;
/// Largest extent along x or z (metres) and largest |height| (metres), as the world's other shapes.
inline constexpr float kMaxHeightFieldExtentMeters = 1.0e6f;
/// Cells per side of a block whose height range is stored for pruning.
inline constexpr std::uint32_t kHeightFieldBlockCells = 8;
/// An edge between two triangles is active (see HeightField::activeEdges) when the surface bends convexly
/// across it by more than 5 degrees: the cosine of the angle between the two front normals is below this.
inline constexpr float kHeightFieldActiveEdgeCosAngle = 0.996194698f; // cos(5 degrees)

enum class HeightFieldError : std::uint8_t
{
    None = 0,
    TooFewSamples,        ///< sampleCountX or sampleCountZ below kMinHeightFieldSamplesPerSide
    TooManySamples,       ///< sampleCountX or sampleCountZ above kMaxHeightFieldSamplesPerSide
    BadCellSize,          ///< a cell size is NaN, infinite, <= 0, or the extent exceeds the bound
    BadHeightScale,       ///< heightScale NaN, infinite or <= 0 (raw samples)
    NonFiniteHeight,      ///< a float height or heightOffset is NaN or infinite
    HeightOutOfRange,     ///< some height is farther than kMaxHeightFieldExtentMeters from 0
    HeightCountMismatch,  ///< not exactly one of heights / samples has sampleCountX * sampleCountZ entries
    HoleMaskSizeMismatch, ///< holeMask is neither empty nor (cell count + 7) / 8 bytes
};

/// A short, stable name for the error ("TooFewSamples", ...), for logs.
const char* toString(HeightFieldError error);

/// What buildHeightField is given. Spans are read during the call only.
struct HeightFieldDesc
{
    std::uint32_t sampleCountX = 0; ///< samples along x, in [2, kMaxHeightFieldSamplesPerSide]
    std::uint32_t sampleCountZ = 0; ///< samples along z, in [2, kMaxHeightFieldSamplesPerSide]
    float cellSizeX = 1.0f;         ///< metres between samples along x, finite, > 0
    float cellSizeZ = 1.0f;         ///< metres between samples along z, finite, > 0

    /// Heights in metres, row by row (index iz * sampleCountX + ix), all finite. They are quantized to 16
    /// bits over their range [min, max]; the build reports the largest error. Give either this or samples.
    std::span<const float> heights;

    /// Raw 16-bit samples (e.g. a 16-bit PNG), row by row: height = heightOffset + heightScale * sample.
    std::span<const std::uint16_t> samples;
    float heightScale = 1.0f;  ///< metres per sample step, finite, > 0; used with samples only
    float heightOffset = 0.0f; ///< metres, finite; used with samples only

    /// Optional holes, one bit per cell: bit (c % 8) of byte c / 8 is set when cell c (= cz *
    /// (sampleCountX - 1) + cx) is a hole. Empty for none; otherwise exactly (cell count + 7) / 8 bytes
    /// (padding bits of the last byte are ignored).
    std::span<const std::uint8_t> holeMask;
};

/// What HeightField::height reports about a point.
struct HeightFieldPoint
{
    bool hasSurface = false;         ///< false outside the grid, in a hole, or for non-finite input
    float heightMeters = 0.0f;       ///< local y of the surface at (x, z)
    std::uint32_t triangleIndex = 0; ///< the triangle containing (x, z)
    Vec3 normal{};                   ///< its unit front normal (pointing up)
};

/// Which hits castRay reports (the same modes as MeshRayMode in triangle_mesh.h).
enum class HeightFieldRayMode : std::uint8_t
{
    Closest = 0, ///< the hit with the smallest fraction (ties: the smallest triangle index)
    Any,         ///< the first hit found (cheapest; e.g. line of sight)
    All,         ///< every hit, through the callback, which may clip the ray or stop
};

/// A ray's hit on a heightfield, in the heightfield's local frame.
struct HeightFieldRayHit
{
    std::uint32_t triangle = 0; ///< triangle index (2 * cell + 0 or 1)
    RayCastHit hit{};           ///< fraction, point and normal, as rayTriangle reports them
    bool backFace = false;      ///< the ray came from below the triangle (see rayTriangle)
};

struct HeightFieldBuildResult;

/// A static heightfield: see the file comment for its layout. Made by buildHeightField; a default
/// constructed one is empty (no cells) and every query on it reports nothing.
class HeightField
{
  public:
    /// Validates `desc` and builds the field (buildHeightField, below, is the usual spelling).
    static HeightFieldBuildResult build(const HeightFieldDesc& desc);

    bool empty() const { return m_cellCountX == 0; }
    std::uint32_t sampleCountX() const { return m_cellCountX == 0 ? 0 : m_cellCountX + 1; }
    std::uint32_t sampleCountZ() const { return m_cellCountZ == 0 ? 0 : m_cellCountZ + 1; }
    std::uint32_t cellCountX() const { return m_cellCountX; }
    std::uint32_t cellCountZ() const { return m_cellCountZ; }
    std::uint32_t cellCount() const { return m_cellCountX * m_cellCountZ; }
    /// Triangles, hole cells' included: valid triangle indices are [0, triangleCount()).
    std::uint32_t triangleCount() const { return 2 * cellCount(); }
    float cellSizeX() const { return m_cellSizeX; }       ///< metres
    float cellSizeZ() const { return m_cellSizeZ; }       ///< metres
    float heightScale() const { return m_heightScale; }   ///< metres per sample step
    float heightOffset() const { return m_heightOffset; } ///< metres
    bool hasHoles() const { return !m_holes.empty(); }

    /// Raw sample (ix, iz). Precondition: in range.
    std::uint16_t sample(std::uint32_t ix, std::uint32_t iz) const
    {
        assert(ix <= m_cellCountX && iz <= m_cellCountZ);
        return m_samples[std::size_t(iz) * (m_cellCountX + 1) + ix];
    }
    /// Local position of sample (ix, iz), metres. Precondition: in range.
    Vec3 vertex(std::uint32_t ix, std::uint32_t iz) const
    {
        return {float(ix) * m_cellSizeX, heightOf(sample(ix, iz)), float(iz) * m_cellSizeZ};
    }
    /// Whether cell `cellIndex` (< cellCount()) is a hole.
    bool isHole(std::uint32_t cellIndex) const
    {
        assert(cellIndex < cellCount());
        return !m_holes.empty() && ((m_holes[cellIndex >> 3] >> (cellIndex & 7u)) & 1u) != 0;
    }

    /// The local box of every sample (hole cells' included), metres. Empty field: a zero box.
    const Aabb& localBounds() const { return m_bounds; }

    /// Bytes held: the object and its arrays' capacities.
    std::size_t memoryBytes() const;

    /// The surface under or over local (x, z), metres: the plane of the triangle containing the point.
    /// The grid is closed ([0, (sampleCountX - 1) * cellSizeX] along x, alike along z); a point on a cell
    /// side belongs to the cell on its +x / +z side except on the grid's far sides. No surface outside the
    /// grid, in hole cells, or for NaN input.
    HeightFieldPoint height(float x, float z) const;

    /// Triangle `triangleIndex` (< triangleCount()), local metres, counter-clockwise from above. Hole
    /// triangles have geometry too, but no query reports them.
    Triangle triangle(std::uint32_t triangleIndex) const;

    /// Unit front normal (y >= 0) of triangle `triangleIndex` (< triangleCount()).
    Vec3 normal(std::uint32_t triangleIndex) const;

    /// Active edges of triangle `triangleIndex` (< triangleCount()): bit 0 edge ab, bit 1 bc, bit 2 ca.
    /// An edge is active when it lies on the grid's boundary, borders a hole, or the surface is convex
    /// across it with front normals more than 5 degrees apart (kHeightFieldActiveEdgeCosAngle). Flat and
    /// concave edges are inactive: a contact there can only be an internal-edge ("ghost") artefact. Both
    /// triangles sharing an edge agree on it. A hole triangle has no active edges (0).
    std::uint8_t activeEdges(std::uint32_t triangleIndex) const;

    /// Calls fn(std::uint32_t triangleIndex, const Triangle& triangle) for every non-hole triangle whose
    /// bounding box overlaps `box` (local metres, closed boxes: touching counts). fn may return bool, false
    /// to stop the query, or void. Deterministic order: block by block, then cell by cell, rows along +z,
    /// cells along +x. A box that is not finite or has min > max on some axis finds nothing.
    template <class Fn> void forEachTriangleOverlapping(const Aabb& box, Fn&& fn) const
    {
        visitOverlapping(
            box,
            [](void* context, std::uint32_t index, const Triangle& tri) -> bool
            {
                auto& f = *static_cast<std::remove_reference_t<Fn>*>(context);
                if constexpr (std::is_void_v<decltype(f(index, tri))>)
                {
                    f(index, tri);
                    return true;
                }
                else
                {
                    return static_cast<bool>(f(index, tri));
                }
            },
            const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
    }

    /// Casts `ray` (local frame; see RayCastInput) at the non-hole triangles, both faces (rayTriangle).
    /// Closest and Any: fills `hit` and returns true when there is a hit, else returns false and leaves
    /// `hit` alone. Mode All is a programmer error here (use the callback form); it is asserted and answered
    /// as Closest. A ray with a NaN or infinite origin, translation or maxFraction, a negative maxFraction,
    /// a zero translation, or a reach (|translation| * maxFraction) that overflows float hits nothing.
    bool castRay(const RayCastInput& ray, HeightFieldRayMode mode, HeightFieldRayHit& hit) const;

    /// Casts `ray` and reports through fn(const HeightFieldRayHit&) -> float. Closest and Any: fn is called
    /// once, with the closest (or first found) hit, and its return value is ignored. All: fn is called for
    /// every hit with fraction <= the current maxFraction, each triangle once, in the walk's order (roughly
    /// near to far), and returns, as in Box2D: 0 to stop; a value in (0, maxFraction) to clip the ray there;
    /// maxFraction or more, or a negative value, to go on unchanged. Returns whether fn was called.
    template <class Fn> bool castRay(const RayCastInput& ray, HeightFieldRayMode mode, Fn&& fn) const
    {
        return castRayImpl(
            ray, mode,
            [](void* context, const HeightFieldRayHit& hit) -> float
            { return static_cast<float>((*static_cast<std::remove_reference_t<Fn>*>(context))(hit)); },
            const_cast<void*>(static_cast<const void*>(std::addressof(fn))), nullptr);
    }

  private:
    using TriangleVisitor = bool (*)(void* context, std::uint32_t triangleIndex, const Triangle& triangle);
    using RayHitVisitor = float (*)(void* context, const HeightFieldRayHit& hit);

    /// Smallest and largest sample of a block's non-hole cells; min > max for a block of holes only.
    struct BlockRange
    {
        std::uint16_t minSample = 0;
        std::uint16_t maxSample = 0;
    };

    float heightOf(std::uint16_t s) const { return m_heightOffset + m_heightScale * float(s); }
    void visitOverlapping(const Aabb& box, TriangleVisitor visitor, void* context) const;
    bool castRayImpl(const RayCastInput& ray, HeightFieldRayMode mode, RayHitVisitor visitor, void* context,
                     HeightFieldRayHit* out) const;
    bool convexBeyondThreshold(std::uint32_t triangleA, std::uint32_t triangleB, int edge) const;

    std::uint32_t m_cellCountX = 0;
    std::uint32_t m_cellCountZ = 0;
    std::uint32_t m_blockCountX = 0;
    std::uint32_t m_blockCountZ = 0;
    float m_cellSizeX = 1.0f;
    float m_cellSizeZ = 1.0f;
    float m_heightScale = 1.0f;
    float m_heightOffset = 0.0f;
    Aabb m_bounds{};
    std::vector<std::uint16_t> m_samples; ///< (cellCountX + 1) * (cellCountZ + 1), row by row
    std::vector<BlockRange> m_blocks;     ///< blockCountX * blockCountZ, row by row
    std::vector<std::uint8_t> m_holes;    ///< one bit per cell, or empty when there are no holes
};

/// Result of buildHeightField: the field, or the reason it could not be built.
struct HeightFieldBuildResult
{
    HeightFieldError error = HeightFieldError::None;
    std::string message;     ///< human-readable detail; empty on success
    HeightField heightField; ///< empty unless ok()
    /// Largest |stored height - given height| over the float heights (metres), an upper bound rounded up;
    /// 0 when built from raw samples.
    float maxQuantizationErrorMeters = 0.0f;

    bool ok() const { return error == HeightFieldError::None; }
};

/// Validates `desc` and builds the heightfield (see HeightFieldDesc for the rules). Pure, deterministic,
/// no exceptions; two passes over the samples (about 0.2 s for 4097 x 4097 float heights).
inline HeightFieldBuildResult buildHeightField(const HeightFieldDesc& desc)
{
    return HeightField::build(desc);
}

} // namespace polytope::physics

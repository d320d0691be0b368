// Polytope wire protocol: geometry on the wire (STANDARD.md section 12).
//
// Hulls, triangle meshes, heightfields and compounds have more to them than a catalogue entry holds. Each
// distinct one is written as a Geometry FlatBuffer (schema/geometry.fbs, identifier "PLTG"); the hash of
// those bytes (geometryHash) names it, in the catalogue entries of the bodies using it and in the
// GeometrySlice datagrams that carry it, cut into kGeometrySliceBytes pieces. Equal geometry makes equal
// bytes (one writer, deterministic), so a geometry shared by many bodies crosses the wire once per client.
//
// The receiving side trusts nothing: GeometryAssembler refuses slices whose sizes disagree with the first
// slice of their hash, that would take the client past kMaxClientGeometryBytes, or whose kind is not a
// geometry kind; a completed geometry whose bytes do not hash to its name, or that does not verify and
// decode (decodeGeometry: every count, index and float checked), is refused. Each refusal is counted by
// reason and changes nothing else. The server side is server/src/geometry_replication.cpp.
#pragma once

#include "polytope/protocol/constants.h"
#include "polytope/wire/polytope_generated.h"

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace polytope::protocol
{

/// A convex hull: vertices and face loops (counter-clockwise from outside), as geometry.fbs's Hull.
struct HullGeometry
{
    std::vector<std::array<float, 3>> vertices;
    std::vector<std::uint8_t> faceSizes;   ///< vertices of each face, 3 .. 255
    std::vector<std::uint8_t> faceIndices; ///< the loops, concatenated
};

/// A triangle mesh, as geometry.fbs's Mesh.
struct MeshGeometry
{
    std::vector<std::array<float, 3>> vertices;
    std::vector<std::uint32_t> indices; ///< three per triangle
};

/// A heightfield, as geometry.fbs's HeightField.
struct HeightFieldGeometry
{
    std::uint32_t samplesX = 0;
    std::uint32_t samplesZ = 0;
    float cellSizeX = 1.0f;             ///< metres
    float cellSizeZ = 1.0f;             ///< metres
    float heightScale = 1.0f;           ///< metres per sample step
    float heightOffset = 0.0f;          ///< metres
    std::vector<std::uint16_t> samples; ///< samplesX * samplesZ, row by row
    std::vector<std::uint8_t> holes;    ///< empty, or one bit per cell

    bool isHole(std::uint32_t cell) const
    {
        return !holes.empty() && ((holes[cell >> 3] >> (cell & 7u)) & 1u) != 0;
    }
};

/// One child of a compound geometry.
struct CompoundChildGeometry
{
    wire::ShapeKind kind = wire::ShapeKind::Box;              ///< Sphere, Capsule, Box or Hull
    std::array<float, 3> position{};                          ///< metres, compound frame
    std::array<float, 4> orientation{0.0f, 0.0f, 0.0f, 1.0f}; ///< x, y, z, w
    std::array<float, 3> extent{};                            ///< as CatalogueEntry::extent; 0 for a hull
    std::uint8_t hull = 0;                                    ///< Hull: index into CompoundGeometry::hulls
};

struct CompoundGeometry
{
    std::vector<CompoundChildGeometry> children;
    std::vector<HullGeometry> hulls;
};

/// One geometry: `kind` says which member is meaningful.
struct Geometry
{
    wire::ShapeKind kind = wire::ShapeKind::Hull; ///< Hull, Compound, Mesh or HeightField
    HullGeometry hull;
    MeshGeometry mesh;
    HeightFieldGeometry heightField;
    CompoundGeometry compound;
};

/// True for the kinds that have a geometry: Hull, Compound, Mesh, HeightField.
bool isGeometryKind(wire::ShapeKind kind);

/// Writes `geometry` as a Geometry FlatBuffer (identifier "PLTG"). The same geometry always gives the same
/// bytes. Programmer errors (out-of-range counts) are the caller's: the server writes what the engine built.
std::vector<std::uint8_t> encodeGeometry(const Geometry& geometry);

/// Content hash of a geometry's bytes: the first 8 bytes, read as a little-endian u64, of unkeyed BLAKE2b
/// with a 16-byte output (libsodium crypto_generichash). A result of 0 is replaced by 1 (0 means "none").
std::uint64_t geometryHash(std::span<const std::uint8_t> bytes);

/// Why received geometry was refused.
enum class GeometryError : std::uint8_t
{
    None = 0,
    BadKind,       ///< a slice's kind is not a geometry kind, or differs from the decoded table's
    BadSize,       ///< total size 0 or over kMaxGeometryBytes, or disagreeing with earlier slices of the hash
    BadOffset,     ///< offset not a multiple of kGeometrySliceBytes, past the end, or wrong data length
    OverMemoryCap, ///< would take the client past kMaxClientGeometryBytes
    HashMismatch,  ///< the complete bytes do not hash to the name they came under
    Malformed,     ///< the bytes are not a valid Geometry FlatBuffer (verifier)
    OutOfRange,    ///< a count, index or number out of range (decodeGeometry)
    Count
};
inline constexpr std::size_t kGeometryErrorCount = static_cast<std::size_t>(GeometryError::Count);
/// Stable snake_case name of an error (tools, metrics).
const char* geometryErrorName(GeometryError error);

/// Verifies and decodes a geometry's bytes (any alignment: they are copied when not 8-byte aligned). Returns
/// None and fills `out`, or the reason it refused them.
GeometryError decodeGeometry(std::span<const std::uint8_t> bytes, Geometry& out);

/// Slices of a geometry of `totalBytes`: ceil(totalBytes / kGeometrySliceBytes).
inline std::uint32_t geometrySliceCount(std::size_t totalBytes)
{
    return static_cast<std::uint32_t>((totalBytes + kGeometrySliceBytes - 1) / kGeometrySliceBytes);
}

/// A geometry a client holds: its verified bytes and what they decode to.
struct ReceivedGeometry
{
    std::uint64_t hash = 0;
    wire::ShapeKind kind = wire::ShapeKind::Hull;
    std::vector<std::uint8_t> bytes; ///< exactly as the server wrote them
    Geometry geometry;
};

/// Counts of the receiving side.
struct GeometryReceiveStats
{
    std::uint64_t slicesAccepted = 0;  ///< new slices stored
    std::uint64_t slicesDuplicate = 0; ///< slices already held (resends), or of a geometry already complete
    std::uint64_t geometriesComplete = 0;
    std::array<std::uint64_t, kGeometryErrorCount> refused{}; ///< slices or geometries refused, by reason
    std::uint64_t refusedTotal() const;
};

/// Reassembles geometry from GeometrySlice messages, within kMaxClientGeometryBytes (the cap, settable for
/// tests). Slices arrive in any order, any number of times.
class GeometryAssembler
{
  public:
    explicit GeometryAssembler(std::size_t memoryCapBytes = kMaxClientGeometryBytes);

    /// Takes one (verified) GeometrySlice. Returns the hash when it completed a geometry, else 0; refusals
    /// are counted in stats() and leave every other geometry as it was.
    std::uint64_t add(const wire::GeometrySlice& slice);
    /// The complete geometry named `hash`, or nullptr.
    const ReceivedGeometry* find(std::uint64_t hash) const;
    const std::map<std::uint64_t, ReceivedGeometry>& complete() const { return m_complete; }
    /// Bytes held, complete and in assembly.
    std::size_t memoryBytes() const { return m_memoryBytes; }
    const GeometryReceiveStats& stats() const { return m_stats; }

  private:
    struct Partial
    {
        wire::ShapeKind kind = wire::ShapeKind::Hull;
        std::vector<std::uint8_t> bytes;
        std::vector<bool> have; ///< by slice
        std::uint32_t missing = 0;
    };
    void refuse(GeometryError error) { ++m_stats.refused[static_cast<std::size_t>(error)]; }

    std::size_t m_memoryCapBytes;
    std::size_t m_memoryBytes = 0;
    std::map<std::uint64_t, Partial> m_partial;
    std::map<std::uint64_t, ReceivedGeometry> m_complete;
    std::map<std::uint64_t, GeometryError>
        m_refusedHashes; ///< geometry refused whole: its slices are dropped
    GeometryReceiveStats m_stats;
};

} // namespace polytope::protocol

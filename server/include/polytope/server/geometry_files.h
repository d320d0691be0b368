// polytope-server: level geometry files read into the engine's inputs. Triangle meshes from glTF 2.0
// (.gltf with its buffers, .glb; Debian's tinygltf) and Wavefront OBJ (.obj; tinyobjloader), heightfields
// from 16-bit grayscale PNG (stb_image) or raw little-endian 16-bit samples. docs/SCENES.md ("Geometry
// files") describes the formats and options for level authors.
//
// The engine takes plain arrays (physics::buildTriangleMesh, physics::buildHeightField) and never sees a file
// format; this library is the only place that does. Files come from users, so nothing here trusts them: every
// file is read through regular_file.h (no FIFOs or devices, a size cap), every count, offset and index is
// checked before it is used, limits are enforced before anything large is allocated, and no exception leaves
// a loader. A failure gives one line that starts with the file's name and names the element:
//   level.glb: mesh 'Floor' primitive 2: index 5123 out of range (1024 vertices)
//   arena.obj: line 57: corner 3 names vertex 70, but the file has 64 vertices
//   terrain.png: 8-bit samples (allowEightBitPng is off): save the heightmap as 16-bit grayscale
#pragma once

#include "polytope/physics/heightfield.h"
#include "polytope/physics/math.h"
#include "polytope/physics/triangle_mesh.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::server
{

/// Default cap on a mesh file (for glTF: the file plus every external buffer it reads): 256 MiB, about what a
/// mesh of kMaxMeshTriangles triangles takes as a binary glTF with 32-bit indices.
inline constexpr std::uint64_t kDefaultMaxMeshFileBytes = 256ull * 1024 * 1024;
/// Default cap on a heightfield file: 64 MiB (a raw 4097 x 4097 field is 33.6 MB; a PNG is smaller).
inline constexpr std::uint64_t kDefaultMaxHeightFieldFileBytes = 64ull * 1024 * 1024;
/// Default bound on |coordinate| of a mesh vertex (metres, after node transforms), as the world's other
/// shapes.
inline constexpr float kDefaultMaxMeshCoordinateMeters = 1.0e6f;

/// Why a geometry file was refused.
enum class GeometryFileError : std::uint8_t
{
    None = 0,
    BadPath,          ///< an empty path, or one that ScenePathRules refuse
    CannotRead,       ///< missing, unreadable, not a regular file (FIFO, device, directory), or a read error
    TooLarge,         ///< over the options' byte cap (glTF: the file and its external buffers together)
    UnknownFormat,    ///< the extension is not one of the known ones, or the bytes are not what it says
    Malformed,        ///< the parser refused the bytes (syntax, truncation), or the structure is inconsistent
    Unsupported,      ///< valid, but uses something this loader does not read (points, colour PNG, ...)
    InvalidGeometry,  ///< an index out of range, a non-finite or too distant vertex, a raw file of the wrong
                      ///< size
    TooManyTriangles, ///< more than the options allow (at most physics::kMaxMeshTriangles)
    NoGeometry,       ///< no triangles at all, or every one degenerate and dropped
    BuildFailed,      ///< the engine's builder refused the arrays (a degenerate triangle under Refuse, ...)
};

/// A short, stable name for the error ("InvalidGeometry", ...), for logs and tests.
const char* toString(GeometryFileError error);

// ---- Triangle meshes
// -----------------------------------------------------------------------------------------

/// How a mesh file's format is chosen.
enum class MeshFileFormat : std::uint8_t
{
    Auto = 0, ///< by extension, ignoring case: .gltf and .glb (either spelling: the bytes decide), .obj
    Gltf,     ///< glTF 2.0, JSON (.gltf) or binary (.glb): the first four bytes decide
    Obj,      ///< Wavefront OBJ
};

struct MeshFileOptions
{
    MeshFileFormat format = MeshFileFormat::Auto;
    /// Bytes, > 0: larger files are refused before they are read. For glTF the cap covers the file and every
    /// external file it reads together (at most 4 GiB - 1, what tinygltf can address).
    std::uint64_t maxFileBytes = kDefaultMaxMeshFileBytes;
    /// Most triangles (counted before degenerate ones are dropped), clamped to physics::kMaxMeshTriangles.
    std::uint32_t maxTriangles = physics::kMaxMeshTriangles;
    /// Metres, > 0: a vertex with a coordinate farther than this from 0 (after node transforms) is refused.
    float maxCoordinateMeters = kDefaultMaxMeshCoordinateMeters;
    /// False: a symbolic link as the file's last component is refused (also for glTF's external buffers).
    bool followSymlinks = true;
    /// glTF: external buffers must lie in the glTF file's folder or below it (checked on the path's text;
    /// a symbolic link inside the folder may still lead out, see followSymlinks). False allows any path.
    bool confineExternalFiles = true;
    /// False: only read and check the arrays; MeshFileResult::mesh stays empty.
    bool buildMesh = true;
    /// Passed to physics::buildTriangleMesh: degenerate triangles dropped (counted) or refused, and the rest.
    physics::TriangleMeshBuildOptions build{};
};

/// A run of consecutive triangles that came from one element of the file.
struct MeshFilePart
{
    /// glTF: "node 'Level' mesh 'Floor' primitive 2" (an unnamed node or mesh by its index: "node 3");
    /// OBJ: "object 'Crate'" (an unnamed one: "object 1"). Names are made printable (printableExcerpt).
    std::string element;
    std::uint32_t firstTriangle = 0; ///< input triangle index (indices[3k .. 3k + 2] is triangle k)
    std::uint32_t triangleCount = 0;
};

/// What loadMeshFile gives: the arrays for physics::buildTriangleMesh and, unless options.buildMesh is off,
/// the built mesh; or the reason it could not.
struct MeshFileResult
{
    GeometryFileError error = GeometryFileError::None;
    std::string message; ///< one line starting with the file's name; empty on success

    /// Metres, in the file's frame (glTF: the default scene's frame, node transforms applied). Not welded: a
    /// glTF primitive's vertices are copied as they are for each node that uses it.
    std::vector<physics::Vec3> vertices;
    /// Three per triangle, counter-clockwise seen from the front (glTF primitives under a mirroring node
    /// transform have two corners swapped to keep it so), each < vertices.size().
    std::vector<std::uint32_t> indices;
    /// Where each triangle came from, in order, covering every triangle (parts with no triangles are left
    /// out).
    std::vector<MeshFilePart> parts;
    /// Things skipped that do not make the file wrong ("ignored 3 line elements"), one line each.
    std::vector<std::string> warnings;
    /// Degenerate triangles the build met (dropped, or with policy Refuse the one that failed it).
    physics::TriangleMeshDropCounts dropped;
    /// Built from vertices and indices by physics::buildTriangleMesh; empty when buildMesh is off or on
    /// failure.
    physics::TriangleMesh mesh;

    bool ok() const { return error == GeometryFileError::None; }
    std::uint32_t vertexCount() const { return static_cast<std::uint32_t>(vertices.size()); }
    std::uint32_t triangleCount() const { return static_cast<std::uint32_t>(indices.size() / 3); }
    /// The part holding input triangle `triangle`, or nullptr when none does.
    const MeshFilePart* partOf(std::uint32_t triangle) const;
};

/// Reads the mesh file at `path` (see the file comment and docs/SCENES.md). glTF: every TRIANGLES,
/// TRIANGLE_STRIP and TRIANGLE_FAN primitive of every mesh reached from the default scene's nodes (the first
/// scene when none is the default; every root node when there are no scenes), each node's transform applied,
/// indices of any integer component type or none (non-indexed). OBJ: every face, split into triangles. Then
/// builds the mesh unless options.buildMesh is off. Never throws; on failure the arrays are empty.
MeshFileResult loadMeshFile(const std::string& path, const MeshFileOptions& options = {});

/// The same from bytes already in memory (the fuzz target's entry). `name` is the file name used in messages
/// and to choose the format under MeshFileFormat::Auto; `baseFolder` is where a glTF's external buffers are
/// looked up ("" for none: such buffers are then refused).
MeshFileResult loadMeshBytes(std::string_view bytes, const std::string& name, const std::string& baseFolder,
                             const MeshFileOptions& options = {});

// ---- Heightfields
// ----------------------------------------------------------------------------------------------

/// How a heightfield file's format is chosen.
enum class HeightFieldFileFormat : std::uint8_t
{
    Auto = 0, ///< by extension, ignoring case: .png is Png; .raw and .r16 are Raw16
    Png,      ///< a grayscale PNG, 16 bits per sample (8 only with allowEightBitPng)
    Raw16,    ///< rawSamplesX * rawSamplesZ little-endian unsigned 16-bit samples, row by row, no header
};

struct HeightFieldFileOptions
{
    HeightFieldFileFormat format = HeightFieldFileFormat::Auto;
    /// Raw16 only: samples along x (a row) and along z (the number of rows), each in
    /// [physics::kMinHeightFieldSamplesPerSide, physics::kMaxHeightFieldSamplesPerSide]. The file must hold
    /// exactly 2 * rawSamplesX * rawSamplesZ bytes.
    std::uint32_t rawSamplesX = 0;
    std::uint32_t rawSamplesZ = 0;
    /// Png only: accept 8-bit grayscale, each 0..255 value taken as the sample (heightScale applies per step
    /// of 1). Off by default: 256 levels are rarely what a level author meant to export.
    bool allowEightBitPng = false;
    float cellSizeXMeters = 1.0f; ///< metres between samples along x (finite, > 0)
    float cellSizeZMeters = 1.0f; ///< metres between samples along z (finite, > 0)
    float heightScale =
        1.0f; ///< metres per sample step (finite, > 0): height = heightOffset + scale * sample
    float heightOffset = 0.0f; ///< metres (finite)
    /// A sample value that marks holes: a cell is a hole when any of its four corner samples has this value.
    /// Such samples are stored as the lowest other sample of the field (no query sees them: every cell that
    /// touches one is a hole), so that they do not stretch the field's bounds. None by default.
    std::optional<std::uint16_t> holeSample;
    /// Bytes, > 0: larger files are refused before they are read.
    std::uint64_t maxFileBytes = kDefaultMaxHeightFieldFileBytes;
    /// False: a symbolic link as the file's last component is refused.
    bool followSymlinks = true;
};

/// What loadHeightFieldFile gives: the samples and hole mask in physics::HeightFieldDesc's layout, and the
/// built field; or the reason it could not.
struct HeightFieldFileResult
{
    GeometryFileError error = GeometryFileError::None;
    std::string message; ///< one line starting with the file's name; empty on success

    std::uint32_t sampleCountX = 0; ///< image width / rawSamplesX
    std::uint32_t sampleCountZ = 0; ///< image height / rawSamplesZ
    /// Row by row (index iz * sampleCountX + ix). Image column ix is local x = ix * cellSizeX and image row
    /// iz (top row first) is local z = iz * cellSizeZ: seen from above (+y) with +x to the right, the image's
    /// top is toward -z.
    std::vector<std::uint16_t> samples;
    /// One bit per cell as HeightFieldDesc::holeMask; empty when no cell is a hole.
    std::vector<std::uint8_t> holeMask;
    std::uint32_t holeCellCount = 0;
    float cellSizeX = 1.0f;
    float cellSizeZ = 1.0f;
    float heightScale = 1.0f;
    float heightOffset = 0.0f;
    /// Built from desc(); empty on failure.
    physics::HeightField heightField;

    bool ok() const { return error == GeometryFileError::None; }
    /// The description buildHeightField was given. Its spans point into samples and holeMask: valid while
    /// this result lives and those vectors are not changed.
    physics::HeightFieldDesc desc() const;
};

/// Reads the heightfield file at `path` by `options` (see HeightFieldFileOptions) and builds the field with
/// physics::buildHeightField. Never throws; on failure the arrays are empty.
HeightFieldFileResult loadHeightFieldFile(const std::string& path, const HeightFieldFileOptions& options);

/// The same from bytes already in memory; `name` is used in messages and to choose the format under Auto.
HeightFieldFileResult loadHeightFieldBytes(std::string_view bytes, const std::string& name,
                                           const HeightFieldFileOptions& options);

// ---- Paths named in scene files
// --------------------------------------------------------------------------------

/// What resolveScenePath accepts besides plain relative paths.
struct ScenePathRules
{
    bool allowAbsolute = true; ///< false: "/levels/a.glb" is refused
    /// False: a path that climbs out of the scene file's folder ("../shared/a.glb"), once "." and ".." are
    /// folded on the text, is refused. Symbolic links are not followed by this check.
    bool allowOutsideSceneFolder = true;
};

/// The path of a geometry file named in the scene file at `sceneFilePath`: relative paths are taken from the
/// scene file's folder ("scenes/arena.json" + "meshes/floor.glb" = "scenes/meshes/floor.glb"), absolute ones
/// are kept; "." and ".." are folded on the text. Returns false with `error` set (one line, without the
/// scene's path) for an empty path, a NUL byte in it, or what `rules` refuse.
bool resolveScenePath(const std::string& sceneFilePath, const std::string& named, std::string& resolved,
                      std::string& error, const ScenePathRules& rules = {});

} // namespace polytope::server

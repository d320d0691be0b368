// polytope-server scene files: JSON whose format is the FlatBuffers schema server/schema/scene.fbs,
// read with FlatBuffers' own JSON parser (flatbuffers::Parser with the schema text embedded at build
// time), then checked value by value. docs/SCENES.md describes the format.
//
// Loading is in steps so that a bad file never touches a running world: parseSceneJson turns text into a
// SceneDescription, refusing anything out of range with an error that names the field
// ("bodies[3].shape.half_extents.y: must be positive (got -1)"); loadSceneGeometry reads the mesh and
// heightfield files the scene names (geometry_files.h), each once however many bodies name it; buildScene
// then fills a World. loadSceneFile does the first two. No FlatBuffers type appears here; nothing throws.
//
// Geometry files are named relative to the scene file's folder and must lie inside it (judged on the path's
// text: no absolute paths, no ".." that climbs out); they are read as the scene file itself is (regular files
// of bounded size, opened without blocking; symbolic links as the scene file's rules say).
#pragma once

#include "polytope/physics/shapes.h"
#include "polytope/physics/world.h"
#include "polytope/server/logic_spec.h"
#include "polytope/server/regular_file.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::server
{

/// Files larger than this are refused before they are read. 16 MiB: the largest scene a file may list,
/// kMaxSceneBodies bodies, takes about 150 bytes of JSON each written out in full (shape, position,
/// orientation, velocities, material), 15 MB; anything larger is not a scene, and the server holds the text
/// while parsing it.
inline constexpr std::size_t kMaxSceneFileBytes = 16u * 1024u * 1024u;
/// Most bodies a scene file may list (not counting a built-in scene's).
inline constexpr std::size_t kMaxSceneBodies = 100000;
/// Most points one hull may list.
inline constexpr std::size_t kMaxSceneHullPoints = 1024;
/// Most joints a scene file may list.
inline constexpr std::size_t kMaxSceneJoints = 100000;
/// Longest body name, bytes.
inline constexpr std::size_t kMaxSceneBodyNameBytes = 256;
/// Most spawn points a scene file may list.
inline constexpr std::size_t kMaxSceneSpawnPoints = 4096;
/// Densities are limited to this range (kg/m^3); sizes, speeds and damping to the ones in docs/SCENES.md.
inline constexpr float kMinSceneDensity = 1e-3f;
inline constexpr float kMaxSceneDensity = 1e6f;

/// Most distinct meshes and heightfields one scene may hold (mesh files by file and scale, heightfield files
/// by file and parameters, each inline heightfield).
inline constexpr std::size_t kMaxSceneGeometry = 64;
/// Most heights an inline heightfield may list: 129 x 129 samples. Larger terrains belong in a file.
inline constexpr std::size_t kMaxSceneInlineHeights = 129 * 129;
/// Largest mesh file (for glTF: the file and its buffers together) a scene may name, bytes: 64 MiB.
inline constexpr std::uint64_t kMaxSceneMeshFileBytes = 64ull * 1024 * 1024;
/// Largest heightfield file a scene may name, bytes: 64 MiB (a raw 4097 x 4097 field is 33.6 MB).
inline constexpr std::uint64_t kMaxSceneHeightFieldFileBytes = 64ull * 1024 * 1024;
/// Most triangles one mesh file may hold: 4 Mi (about 0.7 us each to build, 3 s).
inline constexpr std::uint32_t kMaxSceneMeshTriangles = 4u * 1024 * 1024;

/// One body of a scene, ready for World::createBody except for what lives in the world's catalogues:
/// - Hull: `hull` holds the hull built from the file's points (desc.shape.hullIndex is set by buildScene /
///   makePlayerBody when the hull enters the world's catalogue);
/// - Compound: `compound` holds the children, a Hull child's shape.hullIndex indexing `childHulls`
///   (buildScene maps them to the world's hull catalogue, then adds the compound);
/// - Mesh, HeightField: `geometry` indexes SceneDescription::geometry.
struct SceneBody
{
    std::string name; ///< empty: none; else unique within the scene (joints name their bodies by it)
    physics::BodyDesc desc;
    physics::ConvexHull hull;                    ///< hull shapes only; empty otherwise
    physics::CompoundShape compound;             ///< compound shapes only; empty otherwise
    std::vector<physics::ConvexHull> childHulls; ///< compound shapes: the hulls of its Hull children
    std::uint32_t geometry = 0;                  ///< mesh and heightfield shapes: SceneDescription::geometry
};

/// A triangle mesh or heightfield that bodies of a scene use: named by a geometry file (read by
/// loadSceneGeometry, once however many bodies name it with the same parameters) or, for a heightfield,
/// given inline (built when the scene is parsed).
struct SceneGeometry
{
    physics::ShapeType type = physics::ShapeType::Mesh; ///< Mesh or HeightField
    std::string field; ///< the first field that names it, for messages ("bodies[3].shape.file")
    std::string file;  ///< the path as named, normalised, relative to the scene file's folder; empty: inline
    physics::Vec3 scale{1.0f, 1.0f, 1.0f}; ///< meshes: factors applied to the file's coordinates
    // Heightfield files (docs/SCENES.md; geometry_files.h's HeightFieldFileOptions):
    std::uint32_t rawSamplesX = 0; ///< raw files: samples per row
    std::uint32_t rawSamplesZ = 0; ///< raw files: rows
    float cellSizeX = 1.0f;        ///< metres between samples along x
    float cellSizeZ = 1.0f;        ///< metres between samples along z
    float heightScale = 1.0f;      ///< metres per sample step
    float heightOffset = 0.0f;     ///< metres
    std::optional<std::uint16_t> holeSample;
    /// The geometry, shared by the bodies (and by the worlds built from this description). Null until loaded.
    std::shared_ptr<const physics::TriangleMesh> mesh;
    std::shared_ptr<const physics::HeightField> heightField;

    bool loaded() const { return mesh != nullptr || heightField != nullptr; }
};

/// One entry of a scene's collision layer table (World::setLayersCollide).
struct SceneLayerPair
{
    std::uint32_t a = 0; ///< 0 .. physics::kMaxCollisionLayers - 1
    std::uint32_t b = 0; ///< 0 .. physics::kMaxCollisionLayers - 1
    bool collide = true;
};

/// One joint of a scene, ready for World::createJoint once its bodies exist: desc.bodyA and desc.bodyB are
/// left null, buildScene sets them to the bodies `bodyA` and `bodyB` name. The two bodies differ and at
/// least one of them is dynamic; every number is in range for the joint's type.
struct SceneJoint
{
    physics::JointDesc desc;
    std::uint32_t bodyA = 0; ///< index into SceneDescription::bodies
    std::uint32_t bodyB = 0; ///< index into SceneDescription::bodies
    /// Set: both frames come from this one world frame at the bodies' starting poses
    /// (World::createJoint(desc, worldFrame)), and desc.frameA and frameB are unused. Unset: desc.frameA and
    /// frameB, in the bodies' local frames.
    std::optional<physics::Transform> worldFrame;
};

/// A checked scene file. Every number is finite and in range; orientations are unit quaternions; plane
/// normals are unit.
struct SceneDescription
{
    std::string name;                          ///< free text; may be empty
    physics::Vec3 gravity{0.0f, -9.81f, 0.0f}; ///< m/s^2
    std::string builtin;                       ///< a physics::findScene name built first; empty for none
    std::vector<SceneBody> bodies;             ///< added after the built-in scene, in file order
    std::optional<SceneBody> player;           ///< template of the body spawned for each client that joins
    std::vector<physics::Vec3> spawnPoints;    ///< metres; players spawn here in turn (round robin)
    bool allowClientSpawn = false;             ///< clients may spawn (and remove) bodies of their own
    std::uint32_t maxBodiesPerClient = 16;     ///< bodies one client may own at once, player included
    bool keepBodiesOnLeave = false;            ///< a leaving client's bodies stay (unowned) instead of going
    std::vector<SceneGeometry> geometry;    ///< meshes and heightfields, in the order bodies first name them
    std::vector<SceneLayerPair> layerPairs; ///< applied in order; each pair of layers at most once
    std::vector<SceneJoint> joints;         ///< created after every body, in file order
    /// The room's game logic, if the scene names one (script resolved against the scene file's folder by
    /// loadSceneFile; as written by parseSceneJson).
    std::optional<LogicSpec> logic;
    bool stopOnLogicError = false; ///< "logic": {"stop_on_error": true}
    /// Things loadSceneGeometry skipped in geometry files that do not make them wrong ("bodies[2].shape.file:
    /// level.obj: dropped 3 degenerate triangles ..."), one line each, for the log.
    std::vector<std::string> warnings;

    /// Whether every geometry entry has its mesh or heightfield (loadSceneGeometry has run, or none needs
    /// it).
    bool geometryLoaded() const;
};

/// Parses and checks scene JSON. On success fills `out` (replacing what it held) and returns true; on
/// failure returns false, leaves `out` unspecified, and sets `error` to one line naming the field
/// ("bodies[2].density: must be in [0.001, 1e+06] (got -5)") or, for malformed JSON, the parser's
/// message with its position ("line 3, column 14: unknown field: colour"). Reads no file: the geometry
/// files the scene names are checked as paths and listed in out.geometry (inline heightfields are built),
/// for loadSceneGeometry to read.
bool parseSceneJson(std::string_view json, SceneDescription& out, std::string& error);

/// How loadSceneGeometry reads geometry files.
struct SceneGeometryRules
{
    bool followSymlinks = true; ///< false: a symbolic link as a file's last path component is refused
    std::uint64_t maxMeshFileBytes = kMaxSceneMeshFileBytes;
    std::uint64_t maxHeightFieldFileBytes = kMaxSceneHeightFieldFileBytes;
    std::uint32_t maxMeshTriangles = kMaxSceneMeshTriangles;
};

/// Reads every geometry file `scene` names that is not loaded yet, each path taken from the folder of
/// `sceneFilePath` (the scene file's own path), and builds its mesh (scaled) or heightfield. On failure
/// returns false with `error` naming the field and the file as the scene names it ("bodies[2].shape.file:
/// meshes/level.obj: line 8: corner 3 names vertex 7, but the file has 4 vertices"); `scene` is then partly
/// loaded and is to be discarded. Appends the loaders' warnings to scene.warnings.
bool loadSceneGeometry(SceneDescription& scene, const std::string& sceneFilePath,
                       const SceneGeometryRules& rules, std::string& error);

/// Reads the file at `path` (a regular file of at most kMaxSceneFileBytes, regular_file.h: a FIFO or a
/// device is refused without blocking), parses it like parseSceneJson and loads its geometry files
/// (loadSceneGeometry, symbolic links followed). Errors start with the path.
bool loadSceneFile(const std::string& path, SceneDescription& out, std::string& error);
/// The same by `rules` (size cap and symbolic links for the scene file; symbolic links for its geometry
/// files). `status` says whether the scene file could be read at all (Ok: read, and `error` is then the
/// parser's or the geometry's); `error` does not name the path, so that callers choose what to reveal of it.
bool loadSceneFile(const std::string& path, const FileRules& rules, SceneDescription& out, FileStatus& status,
                   std::string& error);

// ---- Scene names
// ------------------------------------------------------------------------------------------- A scene name is
// what an admin `load` takes, and what --scene and --room take besides paths: a built-in name
// (physics::parseSceneName: "stack10", "pile:500"), or else NAME for the file NAME.json in the scene
// directory (RoomConfig::sceneDirectory). A name is never a path, so that a load cannot reach any file
// outside that directory: 1..kMaxSceneNameBytes bytes of letters, digits, '_', '-', '.' and ':', starting
// with a letter or a digit, without "..", and not ending in ".json" (which makes a path, isScenePath).

inline constexpr std::size_t kMaxSceneNameBytes = 64;

/// True when `text` is a scene name by the rules above.
bool isSceneName(std::string_view text);

/// True when `scene` is a path rather than a name: it contains '/' or ends in ".json". Only the operator
/// gives paths (--scene, --room); they are read where they lead, as regular files of bounded size.
bool isScenePath(std::string_view scene);

/// The one answer for a scene name (or anything else) that leads to no scene, whatever is or is not on disk:
/// "no scene 'X' in the scene directory or among the built-in scenes", X quoted by printableExcerpt.
std::string unknownSceneMessage(std::string_view name);

/// The file a scene name that is not built in stands for: `directory`/NAME.json.
std::string sceneFileFor(const std::string& directory, std::string_view name);

/// The rules a scene file named by a scene name is read by: regular files of at most kMaxSceneFileBytes, not
/// symbolic links (whatever an operator places in the scene directory is read, but nothing it points to).
inline constexpr FileRules kSceneDirectoryFileRules{kMaxSceneFileBytes, false};

/// Builds `scene` into `world`: sets its gravity, builds the built-in scene (if any), applies the layer
/// table, adds the meshes and heightfields (in SceneDescription::geometry's order), every hull and compound
/// as the bodies need them (the player template's too, so the catalogue is complete before any client
/// joins; identical hulls, and identical compounds, are added once), the bodies in order, then the joints in
/// order. Returns false with an error (naming the body or joint index) when the world refuses something,
/// e.g. for lack of capacity, or
/// when a geometry file was not loaded (a scene parsed from text names none it can read). On failure
/// `world` may be partly filled: callers build into a fresh World and swap it in only on success.
/// Deterministic: the same description builds the same catalogues and bodies, so a checkpointed world
/// restores into a room that built its scene again (World::restoreState checks the catalogues).
bool buildScene(const SceneDescription& scene, physics::World& world, std::string& error);

/// The body to create for the client that joins `spawnIndex`-th (any integer; spawn points are used
/// round robin, modulo their count): the player template placed at that spawn point (its own position
/// when the scene has none), orientation and velocities as in the template. A hull or compound template is
/// looked up in (or, if missing, added to) `world`'s catalogues and its index set. Returns false with an
/// error when the scene has no player template or a catalogue is full.
bool makePlayerBody(const SceneDescription& scene, long long spawnIndex, physics::World& world,
                    physics::BodyDesc& out, std::string& error);

} // namespace polytope::server

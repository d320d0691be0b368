// polytope-server scene files: JSON whose format is the FlatBuffers schema server/schema/scene.fbs,
// read with FlatBuffers' own JSON parser (flatbuffers::Parser with the schema text embedded at build
// time), then checked value by value. docs/SCENES.md describes the format.
//
// Loading is in two steps so that a bad file never touches a running world: parseSceneJson (or
// loadSceneFile) turns text into a SceneDescription, refusing anything out of range with an error that
// names the field ("bodies[3].shape.half_extents.y: must be positive (got -1)"); buildScene then fills a
// World. No FlatBuffers type appears here; nothing throws.
#pragma once

#include "polytope/physics/shapes.h"
#include "polytope/physics/world.h"
#include "polytope/server/regular_file.h"

#include <cstddef>
#include <cstdint>
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
/// Most spawn points a scene file may list.
inline constexpr std::size_t kMaxSceneSpawnPoints = 4096;
/// Densities are limited to this range (kg/m^3); sizes, speeds and damping to the ones in docs/SCENES.md.
inline constexpr float kMinSceneDensity = 1e-3f;
inline constexpr float kMaxSceneDensity = 1e6f;

/// One body of a scene, ready for World::createBody except for hulls: when desc.shape.type is
/// ShapeType::Hull, `hull` holds the hull built from the file's points (desc.shape.hullIndex is set by
/// buildScene / makePlayerBody when the hull enters the world's catalogue).
struct SceneBody
{
    physics::BodyDesc desc;
    physics::ConvexHull hull; ///< hull shapes only; empty otherwise
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
};

/// Parses and checks scene JSON. On success fills `out` (replacing what it held) and returns true; on
/// failure returns false, leaves `out` unspecified, and sets `error` to one line naming the field
/// ("bodies[2].density: must be in [0.001, 1e+06] (got -5)") or, for malformed JSON, the parser's
/// message with its position ("line 3, column 14: unknown field: colour").
bool parseSceneJson(std::string_view json, SceneDescription& out, std::string& error);

/// Reads the file at `path` (a regular file of at most kMaxSceneFileBytes, regular_file.h: a FIFO or a
/// device is refused without blocking) and parses it like parseSceneJson. Errors start with the path.
bool loadSceneFile(const std::string& path, SceneDescription& out, std::string& error);
/// The same by `rules` (size cap, symbolic links). `status` says whether the file could be read at all (Ok:
/// read, and `error` is then the parser's); `error` does not name the path, so that callers choose what to
/// reveal of it.
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

/// Builds `scene` into `world`: sets its gravity, builds the built-in scene (if any), adds every hull
/// (the player template's too, so the catalogue is complete before any client joins; identical hulls
/// are added once), then the bodies in order. Returns false with an error (naming the body index) when
/// the world refuses something, e.g. for lack of capacity. On failure `world` may be partly filled:
/// callers build into a fresh World and swap it in only on success.
bool buildScene(const SceneDescription& scene, physics::World& world, std::string& error);

/// The body to create for the client that joins `spawnIndex`-th (any integer; spawn points are used
/// round robin, modulo their count): the player template placed at that spawn point (its own position
/// when the scene has none), orientation and velocities as in the template. A hull template is looked
/// up in (or, if missing, added to) `world`'s catalogue and desc.shape.hullIndex set. Returns false
/// with an error when the scene has no player template or the catalogue is full.
bool makePlayerBody(const SceneDescription& scene, long long spawnIndex, physics::World& world,
                    physics::BodyDesc& out, std::string& error);

} // namespace polytope::server

// polytope-server: a room's scene: its world built from a built-in scene or a scene file, and the player
// rules (template, spawning, limits) that come with it.
#include "polytope/server/room.h"

#include "polytope/physics/scenes.h"

#include <sodium.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cmath>
#include <vector>

namespace polytope::server
{

namespace
{
// Built-in scenes' player: a ball a client can push around, light enough (500 kg/m^3, about 134 kg) to
// shove the scenes' 1000 kg/m^3 cubes only with effort, damped so that it stops when the client lets go.
constexpr float kPlayerRadius = 0.4f;
constexpr float kPlayerDensity = 500.0f;
constexpr float kPlayerFriction = 0.6f;
constexpr float kPlayerRestitution = 0.2f;
constexpr float kPlayerLinearDamping = 0.1f;
constexpr float kPlayerAngularDamping = 0.5f;
// Spawn points: rings around the origin, 3 m up (clear of the scenes' bodies), 64 to a ring at the golden
// angle so that neighbours in join order land far apart; a ring 1 m further out for each 64 joins, 8 rings.
constexpr float kSpawnHeight = 3.0f;
constexpr float kSpawnInnerRadius = 6.0f;
constexpr float kSpawnRingSpacing = 1.0f;
constexpr std::uint32_t kSpawnsPerRing = 64;
constexpr std::uint32_t kSpawnRings = 8;
constexpr float kGoldenAngle = 2.39996323f; // radians
/// A scene file's parse error quotes the file (FlatBuffers' "instead got: ..."): at most this much of it goes
/// into an admin reply or a log line, escaped.
constexpr std::size_t kMaxQuotedErrorBytes = 200;

/// A scene's identity in checkpoints (Room::saveState): BLAKE2b-256 of World::saveState right after the scene
/// was built. It covers everything the scene puts in the world (every body, shape, hull and the gravity, the
/// layer table, and the fingerprints of its compounds, meshes and heightfields: a geometry file changed since
/// the checkpoint makes another scene), whichever way it was named (stack10 and stack:10 are one scene; a
/// scene file reformatted is the same scene), and is deterministic: building is (physics/world.h), and so
/// is saveState's byte layout. Player rules of a scene file (template, spawn points, limits) are not in the
/// world; after a restore they come from the file as it is now, as they would after a reset.
std::array<std::uint8_t, 32> sceneDigest(const physics::World& built)
{
    std::vector<std::uint8_t> state;
    built.saveState(state);
    std::array<std::uint8_t, 32> digest{};
    crypto_generichash(digest.data(), digest.size(), state.data(), state.size(), nullptr, 0);
    return digest;
}

/// What loading a scene file's geometry skipped without refusing it (degenerate triangles dropped, OBJ lines
/// ignored), for the operator.
void logSceneWarnings(const std::string& scene, const SceneDescription& description)
{
    for (const std::string& warning : description.warnings)
    {
        spdlog::warn("scene '{}': {}", printableExcerpt(scene, kMaxQuotedErrorBytes),
                     printableExcerpt(warning, kMaxQuotedErrorBytes));
    }
}

bool spawnDefaultPlayer(physics::World& world, std::uint32_t spawnIndex, const physics::Vec3* at,
                        physics::BodyId& out)
{
    physics::BodyDesc desc;
    desc.shape = physics::Shape::makeSphere(kPlayerRadius);
    desc.density = kPlayerDensity;
    desc.friction = kPlayerFriction;
    desc.restitution = kPlayerRestitution;
    desc.linearDamping = kPlayerLinearDamping;
    desc.angularDamping = kPlayerAngularDamping;
    if (at)
    {
        desc.transform.p = *at;
    }
    else
    {
        const float angle = kGoldenAngle * static_cast<float>(spawnIndex % kSpawnsPerRing);
        const float radius =
            kSpawnInnerRadius +
            kSpawnRingSpacing * static_cast<float>((spawnIndex / kSpawnsPerRing) % kSpawnRings);
        desc.transform.p = {radius * std::cos(angle), kSpawnHeight, radius * std::sin(angle)};
    }
    const physics::CreateBodyResult result = world.createBody(desc);
    out = result.id;
    return result.status == physics::WorldStatus::Ok;
}
} // namespace

bool Room::buildWorld(const RoomConfig& config, physics::World& world, std::string& error,
                      std::shared_ptr<const SceneDescription>& file)
{
    file.reset();
    if (config.buildScene)
    {
        if (!config.buildScene(world))
        {
            error = "scene '" + config.scene + "' does not fit in the world's capacity";
            return false;
        }
        return true;
    }
    auto description = std::make_shared<SceneDescription>();
    if (isScenePath(config.scene))
    {
        // The operator's own choice at start-up (--scene, --room); still a regular file of bounded size.
        if (!loadSceneFile(config.scene, *description, error) || !buildScene(*description, world, error))
        {
            error = printableExcerpt(error, 2 * kMaxQuotedErrorBytes); // the path, then the parser's words
            return false;
        }
        logSceneWarnings(config.scene, *description);
        file = std::move(description);
        return true;
    }
    // A scene name (scene_file.h has the rules): built in, or NAME.json in the scene directory.
    physics::SceneName name;
    std::string why;
    if (physics::parseSceneName(config.scene, name, why))
    {
        if (!physics::buildScene(world, name))
        {
            error = "scene '" + config.scene + "' does not fit in the world's capacity";
            return false;
        }
        return true;
    }
    if (!isSceneName(config.scene))
    {
        error = unknownSceneMessage(config.scene);
        return false;
    }
    FileStatus status = FileStatus::Ok;
    if (!loadSceneFile(sceneFileFor(config.sceneDirectory, config.scene), kSceneDirectoryFileRules,
                       *description, status, error))
    {
        // Missing and unreadable look the same (nothing but the name is told); a file that is there but too
        // large or not a valid scene is the operator's to fix, and says why.
        error = status == FileStatus::CannotOpen || status == FileStatus::NotRegular
                    ? unknownSceneMessage(config.scene)
                    : "scene '" + config.scene + "': " + printableExcerpt(error, kMaxQuotedErrorBytes);
        return false;
    }
    if (!buildScene(*description, world, error))
    {
        error = "scene '" + config.scene + "': " + printableExcerpt(error, kMaxQuotedErrorBytes);
        return false;
    }
    logSceneWarnings(config.scene, *description);
    file = std::move(description);
    return true;
}

void Room::adoptSceneRules(std::shared_ptr<const SceneDescription> file)
{
    m_sceneDigest = sceneDigest(m_world);
    m_sceneFile = std::move(file);
    if (!m_sceneFile)
    {
        m_config.stopOnLogicError = m_explicitStopOnLogicError;
        m_config.spawnPlayer =
            m_explicitSpawn
                ? m_explicitSpawn
                : (!m_config.buildScene && m_config.playerBodies ? spawnDefaultPlayer : SpawnFunction{});
        return;
    }
    const SceneDescription& scene = *m_sceneFile;
    m_config.stopOnLogicError = m_explicitStopOnLogicError || scene.stopOnLogicError;
    m_config.allowClientSpawn = scene.allowClientSpawn;
    m_config.maxBodiesPerClient = static_cast<int>(std::min<std::uint32_t>(scene.maxBodiesPerClient, 1024));
    m_config.keepBodiesOnLeave = scene.keepBodiesOnLeave;
    if (!scene.player)
    {
        m_config.spawnPlayer = nullptr;
        return;
    }
    m_config.spawnPlayer = [file = m_sceneFile](physics::World& world, std::uint32_t spawnIndex,
                                                const physics::Vec3* at, physics::BodyId& out)
    {
        physics::BodyDesc desc;
        std::string error;
        if (!makePlayerBody(*file, spawnIndex, world, desc, error))
        {
            spdlog::warn("player body: {}", error);
            return false;
        }
        if (at)
        {
            desc.transform.p = *at;
        }
        const physics::CreateBodyResult result = world.createBody(desc);
        out = result.id;
        return result.status == physics::WorldStatus::Ok;
    };
}

} // namespace polytope::server

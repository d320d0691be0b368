// polytope-server: a room's admin commands (authenticated by the Server, admin.cpp) and its checkpoint state.
#include "polytope/server/room.h"

#include "polytope/server/log_format.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace polytope::server
{
namespace wire = protocol::wire;

namespace
{
/// Ticks one Step command may run: a minute at 60 Hz, enough to skip ahead, bounded so that one command
/// cannot stall the loop.
constexpr std::uint32_t kMaxStepTicks = 3600;
/// Largest gravity component an admin may set (m/s^2): about 100 g, past which the solver's steps are
/// meaningless.
constexpr float kMaxGravity = 1000.0f;
/// Time scale range: from a hundredth (slow motion) to 16 times real time.
constexpr float kMinTimeScale = 0.01f;
constexpr float kMaxTimeScale = 16.0f;
} // namespace

AdminResult Room::admin(const protocol::AdminCommandFields& command, double now)
{
    ++m_metrics.adminCommands;
    AdminResult result;
    result.ok = true;
    switch (command.op)
    {
    case wire::AdminOp::Status:
        break;
    case wire::AdminOp::Pause:
        m_paused = true;
        m_stepBudget = 0;
        break;
    case wire::AdminOp::Resume:
        m_paused = false;
        m_stepBudget = 0;
        break;
    case wire::AdminOp::Step:
        if (!m_paused || command.count < 1 || command.count > kMaxStepTicks)
        {
            return {false, m_paused ? "step needs a count of 1.." + std::to_string(kMaxStepTicks)
                                    : std::string("step needs the room paused first")};
        }
        m_stepBudget += command.count;
        break;
    case wire::AdminOp::Reset:
    case wire::AdminOp::LoadScene:
    {
        RoomConfig config = m_config;
        if (command.op == wire::AdminOp::LoadScene)
        {
            // Only a scene name (scene_file.h): a built-in one, or NAME (or NAME.json) for NAME.json in the
            // scene directory, never a path. What is refused is told in the same words whatever exists on
            // disk.
            std::string name = command.text;
            if (name.size() > 5 && name.ends_with(".json"))
            {
                name.resize(name.size() - 5);
            }
            if (!isSceneName(name))
            {
                spdlog::info("admin load refused: '{}' is not a scene name", printableExcerpt(command.text));
                return {false, "scene kept: " + unknownSceneMessage(command.text)};
            }
            config.scene = std::move(name);
            config.buildScene = nullptr;
        }
        // The file is read (a regular file of at most kMaxSceneFileBytes, opened without blocking: FIFOs and
        // devices are refused) and the world built here, on the thread that runs the room: in polytope-server
        // the room's own (room_host.h), so a load holds up this room's ticks but neither the network thread
        // nor other rooms; inline (tests, tools) the caller's. The hook for taking it off the room's thread
        // too: buildWorld below reads and builds into `fresh`; run it on a worker and continue from the swap
        // once the world is ready.
        physics::World fresh(m_world.config());
        fresh.setGravity(physics::WorldConfig{}.gravity); // scene files set their own
        std::string error;
        std::shared_ptr<const SceneDescription> file;
        if (!buildWorld(config, fresh, error, file))
        {
            if (command.op == wire::AdminOp::LoadScene && error == unknownSceneMessage(config.scene))
            {
                error = unknownSceneMessage(command.text); // as it was asked for, NAME.json or NAME
            }
            spdlog::info("admin {} refused: {}", wire::EnumNameAdminOp(command.op), error);
            return {false, "scene kept: " + error};
        }
        // The new scene's logic (a script may fail to load): made before anything changes.
        std::optional<LogicSpec> spec;
        std::unique_ptr<RoomLogic> logic = makeRoomLogic(config, file.get(), spec, error);
        if (!logic && !error.empty())
        {
            spdlog::info("admin {} refused: {}", wire::EnumNameAdminOp(command.op), error);
            return {false, "scene kept: " + printableExcerpt(error, 160)};
        }
        stopLogic();
        if (m_logicStopped)
        {
            m_paused = false; // the room was stopped by its old logic; the new scene starts afresh
        }
        m_config.scene = config.scene;
        m_config.buildScene = config.buildScene;
        // The new world goes in first, so that adoptSceneRules takes the scene's identity from it as built,
        // then resetWorld seats it again with the clients' bodies spawned by the new rules.
        std::swap(m_world, fresh);
        adoptSceneRules(std::move(file));
        physics::World built = std::move(m_world);
        resetWorld(std::move(built));
        startLogic(std::move(logic), std::move(spec));
        break;
    }
    case wire::AdminOp::ReloadLogic:
    {
        std::string error;
        if (!reloadLogic(error))
        {
            spdlog::info("admin reload refused: {}", error);
            return {false, "logic kept: " + printableExcerpt(error, 160)};
        }
        break;
    }
    case wire::AdminOp::SetGravity:
        for (const float g : command.vector)
        {
            if (!std::isfinite(g) || std::fabs(g) > kMaxGravity)
            {
                return {false, "gravity components must be within 1000 m/s^2"};
            }
        }
        m_world.setGravity({command.vector[0], command.vector[1], command.vector[2]});
        break;
    case wire::AdminOp::SetTimeScale:
        if (!(command.value >= kMinTimeScale && command.value <= kMaxTimeScale))
        {
            return {false, "time scale must be 0.01..16"};
        }
        m_timeScale = command.value;
        m_nextTickTime = std::min(m_nextTickTime, now + m_tickSeconds / m_timeScale);
        break;
    case wire::AdminOp::Kick:
        if (!kick(command.count))
        {
            return {false, "no client " + std::to_string(command.count) + " in room '" + m_config.room + "'"};
        }
        break;
    }
    result.message = "room '" + m_config.room + "' scene '" + m_config.scene + "' tick " +
                     std::to_string(m_tick) + ", " + std::to_string(m_world.bodyCount()) + " bodies, " +
                     std::to_string(m_members.size()) + " clients, " + (m_paused ? "paused" : "running") +
                     ", time scale " + std::to_string(m_timeScale).substr(0, 4);
    spdlog::info("admin {}: {}", wire::EnumNameAdminOp(command.op), result.message);
    return result;
}

// ---- Checkpoint state ----------------------------------------------------------------------------------
// A room's part of a checkpoint (little-endian, as the machine writes it):
//   magic u32 "ROOM", version u32 (2),
//   scene name: u32 length (at most kMaxSavedSceneNameBytes) and its bytes (config().scene),
//   scene digest: 32 bytes (m_sceneDigest, room_scene.cpp), tick rate u32 (Hz),
//   tick u64, spawn count u32, paused u8, time scale f64, World::saveState size u64, World::saveState.
// Version 1 had no scene identity: a checkpoint of one scene restored into a room running another, and the
// world then mixed bodies of one with the catalogue and rules of the other. Version 1 is refused.

namespace
{
constexpr std::uint32_t kRoomStateMagic = 0x4d4f4f52u; // "ROOM"
constexpr std::uint32_t kRoomStateVersion = 2;
/// A scene name or path longer than this is not one this server would have written (names are 64 bytes at
/// most, paths PATH_MAX).
constexpr std::uint32_t kMaxSavedSceneNameBytes = 4096;

template <class T> void put(std::vector<std::uint8_t>& out, const T& value)
{
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof(T));
}

template <class T> bool take(std::span<const std::uint8_t>& in, T& value)
{
    if (in.size() < sizeof(T))
    {
        return false;
    }
    std::memcpy(&value, in.data(), sizeof(T));
    in = in.subspan(sizeof(T));
    return true;
}

bool takeBytes(std::span<const std::uint8_t>& in, std::size_t count, std::span<const std::uint8_t>& out)
{
    if (in.size() < count)
    {
        return false;
    }
    out = in.subspan(0, count);
    in = in.subspan(count);
    return true;
}
} // namespace

void Room::saveState(std::vector<std::uint8_t>& out) const
{
    put(out, kRoomStateMagic);
    put(out, kRoomStateVersion);
    const std::string& scene = m_config.scene;
    const std::size_t nameBytes = std::min<std::size_t>(scene.size(), kMaxSavedSceneNameBytes);
    put(out, static_cast<std::uint32_t>(nameBytes));
    out.insert(out.end(), scene.begin(), scene.begin() + static_cast<std::ptrdiff_t>(nameBytes));
    out.insert(out.end(), m_sceneDigest.begin(), m_sceneDigest.end());
    put(out, static_cast<std::uint32_t>(m_config.tickRateHz));
    put(out, m_tick);
    put(out, m_spawnCount);
    put(out, static_cast<std::uint8_t>(m_paused ? 1 : 0));
    put(out, m_timeScale);
    std::vector<std::uint8_t> world;
    m_world.saveState(world);
    put(out, static_cast<std::uint64_t>(world.size()));
    out.insert(out.end(), world.begin(), world.end());
}

bool Room::restoreState(std::span<const std::uint8_t> data, std::string& error)
{
    std::uint32_t magic = 0, version = 0;
    if (!take(data, magic) || !take(data, version))
    {
        error = "room state truncated";
        return false;
    }
    if (magic != kRoomStateMagic)
    {
        error = "not a room state (bad magic)";
        return false;
    }
    if (version != kRoomStateVersion)
    {
        error = "room state version " + std::to_string(version) + ", this server reads version " +
                std::to_string(kRoomStateVersion) +
                (version < kRoomStateVersion
                     ? " only (older checkpoints do not say which scene they hold: start without --restore)"
                     : std::string(" only"));
        return false;
    }
    std::uint32_t nameBytes = 0, tickRateHz = 0, spawnCount = 0;
    std::span<const std::uint8_t> name, digest;
    std::uint64_t ticks = 0, worldBytes = 0;
    std::uint8_t paused = 0;
    double timeScale = 0.0;
    if (!take(data, nameBytes) || nameBytes > kMaxSavedSceneNameBytes || !takeBytes(data, nameBytes, name) ||
        !takeBytes(data, m_sceneDigest.size(), digest) || !take(data, tickRateHz) || !take(data, ticks) ||
        !take(data, spawnCount) || !take(data, paused) || !take(data, timeScale) || !take(data, worldBytes))
    {
        error = "room state truncated";
        return false;
    }
    const std::string savedScene(name.begin(), name.end());
    if (!std::equal(digest.begin(), digest.end(), m_sceneDigest.begin()))
    {
        error =
            "the checkpoint holds scene '" + printableExcerpt(savedScene, 256) + "', this room runs scene '" +
            printableExcerpt(m_config.scene, 256) + "'" +
            (savedScene == m_config.scene ? " as it is now (its definition changed since)" : std::string());
        return false;
    }
    if (tickRateHz != static_cast<std::uint32_t>(m_config.tickRateHz))
    {
        error = "the checkpoint ran at " + std::to_string(tickRateHz) + " Hz, this room at " +
                std::to_string(m_config.tickRateHz) + " Hz (--tick-hz)";
        return false;
    }
    if (paused > 1 || !(timeScale >= kMinTimeScale && timeScale <= kMaxTimeScale) ||
        worldBytes != data.size())
    {
        error = "room state corrupt (flags, time scale or size)";
        return false;
    }
    if (!m_members.empty())
    {
        error = "room has clients: restore before any connect";
        return false;
    }
    const physics::RestoreStatus status = m_world.restoreState(data);
    if (status != physics::RestoreStatus::Ok)
    {
        error = "world state refused (status " + std::to_string(static_cast<int>(status)) + ")";
        return false;
    }
    m_tick = ticks;
    m_spawnCount = spawnCount;
    m_paused = paused != 0;
    m_timeScale = timeScale;
    // No client is in the room (checked above), so no input is queued.
    m_replicator.forgetBodies(replications());
    m_replicator.refreshCatalogue(m_world, m_tick, replications());
    if (m_poseHistory)
    {
        m_poseHistory->clear(); // the poses of a world that is gone
        m_poseHistory->record(m_world, m_tick);
    }
    return true;
}

} // namespace polytope::server

// polytope-server: a room's admin commands (authenticated by the Server, admin.cpp) and its checkpoint state.
#include "polytope/server/room.h"

#include <spdlog/spdlog.h>

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
            if (command.text.empty())
            {
                return {false, "load needs a scene name or file"};
            }
            config.scene = command.text;
            config.buildScene = nullptr;
        }
        physics::World fresh(m_world.config());
        fresh.setGravity(physics::WorldConfig{}.gravity); // scene files set their own
        std::string error;
        std::shared_ptr<const SceneDescription> file;
        if (!buildWorld(config, fresh, error, file))
        {
            return {false, "scene kept: " + error};
        }
        m_config.scene = config.scene;
        m_config.buildScene = config.buildScene;
        adoptSceneRules(std::move(file));
        resetWorld(std::move(fresh));
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

namespace
{
constexpr std::uint32_t kRoomStateMagic = 0x4d4f4f52u; // "ROOM"
constexpr std::uint32_t kRoomStateVersion = 1;

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
} // namespace

void Room::saveState(std::vector<std::uint8_t>& out) const
{
    put(out, kRoomStateMagic);
    put(out, kRoomStateVersion);
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
    std::uint32_t magic = 0, version = 0, spawnCount = 0;
    std::uint64_t ticks = 0, worldBytes = 0;
    std::uint8_t paused = 0;
    double timeScale = 0.0;
    if (!take(data, magic) || !take(data, version) || !take(data, ticks) || !take(data, spawnCount) ||
        !take(data, paused) || !take(data, timeScale) || !take(data, worldBytes))
    {
        error = "room state truncated";
        return false;
    }
    if (magic != kRoomStateMagic || version != kRoomStateVersion)
    {
        error = "not a room state of this version";
        return false;
    }
    if (paused > 1 || !(timeScale >= 0.01 && timeScale <= 16.0) || worldBytes != data.size())
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
    return true;
}

} // namespace polytope::server

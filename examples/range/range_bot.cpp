#include "range_bot.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

namespace polytope::range
{
namespace
{
/// Ticks between two shots: range.lua refuses a shot less than reload_ticks (6) after the last.
constexpr std::uint64_t kShotIntervalTicks = 8;

/// The JSON of a game state, or a discarded value when it is not JSON (the bot trusts nothing it reads).
nlohmann::json parse(const client::GameState& state)
{
    return nlohmann::json::parse(state.data.begin(), state.data.end(), nullptr, false);
}
} // namespace

void registerRangeBot()
{
    client::registerBotBehaviour("range", [](std::size_t botIndex, std::uint32_t)
                                 { return std::make_unique<RangeBot>(botIndex); });
}

bool RangeBot::readStates(const client::Client& client)
{
    if (client.roomState().version != m_roomVersion)
    {
        m_roomVersion = client.roomState().version;
        m_targets.clear();
        const nlohmann::json room = parse(client.roomState());
        if (room.is_object() && room.contains("targets") && room["targets"].is_array())
        {
            for (const nlohmann::json& id : room["targets"])
            {
                if (id.is_number_unsigned())
                {
                    m_targets.push_back(static_cast<std::uint32_t>(id.get<std::uint64_t>() & 0xFFFFFFFFu));
                }
            }
        }
    }
    if (client.playerState().version != m_ownVersion)
    {
        m_ownVersion = client.playerState().version;
        const nlohmann::json own = parse(client.playerState());
        m_haveStation = own.is_object() && own.contains("station") && own["station"].is_array() &&
                        own["station"].size() == 3;
        for (std::size_t i = 0; m_haveStation && i < 3; ++i)
        {
            m_haveStation = own["station"][i].is_number();
            m_station[i] = m_haveStation ? own["station"][i].get<float>() : 0.0f;
        }
    }
    return m_haveStation && !m_targets.empty();
}

void RangeBot::update(const client::BotFrame& frame)
{
    if (!readStates(frame.client) || frame.inputTick == 0 ||
        frame.inputTick < m_lastShotTick + kShotIntervalTicks ||
        frame.sample.kind == client::SampleKind::Empty)
    {
        return;
    }
    const std::uint32_t target = m_targets[m_next % m_targets.size()];
    const client::SnapshotBody* body = frame.findBody(target);
    if (body == nullptr)
    {
        return;
    }
    const float shot[6] = {m_station[0],
                           m_station[1],
                           m_station[2],
                           body->position[0] - m_station[0],
                           body->position[1] - m_station[1],
                           body->position[2] - m_station[2]};
    std::uint8_t bytes[sizeof(shot)];
    std::memcpy(bytes, shot, sizeof(shot)); // little-endian floats, as range.lua unpacks them ("<ffffff")
    if (frame.sendGameMessage(bytes))
    {
        ++m_shots;
        ++m_next;
        m_lastShotTick = frame.inputTick;
    }
}

} // namespace polytope::range

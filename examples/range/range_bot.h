// The range example's bot behaviour ("range", client/bot_behaviour.h): a shooter at its station.
//
// The room state (JSON, examples/range/range.lua) lists the targets; the bot's own state gives its station.
// A few times a second the bot picks a target in turn, finds it among the bodies it shows (the interpolated
// picture of the targets, as a player would see them) and fires a hit-scan shot from its station straight at
// the target's centre as shown: a game message of six little-endian floats (origin, direction), sent with
// what the frame showed (its ViewTime), which the script casts as the bot saw it. A bot that aimed at the
// live targets instead would miss most shots at a round trip of 100 ms or more.
#pragma once

#include "polytope/client/bot_behaviour.h"

#include <cstdint>
#include <vector>

namespace polytope::range
{

/// Registers the "range" bot behaviour (client::registerBotBehaviour).
void registerRangeBot();

class RangeBot final : public client::BotBehaviour
{
  public:
    explicit RangeBot(std::size_t botIndex) : m_next(botIndex) {}
    void update(const client::BotFrame& frame) override;

    std::uint64_t shotsSent() const { return m_shots; }

  private:
    /// Reads the targets and the station from the states, when they changed; false until both arrived.
    bool readStates(const client::Client& client);

    std::uint32_t m_roomVersion = 0;
    std::uint32_t m_ownVersion = 0;
    std::vector<std::uint32_t> m_targets; ///< body slot indices
    float m_station[3] = {};
    bool m_haveStation = false;
    std::size_t m_next = 0; ///< the next target, in turn
    std::uint64_t m_lastShotTick = 0;
    std::uint64_t m_shots = 0;
};

} // namespace polytope::range

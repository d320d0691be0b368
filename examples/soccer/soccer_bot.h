// The soccer example's bot behaviour ("soccer", client/bot_behaviour.h): plays examples/soccer/ as a client
// sees it, with no physics of its own.
//
// From the room state it takes the ball's id, the pitch's size and its teammates' bodies; from its client
// state, its team. Each new input tick it looks at the shown bodies, moved ahead by the time until its input
// takes effect (the interpolation delay plus the input lead, at velocities estimated from the frames shown),
// and sets its sphere's velocity (a TargetVelocity input):
//   - the teammate nearest the ball attacks: it runs to a point behind the ball on the line from the
//     opponents' goal through the ball, going round the ball when it is on the wrong side, and once lined up
//     kicks (drives through the ball toward the goal at full speed). Against a wall, where behind the ball is
//     inside the wall, it pushes the ball along the wall instead (toward the goal's end, or into the mouth
//     along the slanted ends);
//   - the others wait ahead of the ball, to either side of its line to the goal, for a rebound: waiting
//     behind it they would mostly block their own team's shots (60 s of 3 v 3 scored 67 goals over eight
//     matches with them ahead, 7 with them behind);
//   - in a team of four or more, the one farthest from the ball keeps between the ball and its own goal.
#pragma once

#include "polytope/client/bot_behaviour.h"
#include "soccer_state.h"

#include <cstdint>
#include <optional>

namespace polytope::soccer
{

/// Registers the "soccer" bot behaviour (client::registerBotBehaviour).
void registerSoccerBot();

class SoccerBot final : public client::BotBehaviour
{
  public:
    void update(const client::BotFrame& frame) override;

    /// The states last decoded (for tests and tools); nullopt before they arrived.
    const std::optional<SoccerRoomState>& roomState() const { return m_room; }
    const std::optional<SoccerClientState>& clientState() const { return m_own; }

  private:
    struct Track
    {
        float x = 0.0f, z = 0.0f;   ///< shown position, m
        float vx = 0.0f, vz = 0.0f; ///< estimated velocity, m/s
        double time = -1.0;         ///< render time of the position; < 0: none yet
    };
    /// Updates a track from a shown position at render time `time`.
    static void follow(Track& track, float x, float z, double time);

    std::uint32_t m_roomVersion = 0;
    std::uint32_t m_ownVersion = 0;
    std::optional<SoccerRoomState> m_room;
    std::optional<SoccerClientState> m_own;
    std::uint32_t m_bodyId = 0;
    std::uint32_t m_bodyGeneration = 0;
    std::uint64_t m_lastInputTick = 0;
    Track m_ball;
    Track m_self;
};

} // namespace polytope::soccer

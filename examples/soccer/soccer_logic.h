// The soccer example's room logic (issue 20): two teams of player spheres push a ball into goals.
//
// The scene file (soccer.json) builds the pitch: the ground, walls along the side lines, ends slanting at 45
// degrees from the side lines to the goal posts (a ball pushed along them runs into the mouth, and no corner
// traps it), and a box behind each mouth. The logic adds, at start, the ball and a goal sensor in each box,
// placed from its settings (the scene's "logic": {"settings": {...}}; parseSoccerSettings says which), so
// that scene and logic agree on the pitch by construction of the file.
//
// Joining puts a client on the smaller team and spawns its sphere on its team's half. The ball entering a
// goal sensor scores for the other team, credited to the player who touched the ball last (a goal for its
// team, or an own goal); the ball then goes back to the centre and, with reset_players, everyone to their
// kick-off spots. A match lasts match_seconds (0: no end); when it is over the score stands for
// restart_seconds, then the next match starts from 0-0. A ball that stays within 2 m of one spot for
// idle_reset_seconds (left alone, or pinned in a scrum against a wall), or that leaves the pitch, is dropped
// at the centre.
//
// The room state (soccer_state.h) holds the score, the ball's id, the clock, the pitch's size and every
// player's body and team; each client's state holds its team, its goals, own goals and touches. Soccer needs
// no game messages: any that arrive are counted and ignored.
#pragma once

#include "polytope/server/room_logic.h"
#include "soccer_state.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::soccer
{

/// The logic's settings, with the scene file's names in brackets. Lengths in metres, times in seconds.
struct SoccerSettings
{
    float halfLengthMeters = 12.0f;   ///< [half_length] goal lines at x = +-this, in [2, 1000]
    float halfWidthMeters = 8.0f;     ///< [half_width] side lines at z = +-this, in [2, 1000]
    float goalHalfWidthMeters = 2.5f; ///< [goal_half_width] each mouth spans |z| < this, in (0, half_width]
    float goalDepthMeters = 2.0f;     ///< [goal_depth] from the goal line to the box's back, in [0.5, 100]
    float goalHeightMeters = 2.0f;    ///< [goal_height] the goal sensor's height, in [0.5, 100]
    /// [corner_inset] where the scene's corner walls face the pitch: (half_length - |x|) + (half_width - |z|)
    /// = this; 0: square corners. For the bots (the room state), in [0, half_width]
    float cornerInsetMeters = 0.0f;
    float ballRadiusMeters = 0.4f;  ///< [ball_radius] in [0.05, 5]
    float ballDensity = 150.0f;     ///< [ball_density] kg/m^3, in [1, 100000] (soccer.json's players: 600)
    double matchSeconds = 300.0;    ///< [match_seconds] 0: no end; at most 86400
    double restartSeconds = 5.0;    ///< [restart_seconds] the pause between matches, in [0, 3600]
    double idleResetSeconds = 10.0; ///< [idle_reset_seconds] 0: never, at most 3600
    bool resetPlayers = true;       ///< [reset_players] players go back to kick-off spots after a goal
};

/// Reads the settings' JSON object (unknown keys are refused: a typo should not pass silently). False with a
/// one-line error naming the key on a bad value.
bool parseSoccerSettings(std::string_view json, SoccerSettings& out, std::string& error);

/// The kick-off spot of the slot-th player (0-based) of `team`, on its own half.
physics::Vec3 soccerKickOffSpot(const SoccerSettings& settings, std::uint8_t team, std::size_t slot);

class SoccerLogic final : public server::RoomLogic
{
  public:
    explicit SoccerLogic(const SoccerSettings& settings) : m_settings(settings) {}

    std::uint32_t wantedEvents() const override
    {
        return server::kLogicSensorEvents | server::kLogicContactBegin;
    }
    void onStart(server::RoomContext& room) override;
    void onJoin(server::RoomContext& room, const server::ClientInfo& client) override;
    void onLeave(server::RoomContext& room, const server::ClientInfo& client,
                 server::LeaveReason reason) override;
    void onMessage(server::RoomContext& room, const server::GameMessage& message) override;
    void onTickEnd(server::RoomContext& room) override;
    void onSensorBegin(server::RoomContext& room, const physics::SensorBeginEvent& event) override;
    void onContactBegin(server::RoomContext& room, const physics::ContactBeginEvent& event) override;

    const SoccerRoomState& state() const { return m_state; }
    /// Game messages received and ignored (soccer defines none).
    std::uint64_t messagesIgnored() const { return m_messagesIgnored; }

  private:
    struct Member
    {
        std::uint32_t clientId = 0;
        std::size_t slot = 0; ///< within its team: which kick-off spot
        physics::BodyId body{};
        SoccerClientState state;
    };
    void join(server::RoomContext& room, const server::ClientInfo& client);
    Member* memberOfBody(physics::BodyId body);
    Member* memberOfClient(std::uint32_t clientId);
    void scoreGoal(server::RoomContext& room, std::uint8_t scoringTeam);
    void kickOff(server::RoomContext& room);
    void placeBall(server::RoomContext& room);
    void publishRoom(server::RoomContext& room);
    void publishClient(server::RoomContext& room, const Member& member);
    double secondsSince(const server::RoomContext& room, std::uint64_t tick) const;

    SoccerSettings m_settings;
    physics::BodyId m_ball{};
    physics::BodyId m_goals[kTeamCount]{}; ///< m_goals[t]: the goal team t defends
    std::vector<Member> m_members;
    SoccerRoomState m_state;
    std::uint64_t m_matchStartTick = 0;
    std::uint64_t m_finishedTick = 0;
    int m_pendingGoal = -1;        ///< the team the ball scored for during this tick's step; -1: none
    std::uint32_t m_lastTouch = 0; ///< the client that touched the ball last since the kick-off; 0: none
    physics::Vec3 m_ballAnchor{};  ///< where the ball was when it last moved far enough to count as in play
    std::uint64_t m_ballAnchorTick = 0;
    std::uint64_t m_messagesIgnored = 0;
    std::vector<std::uint8_t> m_bytes;
};

/// Registers "soccer" (a SoccerLogic with the spec's settings; a bad setting refuses the scene).
void registerSoccerLogic();

} // namespace polytope::soccer

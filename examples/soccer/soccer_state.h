// The soccer example's game states as plain structs, and their FlatBuffers encoding (soccer_state.fbs). The
// room logic encodes them; the bots and the tests decode what the clients received. Decoding checks the
// bytes with flatbuffers::Verifier first: a state is bytes from the network, never trusted.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace polytope::soccer
{

/// Teams: kTeamWest (0) defends the goal at x = -halfLength and attacks +x; kTeamEast (1) the reverse.
inline constexpr std::uint8_t kTeamWest = 0;
inline constexpr std::uint8_t kTeamEast = 1;
inline constexpr int kTeamCount = 2;

/// The direction (+1 or -1 along x) team `team` attacks.
inline float attackDirection(std::uint8_t team)
{
    return team == kTeamWest ? 1.0f : -1.0f;
}

struct SoccerPlayer
{
    std::uint32_t bodyId = 0;
    std::uint32_t bodyGeneration = 0;
    std::uint8_t team = kTeamWest;

    bool operator==(const SoccerPlayer&) const = default;
};

/// The room's public state (RoomState in the schema; see there for each field).
struct SoccerRoomState
{
    std::array<std::uint16_t, kTeamCount> score{};
    std::uint32_t ballId = 0;
    std::uint32_t ballGeneration = 0;
    std::uint32_t match = 1;
    std::uint32_t elapsedSeconds = 0;
    std::uint32_t matchSeconds = 0; ///< 0: no end
    bool finished = false;
    std::uint32_t goals = 0; ///< since the room started
    std::uint32_t hits = 0;  ///< player-ball contacts since the room started
    std::int8_t lastGoalTeam = -1;
    float halfLengthMeters = 12.0f;
    float halfWidthMeters = 8.0f;
    float goalHalfWidthMeters = 2.5f;
    float cornerInsetMeters = 0.0f; ///< 0: square corners
    std::vector<SoccerPlayer> players;

    bool operator==(const SoccerRoomState&) const = default;
};

/// One client's own state (ClientState in the schema).
struct SoccerClientState
{
    std::uint8_t team = kTeamWest;
    std::uint16_t goals = 0;
    std::uint16_t ownGoals = 0;
    std::uint32_t hits = 0;

    bool operator==(const SoccerClientState&) const = default;
};

/// Encodes into `out` (replaced).
void encodeSoccerRoomState(const SoccerRoomState& state, std::vector<std::uint8_t>& out);
void encodeSoccerClientState(const SoccerClientState& state, std::vector<std::uint8_t>& out);
/// Decodes; false (and `out` unspecified) when the bytes are not a valid table of the schema, or a field is
/// out of range (a team other than 0 or 1, a score vector not of two).
bool decodeSoccerRoomState(std::span<const std::uint8_t> bytes, SoccerRoomState& out);
bool decodeSoccerClientState(std::span<const std::uint8_t> bytes, SoccerClientState& out);

} // namespace polytope::soccer

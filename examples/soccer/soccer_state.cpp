#include "soccer_state.h"

#include "soccer/soccer_state_generated.h"

#include <cmath>

namespace polytope::soccer
{

namespace
{

template <class Table> bool verified(std::span<const std::uint8_t> bytes)
{
    if (bytes.empty())
    {
        return false;
    }
    flatbuffers::Verifier verifier(bytes.data(), bytes.size());
    return verifier.VerifyBuffer<Table>(nullptr);
}

bool validTeam(std::uint8_t team)
{
    return team == kTeamWest || team == kTeamEast;
}

} // namespace

void encodeSoccerRoomState(const SoccerRoomState& state, std::vector<std::uint8_t>& out)
{
    flatbuffers::FlatBufferBuilder builder(256);
    std::vector<wire::Player> players;
    players.reserve(state.players.size());
    for (const SoccerPlayer& player : state.players)
    {
        players.emplace_back(player.bodyId, player.bodyGeneration, player.team);
    }
    const auto score = builder.CreateVector(state.score.data(), state.score.size());
    const auto playerVector = builder.CreateVectorOfStructs(players);
    const auto table =
        wire::CreateRoomState(builder, score, state.ballId, state.ballGeneration, state.match,
                              state.elapsedSeconds, state.matchSeconds, state.finished, state.goals,
                              state.hits, state.lastGoalTeam, state.halfLengthMeters, state.halfWidthMeters,
                              state.goalHalfWidthMeters, state.cornerInsetMeters, playerVector);
    builder.Finish(table);
    out.assign(builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize());
}

void encodeSoccerClientState(const SoccerClientState& state, std::vector<std::uint8_t>& out)
{
    flatbuffers::FlatBufferBuilder builder(64);
    builder.Finish(wire::CreateClientState(builder, state.team, state.goals, state.ownGoals, state.hits));
    out.assign(builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize());
}

bool decodeSoccerRoomState(std::span<const std::uint8_t> bytes, SoccerRoomState& out)
{
    if (!verified<wire::RoomState>(bytes))
    {
        return false;
    }
    const auto* table = flatbuffers::GetRoot<wire::RoomState>(bytes.data());
    if (table->score() == nullptr || table->score()->size() != kTeamCount)
    {
        return false;
    }
    out.score = {table->score()->Get(0), table->score()->Get(1)};
    out.ballId = table->ball_id();
    out.ballGeneration = table->ball_generation();
    out.match = table->match();
    out.elapsedSeconds = table->elapsed_seconds();
    out.matchSeconds = table->match_seconds();
    out.finished = table->finished();
    out.goals = table->goals();
    out.hits = table->hits();
    out.lastGoalTeam = table->last_goal_team();
    out.halfLengthMeters = table->half_length();
    out.halfWidthMeters = table->half_width();
    out.goalHalfWidthMeters = table->goal_half_width();
    out.cornerInsetMeters = table->corner_inset();
    const bool pitchValid = std::isfinite(out.halfLengthMeters) && out.halfLengthMeters > 0.0f &&
                            std::isfinite(out.halfWidthMeters) && out.halfWidthMeters > 0.0f &&
                            std::isfinite(out.goalHalfWidthMeters) && out.goalHalfWidthMeters > 0.0f &&
                            std::isfinite(out.cornerInsetMeters) && out.cornerInsetMeters >= 0.0f;
    if (!pitchValid || out.lastGoalTeam < -1 || out.lastGoalTeam >= kTeamCount)
    {
        return false;
    }
    out.players.clear();
    if (const auto* players = table->players())
    {
        for (const wire::Player* player : *players)
        {
            if (!validTeam(player->team()))
            {
                return false;
            }
            out.players.push_back({player->body_id(), player->body_generation(), player->team()});
        }
    }
    return true;
}

bool decodeSoccerClientState(std::span<const std::uint8_t> bytes, SoccerClientState& out)
{
    if (!verified<wire::ClientState>(bytes))
    {
        return false;
    }
    const auto* table = flatbuffers::GetRoot<wire::ClientState>(bytes.data());
    out.team = table->team();
    out.goals = table->goals();
    out.ownGoals = table->own_goals();
    out.hits = table->hits();
    return validTeam(out.team);
}

} // namespace polytope::soccer

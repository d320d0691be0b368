#include "soccer_logic.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace polytope::soccer
{

namespace
{

/// The ball counts as in play again once it moved this far from where it last stood (idle_reset_seconds).
constexpr float kBallIdleMeters = 2.0f;
/// Beyond the walls by this much, or below the ground, the ball has left the pitch.
constexpr float kOffPitchMarginMeters = 3.0f;

/// A numeric setting: its name in the scene file, its range, and where it goes.
struct NumericSetting
{
    const char* name;
    double low;
    double high;
    void (*store)(SoccerSettings& settings, double value);
};

constexpr NumericSetting kNumericSettings[] = {
    {"half_length", 2.0, 1000.0,
     [](SoccerSettings& s, double v) { s.halfLengthMeters = static_cast<float>(v); }},
    {"half_width", 2.0, 1000.0,
     [](SoccerSettings& s, double v) { s.halfWidthMeters = static_cast<float>(v); }},
    {"goal_half_width", 0.1, 1000.0,
     [](SoccerSettings& s, double v) { s.goalHalfWidthMeters = static_cast<float>(v); }},
    {"goal_depth", 0.5, 100.0,
     [](SoccerSettings& s, double v) { s.goalDepthMeters = static_cast<float>(v); }},
    {"goal_height", 0.5, 100.0,
     [](SoccerSettings& s, double v) { s.goalHeightMeters = static_cast<float>(v); }},
    {"corner_inset", 0.0, 1000.0,
     [](SoccerSettings& s, double v) { s.cornerInsetMeters = static_cast<float>(v); }},
    {"ball_radius", 0.05, 5.0,
     [](SoccerSettings& s, double v) { s.ballRadiusMeters = static_cast<float>(v); }},
    {"ball_density", 1.0, 100000.0,
     [](SoccerSettings& s, double v) { s.ballDensity = static_cast<float>(v); }},
    {"match_seconds", 0.0, 86400.0, [](SoccerSettings& s, double v) { s.matchSeconds = v; }},
    {"restart_seconds", 0.0, 3600.0, [](SoccerSettings& s, double v) { s.restartSeconds = v; }},
    {"idle_reset_seconds", 0.0, 3600.0, [](SoccerSettings& s, double v) { s.idleResetSeconds = v; }},
};

/// Reads one key of the settings into `settings`; false with `error` set on an unknown key or a bad value.
bool readSetting(const std::string& key, const nlohmann::json& value, SoccerSettings& settings,
                 std::string& error)
{
    if (key == "reset_players")
    {
        if (!value.is_boolean())
        {
            error = "soccer settings: reset_players must be true or false";
            return false;
        }
        settings.resetPlayers = value.get<bool>();
        return true;
    }
    for (const NumericSetting& setting : kNumericSettings)
    {
        if (key != setting.name)
        {
            continue;
        }
        const double number = value.is_number() ? value.get<double>() : std::nan("");
        if (!std::isfinite(number) || number < setting.low || number > setting.high)
        {
            error = "soccer settings: " + key + " must be a number in [" + std::to_string(setting.low) +
                    ", " + std::to_string(setting.high) + "]";
            return false;
        }
        setting.store(settings, number);
        return true;
    }
    error = "soccer settings: unknown key " + key;
    return false;
}

} // namespace

bool parseSoccerSettings(std::string_view json, SoccerSettings& out, std::string& error)
{
    const nlohmann::json root = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (!root.is_object())
    {
        error = "soccer settings: not a JSON object";
        return false;
    }
    SoccerSettings settings;
    for (const auto& [key, value] : root.items())
    {
        if (!readSetting(key, value, settings, error))
        {
            return false;
        }
    }
    if (settings.goalHalfWidthMeters > settings.halfWidthMeters)
    {
        error = "soccer settings: goal_half_width must not exceed half_width";
        return false;
    }
    if (settings.cornerInsetMeters > settings.halfWidthMeters)
    {
        error = "soccer settings: corner_inset must not exceed half_width";
        return false;
    }
    if (2.0f * settings.ballRadiusMeters >= settings.goalHalfWidthMeters)
    {
        error =
            "soccer settings: the ball must fit through the goal mouth (ball_radius < goal_half_width / 2)";
        return false;
    }
    out = settings;
    return true;
}

physics::Vec3 soccerKickOffSpot(const SoccerSettings& settings, std::uint8_t team, std::size_t slot)
{
    // The first player halfway between the centre and its goal, the others on a widening zigzag behind it.
    const float row = static_cast<float>((slot + 1) / 2);
    const float side = slot % 2 == 1 ? 1.0f : -1.0f;
    const float depth =
        std::min(0.5f * settings.halfLengthMeters + 1.5f * row, settings.halfLengthMeters - 1.0f);
    const float lateral = std::min(2.5f * row, settings.halfWidthMeters - 1.0f);
    return {-attackDirection(team) * depth, 0.5f, slot == 0 ? 0.0f : side * lateral};
}

void SoccerLogic::onStart(server::RoomContext& room)
{
    SoccerSettings settings;
    std::string error;
    if (parseSoccerSettings(room.settings(), settings, error))
    {
        m_settings = settings;
    }
    else
    {
        room.log(error + "; the defaults are used"); // RoomConfig::logic bypasses the factory's check
    }
    physics::World& world = room.world();
    const SoccerSettings& s = m_settings;

    physics::BodyDesc ball;
    ball.shape = physics::Shape::makeSphere(s.ballRadiusMeters);
    ball.density = s.ballDensity;
    ball.friction = 0.4f;
    ball.restitution = 0.6f;
    ball.linearDamping = 0.3f; // a rolling ball comes to rest within seconds
    ball.angularDamping = 0.5f;
    ball.allowSleep = false; // a sleeping ball would not notice a goal sensor after a teleport
    ball.transform.p = {0.0f, s.ballRadiusMeters, 0.0f};
    m_ball = world.createBody(ball).id;

    // Each goal sensor fills the box behind its mouth from one ball diameter past the line: the ball is in
    // when its centre is a radius past the line, all of it over.
    const float inner = s.halfLengthMeters + 2.0f * s.ballRadiusMeters;
    const float outer = s.halfLengthMeters + s.goalDepthMeters;
    for (std::uint8_t team = 0; team < kTeamCount; ++team)
    {
        physics::BodyDesc goal;
        goal.type = physics::BodyType::Static;
        goal.isSensor = true;
        goal.shape = physics::Shape::makeBox(
            {std::max(0.05f, 0.5f * (outer - inner)), 0.5f * s.goalHeightMeters, s.goalHalfWidthMeters});
        goal.transform.p = {-attackDirection(team) * 0.5f * (inner + outer), 0.5f * s.goalHeightMeters, 0.0f};
        m_goals[team] = world.createBody(goal).id;
    }
    if (!world.isValid(m_ball) || !world.isValid(m_goals[0]) || !world.isValid(m_goals[1]))
    {
        room.log("soccer: the world refused the ball or a goal");
    }

    m_state = {};
    m_state.ballId = m_ball.index;
    m_state.ballGeneration = m_ball.generation;
    m_state.matchSeconds = static_cast<std::uint32_t>(std::lround(s.matchSeconds));
    m_state.halfLengthMeters = s.halfLengthMeters;
    m_state.halfWidthMeters = s.halfWidthMeters;
    m_state.goalHalfWidthMeters = s.goalHalfWidthMeters;
    m_state.cornerInsetMeters = s.cornerInsetMeters;
    m_matchStartTick = room.tick();
    m_pendingGoal = -1;
    m_lastTouch = 0;
    m_ballAnchor = ball.transform.p;
    m_ballAnchorTick = room.tick();

    // A new world (start, admin reset or load): the clients already here play on in it.
    m_members.clear();
    for (std::size_t i = 0; i < room.clientCount(); ++i)
    {
        join(room, room.clientAt(i));
    }
    publishRoom(room);
}

void SoccerLogic::onJoin(server::RoomContext& room, const server::ClientInfo& client)
{
    join(room, client);
    publishRoom(room);
}

void SoccerLogic::join(server::RoomContext& room, const server::ClientInfo& client)
{
    if (client.spectator || memberOfClient(client.clientId) != nullptr)
    {
        return; // spectators watch: no team, no body
    }
    std::size_t counts[kTeamCount] = {};
    for (const Member& member : m_members)
    {
        ++counts[member.state.team];
    }
    Member member;
    member.clientId = client.clientId;
    member.state.team = counts[kTeamEast] < counts[kTeamWest] ? kTeamEast : kTeamWest;
    // The lowest kick-off spot of the team no one holds.
    const auto taken = [&](std::size_t slot)
    {
        return std::any_of(m_members.begin(), m_members.end(),
                           [&](const Member& other)
                           { return other.state.team == member.state.team && other.slot == slot; });
    };
    while (taken(member.slot))
    {
        ++member.slot;
    }
    const physics::Vec3 spot = soccerKickOffSpot(m_settings, member.state.team, member.slot);
    member.body = room.spawnPlayer(client.clientId, &spot);
    if (member.body.isNull())
    {
        room.log("soccer: no player body for a client (the world or the client is full)");
    }
    m_members.push_back(member);
    publishClient(room, member);
}

void SoccerLogic::onLeave(server::RoomContext& room, const server::ClientInfo& client, server::LeaveReason)
{
    const auto it = std::find_if(m_members.begin(), m_members.end(),
                                 [&](const Member& m) { return m.clientId == client.clientId; });
    if (it == m_members.end())
    {
        return;
    }
    m_members.erase(it);
    m_lastTouch = m_lastTouch == client.clientId ? 0 : m_lastTouch;
    publishRoom(room);
}

void SoccerLogic::onMessage(server::RoomContext&, const server::GameMessage&)
{
    ++m_messagesIgnored; // soccer defines no message; whatever a client sends changes nothing
}

void SoccerLogic::onSensorBegin(server::RoomContext&, const physics::SensorBeginEvent& event)
{
    if (event.visitor != m_ball || m_state.finished || m_pendingGoal >= 0)
    {
        return;
    }
    for (std::uint8_t team = 0; team < kTeamCount; ++team)
    {
        if (event.sensor == m_goals[team])
        {
            m_pendingGoal = 1 - team; // into the goal team defends: a goal for the other team
        }
    }
}

void SoccerLogic::onContactBegin(server::RoomContext& room, const physics::ContactBeginEvent& event)
{
    const physics::BodyId other = event.bodyA == m_ball   ? event.bodyB
                                  : event.bodyB == m_ball ? event.bodyA
                                                          : m_ball;
    Member* member = other == m_ball ? nullptr : memberOfBody(other);
    if (member == nullptr)
    {
        return;
    }
    m_lastTouch = member->clientId;
    ++member->state.hits;
    ++m_state.hits;
    publishClient(room, *member);
}

void SoccerLogic::onTickEnd(server::RoomContext& room)
{
    physics::World& world = room.world();
    if (m_pendingGoal >= 0)
    {
        scoreGoal(room, static_cast<std::uint8_t>(m_pendingGoal));
        m_pendingGoal = -1;
    }

    physics::BodyState ball;
    if (world.getBody(m_ball, ball))
    {
        const physics::Vec3 p = ball.transform.p;
        const bool offPitch = std::fabs(p.x) > m_settings.halfLengthMeters + m_settings.goalDepthMeters +
                                                   kOffPitchMarginMeters ||
                              std::fabs(p.z) > m_settings.halfWidthMeters + kOffPitchMarginMeters ||
                              p.y < -1.0f;
        if (physics::length(p - m_ballAnchor) > kBallIdleMeters)
        {
            m_ballAnchor = p;
            m_ballAnchorTick = room.tick();
        }
        const bool idle = m_settings.idleResetSeconds > 0.0 &&
                          secondsSince(room, m_ballAnchorTick) >= m_settings.idleResetSeconds;
        if (offPitch || idle)
        {
            placeBall(room);
        }
    }

    const double elapsed = secondsSince(room, m_matchStartTick);
    if (!m_state.finished && m_settings.matchSeconds > 0.0 && elapsed >= m_settings.matchSeconds)
    {
        m_state.finished = true;
        m_finishedTick = room.tick();
    }
    else if (m_state.finished && secondsSince(room, m_finishedTick) >= m_settings.restartSeconds)
    {
        m_state.finished = false;
        m_state.score = {};
        ++m_state.match;
        m_matchStartTick = room.tick();
        kickOff(room);
    }
    const double shown = m_state.finished ? m_settings.matchSeconds : secondsSince(room, m_matchStartTick);
    m_state.elapsedSeconds = static_cast<std::uint32_t>(shown);
    publishRoom(room); // sends only when the bytes changed: a goal, a touch, a new second
}

void SoccerLogic::scoreGoal(server::RoomContext& room, std::uint8_t scoringTeam)
{
    ++m_state.score[scoringTeam];
    ++m_state.goals;
    m_state.lastGoalTeam = static_cast<std::int8_t>(scoringTeam);
    if (Member* scorer = memberOfClient(m_lastTouch))
    {
        ++(scorer->state.team == scoringTeam ? scorer->state.goals : scorer->state.ownGoals);
        publishClient(room, *scorer);
    }
    room.log("soccer: goal; " + std::to_string(m_state.score[0]) + " - " + std::to_string(m_state.score[1]));
    kickOff(room);
}

void SoccerLogic::kickOff(server::RoomContext& room)
{
    placeBall(room);
    if (!m_settings.resetPlayers)
    {
        return;
    }
    physics::World& world = room.world();
    for (const Member& member : m_members)
    {
        physics::Transform transform;
        transform.p = soccerKickOffSpot(m_settings, member.state.team, member.slot);
        if (world.setTransform(member.body, transform) == physics::WorldStatus::Ok)
        {
            world.setVelocity(member.body, {}, {});
        }
    }
}

void SoccerLogic::placeBall(server::RoomContext& room)
{
    physics::Transform centre;
    centre.p = {0.0f, m_settings.ballRadiusMeters, 0.0f};
    room.world().setTransform(m_ball, centre);
    room.world().setVelocity(m_ball, {}, {});
    m_lastTouch = 0;
    m_ballAnchor = centre.p;
    m_ballAnchorTick = room.tick();
}

void SoccerLogic::publishRoom(server::RoomContext& room)
{
    m_state.players.clear();
    for (const Member& member : m_members)
    {
        m_state.players.push_back({member.body.index, member.body.generation, member.state.team});
    }
    encodeSoccerRoomState(m_state, m_bytes);
    if (!room.setRoomState(m_bytes))
    {
        room.log("soccer: the room state is over the size limit");
    }
}

void SoccerLogic::publishClient(server::RoomContext& room, const Member& member)
{
    encodeSoccerClientState(member.state, m_bytes);
    room.setClientState(member.clientId, m_bytes);
}

SoccerLogic::Member* SoccerLogic::memberOfBody(physics::BodyId body)
{
    const auto it =
        std::find_if(m_members.begin(), m_members.end(), [&](const Member& m) { return m.body == body; });
    return it == m_members.end() ? nullptr : &*it;
}

SoccerLogic::Member* SoccerLogic::memberOfClient(std::uint32_t clientId)
{
    if (clientId == 0)
    {
        return nullptr;
    }
    const auto it = std::find_if(m_members.begin(), m_members.end(),
                                 [&](const Member& m) { return m.clientId == clientId; });
    return it == m_members.end() ? nullptr : &*it;
}

double SoccerLogic::secondsSince(const server::RoomContext& room, std::uint64_t tick) const
{
    return room.tick() >= tick ? static_cast<double>(room.tick() - tick) * room.tickSeconds() : 0.0;
}

void registerSoccerLogic()
{
    server::registerLogic(
        "soccer",
        [](const server::LogicSpec& spec, std::string& error) -> std::unique_ptr<server::RoomLogic>
        {
            SoccerSettings settings;
            if (!parseSoccerSettings(spec.settingsJson, settings, error))
            {
                return nullptr;
            }
            return std::make_unique<SoccerLogic>(settings);
        });
}

} // namespace polytope::soccer

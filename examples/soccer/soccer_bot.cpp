#include "soccer_bot.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace polytope::soccer
{

namespace
{

constexpr float kPlayerRadiusMeters = 0.5f;    ///< soccer.json's player template
constexpr float kTopSpeed = 6.0f;              ///< m/s
constexpr float kKickSpeed = 9.0f;             ///< m/s: through the ball when lined up and close
constexpr float kKickRangeMeters = 1.0f;       ///< a kick starts this far from touching the ball
constexpr float kSupportDistanceMeters = 3.0f; ///< the others wait this far behind the ball
constexpr float kSupportSideMeters = 3.0f;     ///< and this far to one side of its line
constexpr float kArrivalGain = 2.5f;           ///< 1/s: speed toward a waypoint per metre still to go
constexpr float kMaxTrackedSpeed = 25.0f;      ///< m/s: faster is a teleport (a kick-off), not motion
constexpr double kMaxLookaheadSeconds = 0.5;
constexpr float kDownwardSpeed = -1.0f; ///< m/s: keeps the sphere pressed to the ground while steered

struct Point
{
    float x = 0.0f, z = 0.0f;
};
Point operator+(Point a, Point b)
{
    return {a.x + b.x, a.z + b.z};
}
Point operator-(Point a, Point b)
{
    return {a.x - b.x, a.z - b.z};
}
Point operator*(Point a, float s)
{
    return {a.x * s, a.z * s};
}
float dot(Point a, Point b)
{
    return a.x * b.x + a.z * b.z;
}
float cross(Point a, Point b)
{
    return a.x * b.z - a.z * b.x;
}
float length(Point a)
{
    return std::sqrt(dot(a, a));
}
Point unit(Point a, Point fallback)
{
    const float l = length(a);
    return l > 1e-4f ? a * (1.0f / l) : fallback;
}

} // namespace

void SoccerBot::follow(Track& track, float x, float z, double time)
{
    if (track.time >= 0.0 && time > track.time)
    {
        const float dt = static_cast<float>(time - track.time);
        const float vx = (x - track.x) / dt, vz = (z - track.z) / dt;
        if (std::sqrt(vx * vx + vz * vz) > kMaxTrackedSpeed)
        {
            track.vx = track.vz = 0.0f;
        }
        else
        {
            // Light smoothing: interpolated frames are piecewise linear, so this mostly hides the corners.
            track.vx = 0.5f * track.vx + 0.5f * vx;
            track.vz = 0.5f * track.vz + 0.5f * vz;
        }
    }
    if (track.time < 0.0 || time > track.time)
    {
        track.x = x;
        track.z = z;
        track.time = time;
    }
}

void SoccerBot::update(const client::BotFrame& frame)
{
    client::Client& client = frame.client;
    if (!client.isConnected() || frame.inputTick == 0 || frame.inputTick <= m_lastInputTick)
    {
        return;
    }
    if (client.roomState().version != m_roomVersion)
    {
        m_roomVersion = client.roomState().version;
        SoccerRoomState decoded;
        if (decodeSoccerRoomState(client.roomState().data, decoded))
        {
            m_room = std::move(decoded);
        }
    }
    if (client.playerState().version != m_ownVersion)
    {
        m_ownVersion = client.playerState().version;
        SoccerClientState decoded;
        if (decodeSoccerClientState(client.playerState().data, decoded))
        {
            m_own = decoded;
        }
    }
    if (!m_room || !m_own)
    {
        return;
    }
    if (m_bodyId == 0 || client.catalogue().count(m_bodyId) == 0)
    {
        const std::vector<protocol::CatalogueEntry> owned = client.ownedBodies();
        if (owned.empty())
        {
            return;
        }
        m_bodyId = owned.front().id;
        m_bodyGeneration = owned.front().generation;
    }
    const client::SnapshotBody* self = frame.findBody(m_bodyId);
    const client::SnapshotBody* ball = frame.findBody(m_room->ballId);
    if (self == nullptr || ball == nullptr || ball->generation != m_room->ballGeneration)
    {
        return;
    }
    const double renderTime = frame.sample.renderTime;
    follow(m_ball, ball->position[0], ball->position[2], renderTime);
    follow(m_self, self->position[0], self->position[2], renderTime);

    // Where things will be when this input is applied: the frame shows the past by the interpolation delay,
    // and the input is for a tick a lead ahead of the newest snapshot.
    const double leadSeconds =
        client.tickRateHz() > 0
            ? static_cast<double>(frame.inputTick - frame.newestTick) / client.tickRateHz()
            : 0.0;
    const auto ahead =
        static_cast<float>(std::min(kMaxLookaheadSeconds, frame.sample.delaySeconds + leadSeconds));
    const Point b = Point{m_ball.x, m_ball.z} + Point{m_ball.vx, m_ball.vz} * ahead;
    const Point m = Point{m_self.x, m_self.z} + Point{m_self.vx, m_self.vz} * ahead;

    const SoccerRoomState& room = *m_room;
    const std::uint8_t team = m_own->team;
    const float direction = attackDirection(team);
    const float ballRadius = std::max(0.05f, ball->extent[0]);
    const Point goal{direction * (room.halfLengthMeters + 1.0f), 0.0f};
    const Point ownGoal{-direction * room.halfLengthMeters, 0.0f};

    // My rank among my team by distance to the ball (0: nearest), from the shown bodies.
    int rank = 0;
    int teamSize = 0;
    const float myDistance = length(b - m);
    for (const SoccerPlayer& player : room.players)
    {
        if (player.team != team)
        {
            continue;
        }
        ++teamSize;
        const client::SnapshotBody* mate = frame.findBody(player.bodyId);
        if (mate == nullptr || player.bodyId == m_bodyId)
        {
            continue;
        }
        const float d = length(b - Point{mate->position[0], mate->position[2]});
        rank += d < myDistance || (d == myDistance && player.bodyId < m_bodyId) ? 1 : 0;
    }
    const bool ballNearOwnGoal = std::fabs(b.x - ownGoal.x) < 2.0f * room.halfLengthMeters / 3.0f;
    const bool defender = teamSize >= 4 && rank == teamSize - 1 && !ballNearOwnGoal;

    Point target;
    float speed = kTopSpeed;
    bool distanceGain = true; ///< slow down near the target (not when kicking)
    if (defender)
    {
        target = ownGoal + (b - ownGoal) * 0.3f;
    }
    else
    {
        const float contact = ballRadius + kPlayerRadiusMeters;
        Point toGoal = unit(goal - b, {direction, 0.0f});
        // A ball against a wall cannot be reached from behind when behind is inside the wall: push it along
        // the wall instead, toward the goal's end along a side wall, toward the mouth along an end wall.
        // Twice: pushed along one wall, the point behind may fall into the next (a corner).
        for (int pass = 0; pass < 2; ++pass)
        {
            const Point behind = b - toGoal * (contact + 0.3f);
            const float sx = b.x >= 0.0f ? 1.0f : -1.0f, sz = b.z >= 0.0f ? 1.0f : -1.0f;
            const float inset =
                (room.halfLengthMeters - std::fabs(behind.x)) + (room.halfWidthMeters - std::fabs(behind.z));
            if (room.cornerInsetMeters > 0.0f && inset < room.cornerInsetMeters + 1.41f * kPlayerRadiusMeters)
            {
                // Along the corner wall's face, the way that is nearer the goal's way.
                const Point along{sx * 0.7071f, -sz * 0.7071f};
                toGoal = dot(along, toGoal) >= 0.0f ? along : along * -1.0f;
            }
            else if (std::fabs(behind.z) > room.halfWidthMeters - kPlayerRadiusMeters)
            {
                toGoal = {direction, 0.0f};
            }
            else if (std::fabs(behind.x) > room.halfLengthMeters - kPlayerRadiusMeters &&
                     std::fabs(b.z) > room.goalHalfWidthMeters)
            {
                toGoal = {0.0f, -sz};
            }
        }
        const Point side{-toGoal.z, toGoal.x};
        const Point relative = m - b;
        const float along = dot(relative, toGoal); // < 0: behind the ball
        const float lateral = cross(toGoal, relative);
        if (along < -0.5f * contact && std::fabs(lateral) < 0.5f * contact)
        {
            // Lined up: through the ball toward the goal, and a kick at full speed once close.
            target = b + toGoal * 3.0f;
            if (-along < contact + kKickRangeMeters)
            {
                speed = kKickSpeed;
                distanceGain = false;
            }
        }
        else if (along < 0.0f)
        {
            target = b - toGoal * (contact + 0.3f); // behind, off the line: to the point behind the ball
        }
        else
        {
            // On the wrong side: round the ball on the side it is already on, well clear of it.
            const float s = lateral >= 0.0f ? 1.0f : -1.0f;
            target = b + side * (s * (contact + 0.8f)) - toGoal * (contact + 0.5f);
        }
        if (rank > 0 && length(relative) > 2.0f * contact)
        {
            // The others keep out of the scrum: each waits behind the ball, to its own side, for it to
            // come loose.
            const float s = rank % 2 == 1 ? 1.0f : -1.0f;
            target = b + toGoal * kSupportDistanceMeters + side * (kSupportSideMeters * s);
            distanceGain = true;
            speed = kTopSpeed;
        }
    }
    const float limitX = room.halfLengthMeters - kPlayerRadiusMeters;
    const float limitZ = room.halfWidthMeters - kPlayerRadiusMeters;
    target.x = std::clamp(target.x, -limitX, limitX);
    target.z = std::clamp(target.z, -limitZ, limitZ);
    const Point toTarget = target - m;
    if (distanceGain)
    {
        speed = std::min(speed, kArrivalGain * length(toTarget) + 0.5f);
    }
    const Point velocity = unit(toTarget, {}) * speed;

    protocol::InputCommand input;
    input.tick = frame.inputTick;
    input.bodyId = m_bodyId;
    input.bodyGeneration = m_bodyGeneration;
    input.kind = protocol::wire::InputKind::TargetVelocity;
    input.vector = {velocity.x, kDownwardSpeed, velocity.z};
    frame.sendInput(input);
    m_lastInputTick = frame.inputTick;
}

void registerSoccerBot()
{
    // Deterministic and the same for every bot: the roles come from the game, not from the bot's number.
    client::registerBotBehaviour("soccer",
                                 [](std::size_t, std::uint32_t) { return std::make_unique<SoccerBot>(); });
}

} // namespace polytope::soccer

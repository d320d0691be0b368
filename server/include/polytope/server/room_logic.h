// polytope-server: a game's rules inside a room (docs/GAME_RULES.md).
//
// A room runs the physics; a RoomLogic runs the game: who may join, what a button or a shot does, when a
// goal scores. The room calls the logic's hooks on its own thread, one at a time, never during a step, and
// hands each hook a RoomContext: what the logic may read and do (the World itself, the clients, the room's
// public state and each client's private state, kicks, lag-compensated queries).
//
// One tick of a room with logic:
//   1. the clients' inputs queued for the tick are applied (room_inputs.cpp);
//   2. onMessage for each game message queued for the tick, in order of arrival;
//   3. onTickBegin;
//   4. World::step;
//   5. the step's events, each kind in the engine's deterministic order: onSensorBegin, onSensorEnd,
//      onContactBegin, onContactEnd, onContactHit, onJointEvent (only the kinds wantedEvents() names);
//   6. onTickEnd; then the room replicates the tick (snapshots, and any state the logic changed).
// Joins and leaves happen between ticks, when their datagrams arrive: onJoinAttempt may refuse a client
// (its ConnectDenied carries the reason), onJoin runs once it is in (spawn its bodies here), onLeave as it
// goes (its owned bodies are removed after onLeave unless the room keeps them).
//
// Nothing a client sends is trusted: a message's bytes are whatever the client chose, within the room's size
// and rate limits. The logic validates every field it reads.
//
// Errors: a hook that throws is caught by the room, counted (RoomMetrics::logicErrors), logged at most once
// a second, and the room goes on (or stops, telling its clients, by RoomConfig::stopOnLogicError). The World
// must be left consistent: make changes through its API, which refuses bad arguments with a status.
#pragma once

#include "polytope/physics/joints.h"
#include "polytope/physics/world.h"
#include "polytope/protocol/constants.h"
#include "polytope/server/logic_spec.h"
#include "polytope/server/pose_history.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace polytope::server
{

/// The largest room state and per-client state (bytes). Each travels whole in one datagram.
using protocol::kMaxGameStateBytes;
/// The largest game message a client may send (bytes).
using protocol::kMaxGameMessageBytes;
/// The longest refusal or kick reason sent to a client (bytes; longer ones are cut).
using protocol::kMaxLogicReasonBytes;

/// A client as the logic sees it.
struct ClientInfo
{
    std::uint32_t clientId = 0;
    std::string_view name; ///< as the client gave it (untrusted text, at most 64 bytes)
    bool spectator = false;
};

/// onJoinAttempt's verdict.
struct JoinDecision
{
    bool accept = true;
    std::string reason; ///< a refusal's reason, told to the client (at most kMaxLogicReasonBytes)

    static JoinDecision allow() { return {}; }
    static JoinDecision refuse(std::string why) { return {false, std::move(why)}; }
};

/// A game message from a client, delivered at the tick it was sent for (or the next one, if late).
struct GameMessage
{
    std::uint32_t clientId = 0;
    std::uint32_t sequence = 0;         ///< the client's numbering, from 1; each is delivered once
    std::uint64_t tick = 0;             ///< the tick about to be stepped
    ViewTime view;                      ///< what the client showed when it sent it (lag compensation)
    std::span<const std::uint8_t> data; ///< 1..kMaxGameMessageBytes bytes, valid during the hook only
};

/// Why a client left.
enum class LeaveReason : std::uint8_t
{
    Disconnected = 0, ///< it said goodbye
    TimedOut,
    Kicked,   ///< by the logic or an admin
    Shutdown, ///< the server or the room stopped
};

/// Bits of RoomLogic::wantedEvents(): the step's events the room hands to the logic.
inline constexpr std::uint32_t kLogicSensorEvents = 1u << 0;
inline constexpr std::uint32_t kLogicContactBegin = 1u << 1;
inline constexpr std::uint32_t kLogicContactEnd = 1u << 2;
inline constexpr std::uint32_t kLogicContactHit = 1u << 3;
inline constexpr std::uint32_t kLogicJointEvents = 1u << 4;

/// What a hook may read and do. Valid only during the hook it was passed to.
class RoomContext
{
  public:
    virtual ~RoomContext() = default;

    // ---- The room
    virtual std::string_view roomName() const = 0;
    /// The tick being made: before the step (onMessage, onTickBegin) the tick about to be stepped; after
    /// it (events, onTickEnd) the tick just stepped. Between ticks (joins, leaves), the last tick stepped.
    virtual std::uint64_t tick() const = 0;
    virtual double tickSeconds() const = 0;
    /// The room's world: create, move, push and remove bodies, run queries. Never step it.
    virtual physics::World& world() = 0;
    /// The logic's settings from the scene file ("logic": {"settings": {...}}) as JSON text; "{}" if none.
    virtual std::string_view settings() const = 0;

    // ---- Clients
    virtual std::size_t clientCount() const = 0;
    /// The index-th client (0 <= index < clientCount()), in a stable order (by address).
    virtual ClientInfo clientAt(std::size_t index) const = 0;
    /// The client of that id, or one with clientId 0 when there is none.
    virtual ClientInfo client(std::uint32_t clientId) const = 0;
    /// The bodies the client owns (it may send them inputs; its snapshots mark them owned).
    virtual std::span<const physics::BodyId> ownedBodies(std::uint32_t clientId) const = 0;
    /// Gives the client a body (it must exist and be owned by no client). False when the client or body is
    /// unknown, the body is owned already, or the client owns RoomConfig::maxBodiesPerClient bodies.
    virtual bool giveBody(std::uint32_t clientId, physics::BodyId body) = 0;
    /// Takes a body from its owner (the body stays in the world). False when no client owns it.
    virtual bool takeBody(physics::BodyId body) = 0;
    /// Creates the scene's player body for the client at its next spawn point (or `at`) and gives it to the
    /// client; the null id when the scene has no player template or the world or client is full.
    virtual physics::BodyId spawnPlayer(std::uint32_t clientId, const physics::Vec3* at = nullptr) = 0;
    /// Disconnects the client after the hook returns, telling it `reason`. False for an unknown client.
    virtual bool kick(std::uint32_t clientId, std::string_view reason) = 0;

    // ---- State the clients see (reliable, delta-free, each whole in one datagram)
    /// The room's public state, sent to every client (a game's own FlatBuffers table, or any bytes). False,
    /// changing nothing, when larger than kMaxGameStateBytes. Setting the same bytes again sends nothing.
    virtual bool setRoomState(std::span<const std::uint8_t> state) = 0;
    /// One client's private state, sent to that client only. False for an unknown client or too many bytes.
    virtual bool setClientState(std::uint32_t clientId, std::span<const std::uint8_t> state) = 0;
    virtual std::span<const std::uint8_t> roomState() const = 0;
    virtual std::span<const std::uint8_t> clientState(std::uint32_t clientId) const = 0;

    // ---- Lag compensation (pose_history.h): queries against the moving bodies where a client saw them
    /// The closest hit of `ray` with the dynamic and kinematic bodies at the poses `view` showed (the static
    /// world as it is now), from the room's pose history (RoomConfig::lagCompensationSeconds). False on a
    /// miss. `status` says whether the view was held (Exact), clamped to the history, invalid, or whether
    /// the room keeps no history (NoHistory: then the live world was queried).
    virtual bool castRayAsSeen(const ViewTime& view, const physics::RayCastInput& ray,
                               const physics::QueryFilter& filter, physics::RayQueryHit& hit,
                               RewindStatus* status = nullptr) const = 0;
    /// The same for a shape swept along a translation (ShapeCastInput in world.h).
    virtual bool castShapeAsSeen(const ViewTime& view, const physics::ShapeCastInput& cast,
                                 const physics::QueryFilter& filter, physics::ShapeQueryHit& hit,
                                 RewindStatus* status = nullptr) const = 0;

    // ---- Logging: tagged with the room's name and the logic's, rate-limited per room
    virtual void log(std::string_view message) = 0;
};

/// What a logic counts of its own (a script's sandbox limits), exported with the room's metrics.
struct LogicStats
{
    std::uint64_t budgetStops = 0;    ///< hooks stopped for exceeding the instruction budget
    std::uint64_t memoryRefusals = 0; ///< allocations refused at the memory cap
    std::uint64_t memoryBytes = 0;    ///< memory in use now (scripts), bytes
};

/// A game's rules: override the hooks the game needs. Every hook runs on the room's thread.
class RoomLogic
{
  public:
    virtual ~RoomLogic() = default;

    /// The step's event kinds this logic wants (kLogic* bits); events it does not want cost nothing.
    virtual std::uint32_t wantedEvents() const { return 0; }
    virtual LogicStats stats() const { return {}; }

    /// The room's scene was built (at start, and again after an admin reset or load: each world gets a new
    /// onStart after the old one's onStop). Clients already present are not joined again.
    virtual void onStart(RoomContext& room) { (void)room; }
    /// The world is about to be replaced (reset, load) or the room to close.
    virtual void onStop(RoomContext& room) { (void)room; }
    /// This logic replaces another one in a running room (admin reload: a script edited on disk), instead
    /// of onStart: the world, the clients and the room and client states (roomState(), clientState()) are
    /// as the old logic left them; read them to carry the game on.
    virtual void onReload(RoomContext& room) { (void)room; }
    /// A client completed the handshake: accept (the default) or refuse it with a reason.
    virtual JoinDecision onJoinAttempt(RoomContext& room, const ClientInfo& client)
    {
        (void)room;
        (void)client;
        return JoinDecision::allow();
    }
    /// The client is in. A room with logic spawns no player body for it: call spawnPlayer or giveBody.
    virtual void onJoin(RoomContext& room, const ClientInfo& client)
    {
        (void)room;
        (void)client;
    }
    virtual void onLeave(RoomContext& room, const ClientInfo& client, LeaveReason reason)
    {
        (void)room;
        (void)client;
        (void)reason;
    }
    virtual void onMessage(RoomContext& room, const GameMessage& message)
    {
        (void)room;
        (void)message;
    }
    virtual void onTickBegin(RoomContext& room) { (void)room; }
    virtual void onTickEnd(RoomContext& room) { (void)room; }
    virtual void onSensorBegin(RoomContext& room, const physics::SensorBeginEvent& event)
    {
        (void)room;
        (void)event;
    }
    virtual void onSensorEnd(RoomContext& room, const physics::SensorEndEvent& event)
    {
        (void)room;
        (void)event;
    }
    virtual void onContactBegin(RoomContext& room, const physics::ContactBeginEvent& event)
    {
        (void)room;
        (void)event;
    }
    virtual void onContactEnd(RoomContext& room, const physics::ContactEndEvent& event)
    {
        (void)room;
        (void)event;
    }
    virtual void onContactHit(RoomContext& room, const physics::ContactHitEvent& event)
    {
        (void)room;
        (void)event;
    }
    virtual void onJointEvent(RoomContext& room, const physics::JointEvent& event)
    {
        (void)room;
        (void)event;
    }
};

/// Makes a logic for a room; returns nullptr and sets `error` (one line) when the spec is unusable, e.g. a
/// script that fails to load ("range.lua:12: unexpected symbol near 'end'").
using LogicFactory = std::function<std::unique_ptr<RoomLogic>(const LogicSpec& spec, std::string& error)>;

/// Registers a logic under `name` for scene files to name (a game's own server binary does this before
/// serverMain; polytope-server registers "lua"). A later registration of the same name replaces it.
/// Thread-safe.
void registerLogic(std::string name, LogicFactory factory);
/// Makes the logic `spec` names; nullptr with an error naming the logic when it is not registered or its
/// factory refuses. Thread-safe.
std::unique_ptr<RoomLogic> makeLogic(const LogicSpec& spec, std::string& error);
/// True when a logic of that name is registered.
bool logicRegistered(std::string_view name);

} // namespace polytope::server

// polytope-server: the configuration of one room, with defaults.
#pragma once

#include "polytope/physics/world.h"
#include "polytope/protocol/quantize.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace polytope::server
{

class RoomLogic;

/// Spawns a player body for a client: the `spawnIndex`-th join of the room, at `at` when given (a Spawn
/// input) or at the scene's spawn point otherwise. Returns false when the world refused.
using SpawnFunction = std::function<bool(physics::World& world, std::uint32_t spawnIndex,
                                         const physics::Vec3* at, physics::BodyId& out)>;

/// The configuration of one room: its scene, tick, clients and rules. (polytope-server runs one or more.)
struct RoomConfig
{
    std::string room = "main"; ///< the room's name, 1..64 bytes; clients join a room by name
    std::uint16_t port = 7777; ///< UDP port; 0 picks an ephemeral port
    std::string bindAddress = "0.0.0.0";
    /// A scene name (scene_file.h: a built-in name, or NAME for sceneDirectory/NAME.json) or, given by the
    /// operator at start-up only, a scene file's path (containing '/' or ending in ".json").
    std::string scene = "default";
    /// Where scene names that are not built in find their files (admin load reads nothing else); relative
    /// paths are from the working directory. A missing directory leaves only the built-in scenes.
    std::string sceneDirectory = "scenes";
    /// When set, builds the world instead of the built-in scene (benchmarks, tests); `scene` is then only the
    /// name announced to clients. Returns false when the world refused a body.
    std::function<bool(physics::World&)> buildScene;
    int tickRateHz = 60;                ///< simulation steps per second, 1..1000
    int snapshotRateHz = 20;            ///< snapshots per second to each client, 1..tickRateHz
    double clientTimeoutSeconds = 10.0; ///< a client silent this long is dropped
    int maxClients = 64;                ///< sessions at once, 1..4096
    int maxCatchUpTicks = 4;            ///< ticks run in one update at most; the rest of the debt is dropped

    // Replication (protocol/STANDARD.md); announced to each client in ConnectAccepted.
    protocol::PositionQuantization quantization; ///< world bounds and position resolution of snapshots
    std::uint32_t maxBaselineAgeTicks = 256;     ///< oldest baseline a snapshot may name, 1..65536 ticks
    int idleHeartbeatTicks = 15; ///< a snapshot identical to the client's baseline is sent only this often
    double catalogueResendSeconds = 0.25; ///< an unacknowledged catalogue entry is resent after this
    int maxCatalogueDatagramsPerTick = 8; ///< catalogue datagrams per client per tick at most, >= 1
    int maxInputLeadTicks = 600;          ///< inputs for ticks further ahead than this are refused
    /// Inputs of one client waiting for their tick, 1..65536. Each client has its own queue, allocated when
    /// it joins, so that one client filling it refuses only its own inputs. 1024 holds 10 s of lead at 60 Hz
    /// for a client sending 100 inputs a second.
    int maxQueuedInputsPerClient = 1024;
    /// Bandwidth budget per client, kilobits per second (1000 bits) of UDP payload, everything sent to it
    /// counted; 0: unlimited. Under it, snapshots carry the changed bodies with the highest accumulated
    /// priority (owned, new, moving first) and the rest keep the state the client has until a later one.
    int maxClientKbps = 2048;
    double budgetBurstSeconds = 0.25; ///< the budget's token bucket holds this many seconds of it
    /// Geometry (STANDARD.md section 12) goes through a bucket of its own filled at this share of
    /// maxClientKbps (0 .. 1), and is charged to the snapshot budget too: so geometry and snapshots together
    /// stay within maxClientKbps, and snapshots always keep at least the rest.
    double geometryShare = 0.5;
    /// The geometry rate when maxClientKbps is 0 (no budget), kbps.
    int geometryKbpsWithoutBudget = 4096;
    int maxGeometryDatagramsPerTick = 16; ///< geometry slices per client per tick at most, >= 1
    double geometryResendSeconds = 0.25;  ///< an unacknowledged geometry slice is resent after this
    /// While a client holds no snapshot, a full one is sent at most this often (it is large, and one is
    /// usually already on its way).
    double fullSnapshotResendSeconds = 0.2;

    // Players: each client may own bodies. A scene file's values replace these.
    SpawnFunction spawnPlayer;     ///< empty: clients own no bodies (set from the scene when it has a player)
    bool playerBodies = true;      ///< built-in scenes: give each client a sphere to drive
    bool allowClientSpawn = false; ///< Spawn/Remove inputs allowed
    int maxBodiesPerClient = 4;    ///< bodies one client may own at once, 0..1024
    bool keepBodiesOnLeave = false;    ///< a leaving client's bodies stay (unowned) instead of being removed
    double maxInputsPerSecond = 600.0; ///< per client, token bucket refill rate (new inputs, not resends)
    double maxInputBurst = 120.0;      ///< per client, token bucket size

    // Game logic (room_logic.h, docs/GAME_RULES.md).
    /// When set, the room runs the logic this makes, whatever its scene names (tests, games embedding the
    /// server); otherwise the scene file's "logic" is made through the registry (makeLogic).
    std::function<std::unique_ptr<RoomLogic>()> logic;
    /// A hook that throws stops the room (clients told, joins refused) instead of being counted and skipped.
    /// A scene file's "logic": {"stop_on_error": true} sets it too.
    bool stopOnLogicError = false;
    double maxGameMessagesPerSecond = 60.0;  ///< per client, token bucket refill rate
    double maxGameMessageBurst = 30.0;       ///< per client, token bucket size
    int maxQueuedGameMessagesPerClient = 64; ///< messages of one client waiting for their tick, 1..1024
    double gameStateResendSeconds = 0.1;     ///< an unacknowledged game state is sent again after this
    /// Poses kept for lag-compensated queries (pose_history.h), seconds of ticks, 0..1; 0 keeps none.
    double lagCompensationSeconds = 0.5;

    /// Empty when every field is in range, else a message naming the first bad field.
    std::string validate() const;
};

} // namespace polytope::server

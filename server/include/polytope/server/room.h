// polytope-server: one room: a World, its fixed-tick loop, its input queue and what its clients see.
//
// Clients reach a room through the Server (server.h), which owns the connections (connection_table.h) and
// the handshake (handshake.cpp): the Server calls admit() when a handshake completes (or is repeated),
// receiveDatagram() with each datagram of a joined client, and update() with the current time, all from the
// room's thread (room_host.h: the network thread never waits on a room). The room never reads a clock or
// touches a socket; it sends through the Server's SendToSlot (sealed per connection) and SendToAddress, and
// asks the Server to close a connection through CloseConnection.
//
// Per tick (update() runs the ticks that are due, at most maxCatchUpTicks at once):
//   - the inputs queued for this tick are applied to the World, then the World steps;
//   - the Replicator (replication.h) refreshes the shape catalogue and sends each client its due catalogue
//     entries and, at that client's snapshot ticks, a snapshot against its acknowledged baseline.
// Per-client state is made at join; a steady tick allocates nothing.
#pragma once

#include "polytope/physics/world.h"
#include "polytope/protocol/packet.h"
#include "polytope/protocol/sequence_window.h"
#include "polytope/server/connection_table.h"
#include "polytope/server/replication.h"
#include "polytope/server/room_config.h"
#include "polytope/server/room_logic.h"
#include "polytope/server/room_metrics.h"
#include "polytope/server/scene_file.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace polytope::server
{

/// An input as the room applied it (for tests and logs).
struct AppliedInput
{
    std::uint32_t clientId = 0;
    protocol::InputCommand input;
    std::uint64_t appliedTick = 0; ///< the tick whose step it took part in
    physics::WorldStatus status = physics::WorldStatus::Ok;
};

/// The outcome of an admin command.
struct AdminResult
{
    bool ok = false;
    std::string message;
};

class Room
{
  public:
    using SendToSlot = std::function<void(ClientSlot slot, std::span<const std::uint8_t> datagram)>;
    using CloseConnection = std::function<void(ClientSlot slot)>;
    using SendToAddress =
        std::function<void(const protocol::Address& to, std::span<const std::uint8_t> datagram)>;

    /// Builds the scene named in config; returns nullptr and sets error when the config or scene is bad.
    /// `connections` is the Server's table, which outlives the room.
    static std::unique_ptr<Room> create(const RoomConfig& config, ConnectionTable& connections,
                                        SendToSlot send, SendToAddress sendPlain, CloseConnection close,
                                        std::string& error);

    ~Room();
    Room(const Room&) = delete;
    Room& operator=(const Room&) = delete;

    // ---- Called by the Server, on the room's thread ----
    /// What a ChallengeResponse asks of the room.
    struct JoinOptions
    {
        std::string name;
        int snapshotRateHz = 0; ///< 0: the room's rate
        bool spectator = false; ///< no player body
        protocol::wire::SnapshotFormat snapshotFormat = protocol::wire::SnapshotFormat::Compressed;
        bool snapshotVelocities = false; ///< Structured only
    };
    /// The connection in `slot` sent a valid ChallengeResponse with header sequence `sequence`: it joins as a
    /// new client with `options` if it is not one yet and is sent ConnectAccepted (again, for a repeat: the
    /// first may have been lost; a repeat's options are ignored).
    void admit(ClientSlot slot, JoinOptions options, std::uint16_t sequence, double now);
    /// A datagram from the connection in `slot` as the Server decoded it (its plaintext; `wireBytes` as
    /// received): counted, its header's sequence and acks recorded, and carried out.
    void receiveDatagram(ClientSlot slot, const protocol::DecodeResult& decoded, std::size_t wireBytes,
                         double now);
    /// A repeated ConnectRequest from the joined client in `slot`: its Challenge goes out on the connection.
    void sendChallenge(ClientSlot slot, std::span<const std::uint8_t> cookie);
    /// A connect refused because the room is full.
    void countDenied() { ++m_metrics.clientsDenied; }
    /// Clients silent for longer than clientTimeoutSeconds are told and removed.
    void timeOutSilent(double now);
    /// Carries out an authenticated admin command (the Server checked the key).
    AdminResult admin(const protocol::AdminCommandFields& command, double now);
    /// admin(), then the AdminReply to `from`, signed with `key` (admin_auth.h).
    void runAdmin(const protocol::AdminCommandFields& command, const protocol::Address& from, double now,
                  const protocol::AdminMacKey& key);
    /// Disconnects a client (admin kick). False when no such client.
    bool kick(std::uint32_t clientId);
    /// Runs the ticks that are due and sends due snapshots and catalogue entries.
    void update(double now);
    /// Tells every client the server is going away and removes them.
    void shutdown();

    /// Appends the room's state (its tick, pause and time scale, and World::saveState) to `out`.
    void saveState(std::vector<std::uint8_t>& out) const;
    /// Replaces the room's state with one saved by saveState from a room with the same scene. Clients are
    /// not part of it: call before clients connect. On failure nothing changes and error says why.
    bool restoreState(std::span<const std::uint8_t> data, std::string& error);

    // ---- Reading the room ----
    /// The authoritative tick: the number of ticks the World has stepped.
    std::uint64_t tick() const { return m_tick; }
    /// The time at which update() next has work to do.
    double nextUpdateTime() const { return m_nextTickTime; }
    std::size_t clientCount() const { return m_members.size(); }
    bool paused() const { return m_paused; }
    double timeScale() const { return m_timeScale; }
    const RoomMetrics& metrics() const { return m_metrics; }
    const RoomConfig& config() const { return m_config; }
    const physics::World& world() const { return m_world; }
    /// Mutable access for scripted scenes (benchmarks, tests): call between updates only.
    physics::World& world() { return m_world; }
    /// The bodies a client owns (empty for unknown clients).
    std::vector<physics::BodyId> ownedBodies(std::uint32_t clientId) const;
    /// The quantized snapshots made recently (tests compare clients' decoded state with them).
    const protocol::SnapshotHistory& history() const { return m_replicator.history(); }
    /// What the room replicates (the geometry it holds, tests and tools).
    const Replicator& replicator() const { return m_replicator; }
    /// The snapshot of `tick` exactly as that client was sent it (under a bandwidth budget it may hold older
    /// states of some bodies than history() does), or nullptr.
    const protocol::SnapshotFrame* sentFrame(std::uint32_t clientId, std::uint64_t tick) const;

    /// Called for every input applied (or refused by the World), in order.
    void setInputObserver(std::function<void(const AppliedInput&)> observer)
    {
        m_inputObserver = std::move(observer);
    }
    /// Called before each tick's World::step with the tick about to be made (scripted scenes).
    void setPreStepHook(std::function<void(std::uint64_t tick)> hook) { m_preStep = std::move(hook); }
    /// A clock (seconds) used only to measure tick and encoding times into metrics().
    void setProfileClock(std::function<double()> clock);

    // ---- Game logic (room_logic.h; room_logic_host.cpp)
    /// The logic running the room's game, or nullptr.
    const RoomLogic* logic() const { return m_logic.get(); }
    /// True when the logic failed with RoomConfig::stopOnLogicError set: the room is paused and refuses
    /// joins until an admin reset, load or reload.
    bool logicStopped() const { return m_logicStopped; }
    std::span<const std::uint8_t> roomState() const { return m_roomState; }
    std::uint32_t roomStateVersion() const { return m_roomStateVersion; }
    /// A client's private state (empty for unknown clients).
    std::span<const std::uint8_t> clientState(std::uint32_t clientId) const;
    /// Replaces the logic with a fresh one made from the same spec (a script edited on disk), which gets
    /// onReload. On failure the old logic stays and error says why.
    bool reloadLogic(std::string& error);

  private:
    /// A game message waiting for its tick.
    struct QueuedMessage
    {
        std::uint64_t tick = 0;
        std::uint64_t arrival = 0; ///< orders a tick's messages across clients
        std::uint32_t clientId = 0;
        std::uint32_t sequence = 0;
        ViewTime view;
        std::uint16_t size = 0;
        std::array<std::uint8_t, kMaxGameMessageBytes> data{};
    };
    /// The delivery of one scope of game state to one client.
    struct StateSync
    {
        std::uint32_t acked = 0; ///< the newest version the client acknowledged
        std::uint32_t sent = 0;  ///< the version last sent
        double sentTime = 0.0;
    };
    /// A GameState datagram sent, by header sequence (acknowledgement bookkeeping).
    struct StateRecord
    {
        std::uint16_t sequence = 0;
        bool valid = false;
        bool clientScope = false;
        std::uint32_t version = 0;
    };
    static constexpr std::size_t kStateRecordRing = 64;
    struct QueuedInput
    {
        std::uint64_t tick;
        std::uint64_t arrival; ///< the room's count of inputs queued before it: orders a tick's inputs
        ClientSlot slot; ///< the client's (it cannot leave between gathering and applying a tick's inputs)
        std::uint32_t clientId;
        protocol::InputCommand input;
    };
    /// A joined client: made at join, kept until it leaves.
    struct Client
    {
        Client(std::uint32_t maxBaselineAgeTicks, int ticksPerSnapshot)
            : replication(maxBaselineAgeTicks, ticksPerSnapshot)
        {
        }
        std::uint32_t clientId = 0;
        std::string name;
        bool spectator = false; ///< asked for no player body
        std::vector<physics::BodyId> owned;
        protocol::SequenceWindow<1024> inputsSeen; ///< input sequences received (resends are dropped)
        std::vector<QueuedInput> inputs;           ///< waiting for their tick: by tick, then arrival
        double inputTokens = 0.0;                  ///< the input rate limit's bucket
        double inputTokenTime = 0.0;
        double lastKeepAliveTime = 0.0;
        ClientReplication replication;
        // Game logic
        protocol::SequenceWindow<1024> messagesSeen; ///< game message sequences received
        std::vector<QueuedMessage> messages;         ///< waiting for their tick: by tick, then arrival
        double messageTokens = 0.0;                  ///< the message rate limit's bucket
        double messageTokenTime = 0.0;
        std::vector<std::uint8_t> state; ///< the client's private game state
        std::uint32_t stateVersion = 0;
        StateSync roomSync;
        StateSync clientSync;
        std::array<StateRecord, kStateRecordRing> stateSent{};
    };

    Room(const RoomConfig& config, ConnectionTable& connections, SendToSlot send, SendToAddress sendPlain,
         CloseConnection close);
    void join(ClientSlot slot, JoinOptions options, double now);
    protocol::SessionParameters sessionParameters(ClientSlot slot) const;
    void receive(ClientSlot slot, const protocol::DecodeResult& decoded, double now);
    void timeOut(ClientSlot slot);
    /// Builds config.scene (a built-in name or a scene file) into `world`; a scene file's description comes
    /// back in `file` (nullptr for built-in scenes and buildScene).
    static bool buildWorld(const RoomConfig& config, physics::World& world, std::string& error,
                           std::shared_ptr<const SceneDescription>& file);
    /// Takes the player rules (template, spawning, limits) of the scene now running, and its identity from
    /// m_world, which must hold the scene as built (room_scene.cpp).
    void adoptSceneRules(std::shared_ptr<const SceneDescription> file);
    Client* findClient(std::uint32_t clientId);
    const Client* findClient(std::uint32_t clientId) const;
    /// Removes the client in `slot` (its bodies too, unless kept) and closes its connection.
    void leave(ClientSlot slot, const char* why, LeaveReason reason);
    /// Sends a Disconnect a few times (UDP may lose it).
    void sayGoodbye(ClientSlot slot, protocol::wire::DisconnectReason reason);
    bool spawnFor(Client& client, const physics::Vec3* at);
    void releaseBodies(Client& client);
    static bool ownsBody(const Client& client, physics::BodyId id);
    void resetWorld(physics::World&& world);
    void handleInputs(Client& client, const protocol::wire::ClientInput& message, double now);
    void applyInputs(std::uint64_t tick);
    void runTick(double now);
    void keepAlivePaused(double now);
    void send(ClientSlot slot, std::span<const std::uint8_t> datagram);

    // ---- Game logic (room_logic_host.cpp)
    class LogicContext;
    /// The logic the config or scene names (nullptr and no error when none); `spec` gets what to reload.
    static std::unique_ptr<RoomLogic> makeRoomLogic(const RoomConfig& config, const SceneDescription* file,
                                                    std::optional<LogicSpec>& spec, std::string& error);
    /// Seats `logic` (or none) for the world now running and calls its onStart.
    void startLogic(std::unique_ptr<RoomLogic> logic, std::optional<LogicSpec> spec);
    /// Calls onStop and removes the logic.
    void stopLogic();
    /// Runs one hook, catching what it throws (counted, logged once a second, and the room stopped when
    /// the config says so), then carries out the kicks it asked for and forgets destroyed owned bodies.
    void callLogic(const char* name, physics::FunctionRef<void(RoomLogic&, RoomContext&)> hook);
    void onLogicError(const char* hook, const char* what);
    void afterLogic();
    /// onJoinAttempt; false (the client told and its connection closed) when refused.
    bool logicAdmits(ClientSlot slot, const JoinOptions& options);
    void handleGameMessages(Client& client, const protocol::wire::ClientInput& message, double now);
    void deliverMessages(std::uint64_t tick);
    void dispatchEvents();
    void sendGameStates(Client& client, double now);
    void onStateAcked(Client& client, std::uint16_t sequence);
    ClientInfo infoOf(const Client& client) const;
    /// The members' replication states, in member order (scratch, no allocation once warm).
    std::span<ClientReplication* const> replications();

    RoomConfig m_config;
    ConnectionTable& m_connections;
    SendToSlot m_send;
    SendToAddress m_sendPlain;
    CloseConnection m_close;
    physics::World m_world;
    RoomMetrics m_metrics;
    Replicator m_replicator;
    protocol::PacketWriter m_writer;
    std::vector<std::unique_ptr<Client>> m_clients; ///< by connection slot; null where not a member
    std::vector<ClientSlot> m_members;              ///< joined clients' slots, ordered by address
    std::vector<ClientReplication*> m_replicationScratch;
    std::vector<QueuedInput> m_dueInputs; ///< this tick's inputs of every client (scratch, capacity kept)
    std::uint64_t m_inputsQueued = 0;     ///< inputs queued so far (each input's arrival number)
    std::vector<protocol::InputCommand> m_inputScratch;
    std::function<void(const AppliedInput&)> m_inputObserver;
    std::function<void(std::uint64_t)> m_preStep;
    std::function<double()> m_profileClock;
    std::uint32_t m_spawnCount = 0;
    SpawnFunction m_explicitSpawn; ///< the spawnPlayer the config came with (tests, benchmarks)
    std::shared_ptr<const SceneDescription> m_sceneFile; ///< the running scene's file, if any
    /// BLAKE2b-256 of the running scene's World::saveState as built: its identity in checkpoints.
    std::array<std::uint8_t, 32> m_sceneDigest{};
    std::unique_ptr<RoomLogic> m_logic;
    /// The moving bodies' recent poses (lag compensation), kept while a logic runs and
    /// RoomConfig::lagCompensationSeconds > 0.
    std::unique_ptr<PoseHistory> m_poseHistory;
    std::optional<LogicSpec> m_logicSpec;         ///< what m_logic was made from (reload), when from a spec
    std::shared_ptr<LogicContext> m_logicContext; ///< shared_ptr: its type is complete in one file only
    bool m_logicStopped = false;
    bool m_explicitStopOnLogicError = false; ///< RoomConfig::stopOnLogicError as the room was made
    int m_logicDepth = 0;                    ///< hooks running (a hook's kick may make a leave call onLeave)
    std::uint64_t m_hookTick = 0;            ///< RoomContext::tick() during hooks
    double m_now = 0.0;                      ///< the latest time the room was given (logs' rate limits)
    double m_lastLogicErrorLog = -1e9;       ///< when an error was last logged
    std::uint64_t m_logicErrorsUnlogged = 0;
    double m_logTokens = 20.0; ///< RoomContext::log's rate limit
    double m_logTokenTime = 0.0;
    std::vector<std::uint8_t> m_roomState;
    std::uint32_t m_roomStateVersion = 0;
    std::vector<std::pair<std::uint32_t, std::string>> m_pendingKicks;
    std::uint64_t m_messagesQueued = 0;
    std::vector<const QueuedMessage*> m_dueMessages;
    std::vector<protocol::GameMessageFields> m_messageScratch;
    std::vector<physics::SensorBeginEvent> m_sensorBegins; ///< copies of the step's events (hooks may
    std::vector<physics::SensorEndEvent> m_sensorEnds;     ///< change the world while they are dispatched)
    std::vector<physics::ContactBeginEvent> m_contactBegins;
    std::vector<physics::ContactEndEvent> m_contactEnds;
    std::vector<physics::ContactHitEvent> m_contactHits;
    std::vector<physics::JointEvent> m_jointEvents;
    bool m_paused = false;
    std::uint64_t m_stepBudget = 0; ///< ticks to run while paused (admin Step)
    double m_timeScale = 1.0;
    std::uint64_t m_tick = 0;
    double m_tickSeconds = 1.0 / 60.0;
    double m_nextTickTime = 0.0;
    bool m_started = false;
    std::uint32_t m_nextClientId = 1;
    int m_ticksPerSnapshot = 3;
};

} // namespace polytope::server

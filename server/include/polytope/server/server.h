// polytope-server: the authoritative server core, independent of sockets and clocks.
//
// Time and transport are injected: the owner calls receive() for every datagram and update() with the
// current time, and the server sends through the SendFunction it was given. The same core runs behind real
// UDP sockets (UdpServer) and, in tests and benchmarks, behind the in-process NetworkSimulator with a test
// clock.
//
// Protocol version 2 (protocol/STANDARD.md), per tick:
//   - inputs queued for this tick are applied to the World, then the World steps;
//   - at snapshot ticks every body is quantized once into the shared SnapshotHistory, and for each client
//     the SnapshotEncoder codes it against the newest tick that client holds (all its slice datagrams
//     acknowledged), skipping a snapshot identical to that baseline except every idleHeartbeatTicks;
//   - shape catalogue changes are (re)sent to each client until the datagram carrying them is acknowledged.
// Handshake: a ConnectRequest is answered with a Challenge and forgotten (connect_cookie.h); a session opens
// only on a ChallengeResponse with a valid cookie from the address it was issued to.
#pragma once

#include "polytope/physics/world.h"
#include "polytope/protocol/address.h"
#include "polytope/protocol/packet.h"
#include "polytope/protocol/snapshot_channel.h"
#include "polytope/server/connect_cookie.h"
#include "polytope/server/scene_file.h"
#include "polytope/server/server_config.h"
#include "polytope/server/tick_histogram.h"

#include <array>
#include <bitset>
#include <set>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace polytope::server
{

using SendFunction = std::function<void(const protocol::Address& to, std::span<const std::uint8_t> datagram)>;

/// Counters for logs, tests, benchmarks and (later) /metrics.
struct ServerMetrics
{
    std::uint64_t ticks = 0;
    std::uint64_t overruns = 0;      ///< updates that hit maxCatchUpTicks and dropped simulation time
    std::uint64_t datagramsIn = 0;   ///< accepted datagrams
    std::uint64_t bytesIn = 0;       ///< of every received datagram, accepted or not
    std::uint64_t datagramsOut = 0;
    std::uint64_t bytesOut = 0;
    std::uint64_t snapshotsSent = 0;      ///< snapshots (all their slices) sent, summed over clients
    std::uint64_t snapshotsSkipped = 0;   ///< identical to the client's baseline and not due as heartbeat
    std::uint64_t fullSnapshots = 0;      ///< sent without a baseline
    std::uint64_t snapshotDatagrams = 0;
    std::uint64_t snapshotEncodeErrors = 0; ///< the encoder refused (a bug: logged)
    std::uint64_t catalogueDatagrams = 0;
    std::uint64_t catalogueEntriesSent = 0;   ///< including resends
    std::uint64_t catalogueEntriesResent = 0;
    std::uint64_t challengesSent = 0;
    std::uint64_t cookiesForged = 0;  ///< ChallengeResponses with a forged, tampered or foreign cookie
    std::uint64_t cookiesExpired = 0;
    std::uint64_t clientsAccepted = 0;
    std::uint64_t clientsDenied = 0;
    std::uint64_t clientsTimedOut = 0;
    std::uint64_t clientsDisconnected = 0;
    std::uint64_t inputsReceived = 0;  ///< inputs in accepted ClientInput datagrams, duplicates included
    std::uint64_t inputsDuplicate = 0; ///< already received (resends), ignored
    std::uint64_t inputsLate = 0;      ///< arrived after their tick ran: applied at the next tick
    std::uint64_t inputsRefused = 0;   ///< too far ahead, or the queue was full
    std::uint64_t inputsApplied = 0;   ///< applied to the World
    std::uint64_t inputsFailed = 0;    ///< the World refused (stale body id, static body)
    std::uint64_t inputsNotOwned = 0;  ///< for a body the client does not own (or Spawn/Remove not allowed)
    std::uint64_t inputsRateLimited = 0; ///< over the client's input rate
    std::uint64_t bodiesSpawned = 0;   ///< player bodies created (joins and Spawn inputs)
    std::uint64_t bodiesRemoved = 0;   ///< owned bodies removed (Remove inputs, leaving clients)
    std::uint64_t clientsKicked = 0;
    std::uint64_t adminCommands = 0;   ///< admin commands carried out (any outcome)
    std::uint64_t pausedTicks = 0;     ///< tick slots skipped while paused
    std::uint64_t bodiesDeferred = 0;  ///< changed bodies left out of a snapshot by a client's budget
    std::uint64_t budgetLimitedSnapshots = 0; ///< snapshots that left some changed body out
    std::uint64_t snapshotEncodes = 0;       ///< encoder runs (shared encodings count once)
    double encodeSeconds = 0.0;        ///< snapshot encoding time, when a profile clock is set
    TickTimeHistogram tickSeconds;     ///< duration of each tick (step, catalogue, snapshots), when a profile
                                       ///< clock is set
    protocol::DropCounters drops;      ///< datagrams dropped, by reason
};

/// An input as the server applied it (for tests and logs).
struct AppliedInput
{
    std::uint32_t clientId = 0;
    protocol::InputCommand input;
    std::uint64_t appliedTick = 0;    ///< the tick whose step it took part in
    physics::WorldStatus status = physics::WorldStatus::Ok;
};

/// The outcome of an admin command.
struct AdminResult
{
    bool ok = false;
    std::string message;
};

/// One room: a World, its fixed-tick loop and its clients. `Host` (host.h) puts several behind one socket.
class Server
{
public:
    /// Builds the scene named in config; returns nullptr and sets error when the config or scene is bad.
    static std::unique_ptr<Server> create(const ServerConfig& config, SendFunction send, std::string& error);
    /// The same with a given cookie key (tests).
    static std::unique_ptr<Server> create(const ServerConfig& config, SendFunction send, std::string& error,
                                          const ConnectCookies::Key& cookieKey);

    /// Handles one received datagram at time `now` (seconds, the caller's monotonic clock).
    void receive(const protocol::Address& from, std::span<const std::uint8_t> datagram, double now);
    /// The same for a datagram already checked by protocol::decodePacket (Host routes them so).
    void receive(const protocol::Address& from, const protocol::DecodeResult& decoded, std::size_t bytes, double now);
    /// Carries out an authenticated admin command (the Host checked the key).
    AdminResult admin(const protocol::AdminCommandFields& command, double now);
    /// Disconnects a client (admin kick). False when no such client.
    bool kick(std::uint32_t clientId, double now);
    bool hasSession(const protocol::Address& from) const { return m_sessions.count(from) != 0; }
    /// Called with (address, true) when a session opens and (address, false) when it ends.
    void setSessionObserver(std::function<void(const protocol::Address&, bool)> observer)
    {
        m_sessionObserver = std::move(observer);
    }
    bool paused() const { return m_paused; }
    double timeScale() const { return m_timeScale; }
    /// The bodies a client owns (empty for unknown clients).
    std::vector<physics::BodyId> ownedBodies(std::uint32_t clientId) const;

    /// Appends the room's state (its tick, pause and time scale, and World::saveState) to `out`.
    void saveState(std::vector<std::uint8_t>& out) const;
    /// Replaces the room's state with one saved by saveState from a room with the same scene. Sessions are
    /// not part of it: call before clients connect. On failure nothing changes and error says why.
    bool restoreState(std::span<const std::uint8_t> data, std::string& error);
    /// Runs the ticks that are due, sends due snapshots and catalogue entries and drops silent clients.
    void update(double now);
    /// Tells every client the server is going away (sent several times, as UDP may lose it).
    void shutdown(double now);

    /// The time at which update() next has work to do.
    double nextUpdateTime() const { return m_nextTickTime; }
    std::size_t clientCount() const { return m_sessions.size(); }
    const ServerMetrics& metrics() const { return m_metrics; }
    const ServerConfig& config() const { return m_config; }
    const physics::World& world() const { return m_world; }
    /// Mutable access for scripted scenes (benchmarks, tests): call between updates only.
    physics::World& world() { return m_world; }
    /// The quantized snapshots sent recently (tests compare clients' decoded state with them).
    const protocol::SnapshotHistory& history() const { return m_history; }
    const protocol::SnapshotCodecConfig& codecConfig() const { return m_codec; }
    /// The snapshot of `tick` exactly as that client was sent it (under a bandwidth budget it may hold older
    /// states of some bodies than history() does), or nullptr.
    const protocol::SnapshotFrame* sentFrame(std::uint32_t clientId, std::uint64_t tick) const;
    /// Called for every input applied (or refused by the World), in order.
    void setInputObserver(std::function<void(const AppliedInput&)> observer) { m_inputObserver = std::move(observer); }
    /// Called before each tick's World::step with the tick about to be made (scripted scenes).
    void setPreStepHook(std::function<void(std::uint64_t tick)> hook) { m_preStep = std::move(hook); }
    /// Called with every datagram handed to this room (its plaintext, valid or not) before anything else:
    /// a recording of them and of the update() times replays the room exactly (tests).
    void setReceiveTap(std::function<void(const protocol::Address&, std::span<const std::uint8_t>, double)> tap)
    {
        m_receiveTap = std::move(tap);
    }
    /// A clock (seconds) used only to measure encoding time into metrics().encodeSeconds.
    void setProfileClock(std::function<double()> clock) { m_profileClock = std::move(clock); }

private:
    struct CatalogueRecord
    {
        std::uint32_t id;
        std::uint64_t version;
    };
    struct PendingCatalogue
    {
        std::uint64_t sentVersion = 0; ///< 0: never sent at any version
        double sentTime = 0.0;
    };
    struct Session
    {
        explicit Session(std::uint32_t maxAge) : snapshots(maxAge) {}
        std::uint32_t clientId = 0;
        std::string name;
        protocol::AckTracker acks;
        double lastReceiveTime = 0.0;
        protocol::SnapshotSendState snapshots;
        std::map<std::uint32_t, PendingCatalogue> catalogueDirty; ///< ids whose entry the client lacks
        /// Catalogue entries each recent datagram carried, by sequence mod kCatalogueRing.
        std::vector<std::pair<std::uint16_t, std::vector<CatalogueRecord>>> catalogueSent;
        std::uint32_t newestInputSequence = 0;
        std::bitset<1024> inputsSeen; ///< bit (sequence mod 1024) of the last 1024 sequences
        std::vector<physics::BodyId> owned;
        bool spectator = false;      ///< asked for no player body
        int ticksPerSnapshot = 3;
        double inputTokens = 0.0;
        double inputTokenTime = 0.0;
        double lastKeepAliveTime = 0.0;
        // Bandwidth budget (maxClientKbps > 0): the frames this client was actually sent, its bytes left,
        // each body's accumulated priority and the measured cost of a changed body.
        std::unique_ptr<protocol::SnapshotHistory> sentFrames;
        std::vector<protocol::QuantizedBody> composite;
        std::vector<float> priority; ///< by body id
        double budgetTokens = 0.0;   ///< bytes
        double budgetTime = 0.0;
        double bytesPerChangedBody = 8.0;
        std::set<std::uint64_t> deviatedTicks; ///< sent frames that differ from the simulation's
        std::uint64_t lastFullTick = 0;        ///< tick of the last snapshot sent without a baseline
    };
    /// The server-wide catalogue, by body slot.
    struct CatalogueSlot
    {
        protocol::CatalogueEntry entry;
        std::uint64_t version = 0; ///< bumped whenever the entry changes; 0: never used
        std::uint64_t seenTick = 0;
    };
    struct QueuedInput
    {
        std::uint32_t clientId;
        protocol::InputCommand input;
    };
    static constexpr std::size_t kCatalogueRing = 256;

    Server(const ServerConfig& config, SendFunction send, const ConnectCookies::Key* cookieKey);
    static std::unique_ptr<Server> make(const ServerConfig& config, SendFunction send, std::string& error,
                                        const ConnectCookies::Key* cookieKey);
    /// Builds config.scene (a built-in name or a scene file) into `world`; a scene file's description
    /// comes back in `file` (nullptr for built-in scenes and buildScene).
    bool buildWorld(const ServerConfig& config, physics::World& world, std::string& error,
                    std::shared_ptr<const SceneDescription>& file) const;
    /// Takes the player rules (template, spawning, limits) of the scene now running.
    void adoptSceneRules(std::shared_ptr<const SceneDescription> file);
    Session* findSession(std::uint32_t clientId, protocol::Address* address = nullptr);
    void endSession(std::map<protocol::Address, Session>::iterator it, const char* why);
    bool spawnFor(Session& session, const physics::Vec3* at);
    void releaseBodies(Session& session);
    bool ownsBody(const Session& session, physics::BodyId id) const;
    void resetWorld(physics::World&& world);
    void runTick(double now);
    void keepAlivePaused(double now);
    void send(const protocol::Address& to, std::span<const std::uint8_t> datagram);
    void handleConnectRequest(const protocol::Address& from, double now);
    void handleChallengeResponse(const protocol::Address& from, const protocol::wire::Packet& packet, double now);
    void handleAcks(Session& session, const protocol::wire::PacketHeader& header);
    void handleInputs(Session& session, const protocol::wire::ClientInput& message, double now);
    bool firstTimeInput(Session& session, std::uint32_t sequence);
    void applyInputs(std::uint64_t tick);
    void tick(double now);
    void refreshCatalogue();
    void captureSnapshot();
    void sendSnapshot(const protocol::Address& to, Session& session);
    /// Fills session.composite with what fits the client's budget (see ServerConfig::maxClientKbps); returns
    /// true when it is the current frame unchanged (nothing deferred).
    bool composeBudgeted(Session& session, const protocol::SnapshotFrame& current,
                         const protocol::SnapshotFrame* baseline);
    /// A snapshot encoded from the simulation's own frames, shared by every client with the same
    /// (current, baseline, reference) ticks in one tick.
    struct SharedEncoding
    {
        bool identicalToBaseline = false;
        std::vector<std::vector<std::uint8_t>> slices;
    };
    using EncodingKey = std::array<std::uint64_t, 3>;
    void sendCatalogue(const protocol::Address& to, Session& session, double now);
    protocol::SessionParameters sessionParameters(const Session& session) const;

    ServerConfig m_config;
    SendFunction m_send;
    physics::World m_world;
    ConnectCookies m_cookies;
    protocol::PacketWriter m_writer;
    protocol::SnapshotCodecConfig m_codec;
    protocol::SnapshotHistory m_history;
    protocol::SnapshotEncoder m_encoder;
    std::map<protocol::Address, Session> m_sessions; ///< ordered: iteration is deterministic
    std::vector<CatalogueSlot> m_catalogue;
    std::uint64_t m_catalogueVersion = 0;
    std::vector<protocol::CatalogueEntry> m_catalogueScratch;
    std::vector<protocol::InputCommand> m_inputScratch;
    std::multimap<std::uint64_t, QueuedInput> m_inputQueue; ///< by tick, then arrival
    std::function<void(const AppliedInput&)> m_inputObserver;
    std::function<void(std::uint64_t)> m_preStep;
    std::function<void(const protocol::Address&, std::span<const std::uint8_t>, double)> m_receiveTap;
    std::function<double()> m_profileClock;
    std::function<void(const protocol::Address&, bool)> m_sessionObserver;
    std::map<EncodingKey, SharedEncoding> m_sharedEncodings; ///< this tick's; cleared every tick
    SharedEncoding m_privateEncoding; ///< the last encoding of a client's own (budget-limited) frames
    std::uint32_t m_spawnCount = 0;
    SpawnFunction m_explicitSpawn;  ///< the spawnPlayer the config came with (tests, benchmarks)
    std::shared_ptr<const SceneDescription> m_sceneFile; ///< the running scene's file, if any
    bool m_paused = false;
    std::uint64_t m_stepBudget = 0; ///< ticks to run while paused (admin Step)
    double m_timeScale = 1.0;
    ServerMetrics m_metrics;
    double m_tickSeconds = 1.0 / 60.0;
    double m_nextTickTime = 0.0;
    double m_now = 0.0;
    bool m_started = false;
    std::uint32_t m_nextClientId = 1;
    int m_ticksPerSnapshot = 3;
};

} // namespace polytope::server

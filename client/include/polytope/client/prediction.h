// Polytope client library, prediction: the bodies a client owns, simulated ahead of the server from the
// client's own inputs, and reconciled against snapshots without visible snaps. Linked as
// polytope::client_prediction, which brings the engine; the plain client library does not link it.
//
// Rationale (after Fiedler, "Networked Physics", gafferongames.com, 2014-2015, and the usual client-side
// prediction of shooters). The server is authoritative and applies each input at the tick it names. The
// client keeps a local physics::World holding its owned bodies as dynamic bodies and every other body it
// knows as kinematic (planes static) at its newest snapshot pose, and runs that World ahead of the server:
//
//   Clock. For each snapshot, transit = receiveTime - serverTime; over the last clockWindowSeconds,
//   newest(t) = t - min(transit) is the newest server time that can have reached the client by local time
//   t (as in interpolation.h). An input sent at t reaches the server about RTT / 2 later, and the server is
//   then about RTT / 2 past newest(t). So the predicted clock aims at
//     target(t) = newest(t) + rtt + safetyMarginSeconds + marginRttVariations * rttVariation
//   and, like the render clock of interpolation.h, follows it by speeding up or slowing down by at most
//   maxRateChange (jumping only when more than clockSnapSeconds away). The World is stepped, one tick of the
//   server's length at a time, up to tick floor(clock * tickRateHz); the game's inputs are for the next tick
//   to be stepped, so they reach the server before it runs that tick (its inputsLate metric counts those
//   that did not). The default margin, 40 ms, covers what the round trip does not: an input waits up to a
//   frame before the client sends it, the clock's tick is rounded down, the server runs a tick up to one
//   of its updates late, and a lost ClientInput is repeated by the next frame's (every datagram carries
//   the inputs not yet acknowledged). With one 60 Hz frame of margin, 46 of 1143 inputs were late even
//   without loss (tests/client/test_prediction.cpp); with 40 ms none were, with or without 5% loss.
//
//   Inputs. sendInput() sends the input with that tick and keeps it; the World applies the kept inputs of
//   each tick before stepping it, in the order sent, exactly as server/src/room_inputs.cpp does (Force and
//   Torque for the step, Impulse at the centre of mass, TargetVelocity replacing the linear velocity).
//   Spawn and Remove are sent but not predicted: the body appears or goes when snapshots say so.
//
//   Reconciliation. After each step the World's state is saved (World::saveState, a ring of historyTicks).
//   When a snapshot of tick T arrives, each owned body's pose in it is compared with the pose predicted
//   for T. When some differ by more than the tolerance (a couple of quantization steps), the World is
//   restored to T, the owned bodies are put at the server's poses (velocities: the predicted ones at T, or
//   the server's when the session's structured snapshots carry them), the others at their newest poses,
//   and the kept inputs are replayed up to the present tick.
//
//   Smoothing. The pose drawn is the raw prediction (interpolated between the last two ticks by the
//   clock's fraction of a tick) plus a visual offset. At a reconciliation the offset takes up the whole
//   jump of the raw prediction, so the drawn pose does not move; then the offset decays to zero as a
//   critically damped spring of time constant smoothingTimeConstantSeconds (position, and orientation as a
//   rotation vector): about 90% of an error is gone after 3.9 time constants, without a jump in the drawn
//   velocity when it starts. An error beyond snapDistanceMeters (a teleport, a respawn) is shown at once.
//
// Limits: other bodies do not move in the local World between snapshots and are not pushed by the owned
// ones (a shove of a server-dynamic cube is mispredicted and corrected); inputs that reach the server late
// are applied a tick later there; geometry bodies (hull, mesh, heightfield) take part once their geometry
// has arrived (Client::geometry()); compounds do not.
#pragma once

#include "polytope/client/client.h"
#include "polytope/physics/world.h"

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace polytope::client
{

/// The physical properties of the owned bodies in the local World. The defaults are those the server gives
/// a built-in scene's player sphere (server/src/room_scene.cpp); a scene file's player template may differ.
struct PredictedBodyMaterial
{
    float density = 500.0f;        ///< kg/m^3, > 0
    float friction = 0.6f;         ///< Coulomb coefficient
    float restitution = 0.2f;      ///< 0 .. 1
    float linearDamping = 0.1f;    ///< 1/s
    float angularDamping = 0.5f;   ///< 1/s
    float gravityScale = 1.0f;     ///< times the World's gravity
    float otherFriction = 0.6f;    ///< friction of the other bodies (the built-in scenes' ground has 0.6)
    float otherRestitution = 0.0f; ///< restitution of the other bodies
};

struct PredictionConfig
{
    /// The local World (gravity, solver settings). Keep them as the server's: the defaults are a built-in
    /// scene's. Capacities are small: the World holds what the client knows.
    physics::WorldConfig world = smallWorld();
    PredictedBodyMaterial material;
    std::size_t historyTicks = 120; ///< ticks of saved state (2 s at 60 Hz): older snapshots cannot reconcile

    // The predicted clock (see the file comment).
    double safetyMarginSeconds = 0.04;   ///< lead beyond the round trip (see the file comment)
    double marginRttVariations = 2.0;    ///< plus this many RTT variations (jitter)
    double clockWindowSeconds = 2.0;     ///< arrivals over which the fastest transit is taken
    double clockCorrectionSeconds = 0.5; ///< a clock error is corrected at error / this per second
    double maxRateChange = 0.1;          ///< the clock runs at 1 +- this
    double clockSnapSeconds = 0.25;      ///< beyond this error the clock jumps
    int maxTicksPerUpdate = 30;          ///< ticks stepped in one update() at most (a stall drops the rest)

    // Reconciliation and smoothing.
    float toleranceMeters = 0.002f;  ///< smaller position errors are quantization: left alone
    float toleranceRadians = 0.004f; ///< smaller orientation errors likewise
    /// Time constant of the critically damped offset (50 ms: 90% of a correction shown in 195 ms); 0:
    /// corrections show at once.
    double smoothingTimeConstantSeconds = 0.05;
    float snapDistanceMeters = 2.0f; ///< larger position errors are shown at once (teleports)

    static physics::WorldConfig smallWorld()
    {
        physics::WorldConfig c;
        c.maxBodies = 4096;
        c.maxContacts = 8192;
        c.maxHulls = 256;
        c.maxCompounds = 16;
        c.maxMeshes = 64;
        c.maxHeightFields = 16;
        c.maxJoints = 16;
        c.enableContactEvents = false;
        c.enableSensorEvents = false;
        return c;
    }
};

/// One owned body as predicted, for the game to draw.
struct PredictedBody
{
    std::uint32_t id = 0; ///< the server's body id and generation
    std::uint32_t generation = 0;
    physics::Transform drawn; ///< the pose to draw now: raw plus the decaying correction offset
    physics::Transform raw;   ///< the prediction itself, interpolated between the last two ticks
    physics::Vec3 offset{};   ///< drawn.p - raw.p, metres
    /// The jump of the raw pose caused by reconciliations during the last update (metres, world frame), and
    /// of its orientation (a rotation vector, radians): what the offset took up.
    physics::Vec3 rawJump{};
    physics::Vec3 rawJumpRotation{};
    float visibleCorrectionMeters = 0.0f;  ///< how far the smoothing moved the drawn pose in the last update
    float visibleCorrectionRadians = 0.0f; ///< how far it turned it
};

/// Counts and extremes since construction (see also PredictedBody's per-update figures).
struct PredictionStats
{
    std::uint64_t updates = 0;
    std::uint64_t ticksPredicted = 0;    ///< ticks stepped forwards
    std::uint64_t ticksResimulated = 0;  ///< ticks stepped again after a restore
    std::uint64_t inputsSent = 0;        ///< accepted by the client and kept
    std::uint64_t inputsRefused = 0;     ///< refused by Client::sendInput (invalid, not connected, too many)
    std::uint64_t snapshotsCompared = 0; ///< snapshots whose owned poses were compared with the prediction
    std::uint64_t corrections = 0;       ///< of them, those that restored and re-simulated
    std::uint64_t snaps = 0; ///< corrections shown at once (beyond snapDistanceMeters, new bodies)
    std::uint64_t snapshotsOutsideHistory = 0; ///< too old (or before a body change) to compare
    std::uint64_t clockJumps = 0;              ///< the predicted clock jumped (start, long stalls)
    std::uint64_t ticksDropped = 0;            ///< ticks skipped by maxTicksPerUpdate
    std::uint64_t bodiesWithoutShape =
        0;                              ///< bodies left out of the local World (geometry not here, compound)
    std::uint64_t restoreFailures = 0;  ///< World::restoreState refused a saved state (should not happen)
    float largestRawErrorMeters = 0.0f; ///< snapshot vs prediction at its tick, over all owned bodies
    float largestRawErrorRadians = 0.0f;
    float largestVisibleCorrectionMeters = 0.0f; ///< over updates, of PredictedBody::visibleCorrectionMeters
    float largestVisibleCorrectionRadians = 0.0f;
    float lastRawErrorMeters = 0.0f; ///< of the newest snapshot compared
};

/// Predicts the client's owned bodies; see the file comment. Drive it once per frame:
///   while (client.popSnapshot(s)) { predictor.addSnapshot(client, s); ... }
///   predictor.sendInput(client, input);   // any number; their tick is set here
///   predictor.update(client, now);
///   for (const PredictedBody& b : predictor.bodies()) draw(b.drawn);
class Predictor
{
  public:
    explicit Predictor(const PredictionConfig& config = {});

    /// Takes a snapshot popped from `client` (in the order popped): clock sample, body changes, and the owned
    /// poses to reconcile against at the next update().
    void addSnapshot(const Client& client, const ReceivedSnapshot& snapshot);
    /// Sends `input` through `client` for inputTick() (its tick is overwritten) and keeps it to apply locally
    /// at that tick. Returns the client's sequence, 0 when refused (not ready, invalid, refused by the
    /// client).
    std::uint32_t sendInput(Client& client, const protocol::InputCommand& input);
    /// Reconciles with the newest snapshot added, advances the predicted clock to local time `now` (seconds)
    /// stepping the World up to its tick, and moves the drawn poses on.
    void update(const Client& client, double now);

    /// True once a snapshot has set the clock: inputs can be sent.
    bool isReady() const { return m_clockStarted; }
    /// The tick the next inputs are for: the next one the World steps.
    std::uint64_t inputTick() const { return m_tick + 1; }
    /// The newest tick stepped.
    std::uint64_t predictedTick() const { return m_tick; }
    /// Seconds of server time the prediction runs ahead of the newest snapshot (the clock's lead).
    double leadSeconds() const { return m_leadSeconds; }
    /// The owned bodies, by id.
    std::span<const PredictedBody> bodies() const { return m_view; }
    /// The owned body `id`, or nullptr.
    const PredictedBody* body(std::uint32_t id) const;
    const PredictionStats& stats() const { return m_stats; }
    /// The local World (read only; tests and debugging views).
    const physics::World& world() const { return m_world; }

  private:
    struct Tracked
    {
        std::uint32_t id = 0;
        std::uint32_t generation = 0;
        bool owned = false;
        physics::BodyId local{};     ///< null: not in the local World (no shape yet)
        bool isStatic = false;       ///< a plane: never moved
        bool shapeMissing = false;   ///< counted in bodiesWithoutShape
        std::uint64_t seenTick = 0;  ///< the newest snapshot that listed it
        physics::Transform newest{}; ///< the newest snapshot's pose
        physics::Transform placed{}; ///< where the local World has it (others only)
        // Owned bodies only.
        bool inSnapshot = false;         ///< present in the snapshot waiting to be reconciled
        bool snapNext = false;           ///< the next comparison shows its correction at once (new body)
        physics::Transform server{};     ///< its pose in that snapshot
        protocol::BodyVelocity velocity; ///< and velocity, when the session sends them
        physics::Transform previous{};   ///< raw pose after tick m_tick - 1
        physics::Transform current{};    ///< raw pose after tick m_tick
        physics::Vec3 offset{};          ///< drawn minus raw, metres
        physics::Vec3 offsetVelocity{};  ///< m/s
        physics::Vec3 turn{};            ///< drawn orientation = rotation(turn) * raw, rotation vector
        physics::Vec3 turnVelocity{};    ///< rad/s
        std::size_t view = 0;            ///< index in m_view
    };
    struct OwnedPose
    {
        std::uint32_t id = 0;
        physics::Transform pose{};
    };
    struct TickRecord
    {
        std::uint64_t tick = 0;
        bool valid = false;
        std::vector<std::uint8_t> state; ///< World::saveState after the tick
        std::vector<OwnedPose> owned;    ///< the owned bodies' poses after the tick, by id
    };
    struct KeptInput
    {
        std::uint64_t tick = 0;
        protocol::InputCommand input;
    };
    struct CachedGeometry
    {
        std::uint64_t hash = 0;
        protocol::wire::ShapeKind kind = protocol::wire::ShapeKind::Hull;
        physics::Shape shape{}; ///< its entry in the local World's catalogue
    };
    struct TransitSample
    {
        double receiveTime = 0.0;
        double transit = 0.0;
    };

    // Bodies (prediction_bodies.cpp).
    void syncBodies(const Client& client, const ReceivedSnapshot& snapshot);
    Tracked* findTracked(std::uint32_t id);
    const Tracked* findTracked(std::uint32_t id) const;
    bool createLocal(const Client& client, Tracked& tracked, const SnapshotBody& body);
    void destroyLocal(Tracked& tracked);
    /// The local shape of `body`; false when there is none (yet): geometry missing, compound, bad extent.
    bool shapeFor(const Client& client, const SnapshotBody& body, bool dynamic, physics::Shape& out);
    bool geometryShape(const Client& client, const SnapshotBody& body, bool dynamic, physics::Shape& out);
    void rebuildView();
    void placeOthers();

    // Clock and stepping (prediction.cpp).
    void addTransit(double receiveTime, double transit);
    double newestServerTime(double now) const;
    double targetClock(const Client& client, double now) const;
    void advanceClock(const Client& client, double now);
    /// Applies the tick's inputs, steps, records; `again`: a re-simulation after a restore.
    void stepTick(std::uint64_t tick, bool again);
    void applyInputs(std::uint64_t tick);
    void record(std::uint64_t tick);
    void invalidateHistory();
    TickRecord* recordOf(std::uint64_t tick);

    // Reconciliation and smoothing (prediction_reconcile.cpp).
    void reconcile();
    bool compare(const TickRecord& record, bool& snap);
    /// Restores the World to `tick`, puts the owned bodies at the snapshot's poses, replays to the present,
    /// and lets the offsets take up the jumps (or drops them when `snap`).
    void correct(std::uint64_t tick, bool snap);
    bool resimulate(std::uint64_t from);
    void readRaw();
    physics::Transform rawPose(const Tracked& tracked) const;
    void smooth(double seconds);
    void publish();

    PredictionConfig m_config;
    physics::World m_world;
    std::vector<Tracked> m_tracked; ///< by id
    std::vector<PredictedBody> m_view;
    std::vector<TickRecord> m_history;     ///< ring, by tick mod size
    std::vector<KeptInput> m_inputs;       ///< by tick, then order sent
    std::vector<TransitSample> m_transits; ///< ring
    std::size_t m_transitNext = 0;
    std::size_t m_transitCount = 0;
    std::vector<CachedGeometry> m_geometryCache;     ///< geometry already in the World's catalogues
    std::vector<physics::Transform> m_beforeScratch; ///< raw poses before a correction, per owned body

    double m_tickSeconds = 1.0 / 60.0;
    int m_tickRateHz = 60;
    bool m_clockStarted = false;
    double m_clock = 0.0;   ///< server seconds the prediction shows
    double m_lastNow = 0.0; ///< local seconds of the last update
    float m_alpha = 0.0f;   ///< the clock's fraction of the tick after m_tick, of the last update
    double m_leadSeconds = 0.0;
    std::uint64_t m_tick = 0;         ///< the newest tick stepped
    std::uint64_t m_historyFloor = 0; ///< records of older ticks are not comparable (bodies changed since)
    bool m_pendingSnapshot = false;
    std::uint64_t m_pendingTick = 0; ///< tick of the newest snapshot waiting for reconcile()
    std::uint64_t m_lastSnapshotTick = 0;
    bool m_snapshotVelocities = false;
    PredictionStats m_stats;
};

} // namespace polytope::client

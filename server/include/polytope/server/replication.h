// polytope-server: what each client of a room is sent, and how reliably.
//
// A room has one Replicator and each of its clients one ClientReplication:
//   - the shape catalogue: the room keeps one entry per body slot with a version; each change marks the
//     entry dirty for every client, and a dirty entry is (re)sent until the datagram that carried its
//     newest version is acknowledged (catalogue reliability);
//   - snapshots: at the room's snapshot ticks every body is quantized once into the shared SnapshotHistory;
//     each client whose rate falls on the tick is sent that frame, coded against the newest tick it holds
//     completely (its baseline, SnapshotSendState) and the one before it (the reference); clients with the
//     same (current, baseline, reference) ticks share one encoding per tick;
//   - geometry: hulls, meshes, heightfields and compounds by content hash (protocol/geometry.h), each sent a
//     client once in GeometrySlice datagrams, resent until acknowledged, paced by a bucket of its own that
//     takes a share of the client's budget (geometry_replication.cpp);
//   - structured snapshots (STANDARD.md section 14), for clients that asked for them: the same choice of
//     frames (baseline, budget), cut by a StructuredSnapshotEncoder into plain tables instead of range-coded
//     payloads; clients with the same (current, baseline, velocities) share one cut per tick;
//   - the bandwidth budget (RoomConfig::maxClientKbps): a token bucket per client, and Fiedler's priority
//     accumulator choosing which changed bodies fit; deferred bodies keep the state the client has, so each
//     budgeted client has frames of its own, and a baseline is one of those.
// The Replicator never reads a clock or touches a socket: it sends through the room's SendToClient.
#pragma once

#include "polytope/physics/world.h"
#include "polytope/protocol/packet.h"
#include "polytope/protocol/snapshot_channel.h"
#include "polytope/protocol/structured_snapshot.h"
#include "polytope/server/connection_table.h"
#include "polytope/server/room_config.h"
#include "polytope/server/room_metrics.h"

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <vector>

namespace polytope::server
{

/// A body as snapshots carry it: its pose quantized, and at rest when static, asleep or all but still. The
/// one place the engine's bodies become the protocol's (the Replicator and the bandwidth benchmark).
protocol::QuantizedBody quantizeBodyState(const protocol::PositionQuantization& quantization,
                                          const physics::BodyState& body);

/// One client's replication state, made when it joins.
struct ClientReplication
{
    ClientReplication(std::uint32_t maxBaselineAgeTicks, int ticksPerSnapshot);

    ClientSlot slot = kNoSlot;
    std::uint32_t clientId = 0;
    int ticksPerSnapshot = 3;
    protocol::AckTracker* acks = nullptr;                ///< the connection's (header sequences)
    const std::vector<physics::BodyId>* owned = nullptr; ///< the bodies the client owns (the room's list)
    bool structured = false; ///< asked for structured snapshots (STANDARD.md section 14)
    bool velocities = false; ///< structured, with each listed body's velocities

    // Catalogue reliability.
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
    std::map<std::uint32_t, PendingCatalogue> catalogueDirty; ///< ids whose entry the client lacks
    /// Catalogue entries each recent datagram carried, by sequence mod kCatalogueRing.
    std::vector<std::pair<std::uint16_t, std::vector<CatalogueRecord>>> catalogueSent;

    // Geometry (STANDARD.md section 12): each hash named to the client is queued once; its slices are sent
    // within the geometry bucket and resent until acknowledged.
    struct PendingGeometry
    {
        std::uint64_t hash = 0;
        std::vector<double> sentTime; ///< per slice: < 0 never sent
        std::vector<bool> acked;      ///< per slice
        std::uint32_t unacked = 0;
    };
    struct GeometryRecord
    {
        std::uint16_t sequence = 0;
        bool valid = false;
        std::uint64_t hash = 0;
        std::uint32_t slice = 0;
    };
    std::deque<PendingGeometry>
        geometryQueue;                     ///< named to the client and not wholly acknowledged, oldest first
    std::set<std::uint64_t> geometryKnown; ///< every hash ever queued for the client (sent once)
    std::vector<GeometryRecord>
        geometrySent;                    ///< the slice each recent datagram carried, by sequence mod ring
    double geometryTokens = 0.0;         ///< bytes
    double geometryTime = -1.0;          ///< when the bucket was last filled; < 0: never
    std::uint64_t geometryBytesSent = 0; ///< datagram bytes of geometry sent this client, resends included
    std::uint64_t geometryDatagramsSent = 0;

    // Snapshots.
    protocol::SnapshotSendState snapshots;
    std::uint64_t lastFullTick = 0;     ///< tick of the last snapshot sent without a baseline
    bool fullSnapshotRequested = false; ///< the client asked for a full snapshot, and the pacing allows it

    // Bandwidth budget (maxClientKbps > 0): the frames this client was actually sent, its bytes left, each
    // body's accumulated priority and the measured cost of a changed body.
    std::unique_ptr<protocol::SnapshotHistory> sentFrames;
    std::vector<protocol::QuantizedBody> composite;
    std::vector<float> priority; ///< by body id
    double budgetTokens = 0.0;   ///< bytes
    double budgetTime = 0.0;
    double bytesPerChangedBody;
    std::set<std::uint64_t> deviatedTicks; ///< sent frames that differ from the simulation's
};

class Replicator
{
  public:
    using SendToClient =
        std::function<void(ClientReplication& client, std::span<const std::uint8_t> datagram)>;

    Replicator(const RoomConfig& config, RoomMetrics& metrics, SendToClient send);

    /// A client joined: every live catalogue entry is dirty for it.
    void addClient(ClientReplication& client) const;
    /// The client acknowledged datagram `sequence`.
    void onAcked(ClientReplication& client, std::uint16_t sequence) const;
    /// A datagram of `bytes` went to the client: its budget pays for it.
    void charge(ClientReplication& client, std::size_t bytes) const;

    /// Compares the catalogue with the world's bodies after a step; each change is dirty for every client.
    void refreshCatalogue(const physics::World& world, std::uint64_t tick,
                          std::span<ClientReplication* const> clients);
    /// Every body of the old world is gone (reset, load, restore): the next refresh rewrites every slot.
    void forgetBodies(std::span<ClientReplication* const> clients);
    /// The entry of body slot `id` changed for a reason outside the world (its owner): every client is sent
    /// it again (a new version, so that an acknowledgement of the old one does not settle it).
    void touchEntry(std::uint32_t id, std::span<ClientReplication* const> clients);
    /// Sends the client its due catalogue entries.
    void sendCatalogue(ClientReplication& client, double now);

    /// Sends the client due geometry slices, within its geometry bucket (RoomConfig::geometryShare).
    void sendGeometry(ClientReplication& client, double now);
    /// A geometry the room holds, by hash: its kind, its bytes (geometry.fbs) and the bodies naming it now.
    struct StoredGeometry
    {
        protocol::wire::ShapeKind kind = protocol::wire::ShapeKind::Hull;
        std::vector<std::uint8_t> bytes;
        std::uint32_t bodies = 0;
    };
    const std::map<std::uint64_t, StoredGeometry>& geometry() const { return m_geometry; }

    /// Starts a tick: shared encodings of the previous one are void.
    void beginTick();
    /// Quantizes every body into the history as the snapshot of `tick`.
    void captureSnapshot(const physics::World& world, std::uint64_t tick);
    /// Sends the client the newest snapshot (within its budget), unless it already has that state.
    void sendSnapshot(ClientReplication& client, double now, double tickSeconds);
    /// The client asked for a full snapshot (a slice failed its checksum; STANDARD.md 6.4) after the room's
    /// tick `tick`: its next snapshot goes without a baseline, unless a full snapshot went to it less than
    /// fullSnapshotResendSeconds before (then the request is refused, and counted).
    void requestFullSnapshot(ClientReplication& client, std::uint64_t tick, double tickSeconds);

    const protocol::SnapshotHistory& history() const { return m_history; }
    /// A clock (seconds) used only to measure encoding time into RoomMetrics::encodeSeconds.
    void setProfileClock(std::function<double()> clock) { m_profileClock = std::move(clock); }
    /// The snapshot of `tick` exactly as that client was sent it, or nullptr.
    const protocol::SnapshotFrame* sentFrame(const ClientReplication& client, std::uint64_t tick) const;

  private:
    struct CatalogueSlot
    {
        protocol::CatalogueEntry entry;
        std::uint64_t version = 0; ///< bumped whenever the entry changes; 0: never used
        std::uint64_t seenTick = 0;
    };
    /// A snapshot encoded from the simulation's own frames, shared by every client with the same (current,
    /// baseline, reference) ticks in one tick. Slots are reused from tick to tick (no allocation once warm).
    struct SharedEncoding
    {
        std::array<std::uint64_t, 3> key{};
        bool identicalToBaseline = false;
        std::size_t sliceCount = 0;
        std::vector<std::vector<std::uint8_t>> slices; ///< the first sliceCount are this encoding's
    };

    /// Fills client.composite with what fits the client's budget; true when it is the current frame
    /// unchanged (nothing deferred).
    bool composeBudgeted(ClientReplication& client, const protocol::SnapshotFrame& current,
                         const protocol::SnapshotFrame* baseline);
    /// Picks the budgeted client's baseline and reference, keeps its composite frame; false when the
    /// frames involved are not the simulation's own (then `current` is the client's composite).
    bool chooseBudgeted(ClientReplication& client, const protocol::SnapshotFrame*& current,
                        const protocol::SnapshotFrame*& baseline, const protocol::SnapshotFrame*& reference,
                        double now, bool full);
    /// A structured cut shared by every client with the same (current, baseline, velocities) in one tick.
    struct SharedStructured
    {
        std::array<std::uint64_t, 3> key{};
        protocol::StructuredSnapshotEncoder encoder;
    };
    /// The structured cut of `current` against `baseline` for this client: shared when `exact`.
    const protocol::StructuredSnapshotEncoder& cutStructured(const ClientReplication& client,
                                                             const protocol::SnapshotFrame& current,
                                                             const protocol::SnapshotFrame* baseline,
                                                             bool exact, double serverTime);
    /// Sends the client one datagram per slice of `encoding` (or of `structured`): its bytes.
    std::size_t sendSlices(ClientReplication& client, std::uint64_t tick, double serverTime,
                           const SharedEncoding* encoding,
                           const protocol::StructuredSnapshotEncoder* structured);
    /// Encodes into `out`; false when the encoder refused.
    bool encode(const protocol::SnapshotFrame& current, const protocol::SnapshotFrame* baseline,
                const protocol::SnapshotFrame* reference, SharedEncoding& out, std::uint32_t clientId);
    bool owns(const ClientReplication& client, std::uint32_t id, std::uint32_t generation) const;
    /// The catalogue entry of a body, its geometry hash included (the geometry stored on first use).
    protocol::CatalogueEntry entryOf(const physics::BodyState& body,
                                     const physics::ShapeCatalogue& catalogue);
    /// Hash of the geometry of a hull, mesh, heightfield or compound shape (stored on first use); 0 for other
    /// shapes and for geometry larger than kMaxGeometryBytes.
    std::uint64_t geometryOf(const physics::Shape& shape, const physics::ShapeCatalogue& catalogue);
    /// The catalogue entry `entry` takes or leaves its geometry: the bodies count follows.
    void countGeometryUse(const protocol::CatalogueEntry& entry, int change);
    /// Queues the geometry `hash` for the client unless it has been queued before.
    void nameGeometry(ClientReplication& client, std::uint64_t hash) const;
    /// The client acknowledged datagram `sequence`: the geometry slice it carried, if any, is delivered.
    void onGeometryAcked(ClientReplication& client, std::uint16_t sequence) const;

    const RoomConfig& m_config;
    RoomMetrics& m_metrics;
    SendToClient m_send;
    std::function<double()> m_profileClock;
    protocol::PacketWriter m_writer;
    protocol::SnapshotCodecConfig m_codec;
    protocol::SnapshotHistory m_history;
    protocol::SnapshotEncoder m_encoder;
    std::vector<CatalogueSlot> m_catalogue;
    std::uint64_t m_catalogueVersion = 0;
    std::vector<protocol::CatalogueEntry> m_catalogueScratch;
    std::map<std::uint64_t, StoredGeometry> m_geometry;
    /// Hash by (shape type, engine catalogue index), for the world the catalogue was made from.
    std::map<std::pair<int, std::uint32_t>, std::uint64_t> m_geometryByIndex;
    std::vector<SharedEncoding> m_shared; ///< this tick's encodings: the first m_sharedCount
    std::size_t m_sharedCount = 0;
    SharedEncoding m_private; ///< the last encoding of a client's own (budget-limited) frames
    std::vector<protocol::BodyVelocity> m_velocities;                  ///< of the newest capture, by body id
    std::vector<std::unique_ptr<SharedStructured>> m_sharedStructured; ///< this tick's: the first ..Count
    std::size_t m_sharedStructuredCount = 0;
    protocol::StructuredSnapshotEncoder m_privateStructured; ///< a budget-limited client's own frames
};

} // namespace polytope::server

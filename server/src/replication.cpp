#include "polytope/server/replication.h"

#include "polytope/protocol/shape_kind.h"
#include "replication_policy.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace polytope::server
{
namespace wire = protocol::wire;
using namespace replication_policy;

namespace
{
/// Catalogue datagrams remembered per client, by sequence mod this: more than can be in flight unacked
/// within the 33 sequences an ack header covers.
constexpr std::size_t kCatalogueRing = 256;
protocol::SnapshotCodecConfig codecConfigOf(const RoomConfig& config)
{
    protocol::SnapshotCodecConfig codec;
    codec.position = config.quantization;
    codec.maxBaselineAgeTicks = config.maxBaselineAgeTicks;
    codec.maxSlicePayloadBytes = protocol::kMaxSnapshotPayloadBytes;
    return codec;
}

} // namespace

protocol::CatalogueEntry Replicator::entryOf(const physics::BodyState& body,
                                             const physics::ShapeCatalogue& catalogue)
{
    const std::span<const physics::ConvexHull> hulls = catalogue.hulls;
    protocol::CatalogueEntry out;
    out.id = body.id.index;
    out.generation = body.id.generation;
    const physics::Shape& shape = body.shape;
    out.shape = protocol::toShapeKind(shape.type);
    switch (shape.type)
    {
    case physics::ShapeType::Hull:
        if (shape.hullIndex < hulls.size())
        {
            // Half extents of the hull's local bounding box (the vertices go as its geometry).
            physics::Vec3 lo{0, 0, 0}, hi{0, 0, 0};
            bool first = true;
            for (const physics::Vec3& v : hulls[shape.hullIndex].vertices)
            {
                lo = first ? v : physics::Vec3{std::min(lo.x, v.x), std::min(lo.y, v.y), std::min(lo.z, v.z)};
                hi = first ? v : physics::Vec3{std::max(hi.x, v.x), std::max(hi.y, v.y), std::max(hi.z, v.z)};
                first = false;
            }
            out.extent = {0.5f * (hi.x - lo.x), 0.5f * (hi.y - lo.y), 0.5f * (hi.z - lo.z)};
        }
        break;
    case physics::ShapeType::Compound:
    case physics::ShapeType::Mesh:
    case physics::ShapeType::HeightField:
    {
        // Half extents of the local bounding box (the pieces go as its geometry).
        const physics::Aabb box = physics::shapeBoundsAt(shape, physics::Transform::identity(), catalogue);
        out.extent = {0.5f * (box.max.x - box.min.x), 0.5f * (box.max.y - box.min.y),
                      0.5f * (box.max.z - box.min.z)};
        break;
    }
    case physics::ShapeType::Sphere:
    case physics::ShapeType::Capsule:
    case physics::ShapeType::Box:
        protocol::primitiveExtent(shape, out.extent);
        break;
    case physics::ShapeType::Plane:
        break;
    }
    for (float& e : out.extent)
    {
        e = std::isfinite(e) ? std::clamp(e, 0.0f, protocol::kMaxShapeExtentMeters) : 0.0f;
    }
    out.geometry = geometryOf(shape, catalogue);
    return out;
}

ClientReplication::ClientReplication(std::uint32_t maxBaselineAgeTicks, int ticksPerSnapshot_)
    : ticksPerSnapshot(ticksPerSnapshot_), catalogueSent(kCatalogueRing), geometrySent(kCatalogueRing),
      snapshots(maxBaselineAgeTicks), bytesPerChangedBody(kInitialBytesPerChangedBody)
{
}

Replicator::Replicator(const RoomConfig& config, RoomMetrics& metrics, SendToClient send)
    : m_config(config), m_metrics(metrics), m_send(std::move(send)), m_codec(codecConfigOf(config)),
      m_history(config.maxBaselineAgeTicks), m_encoder(m_codec)
{
}

bool Replicator::owns(const ClientReplication& client, std::uint32_t id, std::uint32_t generation) const
{
    const physics::BodyId body{id, generation};
    return client.owned && std::find(client.owned->begin(), client.owned->end(), body) != client.owned->end();
}

void Replicator::addClient(ClientReplication& client) const
{
    for (std::uint32_t id = 0; id < m_catalogue.size(); ++id)
    {
        if (m_catalogue[id].version != 0 && !m_catalogue[id].entry.removed)
        {
            client.catalogueDirty.emplace(id, ClientReplication::PendingCatalogue{});
        }
    }
}

void Replicator::onAcked(ClientReplication& client, std::uint16_t sequence) const
{
    client.snapshots.onAcked(sequence);
    onGeometryAcked(client, sequence);
    auto& [sentSequence, records] = client.catalogueSent[sequence % kCatalogueRing];
    if (records.empty() || sentSequence != sequence)
    {
        return;
    }
    for (const ClientReplication::CatalogueRecord& r : records)
    {
        const auto dirty = client.catalogueDirty.find(r.id);
        if (dirty != client.catalogueDirty.end() && r.id < m_catalogue.size() &&
            m_catalogue[r.id].version == r.version)
        {
            client.catalogueDirty.erase(dirty);
        }
    }
    records.clear();
}

void Replicator::charge(ClientReplication& client, std::size_t bytes) const
{
    if (m_config.maxClientKbps > 0)
    {
        client.budgetTokens -= static_cast<double>(bytes);
    }
}

// ---- Catalogue
// ---------------------------------------------------------------------------------------------

void Replicator::refreshCatalogue(const physics::World& world, std::uint64_t tick,
                                  std::span<ClientReplication* const> clients)
{
    // One pass over the bodies: a new (id, generation) or a changed shape bumps the slot's version, a slot
    // not seen this pass lost its body. Each change marks the id dirty for every client.
    const std::uint64_t pass = tick;
    auto markDirty = [&](std::uint32_t id)
    {
        for (ClientReplication* client : clients)
        {
            client->catalogueDirty[id]; // keeps sentVersion/sentTime if already pending: resent as due
        }
    };
    const physics::ShapeCatalogue catalogue = world.catalogue();
    world.forEachBody(
        [&](const physics::BodyState& body)
        {
            const std::uint32_t id = body.id.index;
            if (id >= m_catalogue.size())
            {
                m_catalogue.resize(static_cast<std::size_t>(id) + 1);
            }
            CatalogueSlot& slot = m_catalogue[id];
            slot.seenTick = pass;
            if (slot.version != 0 && slot.entry.generation == body.id.generation && !slot.entry.removed)
            {
                return; // shapes of live bodies do not change
            }
            if (slot.version != 0 && !slot.entry.removed)
            {
                countGeometryUse(slot.entry, -1);
            }
            slot.entry = entryOf(body, catalogue);
            countGeometryUse(slot.entry, +1);
            slot.version = ++m_catalogueVersion;
            markDirty(id);
        });
    for (std::uint32_t id = 0; id < m_catalogue.size(); ++id)
    {
        CatalogueSlot& slot = m_catalogue[id];
        if (slot.version != 0 && slot.seenTick != pass && !slot.entry.removed)
        {
            countGeometryUse(slot.entry, -1);
            slot.entry.removed = true;
            slot.version = ++m_catalogueVersion;
            markDirty(id);
        }
    }
}

void Replicator::touchEntry(std::uint32_t id, std::span<ClientReplication* const> clients)
{
    // A body made since the last refresh has no slot yet: its first entry is written with the owner as it
    // then is.
    if (id >= m_catalogue.size() || m_catalogue[id].version == 0)
    {
        return;
    }
    m_catalogue[id].version = ++m_catalogueVersion;
    for (ClientReplication* client : clients)
    {
        client->catalogueDirty[id];
    }
}

void Replicator::forgetBodies(std::span<ClientReplication* const> clients)
{
    // A new body may reuse an old id and generation with another shape: every live slot is marked removed
    // (a new version), and the next refresh gives each body of the new world a version again.
    m_geometryByIndex.clear(); // catalogue indices of the new world name other geometry
    for (CatalogueSlot& slot : m_catalogue)
    {
        if (slot.version != 0 && !slot.entry.removed)
        {
            countGeometryUse(slot.entry, -1);
            slot.entry.removed = true;
            slot.version = ++m_catalogueVersion;
        }
    }
    for (std::uint32_t id = 0; id < m_catalogue.size(); ++id)
    {
        if (m_catalogue[id].version != 0)
        {
            for (ClientReplication* client : clients)
            {
                client->catalogueDirty[id];
            }
        }
    }
    // Geometry no body uses any more goes, so that loading scene after scene does not keep every one: a
    // client still receiving it stops (and is sent it afresh should a later world name it again); one that
    // has it complete keeps its copy, and its hash stays known to it.
    for (auto it = m_geometry.begin(); it != m_geometry.end();)
    {
        if (it->second.bodies != 0)
        {
            ++it;
            continue;
        }
        for (ClientReplication* client : clients)
        {
            auto& queue = client->geometryQueue;
            for (auto pending = queue.begin(); pending != queue.end();)
            {
                if (pending->hash == it->first)
                {
                    client->geometryKnown.erase(it->first);
                    pending = queue.erase(pending);
                }
                else
                {
                    ++pending;
                }
            }
        }
        it = m_geometry.erase(it);
    }
}

void Replicator::sendCatalogue(ClientReplication& client, double now)
{
    int datagrams = 0;
    auto it = client.catalogueDirty.begin();
    while (it != client.catalogueDirty.end() && datagrams < m_config.maxCatalogueDatagramsPerTick)
    {
        m_catalogueScratch.clear();
        std::vector<ClientReplication::CatalogueRecord> records;
        bool anyGeometry = false;
        for (; it != client.catalogueDirty.end() &&
               m_catalogueScratch.size() < protocol::kMaxCatalogueEntriesPerDatagram;
             ++it)
        {
            const CatalogueSlot& slot = m_catalogue[it->first];
            ClientReplication::PendingCatalogue& pending = it->second;
            const bool due = pending.sentVersion != slot.version ||
                             now - pending.sentTime >= m_config.catalogueResendSeconds;
            if (!due)
            {
                continue;
            }
            // A datagram carrying geometry hashes holds fewer entries (8 more bytes each).
            const bool withGeometry = anyGeometry || (slot.entry.geometry != 0 && !slot.entry.removed);
            if (withGeometry && m_catalogueScratch.size() >= protocol::kMaxCatalogueEntriesWithGeometry)
            {
                break;
            }
            anyGeometry = withGeometry;
            if (slot.entry.geometry != 0 && !slot.entry.removed)
            {
                nameGeometry(client, slot.entry.geometry);
            }
            m_metrics.catalogueEntriesResent += pending.sentVersion == slot.version ? 1 : 0;
            pending.sentVersion = slot.version;
            pending.sentTime = now;
            m_catalogueScratch.push_back(slot.entry);
            m_catalogueScratch.back().owned =
                !slot.entry.removed && owns(client, slot.entry.id, slot.entry.generation);
            if (slot.entry.removed)
            {
                m_catalogueScratch.back().geometry = 0;
            }
            records.push_back({it->first, slot.version});
        }
        if (m_catalogueScratch.empty())
        {
            break;
        }
        const protocol::HeaderFields header = client.acks->nextOutgoing();
        m_send(client, m_writer.catalogue(header, m_catalogueScratch));
        ++m_metrics.catalogueDatagrams;
        m_metrics.catalogueEntriesSent += m_catalogueScratch.size();
        client.catalogueSent[header.sequence % kCatalogueRing] = {header.sequence, std::move(records)};
        ++datagrams;
    }
}

// ---- Snapshots
// ---------------------------------------------------------------------------------------------

void Replicator::beginTick()
{
    m_sharedCount = 0;
    m_sharedStructuredCount = 0;
}

protocol::QuantizedBody quantizeBodyState(const protocol::PositionQuantization& quantization,
                                          const physics::BodyState& body)
{
    const physics::Transform& xf = body.transform;
    const bool atRest = body.type == physics::BodyType::Static || body.sleeping ||
                        (lengthSquared(body.linearVelocity) < kRestSpeedSquared &&
                         lengthSquared(body.angularVelocity) < kRestSpeedSquared);
    return protocol::quantizeBody(quantization, body.id.index, body.id.generation, atRest,
                                  {xf.p.x, xf.p.y, xf.p.z}, {xf.q.x, xf.q.y, xf.q.z, xf.q.w});
}

void Replicator::captureSnapshot(const physics::World& world, std::uint64_t tick)
{
    std::vector<protocol::QuantizedBody>& bodies = m_history.begin(tick);
    world.forEachBody(
        [&](const physics::BodyState& body)
        {
            bodies.push_back(quantizeBodyState(m_codec.position, body));
            // Structured clients may ask for velocities: those of the newest capture, by id.
            if (body.id.index >= m_velocities.size())
            {
                m_velocities.resize(static_cast<std::size_t>(body.id.index) + 1);
            }
            const physics::Vec3& v = body.linearVelocity;
            const physics::Vec3& w = body.angularVelocity;
            m_velocities[body.id.index] = {{v.x, v.y, v.z}, {w.x, w.y, w.z}};
        });
    m_history.commit(); // forEachBody visits slots in increasing order: sorted by id
}

const protocol::SnapshotFrame* Replicator::sentFrame(const ClientReplication& client,
                                                     std::uint64_t tick) const
{
    return client.sentFrames ? client.sentFrames->find(tick) : m_history.find(tick);
}

bool Replicator::encode(const protocol::SnapshotFrame& current, const protocol::SnapshotFrame* baseline,
                        const protocol::SnapshotFrame* reference, SharedEncoding& out, std::uint32_t clientId)
{
    const double start = m_profileClock ? m_profileClock() : 0.0;
    const protocol::CodecError error = m_encoder.encode(current, baseline, reference);
    ++m_metrics.snapshotEncodes;
    if (m_profileClock)
    {
        m_metrics.encodeSeconds += m_profileClock() - start;
    }
    if (error != protocol::CodecError::None)
    {
        ++m_metrics.snapshotEncodeErrors;
        spdlog::error("snapshot {} for client {}: encoder refused: {}", current.tick, clientId,
                      protocol::codecErrorName(error));
        return false;
    }
    out.identicalToBaseline = m_encoder.stats().identicalToBaseline;
    const auto slices = m_encoder.slices();
    out.sliceCount = slices.size();
    if (out.slices.size() < slices.size())
    {
        out.slices.resize(slices.size());
    }
    for (std::size_t i = 0; i < slices.size(); ++i)
    {
        out.slices[i].assign(slices[i].payload.begin(), slices[i].payload.end());
    }
    return true;
}

void Replicator::sendSnapshot(ClientReplication& client, double now, double tickSeconds)
{
    const protocol::SnapshotFrame* current = m_history.newest();
    if (current == nullptr)
    {
        return;
    }
    const bool budgeted = m_config.maxClientKbps > 0;
    const protocol::SnapshotFrame* baseline = nullptr;
    const protocol::SnapshotFrame* reference = nullptr;
    bool exact = true; // the frames involved are the simulation's own: the encoding can be shared
    // A requested full snapshot was allowed by the pacing when the request came (requestFullSnapshot).
    const bool requestedFull = client.fullSnapshotRequested;
    if (budgeted)
    {
        exact = chooseBudgeted(client, current, baseline, reference, now, requestedFull);
    }
    else if (!requestedFull)
    {
        client.snapshots.choose(m_history, current->tick, baseline, reference);
    }
    if (baseline == nullptr && !requestedFull && client.snapshots.sentAny &&
        static_cast<double>(current->tick - client.lastFullTick) * tickSeconds <
            m_config.fullSnapshotResendSeconds)
    {
        // The client holds nothing yet and a full snapshot is on its way: do not flood it with more.
        ++m_metrics.snapshotsSkipped;
        return;
    }
    const double serverTime = static_cast<double>(current->tick) * tickSeconds;
    const SharedEncoding* encoding = nullptr;
    const protocol::StructuredSnapshotEncoder* structured = nullptr;
    if (client.structured)
    {
        structured = &cutStructured(client, *current, baseline, exact, serverTime);
    }
    else
    {
        const std::array<std::uint64_t, 3> key{current->tick, baseline ? baseline->tick : 0,
                                               reference ? reference->tick : 0};
        if (exact)
        {
            for (std::size_t i = 0; i < m_sharedCount; ++i)
            {
                encoding = m_shared[i].key == key ? &m_shared[i] : encoding;
            }
        }
        if (encoding == nullptr)
        {
            if (exact && m_sharedCount == m_shared.size())
            {
                m_shared.emplace_back();
            }
            SharedEncoding& slot = exact ? m_shared[m_sharedCount] : m_private;
            slot.key = key;
            if (!encode(*current, baseline, reference, slot, client.clientId))
            {
                return;
            }
            m_sharedCount += exact ? 1 : 0;
            encoding = &slot;
        }
    }
    protocol::SnapshotSendState& state = client.snapshots;
    const bool identical = structured ? structured->identicalToBaseline() : encoding->identicalToBaseline;
    if (identical && state.sentAny &&
        current->tick - state.lastSentTick < static_cast<std::uint64_t>(m_config.idleHeartbeatTicks))
    {
        ++m_metrics.snapshotsSkipped; // the client already has this state
        return;
    }
    state.sentAny = true;
    state.lastSentTick = current->tick;
    const std::size_t bytes = sendSlices(client, current->tick, serverTime, encoding, structured);
    if (budgeted && baseline != nullptr)
    {
        // Learn what a changed body costs this client, for the next choice (composite: what it was sent).
        std::size_t changed = 0;
        std::size_t j = 0;
        for (const protocol::QuantizedBody& body : client.composite)
        {
            while (j < baseline->bodies.size() && baseline->bodies[j].id < body.id)
            {
                ++j;
            }
            changed += (j < baseline->bodies.size() && baseline->bodies[j] == body) ? 0 : 1;
        }
        if (changed > 0)
        {
            const double perBody = std::max(1.0, (static_cast<double>(bytes) - kSnapshotOverheadBytes) /
                                                     static_cast<double>(changed));
            client.bytesPerChangedBody = (1.0 - kBytesPerBodySmoothing) * client.bytesPerChangedBody +
                                         kBytesPerBodySmoothing * perBody;
        }
    }
    ++m_metrics.snapshotsSent;
    m_metrics.fullSnapshots += baseline == nullptr ? 1 : 0;
    m_metrics.fullSnapshotsOnRequest += requestedFull ? 1 : 0;
    if (baseline == nullptr)
    {
        client.lastFullTick = current->tick;
        client.fullSnapshotRequested = false; // any full snapshot answers a pending request
    }
}

const protocol::StructuredSnapshotEncoder& Replicator::cutStructured(const ClientReplication& client,
                                                                     const protocol::SnapshotFrame& current,
                                                                     const protocol::SnapshotFrame* baseline,
                                                                     bool exact, double serverTime)
{
    const std::array<std::uint64_t, 3> key{current.tick, baseline ? baseline->tick + 1 : 0,
                                           client.velocities ? 1u : 0u};
    if (exact)
    {
        for (std::size_t i = 0; i < m_sharedStructuredCount; ++i)
        {
            if (m_sharedStructured[i]->key == key)
            {
                return m_sharedStructured[i]->encoder;
            }
        }
    }
    protocol::StructuredSnapshotEncoder* encoder = &m_privateStructured;
    if (exact)
    {
        if (m_sharedStructuredCount == m_sharedStructured.size())
        {
            m_sharedStructured.push_back(std::make_unique<SharedStructured>());
        }
        SharedStructured& slot = *m_sharedStructured[m_sharedStructuredCount++];
        slot.key = key;
        encoder = &slot.encoder;
    }
    const double start = m_profileClock ? m_profileClock() : 0.0;
    encoder->encode(current, baseline, serverTime, m_velocities, client.velocities);
    ++m_metrics.snapshotEncodes;
    if (m_profileClock)
    {
        m_metrics.encodeSeconds += m_profileClock() - start;
    }
    return *encoder;
}

std::size_t Replicator::sendSlices(ClientReplication& client, std::uint64_t tick, double serverTime,
                                   const SharedEncoding* encoding,
                                   const protocol::StructuredSnapshotEncoder* structured)
{
    const std::size_t count = structured ? structured->slices().size() : encoding->sliceCount;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < count; ++i)
    {
        const protocol::HeaderFields header = client.acks->nextOutgoing();
        const auto datagram = structured ? m_writer.structuredSnapshot(header, structured->slices()[i])
                                         : m_writer.snapshot(header, tick, serverTime, encoding->slices[i]);
        bytes += datagram.size();
        m_send(client, datagram);
        client.snapshots.onSliceSent(tick, header.sequence, static_cast<std::uint32_t>(count));
        ++m_metrics.snapshotDatagrams;
    }
    return bytes;
}

void Replicator::requestFullSnapshot(ClientReplication& client, std::uint64_t tick, double tickSeconds)
{
    ++m_metrics.fullSnapshotRequests;
    if (client.fullSnapshotRequested)
    {
        return; // one is due already
    }
    // The pacing of full snapshots (STANDARD.md 6.1) bounds requests too: a client that asks with every
    // datagram gets no more than one per fullSnapshotResendSeconds.
    if (client.snapshots.sentAny && tick >= client.lastFullTick &&
        static_cast<double>(tick - client.lastFullTick) * tickSeconds < m_config.fullSnapshotResendSeconds)
    {
        ++m_metrics.fullSnapshotRequestsRefused;
        return;
    }
    client.fullSnapshotRequested = true;
}

} // namespace polytope::server

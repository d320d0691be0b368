// polytope-server: geometry on the wire (protocol/STANDARD.md section 12), the Replicator's part.
//
// Storing: the first body whose shape is a hull, mesh, heightfield or compound makes that engine catalogue
// entry's Geometry FlatBuffer (protocol/geometry.h) and its hash; the room keeps the bytes by hash, so bodies
// sharing a shape, and equal shapes under different engine indices, share one geometry.
//
// Sending: a catalogue entry naming a geometry queues that hash for the client the first time only. Each
// GeometrySlice datagram carries one slice; a slice is resent after geometryResendSeconds until the datagram
// that carried it is acknowledged. Pacing: a token bucket per client filled at geometryShare of the client's
// maxClientKbps (or at geometryKbpsWithoutBudget when there is no budget), holding budgetBurstSeconds of it
// and at least one datagram. Every geometry datagram is also charged to the snapshot budget (Room::send), so
// geometry and snapshots together stay within maxClientKbps and snapshots keep at least 1 - geometryShare
// of it. Geometry goes after the tick's snapshots, so within a tick snapshots have the first claim.
#include "polytope/physics/heightfield.h"
#include "polytope/physics/triangle_mesh.h"
#include "polytope/protocol/geometry.h"
#include "polytope/protocol/shape_kind.h"
#include "polytope/server/replication.h"

#include <algorithm>

namespace polytope::server
{
namespace
{
std::array<float, 3> toArray(const physics::Vec3& v)
{
    return {v.x, v.y, v.z};
}

protocol::HullGeometry hullGeometryOf(const physics::ConvexHull& hull)
{
    protocol::HullGeometry out;
    out.vertices.reserve(hull.vertices.size());
    for (const physics::Vec3& v : hull.vertices)
    {
        out.vertices.push_back(toArray(v));
    }
    for (const physics::HullFace& face : hull.faces)
    {
        out.faceSizes.push_back(static_cast<std::uint8_t>(face.indexCount));
        for (std::uint16_t k = 0; k < face.indexCount; ++k)
        {
            out.faceIndices.push_back(static_cast<std::uint8_t>(hull.faceVertices[face.firstIndex + k]));
        }
    }
    return out;
}

bool hullFits(const physics::ConvexHull& hull)
{
    // The engine's hulls have at most 255 vertices; a face loop is a byte count.
    if (hull.vertices.size() < 4 || hull.vertices.size() > protocol::kMaxGeometryHullVertices ||
        hull.faces.size() < 4 || hull.faces.size() > protocol::kMaxGeometryHullFaces)
    {
        return false;
    }
    return std::all_of(hull.faces.begin(), hull.faces.end(),
                       [](const physics::HullFace& f) { return f.indexCount >= 3 && f.indexCount <= 255; });
}

/// The geometry of a shape, or false when it has none or the wire cannot carry it.
bool geometryFromShape(const physics::Shape& shape, const physics::ShapeCatalogue& catalogue,
                       protocol::Geometry& out)
{
    out.kind = protocol::toShapeKind(shape.type);
    switch (shape.type)
    {
    case physics::ShapeType::Hull:
        if (shape.hullIndex >= catalogue.hulls.size() || !hullFits(catalogue.hulls[shape.hullIndex]))
        {
            return false;
        }
        out.hull = hullGeometryOf(catalogue.hulls[shape.hullIndex]);
        return true;
    case physics::ShapeType::Mesh:
    {
        if (shape.catalogueIndex >= catalogue.meshes.size() ||
            catalogue.meshes[shape.catalogueIndex] == nullptr)
        {
            return false;
        }
        const physics::TriangleMesh& mesh = *catalogue.meshes[shape.catalogueIndex];
        // Estimate first: a mesh too large for the wire is not copied at all.
        if (std::size_t(mesh.vertexCount()) * 12 + std::size_t(mesh.triangleCount()) * 12 + 64 >
            protocol::kMaxGeometryBytes)
        {
            return false;
        }
        for (const physics::Vec3& v : mesh.vertices())
        {
            out.mesh.vertices.push_back(toArray(v));
        }
        for (std::uint32_t t = 0; t < mesh.triangleCount(); ++t)
        {
            const auto& indices = mesh.triangleVertexIndices(t);
            out.mesh.indices.insert(out.mesh.indices.end(), indices.begin(), indices.end());
        }
        return mesh.triangleCount() > 0;
    }
    case physics::ShapeType::HeightField:
    {
        if (shape.catalogueIndex >= catalogue.heightFields.size() ||
            catalogue.heightFields[shape.catalogueIndex] == nullptr)
        {
            return false;
        }
        const physics::HeightField& field = *catalogue.heightFields[shape.catalogueIndex];
        if (field.empty() ||
            std::size_t(field.sampleCountX()) * field.sampleCountZ() * 2 + field.cellCount() / 8 + 128 >
                protocol::kMaxGeometryBytes)
        {
            return false;
        }
        protocol::HeightFieldGeometry& h = out.heightField;
        h.samplesX = field.sampleCountX();
        h.samplesZ = field.sampleCountZ();
        h.cellSizeX = field.cellSizeX();
        h.cellSizeZ = field.cellSizeZ();
        h.heightScale = field.heightScale();
        h.heightOffset = field.heightOffset();
        h.samples.reserve(std::size_t(h.samplesX) * h.samplesZ);
        for (std::uint32_t iz = 0; iz < h.samplesZ; ++iz)
        {
            for (std::uint32_t ix = 0; ix < h.samplesX; ++ix)
            {
                h.samples.push_back(field.sample(ix, iz));
            }
        }
        if (field.hasHoles())
        {
            h.holes.assign((field.cellCount() + 7) / 8, 0);
            for (std::uint32_t cell = 0; cell < field.cellCount(); ++cell)
            {
                if (field.isHole(cell))
                {
                    h.holes[cell >> 3] = static_cast<std::uint8_t>(h.holes[cell >> 3] | (1u << (cell & 7u)));
                }
            }
        }
        return true;
    }
    case physics::ShapeType::Compound:
    {
        if (shape.catalogueIndex >= catalogue.compounds.size())
        {
            return false;
        }
        const physics::CompoundShape& compound = catalogue.compounds[shape.catalogueIndex];
        if (compound.children.empty() || compound.children.size() > protocol::kMaxGeometryCompoundChildren)
        {
            return false;
        }
        for (const physics::CompoundChild& c : compound.children)
        {
            protocol::CompoundChildGeometry child;
            child.kind = protocol::toShapeKind(c.shape.type);
            child.position = toArray(c.transform.p);
            child.orientation = {c.transform.q.x, c.transform.q.y, c.transform.q.z, c.transform.q.w};
            switch (c.shape.type)
            {
            case physics::ShapeType::Sphere:
            case physics::ShapeType::Capsule:
            case physics::ShapeType::Box:
                protocol::primitiveExtent(c.shape, child.extent);
                break;
            case physics::ShapeType::Hull:
                if (c.shape.hullIndex >= catalogue.hulls.size() ||
                    !hullFits(catalogue.hulls[c.shape.hullIndex]))
                {
                    return false;
                }
                child.hull = static_cast<std::uint8_t>(out.compound.hulls.size());
                out.compound.hulls.push_back(hullGeometryOf(catalogue.hulls[c.shape.hullIndex]));
                break;
            default:
                return false; // compounds hold convex children only
            }
            out.compound.children.push_back(child);
        }
        return true;
    }
    default:
        return false;
    }
}
} // namespace

std::uint64_t Replicator::geometryOf(const physics::Shape& shape, const physics::ShapeCatalogue& catalogue)
{
    if (!protocol::isGeometryKind(protocol::toShapeKind(shape.type)))
    {
        return 0;
    }
    const std::uint32_t index =
        shape.type == physics::ShapeType::Hull ? shape.hullIndex : shape.catalogueIndex;
    const std::pair<int, std::uint32_t> key{static_cast<int>(shape.type), index};
    if (const auto known = m_geometryByIndex.find(key); known != m_geometryByIndex.end())
    {
        return known->second;
    }
    std::uint64_t hash = 0;
    protocol::Geometry geometry;
    if (geometryFromShape(shape, catalogue, geometry))
    {
        std::vector<std::uint8_t> bytes = protocol::encodeGeometry(geometry);
        if (bytes.size() <= protocol::kMaxGeometryBytes)
        {
            hash = protocol::geometryHash(bytes);
            StoredGeometry& stored = m_geometry[hash];
            if (stored.bytes.empty())
            {
                stored.kind = geometry.kind;
                stored.bytes = std::move(bytes);
            }
        }
    }
    m_geometryByIndex.emplace(key, hash);
    return hash;
}

void Replicator::countGeometryUse(const protocol::CatalogueEntry& entry, int change)
{
    if (entry.geometry == 0)
    {
        return;
    }
    const auto it = m_geometry.find(entry.geometry);
    if (it != m_geometry.end())
    {
        it->second.bodies = static_cast<std::uint32_t>(static_cast<int>(it->second.bodies) + change);
    }
}

void Replicator::nameGeometry(ClientReplication& client, std::uint64_t hash) const
{
    const auto stored = m_geometry.find(hash);
    if (stored == m_geometry.end() || !client.geometryKnown.insert(hash).second)
    {
        return;
    }
    const std::uint32_t slices = protocol::geometrySliceCount(stored->second.bytes.size());
    ClientReplication::PendingGeometry pending;
    pending.hash = hash;
    pending.sentTime.assign(slices, -1.0);
    pending.acked.assign(slices, false);
    pending.unacked = slices;
    client.geometryQueue.push_back(std::move(pending));
}

void Replicator::onGeometryAcked(ClientReplication& client, std::uint16_t sequence) const
{
    ClientReplication::GeometryRecord& record = client.geometrySent[sequence % client.geometrySent.size()];
    if (!record.valid || record.sequence != sequence)
    {
        return;
    }
    record.valid = false;
    for (auto it = client.geometryQueue.begin(); it != client.geometryQueue.end(); ++it)
    {
        if (it->hash != record.hash)
        {
            continue;
        }
        if (record.slice < it->acked.size() && !it->acked[record.slice])
        {
            it->acked[record.slice] = true;
            if (--it->unacked == 0)
            {
                ++m_metrics.geometriesDelivered;
                client.geometryQueue.erase(it);
            }
        }
        return;
    }
}

void Replicator::sendGeometry(ClientReplication& client, double now)
{
    if (client.geometryQueue.empty())
    {
        client.geometryTime = now; // an idle bucket does not save up beyond its burst anyway
        return;
    }
    const double kbps = m_config.maxClientKbps > 0 ? m_config.maxClientKbps * m_config.geometryShare
                                                   : static_cast<double>(m_config.geometryKbpsWithoutBudget);
    const double rate = kbps * 1000.0 / 8.0; // bytes per second
    const double burst =
        std::max(rate * m_config.budgetBurstSeconds, static_cast<double>(protocol::kMaxDatagramBytes));
    if (client.geometryTime < 0.0)
    {
        client.geometryTokens = burst;
    }
    else
    {
        client.geometryTokens =
            std::min(burst, client.geometryTokens + rate * std::max(0.0, now - client.geometryTime));
    }
    client.geometryTime = now;
    int datagrams = 0;
    for (ClientReplication::PendingGeometry& pending : client.geometryQueue)
    {
        const StoredGeometry& stored = m_geometry.at(pending.hash);
        const std::size_t total = stored.bytes.size();
        for (std::uint32_t slice = 0; slice < pending.acked.size(); ++slice)
        {
            if (client.geometryTokens <= 0.0 || datagrams >= m_config.maxGeometryDatagramsPerTick)
            {
                return;
            }
            const double sent = pending.sentTime[slice];
            if (pending.acked[slice] || (sent >= 0.0 && now - sent < m_config.geometryResendSeconds))
            {
                continue;
            }
            m_metrics.geometrySlicesResent += sent >= 0.0 ? 1 : 0;
            const std::size_t offset = std::size_t(slice) * protocol::kGeometrySliceBytes;
            const std::size_t length = std::min(protocol::kGeometrySliceBytes, total - offset);
            const protocol::HeaderFields header = client.acks->nextOutgoing();
            const std::span<const std::uint8_t> datagram = m_writer.geometrySlice(
                header, pending.hash, stored.kind, static_cast<std::uint32_t>(total),
                static_cast<std::uint32_t>(offset), std::span(stored.bytes).subspan(offset, length));
            m_send(client, datagram);
            client.geometryTokens -= static_cast<double>(datagram.size());
            client.geometryBytesSent += datagram.size();
            ++client.geometryDatagramsSent;
            ++m_metrics.geometryDatagrams;
            m_metrics.geometryBytes += datagram.size();
            pending.sentTime[slice] = now;
            client.geometrySent[header.sequence % client.geometrySent.size()] = {header.sequence, true,
                                                                                 pending.hash, slice};
            ++datagrams;
        }
    }
}

} // namespace polytope::server

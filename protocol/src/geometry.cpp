#include "polytope/protocol/geometry.h"

#include "polytope/protocol/sodium_ready.h"
#include "polytope/wire/geometry_generated.h"

#include <sodium.h>

#include <cmath>
#include <cstring>

namespace polytope::protocol
{
namespace geo = ::polytope::geometry;

namespace
{
/// Hashes of geometry refused whole remembered, so that their later slices are dropped without work.
constexpr std::size_t kMaxRefusedHashes = 4096;

bool finite(const geo::Vec3f& v)
{
    return std::isfinite(v.x()) && std::isfinite(v.y()) && std::isfinite(v.z());
}

std::vector<geo::Vec3f> toWire(const std::vector<std::array<float, 3>>& points)
{
    std::vector<geo::Vec3f> out;
    out.reserve(points.size());
    for (const auto& p : points)
    {
        out.emplace_back(p[0], p[1], p[2]);
    }
    return out;
}

flatbuffers::Offset<geo::Hull> writeHull(flatbuffers::FlatBufferBuilder& builder, const HullGeometry& hull)
{
    const auto vertices = toWire(hull.vertices);
    const auto v = builder.CreateVectorOfStructs(vertices.data(), vertices.size());
    const auto sizes = builder.CreateVector(hull.faceSizes);
    const auto indices = builder.CreateVector(hull.faceIndices);
    return geo::CreateHull(builder, v, sizes, indices);
}

bool readHull(const geo::Hull* in, HullGeometry& out)
{
    if (!in || !in->vertices() || !in->face_sizes() || !in->face_indices())
    {
        return false;
    }
    const auto& vertices = *in->vertices();
    const auto& sizes = *in->face_sizes();
    const auto& indices = *in->face_indices();
    if (vertices.size() < 4 || vertices.size() > kMaxGeometryHullVertices || sizes.size() < 4 ||
        sizes.size() > kMaxGeometryHullFaces)
    {
        return false;
    }
    std::size_t loopTotal = 0;
    for (const std::uint8_t s : sizes)
    {
        if (s < 3)
        {
            return false;
        }
        loopTotal += s;
    }
    if (loopTotal != indices.size())
    {
        return false;
    }
    out.vertices.clear();
    for (const geo::Vec3f* p : vertices)
    {
        if (!finite(*p))
        {
            return false;
        }
        out.vertices.push_back({p->x(), p->y(), p->z()});
    }
    for (const std::uint8_t i : indices)
    {
        if (i >= vertices.size())
        {
            return false;
        }
    }
    out.faceSizes.assign(sizes.begin(), sizes.end());
    out.faceIndices.assign(indices.begin(), indices.end());
    return true;
}

bool readMesh(const geo::Mesh* in, MeshGeometry& out)
{
    if (!in || !in->vertices() || !in->indices())
    {
        return false;
    }
    const auto& vertices = *in->vertices();
    const auto& indices = *in->indices();
    if (vertices.size() < 3 || indices.size() < 3 || indices.size() % 3 != 0)
    {
        return false;
    }
    out.vertices.clear();
    out.vertices.reserve(vertices.size());
    for (const geo::Vec3f* p : vertices)
    {
        if (!finite(*p))
        {
            return false;
        }
        out.vertices.push_back({p->x(), p->y(), p->z()});
    }
    out.indices.assign(indices.begin(), indices.end());
    for (const std::uint32_t i : out.indices)
    {
        if (i >= vertices.size())
        {
            return false;
        }
    }
    return true;
}

bool readHeightField(const geo::HeightField* in, HeightFieldGeometry& out)
{
    if (!in || !in->samples())
    {
        return false;
    }
    const std::uint32_t nx = in->samples_x();
    const std::uint32_t nz = in->samples_z();
    if (nx < 2 || nz < 2 || nx > kMaxGeometryHeightFieldSide || nz > kMaxGeometryHeightFieldSide)
    {
        return false;
    }
    const std::size_t cells = std::size_t(nx - 1) * (nz - 1);
    const std::size_t holeBytes = in->holes() ? in->holes()->size() : 0;
    if (in->samples()->size() != std::size_t(nx) * nz || (holeBytes != 0 && holeBytes != (cells + 7) / 8))
    {
        return false;
    }
    const float scalars[] = {in->cell_size_x(), in->cell_size_z(), in->height_scale(), in->height_offset()};
    for (const float v : scalars)
    {
        if (!std::isfinite(v))
        {
            return false;
        }
    }
    if (!(in->cell_size_x() > 0.0f && in->cell_size_z() > 0.0f && in->height_scale() > 0.0f))
    {
        return false;
    }
    out.samplesX = nx;
    out.samplesZ = nz;
    out.cellSizeX = in->cell_size_x();
    out.cellSizeZ = in->cell_size_z();
    out.heightScale = in->height_scale();
    out.heightOffset = in->height_offset();
    out.samples.assign(in->samples()->begin(), in->samples()->end());
    out.holes.clear();
    if (holeBytes != 0)
    {
        out.holes.assign(in->holes()->begin(), in->holes()->end());
    }
    return true;
}

bool readCompound(const geo::Compound* in, CompoundGeometry& out)
{
    if (!in || !in->children() || in->children()->size() == 0 ||
        in->children()->size() > kMaxGeometryCompoundChildren ||
        (in->hulls() && in->hulls()->size() > kMaxGeometryCompoundChildren))
    {
        return false;
    }
    out.hulls.clear();
    if (in->hulls())
    {
        for (const geo::Hull* hull : *in->hulls())
        {
            out.hulls.emplace_back();
            if (!readHull(hull, out.hulls.back()))
            {
                return false;
            }
        }
    }
    out.children.clear();
    for (const geo::CompoundChild* c : *in->children())
    {
        CompoundChildGeometry child;
        if (c->kind() > static_cast<std::uint8_t>(wire::ShapeKind::Hull) || !finite(c->position()) ||
            !finite(c->extent()))
        {
            return false;
        }
        child.kind = static_cast<wire::ShapeKind>(c->kind());
        const geo::Quatf& q = c->orientation();
        const float norm = q.x() * q.x() + q.y() * q.y() + q.z() * q.z() + q.w() * q.w();
        if (!std::isfinite(norm) || std::fabs(norm - 1.0f) > 1e-3f)
        {
            return false;
        }
        if (child.kind == wire::ShapeKind::Hull ? c->hull() >= out.hulls.size() : c->hull() != 0)
        {
            return false;
        }
        for (const float e : {c->extent().x(), c->extent().y(), c->extent().z()})
        {
            if (!(e >= 0.0f && e <= kMaxShapeExtentMeters))
            {
                return false;
            }
        }
        child.position = {c->position().x(), c->position().y(), c->position().z()};
        child.orientation = {q.x(), q.y(), q.z(), q.w()};
        child.extent = {c->extent().x(), c->extent().y(), c->extent().z()};
        child.hull = c->hull();
        out.children.push_back(child);
    }
    return true;
}
} // namespace

bool isGeometryKind(wire::ShapeKind kind)
{
    return kind == wire::ShapeKind::Hull || kind == wire::ShapeKind::Compound ||
           kind == wire::ShapeKind::Mesh || kind == wire::ShapeKind::HeightField;
}

std::vector<std::uint8_t> encodeGeometry(const Geometry& geometry)
{
    flatbuffers::FlatBufferBuilder builder(1024);
    flatbuffers::Offset<void> shape;
    geo::Shape type = geo::Shape::NONE;
    switch (geometry.kind)
    {
    case wire::ShapeKind::Hull:
        shape = writeHull(builder, geometry.hull).Union();
        type = geo::Shape::Hull;
        break;
    case wire::ShapeKind::Mesh:
    {
        const auto vertices = toWire(geometry.mesh.vertices);
        const auto v = builder.CreateVectorOfStructs(vertices.data(), vertices.size());
        const auto i = builder.CreateVector(geometry.mesh.indices);
        shape = geo::CreateMesh(builder, v, i).Union();
        type = geo::Shape::Mesh;
        break;
    }
    case wire::ShapeKind::HeightField:
    {
        const HeightFieldGeometry& h = geometry.heightField;
        const auto samples = builder.CreateVector(h.samples);
        const auto holes = h.holes.empty() ? 0 : builder.CreateVector(h.holes);
        shape = geo::CreateHeightField(builder, h.samplesX, h.samplesZ, h.cellSizeX, h.cellSizeZ,
                                       h.heightScale, h.heightOffset, samples, holes)
                    .Union();
        type = geo::Shape::HeightField;
        break;
    }
    case wire::ShapeKind::Compound:
    {
        std::vector<flatbuffers::Offset<geo::Hull>> hulls;
        for (const HullGeometry& hull : geometry.compound.hulls)
        {
            hulls.push_back(writeHull(builder, hull));
        }
        std::vector<geo::CompoundChild> children;
        for (const CompoundChildGeometry& c : geometry.compound.children)
        {
            children.emplace_back(
                geo::Vec3f(c.position[0], c.position[1], c.position[2]),
                geo::Quatf(c.orientation[0], c.orientation[1], c.orientation[2], c.orientation[3]),
                geo::Vec3f(c.extent[0], c.extent[1], c.extent[2]), static_cast<std::uint8_t>(c.kind), c.hull);
        }
        const auto childVector = builder.CreateVectorOfStructs(children.data(), children.size());
        const auto hullVector = builder.CreateVector(hulls);
        shape = geo::CreateCompound(builder, childVector, hullVector).Union();
        type = geo::Shape::Compound;
        break;
    }
    default:
        break;
    }
    builder.Finish(geo::CreateGeometry(builder, type, shape), geo::GeometryIdentifier());
    return {builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize()};
}

std::uint64_t geometryHash(std::span<const std::uint8_t> bytes)
{
    ensureSodium();
    std::array<unsigned char, 16> digest{};
    crypto_generichash(digest.data(), digest.size(), bytes.data(), bytes.size(), nullptr, 0);
    std::uint64_t hash = 0;
    for (int i = 7; i >= 0; --i)
    {
        hash = (hash << 8) | digest[static_cast<std::size_t>(i)];
    }
    return hash == 0 ? 1 : hash;
}

const char* geometryErrorName(GeometryError error)
{
    switch (error)
    {
    case GeometryError::None:
        return "none";
    case GeometryError::BadKind:
        return "bad_kind";
    case GeometryError::BadSize:
        return "bad_size";
    case GeometryError::BadOffset:
        return "bad_offset";
    case GeometryError::OverMemoryCap:
        return "over_memory_cap";
    case GeometryError::HashMismatch:
        return "hash_mismatch";
    case GeometryError::Malformed:
        return "malformed";
    case GeometryError::OutOfRange:
        return "out_of_range";
    case GeometryError::Count:
        break;
    }
    return "unknown";
}

GeometryError decodeGeometry(std::span<const std::uint8_t> bytes, Geometry& out)
{
    if (bytes.empty() || bytes.size() > kMaxGeometryBytes)
    {
        return GeometryError::BadSize;
    }
    std::vector<std::uint8_t> aligned;
    if (reinterpret_cast<std::uintptr_t>(bytes.data()) % 8 != 0)
    {
        aligned.assign(bytes.begin(), bytes.end());
        bytes = aligned;
    }
    if (bytes.size() < 8 || !geo::GeometryBufferHasIdentifier(bytes.data()))
    {
        return GeometryError::Malformed;
    }
    // Depth: Geometry > Compound > hulls > Hull > vector; tables: a compound's hulls and then some.
    flatbuffers::Verifier verifier(bytes.data(), bytes.size(), 8, 4 * kMaxGeometryCompoundChildren + 16);
    if (!geo::VerifyGeometryBuffer(verifier))
    {
        return GeometryError::Malformed;
    }
    const geo::Geometry* root = geo::GetGeometry(bytes.data());
    bool ok = false;
    switch (root->shape_type())
    {
    case geo::Shape::Hull:
        out.kind = wire::ShapeKind::Hull;
        ok = readHull(root->shape_as_Hull(), out.hull);
        break;
    case geo::Shape::Mesh:
        out.kind = wire::ShapeKind::Mesh;
        ok = readMesh(root->shape_as_Mesh(), out.mesh);
        break;
    case geo::Shape::HeightField:
        out.kind = wire::ShapeKind::HeightField;
        ok = readHeightField(root->shape_as_HeightField(), out.heightField);
        break;
    case geo::Shape::Compound:
        out.kind = wire::ShapeKind::Compound;
        ok = readCompound(root->shape_as_Compound(), out.compound);
        break;
    default:
        return GeometryError::BadKind;
    }
    return ok ? GeometryError::None : GeometryError::OutOfRange;
}

std::uint64_t GeometryReceiveStats::refusedTotal() const
{
    std::uint64_t total = 0;
    for (const std::uint64_t n : refused)
    {
        total += n;
    }
    return total;
}

GeometryAssembler::GeometryAssembler(std::size_t memoryCapBytes) : m_memoryCapBytes(memoryCapBytes) {}

const ReceivedGeometry* GeometryAssembler::find(std::uint64_t hash) const
{
    const auto it = m_complete.find(hash);
    return it == m_complete.end() ? nullptr : &it->second;
}

std::uint64_t GeometryAssembler::add(const wire::GeometrySlice& slice)
{
    const std::uint64_t hash = slice.hash();
    if (m_complete.count(hash) != 0)
    {
        ++m_stats.slicesDuplicate;
        return 0;
    }
    if (const auto refused = m_refusedHashes.find(hash); refused != m_refusedHashes.end())
    {
        refuse(refused->second);
        return 0;
    }
    // decodePacket checked the slice on its own (kind, sizes, offset, data length); here it must also agree
    // with the earlier slices of its hash, and fit the memory cap.
    const std::size_t total = slice.total_bytes();
    const std::size_t offset = slice.offset();
    const std::size_t length = slice.data() ? slice.data()->size() : 0;
    if (!isGeometryKind(slice.kind()))
    {
        refuse(GeometryError::BadKind);
        return 0;
    }
    if (total == 0 || total > kMaxGeometryBytes)
    {
        refuse(GeometryError::BadSize);
        return 0;
    }
    if (offset % kGeometrySliceBytes != 0 || offset >= total ||
        length != std::min(kGeometrySliceBytes, total - offset))
    {
        refuse(GeometryError::BadOffset);
        return 0;
    }
    auto it = m_partial.find(hash);
    if (it == m_partial.end())
    {
        if (total > m_memoryCapBytes - std::min(m_memoryCapBytes, m_memoryBytes))
        {
            refuse(GeometryError::OverMemoryCap);
            return 0;
        }
        Partial partial;
        partial.kind = slice.kind();
        partial.bytes.assign(total, 0);
        partial.missing = geometrySliceCount(total);
        partial.have.assign(partial.missing, false);
        m_memoryBytes += total;
        it = m_partial.emplace(hash, std::move(partial)).first;
    }
    Partial& partial = it->second;
    if (partial.bytes.size() != total)
    {
        refuse(GeometryError::BadSize);
        return 0;
    }
    if (partial.kind != slice.kind())
    {
        refuse(GeometryError::BadKind);
        return 0;
    }
    const std::size_t index = offset / kGeometrySliceBytes;
    if (partial.have[index])
    {
        ++m_stats.slicesDuplicate;
        return 0;
    }
    std::memcpy(partial.bytes.data() + offset, slice.data()->data(), length);
    partial.have[index] = true;
    --partial.missing;
    ++m_stats.slicesAccepted;
    if (partial.missing != 0)
    {
        return 0;
    }
    // Complete: it must be what it was named, and decode.
    ReceivedGeometry received;
    received.hash = hash;
    received.kind = partial.kind;
    received.bytes = std::move(partial.bytes);
    m_partial.erase(it);
    GeometryError error = GeometryError::None;
    if (geometryHash(received.bytes) != hash)
    {
        error = GeometryError::HashMismatch;
    }
    else if (const GeometryError decoded = decodeGeometry(received.bytes, received.geometry);
             decoded != GeometryError::None)
    {
        error = decoded;
    }
    else if (received.geometry.kind != received.kind)
    {
        error = GeometryError::BadKind;
    }
    if (error != GeometryError::None)
    {
        m_memoryBytes -= received.bytes.size();
        refuse(error);
        if (m_refusedHashes.size() >= kMaxRefusedHashes)
        {
            m_refusedHashes.clear();
        }
        m_refusedHashes.emplace(hash, error);
        return 0;
    }
    ++m_stats.geometriesComplete;
    m_complete.emplace(hash, std::move(received));
    return hash;
}

} // namespace polytope::protocol

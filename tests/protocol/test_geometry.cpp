// Geometry on the wire (protocol/geometry.h): the Geometry FlatBuffer round trip, its hash, GeometrySlice
// checks in decodePacket, and the assembler's refusals, each counted and leaving everything else as it was.
#include "polytope/protocol/geometry.h"
#include "polytope/protocol/packet.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace polytope;
using protocol::GeometryError;
namespace wire = protocol::wire;

namespace
{

protocol::Geometry tetrahedron()
{
    protocol::Geometry g;
    g.kind = wire::ShapeKind::Hull;
    g.hull.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    g.hull.faceSizes = {3, 3, 3, 3};
    g.hull.faceIndices = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};
    return g;
}

protocol::Geometry bigMesh(std::uint32_t side)
{
    protocol::Geometry g;
    g.kind = wire::ShapeKind::Mesh;
    for (std::uint32_t z = 0; z < side; ++z)
    {
        for (std::uint32_t x = 0; x < side; ++x)
        {
            g.mesh.vertices.push_back({float(x), 0.01f * float(x * z), float(z)});
        }
    }
    for (std::uint32_t z = 0; z + 1 < side; ++z)
    {
        for (std::uint32_t x = 0; x + 1 < side; ++x)
        {
            const std::uint32_t a = z * side + x;
            g.mesh.indices.insert(g.mesh.indices.end(), {a, a + side, a + 1, a + 1, a + side, a + side + 1});
        }
    }
    return g;
}

/// Every GeometrySlice datagram of `bytes`, named `hash`.
std::vector<std::vector<std::uint64_t>> slicesOf(const std::vector<std::uint8_t>& bytes, std::uint64_t hash,
                                                 wire::ShapeKind kind)
{
    protocol::PacketWriter writer;
    std::vector<std::vector<std::uint64_t>> out;
    for (std::size_t offset = 0; offset < bytes.size(); offset += protocol::kGeometrySliceBytes)
    {
        const std::size_t length = std::min(protocol::kGeometrySliceBytes, bytes.size() - offset);
        const auto d = writer.geometrySlice({}, hash, kind, static_cast<std::uint32_t>(bytes.size()),
                                            static_cast<std::uint32_t>(offset),
                                            std::span(bytes).subspan(offset, length));
        std::vector<std::uint64_t> aligned((d.size() + 7) / 8 + 1);
        std::memcpy(aligned.data(), d.data(), d.size());
        aligned.back() = d.size(); // the size rides along in the last word
        out.push_back(std::move(aligned));
    }
    return out;
}

std::span<const std::uint8_t> viewOf(const std::vector<std::uint64_t>& aligned)
{
    return {reinterpret_cast<const std::uint8_t*>(aligned.data()), static_cast<std::size_t>(aligned.back())};
}

const wire::GeometrySlice& sliceOf(const std::vector<std::uint64_t>& aligned)
{
    const protocol::DecodeResult decoded = protocol::decodePacket(viewOf(aligned));
    REQUIRE(decoded.ok());
    return *decoded.packet->message_as_GeometrySlice();
}

} // namespace

TEST_CASE("geometry: each kind round-trips through its FlatBuffer, and equal geometry hashes equal",
          "[geometry]")
{
    protocol::Geometry field;
    field.kind = wire::ShapeKind::HeightField;
    field.heightField.samplesX = 3;
    field.heightField.samplesZ = 2;
    field.heightField.cellSizeX = 0.5f;
    field.heightField.cellSizeZ = 2.0f;
    field.heightField.heightScale = 0.01f;
    field.heightField.heightOffset = -1.0f;
    field.heightField.samples = {0, 100, 200, 300, 400, 500};
    field.heightField.holes = {0x2};
    protocol::Geometry compound;
    compound.kind = wire::ShapeKind::Compound;
    compound.compound.hulls.push_back(tetrahedron().hull);
    compound.compound.children.push_back(
        {wire::ShapeKind::Box, {0, 1, 0}, {0, 0, 0, 1}, {0.5f, 0.1f, 0.5f}, 0});
    compound.compound.children.push_back(
        {wire::ShapeKind::Hull, {1, 0, 0}, {0, 0.6f, 0, 0.8f}, {0, 0, 0}, 0});

    for (const protocol::Geometry& g : {tetrahedron(), bigMesh(4), field, compound})
    {
        const std::vector<std::uint8_t> bytes = protocol::encodeGeometry(g);
        CHECK(bytes == protocol::encodeGeometry(g)); // deterministic: equal geometry, equal bytes, equal hash
        CHECK(protocol::geometryHash(bytes) == protocol::geometryHash(protocol::encodeGeometry(g)));
        protocol::Geometry back;
        REQUIRE(protocol::decodeGeometry(bytes, back) == GeometryError::None);
        CHECK(back.kind == g.kind);
        CHECK(back.hull.vertices == g.hull.vertices);
        CHECK(back.hull.faceIndices == g.hull.faceIndices);
        CHECK(back.mesh.indices == g.mesh.indices);
        CHECK(back.heightField.samples == g.heightField.samples);
        CHECK(back.heightField.isHole(1) == (g.kind == wire::ShapeKind::HeightField));
        CHECK(back.compound.children.size() == g.compound.children.size());
        CHECK(protocol::encodeGeometry(back) == bytes);
    }
    CHECK(protocol::geometryHash(protocol::encodeGeometry(tetrahedron())) !=
          protocol::geometryHash(protocol::encodeGeometry(bigMesh(4))));
}

TEST_CASE("geometry: decodeGeometry refuses out-of-range contents", "[geometry]")
{
    protocol::Geometry g = tetrahedron();
    g.hull.faceIndices[5] = 9; // no vertex 9
    protocol::Geometry out;
    CHECK(protocol::decodeGeometry(protocol::encodeGeometry(g), out) == GeometryError::OutOfRange);
    g = tetrahedron();
    g.hull.faceSizes[0] = 4; // loops no longer add up
    CHECK(protocol::decodeGeometry(protocol::encodeGeometry(g), out) == GeometryError::OutOfRange);
    g = bigMesh(3);
    g.mesh.vertices[2][1] = std::numeric_limits<float>::quiet_NaN();
    CHECK(protocol::decodeGeometry(protocol::encodeGeometry(g), out) == GeometryError::OutOfRange);
    std::vector<std::uint8_t> bytes = protocol::encodeGeometry(tetrahedron());
    bytes[0] ^= 0x40; // the root offset points elsewhere
    CHECK(protocol::decodeGeometry(bytes, out) == GeometryError::Malformed);
    CHECK(protocol::decodeGeometry({}, out) == GeometryError::BadSize);
}

TEST_CASE("geometry: decodePacket checks a GeometrySlice's sizes, offset and kind", "[geometry][packet]")
{
    protocol::PacketWriter writer;
    const std::vector<std::uint8_t> data(protocol::kGeometrySliceBytes, 7);
    const auto check = [&](std::uint64_t hash, wire::ShapeKind kind, std::uint32_t total,
                           std::uint32_t offset, std::size_t length)
    {
        const auto d = writer.geometrySlice({}, hash, kind, total, offset, std::span(data).first(length));
        CHECK(d.size() <= protocol::kMaxDatagramBytes - 28); // room to seal it
        std::vector<std::uint64_t> aligned((d.size() + 7) / 8);
        std::memcpy(aligned.data(), d.data(), d.size());
        return protocol::decodePacket({reinterpret_cast<const std::uint8_t*>(aligned.data()), d.size()}).ok();
    };
    CHECK(check(5, wire::ShapeKind::Mesh, 3000, 1024, 1024));
    CHECK(check(5, wire::ShapeKind::Mesh, 3000, 2048, 952));
    CHECK_FALSE(check(0, wire::ShapeKind::Mesh, 3000, 1024, 1024));         // hash 0 names nothing
    CHECK_FALSE(check(5, wire::ShapeKind::Box, 3000, 1024, 1024));          // a box has no geometry
    CHECK_FALSE(check(5, wire::ShapeKind::Mesh, 3000, 1000, 1024));         // not on a slice boundary
    CHECK_FALSE(check(5, wire::ShapeKind::Mesh, 3000, 2048, 1024));         // longer than what is left
    CHECK_FALSE(check(5, wire::ShapeKind::Mesh, 3000, 3072, 0));            // past the end
    CHECK_FALSE(check(5, wire::ShapeKind::Mesh, 0, 0, 0));                  // empty geometry
    CHECK_FALSE(check(5, wire::ShapeKind::Mesh, (16u << 20) + 1, 0, 1024)); // over kMaxGeometryBytes

    // A catalogue with hashes: one per entry, at most kMaxCatalogueEntriesWithGeometry entries.
    std::vector<protocol::CatalogueEntry> entries(protocol::kMaxCatalogueEntriesWithGeometry);
    for (std::uint32_t i = 0; i < entries.size(); ++i)
    {
        entries[i].id = i;
        entries[i].shape = wire::ShapeKind::Hull;
        entries[i].geometry = 1000 + i;
    }
    const auto d = writer.catalogue({}, entries);
    CHECK(d.size() <= protocol::kMaxDatagramBytes - 28);
    std::vector<std::uint64_t> aligned((d.size() + 7) / 8);
    std::memcpy(aligned.data(), d.data(), d.size());
    const protocol::DecodeResult decoded =
        protocol::decodePacket({reinterpret_cast<const std::uint8_t*>(aligned.data()), d.size()});
    REQUIRE(decoded.ok());
    std::vector<protocol::CatalogueEntry> read;
    protocol::readCatalogue(*decoded.packet->message_as_Catalogue(), read);
    CHECK(read == entries);
}

TEST_CASE("geometry: the assembler takes slices in any order, and counts every refusal", "[geometry]")
{
    const std::vector<std::uint8_t> mesh = protocol::encodeGeometry(bigMesh(20));
    const std::uint64_t meshHash = protocol::geometryHash(mesh);
    const std::vector<std::uint8_t> hull = protocol::encodeGeometry(tetrahedron());
    const std::uint64_t hullHash = protocol::geometryHash(hull);
    REQUIRE(protocol::geometrySliceCount(mesh.size()) > 4);

    protocol::GeometryAssembler assembler;
    const auto meshSlices = slicesOf(mesh, meshHash, wire::ShapeKind::Mesh);
    const auto hullSlices = slicesOf(hull, hullHash, wire::ShapeKind::Hull);
    CHECK(assembler.add(sliceOf(hullSlices[0])) == hullHash);
    // Backwards, each twice: duplicates change nothing.
    std::uint64_t completed = 0;
    for (std::size_t i = meshSlices.size(); i-- > 0;)
    {
        completed = assembler.add(sliceOf(meshSlices[i]));
        CHECK(assembler.add(sliceOf(meshSlices[i])) == 0);
    }
    CHECK(completed == meshHash);
    REQUIRE(assembler.find(meshHash) != nullptr);
    CHECK(assembler.find(meshHash)->bytes == mesh);
    CHECK(assembler.find(hullHash)->geometry.hull.vertices.size() == 4);
    CHECK(assembler.stats().refusedTotal() == 0);
    CHECK(assembler.memoryBytes() == mesh.size() + hull.size());

    SECTION("bytes that do not hash to their name are refused whole")
    {
        std::vector<std::uint8_t> wrong = hull;
        wrong[wrong.size() - 1] ^= 1;
        const auto bad = slicesOf(wrong, 77, wire::ShapeKind::Hull);
        CHECK(assembler.add(sliceOf(bad[0])) == 0);
        CHECK(assembler.stats().refused[std::size_t(GeometryError::HashMismatch)] == 1);
        CHECK(assembler.add(sliceOf(bad[0])) == 0); // remembered: refused again, not reassembled
        CHECK(assembler.stats().refused[std::size_t(GeometryError::HashMismatch)] == 2);
        CHECK(assembler.find(77) == nullptr);
    }
    SECTION("bytes that hash right but do not decode are refused")
    {
        std::vector<std::uint8_t> junk(1500, 0xAB);
        const auto bad = slicesOf(junk, protocol::geometryHash(junk), wire::ShapeKind::Mesh);
        CHECK(assembler.add(sliceOf(bad[0])) == 0);
        CHECK(assembler.add(sliceOf(bad[1])) == 0);
        CHECK(assembler.stats().refused[std::size_t(GeometryError::Malformed)] == 1);
    }
    SECTION("a slice whose total or kind disagrees with the first of its hash is refused")
    {
        const std::vector<std::uint8_t> other = protocol::encodeGeometry(bigMesh(12));
        const auto first = slicesOf(other, 99, wire::ShapeKind::Mesh);
        std::vector<std::uint8_t> longer = other;
        longer.resize(other.size() + 2048, 0);
        const auto second = slicesOf(longer, 99, wire::ShapeKind::Mesh);
        const auto third = slicesOf(other, 99, wire::ShapeKind::HeightField);
        CHECK(assembler.add(sliceOf(first[0])) == 0);
        CHECK(assembler.add(sliceOf(second[1])) == 0);
        CHECK(assembler.add(sliceOf(third[1])) == 0);
        CHECK(assembler.stats().refused[std::size_t(GeometryError::BadSize)] == 1);
        CHECK(assembler.stats().refused[std::size_t(GeometryError::BadKind)] == 1);
    }
    // Whatever was refused, what was held is untouched.
    CHECK(assembler.find(meshHash)->bytes == mesh);
    CHECK(assembler.find(hullHash)->bytes == hull);
    CHECK(assembler.complete().size() == 2);
}

TEST_CASE("geometry: the memory cap refuses new geometry and keeps what is held", "[geometry]")
{
    const std::vector<std::uint8_t> mesh = protocol::encodeGeometry(bigMesh(20));
    const std::vector<std::uint8_t> hull = protocol::encodeGeometry(tetrahedron());
    protocol::GeometryAssembler assembler(hull.size() + 100);
    CHECK(assembler.add(sliceOf(slicesOf(hull, protocol::geometryHash(hull), wire::ShapeKind::Hull)[0])) !=
          0);
    CHECK(assembler.add(sliceOf(slicesOf(mesh, protocol::geometryHash(mesh), wire::ShapeKind::Mesh)[0])) ==
          0);
    CHECK(assembler.stats().refused[std::size_t(GeometryError::OverMemoryCap)] == 1);
    CHECK(assembler.memoryBytes() == hull.size());
    CHECK(assembler.complete().size() == 1);
}

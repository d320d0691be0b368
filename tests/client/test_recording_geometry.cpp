// Recordings keep geometry (docs/INSPECT.md, protocol/STANDARD.md section 12.5): a recording of a server
// whose world holds hulls, a mesh, a heightfield and compounds keeps each geometry once, byte for byte,
// before the frames naming it, and gives every body its hash back; a geometry record that fails its checks
// (bytes that do not hash to its name, do not decode, a kind without geometry, past the cap) makes the reader
// refuse the file, naming the record's offset, whether it is found through the index or by scanning.
#include "polytope/client/client.h"
#include "polytope/client/recording.h"
#include "polytope/protocol/geometry.h"
#include "polytope/recording/recording_generated.h"
#include "polytope/server/room.h"
#include "polytope/server/server.h"
#include "support/geometry_scene.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>

using namespace polytope;
using client::ReceivedSnapshot;
using client::RecordingReader;
using client::RecordingWriter;

namespace
{

const protocol::Address kClient = protocol::Address::ipv4(10, 0, 0, 2, 5000);

std::string tempPath(const char* name)
{
    return (std::filesystem::temp_directory_path() / name).string();
}

std::vector<std::uint8_t> readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// How often `needle` occurs in `haystack`.
std::size_t occurrences(const std::vector<std::uint8_t>& haystack, const std::vector<std::uint8_t>& needle)
{
    std::size_t count = 0;
    auto at = haystack.begin();
    while ((at = std::search(at, haystack.end(), needle.begin(), needle.end())) != haystack.end())
    {
        ++count;
        ++at;
    }
    return count;
}

/// Index of the first occurrence of `needle` in `haystack`.
std::size_t find(const std::vector<std::uint8_t>& haystack, const std::vector<std::uint8_t>& needle)
{
    return static_cast<std::size_t>(
        std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) - haystack.begin());
}

/// A regular octahedron of radius `r`: 6 vertices, 8 triangular faces.
protocol::ReceivedGeometry octahedron(float r)
{
    protocol::ReceivedGeometry g;
    g.kind = protocol::wire::ShapeKind::Hull;
    g.geometry.kind = g.kind;
    g.geometry.hull.vertices = {{r, 0, 0}, {-r, 0, 0}, {0, r, 0}, {0, -r, 0}, {0, 0, r}, {0, 0, -r}};
    g.geometry.hull.faceSizes.assign(8, 3);
    g.geometry.hull.faceIndices = {0, 2, 4, 4, 2, 1, 1, 2, 5, 5, 2, 0, 4, 3, 0, 1, 3, 4, 5, 3, 1, 0, 3, 5};
    g.bytes = protocol::encodeGeometry(g.geometry);
    g.hash = protocol::geometryHash(g.bytes);
    return g;
}

/// A recording of `geometry` (written first) and three frames with one hull body naming `named`.
std::vector<std::uint8_t> smallRecording(const protocol::ReceivedGeometry& geometry, std::uint64_t named,
                                         std::uint64_t& geometryOffset)
{
    const std::string path = tempPath("polytope_test_geometry_small.pltr");
    std::string error;
    RecordingWriter writer;
    client::RecordingHeader header;
    header.scene = "octahedron";
    REQUIRE(writer.open(path, header, error));
    geometryOffset = writer.bytesWritten();
    REQUIRE(writer.writeGeometry(geometry, error));
    REQUIRE(writer.writeGeometry(geometry, error)); // once per file: the second is not written
    CHECK(writer.geometryWritten() == 1);
    for (std::uint64_t tick = 3; tick <= 9; tick += 3)
    {
        ReceivedSnapshot s;
        s.tick = tick;
        s.serverTime = static_cast<double>(tick) / 60.0;
        client::SnapshotBody b;
        b.id = 1;
        b.generation = 1;
        b.shape = protocol::wire::ShapeKind::Hull;
        b.extent = {1, 1, 1};
        b.geometry = named;
        s.bodies.push_back(b);
        REQUIRE(writer.write(s, error));
    }
    REQUIRE(writer.close(error));
    auto bytes = readAll(path);
    std::filesystem::remove(path);
    return bytes;
}

/// The file without its index and footer, as a crash would leave it (the footer's first u64 is the index
/// record's offset).
std::vector<std::uint8_t> withoutIndex(const std::vector<std::uint8_t>& bytes)
{
    REQUIRE(bytes.size() >= client::kRecordingFooterBytes);
    std::uint64_t end = 0;
    for (int i = 7; i >= 0; --i)
    {
        end = end << 8 | bytes[bytes.size() - client::kRecordingFooterBytes + static_cast<std::size_t>(i)];
    }
    REQUIRE(end < bytes.size());
    return {bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(end)};
}

/// A recording as version `version` of the format writes it, built record by record: a header, `frames`
/// frames of two boxes (no geometry field), the index (no geometry field) and the footer.
std::vector<std::uint8_t> handWritten(std::uint16_t version, int frames)
{
    namespace rec = polytope::recording;
    std::vector<std::uint8_t> file;
    std::vector<rec::IndexEntry> index;
    const auto append = [&](flatbuffers::FlatBufferBuilder& fbb)
    { file.insert(file.end(), fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()); };
    {
        flatbuffers::FlatBufferBuilder fbb;
        const auto scene = fbb.CreateString("old");
        rec::HeaderBuilder h(fbb);
        h.add_magic(client::kRecordingMagic);
        h.add_version(version);
        h.add_scene(scene);
        h.add_tick_rate_hz(60);
        h.add_snapshot_rate_hz(20);
        const auto header = h.Finish();
        rec::FinishSizePrefixedRecordBuffer(fbb,
                                            rec::CreateRecord(fbb, rec::Payload::Header, header.Union()));
        append(fbb);
    }
    for (int i = 0; i < frames; ++i)
    {
        flatbuffers::FlatBufferBuilder fbb;
        const std::vector<rec::RecordedBody> bodies{
            {1, 1, {0, 1, 0}, {0, 0, 0, 1}, {0.5f, 0.5f, 0.5f}, 2, false},
            {2, 1, {2, 1, 0}, {0, 0, 0, 1}, {0.5f, 0.5f, 0.5f}, 3, true}};
        const auto vector = fbb.CreateVectorOfStructs(bodies);
        const std::uint64_t tick = 3 * static_cast<std::uint64_t>(i + 1);
        const auto frame =
            rec::CreateFrame(fbb, tick, static_cast<double>(tick) / 60.0, 0.05 * i, 100, vector);
        rec::FinishSizePrefixedRecordBuffer(fbb, rec::CreateRecord(fbb, rec::Payload::Frame, frame.Union()));
        index.emplace_back(tick, file.size(), static_cast<double>(tick) / 60.0);
        append(fbb);
    }
    const std::uint64_t indexAt = file.size();
    {
        flatbuffers::FlatBufferBuilder fbb;
        const auto entries = rec::CreateFrameIndex(fbb, fbb.CreateVectorOfStructs(index));
        rec::FinishSizePrefixedRecordBuffer(
            fbb, rec::CreateRecord(fbb, rec::Payload::FrameIndex, entries.Union()));
        append(fbb);
    }
    for (int i = 0; i < 8; ++i)
    {
        file.push_back(static_cast<std::uint8_t>(indexAt >> (8 * i)));
    }
    for (const std::uint32_t word : {static_cast<std::uint32_t>(frames), client::kRecordingFooterMagic})
    {
        for (int i = 0; i < 4; ++i)
        {
            file.push_back(static_cast<std::uint8_t>(word >> (8 * i)));
        }
    }
    return file;
}

} // namespace

TEST_CASE("recording geometry: version 1 files (no geometry) still read; unknown versions are refused",
          "[client][recording][geometry]")
{
    std::string error;
    RecordingReader reader;
    const auto v1 = handWritten(1, 5);
    REQUIRE(reader.openMemory(v1, error));
    CHECK(reader.version() == 1);
    CHECK_FALSE(reader.indexRebuilt());
    CHECK(reader.frameCount() == 5);
    CHECK(reader.geometry().empty());
    ReceivedSnapshot frame;
    REQUIRE(reader.readFrame(4, frame, error));
    REQUIRE(frame.bodies.size() == 2);
    CHECK(frame.bodies[1].shape == protocol::wire::ShapeKind::Hull);
    CHECK(frame.bodies[1].geometry == 0); // drawn as its box
    // Scanned (no footer) as well.
    REQUIRE(reader.openMemory(withoutIndex(v1), error));
    CHECK(reader.indexRebuilt());
    CHECK(reader.frameCount() == 5);

    CHECK_FALSE(reader.openMemory(handWritten(3, 2), error));
    CHECK(error.find("unsupported recording version 3") != std::string::npos);
    CHECK_FALSE(reader.openMemory(handWritten(0, 2), error));
    CHECK(error.find("unsupported recording version 0") != std::string::npos);
}

TEST_CASE("recording geometry: hulls, meshes, heightfields and compounds of a server are kept once each, "
          "byte for byte, and every body's hash comes back",
          "[client][recording][geometry]")
{
    server::RoomConfig room;
    room.scene = "geometry";
    room.buildScene = test::buildGeometryScene;
    room.maxClientKbps = 128; // geometry takes a while to arrive: frames before it name hashes not held yet
    test::InProcessNetwork net;
    std::unique_ptr<server::Server> server = test::makeServer(net, room);
    client::Client& c = net.addClient(kClient);
    c.connect(net.now());

    const std::string path = tempPath("polytope_test_geometry_recording.pltr");
    RecordingWriter writer;
    std::string error;
    std::vector<ReceivedSnapshot> written;
    // Per frame written: the hashes its bodies named that the client held by then (so the file must hold
    // them before that frame).
    std::vector<std::set<std::uint64_t>> heldWhenWritten;
    const server::Replicator& replicator = server->room(0).replicator();
    const auto everyGeometryHeld = [&]
    {
        bool all = !replicator.geometry().empty();
        for (const auto& [hash, stored] : replicator.geometry())
        {
            all = all && c.geometry().find(hash) != nullptr;
        }
        return all;
    };
    double heldAt = -1.0;
    std::size_t bodiesBeforeGeometry = 0; // bodies written naming a geometry the client did not hold yet
    while (net.now() < 30.0 && (heldAt < 0.0 || net.now() < heldAt + 1.0))
    {
        net.frame();
        ReceivedSnapshot s;
        while (c.popSnapshot(s))
        {
            if (!writer.isOpen())
            {
                REQUIRE(writer.open(path, client::RecordingHeader::fromClient(c, "in-process"), error));
            }
            REQUIRE(writer.writeGeometry(c.geometry(), error));
            REQUIRE(writer.write(s, error));
            std::set<std::uint64_t> held;
            for (const client::SnapshotBody& b : s.bodies)
            {
                if (b.geometry != 0 && c.geometry().find(b.geometry) != nullptr)
                {
                    held.insert(b.geometry);
                }
                bodiesBeforeGeometry += b.geometry != 0 && !held.contains(b.geometry) ? 1 : 0;
            }
            heldWhenWritten.push_back(std::move(held));
            written.push_back(std::move(s));
        }
        if (heldAt < 0.0 && everyGeometryHeld())
        {
            heldAt = net.now();
        }
    }
    REQUIRE(heldAt >= 0.0);
    CHECK(bodiesBeforeGeometry > 0);
    REQUIRE(writer.close(error));
    const std::vector<std::uint8_t> bytes = readAll(path);
    std::filesystem::remove(path);

    for (const bool scanned : {false, true})
    {
        INFO((scanned ? "read by scanning (no index)" : "read through the index"));
        RecordingReader reader;
        REQUIRE(reader.openMemory(scanned ? withoutIndex(bytes) : bytes, error));
        CHECK(reader.indexRebuilt() == scanned);
        CHECK(reader.version() == client::kRecordingVersion);
        REQUIRE(reader.frameCount() == written.size());

        // Every geometry the server named, byte for byte, of every kind, each stored once.
        std::set<protocol::wire::ShapeKind> kinds;
        CHECK(reader.geometry().size() == replicator.geometry().size());
        CHECK(reader.geometryIndex().size() == reader.geometry().size());
        std::size_t total = 0;
        for (const auto& [hash, stored] : replicator.geometry())
        {
            INFO(protocol::shapeKindName(stored.kind) << " " << stored.bytes.size() << " bytes");
            REQUIRE(reader.geometry().contains(hash));
            const protocol::ReceivedGeometry& g = reader.geometry().at(hash);
            CHECK(g.bytes == stored.bytes);
            CHECK(g.kind == stored.kind);
            CHECK(g.geometry.kind == stored.kind);
            CHECK(occurrences(bytes, stored.bytes) == 1);
            kinds.insert(g.kind);
            total += g.bytes.size();
        }
        CHECK(kinds.size() == 4);
        CHECK(reader.geometryBytes() == total);

        // The frames come back as written, hashes included; a geometry the client held when a frame was
        // written precedes that frame in the file.
        std::map<std::uint64_t, std::uint64_t> offsetOf;
        for (const client::RecordingGeometryInfo& g : reader.geometryIndex())
        {
            CHECK(offsetOf.emplace(g.hash, g.offset).second);
        }
        std::size_t bodiesWithGeometry = 0;
        ReceivedSnapshot frame;
        for (std::size_t i = 0; i < reader.frameCount(); ++i)
        {
            REQUIRE(reader.readFrame(i, frame, error));
            REQUIRE(frame.bodies.size() == written[i].bodies.size());
            for (std::size_t k = 0; k < frame.bodies.size(); ++k)
            {
                CHECK(frame.bodies[k].id == written[i].bodies[k].id);
                CHECK(frame.bodies[k].geometry == written[i].bodies[k].geometry);
                CHECK(frame.bodies[k].position == written[i].bodies[k].position);
                bodiesWithGeometry += frame.bodies[k].geometry != 0 ? 1 : 0;
            }
            for (const std::uint64_t hash : heldWhenWritten[i])
            {
                REQUIRE(offsetOf.contains(hash));
                CHECK(offsetOf.at(hash) < reader.index()[i].offset);
            }
        }
        CHECK(bodiesWithGeometry > reader.frameCount() * 5);

        // The summary (polytope-inspect stats, geometry FILE) lists each with the bodies naming it.
        const client::RecordingSummary summary = client::summarizeRecording(reader);
        CHECK(summary.geometry.size() == replicator.geometry().size());
        std::uint64_t mostBodies = 0;
        for (const auto& g : summary.geometry)
        {
            CHECK(g.stored);
            CHECK(g.bytes == replicator.geometry().at(g.hash).bytes.size());
            CHECK(g.bodies == replicator.geometry().at(g.hash).bodies);
            mostBodies = std::max(mostBodies, g.bodies);
        }
        CHECK(mostBodies >= 5);
    }
}

TEST_CASE("recording geometry: a geometry record that fails its checks is refused, naming its offset",
          "[client][recording][geometry]")
{
    const protocol::ReceivedGeometry hull = octahedron(0.5f);
    std::uint64_t at = 0;
    const std::vector<std::uint8_t> good = smallRecording(hull, hull.hash, at);
    std::string error;
    {
        RecordingReader reader;
        REQUIRE(reader.openMemory(good, error));
        REQUIRE(reader.geometry().size() == 1);
        CHECK(reader.geometry().at(hull.hash).bytes == hull.bytes);
        CHECK(reader.geometry().at(hull.hash).geometry.hull.vertices.size() == 6);
        CHECK(reader.geometryIndex().at(0).offset == at);
        ReceivedSnapshot frame;
        REQUIRE(reader.readFrame(0, frame, error));
        CHECK(frame.bodies.at(0).geometry == hull.hash);
    }
    const std::string where = "geometry record at offset " + std::to_string(at);

    // Each damage, read through the index and by scanning a copy without it.
    const auto refused = [&](const std::vector<std::uint8_t>& bytes, const char* why, RecordingReader& reader)
    {
        for (const auto& file : {bytes, withoutIndex(bytes)})
        {
            std::string message;
            CHECK_FALSE(reader.openMemory(file, message));
            INFO(message);
            CHECK(message.find(where) != std::string::npos);
            CHECK(message.find(why) != std::string::npos);
        }
    };
    RecordingReader reader;

    SECTION("a byte of the geometry changed: its bytes no longer hash to its name")
    {
        auto damaged = good;
        const std::size_t bytesAt = find(damaged, hull.bytes);
        REQUIRE(bytesAt < damaged.size());
        damaged[bytesAt + hull.bytes.size() / 2] ^= 0x40;
        refused(damaged, "hash to", reader);
    }
    SECTION("bytes that hash to their name but do not decode")
    {
        protocol::ReceivedGeometry bad = hull;
        bad.bytes.assign(64, 0xAB);
        bad.hash = protocol::geometryHash(bad.bytes);
        refused(smallRecording(bad, bad.hash, at), "does not decode", reader);
    }
    SECTION("a kind without geometry")
    {
        protocol::ReceivedGeometry bad = hull;
        bad.kind = protocol::wire::ShapeKind::Box;
        refused(smallRecording(bad, bad.hash, at), "has no geometry", reader);
    }
    SECTION("stored under another hash")
    {
        protocol::ReceivedGeometry bad = hull;
        bad.hash ^= 1;
        refused(smallRecording(bad, bad.hash, at), "hash to", reader);
    }
    SECTION("more geometry than the reader's cap")
    {
        RecordingReader capped(hull.bytes.size() - 1);
        refused(good, "past the cap", capped);
        RecordingReader roomy(hull.bytes.size());
        CHECK(roomy.openMemory(good, error));
    }
}

TEST_CASE("recording geometry: a frame naming a geometry the file lacks still reads; its hash is kept",
          "[client][recording][geometry]")
{
    // The recorder writes what the client holds: a body may name a geometry that had not arrived.
    const protocol::ReceivedGeometry hull = octahedron(0.5f);
    std::uint64_t at = 0;
    const auto bytes = smallRecording(hull, 0x1234, at);
    RecordingReader reader;
    std::string error;
    REQUIRE(reader.openMemory(bytes, error));
    ReceivedSnapshot frame;
    REQUIRE(reader.readFrame(2, frame, error));
    CHECK(frame.bodies.at(0).geometry == 0x1234);
    CHECK_FALSE(reader.geometry().contains(0x1234));
    const client::RecordingSummary summary = client::summarizeRecording(reader);
    REQUIRE(summary.geometry.size() == 2);
    for (const auto& g : summary.geometry)
    {
        CHECK(g.stored == (g.hash == hull.hash));
        CHECK(g.bodies == (g.hash == hull.hash ? 0u : 1u));
    }
}

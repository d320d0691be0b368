// polytope-viewer's replay source draws the geometry a recording keeps (docs/INSPECT.md): a polytope-server
// runs convex_vs_mesh, a client records it as polytope-inspect record does, and the replay's hull bodies must
// name surfaces with exactly the faces of the engine's hulls (as the live view's do), its meshes and
// compounds surfaces of their own, not bounding boxes. A recording whose geometry is damaged is refused,
// naming the file.
#include "viewer/geometry_mesh.h"
#include "viewer/sources.h"

#include "polytope/client/recording.h"
#include "polytope/client/udp_client.h"

#include "server_process.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <utility>

using namespace polytope;
using namespace polytope::viewer;
using viewer::test::distinctVertices;
using viewer::test::ServerProcess;

namespace
{

/// Records `server` (HOST:PORT) to `path` until the client holds every geometry its catalogue names and
/// `framesAfter` more snapshots arrived. Returns false (with a message) when that takes over 20 s.
bool recordUntilGeometry(const std::string& host, std::uint16_t port, const std::string& path,
                         int framesAfter, std::string& error)
{
    client::ClientConfig config;
    config.name = "viewer-test-recorder";
    config.spectator = true;
    client::UdpClient udp(config);
    if (!udp.connect(host, port, error))
    {
        return false;
    }
    client::RecordingWriter writer;
    client::ReceivedSnapshot snapshot;
    int after = -1;
    const auto start = std::chrono::steady_clock::now();
    while (after < framesAfter)
    {
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20))
        {
            error = "no complete geometry within 20 s";
            return false;
        }
        udp.poll(0.01);
        client::Client& c = udp.client();
        while (c.popSnapshot(snapshot))
        {
            if (!writer.isOpen() &&
                !writer.open(path, client::RecordingHeader::fromClient(c, host + ":" + std::to_string(port)),
                             error))
            {
                return false;
            }
            if (!writer.writeGeometry(c.geometry(), error) || !writer.write(snapshot, error))
            {
                return false;
            }
            bool complete = !c.catalogue().empty();
            for (const auto& [id, entry] : c.catalogue())
            {
                complete = complete && (entry.geometry == 0 || c.geometry().find(entry.geometry) != nullptr);
            }
            after += (complete || after >= 0) ? 1 : 0;
        }
    }
    udp.disconnect();
    return writer.close(error);
}

} // namespace

TEST_CASE("viewer replay: hulls, meshes and compounds of a recording are drawn with their real vertices")
{
#ifndef POLYTOPE_SERVER_PATH
    WARN("polytope-server path not known to this build");
#else
    const int port = 40001 + static_cast<int>(getpid() % 20000);
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("polytope_viewer_replay_" + std::to_string(getpid()) + ".pltr"))
                                 .string();
    {
        ServerProcess server({POLYTOPE_SERVER_PATH, "--insecure", "--port", std::to_string(port), "--bind",
                              "127.0.0.1", "--http-port", "0", "--scene", "convex_vs_mesh", "--log-level",
                              "warn"});
        REQUIRE(server.pid > 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        std::string error;
        const bool recorded =
            recordUntilGeometry("127.0.0.1", static_cast<std::uint16_t>(port), path, 20, error);
        CAPTURE(error);
        REQUIRE(recorded);
    } // the server is gone: the replay has only the file

    std::vector<std::uint8_t> bytes;
    {
        std::ifstream in(path, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::string error;
    client::RecordingReader reader;
    REQUIRE(reader.openMemory(bytes, error));
    REQUIRE(reader.frameCount() > 20);
    const double span = reader.index().back().serverTime - reader.index().front().serverTime;

    auto source = makeReplaySource(path, true, 1.0, error);
    CAPTURE(error);
    REQUIRE(source);
    // Play to the end (1/60 s of server time per update; the last frame is held), where the recorder held
    // every geometry.
    ViewFrame frame;
    const int updates = static_cast<int>(span * 60.0) + 30;
    for (int i = 0; i < updates; ++i)
    {
        REQUIRE(source->update(i / 60.0));
    }
    REQUIRE(source->frame(updates / 60.0, frame));
    std::size_t hullBodies = 0;
    std::set<std::pair<std::size_t, std::size_t>> hulls;
    std::set<ShapeKind> drawn;
    for (const ViewBody& b : frame.bodies)
    {
        if (b.shape == ShapeKind::Hull || b.shape == ShapeKind::Mesh || b.shape == ShapeKind::Compound)
        {
            INFO("body " << b.id << " " << static_cast<int>(b.shape));
            REQUIRE(b.hullIndex >= 0);
            drawn.insert(b.shape);
        }
        if (b.shape == ShapeKind::Hull)
        {
            const HullMesh& mesh = source->hullMeshes().at(static_cast<std::size_t>(b.hullIndex));
            hulls.insert({distinctVertices(mesh), mesh.vertices.size() / 18});
            ++hullBodies;
        }
    }
    // convex_vs_mesh's hull bodies are octahedra: 6 vertices, 8 triangles (a box would have 8 and 12).
    CHECK(hullBodies >= 5);
    CHECK(hulls == std::set<std::pair<std::size_t, std::size_t>>{{6, 8}});
    CHECK(drawn == std::set<ShapeKind>{ShapeKind::Hull, ShapeKind::Mesh, ShapeKind::Compound});
    CHECK(source->hullMeshesVersion() == source->hullMeshes().size());

    // The same recording with one byte of a geometry changed is refused, naming the file and the record.
    REQUIRE_FALSE(reader.geometry().empty());
    const std::vector<std::uint8_t>& first = reader.geometry().begin()->second.bytes;
    const auto at = std::search(bytes.begin(), bytes.end(), first.begin(), first.end());
    REQUIRE(at != bytes.end());
    at[static_cast<std::ptrdiff_t>(first.size() / 2)] ^= 0x01;
    const std::string damaged = path + ".damaged";
    std::ofstream(damaged, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    error.clear();
    CHECK_FALSE(makeReplaySource(damaged, true, 1.0, error));
    CHECK(error.find(damaged) != std::string::npos);
    CHECK(error.find("geometry record at offset") != std::string::npos);
    std::filesystem::remove(damaged);
    std::filesystem::remove(path);
#endif
}

// polytope-viewer's live source draws the geometry the server sends (protocol/STANDARD.md section 12): a
// polytope-server runs convex_vs_mesh, and the live view's hull bodies must name surfaces with exactly the
// faces of the engine's hulls, not their bounding boxes.
#include "viewer/geometry_mesh.h"
#include "viewer/sources.h"

#include "server_process.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <utility>

using namespace polytope;
using namespace polytope::viewer;
using viewer::test::distinctVertices;
using viewer::test::ServerProcess;

TEST_CASE("viewer live: hulls, meshes and compounds from a server are drawn with their real vertices")
{
#ifndef POLYTOPE_SERVER_PATH
    WARN("polytope-server path not known to this build");
#else
    const int port = 40000 + static_cast<int>(getpid() % 20000);
    ServerProcess server({POLYTOPE_SERVER_PATH, "--insecure", "--port", std::to_string(port), "--bind",
                          "127.0.0.1", "--http-port", "0", "--scene", "convex_vs_mesh", "--log-level",
                          "warn"});
    REQUIRE(server.pid > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::string error;
    auto source = makeLiveSource("127.0.0.1:" + std::to_string(port), 10.0, "", "", error);
    REQUIRE(source);
    ViewFrame frame;
    bool drawn = false;
    const auto start = std::chrono::steady_clock::now();
    while (!drawn && std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
    {
        const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        REQUIRE(source->update(now));
        if (source->frame(now, frame))
        {
            drawn = true;
            for (const ViewBody& b : frame.bodies)
            {
                if (b.shape == ShapeKind::Hull || b.shape == ShapeKind::Mesh ||
                    b.shape == ShapeKind::Compound)
                {
                    drawn = drawn && b.hullIndex >= 0;
                }
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(drawn);
    // convex_vs_mesh's hull bodies are octahedra (6 vertices, 8 triangles; its square pyramid is inside the
    // arrow compounds); a bounding box would have 8 vertices and 12 triangles.
    std::set<std::pair<std::size_t, std::size_t>> hulls;
    for (const ViewBody& b : frame.bodies)
    {
        if (b.shape == ShapeKind::Hull)
        {
            const HullMesh& mesh = source->hullMeshes().at(static_cast<std::size_t>(b.hullIndex));
            hulls.insert({distinctVertices(mesh), mesh.vertices.size() / 18});
        }
    }
    CHECK(hulls == std::set<std::pair<std::size_t, std::size_t>>{{6, 8}});
    CHECK(source->hullMeshesVersion() == source->hullMeshes().size());
#endif
}

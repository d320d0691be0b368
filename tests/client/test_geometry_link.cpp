// Geometry on the wire end to end (STANDARD.md section 12): a room whose world holds hulls shared by many
// bodies, a triangle mesh, a heightfield with a hole and compounds, and a client over a lossy link. The
// client must end with every geometry byte for byte (its own hash of the bytes equal to the server's name),
// each geometry's slices sent once but for resends of lost ones, and the server within the client's budget.
#include "polytope/client/client.h"
#include "polytope/protocol/geometry.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/server/room.h"
#include "polytope/server/server.h"
#include "support/geometry_scene.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <set>

using namespace polytope;

namespace
{

const protocol::Address kClient = protocol::Address::ipv4(10, 0, 0, 2, 5000);

struct GeometryRun
{
    std::map<std::uint64_t, std::uint64_t> datagramsByHash;
    std::map<std::uint64_t, std::set<std::uint32_t>> offsetsByHash;
    std::uint64_t geometryBytes = 0;
    std::uint64_t geometryDatagrams = 0;
    double doneSeconds = -1.0;
    double worstWindowKbps = 0.0; ///< all datagrams to the client, over any 1 s window ending on a frame
    double worstGeometryWindowKbps = 0.0;
    std::uint64_t snapshotsWhileLoading = 0;
};

/// Runs a client against `room` until it holds every geometry the room names (or `limitSeconds`).
GeometryRun runGeometry(const server::RoomConfig& room, const protocol::NetworkConditions& conditions,
                        double limitSeconds, std::unique_ptr<server::Server>& server,
                        test::InProcessNetwork& net, client::Client*& client)
{
    net.simulate(conditions, 19);
    server = test::makeServer(net, room);
    net.recordServerSends();
    client::Client& c = net.addClient(kClient);
    client = &c;
    c.connect(net.now());
    GeometryRun run;
    std::size_t seen = 0;
    std::vector<std::pair<double, std::pair<std::size_t, std::size_t>>> sends; // time, (all, geometry) bytes
    const server::Replicator& replicator = server->room(0).replicator();
    net.runUntil(limitSeconds,
                 [&]
                 {
                     const auto& sent = net.serverSent();
                     std::size_t all = 0;
                     std::size_t geometry = 0;
                     for (; seen < sent.size(); ++seen)
                     {
                         if (!(sent[seen].to == kClient))
                         {
                             continue;
                         }
                         all += sent[seen].datagram.size();
                         const protocol::wire::Packet* packet = sent[seen].datagram.packet();
                         if (packet && packet->header()->type() == protocol::wire::PacketType::GeometrySlice)
                         {
                             const auto* slice = packet->message_as_GeometrySlice();
                             geometry += sent[seen].datagram.size();
                             ++run.datagramsByHash[slice->hash()];
                             run.offsetsByHash[slice->hash()].insert(slice->offset());
                             run.geometryBytes += sent[seen].datagram.size();
                             ++run.geometryDatagrams;
                         }
                     }
                     sends.push_back({net.now(), {all, geometry}});
                     bool complete = !replicator.geometry().empty();
                     for (const auto& [hash, stored] : replicator.geometry())
                     {
                         complete = complete && (stored.bodies == 0 || c.geometry().find(hash) != nullptr);
                     }
                     if (!complete)
                     {
                         run.snapshotsWhileLoading = c.stats().snapshotsCompleted;
                     }
                     if (complete && run.doneSeconds < 0.0)
                     {
                         run.doneSeconds = net.now();
                     }
                     test::dropSnapshots(c);
                 });
    // The fullest one-second window of what the server sent this client, and of its geometry alone.
    std::size_t begin = 0;
    std::size_t all = 0;
    std::size_t geometry = 0;
    for (std::size_t end = 0; end < sends.size(); ++end)
    {
        all += sends[end].second.first;
        geometry += sends[end].second.second;
        while (sends[end].first - sends[begin].first >= 1.0)
        {
            all -= sends[begin].second.first;
            geometry -= sends[begin].second.second;
            ++begin;
        }
        run.worstWindowKbps = std::max(run.worstWindowKbps, all * 8.0 / 1000.0);
        run.worstGeometryWindowKbps = std::max(run.worstGeometryWindowKbps, geometry * 8.0 / 1000.0);
    }
    return run;
}

} // namespace

TEST_CASE("geometry link: every hull, mesh, heightfield and compound arrives once, byte for byte, under 5% "
          "loss and within the budget",
          "[client][geometry]")
{
    server::RoomConfig room;
    room.scene = "geometry";
    room.buildScene = test::buildGeometryScene;
    room.maxClientKbps = 512;
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.03;
    conditions.jitterSeconds = 0.01;
    conditions.lossProbability = 0.05;
    test::InProcessNetwork net;
    std::unique_ptr<server::Server> server;
    client::Client* c = nullptr;
    const GeometryRun run = runGeometry(room, conditions, 30.0, server, net, c);
    REQUIRE(c->isConnected());
    REQUIRE(run.doneSeconds > 0.0);
    const server::Replicator& replicator = server->room(0).replicator();

    // Every kind is there, and some geometry serves many bodies.
    std::set<protocol::wire::ShapeKind> kinds;
    std::uint32_t mostBodies = 0;
    for (const auto& [hash, stored] : replicator.geometry())
    {
        kinds.insert(stored.kind);
        mostBodies = std::max(mostBodies, stored.bodies);
    }
    CHECK(kinds.size() == 4);
    CHECK(mostBodies >= 5);

    std::uint64_t totalSlices = 0;
    for (const auto& [hash, stored] : replicator.geometry())
    {
        INFO(protocol::shapeKindName(stored.kind)
             << " " << stored.bytes.size() << " bytes, " << stored.bodies << " bodies");
        const protocol::ReceivedGeometry* received = c->geometry().find(hash);
        REQUIRE(received != nullptr);
        // Byte for byte, and the client's own hash of the bytes is the name the server gave them.
        CHECK(received->bytes == stored.bytes);
        CHECK(protocol::geometryHash(received->bytes) == hash);
        CHECK(received->kind == stored.kind);
        // Sent once however many bodies use it: every slice went out, and the datagrams beyond one per slice
        // are resends (5% loss each way, and slices that came before a lost ConnectAccepted was resent; a
        // slice is resent after 0.25 s without an acknowledgement).
        const std::uint32_t slices = protocol::geometrySliceCount(stored.bytes.size());
        CHECK(run.offsetsByHash.at(hash).size() == slices);
        CHECK(run.datagramsByHash.at(hash) <= slices + 2 + slices / 2);
        totalSlices += slices;
    }
    INFO(run.geometryDatagrams << " geometry datagrams for " << totalSlices << " slices");
    CHECK(run.geometryDatagrams <= totalSlices + 4 + totalSlices / 3);
    // A geometry nobody else has is never sent twice: the catalogue named it to the client many times.
    CHECK(c->stats().catalogueEntries > replicator.geometry().size());
    CHECK(c->geometry().stats().refusedTotal() == 0);
    CHECK(c->geometry().complete().size() == replicator.geometry().size());

    // The budget: 512 kbps for everything, geometry at most its half (plus the bucket's 0.25 s burst), and
    // snapshots kept coming while geometry loaded.
    INFO("worst 1 s: " << run.worstWindowKbps << " kbps in all, " << run.worstGeometryWindowKbps
                       << " kbps of geometry; done after " << run.doneSeconds << " s");
    CHECK(run.worstGeometryWindowKbps <= 512 * 0.5 * 1.25 + 10.0);
    CHECK(run.worstWindowKbps <= 512 * 1.25 + 10.0);
    CHECK(run.snapshotsWhileLoading >= 10);
}

TEST_CASE("geometry link: what the built-in scenes' geometry costs on the wire", "[.][figures]")
{
    for (const char* scene : {"convex_vs_mesh", "terrain"})
    {
        server::RoomConfig room;
        room.scene = scene;
        test::InProcessNetwork net;
        std::unique_ptr<server::Server> server;
        client::Client* c = nullptr;
        const GeometryRun run = runGeometry(room, {}, 20.0, server, net, c);
        std::size_t raw = 0;
        for (const auto& [hash, stored] : server->room(0).replicator().geometry())
        {
            raw += stored.bytes.size();
        }
        std::printf(
            "%s: %zu geometries, %zu bytes of geometry, %llu datagrams, %llu datagram bytes, complete "
            "after %.2f s at the default budget\n",
            scene, server->room(0).replicator().geometry().size(), raw,
            static_cast<unsigned long long>(run.geometryDatagrams),
            static_cast<unsigned long long>(run.geometryBytes), run.doneSeconds);
        CHECK(run.doneSeconds > 0.0);
    }
}

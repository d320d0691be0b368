// Rooms running jointed scenes: a client of a room with the built-in chain, or with scenes/joints.json, sees
// the jointed bodies in its snapshots and sees them move as their joints allow; a checkpoint of such rooms
// restores bit-identically (World::saveState carries the joints). In process, on a test clock.
#include "polytope/client/client.h"
#include "polytope/physics/scenes.h"
#include "polytope/server/checkpoint.h"
#include "polytope/server/scene_file.h"
#include "polytope/server/server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

using namespace polytope;

namespace
{

std::string jointsSceneFile()
{
    // tests/server/this_file.cpp -> <repo>/scenes/joints.json
    return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "scenes" /
            "joints.json")
        .string();
}

server::RoomConfig roomWith(const std::string& name, const std::string& scene)
{
    server::RoomConfig config;
    config.room = name;
    config.scene = scene;
    return config;
}

using Point = std::array<float, 3>;

Point add(const Point& a, const Point& b)
{
    return {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
}

float distanceBetween(const Point& a, const Point& b)
{
    return std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

/// `local` turned by the snapshot body's orientation and placed at its position.
Point pointOn(const client::SnapshotBody& body, const physics::Vec3& local)
{
    const auto& q = body.orientation;
    const physics::Vec3 turned = physics::rotate(physics::Quat{q[0], q[1], q[2], q[3]}, local);
    return add(body.position, {turned.x, turned.y, turned.z});
}

/// Connects one client to the server on `net` and runs `seconds` at 60 frames a second, keeping every
/// snapshot the client shows.
std::vector<client::ReceivedSnapshot> watch(test::InProcessNetwork& net, client::Client& c, double seconds)
{
    net.order = test::FrameOrder::UpdateThenDeliver;
    c.connect(0.0);
    std::vector<client::ReceivedSnapshot> snapshots;
    for (int frame = 0; frame < static_cast<int>(seconds * 60.0); ++frame)
    {
        net.frameAt(frame / 60.0);
        client::ReceivedSnapshot s;
        while (c.popSnapshot(s))
        {
            snapshots.push_back(std::move(s));
        }
    }
    return snapshots;
}

/// The body of that id in a snapshot, or nullptr.
const client::SnapshotBody* bodyOf(const client::ReceivedSnapshot& snapshot, std::uint32_t id)
{
    for (const client::SnapshotBody& body : snapshot.bodies)
    {
        if (body.id == id)
        {
            return &body;
        }
    }
    return nullptr;
}

} // namespace

TEST_CASE("a client of a room with the built-in chain sees 20 links swing down together", "[server][joints]")
{
    test::InProcessNetwork net;
    const auto server = test::makeServer(net, roomWith("main", "chain"));
    client::Client& c = net.addClient(2);
    const std::vector<client::ReceivedSnapshot> snapshots = watch(net, c, 3.0);
    REQUIRE(c.isConnected());
    CHECK(c.sceneName() == "chain");
    REQUIRE(snapshots.size() >= 50);
    CHECK(server->room(0).world().jointCount() == physics::kChainLinks);

    // The links are the capsules, in id order from the anchor outward (the scene creates them so). In every
    // snapshot each link's inner end meets the previous link's outer end (the first meets the anchor), to
    // within the joints' error and the snapshot's quantization.
    const physics::Vec3 inner{0.0f, -0.5f * physics::kChainLinkPitchMeters, 0.0f};
    const physics::Vec3 outer{0.0f, 0.5f * physics::kChainLinkPitchMeters, 0.0f};
    const Point anchor{physics::kChainAnchor.x, physics::kChainAnchor.y, physics::kChainAnchor.z};
    float largestGap = 0.0f;
    for (const client::ReceivedSnapshot& snapshot : snapshots)
    {
        std::vector<const client::SnapshotBody*> links;
        for (const client::SnapshotBody& body : snapshot.bodies)
        {
            if (body.shape == protocol::wire::ShapeKind::Capsule)
            {
                links.push_back(&body);
            }
        }
        REQUIRE(links.size() == static_cast<std::size_t>(physics::kChainLinks));
        Point previous = anchor;
        for (const client::SnapshotBody* link : links)
        {
            largestGap = std::max(largestGap, distanceBetween(pointOn(*link, inner), previous));
            previous = pointOn(*link, outer);
        }
    }
    CHECK(largestGap < 0.02f);

    // And it moves: the free end, let go level with the anchor, has swung far down.
    const auto endOf = [](const client::ReceivedSnapshot& snapshot)
    {
        const client::SnapshotBody* last = nullptr;
        for (const client::SnapshotBody& body : snapshot.bodies)
        {
            last = body.shape == protocol::wire::ShapeKind::Capsule ? &body : last;
        }
        return last->position;
    };
    const Point start = endOf(snapshots.front());
    float lowest = start[1];
    for (const client::ReceivedSnapshot& snapshot : snapshots)
    {
        lowest = std::min(lowest, endOf(snapshot)[1]);
    }
    CHECK(start[1] > physics::kChainAnchor.y - 1.0f);
    CHECK(lowest < physics::kChainAnchor.y - 8.0f);
}

TEST_CASE("a client of a room with a scene file's joints sees the jointed bodies move as joined",
          "[server][joints]")
{
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::loadSceneFile(jointsSceneFile(), scene, error));
    const auto indexOf = [&](const std::string& name)
    {
        for (std::uint32_t i = 0; i < scene.bodies.size(); ++i)
        {
            if (scene.bodies[i].name == name)
            {
                return i;
            }
        }
        FAIL("no body named " << name);
        return 0u;
    };

    test::InProcessNetwork net;
    const auto server = test::makeServer(net, roomWith("main", jointsSceneFile()));
    CHECK(server->room(0).world().jointCount() == scene.joints.size());
    client::Client& c = net.addClient(2);
    const std::vector<client::ReceivedSnapshot> snapshots = watch(net, c, 3.0);
    REQUIRE(c.isConnected());
    REQUIRE(snapshots.size() >= 50);

    // Bodies are created in file order into an empty world: a body's id is its index in the file.
    const std::uint32_t beam = indexOf("beam");
    const std::uint32_t bob = indexOf("bob");
    const std::uint32_t carriage = indexOf("carriage");
    float bobLowest = 5.0f;
    for (const client::ReceivedSnapshot& snapshot : snapshots)
    {
        CHECK(snapshot.bodies.size() >= scene.bodies.size()); // the scene's bodies, and the client's player
        const client::SnapshotBody* pivot = bodyOf(snapshot, beam);
        const client::SnapshotBody* weight = bodyOf(snapshot, bob);
        const client::SnapshotBody* slide = bodyOf(snapshot, carriage);
        REQUIRE(pivot != nullptr);
        REQUIRE(weight != nullptr);
        REQUIRE(slide != nullptr);
        // The pendulum keeps its 2 m; the carriage keeps to its rail (y 0.8, z 5) within its limit.
        CHECK(distanceBetween(pivot->position, weight->position) == Approx(2.0f).margin(0.02f));
        CHECK(std::fabs(slide->position[1] - 0.8f) < 0.01f);
        CHECK(std::fabs(slide->position[2] - 5.0f) < 0.01f);
        CHECK(std::fabs(slide->position[0]) < 2.51f);
        bobLowest = std::min(bobLowest, weight->position[1]);
    }
    CHECK(bobLowest < 3.5f);                                       // it swung down
    CHECK(bodyOf(snapshots.back(), carriage)->position[0] > 1.0f); // the motor drove it along
}

TEST_CASE("a checkpoint of rooms with jointed scenes restores bit-identically",
          "[server][joints][checkpoint]")
{
    const std::vector<server::RoomConfig> rooms{roomWith("chain", "chain"), roomWith("car", "car"),
                                                roomWith("file", jointsSceneFile())};
    server::ServerConfig config;
    config.rooms = rooms;
    config.security.insecure = true;
    test::InProcessNetwork originalNet;
    const auto original = test::makeServer(originalNet, config);
    originalNet.run(1.0);
    std::vector<std::uint8_t> state;
    original->saveState(state);
    const std::vector<std::uint8_t> file = server::frameCheckpoint(state);

    test::InProcessNetwork restoredNet;
    const auto restored = test::makeServer(restoredNet, config);
    std::vector<std::uint8_t> payload;
    std::string error;
    REQUIRE(server::unframeCheckpoint(file, payload, error));
    REQUIRE(restored->restoreState(payload, error));
    restoredNet.setNow(originalNet.now());
    originalNet.run(1.0);
    restoredNet.run(1.0);
    for (std::size_t i = 0; i < rooms.size(); ++i)
    {
        CAPTURE(rooms[i].room);
        CHECK(restored->room(i).world().jointCount() == original->room(i).world().jointCount());
        CHECK(restored->room(i).world().jointCount() > 0);
        CHECK(restored->room(i).tick() == original->room(i).tick());
        CHECK(restored->room(i).world().stateHash() == original->room(i).world().stateHash());
    }
}

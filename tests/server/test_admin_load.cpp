// Admin `load` (issue 15, F6): only scene names, resolved to a built-in scene or to NAME.json in the scene
// directory; anything else (paths, "..", FIFOs, links, files elsewhere) gets one answer that says nothing
// about what exists on disk, and the running scene stays. Driven through real AdminRequest datagrams.
#include "polytope/protocol/admin_auth.h"
#include "polytope/server/scene_file.h"
#include "polytope/server/server.h"
#include "support/in_process.h"
#include "support/temp_files.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace polytope;
using test::AlignedDatagram;
using test::sparseFile;
using test::TempDirectory;
using test::writeFile;
namespace wire = protocol::wire;
namespace fs = std::filesystem;

namespace
{

constexpr double kWallTime = 1.8e9; // a fixed Unix time for the admin freshness check
constexpr std::string_view kAdminKey = "secret";
const protocol::Address kAdmin = protocol::Address::ipv4(10, 9, 9, 9, 4000);

/// A Server with one room "main" running `scene`, scene files from `sceneDirectory`, rooms inline.
struct AdminLoop
{
    AdminLoop(const std::string& scene, const std::string& sceneDirectory)
    {
        server::RoomConfig room;
        room.room = "main";
        room.scene = scene;
        room.sceneDirectory = sceneDirectory;
        server::ServerConfig config;
        config.rooms = {room};
        config.adminKey = std::string(kAdminKey);
        config.security.insecure = true;
        config.wallClock = [] { return kWallTime; };
        std::string error;
        host = server::Server::create(
            config,
            [this](const protocol::Address&, std::span<const std::uint8_t> d) { replies.emplace_back(d); },
            error);
        INFO(error);
        REQUIRE(host);
    }

    /// Sends `op` with `text` to room main; returns (ok, message) of the reply.
    std::pair<bool, std::string> admin(wire::AdminOp op, const std::string& text = {})
    {
        protocol::AdminCommandFields command;
        command.room = "main";
        command.op = op;
        command.text = text;
        command.time = kWallTime;
        command.nonce = ++nonce;
        const std::vector<std::uint8_t> bytes = protocol::encodeAdminCommand(command);
        const protocol::AdminMac mac = protocol::adminMac(protocol::deriveAdminMacKey(kAdminKey), bytes);
        protocol::PacketWriter writer;
        const auto datagram = writer.adminRequest({}, bytes, mac);
        replies.clear();
        const AlignedDatagram aligned(datagram);
        host->receive(kAdmin, aligned.view(), now);
        REQUIRE(replies.size() == 1);
        const protocol::DecodeResult decoded = protocol::decodePacket(replies.back().view());
        REQUIRE(decoded.packet);
        REQUIRE(decoded.packet->message_type() == wire::Message::AdminReply);
        const auto* reply = decoded.packet->message_as_AdminReply();
        CHECK(reply->nonce() == command.nonce);
        return {reply->ok(), reply->message() ? reply->message()->str() : std::string()};
    }

    std::pair<bool, std::string> load(const std::string& name)
    {
        return admin(wire::AdminOp::LoadScene, name);
    }

    void run(double seconds)
    {
        const double end = now + seconds;
        while (now < end)
        {
            now += 1.0 / 120.0;
            host->update(now);
        }
    }

    const server::Room& room() const { return host->room(0); }

    std::unique_ptr<server::Server> host;
    std::vector<AlignedDatagram> replies;
    std::uint64_t nonce = 100;
    double now = 0.0;
};

/// Three spheres above the ground: a scene no built-in one equals.
const std::string kThreeSpheres = R"({"name": "three spheres", "builtin": "default", "bodies": [
    {"shape_type": "Sphere", "shape": {"radius": 0.5}, "position": {"x": 0, "y": 2, "z": 0}},
    {"shape_type": "Sphere", "shape": {"radius": 0.5}, "position": {"x": 2, "y": 2, "z": 0}},
    {"shape_type": "Sphere", "shape": {"radius": 0.5}, "position": {"x": 4, "y": 2, "z": 0}}]})";

/// What the room looks like, to check that a refused load changed nothing.
struct RoomLook
{
    std::string scene;
    std::size_t bodies = 0;
    std::uint64_t tick = 0;
    bool operator==(const RoomLook&) const = default;
};

RoomLook lookAt(const server::Room& room)
{
    return {room.config().scene, room.world().bodyCount(), room.tick()};
}

} // namespace

TEST_CASE("admin load: a built-in scene by name", "[server][admin][load]")
{
    TempDirectory scenes("admin_load");
    AdminLoop loop("default", scenes.path().string());
    loop.run(0.1);

    const auto [ok, message] = loop.load("stack10");
    INFO(message);
    CHECK(ok);
    CHECK(loop.room().config().scene == "stack10");
    CHECK(loop.room().world().bodyCount() == 11); // ten cubes and the ground
    CHECK_THAT(message, Catch::Contains("scene 'stack10'"));

    // The sized names of physics::parseSceneName are scene names too.
    const auto [sizedOk, sizedMessage] = loop.load("pile:20");
    INFO(sizedMessage);
    CHECK(sizedOk);
    CHECK(loop.room().world().bodyCount() == 21);
}

TEST_CASE("admin load: NAME and NAME.json read NAME.json in the scene directory", "[server][admin][load]")
{
    TempDirectory scenes("admin_load");
    writeFile(scenes.path() / "spheres.json", kThreeSpheres);
    AdminLoop loop("stack10", scenes.path().string());
    const std::size_t defaultBodies = [&]
    {
        AdminLoop other("default", scenes.path().string());
        return other.room().world().bodyCount();
    }();

    auto [ok, message] = loop.load("spheres");
    INFO(message);
    CHECK(ok);
    CHECK(loop.room().config().scene == "spheres");
    CHECK(loop.room().world().bodyCount() == defaultBodies + 3);

    loop.load("stack10");
    std::tie(ok, message) = loop.load("spheres.json");
    INFO(message);
    CHECK(ok);
    CHECK(loop.room().config().scene == "spheres");
    CHECK(loop.room().world().bodyCount() == defaultBodies + 3);

    // A reset reads the same file again.
    std::tie(ok, message) = loop.admin(wire::AdminOp::Reset);
    CHECK(ok);
    CHECK(loop.room().world().bodyCount() == defaultBodies + 3);
}

TEST_CASE("admin load: paths and files outside the scene directory get one answer that reveals nothing",
          "[server][admin][load][security]")
{
    TempDirectory root("admin_load");
    const fs::path scenes = root.path() / "scenes";
    fs::create_directories(scenes);
    // Valid scene files just outside the directory: a load that escaped it would succeed.
    writeFile(root.path() / "outside.json", kThreeSpheres);
    writeFile(root.path() / "x.json", kThreeSpheres);
    // Inside, things that are not regular files, and a link to the file outside.
    REQUIRE(::mkfifo((scenes / "pipe.json").c_str(), 0600) == 0);
    fs::create_directories(scenes / "folder.json");
    fs::create_symlink(root.path() / "outside.json", scenes / "link.json");

    AdminLoop loop("stack10", scenes.string());
    loop.run(0.05);
    const RoomLook before = lookAt(loop.room());

    const std::vector<std::string> refused = {
        "/etc/passwd",
        "/etc/shadow",
        "/etc/hostname",
        (root.path() / "outside.json").string(), // an absolute path to a valid scene
        (root.path() / "outside").string(),
        "../x",
        "../x.json",
        "..",
        "../../../../../../etc/passwd",
        "./spheres",
        "x.json.json", // NAME.json of a NAME that is itself a path: would be ./x.json of the working
                       // directory
        "scenes/../x",
        "sub/dir",
        ".hidden",
        "nosuch", // nothing of that name anywhere
        "pipe",   // a FIFO inside: must not block, and looks like nothing
        "pipe.json",
        "folder", // a directory inside
        "link",   // a symbolic link inside, to a valid scene outside
        "C:\\windows",
        "name with spaces",
        std::string("nul\0byte", 8),
        std::string(300, 'a').substr(0, 200), // longer than a scene name
        "\x1b[31mred",
        "",
    };
    for (const std::string& name : refused)
    {
        INFO("load '" << server::printableExcerpt(name) << "'");
        const auto [ok, message] = loop.load(name);
        CHECK_FALSE(ok);
        // Word for word the one message, with the name quoted escaped: nothing about files, errors or paths.
        CHECK(message == "scene kept: " + server::unknownSceneMessage(name));
        for (const char* leak : {"root", "instead got", "cannot", "opened", "read error", "No such", "denied",
                                 "FIFO", "regular", "directory '", "link", "larger", "line "})
        {
            if (name.find(leak) == std::string::npos)
            {
                CHECK_THAT(message, !Catch::Contains(leak));
            }
        }
        for (const char c : message)
        {
            CHECK((c >= 0x20 && c < 0x7f));
        }
        CHECK(lookAt(loop.room()) == before);
    }
    // The room still runs its scene, and a valid load still works after all that.
    loop.run(0.05);
    CHECK(loop.room().tick() > before.tick);
    CHECK(loop.load("pile:5").first);
}

TEST_CASE("admin load: a file in the scene directory that is too large or not a scene is refused and named",
          "[server][admin][load]")
{
    TempDirectory scenes("admin_load");
    // Sparse: the size check comes before any read.
    sparseFile(scenes.path() / "huge.json", server::kMaxSceneFileBytes + 1);
    writeFile(scenes.path() / "broken.json",
              R"({"bodies": [{"shape_type": "Sphere", "shape": {"radius": -1}}]})");
    writeFile(scenes.path() / "edge.json", std::string(server::kMaxSceneFileBytes - 2, ' ') + "{}");

    AdminLoop loop("stack10", scenes.path().string());
    const RoomLook before = lookAt(loop.room());

    auto [ok, message] = loop.load("huge");
    INFO(message);
    CHECK_FALSE(ok);
    CHECK_THAT(message, Catch::Contains("scene 'huge'") && Catch::Contains("larger than"));
    CHECK_THAT(message, !Catch::Contains(scenes.path().string()));
    CHECK(lookAt(loop.room()) == before);

    std::tie(ok, message) = loop.load("broken");
    INFO(message);
    CHECK_FALSE(ok);
    CHECK_THAT(message, Catch::Contains("scene 'broken'") && Catch::Contains("radius"));
    CHECK_THAT(message, !Catch::Contains(scenes.path().string()));
    CHECK(lookAt(loop.room()) == before);

    // Exactly at the cap is allowed (an empty scene: no bodies at all).
    std::tie(ok, message) = loop.load("edge");
    INFO(message);
    CHECK(ok);
    CHECK(loop.room().world().bodyCount() == 0);
}

TEST_CASE(
    "admin load: a scene whose geometry file is missing, linked, outside or broken is refused naming the "
    "field, and the old scene keeps running",
    "[server][admin][load][geometry]")
{
    TempDirectory root("admin_load_geometry");
    const fs::path scenes = root.path() / "scenes";
    fs::create_directories(scenes / "meshes");
    const std::string floor = "v -5 0 -5\nv -5 0 5\nv 5 0 5\nv 5 0 -5\nf 1 2 3 4\n";
    writeFile(scenes / "meshes" / "floor.obj", floor);
    writeFile(root.path() / "outside.obj", floor);
    fs::create_symlink(root.path() / "outside.obj", scenes / "meshes" / "link.obj");
    writeFile(scenes / "meshes" / "broken.obj", "v 0 0 0\nf 1 2 3\n");
    const auto sceneNaming = [](const std::string& file)
    {
        return R"({"bodies": [{"motion": "Static", "shape_type": "Mesh", "shape": {"file": ")" + file +
               R"("}}, {"shape_type": "Sphere", "shape": {"radius": 0.5}, "position": {"x": 0, "y": 2, "z": 0}}]})";
    };
    writeFile(scenes / "good.json", sceneNaming("meshes/floor.obj"));
    writeFile(scenes / "missing.json", sceneNaming("meshes/missing.obj"));
    writeFile(scenes / "linked.json", sceneNaming("meshes/link.obj"));
    writeFile(scenes / "outside.json", sceneNaming("../outside.obj"));
    writeFile(scenes / "broken.json", sceneNaming("meshes/broken.obj"));

    AdminLoop loop("stack10", scenes.string());
    const RoomLook before = lookAt(loop.room());
    const std::pair<const char*, const char*> refusals[] = {
        {"missing", "scene 'missing': bodies[0].shape.file: meshes/missing.obj: cannot be opened"},
        {"linked",
         "scene 'linked': bodies[0].shape.file: meshes/link.obj: a symbolic link, not allowed here"},
        {"outside",
         "scene 'outside': bodies[0].shape.file: leads out of the scene file's folder: ../outside.obj"},
        {"broken",
         "scene 'broken': bodies[0].shape.file: meshes/broken.obj: line 2: corner 2 names vertex 2, but "
         "the file has 1 vertices"},
    };
    for (const auto& [name, expected] : refusals)
    {
        const auto [ok, message] = loop.load(name);
        INFO(message);
        CHECK_FALSE(ok);
        CHECK_THAT(message, Catch::StartsWith(std::string("scene kept: ") + expected));
        CHECK_THAT(message, !Catch::Contains(root.path().string()));
        CHECK(lookAt(loop.room()) == before);
    }
    loop.run(0.05);
    CHECK(loop.room().tick() > before.tick);

    const auto [ok, message] = loop.load("good");
    INFO(message);
    CHECK(ok);
    CHECK(loop.room().world().meshCount() == 1);
    CHECK(loop.room().world().bodyCount() == 2);
}

TEST_CASE("scene names: the grammar admin load and --scene share", "[server][admin][load]")
{
    for (const char* name : {"default", "stack10", "pile:500", "my-scene_2", "arena.v2", "A"})
    {
        INFO(name);
        CHECK(server::isSceneName(name));
    }
    for (const char* name : {"", "/etc/passwd", "../x", "..", "a..b", ".hidden", "-flag", "a/b", "a\\b",
                             "a b", "caf\xc3\xa9", "x\n", "arena.json"})
    {
        INFO(server::printableExcerpt(name));
        CHECK_FALSE(server::isSceneName(name));
    }
    CHECK_FALSE(server::isSceneName(std::string(server::kMaxSceneNameBytes + 1, 'a')));
    CHECK(server::isSceneName(std::string(server::kMaxSceneNameBytes, 'a')));
    CHECK(server::sceneFileFor("/srv/scenes", "arena") == "/srv/scenes/arena.json");
    CHECK(server::sceneFileFor("/srv/scenes/", "arena") == "/srv/scenes/arena.json");
    CHECK(server::isScenePath("scenes/arena.json"));
    CHECK(server::isScenePath("arena.json"));
    CHECK_FALSE(server::isScenePath("arena"));
}

TEST_CASE("scene files: FIFOs, directories and devices are refused without blocking; sizes are capped",
          "[server][admin][load]")
{
    TempDirectory dir("admin_load");
    REQUIRE(::mkfifo((dir.path() / "pipe.json").c_str(), 0600) == 0);
    server::SceneDescription scene;
    std::string error;
    CHECK_FALSE(server::loadSceneFile((dir.path() / "pipe.json").string(), scene, error));
    CHECK_THAT(error, Catch::Contains("not a regular file (a FIFO)"));
    CHECK_FALSE(server::loadSceneFile(dir.path().string(), scene, error));
    CHECK_THAT(error, Catch::Contains("a directory"));
    CHECK_FALSE(server::loadSceneFile("/dev/zero", scene, error));
    CHECK_THAT(error, Catch::Contains("a character device"));

    // A symbolic link is followed for an operator's path, not by the scene directory's rules.
    writeFile(dir.path() / "real.json", kThreeSpheres);
    fs::create_symlink(dir.path() / "real.json", dir.path() / "alias.json");
    CHECK(server::loadSceneFile((dir.path() / "alias.json").string(), scene, error));
    server::FileStatus status = server::FileStatus::Ok;
    CHECK_FALSE(server::loadSceneFile((dir.path() / "alias.json").string(), server::kSceneDirectoryFileRules,
                                      scene, status, error));
    CHECK(status == server::FileStatus::CannotOpen);
    CHECK(server::loadSceneFile((dir.path() / "real.json").string(), server::kSceneDirectoryFileRules, scene,
                                status, error));
    CHECK(status == server::FileStatus::Ok);
    CHECK(scene.bodies.size() == 3);
}

TEST_CASE("admin load keeps only the geometry of the scene loaded, however many scenes came before",
          "[admin][geometry]")
{
    TempDirectory directory("admin_load_geometry");
    AdminLoop loop("convex_vs_mesh", directory.path().string());
    loop.run(0.1);
    const std::size_t meshScene = loop.room().replicator().geometry().size();
    CHECK(meshScene > 0);
    std::size_t terrainScene = 0;
    for (int round = 0; round < 3; ++round)
    {
        CAPTURE(round);
        REQUIRE(loop.load("default").first);
        loop.run(0.1);
        CHECK(loop.room().replicator().geometry().empty()); // spheres and boxes carry none
        REQUIRE(loop.load("terrain").first);
        loop.run(0.1);
        terrainScene = loop.room().replicator().geometry().size();
        CHECK(terrainScene > 0);
        REQUIRE(loop.load("convex_vs_mesh").first);
        loop.run(0.1);
        CHECK(loop.room().replicator().geometry().size() == meshScene);
        for (const auto& [hash, stored] : loop.room().replicator().geometry())
        {
            CHECK(stored.bodies > 0);
        }
    }
}

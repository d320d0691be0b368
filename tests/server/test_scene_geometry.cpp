// Scene files with meshes, heightfields, compounds, collision layers, groups and sensors:
// scenes/courtyard.json loads and builds; a geometry file named by several bodies is read once and shared;
// paths that leave the scene's folder and bad geometry files (missing, not regular, too large, malformed, a
// link where none is allowed) are refused naming the field and the file as the scene names it; every new
// value is checked.
#include "polytope/server/scene_file.h"
#include "support/temp_files.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace
{

using namespace polytope;
using physics::Vec3;
using test::TempDirectory;
using test::writeFile;
namespace fs = std::filesystem;

std::string scenesDir()
{
    // tests/server/this_file.cpp -> <repo>/scenes
    return (fs::path(__FILE__).parent_path().parent_path().parent_path() / "scenes").string();
}

/// A 10 x 10 m floor at y = 0 (one quad, facing up).
const std::string kFloorObj = "o Floor\nv -5 0 -5\nv -5 0 5\nv 5 0 5\nv 5 0 -5\nf 1 2 3 4\n";

/// A scene with one body whose JSON is `body`.
std::string oneBody(const std::string& body)
{
    return R"({"bodies": [{)" + body + "}]}";
}

/// Parses `json`, expecting failure; returns the error.
std::string parseError(const std::string& json)
{
    server::SceneDescription scene;
    std::string error;
    CHECK_FALSE(server::parseSceneJson(json, scene, error));
    CHECK_FALSE(error.empty());
    return error;
}

/// Writes `json` as scene.json in `dir` and loads it (geometry files included), expecting failure; returns
/// the error.
std::string loadError(const TempDirectory& dir, const std::string& json,
                      const server::FileRules& rules = {server::kMaxSceneFileBytes, true})
{
    writeFile(dir / "scene.json", json);
    server::SceneDescription scene;
    server::FileStatus status = server::FileStatus::Ok;
    std::string error;
    CHECK_FALSE(server::loadSceneFile(dir / "scene.json", rules, scene, status, error));
    CHECK(status == server::FileStatus::Ok);                     // the scene file itself was read
    CHECK(error.find(dir.path().string()) == std::string::npos); // the folder is not told
    return error;
}

std::string staticMesh(const std::string& file, const std::string& extra = {})
{
    return R"("motion": "Static", "shape_type": "Mesh", "shape": {"file": ")" + file + "\"" + extra + "}";
}

/// A compound of `count` spheres of radius 0.2 along x.
std::string spheresCompound(int count)
{
    std::string children;
    for (int i = 0; i < count; ++i)
    {
        children += std::string(i > 0 ? ", " : "") +
                    R"({"shape_type": "Sphere", "shape": {"radius": 0.2}, "position": {"x": )" +
                    std::to_string(0.5 * i) + R"(, "y": 0, "z": 0}})";
    }
    return R"("shape_type": "Compound", "shape": {"children": [)" + children + "]}";
}

} // namespace

TEST_CASE("scenes/courtyard.json loads its OBJ level and builds with a heightfield, compounds, a sensor and "
          "layers",
          "[scenefile][geometry]")
{
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::loadSceneFile(scenesDir() + "/courtyard.json", scene, error));
    CHECK(scene.name == "courtyard");
    REQUIRE(scene.geometry.size() == 2);
    CHECK(scene.geometry[0].type == physics::ShapeType::Mesh);
    CHECK(scene.geometry[0].file == "courtyard.obj");
    REQUIRE(scene.geometry[0].mesh);
    CHECK(scene.geometry[0].mesh->triangleCount() == 16 * 2 + 6 + 5 * 2); // floor, ramp, wall
    CHECK(scene.geometry[1].type == physics::ShapeType::HeightField);
    CHECK(scene.geometry[1].file.empty()); // inline
    REQUIRE(scene.geometry[1].heightField);
    CHECK(scene.geometry[1].heightField->sampleCountX() == 5);
    CHECK(scene.warnings.empty());
    REQUIRE(scene.bodies.size() == 9);
    CHECK(scene.bodies[2].desc.isSensor);
    CHECK(scene.bodies[2].desc.layer == 2);
    CHECK(scene.bodies[3].desc.shape.type == physics::ShapeType::Compound);
    CHECK(scene.bodies[4].childHulls.size() == 1);
    CHECK(scene.bodies[7].desc.group == 7);
    REQUIRE(scene.layerPairs.size() == 2);

    physics::World world;
    REQUIRE(server::buildScene(scene, world, error));
    CHECK(world.bodyCount() == 9);
    CHECK(world.meshCount() == 1);
    CHECK(world.heightFieldCount() == 1);
    CHECK(world.compounds().size() == 2);
    CHECK(world.hulls().size() == 1); // the arrow's head
    CHECK_FALSE(world.layersCollide(1, 1));
    CHECK_FALSE(world.layersCollide(1, 2));
    CHECK(world.layersCollide(0, 1));
    CHECK(world.layersCollide(2, 2));

    // Two seconds: everything lands on the mesh or the heightfield. The two boxes of layer 1 and the two
    // capsules of group 7, each pair placed overlapping on the floor, stay where they are: nothing pushes
    // them apart.
    for (int i = 0; i < 120; ++i)
    {
        REQUIRE(world.step(1.0f / 60.0f).ok());
    }
    std::vector<physics::BodyState> bodies;
    world.forEachBody([&](const physics::BodyState& b) { bodies.push_back(b); });
    REQUIRE(bodies.size() == 9);
    CHECK(bodies[2].isSensor);
    for (const physics::BodyState& b : bodies)
    {
        CAPTURE(b.id.index);
        CHECK(std::isfinite(b.transform.p.y));
        CHECK(b.transform.p.y > -0.1f); // nothing fell through the level
    }
    const auto horizontal = [](const physics::BodyState& a, const physics::BodyState& b)
    { return std::hypot(a.transform.p.x - b.transform.p.x, a.transform.p.z - b.transform.p.z); };
    CHECK(horizontal(bodies[5], bodies[6]) == Approx(std::hypot(0.3f, 0.2f)).margin(0.01));
    CHECK(horizontal(bodies[7], bodies[8]) == Approx(0.2f).margin(0.01));
}

TEST_CASE("a geometry file named by several bodies is read once and shared", "[scenefile][geometry]")
{
    TempDirectory dir("scene_geometry");
    fs::create_directories(dir.path() / "levels" / "sub");
    writeFile(dir.path() / "levels" / "floor.obj", kFloorObj);
    writeFile(dir / "scene.json", R"({"bodies": [
        {)" + staticMesh("levels/floor.obj") +
                                      R"(},
        {)" + staticMesh("./levels/floor.obj") +
                                      R"(, "position": {"x": 20, "y": 0, "z": 0}},
        {)" + staticMesh("levels/sub/../floor.obj") +
                                      R"(, "position": {"x": 40, "y": 0, "z": 0}},
        {"motion": "Kinematic", "shape_type": "Mesh",
         "shape": {"file": "levels/floor.obj", "scale": {"x": 2, "y": 1, "z": 0.5}},
         "position": {"x": 0, "y": 5, "z": 0}}]})");
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::loadSceneFile(dir / "scene.json", scene, error));
    REQUIRE(scene.geometry.size() == 2); // one file: as it is, and scaled
    CHECK(scene.geometry[0].file == "levels/floor.obj");
    CHECK(scene.geometry[0].field == "bodies[0].shape.file");
    CHECK(scene.geometry[1].scale == Vec3{2.0f, 1.0f, 0.5f});
    for (int i = 0; i < 3; ++i)
    {
        CHECK(scene.bodies[static_cast<std::size_t>(i)].geometry == 0);
    }
    CHECK(scene.bodies[3].geometry == 1);
    REQUIRE(scene.geometry[1].mesh);
    CHECK(scene.geometry[1].mesh->bounds().max == Vec3{10.0f, 0.0f, 2.5f});

    // Worlds built from the description hold the very same mesh objects.
    physics::World first;
    physics::World second;
    REQUIRE(server::buildScene(scene, first, error));
    REQUIRE(server::buildScene(scene, second, error));
    CHECK(first.meshCount() == 2);
    CHECK(&first.mesh(0) == scene.geometry[0].mesh.get());
    CHECK(&second.mesh(0) == &first.mesh(0));
    CHECK(first.bodyCount() == 4);
    CHECK(first.stateHash() == second.stateHash());
}

TEST_CASE("geometry paths must stay in the scene file's folder and name a known format",
          "[scenefile][geometry]")
{
    CHECK(parseError(oneBody(staticMesh("/etc/level.obj"))) ==
          "bodies[0].shape.file: absolute path not allowed here: /etc/level.obj");
    CHECK(parseError(oneBody(staticMesh("../level.obj"))) ==
          "bodies[0].shape.file: leads out of the scene file's folder: ../level.obj");
    CHECK(parseError(oneBody(staticMesh("a/../../level.obj"))) ==
          "bodies[0].shape.file: leads out of the scene file's folder: a/../../level.obj");
    CHECK(parseError(oneBody(staticMesh(""))) == "bodies[0].shape.file: empty path");
    CHECK(parseError(oneBody(staticMesh("level.stl"))) ==
          "bodies[0].shape.file: not a mesh file: 'level.stl' (a mesh file is .obj, .gltf or .glb)");
    CHECK(parseError(oneBody(staticMesh(std::string(1100, 'a') + ".obj"))) ==
          "bodies[0].shape.file: longer than 1024 bytes");
    CHECK(parseError(oneBody(
              R"("motion": "Static", "shape_type": "HeightField", "shape": {"file": "hills.tif"})")) ==
          "bodies[0].shape.file: not a heightfield file: 'hills.tif' (a heightfield file is .png, .raw or "
          ".r16)");
    CHECK(parseError(oneBody(R"("motion": "Static", "shape_type": "Mesh", "shape": {})"))
              .find("required field is missing: file") != std::string::npos);

    // A scene given as text has no folder: it parses, but cannot be built until its files are loaded.
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::parseSceneJson(oneBody(staticMesh("level.obj")), scene, error));
    CHECK_FALSE(scene.geometryLoaded());
    physics::World world;
    CHECK_FALSE(server::buildScene(scene, world, error));
    CHECK(error.find("bodies[0].shape.file: 'level.obj' is not loaded") == 0);
}

TEST_CASE(
    "missing, irregular, oversized, malformed and linked geometry files are refused naming the field and "
    "the file",
    "[scenefile][geometry]")
{
    TempDirectory dir("scene_geometry_bad");
    writeFile(dir / "floor.obj", kFloorObj);

    CHECK(loadError(dir, oneBody(staticMesh("missing.obj"))) ==
          "bodies[0].shape.file: missing.obj: cannot be opened (No such file or directory)");
    fs::create_directory(dir.path() / "folder.obj");
    CHECK(loadError(dir, oneBody(staticMesh("folder.obj"))) ==
          "bodies[0].shape.file: folder.obj: not a regular file (a directory)");
    REQUIRE(::mkfifo((dir.path() / "pipe.obj").c_str(), 0600) == 0);
    CHECK(loadError(dir, oneBody(staticMesh("pipe.obj"))) ==
          "bodies[0].shape.file: pipe.obj: not a regular file (a FIFO)"); // and it did not block
    test::sparseFile(dir.path() / "huge.obj", server::kMaxSceneMeshFileBytes + 1);
    CHECK(loadError(dir, oneBody(staticMesh("huge.obj"))) ==
          "bodies[0].shape.file: huge.obj: larger than 67108864 bytes (67108865)");
    writeFile(dir / "broken.obj", "v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 3 9\n");
    CHECK(loadError(dir, oneBody(staticMesh("broken.obj"))) ==
          "bodies[0].shape.file: broken.obj: line 4: corner 3 names vertex 9, but the file has 3 vertices");
    writeFile(dir / "flat.obj", "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n");
    CHECK(loadError(dir, oneBody(staticMesh("flat.obj")))
              .find("bodies[0].shape.file: flat.obj: no triangles") == 0);
    // The second body's file is the bad one: the field names it.
    CHECK(loadError(dir,
                    R"({"bodies": [{)" + staticMesh("floor.obj") + "}, {" + staticMesh("missing.obj") + "}]}")
              .find("bodies[1].shape.file: missing.obj: ") == 0);
    // Scaled beyond the world's bounds.
    writeFile(dir / "wide.obj", "v -500 0 -500\nv -500 0 500\nv 500 0 500\nv 500 0 -500\nf 1 2 3 4\n");
    CHECK(loadError(dir, oneBody(staticMesh("wide.obj", R"(, "scale": {"x": 10000, "y": 1, "z": 1})"))) ==
          "bodies[0].shape.file: wide.obj: vertex 0 lies beyond 1e+06 m once scaled");

    // A symbolic link is read where links are followed (an operator's --scene path) and refused where they
    // are not (the scene directory of admin load).
    fs::create_symlink(dir.path() / "floor.obj", dir.path() / "link.obj");
    CHECK(loadError(dir, oneBody(staticMesh("link.obj")), server::kSceneDirectoryFileRules) ==
          "bodies[0].shape.file: link.obj: a symbolic link, not allowed here");
    writeFile(dir / "scene.json", oneBody(staticMesh("link.obj")));
    server::SceneDescription scene;
    std::string error;
    CHECK(server::loadSceneFile(dir / "scene.json", scene, error));

    // Heightfield files: a raw file of the wrong size.
    writeFile(dir / "hills.raw", std::string(17, '\0'));
    CHECK(loadError(dir, oneBody(R"("motion": "Static", "shape_type": "HeightField",
                                    "shape": {"file": "hills.raw", "samples_x": 3, "samples_z": 3})")) ==
          "bodies[0].shape.file: hills.raw: a raw file of 17 bytes, but 3 x 3 samples of 2 bytes take 18");
}

TEST_CASE("heightfields from raw files and inline heights, and their checks", "[scenefile][geometry]")
{
    TempDirectory dir("scene_heightfield");
    // 3 x 3 little-endian samples: 0 .. 8; as a hole sample, 8 makes the corner cell a hole.
    std::string raw;
    for (int s = 0; s < 9; ++s)
    {
        raw += static_cast<char>(s);
        raw += '\0';
    }
    writeFile(dir / "hills.r16", raw);
    writeFile(dir / "scene.json", R"({"bodies": [
        {"motion": "Static", "shape_type": "HeightField",
         "shape": {"file": "hills.r16", "samples_x": 3, "samples_z": 3, "cell_size_x": 2, "cell_size_z": 0.5,
                   "height_scale": 0.25, "height_offset": -1}},
        {"motion": "Kinematic", "shape_type": "HeightField",
         "shape": {"file": "hills.r16", "samples_x": 3, "samples_z": 3, "hole_sample": 8}},
        {"motion": "Static", "shape_type": "HeightField",
         "shape": {"heights": [0, 1, 2, 3], "samples_x": 2, "samples_z": 2}}]})");
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::loadSceneFile(dir / "scene.json", scene, error));
    REQUIRE(scene.geometry.size() == 3); // the same file with other parameters is another field
    const physics::HeightField& field = *scene.geometry[0].heightField;
    CHECK(field.cellSizeX() == 2.0f);
    CHECK(field.cellSizeZ() == 0.5f);
    CHECK(field.vertex(2, 2) == Vec3{4.0f, -1.0f + 0.25f * 8.0f, 1.0f});
    CHECK(scene.geometry[1].heightField->hasHoles());
    CHECK(scene.geometry[2].heightField->localBounds().max.y == Approx(3.0f));
    physics::World world;
    REQUIRE(server::buildScene(scene, world, error));
    CHECK(world.heightFieldCount() == 3);

    const std::string prefix = R"("motion": "Static", "shape_type": "HeightField", "shape": )";
    CHECK(parseError(oneBody(prefix + R"({"samples_x": 2})")) ==
          "bodies[0].shape: give file (a heightfield file) or heights (inline), one of them");
    CHECK(parseError(oneBody(prefix + R"({"file": "a.png", "heights": [1]})")) ==
          "bodies[0].shape: give file or heights, not both");
    CHECK(parseError(oneBody(prefix + R"({"heights": [0, 1, 2], "samples_x": 2, "samples_z": 2})")) ==
          "bodies[0].shape.heights: must hold samples_x * samples_z = 4 heights (got 3)");
    CHECK(parseError(oneBody(prefix + R"({"heights": [0, 1, nan, 3], "samples_x": 2, "samples_z": 2})")) ==
          "bodies[0].shape.heights[2]: must be finite (got nan)");
    CHECK(parseError(oneBody(prefix + R"({"heights": [0, 1, 2, 3], "samples_x": 2})")) ==
          "bodies[0].shape.samples_z: missing (required with heights)");
    CHECK(parseError(oneBody(prefix + R"({"heights": [0, 1], "samples_x": 1, "samples_z": 2})")) ==
          "bodies[0].shape.samples_x: must be in [2, 4097] (got 1)");
    CHECK(parseError(oneBody(prefix + R"({"heights": [0, 1, 2, 3], "samples_x": 2, "samples_z": 2,
                                          "height_scale": 2})")) ==
          "bodies[0].shape.height_scale: only for a heightfield file (inline heights are metres)");
    CHECK(parseError(oneBody(prefix + R"({"heights": [0, 1, 2, 3], "samples_x": 2, "samples_z": 2,
                                          "cell_size_x": 0})")) ==
          "bodies[0].shape.cell_size_x: must be positive (got 0)");
    std::string many = "0";
    for (std::size_t i = 1; i < server::kMaxSceneInlineHeights + 1; ++i)
    {
        many += ", 0";
    }
    CHECK(parseError(oneBody(prefix + R"({"heights": [)" + many + R"(], "samples_x": 2, "samples_z": 2})")) ==
          "bodies[0].shape.heights: too many (16642, at most 16641; put a larger field in a file)");
    CHECK(parseError(oneBody(prefix + R"({"file": "a.png", "samples_x": 3})")) ==
          "bodies[0].shape.samples_x: only for a raw file or inline heights (a PNG's size is its image's)");
    CHECK(parseError(oneBody(prefix + R"({"file": "a.raw", "samples_x": 3})")) ==
          "bodies[0].shape.samples_z: missing (required for a raw file)");
    CHECK(parseError(oneBody(prefix + R"({"file": "a.png", "height_scale": -1})")) ==
          "bodies[0].shape.height_scale: must be positive (got -1)");
    CHECK(parseError(oneBody(prefix + R"({"file": "a.png", "hole_sample": 65536})")) ==
          "bodies[0].shape.hole_sample: must be in [0, 65535] (got 65536)");
}

TEST_CASE("meshes and heightfields go on Static or Kinematic bodies, never on a player",
          "[scenefile][geometry]")
{
    CHECK(parseError(oneBody(R"("shape_type": "Mesh", "shape": {"file": "level.obj"})")) ==
          "bodies[0].motion: a Mesh shape needs motion Static or Kinematic (got Dynamic)");
    CHECK(parseError(oneBody(R"("shape_type": "HeightField", "shape": {"file": "hills.png"})")) ==
          "bodies[0].motion: a HeightField shape needs motion Static or Kinematic (got Dynamic)");
    CHECK(parseError(
              R"({"player": {"motion": "Kinematic", "shape_type": "Mesh", "shape": {"file": "a.obj"}}})") ==
          "player.shape_type: must be Sphere, Capsule, Box, Hull or Compound (got Mesh)");
    server::SceneDescription scene;
    std::string error;
    CHECK(server::parseSceneJson(oneBody(R"("motion": "Kinematic", "shape_type": "Mesh",
                                            "shape": {"file": "level.glb"})"),
                                 scene, error));
}

TEST_CASE("compound children are checked one by one, and equal compounds share a catalogue entry",
          "[scenefile][geometry]")
{
    CHECK(parseError(oneBody(R"("shape_type": "Compound", "shape": {"children": []})")) ==
          "bodies[0].shape.children: must list 1 to 64 children (got 0)");
    CHECK(parseError(oneBody(spheresCompound(65))) ==
          "bodies[0].shape.children: must list 1 to 64 children (got 65)");
    CHECK(parseError(oneBody(R"("shape_type": "Compound", "shape": {"children": [
        {"shape_type": "Box", "shape": {"half_extents": {"x": 1, "y": 1, "z": 1}}},
        {"shape_type": "Sphere", "shape": {"radius": -1}}]})")) ==
          "bodies[0].shape.children[1].shape.radius: must be positive (got -1)");
    CHECK(parseError(oneBody(R"("shape_type": "Compound", "shape": {"children": [
        {"shape_type": "Sphere", "shape": {"radius": 1}, "orientation": {"x": 0, "y": 0, "z": 0, "w": 1},
         "euler_degrees": {"x": 0, "y": 0, "z": 0}}]})")) ==
          "bodies[0].shape.children[0].orientation: give orientation or euler_degrees, not both");
    CHECK(parseError(oneBody(R"("shape_type": "Compound", "shape": {"children": [
        {"shape_type": "Sphere", "shape": {"radius": 1}, "position": {"x": 20000, "y": 0, "z": 0}}]})")) ==
          "bodies[0].shape.children[0].position.x: must be in [-10000, 10000] (got 20000)");
    CHECK(parseError(oneBody(R"("shape_type": "Compound", "shape": {"children": [
        {"shape_type": "Hull", "shape": {"points": [{"x": 0, "y": 0, "z": 0}, {"x": 1, "y": 0, "z": 0},
                                                    {"x": 2, "y": 0, "z": 0}, {"x": 3, "y": 0, "z": 0}]}}]})"))
              .find("bodies[0].shape.children[0].shape.points: no convex hull") == 0);
    CHECK(parseError(oneBody(R"("shape_type": "Compound", "shape": {"children": [
        {"shape_type": "Plane", "shape": {"normal": {"x": 0, "y": 1, "z": 0}}}]})"))
              .find("line ") == 0); // not a ChildShape: the parser refuses it

    // Identical compounds (hull children included) are one catalogue entry; the player's too.
    const std::string lamp = R"("shape_type": "Compound", "shape": {"children": [
        {"shape_type": "Capsule", "shape": {"radius": 0.1, "half_height": 0.5}},
        {"shape_type": "Hull", "shape": {"points": [{"x": -0.3, "y": 0, "z": -0.3}, {"x": 0.3, "y": 0, "z": -0.3},
                                                    {"x": 0, "y": 0, "z": 0.3}, {"x": 0, "y": 0.3, "z": 0}]},
         "position": {"x": 0, "y": 0.6, "z": 0}, "euler_degrees": {"x": 10, "y": 0, "z": 0}}]})";
    const std::string json = R"({"bodies": [{)" + lamp + R"(, "position": {"x": 0, "y": 1, "z": 0}},
        {)" + lamp + R"(, "position": {"x": 2, "y": 1, "z": 0}, "motion": "Static"},
        {)" + spheresCompound(3) +
                             R"(}],
      "player": {)" + lamp + R"(}, "spawn_points": [{"x": 5, "y": 1, "z": 0}]})";
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::parseSceneJson(json, scene, error));
    physics::World world;
    REQUIRE(server::buildScene(scene, world, error));
    CHECK(world.compounds().size() == 2);
    CHECK(world.hulls().size() == 1);
    physics::BodyDesc player;
    for (int i = 0; i < 3; ++i)
    {
        REQUIRE(server::makePlayerBody(scene, i, world, player, error));
        CHECK(player.shape.type == physics::ShapeType::Compound);
        CHECK(player.shape.catalogueIndex == 0);
        CHECK(world.createBody(player).status == physics::WorldStatus::Ok);
    }
    CHECK(world.compounds().size() == 2);
    CHECK(world.hulls().size() == 1);
    // A player made in a world that never built the scene adds what it needs.
    physics::World fresh;
    REQUIRE(server::makePlayerBody(scene, 0, fresh, player, error));
    CHECK(fresh.compounds().size() == 1);
    CHECK(fresh.createBody(player).status == physics::WorldStatus::Ok);
}

TEST_CASE("layers, groups, sensors and the layer table", "[scenefile][geometry]")
{
    const std::string box =
        R"("shape_type": "Box", "shape": {"half_extents": {"x": 0.5, "y": 0.5, "z": 0.5}})";
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::parseSceneJson(R"({"bodies": [{)" + box + R"(, "layer": 31, "group": 4000000000,
                                         "is_sensor": true}],
                                       "layer_pairs": [{"a": 3, "b": 5, "collide": false},
                                                       {"a": 4, "b": 4, "collide": false},
                                                       {"a": 0, "b": 31, "collide": true}]})",
                                   scene, error));
    CHECK(scene.bodies[0].desc.layer == 31);
    CHECK(scene.bodies[0].desc.group == 4000000000u);
    CHECK(scene.bodies[0].desc.isSensor);
    physics::World world;
    REQUIRE(server::buildScene(scene, world, error));
    CHECK_FALSE(world.layersCollide(5, 3));
    CHECK_FALSE(world.layersCollide(4, 4));
    CHECK(world.layersCollide(0, 31));
    CHECK(world.layersCollide(3, 4));
    physics::BodyState body;
    world.forEachBody([&](const physics::BodyState& b) { body = b; });
    CHECK(body.isSensor);
    CHECK(body.layer == 31);

    CHECK(parseError(oneBody(box + R"(, "layer": 32)")) == "bodies[0].layer: must be in [0, 31] (got 32)");
    CHECK(parseError(oneBody(box + R"(, "group": -1)")).find("line 1") == 0);
    CHECK(parseError(R"({"layer_pairs": [{"b": 1, "collide": false}]})") ==
          "layer_pairs[0].a: missing (required)");
    CHECK(parseError(R"({"layer_pairs": [{"a": 1, "b": 40, "collide": false}]})") ==
          "layer_pairs[0].b: must be in [0, 31] (got 40)");
    CHECK(parseError(R"({"layer_pairs": [{"a": 1, "b": 2}]})") ==
          "layer_pairs[0].collide: missing (required)");
    CHECK(parseError(R"({"layer_pairs": [{"a": 1, "b": 2, "collide": false},
                                         {"a": 2, "b": 1, "collide": true}]})") ==
          "layer_pairs[1]: layers 1 and 2 are already given by layer_pairs[0]");
}

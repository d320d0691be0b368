// Scene files: the examples in scenes/ load and build; values survive the trip from JSON; each kind of bad
// input is refused with an error naming the field; building gives the described world.
#include "polytope/physics/scenes.h"
#include "polytope/server/scene_file.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

namespace
{

using namespace polytope;
using physics::Vec3;

std::string scenesDir()
{
    // tests/server/this_file.cpp -> <repo>/scenes
    return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "scenes").string();
}

/// Parses `json`, expecting failure; returns the error.
std::string parseError(const std::string& json)
{
    server::SceneDescription scene;
    std::string error;
    const bool ok = server::parseSceneJson(json, scene, error);
    CHECK_FALSE(ok);
    CHECK_FALSE(error.empty());
    return error;
}

/// A scene with one body whose JSON is `body`.
std::string oneBody(const std::string& body)
{
    return R"({"bodies": [{)" + body + "}]}";
}

const std::string kUnitBox =
    R"("shape_type": "Box", "shape": {"half_extents": {"x": 0.5, "y": 0.5, "z": 0.5}})";

bool near(float a, float b, float tolerance = 1e-6f)
{
    return std::fabs(a - b) <= tolerance;
}

} // namespace

TEST_CASE("scenes/arena.json parses and builds")
{
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::loadSceneFile(scenesDir() + "/arena.json", scene, error));
    CHECK(error.empty());
    CHECK(scene.name == "arena");
    CHECK(scene.builtin.empty());
    CHECK(scene.bodies.size() == 8);
    REQUIRE(scene.player.has_value());
    CHECK(scene.player->desc.shape.type == physics::ShapeType::Capsule);
    CHECK(scene.spawnPoints.size() == 4);
    CHECK(scene.allowClientSpawn);
    CHECK(scene.maxBodiesPerClient == 8);
    CHECK_FALSE(scene.keepBodiesOnLeave);

    physics::World world;
    REQUIRE(server::buildScene(scene, world, error));
    CHECK(world.bodyCount() == 8);
    CHECK(world.hulls().size() == 1);
    int planes = 0;
    int boxes = 0;
    world.forEachBody(
        [&](const physics::BodyState& body)
        {
            planes += body.shape.type == physics::ShapeType::Plane ? 1 : 0;
            boxes += body.shape.type == physics::ShapeType::Box ? 1 : 0;
        });
    CHECK(planes == 1);
    CHECK(boxes == 5);
    for (int i = 0; i < 60; ++i)
    {
        CHECK(world.step(1.0f / 60.0f).ok());
    }
}

TEST_CASE("scenes/stack_plus.json parses and builds on top of its built-in scene")
{
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::loadSceneFile(scenesDir() + "/stack_plus.json", scene, error));
    CHECK(scene.builtin == "stack10");
    CHECK(scene.bodies.size() == 3);
    CHECK(scene.bodies[1].desc.type == physics::BodyType::Kinematic);
    CHECK(scene.bodies[2].desc.allowedDofs == physics::planarDofs(2));
    physics::World world;
    REQUIRE(server::buildScene(scene, world, error));
    CHECK(world.bodyCount() == 1 + 10 + 3); // ground and 10 cubes, then the file's 3 bodies
}

TEST_CASE("scene field values survive parsing")
{
    const std::string json = R"({
      "name": "all fields",
      "gravity": {"x": 1, "y": -3.5, "z": 0.25},
      "builtin": "ramp",
      "bodies": [{
        "motion": "Kinematic",
        "shape_type": "Capsule",
        "shape": {"radius": 0.3, "half_height": 0.7},
        "position": {"x": 1, "y": 2, "z": -3},
        "orientation": {"x": 0, "y": 0, "z": 2, "w": 0},
        "linear_velocity": {"x": 4, "y": 5, "z": 6},
        "angular_velocity": {"x": -1, "y": 0.5, "z": 0},
        "density": 250,
        "friction": 0.1,
        "restitution": 0.9,
        "linear_damping": 0.2,
        "angular_damping": 0.3,
        "gravity_scale": -0.5,
        "planar": "Y",
        "allow_sleep": false
      }, {
        "motion": "Static",
        "shape_type": "Plane",
        "shape": {"normal": {"x": 0, "y": 0, "z": 3}, "offset": -2}
      }, {
        "shape_type": "Sphere",
        "shape": {"radius": 2},
        "euler_degrees": {"x": 0, "y": 0, "z": 90}
      }],
      "player": {"shape_type": "Box", "shape": {"half_extents": {"x": 0.1, "y": 0.2, "z": 0.3}}, "motion": "Kinematic"},
      "spawn_points": [{"x": 1, "y": 2, "z": 3}, {"x": -1, "y": -2, "z": -3}],
      "allow_client_spawn": true,
      "max_bodies_per_client": 3,
      "keep_bodies_on_leave": true
    })";
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::parseSceneJson(json, scene, error));
    CHECK(scene.name == "all fields");
    CHECK(scene.gravity == Vec3{1.0f, -3.5f, 0.25f});
    CHECK(scene.builtin == "ramp");
    REQUIRE(scene.bodies.size() == 3);

    const physics::BodyDesc& a = scene.bodies[0].desc;
    CHECK(a.type == physics::BodyType::Kinematic);
    CHECK(a.shape.type == physics::ShapeType::Capsule);
    CHECK(a.shape.capsule.radius == 0.3f);
    CHECK(a.shape.capsule.halfHeight == 0.7f);
    CHECK(a.transform.p == Vec3{1.0f, 2.0f, -3.0f});
    CHECK(a.transform.q == physics::Quat{0.0f, 0.0f, 1.0f, 0.0f}); // normalised
    CHECK(a.linearVelocity == Vec3{4.0f, 5.0f, 6.0f});
    CHECK(a.angularVelocity == Vec3{-1.0f, 0.5f, 0.0f});
    CHECK(a.density == 250.0f);
    CHECK(a.friction == 0.1f);
    CHECK(a.restitution == 0.9f);
    CHECK(a.linearDamping == 0.2f);
    CHECK(a.angularDamping == 0.3f);
    CHECK(a.gravityScale == -0.5f);
    CHECK(a.allowedDofs == physics::planarDofs(1));
    CHECK_FALSE(a.allowSleep);

    const physics::BodyDesc& plane = scene.bodies[1].desc;
    CHECK(plane.type == physics::BodyType::Static);
    CHECK(plane.shape.type == physics::ShapeType::Plane);
    CHECK(plane.shape.plane.normal == Vec3{0.0f, 0.0f, 1.0f}); // normalised
    CHECK(plane.shape.plane.offset == -2.0f);

    // Defaults, and euler_degrees: 90 degrees about world z.
    const physics::BodyDesc& sphere = scene.bodies[2].desc;
    const physics::BodyDesc defaults;
    CHECK(sphere.type == physics::BodyType::Dynamic);
    CHECK(sphere.density == defaults.density);
    CHECK(sphere.friction == defaults.friction);
    CHECK(sphere.restitution == defaults.restitution);
    CHECK(sphere.gravityScale == defaults.gravityScale);
    CHECK(sphere.allowedDofs == physics::kDofAll);
    CHECK(sphere.allowSleep);
    CHECK(sphere.transform.p == Vec3{});
    const Vec3 xTurned = physics::rotate(sphere.transform.q, Vec3{1.0f, 0.0f, 0.0f});
    CHECK(near(xTurned.x, 0.0f));
    CHECK(near(xTurned.y, 1.0f));
    CHECK(near(xTurned.z, 0.0f));

    REQUIRE(scene.player.has_value());
    CHECK(scene.player->desc.type == physics::BodyType::Kinematic);
    CHECK(scene.player->desc.shape.box.halfExtents == Vec3{0.1f, 0.2f, 0.3f});
    REQUIRE(scene.spawnPoints.size() == 2);
    CHECK(scene.spawnPoints[1] == Vec3{-1.0f, -2.0f, -3.0f});
    CHECK(scene.allowClientSpawn);
    CHECK(scene.maxBodiesPerClient == 3);
    CHECK(scene.keepBodiesOnLeave);

    // An empty object is a valid, empty scene with the documented defaults.
    server::SceneDescription empty;
    REQUIRE(server::parseSceneJson("{}", empty, error));
    CHECK(empty.bodies.empty());
    CHECK(empty.gravity == Vec3{0.0f, -9.81f, 0.0f});
    CHECK_FALSE(empty.player.has_value());
    CHECK_FALSE(empty.allowClientSpawn);
    CHECK(empty.maxBodiesPerClient == 16);
}

TEST_CASE("euler_degrees rotate about x, then y, then z (world axes)")
{
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::parseSceneJson(oneBody(kUnitBox + R"(, "euler_degrees": {"x": 90, "y": 90, "z": 0})"),
                                   scene, error));
    // x by 90: +y goes to +z; then y by 90: +z goes to +x.
    const Vec3 up = physics::rotate(scene.bodies[0].desc.transform.q, Vec3{0.0f, 1.0f, 0.0f});
    CHECK(near(up.x, 1.0f, 1e-5f));
    CHECK(near(up.y, 0.0f, 1e-5f));
    CHECK(near(up.z, 0.0f, 1e-5f));
}

TEST_CASE("malformed scene JSON is refused with the parser's position")
{
    const std::string error =
        parseError("{\n  \"name\": \"x\",\n  \"bodies\": [ { \"shape_type\": \"Sphere\" \n");
    CHECK(error.find("line ") != std::string::npos);
    CHECK(error.find("column") != std::string::npos);
    CHECK(parseError("").find("line ") != std::string::npos);
    CHECK(parseError("[1, 2]").find("line 1") != std::string::npos);
    // Trailing commas and unquoted names are not JSON.
    CHECK(parseError(R"({"name": "x",})").find("line 1") != std::string::npos);
    CHECK(parseError(R"({name: "x"})").find("line 1") != std::string::npos);
    CHECK(parseError(R"({} {})").find("line 1") != std::string::npos);
}

TEST_CASE("unknown scene fields are refused")
{
    CHECK(parseError("{\n\"colour\": 3}").find("line 2, column") != std::string::npos);
    CHECK(parseError(R"({"colour": 3})").find("unknown field: colour") != std::string::npos);
    CHECK(parseError(oneBody(kUnitBox + R"(, "mass": 3)")).find("unknown field: mass") != std::string::npos);
    CHECK(parseError(oneBody(R"("shape_type": "Sphere", "shape": {"radius": 1, "height": 2})"))
              .find("unknown field: height") != std::string::npos);
}

TEST_CASE("NaN and infinity in scene files are refused")
{
    CHECK(parseError(oneBody(kUnitBox + R"(, "density": nan)")) ==
          "bodies[0].density: must be finite (got nan)");
    CHECK(parseError(oneBody(kUnitBox + R"(, "position": {"x": 0, "y": inf, "z": 0})")) ==
          "bodies[0].position.y: must be finite (got inf)");
    CHECK(parseError(R"({"gravity": {"x": 0, "y": -inf, "z": 0}})") ==
          "gravity.y: must be finite (got -inf)");
    CHECK(parseError(oneBody(R"("shape_type": "Sphere", "shape": {"radius": nan})")) ==
          "bodies[0].shape.radius: must be finite (got nan)");
    CHECK(parseError(R"({"spawn_points": [{"x": 0, "y": 0, "z": 0}, {"x": nan, "y": 0, "z": 0}]})") ==
          "spawn_points[1].x: must be finite (got nan)");
    CHECK(parseError(oneBody(kUnitBox + R"(, "orientation": {"x": 0, "y": 0, "z": 0, "w": inf})"))
              .find("bodies[0].orientation.w: must be finite") == 0);
    // Finite values that overflow a float become infinite in the parser: refused as well.
    CHECK(parseError(oneBody(kUnitBox + R"(, "friction": 1e60)")).find("bodies[0].friction: must be") == 0);
}

TEST_CASE("zero and negative sizes in scene files are refused")
{
    const std::string box = "{" + kUnitBox + "}";
    CHECK(parseError(R"({"bodies": [)" + box + ", " + box + ", " + box + ", " +
                     R"({"shape_type": "Box", "shape": {"half_extents": {"x": 1, "y": -1, "z": 1}}}]})") ==
          "bodies[3].shape.half_extents.y: must be positive (got -1)");
    CHECK(parseError(oneBody(R"("shape_type": "Sphere", "shape": {"radius": 0})")) ==
          "bodies[0].shape.radius: must be positive (got 0)");
    CHECK(parseError(oneBody(R"("shape_type": "Capsule", "shape": {"radius": 1, "half_height": -0.5})")) ==
          "bodies[0].shape.half_height: must be positive (got -0.5)");
    CHECK(parseError(oneBody(R"("shape_type": "Capsule", "shape": {"radius": 1})")) ==
          "bodies[0].shape.half_height: missing (required)");
    CHECK(parseError(oneBody(R"("shape_type": "Sphere", "shape": {"radius": 1e5})")) ==
          "bodies[0].shape.radius: must be at most 10000 (got 1e+05)");
    CHECK(parseError(oneBody(kUnitBox + R"(, "density": -5)")) ==
          "bodies[0].density: must be in [0.001, 1e+06] (got -5)");
    CHECK(parseError(oneBody(kUnitBox + R"(, "restitution": 1.5)")) ==
          "bodies[0].restitution: must be in [0, 1] (got 1.5)");
}

TEST_CASE("degenerate and oversized hulls in scene files are refused")
{
    const std::string flat = R"("shape_type": "Hull", "shape": {"points": [
        {"x": 0, "y": 0, "z": 0}, {"x": 1, "y": 0, "z": 0}, {"x": 0, "y": 0, "z": 1}, {"x": 1, "y": 0, "z": 1}]})";
    CHECK(parseError(oneBody(flat)).find("bodies[0].shape.points: no convex hull: Degenerate") == 0);
    const std::string three = R"("shape_type": "Hull", "shape": {"points": [
        {"x": 0, "y": 0, "z": 0}, {"x": 1, "y": 0, "z": 0}, {"x": 0, "y": 1, "z": 0}]})";
    CHECK(parseError(oneBody(three)) == "bodies[0].shape.points: must list 4 to 1024 points (got 3)");
    std::string many = R"("shape_type": "Hull", "shape": {"points": [)";
    for (int i = 0; i < 1025; ++i)
    {
        many += (i ? ", " : "") + std::string(R"({"x": )") + std::to_string(i % 7) + R"(, "y": )" +
                std::to_string(i % 11) + R"(, "z": )" + std::to_string(i % 13) + "}";
    }
    many += "]}";
    CHECK(parseError(oneBody(many)) == "bodies[0].shape.points: must list 4 to 1024 points (got 1025)");
    const std::string nanPoint = R"("shape_type": "Hull", "shape": {"points": [
        {"x": 0, "y": 0, "z": 0}, {"x": 1, "y": 0, "z": 0}, {"x": 0, "y": 1, "z": 0}, {"x": 0, "y": 0, "z": nan}]})";
    CHECK(parseError(oneBody(nanPoint)) == "bodies[0].shape.points[3].z: must be finite (got nan)");
}

TEST_CASE("unknown built-in scene names are refused")
{
    const std::string error = parseError(R"({"builtin": "stack11"})");
    CHECK(error.find("builtin: unknown built-in scene \"stack11\"") == 0);
    CHECK(error.find("stack10") != std::string::npos); // lists the known names
}

TEST_CASE("too many bodies in a scene file are refused")
{
    std::string json = R"({"bodies": [)";
    const std::string body = R"({"shape_type": "Sphere", "shape": {"radius": 1}})";
    json.reserve((body.size() + 1) * (server::kMaxSceneBodies + 1) + 16);
    for (std::size_t i = 0; i <= server::kMaxSceneBodies; ++i)
    {
        json += (i ? "," : "") + body;
    }
    json += "]}";
    CHECK(parseError(json) == "bodies: too many (100001, at most 100000)");
}

TEST_CASE("bad enum values in scene files are refused")
{
    CHECK(parseError(oneBody(kUnitBox + R"(, "motion": "Floating")")).find("unknown enum value: Floating") !=
          std::string::npos);
    CHECK(parseError(oneBody(kUnitBox + R"(, "motion": 7)")) ==
          "bodies[0].motion: unknown motion type 7 (Static, Kinematic or Dynamic)");
    CHECK(parseError(oneBody(kUnitBox + R"(, "planar": 9)")) ==
          "bodies[0].planar: unknown planar axis 9 (None, X, Y or Z)");
    CHECK(parseError(oneBody(R"("shape_type": "Cone", "shape": {})")).find("Cone") != std::string::npos);
}

TEST_CASE("other invalid scene files are refused with the field named")
{
    // Missing required fields.
    CHECK(parseError(oneBody(R"("density": 5)")).find("required field is missing: shape") !=
          std::string::npos);
    CHECK(parseError(oneBody(R"("shape_type": "Box", "shape": {})")).find("half_extents") !=
          std::string::npos);
    // Wrong types and out-of-range integers.
    CHECK(parseError(R"({"max_bodies_per_client": -1})").find("line 1") == 0);
    CHECK(parseError(R"({"max_bodies_per_client": 200000})") ==
          "max_bodies_per_client: must be at most 100000 (got 200000)");
    CHECK(parseError(R"({"name": 5})").find("line 1") == 0);
    // Rules between fields.
    CHECK(parseError(oneBody(R"("shape_type": "Plane", "shape": {"normal": {"x": 0, "y": 1, "z": 0}})")) ==
          "bodies[0].motion: a Plane shape needs motion Static");
    CHECK(parseError(oneBody(R"("motion": "Static", "shape_type": "Plane",
                               "shape": {"normal": {"x": 0, "y": 0, "z": 0}})")) ==
          "bodies[0].shape.normal: must not be zero");
    CHECK(parseError(oneBody(kUnitBox + R"(, "orientation": {"x": 0, "y": 0, "z": 0, "w": 1},
                                          "euler_degrees": {"x": 0, "y": 0, "z": 0})")) ==
          "bodies[0].orientation: give orientation or euler_degrees, not both");
    CHECK(parseError(oneBody(kUnitBox + R"(, "orientation": {"x": 0, "y": 0, "z": 0, "w": 0})"))
              .find("bodies[0].orientation: must not be zero") == 0);
    CHECK(parseError(R"({"player": {"motion": "Static", "shape_type": "Sphere", "shape": {"radius": 1}}})") ==
          "player.motion: must be Dynamic or Kinematic (got Static)");
    CHECK(parseError(R"({"player": {"shape_type": "Sphere", "shape": {"radius": -1}}})") ==
          "player.shape.radius: must be positive (got -1)");
    // Bytes the parser must not see.
    CHECK(parseError(std::string("{}\0{}", 5)) == "scene: contains a NUL byte at offset 2");
    CHECK(parseError(std::string(server::kMaxSceneFileBytes + 1, ' ')).find("scene: larger than") == 0);

    server::SceneDescription scene;
    std::string error;
    CHECK_FALSE(server::loadSceneFile(scenesDir() + "/no_such_file.json", scene, error));
    CHECK(error.find("no_such_file.json: cannot be opened") != std::string::npos);
}

TEST_CASE("building a scene gives the described bodies, poses and shared hulls")
{
    const std::string tetra = R"("shape_type": "Hull", "shape": {"points": [
        {"x": 0, "y": 0, "z": 0}, {"x": 1, "y": 0, "z": 0}, {"x": 0, "y": 1, "z": 0}, {"x": 0, "y": 0, "z": 1}]})";
    const std::string json = R"({"gravity": {"x": 0, "y": -5, "z": 0}, "bodies": [
        {)" + tetra + R"(, "position": {"x": 1, "y": 2, "z": 3}},
        {)" + tetra + R"(, "position": {"x": -1, "y": 2, "z": 3}, "motion": "Static"},
        {"shape_type": "Sphere", "shape": {"radius": 0.25}, "position": {"x": 0, "y": 9, "z": 0},
         "linear_velocity": {"x": 1, "y": 0, "z": 0}}],
      "player": {)" + tetra + R"(, "motion": "Kinematic", "position": {"x": 7, "y": 7, "z": 7}},
      "spawn_points": [{"x": 10, "y": 1, "z": 0}, {"x": 20, "y": 1, "z": 0}, {"x": 30, "y": 1, "z": 0}]})";
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::parseSceneJson(json, scene, error));
    physics::World world;
    REQUIRE(server::buildScene(scene, world, error));
    CHECK(world.config().gravity == Vec3{0.0f, -5.0f, 0.0f});
    CHECK(world.bodyCount() == 3);
    CHECK(world.hulls().size() == 1); // three uses of one hull, added once

    std::vector<physics::BodyState> bodies;
    world.forEachBody([&](const physics::BodyState& body) { bodies.push_back(body); });
    REQUIRE(bodies.size() == 3);
    CHECK(bodies[0].shape.type == physics::ShapeType::Hull);
    CHECK(bodies[0].shape.hullIndex == 0);
    CHECK(bodies[0].transform.p == Vec3{1.0f, 2.0f, 3.0f});
    CHECK(bodies[0].mass > 0.0f);
    CHECK(bodies[1].type == physics::BodyType::Static);
    CHECK(bodies[1].transform.p == Vec3{-1.0f, 2.0f, 3.0f});
    CHECK(bodies[2].shape.type == physics::ShapeType::Sphere);
    CHECK(bodies[2].shape.sphere.radius == 0.25f);
    CHECK(bodies[2].linearVelocity == Vec3{1.0f, 0.0f, 0.0f});

    // Players: spawn points round robin (any integer), the template's hull found in the catalogue.
    physics::BodyDesc player;
    for (long long i : {0LL, 1LL, 2LL, 3LL, -1LL, 3000000001LL})
    {
        REQUIRE(server::makePlayerBody(scene, i, world, player, error));
        const long long slot = ((i % 3) + 3) % 3;
        CHECK(player.transform.p == scene.spawnPoints[static_cast<std::size_t>(slot)]);
        CHECK(player.type == physics::BodyType::Kinematic);
        CHECK(player.shape.hullIndex == 0);
        CHECK(world.createBody(player).status == physics::WorldStatus::Ok);
    }
    CHECK(world.hulls().size() == 1);
    CHECK(world.bodyCount() == 9);

    // No spawn points: the template's own position. No template: an error.
    scene.spawnPoints.clear();
    REQUIRE(server::makePlayerBody(scene, 5, world, player, error));
    CHECK(player.transform.p == Vec3{7.0f, 7.0f, 7.0f});
    scene.player.reset();
    CHECK_FALSE(server::makePlayerBody(scene, 0, world, player, error));
    CHECK(error == "player: the scene has no player template");
}

TEST_CASE("building a scene into a world that is too small names the body")
{
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::loadSceneFile(scenesDir() + "/arena.json", scene, error));
    physics::WorldConfig config;
    config.maxBodies = 3;
    physics::World world(config);
    CHECK_FALSE(server::buildScene(scene, world, error));
    CHECK(error == "bodies[3]: the world refused the body (BodyCapacityReached)");

    REQUIRE(server::parseSceneJson(R"({"builtin": "stack10"})", scene, error));
    physics::World tiny(config);
    CHECK_FALSE(server::buildScene(scene, tiny, error));
    CHECK(error.find("builtin: the world refused a body") == 0);
}

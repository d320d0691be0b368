// Scene files' joints (scene_joints.cpp): bodies named and joined by name; every field of a joint survives
// parsing in the units the engine takes; each mistake (a name unknown, taken twice or on the player, a body
// joined to itself, two bodies that cannot move, a part the joint's type has not, a number out of range) is
// refused with the field named; scenes/joints.json builds its joints into a world that holds them.
#include "polytope/server/scene_file.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

namespace
{

using namespace polytope;
using physics::JointType;
using physics::Vec3;

std::string scenesDir()
{
    // tests/server/this_file.cpp -> <repo>/scenes
    return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "scenes").string();
}

constexpr float kRadiansPerDegree = 0.017453292519943295f;

/// Three named bodies: a static "post", a dynamic "door" and a dynamic "lid", then these joints.
std::string withJoints(const std::string& joints)
{
    return R"({"bodies": [
        {"name": "post", "motion": "Static", "shape_type": "Box",
         "shape": {"half_extents": {"x": 0.1, "y": 1, "z": 0.1}}},
        {"name": "door", "shape_type": "Box", "shape": {"half_extents": {"x": 0.5, "y": 1, "z": 0.05}},
         "position": {"x": 0.6, "y": 0, "z": 0}},
        {"name": "lid", "shape_type": "Box", "shape": {"half_extents": {"x": 0.5, "y": 0.05, "z": 0.5}},
         "position": {"x": 0, "y": 2, "z": 0}},
        {"name": "floor", "motion": "Static", "shape_type": "Plane",
         "shape": {"normal": {"x": 0, "y": 1, "z": 0}}, "position": {"x": 0, "y": -1, "z": 0}},
        {"name": "lift", "motion": "Kinematic", "shape_type": "Box",
         "shape": {"half_extents": {"x": 1, "y": 0.1, "z": 1}}, "position": {"x": 5, "y": 0, "z": 0}}],
      "joints": [)" +
           joints + "]}";
}

/// withJoints(`joint`) parsed, expecting failure: the error.
std::string jointError(const std::string& joint)
{
    server::SceneDescription scene;
    std::string error;
    CHECK_FALSE(server::parseSceneJson(withJoints(joint), scene, error));
    CHECK_FALSE(error.empty());
    return error;
}

/// A hinge between post and door with `extra` fields.
std::string hinge(const std::string& extra)
{
    return R"({"type": "Hinge", "body_a": "post", "body_b": "door")" + (extra.empty() ? "" : ", " + extra) +
           "}";
}

} // namespace

TEST_CASE("joint fields survive parsing in the engine's units", "[scenefile][joints]")
{
    const std::string json = withJoints(R"(
        {"type": "Hinge", "body_a": "post", "body_b": "door",
         "frame": {"position": {"x": 0.1, "y": 0.5, "z": 0}, "euler_degrees": {"x": 0, "y": 0, "z": 90}},
         "collide_connected": true, "hertz": 5, "damping_ratio": 0.7,
         "limit": {"lower": -90, "upper": 45},
         "motor": {"mode": "Position", "target_velocity": 2, "target_position": 30, "max_force": 150,
                   "hertz": 4, "damping_ratio": 0.5},
         "spring": {"hertz": 1, "damping_ratio": 0.2, "target": -10},
         "break_force": 1000, "break_torque": 500},
        {"body_a": "door", "body_b": "lid"},
        {"type": "Distance", "body_a": "post", "body_b": "lid",
         "frame_a": {"position": {"x": 0, "y": 1, "z": 0}},
         "frame_b": {"position": {"x": 0.5, "y": 0, "z": 0}, "orientation": {"x": 0, "y": 0, "z": 0, "w": 2}},
         "length": 1.5, "limit": {"lower": 0.5, "upper": 2}, "spring": {"hertz": 0}},
        {"type": "Slider", "body_a": "lift", "body_b": "lid", "limit": {"lower": -1, "upper": 3},
         "motor": {"mode": "Velocity", "target_velocity": -0.5, "max_force": 2000}},
        {"type": "ConeTwist", "body_a": "lid", "body_b": "door", "cone_angle": 60,
         "limit": {"lower": -180, "upper": 180}},
        {"type": "Fixed", "body_a": "floor", "body_b": "lid"})");
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::parseSceneJson(json, scene, error));
    REQUIRE(scene.joints.size() == 6);
    CHECK(scene.bodies[0].name == "post");
    CHECK(scene.bodies[4].name == "lift");

    const server::SceneJoint& h = scene.joints[0];
    CHECK(h.desc.type == JointType::Hinge);
    CHECK(h.bodyA == 0);
    CHECK(h.bodyB == 1);
    REQUIRE(h.worldFrame.has_value());
    CHECK(h.worldFrame->p == Vec3{0.1f, 0.5f, 0.0f});
    const Vec3 axis = physics::rotate(h.worldFrame->q, Vec3{1.0f, 0.0f, 0.0f});
    CHECK(axis.y == Approx(1.0f));
    CHECK(h.desc.collideConnected);
    CHECK(h.desc.hertz == 5.0f);
    CHECK(h.desc.dampingRatio == 0.7f);
    CHECK(h.desc.limit.enabled);
    CHECK(h.desc.limit.lower == Approx(-0.5f * physics::kPi));
    CHECK(h.desc.limit.upper == Approx(45.0f * kRadiansPerDegree));
    CHECK(h.desc.motor.mode == physics::MotorMode::Position);
    CHECK(h.desc.motor.targetVelocity == 2.0f); // rad/s, as angular velocities are everywhere in files
    CHECK(h.desc.motor.targetPosition == Approx(30.0f * kRadiansPerDegree));
    CHECK(h.desc.motor.maxForce == 150.0f);
    CHECK(h.desc.motor.hertz == 4.0f);
    CHECK(h.desc.motor.dampingRatio == 0.5f);
    CHECK(h.desc.spring.enabled);
    CHECK(h.desc.spring.hertz == 1.0f);
    CHECK(h.desc.spring.dampingRatio == 0.2f);
    CHECK(h.desc.spring.target == Approx(-10.0f * kRadiansPerDegree));
    CHECK(h.desc.breakForce == 1000.0f);
    CHECK(h.desc.breakTorque == 500.0f);
    CHECK(h.desc.bodyA.isNull()); // buildScene fills the ids in
    CHECK(h.desc.bodyB.isNull());

    // Left out: JointDesc's defaults (a Ball joint, local frames at the bodies' origins, unbreakable).
    const server::SceneJoint& ball = scene.joints[1];
    const physics::JointDesc defaults;
    CHECK(ball.desc.type == JointType::Ball);
    CHECK_FALSE(ball.worldFrame.has_value());
    CHECK(ball.desc.frameA.p == Vec3{});
    CHECK(ball.desc.frameB.q == physics::Quat::identity());
    CHECK_FALSE(ball.desc.collideConnected);
    CHECK(ball.desc.hertz == defaults.hertz);
    CHECK(ball.desc.dampingRatio == defaults.dampingRatio);
    CHECK_FALSE(ball.desc.limit.enabled);
    CHECK(ball.desc.motor.mode == physics::MotorMode::Off);
    CHECK_FALSE(ball.desc.spring.enabled);
    CHECK(std::isinf(ball.desc.breakForce));
    CHECK(std::isinf(ball.desc.breakTorque));

    const server::SceneJoint& rope = scene.joints[2];
    CHECK(rope.desc.type == JointType::Distance);
    CHECK_FALSE(rope.worldFrame.has_value());
    CHECK(rope.desc.frameA.p == Vec3{0.0f, 1.0f, 0.0f});
    CHECK(rope.desc.frameB.p == Vec3{0.5f, 0.0f, 0.0f});
    CHECK(rope.desc.frameB.q == physics::Quat::identity()); // normalised
    CHECK(rope.desc.length == 1.5f);
    CHECK(rope.desc.limit.lower == 0.5f); // metres: not converted
    CHECK(rope.desc.limit.upper == 2.0f);
    CHECK(rope.desc.spring.enabled);
    CHECK(rope.desc.spring.hertz == 0.0f);

    const server::SceneJoint& slider = scene.joints[3];
    CHECK(slider.desc.type == JointType::Slider);
    CHECK(slider.desc.limit.lower == -1.0f);
    CHECK(slider.desc.limit.upper == 3.0f);
    CHECK(slider.desc.motor.mode == physics::MotorMode::Velocity);
    CHECK(slider.desc.motor.targetVelocity == -0.5f);
    CHECK(slider.desc.motor.maxForce == 2000.0f);

    const server::SceneJoint& cone = scene.joints[4];
    CHECK(cone.desc.type == JointType::ConeTwist);
    CHECK(cone.desc.coneAngle == Approx(60.0f * kRadiansPerDegree));
    CHECK(cone.desc.limit.lower >= -physics::kPi); // +-180 degrees stay within [-pi, pi]
    CHECK(cone.desc.limit.upper <= physics::kPi);

    CHECK(scene.joints[5].desc.type == JointType::Fixed);
    CHECK(scene.joints[5].bodyA == 3);
}

TEST_CASE("joints naming unknown bodies, one body twice or two bodies that cannot move are refused",
          "[scenefile][joints]")
{
    CHECK(jointError(R"({"body_a": "post", "body_b": "gate"})") ==
          R"(joints[0].body_b: no body named "gate")");
    CHECK(jointError(R"({"body_a": "door", "body_b": "lid"}, {"body_a": "Door", "body_b": "lid"})") ==
          R"(joints[1].body_a: no body named "Door")");
    CHECK(jointError(R"({"body_a": "door", "body_b": "door"})") ==
          R"(joints[0].body_b: joins body "door" to itself)");
    CHECK(jointError(R"({"body_a": "post", "body_b": "floor"})") ==
          R"(joints[0]: joins "post" (Static) and "floor" (Static): a joint needs a Dynamic body)");
    CHECK(jointError(R"({"type": "Slider", "body_a": "lift", "body_b": "post"})") ==
          R"(joints[0]: joins "lift" (Kinematic) and "post" (Static): a joint needs a Dynamic body)");
    // Body names: required for joints, unique, never empty, not on the player template.
    CHECK(jointError(R"({"body_a": "door", "body_b": ""})") == R"(joints[0].body_b: no body named "")");
    CHECK(jointError(R"({"body_a": "door"})").find("required field is missing: body_b") != std::string::npos);

    server::SceneDescription scene;
    std::string error;
    const std::string sphere = R"("shape_type": "Sphere", "shape": {"radius": 1})";
    CHECK_FALSE(server::parseSceneJson(R"({"bodies": [{"name": "a", )" + sphere + R"(}, {"name": "b", )" +
                                           sphere + R"(}, {"name": "a", )" + sphere + "}]}",
                                       scene, error));
    CHECK(error == R"(bodies[2].name: "a" is already the name of bodies[0])");
    CHECK_FALSE(server::parseSceneJson(R"({"bodies": [{"name": "", )" + sphere + "}]}", scene, error));
    CHECK(error == "bodies[0].name: must not be empty (leave it out for an unnamed body)");
    CHECK_FALSE(server::parseSceneJson(R"({"bodies": [{"name": ")" +
                                           std::string(server::kMaxSceneBodyNameBytes + 1, 'n') + R"(", )" +
                                           sphere + "}]}",
                                       scene, error));
    CHECK(error == "bodies[0].name: longer than 256 bytes");
    CHECK_FALSE(server::parseSceneJson(R"({"player": {"name": "me", )" + sphere + "}}", scene, error));
    CHECK(error == "player.name: not for the player template (joints join the scene's own bodies, by name)");
    // A built-in scene's bodies have no names.
    CHECK_FALSE(server::parseSceneJson(R"({"builtin": "chain", "bodies": [{"name": "a", )" + sphere + R"(}],
            "joints": [{"body_a": "a", "body_b": "ground"}]})",
                                       scene, error));
    CHECK(error == R"(joints[0].body_b: no body named "ground")");
}

TEST_CASE("joint parts their type has not, both kinds of frame, and missing motor settings are refused",
          "[scenefile][joints]")
{
    CHECK(jointError(
              R"({"body_a": "post", "body_b": "door", "motor": {"mode": "Velocity", "max_force": 1}})") ==
          "joints[0].motor: a Ball joint has no motor (Hinge and Slider joints do)");
    CHECK(jointError(R"({"type": "Fixed", "body_a": "post", "body_b": "door",
                        "limit": {"lower": 0, "upper": 1}})") ==
          "joints[0].limit: a Fixed joint has no limit (Hinge, Slider, Distance and ConeTwist joints do)");
    CHECK(
        jointError(R"({"type": "ConeTwist", "body_a": "post", "body_b": "door", "spring": {"hertz": 1}})") ==
        "joints[0].spring: a ConeTwist joint has no spring (Hinge, Slider and Distance joints do)");
    CHECK(jointError(hinge(R"("length": 2)")) ==
          "joints[0].length: a Hinge joint has no length (Distance joints do)");
    CHECK(jointError(hinge(R"("cone_angle": 30)")) ==
          "joints[0].cone_angle: a Hinge joint has no cone angle (ConeTwist joints do)");
    CHECK(jointError(R"({"type": "Distance", "body_a": "post", "body_b": "door",
                        "spring": {"hertz": 1, "target": 2}})") ==
          "joints[0].spring.target: a Distance joint's spring pulls toward its length instead");
    CHECK(jointError(R"({"type": "Distance", "body_a": "post", "body_b": "door", "spring": {"hertz": 0}})") ==
          "joints[0].spring.hertz: a Distance joint's spring of hertz 0 holds nothing: give a hertz, or a "
          "limit (a rope)");
    CHECK(jointError(hinge(R"("frame": {}, "frame_b": {})")) ==
          "joints[0].frame: give frame (one world frame) or frame_a and frame_b (local frames), not both");
    CHECK(jointError(hinge(R"("frame_a": {"orientation": {"x": 0, "y": 0, "z": 0, "w": 1},
                                         "euler_degrees": {"x": 0, "y": 0, "z": 0}})")) ==
          "joints[0].frame_a.orientation: give orientation or euler_degrees, not both");
    CHECK(jointError(hinge(R"("frame": {"orientation": {"x": 0, "y": 0, "z": 0, "w": 0}})"))
              .find("joints[0].frame.orientation: must not be zero") == 0);
    CHECK(jointError(hinge(R"("motor": {"max_force": 10})")) ==
          "joints[0].motor.mode: missing (required: Off, Velocity or Position)");
    CHECK(jointError(hinge(R"("motor": {"mode": "Velocity"})")) ==
          "joints[0].motor.max_force: missing (required: N m for a Hinge, N for a Slider)");
    CHECK(jointError(hinge(R"("limit": {"lower": -10})")) == "joints[0].limit.upper: missing (required)");
    CHECK(jointError(hinge(R"("limit": {"upper": 10})")) == "joints[0].limit.lower: missing (required)");
    // Enum values the schema does not name.
    CHECK(jointError(R"({"type": "Rope", "body_a": "post", "body_b": "door"})").find("Rope") !=
          std::string::npos);
    CHECK(jointError(R"({"type": 9, "body_a": "post", "body_b": "door"})") ==
          "joints[0].type: unknown joint type 9 (Ball, Hinge, Slider, Fixed, Distance or ConeTwist)");
    CHECK(jointError(hinge(R"("motor": {"mode": 5, "max_force": 1})")) ==
          "joints[0].motor.mode: unknown motor mode 5 (Off, Velocity or Position)");
}

TEST_CASE("joint numbers out of range are refused with the field named", "[scenefile][joints]")
{
    CHECK(jointError(hinge(R"("hertz": -1)")) == "joints[0].hertz: must be in [0, 1000] (got -1)");
    CHECK(jointError(hinge(R"("damping_ratio": nan)")) ==
          "joints[0].damping_ratio: must be finite (got nan)");
    CHECK(jointError(hinge(R"("limit": {"lower": -190, "upper": 0})")) ==
          "joints[0].limit.lower: must be in [-180, 180] (got -190)");
    CHECK(jointError(hinge(R"("limit": {"lower": 10, "upper": -10})")) ==
          "joints[0].limit.upper: must not be below lower (got -10, lower 10)");
    CHECK(jointError(R"({"type": "Distance", "body_a": "post", "body_b": "door",
                        "limit": {"lower": -1, "upper": 1}})") ==
          "joints[0].limit.lower: must be in [0, 10000] (got -1)");
    CHECK(jointError(R"({"type": "Slider", "body_a": "post", "body_b": "door",
                        "limit": {"lower": -20000, "upper": 1}})") ==
          "joints[0].limit.lower: must be in [-10000, 10000] (got -20000)");
    CHECK(jointError(hinge(R"("motor": {"mode": "Velocity", "max_force": -5})")) ==
          "joints[0].motor.max_force: must be in [0, 1e+12] (got -5)");
    CHECK(jointError(hinge(R"("motor": {"mode": "Velocity", "max_force": 5, "target_velocity": inf})")) ==
          "joints[0].motor.target_velocity: must be finite (got inf)");
    CHECK(jointError(hinge(R"("motor": {"mode": "Position", "max_force": 5, "target_position": 270})")) ==
          "joints[0].motor.target_position: must be in [-180, 180] (got 270)");
    CHECK(jointError(hinge(R"("motor": {"mode": "Position", "max_force": 5, "hertz": 0})")) ==
          "joints[0].motor.hertz: must be positive (got 0)");
    CHECK(jointError(hinge(R"("spring": {"hertz": 2000})")) ==
          "joints[0].spring.hertz: must be in [0, 1000] (got 2000)");
    CHECK(jointError(hinge(R"("spring": {"damping_ratio": -0.5})")) ==
          "joints[0].spring.damping_ratio: must be in [0, 1000] (got -0.5)");
    CHECK(jointError(R"({"type": "Distance", "body_a": "post", "body_b": "door", "length": -2})") ==
          "joints[0].length: must be in [0, 10000] (got -2)");
    CHECK(jointError(R"({"type": "ConeTwist", "body_a": "post", "body_b": "door", "cone_angle": 181})") ==
          "joints[0].cone_angle: must be in [0, 180] (got 181)");
    CHECK(jointError(hinge(R"("break_force": 0)")) == "joints[0].break_force: must be positive (got 0)");
    CHECK(jointError(hinge(R"("break_torque": -inf)")) ==
          "joints[0].break_torque: must be finite (got -inf)");
    CHECK(jointError(hinge(R"("frame": {"position": {"x": 0, "y": 2e6, "z": 0}})")) ==
          "joints[0].frame.position.y: must be in [-1e+06, 1e+06] (got 2e+06)");
    // The engine holds anchors in the bodies' frames: they may lie at most 10 km from each body.
    CHECK(jointError(hinge(R"("frame": {"position": {"x": 0, "y": 2e4, "z": 0}})")) ==
          R"(joints[0].frame.position.y: must lie within 10000 m of body "post" (got 20000 m away))");
    CHECK(jointError(hinge(R"("frame_b": {"position": {"x": -2e4, "y": 0, "z": 0}})")) ==
          "joints[0].frame_b.position.x: must be in [-10000, 10000] (got -20000)");

    std::string json = withJoints("");
    json.resize(json.size() - 2); // "]}"
    const std::string joint = R"({"body_a": "door", "body_b": "lid"})";
    json.reserve(json.size() + (joint.size() + 1) * (server::kMaxSceneJoints + 1) + 4);
    for (std::size_t i = 0; i <= server::kMaxSceneJoints; ++i)
    {
        json += (i ? "," : "") + joint;
    }
    json += "]}";
    server::SceneDescription scene;
    std::string error;
    CHECK_FALSE(server::parseSceneJson(json, scene, error));
    CHECK(error == "joints: too many (100001, at most 100000)");
}

TEST_CASE("scenes/joints.json builds a joint of every type between its named bodies", "[scenefile][joints]")
{
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::loadSceneFile(scenesDir() + "/joints.json", scene, error));
    CHECK(scene.name == "joints");
    REQUIRE(scene.joints.size() == 7);
    physics::World world;
    REQUIRE(server::buildScene(scene, world, error));
    CHECK(world.bodyCount() == scene.bodies.size());
    CHECK(world.jointCount() == 7);

    // Each joint joins the bodies its entry names (bodies are created in file order, so slot = index), and
    // starts where its frames put it: a world frame gives no error at all.
    std::size_t j = 0;
    bool types[physics::kJointTypeCount] = {};
    world.forEachJoint(
        [&](const physics::JointState& state)
        {
            REQUIRE(j < scene.joints.size());
            const server::SceneJoint& entry = scene.joints[j++];
            CHECK(state.desc.type == entry.desc.type);
            CHECK(state.desc.bodyA.index == entry.bodyA);
            CHECK(state.desc.bodyB.index == entry.bodyB);
            types[static_cast<int>(state.desc.type)] = true;
            if (entry.worldFrame)
            {
                CHECK(state.anchorSeparation < 1e-5f);
                CHECK(physics::distance(state.worldFrameA.p, entry.worldFrame->p) < 1e-5f);
            }
        });
    for (const bool seen : types)
    {
        CHECK(seen);
    }

    for (int step = 0; step < 180; ++step)
    {
        REQUIRE(world.step(1.0f / 60.0f).ok());
    }
    // The pendulum keeps its length, the rope its limit, the slider its rail.
    physics::BodyState beam;
    physics::BodyState bob;
    physics::BodyState hook;
    physics::BodyState weight;
    physics::BodyState carriage;
    const auto bodyNamed = [&](const char* name, physics::BodyState& out)
    {
        for (std::uint32_t i = 0; i < scene.bodies.size(); ++i)
        {
            if (scene.bodies[i].name == name)
            {
                bool found = false;
                world.forEachBody(
                    [&](const physics::BodyState& b)
                    {
                        if (b.id.index == i)
                        {
                            out = b;
                            found = true;
                        }
                    });
                return found;
            }
        }
        return false;
    };
    REQUIRE(bodyNamed("beam", beam));
    REQUIRE(bodyNamed("bob", bob));
    REQUIRE(bodyNamed("hook", hook));
    REQUIRE(bodyNamed("rope_weight", weight));
    REQUIRE(bodyNamed("carriage", carriage));
    CHECK(physics::distance(beam.transform.p, bob.transform.p) == Approx(2.0f).margin(0.02f));
    CHECK(physics::distance(hook.transform.p, weight.transform.p) < 3.02f);
    CHECK(std::fabs(carriage.transform.p.y - 0.8f) < 0.01f);
    CHECK(std::fabs(carriage.transform.p.z - 5.0f) < 0.01f);
    CHECK(carriage.transform.p.x > 1.0f); // driven along +x by its motor
    CHECK(carriage.transform.p.x < 2.51f);
}

TEST_CASE("a scene's joints that the world has no room for are refused, naming the joint",
          "[scenefile][joints]")
{
    server::SceneDescription scene;
    std::string error;
    REQUIRE(server::loadSceneFile(scenesDir() + "/joints.json", scene, error));
    physics::WorldConfig config;
    config.maxJoints = 3;
    physics::World world(config);
    CHECK_FALSE(server::buildScene(scene, world, error));
    CHECK(error == "joints[3]: the world refused the joint (JointCapacityReached)");
}

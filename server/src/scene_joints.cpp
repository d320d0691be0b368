// Scene files: the joints a scene declares (scene.fbs's Joint; docs/SCENES.md, Joints). A joint names the
// two bodies it joins by their `name`, so it is read after every body; each value is checked for the joint's
// type (a limit, motor or spring only where physics/joints.h gives the type one; angles in degrees, as
// everywhere in scene files) and converted to a physics::JointDesc whose bodies buildScene fills in. What is
// accepted here is what World::createJoint accepts, so that a checked scene fails to build only for lack
// of capacity.
#include "polytope/server/scene_file.h"

#include "scene_file_detail.h"

#include "polytope/scene/scene_generated.h"

#include <cmath>
#include <functional>
#include <map>
#include <string_view>

namespace polytope::server::detail
{

namespace
{

namespace fbs = polytope::scene;
using physics::JointType;

// Ranges of the values a joint may hold (docs/SCENES.md lists them).
// Metres: limits, slider targets, distance lengths, and how far an anchor lies from its body along an axis.
constexpr float kMaxJointMeters = 1.0e4f;
constexpr float kMaxJointDegrees = 180.0f;      // limits and targets of angles; the cone angle
constexpr float kMaxJointSpeed = 1.0e3f;        // motor target velocity, rad/s or m/s
constexpr float kMaxJointForce = 1.0e12f;       // motor maximum force (N) or torque (N m)
constexpr float kMaxBreakThreshold = 1.0e15f;   // break force (N) and torque (N m)
constexpr float kMaxJointHertz = 1.0e3f;        // spring and drive stiffness
constexpr float kMaxJointDampingRatio = 1.0e3f; // spring and drive damping
/// Most bytes of a body name quoted in an error.
constexpr std::size_t kMaxQuotedNameBytes = 64;

const char* typeName(JointType type)
{
    switch (type)
    {
    case JointType::Ball:
        return "Ball";
    case JointType::Hinge:
        return "Hinge";
    case JointType::Slider:
        return "Slider";
    case JointType::Fixed:
        return "Fixed";
    case JointType::Distance:
        return "Distance";
    case JointType::ConeTwist:
        return "ConeTwist";
    }
    return "unknown";
}

const char* motionName(physics::BodyType type)
{
    switch (type)
    {
    case physics::BodyType::Static:
        return "Static";
    case physics::BodyType::Kinematic:
        return "Kinematic";
    case physics::BodyType::Dynamic:
        return "Dynamic";
    }
    return "unknown";
}

std::string quotedName(std::string_view name)
{
    // Appended rather than "\"" + text: GCC 12 warns falsely (-Wrestrict) about the operator+ form.
    std::string text(1, '"');
    text += printableExcerpt(name, kMaxQuotedNameBytes);
    text += '"';
    return text;
}

/// Whether the joint's free degree of freedom is an angle (degrees in files) rather than a length.
bool angular(JointType type)
{
    return type == JointType::Hinge || type == JointType::ConeTwist;
}

/// Refuses a part of a joint that its type does not have: "a Ball joint has no motor (Hinge and Slider
/// joints do)".
bool refuseFor(JointType type, const std::string& path, const char* part, const char* typesThatHaveIt,
               std::string& error)
{
    return fail(error, path,
                std::string("a ") + typeName(type) + " joint has no " + part + " (" + typesThatHaveIt +
                    " joints do)");
}

/// An angle in degrees within [-180, 180], or a length within [lo, kMaxJointMeters], by the joint's type;
/// `out` in radians or metres.
bool readFreeValue(JointType type, const std::string& path, float value, float lowestMeters, float& out,
                   std::string& error)
{
    if (angular(type))
    {
        if (!checkRange(path, value, -kMaxJointDegrees, kMaxJointDegrees, error))
        {
            return false;
        }
        out = std::fmax(-physics::kPi, std::fmin(physics::kPi, value * kDegreesToRadians));
        return true;
    }
    out = value;
    return checkRange(path, value, lowestMeters, kMaxJointMeters, error);
}

/// A frame whose anchor lies within [lo, hi] along each axis.
bool readFrame(const std::string& path, const fbs::JointFrame& frame, float lo, float hi,
               physics::Transform& out, std::string& error)
{
    out = physics::Transform::identity();
    return (frame.position() == nullptr ||
            readVec3(path + ".position", *frame.position(), lo, hi, out.p, error)) &&
           readOrientation(path, frame.orientation(), frame.euler_degrees(), out.q, error);
}

/// A world frame's anchor within kMaxJointMeters of the body's starting position along each axis, as a local
/// frame's must be of the body's origin (the engine keeps local anchors within its world bound).
bool checkNear(const std::string& path, const physics::Vec3& anchor, const SceneBody& body,
               std::string& error)
{
    const physics::Vec3 offset = anchor - body.desc.transform.p;
    for (int axis = 0; axis < 3; ++axis)
    {
        if (std::fabs(offset[axis]) > kMaxJointMeters)
        {
            return fail(error, path + "." + "xyz"[axis],
                        "must lie within " + number(kMaxJointMeters) + " m of body " + quotedName(body.name) +
                            " (got " + number(std::fabs(offset[axis])) + " m away)");
        }
    }
    return true;
}

/// Either one world frame (`frame`) or a local frame per body (`frame_a`, `frame_b`, each the identity when
/// left out).
bool readFrames(const fbs::Joint& joint, const std::string& path, const SceneBody& a, const SceneBody& b,
                SceneJoint& out, std::string& error)
{
    if (joint.frame() != nullptr)
    {
        if (joint.frame_a() != nullptr || joint.frame_b() != nullptr)
        {
            return fail(error, path + ".frame",
                        "give frame (one world frame) or frame_a and frame_b (local frames), not both");
        }
        physics::Transform world;
        if (!readFrame(path + ".frame", *joint.frame(), -physics::kWorldBoundMeters,
                       physics::kWorldBoundMeters, world, error) ||
            !checkNear(path + ".frame.position", world.p, a, error) ||
            !checkNear(path + ".frame.position", world.p, b, error))
        {
            return false;
        }
        out.worldFrame = world;
        return true;
    }
    return (joint.frame_a() == nullptr || readFrame(path + ".frame_a", *joint.frame_a(), -kMaxJointMeters,
                                                    kMaxJointMeters, out.desc.frameA, error)) &&
           (joint.frame_b() == nullptr || readFrame(path + ".frame_b", *joint.frame_b(), -kMaxJointMeters,
                                                    kMaxJointMeters, out.desc.frameB, error));
}

bool readLimit(const fbs::JointLimit& limit, const std::string& path, JointType type,
               physics::JointLimit& out, std::string& error)
{
    if (type != JointType::Hinge && type != JointType::Slider && type != JointType::Distance &&
        type != JointType::ConeTwist)
    {
        return refuseFor(type, path, "limit", "Hinge, Slider, Distance and ConeTwist", error);
    }
    if (!limit.lower().has_value())
    {
        return fail(error, path + ".lower", "missing (required)");
    }
    if (!limit.upper().has_value())
    {
        return fail(error, path + ".upper", "missing (required)");
    }
    const float lowest = type == JointType::Distance ? 0.0f : -kMaxJointMeters;
    if (!readFreeValue(type, path + ".lower", *limit.lower(), lowest, out.lower, error) ||
        !readFreeValue(type, path + ".upper", *limit.upper(), lowest, out.upper, error))
    {
        return false;
    }
    if (*limit.upper() < *limit.lower())
    {
        return fail(error, path + ".upper",
                    "must not be below lower (got " + number(*limit.upper()) + ", lower " +
                        number(*limit.lower()) + ")");
    }
    out.enabled = true;
    return true;
}

bool readMotor(const fbs::JointMotor& motor, const std::string& path, JointType type,
               physics::JointMotor& out, std::string& error)
{
    if (type != JointType::Hinge && type != JointType::Slider)
    {
        return refuseFor(type, path, "motor", "Hinge and Slider", error);
    }
    if (!motor.mode().has_value())
    {
        return fail(error, path + ".mode", "missing (required: Off, Velocity or Position)");
    }
    switch (*motor.mode())
    {
    case fbs::MotorMode::Off:
        out.mode = physics::MotorMode::Off;
        break;
    case fbs::MotorMode::Velocity:
        out.mode = physics::MotorMode::Velocity;
        break;
    case fbs::MotorMode::Position:
        out.mode = physics::MotorMode::Position;
        break;
    default:
        return fail(error, path + ".mode",
                    "unknown motor mode " + std::to_string(static_cast<int>(*motor.mode())) +
                        " (Off, Velocity or Position)");
    }
    if (!motor.max_force().has_value())
    {
        return fail(error, path + ".max_force", "missing (required: N m for a Hinge, N for a Slider)");
    }
    out.maxForce = *motor.max_force();
    out.targetVelocity = motor.target_velocity();
    out.hertz = motor.hertz();
    out.dampingRatio = motor.damping_ratio();
    if (!checkRange(path + ".max_force", out.maxForce, 0.0f, kMaxJointForce, error) ||
        !checkRange(path + ".target_velocity", out.targetVelocity, -kMaxJointSpeed, kMaxJointSpeed, error) ||
        !readFreeValue(type, path + ".target_position", motor.target_position(), -kMaxJointMeters,
                       out.targetPosition, error) ||
        !checkRange(path + ".hertz", out.hertz, 0.0f, kMaxJointHertz, error) ||
        !checkRange(path + ".damping_ratio", out.dampingRatio, 0.0f, kMaxJointDampingRatio, error))
    {
        return false;
    }
    if (!(out.hertz > 0.0f))
    {
        return fail(error, path + ".hertz", "must be positive (got " + number(out.hertz) + ")");
    }
    return true;
}

bool readSpring(const fbs::JointSpring& spring, const std::string& path, JointType type,
                physics::JointSpring& out, std::string& error)
{
    if (type != JointType::Hinge && type != JointType::Slider && type != JointType::Distance)
    {
        return refuseFor(type, path, "spring", "Hinge, Slider and Distance", error);
    }
    out.enabled = true;
    out.hertz = spring.hertz();
    out.dampingRatio = spring.damping_ratio();
    if (!checkRange(path + ".hertz", out.hertz, 0.0f, kMaxJointHertz, error) ||
        !checkRange(path + ".damping_ratio", out.dampingRatio, 0.0f, kMaxJointDampingRatio, error))
    {
        return false;
    }
    if (spring.target().has_value())
    {
        if (type == JointType::Distance)
        {
            return fail(error, path + ".target", "a Distance joint's spring pulls toward its length instead");
        }
        return readFreeValue(type, path + ".target", *spring.target(), -kMaxJointMeters, out.target, error);
    }
    return true;
}

/// An optional break threshold: positive and finite when given; infinite (never breaks) when not.
bool readThreshold(const std::string& path, const flatbuffers::Optional<float>& value, float& out,
                   std::string& error)
{
    if (!value.has_value())
    {
        return true;
    }
    out = *value;
    if (!checkRange(path, out, 0.0f, kMaxBreakThreshold, error))
    {
        return false;
    }
    return out > 0.0f || fail(error, path, "must be positive (got " + number(out) + ")");
}

/// The body a joint names: its index in the scene's bodies.
bool findBody(const flatbuffers::String* name, const std::string& path,
              const std::map<std::string, std::uint32_t, std::less<>>& names, std::uint32_t& index,
              std::string& error)
{
    if (name == nullptr) // required in the schema, so the parser refuses this already
    {
        return fail(error, path, "missing (required)");
    }
    const auto found = names.find(name->string_view());
    if (found == names.end())
    {
        return fail(error, path, "no body named " + quotedName(name->string_view()));
    }
    index = found->second;
    return true;
}

bool readJoint(const fbs::Joint& joint, const std::string& path,
               const std::map<std::string, std::uint32_t, std::less<>>& names, const SceneDescription& scene,
               SceneJoint& out, std::string& error)
{
    physics::JointDesc& desc = out.desc;
    switch (joint.type())
    {
    case fbs::JointType::Ball:
        desc.type = JointType::Ball;
        break;
    case fbs::JointType::Hinge:
        desc.type = JointType::Hinge;
        break;
    case fbs::JointType::Slider:
        desc.type = JointType::Slider;
        break;
    case fbs::JointType::Fixed:
        desc.type = JointType::Fixed;
        break;
    case fbs::JointType::Distance:
        desc.type = JointType::Distance;
        break;
    case fbs::JointType::ConeTwist:
        desc.type = JointType::ConeTwist;
        break;
    default:
        return fail(error, path + ".type",
                    "unknown joint type " + std::to_string(static_cast<int>(joint.type())) +
                        " (Ball, Hinge, Slider, Fixed, Distance or ConeTwist)");
    }
    if (!findBody(joint.body_a(), path + ".body_a", names, out.bodyA, error) ||
        !findBody(joint.body_b(), path + ".body_b", names, out.bodyB, error))
    {
        return false;
    }
    const SceneBody& a = scene.bodies[out.bodyA];
    const SceneBody& b = scene.bodies[out.bodyB];
    if (out.bodyA == out.bodyB)
    {
        return fail(error, path + ".body_b", "joins body " + quotedName(a.name) + " to itself");
    }
    if (a.desc.type != physics::BodyType::Dynamic && b.desc.type != physics::BodyType::Dynamic)
    {
        return fail(error, path,
                    "joins " + quotedName(a.name) + " (" + motionName(a.desc.type) + ") and " +
                        quotedName(b.name) + " (" + motionName(b.desc.type) +
                        "): a joint needs a Dynamic body");
    }
    if (!readFrames(joint, path, a, b, out, error))
    {
        return false;
    }

    desc.collideConnected = joint.collide_connected();
    desc.hertz = joint.hertz();
    desc.dampingRatio = joint.damping_ratio();
    if (!checkRange(path + ".hertz", desc.hertz, 0.0f, kMaxJointHertz, error) ||
        !checkRange(path + ".damping_ratio", desc.dampingRatio, 0.0f, kMaxJointDampingRatio, error))
    {
        return false;
    }
    if ((joint.limit() != nullptr &&
         !readLimit(*joint.limit(), path + ".limit", desc.type, desc.limit, error)) ||
        (joint.motor() != nullptr &&
         !readMotor(*joint.motor(), path + ".motor", desc.type, desc.motor, error)) ||
        (joint.spring() != nullptr &&
         !readSpring(*joint.spring(), path + ".spring", desc.type, desc.spring, error)))
    {
        return false;
    }
    if (joint.length().has_value())
    {
        if (desc.type != JointType::Distance)
        {
            return refuseFor(desc.type, path + ".length", "length", "Distance", error);
        }
        desc.length = *joint.length();
        if (!checkRange(path + ".length", desc.length, 0.0f, kMaxJointMeters, error))
        {
            return false;
        }
    }
    if (desc.type == JointType::Distance && desc.spring.enabled && desc.spring.hertz == 0.0f &&
        !desc.limit.enabled)
    {
        return fail(error, path + ".spring.hertz",
                    "a Distance joint's spring of hertz 0 holds nothing: give a hertz, or a limit (a rope)");
    }
    if (joint.cone_angle().has_value())
    {
        if (desc.type != JointType::ConeTwist)
        {
            return refuseFor(desc.type, path + ".cone_angle", "cone angle", "ConeTwist", error);
        }
        if (!checkRange(path + ".cone_angle", *joint.cone_angle(), 0.0f, kMaxJointDegrees, error))
        {
            return false;
        }
        desc.coneAngle = std::fmin(physics::kPi, *joint.cone_angle() * kDegreesToRadians);
    }
    return readThreshold(path + ".break_force", joint.break_force(), desc.breakForce, error) &&
           readThreshold(path + ".break_torque", joint.break_torque(), desc.breakTorque, error);
}

} // namespace

bool readJoints(const fbs::Scene& scene, SceneDescription& out, std::string& error)
{
    if (scene.joints() == nullptr)
    {
        return true;
    }
    const auto& joints = *scene.joints();
    if (joints.size() > kMaxSceneJoints)
    {
        return fail(error, "joints",
                    "too many (" + std::to_string(joints.size()) + ", at most " +
                        std::to_string(kMaxSceneJoints) + ")");
    }
    std::map<std::string, std::uint32_t, std::less<>> names;
    for (std::size_t i = 0; i < out.bodies.size(); ++i)
    {
        if (!out.bodies[i].name.empty())
        {
            names.emplace(out.bodies[i].name, static_cast<std::uint32_t>(i));
        }
    }
    out.joints.resize(joints.size());
    for (flatbuffers::uoffset_t i = 0; i < joints.size(); ++i)
    {
        if (!readJoint(*joints.Get(i), "joints[" + std::to_string(i) + "]", names, out, out.joints[i], error))
        {
            return false;
        }
    }
    return true;
}

} // namespace polytope::server::detail

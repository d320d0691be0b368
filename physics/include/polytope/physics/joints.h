// Polytope physics: joints, the constraints that connect two bodies (World::createJoint).
//
// A joint holds a frame on each body (an anchor point and three axes, in the body's local frame: the frame
// BodyDesc::transform places) and keeps some of the six relative degrees of freedom of the two frames at
// zero. Each type frees the rest:
//   Ball       anchors together; rotation free
//   Hinge      anchors together, the frames' x axes (the hinge axis) together; rotation about it free: an
//              angle (frame B's y axis from frame A's, about the axis, 0 when the frames align), with an
//              optional limit, motor and spring
//   Slider     rotation locked, frame B's anchor on frame A's x axis (the slide axis); translation along it
//              free: a position (B's anchor along the axis from A's, metres), with limit, motor and spring
//   Fixed      everything locked (a weld)
//   Distance   the anchors' distance held at `length` (rigid), or sprung toward it (spring), or only kept
//              within [limit.lower, limit.upper] (a rope: spring enabled with hertz 0, limit enabled); the
//              frames' axes are not used
//   ConeTwist  anchors together; frame B's x axis (the twist axis) within `coneAngle` of frame A's (the
//              swing cone), and the twist about it within the limit (a shoulder or hip of a ragdoll)
//
// Solving (see joint_solver.h): joints are solved in the soft step with the contacts, after them in each
// pass (warm start, solve with soft position bias, relax), with impulses warm-started across steps. The
// locked degrees of freedom are rigid: their drift is pulled back at WorldConfig::jointHertz (soft, as
// Box2D v3 does), and the relax pass removes the velocity that adds. A joint with `hertz` > 0 is instead a
// spring on its locked degrees of freedom (a soft weld, a springy ball joint). Limits are rigid and
// speculative (they stop the approach before the limit is crossed); motors are bounded by maxForce; springs
// act on the free degree of freedom toward spring.target.
//
// Joints wake their bodies when created, changed or destroyed, link their bodies into one island (they
// sleep and wake together, and the island's substep level counts them), and, unless collideConnected,
// keep their two bodies from colliding. A joint breaks when the force (or torque) it applied over a step
// exceeds breakForce (breakTorque): it is destroyed after that step and reported (World::jointEvents).
// Destroying a body destroys its joints, reported with the next step's events.
#pragma once

#include "polytope/physics/ids.h"
#include "polytope/physics/math.h"

#include <cstdint>
#include <limits>

namespace polytope::physics
{

enum class JointType : std::uint8_t
{
    Ball = 0,
    Hinge = 1,
    Slider = 2,
    Fixed = 3,
    Distance = 4,
    ConeTwist = 5,
};
inline constexpr int kJointTypeCount = 6;

/// A limit on the free degree of freedom: hinge angle and cone-twist twist (radians, within [-pi, pi]),
/// slider position (metres), distance (metres, 0 <= lower). lower <= upper.
struct JointLimit
{
    bool enabled = false;
    float lower = 0.0f;
    float upper = 0.0f;
};

enum class MotorMode : std::uint8_t
{
    Off = 0,
    Velocity = 1, ///< drives the free degree of freedom at targetVelocity
    Position = 2, ///< drives it toward targetPosition, as a spring of `hertz` and `dampingRatio`
};

/// A motor on a hinge (torque about the axis) or a slider (force along it). Its force never exceeds
/// maxForce, so a load beyond it slows or turns the motor back.
struct JointMotor
{
    MotorMode mode = MotorMode::Off;
    float targetVelocity = 0.0f; ///< rad/s or m/s: B relative to A, about or along the axis
    float targetPosition = 0.0f; ///< radians or metres (Position)
    float maxForce = 0.0f;       ///< N m (hinge) or N (slider), >= 0
    float hertz = 2.0f;          ///< Position: stiffness of the drive, > 0
    float dampingRatio = 1.0f;   ///< Position: >= 0
};

/// A spring on the free degree of freedom: hinge angle, slider position (toward `target`), or a distance
/// joint's length (toward JointDesc::length; there `target` is unused). hertz 0 with enabled: no spring,
/// and for a distance joint no length constraint either (a rope within the limit).
struct JointSpring
{
    bool enabled = false;
    float hertz = 0.0f;        ///< >= 0
    float dampingRatio = 0.0f; ///< >= 0
    float target = 0.0f;       ///< radians or metres
};

/// Everything needed to create a joint.
struct JointDesc
{
    JointType type = JointType::Ball;
    BodyId bodyA{};
    BodyId bodyB{};
    Transform frameA{};            ///< in body A's local frame (the shape frame): anchor and axes
    Transform frameB{};            ///< in body B's local frame
    bool collideConnected = false; ///< false: the two bodies never collide with each other
    float hertz = 0.0f;            ///< 0: the locked degrees of freedom are rigid; > 0: a spring of this
                                   ///< frequency holds them (a soft weld or ball joint)
    float dampingRatio = 1.0f;     ///< of that spring, >= 0
    JointLimit limit{};            ///< Hinge, Slider, Distance, ConeTwist (twist)
    JointMotor motor{};            ///< Hinge, Slider
    JointSpring spring{};          ///< Hinge, Slider, Distance
    float length = 1.0f;           ///< Distance: rest length, metres, >= 0
    float coneAngle = kPi;         ///< ConeTwist: largest angle between the twist axes, radians, [0, pi]
    float breakForce = std::numeric_limits<float>::infinity();  ///< N, > 0: breaks above it
    float breakTorque = std::numeric_limits<float>::infinity(); ///< N m, > 0
    std::uint64_t userData = 0;
};

/// Whether the limit, motor, spring and break thresholds of `desc` are in range for its type (the checks
/// createJoint and the setters make on them; bodies and frames are checked by createJoint).
bool validJointSettings(const JointDesc& desc);

/// A read-only view of one joint (World::getJoint).
struct JointState
{
    JointId id{};
    JointDesc desc{};        ///< as created, with the limit, motor, spring and thresholds as last set
    Transform worldFrameA{}; ///< frameA at body A's pose
    Transform worldFrameB{}; ///< frameB at body B's pose
    Vec3 force{};            ///< N, world: what the joint applied to B over the last step (A got -force)
    Vec3 torque{};           ///< N m, world, about B's anchor
    float position = 0.0f;   ///< Hinge: angle (rad); Slider: position (m); Distance: length (m);
                             ///< ConeTwist: twist angle (rad); 0 otherwise
    float swing = 0.0f;      ///< ConeTwist: angle between the twist axes (rad)
    float anchorSeparation = 0.0f; ///< metres between the two anchors: the error of Ball, Hinge, Fixed and
                                   ///< ConeTwist joints
};

enum class JointEventKind : std::uint8_t
{
    Broke = 0,         ///< exceeded its breakForce or breakTorque in the step, and was destroyed
    BodyDestroyed = 1, ///< destroyed with one of its bodies (World::destroyBody) since the last step
};

/// A joint that went away (World::jointEvents). Either body id may be stale (destroyed).
struct JointEvent
{
    JointId joint{};
    BodyId bodyA{};
    BodyId bodyB{};
    JointEventKind kind = JointEventKind::Broke;
    Vec3 force{};  ///< N: the force of the step it broke in (Broke)
    Vec3 torque{}; ///< N m
    std::uint64_t userData = 0;
};

} // namespace polytope::physics

// Polytope physics: the humanoid ragdoll and the `ragdolls` scene (scenes.h).
//
// The proportions are those of a person of about 1.88 m and 79 kg at density 1000 kg/m^3, simplified to 11
// solids: boxes for the pelvis and the chest (their corners give a pile something to rest on), capsules for
// the head and the limbs. The joint ranges are a game ragdoll's, not an anatomist's: the cone-twist joints
// have round cones (one angle), so that Bullet's btConeTwistConstraint can be given the same limits (its two
// swing spans equal), and their twist ranges are symmetric for the same reason. Elbows and knees are hinges
// that bend one way only, from straight (0) to a little under 150 degrees.
#include "polytope/physics/scenes.h"

#include <cmath>

namespace polytope::physics
{
namespace
{

/// A frame at `anchor` whose x axis is `axis` (one of +-x, +-y).
Transform frameAt(const Vec3& anchor, const Vec3& axis)
{
    Quat q = Quat::identity();
    if (axis.y > 0.5f)
    {
        q = quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.5f * kPi); // x -> +y
    }
    else if (axis.y < -0.5f)
    {
        q = quatFromAxisAngle({0.0f, 0.0f, 1.0f}, -0.5f * kPi); // x -> -y
    }
    else if (axis.x < -0.5f)
    {
        q = quatFromAxisAngle({0.0f, 1.0f, 0.0f}, kPi); // x -> -x
    }
    return {anchor, q};
}

JointLimit symmetric(float halfRange)
{
    return {true, -halfRange, halfRange};
}

RagdollModel makeHumanoid()
{
    using P = RagdollPart;
    const Vec3 up{0.0f, 1.0f, 0.0f};
    const Vec3 down{0.0f, -1.0f, 0.0f};
    const Vec3 left{1.0f, 0.0f, 0.0f};
    const Vec3 right{-1.0f, 0.0f, 0.0f};
    RagdollModel m;
    // Parts: the pelvis spans y 0.90 .. 1.10, the chest 1.13 .. 1.55, the head 1.58 .. 1.88; upper arms
    // 1.22 .. 1.52 and forearms 0.895 .. 1.205 at x = +-0.24; thighs 0.46 .. 0.90 and shins 0.02 .. 0.46 at
    // x = +-0.09.
    m.parts = {{
        {"pelvis", Shape::makeBox({0.15f, 0.10f, 0.10f}), {0.0f, 1.00f, 0.0f}},
        {"chest", Shape::makeBox({0.17f, 0.21f, 0.11f}), {0.0f, 1.34f, 0.0f}},
        {"head", Shape::makeCapsule(0.05f, 0.10f), {0.0f, 1.73f, 0.0f}},
        {"upper_arm_left", Shape::makeCapsule(0.10f, 0.05f), {0.24f, 1.37f, 0.0f}},
        {"lower_arm_left", Shape::makeCapsule(0.11f, 0.045f), {0.24f, 1.05f, 0.0f}},
        {"upper_arm_right", Shape::makeCapsule(0.10f, 0.05f), {-0.24f, 1.37f, 0.0f}},
        {"lower_arm_right", Shape::makeCapsule(0.11f, 0.045f), {-0.24f, 1.05f, 0.0f}},
        {"upper_leg_left", Shape::makeCapsule(0.15f, 0.07f), {0.09f, 0.68f, 0.0f}},
        {"lower_leg_left", Shape::makeCapsule(0.16f, 0.06f), {0.09f, 0.24f, 0.0f}},
        {"upper_leg_right", Shape::makeCapsule(0.15f, 0.07f), {-0.09f, 0.68f, 0.0f}},
        {"lower_leg_right", Shape::makeCapsule(0.16f, 0.06f), {-0.09f, 0.24f, 0.0f}},
    }};
    // Elbows bend the forearm toward +z about -x; knees bend the shin toward -z about +x (scenes.h).
    const JointLimit elbow{true, 0.0f, 2.5f};
    const JointLimit knee{true, 0.0f, 2.4f};
    const auto cone = [](std::string_view name, P parent, P child, const Transform& frame, float coneAngle,
                         float twist) {
        return RagdollJointDesc{name,      JointType::ConeTwist, parent, child, frame,
                                coneAngle, symmetric(twist)};
    };
    const auto hinge = [](std::string_view name, P parent, P child, const Transform& frame, JointLimit limit)
    { return RagdollJointDesc{name, JointType::Hinge, parent, child, frame, 0.0f, limit}; };
    m.joints = {{
        cone("spine", P::Pelvis, P::Chest, frameAt({0.0f, 1.115f, 0.0f}, up), 0.35f, 0.3f),
        cone("neck", P::Chest, P::Head, frameAt({0.0f, 1.565f, 0.0f}, up), 0.6f, 0.7f),
        cone("shoulder_left", P::Chest, P::UpperArmLeft, frameAt({0.24f, 1.50f, 0.0f}, down), 1.4f, 0.9f),
        hinge("elbow_left", P::UpperArmLeft, P::LowerArmLeft, frameAt({0.24f, 1.2125f, 0.0f}, right), elbow),
        cone("shoulder_right", P::Chest, P::UpperArmRight, frameAt({-0.24f, 1.50f, 0.0f}, down), 1.4f, 0.9f),
        hinge("elbow_right", P::UpperArmRight, P::LowerArmRight, frameAt({-0.24f, 1.2125f, 0.0f}, right),
              elbow),
        cone("hip_left", P::Pelvis, P::UpperLegLeft, frameAt({0.09f, 0.88f, 0.0f}, down), 0.9f, 0.5f),
        hinge("knee_left", P::UpperLegLeft, P::LowerLegLeft, frameAt({0.09f, 0.46f, 0.0f}, left), knee),
        cone("hip_right", P::Pelvis, P::UpperLegRight, frameAt({-0.09f, 0.88f, 0.0f}, down), 0.9f, 0.5f),
        hinge("knee_right", P::UpperLegRight, P::LowerLegRight, frameAt({-0.09f, 0.46f, 0.0f}, left), knee),
    }};
    return m;
}

/// Height of the ragdoll's middle (half its standing height) in its own frame.
constexpr float kRagdollMiddleY = 0.94f;
/// Metres between the middles of successive ragdolls in the pile, and the lowest one's height.
constexpr float kPileSpacing = 0.4f;
constexpr float kPileBottom = 0.3f;
/// Turn about the vertical from one ragdoll of the pile to the next (137.5 degrees: no two line up soon).
constexpr float kPileTurnRadians = 2.3999632f;

} // namespace

const RagdollModel& humanoidRagdoll()
{
    static const RagdollModel model = makeHumanoid();
    return model;
}

Transform ragdollLocalFrame(const RagdollModel& model, const RagdollJointDesc& joint, RagdollPart part)
{
    const RagdollPartDesc& desc = model.parts[static_cast<std::size_t>(part)];
    return relativeTransform({desc.position, Quat::identity()}, joint.frame);
}

bool addRagdoll(World& world, const Transform& placement, std::uint32_t group, RagdollIds* out)
{
    const RagdollModel& model = humanoidRagdoll();
    RagdollIds ids;
    for (std::size_t i = 0; i < model.parts.size(); ++i)
    {
        BodyDesc desc;
        desc.shape = model.parts[i].shape;
        desc.transform = placement * Transform{model.parts[i].position, Quat::identity()};
        desc.density = model.density;
        desc.friction = model.friction;
        desc.group = group;
        const CreateBodyResult made = world.createBody(desc);
        if (made.status != WorldStatus::Ok)
        {
            return false;
        }
        ids.bodies[i] = made.id;
    }
    for (std::size_t j = 0; j < model.joints.size(); ++j)
    {
        const RagdollJointDesc& joint = model.joints[j];
        JointDesc desc;
        desc.type = joint.type;
        desc.bodyA = ids.bodies[static_cast<std::size_t>(joint.parent)];
        desc.bodyB = ids.bodies[static_cast<std::size_t>(joint.child)];
        desc.frameA = ragdollLocalFrame(model, joint, joint.parent);
        desc.frameB = ragdollLocalFrame(model, joint, joint.child);
        desc.limit = joint.limit;
        if (joint.type == JointType::ConeTwist)
        {
            desc.coneAngle = joint.coneAngle;
        }
        const CreateJointResult made = world.createJoint(desc);
        if (made.status != WorldStatus::Ok)
        {
            return false;
        }
        ids.joints[j] = made.id;
    }
    if (out != nullptr)
    {
        *out = ids;
    }
    return true;
}

Transform ragdollPilePlacement(int i)
{
    // Face down: the ragdoll's up (+y) along +z, its front (+z) toward -y; then turned about the vertical.
    const Quat lying = quatFromAxisAngle({1.0f, 0.0f, 0.0f}, 0.5f * kPi);
    const Quat turn = quatFromAxisAngle({0.0f, 1.0f, 0.0f}, kPileTurnRadians * static_cast<float>(i));
    const Quat q = turn * lying;
    const Vec3 middle{0.0f, kPileBottom + kPileSpacing * static_cast<float>(i), 0.0f};
    return {middle - rotate(q, {0.0f, kRagdollMiddleY, 0.0f}), q};
}

bool buildRagdolls(World& world)
{
    if (!addGroundPlane(world))
    {
        return false;
    }
    for (int i = 0; i < kRagdollPileCount; ++i)
    {
        if (!addRagdoll(world, ragdollPilePlacement(i), static_cast<std::uint32_t>(i + 1)))
        {
            return false;
        }
    }
    return true;
}

} // namespace polytope::physics

// The humanoid ragdoll (scenes_ragdoll.cpp) and the `ragdolls` scene: the model's frames meet at rest and
// its angles bend the way scenes.h says; 20 ragdolls piled for 60 s stay finite, joined and in a pile, and
// (issue 18 item 7) keep their cone-twist joints within their cones and twist ranges (2 degrees) and their
// hinges within their limits (1 degree).
#include "polytope/physics/mass.h"
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>

using namespace polytope::physics;

namespace
{

constexpr float kDegree = kPi / 180.0f;

/// Turns body `id` by `angle` about `axis` (world) through the point `pivot`.
void turnAbout(World& world, BodyId id, const Vec3& pivot, const Vec3& axis, float angle)
{
    BodyState state;
    REQUIRE(world.getBody(id, state));
    const Quat turn = quatFromAxisAngle(axis, angle);
    const Transform moved{pivot + rotate(turn, state.transform.p - pivot),
                          normalize(turn * state.transform.q)};
    REQUIRE(world.setTransform(id, moved) == WorldStatus::Ok);
}

JointState jointOf(const World& world, const RagdollIds& ids, int j)
{
    JointState state;
    REQUIRE(world.getJoint(ids.joints[static_cast<std::size_t>(j)], state));
    return state;
}

int jointNamed(const RagdollModel& model, std::string_view name)
{
    for (std::size_t j = 0; j < model.joints.size(); ++j)
    {
        if (model.joints[j].name == name)
        {
            return static_cast<int>(j);
        }
    }
    FAIL("no joint " << name);
    return -1;
}

} // namespace

TEST_CASE("the ragdoll model: 11 parts, 10 joints, a person's mass, frames that meet at rest", "[ragdoll]")
{
    const RagdollModel& model = humanoidRagdoll();
    float mass = 0.0f;
    for (const RagdollPartDesc& part : model.parts)
    {
        CAPTURE(part.name);
        CHECK((part.shape.type == ShapeType::Box || part.shape.type == ShapeType::Capsule));
        mass += computeMassProperties(part.shape, model.density).mass;
    }
    CHECK(mass == Approx(79.0f).margin(2.0f));
    int cones = 0;
    int hinges = 0;
    for (const RagdollJointDesc& joint : model.joints)
    {
        CAPTURE(joint.name);
        CHECK(joint.parent != joint.child);
        cones += joint.type == JointType::ConeTwist ? 1 : 0;
        hinges += joint.type == JointType::Hinge ? 1 : 0;
        CHECK(joint.limit.enabled);
        CHECK(joint.limit.lower < joint.limit.upper);
        if (joint.type == JointType::ConeTwist)
        {
            CHECK(joint.limit.lower == -joint.limit.upper); // Bullet's twist span is symmetric
            CHECK(joint.coneAngle > 0.0f);
        }
    }
    CHECK(cones == 6); // spine, neck, shoulders, hips
    CHECK(hinges == 4);

    World world;
    RagdollIds ids;
    REQUIRE(addRagdoll(world, Transform{{1.0f, 0.0f, -2.0f}, quatFromAxisAngle({0.0f, 1.0f, 0.0f}, 0.7f)}, 5,
                       &ids));
    CHECK(world.bodyCount() == kRagdollPartCount);
    CHECK(world.jointCount() == kRagdollJointCount);
    for (int j = 0; j < kRagdollJointCount; ++j)
    {
        CAPTURE(model.joints[static_cast<std::size_t>(j)].name);
        const JointState state = jointOf(world, ids, j);
        CHECK(state.anchorSeparation < 1e-5f);
        CHECK(std::fabs(state.position) < 1e-4f);
        CHECK(state.swing < 1e-3f);
    }
    for (const BodyId id : ids.bodies)
    {
        BodyState body;
        REQUIRE(world.getBody(id, body));
        CHECK(body.group == 5);
    }
}

TEST_CASE("the ragdoll's angles: elbows bend forward and knees backward from 0, cones measure the swing",
          "[ragdoll]")
{
    const RagdollModel& model = humanoidRagdoll();
    World world;
    RagdollIds ids;
    REQUIRE(addRagdoll(world, Transform::identity(), 1, &ids)); // standing at the origin, facing +z
    const auto anchorOf = [&](int j) { return model.joints[static_cast<std::size_t>(j)].frame.p; };
    const auto body = [&](RagdollPart part) { return ids.bodies[static_cast<std::size_t>(part)]; };

    // The left forearm turned about its elbow so that its hand goes forward (+z): a positive angle.
    const int elbow = jointNamed(model, "elbow_left");
    turnAbout(world, body(RagdollPart::LowerArmLeft), anchorOf(elbow), {-1.0f, 0.0f, 0.0f}, 0.5f);
    CHECK(jointOf(world, ids, elbow).position == Approx(0.5f).margin(1e-4f));
    BodyState forearm;
    REQUIRE(world.getBody(body(RagdollPart::LowerArmLeft), forearm));
    CHECK(forearm.transform.p.z > 0.05f);

    // The right shin turned so that its foot goes backward (-z): a positive angle.
    const int knee = jointNamed(model, "knee_right");
    turnAbout(world, body(RagdollPart::LowerLegRight), anchorOf(knee), {1.0f, 0.0f, 0.0f}, 1.0f);
    CHECK(jointOf(world, ids, knee).position == Approx(1.0f).margin(1e-4f));
    BodyState shin;
    REQUIRE(world.getBody(body(RagdollPart::LowerLegRight), shin));
    CHECK(shin.transform.p.z < -0.05f);

    // The left upper arm swung out sideways by 0.3 rad, then twisted about its own axis by 0.2 rad.
    const int shoulder = jointNamed(model, "shoulder_left");
    turnAbout(world, body(RagdollPart::UpperArmLeft), anchorOf(shoulder), {0.0f, 0.0f, 1.0f}, 0.3f);
    CHECK(jointOf(world, ids, shoulder).swing == Approx(0.3f).margin(1e-4f));
    CHECK(std::fabs(jointOf(world, ids, shoulder).position) < 1e-4f);
    const Vec3 armAxis = rotate(quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.3f), {0.0f, -1.0f, 0.0f});
    turnAbout(world, body(RagdollPart::UpperArmLeft), anchorOf(shoulder), armAxis, 0.2f);
    CHECK(jointOf(world, ids, shoulder).swing == Approx(0.3f).margin(1e-4f));
    CHECK(std::fabs(jointOf(world, ids, shoulder).position) == Approx(0.2f).margin(1e-4f));
    CHECK(jointOf(world, ids, shoulder).anchorSeparation < 1e-5f);
}

namespace
{

/// What 60 s of the ragdolls scene did: the worst excursions beyond the limits after any step (radians;
/// negative: never reached), the largest anchor separation, and where the parts went.
struct PileFigures
{
    float cone = -kPi;         ///< swing beyond the cone
    float twist = -kPi;        ///< twist beyond its range
    float hinge = -kPi;        ///< hinge angle beyond its limits
    float hingeSettled = -kPi; ///< the same from 5 s on, once the ragdolls have landed
    float separation = 0.0f;
    float lowest = INFINITY; ///< lowest centre of a part, metres
    float farthest = 0.0f;   ///< farthest centre of a part from the vertical through the origin
    int nonFiniteStep = -1;  ///< first step after which some body's state was not finite
};

PileFigures pileRagdolls()
{
    World world;
    std::string error;
    REQUIRE(buildNamedScene(world, "ragdolls", error));
    CHECK(world.bodyCount() == 1 + kRagdollPileCount * kRagdollPartCount);
    CHECK(world.jointCount() == kRagdollPileCount * kRagdollJointCount);
    PileFigures f;
    constexpr int kSteps = 60 * 60;
    for (int step = 0; step < kSteps && f.nonFiniteStep < 0; ++step)
    {
        world.step(1.0f / 60.0f);
        world.forEachBody(
            [&](const BodyState& b)
            {
                if (!(isFinite(b.transform.p) && isFinite(b.transform.q) && isFinite(b.linearVelocity) &&
                      isFinite(b.angularVelocity)))
                {
                    f.nonFiniteStep = step;
                }
                if (b.type == BodyType::Dynamic)
                {
                    f.lowest = std::min(f.lowest, b.transform.p.y);
                    f.farthest = std::max(f.farthest, std::hypot(b.transform.p.x, b.transform.p.z));
                }
            });
        world.forEachJoint(
            [&](const JointState& j)
            {
                const JointLimit& limit = j.desc.limit;
                const float beyond = std::max(j.position - limit.upper, limit.lower - j.position);
                if (j.desc.type == JointType::ConeTwist)
                {
                    f.cone = std::max(f.cone, j.swing - j.desc.coneAngle);
                    f.twist = std::max(f.twist, beyond);
                }
                else
                {
                    f.hinge = std::max(f.hinge, beyond);
                    f.hingeSettled = step >= 300 ? std::max(f.hingeSettled, beyond) : f.hingeSettled;
                }
                f.separation = std::max(f.separation, j.anchorSeparation);
            });
    }
    return f;
}

} // namespace

// Issue 18 item 7: "ragdolls piled for 60 s stay finite and inside their cone limits within 2 degrees", at
// every step of the minute, landing included; twists too. Hinges (elbows, knees) stay within 1 degree of
// their limits ("never exceeded by more than 1 degree") at every step, landing included: with one solve pass
// of the limited joints a limb struck hard passed its hinge limit by 2.6 degrees while the 20 ragdolls landed
// on each other; with WorldConfig::limitIterations 4 (the default) by 0.23 (measured; 1.14 with 2, 0.84 with
// 3). One minute of the pile is simulated once for every check (ctest runs each test case in a process of
// its own, and a minute of 220 bodies is a minute of CI under the sanitizers).
TEST_CASE(
    "20 ragdolls piled for 60 s stay finite, joined, in a pile, and within their cones, twists and hinge "
    "limits",
    "[ragdoll][scenes]")
{
    const PileFigures f = pileRagdolls();
    INFO("largest anchor separation " << f.separation << " m; lowest centre " << f.lowest << " m; farthest "
                                      << f.farthest << " m");
    INFO("worst beyond cone " << f.cone / kDegree << " deg, twist " << f.twist / kDegree << " deg, hinge "
                              << f.hinge / kDegree << " deg (" << f.hingeSettled / kDegree
                              << " after landing)");
    CHECK(f.nonFiniteStep == -1);
    // Joined: no joint is pulled apart (the worst is a few centimetres, as ragdolls land on each other).
    CHECK(f.separation < 0.05f);
    // A pile, not an explosion: no part sank through the ground or flew off.
    CHECK(f.lowest > 0.0f);
    CHECK(f.farthest < 10.0f);
    CHECK(f.cone <= 2.0f * kDegree);
    CHECK(f.twist <= 2.0f * kDegree);
    CHECK(f.hingeSettled <= 1.0f * kDegree);
    CHECK(f.hinge <= 1.0f * kDegree);
}

// Built-in scenes with joints (scenes.h): a hanging chain, a rope bridge and a motored car. Every joint is
// made with one world frame at the bodies' starting poses (World::createJoint(desc, worldFrame)), so each
// scene starts with no joint error: what the tests measure later is the solver's, not the layout's.
#include "polytope/physics/scenes.h"

#include <cmath>

namespace polytope::physics
{

namespace
{

/// A quarter turn about y, -90 degrees: turns a frame's x axis (the hinge axis) onto world +z.
constexpr Quat kXToZ{0.0f, -0.70710678f, 0.0f, 0.70710678f};
/// A quarter turn about z, -90 degrees: turns a capsule's axis (local y) onto world +x.
constexpr Quat kYToX{0.0f, 0.0f, -0.70710678f, 0.70710678f};

bool addBody(World& world, const BodyDesc& desc, BodyId& id)
{
    const CreateBodyResult created = world.createBody(desc);
    id = created.id;
    return created.status == WorldStatus::Ok;
}

bool addJoint(World& world, const JointDesc& desc, const Transform& worldFrame)
{
    return world.createJoint(desc, worldFrame).status == WorldStatus::Ok;
}

BodyDesc staticBox(const Vec3& halfExtents, const Transform& transform, float friction = kSceneFriction)
{
    BodyDesc desc;
    desc.type = BodyType::Static;
    desc.shape = Shape::makeBox(halfExtents);
    desc.transform = transform;
    desc.friction = friction;
    return desc;
}

// Chain: the capsules' segments are 0.5 m and their caps reach 0.05 m past each joint, so neighbours overlap
// there (jointed bodies do not collide).
constexpr float kChainLinkRadius = 0.1f;
constexpr float kChainLinkHalfHeight = 0.25f;
// 1/s, linear and angular. Let go level with its anchor, the chain's end whips through at 30 m/s and its
// links strike each other; undamped, a link struck spinning about its axis keeps spinning (capsules barely
// resist it), and one such run ended with a link flung away (joint separation 1e6 m, after 11 s). Damped, the
// swing dies down in about a minute and the chain sleeps.
constexpr float kChainLinkDamping = 0.2f;

// Bridge.
constexpr float kPlankHalfLength = 0.25f; // along the bridge: the planks' pitch is twice this
constexpr float kPlankHalfThickness = 0.05f;
constexpr float kPlankHalfWidth = 1.5f;
constexpr float kPlankDensity = 600.0f;
constexpr float kPlankDamping =
    0.5f; // 1/s, linear and angular: air and rope friction, so that it comes to rest
constexpr float kPostHalfThickness = 0.25f;
constexpr float kBoxHalfSize = 0.3f;
constexpr float kBoxDensity = 500.0f;
constexpr float kBoxDropHeight = 1.0f; // above the bridge where it starts, to the box's bottom

/// The angle each plank turns by along the circular arc of kBridgePlanks chords of length `chord` whose
/// ends are `span` apart (span < kBridgePlanks * chord), by bisection: the span shrinks as the angle grows.
double bridgeArcStep(double chord, double span)
{
    const double n = kBridgePlanks;
    const auto spanOf = [&](double step) { return chord * std::sin(0.5 * n * step) / std::sin(0.5 * step); };
    double lo = 1e-9;
    double hi = 2.0 * 3.14159265358979323846 / n;
    for (int i = 0; i < 100; ++i)
    {
        const double mid = 0.5 * (lo + hi);
        (spanOf(mid) > span ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

// Car.
constexpr Vec3 kChassisHalfExtents{1.2f, 0.25f, 0.6f};
constexpr float kChassisDensity = 300.0f;
constexpr float kWheelDensity = 500.0f;
constexpr float kWheelFriction = 1.2f;
constexpr float kRampFriction = 0.9f;
constexpr float kWheelOffsetX = 0.9f;   // from the chassis' centre: forward and back
constexpr float kWheelOffsetY = -0.35f; // down
constexpr float kWheelOffsetZ = 1.05f;  // to each side: the wheels stand clear of the chassis
constexpr float kRampLength = 10.0f;
constexpr float kPlatformLength = 12.0f;
constexpr float kRampHalfThickness = 0.25f;
constexpr float kRampHalfWidth = 3.0f;

} // namespace

bool buildChain(World& world)
{
    if (!addGroundPlane(world))
    {
        return false;
    }
    BodyId previous;
    if (!addBody(world, staticBox({0.2f, 0.2f, 0.2f}, {kChainAnchor, Quat::identity()}), previous))
    {
        return false;
    }
    // The links lie along +x from the anchor.
    for (int i = 0; i < kChainLinks; ++i)
    {
        const Vec3 joint = kChainAnchor + Vec3{kChainLinkPitchMeters * static_cast<float>(i), 0.0f, 0.0f};
        BodyDesc link;
        link.shape = Shape::makeCapsule(kChainLinkHalfHeight, kChainLinkRadius);
        link.transform = {joint + Vec3{0.5f * kChainLinkPitchMeters, 0.0f, 0.0f}, kYToX};
        link.friction = kSceneFriction;
        link.linearDamping = kChainLinkDamping;
        link.angularDamping = kChainLinkDamping;
        BodyId id;
        if (!addBody(world, link, id))
        {
            return false;
        }
        JointDesc ball;
        ball.type = JointType::Ball;
        ball.bodyA = previous;
        ball.bodyB = id;
        if (!addJoint(world, ball, {joint, Quat::identity()}))
        {
            return false;
        }
        previous = id;
    }
    return true;
}

bool buildBridge(World& world)
{
    if (!addGroundPlane(world))
    {
        return false;
    }
    constexpr float kHalfSpan = 0.5f * kBridgeSpanMeters;
    constexpr float kPostHalfHeight = 0.5f * (kBridgeAnchorHeightMeters + 0.5f);
    BodyId posts[2];
    for (int side = 0; side < 2; ++side)
    {
        const float sign = side == 0 ? -1.0f : 1.0f;
        const Vec3 center{sign * (kHalfSpan + kPostHalfThickness), kPostHalfHeight, 0.0f};
        if (!addBody(world,
                     staticBox({kPostHalfThickness, kPostHalfHeight, kPlankHalfWidth + 0.2f},
                               {center, Quat::identity()}),
                     posts[side]))
        {
            return false;
        }
    }

    // Joint k lies at arc point k: angle -n * step / 2 + k * step from straight down, about a centre above
    // the anchors chosen so that arc points 0 and n are the anchors.
    const double chord = 2.0 * kPlankHalfLength;
    const double step = bridgeArcStep(chord, kBridgeSpanMeters);
    const double radius = chord / (2.0 * std::sin(0.5 * step));
    const double halfAngle = 0.5 * kBridgePlanks * step;
    const double centerY = kBridgeAnchorHeightMeters + radius * std::cos(halfAngle);
    const auto arcPoint = [&](int k)
    {
        const double angle = -halfAngle + step * k;
        return Vec3{static_cast<float>(radius * std::sin(angle)),
                    static_cast<float>(centerY - radius * std::cos(angle)), 0.0f};
    };

    BodyId previous = posts[0];
    JointDesc hinge;
    hinge.type = JointType::Hinge;
    for (int k = 0; k <= kBridgePlanks; ++k)
    {
        const Vec3 joint =
            k == 0 ? Vec3{-kHalfSpan, kBridgeAnchorHeightMeters, 0.0f}
                   : (k == kBridgePlanks ? Vec3{kHalfSpan, kBridgeAnchorHeightMeters, 0.0f} : arcPoint(k));
        BodyId next = posts[1];
        if (k < kBridgePlanks)
        {
            const Vec3 end =
                k + 1 == kBridgePlanks ? Vec3{kHalfSpan, kBridgeAnchorHeightMeters, 0.0f} : arcPoint(k + 1);
            const Vec3 along = end - joint;
            BodyDesc plank;
            plank.shape = Shape::makeBox({kPlankHalfLength, kPlankHalfThickness, kPlankHalfWidth});
            plank.transform = {(joint + end) * 0.5f,
                               quatFromAxisAngle({0.0f, 0.0f, 1.0f}, std::atan2(along.y, along.x))};
            plank.density = kPlankDensity;
            plank.linearDamping = kPlankDamping;
            plank.angularDamping = kPlankDamping;
            plank.friction = kSceneFriction;
            if (!addBody(world, plank, next))
            {
                return false;
            }
        }
        hinge.bodyA = previous;
        hinge.bodyB = next;
        if (!addJoint(world, hinge, {joint, kXToZ}))
        {
            return false;
        }
        previous = next;
    }

    // The boxes, square to the bridge so that they land flat on its middle, above planks 4 m apart.
    for (int i = 0; i < kBridgeBoxes; ++i)
    {
        BodyDesc box;
        box.shape = Shape::makeBox({kBoxHalfSize, kBoxHalfSize, kBoxHalfSize});
        const float x = (static_cast<float>(i) - 0.5f * static_cast<float>(kBridgeBoxes - 1)) * 4.0f;
        const double angle = std::asin(x / radius);
        const float below = static_cast<float>(centerY - radius * std::cos(angle));
        box.transform = {{x, below + kBoxDropHeight + kBoxHalfSize, 0.0f}, Quat::identity()};
        box.density = kBoxDensity;
        box.friction = kSceneFriction;
        BodyId id;
        if (!addBody(world, box, id))
        {
            return false;
        }
    }
    return true;
}

bool buildCar(World& world)
{
    if (!addGroundPlane(world, kRampFriction))
    {
        return false;
    }
    // The incline: a slab tilted about z whose top face starts at the ground at kCarRampStartX.
    const float slope = kCarRampDegrees * (kPi / 180.0f);
    const Vec3 up{-std::sin(slope), std::cos(slope), 0.0f};
    const Vec3 along{std::cos(slope), std::sin(slope), 0.0f};
    const Vec3 foot{kCarRampStartX, 0.0f, 0.0f};
    const Vec3 inclineCenter = foot + along * (0.5f * kRampLength) - up * kRampHalfThickness;
    BodyId id;
    if (!addBody(world,
                 staticBox({0.5f * kRampLength, kRampHalfThickness, kRampHalfWidth},
                           {inclineCenter, quatFromAxisAngle({0.0f, 0.0f, 1.0f}, slope)}, kRampFriction),
                 id))
    {
        return false;
    }
    // The platform: a block from the ground up to the incline's top edge, then the wall at its far end.
    const Vec3 top = foot + along * kRampLength;
    const float platformHalfHeight = 0.5f * top.y;
    if (!addBody(world,
                 staticBox({0.5f * kPlatformLength, platformHalfHeight, kRampHalfWidth},
                           {{top.x + 0.5f * kPlatformLength, platformHalfHeight, 0.0f}, Quat::identity()},
                           kRampFriction),
                 id) ||
        !addBody(world,
                 staticBox({0.25f, top.y + 1.5f, kRampHalfWidth},
                           {{top.x + kPlatformLength + 0.25f, top.y + 1.5f, 0.0f}, Quat::identity()},
                           kRampFriction),
                 id))
    {
        return false;
    }

    const Vec3 chassisCenter{kCarStartX, kCarWheelRadiusMeters - kWheelOffsetY, 0.0f};
    BodyDesc chassis;
    chassis.shape = Shape::makeBox(kChassisHalfExtents);
    chassis.transform = {chassisCenter, Quat::identity()};
    chassis.density = kChassisDensity;
    chassis.friction = kSceneFriction;
    BodyId chassisId;
    if (!addBody(world, chassis, chassisId))
    {
        return false;
    }
    // Rolling toward +x turns a wheel by -z: the motor's target is about the hinge axis, world +z.
    JointDesc hinge;
    hinge.type = JointType::Hinge;
    hinge.bodyA = chassisId;
    hinge.motor.mode = MotorMode::Velocity;
    hinge.motor.targetVelocity = -kCarWheelSpeedRadiansPerSecond;
    hinge.motor.maxForce = kCarMotorTorqueNewtonMeters;
    const Vec3 offsets[4] = {{kWheelOffsetX, kWheelOffsetY, -kWheelOffsetZ},
                             {kWheelOffsetX, kWheelOffsetY, kWheelOffsetZ},
                             {-kWheelOffsetX, kWheelOffsetY, -kWheelOffsetZ},
                             {-kWheelOffsetX, kWheelOffsetY, kWheelOffsetZ}};
    for (const Vec3& offset : offsets)
    {
        BodyDesc wheel;
        wheel.shape = Shape::makeSphere(kCarWheelRadiusMeters);
        wheel.transform = {chassisCenter + offset, Quat::identity()};
        wheel.density = kWheelDensity;
        wheel.friction = kWheelFriction;
        if (!addBody(world, wheel, hinge.bodyB) || !addJoint(world, hinge, {wheel.transform.p, kXToZ}))
        {
            return false;
        }
    }
    return true;
}

} // namespace polytope::physics

// Polytope physics: the joint solver's rows (see joint_solver.h for the design).
//
// Conventions: a row with world direction n pulls the anchors' relative velocity (B's minus A's) along n;
// an angular row with world axis u acts on the relative angular velocity wB - wA. Impulses are applied to B
// and, opposite, to A. The static dummy (solver index 0) has zero inverse mass and inertia, a zero centre
// and the identity rotation, so its "local" anchors and frames are world ones; it is never written.
#include "polytope/physics/joint_solver.h"

#include <algorithm>
#include <cmath>

namespace polytope::physics
{
namespace
{

constexpr Vec3 kAxisX{1.0f, 0.0f, 0.0f};
constexpr Vec3 kAxisY{0.0f, 1.0f, 0.0f};
constexpr Vec3 kAxisZ{0.0f, 0.0f, 1.0f};

/// Angle wrapped into [-pi, pi].
float wrapAngle(float a)
{
    if (a > kPi)
    {
        a -= 2.0f * kPi;
    }
    else if (a < -kPi)
    {
        a += 2.0f * kPi;
    }
    return a;
}

// The per-joint helpers below are forced inline: the solver calls them for every joint in every pass, and
// the compiler otherwise keeps them out of line (measured: a fifth of joint_grid's time in calls).

/// The joint's current geometry, from the bodies' poses in the substep.
struct Pose
{
    Vec3 rA; ///< anchor A minus A's centre, world
    Vec3 rB;
    Vec3 d;  ///< anchor B minus anchor A
    Quat qA; ///< frame A's world rotation
    Quat qB;
};

/// The joint's anchors always, and its frames' rotations when `frames` (every type but Ball and Distance).
[[gnu::always_inline]] inline Pose poseOf(const JointConstraint& c, std::span<const SolverBodyMotion> motions,
                                          bool frames = true)
{
    const SolverBodyMotion& mA = motions[c.bodyA];
    const SolverBodyMotion& mB = motions[c.bodyB];
    Pose p;
    p.rA = rotate(mA.rotation, c.localAnchorA);
    p.rB = rotate(mB.rotation, c.localAnchorB);
    p.d = (mB.center + p.rB) - (mA.center + p.rA);
    if (frames)
    {
        p.qA = mA.rotation * c.frameA;
        p.qB = mB.rotation * c.frameB;
    }
    return p;
}

bool needsFrames(JointType type)
{
    return type != JointType::Ball && type != JointType::Distance;
}

/// Velocities of the two bodies, read once and written back once per joint.
struct Velocities
{
    Vec3 vA, wA, vB, wB;
};

[[gnu::always_inline]] inline Velocities readVelocities(const JointConstraint& c,
                                                        std::span<const SolverBody> bodies)
{
    return {bodies[c.bodyA].linearVelocity, bodies[c.bodyA].angularVelocity, bodies[c.bodyB].linearVelocity,
            bodies[c.bodyB].angularVelocity};
}

[[gnu::always_inline]] inline void writeVelocities(const JointConstraint& c, const Velocities& v,
                                                   std::span<SolverBody> bodies)
{
    if (c.bodyA != 0)
    {
        bodies[c.bodyA].linearVelocity = v.vA;
        bodies[c.bodyA].angularVelocity = v.wA;
    }
    if (c.bodyB != 0)
    {
        bodies[c.bodyB].linearVelocity = v.vB;
        bodies[c.bodyB].angularVelocity = v.wB;
    }
}

/// An impulse P on B at its anchor (rB) and -P on A at its anchor (rA).
[[gnu::always_inline]] inline void applyPointImpulse(const JointConstraint& c, Velocities& v, const Vec3& rA,
                                                     const Vec3& rB, const Vec3& P)
{
    v.vA = v.vA - mulPerElem(c.massA->inverseMass, P);
    v.wA = v.wA - c.massA->inverseInertia * cross(rA, P);
    v.vB = v.vB + mulPerElem(c.massB->inverseMass, P);
    v.wB = v.wB + c.massB->inverseInertia * cross(rB, P);
}

/// An angular impulse L on B and -L on A.
[[gnu::always_inline]] inline void applyAngularImpulse(const JointConstraint& c, Velocities& v, const Vec3& L)
{
    v.wA = v.wA - c.massA->inverseInertia * L;
    v.wB = v.wB + c.massB->inverseInertia * L;
}

/// A slider's linear impulse P (perpendicular or along the axis): the rows whose direction turns with A, so
/// A's arm reaches to B's anchor (rA + d).
void applySliderImpulse(const JointConstraint& c, Velocities& v, const Pose& p, const Vec3& P)
{
    applyPointImpulse(c, v, p.rA + p.d, p.rB, P);
}

[[gnu::always_inline]] inline Vec3 relativePointVelocity(const Velocities& v, const Vec3& rA, const Vec3& rB)
{
    return (v.vB + cross(v.wB, rB)) - (v.vA + cross(v.wA, rA));
}

/// Inverse effective mass of a linear row along unit n with arms rA and rB.
float linearRowMass(const JointConstraint& c, const Vec3& n, const Vec3& rA, const Vec3& rB)
{
    const Vec3 uA = cross(rA, n);
    const Vec3 uB = cross(rB, n);
    const float k = dot(n, mulPerElem(c.massA->inverseMass + c.massB->inverseMass, n)) +
                    dot(uA, c.massA->inverseInertia * uA) + dot(uB, c.massB->inverseInertia * uB);
    return k > 0.0f ? 1.0f / k : 0.0f;
}

/// Inverse effective mass of an angular row about unit u.
float angularRowMass(const JointConstraint& c, const Vec3& u)
{
    const float k = dot(u, c.massA->inverseInertia * u) + dot(u, c.massB->inverseInertia * u);
    return k > 0.0f ? 1.0f / k : 0.0f;
}

/// One inequality row keeping `gap` >= 0, where the gap closes at -gapRate: returns the impulse to apply
/// along the row (>= 0 accumulated in `accumulated`). Speculative while the gap is open; past the bound the
/// solve pass pulls back at the joint softness' rate and the relax pass only stops the approach.
float limitRow(const JointConstraint& c, float gap, float gapRate, float mass, float& accumulated,
               float inverseH, bool useBias)
{
    float bias = 0.0f;
    float massScale = 1.0f;
    float impulseScale = 0.0f;
    if (gap > 0.0f)
    {
        bias = gap * inverseH;
    }
    else if (useBias)
    {
        // Past the bound: pulled back at the joint softness' rate, but without the soft constraint's
        // impulse leak (massScale, impulseScale), which would leave a limit under a steady load (a limb
        // resting on its elbow) sagging past it by load over stiffness: 2.3 degrees in the ragdoll pile.
        bias = c.limitSoftness.biasRate * gap;
    }
    const float impulse = -massScale * mass * (gapRate + bias) - impulseScale * accumulated;
    const float total = std::max(accumulated + impulse, 0.0f);
    const float applied = total - accumulated;
    accumulated = total;
    return applied;
}

/// The spring row on a free coordinate with error C and rate Cdot: the impulse along the row.
float springRow(const Softness& s, float C, float Cdot, float mass, float& accumulated)
{
    const float impulse = -s.massScale * mass * (Cdot + s.biasRate * C) - s.impulseScale * accumulated;
    accumulated += impulse;
    return impulse;
}

/// The motor row on a free coordinate `position` with rate Cdot: the impulse along the row.
float motorRow(const JointConstraint& c, float position, float Cdot, float mass, bool angular)
{
    float impulse = 0.0f;
    if (c.motorMode == MotorMode::Velocity)
    {
        impulse = -mass * (Cdot - c.motorVelocity);
    }
    else
    {
        const float error = angular ? wrapAngle(position - c.motorTarget) : position - c.motorTarget;
        const Softness& s = c.motorSoftness;
        impulse = -s.massScale * mass * (Cdot + s.biasRate * error) - s.impulseScale * c.impulses.motor;
    }
    const float old = c.impulses.motor;
    const float total = std::clamp(old + impulse, -c.maxMotorImpulse, c.maxMotorImpulse);
    return total - old; // the caller stores total via the returned difference
}

/// Softness of a locked row in this pass: the joint's own spring, the world's correction, or rigid.
[[gnu::always_inline]] inline void lockScales(const JointConstraint& c, bool useBias, float& biasRate,
                                              float& massScale, float& impulseScale)
{
    if ((c.flags & kJointSoft) != 0 || useBias)
    {
        biasRate = c.lockSoftness.biasRate;
        massScale = c.lockSoftness.massScale;
        impulseScale = c.lockSoftness.impulseScale;
    }
    else
    {
        biasRate = 0.0f;
        massScale = 1.0f;
        impulseScale = 0.0f;
    }
}

[[gnu::always_inline]] inline void solvePoint(JointConstraint& c, Velocities& v, const Pose& p, bool useBias)
{
    float biasRate, massScale, impulseScale;
    lockScales(c, useBias, biasRate, massScale, impulseScale);
    const Vec3 Cdot = relativePointVelocity(v, p.rA, p.rB);
    const Vec3 impulse =
        (c.pointMass * (Cdot + p.d * biasRate)) * -massScale - c.impulses.linear * impulseScale;
    c.impulses.linear = c.impulses.linear + impulse;
    applyPointImpulse(c, v, p.rA, p.rB, impulse);
}

/// The rotation vector from frame A to frame B (world), for the angular lock.
Vec3 lockError(const Pose& p)
{
    Quat e = p.qB * conjugate(p.qA);
    const float sign = e.w < 0.0f ? -2.0f : 2.0f;
    return Vec3{e.x, e.y, e.z} * sign;
}

void solveAngularLock(JointConstraint& c, Velocities& v, const Pose& p, bool useBias)
{
    float biasRate, massScale, impulseScale;
    lockScales(c, useBias, biasRate, massScale, impulseScale);
    const Vec3 Cdot = v.wB - v.wA;
    const Vec3 impulse =
        (c.angularMass * (Cdot + lockError(p) * biasRate)) * -massScale - c.impulses.angular * impulseScale;
    c.impulses.angular = c.impulses.angular + impulse;
    applyAngularImpulse(c, v, impulse);
}

/// A hinge's two angular rows: frame B's y and z axes kept perpendicular to frame A's hinge axis.
void solveHingeAxes(JointConstraint& c, Velocities& v, const Pose& p, bool useBias)
{
    float biasRate, massScale, impulseScale;
    lockScales(c, useBias, biasRate, massScale, impulseScale);
    const Vec3 a = rotate(p.qA, kAxisX);
    const Vec3 b2 = rotate(p.qB, kAxisY);
    const Vec3 b3 = rotate(p.qB, kAxisZ);
    const Vec3 u1 = cross(b2, a);
    const Vec3 u2 = cross(b3, a);
    const Mat3 inertia = c.massA->inverseInertia + c.massB->inverseInertia;
    const Vec3 iu1 = inertia * u1;
    const Vec3 iu2 = inertia * u2;
    const float k11 = dot(u1, iu1);
    const float k12 = dot(u1, iu2);
    const float k22 = dot(u2, iu2);
    const float det = k11 * k22 - k12 * k12;
    if (!(det > 0.0f))
    {
        return;
    }
    const Vec3 dw = v.wB - v.wA;
    const float r1 = dot(dw, u1) + biasRate * dot(a, b2);
    const float r2 = dot(dw, u2) + biasRate * dot(a, b3);
    const float inv = 1.0f / det;
    const float l1 = -massScale * inv * (k22 * r1 - k12 * r2) - impulseScale * dot(c.impulses.angular, u1);
    const float l2 = -massScale * inv * (k11 * r2 - k12 * r1) - impulseScale * dot(c.impulses.angular, u2);
    const Vec3 impulse = u1 * l1 + u2 * l2;
    c.impulses.angular = c.impulses.angular + impulse;
    applyAngularImpulse(c, v, impulse);
}

/// A slider's two linear rows: B's anchor kept on A's slide axis.
void solveSliderAxes(JointConstraint& c, Velocities& v, const Pose& p, bool useBias)
{
    float biasRate, massScale, impulseScale;
    lockScales(c, useBias, biasRate, massScale, impulseScale);
    const Vec3 p1 = rotate(p.qA, kAxisY);
    const Vec3 p2 = rotate(p.qA, kAxisZ);
    const Vec3 armA = p.rA + p.d;
    const Vec3 a1 = cross(armA, p1);
    const Vec3 a2 = cross(armA, p2);
    const Vec3 b1 = cross(p.rB, p1);
    const Vec3 b2 = cross(p.rB, p2);
    const Vec3 inverseMass = c.massA->inverseMass + c.massB->inverseMass;
    const float k11 = dot(p1, mulPerElem(inverseMass, p1)) + dot(a1, c.massA->inverseInertia * a1) +
                      dot(b1, c.massB->inverseInertia * b1);
    const float k12 = dot(p1, mulPerElem(inverseMass, p2)) + dot(a1, c.massA->inverseInertia * a2) +
                      dot(b1, c.massB->inverseInertia * b2);
    const float k22 = dot(p2, mulPerElem(inverseMass, p2)) + dot(a2, c.massA->inverseInertia * a2) +
                      dot(b2, c.massB->inverseInertia * b2);
    const float det = k11 * k22 - k12 * k12;
    if (!(det > 0.0f))
    {
        return;
    }
    const Vec3 dv = relativePointVelocity(v, armA, p.rB);
    const float r1 = dot(dv, p1) + biasRate * dot(p.d, p1);
    const float r2 = dot(dv, p2) + biasRate * dot(p.d, p2);
    const float inv = 1.0f / det;
    const float l1 = -massScale * inv * (k22 * r1 - k12 * r2) - impulseScale * dot(c.impulses.linear, p1);
    const float l2 = -massScale * inv * (k11 * r2 - k12 * r1) - impulseScale * dot(c.impulses.linear, p2);
    const Vec3 impulse = p1 * l1 + p2 * l2;
    c.impulses.linear = c.impulses.linear + impulse;
    applySliderImpulse(c, v, p, impulse);
}

/// Spring and motor on a free angular coordinate `angle` about world axis `axis`.
void solveAngularDrive(JointConstraint& c, Velocities& v, const Vec3& axis, float angle, bool withMotor)
{
    const float mass = angularRowMass(c, axis);
    if ((c.flags & kJointSpring) != 0)
    {
        const float Cdot = dot(v.wB - v.wA, axis);
        const float impulse =
            springRow(c.springSoftness, wrapAngle(angle - c.springTarget), Cdot, mass, c.impulses.spring);
        applyAngularImpulse(c, v, axis * impulse);
    }
    if (withMotor && c.motorMode != MotorMode::Off)
    {
        const float Cdot = dot(v.wB - v.wA, axis);
        const float impulse = motorRow(c, angle, Cdot, mass, true);
        c.impulses.motor += impulse;
        applyAngularImpulse(c, v, axis * impulse);
    }
}

/// The limits of a free angular coordinate `angle` about world axis `axis`. Solved after the joint's locked
/// rows (as Jolt does), so that the rows solved last in the joint are the ones users see first.
void solveAngularLimits(JointConstraint& c, Velocities& v, const Vec3& axis, float angle, float inverseH,
                        bool useBias)
{
    const float mass = angularRowMass(c, axis);
    {
        const float Cdot = dot(v.wB - v.wA, axis);
        const float impulse = limitRow(c, angle - c.lower, Cdot, mass, c.impulses.lower, inverseH, useBias);
        applyAngularImpulse(c, v, axis * impulse);
    }
    {
        const float Cdot = -dot(v.wB - v.wA, axis);
        const float impulse = limitRow(c, c.upper - angle, Cdot, mass, c.impulses.upper, inverseH, useBias);
        applyAngularImpulse(c, v, axis * -impulse);
    }
}

/// The hinge's free coordinate: frame B's y axis from frame A's, about A's x axis.
float hingeAngle(const Quat& qA, const Quat& qB, const Vec3& axis)
{
    const Vec3 refA = rotate(qA, kAxisY);
    const Vec3 refB = rotate(qB, kAxisY);
    return std::atan2(dot(cross(refA, refB), axis), dot(refA, refB));
}

/// The twist of frame B about frame A's x axis: the twist part of A's-frame relative rotation.
float twistAngle(const Quat& qA, const Quat& qB)
{
    const Quat r = conjugate(qA) * qB;
    return wrapAngle(2.0f * std::atan2(r.x, r.w));
}

void solveHinge(JointConstraint& c, Velocities& v, const Pose& p, float inverseH, bool useBias)
{
    const Vec3 axis = rotate(p.qA, kAxisX);
    const float angle = hingeAngle(p.qA, p.qB, axis);
    solveAngularDrive(c, v, axis, angle, true);
    solveHingeAxes(c, v, p, useBias);
    solvePoint(c, v, p, useBias);
    if ((c.flags & kJointLimit) != 0)
    {
        solveAngularLimits(c, v, axis, angle, inverseH, useBias);
    }
}

void solveConeTwist(JointConstraint& c, Velocities& v, const Pose& p, float inverseH, bool useBias)
{
    solvePoint(c, v, p, useBias);
    const Vec3 a = rotate(p.qA, kAxisX);
    const Vec3 b = rotate(p.qB, kAxisX);
    if ((c.flags & kJointLimit) != 0)
    {
        const Vec3 half = a + b;
        const float halfLength = length(half);
        if (halfLength > 1e-4f)
        {
            solveAngularLimits(c, v, half / halfLength, twistAngle(p.qA, p.qB), inverseH, useBias);
        }
    }
    if ((c.flags & kJointCone) != 0)
    {
        const Vec3 n = cross(a, b);
        const float sine = length(n);
        const float swing = std::atan2(sine, dot(a, b));
        // The cone row's axis is undefined while the axes align; they are then far inside any cone but a
        // zero one, which the rows of a tiny sine still hold.
        if (sine > 1e-6f)
        {
            const Vec3 u = n / sine; // swing grows as B turns about u relative to A
            const float mass = angularRowMass(c, u);
            const float impulse = limitRow(c, c.coneAngle - swing, -dot(v.wB - v.wA, u), mass,
                                           c.impulses.swing, inverseH, useBias);
            applyAngularImpulse(c, v, u * -impulse);
        }
    }
}

void solveSlider(JointConstraint& c, Velocities& v, const Pose& p, float inverseH, bool useBias)
{
    const Vec3 n = rotate(p.qA, kAxisX);
    const Vec3 armA = p.rA + p.d;
    const float position = dot(p.d, n);
    const float mass = linearRowMass(c, n, armA, p.rB);
    const auto rate = [&] { return dot(relativePointVelocity(v, armA, p.rB), n); };
    if ((c.flags & kJointSpring) != 0)
    {
        const float impulse =
            springRow(c.springSoftness, position - c.springTarget, rate(), mass, c.impulses.spring);
        applySliderImpulse(c, v, p, n * impulse);
    }
    if (c.motorMode != MotorMode::Off)
    {
        const float impulse = motorRow(c, position, rate(), mass, false);
        c.impulses.motor += impulse;
        applySliderImpulse(c, v, p, n * impulse);
    }
    if ((c.flags & kJointLimit) != 0)
    {
        {
            const float impulse =
                limitRow(c, position - c.lower, rate(), mass, c.impulses.lower, inverseH, useBias);
            applySliderImpulse(c, v, p, n * impulse);
        }
        {
            const float impulse =
                limitRow(c, c.upper - position, -rate(), mass, c.impulses.upper, inverseH, useBias);
            applySliderImpulse(c, v, p, n * -impulse);
        }
    }
    solveAngularLock(c, v, p, useBias);
    solveSliderAxes(c, v, p, useBias);
}

void solveDistance(JointConstraint& c, Velocities& v, const Pose& p, float inverseH, bool useBias)
{
    const float current = length(p.d);
    if (!(current > 1e-6f))
    {
        return; // anchors together: no direction to act along
    }
    const Vec3 n = p.d / current;
    const float mass = linearRowMass(c, n, p.rA, p.rB);
    const auto rate = [&] { return dot(relativePointVelocity(v, p.rA, p.rB), n); };
    if ((c.flags & kJointSpring) != 0)
    {
        const float impulse =
            springRow(c.springSoftness, current - c.length, rate(), mass, c.impulses.spring);
        applyPointImpulse(c, v, p.rA, p.rB, n * impulse);
    }
    if ((c.flags & kJointLimit) != 0)
    {
        {
            const float impulse =
                limitRow(c, current - c.lower, rate(), mass, c.impulses.lower, inverseH, useBias);
            applyPointImpulse(c, v, p.rA, p.rB, n * impulse);
        }
        {
            const float impulse =
                limitRow(c, c.upper - current, -rate(), mass, c.impulses.upper, inverseH, useBias);
            applyPointImpulse(c, v, p.rA, p.rB, n * -impulse);
        }
    }
    if ((c.flags & kJointRigidLength) != 0)
    {
        float biasRate, massScale, impulseScale;
        lockScales(c, useBias, biasRate, massScale, impulseScale);
        const float impulse =
            -massScale * mass * (rate() + biasRate * (current - c.length)) - impulseScale * c.impulses.axial;
        c.impulses.axial += impulse;
        applyPointImpulse(c, v, p.rA, p.rB, n * impulse);
    }
}

} // namespace

Mat3 jointPointMass(const JointConstraint& c, const Vec3& rA, const Vec3& rB)
{
    // K = M_A^-1 + M_B^-1 + [rA]x^T I_A^-1 [rA]x + [rB]x^T I_B^-1 [rB]x: the anchor velocity change per
    // unit impulse; its inverse is the block's effective mass. K is symmetric (the world inverse inertias
    // are kept exactly so: mirroredUpper), so only its 6 upper entries are worked out, each arm term from
    // the two nonzero entries of each column of [r]x, and it is inverted by cofactors. The wide solver
    // (joint_solver_wide.cpp) does these operations in this order.
    const SymmetricBlock a = armInertia(rA, c.massA->inverseInertia);
    const SymmetricBlock b = armInertia(rB, c.massB->inverseInertia);
    const Vec3 m = c.massA->inverseMass + c.massB->inverseMass;
    const SymmetricBlock k{m.x + a.xx + b.xx, a.xy + b.xy, a.xz + b.xz,
                           m.y + a.yy + b.yy, a.yz + b.yz, m.z + a.zz + b.zz};
    return inverseSymmetric(k);
}

void warmStartJoint(JointConstraint& c, std::span<SolverBody> bodies,
                    std::span<const SolverBodyMotion> motions)
{
    const Pose p = poseOf(c, motions, needsFrames(c.type));
    // The blocks' effective masses at this substep's anchors and inertias. Kept from the step's start
    // instead, a 100 x 100 grid of ball joints hanging at 4 substeps blew up within 2 s: the anchors of
    // bodies swinging fast turn far within a step, and a stale mass over-corrects.
    if (c.type == JointType::Ball || c.type == JointType::Fixed || c.type == JointType::Hinge ||
        c.type == JointType::ConeTwist)
    {
        c.pointMass = jointPointMass(c, p.rA, p.rB);
    }
    if (c.type == JointType::Fixed || c.type == JointType::Slider)
    {
        c.angularMass = inverse(c.massA->inverseInertia + c.massB->inverseInertia);
    }
    Velocities v = readVelocities(c, bodies);
    const JointImpulses& i = c.impulses;
    switch (c.type)
    {
    case JointType::Ball:
        applyPointImpulse(c, v, p.rA, p.rB, i.linear);
        break;
    case JointType::Fixed:
    case JointType::Hinge:
    case JointType::ConeTwist:
    {
        applyPointImpulse(c, v, p.rA, p.rB, i.linear);
        applyAngularImpulse(c, v, i.angular);
        const Vec3 a = rotate(p.qA, kAxisX);
        if (c.type == JointType::Hinge)
        {
            applyAngularImpulse(c, v, a * (i.spring + i.motor + i.lower - i.upper));
        }
        else if (c.type == JointType::ConeTwist)
        {
            const Vec3 b = rotate(p.qB, kAxisX);
            const Vec3 half = a + b;
            const float halfLength = length(half);
            if (halfLength > 1e-4f)
            {
                applyAngularImpulse(c, v, half * ((i.lower - i.upper) / halfLength));
            }
            const Vec3 n = cross(a, b);
            const float sine = length(n);
            if (sine > 1e-6f)
            {
                applyAngularImpulse(c, v, n * (-i.swing / sine));
            }
        }
        break;
    }
    case JointType::Slider:
    {
        const Vec3 n = rotate(p.qA, kAxisX);
        applySliderImpulse(c, v, p, i.linear + n * (i.spring + i.motor + i.lower - i.upper));
        applyAngularImpulse(c, v, i.angular);
        break;
    }
    case JointType::Distance:
    {
        const float current = length(p.d);
        if (current > 1e-6f)
        {
            const Vec3 n = p.d / current;
            applyPointImpulse(c, v, p.rA, p.rB, n * (i.axial + i.spring + i.lower - i.upper));
        }
        break;
    }
    }
    writeVelocities(c, v, bodies);
}

void solveJoint(JointConstraint& c, std::span<SolverBody> bodies, std::span<const SolverBodyMotion> motions,
                float inverseH, bool useBias)
{
    const Pose p = poseOf(c, motions, needsFrames(c.type));
    Velocities v = readVelocities(c, bodies);
    switch (c.type)
    {
    case JointType::Ball:
        solvePoint(c, v, p, useBias);
        break;
    case JointType::Hinge:
        solveHinge(c, v, p, inverseH, useBias);
        break;
    case JointType::Slider:
        solveSlider(c, v, p, inverseH, useBias);
        break;
    case JointType::Fixed:
        solveAngularLock(c, v, p, useBias);
        solvePoint(c, v, p, useBias);
        break;
    case JointType::Distance:
        solveDistance(c, v, p, inverseH, useBias);
        break;
    case JointType::ConeTwist:
        solveConeTwist(c, v, p, inverseH, useBias);
        break;
    }
    writeVelocities(c, v, bodies);
}

void jointCoordinates(JointType type, const Transform& worldFrameA, const Transform& worldFrameB,
                      float& position, float& swing)
{
    position = 0.0f;
    swing = 0.0f;
    const Vec3 a = rotate(worldFrameA.q, kAxisX);
    switch (type)
    {
    case JointType::Hinge:
        position = hingeAngle(worldFrameA.q, worldFrameB.q, a);
        break;
    case JointType::Slider:
        position = dot(worldFrameB.p - worldFrameA.p, a);
        break;
    case JointType::Distance:
        position = length(worldFrameB.p - worldFrameA.p);
        break;
    case JointType::ConeTwist:
    {
        const Vec3 b = rotate(worldFrameB.q, kAxisX);
        position = twistAngle(worldFrameA.q, worldFrameB.q);
        swing = std::atan2(length(cross(a, b)), dot(a, b));
        break;
    }
    case JointType::Ball:
    case JointType::Fixed:
        break;
    }
}

} // namespace polytope::physics

// The soft-step contact solver (see contact_solver.h for the rationale).
#include "polytope/physics/contact_solver.h"

#include "polytope/physics/dvec3.h"

#include <algorithm>
#include <cmath>

namespace polytope::physics
{
namespace
{

/// Velocity of B's anchor relative to A's along a direction, through the precomputed Jacobian.
inline float relativeSpeed(const SolverBody& a, const SolverBody& b, const Vec3& dir, const Vec3& armA,
                           const Vec3& armB)
{
    return dot(b.linearVelocity - a.linearVelocity, dir) + dot(b.angularVelocity, armB) -
           dot(a.angularVelocity, armA);
}

/// Applies impulse lambda along a direction: -lambda to A, +lambda to B.
inline void applyAlong(SolverBody& a, SolverBody& b, const Vec3& shiftA, const Vec3& shiftB,
                       const Vec3& turnA, const Vec3& turnB, float lambda)
{
    a.linearVelocity -= shiftA * lambda;
    a.angularVelocity -= turnA * lambda;
    b.linearVelocity += shiftB * lambda;
    b.angularVelocity += turnB * lambda;
}

/// Effective mass 1 / (J M^-1 J^T) from the parts of the Jacobian; 0 when nothing can move.
inline float effectiveMass(const Vec3& dir, const Vec3& shiftA, const Vec3& shiftB, const Vec3& armA,
                           const Vec3& armB, const Vec3& turnA, const Vec3& turnB)
{
    const float k = dot(dir, shiftA) + dot(dir, shiftB) + dot(armA, turnA) + dot(armB, turnB);
    return k > 0.0f ? 1.0f / k : 0.0f;
}

/// v scaled to `length` (v itself when it is zero).
inline Vec3 withLength(const Vec3& v, float newLength)
{
    const float old = length(v);
    return old > 0.0f ? v * (newLength / old) : v;
}

/// The shortest rotation taking the direction of `from` to that of `to` (identity when either is zero or
/// they are opposite, which the free rotation step never meets: its two vectors differ by O(h^3)).
inline Quat shortestArc(const Vec3& from, const Vec3& to)
{
    const float lengths = length(from) * length(to);
    const float w = lengths + dot(from, to);
    if (!(w > 1e-6f * lengths))
    {
        return Quat{};
    }
    const Vec3 axis = cross(from, to);
    return normalize(Quat{axis.x, axis.y, axis.z, w});
}

/// The products of freeRotationStep with a general body-axis inertia.
struct FullInertia
{
    const Mat3& inertia;
    Vec3 times(const Vec3& v) const { return inertia * v; }
    Mat3 skewTimes(const Vec3& v) const { return skew(v) * inertia; } ///< [v]x I
};

/// The same products with a diagonal inertia (principal axes along the body's: boxes, capsules, cylinders,
/// symmetric hulls), without the terms the zeros make vanish: the results are the general products' but for
/// the sign of a zero.
struct DiagonalInertia
{
    Vec3 d;
    Vec3 times(const Vec3& v) const { return {d.x * v.x, d.y * v.y, d.z * v.z}; }
    Mat3 skewTimes(const Vec3& v) const
    {
        // Column j of [v]x scaled by d_j.
        return {Vec3{0.0f * d.x, v.z * d.x, -v.y * d.x}, Vec3{-v.z * d.y, 0.0f * d.y, v.x * d.y},
                Vec3{v.y * d.z, -v.x * d.z, 0.0f * d.z}};
    }
};

/// freeRotationStep with the inertia's products given by `inertia` (DiagonalInertia or FullInertia).
template <class Inertia>
Quat freeRotationStepWith(const SolverBodyMotion& m, const Inertia& inertia, Vec3& angularVelocity, float h)
{
    // Torque-free rotation in body axes (Euler's equations): I dw/dt = -w x I w. The implicit midpoint
    // rule, I (w1 - w0) + h (wm x I wm) = 0 with wm = (w0 + w1) / 2, keeps every quadratic invariant of
    // this equation exactly: the kinetic energy w.I w / 2 and |I w|^2 (Hairer, Lubich and Wanner,
    // "Geometric Numerical Integration", IV.2). Explicit updates drift (the rotation gains energy at
    // every tumble) and the single Newton step of implicit Euler that Bullet uses damps. Newton's method
    // on the 3x3 system, a fixed number of iterations so the result does not depend on a tolerance test;
    // the Jacobian is I + h/2 ([wm]x I - [I wm]x).
    const Mat3 r = toMat3(m.rotation);
    const Vec3 w0 = withLength(mulTransposed(r, angularVelocity), length(angularVelocity));
    const Vec3 momentum0 = inertia.times(w0);
    Vec3 w1 = w0;
    // Newton's error falls quadratically from the first correction, which is about h |w| of |w| (the
    // gyroscopic term, at most |w| x |w| in size): one iteration leaves about (h |w|)^3 / 2 of |w|, two
    // (h |w|)^7. Below the thresholds both are under float precision (5e-10 and 2e-11), so a slow turn (most
    // bodies resting or sliding) needs fewer iterations for the same result up to rounding.
    const float turn = h * length(w0);
    const int iterations = turn < 1e-3f ? 1 : turn < 3e-2f ? 2 : kGyroscopicNewtonIterations;
    for (int iteration = 0; iteration < iterations; ++iteration)
    {
        const Vec3 wm = (w0 + w1) * 0.5f;
        const Vec3 momentumMid = inertia.times(wm);
        const Vec3 residual = inertia.times(w1) - momentum0 + cross(wm, momentumMid) * h;
        const Mat3 jacobian = m.inertiaLocal + (inertia.skewTimes(wm) - skew(momentumMid)) * (0.5f * h);
        w1 -= inverse(jacobian) * residual;
    }
    // The rule keeps the energy exactly, float arithmetic only to rounding, and that rounding has a bias
    // (a drift of ~0.03% a minute at 240 substeps a second): scale w1 back onto the energy it started
    // with, measured in double. The scale differs from 1 by a few ulps.
    const double energy0 = dot(toDouble(w0), toDouble(momentum0));
    const double energy1 = dot(toDouble(w1), toDouble(inertia.times(w1)));
    if (energy1 > 0.0)
    {
        w1 *= static_cast<float>(std::sqrt(energy0 / energy1));
    }
    // The body turns by the midpoint rate. That alone would leave the world angular momentum off by
    // O(h^3) a substep, so finish with the shortest turn that carries the new body-axis momentum onto
    // the old world one: L stays exactly where it was (the turn's size is that O(h^3)).
    const Vec3 midWorld = r * ((w0 + w1) * 0.5f);
    const Quat turned = integrateRotation(m.rotation, midWorld, h);
    const Vec3 momentumWorld = r * momentum0;
    const Vec3 predicted = rotate(turned, inertia.times(w1));
    const Quat correction = shortestArc(predicted, momentumWorld);
    const Quat next = normalize(correction * turned);
    // Rotations keep lengths, but float rotations (r, rotate) do so only to rounding, with a bias that
    // a million substeps would turn into a steady energy drift: keep |w| across each change of frame.
    angularVelocity = withLength(rotate(next, w1), length(w1));
    return next;
}

} // namespace

Quat freeRotationStep(const SolverBodyMotion& m, Vec3& angularVelocity, float h)
{
    const Mat3& i = m.inertiaLocal;
    if (i.c0.y == 0.0f && i.c0.z == 0.0f && i.c1.x == 0.0f && i.c1.z == 0.0f && i.c2.x == 0.0f &&
        i.c2.y == 0.0f)
    {
        return freeRotationStepWith(m, DiagonalInertia{{i.c0.x, i.c1.y, i.c2.z}}, angularVelocity, h);
    }
    return freeRotationStepWith(m, FullInertia{i}, angularVelocity, h);
}

Softness makeSoftness(float hertz, float dampingRatio, float h)
{
    if (!(hertz > 0.0f))
    {
        return {0.0f, 1.0f, 0.0f};
    }
    const float omega = 2.0f * kPi * hertz;
    const float a1 = 2.0f * dampingRatio + h * omega;
    const float a2 = h * omega * a1;
    const float a3 = 1.0f / (1.0f + a2);
    return {omega / a1, a2 * a3, a3};
}

void prepareContactConstraint(const ContactConstraintSetup& setup, ContactConstraint& c,
                              std::span<const SolverBody> bodies, std::span<const SolverBodyMass> masses)
{
    c.bodyA = setup.bodyA;
    c.bodyB = setup.bodyB;
    c.normal = setup.normal;
    c.tangent1 = setup.tangent1;
    c.tangent2 = setup.tangent2;
    c.friction = setup.friction;
    c.restitution = setup.restitution;
    c.softness = setup.softness;
    c.pointCount = setup.pointCount;
    const SolverBody& a = bodies[c.bodyA];
    const SolverBody& b = bodies[c.bodyB];
    const SolverBodyMass& ma = masses[c.bodyA];
    const SolverBodyMass& mb = masses[c.bodyB];
    c.normalShiftA = mulPerElem(ma.inverseMass, c.normal);
    c.normalShiftB = mulPerElem(mb.inverseMass, c.normal);
    c.tangent1ShiftA = mulPerElem(ma.inverseMass, c.tangent1);
    c.tangent1ShiftB = mulPerElem(mb.inverseMass, c.tangent1);
    c.tangent2ShiftA = mulPerElem(ma.inverseMass, c.tangent2);
    c.tangent2ShiftB = mulPerElem(mb.inverseMass, c.tangent2);
    for (int i = 0; i < c.pointCount; ++i)
    {
        const ContactPointSetup& in = setup.points[i];
        ContactConstraintPoint& p = c.points[i];
        p.baseSeparation = in.baseSeparation;
        p.normalImpulse = in.normalImpulse;
        p.tangentImpulse1 = in.tangentImpulse1;
        p.tangentImpulse2 = in.tangentImpulse2;
        p.normalArmA = cross(in.anchorA, c.normal);
        p.normalArmB = cross(in.anchorB, c.normal);
        p.normalTurnA = ma.inverseInertia * p.normalArmA;
        p.normalTurnB = mb.inverseInertia * p.normalArmB;
        p.tangent1ArmA = cross(in.anchorA, c.tangent1);
        p.tangent1ArmB = cross(in.anchorB, c.tangent1);
        p.tangent1TurnA = ma.inverseInertia * p.tangent1ArmA;
        p.tangent1TurnB = mb.inverseInertia * p.tangent1ArmB;
        p.tangent2ArmA = cross(in.anchorA, c.tangent2);
        p.tangent2ArmB = cross(in.anchorB, c.tangent2);
        p.tangent2TurnA = ma.inverseInertia * p.tangent2ArmA;
        p.tangent2TurnB = mb.inverseInertia * p.tangent2ArmB;
        p.normalMass = effectiveMass(c.normal, c.normalShiftA, c.normalShiftB, p.normalArmA, p.normalArmB,
                                     p.normalTurnA, p.normalTurnB);
        p.tangentMass1 = effectiveMass(c.tangent1, c.tangent1ShiftA, c.tangent1ShiftB, p.tangent1ArmA,
                                       p.tangent1ArmB, p.tangent1TurnA, p.tangent1TurnB);
        p.tangentMass2 = effectiveMass(c.tangent2, c.tangent2ShiftA, c.tangent2ShiftB, p.tangent2ArmA,
                                       p.tangent2ArmB, p.tangent2TurnA, p.tangent2TurnB);
        p.relativeVelocity = relativeSpeed(a, b, c.normal, p.normalArmA, p.normalArmB);
        p.maxNormalImpulse = 0.0f;
    }
}

void integrateVelocities(std::span<SolverBody> bodies, std::span<const SolverBodyMotion> motions,
                         std::uint32_t begin, std::uint32_t end, float h, float maxLinearSpeed)
{
    // Body 0 is the static dummy.
    const float maxSpeedSquared = maxLinearSpeed * maxLinearSpeed;
    // Box2D's rule: no body turns more than a quarter turn per substep.
    const float maxAngularSpeed = 0.25f * kPi / h;
    const float maxAngularSpeedSquared = maxAngularSpeed * maxAngularSpeed;
    for (std::size_t i = std::max<std::uint32_t>(begin, 1); i < end; ++i)
    {
        const SolverBodyMotion& m = motions[i];
        if (!m.integrateVelocity)
        {
            continue;
        }
        SolverBody& s = bodies[i];
        // Implicit damping: v' = v / (1 + h c), stable for any c.
        Vec3 v = (s.linearVelocity + m.linearAcceleration * h) * (1.0f / (1.0f + h * m.linearDamping));
        Vec3 w = (s.angularVelocity + m.angularAcceleration * h) * (1.0f / (1.0f + h * m.angularDamping));
        const float v2 = lengthSquared(v);
        if (v2 > maxSpeedSquared)
        {
            v *= maxLinearSpeed / std::sqrt(v2);
        }
        const float w2 = lengthSquared(w);
        if (w2 > maxAngularSpeedSquared)
        {
            w *= maxAngularSpeed / std::sqrt(w2);
        }
        s.linearVelocity = v;
        s.angularVelocity = w;
    }
}

void integratePositions(std::span<SolverBody> bodies, std::span<SolverBodyMotion> motions,
                        std::uint32_t begin, std::uint32_t end, float h)
{
    for (std::size_t i = std::max<std::uint32_t>(begin, 1); i < end; ++i)
    {
        SolverBody& s = bodies[i];
        SolverBodyMotion& m = motions[i];
        const Vec3 dp = s.linearVelocity * h;
        s.deltaPosition += dp;
        m.center += dp;
        s.deltaRotation += s.angularVelocity * h;
        if (m.gyroscopic)
        {
            m.rotation = freeRotationStep(m, s.angularVelocity, h);
        }
        else
        {
            m.rotation = integrateRotation(m.rotation, s.angularVelocity, h);
        }
    }
}

namespace
{

void warmStartContact(const ContactConstraint& c, std::span<SolverBody> bodies)
{
    SolverBody& a = bodies[c.bodyA];
    SolverBody& b = bodies[c.bodyB];
    for (int i = 0; i < c.pointCount; ++i)
    {
        const ContactConstraintPoint& p = c.points[i];
        const float n = p.normalImpulse;
        const float t1 = p.tangentImpulse1;
        const float t2 = p.tangentImpulse2;
        a.linearVelocity -= c.normalShiftA * n + c.tangent1ShiftA * t1 + c.tangent2ShiftA * t2;
        a.angularVelocity -= p.normalTurnA * n + p.tangent1TurnA * t1 + p.tangent2TurnA * t2;
        b.linearVelocity += c.normalShiftB * n + c.tangent1ShiftB * t1 + c.tangent2ShiftB * t2;
        b.angularVelocity += p.normalTurnB * n + p.tangent1TurnB * t1 + p.tangent2TurnB * t2;
    }
}

} // namespace

void warmStartContacts(std::span<const ContactConstraint> constraints, std::span<const std::uint32_t> indices,
                       std::span<SolverBody> bodies)
{
    for (const std::uint32_t i : indices)
    {
        warmStartContact(constraints[i], bodies);
    }
}

namespace
{

template <bool useBias>
void solveContact(ContactConstraint& c, std::span<SolverBody> bodies, float inverseH, float pushoutVelocity,
                  float linearSlop)
{
    SolverBody& a = bodies[c.bodyA];
    SolverBody& b = bodies[c.bodyB];
    // The part of the current separation shared by all points: the relative displacement.
    const float shift = dot(b.deltaPosition - a.deltaPosition, c.normal);

    for (int i = 0; i < c.pointCount; ++i)
    {
        ContactConstraintPoint& p = c.points[i];
        // Separation now, from the motion so far in this step.
        const float s = shift + dot(b.deltaRotation, p.normalArmB) - dot(a.deltaRotation, p.normalArmA) +
                        p.baseSeparation;
        float bias = 0.0f;
        float massScale = 1.0f;
        float impulseScale = 0.0f;
        if (s > 0.0f)
        {
            bias = s * inverseH; // speculative: do not close more than the gap in this substep
        }
        else if (useBias)
        {
            bias = std::max(c.softness.biasRate * std::min(s + linearSlop, 0.0f), -pushoutVelocity);
            massScale = c.softness.massScale;
            impulseScale = c.softness.impulseScale;
        }
        const float vn = relativeSpeed(a, b, c.normal, p.normalArmA, p.normalArmB);
        if (useBias)
        {
            // The fastest approach seen in the step: a body that hits mid-step has gained speed since
            // the step began, and restitution should return that speed.
            p.relativeVelocity = std::min(p.relativeVelocity, vn);
        }
        const float lambda = -p.normalMass * massScale * (vn + bias) - impulseScale * p.normalImpulse;
        const float total = std::max(p.normalImpulse + lambda, 0.0f);
        const float applied = total - p.normalImpulse;
        p.normalImpulse = total;
        p.maxNormalImpulse = std::max(p.maxNormalImpulse, applied);
        applyAlong(a, b, c.normalShiftA, c.normalShiftB, p.normalTurnA, p.normalTurnB, applied);
    }

    for (int i = 0; i < c.pointCount; ++i)
    {
        ContactConstraintPoint& p = c.points[i];
        const float v1 = relativeSpeed(a, b, c.tangent1, p.tangent1ArmA, p.tangent1ArmB);
        const float v2 = relativeSpeed(a, b, c.tangent2, p.tangent2ArmA, p.tangent2ArmB);
        float t1 = p.tangentImpulse1 - p.tangentMass1 * v1;
        float t2 = p.tangentImpulse2 - p.tangentMass2 * v2;
        const float maxFriction = c.friction * p.normalImpulse;
        const float magnitudeSquared = t1 * t1 + t2 * t2;
        if (magnitudeSquared > maxFriction * maxFriction)
        {
            const float scale = magnitudeSquared > 0.0f ? maxFriction / std::sqrt(magnitudeSquared) : 0.0f;
            t1 *= scale;
            t2 *= scale;
        }
        const float d1 = t1 - p.tangentImpulse1;
        const float d2 = t2 - p.tangentImpulse2;
        p.tangentImpulse1 = t1;
        p.tangentImpulse2 = t2;
        a.linearVelocity -= c.tangent1ShiftA * d1 + c.tangent2ShiftA * d2;
        a.angularVelocity -= p.tangent1TurnA * d1 + p.tangent2TurnA * d2;
        b.linearVelocity += c.tangent1ShiftB * d1 + c.tangent2ShiftB * d2;
        b.angularVelocity += p.tangent1TurnB * d1 + p.tangent2TurnB * d2;
    }
}

template <bool useBias>
void solveContactsImpl(std::span<ContactConstraint> constraints, std::span<const std::uint32_t> indices,
                       std::span<SolverBody> bodies, float inverseH, float pushoutVelocity, float linearSlop)
{
    for (const std::uint32_t i : indices)
    {
        solveContact<useBias>(constraints[i], bodies, inverseH, pushoutVelocity, linearSlop);
    }
}

} // namespace

void solveContacts(std::span<ContactConstraint> constraints, std::span<const std::uint32_t> indices,
                   std::span<SolverBody> bodies, float inverseH, float pushoutVelocity, float linearSlop,
                   bool useBias)
{
    if (useBias)
    {
        solveContactsImpl<true>(constraints, indices, bodies, inverseH, pushoutVelocity, linearSlop);
    }
    else
    {
        solveContactsImpl<false>(constraints, indices, bodies, inverseH, pushoutVelocity, linearSlop);
    }
}

void applyRestitution(std::span<ContactConstraint> constraints, std::span<const std::uint32_t> indices,
                      std::span<SolverBody> bodies, float threshold)
{
    for (const std::uint32_t index : indices)
    {
        ContactConstraint& c = constraints[index];
        if (c.restitution == 0.0f)
        {
            continue;
        }
        SolverBody& a = bodies[c.bodyA];
        SolverBody& b = bodies[c.bodyB];
        for (int i = 0; i < c.pointCount; ++i)
        {
            ContactConstraintPoint& p = c.points[i];
            if (p.relativeVelocity > -threshold || p.maxNormalImpulse == 0.0f)
            {
                continue;
            }
            const float vn = relativeSpeed(a, b, c.normal, p.normalArmA, p.normalArmB);
            const float lambda = -p.normalMass * (vn + c.restitution * p.relativeVelocity);
            const float total = std::max(p.normalImpulse + lambda, 0.0f);
            const float applied = total - p.normalImpulse;
            p.normalImpulse = total;
            p.maxNormalImpulse = std::max(p.maxNormalImpulse, applied);
            applyAlong(a, b, c.normalShiftA, c.normalShiftB, p.normalTurnA, p.normalTurnB, applied);
        }
    }
}

} // namespace polytope::physics

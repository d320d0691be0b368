// Polytope physics: the contact solver, Box2D v3's "soft step" in 3D.
//
// Rationale (after Erin Catto, "Solver2D" (2024) and Box2D v3's solver.c / contact_solver.c; written
// afresh). A step collides once, then runs N substeps of
//     integrate velocities -> warm start -> solve (soft, with position bias) -> integrate positions -> relax
// and ends with restitution and storing the impulses for the next step's warm start.
// - Position errors are fixed with a *soft* constraint (a damped spring of `contactHertz`, damping ratio
//   `contactDampingRatio`, expressed through the mass-normalised coefficients of Softness) instead of
//   Baumgarte's "bias = beta * C / h": the spring's implicit form is stable at any mass ratio, and the
//   relax pass that follows (the same constraints, rigid and without bias) removes the velocity the bias
//   added, so pushing bodies apart adds no energy. Push-out speed is capped (`contactPushoutVelocity`).
// - The current separation of a contact point is estimated from the bodies' accumulated displacement in
//   this step (deltaPosition, and deltaRotation as a small rotation vector), without running the
//   narrowphase again: s = s0 + n . ((dpB + dthetaB x rB) - (dpA + dthetaA x rA)). Anchors (r) stay fixed
//   for the step.
// - Speculative contacts (s > 0) only forbid closing more than the gap within one substep: bias = s / h.
// - Friction: two tangent directions per point, clamped together to the Coulomb disc of radius
//   friction * normal impulse. Restitution is applied once after the substeps, from the fastest normal
//   approach seen in the step (before the step, or before a substep's solve: a body that hits mid-step
//   has gained speed since the step began), for approaches faster than the threshold.
// - Accumulated impulses are per-substep impulses: warm starting applies them at the start of every
//   substep.
//
// Data layout follows qu3e/Box2D: the solver works on contiguous per-step arrays (SolverBody: 48 hot
// bytes; SolverBodyMass; ContactConstraint with up to four points) in plain loops, no virtual calls and no
// allocation. Index 0 of the body arrays is a dummy with zero mass and velocity that stands for every
// static body.
//
// World::solve runs every pass wide: it writes a compact ContactConstraintSetup per touching contact, the
// constraint graph (constraint_graph.h) colours them so that one colour's share no moving body, and
// contact_solver_wide.cpp prepares each colour straight into SIMD bundles of 4 (SSE2) or 8 (AVX2) lanes and
// solves them with the same per-constraint maths as the scalar functions here (bit for bit); the
// constraints that fit no colour go through the scalar functions, in constraint order. The Gauss-Seidel
// order is therefore colour by colour, not constraint order.
#pragma once

#include "polytope/physics/manifold.h"
#include "polytope/physics/math.h"

#include <cstdint>
#include <span>

namespace polytope::physics
{

/// Coefficients of a soft constraint for one substep of h seconds (Catto, "Soft Constraints", GDC 2011;
/// Box2D v3's b2Softness).
struct Softness
{
    float biasRate = 0.0f;     ///< 1/s: velocity bias per metre of error
    float massScale = 1.0f;    ///< scales the rigid impulse
    float impulseScale = 0.0f; ///< fraction of the accumulated impulse removed (the spring's softness)
};

/// Softness of a spring of `hertz` (> 0) and `dampingRatio` (>= 0) over substeps of `h` seconds. hertz
/// == 0 gives a rigid constraint without bias.
Softness makeSoftness(float hertz, float dampingRatio, float h);

/// Hot per-step state of a body being solved: 48 bytes.
struct SolverBody
{
    Vec3 linearVelocity{};  ///< m/s, centre of mass
    Vec3 angularVelocity{}; ///< rad/s, world
    Vec3 deltaPosition{};   ///< metres moved by the centre of mass since the step began
    Vec3 deltaRotation{};   ///< radians: rotation vector accumulated since the step began (sum of w h)
};
static_assert(sizeof(SolverBody) == 48, "SolverBody is the solver's hot record: keep it at 48 bytes");

/// Inverse mass of a body being solved, with locked degrees of freedom removed.
struct SolverBodyMass
{
    Vec3 inverseMass{};                 ///< 1/kg per world axis (0 on locked axes and for non-dynamic)
    Mat3 inverseInertia = Mat3::zero(); ///< world frame, restricted to the free rotation axes; exactly
                                        ///< symmetric (mirroredUpper)
};

/// Everything the integrators need about a body being solved. Two cache lines each, aligned, so that the
/// pose (centre and rotation, which the joints gather every substep) lies in one line: joint_grid's solve
/// phase took 9% longer with the 124-byte records packed across lines.
struct alignas(64) SolverBodyMotion
{
    Vec3 center{};                      ///< centre of mass, world; advanced by integratePositions
    Quat rotation{};                    ///< advanced by integratePositions
    Vec3 linearAcceleration{};          ///< m/s^2: gravity and force, locked axes removed
    Vec3 angularAcceleration{};         ///< rad/s^2: torque, locked axes removed
    Vec3 linearMask{1.0f, 1.0f, 1.0f};  ///< 1 on free translation axes, 0 on locked ones
    Vec3 angularMask{1.0f, 1.0f, 1.0f}; ///< 1 on free rotation axes, 0 on locked ones
    float linearDamping = 0.0f;         ///< 1/s
    float angularDamping = 0.0f;        ///< 1/s
    Mat3 inertiaLocal = Mat3::zero();   ///< body axes; used for the gyroscopic update
    bool integrateVelocity = true;      ///< false for kinematic bodies: their velocity is prescribed
    bool gyroscopic = false; ///< rotation turns w in body axes (freeRotationStep): non-isotropic inertia,
                             ///< all rotation axes free
};
static_assert(sizeof(SolverBodyMotion) == 128, "SolverBodyMotion: two cache lines");

/// One point of a contact constraint. The angular parts of the Jacobians ("arms", r x direction) and
/// their images under the inverse inertia ("turns") are computed once per step, so that a solver
/// iteration is a handful of dot products and multiply-adds.
struct ContactConstraintPoint
{
    Vec3 normalArmA{};   ///< anchorA x normal (the anchors are ContactPointSetup's)
    Vec3 normalArmB{};   ///< anchorB x normal
    Vec3 normalTurnA{};  ///< A's inverse inertia times normalArmA
    Vec3 normalTurnB{};  ///< B's inverse inertia times normalArmB
    Vec3 tangent1ArmA{}; ///< anchorA x tangent1
    Vec3 tangent1ArmB{};
    Vec3 tangent1TurnA{};
    Vec3 tangent1TurnB{};
    Vec3 tangent2ArmA{}; ///< anchorA x tangent2
    Vec3 tangent2ArmB{};
    Vec3 tangent2TurnA{};
    Vec3 tangent2TurnB{};
    float baseSeparation = 0.0f;   ///< metres: separation at the step's start (negative: penetration)
    float relativeVelocity = 0.0f; ///< m/s: fastest normal approach seen in the step (for restitution)
    float normalImpulse = 0.0f;    ///< N s, accumulated within a substep, >= 0
    float tangentImpulse1 = 0.0f;  ///< N s
    float tangentImpulse2 = 0.0f;  ///< N s
    float maxNormalImpulse = 0.0f; ///< N s: largest normal impulse of the step (restitution needs > 0)
    float normalMass = 0.0f;       ///< kg: effective mass along the normal
    float tangentMass1 = 0.0f;
    float tangentMass2 = 0.0f;
};

/// The constraint of one contact manifold: up to four points sharing a normal and friction basis.
struct ContactConstraint
{
    std::uint32_t bodyA = 0; ///< solver body index (0: static)
    std::uint32_t bodyB = 0;
    Vec3 normal{};       ///< unit, world, from A to B
    Vec3 tangent1{};     ///< unit, world, perpendicular to the normal
    Vec3 tangent2{};     ///< unit, world: cross(normal, tangent1)
    Vec3 normalShiftA{}; ///< A's per-axis inverse mass times the normal: velocity change per unit impulse
    Vec3 normalShiftB{};
    Vec3 tangent1ShiftA{};
    Vec3 tangent1ShiftB{};
    Vec3 tangent2ShiftA{};
    Vec3 tangent2ShiftB{};
    float friction = 0.0f;
    float restitution = 0.0f;
    Softness softness{};
    int pointCount = 0;
    ContactConstraintPoint points[kMaxManifoldPoints];
};

/// One point of a contact constraint as the World sets it up from a manifold point.
struct ContactPointSetup
{
    Vec3 anchorA{};               ///< metres, world: contact point minus A's centre of mass
    Vec3 anchorB{};               ///< metres, world: contact point minus B's centre of mass
    float baseSeparation = 0.0f;  ///< metres: separation at the step's start (negative: penetration)
    float normalImpulse = 0.0f;   ///< N s: last step's, for the warm start
    float tangentImpulse1 = 0.0f; ///< N s
    float tangentImpulse2 = 0.0f; ///< N s
};

/// What a contact constraint is made from: its bodies, frame, material and points. About a quarter of a
/// prepared ContactConstraint, so the World writes these and the wide solver prepares its bundles straight
/// from them (constraint_graph.h), without a full constraint in between.
struct ContactConstraintSetup
{
    std::uint32_t bodyA = 0; ///< solver body index (0: static)
    std::uint32_t bodyB = 0;
    Vec3 normal{};   ///< unit, world, from A to B
    Vec3 tangent1{}; ///< unit, world, perpendicular to the normal
    Vec3 tangent2{}; ///< unit, world: cross(normal, tangent1)
    float friction = 0.0f;
    float restitution = 0.0f;
    Softness softness{};
    int pointCount = 0;
    ContactPointSetup points[kMaxManifoldPoints];
};

/// The impulses a solved constraint ends its step with, per point: the next step's warm start.
struct ContactImpulses
{
    float normal[kMaxManifoldPoints] = {};           ///< N s
    float tangent1[kMaxManifoldPoints] = {};         ///< N s
    float tangent2[kMaxManifoldPoints] = {};         ///< N s
    float approachSpeed[kMaxManifoldPoints] = {};    ///< m/s: fastest normal approach of the step (events)
    float maxNormalImpulse[kMaxManifoldPoints] = {}; ///< N s: largest normal impulse of a substep (events)
};

/// Builds `c` from `setup`: the Jacobians, effective masses and pre-step relative velocities.
void prepareContactConstraint(const ContactConstraintSetup& setup, ContactConstraint& c,
                              std::span<const SolverBody> bodies, std::span<const SolverBodyMass> masses);

/// Newton iterations of freeRotationStep: from w0 the error falls quadratically, below float precision by
/// the third for spins up to the quarter-turn-per-substep cap. Slower turns take fewer (one below 1e-3 rad
/// a substep, two below 3e-2 rad), which reach the same precision.
inline constexpr int kGyroscopicNewtonIterations = 3;

/// One substep of torque-free rotation for a body with non-isotropic inertia: returns its new orientation
/// and updates `angularVelocity` (world). The implicit midpoint rule in body axes keeps the kinetic energy
/// and |L|; a final tiny turn keeps the world angular momentum (see contact_solver.cpp).
Quat freeRotationStep(const SolverBodyMotion& m, Vec3& angularVelocity, float h);

/// Substep velocity integration of bodies [begin, end) (index 0, the static dummy, is skipped): gravity and
/// forces, damping, speed caps. `h` in seconds.
void integrateVelocities(std::span<SolverBody> bodies, std::span<const SolverBodyMotion> motions,
                         std::uint32_t begin, std::uint32_t end, float h, float maxLinearSpeed);

/// Substep position integration: centres, rotations (freeRotationStep for gyroscopic bodies), and the
/// deltas the solver's separation estimate reads.
void integratePositions(std::span<SolverBody> bodies, std::span<SolverBodyMotion> motions,
                        std::uint32_t begin, std::uint32_t end, float h);
/// integratePositions, W bodies at a time in SIMD lanes (contact_solver_wide.cpp): the same bits.
void integratePositionsWide(std::span<SolverBody> bodies, std::span<SolverBodyMotion> motions,
                            std::uint32_t begin, std::uint32_t end, float h);

/// Applies the accumulated impulses of constraints[indices[0]], constraints[indices[1]], ... in that order.
void warmStartContacts(std::span<const ContactConstraint> constraints, std::span<const std::uint32_t> indices,
                       std::span<SolverBody> bodies);

/// One Gauss-Seidel pass over constraints[indices[0]], constraints[indices[1]], ... in that order: normal
/// (soft with bias when `useBias`, rigid without) then friction. `inverseH`: 1 / substep seconds. (The
/// World solves through the wide solver, constraint_graph.h; this serves its overflow set.)
void solveContacts(std::span<ContactConstraint> constraints, std::span<const std::uint32_t> indices,
                   std::span<SolverBody> bodies, float inverseH, float pushoutVelocity, float linearSlop,
                   bool useBias);

/// Restitution after the substeps, over constraints[indices[0]], constraints[indices[1]], ... in that
/// order: points that approached faster than `threshold` (m/s) and carried load get a normal velocity of
/// -restitution times their approach velocity.
void applyRestitution(std::span<ContactConstraint> constraints, std::span<const std::uint32_t> indices,
                      std::span<SolverBody> bodies, float threshold);

} // namespace polytope::physics

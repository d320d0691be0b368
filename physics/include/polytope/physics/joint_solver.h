// Polytope physics: the joint solver, the joints' share of the soft step (contact_solver.h).
//
// Rationale (after Box2D v3's joint.c / revolute_joint.c and Jolt's constraint parts; written afresh, in
// 3D). Each joint is a set of rows on the relative motion of its two frames, solved in the same passes as
// the contacts and after them: warm start, solve (useBias), relax (no bias), with impulses accumulated over
// the substep and carried to the next substep and step (warm starting). After, not before as in Box2D and
// Jolt: Gauss-Seidel favours what it solves last, and a ragdoll's limbs pressed into the ground by their
// contacts then passed their limits by up to 4 degrees (measured in the ragdolls scene); solved last they
// stay within 1.7, with no more penetration.
// - Position error is read every pass from the bodies' current poses (SolverBodyMotion's centre and
//   rotation, which integratePositions advances each substep), not estimated: the anchors and axes turn
//   with their bodies within the step. The effective masses of the blocks (point, angular lock) are worked
//   out again at each substep's start (warm start), from the anchors and inertias of that moment, as Box2D
//   v3 does for its joints; kept from the step's start they made fast-swinging structures unstable.
// - Locked rows are "rigid": in the solve pass their error is corrected as a soft spring (jointSoftness,
//   the world's jointHertz and jointDampingRatio), and the relax pass solves them rigid without bias, so
//   that the correction leaves no velocity behind (Box2D v3's soft step). A joint with its own hertz is a
//   real spring on those rows, in both passes.
// - Limits are inequality rows with a speculative part: a limit not yet reached only forbids closing more
//   than the remaining gap within one substep (bias = gap / h), so bodies stop at the limit, not past it;
//   past it they are pulled back at the joint softness' rate without its impulse leak, so that a steady
//   load leaves no sag. They are solved after the joint's locked rows, as Jolt does. Joints with limits get
//   WorldConfig::limitIterations solve passes a substep (the others one), since a limit struck hard is
//   passed along a chain of joints that one Gauss-Seidel pass does not settle.
// - Motors are velocity rows whose accumulated impulse stays within maxForce * h; a Position motor adds a
//   spring bias toward its target. Springs on the free degree of freedom are soft rows in both passes.
// - Rows that share a block (the point's three, a weld's three angular ones, a hinge's two) are solved
//   together with their 3x3 or 2x2 effective mass, so a chain converges like Box2D's, not row by row.
// Impulses are kept as world vectors for the blocks (the point's linear impulse, the angular lock's or
// hinge's angular impulse, a slider's perpendicular impulse) and as scalars along the axis for the rest.
#pragma once

#include "polytope/physics/contact_solver.h"
#include "polytope/physics/joints.h"

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace polytope::physics
{

/// The impulses of a joint's rows: per substep while solving, per step between steps (World's Joint).
struct JointImpulses
{
    Vec3 linear{};       ///< N s, world: the point block (Ball, Hinge, Fixed, ConeTwist) or a slider's
                         ///< perpendicular rows, applied to B at its anchor (A gets the opposite)
    Vec3 angular{};      ///< N m s, world: the angular lock (Fixed, Slider) or a hinge's two rows, on B
    float axial = 0.0f;  ///< N s: a distance joint's rigid length row
    float spring = 0.0f; ///< N s or N m s: the spring on the free degree of freedom
    float motor = 0.0f;  ///< the motor
    float lower = 0.0f;  ///< the lower limit (>= 0)
    float upper = 0.0f;  ///< the upper limit (>= 0)
    float swing = 0.0f;  ///< ConeTwist: the swing cone (>= 0)
};

/// Bits of JointConstraint::flags.
inline constexpr std::uint8_t kJointSoft = 1u << 0;        ///< JointDesc::hertz > 0
inline constexpr std::uint8_t kJointLimit = 1u << 1;       ///< limit enabled
inline constexpr std::uint8_t kJointSpring = 1u << 2;      ///< spring enabled with hertz > 0
inline constexpr std::uint8_t kJointRigidLength = 1u << 3; ///< Distance: spring not enabled
inline constexpr std::uint8_t kJointCone = 1u << 4;        ///< ConeTwist: coneAngle < pi

/// A joint prepared for one step's substeps at one substep level. The fields every pass reads come first.
struct JointConstraint
{
    std::uint32_t bodyA = 0; ///< solver body index (0: the static dummy)
    std::uint32_t bodyB = 0;
    JointType type = JointType::Ball;
    std::uint8_t flags = 0; ///< kJoint* bits
    MotorMode motorMode = MotorMode::Off;
    Vec3 localAnchorA{}; ///< anchor minus the centre of mass, in body A's axes (static dummy: world point)
    Vec3 localAnchorB{};
    const SolverBodyMass* massA = nullptr; ///< the bodies' solver masses (the dummy's are zero), for the step
    const SolverBodyMass* massB = nullptr;
    Mat3 pointMass = Mat3::zero(); ///< effective mass of the point block at the substep's start
    Softness lockSoftness{};       ///< the locked rows' (see kJointSoft)
    JointImpulses impulses{};      ///< accumulated over the substep
    Quat frameA{};                 ///< the joint frame's axes in body A's axes (static dummy: world axes)
    Quat frameB{};
    Mat3 angularMass = Mat3::zero(); ///< inverse of A's plus B's inverse inertia
    Softness limitSoftness{};        ///< the world's joint softness, for limits past their bound
    Softness springSoftness{};       ///< the spring's
    Softness motorSoftness{};        ///< a Position motor's
    float lower = 0.0f;              ///< limit (or Distance: min length)
    float upper = 0.0f;
    float coneAngle = 0.0f;
    float length = 0.0f;          ///< Distance: rest length
    float springTarget = 0.0f;    ///< Hinge, Slider
    float motorTarget = 0.0f;     ///< Position
    float motorVelocity = 0.0f;   ///< Velocity
    float maxMotorImpulse = 0.0f; ///< per substep: maxForce * h
};

/// A symmetric 3x3 matrix by its 6 upper entries.
struct SymmetricBlock
{
    float xx = 0.0f, xy = 0.0f, xz = 0.0f, yy = 0.0f, yz = 0.0f, zz = 0.0f;
};

/// [r]x^T I [r]x (that is -[r]x I [r]x) for an exactly symmetric I (mirroredUpper): the angular part of a
/// point block's K, from the two nonzero entries of each column of [r]x.
constexpr SymmetricBlock armInertia(const Vec3& r, const Mat3& inertia)
{
    const Vec3 u0 = inertia.c1 * r.z - inertia.c2 * r.y; // I (r x e0)
    const Vec3 u1 = inertia.c2 * r.x - inertia.c0 * r.z; // I (r x e1)
    const Vec3 u2 = inertia.c0 * r.y - inertia.c1 * r.x; // I (r x e2)
    return {r.z * u0.y - r.y * u0.z, r.z * u1.y - r.y * u1.z, r.z * u2.y - r.y * u2.z,
            r.x * u1.z - r.z * u1.x, r.x * u2.z - r.z * u2.x, r.y * u2.x - r.x * u2.y};
}

/// The inverse of a symmetric matrix by cofactors, mirrored into a Mat3; zero when the determinant is zero
/// or not finite (as math.h's inverse).
inline Mat3 inverseSymmetric(const SymmetricBlock& k)
{
    const float cxx = k.yy * k.zz - k.yz * k.yz;
    const float cxy = k.xz * k.yz - k.xy * k.zz;
    const float cxz = k.xy * k.yz - k.xz * k.yy;
    const float cyy = k.xx * k.zz - k.xz * k.xz;
    const float cyz = k.xy * k.xz - k.xx * k.yz;
    const float czz = k.xx * k.yy - k.xy * k.xy;
    const float det = k.xx * cxx + k.xy * cxy + k.xz * cxz;
    if (det == 0.0f || !std::isfinite(det))
    {
        return Mat3::zero();
    }
    const float inv = 1.0f / det;
    const Vec3 x{cxx * inv, cxy * inv, cxz * inv};
    const Vec3 y{x.y, cyy * inv, cyz * inv};
    return {x, y, Vec3{x.z, y.z, czz * inv}};
}

/// The inverse effective mass of a joint's point block at anchors rA, rB (world, from the centres of mass).
Mat3 jointPointMass(const JointConstraint& c, const Vec3& rA, const Vec3& rB);

/// Refreshes the joint's block effective masses at the bodies' current poses (the start of a substep), then
/// applies its accumulated impulses (warm start) to their velocities.
void warmStartJoint(JointConstraint& c, std::span<SolverBody> bodies,
                    std::span<const SolverBodyMotion> motions);

/// One pass over the joint's rows: spring, motor, limits, then the locked rows (soft with bias when
/// `useBias`, rigid without). `inverseH`: 1 / substep seconds.
void solveJoint(JointConstraint& c, std::span<SolverBody> bodies, std::span<const SolverBodyMotion> motions,
                float inverseH, bool useBias);

/// Ball joints packed W to a bundle, one per SIMD lane, for the wide joint solver (joint_solver_wide.cpp):
/// a colour's plain ball joints (no limit) share no moving body, so W of them are solved at once with the
/// very operations warmStartJoint and solveJoint do for one, giving the same bits. Storage is reserved with
/// the joints' (World::reserveJointBuffers): a step does not allocate.
struct BallJointBundles
{
    std::vector<float> values;         ///< structure-of-arrays floats of every bundle (aligned within)
    std::vector<std::uint32_t> bodies; ///< per bundle: W A indices then W B indices (0: none)
    std::vector<std::uint32_t> lanes;  ///< per bundle: W JointConstraint indices (kEmptyBallLane)
    std::uint32_t count = 0;
};

/// A lane of a BallJointBundles bundle that holds no joint.
inline constexpr std::uint32_t kEmptyBallLane = 0xffffffffu;

/// W: the lanes of a ball joint bundle (8 with AVX2, else 4).
int jointSolverLanes();

/// Reserves storage for `bundles` bundles.
void reserveBallBundles(BallJointBundles& b, std::size_t bundles);

/// Sets the bundle count to `count` (within the reservation), with every lane empty.
void resetBallBundles(BallJointBundles& b, std::uint32_t count);

/// Fills bundle `bundle` from the constraints its lanes name (set in b.lanes by the caller): anchors,
/// masses, impulse, and the locked rows' softness in the solve and relax passes, and the arms at the poses
/// in `motions`. Empty lanes get zeros.
void packBallBundle(BallJointBundles& b, std::uint32_t bundle, std::span<const JointConstraint> constraints,
                    std::span<const SolverBodyMotion> motions);

// The passes of a substep, as the soft step runs them: warm start, solve, (positions move), relax. A bundle
// keeps the arms (anchors from the centres, world) its pack or last relax pass found, so the poses must move
// only between a solve pass and the relax pass after it, as they do.

/// warmStartJoint for the bundle's lanes.
void warmStartBallBundle(BallJointBundles& b, std::uint32_t bundle, std::span<SolverBody> bodies);

/// solveJoint for the bundle's lanes: the solve pass (`useBias`) at the arms kept, the relax pass at the
/// poses in `motions` (and kept).
void solveBallBundle(BallJointBundles& b, std::uint32_t bundle, std::span<SolverBody> bodies,
                     std::span<const SolverBodyMotion> motions, bool useBias);

/// Writes the bundle's accumulated impulses back to its lanes' constraints.
void unpackBallBundle(const BallJointBundles& b, std::uint32_t bundle,
                      std::span<JointConstraint> constraints);

/// The joint's free coordinate and swing at the frames' world poses: Hinge angle, Slider position, Distance
/// length, ConeTwist twist (position); ConeTwist swing.
void jointCoordinates(JointType type, const Transform& worldFrameA, const Transform& worldFrameB,
                      float& position, float& swing);

} // namespace polytope::physics

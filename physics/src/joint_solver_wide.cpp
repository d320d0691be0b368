// The wide joint solver: plain ball joints (the point block, no limit), W at a time (joint_solver.h's
// BallJointBundles).
//
// Rationale. A grid or chain of ball joints spends its step in warmStartJoint and solveJoint: per joint a
// few quaternion rotations, a 3x3 effective mass and its inverse, and a dozen dependent products, on two
// bodies. The joints of one colour (World::prepareJoints) share no moving body, so W of them are
// independent and run in the W lanes of one SIMD register, as the contacts do (contact_solver_wide.cpp).
// - A bundle is structure-of-arrays (simd_wide.h): the anchors, both bodies' inverse masses and world
//   inverse inertias for the step, the point block's effective mass (worked out at each warm start), the
//   accumulated impulse, and the locked rows' softness in the solve and the relax pass (the joint's own
//   spring in both, or the world's correction then rigid, as joint_solver.cpp's lockScales chooses): 48
//   fields. The inertias and the effective mass are symmetric (the World mirrors world inertias:
//   mirroredUpper), so a bundle keeps their 6 upper entries: a grid's bundles outgrow the 2 MiB L2 cache
//   of the development machine, and the passes stream them from L3 32 times a step.
// - Bodies' velocities are gathered and scattered as the contacts' are; their centres and rotations (the
//   substep's poses, SolverBodyMotion's first 7 floats) are gathered the same way, once a substep: the
//   poses move only between the solve and the relax pass, so the arms the relax pass finds serve the next
//   substep's warm start and solve pass as well (the pack finds the first substep's). (Gathering the masses
//   per pass too, instead of keeping them in the bundle, made joint_grid's solve 20% slower: the shuffles
//   cost more than the loads they save.)
// - Each lane performs joint_solver.cpp's operations for a Ball joint in the same order (the arm terms of
//   K, the symmetric inverse and its determinant test), so a lane's result is the scalar solver's bits and
//   the bundles change no simulation.
// - Empty lanes name the static dummy (index 0) on both sides and hold zeros: zero masses give a zero
//   effective mass, so they apply exactly 0 and are not written back.
#include "polytope/physics/joint_solver.h"

#include "simd_wide.h"

#include <cstddef>
#include <cstdint>

namespace polytope::physics
{
namespace
{

using simd::FloatW;
using namespace wide;

// Bundle fields (each W floats).
constexpr int kAnchorA = 0;
constexpr int kAnchorB = 3;
constexpr int kInverseMassA = 6;
constexpr int kInverseMassB = 9;
constexpr int kInertiaA = 12; ///< world inverse inertia of A (symmetric): 6 fields
constexpr int kInertiaB = 18;
constexpr int kPointMass = 24; ///< the point block's effective mass (symmetric): 6 fields
constexpr int kImpulse = 30;
constexpr int kSolveScales = 33; ///< biasRate, massScale, impulseScale of the solve pass
constexpr int kRelaxScales = 36; ///< those of the relax pass
constexpr int kArmA = 39;        ///< the warm start's pose (WideJointPose) for the solve pass: 9 fields
constexpr int kArmB = 42;
constexpr int kSeparation = 45;
constexpr int kBallFields = 48;
constexpr std::size_t kBallBundleFloats = static_cast<std::size_t>(kBallFields) * W;

/// A bundle's joints at the substep's poses: arms (anchor minus centre, world) and B's anchor minus A's.
struct WideJointPose
{
    WideVec3 rA, rB, d;
};

inline WideJointPose poseOf(const float* q, const std::uint32_t* bodyIndex, const SolverBodyMotion* motions)
{
    WidePose a;
    WidePose b;
    gatherPoses(motions, bodyIndex, a);
    gatherPoses(motions, bodyIndex + W, b);
    WideJointPose p;
    p.rA = rotate(a.rotation, fieldVec3(q, kAnchorA));
    p.rB = rotate(b.rotation, fieldVec3(q, kAnchorB));
    p.d = (b.center + p.rB) - (a.center + p.rA);
    return p;
}

/// joint_solver.cpp's applyPointImpulse.
inline void applyPointImpulse(const float* q, WideBody& a, WideBody& b, const WideJointPose& p,
                              const WideVec3& impulse)
{
    a.v = a.v - mulPerElem(fieldVec3(q, kInverseMassA), impulse);
    a.w = a.w - fieldSymmetric(q, kInertiaA) * cross(p.rA, impulse);
    b.v = b.v + mulPerElem(fieldVec3(q, kInverseMassB), impulse);
    b.w = b.w + fieldSymmetric(q, kInertiaB) * cross(p.rB, impulse);
}

float* bundleAt(BallJointBundles& b, std::uint32_t bundle)
{
    return alignedBase(b.values) + bundle * kBallBundleFloats;
}
const float* bundleAt(const BallJointBundles& b, std::uint32_t bundle)
{
    return alignedBase(b.values) + bundle * kBallBundleFloats;
}

} // namespace

int jointSolverLanes()
{
    return W;
}

void reserveBallBundles(BallJointBundles& b, std::size_t bundles)
{
    b.values.reserve(bundles * kBallBundleFloats + kAlignFloats);
    b.bodies.reserve(bundles * 2 * W);
    b.lanes.reserve(bundles * W);
}

void resetBallBundles(BallJointBundles& b, std::uint32_t count)
{
    b.count = count;
    b.values.resize(count * kBallBundleFloats + kAlignFloats);
    b.bodies.assign(static_cast<std::size_t>(count) * 2 * W, 0u);
    b.lanes.assign(static_cast<std::size_t>(count) * W, kEmptyBallLane);
}

void packBallBundle(BallJointBundles& b, std::uint32_t bundle, std::span<const JointConstraint> constraints,
                    std::span<const SolverBodyMotion> motions)
{
    float* q = bundleAt(b, bundle);
    std::uint32_t* bodyIndex = b.bodies.data() + static_cast<std::size_t>(bundle) * 2 * W;
    const std::uint32_t* lanes = b.lanes.data() + static_cast<std::size_t>(bundle) * W;
    for (int f = 0; f < kBallFields; ++f)
    {
        for (int lane = 0; lane < W; ++lane)
        {
            q[f * W + lane] = 0.0f;
        }
    }
    const auto set = [&](int f, int lane, const Vec3& v)
    {
        q[f * W + lane] = v.x;
        q[(f + 1) * W + lane] = v.y;
        q[(f + 2) * W + lane] = v.z;
    };
    for (int lane = 0; lane < W; ++lane)
    {
        bodyIndex[lane] = 0;
        bodyIndex[W + lane] = 0;
        if (lanes[lane] == kEmptyBallLane)
        {
            continue;
        }
        const JointConstraint& c = constraints[lanes[lane]];
        bodyIndex[lane] = c.bodyA;
        bodyIndex[W + lane] = c.bodyB;
        set(kAnchorA, lane, c.localAnchorA);
        set(kAnchorB, lane, c.localAnchorB);
        set(kInverseMassA, lane, c.massA->inverseMass);
        set(kInverseMassB, lane, c.massB->inverseMass);
        // The upper entries (the inertias are mirrored: mirroredUpper).
        const Mat3& iA = c.massA->inverseInertia;
        const Mat3& iB = c.massB->inverseInertia;
        set(kInertiaA, lane, Vec3{iA.c0.x, iA.c1.x, iA.c2.x});
        set(kInertiaA + 3, lane, Vec3{iA.c1.y, iA.c2.y, iA.c2.z});
        set(kInertiaB, lane, Vec3{iB.c0.x, iB.c1.x, iB.c2.x});
        set(kInertiaB + 3, lane, Vec3{iB.c1.y, iB.c2.y, iB.c2.z});
        set(kImpulse, lane, c.impulses.linear);
        // joint_solver.cpp's lockScales: the solve pass always uses the lock softness, the relax pass only
        // for a joint with its own spring (else rigid: no bias, full mass, no leak).
        const Softness& s = c.lockSoftness;
        set(kSolveScales, lane, Vec3{s.biasRate, s.massScale, s.impulseScale});
        set(kRelaxScales, lane,
            (c.flags & kJointSoft) != 0 ? Vec3{s.biasRate, s.massScale, s.impulseScale}
                                        : Vec3{0.0f, 1.0f, 0.0f});
    }
    // The arms at the poses the first warm start will see.
    const WideJointPose p = poseOf(q, bodyIndex, motions.data());
    setFieldVec3(q, kArmA, p.rA);
    setFieldVec3(q, kArmB, p.rB);
    setFieldVec3(q, kSeparation, p.d);
}

void warmStartBallBundle(BallJointBundles& b, std::uint32_t bundle, std::span<SolverBody> bodies)
{
    float* q = bundleAt(b, bundle);
    const std::uint32_t* bodyIndex = b.bodies.data() + static_cast<std::size_t>(bundle) * 2 * W;
    // The arms at these poses: found by the pack (the first substep) or the last relax pass (the poses move
    // only between a solve and a relax pass).
    const WideJointPose p{fieldVec3(q, kArmA), fieldVec3(q, kArmB), fieldVec3(q, kSeparation)};
    // jointPointMass: the inverse of M_A^-1 + M_B^-1 + [rA]x^T I_A^-1 [rA]x + [rB]x^T I_B^-1 [rB]x.
    const WideSymmetric a0 = armInertia(p.rA, fieldSymmetric(q, kInertiaA));
    const WideSymmetric b0 = armInertia(p.rB, fieldSymmetric(q, kInertiaB));
    const WideVec3 m = fieldVec3(q, kInverseMassA) + fieldVec3(q, kInverseMassB);
    const WideSymmetric k{m.x + a0.xx + b0.xx, a0.xy + b0.xy, a0.xz + b0.xz,
                          m.y + a0.yy + b0.yy, a0.yz + b0.yz, m.z + a0.zz + b0.zz};
    setFieldSymmetric(q, kPointMass, inverseSymmetric(k));
    WideBody a;
    WideBody bb;
    gatherVelocities(bodies.data(), bodyIndex, a);
    gatherVelocities(bodies.data(), bodyIndex + W, bb);
    applyPointImpulse(q, a, bb, p, fieldVec3(q, kImpulse));
    scatterVelocities(bodies.data(), bodyIndex, a);
    scatterVelocities(bodies.data(), bodyIndex + W, bb);
}

void solveBallBundle(BallJointBundles& b, std::uint32_t bundle, std::span<SolverBody> bodies,
                     std::span<const SolverBodyMotion> motions, bool useBias)
{
    float* q = bundleAt(b, bundle);
    const std::uint32_t* bodyIndex = b.bodies.data() + static_cast<std::size_t>(bundle) * 2 * W;
    // The solve pass comes at the poses of the warm start before it; the relax pass after the positions
    // moved, so it finds the arms again and keeps them for the next substep's warm start.
    WideJointPose p;
    if (useBias)
    {
        p = {fieldVec3(q, kArmA), fieldVec3(q, kArmB), fieldVec3(q, kSeparation)};
    }
    else
    {
        p = poseOf(q, bodyIndex, motions.data());
        setFieldVec3(q, kArmA, p.rA);
        setFieldVec3(q, kArmB, p.rB);
        setFieldVec3(q, kSeparation, p.d);
    }
    WideBody a;
    WideBody bb;
    gatherVelocities(bodies.data(), bodyIndex, a);
    gatherVelocities(bodies.data(), bodyIndex + W, bb);
    // joint_solver.cpp's solvePoint.
    const int scales = useBias ? kSolveScales : kRelaxScales;
    const FloatW biasRate = field(q, scales);
    const FloatW massScale = field(q, scales + 1);
    const FloatW impulseScale = field(q, scales + 2);
    const WideVec3 cdot = (bb.v + cross(bb.w, p.rB)) - (a.v + cross(a.w, p.rA));
    const WideVec3 accumulated = fieldVec3(q, kImpulse);
    const WideVec3 impulse =
        (fieldSymmetric(q, kPointMass) * (cdot + p.d * biasRate)) * -massScale - accumulated * impulseScale;
    setFieldVec3(q, kImpulse, accumulated + impulse);
    applyPointImpulse(q, a, bb, p, impulse);
    scatterVelocities(bodies.data(), bodyIndex, a);
    scatterVelocities(bodies.data(), bodyIndex + W, bb);
}

void unpackBallBundle(const BallJointBundles& b, std::uint32_t bundle, std::span<JointConstraint> constraints)
{
    const float* q = bundleAt(b, bundle);
    const std::uint32_t* lanes = b.lanes.data() + static_cast<std::size_t>(bundle) * W;
    for (int lane = 0; lane < W; ++lane)
    {
        if (lanes[lane] != kEmptyBallLane)
        {
            constraints[lanes[lane]].impulses.linear = {q[kImpulse * W + lane], q[(kImpulse + 1) * W + lane],
                                                        q[(kImpulse + 2) * W + lane]};
        }
    }
}

} // namespace polytope::physics

// The wide contact solver: solveContacts and warmStartContacts over W constraints at once.
//
// Rationale (after Box2D v3's contact_solver.c, "b2SolveContactTwoPoints" and its wide float type;
// written afresh). The scalar solver spends its time loading a constraint, two bodies, and doing a few
// dozen dependent multiply-adds; SIMD does W independent constraints in the time of one. The constraint
// graph (constraint_graph.h) colours the constraints so that those of one colour share no moving body;
// each colour is cut into bundles of W lanes, one constraint per lane.
// - A bundle is structure-of-arrays: field f of lane l at values[(bundle * kBundleFields + f) * W + l].
//   Constraint fields first (normal, tangents, the inverse-mass "shifts", friction, softness), then
//   kMaxManifoldPoints blocks of point fields (arms, turns, masses, separation, impulses).
// - Empty lanes and the points a lane lacks are zero: zero effective mass and zero Jacobian, so they
//   compute an impulse of exactly 0 and change nothing. Their bodies are the static dummy (index 0),
//   which stays at zero velocity because every change applied to it is 0 * lambda.
// - Bodies are gathered into wide registers (SolverBody is 12 floats: three 4-float rows, transposed 4
//   lanes at a time) and only the velocities scattered back.
// - Each lane performs the very operations of contact_solver.cpp's scalar code in the same order (no
//   FMA: the project builds with -ffp-contract=off; min/max written in the order that matches std::min
//   and std::max), so a lane's result equals the scalar solver's for that constraint, whatever W is.
// - Bundles are prepared straight from the World's compact ContactConstraintSetup records, W lanes at once
//   (prepareBundle) with the scalar prepareContactConstraint's operations, so the Jacobians are the scalar
//   solver's bits; only the fields a bundle reads are zeroed.
// - Restitution runs once a step, wide as well (restituteBundle), and the impulses are read back per lane
//   (readContactImpulses) for the next step's warm start.
#include "polytope/physics/constraint_graph.h"

#include "simd_wide.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace polytope::physics
{
namespace
{

using simd::FloatW;
using namespace wide;

// Constraint fields (each W floats).
constexpr int kNormal = 0;
constexpr int kTangent1 = 3;
constexpr int kTangent2 = 6;
constexpr int kNormalShiftA = 9;
constexpr int kNormalShiftB = 12;
constexpr int kTangent1ShiftA = 15;
constexpr int kTangent1ShiftB = 18;
constexpr int kTangent2ShiftA = 21;
constexpr int kTangent2ShiftB = 24;
constexpr int kFriction = 27;
constexpr int kBiasRate = 28;
constexpr int kMassScale = 29;
constexpr int kImpulseScale = 30;
constexpr int kRestitution = 31;
constexpr int kConstraintFields = 32;
// Point fields, relative to the point's block.
constexpr int kNormalArmA = 0;
constexpr int kNormalArmB = 3;
constexpr int kNormalTurnA = 6;
constexpr int kNormalTurnB = 9;
constexpr int kTangent1ArmA = 12;
constexpr int kTangent1ArmB = 15;
constexpr int kTangent1TurnA = 18;
constexpr int kTangent1TurnB = 21;
constexpr int kTangent2ArmA = 24;
constexpr int kTangent2ArmB = 27;
constexpr int kTangent2TurnA = 30;
constexpr int kTangent2TurnB = 33;
constexpr int kBaseSeparation = 36;
constexpr int kRelativeVelocity = 37;
constexpr int kNormalImpulse = 38;
constexpr int kTangentImpulse1 = 39;
constexpr int kTangentImpulse2 = 40;
constexpr int kMaxNormalImpulse = 41;
constexpr int kNormalMass = 42;
constexpr int kTangentMass1 = 43;
constexpr int kTangentMass2 = 44;
constexpr int kPointFields = 45;
constexpr int kBundleFields = kConstraintFields + kMaxManifoldPoints * kPointFields;
constexpr std::size_t kBundleFloats = static_cast<std::size_t>(kBundleFields) * W;

/// Lane `lane` of field f (scalar access for packing).
inline float laneOf(const float* block, int f, int lane)
{
    return block[static_cast<std::ptrdiff_t>(f) * W + lane];
}

/// The fields of point i of the bundle at q.
inline float* pointBlock(float* q, int i)
{
    return q + static_cast<std::ptrdiff_t>(kConstraintFields + i * kPointFields) * W;
}
inline const float* pointBlock(const float* q, int i)
{
    return q + static_cast<std::ptrdiff_t>(kConstraintFields + i * kPointFields) * W;
}

/// Velocity of B's anchor relative to A's along a direction (contact_solver.cpp's relativeSpeed).
inline FloatW relativeSpeed(const WideBody& a, const WideBody& b, const WideVec3& dir, const WideVec3& armA,
                            const WideVec3& armB)
{
    return dot(b.v - a.v, dir) + dot(b.w, armB) - dot(a.w, armA);
}

/// Applies the normal impulse `applied` of point block p: -applied to A, +applied to B.
inline void applyNormalImpulse(WideBody& a, WideBody& b, const WideVec3& normalShiftA,
                               const WideVec3& normalShiftB, const float* p, FloatW applied)
{
    a.v = a.v - normalShiftA * applied;
    a.w = a.w - fieldVec3(p, kNormalTurnA) * applied;
    b.v = b.v + normalShiftB * applied;
    b.w = b.w + fieldVec3(p, kNormalTurnB) * applied;
}

void warmStartBundle(const float* q, const std::uint32_t* bodyIndex, int pointCount, SolverBody* bodies)
{
    WideBody a;
    WideBody b;
    gatherBodies(bodies, bodyIndex, a);
    gatherBodies(bodies, bodyIndex + W, b);
    const WideVec3 normalShiftA = fieldVec3(q, kNormalShiftA);
    const WideVec3 normalShiftB = fieldVec3(q, kNormalShiftB);
    const WideVec3 tangent1ShiftA = fieldVec3(q, kTangent1ShiftA);
    const WideVec3 tangent1ShiftB = fieldVec3(q, kTangent1ShiftB);
    const WideVec3 tangent2ShiftA = fieldVec3(q, kTangent2ShiftA);
    const WideVec3 tangent2ShiftB = fieldVec3(q, kTangent2ShiftB);
    for (int i = 0; i < pointCount; ++i)
    {
        const float* p = pointBlock(q, i);
        const FloatW n = field(p, kNormalImpulse);
        const FloatW t1 = field(p, kTangentImpulse1);
        const FloatW t2 = field(p, kTangentImpulse2);
        a.v = a.v - (normalShiftA * n + tangent1ShiftA * t1 + tangent2ShiftA * t2);
        a.w = a.w - (fieldVec3(p, kNormalTurnA) * n + fieldVec3(p, kTangent1TurnA) * t1 +
                     fieldVec3(p, kTangent2TurnA) * t2);
        b.v = b.v + (normalShiftB * n + tangent1ShiftB * t1 + tangent2ShiftB * t2);
        b.w = b.w + (fieldVec3(p, kNormalTurnB) * n + fieldVec3(p, kTangent1TurnB) * t1 +
                     fieldVec3(p, kTangent2TurnB) * t2);
    }
    scatterVelocities(bodies, bodyIndex, a);
    scatterVelocities(bodies, bodyIndex + W, b);
}

template <bool useBias>
void solveBundle(float* q, const std::uint32_t* bodyIndex, int pointCount, SolverBody* bodies,
                 FloatW inverseH, FloatW minusPushout, FloatW linearSlop)
{
    WideBody a;
    WideBody b;
    gatherBodies(bodies, bodyIndex, a);
    gatherBodies(bodies, bodyIndex + W, b);
    const FloatW zero = simd::zero();
    const FloatW one = simd::splat(1.0f);
    const WideVec3 normal = fieldVec3(q, kNormal);
    const WideVec3 normalShiftA = fieldVec3(q, kNormalShiftA);
    const WideVec3 normalShiftB = fieldVec3(q, kNormalShiftB);
    const FloatW shift = dot(b.dp - a.dp, normal);
    const FloatW biasRate = field(q, kBiasRate);
    const FloatW softMassScale = field(q, kMassScale);
    const FloatW softImpulseScale = field(q, kImpulseScale);

    for (int i = 0; i < pointCount; ++i)
    {
        float* p = pointBlock(q, i);
        const WideVec3 armA = fieldVec3(p, kNormalArmA);
        const WideVec3 armB = fieldVec3(p, kNormalArmB);
        const FloatW s = shift + dot(b.dq, armB) - dot(a.dq, armA) + field(p, kBaseSeparation);
        const FloatW speculative = simd::greater(s, zero);
        FloatW bias;
        FloatW massScale;
        FloatW impulseScale;
        if constexpr (useBias)
        {
            // std::max(rate * std::min(s + slop, 0), -pushout), the operands in SSE's order.
            const FloatW soft = simd::max(minusPushout, biasRate * simd::min(zero, s + linearSlop));
            bias = simd::select(speculative, s * inverseH, soft);
            massScale = simd::select(speculative, one, softMassScale);
            impulseScale = simd::select(speculative, zero, softImpulseScale);
        }
        else
        {
            bias = simd::select(speculative, s * inverseH, zero);
            massScale = one;
            impulseScale = zero;
        }
        const FloatW vn = relativeSpeed(a, b, normal, armA, armB);
        if constexpr (useBias)
        {
            setField(p, kRelativeVelocity, simd::min(vn, field(p, kRelativeVelocity)));
        }
        const FloatW impulse = field(p, kNormalImpulse);
        const FloatW lambda = -field(p, kNormalMass) * massScale * (vn + bias) - impulseScale * impulse;
        const FloatW total = simd::max(zero, impulse + lambda);
        const FloatW applied = total - impulse;
        setField(p, kNormalImpulse, total);
        setField(p, kMaxNormalImpulse, simd::max(applied, field(p, kMaxNormalImpulse)));
        applyNormalImpulse(a, b, normalShiftA, normalShiftB, p, applied);
    }

    const WideVec3 tangent1 = fieldVec3(q, kTangent1);
    const WideVec3 tangent2 = fieldVec3(q, kTangent2);
    const WideVec3 tangent1ShiftA = fieldVec3(q, kTangent1ShiftA);
    const WideVec3 tangent1ShiftB = fieldVec3(q, kTangent1ShiftB);
    const WideVec3 tangent2ShiftA = fieldVec3(q, kTangent2ShiftA);
    const WideVec3 tangent2ShiftB = fieldVec3(q, kTangent2ShiftB);
    const FloatW friction = field(q, kFriction);
    for (int i = 0; i < pointCount; ++i)
    {
        float* p = pointBlock(q, i);
        const FloatW v1 =
            relativeSpeed(a, b, tangent1, fieldVec3(p, kTangent1ArmA), fieldVec3(p, kTangent1ArmB));
        const FloatW v2 =
            relativeSpeed(a, b, tangent2, fieldVec3(p, kTangent2ArmA), fieldVec3(p, kTangent2ArmB));
        const FloatW old1 = field(p, kTangentImpulse1);
        const FloatW old2 = field(p, kTangentImpulse2);
        FloatW t1 = old1 - field(p, kTangentMass1) * v1;
        FloatW t2 = old2 - field(p, kTangentMass2) * v2;
        const FloatW maxFriction = friction * field(p, kNormalImpulse);
        const FloatW magnitudeSquared = t1 * t1 + t2 * t2;
        const FloatW clamp = simd::greater(magnitudeSquared, maxFriction * maxFriction);
        const FloatW scale = simd::select(simd::greater(magnitudeSquared, zero),
                                          maxFriction / simd::sqrt(magnitudeSquared), zero);
        t1 = simd::select(clamp, t1 * scale, t1);
        t2 = simd::select(clamp, t2 * scale, t2);
        const FloatW d1 = t1 - old1;
        const FloatW d2 = t2 - old2;
        setField(p, kTangentImpulse1, t1);
        setField(p, kTangentImpulse2, t2);
        a.v = a.v - (tangent1ShiftA * d1 + tangent2ShiftA * d2);
        a.w = a.w - (fieldVec3(p, kTangent1TurnA) * d1 + fieldVec3(p, kTangent2TurnA) * d2);
        b.v = b.v + (tangent1ShiftB * d1 + tangent2ShiftB * d2);
        b.w = b.w + (fieldVec3(p, kTangent1TurnB) * d1 + fieldVec3(p, kTangent2TurnB) * d2);
    }
    scatterVelocities(bodies, bodyIndex, a);
    scatterVelocities(bodies, bodyIndex + W, b);
}

/// applyRestitution on one bundle: the scalar code's operations per lane, and lanes or points it skips
/// (no restitution, too slow an approach, no load) apply exactly 0.
void restituteBundle(float* q, const std::uint32_t* bodyIndex, int pointCount, SolverBody* bodies,
                     FloatW minusThreshold)
{
    const FloatW zero = simd::zero();
    const FloatW restitution = field(q, kRestitution);
    const FloatW noBounce = simd::equal(restitution, zero);
    if (simd::allSet(noBounce))
    {
        return; // no lane bounces (most scenes): the scalar code skips every one of them, and so does this
    }
    WideBody a;
    WideBody b;
    gatherBodies(bodies, bodyIndex, a);
    gatherBodies(bodies, bodyIndex + W, b);
    const WideVec3 normal = fieldVec3(q, kNormal);
    const WideVec3 normalShiftA = fieldVec3(q, kNormalShiftA);
    const WideVec3 normalShiftB = fieldVec3(q, kNormalShiftB);
    for (int i = 0; i < pointCount; ++i)
    {
        float* p = pointBlock(q, i);
        const FloatW approach = field(p, kRelativeVelocity);
        const FloatW maxImpulse = field(p, kMaxNormalImpulse);
        // The scalar code skips these: no restitution, relativeVelocity > -threshold, maxNormalImpulse == 0.
        const FloatW skip = simd::either(
            noBounce, simd::either(simd::greater(approach, minusThreshold), simd::equal(maxImpulse, zero)));
        const FloatW vn = relativeSpeed(a, b, normal, fieldVec3(p, kNormalArmA), fieldVec3(p, kNormalArmB));
        const FloatW impulse = field(p, kNormalImpulse);
        const FloatW lambda = -field(p, kNormalMass) * (vn + restitution * approach);
        const FloatW total = simd::select(skip, impulse, simd::max(zero, impulse + lambda));
        const FloatW applied = simd::select(skip, zero, total - impulse);
        setField(p, kNormalImpulse, total);
        setField(p, kMaxNormalImpulse, simd::select(skip, maxImpulse, simd::max(applied, maxImpulse)));
        applyNormalImpulse(a, b, normalShiftA, normalShiftB, p, applied);
    }
    scatterVelocities(bodies, bodyIndex, a);
    scatterVelocities(bodies, bodyIndex + W, b);
}

/// contact_solver.cpp's effectiveMass per lane: 1 / k where k > 0, else 0.
inline FloatW effectiveMass(const WideVec3& dir, const WideVec3& shiftA, const WideVec3& shiftB,
                            const WideVec3& armA, const WideVec3& armB, const WideVec3& turnA,
                            const WideVec3& turnB)
{
    const FloatW zero = simd::zero();
    const FloatW k = dot(dir, shiftA) + dot(dir, shiftB) + dot(armA, turnA) + dot(armB, turnB);
    return simd::select(simd::greater(k, zero), simd::splat(1.0f) / k, zero);
}

/// Lane values staged for loading as FloatW: the inputs of a bundle's preparation that the bundle does not
/// keep (anchors, the bodies' inverse masses).
struct alignas(32) LaneStage
{
    float v[W] = {};
    FloatW load() const { return simd::load(v); }
};
struct StagedVec3
{
    LaneStage x, y, z;
    void set(int lane, const Vec3& value)
    {
        x.v[lane] = value.x;
        y.v[lane] = value.y;
        z.v[lane] = value.z;
    }
    WideVec3 load() const { return {x.load(), y.load(), z.load()}; }
};
struct StagedMass
{
    StagedVec3 inverseMass, c0, c1, c2;
    void set(int lane, const SolverBodyMass& m)
    {
        inverseMass.set(lane, m.inverseMass);
        c0.set(lane, m.inverseInertia.c0);
        c1.set(lane, m.inverseInertia.c1);
        c2.set(lane, m.inverseInertia.c2);
    }
};

/// Prepares the bundle at q from the setups of its lanes (lane l: constraints[order[l]], l < laneCount)
/// with contact_solver.cpp's prepareContactConstraint arithmetic, W lanes at once. Writes every field of
/// the constraint and of its first `points` points, zero for empty lanes and for the points a lane lacks
/// (the lane values are staged, then stored W at a time).
void prepareBundle(float* q, std::uint32_t* bodyIndex, std::uint32_t* lanes, int points,
                   std::span<const ContactConstraintSetup> constraints, const std::uint32_t* order,
                   int laneCount, const SolverBody* bodies, std::span<const SolverBodyMass> masses)
{
    // Copies straight into the bundle, and the staged inputs.
    StagedMass massA;
    StagedMass massB;
    StagedVec3 anchorA[kMaxManifoldPoints];
    StagedVec3 anchorB[kMaxManifoldPoints];
    LaneStage pointCount;
    StagedVec3 stagedNormal;
    StagedVec3 stagedTangent1;
    StagedVec3 stagedTangent2;
    LaneStage friction;
    LaneStage biasRate;
    LaneStage massScale;
    LaneStage impulseScale;
    LaneStage restitution;
    LaneStage baseSeparation[kMaxManifoldPoints];
    LaneStage normalImpulse[kMaxManifoldPoints];
    LaneStage tangentImpulse1[kMaxManifoldPoints];
    LaneStage tangentImpulse2[kMaxManifoldPoints];
    for (int lane = 0; lane < W; ++lane)
    {
        lanes[lane] = kEmptyLane;
        bodyIndex[lane] = 0; // empty lanes act on the static dummy, with zeros
        bodyIndex[W + lane] = 0;
    }
    for (int lane = 0; lane < laneCount; ++lane)
    {
        const std::uint32_t index = order[lane];
        const ContactConstraintSetup& c = constraints[index];
        lanes[lane] = index;
        bodyIndex[lane] = c.bodyA;
        bodyIndex[W + lane] = c.bodyB;
        massA.set(lane, masses[c.bodyA]);
        massB.set(lane, masses[c.bodyB]);
        pointCount.v[lane] = static_cast<float>(c.pointCount);
        stagedNormal.set(lane, c.normal);
        stagedTangent1.set(lane, c.tangent1);
        stagedTangent2.set(lane, c.tangent2);
        friction.v[lane] = c.friction;
        biasRate.v[lane] = c.softness.biasRate;
        massScale.v[lane] = c.softness.massScale;
        impulseScale.v[lane] = c.softness.impulseScale;
        restitution.v[lane] = c.restitution;
        for (int i = 0; i < c.pointCount; ++i)
        {
            const ContactPointSetup& cp = c.points[i];
            anchorA[i].set(lane, cp.anchorA);
            anchorB[i].set(lane, cp.anchorB);
            baseSeparation[i].v[lane] = cp.baseSeparation;
            normalImpulse[i].v[lane] = cp.normalImpulse;
            tangentImpulse1[i].v[lane] = cp.tangentImpulse1;
            tangentImpulse2[i].v[lane] = cp.tangentImpulse2;
        }
    }
    setFieldVec3(q, kNormal, stagedNormal.load());
    setFieldVec3(q, kTangent1, stagedTangent1.load());
    setFieldVec3(q, kTangent2, stagedTangent2.load());
    setField(q, kFriction, friction.load());
    setField(q, kBiasRate, biasRate.load());
    setField(q, kMassScale, massScale.load());
    setField(q, kImpulseScale, impulseScale.load());
    setField(q, kRestitution, restitution.load());

    WideBody a;
    WideBody b;
    gatherBodies(bodies, bodyIndex, a);
    gatherBodies(bodies, bodyIndex + W, b);
    const WideVec3 inverseMassA = massA.inverseMass.load();
    const WideVec3 inverseMassB = massB.inverseMass.load();
    const WideMat3 inverseInertiaA{massA.c0.load(), massA.c1.load(), massA.c2.load()};
    const WideMat3 inverseInertiaB{massB.c0.load(), massB.c1.load(), massB.c2.load()};
    const WideVec3 normal = fieldVec3(q, kNormal);
    const WideVec3 tangent1 = fieldVec3(q, kTangent1);
    const WideVec3 tangent2 = fieldVec3(q, kTangent2);
    const WideVec3 normalShiftA = mulPerElem(inverseMassA, normal);
    const WideVec3 normalShiftB = mulPerElem(inverseMassB, normal);
    const WideVec3 tangent1ShiftA = mulPerElem(inverseMassA, tangent1);
    const WideVec3 tangent1ShiftB = mulPerElem(inverseMassB, tangent1);
    const WideVec3 tangent2ShiftA = mulPerElem(inverseMassA, tangent2);
    const WideVec3 tangent2ShiftB = mulPerElem(inverseMassB, tangent2);
    setFieldVec3(q, kNormalShiftA, normalShiftA);
    setFieldVec3(q, kNormalShiftB, normalShiftB);
    setFieldVec3(q, kTangent1ShiftA, tangent1ShiftA);
    setFieldVec3(q, kTangent1ShiftB, tangent1ShiftB);
    setFieldVec3(q, kTangent2ShiftA, tangent2ShiftA);
    setFieldVec3(q, kTangent2ShiftB, tangent2ShiftB);

    const FloatW zero = simd::zero();
    const FloatW counts = pointCount.load();
    for (int i = 0; i < points; ++i)
    {
        float* p = pointBlock(q, i);
        // Lanes without point i keep zeros (anchors are zero there, but masses would not be).
        const FloatW present = simd::greater(counts, simd::splat(static_cast<float>(i)));
        const WideVec3 rA = anchorA[i].load();
        const WideVec3 rB = anchorB[i].load();
        const WideVec3 normalArmA = cross(rA, normal);
        const WideVec3 normalArmB = cross(rB, normal);
        const WideVec3 normalTurnA = inverseInertiaA * normalArmA;
        const WideVec3 normalTurnB = inverseInertiaB * normalArmB;
        const WideVec3 tangent1ArmA = cross(rA, tangent1);
        const WideVec3 tangent1ArmB = cross(rB, tangent1);
        const WideVec3 tangent1TurnA = inverseInertiaA * tangent1ArmA;
        const WideVec3 tangent1TurnB = inverseInertiaB * tangent1ArmB;
        const WideVec3 tangent2ArmA = cross(rA, tangent2);
        const WideVec3 tangent2ArmB = cross(rB, tangent2);
        const WideVec3 tangent2TurnA = inverseInertiaA * tangent2ArmA;
        const WideVec3 tangent2TurnB = inverseInertiaB * tangent2ArmB;
        setFieldVec3(p, kNormalArmA, normalArmA);
        setFieldVec3(p, kNormalArmB, normalArmB);
        setFieldVec3(p, kNormalTurnA, normalTurnA);
        setFieldVec3(p, kNormalTurnB, normalTurnB);
        setFieldVec3(p, kTangent1ArmA, tangent1ArmA);
        setFieldVec3(p, kTangent1ArmB, tangent1ArmB);
        setFieldVec3(p, kTangent1TurnA, tangent1TurnA);
        setFieldVec3(p, kTangent1TurnB, tangent1TurnB);
        setFieldVec3(p, kTangent2ArmA, tangent2ArmA);
        setFieldVec3(p, kTangent2ArmB, tangent2ArmB);
        setFieldVec3(p, kTangent2TurnA, tangent2TurnA);
        setFieldVec3(p, kTangent2TurnB, tangent2TurnB);
        const FloatW normalMass = effectiveMass(normal, normalShiftA, normalShiftB, normalArmA, normalArmB,
                                                normalTurnA, normalTurnB);
        const FloatW tangentMass1 = effectiveMass(tangent1, tangent1ShiftA, tangent1ShiftB, tangent1ArmA,
                                                  tangent1ArmB, tangent1TurnA, tangent1TurnB);
        const FloatW tangentMass2 = effectiveMass(tangent2, tangent2ShiftA, tangent2ShiftB, tangent2ArmA,
                                                  tangent2ArmB, tangent2TurnA, tangent2TurnB);
        setField(p, kNormalMass, simd::select(present, normalMass, zero));
        setField(p, kTangentMass1, simd::select(present, tangentMass1, zero));
        setField(p, kTangentMass2, simd::select(present, tangentMass2, zero));
        setField(p, kRelativeVelocity,
                 simd::select(present, relativeSpeed(a, b, normal, normalArmA, normalArmB), zero));
        setField(p, kBaseSeparation, baseSeparation[i].load());
        setField(p, kNormalImpulse, normalImpulse[i].load());
        setField(p, kTangentImpulse1, tangentImpulse1[i].load());
        setField(p, kTangentImpulse2, tangentImpulse2[i].load());
        setField(p, kMaxNormalImpulse, zero);
    }
}

/// Bundles needed for `constraints` constraints at most: each colour leaves at most one bundle part-full.
std::size_t maxBundles(std::size_t constraints)
{
    return constraints / W + kGraphColorCount;
}

} // namespace

int contactSolverLanes()
{
    return W;
}

void reserveContactBundles(ConstraintGraph& graph, std::size_t constraints)
{
    const std::size_t bundles = maxBundles(constraints);
    graph.bundleValues.reserve(bundles * kBundleFloats + kAlignFloats);
    graph.bundleBodies.reserve(bundles * 2 * W);
    graph.bundleLanes.reserve(bundles * W);
    graph.bundlePoints.reserve(bundles);
    graph.bundleFirst.reserve(bundles);
    graph.blockBundles.reserve(2 * (bundles + kGraphColorCount));
}

namespace
{

/// Bundles a chunk of a parallel loop over bundles holds: enough work to pay for handing it out.
constexpr std::uint32_t kBundleGrain = 4;

/// fn(begin, end, thread) over [0, count): on the pool when there is one and enough work for two chunks.
template <typename F> void forBundles(TaskPool* tasks, std::uint32_t count, std::uint32_t grain, F&& fn)
{
    if (tasks != nullptr && count > grain)
    {
        tasks->parallelFor(count, grain, fn);
    }
    else if (count > 0)
    {
        fn(0u, count, 0);
    }
}

/// fn(begin, end) over the bundles of each of graph.blockBundles' blocks, those of thread t's runs on
/// thread t first.
template <typename F> void forBlocks(const ConstraintGraph& graph, TaskPool* tasks, F&& fn)
{
    const auto blocks = static_cast<std::uint32_t>(graph.blockBundles.size() / 2);
    forBundles(tasks, blocks, 1,
               [&](std::uint32_t begin, std::uint32_t end, int)
               {
                   for (std::uint32_t block = begin; block < end; ++block)
                   {
                       fn(graph.blockBundles[2 * block], graph.blockBundles[2 * block + 1]);
                   }
               });
}

} // namespace

void prepareContactBundles(ConstraintGraph& graph, std::span<const ContactConstraintSetup> constraints,
                           std::span<const SolverBody> bodies, std::span<const SolverBodyMass> masses,
                           TaskPool* tasks)
{
    std::uint32_t bundles = 0;
    for (int color = 0; color < kGraphColorCount; ++color)
    {
        graph.colorBundleStart[color] = bundles;
        const std::uint32_t count = graph.colorStart[color + 1] - graph.colorStart[color];
        bundles += (count + W - 1) / W;
    }
    graph.colorBundleStart[kGraphColorCount] = bundles;
    graph.bundleCount = bundles;
    // Sized, not cleared: prepareBundle writes every field a pass reads.
    graph.bundleValues.resize(bundles * kBundleFloats + kAlignFloats);
    graph.bundleBodies.resize(static_cast<std::size_t>(bundles) * 2 * W);
    graph.bundleLanes.resize(static_cast<std::size_t>(bundles) * W);
    graph.bundlePoints.resize(bundles);
    graph.bundleFirst.resize(bundles);
    for (int color = 0; color < kGraphColorCount; ++color)
    {
        for (std::uint32_t b = graph.colorBundleStart[color]; b < graph.colorBundleStart[color + 1]; ++b)
        {
            graph.bundleFirst[b] = graph.colorStart[color] + (b - graph.colorBundleStart[color]) * W;
        }
    }
    // The blocks, thread by thread (the solver passes give thread t the run runStart(blocks, t) of each
    // colour's blocks: see contactPassBlocks and TaskPool::runStages).
    const int threads = tasks != nullptr ? tasks->threadCount() : 1;
    graph.blockBundles.clear();
    for (int t = 0; t < threads; ++t)
    {
        for (int color = 0; color < kGraphColorCount; ++color)
        {
            const std::uint32_t blocks = contactPassBlocks(graph, color);
            for (std::uint32_t block = taskRunStart(blocks, t, threads);
                 block < taskRunStart(blocks, t + 1, threads); ++block)
            {
                const std::uint32_t first = graph.colorBundleStart[color] + block * kBundleGrain;
                graph.blockBundles.push_back(first);
                graph.blockBundles.push_back(
                    std::min(first + kBundleGrain, graph.colorBundleStart[color + 1]));
            }
        }
    }
    float* base = alignedBase(graph.bundleValues);
    const auto prepareBundles = [&](std::uint32_t begin, std::uint32_t end)
    {
        for (std::uint32_t bundle = begin; bundle < end; ++bundle)
        {
            const std::uint32_t first = graph.bundleFirst[bundle];
            const std::uint32_t colorEnd = graph.colorStart[graph.colorOf[graph.order[first]] + 1];
            const std::uint32_t last = std::min<std::uint32_t>(first + W, colorEnd);
            float* q = base + bundle * kBundleFloats;
            int points = 0;
            for (std::uint32_t k = first; k < last; ++k)
            {
                points = std::max(points, constraints[graph.order[k]].pointCount);
            }
            // Every field a pass reads is written (points past the bundle's most are not read).
            std::uint32_t* bodyIndex = graph.bundleBodies.data() + bundle * 2 * W;
            std::uint32_t* lanes = graph.bundleLanes.data() + bundle * W;
            prepareBundle(q, bodyIndex, lanes, points, constraints, graph.order.data() + first,
                          static_cast<int>(last - first), bodies.data(), masses);
            graph.bundlePoints[bundle] = static_cast<std::uint8_t>(points);
        }
    };
    forBlocks(graph, tasks, prepareBundles);

    const std::span<const std::uint32_t> overflow = graph.overflow();
    graph.overflowConstraints.resize(overflow.size());
    graph.overflowSequence.resize(overflow.size());
    for (std::size_t k = 0; k < overflow.size(); ++k)
    {
        prepareContactConstraint(constraints[overflow[k]], graph.overflowConstraints[k], bodies, masses);
        graph.overflowSequence[k] = static_cast<std::uint32_t>(k);
    }
}

void runContactBundles(ConstraintGraph& graph, ContactPass pass, std::span<SolverBody> bodies,
                       const ContactPassParams& params, std::uint32_t begin, std::uint32_t end)
{
    float* base = alignedBase(graph.bundleValues);
    const FloatW wideInverseH = simd::splat(params.inverseH);
    const FloatW minusPushout = simd::splat(-params.pushoutVelocity);
    const FloatW slop = simd::splat(params.linearSlop);
    const FloatW minusThreshold = simd::splat(-params.restitutionThreshold);
    for (std::uint32_t bundle = begin; bundle < end; ++bundle)
    {
        float* q = base + bundle * kBundleFloats;
        const std::uint32_t* bodyIndex = graph.bundleBodies.data() + bundle * 2 * W;
        const int points = graph.bundlePoints[bundle];
        switch (pass)
        {
        case ContactPass::WarmStart:
            warmStartBundle(q, bodyIndex, points, bodies.data());
            break;
        case ContactPass::Solve:
            solveBundle<true>(q, bodyIndex, points, bodies.data(), wideInverseH, minusPushout, slop);
            break;
        case ContactPass::Relax:
            solveBundle<false>(q, bodyIndex, points, bodies.data(), wideInverseH, minusPushout, slop);
            break;
        case ContactPass::Restitute:
            restituteBundle(q, bodyIndex, points, bodies.data(), minusThreshold);
            break;
        }
    }
}

void runContactOverflow(ConstraintGraph& graph, ContactPass pass, std::span<SolverBody> bodies,
                        const ContactPassParams& params)
{
    bodies[0] = SolverBody{}; // the static dummy: only zeros were added, but keep it exact
    switch (pass)
    {
    case ContactPass::WarmStart:
        warmStartContacts(graph.overflowConstraints, graph.overflowSequence, bodies);
        break;
    case ContactPass::Solve:
    case ContactPass::Relax:
        solveContacts(graph.overflowConstraints, graph.overflowSequence, bodies, params.inverseH,
                      params.pushoutVelocity, params.linearSlop, pass == ContactPass::Solve);
        break;
    case ContactPass::Restitute:
        applyRestitution(graph.overflowConstraints, graph.overflowSequence, bodies,
                         params.restitutionThreshold);
        break;
    }
}

std::uint32_t contactPassBlocks(const ConstraintGraph& graph, int color)
{
    const std::uint32_t count = graph.colorBundleStart[color + 1] - graph.colorBundleStart[color];
    return (count + kBundleGrain - 1) / kBundleGrain;
}

void runContactPassBlock(ConstraintGraph& graph, ContactPass pass, std::span<SolverBody> bodies,
                         const ContactPassParams& params, int color, std::uint32_t block)
{
    const std::uint32_t first = graph.colorBundleStart[color] + block * kBundleGrain;
    const std::uint32_t end = std::min(first + kBundleGrain, graph.colorBundleStart[color + 1]);
    runContactBundles(graph, pass, bodies, params, first, end);
}

namespace
{
/// One pass: the bundles colour by colour (each colour's on any thread), then the overflow set.
void runContactPass(ConstraintGraph& graph, ContactPass pass, std::span<SolverBody> bodies,
                    const ContactPassParams& params, TaskPool* tasks)
{
    for (int color = 0; color < kGraphColorCount; ++color)
    {
        const std::uint32_t first = graph.colorBundleStart[color];
        const std::uint32_t count = graph.colorBundleStart[color + 1] - first;
        forBundles(tasks, count, kBundleGrain,
                   [&](std::uint32_t begin, std::uint32_t end, int)
                   { runContactBundles(graph, pass, bodies, params, first + begin, first + end); });
    }
    runContactOverflow(graph, pass, bodies, params);
}
} // namespace

void warmStartContactsWide(ConstraintGraph& graph, std::span<SolverBody> bodies, TaskPool* tasks)
{
    runContactPass(graph, ContactPass::WarmStart, bodies, ContactPassParams{}, tasks);
}

void solveContactsWide(ConstraintGraph& graph, std::span<SolverBody> bodies, float inverseH,
                       float pushoutVelocity, float linearSlop, bool useBias, TaskPool* tasks)
{
    const ContactPassParams params{inverseH, pushoutVelocity, linearSlop, 0.0f};
    runContactPass(graph, useBias ? ContactPass::Solve : ContactPass::Relax, bodies, params, tasks);
}

void applyRestitutionWide(ConstraintGraph& graph, std::span<SolverBody> bodies, float threshold,
                          TaskPool* tasks)
{
    ContactPassParams params{};
    params.restitutionThreshold = threshold;
    runContactPass(graph, ContactPass::Restitute, bodies, params, tasks);
}

void readContactImpulses(const ConstraintGraph& graph, std::span<ContactImpulses> impulses, TaskPool* tasks)
{
    const float* base = alignedBase(graph.bundleValues);
    const auto readBundles = [&](std::uint32_t begin, std::uint32_t end)
    {
        for (std::uint32_t bundle = begin; bundle < end; ++bundle)
        {
            const float* q = base + bundle * kBundleFloats;
            for (int lane = 0; lane < W; ++lane)
            {
                const std::uint32_t index = graph.bundleLanes[bundle * W + lane];
                if (index == kEmptyLane)
                {
                    continue;
                }
                ContactImpulses& out = impulses[index];
                // Points the lane lacks read as 0 (the bundle was zeroed), as a fresh ContactImpulses has.
                for (int i = 0; i < graph.bundlePoints[bundle]; ++i)
                {
                    const float* p = pointBlock(q, i);
                    out.normal[i] = laneOf(p, kNormalImpulse, lane);
                    out.tangent1[i] = laneOf(p, kTangentImpulse1, lane);
                    out.tangent2[i] = laneOf(p, kTangentImpulse2, lane);
                    out.approachSpeed[i] = -laneOf(p, kRelativeVelocity, lane);
                    out.maxNormalImpulse[i] = laneOf(p, kMaxNormalImpulse, lane);
                }
            }
        }
    };
    forBlocks(graph, tasks, readBundles);
    const std::span<const std::uint32_t> overflow = graph.overflow();
    for (std::size_t k = 0; k < overflow.size(); ++k)
    {
        const ContactConstraint& c = graph.overflowConstraints[k];
        ContactImpulses& out = impulses[overflow[k]];
        for (int i = 0; i < c.pointCount; ++i)
        {
            out.normal[i] = c.points[i].normalImpulse;
            out.tangent1[i] = c.points[i].tangentImpulse1;
            out.tangent2[i] = c.points[i].tangentImpulse2;
            out.approachSpeed[i] = -c.points[i].relativeVelocity;
            out.maxNormalImpulse[i] = c.points[i].maxNormalImpulse;
        }
    }
}

void integratePositionsWide(std::span<SolverBody> bodies, std::span<SolverBodyMotion> motions,
                            std::uint32_t begin, std::uint32_t end, float h)
{
    // integratePositions, W bodies a lane each: gathered, moved, scattered. Each lane does its operations
    // in its order (integrateRotation's zero term included), so the bits are the same. A group holding a
    // gyroscopic body (freeRotationStep), and the last W - 1 bodies, go through integratePositions.
    std::uint32_t first = std::max<std::uint32_t>(begin, 1);
    const FloatW step = simd::splat(h);
    const FloatW halfStep = simd::splat(0.5f * h);
    const FloatW zero = simd::zero();
    const FloatW one = simd::splat(1.0f);
    const FloatW tiny = simd::splat(1e-20f);
    std::uint32_t index[W];
    for (; first + W <= end; first += W)
    {
        bool gyroscopic = false;
        for (int lane = 0; lane < W; ++lane)
        {
            index[lane] = first + static_cast<std::uint32_t>(lane);
            gyroscopic = gyroscopic || motions[first + static_cast<std::uint32_t>(lane)].gyroscopic;
        }
        if (gyroscopic)
        {
            integratePositions(bodies, motions, first, first + W, h);
            continue;
        }
        WideBody b;
        gatherBodies(bodies.data(), index, b);
        WidePose pose;
        gatherPoses(motions.data(), index, pose);
        const WideVec3 dp = b.v * step;
        b.dp = b.dp + dp;
        pose.center = pose.center + dp;
        b.dq = b.dq + b.w * step;
        // integrateRotation: dq = (w, 0) * q, then q + dq h / 2, normalized.
        const WideQuat& q = pose.rotation;
        const WideVec3& w = b.w;
        const FloatW dx = zero * q.x + w.x * q.w + w.y * q.z - w.z * q.y;
        const FloatW dy = zero * q.y - w.x * q.z + w.y * q.w + w.z * q.x;
        const FloatW dz = zero * q.z + w.x * q.y - w.y * q.x + w.z * q.w;
        const FloatW dw = zero * q.w - w.x * q.x - w.y * q.y - w.z * q.z;
        const WideQuat moved{q.x + dx * halfStep, q.y + dy * halfStep, q.z + dz * halfStep,
                             q.w + dw * halfStep};
        // normalize: the identity where the length is not above 1e-20.
        const FloatW length =
            simd::sqrt(moved.x * moved.x + moved.y * moved.y + moved.z * moved.z + moved.w * moved.w);
        const FloatW inverse = one / length;
        const FloatW degenerate = simd::equal(simd::greater(length, tiny), zero);
        pose.rotation = {simd::select(degenerate, zero, moved.x * inverse),
                         simd::select(degenerate, zero, moved.y * inverse),
                         simd::select(degenerate, zero, moved.z * inverse),
                         simd::select(degenerate, one, moved.w * inverse)};
        scatterBodies(bodies.data(), index, b);
        scatterPoses(motions.data(), index, pose);
    }
    if (first < end)
    {
        integratePositions(bodies, motions, first, end, h);
    }
}

} // namespace polytope::physics

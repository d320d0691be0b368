// Polytope physics: the World's joints (joints.h): their lifetime, their part in islands and filtering, and
// their share of the solve (joint_solver.h).
//
// - Storage: joints live in slots with generations, like bodies; each body keeps a singly linked list of its
//   joints (Body::jointList, Joint::next[side]) for filtering and for destroyBody. Nothing iterates a list
//   where order matters: events and the solve go by joint slot.
// - Filtering: a joint without collideConnected keeps its bodies' pair from being made (filtersAllow walks
//   the shorter-lived list); creating one drops their contact at the next step (removeFilteredContacts),
//   and removing it lets the pair be found again (requeryPairs).
// - Islands: joints between awake dynamic bodies link islands (linkIslands), so jointed bodies sleep and
//   wake together; a joint to a moving kinematic body keeps its dynamic body awake. A sleeping island joined
//   to an awake body is woken before the solve (wakeJointedIslands).
// - Solve: each step the joints with an awake dynamic body are gathered by their body's substep level (each
//   level in slot order), prepared for the level's substeps, and coloured greedily in that order so that one
//   colour's joints share no moving body: a colour is solved on any number of threads with the same bits.
//   Joints that fit no colour are solved last, in order, on the calling thread.
// - Breaking: after the solve, joints whose step force or torque exceeds their thresholds are destroyed and
//   reported, in slot order.
#include "polytope/physics/world.h"

#include <algorithm>
#include <cmath>

namespace polytope::physics
{
namespace
{

constexpr std::uint32_t kStaticSolverIndex = 0;
/// Colours a level's joints are spread over; joints beyond them are solved in order after the colours.
constexpr std::uint32_t kJointColorCount = 16;
/// Joints per chunk of a colour's parallel loop.
constexpr std::uint32_t kJointGrain = 128;
/// Bit of World::m_jointColors marking a joint for the wide ball-joint solver (colours fit in the rest).
constexpr std::uint32_t kWideJointBit = 0x80;
static_assert(kJointColorCount < kWideJointBit);

/// Ball bundles per block of a joint colour's stage: kJointGrain joints' worth.
std::uint32_t ballBundleGrain()
{
    return kJointGrain / static_cast<std::uint32_t>(jointSolverLanes());
}
/// Joint stiffness is capped at this fraction of the substep rate, as contacts are: a hanging chain of 8 or
/// more links solved at half the substep rate oscillates and grows (measured), at a quarter it is stable.
constexpr float kJointHertzCap = 0.25f;

bool finiteTransform(const Transform& t)
{
    return isFinite(t.p) && isFinite(t.q) && std::sqrt(dot(t.q, t.q)) > 1e-6f;
}

bool finiteNonNegative(float v)
{
    return std::isfinite(v) && v >= 0.0f;
}

JointImpulses scaled(const JointImpulses& i, float s)
{
    return {i.linear * s, i.angular * s, i.axial * s, i.spring * s,
            i.motor * s,  i.lower * s,   i.upper * s, i.swing * s};
}

bool impulsesFinite(const JointImpulses& i, float bound)
{
    const auto ok = [bound](float v) { return std::fabs(v) <= bound; }; // NaN fails too
    return ok(i.linear.x) && ok(i.linear.y) && ok(i.linear.z) && ok(i.angular.x) && ok(i.angular.y) &&
           ok(i.angular.z) && ok(i.axial) && ok(i.spring) && ok(i.motor) && ok(i.lower) && ok(i.upper) &&
           ok(i.swing);
}

} // namespace

bool validJointSettings(const JointDesc& d)
{
    const bool angularLimit = d.type == JointType::Hinge || d.type == JointType::ConeTwist;
    if (d.limit.enabled)
    {
        if (!std::isfinite(d.limit.lower) || !std::isfinite(d.limit.upper) || d.limit.lower > d.limit.upper)
        {
            return false;
        }
        if (angularLimit && (d.limit.lower < -kPi || d.limit.upper > kPi))
        {
            return false;
        }
        if (d.type == JointType::Distance && d.limit.lower < 0.0f)
        {
            return false;
        }
    }
    const JointMotor& m = d.motor;
    if (m.mode != MotorMode::Off && m.mode != MotorMode::Velocity && m.mode != MotorMode::Position)
    {
        return false;
    }
    if (!std::isfinite(m.targetVelocity) || !std::isfinite(m.targetPosition) ||
        !finiteNonNegative(m.maxForce) || !finiteNonNegative(m.dampingRatio) || !std::isfinite(m.hertz) ||
        (m.mode == MotorMode::Position && !(m.hertz > 0.0f)))
    {
        return false;
    }
    const JointSpring& s = d.spring;
    if (!finiteNonNegative(s.hertz) || !finiteNonNegative(s.dampingRatio) || !std::isfinite(s.target))
    {
        return false;
    }
    // NaN thresholds are refused; infinity means unbreakable.
    return d.breakForce > 0.0f && d.breakTorque > 0.0f && !std::isnan(d.breakForce) &&
           !std::isnan(d.breakTorque);
}

WorldStatus World::checkJointDesc(const JointDesc& desc, JointDesc& out) const
{
    if (!isValid(desc.bodyA) || !isValid(desc.bodyB))
    {
        return WorldStatus::StaleBodyId;
    }
    const std::uint8_t type = static_cast<std::uint8_t>(desc.type);
    if (type >= kJointTypeCount || desc.bodyA.index == desc.bodyB.index ||
        (m_bodies[desc.bodyA.index].type != BodyType::Dynamic &&
         m_bodies[desc.bodyB.index].type != BodyType::Dynamic))
    {
        return WorldStatus::InvalidJointDesc;
    }
    if (!finiteTransform(desc.frameA) || !finiteTransform(desc.frameB) || !withinWorldBound(desc.frameA.p) ||
        !withinWorldBound(desc.frameB.p) || !finiteNonNegative(desc.hertz) ||
        !finiteNonNegative(desc.dampingRatio) || !finiteNonNegative(desc.length) ||
        !std::isfinite(desc.coneAngle) || desc.coneAngle < 0.0f || desc.coneAngle > kPi ||
        !validJointSettings(desc))
    {
        return WorldStatus::InvalidJointDesc;
    }
    out = desc;
    out.frameA.q = normalize(desc.frameA.q);
    out.frameB.q = normalize(desc.frameB.q);
    return WorldStatus::Ok;
}

World::JointLink World::linkOf(const JointDesc& desc)
{
    return {desc.bodyA.index, desc.bodyB.index, true,
            std::isfinite(desc.breakForce) || std::isfinite(desc.breakTorque)};
}

bool World::localFrameOf(BodyId id, const Transform& world, Transform& local) const
{
    if (!isValid(id) || !finiteTransform(world))
    {
        return false;
    }
    const Transform normalized{world.p, normalize(world.q)};
    local = inverse(m_sims[id.index].transform) * normalized;
    return true;
}

CreateJointResult World::createJoint(const JointDesc& desc, const Transform& worldFrame)
{
    JointDesc local = desc;
    if (!localFrameOf(desc.bodyA, worldFrame, local.frameA) ||
        !localFrameOf(desc.bodyB, worldFrame, local.frameB))
    {
        return {{},
                isValid(desc.bodyA) && isValid(desc.bodyB) ? WorldStatus::InvalidJointDesc
                                                           : WorldStatus::StaleBodyId};
    }
    return createJoint(local);
}

CreateJointResult World::createJoint(const JointDesc& desc)
{
    JointDesc checked;
    const WorldStatus status = checkJointDesc(desc, checked);
    if (status != WorldStatus::Ok)
    {
        return {{}, status};
    }
    if (m_jointCount >= m_config.maxJoints)
    {
        return {{}, WorldStatus::JointCapacityReached};
    }
    std::uint32_t j;
    if (!m_freeJoints.empty())
    {
        j = m_freeJoints.back();
        m_freeJoints.pop_back();
    }
    else
    {
        j = static_cast<std::uint32_t>(m_joints.size());
        m_joints.emplace_back();
        m_jointLinks.emplace_back();
    }
    Joint& joint = m_joints[j];
    joint.generation = joint.generation + 1 == 0 ? 1 : joint.generation + 1;
    joint.alive = true;
    joint.desc = checked;
    joint.impulses = {};
    joint.force = {};
    joint.torque = {};
    const std::uint32_t a = checked.bodyA.index;
    const std::uint32_t b = checked.bodyB.index;
    m_jointLinks[j] = linkOf(checked);
    joint.next[0] = m_bodies[a].jointList;
    m_bodies[a].jointList = j;
    joint.next[1] = m_bodies[b].jointList;
    m_bodies[b].jointList = j;
    ++m_jointCount;
    reserveJointBuffers();
    wakeIsland(a);
    wakeIsland(b);
    if (!checked.collideConnected)
    {
        m_filtersChanged = true; // their contact, if any, goes at the next step
    }
    return {{j, joint.generation}, WorldStatus::Ok};
}

void World::reserveJointBuffers()
{
    // Grown here, outside steps, so that a step never allocates for its joints.
    const std::size_t slots = m_joints.size();
    if (m_jointConstraints.capacity() < slots)
    {
        const std::size_t capacity = std::max<std::size_t>(slots * 2, 64);
        m_jointConstraints.reserve(capacity);
        m_jointSlots.reserve(capacity);
        m_jointOrder.reserve(capacity);
        m_jointColors.reserve(capacity);
        m_jointEvents.reserve(capacity);
        m_pendingJointEvents.reserve(capacity);
    }
    if (m_jointColorStart.size() < kJointColorCount + 2)
    {
        m_jointColorStart.resize(kJointColorCount + 2);
        m_jointBallEnd.resize(kJointColorCount + 1);
        m_ballBundleStart.resize(kJointColorCount + 2);
    }
    // Each colour leaves at most one bundle part full.
    const std::size_t bundles =
        m_jointConstraints.capacity() / static_cast<std::size_t>(jointSolverLanes()) + kJointColorCount;
    if (m_ballBundles.lanes.capacity() < bundles * static_cast<std::size_t>(jointSolverLanes()))
    {
        reserveBallBundles(m_ballBundles, bundles);
    }
    const std::size_t words = kJointColorCount * ((static_cast<std::size_t>(m_config.maxBodies) + 64) / 64);
    if (m_jointColorBits.size() < words)
    {
        m_jointColorBits.resize(words);
    }
}

bool World::isValid(JointId id) const
{
    return id.index < m_joints.size() && m_joints[id.index].alive &&
           m_joints[id.index].generation == id.generation && id.generation != 0;
}

void World::removeJoint(std::uint32_t j)
{
    Joint& joint = m_joints[j];
    for (int side = 0; side < 2; ++side)
    {
        // Find j in the body's list and splice it out.
        const std::uint32_t body = side == 0 ? joint.desc.bodyA.index : joint.desc.bodyB.index;
        std::uint32_t* at = &m_bodies[body].jointList;
        while (*at != j)
        {
            Joint& other = m_joints[*at];
            at = other.desc.bodyA.index == body ? &other.next[0] : &other.next[1];
        }
        *at = joint.next[side];
    }
    const std::uint32_t a = joint.desc.bodyA.index;
    const std::uint32_t b = joint.desc.bodyB.index;
    joint.alive = false;
    m_jointLinks[j].alive = false;
    joint.next[0] = kNoJoint;
    joint.next[1] = kNoJoint;
    m_freeJoints.push_back(j);
    --m_jointCount;
    for (const std::uint32_t body : {a, b})
    {
        if (m_bodies[body].alive)
        {
            wakeIsland(body);
        }
    }
    if (!joint.desc.collideConnected && m_bodies[a].alive && m_bodies[b].alive)
    {
        requeryPairs(m_shapes[a].type == ShapeType::Plane ? b : a); // their pair may be made again
    }
}

WorldStatus World::destroyJoint(JointId id)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleJointId;
    }
    removeJoint(id.index);
    return WorldStatus::Ok;
}

bool World::joinedWithoutCollision(std::uint32_t a, std::uint32_t b) const
{
    for (std::uint32_t j = m_bodies[a].jointList; j != kNoJoint;)
    {
        const Joint& joint = m_joints[j];
        const bool aIsA = joint.desc.bodyA.index == a;
        const std::uint32_t other = aIsA ? joint.desc.bodyB.index : joint.desc.bodyA.index;
        if (other == b && !joint.desc.collideConnected)
        {
            return true;
        }
        j = aIsA ? joint.next[0] : joint.next[1];
    }
    return false;
}

void World::fillJointState(std::uint32_t j, JointState& out) const
{
    const Joint& joint = m_joints[j];
    out.id = {j, joint.generation};
    out.desc = joint.desc;
    out.worldFrameA = m_sims[joint.desc.bodyA.index].transform * joint.desc.frameA;
    out.worldFrameB = m_sims[joint.desc.bodyB.index].transform * joint.desc.frameB;
    out.force = joint.force;
    out.torque = joint.torque;
    jointCoordinates(joint.desc.type, out.worldFrameA, out.worldFrameB, out.position, out.swing);
    out.anchorSeparation = distance(out.worldFrameA.p, out.worldFrameB.p);
}

bool World::getJoint(JointId id, JointState& out) const
{
    if (!isValid(id))
    {
        return false;
    }
    fillJointState(id.index, out);
    return true;
}

template <class Change> WorldStatus World::changeJoint(JointId id, Change&& change)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleJointId;
    }
    Joint& joint = m_joints[id.index];
    JointDesc changed = joint.desc;
    change(changed);
    if (!validJointSettings(changed))
    {
        return WorldStatus::InvalidJointDesc;
    }
    joint.desc = changed;
    m_jointLinks[id.index] = linkOf(changed);
    wakeIsland(changed.bodyA.index);
    wakeIsland(changed.bodyB.index);
    return WorldStatus::Ok;
}

WorldStatus World::setJointMotor(JointId id, const JointMotor& motor)
{
    return changeJoint(id, [&](JointDesc& d) { d.motor = motor; });
}

WorldStatus World::setJointLimit(JointId id, const JointLimit& limit)
{
    const WorldStatus status = changeJoint(id, [&](JointDesc& d) { d.limit = limit; });
    if (status == WorldStatus::Ok)
    {
        m_joints[id.index].impulses.lower = 0.0f; // a moved bound starts cold
        m_joints[id.index].impulses.upper = 0.0f;
    }
    return status;
}

WorldStatus World::setJointSpring(JointId id, const JointSpring& spring)
{
    return changeJoint(id, [&](JointDesc& d) { d.spring = spring; });
}

WorldStatus World::setJointBreakThresholds(JointId id, float breakForce, float breakTorque)
{
    return changeJoint(id,
                       [&](JointDesc& d)
                       {
                           d.breakForce = breakForce;
                           d.breakTorque = breakTorque;
                       });
}

void World::wakeJointedIslands()
{
    if (m_jointCount == 0)
    {
        return;
    }
    const auto keepsAwake = [&](std::uint32_t i)
    {
        const Body& body = m_bodies[i];
        return !body.sleeping && body.type != BodyType::Static;
    };
    for (const JointLink& link : m_jointLinks)
    {
        if (!link.alive)
        {
            continue;
        }
        const std::uint32_t a = link.a;
        const std::uint32_t b = link.b;
        if (m_bodies[a].sleeping && keepsAwake(b))
        {
            wakeIsland(a);
        }
        else if (m_bodies[b].sleeping && keepsAwake(a))
        {
            wakeIsland(b);
        }
    }
}

void World::prepareJoints(int level, float h, float substepsInverse)
{
    const std::uint32_t begin = m_jointLevelStart[level];
    const std::uint32_t end = m_jointLevelStart[level + 1];
    if (begin == end)
    {
        return;
    }
    const float inverseH = 1.0f / h;
    const float hertz =
        std::min(m_config.jointHertz * static_cast<float>(1 << level), kJointHertzCap * inverseH);
    const Softness jointSoftness = makeSoftness(hertz, m_config.jointDampingRatio, h);
    forRange(end - begin, kJointGrain,
             [&](std::uint32_t first, std::uint32_t last, int)
             {
                 for (std::uint32_t k = begin + first; k < begin + last; ++k)
                 {
                     const Joint& joint = m_joints[m_jointSlots[k]];
                     const JointDesc& d = joint.desc;
                     JointConstraint& c = m_jointConstraints[k];
                     c = JointConstraint{};
                     c.type = d.type;
                     const auto side = [&](std::uint32_t slot, const Transform& frame, std::uint32_t& index,
                                           Vec3& anchor, Quat& axes, const SolverBodyMass*& mass)
                     {
                         index = m_solverIndex[slot];
                         mass = &m_solverMasses[index]; // the dummy's are zero
                         const BodySim& sim = m_sims[slot];
                         if (index == kStaticSolverIndex)
                         {
                             const Transform world = sim.transform * frame;
                             anchor = world.p;
                             axes = world.q;
                             return;
                         }
                         anchor = frame.p - sim.localCenter;
                         axes = frame.q;
                     };
                     side(d.bodyA.index, d.frameA, c.bodyA, c.localAnchorA, c.frameA, c.massA);
                     side(d.bodyB.index, d.frameB, c.bodyB, c.localAnchorB, c.frameB, c.massB);
                     // The blocks' effective masses are set at each substep's warm start.
                     const bool soft = d.hertz > 0.0f;
                     c.flags = static_cast<std::uint8_t>(
                         (soft ? kJointSoft : 0) | (d.limit.enabled ? kJointLimit : 0) |
                         (d.spring.enabled && d.spring.hertz > 0.0f ? kJointSpring : 0) |
                         (d.type == JointType::Distance && !d.spring.enabled ? kJointRigidLength : 0) |
                         (d.type == JointType::ConeTwist && d.coneAngle < kPi ? kJointCone : 0));
                     c.lockSoftness = soft ? makeSoftness(d.hertz, d.dampingRatio, h) : jointSoftness;
                     c.limitSoftness = jointSoftness;
                     c.springSoftness = makeSoftness(d.spring.hertz, d.spring.dampingRatio, h);
                     c.motorSoftness = makeSoftness(d.motor.hertz, d.motor.dampingRatio, h);
                     c.motorMode = (d.type == JointType::Hinge || d.type == JointType::Slider)
                                       ? d.motor.mode
                                       : MotorMode::Off;
                     c.lower = d.limit.lower;
                     c.upper = d.limit.upper;
                     c.coneAngle = d.coneAngle;
                     c.length = d.length;
                     c.springTarget = d.spring.target;
                     c.motorTarget = d.motor.targetPosition;
                     c.motorVelocity = d.motor.targetVelocity;
                     c.maxMotorImpulse = d.motor.maxForce * h;
                     c.impulses = scaled(joint.impulses, substepsInverse);
                     if (!(c.flags & kJointLimit))
                     {
                         c.impulses.lower = 0.0f;
                         c.impulses.upper = 0.0f;
                     }
                     if (c.motorMode == MotorMode::Off)
                     {
                         c.impulses.motor = 0.0f;
                     }
                     c.impulses.motor = std::clamp(c.impulses.motor, -c.maxMotorImpulse, c.maxMotorImpulse);
                 }
             });

    // Colour the level's joints, in order: the first colour that has neither of its moving bodies.
    const std::size_t words = (m_solverBodies.size() + 63) / 64;
    std::fill_n(m_jointColorBits.begin(), kJointColorCount * words, 0ull);
    std::uint32_t counts[kJointColorCount + 1] = {};
    std::uint32_t ballCounts[kJointColorCount + 1] = {};
    const std::uint32_t n = end - begin;
    m_jointColors.resize(n);
    m_levelHasLimitedJoints = false;
    m_levelTurnsJointedInertia = false;
    for (std::uint32_t k = 0; k < n; ++k)
    {
        const JointConstraint& c = m_jointConstraints[begin + k];
        m_levelHasLimitedJoints = m_levelHasLimitedJoints || (c.flags & (kJointLimit | kJointCone)) != 0;
        m_levelTurnsJointedInertia = m_levelTurnsJointedInertia || m_solverMotions[c.bodyA].gyroscopic ||
                                     m_solverMotions[c.bodyB].gyroscopic;
        std::uint32_t color = 0;
        for (; color < kJointColorCount; ++color)
        {
            std::uint64_t* bits = m_jointColorBits.data() + color * words;
            const bool freeA =
                c.bodyA == kStaticSolverIndex || ((bits[c.bodyA >> 6] >> (c.bodyA & 63)) & 1u) == 0;
            const bool freeB =
                c.bodyB == kStaticSolverIndex || ((bits[c.bodyB >> 6] >> (c.bodyB & 63)) & 1u) == 0;
            if (freeA && freeB)
            {
                if (c.bodyA != kStaticSolverIndex)
                {
                    bits[c.bodyA >> 6] |= 1ull << (c.bodyA & 63);
                }
                if (c.bodyB != kStaticSolverIndex)
                {
                    bits[c.bodyB >> 6] |= 1ull << (c.bodyB & 63);
                }
                break;
            }
        }
        ++counts[color];
        // A colour's plain ball joints go to the wide solver. A bundle keeps its bodies' inverse inertias for
        // the step: not for a body whose inertia turns with it (refreshJointedInertia updates those every
        // substep).
        const bool wide = color < kJointColorCount && c.type == JointType::Ball &&
                          (c.flags & (kJointLimit | kJointCone)) == 0 &&
                          !m_solverMotions[c.bodyA].gyroscopic && !m_solverMotions[c.bodyB].gyroscopic;
        ballCounts[color] += wide ? 1u : 0u;
        m_jointColors[k] = static_cast<std::uint8_t>(color | (wide ? kWideJointBit : 0u));
    }
    // Group by colour, each colour's plain ball joints first (the wide solver's, joint_solver.h's
    // BallJointBundles), then its other joints, each part in order (a counting sort). The joints beyond the
    // colours stay in order, all scalar.
    std::uint32_t cursor[kJointColorCount + 1];
    std::uint32_t ballCursor[kJointColorCount + 1];
    std::uint32_t start = 0;
    std::uint32_t bundles = 0;
    const std::uint32_t lanes = static_cast<std::uint32_t>(jointSolverLanes());
    for (std::uint32_t color = 0; color <= kJointColorCount; ++color)
    {
        m_jointColorStart[color] = start;
        ballCursor[color] = start;
        cursor[color] = start + ballCounts[color];
        m_jointBallEnd[color] = start + ballCounts[color];
        m_ballBundleStart[color] = bundles;
        bundles += (ballCounts[color] + lanes - 1) / lanes;
        start += counts[color];
    }
    m_jointColorStart[kJointColorCount + 1] = start;
    m_ballBundleStart[kJointColorCount + 1] = bundles;
    m_jointOrder.resize(n);
    for (std::uint32_t k = 0; k < n; ++k)
    {
        const std::uint32_t color = m_jointColors[k] & ~kWideJointBit;
        m_jointOrder[((m_jointColors[k] & kWideJointBit) != 0 ? ballCursor : cursor)[color]++] = begin + k;
    }
    // Each colour's ball joints, W to a bundle in order; the last bundle of a colour may be part full.
    resetBallBundles(m_ballBundles, bundles);
    for (std::uint32_t color = 0; color < kJointColorCount; ++color)
    {
        for (std::uint32_t i = m_jointColorStart[color]; i < m_jointBallEnd[color]; ++i)
        {
            const std::uint32_t slot = i - m_jointColorStart[color];
            m_ballBundles.lanes[(m_ballBundleStart[color] + slot / lanes) * lanes + slot % lanes] =
                m_jointOrder[i];
        }
    }
    forRange(bundles, ballBundleGrain(),
             [&](std::uint32_t first, std::uint32_t last, int)
             {
                 for (std::uint32_t bundle = first; bundle < last; ++bundle)
                 {
                     packBallBundle(m_ballBundles, bundle, m_jointConstraints, m_solverMotions);
                 }
             });
}

std::uint32_t World::jointStageColors()
{
    return kJointColorCount + 1;
}

std::uint32_t World::ballStageBlocks(std::uint32_t color) const
{
    const std::uint32_t bundles = m_ballBundleStart[color + 1] - m_ballBundleStart[color];
    return (bundles + ballBundleGrain() - 1) / ballBundleGrain();
}

std::uint32_t World::jointStageBlocks(std::uint32_t color) const
{
    // A colour: its ball bundles, kJointGrain joints' worth a block, then its other joints, kJointGrain a
    // block. The joints beyond the colours: one block.
    const std::uint32_t count = m_jointColorStart[color + 1] - m_jointColorStart[color];
    if (count == 0)
    {
        return 0;
    }
    if (color == kJointColorCount)
    {
        return 1;
    }
    const std::uint32_t others = m_jointColorStart[color + 1] - m_jointBallEnd[color];
    return ballStageBlocks(color) + (others + kJointGrain - 1) / kJointGrain;
}

void World::runJointStageBlock(JointPass pass, std::uint32_t color, std::uint32_t block, float inverseH)
{
    const std::span<SolverBody> bodies(m_solverBodies);
    const std::span<const SolverBodyMotion> motions(m_solverMotions);
    std::uint32_t first = m_jointColorStart[color];
    std::uint32_t last = m_jointColorStart[color + 1];
    if (color < kJointColorCount)
    {
        const std::uint32_t ballBlocks = ballStageBlocks(color);
        if (block < ballBlocks)
        {
            if (pass == JointPass::SolveLimited)
            {
                return; // plain ball joints have no limit
            }
            const std::uint32_t begin = m_ballBundleStart[color] + block * ballBundleGrain();
            const std::uint32_t end = std::min(begin + ballBundleGrain(), m_ballBundleStart[color + 1]);
            for (std::uint32_t bundle = begin; bundle < end; ++bundle)
            {
                if (pass == JointPass::WarmStart)
                {
                    warmStartBallBundle(m_ballBundles, bundle, bodies);
                }
                else
                {
                    solveBallBundle(m_ballBundles, bundle, bodies, motions, pass == JointPass::Solve);
                }
            }
            return;
        }
        first = m_jointBallEnd[color] + (block - ballBlocks) * kJointGrain;
        last = std::min(first + kJointGrain, last);
    }
    for (std::uint32_t k = first; k < last; ++k)
    {
        JointConstraint& c = m_jointConstraints[m_jointOrder[k]];
        switch (pass)
        {
        case JointPass::WarmStart:
            warmStartJoint(c, bodies, motions);
            break;
        case JointPass::Solve:
            solveJoint(c, bodies, motions, inverseH, true);
            break;
        case JointPass::Relax:
            solveJoint(c, bodies, motions, inverseH, false);
            break;
        case JointPass::SolveLimited:
            if ((c.flags & (kJointLimit | kJointCone)) != 0)
            {
                solveJoint(c, bodies, motions, inverseH, true);
            }
            break;
        }
    }
}

void World::runJointPass(JointPass pass, float inverseH)
{
    // Colour by colour, each colour's blocks on the pool's threads (they share no moving body), then the
    // joints that fit no colour, in order: the staged solver's stages, one parallelFor each.
    for (std::uint32_t color = 0; color < jointStageColors(); ++color)
    {
        forRange(jointStageBlocks(color), 1,
                 [&](std::uint32_t begin, std::uint32_t end, int)
                 {
                     for (std::uint32_t block = begin; block < end; ++block)
                     {
                         runJointStageBlock(pass, color, block, inverseH);
                     }
                 });
    }
}

void World::warmStartJoints(std::uint32_t begin, std::uint32_t end)
{
    if (begin != end)
    {
        runJointPass(JointPass::WarmStart, 0.0f);
    }
}

void World::solveJoints(std::uint32_t begin, std::uint32_t end, float inverseH, bool useBias)
{
    if (begin != end)
    {
        runJointPass(useBias ? JointPass::Solve : JointPass::Relax, inverseH);
        // Limits are inequalities that a chain of joints passes along: one Gauss-Seidel pass leaves a limb
        // struck hard past its limit (the joints solved after it move its bodies again), so the limited
        // joints get more passes, in the same colour order.
        for (int pass = 1; useBias && m_levelHasLimitedJoints && pass < m_config.limitIterations; ++pass)
        {
            runJointPass(JointPass::SolveLimited, inverseH);
        }
    }
}

void World::storeJointImpulses(std::uint32_t begin, std::uint32_t end, int substeps, float dt)
{
    const float inverseDt = 1.0f / dt;
    for (std::uint32_t bundle = 0; begin != end && bundle < m_ballBundles.count; ++bundle)
    {
        unpackBallBundle(m_ballBundles, bundle, m_jointConstraints);
    }
    for (std::uint32_t k = begin; k < end; ++k)
    {
        Joint& joint = m_joints[m_jointSlots[k]];
        const JointConstraint& c = m_jointConstraints[k];
        const JointImpulses total = scaled(c.impulses, static_cast<float>(substeps));
        joint.impulses = impulsesFinite(total, kMaxContactImpulse) ? total : JointImpulses{};
        // What the step applied to B, in world terms, along the axes at the step's start.
        const JointImpulses& i = joint.impulses;
        Vec3 linear = i.linear;
        Vec3 angular = i.angular;
        if (joint.desc.type != JointType::Ball && joint.desc.type != JointType::Fixed)
        {
            const Transform frameA = m_sims[joint.desc.bodyA.index].transform * joint.desc.frameA;
            const Transform frameB = m_sims[joint.desc.bodyB.index].transform * joint.desc.frameB;
            const Vec3 axisA = rotate(frameA.q, Vec3{1.0f, 0.0f, 0.0f});
            const float free = i.spring + i.motor + i.lower - i.upper;
            switch (joint.desc.type)
            {
            case JointType::Hinge:
                angular = angular + axisA * free;
                break;
            case JointType::Slider:
                linear = linear + axisA * free;
                break;
            case JointType::Distance:
            {
                const Vec3 d = frameB.p - frameA.p;
                const float len = length(d);
                linear = len > 1e-6f ? d * ((i.axial + free) / len) : Vec3{};
                break;
            }
            case JointType::ConeTwist:
            {
                const Vec3 axisB = rotate(frameB.q, Vec3{1.0f, 0.0f, 0.0f});
                const Vec3 half = normalizeOr(axisA + axisB, axisA);
                const Vec3 n = cross(axisA, axisB);
                const float sine = length(n);
                angular =
                    angular + half * (i.lower - i.upper) + (sine > 1e-6f ? n * (-i.swing / sine) : Vec3{});
                break;
            }
            case JointType::Ball:
            case JointType::Fixed:
                break;
            }
        }
        joint.force = linear * inverseDt;
        joint.torque = angular * inverseDt;
    }
}

void World::breakJoints()
{
    if (m_jointCount == 0)
    {
        return;
    }
    for (std::uint32_t j = 0; j < static_cast<std::uint32_t>(m_jointLinks.size()); ++j)
    {
        if (!m_jointLinks[j].alive || !m_jointLinks[j].breakable)
        {
            continue;
        }
        Joint& joint = m_joints[j];
        if (!(length(joint.force) > joint.desc.breakForce) &&
            !(length(joint.torque) > joint.desc.breakTorque))
        {
            continue;
        }
        JointEvent event;
        event.joint = {j, joint.generation};
        event.bodyA = joint.desc.bodyA;
        event.bodyB = joint.desc.bodyB;
        event.kind = JointEventKind::Broke;
        event.force = joint.force;
        event.torque = joint.torque;
        event.userData = joint.desc.userData;
        m_jointEvents.push_back(event);
        ++m_stats.brokenJoints;
        removeJoint(j);
    }
}

} // namespace polytope::physics

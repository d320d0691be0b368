// Suite "joints": jointed scenes, Polytope against Bullet 3.24 in the same run (issue 18, item 8).
//
// Cases:
//  - joint_grid: Box2D's joint_grid benchmark in 3D. 100 x 100 spheres of radius 0.4 m (density 1000 kg/m^3),
//    1 m apart in the vertical xy plane (column c, row r at (c, -r, 0)), each joined to its right and lower
//    neighbours by a ball joint whose anchor is the midpoint between them: 10,000 bodies and 19,800 joints.
//    The top left sphere is static (the pinned corner); gravity pulls the rest, so the grid swings down
//    from that corner like a cloth, stretching every joint. The spheres never collide with each other
//    (Polytope: all in one collision group; Bullet: a filter group bit that the spheres' mask leaves out),
//    and there is no ground. Bullet: btPoint2PointConstraint with the same pivots.
//  - joint_grid_zero_gravity: the same grid without gravity, as Box2D v3's benchmark now runs it ("to isolate
//    joint performance"): nothing moves, so it times the joint solve alone, at each engine's default
//    iterations (Polytope's base substeps, Bullet's 10 iterations), and the errors stay at rounding.
//  - ragdolls: the `ragdolls` built-in scene (scenes.h: 20 humanoid ragdolls of 11 bodies dropped into a
//    pile on the ground plane). Bullet gets the same ragdoll from the same data (humanoidRagdoll(),
//    ragdollPilePlacement): the same boxes and capsules at the same poses, Polytope's masses and inertias
//    (computeMassProperties), btConeTwistConstraint with both swing spans the cone angle and the twist
//    span the twist limit (the model's cones are round and its twist ranges symmetric for this),
//    btHingeConstraint with the same angle limits (its hinge axis is its frames' z axis, and its angle
//    turns the other way about it: so its frames are ours turned to put their z axis on our -x, the x axis
//    on our y; its angle is then ours, sign included, as a two-body check of getHingeAngle showed). A
//    ragdoll's parts do not collide with each other (Polytope: one collision group per ragdoll; Bullet: an
//    overlap filter callback comparing the ragdolls' numbers, kept in each body's user index). Friction 0.6
//    (Bullet: sqrt(0.6) on every body, since it multiplies the two). Bullet's limits keep their default
//    softness and bias factors, and its joints the solver's defaults: what its users run.
// Gravity -9.81 m/s^2 along y; 60 Hz steps (Bullet: stepSimulation(1/60, 0), one step per call; its
// btSequentialImpulseConstraintSolver at its default 10 iterations). Sleeping off in both engines
// (Polytope: enableSleep false; Bullet: DISABLE_DEACTIVATION on every body).
//
// Records per case: "polytope_1t" and "polytope_2t" (WorldConfig::threads 1 and 2: the same simulation bit
// for bit) and "bullet". Each engine runs each case twice, the engines' order reversed the second time, to
// even out the machine's load. A run steps `warmup_steps` untimed, then `steps` timed (--seconds S: S * 60
// timed steps). Figures:
//   ms_per_step_mean, ms_per_step_p99, steps_per_s: the wall time of each timed step call, over both runs
//   ratio_vs_bullet: Polytope's steps_per_s over Bullet's (above 1, Polytope is faster)
//   max_joint_error_m: the largest distance between a joint's two anchors (Polytope: JointState::
//     anchorSeparation; Bullet: the two pivots, each at its body's pose) of any joint after any step, warm-up
//     included, in either run
//   joint_error_mean_m: that distance averaged over the joints after the last step (first run)
//   ragdolls only, the largest excursion beyond a limit after any step, in degrees (negative: never reached),
//   measured the same way for both engines from the joint frames at the bodies' poses (the angle between
//   the two twist axes; the twist of B about it relative to A, by swing-twist decomposition):
//   max_cone_excess_deg, max_twist_excess_deg, max_hinge_excess_deg
//   non_finite: bodies whose position is not finite at the end (first run)
//   substeps_mean: Polytope only, the most substeps any island was solved with (StepStats::mostSubsteps),
//     averaged over the timed steps: the hanging grid is raised to keep its most loaded joint's sag small
//   phase_step_ms, phase_setup_ms, phase_solver_ms: Polytope only, StepStats::profile per timed step
//
// --scene NAME (repeatable) picks cases: joint_grid, joint_grid_zero_gravity, ragdolls. About 5 minutes on
// the 2-core development machine (most of it joint_grid).
#include "bench_common.h"
#include "bullet_world.h"

#include "polytope/physics/mass.h"
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <btBulletDynamicsCommon.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::bench
{
namespace
{
namespace ph = polytope::physics;

constexpr float kDt = 1.0f / 60.0f;
constexpr double kStepsPerSecond = 60.0;
constexpr int kRepetitions = 2; ///< runs per engine and case, the engines' order reversed the second time
constexpr float kDegree = ph::kPi / 180.0f;

// ---- The joint grid --------------------------------------------------------------------------------------

constexpr int kGridSide = 100;
constexpr int kGridBodies = kGridSide * kGridSide;
constexpr int kGridJoints = 2 * kGridSide * (kGridSide - 1); // 19,800
constexpr float kGridRadius = 0.4f;
constexpr float kGridSpacing = 1.0f;
constexpr float kGridDensity = 1000.0f;
/// Bullet: the spheres' filter group, which their mask leaves out (above Bullet's own bits 1 .. 32).
constexpr int kGridFilterBit = 1 << 6;

constexpr int kGridWarmupSteps = 30;
constexpr int kGridTimedSteps = 300;
constexpr int kRagdollWarmupSteps = 30;
constexpr int kRagdollTimedSteps = 600;

int gridIndex(int column, int row)
{
    return row * kGridSide + column;
}

ph::Vec3 gridPosition(int column, int row)
{
    return {kGridSpacing * static_cast<float>(column), -kGridSpacing * static_cast<float>(row), 0.0f};
}

/// One ball joint of the grid: bodies by index and the anchors in their local frames.
struct GridJoint
{
    int a = 0;
    int b = 0;
    ph::Vec3 anchorA{};
    ph::Vec3 anchorB{};
};

/// The grid's joints: to the right neighbour, then to the lower one, body by body in index order.
std::vector<GridJoint> gridJoints()
{
    std::vector<GridJoint> joints;
    joints.reserve(kGridJoints);
    const float half = 0.5f * kGridSpacing;
    for (int row = 0; row < kGridSide; ++row)
    {
        for (int column = 0; column < kGridSide; ++column)
        {
            if (column + 1 < kGridSide)
            {
                joints.push_back({gridIndex(column, row),
                                  gridIndex(column + 1, row),
                                  {half, 0.0f, 0.0f},
                                  {-half, 0.0f, 0.0f}});
            }
            if (row + 1 < kGridSide)
            {
                joints.push_back({gridIndex(column, row),
                                  gridIndex(column, row + 1),
                                  {0.0f, -half, 0.0f},
                                  {0.0f, half, 0.0f}});
            }
        }
    }
    return joints;
}

// ---- Joint angles, measured the same way for both engines
// ---------------------------------------------------

/// The largest excursions beyond the limits seen so far (radians; negative: the limit was never reached).
struct LimitExcess
{
    float cone = -ph::kPi;
    float twist = -ph::kPi;
    float hinge = -ph::kPi;
};

/// Swing (the angle between the frames' x axes) and twist (B's turn about its x axis relative to A, by
/// swing-twist decomposition of B's rotation in A's frame; for a hinge, its angle) of two world frames.
void frameAngles(const ph::Quat& a, const ph::Quat& b, float& swing, float& twist)
{
    const ph::Vec3 axisA = ph::rotate(a, {1.0f, 0.0f, 0.0f});
    const ph::Vec3 axisB = ph::rotate(b, {1.0f, 0.0f, 0.0f});
    swing = std::acos(std::clamp(ph::dot(axisA, axisB), -1.0f, 1.0f));
    const ph::Quat relative = ph::conjugate(a) * b;
    twist = 2.0f * std::atan2(relative.x, relative.w);
    if (twist > ph::kPi)
    {
        twist -= 2.0f * ph::kPi;
    }
    else if (twist < -ph::kPi)
    {
        twist += 2.0f * ph::kPi;
    }
}

/// Notes how far beyond its limits a cone-twist or hinge joint with world frames a and b is.
void noteLimits(ph::JointType type, float coneAngle, const ph::JointLimit& limit, const ph::Quat& a,
                const ph::Quat& b, LimitExcess& excess)
{
    float swing = 0.0f;
    float twist = 0.0f;
    frameAngles(a, b, swing, twist);
    const float beyond = std::max(twist - limit.upper, limit.lower - twist);
    if (type == ph::JointType::ConeTwist)
    {
        excess.cone = std::max(excess.cone, swing - coneAngle);
        excess.twist = std::max(excess.twist, beyond);
    }
    else if (type == ph::JointType::Hinge)
    {
        excess.hinge = std::max(excess.hinge, beyond);
    }
}

// ---- One run's figures ------------------------------------------------------------------------------------

struct RunFigures
{
    std::vector<double> msPerStep;    ///< timed steps, over both runs
    double maxJointErrorMeters = 0.0; ///< over every step of both runs
    double finalErrorMeanMeters = 0.0;
    LimitExcess limits;
    int nonFinite = 0;
    ph::StepProfile phaseSums{}; ///< Polytope: StepStats::profile summed over the timed steps
    double substepSum = 0.0;     ///< Polytope: StepStats::mostSubsteps summed over the timed steps
};

enum class Case : std::uint8_t
{
    JointGrid,
    JointGridZeroGravity,
    Ragdolls,
};

ph::Vec3 gravityOf(Case which)
{
    return which == Case::JointGridZeroGravity ? ph::Vec3{} : ph::WorldConfig{}.gravity;
}

// ---- Polytope -------------------------------------------------------------------------------------------

std::unique_ptr<ph::World> buildPolytope(Case which, int threads)
{
    ph::WorldConfig config;
    config.threads = threads;
    config.enableSleep = false;
    config.gravity = gravityOf(which);
    auto world = std::make_unique<ph::World>(config);
    if (which == Case::Ragdolls)
    {
        if (!ph::buildRagdolls(*world))
        {
            std::fprintf(stderr, "joints: the ragdolls scene did not build\n");
            return nullptr;
        }
        return world;
    }
    std::vector<ph::BodyId> bodies(kGridBodies);
    for (int row = 0; row < kGridSide; ++row)
    {
        for (int column = 0; column < kGridSide; ++column)
        {
            ph::BodyDesc desc;
            desc.type = row == 0 && column == 0 ? ph::BodyType::Static : ph::BodyType::Dynamic;
            desc.shape = ph::Shape::makeSphere(kGridRadius);
            desc.transform.p = gridPosition(column, row);
            desc.density = kGridDensity;
            desc.group = 1;
            const ph::CreateBodyResult made = world->createBody(desc);
            if (made.status != ph::WorldStatus::Ok)
            {
                std::fprintf(stderr, "joints: joint_grid: createBody refused\n");
                return nullptr;
            }
            bodies[static_cast<std::size_t>(gridIndex(column, row))] = made.id;
        }
    }
    for (const GridJoint& j : gridJoints())
    {
        ph::JointDesc desc;
        desc.type = ph::JointType::Ball;
        desc.bodyA = bodies[static_cast<std::size_t>(j.a)];
        desc.bodyB = bodies[static_cast<std::size_t>(j.b)];
        desc.frameA.p = j.anchorA;
        desc.frameB.p = j.anchorB;
        if (world->createJoint(desc).status != ph::WorldStatus::Ok)
        {
            std::fprintf(stderr, "joints: joint_grid: createJoint refused\n");
            return nullptr;
        }
    }
    return world;
}

/// After a step: the largest anchor separation, and for the ragdolls the limit excursions.
void samplePolytope(const ph::World& world, Case which, RunFigures& f, double* errorSum)
{
    world.forEachJoint(
        [&](const ph::JointState& state)
        {
            f.maxJointErrorMeters =
                std::max(f.maxJointErrorMeters, static_cast<double>(state.anchorSeparation));
            if (errorSum != nullptr)
            {
                *errorSum += state.anchorSeparation;
            }
            if (which == Case::Ragdolls)
            {
                noteLimits(state.desc.type, state.desc.coneAngle, state.desc.limit, state.worldFrameA.q,
                           state.worldFrameB.q, f.limits);
            }
        });
}

void runPolytope(Case which, int threads, int warmup, int timed, bool first, RunFigures& f)
{
    const std::unique_ptr<ph::World> world = buildPolytope(which, threads);
    if (!world)
    {
        return;
    }
    for (int s = 0; s < warmup + timed; ++s)
    {
        const auto t0 = Clock::now();
        world->step(kDt);
        const double ms = secondsSince(t0) * 1e3;
        if (s >= warmup)
        {
            f.msPerStep.push_back(ms);
            const ph::StepProfile& p = world->stepStats().profile;
            f.phaseSums.step += p.step;
            f.phaseSums.setup += p.setup;
            f.phaseSums.solver += p.solver;
            f.substepSum += world->stepStats().mostSubsteps;
        }
        const bool last = s + 1 == warmup + timed;
        double errorSum = 0.0;
        samplePolytope(*world, which, f, last && first ? &errorSum : nullptr);
        if (last && first)
        {
            f.finalErrorMeanMeters = errorSum / std::max<double>(1.0, world->jointCount());
        }
    }
    if (first)
    {
        world->forEachBody([&](const ph::BodyState& b)
                           { f.nonFinite += ph::isFinite(b.transform.p) ? 0 : 1; });
    }
}

// ---- Bullet ---------------------------------------------------------------------------------------------

btVector3 toBullet(const ph::Vec3& v)
{
    return {v.x, v.y, v.z};
}

btQuaternion toBullet(const ph::Quat& q)
{
    return {q.x, q.y, q.z, q.w};
}

btTransform toBullet(const ph::Transform& t)
{
    return btTransform(toBullet(t.q), toBullet(t.p));
}

ph::Quat fromBullet(const btQuaternion& q)
{
    return {q.x(), q.y(), q.z(), q.w()};
}

/// Bodies of the same ragdoll (the same positive user index) do not collide; the group and mask test
/// Bullet applies without a callback still holds.
struct SameRagdollFilter final : btOverlapFilterCallback
{
    bool needBroadphaseCollision(btBroadphaseProxy* a, btBroadphaseProxy* b) const override
    {
        if ((a->m_collisionFilterGroup & b->m_collisionFilterMask) == 0 ||
            (b->m_collisionFilterGroup & a->m_collisionFilterMask) == 0)
        {
            return false;
        }
        const int ragdollA = static_cast<const btCollisionObject*>(a->m_clientObject)->getUserIndex();
        const int ragdollB = static_cast<const btCollisionObject*>(b->m_clientObject)->getUserIndex();
        return ragdollA <= 0 || ragdollA != ragdollB;
    }
};

/// A Bullet joint with the frames the bench measures it by (ours: Bullet's hinge frames are turned).
struct BulletJoint
{
    std::unique_ptr<btTypedConstraint> constraint;
    const btRigidBody* a = nullptr;
    const btRigidBody* b = nullptr;
    ph::Transform frameA{}; ///< in A's local frame (A's origin is its centre of mass: symmetric shapes)
    ph::Transform frameB{};
    int ragdollJoint = -1; ///< index into the model's joints; -1 for the grid
};

struct BulletScene
{
    BulletDynamics dynamics;
    btDiscreteDynamicsWorld& world = dynamics.world;
    SameRagdollFilter filter;
    std::vector<std::unique_ptr<btCollisionShape>> shapes;
    std::vector<std::unique_ptr<btDefaultMotionState>> motionStates;
    std::vector<std::unique_ptr<btRigidBody>> bodies;
    std::vector<BulletJoint> joints;

    BulletScene() { world.getPairCache()->setOverlapFilterCallback(&filter); }
    BulletScene(const BulletScene&) = delete;
    BulletScene& operator=(const BulletScene&) = delete;
    ~BulletScene()
    {
        for (BulletJoint& j : joints)
        {
            world.removeConstraint(j.constraint.get());
        }
        for (auto& body : bodies)
        {
            world.removeRigidBody(body.get());
        }
    }

    /// A body at `pose` with Polytope's mass properties for `shape` (0 mass: static).
    btRigidBody& add(btCollisionShape* shape, const ph::Transform& pose, const ph::MassProperties& mass,
                     float friction, int group, int mask)
    {
        const btVector3 inertia(mass.inertia.c0.x, mass.inertia.c1.y, mass.inertia.c2.z);
        auto motion = std::make_unique<btDefaultMotionState>(toBullet(pose));
        btRigidBody::btRigidBodyConstructionInfo info(mass.mass, motion.get(), shape, inertia);
        info.m_friction = std::sqrt(friction);
        auto body = std::make_unique<btRigidBody>(info);
        body->setActivationState(DISABLE_DEACTIVATION);
        world.addRigidBody(body.get(), group, mask);
        motionStates.push_back(std::move(motion));
        bodies.push_back(std::move(body));
        return *bodies.back();
    }

    void join(std::unique_ptr<btTypedConstraint> constraint, const btRigidBody& a, const btRigidBody& b,
              const ph::Transform& frameA, const ph::Transform& frameB, int ragdollJoint)
    {
        world.addConstraint(constraint.get(), false);
        joints.push_back({std::move(constraint), &a, &b, frameA, frameB, ragdollJoint});
    }
};

std::unique_ptr<BulletScene> buildBulletGrid(Case which)
{
    auto s = std::make_unique<BulletScene>();
    s->world.setGravity(toBullet(gravityOf(which)));
    s->shapes.push_back(std::make_unique<btSphereShape>(kGridRadius));
    btCollisionShape* sphere = s->shapes.back().get();
    const ph::MassProperties mass = ph::computeMassProperties(ph::SphereShape{kGridRadius}, kGridDensity);
    s->bodies.reserve(kGridBodies);
    const int mask = btBroadphaseProxy::AllFilter & ~kGridFilterBit;
    for (int row = 0; row < kGridSide; ++row)
    {
        for (int column = 0; column < kGridSide; ++column)
        {
            const bool pinned = row == 0 && column == 0;
            s->add(sphere, {gridPosition(column, row), {}}, pinned ? ph::MassProperties{} : mass, 0.6f,
                   kGridFilterBit, mask);
        }
    }
    s->joints.reserve(kGridJoints);
    for (const GridJoint& j : gridJoints())
    {
        btRigidBody& a = *s->bodies[static_cast<std::size_t>(j.a)];
        btRigidBody& b = *s->bodies[static_cast<std::size_t>(j.b)];
        s->join(std::make_unique<btPoint2PointConstraint>(a, b, toBullet(j.anchorA), toBullet(j.anchorB)), a,
                b, {j.anchorA, {}}, {j.anchorB, {}}, -1);
    }
    return s;
}

/// Turns a frame of ours (x: the hinge axis) into Bullet's hinge frame, whose z axis is the hinge axis and
/// whose angle grows turning the other way about it (btHingeConstraint::getHingeAngle): its x, y, z axes on
/// our y, -z, -x, so that its angle is ours.
ph::Transform bulletHingeFrame(const ph::Transform& ours)
{
    return {ours.p, ours.q * ph::Quat{-0.5f, -0.5f, 0.5f, 0.5f}};
}

std::unique_ptr<BulletScene> buildBulletRagdolls()
{
    auto s = std::make_unique<BulletScene>();
    s->world.setGravity(toBullet(ph::WorldConfig{}.gravity));
    const ph::RagdollModel& model = ph::humanoidRagdoll();

    s->shapes.push_back(std::make_unique<btStaticPlaneShape>(btVector3(0, 1, 0), 0.0f));
    btRigidBody& ground =
        s->add(s->shapes.back().get(), {}, {}, model.friction, btBroadphaseProxy::StaticFilter,
               btBroadphaseProxy::AllFilter ^ btBroadphaseProxy::StaticFilter);
    ground.setUserIndex(0);

    std::array<btCollisionShape*, ph::kRagdollPartCount> partShapes{};
    std::array<ph::MassProperties, ph::kRagdollPartCount> partMasses{};
    for (std::size_t p = 0; p < model.parts.size(); ++p)
    {
        const ph::Shape& shape = model.parts[p].shape;
        if (shape.type == ph::ShapeType::Box)
        {
            s->shapes.push_back(std::make_unique<btBoxShape>(toBullet(shape.box.halfExtents)));
        }
        else
        {
            s->shapes.push_back(
                std::make_unique<btCapsuleShape>(shape.capsule.radius, 2.0f * shape.capsule.halfHeight));
        }
        partShapes[p] = s->shapes.back().get();
        partMasses[p] = ph::computeMassProperties(shape, model.density);
    }

    for (int r = 0; r < ph::kRagdollPileCount; ++r)
    {
        const ph::Transform placement = ph::ragdollPilePlacement(r);
        std::array<btRigidBody*, ph::kRagdollPartCount> parts{};
        for (std::size_t p = 0; p < model.parts.size(); ++p)
        {
            const ph::Transform pose = placement * ph::Transform{model.parts[p].position, {}};
            parts[p] = &s->add(partShapes[p], pose, partMasses[p], model.friction,
                               btBroadphaseProxy::DefaultFilter, btBroadphaseProxy::AllFilter);
            parts[p]->setUserIndex(r + 1);
        }
        for (std::size_t j = 0; j < model.joints.size(); ++j)
        {
            const ph::RagdollJointDesc& joint = model.joints[j];
            btRigidBody& a = *parts[static_cast<std::size_t>(joint.parent)];
            btRigidBody& b = *parts[static_cast<std::size_t>(joint.child)];
            const ph::Transform frameA = ph::ragdollLocalFrame(model, joint, joint.parent);
            const ph::Transform frameB = ph::ragdollLocalFrame(model, joint, joint.child);
            std::unique_ptr<btTypedConstraint> constraint;
            if (joint.type == ph::JointType::ConeTwist)
            {
                auto cone = std::make_unique<btConeTwistConstraint>(a, b, toBullet(frameA), toBullet(frameB));
                cone->setLimit(joint.coneAngle, joint.coneAngle, joint.limit.upper);
                constraint = std::move(cone);
            }
            else
            {
                auto hinge = std::make_unique<btHingeConstraint>(a, b, toBullet(bulletHingeFrame(frameA)),
                                                                 toBullet(bulletHingeFrame(frameB)));
                hinge->setLimit(joint.limit.lower, joint.limit.upper);
                constraint = std::move(hinge);
            }
            s->join(std::move(constraint), a, b, frameA, frameB, static_cast<int>(j));
        }
    }
    return s;
}

ph::Transform poseOf(const btRigidBody& body)
{
    const btTransform& t = body.getCenterOfMassTransform();
    const btVector3& p = t.getOrigin();
    return {{p.x(), p.y(), p.z()}, fromBullet(t.getRotation())};
}

void sampleBullet(const BulletScene& scene, RunFigures& f, double* errorSum)
{
    const ph::RagdollModel& model = ph::humanoidRagdoll();
    for (const BulletJoint& j : scene.joints)
    {
        const ph::Transform worldA = poseOf(*j.a) * j.frameA;
        const ph::Transform worldB = poseOf(*j.b) * j.frameB;
        const double separation = ph::distance(worldA.p, worldB.p);
        f.maxJointErrorMeters = std::max(f.maxJointErrorMeters, separation);
        if (errorSum != nullptr)
        {
            *errorSum += separation;
        }
        if (j.ragdollJoint >= 0)
        {
            const ph::RagdollJointDesc& joint = model.joints[static_cast<std::size_t>(j.ragdollJoint)];
            noteLimits(joint.type, joint.coneAngle, joint.limit, worldA.q, worldB.q, f.limits);
        }
    }
}

void runBullet(Case which, int warmup, int timed, bool first, RunFigures& f)
{
    const std::unique_ptr<BulletScene> scene =
        which == Case::Ragdolls ? buildBulletRagdolls() : buildBulletGrid(which);
    for (int s = 0; s < warmup + timed; ++s)
    {
        const auto t0 = Clock::now();
        scene->world.stepSimulation(kDt, 0);
        const double ms = secondsSince(t0) * 1e3;
        if (s >= warmup)
        {
            f.msPerStep.push_back(ms);
        }
        const bool last = s + 1 == warmup + timed;
        double errorSum = 0.0;
        sampleBullet(*scene, f, last && first ? &errorSum : nullptr);
        if (last && first)
        {
            f.finalErrorMeanMeters =
                errorSum / std::max<double>(1.0, static_cast<double>(scene->joints.size()));
        }
    }
    if (first)
    {
        for (const auto& body : scene->bodies)
        {
            const btVector3& p = body->getCenterOfMassPosition();
            f.nonFinite += std::isfinite(p.x()) && std::isfinite(p.y()) && std::isfinite(p.z()) ? 0 : 1;
        }
    }
}

// ---- The suite ------------------------------------------------------------------------------------------

using Engine = PeerEngine;
constexpr const auto& kEngines = kPeerEngines;
constexpr const auto& kEngineNames = kPeerEngineNames;

double mean(const std::vector<double>& v)
{
    double sum = 0.0;
    for (const double x : v)
    {
        sum += x;
    }
    return v.empty() ? NAN : sum / static_cast<double>(v.size());
}

void runCase(Report& report, Case which, const char* caseName, int warmup, int timed)
{
    std::array<RunFigures, std::size(kEngines)> figures;
    for (int rep = 0; rep < kRepetitions; ++rep)
    {
        for (std::size_t e = 0; e < std::size(kEngines); ++e)
        {
            const std::size_t engine = rep % 2 == 0 ? e : std::size(kEngines) - 1 - e;
            const bool first = rep == 0;
            switch (kEngines[engine])
            {
            case Engine::Polytope1:
                runPolytope(which, 1, warmup, timed, first, figures[engine]);
                break;
            case Engine::Polytope2:
                runPolytope(which, 2, warmup, timed, first, figures[engine]);
                break;
            case Engine::Bullet:
                runBullet(which, warmup, timed, first, figures[engine]);
                break;
            }
        }
    }
    const bool grid = which != Case::Ragdolls;
    const std::int64_t bodies = grid ? kGridBodies : ph::kRagdollPileCount * ph::kRagdollPartCount;
    const int joints = grid ? kGridJoints : ph::kRagdollPileCount * ph::kRagdollJointCount;
    const double bulletStepsPerSecond = 1e3 / mean(figures[std::size(kEngines) - 1].msPerStep);
    for (std::size_t e = 0; e < std::size(kEngines); ++e)
    {
        RunFigures& f = figures[e];
        const double ms = mean(f.msPerStep);
        const bool polytope = kEngines[e] != Engine::Bullet;
        Record& r = report.add(caseName, kEngineNames[e], bodies)
                        .add("joints", joints)
                        .add("warmup_steps", warmup)
                        .add("steps", timed)
                        .add("ms_per_step_mean", ms)
                        .add("ms_per_step_p99", quantile(f.msPerStep, 0.99))
                        .add("steps_per_s", 1e3 / ms);
        if (polytope)
        {
            r.add("ratio_vs_bullet", 1e3 / ms / bulletStepsPerSecond);
        }
        r.add("max_joint_error_m", f.maxJointErrorMeters).add("joint_error_mean_m", f.finalErrorMeanMeters);
        if (!grid)
        {
            r.add("max_cone_excess_deg", f.limits.cone / kDegree)
                .add("max_twist_excess_deg", f.limits.twist / kDegree)
                .add("max_hinge_excess_deg", f.limits.hinge / kDegree);
        }
        r.add("non_finite", f.nonFinite);
        if (polytope)
        {
            const double steps = static_cast<double>(f.msPerStep.size());
            r.add("substeps_mean", f.substepSum / steps)
                .add("phase_step_ms", f.phaseSums.step / steps)
                .add("phase_setup_ms", f.phaseSums.setup / steps)
                .add("phase_solver_ms", f.phaseSums.solver / steps);
        }
    }
}

constexpr const char* kCases[] = {"joint_grid", "joint_grid_zero_gravity", "ragdolls"};

bool wanted(const SuiteOptions& options, std::string_view caseName)
{
    return options.scenes.empty() ||
           std::find(options.scenes.begin(), options.scenes.end(), caseName) != options.scenes.end();
}

} // namespace

void runJointsSuite(Report& report, const SuiteOptions& options)
{
    for (const std::string& name : options.scenes)
    {
        if (std::none_of(std::begin(kCases), std::end(kCases), [&](const char* c) { return name == c; }))
        {
            std::fprintf(stderr, "polytope-bench joints: no case '%s' in this suite\n", name.c_str());
        }
    }
    const auto timedSteps = [&](int fallback)
    {
        return options.seconds > 0.0
                   ? std::max(1, static_cast<int>(std::lround(options.seconds * kStepsPerSecond)))
                   : fallback;
    };
    if (wanted(options, "joint_grid"))
    {
        runCase(report, Case::JointGrid, "joint_grid", kGridWarmupSteps, timedSteps(kGridTimedSteps));
    }
    if (wanted(options, "joint_grid_zero_gravity"))
    {
        runCase(report, Case::JointGridZeroGravity, "joint_grid_zero_gravity", kGridWarmupSteps,
                timedSteps(kGridTimedSteps));
    }
    if (wanted(options, "ragdolls"))
    {
        runCase(report, Case::Ragdolls, "ragdolls", kRagdollWarmupSteps, timedSteps(kRagdollTimedSteps));
    }
}

} // namespace polytope::bench

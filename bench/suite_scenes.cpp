// Suite "scenes": Polytope and Bullet 3.24 (btDiscreteDynamicsWorld with its default settings) on the same
// built-in scenes in the same run, 60 Hz, sleeping off.
//
// The scenes are defined once (physics/scenes.h). Bullet's copy is made from the Polytope world after it is
// built: every static plane and box becomes a Bullet body with the same transform, shape and mass; friction
// sqrt(mu) per body, since Bullet multiplies the two bodies' values (effective mu: 0.6, or 0.2 in
// jolt_pyramid). Bullet keeps its default collision margin (0.04, inside btBoxShape's extent): that is what
// its users run.
//
// Columns: "polytope_1t" and "polytope_2t" (WorldConfig::threads 1 and 2: the same simulation, bit for
// bit, so only the times differ) and "bullet" (one thread: btDiscreteDynamicsWorld has no threads).
//
// Figures per scene and engine, measured the same way for both (StabilityProbe, from every body's pose and
// velocities after each step, outside the timed part; the scenes here hold boxes and planes only):
//   drift_m              largest distance any dynamic body's centre moved from its start, over the run (for
//                        piles and jolt_pyramid this includes the fall, so it is no stability measure there)
//   max_sink_m           deepest penetration over the run of a dynamic box into the ground or into another
//                        box: for a plane, the depth of the box's lowest corner below it; for two boxes,
//                        their exact penetration depth (the least overlap over the 15 separating-axis
//                        candidates, which for two boxes is the minimum translation distance), over every
//                        pair whose world bounding boxes overlap. In the stacks and pyramids that is the sink
//                        of each box into the one below (and of neighbours pressed side by side). Float
//                        arithmetic: about 1e-5 m of resolution at 50 m from the origin
//   resting_ke_j_per_kg  kinetic energy (translational and rotational, box inertia) summed over the dynamic
//                        bodies, divided by their total mass, averaged over the last second of the run
//   sag_m                heavy_on_light only: the largest drop of the heaviest body's centre below its start
//   ms_per_step_mean, ms_per_step_p99, steps_per_s: wall time of each step call
//   below_ground         dynamic bodies whose centre ended below y = 0 (the ground's top in every scene here)
//   passes, steps_per_s_fastest, steps_per_s_slowest: with --repeat N (N > 1), each engine runs the scene N
//                        times, in rounds (1t, 2t, Bullet, then again), and the record is the median pass
//                        (by mean step time), with the range of steps/s over all N; a shared machine's slow
//                        spells then fall on every engine rather than on whichever ran during them
//   substeps_max         Polytope only: the most substeps any island was solved with over the run
//   (WorldConfig
//                        substeps, raised for slender loaded islands and large mass ratios: world.h)
//
// Simulated seconds per scene: the table in runScenesSuite. Stacks, pyramids up to pyramid60 and
// heavy_on_light run 60 s, as issue 16 judges them; pyramid100 20 s (at 60 s its two runs alone take over
// four minutes here: use --seconds 60 to judge it); jolt_pyramid and the piles 10 s, since they are about
// speed. --seconds S sets every scene's.
#include "bench_common.h"
#include "bullet_world.h"

#include "polytope/physics/scenes.h"

#include <btBulletDynamicsCommon.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

namespace polytope::bench
{
namespace
{
namespace ph = polytope::physics;

constexpr float kDt = 1.0f / 60.0f;
constexpr int kStepsPerSecond = 60;

/// One box of the scene, as the probe sees it (planes are kept apart).
struct ProbeBox
{
    ph::Vec3 halfExtents{};
    float mass = 0.0f; ///< kg; 0 for static boxes
    bool dynamic = false;
};

/// What both engines are given: the boxes and planes of the scene, in the Polytope world's body order.
struct SceneSetup
{
    ph::SceneName name;
    float friction = ph::kSceneFriction;
    std::vector<ProbeBox> boxes;
    std::vector<ph::PlaneShape> planes;
    bool supported = true; ///< false when the scene holds a shape other than boxes and planes
};

SceneSetup makeSetup(const ph::SceneName& name, float friction)
{
    SceneSetup setup;
    setup.name = name;
    setup.friction = friction;
    ph::World source;
    ph::buildScene(source, name);
    source.forEachBody(
        [&](const ph::BodyState& b)
        {
            if (b.shape.type == ph::ShapeType::Plane)
            {
                setup.planes.push_back(b.shape.plane);
            }
            else if (b.shape.type == ph::ShapeType::Box)
            {
                const bool dynamic = b.type == ph::BodyType::Dynamic;
                setup.boxes.push_back({b.shape.box.halfExtents, dynamic ? b.mass : 0.0f, dynamic});
            }
            else
            {
                setup.supported = false;
            }
        });
    return setup;
}

/// A box's pose and velocities after a step (velocities of the centre, world frame).
struct BoxPose
{
    ph::Vec3 position{};
    ph::Quat rotation{};
    ph::Vec3 linearVelocity{};
    ph::Vec3 angularVelocity{};
};

/// Penetration depth of two boxes (metres; 0 when apart): the least overlap of their projections over the
/// 15 separating-axis candidates (3 + 3 face normals, 9 edge-edge cross products).
float boxBoxDepth(const ph::Mat3& ra, const ph::Vec3& ha, const ph::Mat3& rb, const ph::Vec3& hb,
                  const ph::Vec3& delta)
{
    const ph::Vec3 axesA[3] = {ra.c0, ra.c1, ra.c2};
    const ph::Vec3 axesB[3] = {rb.c0, rb.c1, rb.c2};
    float depth = INFINITY;
    const auto overlapAlong = [&](const ph::Vec3& axis)
    {
        float radius = 0.0f;
        for (int k = 0; k < 3; ++k)
        {
            radius += std::fabs(ph::dot(axis, axesA[k])) * ha[k] + std::fabs(ph::dot(axis, axesB[k])) * hb[k];
        }
        depth = std::min(depth, radius - std::fabs(ph::dot(axis, delta)));
    };
    for (int i = 0; i < 3; ++i)
    {
        overlapAlong(axesA[i]);
        overlapAlong(axesB[i]);
    }
    for (int i = 0; i < 3 && depth > 0.0f; ++i)
    {
        for (int j = 0; j < 3; ++j)
        {
            const ph::Vec3 axis = ph::cross(axesA[i], axesB[j]);
            const float lengthSquared = ph::dot(axis, axis);
            if (lengthSquared > 1e-6f) // nearly parallel edges: the face normals cover that direction
            {
                overlapAlong(axis * (1.0f / std::sqrt(lengthSquared)));
            }
        }
    }
    return std::max(depth, 0.0f);
}

/// The figures of one run, taken from the poses after each step (see the top of this file).
class StabilityProbe
{
  public:
    StabilityProbe(const SceneSetup& setup, std::span<const BoxPose> start, int steps)
        : m_setup(setup), m_steps(steps)
    {
        float heaviest = 0.0f;
        for (std::size_t i = 0; i < setup.boxes.size(); ++i)
        {
            m_start.push_back(start[i].position);
            if (setup.boxes[i].dynamic)
            {
                m_dynamicMass += setup.boxes[i].mass;
                if (setup.boxes[i].mass > heaviest)
                {
                    heaviest = setup.boxes[i].mass;
                    m_heaviest = i;
                }
            }
        }
        m_order.resize(setup.boxes.size());
        std::iota(m_order.begin(), m_order.end(), std::size_t{0});
    }

    void observe(int step, std::span<const BoxPose> poses)
    {
        const std::size_t count = poses.size();
        m_rotations.resize(count);
        m_boxes.resize(count);
        double kineticEnergy = 0.0;
        for (std::size_t i = 0; i < count; ++i)
        {
            const ProbeBox& box = m_setup.boxes[i];
            const BoxPose& pose = poses[i];
            const ph::Mat3 r = ph::toMat3(pose.rotation);
            m_rotations[i] = r;
            // World bounding box: each world axis gets sum_k |R[axis][k]| h_k.
            const ph::Vec3 extent{
                std::fabs(r.c0.x) * box.halfExtents.x + std::fabs(r.c1.x) * box.halfExtents.y +
                    std::fabs(r.c2.x) * box.halfExtents.z,
                std::fabs(r.c0.y) * box.halfExtents.x + std::fabs(r.c1.y) * box.halfExtents.y +
                    std::fabs(r.c2.y) * box.halfExtents.z,
                std::fabs(r.c0.z) * box.halfExtents.x + std::fabs(r.c1.z) * box.halfExtents.y +
                    std::fabs(r.c2.z) * box.halfExtents.z};
            m_boxes[i] = {pose.position - extent, pose.position + extent};
            if (!box.dynamic)
            {
                continue;
            }
            m_drift = std::max(m_drift, double(ph::length(pose.position - m_start[i])));
            for (const ph::PlaneShape& plane : m_setup.planes)
            {
                const ph::Vec3 n = plane.normal;
                const float reach = std::fabs(ph::dot(n, r.c0)) * box.halfExtents.x +
                                    std::fabs(ph::dot(n, r.c1)) * box.halfExtents.y +
                                    std::fabs(ph::dot(n, r.c2)) * box.halfExtents.z;
                m_sink = std::max(m_sink, double(plane.offset - (ph::dot(n, pose.position) - reach)));
            }
            if (i == m_heaviest)
            {
                m_sag = std::max(m_sag, double(m_start[i].y - pose.position.y));
            }
            // Box inertia about the centre, body axes: m/3 (h_j^2 + h_k^2); w in body axes is R^T w.
            const ph::Vec3 h2{box.halfExtents.x * box.halfExtents.x, box.halfExtents.y * box.halfExtents.y,
                              box.halfExtents.z * box.halfExtents.z};
            const ph::Vec3 wBody = ph::mulTransposed(r, pose.angularVelocity);
            const double rotational = (h2.y + h2.z) * wBody.x * wBody.x + (h2.x + h2.z) * wBody.y * wBody.y +
                                      (h2.x + h2.y) * wBody.z * wBody.z;
            kineticEnergy += 0.5 * box.mass *
                             (double(ph::dot(pose.linearVelocity, pose.linearVelocity)) + rotational / 3.0);
        }
        observeBoxPairs(poses);
        if (step >= m_steps - kStepsPerSecond && m_dynamicMass > 0.0)
        {
            m_restingEnergySum += kineticEnergy / m_dynamicMass;
            ++m_restingSamples;
        }
    }

    double driftMeters() const { return m_drift; }
    double maxSinkMeters() const { return m_sink; }
    double sagMeters() const { return m_sag; }
    double restingEnergyPerKg() const
    {
        return m_restingSamples > 0 ? m_restingEnergySum / m_restingSamples : NAN;
    }

  private:
    /// Sweep and prune along x over the world bounding boxes, then the exact depth of each overlapping pair
    /// with a dynamic box in it.
    void observeBoxPairs(std::span<const BoxPose> poses)
    {
        // Insertion sort: the order changes little from step to step.
        for (std::size_t i = 1; i < m_order.size(); ++i)
        {
            const std::size_t moving = m_order[i];
            std::size_t j = i;
            for (; j > 0 && m_boxes[m_order[j - 1]].lower.x > m_boxes[moving].lower.x; --j)
            {
                m_order[j] = m_order[j - 1];
            }
            m_order[j] = moving;
        }
        for (std::size_t i = 0; i < m_order.size(); ++i)
        {
            const std::size_t a = m_order[i];
            for (std::size_t j = i + 1; j < m_order.size(); ++j)
            {
                const std::size_t b = m_order[j];
                if (m_boxes[b].lower.x > m_boxes[a].upper.x)
                {
                    break;
                }
                if ((!m_setup.boxes[a].dynamic && !m_setup.boxes[b].dynamic) ||
                    m_boxes[a].lower.y > m_boxes[b].upper.y || m_boxes[b].lower.y > m_boxes[a].upper.y ||
                    m_boxes[a].lower.z > m_boxes[b].upper.z || m_boxes[b].lower.z > m_boxes[a].upper.z)
                {
                    continue;
                }
                const float depth =
                    boxBoxDepth(m_rotations[a], m_setup.boxes[a].halfExtents, m_rotations[b],
                                m_setup.boxes[b].halfExtents, poses[b].position - poses[a].position);
                m_sink = std::max(m_sink, double(depth));
            }
        }
    }

    struct Bounds
    {
        ph::Vec3 lower;
        ph::Vec3 upper;
    };

    const SceneSetup& m_setup;
    int m_steps = 0;
    std::vector<ph::Vec3> m_start;
    std::vector<ph::Mat3> m_rotations;
    std::vector<Bounds> m_boxes;
    std::vector<std::size_t> m_order; ///< box indices by lower x
    std::size_t m_heaviest = 0;
    double m_dynamicMass = 0.0;
    double m_drift = 0.0;
    double m_sink = 0.0;
    double m_sag = 0.0;
    double m_restingEnergySum = 0.0;
    int m_restingSamples = 0;
};

struct RunFigures
{
    std::vector<double> msPerStep;
    double driftMeters = 0.0;
    double maxSinkMeters = 0.0;
    double restingEnergyPerKg = 0.0;
    double sagMeters = 0.0;
    int belowGround = 0;
    int bodies = 0;       ///< dynamic bodies
    int mostSubsteps = 0; ///< Polytope: the most substeps any island ran with, over the run (0: Bullet)
};

void finish(const StabilityProbe& probe, std::span<const BoxPose> poses, const SceneSetup& setup,
            RunFigures& f)
{
    f.driftMeters = probe.driftMeters();
    f.maxSinkMeters = probe.maxSinkMeters();
    f.restingEnergyPerKg = probe.restingEnergyPerKg();
    f.sagMeters = probe.sagMeters();
    for (std::size_t i = 0; i < poses.size(); ++i)
    {
        if (setup.boxes[i].dynamic)
        {
            ++f.bodies;
            f.belowGround += poses[i].position.y < 0.0f ? 1 : 0;
        }
    }
}

/// Polytope's columns: one per World thread count (see the top of this file).
struct PolytopeColumn
{
    int threads;
    const char* impl;
};
constexpr PolytopeColumn kPolytopeColumns[] = {{1, "polytope_1t"}, {2, "polytope_2t"}};

/// Runs the scene in a Polytope World stepping on `threads` threads.
RunFigures runPolytope(const SceneSetup& setup, int steps, int threads, const SuiteOptions& options)
{
    RunFigures f;
    ph::WorldConfig config;
    config.enableSleep = false;
    config.threads = threads;
    if (options.substeps > 0)
    {
        // Every island at N substeps: no loaded island is raised above it.
        config.substeps = options.substeps;
        config.maxSubsteps = options.substeps;
    }
    if (options.contactHertz > 0.0)
    {
        config.contactHertz = static_cast<float>(options.contactHertz);
    }
    ph::World world(config);
    ph::buildScene(world, setup.name);
    std::vector<ph::BodyId> ids;
    world.forEachBody(
        [&](const ph::BodyState& b)
        {
            if (b.shape.type == ph::ShapeType::Box)
            {
                ids.push_back(b.id);
            }
        });
    std::vector<BoxPose> poses(ids.size());
    const auto readPoses = [&]
    {
        ph::BodyState state;
        for (std::size_t i = 0; i < ids.size(); ++i)
        {
            world.getBody(ids[i], state);
            poses[i] = {state.transform.p, state.transform.q, state.linearVelocity, state.angularVelocity};
        }
    };
    readPoses();
    StabilityProbe probe(setup, poses, steps);
    f.msPerStep.reserve(static_cast<std::size_t>(steps));
    for (int s = 0; s < steps; ++s)
    {
        const auto t0 = Clock::now();
        world.step(kDt);
        f.msPerStep.push_back(secondsSince(t0) * 1e3);
        f.mostSubsteps = std::max(f.mostSubsteps, static_cast<int>(world.stepStats().mostSubsteps));
        readPoses();
        probe.observe(s, poses);
    }
    finish(probe, poses, setup, f);
    return f;
}

/// A Bullet world mirroring a Polytope scene.
struct BulletScene
{
    BulletDynamics dynamics;
    btDiscreteDynamicsWorld& world = dynamics.world;
    std::vector<std::unique_ptr<btCollisionShape>> shapes;
    std::vector<std::unique_ptr<btDefaultMotionState>> motionStates;
    std::vector<std::unique_ptr<btRigidBody>> bodies;
    std::vector<btRigidBody*> boxBodies; ///< in SceneSetup::boxes order

    ~BulletScene()
    {
        for (auto& body : bodies)
        {
            world.removeRigidBody(body.get());
        }
    }
};

bool buildBullet(const SceneSetup& setup, BulletScene& out)
{
    ph::WorldConfig config;
    config.enableSleep = false;
    ph::World source(config);
    ph::buildScene(source, setup.name);
    out.world.setGravity(btVector3(config.gravity.x, config.gravity.y, config.gravity.z));
    bool supported = true;
    source.forEachBody(
        [&](const ph::BodyState& b)
        {
            std::unique_ptr<btCollisionShape> shape;
            btTransform xf(btQuaternion(b.transform.q.x, b.transform.q.y, b.transform.q.z, b.transform.q.w),
                           btVector3(b.transform.p.x, b.transform.p.y, b.transform.p.z));
            switch (b.shape.type)
            {
            case ph::ShapeType::Plane:
            {
                const ph::Vec3 n = b.shape.plane.normal;
                shape = std::make_unique<btStaticPlaneShape>(btVector3(n.x, n.y, n.z), b.shape.plane.offset);
                break;
            }
            case ph::ShapeType::Box:
            {
                const ph::Vec3 h = b.shape.box.halfExtents;
                shape = std::make_unique<btBoxShape>(btVector3(h.x, h.y, h.z));
                break;
            }
            case ph::ShapeType::Sphere:
            case ph::ShapeType::Capsule:
            case ph::ShapeType::Hull: // the probe measures boxes and planes only
            case ph::ShapeType::Compound:
            case ph::ShapeType::Mesh:
            case ph::ShapeType::HeightField:
                supported = false;
                return;
            }
            const bool dynamic = b.type == ph::BodyType::Dynamic;
            const btScalar mass = dynamic ? b.mass : 0.0f;
            btVector3 inertia(0, 0, 0);
            if (dynamic)
            {
                shape->calculateLocalInertia(mass, inertia);
            }
            auto motion = std::make_unique<btDefaultMotionState>(xf);
            btRigidBody::btRigidBodyConstructionInfo info(mass, motion.get(), shape.get(), inertia);
            info.m_friction = std::sqrt(setup.friction);
            auto body = std::make_unique<btRigidBody>(info);
            body->setActivationState(DISABLE_DEACTIVATION);
            out.world.addRigidBody(body.get());
            if (b.shape.type == ph::ShapeType::Box)
            {
                out.boxBodies.push_back(body.get());
            }
            out.shapes.push_back(std::move(shape));
            out.motionStates.push_back(std::move(motion));
            out.bodies.push_back(std::move(body));
        });
    return supported;
}

RunFigures runBullet(const SceneSetup& setup, int steps)
{
    auto bullet = std::make_unique<BulletScene>();
    RunFigures f;
    if (!buildBullet(setup, *bullet))
    {
        return f;
    }
    std::vector<BoxPose> poses(bullet->boxBodies.size());
    const auto readPoses = [&]
    {
        for (std::size_t i = 0; i < poses.size(); ++i)
        {
            const btRigidBody& body = *bullet->boxBodies[i];
            const btTransform& xf = body.getWorldTransform();
            const btVector3 p = xf.getOrigin();
            const btQuaternion q = xf.getRotation();
            const btVector3 v = body.getLinearVelocity();
            const btVector3 w = body.getAngularVelocity();
            poses[i] = {{p.x(), p.y(), p.z()},
                        {q.x(), q.y(), q.z(), q.w()},
                        {v.x(), v.y(), v.z()},
                        {w.x(), w.y(), w.z()}};
        }
    };
    readPoses();
    StabilityProbe probe(setup, poses, steps);
    f.msPerStep.reserve(static_cast<std::size_t>(steps));
    for (int s = 0; s < steps; ++s)
    {
        const auto t0 = Clock::now();
        bullet->world.stepSimulation(kDt, 0);
        f.msPerStep.push_back(secondsSince(t0) * 1e3);
        readPoses();
        probe.observe(s, poses);
    }
    finish(probe, poses, setup, f);
    return f;
}

double meanMs(const RunFigures& f)
{
    double sum = 0.0;
    for (double v : f.msPerStep)
    {
        sum += v;
    }
    return sum / static_cast<double>(f.msPerStep.size());
}

/// One record from a scene's passes of one engine: the median pass by mean step time (the lower middle one
/// of an even count), with every pass's steps/s range when there are several. The passes simulate the
/// same thing (both engines are deterministic), so only their times differ.
void addRecord(Report& report, const std::string& scene, const char* impl, std::vector<RunFigures>& passes,
               double seconds, bool reportSag)
{
    if (passes.empty() || passes.front().msPerStep.empty())
    {
        return;
    }
    // Each pass's mean once, then the passes ordered by it.
    std::vector<double> means;
    for (const RunFigures& pass : passes)
    {
        means.push_back(meanMs(pass));
    }
    std::vector<std::size_t> order(passes.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return means[a] < means[b]; });
    const std::size_t median = order[(order.size() - 1) / 2];
    RunFigures& f = passes[median];
    const double mean = means[median];
    Record& record = report.add(scene, impl, f.bodies)
                         .add("seconds_simulated", seconds)
                         .add("drift_m", f.driftMeters)
                         .add("max_sink_m", f.maxSinkMeters)
                         .add("resting_ke_j_per_kg", f.restingEnergyPerKg);
    if (reportSag)
    {
        record.add("sag_m", f.sagMeters);
    }
    record.add("ms_per_step_mean", mean)
        .add("ms_per_step_p99", quantile(f.msPerStep, 0.99))
        .add("steps_per_s", 1e3 / mean)
        .add("below_ground", f.belowGround);
    if (f.mostSubsteps > 0)
    {
        record.add("substeps_max", f.mostSubsteps);
    }
    if (passes.size() > 1)
    {
        record.add("passes", static_cast<int>(passes.size()))
            .add("steps_per_s_fastest", 1e3 / means[order.front()])
            .add("steps_per_s_slowest", 1e3 / means[order.back()]);
    }
}

} // namespace

void runScenesSuite(Report& report, const SuiteOptions& options)
{
    struct Entry
    {
        const char* scene;
        double seconds; ///< simulated, unless --seconds
        float friction; ///< every body's (the Bullet copy needs it: BodyState carries no material)
        bool reportSag; ///< sag_m of the heaviest body
    };
    const Entry entries[] = {
        {"stack10", 60.0, ph::kSceneFriction, false},
        {"stack30", 60.0, ph::kSceneFriction, false},
        {"stack50", 60.0, ph::kSceneFriction, false},
        {"pyramid20", 60.0, ph::kSceneFriction, false},
        {"pyramid40", 60.0, ph::kSceneFriction, false},
        {"pyramid60", 60.0, ph::kSceneFriction, false},
        {"pyramid100", 20.0, ph::kSceneFriction, false},
        {"jolt_pyramid", 10.0, ph::kJoltPyramidFriction, false},
        {"heavy_on_light", 60.0, ph::kSceneFriction, true},
        {"pile1000", 10.0, ph::kSceneFriction, false},
        {"pile4000", 10.0, ph::kSceneFriction, false},
    };
    for (const std::string& wanted : options.scenes)
    {
        const bool known = std::any_of(std::begin(entries), std::end(entries),
                                       [&](const Entry& e) { return wanted == e.scene; });
        if (!known)
        {
            std::fprintf(stderr, "polytope-bench scenes: no scene '%s' in this suite\n", wanted.c_str());
        }
    }
    for (const Entry& entry : entries)
    {
        if (!options.scenes.empty() &&
            std::find(options.scenes.begin(), options.scenes.end(), entry.scene) == options.scenes.end())
        {
            continue;
        }
        ph::SceneName name;
        std::string error;
        if (!ph::parseSceneName(entry.scene, name, error))
        {
            std::fprintf(stderr, "polytope-bench scenes: %s\n", error.c_str());
            continue;
        }
        const SceneSetup setup = makeSetup(name, entry.friction);
        if (!setup.supported)
        {
            std::fprintf(stderr, "polytope-bench scenes: %s holds shapes other than boxes and planes\n",
                         entry.scene);
            continue;
        }
        const double seconds = options.seconds > 0.0 ? options.seconds : entry.seconds;
        const int steps = std::max(1, static_cast<int>(std::lround(seconds * kStepsPerSecond)));
        constexpr std::size_t kColumns = std::size(kPolytopeColumns);
        std::vector<RunFigures> passes[kColumns + 1]; // Polytope's columns, then Bullet
        for (int round = 0; round < options.repeat; ++round)
        {
            for (std::size_t c = 0; c < kColumns; ++c)
            {
                passes[c].push_back(runPolytope(setup, steps, kPolytopeColumns[c].threads, options));
            }
            passes[kColumns].push_back(runBullet(setup, steps));
        }
        for (std::size_t c = 0; c < kColumns; ++c)
        {
            addRecord(report, entry.scene, kPolytopeColumns[c].impl, passes[c], seconds, entry.reportSag);
        }
        addRecord(report, entry.scene, "bullet", passes[kColumns], seconds, entry.reportSag);
    }
}

} // namespace polytope::bench

// Suite "scenes": Polytope and Bullet 3.24 (btDiscreteDynamicsWorld with its default settings) on the same
// built-in scenes in the same run, 60 Hz, sleeping off.
//
// The scenes are defined once (physics/scenes.h). Bullet's copy is made from the Polytope world after it is
// built: every static plane and box becomes a Bullet body with the same transform, shape and mass; friction
// sqrt(0.6) per body, since Bullet multiplies the two bodies' values (effective 0.6). Bullet keeps its
// default collision margin (0.04, inside btBoxShape's extent): that is what its users run.
//
// Figures per scene and engine: ms_per_step_mean, ms_per_step_p99, drift_m (the largest distance any dynamic
// body moves from its start over the run; for piles this is the fall, not a stability measure),
// below_ground (bodies whose centre ended below the ground plane: tunnelling), steps_per_s.
// Stacks and pyramids run 60 simulated seconds; piles 10 s (Bullet's 4000-box pile costs ~65 ms a step here).
// --count S overrides the simulated seconds of every scene.
#include "bench_common.h"

#include "polytope/physics/scenes.h"

#include <btBulletDynamicsCommon.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

namespace polytope::bench
{
namespace
{
namespace ph = polytope::physics;

constexpr float kDt = 1.0f / 60.0f;

struct RunFigures
{
    std::vector<double> msPerStep;
    double driftMeters = 0.0;
    int belowGround = 0;
    int bodies = 0;
};

RunFigures runPolytope(const ph::SceneName& scene, int steps)
{
    ph::WorldConfig config;
    config.enableSleep = false;
    ph::World world(config);
    ph::buildScene(world, scene);
    std::vector<ph::BodyId> ids;
    std::vector<ph::Vec3> start;
    world.forEachBody(
        [&](const ph::BodyState& b)
        {
            if (b.type == ph::BodyType::Dynamic)
            {
                ids.push_back(b.id);
                start.push_back(b.transform.p);
            }
        });
    RunFigures f;
    f.bodies = static_cast<int>(ids.size());
    f.msPerStep.reserve(static_cast<std::size_t>(steps));
    ph::BodyState state;
    for (int s = 0; s < steps; ++s)
    {
        const auto t0 = Clock::now();
        world.step(kDt);
        f.msPerStep.push_back(secondsSince(t0) * 1e3);
        for (std::size_t i = 0; i < ids.size(); ++i)
        {
            world.getBody(ids[i], state);
            f.driftMeters = std::max(f.driftMeters, double(ph::length(state.transform.p - start[i])));
        }
    }
    for (const ph::BodyId id : ids)
    {
        world.getBody(id, state);
        f.belowGround += state.transform.p.y < 0.0f ? 1 : 0;
    }
    return f;
}

/// A Bullet world mirroring a Polytope scene.
struct BulletScene
{
    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher{&configuration};
    btDbvtBroadphase broadphase;
    btSequentialImpulseConstraintSolver solver;
    btDiscreteDynamicsWorld world{&dispatcher, &broadphase, &solver, &configuration};
    std::vector<std::unique_ptr<btCollisionShape>> shapes;
    std::vector<std::unique_ptr<btDefaultMotionState>> motionStates;
    std::vector<std::unique_ptr<btRigidBody>> bodies;
    std::vector<btRigidBody*> dynamicBodies;

    ~BulletScene()
    {
        for (auto& body : bodies)
        {
            world.removeRigidBody(body.get());
        }
    }
};

bool buildBullet(const ph::SceneName& scene, BulletScene& out)
{
    ph::WorldConfig config;
    config.enableSleep = false;
    ph::World source(config);
    ph::buildScene(source, scene);
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
                shape = std::make_unique<btSphereShape>(b.shape.sphere.radius);
                break;
            case ph::ShapeType::Capsule:
                shape = std::make_unique<btCapsuleShape>(b.shape.capsule.radius,
                                                         2.0f * b.shape.capsule.halfHeight);
                break;
            case ph::ShapeType::Hull:
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
            info.m_friction = std::sqrt(0.6f);
            auto body = std::make_unique<btRigidBody>(info);
            body->setActivationState(DISABLE_DEACTIVATION);
            out.world.addRigidBody(body.get());
            if (dynamic)
            {
                out.dynamicBodies.push_back(body.get());
            }
            out.shapes.push_back(std::move(shape));
            out.motionStates.push_back(std::move(motion));
            out.bodies.push_back(std::move(body));
        });
    return supported;
}

RunFigures runBullet(const ph::SceneName& scene, int steps)
{
    auto bullet = std::make_unique<BulletScene>();
    RunFigures f;
    if (!buildBullet(scene, *bullet))
    {
        return f;
    }
    std::vector<btVector3> start;
    for (btRigidBody* b : bullet->dynamicBodies)
    {
        start.push_back(b->getWorldTransform().getOrigin());
    }
    f.bodies = static_cast<int>(start.size());
    f.msPerStep.reserve(static_cast<std::size_t>(steps));
    for (int s = 0; s < steps; ++s)
    {
        const auto t0 = Clock::now();
        bullet->world.stepSimulation(kDt, 0);
        f.msPerStep.push_back(secondsSince(t0) * 1e3);
        for (std::size_t i = 0; i < start.size(); ++i)
        {
            const btVector3 p = bullet->dynamicBodies[i]->getWorldTransform().getOrigin();
            f.driftMeters = std::max(f.driftMeters, double((p - start[i]).length()));
        }
    }
    for (btRigidBody* b : bullet->dynamicBodies)
    {
        f.belowGround += b->getWorldTransform().getOrigin().y() < 0 ? 1 : 0;
    }
    return f;
}

void addRecord(Report& report, const std::string& scene, const char* impl, RunFigures& f, double seconds)
{
    if (f.msPerStep.empty())
    {
        return;
    }
    double sum = 0.0;
    for (double v : f.msPerStep)
    {
        sum += v;
    }
    const double mean = sum / static_cast<double>(f.msPerStep.size());
    report.add(scene, impl, f.bodies)
        .add("seconds_simulated", seconds)
        .add("ms_per_step_mean", mean)
        .add("ms_per_step_p99", quantile(f.msPerStep, 0.99))
        .add("steps_per_s", 1e3 / mean)
        .add("drift_m", f.driftMeters)
        .add("below_ground", f.belowGround);
}

} // namespace

void runScenesSuite(Report& report, const SuiteOptions& options)
{
    struct Entry
    {
        const char* scene;
        double seconds;
    };
    const Entry entries[] = {{"pile1000", 10.0},  {"pile4000", 10.0},  {"pyramid20", 60.0},
                             {"pyramid40", 60.0}, {"pyramid60", 60.0}, {"stack10", 60.0},
                             {"stack30", 60.0},   {"stack50", 60.0}};
    for (const Entry& entry : entries)
    {
        ph::SceneName scene;
        std::string error;
        if (!ph::parseSceneName(entry.scene, scene, error))
        {
            continue;
        }
        const double seconds = options.count > 0 ? static_cast<double>(options.count) : entry.seconds;
        const int steps = static_cast<int>(std::lround(seconds * 60.0));
        RunFigures mine = runPolytope(scene, steps);
        RunFigures theirs = runBullet(scene, steps);
        addRecord(report, entry.scene, "polytope", mine, seconds);
        addRecord(report, entry.scene, "bullet", theirs, seconds);
    }
}

} // namespace polytope::bench

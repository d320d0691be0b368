// polytope-bench: a Bullet dynamics world set up as Bullet's users set one up (see ../shared/notes/peers.md).
#pragma once

#include <btBulletDynamicsCommon.h>

namespace polytope::bench
{

/// btDiscreteDynamicsWorld over Bullet's default collision configuration, dispatcher, DBVT broadphase and
/// sequential-impulse solver; stepSimulation(1/60, 0) steps exactly one 1/60 s step per call.
struct BulletDynamics
{
    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher{&configuration};
    btDbvtBroadphase broadphase;
    btSequentialImpulseConstraintSolver solver;
    btDiscreteDynamicsWorld world{&dispatcher, &broadphase, &solver, &configuration};
};

} // namespace polytope::bench

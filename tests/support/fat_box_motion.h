// Tests and benchmarks: moving a broadphase proxy the way the World does, for physics_tests' broadphase
// checks and polytope-bench's "broadphase" suite, which drive a BroadphaseTree without a World.
#pragma once

#include "polytope/physics/broadphase.h"

#include <cstdint>

namespace polytope::test
{

/// The fat boxes reach this many displacements ahead of the tight box.
constexpr float kDisplacementScale = 2.0f;

/// What the tree's owner does when a proxy's tight box moves (as World::updateFatBox): keeps the stored box
/// while the policy allows it, else stores the wanted fat box. Returns whether the proxy was re-inserted.
inline bool moveWithPolicy(physics::BroadphaseTree& tree, const physics::FatBoxPolicy& policy,
                           std::int32_t id, const physics::Aabb& tight,
                           const physics::Vec3& predictedDisplacement)
{
    const physics::Aabb wanted = policy.fatBox(tight, predictedDisplacement);
    return !policy.keeps(tree.fatBox(id), tight, wanted) && tree.moveProxy(id, wanted);
}

} // namespace polytope::test

// Tests: a world with every kind of geometry that crosses the wire (protocol/STANDARD.md section 12), shared
// by the geometry link test and the recording tests.
#pragma once

#include "polytope/physics/world.h"

namespace polytope::test
{

/// convex_vs_mesh (hulls on many bodies, a mesh, compounds, one with a hull child) plus a static heightfield
/// with a hole, far off to the side. A server::RoomConfig::buildScene.
bool buildGeometryScene(physics::World& world);

} // namespace polytope::test

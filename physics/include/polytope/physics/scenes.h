// Polytope physics: built-in scenes as data, defined once and shared by the tests, bench/, the server's
// built-in scenes and the viewer.
//
// Units: metres, kilograms, seconds; gravity along -y; the ground is the plane y = 0. Benchmark scenes use
// unit cubes (1 m, density 1000 kg/m^3) with friction 0.6.
#pragma once

#include "polytope/physics/world.h"

#include <span>
#include <string_view>

namespace polytope::physics
{

struct SceneInfo
{
    std::string_view name;
    std::string_view description;
    /// Adds the scene's bodies to an empty world. Returns false if the world refused a body (capacity).
    bool (*build)(World& world);
};

/// Every built-in scene, in a fixed order.
std::span<const SceneInfo> builtinScenes();
/// The built-in scene of that name, or nullptr.
const SceneInfo* findScene(std::string_view name);

/// The static ground: the plane y = 0 with the given friction.
bool addGroundPlane(World& world, float friction = 0.6f);

/// A vertical stack of `count` unit cubes resting exactly on each other on the ground (the lowest cube's
/// centre at y = 0.5), all with `friction`.
bool buildStack(World& world, int count, float friction = 0.6f);

/// A single wall of unit cubes in the xy plane: `base` cubes on the ground, one fewer on each row above,
/// centred on x = 0, each row resting exactly on the one below and cubes touching side by side.
bool buildPyramid(World& world, int base, float friction = 0.6f);

/// `count` unit cubes dropped onto the ground from a grid 10 layers high (side ceil(sqrt(count / 10))),
/// 1.5 m apart, each slightly turned (deterministically) so the pile does not stay a grid.
bool buildPile(World& world, int count, float friction = 0.6f);

/// Spheres, capsules, boxes and convex hulls (a tetrahedron, an octahedron, a wedge and a 20-point
/// blob) falling in a heap onto the ground; some bouncy, some slippery.
bool buildMixed(World& world);

/// A unit cube at rest on a static slab tilted by `angleRadians` about z.
bool buildRamp(World& world, float angleRadians = 0.35f, float friction = 0.6f);

/// A 2D scene in the xy plane: boxes with planar degrees of freedom (planarDofs(2)) falling onto three
/// slopes turned about z, with the ground below.
bool buildPlanar(World& world);

} // namespace polytope::physics

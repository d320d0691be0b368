// Polytope physics: a ray or a shape cast against one shape of any type, placed at a given pose.
//
// The World's queries test each candidate body this way at the pose the last step left it
// (world_queries.cpp); these functions let a caller test a shape at any pose it keeps itself, such as the
// server's rewound poses for lag compensation (server/pose_history.h), with exactly the World's per-body
// answers: compounds child by child, meshes and heightfields triangle by triangle, the same tie rules. Pure
// functions of their arguments: they allocate nothing and may run on several threads at once.
#pragma once

#include "polytope/physics/collide_composite.h"
#include "polytope/physics/math.h"
#include "polytope/physics/raycast.h"
#include "polytope/physics/shape_cast.h"
#include "polytope/physics/shapes.h"

#include <cstdint>
#include <limits>

namespace polytope::physics
{

/// Casts `ray` (world frame) against `shape` (any type, planes included) at world pose `transform`, in the
/// shape's local frame. On a hit fills `hit` (fraction, world point, world normal out of the surface) and
/// `subShape` (the compound child or the mesh or heightfield triangle hit, ties to the lower index; 0
/// otherwise) and returns true. Catalogue indices must be valid for `catalogue`. A miss returns false and
/// leaves both outputs alone.
bool castRayAgainstShape(const RayCastInput& ray, const Shape& shape, const Transform& transform,
                         const ShapeCatalogue& catalogue, RayCastHit& hit, std::uint32_t& subShape);

/// Casts `cast` (a convex shape translating in the world frame, shape_cast.h) against `shape` (any type,
/// planes included) held at world pose `transform`: the first touch, as castShape reports it, with the piece
/// touched in `subShape` as castRayAgainstShape. For meshes and heightfields, triangles the cast could only
/// reach past `clip` (a fraction, >= 0) are skipped, as the World's queries do with their best hit so far;
/// pass infinity to test them all. A miss returns false and leaves both outputs alone.
bool castShapeAgainstShape(const ShapeCastInput& cast, const Shape& shape, const Transform& transform,
                           const ShapeCatalogue& catalogue, ShapeCastHit& hit, std::uint32_t& subShape,
                           float clip = std::numeric_limits<float>::infinity());

} // namespace polytope::physics

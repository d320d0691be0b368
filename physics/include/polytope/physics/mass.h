// Polytope physics: shape validation and mass properties of uniform-density solids.
//
// validateShape says whether a Shape's numbers describe a usable solid (and why not); the
// computeMassProperties overloads give mass, centre of mass and the inertia tensor about the centre
// of mass in the shape's local axes. Closed forms for the primitives; hulls are integrated exactly by
// splitting them into tetrahedra (see mass.cpp). Densities are kg/m^3, finite and > 0 (not checked: the
// results are linear in density). All math is done in double and rounded to float at the end.
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <cstdint>
#include <span>
#include <string>

namespace polytope::physics
{

enum class ShapeError : std::uint8_t
{
    None = 0,
    NonFinite,           ///< a size, normal or offset is NaN or infinite
    NonPositiveSize,     ///< a radius, half height or half extent is <= 0
    NonUnitNormal,       ///< a plane normal's length differs from 1 by more than kUnitNormalTolerance
    HullIndexOutOfRange, ///< hullIndex names no hull of the catalogue
    MalformedHull,       ///< the referenced hull is not a closed solid (too few vertices or faces,
                         ///< indices out of range, non-finite numbers)
    UnknownType,         ///< the type tag is not a ShapeType
    TooLarge,            ///< a size or a plane's offset exceeds kMaxShapeSizeMeters
};

/// Largest radius, half height, half extent or plane offset (metres): the world's bound (world.h). Larger
/// numbers are finite but no body within the world has them, and they overflow the narrowphase's products.
inline constexpr float kMaxShapeSizeMeters = 1.0e6f;

/// How far from 1 a plane normal's length may be.
inline constexpr float kUnitNormalTolerance = 1e-3f;

/// Result of validateShape.
struct ShapeValidation
{
    ShapeError error = ShapeError::None;
    std::string message; ///< human-readable detail; empty when valid

    bool ok() const { return error == ShapeError::None; }
};

/// Checks the member of `shape` selected by its type: radii, half heights and half extents finite and
/// > 0; a plane's normal finite and unit (within kUnitNormalTolerance) and its offset finite; a hull
/// index inside `hulls` (the world's hull catalogue) naming a structurally sound hull. Pure; O(1) except
/// for hulls, which are scanned once.
ShapeValidation validateShape(const Shape& shape, std::span<const ConvexHull> hulls = {});

/// Solid sphere of `density` kg/m^3 (> 0): mass 4/3 pi r^3 density, inertia 2/5 m r^2.
MassProperties computeMassProperties(const SphereShape& sphere, float density);

/// Solid capsule (cylinder plus two hemispheres, axis along local y) of `density` kg/m^3; the inertia is
/// diagonal with equal x and z entries.
MassProperties computeMassProperties(const CapsuleShape& capsule, float density);

/// Solid box of `density` kg/m^3 with side lengths a, b, c (twice the half extents): mass a b c density,
/// inertia m/12 * diag(b^2 + c^2, a^2 + c^2, a^2 + b^2) about its centre.
MassProperties computeMassProperties(const BoxShape& box, float density);

/// Solid convex polyhedron of `density` kg/m^3, integrated exactly (in double) over tetrahedra that
/// join an interior point to a fan triangulation of each face. The inertia is the full symmetric tensor
/// about the centre of mass in the hull's local axes. The hull must be closed with outward faces (as
/// built by buildConvexHull or makeBoxHull); a hull whose indices are out of range or whose volume is not
/// positive gives all zeros.
MassProperties computeMassProperties(const ConvexHull& hull, float density);

/// Checks a compound: 1 .. kMaxCompoundChildren children, each a valid convex shape (sphere, capsule, box or
/// hull, by validateShape against `hulls`) at a finite transform with a unit rotation (within 1e-3) and an
/// offset within kMaxShapeSizeMeters.
ShapeValidation validateCompound(const CompoundShape& compound, std::span<const ConvexHull> hulls = {});

/// Solid union of a compound's children at one density (overlaps counted twice, as Jolt and Bullet do):
/// the sum of the children's masses, their mass-weighted centre, and their inertias rotated into the
/// compound's axes and moved to that centre (parallel axis), in double. A compound that fails
/// validateCompound gives all zeros.
MassProperties computeMassProperties(const CompoundShape& compound, float density,
                                     std::span<const ConvexHull> hulls = {});

/// Mass properties of any shape: planes (static only) and shapes that fail validateShape give all
/// zeros; hulls are looked up in `hulls` by shape.hullIndex. Compounds, meshes and heightfields (whose
/// geometry this does not see) give all zeros: see the compound overload.
MassProperties computeMassProperties(const Shape& shape, float density,
                                     std::span<const ConvexHull> hulls = {});

} // namespace polytope::physics

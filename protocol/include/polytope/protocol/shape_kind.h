// Polytope wire protocol: the engine's shape types as the wire's shape kinds.
//
// A bridge for the code that links both the engine and the protocol (the server's replication, the viewer's
// local scenes): the protocol library itself neither includes nor links the engine, and nothing else should
// include this header. The wire's ShapeKind lists the engine's ShapeType by value; the asserts below keep the
// two enums in step, so a shape added to one and not the other fails to compile wherever shapes cross over.
#pragma once

#include "polytope/physics/shapes.h"
#include "polytope/wire/polytope_generated.h"

#include <array>

namespace polytope::protocol
{

static_assert(static_cast<int>(physics::ShapeType::Sphere) == static_cast<int>(wire::ShapeKind::Sphere) &&
                  static_cast<int>(physics::ShapeType::Capsule) ==
                      static_cast<int>(wire::ShapeKind::Capsule) &&
                  static_cast<int>(physics::ShapeType::Box) == static_cast<int>(wire::ShapeKind::Box) &&
                  static_cast<int>(physics::ShapeType::Hull) == static_cast<int>(wire::ShapeKind::Hull) &&
                  static_cast<int>(physics::ShapeType::Plane) == static_cast<int>(wire::ShapeKind::Plane),
              "wire::ShapeKind must give each physics::ShapeType its value");
static_assert(physics::kShapeTypeCount ==
                  static_cast<int>(wire::ShapeKind::MAX) - static_cast<int>(wire::ShapeKind::MIN) + 1,
              "physics::ShapeType and wire::ShapeKind must have the same number of kinds");

/// The wire's kind of an engine shape type.
constexpr wire::ShapeKind toShapeKind(physics::ShapeType type)
{
    return static_cast<wire::ShapeKind>(type);
}

/// The wire's `extent` of a sphere (r, r, r), capsule (r, half height, r) or box (half extents), in metres
/// (STANDARD.md section 7); false, leaving `extent` alone, for the other kinds, whose extent is a bounding
/// box the caller works out.
inline bool primitiveExtent(const physics::Shape& shape, std::array<float, 3>& extent)
{
    switch (shape.type)
    {
    case physics::ShapeType::Sphere:
        extent = {shape.sphere.radius, shape.sphere.radius, shape.sphere.radius};
        return true;
    case physics::ShapeType::Capsule:
        extent = {shape.capsule.radius, shape.capsule.halfHeight, shape.capsule.radius};
        return true;
    case physics::ShapeType::Box:
        extent = {shape.box.halfExtents.x, shape.box.halfExtents.y, shape.box.halfExtents.z};
        return true;
    default:
        return false;
    }
}

} // namespace polytope::protocol

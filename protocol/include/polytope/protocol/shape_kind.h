// Polytope wire protocol: the engine's shape types as the wire's shape kinds.
//
// A bridge for the code that links both the engine and the protocol (the server's replication, the viewer's
// local scenes): the protocol library itself neither includes nor links the engine, and nothing else should
// include this header. The wire's ShapeKind lists the engine's ShapeType by value; the asserts below keep the
// two enums in step, so a shape added to one and not the other fails to compile wherever shapes cross over.
#pragma once

#include "polytope/physics/shapes.h"
#include "polytope/wire/polytope_generated.h"

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

} // namespace polytope::protocol

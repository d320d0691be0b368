// Polytope physics: collision shapes, in their local frames.
//
// Shapes are plain data. Each narrowphase routine takes two of these structs and the transform of the
// second in the first's local frame; a table indexed by the two ShapeTypes picks the routine.
#pragma once

#include "polytope/physics/math.h"

#include <cstdint>
#include <vector>

namespace polytope::physics
{

enum class ShapeType : std::uint8_t
{
    Sphere = 0,
    Capsule = 1,
    Box = 2,
    Hull = 3,
    Plane = 4, ///< static only: an infinite half-space
};
inline constexpr int kShapeTypeCount = 5;

/// A sphere about the local origin.
struct SphereShape
{
    float radius = 0.5f; ///< metres, > 0
};

/// A capsule: the segment from (0, -halfHeight, 0) to (0, +halfHeight, 0) swept by a sphere.
struct CapsuleShape
{
    float halfHeight = 0.5f; ///< metres, half the length of the core segment, > 0
    float radius = 0.25f;    ///< metres, > 0
};

/// A box centred on the local origin, aligned with the local axes.
struct BoxShape
{
    Vec3 halfExtents{0.5f, 0.5f, 0.5f}; ///< metres, each > 0
};

/// The half-space dot(normal, x) <= offset; `normal` is unit length and points out of the solid.
struct PlaneShape
{
    Vec3 normal{0.0f, 1.0f, 0.0f};
    float offset = 0.0f; ///< metres
};

/// One face of a convex hull: the plane dot(normal, x) == offset and its vertices, counter-clockwise
/// seen from outside, as indices into ConvexHull::faceVertices[firstIndex .. firstIndex + indexCount).
struct HullFace
{
    Vec3 normal{}; ///< unit, outward
    float offset = 0.0f;
    std::uint16_t firstIndex = 0;
    std::uint16_t indexCount = 0;
};

/// One undirected edge of a convex hull, stored once, with the two faces it separates.
struct HullEdge
{
    std::uint16_t v0 = 0;    ///< vertex index
    std::uint16_t v1 = 0;    ///< vertex index
    std::uint16_t face0 = 0; ///< the face on which the edge runs v0 -> v1 counter-clockwise
    std::uint16_t face1 = 0; ///< the face on which the edge runs v1 -> v0 counter-clockwise
};

/// A convex polyhedron in its local frame, as built by buildConvexHull: no coplanar faces (coplanar
/// triangles are merged into polygons), no duplicate or interior vertices.
struct ConvexHull
{
    std::vector<Vec3> vertices;
    std::vector<HullFace> faces;
    std::vector<std::uint16_t> faceVertices; ///< concatenated vertex loops of the faces
    std::vector<HullEdge> edges;             ///< unique edges
    Vec3 centroid{};                         ///< centre of the solid's volume (uniform density)

    // Adjacency, optional: filled by buildConvexHull and makeBoxHull (see buildHullAdjacency in hull.h).
    // Left empty on a hull put together by hand; the narrowphase then takes a slower, exhaustive path.
    std::vector<std::uint16_t> faceEdges;       ///< parallel to faceVertices: the edge from each loop vertex
                                                ///< to the next
    std::vector<std::uint16_t> vertexEdgeStart; ///< vertices.size() + 1 entries: vertex v's edges are
                                                ///< vertexEdges[vertexEdgeStart[v] .. vertexEdgeStart[v + 1])
    std::vector<std::uint16_t> vertexEdges;     ///< edge indices, grouped by vertex, 2 * edges.size() entries
};

/// Mass, centre of mass and inertia of a shape of uniform density, in the shape's local frame.
struct MassProperties
{
    float mass = 0.0f;           ///< kilograms
    Vec3 centerOfMass{};         ///< metres, local frame
    Mat3 inertia = Mat3::zero(); ///< kg m^2, about the centre of mass, local axes
};

/// A shape as a body holds it: the type tag selects which member is meaningful. Hull geometry lives in
/// the world's hull catalogue and is referenced by index, so a Shape stays a small value type.
struct Shape
{
    ShapeType type = ShapeType::Sphere;
    SphereShape sphere{};
    CapsuleShape capsule{};
    BoxShape box{};
    PlaneShape plane{};
    std::uint32_t hullIndex = 0; ///< index into the world's hull catalogue, for ShapeType::Hull

    static Shape makeSphere(float radius)
    {
        Shape s;
        s.type = ShapeType::Sphere;
        s.sphere.radius = radius;
        return s;
    }
    static Shape makeCapsule(float halfHeight, float radius)
    {
        Shape s;
        s.type = ShapeType::Capsule;
        s.capsule = {halfHeight, radius};
        return s;
    }
    static Shape makeBox(const Vec3& halfExtents)
    {
        Shape s;
        s.type = ShapeType::Box;
        s.box.halfExtents = halfExtents;
        return s;
    }
    static Shape makePlane(const Vec3& normal, float offset)
    {
        Shape s;
        s.type = ShapeType::Plane;
        s.plane = {normal, offset};
        return s;
    }
};

} // namespace polytope::physics

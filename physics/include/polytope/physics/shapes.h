// Polytope physics: collision shapes, in their local frames.
//
// Shapes are plain data. Each narrowphase routine takes two of these structs and the transform of the
// second in the first's local frame; a table indexed by the two ShapeTypes picks the routine for the convex
// shapes and planes (narrowphase.h), and collide_composite.h serves compounds, triangle meshes and
// heightfields, whose geometry lives in the world's catalogues (ShapeCatalogue).
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
    Plane = 4,       ///< static only: an infinite half-space
    Compound = 5,    ///< several convex children at local transforms (CompoundShape), any body type
    Mesh = 6,        ///< a triangle mesh (triangle_mesh.h): static or kinematic bodies only
    HeightField = 7, ///< a heightfield (heightfield.h): static or kinematic bodies only
};
/// Every shape type.
inline constexpr int kShapeTypeCount = 8;
/// The types with a routine per pair in the narrowphase table (narrowphase.h): Sphere .. Plane.
inline constexpr int kPrimitiveShapeTypeCount = 5;

/// Whether `type` is convex (sphere, capsule, box, hull): what compounds are made of and what queries cast.
constexpr bool isConvexType(ShapeType type)
{
    return type == ShapeType::Sphere || type == ShapeType::Capsule || type == ShapeType::Box ||
           type == ShapeType::Hull;
}

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

/// A shape as a body holds it: the type tag selects which member is meaningful. Hulls, compounds, meshes
/// and heightfields live in the world's catalogues and are referenced by index, so a Shape stays a small
/// value type.
struct Shape
{
    ShapeType type = ShapeType::Sphere;
    SphereShape sphere{};
    CapsuleShape capsule{};
    BoxShape box{};
    PlaneShape plane{};
    std::uint32_t hullIndex = 0;      ///< index into the world's hull catalogue, for ShapeType::Hull
    std::uint32_t catalogueIndex = 0; ///< Compound, Mesh, HeightField: index into the world's catalogue of
                                      ///< that type (World::addCompound, addMesh, addHeightField)

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
    static Shape makeHull(std::uint32_t hullIndex)
    {
        Shape s;
        s.type = ShapeType::Hull;
        s.hullIndex = hullIndex;
        return s;
    }
    /// A compound, mesh or heightfield: `type` with its catalogue index.
    static Shape makeCatalogued(ShapeType type, std::uint32_t catalogueIndex)
    {
        Shape s;
        s.type = type;
        s.catalogueIndex = catalogueIndex;
        return s;
    }
};

/// Most children a compound may have. Contacts visit every child whose box meets the other shape's, so
/// a compound is meant for a handful to a few dozen parts (a chair, a vehicle's hull, a dumbbell); a level
/// made of many pieces is a triangle mesh.
inline constexpr std::uint32_t kMaxCompoundChildren = 64;

/// One part of a compound: a convex shape (sphere, capsule, box or hull) at a transform in the compound's
/// frame.
struct CompoundChild
{
    Shape shape{};
    Transform transform{}; ///< the child's shape origin in the compound's frame; unit rotation
};

/// Several convex shapes moving as one rigid body (after Jolt's StaticCompoundShape and Bullet's
/// btCompoundShape). Its mass, centre of mass and inertia are those of the union of its children at one
/// density (overlaps counted twice, as in Jolt and Bullet). Contacts with it are gathered from the
/// children and reduced to one manifold per body pair, as for meshes (collide_composite.h).
struct CompoundShape
{
    std::vector<CompoundChild> children; ///< 1 .. kMaxCompoundChildren
};

} // namespace polytope::physics

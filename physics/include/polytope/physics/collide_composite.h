// Polytope physics: contacts with compounds, triangle meshes and heightfields, and the shape catalogues.
//
// A compound, mesh or heightfield is made of many convex pieces: children, or triangles. A pair with one
// of them is collided piece by piece with the routines that exist for convex shapes (the narrowphase table
// of narrowphase.h for child against child or plane, collideConvexTriangle of collide_triangle.h for a
// convex piece against a triangle), and the pieces' manifolds are reduced to one per body pair with
// reduceManifolds: the deepest point's normal and up to four points that span the contact. So a box
// resting across two triangles, or a table on its four legs, is held by four well spread points, as the
// solver wants, and the body pair keeps one contact record.
//
// Roles. The World orders a pair so that A is the convex shape or the compound and B the other (a plane,
// mesh or heightfield is always B; between a convex shape and a compound the convex shape is A). The
// routine accepts any order of convex shapes and compounds for A, and any shape for B except that A may
// not be a plane, mesh or heightfield; manifolds are in A's frame, normal from A towards B.
//
// Pieces visited. For each piece of A (A itself when convex; each child of a compound), the pieces of B
// whose boxes meet the piece's box grown by the margin: every child of a compound B (children are few:
// kMaxCompoundChildren), the triangles from the mesh's tree or the heightfield's grid. A piece pair's points
// carry feature ids mixed with the piece indices (combineTriangleFeatureId), so they stay stable while a
// contact persists and differ between pieces.
//
// One normal per body pair. Pieces whose normals lie more than 45 degrees from the deepest point's are left
// out of the manifold (see reduceManifolds): a box pressed into a concave corner is held along its deepest
// contact each step. This is the limit of one contact record per body pair (Box2D v3 makes one per shape
// pair instead); the pieces' own contacts are exact.
#pragma once

#include "polytope/physics/collide_triangle.h"
#include "polytope/physics/manifold.h"
#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <span>
#include <vector>

namespace polytope::physics
{

class TriangleMesh;
class HeightField;

/// Where catalogued shapes find their geometry: Shape::hullIndex indexes `hulls`, Shape::catalogueIndex
/// indexes `compounds`, `meshes` or `heightFields` by the shape's type. Views only; the World owns the
/// catalogues (World::catalogue()).
struct ShapeCatalogue
{
    std::span<const ConvexHull> hulls;
    std::span<const CompoundShape> compounds;
    std::span<const TriangleMesh* const> meshes;
    std::span<const HeightField* const> heightFields;
};

/// The tight world-frame box of a primitive `shape` (not a plane) placed at `transform`; hulls come from
/// `hulls`. Compounds, meshes and heightfields: shapeBoundsAt.
Aabb tightBoxOf(const Shape& shape, const Transform& transform, std::span<const ConvexHull> hulls);

/// Whether `type` is a compound, mesh or heightfield: collided by collideComposite, not by the table.
constexpr bool isCompositeType(ShapeType type)
{
    return type == ShapeType::Compound || type == ShapeType::Mesh || type == ShapeType::HeightField;
}

/// The world-frame box of `shape` (any type but a plane) placed at `transform`: tight for primitives and
/// compounds (the union of the children's), the transformed local box of a mesh or heightfield. Indices
/// must be valid for `catalogue`.
Aabb shapeBoundsAt(const Shape& shape, const Transform& transform, const ShapeCatalogue& catalogue);

/// The contact manifold between A and B, in A's frame, when either is a compound, mesh or heightfield (see
/// the file comment for roles: A is a convex shape or a compound). `scratch` collects the pieces'
/// manifolds: it grows when a contact has more pieces than ever before and is otherwise reused, so a warm
/// step allocates nothing; one per thread. Points up to `speculativeMarginMeters` apart are kept, at most
/// kMaxManifoldPoints. An order of roles the routine does not serve gives an empty manifold.
ContactManifold collideComposite(const Shape& a, const Shape& b, const Transform& bInA,
                                 float speculativeMarginMeters, const ShapeCatalogue& catalogue,
                                 std::vector<TriangleContactManifold>& scratch);

/// Any pair: the table (collideShapesLocal) for primitives, collideComposite otherwise.
ContactManifold collideAnyShapes(const Shape& a, const Shape& b, const Transform& bInA,
                                 float speculativeMarginMeters, const ShapeCatalogue& catalogue,
                                 std::vector<TriangleContactManifold>& scratch);

/// Calls fn(const Shape& child, const Transform& childInShape, std::uint32_t childIndex) for each convex
/// piece of a convex shape (itself, identity, 0) or compound (its children). Nothing for other types.
template <class Fn> void forEachConvexPiece(const Shape& shape, const ShapeCatalogue& catalogue, Fn&& fn)
{
    if (isConvexType(shape.type))
    {
        fn(shape, Transform::identity(), 0u);
    }
    else if (shape.type == ShapeType::Compound)
    {
        const CompoundShape& compound = catalogue.compounds[shape.catalogueIndex];
        for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(compound.children.size()); ++i)
        {
            fn(compound.children[i].shape, compound.children[i].transform, i);
        }
    }
}

} // namespace polytope::physics

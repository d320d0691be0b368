// Contacts with compounds, triangle meshes and heightfields (see collide_composite.h).
#include "polytope/physics/collide_composite.h"

#include "polytope/physics/collide_triangle.h"
#include "polytope/physics/heightfield.h"
#include "polytope/physics/narrowphase.h"
#include "polytope/physics/triangle_mesh.h"

namespace polytope::physics
{

namespace
{

/// The world box of the local box `local` under `xf`.
Aabb transformedBox(const Aabb& local, const Transform& xf)
{
    const Mat3 m = toMat3(xf.q);
    const Vec3 c = transformPoint(xf, local.center());
    const Vec3 h = local.extents();
    const Vec3 e = absPerElem(m.c0) * h.x + absPerElem(m.c1) * h.y + absPerElem(m.c2) * h.z;
    return {c - e, c + e};
}

Aabb grown(const Aabb& box, float by)
{
    const Vec3 d{by, by, by};
    return {box.min - d, box.max + d};
}

/// `m` (in a child's frame) expressed in its parent's frame, the child at `childInParent`.
ContactManifold toParent(const ContactManifold& m, const Transform& childInParent)
{
    ContactManifold out = m;
    out.normal = rotate(childInParent.q, m.normal);
    for (int i = 0; i < m.pointCount; ++i)
    {
        out.points[i].pointA = transformPoint(childInParent, m.points[i].pointA);
        out.points[i].pointB = transformPoint(childInParent, m.points[i].pointB);
    }
    return out;
}

/// `m` exactly as toParent(m, Transform::identity()) gives it, without the points' rotations. The identity's
/// arithmetic changes nothing but the sign of a zero, and orthonormalBasis of a normal reads that sign: the
/// normal is still rotated (its zeros' signs follow the rotation's rule), and the points get the
/// translation's +0, which turns any -0 into +0 as transformPoint's last sum does.
ContactManifold atIdentity(const ContactManifold& m)
{
    const Vec3 zero{};
    ContactManifold out = m;
    out.normal = rotate(Quat::identity(), m.normal);
    for (int i = 0; i < m.pointCount; ++i)
    {
        out.points[i].pointA = m.points[i].pointA + zero;
        out.points[i].pointB = m.points[i].pointB + zero;
    }
    return out;
}

/// The index a piece pair's points are named by: B's piece alone when A is a single convex shape, so that a
/// convex shape on a mesh gets the same ids as collideConvexTriangle and reduceManifolds give; else mixed.
constexpr std::uint32_t piecePairIndex(std::uint32_t pieceA, std::uint32_t pieceB)
{
    return pieceB + pieceA * 0x9E3779B1u;
}

} // namespace

Aabb shapeBoundsAt(const Shape& shape, const Transform& transform, const ShapeCatalogue& catalogue)
{
    switch (shape.type)
    {
    case ShapeType::Compound:
    {
        const CompoundShape& compound = catalogue.compounds[shape.catalogueIndex];
        Aabb box{};
        bool first = true;
        for (const CompoundChild& child : compound.children)
        {
            const Aabb c = tightBoxOf(child.shape, transform * child.transform, catalogue.hulls);
            box = first ? c : unionOf(box, c);
            first = false;
        }
        return box;
    }
    case ShapeType::Mesh:
        return transformedBox(catalogue.meshes[shape.catalogueIndex]->bounds(), transform);
    case ShapeType::HeightField:
        return transformedBox(catalogue.heightFields[shape.catalogueIndex]->localBounds(), transform);
    default:
        return tightBoxOf(shape, transform, catalogue.hulls);
    }
}

ContactManifold collideComposite(const Shape& a, const Shape& b, const Transform& bInA,
                                 float speculativeMarginMeters, const ShapeCatalogue& catalogue,
                                 std::vector<TriangleContactManifold>& scratch)
{
    if (!(isConvexType(a.type) || a.type == ShapeType::Compound))
    {
        return {};
    }
    scratch.clear();
    const float margin = speculativeMarginMeters;
    // A convex A is its own single piece, at the identity: its pieces' manifolds are in A's frame already.
    const bool pieceIsA = isConvexType(a.type);
    const auto add = [&](std::uint32_t index, const ContactManifold& m, const Transform& pieceInA)
    {
        if (m.pointCount > 0)
        {
            scratch.push_back({index, pieceIsA ? atIdentity(m) : toParent(m, pieceInA)});
        }
    };
    // A piece against the triangles of a mesh or heightfield (both offer forEachTriangleOverlapping and
    // activeEdges) near its box in their frame.
    const auto againstTriangles = [&](const auto& triangles, const Shape& piece, std::uint32_t pieceIndex,
                                      const Transform& pieceInA, const Transform& trianglesInPiece)
    {
        const Aabb box = grown(tightBoxOf(piece, inverse(trianglesInPiece), catalogue.hulls), margin);
        const TrianglePlaneCull cull(piece, catalogue.hulls, trianglesInPiece, margin);
        triangles.forEachTriangleOverlapping(box,
                                             [&](std::uint32_t t, const Triangle& triangle)
                                             {
                                                 if (cull.apart(triangle))
                                                 {
                                                     return;
                                                 }
                                                 add(piecePairIndex(pieceIndex, t),
                                                     collideConvexTriangle(piece, catalogue.hulls,
                                                                           trianglesInPiece, triangle,
                                                                           triangles.activeEdges(t), margin),
                                                     pieceInA);
                                             });
    };
    forEachConvexPiece(
        a, catalogue,
        [&](const Shape& pieceA, const Transform& pieceInA, std::uint32_t indexA)
        {
            const Transform bInPiece = relativeTransform(pieceInA, bInA);
            switch (b.type)
            {
            case ShapeType::Compound:
            {
                const CompoundShape& compound = catalogue.compounds[b.catalogueIndex];
                const Aabb pieceBox =
                    grown(tightBoxOf(pieceA, Transform::identity(), catalogue.hulls), margin);
                for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(compound.children.size()); ++i)
                {
                    const CompoundChild& child = compound.children[i];
                    const Transform childInPiece = bInPiece * child.transform;
                    if (!tightBoxOf(child.shape, childInPiece, catalogue.hulls).overlaps(pieceBox))
                    {
                        continue;
                    }
                    add(piecePairIndex(indexA, i),
                        collideShapesLocal(pieceA, child.shape, childInPiece, margin, catalogue.hulls),
                        pieceInA);
                }
                break;
            }
            case ShapeType::Mesh:
                againstTriangles(*catalogue.meshes[b.catalogueIndex], pieceA, indexA, pieceInA, bInPiece);
                break;
            case ShapeType::HeightField:
                againstTriangles(*catalogue.heightFields[b.catalogueIndex], pieceA, indexA, pieceInA,
                                 bInPiece);
                break;
            default: // a convex shape or a plane: the table
                add(piecePairIndex(indexA, 0),
                    collideShapesLocal(pieceA, b, bInPiece, margin, catalogue.hulls), pieceInA);
                break;
            }
        });
    ContactManifold out;
    reduceManifolds(scratch, out);
    return out;
}

ContactManifold collideAnyShapes(const Shape& a, const Shape& b, const Transform& bInA,
                                 float speculativeMarginMeters, const ShapeCatalogue& catalogue,
                                 std::vector<TriangleContactManifold>& scratch)
{
    if (isCompositeType(a.type) || isCompositeType(b.type))
    {
        return collideComposite(a, b, bInA, speculativeMarginMeters, catalogue, scratch);
    }
    return collideShapesLocal(a, b, bInA, speculativeMarginMeters, catalogue.hulls);
}

} // namespace polytope::physics

// Polytope physics: world queries, rays, shape casts, overlaps and distances against every body.
//
// Rationale (the role of Jolt's NarrowPhaseQuery and Box2D v3's b2World_CastRay / b2World_OverlapShape,
// written afresh for this world):
// - Candidates come from the broadphase tree, which holds every body but the planes; planes are infinite,
//   few, and tested one by one first. A ray walks the tree with BroadphaseTree::rayCast; a shape cast
//   sweeps the shape's box through it with boxCast; overlaps and distances query a box. Both casts clip the
//   walk at the best hit so far, so a closest query skips what lies behind it.
// - Each body is then tested exactly by the single-shape routines, in the body's local frame (raycast.h's
//   rayShape, shape_cast.h's castShape, GJK and EPA on support functions) and the result is brought back to
//   the world frame. The ray and cast tests of one body are public (shape_queries.h), so that a caller
//   holding poses of its own (the server's rewind for lag compensation) gets the same answers. The tree's
//   boxes are fat (the broadphase margin around each shape), so its float slab and box tests never drop a
//   body the exact test would hit; only with WorldConfig::broadphaseMargin 0 could a hit that grazes a body's
//   bounding box within float rounding be missed.
// - Compounds are tested child by child, meshes and heightfields triangle by triangle, in the body's frame:
//   the triangles whose boxes meet the query's box (for a cast, the start box swept to the walk's clip)
//   come from the mesh's tree or the heightfield's grid, and each is tested as a two-sided flat convex set
//   (castShapeTriangle; GJK and EPA on TriangleSupport about the triangle's first vertex, where coordinates
//   are as small as the triangle). A cast skips the triangles its box enters only past the first hit so far
//   (a slab test on the boxes) and hands that hit's fraction to the next cast as its cutoff; a distance query
//   skips the triangles whose box lies farther than the nearest so far. Neither changes what is found: the
//   first (or nearest) triangle, ties to the lower triangle index, exactly as a test of every triangle.
// - The closest query compares (fraction, body index): a tie goes to the lower index, whatever order the
//   tree visits the bodies in, so results are the same on every run and every thread. A hit at fraction 0
//   does not stop the walk (0 would mean "stop" to the tree): the walk is clipped to the smallest positive
//   float instead, which still visits every body whose box holds the start.
// - Nothing here writes to the world or to shared scratch: traversal stacks and EPA's polytope live on the
//   calling thread's stack, callbacks are FunctionRefs. So queries are const, allocate nothing, and may run
//   on several threads at once between steps.
#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/heightfield.h"
#include "polytope/physics/mass.h"
#include "polytope/physics/shape_queries.h"
#include "polytope/physics/support.h"
#include "polytope/physics/triangle_mesh.h"
#include "polytope/physics/world.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace polytope::physics
{
namespace
{

/// The clip handed back to the tree after a hit at `fraction`: never 0, which would stop the walk.
float clipAt(float fraction)
{
    return std::max(fraction, std::numeric_limits<float>::min());
}

bool validRay(const RayCastInput& ray)
{
    return isFinite(ray.origin) && isFinite(ray.translation) && std::isfinite(ray.maxFraction) &&
           ray.maxFraction >= 0.0f;
}

bool validPose(const Transform& t)
{
    return isFinite(t.p) && isFinite(t.q) && dot(t.q, t.q) > 1e-12f;
}

bool validSize(float v)
{
    return v > 0.0f && v <= kMaxShapeSizeMeters; // NaN fails
}

/// A query shape: a sphere, capsule, box or hull of the catalogue with sane sizes (the catalogue's hulls
/// were checked by addHull). Without allocating, unlike validateShape.
bool validQueryShape(const Shape& s, std::span<const ConvexHull> hulls)
{
    switch (s.type)
    {
    case ShapeType::Sphere:
        return validSize(s.sphere.radius);
    case ShapeType::Capsule:
        return validSize(s.capsule.radius) && validSize(s.capsule.halfHeight);
    case ShapeType::Box:
        return validSize(s.box.halfExtents.x) && validSize(s.box.halfExtents.y) &&
               validSize(s.box.halfExtents.z);
    case ShapeType::Hull:
        return s.hullIndex < hulls.size() && !hulls[s.hullIndex].vertices.empty();
    default: // planes, compounds, meshes, heightfields
        break;
    }
    return false;
}

float maxAbs(const Vec3& v)
{
    return std::max(std::fabs(v.x), std::max(std::fabs(v.y), std::fabs(v.z)));
}

/// The tight box of a valid query shape at `pose` (rotation normalised), padded by what float rounding of
/// the box's centre and extents may lose, plus `grow` metres.
Aabb queryBox(const Shape& shape, const Transform& pose, std::span<const ConvexHull> hulls, float grow)
{
    const Aabb tight = tightBoxOf(shape, {pose.p, normalize(pose.q)}, hulls);
    const float pad = 1e-5f * (maxAbs(tight.center()) + maxAbs(tight.extents())) + grow;
    const Vec3 padding{pad, pad, pad};
    return {tight.min - padding, tight.max + padding};
}

/// The query shape's deepest point toward a plane body's half-space, in the plane's frame, and its signed
/// distance from the plane (<= 0: in the half-space). `shapeInPlane` is the shape's pose in that frame.
float deepestTowardPlane(const Shape& shape, const Transform& shapeInPlane, const PlaneShape& plane,
                         std::span<const ConvexHull> hulls, Vec3& deepest)
{
    const Vec3 down = inverseRotate(shapeInPlane.q, -plane.normal);
    deepest = transformPoint(
        shapeInPlane, withSupport(shape, hulls, [&](const auto& support) { return support.support(down); }));
    return dot(plane.normal, deepest) - plane.offset;
}

// ---- Triangles of meshes and heightfields
// ------------------------------------------------------------------

bool isTriangleShape(ShapeType type)
{
    return type == ShapeType::Mesh || type == ShapeType::HeightField;
}

/// Calls fn(std::uint32_t triangle, const Triangle&) -> bool for each triangle of a mesh or heightfield
/// shape whose box meets `box` (the shape's local frame), until fn returns false. Holes have no triangles.
template <class Fn>
void forEachTriangle(const Shape& shape, const ShapeCatalogue& catalogue, const Aabb& box, Fn&& fn)
{
    if (shape.type == ShapeType::Mesh)
    {
        catalogue.meshes[shape.catalogueIndex]->forEachTriangleOverlapping(box, fn);
    }
    else
    {
        catalogue.heightFields[shape.catalogueIndex]->forEachTriangleOverlapping(box, fn);
    }
}

Aabb boxOf(const Triangle& t)
{
    return {minPerElem(t.a, minPerElem(t.b, t.c)), maxPerElem(t.a, maxPerElem(t.b, t.c))};
}

/// The triangle moved so that its vertex a is the origin: overlap and distance queries test a triangle in
/// that frame, where coordinates are as small as the triangle and the query shape, not the mesh.
TriangleSupport aboutFirstVertex(const Triangle& t)
{
    return {Vec3{}, t.b - t.a, t.c - t.a};
}

/// The first fraction t >= 0 at which `box` moved by t * `step` meets `target` (closed boxes), or +infinity
/// when it never does: a lower bound on the time of impact of any shape inside `box` on anything inside
/// `target`, given that `box` holds its shape with room for rounding.
float boxSweepEntry(const Aabb& box, const Vec3& step, const Aabb& target)
{
    constexpr float kNever = std::numeric_limits<float>::infinity();
    float enter = 0.0f;
    float exit = kNever;
    for (int axis = 0; axis < 3; ++axis)
    {
        // The boxes overlap along this axis while low <= t * step <= high.
        const float low = target.min[axis] - box.max[axis];
        const float high = target.max[axis] - box.min[axis];
        const float s = step[axis];
        if (s == 0.0f)
        {
            if (low > 0.0f || high < 0.0f)
            {
                return kNever;
            }
            continue;
        }
        const float t0 = low / s;
        const float t1 = high / s;
        enter = std::max(enter, std::min(t0, t1));
        exit = std::min(exit, std::max(t0, t1));
    }
    return enter <= exit ? enter : kNever;
}

/// The distance between two closed boxes (0 when they meet): no point of one is nearer the other.
float boxGap(const Aabb& a, const Aabb& b)
{
    const Vec3 gap = maxPerElem(maxPerElem(a.min - b.max, b.min - a.max), Vec3{});
    return length(gap);
}

/// The first triangle of a mesh or heightfield body at `xf` that `cast` touches (smallest fraction, ties to
/// the lower triangle index), by castShapeTriangle on each triangle whose box the cast's swept box meets,
/// up to `clip`; each hit cuts the sweep short for the triangles after it. False when none is touched.
bool castOnTriangles(const ShapeCastInput& cast, const Shape& body, const Transform& xf,
                     const ShapeCatalogue& catalogue, float clip, ShapeCastHit& hit, std::uint32_t& triangle)
{
    const Transform startInBody = relativeTransform(xf, cast.start);
    const Vec3 step = inverseRotate(xf.q, cast.translation);
    const Aabb startBox = queryBox(cast.shape, startInBody, catalogue.hulls, 0.0f);
    float best = std::min(cast.maxFraction, clip);
    const Vec3 reach = step * best;
    const float pad = 1e-5f * maxAbs(reach);
    const Vec3 padding{pad, pad, pad};
    const Aabb swept{minPerElem(startBox.min, startBox.min + reach) - padding,
                     maxPerElem(startBox.max, startBox.max + reach) + padding};
    bool found = false;
    forEachTriangle(body, catalogue, swept,
                    [&](std::uint32_t t, const Triangle& candidate)
                    {
                        ShapeCastHit candidateHit;
                        if (boxSweepEntry(startBox, step, boxOf(candidate)) <= best &&
                            castShapeTriangle(cast, candidate, xf, catalogue.hulls, candidateHit, best) &&
                            (!found || candidateHit.fraction < hit.fraction ||
                             (candidateHit.fraction == hit.fraction && t < triangle)))
                        {
                            found = true;
                            hit = candidateHit;
                            triangle = t;
                            best = candidateHit.fraction;
                        }
                        return true;
                    });
    return found;
}

/// Whether `shape` at `shapeInBody` (the mesh's or heightfield's frame) overlaps or touches `triangle`
/// (GJK, in the triangle's frame).
bool overlapsTriangle(const Shape& shape, const Transform& shapeInBody, const Triangle& triangle,
                      std::span<const ConvexHull> hulls)
{
    const Transform shapeInTriangle{shapeInBody.p - triangle.a, shapeInBody.q};
    const TriangleSupport support = aboutFirstVertex(triangle);
    return withSupport(
        shape, hulls,
        [&](const auto& query)
        { return gjkIntersect(support, transformed(query, shapeInTriangle), shapeInTriangle.p); });
}

/// The triangle of a mesh or heightfield body at `xf` nearest `shape` at `pose` (both in the world frame)
/// within `maxDistance` (ties to the lower triangle index), by GJK and EPA in each triangle's frame. Fills
/// every field of `result` but the body; false when no triangle is that near.
bool nearestTriangle(const Shape& shape, const Transform& pose, const Shape& body, const Transform& xf,
                     const ShapeCatalogue& catalogue, float maxDistance, DistanceQueryResult& result)
{
    const Transform shapeInBody = relativeTransform(xf, pose);
    const Aabb shapeBox = queryBox(shape, shapeInBody, catalogue.hulls, 0.0f);
    bool found = false;
    forEachTriangle(
        body, catalogue, queryBox(shape, shapeInBody, catalogue.hulls, maxDistance),
        [&](std::uint32_t t, const Triangle& triangle)
        {
            if (found && boxGap(shapeBox, boxOf(triangle)) > std::max(result.distance, 0.0f))
            {
                return true; // apart by more than the nearest so far (a gap bounds distances, not depths)
            }
            // The triangle is A, the query shape B: EPA's normal points from the triangle toward the shape.
            const Transform shapeInTriangle{shapeInBody.p - triangle.a, shapeInBody.q};
            const TriangleSupport support = aboutFirstVertex(triangle);
            const PenetrationResult pen = withSupport(
                shape, catalogue.hulls,
                [&](const auto& query) {
                    return penetrationDepth(support, transformed(query, shapeInTriangle), shapeInTriangle.p);
                });
            const float distance = pen.distance > 0.0f ? pen.distance : -pen.depth;
            if (!(distance <= maxDistance) ||
                (found &&
                 !(distance < result.distance || (distance == result.distance && t < result.subShape))))
            {
                return true;
            }
            found = true;
            result.distance = distance;
            result.pointOnBody = transformPoint(xf, pen.pointOnA + triangle.a);
            result.pointOnShape = transformPoint(xf, pen.pointOnB + triangle.a);
            result.normal = rotate(xf.q, pen.normal);
            result.subShape = t;
            return true;
        });
    return found;
}

/// The hits of a cast (a ray or a shape) as castRayAll reports them: the planes first, then the bodies the
/// tree walk meets, each through onHit(const Hit&) -> float, whose value clips the walk (0 stops it).
/// hitOn(index, clip, hit) is the filtered exact test of one body, which may skip hits past `clip` (the
/// walk's current clip); walkTree(clip, visit) walks the tree up to
/// fraction `clip`, calling visit(body index, current clip) -> float for each body it meets.
template <class Hit, class HitOn, class WalkTree, class OnHit>
void everyHit(std::span<const std::uint32_t> planes, float maxFraction, HitOn&& hitOn, WalkTree&& walkTree,
              OnHit&& onHit)
{
    float clip = maxFraction;
    for (const std::uint32_t plane : planes)
    {
        Hit candidate;
        if (hitOn(plane, clip, candidate) && candidate.fraction <= clip)
        {
            const float value = onHit(candidate);
            if (value == 0.0f)
            {
                return;
            }
            if (value > 0.0f && value < clip)
            {
                clip = value;
            }
        }
    }
    walkTree(clip,
             [&](std::uint32_t index, float current)
             {
                 Hit candidate;
                 if (hitOn(index, current, candidate) && candidate.fraction <= current)
                 {
                     return onHit(candidate);
                 }
                 return -1.0f;
             });
}

/// The closest of everyHit's hits, ties to the lower body index; each hit clips the walk at the best so
/// far. Returns false, leaving `hit` alone, when nothing is hit.
template <class Hit, class HitOn, class WalkTree>
bool closestHit(std::span<const std::uint32_t> planes, float maxFraction, HitOn&& hitOn, WalkTree&& walkTree,
                Hit& hit)
{
    bool found = false;
    Hit best;
    everyHit<Hit>(planes, maxFraction, hitOn, walkTree,
                  [&](const Hit& candidate)
                  {
                      if (!found || candidate.fraction < best.fraction ||
                          (candidate.fraction == best.fraction && candidate.body.index < best.body.index))
                      {
                          best = candidate;
                          found = true;
                      }
                      return clipAt(best.fraction);
                  });
    if (found)
    {
        hit = best;
    }
    return found;
}

/// The tree walk of a ray: visit(body index, current clip) -> float for every body whose fat box it meets.
/// Walks `walkOne(tree, clip, wrapped)` over the static tree, then the moving one, carrying the clip across:
/// the second walk starts from the best hit of the first, and a stop (0) ends both.
template <class WalkOne, class Visit>
void walkTrees(const BroadphaseTree& staticTree, const BroadphaseTree& movingTree, float clip,
               WalkOne&& walkOne, Visit&& visit)
{
    bool stopped = false;
    const auto wrapped = [&](const BroadphaseTree& tree)
    {
        return [&](std::int32_t proxy, float current)
        {
            const float value = visit(static_cast<std::uint32_t>(tree.userData(proxy)), current);
            if (value == 0.0f)
            {
                stopped = true;
            }
            else if (value > 0.0f && value < clip)
            {
                clip = value;
            }
            return value;
        };
    };
    walkOne(staticTree, clip, wrapped(staticTree));
    if (!stopped)
    {
        walkOne(movingTree, clip, wrapped(movingTree));
    }
}

/// The tree walk of a ray: visit(body index, current clip) -> float for every body whose fat box it meets.
template <class Visit>
void walkRay(const BroadphaseTree& staticTree, const BroadphaseTree& movingTree, const RayCastInput& ray,
             float clip, Visit&& visit)
{
    walkTrees(
        staticTree, movingTree, clip,
        [&](const BroadphaseTree& tree, float from, auto&& fn)
        { tree.rayCast(ray.origin, ray.translation, from, fn); },
        visit);
}

/// The tree walk of a shape cast, sweeping the shape's padded box; as walkRay.
template <class Visit>
void walkCast(const BroadphaseTree& staticTree, const BroadphaseTree& movingTree, const ShapeCastInput& cast,
              std::span<const ConvexHull> hulls, float clip, Visit&& visit)
{
    const Aabb box = queryBox(cast.shape, cast.start, hulls, 0.0f);
    walkTrees(
        staticTree, movingTree, clip,
        [&](const BroadphaseTree& tree, float from, auto&& fn)
        { tree.boxCast(box, cast.translation, from, fn); },
        visit);
}

} // namespace

bool World::queryAccepts(const QueryFilter& filter, std::uint32_t index) const
{
    const Body& body = m_bodies[index];
    const auto typeBit = static_cast<std::uint8_t>(1u << static_cast<unsigned>(body.type));
    if (!body.alive || ((filter.layerMask >> body.layer) & 1u) == 0 || (filter.bodyTypes & typeBit) == 0 ||
        (filter.ignoreGroup != 0 && body.group == filter.ignoreGroup) ||
        (body.sensor && !filter.includeSensors))
    {
        return false;
    }
    const BodyId id{index, body.generation};
    return id != filter.ignoreBody && (!filter.accept || filter.accept(id));
}

// ---- Rays
// ---------------------------------------------------------------------------------------------------

bool castRayAgainstShape(const RayCastInput& ray, const Shape& shape, const Transform& transform,
                         const ShapeCatalogue& catalogue, RayCastHit& hit, std::uint32_t& subShape)
{
    const Transform& xf = transform;
    const RayCastInput local{inverseTransformPoint(xf, ray.origin), inverseRotate(xf.q, ray.translation),
                             ray.maxFraction};
    RayCastHit localHit;
    std::uint32_t piece = 0;
    bool found = false;
    // A mesh or heightfield: their ray hits carry the same fields.
    const auto closestTriangle = [&](const auto& triangles, auto mode, auto triangleHit)
    {
        found = triangles.castRay(local, mode, triangleHit);
        localHit = triangleHit.hit;
        piece = triangleHit.triangle;
    };
    switch (shape.type)
    {
    case ShapeType::Mesh:
        closestTriangle(*catalogue.meshes[shape.catalogueIndex], MeshRayMode::Closest, MeshRayCastHit{});
        break;
    case ShapeType::HeightField:
        closestTriangle(*catalogue.heightFields[shape.catalogueIndex], HeightFieldRayMode::Closest,
                        HeightFieldRayHit{});
        break;
    case ShapeType::Compound:
    {
        // The closest child: each in its own frame, ties to the lower child index.
        const CompoundShape& compound = catalogue.compounds[shape.catalogueIndex];
        for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(compound.children.size()); ++i)
        {
            const CompoundChild& child = compound.children[i];
            const RayCastInput inChild{inverseTransformPoint(child.transform, local.origin),
                                       inverseRotate(child.transform.q, local.translation),
                                       local.maxFraction};
            RayCastHit childHit;
            if (rayShape(child.shape, inChild, catalogue.hulls, childHit) &&
                (!found || childHit.fraction < localHit.fraction))
            {
                found = true;
                piece = i;
                localHit = {childHit.fraction, transformPoint(child.transform, childHit.point),
                            rotate(child.transform.q, childHit.normal)};
            }
        }
        break;
    }
    default:
        found = rayShape(shape, local, catalogue.hulls, localHit);
        break;
    }
    if (!found)
    {
        return false;
    }
    hit = {localHit.fraction, transformPoint(xf, localHit.point), rotate(xf.q, localHit.normal)};
    subShape = piece;
    return true;
}

bool World::rayOnBody(const RayCastInput& ray, std::uint32_t index, RayQueryHit& hit) const
{
    RayCastHit shapeHit;
    std::uint32_t subShape = 0;
    if (!castRayAgainstShape(ray, m_shapes[index], m_sims[index].transform, catalogue(), shapeHit, subShape))
    {
        return false;
    }
    hit.body = {index, m_bodies[index].generation};
    hit.fraction = shapeHit.fraction;
    hit.point = shapeHit.point;
    hit.normal = shapeHit.normal;
    hit.subShape = subShape;
    return true;
}

bool World::castRayClosest(const RayCastInput& ray, const QueryFilter& filter, RayQueryHit& hit) const
{
    return validRay(ray) &&
           closestHit(
               m_planes, ray.maxFraction,
               [&](std::uint32_t index, float, RayQueryHit& candidate)
               { return queryAccepts(filter, index) && rayOnBody(ray, index, candidate); },
               [&](float clip, auto&& visit) { walkRay(m_staticTree, m_broadphase, ray, clip, visit); }, hit);
}

bool World::castRayAny(const RayCastInput& ray, const QueryFilter& filter, RayQueryHit& hit) const
{
    if (!validRay(ray))
    {
        return false;
    }
    for (const std::uint32_t plane : m_planes)
    {
        if (queryAccepts(filter, plane) && rayOnBody(ray, plane, hit))
        {
            return true;
        }
    }
    bool found = false;
    walkRay(m_staticTree, m_broadphase, ray, ray.maxFraction,
            [&](std::uint32_t index, float)
            {
                found = queryAccepts(filter, index) && rayOnBody(ray, index, hit);
                return found ? 0.0f : -1.0f;
            });
    return found;
}

void World::castRayAll(const RayCastInput& ray, const QueryFilter& filter, RayHitCallback onHit) const
{
    if (!validRay(ray))
    {
        return;
    }
    everyHit<RayQueryHit>(
        m_planes, ray.maxFraction,
        [&](std::uint32_t index, float, RayQueryHit& candidate)
        { return queryAccepts(filter, index) && rayOnBody(ray, index, candidate); },
        [&](float clip, auto&& visit) { walkRay(m_staticTree, m_broadphase, ray, clip, visit); }, onHit);
}

// ---- Shape casts
// --------------------------------------------------------------------------------------------

bool castShapeAgainstShape(const ShapeCastInput& cast, const Shape& shape, const Transform& transform,
                           const ShapeCatalogue& catalogue, ShapeCastHit& hit, std::uint32_t& subShape,
                           float clip)
{
    ShapeCastHit shapeHit;
    std::uint32_t piece = 0;
    if (isTriangleShape(shape.type))
    {
        if (!castOnTriangles(cast, shape, transform, catalogue, clip, shapeHit, piece))
        {
            return false;
        }
    }
    else if (shape.type == ShapeType::Compound)
    {
        // The first child touched (ties to the lower child index).
        const CompoundShape& compound = catalogue.compounds[shape.catalogueIndex];
        bool found = false;
        for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(compound.children.size()); ++i)
        {
            const CompoundChild& child = compound.children[i];
            ShapeCastHit childHit;
            if (castShape(cast, child.shape, transform * child.transform, catalogue.hulls, childHit) &&
                (!found || childHit.fraction < shapeHit.fraction))
            {
                found = true;
                shapeHit = childHit;
                piece = i;
            }
        }
        if (!found)
        {
            return false;
        }
    }
    else if (!castShape(cast, shape, transform, catalogue.hulls, shapeHit))
    {
        return false;
    }
    hit = shapeHit;
    subShape = piece;
    return true;
}

bool World::castOnBody(const ShapeCastInput& cast, std::uint32_t index, float clip, ShapeQueryHit& hit) const
{
    ShapeCastHit bodyHit;
    std::uint32_t subShape = 0;
    if (!castShapeAgainstShape(cast, m_shapes[index], m_sims[index].transform, catalogue(), bodyHit, subShape,
                               clip))
    {
        return false;
    }
    hit.subShape = subShape;
    hit.body = {index, m_bodies[index].generation};
    hit.fraction = bodyHit.fraction;
    hit.point = bodyHit.point;
    hit.normal = bodyHit.normal;
    hit.penetrationDepth = bodyHit.penetrationDepth;
    hit.startPenetrating = bodyHit.startPenetrating;
    return true;
}

namespace
{
bool validCast(const ShapeCastInput& cast, std::span<const ConvexHull> hulls)
{
    return validPose(cast.start) && isFinite(cast.translation) && std::isfinite(cast.maxFraction) &&
           cast.maxFraction >= 0.0f && validQueryShape(cast.shape, hulls);
}
} // namespace

bool World::castShapeClosest(const ShapeCastInput& cast, const QueryFilter& filter, ShapeQueryHit& hit) const
{
    return validCast(cast, m_hulls) &&
           closestHit(
               m_planes, cast.maxFraction,
               [&](std::uint32_t index, float clip, ShapeQueryHit& candidate)
               { return queryAccepts(filter, index) && castOnBody(cast, index, clip, candidate); },
               [&](float clip, auto&& visit)
               { walkCast(m_staticTree, m_broadphase, cast, m_hulls, clip, visit); },
               hit);
}

void World::castShapeAll(const ShapeCastInput& cast, const QueryFilter& filter, ShapeHitCallback onHit) const
{
    if (!validCast(cast, m_hulls))
    {
        return;
    }
    everyHit<ShapeQueryHit>(
        m_planes, cast.maxFraction,
        [&](std::uint32_t index, float clip, ShapeQueryHit& candidate)
        { return queryAccepts(filter, index) && castOnBody(cast, index, clip, candidate); },
        [&](float clip, auto&& visit) { walkCast(m_staticTree, m_broadphase, cast, m_hulls, clip, visit); },
        onHit);
}

// ---- Overlaps and distances
// ---------------------------------------------------------------------------------

void World::overlapShape(const Shape& shape, const Transform& transform, const QueryFilter& filter,
                         BodyCallback onBody) const
{
    if (!validPose(transform) || !validQueryShape(shape, m_hulls))
    {
        return;
    }
    const Transform pose{transform.p, normalize(transform.q)};
    for (const std::uint32_t plane : m_planes)
    {
        Vec3 deepest;
        const Transform& xf = m_sims[plane].transform;
        if (queryAccepts(filter, plane) &&
            deepestTowardPlane(shape, relativeTransform(xf, pose), m_shapes[plane].plane, m_hulls, deepest) <=
                0.0f &&
            !onBody({plane, m_bodies[plane].generation}))
        {
            return;
        }
    }
    queryTrees(queryBox(shape, pose, m_hulls, 0.0f),
               [&](std::uint32_t index)
               {
                   if (!queryAccepts(filter, index))
                   {
                       return true;
                   }
                   bool overlaps = false;
                   const Shape& bodyShape = m_shapes[index];
                   if (isTriangleShape(bodyShape.type))
                   {
                       // Each triangle whose box meets the shape's, in the mesh's frame, until one overlaps.
                       const Transform shapeInBody = relativeTransform(m_sims[index].transform, pose);
                       forEachTriangle(bodyShape, catalogue(), queryBox(shape, shapeInBody, m_hulls, 0.0f),
                                       [&](std::uint32_t, const Triangle& triangle)
                                       {
                                           overlaps = overlapsTriangle(shape, shapeInBody, triangle, m_hulls);
                                           return !overlaps;
                                       });
                       return !overlaps || onBody({index, m_bodies[index].generation});
                   }
                   // In each convex piece's frame, with the query shape moved into it.
                   forEachConvexPiece(bodyShape, catalogue(),
                                      [&](const Shape& piece, const Transform& pieceInBody, std::uint32_t)
                                      {
                                          if (overlaps)
                                          {
                                              return;
                                          }
                                          const Transform shapeInPiece =
                                              relativeTransform(m_sims[index].transform * pieceInBody, pose);
                                          overlaps = withSupport(
                                              piece, m_hulls,
                                              [&](const auto& body)
                                              {
                                                  return withSupport(shape, m_hulls,
                                                                     [&](const auto& query) {
                                                                         return gjkIntersect(
                                                                             body,
                                                                             transformed(query, shapeInPiece),
                                                                             shapeInPiece.p);
                                                                     });
                                              });
                                      });
                   return !overlaps || onBody({index, m_bodies[index].generation});
               });
}

void World::overlapAabb(const Aabb& box, const QueryFilter& filter, BodyCallback onBody) const
{
    if (!isFinite(box.min) || !isFinite(box.max) || !(box.min.x <= box.max.x) || !(box.min.y <= box.max.y) ||
        !(box.min.z <= box.max.z))
    {
        return;
    }
    for (const std::uint32_t plane : m_planes)
    {
        const Transform& xf = m_sims[plane].transform;
        const Vec3 normal = rotate(xf.q, m_shapes[plane].plane.normal);
        const float offset = m_shapes[plane].plane.offset + dot(normal, xf.p);
        if (queryAccepts(filter, plane) &&
            dot(normal, box.center()) - dot(absPerElem(normal), box.extents()) <= offset &&
            !onBody({plane, m_bodies[plane].generation}))
        {
            return;
        }
    }
    queryTrees(box,
               [&](std::uint32_t index)
               {
                   return !m_tightBoxes[index].overlaps(box) || !queryAccepts(filter, index) ||
                          onBody({index, m_bodies[index].generation});
               });
}

void World::closestPoints(const Shape& shape, const Transform& transform, float maxDistance,
                          const QueryFilter& filter, DistanceCallback onBody) const
{
    if (!validPose(transform) || !validQueryShape(shape, m_hulls) || !std::isfinite(maxDistance) ||
        !(maxDistance >= 0.0f))
    {
        return;
    }
    const Transform pose{transform.p, normalize(transform.q)};
    for (const std::uint32_t plane : m_planes)
    {
        if (!queryAccepts(filter, plane))
        {
            continue;
        }
        const Transform& xf = m_sims[plane].transform;
        const PlaneShape& half = m_shapes[plane].plane;
        Vec3 deepest;
        const float distance = deepestTowardPlane(shape, relativeTransform(xf, pose), half, m_hulls, deepest);
        if (!(distance <= maxDistance))
        {
            continue;
        }
        DistanceQueryResult result;
        result.body = {plane, m_bodies[plane].generation};
        result.distance = distance;
        result.pointOnShape = transformPoint(xf, deepest);
        result.pointOnBody = transformPoint(xf, deepest - half.normal * distance);
        result.normal = rotate(xf.q, half.normal);
        if (!onBody(result))
        {
            return;
        }
    }
    queryTrees(queryBox(shape, pose, m_hulls, maxDistance),
               [&](std::uint32_t index)
               {
                   if (!queryAccepts(filter, index))
                   {
                       return true;
                   }
                   // In each convex piece's frame (A), with the query shape (B) moved into it: EPA's normal
                   // then points from the piece toward the shape, and pointOnA is the piece's point. The
                   // nearest piece (ties to the lower index) stands for the body.
                   bool found = false;
                   DistanceQueryResult result;
                   result.body = {index, m_bodies[index].generation};
                   if (isTriangleShape(m_shapes[index].type))
                   {
                       found = nearestTriangle(shape, pose, m_shapes[index], m_sims[index].transform,
                                               catalogue(), maxDistance, result);
                       return !found || onBody(result);
                   }
                   forEachConvexPiece(
                       m_shapes[index], catalogue(),
                       [&](const Shape& piece, const Transform& pieceInBody, std::uint32_t pieceIndex)
                       {
                           const Transform xf = m_sims[index].transform * pieceInBody;
                           const Transform shapeInPiece = relativeTransform(xf, pose);
                           const PenetrationResult pen = withSupport(
                               piece, m_hulls,
                               [&](const auto& body)
                               {
                                   return withSupport(shape, m_hulls,
                                                      [&](const auto& query) {
                                                          return penetrationDepth(
                                                              body, transformed(query, shapeInPiece),
                                                              shapeInPiece.p);
                                                      });
                               });
                           // The cores-apart branch fills distance (or depth, when the rounded shapes
                           // overlap), EPA depth.
                           const float distance = pen.distance > 0.0f ? pen.distance : -pen.depth;
                           if (!(distance <= maxDistance) || (found && !(distance < result.distance)))
                           {
                               return;
                           }
                           found = true;
                           result.body = {index, m_bodies[index].generation};
                           result.distance = distance;
                           result.pointOnBody = transformPoint(xf, pen.pointOnA);
                           result.pointOnShape = transformPoint(xf, pen.pointOnB);
                           result.normal = rotate(xf.q, pen.normal);
                           result.subShape = pieceIndex;
                       });
                   return !found || onBody(result);
               });
}

} // namespace polytope::physics

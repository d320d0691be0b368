// Polytope physics: support functions, the only view of a shape that GJK and EPA need.
//
// A support function maps a direction d to a point of the shape that is farthest along d. Every type
// here has `Vec3 support(const Vec3& dir) const` and works in its own local frame; small wrappers compose
// them, after Jolt's GJK/EPA (jrouwe/JoltPhysics, Geometry/ConvexSupport.h):
//
//   - CoreWithRadius: a polytopal core swept by a sphere. Spheres are a point plus a radius, capsules a
//     segment plus a radius: they are never sampled into hulls. GJK and EPA run on the cores alone and
//     then add the radii exactly (see gjk.h, epa.h), so rounded shapes cost no more than their cores.
//   - TransformedSupport: shape B seen in A's local frame, through the transform of B in A
//     (relativeTransform(transformA, transformB)). All narrowphase math happens in A's frame.
//   - MinkowskiDifference: A - B, whose support is a.support(d) - b.support(-d).
//
// No virtual calls and no allocation: everything is a small value type, inlined into the templates.
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <cmath>
#include <cstddef>
#include <span>

namespace polytope::physics
{

/// A single point (the core of a sphere), in the local frame.
struct PointSupport
{
    Vec3 point{}; ///< metres

    Vec3 support(const Vec3& /*dir*/) const { return point; }
};

/// A segment from `start` to `end` (the core of a capsule), in the local frame.
struct SegmentSupport
{
    Vec3 start{}; ///< metres
    Vec3 end{};   ///< metres

    Vec3 support(const Vec3& dir) const { return dot(end - start, dir) > 0.0f ? end : start; }
};

/// A box centred on the local origin, aligned with the local axes.
struct BoxSupport
{
    Vec3 halfExtents{}; ///< metres, each >= 0

    /// The corner on the side of each component's sign (copysign: branch-free; -0 picks the minus side).
    Vec3 support(const Vec3& dir) const
    {
        return {std::copysign(halfExtents.x, dir.x), std::copysign(halfExtents.y, dir.y),
                std::copysign(halfExtents.z, dir.z)};
    }
};

/// The convex hull of a point set: support is the point of greatest dot product (first one on ties).
/// Only the extreme points matter, so any point set works, including ConvexHull::vertices. The points
/// are borrowed: they must outlive this view. An empty set supports the origin.
struct HullSupport
{
    const Vec3* points = nullptr; ///< metres, local frame, not owned
    std::size_t count = 0;

    Vec3 support(const Vec3& dir) const
    {
        // A linear scan: hulls in a game are small (tens of points) and the scan is branch-light.
        // Hill climbing over the edge graph would pay off only past roughly a hundred vertices.
        if (count == 0)
        {
            return {};
        }
        std::size_t best = 0;
        float bestDot = dot(points[0], dir);
        for (std::size_t i = 1; i < count; ++i)
        {
            const float d = dot(points[i], dir);
            if (d > bestDot)
            {
                bestDot = d;
                best = i;
            }
        }
        return points[best];
    }
};

/// A triangle, a flat convex set with two faces (how queries see a mesh or heightfield triangle), in the
/// local frame: support is the vertex of greatest dot product (first of a, b, c on ties).
struct TriangleSupport
{
    Vec3 a{}; ///< metres
    Vec3 b{}; ///< metres
    Vec3 c{}; ///< metres

    Vec3 support(const Vec3& dir) const
    {
        const float da = dot(a, dir);
        const float db = dot(b, dir);
        const float dc = dot(c, dir);
        if (db > da)
        {
            return dc > db ? c : b;
        }
        return dc > da ? c : a;
    }
};

/// A polytopal core swept by a sphere of `radius` metres: the shape is {core} + ball(radius).
/// `support` gives the support of the whole rounded shape, for callers that need it as a plain convex
/// set; GJK and EPA instead recognise this wrapper and run on `core`, then add `radius` exactly.
template <class Core> struct CoreWithRadius
{
    Core core{};
    float radius = 0.0f; ///< metres, >= 0

    Vec3 support(const Vec3& dir) const { return core.support(dir) + normalizeOr(dir, Vec3{}) * radius; }
};

/// `shape` (given in its own local frame) seen through a rigid transform, usually the transform of B in
/// A's frame. The rotation is kept as a matrix: two matrix products per support call.
template <class Shape> struct TransformedSupport
{
    Shape shape{};
    Mat3 rotation = Mat3::identity(); ///< local axes of `shape` in the outer frame
    Vec3 translation{};               ///< metres, origin of `shape` in the outer frame

    TransformedSupport() = default;
    TransformedSupport(const Shape& s, const Transform& t) : shape(s), rotation(toMat3(t.q)), translation(t.p)
    {
    }

    Vec3 support(const Vec3& dir) const
    {
        return rotation * shape.support(mulTransposed(rotation, dir)) + translation;
    }
};

/// The Minkowski difference A - B of two shapes given in the same frame. `a` and `b` are borrowed.
template <class A, class B> struct MinkowskiDifference
{
    const A& a;
    const B& b;

    Vec3 support(const Vec3& dir) const { return a.support(dir) - b.support(-dir); }
};

// ---- Shapes to supports (local frame) ----------------------------------------------------------------

inline CoreWithRadius<PointSupport> supportOf(const SphereShape& s)
{
    return {PointSupport{}, s.radius};
}
inline CoreWithRadius<SegmentSupport> supportOf(const CapsuleShape& c)
{
    return {SegmentSupport{{0.0f, -c.halfHeight, 0.0f}, {0.0f, c.halfHeight, 0.0f}}, c.radius};
}
inline BoxSupport supportOf(const BoxShape& b)
{
    return {b.halfExtents};
}
/// Borrows `hull.vertices`: the hull must outlive the returned view.
inline HullSupport supportOf(const ConvexHull& hull)
{
    return {hull.vertices.data(), hull.vertices.size()};
}

/// Calls f with the support view of a sphere, capsule, box or hull shape (not a plane, which has none);
/// hulls are looked up in `hulls` by Shape::hullIndex, which must be valid. Returns what f returns.
template <class F> auto withSupport(const Shape& s, std::span<const ConvexHull> hulls, F&& f)
{
    switch (s.type)
    {
    case ShapeType::Sphere:
        return f(supportOf(s.sphere));
    case ShapeType::Capsule:
        return f(supportOf(s.capsule));
    case ShapeType::Box:
        return f(supportOf(s.box));
    default:
        return f(supportOf(hulls[s.hullIndex]));
    }
}

// ---- Moving a support into another frame ----------------------------------------------------------------
// transformed(s, t) gives `s` seen through `t`. Points and segments are moved once, up front; other shapes
// are wrapped; a CoreWithRadius moves its core and keeps its radius, so it stays recognisable as rounded.

inline PointSupport transformed(const PointSupport& s, const Transform& t)
{
    return {transformPoint(t, s.point)};
}
inline SegmentSupport transformed(const SegmentSupport& s, const Transform& t)
{
    return {transformPoint(t, s.start), transformPoint(t, s.end)};
}
template <class Shape> TransformedSupport<Shape> transformed(const Shape& s, const Transform& t)
{
    return TransformedSupport<Shape>(s, t);
}
template <class Core> auto transformed(const CoreWithRadius<Core>& s, const Transform& t)
{
    using MovedCore = decltype(transformed(s.core, t));
    return CoreWithRadius<MovedCore>{transformed(s.core, t), s.radius};
}

// ---- Core and radius of any support ----------------------------------------------------------------------
// A plain support is its own core with radius 0; CoreWithRadius splits into its parts.

template <class S> const S& coreOf(const S& s)
{
    return s;
}
template <class Core> const Core& coreOf(const CoreWithRadius<Core>& s)
{
    return s.core;
}
template <class S> float radiusOf(const S& /*s*/)
{
    return 0.0f;
}
template <class Core> float radiusOf(const CoreWithRadius<Core>& s)
{
    return s.radius;
}

} // namespace polytope::physics

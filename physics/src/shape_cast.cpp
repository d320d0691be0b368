// Shape casts (shape_cast.h): the GJK ray cast on the shapes' cores, and a closed form for planes.
//
// Rationale
// - Frame. Everything happens in the target's local frame and in double: the moving shape's start offset
//   and its translation are rotated there from differences of the world poses (exact in double), and its
//   rotation relative to the target is a double matrix. Float shape data is exact in double, so results do
//   not depend on the distance from the world origin, and a long sweep costs no precision in the geometry.
// - Reduction to a ray. The moving shape A, at offset s + t r, touches the target B when t r lies in
//   C = B - A - s (a Minkowski difference, A rotated into B's frame). Spheres and capsules are cores (a
//   point, a segment) swept by balls, never sampled into polyhedra: C = Ccore + ball(R) with R the sum of
//   the radii and Ccore the difference of the cores, a polytope. The time of impact is the first t at
//   which the ray point x = t r comes within R of Ccore. The distance from x(t) to Ccore is convex in t.
// - GJK ray cast (van den Bergen 2004, "Ray Casting against General Convex Objects with Application to
//   Continuous Collision Detection"; Jolt's CastConvexVsConvex and Box2D's b2ShapeCast are relatives). A
//   simplex of points of Ccore is kept with its point closest to x. The support point p of Ccore toward x
//   bounds the distance from below: the plane through p normal to the closest-point direction separates x
//   from Ccore. While that bound exceeds R, x advances along the ray to that plane moved out by R, which
//   no point of C lies beyond: the fraction only grows and never passes the time of impact. A separating
//   plane that the ray does not approach, or reaches only past maxFraction, proves a miss. The simplex's
//   points stay in Ccore when x moves, so each step is one support call; the closest point of the simplex
//   comes from GJK's signed-volumes sub-algorithm (gjk.h), in double on exact differences.
// - Stopping. Advancing stops when the lower bound is within a hair of R, a hair being 1e-12 of the
//   magnitude of the coordinates (about double rounding), and the simplex holds Ccore's closest feature (the
//   two bounds agree to a hair, or the support point repeats). Ccore is a polytope, so GJK finds the
//   feature in finitely many steps; rounded shapes converge like Newton's method on the convex distance,
//   grazing ones by halving (about 20 steps). A last advance to the converged separating plane closes what
//   is left (a hair at most). A stall (no progress, from rounding) or the iteration cap ends in a hit at the
//   fraction reached: it is a lower bound, and the shapes could not be proven apart.
// - Normal. While the cores are apart (always, at a hit, when a shape is rounded: they are R apart), the
//   normal is the direction from Ccore's closest point to x, exact to rounding once the simplex holds the
//   closest feature. When the cores touch (two polytopes) that direction vanishes and the normal is that of
//   the last advance's separating plane: x lies on it and within a hair of Ccore, so it supports both
//   shapes at the contact, and it is the face normal when the contact is inside a face of C.
// - Start. At fraction 0, x advances only once the lower bound exceeds R plus the tolerance, so shapes
//   within the tolerance of touching are reported at fraction 0, as shape_cast.h promises; those starts are
//   handed to penetrationDepth (epa.h) for the depth, normal and point.
// - Plane targets: the moving shape first touches the half-space with its support point along the plane's
//   inward normal, which translates with it: one division.
// - Triangle targets (castShapeTriangle, for the World's mesh and heightfield queries): the same GJK ray
//   cast with the triangle as a flat polytopal core of radius 0, so both faces, its edges and vertices are
//   met alike. The target frame is the mesh's, moved to the triangle's centroid in double, so the size scale
//   and the coordinates' magnitude are the triangle's and the moving shape's, not the mesh's extent. The
//   cutoff serves a caller that already holds a hit (the first triangle so far): every step that advances
//   the fraction proves a lower bound on the time of impact, so one past the cutoff ends the cast as a miss,
//   while casts that end at or before it take exactly the steps they take without it.
#include "polytope/physics/shape_cast.h"

#include "polytope/physics/dvec3.h"
#include "polytope/physics/epa.h"
#include "polytope/physics/gjk.h"
#include "polytope/physics/mass.h"
#include "polytope/physics/support.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace polytope::physics
{

namespace
{

using convex_detail::SimplexClosest;
using convex_detail::SupportVertex;

/// Cap on the cast's support calls. Polytopes take about 5 to 20, rounded shapes at grazing angles about
/// 25; the cap only stops runaway rounding.
constexpr int kMaxIterations = 128;
/// Distances below this fraction of the coordinates' magnitude are rounding: the "hair" of the rationale.
constexpr double kHairRelative = 1e-12;
/// Core distances below this fraction of the coordinates' magnitude give no reliable direction.
constexpr double kNormalFloorRelative = 1e-10;
/// Smallest size scale (metres), so that tolerances stay positive for vanishing shapes.
constexpr double kMinScaleMeters = 1e-6;

double maxOf(double a, double b)
{
    return a > b ? a : b;
}

/// A rotation matrix in double, stored as columns.
struct DMat3
{
    DVec3 c0;
    DVec3 c1;
    DVec3 c2;
};

/// The rotation of quaternion q, normalised in double first (q must have a length well above 0).
DMat3 rotationOf(const Quat& q)
{
    const double len =
        std::sqrt(double(q.x) * q.x + double(q.y) * q.y + double(q.z) * q.z + double(q.w) * q.w);
    const double x = q.x / len, y = q.y / len, z = q.z / len, w = q.w / len;
    return {DVec3{1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)},
            DVec3{2.0 * (x * y - w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + w * x)},
            DVec3{2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)}};
}

DVec3 operator*(const DMat3& m, const DVec3& v)
{
    return m.c0 * v.x + m.c1 * v.y + m.c2 * v.z;
}

/// transpose(m) * v.
DVec3 mulTransposed(const DMat3& m, const DVec3& v)
{
    return {dot(m.c0, v), dot(m.c1, v), dot(m.c2, v)};
}

/// transpose(a) * b: b's axes in a's frame.
DMat3 mulTransposed(const DMat3& a, const DMat3& b)
{
    return {mulTransposed(a, b.c0), mulTransposed(a, b.c1), mulTransposed(a, b.c2)};
}

// ---- Cores in double ----------------------------------------------------------------------------------
// The polytopal cores of the shapes, in their local frames, with supports taken in double so that the
// support point is the true maximiser for the double direction (a float direction could pick a near-tie
// that is not, and the lower bound would then not be one). Same choices as support.h's on ties.

struct PointCore
{
    DVec3 support(const DVec3& /*dir*/) const { return {0.0, 0.0, 0.0}; }
};

/// The segment from (0, -halfHeight, 0) to (0, +halfHeight, 0).
struct SegmentCore
{
    double halfHeight;

    DVec3 support(const DVec3& dir) const { return {0.0, dir.y > 0.0 ? halfHeight : -halfHeight, 0.0}; }
};

struct BoxCore
{
    DVec3 halfExtents;

    DVec3 support(const DVec3& dir) const
    {
        return {std::copysign(halfExtents.x, dir.x), std::copysign(halfExtents.y, dir.y),
                std::copysign(halfExtents.z, dir.z)};
    }
};

/// A hull's vertices (borrowed); there is at least one.
struct HullCore
{
    const Vec3* points;
    std::size_t count;

    DVec3 support(const DVec3& dir) const
    {
        std::size_t best = 0;
        double bestDot = dot(toDouble(points[0]), dir);
        for (std::size_t i = 1; i < count; ++i)
        {
            const double d = dot(toDouble(points[i]), dir);
            if (d > bestDot)
            {
                bestDot = d;
                best = i;
            }
        }
        return toDouble(points[best]);
    }
};

/// A triangle's three vertices, relative to a nearby origin (the triangle's centroid): a flat polytope.
/// First of a, b, c on ties, as TriangleSupport (support.h).
struct TriangleCore
{
    DVec3 v[3];

    DVec3 support(const DVec3& dir) const
    {
        const double d0 = dot(v[0], dir);
        const double d1 = dot(v[1], dir);
        const double d2 = dot(v[2], dir);
        if (d1 > d0)
        {
            return d2 > d1 ? v[2] : v[1];
        }
        return d2 > d0 ? v[2] : v[0];
    }
};

// ---- Validated shapes -------------------------------------------------------------------------------------

/// A shape that passed validation, with what the cast needs to know about it.
struct ShapeView
{
    const Shape* shape = nullptr;
    const ConvexHull* hull = nullptr; ///< ShapeType::Hull only
    double radius = 0.0;              ///< metres: the sphere's or capsule's radius, else 0
    double bound = 0.0;               ///< metres: bounding radius about the local origin, radius included
};

/// NaN fails every comparison, so it is rejected too.
bool validSize(float v)
{
    return v > 0.0f && v <= kMaxShapeSizeMeters;
}

/// Checks `shape` (without allocating, unlike validateShape) and fills `view`. Planes pass: the caller
/// decides where they are allowed.
bool viewOf(const Shape& shape, std::span<const ConvexHull> hulls, ShapeView& view)
{
    view = ShapeView{};
    view.shape = &shape;
    switch (shape.type)
    {
    case ShapeType::Sphere:
        view.radius = shape.sphere.radius;
        view.bound = view.radius;
        return validSize(shape.sphere.radius);
    case ShapeType::Capsule:
        view.radius = shape.capsule.radius;
        view.bound = double(shape.capsule.halfHeight) + view.radius;
        return validSize(shape.capsule.radius) && validSize(shape.capsule.halfHeight);
    case ShapeType::Box:
    {
        const Vec3& h = shape.box.halfExtents;
        view.bound = length(toDouble(h));
        return validSize(h.x) && validSize(h.y) && validSize(h.z);
    }
    case ShapeType::Hull:
    {
        if (shape.hullIndex >= hulls.size() || hulls[shape.hullIndex].vertices.empty())
        {
            return false;
        }
        view.hull = &hulls[shape.hullIndex];
        double boundSquared = 0.0;
        for (const Vec3& v : view.hull->vertices)
        {
            if (!isFinite(v))
            {
                return false;
            }
            boundSquared = maxOf(boundSquared, lengthSquared(toDouble(v)));
        }
        view.bound = std::sqrt(boundSquared);
        return true;
    }
    case ShapeType::Plane:
        return isFinite(shape.plane.normal) && std::isfinite(shape.plane.offset) &&
               lengthSquared(toDouble(shape.plane.normal)) > 0.0;
    case ShapeType::Compound:
    case ShapeType::Mesh:
    case ShapeType::HeightField:
        return false; // not single convex shapes: the World's queries split them into pieces
    }
    return false; // a corrupt type tag
}

/// Calls f with the double core of a non-plane shape; returns what f returns.
template <class F> auto withCore(const ShapeView& view, F&& f)
{
    switch (view.shape->type)
    {
    case ShapeType::Sphere:
        return f(PointCore{});
    case ShapeType::Capsule:
        return f(SegmentCore{view.shape->capsule.halfHeight});
    case ShapeType::Box:
        return f(BoxCore{toDouble(view.shape->box.halfExtents)});
    default:
        return f(HullCore{view.hull->vertices.data(), view.hull->vertices.size()});
    }
}

/// Calls f with the support.h view of a non-plane shape (for penetrationDepth); returns what f returns.
template <class F> auto withSupport(const ShapeView& view, F&& f)
{
    switch (view.shape->type)
    {
    case ShapeType::Sphere:
        return f(supportOf(view.shape->sphere));
    case ShapeType::Capsule:
        return f(supportOf(view.shape->capsule));
    case ShapeType::Box:
        return f(supportOf(view.shape->box));
    default:
        return f(supportOf(*view.hull));
    }
}

// ---- The cast ---------------------------------------------------------------------------------------------

/// The cast in the target's local frame.
struct CastFrame
{
    DMat3 movingRotation; ///< the moving shape's axes in the target's frame
    DVec3 start;          ///< metres: the moving shape's origin at fraction 0
    DVec3 translation;    ///< metres: its displacement at fraction 1
    double maxFraction;   ///< >= 0
    double cutoff;        ///< >= 0, may be infinite: a hit past it is a miss (castShapeTriangle's cutoff)
    double radius;        ///< metres: the sum of the two shapes' radii
    double tolerance;     ///< metres: a separation that counts as touching at fraction 0 (and on a stall)
    double hair;          ///< metres: rounding of the coordinates
    double normalFloor;   ///< metres: core distances below this give no direction
};

/// A point of Ccore and the target core's support point it came from.
struct CorePoint
{
    DVec3 p;
    DVec3 onTarget;
};

/// Support point of Ccore = targetCore - (moving core rotated) - start along `dir` (any length > 0).
template <class TargetCore, class MovingCore>
CorePoint coreSupport(const TargetCore& target, const MovingCore& moving, const CastFrame& frame,
                      const DVec3& dir)
{
    const DVec3 b = target.support(dir);
    const DVec3 a = frame.movingRotation * moving.support(mulTransposed(frame.movingRotation, -dir));
    return {b - a - frame.start, b};
}

/// The largest float <= t (t >= 0, finite): fractions are reported rounded down, so that they stay lower
/// bounds on the time of impact.
float floatBelow(double t)
{
    const float f = float(t);
    return double(f) > t ? std::nextafter(f, 0.0f) : f;
}

/// Whether fraction t is inside the cast: its reported (rounded-down) value is at most maxFraction. A cast
/// with maxFraction set to a reported fraction then finds that same hit.
bool withinCast(double t, const CastFrame& frame)
{
    return floatBelow(t) <= frame.maxFraction;
}

/// Whether a lower bound t on the time of impact proves the hit would be reported past the cutoff.
bool pastCutoff(double t, const CastFrame& frame)
{
    return floatBelow(t) > frame.cutoff;
}

bool samePoint(const DVec3& a, const DVec3& b)
{
    return a.x == b.x && a.y == b.y && a.z == b.z;
}

enum class CastKind : std::uint8_t
{
    Miss,
    AtStart, ///< within the tolerance of touching, or overlapping, at fraction 0
    Hit
};

struct CastOutcome
{
    CastKind kind = CastKind::Miss;
    double fraction = 0.0;
    DVec3 normal{0.0, 0.0, 0.0};       ///< unit, from the target toward the moving shape (Hit)
    DVec3 onTargetCore{0.0, 0.0, 0.0}; ///< metres: contact point on the target's core (Hit)
    int iterations = 0;
};

/// The simplex of the cast: points of Ccore with the target-core points behind them, and the weights of
/// the point closest to x.
struct CastSimplex
{
    DVec3 points[4];
    DVec3 onTarget[4];
    double weights[4];
    int count = 0;

    /// Reduces the simplex to the smallest part holding its point closest to x; returns that point
    /// relative to x (the vector from x toward Ccore), zero when the simplex is a tetrahedron around x.
    DVec3 reduceToward(const DVec3& x)
    {
        SupportVertex vertices[4];
        for (int i = 0; i < count; ++i)
        {
            vertices[i].w = points[i] - x;
        }
        const SimplexClosest closest = convex_detail::closestOnSimplex(vertices, count);
        for (int i = 0; i < closest.count; ++i) // in place: the indices increase
        {
            points[i] = points[closest.index[i]];
            onTarget[i] = onTarget[closest.index[i]];
            weights[i] = closest.barycentric[i];
        }
        count = closest.count;
        return closest.closest;
    }

    DVec3 targetWitness() const
    {
        DVec3 sum{0.0, 0.0, 0.0};
        for (int i = 0; i < count; ++i)
        {
            sum = sum + onTarget[i] * weights[i];
        }
        return sum;
    }
};

template <class TargetCore, class MovingCore>
CastOutcome castCores(const TargetCore& target, const MovingCore& moving, const CastFrame& frame)
{
    CastOutcome out;
    CastSimplex simplex;
    double fraction = 0.0;
    DVec3 x{0.0, 0.0, 0.0}; // the ray point: the moving shape's offset from its start
    bool advanced = false;
    DVec3 advanceNormal{0.0, 0.0, 0.0};

    // Start from the support toward the moving shape: Ccore lies around -start, the ray starts at 0.
    const DVec3 firstDirection = lengthSquared(frame.start) > 0.0 ? frame.start : DVec3{1.0, 0.0, 0.0};
    const CorePoint first = coreSupport(target, moving, frame, firstDirection);
    simplex.points[0] = first.p;
    simplex.onTarget[0] = first.onTarget;
    simplex.weights[0] = 1.0;
    simplex.count = 1;
    DVec3 closest = first.p - x; // closest point of the simplex, relative to x
    bool converged = false;
    double convergedLowerBound = 0.0; // the lower bound on the core distance when converged
    int iterations = 0;
    for (;;)
    {
        const double distanceSquared = lengthSquared(closest);
        if (simplex.count == 4 || distanceSquared <= frame.normalFloor * frame.normalFloor)
        {
            break; // the cores touch at x
        }
        if (iterations >= kMaxIterations)
        {
            break;
        }
        ++iterations;
        const double distance = std::sqrt(distanceSquared);
        const DVec3 towardX = closest * (-1.0 / distance);
        const CorePoint s = coreSupport(target, moving, frame, towardX);
        const double lowerBound = dot(towardX, x - s.p); // no point of Ccore is nearer to x than this
        bool repeated = false;
        for (int i = 0; i < simplex.count; ++i)
        {
            repeated = repeated || samePoint(simplex.points[i], s.p);
        }
        const double slack = advanced ? frame.hair : frame.tolerance;
        bool advancedNow = false;
        if (lowerBound > frame.radius + slack)
        {
            const double closing = -dot(towardX, frame.translation); // how fast x nears the plane
            if (!(closing > 0.0))
            {
                return out; // the ray never reaches the separating plane
            }
            const double next = fraction + (lowerBound - frame.radius) / closing;
            if (!withinCast(next, frame) || pastCutoff(next, frame))
            {
                return out; // it does, too late
            }
            fraction = next;
            x = frame.translation * fraction;
            advanced = true;
            advancedNow = true;
            advanceNormal = towardX;
        }
        else if (repeated || distance - lowerBound <= frame.hair)
        {
            converged = true; // the simplex holds the closest feature, within R (+ slack) of x
            convergedLowerBound = lowerBound;
            break;
        }
        if (!repeated)
        {
            simplex.points[simplex.count] = s.p;
            simplex.onTarget[simplex.count] = s.onTarget;
            ++simplex.count;
        }
        closest = simplex.reduceToward(x);
        if (!advancedNow && !(lengthSquared(closest) < distanceSquared))
        {
            break; // stalled by rounding: no proof of separation
        }
    }

    out.iterations = iterations;
    if (!advanced)
    {
        out.kind = CastKind::AtStart;
        return out;
    }
    out.kind = CastKind::Hit;
    const double distance = std::sqrt(lengthSquared(closest));
    if (simplex.count < 4 && distance > frame.normalFloor)
    {
        out.normal = closest * (-1.0 / distance);
        const double gap = convergedLowerBound - frame.radius;
        const double closing = -dot(out.normal, frame.translation);
        if (converged && gap > 0.0 && closing > 0.0 && withinCast(fraction + gap / closing, frame))
        {
            if (pastCutoff(fraction + gap / closing, frame))
            {
                return CastOutcome{}; // a miss: the hit lies past the cutoff
            }
            // A last advance, to the converged separating plane: the Newton step on the distance, which by
            // convexity cannot pass the time of impact.
            fraction += gap / closing;
            x = frame.translation * fraction;
            simplex.reduceToward(x);
        }
    }
    else
    {
        out.normal = advanceNormal;
    }
    out.fraction = fraction;
    out.onTargetCore = simplex.targetWitness();
    return out;
}

/// Plane target: `plane` in the target's frame. Fills the local hit fields; false on a miss.
bool castAgainstPlane(const ShapeView& movingView, const PlaneShape& plane, const CastFrame& frame,
                      double& fraction, DVec3& point, DVec3& normal, bool& startInside, double& depth)
{
    const DVec3 rawNormal = toDouble(plane.normal);
    const double normalLength = length(rawNormal);
    const DVec3 n = rawNormal * (1.0 / normalLength);
    const double offset = double(plane.offset) / normalLength;
    // The moving shape's deepest point along -n at fraction 0: its core's support, pushed out by the radius.
    const DVec3 coreDeepest =
        withCore(movingView, [&](const auto& core)
                 { return frame.movingRotation * core.support(mulTransposed(frame.movingRotation, -n)); });
    const DVec3 deepest = coreDeepest + frame.start - n * movingView.radius;
    const double height = dot(n, deepest) - offset; // > 0: above the plane
    normal = n;
    if (height <= frame.tolerance)
    {
        fraction = 0.0;
        startInside = height <= 0.0;
        depth = startInside ? -height : 0.0;
        point = deepest - n * height;
        return true;
    }
    const double closing = -dot(n, frame.translation);
    if (!(closing > 0.0))
    {
        return false;
    }
    const double t = height / closing;
    if (!withinCast(t, frame))
    {
        return false;
    }
    const DVec3 moved = deepest + frame.translation * t;
    fraction = t;
    startInside = false;
    depth = 0.0;
    point = moved - n * (dot(n, moved) - offset);
    return true;
}

bool validPose(const Transform& t)
{
    return isFinite(t.p) && isFinite(t.q) && dot(t.q, t.q) > 1e-12f;
}

/// The cast's frame in a target frame whose origin is `localOrigin` (metres, in the frame of the target's
/// transform: 0 for a shape, the centroid for a triangle) and whose axes are `targetRotation`'s.
CastFrame frameOf(const ShapeCastInput& moving, const ShapeView& movingView, const DMat3& targetRotation,
                  const Vec3& targetPosition, const DVec3& localOrigin, double targetRadius,
                  double targetBound, double cutoff)
{
    CastFrame frame;
    frame.movingRotation = mulTransposed(targetRotation, rotationOf(moving.start.q));
    frame.start =
        mulTransposed(targetRotation, toDouble(moving.start.p) - toDouble(targetPosition)) - localOrigin;
    frame.translation = mulTransposed(targetRotation, toDouble(moving.translation));
    frame.maxFraction = moving.maxFraction;
    frame.cutoff = cutoff;
    frame.radius = movingView.radius + targetRadius;
    const double scale = maxOf(maxOf(movingView.bound, targetBound), kMinScaleMeters);
    frame.tolerance = double(kShapeCastRelativeTolerance) * scale;
    // The coordinates' magnitude, independent of maxFraction up to 1 so that a cast cut short at a reported
    // fraction repeats the same steps.
    const double magnitude =
        scale + length(frame.start) + length(frame.translation) * maxOf(1.0, frame.maxFraction);
    frame.hair = kHairRelative * magnitude;
    frame.normalFloor = kNormalFloorRelative * magnitude;
    return frame;
}

/// A hit in the target's frame (about the frame's local origin), before it is brought to the world.
struct LocalHit
{
    double fraction = 0.0;
    DVec3 point{0.0, 0.0, 0.0};
    DVec3 normal{0.0, 1.0, 0.0};
    bool startPenetrating = false;
    float depth = 0.0f;
    int iterations = 0;
};

/// The cast against a target given by its double core, swept by `targetRadius`. Starts in contact go to
/// `penetration(movingSupport, initialDirection)`, which runs penetrationDepth with the target's support
/// (about the frame's origin) as A and the moving shape's support, already placed in that frame, as B.
template <class TargetCore, class Penetration>
bool castOnCore(const TargetCore& targetCore, double targetRadius, const ShapeView& movingView,
                const CastFrame& frame, const Quat& movingRotationInTarget, Penetration&& penetration,
                LocalHit& out)
{
    const CastOutcome outcome = withCore(movingView, [&](const auto& movingCore)
                                         { return castCores(targetCore, movingCore, frame); });
    out.iterations = outcome.iterations;
    if (outcome.kind == CastKind::Miss)
    {
        return false;
    }
    if (outcome.kind == CastKind::Hit)
    {
        out.fraction = outcome.fraction;
        out.normal = outcome.normal;
        out.point = outcome.onTargetCore + out.normal * targetRadius;
        return true;
    }
    // Touching or overlapping at the start: EPA's depth, normal (target toward moving) and point.
    const Transform pose{toFloat(frame.start), movingRotationInTarget};
    const PenetrationResult pen =
        withSupport(movingView, [&](const auto& movingSupport)
                    { return penetration(transformed(movingSupport, pose), pose.p); });
    out.fraction = 0.0;
    out.startPenetrating = pen.status != EpaStatus::NotColliding;
    out.depth = out.startPenetrating ? pen.depth : 0.0f;
    out.normal = toDouble(pen.normal);
    out.point = toDouble(pen.pointOnA);
    return true;
}

/// Brings a local hit to the world frame and fills `hit`; false when the point or normal is not finite.
bool finishHit(const LocalHit& local, const DMat3& targetRotation, const Vec3& targetPosition,
               const DVec3& localOrigin, ShapeCastHit& hit)
{
    const DVec3 worldPoint = targetRotation * (local.point + localOrigin) + toDouble(targetPosition);
    const DVec3 worldNormal = targetRotation * local.normal;
    const double normalLength = length(worldNormal);
    ShapeCastHit result;
    result.fraction = floatBelow(local.fraction);
    result.point = toFloat(worldPoint);
    result.normal = toFloat(worldNormal * (1.0 / normalLength));
    result.penetrationDepth = local.depth;
    result.startPenetrating = local.startPenetrating;
    result.iterations = local.iterations;
    if (!isFinite(result.point) || !isFinite(result.normal) || !(normalLength > 0.0))
    {
        return false;
    }
    hit = result;
    return true;
}

bool validMotion(const ShapeCastInput& moving)
{
    return validPose(moving.start) && isFinite(moving.translation) && std::isfinite(moving.maxFraction) &&
           moving.maxFraction >= 0.0f;
}

} // namespace

bool castShape(const ShapeCastInput& moving, const Shape& target, const Transform& targetTransform,
               std::span<const ConvexHull> hulls, ShapeCastHit& hit)
{
    if (!validMotion(moving) || !validPose(targetTransform))
    {
        return false;
    }
    ShapeView movingView;
    ShapeView targetView;
    if (moving.shape.type == ShapeType::Plane || !viewOf(moving.shape, hulls, movingView) ||
        !viewOf(target, hulls, targetView))
    {
        return false;
    }

    const DMat3 targetRotation = rotationOf(targetTransform.q);
    const DVec3 origin{0.0, 0.0, 0.0};
    const CastFrame frame = frameOf(moving, movingView, targetRotation, targetTransform.p, origin,
                                    targetView.radius, targetView.bound, moving.maxFraction);
    LocalHit local;
    if (target.type == ShapeType::Plane)
    {
        double depth = 0.0;
        if (!castAgainstPlane(movingView, target.plane, frame, local.fraction, local.point, local.normal,
                              local.startPenetrating, depth))
        {
            return false;
        }
        local.depth = float(depth);
    }
    else
    {
        const auto penetration = [&](const auto& movingSupport, const Vec3& initialDirection)
        {
            return withSupport(targetView, [&](const auto& targetSupport)
                               { return penetrationDepth(targetSupport, movingSupport, initialDirection); });
        };
        const Quat relative = normalize(conjugate(targetTransform.q) * moving.start.q);
        const bool found = withCore(targetView,
                                    [&](const auto& targetCore) {
                                        return castOnCore(targetCore, targetView.radius, movingView, frame,
                                                          relative, penetration, local);
                                    });
        if (!found)
        {
            return false;
        }
    }
    return finishHit(local, targetRotation, targetTransform.p, origin, hit);
}

bool castShapeTriangle(const ShapeCastInput& moving, const Triangle& triangle,
                       const Transform& triangleTransform, std::span<const ConvexHull> hulls,
                       ShapeCastHit& hit, float cutoffFraction)
{
    ShapeView movingView;
    if (!validMotion(moving) || !validPose(triangleTransform) || !isFinite(triangle.a) ||
        !isFinite(triangle.b) || !isFinite(triangle.c) || !(cutoffFraction >= 0.0f) ||
        moving.shape.type == ShapeType::Plane || !viewOf(moving.shape, hulls, movingView))
    {
        return false;
    }
    // The cast runs about the centroid, in double: the core's vertices are then as small as the triangle.
    const DVec3 a = toDouble(triangle.a);
    const DVec3 b = toDouble(triangle.b);
    const DVec3 c = toDouble(triangle.c);
    const DVec3 centroid = (a + b + c) * (1.0 / 3.0);
    const TriangleCore core{{a - centroid, b - centroid, c - centroid}};
    const double bound =
        std::sqrt(maxOf(lengthSquared(core.v[0]), maxOf(lengthSquared(core.v[1]), lengthSquared(core.v[2]))));

    const DMat3 rotation = rotationOf(triangleTransform.q);
    const CastFrame frame = frameOf(moving, movingView, rotation, triangleTransform.p, centroid, 0.0, bound,
                                    double(cutoffFraction));
    const TriangleSupport support{toFloat(core.v[0]), toFloat(core.v[1]), toFloat(core.v[2])};
    const auto penetration = [&](const auto& movingSupport, const Vec3& initialDirection)
    { return penetrationDepth(support, movingSupport, initialDirection); };
    const Quat relative = normalize(conjugate(triangleTransform.q) * moving.start.q);
    LocalHit local;
    return castOnCore(core, 0.0, movingView, frame, relative, penetration, local) &&
           finishHit(local, rotation, triangleTransform.p, centroid, hit);
}

} // namespace polytope::physics

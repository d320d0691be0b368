// polytope-server: the recent past of the moving bodies (see pose_history.h for the model).
#include "polytope/server/pose_history.h"

#include "polytope/physics/mass.h"
#include "polytope/physics/shape_queries.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace polytope::server
{

namespace
{

/// The position the client draws: a + (b - a) t, in double (client/interpolation.cpp's lerpPosition).
physics::Vec3 lerpPosition(const physics::Vec3& a, const physics::Vec3& b, double t)
{
    const auto lerp = [t](float x, float y)
    {
        const double dx = x;
        return static_cast<float>(dx + (static_cast<double>(y) - dx) * t);
    };
    return {lerp(a.x, b.x), lerp(a.y, b.y), lerp(a.z, b.z)};
}

/// The orientation the client draws: the normalised lerp the short way, in double (client/interpolation.cpp's
/// nlerpOrientation, with the same fallback to identity for a degenerate blend).
physics::Quat nlerpOrientation(const physics::Quat& a, const physics::Quat& b, double t)
{
    const double ax = a.x, ay = a.y, az = a.z, aw = a.w;
    double bx = b.x, by = b.y, bz = b.z, bw = b.w;
    if (ax * bx + ay * by + az * bz + aw * bw < 0.0)
    {
        bx = -bx;
        by = -by;
        bz = -bz;
        bw = -bw;
    }
    const double x = ax + (bx - ax) * t;
    const double y = ay + (by - ay) * t;
    const double z = az + (bz - az) * t;
    const double w = aw + (bw - aw) * t;
    const double n = std::sqrt(x * x + y * y + z * z + w * w);
    if (!(n > 1e-12))
    {
        return {};
    }
    return {static_cast<float>(x / n), static_cast<float>(y / n), static_cast<float>(z / n),
            static_cast<float>(w / n)};
}

bool validRay(const physics::RayCastInput& ray)
{
    return physics::isFinite(ray.origin) && physics::isFinite(ray.translation) &&
           std::isfinite(ray.maxFraction) && ray.maxFraction >= 0.0f;
}

bool validSize(float v)
{
    return v > 0.0f && v <= physics::kMaxShapeSizeMeters; // NaN fails
}

/// A cast the World would accept (a finite pose and translation, a sphere, capsule, box or hull of the
/// catalogue with sane sizes), checked before its box is taken.
bool validCast(const physics::ShapeCastInput& cast, std::span<const physics::ConvexHull> hulls)
{
    if (!physics::isFinite(cast.start.p) || !physics::isFinite(cast.start.q) ||
        !(physics::dot(cast.start.q, cast.start.q) > 1e-12f) || !physics::isFinite(cast.translation) ||
        !std::isfinite(cast.maxFraction) || cast.maxFraction < 0.0f)
    {
        return false;
    }
    const physics::Shape& s = cast.shape;
    switch (s.type)
    {
    case physics::ShapeType::Sphere:
        return validSize(s.sphere.radius);
    case physics::ShapeType::Capsule:
        return validSize(s.capsule.radius) && validSize(s.capsule.halfHeight);
    case physics::ShapeType::Box:
        return validSize(s.box.halfExtents.x) && validSize(s.box.halfExtents.y) &&
               validSize(s.box.halfExtents.z);
    case physics::ShapeType::Hull:
        return s.hullIndex < hulls.size() && !hulls[s.hullIndex].vertices.empty();
    default:
        return false;
    }
}

float maxAbs(const physics::Vec3& v)
{
    return std::max(std::fabs(v.x), std::max(std::fabs(v.y), std::fabs(v.z)));
}

/// `box` grown by a margin that covers float rounding of the boxes and of the slab test: the prefilter
/// may let through a body the exact test then misses, never the reverse.
physics::Aabb padded(const physics::Aabb& box, const physics::Vec3& grow)
{
    const float pad = 1e-4f * (maxAbs(box.min) + maxAbs(box.max)) + 1e-4f;
    const physics::Vec3 margin = grow + physics::Vec3{pad, pad, pad};
    return {box.min - margin, box.max + margin};
}

/// Whether the segment origin + t * translation, t in [0, maxFraction], meets the closed `box` (slab test).
bool segmentMeetsBox(const physics::Vec3& origin, const physics::Vec3& translation, float maxFraction,
                     const physics::Aabb& box)
{
    float enter = 0.0f;
    float exit = maxFraction;
    for (int axis = 0; axis < 3; ++axis)
    {
        const float o = origin[axis];
        const float d = translation[axis];
        if (d == 0.0f)
        {
            if (o < box.min[axis] || o > box.max[axis])
            {
                return false;
            }
            continue;
        }
        const float t0 = (box.min[axis] - o) / d;
        const float t1 = (box.max[axis] - o) / d;
        enter = std::max(enter, std::min(t0, t1));
        exit = std::min(exit, std::max(t0, t1));
        if (enter > exit)
        {
            return false;
        }
    }
    return true;
}

/// The live body's filter fields when it is alive, else the recorded ones; then QueryFilter's tests in
/// World::queryAccepts' order.
template <class Recorded>
bool filterAccepts(const physics::World& world, const physics::QueryFilter& filter, const Recorded& body)
{
    std::uint8_t layer = body.layer;
    std::uint32_t group = body.group;
    physics::BodyType type = body.type;
    bool sensor = body.sensor;
    physics::BodyState live;
    if (world.getBody(body.id, live))
    {
        layer = live.layer;
        group = live.group;
        type = live.type;
        sensor = live.isSensor;
    }
    const auto typeBit = static_cast<std::uint8_t>(1u << static_cast<unsigned>(type));
    if (((filter.layerMask >> layer) & 1u) == 0 || (filter.bodyTypes & typeBit) == 0 ||
        (filter.ignoreGroup != 0 && group == filter.ignoreGroup) || (sensor && !filter.includeSensors))
    {
        return false;
    }
    return body.id != filter.ignoreBody && (!filter.accept || filter.accept(body.id));
}

/// The filter restricted to static bodies: what the live World answers for.
physics::QueryFilter staticOnly(const physics::QueryFilter& filter)
{
    physics::QueryFilter only = filter;
    only.bodyTypes = static_cast<std::uint8_t>(filter.bodyTypes & physics::kQueryStatic);
    return only;
}

/// The closest hit so far of a rewound query, in the (fraction, body index) order of the World's closest
/// queries.
template <class Hit> struct Closest
{
    Hit best{};
    bool found = false;

    void offer(const Hit& candidate)
    {
        if (!found || candidate.fraction < best.fraction ||
            (candidate.fraction == best.fraction && candidate.body.index < best.body.index))
        {
            best = candidate;
            found = true;
        }
    }
    /// Writes the hit (when found) and completes `result`.
    RewindResult finish(RewindResult result, Hit& hit) const
    {
        if (found)
        {
            hit = best;
        }
        result.hit = found;
        return result;
    }
};

} // namespace

ViewTime ViewTime::atTick(double tick)
{
    if (!std::isfinite(tick) || tick < 0.0 || tick >= 1.8e19)
    {
        return {};
    }
    const double whole = std::floor(tick);
    const auto from = static_cast<std::uint64_t>(whole);
    const double fraction = tick - whole;
    if (fraction == 0.0)
    {
        return {from, from, 0.0f};
    }
    return {from, from + 1, static_cast<float>(fraction)};
}

const char* rewindStatusName(RewindStatus status)
{
    switch (status)
    {
    case RewindStatus::Exact:
        return "exact";
    case RewindStatus::ClampedToOldest:
        return "clamped_to_oldest";
    case RewindStatus::ClampedToNewest:
        return "clamped_to_newest";
    case RewindStatus::InvalidView:
        return "invalid_view";
    case RewindStatus::NoHistory:
        return "no_history";
    }
    return "unknown";
}

std::uint32_t PoseHistory::ticksFor(const PoseHistoryConfig& config)
{
    assert(config.tickRateHz > 0.0 && std::isfinite(config.tickRateHz));
    const double rate =
        config.tickRateHz > 0.0 && std::isfinite(config.tickRateHz) ? config.tickRateHz : 60.0;
    const auto nonNegative = [](double s) { return std::isfinite(s) && s > 0.0 ? s : 0.0; };
    const double seconds =
        std::min(nonNegative(config.maxRoundTripSeconds) + nonNegative(config.interpolationDelaySeconds) +
                     nonNegative(config.snapshotIntervalSeconds),
                 kMaxRewindSeconds);
    // Both ends of a window `seconds` long are held, hence the + 1.
    const double ticks = std::ceil(seconds * rate - 1e-9) + 1.0;
    return static_cast<std::uint32_t>(std::clamp(ticks, 2.0, std::ceil(kMaxRewindSeconds * rate) + 1.0));
}

PoseHistory::PoseHistory(const PoseHistoryConfig& config) : m_config(config), m_frames(ticksFor(config))
{
    for (Frame& frame : m_frames)
    {
        frame.bodies.reserve(config.reserveBodies);
    }
}

void PoseHistory::clear()
{
    m_count = 0;
    m_newest = 0;
}

void PoseHistory::record(const physics::World& world, std::uint64_t tick)
{
    if (m_count > 0 && tick != m_newest + 1)
    {
        clear();
    }
    Frame& frame = m_frames[tick % m_frames.size()];
    frame.tick = tick;
    frame.bodies.clear();
    world.forEachBody(
        [&](const physics::BodyState& body)
        {
            if (body.type != physics::BodyType::Static)
            {
                frame.bodies.push_back(
                    {body.id, body.transform, body.shape, body.group, body.layer, body.type, body.isSensor});
            }
        });
    m_newest = tick;
    m_count = std::min<std::uint32_t>(m_count + 1, static_cast<std::uint32_t>(m_frames.size()));
}

PoseHistory::ResolvedView PoseHistory::resolve(const ViewTime& view) const
{
    ResolvedView out;
    out.result.used = view;
    if (m_count == 0)
    {
        out.result.status = RewindStatus::NoHistory;
        return out;
    }
    if (view.fromTick > view.toTick || !(view.fraction >= 0.0f && view.fraction <= 1.0f))
    {
        out.result.status = RewindStatus::InvalidView;
        return out;
    }
    const std::uint64_t oldest = oldestTick();
    ViewTime used = view;
    if (used.toTick > m_newest)
    {
        out.result.status = RewindStatus::ClampedToNewest;
        used.toTick = m_newest;
        used.fromTick = std::min(used.fromTick, m_newest);
    }
    if (used.fromTick < oldest)
    {
        out.result.status = RewindStatus::ClampedToOldest;
        used.fromTick = oldest;
        used.toTick = std::max(used.toTick, oldest);
    }
    if (used.fromTick == used.toTick)
    {
        used.fraction = 0.0f;
    }
    out.result.used = used;
    out.from = &frameOf(used.fromTick);
    out.to = &frameOf(used.toTick);
    out.fraction = used.fraction;
    return out;
}

template <class Fn> void PoseHistory::forEachShown(const ResolvedView& view, Fn&& fn) const
{
    // Both frames are in slot order: walk them together, matching same id (slot and generation).
    const std::vector<RecordedBody>& to = view.to->bodies;
    std::size_t j = 0;
    for (const RecordedBody& body : view.from->bodies)
    {
        while (j < to.size() && to[j].id.index < body.id.index)
        {
            ++j;
        }
        if (view.from != view.to && j < to.size() && to[j].id == body.id)
        {
            const physics::Transform shown{
                lerpPosition(body.transform.p, to[j].transform.p, view.fraction),
                nlerpOrientation(body.transform.q, to[j].transform.q, view.fraction)};
            fn(body, shown);
        }
        else
        {
            fn(body, body.transform);
        }
    }
}

RewindResult PoseHistory::castRayAt(const physics::World& world, const ViewTime& view,
                                    const physics::RayCastInput& ray, const physics::QueryFilter& filter,
                                    physics::RayQueryHit& hit) const
{
    const ResolvedView resolved = resolve(view);
    RewindResult result = resolved.result;
    if (resolved.from == nullptr || !validRay(ray))
    {
        return result;
    }
    Closest<physics::RayQueryHit> closest;
    closest.found = (filter.bodyTypes & physics::kQueryStatic) != 0 &&
                    world.castRayClosest(ray, staticOnly(filter), closest.best);
    const physics::ShapeCatalogue catalogue = world.catalogue();
    forEachShown(resolved,
                 [&](const RecordedBody& body, const physics::Transform& pose)
                 {
                     const float clip = closest.found ? closest.best.fraction : ray.maxFraction;
                     if (!segmentMeetsBox(ray.origin, ray.translation, clip,
                                          padded(physics::shapeBoundsAt(body.shape, pose, catalogue), {})) ||
                         !filterAccepts(world, filter, body))
                     {
                         return;
                     }
                     physics::RayCastHit shapeHit;
                     std::uint32_t subShape = 0;
                     if (!physics::castRayAgainstShape(ray, body.shape, pose, catalogue, shapeHit, subShape))
                     {
                         return;
                     }
                     closest.offer({body.id, shapeHit.fraction, shapeHit.point, shapeHit.normal, subShape});
                 });
    return closest.finish(result, hit);
}

RewindResult PoseHistory::castShapeAt(const physics::World& world, const ViewTime& view,
                                      const physics::ShapeCastInput& cast, const physics::QueryFilter& filter,
                                      physics::ShapeQueryHit& hit) const
{
    const ResolvedView resolved = resolve(view);
    RewindResult result = resolved.result;
    const physics::ShapeCatalogue catalogue = world.catalogue();
    if (resolved.from == nullptr || !validCast(cast, catalogue.hulls))
    {
        return result;
    }
    Closest<physics::ShapeQueryHit> closest;
    closest.found = (filter.bodyTypes & physics::kQueryStatic) != 0 &&
                    world.castShapeClosest(cast, staticOnly(filter), closest.best);
    // The swept shape's box against each body's box: a ray from the start box's centre against the body's
    // box grown by the start box's half extents (their Minkowski sum).
    const physics::Aabb startBox =
        physics::tightBoxOf(cast.shape, {cast.start.p, physics::normalize(cast.start.q)}, catalogue.hulls);
    forEachShown(
        resolved,
        [&](const RecordedBody& body, const physics::Transform& pose)
        {
            const float clip = closest.found ? closest.best.fraction : cast.maxFraction;
            if (!segmentMeetsBox(
                    startBox.center(), cast.translation, clip,
                    padded(physics::shapeBoundsAt(body.shape, pose, catalogue), startBox.extents())) ||
                !filterAccepts(world, filter, body))
            {
                return;
            }
            physics::ShapeCastHit shapeHit;
            std::uint32_t subShape = 0;
            if (!physics::castShapeAgainstShape(cast, body.shape, pose, catalogue, shapeHit, subShape, clip))
            {
                return;
            }
            physics::ShapeQueryHit candidate;
            candidate.body = body.id;
            candidate.fraction = shapeHit.fraction;
            candidate.point = shapeHit.point;
            candidate.normal = shapeHit.normal;
            candidate.penetrationDepth = shapeHit.penetrationDepth;
            candidate.startPenetrating = shapeHit.startPenetrating;
            candidate.subShape = subShape;
            closest.offer(candidate);
        });
    return closest.finish(result, hit);
}

RewindResult PoseHistory::overlapAt(const physics::World& world, const ViewTime& view,
                                    const physics::Shape& shape, const physics::Transform& transform,
                                    const physics::QueryFilter& filter, physics::BodyCallback onBody) const
{
    const ResolvedView resolved = resolve(view);
    RewindResult result = resolved.result;
    const physics::ShapeCatalogue catalogue = world.catalogue();
    // A cast that goes nowhere: an overlap test (shape_cast.h).
    const physics::ShapeCastInput still{shape, transform, {}, 0.0f};
    if (resolved.from == nullptr || !validCast(still, catalogue.hulls))
    {
        return result;
    }
    bool stopped = false;
    if ((filter.bodyTypes & physics::kQueryStatic) != 0)
    {
        world.overlapShape(shape, transform, staticOnly(filter),
                           [&](physics::BodyId id)
                           {
                               result.hit = true;
                               stopped = !onBody(id);
                               return !stopped;
                           });
    }
    const physics::Aabb box =
        physics::tightBoxOf(shape, {transform.p, physics::normalize(transform.q)}, catalogue.hulls);
    forEachShown(resolved,
                 [&](const RecordedBody& body, const physics::Transform& pose)
                 {
                     physics::ShapeCastHit touch;
                     std::uint32_t subShape = 0;
                     if (stopped ||
                         !padded(physics::shapeBoundsAt(body.shape, pose, catalogue), {}).overlaps(box) ||
                         !filterAccepts(world, filter, body) ||
                         !physics::castShapeAgainstShape(still, body.shape, pose, catalogue, touch, subShape))
                     {
                         return;
                     }
                     result.hit = true;
                     stopped = !onBody(body.id);
                 });
    return result;
}

RewindResult PoseHistory::poseAt(const ViewTime& view, physics::BodyId id, physics::Transform& pose) const
{
    const ResolvedView resolved = resolve(view);
    RewindResult result = resolved.result;
    if (resolved.from == nullptr)
    {
        return result;
    }
    forEachShown(resolved,
                 [&](const RecordedBody& body, const physics::Transform& shown)
                 {
                     if (body.id == id)
                     {
                         pose = shown;
                         result.hit = true;
                     }
                 });
    return result;
}

} // namespace polytope::server

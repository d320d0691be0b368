// polytope-server: the recent past of the moving bodies, for lag-compensated hits (server-side rewind).
//
// Rationale (after Bernier, "Latency Compensating Methods in Client/Server In-game Protocol Design and
// Optimization", Valve, 2001: the server judges a shot against the world as the shooter saw it).
//
// What the client saw. The client shows the world in the past: it renders at a render time between two
// snapshot ticks a and b it holds (client/interpolation.h), drawing each body of a at the lerp of its
// positions and the nlerp (the short way) of its orientations between a and b, or at a's pose when b does
// not hold it (destroyed, or its slot reused); a body only in b is not drawn yet. A shot is aimed at that
// picture, so the picture is named the way the client made it: ViewTime {fromTick a, toTick b, fraction}.
// A fractional tick would not do in general: snapshots are sent every few ticks, and the client's blend
// between ticks 100 and 103 is a straight chord between those two poses, not the path the bodies took
// through 101 and 102. When b = a + 1 the two agree, and ViewTime::atTick builds that case.
//
// What is rewound. PoseHistory keeps, for each of the last N ticks, the id (with generation) and world pose
// of every dynamic and kinematic body, recorded after each step. A rewound query rebuilds the picture above
// from two recorded ticks and tests each body shown in it one by one at its blended pose, with the engine's
// single-shape tests (physics/shape_queries.h: compounds child by child, meshes and heightfields triangle by
// triangle). Static bodies never move, so they are queried in the live World (its own trees and filters);
// a static body created or destroyed since the view is therefore seen as it is now. Only poses are rewound:
// contacts, joints, velocities and sleep are not replayed, and nothing in the World is changed, so a rewound
// query costs no simulation and can run on several threads at once between steps.
//
// Bodies created or destroyed. A body appears in the picture only if it was recorded at the view's fromTick
// (as the client draws it). One destroyed since still appears there, with its recorded shape, and a hit on
// it reports its old BodyId: stale now (World::isValid is false), which a caller checks before acting on it.
// Its slot may even hold a new body by now; the generation tells them apart. Filters (layerMask,
// ignoreGroup, ignoreBody, bodyTypes, sensors, the accept callback) are applied as the World's queries
// apply them, with the body's current layer, group and sensor flag from the live World, or the ones
// recorded with it when it is gone.
//
// How far back. N is chosen at construction: a shot's view is older than the tick the shot arrives at by
// the round trip (the snapshot's way down plus the shot's way up), the client's interpolation delay, and up
// to one snapshot interval (fromTick is the snapshot at or before the render time). So
//   N = ceil((maxRoundTripSeconds + interpolationDelaySeconds + snapshotIntervalSeconds) * tickRateHz) + 1
// ticks, the window capped at kMaxRewindSeconds (1 s; further back the shooter is too far out of date for
// the target to accept being hit, Valve's sv_maxunlag). A view older than what is held, or newer than the
// newest tick recorded, is clamped to what is held and reported (RewindStatus), so the caller can count it.
//
// Cost. record() copies one entry (about 100 bytes: id, pose, shape, filter fields) per moving body per tick
// into storage it reuses, so it allocates only while the ring first fills (or when the moving bodies
// outnumber every tick before); PoseHistoryConfig::reserveBodies reserves up front. A rewound query is
// linear in the moving bodies of the view: each is blended, its box tested against the ray or the swept
// shape, and only then tested exactly. That is fine for hundreds of moving bodies; thousands would want a
// tree per tick.
#pragma once

#include "polytope/physics/world.h"

#include <cstdint>
#include <vector>

namespace polytope::server
{

/// The farthest back a PoseHistory goes, seconds (the cap on its window).
inline constexpr double kMaxRewindSeconds = 1.0;

/// A past moment as a client showed it: the poses of snapshot tick fromTick blended toward those of toTick
/// by `fraction` (see the file comment). fromTick == toTick shows that tick alone.
struct ViewTime
{
    std::uint64_t fromTick = 0;
    std::uint64_t toTick = 0; ///< >= fromTick
    float fraction = 0.0f;    ///< weight of toTick, in [0, 1]

    /// The view of a fractional tick (>= 0, finite): between floor(tick) and the next tick. A whole tick
    /// gives that tick alone. Negative or non-finite ticks give tick 0.
    static ViewTime atTick(double tick);
};

/// How a rewound query used the view it was asked for.
enum class RewindStatus : std::uint8_t
{
    Exact = 0,       ///< both ticks of the view are held
    ClampedToOldest, ///< fromTick is older than the oldest tick held: the oldest was used in its place (and
                     ///< blended toward toTick by the same fraction when toTick is held). Reported over
                     ///< ClampedToNewest when both ends are out
    ClampedToNewest, ///< toTick is newer than the newest tick recorded: the newest was used in its place, and
                     ///< in place of fromTick too when that is newer still
    InvalidView,     ///< fromTick > toTick, or a fraction outside [0, 1] or NaN: nothing was queried
    NoHistory,       ///< nothing recorded yet: nothing was queried
};

const char* rewindStatusName(RewindStatus status);

/// What a rewound query did: whether it found something, and at which view (after clamping).
struct RewindResult
{
    bool hit = false;
    RewindStatus status = RewindStatus::Exact;
    ViewTime used{}; ///< the view queried (= the one asked for when status is Exact)
};

struct PoseHistoryConfig
{
    double tickRateHz = 60.0;                    ///< the room's simulation rate, > 0
    double maxRoundTripSeconds = 0.25;           ///< longest round trip whose shots are rewound in full
    double interpolationDelaySeconds = 0.1;      ///< the clients' interpolation delay (at most)
    double snapshotIntervalSeconds = 1.0 / 30.0; ///< seconds between the snapshots a client receives
    std::uint32_t reserveBodies = 0;             ///< moving bodies to reserve room for in every tick
};

/// The last N ticks of the moving bodies' poses, and ray and shape casts against them as a client saw them.
/// record() is called from the room's thread between steps; the queries are const, allocate nothing and may
/// run on several threads at once, but not during record() or while the World steps or changes.
class PoseHistory
{
  public:
    explicit PoseHistory(const PoseHistoryConfig& config = {});

    /// Ticks kept for `config` (the formula in the file comment), at least 2.
    static std::uint32_t ticksFor(const PoseHistoryConfig& config);

    /// Records the poses of every dynamic and kinematic body of `world` as tick `tick` (the tick number its
    /// snapshots carry), after the step. Ticks follow each other one by one; a tick that does not follow the
    /// newest (a gap, a repeat, a step back after World::restoreState) starts the history afresh with it.
    void record(const physics::World& world, std::uint64_t tick);
    /// Forgets every tick (storage is kept).
    void clear();

    /// The closest hit of `ray` (world frame, raycast.h) on the world as `view` showed it: static bodies of
    /// the live `world`, moving ones at their blended poses. Ties go to the lower body index, as in
    /// World::castRayClosest. `world` is the one recorded.
    RewindResult castRayAt(const physics::World& world, const ViewTime& view,
                           const physics::RayCastInput& ray, const physics::QueryFilter& filter,
                           physics::RayQueryHit& hit) const;
    /// The first body a translating convex shape (shape_cast.h) touches in the world as `view` showed it; as
    /// castRayAt, and as World::castShapeClosest for what a hit reports.
    RewindResult castShapeAt(const physics::World& world, const ViewTime& view,
                             const physics::ShapeCastInput& cast, const physics::QueryFilter& filter,
                             physics::ShapeQueryHit& hit) const;
    /// Every body that overlaps or touches `shape` (sphere, capsule, box or hull) placed at `transform` in
    /// the world as `view` showed it, through `onBody` (false stops; hit: some body was reported): static
    /// bodies by World::overlapShape first, then the moving ones in slot order, each by a cast of zero
    /// translation (touching within shape_cast.h's tolerance counts; World::overlapShape's GJK test may
    /// differ on a graze).
    RewindResult overlapAt(const physics::World& world, const ViewTime& view, const physics::Shape& shape,
                           const physics::Transform& transform, const physics::QueryFilter& filter,
                           physics::BodyCallback onBody) const;
    /// The pose at which `view` showed body `id` (hit: whether it was shown at all).
    RewindResult poseAt(const ViewTime& view, physics::BodyId id, physics::Transform& pose) const;

    std::uint32_t capacityTicks() const { return static_cast<std::uint32_t>(m_frames.size()); }
    /// Ticks held, 0 .. capacityTicks().
    std::uint32_t sizeTicks() const { return m_count; }
    /// The oldest and newest ticks held (meaningful when sizeTicks() > 0).
    std::uint64_t oldestTick() const { return m_newest + 1 - m_count; }
    std::uint64_t newestTick() const { return m_newest; }
    const PoseHistoryConfig& config() const { return m_config; }

  private:
    /// One moving body as recorded at a tick. The shape and filter fields serve when the body is gone.
    struct RecordedBody
    {
        physics::BodyId id{};
        physics::Transform transform{};
        physics::Shape shape{};
        std::uint32_t group = 0;
        std::uint8_t layer = 0;
        physics::BodyType type = physics::BodyType::Dynamic;
        bool sensor = false;
    };
    /// The moving bodies of one tick, by ascending slot.
    struct Frame
    {
        std::uint64_t tick = 0;
        std::vector<RecordedBody> bodies;
    };
    /// The view clamped to the ticks held, its two frames and how it was clamped; false (status set) when
    /// nothing can be queried.
    struct ResolvedView
    {
        const Frame* from = nullptr;
        const Frame* to = nullptr;
        float fraction = 0.0f;
        RewindResult result{};
    };
    ResolvedView resolve(const ViewTime& view) const;
    const Frame& frameOf(std::uint64_t tick) const { return m_frames[tick % m_frames.size()]; }
    /// Calls fn(const RecordedBody&, const Transform& shownPose) for each body `view` shows, in slot order.
    template <class Fn> void forEachShown(const ResolvedView& view, Fn&& fn) const;

    PoseHistoryConfig m_config;
    std::vector<Frame> m_frames; ///< ring: tick t at t % size
    std::uint64_t m_newest = 0;
    std::uint32_t m_count = 0;
};

} // namespace polytope::server

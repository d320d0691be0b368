#include "viewer/sources.h"

#include "viewer/geometry_mesh.h"
#include "viewer/joint_overlay.h"

#include "polytope/client/interpolation.h"
#include "polytope/client/recording.h"
#include "polytope/client/token_file.h"
#include "polytope/client/udp_client.h"
#if POLYTOPE_VIEWER_LOCAL_SIM
#include "polytope/physics/hull.h"
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"
#include "polytope/protocol/shape_kind.h"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

namespace polytope::viewer
{
namespace
{
/// A decoded body as the renderer takes it.
ViewBody toViewBody(const client::SnapshotBody& s)
{
    ViewBody b{};
    b.id = s.id;
    b.generation = s.generation;
    b.shape = s.shape;
    b.atRest = s.atRest;
    b.position = s.position;
    b.orientation = s.orientation;
    b.extent = s.extent;
    return b;
}

/// What `buffer`'s sample() wrote, as the renderer takes it: the tick of the snapshot at or before the time
/// shown, that time (server seconds; a held snapshot's own time) and the bodies.
void toViewFrame(const client::InterpolationBuffer& buffer, const client::SampleResult& sample,
                 const std::vector<client::SnapshotBody>& bodies, ViewFrame& out)
{
    out.tick = sample.fromTick;
    out.time = sample.renderTime;
    if (sample.kind == client::SampleKind::Held)
    {
        for (const client::ReceivedSnapshot& snapshot : buffer.snapshots())
        {
            if (snapshot.tick == sample.fromTick)
            {
                out.time = snapshot.serverTime;
            }
        }
    }
    out.bodies.resize(bodies.size());
    for (std::size_t i = 0; i < bodies.size(); ++i)
    {
        out.bodies[i] = toViewBody(bodies[i]);
    }
}
} // namespace

// ---------------------------------------------------------------------------------------------------------
// Local scenes: the only part of the viewer that links the engine (CMake option POLYTOPE_VIEWER_LOCAL_SIM).

#if POLYTOPE_VIEWER_LOCAL_SIM
namespace
{

using Clock = std::chrono::steady_clock;

/// Where a compound's, mesh's or heightfield's surface sits among a local scene's meshes: after the hulls,
/// the meshes, then the heightfields, then the compounds, each in catalogue order.
std::size_t geometryMeshIndex(const physics::World& world, const physics::Shape& shape)
{
    const std::size_t hulls = world.hulls().size();
    const std::size_t meshes = world.meshCount();
    const std::size_t fields = world.heightFieldCount();
    switch (shape.type)
    {
    case physics::ShapeType::Mesh:
        return hulls + shape.catalogueIndex;
    case physics::ShapeType::HeightField:
        return hulls + meshes + shape.catalogueIndex;
    case physics::ShapeType::Compound:
        return hulls + meshes + fields + shape.catalogueIndex;
    default:
        return static_cast<std::size_t>(-1);
    }
}

/// Appends triangle (a, b, c), counter-clockwise from its front, flat shaded.
void addTriangle(HullMesh& mesh, const physics::Vec3& a, const physics::Vec3& b, const physics::Vec3& c)
{
    const physics::Vec3 n =
        physics::normalizeOr(physics::cross(b - a, c - a), physics::Vec3{0.0f, 1.0f, 0.0f});
    for (const physics::Vec3& v : {a, b, c})
    {
        mesh.vertices.insert(mesh.vertices.end(), {v.x, v.y, v.z, n.x, n.y, n.z});
    }
}

/// Appends the surface of a convex shape at `xf` (a compound's child): hulls and boxes by their faces,
/// spheres and capsules as 8 x 12 latitude-longitude patches.
void addConvexSurface(HullMesh& mesh, const physics::Shape& shape, const physics::Transform& xf,
                      std::span<const physics::ConvexHull> hulls)
{
    const auto at = [&](const physics::Vec3& v) { return physics::transformPoint(xf, v); };
    if (shape.type == physics::ShapeType::Box || shape.type == physics::ShapeType::Hull)
    {
        const physics::ConvexHull box = shape.type == physics::ShapeType::Box
                                            ? physics::makeBoxHull(shape.box.halfExtents)
                                            : physics::ConvexHull{};
        const physics::ConvexHull& hull =
            shape.type == physics::ShapeType::Box ? box : hulls[shape.hullIndex];
        for (const physics::HullFace& face : hull.faces)
        {
            const physics::Vec3 first = at(hull.vertices[hull.faceVertices[face.firstIndex]]);
            for (std::uint16_t k = 1; k + 1 < face.indexCount; ++k)
            {
                addTriangle(mesh, first, at(hull.vertices[hull.faceVertices[face.firstIndex + k]]),
                            at(hull.vertices[hull.faceVertices[face.firstIndex + k + 1]]));
            }
        }
        return;
    }
    const bool capsule = shape.type == physics::ShapeType::Capsule;
    const float radius = capsule ? shape.capsule.radius : shape.sphere.radius;
    const float half = capsule ? shape.capsule.halfHeight : 0.0f;
    constexpr int kRings = 8; // latitude bands of a sphere, from the top; a capsule repeats the equator
    constexpr int kSegments = 12;
    const int rings = capsule ? kRings + 1 : kRings;
    const auto point = [&](int ring, int segment)
    {
        const bool lower = capsule && ring > kRings / 2;
        const float theta = physics::kPi * static_cast<float>(lower ? ring - 1 : ring) / kRings;
        const float phi = 2.0f * physics::kPi * static_cast<float>(segment) / kSegments;
        const float y = radius * std::cos(theta) + (lower ? -half : half);
        return at({radius * std::sin(theta) * std::cos(phi), y, -radius * std::sin(theta) * std::sin(phi)});
    };
    for (int ring = 0; ring < rings; ++ring)
    {
        for (int segment = 0; segment < kSegments; ++segment)
        {
            const physics::Vec3 a = point(ring, segment);
            const physics::Vec3 b = point(ring + 1, segment);
            const physics::Vec3 c = point(ring + 1, segment + 1);
            const physics::Vec3 d = point(ring, segment + 1);
            if (ring > 0)
            {
                addTriangle(mesh, a, b, d); // not at the top pole, where a and d coincide
            }
            if (ring + 1 < rings)
            {
                addTriangle(mesh, d, b, c); // not at the bottom pole, where b and c coincide
            }
        }
    }
}

void captureFrame(const physics::World& world, const std::vector<std::array<float, 6>>& hullBoxes,
                  ViewFrame& out)
{
    out.tick = world.stepCount();
    out.time = static_cast<double>(world.stepCount()) / 60.0;
    out.bodies.clear();
    out.bodies.reserve(world.bodyCount());
    world.forEachBody(
        [&](const physics::BodyState& s)
        {
            ViewBody b;
            b.id = s.id.index;
            b.generation = s.id.generation;
            b.shape = protocol::toShapeKind(s.shape.type);
            b.atRest = s.sleeping;
            b.position = {s.transform.p.x, s.transform.p.y, s.transform.p.z};
            b.orientation = {s.transform.q.x, s.transform.q.y, s.transform.q.z, s.transform.q.w};
            switch (s.shape.type)
            {
            case physics::ShapeType::Sphere:
            case physics::ShapeType::Capsule:
            case physics::ShapeType::Box:
                protocol::primitiveExtent(s.shape, b.extent);
                break;
            case physics::ShapeType::Hull:
                if (s.shape.hullIndex < hullBoxes.size())
                {
                    const auto& box = hullBoxes[s.shape.hullIndex];
                    b.boxCenter = {box[0], box[1], box[2]};
                    b.hullIndex = static_cast<int>(s.shape.hullIndex);
                    b.extent = {box[3], box[4], box[5]};
                }
                break;
            case physics::ShapeType::Compound:
            case physics::ShapeType::Mesh:
            case physics::ShapeType::HeightField:
            {
                // Their surfaces follow the hulls' in the source's meshes (geometryMeshIndex); the box is
                // what the panels show and what is drawn when a mesh was too large to tessellate.
                const physics::Aabb box =
                    physics::shapeBoundsAt(s.shape, physics::Transform::identity(), world.catalogue());
                const physics::Vec3 c = box.center();
                const physics::Vec3 e = box.extents();
                b.boxCenter = {c.x, c.y, c.z};
                b.extent = {e.x, e.y, e.z};
                const std::size_t index = geometryMeshIndex(world, s.shape);
                if (index < hullBoxes.size())
                {
                    b.hullIndex = static_cast<int>(index);
                }
                break;
            }
            case physics::ShapeType::Plane:
                break;
            }
            b.hasVelocity = true;
            b.linearVelocity = {s.linearVelocity.x, s.linearVelocity.y, s.linearVelocity.z};
            b.angularVelocity = {s.angularVelocity.x, s.angularVelocity.y, s.angularVelocity.z};
            b.mass = s.mass;
            out.bodies.push_back(b);
        });
    // Slot order is id order already; keep the promise explicit.
    std::sort(out.bodies.begin(), out.bodies.end(),
              [](const ViewBody& a, const ViewBody& b) { return a.id < b.id; });
    out.joints.clear();
    out.joints.reserve(world.jointCount());
    world.forEachJoint(
        [&](const physics::JointState& j)
        {
            const auto array = [](const physics::Vec3& v) { return std::array<float, 3>{v.x, v.y, v.z}; };
            const physics::Vec3 xAxis{1.0f, 0.0f, 0.0f};
            ViewJoint v;
            v.bodyA = j.desc.bodyA.index;
            v.generationA = j.desc.bodyA.generation;
            v.bodyB = j.desc.bodyB.index;
            v.generationB = j.desc.bodyB.generation;
            v.localAnchorA = array(j.desc.frameA.p);
            v.localAxisA = array(physics::rotate(j.desc.frameA.q, xAxis));
            v.localAnchorB = array(j.desc.frameB.p);
            v.localAxisB = array(physics::rotate(j.desc.frameB.q, xAxis));
            v.anchorA = array(j.worldFrameA.p);
            v.axisA = array(physics::rotate(j.worldFrameA.q, xAxis));
            v.anchorB = array(j.worldFrameB.p);
            v.axisB = array(physics::rotate(j.worldFrameB.q, xAxis));
            out.joints.push_back(v);
        });
}

/// A captured state as a snapshot for the interpolation buffer, received at `receiveTime` (display clock).
client::ReceivedSnapshot toSnapshot(const ViewFrame& frame, double receiveTime)
{
    client::ReceivedSnapshot snapshot;
    snapshot.tick = frame.tick;
    snapshot.serverTime = frame.time;
    snapshot.receiveTime = receiveTime;
    snapshot.bodies.reserve(frame.bodies.size());
    for (const ViewBody& b : frame.bodies)
    {
        client::SnapshotBody body;
        body.id = b.id;
        body.generation = b.generation;
        body.shape = b.shape;
        body.atRest = b.atRest;
        body.position = b.position;
        body.orientation = b.orientation;
        body.extent = b.extent;
        snapshot.bodies.push_back(body);
    }
    return snapshot;
}

/// What a snapshot does not carry (hull boxes, velocities, mass), taken from `newest` for each body of
/// `out` it holds (same id and generation); both are sorted by id.
void addLocalDetails(const ViewFrame& newest, ViewFrame& out)
{
    std::size_t j = 0;
    for (ViewBody& b : out.bodies)
    {
        while (j < newest.bodies.size() && newest.bodies[j].id < b.id)
        {
            ++j;
        }
        if (j < newest.bodies.size() && newest.bodies[j].id == b.id &&
            newest.bodies[j].generation == b.generation)
        {
            const ViewBody& from = newest.bodies[j];
            b.boxCenter = from.boxCenter;
            b.hullIndex = from.hullIndex;
            b.hasVelocity = from.hasVelocity;
            b.linearVelocity = from.linearVelocity;
            b.angularVelocity = from.angularVelocity;
            b.mass = from.mass;
        }
    }
}

/// The buffer for a scene stepped on its own thread: one step interval (plus the measured jitter of picking
/// the states up) behind the newest, and never ahead of the engine, so that a paused scene holds still.
client::InterpolationConfig localInterpolation(double stepRateHz)
{
    client::InterpolationConfig config;
    config.snapshotIntervalSeconds = 1.0 / stepRateHz;
    config.intervalMultiple = 1.0;
    config.maxExtrapolationSeconds = 0.0;
    return config;
}

class LocalSource final : public ViewSource
{
  public:
    explicit LocalSource(const LocalOptions& options)
        : m_options(options), m_paused(options.paused), m_buffer(localInterpolation(options.stepRateHz))
    {
    }

    ~LocalSource() override
    {
        m_stop = true;
        if (m_thread.joinable())
        {
            m_thread.join();
        }
    }

    bool build(std::string& error)
    {
        if (!physics::buildNamedScene(m_world, m_options.scene, error))
        {
            return false;
        }
        for (const physics::ConvexHull& hull : m_world.hulls())
        {
            physics::Vec3 lo = hull.vertices.empty() ? physics::Vec3{} : hull.vertices.front();
            physics::Vec3 hi = lo;
            for (const physics::Vec3& v : hull.vertices)
            {
                lo = physics::minPerElem(lo, v);
                hi = physics::maxPerElem(hi, v);
            }
            HullMesh mesh;
            for (const physics::HullFace& face : hull.faces)
            {
                // A fan over the face's loop (convex, counter-clockwise from outside).
                for (std::uint16_t k = 1; k + 1 < face.indexCount; ++k)
                {
                    for (const std::uint16_t corner :
                         {std::uint16_t{0}, k, static_cast<std::uint16_t>(k + 1)})
                    {
                        const physics::Vec3& v = hull.vertices[hull.faceVertices[face.firstIndex + corner]];
                        mesh.vertices.insert(mesh.vertices.end(),
                                             {v.x, v.y, v.z, face.normal.x, face.normal.y, face.normal.z});
                    }
                }
            }
            m_hullMeshes.push_back(std::move(mesh));
            m_hullBoxes.push_back({0.5f * (lo.x + hi.x), 0.5f * (lo.y + hi.y), 0.5f * (lo.z + hi.z),
                                   0.5f * (hi.x - lo.x), 0.5f * (hi.y - lo.y), 0.5f * (hi.z - lo.z)});
        }
        addGeometryMeshes();
        captureFrame(m_world, m_hullBoxes, m_current);
        if (!m_options.deterministic)
        {
            m_published = m_current;
            m_fresh = true;
            m_thread = std::thread([this] { run(); });
        }
        return true;
    }

    std::string description() const override
    {
        return "local scene '" + m_options.scene + "'" +
               (m_options.deterministic ? " (one step per frame)" : "");
    }

    bool update(double now) override
    {
        if (m_options.deterministic)
        {
            if (!m_paused)
            {
                stepOnce();
                captureFrame(m_world, m_hullBoxes, m_current);
            }
            return true;
        }
        {
            std::lock_guard lock(m_mutex);
            if (m_fresh)
            {
                m_buffer.add(toSnapshot(m_published, now));
                m_newest = std::move(m_published);
                m_published = {};
                m_fresh = false;
                ++m_updates;
            }
        }
        if (now - m_rateTime >= 0.5)
        {
            if (m_rateTime > 0.0)
            {
                m_updatesPerSecond = static_cast<double>(m_updates - m_rateUpdates) / (now - m_rateTime);
            }
            m_rateTime = now;
            m_rateUpdates = m_updates;
        }
        return true;
    }

    bool frame(double now, ViewFrame& out) override
    {
        if (m_options.deterministic)
        {
            out = m_current;
            return true;
        }
        const client::SampleResult sample = m_buffer.sample(now, m_bodies);
        if (sample.kind == client::SampleKind::Empty)
        {
            return false;
        }
        toViewFrame(m_buffer, sample, m_bodies, out);
        addLocalDetails(m_newest, out);
        // The joints of the newest state, moved onto the bodies' poses as blended for this frame.
        out.joints = m_newest.joints;
        placeJoints(out);
        return true;
    }

    SourceStats stats() const override
    {
        SourceStats s;
        s.stepMs = m_stepMs.load();
        if (!m_options.deterministic)
        {
            s.snapshotsPerSecond = m_updatesPerSecond;
            s.snapshotJitterMs = 1000.0 * m_buffer.stats().jitterSeconds;
            s.interpolationDelayMs = 1000.0 * m_buffer.stats().currentDelaySeconds;
        }
        return s;
    }

    void setPaused(bool paused) override
    {
        if (m_paused && !paused && !m_options.deterministic)
        {
            // The render clock ran on while the engine stood still: start the buffer afresh, or it would show
            // the resumed scene only after as long a wait.
            m_buffer.reset();
        }
        m_paused = paused;
    }
    bool paused() const override { return m_paused; }
    const std::vector<HullMesh>& hullMeshes() const override { return m_hullMeshes; }

    /// After the hulls' surfaces: the meshes', the heightfields' and the compounds' (geometryMeshIndex),
    /// with their local boxes. A mesh or heightfield of more than kMaxDrawnTriangles is drawn as its box.
    void addGeometryMeshes()
    {
        constexpr std::uint32_t kMaxDrawnTriangles = 2'000'000;
        const auto push = [&](HullMesh&& mesh, const physics::Aabb& box)
        {
            const physics::Vec3 c = box.center();
            const physics::Vec3 e = box.extents();
            if (mesh.vertices.empty()) // too many triangles to draw: the box
            {
                addConvexSurface(
                    mesh, physics::Shape::makeBox(physics::maxPerElem(e, physics::Vec3{1e-3f, 1e-3f, 1e-3f})),
                    {c, {}}, {});
            }
            m_hullMeshes.push_back(std::move(mesh));
            m_hullBoxes.push_back({c.x, c.y, c.z, e.x, e.y, e.z});
        };
        const physics::ShapeCatalogue catalogue = m_world.catalogue();
        const auto boundsOf = [&](physics::ShapeType type, std::uint32_t index)
        {
            return physics::shapeBoundsAt(physics::Shape::makeCatalogued(type, index),
                                          physics::Transform::identity(), catalogue);
        };
        for (std::uint32_t i = 0; i < m_world.meshCount(); ++i)
        {
            const physics::TriangleMesh& triangles = m_world.mesh(i);
            HullMesh mesh;
            for (std::uint32_t t = 0;
                 t < triangles.triangleCount() && triangles.triangleCount() <= kMaxDrawnTriangles; ++t)
            {
                const physics::Triangle tri = triangles.triangle(t);
                addTriangle(mesh, tri.a, tri.b, tri.c);
            }
            push(std::move(mesh), boundsOf(physics::ShapeType::Mesh, i));
        }
        for (std::uint32_t i = 0; i < m_world.heightFieldCount(); ++i)
        {
            const physics::HeightField& field = m_world.heightField(i);
            HullMesh mesh;
            for (std::uint32_t t = 0;
                 t < field.triangleCount() && field.triangleCount() <= kMaxDrawnTriangles; ++t)
            {
                if (!field.isHole(t / 2))
                {
                    const physics::Triangle tri = field.triangle(t);
                    addTriangle(mesh, tri.a, tri.b, tri.c);
                }
            }
            push(std::move(mesh), boundsOf(physics::ShapeType::HeightField, i));
        }
        for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(m_world.compounds().size()); ++i)
        {
            HullMesh mesh;
            for (const physics::CompoundChild& child : m_world.compounds()[i].children)
            {
                addConvexSurface(mesh, child.shape, child.transform, m_world.hulls());
            }
            push(std::move(mesh), boundsOf(physics::ShapeType::Compound, i));
        }
    }

  private:
    void stepOnce()
    {
        const auto t0 = Clock::now();
        m_world.step(static_cast<float>(1.0 / m_options.stepRateHz));
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        m_stepMs = ms;
    }

    void run()
    {
        const auto period = std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(1.0 / m_options.stepRateHz));
        auto next = Clock::now();
        ViewFrame captured;
        while (!m_stop)
        {
            if (!m_paused)
            {
                stepOnce();
                captureFrame(m_world, m_hullBoxes, captured);
                std::lock_guard lock(m_mutex);
                std::swap(m_published, captured);
                m_fresh = true;
            }
            next += period;
            const auto now = Clock::now();
            if (now > next + 4 * period)
            {
                next = now; // fell behind (a slow step): do not try to catch up
            }
            std::this_thread::sleep_until(next);
        }
    }

    LocalOptions m_options;
    physics::World m_world;
    std::vector<std::array<float, 6>> m_hullBoxes; ///< per hull: local box centre, half extents
    std::vector<HullMesh> m_hullMeshes;
    ViewFrame m_current; ///< deterministic mode
    std::atomic<bool> m_paused;
    std::atomic<bool> m_stop{false};
    std::atomic<double> m_stepMs{-1.0};

    std::thread m_thread;
    std::mutex m_mutex;
    ViewFrame m_published; ///< guarded by m_mutex
    bool m_fresh = false;  ///< guarded by m_mutex

    // Real time: the states the thread publishes go through the interpolation buffer, as snapshots do.
    client::InterpolationBuffer m_buffer;
    ViewFrame m_newest; ///< the newest state picked up (its velocities and hull boxes are shown)
    std::vector<client::SnapshotBody> m_bodies;
    std::uint64_t m_updates = 0; ///< states picked up
    std::uint64_t m_rateUpdates = 0;
    double m_rateTime = 0.0;
    double m_updatesPerSecond = -1.0;
};

} // namespace
#endif // POLYTOPE_VIEWER_LOCAL_SIM

// ---------------------------------------------------------------------------------------------------------
// Live servers.

namespace
{

class LiveSource final : public ViewSource
{
  public:
    LiveSource(std::string server, const client::ClientConfig& config)
        : m_server(std::move(server)), m_udp(config)
    {
    }

    bool connect(const std::string& host, std::uint16_t port, std::string& error)
    {
        return m_udp.connect(host, port, error);
    }

    std::string description() const override
    {
        const client::Client& c = m_udp.client();
        std::string text = "live " + m_server + " (" + client::clientStateName(c.state()) + ")";
        if (c.isConnected())
        {
            text += " scene '" + c.sceneName() + "'";
        }
        return text;
    }

    bool update(double now) override
    {
        m_udp.poll(0.0);
        client::Client& c = m_udp.client();
        while (c.popSnapshot(m_snapshot))
        {
            if (!m_buffer)
            {
                // The session announced its snapshot rate by now: the buffer's delay is built on it.
                client::InterpolationConfig config;
                config.snapshotIntervalSeconds = c.snapshotRateHz() > 0 ? 1.0 / c.snapshotRateHz() : 0.0;
                m_buffer.emplace(config);
            }
            m_buffer->add(std::move(m_snapshot));
        }
        if (now - m_rateTime >= 0.5)
        {
            const auto& s = c.stats();
            if (m_rateTime > 0.0)
            {
                const double dt = now - m_rateTime;
                m_snapshotsPerSecond = static_cast<double>(s.snapshotsCompleted - m_rateSnapshots) / dt;
                m_kbps = 8.0 * static_cast<double>(s.bytesReceived - m_rateBytes) / dt / 1000.0;
            }
            m_rateTime = now;
            m_rateSnapshots = s.snapshotsCompleted;
            m_rateBytes = s.bytesReceived;
        }
        return !c.isFinished();
    }

    bool frame(double, ViewFrame& out) override
    {
        if (!m_buffer)
        {
            return false;
        }
        // The buffer runs on the clock the Client stamped the snapshots with.
        m_last = m_buffer->sample(m_udp.now(), m_bodies);
        if (m_last.kind == client::SampleKind::Empty)
        {
            return false;
        }
        toViewFrame(*m_buffer, m_last, m_bodies, out);
        // Bodies whose geometry has arrived are drawn as they are; the others as their bounding boxes.
        for (std::size_t i = 0; i < m_bodies.size(); ++i)
        {
            if (m_bodies[i].geometry != 0)
            {
                out.bodies[i].hullIndex = m_surfaces.indexOf(m_bodies[i].geometry, m_udp.client().geometry());
            }
        }
        return true;
    }

    const std::vector<HullMesh>& hullMeshes() const override { return m_surfaces.meshes(); }
    std::uint64_t hullMeshesVersion() const override { return m_surfaces.version(); }

    SourceStats stats() const override
    {
        SourceStats s;
        const client::Client& c = m_udp.client();
        s.snapshotsPerSecond = m_snapshotsPerSecond;
        s.kilobitsPerSecond = m_kbps;
        if (c.stats().rttSamples > 0)
        {
            s.rttMs = 1000.0 * c.rttSeconds();
        }
        if (c.isConnected())
        {
            s.lossPercent = 100.0 * c.receiveLossFraction();
        }
        if (m_buffer)
        {
            s.snapshotJitterMs = 1000.0 * m_buffer->stats().jitterSeconds;
            s.interpolationDelayMs = 1000.0 * m_buffer->stats().currentDelaySeconds;
            s.extrapolating = m_last.kind == client::SampleKind::Extrapolated;
        }
        return s;
    }

    std::string error() const override
    {
        const client::Client& c = m_udp.client();
        if (c.state() == client::ClientState::ConnectTimedOut)
        {
            return "no answer from " + m_server +
                   " (is polytope-server running there? It needs a connect token unless --insecure: --token "
                   "or "
                   "--token-key)";
        }
        return m_server + ": " + client::clientStateName(c.state());
    }

  private:
    std::string m_server;
    client::UdpClient m_udp;
    client::ReceivedSnapshot m_snapshot;
    std::optional<client::InterpolationBuffer> m_buffer;
    std::vector<client::SnapshotBody> m_bodies;
    client::SampleResult m_last;
    GeometrySurfaces m_surfaces;
    double m_rateTime = 0.0;
    std::uint64_t m_rateSnapshots = 0;
    std::uint64_t m_rateBytes = 0;
    double m_snapshotsPerSecond = -1.0;
    double m_kbps = -1.0;
};

// ---------------------------------------------------------------------------------------------------------
// Recordings.

/// The buffer for a replay: every frame counts as received at its own server time and the buffer's clock is
/// the play clock, so that it shows exactly the play time, neither delayed nor extrapolated.
client::InterpolationConfig replayInterpolation()
{
    client::InterpolationConfig config;
    config.intervalMultiple = 0.0;
    config.minDelaySeconds = 0.0;
    config.maxDelaySeconds = 0.0;
    config.maxExtrapolationSeconds = 0.0; // past the last frame: held
    config.snapSeconds = 0.0;             // the render clock follows the play clock exactly
    config.maxRateChange = 0.0;
    return config;
}

/// Plays a recording by its server time: the play clock advances with the display clock (at `speed`), and
/// a client::InterpolationBuffer, fed the recorded frames up to one past the play time, blends the two
/// around it. At the end the last frame is held.
class ReplaySource final : public ViewSource
{
  public:
    ReplaySource(std::string path, bool deterministic, double speed)
        : m_path(std::move(path)), m_deterministic(deterministic), m_speed(speed),
          m_buffer(replayInterpolation())
    {
    }

    bool open(std::string& error)
    {
        if (!m_reader.open(m_path, error))
        {
            error = m_path + ": " + error;
            return false;
        }
        if (m_reader.frameCount() == 0)
        {
            error = m_path + ": the recording holds no frames";
            return false;
        }
        if (!loadNext(error))
        {
            return false;
        }
        m_playTime = m_loadedTime;
        return true;
    }

    std::string description() const override
    {
        // The frame at or before the play time: the last loaded, or the one before it when that lies ahead.
        const std::size_t shown = m_loaded - (m_loaded > 1 && m_loadedTime > m_playTime ? 2 : 1);
        char text[160];
        std::snprintf(text, sizeof text, " frame %zu / %zu%s", shown + 1, m_reader.frameCount(),
                      m_paused ? " (paused)" : "");
        return "replay " + m_path + " scene '" + m_reader.header().scene + "'" + text;
    }

    bool update(double now) override
    {
        const double elapsed = m_lastNow < 0.0 ? 0.0 : now - m_lastNow;
        m_lastNow = now;
        if (!m_paused)
        {
            m_playTime += m_deterministic ? 1.0 / 60.0 : elapsed * m_speed;
        }
        // Feed the buffer until it holds a frame after the play time, or the recording ends.
        std::string error;
        while (m_loaded < m_reader.frameCount() && m_loadedTime <= m_playTime)
        {
            if (!loadNext(error))
            {
                m_error = error;
                return false;
            }
        }
        return true;
    }

    bool frame(double, ViewFrame& out) override
    {
        const client::SampleResult sample = m_buffer.sample(m_playTime, m_bodies);
        if (sample.kind == client::SampleKind::Empty)
        {
            return false;
        }
        toViewFrame(m_buffer, sample, m_bodies, out);
        // As in live views: bodies whose geometry the recording holds are drawn as they are, the others
        // (version 1 files; geometry the recorder never received) as their bounding boxes.
        for (std::size_t i = 0; i < m_bodies.size(); ++i)
        {
            if (m_bodies[i].geometry != 0)
            {
                out.bodies[i].hullIndex = m_surfaces.indexOf(m_bodies[i].geometry, m_reader.geometry());
            }
        }
        return true;
    }

    const std::vector<HullMesh>& hullMeshes() const override { return m_surfaces.meshes(); }
    std::uint64_t hullMeshesVersion() const override { return m_surfaces.version(); }

    SourceStats stats() const override
    {
        SourceStats s;
        const double span = m_loadedTime - m_previousLoadedTime;
        if (m_loaded > 1 && m_loadedTime > m_playTime && span > 0.0)
        {
            s.snapshotsPerSecond = 1.0 / span;
        }
        return s;
    }

    std::string error() const override { return m_error; }
    void setPaused(bool paused) override { m_paused = paused; }
    bool paused() const override { return m_paused; }

  private:
    /// Reads the next frame into the buffer, received (for the buffer) at its own server time.
    bool loadNext(std::string& error)
    {
        if (!m_reader.readFrame(m_loaded, m_snapshot, error))
        {
            return false;
        }
        m_snapshot.receiveTime = m_snapshot.serverTime;
        m_previousLoadedTime = m_loadedTime;
        m_loadedTime = m_snapshot.serverTime;
        ++m_loaded;
        m_buffer.add(std::move(m_snapshot));
        return true;
    }

    std::string m_path;
    bool m_deterministic = false;
    double m_speed = 1.0;
    bool m_paused = false;
    client::RecordingReader m_reader;
    client::ReceivedSnapshot m_snapshot;
    client::InterpolationBuffer m_buffer;
    std::vector<client::SnapshotBody> m_bodies;
    GeometrySurfaces m_surfaces;
    std::size_t m_loaded = 0;          ///< frames read into the buffer
    double m_loadedTime = 0.0;         ///< server time of the last of them
    double m_previousLoadedTime = 0.0; ///< and of the one before it
    double m_playTime = 0.0;           ///< server seconds shown
    double m_lastNow = -1.0;
    std::string m_error;
};

} // namespace

#if POLYTOPE_VIEWER_LOCAL_SIM
bool localScenesAvailable()
{
    return true;
}

std::unique_ptr<ViewSource> makeLocalSource(const LocalOptions& options, std::string& error)
{
    auto source = std::make_unique<LocalSource>(options);
    if (!source->build(error))
    {
        return nullptr;
    }
    return source;
}
#else
bool localScenesAvailable()
{
    return false;
}

std::unique_ptr<ViewSource> makeLocalSource(const LocalOptions& options, std::string& error)
{
    error = "cannot simulate scene '" + options.scene +
            "': this polytope-viewer was built without local scenes (POLYTOPE_VIEWER_LOCAL_SIM=OFF); "
            "watch a server (HOST:PORT) or play a recording (--replay FILE)";
    return nullptr;
}
#endif

std::unique_ptr<ViewSource> makeLiveSource(const std::string& hostPort, double connectTimeoutSeconds,
                                           const std::string& tokenFile, const std::string& tokenKey,
                                           std::string& error)
{
    std::string host;
    std::uint16_t port = 0;
    if (!client::parseHostPort(hostPort, host, port, error))
    {
        return nullptr;
    }
    client::ClientConfig config;
    config.name = "polytope-viewer";
    config.spectator = true; // watches: no player body
    config.connectTimeoutSeconds = connectTimeoutSeconds;
    if (!client::toolToken(tokenFile, tokenKey, hostPort, {}, config.token, error))
    {
        return nullptr;
    }
    auto source = std::make_unique<LiveSource>(hostPort, config);
    if (!source->connect(host, port, error))
    {
        return nullptr;
    }
    return source;
}

std::unique_ptr<ViewSource> makeReplaySource(const std::string& path, bool deterministic, double speed,
                                             std::string& error)
{
    auto source = std::make_unique<ReplaySource>(path, deterministic, speed);
    if (!source->open(error))
    {
        return nullptr;
    }
    return source;
}

std::string sceneNamesHelp()
{
#if POLYTOPE_VIEWER_LOCAL_SIM
    return physics::acceptedSceneNames();
#else
    return "none in this build (POLYTOPE_VIEWER_LOCAL_SIM=OFF)";
#endif
}

} // namespace polytope::viewer

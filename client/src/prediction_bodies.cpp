// Polytope client library, prediction: the local World's bodies, kept in step with the snapshots. Owned
// bodies are dynamic with the configured material; planes are static; everything else is kinematic and
// held at its newest snapshot pose. Geometry bodies get their shape from Client::geometry() once it has
// arrived (hulls rebuilt from their vertices, meshes and heightfields from their arrays); until then, and
// for compounds, they are left out of the local World.
#include "polytope/client/prediction.h"

#include "polytope/physics/hull.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace polytope::client
{

namespace
{
physics::Transform poseOf(const SnapshotBody& body)
{
    physics::Transform t;
    t.p = {body.position[0], body.position[1], body.position[2]};
    t.q = physics::normalize(
        physics::Quat{body.orientation[0], body.orientation[1], body.orientation[2], body.orientation[3]});
    return t;
}

bool finitePose(const SnapshotBody& body)
{
    return std::all_of(body.position.begin(), body.position.end(),
                       [](float v) { return std::isfinite(v); }) &&
           std::all_of(body.orientation.begin(), body.orientation.end(),
                       [](float v) { return std::isfinite(v); });
}

bool positiveExtent(const std::array<float, 3>& e)
{
    return std::all_of(e.begin(), e.end(), [](float v) { return std::isfinite(v) && v > 0.0f; });
}

bool sameTransform(const physics::Transform& a, const physics::Transform& b)
{
    return a.p.x == b.p.x && a.p.y == b.p.y && a.p.z == b.p.z && a.q == b.q;
}
} // namespace

Predictor::Tracked* Predictor::findTracked(std::uint32_t id)
{
    const auto it = std::lower_bound(m_tracked.begin(), m_tracked.end(), id,
                                     [](const Tracked& t, std::uint32_t i) { return t.id < i; });
    return it != m_tracked.end() && it->id == id ? &*it : nullptr;
}

const Predictor::Tracked* Predictor::findTracked(std::uint32_t id) const
{
    return const_cast<Predictor*>(this)->findTracked(id);
}

void Predictor::syncBodies(const Client& client, const ReceivedSnapshot& snapshot)
{
    bool changed = false;
    for (const SnapshotBody& body : snapshot.bodies)
    {
        if (!finitePose(body))
        {
            continue; // never from a decoder that works; kept out rather than trusted
        }
        const auto entry = client.catalogue().find(body.id);
        const bool owned = entry != client.catalogue().end() && entry->second.owned &&
                           entry->second.generation == body.generation;
        auto it = std::lower_bound(m_tracked.begin(), m_tracked.end(), body.id,
                                   [](const Tracked& t, std::uint32_t i) { return t.id < i; });
        if (it == m_tracked.end() || it->id != body.id)
        {
            it = m_tracked.insert(it, Tracked{});
            it->id = body.id;
            it->generation = 0; // forces the creation below
        }
        Tracked& t = *it;
        if (t.generation != body.generation || t.owned != owned)
        {
            destroyLocal(t);
            t = Tracked{};
            t.id = body.id;
            t.generation = body.generation;
            t.owned = owned;
            changed = true;
        }
        t.seenTick = snapshot.tick;
        t.newest = poseOf(body);
        if (t.local.isNull())
        {
            changed |= createLocal(client, t, body);
        }
        else if (!t.owned && !t.isStatic && !sameTransform(t.newest, t.placed))
        {
            m_world.setTransform(t.local, t.newest);
            t.placed = t.newest;
        }
        if (t.owned)
        {
            t.inSnapshot = true;
            t.server = t.newest;
            t.velocity = body.velocity;
        }
    }
    // Bodies the snapshot no longer lists are gone.
    for (Tracked& t : m_tracked)
    {
        if (t.seenTick != snapshot.tick)
        {
            destroyLocal(t);
            changed = true;
        }
    }
    std::erase_if(m_tracked, [&](const Tracked& t) { return t.seenTick != snapshot.tick; });
    if (changed)
    {
        rebuildView();
        invalidateHistory();
    }
}

bool Predictor::createLocal(const Client& client, Tracked& tracked, const SnapshotBody& body)
{
    physics::BodyDesc desc;
    if (!shapeFor(client, body, tracked.owned, desc.shape))
    {
        if (!tracked.shapeMissing)
        {
            tracked.shapeMissing = true;
            ++m_stats.bodiesWithoutShape;
        }
        return false;
    }
    desc.transform = tracked.newest;
    if (tracked.owned)
    {
        const PredictedBodyMaterial& m = m_config.material;
        desc.type = physics::BodyType::Dynamic;
        desc.density = m.density;
        desc.friction = m.friction;
        desc.restitution = m.restitution;
        desc.linearDamping = m.linearDamping;
        desc.angularDamping = m.angularDamping;
        desc.gravityScale = m.gravityScale;
        if (m_snapshotVelocities)
        {
            desc.linearVelocity = {body.velocity.linear[0], body.velocity.linear[1], body.velocity.linear[2]};
            desc.angularVelocity = {body.velocity.angular[0], body.velocity.angular[1],
                                    body.velocity.angular[2]};
        }
    }
    else
    {
        tracked.isStatic = body.shape == protocol::wire::ShapeKind::Plane;
        desc.type = tracked.isStatic ? physics::BodyType::Static : physics::BodyType::Kinematic;
        desc.friction = m_config.material.otherFriction;
        desc.restitution = m_config.material.otherRestitution;
    }
    physics::CreateBodyResult created = m_world.createBody(desc);
    if (created.status != physics::WorldStatus::Ok)
    {
        // Dynamic bodies' velocities may be out of range; bad extents are refused by shapeFor already.
        desc.linearVelocity = {};
        desc.angularVelocity = {};
        created = m_world.createBody(desc);
    }
    if (created.status != physics::WorldStatus::Ok)
    {
        if (!tracked.shapeMissing)
        {
            tracked.shapeMissing = true;
            ++m_stats.bodiesWithoutShape;
        }
        return false;
    }
    tracked.local = created.id;
    tracked.placed = tracked.newest;
    tracked.previous = tracked.newest;
    tracked.current = tracked.newest;
    tracked.snapNext = tracked.owned; // its first comparison shows the correction at once
    return true;
}

void Predictor::destroyLocal(Tracked& tracked)
{
    if (!tracked.local.isNull())
    {
        m_world.destroyBody(tracked.local);
        tracked.local = {};
    }
}

bool Predictor::shapeFor(const Client& client, const SnapshotBody& body, bool dynamic, physics::Shape& out)
{
    const std::array<float, 3>& e = body.extent;
    switch (body.shape)
    {
    case protocol::wire::ShapeKind::Sphere:
        out = physics::Shape::makeSphere(e[0]);
        return positiveExtent(e);
    case protocol::wire::ShapeKind::Capsule:
        out = physics::Shape::makeCapsule(e[1], e[0]);
        return positiveExtent(e);
    case protocol::wire::ShapeKind::Box:
        out = physics::Shape::makeBox({e[0], e[1], e[2]});
        return positiveExtent(e);
    case protocol::wire::ShapeKind::Plane:
        out = physics::Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f); // STANDARD.md: y <= 0 of its frame
        return !dynamic;
    case protocol::wire::ShapeKind::Hull:
    case protocol::wire::ShapeKind::Mesh:
    case protocol::wire::ShapeKind::HeightField:
        return geometryShape(client, body, dynamic, out);
    default:
        return false; // compounds: not predicted
    }
}

bool Predictor::geometryShape(const Client& client, const SnapshotBody& body, bool dynamic,
                              physics::Shape& out)
{
    for (const CachedGeometry& c : m_geometryCache)
    {
        if (c.hash == body.geometry && c.kind == body.shape)
        {
            out = c.shape;
            return !dynamic || c.kind == protocol::wire::ShapeKind::Hull;
        }
    }
    const protocol::ReceivedGeometry* received =
        body.geometry != 0 ? client.geometry().find(body.geometry) : nullptr;
    if (!received || received->kind != body.shape)
    {
        return false; // not here yet: tried again with the next snapshot
    }
    const protocol::Geometry& g = received->geometry;
    CachedGeometry cached{body.geometry, body.shape, {}};
    if (body.shape == protocol::wire::ShapeKind::Hull)
    {
        std::vector<physics::Vec3> points;
        for (const auto& v : g.hull.vertices)
        {
            points.push_back({v[0], v[1], v[2]});
        }
        const physics::HullResult hull = physics::buildConvexHull(points);
        const physics::AddHullResult added =
            hull.ok() ? m_world.addHull(hull.hull)
                      : physics::AddHullResult{0, physics::WorldStatus::InvalidHull};
        if (added.status != physics::WorldStatus::Ok)
        {
            return false;
        }
        cached.shape = physics::Shape::makeHull(added.index);
    }
    else if (body.shape == protocol::wire::ShapeKind::Mesh)
    {
        std::vector<physics::Vec3> vertices;
        for (const auto& v : g.mesh.vertices)
        {
            vertices.push_back({v[0], v[1], v[2]});
        }
        physics::TriangleMeshBuildResult mesh = physics::buildTriangleMesh(vertices, g.mesh.indices);
        const physics::AddShapeResult added =
            mesh.ok() ? m_world.addMesh(std::make_shared<const physics::TriangleMesh>(std::move(mesh.mesh)))
                      : physics::AddShapeResult{0, physics::WorldStatus::InvalidShape};
        if (added.status != physics::WorldStatus::Ok)
        {
            return false;
        }
        cached.shape = physics::Shape::makeCatalogued(physics::ShapeType::Mesh, added.index);
    }
    else
    {
        const protocol::HeightFieldGeometry& h = g.heightField;
        physics::HeightFieldDesc desc;
        desc.sampleCountX = h.samplesX;
        desc.sampleCountZ = h.samplesZ;
        desc.cellSizeX = h.cellSizeX;
        desc.cellSizeZ = h.cellSizeZ;
        desc.samples = h.samples;
        desc.heightScale = h.heightScale;
        desc.heightOffset = h.heightOffset;
        desc.holeMask = h.holes;
        physics::HeightFieldBuildResult field = physics::buildHeightField(desc);
        const physics::AddShapeResult added =
            field.ok() ? m_world.addHeightField(
                             std::make_shared<const physics::HeightField>(std::move(field.heightField)))
                       : physics::AddShapeResult{0, physics::WorldStatus::InvalidShape};
        if (added.status != physics::WorldStatus::Ok)
        {
            return false;
        }
        cached.shape = physics::Shape::makeCatalogued(physics::ShapeType::HeightField, added.index);
    }
    m_geometryCache.push_back(cached);
    out = cached.shape;
    return !dynamic || body.shape == protocol::wire::ShapeKind::Hull;
}

void Predictor::rebuildView()
{
    m_view.clear();
    for (Tracked& t : m_tracked)
    {
        if (t.owned && !t.local.isNull())
        {
            t.view = m_view.size();
            PredictedBody b;
            b.id = t.id;
            b.generation = t.generation;
            b.raw = rawPose(t);
            b.drawn = b.raw;
            m_view.push_back(b);
        }
    }
}

void Predictor::placeOthers()
{
    for (Tracked& t : m_tracked)
    {
        if (!t.owned && !t.isStatic && !t.local.isNull())
        {
            m_world.setTransform(t.local, t.newest);
            t.placed = t.newest;
        }
    }
}

} // namespace polytope::client

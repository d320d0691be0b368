// Polytope physics: sensors, bodies that report what overlaps them and have no contact response (the rules
// are in world.h, "Sensors").
//
// Design. Box2D v3.1 keeps sensors out of its contact graph and, at the end of each step, queries the tree
// with every sensor's box and diffs the sorted overlaps against the last step's. Here sensor pairs ride on
// the pair machinery instead, which already does most of that work deterministically: the broadphase finds
// them (pairEligible admits them by sensorPairEligible's rules), the collision filters, destroyBody and
// snapshots treat them as any contact, and the contact key order gives the event order. A sensor pair is a
// Contact flagged `sensor` whose manifold stays empty, so the solver, the islands, waking, the substep
// levels and the contact events, all of which look only at contacts with manifold points, never see it.
// Its state is one bit, sensorOverlap.
//
// When it is evaluated. Not in collide(), which runs on the poses the step starts from and only for pairs
// with an awake or moving body, but in updateSensors() once the step has moved and put to sleep what it
// will: the events then describe the poses getBody returns after the step, as Box2D's do. Each pair is
// evaluated again exactly when the two bodies' relative pose changed since its last evaluation (it is kept
// in the contact's cacheRelative), whichever body moved and however: a body that fell asleep inside a static
// sensor costs nothing and stays inside; a kinematic sensor moving over sleeping bodies, or a sensor or a
// sleeping body moved by setTransform, is evaluated without waking anything. The narrowphase is a pure
// function of that relative pose, so keeping the answer while it is unchanged is exact.
//
// Why the pair exists at the end of the step: a body's fat box covers the motion it may make in the step
// (World::sweptBox), so shapes that overlap at the end had overlapping fat boxes at its start, when the new
// pairs were made. (A body pushed by contacts past that motion in one step is found one step late.)
#include "polytope/physics/narrowphase.h"
#include "polytope/physics/world.h"

namespace polytope::physics
{
namespace
{

/// Sensor pairs per chunk of the parallel evaluation (a narrowphase each, when the pair moved).
constexpr std::uint32_t kSensorGrain = 32;

/// m_sensorChange: how this step's evaluation changed a pair's overlap.
enum : std::uint8_t
{
    kOverlapSame = 0,
    kOverlapBegan = 1,
    kOverlapEnded = 2,
};

bool samePose(const Transform& a, const Transform& b)
{
    return a.p.x == b.p.x && a.p.y == b.p.y && a.p.z == b.p.z && a.q.x == b.q.x && a.q.y == b.q.y &&
           a.q.z == b.q.z && a.q.w == b.q.w;
}

} // namespace

bool World::sensorPairEligible(std::uint32_t a, std::uint32_t b) const
{
    const std::uint32_t sensor = m_bodies[a].sensor ? a : b;
    const std::uint32_t visitor = sensor == a ? b : a;
    if (m_bodies[visitor].sensor)
    {
        return false; // sensors do not detect sensors
    }
    // A static or kinematic sensor meets what can move into it; only a dynamic one meets static bodies.
    if (m_bodies[sensor].type != BodyType::Dynamic && m_bodies[visitor].type == BodyType::Static)
    {
        return false;
    }
    return canCollide(m_shapes[a].type, m_shapes[b].type) && filtersAllow(a, b);
}

void World::reserveSensorBuffers()
{
    if (m_sensorBuffersReserved)
    {
        return;
    }
    m_sensorBuffersReserved = true;
    m_sensorList.reserve(m_config.maxContacts);
    m_sensorChange.reserve(m_config.maxContacts);
    if (m_config.enableSensorEvents)
    {
        m_sensorEventCapacity =
            m_config.maxSensorEvents > 0 ? m_config.maxSensorEvents : m_config.maxContacts;
        m_sensorBeginEvents.reserve(m_sensorEventCapacity);
        m_sensorEndEvents.reserve(m_sensorEventCapacity);
        m_pendingSensorEndEvents.reserve(m_sensorEventCapacity);
    }
}

void World::reportSensorEnd(const Contact& c, std::vector<SensorEndEvent>& out)
{
    if (!m_config.enableSensorEvents || !c.sensor || !c.sensorOverlap)
    {
        return;
    }
    if (out.size() < m_sensorEventCapacity)
    {
        out.push_back({idOf(sensorOf(c)), idOf(visitorOf(c))});
    }
    else if (&out == &m_pendingSensorEndEvents)
    {
        ++m_droppedPendingSensorEvents;
    }
    else
    {
        ++m_stats.droppedSensorEvents;
    }
}

void World::beginSensorStep()
{
    if (!m_config.enableSensorEvents)
    {
        return;
    }
    // Ends of pairs removed since the last step (destroyBody) first.
    m_sensorBeginEvents.clear();
    m_sensorEndEvents.assign(m_pendingSensorEndEvents.begin(), m_pendingSensorEndEvents.end());
    m_pendingSensorEndEvents.clear();
    m_stats.droppedSensorEvents = m_droppedPendingSensorEvents;
    m_droppedPendingSensorEvents = 0;
}

void World::updateSensors()
{
    if (m_sensorCount == 0)
    {
        return;
    }
    m_sensorList.clear();
    for (const ContactKey& entry : m_contactKeys)
    {
        if (m_contacts[entry.contact].sensor)
        {
            m_sensorList.push_back(entry.contact);
        }
    }
    // Each pair reads the poses and writes only itself: on any thread.
    m_sensorChange.resize(m_sensorList.size());
    forRange(static_cast<std::uint32_t>(m_sensorList.size()), kSensorGrain,
             [&](std::uint32_t begin, std::uint32_t end, int thread)
             {
                 for (std::uint32_t k = begin; k < end; ++k)
                 {
                     Contact& c = m_contacts[m_sensorList[k]];
                     const bool before = c.sensorOverlap;
                     const Transform relative =
                         relativeTransform(m_sims[c.bodyA].transform, m_sims[c.bodyB].transform);
                     if (c.cacheMargin < 0.0f || !samePose(relative, c.cacheRelative))
                     {
                         // Margin 0: points of separation <= 0 only, so any point means overlap or touch.
                         const ContactManifold manifold =
                             collideAnyShapes(m_shapes[c.bodyA], m_shapes[c.bodyB], relative, 0.0f,
                                              catalogue(), m_pieceScratch[static_cast<std::size_t>(thread)]);
                         bool overlap = false;
                         for (int p = 0; p < manifold.pointCount; ++p)
                         {
                             overlap = overlap || manifold.points[p].separation <= 0.0f;
                         }
                         c.sensorOverlap = overlap;
                         c.cacheRelative = relative;
                         c.cacheMargin = 0.0f;
                     }
                     m_sensorChange[k] = c.sensorOverlap == before ? kOverlapSame
                                         : c.sensorOverlap         ? kOverlapBegan
                                                                   : kOverlapEnded;
                 }
             });
    // The events, in key order.
    const bool events = m_config.enableSensorEvents;
    std::uint32_t overlaps = 0;
    for (std::size_t k = 0; k < m_sensorList.size(); ++k)
    {
        const Contact& c = m_contacts[m_sensorList[k]];
        overlaps += c.sensorOverlap ? 1u : 0u;
        const std::uint8_t change = m_sensorChange[k];
        if (!events || change == kOverlapSame)
        {
            continue;
        }
        const BodyId sensor = idOf(sensorOf(c));
        const BodyId visitor = idOf(visitorOf(c));
        if (change == kOverlapBegan && m_sensorBeginEvents.size() < m_sensorEventCapacity)
        {
            m_sensorBeginEvents.push_back({sensor, visitor});
        }
        else if (change == kOverlapEnded && m_sensorEndEvents.size() < m_sensorEventCapacity)
        {
            m_sensorEndEvents.push_back({sensor, visitor});
        }
        else
        {
            ++m_stats.droppedSensorEvents;
        }
    }
    m_stats.sensorOverlaps = overlaps;
}

WorldStatus World::sensorOverlaps(BodyId sensor, BodyCallback onVisitor) const
{
    if (!isValid(sensor))
    {
        return WorldStatus::StaleBodyId;
    }
    const std::uint32_t index = sensor.index;
    if (!m_bodies[index].sensor)
    {
        return WorldStatus::WrongBodyType;
    }
    // A sensor's pairs are keyed (lower slot, higher slot): in key order the visitors' slots ascend.
    for (const ContactKey& entry : m_contactKeys)
    {
        const Contact& c = m_contacts[entry.contact];
        if (c.sensorOverlap && (c.bodyA == index || c.bodyB == index) && !onVisitor(idOf(visitorOf(c))))
        {
            break;
        }
    }
    return WorldStatus::Ok;
}

} // namespace polytope::physics

// Polytope physics: collision filtering, the world's layer table and the bodies' layers and groups.
//
// A pair of bodies may collide when the table lets their layers meet and they share no non-zero group (the
// rule of Jolt's ObjectLayerPairFilter plus Box2D's negative group index, folded into one 32 x 32 bit
// table and one 32-bit group). The rule is applied where pairs are made (World::pairEligible), so a
// filtered pair never becomes a contact and costs nothing past the broadphase.
//
// Changes are applied at the next step, in two halves, both deterministic:
//  - pairs that became filtered: the step starts by removing every contact the rule no longer allows
//    (m_filtersChanged says whether it must look), waking the bodies of those that touched, as
//    destroyBody does;
//  - pairs newly allowed: the broadphase reports pairs only when a proxy moves, so the bodies concerned are
//    marked moved (BroadphaseTree::touchProxy; and their plane tests redone) and their pairs are reported
//    again. Sleeping bodies in such pairs are woken at once: a contact between two resting bodies would
//    otherwise not be computed until something woke them. Sensor pairs wake nothing: they are evaluated
//    at the end of every step, asleep or not (world_sensors.cpp).
// The marks are the ones a moved proxy leaves (Body::proxyMoved, pendingPlaneTest), which snapshots carry;
// m_filtersChanged is not stored: restoreState sets it when a contact it loads is filtered.
#include "polytope/physics/world.h"

namespace polytope::physics
{
namespace
{

/// Whether the fat box `box` reaches into the half-space of plane body `plane`.
bool boxReachesPlane(const Shape& plane, const Transform& xf, const Aabb& box)
{
    const Vec3 normal = rotate(xf.q, plane.plane.normal);
    const float offset = plane.plane.offset + dot(normal, xf.p);
    return dot(normal, box.center()) - dot(absPerElem(normal), box.extents()) <= offset;
}

} // namespace

bool World::layersCollide(std::uint32_t a, std::uint32_t b) const
{
    return a < kMaxCollisionLayers && b < kMaxCollisionLayers && ((m_layerMasks[a] >> b) & 1u) != 0;
}

std::uint32_t World::layerMask(std::uint32_t layer) const
{
    return layer < kMaxCollisionLayers ? m_layerMasks[layer] : 0u;
}

void World::requeryPairs(std::uint32_t index)
{
    Body& body = m_bodies[index];
    if (body.proxy != kNullProxy)
    {
        treeOf(index).touchProxy(body.proxy);
        body.proxyMoved = true;
        body.pendingPlaneTest = true;
        return;
    }
    // A plane: every body is tested against it again.
    for (Body& other : m_bodies)
    {
        if (other.alive && other.proxy != kNullProxy)
        {
            other.pendingPlaneTest = true;
        }
    }
}

WorldStatus World::setLayersCollide(std::uint32_t a, std::uint32_t b, bool collide)
{
    if (a >= kMaxCollisionLayers || b >= kMaxCollisionLayers)
    {
        return WorldStatus::InvalidBodyDesc;
    }
    if (layersCollide(a, b) == collide)
    {
        return WorldStatus::Ok;
    }
    if (collide)
    {
        m_layerMasks[a] |= 1u << b;
        m_layerMasks[b] |= 1u << a;
    }
    else
    {
        m_layerMasks[a] &= ~(1u << b);
        m_layerMasks[b] &= ~(1u << a);
        m_filtersChanged = true;
        return WorldStatus::Ok;
    }
    // Allowed again: the bodies of both layers look for pairs at the next step, and the sleeping ones that
    // now have a pair across the two layers wake (each such pair has a body on layer a: visit those).
    const auto slotCount = static_cast<std::uint32_t>(m_bodies.size());
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (m_bodies[i].alive && (m_bodies[i].layer == a || m_bodies[i].layer == b))
        {
            requeryPairs(i);
        }
    }
    auto wakeIfNewPair = [&](std::uint32_t i, std::uint32_t j)
    {
        const std::uint32_t other = m_bodies[i].layer == a ? b : a;
        if (m_bodies[j].layer == other && pairEligible(i, j) && !m_bodies[i].sensor && !m_bodies[j].sensor)
        {
            wakeIsland(i);
            wakeIsland(j);
        }
    };
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        const Body& body = m_bodies[i];
        if (!body.alive || body.layer != a)
        {
            continue;
        }
        if (body.proxy == kNullProxy)
        {
            for (std::uint32_t j = 0; j < slotCount; ++j)
            {
                if (m_bodies[j].alive && m_bodies[j].proxy != kNullProxy &&
                    boxReachesPlane(m_shapes[i], m_sims[i].transform, m_fatBoxes[j]))
                {
                    wakeIfNewPair(i, j);
                }
            }
            continue;
        }
        queryTrees(m_fatBoxes[i],
                   [&](std::uint32_t j)
                   {
                       wakeIfNewPair(i, j);
                       return true;
                   });
        for (const std::uint32_t plane : m_planes)
        {
            if (boxReachesPlane(m_shapes[plane], m_sims[plane].transform, m_fatBoxes[i]))
            {
                wakeIfNewPair(i, plane);
            }
        }
    }
    return WorldStatus::Ok;
}

WorldStatus World::setBodyFilter(BodyId id, std::uint8_t layer, std::uint32_t group)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    if (layer >= kMaxCollisionLayers)
    {
        return WorldStatus::InvalidBodyDesc;
    }
    const std::uint32_t index = id.index;
    Body& body = m_bodies[index];
    if (body.layer == layer && body.group == group)
    {
        return WorldStatus::Ok;
    }
    body.layer = layer;
    body.group = group;
    if (body.proxy != kNullProxy)
    {
        treeOf(index).setProxyGroup(body.proxy, group);
    }
    m_filtersChanged = true;
    requeryPairs(index);
    wakeIsland(index);
    m_sims[index].sleepTime = 0.0f;
    // Wake the sleeping bodies it may now pair with (those it no longer pairs with wake, if they touched,
    // when the step removes the contact).
    if (body.proxy == kNullProxy)
    {
        for (std::uint32_t j = 0; j < static_cast<std::uint32_t>(m_bodies.size()); ++j)
        {
            if (m_bodies[j].alive && m_bodies[j].proxy != kNullProxy && pairEligible(index, j) &&
                !body.sensor && !m_bodies[j].sensor &&
                boxReachesPlane(m_shapes[index], m_sims[index].transform, m_fatBoxes[j]))
            {
                wakeIsland(j);
            }
        }
        return WorldStatus::Ok;
    }
    queryTrees(m_fatBoxes[index],
               [&](std::uint32_t j)
               {
                   if (pairEligible(index, j) && !body.sensor && !m_bodies[j].sensor)
                   {
                       wakeIsland(j);
                   }
                   return true;
               });
    return WorldStatus::Ok;
}

void World::removeFilteredContacts()
{
    m_filtersChanged = false;
    std::size_t out = 0;
    for (std::size_t k = 0; k < m_contactKeys.size(); ++k)
    {
        const ContactKey entry = m_contactKeys[k];
        const Contact& c = m_contacts[entry.contact];
        if (filtersAllow(c.bodyA, c.bodyB))
        {
            m_contactKeys[out++] = entry;
            continue;
        }
        if (c.manifold.pointCount > 0)
        {
            wakeIsland(c.bodyA);
            wakeIsland(c.bodyB);
            reportEnd(c, m_endEvents);
        }
        reportSensorEnd(c, m_sensorEndEvents);
        m_freeContacts.push_back(entry.contact);
    }
    m_contactKeys.resize(out);
}

} // namespace polytope::physics

// Polytope physics: the world.
//
// The step is: integrate velocities (gravity), find contacts, solve contact velocity constraints with
// sequential impulses (normal and two friction directions, clamped accumulated impulses), then integrate
// positions. Contacts are speculative: a body closer than WorldConfig::speculativeDistance to a surface
// gets a contact whose target velocity allows it to close exactly the remaining gap this step, so a fast
// body stops on the surface instead of sinking into it. Penetration left over is removed gradually.
//
// This is the walking-skeleton solver: dynamic bodies collide with static planes only. The general
// narrowphase (GJK/EPA/SAT) and the persistent, warm-started solver replace collectPlaneContacts and the
// plain iteration below.
#include "polytope/physics/world.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace polytope::physics
{
namespace
{

bool isValidShape(const Shape& s)
{
    auto positive = [](float v) { return std::isfinite(v) && v > 0.0f; };
    switch (s.type)
    {
    case ShapeType::Sphere:
        return positive(s.sphere.radius);
    case ShapeType::Capsule:
        return positive(s.capsule.radius) && positive(s.capsule.halfHeight);
    case ShapeType::Box:
        return positive(s.box.halfExtents.x) && positive(s.box.halfExtents.y) && positive(s.box.halfExtents.z);
    case ShapeType::Plane:
        return isFinite(s.plane.normal) && std::isfinite(s.plane.offset) &&
               std::fabs(length(s.plane.normal) - 1.0f) < 1e-3f;
    case ShapeType::Hull:
        return false; // not supported by the skeleton world yet
    }
    return false;
}

/// Mass and local inverse inertia of a solid of the given density (closed forms).
void solidMass(const Shape& s, float density, float& mass, Vec3& inertiaDiagonal)
{
    switch (s.type)
    {
    case ShapeType::Sphere:
    {
        const float r = s.sphere.radius;
        mass = density * (4.0f / 3.0f) * kPi * r * r * r;
        const float i = 0.4f * mass * r * r;
        inertiaDiagonal = {i, i, i};
        return;
    }
    case ShapeType::Box:
    {
        const Vec3 e = s.box.halfExtents * 2.0f;
        mass = density * e.x * e.y * e.z;
        const float k = mass / 12.0f;
        inertiaDiagonal = {k * (e.y * e.y + e.z * e.z), k * (e.x * e.x + e.z * e.z), k * (e.x * e.x + e.y * e.y)};
        return;
    }
    case ShapeType::Capsule:
    {
        // Cylinder plus two hemispheres, about the centre, axis along y.
        const float r = s.capsule.radius, h = 2.0f * s.capsule.halfHeight;
        const float mc = density * kPi * r * r * h;
        const float ms = density * (4.0f / 3.0f) * kPi * r * r * r;
        mass = mc + ms;
        const float iy = mc * r * r * 0.5f + ms * 0.4f * r * r;
        const float ix = mc * (r * r / 4.0f + h * h / 12.0f) +
                         ms * (0.4f * r * r + h * h / 4.0f + 3.0f * h * r / 8.0f);
        inertiaDiagonal = {ix, iy, ix};
        return;
    }
    case ShapeType::Hull:
    case ShapeType::Plane:
        break;
    }
    mass = 0.0f;
    inertiaDiagonal = {};
}

/// FNV-1a, 64 bits, over explicit little pieces (never over structs with padding).
struct Fnv64
{
    std::uint64_t h = 0xcbf29ce484222325ull;
    void bytes(const void* p, std::size_t n)
    {
        const auto* b = static_cast<const unsigned char*>(p);
        for (std::size_t i = 0; i < n; ++i)
        {
            h ^= b[i];
            h *= 0x100000001b3ull;
        }
    }
    void u32(std::uint32_t v) { bytes(&v, sizeof v); }
    void u64(std::uint64_t v) { bytes(&v, sizeof v); }
    void f32(float v)
    {
        std::uint32_t u;
        std::memcpy(&u, &v, sizeof u);
        u32(u);
    }
    void vec(const Vec3& v)
    {
        f32(v.x);
        f32(v.y);
        f32(v.z);
    }
};

} // namespace

World::World(const WorldConfig& config) : m_config(config)
{
    m_contacts.reserve(1024);
}

CreateBodyResult World::createBody(const BodyDesc& desc)
{
    if (m_bodyCount >= m_config.maxBodies)
    {
        return {{}, WorldStatus::BodyCapacityReached};
    }
    const bool finite = isFinite(desc.transform.p) && isFinite(desc.transform.q) && isFinite(desc.linearVelocity) &&
                        isFinite(desc.angularVelocity) && std::isfinite(desc.density) &&
                        std::isfinite(desc.friction) && std::isfinite(desc.restitution);
    const bool planeOk = desc.shape.type != ShapeType::Plane || desc.type == BodyType::Static;
    const bool densityOk = desc.type != BodyType::Dynamic || desc.density > 0.0f;
    if (!finite || !planeOk || !densityOk || !isValidShape(desc.shape) || desc.friction < 0.0f ||
        desc.restitution < 0.0f || desc.restitution > 1.0f)
    {
        return {{}, WorldStatus::InvalidBodyDesc};
    }

    std::uint32_t index;
    if (!m_freeSlots.empty())
    {
        index = m_freeSlots.back();
        m_freeSlots.pop_back();
    }
    else
    {
        index = static_cast<std::uint32_t>(m_slots.size());
        m_slots.emplace_back();
        m_transforms.emplace_back();
        m_linearVelocities.emplace_back();
        m_angularVelocities.emplace_back();
        m_mass.emplace_back();
        m_materials.emplace_back();
        m_shapes.emplace_back();
    }

    Slot& slot = m_slots[index];
    slot.generation = slot.generation + 1 == 0 ? 1 : slot.generation + 1;
    slot.alive = true;
    slot.type = desc.type;
    slot.userData = desc.userData;

    m_transforms[index] = {desc.transform.p, normalize(desc.transform.q)};
    const bool moves = desc.type != BodyType::Static;
    m_linearVelocities[index] = moves ? desc.linearVelocity : Vec3{};
    m_angularVelocities[index] = moves ? desc.angularVelocity : Vec3{};
    m_shapes[index] = desc.shape;
    m_materials[index] = {desc.friction, desc.restitution};

    MassData massData;
    if (desc.type == BodyType::Dynamic)
    {
        float mass = 0.0f;
        Vec3 inertia;
        solidMass(desc.shape, desc.density, mass, inertia);
        massData.inverseMass = 1.0f / mass;
        massData.inverseInertiaLocal = Mat3::diagonal({1.0f / inertia.x, 1.0f / inertia.y, 1.0f / inertia.z});
    }
    m_mass[index] = massData;
    ++m_bodyCount;
    return {{index, slot.generation}, WorldStatus::Ok};
}

WorldStatus World::destroyBody(BodyId id)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    m_slots[id.index].alive = false;
    m_freeSlots.push_back(id.index);
    --m_bodyCount;
    return WorldStatus::Ok;
}

bool World::isValid(BodyId id) const
{
    return !id.isNull() && id.index < m_slots.size() && m_slots[id.index].alive &&
           m_slots[id.index].generation == id.generation;
}

void World::fillState(std::uint32_t index, BodyState& out) const
{
    const Slot& slot = m_slots[index];
    out.id = {index, slot.generation};
    out.type = slot.type;
    out.shape = m_shapes[index];
    out.transform = m_transforms[index];
    out.linearVelocity = m_linearVelocities[index];
    out.angularVelocity = m_angularVelocities[index];
    out.mass = m_mass[index].inverseMass > 0.0f ? 1.0f / m_mass[index].inverseMass : 0.0f;
    out.userData = slot.userData;
}

bool World::getBody(BodyId id, BodyState& out) const
{
    if (!isValid(id))
    {
        return false;
    }
    fillState(id.index, out);
    return true;
}

WorldStatus World::setVelocity(BodyId id, const Vec3& linear, const Vec3& angular)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    if (!isFinite(linear) || !isFinite(angular))
    {
        return WorldStatus::InvalidBodyDesc;
    }
    if (m_slots[id.index].type != BodyType::Static)
    {
        m_linearVelocities[id.index] = linear;
        m_angularVelocities[id.index] = angular;
    }
    return WorldStatus::Ok;
}

Mat3 World::inverseInertiaWorld(std::uint32_t index) const
{
    const Mat3 r = toMat3(m_transforms[index].q);
    return r * m_mass[index].inverseInertiaLocal * transpose(r);
}

void World::addContact(std::uint32_t body, std::uint32_t plane, const Vec3& pointWorld, float separation,
                       const Vec3& normal, float dt)
{
    ContactPoint c;
    c.body = body;
    c.normal = normal;
    c.arm = pointWorld - m_transforms[body].p;
    c.separation = separation;
    orthonormalBasis(normal, c.tangent1, c.tangent2);

    const float invMass = m_mass[body].inverseMass;
    const Mat3 invI = inverseInertiaWorld(body);
    auto effectiveMass = [&](const Vec3& dir)
    {
        const Vec3 rxd = cross(c.arm, dir);
        const float k = invMass + dot(rxd, invI * rxd);
        return k > 0.0f ? 1.0f / k : 0.0f;
    };
    c.normalMass = effectiveMass(normal);
    c.tangentMass1 = effectiveMass(c.tangent1);
    c.tangentMass2 = effectiveMass(c.tangent2);

    const Material& a = m_materials[body];
    const Material& b = m_materials[plane];
    c.friction = std::sqrt(a.friction * b.friction);
    const float restitution = std::max(a.restitution, b.restitution);

    const Vec3 v = m_linearVelocities[body] + cross(m_angularVelocities[body], c.arm);
    const float vn = dot(v, normal);
    if (separation > 0.0f)
    {
        // Speculative: approach no faster than closes the gap within this step.
        c.bias = -separation / dt;
    }
    else
    {
        const float excess = std::max(-separation - m_config.contactSlop, 0.0f);
        c.bias = m_config.positionCorrection * excess / dt;
    }
    if (restitution > 0.0f && vn < -m_config.restitutionThreshold && separation <= 0.0f + m_config.contactSlop)
    {
        c.bias = std::max(c.bias, -restitution * vn);
    }
    m_contacts.push_back(c);
}

void World::collectPlaneContacts(float dt)
{
    m_contacts.clear();
    const auto slotCount = static_cast<std::uint32_t>(m_slots.size());
    for (std::uint32_t p = 0; p < slotCount; ++p)
    {
        if (!m_slots[p].alive || m_shapes[p].type != ShapeType::Plane)
        {
            continue;
        }
        // The plane in world space.
        const Vec3 n = rotate(m_transforms[p].q, m_shapes[p].plane.normal);
        const float offset = m_shapes[p].plane.offset + dot(n, m_transforms[p].p);
        for (std::uint32_t b = 0; b < slotCount; ++b)
        {
            if (!m_slots[b].alive || m_slots[b].type != BodyType::Dynamic)
            {
                continue;
            }
            const Transform& xf = m_transforms[b];
            const Shape& shape = m_shapes[b];
            const float margin = m_config.speculativeDistance;
            if (shape.type == ShapeType::Sphere)
            {
                const float sep = dot(n, xf.p) - offset - shape.sphere.radius;
                if (sep < margin)
                {
                    addContact(b, p, xf.p - n * shape.sphere.radius, sep, n, dt);
                }
            }
            else if (shape.type == ShapeType::Capsule)
            {
                for (float s : {-1.0f, 1.0f})
                {
                    const Vec3 c = transformPoint(xf, Vec3{0.0f, s * shape.capsule.halfHeight, 0.0f});
                    const float sep = dot(n, c) - offset - shape.capsule.radius;
                    if (sep < margin)
                    {
                        addContact(b, p, c - n * shape.capsule.radius, sep, n, dt);
                    }
                }
            }
            else if (shape.type == ShapeType::Box)
            {
                const Vec3 e = shape.box.halfExtents;
                for (int corner = 0; corner < 8; ++corner)
                {
                    const Vec3 local{(corner & 1) ? e.x : -e.x, (corner & 2) ? e.y : -e.y, (corner & 4) ? e.z : -e.z};
                    const Vec3 w = transformPoint(xf, local);
                    const float sep = dot(n, w) - offset;
                    if (sep < margin)
                    {
                        addContact(b, p, w, sep, n, dt);
                    }
                }
            }
        }
    }
}

void World::step(float dt)
{
    if (!(dt > 0.0f) || !std::isfinite(dt))
    {
        return;
    }
    const auto slotCount = static_cast<std::uint32_t>(m_slots.size());

    // 1. Forces.
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (m_slots[i].alive && m_slots[i].type == BodyType::Dynamic)
        {
            m_linearVelocities[i] += m_config.gravity * dt;
        }
    }

    // 2. Contacts.
    collectPlaneContacts(dt);

    // 3. Velocity constraints, sequential impulses.
    for (int iteration = 0; iteration < m_config.velocityIterations; ++iteration)
    {
        for (ContactPoint& c : m_contacts)
        {
            Vec3& v = m_linearVelocities[c.body];
            Vec3& w = m_angularVelocities[c.body];
            const float invMass = m_mass[c.body].inverseMass;
            const Mat3 invI = inverseInertiaWorld(c.body);
            auto apply = [&](const Vec3& impulse)
            {
                v += impulse * invMass;
                w += invI * cross(c.arm, impulse);
            };

            // Friction first, bounded by the normal impulse of the previous iteration.
            const float maxFriction = c.friction * c.normalImpulse;
            const Vec3 vt = v + cross(w, c.arm);
            {
                const float lambda = -dot(vt, c.tangent1) * c.tangentMass1;
                const float old = c.tangentImpulse1;
                c.tangentImpulse1 = std::clamp(old + lambda, -maxFriction, maxFriction);
                apply(c.tangent1 * (c.tangentImpulse1 - old));
            }
            {
                const Vec3 vt2 = v + cross(w, c.arm);
                const float lambda = -dot(vt2, c.tangent2) * c.tangentMass2;
                const float old = c.tangentImpulse2;
                c.tangentImpulse2 = std::clamp(old + lambda, -maxFriction, maxFriction);
                apply(c.tangent2 * (c.tangentImpulse2 - old));
            }

            // Normal: relative normal velocity >= bias, accumulated impulse >= 0.
            const Vec3 vn3 = v + cross(w, c.arm);
            const float vn = dot(vn3, c.normal);
            const float lambda = -(vn - c.bias) * c.normalMass;
            const float old = c.normalImpulse;
            c.normalImpulse = std::max(old + lambda, 0.0f);
            apply(c.normal * (c.normalImpulse - old));
        }
    }

    // 4. Positions.
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (m_slots[i].alive && m_slots[i].type != BodyType::Static)
        {
            Transform& xf = m_transforms[i];
            xf.p += m_linearVelocities[i] * dt;
            xf.q = integrateRotation(xf.q, m_angularVelocities[i], dt);
        }
    }
    ++m_stepCount;
}

std::uint64_t World::stateHash() const
{
    Fnv64 h;
    h.u64(m_stepCount);
    for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(m_slots.size()); ++i)
    {
        if (!m_slots[i].alive)
        {
            continue;
        }
        h.u32(i);
        h.u32(m_slots[i].generation);
        h.vec(m_transforms[i].p);
        h.f32(m_transforms[i].q.x);
        h.f32(m_transforms[i].q.y);
        h.f32(m_transforms[i].q.z);
        h.f32(m_transforms[i].q.w);
        h.vec(m_linearVelocities[i]);
        h.vec(m_angularVelocities[i]);
    }
    return h.h;
}

} // namespace polytope::physics

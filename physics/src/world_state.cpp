// Polytope physics: the world's state hash and its snapshots (saveState / restoreState).
//
// A snapshot holds everything that shapes the future of the simulation, so that restore-then-step gives
// bit-identical results to the original run (network rollback, replays):
//   header      magic "PTWS", format version, a fingerprint of the WorldConfig fields that must match
//               (capacities and solver settings), gravity (settable), step count, the collision layer table
//   catalogues  fingerprints of the hull catalogue and of the compound, mesh and heightfield catalogues
//               (World::m_geometryFingerprint, kept as they are added): shapes are not stored, the restoring
//               world must have added the same ones (in the same order) before restoring
//   bodies      every slot (dead ones keep their generation, so stale ids stay stale), with motion state,
//               mass, material, shape, fat box, sleep state and island links, forces pending, collision
//               layer and group, sensor flag
//   free slots  in LIFO order (slot reuse order is part of the future)
//   contacts    in key order: bodies, manifold (points, feature ids), accumulated impulses, and what
//               manifold reuse needs (the poses its points are placed for and it was computed for, its
//               margin); for a sensor pair, whether it overlaps (and the pose that was found at, in the same
//               fields)
//   joints      every slot (dead ones keep their generation), with the description as last set, the
//               impulses of the last step (warm start) and its force and torque; free joint slots in LIFO
//               order. The bodies' joint lists are rebuilt (nothing depends on their order)
// The broadphase tree is not stored: it is rebuilt from the fat boxes. Its shape may differ from the
// original, but pairs are reported as a set and sorted by body slots, so the contacts come out the same.
// Proxies whose fat box changed since the last pair update are marked moved again, as they were.
//
// Byte order is the host's (snapshots are for the same binary). Reading never trusts the buffer: every
// count is checked against the capacities and the bytes left, every float must be finite, every index in
// range; the world is only touched once everything has been read and checked.
#include "polytope/physics/mass.h"
#include "polytope/physics/narrowphase.h"
#include "polytope/physics/world.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace polytope::physics
{
namespace
{

constexpr std::uint32_t kSnapshotMagic = 0x53575450u; // "PTWS" little-endian
constexpr std::uint32_t kSnapshotVersion = 7; ///< 2: contacts carry their manifold-reuse state; 3: impulses
                                              ///< per step, bodies' substep levels; 4: collision filters;
                                              ///< 5: compounds, meshes and heightfields, sensors (the
                                              ///< body's flag, the pair's flag and overlap); 6: joints;
                                              ///< 7: the pose a manifold was computed for, not its slack

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

float maxAbs(const Vec3& v)
{
    return std::max(std::fabs(v.x), std::max(std::fabs(v.y), std::fabs(v.z)));
}

std::uint64_t configFingerprint(const WorldConfig& c)
{
    Fnv64 h;
    h.u32(c.maxBodies);
    h.u32(c.maxContacts);
    h.u32(c.maxHulls);
    h.u32(c.maxJoints);
    h.f32(c.jointHertz);
    h.f32(c.jointDampingRatio);
    h.u32(static_cast<std::uint32_t>(c.substeps));
    h.u32(static_cast<std::uint32_t>(c.relaxIterations));
    h.u32(static_cast<std::uint32_t>(c.limitIterations));
    h.u32(static_cast<std::uint32_t>(c.maxSubsteps));
    for (float f :
         {c.substepLoadRatio, c.substepMassRatio, c.contactHertz, c.contactDampingRatio,
          c.contactPushoutVelocity, c.linearSlop, c.speculativeDistance, c.maxSpeculativeDistance,
          c.restitutionThreshold, c.maxLinearSpeed, c.broadphaseMargin, c.sleepVelocity, c.timeToSleep})
    {
        h.f32(f);
    }
    h.u32(c.enableSleep ? 1u : 0u);
    return h.h;
}

class Writer
{
  public:
    explicit Writer(std::vector<std::uint8_t>& out) : m_out(out) {}
    template <class T> void raw(const T& v)
    {
        const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
        m_out.insert(m_out.end(), p, p + sizeof(T));
    }
    void u8(std::uint8_t v) { raw(v); }
    void u16(std::uint16_t v) { raw(v); }
    void u32(std::uint32_t v) { raw(v); }
    void u64(std::uint64_t v) { raw(v); }
    void f32(float v) { raw(v); }
    void vec(const Vec3& v)
    {
        f32(v.x);
        f32(v.y);
        f32(v.z);
    }
    void quat(const Quat& q)
    {
        f32(q.x);
        f32(q.y);
        f32(q.z);
        f32(q.w);
    }
    void mat(const Mat3& m)
    {
        vec(m.c0);
        vec(m.c1);
        vec(m.c2);
    }

  private:
    std::vector<std::uint8_t>& m_out;
};

/// Largest inverse mass a saved body may have (1/kg): a gram. Lighter bodies than that are no body the
/// engine makes, and a huge inverse mass turns the first contact into an infinite velocity.
constexpr float kMaxInverseMass = 1e3f;
/// Largest magnitude of an inertia tensor's entry in a saved state (kg m^2): a dynamic cube of 1 km at the
/// density of water has 1.7e17; far below where a step overflows.
constexpr float kMaxInertiaEntry = 1e18f;
/// Largest magnitude of an inverse inertia tensor's entry (1/(kg m^2)): a gram at a millimetre has 1e9.
constexpr float kMaxInverseInertiaEntry = 1e12f;
/// Largest friction coefficient and damping a saved body or contact may have: far past any real material,
/// and small enough that friction times the largest impulse stays finite.
constexpr float kMaxFriction = 100.0f;
constexpr float kMaxDamping = 1e6f;
constexpr float kMaxGravityScale = 1e3f;

/// An inertia tensor (or its inverse) a body can have: symmetric, bounded, its diagonal not negative and each
/// off-diagonal entry within the Cauchy-Schwarz bound of a positive semi-definite matrix. Finite floats alone
/// are not enough: a changed byte can make an entry 1e37, and every step after it would be non-finite.
bool plausibleInertia(const Mat3& m, float maxEntry)
{
    const float a[3][3] = {{m.c0.x, m.c1.x, m.c2.x}, {m.c0.y, m.c1.y, m.c2.y}, {m.c0.z, m.c1.z, m.c2.z}};
    for (int i = 0; i < 3; ++i)
    {
        if (!(a[i][i] >= 0.0f && a[i][i] <= maxEntry))
        {
            return false;
        }
        for (int j = 0; j < 3; ++j)
        {
            const float tolerance = 1e-4f * (std::fabs(a[i][j]) + std::fabs(a[j][i])) + 1e-30f;
            if (!(std::fabs(a[i][j]) <= maxEntry) || std::fabs(a[i][j] - a[j][i]) > tolerance)
            {
                return false;
            }
            if (i != j && std::fabs(a[i][j]) > 1.001f * std::sqrt(a[i][i] * a[j][j]) + 1e-30f)
            {
                return false;
            }
        }
    }
    return true;
}

/// Reads from a span; any failure (short buffer, non-finite float) latches `ok` to false and yields zeros.
class Reader
{
  public:
    explicit Reader(std::span<const std::uint8_t> data) : m_data(data) {}
    bool ok = true;
    bool truncated = false;

    template <class T> T raw()
    {
        T v{};
        if (!ok)
        {
            return v;
        }
        if (m_data.size() - m_offset < sizeof(T))
        {
            ok = false;
            truncated = true;
            return v;
        }
        std::memcpy(&v, m_data.data() + m_offset, sizeof(T));
        m_offset += sizeof(T);
        return v;
    }
    std::uint8_t u8() { return raw<std::uint8_t>(); }
    std::uint16_t u16() { return raw<std::uint16_t>(); }
    std::uint32_t u32() { return raw<std::uint32_t>(); }
    std::uint64_t u64() { return raw<std::uint64_t>(); }
    float f32()
    {
        const float v = raw<float>();
        if (!std::isfinite(v))
        {
            ok = false;
            return 0.0f;
        }
        return v;
    }
    Vec3 vec()
    {
        const float x = f32();
        const float y = f32();
        const float z = f32();
        return {x, y, z};
    }
    Quat quat()
    {
        Quat q;
        q.x = f32();
        q.y = f32();
        q.z = f32();
        q.w = f32();
        return q;
    }
    Mat3 mat()
    {
        Mat3 m;
        m.c0 = vec();
        m.c1 = vec();
        m.c2 = vec();
        return m;
    }
    bool boolean()
    {
        const std::uint8_t v = u8();
        if (v > 1)
        {
            ok = false;
        }
        return v == 1;
    }
    /// A count that must be at most `max` and for which at least count * minBytesEach bytes remain.
    std::uint32_t count(std::uint32_t max, std::size_t minBytesEach)
    {
        const std::uint32_t n = u32();
        if (!ok)
        {
            return 0;
        }
        if (n > max)
        {
            ok = false;
            return 0;
        }
        if (minBytesEach > 0 && (m_data.size() - m_offset) / minBytesEach < n)
        {
            ok = false;
            truncated = true;
            return 0;
        }
        return n;
    }
    bool atEnd() const { return m_offset == m_data.size(); }

  private:
    std::span<const std::uint8_t> m_data;
    std::size_t m_offset = 0;
};

void writeShape(Writer& w, const Shape& s)
{
    w.u8(static_cast<std::uint8_t>(s.type));
    w.f32(s.sphere.radius);
    w.f32(s.capsule.halfHeight);
    w.f32(s.capsule.radius);
    w.vec(s.box.halfExtents);
    w.vec(s.plane.normal);
    w.f32(s.plane.offset);
    w.u32(s.hullIndex);
    w.u32(s.catalogueIndex);
}

Shape readShape(Reader& r)
{
    Shape s;
    const std::uint8_t type = r.u8();
    if (type >= kShapeTypeCount)
    {
        r.ok = false;
    }
    s.type = static_cast<ShapeType>(type < kShapeTypeCount ? type : 0);
    s.sphere.radius = r.f32();
    s.capsule.halfHeight = r.f32();
    s.capsule.radius = r.f32();
    s.box.halfExtents = r.vec();
    s.plane.normal = r.vec();
    s.plane.offset = r.f32();
    s.hullIndex = r.u32();
    s.catalogueIndex = r.u32();
    return s;
}

} // namespace

std::uint64_t World::fingerprintAfter(std::uint64_t previous, const CompoundShape& compound)
{
    Fnv64 h{previous};
    h.u32(static_cast<std::uint32_t>(ShapeType::Compound));
    h.u64(compound.children.size());
    for (const CompoundChild& child : compound.children)
    {
        const Shape& s = child.shape;
        h.u32(static_cast<std::uint32_t>(s.type));
        h.f32(s.sphere.radius);
        h.f32(s.capsule.halfHeight);
        h.f32(s.capsule.radius);
        h.vec(s.box.halfExtents);
        h.u32(s.hullIndex);
        h.vec(child.transform.p);
        h.f32(child.transform.q.x);
        h.f32(child.transform.q.y);
        h.f32(child.transform.q.z);
        h.f32(child.transform.q.w);
    }
    return h.h;
}

std::uint64_t World::fingerprintAfter(std::uint64_t previous, const TriangleMesh& mesh)
{
    Fnv64 h{previous};
    h.u32(static_cast<std::uint32_t>(ShapeType::Mesh));
    h.u64(mesh.vertexCount());
    for (const Vec3& v : mesh.vertices())
    {
        h.vec(v);
    }
    h.u64(mesh.triangleCount());
    for (std::uint32_t t = 0; t < mesh.triangleCount(); ++t)
    {
        for (const std::uint32_t i : mesh.triangleVertexIndices(t))
        {
            h.u32(i);
        }
        h.u32(mesh.activeEdges(t));
    }
    return h.h;
}

std::uint64_t World::fingerprintAfter(std::uint64_t previous, const HeightField& field)
{
    Fnv64 h{previous};
    h.u32(static_cast<std::uint32_t>(ShapeType::HeightField));
    h.u32(field.sampleCountX());
    h.u32(field.sampleCountZ());
    h.f32(field.cellSizeX());
    h.f32(field.cellSizeZ());
    h.f32(field.heightScale());
    h.f32(field.heightOffset());
    for (std::uint32_t z = 0; z < field.sampleCountZ(); ++z)
    {
        for (std::uint32_t x = 0; x < field.sampleCountX(); ++x)
        {
            h.u32(field.sample(x, z));
        }
    }
    for (std::uint32_t c = 0; c < field.cellCount(); ++c)
    {
        h.u32(field.isHole(c) ? 1u : 0u);
    }
    return h.h;
}

namespace
{

/// Fingerprint of the hull catalogue: every number of every hull, adjacency included.
std::uint64_t hullCatalogFingerprint(std::span<const ConvexHull> hulls)
{
    Fnv64 h;
    h.u64(hulls.size());
    auto indices = [&](const std::vector<std::uint16_t>& v)
    {
        h.u64(v.size());
        for (const std::uint16_t i : v)
        {
            h.u32(i);
        }
    };
    for (const ConvexHull& hull : hulls)
    {
        h.u64(hull.vertices.size());
        for (const Vec3& v : hull.vertices)
        {
            h.vec(v);
        }
        h.u64(hull.faces.size());
        for (const HullFace& f : hull.faces)
        {
            h.vec(f.normal);
            h.f32(f.offset);
            h.u32(f.firstIndex);
            h.u32(f.indexCount);
        }
        indices(hull.faceVertices);
        h.u64(hull.edges.size());
        for (const HullEdge& e : hull.edges)
        {
            h.u32(e.v0);
            h.u32(e.v1);
            h.u32(e.face0);
            h.u32(e.face1);
        }
        h.vec(hull.centroid);
        indices(hull.faceEdges);
        indices(hull.vertexEdgeStart);
        indices(hull.vertexEdges);
    }
    return h.h;
}

} // namespace

std::uint64_t World::stateHash() const
{
    Fnv64 h;
    h.u64(m_stepCount);
    for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(m_bodies.size()); ++i)
    {
        if (!m_bodies[i].alive)
        {
            continue;
        }
        const BodySim& sim = m_sims[i];
        h.u32(i);
        h.u32(m_bodies[i].generation);
        h.u32(m_bodies[i].sleeping ? 1u : 0u);
        h.vec(sim.transform.p);
        h.f32(sim.transform.q.x);
        h.f32(sim.transform.q.y);
        h.f32(sim.transform.q.z);
        h.f32(sim.transform.q.w);
        h.vec(sim.linearVelocity);
        h.vec(sim.angularVelocity);
    }
    return h.h;
}

namespace
{

/// A float that may be +infinity (break thresholds), as its bits.
void writeThreshold(Writer& w, float v)
{
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    w.u32(bits);
}

float readThreshold(Reader& r)
{
    const std::uint32_t bits = r.u32();
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v; // checked by validJointSettings: > 0, not NaN
}

void writeJoint(Writer& w, const JointDesc& d, const JointImpulses& i, const Vec3& force, const Vec3& torque)
{
    w.u8(static_cast<std::uint8_t>(d.type));
    w.u32(d.bodyA.index);
    w.u32(d.bodyA.generation);
    w.u32(d.bodyB.index);
    w.u32(d.bodyB.generation);
    w.vec(d.frameA.p);
    w.quat(d.frameA.q);
    w.vec(d.frameB.p);
    w.quat(d.frameB.q);
    w.u8(d.collideConnected ? 1 : 0);
    w.f32(d.hertz);
    w.f32(d.dampingRatio);
    w.u8(d.limit.enabled ? 1 : 0);
    w.f32(d.limit.lower);
    w.f32(d.limit.upper);
    w.u8(static_cast<std::uint8_t>(d.motor.mode));
    w.f32(d.motor.targetVelocity);
    w.f32(d.motor.targetPosition);
    w.f32(d.motor.maxForce);
    w.f32(d.motor.hertz);
    w.f32(d.motor.dampingRatio);
    w.u8(d.spring.enabled ? 1 : 0);
    w.f32(d.spring.hertz);
    w.f32(d.spring.dampingRatio);
    w.f32(d.spring.target);
    w.f32(d.length);
    w.f32(d.coneAngle);
    writeThreshold(w, d.breakForce);
    writeThreshold(w, d.breakTorque);
    w.u64(d.userData);
    w.vec(i.linear);
    w.vec(i.angular);
    for (const float v : {i.axial, i.spring, i.motor, i.lower, i.upper, i.swing})
    {
        w.f32(v);
    }
    w.vec(force);
    w.vec(torque);
}

/// Reads a free list (slots in LIFO order) of a table of `slots` entries: each slot in range, not alive, and
/// listed once. False when it is not.
template <class Alive>
bool readFreeList(Reader& r, std::uint32_t slots, Alive&& alive, std::vector<std::uint32_t>& out)
{
    const std::uint32_t count = r.count(slots, 4);
    out.assign(count, 0u);
    std::vector<std::uint8_t> seen(slots, 0);
    for (std::uint32_t& slot : out)
    {
        slot = r.u32();
        if (!r.ok || slot >= slots || alive(slot) || seen[slot])
        {
            return false;
        }
        seen[slot] = 1;
    }
    return r.ok;
}

bool readJoint(Reader& r, JointDesc& d, JointImpulses& i, Vec3& force, Vec3& torque)
{
    const std::uint8_t type = r.u8();
    d.type = static_cast<JointType>(type);
    d.bodyA.index = r.u32();
    d.bodyA.generation = r.u32();
    d.bodyB.index = r.u32();
    d.bodyB.generation = r.u32();
    d.frameA.p = r.vec();
    d.frameA.q = r.quat();
    d.frameB.p = r.vec();
    d.frameB.q = r.quat();
    d.collideConnected = r.boolean();
    d.hertz = r.f32();
    d.dampingRatio = r.f32();
    d.limit.enabled = r.boolean();
    d.limit.lower = r.f32();
    d.limit.upper = r.f32();
    d.motor.mode = static_cast<MotorMode>(r.u8());
    d.motor.targetVelocity = r.f32();
    d.motor.targetPosition = r.f32();
    d.motor.maxForce = r.f32();
    d.motor.hertz = r.f32();
    d.motor.dampingRatio = r.f32();
    d.spring.enabled = r.boolean();
    d.spring.hertz = r.f32();
    d.spring.dampingRatio = r.f32();
    d.spring.target = r.f32();
    d.length = r.f32();
    d.coneAngle = r.f32();
    d.breakForce = readThreshold(r);
    d.breakTorque = readThreshold(r);
    d.userData = r.u64();
    i.linear = r.vec();
    i.angular = r.vec();
    for (float* v : {&i.axial, &i.spring, &i.motor, &i.lower, &i.upper, &i.swing})
    {
        *v = r.f32();
    }
    force = r.vec();
    torque = r.vec();
    const auto unit = [](const Quat& q)
    {
        const float l2 = dot(q, q);
        return l2 > 0.99f && l2 < 1.01f;
    };
    return r.ok && type < kJointTypeCount && unit(d.frameA.q) && unit(d.frameB.q) &&
           withinWorldBound(d.frameA.p) && withinWorldBound(d.frameB.p) && d.hertz >= 0.0f &&
           d.dampingRatio >= 0.0f && d.length >= 0.0f && d.coneAngle >= 0.0f && d.coneAngle <= kPi &&
           validJointSettings(d) && maxAbs(i.linear) <= kMaxContactImpulse &&
           maxAbs(i.angular) <= kMaxContactImpulse && std::fabs(i.axial) <= kMaxContactImpulse &&
           std::fabs(i.spring) <= kMaxContactImpulse && std::fabs(i.motor) <= kMaxContactImpulse &&
           std::fabs(i.lower) <= kMaxContactImpulse && std::fabs(i.upper) <= kMaxContactImpulse &&
           std::fabs(i.swing) <= kMaxContactImpulse;
}

} // namespace

void World::saveState(std::vector<std::uint8_t>& out) const
{
    out.clear();
    Writer w(out);
    w.u32(kSnapshotMagic);
    w.u32(kSnapshotVersion);
    w.u64(configFingerprint(m_config));
    w.vec(m_config.gravity);
    w.u64(m_stepCount);
    for (const std::uint32_t mask : m_layerMasks)
    {
        w.u32(mask);
    }

    w.u64(hullCatalogFingerprint(m_hulls));
    w.u64(m_geometryFingerprint);

    w.u32(static_cast<std::uint32_t>(m_bodies.size()));
    for (std::size_t i = 0; i < m_bodies.size(); ++i)
    {
        const Body& b = m_bodies[i];
        w.u32(b.generation);
        w.u8(b.alive ? 1 : 0);
        if (!b.alive)
        {
            continue;
        }
        w.u8(static_cast<std::uint8_t>(b.type));
        w.u8(b.sleeping ? 1 : 0);
        w.u8(b.allowSleep ? 1 : 0);
        w.u8(b.pendingPlaneTest ? 1 : 0);
        w.u8(b.proxyMoved ? 1 : 0);
        w.u8(b.allowedDofs);
        w.u8(b.layer);
        w.u32(b.group);
        w.u8(b.sensor ? 1 : 0);
        w.u32(b.islandNext);
        w.u64(b.userData);
        writeShape(w, m_shapes[i]);
        const BodySim& s = m_sims[i];
        w.vec(s.transform.p);
        w.quat(s.transform.q);
        w.vec(s.center);
        w.vec(s.localCenter);
        w.vec(s.linearVelocity);
        w.vec(s.angularVelocity);
        w.vec(s.force);
        w.vec(s.torque);
        w.f32(s.inverseMass);
        w.mat(s.inertiaLocal);
        w.mat(s.inverseInertiaLocal);
        w.f32(s.extent);
        w.f32(s.sleepTime);
        w.u8(s.substepLevel);
        w.f32(s.substepLevelHold);
        w.u8(s.isotropicInertia ? 1 : 0);
        const Material& m = m_materials[i];
        w.f32(m.friction);
        w.f32(m.restitution);
        w.f32(m.linearDamping);
        w.f32(m.angularDamping);
        w.f32(m.gravityScale);
        w.vec(m_fatBoxes[i].min);
        w.vec(m_fatBoxes[i].max);
    }
    w.u32(static_cast<std::uint32_t>(m_freeSlots.size()));
    for (const std::uint32_t slot : m_freeSlots)
    {
        w.u32(slot);
    }

    w.u32(static_cast<std::uint32_t>(m_contactKeys.size()));
    for (const ContactKey& entry : m_contactKeys)
    {
        const Contact& c = m_contacts[entry.contact];
        w.u32(c.bodyA);
        w.u32(c.bodyB);
        w.vec(c.manifold.normal);
        w.u8(static_cast<std::uint8_t>(c.manifold.pointCount));
        for (int p = 0; p < c.manifold.pointCount; ++p)
        {
            const ContactPoint& cp = c.manifold.points[p];
            w.vec(cp.pointA);
            w.vec(cp.pointB);
            w.f32(cp.separation);
            w.u32(cp.featureId);
            w.f32(c.normalImpulse[p]);
            w.f32(c.tangentImpulse1[p]);
            w.f32(c.tangentImpulse2[p]);
        }
        w.f32(c.friction);
        w.f32(c.restitution);
        w.vec(c.cacheRelative.p);
        w.quat(c.cacheRelative.q);
        w.vec(c.madeRelative.p);
        w.quat(c.madeRelative.q);
        w.f32(c.cacheMargin);
        w.u8(c.sensor ? 1 : 0);
        w.u8(c.sensorOverlap ? 1 : 0);
    }

    w.u32(static_cast<std::uint32_t>(m_joints.size()));
    for (const Joint& joint : m_joints)
    {
        w.u32(joint.generation);
        w.u8(joint.alive ? 1 : 0);
        if (joint.alive)
        {
            writeJoint(w, joint.desc, joint.impulses, joint.force, joint.torque);
        }
    }
    w.u32(static_cast<std::uint32_t>(m_freeJoints.size()));
    for (const std::uint32_t slot : m_freeJoints)
    {
        w.u32(slot);
    }
}

RestoreStatus World::restoreState(std::span<const std::uint8_t> data)
{
    Reader r(data);
    auto fail = [&](RestoreStatus otherwise) { return r.truncated ? RestoreStatus::Truncated : otherwise; };

    if (r.u32() != kSnapshotMagic)
    {
        return fail(RestoreStatus::BadMagic);
    }
    if (r.u32() != kSnapshotVersion)
    {
        return fail(RestoreStatus::BadVersion);
    }
    if (r.u64() != configFingerprint(m_config))
    {
        return fail(RestoreStatus::ConfigMismatch);
    }
    const Vec3 gravity = r.vec();
    const std::uint64_t stepCount = r.u64();
    std::array<std::uint32_t, kMaxCollisionLayers> layerMasks{};
    for (std::uint32_t& mask : layerMasks)
    {
        mask = r.u32();
    }
    if (!r.ok)
    {
        return fail(RestoreStatus::Corrupt);
    }
    for (std::uint32_t a = 0; a < kMaxCollisionLayers; ++a)
    {
        for (std::uint32_t b = 0; b < kMaxCollisionLayers; ++b)
        {
            if (((layerMasks[a] >> b) & 1u) != ((layerMasks[b] >> a) & 1u))
            {
                return RestoreStatus::Corrupt; // the table is symmetric
            }
        }
    }

    // Hulls are not stored: the restoring world must hold the same catalogue.
    if (r.u64() != hullCatalogFingerprint(m_hulls) || r.u64() != m_geometryFingerprint)
    {
        return fail(RestoreStatus::HullCatalogMismatch);
    }

    // Bodies.
    const std::uint32_t slotCount = r.count(m_config.maxBodies, 5);
    std::vector<Body> bodies(slotCount);
    std::vector<BodySim> sims(slotCount);
    std::vector<Material> materials(slotCount);
    std::vector<Shape> shapes(slotCount);
    std::vector<Aabb> fatBoxes(slotCount);
    std::uint32_t alive = 0;
    for (std::uint32_t i = 0; i < slotCount && r.ok; ++i)
    {
        Body& b = bodies[i];
        b.generation = r.u32();
        b.alive = r.boolean();
        if (!b.alive)
        {
            continue;
        }
        ++alive;
        const std::uint8_t type = r.u8();
        if (type > static_cast<std::uint8_t>(BodyType::Dynamic) || b.generation == 0)
        {
            return fail(RestoreStatus::Corrupt);
        }
        b.type = static_cast<BodyType>(type);
        b.sleeping = r.boolean();
        b.allowSleep = r.boolean();
        b.pendingPlaneTest = r.boolean();
        b.proxyMoved = r.boolean();
        b.allowedDofs = r.u8();
        b.layer = r.u8();
        b.group = r.u32();
        b.sensor = r.boolean();
        if (b.layer >= kMaxCollisionLayers)
        {
            return fail(RestoreStatus::Corrupt);
        }
        b.islandNext = r.u32();
        b.userData = r.u64();
        shapes[i] = readShape(r);
        BodySim& s = sims[i];
        s.transform.p = r.vec();
        s.transform.q = r.quat();
        s.center = r.vec();
        s.localCenter = r.vec();
        s.linearVelocity = r.vec();
        s.angularVelocity = r.vec();
        s.force = r.vec();
        s.torque = r.vec();
        s.inverseMass = r.f32();
        s.inertiaLocal = r.mat();
        s.inverseInertiaLocal = r.mat();
        s.extent = r.f32();
        s.sleepTime = r.f32();
        s.substepLevel = r.u8();
        s.substepLevelHold = r.f32();
        if (s.substepLevel > m_maxSubstepLevel ||
            !(s.substepLevelHold >= 0.0f && s.substepLevelHold <= kSubstepLevelHoldSeconds))
        {
            return fail(RestoreStatus::Corrupt);
        }
        s.isotropicInertia = r.boolean();
        Material& m = materials[i];
        m.friction = r.f32();
        m.restitution = r.f32();
        m.linearDamping = r.f32();
        m.angularDamping = r.f32();
        m.gravityScale = r.f32();
        fatBoxes[i].min = r.vec();
        fatBoxes[i].max = r.vec();
        if (!r.ok)
        {
            break;
        }
        const bool plane = shapes[i].type == ShapeType::Plane;
        // Poses must be rigid (unit quaternions) and within a sane range, and fat boxes must hold the shape:
        // the broadphase and the narrowphase rely on both.
        constexpr float kMaxCoordinate = 2.0f * kWorldBoundMeters;
        const float qNorm = dot(s.transform.q, s.transform.q);
        const bool poseOk = qNorm > 0.998f && qNorm < 1.002f && maxAbs(s.transform.p) <= kWorldBoundMeters &&
                            maxAbs(s.center) <= kWorldBoundMeters && maxAbs(s.localCenter) < kMaxCoordinate &&
                            s.extent >= 0.0f && s.extent < kMaxCoordinate &&
                            distance(transformPoint(s.transform, s.localCenter), s.center) <=
                                1e-3f * (1.0f + maxAbs(s.center));
        bool boxOk = plane;
        const bool shapeOk = shapeFits(shapes[i], b.type);
        if (!plane && poseOk && shapeOk)
        {
            const Aabb tight = shapeBoundsAt(shapes[i], s.transform, catalogue());
            const Aabb& fat = fatBoxes[i];
            boxOk =
                fat.contains(tight) && maxAbs(fat.min) < kMaxCoordinate && maxAbs(fat.max) < kMaxCoordinate;
        }
        const bool speedOk = length(s.linearVelocity) <= 1.001f * m_config.maxLinearSpeed + 1e-3f &&
                             length(s.angularVelocity) < 1e6f;
        const bool massOk = s.inverseMass <= kMaxInverseMass &&
                            plausibleInertia(s.inertiaLocal, kMaxInertiaEntry) &&
                            plausibleInertia(s.inverseInertiaLocal, kMaxInverseInertiaEntry);
        if (!poseOk || !boxOk || !speedOk || !massOk)
        {
            return fail(RestoreStatus::Corrupt);
        }
        if ((b.allowedDofs & ~kDofAll) != 0 || (b.islandNext != kNoIsland && b.islandNext >= slotCount) ||
            (b.islandNext != kNoIsland) != b.sleeping || (b.sleeping && b.type != BodyType::Dynamic) ||
            !shapeOk || (plane && b.type != BodyType::Static) ||
            (b.type == BodyType::Dynamic) != (s.inverseMass > 0.0f) || s.inverseMass < 0.0f ||
            m.friction < 0.0f || m.friction > kMaxFriction || m.restitution < 0.0f || m.restitution > 1.0f ||
            m.linearDamping < 0.0f || m.linearDamping > kMaxDamping || m.angularDamping < 0.0f ||
            m.angularDamping > kMaxDamping || std::fabs(m.gravityScale) > kMaxGravityScale)
        {
            return fail(RestoreStatus::Corrupt);
        }
    }
    if (!r.ok)
    {
        return fail(RestoreStatus::Corrupt);
    }
    // Sleeping islands must be closed loops of sleeping bodies.
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (!bodies[i].alive || !bodies[i].sleeping)
        {
            continue;
        }
        std::uint32_t j = i;
        std::uint32_t steps = 0;
        do
        {
            j = bodies[j].islandNext;
            if (j >= slotCount || !bodies[j].alive || !bodies[j].sleeping || ++steps > slotCount)
            {
                return RestoreStatus::Corrupt;
            }
        } while (j != i);
    }

    std::vector<std::uint32_t> freeSlots;
    if (!readFreeList(
            r, slotCount, [&](std::uint32_t i) { return bodies[i].alive; }, freeSlots))
    {
        return fail(RestoreStatus::Corrupt);
    }
    const auto freeCount = static_cast<std::uint32_t>(freeSlots.size());
    if (freeCount + alive != slotCount)
    {
        return fail(RestoreStatus::Corrupt);
    }

    // Contacts, in key order.
    const std::uint32_t contactCount = r.count(m_config.maxContacts, 4 + 4 + 12 + 1 + 8 + 36 + 2);
    std::vector<Contact> contacts(contactCount);
    std::vector<ContactKey> keys(contactCount);
    for (std::uint32_t k = 0; k < contactCount; ++k)
    {
        Contact& c = contacts[k];
        c.bodyA = r.u32();
        c.bodyB = r.u32();
        c.manifold.normal = r.vec();
        c.manifold.pointCount = r.u8();
        if (!r.ok || c.manifold.pointCount > kMaxManifoldPoints)
        {
            return fail(RestoreStatus::Corrupt);
        }
        for (int p = 0; p < c.manifold.pointCount; ++p)
        {
            ContactPoint& cp = c.manifold.points[p];
            cp.pointA = r.vec();
            cp.pointB = r.vec();
            cp.separation = r.f32();
            cp.featureId = r.u32();
            c.normalImpulse[p] = r.f32();
            c.tangentImpulse1[p] = r.f32();
            c.tangentImpulse2[p] = r.f32();
            constexpr float kMaxPointCoordinate = 2.0f * kWorldBoundMeters;
            if (!(c.normalImpulse[p] >= 0.0f && c.normalImpulse[p] <= kMaxContactImpulse) ||
                !(std::fabs(c.tangentImpulse1[p]) <= kMaxContactImpulse) ||
                !(std::fabs(c.tangentImpulse2[p]) <= kMaxContactImpulse) ||
                !(std::fabs(cp.separation) <= kMaxPointCoordinate) ||
                !(maxAbs(cp.pointA) <= kMaxPointCoordinate) || !(maxAbs(cp.pointB) <= kMaxPointCoordinate))
            {
                return fail(RestoreStatus::Corrupt);
            }
        }
        c.friction = r.f32();
        c.restitution = r.f32();
        c.cacheRelative.p = r.vec();
        c.cacheRelative.q = r.quat();
        c.madeRelative.p = r.vec();
        c.madeRelative.q = r.quat();
        c.cacheMargin = r.f32();
        c.sensor = r.boolean();
        c.sensorOverlap = r.boolean();
        const auto poseFits = [](const Transform& pose)
        {
            const float turnLength2 = dot(pose.q, pose.q);
            return maxAbs(pose.p) <= 2.0f * kWorldBoundMeters && turnLength2 > 0.99f && turnLength2 < 1.01f;
        };
        if (!poseFits(c.cacheRelative) || !poseFits(c.madeRelative) ||
            !(c.cacheMargin <=
              m_config.maxSpeculativeDistance + m_config.speculativeDistance + kManifoldReuseSlack) ||
            !(c.cacheMargin >= -1.0f))
        {
            return fail(RestoreStatus::Corrupt);
        }
        const float normalLength2 = lengthSquared(c.manifold.normal);
        if (!(normalLength2 > 0.99f && normalLength2 < 1.01f) || c.friction < 0.0f ||
            c.friction > kMaxFriction || c.restitution < 0.0f || c.restitution > 1.0f)
        {
            return fail(RestoreStatus::Corrupt);
        }
        if (!r.ok || c.bodyA >= slotCount || c.bodyB >= slotCount || c.bodyA == c.bodyB ||
            !bodies[c.bodyA].alive || !bodies[c.bodyB].alive ||
            !canCollide(shapes[c.bodyA].type, shapes[c.bodyB].type))
        {
            return fail(RestoreStatus::Corrupt);
        }
        // The pair is one the world makes (World::pairEligible, filters aside): a sensor pair has one
        // sensor, no manifold, and an overlap only once evaluated (cacheMargin 0); any other pair has a
        // dynamic body.
        const Body& bodyA = bodies[c.bodyA];
        const Body& bodyB = bodies[c.bodyB];
        if (c.sensor)
        {
            const Body& sensor = bodyA.sensor ? bodyA : bodyB;
            const Body& visitor = bodyA.sensor ? bodyB : bodyA;
            if (!sensor.sensor || visitor.sensor || c.manifold.pointCount != 0 ||
                (sensor.type != BodyType::Dynamic && visitor.type == BodyType::Static) ||
                !(c.cacheMargin == 0.0f || (c.cacheMargin == -1.0f && !c.sensorOverlap)))
            {
                return fail(RestoreStatus::Corrupt);
            }
        }
        else if (bodyA.sensor || bodyB.sensor || c.sensorOverlap ||
                 (bodyA.type != BodyType::Dynamic && bodyB.type != BodyType::Dynamic))
        {
            return fail(RestoreStatus::Corrupt);
        }
        keys[k] = {pairKey(c.bodyA, c.bodyB), k, keyStateOf(c)};
        if (k > 0 && !(keys[k - 1].key < keys[k].key))
        {
            return fail(RestoreStatus::Corrupt);
        }
    }
    // Joints.
    const std::uint32_t jointSlots = r.count(m_config.maxJoints, 5);
    std::vector<Joint> joints(jointSlots);
    std::uint32_t jointsAlive = 0;
    for (Joint& joint : joints)
    {
        joint.generation = r.u32();
        joint.alive = r.boolean();
        if (!r.ok)
        {
            return fail(RestoreStatus::Corrupt);
        }
        if (!joint.alive)
        {
            continue;
        }
        ++jointsAlive;
        if (!readJoint(r, joint.desc, joint.impulses, joint.force, joint.torque) || joint.generation == 0)
        {
            return fail(RestoreStatus::Corrupt);
        }
        const std::uint32_t a = joint.desc.bodyA.index;
        const std::uint32_t b = joint.desc.bodyB.index;
        if (a >= slotCount || b >= slotCount || a == b || !bodies[a].alive || !bodies[b].alive ||
            bodies[a].generation != joint.desc.bodyA.generation ||
            bodies[b].generation != joint.desc.bodyB.generation ||
            (bodies[a].type != BodyType::Dynamic && bodies[b].type != BodyType::Dynamic))
        {
            return fail(RestoreStatus::Corrupt);
        }
    }
    std::vector<std::uint32_t> freeJoints;
    if (!readFreeList(
            r, jointSlots, [&](std::uint32_t j) { return joints[j].alive; }, freeJoints))
    {
        return fail(RestoreStatus::Corrupt);
    }
    const auto freeJointCount = static_cast<std::uint32_t>(freeJoints.size());
    if (!r.ok || freeJointCount + jointsAlive != jointSlots || !r.atEnd())
    {
        return fail(RestoreStatus::Corrupt);
    }

    // Everything checked: commit. Capacities were reserved at creation and the counts are within them.
    m_config.gravity = gravity;
    m_stepCount = stepCount;
    m_layerMasks = layerMasks;
    m_bodies.assign(bodies.begin(), bodies.end());
    m_sims.assign(sims.begin(), sims.end());
    m_materials.assign(materials.begin(), materials.end());
    m_shapes.assign(shapes.begin(), shapes.end());
    m_fatBoxes.assign(fatBoxes.begin(), fatBoxes.end());
    m_tightBoxes.resize(m_fatBoxes.size());
    for (std::uint32_t i = 0; i < m_tightBoxes.size(); ++i)
    {
        m_tightBoxes[i] =
            m_bodies[i].alive && m_shapes[i].type != ShapeType::Plane ? computeTightBox(i) : Aabb{};
    }
    m_freeSlots.assign(freeSlots.begin(), freeSlots.end());
    m_bodyCount = alive;
    m_planes.clear();
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (m_bodies[i].alive && m_shapes[i].type == ShapeType::Plane)
        {
            m_planes.push_back(i);
        }
    }
    m_joints.assign(joints.begin(), joints.end());
    m_jointLinks.assign(jointSlots, JointLink{});
    for (std::uint32_t j = 0; j < jointSlots; ++j)
    {
        if (m_joints[j].alive)
        {
            m_jointLinks[j] = linkOf(m_joints[j].desc);
        }
    }
    m_freeJoints.assign(freeJoints.begin(), freeJoints.end());
    m_jointCount = jointsAlive;
    for (std::uint32_t j = 0; j < jointSlots; ++j)
    {
        Joint& joint = m_joints[j];
        if (joint.alive)
        {
            joint.next[0] = m_bodies[joint.desc.bodyA.index].jointList;
            m_bodies[joint.desc.bodyA.index].jointList = j;
            joint.next[1] = m_bodies[joint.desc.bodyB.index].jointList;
            m_bodies[joint.desc.bodyB.index].jointList = j;
        }
    }
    reserveJointBuffers();
    m_jointEvents.clear();
    m_pendingJointEvents.clear();
    m_contacts.assign(contacts.begin(), contacts.end());
    m_contactKeys.assign(keys.begin(), keys.end());
    m_freeContacts.clear();
    // Contacts the filters no longer allow (changed since the last step) go at the next step, as they would
    // have in the saved world.
    m_filtersChanged = false;
    for (const Contact& c : m_contacts)
    {
        m_filtersChanged = m_filtersChanged || !filtersAllow(c.bodyA, c.bodyB);
    }
    m_sensorCount = 0;
    for (const Body& body : m_bodies)
    {
        m_sensorCount += body.alive && body.sensor ? 1u : 0u;
    }
    if (m_sensorCount > 0)
    {
        reserveSensorBuffers();
    }
    rebuildBroadphase();
    m_stats = StepStats{};
    // Events are transient: those of the last step and the ends pending from destroyBody belong to the
    // timeline left behind. Restored manifolds keep their points, so touching pairs report no new begin;
    // sensor pairs keep their overlap, likewise.
    m_beginEvents.clear();
    m_endEvents.clear();
    m_hitEvents.clear();
    m_pendingEndEvents.clear();
    m_droppedPendingEvents = 0;
    m_sensorBeginEvents.clear();
    m_sensorEndEvents.clear();
    m_pendingSensorEndEvents.clear();
    m_droppedPendingSensorEvents = 0;
    return RestoreStatus::Ok;
}

void World::rebuildBroadphase()
{
    m_broadphase = BroadphaseTree(m_broadphase.config());
    m_staticTree = BroadphaseTree(m_staticTree.config());
    for (std::uint32_t i = 0; i < m_bodies.size(); ++i)
    {
        Body& body = m_bodies[i];
        body.proxy = kNullProxy;
        if (body.alive && m_shapes[i].type != ShapeType::Plane)
        {
            body.proxy = treeOf(i).createProxy(m_fatBoxes[i], i, body.group);
        }
    }
    m_staticTree.rebuild(); // as a step rebuilds it after static bodies change
    // Forget the creations, then mark moved what had moved in the original.
    m_broadphase.forgetMoved();
    m_staticTree.forgetMoved();
    for (std::uint32_t i = 0; i < m_bodies.size(); ++i)
    {
        const Body& body = m_bodies[i];
        if (body.alive && body.proxyMoved && body.proxy != kNullProxy)
        {
            treeOf(i).touchProxy(body.proxy);
        }
    }
}

} // namespace polytope::physics

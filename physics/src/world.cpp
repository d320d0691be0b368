// Polytope physics: the world (see world.h for the shape of a step).
//
// Contacts. A contact exists for every eligible body pair (at least one dynamic body, allowed by the
// collision filters of world_filter.cpp) whose fat boxes overlap, touching or not; it is created when the
// broadphase reports the overlap and destroyed when the fat boxes part. Contacts live in a pool and are
// indexed by a vector of (pair key, pool index) sorted by key: new pairs (sorted) are merged in linearly, so
// the iteration order is a function of the pairs alone. Planes are infinite and stay out of the broadphase
// tree: a body whose fat box changed is tested against each plane instead. A pair with a sensor is a contact
// too, flagged and without a manifold, so that only world_sensors.cpp looks at it.
//
// Speculative margin. A pair's narrowphase margin is speculativeDistance plus how far the two bodies can
// travel in one step (|v| dt + |w| dt * extent, capped by maxSpeculativeDistance), so a fast body meets a
// thin one as a speculative contact before it could pass through it; fat boxes are stretched by v dt for
// the same reason.
#include "polytope/physics/world.h"

#include "polytope/physics/mass.h"
#include "polytope/physics/narrowphase.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

namespace polytope::physics
{
namespace
{

constexpr std::uint32_t kStaticSolverIndex = 0;
/// A body's stored fat box is replaced once it sticks out of the wanted one by more than this many
/// broadphase margins (a fast body that slowed down): FatBoxPolicy::shrinkSlackMeters.
constexpr float kFatBoxShrinkSlackInMargins = 4.0f;

Vec3 linearMaskOf(std::uint8_t dofs)
{
    return {(dofs & kDofTranslationX) ? 1.0f : 0.0f, (dofs & kDofTranslationY) ? 1.0f : 0.0f,
            (dofs & kDofTranslationZ) ? 1.0f : 0.0f};
}

Vec3 angularMaskOf(std::uint8_t dofs)
{
    return {(dofs & kDofRotationX) ? 1.0f : 0.0f, (dofs & kDofRotationY) ? 1.0f : 0.0f,
            (dofs & kDofRotationZ) ? 1.0f : 0.0f};
}

Vec3& column(Mat3& m, int j)
{
    return j == 0 ? m.c0 : (j == 1 ? m.c1 : m.c2);
}

/// Inverse of the world inertia restricted to the free rotation axes (zero rows and columns on locked
/// axes): the block of free axes is inverted on its own, which is right even when the inertia couples a
/// free axis to a locked one.
Mat3 restrictedInverse(const Mat3& inertiaWorld, const Vec3& angularMask)
{
    Mat3 m = inertiaWorld;
    for (int j = 0; j < 3; ++j)
    {
        for (int i = 0; i < 3; ++i)
        {
            if (angularMask[i] == 0.0f || angularMask[j] == 0.0f)
            {
                column(m, j)[i] = i == j ? 1.0f : 0.0f;
            }
        }
    }
    Mat3 inv = inverse(m);
    for (int j = 0; j < 3; ++j)
    {
        for (int i = 0; i < 3; ++i)
        {
            if (angularMask[i] == 0.0f || angularMask[j] == 0.0f)
            {
                column(inv, j)[i] = 0.0f;
            }
        }
    }
    return inv;
}

bool isFiniteMat(const Mat3& m)
{
    return isFinite(m.c0) && isFinite(m.c1) && isFinite(m.c2);
}

/// `v` scaled down to length `maxLength` if longer.
Vec3 clampedLength(const Vec3& v, float maxLength)
{
    const float l2 = lengthSquared(v);
    return l2 > maxLength * maxLength ? v * (maxLength / std::sqrt(l2)) : v;
}

/// Farthest point of the shape from `center` (shape frame), metres.
float shapeExtent(const Shape& s, const Vec3& center, const ShapeCatalogue& catalogue)
{
    const std::span<const ConvexHull> hulls = catalogue.hulls;
    switch (s.type)
    {
    case ShapeType::Sphere:
        return s.sphere.radius + length(center);
    case ShapeType::Capsule:
        return s.capsule.halfHeight + s.capsule.radius + length(center);
    case ShapeType::Box:
        return length(s.box.halfExtents) + length(center);
    case ShapeType::Hull:
    {
        float r = 0.0f;
        for (const Vec3& v : hulls[s.hullIndex].vertices)
        {
            r = std::max(r, length(v - center));
        }
        return r;
    }
    case ShapeType::Compound:
    {
        float r = 0.0f;
        for (const CompoundChild& child : catalogue.compounds[s.catalogueIndex].children)
        {
            const Vec3 childCenter = inverseTransformPoint(child.transform, center);
            r = std::max(r, shapeExtent(child.shape, childCenter, catalogue));
        }
        return r;
    }
    case ShapeType::Mesh:
    case ShapeType::HeightField:
    {
        // The farthest corner of the local box: a bound, enough for the reach of a turning kinematic body.
        const Aabb box = shapeBoundsAt(s, Transform::identity(), catalogue);
        const Vec3 far = maxPerElem(absPerElem(box.min - center), absPerElem(box.max - center));
        return length(far);
    }
    case ShapeType::Plane:
        break;
    }
    return 0.0f;
}

/// Rank of a shape type in a pair: the lower is body A. Convex shapes, then compounds, then level geometry,
/// so that A is always one collideComposite and the table serve (see collide_composite.h).
int roleRank(ShapeType type)
{
    switch (type)
    {
    case ShapeType::Compound:
        return 4;
    case ShapeType::Plane:
        return 5;
    default:
        return static_cast<int>(type); // Sphere .. Hull: 0 .. 3; Mesh 6, HeightField 7
    }
}

bool isIsotropic(const Mat3& inertia)
{
    const float d = inertia.c0.x;
    const float tolerance = 1e-6f * std::fabs(d);
    return std::fabs(inertia.c1.y - d) <= tolerance && std::fabs(inertia.c2.z - d) <= tolerance &&
           inertia.c0.y == 0.0f && inertia.c0.z == 0.0f && inertia.c1.x == 0.0f && inertia.c1.z == 0.0f &&
           inertia.c2.x == 0.0f && inertia.c2.y == 0.0f;
}

/// The world plane (unit normal n, offset d: dot(n, x) <= d is solid) of a plane body.
void worldPlane(const Shape& shape, const Transform& xf, Vec3& normal, float& offset)
{
    normal = rotate(xf.q, shape.plane.normal);
    offset = shape.plane.offset + dot(normal, xf.p);
}

bool boxTouchesPlane(const Aabb& box, const Vec3& normal, float offset)
{
    const Vec3 c = box.center();
    const Vec3 e = box.extents();
    return dot(normal, c) - dot(absPerElem(normal), e) <= offset;
}

} // namespace

Aabb tightBoxOf(const Shape& s, const Transform& xf, std::span<const ConvexHull> hulls)
{
    switch (s.type)
    {
    case ShapeType::Sphere:
    {
        const Vec3 r{s.sphere.radius, s.sphere.radius, s.sphere.radius};
        return {xf.p - r, xf.p + r};
    }
    case ShapeType::Capsule:
    {
        const Vec3 axis = rotate(xf.q, Vec3{0.0f, s.capsule.halfHeight, 0.0f});
        const Vec3 r{s.capsule.radius, s.capsule.radius, s.capsule.radius};
        const Vec3 e = absPerElem(axis) + r;
        return {xf.p - e, xf.p + e};
    }
    case ShapeType::Box:
    {
        const Mat3 m = toMat3(xf.q);
        const Vec3 h = s.box.halfExtents;
        const Vec3 e = absPerElem(m.c0) * h.x + absPerElem(m.c1) * h.y + absPerElem(m.c2) * h.z;
        return {xf.p - e, xf.p + e};
    }
    case ShapeType::Hull:
    {
        const ConvexHull& hull = hulls[s.hullIndex];
        Aabb box{transformPoint(xf, hull.vertices[0]), transformPoint(xf, hull.vertices[0])};
        for (const Vec3& v : hull.vertices)
        {
            const Vec3 w = transformPoint(xf, v);
            box.min = minPerElem(box.min, w);
            box.max = maxPerElem(box.max, w);
        }
        return box;
    }
    case ShapeType::Plane:
    case ShapeType::Compound:
    case ShapeType::Mesh:
    case ShapeType::HeightField:
        break;
    }
    return {};
}

World::World(const WorldConfig& config)
    : m_config(config), m_fatBoxPolicy{config.broadphaseMargin,
                                       kFatBoxShrinkSlackInMargins * config.broadphaseMargin},
      m_broadphase(
          [&]
          {
              BroadphaseConfig bp;
              bp.initialProxyCapacity =
                  static_cast<std::int32_t>(std::min<std::uint32_t>(config.maxBodies, 1024u));
              return bp;
          }()),
      m_staticTree(
          [&]
          {
              BroadphaseConfig bp;
              bp.initialProxyCapacity =
                  static_cast<std::int32_t>(std::min<std::uint32_t>(config.maxBodies, 64u));
              return bp;
          }())
{
    m_config.substeps = std::clamp(m_config.substeps, 1, 64);
    m_config.relaxIterations = std::clamp(m_config.relaxIterations, 1, 16);
    m_config.limitIterations = std::clamp(m_config.limitIterations, 1, 8);
    m_config.maxSubsteps = std::clamp(m_config.maxSubsteps, m_config.substeps, 64);
    if (!(m_config.substepLoadRatio >= 1.0f))
    {
        m_config.substepLoadRatio = 1.0f; // NaN too
    }
    if (!(m_config.substepMassRatio >= 1.0f))
    {
        m_config.substepMassRatio = 1.0f;
    }
    while (m_maxSubstepLevel + 1 < kMaxSubstepLevels &&
           (m_config.substeps << (m_maxSubstepLevel + 1)) <= m_config.maxSubsteps)
    {
        ++m_maxSubstepLevel;
    }
    m_layerMasks.fill(0xFFFFFFFFu);
    m_config.threads = std::clamp(m_config.threads, 1, kMaxTaskThreads);
    if (m_config.threads > 1)
    {
        m_tasks = std::make_unique<TaskPool>(m_config.threads);
        m_broadphase.reservePairBuffers(m_tasks->threadCount(), m_config.maxContacts);
        // The staged solver's most stages: at the most substeps, per substep two integrations, the contacts'
        // warm-start, solve and relax passes (each a stage per colour and an overflow stage) and the
        // joints' (warm start, solve, the limited joints' extra solves, relax: a stage per joint colour);
        // restitution.
        const std::size_t passStages = kGraphColorCount + 1;
        const std::size_t relaxPasses = static_cast<std::size_t>(m_config.relaxIterations);
        const std::size_t jointPasses = 1 + static_cast<std::size_t>(m_config.limitIterations) + relaxPasses;
        const std::size_t stages =
            static_cast<std::size_t>(m_config.substeps << m_maxSubstepLevel) *
                (2 + passStages * (2 + relaxPasses) + jointStageColors() * jointPasses) +
            passStages;
        m_solverStages.reserve(stages);
        m_solverStageBlocks.reserve(stages);
        m_tasks->reserveStages(stages);
    }
    const std::size_t bodies = m_config.maxBodies;
    const std::size_t contacts = m_config.maxContacts;
    m_hulls.reserve(m_config.maxHulls);
    m_compounds.reserve(m_config.maxCompounds);
    m_meshes.reserve(m_config.maxMeshes);
    m_meshPointers.reserve(m_config.maxMeshes);
    m_heightFields.reserve(m_config.maxHeightFields);
    m_heightFieldPointers.reserve(m_config.maxHeightFields);
    m_pieceScratch.resize(static_cast<std::size_t>(m_config.threads));
    for (std::vector<TriangleContactManifold>& scratch : m_pieceScratch)
    {
        scratch.reserve(64);
    }
    m_bodies.reserve(bodies);
    m_sims.reserve(bodies);
    m_materials.reserve(bodies);
    m_shapes.reserve(bodies);
    m_fatBoxes.reserve(bodies);
    m_tightBoxes.reserve(bodies);
    m_freeSlots.reserve(bodies);
    m_planes.reserve(bodies);
    m_pairScratch.reserve(contacts);
    m_newKeys.reserve(2 * contacts);
    m_movedScratch.reserve(bodies);
    m_threadKeys.resize(static_cast<std::size_t>(m_config.threads));
    m_threadKeyScratch.resize(static_cast<std::size_t>(m_config.threads));
    for (std::size_t t = 0; t < m_threadKeys.size(); ++t)
    {
        m_threadKeys[t].reserve(std::min<std::size_t>(contacts, 65536));
        m_threadKeyScratch[t].reserve(std::min<std::size_t>(contacts, 65536));
    }
    m_newKeyIsContact.reserve(2 * contacts);
    m_addedKeys.reserve(contacts);
    m_keyScratch.reserve(2 * contacts);
    m_contactKeys.reserve(contacts);
    m_contactKeysMerge.reserve(contacts);
    m_contacts.reserve(contacts);
    m_poolLive.reserve(contacts);
    m_poolSource.reserve(contacts);
    m_freeContacts.reserve(contacts);
    m_contactUpdated.reserve(contacts);
    m_fatBoxStale.reserve(bodies + 1);
    m_reach.reserve(bodies);
    m_wantedBoxes.reserve(bodies + 1);
    m_collideWake.reserve(contacts);
    m_touchingKeys.reserve(contacts);
    m_removedKeys.resize(static_cast<std::size_t>(m_config.threads));
    for (std::vector<std::uint32_t>& keys : m_removedKeys)
    {
        keys.reserve(contacts);
    }
    m_removedKeyOrder.reserve(contacts);
    m_solverIndex.reserve(bodies);
    m_solverSlots.reserve(bodies + 1);
    m_solverBodies.reserve(bodies + 1);
    m_solverMasses.reserve(bodies + 1);
    m_solverMotions.reserve(bodies + 1);
    m_constraintSetups.reserve(contacts);
    m_constraintContacts.reserve(contacts);
    m_constraintImpulses.reserve(contacts);
    m_graph.reserve(bodies + 1, contacts);
    m_islands.reserve(static_cast<std::uint32_t>(bodies));
    m_substepLevel.reserve(bodies);
    m_islandSupport.reserve(bodies);
    m_islandBoxes.reserve(bodies);
    m_kinematicStart.reserve(bodies);
    m_islandSleep.reserve(bodies);
    m_islandTail.reserve(bodies);
    if (m_config.enableContactEvents)
    {
        m_eventCapacity = m_config.maxContactEvents > 0 ? m_config.maxContactEvents : m_config.maxContacts;
        m_touchChange.reserve(contacts);
        m_eventKeys.resize(static_cast<std::size_t>(m_config.threads));
        for (std::vector<std::uint32_t>& keys : m_eventKeys)
        {
            keys.reserve(contacts);
        }
        m_eventKeyOrder.reserve(contacts);
        m_hits.reserve(contacts);
        m_hitOrder.reserve(contacts);
        m_beginEvents.reserve(m_eventCapacity);
        m_endEvents.reserve(m_eventCapacity);
        m_hitEvents.reserve(m_eventCapacity);
        m_pendingEndEvents.reserve(m_eventCapacity);
    }
}

// ---- Hulls and bodies
// --------------------------------------------------------------------------------------

AddHullResult World::addHull(const ConvexHull& hull)
{
    if (m_hulls.size() >= m_config.maxHulls)
    {
        return {0, WorldStatus::HullCapacityReached};
    }
    Shape probe;
    probe.type = ShapeType::Hull;
    probe.hullIndex = 0;
    const std::span<const ConvexHull> one(&hull, 1);
    if (!validateShape(probe, one).ok() || !(computeMassProperties(probe, 1.0f, one).mass > 0.0f))
    {
        return {0, WorldStatus::InvalidHull};
    }
    m_hulls.push_back(hull);
    return {static_cast<std::uint32_t>(m_hulls.size() - 1), WorldStatus::Ok};
}

AddShapeResult World::addCompound(const CompoundShape& compound)
{
    if (m_compounds.size() >= m_config.maxCompounds)
    {
        return {0, WorldStatus::CatalogueFull};
    }
    if (!validateCompound(compound, m_hulls).ok() ||
        !(computeMassProperties(compound, 1.0f, m_hulls).mass > 0.0f))
    {
        return {0, WorldStatus::InvalidShape};
    }
    m_compounds.push_back(compound);
    for (CompoundChild& child : m_compounds.back().children)
    {
        child.transform.q = normalize(child.transform.q);
    }
    m_geometryFingerprint = fingerprintAfter(m_geometryFingerprint, m_compounds.back());
    return {static_cast<std::uint32_t>(m_compounds.size() - 1), WorldStatus::Ok};
}

AddShapeResult World::addMesh(std::shared_ptr<const TriangleMesh> mesh)
{
    if (m_meshes.size() >= m_config.maxMeshes)
    {
        return {0, WorldStatus::CatalogueFull};
    }
    if (mesh == nullptr || mesh->triangleCount() == 0)
    {
        return {0, WorldStatus::InvalidShape};
    }
    m_geometryFingerprint = fingerprintAfter(m_geometryFingerprint, *mesh);
    m_meshPointers.push_back(mesh.get());
    m_meshes.push_back(std::move(mesh));
    return {static_cast<std::uint32_t>(m_meshes.size() - 1), WorldStatus::Ok};
}

AddShapeResult World::addHeightField(std::shared_ptr<const HeightField> heightField)
{
    if (m_heightFields.size() >= m_config.maxHeightFields)
    {
        return {0, WorldStatus::CatalogueFull};
    }
    if (heightField == nullptr || heightField->empty())
    {
        return {0, WorldStatus::InvalidShape};
    }
    m_geometryFingerprint = fingerprintAfter(m_geometryFingerprint, *heightField);
    m_heightFieldPointers.push_back(heightField.get());
    m_heightFields.push_back(std::move(heightField));
    return {static_cast<std::uint32_t>(m_heightFields.size() - 1), WorldStatus::Ok};
}

bool World::shapeFits(const Shape& shape, BodyType type) const
{
    switch (shape.type)
    {
    case ShapeType::Plane:
        return type == BodyType::Static && validateShape(shape, m_hulls).ok();
    case ShapeType::Compound:
        return shape.catalogueIndex < m_compounds.size();
    case ShapeType::Mesh:
        return type != BodyType::Dynamic && shape.catalogueIndex < m_meshes.size();
    case ShapeType::HeightField:
        return type != BodyType::Dynamic && shape.catalogueIndex < m_heightFields.size();
    default:
        return validateShape(shape, m_hulls).ok();
    }
}

CreateBodyResult World::createBody(const BodyDesc& desc)
{
    if (m_bodyCount >= m_config.maxBodies)
    {
        return {{}, WorldStatus::BodyCapacityReached};
    }
    const float qLength = std::sqrt(dot(desc.transform.q, desc.transform.q));
    const bool finite = isFinite(desc.transform.p) && isFinite(desc.transform.q) &&
                        isFinite(desc.linearVelocity) && isFinite(desc.angularVelocity) &&
                        std::isfinite(desc.density) && std::isfinite(desc.friction) &&
                        std::isfinite(desc.restitution) && std::isfinite(desc.linearDamping) &&
                        std::isfinite(desc.angularDamping) && std::isfinite(desc.gravityScale);
    const bool typeOk =
        desc.type == BodyType::Static || desc.type == BodyType::Kinematic || desc.type == BodyType::Dynamic;
    const bool densityOk = desc.type != BodyType::Dynamic || desc.density > 0.0f;
    if (!finite || !typeOk || !densityOk || !(qLength > 1e-6f) || !withinWorldBound(desc.transform.p) ||
        desc.friction < 0.0f || desc.restitution < 0.0f || desc.restitution > 1.0f ||
        desc.linearDamping < 0.0f || desc.angularDamping < 0.0f || (desc.allowedDofs & ~kDofAll) != 0 ||
        desc.layer >= kMaxCollisionLayers || !shapeFits(desc.shape, desc.type))
    {
        return {{}, WorldStatus::InvalidBodyDesc};
    }

    BodySim sim;
    sim.transform = {desc.transform.p, normalize(desc.transform.q)};
    if (desc.type == BodyType::Dynamic)
    {
        const MassProperties mp =
            desc.shape.type == ShapeType::Compound
                ? computeMassProperties(m_compounds[desc.shape.catalogueIndex], desc.density, m_hulls)
                : computeMassProperties(desc.shape, desc.density, m_hulls);
        const Mat3 inverseInertia = inverse(mp.inertia);
        if (!(mp.mass > 0.0f) || !std::isfinite(1.0f / mp.mass) || !isFiniteMat(inverseInertia) ||
            determinant(mp.inertia) <= 0.0f)
        {
            return {{}, WorldStatus::InvalidBodyDesc};
        }
        sim.inverseMass = 1.0f / mp.mass;
        sim.localCenter = mp.centerOfMass;
        sim.inertiaLocal = mp.inertia;
        sim.inverseInertiaLocal = inverseInertia;
        sim.isotropicInertia = isIsotropic(mp.inertia);
    }
    else if (desc.shape.type == ShapeType::Hull)
    {
        sim.localCenter = m_hulls[desc.shape.hullIndex].centroid;
    }
    else if (desc.shape.type == ShapeType::Compound)
    {
        sim.localCenter =
            computeMassProperties(m_compounds[desc.shape.catalogueIndex], 1.0f, m_hulls).centerOfMass;
    }
    sim.center = transformPoint(sim.transform, sim.localCenter);
    sim.extent = shapeExtent(desc.shape, sim.localCenter, catalogue());
    if (desc.type != BodyType::Static)
    {
        sim.linearVelocity = mulPerElem(desc.linearVelocity, linearMaskOf(desc.allowedDofs));
        sim.angularVelocity = mulPerElem(desc.angularVelocity, angularMaskOf(desc.allowedDofs));
    }

    std::uint32_t index;
    if (!m_freeSlots.empty())
    {
        index = m_freeSlots.back();
        m_freeSlots.pop_back();
    }
    else
    {
        index = static_cast<std::uint32_t>(m_bodies.size());
        m_bodies.emplace_back();
        m_sims.emplace_back();
        m_materials.emplace_back();
        m_shapes.emplace_back();
        m_fatBoxes.emplace_back();
        m_tightBoxes.emplace_back();
    }

    Body& body = m_bodies[index];
    body.generation = body.generation + 1 == 0 ? 1 : body.generation + 1;
    body.alive = true;
    body.type = desc.type;
    body.sleeping = false;
    body.allowSleep = desc.allowSleep;
    body.allowedDofs = desc.allowedDofs;
    body.layer = desc.layer;
    body.group = desc.group;
    body.sensor = desc.isSensor;
    body.islandNext = kNoIsland;
    body.userData = desc.userData;
    body.proxy = kNullProxy;
    m_sims[index] = sim;
    m_materials[index] = {desc.friction, desc.restitution, desc.linearDamping, desc.angularDamping,
                          desc.gravityScale};
    m_shapes[index] = desc.shape;

    if (desc.shape.type == ShapeType::Plane)
    {
        m_planes.insert(std::upper_bound(m_planes.begin(), m_planes.end(), index), index);
        body.pendingPlaneTest = false;
        // Every existing body must be tested against the new plane.
        for (std::uint32_t i = 0; i < m_bodies.size(); ++i)
        {
            if (m_bodies[i].alive && m_bodies[i].proxy != kNullProxy)
            {
                m_bodies[i].pendingPlaneTest = true;
            }
        }
    }
    else
    {
        m_tightBoxes[index] = computeTightBox(index);
        m_fatBoxes[index] = m_fatBoxPolicy.fatBox(m_tightBoxes[index], predictedDisplacement(index, 0.0f));
        body.proxy = treeOf(index).createProxy(m_fatBoxes[index], index, body.group);
        body.pendingPlaneTest = true;
        body.proxyMoved = true;
    }
    if (desc.isSensor)
    {
        reserveSensorBuffers();
        ++m_sensorCount;
    }
    ++m_bodyCount;
    return {{index, body.generation}, WorldStatus::Ok};
}

WorldStatus World::destroyBody(BodyId id)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    const std::uint32_t index = id.index;
    wakeIsland(index);
    // Remove its joints (reported with the next step's events, in joint slot order), waking what they held.
    if (m_bodies[index].jointList != kNoJoint)
    {
        std::vector<std::uint32_t> joints;
        for (std::uint32_t j = m_bodies[index].jointList; j != kNoJoint;)
        {
            joints.push_back(j);
            const Joint& joint = m_joints[j];
            j = joint.desc.bodyA.index == index ? joint.next[0] : joint.next[1];
        }
        std::sort(joints.begin(), joints.end());
        for (const std::uint32_t j : joints)
        {
            const Joint& joint = m_joints[j];
            JointEvent event;
            event.joint = {j, joint.generation};
            event.bodyA = joint.desc.bodyA;
            event.bodyB = joint.desc.bodyB;
            event.kind = JointEventKind::BodyDestroyed;
            event.userData = joint.desc.userData;
            m_pendingJointEvents.push_back(event);
            removeJoint(j);
        }
    }
    // Remove its contacts, waking what it touched.
    std::size_t out = 0;
    for (std::size_t k = 0; k < m_contactKeys.size(); ++k)
    {
        const ContactKey entry = m_contactKeys[k];
        Contact& c = m_contacts[entry.contact];
        if (c.bodyA == index || c.bodyB == index)
        {
            if (c.manifold.pointCount > 0)
            {
                wakeIsland(c.bodyA == index ? c.bodyB : c.bodyA);
                reportEnd(c, m_pendingEndEvents);
            }
            reportSensorEnd(c, m_pendingSensorEndEvents);
            m_freeContacts.push_back(entry.contact);
            continue;
        }
        m_contactKeys[out++] = entry;
    }
    m_contactKeys.resize(out);

    Body& body = m_bodies[index];
    if (body.proxy != kNullProxy)
    {
        treeOf(index).destroyProxy(body.proxy);
    }
    if (m_shapes[index].type == ShapeType::Plane)
    {
        m_planes.erase(std::find(m_planes.begin(), m_planes.end(), index));
    }
    if (body.sensor)
    {
        --m_sensorCount;
    }
    body.alive = false;
    body.sensor = false;
    body.proxy = kNullProxy;
    body.sleeping = false;
    body.pendingPlaneTest = false;
    body.proxyMoved = false;
    m_freeSlots.push_back(index);
    --m_bodyCount;
    return WorldStatus::Ok;
}

bool World::isValid(BodyId id) const
{
    return !id.isNull() && id.index < m_bodies.size() && m_bodies[id.index].alive &&
           m_bodies[id.index].generation == id.generation;
}

void World::fillState(std::uint32_t index, BodyState& out) const
{
    const Body& body = m_bodies[index];
    const BodySim& sim = m_sims[index];
    out.id = {index, body.generation};
    out.type = body.type;
    out.shape = m_shapes[index];
    out.transform = sim.transform;
    out.centerOfMass = sim.center;
    out.linearVelocity = sim.linearVelocity;
    out.angularVelocity = sim.angularVelocity;
    out.mass = sim.inverseMass > 0.0f ? 1.0f / sim.inverseMass : 0.0f;
    out.sleeping = body.sleeping;
    out.layer = body.layer;
    out.group = body.group;
    out.userData = body.userData;
    out.isSensor = body.sensor;
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

void World::wakeIsland(std::uint32_t index)
{
    if (!m_bodies[index].sleeping)
    {
        return;
    }
    // Sleeping islands are circular lists through islandNext.
    std::uint32_t i = index;
    do
    {
        Body& body = m_bodies[i];
        const std::uint32_t next = body.islandNext;
        body.sleeping = false;
        body.islandNext = kNoIsland;
        m_sims[i].sleepTime = 0.0f;
        i = next;
    } while (i != index && i != kNoIsland);
}

WorldStatus World::wakeBody(BodyId id)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    wakeIsland(id.index);
    m_sims[id.index].sleepTime = 0.0f;
    return WorldStatus::Ok;
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
    const Body& body = m_bodies[id.index];
    if (body.type == BodyType::Static)
    {
        return WorldStatus::WrongBodyType;
    }
    wakeIsland(id.index);
    BodySim& sim = m_sims[id.index];
    sim.linearVelocity = mulPerElem(linear, linearMaskOf(body.allowedDofs));
    sim.angularVelocity = mulPerElem(angular, angularMaskOf(body.allowedDofs));
    sim.sleepTime = 0.0f;
    return WorldStatus::Ok;
}

WorldStatus World::setTransform(BodyId id, const Transform& transform)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    const float qLength = std::sqrt(dot(transform.q, transform.q));
    if (!isFinite(transform.p) || !isFinite(transform.q) || !(qLength > 1e-6f) ||
        !withinWorldBound(transform.p))
    {
        return WorldStatus::InvalidBodyDesc;
    }
    const std::uint32_t index = id.index;
    if (m_shapes[index].type == ShapeType::Plane)
    {
        return WorldStatus::WrongBodyType;
    }
    wakeIsland(index);
    BodySim& sim = m_sims[index];
    sim.transform = {transform.p, normalize(transform.q)};
    sim.center = transformPoint(sim.transform, sim.localCenter);
    sim.sleepTime = 0.0f;
    m_tightBoxes[index] = computeTightBox(index);
    Aabb wanted;
    if (fatBoxStale(index, 0.0f, 0.0f, true, wanted))
    {
        storeFatBox(index, wanted);
    }
    return WorldStatus::Ok;
}

WorldStatus World::applyForce(BodyId id, const Vec3& force, const Vec3& pointWorld)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    if (!isFinite(force) || !isFinite(pointWorld))
    {
        return WorldStatus::InvalidBodyDesc;
    }
    if (m_bodies[id.index].type != BodyType::Dynamic)
    {
        return WorldStatus::WrongBodyType;
    }
    wakeIsland(id.index);
    BodySim& sim = m_sims[id.index];
    sim.force += force;
    sim.torque += cross(pointWorld - sim.center, force);
    sim.sleepTime = 0.0f;
    return WorldStatus::Ok;
}

WorldStatus World::applyCentralForce(BodyId id, const Vec3& force)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    return applyForce(id, force, m_sims[id.index].center);
}

WorldStatus World::applyTorque(BodyId id, const Vec3& torque)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    if (!isFinite(torque))
    {
        return WorldStatus::InvalidBodyDesc;
    }
    if (m_bodies[id.index].type != BodyType::Dynamic)
    {
        return WorldStatus::WrongBodyType;
    }
    wakeIsland(id.index);
    m_sims[id.index].torque += torque;
    m_sims[id.index].sleepTime = 0.0f;
    return WorldStatus::Ok;
}

WorldStatus World::applyImpulse(BodyId id, const Vec3& impulse, const Vec3& pointWorld)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    if (!isFinite(impulse) || !isFinite(pointWorld))
    {
        return WorldStatus::InvalidBodyDesc;
    }
    const Body& body = m_bodies[id.index];
    if (body.type != BodyType::Dynamic)
    {
        return WorldStatus::WrongBodyType;
    }
    wakeIsland(id.index);
    BodySim& sim = m_sims[id.index];
    const Vec3 angularMask = angularMaskOf(body.allowedDofs);
    sim.linearVelocity += mulPerElem(linearMaskOf(body.allowedDofs), impulse * sim.inverseMass);
    sim.angularVelocity += inverseInertiaWorld(id.index) * cross(pointWorld - sim.center, impulse);
    sim.angularVelocity = mulPerElem(sim.angularVelocity, angularMask);
    sim.sleepTime = 0.0f;
    return WorldStatus::Ok;
}

WorldStatus World::applyAngularImpulse(BodyId id, const Vec3& angularImpulse)
{
    if (!isValid(id))
    {
        return WorldStatus::StaleBodyId;
    }
    if (!isFinite(angularImpulse))
    {
        return WorldStatus::InvalidBodyDesc;
    }
    if (m_bodies[id.index].type != BodyType::Dynamic)
    {
        return WorldStatus::WrongBodyType;
    }
    wakeIsland(id.index);
    BodySim& sim = m_sims[id.index];
    sim.angularVelocity += inverseInertiaWorld(id.index) * angularImpulse;
    sim.sleepTime = 0.0f;
    return WorldStatus::Ok;
}

Mat3 World::inverseInertiaWorld(std::uint32_t index) const
{
    const BodySim& sim = m_sims[index];
    if (m_bodies[index].type != BodyType::Dynamic)
    {
        return Mat3::zero();
    }
    const Mat3 r = toMat3(sim.transform.q);
    const std::uint8_t dofs = m_bodies[index].allowedDofs;
    if ((dofs & (kDofRotationX | kDofRotationY | kDofRotationZ)) ==
        (kDofRotationX | kDofRotationY | kDofRotationZ))
    {
        return mirroredUpper(r * sim.inverseInertiaLocal * transpose(r));
    }
    return mirroredUpper(restrictedInverse(r * sim.inertiaLocal * transpose(r), angularMaskOf(dofs)));
}

// ---- Broadphase
// ---------------------------------------------------------------------------------------------

std::uint64_t World::pairKey(std::uint32_t a, std::uint32_t b)
{
    return a < b ? (static_cast<std::uint64_t>(a) << 32) | b : (static_cast<std::uint64_t>(b) << 32) | a;
}

Aabb World::computeTightBox(std::uint32_t index) const
{
    return shapeBoundsAt(m_shapes[index], m_sims[index].transform, catalogue());
}

Vec3 World::predictedDisplacement(std::uint32_t index, float dt) const
{
    if (m_bodies[index].type == BodyType::Static)
    {
        return {};
    }
    return clampedLength(m_sims[index].linearVelocity, m_config.maxLinearSpeed) * dt;
}

Aabb World::sweptBox(std::uint32_t index, const Aabb& tight, float dt, float beyond) const
{
    // What the body may cover in the coming step: its tight box moved along v dt and grown on every side
    // by the speculative distance and by what turning and accelerating add (reachBeyondVelocity).
    if (m_bodies[index].type == BodyType::Static)
    {
        return tight;
    }
    const float pad = std::min(m_config.speculativeDistance + beyond, m_config.maxSpeculativeDistance);
    return FatBoxPolicy::grownAndStretched(tight, pad, predictedDisplacement(index, dt));
}

bool World::fatBoxStale(std::uint32_t index, float dt, float beyond, bool force, Aabb& wanted) const
{
    if (m_bodies[index].proxy == kNullProxy)
    {
        return false;
    }
    const Aabb needed = sweptBox(index, m_tightBoxes[index], dt, beyond);
    // The stored box carries the margin beyond the swept region, so that small changes of motion keep it.
    wanted = m_fatBoxPolicy.fatBox(needed, {});
    return force || !m_fatBoxPolicy.keeps(m_fatBoxes[index], needed, wanted);
}

void World::storeFatBox(std::uint32_t index, const Aabb& wanted, bool deferred)
{
    Body& body = m_bodies[index];
    m_fatBoxes[index] = wanted;
    BroadphaseTree& tree = treeOf(index);
    if (deferred ? tree.deferMove(body.proxy, wanted) : tree.moveProxy(body.proxy, wanted))
    {
        body.proxyMoved = true;
    }
    body.pendingPlaneTest = true;
}

bool World::pairEligible(std::uint32_t a, std::uint32_t b) const
{
    if (a == b || !m_bodies[a].alive || !m_bodies[b].alive)
    {
        return false;
    }
    if (m_bodies[a].sensor || m_bodies[b].sensor)
    {
        return sensorPairEligible(a, b);
    }
    if (m_bodies[a].type != BodyType::Dynamic && m_bodies[b].type != BodyType::Dynamic)
    {
        return false;
    }
    return canCollide(m_shapes[a].type, m_shapes[b].type) && filtersAllow(a, b);
}

bool World::fatBoxesOverlap(std::uint32_t a, std::uint32_t b) const
{
    const bool planeA = m_shapes[a].type == ShapeType::Plane;
    const bool planeB = m_shapes[b].type == ShapeType::Plane;
    if (planeA || planeB)
    {
        const std::uint32_t plane = planeA ? a : b;
        const std::uint32_t other = planeA ? b : a;
        Vec3 n;
        float d;
        worldPlane(m_shapes[plane], m_sims[plane].transform, n, d);
        return boxTouchesPlane(m_fatBoxes[other], n, d);
    }
    return m_fatBoxes[a].overlaps(m_fatBoxes[b]);
}

namespace
{
/// Moved proxies per chunk of the parallel static-tree queries.
constexpr std::uint32_t kStaticQueryGrain = 64;
/// Tree pairs, then bodies, per chunk of the parallel candidate filter.
constexpr std::uint32_t kCandidateGrain = 256;
/// Key-list entries per chunk of the parallel merge of new contacts.
constexpr std::uint32_t kMergeGrain = 4096;

/// Sorts pair keys ((lower slot << 32) | higher slot, both below `slotCount`) ascending: an LSD radix sort
/// on the bytes that slots use (4 passes below 65536 bodies), through `scratch`; std::sort for short lists.
void sortPairKeys(std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>& scratch,
                  std::uint32_t slotCount)
{
    constexpr std::size_t kRadixMinimum = 256;
    if (keys.size() < kRadixMinimum)
    {
        std::sort(keys.begin(), keys.end());
        return;
    }
    int slotBytes = 1;
    while (slotBytes < 4 && (std::uint64_t{slotCount} >> (8 * slotBytes)) != 0)
    {
        ++slotBytes;
    }
    scratch.resize(keys.size());
    std::uint64_t* from = keys.data();
    std::uint64_t* to = scratch.data();
    const std::size_t count = keys.size();
    for (const int half : {0, 32})
    {
        for (int byte = 0; byte < slotBytes; ++byte)
        {
            const int shift = half + 8 * byte;
            std::array<std::uint32_t, 257> start{};
            for (std::size_t i = 0; i < count; ++i)
            {
                ++start[((from[i] >> shift) & 0xFFu) + 1];
            }
            for (std::size_t b = 1; b < start.size(); ++b)
            {
                start[b] += start[b - 1];
            }
            for (std::size_t i = 0; i < count; ++i)
            {
                to[start[(from[i] >> shift) & 0xFFu]++] = from[i];
            }
            std::swap(from, to);
        }
    }
    if (from != keys.data())
    {
        std::copy(from, from + count, keys.data());
    }
}
} // namespace

bool World::collectPairCandidates()
{
    // Every find goes in as a slot key, in whatever order; the keys are sorted by body slots below, so the
    // order of finds (and of threads) does not matter. Moving proxies that moved query the static tree
    // (before findNewPairs forgets them), static proxies that moved (new, teleported, or touched by a filter
    // change) query the moving tree, then the moving tree finds its own pairs.
    m_newKeys.clear();
    if (!m_staticTree.movedProxies().empty())
    {
        // Static bodies came, moved or changed filters since the last step: they seldom do, and a tree
        // built over all of them at once serves the pair queries and the world's queries better than one
        // grown by insertions (at 1000 scattered static bodies a ray visited 62 nodes of the grown tree).
        m_staticTree.rebuild();
    }
    const std::span<const std::int32_t> moved = m_broadphase.movedProxies();
    m_movedScratch.assign(moved.begin(), moved.end());
    for (std::vector<std::uint64_t>& keys : m_threadKeys)
    {
        keys.clear();
    }
    if (m_staticTree.proxyCount() > 0)
    {
        forRange(static_cast<std::uint32_t>(m_movedScratch.size()), kStaticQueryGrain,
                 [&](std::uint32_t begin, std::uint32_t end, int thread)
                 {
                     std::vector<std::uint64_t>& keys = m_threadKeys[static_cast<std::size_t>(thread)];
                     for (std::uint32_t k = begin; k < end; ++k)
                     {
                         const std::int32_t proxy = m_movedScratch[k];
                         if (!m_broadphase.isProxy(proxy))
                         {
                             continue; // destroyed after it moved
                         }
                         const auto a = static_cast<std::uint32_t>(m_broadphase.userData(proxy));
                         m_staticTree.queryAabb(
                             m_fatBoxes[a],
                             [&](std::int32_t other)
                             {
                                 const auto b = static_cast<std::uint32_t>(m_staticTree.userData(other));
                                 if (pairEligible(a, b))
                                 {
                                     keys.push_back(pairKey(a, b));
                                 }
                                 return true;
                             },
                             m_bodies[a].group);
                     }
                 });
    }
    for (const std::int32_t proxy : m_staticTree.movedProxies())
    {
        if (!m_staticTree.isProxy(proxy))
        {
            continue;
        }
        const auto a = static_cast<std::uint32_t>(m_staticTree.userData(proxy));
        m_broadphase.queryAabb(
            m_fatBoxes[a],
            [&](std::int32_t other)
            {
                const auto b = static_cast<std::uint32_t>(m_broadphase.userData(other));
                if (pairEligible(a, b))
                {
                    m_newKeys.push_back(pairKey(a, b));
                }
                return true;
            },
            m_bodies[a].group);
    }
    m_staticTree.forgetMoved();
    m_broadphase.findNewPairs(m_pairScratch, m_tasks.get(), false);
    // On any thread, into the thread's list: the tree's pairs that pass the filters, then, per body, the
    // planes a body's new box may touch (and its flags cleared).
    const auto pairCount = static_cast<std::uint32_t>(m_pairScratch.size());
    const auto slotCount = static_cast<std::uint32_t>(m_bodies.size());
    forRange(pairCount + slotCount, kCandidateGrain,
             [&](std::uint32_t begin, std::uint32_t end, int thread)
             {
                 std::vector<std::uint64_t>& keys = m_threadKeys[static_cast<std::size_t>(thread)];
                 const std::uint32_t pairEnd = std::min(end, pairCount);
                 for (std::uint32_t k = begin; k < pairEnd; ++k)
                 {
                     const BroadphasePair& pair = m_pairScratch[k];
                     const auto a = static_cast<std::uint32_t>(m_broadphase.userData(pair.proxyA));
                     const auto b = static_cast<std::uint32_t>(m_broadphase.userData(pair.proxyB));
                     if (pairEligible(a, b))
                     {
                         keys.push_back(pairKey(a, b));
                     }
                 }
                 const std::uint32_t bodyEnd = std::max(end, pairCount) - pairCount;
                 for (std::uint32_t i = std::max(begin, pairCount) - pairCount; i < bodyEnd; ++i)
                 {
                     Body& body = m_bodies[i];
                     body.proxyMoved = false;
                     if (!body.pendingPlaneTest)
                     {
                         continue;
                     }
                     body.pendingPlaneTest = false;
                     if (!body.alive)
                     {
                         continue;
                     }
                     for (const std::uint32_t plane : m_planes)
                     {
                         if (pairEligible(i, plane) && fatBoxesOverlap(i, plane))
                         {
                             keys.push_back(pairKey(i, plane));
                         }
                     }
                 }
             });
    // Each thread's list sorted on any thread, then merged into the few keys found here (static proxies
    // that moved), dropping repeats.
    sortPairKeys(m_newKeys, m_keyScratch, slotCount);
    forRange(static_cast<std::uint32_t>(m_threadKeys.size()), 1,
             [&](std::uint32_t begin, std::uint32_t end, int thread)
             {
                 for (std::uint32_t t = begin; t < end; ++t)
                 {
                     sortPairKeys(m_threadKeys[t], m_threadKeyScratch[static_cast<std::size_t>(thread)],
                                  slotCount);
                 }
             });
    for (const std::vector<std::uint64_t>& keys : m_threadKeys)
    {
        if (keys.empty())
        {
            continue;
        }
        m_keyScratch.resize(m_newKeys.size() + keys.size());
        std::merge(m_newKeys.begin(), m_newKeys.end(), keys.begin(), keys.end(), m_keyScratch.begin());
        m_newKeys.swap(m_keyScratch);
    }
    m_newKeys.erase(std::unique(m_newKeys.begin(), m_newKeys.end()), m_newKeys.end());
    // More candidates than contacts could ever hold (the lists grew past their reserve for this step): the
    // same lowest keys are kept on any thread count.
    const std::size_t limit = 2 * static_cast<std::size_t>(m_config.maxContacts);
    if (m_newKeys.size() > limit)
    {
        m_newKeys.resize(limit);
        return false;
    }
    return true;
}

bool World::mergeNewPairs(StepStatus& status)
{
    if (m_newKeys.empty())
    {
        return false; // a settled world: no copy of the key list
    }
    // Which candidates are contacts already: each chunk of them finds its place in the key list once, then
    // walks both lists (both ascending).
    const std::size_t oldCount = m_contactKeys.size();
    const auto newCount = static_cast<std::uint32_t>(m_newKeys.size());
    m_newKeyIsContact.resize(newCount);
    forRange(newCount, kMergeGrain,
             [&](std::uint32_t begin, std::uint32_t end, int)
             {
                 auto at = std::lower_bound(m_contactKeys.begin(), m_contactKeys.end(), m_newKeys[begin],
                                            [](const ContactKey& entry, std::uint64_t key)
                                            { return entry.key < key; });
                 for (std::uint32_t j = begin; j < end; ++j)
                 {
                     while (at != m_contactKeys.end() && at->key < m_newKeys[j])
                     {
                         ++at;
                     }
                     m_newKeyIsContact[j] = at != m_contactKeys.end() && at->key == m_newKeys[j] ? 1 : 0;
                 }
             });
    // The new pairs take pool slots in key order (the free list's order decides which: one thread).
    m_addedKeys.clear();
    for (std::uint32_t j = 0; j < newCount; ++j)
    {
        if (m_newKeyIsContact[j] != 0)
        {
            continue;
        }
        const std::uint64_t key = m_newKeys[j];
        std::uint32_t index;
        if (!m_freeContacts.empty())
        {
            index = m_freeContacts.back();
            m_freeContacts.pop_back();
        }
        else if (m_contacts.size() < m_config.maxContacts)
        {
            index = static_cast<std::uint32_t>(m_contacts.size());
            m_contacts.emplace_back();
        }
        else
        {
            status.set(StepFlag::ContactCapacityReached);
            ++m_stats.droppedPairs;
            continue;
        }
        auto lo = static_cast<std::uint32_t>(key >> 32);
        auto hi = static_cast<std::uint32_t>(key & 0xFFFFFFFFu);
        // Roles: the lower shape type is A, so the table's direct routines serve most pairs (see roleRank).
        if (roleRank(m_shapes[hi].type) < roleRank(m_shapes[lo].type))
        {
            std::swap(lo, hi);
        }
        Contact& c = m_contacts[index];
        c = Contact{};
        c.bodyA = lo;
        c.bodyB = hi;
        c.sensor = m_bodies[lo].sensor || m_bodies[hi].sensor;
        c.friction = std::sqrt(m_materials[lo].friction * m_materials[hi].friction);
        c.restitution = std::max(m_materials[lo].restitution, m_materials[hi].restitution);
        m_addedKeys.push_back({key, index, kKeyClear});
    }
    if (m_addedKeys.empty())
    {
        return false;
    }
    // Merged on any thread: each chunk of the key list goes out shifted by the added keys below its first,
    // with the added keys up to the next chunk's first.
    const auto byKey = [](const ContactKey& a, const ContactKey& b) { return a.key < b.key; };
    m_contactKeysMerge.resize(oldCount + m_addedKeys.size());
    if (oldCount == 0)
    {
        std::copy(m_addedKeys.begin(), m_addedKeys.end(), m_contactKeysMerge.begin());
    }
    forRange(static_cast<std::uint32_t>(oldCount), kMergeGrain,
             [&](std::uint32_t begin, std::uint32_t end, int)
             {
                 const auto addedBelow = [&](std::uint32_t k)
                 {
                     if (k == oldCount)
                     {
                         return m_addedKeys.end();
                     }
                     return std::lower_bound(m_addedKeys.begin(), m_addedKeys.end(), m_contactKeys[k], byKey);
                 };
                 const auto first = begin == 0 ? m_addedKeys.begin() : addedBelow(begin);
                 const auto last = addedBelow(end);
                 std::merge(m_contactKeys.begin() + begin, m_contactKeys.begin() + end, first, last,
                            m_contactKeysMerge.begin() + begin + (first - m_addedKeys.begin()), byKey);
             });
    m_contactKeys.swap(m_contactKeysMerge);
    return true;
}

void World::updatePairs(StepStatus& status)
{
    if (!collectPairCandidates())
    {
        status.set(StepFlag::ContactCapacityReached);
        ++m_stats.droppedPairs;
    }
    // The pool scatters as contacts come and go; checked when some came (those that went since are seen
    // then).
    if (mergeNewPairs(status))
    {
        orderContactPool();
    }
}

void World::orderContactPool()
{
    // Every pass over the contacts goes in key order, but a contact's pool slot is wherever the free list
    // had room when its pair appeared: after a pile's churn the passes hop around a pool of megabytes. When
    // more than a quarter of the key list jumps in the pool, the contacts are copied into key order (the
    // slots carry nothing else: results do not depend on them).
    const std::size_t count = m_contactKeys.size();
    std::size_t jumps = 0;
    for (std::size_t k = 1; k < count; ++k)
    {
        jumps += m_contactKeys[k].contact != m_contactKeys[k - 1].contact + 1 ? 1 : 0;
    }
    if (4 * jumps <= count)
    {
        return;
    }
    // In place, by cycles: position q takes the contact of slot source[q] (the free slots go after the live
    // ones, in slot order). Each cycle is walked with a hole, so each contact is copied once.
    const std::size_t poolSize = m_contacts.size();
    m_poolLive.assign(poolSize, 0); // 1: a live slot
    m_poolSource.resize(poolSize);
    for (std::size_t k = 0; k < count; ++k)
    {
        m_poolLive[m_contactKeys[k].contact] = 1;
        m_poolSource[k] = m_contactKeys[k].contact;
        m_contactKeys[k].contact = static_cast<std::uint32_t>(k);
    }
    std::size_t next = count;
    for (std::size_t p = 0; p < poolSize; ++p)
    {
        if (m_poolLive[p] == 0)
        {
            m_poolSource[next++] = static_cast<std::uint32_t>(p);
        }
    }
    for (std::size_t q = 0; q < poolSize; ++q)
    {
        if (m_poolSource[q] == q)
        {
            continue;
        }
        Contact carried = m_contacts[q];
        std::size_t hole = q;
        while (true)
        {
            const std::uint32_t from = m_poolSource[hole];
            m_poolSource[hole] = static_cast<std::uint32_t>(hole);
            if (from == q)
            {
                m_contacts[hole] = carried;
                break;
            }
            m_contacts[hole] = m_contacts[from];
            hole = from;
        }
    }
    m_contacts.resize(count); // keeps its capacity
    m_freeContacts.clear();
}

// ---- Narrowphase
// --------------------------------------------------------------------------------------------

float World::reachBeyondVelocity(std::uint32_t index, float dt) const
{
    // How far a surface point may move in dt seconds besides the centre's v dt: the sweep of the farthest
    // point turning at |w|, and what gravity and the applied force add within the step (|a| dt^2 bounds
    // it for any substep count). The broadphase box (sweptBox) and the narrowphase margin
    // (speculativeReach) both use it, so a contact the step may need is both paired and generated.
    const Body& body = m_bodies[index];
    if (body.type == BodyType::Static)
    {
        return 0.0f;
    }
    const BodySim& sim = m_sims[index];
    float reach = length(sim.angularVelocity) * sim.extent * dt;
    if (body.type == BodyType::Dynamic)
    {
        const Vec3 acceleration =
            m_config.gravity * m_materials[index].gravityScale + sim.force * sim.inverseMass;
        reach += length(acceleration) * dt * dt;
    }
    return reach;
}

bool World::reuseManifold(Contact& contact, const Transform& relative, float margin) const
{
    // As Jolt's body-pair cache, with bounds instead of fixed thresholds. Since the manifold was computed, no
    // point of B has moved in A's frame by more than drift = |dp| + angle * (B's reach about its shape
    // origin), nor any of A's in B's frame by more than the same with A's (dp and the angle taken between
    // the pose it was computed for and now). So while that drift stays within kManifoldReuseSlack (the
    // manifold's features then have slid by at most that much), and the margin wanted now plus the drift
    // stays within the margin it was computed with (a feature pair that was beyond that margin is still
    // beyond the margin now), it is kept: its points move with B and their separations are measured again.
    // The drift is measured from the computed pose, not summed step by step: bodies resting in a pile
    // jitter back and forth, and a summed path would exhaust the slack though the features stay put.
    if (contact.cacheMargin < 0.0f)
    {
        return false;
    }
    // Not for spheres and capsules: their contact point is not a point of the body but wherever the surface
    // faces the other shape, and a kept point turns with a rolling body. It then sits behind the true
    // contact, and the normal force there drives the roll (a damped ball rolled on at a steady speed).
    // Their narrowphase is a closed form anyway.
    const auto rounded = [](ShapeType type)
    { return type == ShapeType::Sphere || type == ShapeType::Capsule; };
    if (rounded(m_shapes[contact.bodyA].type) || rounded(m_shapes[contact.bodyB].type))
    {
        return false;
    }
    const Quat turn = conjugate(contact.madeRelative.q) * relative.q;
    const float halfSine = length(Vec3{turn.x, turn.y, turn.z}); // sin(angle / 2)
    constexpr float kMaxHalfSine = 0.1f;                         // about 11.5 degrees
    if (!(halfSine <= kMaxHalfSine))
    {
        return false;
    }
    // angle = 2 asin(halfSine) <= 2.01 halfSine below kMaxHalfSine. A plane, mesh or heightfield (always B
    // when in a pair) has no useful reach (unbounded, or the size of a level): then the drift is that of A's
    // points in B's frame, which bounds the same feature motion (and, for a mesh, which triangles are near).
    const ShapeType typeB = m_shapes[contact.bodyB].type;
    const bool planeB =
        typeB == ShapeType::Plane || typeB == ShapeType::Mesh || typeB == ShapeType::HeightField;
    const BodySim& moving = m_sims[planeB ? contact.bodyA : contact.bodyB];
    const float radius = moving.extent + length(moving.localCenter);
    const float shift = planeB ? length(inverse(relative).p - inverse(contact.madeRelative).p)
                               : length(relative.p - contact.madeRelative.p);
    const float drift = shift + 2.01f * halfSine * radius;
    if (!(drift <= kManifoldReuseSlack) || !(margin + drift <= contact.cacheMargin))
    {
        return false;
    }
    // B's points: from A's frame then to B's frame, then to A's frame now.
    ContactManifold& m = contact.manifold;
    for (int i = 0; i < m.pointCount; ++i)
    {
        ContactPoint& p = m.points[i];
        p.pointB = transformPoint(relative, inverseTransformPoint(contact.cacheRelative, p.pointB));
        p.separation = dot(p.pointB - p.pointA, m.normal);
    }
    contact.cacheRelative = relative;
    return true;
}

bool World::tightBoxesApart(std::uint32_t a, std::uint32_t b) const
{
    // Most pairs of a pile are fat-box neighbours that do not touch. When the tight boxes are apart by more
    // than the margin a manifold is computed with (margin + kManifoldReuseSlack, as updateContact), no
    // point of the shapes is within it. Planes have no tight box (no proxy).
    if (m_bodies[a].proxy == kNullProxy || m_bodies[b].proxy == kNullProxy)
    {
        return false;
    }
    const float reach = std::min(m_reach[a] + m_reach[b], m_config.maxSpeculativeDistance);
    const float limit = m_config.speculativeDistance + reach + kManifoldReuseSlack;
    const Aabb& boxA = m_tightBoxes[a];
    const Aabb& boxB = m_tightBoxes[b];
    const Vec3 gapLow = boxB.min - boxA.max;
    const Vec3 gapHigh = boxA.min - boxB.max;
    const float gap = std::max(std::max(std::max(gapLow.x, gapHigh.x), std::max(gapLow.y, gapHigh.y)),
                               std::max(gapLow.z, gapHigh.z));
    return gap > limit;
}

bool World::updateContact(Contact& contact, int thread)
{
    if (contact.sensor)
    {
        return false; // no manifold: evaluated at the end of the step (updateSensors)
    }
    const std::uint32_t a = contact.bodyA;
    const std::uint32_t b = contact.bodyB;
    const float reach = std::min(m_reach[a] + m_reach[b], m_config.maxSpeculativeDistance);
    const float margin = m_config.speculativeDistance + reach;
    if (tightBoxesApart(a, b))
    {
        // Nothing within the margin: an empty manifold, without a narrowphase (nor a reuse check).
        if (contact.manifold.pointCount > 0 || contact.cacheMargin >= 0.0f)
        {
            contact.manifold.pointCount = 0;
            contact.cacheMargin = -1.0f;
            for (int i = 0; i < kMaxManifoldPoints; ++i)
            {
                contact.normalImpulse[i] = 0.0f;
                contact.tangentImpulse1[i] = 0.0f;
                contact.tangentImpulse2[i] = 0.0f;
            }
        }
        return false;
    }
    const Transform relative = relativeTransform(m_sims[a].transform, m_sims[b].transform);
    if (reuseManifold(contact, relative, margin))
    {
        return contact.manifold.pointCount > 0;
    }
    // Computed with some slack beyond the margin, so that it can be reused while the pair stays put.
    const float computedMargin = margin + kManifoldReuseSlack;
    const ContactManifold manifold =
        collideAnyShapes(m_shapes[a], m_shapes[b], relative, computedMargin, catalogue(),
                         m_pieceScratch[static_cast<std::size_t>(thread)]);
    contact.cacheRelative = relative;
    contact.madeRelative = relative;
    contact.cacheMargin = computedMargin;
    // Carry impulses over: by feature id first; then, for points whose id changed (a face resting exactly
    // on a face flips between "incident vertex" and "edge crossing" ids under tiny motions), from the
    // nearest unclaimed old point within kWarmStartMatchDistance.
    float normal[kMaxManifoldPoints];
    float tangent1[kMaxManifoldPoints];
    float tangent2[kMaxManifoldPoints];
    int source[kMaxManifoldPoints];
    bool claimed[kMaxManifoldPoints] = {};
    const ContactManifold& old = contact.manifold;
    for (int i = 0; i < manifold.pointCount; ++i)
    {
        source[i] = -1;
        for (int j = 0; j < old.pointCount; ++j)
        {
            if (!claimed[j] && old.points[j].featureId == manifold.points[i].featureId)
            {
                source[i] = j;
                claimed[j] = true;
                break;
            }
        }
    }
    constexpr float kWarmStartMatchDistance = 0.02f; // metres
    for (int i = 0; i < manifold.pointCount; ++i)
    {
        if (source[i] >= 0)
        {
            continue;
        }
        float best = kWarmStartMatchDistance * kWarmStartMatchDistance;
        for (int j = 0; j < old.pointCount; ++j)
        {
            const float d2 = lengthSquared(old.points[j].pointA - manifold.points[i].pointA);
            if (!claimed[j] && d2 < best)
            {
                best = d2;
                source[i] = j;
            }
        }
        if (source[i] >= 0)
        {
            claimed[source[i]] = true;
        }
    }
    for (int i = 0; i < manifold.pointCount; ++i)
    {
        const int j = source[i];
        normal[i] = j >= 0 ? contact.normalImpulse[j] : 0.0f;
        tangent1[i] = j >= 0 ? contact.tangentImpulse1[j] : 0.0f;
        tangent2[i] = j >= 0 ? contact.tangentImpulse2[j] : 0.0f;
    }
    contact.manifold = manifold;
    for (int i = 0; i < kMaxManifoldPoints; ++i)
    {
        const bool used = i < manifold.pointCount;
        contact.normalImpulse[i] = used ? normal[i] : 0.0f;
        contact.tangentImpulse1[i] = used ? tangent1[i] : 0.0f;
        contact.tangentImpulse2[i] = used ? tangent2[i] : 0.0f;
    }
    return manifold.pointCount > 0;
}

namespace
{
using ProfileClock = std::chrono::steady_clock;

/// The key positions the threads listed (each its own vector), in one ascending list `out`.
void mergeThreadLists(const PerThread<std::vector<std::uint32_t>>& lists, std::vector<std::uint32_t>& out)
{
    out.clear();
    for (const std::vector<std::uint32_t>& list : lists)
    {
        out.insert(out.end(), list.begin(), list.end());
    }
    std::sort(out.begin(), out.end());
}

/// Milliseconds from `mark` to now, and `mark` moved to now (a lap of StepProfile).
float millisecondsSince(ProfileClock::time_point& mark)
{
    const ProfileClock::time_point now = ProfileClock::now();
    const float ms = std::chrono::duration<float, std::milli>(now - mark).count();
    mark = now;
    return ms;
}

/// Contacts per chunk of the parallel constraint set-up and impulse store.
constexpr std::uint32_t kContactGrain = 128;
/// Contact keys per chunk of collide()'s pass: a few nanoseconds for a pair whose boxes stay apart, a
/// fraction of a microsecond to a few for one updated (the narrowphase).
constexpr std::uint32_t kCollideGrain = 64;

enum : std::uint8_t
{
    kContactPending = 0,
    kContactUpdated = 1,
    kContactRemove = 2,
};

/// m_touchChange: how this step's narrowphase changed whether a contact touches.
enum : std::uint8_t
{
    kTouchSame = 0,
    kTouchBegan = 1,
    kTouchEnded = 2,
};
} // namespace

void World::collide()
{
    m_contactUpdated.assign(m_contacts.size(), kContactPending);
    const bool events = m_config.enableContactEvents;
    if (events)
    {
        m_touchChange.assign(m_contacts.size(), kTouchSame);
        for (std::vector<std::uint32_t>& keys : m_eventKeys)
        {
            keys.clear();
        }
    }
    auto isActive = [&](std::uint32_t i)
    {
        const Body& body = m_bodies[i];
        if (body.type == BodyType::Dynamic)
        {
            return !body.sleeping;
        }
        if (body.type == BodyType::Kinematic)
        {
            const BodySim& sim = m_sims[i];
            return lengthSquared(sim.linearVelocity) > 0.0f || lengthSquared(sim.angularVelocity) > 0.0f;
        }
        return false;
    };
    // Per thread: whether one of its updates touches a sleeping body.
    std::array<std::uint8_t, kMaxTaskThreads> wakes{};
    for (std::vector<std::uint32_t>& keys : m_removedKeys)
    {
        keys.clear();
    }
    m_collideWake.assign(m_contactKeys.size(), 0);
    // The broadphase trees' re-insertions, which the pairs did not need (deferMove keeps queries exact),
    // run beside the first round on one thread: nothing here reads the trees.
    bool treesWait = m_broadphase.hasDeferredMoves() || m_staticTree.hasDeferredMoves();
    const auto commitTrees = [this](std::uint32_t, std::uint32_t, int)
    {
        m_broadphase.commitMoves();
        m_staticTree.commitMoves();
    };
    bool woke = true;
    while (woke)
    {
        woke = false;
        // This round's contacts: pending ones with an active body. Pairs whose boxes came apart go; the rest
        // are updated (the narrowphase). Each contact reads the poses and writes only itself and its key, so
        // on any thread; nothing here runs on one thread alone unless a body is woken or a contact goes.
        const auto update = [&](std::uint32_t begin, std::uint32_t end, int thread)
        {
            for (std::uint32_t k = begin; k < end; ++k)
            {
                // From the key first (the contact record is read by the narrowphase, if at all).
                ContactKey& entry = m_contactKeys[k];
                const std::uint32_t index = entry.contact;
                if (m_contactUpdated[index] != kContactPending)
                {
                    continue;
                }
                const std::uint32_t lo = keyLow(entry);
                const std::uint32_t hi = keyHigh(entry);
                if (!isActive(lo) && !isActive(hi))
                {
                    continue;
                }
                if (!fatBoxesOverlap(lo, hi))
                {
                    m_contactUpdated[index] = kContactRemove;
                    m_removedKeys[static_cast<std::size_t>(thread)].push_back(k);
                    if (events)
                    {
                        m_eventKeys[static_cast<std::size_t>(thread)].push_back(k);
                    }
                    continue;
                }
                m_contactUpdated[index] = kContactUpdated;
                // A clear contact whose shapes stay beyond its margin stays clear: updateContact
                // would find nothing (see there).
                if ((entry.state & kKeyClear) != 0 && tightBoxesApart(lo, hi))
                {
                    continue;
                }
                Contact& c = m_contacts[index];
                const bool touched = c.manifold.pointCount > 0;
                const bool touches = updateContact(c, thread);
                entry.state = keyStateOf(c);
                if (events)
                {
                    m_touchChange[index] = touches == touched ? kTouchSame
                                           : touches          ? kTouchBegan
                                                              : kTouchEnded;
                    if (touches != touched)
                    {
                        m_eventKeys[static_cast<std::size_t>(thread)].push_back(k);
                    }
                }
                // Touching an awake body wakes a sleeping island (below, in key order).
                if (touches && (m_bodies[lo].sleeping || m_bodies[hi].sleeping))
                {
                    m_collideWake[k] = 1;
                    wakes[static_cast<std::size_t>(thread)] = 1;
                }
            }
        };
        const auto keyCount = static_cast<std::uint32_t>(m_contactKeys.size());
        if (treesWait)
        {
            forRangeBeside(keyCount, kCollideGrain, update, commitTrees);
            treesWait = false;
        }
        else
        {
            forRange(keyCount, kCollideGrain, update);
        }
        // Woken islands' pending contacts join the next round.
        if (std::find(wakes.begin(), wakes.end(), std::uint8_t{1}) == wakes.end())
        {
            break;
        }
        wakes.fill(0);
        for (std::size_t k = 0; k < m_contactKeys.size(); ++k)
        {
            if (m_collideWake[k] == 0)
            {
                continue;
            }
            m_collideWake[k] = 0;
            for (const std::uint32_t body : {keyLow(m_contactKeys[k]), keyHigh(m_contactKeys[k])})
            {
                if (m_bodies[body].sleeping)
                {
                    wakeIsland(body);
                    woke = true;
                }
            }
        }
    }
    if (events)
    {
        gatherTouchEvents(); // before the removed contacts leave the key list
    }
    if (std::all_of(m_removedKeys.begin(), m_removedKeys.end(),
                    [](const std::vector<std::uint32_t>& keys) { return keys.empty(); }))
    {
        return;
    }
    // The removed keys (each thread listed its own), in key order; the entries between them close up.
    mergeThreadLists(m_removedKeys, m_removedKeyOrder);
    const auto keys = m_contactKeys.begin();
    std::size_t out = m_removedKeyOrder.front();
    for (std::size_t r = 0; r < m_removedKeyOrder.size(); ++r)
    {
        const std::size_t k = m_removedKeyOrder[r];
        const ContactKey& entry = m_contactKeys[k];
        reportSensorEnd(m_contacts[entry.contact], m_sensorEndEvents); // a sensor pair teleported apart
        m_freeContacts.push_back(entry.contact);
        const std::size_t next =
            r + 1 < m_removedKeyOrder.size() ? m_removedKeyOrder[r + 1] : m_contactKeys.size();
        std::copy(keys + static_cast<std::ptrdiff_t>(k + 1), keys + static_cast<std::ptrdiff_t>(next),
                  keys + static_cast<std::ptrdiff_t>(out));
        out += next - k - 1;
    }
    m_contactKeys.resize(out);
}

void World::listTouchingKeys()
{
    // Without a branch: about a third of a pile's keys touch, in no pattern a predictor could follow.
    m_touchingKeys.resize(m_contactKeys.size());
    std::size_t count = 0;
    for (std::size_t k = 0; k < m_contactKeys.size(); ++k)
    {
        m_touchingKeys[count] = static_cast<std::uint32_t>(k);
        count += m_contactKeys[k].state & kKeyTouching;
    }
    m_touchingKeys.resize(count);
}

// ---- Contact events
// ------------------------------------------------------------------------------------------

void World::reportEnd(const Contact& c, std::vector<ContactEndEvent>& out)
{
    if (!m_config.enableContactEvents || c.manifold.pointCount == 0)
    {
        return;
    }
    if (out.size() < m_eventCapacity)
    {
        out.push_back({idOf(c.bodyA), idOf(c.bodyB)});
    }
    else if (&out == &m_pendingEndEvents)
    {
        ++m_droppedPendingEvents;
    }
    else
    {
        ++m_stats.droppedContactEvents;
    }
}

void World::gatherTouchEvents()
{
    // The contacts collide() removed or whose touch changed, in key order (each thread listed its own).
    mergeThreadLists(m_eventKeys, m_eventKeyOrder);
    for (const std::uint32_t k : m_eventKeyOrder)
    {
        const ContactKey& entry = m_contactKeys[k];
        const Contact& c = m_contacts[entry.contact];
        if (m_contactUpdated[entry.contact] == kContactRemove)
        {
            reportEnd(c, m_endEvents); // its boxes came apart while it touched
            continue;
        }
        const std::uint8_t change = m_touchChange[entry.contact];
        if (change == kTouchEnded)
        {
            // The manifold is empty now, but the pair touched: reportEnd's test does not apply.
            if (m_endEvents.size() < m_eventCapacity)
            {
                m_endEvents.push_back({idOf(c.bodyA), idOf(c.bodyB)});
            }
            else
            {
                ++m_stats.droppedContactEvents;
            }
        }
        else if (change == kTouchBegan)
        {
            if (m_beginEvents.size() < m_eventCapacity)
            {
                const Transform& xf = m_sims[c.bodyA].transform;
                const ContactPoint& p = c.manifold.points[0];
                m_beginEvents.push_back({idOf(c.bodyA), idOf(c.bodyB),
                                         transformPoint(xf, 0.5f * (p.pointA + p.pointB)),
                                         rotate(xf.q, c.manifold.normal)});
            }
            else
            {
                ++m_stats.droppedContactEvents;
            }
        }
    }
}

void World::gatherHitEvents()
{
    // The solved contacts that hit (solve() found them), in key order: constraints are in key order
    // within each substep level, so only a step with several levels needs them sorted.
    m_hitOrder.clear();
    for (std::uint32_t k = 0; k < static_cast<std::uint32_t>(m_constraintContacts.size()); ++k)
    {
        if (m_hits[k].point >= 0)
        {
            m_hitOrder.push_back(k);
        }
    }
    if (m_highestSubstepLevel > 0)
    {
        const auto keyOf = [&](std::uint32_t k)
        {
            const Contact& c = m_contacts[m_constraintContacts[k]];
            return pairKey(c.bodyA, c.bodyB);
        };
        std::sort(m_hitOrder.begin(), m_hitOrder.end(),
                  [&](std::uint32_t x, std::uint32_t y) { return keyOf(x) < keyOf(y); });
    }
    for (const std::uint32_t k : m_hitOrder)
    {
        if (m_hitEvents.size() >= m_eventCapacity)
        {
            ++m_stats.droppedContactEvents;
            continue;
        }
        const Contact& c = m_contacts[m_constraintContacts[k]];
        const HitCandidate& hit = m_hits[k];
        const Transform& xf = m_sims[c.bodyA].transform;
        const ContactPoint& p = c.manifold.points[hit.point];
        m_hitEvents.push_back({idOf(c.bodyA), idOf(c.bodyB), transformPoint(xf, 0.5f * (p.pointA + p.pointB)),
                               rotate(xf.q, c.manifold.normal), hit.speed, hit.impulse});
    }
}

// ---- Solver
// -------------------------------------------------------------------------------------------------

namespace
{
/// Bodies per chunk of the parallel integration loops (tens of nanoseconds each).
constexpr std::uint32_t kBodyGrain = 256;
} // namespace

void World::fillSolverBody(std::uint32_t i, SolverBody& state, SolverBodyMass& mass,
                           SolverBodyMotion& motion) const
{
    const Body& body = m_bodies[i];
    const BodySim& sim = m_sims[i];
    const Material& material = m_materials[i];
    const Vec3 linearMask = linearMaskOf(body.allowedDofs);
    const Vec3 angularMask = angularMaskOf(body.allowedDofs);
    state = {sim.linearVelocity, sim.angularVelocity, Vec3{}, Vec3{}};
    mass = SolverBodyMass{};
    motion = SolverBodyMotion{};
    motion.center = sim.center;
    motion.rotation = sim.transform.q;
    motion.linearMask = linearMask;
    motion.angularMask = angularMask;
    if (body.type == BodyType::Dynamic)
    {
        mass.inverseMass = linearMask * sim.inverseMass;
        mass.inverseInertia = inverseInertiaWorld(i);
        motion.linearAcceleration =
            mulPerElem(linearMask, m_config.gravity * material.gravityScale + sim.force * sim.inverseMass);
        motion.angularAcceleration = mass.inverseInertia * sim.torque;
        motion.linearDamping = material.linearDamping;
        motion.angularDamping = material.angularDamping;
        motion.inertiaLocal = sim.inertiaLocal;
        motion.integrateVelocity = true;
        motion.gyroscopic = !sim.isotropicInertia && angularMask == Vec3{1.0f, 1.0f, 1.0f};
    }
    else
    {
        motion.integrateVelocity = false;
    }
}

void World::fillConstraintSetup(const Contact& c, const Softness& contactSoftness,
                                const Softness& staticSoftness, float substepsInverse,
                                ContactConstraintSetup& cc) const
{
    const Body& bodyA = m_bodies[c.bodyA];
    const Body& bodyB = m_bodies[c.bodyB];
    cc.bodyA = m_solverIndex[c.bodyA];
    cc.bodyB = m_solverIndex[c.bodyB];
    const Transform& xfA = m_sims[c.bodyA].transform;
    const Vec3 centerA = m_sims[c.bodyA].center;
    const Vec3 centerB = m_sims[c.bodyB].center;
    Vec3 localT1;
    Vec3 localT2;
    orthonormalBasis(c.manifold.normal, localT1, localT2);
    cc.normal = rotate(xfA.q, c.manifold.normal);
    cc.tangent1 = rotate(xfA.q, localT1);
    cc.tangent2 = rotate(xfA.q, localT2);
    cc.friction = c.friction;
    cc.restitution = c.restitution;
    const bool againstStatic = bodyA.type != BodyType::Dynamic || bodyB.type != BodyType::Dynamic;
    cc.softness = againstStatic ? staticSoftness : contactSoftness;
    cc.pointCount = c.manifold.pointCount;
    for (int p = 0; p < cc.pointCount; ++p)
    {
        const ContactPoint& mp = c.manifold.points[p];
        const Vec3 mid = transformPoint(xfA, (mp.pointA + mp.pointB) * 0.5f);
        ContactPointSetup& cp = cc.points[p];
        cp.anchorA = mid - centerA;
        cp.anchorB = mid - centerB;
        cp.baseSeparation = mp.separation;
        // Contacts keep the step's impulse; the solver warm starts each substep with its share.
        cp.normalImpulse = c.normalImpulse[p] * substepsInverse;
        cp.tangentImpulse1 = c.tangentImpulse1[p] * substepsInverse;
        cp.tangentImpulse2 = c.tangentImpulse2[p] * substepsInverse;
    }
}

namespace
{

/// The level asked for by `ratio` against `threshold`: 0 up to the threshold, then one more for each
/// `step` times the threshold (step 2: per doubling).
int levelAbove(float ratio, float threshold, float step, int maxLevel)
{
    int level = 0;
    for (float reach = threshold; level < maxLevel && ratio > reach; reach *= step)
    {
        ++level;
    }
    return level;
}

} // namespace

int World::massRatioLevel(std::uint32_t a, std::uint32_t b) const
{
    // A heavy body on a light one: the soft contact's stiffness follows the light body's mass while the load
    // follows the heavy one's, so the sag grows with the mass ratio and the stiffness it takes with the
    // ratio's square root: one level per 4x of ratio beyond substepMassRatio.
    const float inverseMassA = m_sims[a].inverseMass;
    const float inverseMassB = m_sims[b].inverseMass;
    const float lighterInverse = std::min(inverseMassA, inverseMassB);
    if (!(lighterInverse > 0.0f))
    {
        return 0; // against a static or kinematic body
    }
    const float massRatio = std::max(inverseMassA, inverseMassB) / lighterInverse;
    return levelAbove(massRatio, m_config.substepMassRatio, 4.0f, m_maxSubstepLevel);
}

template <class Fn> void World::linkIslands(bool unite, Fn&& touchingOther)
{
    if (unite)
    {
        m_islands.reset(static_cast<std::uint32_t>(m_bodies.size()));
    }
    for (const std::uint32_t k : m_touchingKeys)
    {
        // From the key alone: the pass does not read the contact pool.
        const ContactKey& entry = m_contactKeys[k];
        const std::uint32_t lo = keyLow(entry);
        const std::uint32_t hi = keyHigh(entry);
        const bool a = awakeDynamic(lo);
        const bool b = awakeDynamic(hi);
        if (a && b)
        {
            if (unite)
            {
                m_islands.unite(lo, hi);
            }
        }
        else if (a != b)
        {
            touchingOther(a ? lo : hi, a ? hi : lo);
        }
    }
    if (unite && m_jointCount > 0)
    {
        // Joints link islands too (a joint to a static or kinematic body does not: see updateSleep).
        for (const JointLink& link : m_jointLinks)
        {
            if (link.alive && awakeDynamic(link.a) && awakeDynamic(link.b))
            {
                m_islands.unite(link.a, link.b);
            }
        }
    }
    if (unite)
    {
        m_islands.flatten(); // the passes after this one read each body's root in one load
    }
}

void World::chooseSubstepLevels(float dt)
{
    // Each awake island is solved at the level that its structure asks for, known from masses and shape
    // alone (no impulses: loads read through soft contacts swing whenever the stiffness changes, and
    // impacts spike them):
    //  - a slender island (much taller along gravity than wide: a stack, a wall) can buckle and sinks
    //    with the square of its height: its level comes from the weight each supported body carries, its
    //    mass over the mass of its bodies that rest on static or kinematic ones, one level per doubling
    //    beyond substepLoadRatio;
    //  - any island with a large mass ratio across a contact or a joint (massRatioLevel).
    // A level, once raised, is held for kSubstepLevelHoldSeconds after its island stops asking for it, so
    // that contacts coming and going do not switch it step by step. Most worlds have nothing slender,
    // heavy or raised: a pass over the bodies and contacts finds that, and every body stays at level 0.
    const auto slotCount = static_cast<std::uint32_t>(m_bodies.size());
    m_substepLevel.assign(slotCount, 0);
    m_highestSubstepLevel = 0;
    m_islandsBuilt = false;
    if (m_maxSubstepLevel == 0 || !(length(m_config.gravity) > 0.0f))
    {
        return;
    }
    // Is any island possibly raised? A held level, a mass ratio, or a dynamic body resting on another.
    bool anyLevel = false;
    for (std::uint32_t i = 0; i < slotCount && !anyLevel; ++i)
    {
        anyLevel = m_bodies[i].alive && awakeDynamic(i) && m_sims[i].substepLevel > 0;
    }
    for (std::size_t j = 0; j < m_jointLinks.size() && !anyLevel; ++j)
    {
        // A joint between a heavy and a light body, or one that hangs bodies from a static or kinematic one.
        const JointLink& link = m_jointLinks[j];
        const bool a = awakeDynamic(link.a);
        const bool b = awakeDynamic(link.b);
        anyLevel = link.alive && ((a && b && massRatioLevel(link.a, link.b) > 0) || a != b);
    }
    for (std::size_t t = 0; t < m_touchingKeys.size() && !anyLevel; ++t)
    {
        const ContactKey& entry = m_contactKeys[m_touchingKeys[t]];
        anyLevel = awakeDynamic(keyLow(entry)) && awakeDynamic(keyHigh(entry));
    }
    if (!anyLevel)
    {
        return;
    }
    m_islandSupport.assign(slotCount, IslandSupport{});
    linkIslands(true,
                [&](std::uint32_t body, std::uint32_t other)
                {
                    if (m_bodies[other].type != BodyType::Dynamic)
                    {
                        m_islandSupport[body].grounded = true; // rests on a static or kinematic body
                    }
                });
    for (const JointLink& link : m_jointLinks)
    {
        const std::uint32_t a = link.a;
        const std::uint32_t b = link.b;
        if (link.alive && awakeDynamic(a) != awakeDynamic(b))
        {
            const std::uint32_t other = awakeDynamic(a) ? b : a;
            if (m_bodies[other].type != BodyType::Dynamic)
            {
                m_islandSupport[awakeDynamic(a) ? a : b].hangs = true;
            }
        }
    }
    m_islandsBuilt = true; // updateSleep takes them as they are
    // Per island root: its box, its mass and the mass of its grounded bodies, the highest mass-ratio level.
    m_islandBoxes.resize(slotCount);
    float lightestInverse = std::numeric_limits<float>::infinity(); // of the awake dynamic bodies
    float heaviestInverse = 0.0f;
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (m_bodies[i].alive && awakeDynamic(i))
        {
            const std::uint32_t root = m_islands.root(i);
            m_islandBoxes[root] = root == i ? m_tightBoxes[i] : unionOf(m_islandBoxes[root], m_tightBoxes[i]);
            const float inverseMass = m_sims[i].inverseMass;
            lightestInverse = std::min(lightestInverse, inverseMass);
            heaviestInverse = std::max(heaviestInverse, inverseMass);
            const float mass = 1.0f / inverseMass;
            IslandSupport& island = m_islandSupport[root];
            island.mass += mass;
            island.groundedMass += m_islandSupport[i].grounded ? mass : 0.0f;
            island.hangingMass += m_islandSupport[i].hangs ? mass : 0.0f;
        }
    }
    // No contact has a mass-ratio level when no two awake bodies have (the ratio of the extremes bounds
    // every pair's, and float division keeps that order).
    const bool anyMassRatio = m_maxSubstepLevel > 0 && lightestInverse < heaviestInverse &&
                              heaviestInverse / lightestInverse > m_config.substepMassRatio;
    for (const std::uint32_t k : m_touchingKeys)
    {
        if (!anyMassRatio)
        {
            break;
        }
        const ContactKey& entry = m_contactKeys[k];
        const std::uint32_t lo = keyLow(entry);
        const std::uint32_t hi = keyHigh(entry);
        if (awakeDynamic(lo) && awakeDynamic(hi))
        {
            IslandSupport& island = m_islandSupport[m_islands.root(lo)];
            island.level = std::max(island.level, massRatioLevel(lo, hi));
        }
    }
    for (const JointLink& link : m_jointLinks)
    {
        if (link.alive && awakeDynamic(link.a) && awakeDynamic(link.b))
        {
            IslandSupport& island = m_islandSupport[m_islands.root(link.a)];
            island.level = std::max(island.level, massRatioLevel(link.a, link.b));
        }
    }
    const int upAxis = largestAxis(absPerElem(m_config.gravity));
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (!m_bodies[i].alive || !awakeDynamic(i) || m_islands.root(i) != i)
        {
            continue;
        }
        IslandSupport& island = m_islandSupport[i];
        if (island.hangingMass > 0.0f)
        {
            // Bodies hanging from joints (a chain, a bridge): a soft joint of angular frequency w sags by its
            // load over its stiffness, about 2 g (carried mass / hanging mass) / w^2 for the most loaded one
            // (the factor 2: its effective mass is about half its body's), and w doubles per level.
            const float omega = 2.0f * kPi * std::min(m_config.jointHertz, 0.25f * m_config.substeps / dt);
            float sag =
                2.0f * length(m_config.gravity) * (island.mass / island.hangingMass) / (omega * omega);
            int level = 0;
            for (; level < m_maxSubstepLevel && sag > kJointSagTolerance; ++level)
            {
                sag *= 0.25f;
            }
            island.level = std::max(island.level, level);
        }
        const Vec3 size = m_islandBoxes[i].max - m_islandBoxes[i].min;
        const float width = std::min(size[(upAxis + 1) % 3], size[(upAxis + 2) % 3]);
        if (size[upAxis] > kSlenderIslandRatio * width && island.groundedMass > 0.0f)
        {
            const float carried = island.mass / island.groundedMass;
            island.level = std::max(island.level,
                                    levelAbove(carried, m_config.substepLoadRatio, 2.0f, m_maxSubstepLevel));
        }
    }
    // The level each island runs at: what it asks for, or more if one of its bodies still holds more.
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (m_bodies[i].alive && awakeDynamic(i))
        {
            const std::uint32_t root = m_islands.root(i);
            m_substepLevel[root] = static_cast<std::uint8_t>(
                std::max({static_cast<int>(m_substepLevel[root]), m_islandSupport[root].level,
                          static_cast<int>(m_sims[i].substepLevel)}));
        }
    }
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (!m_bodies[i].alive || !awakeDynamic(i))
        {
            continue;
        }
        const std::uint32_t root = m_islands.root(i);
        const std::uint8_t level = m_substepLevel[root];
        const int asked = m_islandSupport[root].level;
        m_substepLevel[i] = level;
        m_highestSubstepLevel = std::max(m_highestSubstepLevel, static_cast<int>(level));
        // What the body holds from the next step on.
        BodySim& sim = m_sims[i];
        sim.substepLevel = level;
        if (asked >= level)
        {
            sim.substepLevelHold = kSubstepLevelHoldSeconds;
        }
        else
        {
            sim.substepLevelHold -= dt;
            if (!(sim.substepLevelHold > 0.0f))
            {
                sim.substepLevel = static_cast<std::uint8_t>(asked);
                sim.substepLevelHold = kSubstepLevelHoldSeconds;
            }
        }
    }
}

void World::solve(float dt)
{
    ProfileClock::time_point mark = ProfileClock::now();
    chooseSubstepLevels(dt);
    m_stats.profile.levels = millisecondsSince(mark);
    const auto slotCount = static_cast<std::uint32_t>(m_bodies.size());
    m_solverIndex.assign(slotCount, kStaticSolverIndex);
    m_solverSlots.clear();
    m_solverSlots.push_back(kNoIsland); // index 0: the static dummy

    // Which bodies are solved: kinematic bodies first (every group moves them), then the dynamic bodies by
    // substep level, each level in slot order. Then their solver records, on any thread.
    const int levels = m_highestSubstepLevel + 1;
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        const Body& body = m_bodies[i];
        if (body.alive && body.type == BodyType::Kinematic && !body.sleeping)
        {
            m_solverIndex[i] = static_cast<std::uint32_t>(m_solverSlots.size());
            m_solverSlots.push_back(i);
        }
    }
    const auto kinematicEnd = static_cast<std::uint32_t>(m_solverSlots.size());
    std::uint32_t levelBodyStart[kMaxSubstepLevels + 1] = {};
    for (int level = 0; level < levels; ++level)
    {
        levelBodyStart[level] = static_cast<std::uint32_t>(m_solverSlots.size());
        for (std::uint32_t i = 0; i < slotCount; ++i)
        {
            const Body& body = m_bodies[i];
            if (body.alive && body.type == BodyType::Dynamic && !body.sleeping && m_substepLevel[i] == level)
            {
                m_solverIndex[i] = static_cast<std::uint32_t>(m_solverSlots.size());
                m_solverSlots.push_back(i);
            }
        }
    }
    levelBodyStart[levels] = static_cast<std::uint32_t>(m_solverSlots.size());
    m_stats.raisedBodies = levels > 1 ? levelBodyStart[levels] - levelBodyStart[1] : 0;
    m_stats.mostSubsteps = 0;
    for (int level = 0; level < levels; ++level)
    {
        if (levelBodyStart[level] != levelBodyStart[level + 1])
        {
            m_stats.mostSubsteps = static_cast<std::uint32_t>(m_config.substeps << level);
        }
    }
    // Not cleared first: fillSolverBody writes every field of the records it fills, and the 128-byte motion
    // records would otherwise be zeroed for nothing each step.
    m_solverBodies.resize(m_solverSlots.size());
    m_solverMasses.resize(m_solverSlots.size());
    m_solverMotions.resize(m_solverSlots.size());
    m_solverBodies[0] = {};
    m_solverMasses[0] = {};
    m_solverMotions[0] = {};
    m_solverMotions[0].integrateVelocity = false;
    forRange(static_cast<std::uint32_t>(m_solverSlots.size() - 1), kBodyGrain,
             [&](std::uint32_t begin, std::uint32_t end, int)
             {
                 for (std::uint32_t s = begin + 1; s < end + 1; ++s)
                 {
                     fillSolverBody(m_solverSlots[s], m_solverBodies[s], m_solverMasses[s],
                                    m_solverMotions[s]);
                 }
             });

    // Which joints are solved: those with an awake dynamic body, by its level, each level in slot order.
    m_jointSlots.clear();
    for (int level = 0; level < levels; ++level)
    {
        m_jointLevelStart[level] = static_cast<std::uint32_t>(m_jointSlots.size());
        for (std::uint32_t j = 0; j < static_cast<std::uint32_t>(m_jointLinks.size()) && m_jointCount > 0;
             ++j)
        {
            const JointLink& link = m_jointLinks[j];
            if (!link.alive)
            {
                continue;
            }
            const std::uint32_t a = link.a;
            const std::uint32_t b = link.b;
            const bool awakeA = awakeDynamic(a);
            if ((awakeA || awakeDynamic(b)) && m_substepLevel[awakeA ? a : b] == level)
            {
                m_jointSlots.push_back(j);
            }
        }
    }
    m_jointLevelStart[levels] = static_cast<std::uint32_t>(m_jointSlots.size());
    m_jointConstraints.resize(m_jointSlots.size());
    m_stats.joints = static_cast<std::uint32_t>(m_jointSlots.size());

    // Which contacts are solved: by the level of their dynamic body, each level in key order.
    m_constraintContacts.clear();
    std::uint32_t pointTotal = 0;
    std::uint32_t levelConstraintStart[kMaxSubstepLevels + 1] = {};
    for (int level = 0; level < levels; ++level)
    {
        levelConstraintStart[level] = static_cast<std::uint32_t>(m_constraintContacts.size());
        if (levelBodyStart[level] == levelBodyStart[level + 1])
        {
            continue;
        }
        for (const std::uint32_t k : m_touchingKeys)
        {
            // From the key alone (both bodies of a dynamic pair are in one island, so at one level).
            const ContactKey& entry = m_contactKeys[k];
            const std::uint32_t lo = keyLow(entry);
            const std::uint32_t hi = keyHigh(entry);
            const Body& bodyLo = m_bodies[lo];
            const Body& bodyHi = m_bodies[hi];
            if ((bodyLo.type == BodyType::Dynamic && bodyLo.sleeping) ||
                (bodyHi.type == BodyType::Dynamic && bodyHi.sleeping))
            {
                continue;
            }
            if (m_solverIndex[lo] == kStaticSolverIndex && m_solverIndex[hi] == kStaticSolverIndex)
            {
                continue;
            }
            // A contact between a kinematic and a static body, or two kinematic ones, goes with level 0.
            const std::uint8_t contactLevel = bodyLo.type == BodyType::Dynamic   ? m_substepLevel[lo]
                                              : bodyHi.type == BodyType::Dynamic ? m_substepLevel[hi]
                                                                                 : 0;
            if (contactLevel != level)
            {
                continue;
            }
            m_constraintContacts.push_back(entry.contact);
            pointTotal += keyPointCount(entry);
        }
    }
    levelConstraintStart[levels] = static_cast<std::uint32_t>(m_constraintContacts.size());
    m_constraintSetups.resize(m_constraintContacts.size());
    // Filled by readContactImpulses for every point of every solved contact (the rest is never read).
    m_constraintImpulses.resize(m_constraintSetups.size());
    if (m_config.enableContactEvents)
    {
        m_hits.resize(m_constraintSetups.size());
    }
    m_stats.touchingContacts = static_cast<std::uint32_t>(m_constraintSetups.size());
    m_stats.contactPoints = pointTotal;
    m_stats.awakeBodies = static_cast<std::uint32_t>(m_solverBodies.size() - 1);

    // Kinematic bodies move in every level's substeps: each level starts them from the step's start.
    m_kinematicStart.assign(m_solverMotions.begin() + 1, m_solverMotions.begin() + kinematicEnd);
    const std::span<SolverBody> bodies(m_solverBodies);
    for (int level = 0; level < levels; ++level)
    {
        const std::uint32_t bodyBegin = levelBodyStart[level];
        const std::uint32_t bodyEnd = levelBodyStart[level + 1];
        if (bodyBegin == bodyEnd && (level > 0 || kinematicEnd == 1))
        {
            continue; // level 0 runs whenever there is a kinematic body, to move it
        }
        if (level > 0)
        {
            for (std::uint32_t s = 1; s < kinematicEnd; ++s)
            {
                m_solverBodies[s].deltaPosition = {};
                m_solverBodies[s].deltaRotation = {};
                m_solverMotions[s] = m_kinematicStart[s - 1];
            }
        }
        const int substeps = m_config.substeps << level;
        const float h = dt / static_cast<float>(substeps);
        const float inverseH = 1.0f / h;
        // Stiffness grows with the substeps (a level's contacts are as stiff, relative to its substep rate,
        // as level 0's), within a quarter of the substep rate.
        const float contactHertz =
            std::min(m_config.contactHertz * static_cast<float>(1 << level), 0.25f * inverseH);
        const Softness contactSoftness = makeSoftness(contactHertz, m_config.contactDampingRatio, h);
        const Softness staticSoftness = makeSoftness(2.0f * contactHertz, m_config.contactDampingRatio, h);
        const float substepsInverse = 1.0f / static_cast<float>(substeps);
        const std::uint32_t first = levelConstraintStart[level];
        const std::uint32_t count = levelConstraintStart[level + 1] - first;
        const std::span<ContactConstraintSetup> setups(m_constraintSetups.data() + first, count);
        forRange(count, kContactGrain,
                 [&](std::uint32_t begin, std::uint32_t end, int)
                 {
                     for (std::uint32_t k = begin; k < end; ++k)
                     {
                         fillConstraintSetup(m_contacts[m_constraintContacts[first + k]], contactSoftness,
                                             staticSoftness, substepsInverse, setups[k]);
                     }
                 });

        // Colour the constraints and prepare them straight into wide bundles (constraint_graph.h); the
        // solver works on the bundles and the overflow set.
        m_graph.color(setups, m_solverBodies.size(), m_tasks != nullptr ? m_tasks->threadCount() : 1);
        prepareContactBundles(m_graph, setups, m_solverBodies, m_solverMasses, m_tasks.get());
        prepareJoints(level, h, substepsInverse);
        const std::uint32_t jointBegin = m_jointLevelStart[level];
        const std::uint32_t jointEnd = m_jointLevelStart[level + 1];
        m_stats.profile.setup += millisecondsSince(mark);
        if (m_tasks != nullptr && m_tasks->threadCount() > 1)
        {
            solveLevelStaged(substeps, h, kinematicEnd, bodyBegin, bodyEnd, jointBegin, jointEnd);
        }
        else
        {
            solveLevelPassByPass(substeps, h, kinematicEnd, bodyBegin, bodyEnd, jointBegin, jointEnd);
        }
        m_stats.profile.solver += millisecondsSince(mark);
        storeJointImpulses(jointBegin, jointEnd, substeps, dt);
        readContactImpulses(m_graph, std::span<ContactImpulses>(m_constraintImpulses.data() + first, count),
                            m_tasks.get());

        // Store the step's impulses for the next step's warm start, and find each contact's hit (the
        // point of fastest approach that took a load, for gatherHitEvents): each contact on any thread.
        const bool hits = m_config.enableContactEvents;
        const float threshold = m_config.hitEventThreshold;
        const auto stepImpulse = [substeps](float impulse)
        {
            const float total = impulse * static_cast<float>(substeps);
            return std::fabs(total) <= kMaxContactImpulse ? total : 0.0f; // NaN too: not kept
        };
        forRange(count, kContactGrain,
                 [&](std::uint32_t begin, std::uint32_t end, int)
                 {
                     for (std::uint32_t k = first + begin; k < first + end; ++k)
                     {
                         Contact& c = m_contacts[m_constraintContacts[k]];
                         const ContactImpulses& impulses = m_constraintImpulses[k];
                         HitCandidate hit{threshold, 0.0f, -1};
                         for (int p = 0; p < c.manifold.pointCount; ++p)
                         {
                             c.normalImpulse[p] = stepImpulse(impulses.normal[p]);
                             c.tangentImpulse1[p] = stepImpulse(impulses.tangent1[p]);
                             c.tangentImpulse2[p] = stepImpulse(impulses.tangent2[p]);
                             hit.impulse += impulses.maxNormalImpulse[p];
                             if (impulses.approachSpeed[p] > hit.speed && impulses.maxNormalImpulse[p] > 0.0f)
                             {
                                 hit.speed = impulses.approachSpeed[p];
                                 hit.point = p;
                             }
                         }
                         if (hits)
                         {
                             m_hits[k] = hit;
                         }
                     }
                 });
        m_stats.profile.store += millisecondsSince(mark);
    }
}

void World::solveLevelPassByPass(int substeps, float h, std::uint32_t kinematicEnd, std::uint32_t bodyBegin,
                                 std::uint32_t bodyEnd, std::uint32_t jointBegin, std::uint32_t jointEnd)
{
    const std::span<SolverBody> bodies(m_solverBodies);
    const float inverseH = 1.0f / h;
    const auto integrate = [&](auto&& body)
    {
        if (kinematicEnd > 1)
        {
            body(1u, kinematicEnd);
        }
        forRange(bodyEnd - bodyBegin, kBodyGrain,
                 [&](std::uint32_t begin, std::uint32_t end, int)
                 { body(bodyBegin + begin, bodyBegin + end); });
    };
    for (int substep = 0; substep < substeps; ++substep)
    {
        integrate([&](std::uint32_t begin, std::uint32_t end)
                  { integrateVelocities(bodies, m_solverMotions, begin, end, h, m_config.maxLinearSpeed); });
        warmStartJoints(jointBegin, jointEnd);
        warmStartContactsWide(m_graph, bodies, m_tasks.get());
        solveContactsWide(m_graph, bodies, inverseH, m_config.contactPushoutVelocity, m_config.linearSlop,
                          true, m_tasks.get());
        solveJoints(jointBegin, jointEnd, inverseH, true); // after the contacts: see joint_solver.h
        integrate(
            [&](std::uint32_t begin, std::uint32_t end)
            {
                integratePositionsWide(bodies, m_solverMotions, begin, end, h);
                if (jointBegin != jointEnd && m_levelTurnsJointedInertia)
                {
                    refreshJointedInertia(begin, end);
                }
            });
        for (int relax = 0; relax < m_config.relaxIterations; ++relax)
        {
            solveContactsWide(m_graph, bodies, inverseH, m_config.contactPushoutVelocity, m_config.linearSlop,
                              false, m_tasks.get());
            solveJoints(jointBegin, jointEnd, inverseH, false);
        }
    }
    applyRestitutionWide(m_graph, bodies, m_config.restitutionThreshold, m_tasks.get());
}

void World::solveLevelStaged(int substeps, float h, std::uint32_t kinematicEnd, std::uint32_t bodyBegin,
                             std::uint32_t bodyEnd, std::uint32_t jointBegin, std::uint32_t jointEnd)
{
    // The stages of solveLevelPassByPass, in its order: per substep, integrate the velocities, warm start
    // the joints and the contacts, solve the contacts and the joints (the limited ones again), integrate
    // the positions, relax the contacts and the joints; restitution at the end. A contact pass is a stage
    // per colour that has bundles, then its overflow part (the dummy reset and the scalar set); a joint
    // pass a stage per joint colour that has joints.
    const bool joints = jointBegin != jointEnd;
    const std::uint32_t bodyBlocks = (bodyEnd - bodyBegin + kBodyGrain - 1) / kBodyGrain;
    // Block 0 of an integration also moves the kinematic bodies.
    const std::uint32_t integrateBlocks = std::max(bodyBlocks, kinematicEnd > 1 ? 1u : 0u);
    m_solverStages.clear();
    m_solverStageBlocks.clear();
    const auto addStage = [&](SolverStage stage, std::uint32_t blocks)
    {
        m_solverStages.push_back(stage);
        m_solverStageBlocks.push_back(blocks);
    };
    const auto addPass = [&](ContactPass pass)
    {
        for (int color = 0; color < kGraphColorCount; ++color)
        {
            const std::uint32_t blocks = contactPassBlocks(m_graph, color);
            if (blocks > 0)
            {
                addStage({SolverStage::ContactColor, pass, static_cast<std::uint8_t>(color)}, blocks);
            }
        }
        if (!m_graph.overflow().empty())
        {
            addStage({SolverStage::ContactOverflow, pass, 0}, 1);
        }
    };
    const auto addJointPass = [&](JointPass pass)
    {
        for (std::uint32_t color = 0; joints && color < jointStageColors(); ++color)
        {
            const std::uint32_t blocks = jointStageBlocks(color);
            if (blocks > 0)
            {
                addStage(
                    {SolverStage::JointColor, ContactPass::WarmStart, static_cast<std::uint8_t>(color), pass},
                    blocks);
            }
        }
    };
    for (int substep = 0; substep < substeps; ++substep)
    {
        addStage({SolverStage::IntegrateVelocities, ContactPass::WarmStart, 0}, integrateBlocks);
        addJointPass(JointPass::WarmStart);
        addPass(ContactPass::WarmStart);
        addPass(ContactPass::Solve);
        addJointPass(JointPass::Solve); // after the contacts: see joint_solver.h
        for (int pass = 1; m_levelHasLimitedJoints && pass < m_config.limitIterations; ++pass)
        {
            addJointPass(JointPass::SolveLimited);
        }
        addStage({SolverStage::IntegratePositions, ContactPass::WarmStart, 0}, integrateBlocks);
        for (int relax = 0; relax < m_config.relaxIterations; ++relax)
        {
            addPass(ContactPass::Relax);
            addJointPass(JointPass::Relax);
        }
    }
    addPass(ContactPass::Restitute);

    const std::span<SolverBody> bodies(m_solverBodies);
    const ContactPassParams params{1.0f / h, m_config.contactPushoutVelocity, m_config.linearSlop,
                                   m_config.restitutionThreshold};
    const float maxLinearSpeed = m_config.maxLinearSpeed;
    const auto integrate = [&](SolverStage::Kind kind, std::uint32_t begin, std::uint32_t end)
    {
        if (kind == SolverStage::IntegrateVelocities)
        {
            integrateVelocities(bodies, m_solverMotions, begin, end, h, maxLinearSpeed);
        }
        else
        {
            integratePositionsWide(bodies, m_solverMotions, begin, end, h);
            if (joints && m_levelTurnsJointedInertia)
            {
                refreshJointedInertia(begin, end);
            }
        }
    };
    const auto runStage = [&](std::uint32_t stageIndex, std::uint32_t block, int)
    {
        const SolverStage& stage = m_solverStages[stageIndex];
        switch (stage.kind)
        {
        case SolverStage::IntegrateVelocities:
        case SolverStage::IntegratePositions:
            if (block == 0 && kinematicEnd > 1)
            {
                integrate(stage.kind, 1u, kinematicEnd);
            }
            if (block < bodyBlocks)
            {
                const std::uint32_t begin = bodyBegin + block * kBodyGrain;
                integrate(stage.kind, begin, std::min(begin + kBodyGrain, bodyEnd));
            }
            break;
        case SolverStage::ContactColor:
            runContactPassBlock(m_graph, stage.pass, bodies, params, stage.color, block);
            break;
        case SolverStage::ContactOverflow:
            runContactOverflow(m_graph, stage.pass, bodies, params);
            break;
        case SolverStage::JointColor:
            runJointStageBlock(stage.jointPass, stage.color, block, params.inverseH);
            break;
        }
    };
    m_tasks->runStages(m_solverStageBlocks, runStage);
}

void World::refreshJointedInertia(std::uint32_t begin, std::uint32_t end)
{
    for (std::uint32_t s = begin; s < end; ++s)
    {
        const SolverBodyMotion& motion = m_solverMotions[s];
        const std::uint32_t slot = m_solverSlots[s];
        if (motion.gyroscopic && m_bodies[slot].jointList != kNoJoint)
        {
            const Mat3 r = toMat3(motion.rotation);
            m_solverMasses[s].inverseInertia =
                mirroredUpper(r * m_sims[slot].inverseInertiaLocal * transpose(r));
        }
    }
}

void World::finalizeBodies(float dt, StepStatus& status)
{
    // Each body on any thread; the broadphase boxes change after, in solver order.
    const auto count = static_cast<std::uint32_t>(m_solverBodies.size());
    m_fatBoxStale.resize(count);
    m_wantedBoxes.resize(count);
    std::atomic<bool> nonFinite{false};
    forRange(count - 1, kBodyGrain,
             [&](std::uint32_t begin, std::uint32_t end, int)
             {
                 for (std::uint32_t s = begin + 1; s < end + 1; ++s)
                 {
                     if (!finalizeBody(s, dt, m_fatBoxStale[s], m_wantedBoxes[s]))
                     {
                         nonFinite.store(true, std::memory_order_relaxed);
                     }
                 }
             });
    if (nonFinite.load(std::memory_order_relaxed))
    {
        status.set(StepFlag::NonFiniteBodyState);
    }
    // Deferred: the trees grow to hold the new boxes now and restructure beside the next narrowphase.
    for (std::uint32_t s = 1; s < count; ++s)
    {
        if (m_fatBoxStale[s] != 0)
        {
            storeFatBox(m_solverSlots[s], m_wantedBoxes[s], true);
        }
    }
}

bool World::finalizeBody(std::uint32_t s, float dt, std::uint8_t& boxStale, Aabb& wantedBox)
{
    const float maxAngularSpeed = 0.25f * kPi * static_cast<float>(m_config.substeps) / dt;
    const std::uint32_t i = m_solverSlots[s];
    BodySim& sim = m_sims[i];
    const SolverBody& state = m_solverBodies[s];
    const SolverBodyMotion& motion = m_solverMotions[s];
    const Quat q = normalize(motion.rotation);
    const Transform moved{motion.center - rotate(q, sim.localCenter), q};
    bool finite = true;
    if (!withinWorldBound(moved.p) || !withinWorldBound(motion.center) || !isFinite(moved.q) ||
        !isFinite(state.linearVelocity) || !isFinite(state.angularVelocity))
    {
        // Bad input (a NaN force, say): keep the last good pose, at rest.
        finite = false;
        sim.linearVelocity = {};
        sim.angularVelocity = {};
    }
    else
    {
        sim.transform = moved;
        sim.center = motion.center;
        // The contact solve may push past the speed caps that integrateVelocities applied: cap again.
        sim.linearVelocity = clampedLength(state.linearVelocity, m_config.maxLinearSpeed);
        sim.angularVelocity = clampedLength(state.angularVelocity, maxAngularSpeed);
    }
    sim.force = {};
    sim.torque = {};

    // The box must hold the body between steps (the world's queries, restoreState): replaced, for the
    // motion now, when the body left it. Whether it covers the coming step's motion is step()'s check, with
    // the velocities that step starts with: checked here as well, it would be checked twice.
    boxStale = 0;
    if (m_bodies[i].proxy != kNullProxy)
    {
        m_tightBoxes[i] = computeTightBox(i);
        if (!m_fatBoxes[i].contains(m_tightBoxes[i]))
        {
            fatBoxStale(i, dt, reachBeyondVelocity(i, dt), true, wantedBox); // forced: always the new box
            boxStale = 1;
        }
    }

    const float speed = length(sim.linearVelocity) + length(sim.angularVelocity) * sim.extent;
    if (!m_config.enableSleep || !m_bodies[i].allowSleep || speed > m_config.sleepVelocity)
    {
        sim.sleepTime = 0.0f;
    }
    else
    {
        sim.sleepTime += dt;
    }
    return finite;
}

void World::updateSleep()
{
    const auto slotCount = static_cast<std::uint32_t>(m_bodies.size());
    // The islands may be built already: chooseSubstepLevels links the same contacts, and nothing between
    // them changes a contact or a body's sleep.
    // Without sleep the rest times are not read, only the island count: no pass when the islands are built.
    if (m_config.enableSleep || !m_islandsBuilt)
    {
        linkIslands(!m_islandsBuilt,
                    [&](std::uint32_t body, std::uint32_t other)
                    {
                        // A moving kinematic body keeps what it touches awake.
                        if (m_bodies[other].type == BodyType::Kinematic && m_sims[other].sleepTime == 0.0f)
                        {
                            m_sims[body].sleepTime = 0.0f;
                        }
                    });
    }
    for (const JointLink& link : m_jointLinks)
    {
        // A moving kinematic body keeps what it is joined to awake.
        if (!link.alive)
        {
            continue;
        }
        const std::uint32_t a = link.a;
        const std::uint32_t b = link.b;
        if (awakeDynamic(a) && m_bodies[b].type == BodyType::Kinematic && m_sims[b].sleepTime == 0.0f)
        {
            m_sims[a].sleepTime = 0.0f;
        }
        else if (awakeDynamic(b) && m_bodies[a].type == BodyType::Kinematic && m_sims[a].sleepTime == 0.0f)
        {
            m_sims[b].sleepTime = 0.0f;
        }
    }
    m_islandSleep.assign(slotCount, std::numeric_limits<float>::infinity());
    std::uint32_t islands = 0;
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (m_bodies[i].alive && awakeDynamic(i))
        {
            const std::uint32_t root = m_islands.root(i);
            islands += root == i ? 1u : 0u;
            m_islandSleep[root] = std::min(m_islandSleep[root], m_sims[i].sleepTime);
        }
    }
    m_stats.islands = islands;
    if (!m_config.enableSleep)
    {
        return;
    }
    // Islands at rest long enough fall asleep, each as a circular list in slot order (its root first).
    m_islandTail.assign(slotCount, kNoIsland);
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (!m_bodies[i].alive || !awakeDynamic(i))
        {
            continue;
        }
        const std::uint32_t root = m_islands.root(i);
        if (!(m_islandSleep[root] >= m_config.timeToSleep))
        {
            continue;
        }
        if (m_islandTail[root] != kNoIsland)
        {
            m_bodies[m_islandTail[root]].islandNext = i;
        }
        m_islandTail[root] = i;
        m_bodies[i].islandNext = root; // closes the circle; overwritten if another body follows
        BodySim& sim = m_sims[i];
        sim.linearVelocity = {};
        sim.angularVelocity = {};
    }
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (m_islandTail[i] != kNoIsland)
        {
            // i is a root whose island sleeps: mark its members.
            std::uint32_t j = i;
            do
            {
                m_bodies[j].sleeping = true;
                j = m_bodies[j].islandNext;
            } while (j != i);
        }
    }
}

StepStatus World::step(float dt)
{
    StepStatus status;
    if (!(dt > 0.0f) || !std::isfinite(dt))
    {
        status.set(StepFlag::InvalidTimeStep);
        return status;
    }
    m_stats = StepStats{};
    const ProfileClock::time_point stepStart = ProfileClock::now();
    ProfileClock::time_point mark = stepStart;
    if (m_config.enableContactEvents)
    {
        // Ends of contacts removed since the last step (destroyBody) first.
        m_beginEvents.clear();
        m_hitEvents.clear();
        m_endEvents.assign(m_pendingEndEvents.begin(), m_pendingEndEvents.end());
        m_pendingEndEvents.clear();
        m_stats.droppedContactEvents = m_droppedPendingEvents;
        m_droppedPendingEvents = 0;
    }
    beginSensorStep();
    // Joint events: the joints destroyed with bodies since the last step first, then this step's breaks.
    m_jointEvents.swap(m_pendingJointEvents);
    m_pendingJointEvents.clear();
    // Broadphase boxes cover this step's motion, with the velocities as they are now (after any calls
    // since the last step), so every contact the step needs exists before it starts. The tight boxes are
    // those of the poses the last step (or createBody, setTransform, restoreState) left.
    // The checks on any thread; the tree changes after, in slot order.
    const auto slotCount = static_cast<std::uint32_t>(m_bodies.size());
    m_fatBoxStale.resize(slotCount);
    m_wantedBoxes.resize(slotCount);
    m_reach.resize(slotCount);
    forRange(slotCount, kBodyGrain,
             [&](std::uint32_t begin, std::uint32_t end, int)
             {
                 for (std::uint32_t i = begin; i < end; ++i)
                 {
                     // The speculative reach (the narrowphase margin) and the swept box share the
                     // reach beyond v dt: once per body.
                     const Body& body = m_bodies[i];
                     const bool moves = body.alive && body.type != BodyType::Static;
                     const float beyond = moves ? reachBeyondVelocity(i, dt) : 0.0f;
                     m_reach[i] = moves ? length(m_sims[i].linearVelocity) * dt + beyond : 0.0f;
                     m_fatBoxStale[i] =
                         moves && !body.sleeping && fatBoxStale(i, dt, beyond, false, m_wantedBoxes[i]) ? 1
                                                                                                        : 0;
                 }
             });
    for (std::uint32_t i = 0; i < slotCount; ++i)
    {
        if (m_fatBoxStale[i] != 0)
        {
            storeFatBox(i, m_wantedBoxes[i], true); // committed beside the narrowphase (collide)
        }
    }
    m_stats.profile.boxes = millisecondsSince(mark);
    if (m_filtersChanged)
    {
        removeFilteredContacts();
    }
    updatePairs(status);
    m_stats.profile.pairs = millisecondsSince(mark);
    collide();
    listTouchingKeys();
    wakeJointedIslands();
    m_stats.profile.collide = millisecondsSince(mark);
    solve(dt); // its own phases: levels, setup, solver, store
    mark = ProfileClock::now();
    if (m_config.enableContactEvents)
    {
        gatherHitEvents(); // with the step's starting poses, where the manifolds were made
    }
    m_stats.profile.store += millisecondsSince(mark);
    finalizeBodies(dt, status);
    m_stats.profile.finalize = millisecondsSince(mark);
    updateSleep();
    updateSensors();
    breakJoints();

    std::uint32_t sleeping = 0;
    for (const Body& body : m_bodies)
    {
        sleeping += body.alive && body.sleeping ? 1u : 0u;
    }
    m_stats.sleepingBodies = sleeping;
    m_stats.contacts = static_cast<std::uint32_t>(m_contactKeys.size());
    if (m_stats.droppedContactEvents > 0)
    {
        status.set(StepFlag::ContactEventCapacityReached);
    }
    if (m_stats.droppedSensorEvents > 0)
    {
        status.set(StepFlag::SensorEventCapacityReached);
    }
    m_stats.profile.sleep = millisecondsSince(mark);
    m_stats.profile.step = millisecondsSince(mark = stepStart);
    ++m_stepCount;
    return status;
}

} // namespace polytope::physics

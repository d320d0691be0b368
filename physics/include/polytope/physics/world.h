// Polytope physics: the world, its bodies and the fixed-step simulation.
//
// Bodies are addressed by generational ids: a slot index plus a generation that changes whenever the slot
// is reused, so a stale id is detected instead of silently naming another body. Per-body data lives in
// contiguous arrays indexed by slot (hot state apart from bookkeeping), iterated in slot order, so a step
// is deterministic for the same binary and the same sequence of calls.
#pragma once

#include "polytope/physics/math.h"
#include "polytope/physics/shapes.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace polytope::physics
{

/// A body's handle. generation 0 is never issued, so a value-initialised BodyId is the null id.
struct BodyId
{
    std::uint32_t index = 0;
    std::uint32_t generation = 0;

    constexpr bool isNull() const { return generation == 0; }
    constexpr bool operator==(const BodyId&) const = default;
};

enum class BodyType : std::uint8_t
{
    Static = 0,    ///< never moves; infinite mass
    Kinematic = 1, ///< moved by its velocity only; infinite mass
    Dynamic = 2,   ///< moved by forces and contacts
};

/// Everything needed to create a body.
struct BodyDesc
{
    BodyType type = BodyType::Dynamic;
    Shape shape{};
    Transform transform{};  ///< world frame; the shape's local origin
    Vec3 linearVelocity{};  ///< m/s
    Vec3 angularVelocity{}; ///< rad/s, world frame
    float density = 1000.0f; ///< kg/m^3, dynamic bodies only
    float friction = 0.6f;   ///< Coulomb coefficient, >= 0
    float restitution = 0.0f; ///< 0 (no bounce) .. 1 (elastic)
    std::uint64_t userData = 0;
};

/// A read-only view of one body's state.
struct BodyState
{
    BodyId id{};
    BodyType type = BodyType::Dynamic;
    Shape shape{};
    Transform transform{};
    Vec3 linearVelocity{};
    Vec3 angularVelocity{};
    float mass = 0.0f; ///< kg; 0 for static and kinematic bodies
    std::uint64_t userData = 0;
};

struct WorldConfig
{
    Vec3 gravity{0.0f, -9.81f, 0.0f}; ///< m/s^2
    std::uint32_t maxBodies = 65536;  ///< capacity, fixed at creation
    int velocityIterations = 10;      ///< solver iterations per step
    float contactSlop = 0.005f;       ///< metres of penetration left uncorrected, to keep contacts alive
    float positionCorrection = 0.2f;  ///< fraction of the remaining penetration removed per step
    float speculativeDistance = 0.05f; ///< metres: contacts are made this far before touching
    float restitutionThreshold = 1.0f; ///< m/s: slower impacts do not bounce
};

enum class WorldStatus : std::uint8_t
{
    Ok = 0,
    BodyCapacityReached, ///< createBody refused: maxBodies bodies exist
    InvalidBodyDesc,     ///< createBody refused: a size, density or number is out of range or not finite
    StaleBodyId,         ///< the id names no live body
};

/// Result of createBody: the id, or a null id and the reason.
struct CreateBodyResult
{
    BodyId id{};
    WorldStatus status = WorldStatus::Ok;
};

class World
{
public:
    explicit World(const WorldConfig& config = {});

    /// Adds a body. Refuses (with a status, never a crash) when full or when the description is invalid.
    CreateBodyResult createBody(const BodyDesc& desc);
    /// Removes a body; its id becomes stale. Returns StaleBodyId when it names no live body.
    WorldStatus destroyBody(BodyId id);
    bool isValid(BodyId id) const;

    /// Advances the simulation by dt seconds (a fixed step: callers keep dt constant).
    void step(float dt);

    /// The body's state, or nullptr-equivalent (false) when the id is stale.
    bool getBody(BodyId id, BodyState& out) const;
    WorldStatus setVelocity(BodyId id, const Vec3& linear, const Vec3& angular);

    /// Calls fn(const BodyState&) for every live body, in slot order.
    template <class Fn> void forEachBody(Fn&& fn) const
    {
        BodyState state;
        for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(m_slots.size()); ++i)
        {
            if (m_slots[i].alive)
            {
                fillState(i, state);
                fn(static_cast<const BodyState&>(state));
            }
        }
    }

    std::uint32_t bodyCount() const { return m_bodyCount; }
    std::uint64_t stepCount() const { return m_stepCount; }
    const WorldConfig& config() const { return m_config; }
    void setGravity(const Vec3& g) { m_config.gravity = g; }

    /// A 64-bit hash of every live body's id, transform and velocities and of the step count: equal hashes
    /// mean (with overwhelming likelihood) bit-identical simulation states.
    std::uint64_t stateHash() const;

private:
    struct Slot
    {
        std::uint32_t generation = 0;
        bool alive = false;
        BodyType type = BodyType::Dynamic;
        std::uint64_t userData = 0;
    };
    struct MassData
    {
        float inverseMass = 0.0f;
        Mat3 inverseInertiaLocal = Mat3::zero();
    };
    struct Material
    {
        float friction = 0.6f;
        float restitution = 0.0f;
    };
    struct ContactPoint
    {
        std::uint32_t body = 0;
        Vec3 normal{};          ///< from the static plane towards the body
        Vec3 arm{};             ///< from the body's centre of mass to the contact point
        Vec3 tangent1{}, tangent2{};
        float separation = 0.0f; ///< metres; negative when penetrating
        float normalMass = 0.0f, tangentMass1 = 0.0f, tangentMass2 = 0.0f;
        float bias = 0.0f;             ///< target normal velocity from restitution or correction
        float normalImpulse = 0.0f;    ///< accumulated, >= 0
        float tangentImpulse1 = 0.0f, tangentImpulse2 = 0.0f;
        float friction = 0.0f;
    };

    void fillState(std::uint32_t index, BodyState& out) const;
    void collectPlaneContacts(float dt);
    void addContact(std::uint32_t body, std::uint32_t plane, const Vec3& pointWorld, float separation,
                    const Vec3& normal, float dt);
    Mat3 inverseInertiaWorld(std::uint32_t index) const;

    WorldConfig m_config;
    std::vector<Slot> m_slots;
    std::vector<std::uint32_t> m_freeSlots; ///< LIFO; reuse order is deterministic
    std::vector<Transform> m_transforms;
    std::vector<Vec3> m_linearVelocities;
    std::vector<Vec3> m_angularVelocities;
    std::vector<MassData> m_mass;
    std::vector<Material> m_materials;
    std::vector<Shape> m_shapes;
    std::vector<ContactPoint> m_contacts; ///< rebuilt each step; capacity kept
    std::uint32_t m_bodyCount = 0;
    std::uint64_t m_stepCount = 0;
};

} // namespace polytope::physics

// Polytope physics: handles of bodies and joints.
//
// Generational ids (Box2D's b2BodyId): a slot index plus a generation that changes whenever the slot is
// reused, so a stale id is detected instead of silently naming another object.
#pragma once

#include <cstdint>

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

/// A joint's handle, like BodyId: generation 0 is never issued (the null id).
struct JointId
{
    std::uint32_t index = 0;
    std::uint32_t generation = 0;

    constexpr bool isNull() const { return generation == 0; }
    constexpr bool operator==(const JointId&) const = default;
};

} // namespace polytope::physics

// polytope-bench: Fiedler's "Snapshot Compression" scene, built with the engine. The one definition of it:
// the bandwidth suite streams it through the Server and Client cores and through the snapshot codec alone.
//
// 900 cubes (0.5 m, density 1000) resting on a 30 x 30 grid, 1 m apart, on the ground plane, and one large
// kinematic cube (2 m half extent) driven along a figure-eight through them: 13 m across, one loop every 8 s.
// "Idle" is the same scene with the large cube parked away from the grid, so that everything comes to rest.
#pragma once

#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <cmath>
#include <cstdint>

namespace polytope::bench
{

inline constexpr float kFiedlerCubeHalfMeters = 0.25f;
inline constexpr float kFiedlerPusherHalfMeters = 2.0f;

/// Where the large cube's centre is at time t (seconds) on its figure-eight.
inline physics::Vec3 fiedlerPusherPath(double t)
{
    const double w = 2.0 * 3.14159265358979 / 8.0;
    return {static_cast<float>(13.0 * std::sin(w * t)), kFiedlerPusherHalfMeters,
            static_cast<float>(9.0 * std::sin(2.0 * w * t))};
}

/// Adds the scene to an empty world; `pusher` is the large cube. False when the world refused a body.
inline bool buildFiedlerCubes(physics::World& world, bool idle, physics::BodyId& pusher)
{
    if (!physics::addGroundPlane(world))
    {
        return false;
    }
    for (int i = 0; i < 30; ++i)
    {
        for (int k = 0; k < 30; ++k)
        {
            physics::BodyDesc cube;
            cube.shape = physics::Shape::makeBox(
                {kFiedlerCubeHalfMeters, kFiedlerCubeHalfMeters, kFiedlerCubeHalfMeters});
            cube.transform.p = {static_cast<float>(i) - 14.5f, kFiedlerCubeHalfMeters,
                                static_cast<float>(k) - 14.5f};
            if (world.createBody(cube).id.isNull())
            {
                return false;
            }
        }
    }
    physics::BodyDesc big;
    big.type = physics::BodyType::Kinematic;
    big.shape = physics::Shape::makeBox(
        {kFiedlerPusherHalfMeters, kFiedlerPusherHalfMeters, kFiedlerPusherHalfMeters});
    big.transform.p = idle ? physics::Vec3{40.0f, kFiedlerPusherHalfMeters, 40.0f} : fiedlerPusherPath(0.0);
    pusher = world.createBody(big).id;
    return !pusher.isNull();
}

/// Before the step that makes tick `tick` (of `tickSeconds` each): sets the large cube's velocity so that
/// the step takes it exactly to the path's point at that tick.
inline void driveFiedlerPusher(physics::World& world, physics::BodyId pusher, std::uint64_t tick,
                               double tickSeconds)
{
    physics::BodyState state;
    if (world.getBody(pusher, state))
    {
        const physics::Vec3 target = fiedlerPusherPath(static_cast<double>(tick) * tickSeconds);
        world.setVelocity(pusher, (target - state.transform.p) * static_cast<float>(1.0 / tickSeconds),
                          {0.0f, 0.0f, 0.0f});
    }
}

} // namespace polytope::bench

// libFuzzer target: World::restoreState on arbitrary bytes, into a world built from the built-in "mixed"
// scene (spheres, capsules, boxes and convex hulls, so the hull catalogue is checked too). Its promises:
// anything but Ok leaves the world exactly as it was (same stateHash); a world that took the bytes saves a
// state that restores to the same hash, and after a step still saves a state that restores. Seeds: real
// saved states (make_state_corpus).
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace
{

/// The world every input is restored into, and its state before (put back after each accepted input).
struct Target
{
    Target()
    {
        if (!polytope::physics::findScene("mixed")->build(world))
        {
            std::abort();
        }
        world.saveState(pristine);
        pristineHash = world.stateHash();
    }
    polytope::physics::World world;
    std::vector<std::uint8_t> pristine;
    std::uint64_t pristineHash = 0;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope::physics;
    static Target target;
    World& world = target.world;
    if (world.restoreState({data, size}) != RestoreStatus::Ok)
    {
        if (world.stateHash() != target.pristineHash)
        {
            std::abort(); // a refused state changed the world
        }
        return 0;
    }
    // Accepted: it saves and restores to itself, and steps.
    const std::uint64_t hash = world.stateHash();
    std::vector<std::uint8_t> saved;
    world.saveState(saved);
    if (world.restoreState(saved) != RestoreStatus::Ok || world.stateHash() != hash)
    {
        std::abort();
    }
    // A step may stop bodies whose state went bad (StepFlag::NonFiniteBodyState), but what the world is
    // then, it can save and restore.
    (void)world.step(1.0f / 60.0f);
    world.saveState(saved);
    if (world.restoreState(saved) != RestoreStatus::Ok ||
        world.restoreState(target.pristine) != RestoreStatus::Ok)
    {
        std::abort();
    }
    return 0;
}

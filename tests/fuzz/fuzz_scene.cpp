// libFuzzer target: scene files (parseSceneJson, then buildScene into a small World and a player spawn, as
// the server does). An accepted scene must hold only finite numbers, and building it may fail only for lack
// of capacity, never because a checked value was refused.
#include "polytope/server/scene_file.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

namespace
{

bool finite(const polytope::physics::Vec3& v)
{
    return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
}

void checkBody(const polytope::server::SceneBody& body)
{
    const polytope::physics::BodyDesc& d = body.desc;
    if (!finite(d.transform.p) || !isFinite(d.transform.q) || !finite(d.linearVelocity) ||
        !finite(d.angularVelocity) || !(d.density > 0.0f) || !std::isfinite(d.density) ||
        !std::isfinite(d.friction) || !std::isfinite(d.restitution))
    {
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope;
    server::SceneDescription scene;
    std::string error;
    if (!server::parseSceneJson(std::string_view(reinterpret_cast<const char*>(data), size), scene, error))
    {
        if (error.empty())
        {
            std::abort();
        }
        return 0;
    }
    if (!finite(scene.gravity))
    {
        std::abort();
    }
    for (const server::SceneBody& body : scene.bodies)
    {
        checkBody(body);
    }
    if (scene.player)
    {
        checkBody(*scene.player);
    }

    // Small capacities keep big built-in scenes (pile4000) cheap: they fail fast with a capacity error.
    physics::WorldConfig config;
    config.maxBodies = 256;
    config.maxContacts = 1024;
    config.maxHulls = 64;
    physics::World world(config);
    if (!server::buildScene(scene, world, error))
    {
        if (error.find("Capacity") == std::string::npos && error.find("capacity") == std::string::npos)
        {
            std::abort(); // a checked scene was refused for another reason
        }
        return 0;
    }
    physics::BodyDesc player;
    if (scene.player && server::makePlayerBody(scene, 1, world, player, error))
    {
        const physics::CreateBodyResult created = world.createBody(player);
        if (created.status != physics::WorldStatus::Ok &&
            created.status != physics::WorldStatus::BodyCapacityReached)
        {
            std::abort();
        }
    }
    world.step(1.0f / 60.0f);
    return 0;
}

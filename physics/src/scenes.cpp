#include "polytope/physics/scenes.h"

#include <array>

namespace polytope::physics
{
namespace
{

bool addGround(World& world)
{
    BodyDesc ground;
    ground.type = BodyType::Static;
    ground.shape = Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
    return world.createBody(ground).status == WorldStatus::Ok;
}

/// A 5 x 5 grid of spheres, boxes and capsules dropped from staggered heights onto the ground.
bool buildDefault(World& world)
{
    if (!addGround(world))
    {
        return false;
    }
    constexpr int kSide = 5;
    constexpr float kSpacing = 2.5f;
    for (int row = 0; row < kSide; ++row)
    {
        for (int column = 0; column < kSide; ++column)
        {
            const int i = row * kSide + column;
            BodyDesc desc;
            switch (i % 3)
            {
            case 0:
                desc.shape = Shape::makeBox({0.5f, 0.5f, 0.5f});
                break;
            case 1:
                desc.shape = Shape::makeSphere(0.5f);
                desc.restitution = 0.3f;
                break;
            default:
                desc.shape = Shape::makeCapsule(0.4f, 0.3f);
                break;
            }
            const float x = (static_cast<float>(column) - 0.5f * (kSide - 1)) * kSpacing;
            const float z = (static_cast<float>(row) - 0.5f * (kSide - 1)) * kSpacing;
            desc.transform.p = {x, 4.0f + 0.6f * static_cast<float>(i), z};
            desc.transform.q = quatFromAxisAngle(normalize(Vec3{1.0f, 0.3f * static_cast<float>(i % 4), 0.5f}),
                                                 0.25f * static_cast<float>(i % 7));
            desc.angularVelocity = {0.0f, 0.5f * static_cast<float>(i % 3), 0.0f};
            if (world.createBody(desc).status != WorldStatus::Ok)
            {
                return false;
            }
        }
    }
    return true;
}

constexpr std::array kScenes{
    SceneInfo{"default", "a 5 x 5 grid of boxes, spheres and capsules falling onto the ground", &buildDefault},
};

} // namespace

std::span<const SceneInfo> builtinScenes() { return kScenes; }

const SceneInfo* findScene(std::string_view name)
{
    for (const SceneInfo& scene : kScenes)
    {
        if (scene.name == name)
        {
            return &scene;
        }
    }
    return nullptr;
}

} // namespace polytope::physics

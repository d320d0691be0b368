#include "support/geometry_scene.h"

#include "polytope/physics/heightfield.h"
#include "polytope/physics/scenes.h"

#include <memory>
#include <string>
#include <vector>

namespace polytope::test
{

bool buildGeometryScene(physics::World& world)
{
    std::string error;
    if (!physics::buildNamedScene(world, "convex_vs_mesh", error))
    {
        return false;
    }
    constexpr std::uint32_t kSide = 40;
    std::vector<float> heights(kSide * kSide);
    for (std::uint32_t i = 0; i < heights.size(); ++i)
    {
        heights[i] = 0.05f * static_cast<float>((i * 7919u) % 23u);
    }
    std::vector<std::uint8_t> holes(((kSide - 1) * (kSide - 1) + 7) / 8, 0);
    holes[10] = 0x10;
    physics::HeightFieldDesc desc;
    desc.sampleCountX = kSide;
    desc.sampleCountZ = kSide;
    desc.heights = heights;
    desc.holeMask = holes;
    physics::HeightFieldBuildResult built = physics::buildHeightField(desc);
    if (!built.ok())
    {
        return false;
    }
    const physics::AddShapeResult field =
        world.addHeightField(std::make_shared<const physics::HeightField>(std::move(built.heightField)));
    physics::BodyDesc body;
    body.type = physics::BodyType::Static;
    body.shape = physics::Shape::makeCatalogued(physics::ShapeType::HeightField, field.index);
    body.transform.p = {100.0f, -5.0f, 100.0f};
    return field.status == physics::WorldStatus::Ok &&
           world.createBody(body).status == physics::WorldStatus::Ok;
}

} // namespace polytope::test

// Polytope physics: built-in scenes as data, defined once and shared by the tests, bench/, the server's
// built-in scenes and the viewer.
#pragma once

#include "polytope/physics/world.h"

#include <span>
#include <string_view>

namespace polytope::physics
{

struct SceneInfo
{
    std::string_view name;
    std::string_view description;
    /// Adds the scene's bodies to an empty world. Returns false if the world refused a body (capacity).
    bool (*build)(World& world);
};

/// Every built-in scene, in a fixed order.
std::span<const SceneInfo> builtinScenes();
/// The built-in scene of that name, or nullptr.
const SceneInfo* findScene(std::string_view name);

} // namespace polytope::physics

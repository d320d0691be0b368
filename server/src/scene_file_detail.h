// polytope-server: what the scene-file sources share (scene_file.cpp, scene_geometry.cpp, scene_joints.cpp,
// scene_build.cpp): the error convention, "field.path: what was wrong", how numbers and quoted text appear
// in it, and the checks of the values that bodies and joints both hold.
#pragma once

#include "polytope/physics/math.h"

#include <charconv>
#include <cstddef>
#include <string>

namespace polytope::scene
{
struct Vec3;
struct Quat;
struct Scene;
} // namespace polytope::scene

namespace polytope::server
{
struct SceneDescription;
}

namespace polytope::server::detail
{

/// Files give angles in degrees.
inline constexpr float kDegreesToRadians = 0.017453292519943295f;

/// Most bytes of a file name (or a value) quoted in an error.
inline constexpr std::size_t kMaxQuotedBytes = 200;

/// The shortest text that reads back as the same float ("0.001", "-1", "nan", "inf").
inline std::string number(float v)
{
    char text[48];
    const std::to_chars_result result = std::to_chars(text, text + sizeof text, v);
    return std::string(text, result.ptr);
}

/// Sets `error` to "path: what" and returns false.
inline bool fail(std::string& error, const std::string& path, const std::string& what)
{
    error = path + ": " + what;
    return false;
}

/// Whether v is finite and in [lo, hi]; if not, sets `error` ("path: must be in [lo, hi] (got v)").
bool checkRange(const std::string& path, float v, float lo, float hi, std::string& error);

/// Reads a vector whose components must each be in [lo, hi] (paths "path.x", "path.y", "path.z").
bool readVec3(const std::string& path, const scene::Vec3& v, float lo, float hi, physics::Vec3& out,
              std::string& error);

/// A body's, a compound child's or a joint frame's rotation: `orientation` (normalised) or `euler_degrees`
/// (about the world axes x, then y, then z), at most one of them; `out` is left as it is when neither is
/// given. `path` is the object's that holds them.
bool readOrientation(const std::string& path, const scene::Quat* orientation, const scene::Vec3* euler,
                     physics::Quat& out, std::string& error);

/// Reads and checks the scene's joints (scene_joints.cpp) into out.joints, resolving their body names
/// against out.bodies, which must be read already.
bool readJoints(const scene::Scene& scene, SceneDescription& out, std::string& error);

} // namespace polytope::server::detail

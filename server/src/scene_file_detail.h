// polytope-server: what the scene-file sources share (scene_file.cpp, scene_geometry.cpp, scene_build.cpp):
// the error convention, "field.path: what was wrong", and how numbers and quoted text appear in it.
#pragma once

#include <charconv>
#include <cstddef>
#include <string>

namespace polytope::server::detail
{

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

} // namespace polytope::server::detail

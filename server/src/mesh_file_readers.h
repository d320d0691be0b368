// The mesh file readers behind geometry_files.h: one per format, each turning a file's bytes into checked
// arrays. geometry_files.cpp reads the file, picks the reader, then builds the mesh and names the file in
// messages; readers name only the element ("mesh 'Floor' primitive 2: ...", "line 57: ...").
#pragma once

#include "polytope/physics/math.h"
#include "polytope/server/geometry_files.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::server::detail
{

/// What a reader leaves: MeshFileResult's arrays, and what is needed to name one triangle in a message.
struct MeshArrays
{
    std::vector<physics::Vec3> vertices;
    std::vector<std::uint32_t> indices;
    std::vector<MeshFilePart> parts;
    std::vector<std::string> warnings;
    /// OBJ: per face, its first triangle and the file line it is on (both ascending), when the lines could be
    /// matched to the parser's faces; empty otherwise.
    std::vector<std::uint32_t> faceFirstTriangle;
    std::vector<std::uint32_t> faceLine;
};

/// A reader's refusal: the error and one line naming the element (not the file).
struct ReadFailure
{
    GeometryFileError error = GeometryFileError::None;
    std::string message;
};

/// glTF 2.0, JSON or binary by the first four bytes. External buffers are looked up in `baseFolder` ("": none
/// may be read). Returns false and fills `failure` on refusal.
bool readGltf(std::string_view bytes, const std::string& baseFolder, const MeshFileOptions& options,
              MeshArrays& out, ReadFailure& failure);

/// Wavefront OBJ. Material libraries are not read. Returns false and fills `failure` on refusal.
bool readObj(std::string_view bytes, const MeshFileOptions& options, MeshArrays& out, ReadFailure& failure);

/// Names input triangle `triangle` of `arrays` for a message: "line 57 (object 'Crate')" or "node 'Level'
/// mesh 'Floor' primitive 2, triangle 5".
std::string describeTriangle(const MeshArrays& arrays, std::uint32_t triangle);

/// `value` as printf's %g writes it ("1e+06", "nan", "-0.5").
std::string formatNumber(double value);

/// "(x, y, z)" with formatNumber.
std::string formatPoint(double x, double y, double z);

} // namespace polytope::server::detail

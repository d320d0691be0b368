// Mesh files and scene-relative paths (geometry_files.h): reading the file, choosing the reader by format,
// building the mesh, and naming the file and element in every message. The readers are mesh_file_gltf.cpp
// and mesh_file_obj.cpp; heightfields are heightfield_file.cpp.
#include "polytope/server/geometry_files.h"

#include "mesh_file_readers.h"
#include "polytope/server/regular_file.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <utility>

namespace polytope::server
{
namespace
{

std::string lowerExtension(const std::string& name)
{
    std::string extension = std::filesystem::path(name).extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return extension;
}

MeshFileResult meshFailure(const std::string& name, GeometryFileError error, const std::string& message)
{
    MeshFileResult result;
    result.error = error;
    result.message = printableExcerpt(name, 256) + ": " + message;
    return result;
}

/// Why the build dropped or refused a triangle, from its counts (the first reason that applies).
std::string degenerateReason(const physics::TriangleMeshDropCounts& counts, float minArea)
{
    if (counts.repeatedIndex > 0)
    {
        return "two corners are the same vertex";
    }
    if (counts.collinear > 0)
    {
        return "its corners are collinear or coincident";
    }
    return "its area is below " + detail::formatNumber(minArea) + " m^2";
}

MeshFileResult readAndBuild(std::string_view bytes, const std::string& name, const std::string& baseFolder,
                            const MeshFileOptions& options, MeshFileFormat format)
{
    detail::MeshArrays arrays;
    detail::ReadFailure failure;
    const bool read = format == MeshFileFormat::Obj
                          ? detail::readObj(bytes, options, arrays, failure)
                          : detail::readGltf(bytes, baseFolder, options, arrays, failure);
    if (!read)
    {
        return meshFailure(name, failure.error, failure.message);
    }
    if (arrays.indices.empty())
    {
        return meshFailure(name, GeometryFileError::NoGeometry,
                           format == MeshFileFormat::Obj
                               ? "no triangles (no faces)"
                               : "no triangles (no triangle primitive in the scene)");
    }
    MeshFileResult result;
    if (options.buildMesh)
    {
        physics::TriangleMeshBuildResult built =
            physics::buildTriangleMesh(arrays.vertices, arrays.indices, options.build);
        result.dropped = built.dropped;
        if (!built.ok())
        {
            const float minArea = options.build.minTriangleAreaSquareMeters;
            switch (built.error)
            {
            case physics::TriangleMeshError::DegenerateTriangle:
                return meshFailure(name, GeometryFileError::BuildFailed,
                                   detail::describeTriangle(arrays, built.offendingIndex) +
                                       ": degenerate triangle refused (" +
                                       degenerateReason(built.dropped, minArea) + ")");
            case physics::TriangleMeshError::NoTriangles:
                return meshFailure(name, GeometryFileError::NoGeometry,
                                   "no triangles left: all " + std::to_string(arrays.indices.size() / 3) +
                                       " were degenerate and dropped");
            default:
                return meshFailure(name, GeometryFileError::BuildFailed,
                                   std::string("the mesh builder refused it: ") +
                                       physics::toString(built.error) + " (" + built.message + ")");
            }
        }
        result.mesh = std::move(built.mesh);
        const physics::TriangleMeshDropCounts& d = result.dropped;
        if (d.total() > 0)
        {
            arrays.warnings.push_back("dropped " + std::to_string(d.total()) + " degenerate triangles (" +
                                      std::to_string(d.repeatedIndex) + " with a repeated corner, " +
                                      std::to_string(d.collinear) + " collinear, " +
                                      std::to_string(d.tooSmallArea) + " too small)");
        }
    }
    result.vertices = std::move(arrays.vertices);
    result.indices = std::move(arrays.indices);
    result.parts = std::move(arrays.parts);
    result.warnings = std::move(arrays.warnings);
    return result;
}

/// The format `options` ask for, or the one the name's extension says; false when neither says.
bool chooseFormat(const std::string& name, const MeshFileOptions& options, MeshFileFormat& format)
{
    format = options.format;
    if (format != MeshFileFormat::Auto)
    {
        return true;
    }
    const std::string extension = lowerExtension(name);
    if (extension == ".gltf" || extension == ".glb")
    {
        format = MeshFileFormat::Gltf;
        return true;
    }
    if (extension == ".obj")
    {
        format = MeshFileFormat::Obj;
        return true;
    }
    return false;
}

MeshFileResult unknownFormat(const std::string& name)
{
    return meshFailure(name, GeometryFileError::UnknownFormat,
                       "unknown extension '" + printableExcerpt(lowerExtension(name)) +
                           "' (a mesh file is .gltf, .glb or .obj)");
}

/// Runs `load`, turning any exception into a result: nothing leaves a loader.
template <class Load> MeshFileResult guarded(const std::string& name, Load&& load)
{
    try
    {
        return load();
    }
    catch (const std::bad_alloc&)
    {
        return meshFailure(name, GeometryFileError::TooLarge, "out of memory while reading");
    }
    catch (const std::exception& e)
    {
        return meshFailure(name, GeometryFileError::Malformed,
                           std::string("refused by the parser (") + printableExcerpt(e.what(), 200) + ")");
    }
    catch (...)
    {
        return meshFailure(name, GeometryFileError::Malformed, "refused by the parser (unknown exception)");
    }
}

} // namespace

namespace detail
{

std::string describeTriangle(const MeshArrays& arrays, std::uint32_t triangle)
{
    const auto part =
        std::upper_bound(arrays.parts.begin(), arrays.parts.end(), triangle,
                         [](std::uint32_t t, const MeshFilePart& p) { return t < p.firstTriangle; });
    const MeshFilePart* owner = part == arrays.parts.begin() ? nullptr : &*(part - 1);
    if (!arrays.faceLine.empty())
    {
        const auto face =
            std::upper_bound(arrays.faceFirstTriangle.begin(), arrays.faceFirstTriangle.end(), triangle);
        if (face != arrays.faceFirstTriangle.begin())
        {
            const std::size_t f = static_cast<std::size_t>(face - arrays.faceFirstTriangle.begin()) - 1;
            return "line " + std::to_string(arrays.faceLine[f]) +
                   (owner != nullptr ? " (" + owner->element + ")" : std::string());
        }
    }
    if (owner != nullptr)
    {
        return owner->element + ", triangle " + std::to_string(triangle - owner->firstTriangle);
    }
    return "triangle " + std::to_string(triangle);
}

std::string formatNumber(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

std::string formatPoint(double x, double y, double z)
{
    // Appended piece by piece: g++ 12 warns falsely (-Wrestrict, GCC bug 105651) on "(" + std::string.
    std::string out(1, '(');
    out += formatNumber(x);
    out += ", ";
    out += formatNumber(y);
    out += ", ";
    out += formatNumber(z);
    out += ')';
    return out;
}

} // namespace detail

const char* toString(GeometryFileError error)
{
    switch (error)
    {
    case GeometryFileError::None:
        return "None";
    case GeometryFileError::BadPath:
        return "BadPath";
    case GeometryFileError::CannotRead:
        return "CannotRead";
    case GeometryFileError::TooLarge:
        return "TooLarge";
    case GeometryFileError::UnknownFormat:
        return "UnknownFormat";
    case GeometryFileError::Malformed:
        return "Malformed";
    case GeometryFileError::Unsupported:
        return "Unsupported";
    case GeometryFileError::InvalidGeometry:
        return "InvalidGeometry";
    case GeometryFileError::TooManyTriangles:
        return "TooManyTriangles";
    case GeometryFileError::NoGeometry:
        return "NoGeometry";
    case GeometryFileError::BuildFailed:
        return "BuildFailed";
    }
    return "Unknown";
}

const MeshFilePart* MeshFileResult::partOf(std::uint32_t triangle) const
{
    const auto part =
        std::upper_bound(parts.begin(), parts.end(), triangle,
                         [](std::uint32_t t, const MeshFilePart& p) { return t < p.firstTriangle; });
    if (part == parts.begin())
    {
        return nullptr;
    }
    const MeshFilePart& owner = *(part - 1);
    return triangle - owner.firstTriangle < owner.triangleCount ? &owner : nullptr;
}

MeshFileResult loadMeshBytes(std::string_view bytes, const std::string& name, const std::string& baseFolder,
                             const MeshFileOptions& options)
{
    return guarded(name,
                   [&]
                   {
                       MeshFileFormat format = MeshFileFormat::Auto;
                       if (!chooseFormat(name, options, format))
                       {
                           return unknownFormat(name);
                       }
                       if (bytes.size() > options.maxFileBytes)
                       {
                           return meshFailure(name, GeometryFileError::TooLarge,
                                              "larger than " + std::to_string(options.maxFileBytes) +
                                                  " bytes (" + std::to_string(bytes.size()) + ")");
                       }
                       return readAndBuild(bytes, name, baseFolder, options, format);
                   });
}

MeshFileResult loadMeshFile(const std::string& path, const MeshFileOptions& options)
{
    return guarded(
        path,
        [&]
        {
            if (path.empty())
            {
                return meshFailure(path, GeometryFileError::BadPath, "empty path");
            }
            MeshFileFormat format = MeshFileFormat::Auto;
            if (!chooseFormat(path, options, format))
            {
                return unknownFormat(path);
            }
            std::string bytes;
            std::string error;
            const FileStatus status =
                readRegularFile(path, {options.maxFileBytes, options.followSymlinks}, bytes, error);
            if (status != FileStatus::Ok)
            {
                return meshFailure(path,
                                   status == FileStatus::TooLarge ? GeometryFileError::TooLarge
                                                                  : GeometryFileError::CannotRead,
                                   error);
            }
            const std::filesystem::path folder = std::filesystem::path(path).parent_path();
            return readAndBuild(bytes, path, folder.empty() ? std::string(1, '.') : folder.string(), options,
                                format);
        });
}

bool resolveScenePath(const std::string& sceneFilePath, const std::string& named, std::string& resolved,
                      std::string& error, const ScenePathRules& rules)
{
    resolved.clear();
    try
    {
        if (named.empty())
        {
            error = "empty path";
            return false;
        }
        if (named.find('\0') != std::string::npos)
        {
            error = "a NUL byte in the path";
            return false;
        }
        const std::filesystem::path path(named);
        if (path.is_absolute())
        {
            if (!rules.allowAbsolute)
            {
                error = "absolute path not allowed here: " + printableExcerpt(named, 200);
                return false;
            }
            resolved = path.lexically_normal().string();
            return true;
        }
        const std::filesystem::path relative = path.lexically_normal();
        if (!rules.allowOutsideSceneFolder && !relative.empty() && *relative.begin() == "..")
        {
            error = "leads out of the scene file's folder: " + printableExcerpt(named, 200);
            return false;
        }
        const std::filesystem::path folder = std::filesystem::path(sceneFilePath).parent_path();
        resolved = (folder / relative).lexically_normal().string();
        return true;
    }
    catch (const std::exception& e) // std::bad_alloc
    {
        error = std::string("cannot resolve the path (") + e.what() + ")";
        return false;
    }
}

} // namespace polytope::server

// Scene files' geometry (scene_file.h): the meshes and heightfields a scene names, read by the geometry file
// readers (geometry_files.h) from the scene file's folder, each entry once however many bodies name it. A
// mesh with a scale is read as arrays, scaled, and built here; everything else is built by the readers.
// Messages name the field and the file as the scene names it, never the folder it was found in.
#include "polytope/server/scene_file.h"

#include "scene_file_detail.h"

#include "polytope/server/geometry_files.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <utility>

namespace polytope::server
{

namespace
{

using detail::fail;
using detail::kMaxQuotedBytes;
using detail::number;
using physics::Vec3;

/// `message` from a geometry loader, which starts with the path it was given, starting with the path as the
/// scene names it instead (the scene file's folder is the operator's business, not the message's).
std::string asNamed(const std::string& message, const std::string& resolved, const std::string& named)
{
    const std::string prefix = printableExcerpt(resolved, 256) + ": ";
    const std::string rest = message.starts_with(prefix) ? message.substr(prefix.size()) : message;
    return printableExcerpt(named, kMaxQuotedBytes) + ": " + rest;
}

bool loadMeshGeometry(SceneGeometry& geometry, const std::string& path, const SceneGeometryRules& rules,
                      std::vector<std::string>& warnings, std::string& error)
{
    MeshFileOptions options;
    options.maxFileBytes = rules.maxMeshFileBytes;
    options.maxTriangles = rules.maxMeshTriangles;
    options.followSymlinks = rules.followSymlinks;
    options.confineExternalFiles = true;
    const bool scaled = geometry.scale != Vec3{1.0f, 1.0f, 1.0f};
    options.buildMesh = !scaled; // a scaled mesh is built below, from the scaled vertices
    MeshFileResult loaded = loadMeshFile(path, options);
    if (!loaded.ok())
    {
        return fail(error, geometry.field, asNamed(loaded.message, path, geometry.file));
    }
    for (const std::string& warning : loaded.warnings)
    {
        warnings.push_back(geometry.field + ": " + asNamed(warning, path, geometry.file));
    }
    if (!scaled)
    {
        geometry.mesh = std::make_shared<const physics::TriangleMesh>(std::move(loaded.mesh));
        return true;
    }
    const std::string named = printableExcerpt(geometry.file, kMaxQuotedBytes);
    for (std::size_t i = 0; i < loaded.vertices.size(); ++i)
    {
        Vec3& v = loaded.vertices[i];
        v = physics::mulPerElem(v, geometry.scale);
        const float reach = std::max({std::fabs(v.x), std::fabs(v.y), std::fabs(v.z)});
        if (!(reach <= options.maxCoordinateMeters))
        {
            return fail(error, geometry.field,
                        named + ": vertex " + std::to_string(i) + " lies beyond " +
                            number(options.maxCoordinateMeters) + " m once scaled");
        }
    }
    physics::TriangleMeshBuildResult built =
        physics::buildTriangleMesh(loaded.vertices, loaded.indices, options.build);
    if (!built.ok())
    {
        return fail(error, geometry.field,
                    named + ": once scaled, the mesh builder refused it: " + physics::toString(built.error) +
                        " (" + built.message + ")");
    }
    if (built.dropped.total() > 0)
    {
        warnings.push_back(geometry.field + ": " + named + ": dropped " +
                           std::to_string(built.dropped.total()) + " degenerate triangles once scaled");
    }
    geometry.mesh = std::make_shared<const physics::TriangleMesh>(std::move(built.mesh));
    return true;
}

bool loadHeightFieldGeometry(SceneGeometry& geometry, const std::string& path,
                             const SceneGeometryRules& rules, std::string& error)
{
    HeightFieldFileOptions options;
    options.rawSamplesX = geometry.rawSamplesX;
    options.rawSamplesZ = geometry.rawSamplesZ;
    options.cellSizeXMeters = geometry.cellSizeX;
    options.cellSizeZMeters = geometry.cellSizeZ;
    options.heightScale = geometry.heightScale;
    options.heightOffset = geometry.heightOffset;
    options.holeSample = geometry.holeSample;
    options.maxFileBytes = rules.maxHeightFieldFileBytes;
    options.followSymlinks = rules.followSymlinks;
    HeightFieldFileResult loaded = loadHeightFieldFile(path, options);
    if (!loaded.ok())
    {
        return fail(error, geometry.field, asNamed(loaded.message, path, geometry.file));
    }
    geometry.heightField = std::make_shared<const physics::HeightField>(std::move(loaded.heightField));
    return true;
}

} // namespace

bool SceneDescription::geometryLoaded() const
{
    return std::all_of(geometry.begin(), geometry.end(), [](const SceneGeometry& g) { return g.loaded(); });
}

bool loadSceneGeometry(SceneDescription& scene, const std::string& sceneFilePath,
                       const SceneGeometryRules& rules, std::string& error)
{
    try
    {
        for (SceneGeometry& geometry : scene.geometry)
        {
            if (geometry.loaded())
            {
                continue;
            }
            std::string path;
            std::string why;
            if (!resolveScenePath(sceneFilePath, geometry.file, path, why, ScenePathRules{false, false}))
            {
                return fail(error, geometry.field, why);
            }
            const bool loaded = geometry.type == physics::ShapeType::Mesh
                                    ? loadMeshGeometry(geometry, path, rules, scene.warnings, error)
                                    : loadHeightFieldGeometry(geometry, path, rules, error);
            if (!loaded)
            {
                return false;
            }
        }
        return true;
    }
    catch (const std::exception& e) // std::bad_alloc
    {
        error = std::string("scene: geometry could not be loaded: ") + e.what();
        return false;
    }
}

} // namespace polytope::server

// libFuzzer target: geometry files (geometry_files.h) from memory, as loadMeshFile and loadHeightFieldFile
// read them after the file is in memory. The first byte chooses the reader: 0 glTF (JSON or GLB by the
// bytes), 1 OBJ, 2 PNG heightfield (8-bit allowed), 3 raw heightfield whose sides are the next two bytes. No
// external file is ever read (no base folder). A loaded mesh must be consistent: whole triangles, indices in
// range, finite vertices within the bound, parts covering the triangles in order; a refusal must say why.
#include "polytope/server/geometry_files.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace
{

void checkMesh(const polytope::server::MeshFileResult& result,
               const polytope::server::MeshFileOptions& options)
{
    if (!result.ok())
    {
        if (result.message.empty() || !result.vertices.empty() || !result.indices.empty())
        {
            std::abort();
        }
        return;
    }
    if (result.indices.empty() || result.indices.size() % 3 != 0 ||
        result.triangleCount() > options.maxTriangles)
    {
        std::abort();
    }
    for (const std::uint32_t index : result.indices)
    {
        if (index >= result.vertices.size())
        {
            std::abort();
        }
    }
    for (const polytope::physics::Vec3& v : result.vertices)
    {
        if (!(std::fabs(v.x) <= options.maxCoordinateMeters &&
              std::fabs(v.y) <= options.maxCoordinateMeters && std::fabs(v.z) <= options.maxCoordinateMeters))
        {
            std::abort();
        }
    }
    std::uint32_t next = 0;
    for (const polytope::server::MeshFilePart& part : result.parts)
    {
        if (part.firstTriangle != next || part.triangleCount == 0)
        {
            std::abort();
        }
        next += part.triangleCount;
    }
    if (next != result.triangleCount() || result.mesh.triangleCount() + result.dropped.total() != next)
    {
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope::server;
    if (size < 1)
    {
        return 0;
    }
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 4)
    {
    case 0:
    case 1:
    {
        MeshFileOptions options;
        options.maxTriangles = 100000;
        const MeshFileResult result =
            loadMeshBytes(bytes, data[0] % 4 == 0 ? "fuzz.glb" : "fuzz.obj", "", options);
        checkMesh(result, options);
        break;
    }
    default:
    {
        HeightFieldFileOptions options;
        options.allowEightBitPng = true;
        options.holeSample = 0;
        std::string_view samples = bytes;
        std::string name = "fuzz.png";
        if (data[0] % 4 == 3)
        {
            if (bytes.size() < 2)
            {
                return 0;
            }
            options.rawSamplesX = static_cast<std::uint8_t>(bytes[0]);
            options.rawSamplesZ = static_cast<std::uint8_t>(bytes[1]);
            samples = bytes.substr(2);
            name = "fuzz.raw";
        }
        const HeightFieldFileResult result = loadHeightFieldBytes(samples, name, options);
        if (result.ok() == result.heightField.empty() || (!result.ok() && result.message.empty()) ||
            (result.ok() && result.samples.size() != std::size_t(result.sampleCountX) * result.sampleCountZ))
        {
            std::abort();
        }
        break;
    }
    }
    return 0;
}

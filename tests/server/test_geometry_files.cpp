// Geometry files (geometry_files.h): small glTF, GLB, OBJ, PNG and raw files written at test time load into
// exactly the expected triangles and samples (node transforms applied, quads split, holes marked); each kind
// of broken or unsupported input is refused with a message naming the file and the element.
#include "polytope/server/geometry_files.h"
#include "support/temp_files.h"

#include <catch2/catch.hpp>
#include <stb_image_write.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace
{

using namespace polytope;
using physics::Vec3;
using polytope::test::TempDirectory;
using polytope::test::writeFile;

constexpr int kUnsignedByte = 5121;
constexpr int kUnsignedShort = 5123;
constexpr int kUnsignedInt = 5125;
constexpr int kByte = 5120;

/// A glTF document under construction: one binary buffer, its views and accessors.
struct GltfAsset
{
    std::string bin;
    std::vector<std::string> views;
    std::vector<std::string> accessors;

    int addView(const std::string& bytes)
    {
        while (bin.size() % 4 != 0)
        {
            bin.push_back('\0');
        }
        views.push_back(R"({"buffer": 0, "byteOffset": )" + std::to_string(bin.size()) +
                        R"(, "byteLength": )" + std::to_string(bytes.size()) + "}");
        bin += bytes;
        return static_cast<int>(views.size()) - 1;
    }

    int addPositions(const std::vector<Vec3>& points)
    {
        std::string bytes;
        for (const Vec3& p : points)
        {
            const float xyz[3] = {p.x, p.y, p.z};
            bytes.append(reinterpret_cast<const char*>(xyz), sizeof xyz);
        }
        const int view = addView(bytes);
        accessors.push_back(R"({"bufferView": )" + std::to_string(view) +
                            R"(, "componentType": 5126, "count": )" + std::to_string(points.size()) +
                            R"(, "type": "VEC3"})");
        return static_cast<int>(accessors.size()) - 1;
    }

    int addIndices(const std::vector<std::int64_t>& indices, int componentType)
    {
        const std::size_t size = componentType == kUnsignedInt ? 4 : componentType == kUnsignedShort ? 2 : 1;
        std::string bytes;
        for (const std::int64_t index : indices)
        {
            const auto value = static_cast<std::uint32_t>(index);
            bytes.append(reinterpret_cast<const char*>(&value), size); // little-endian
        }
        const int view = addView(bytes);
        accessors.push_back(R"({"bufferView": )" + std::to_string(view) + R"(, "componentType": )" +
                            std::to_string(componentType) + R"(, "count": )" +
                            std::to_string(indices.size()) + R"(, "type": "SCALAR"})");
        return static_cast<int>(accessors.size()) - 1;
    }

    /// The JSON document; `bufferUri` empty for a GLB's own buffer.
    std::string json(const std::string& meshes, const std::string& nodes, const std::string& scenes,
                     const std::string& bufferUri) const
    {
        const auto list = [](const std::vector<std::string>& items)
        {
            std::string out = "[";
            for (std::size_t i = 0; i < items.size(); ++i)
            {
                out += (i == 0 ? "" : ", ") + items[i];
            }
            return out + "]";
        };
        const std::string uri = bufferUri.empty() ? "" : R"("uri": ")" + bufferUri + R"(", )";
        return R"({"asset": {"version": "2.0"}, "buffers": [{)" + uri + R"("byteLength": )" +
               std::to_string(bin.size()) + "}], \"bufferViews\": " + list(views) +
               ", \"accessors\": " + list(accessors) + ", \"meshes\": " + meshes + ", \"nodes\": " + nodes +
               scenes + "}";
    }
};

void append32(std::string& out, std::uint32_t value)
{
    out.append(reinterpret_cast<const char*>(&value), 4);
}

/// A GLB container (glTF 2.0, section 4.4) of `json` and `bin`.
std::string glb(std::string json, std::string bin)
{
    while (json.size() % 4 != 0)
    {
        json.push_back(' ');
    }
    while (bin.size() % 4 != 0)
    {
        bin.push_back('\0');
    }
    std::string out = "glTF";
    append32(out, 2);
    append32(out, static_cast<std::uint32_t>(12 + 8 + json.size() + 8 + bin.size()));
    append32(out, static_cast<std::uint32_t>(json.size()));
    append32(out, 0x4E4F534A); // "JSON"
    out += json;
    append32(out, static_cast<std::uint32_t>(bin.size()));
    append32(out, 0x004E4942); // "BIN\0"
    out += bin;
    return out;
}

const std::vector<Vec3> kFloor{{0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {0, 0, 1}};
const std::vector<std::int64_t> kFloorIndices{0, 2, 1, 0, 3, 2}; // counter-clockwise seen from +y
const std::vector<Vec3> kWedge{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};

/// A level with two meshes under three nodes: "Floor" (indexed, unsigned short) under a scaled node inside a
/// translated one, "Wedge" (a non-indexed primitive and a triangle strip with unsigned byte indices) under a
/// node with a matrix (90 degrees about y, then up 5), and a node outside the scene that must be left out.
struct Level
{
    GltfAsset asset;
    std::string meshes, nodes, scenes;

    Level()
    {
        const int floor = asset.addPositions(kFloor);
        const int floorIndices = asset.addIndices(kFloorIndices, kUnsignedShort);
        const int wedge = asset.addPositions(kWedge);
        const int strip = asset.addIndices({0, 3, 1, 2}, kUnsignedByte);
        meshes = R"([{"name": "Floor", "primitives": [{"attributes": {"POSITION": )" + std::to_string(floor) +
                 R"(}, "indices": )" + std::to_string(floorIndices) + R"(}]},
                  {"name": "Wedge", "primitives": [{"attributes": {"POSITION": )" +
                 std::to_string(wedge) + R"(}},
                  {"attributes": {"POSITION": )" +
                 std::to_string(floor) + R"(}, "indices": )" + std::to_string(strip) + R"(, "mode": 5}]}])";
        nodes = R"([{"name": "Root", "translation": [10, 0, 0], "children": [1]},
                  {"name": "FloorNode", "mesh": 0, "scale": [2, 1, 3]},
                  {"name": "WedgeNode", "mesh": 1, "matrix": [0, 0, -1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 5, 0, 1]},
                  {"name": "Unused", "mesh": 0, "translation": [100, 0, 0]}])";
        scenes = R"(, "scene": 0, "scenes": [{"nodes": [0, 2]}])";
    }
};

using Triangle = std::array<Vec3, 3>;

std::vector<Triangle> trianglesOf(const server::MeshFileResult& result)
{
    std::vector<Triangle> out;
    for (std::size_t t = 0; t + 2 < result.indices.size(); t += 3)
    {
        out.push_back({result.vertices.at(result.indices[t]), result.vertices.at(result.indices[t + 1]),
                       result.vertices.at(result.indices[t + 2])});
    }
    return out;
}

bool same(const Vec3& a, const Vec3& b)
{
    return a.x == b.x && a.y == b.y && a.z == b.z;
}

void checkTriangles(const server::MeshFileResult& result, const std::vector<Triangle>& expected)
{
    const std::vector<Triangle> got = trianglesOf(result);
    REQUIRE(got.size() == expected.size());
    for (std::size_t t = 0; t < got.size(); ++t)
    {
        INFO("triangle " << t);
        for (int k = 0; k < 3; ++k)
        {
            INFO("corner " << k << ": got (" << got[t][k].x << ", " << got[t][k].y << ", " << got[t][k].z
                           << ")");
            CHECK(same(got[t][k], expected[t][k]));
        }
    }
}

/// The level's triangles in the scene's frame, worked out by hand.
const std::vector<Triangle> kLevelTriangles{
    // Floor: scale (2, 1, 3), then + (10, 0, 0).
    {Vec3{10, 0, 0}, Vec3{12, 0, 3}, Vec3{12, 0, 0}},
    {Vec3{10, 0, 0}, Vec3{10, 0, 3}, Vec3{12, 0, 3}},
    // Wedge, primitive 0: (x, y, z) -> (z, y + 5, -x).
    {Vec3{0, 5, 0}, Vec3{0, 5, -1}, Vec3{0, 6, 0}},
    // Wedge, primitive 1: the strip 0 3 1 2 over the floor's points, same transform.
    {Vec3{0, 5, 0}, Vec3{1, 5, 0}, Vec3{0, 5, -1}},
    {Vec3{1, 5, 0}, Vec3{1, 5, -1}, Vec3{0, 5, -1}},
};

void checkLevelParts(const server::MeshFileResult& result)
{
    REQUIRE(result.parts.size() == 3);
    CHECK(result.parts[0].element == "node 'FloorNode' mesh 'Floor' primitive 0");
    CHECK(result.parts[0].firstTriangle == 0);
    CHECK(result.parts[0].triangleCount == 2);
    CHECK(result.parts[1].element == "node 'WedgeNode' mesh 'Wedge' primitive 0");
    CHECK(result.parts[1].firstTriangle == 2);
    CHECK(result.parts[2].element == "node 'WedgeNode' mesh 'Wedge' primitive 1");
    CHECK(result.parts[2].triangleCount == 2);
    CHECK(result.partOf(4) == &result.parts[2]);
    CHECK(result.partOf(5) == nullptr);
}

/// Writes `json` and `bin` as level.gltf and level.bin in `dir`, returns the .gltf's path.
std::string writeGltf(const TempDirectory& dir, const std::string& json, const std::string& bin)
{
    writeFile(dir / "level.bin", bin);
    writeFile(dir / "level.gltf", json);
    return dir / "level.gltf";
}

/// A one-mesh level ("Floor", one primitive, the given POSITION points, indices and mode) as a GLB.
std::string floorGlb(const std::vector<Vec3>& points, const std::vector<std::int64_t>& indices,
                     int componentType = kUnsignedShort, int mode = 4)
{
    GltfAsset asset;
    const int positions = asset.addPositions(points);
    const int index = asset.addIndices(indices, componentType);
    const std::string meshes = R"([{"name": "Floor", "primitives": [{"attributes": {"POSITION": )" +
                               std::to_string(positions) + R"(}, "indices": )" + std::to_string(index) +
                               R"(, "mode": )" + std::to_string(mode) + "}]}]";
    return glb(asset.json(meshes, R"([{"mesh": 0}])", R"(, "scenes": [{"nodes": [0]}])", ""), asset.bin);
}

server::MeshFileResult loadFile(const TempDirectory& dir, const std::string& name, const std::string& bytes,
                                const server::MeshFileOptions& options = {})
{
    writeFile(dir / name, bytes);
    return server::loadMeshFile(dir / name, options);
}

/// Expects `result` refused with `error` and a message that is exactly `path` + ": " + `message`.
template <class Result>
void checkRefused(const Result& result, server::GeometryFileError error, const std::string& path,
                  const std::string& message)
{
    INFO(result.message);
    CHECK_FALSE(result.ok());
    CHECK(server::toString(result.error) == std::string(server::toString(error)));
    CHECK(result.message == path + ": " + message);
}

/// Expects `result` refused with `error` and a message that starts with `path` and holds `part`.
template <class Result>
void checkRefusedWith(const Result& result, server::GeometryFileError error, const std::string& path,
                      const std::string& part)
{
    INFO(result.message);
    CHECK_FALSE(result.ok());
    CHECK(server::toString(result.error) == std::string(server::toString(error)));
    CHECK(result.message.rfind(path + ": ", 0) == 0);
    CHECK(result.message.find(part) != std::string::npos);
}

// ---- PNG writing: stb_image_write for 8-bit files; for 16-bit, its 8-bit grey+alpha writer (two bytes per
// pixel, filtered and compressed exactly as 16-bit grey would be) with the header patched to 16-bit grey.

std::uint32_t crc32(const unsigned char* data, std::size_t size)
{
    std::uint32_t crc = 0xffffffffu;
    for (std::size_t i = 0; i < size; ++i)
    {
        crc ^= data[i];
        for (int k = 0; k < 8; ++k)
        {
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

std::string pngBytes(int width, int height, int channels, const unsigned char* pixels)
{
    std::string out;
    stbi_write_png_to_func(
        [](void* context, void* data, int size)
        { static_cast<std::string*>(context)->append(static_cast<const char*>(data), size); },
        &out, width, height, channels, pixels, width * channels);
    return out;
}

std::string png16(int width, int height, const std::vector<std::uint16_t>& samples)
{
    std::vector<unsigned char> bigEndian;
    for (const std::uint16_t s : samples)
    {
        bigEndian.push_back(static_cast<unsigned char>(s >> 8));
        bigEndian.push_back(static_cast<unsigned char>(s & 0xff));
    }
    std::string png = pngBytes(width, height, 2, bigEndian.data());
    REQUIRE(png.size() > 33);
    REQUIRE(png.compare(12, 4, "IHDR") == 0);
    png[24] = 16; // bit depth
    png[25] = 0;  // colour type: grey
    const std::uint32_t crc = crc32(reinterpret_cast<const unsigned char*>(png.data()) + 12, 17);
    for (int i = 0; i < 4; ++i)
    {
        png[29 + i] = static_cast<char>(crc >> (24 - 8 * i));
    }
    return png;
}

} // namespace

TEST_CASE("a glTF file with an external buffer loads with node transforms applied", "[geometry_files]")
{
    TempDirectory dir("geometry");
    Level level;
    const std::string path = writeGltf(
        dir, level.asset.json(level.meshes, level.nodes, level.scenes, "level.bin"), level.asset.bin);
    const server::MeshFileResult result = server::loadMeshFile(path);
    INFO(result.message);
    REQUIRE(result.ok());
    CHECK(result.message.empty());
    CHECK(result.vertexCount() == 11);
    CHECK(result.triangleCount() == 5);
    checkTriangles(result, kLevelTriangles);
    checkLevelParts(result);
    CHECK(result.mesh.triangleCount() == 5);
    CHECK(result.dropped.total() == 0);
    CHECK(result.warnings.empty());
}

TEST_CASE("a GLB file loads the same triangles", "[geometry_files]")
{
    TempDirectory dir("geometry");
    Level level;
    const server::MeshFileResult result =
        loadFile(dir, "level.glb",
                 glb(level.asset.json(level.meshes, level.nodes, level.scenes, ""), level.asset.bin));
    INFO(result.message);
    REQUIRE(result.ok());
    checkTriangles(result, kLevelTriangles);
    checkLevelParts(result);
    CHECK(result.mesh.triangleCount() == 5);
}

TEST_CASE("glTF indices of every integer type, and none, give the same triangles", "[geometry_files]")
{
    TempDirectory dir("geometry");
    const std::vector<Triangle> expected{{kFloor[0], kFloor[2], kFloor[1]},
                                         {kFloor[0], kFloor[3], kFloor[2]}};
    for (const int type : {kUnsignedByte, kUnsignedShort, kUnsignedInt, kByte})
    {
        INFO("componentType " << type);
        const server::MeshFileResult result =
            loadFile(dir, "floor.glb", floorGlb(kFloor, kFloorIndices, type));
        INFO(result.message);
        REQUIRE(result.ok());
        checkTriangles(result, expected);
    }
    // Non-indexed: the six corners as vertices of their own.
    GltfAsset asset;
    std::vector<Vec3> corners;
    for (const std::int64_t i : kFloorIndices)
    {
        corners.push_back(kFloor[static_cast<std::size_t>(i)]);
    }
    const int positions = asset.addPositions(corners);
    const std::string meshes =
        R"([{"primitives": [{"attributes": {"POSITION": )" + std::to_string(positions) + "}}]}]";
    const server::MeshFileResult result =
        loadFile(dir, "soup.glb", glb(asset.json(meshes, R"([{"mesh": 0}])", "", ""), asset.bin));
    INFO(result.message);
    REQUIRE(result.ok()); // no scene: the root nodes are used
    checkTriangles(result, expected);
    REQUIRE(result.parts.size() == 1);
    CHECK(result.parts[0].element == "node 0 mesh 0 primitive 0");
}

TEST_CASE("a glTF triangle fan is split as the specification says", "[geometry_files]")
{
    TempDirectory dir("geometry");
    const server::MeshFileResult result =
        loadFile(dir, "fan.glb", floorGlb(kFloor, {0, 1, 2, 3}, kUnsignedInt, 6));
    INFO(result.message);
    REQUIRE(result.ok());
    // Triangle i is (p_(i + 1), p_(i + 2), p_0).
    checkTriangles(result, {{kFloor[1], kFloor[2], kFloor[0]}, {kFloor[2], kFloor[3], kFloor[0]}});
}

TEST_CASE("a mirroring glTF node transform keeps triangles facing their way", "[geometry_files]")
{
    TempDirectory dir("geometry");
    GltfAsset asset;
    const int positions = asset.addPositions(kFloor);
    const int indices = asset.addIndices(kFloorIndices, kUnsignedShort);
    const std::string meshes = R"([{"primitives": [{"attributes": {"POSITION": )" +
                               std::to_string(positions) + R"(}, "indices": )" + std::to_string(indices) +
                               "}]}]";
    const server::MeshFileResult result =
        loadFile(dir, "mirror.glb",
                 glb(asset.json(meshes, R"([{"mesh": 0, "scale": [-1, 1, 1]}])",
                                R"(, "scenes": [{"nodes": [0]}])", ""),
                     asset.bin));
    INFO(result.message);
    REQUIRE(result.ok());
    // Corners mirrored in x, and b and c swapped: still counter-clockwise seen from +y.
    checkTriangles(result, {{Vec3{0, 0, 0}, Vec3{-1, 0, 0}, Vec3{-1, 0, 1}},
                            {Vec3{0, 0, 0}, Vec3{-1, 0, 1}, Vec3{0, 0, 1}}});
}

TEST_CASE("broken and unsupported glTF files are refused naming the element", "[geometry_files]")
{
    using server::GeometryFileError;
    TempDirectory dir("geometry");
    const std::string glbPath = dir / "level.glb";

    SECTION("a truncated GLB")
    {
        const std::string whole = floorGlb(kFloor, kFloorIndices);
        checkRefused(loadFile(dir, "level.glb", whole.substr(0, 100)), GeometryFileError::Malformed, glbPath,
                     "binary glTF: truncated (the header says " + std::to_string(whole.size()) +
                         " bytes, the file has 100)");
        checkRefusedWith(loadFile(dir, "level.glb", whole.substr(0, 10)), GeometryFileError::Malformed,
                         glbPath, "binary glTF: ");
    }
    SECTION("a JSON syntax error")
    {
        writeFile(dir / "level.gltf", R"({"asset": {"version": "2.0"}, "meshes": [}")");
        checkRefusedWith(
            server::loadMeshFile(dir / "level.gltf"), GeometryFileError::Malformed, dir / "level.gltf",
            "glTF: [json.exception.parse_error.101] parse error at line 1, column 42: syntax error");
    }
    SECTION("an index out of range")
    {
        checkRefused(loadFile(dir, "level.glb", floorGlb(kFloor, {0, 2, 1, 0, 7, 2})),
                     GeometryFileError::InvalidGeometry, glbPath,
                     "mesh 'Floor' primitive 0: index 7 out of range (4 vertices)");
        checkRefused(loadFile(dir, "level.glb", floorGlb(kFloor, {0, 2, 1, 0, -1, 2}, kByte)),
                     GeometryFileError::InvalidGeometry, glbPath,
                     "mesh 'Floor' primitive 0: index -1 out of range (4 vertices)");
    }
    SECTION("a NaN vertex")
    {
        std::vector<Vec3> points = kFloor;
        points[2].y = std::numeric_limits<float>::quiet_NaN();
        checkRefused(loadFile(dir, "level.glb", floorGlb(points, kFloorIndices)),
                     GeometryFileError::InvalidGeometry, glbPath,
                     "mesh 'Floor' primitive 0: vertex 2 is not finite (1, nan, 1)");
    }
    SECTION("a vertex beyond the coordinate bound after the node transforms")
    {
        server::MeshFileOptions options;
        options.maxCoordinateMeters = 0.5f;
        checkRefused(loadFile(dir, "level.glb", floorGlb(kFloor, kFloorIndices), options),
                     GeometryFileError::InvalidGeometry, glbPath,
                     "node 0 mesh 'Floor' primitive 0: vertex 1 lies at (1, 0, 0) after the node transforms, "
                     "beyond 0.5 m");
    }
    SECTION("points and lines primitives")
    {
        checkRefused(loadFile(dir, "level.glb", floorGlb(kFloor, kFloorIndices, kUnsignedShort, 0)),
                     GeometryFileError::Unsupported, glbPath,
                     "mesh 'Floor' primitive 0: mode POINTS is not triangles (TRIANGLES, TRIANGLE_STRIP or "
                     "TRIANGLE_FAN)");
        checkRefused(loadFile(dir, "level.glb", floorGlb(kFloor, kFloorIndices, kUnsignedShort, 1)),
                     GeometryFileError::Unsupported, glbPath,
                     "mesh 'Floor' primitive 0: mode LINES is not triangles (TRIANGLES, TRIANGLE_STRIP or "
                     "TRIANGLE_FAN)");
    }
    SECTION("an accessor that runs past its buffer view")
    {
        std::string bytes = floorGlb(kFloor, kFloorIndices);
        const std::string count = R"("count": 6)"; // the index accessor's
        const std::size_t at = bytes.find(count);
        REQUIRE(at != std::string::npos);
        bytes.replace(at, count.size(), R"("count": 9)");
        checkRefused(
            loadFile(dir, "level.glb", bytes), GeometryFileError::Malformed, glbPath,
            "mesh 'Floor' primitive 0: indices accessor 1: 9 elements from byte 0 do not fit in bufferView 1 "
            "(12 bytes)");
    }
    SECTION("a node hierarchy with a cycle")
    {
        Level level;
        const std::string nodes = R"([{"name": "A", "children": [1]}, {"name": "B", "children": [0]}])";
        checkRefused(
            loadFile(dir, "level.glb",
                     glb(level.asset.json(level.meshes, nodes, R"(, "scenes": [{"nodes": [0]}])", ""),
                         level.asset.bin)),
            GeometryFileError::Malformed, glbPath,
            "node 'A': reached twice (a node has at most one parent, and no cycles are allowed)");
    }
    SECTION("a required extension that changes geometry")
    {
        Level level;
        const std::string json = level.asset.json(level.meshes, level.nodes, level.scenes, "");
        checkRefused(
            loadFile(dir, "level.glb",
                     glb(R"({"extensionsRequired": ["KHR_draco_mesh_compression"], )" + json.substr(1),
                         level.asset.bin)),
            GeometryFileError::Unsupported, glbPath,
            "requires extension KHR_draco_mesh_compression, which this loader does not read");
        const server::MeshFileResult looks = loadFile(
            dir, "level.glb",
            glb(R"({"extensionsRequired": ["KHR_materials_unlit"], )" + json.substr(1), level.asset.bin));
        INFO(looks.message);
        CHECK(looks.ok());
    }
    SECTION("an external buffer outside the glTF's folder")
    {
        Level level;
        writeFile(dir / "outside.bin", level.asset.bin);
        std::filesystem::create_directories(dir.path() / "levels");
        const std::string path = (dir.path() / "levels" / "level.gltf").string();
        writeFile(path, level.asset.json(level.meshes, level.nodes, level.scenes, "../outside.bin"));
        const server::MeshFileResult refused = server::loadMeshFile(path);
        checkRefusedWith(refused, GeometryFileError::Malformed, path, "outside the glTF file's folder");
        server::MeshFileOptions options;
        options.confineExternalFiles = false;
        const server::MeshFileResult allowed = server::loadMeshFile(path, options);
        INFO(allowed.message);
        CHECK(allowed.ok());
    }
    SECTION("a missing file")
    {
        checkRefused(server::loadMeshFile(dir / "missing.glb"), GeometryFileError::CannotRead,
                     dir / "missing.glb", "cannot be opened (No such file or directory)");
    }
    SECTION("a file over the byte cap, and more triangles than allowed")
    {
        server::MeshFileOptions options;
        options.maxFileBytes = 100;
        checkRefusedWith(loadFile(dir, "level.glb", floorGlb(kFloor, kFloorIndices), options),
                         GeometryFileError::TooLarge, glbPath, "larger than 100 bytes");
        options = {};
        options.maxTriangles = 1;
        checkRefused(loadFile(dir, "level.glb", floorGlb(kFloor, kFloorIndices), options),
                     GeometryFileError::TooManyTriangles, glbPath,
                     "more than 1 triangles (node 0 mesh 'Floor' primitive 0 brings 2 to the 0 before it)");
    }
    SECTION("an unknown extension")
    {
        checkRefused(server::loadMeshFile(dir / "level.stl"), GeometryFileError::UnknownFormat,
                     dir / "level.stl", "unknown extension '.stl' (a mesh file is .gltf, .glb or .obj)");
    }
}

TEST_CASE("an OBJ file with quads and comments loads split into triangles", "[geometry_files]")
{
    TempDirectory dir("geometry");
    const std::string obj = "# level: a floor quad, a dart-shaped quad and a triangle\n"
                            "mtllib missing.mtl\n"
                            "o Floor\n"
                            "v 0 0 0\n"
                            "v 4 0 0\n"
                            "v 4 0 4\n"
                            "v 0 0 4\n"
                            "vn 0 1 0\n"
                            "f 1//1 4//1 3//1 2//1\n"
                            "# concave: only the long diagonal b-d keeps both halves facing up\n"
                            "o Dart\n"
                            "v 0 1 0\n"
                            "v 2 1 6\n"
                            "v 4 1 0\n"
                            "v 2 1 0.5\n"
                            "f -4 -3 -2 -1\n"
                            "\n"
                            "o Tri\r\n"
                            "v 0 2 0\r\n"
                            "v 1 2 0\r\n"
                            "v 0 2 1\r\n"
                            "vt 0 0\r\n"
                            "f 9/1 11/1 10/1\r\n"
                            "l 1 2\n";
    const server::MeshFileResult result = loadFile(dir, "arena.obj", obj);
    INFO(result.message);
    REQUIRE(result.ok());
    CHECK(result.vertexCount() == 11);
    CHECK(result.triangleCount() == 5);
    const Vec3 a{0, 1, 0}, b{2, 1, 6}, c{4, 1, 0}, d{2, 1, 0.5f};
    checkTriangles(result, {// The square: both diagonals are as long and keep both halves up: the first one.
                            {Vec3{0, 0, 0}, Vec3{0, 0, 4}, Vec3{4, 0, 4}},
                            {Vec3{0, 0, 0}, Vec3{4, 0, 4}, Vec3{4, 0, 0}},
                            {a, b, d},
                            {b, c, d},
                            {Vec3{0, 2, 0}, Vec3{0, 2, 1}, Vec3{1, 2, 0}}});
    REQUIRE(result.parts.size() == 3);
    CHECK(result.parts[0].element == "object 'Floor'");
    CHECK(result.parts[1].element == "object 'Dart'");
    CHECK(result.parts[2].element == "object 'Tri'");
    CHECK(result.parts[2].firstTriangle == 4);
    CHECK(result.mesh.triangleCount() == 5);
    REQUIRE(result.warnings.size() == 1);
    CHECK(result.warnings[0] == "ignored 1 line and 0 point elements");
}

TEST_CASE("OBJ faces of five or more corners are split as a fan", "[geometry_files]")
{
    TempDirectory dir("geometry");
    const server::MeshFileResult result =
        loadFile(dir, "pentagon.obj", "v 0 0 0\nv 0 0 2\nv 2 0 3\nv 4 0 2\nv 4 0 0\nf 1 2 3 4 5\n");
    INFO(result.message);
    REQUIRE(result.ok());
    checkTriangles(result, {{Vec3{0, 0, 0}, Vec3{0, 0, 2}, Vec3{2, 0, 3}},
                            {Vec3{0, 0, 0}, Vec3{2, 0, 3}, Vec3{4, 0, 2}},
                            {Vec3{0, 0, 0}, Vec3{4, 0, 2}, Vec3{4, 0, 0}}});
    CHECK(result.parts.at(0).element == "object 0");
}

TEST_CASE("broken OBJ files are refused naming the line", "[geometry_files]")
{
    using server::GeometryFileError;
    TempDirectory dir("geometry");
    const std::string path = dir / "arena.obj";
    const std::string square = "# square\nv 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\n";

    SECTION("an empty file, and one with vertices but no face")
    {
        checkRefused(loadFile(dir, "arena.obj", ""), GeometryFileError::NoGeometry, path,
                     "no triangles (no faces)");
        checkRefused(loadFile(dir, "arena.obj", square), GeometryFileError::NoGeometry, path,
                     "no triangles (no faces)");
    }
    SECTION("a vertex index out of range")
    {
        checkRefused(loadFile(dir, "arena.obj", square + "f 1 4 3\n\nf 1 3 7 2\n"),
                     GeometryFileError::InvalidGeometry, path,
                     "line 8: corner 3 names vertex 7, but the file has 4 vertices");
        checkRefused(loadFile(dir, "arena.obj", square + "f 1 2 -5\n"), GeometryFileError::InvalidGeometry,
                     path, "line 6: corner 3 names a vertex before the first");
    }
    SECTION("a zero index, which tinyobjloader refuses itself")
    {
        checkRefused(loadFile(dir, "arena.obj", square + "f 1 0 3\n"), GeometryFileError::Malformed, path,
                     "line 6: Failed parse `f' line(e.g. zero value for face index)");
    }
    SECTION("a vertex beyond the coordinate bound")
    {
        checkRefused(loadFile(dir, "arena.obj", square + "v 0 2e6 0\nf 1 2 5\n"),
                     GeometryFileError::InvalidGeometry, path,
                     "line 6: vertex 5 lies beyond 1e+06 m (0, 2e+06, 0)");
    }
    SECTION("degenerate triangles dropped and counted, or refused naming the line")
    {
        const std::string obj = square + "o Good\nf 1 3 2\no Bad\nf 1 2 2\n";
        const server::MeshFileResult dropped = loadFile(dir, "arena.obj", obj);
        INFO(dropped.message);
        REQUIRE(dropped.ok());
        CHECK(dropped.triangleCount() == 2); // the arrays keep it; the built mesh does not
        CHECK(dropped.mesh.triangleCount() == 1);
        CHECK(dropped.dropped.repeatedIndex == 1);
        REQUIRE(dropped.warnings.size() == 1);
        CHECK(dropped.warnings[0] ==
              "dropped 1 degenerate triangles (1 with a repeated corner, 0 collinear, 0 too small)");

        server::MeshFileOptions refuse;
        refuse.build.degenerateTriangles = physics::DegenerateTrianglePolicy::Refuse;
        checkRefused(loadFile(dir, "arena.obj", obj, refuse), GeometryFileError::BuildFailed, path,
                     "line 9 (object 'Bad'): degenerate triangle refused (two corners are the same vertex)");

        checkRefused(loadFile(dir, "arena.obj", square + "f 1 2 2\n"), GeometryFileError::NoGeometry, path,
                     "no triangles left: all 1 were degenerate and dropped");
    }
    SECTION("a directory is not a file")
    {
        std::filesystem::create_directories(dir.path() / "folder.obj");
        checkRefused(server::loadMeshFile(dir / "folder.obj"), GeometryFileError::CannotRead,
                     dir / "folder.obj", "not a regular file (a directory)");
    }
}

TEST_CASE("a 16-bit grayscale PNG loads as heightfield samples", "[geometry_files]")
{
    TempDirectory dir("geometry");
    // 3 samples along x, 4 along z; row by row from the image's top.
    const std::vector<std::uint16_t> samples{0, 1000, 2000, 300, 40000, 65535, 7, 8, 9, 100, 200, 300};
    writeFile(dir / "terrain.png", png16(3, 4, samples));
    server::HeightFieldFileOptions options;
    options.cellSizeXMeters = 2.0f;
    options.cellSizeZMeters = 0.5f;
    options.heightScale = 0.01f;
    options.heightOffset = -5.0f;
    const server::HeightFieldFileResult result = server::loadHeightFieldFile(dir / "terrain.png", options);
    INFO(result.message);
    REQUIRE(result.ok());
    CHECK(result.sampleCountX == 3);
    CHECK(result.sampleCountZ == 4);
    CHECK(result.samples == samples);
    CHECK(result.holeMask.empty());
    const physics::HeightField& field = result.heightField;
    REQUIRE(field.sampleCountX() == 3);
    REQUIRE(field.sampleCountZ() == 4);
    for (std::uint32_t iz = 0; iz < 4; ++iz)
    {
        for (std::uint32_t ix = 0; ix < 3; ++ix)
        {
            const std::uint16_t s = samples[iz * 3 + ix];
            CHECK(field.sample(ix, iz) == s);
            const Vec3 v = field.vertex(ix, iz);
            CHECK(same(v, Vec3{float(ix) * 2.0f, -5.0f + 0.01f * float(s), float(iz) * 0.5f}));
        }
    }
    const physics::HeightFieldDesc desc = result.desc();
    CHECK(desc.samples.data() == result.samples.data());
    CHECK(desc.cellSizeX == 2.0f);
}

TEST_CASE("a raw 16-bit heightfield loads, with holes where a corner has the hole value", "[geometry_files]")
{
    TempDirectory dir("geometry");
    // 4 x 3 samples, 3 x 2 cells; sample (1, 1) is the hole value.
    const std::vector<std::uint16_t> samples{10, 20, 30, 40, 50, 65535, 70, 80, 90, 100, 110, 0x1234};
    std::string bytes;
    for (const std::uint16_t s : samples)
    {
        bytes.push_back(static_cast<char>(s & 0xff));
        bytes.push_back(static_cast<char>(s >> 8));
    }
    writeFile(dir / "terrain.r16", bytes);
    server::HeightFieldFileOptions options;
    options.rawSamplesX = 4;
    options.rawSamplesZ = 3;
    options.holeSample = 65535;
    const server::HeightFieldFileResult result = server::loadHeightFieldFile(dir / "terrain.r16", options);
    INFO(result.message);
    REQUIRE(result.ok());
    CHECK(result.sampleCountX == 4);
    CHECK(result.sampleCountZ == 3);
    // Cells (0, 0), (1, 0), (0, 1), (1, 1) touch sample (1, 1); cells (2, 0) and (2, 1) do not.
    CHECK(result.holeCellCount == 4);
    const physics::HeightField& field = result.heightField;
    CHECK(field.isHole(0));
    CHECK(field.isHole(1));
    CHECK_FALSE(field.isHole(2));
    CHECK(field.isHole(3));
    CHECK(field.isHole(4));
    CHECK_FALSE(field.isHole(5));
    CHECK(field.sample(1, 1) == 10); // the hole value is stored as the lowest other sample
    CHECK(field.sample(3, 2) == 0x1234);
    CHECK(field.sample(2, 1) == 70);
    CHECK_FALSE(field.height(0.5f, 0.5f).hasSurface);
    CHECK(field.height(2.5f, 0.5f).hasSurface);
}

TEST_CASE("unsupported and broken heightfield files are refused", "[geometry_files]")
{
    using server::GeometryFileError;
    TempDirectory dir("geometry");
    const std::string png = dir / "terrain.png";
    const unsigned char grey[6] = {0, 50, 100, 150, 200, 250};
    const unsigned char colour[24] = {}; // 3 x 2 pixels of up to 4 channels
    server::HeightFieldFileOptions options;

    SECTION("8-bit grayscale: refused unless allowed")
    {
        writeFile(png, pngBytes(3, 2, 1, grey));
        checkRefused(server::loadHeightFieldFile(png, options), GeometryFileError::Unsupported, png,
                     "8-bit samples (allowEightBitPng is off): save the heightmap as 16-bit grayscale");
        options.allowEightBitPng = true;
        const server::HeightFieldFileResult result = server::loadHeightFieldFile(png, options);
        INFO(result.message);
        REQUIRE(result.ok());
        CHECK(result.samples == std::vector<std::uint16_t>{0, 50, 100, 150, 200, 250});
    }
    SECTION("colour, and grey with alpha")
    {
        writeFile(png, pngBytes(3, 2, 3, colour));
        checkRefused(server::loadHeightFieldFile(png, options), GeometryFileError::Unsupported, png,
                     "a colour PNG (RGB): save the heightmap as 16-bit grayscale");
        writeFile(png, pngBytes(3, 2, 4, colour));
        checkRefused(server::loadHeightFieldFile(png, options), GeometryFileError::Unsupported, png,
                     "a colour PNG (RGBA): save the heightmap as 16-bit grayscale");
        writeFile(png, pngBytes(3, 2, 2, colour));
        checkRefusedWith(server::loadHeightFieldFile(png, options), GeometryFileError::Unsupported, png,
                         "alpha channel");
    }
    SECTION("a truncated PNG, and one that is not a PNG")
    {
        const std::string whole = png16(3, 4, std::vector<std::uint16_t>(12, 5));
        writeFile(png, whole.substr(0, 45));
        checkRefusedWith(server::loadHeightFieldFile(png, options), GeometryFileError::Malformed, png,
                         "unreadable PNG");
        writeFile(png, "P5 3 2 255\n");
        checkRefused(server::loadHeightFieldFile(png, options), GeometryFileError::UnknownFormat, png,
                     "not a PNG file (no PNG signature)");
    }
    SECTION("an image with a side of one sample")
    {
        writeFile(png, png16(5, 1, std::vector<std::uint16_t>(5, 1)));
        checkRefused(server::loadHeightFieldFile(png, options), GeometryFileError::InvalidGeometry, png,
                     "an image of 5 x 1 samples (each side must have 2 to 4097)");
    }
    SECTION("a raw file of the wrong size")
    {
        const std::string raw = dir / "terrain.raw";
        writeFile(raw, std::string(2 * 33 * 33 - 2, '\0'));
        options.rawSamplesX = 33;
        options.rawSamplesZ = 33;
        checkRefused(server::loadHeightFieldFile(raw, options), GeometryFileError::InvalidGeometry, raw,
                     "a raw file of 2176 bytes, but 33 x 33 samples of 2 bytes take 2178");
        options.rawSamplesX = 0;
        checkRefusedWith(server::loadHeightFieldFile(raw, options), GeometryFileError::InvalidGeometry, raw,
                         "set rawSamplesX and rawSamplesZ");
    }
    SECTION("options the engine refuses")
    {
        writeFile(png, png16(2, 2, {1, 2, 3, 4}));
        options.cellSizeXMeters = 0.0f;
        checkRefusedWith(server::loadHeightFieldFile(png, options), GeometryFileError::BuildFailed, png,
                         "the heightfield builder refused it: BadCellSize");
    }
    SECTION("a missing file")
    {
        checkRefusedWith(server::loadHeightFieldFile(dir / "none.png", options),
                         GeometryFileError::CannotRead, dir / "none.png", "cannot be opened");
    }
}

TEST_CASE("geometry paths in scene files are resolved from the scene file's folder", "[geometry_files]")
{
    std::string resolved, error;
    CHECK(server::resolveScenePath("scenes/arena.json", "meshes/floor.glb", resolved, error));
    CHECK(resolved == "scenes/meshes/floor.glb");
    CHECK(server::resolveScenePath("arena.json", "./floor.glb", resolved, error));
    CHECK(resolved == "floor.glb");
    CHECK(server::resolveScenePath("/srv/levels/a/scene.json", "../shared/rock.obj", resolved, error));
    CHECK(resolved == "/srv/levels/shared/rock.obj");
    CHECK(server::resolveScenePath("scenes/arena.json", "/data/terrain.png", resolved, error));
    CHECK(resolved == "/data/terrain.png");

    CHECK_FALSE(server::resolveScenePath("scenes/arena.json", "", resolved, error));
    CHECK(error == "empty path");
    CHECK(resolved.empty());
    CHECK_FALSE(server::resolveScenePath("scenes/arena.json", std::string("a\0b", 3), resolved, error));
    CHECK(error == "a NUL byte in the path");

    server::ScenePathRules confined;
    confined.allowAbsolute = false;
    confined.allowOutsideSceneFolder = false;
    CHECK_FALSE(
        server::resolveScenePath("scenes/arena.json", "/data/terrain.png", resolved, error, confined));
    CHECK(error == "absolute path not allowed here: /data/terrain.png");
    CHECK_FALSE(
        server::resolveScenePath("scenes/arena.json", "meshes/../../x.obj", resolved, error, confined));
    CHECK(error == "leads out of the scene file's folder: meshes/../../x.obj");
    CHECK(server::resolveScenePath("scenes/arena.json", "meshes/../x.obj", resolved, error, confined));
    CHECK(resolved == "scenes/x.obj");
}

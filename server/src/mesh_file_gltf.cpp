// glTF 2.0 into triangle arrays (mesh_file_readers.h).
//
// tinygltf (Debian's shared library) parses the JSON or GLB container and loads the buffers; everything it
// hands back is checked here again before use, because tinygltf checks little of it: accessor and buffer-view
// ranges, component types, node indices and the node hierarchy (a cycle or a node with two parents would
// otherwise loop or repeat). Its file access goes through callbacks of ours, so that external buffers are
// read with regular_file.h's rules, under the same byte budget as the file itself, and only from the glTF's
// folder (unless options say otherwise). Images are never decoded, nor their files read: collision needs
// none.
//
// Geometry, as the specification (glTF 2.0, sections 3.5 and 3.7) defines it: the default scene's nodes (the
// first scene when none is marked; all root nodes when the file has no scene), each node's matrix or T * R *
// S applied after its parent's, POSITION read from every primitive of each node's mesh. A transform with a
// negative determinant reverses the winding (3.7.2.1), so two corners are swapped there to keep triangles
// counter-clockwise from the front. Skins and morph targets are not applied (bind-pose positions).
#include "mesh_file_readers.h"
#include "polytope/server/regular_file.h"

#include <tiny_gltf.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace polytope::server::detail
{
namespace
{

/// Column-major 4x4, as glTF stores matrices: element (row r, column c) is m[4 * c + r].
using Matrix = std::array<double, 16>;

constexpr Matrix kIdentity{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};

Matrix multiply(const Matrix& a, const Matrix& b)
{
    Matrix out{};
    for (int c = 0; c < 4; ++c)
    {
        for (int r = 0; r < 4; ++r)
        {
            double sum = 0.0;
            for (int k = 0; k < 4; ++k)
            {
                sum += a[4 * k + r] * b[4 * c + k];
            }
            out[4 * c + r] = sum;
        }
    }
    return out;
}

double determinant3(const Matrix& m)
{
    return m[0] * (m[5] * m[10] - m[9] * m[6]) - m[4] * (m[1] * m[10] - m[9] * m[2]) +
           m[8] * (m[1] * m[6] - m[5] * m[2]);
}

/// Extensions that change what the geometry is: a file that requires one cannot be read right without it.
/// Other required extensions are let through only when they concern looks alone (materials, textures,
/// lights); anything else unknown is refused, since it might change the geometry too.
bool extensionIsHarmless(const std::string& name)
{
    return name.starts_with("KHR_materials_") || name.starts_with("KHR_texture_") ||
           name.starts_with("EXT_texture_") || name == "KHR_lights_punctual";
}

bool isImagePath(const std::string& path)
{
    static constexpr std::array<std::string_view, 8> kImageExtensions{".png",  ".jpg", ".jpeg", ".ktx2",
                                                                      ".webp", ".bmp", ".gif",  ".dds"};
    std::string extension = std::filesystem::path(path).extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return std::find(kImageExtensions.begin(), kImageExtensions.end(), extension) != kImageExtensions.end();
}

/// State shared with tinygltf's file callbacks.
struct ExternalFiles
{
    std::filesystem::path folder; ///< absolute and normal; empty: no external file may be read
    bool confine = true;
    bool followSymlinks = true;
    std::uint64_t budgetBytes = 0; ///< what may still be read
    bool overBudget = false;
    std::string refusal; ///< why the first refused external file was refused
};

void refuse(ExternalFiles& files, const std::string& path, const std::string& why)
{
    if (files.refusal.empty())
    {
        files.refusal = printableExcerpt(path, 200) + ": " + why;
    }
}

bool allowedPath(ExternalFiles& files, const std::string& path)
{
    if (files.folder.empty())
    {
        refuse(files, path, "external files are not read here");
        return false;
    }
    if (!files.confine)
    {
        return true;
    }
    std::error_code error;
    const std::filesystem::path candidate = std::filesystem::absolute(path, error).lexically_normal();
    if (error)
    {
        refuse(files, path, "cannot be resolved");
        return false;
    }
    const std::filesystem::path relative = candidate.lexically_relative(files.folder);
    if (relative.empty() || *relative.begin() == "..")
    {
        refuse(files, path, "outside the glTF file's folder");
        return false;
    }
    return true;
}

bool fileExists(const std::string& path, void* context)
{
    auto& files = *static_cast<ExternalFiles*>(context);
    if (isImagePath(path))
    {
        return false; // tinygltf only warns that the image is missing; images are never needed here
    }
    return allowedPath(files, path);
}

std::string expandFilePath(const std::string& path, void*)
{
    return path;
}

bool readWholeFile(std::vector<unsigned char>* out, std::string* error, const std::string& path,
                   void* context)
{
    auto& files = *static_cast<ExternalFiles*>(context);
    if (!allowedPath(files, path))
    {
        *error = files.refusal;
        return false;
    }
    const FileRules rules{files.budgetBytes, files.followSymlinks};
    std::string why;
    const FileStatus status = readRegularFile(path, rules, *out, why);
    if (status != FileStatus::Ok)
    {
        if (status == FileStatus::TooLarge)
        {
            files.overBudget = true;
            why = "over the byte budget left for the glTF's files (" + std::to_string(files.budgetBytes) +
                  " bytes)";
        }
        refuse(files, path, why);
        *error = why;
        return false;
    }
    files.budgetBytes -= out->size();
    return true;
}

bool writeWholeFile(std::string* error, const std::string&, const std::vector<unsigned char>&, void*)
{
    *error = "writing is not allowed";
    return false;
}

bool skipImage(tinygltf::Image*, const int, std::string*, std::string*, int, int, const unsigned char*, int,
               void*)
{
    return true;
}

/// The first line of a parser message, trimmed and printable.
std::string firstLine(const std::string& text)
{
    std::string line = text.substr(0, text.find('\n'));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '.'))
    {
        line.pop_back();
    }
    return printableExcerpt(line, 300);
}

std::string named(const char* kind, const std::string& name, std::size_t index)
{
    if (name.empty())
    {
        return std::string(kind) + " " + std::to_string(index);
    }
    return std::string(kind) + " '" + printableExcerpt(name, 64) + "'";
}

const char* modeName(int mode)
{
    switch (mode)
    {
    case TINYGLTF_MODE_POINTS:
        return "POINTS";
    case TINYGLTF_MODE_LINE:
        return "LINES";
    case TINYGLTF_MODE_LINE_LOOP:
        return "LINE_LOOP";
    case TINYGLTF_MODE_LINE_STRIP:
        return "LINE_STRIP";
    case TINYGLTF_MODE_TRIANGLES:
        return "TRIANGLES";
    case TINYGLTF_MODE_TRIANGLE_STRIP:
        return "TRIANGLE_STRIP";
    case TINYGLTF_MODE_TRIANGLE_FAN:
        return "TRIANGLE_FAN";
    default:
        return nullptr;
    }
}

/// Bytes per component of an accessor's componentType, 0 for an unknown type.
std::size_t componentBytes(int componentType)
{
    switch (componentType)
    {
    case TINYGLTF_COMPONENT_TYPE_BYTE:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
        return 1;
    case TINYGLTF_COMPONENT_TYPE_SHORT:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
        return 2;
    case TINYGLTF_COMPONENT_TYPE_INT:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
    case TINYGLTF_COMPONENT_TYPE_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/// A checked accessor: `count` elements, element i at data + i * stride, each wholly inside its buffer.
struct AccessorData
{
    const unsigned char* data = nullptr;
    std::size_t stride = 0;
    std::size_t count = 0;
    int componentType = 0;
};

class GltfReader
{
  public:
    GltfReader(const tinygltf::Model& model, const MeshFileOptions& options, MeshArrays& out,
               ReadFailure& failure)
        : m_model(model), m_options(options), m_out(out), m_failure(failure),
          m_maxTriangles(std::min(options.maxTriangles, physics::kMaxMeshTriangles))
    {
    }

    bool read()
    {
        for (const std::string& extension : m_model.extensionsRequired)
        {
            if (!extensionIsHarmless(extension))
            {
                return fail(GeometryFileError::Unsupported, "requires extension " +
                                                                printableExcerpt(extension) +
                                                                ", which this loader does not read");
            }
        }
        std::vector<int> roots;
        if (!chooseRoots(roots))
        {
            return false;
        }
        return walk(roots);
    }

  private:
    bool fail(GeometryFileError error, std::string message)
    {
        m_failure.error = error;
        m_failure.message = std::move(message);
        return false;
    }

    bool chooseRoots(std::vector<int>& roots)
    {
        const std::size_t nodeCount = m_model.nodes.size();
        if (!m_model.scenes.empty())
        {
            const int sceneIndex = m_model.defaultScene >= 0 ? m_model.defaultScene : 0;
            if (static_cast<std::size_t>(sceneIndex) >= m_model.scenes.size())
            {
                return fail(GeometryFileError::Malformed,
                            "default scene " + std::to_string(sceneIndex) + " does not exist (" +
                                std::to_string(m_model.scenes.size()) + " scenes)");
            }
            const tinygltf::Scene& scene = m_model.scenes[static_cast<std::size_t>(sceneIndex)];
            for (const int node : scene.nodes)
            {
                if (node < 0 || static_cast<std::size_t>(node) >= nodeCount)
                {
                    return fail(GeometryFileError::Malformed,
                                named("scene", scene.name, std::size_t(sceneIndex)) + ": node " +
                                    std::to_string(node) + " does not exist (" + std::to_string(nodeCount) +
                                    " nodes)");
                }
            }
            roots = scene.nodes;
            return true;
        }
        // No scene: every node that is no node's child (children out of range are reported by the walk).
        std::vector<std::uint8_t> isChild(nodeCount, 0);
        for (const tinygltf::Node& node : m_model.nodes)
        {
            for (const int child : node.children)
            {
                if (child >= 0 && static_cast<std::size_t>(child) < nodeCount)
                {
                    isChild[static_cast<std::size_t>(child)] = 1;
                }
            }
        }
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            if (isChild[i] == 0)
            {
                roots.push_back(static_cast<int>(i));
            }
        }
        return true;
    }

    /// The node's local matrix, from `matrix` or from translation, rotation and scale.
    bool localMatrix(const tinygltf::Node& node, const std::string& label, Matrix& out)
    {
        const auto allFinite = [](const std::vector<double>& values)
        { return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); }); };
        if (!allFinite(node.matrix) || !allFinite(node.translation) || !allFinite(node.rotation) ||
            !allFinite(node.scale))
        {
            return fail(GeometryFileError::InvalidGeometry, label + ": transform is not finite");
        }
        if (!node.matrix.empty())
        {
            if (node.matrix.size() != 16)
            {
                return fail(GeometryFileError::Malformed, label + ": matrix has " +
                                                              std::to_string(node.matrix.size()) +
                                                              " numbers (16 expected)");
            }
            std::copy(node.matrix.begin(), node.matrix.end(), out.begin());
            return true;
        }
        if ((!node.translation.empty() && node.translation.size() != 3) ||
            (!node.rotation.empty() && node.rotation.size() != 4) ||
            (!node.scale.empty() && node.scale.size() != 3))
        {
            return fail(GeometryFileError::Malformed,
                        label + ": translation and scale need 3 numbers, rotation 4 (x, y, z, w)");
        }
        double x = 0.0, y = 0.0, z = 0.0, w = 1.0;
        if (!node.rotation.empty())
        {
            x = node.rotation[0];
            y = node.rotation[1];
            z = node.rotation[2];
            w = node.rotation[3];
            const double length = std::sqrt(x * x + y * y + z * z + w * w);
            if (!(length > 1e-12) || !std::isfinite(length))
            {
                return fail(GeometryFileError::InvalidGeometry,
                            label + ": rotation is not a unit quaternion");
            }
            x /= length;
            y /= length;
            z /= length;
            w /= length;
        }
        const double sx = node.scale.empty() ? 1.0 : node.scale[0];
        const double sy = node.scale.empty() ? 1.0 : node.scale[1];
        const double sz = node.scale.empty() ? 1.0 : node.scale[2];
        // Columns of R * S, then T in the last column.
        out = {(1 - 2 * (y * y + z * z)) * sx,
               (2 * (x * y + z * w)) * sx,
               (2 * (x * z - y * w)) * sx,
               0,
               (2 * (x * y - z * w)) * sy,
               (1 - 2 * (x * x + z * z)) * sy,
               (2 * (y * z + x * w)) * sy,
               0,
               (2 * (x * z + y * w)) * sz,
               (2 * (y * z - x * w)) * sz,
               (1 - 2 * (x * x + y * y)) * sz,
               0,
               node.translation.empty() ? 0.0 : node.translation[0],
               node.translation.empty() ? 0.0 : node.translation[1],
               node.translation.empty() ? 0.0 : node.translation[2],
               1};
        return true;
    }

    /// Depth first from `roots`, in file order; each node once.
    bool walk(const std::vector<int>& roots)
    {
        const std::size_t nodeCount = m_model.nodes.size();
        std::vector<std::uint8_t> visited(nodeCount, 0);
        struct Pending
        {
            int node;
            Matrix parent;
        };
        std::vector<Pending> stack;
        for (auto it = roots.rbegin(); it != roots.rend(); ++it)
        {
            stack.push_back({*it, kIdentity});
        }
        while (!stack.empty())
        {
            const Pending pending = stack.back();
            stack.pop_back();
            const auto index = static_cast<std::size_t>(pending.node);
            const tinygltf::Node& node = m_model.nodes[index];
            const std::string label = named("node", node.name, index);
            if (visited[index] != 0)
            {
                return fail(GeometryFileError::Malformed,
                            label +
                                ": reached twice (a node has at most one parent, and no cycles are allowed)");
            }
            visited[index] = 1;
            Matrix local{};
            if (!localMatrix(node, label, local))
            {
                return false;
            }
            const Matrix world = multiply(pending.parent, local);
            if (node.mesh >= 0 || node.mesh < -1)
            {
                if (node.mesh < 0 || static_cast<std::size_t>(node.mesh) >= m_model.meshes.size())
                {
                    return fail(GeometryFileError::Malformed,
                                label + ": mesh " + std::to_string(node.mesh) + " does not exist (" +
                                    std::to_string(m_model.meshes.size()) + " meshes)");
                }
                if (!readMesh(static_cast<std::size_t>(node.mesh), label, world))
                {
                    return false;
                }
            }
            for (auto it = node.children.rbegin(); it != node.children.rend(); ++it)
            {
                if (*it < 0 || static_cast<std::size_t>(*it) >= nodeCount)
                {
                    return fail(GeometryFileError::Malformed, label + ": child " + std::to_string(*it) +
                                                                  " does not exist (" +
                                                                  std::to_string(nodeCount) + " nodes)");
                }
                stack.push_back({*it, world});
            }
        }
        return true;
    }

    /// Checks accessor `index`, used as `role` ("POSITION", "indices"), of glTF type `type` (VEC3 or SCALAR).
    bool accessor(int index, const std::string& label, const char* role, int type, AccessorData& out)
    {
        if (index < 0 || static_cast<std::size_t>(index) >= m_model.accessors.size())
        {
            return fail(GeometryFileError::Malformed,
                        label + ": " + role + " accessor " + std::to_string(index) + " does not exist (" +
                            std::to_string(m_model.accessors.size()) + " accessors)");
        }
        const tinygltf::Accessor& a = m_model.accessors[static_cast<std::size_t>(index)];
        const std::string where = label + ": " + role + " accessor " + std::to_string(index);
        if (a.sparse.isSparse)
        {
            return fail(GeometryFileError::Unsupported,
                        where + " is sparse, which this loader does not read");
        }
        if (a.type != type)
        {
            return fail(GeometryFileError::Malformed, where + " has the wrong type (" +
                                                          (type == TINYGLTF_TYPE_VEC3 ? "VEC3" : "SCALAR") +
                                                          " expected)");
        }
        const std::size_t component = componentBytes(a.componentType);
        if (component == 0)
        {
            return fail(GeometryFileError::Malformed,
                        where + " has an unknown componentType " + std::to_string(a.componentType));
        }
        out.componentType = a.componentType;
        out.count = a.count;
        if (a.count == 0)
        {
            return true;
        }
        if (a.bufferView < 0 || static_cast<std::size_t>(a.bufferView) >= m_model.bufferViews.size())
        {
            return fail(a.bufferView < 0 ? GeometryFileError::Unsupported : GeometryFileError::Malformed,
                        where + " has no bufferView" +
                            (a.bufferView < 0
                                 ? std::string(" (all zeros), which this loader does not read")
                                 : " (bufferView " + std::to_string(a.bufferView) + " does not exist)"));
        }
        const tinygltf::BufferView& view = m_model.bufferViews[static_cast<std::size_t>(a.bufferView)];
        if (view.buffer < 0 || static_cast<std::size_t>(view.buffer) >= m_model.buffers.size())
        {
            return fail(GeometryFileError::Malformed, where + ": bufferView " + std::to_string(a.bufferView) +
                                                          " names buffer " + std::to_string(view.buffer) +
                                                          ", which does not exist");
        }
        const std::size_t bufferBytes = m_model.buffers[static_cast<std::size_t>(view.buffer)].data.size();
        if (view.byteOffset > bufferBytes || view.byteLength > bufferBytes - view.byteOffset)
        {
            return fail(GeometryFileError::Malformed,
                        where + ": bufferView " + std::to_string(a.bufferView) + " (bytes " +
                            std::to_string(view.byteOffset) + " + " + std::to_string(view.byteLength) +
                            ") runs past the end of its buffer (" + std::to_string(bufferBytes) + " bytes)");
        }
        const std::size_t element = component * (type == TINYGLTF_TYPE_VEC3 ? 3 : 1);
        const std::size_t stride = view.byteStride == 0 ? element : view.byteStride;
        if (stride < element)
        {
            return fail(GeometryFileError::Malformed, where + ": byteStride " + std::to_string(stride) +
                                                          " is smaller than an element (" +
                                                          std::to_string(element) + " bytes)");
        }
        // The last element must end inside the view: offset + (count - 1) * stride + element <= byteLength.
        const bool fits = a.byteOffset <= view.byteLength && element <= view.byteLength - a.byteOffset &&
                          a.count - 1 <= (view.byteLength - a.byteOffset - element) / stride;
        if (!fits)
        {
            return fail(GeometryFileError::Malformed,
                        where + ": " + std::to_string(a.count) + " elements from byte " +
                            std::to_string(a.byteOffset) + " do not fit in bufferView " +
                            std::to_string(a.bufferView) + " (" + std::to_string(view.byteLength) +
                            " bytes)");
        }
        out.data = m_model.buffers[static_cast<std::size_t>(view.buffer)].data.data() + view.byteOffset +
                   a.byteOffset;
        out.stride = stride;
        return true;
    }

    static std::int64_t readIndex(const AccessorData& data, std::size_t i)
    {
        const unsigned char* p = data.data + i * data.stride;
        switch (data.componentType)
        {
        case TINYGLTF_COMPONENT_TYPE_BYTE:
            return static_cast<std::int8_t>(*p);
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
            return *p;
        case TINYGLTF_COMPONENT_TYPE_SHORT:
        {
            std::int16_t v = 0;
            std::memcpy(&v, p, sizeof v);
            return v;
        }
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
        {
            std::uint16_t v = 0;
            std::memcpy(&v, p, sizeof v);
            return v;
        }
        case TINYGLTF_COMPONENT_TYPE_INT:
        {
            std::int32_t v = 0;
            std::memcpy(&v, p, sizeof v);
            return v;
        }
        default: // UNSIGNED_INT; FLOAT was refused before
        {
            std::uint32_t v = 0;
            std::memcpy(&v, p, sizeof v);
            return v;
        }
        }
    }

    bool readMesh(std::size_t meshIndex, const std::string& nodeLabel, const Matrix& world)
    {
        const tinygltf::Mesh& mesh = m_model.meshes[meshIndex];
        const bool mirrored = determinant3(world) < 0.0;
        for (std::size_t p = 0; p < mesh.primitives.size(); ++p)
        {
            const std::string label = named("mesh", mesh.name, meshIndex) + " primitive " + std::to_string(p);
            if (!readPrimitive(mesh.primitives[p], label, nodeLabel, world, mirrored))
            {
                return false;
            }
        }
        return true;
    }

    bool readPrimitive(const tinygltf::Primitive& primitive, const std::string& label,
                       const std::string& nodeLabel, const Matrix& world, bool mirrored)
    {
        const int mode = primitive.mode;
        if (mode != TINYGLTF_MODE_TRIANGLES && mode != TINYGLTF_MODE_TRIANGLE_STRIP &&
            mode != TINYGLTF_MODE_TRIANGLE_FAN)
        {
            const char* name = modeName(mode);
            if (name == nullptr)
            {
                return fail(GeometryFileError::Malformed, label + ": unknown mode " + std::to_string(mode));
            }
            return fail(GeometryFileError::Unsupported,
                        label + ": mode " + name +
                            " is not triangles (TRIANGLES, TRIANGLE_STRIP or TRIANGLE_FAN)");
        }
        const auto position = primitive.attributes.find("POSITION");
        if (position == primitive.attributes.end())
        {
            return fail(GeometryFileError::Malformed, label + ": no POSITION attribute");
        }
        AccessorData positions;
        if (!accessor(position->second, label, "POSITION", TINYGLTF_TYPE_VEC3, positions))
        {
            return false;
        }
        if (positions.componentType != TINYGLTF_COMPONENT_TYPE_FLOAT)
        {
            return fail(GeometryFileError::Unsupported,
                        label + ": POSITION has componentType " + std::to_string(positions.componentType) +
                            " (quantized positions are not read; FLOAT, 5126, expected)");
        }
        AccessorData indices;
        const bool indexed = primitive.indices >= 0;
        if (indexed)
        {
            if (!accessor(primitive.indices, label, "indices", TINYGLTF_TYPE_SCALAR, indices))
            {
                return false;
            }
            if (indices.componentType == TINYGLTF_COMPONENT_TYPE_FLOAT)
            {
                return fail(GeometryFileError::Malformed,
                            label + ": indices are FLOAT (an integer type expected)");
            }
        }
        const std::size_t cornerCount = indexed ? indices.count : positions.count;
        std::size_t triangles = 0;
        if (mode == TINYGLTF_MODE_TRIANGLES)
        {
            if (cornerCount % 3 != 0)
            {
                return fail(GeometryFileError::Malformed,
                            label + ": " + std::to_string(cornerCount) +
                                (indexed ? " indices" : " vertices") +
                                " do not make whole triangles (not a multiple of 3)");
            }
            triangles = cornerCount / 3;
        }
        else
        {
            triangles = cornerCount >= 3 ? cornerCount - 2 : 0;
        }
        const std::size_t triangleTotal = m_out.indices.size() / 3;
        if (triangles > m_maxTriangles - triangleTotal)
        {
            return fail(GeometryFileError::TooManyTriangles,
                        "more than " + std::to_string(m_maxTriangles) + " triangles (" + nodeLabel + " " +
                            label + " brings " + std::to_string(triangles) + " to the " +
                            std::to_string(triangleTotal) + " before it)");
        }
        if (triangles == 0)
        {
            return true;
        }
        const std::size_t vertexBase = m_out.vertices.size();
        if (positions.count > physics::kMaxMeshVertices - vertexBase)
        {
            return fail(GeometryFileError::TooManyTriangles,
                        "more than " + std::to_string(physics::kMaxMeshVertices) + " vertices (at " +
                            nodeLabel + " " + label + ")");
        }

        // Vertices, transformed in double precision and checked.
        m_out.vertices.reserve(vertexBase + positions.count);
        const double limit = m_options.maxCoordinateMeters;
        for (std::size_t i = 0; i < positions.count; ++i)
        {
            float v[3];
            std::memcpy(v, positions.data + i * positions.stride, sizeof v);
            if (!std::isfinite(v[0]) || !std::isfinite(v[1]) || !std::isfinite(v[2]))
            {
                return fail(GeometryFileError::InvalidGeometry, label + ": vertex " + std::to_string(i) +
                                                                    " is not finite " +
                                                                    formatPoint(v[0], v[1], v[2]));
            }
            const double x = world[0] * v[0] + world[4] * v[1] + world[8] * v[2] + world[12];
            const double y = world[1] * v[0] + world[5] * v[1] + world[9] * v[2] + world[13];
            const double z = world[2] * v[0] + world[6] * v[1] + world[10] * v[2] + world[14];
            if (!(std::fabs(x) <= limit && std::fabs(y) <= limit && std::fabs(z) <= limit))
            {
                return fail(GeometryFileError::InvalidGeometry,
                            nodeLabel + " " + label + ": vertex " + std::to_string(i) + " lies at " +
                                formatPoint(x, y, z) + " after the node transforms, beyond " +
                                formatNumber(limit) + " m");
            }
            m_out.vertices.push_back({static_cast<float>(x), static_cast<float>(y), static_cast<float>(z)});
        }

        // Corners: read, checked against this primitive's vertices, then assembled by mode.
        std::vector<std::uint32_t> corners(cornerCount);
        for (std::size_t i = 0; i < cornerCount; ++i)
        {
            const std::int64_t index = indexed ? readIndex(indices, i) : static_cast<std::int64_t>(i);
            if (index < 0 || static_cast<std::uint64_t>(index) >= positions.count)
            {
                return fail(GeometryFileError::InvalidGeometry,
                            label + ": index " + std::to_string(index) + " out of range (" +
                                std::to_string(positions.count) + " vertices)");
            }
            corners[i] = static_cast<std::uint32_t>(vertexBase + static_cast<std::size_t>(index));
        }
        const std::uint32_t firstTriangle = static_cast<std::uint32_t>(triangleTotal);
        m_out.indices.reserve(m_out.indices.size() + 3 * triangles);
        for (std::size_t t = 0; t < triangles; ++t)
        {
            std::uint32_t a = 0, b = 0, c = 0;
            if (mode == TINYGLTF_MODE_TRIANGLES)
            {
                a = corners[3 * t];
                b = corners[3 * t + 1];
                c = corners[3 * t + 2];
            }
            else if (mode == TINYGLTF_MODE_TRIANGLE_STRIP)
            {
                // Specification 3.7.2.1: {p_i, p_(i + (1 + i % 2)), p_(i + (2 - i % 2))}.
                a = corners[t];
                b = corners[t + 1 + t % 2];
                c = corners[t + 2 - t % 2];
            }
            else
            {
                a = corners[t + 1];
                b = corners[t + 2];
                c = corners[0];
            }
            if (mirrored)
            {
                std::swap(b, c);
            }
            m_out.indices.insert(m_out.indices.end(), {a, b, c});
        }
        m_out.parts.push_back(
            {nodeLabel + " " + label, firstTriangle, static_cast<std::uint32_t>(triangles)});
        return true;
    }

    const tinygltf::Model& m_model;
    const MeshFileOptions& m_options;
    MeshArrays& m_out;
    ReadFailure& m_failure;
    std::size_t m_maxTriangles;
};

} // namespace

bool readGltf(std::string_view bytes, const std::string& baseFolder, const MeshFileOptions& options,
              MeshArrays& out, ReadFailure& failure)
{
    if (bytes.size() > std::numeric_limits<unsigned int>::max())
    {
        failure = {GeometryFileError::TooLarge, "larger than tinygltf can read (4 GiB)"};
        return false;
    }
    ExternalFiles files;
    files.confine = options.confineExternalFiles;
    files.followSymlinks = options.followSymlinks;
    files.budgetBytes = options.maxFileBytes > bytes.size() ? options.maxFileBytes - bytes.size() : 0;
    if (!baseFolder.empty())
    {
        std::error_code error;
        files.folder = std::filesystem::absolute(baseFolder, error).lexically_normal();
        if (error)
        {
            files.folder.clear();
        }
    }

    tinygltf::TinyGLTF loader;
    loader.SetImageLoader(&skipImage, nullptr);
    loader.SetFsCallbacks({&fileExists, &expandFilePath, &readWholeFile, &writeWholeFile, &files});
    tinygltf::Model model;
    std::string error;
    std::string warning;
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    const auto length = static_cast<unsigned int>(bytes.size());
    const bool binary = bytes.size() >= 4 && std::memcmp(bytes.data(), "glTF", 4) == 0;
    if (binary && bytes.size() >= 12)
    {
        // tinygltf says only "Invalid glTF binary" for the commonest fault, a cut-off file.
        std::uint32_t declared = 0;
        std::memcpy(&declared, bytes.data() + 8, sizeof declared);
        if (declared > bytes.size())
        {
            failure = {GeometryFileError::Malformed, "binary glTF: truncated (the header says " +
                                                         std::to_string(declared) + " bytes, the file has " +
                                                         std::to_string(bytes.size()) + ")"};
            return false;
        }
    }
    const bool loaded =
        binary ? loader.LoadBinaryFromMemory(&model, &error, &warning, data, length, baseFolder)
               : loader.LoadASCIIFromString(&model, &error, &warning, bytes.data(), length, baseFolder);
    if (!loaded)
    {
        std::string message = error.empty() ? std::string("tinygltf refused the file") : firstLine(error);
        if (!files.refusal.empty())
        {
            message += " (" + files.refusal + ")";
        }
        failure = {files.overBudget ? GeometryFileError::TooLarge : GeometryFileError::Malformed,
                   (binary ? "binary glTF: " : "glTF: ") + message};
        return false;
    }
    GltfReader reader(model, options, out, failure);
    return reader.read();
}

} // namespace polytope::server::detail

// Scene files: FlatBuffers' JSON parser turns the text into a FlatBuffer against scene.fbs (it already
// refuses malformed JSON, unknown fields, unknown enum names, wrong types and missing required fields);
// this file then checks every value the parser cannot (NaN and Inf, which it accepts as tokens; ranges;
// numeric enum values; hulls) and converts to plain structs. The first failure ends the parse with the
// field's path.
// Longer than 600 lines on purpose: it is one check per field of scene.fbs, read top to bottom in the
// schema's order, and splitting it would scatter the schema's rules over files. Reading the geometry files a
// scene names is scene_geometry.cpp; the joints, which refer to bodies by name, are scene_joints.cpp;
// building a World from the result is scene_build.cpp.
#include "polytope/server/scene_file.h"

#include "scene_file_detail.h"

#include "polytope/physics/hull.h"
#include "polytope/physics/mass.h"
#include "polytope/physics/scenes.h"
#include "polytope/scene/scene_generated.h"
#include "polytope/server/geometry_files.h"

#include <flatbuffers/idl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <span>
#include <tuple>
#include <utility>

namespace polytope::server
{

namespace detail
{
/// The text of server/schema/scene.fbs, embedded at build time (scene_schema_text.cpp, generated).
extern const char* const kSceneSchemaText;
} // namespace detail

namespace
{

namespace fbs = polytope::scene;
using detail::fail;
using detail::kMaxQuotedBytes;
using detail::number;
using physics::Vec3;

// Ranges of the values a file may hold (docs/SCENES.md lists them).
constexpr float kMaxSizeMeters = 1.0e4f; // radii, half heights, half extents, hull coordinates
constexpr float kMaxSpeed = 1.0e3f;      // m/s and rad/s, per component
constexpr float kMaxGravity = 1.0e3f;    // m/s^2, per component
constexpr float kMaxFriction = 10.0f;
constexpr float kMaxDamping = 1.0e3f; // 1/s
constexpr float kMaxGravityScale = 100.0f;
constexpr float kMaxEulerDegrees = 360.0f;
constexpr std::size_t kMaxNameBytes = 1024;
constexpr std::uint32_t kMaxBodiesPerClient = 100000;

} // namespace

namespace detail
{

bool checkRange(const std::string& path, float v, float lo, float hi, std::string& error)
{
    if (!std::isfinite(v))
    {
        return fail(error, path, "must be finite (got " + number(v) + ")");
    }
    if (v < lo || v > hi)
    {
        return fail(error, path,
                    "must be in [" + number(lo) + ", " + number(hi) + "] (got " + number(v) + ")");
    }
    return true;
}

bool readVec3(const std::string& path, const fbs::Vec3& v, float lo, float hi, Vec3& out, std::string& error)
{
    out = {v.x(), v.y(), v.z()};
    return checkRange(path + ".x", out.x, lo, hi, error) && checkRange(path + ".y", out.y, lo, hi, error) &&
           checkRange(path + ".z", out.z, lo, hi, error);
}

bool readOrientation(const std::string& path, const fbs::Quat* orientation, const fbs::Vec3* euler,
                     physics::Quat& out, std::string& error)
{
    if (orientation != nullptr && euler != nullptr)
    {
        return fail(error, path + ".orientation", "give orientation or euler_degrees, not both");
    }
    if (orientation != nullptr)
    {
        const fbs::Quat& q = *orientation;
        const std::string qPath = path + ".orientation";
        if (!checkRange(qPath + ".x", q.x(), -1.0e6f, 1.0e6f, error) ||
            !checkRange(qPath + ".y", q.y(), -1.0e6f, 1.0e6f, error) ||
            !checkRange(qPath + ".z", q.z(), -1.0e6f, 1.0e6f, error) ||
            !checkRange(qPath + ".w", q.w(), -1.0e6f, 1.0e6f, error))
        {
            return false;
        }
        const double x = q.x(), y = q.y(), z = q.z(), w = q.w();
        const double length = std::sqrt(x * x + y * y + z * z + w * w);
        if (!(length > 1e-6))
        {
            return fail(error, qPath,
                        "must not be zero (identity is {\"x\": 0, \"y\": 0, \"z\": 0, \"w\": 1})");
        }
        out = {static_cast<float>(x / length), static_cast<float>(y / length), static_cast<float>(z / length),
               static_cast<float>(w / length)};
    }
    if (euler != nullptr)
    {
        Vec3 degrees;
        if (!readVec3(path + ".euler_degrees", *euler, -kMaxEulerDegrees, kMaxEulerDegrees, degrees, error))
        {
            return false;
        }
        // Extrinsic x, then y, then z (about the fixed world axes): q = qz * qy * qx.
        const physics::Quat qx =
            physics::quatFromAxisAngle({1.0f, 0.0f, 0.0f}, degrees.x * kDegreesToRadians);
        const physics::Quat qy =
            physics::quatFromAxisAngle({0.0f, 1.0f, 0.0f}, degrees.y * kDegreesToRadians);
        const physics::Quat qz =
            physics::quatFromAxisAngle({0.0f, 0.0f, 1.0f}, degrees.z * kDegreesToRadians);
        out = physics::normalize(qz * (qy * qx));
    }
    return true;
}

} // namespace detail

namespace
{

using detail::checkRange;
using detail::readOrientation;
using detail::readVec3;

/// v finite, > 0 and <= hi.
bool checkPositive(const std::string& path, float v, float hi, std::string& error)
{
    if (!std::isfinite(v))
    {
        return fail(error, path, "must be finite (got " + number(v) + ")");
    }
    if (!(v > 0.0f))
    {
        return fail(error, path, "must be positive (got " + number(v) + ")");
    }
    if (v > hi)
    {
        return fail(error, path, "must be at most " + number(hi) + " (got " + number(v) + ")");
    }
    return true;
}

bool checkOptionalPositive(const std::string& path, flatbuffers::Optional<float> v, float hi, float& out,
                           std::string& error)
{
    if (!v.has_value())
    {
        return fail(error, path, "missing (required)");
    }
    out = *v;
    return checkPositive(path, out, hi, error);
}

bool readPositiveVec3(const std::string& path, const fbs::Vec3& v, float hi, Vec3& out, std::string& error)
{
    out = {v.x(), v.y(), v.z()};
    return checkPositive(path + ".x", out.x, hi, error) && checkPositive(path + ".y", out.y, hi, error) &&
           checkPositive(path + ".z", out.z, hi, error);
}

/// Longest geometry file path a scene may give, bytes.
constexpr std::size_t kMaxGeometryPathBytes = 1024;

bool readSphere(const fbs::Sphere& sphere, const std::string& shapePath, physics::Shape& shape,
                std::string& error)
{
    float radius = 0.0f;
    if (!checkOptionalPositive(shapePath + ".radius", sphere.radius(), kMaxSizeMeters, radius, error))
    {
        return false;
    }
    shape = physics::Shape::makeSphere(radius);
    return true;
}

bool readCapsule(const fbs::Capsule& capsule, const std::string& shapePath, physics::Shape& shape,
                 std::string& error)
{
    float radius = 0.0f;
    float halfHeight = 0.0f;
    if (!checkOptionalPositive(shapePath + ".radius", capsule.radius(), kMaxSizeMeters, radius, error) ||
        !checkOptionalPositive(shapePath + ".half_height", capsule.half_height(), kMaxSizeMeters, halfHeight,
                               error))
    {
        return false;
    }
    shape = physics::Shape::makeCapsule(halfHeight, radius);
    return true;
}

bool readBox(const fbs::Box& box, const std::string& shapePath, physics::Shape& shape, std::string& error)
{
    Vec3 halfExtents;
    if (!readPositiveVec3(shapePath + ".half_extents", *box.half_extents(), kMaxSizeMeters, halfExtents,
                          error))
    {
        return false;
    }
    shape = physics::Shape::makeBox(halfExtents);
    return true;
}

/// The convex hull of the points; shape gets type Hull and index `hullIndex`.
bool readHull(const fbs::Hull& hull, const std::string& shapePath, std::uint32_t hullIndex,
              physics::Shape& shape, physics::ConvexHull& out, std::string& error)
{
    const auto& points = *hull.points();
    if (points.size() < 4 || points.size() > kMaxSceneHullPoints)
    {
        return fail(error, shapePath + ".points",
                    "must list 4 to " + std::to_string(kMaxSceneHullPoints) + " points (got " +
                        std::to_string(points.size()) + ")");
    }
    std::vector<Vec3> cloud(points.size());
    for (flatbuffers::uoffset_t i = 0; i < points.size(); ++i)
    {
        if (!readVec3(shapePath + ".points[" + std::to_string(i) + "]", *points.Get(i), -kMaxSizeMeters,
                      kMaxSizeMeters, cloud[i], error))
        {
            return false;
        }
    }
    physics::HullResult built = physics::buildConvexHull(cloud);
    if (!built.ok())
    {
        return fail(error, shapePath + ".points",
                    std::string("no convex hull: ") + physics::toString(built.error) + " (" + built.message +
                        ")");
    }
    out = std::move(built.hull);
    shape = physics::Shape::makeHull(hullIndex);
    return true;
}

bool readCompound(const fbs::Compound& compound, const std::string& shapePath, SceneBody& out,
                  std::string& error)
{
    const std::string childrenPath = shapePath + ".children";
    if (compound.children() == nullptr) // required in the schema
    {
        return fail(error, childrenPath, "missing (required)");
    }
    const auto& children = *compound.children();
    if (children.size() < 1 || children.size() > physics::kMaxCompoundChildren)
    {
        return fail(error, childrenPath,
                    "must list 1 to " + std::to_string(physics::kMaxCompoundChildren) + " children (got " +
                        std::to_string(children.size()) + ")");
    }
    out.compound.children.resize(children.size());
    for (flatbuffers::uoffset_t i = 0; i < children.size(); ++i)
    {
        const fbs::CompoundChild& child = *children.Get(i);
        const std::string childPath = childrenPath + "[" + std::to_string(i) + "]";
        physics::CompoundChild& part = out.compound.children[i];
        if (child.shape() == nullptr) // required in the schema
        {
            return fail(error, childPath + ".shape", "missing (required)");
        }
        bool read = false;
        switch (child.shape_type())
        {
        case fbs::ChildShape::Sphere:
            read = readSphere(*child.shape_as_Sphere(), childPath + ".shape", part.shape, error);
            break;
        case fbs::ChildShape::Capsule:
            read = readCapsule(*child.shape_as_Capsule(), childPath + ".shape", part.shape, error);
            break;
        case fbs::ChildShape::Box:
            read = readBox(*child.shape_as_Box(), childPath + ".shape", part.shape, error);
            break;
        case fbs::ChildShape::Hull:
        {
            physics::ConvexHull hull;
            read = readHull(*child.shape_as_Hull(), childPath + ".shape",
                            static_cast<std::uint32_t>(out.childHulls.size()), part.shape, hull, error);
            out.childHulls.push_back(std::move(hull));
            break;
        }
        default:
            return fail(error, childPath + ".shape_type",
                        "unknown child shape type " + std::to_string(static_cast<int>(child.shape_type())) +
                            " (Sphere, Capsule, Box or Hull)");
        }
        if (!read ||
            (child.position() != nullptr &&
             !readVec3(childPath + ".position", *child.position(), -kMaxSizeMeters, kMaxSizeMeters,
                       part.transform.p, error)) ||
            !readOrientation(childPath, child.orientation(), child.euler_degrees(), part.transform.q, error))
        {
            return false;
        }
    }
    // The engine's own check (each child's numbers, hull indices, unit rotations), as a last guard.
    const physics::ShapeValidation valid = physics::validateCompound(out.compound, out.childHulls);
    if (!valid.ok())
    {
        return fail(error, shapePath, valid.message);
    }
    out.desc.shape = physics::Shape::makeCatalogued(physics::ShapeType::Compound, 0);
    return true;
}

/// The lower-case extension of a path named in a scene (".obj").
std::string lowerExtension(const std::string& path)
{
    std::string extension = std::filesystem::path(path).extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return extension;
}

/// A geometry file's path as a scene names it: relative, inside the scene file's folder (on the path's
/// text), normalised ("./a/../level.obj" is "level.obj").
bool readGeometryPath(const flatbuffers::String* file, const std::string& filePath, std::string& normalized,
                      std::string& error)
{
    if (file == nullptr)
    {
        return fail(error, filePath, "missing (required)");
    }
    if (file->size() > kMaxGeometryPathBytes)
    {
        return fail(error, filePath, "longer than " + std::to_string(kMaxGeometryPathBytes) + " bytes");
    }
    std::string why;
    if (!resolveScenePath(std::string(), file->str(), normalized, why, ScenePathRules{false, false}))
    {
        return fail(error, filePath, why);
    }
    return true;
}

/// The meshes and heightfields of a scene being parsed; a file named again with the same parameters is the
/// same entry.
class GeometryRegistry
{
  public:
    explicit GeometryRegistry(std::vector<SceneGeometry>& entries) : m_entries(entries) {}

    /// Adds `geometry` (or finds the entry of the same `key`; an empty key is never shared) and sets `index`.
    bool add(const std::string& key, SceneGeometry&& geometry, const std::string& shapePath,
             std::uint32_t& index, std::string& error)
    {
        if (!key.empty())
        {
            if (const auto known = m_byKey.find(key); known != m_byKey.end())
            {
                index = known->second;
                return true;
            }
        }
        if (m_entries.size() >= kMaxSceneGeometry)
        {
            return fail(error, shapePath,
                        "too many meshes and heightfields (at most " + std::to_string(kMaxSceneGeometry) +
                            " different ones in a scene)");
        }
        index = static_cast<std::uint32_t>(m_entries.size());
        m_entries.push_back(std::move(geometry));
        if (!key.empty())
        {
            m_byKey.emplace(key, index);
        }
        return true;
    }

  private:
    std::vector<SceneGeometry>& m_entries;
    std::map<std::string, std::uint32_t> m_byKey;
};

bool readMesh(const fbs::Mesh& mesh, const std::string& shapePath, SceneBody& out, GeometryRegistry& registry,
              std::string& error)
{
    SceneGeometry geometry;
    geometry.type = physics::ShapeType::Mesh;
    geometry.field = shapePath + ".file";
    if (!readGeometryPath(mesh.file(), geometry.field, geometry.file, error))
    {
        return false;
    }
    const std::string extension = lowerExtension(geometry.file);
    if (extension != ".obj" && extension != ".gltf" && extension != ".glb")
    {
        return fail(error, geometry.field,
                    "not a mesh file: '" + printableExcerpt(geometry.file, kMaxQuotedBytes) +
                        "' (a mesh file is .obj, .gltf or .glb)");
    }
    if (mesh.scale() != nullptr &&
        !readPositiveVec3(shapePath + ".scale", *mesh.scale(), kMaxSizeMeters, geometry.scale, error))
    {
        return false;
    }
    const Vec3& s = geometry.scale;
    const std::string key =
        "mesh " + number(s.x) + " " + number(s.y) + " " + number(s.z) + " " + geometry.file;
    out.desc.shape = physics::Shape::makeCatalogued(physics::ShapeType::Mesh, 0);
    return registry.add(key, std::move(geometry), shapePath, out.geometry, error);
}

/// An optional setting of a heightfield that only a file has.
template <class T>
bool refuseForInline(const std::string& path, const flatbuffers::Optional<T>& value, std::string& error)
{
    return !value.has_value() || fail(error, path, "only for a heightfield file (inline heights are metres)");
}

bool readSampleCount(const std::string& path, const flatbuffers::Optional<std::uint32_t>& value,
                     const char* needs, std::uint32_t& out, std::string& error)
{
    if (!value.has_value())
    {
        return fail(error, path, std::string("missing (required ") + needs + ")");
    }
    out = *value;
    if (out < physics::kMinHeightFieldSamplesPerSide || out > physics::kMaxHeightFieldSamplesPerSide)
    {
        return fail(error, path,
                    "must be in [" + std::to_string(physics::kMinHeightFieldSamplesPerSide) + ", " +
                        std::to_string(physics::kMaxHeightFieldSamplesPerSide) + "] (got " +
                        std::to_string(out) + ")");
    }
    return true;
}

bool readHeightField(const fbs::HeightField& field, const std::string& shapePath, SceneBody& out,
                     GeometryRegistry& registry, std::string& error)
{
    SceneGeometry geometry;
    geometry.type = physics::ShapeType::HeightField;
    const bool hasFile = field.file() != nullptr;
    const bool hasHeights = field.heights() != nullptr;
    if (hasFile == hasHeights)
    {
        return fail(error, shapePath,
                    hasFile ? "give file or heights, not both"
                            : "give file (a heightfield file) or heights (inline), one of them");
    }
    geometry.cellSizeX = field.cell_size_x();
    geometry.cellSizeZ = field.cell_size_z();
    if (!checkPositive(shapePath + ".cell_size_x", geometry.cellSizeX, kMaxSizeMeters, error) ||
        !checkPositive(shapePath + ".cell_size_z", geometry.cellSizeZ, kMaxSizeMeters, error))
    {
        return false;
    }
    out.desc.shape = physics::Shape::makeCatalogued(physics::ShapeType::HeightField, 0);

    if (hasHeights)
    {
        geometry.field = shapePath + ".heights";
        const auto& heights = *field.heights();
        if (!refuseForInline(shapePath + ".height_scale", field.height_scale(), error) ||
            !refuseForInline(shapePath + ".height_offset", field.height_offset(), error) ||
            !refuseForInline(shapePath + ".hole_sample", field.hole_sample(), error))
        {
            return false;
        }
        if (heights.size() > kMaxSceneInlineHeights)
        {
            return fail(error, geometry.field,
                        "too many (" + std::to_string(heights.size()) + ", at most " +
                            std::to_string(kMaxSceneInlineHeights) + "; put a larger field in a file)");
        }
        std::uint32_t samplesX = 0;
        std::uint32_t samplesZ = 0;
        if (!readSampleCount(shapePath + ".samples_x", field.samples_x(), "with heights", samplesX, error) ||
            !readSampleCount(shapePath + ".samples_z", field.samples_z(), "with heights", samplesZ, error))
        {
            return false;
        }
        const std::uint64_t expected = std::uint64_t{samplesX} * samplesZ;
        if (heights.size() != expected)
        {
            return fail(error, geometry.field,
                        "must hold samples_x * samples_z = " + std::to_string(expected) + " heights (got " +
                            std::to_string(heights.size()) + ")");
        }
        std::vector<float> values(heights.size());
        for (flatbuffers::uoffset_t i = 0; i < heights.size(); ++i)
        {
            values[i] = heights.Get(i);
            if (!checkRange(geometry.field + "[" + std::to_string(i) + "]", values[i],
                            -physics::kMaxHeightFieldExtentMeters, physics::kMaxHeightFieldExtentMeters,
                            error))
            {
                return false;
            }
        }
        physics::HeightFieldDesc desc;
        desc.sampleCountX = samplesX;
        desc.sampleCountZ = samplesZ;
        desc.cellSizeX = geometry.cellSizeX;
        desc.cellSizeZ = geometry.cellSizeZ;
        desc.heights = values;
        physics::HeightFieldBuildResult built = physics::buildHeightField(desc);
        if (!built.ok())
        {
            return fail(error, shapePath,
                        std::string("no heightfield: ") + physics::toString(built.error) + " (" +
                            built.message + ")");
        }
        geometry.heightField = std::make_shared<const physics::HeightField>(std::move(built.heightField));
        return registry.add(std::string(), std::move(geometry), shapePath, out.geometry, error);
    }

    geometry.field = shapePath + ".file";
    if (!readGeometryPath(field.file(), geometry.field, geometry.file, error))
    {
        return false;
    }
    const std::string extension = lowerExtension(geometry.file);
    const bool raw = extension == ".raw" || extension == ".r16";
    if (!raw && extension != ".png")
    {
        return fail(error, geometry.field,
                    "not a heightfield file: '" + printableExcerpt(geometry.file, kMaxQuotedBytes) +
                        "' (a heightfield file is .png, .raw or .r16)");
    }
    if (raw)
    {
        if (!readSampleCount(shapePath + ".samples_x", field.samples_x(), "for a raw file",
                             geometry.rawSamplesX, error) ||
            !readSampleCount(shapePath + ".samples_z", field.samples_z(), "for a raw file",
                             geometry.rawSamplesZ, error))
        {
            return false;
        }
    }
    else if (field.samples_x().has_value() || field.samples_z().has_value())
    {
        return fail(error, shapePath + (field.samples_x().has_value() ? ".samples_x" : ".samples_z"),
                    "only for a raw file or inline heights (a PNG's size is its image's)");
    }
    geometry.heightScale = field.height_scale().value_or(1.0f);
    geometry.heightOffset = field.height_offset().value_or(0.0f);
    if (!checkPositive(shapePath + ".height_scale", geometry.heightScale, kMaxSizeMeters, error) ||
        !checkRange(shapePath + ".height_offset", geometry.heightOffset,
                    -physics::kMaxHeightFieldExtentMeters, physics::kMaxHeightFieldExtentMeters, error))
    {
        return false;
    }
    if (field.hole_sample().has_value())
    {
        const std::int32_t hole = *field.hole_sample();
        if (hole < 0 || hole > 65535)
        {
            return fail(error, shapePath + ".hole_sample",
                        "must be in [0, 65535] (got " + std::to_string(hole) + ")");
        }
        geometry.holeSample = static_cast<std::uint16_t>(hole);
    }
    const std::string key =
        "heightfield " + std::to_string(geometry.rawSamplesX) + " " + std::to_string(geometry.rawSamplesZ) +
        " " + number(geometry.cellSizeX) + " " + number(geometry.cellSizeZ) + " " +
        number(geometry.heightScale) + " " + number(geometry.heightOffset) + " " +
        (geometry.holeSample ? std::to_string(*geometry.holeSample) : std::string("-")) + " " + geometry.file;
    return registry.add(key, std::move(geometry), shapePath, out.geometry, error);
}

bool readShape(const fbs::Body& body, const std::string& path, SceneBody& out, GeometryRegistry& registry,
               std::string& error)
{
    physics::Shape& shape = out.desc.shape;
    const std::string shapePath = path + ".shape";
    if (body.shape() == nullptr) // required in the schema, so the parser and Verifier refuse this already
    {
        return fail(error, shapePath, "missing (required)");
    }
    const auto needsStaticOrKinematic = [&](const char* what)
    {
        return out.desc.type != physics::BodyType::Dynamic ||
               fail(error, path + ".motion",
                    std::string("a ") + what + " shape needs motion Static or Kinematic (got Dynamic)");
    };
    switch (body.shape_type())
    {
    case fbs::Shape::Sphere:
        if (!readSphere(*body.shape_as_Sphere(), shapePath, shape, error))
        {
            return false;
        }
        break;
    case fbs::Shape::Capsule:
        if (!readCapsule(*body.shape_as_Capsule(), shapePath, shape, error))
        {
            return false;
        }
        break;
    case fbs::Shape::Box:
        if (!readBox(*body.shape_as_Box(), shapePath, shape, error))
        {
            return false;
        }
        break;
    case fbs::Shape::Hull:
        // The hull's own index in the one-hull span below; set again by buildScene.
        if (!readHull(*body.shape_as_Hull(), shapePath, 0, shape, out.hull, error))
        {
            return false;
        }
        break;
    case fbs::Shape::Plane:
    {
        const fbs::Plane& plane = *body.shape_as_Plane();
        Vec3 normal;
        if (!readVec3(shapePath + ".normal", *plane.normal(), -1.0e6f, 1.0e6f, normal, error) ||
            !checkRange(shapePath + ".offset", plane.offset(), -physics::kWorldBoundMeters,
                        physics::kWorldBoundMeters, error))
        {
            return false;
        }
        const double length =
            std::sqrt(static_cast<double>(normal.x) * normal.x + static_cast<double>(normal.y) * normal.y +
                      static_cast<double>(normal.z) * normal.z);
        if (!(length > 1e-6))
        {
            return fail(error, shapePath + ".normal", "must not be zero");
        }
        normal = {static_cast<float>(normal.x / length), static_cast<float>(normal.y / length),
                  static_cast<float>(normal.z / length)};
        if (out.desc.type != physics::BodyType::Static)
        {
            return fail(error, path + ".motion", "a Plane shape needs motion Static");
        }
        shape = physics::Shape::makePlane(normal, plane.offset());
        break;
    }
    case fbs::Shape::Compound:
        if (!readCompound(*body.shape_as_Compound(), shapePath, out, error))
        {
            return false;
        }
        break;
    case fbs::Shape::Mesh:
        return needsStaticOrKinematic("Mesh") &&
               readMesh(*body.shape_as_Mesh(), shapePath, out, registry, error);
    case fbs::Shape::HeightField:
        return needsStaticOrKinematic("HeightField") &&
               readHeightField(*body.shape_as_HeightField(), shapePath, out, registry, error);
    default:
        return fail(error, path + ".shape_type",
                    "unknown shape type " + std::to_string(static_cast<int>(body.shape_type())) +
                        " (Sphere, Capsule, Box, Hull, Plane, Compound, Mesh or HeightField)");
    }

    if (shape.type == physics::ShapeType::Compound)
    {
        if (out.desc.type == physics::BodyType::Dynamic)
        {
            const physics::MassProperties mass =
                physics::computeMassProperties(out.compound, out.desc.density, out.childHulls);
            if (!std::isfinite(mass.mass) || !(mass.mass > 0.0f))
            {
                return fail(error, path + ".density",
                            "gives a mass that is not positive and finite (" + number(mass.mass) + " kg)");
            }
        }
        return true;
    }
    // The engine's own check, as a last guard (the hull, if any, is index 0 of a one-hull catalogue).
    const std::span<const physics::ConvexHull> hulls =
        shape.type == physics::ShapeType::Hull ? std::span<const physics::ConvexHull>(&out.hull, 1)
                                               : std::span<const physics::ConvexHull>();
    const physics::ShapeValidation valid = physics::validateShape(shape, hulls);
    if (!valid.ok())
    {
        return fail(error, shapePath, valid.message);
    }
    if (out.desc.type == physics::BodyType::Dynamic)
    {
        const physics::MassProperties mass = physics::computeMassProperties(shape, out.desc.density, hulls);
        if (!std::isfinite(mass.mass) || !(mass.mass > 0.0f))
        {
            return fail(error, path + ".density",
                        "gives a mass that is not positive and finite (" + number(mass.mass) + " kg)");
        }
    }
    return true;
}

bool readBody(const fbs::Body& body, const std::string& path, SceneBody& out, GeometryRegistry& registry,
              std::string& error)
{
    if (body.name() != nullptr)
    {
        if (body.name()->size() == 0)
        {
            return fail(error, path + ".name", "must not be empty (leave it out for an unnamed body)");
        }
        if (body.name()->size() > kMaxSceneBodyNameBytes)
        {
            return fail(error, path + ".name",
                        "longer than " + std::to_string(kMaxSceneBodyNameBytes) + " bytes");
        }
        out.name = body.name()->str();
    }
    physics::BodyDesc& desc = out.desc;
    switch (body.motion())
    {
    case fbs::MotionType::Static:
        desc.type = physics::BodyType::Static;
        break;
    case fbs::MotionType::Kinematic:
        desc.type = physics::BodyType::Kinematic;
        break;
    case fbs::MotionType::Dynamic:
        desc.type = physics::BodyType::Dynamic;
        break;
    default:
        return fail(error, path + ".motion",
                    "unknown motion type " + std::to_string(static_cast<int>(body.motion())) +
                        " (Static, Kinematic or Dynamic)");
    }

    desc.density = body.density();
    if (!checkRange(path + ".density", desc.density, kMinSceneDensity, kMaxSceneDensity, error))
    {
        return false;
    }
    if (!readShape(body, path, out, registry, error))
    {
        return false;
    }

    if (body.position() != nullptr &&
        !readVec3(path + ".position", *body.position(), -physics::kWorldBoundMeters,
                  physics::kWorldBoundMeters, desc.transform.p, error))
    {
        return false;
    }
    if (!readOrientation(path, body.orientation(), body.euler_degrees(), desc.transform.q, error))
    {
        return false;
    }
    if (body.linear_velocity() != nullptr && !readVec3(path + ".linear_velocity", *body.linear_velocity(),
                                                       -kMaxSpeed, kMaxSpeed, desc.linearVelocity, error))
    {
        return false;
    }
    if (body.angular_velocity() != nullptr && !readVec3(path + ".angular_velocity", *body.angular_velocity(),
                                                        -kMaxSpeed, kMaxSpeed, desc.angularVelocity, error))
    {
        return false;
    }

    desc.friction = body.friction();
    desc.restitution = body.restitution();
    desc.linearDamping = body.linear_damping();
    desc.angularDamping = body.angular_damping();
    desc.gravityScale = body.gravity_scale();
    if (!checkRange(path + ".friction", desc.friction, 0.0f, kMaxFriction, error) ||
        !checkRange(path + ".restitution", desc.restitution, 0.0f, 1.0f, error) ||
        !checkRange(path + ".linear_damping", desc.linearDamping, 0.0f, kMaxDamping, error) ||
        !checkRange(path + ".angular_damping", desc.angularDamping, 0.0f, kMaxDamping, error) ||
        !checkRange(path + ".gravity_scale", desc.gravityScale, -kMaxGravityScale, kMaxGravityScale, error))
    {
        return false;
    }

    switch (body.planar())
    {
    case fbs::PlanarAxis::None:
        desc.allowedDofs = physics::kDofAll;
        break;
    case fbs::PlanarAxis::X:
        desc.allowedDofs = physics::planarDofs(0);
        break;
    case fbs::PlanarAxis::Y:
        desc.allowedDofs = physics::planarDofs(1);
        break;
    case fbs::PlanarAxis::Z:
        desc.allowedDofs = physics::planarDofs(2);
        break;
    default:
        return fail(error, path + ".planar",
                    "unknown planar axis " + std::to_string(static_cast<int>(body.planar())) +
                        " (None, X, Y or Z)");
    }
    desc.allowSleep = body.allow_sleep();
    if (body.layer() >= physics::kMaxCollisionLayers)
    {
        return fail(error, path + ".layer",
                    "must be in [0, " + std::to_string(physics::kMaxCollisionLayers - 1) + "] (got " +
                        std::to_string(body.layer()) + ")");
    }
    desc.layer = static_cast<std::uint8_t>(body.layer());
    desc.group = body.group();
    desc.isSensor = body.is_sensor();
    return true;
}

/// "3: 14: error: unknown field: x" (FlatBuffers' gcc-style position) becomes "line 3, column 14: unknown
/// field: x"; anything else is kept as it is.
std::string describeParserError(const std::string& raw)
{
    std::string text = raw.substr(0, raw.find('\n'));
    unsigned long line = 0;
    unsigned long column = 0;
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%lu: %lu: error: %n", &line, &column, &consumed) == 2 && consumed > 0)
    {
        return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
               text.substr(static_cast<std::size_t>(consumed));
    }
    return text.empty() ? std::string("malformed scene JSON") : text;
}

/// The scene's "logic": a name, an optional script (a relative path below the scene file's folder, as
/// geometry files are), settings of any JSON form kept as JSON text.
bool readLogic(const fbs::Scene& scene, SceneDescription& out, std::string& error)
{
    const fbs::Logic* logic = scene.logic();
    if (logic == nullptr)
    {
        return true;
    }
    LogicSpec spec;
    spec.name = logic->name()->str();
    if (spec.name.empty() || spec.name.size() > kMaxNameBytes)
    {
        return fail(error, "logic.name", "must be 1.." + std::to_string(kMaxNameBytes) + " bytes");
    }
    if (logic->script() != nullptr)
    {
        spec.script = logic->script()->str();
        std::string resolved;
        std::string why;
        if (spec.script.empty() ||
            !resolveScenePath("scene.json", spec.script, resolved, why, ScenePathRules{false, false}))
        {
            return fail(error, "logic.script", spec.script.empty() ? "empty" : why);
        }
    }
    if (const auto* settings = logic->settings(); settings != nullptr && settings->size() > 0)
    {
        std::string json;
        logic->settings_flexbuffer_root().ToString(true, true, json);
        spec.settingsJson = std::move(json);
    }
    out.stopOnLogicError = logic->stop_on_error();
    out.logic = std::move(spec);
    return true;
}

bool parseChecked(std::string_view json, SceneDescription& out, std::string& error)
{
    if (json.size() > kMaxSceneFileBytes)
    {
        return fail(error, "scene",
                    "larger than " + std::to_string(kMaxSceneFileBytes) + " bytes (" +
                        std::to_string(json.size()) + ")");
    }
    if (const std::size_t nul = json.find('\0'); nul != std::string_view::npos)
    {
        return fail(error, "scene", "contains a NUL byte at offset " + std::to_string(nul));
    }

    flatbuffers::IDLOptions options;
    options.strict_json = true;                     // standard JSON: quoted names, no trailing commas
    options.skip_unexpected_fields_in_json = false; // unknown fields are errors (also the default)
    flatbuffers::Parser parser(options);
    if (!parser.Parse(detail::kSceneSchemaText))
    {
        return fail(error, "scene schema", "does not parse (a build problem): " + parser.error_);
    }
    const std::string text(json); // the parser wants a NUL-terminated string
    if (!parser.ParseJson(text.c_str()))
    {
        error = describeParserError(parser.error_);
        return false;
    }
    // The buffer is the parser's own, but the accessors below trust it: verify it anyway (cheap).
    flatbuffers::Verifier verifier(parser.builder_.GetBufferPointer(), parser.builder_.GetSize(), 64,
                                   8000000);
    if (!fbs::VerifySceneBuffer(verifier))
    {
        return fail(error, "scene", "the parsed buffer failed verification");
    }
    const fbs::Scene& scene = *fbs::GetScene(parser.builder_.GetBufferPointer());

    out = SceneDescription{};
    GeometryRegistry registry(out.geometry);
    if (scene.name() != nullptr)
    {
        if (scene.name()->size() > kMaxNameBytes)
        {
            return fail(error, "name", "longer than " + std::to_string(kMaxNameBytes) + " bytes");
        }
        out.name = scene.name()->str();
    }
    if (scene.gravity() != nullptr &&
        !readVec3("gravity", *scene.gravity(), -kMaxGravity, kMaxGravity, out.gravity, error))
    {
        return false;
    }
    if (scene.builtin() != nullptr && scene.builtin()->size() > 0)
    {
        out.builtin = scene.builtin()->str();
        physics::SceneName name;
        std::string why;
        if (!physics::parseSceneName(out.builtin, name, why))
        {
            return fail(error, "builtin",
                        "unknown built-in scene \"" + out.builtin.substr(0, 64) + "\" (" + why + ")");
        }
    }
    if (scene.bodies() != nullptr)
    {
        const auto& bodies = *scene.bodies();
        if (bodies.size() > kMaxSceneBodies)
        {
            return fail(error, "bodies",
                        "too many (" + std::to_string(bodies.size()) + ", at most " +
                            std::to_string(kMaxSceneBodies) + ")");
        }
        out.bodies.resize(bodies.size());
        std::map<std::string_view, flatbuffers::uoffset_t> named;
        for (flatbuffers::uoffset_t i = 0; i < bodies.size(); ++i)
        {
            const std::string path = "bodies[" + std::to_string(i) + "]";
            if (!readBody(*bodies.Get(i), path, out.bodies[i], registry, error))
            {
                return false;
            }
            const std::string& name = out.bodies[i].name;
            if (name.empty())
            {
                continue;
            }
            if (const auto earlier = named.find(name); earlier != named.end())
            {
                return fail(error, path + ".name",
                            "\"" + printableExcerpt(name) + "\" is already the name of bodies[" +
                                std::to_string(earlier->second) + "]");
            }
            named.emplace(name, i);
        }
    }
    if (scene.player() != nullptr)
    {
        const fbs::Shape playerShape = scene.player()->shape_type();
        if (playerShape == fbs::Shape::Mesh || playerShape == fbs::Shape::HeightField)
        {
            return fail(error, "player.shape_type",
                        std::string("must be Sphere, Capsule, Box, Hull or Compound (got ") +
                            fbs::EnumNameShape(playerShape) + ")");
        }
        if (scene.player()->name() != nullptr)
        {
            return fail(error, "player.name",
                        "not for the player template (joints join the scene's own bodies, by name)");
        }
        SceneBody player;
        if (!readBody(*scene.player(), "player", player, registry, error))
        {
            return false;
        }
        if (player.desc.type == physics::BodyType::Static)
        {
            return fail(error, "player.motion", "must be Dynamic or Kinematic (got Static)");
        }
        out.player = std::move(player);
    }
    if (scene.spawn_points() != nullptr)
    {
        const auto& points = *scene.spawn_points();
        if (points.size() > kMaxSceneSpawnPoints)
        {
            return fail(error, "spawn_points",
                        "too many (" + std::to_string(points.size()) + ", at most " +
                            std::to_string(kMaxSceneSpawnPoints) + ")");
        }
        out.spawnPoints.resize(points.size());
        for (flatbuffers::uoffset_t i = 0; i < points.size(); ++i)
        {
            if (!readVec3("spawn_points[" + std::to_string(i) + "]", *points.Get(i),
                          -physics::kWorldBoundMeters, physics::kWorldBoundMeters, out.spawnPoints[i], error))
            {
                return false;
            }
        }
    }
    out.allowClientSpawn = scene.allow_client_spawn();
    out.keepBodiesOnLeave = scene.keep_bodies_on_leave();
    out.maxBodiesPerClient = scene.max_bodies_per_client();
    if (out.maxBodiesPerClient > kMaxBodiesPerClient)
    {
        return fail(error, "max_bodies_per_client",
                    "must be at most " + std::to_string(kMaxBodiesPerClient) + " (got " +
                        std::to_string(out.maxBodiesPerClient) + ")");
    }
    if (scene.layer_pairs() != nullptr)
    {
        const auto& pairs = *scene.layer_pairs();
        std::map<std::pair<std::uint32_t, std::uint32_t>, flatbuffers::uoffset_t> given;
        for (flatbuffers::uoffset_t i = 0; i < pairs.size(); ++i)
        {
            const fbs::LayerPair& pair = *pairs.Get(i);
            const std::string path = "layer_pairs[" + std::to_string(i) + "]";
            SceneLayerPair entry;
            for (const auto& [name, value, layer] :
                 {std::tuple{".a", pair.a(), &entry.a}, std::tuple{".b", pair.b(), &entry.b}})
            {
                if (!value.has_value())
                {
                    return fail(error, path + name, "missing (required)");
                }
                if (*value >= physics::kMaxCollisionLayers)
                {
                    return fail(error, path + name,
                                "must be in [0, " + std::to_string(physics::kMaxCollisionLayers - 1) +
                                    "] (got " + std::to_string(*value) + ")");
                }
                *layer = *value;
            }
            if (!pair.collide().has_value())
            {
                return fail(error, path + ".collide", "missing (required)");
            }
            entry.collide = *pair.collide();
            const std::pair<std::uint32_t, std::uint32_t> key{std::min(entry.a, entry.b),
                                                              std::max(entry.a, entry.b)};
            if (const auto earlier = given.find(key); earlier != given.end())
            {
                return fail(error, path,
                            "layers " + std::to_string(key.first) + " and " + std::to_string(key.second) +
                                " are already given by layer_pairs[" + std::to_string(earlier->second) + "]");
            }
            given.emplace(key, i);
            out.layerPairs.push_back(entry);
        }
    }
    return detail::readJoints(scene, out, error) && readLogic(scene, out, error);
}

} // namespace

bool parseSceneJson(std::string_view json, SceneDescription& out, std::string& error)
{
    try
    {
        return parseChecked(json, out, error);
    }
    catch (const std::exception& e) // std::bad_alloc from the parser or our vectors
    {
        error = std::string("scene: could not be parsed: ") + e.what();
        return false;
    }
}

bool loadSceneFile(const std::string& path, const FileRules& rules, SceneDescription& out, FileStatus& status,
                   std::string& error)
{
    std::string text;
    status = readRegularFile(path, rules, text, error);
    if (status != FileStatus::Ok || !parseSceneJson(text, out, error))
    {
        return false;
    }
    if (out.logic && !out.logic->script.empty())
    {
        // Checked by the parser: relative, and inside the scene file's folder.
        std::string resolved;
        std::string why;
        if (!resolveScenePath(path, out.logic->script, resolved, why, ScenePathRules{false, false}))
        {
            error = "logic.script: " + why;
            return false;
        }
        out.logic->script = std::move(resolved);
    }
    SceneGeometryRules geometryRules;
    geometryRules.followSymlinks = rules.followSymlinks;
    return loadSceneGeometry(out, path, geometryRules, error);
}

bool loadSceneFile(const std::string& path, SceneDescription& out, std::string& error)
{
    FileStatus status = FileStatus::Ok;
    if (!loadSceneFile(path, FileRules{kMaxSceneFileBytes, true}, out, status, error))
    {
        error = path + ": " + error;
        return false;
    }
    return true;
}

bool isSceneName(std::string_view text)
{
    if (text.empty() || text.size() > kMaxSceneNameBytes ||
        !std::isalnum(static_cast<unsigned char>(text[0])) || text.find("..") != std::string_view::npos ||
        isScenePath(text))
    {
        return false;
    }
    for (const char c : text)
    {
        // Only ASCII letters and digits: std::isalnum in another locale could accept more.
        const bool letterOrDigit = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!letterOrDigit && c != '_' && c != '-' && c != '.' && c != ':')
        {
            return false;
        }
    }
    return true;
}

bool isScenePath(std::string_view scene)
{
    return scene.find('/') != std::string_view::npos || (scene.size() > 5 && scene.ends_with(".json"));
}

std::string unknownSceneMessage(std::string_view name)
{
    return "no scene '" + printableExcerpt(name) + "' in the scene directory or among the built-in scenes";
}

std::string sceneFileFor(const std::string& directory, std::string_view name)
{
    std::string path = directory.empty() ? std::string(".") : directory;
    if (path.back() != '/')
    {
        path += '/';
    }
    return path + std::string(name) + ".json";
}

} // namespace polytope::server

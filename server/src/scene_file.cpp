// Scene files: FlatBuffers' JSON parser turns the text into a FlatBuffer against scene.fbs (it already
// refuses malformed JSON, unknown fields, unknown enum names, wrong types and missing required fields);
// this file then checks every value the parser cannot (NaN and Inf, which it accepts as tokens; ranges;
// numeric enum values; hulls) and converts to plain structs. The first failure ends the parse with the
// field's path.
// Longer than 600 lines on purpose: it is one check per field of scene.fbs, read top to bottom in the
// schema's order, and splitting it would scatter the schema's rules over files.
#include "polytope/server/scene_file.h"

#include "polytope/physics/hull.h"
#include "polytope/physics/mass.h"
#include "polytope/physics/scenes.h"
#include "polytope/scene/scene_generated.h"

#include <flatbuffers/idl.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <span>

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
constexpr float kDegreesToRadians = 0.017453292519943295f;

/// The shortest text that reads back as the same float ("0.001", "-1", "nan", "inf").
std::string number(float v)
{
    char text[48];
    const std::to_chars_result result = std::to_chars(text, text + sizeof text, v);
    return std::string(text, result.ptr);
}

bool fail(std::string& error, const std::string& path, const std::string& what)
{
    error = path + ": " + what;
    return false;
}

/// v finite and in [lo, hi].
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

bool readVec3(const std::string& path, const fbs::Vec3& v, float lo, float hi, Vec3& out, std::string& error)
{
    out = {v.x(), v.y(), v.z()};
    return checkRange(path + ".x", out.x, lo, hi, error) && checkRange(path + ".y", out.y, lo, hi, error) &&
           checkRange(path + ".z", out.z, lo, hi, error);
}

bool readPositiveVec3(const std::string& path, const fbs::Vec3& v, float hi, Vec3& out, std::string& error)
{
    out = {v.x(), v.y(), v.z()};
    return checkPositive(path + ".x", out.x, hi, error) && checkPositive(path + ".y", out.y, hi, error) &&
           checkPositive(path + ".z", out.z, hi, error);
}

bool readShape(const fbs::Body& body, const std::string& path, SceneBody& out, std::string& error)
{
    physics::Shape& shape = out.desc.shape;
    const std::string shapePath = path + ".shape";
    if (body.shape() == nullptr) // required in the schema, so the parser and Verifier refuse this already
    {
        return fail(error, shapePath, "missing (required)");
    }
    switch (body.shape_type())
    {
    case fbs::Shape::Sphere:
    {
        float radius = 0.0f;
        if (!checkOptionalPositive(shapePath + ".radius", body.shape_as_Sphere()->radius(), kMaxSizeMeters,
                                   radius, error))
        {
            return false;
        }
        shape = physics::Shape::makeSphere(radius);
        break;
    }
    case fbs::Shape::Capsule:
    {
        const fbs::Capsule& capsule = *body.shape_as_Capsule();
        float radius = 0.0f;
        float halfHeight = 0.0f;
        if (!checkOptionalPositive(shapePath + ".radius", capsule.radius(), kMaxSizeMeters, radius, error) ||
            !checkOptionalPositive(shapePath + ".half_height", capsule.half_height(), kMaxSizeMeters,
                                   halfHeight, error))
        {
            return false;
        }
        shape = physics::Shape::makeCapsule(halfHeight, radius);
        break;
    }
    case fbs::Shape::Box:
    {
        Vec3 halfExtents;
        if (!readPositiveVec3(shapePath + ".half_extents", *body.shape_as_Box()->half_extents(),
                              kMaxSizeMeters, halfExtents, error))
        {
            return false;
        }
        shape = physics::Shape::makeBox(halfExtents);
        break;
    }
    case fbs::Shape::Hull:
    {
        const auto& points = *body.shape_as_Hull()->points();
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
                        std::string("no convex hull: ") + physics::toString(built.error) + " (" +
                            built.message + ")");
        }
        out.hull = std::move(built.hull);
        shape.type = physics::ShapeType::Hull;
        shape.hullIndex = 0; // the hull's own index in the one-hull span below; set again by buildScene
        break;
    }
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
    default:
        return fail(error, path + ".shape_type",
                    "unknown shape type " + std::to_string(static_cast<int>(body.shape_type())) +
                        " (Sphere, Capsule, Box, Hull or Plane)");
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

bool readBody(const fbs::Body& body, const std::string& path, SceneBody& out, std::string& error)
{
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
    if (!readShape(body, path, out, error))
    {
        return false;
    }

    if (body.position() != nullptr &&
        !readVec3(path + ".position", *body.position(), -physics::kWorldBoundMeters,
                  physics::kWorldBoundMeters, desc.transform.p, error))
    {
        return false;
    }
    if (body.orientation() != nullptr && body.euler_degrees() != nullptr)
    {
        return fail(error, path + ".orientation", "give orientation or euler_degrees, not both");
    }
    if (body.orientation() != nullptr)
    {
        const fbs::Quat& q = *body.orientation();
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
        desc.transform.q = {static_cast<float>(x / length), static_cast<float>(y / length),
                            static_cast<float>(z / length), static_cast<float>(w / length)};
    }
    if (body.euler_degrees() != nullptr)
    {
        Vec3 degrees;
        if (!readVec3(path + ".euler_degrees", *body.euler_degrees(), -kMaxEulerDegrees, kMaxEulerDegrees,
                      degrees, error))
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
        desc.transform.q = physics::normalize(qz * (qy * qx));
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
        for (flatbuffers::uoffset_t i = 0; i < bodies.size(); ++i)
        {
            if (!readBody(*bodies.Get(i), "bodies[" + std::to_string(i) + "]", out.bodies[i], error))
            {
                return false;
            }
        }
    }
    if (scene.player() != nullptr)
    {
        SceneBody player;
        if (!readBody(*scene.player(), "player", player, error))
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
    return true;
}

const char* statusName(physics::WorldStatus status)
{
    switch (status)
    {
    case physics::WorldStatus::Ok:
        return "Ok";
    case physics::WorldStatus::BodyCapacityReached:
        return "BodyCapacityReached";
    case physics::WorldStatus::InvalidBodyDesc:
        return "InvalidBodyDesc";
    case physics::WorldStatus::StaleBodyId:
        return "StaleBodyId";
    case physics::WorldStatus::HullCapacityReached:
        return "HullCapacityReached";
    case physics::WorldStatus::InvalidHull:
        return "InvalidHull";
    case physics::WorldStatus::WrongBodyType:
        return "WrongBodyType";
    case physics::WorldStatus::CatalogueFull:
        return "CatalogueFull";
    case physics::WorldStatus::InvalidShape:
        return "InvalidShape";
    }
    return "unknown";
}

bool sameHull(const physics::ConvexHull& a, const physics::ConvexHull& b)
{
    return a.vertices == b.vertices && a.faceVertices == b.faceVertices;
}

/// The catalogue index of a hull equal to `hull` in `world`, adding it if there is none.
bool findOrAddHull(physics::World& world, const physics::ConvexHull& hull, std::uint32_t& index,
                   std::string& error)
{
    const std::span<const physics::ConvexHull> hulls = world.hulls();
    for (std::size_t i = 0; i < hulls.size(); ++i)
    {
        if (sameHull(hulls[i], hull))
        {
            index = static_cast<std::uint32_t>(i);
            return true;
        }
    }
    const physics::AddHullResult added = world.addHull(hull);
    if (added.status != physics::WorldStatus::Ok)
    {
        error = std::string("the world refused the hull (") + statusName(added.status) + ")";
        return false;
    }
    index = added.index;
    return true;
}

/// findOrAddHull with a map from vertex coordinates to catalogue index, for scenes with many hull bodies.
class HullCatalogue
{
  public:
    explicit HullCatalogue(physics::World& world) : m_world(world)
    {
        const std::span<const physics::ConvexHull> hulls = world.hulls();
        for (std::size_t i = 0; i < hulls.size(); ++i)
        {
            m_known.emplace(keyOf(hulls[i]), static_cast<std::uint32_t>(i));
        }
    }

    bool indexOf(const physics::ConvexHull& hull, std::uint32_t& index, std::string& error)
    {
        std::vector<float> key = keyOf(hull);
        if (const auto it = m_known.find(key);
            it != m_known.end() && sameHull(m_world.hulls()[it->second], hull))
        {
            index = it->second;
            return true;
        }
        if (!findOrAddHull(m_world, hull, index, error))
        {
            return false;
        }
        m_known.emplace(std::move(key), index);
        return true;
    }

  private:
    static std::vector<float> keyOf(const physics::ConvexHull& hull)
    {
        std::vector<float> key;
        key.reserve(hull.vertices.size() * 3);
        for (const Vec3& v : hull.vertices)
        {
            key.insert(key.end(), {v.x, v.y, v.z});
        }
        return key;
    }

    physics::World& m_world;
    std::map<std::vector<float>, std::uint32_t> m_known;
};

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
    return status == FileStatus::Ok && parseSceneJson(text, out, error);
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

bool buildScene(const SceneDescription& scene, physics::World& world, std::string& error)
{
    try
    {
        world.setGravity(scene.gravity);
        if (!scene.builtin.empty())
        {
            physics::SceneName name;
            std::string why;
            if (!physics::parseSceneName(scene.builtin, name, why))
            {
                return fail(error, "builtin", "unknown built-in scene \"" + scene.builtin + "\"");
            }
            if (!physics::buildScene(world, name))
            {
                return fail(error, "builtin",
                            "the world refused a body of built-in scene \"" + scene.builtin +
                                "\" (capacity?)");
            }
        }
        HullCatalogue catalogue(world);
        std::string why;
        for (std::size_t i = 0; i < scene.bodies.size(); ++i)
        {
            const SceneBody& body = scene.bodies[i];
            const std::string path = "bodies[" + std::to_string(i) + "]";
            physics::BodyDesc desc = body.desc;
            if (desc.shape.type == physics::ShapeType::Hull &&
                !catalogue.indexOf(body.hull, desc.shape.hullIndex, why))
            {
                return fail(error, path, why);
            }
            const physics::CreateBodyResult created = world.createBody(desc);
            if (created.status != physics::WorldStatus::Ok)
            {
                return fail(error, path,
                            std::string("the world refused the body (") + statusName(created.status) + ")");
            }
        }
        std::uint32_t playerHull = 0;
        if (scene.player && scene.player->desc.shape.type == physics::ShapeType::Hull &&
            !catalogue.indexOf(scene.player->hull, playerHull, why))
        {
            return fail(error, "player", why);
        }
        return true;
    }
    catch (const std::exception& e)
    {
        error = std::string("scene: could not be built: ") + e.what();
        return false;
    }
}

bool makePlayerBody(const SceneDescription& scene, long long spawnIndex, physics::World& world,
                    physics::BodyDesc& out, std::string& error)
{
    if (!scene.player)
    {
        error = "player: the scene has no player template";
        return false;
    }
    out = scene.player->desc;
    if (!scene.spawnPoints.empty())
    {
        const long long count = static_cast<long long>(scene.spawnPoints.size());
        const long long slot = ((spawnIndex % count) + count) % count;
        out.transform.p = scene.spawnPoints[static_cast<std::size_t>(slot)];
    }
    if (out.shape.type == physics::ShapeType::Hull)
    {
        std::string why;
        try
        {
            if (!findOrAddHull(world, scene.player->hull, out.shape.hullIndex, why))
            {
                return fail(error, "player", why);
            }
        }
        catch (const std::exception& e)
        {
            return fail(error, "player", e.what());
        }
    }
    return true;
}

} // namespace polytope::server

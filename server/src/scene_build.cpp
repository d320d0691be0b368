// Scene files into a World (scene_file.h): the built-in scene, the layer table, the meshes and heightfields
// in the description's order, then the bodies, each hull and compound found in the world's catalogues or
// added (identical ones once), so that building one description always gives the same catalogues: a
// checkpoint's world restores only into a world whose catalogues match (World::restoreState). Player
// templates made later (makePlayerBody) find theirs the same way. The joints come last, between bodies
// already placed.
#include "polytope/server/scene_file.h"

#include "scene_file_detail.h"

#include "polytope/physics/scenes.h"

#include <bit>
#include <exception>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace polytope::server
{

namespace
{

using detail::fail;
using detail::kMaxQuotedBytes;
using physics::Vec3;

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
    case physics::WorldStatus::JointCapacityReached:
        return "JointCapacityReached";
    case physics::WorldStatus::InvalidJointDesc:
        return "InvalidJointDesc";
    case physics::WorldStatus::StaleJointId:
        return "StaleJointId";
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

/// A compound's numbers as the world's catalogue holds them, for finding equal compounds. `asStored`: the
/// rotations are the catalogue's own; otherwise they are normalised as World::addCompound will store them.
std::vector<std::uint32_t> compoundKey(const physics::CompoundShape& compound, bool asStored)
{
    std::vector<std::uint32_t> key;
    key.reserve(compound.children.size() * 16);
    const auto put = [&](float v) { key.push_back(std::bit_cast<std::uint32_t>(v)); };
    for (const physics::CompoundChild& child : compound.children)
    {
        const physics::Shape& shape = child.shape;
        key.push_back(static_cast<std::uint32_t>(shape.type));
        key.push_back(shape.hullIndex);
        for (const float v : {shape.sphere.radius, shape.capsule.halfHeight, shape.capsule.radius,
                              shape.box.halfExtents.x, shape.box.halfExtents.y, shape.box.halfExtents.z,
                              child.transform.p.x, child.transform.p.y, child.transform.p.z})
        {
            put(v);
        }
        const physics::Quat q = asStored ? child.transform.q : physics::normalize(child.transform.q);
        for (const float v : {q.x, q.y, q.z, q.w})
        {
            put(v);
        }
    }
    return key;
}

/// Finds a compound in the world's catalogue, adding it when there is none equal, like HullCatalogue.
class CompoundCatalogue
{
  public:
    explicit CompoundCatalogue(physics::World& world) : m_world(world)
    {
        const std::span<const physics::CompoundShape> compounds = world.compounds();
        for (std::size_t i = 0; i < compounds.size(); ++i)
        {
            m_known.emplace(compoundKey(compounds[i], true), static_cast<std::uint32_t>(i));
        }
    }

    /// `compound`'s Hull children must index the world's hull catalogue.
    bool indexOf(const physics::CompoundShape& compound, std::uint32_t& index, std::string& error)
    {
        std::vector<std::uint32_t> key = compoundKey(compound, false);
        if (const auto it = m_known.find(key); it != m_known.end())
        {
            index = it->second;
            return true;
        }
        const physics::AddShapeResult added = m_world.addCompound(compound);
        if (added.status != physics::WorldStatus::Ok)
        {
            error = std::string("the world refused the compound (") + statusName(added.status) + ")";
            return false;
        }
        index = added.index;
        m_known.emplace(std::move(key), index);
        return true;
    }

  private:
    physics::World& m_world;
    std::map<std::vector<std::uint32_t>, std::uint32_t> m_known;
};

/// The catalogue index of `body`'s compound in the world: its hulls and then itself found or added.
bool compoundIndexOf(const SceneBody& body, HullCatalogue& hulls, CompoundCatalogue& compounds,
                     std::uint32_t& index, std::string& error)
{
    physics::CompoundShape compound = body.compound;
    for (physics::CompoundChild& child : compound.children)
    {
        if (child.shape.type == physics::ShapeType::Hull &&
            !hulls.indexOf(body.childHulls[child.shape.hullIndex], child.shape.hullIndex, error))
        {
            return false;
        }
    }
    return compounds.indexOf(compound, index, error);
}

} // namespace

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
        for (std::size_t i = 0; i < scene.layerPairs.size(); ++i)
        {
            const SceneLayerPair& pair = scene.layerPairs[i];
            const physics::WorldStatus status = world.setLayersCollide(pair.a, pair.b, pair.collide);
            if (status != physics::WorldStatus::Ok)
            {
                return fail(error, "layer_pairs[" + std::to_string(i) + "]",
                            std::string("the world refused it (") + statusName(status) + ")");
            }
        }
        // Meshes and heightfields first, in the description's order, so that a scene always builds the same
        // catalogues (checkpoints restore only into a world whose catalogues match).
        std::vector<std::uint32_t> geometryIndex(scene.geometry.size());
        for (std::size_t g = 0; g < scene.geometry.size(); ++g)
        {
            const SceneGeometry& geometry = scene.geometry[g];
            if (!geometry.loaded())
            {
                return fail(
                    error, geometry.field,
                    "'" + printableExcerpt(geometry.file, kMaxQuotedBytes) +
                        "' is not loaded (loadSceneGeometry reads the files a scene file names; a scene "
                        "given as text has no folder to read them from)");
            }
            const bool mesh = geometry.type == physics::ShapeType::Mesh;
            const physics::AddShapeResult added =
                mesh ? world.addMesh(geometry.mesh) : world.addHeightField(geometry.heightField);
            if (added.status != physics::WorldStatus::Ok)
            {
                return fail(error, geometry.field,
                            std::string("the world refused the ") + (mesh ? "mesh" : "heightfield") + " (" +
                                statusName(added.status) + ")");
            }
            geometryIndex[g] = added.index;
        }
        HullCatalogue catalogue(world);
        CompoundCatalogue compounds(world);
        std::string why;
        std::vector<physics::BodyId> ids(scene.bodies.size());
        for (std::size_t i = 0; i < scene.bodies.size(); ++i)
        {
            const SceneBody& body = scene.bodies[i];
            const std::string path = "bodies[" + std::to_string(i) + "]";
            physics::BodyDesc desc = body.desc;
            switch (desc.shape.type)
            {
            case physics::ShapeType::Hull:
                if (!catalogue.indexOf(body.hull, desc.shape.hullIndex, why))
                {
                    return fail(error, path, why);
                }
                break;
            case physics::ShapeType::Compound:
                if (!compoundIndexOf(body, catalogue, compounds, desc.shape.catalogueIndex, why))
                {
                    return fail(error, path, why);
                }
                break;
            case physics::ShapeType::Mesh:
            case physics::ShapeType::HeightField:
                desc.shape.catalogueIndex = geometryIndex[body.geometry];
                break;
            default:
                break;
            }
            const physics::CreateBodyResult created = world.createBody(desc);
            if (created.status != physics::WorldStatus::Ok)
            {
                return fail(error, path,
                            std::string("the world refused the body (") + statusName(created.status) + ")");
            }
            ids[i] = created.id;
        }
        for (std::size_t i = 0; i < scene.joints.size(); ++i)
        {
            const SceneJoint& joint = scene.joints[i];
            physics::JointDesc desc = joint.desc;
            desc.bodyA = ids[joint.bodyA];
            desc.bodyB = ids[joint.bodyB];
            const physics::CreateJointResult created =
                joint.worldFrame ? world.createJoint(desc, *joint.worldFrame) : world.createJoint(desc);
            if (created.status != physics::WorldStatus::Ok)
            {
                return fail(error, "joints[" + std::to_string(i) + "]",
                            std::string("the world refused the joint (") + statusName(created.status) + ")");
            }
        }
        std::uint32_t playerIndex = 0;
        if (scene.player && scene.player->desc.shape.type == physics::ShapeType::Hull &&
            !catalogue.indexOf(scene.player->hull, playerIndex, why))
        {
            return fail(error, "player", why);
        }
        if (scene.player && scene.player->desc.shape.type == physics::ShapeType::Compound &&
            !compoundIndexOf(*scene.player, catalogue, compounds, playerIndex, why))
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
    if (out.shape.type == physics::ShapeType::Hull || out.shape.type == physics::ShapeType::Compound)
    {
        std::string why;
        try
        {
            const bool found = out.shape.type == physics::ShapeType::Hull
                                   ? findOrAddHull(world, scene.player->hull, out.shape.hullIndex, why)
                                   : [&]
            {
                HullCatalogue hulls(world);
                CompoundCatalogue compounds(world);
                return compoundIndexOf(*scene.player, hulls, compounds, out.shape.catalogueIndex, why);
            }();
            if (!found)
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

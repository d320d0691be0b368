// libFuzzer target: scene files (parseSceneJson, then buildScene into a small World and a player spawn, as
// the server does). An accepted scene must hold only finite numbers, geometry paths that stay in the
// scene's folder and joints between two of its bodies, and building it may fail only for lack of capacity,
// never because a checked value (a body's or a joint's) was refused. Geometry files are not read (the text
// has no folder, and fuzz_geometry_files covers the readers): a small stand-in mesh or heightfield takes the
// place of each file, so that bodies naming one are still built.
#include "polytope/server/scene_file.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace
{

std::shared_ptr<const polytope::physics::TriangleMesh> standInMesh()
{
    using polytope::physics::Vec3;
    static const std::shared_ptr<const polytope::physics::TriangleMesh> mesh = []
    {
        const std::vector<Vec3> vertices{{-4, 0, -4}, {4, 0, -4}, {4, 0, 4}, {-4, 0, 4}};
        const std::vector<std::uint32_t> indices{0, 2, 1, 0, 3, 2};
        polytope::physics::TriangleMeshBuildResult built =
            polytope::physics::buildTriangleMesh(vertices, indices);
        if (!built.ok())
        {
            std::abort();
        }
        return std::make_shared<const polytope::physics::TriangleMesh>(std::move(built.mesh));
    }();
    return mesh;
}

std::shared_ptr<const polytope::physics::HeightField> standInHeightField()
{
    static const std::shared_ptr<const polytope::physics::HeightField> field = []
    {
        const std::vector<float> heights{0, 1, 0, 1, 2, 1, 0, 1, 0};
        polytope::physics::HeightFieldDesc desc;
        desc.sampleCountX = 3;
        desc.sampleCountZ = 3;
        desc.heights = heights;
        polytope::physics::HeightFieldBuildResult built = polytope::physics::buildHeightField(desc);
        if (!built.ok())
        {
            std::abort();
        }
        return std::make_shared<const polytope::physics::HeightField>(std::move(built.heightField));
    }();
    return field;
}

bool finite(const polytope::physics::Vec3& v)
{
    return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
}

void checkBody(const polytope::server::SceneBody& body)
{
    const polytope::physics::BodyDesc& d = body.desc;
    if (!finite(d.transform.p) || !isFinite(d.transform.q) || !finite(d.linearVelocity) ||
        !finite(d.angularVelocity) || !(d.density > 0.0f) || !std::isfinite(d.density) ||
        !std::isfinite(d.friction) || !std::isfinite(d.restitution))
    {
        std::abort();
    }
}

/// A checked joint joins two different bodies of the scene, one of them dynamic, with finite numbers.
void checkJoint(const polytope::server::SceneJoint& joint, const polytope::server::SceneDescription& scene)
{
    using polytope::physics::BodyType;
    const polytope::physics::JointDesc& d = joint.desc;
    if (joint.bodyA >= scene.bodies.size() || joint.bodyB >= scene.bodies.size() ||
        joint.bodyA == joint.bodyB ||
        (scene.bodies[joint.bodyA].desc.type != BodyType::Dynamic &&
         scene.bodies[joint.bodyB].desc.type != BodyType::Dynamic))
    {
        std::abort();
    }
    if (!finite(d.frameA.p) || !isFinite(d.frameA.q) || !finite(d.frameB.p) || !isFinite(d.frameB.q) ||
        (joint.worldFrame && (!finite(joint.worldFrame->p) || !isFinite(joint.worldFrame->q))) ||
        !std::isfinite(d.hertz) || !std::isfinite(d.dampingRatio) || !std::isfinite(d.limit.lower) ||
        !std::isfinite(d.limit.upper) || d.limit.lower > d.limit.upper || !std::isfinite(d.motor.maxForce) ||
        !std::isfinite(d.motor.targetVelocity) || !std::isfinite(d.motor.targetPosition) ||
        !std::isfinite(d.spring.hertz) || !std::isfinite(d.spring.target) || !std::isfinite(d.length) ||
        !std::isfinite(d.coneAngle) || !(d.breakForce > 0.0f) || !(d.breakTorque > 0.0f))
    {
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope;
    server::SceneDescription scene;
    std::string error;
    if (!server::parseSceneJson(std::string_view(reinterpret_cast<const char*>(data), size), scene, error))
    {
        if (error.empty())
        {
            std::abort();
        }
        return 0;
    }
    if (!finite(scene.gravity))
    {
        std::abort();
    }
    for (const server::SceneBody& body : scene.bodies)
    {
        checkBody(body);
    }
    if (scene.player)
    {
        checkBody(*scene.player);
    }
    for (const server::SceneJoint& joint : scene.joints)
    {
        checkJoint(joint, scene);
    }
    for (server::SceneGeometry& geometry : scene.geometry)
    {
        if (geometry.loaded())
        {
            continue;
        }
        // A file: relative, normalised, inside the scene's folder.
        if (geometry.file.empty() || geometry.file.front() == '/' || geometry.file.starts_with("../") ||
            geometry.file == "..")
        {
            std::abort();
        }
        if (geometry.type == physics::ShapeType::Mesh)
        {
            geometry.mesh = standInMesh();
        }
        else
        {
            geometry.heightField = standInHeightField();
        }
    }

    // Small capacities keep big built-in scenes (pile4000) cheap: they fail fast with a capacity error.
    physics::WorldConfig config;
    config.maxBodies = 256;
    config.maxContacts = 1024;
    config.maxHulls = 64;
    config.maxCompounds = 64;
    config.maxMeshes = 16;
    config.maxHeightFields = 16;
    physics::World world(config);
    if (!server::buildScene(scene, world, error))
    {
        if (error.find("Capacity") == std::string::npos && error.find("capacity") == std::string::npos &&
            error.find("CatalogueFull") == std::string::npos)
        {
            std::abort(); // a checked scene was refused for another reason
        }
        return 0;
    }
    physics::BodyDesc player;
    if (scene.player && server::makePlayerBody(scene, 1, world, player, error))
    {
        const physics::CreateBodyResult created = world.createBody(player);
        if (created.status != physics::WorldStatus::Ok &&
            created.status != physics::WorldStatus::BodyCapacityReached)
        {
            std::abort();
        }
    }
    world.step(1.0f / 60.0f);
    return 0;
}

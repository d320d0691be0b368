// polytope-viewer: OpenGL 3.3 core drawing of a ViewFrame.
//
// One instanced draw call per shape kind: each instance carries a model matrix, a colour and shape
// parameters. Spheres and boxes are unit meshes scaled by the model matrix; hulls are drawn as their local
// bounding box when their surface is unknown (a live client knows only that box) and as their own surface,
// one draw call per distinct hull, when the source has it (local scenes); capsules use a sphere mesh split at
// the equator whose vertex shader pushes each hemisphere out by the half height, so they keep round ends at
// any length. Plane bodies are the ground: a large quad with a grid drawn by the fragment shader. Joints
// (local scenes, when shown) are lines drawn last without the depth test, so that anchors inside bodies show
// (joint_overlay.h).
#pragma once

#include "viewer/camera.h"
#include "viewer/joint_overlay.h"
#include "viewer/view_frame.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace polytope::viewer
{

/// Colours of the scene (linear 0..1), shared with the tests.
inline constexpr std::array<float, 3> kBackgroundColour{0.60f, 0.70f, 0.80f};

/// The base colour of a shape kind (before shading, rest tint and selection).
std::array<float, 3> shapeColour(ShapeKind kind);

/// Identity of the selected body.
struct BodyKey
{
    std::uint32_t id = 0;
    std::uint32_t generation = 0;
};

class Renderer
{
  public:
    Renderer() = default;
    ~Renderer();
    Renderer(const Renderer&) = delete;
    Renderer& operator=(const Renderer&) = delete;

    /// Compiles the shaders and uploads the meshes; needs a current OpenGL 3.3 core context.
    bool init(std::string& error);
    /// Uploads the surfaces of the hulls that ViewBody::hullIndex refers to; bodies whose hull has no mesh
    /// are drawn as their bounding box.
    void setHullMeshes(const std::vector<HullMesh>& meshes);
    /// Draws the frame into the current framebuffer (cleared first), with its joints' anchors and axes over
    /// the bodies when `showJoints`.
    void draw(const ViewFrame& frame, const OrbitCamera& camera, int width, int height,
              const std::optional<BodyKey>& selected, bool showJoints = false);
    /// Draw calls issued by the last draw().
    int drawCalls() const { return m_drawCalls; }

  private:
    struct Mesh
    {
        unsigned vao = 0;
        unsigned vertexBuffer = 0;
        unsigned indexBuffer = 0;
        unsigned instanceBuffer = 0;
        int indexCount = 0;
        long instanceCapacity = 0; ///< bytes allocated in instanceBuffer
    };
    struct Instance
    {
        float model[16];
        float colour[4];
        float params[4]; ///< capsule: radius, half height
    };

    void makeMesh(Mesh& mesh, const std::vector<float>& vertices, const std::vector<unsigned>& indices);
    void drawInstances(Mesh& mesh, const std::vector<Instance>& instances, bool capsule);
    void drawJoints(const ViewFrame& frame, const Mat4& viewProjection);

    bool m_ready = false;
    unsigned m_shapeProgram = 0;
    unsigned m_groundProgram = 0;
    unsigned m_lineProgram = 0;
    int m_uViewProjection = -1;
    int m_uCapsule = -1;
    int m_uLightDirection = -1;
    int m_uGroundViewProjection = -1;
    int m_uGroundModel = -1;
    int m_uGroundEye = -1;
    int m_uLineViewProjection = -1;
    Mesh m_box;
    Mesh m_sphere;
    Mesh m_capsule;
    unsigned m_groundVao = 0;
    unsigned m_groundBuffer = 0;
    unsigned m_lineVao = 0;
    unsigned m_lineBuffer = 0;
    long m_lineCapacity = 0;              ///< bytes allocated in m_lineBuffer
    std::vector<LineVertex> m_lines;      ///< this frame's joint lines
    std::vector<Instance> m_instances[4]; ///< by kind: sphere, capsule, box, hull (as its bounding box)
    std::vector<Mesh> m_hullMeshes;       ///< by hull index
    std::vector<std::vector<Instance>> m_hullInstances; ///< by hull index
    int m_drawCalls = 0;
};

} // namespace polytope::viewer

#include "viewer/renderer.h"

#include "viewer/gl.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>

namespace polytope::viewer
{
namespace
{

const char* kShapeVertexShader = R"(#version 330 core
layout(location = 0) in vec3 a_position;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in float a_side;
layout(location = 3) in mat4 i_model;
layout(location = 7) in vec4 i_colour;
layout(location = 8) in vec4 i_params;
uniform mat4 u_viewProjection;
uniform int u_capsule;
out vec3 v_normal;
out vec4 v_colour;
void main()
{
    vec3 local = a_position;
    if (u_capsule == 1)
    {
        // Round ends: the unit sphere scaled by the radius, each hemisphere moved out by the half height.
        local = a_normal * i_params.x + vec3(0.0, a_side * i_params.y, 0.0);
    }
    gl_Position = u_viewProjection * (i_model * vec4(local, 1.0));
    v_normal = mat3(i_model) * a_normal;
    v_colour = i_colour;
}
)";

const char* kShapeFragmentShader = R"(#version 330 core
in vec3 v_normal;
in vec4 v_colour;
uniform vec3 u_lightDirection;
out vec4 o_colour;
void main()
{
    vec3 n = normalize(v_normal);
    float diffuse = max(dot(n, u_lightDirection), 0.0);
    float sky = 0.5 + 0.5 * n.y;
    vec3 c = v_colour.rgb * (0.25 + 0.15 * sky + 0.7 * diffuse);
    o_colour = vec4(c, 1.0);
}
)";

const char* kGroundVertexShader = R"(#version 330 core
layout(location = 0) in vec3 a_position;
uniform mat4 u_viewProjection;
uniform mat4 u_model;
out vec2 v_grid;
out vec3 v_world;
void main()
{
    vec4 world = u_model * vec4(a_position, 1.0);
    gl_Position = u_viewProjection * world;
    v_grid = a_position.xz;
    v_world = world.xyz;
}
)";

const char* kGroundFragmentShader = R"(#version 330 core
in vec2 v_grid;
in vec3 v_world;
uniform vec3 u_eye;
uniform vec3 u_background;
out vec4 o_colour;
float lines(vec2 p, float spacing)
{
    vec2 q = p / spacing;
    vec2 w = fwidth(q);
    vec2 d = abs(fract(q - 0.5) - 0.5) / max(w, vec2(1e-4));
    return 1.0 - min(min(d.x, d.y), 1.0);
}
void main()
{
    vec3 base = vec3(0.42, 0.44, 0.46);
    float minor = lines(v_grid, 1.0);
    float major = lines(v_grid, 10.0);
    vec3 c = mix(base, vec3(0.30, 0.31, 0.33), max(minor * 0.6, major));
    float fade = clamp(length(v_world - u_eye) / 400.0, 0.0, 1.0);
    o_colour = vec4(mix(c, u_background, fade * fade), 1.0);
}
)";

const char* kLineVertexShader = R"(#version 330 core
layout(location = 0) in vec3 a_position;
layout(location = 1) in vec3 a_colour;
uniform mat4 u_viewProjection;
out vec3 v_colour;
void main()
{
    gl_Position = u_viewProjection * vec4(a_position, 1.0);
    v_colour = a_colour;
}
)";

const char* kLineFragmentShader = R"(#version 330 core
in vec3 v_colour;
out vec4 o_colour;
void main()
{
    o_colour = vec4(v_colour, 1.0);
}
)";

unsigned compile(unsigned type, const char* source, std::string& error)
{
    const unsigned shader = glCreateShader(type);
    glShaderSource(shader, 1, &source, nullptr);
    glCompileShader(shader);
    GLint ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok)
    {
        char log[2048];
        glGetShaderInfoLog(shader, sizeof log, nullptr, log);
        error = std::string("shader compile failed: ") + log;
        glDeleteShader(shader);
        return 0;
    }
    return shader;
}

unsigned link(const char* vertexSource, const char* fragmentSource, std::string& error)
{
    const unsigned vs = compile(GL_VERTEX_SHADER, vertexSource, error);
    if (vs == 0)
    {
        return 0;
    }
    const unsigned fs = compile(GL_FRAGMENT_SHADER, fragmentSource, error);
    if (fs == 0)
    {
        glDeleteShader(vs);
        return 0;
    }
    const unsigned program = glCreateProgram();
    glAttachShader(program, vs);
    glAttachShader(program, fs);
    glLinkProgram(program);
    glDeleteShader(vs);
    glDeleteShader(fs);
    GLint ok = 0;
    glGetProgramiv(program, GL_LINK_STATUS, &ok);
    if (!ok)
    {
        char log[2048];
        glGetProgramInfoLog(program, sizeof log, nullptr, log);
        error = std::string("shader link failed: ") + log;
        glDeleteProgram(program);
        return 0;
    }
    return program;
}

void pushVertex(std::vector<float>& v, float px, float py, float pz, float nx, float ny, float nz, float side)
{
    v.insert(v.end(), {px, py, pz, nx, ny, nz, side});
}

/// The unit box [-1, 1]^3 with flat normals.
void boxMesh(std::vector<float>& vertices, std::vector<unsigned>& indices)
{
    for (int axis = 0; axis < 3; ++axis)
    {
        for (int sign = -1; sign <= 1; sign += 2)
        {
            const unsigned base = static_cast<unsigned>(vertices.size() / 7);
            float n[3] = {0.0f, 0.0f, 0.0f};
            n[axis] = static_cast<float>(sign);
            const int u = (axis + 1) % 3;
            const int w = (axis + 2) % 3;
            const float corners[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
            for (const auto& c : corners)
            {
                float p[3];
                p[axis] = static_cast<float>(sign);
                p[u] = c[0];
                p[w] = c[1];
                pushVertex(vertices, p[0], p[1], p[2], n[0], n[1], n[2], 0.0f);
            }
            // Counter-clockwise seen from outside.
            if (sign > 0)
            {
                indices.insert(indices.end(), {base, base + 1, base + 2, base, base + 2, base + 3});
            }
            else
            {
                indices.insert(indices.end(), {base, base + 2, base + 1, base, base + 3, base + 2});
            }
        }
    }
}

/// A unit UV sphere; with `split`, the equator ring is doubled and each vertex carries the side (+1 for the
/// upper hemisphere, -1 for the lower) so that the capsule shader can pull the halves apart.
void sphereMesh(std::vector<float>& vertices, std::vector<unsigned>& indices, int stacks, int slices,
                bool split)
{
    const float pi = std::numbers::pi_v<float>;
    std::vector<std::pair<float, float>> rings; // (polar angle, side)
    for (int i = 0; i <= stacks; ++i)
    {
        const float theta = pi * static_cast<float>(i) / static_cast<float>(stacks);
        if (split && 2 * i == stacks)
        {
            rings.emplace_back(theta, 1.0f);
            rings.emplace_back(theta, -1.0f);
        }
        else
        {
            rings.emplace_back(theta, split ? (2 * i < stacks ? 1.0f : -1.0f) : 0.0f);
        }
    }
    for (const auto& [theta, side] : rings)
    {
        for (int j = 0; j <= slices; ++j)
        {
            const float phi = 2.0f * pi * static_cast<float>(j) / static_cast<float>(slices);
            const float x = std::sin(theta) * std::cos(phi);
            const float y = std::cos(theta);
            const float z = std::sin(theta) * std::sin(phi);
            pushVertex(vertices, x, y, z, x, y, z, side);
        }
    }
    const unsigned row = static_cast<unsigned>(slices + 1);
    for (unsigned i = 0; i + 1 < rings.size(); ++i)
    {
        for (unsigned j = 0; j < static_cast<unsigned>(slices); ++j)
        {
            const unsigned a = i * row + j, b = a + row;
            indices.insert(indices.end(), {a, a + 1, b, a + 1, b + 1, b});
        }
    }
}

void setInstance(float* model16, const Mat4& m)
{
    std::copy(m.m.begin(), m.m.end(), model16);
}

} // namespace

std::array<float, 3> shapeColour(ShapeKind kind)
{
    switch (kind)
    {
    case ShapeKind::Sphere:
        return {0.85f, 0.30f, 0.25f};
    case ShapeKind::Capsule:
        return {0.30f, 0.70f, 0.35f};
    case ShapeKind::Box:
        return {0.90f, 0.55f, 0.20f};
    case ShapeKind::Hull:
        return {0.55f, 0.40f, 0.85f};
    case ShapeKind::Compound:
        return {0.25f, 0.60f, 0.80f};
    case ShapeKind::Mesh:
    case ShapeKind::HeightField:
        return {0.45f, 0.50f, 0.40f};
    case ShapeKind::Plane:
        break;
    }
    return {0.5f, 0.5f, 0.5f};
}

Renderer::~Renderer()
{
    if (!m_ready)
    {
        return;
    }
    std::vector<Mesh*> meshes{&m_box, &m_sphere, &m_capsule};
    for (Mesh& mesh : m_hullMeshes)
    {
        meshes.push_back(&mesh);
    }
    for (Mesh* mesh : meshes)
    {
        glDeleteVertexArrays(1, &mesh->vao);
        glDeleteBuffers(1, &mesh->vertexBuffer);
        glDeleteBuffers(1, &mesh->indexBuffer);
        glDeleteBuffers(1, &mesh->instanceBuffer);
    }
    glDeleteVertexArrays(1, &m_groundVao);
    glDeleteBuffers(1, &m_groundBuffer);
    glDeleteVertexArrays(1, &m_lineVao);
    glDeleteBuffers(1, &m_lineBuffer);
    glDeleteProgram(m_shapeProgram);
    glDeleteProgram(m_groundProgram);
    glDeleteProgram(m_lineProgram);
}

void Renderer::makeMesh(Mesh& mesh, const std::vector<float>& vertices, const std::vector<unsigned>& indices)
{
    glGenVertexArrays(1, &mesh.vao);
    glBindVertexArray(mesh.vao);
    glGenBuffers(1, &mesh.vertexBuffer);
    glBindBuffer(GL_ARRAY_BUFFER, mesh.vertexBuffer);
    glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(vertices.size() * sizeof(float)), vertices.data(),
                 GL_STATIC_DRAW);
    const GLsizei stride = 7 * sizeof(float);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<const void*>(0));
    glEnableVertexAttribArray(1);
    glVertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<const void*>(3 * sizeof(float)));
    glEnableVertexAttribArray(2);
    glVertexAttribPointer(2, 1, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<const void*>(6 * sizeof(float)));

    glGenBuffers(1, &mesh.instanceBuffer);
    glBindBuffer(GL_ARRAY_BUFFER, mesh.instanceBuffer);
    const GLsizei instanceStride = sizeof(Instance);
    for (GLuint column = 0; column < 4; ++column)
    {
        glEnableVertexAttribArray(3 + column);
        glVertexAttribPointer(
            3 + column, 4, GL_FLOAT, GL_FALSE, instanceStride,
            reinterpret_cast<const void*>(offsetof(Instance, model) + column * 4 * sizeof(float)));
        glVertexAttribDivisor(3 + column, 1);
    }
    glEnableVertexAttribArray(7);
    glVertexAttribPointer(7, 4, GL_FLOAT, GL_FALSE, instanceStride,
                          reinterpret_cast<const void*>(offsetof(Instance, colour)));
    glVertexAttribDivisor(7, 1);
    glEnableVertexAttribArray(8);
    glVertexAttribPointer(8, 4, GL_FLOAT, GL_FALSE, instanceStride,
                          reinterpret_cast<const void*>(offsetof(Instance, params)));
    glVertexAttribDivisor(8, 1);

    glGenBuffers(1, &mesh.indexBuffer);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, mesh.indexBuffer);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, static_cast<GLsizeiptr>(indices.size() * sizeof(unsigned)),
                 indices.data(), GL_STATIC_DRAW);
    mesh.indexCount = static_cast<int>(indices.size());
    glBindVertexArray(0);
}

bool Renderer::init(std::string& error)
{
    m_shapeProgram = link(kShapeVertexShader, kShapeFragmentShader, error);
    m_groundProgram = m_shapeProgram == 0 ? 0 : link(kGroundVertexShader, kGroundFragmentShader, error);
    m_lineProgram = m_groundProgram == 0 ? 0 : link(kLineVertexShader, kLineFragmentShader, error);
    if (m_shapeProgram == 0 || m_groundProgram == 0 || m_lineProgram == 0)
    {
        return false;
    }
    m_uLineViewProjection = glGetUniformLocation(m_lineProgram, "u_viewProjection");
    m_uViewProjection = glGetUniformLocation(m_shapeProgram, "u_viewProjection");
    m_uCapsule = glGetUniformLocation(m_shapeProgram, "u_capsule");
    m_uLightDirection = glGetUniformLocation(m_shapeProgram, "u_lightDirection");
    m_uGroundViewProjection = glGetUniformLocation(m_groundProgram, "u_viewProjection");
    m_uGroundModel = glGetUniformLocation(m_groundProgram, "u_model");
    m_uGroundEye = glGetUniformLocation(m_groundProgram, "u_eye");

    std::vector<float> vertices;
    std::vector<unsigned> indices;
    boxMesh(vertices, indices);
    makeMesh(m_box, vertices, indices);
    vertices.clear();
    indices.clear();
    sphereMesh(vertices, indices, 12, 18, false);
    makeMesh(m_sphere, vertices, indices);
    vertices.clear();
    indices.clear();
    sphereMesh(vertices, indices, 12, 18, true);
    makeMesh(m_capsule, vertices, indices);

    const float s = 500.0f;
    const float quad[] = {-s, 0.0f, -s, s, 0.0f, -s, s, 0.0f, s, -s, 0.0f, -s, s, 0.0f, s, -s, 0.0f, s};
    glGenVertexArrays(1, &m_groundVao);
    glBindVertexArray(m_groundVao);
    glGenBuffers(1, &m_groundBuffer);
    glBindBuffer(GL_ARRAY_BUFFER, m_groundBuffer);
    glBufferData(GL_ARRAY_BUFFER, sizeof quad, quad, GL_STATIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 3 * sizeof(float), reinterpret_cast<const void*>(0));

    glGenVertexArrays(1, &m_lineVao);
    glBindVertexArray(m_lineVao);
    glGenBuffers(1, &m_lineBuffer);
    glBindBuffer(GL_ARRAY_BUFFER, m_lineBuffer);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, sizeof(LineVertex),
                          reinterpret_cast<const void*>(offsetof(LineVertex, position)));
    glEnableVertexAttribArray(1);
    glVertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, sizeof(LineVertex),
                          reinterpret_cast<const void*>(offsetof(LineVertex, colour)));
    glBindVertexArray(0);
    m_ready = true;
    return true;
}

void Renderer::setHullMeshes(const std::vector<HullMesh>& meshes)
{
    for (Mesh& mesh : m_hullMeshes)
    {
        glDeleteVertexArrays(1, &mesh.vao);
        glDeleteBuffers(1, &mesh.vertexBuffer);
        glDeleteBuffers(1, &mesh.indexBuffer);
        glDeleteBuffers(1, &mesh.instanceBuffer);
    }
    m_hullMeshes.assign(meshes.size(), Mesh{});
    m_hullInstances.assign(meshes.size(), {});
    std::vector<float> vertices;
    std::vector<unsigned> indices;
    for (std::size_t i = 0; i < meshes.size(); ++i)
    {
        vertices.clear();
        indices.clear();
        const std::vector<float>& source = meshes[i].vertices;
        for (std::size_t v = 0; v + 6 <= source.size(); v += 6)
        {
            pushVertex(vertices, source[v], source[v + 1], source[v + 2], source[v + 3], source[v + 4],
                       source[v + 5], 0.0f);
            indices.push_back(static_cast<unsigned>(indices.size()));
        }
        makeMesh(m_hullMeshes[i], vertices, indices);
    }
}

void Renderer::drawInstances(Mesh& mesh, const std::vector<Instance>& instances, bool capsule)
{
    if (instances.empty())
    {
        return;
    }
    glBindVertexArray(mesh.vao);
    glBindBuffer(GL_ARRAY_BUFFER, mesh.instanceBuffer);
    // Grow the buffer only when needed: re-allocating (orphaning) every frame cost llvmpipe fresh pages.
    const auto bytes = static_cast<GLsizeiptr>(instances.size() * sizeof(Instance));
    if (bytes > mesh.instanceCapacity)
    {
        mesh.instanceCapacity = bytes + bytes / 2;
        glBufferData(GL_ARRAY_BUFFER, mesh.instanceCapacity, nullptr, GL_DYNAMIC_DRAW);
    }
    glBufferSubData(GL_ARRAY_BUFFER, 0, bytes, instances.data());
    glUniform1i(m_uCapsule, capsule ? 1 : 0);
    glDrawElementsInstanced(GL_TRIANGLES, mesh.indexCount, GL_UNSIGNED_INT, nullptr,
                            static_cast<GLsizei>(instances.size()));
    ++m_drawCalls;
}

void Renderer::drawJoints(const ViewFrame& frame, const Mat4& viewProjection)
{
    m_lines.clear();
    appendJointLines(frame, m_lines);
    if (m_lines.empty())
    {
        return;
    }
    glBindVertexArray(m_lineVao);
    glBindBuffer(GL_ARRAY_BUFFER, m_lineBuffer);
    const auto bytes = static_cast<GLsizeiptr>(m_lines.size() * sizeof(LineVertex));
    if (bytes > m_lineCapacity)
    {
        m_lineCapacity = bytes + bytes / 2;
        glBufferData(GL_ARRAY_BUFFER, m_lineCapacity, nullptr, GL_DYNAMIC_DRAW);
    }
    glBufferSubData(GL_ARRAY_BUFFER, 0, bytes, m_lines.data());
    glUseProgram(m_lineProgram);
    glUniformMatrix4fv(m_uLineViewProjection, 1, GL_FALSE, viewProjection.m.data());
    // Over everything: a joint's anchors are usually inside its bodies.
    glDisable(GL_DEPTH_TEST);
    glDrawArrays(GL_LINES, 0, static_cast<GLsizei>(m_lines.size()));
    glEnable(GL_DEPTH_TEST);
    ++m_drawCalls;
}

void Renderer::draw(const ViewFrame& frame, const OrbitCamera& camera, int width, int height,
                    const std::optional<BodyKey>& selected, bool showJoints)
{
    m_drawCalls = 0;
    glViewport(0, 0, width, height);
    glClearColor(kBackgroundColour[0], kBackgroundColour[1], kBackgroundColour[2], 1.0f);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    if (!m_ready)
    {
        return;
    }
    glEnable(GL_DEPTH_TEST);
    glEnable(GL_CULL_FACE);
    glCullFace(GL_BACK);
    glFrontFace(GL_CCW);

    const Mat4 viewProjection =
        camera.projection(static_cast<float>(width) / static_cast<float>(std::max(height, 1))) *
        camera.view();

    for (auto& list : m_instances)
    {
        list.clear();
    }
    for (auto& list : m_hullInstances)
    {
        list.clear();
    }
    std::vector<Mat4> planes;
    for (const ViewBody& b : frame.bodies)
    {
        if (b.shape == ShapeKind::Plane)
        {
            planes.push_back(modelMatrix(b.position, b.orientation, {1.0f, 1.0f, 1.0f}));
            continue;
        }
        // Compounds, meshes and heightfields: their surfaces in local scenes (hullIndex), else their local
        // bounding boxes.
        const bool boundsOnly =
            b.shape == ShapeKind::Compound || b.shape == ShapeKind::Mesh || b.shape == ShapeKind::HeightField;
        const bool surface = b.hullIndex >= 0 &&
                             static_cast<std::size_t>(b.hullIndex) < m_hullMeshes.size() &&
                             (b.shape == ShapeKind::Hull || boundsOnly);
        const auto kind =
            boundsOnly ? static_cast<std::size_t>(ShapeKind::Box) : static_cast<std::size_t>(b.shape);
        if (kind >= 4)
        {
            continue;
        }
        Instance instance{};
        switch (b.shape)
        {
        case ShapeKind::Capsule:
            setInstance(instance.model, modelMatrix(b.position, b.orientation, {1.0f, 1.0f, 1.0f}));
            instance.params[0] = b.extent[0];
            instance.params[1] = b.extent[1];
            break;
        case ShapeKind::Compound:
        case ShapeKind::Mesh:
        case ShapeKind::HeightField:
        case ShapeKind::Hull:
            if (surface)
            {
                setInstance(instance.model, modelMatrix(b.position, b.orientation, {1.0f, 1.0f, 1.0f}));
            }
            else
            {
                // Its local bounding box, which need not be centred on the body's origin.
                const Vec3f offset = rotate(b.orientation, b.boxCenter);
                setInstance(instance.model, modelMatrix({b.position[0] + offset[0], b.position[1] + offset[1],
                                                         b.position[2] + offset[2]},
                                                        b.orientation, b.extent));
            }
            break;
        default:
            setInstance(instance.model, modelMatrix(b.position, b.orientation, b.extent));
            break;
        }
        std::array<float, 3> c = shapeColour(b.shape);
        // A little variation by id so that neighbours in a pile can be told apart.
        const float shade = 0.88f + 0.12f * static_cast<float>((b.id * 2654435761u) >> 28) / 15.0f;
        for (float& v : c)
        {
            v *= shade;
        }
        if (b.hasVelocity && b.mass == 0.0f)
        {
            c = {0.50f, 0.52f, 0.56f}; // static or kinematic (known in local scenes only)
        }
        else if (b.atRest)
        {
            // At rest: greyer and darker.
            const float grey = 0.3f * c[0] + 0.5f * c[1] + 0.2f * c[2];
            for (float& v : c)
            {
                v = 0.8f * (0.45f * v + 0.55f * grey);
            }
        }
        if (selected && selected->id == b.id && selected->generation == b.generation)
        {
            c = {1.0f, 0.95f, 0.15f};
        }
        instance.colour[0] = c[0];
        instance.colour[1] = c[1];
        instance.colour[2] = c[2];
        instance.colour[3] = 1.0f;
        if (surface)
        {
            m_hullInstances[static_cast<std::size_t>(b.hullIndex)].push_back(instance);
        }
        else
        {
            m_instances[kind].push_back(instance);
        }
    }
    // Front to back, so that llvmpipe's early depth test skips shading hidden fragments.
    const Vec3f eyeAt = camera.eye();
    for (auto& list : m_instances)
    {
        std::sort(list.begin(), list.end(),
                  [&](const Instance& a, const Instance& b)
                  {
                      const auto d = [&](const Instance& i)
                      {
                          const float x = i.model[12] - eyeAt[0], y = i.model[13] - eyeAt[1],
                                      z = i.model[14] - eyeAt[2];
                          return x * x + y * y + z * z;
                      };
                      return d(a) < d(b);
                  });
    }
    if (planes.empty())
    {
        planes.push_back(Mat4{});
    }

    glUseProgram(m_shapeProgram);
    glUniformMatrix4fv(m_uViewProjection, 1, GL_FALSE, viewProjection.m.data());
    const float lx = 0.35f, ly = 0.85f, lz = 0.4f;
    const float inv = 1.0f / std::sqrt(lx * lx + ly * ly + lz * lz);
    glUniform3f(m_uLightDirection, lx * inv, ly * inv, lz * inv);
    drawInstances(m_sphere, m_instances[0], false);
    drawInstances(m_capsule, m_instances[1], true);
    drawInstances(m_box, m_instances[2], false);
    drawInstances(m_box, m_instances[3], false);
    for (std::size_t i = 0; i < m_hullMeshes.size(); ++i)
    {
        drawInstances(m_hullMeshes[i], m_hullInstances[i], false);
    }

    // The ground last: most of it hidden behind bodies fails the depth test before shading.
    glUseProgram(m_groundProgram);
    glUniformMatrix4fv(m_uGroundViewProjection, 1, GL_FALSE, viewProjection.m.data());
    const Vec3f eye = camera.eye();
    glUniform3f(m_uGroundEye, eye[0], eye[1], eye[2]);
    glUniform3f(glGetUniformLocation(m_groundProgram, "u_background"), kBackgroundColour[0],
                kBackgroundColour[1], kBackgroundColour[2]);
    glDisable(GL_CULL_FACE);
    glBindVertexArray(m_groundVao);
    // Slightly behind the bodies in depth, so that faces lying on the ground win.
    glEnable(GL_POLYGON_OFFSET_FILL);
    glPolygonOffset(1.0f, 1.0f);
    for (const Mat4& model : planes)
    {
        glUniformMatrix4fv(m_uGroundModel, 1, GL_FALSE, model.m.data());
        glDrawArrays(GL_TRIANGLES, 0, 6);
        ++m_drawCalls;
    }
    glDisable(GL_POLYGON_OFFSET_FILL);
    glEnable(GL_CULL_FACE);

    if (showJoints)
    {
        drawJoints(frame, viewProjection);
    }

    glBindVertexArray(0);
    glUseProgram(0);
}

} // namespace polytope::viewer

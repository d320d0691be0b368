#include "viewer/geometry_mesh.h"

#include <cmath>

namespace polytope::viewer
{
namespace
{
using Point = std::array<float, 3>;

Point sub(const Point& a, const Point& b)
{
    return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}

/// Appends triangle (a, b, c), counter-clockwise from its front, flat shaded.
void addTriangle(HullMesh& mesh, const Point& a, const Point& b, const Point& c)
{
    const Point u = sub(b, a);
    const Point v = sub(c, a);
    Point n{u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    const float length = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    n = length > 0.0f ? Point{n[0] / length, n[1] / length, n[2] / length} : Point{0.0f, 1.0f, 0.0f};
    for (const Point& p : {a, b, c})
    {
        mesh.vertices.insert(mesh.vertices.end(), {p[0], p[1], p[2], n[0], n[1], n[2]});
    }
}

/// `p` rotated by the unit quaternion q (x, y, z, w) and moved by t.
Point place(const std::array<float, 4>& q, const Point& t, const Point& p)
{
    const Point u{q[0], q[1], q[2]};
    const float w = q[3];
    const auto cross = [](const Point& a, const Point& b) {
        return Point{a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
    };
    const Point c1 = cross(u, p);
    const Point tmp{c1[0] + w * p[0], c1[1] + w * p[1], c1[2] + w * p[2]};
    const Point c2 = cross(u, tmp);
    return {p[0] + 2.0f * c2[0] + t[0], p[1] + 2.0f * c2[1] + t[1], p[2] + 2.0f * c2[2] + t[2]};
}

void addHull(HullMesh& mesh, const protocol::HullGeometry& hull, const std::array<float, 4>& q,
             const Point& t)
{
    std::size_t first = 0;
    for (const std::uint8_t size : hull.faceSizes)
    {
        const Point a = place(q, t, hull.vertices[hull.faceIndices[first]]);
        for (std::size_t k = 1; k + 1 < size; ++k)
        {
            addTriangle(mesh, a, place(q, t, hull.vertices[hull.faceIndices[first + k]]),
                        place(q, t, hull.vertices[hull.faceIndices[first + k + 1]]));
        }
        first += size;
    }
}

void addBox(HullMesh& mesh, const Point& half, const std::array<float, 4>& q, const Point& t)
{
    // Six faces, each two triangles counter-clockwise from outside.
    for (int axis = 0; axis < 3; ++axis)
    {
        for (const float sign : {-1.0f, 1.0f})
        {
            const int u = (axis + 1) % 3;
            const int v = (axis + 2) % 3;
            Point corner[4];
            const float us[4] = {-1, 1, 1, -1};
            const float vs[4] = {-1, -1, 1, 1};
            for (int k = 0; k < 4; ++k)
            {
                Point p{};
                p[axis] = sign * half[axis];
                p[u] = us[k] * half[u] * sign;
                p[v] = vs[k] * half[v];
                corner[k] = place(q, t, p);
            }
            addTriangle(mesh, corner[0], corner[1], corner[2]);
            addTriangle(mesh, corner[0], corner[2], corner[3]);
        }
    }
}
} // namespace

HullMesh surfaceOf(const protocol::Geometry& geometry)
{
    HullMesh mesh;
    const std::array<float, 4> identity{0.0f, 0.0f, 0.0f, 1.0f};
    const Point origin{};
    switch (geometry.kind)
    {
    case protocol::wire::ShapeKind::Hull:
        addHull(mesh, geometry.hull, identity, origin);
        break;
    case protocol::wire::ShapeKind::Mesh:
    {
        const protocol::MeshGeometry& m = geometry.mesh;
        if (m.indices.size() / 3 > kMaxGeometryTriangles)
        {
            break;
        }
        for (std::size_t i = 0; i + 2 < m.indices.size(); i += 3)
        {
            addTriangle(mesh, m.vertices[m.indices[i]], m.vertices[m.indices[i + 1]],
                        m.vertices[m.indices[i + 2]]);
        }
        break;
    }
    case protocol::wire::ShapeKind::HeightField:
    {
        const protocol::HeightFieldGeometry& h = geometry.heightField;
        const std::size_t cellsX = h.samplesX - 1;
        const std::size_t cellsZ = h.samplesZ - 1;
        if (2 * cellsX * cellsZ > kMaxGeometryTriangles)
        {
            break;
        }
        const auto at = [&](std::size_t ix, std::size_t iz)
        {
            return Point{static_cast<float>(ix) * h.cellSizeX,
                         h.heightOffset + h.heightScale * static_cast<float>(h.samples[iz * h.samplesX + ix]),
                         static_cast<float>(iz) * h.cellSizeZ};
        };
        for (std::size_t iz = 0; iz < cellsZ; ++iz)
        {
            for (std::size_t ix = 0; ix < cellsX; ++ix)
            {
                if (h.isHole(static_cast<std::uint32_t>(iz * cellsX + ix)))
                {
                    continue;
                }
                // Counter-clockwise seen from above (+y).
                addTriangle(mesh, at(ix, iz), at(ix, iz + 1), at(ix + 1, iz));
                addTriangle(mesh, at(ix + 1, iz), at(ix, iz + 1), at(ix + 1, iz + 1));
            }
        }
        break;
    }
    case protocol::wire::ShapeKind::Compound:
        for (const protocol::CompoundChildGeometry& c : geometry.compound.children)
        {
            if (c.kind == protocol::wire::ShapeKind::Hull)
            {
                addHull(mesh, geometry.compound.hulls[c.hull], c.orientation, c.position);
                continue;
            }
            // Boxes by their faces; spheres and capsules by their boxes (extent is their half size).
            const Point half = c.kind == protocol::wire::ShapeKind::Capsule
                                   ? Point{c.extent[0], c.extent[1] + c.extent[0], c.extent[2]}
                                   : c.extent;
            addBox(mesh, half, c.orientation, c.position);
        }
        break;
    default:
        break;
    }
    return mesh;
}

int GeometrySurfaces::add(std::uint64_t hash, const protocol::Geometry& geometry)
{
    HullMesh mesh = surfaceOf(geometry);
    const int index = mesh.vertices.empty() ? -1 : static_cast<int>(m_meshes.size());
    if (index >= 0)
    {
        m_meshes.push_back(std::move(mesh));
    }
    m_index.emplace(hash, index);
    return index;
}

int GeometrySurfaces::indexOf(std::uint64_t hash, const std::map<std::uint64_t, protocol::Geometry>& geometry)
{
    if (const auto known = m_index.find(hash); known != m_index.end())
    {
        return known->second;
    }
    const auto it = geometry.find(hash);
    return it == geometry.end() ? -1 : add(hash, it->second);
}

int GeometrySurfaces::indexOf(std::uint64_t hash,
                              const std::map<std::uint64_t, protocol::ReceivedGeometry>& received)
{
    if (const auto known = m_index.find(hash); known != m_index.end())
    {
        return known->second;
    }
    const auto it = received.find(hash);
    return it == received.end() ? -1 : add(hash, it->second.geometry);
}

} // namespace polytope::viewer

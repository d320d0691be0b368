// Polytope physics: shape validation and mass properties.
//
// Hull integration. Pick a point r inside the hull (the mean of its vertices) and fan-triangulate each
// face; every triangle (a, b, c) with r spans a tetrahedron whose signed volume is det(a', b', c') / 6,
// with a' = a - r etc. For a tetrahedron with one vertex at the origin the second moment is exactly
//     integral of x x^T dV = det / 120 * (a' a'^T + b' b'^T + c' c'^T + s s^T),   s = a' + b' + c'
// (the covariance form of Tonon 2004 / Blow & Binstock 2004), and its first moment is det / 24 * s.
// Summing, shifting the second moment from r to the centroid (parallel-axis theorem) and converting
// covariance C to inertia (trace(C) I - C) gives the tensor. Working about an interior point keeps the
// terms small (no cancellation from a far-away origin); double precision keeps the sums exact enough
// that a hull of a box reproduces the box's closed form to float precision.
#include "polytope/physics/mass.h"

#include "polytope/physics/dvec3.h"

#include <array>
#include <cmath>
#include <string>
#include <utility>

namespace polytope::physics
{
namespace
{

using Sym3 = std::array<double, 6>; // xx, yy, zz, xy, xz, yz

double det3(const DVec3& a, const DVec3& b, const DVec3& c)
{
    return a.x * (b.y * c.z - b.z * c.y) - a.y * (b.x * c.z - b.z * c.x) + a.z * (b.x * c.y - b.y * c.x);
}
void addOuter(Sym3& m, const DVec3& v, double w)
{
    m[0] += w * v.x * v.x;
    m[1] += w * v.y * v.y;
    m[2] += w * v.z * v.z;
    m[3] += w * v.x * v.y;
    m[4] += w * v.x * v.z;
    m[5] += w * v.y * v.z;
}

/// Inertia tensor (trace(C) I - C) * density from covariance C.
Mat3 inertiaFromCovariance(const Sym3& c, double density)
{
    const double trace = c[0] + c[1] + c[2];
    const auto f = [density](double v) { return static_cast<float>(v * density); };
    const float ixx = f(trace - c[0]), iyy = f(trace - c[1]), izz = f(trace - c[2]);
    const float ixy = f(-c[3]), ixz = f(-c[4]), iyz = f(-c[5]);
    return {Vec3{ixx, ixy, ixz}, Vec3{ixy, iyy, iyz}, Vec3{ixz, iyz, izz}};
}

ShapeValidation fail(ShapeError error, std::string message)
{
    return {error, std::move(message)};
}

ShapeValidation checkPositive(const char* what, float v)
{
    if (!std::isfinite(v))
    {
        return fail(ShapeError::NonFinite, std::string(what) + " is not finite");
    }
    if (!(v > 0.0f))
    {
        return fail(ShapeError::NonPositiveSize,
                    std::string(what) + " must be > 0, got " + std::to_string(v));
    }
    if (v > kMaxShapeSizeMeters)
    {
        return fail(ShapeError::TooLarge,
                    std::string(what) + " must be at most 1e6 m, got " + std::to_string(v));
    }
    return {};
}

ShapeValidation checkHull(const ConvexHull& hull)
{
    const std::size_t vertexCount = hull.vertices.size();
    if (vertexCount < 4 || hull.faces.size() < 4 || hull.edges.size() < 6)
    {
        return fail(ShapeError::MalformedHull,
                    "hull has too few vertices, faces or edges to enclose a volume");
    }
    for (const Vec3& v : hull.vertices)
    {
        if (!isFinite(v))
        {
            return fail(ShapeError::NonFinite, "hull vertex is not finite");
        }
    }
    for (const HullFace& f : hull.faces)
    {
        if (!isFinite(f.normal) || !std::isfinite(f.offset))
        {
            return fail(ShapeError::NonFinite, "hull face plane is not finite");
        }
        if (f.indexCount < 3 || std::size_t{f.firstIndex} + f.indexCount > hull.faceVertices.size())
        {
            return fail(ShapeError::MalformedHull, "hull face index range is invalid");
        }
    }
    for (std::uint16_t index : hull.faceVertices)
    {
        if (index >= vertexCount)
        {
            return fail(ShapeError::MalformedHull, "hull face vertex index out of range");
        }
    }
    for (const HullEdge& e : hull.edges)
    {
        if (e.v0 >= vertexCount || e.v1 >= vertexCount || e.face0 >= hull.faces.size() ||
            e.face1 >= hull.faces.size())
        {
            return fail(ShapeError::MalformedHull, "hull edge index out of range");
        }
    }
    if (!isFinite(hull.centroid))
    {
        return fail(ShapeError::NonFinite, "hull centroid is not finite");
    }
    return {};
}

bool indicesInRange(const ConvexHull& hull)
{
    for (const HullFace& f : hull.faces)
    {
        if (std::size_t{f.firstIndex} + f.indexCount > hull.faceVertices.size())
        {
            return false;
        }
    }
    for (std::uint16_t index : hull.faceVertices)
    {
        if (index >= hull.vertices.size())
        {
            return false;
        }
    }
    return !hull.vertices.empty();
}

} // namespace

ShapeValidation validateShape(const Shape& shape, std::span<const ConvexHull> hulls)
{
    switch (shape.type)
    {
    case ShapeType::Sphere:
        return checkPositive("sphere radius", shape.sphere.radius);
    case ShapeType::Capsule:
    {
        ShapeValidation r = checkPositive("capsule radius", shape.capsule.radius);
        return r.ok() ? checkPositive("capsule half height", shape.capsule.halfHeight) : r;
    }
    case ShapeType::Box:
    {
        const Vec3& h = shape.box.halfExtents;
        ShapeValidation r = checkPositive("box half extent x", h.x);
        if (r.ok())
        {
            r = checkPositive("box half extent y", h.y);
        }
        return r.ok() ? checkPositive("box half extent z", h.z) : r;
    }
    case ShapeType::Plane:
    {
        if (!isFinite(shape.plane.normal) || !std::isfinite(shape.plane.offset))
        {
            return fail(ShapeError::NonFinite, "plane normal or offset is not finite");
        }
        if (std::fabs(shape.plane.offset) > kMaxShapeSizeMeters)
        {
            return fail(ShapeError::TooLarge,
                        "plane offset must be within 1e6 m, got " + std::to_string(shape.plane.offset));
        }
        const float len = length(shape.plane.normal);
        if (!(std::fabs(len - 1.0f) <= kUnitNormalTolerance))
        {
            return fail(ShapeError::NonUnitNormal,
                        "plane normal must be unit length, got length " + std::to_string(len));
        }
        return {};
    }
    case ShapeType::Compound:
    case ShapeType::Mesh:
    case ShapeType::HeightField:
        return {}; // their geometry is in the world's catalogues: validateCompound, the mesh builders
    case ShapeType::Hull:
        if (shape.hullIndex >= hulls.size())
        {
            return fail(ShapeError::HullIndexOutOfRange, "hull index " + std::to_string(shape.hullIndex) +
                                                             " is outside the catalogue of " +
                                                             std::to_string(hulls.size()) + " hulls");
        }
        return checkHull(hulls[shape.hullIndex]);
    }
    return fail(ShapeError::UnknownType,
                "unknown shape type " + std::to_string(static_cast<int>(shape.type)));
}

MassProperties computeMassProperties(const SphereShape& sphere, float density)
{
    const double r = sphere.radius;
    const double mass = density * (4.0 / 3.0) * 3.14159265358979323846 * r * r * r;
    const float i = static_cast<float>(0.4 * mass * r * r);
    MassProperties out;
    out.mass = static_cast<float>(mass);
    out.inertia = Mat3::diagonal({i, i, i});
    return out;
}

MassProperties computeMassProperties(const CapsuleShape& capsule, float density)
{
    // Cylinder of height h plus two hemispheres of radius r. A hemisphere's centre of mass sits 3r/8
    // from its flat face; moving each one's inertia to the capsule's centre gives the h^2/4 + 3hr/8 terms.
    constexpr double pi = 3.14159265358979323846;
    const double r = capsule.radius, h = 2.0 * double{capsule.halfHeight};
    const double cylinderMass = density * pi * r * r * h;
    const double spheresMass = density * (4.0 / 3.0) * pi * r * r * r;
    const double iy = cylinderMass * r * r * 0.5 + spheresMass * 0.4 * r * r;
    const double ix = cylinderMass * (r * r / 4.0 + h * h / 12.0) +
                      spheresMass * (0.4 * r * r + h * h / 4.0 + 3.0 * h * r / 8.0);
    MassProperties out;
    out.mass = static_cast<float>(cylinderMass + spheresMass);
    out.inertia = Mat3::diagonal({static_cast<float>(ix), static_cast<float>(iy), static_cast<float>(ix)});
    return out;
}

MassProperties computeMassProperties(const BoxShape& box, float density)
{
    const double x = 2.0 * double{box.halfExtents.x}, y = 2.0 * double{box.halfExtents.y},
                 z = 2.0 * double{box.halfExtents.z};
    const double mass = density * x * y * z;
    const double k = mass / 12.0;
    MassProperties out;
    out.mass = static_cast<float>(mass);
    out.inertia =
        Mat3::diagonal({static_cast<float>(k * (y * y + z * z)), static_cast<float>(k * (x * x + z * z)),
                        static_cast<float>(k * (x * x + y * y))});
    return out;
}

MassProperties computeMassProperties(const ConvexHull& hull, float density)
{
    if (!indicesInRange(hull))
    {
        return {};
    }
    DVec3 reference{};
    for (const Vec3& v : hull.vertices)
    {
        reference = reference + toDouble(v);
    }
    reference = reference * (1.0 / static_cast<double>(hull.vertices.size()));

    double sixVolume = 0.0; // sum of det
    DVec3 firstMoment24{};  // sum of det * s  (= 24 * first moment about the reference)
    Sym3 secondMoment120{}; // sum of det * (a a^T + b b^T + c c^T + s s^T)  (= 120 * covariance)
    for (const HullFace& face : hull.faces)
    {
        if (face.indexCount < 3)
        {
            continue;
        }
        const std::uint16_t* loop = hull.faceVertices.data() + face.firstIndex;
        const DVec3 a = toDouble(hull.vertices[loop[0]]) - reference;
        for (std::uint16_t k = 1; k + 1 < face.indexCount; ++k)
        {
            const DVec3 b = toDouble(hull.vertices[loop[k]]) - reference;
            const DVec3 c = toDouble(hull.vertices[loop[k + 1]]) - reference;
            const double det = det3(a, b, c);
            const DVec3 s = a + b + c;
            sixVolume += det;
            firstMoment24 = firstMoment24 + s * det;
            addOuter(secondMoment120, a, det);
            addOuter(secondMoment120, b, det);
            addOuter(secondMoment120, c, det);
            addOuter(secondMoment120, s, det);
        }
    }
    if (!(sixVolume > 0.0))
    {
        return {};
    }
    const double volume = sixVolume / 6.0;
    const DVec3 offset = firstMoment24 * (1.0 / (24.0 * volume)); // centroid - reference
    Sym3 covariance{};
    for (int i = 0; i < 6; ++i)
    {
        covariance[i] = secondMoment120[i] / 120.0;
    }
    addOuter(covariance, offset, -volume); // parallel-axis shift from the reference to the centroid

    MassProperties out;
    out.mass = static_cast<float>(volume * density);
    out.centerOfMass = toFloat(reference + offset);
    out.inertia = inertiaFromCovariance(covariance, density);
    return out;
}

MassProperties computeMassProperties(const Shape& shape, float density, std::span<const ConvexHull> hulls)
{
    if (!validateShape(shape, hulls).ok())
    {
        return {};
    }
    switch (shape.type)
    {
    case ShapeType::Sphere:
        return computeMassProperties(shape.sphere, density);
    case ShapeType::Capsule:
        return computeMassProperties(shape.capsule, density);
    case ShapeType::Box:
        return computeMassProperties(shape.box, density);
    case ShapeType::Hull:
        return computeMassProperties(hulls[shape.hullIndex], density);
    case ShapeType::Plane:
    case ShapeType::Compound:
    case ShapeType::Mesh:
    case ShapeType::HeightField:
        break;
    }
    return {};
}

ShapeValidation validateCompound(const CompoundShape& compound, std::span<const ConvexHull> hulls)
{
    if (compound.children.empty() || compound.children.size() > kMaxCompoundChildren)
    {
        return fail(ShapeError::NonPositiveSize,
                    "a compound needs 1 to " + std::to_string(kMaxCompoundChildren) + " children, got " +
                        std::to_string(compound.children.size()));
    }
    for (std::size_t i = 0; i < compound.children.size(); ++i)
    {
        const CompoundChild& child = compound.children[i];
        const std::string where = "compound child " + std::to_string(i) + ": ";
        if (!isConvexType(child.shape.type))
        {
            return fail(ShapeError::UnknownType, where + "must be a sphere, capsule, box or hull");
        }
        ShapeValidation v = validateShape(child.shape, hulls);
        if (!v.ok())
        {
            v.message = where + v.message;
            return v;
        }
        const Transform& xf = child.transform;
        if (!isFinite(xf.p) || !isFinite(xf.q))
        {
            return fail(ShapeError::NonFinite, where + "transform is not finite");
        }
        if (std::fabs(xf.p.x) > kMaxShapeSizeMeters || std::fabs(xf.p.y) > kMaxShapeSizeMeters ||
            std::fabs(xf.p.z) > kMaxShapeSizeMeters)
        {
            return fail(ShapeError::TooLarge, where + "offset must be within 1e6 m");
        }
        const float qLength = std::sqrt(dot(xf.q, xf.q));
        if (!(std::fabs(qLength - 1.0f) <= kUnitNormalTolerance))
        {
            return fail(ShapeError::NonUnitNormal,
                        where + "rotation must be a unit quaternion, got length " + std::to_string(qLength));
        }
    }
    return {};
}

MassProperties computeMassProperties(const CompoundShape& compound, float density,
                                     std::span<const ConvexHull> hulls)
{
    if (!validateCompound(compound, hulls).ok())
    {
        return {};
    }
    // Each child's mass, centre (compound frame) and inertia rotated into the compound's axes, in double.
    double mass = 0.0;
    DVec3 moment{};
    for (const CompoundChild& child : compound.children)
    {
        const MassProperties mp = computeMassProperties(child.shape, density, hulls);
        const DVec3 c = toDouble(transformPoint(child.transform, mp.centerOfMass));
        mass += mp.mass;
        moment = moment + c * double(mp.mass);
    }
    if (!(mass > 0.0))
    {
        return {};
    }
    const DVec3 center = moment * (1.0 / mass);
    double inertia[3][3] = {};
    for (const CompoundChild& child : compound.children)
    {
        const MassProperties mp = computeMassProperties(child.shape, density, hulls);
        const Mat3 r = toMat3(child.transform.q);
        const Mat3 local = mp.inertia;
        const Vec3 rc[3] = {r.c0, r.c1, r.c2};
        const Vec3 lc[3] = {local.c0, local.c1, local.c2};
        const auto at = [](const Vec3* columns, int row, int col)
        {
            const Vec3& c = columns[col];
            return double(row == 0 ? c.x : row == 1 ? c.y : c.z);
        };
        const DVec3 d = toDouble(transformPoint(child.transform, mp.centerOfMass)) - center;
        const double dv[3] = {d.x, d.y, d.z};
        const double d2 = d.x * d.x + d.y * d.y + d.z * d.z;
        for (int i = 0; i < 3; ++i)
        {
            for (int j = 0; j < 3; ++j)
            {
                double rotated = 0.0; // (R I R^T)_ij
                for (int k = 0; k < 3; ++k)
                {
                    for (int l = 0; l < 3; ++l)
                    {
                        rotated += at(rc, i, k) * at(lc, k, l) * at(rc, j, l);
                    }
                }
                inertia[i][j] += rotated + double(mp.mass) * ((i == j ? d2 : 0.0) - dv[i] * dv[j]);
            }
        }
    }
    MassProperties out;
    out.mass = static_cast<float>(mass);
    out.centerOfMass = toFloat(center);
    // Symmetrised: the rounding of the rotations must not leave the tensor skew.
    const auto entry = [&](int i, int j)
    { return static_cast<float>(0.5 * (inertia[i][j] + inertia[j][i])); };
    out.inertia =
        Mat3{Vec3{entry(0, 0), entry(1, 0), entry(2, 0)}, Vec3{entry(0, 1), entry(1, 1), entry(2, 1)},
             Vec3{entry(0, 2), entry(1, 2), entry(2, 2)}};
    return out;
}

} // namespace polytope::physics

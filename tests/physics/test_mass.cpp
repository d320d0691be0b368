// Mass properties: closed forms, independent slice integration, hulls against primitives, and the
// behaviour of inertia under rotation and translation; shape validation.
#include "polytope/physics/hull.h"
#include "polytope/physics/mass.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace polytope::physics;

namespace
{

constexpr double kPiD = 3.14159265358979323846;

/// Mass and principal inertia of a solid of revolution about y, integrated numerically over thin discs
/// (Simpson's rule), given the disc radius as a function of height. Independent of the closed forms.
struct SliceResult
{
    double mass = 0.0, ix = 0.0, iy = 0.0;
};
template <class RadiusAt>
SliceResult integrateRevolution(RadiusAt radiusAt, double yMin, double yMax, double density)
{
    const int n = 20000; // even
    const double h = (yMax - yMin) / n;
    SliceResult out;
    for (int i = 0; i <= n; ++i)
    {
        const double y = yMin + h * i;
        const double w = (i == 0 || i == n) ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0);
        const double r = radiusAt(y);
        const double discMass = density * kPiD * r * r; // per unit height
        out.mass += w * discMass;
        out.iy += w * discMass * r * r / 2.0;
        out.ix += w * discMass * (r * r / 4.0 + y * y); // thin disc about a diameter, moved by y
    }
    out.mass *= h / 3.0;
    out.ix *= h / 3.0;
    out.iy *= h / 3.0;
    return out;
}

/// The largest absolute entry of a - b, relative to the largest entry of b.
double relativeDifference(const Mat3& a, const Mat3& b)
{
    double diff = 0.0, scale = 0.0;
    for (int c = 0; c < 3; ++c)
    {
        const Vec3 ca = c == 0 ? a.c0 : (c == 1 ? a.c1 : a.c2);
        const Vec3 cb = c == 0 ? b.c0 : (c == 1 ? b.c1 : b.c2);
        for (int r = 0; r < 3; ++r)
        {
            diff = std::max(diff, std::fabs(double{ca[r]} - double{cb[r]}));
            scale = std::max(scale, std::fabs(double{cb[r]}));
        }
    }
    return diff / scale;
}

bool isSymmetric(const Mat3& m)
{
    return m.c0.y == m.c1.x && m.c0.z == m.c2.x && m.c1.z == m.c2.y;
}

Vec3 randomUnit(std::mt19937& rng)
{
    std::normal_distribution<float> g(0.0f, 1.0f);
    return normalize(Vec3{g(rng), g(rng), g(rng)});
}

std::vector<Vec3> boxCorners(const Vec3& h)
{
    std::vector<Vec3> corners;
    for (int i = 0; i < 8; ++i)
    {
        corners.push_back({(i & 1) ? h.x : -h.x, (i & 2) ? h.y : -h.y, (i & 4) ? h.z : -h.z});
    }
    return corners;
}

} // namespace

TEST_CASE("sphere and capsule mass properties match integration over discs", "[mass]")
{
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> size(0.05f, 3.0f);
    std::uniform_real_distribution<float> densityDist(10.0f, 8000.0f);
    for (int trial = 0; trial < 10; ++trial)
    {
        const float r = size(rng), halfHeight = size(rng), density = densityDist(rng);

        const MassProperties sphere = computeMassProperties(SphereShape{r}, density);
        const SliceResult s = integrateRevolution(
            [r](double y) { return std::sqrt(std::max(0.0, double{r} * r - y * y)); }, -r, r, density);
        CHECK(sphere.mass == Approx(s.mass).epsilon(1e-5));
        CHECK(sphere.inertia.c0.x == Approx(s.ix).epsilon(1e-5));
        CHECK(sphere.inertia.c1.y == Approx(s.iy).epsilon(1e-5));
        CHECK(sphere.inertia.c2.z == Approx(s.ix).epsilon(1e-5));
        CHECK(sphere.centerOfMass == Vec3{});
        // The textbook closed form, too.
        CHECK(sphere.mass == Approx(density * 4.0 / 3.0 * kPiD * r * r * r).epsilon(1e-6));
        CHECK(sphere.inertia.c0.x == Approx(0.4 * sphere.mass * r * r).epsilon(1e-6));

        const MassProperties capsule = computeMassProperties(CapsuleShape{halfHeight, r}, density);
        const SliceResult c = integrateRevolution(
            [r, halfHeight](double y)
            {
                const double beyond = std::fabs(y) - halfHeight;
                return beyond <= 0.0 ? double{r} : std::sqrt(std::max(0.0, double{r} * r - beyond * beyond));
            },
            -(halfHeight + r), halfHeight + r, density);
        CHECK(capsule.mass == Approx(c.mass).epsilon(1e-5));
        CHECK(capsule.inertia.c0.x == Approx(c.ix).epsilon(1e-5));
        CHECK(capsule.inertia.c1.y == Approx(c.iy).epsilon(1e-5));
        CHECK(capsule.inertia.c2.z == Approx(c.ix).epsilon(1e-5));
        CHECK(capsule.inertia.c0.y == 0.0f);
        CHECK(capsule.centerOfMass == Vec3{});
    }
}

TEST_CASE("box closed form, and a hull built from the box's corners gives the same", "[mass]")
{
    std::mt19937 rng(12);
    std::uniform_real_distribution<float> size(0.05f, 3.0f);
    for (int trial = 0; trial < 20; ++trial)
    {
        const Vec3 h{size(rng), size(rng), size(rng)};
        const float density = 750.0f;
        const MassProperties box = computeMassProperties(BoxShape{h}, density);
        const double m = density * 8.0 * h.x * h.y * h.z;
        CHECK(box.mass == Approx(m).epsilon(1e-6));
        CHECK(box.inertia.c0.x == Approx(m / 3.0 * (h.y * h.y + h.z * h.z)).epsilon(1e-6));
        CHECK(box.inertia.c1.y == Approx(m / 3.0 * (h.x * h.x + h.z * h.z)).epsilon(1e-6));
        CHECK(box.inertia.c2.z == Approx(m / 3.0 * (h.x * h.x + h.y * h.y)).epsilon(1e-6));

        const HullResult built = buildConvexHull(boxCorners(h));
        REQUIRE(built.ok());
        const ConvexHull exactBox = makeBoxHull(h);
        for (const ConvexHull* hull : {&built.hull, &exactBox})
        {
            const MassProperties p = computeMassProperties(*hull, density);
            CHECK(p.mass == Approx(box.mass).epsilon(1e-5));
            CHECK(length(p.centerOfMass) <= 1e-6f * length(h));
            CHECK(relativeDifference(p.inertia, box.inertia) < 1e-5);
            CHECK(isSymmetric(p.inertia));
        }
    }
}

TEST_CASE("tetrahedron and octahedron hulls match their closed forms", "[mass]")
{
    std::mt19937 rng(13);
    std::uniform_real_distribution<float> size(0.1f, 4.0f);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    const float density = 2.5f;
    for (int trial = 0; trial < 20; ++trial)
    {
        // Right tetrahedron with legs a, b, c along the axes from corner o. By direct integration:
        // V = abc/6, centroid o + (a, b, c)/4, and about the centroid Ixx = 3m(b^2 + c^2)/80,
        // Ixy = +m ab/80 (the product of inertia -integral of x y dm is positive here: the covariance
        // a b (1/20 - 1/16) is negative).
        const double a = size(rng), b = size(rng), c = size(rng);
        const Vec3 o = Vec3{unit(rng), unit(rng), unit(rng)} * 5.0f;
        std::vector<Vec3> pts{o, o + Vec3{static_cast<float>(a), 0, 0}, o + Vec3{0, static_cast<float>(b), 0},
                              o + Vec3{0, 0, static_cast<float>(c)}};
        const double A = pts[1].x - o.x, B = pts[2].y - o.y, C = pts[3].z - o.z; // as stored in float
        pts.push_back(o + Vec3{static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)} * 0.2f);
        const HullResult r = buildConvexHull(pts);
        REQUIRE(r.ok());
        REQUIRE(r.hull.vertices.size() == 4);
        const MassProperties p = computeMassProperties(r.hull, density);
        const double m = density * A * B * C / 6.0;
        CHECK(p.mass == Approx(m).epsilon(1e-5));
        CHECK(p.centerOfMass.x == Approx(o.x + A / 4.0).margin(1e-5 * (std::fabs(o.x) + A)));
        CHECK(p.centerOfMass.y == Approx(o.y + B / 4.0).margin(1e-5 * (std::fabs(o.y) + B)));
        CHECK(p.centerOfMass.z == Approx(o.z + C / 4.0).margin(1e-5 * (std::fabs(o.z) + C)));
        const float ixx = static_cast<float>(3.0 * m * (B * B + C * C) / 80.0);
        const float iyy = static_cast<float>(3.0 * m * (A * A + C * C) / 80.0);
        const float izz = static_cast<float>(3.0 * m * (A * A + B * B) / 80.0);
        const float ixy = static_cast<float>(m * A * B / 80.0);
        const float ixz = static_cast<float>(m * A * C / 80.0);
        const float iyz = static_cast<float>(m * B * C / 80.0);
        const Mat3 expected{Vec3{ixx, ixy, ixz}, Vec3{ixy, iyy, iyz}, Vec3{ixz, iyz, izz}};
        CHECK(relativeDifference(p.inertia, expected) < 1e-4);
        CHECK(isSymmetric(p.inertia));
    }

    // Octahedron |x| + |y| + |z| <= s: V = 4 s^3 / 3, E[x^2] = s^2 / 10, so I = m s^2 / 5 on each axis.
    const float s = 1.7f;
    const std::vector<Vec3> octahedron{{s, 0, 0}, {-s, 0, 0}, {0, s, 0}, {0, -s, 0}, {0, 0, s}, {0, 0, -s}};
    const HullResult r = buildConvexHull(octahedron);
    REQUIRE(r.ok());
    CHECK(r.hull.faces.size() == 8);
    const MassProperties p = computeMassProperties(r.hull, density);
    const double m = density * 4.0 * s * s * s / 3.0;
    CHECK(p.mass == Approx(m).epsilon(1e-6));
    const float i = static_cast<float>(m * s * s / 5.0);
    CHECK(relativeDifference(p.inertia, Mat3::diagonal({i, i, i})) < 1e-6);
}

TEST_CASE("rotating and translating a hull rotates its inertia and moves its centre of mass", "[mass]")
{
    std::mt19937 rng(14);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_real_distribution<float> angle(-kPi, kPi);
    for (int trial = 0; trial < 50; ++trial)
    {
        std::vector<Vec3> pts;
        for (int i = 0; i < 24; ++i)
        {
            pts.push_back(Vec3{unit(rng), 0.5f * unit(rng), 2.0f * unit(rng)});
        }
        const Quat q = quatFromAxisAngle(randomUnit(rng), angle(rng));
        const Vec3 t = Vec3{unit(rng), unit(rng), unit(rng)} * 20.0f;
        std::vector<Vec3> moved;
        for (const Vec3& p : pts)
        {
            moved.push_back(rotate(q, p) + t);
        }
        const HullResult a = buildConvexHull(pts);
        const HullResult b = buildConvexHull(moved);
        REQUIRE(a.ok());
        REQUIRE(b.ok());
        const MassProperties pa = computeMassProperties(a.hull, 100.0f);
        const MassProperties pb = computeMassProperties(b.hull, 100.0f);
        CHECK(pb.mass == Approx(pa.mass).epsilon(1e-4));
        CHECK(distance(pb.centerOfMass, rotate(q, pa.centerOfMass) + t) < 1e-4f * (1.0f + length(t)));
        const Mat3 rot = toMat3(q);
        CHECK(relativeDifference(pb.inertia, rot * pa.inertia * transpose(rot)) < 1e-3);
        CHECK(distance(b.hull.centroid, pb.centerOfMass) < 1e-5f * (1.0f + length(t)));
    }

    // A rotated, translated box, against the closed form R diag R^T about the moved centre.
    const Vec3 h{0.3f, 1.1f, 0.7f};
    const Quat q = quatFromAxisAngle(normalize(Vec3{1.0f, 2.0f, -0.5f}), 0.9f);
    const Vec3 t{5.0f, -3.0f, 12.0f};
    std::vector<Vec3> corners;
    for (const Vec3& c : boxCorners(h))
    {
        corners.push_back(rotate(q, c) + t);
    }
    const HullResult r = buildConvexHull(corners);
    REQUIRE(r.ok());
    REQUIRE(r.hull.faces.size() == 6);
    const MassProperties p = computeMassProperties(r.hull, 300.0f);
    const MassProperties box = computeMassProperties(BoxShape{h}, 300.0f);
    const Mat3 rot = toMat3(q);
    CHECK(p.mass == Approx(box.mass).epsilon(1e-5));
    CHECK(distance(p.centerOfMass, t) < 1e-5f * length(t));
    CHECK(relativeDifference(p.inertia, rot * box.inertia * transpose(rot)) < 1e-4);
    CHECK(std::fabs(p.inertia.c0.y) > 1e-3f * box.inertia.c0.x); // really a full tensor
}

TEST_CASE("mass properties of a Shape dispatch on its type and refuse invalid shapes", "[mass]")
{
    const std::vector<ConvexHull> hulls{makeBoxHull({1.0f, 2.0f, 3.0f})};
    const float density = 10.0f;

    const MassProperties sphere = computeMassProperties(Shape::makeSphere(0.7f), density, hulls);
    CHECK(sphere.mass == computeMassProperties(SphereShape{0.7f}, density).mass);
    const MassProperties capsule = computeMassProperties(Shape::makeCapsule(0.4f, 0.2f), density, hulls);
    CHECK(capsule.inertia.c0.x == computeMassProperties(CapsuleShape{0.4f, 0.2f}, density).inertia.c0.x);
    const MassProperties box = computeMassProperties(Shape::makeBox({1.0f, 2.0f, 3.0f}), density, hulls);
    CHECK(box.mass == computeMassProperties(BoxShape{{1.0f, 2.0f, 3.0f}}, density).mass);

    Shape hullShape;
    hullShape.type = ShapeType::Hull;
    hullShape.hullIndex = 0;
    const MassProperties hull = computeMassProperties(hullShape, density, hulls);
    CHECK(hull.mass == Approx(box.mass).epsilon(1e-6));
    CHECK(relativeDifference(hull.inertia, box.inertia) < 1e-6);

    hullShape.hullIndex = 1;
    CHECK(computeMassProperties(hullShape, density, hulls).mass == 0.0f);
    CHECK(computeMassProperties(Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f), density, hulls).mass == 0.0f);
    CHECK(computeMassProperties(Shape::makeSphere(-1.0f), density, hulls).mass == 0.0f);
}

TEST_CASE("validateShape reports what is wrong with a shape", "[mass]")
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    CHECK(validateShape(Shape::makeSphere(0.5f)).ok());
    CHECK(validateShape(Shape::makeSphere(0.0f)).error == ShapeError::NonPositiveSize);
    CHECK(validateShape(Shape::makeSphere(-2.0f)).error == ShapeError::NonPositiveSize);
    CHECK(validateShape(Shape::makeSphere(nan)).error == ShapeError::NonFinite);
    CHECK(validateShape(Shape::makeCapsule(0.5f, 0.1f)).ok());
    CHECK(validateShape(Shape::makeCapsule(0.0f, 0.1f)).error == ShapeError::NonPositiveSize);
    CHECK(validateShape(Shape::makeCapsule(0.5f, inf)).error == ShapeError::NonFinite);
    CHECK(validateShape(Shape::makeBox({1.0f, 1.0f, 1.0f})).ok());
    CHECK(validateShape(Shape::makeBox({1.0f, -1.0f, 1.0f})).error == ShapeError::NonPositiveSize);
    CHECK(validateShape(Shape::makeBox({1.0f, 1.0f, nan})).error == ShapeError::NonFinite);
    CHECK(validateShape(Shape::makePlane({0.0f, 1.0f, 0.0f}, -3.0f)).ok());
    CHECK(validateShape(Shape::makePlane(normalize(Vec3{1.0f, 2.0f, 3.0f}), 1.0f)).ok());
    CHECK(validateShape(Shape::makePlane({0.0f, 2.0f, 0.0f}, 0.0f)).error == ShapeError::NonUnitNormal);
    // Finite but beyond the world: a changed byte in a saved state must not make a plane 1e20 m away.
    CHECK(validateShape(Shape::makePlane({0.0f, 1.0f, 0.0f}, 5e20f)).error == ShapeError::TooLarge);
    CHECK(validateShape(Shape::makeSphere(2e6f)).error == ShapeError::TooLarge);
    CHECK(validateShape(Shape::makeBox({1.0f, 1e7f, 1.0f})).error == ShapeError::TooLarge);
    CHECK(validateShape(Shape::makePlane({0.0f, 0.0f, 0.0f}, 0.0f)).error == ShapeError::NonUnitNormal);
    CHECK(validateShape(Shape::makePlane({0.0f, 1.0f, 0.0f}, nan)).error == ShapeError::NonFinite);
    CHECK(validateShape(Shape::makePlane({inf, 1.0f, 0.0f}, 0.0f)).error == ShapeError::NonFinite);
    CHECK_FALSE(validateShape(Shape::makeSphere(-2.0f)).message.empty());

    Shape hullShape;
    hullShape.type = ShapeType::Hull;
    hullShape.hullIndex = 0;
    CHECK(validateShape(hullShape).error == ShapeError::HullIndexOutOfRange);
    std::vector<ConvexHull> hulls{makeBoxHull({1.0f, 1.0f, 1.0f}), ConvexHull{}};
    CHECK(validateShape(hullShape, hulls).ok());
    hullShape.hullIndex = 1;
    CHECK(validateShape(hullShape, hulls).error == ShapeError::MalformedHull);
    hulls[1] = hulls[0];
    hulls[1].faceVertices[5] = 8;
    CHECK(validateShape(hullShape, hulls).error == ShapeError::MalformedHull);
    CHECK(computeMassProperties(hulls[1], 1.0f).mass == 0.0f);
    hulls[1] = hulls[0];
    hulls[1].vertices[2].x = nan;
    CHECK(validateShape(hullShape, hulls).error == ShapeError::NonFinite);

    Shape unknown;
    unknown.type = static_cast<ShapeType>(17);
    CHECK(validateShape(unknown).error == ShapeError::UnknownType);
}

// The narrowphase dispatch: every pair of shape types reaches a routine, mirrored pairs agree with the
// direct ones, and the rounded-shape-versus-hull routines agree with the closed forms on box hulls.
#include "polytope/physics/collide.h"
#include "polytope/physics/hull.h"
#include "polytope/physics/narrowphase.h"

#include "random_shapes.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

using namespace polytope::physics;
using namespace physics_test;

namespace
{

Vec3 randomVector(std::mt19937& rng, float scale)
{
    std::uniform_real_distribution<float> u(-scale, scale);
    return {u(rng), u(rng), u(rng)};
}

/// One shape of each type; the hull is hulls[0].
Shape shapeOfType(ShapeType type)
{
    switch (type)
    {
    case ShapeType::Sphere:
        return Shape::makeSphere(0.4f);
    case ShapeType::Capsule:
        return Shape::makeCapsule(0.5f, 0.3f);
    case ShapeType::Box:
        return Shape::makeBox({0.5f, 0.3f, 0.4f});
    case ShapeType::Hull:
    {
        Shape s;
        s.type = ShapeType::Hull;
        s.hullIndex = 0;
        return s;
    }
    case ShapeType::Plane:
        return Shape::makePlane({0.0f, 1.0f, 0.0f}, 0.0f);
    default: // compounds, meshes, heightfields: test_composite.cpp
        break;
    }
    return {};
}

std::vector<ConvexHull> testHulls()
{
    const Vec3 points[] = {{0.5f, 0.4f, 0.3f},   {-0.5f, 0.4f, 0.3f},   {0.4f, -0.5f, 0.35f},
                           {-0.4f, -0.5f, 0.3f}, {0.45f, 0.4f, -0.3f},  {-0.5f, 0.3f, -0.4f},
                           {0.4f, -0.4f, -0.4f}, {-0.3f, -0.5f, -0.3f}, {0.0f, 0.7f, 0.0f}};
    const HullResult built = buildConvexHull(points);
    REQUIRE(built.ok());
    return {built.hull};
}

} // namespace

TEST_CASE("the dispatch table covers every pair but plane-plane", "[narrowphase]")
{
    for (int i = 0; i < kShapeTypeCount; ++i)
    {
        for (int j = 0; j < kShapeTypeCount; ++j)
        {
            // Planes, meshes and heightfields are level geometry: no pair of two of them.
            const auto fixed = [](int t)
            {
                return t == static_cast<int>(ShapeType::Plane) || t == static_cast<int>(ShapeType::Mesh) ||
                       t == static_cast<int>(ShapeType::HeightField);
            };
            CHECK(canCollide(static_cast<ShapeType>(i), static_cast<ShapeType>(j)) ==
                  !(fixed(i) && fixed(j)));
        }
    }
    const std::vector<ConvexHull> hulls = testHulls();
    const Shape plane = shapeOfType(ShapeType::Plane);
    const ContactManifold none = collideShapesLocal(plane, plane, Transform{}, 1.0f, hulls);
    CHECK(none.pointCount == 0);
}

TEST_CASE("collideShapes(A, B) and collideShapes(B, A) describe the same contact", "[narrowphase]")
{
    const std::vector<ConvexHull> hulls = testHulls();
    std::mt19937 rng(1234);
    int touching = 0;
    int shallow = 0;
    for (int i = 0; i < kPrimitiveShapeTypeCount; ++i)
    {
        for (int j = 0; j < kPrimitiveShapeTypeCount; ++j)
        {
            const auto typeA = static_cast<ShapeType>(i);
            const auto typeB = static_cast<ShapeType>(j);
            if (!canCollide(typeA, typeB))
            {
                continue;
            }
            const Shape a = shapeOfType(typeA);
            const Shape b = shapeOfType(typeB);
            for (int trial = 0; trial < 200; ++trial)
            {
                const Transform xfA{randomVector(rng, 5.0f), randomRotation(rng)};
                Transform xfB{xfA.p + randomVector(rng, 1.0f), randomRotation(rng)};
                const float margin = 0.05f;
                const ContactManifold ab = collideShapes(a, xfA, b, xfB, margin, hulls);
                const ContactManifold ba = collideShapes(b, xfB, a, xfA, margin, hulls);
                INFO("types " << i << " " << j << " trial " << trial);
                REQUIRE(ab.pointCount <= kMaxManifoldPoints);
                if (ab.pointCount == 0 || ba.pointCount == 0)
                {
                    continue;
                }
                ++touching;
                float deepestAB = 1e30f;
                float deepestBA = 1e30f;
                for (int p = 0; p < ab.pointCount; ++p)
                {
                    deepestAB = std::min(deepestAB, ab.points[p].separation);
                    // Each point is where the routine says, in A's frame: separation along the normal.
                    CHECK(dot(ab.points[p].pointB - ab.points[p].pointA, ab.normal) ==
                          Approx(ab.points[p].separation).margin(1e-4f));
                }
                for (int p = 0; p < ba.pointCount; ++p)
                {
                    deepestBA = std::min(deepestBA, ba.points[p].separation);
                }
                // Shallow contacts (the ones a simulation meets) agree: opposite normals (within a few
                // degrees: the sides may pick different reference features when nearly tied) and equal
                // depths. Deep overlaps may legitimately pick different axes on the two sides (SAT's
                // hysteresis prefers the first shape's faces).
                if (deepestAB > -0.05f && deepestBA > -0.05f)
                {
                    ++shallow;
                    const Vec3 nAB = rotate(xfA.q, ab.normal);
                    const Vec3 nBA = rotate(xfB.q, ba.normal);
                    CHECK(dot(nAB, nBA) < -0.95f);
                    CHECK(deepestAB == Approx(deepestBA).margin(0.005f));
                }
            }
        }
    }
    CHECK(touching > 500);
    CHECK(shallow > 100);
}

TEST_CASE("sphere-hull and capsule-hull on a box hull agree with sphere-box and capsule-box", "[narrowphase]")
{
    const Vec3 half{0.5f, 0.3f, 0.4f};
    const ConvexHull hull = makeBoxHull(half);
    const BoxShape box{half};
    std::mt19937 rng(99);
    int spheres = 0;
    int capsules = 0;
    for (int trial = 0; trial < 2000; ++trial)
    {
        const Transform bInA{randomVector(rng, 1.2f), randomRotation(rng)};
        const float margin = 0.05f;
        {
            const SphereShape sphere{0.3f};
            const ContactManifold viaHull = collideSphereHull(sphere, hull, bInA, margin);
            const ContactManifold viaBox = collideSphereBox(sphere, box, bInA, margin);
            INFO("sphere trial " << trial);
            REQUIRE(viaHull.pointCount == viaBox.pointCount);
            if (viaBox.pointCount == 1)
            {
                ++spheres;
                CHECK(viaHull.points[0].separation == Approx(viaBox.points[0].separation).margin(1e-4f));
                CHECK(dot(viaHull.normal, viaBox.normal) > 0.999f);
            }
        }
        {
            const CapsuleShape capsule{0.4f, 0.2f};
            const ContactManifold viaHull = collideCapsuleHull(capsule, hull, bInA, margin);
            const ContactManifold viaBox = collideCapsuleBox(capsule, box, bInA, margin);
            INFO("capsule trial " << trial);
            REQUIRE((viaHull.pointCount > 0) == (viaBox.pointCount > 0));
            if (viaBox.pointCount > 0)
            {
                ++capsules;
                float deepestHull = 1e30f;
                float deepestBox = 1e30f;
                for (int p = 0; p < viaHull.pointCount; ++p)
                {
                    deepestHull = std::min(deepestHull, viaHull.points[p].separation);
                }
                for (int p = 0; p < viaBox.pointCount; ++p)
                {
                    deepestBox = std::min(deepestBox, viaBox.points[p].separation);
                }
                // Shallow contacts agree to the millimetre; deep ones (core segment well inside) come
                // from different methods (EPA on the core here, a small SAT in capsule-box).
                if (deepestBox > -0.1f)
                {
                    CHECK(deepestHull == Approx(deepestBox).margin(2e-3f));
                }
            }
        }
    }
    CHECK(spheres > 300);
    CHECK(capsules > 300);
}

TEST_CASE("a capsule lying on a hull face gets two points at its ends", "[narrowphase]")
{
    const ConvexHull hull = makeBoxHull({2.0f, 0.5f, 2.0f});
    const CapsuleShape capsule{0.6f, 0.25f};
    // The capsule (A) lies along x, 1 cm above the hull's top face; the hull (B) is below it.
    const Quat alongX = quatFromAxisAngle({0.0f, 0.0f, 1.0f}, 0.5f * kPi);
    const Transform capsuleWorld{{0.3f, 0.5f + 0.25f + 0.01f, 0.2f}, alongX};
    const Transform hullWorld{};
    const ContactManifold m =
        collideCapsuleHull(capsule, hull, relativeTransform(capsuleWorld, hullWorld), 0.05f);
    REQUIRE(m.pointCount == 2);
    const Vec3 normalWorld = rotate(capsuleWorld.q, m.normal);
    CHECK(normalWorld.y == Approx(-1.0f).margin(1e-5f));
    float xs[2];
    for (int p = 0; p < 2; ++p)
    {
        CHECK(m.points[p].separation == Approx(0.01f).margin(1e-5f));
        const Vec3 onHull = transformPoint(capsuleWorld, m.points[p].pointB);
        CHECK(onHull.y == Approx(0.5f).margin(1e-5f));
        xs[p] = onHull.x;
    }
    CHECK(std::min(xs[0], xs[1]) == Approx(0.3f - 0.6f).margin(1e-4f));
    CHECK(std::max(xs[0], xs[1]) == Approx(0.3f + 0.6f).margin(1e-4f));
    CHECK(m.points[0].featureId != m.points[1].featureId);

    // Hanging half over the edge: the segment is clipped at the face's side.
    const Transform overEdge{{2.0f, 0.5f + 0.25f, 0.0f}, alongX};
    const ContactManifold clipped =
        collideCapsuleHull(capsule, hull, relativeTransform(overEdge, hullWorld), 0.05f);
    REQUIRE(clipped.pointCount == 2);
    float maxX = -1e30f;
    for (int p = 0; p < 2; ++p)
    {
        maxX = std::max(maxX, transformPoint(overEdge, clipped.points[p].pointB).x);
    }
    CHECK(maxX == Approx(2.0f).margin(1e-4f));
}

// polytope-viewer without OpenGL: projection and picking.
#include "viewer/camera.h"
#include "viewer/view_frame.h"

#include <catch2/catch.hpp>

#include <cmath>

namespace
{

using namespace polytope::viewer;

ViewBody box(std::uint32_t id, Vec3f position, Vec3f half)
{
    ViewBody b;
    b.id = id;
    b.generation = 1;
    b.shape = ShapeKind::Box;
    b.position = position;
    b.extent = half;
    return b;
}

} // namespace

TEST_CASE("viewer camera: the ray through a body's projected centre picks that body")
{
    ViewFrame frame;
    frame.bodies = {box(1, {0.0f, 0.5f, 0.0f}, {0.5f, 0.5f, 0.5f}),
                    box(2, {4.0f, 0.5f, -3.0f}, {0.5f, 0.5f, 0.5f}),
                    box(3, {-5.0f, 2.0f, 2.0f}, {1.0f, 0.25f, 0.5f})};
    const OrbitCamera camera = fitCamera(frame);
    const int width = 1280, height = 720;
    for (std::size_t i = 0; i < frame.bodies.size(); ++i)
    {
        const auto pixel = projectToPixel(camera, frame.bodies[i].position, width, height);
        REQUIRE(pixel.has_value());
        const Ray ray = pickRay(camera, (*pixel)[0], (*pixel)[1], width, height);
        CHECK(pickBody(ray, frame.bodies) == static_cast<int>(i));
    }
    // A corner of the window sees none of them.
    const Ray miss = pickRay(camera, 1.0f, 1.0f, width, height);
    CHECK(pickBody(miss, frame.bodies) == -1);
}

TEST_CASE("viewer camera: the nearer of two bodies on one ray is picked, planes never")
{
    ViewFrame frame;
    frame.bodies = {box(1, {0.0f, 0.5f, -5.0f}, {0.5f, 0.5f, 0.5f}),
                    box(2, {0.0f, 0.5f, 5.0f}, {0.5f, 0.5f, 0.5f})};
    ViewBody ground;
    ground.id = 0;
    ground.generation = 1;
    ground.shape = ShapeKind::Plane;
    frame.bodies.insert(frame.bodies.begin(), ground);
    const Ray fromPlusZ{{0.0f, 0.5f, 20.0f}, {0.0f, 0.0f, -1.0f}};
    CHECK(pickBody(fromPlusZ, frame.bodies) == 2);
    const Ray fromMinusZ{{0.0f, 0.5f, -20.0f}, {0.0f, 0.0f, 1.0f}};
    CHECK(pickBody(fromMinusZ, frame.bodies) == 1);
    const Ray down{{10.0f, 10.0f, 0.0f}, {0.0f, -1.0f, 0.0f}};
    CHECK(pickBody(down, frame.bodies) == -1);
}

TEST_CASE("viewer camera: a rotated box is picked by its oriented box, not its axis-aligned one")
{
    // A long thin box turned 90 degrees about y: it extends along z, not x.
    ViewBody b = box(7, {0.0f, 0.0f, 0.0f}, {3.0f, 0.2f, 0.2f});
    const float s = std::sqrt(0.5f);
    b.orientation = {0.0f, s, 0.0f, s};
    const std::vector<ViewBody> bodies{b};
    CHECK(pickBody(Ray{{0.0f, 10.0f, 2.5f}, {0.0f, -1.0f, 0.0f}}, bodies) == 0);
    CHECK(pickBody(Ray{{2.5f, 10.0f, 0.0f}, {0.0f, -1.0f, 0.0f}}, bodies) == -1);
}

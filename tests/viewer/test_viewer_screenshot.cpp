// polytope-viewer under Xvfb: renders known local scenes to PNG files and checks their pixels against the
// scene's bodies projected with the same camera. Run by ctest inside xvfb-run (tests/CMakeLists.txt).
#include "viewer/camera.h"
#include "viewer/joint_overlay.h"
#include "viewer/renderer.h"
#include "viewer/sources.h"

#include <catch2/catch.hpp>
#include <stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace
{

using namespace polytope::viewer;

struct Image
{
    int width = 0;
    int height = 0;
    std::unique_ptr<unsigned char, void (*)(void*)> pixels{nullptr, stbi_image_free};

    std::array<int, 3> at(int x, int y) const
    {
        const unsigned char* p =
            pixels.get() +
            (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) * 3;
        return {p[0], p[1], p[2]};
    }
};

/// Runs the viewer on a local scene for `frames` frames (with `options` added to its command line) and loads
/// the screenshot.
Image screenshot(const std::string& scene, int frames, int width, int height, const std::string& options = "")
{
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("polytope_viewer_test_" + scene + ".png");
    std::filesystem::remove(file);
    const std::string command = std::string("'") + POLYTOPE_VIEWER_PATH + "' --scene " + scene +
                                " --frames " + std::to_string(frames) + " --width " + std::to_string(width) +
                                " --height " + std::to_string(height) + " " + options +
                                " --no-ui --screenshot '" + file.string() + "'";
    INFO(command);
    REQUIRE(std::system(command.c_str()) == 0);
    Image image;
    int channels = 0;
    image.pixels.reset(stbi_load(file.string().c_str(), &image.width, &image.height, &channels, 3));
    REQUIRE(image.pixels != nullptr);
    std::filesystem::remove(file);
    return image;
}

/// The scene's state after `frames` displayed frames and the camera the viewer used, computed here the way
/// the viewer does (deterministic: one step per frame, camera fitted to the scene before the first step).
ViewFrame expectedState(const std::string& scene, int frames, OrbitCamera& camera)
{
    LocalOptions options;
    options.scene = scene;
    options.deterministic = true;
    std::string error;
    auto source = makeLocalSource(options, error);
    REQUIRE(source != nullptr);
    ViewFrame frame;
    REQUIRE(source->frame(0.0, frame));
    camera = fitCamera(frame);
    for (int i = 0; i < frames; ++i)
    {
        REQUIRE(source->update(0.0));
    }
    REQUIRE(source->frame(0.0, frame));
    return frame;
}

int distanceToBackground(const std::array<int, 3>& c)
{
    int d = 0;
    for (std::size_t i = 0; i < 3; ++i)
    {
        d = std::max(d, std::abs(c[i] - static_cast<int>(kBackgroundColour[i] * 255.0f + 0.5f)));
    }
    return d;
}

} // namespace

TEST_CASE("viewer screenshot of a stack shows each cube where it is")
{
    const int frames = 20, width = 640, height = 360;
    const Image image = screenshot("stack10", frames, width, height);
    REQUIRE(image.width == width);
    REQUIRE(image.height == height);

    OrbitCamera camera;
    const ViewFrame state = expectedState("stack10", frames, camera);

    // Not blank: much of the picture is not the background.
    int differing = 0;
    for (int y = 0; y < height; ++y)
    {
        for (int x = 0; x < width; ++x)
        {
            differing += distanceToBackground(image.at(x, y)) > 12 ? 1 : 0;
        }
    }
    CHECK(differing > width * height / 10);

    // Every cube's centre lands on a box-coloured (orange: red well above blue) pixel.
    int cubes = 0;
    for (const ViewBody& b : state.bodies)
    {
        if (b.shape != ShapeKind::Box)
        {
            continue;
        }
        ++cubes;
        const auto pixel = projectToPixel(camera, b.position, width, height);
        REQUIRE(pixel.has_value());
        const auto c = image.at(static_cast<int>((*pixel)[0]), static_cast<int>((*pixel)[1]));
        INFO("cube " << b.id << " at pixel " << (*pixel)[0] << ", " << (*pixel)[1] << ": " << c[0] << " "
                     << c[1] << " " << c[2]);
        CHECK(distanceToBackground(c) > 20);
        CHECK(c[0] > c[2] + 40);
    }
    CHECK(cubes == 10);

    // Two metres beside the stack there is no cube: ground or sky, never orange.
    const auto beside = projectToPixel(camera, {2.5f, 5.0f, 0.0f}, width, height);
    REQUIRE(beside.has_value());
    const auto c = image.at(static_cast<int>((*beside)[0]), static_cast<int>((*beside)[1]));
    CHECK(c[0] < c[2] + 10);
}

TEST_CASE("viewer screenshot of the mixed scene shades every shape kind")
{
    const int frames = 90, width = 640, height = 360;
    const Image image = screenshot("mixed", frames, width, height);
    REQUIRE(image.width == width);

    OrbitCamera camera;
    const ViewFrame state = expectedState("mixed", frames, camera);

    // Classify each body's centre pixel by hue; each kind present must show its colour on some body that
    // is not hidden behind another (so count matches, not every body).
    int matches[4] = {0, 0, 0, 0};
    int present[4] = {0, 0, 0, 0};
    for (const ViewBody& b : state.bodies)
    {
        const auto kind = static_cast<std::size_t>(b.shape);
        if (kind >= 4)
        {
            continue;
        }
        ++present[kind];
        const auto pixel = projectToPixel(camera, b.position, width, height);
        if (!pixel)
        {
            continue;
        }
        const auto c = image.at(static_cast<int>((*pixel)[0]), static_cast<int>((*pixel)[1]));
        const int r = c[0], g = c[1], bl = c[2];
        bool match = false;
        switch (b.shape)
        {
        case ShapeKind::Sphere:
            match = r > g + 25 && r > bl + 25 && g < bl + 25; // red
            break;
        case ShapeKind::Capsule:
            match = g > r + 15 && g > bl + 15; // green
            break;
        case ShapeKind::Box:
            match = r > g + 10 && g > bl + 10; // orange
            break;
        case ShapeKind::Hull:
            match = bl > g + 15 && r > g; // purple
            break;
        default:
            break;
        }
        matches[kind] += match ? 1 : 0;
    }
    for (std::size_t kind = 0; kind < 4; ++kind)
    {
        INFO("shape kind " << kind << ": " << matches[kind] << " of " << present[kind]
                           << " centres coloured");
        REQUIRE(present[kind] > 0);
        CHECK(matches[kind] * 3 >= present[kind]);
    }
}

TEST_CASE("viewer screenshot of the ragdolls with --joints marks every joint's anchors, and without it none")
{
    const int frames = 30, width = 640, height = 360;
    OrbitCamera camera;
    const ViewFrame state = expectedState("ragdolls", frames, camera);
    REQUIRE(state.joints.size() == 200);
    const auto magenta = [](const std::array<int, 3>& c) { return c[0] > 200 && c[1] < 100 && c[2] > 170; };

    const Image plain = screenshot("ragdolls", frames, width, height);
    int magentaPixels = 0;
    for (int y = 0; y < height; ++y)
    {
        for (int x = 0; x < width; ++x)
        {
            magentaPixels += magenta(plain.at(x, y)) ? 1 : 0;
        }
    }
    CHECK(magentaPixels == 0);

    // With --joints, each anchor's cross is drawn over the bodies: a magenta pixel within 2 pixels of it.
    const Image marked = screenshot("ragdolls", frames, width, height, "--joints");
    int shown = 0;
    int found = 0;
    for (const ViewJoint& j : state.joints)
    {
        const auto pixel = projectToPixel(camera, j.anchorA, width, height);
        if (!pixel)
        {
            continue;
        }
        ++shown;
        const int px = static_cast<int>((*pixel)[0]);
        const int py = static_cast<int>((*pixel)[1]);
        bool hit = false;
        for (int y = std::max(0, py - 2); y <= std::min(height - 1, py + 2) && !hit; ++y)
        {
            for (int x = std::max(0, px - 2); x <= std::min(width - 1, px + 2) && !hit; ++x)
            {
                hit = magenta(marked.at(x, y));
            }
        }
        found += hit ? 1 : 0;
    }
    INFO(found << " of " << shown << " anchors on screen marked");
    CHECK(shown > 150);
    CHECK(found * 10 >= shown * 9);
}

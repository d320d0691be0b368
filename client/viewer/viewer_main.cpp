// polytope-viewer: draws a Polytope world with OpenGL 3.3 and Dear ImGui.
//
//   polytope-viewer HOST:PORT                   a running polytope-server, interpolated at the display rate
//   polytope-viewer --scene mixed               a built-in scene simulated in-process at 60 Hz
//   polytope-viewer --replay FILE               a recording made by polytope-inspect record
//   ... --screenshot out.png --frames N         render N frames, save the last, exit
//   ... --joints                                local scene: draw the joints' anchors and axes from the start
//
// Exit status: 0 when done, 1 on bad usage, 2 when no window can be opened or no server answers,
// 3 when the connection is lost or the server closes it. See docs/VIEWER.md.
#include "viewer/camera.h"
#include "viewer/gl.h"
#include "viewer/panels.h"
#include "viewer/renderer.h"
#include "viewer/sources.h"

#include <CLI/CLI.hpp>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace
{

using namespace polytope::viewer;

struct Mouse
{
    double x = 0.0, y = 0.0;
    double pressX = 0.0, pressY = 0.0;
    bool leftDown = false;
    bool dragged = false;
    float wheel = 0.0f;
};

Mouse* g_mouse = nullptr;

extern "C" void onScroll(GLFWwindow*, double, double dy)
{
    if (g_mouse != nullptr)
    {
        g_mouse->wheel += static_cast<float>(dy);
    }
}

extern "C" void onGlfwError(int code, const char* description)
{
    std::fprintf(stderr, "polytope-viewer: GLFW error %d: %s\n", code, description);
}

bool savePng(const std::string& path, int width, int height)
{
    std::vector<unsigned char> pixels(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
    // OpenGL's rows go bottom-up; PNG's top-down.
    const std::size_t stride = static_cast<std::size_t>(width) * 3;
    std::vector<unsigned char> flipped(pixels.size());
    for (int y = 0; y < height; ++y)
    {
        std::copy_n(pixels.data() + static_cast<std::size_t>(height - 1 - y) * stride, stride,
                    flipped.data() + static_cast<std::size_t>(y) * stride);
    }
    return stbi_write_png(path.c_str(), width, height, 3, flipped.data(), static_cast<int>(stride)) != 0;
}

const ViewBody* findBody(const ViewFrame& frame, const BodyKey& key)
{
    const auto it = std::lower_bound(frame.bodies.begin(), frame.bodies.end(), key.id,
                                     [](const ViewBody& b, std::uint32_t id) { return b.id < id; });
    if (it != frame.bodies.end() && it->id == key.id && it->generation == key.generation)
    {
        return &*it;
    }
    return nullptr;
}

} // namespace

int main(int argc, char** argv)
{
    std::string server;
    std::string scene;
    std::string replay;
    double speed = 1.0;
    std::string screenshot;
    int frames = 0;
    int width = 1280;
    int height = 720;
    bool reportFps = false;
    bool noUi = false;
    bool showJoints = false;
    bool paused = false;
    bool deterministic = false;
    bool realtime = false;
    double timeout = 5.0;
    double seconds = 0.0;
    long selectId = -1;

    CLI::App app{"polytope-viewer: draws a Polytope world (a running server or a built-in scene)"};
    app.add_option("server", server, "HOST:PORT of a running polytope-server");
    app.add_option("--scene", scene, "simulate this built-in scene in-process: " + sceneNamesHelp());
    app.add_option("--replay", replay, "play this recording (polytope-inspect record FILE)");
    app.add_option("--speed", speed, "replay speed (1: real time)")
        ->capture_default_str()
        ->check(CLI::Range(0.01, 100.0));
    app.add_option("--screenshot", screenshot, "save the last frame to this PNG file and exit");
    app.add_option("--frames", frames, "exit after this many frames (default with --screenshot: 1)")
        ->check(CLI::Range(1, 1000000));
    app.add_option("--width", width, "window width in pixels")
        ->capture_default_str()
        ->check(CLI::Range(64, 8192));
    app.add_option("--height", height, "window height in pixels")
        ->capture_default_str()
        ->check(CLI::Range(64, 8192));
    app.add_flag("--report-fps", reportFps, "print the frames per second measured over the run at exit");
    app.add_flag("--no-ui", noUi, "hide the panels");
    app.add_flag("--joints", showJoints,
                 "local scene: start with the joints' anchors and axes drawn (the panel's Joints toggle)");
    app.add_flag("--paused", paused, "local scene or replay: start paused");
    app.add_flag("--deterministic", deterministic,
                 "local scene: exactly one 1/60 s step per frame; replay: 1/60 s per frame (the default with "
                 "--screenshot)");
    app.add_flag("--realtime", realtime, "local scene with --screenshot: step at 60 Hz in real time instead");
    app.add_option("--select", selectId, "select the body with this id at start")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--seconds", seconds, "exit after this many seconds (0: no limit)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--timeout", timeout, "seconds to wait for the server to answer")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    std::string tokenFile;
    app.add_option("--token", tokenFile,
                   "live view: connect token file (default: POLYTOPE_TOKEN; none: only an --insecure server "
                   "accepts the viewer)")
        ->envname("POLYTOPE_TOKEN");
    std::string tokenKey;
    app.add_option("--token-key", tokenKey,
                   "live view without --token: make a token with the server's token key (default: "
                   "POLYTOPE_TOKEN_KEY)")
        ->envname("POLYTOPE_TOKEN_KEY");
    CLI11_PARSE(app, argc, argv);

    if (static_cast<int>(!server.empty()) + static_cast<int>(!scene.empty()) +
            static_cast<int>(!replay.empty()) !=
        1)
    {
        std::fprintf(stderr,
                     "polytope-viewer: give one of HOST:PORT, --scene NAME or --replay FILE (see --help)\n");
        return 1;
    }
    if (!screenshot.empty() && frames == 0)
    {
        frames = 1;
    }

    std::string error;
    std::unique_ptr<ViewSource> source;
    if (!scene.empty())
    {
        LocalOptions options;
        options.scene = scene;
        options.deterministic = deterministic || (!screenshot.empty() && !realtime);
        options.paused = paused;
        source = makeLocalSource(options, error);
        if (!source)
        {
            std::fprintf(stderr, "polytope-viewer: %s\n", error.c_str());
            return 1;
        }
    }
    else if (!replay.empty())
    {
        source = makeReplaySource(replay, deterministic || !screenshot.empty(), speed, error);
        if (!source)
        {
            std::fprintf(stderr, "polytope-viewer: %s\n", error.c_str());
            return 1;
        }
        source->setPaused(paused);
    }
    else
    {
        source = makeLiveSource(server, timeout, tokenFile, tokenKey, error);
        if (!source)
        {
            std::fprintf(stderr, "polytope-viewer: %s\n", error.c_str());
            return 2;
        }
    }

    glfwSetErrorCallback(onGlfwError);
    if (!glfwInit())
    {
        std::fprintf(stderr, "polytope-viewer: cannot initialise GLFW (no display? try xvfb-run)\n");
        return 2;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_SAMPLES, 0);
    GLFWwindow* window = glfwCreateWindow(width, height, "polytope-viewer", nullptr, nullptr);
    if (window == nullptr)
    {
        std::fprintf(stderr, "polytope-viewer: cannot open an OpenGL 3.3 core window\n");
        glfwTerminate();
        return 2;
    }
    glfwMakeContextCurrent(window);
    // Benchmarks and screenshots run as fast as they can; interactive use follows the display.
    glfwSwapInterval(frames > 0 || reportFps ? 0 : 1);

    Mouse mouse;
    g_mouse = &mouse;
    glfwSetScrollCallback(window, onScroll); // installed first: ImGui chains to it

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;
    ImGui::StyleColorsDark();
    ImGui_ImplGlfw_InitForOpenGL(window, true);
    ImGui_ImplOpenGL3_Init("#version 330 core");

    int status = 0;
    {
        Renderer renderer;
        if (!renderer.init(error))
        {
            std::fprintf(stderr, "polytope-viewer: %s\n", error.c_str());
            status = 2;
        }
        renderer.setHullMeshes(source->hullMeshes());
        std::uint64_t meshesVersion = source->hullMeshesVersion();

        OrbitCamera camera;
        bool fitted = false;
        ViewFrame frame;
        bool haveFrame = source->frame(glfwGetTime(), frame);
        if (haveFrame)
        {
            camera = fitCamera(frame);
            fitted = true;
        }
        std::optional<BodyKey> selected;
        if (selectId >= 0)
        {
            for (const ViewBody& b : frame.bodies)
            {
                if (b.id == static_cast<std::uint32_t>(selectId))
                {
                    selected = BodyKey{b.id, b.generation};
                }
            }
        }
        PanelState panels;
        panels.showJoints = showJoints;
        double lastFrameTime = glfwGetTime();
        double firstFrameTime = 0.0;
        double lastSample = 0.0;
        double fps = 0.0;
        int rendered = 0;
        const double start = glfwGetTime();

        while (status == 0 && !glfwWindowShouldClose(window))
        {
            glfwPollEvents();
            const double now = glfwGetTime();
            if (!source->update(now))
            {
                std::fprintf(stderr, "polytope-viewer: %s\n", source->error().c_str());
                status = haveFrame ? 3 : 2; // never shown anything: no server answered
                break;
            }
            haveFrame = source->frame(now, frame) || haveFrame;
            if (source->hullMeshesVersion() != meshesVersion)
            {
                // Geometry arrived from the server (or the recording): upload the surfaces again.
                meshesVersion = source->hullMeshesVersion();
                renderer.setHullMeshes(source->hullMeshes());
            }
            if (haveFrame && !fitted)
            {
                camera = fitCamera(frame);
                fitted = true;
            }
            if (!haveFrame && !server.empty() && now - start > timeout + 1.0)
            {
                std::fprintf(stderr, "polytope-viewer: no snapshot from %s within %.1f s\n", server.c_str(),
                             timeout);
                status = 2;
                break;
            }

            int fbWidth = 0, fbHeight = 0;
            glfwGetFramebufferSize(window, &fbWidth, &fbHeight);
            fbWidth = std::max(fbWidth, 1);
            fbHeight = std::max(fbHeight, 1);

            ImGui_ImplOpenGL3_NewFrame();
            ImGui_ImplGlfw_NewFrame();
            ImGui::NewFrame();

            // Camera and picking, unless ImGui has the mouse.
            const ImGuiIO& io = ImGui::GetIO();
            double mx = 0.0, my = 0.0;
            glfwGetCursorPos(window, &mx, &my);
            int winWidth = 0, winHeight = 0;
            glfwGetWindowSize(window, &winWidth, &winHeight);
            const float toFb =
                winWidth > 0 ? static_cast<float>(fbWidth) / static_cast<float>(winWidth) : 1.0f;
            const float dx = static_cast<float>(mx - mouse.x), dy = static_cast<float>(my - mouse.y);
            const bool left = glfwGetMouseButton(window, GLFW_MOUSE_BUTTON_LEFT) == GLFW_PRESS;
            const bool right = glfwGetMouseButton(window, GLFW_MOUSE_BUTTON_RIGHT) == GLFW_PRESS ||
                               glfwGetMouseButton(window, GLFW_MOUSE_BUTTON_MIDDLE) == GLFW_PRESS;
            if (!io.WantCaptureMouse)
            {
                if (left && !mouse.leftDown)
                {
                    mouse.pressX = mx;
                    mouse.pressY = my;
                    mouse.dragged = false;
                }
                if (left && mouse.leftDown)
                {
                    if (std::fabs(mx - mouse.pressX) + std::fabs(my - mouse.pressY) > 3.0)
                    {
                        mouse.dragged = true;
                    }
                    if (mouse.dragged)
                    {
                        camera.orbit(dx, dy);
                    }
                }
                if (!left && mouse.leftDown && !mouse.dragged)
                {
                    const Ray ray = pickRay(camera, static_cast<float>(mx) * toFb,
                                            static_cast<float>(my) * toFb, fbWidth, fbHeight);
                    const int hit = pickBody(ray, frame.bodies);
                    if (hit >= 0)
                    {
                        const ViewBody& b = frame.bodies[static_cast<std::size_t>(hit)];
                        selected = BodyKey{b.id, b.generation};
                    }
                    else
                    {
                        selected.reset();
                    }
                }
                if (right)
                {
                    camera.pan(dx * toFb, dy * toFb, static_cast<float>(fbHeight));
                }
                if (mouse.wheel != 0.0f)
                {
                    camera.zoom(mouse.wheel);
                }
                if (!io.WantCaptureKeyboard && glfwGetKey(window, GLFW_KEY_F) == GLFW_PRESS && haveFrame)
                {
                    camera = fitCamera(frame);
                }
            }
            mouse.wheel = 0.0f;
            mouse.leftDown = left;
            mouse.x = mx;
            mouse.y = my;

            renderer.draw(frame, camera, fbWidth, fbHeight, selected, panels.showJoints);

            // Panels and their plots.
            const double frameSeconds = now - lastFrameTime;
            lastFrameTime = now;
            if (rendered == 1)
            {
                firstFrameTime = now;
            }
            fps = frameSeconds > 0.0 ? 0.95 * fps + 0.05 / frameSeconds : fps;
            if (rendered > 0)
            {
                panels.frameMs.push(static_cast<float>(1000.0 * frameSeconds));
            }
            const SourceStats stats = source->stats();
            if (now - lastSample >= 0.1)
            {
                lastSample = now;
                panels.snapshotRate.push(static_cast<float>(stats.snapshotsPerSecond));
                panels.jitterMs.push(static_cast<float>(stats.snapshotJitterMs));
                panels.kbps.push(static_cast<float>(stats.kilobitsPerSecond));
                panels.rttMs.push(static_cast<float>(stats.rttMs));
                panels.stepMs.push(static_cast<float>(stats.stepMs));
            }
            if (!noUi)
            {
                PanelInput input;
                input.source = source->description();
                input.frame = haveFrame ? &frame : nullptr;
                input.selected = selected ? findBody(frame, *selected) : nullptr;
                input.stats = stats;
                input.fps = fps;
                input.drawCalls = renderer.drawCalls();
                input.canPause = server.empty();
                input.paused = source->paused();
                drawPanels(input, panels);
                if (panels.pauseRequested)
                {
                    source->setPaused(!source->paused());
                    panels.pauseRequested = false;
                }
            }
            ImGui::Render();
            ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

            ++rendered;
            if (seconds > 0.0 && now - start >= seconds)
            {
                glfwSwapBuffers(window);
                break;
            }
            if (frames > 0 && rendered >= frames)
            {
                if (!screenshot.empty())
                {
                    if (savePng(screenshot, fbWidth, fbHeight))
                    {
                        std::printf("polytope-viewer: saved %s (%dx%d, %zu bodies)\n", screenshot.c_str(),
                                    fbWidth, fbHeight, frame.bodies.size());
                    }
                    else
                    {
                        std::fprintf(stderr, "polytope-viewer: cannot write %s\n", screenshot.c_str());
                        status = 1;
                    }
                }
                glfwSwapBuffers(window);
                break;
            }
            glfwSwapBuffers(window);
        }

        if (reportFps && rendered > 1)
        {
            const double elapsed = glfwGetTime() - firstFrameTime;
            std::printf("polytope-viewer: %d frames in %.2f s: %.1f frames/s at %dx%d, %zu bodies\n",
                        rendered - 1, elapsed, static_cast<double>(rendered - 1) / elapsed, width, height,
                        frame.bodies.size());
        }
    }
    source.reset();
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window);
    glfwTerminate();
    return status;
}

// polytope-viewer's sources without OpenGL: a replay plays its recording through client::InterpolationBuffer,
// blending the two recorded frames around the play time and holding the last one at the end; a local scene's
// joints come with its frames, placed on their bodies, and become the overlay's lines.
#include "viewer/joint_overlay.h"
#include "viewer/sources.h"

#include "polytope/client/recording.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

namespace
{

using namespace polytope;
using namespace polytope::viewer;

client::SnapshotBody box(std::uint32_t id, std::uint32_t generation, std::array<float, 3> position)
{
    client::SnapshotBody b;
    b.id = id;
    b.generation = generation;
    b.shape = ShapeKind::Box;
    b.position = position;
    b.extent = {0.5f, 0.5f, 0.5f};
    return b;
}

} // namespace

TEST_CASE("viewer replay: halfway between two recorded frames, matched by id and generation, then held")
{
    const std::string path =
        (std::filesystem::temp_directory_path() / "polytope_viewer_test_replay.pltr").string();
    client::ReceivedSnapshot a, b;
    a.tick = 60;
    a.serverTime = 1.0;
    a.receiveTime = 5.0;
    a.bodies = {box(1, 1, {0.0f, 0.0f, 0.0f}), box(2, 1, {0.0f, 0.0f, 0.0f})};
    b.tick = 62;
    b.serverTime = 1.0 + 2.0 / 60.0;
    b.receiveTime = 5.1;
    b.bodies = {box(1, 1, {2.0f, 4.0f, -6.0f}), box(2, 2, {8.0f, 0.0f, 0.0f})}; // slot 2 reused
    const float s = std::sqrt(0.5f);
    b.bodies[0].orientation = {0.0f, s, 0.0f, s}; // 90 degrees about y
    {
        client::RecordingHeader header;
        header.scene = "blend";
        client::RecordingWriter writer;
        std::string error;
        REQUIRE(writer.open(path, header, error));
        REQUIRE(writer.write(a, error));
        REQUIRE(writer.write(b, error));
        REQUIRE(writer.close(error));
    }

    std::string error;
    auto source = makeReplaySource(path, true, 1.0, error); // deterministic: 1/60 s of server time per update
    REQUIRE(source != nullptr);
    ViewFrame out;
    REQUIRE(source->frame(0.0, out));
    CHECK(out.tick == 60);
    REQUIRE(out.bodies.size() == 2);
    CHECK(out.bodies[0].position[0] == 0.0f);

    REQUIRE(source->update(0.0));
    REQUIRE(source->frame(0.0, out));
    CHECK(out.tick == 60);
    CHECK(out.time == Approx(1.0 + 1.0 / 60.0));
    CHECK(source->description().find("frame 1 / 2") != std::string::npos);
    REQUIRE(out.bodies.size() == 2);
    CHECK(out.bodies[0].position[0] == Approx(1.0f));
    CHECK(out.bodies[0].position[1] == Approx(2.0f));
    CHECK(out.bodies[0].position[2] == Approx(-3.0f));
    // nlerp halfway between identity and 90 degrees is 45 degrees about y.
    CHECK(out.bodies[0].orientation[1] == Approx(std::sin(0.3926991f)).margin(1e-5));
    CHECK(out.bodies[0].orientation[3] == Approx(std::cos(0.3926991f)).margin(1e-5));
    // Not blended across the reuse of slot 2: the body of the earlier frame, where it was.
    CHECK(out.bodies[1].generation == 1);
    CHECK(out.bodies[1].position[0] == 0.0f);

    // Past the last frame: it is held, not extrapolated.
    for (int i = 0; i < 3; ++i)
    {
        REQUIRE(source->update(0.0));
    }
    REQUIRE(source->frame(0.0, out));
    CHECK(out.tick == 62);
    CHECK(source->description().find("frame 2 / 2") != std::string::npos);
    REQUIRE(out.bodies.size() == 2);
    CHECK(out.bodies[0].position[0] == 2.0f);
    CHECK(out.bodies[0].position[2] == -6.0f);
    CHECK(out.bodies[1].generation == 2);
    CHECK(out.bodies[1].position[0] == 8.0f);
    std::filesystem::remove(path);
}

TEST_CASE("viewer local scenes: available, or refused with a message that says why")
{
    LocalOptions options;
    options.scene = "stack10";
    options.deterministic = true;
    std::string error;
    auto source = makeLocalSource(options, error);
    if (localScenesAvailable())
    {
        CHECK(source != nullptr);
    }
    else
    {
        CHECK(source == nullptr);
        CHECK(error.find("POLYTOPE_VIEWER_LOCAL_SIM") != std::string::npos);
    }
}

TEST_CASE("viewer local scenes: a jointed scene's joints sit on their bodies and become the overlay's lines")
{
    if (!localScenesAvailable())
    {
        SUCCEED("built without local scenes");
        return;
    }
    LocalOptions options;
    options.scene = "ragdolls";
    options.deterministic = true;
    std::string error;
    auto source = makeLocalSource(options, error);
    REQUIRE(source != nullptr);
    for (int i = 0; i < 40; ++i)
    {
        REQUIRE(source->update(0.0));
    }
    ViewFrame frame;
    REQUIRE(source->frame(0.0, frame));
    REQUIRE(frame.joints.size() == 200); // 20 ragdolls of 10 joints

    // Placing the joints on the frame's own bodies gives back the engine's world frames.
    ViewFrame placed = frame;
    placeJoints(placed);
    for (std::size_t i = 0; i < frame.joints.size(); ++i)
    {
        const ViewJoint& engine = frame.joints[i];
        const ViewJoint& mine = placed.joints[i];
        for (std::size_t k = 0; k < 3; ++k)
        {
            CHECK(mine.anchorA[k] == Approx(engine.anchorA[k]).margin(1e-4));
            CHECK(mine.anchorB[k] == Approx(engine.anchorB[k]).margin(1e-4));
            CHECK(mine.axisA[k] == Approx(engine.axisA[k]).margin(1e-4));
            CHECK(mine.axisB[k] == Approx(engine.axisB[k]).margin(1e-4));
        }
        // The joint holds: its anchors are (nearly) one point.
        const float dx = engine.anchorA[0] - engine.anchorB[0];
        const float dy = engine.anchorA[1] - engine.anchorB[1];
        const float dz = engine.anchorA[2] - engine.anchorB[2];
        CHECK(std::sqrt(dx * dx + dy * dy + dz * dz) < 0.02f);
    }

    std::vector<LineVertex> lines;
    appendJointLines(frame, lines);
    REQUIRE(lines.size() == frame.joints.size() * 2 * kSegmentsPerJoint);
    // The first joint's segments: the two crosses, then axis A from anchor A, axis B from anchor B, the link.
    const ViewJoint& first = frame.joints.front();
    const LineVertex* axisA = &lines[12];
    CHECK(axisA[0].position == first.anchorA);
    CHECK(axisA[0].colour == kJointAxisAColour);
    CHECK(axisA[1].position[1] == Approx(first.anchorA[1] + kJointAxisMeters * first.axisA[1]));
    const LineVertex* link = &lines[16];
    CHECK(link[0].position == first.anchorA);
    CHECK(link[1].position == first.anchorB);
    CHECK(lines[0].colour == kJointAnchorColour);

    // A scene without joints has none.
    options.scene = "stack10";
    auto stack = makeLocalSource(options, error);
    REQUIRE(stack != nullptr);
    REQUIRE(stack->frame(0.0, frame));
    CHECK(frame.joints.empty());
}

// polytope-viewer: joints drawn as lines over the bodies (local scenes, behind the "Joints" toggle). Each
// joint shows its two anchors as small crosses, frame A's and frame B's x axes (the twist, hinge or slide
// axis) as short lines from the anchors, and a line from anchor A to anchor B, which is only seen when the
// joint is pulled apart (its error). Pure geometry without GL, so the tests check what is drawn.
#pragma once

#include "viewer/view_frame.h"

#include <array>
#include <vector>

namespace polytope::viewer
{

/// One end of a line segment: world position (metres) and colour (linear 0..1).
struct LineVertex
{
    std::array<float, 3> position{};
    std::array<float, 3> colour{};
};

inline constexpr float kJointAxisMeters = 0.3f;   ///< length of the axis lines
inline constexpr float kJointCrossMeters = 0.05f; ///< half the size of an anchor's cross
/// Segments appendJointLines draws per joint: two crosses of three, two axes, the link.
inline constexpr int kSegmentsPerJoint = 9;

inline constexpr std::array<float, 3> kJointAnchorColour{1.0f, 0.1f, 0.9f}; ///< magenta: no shape has it
inline constexpr std::array<float, 3> kJointAxisAColour{1.0f, 0.25f, 0.2f};
inline constexpr std::array<float, 3> kJointAxisBColour{0.2f, 0.5f, 1.0f};
inline constexpr std::array<float, 3> kJointLinkColour{1.0f, 0.95f, 0.3f};

/// Puts every joint's world anchors and axes (ViewJoint::anchorA ..) at the poses of its bodies in `frame`
/// (found by id and generation; frame.bodies sorted by id). A joint whose body is not in the frame keeps
/// the world values it had.
void placeJoints(ViewFrame& frame);

/// Appends kSegmentsPerJoint segments (two vertices each) per joint of `frame`, at its world anchors and
/// axes.
void appendJointLines(const ViewFrame& frame, std::vector<LineVertex>& out);

} // namespace polytope::viewer

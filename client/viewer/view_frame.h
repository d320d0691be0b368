// polytope-viewer: what the renderer draws, independent of where the state came from.
#pragma once

#include "polytope/protocol/packet.h"

#include <array>
#include <cstdint>
#include <vector>

namespace polytope::viewer
{

using ShapeKind = protocol::wire::ShapeKind;

/// One body as the viewer sees it (world frame, metres).
struct ViewBody
{
    std::uint32_t id = 0;
    std::uint32_t generation = 0;
    ShapeKind shape = ShapeKind::Sphere;
    bool atRest = false;
    std::array<float, 3> position{};                          ///< the shape's local origin
    std::array<float, 4> orientation{0.0f, 0.0f, 0.0f, 1.0f}; ///< x, y, z, w
    /// As in protocol::CatalogueEntry: sphere (r, r, r); capsule (r, half height, r); box and hull half
    /// extents (of the hull's local bounding box); plane (0, 0, 0).
    std::array<float, 3> extent{};
    std::array<float, 3> boxCenter{};       ///< local centre of a hull's bounding box (0 when unknown: live)
    int hullIndex = -1;                     ///< index into the source's hull meshes (local scenes), or -1
    bool hasVelocity = false;               ///< local scenes only
    std::array<float, 3> linearVelocity{};  ///< m/s
    std::array<float, 3> angularVelocity{}; ///< rad/s
    float mass = 0.0f;                      ///< kg, local scenes only
};

/// One joint of a local scene: where its frames sit on its two bodies, and where they are in the frame
/// shown (joint_overlay.h draws its anchors and axes).
struct ViewJoint
{
    std::uint32_t bodyA = 0; ///< ViewBody::id
    std::uint32_t generationA = 0;
    std::uint32_t bodyB = 0;
    std::uint32_t generationB = 0;
    std::array<float, 3> localAnchorA{}; ///< metres, in body A's frame
    std::array<float, 3> localAxisA{};   ///< unit: frame A's x axis (twist, hinge or slide axis) in A's frame
    std::array<float, 3> localAnchorB{};
    std::array<float, 3> localAxisB{};
    std::array<float, 3> anchorA{}; ///< world, at the bodies' poses of the frame shown
    std::array<float, 3> axisA{};
    std::array<float, 3> anchorB{};
    std::array<float, 3> axisB{};
};

/// The state to draw for one display frame: bodies sorted by id.
struct ViewFrame
{
    std::uint64_t tick = 0;
    double time = 0.0; ///< seconds of simulation time shown
    std::vector<ViewBody> bodies;
    std::vector<ViewJoint> joints; ///< local scenes only; empty from servers and recordings
};

/// A convex hull's surface for drawing: flat-shaded triangles in the body's local frame, each vertex
/// x, y, z, nx, ny, nz (metres, unit normal), counter-clockwise seen from outside.
struct HullMesh
{
    std::vector<float> vertices;
};

/// Rates and timings a source reports for the panels; negative means "not known".
struct SourceStats
{
    double snapshotsPerSecond = -1.0;
    double snapshotJitterMs = -1.0; ///< standard deviation of the snapshot arrival interval
    double kilobitsPerSecond = -1.0;
    double rttMs = -1.0;
    double lossPercent = -1.0;
    double stepMs = -1.0; ///< engine step time (local)
    double interpolationDelayMs = -1.0;
    bool extrapolating = false;
};

} // namespace polytope::viewer

#include "viewer/joint_overlay.h"

#include "viewer/camera.h"

#include <algorithm>

namespace polytope::viewer
{
namespace
{

const ViewBody* findBody(const ViewFrame& frame, std::uint32_t id, std::uint32_t generation)
{
    const auto it = std::lower_bound(frame.bodies.begin(), frame.bodies.end(), id,
                                     [](const ViewBody& b, std::uint32_t key) { return b.id < key; });
    return it != frame.bodies.end() && it->id == id && it->generation == generation ? &*it : nullptr;
}

Vec3f add(const Vec3f& a, const Vec3f& b)
{
    return {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
}

Vec3f scaled(const Vec3f& a, float s)
{
    return {a[0] * s, a[1] * s, a[2] * s};
}

void segment(std::vector<LineVertex>& out, const Vec3f& from, const Vec3f& to,
             const std::array<float, 3>& colour)
{
    out.push_back({from, colour});
    out.push_back({to, colour});
}

void cross(std::vector<LineVertex>& out, const Vec3f& at)
{
    for (std::size_t axis = 0; axis < 3; ++axis)
    {
        Vec3f half{};
        half[axis] = kJointCrossMeters;
        segment(out, add(at, scaled(half, -1.0f)), add(at, half), kJointAnchorColour);
    }
}

} // namespace

void placeJoints(ViewFrame& frame)
{
    for (ViewJoint& j : frame.joints)
    {
        if (const ViewBody* a = findBody(frame, j.bodyA, j.generationA))
        {
            j.anchorA = add(a->position, rotate(a->orientation, j.localAnchorA));
            j.axisA = rotate(a->orientation, j.localAxisA);
        }
        if (const ViewBody* b = findBody(frame, j.bodyB, j.generationB))
        {
            j.anchorB = add(b->position, rotate(b->orientation, j.localAnchorB));
            j.axisB = rotate(b->orientation, j.localAxisB);
        }
    }
}

void appendJointLines(const ViewFrame& frame, std::vector<LineVertex>& out)
{
    out.reserve(out.size() + frame.joints.size() * 2 * kSegmentsPerJoint);
    for (const ViewJoint& j : frame.joints)
    {
        cross(out, j.anchorA);
        cross(out, j.anchorB);
        segment(out, j.anchorA, add(j.anchorA, scaled(j.axisA, kJointAxisMeters)), kJointAxisAColour);
        segment(out, j.anchorB, add(j.anchorB, scaled(j.axisB, kJointAxisMeters)), kJointAxisBColour);
        segment(out, j.anchorA, j.anchorB, kJointLinkColour);
    }
}

} // namespace polytope::viewer

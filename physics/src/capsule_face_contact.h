// Polytope physics (internal): a capsule lying on a face of a polyhedron, shared by capsule-box
// (collide_round.cpp) and capsule-hull (narrowphase.cpp).
//
// The capsule's core segment is clipped to the face's side planes, and each end of the clipped range that
// lies within the margin of the face becomes a contact point: two points, like a face contact, so a capsule
// lying on a face does not roll about a single point. The clipping and the points are this one routine; a
// face type supplies only its geometry, because a box face has it in closed form (unit side normals, the
// plane at the half extent, the foot of a point by setting one coordinate) while a hull face derives it
// from its vertex loop, and each keeps its own arithmetic so results do not change by a bit.
#pragma once

#include "polytope/physics/manifold.h"
#include "polytope/physics/math.h"

#include <algorithm>
#include <cstdint>

namespace polytope::physics
{

/// The contact of a capsule whose core segment is p0 + t d (t in [0, 1], in the frame of polyhedron B) and
/// whose radius is `radius` metres, with one face of B; points within `margin` metres, in A's frame through
/// `bInA`. The normal is the face's, from A to B, even when no point is kept. Feature ids are
/// makeOtherFeatureId((face.index << 2) | (end + 1)).
///
/// `Face` provides, all in B's frame:
///   Vec3 normal;                 unit outward normal of the face
///   int index;                   the face's number, for feature ids
///   int sideCount() const;       side planes bounding the face
///   void side(int i, const Vec3& p0, const Vec3& d, float& start, float& slope) const;
///                                side i evaluated along the segment: start > 0 when p0 is outside it,
///                                slope the change per unit t; slope == 0 exactly when the segment runs
///                                parallel to the side (within the face's own tolerance)
///   float height(const Vec3& core) const;             signed height of `core` above the face plane
///   Vec3 foot(const Vec3& core, float height) const;  the point of the face plane below `core`
template <class Face>
ContactManifold capsuleFaceContact(const Vec3& p0, const Vec3& d, float radius, const Face& face,
                                   const Transform& bInA, float margin)
{
    ContactManifold manifold;
    manifold.normal = -rotate(bInA.q, face.normal);
    float t0 = 0.0f;
    float t1 = 1.0f;
    for (int i = 0; i < face.sideCount(); ++i)
    {
        float start = 0.0f;
        float slope = 0.0f;
        face.side(i, p0, d, start, slope);
        if (slope == 0.0f)
        {
            if (start > 0.0f)
            {
                return manifold;
            }
            continue;
        }
        const float t = -start / slope;
        if (slope > 0.0f)
        {
            t1 = std::min(t1, t);
        }
        else
        {
            t0 = std::max(t0, t);
        }
        if (t0 > t1)
        {
            return manifold;
        }
    }
    const float ends[2] = {t0, t1};
    const int endCount = t1 - t0 > 1e-6f ? 2 : 1;
    for (int e = 0; e < endCount; ++e)
    {
        const Vec3 core = p0 + d * ends[e];
        const float height = face.height(core);
        const float separation = height - radius;
        if (separation > margin)
        {
            continue;
        }
        ContactPoint& point = manifold.points[manifold.pointCount++];
        point.pointA = transformPoint(bInA, core - face.normal * radius);
        point.pointB = transformPoint(bInA, face.foot(core, height));
        point.separation = separation;
        point.featureId = makeOtherFeatureId(static_cast<std::uint32_t>((face.index << 2) | (e + 1)));
    }
    return manifold;
}

} // namespace polytope::physics

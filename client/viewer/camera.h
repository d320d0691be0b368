// polytope-viewer: the orbit camera, its matrices and picking rays. Pure math (no GL), so the tests can
// project a body with exactly the camera the viewer used.
#pragma once

#include "viewer/view_frame.h"

#include <array>
#include <optional>
#include <span>

namespace polytope::viewer
{

using Vec3f = std::array<float, 3>;

/// A 4x4 matrix, column-major as OpenGL wants it: m[column * 4 + row].
struct Mat4
{
    std::array<float, 16> m{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
};

Mat4 operator*(const Mat4& a, const Mat4& b);
/// Right-handed perspective projection (OpenGL clip space), vertical field of view in radians.
Mat4 perspective(float fovYRadians, float aspect, float nearZ, float farZ);
Mat4 lookAt(const Vec3f& eye, const Vec3f& target, const Vec3f& up);
/// Model matrix: translation * rotation(quaternion x, y, z, w) * scale.
Mat4 modelMatrix(const Vec3f& position, const std::array<float, 4>& orientation, const Vec3f& scale);

/// Rotates v by the unit quaternion q (x, y, z, w).
Vec3f rotate(const std::array<float, 4>& q, const Vec3f& v);

/// An orbit camera: looks at `target` from `distance` metres, turned by yaw (about +y) and pitch.
struct OrbitCamera
{
    Vec3f target{0.0f, 1.0f, 0.0f};
    float distance = 20.0f; ///< metres
    float yaw = 0.6f;       ///< radians
    float pitch = 0.45f;    ///< radians, above the horizon
    float fovY = 0.8f;      ///< radians
    float nearZ = 0.05f;    ///< metres
    float farZ = 2000.0f;   ///< metres

    Vec3f eye() const;
    Mat4 view() const;
    Mat4 projection(float aspect) const;

    /// Left drag: turn about the target (pixels of mouse motion).
    void orbit(float dxPixels, float dyPixels);
    /// Right/middle drag: move the target in the view plane.
    void pan(float dxPixels, float dyPixels, float viewportHeightPixels);
    /// Wheel: move towards (positive) or away from the target.
    void zoom(float wheelSteps);
};

/// A camera that frames the bodies of `frame` (planes ignored). Deterministic: the tests use it.
OrbitCamera fitCamera(const ViewFrame& frame);

/// The pixel (x right, y down, origin top left) where a world point lands, or nothing when it is behind
/// the camera or off screen.
std::optional<std::array<float, 2>> projectToPixel(const OrbitCamera& camera, const Vec3f& point, int width,
                                                   int height);

struct Ray
{
    Vec3f origin{};
    Vec3f direction{}; ///< unit
};
/// The ray from the eye through pixel (x, y) (origin top left).
Ray pickRay(const OrbitCamera& camera, float x, float y, int width, int height);

/// Index into `bodies` of the nearest body the ray hits (its bounding sphere, then its oriented bounding
/// box), or -1. Planes are never picked.
int pickBody(const Ray& ray, std::span<const ViewBody> bodies);

/// Local half extents of the box that bounds a body's shape (capsule: r, h + r, r).
Vec3f boundingHalfExtents(const ViewBody& body);

} // namespace polytope::viewer

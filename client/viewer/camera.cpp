#include "viewer/camera.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace polytope::viewer
{
namespace
{

Vec3f sub(const Vec3f& a, const Vec3f& b)
{
    return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
Vec3f add(const Vec3f& a, const Vec3f& b)
{
    return {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
}
Vec3f scale(const Vec3f& a, float s)
{
    return {a[0] * s, a[1] * s, a[2] * s};
}
float dot3(const Vec3f& a, const Vec3f& b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
Vec3f cross3(const Vec3f& a, const Vec3f& b)
{
    return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
Vec3f normalized(const Vec3f& a)
{
    const float len = std::sqrt(dot3(a, a));
    return len > 0.0f ? scale(a, 1.0f / len) : Vec3f{0.0f, 0.0f, 1.0f};
}

std::array<float, 4> mul(const Mat4& a, const std::array<float, 4>& v)
{
    std::array<float, 4> r{};
    for (int row = 0; row < 4; ++row)
    {
        r[static_cast<std::size_t>(row)] =
            a.m[static_cast<std::size_t>(row)] * v[0] + a.m[static_cast<std::size_t>(4 + row)] * v[1] +
            a.m[static_cast<std::size_t>(8 + row)] * v[2] + a.m[static_cast<std::size_t>(12 + row)] * v[3];
    }
    return r;
}

/// Camera basis: right, up, forward (towards the target).
void basis(const OrbitCamera& camera, Vec3f& right, Vec3f& up, Vec3f& forward)
{
    forward = normalized(sub(camera.target, camera.eye()));
    right = normalized(cross3(forward, Vec3f{0.0f, 1.0f, 0.0f}));
    up = cross3(right, forward);
}

/// Ray parameter where it enters the box [-h, h] (in the box's frame), or a negative value on a miss.
float rayBox(const Vec3f& origin, const Vec3f& direction, const Vec3f& h)
{
    float tNear = 0.0f;
    float tFar = std::numeric_limits<float>::max();
    for (std::size_t i = 0; i < 3; ++i)
    {
        if (std::fabs(direction[i]) < 1e-12f)
        {
            if (origin[i] < -h[i] || origin[i] > h[i])
            {
                return -1.0f;
            }
            continue;
        }
        float t0 = (-h[i] - origin[i]) / direction[i];
        float t1 = (h[i] - origin[i]) / direction[i];
        if (t0 > t1)
        {
            std::swap(t0, t1);
        }
        tNear = std::max(tNear, t0);
        tFar = std::min(tFar, t1);
        if (tNear > tFar)
        {
            return -1.0f;
        }
    }
    return tNear;
}

} // namespace

Mat4 operator*(const Mat4& a, const Mat4& b)
{
    Mat4 r;
    for (std::size_t c = 0; c < 4; ++c)
    {
        for (std::size_t row = 0; row < 4; ++row)
        {
            float s = 0.0f;
            for (std::size_t k = 0; k < 4; ++k)
            {
                s += a.m[k * 4 + row] * b.m[c * 4 + k];
            }
            r.m[c * 4 + row] = s;
        }
    }
    return r;
}

Mat4 perspective(float fovYRadians, float aspect, float nearZ, float farZ)
{
    const float f = 1.0f / std::tan(0.5f * fovYRadians);
    Mat4 r;
    r.m = {};
    r.m[0] = f / aspect;
    r.m[5] = f;
    r.m[10] = (farZ + nearZ) / (nearZ - farZ);
    r.m[11] = -1.0f;
    r.m[14] = 2.0f * farZ * nearZ / (nearZ - farZ);
    return r;
}

Mat4 lookAt(const Vec3f& eye, const Vec3f& target, const Vec3f& up)
{
    const Vec3f f = normalized(sub(target, eye));
    const Vec3f s = normalized(cross3(f, up));
    const Vec3f u = cross3(s, f);
    Mat4 r;
    r.m = {s[0], u[0], -f[0], 0.0f, s[1],          u[1],          -f[1],        0.0f,
           s[2], u[2], -f[2], 0.0f, -dot3(s, eye), -dot3(u, eye), dot3(f, eye), 1.0f};
    return r;
}

Vec3f rotate(const std::array<float, 4>& q, const Vec3f& v)
{
    // v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z)
    const Vec3f u{q[0], q[1], q[2]};
    const Vec3f t = scale(cross3(u, v), 2.0f);
    return add(add(v, scale(t, q[3])), cross3(u, t));
}

Mat4 modelMatrix(const Vec3f& position, const std::array<float, 4>& q, const Vec3f& s)
{
    const float x = q[0], y = q[1], z = q[2], w = q[3];
    Mat4 r;
    r.m = {(1 - 2 * (y * y + z * z)) * s[0],
           2 * (x * y + w * z) * s[0],
           2 * (x * z - w * y) * s[0],
           0.0f,
           2 * (x * y - w * z) * s[1],
           (1 - 2 * (x * x + z * z)) * s[1],
           2 * (y * z + w * x) * s[1],
           0.0f,
           2 * (x * z + w * y) * s[2],
           2 * (y * z - w * x) * s[2],
           (1 - 2 * (x * x + y * y)) * s[2],
           0.0f,
           position[0],
           position[1],
           position[2],
           1.0f};
    return r;
}

Vec3f OrbitCamera::eye() const
{
    const float c = std::cos(pitch);
    return add(target,
               Vec3f{distance * c * std::sin(yaw), distance * std::sin(pitch), distance * c * std::cos(yaw)});
}

Mat4 OrbitCamera::view() const
{
    return lookAt(eye(), target, Vec3f{0.0f, 1.0f, 0.0f});
}

Mat4 OrbitCamera::projection(float aspect) const
{
    return perspective(fovY, aspect, nearZ, farZ);
}

void OrbitCamera::orbit(float dxPixels, float dyPixels)
{
    yaw -= dxPixels * 0.008f;
    pitch = std::clamp(pitch + dyPixels * 0.008f, -1.5f, 1.5f);
}

void OrbitCamera::pan(float dxPixels, float dyPixels, float viewportHeightPixels)
{
    Vec3f right, up, forward;
    basis(*this, right, up, forward);
    const float metresPerPixel =
        2.0f * distance * std::tan(0.5f * fovY) / std::max(viewportHeightPixels, 1.0f);
    target = add(target, add(scale(right, -dxPixels * metresPerPixel), scale(up, dyPixels * metresPerPixel)));
}

void OrbitCamera::zoom(float wheelSteps)
{
    distance = std::clamp(distance * std::pow(0.88f, wheelSteps), 0.5f, 1500.0f);
}

OrbitCamera fitCamera(const ViewFrame& frame)
{
    OrbitCamera camera;
    Vec3f lo{0.0f, 0.0f, 0.0f}, hi{0.0f, 0.0f, 0.0f};
    bool any = false;
    for (const ViewBody& b : frame.bodies)
    {
        if (b.shape == ShapeKind::Plane)
        {
            continue;
        }
        const float r = std::sqrt(dot3(boundingHalfExtents(b), boundingHalfExtents(b)));
        for (std::size_t i = 0; i < 3; ++i)
        {
            const float a = b.position[i] - r, c = b.position[i] + r;
            lo[i] = any ? std::min(lo[i], a) : a;
            hi[i] = any ? std::max(hi[i], c) : c;
        }
        any = true;
    }
    if (!any)
    {
        return camera;
    }
    lo[1] = std::max(lo[1], 0.0f);
    camera.target = scale(add(lo, hi), 0.5f);
    // Scenes start with bodies in the air and end on the ground: aim below the middle.
    camera.target[1] = lo[1] + 0.35f * (hi[1] - lo[1]);
    // The sphere about the target that holds the whole box.
    const Vec3f centre = scale(add(lo, hi), 0.5f);
    const float radius =
        std::max(0.5f * std::sqrt(dot3(sub(hi, lo), sub(hi, lo))) + (centre[1] - camera.target[1]), 1.0f);
    camera.distance = std::min(radius / std::sin(0.5f * camera.fovY) * 1.05f, 1500.0f);
    return camera;
}

std::optional<std::array<float, 2>> projectToPixel(const OrbitCamera& camera, const Vec3f& point, int width,
                                                   int height)
{
    const Mat4 viewProjection =
        camera.projection(static_cast<float>(width) / static_cast<float>(std::max(height, 1))) *
        camera.view();
    const auto clip = mul(viewProjection, {point[0], point[1], point[2], 1.0f});
    if (clip[3] <= 0.0f)
    {
        return std::nullopt;
    }
    const float x = (clip[0] / clip[3] * 0.5f + 0.5f) * static_cast<float>(width);
    const float y = (0.5f - clip[1] / clip[3] * 0.5f) * static_cast<float>(height);
    if (x < 0.0f || y < 0.0f || x >= static_cast<float>(width) || y >= static_cast<float>(height))
    {
        return std::nullopt;
    }
    return std::array<float, 2>{x, y};
}

Ray pickRay(const OrbitCamera& camera, float x, float y, int width, int height)
{
    Vec3f right, up, forward;
    basis(camera, right, up, forward);
    const float aspect = static_cast<float>(width) / static_cast<float>(std::max(height, 1));
    const float t = std::tan(0.5f * camera.fovY);
    const float ndcX = 2.0f * x / static_cast<float>(width) - 1.0f;
    const float ndcY = 1.0f - 2.0f * y / static_cast<float>(height);
    const Vec3f direction =
        normalized(add(forward, add(scale(right, ndcX * t * aspect), scale(up, ndcY * t))));
    return Ray{camera.eye(), direction};
}

Vec3f boundingHalfExtents(const ViewBody& body)
{
    if (body.shape == ShapeKind::Capsule)
    {
        return {body.extent[0], body.extent[1] + body.extent[0], body.extent[0]};
    }
    return body.extent;
}

int pickBody(const Ray& ray, std::span<const ViewBody> bodies)
{
    int best = -1;
    float bestT = std::numeric_limits<float>::max();
    for (std::size_t i = 0; i < bodies.size(); ++i)
    {
        const ViewBody& b = bodies[i];
        if (b.shape == ShapeKind::Plane)
        {
            continue;
        }
        const Vec3f h = boundingHalfExtents(b);
        // Bounding sphere first (cheap), then the oriented box in the body's frame.
        const Vec3f centre = add(b.position, rotate(b.orientation, b.boxCenter));
        const Vec3f toCentre = sub(centre, ray.origin);
        const float along = dot3(toCentre, ray.direction);
        const float radiusSquared = dot3(h, h);
        if (dot3(toCentre, toCentre) - along * along > radiusSquared)
        {
            continue;
        }
        const std::array<float, 4> inverse{-b.orientation[0], -b.orientation[1], -b.orientation[2],
                                           b.orientation[3]};
        const Vec3f localOrigin = rotate(inverse, sub(ray.origin, centre));
        const Vec3f localDirection = rotate(inverse, ray.direction);
        const float t = rayBox(localOrigin, localDirection, h);
        if (t >= 0.0f && t < bestT)
        {
            bestT = t;
            best = static_cast<int>(i);
        }
    }
    return best;
}

} // namespace polytope::viewer

// Polytope physics: small vector, quaternion and matrix types.
//
// Single precision throughout: body state is stored in float, and narrowphase math is done in the
// first shape's local frame so that precision does not depend on the distance from the origin.
// Everything here is header-only and inline, free of FMA-sensitive tricks: the project builds with
// -ffp-contract=off so the same binary gives bit-identical results.
#pragma once

#include <cmath>
#include <cstdint>

namespace polytope::physics
{

/// A 3D vector in metres (positions) or any other unit the caller names.
struct Vec3
{
    float x = 0.0f;
    float y = 0.0f;
    float z = 0.0f;

    constexpr Vec3() = default;
    constexpr Vec3(float x_, float y_, float z_) : x(x_), y(y_), z(z_) {}

    constexpr float operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
    constexpr float& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }

    constexpr Vec3 operator-() const { return {-x, -y, -z}; }
    constexpr Vec3& operator+=(const Vec3& o)
    {
        x += o.x;
        y += o.y;
        z += o.z;
        return *this;
    }
    constexpr Vec3& operator-=(const Vec3& o)
    {
        x -= o.x;
        y -= o.y;
        z -= o.z;
        return *this;
    }
    constexpr Vec3& operator*=(float s)
    {
        x *= s;
        y *= s;
        z *= s;
        return *this;
    }
    constexpr bool operator==(const Vec3&) const = default;
};

constexpr Vec3 operator+(const Vec3& a, const Vec3& b)
{
    return {a.x + b.x, a.y + b.y, a.z + b.z};
}
constexpr Vec3 operator-(const Vec3& a, const Vec3& b)
{
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}
constexpr Vec3 operator*(const Vec3& a, float s)
{
    return {a.x * s, a.y * s, a.z * s};
}
constexpr Vec3 operator*(float s, const Vec3& a)
{
    return {a.x * s, a.y * s, a.z * s};
}
constexpr Vec3 operator/(const Vec3& a, float s)
{
    return {a.x / s, a.y / s, a.z / s};
}

constexpr float dot(const Vec3& a, const Vec3& b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
constexpr Vec3 cross(const Vec3& a, const Vec3& b)
{
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
/// Component-wise product.
constexpr Vec3 mulPerElem(const Vec3& a, const Vec3& b)
{
    return {a.x * b.x, a.y * b.y, a.z * b.z};
}
constexpr Vec3 minPerElem(const Vec3& a, const Vec3& b)
{
    return {a.x < b.x ? a.x : b.x, a.y < b.y ? a.y : b.y, a.z < b.z ? a.z : b.z};
}
constexpr Vec3 maxPerElem(const Vec3& a, const Vec3& b)
{
    return {a.x > b.x ? a.x : b.x, a.y > b.y ? a.y : b.y, a.z > b.z ? a.z : b.z};
}
inline Vec3 absPerElem(const Vec3& a)
{
    return {std::fabs(a.x), std::fabs(a.y), std::fabs(a.z)};
}
constexpr float lengthSquared(const Vec3& a)
{
    return dot(a, a);
}
inline float length(const Vec3& a)
{
    return std::sqrt(dot(a, a));
}
inline float distance(const Vec3& a, const Vec3& b)
{
    return length(a - b);
}
inline bool isFinite(const Vec3& a)
{
    return std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z);
}

/// Unit vector along `a`, or `fallback` when `a` is too short to have a direction.
inline Vec3 normalizeOr(const Vec3& a, const Vec3& fallback)
{
    const float len = length(a);
    return len > 1e-20f ? a / len : fallback;
}
inline Vec3 normalize(const Vec3& a)
{
    return normalizeOr(a, Vec3{1.0f, 0.0f, 0.0f});
}

/// Index (0, 1, 2) of the component with the largest magnitude.
inline int largestAxis(const Vec3& a)
{
    const Vec3 m = absPerElem(a);
    return m.x >= m.y ? (m.x >= m.z ? 0 : 2) : (m.y >= m.z ? 1 : 2);
}

/// Two unit vectors that, with unit `n`, make a right-handed orthonormal basis (n, t1, t2).
inline void orthonormalBasis(const Vec3& n, Vec3& t1, Vec3& t2)
{
    // Branch-light construction (Duff et al. 2017, "Building an Orthonormal Basis, Revisited").
    const float sign = std::copysign(1.0f, n.z);
    const float a = -1.0f / (sign + n.z);
    const float b = n.x * n.y * a;
    t1 = {1.0f + sign * n.x * n.x * a, sign * b, -sign * n.x};
    t2 = {b, sign + n.y * n.y * a, -n.y};
}

/// A 3x3 matrix stored as three columns.
struct Mat3
{
    Vec3 c0{1.0f, 0.0f, 0.0f};
    Vec3 c1{0.0f, 1.0f, 0.0f};
    Vec3 c2{0.0f, 0.0f, 1.0f};

    static constexpr Mat3 identity() { return {}; }
    static constexpr Mat3 zero() { return {Vec3{}, Vec3{}, Vec3{}}; }
    static constexpr Mat3 diagonal(const Vec3& d)
    {
        return {Vec3{d.x, 0.0f, 0.0f}, Vec3{0.0f, d.y, 0.0f}, Vec3{0.0f, 0.0f, d.z}};
    }
    constexpr Vec3 row(int i) const { return {c0[i], c1[i], c2[i]}; }
};

constexpr Vec3 operator*(const Mat3& m, const Vec3& v)
{
    return m.c0 * v.x + m.c1 * v.y + m.c2 * v.z;
}
constexpr Mat3 operator*(const Mat3& a, const Mat3& b)
{
    return {a * b.c0, a * b.c1, a * b.c2};
}
constexpr Mat3 operator+(const Mat3& a, const Mat3& b)
{
    return {a.c0 + b.c0, a.c1 + b.c1, a.c2 + b.c2};
}
constexpr Mat3 operator-(const Mat3& a, const Mat3& b)
{
    return {a.c0 - b.c0, a.c1 - b.c1, a.c2 - b.c2};
}
constexpr Mat3 operator*(const Mat3& a, float s)
{
    return {a.c0 * s, a.c1 * s, a.c2 * s};
}
constexpr Mat3 transpose(const Mat3& m)
{
    return {m.row(0), m.row(1), m.row(2)};
}
/// Product transpose(a) * v, without forming the transpose.
constexpr Vec3 mulTransposed(const Mat3& a, const Vec3& v)
{
    return {dot(a.c0, v), dot(a.c1, v), dot(a.c2, v)};
}

/// The skew-symmetric matrix [v]x such that [v]x * w == cross(v, w).
constexpr Mat3 skew(const Vec3& v)
{
    return {Vec3{0.0f, v.z, -v.y}, Vec3{-v.z, 0.0f, v.x}, Vec3{v.y, -v.x, 0.0f}};
}

/// `m` with its lower triangle replaced by its upper one: exactly symmetric. A product such as R I R^T is
/// symmetric only to rounding; the solvers keep world inertias mirrored so that they can store and use
/// their 6 upper entries (joint_solver_wide.cpp).
constexpr Mat3 mirroredUpper(const Mat3& m)
{
    return {Vec3{m.c0.x, m.c1.x, m.c2.x}, Vec3{m.c1.x, m.c1.y, m.c2.y}, Vec3{m.c2.x, m.c2.y, m.c2.z}};
}

constexpr float determinant(const Mat3& m)
{
    return dot(m.c0, cross(m.c1, m.c2));
}

/// Inverse of `m`, or the zero matrix when `m` is singular (used for zero-mass / locked axes).
inline Mat3 inverse(const Mat3& m)
{
    const float det = determinant(m);
    if (det == 0.0f || !std::isfinite(det))
    {
        return Mat3::zero();
    }
    const float inv = 1.0f / det;
    const Vec3 r0 = cross(m.c1, m.c2) * inv;
    const Vec3 r1 = cross(m.c2, m.c0) * inv;
    const Vec3 r2 = cross(m.c0, m.c1) * inv;
    return transpose(Mat3{r0, r1, r2});
}

/// A rotation as a unit quaternion (x, y, z vector part; w scalar part).
struct Quat
{
    float x = 0.0f;
    float y = 0.0f;
    float z = 0.0f;
    float w = 1.0f;

    static constexpr Quat identity() { return {}; }
    constexpr bool operator==(const Quat&) const = default;
};

constexpr Quat operator*(const Quat& a, const Quat& b)
{
    return {a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y, a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
            a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w, a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z};
}
constexpr Quat conjugate(const Quat& q)
{
    return {-q.x, -q.y, -q.z, q.w};
}
constexpr float dot(const Quat& a, const Quat& b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
inline bool isFinite(const Quat& q)
{
    return std::isfinite(q.x) && std::isfinite(q.y) && std::isfinite(q.z) && std::isfinite(q.w);
}

inline Quat normalize(const Quat& q)
{
    const float len = std::sqrt(dot(q, q));
    if (!(len > 1e-20f))
    {
        return Quat::identity();
    }
    const float inv = 1.0f / len;
    return {q.x * inv, q.y * inv, q.z * inv, q.w * inv};
}

/// Rotation of `angleRadians` about unit `axis`.
inline Quat quatFromAxisAngle(const Vec3& axis, float angleRadians)
{
    const float h = 0.5f * angleRadians;
    const float s = std::sin(h);
    return {axis.x * s, axis.y * s, axis.z * s, std::cos(h)};
}

/// q * v * conj(q) for unit q, in the cheap form v + 2w(u x v) + 2u x (u x v).
constexpr Vec3 rotate(const Quat& q, const Vec3& v)
{
    const Vec3 u{q.x, q.y, q.z};
    const Vec3 t = cross(u, v) * 2.0f;
    return v + t * q.w + cross(u, t);
}
constexpr Vec3 inverseRotate(const Quat& q, const Vec3& v)
{
    return rotate(conjugate(q), v);
}

/// The rotation matrix of unit quaternion q.
constexpr Mat3 toMat3(const Quat& q)
{
    const float xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
    const float xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z;
    const float wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
    return {Vec3{1.0f - 2.0f * (yy + zz), 2.0f * (xy + wz), 2.0f * (xz - wy)},
            Vec3{2.0f * (xy - wz), 1.0f - 2.0f * (xx + zz), 2.0f * (yz + wx)},
            Vec3{2.0f * (xz + wy), 2.0f * (yz - wx), 1.0f - 2.0f * (xx + yy)}};
}

/// Integrate orientation q by angular velocity w (rad/s) over dt seconds, and renormalise.
inline Quat integrateRotation(const Quat& q, const Vec3& w, float dt)
{
    const Quat spin{w.x, w.y, w.z, 0.0f};
    const Quat dq = spin * q;
    const float h = 0.5f * dt;
    return normalize(Quat{q.x + dq.x * h, q.y + dq.y * h, q.z + dq.z * h, q.w + dq.w * h});
}

/// A rigid transform: rotate by q, then translate by p. Maps local coordinates to parent coordinates.
struct Transform
{
    Vec3 p{};
    Quat q{};

    static constexpr Transform identity() { return {}; }
};

constexpr Vec3 transformPoint(const Transform& t, const Vec3& v)
{
    return rotate(t.q, v) + t.p;
}
constexpr Vec3 inverseTransformPoint(const Transform& t, const Vec3& v)
{
    return inverseRotate(t.q, v - t.p);
}
/// a * b: first b, then a.
constexpr Transform operator*(const Transform& a, const Transform& b)
{
    return {rotate(a.q, b.p) + a.p, a.q * b.q};
}
constexpr Transform inverse(const Transform& t)
{
    const Quat qi = conjugate(t.q);
    return {rotate(qi, -t.p), qi};
}
/// inverse(a) * b: the transform of b expressed in a's local frame. The narrowphase works in this frame.
constexpr Transform relativeTransform(const Transform& a, const Transform& b)
{
    const Quat qi = conjugate(a.q);
    return {rotate(qi, b.p - a.p), qi * b.q};
}

/// An axis-aligned bounding box.
struct Aabb
{
    Vec3 min{};
    Vec3 max{};

    constexpr Vec3 center() const { return (min + max) * 0.5f; }
    constexpr Vec3 extents() const { return (max - min) * 0.5f; }
    /// Half the surface area: the cost measure of the broadphase tree.
    constexpr float perimeter() const
    {
        const Vec3 d = max - min;
        return d.x * d.y + d.y * d.z + d.z * d.x;
    }
    constexpr bool contains(const Aabb& o) const
    {
        return min.x <= o.min.x && min.y <= o.min.y && min.z <= o.min.z && o.max.x <= max.x &&
               o.max.y <= max.y && o.max.z <= max.z;
    }
    constexpr bool overlaps(const Aabb& o) const
    {
        return !(o.min.x > max.x || o.min.y > max.y || o.min.z > max.z || min.x > o.max.x ||
                 min.y > o.max.y || min.z > o.max.z);
    }
};

constexpr Aabb unionOf(const Aabb& a, const Aabb& b)
{
    return {minPerElem(a.min, b.min), maxPerElem(a.max, b.max)};
}

constexpr float kPi = 3.14159265358979323846f;

} // namespace polytope::physics

// Polytope physics: a double-precision 3-vector for the few computations that need more than float.
//
// Body state and shape data are float (math.h). GJK and EPA (gjk.h, epa.h), hull building (hull.cpp) and
// hull mass properties (mass.cpp) do their inner arithmetic in double: differences of float points are then
// exact, and the determinants and sums that decide signs keep them for slivers that float would misjudge.
// Like math.h, header-only and free of FMA-sensitive tricks (the project builds with -ffp-contract=off).
#pragma once

#include "polytope/physics/math.h"

#include <cmath>

namespace polytope::physics
{

/// A 3D vector in double precision. A trivial aggregate: `DVec3 v{}` is zero, while `DVec3 v;` is left
/// uninitialised, so that GJK's and EPA's scratch arrays of them cost nothing to declare.
struct DVec3
{
    double x;
    double y;
    double z;
};

/// Exact: every float is a double.
constexpr DVec3 toDouble(const Vec3& v)
{
    return {v.x, v.y, v.z};
}
/// Each component rounded to the nearest float.
constexpr Vec3 toFloat(const DVec3& v)
{
    return {float(v.x), float(v.y), float(v.z)};
}

constexpr DVec3 operator+(const DVec3& a, const DVec3& b)
{
    return {a.x + b.x, a.y + b.y, a.z + b.z};
}
constexpr DVec3 operator-(const DVec3& a, const DVec3& b)
{
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}
constexpr DVec3 operator-(const DVec3& a)
{
    return {-a.x, -a.y, -a.z};
}
constexpr DVec3 operator*(const DVec3& a, double s)
{
    return {a.x * s, a.y * s, a.z * s};
}

constexpr double dot(const DVec3& a, const DVec3& b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
constexpr DVec3 cross(const DVec3& a, const DVec3& b)
{
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
constexpr double lengthSquared(const DVec3& a)
{
    return dot(a, a);
}
inline double length(const DVec3& a)
{
    return std::sqrt(dot(a, a));
}

} // namespace polytope::physics

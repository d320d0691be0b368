// Polytope physics: wide vectors and bodies shared by the wide contact and joint solvers
// (contact_solver_wide.cpp, joint_solver_wide.cpp).
//
// A WideVec3 or WideMat3 holds one value per lane; its operations are math.h's, operation for operation
// (no fused multiply-add: the project builds with -ffp-contract=off), so a lane computes the scalar code's
// bits. A bundle is structure-of-arrays: field f of a bundle at `block` is the W floats block[f * W ..).
// Bodies are gathered from SolverBody records into lanes and only their velocities scattered back.
// Every file that includes this is compiled with the same instruction set (physics/CMakeLists.txt).
#pragma once

#include "polytope/physics/contact_solver.h"

#include "simd.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace polytope::physics::wide
{

using simd::FloatW;
constexpr int W = simd::kLanes;
constexpr std::size_t kAlignFloats = 8; ///< 32 bytes: bundles start on an AVX register boundary

struct WideVec3
{
    FloatW x, y, z;
};
inline WideVec3 operator+(const WideVec3& a, const WideVec3& b)
{
    return {a.x + b.x, a.y + b.y, a.z + b.z};
}
inline WideVec3 operator-(const WideVec3& a, const WideVec3& b)
{
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}
inline WideVec3 operator*(const WideVec3& a, FloatW s)
{
    return {a.x * s, a.y * s, a.z * s};
}
inline FloatW dot(const WideVec3& a, const WideVec3& b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

inline FloatW field(const float* block, int f)
{
    return simd::load(block + static_cast<std::ptrdiff_t>(f) * W);
}
inline void setField(float* block, int f, FloatW v)
{
    simd::store(block + static_cast<std::ptrdiff_t>(f) * W, v);
}
inline WideVec3 fieldVec3(const float* block, int f)
{
    return {field(block, f), field(block, f + 1), field(block, f + 2)};
}
inline void setFieldVec3(float* block, int f, const WideVec3& v)
{
    setField(block, f, v.x);
    setField(block, f + 1, v.y);
    setField(block, f + 2, v.z);
}
inline WideVec3 mulPerElem(const WideVec3& a, const WideVec3& b)
{
    return {a.x * b.x, a.y * b.y, a.z * b.z};
}
inline WideVec3 cross(const WideVec3& a, const WideVec3& b)
{
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

/// A Mat3 per lane, by columns (math.h's Mat3 * Vec3: c0 v.x + c1 v.y + c2 v.z).
struct WideMat3
{
    WideVec3 c0, c1, c2;
};
inline WideVec3 operator*(const WideMat3& m, const WideVec3& v)
{
    return m.c0 * v.x + m.c1 * v.y + m.c2 * v.z;
}

/// A Quat per lane.
struct WideQuat
{
    FloatW x, y, z, w;
};

/// joint_solver.h's SymmetricBlock per lane.
struct WideSymmetric
{
    FloatW xx, xy, xz, yy, yz, zz;
};
inline WideSymmetric fieldSymmetric(const float* block, int f)
{
    return {field(block, f),     field(block, f + 1), field(block, f + 2),
            field(block, f + 3), field(block, f + 4), field(block, f + 5)};
}
inline void setFieldSymmetric(float* block, int f, const WideSymmetric& m)
{
    setField(block, f, m.xx);
    setField(block, f + 1, m.xy);
    setField(block, f + 2, m.xz);
    setField(block, f + 3, m.yy);
    setField(block, f + 4, m.yz);
    setField(block, f + 5, m.zz);
}
/// The symmetric matrix times v, as math.h's Mat3 * Vec3 on the mirrored matrix.
inline WideVec3 operator*(const WideSymmetric& m, const WideVec3& v)
{
    return {m.xx * v.x + m.xy * v.y + m.xz * v.z, m.xy * v.x + m.yy * v.y + m.yz * v.z,
            m.xz * v.x + m.yz * v.y + m.zz * v.z};
}
/// joint_solver.h's armInertia.
inline WideSymmetric armInertia(const WideVec3& r, const WideSymmetric& m)
{
    const WideVec3 c0{m.xx, m.xy, m.xz};
    const WideVec3 c1{m.xy, m.yy, m.yz};
    const WideVec3 c2{m.xz, m.yz, m.zz};
    const WideVec3 u0 = c1 * r.z - c2 * r.y;
    const WideVec3 u1 = c2 * r.x - c0 * r.z;
    const WideVec3 u2 = c0 * r.y - c1 * r.x;
    return {r.z * u0.y - r.y * u0.z, r.z * u1.y - r.y * u1.z, r.z * u2.y - r.y * u2.z,
            r.x * u1.z - r.z * u1.x, r.x * u2.z - r.z * u2.x, r.y * u2.x - r.x * u2.y};
}
/// joint_solver.h's inverseSymmetric: zero where the determinant is zero or not finite.
inline WideSymmetric inverseSymmetric(const WideSymmetric& k)
{
    const FloatW zero = simd::zero();
    const FloatW cxx = k.yy * k.zz - k.yz * k.yz;
    const FloatW cxy = k.xz * k.yz - k.xy * k.zz;
    const FloatW cxz = k.xy * k.yz - k.xz * k.yy;
    const FloatW cyy = k.xx * k.zz - k.xz * k.xz;
    const FloatW cyz = k.xy * k.xz - k.xx * k.yz;
    const FloatW czz = k.xx * k.yy - k.xy * k.xy;
    const FloatW det = k.xx * cxx + k.xy * cxy + k.xz * cxz;
    const FloatW inv = simd::splat(1.0f) / det;
    // det - det is 0 only for a finite det.
    const FloatW singular =
        simd::either(simd::equal(det, zero), simd::equal(simd::equal(det - det, zero), zero));
    const auto keep = [&](FloatW value) { return simd::select(singular, zero, value * inv); };
    return {keep(cxx), keep(cxy), keep(cxz), keep(cyy), keep(cyz), keep(czz)};
}

/// math.h's rotate, lane by lane, in its order.
inline WideVec3 rotate(const WideQuat& q, const WideVec3& v)
{
    const WideVec3 u{q.x, q.y, q.z};
    const WideVec3 t = cross(u, v) * simd::splat(2.0f);
    return v + t * q.w + cross(u, t);
}

/// A SolverBody per lane: velocities and the step's displacement.
struct WideBody
{
    WideVec3 v, w, dp, dq;
};

static_assert(sizeof(SolverBody) == 12 * sizeof(float), "the gather reads a SolverBody as 12 floats");

#if defined(POLYTOPE_SIMD_SSE2) || defined(POLYTOPE_SIMD_AVX2)

/// The inverse of gatherVelocities' transposition for the first 8 floats (velocities, and deltaPosition's x
/// and y unchanged). Lanes of the static dummy (index 0: static bodies and empty lanes) are not written back:
/// the dummy never changes, and bundles of one colour run on several threads at once.
inline void scatter4(SolverBody* bodies, const std::uint32_t* index, const __m128 in[8])
{
    SolverBody discard;
    const auto target = [&](std::uint32_t i)
    { return i == 0 ? &discard.linearVelocity.x : &bodies[i].linearVelocity.x; };
    float* p[4] = {target(index[0]), target(index[1]), target(index[2]), target(index[3])};
    for (int row = 0; row < 2; ++row)
    {
        __m128 a = in[4 * row];
        __m128 b = in[4 * row + 1];
        __m128 c = in[4 * row + 2];
        __m128 d = in[4 * row + 3];
        _MM_TRANSPOSE4_PS(a, b, c, d);
        _mm_storeu_ps(p[0] + 4 * row, a);
        _mm_storeu_ps(p[1] + 4 * row, b);
        _mm_storeu_ps(p[2] + 4 * row, c);
        _mm_storeu_ps(p[3] + 4 * row, d);
    }
}

#endif

/// Reads floats [0 .. 4 * Rows) of each lane's record into c, one register per float: row r (4 floats) from
/// p[lane] + rowStep * r. The inverse of scatterRows.
template <int Rows> inline void gatherRows(const float* const* p, int rowStep, FloatW* c)
{
#if defined(POLYTOPE_SIMD_SSE2) || defined(POLYTOPE_SIMD_AVX2)
    // 4 lanes at a time: one row of each lane transposed into the rows' registers.
    const auto four = [&](const float* const* at, __m128* rows)
    {
        for (int row = 0; row < Rows; ++row)
        {
            __m128 a = _mm_loadu_ps(at[0] + rowStep * row);
            __m128 b = _mm_loadu_ps(at[1] + rowStep * row);
            __m128 d = _mm_loadu_ps(at[2] + rowStep * row);
            __m128 e = _mm_loadu_ps(at[3] + rowStep * row);
            _MM_TRANSPOSE4_PS(a, b, d, e);
            rows[4 * row] = a;
            rows[4 * row + 1] = b;
            rows[4 * row + 2] = d;
            rows[4 * row + 3] = e;
        }
    };
#if defined(POLYTOPE_SIMD_AVX2)
    __m128 lo[4 * Rows];
    __m128 hi[4 * Rows];
    four(p, lo);
    four(p + 4, hi);
    for (int k = 0; k < 4 * Rows; ++k)
    {
        c[k].v = _mm256_set_m128(hi[k], lo[k]);
    }
#else
    __m128 rows[4 * Rows];
    four(p, rows);
    for (int k = 0; k < 4 * Rows; ++k)
    {
        c[k].v = rows[k];
    }
#endif
#else
    for (int lane = 0; lane < W; ++lane)
    {
        for (int row = 0; row < Rows; ++row)
        {
            for (int k = 0; k < 4; ++k)
            {
                c[4 * row + k].v[lane] = p[lane][rowStep * row + k];
            }
        }
    }
#endif
}

/// The first 4 * Rows floats of W SolverBody records, transposed (see gatherRows).
template <int Rows>
inline void gatherBodyRows(const SolverBody* bodies, const std::uint32_t* index, FloatW* c)
{
    const float* p[W];
    for (int lane = 0; lane < W; ++lane)
    {
        p[lane] = &bodies[index[lane]].linearVelocity.x;
    }
    gatherRows<Rows>(p, 4, c);
}

inline void gatherBodies(const SolverBody* bodies, const std::uint32_t* index, WideBody& out)
{
    FloatW c[12];
    gatherBodyRows<3>(bodies, index, c);
    out.v = {c[0], c[1], c[2]};
    out.w = {c[3], c[4], c[5]};
    out.dp = {c[6], c[7], c[8]};
    out.dq = {c[9], c[10], c[11]};
}

/// gatherBodies without the displacements (the joints solve velocities at the poses they are given): the
/// first 8 floats, which scatterVelocities writes back (dp.x and dp.y unchanged); dp.z and dq are zero.
inline void gatherVelocities(const SolverBody* bodies, const std::uint32_t* index, WideBody& out)
{
    FloatW c[8];
    gatherBodyRows<2>(bodies, index, c);
    const FloatW z = simd::zero();
    out.v = {c[0], c[1], c[2]};
    out.w = {c[3], c[4], c[5]};
    out.dp = {c[6], c[7], z};
    out.dq = {z, z, z};
}

inline void scatterVelocities(SolverBody* bodies, const std::uint32_t* index, const WideBody& in)
{
    const FloatW c[8] = {in.v.x, in.v.y, in.v.z, in.w.x, in.w.y, in.w.z, in.dp.x, in.dp.y};
#if defined(POLYTOPE_SIMD_AVX2)
    __m128 lo[8];
    __m128 hi[8];
    for (int k = 0; k < 8; ++k)
    {
        lo[k] = _mm256_castps256_ps128(c[k].v);
        hi[k] = _mm256_extractf128_ps(c[k].v, 1);
    }
    scatter4(bodies, index, lo);
    scatter4(bodies, index + 4, hi);
#elif defined(POLYTOPE_SIMD_SSE2)
    __m128 rows[8];
    for (int k = 0; k < 8; ++k)
    {
        rows[k] = c[k].v;
    }
    scatter4(bodies, index, rows);
#else
    for (int lane = 0; lane < W; ++lane)
    {
        if (index[lane] == 0)
        {
            continue; // the static dummy (see scatter4)
        }
        float* p = &bodies[index[lane]].linearVelocity.x;
        for (int k = 0; k < 6; ++k)
        {
            p[k] = c[k].v[lane];
        }
    }
#endif
}

/// The centres and rotations of W bodies: SolverBodyMotion's first 7 floats, transposed.
struct WidePose
{
    WideVec3 center;
    WideQuat rotation;
};

static_assert(offsetof(SolverBodyMotion, center) == 0 && offsetof(SolverBodyMotion, rotation) == 12,
              "the pose gather reads a SolverBodyMotion's centre and rotation as its first 7 floats");

/// Rows [cx cy cz qx] and [qx qy qz qw] of each lane's SolverBodyMotion (see gatherRows).
inline void gatherPoses(const SolverBodyMotion* motions, const std::uint32_t* index, WidePose& out)
{
    const float* p[W];
    for (int lane = 0; lane < W; ++lane)
    {
        p[lane] = &motions[index[lane]].center.x;
    }
    FloatW c[8];
    gatherRows<2>(p, 3, c);
    out.center = {c[0], c[1], c[2]};
    out.rotation = {c[4], c[5], c[6], c[7]};
}

/// Writes floats c[0 .. 4 * Rows) of each lane to that lane's record: row r (c[4 r .. 4 r + 4)) at
/// p[lane] + rowStep * r. Every lane is written.
template <int Rows> inline void scatterRows(float* const* p, int rowStep, const FloatW* c)
{
#if defined(POLYTOPE_SIMD_SSE2) || defined(POLYTOPE_SIMD_AVX2)
    // 4 lanes at a time: the rows' registers transposed into one row of each lane.
    const auto four = [&](float* const* at, const __m128* rows)
    {
        for (int row = 0; row < Rows; ++row)
        {
            __m128 a = rows[4 * row];
            __m128 b = rows[4 * row + 1];
            __m128 d = rows[4 * row + 2];
            __m128 e = rows[4 * row + 3];
            _MM_TRANSPOSE4_PS(a, b, d, e);
            _mm_storeu_ps(at[0] + rowStep * row, a);
            _mm_storeu_ps(at[1] + rowStep * row, b);
            _mm_storeu_ps(at[2] + rowStep * row, d);
            _mm_storeu_ps(at[3] + rowStep * row, e);
        }
    };
#if defined(POLYTOPE_SIMD_AVX2)
    __m128 lo[4 * Rows];
    __m128 hi[4 * Rows];
    for (int k = 0; k < 4 * Rows; ++k)
    {
        lo[k] = _mm256_castps256_ps128(c[k].v);
        hi[k] = _mm256_extractf128_ps(c[k].v, 1);
    }
    four(p, lo);
    four(p + 4, hi);
#else
    __m128 rows[4 * Rows];
    for (int k = 0; k < 4 * Rows; ++k)
    {
        rows[k] = c[k].v;
    }
    four(p, rows);
#endif
#else
    for (int lane = 0; lane < W; ++lane)
    {
        for (int row = 0; row < Rows; ++row)
        {
            for (int k = 0; k < 4; ++k)
            {
                p[lane][rowStep * row + k] = c[4 * row + k].v[lane];
            }
        }
    }
#endif
}

/// The inverse of gatherPoses: writes the centres and rotations back (rows [cx cy cz qx] and
/// [qx qy qz qw], the second over the first's last float with the same value). Every lane is written:
/// the caller gathers only moving bodies.
inline void scatterPoses(SolverBodyMotion* motions, const std::uint32_t* index, const WidePose& in)
{
    const FloatW c[8] = {in.center.x,   in.center.y,   in.center.z,   in.rotation.x,
                         in.rotation.x, in.rotation.y, in.rotation.z, in.rotation.w};
    float* p[W];
    for (int lane = 0; lane < W; ++lane)
    {
        p[lane] = &motions[index[lane]].center.x;
    }
    scatterRows<2>(p, 3, c);
}

/// The inverse of gatherBodies for every lane and all 12 floats (velocities and the step's displacement):
/// the caller gathers only moving bodies.
inline void scatterBodies(SolverBody* bodies, const std::uint32_t* index, const WideBody& in)
{
    const FloatW c[12] = {in.v.x,  in.v.y,  in.v.z,  in.w.x,  in.w.y,  in.w.z,
                          in.dp.x, in.dp.y, in.dp.z, in.dq.x, in.dq.y, in.dq.z};
    float* p[W];
    for (int lane = 0; lane < W; ++lane)
    {
        p[lane] = &bodies[index[lane]].linearVelocity.x;
    }
    scatterRows<3>(p, 4, c);
}

inline const float* alignedBase(const std::vector<float>& values)
{
    const auto address = reinterpret_cast<std::uintptr_t>(values.data());
    const std::size_t misalignment = (address / sizeof(float)) % kAlignFloats;
    return values.data() + (misalignment == 0 ? 0 : kAlignFloats - misalignment);
}

inline float* alignedBase(std::vector<float>& values)
{
    return const_cast<float*>(alignedBase(static_cast<const std::vector<float>&>(values)));
}

} // namespace polytope::physics::wide

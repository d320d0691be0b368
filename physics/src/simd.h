// Polytope physics: FloatW, a float of W lanes for the wide contact solver (contact_solver_wide.cpp).
//
// Three implementations of one small set of operations, chosen when the file is compiled:
// - AVX2 (POLYTOPE_AVX2 defined and the file built with -mavx2): W = 8, __m256;
// - SSE2, always present on x86-64: W = 4, __m128;
// - elsewhere a plain array of 4 floats, so the wide solver builds on any target.
// Every operation is one IEEE operation per lane (add, sub, mul, div, sqrt, compare, select, min, max):
// no fused multiply-add, no reciprocal estimates, so a lane computes exactly what the scalar code would
// and the three implementations give the same bits. min and max follow the SSE rule (first operand unless
// the comparison holds); the solver spells out its std::min/std::max equivalents with that in mind.
#pragma once

#if defined(POLYTOPE_AVX2) && defined(__AVX2__)
#include <immintrin.h>
#define POLYTOPE_SIMD_AVX2 1
#elif defined(__SSE2__)
#include <emmintrin.h>
#define POLYTOPE_SIMD_SSE2 1
#else
#include <cmath>
#endif

namespace polytope::physics::simd
{

#if defined(POLYTOPE_SIMD_AVX2)

inline constexpr int kLanes = 8;
struct FloatW
{
    __m256 v;
};
inline FloatW load(const float* p)
{
    return {_mm256_loadu_ps(p)};
}
inline void store(float* p, FloatW a)
{
    _mm256_storeu_ps(p, a.v);
}
inline FloatW splat(float s)
{
    return {_mm256_set1_ps(s)};
}
inline FloatW zero()
{
    return {_mm256_setzero_ps()};
}
inline FloatW operator+(FloatW a, FloatW b)
{
    return {_mm256_add_ps(a.v, b.v)};
}
inline FloatW operator-(FloatW a, FloatW b)
{
    return {_mm256_sub_ps(a.v, b.v)};
}
inline FloatW operator*(FloatW a, FloatW b)
{
    return {_mm256_mul_ps(a.v, b.v)};
}
inline FloatW operator/(FloatW a, FloatW b)
{
    return {_mm256_div_ps(a.v, b.v)};
}
inline FloatW operator-(FloatW a)
{
    return {_mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f))};
}
inline FloatW sqrt(FloatW a)
{
    return {_mm256_sqrt_ps(a.v)};
}
/// a < b ? a : b per lane
inline FloatW min(FloatW a, FloatW b)
{
    return {_mm256_min_ps(a.v, b.v)};
}
/// a > b ? a : b per lane
inline FloatW max(FloatW a, FloatW b)
{
    return {_mm256_max_ps(a.v, b.v)};
}
/// All ones where a > b (ordered), else zero.
inline FloatW greater(FloatW a, FloatW b)
{
    return {_mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ)};
}
/// All ones where a == b (ordered), else zero.
inline FloatW equal(FloatW a, FloatW b)
{
    return {_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ)};
}
/// Lane-wise or of two masks.
inline FloatW either(FloatW a, FloatW b)
{
    return {_mm256_or_ps(a.v, b.v)};
}
/// mask ? a : b per lane; mask lanes are all ones or all zeros.
inline FloatW select(FloatW mask, FloatW a, FloatW b)
{
    return {_mm256_blendv_ps(b.v, a.v, mask.v)};
}
/// Whether every lane of a mask is set.
inline bool allSet(FloatW mask)
{
    return _mm256_movemask_ps(mask.v) == 0xFF;
}

#elif defined(POLYTOPE_SIMD_SSE2)

inline constexpr int kLanes = 4;
struct FloatW
{
    __m128 v;
};
inline FloatW load(const float* p)
{
    return {_mm_loadu_ps(p)};
}
inline void store(float* p, FloatW a)
{
    _mm_storeu_ps(p, a.v);
}
inline FloatW splat(float s)
{
    return {_mm_set1_ps(s)};
}
inline FloatW zero()
{
    return {_mm_setzero_ps()};
}
inline FloatW operator+(FloatW a, FloatW b)
{
    return {_mm_add_ps(a.v, b.v)};
}
inline FloatW operator-(FloatW a, FloatW b)
{
    return {_mm_sub_ps(a.v, b.v)};
}
inline FloatW operator*(FloatW a, FloatW b)
{
    return {_mm_mul_ps(a.v, b.v)};
}
inline FloatW operator/(FloatW a, FloatW b)
{
    return {_mm_div_ps(a.v, b.v)};
}
inline FloatW operator-(FloatW a)
{
    return {_mm_xor_ps(a.v, _mm_set1_ps(-0.0f))};
}
inline FloatW sqrt(FloatW a)
{
    return {_mm_sqrt_ps(a.v)};
}
inline FloatW min(FloatW a, FloatW b)
{
    return {_mm_min_ps(a.v, b.v)};
}
inline FloatW max(FloatW a, FloatW b)
{
    return {_mm_max_ps(a.v, b.v)};
}
inline FloatW greater(FloatW a, FloatW b)
{
    return {_mm_cmpgt_ps(a.v, b.v)};
}
inline FloatW equal(FloatW a, FloatW b)
{
    return {_mm_cmpeq_ps(a.v, b.v)};
}
inline FloatW either(FloatW a, FloatW b)
{
    return {_mm_or_ps(a.v, b.v)};
}
inline FloatW select(FloatW mask, FloatW a, FloatW b)
{
    return {_mm_or_ps(_mm_and_ps(mask.v, a.v), _mm_andnot_ps(mask.v, b.v))};
}
inline bool allSet(FloatW mask)
{
    return _mm_movemask_ps(mask.v) == 0xF;
}

#else

inline constexpr int kLanes = 4;
struct FloatW
{
    float v[kLanes];
    bool mask[kLanes]; ///< set by the comparisons and either() only
};
template <typename F> inline FloatW eachLane(FloatW a, FloatW b, F f)
{
    FloatW r{};
    for (int i = 0; i < kLanes; ++i)
    {
        r.v[i] = f(a.v[i], b.v[i]);
    }
    return r;
}
inline FloatW load(const float* p)
{
    FloatW r{};
    for (int i = 0; i < kLanes; ++i)
    {
        r.v[i] = p[i];
    }
    return r;
}
inline void store(float* p, FloatW a)
{
    for (int i = 0; i < kLanes; ++i)
    {
        p[i] = a.v[i];
    }
}
inline FloatW splat(float s)
{
    FloatW r{};
    for (float& x : r.v)
    {
        x = s;
    }
    return r;
}
inline FloatW zero()
{
    return splat(0.0f);
}
inline FloatW operator+(FloatW a, FloatW b)
{
    return eachLane(a, b, [](float x, float y) { return x + y; });
}
inline FloatW operator-(FloatW a, FloatW b)
{
    return eachLane(a, b, [](float x, float y) { return x - y; });
}
inline FloatW operator*(FloatW a, FloatW b)
{
    return eachLane(a, b, [](float x, float y) { return x * y; });
}
inline FloatW operator/(FloatW a, FloatW b)
{
    return eachLane(a, b, [](float x, float y) { return x / y; });
}
inline FloatW operator-(FloatW a)
{
    return eachLane(a, a, [](float x, float) { return -x; });
}
inline FloatW sqrt(FloatW a)
{
    return eachLane(a, a, [](float x, float) { return std::sqrt(x); });
}
inline FloatW min(FloatW a, FloatW b)
{
    return eachLane(a, b, [](float x, float y) { return x < y ? x : y; });
}
inline FloatW max(FloatW a, FloatW b)
{
    return eachLane(a, b, [](float x, float y) { return x > y ? x : y; });
}
inline FloatW greater(FloatW a, FloatW b)
{
    FloatW r{};
    for (int i = 0; i < kLanes; ++i)
    {
        r.mask[i] = a.v[i] > b.v[i];
    }
    return r;
}
inline FloatW equal(FloatW a, FloatW b)
{
    FloatW r{};
    for (int i = 0; i < kLanes; ++i)
    {
        r.mask[i] = a.v[i] == b.v[i];
    }
    return r;
}
inline FloatW either(FloatW a, FloatW b)
{
    FloatW r{};
    for (int i = 0; i < kLanes; ++i)
    {
        r.mask[i] = a.mask[i] || b.mask[i];
    }
    return r;
}
inline FloatW select(FloatW mask, FloatW a, FloatW b)
{
    FloatW r{};
    for (int i = 0; i < kLanes; ++i)
    {
        r.v[i] = mask.mask[i] ? a.v[i] : b.v[i];
    }
    return r;
}
inline bool allSet(FloatW mask)
{
    bool all = true;
    for (int i = 0; i < kLanes; ++i)
    {
        all = all && mask.mask[i];
    }
    return all;
}

#endif

} // namespace polytope::physics::simd

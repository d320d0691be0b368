// Polytope wire protocol: quantization of body positions and orientations to integers.
//
// Rationale. Snapshots carry integers, never floats: integers compare exactly (a body at rest is
// bit-identical from tick to tick, so delta coding can skip it), they can be differenced and predicted with
// exact integer arithmetic that every language reproduces, and their ranges are known, so a decoder can
// check them. The scheme follows Fiedler's "Snapshot Compression" (gafferongames.com, 2015):
//
// - Position: each axis is quantized to a fixed resolution (default 1/1024 m) inside agreed world bounds.
//   A coordinate outside the bounds is clamped to them and the result says so. Error <= half a step.
// - Orientation: "smallest three". Of the quaternion's four components the one of largest magnitude is
//   dropped and sent as its index (2 bits); the quaternion is negated if needed so that the dropped one is
//   positive (q and -q are the same rotation). The other three then lie in [-1/sqrt2, 1/sqrt2] and are sent
//   as integers k in [-K, K] with K = 2^(N-1) - 1, the value being k / (sqrt2 * K). The receiver rebuilds
//   the dropped one as sqrt(1 - sum of squares). With N = 12 bits, plain rounding errs by up to 0.067
//   degrees where the dropped component is near 1/2 (its reconstruction amplifies the others' errors up to
//   2x); the quantizer therefore also tries the 26 neighbouring codes when the rounded code errs by more
//   than 0.03 degrees and keeps the closest, which bounds the error by 0.04 degrees (measured over millions
//   of random and adversarial quaternions in the tests) at the cost of 12 rather than 13 bits a component.
//
// In units of the step 1 / (sqrt2 * K) a quantized orientation is the integer 3-vector k plus a fourth
// component sqrt(2 K^2 - |k|^2): every later computation on orientations (re-expressing one with another
// largest component, for instance) can be done in integers; see snapshot_codec.h.
#pragma once

#include <array>
#include <cstdint>

namespace polytope::protocol
{

/// Bits for each of the three "smallest three" components of an orientation.
inline constexpr int kOrientationComponentBits = 12;
/// K: a component is an integer k in [-K, K], stored as the code k + K in [0, 2K].
inline constexpr std::int32_t kOrientationComponentMax = (1 << (kOrientationComponentBits - 1)) - 1;
/// The code of a zero component (K).
inline constexpr std::uint16_t kOrientationZeroCode = static_cast<std::uint16_t>(kOrientationComponentMax);
/// Largest valid component code (2K).
inline constexpr std::uint32_t kOrientationCodeMax =
    2u * static_cast<std::uint32_t>(kOrientationComponentMax);
/// |k|^2 summed over the three components never exceeds this (2 K^2) for a valid orientation.
inline constexpr std::int64_t kOrientationNormSquared =
    2 * static_cast<std::int64_t>(kOrientationComponentMax) * kOrientationComponentMax;

/// How positions are quantized. Both peers must use the same values (carried out of band, see CODEC.md).
struct PositionQuantization
{
    /// World bounds in metres; positions outside are clamped. Each max must exceed its min.
    std::array<float, 3> boundsMin{-256.0f, -64.0f, -256.0f};
    std::array<float, 3> boundsMax{256.0f, 192.0f, 256.0f};
    /// Quantization steps per metre (resolution 1/stepsPerMetre m), in [1, 65536].
    std::uint32_t stepsPerMetre = 1024;

    /// Largest code of an axis: round((max - min) * stepsPerMetre) - 1. Codes run from 0 (boundsMin) to
    /// this, so 512 m at 1024 steps/m take exactly 19 bits.
    std::uint32_t maxCode(int axis) const;
    /// Bits needed to write any code of an axis.
    int bitsForAxis(int axis) const;
    /// Bounds finite, each axis spanning 2 to 2^30 codes, resolution in [1, 65536].
    bool isValid() const;
};

/// A quantized position: one code per axis, in [0, maxCode(axis)].
struct QuantizedPosition
{
    std::array<std::uint32_t, 3> codes{};
    bool clamped = false; ///< some axis rounded outside [0, maxCode] (or was not finite) and was clamped

    auto operator<=>(const QuantizedPosition&) const = default;
};

/// A quantized orientation in smallest-three form.
struct QuantizedOrientation
{
    std::uint8_t largest = 3;             ///< index (0 x, 1 y, 2 z, 3 w) of the dropped, largest component
    std::array<std::uint16_t, 3> codes{}; ///< the other three components in index order, k + K in [0, 2K]

    auto operator<=>(const QuantizedOrientation&) const = default;
};

/// Quantizes a position (metres). NaN coordinates quantize to the lower bound and set `clamped`.
/// Deterministic: computed in double precision with round-half-away-from-zero.
QuantizedPosition quantizePosition(const PositionQuantization& config, const std::array<float, 3>& metres);

/// The centre of a position code's cell: boundsMin + code / stepsPerMetre, in metres.
std::array<float, 3> dequantizePosition(const PositionQuantization& config,
                                        const std::array<std::uint32_t, 3>& codes);

/// Quantizes a rotation given as (x, y, z, w); need not be exactly unit length (it is normalised). A zero or
/// non-finite quaternion quantizes to the identity. Error <= 0.04 degrees (see the file comment).
QuantizedOrientation quantizeOrientation(const std::array<float, 4>& xyzw);

/// The unit quaternion (x, y, z, w) of a quantized orientation. Codes out of range are clamped, and a
/// combination whose three components are too long to be a unit quaternion gets a zero fourth component
/// and is normalised, so that any input gives a finite unit quaternion.
std::array<float, 4> dequantizeOrientation(const QuantizedOrientation& orientation);

/// Signed component k = code - K.
constexpr std::int32_t orientationComponent(std::uint16_t code)
{
    return static_cast<std::int32_t>(code) - kOrientationComponentMax;
}

/// True when the three codes are in [0, 2K], their squared lengths sum to at most 2 K^2 and the index is
/// below 4: an orientation a decoder may accept.
constexpr bool isValidOrientation(const QuantizedOrientation& orientation)
{
    if (orientation.largest > 3)
    {
        return false;
    }
    std::int64_t lengthSquared = 0;
    for (std::uint16_t code : orientation.codes)
    {
        if (code > kOrientationCodeMax)
        {
            return false;
        }
        const std::int64_t k = orientationComponent(code);
        lengthSquared += k * k;
    }
    return lengthSquared <= kOrientationNormSquared;
}

/// The rotation angle, in degrees, that takes unit quaternion a to unit quaternion b (0..180).
double rotationAngleDegrees(const std::array<double, 4>& a, const std::array<double, 4>& b);

} // namespace polytope::protocol

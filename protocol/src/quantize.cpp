#include "polytope/protocol/quantize.h"

#include <algorithm>
#include <cmath>

namespace polytope::protocol
{
namespace
{

using Quat64 = std::array<double, 4>;

/// Codes of one axis as a double: round((max - min) * stepsPerMetre). Double keeps the product exact for
/// every float bound and resolution the config allows.
double axisCodeCount(const PositionQuantization& config, int axis)
{
    const double span = static_cast<double>(config.boundsMax[static_cast<std::size_t>(axis)]) -
                        static_cast<double>(config.boundsMin[static_cast<std::size_t>(axis)]);
    return std::floor(span * static_cast<double>(config.stepsPerMetre) + 0.5);
}

/// The unit quaternion of signed components k (already in [-K, K]) with the dropped one at `largest`.
Quat64 rebuild(std::uint8_t largest, const std::array<std::int32_t, 3>& k)
{
    const double lengthSquared = static_cast<double>(k[0]) * k[0] + static_cast<double>(k[1]) * k[1] +
                                 static_cast<double>(k[2]) * k[2];
    const double normSquared = static_cast<double>(kOrientationNormSquared);
    Quat64 q{};
    double scale = 1.0 / std::sqrt(normSquared);
    double dropped = std::sqrt(std::max(0.0, normSquared - lengthSquared)) * scale;
    if (lengthSquared > normSquared)
    {
        scale =
            1.0 / std::sqrt(lengthSquared); // not a valid encoding: fall back to the nearest unit quaternion
        dropped = 0.0;
    }
    std::size_t next = 0;
    for (std::size_t i = 0; i < 4; ++i)
    {
        q[i] = i == largest ? dropped : static_cast<double>(k[next++]) * scale;
    }
    return q;
}

} // namespace

std::uint32_t PositionQuantization::maxCode(int axis) const
{
    const double count = axisCodeCount(*this, axis);
    if (!(count >= 2.0) || count > static_cast<double>(1u << 30))
    {
        return 0; // invalid config; isValid() reports it
    }
    return static_cast<std::uint32_t>(count) - 1u;
}

int PositionQuantization::bitsForAxis(int axis) const
{
    int bits = 1;
    while (bits < 32 && (maxCode(axis) >> bits) != 0)
    {
        ++bits;
    }
    return bits;
}

bool PositionQuantization::isValid() const
{
    if (stepsPerMetre < 1 || stepsPerMetre > 65536)
    {
        return false;
    }
    for (int axis = 0; axis < 3; ++axis)
    {
        const float lo = boundsMin[static_cast<std::size_t>(axis)];
        const float hi = boundsMax[static_cast<std::size_t>(axis)];
        if (!std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo) || maxCode(axis) == 0)
        {
            return false;
        }
    }
    return true;
}

QuantizedPosition quantizePosition(const PositionQuantization& config, const std::array<float, 3>& metres)
{
    QuantizedPosition out;
    for (int axis = 0; axis < 3; ++axis)
    {
        const std::size_t a = static_cast<std::size_t>(axis);
        const double steps = (static_cast<double>(metres[a]) - static_cast<double>(config.boundsMin[a])) *
                             static_cast<double>(config.stepsPerMetre);
        const double rounded = std::floor(steps + 0.5);
        const double top = static_cast<double>(config.maxCode(axis));
        if (!(rounded >= 0.0)) // also NaN
        {
            out.codes[a] = 0;
            out.clamped = true;
        }
        else if (rounded > top)
        {
            out.codes[a] = static_cast<std::uint32_t>(top);
            out.clamped = true;
        }
        else
        {
            out.codes[a] = static_cast<std::uint32_t>(rounded);
        }
    }
    return out;
}

std::array<float, 3> dequantizePosition(const PositionQuantization& config,
                                        const std::array<std::uint32_t, 3>& codes)
{
    std::array<float, 3> out{};
    for (std::size_t a = 0; a < 3; ++a)
    {
        out[a] =
            static_cast<float>(static_cast<double>(config.boundsMin[a]) +
                               static_cast<double>(codes[a]) / static_cast<double>(config.stepsPerMetre));
    }
    return out;
}

double rotationAngleDegrees(const Quat64& a, const Quat64& b)
{
    // 4 atan2(|a - b|, |a + b|) with b on a's hemisphere: accurate for tiny angles, unlike 2 acos(a.b).
    const double dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
    const double sign = dot < 0.0 ? -1.0 : 1.0;
    double difference = 0.0;
    double sum = 0.0;
    for (std::size_t i = 0; i < 4; ++i)
    {
        difference += (a[i] - sign * b[i]) * (a[i] - sign * b[i]);
        sum += (a[i] + sign * b[i]) * (a[i] + sign * b[i]);
    }
    return 4.0 * std::atan2(std::sqrt(difference), std::sqrt(sum)) * (180.0 / 3.14159265358979323846);
}

QuantizedOrientation quantizeOrientation(const std::array<float, 4>& xyzw)
{
    Quat64 q{xyzw[0], xyzw[1], xyzw[2], xyzw[3]};
    const double length = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    QuantizedOrientation out;
    if (!std::isfinite(length) || length < 1e-12)
    {
        out.largest = 3;
        out.codes.fill(kOrientationZeroCode);
        return out;
    }
    std::size_t largest = 0;
    for (std::size_t i = 0; i < 4; ++i)
    {
        q[i] /= length;
        if (std::fabs(q[i]) > std::fabs(q[largest]))
        {
            largest = i;
        }
    }
    if (q[largest] < 0.0)
    {
        for (double& c : q)
        {
            c = -c;
        }
    }
    const double scale = std::sqrt(static_cast<double>(kOrientationNormSquared));
    std::array<std::int32_t, 3> k{};
    std::size_t next = 0;
    for (std::size_t i = 0; i < 4; ++i)
    {
        if (i != largest)
        {
            const double rounded = std::floor(q[i] * scale + 0.5);
            k[next++] =
                static_cast<std::int32_t>(std::clamp(rounded, -static_cast<double>(kOrientationComponentMax),
                                                     static_cast<double>(kOrientationComponentMax)));
        }
    }
    const auto dropped = static_cast<std::uint8_t>(largest);

    // Where the dropped component is small (near 1/2) its reconstruction magnifies the rounding of the
    // others; there, the nearest point of the (curved) code lattice may be a neighbour of the rounded one.
    constexpr double kSearchAboveDegrees = 0.03;
    double bestError = rotationAngleDegrees(q, rebuild(dropped, k));
    if (bestError > kSearchAboveDegrees)
    {
        const std::array<std::int32_t, 3> rounded = k;
        for (std::int32_t d0 = -1; d0 <= 1; ++d0)
        {
            for (std::int32_t d1 = -1; d1 <= 1; ++d1)
            {
                for (std::int32_t d2 = -1; d2 <= 1; ++d2)
                {
                    const std::array<std::int32_t, 3> candidate{rounded[0] + d0, rounded[1] + d1,
                                                                rounded[2] + d2};
                    bool inRange = true;
                    std::int64_t lengthSquared = 0;
                    for (std::int32_t c : candidate)
                    {
                        inRange = inRange && c >= -kOrientationComponentMax && c <= kOrientationComponentMax;
                        lengthSquared += static_cast<std::int64_t>(c) * c;
                    }
                    if (!inRange || lengthSquared > kOrientationNormSquared)
                    {
                        continue;
                    }
                    const double error = rotationAngleDegrees(q, rebuild(dropped, candidate));
                    if (error < bestError)
                    {
                        bestError = error;
                        k = candidate;
                    }
                }
            }
        }
    }
    out.largest = dropped;
    for (std::size_t i = 0; i < 3; ++i)
    {
        out.codes[i] = static_cast<std::uint16_t>(k[i] + kOrientationComponentMax);
    }
    return out;
}

std::array<float, 4> dequantizeOrientation(const QuantizedOrientation& orientation)
{
    std::array<std::int32_t, 3> k{};
    for (std::size_t i = 0; i < 3; ++i)
    {
        const std::int32_t code =
            std::min<std::int32_t>(orientation.codes[i], static_cast<std::int32_t>(kOrientationCodeMax));
        k[i] = code - kOrientationComponentMax;
    }
    const Quat64 q = rebuild(static_cast<std::uint8_t>(orientation.largest & 3u), k);
    return {static_cast<float>(q[0]), static_cast<float>(q[1]), static_cast<float>(q[2]),
            static_cast<float>(q[3])};
}

} // namespace polytope::protocol

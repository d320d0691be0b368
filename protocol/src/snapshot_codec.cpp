#include "polytope/protocol/snapshot_codec.h"

#include "polytope/protocol/checksum.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace polytope::protocol
{
namespace
{

constexpr std::uint64_t kIdSpace = 1ull << 32;

// ------------------------------------------------------------------------------------------------ models

/// Motion classes: how a kept body moved from the reference to the baseline (CODEC.md, "motion class").
/// They select the contexts of everything coded about the body, and whether its motion is extrapolated.
enum MotionClass : int
{
    kNoReferenceResting = 0,
    kNoReferenceAwake,
    kStillResting,
    kStillAwake,
    kJitter,
    kMovingSlowly,
    kMovingFast,
    kMotionClassCount
};
constexpr std::int64_t kJitterUnits = 2;       ///< largest change (codes) still taken for noise
constexpr std::int64_t kSlowUnitsPerTick = 16; ///< above this many codes per tick, a body is "fast"
/// Deceleration is applied only while baselineAge + referenceGap is at most this (keeps 64-bit products).
constexpr std::int64_t kDecelerationAgeLimit = 1024;
/// Largest deceleration a header may carry (1/16 code per tick^2).
constexpr std::uint32_t kMaxDeceleration = 4095;

/// A signed integer: non-zero flag, sign (in the context of the value's trend: the sign of its change from
/// reference to baseline, since a decelerating body overshoots its extrapolation), magnitude class (unary),
/// top mantissa bit (adaptive), the remaining mantissa bits at probability one half.
struct SignedModel
{
    AdaptiveBit nonZero;
    std::array<AdaptiveBit, 3> negative; ///< [trend: 0 none, 1 increasing, 2 decreasing]
    std::array<AdaptiveBit, 32> moreClass;
    std::array<AdaptiveBit, 32> mantissaTop;
};

/// An unsigned integer v as the magnitude v + 1 (no zero flag, no sign).
struct UnsignedModel
{
    std::array<AdaptiveBit, 33> moreClass;
    std::array<AdaptiveBit, 33> mantissaTop;
};

/// Every adaptive probability of one slice; all start at one half.
struct Models
{
    AdaptiveBit removedAny;
    AdaptiveBit kept;
    UnsignedModel createdCount;
    UnsignedModel idGap;
    SignedModel generation;
    AdaptiveBit createdAtRest;
    std::array<SignedModel, 2> createdPosition; ///< [0] x and z, [1] y
    std::array<AdaptiveBit, 3> createdLargest;  ///< 2-bit tree
    SignedModel createdOrientation;

    UnsignedModel quietChangedCount;
    UnsignedModel quietRun;
    std::array<std::array<AdaptiveBit, 2>, kMotionClassCount> changed; ///< [class][predecessor changed]
    std::array<AdaptiveBit, 2> atRest;                                 ///< [baseline at rest]
    std::array<AdaptiveBit, kMotionClassCount> positionChanged;
    std::array<AdaptiveBit, kMotionClassCount> orientationChanged;
    std::array<AdaptiveBit, kMotionClassCount> largestAsPredicted;
    std::array<AdaptiveBit, 3> largest; ///< 2-bit tree
    std::array<std::array<SignedModel, 2>, kMotionClassCount> position;
    std::array<SignedModel, kMotionClassCount> orientation;
};

// ------------------------------------------------------------------------------- encode / decode symmetry

/// The two sides of the coder behind one interface, so that every field is coded by the same function in
/// both directions (yojimbo's serialize idea): encoding reads the value, decoding writes it.
class EncodeSide
{
  public:
    static constexpr bool kDecoding = false;
    explicit EncodeSide(RangeEncoder& coder) : m_coder(coder) {}
    void bit(AdaptiveBit& model, bool& value) { m_coder.encode(model, value); }
    void direct(std::uint32_t& value, int bits) { m_coder.encodeDirect(value, bits); }
    std::size_t approximateBytes() const { return m_coder.approximateBytes(); }

  private:
    RangeEncoder& m_coder;
};

class DecodeSide
{
  public:
    static constexpr bool kDecoding = true;
    explicit DecodeSide(RangeDecoder& coder) : m_coder(coder) {}
    void bit(AdaptiveBit& model, bool& value) { value = m_coder.decode(model); }
    void direct(std::uint32_t& value, int bits) { value = m_coder.decodeDirect(bits); }
    std::size_t approximateBytes() const { return 0; }

  private:
    RangeDecoder& m_coder;
};

int floorLog2(std::uint64_t value)
{
    int log = -1;
    while (value != 0)
    {
        value >>= 1;
        ++log;
    }
    return log;
}

/// Magnitude a >= 1, a < 2^(maxClass + 1): class c = floor(log2 a) in unary (c ones, then a zero unless
/// c == maxClass), then, if c >= 1, bit c-1 of a (adaptive, per class) and bits c-2..0 (direct).
template <class Side>
void codeMagnitude(Side& side, AdaptiveBit* moreClass, AdaptiveBit* mantissaTop, int maxClass,
                   std::uint64_t& magnitude)
{
    const int target = Side::kDecoding ? 0 : floorLog2(magnitude);
    int magnitudeClass = 0;
    while (magnitudeClass < maxClass)
    {
        bool further = !Side::kDecoding && magnitudeClass < target;
        side.bit(moreClass[magnitudeClass], further);
        if (!further)
        {
            break;
        }
        ++magnitudeClass;
    }
    std::uint64_t value = 1;
    if (magnitudeClass >= 1)
    {
        bool top = !Side::kDecoding && ((magnitude >> (magnitudeClass - 1)) & 1u) != 0;
        side.bit(mantissaTop[magnitudeClass], top);
        value = 2u | (top ? 1u : 0u);
        if (magnitudeClass >= 2)
        {
            const int restBits = magnitudeClass - 1;
            std::uint32_t rest =
                Side::kDecoding ? 0u : static_cast<std::uint32_t>(magnitude & ((1ull << restBits) - 1u));
            side.direct(rest, restBits);
            value = (value << restBits) | rest;
        }
    }
    if constexpr (Side::kDecoding)
    {
        magnitude = value;
    }
}

/// Trend context of a value from its change between reference and baseline.
std::size_t trendOf(std::int64_t change)
{
    return change == 0 ? 0u : (change > 0 ? 1u : 2u);
}

/// Signed residual in (-2^32, 2^32).
template <class Side>
void codeSigned(Side& side, SignedModel& model, std::int64_t& value, std::size_t trend = 0)
{
    bool nonZero = value != 0;
    side.bit(model.nonZero, nonZero);
    if (!nonZero)
    {
        value = 0;
        return;
    }
    bool negative = value < 0;
    side.bit(model.negative[trend], negative);
    std::uint64_t magnitude = Side::kDecoding ? 0u : static_cast<std::uint64_t>(negative ? -value : value);
    codeMagnitude(side, model.moreClass.data(), model.mantissaTop.data(), 31, magnitude);
    if constexpr (Side::kDecoding)
    {
        value = negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
    }
}

/// Unsigned value in [0, 2^33 - 1) (callers check their own, smaller, bounds).
template <class Side> void codeUnsigned(Side& side, UnsignedModel& model, std::uint64_t& value)
{
    std::uint64_t magnitude = value + 1u;
    codeMagnitude(side, model.moreClass.data(), model.mantissaTop.data(), 32, magnitude);
    value = magnitude - 1u;
}

/// A value in [0, 3] as two bits, the second in the context of the first.
template <class Side> void codeTwoBits(Side& side, std::array<AdaptiveBit, 3>& tree, std::uint8_t& value)
{
    bool high = (value & 2u) != 0;
    side.bit(tree[0], high);
    bool low = (value & 1u) != 0;
    side.bit(tree[high ? 2 : 1], low);
    value = static_cast<std::uint8_t>((high ? 2u : 0u) | (low ? 1u : 0u));
}

// ------------------------------------------------------------------------------------------- arithmetic

std::uint64_t isqrt(std::uint64_t value)
{
    auto root = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(value)));
    while (root * root > value)
    {
        --root;
    }
    while ((root + 1) * (root + 1) <= value)
    {
        ++root;
    }
    return root;
}

/// sqrt(value) rounded to nearest (halves cannot occur for integers).
std::int64_t roundedSqrt(std::int64_t value)
{
    if (value <= 0)
    {
        return 0;
    }
    const auto root = static_cast<std::int64_t>(isqrt(static_cast<std::uint64_t>(value)));
    return value - root * root > root ? root + 1 : root;
}

/// numerator / denominator rounded to nearest, halves away from zero; denominator > 0.
std::int64_t divideRounded(std::int64_t numerator, std::int64_t denominator)
{
    return numerator >= 0 ? (2 * numerator + denominator) / (2 * denominator)
                          : -((-2 * numerator + denominator) / (2 * denominator));
}

std::array<std::int64_t, 3> components(const QuantizedOrientation& o)
{
    return {orientationComponent(o.codes[0]), orientationComponent(o.codes[1]),
            orientationComponent(o.codes[2])};
}

std::int64_t lengthSquared(const std::array<std::int64_t, 3>& k)
{
    return k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
}

QuantizedOrientation orientationOf(const QuantizedBody& body)
{
    return {body.largest, body.orientation};
}

/// The index (0..3) of the component of largest magnitude of an orientation given as smallest three: the
/// dropped one unless another's square is strictly greater (then the first such of greatest square).
std::uint8_t largestComponent(const QuantizedOrientation& o)
{
    const auto k = components(o);
    std::int64_t best = kOrientationNormSquared - lengthSquared(k);
    std::uint8_t bestIndex = o.largest;
    std::size_t next = 0;
    for (std::uint8_t i = 0; i < 4; ++i)
    {
        if (i == o.largest)
        {
            continue;
        }
        const std::int64_t square = k[next] * k[next];
        ++next;
        if (square > best)
        {
            best = square;
            bestIndex = i;
        }
    }
    return bestIndex;
}

// ------------------------------------------------------------------------------------------- prediction

/// The largest position code of each axis (PositionQuantization::maxCode), computed once per slice.
struct CodeLimits
{
    std::array<std::int64_t, 3> maxPosition{};

    explicit CodeLimits(const PositionQuantization& quantization)
    {
        for (int a = 0; a < 3; ++a)
        {
            maxPosition[static_cast<std::size_t>(a)] = quantization.maxCode(a);
        }
    }
};

using Prediction = detail::BodyPrediction;

/// Largest absolute change of any position or orientation code from reference to baseline, the reference's
/// orientation first re-expressed in the baseline's frame.
std::int64_t largestChange(const QuantizedBody& base, const QuantizedBody& reference)
{
    const auto baseK = components(orientationOf(base));
    const auto referenceK = components(reexpressOrientation(orientationOf(reference), base.largest));
    std::int64_t change = 0;
    for (std::size_t a = 0; a < 3; ++a)
    {
        const std::int64_t dp = static_cast<std::int64_t>(base.position[a]) - reference.position[a];
        const std::int64_t dk = baseK[a] - referenceK[a];
        change = std::max({change, dp < 0 ? -dp : dp, dk < 0 ? -dk : dk});
    }
    return change;
}

/// How a kept body moved from reference to baseline; known to both sides before anything about it is coded.
inline int motionClassOf(const QuantizedBody& base, const QuantizedBody* reference, std::int64_t referenceGap)
{
    if (reference == nullptr)
    {
        return base.atRest ? kNoReferenceResting : kNoReferenceAwake;
    }
    const std::int64_t change = reference->samePose(base) ? 0 : largestChange(base, *reference);
    if (change == 0)
    {
        return base.atRest ? kStillResting : kStillAwake;
    }
    if (change <= kJitterUnits)
    {
        return kJitter;
    }
    return change <= kSlowUnitsPerTick * referenceGap ? kMovingSlowly : kMovingFast;
}

/// Quiet bodies (asleep in the baseline and, if there is a reference, unmoved since it) rarely change:
/// which of them did is coded as run lengths rather than a flag each.
constexpr bool isQuiet(int motionClass)
{
    return motionClass == kStillResting || motionClass == kNoReferenceResting;
}

/// The predicted state of a changed kept body: its baseline state, extrapolated linearly from reference to
/// baseline over the baseline's age when the body was clearly moving.
/// Extrapolation parameters shared by every body of a slice (from its header).
struct Extrapolation
{
    std::int64_t baselineAge = 0;  ///< h, ticks
    std::int64_t referenceGap = 1; ///< g, ticks
    std::int64_t deceleration =
        0; ///< horizontal, in 1/16 code per tick^2 (0 when h + g > kDecelerationAgeLimit)
};

Prediction predict(const CodeLimits& limits, const QuantizedBody& base, const QuantizedBody* reference,
                   int motionClass, const Extrapolation& e)
{
    const std::int64_t baselineAge = e.baselineAge;
    const std::int64_t referenceGap = e.referenceGap;
    Prediction p;
    for (std::size_t a = 0; a < 3; ++a)
    {
        p.position[a] = base.position[a];
    }
    p.orientation = orientationOf(base);
    p.predictedLargest = base.largest;
    if (reference == nullptr || motionClass < kJitter)
    {
        return p;
    }
    const auto baseK = components(p.orientation);
    const auto referenceK = components(reexpressOrientation(orientationOf(*reference), base.largest));
    for (std::size_t a = 0; a < 3; ++a)
    {
        p.positionTrend[a] = static_cast<std::uint8_t>(
            trendOf(static_cast<std::int64_t>(base.position[a]) - reference->position[a]));
        p.orientationTrend[a] = static_cast<std::uint8_t>(trendOf(baseK[a] - referenceK[a]));
    }
    if (motionClass == kJitter)
    {
        return p;
    }
    std::array<std::int64_t, 3> dp{};
    for (std::size_t a = 0; a < 3; ++a)
    {
        dp[a] = static_cast<std::int64_t>(base.position[a]) - reference->position[a];
        p.position[a] = base.position[a] + divideRounded(dp[a] * baselineAge, referenceGap);
    }
    // Sliding bodies slow down: take L = deceleration * h (h + g) / 32 codes off the horizontal (x, z)
    // displacement, along its direction, but at most half of it. With M = 32 g L (an integer) the
    // correction of axis a is dp[a] * M / (32 g s), s the horizontal speed over the gap.
    if (e.deceleration > 0)
    {
        const std::int64_t speed = roundedSqrt(dp[0] * dp[0] + dp[2] * dp[2]);
        if (speed > 0)
        {
            const std::int64_t m =
                std::min(e.deceleration * baselineAge * (baselineAge + referenceGap) * referenceGap,
                         16 * speed * baselineAge);
            p.position[0] -= divideRounded(dp[0] * m, 32 * referenceGap * speed);
            p.position[2] -= divideRounded(dp[2] * m, 32 * referenceGap * speed);
        }
    }
    for (std::size_t a = 0; a < 3; ++a)
    {
        p.position[a] = std::clamp<std::int64_t>(p.position[a], 0, limits.maxPosition[a]);
    }
    std::array<std::int64_t, 3> k{};
    for (std::size_t a = 0; a < 3; ++a)
    {
        k[a] = std::clamp<std::int64_t>(
            baseK[a] + divideRounded((baseK[a] - referenceK[a]) * baselineAge, referenceGap),
            -kOrientationComponentMax, kOrientationComponentMax);
    }
    if (lengthSquared(k) <= kOrientationNormSquared)
    {
        for (std::size_t a = 0; a < 3; ++a)
        {
            p.orientation.codes[a] = static_cast<std::uint16_t>(k[a] + kOrientationComponentMax);
        }
        p.predictedLargest = largestComponent(p.orientation);
    }
    return p;
}

// ------------------------------------------------------------------------------------------- body coding

/// How a kept body that changed (its "changed" flag is coded by the caller) differs from its baseline state.
/// On decode `body` holds the baseline state on entry and the decoded one on return.
template <class Side>
CodecError codeChangedBody(Side& side, Models& m, const CodeLimits& limits, int c, const QuantizedBody& base,
                           const Prediction& p, QuantizedBody& body)
{
    bool atRest = body.atRest;
    side.bit(m.atRest[base.atRest ? 1 : 0], atRest);
    body.atRest = atRest;

    bool positionChanged = !Side::kDecoding && body.position != base.position;
    side.bit(m.positionChanged[static_cast<std::size_t>(c)], positionChanged);
    if (positionChanged)
    {
        for (std::size_t a = 0; a < 3; ++a)
        {
            std::int64_t residual =
                Side::kDecoding ? 0 : static_cast<std::int64_t>(body.position[a]) - p.position[a];
            codeSigned(side, m.position[static_cast<std::size_t>(c)][a == 1 ? 1 : 0], residual,
                       p.positionTrend[a]);
            if constexpr (Side::kDecoding)
            {
                const std::int64_t value = p.position[a] + residual;
                if (value < 0 || value > limits.maxPosition[a])
                {
                    return CodecError::ValueOutOfRange;
                }
                body.position[a] = static_cast<std::uint32_t>(value);
            }
        }
    }

    bool orientationChanged =
        !Side::kDecoding && (body.orientation != base.orientation || body.largest != base.largest);
    side.bit(m.orientationChanged[static_cast<std::size_t>(c)], orientationChanged);
    if (orientationChanged)
    {
        bool asPredicted = body.largest == p.predictedLargest;
        side.bit(m.largestAsPredicted[static_cast<std::size_t>(c)], asPredicted);
        std::uint8_t largest = asPredicted ? p.predictedLargest : body.largest;
        if (!asPredicted)
        {
            codeTwoBits(side, m.largest, largest);
        }
        const auto target = components(reexpressOrientation(p.orientation, largest));
        const auto actual = components(orientationOf(body));
        std::array<std::int64_t, 3> k{};
        for (std::size_t a = 0; a < 3; ++a)
        {
            std::int64_t residual = Side::kDecoding ? 0 : actual[a] - target[a];
            codeSigned(side, m.orientation[static_cast<std::size_t>(c)], residual,
                       largest == p.orientation.largest ? p.orientationTrend[a] : 0u);
            k[a] = target[a] + residual;
            if (Side::kDecoding && (k[a] < -kOrientationComponentMax || k[a] > kOrientationComponentMax))
            {
                return CodecError::ValueOutOfRange;
            }
        }
        if constexpr (Side::kDecoding)
        {
            if (lengthSquared(k) > kOrientationNormSquared)
            {
                return CodecError::ValueOutOfRange;
            }
            body.largest = largest;
            for (std::size_t a = 0; a < 3; ++a)
            {
                body.orientation[a] = static_cast<std::uint16_t>(k[a] + kOrientationComponentMax);
            }
        }
    }
    return CodecError::None;
}

/// A created body's generation and state (its id is coded by the caller), predicted from the previous two
/// created bodies of the slice (or fixed values for the first) and, for the generation, from a removed body
/// of the same id.
template <class Side>
CodecError codeCreated(Side& side, Models& m, const CodeLimits& limits, const QuantizedBody* previous,
                       const QuantizedBody* beforePrevious, const QuantizedBody* replaced,
                       QuantizedBody& body)
{
    const std::uint32_t predictedGeneration =
        replaced != nullptr ? replaced->generation + 1u : (previous != nullptr ? previous->generation : 1u);
    std::int64_t generationResidual =
        Side::kDecoding
            ? 0
            : static_cast<std::int64_t>(static_cast<std::int32_t>(body.generation - predictedGeneration));
    codeSigned(side, m.generation, generationResidual);
    if constexpr (Side::kDecoding)
    {
        body.generation = predictedGeneration + static_cast<std::uint32_t>(generationResidual);
        if (body.generation == 0)
        {
            return CodecError::BadGeneration;
        }
    }
    bool atRest = body.atRest;
    side.bit(m.createdAtRest, atRest);
    body.atRest = atRest;

    for (std::size_t a = 0; a < 3; ++a)
    {
        const std::int64_t top = limits.maxPosition[a];
        // Bodies created together are often laid out regularly (a grid, a stack): continue the step from the
        // body before the previous one to the previous one.
        std::int64_t predicted = top / 2;
        if (previous != nullptr)
        {
            predicted = previous->position[a];
            if (beforePrevious != nullptr)
            {
                predicted = std::clamp<std::int64_t>(2 * predicted - beforePrevious->position[a], 0, top);
            }
        }
        std::int64_t residual = Side::kDecoding ? 0 : static_cast<std::int64_t>(body.position[a]) - predicted;
        codeSigned(side, m.createdPosition[a == 1 ? 1 : 0], residual);
        if constexpr (Side::kDecoding)
        {
            const std::int64_t value = predicted + residual;
            if (value < 0 || value > top)
            {
                return CodecError::ValueOutOfRange;
            }
            body.position[a] = static_cast<std::uint32_t>(value);
        }
    }

    std::uint8_t largest = body.largest;
    codeTwoBits(side, m.createdLargest, largest);
    body.largest = largest;
    const bool samePrevious = previous != nullptr && previous->largest == largest;
    std::array<std::int64_t, 3> k{};
    for (std::size_t a = 0; a < 3; ++a)
    {
        const std::int64_t predicted = samePrevious ? orientationComponent(previous->orientation[a]) : 0;
        std::int64_t residual = Side::kDecoding ? 0 : orientationComponent(body.orientation[a]) - predicted;
        codeSigned(side, m.createdOrientation, residual);
        k[a] = predicted + residual;
        if (Side::kDecoding && (k[a] < -kOrientationComponentMax || k[a] > kOrientationComponentMax))
        {
            return CodecError::ValueOutOfRange;
        }
    }
    if constexpr (Side::kDecoding)
    {
        if (lengthSquared(k) > kOrientationNormSquared)
        {
            return CodecError::ValueOutOfRange;
        }
        for (std::size_t a = 0; a < 3; ++a)
        {
            body.orientation[a] = static_cast<std::uint16_t>(k[a] + kOrientationComponentMax);
        }
    }
    return CodecError::None;
}

/// Bodies of a sorted frame with ids in [firstId, endId).
std::span<const QuantizedBody> idRange(std::span<const QuantizedBody> bodies, std::uint32_t firstId,
                                       std::uint64_t endId)
{
    const auto byId = [](const QuantizedBody& b, std::uint64_t id) { return b.id < id; };
    const auto begin =
        std::lower_bound(bodies.begin(), bodies.end(), static_cast<std::uint64_t>(firstId), byId);
    const auto end = std::lower_bound(begin, bodies.end(), endId, byId);
    return {begin, end};
}

/// Rough cost of a created body without predecessor, and of a residual, in 1/8 bit (for choosing slice
/// boundaries only).
constexpr std::uint32_t kCreatedEighths = 40 * 8;
std::uint32_t residualEighths(std::int64_t residual)
{
    const auto magnitude = static_cast<std::uint64_t>(residual < 0 ? -residual : residual);
    return magnitude == 0 ? 4u : static_cast<std::uint32_t>(8 * (2 * floorLog2(magnitude) + 2));
}

/// Walks a sorted frame forward to the body with `id` and `generation`, if any.
class ForwardLookup
{
  public:
    explicit ForwardLookup(std::span<const QuantizedBody> bodies) : m_bodies(bodies) {}
    const QuantizedBody* find(std::uint32_t id)
    {
        while (m_next < m_bodies.size() && m_bodies[m_next].id < id)
        {
            ++m_next;
        }
        return m_next < m_bodies.size() && m_bodies[m_next].id == id ? &m_bodies[m_next] : nullptr;
    }
    const QuantizedBody* find(std::uint32_t id, std::uint32_t generation)
    {
        const QuantizedBody* body = find(id);
        return body != nullptr && body->generation == generation ? body : nullptr;
    }

  private:
    std::span<const QuantizedBody> m_bodies;
    std::size_t m_next = 0;
};

/// Ids strictly increasing, generations non-zero, every code in range: what encode() requires.
bool validBodies(const CodeLimits& limits, std::span<const QuantizedBody> bodies)
{
    for (std::size_t i = 0; i < bodies.size(); ++i)
    {
        const QuantizedBody& body = bodies[i];
        if ((i > 0 && bodies[i - 1].id >= body.id) || body.generation == 0 || body.largest > 3 ||
            body.position[0] > limits.maxPosition[0] || body.position[1] > limits.maxPosition[1] ||
            body.position[2] > limits.maxPosition[2])
        {
            return false;
        }
        const std::int32_t k0 = orientationComponent(body.orientation[0]);
        const std::int32_t k1 = orientationComponent(body.orientation[1]);
        const std::int32_t k2 = orientationComponent(body.orientation[2]);
        // Codes above 2K give |k| > K, and then the squared length exceeds 2 K^2 unless the others are small:
        // check the codes themselves too.
        if (body.orientation[0] > kOrientationCodeMax || body.orientation[1] > kOrientationCodeMax ||
            body.orientation[2] > kOrientationCodeMax ||
            k0 * k0 + k1 * k1 + k2 * k2 > kOrientationNormSquared)
        {
            return false;
        }
    }
    return true;
}

bool validConfig(const SnapshotCodecConfig& config)
{
    return config.position.isValid() && config.maxBodies >= 1 && config.maxBodies <= (1u << 24) &&
           config.maxBaselineAgeTicks >= 1 && config.maxSlicePayloadBytes >= 64;
}

} // namespace

// ------------------------------------------------------------------------------------------ public helpers

const char* codecErrorName(CodecError error)
{
    switch (error)
    {
    case CodecError::None:
        return "none";
    case CodecError::Truncated:
        return "truncated";
    case CodecError::BadHeader:
        return "bad_header";
    case CodecError::MissingBaseline:
        return "missing_baseline";
    case CodecError::TooManyBodies:
        return "too_many_bodies";
    case CodecError::BadBodyId:
        return "bad_body_id";
    case CodecError::BadGeneration:
        return "bad_generation";
    case CodecError::ValueOutOfRange:
        return "value_out_of_range";
    case CodecError::Corrupt:
        return "corrupt";
    case CodecError::ChecksumMismatch:
        return "checksum_mismatch";
    case CodecError::InvalidInput:
        return "invalid_input";
    case CodecError::PayloadTooLarge:
        return "payload_too_large";
    case CodecError::Count:
        break;
    }
    return "unknown";
}

std::uint32_t quantizedStateChecksum(std::span<const QuantizedBody> bodies)
{
    if constexpr (std::endian::native == std::endian::little)
    {
        // The struct is the record, byte for byte (static_asserts in the header): hash it in one go.
        return crc32({reinterpret_cast<const std::uint8_t*>(bodies.data()), bodies.size_bytes()});
    }
    else
    {
        std::uint32_t crc = 0;
        for (const QuantizedBody& body : bodies)
        {
            std::array<std::uint8_t, sizeof(QuantizedBody)> record{};
            std::size_t at = 0;
            const auto put = [&](std::uint32_t value, int bytes)
            {
                for (int i = 0; i < bytes; ++i)
                {
                    record[at++] = static_cast<std::uint8_t>(value >> (8 * i));
                }
            };
            put(body.id, 4);
            put(body.generation, 4);
            for (const std::uint32_t code : body.position)
            {
                put(code, 4);
            }
            for (const std::uint16_t code : body.orientation)
            {
                put(code, 2);
            }
            put(body.largest, 1);
            put(body.atRest ? 1u : 0u, 1);
            crc = crc32(record, crc);
        }
        return crc;
    }
}

QuantizedBody quantizeBody(const PositionQuantization& config, std::uint32_t id, std::uint32_t generation,
                           bool atRest, const std::array<float, 3>& positionMetres,
                           const std::array<float, 4>& orientationXyzw, bool* clamped)
{
    const QuantizedPosition position = quantizePosition(config, positionMetres);
    const QuantizedOrientation orientation = quantizeOrientation(orientationXyzw);
    if (clamped != nullptr)
    {
        *clamped = position.clamped;
    }
    QuantizedBody body;
    body.id = id;
    body.generation = generation;
    body.position = position.codes;
    body.orientation = orientation.codes;
    body.largest = orientation.largest;
    body.atRest = atRest;
    return body;
}

void updateUnchangedSince(const SnapshotFrame& previous, const SnapshotFrame& current,
                          std::vector<std::uint64_t>& since)
{
    since.resize(current.bodies.size());
    const bool previousHasSince = previous.unchangedSince.size() == previous.bodies.size();
    std::size_t j = 0;
    for (std::size_t i = 0; i < current.bodies.size(); ++i)
    {
        const QuantizedBody& body = current.bodies[i];
        while (j < previous.bodies.size() && previous.bodies[j].id < body.id)
        {
            ++j;
        }
        const bool same = j < previous.bodies.size() && previous.bodies[j].id == body.id &&
                          previous.bodies[j].generation == body.generation &&
                          previous.bodies[j].sameState(body);
        since[i] = same ? (previousHasSince ? previous.unchangedSince[j] : previous.tick) : current.tick;
    }
}

QuantizedOrientation reexpressOrientation(const QuantizedOrientation& orientation, std::uint8_t newLargest)
{
    if (newLargest == orientation.largest || newLargest > 3 || orientation.largest > 3)
    {
        return orientation;
    }
    // The whole quaternion in units of the component step: the three integers and the dropped one rounded.
    const auto k = components(orientation);
    std::array<std::int64_t, 4> full{};
    std::size_t next = 0;
    for (std::size_t i = 0; i < 4; ++i)
    {
        full[i] =
            i == orientation.largest ? roundedSqrt(kOrientationNormSquared - lengthSquared(k)) : k[next++];
    }
    const std::int64_t sign = full[newLargest] < 0 ? -1 : 1;
    QuantizedOrientation out;
    out.largest = newLargest;
    next = 0;
    for (std::size_t i = 0; i < 4; ++i)
    {
        if (i != newLargest)
        {
            const std::int64_t value =
                std::clamp<std::int64_t>(sign * full[i], -kOrientationComponentMax, kOrientationComponentMax);
            out.codes[next++] = static_cast<std::uint16_t>(value + kOrientationComponentMax);
        }
    }
    return out;
}

SliceHeaderResult readSliceHeader(const SnapshotCodecConfig& config, std::span<const std::uint8_t> payload)
{
    SliceHeaderResult result;
    SliceHeader& h = result.header;
    BitReader reader(payload);
    h.hasBaseline = reader.readBool();
    h.hasReference = reader.readBool();
    const bool last = reader.readBool();
    std::uint64_t baselineAge = 0;
    std::uint64_t referenceGap = 0;
    if (h.hasBaseline)
    {
        baselineAge = static_cast<std::uint64_t>(reader.readVarUint()) + 1u;
    }
    std::uint64_t deceleration = 0;
    if (h.hasReference)
    {
        referenceGap = static_cast<std::uint64_t>(reader.readVarUint()) + 1u;
        deceleration = reader.readVarUint();
    }
    h.firstId = reader.readVarUint();
    h.endId = last ? kIdSpace : static_cast<std::uint64_t>(h.firstId) + reader.readVarUint() + 1u;
    reader.alignToByte();
    for (int byte = 0; byte < 4; ++byte)
    {
        h.checksum |= reader.readBits(8) << (8 * byte); // little-endian
    }
    if (reader.failed())
    {
        result.error = CodecError::Truncated;
        return result;
    }
    h.headerBytes = reader.bytesRead();
    if ((h.hasReference && !h.hasBaseline) || h.endId > kIdSpace ||
        baselineAge + referenceGap > config.maxBaselineAgeTicks || deceleration > kMaxDeceleration)
    {
        result.error = CodecError::BadHeader;
        return result;
    }
    h.baselineAge = static_cast<std::uint32_t>(baselineAge);
    h.referenceGap = static_cast<std::uint32_t>(referenceGap);
    h.deceleration = static_cast<std::uint32_t>(deceleration);
    return result;
}

// ------------------------------------------------------------------------------------------------ encoder

SnapshotEncoder::SnapshotEncoder(const SnapshotCodecConfig& config) : m_config(config) {}

void SnapshotEncoder::classify(const SnapshotFrame& current, const SnapshotFrame* baseline,
                               const SnapshotFrame* reference)
{
    // One walk over the two id-sorted lists. A current body is kept (same id and generation in the
    // baseline), replaces a baseline body (same id, new generation) or is new; a baseline body is kept or
    // removed. Kept bodies are classified at once (motion class; changed or not), using the caller's
    // unchanged-since ticks where they settle it: a body unchanged since the reference (or, without one,
    // the baseline) and asleep is quiet and unchanged.
    const std::span<const QuantizedBody> now = current.bodies;
    const std::span<const QuantizedBody> before =
        baseline ? baseline->bodies : std::span<const QuantizedBody>{};
    const std::int64_t referenceGap =
        reference ? static_cast<std::int64_t>(baseline->tick - reference->tick) : 1;
    m_baselineKept.assign(before.size(), 0);
    m_quietBefore.resize(now.size() + 1);
    m_createdBodies.clear();
    m_keptBodies.clear();
    std::uint32_t removed = 0;
    std::uint32_t changed = 0;
    std::uint32_t quiet = 0;
    const std::span<const std::uint64_t> since = current.unchangedSince;
    const std::uint64_t settledTick = reference ? reference->tick : (baseline ? baseline->tick : 0);
    ForwardLookup referenceLookup(reference ? reference->bodies : std::span<const QuantizedBody>{});
    std::size_t j = 0;
    for (std::size_t i = 0; i < now.size(); ++i)
    {
        m_quietBefore[i] = quiet;
        const QuantizedBody& c = now[i];
        while (j < before.size() && before[j].id < c.id)
        {
            ++j;
            ++removed;
        }
        if (j >= before.size() || before[j].id != c.id)
        {
            m_createdBodies.push_back({static_cast<std::uint32_t>(i), Match::kNone});
            continue;
        }
        if (before[j].generation != c.generation)
        {
            m_createdBodies.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j)});
            ++j;
            ++removed;
            continue;
        }
        const QuantizedBody& b = before[j];
        m_baselineKept[j++] = 1;
        if (!since.empty() && b.atRest && since[i] <= settledTick)
        {
            ++quiet; // quiet and unchanged: only counted
            continue;
        }
        KeptBody kept{static_cast<std::uint32_t>(i),
                      static_cast<std::uint32_t>(j - 1),
                      nullptr,
                      quiet,
                      kStillResting,
                      false};
        kept.reference = referenceLookup.find(b.id, b.generation);
        kept.motionClass = static_cast<std::uint8_t>(motionClassOf(b, kept.reference, referenceGap));
        kept.changed = !c.sameState(b);
        changed += kept.changed ? 1u : 0u;
        if (isQuiet(kept.motionClass))
        {
            ++quiet;
            if (!kept.changed)
            {
                continue;
            }
        }
        m_keptBodies.push_back(kept); // bodies needing a flag, or a change, coded one by one
    }
    m_quietBefore[now.size()] = quiet;
    removed += static_cast<std::uint32_t>(before.size() - j);
    m_stats.changedBodies = changed;
    m_stats.createdBodies = static_cast<std::uint32_t>(m_createdBodies.size());
    m_stats.removedBodies = removed;
    m_stats.identicalToBaseline =
        baseline != nullptr && changed == 0 && m_createdBodies.empty() && removed == 0;

    // The deceleration of sliding bodies: the median, over the changed bodies that will be extrapolated, of
    // how far short of linear motion each fell along its horizontal direction (any choice decodes; the median
    // ignores bodies that were struck).
    m_deceleration = 0;
    Extrapolation e;
    e.baselineAge = baseline ? static_cast<std::int64_t>(current.tick - baseline->tick) : 0;
    e.referenceGap = referenceGap;
    if (reference != nullptr && e.baselineAge + e.referenceGap <= kDecelerationAgeLimit)
    {
        m_decelerationSamples.clear();
        const double h = static_cast<double>(e.baselineAge);
        const double g = static_cast<double>(e.referenceGap);
        const double perCode = 32.0 / (h * (h + g)); // shortfall in codes -> 1/16 code per tick^2
        for (const KeptBody& kept : m_keptBodies)
        {
            if (!kept.changed || kept.motionClass < kMovingSlowly)
            {
                continue;
            }
            const QuantizedBody& b = before[kept.baselineIndex];
            const QuantizedBody& c = now[kept.currentIndex];
            const double dx = static_cast<double>(b.position[0]) - kept.reference->position[0];
            const double dz = static_cast<double>(b.position[2]) - kept.reference->position[2];
            const double speed = std::sqrt(dx * dx + dz * dz);
            if (speed <= 0.0)
            {
                continue;
            }
            const double ex = static_cast<double>(c.position[0]) - (b.position[0] + dx * h / g);
            const double ez = static_cast<double>(c.position[2]) - (b.position[2] + dz * h / g);
            m_decelerationSamples.push_back(static_cast<float>(-(ex * dx + ez * dz) / speed * perCode));
        }
        if (!m_decelerationSamples.empty())
        {
            const auto middle =
                m_decelerationSamples.begin() + static_cast<std::ptrdiff_t>(m_decelerationSamples.size() / 2);
            std::nth_element(m_decelerationSamples.begin(), middle, m_decelerationSamples.end());
            const float median = std::round(*middle);
            m_deceleration =
                median <= 0.0f
                    ? 0u
                    : static_cast<std::uint32_t>(std::min(median, static_cast<float>(kMaxDeceleration)));
        }
    }
    e.deceleration = m_deceleration;

    // Predict every changed body once for all slices, and estimate what each body will cost (in 1/8 bit),
    // in id order, to choose where to cut without coding the whole snapshot first.
    const CodeLimits limits(m_config.position);
    m_predictions.resize(m_keptBodies.size());
    m_estimatedCosts.clear();
    m_estimatedBits = 0;
    std::size_t nextCreated = 0;
    const auto addCost = [&](std::uint32_t id, std::uint32_t eighths)
    {
        m_estimatedCosts.push_back({id, eighths});
        m_estimatedBits += eighths;
    };
    const QuantizedBody* previous = nullptr; // created bodies, as codeCreated predicts them
    const QuantizedBody* beforePrevious = nullptr;
    const auto addCreated = [&](const QuantizedBody& c)
    {
        std::uint32_t eighths = kCreatedEighths;
        if (previous != nullptr)
        {
            eighths = 8 * 8;
            for (std::size_t a = 0; a < 3; ++a)
            {
                const std::int64_t predicted =
                    beforePrevious != nullptr
                        ? 2 * static_cast<std::int64_t>(previous->position[a]) - beforePrevious->position[a]
                        : previous->position[a];
                eighths += residualEighths(c.position[a] - predicted);
                eighths += c.largest == previous->largest
                               ? residualEighths(static_cast<std::int64_t>(c.orientation[a]) -
                                                 previous->orientation[a])
                               : 12 * 8;
            }
        }
        addCost(c.id, eighths);
        beforePrevious = previous;
        previous = &c;
    };
    for (std::size_t k = 0; k < m_keptBodies.size(); ++k)
    {
        const KeptBody& kept = m_keptBodies[k];
        for (; nextCreated < m_createdBodies.size() &&
               m_createdBodies[nextCreated].currentIndex < kept.currentIndex;
             ++nextCreated)
        {
            addCreated(now[m_createdBodies[nextCreated].currentIndex]);
        }
        if (!kept.changed)
        {
            addCost(now[kept.currentIndex].id, 1);
            continue;
        }
        const QuantizedBody& b = before[kept.baselineIndex];
        const QuantizedBody& c = now[kept.currentIndex];
        Prediction& p = m_predictions[k];
        p = predict(limits, b, kept.reference, kept.motionClass, e);
        std::uint32_t eighths = 4 * 8;
        for (std::size_t a = 0; a < 3; ++a)
        {
            eighths += residualEighths(static_cast<std::int64_t>(c.position[a]) - p.position[a]);
            eighths +=
                c.largest == p.orientation.largest
                    ? residualEighths(static_cast<std::int64_t>(c.orientation[a]) - p.orientation.codes[a])
                    : 10 * 8;
        }
        addCost(c.id, eighths);
    }
    for (; nextCreated < m_createdBodies.size(); ++nextCreated)
    {
        addCreated(now[m_createdBodies[nextCreated].currentIndex]);
    }
}

CodecError SnapshotEncoder::encodeRange(const SnapshotFrame& current, const SnapshotFrame* baseline,
                                        const SnapshotFrame* reference, std::uint32_t firstId,
                                        std::uint64_t endId, std::span<std::uint8_t> out,
                                        std::size_t& written)
{
    written = 0;
    BitWriter header(out);
    const bool last = endId == kIdSpace;
    header.writeBool(baseline != nullptr);
    header.writeBool(reference != nullptr);
    header.writeBool(last);
    if (baseline != nullptr)
    {
        header.writeVarUint(static_cast<std::uint32_t>(current.tick - baseline->tick - 1u));
    }
    if (reference != nullptr)
    {
        header.writeVarUint(static_cast<std::uint32_t>(baseline->tick - reference->tick - 1u));
        header.writeVarUint(m_deceleration);
    }
    header.writeVarUint(firstId);
    if (!last)
    {
        header.writeVarUint(static_cast<std::uint32_t>(endId - firstId - 1u));
    }
    header.alignToByte();
    const std::uint32_t checksum = rangeChecksum(current, baseline, firstId, endId);
    for (int byte = 0; byte < 4; ++byte)
    {
        header.writeBits(checksum >> (8 * byte), 8); // little-endian
    }
    if (header.overflowed())
    {
        return CodecError::PayloadTooLarge;
    }
    const std::size_t headerBytes = header.bytesWritten();

    RangeEncoder coder(out.subspan(headerBytes));
    EncodeSide side(coder);
    Models m{};
    const CodeLimits limits(m_config.position);
    const auto now = idRange(current.bodies, firstId, endId);
    const auto nowBegin = static_cast<std::size_t>(now.data() - current.bodies.data());
    const auto before =
        baseline ? idRange(baseline->bodies, firstId, endId) : std::span<const QuantizedBody>{};
    const auto beforeBegin =
        baseline ? static_cast<std::size_t>(before.data() - baseline->bodies.data()) : std::size_t{0};
    // The range's share of the lists classify() made, all in id order.
    const auto byCurrentId = [&](std::uint32_t index, std::uint64_t id)
    { return current.bodies[index].id < id; };
    const auto createdBegin = std::lower_bound(
        m_createdBodies.begin(), m_createdBodies.end(), static_cast<std::uint64_t>(firstId),
        [&](const Match& match, std::uint64_t id) { return byCurrentId(match.currentIndex, id); });
    const auto createdEnd = std::lower_bound(createdBegin, m_createdBodies.end(), endId,
                                             [&](const Match& match, std::uint64_t id)
                                             { return byCurrentId(match.currentIndex, id); });
    const auto byKeptId = [&](const KeptBody& kept, std::uint64_t id)
    { return byCurrentId(kept.currentIndex, id); };
    const auto keptBegin = std::lower_bound(m_keptBodies.begin(), m_keptBodies.end(),
                                            static_cast<std::uint64_t>(firstId), byKeptId);
    const auto keptEnd = std::lower_bound(keptBegin, m_keptBodies.end(), endId, byKeptId);

    if (baseline != nullptr)
    {
        bool removedAny = false;
        for (std::size_t j = 0; j < before.size() && !removedAny; ++j)
        {
            removedAny = m_baselineKept[beforeBegin + j] == 0;
        }
        side.bit(m.removedAny, removedAny);
        if (removedAny)
        {
            for (std::size_t j = 0; j < before.size(); ++j)
            {
                bool kept = m_baselineKept[beforeBegin + j] != 0;
                side.bit(m.kept, kept);
            }
        }
    }

    std::uint64_t created = static_cast<std::uint64_t>(createdEnd - createdBegin);
    codeUnsigned(side, m.createdCount, created);
    {
        const QuantizedBody* previous = nullptr;
        const QuantizedBody* beforePrevious = nullptr;
        std::uint64_t nextFreeId = firstId;
        for (auto it = createdBegin; it != createdEnd; ++it)
        {
            const QuantizedBody& c = current.bodies[it->currentIndex];
            std::uint64_t gap = c.id - nextFreeId;
            codeUnsigned(side, m.idGap, gap);
            QuantizedBody body = c;
            codeCreated(side, m, limits, previous, beforePrevious,
                        it->replacedIndex != Match::kNone ? &baseline->bodies[it->replacedIndex] : nullptr,
                        body);
            beforePrevious = previous;
            previous = &c;
            nextFreeId = static_cast<std::uint64_t>(c.id) + 1u;
            if (coder.overflowed())
            {
                return CodecError::PayloadTooLarge; // no need to finish: the caller cuts
            }
        }
    }

    // Which quiet bodies changed: their count, then the number of unchanged quiet bodies before each.
    {
        std::uint64_t count = 0;
        for (auto it = keptBegin; it != keptEnd; ++it)
        {
            count += isQuiet(it->motionClass) ? 1u : 0u;
        }
        codeUnsigned(side, m.quietChangedCount, count);
        std::uint64_t nextQuiet = m_quietBefore[nowBegin];
        for (auto it = keptBegin; it != keptEnd && count != 0; ++it)
        {
            if (isQuiet(it->motionClass))
            {
                std::uint64_t run = it->quietOrdinal - nextQuiet;
                codeUnsigned(side, m.quietRun, run);
                nextQuiet = it->quietOrdinal + 1u;
            }
        }
    }
    // Then, in id order: a flag for every body that is not quiet, and how each changed body changed.
    {
        bool previousChanged = false;
        for (auto it = keptBegin; it != keptEnd; ++it)
        {
            const KeptBody& kept = *it;
            const QuantizedBody& c = current.bodies[kept.currentIndex];
            if (!isQuiet(kept.motionClass))
            {
                bool bodyChanged = kept.changed;
                side.bit(m.changed[kept.motionClass][previousChanged ? 1 : 0], bodyChanged);
                previousChanged = bodyChanged;
            }
            if (kept.changed)
            {
                QuantizedBody body = c;
                codeChangedBody(side, m, limits, kept.motionClass, baseline->bodies[kept.baselineIndex],
                                m_predictions[static_cast<std::size_t>(it - m_keptBodies.begin())], body);
                if (coder.overflowed())
                {
                    return CodecError::PayloadTooLarge;
                }
            }
        }
    }
    const std::size_t codedBytes = coder.finish();
    if (coder.overflowed())
    {
        return CodecError::PayloadTooLarge;
    }
    written = headerBytes + codedBytes;
    return CodecError::None;
}

std::uint32_t SnapshotEncoder::rangeChecksum(const SnapshotFrame& current, const SnapshotFrame* baseline,
                                             std::uint32_t firstId, std::uint64_t endId)
{
    RangeChecksumCache* cache = current.checksums;
    if (cache != nullptr)
    {
        if (const RangeChecksumCache::Entry* known = cache->find(firstId, endId))
        {
            return known->checksum;
        }
    }
    // Identical to the baseline: the same bodies, so the same checksum, if the baseline's is known.
    const RangeChecksumCache::Entry* same = m_stats.identicalToBaseline && baseline && baseline->checksums
                                                ? baseline->checksums->find(firstId, endId)
                                                : nullptr;
    const std::uint32_t checksum =
        same ? same->checksum : quantizedStateChecksum(idRange(current.bodies, firstId, endId));
    if (cache != nullptr && cache->entries.size() < RangeChecksumCache::kMaxEntries)
    {
        cache->entries.push_back({firstId, endId, checksum});
    }
    return checksum;
}

CodecError SnapshotEncoder::encodeSplit(const SnapshotFrame& current, const SnapshotFrame* baseline,
                                        const SnapshotFrame* reference, std::uint32_t firstId,
                                        std::uint64_t endId, int depth)
{
    const std::size_t capacity = m_config.maxSlicePayloadBytes;
    if (m_buffer.size() < m_used + capacity)
    {
        m_buffer.resize(m_used + capacity);
    }
    std::size_t written = 0;
    const CodecError error =
        encodeRange(current, baseline, reference, firstId, endId,
                    std::span<std::uint8_t>(m_buffer).subspan(m_used, capacity), written);
    if (error == CodecError::None)
    {
        m_sliceOffsets.push_back(m_used);
        m_slices.push_back(
            {{}, firstId, endId, static_cast<std::uint32_t>(idRange(current.bodies, firstId, endId).size())});
        m_slices.back().payload =
            std::span<const std::uint8_t>(m_buffer.data() + m_used, written); // fixed up later
        m_used += written;
        return CodecError::None;
    }
    if (error != CodecError::PayloadTooLarge || depth > 64)
    {
        return error;
    }
    // Too big: cut at the boundary between two ids where the estimated cost of [firstId, endId) is halved.
    const auto byId = [](const BodyCost& cost, std::uint64_t id) { return cost.id < id; };
    const auto begin = std::lower_bound(m_estimatedCosts.begin(), m_estimatedCosts.end(),
                                        static_cast<std::uint64_t>(firstId), byId);
    const auto end = std::lower_bound(begin, m_estimatedCosts.end(), endId, byId);
    std::uint64_t total = 0;
    for (auto it = begin; it != end; ++it)
    {
        total += it->eighths;
    }
    std::uint64_t running = 0;
    std::uint64_t bestImbalance = ~0ull;
    std::uint32_t cutId = firstId;
    for (auto it = begin; it != end; ++it)
    {
        if (it != begin && it->id != (it - 1)->id)
        {
            const std::uint64_t imbalance = 2 * running > total ? 2 * running - total : total - 2 * running;
            if (imbalance < bestImbalance)
            {
                bestImbalance = imbalance;
                cutId = it->id;
            }
        }
        running += it->eighths;
    }
    if (cutId == firstId)
    {
        return CodecError::PayloadTooLarge; // one id alone does not fit: the config's slice budget is too
                                            // small
    }
    const CodecError low = encodeSplit(current, baseline, reference, firstId, cutId, depth + 1);
    if (low != CodecError::None)
    {
        return low;
    }
    return encodeSplit(current, baseline, reference, cutId, endId, depth + 1);
}

CodecError SnapshotEncoder::encode(const SnapshotFrame& current, const SnapshotFrame* baseline,
                                   const SnapshotFrame* reference)
{
    m_slices.clear();
    m_sliceOffsets.clear();
    m_used = 0;
    m_stats = {};
    if (!validConfig(m_config) || (reference != nullptr && baseline == nullptr))
    {
        return CodecError::InvalidInput;
    }
    if (baseline != nullptr &&
        (baseline->tick >= current.tick || current.tick - baseline->tick > m_config.maxBaselineAgeTicks))
    {
        return CodecError::InvalidInput;
    }
    if (reference != nullptr &&
        (reference->tick >= baseline->tick || current.tick - reference->tick > m_config.maxBaselineAgeTicks))
    {
        return CodecError::InvalidInput;
    }
    if (current.bodies.size() > m_config.maxBodies)
    {
        return CodecError::TooManyBodies;
    }
    if (!current.unchangedSince.empty() && current.unchangedSince.size() != current.bodies.size())
    {
        return CodecError::InvalidInput;
    }
    // The same snapshot is typically encoded for every client in turn: check it once.
    const bool alreadyValidated = m_validated.data == current.bodies.data() &&
                                  m_validated.size == current.bodies.size() &&
                                  m_validated.tick == current.tick;
    if (!alreadyValidated)
    {
        if (!validBodies(CodeLimits(m_config.position), current.bodies))
        {
            return CodecError::InvalidInput;
        }
        m_validated = {current.bodies.data(), current.bodies.size(), current.tick};
    }
    classify(current, baseline, reference);

    // The whole snapshot as one payload, straight into the output; unless the estimate says it will not fit,
    // or it overflows: then cut into slices by the estimated costs. (The estimate runs about a quarter high
    // on moving scenes: scaled, and trusted only when clearly over; for created bodies, which the coder
    // learns to predict well, it runs far too high: full snapshots are always tried whole.)
    const std::size_t budget = m_config.maxSlicePayloadBytes;
    const std::uint64_t estimatedBytes = m_estimatedBits * 13 / (16 * 64);
    if (m_buffer.size() < budget)
    {
        m_buffer.resize(budget);
    }
    if (estimatedBytes <= budget + budget / 4 || baseline == nullptr)
    {
        std::size_t written = 0;
        const CodecError error = encodeRange(current, baseline, reference, 0, kIdSpace,
                                             std::span<std::uint8_t>(m_buffer).first(budget), written);
        if (error == CodecError::None)
        {
            m_slices.push_back({std::span<const std::uint8_t>(m_buffer.data(), written), 0, kIdSpace,
                                static_cast<std::uint32_t>(current.bodies.size())});
            m_stats.payloadBytes = written;
            return CodecError::None;
        }
        if (error != CodecError::PayloadTooLarge)
        {
            return error;
        }
    }

    // Too big for one datagram: cut into as few ranges as should fit, of equal estimated cost, with a margin
    // (models start afresh in each slice, which costs a little); halve any that does not fit.
    const std::uint64_t sliceBudget = static_cast<std::uint64_t>(budget) * 7 / 8;
    const std::uint64_t sliceCount =
        std::max<std::uint64_t>(2, (estimatedBytes + sliceBudget - 1) / sliceBudget);
    const std::uint64_t target = (m_estimatedBits + sliceCount - 1) / sliceCount;
    std::uint64_t running = 0;
    std::uint64_t sliceStart = 0;
    std::uint64_t cuts = 0;
    for (const BodyCost& cost : m_estimatedCosts)
    {
        if (cuts + 1 < sliceCount && running > 0 && running + cost.eighths / 2 > target &&
            cost.id > sliceStart)
        {
            ++cuts;
            const CodecError e =
                encodeSplit(current, baseline, reference, static_cast<std::uint32_t>(sliceStart), cost.id, 0);
            if (e != CodecError::None)
            {
                m_slices.clear();
                return e;
            }
            sliceStart = cost.id;
            running = 0;
        }
        running += cost.eighths;
    }
    const CodecError e =
        encodeSplit(current, baseline, reference, static_cast<std::uint32_t>(sliceStart), kIdSpace, 0);
    if (e != CodecError::None)
    {
        m_slices.clear();
        return e;
    }
    // m_buffer may have moved while growing: point the slices at their final place.
    for (std::size_t i = 0; i < m_slices.size(); ++i)
    {
        m_slices[i].payload =
            std::span<const std::uint8_t>(m_buffer.data() + m_sliceOffsets[i], m_slices[i].payload.size());
        m_stats.payloadBytes += m_slices[i].payload.size();
    }
    return CodecError::None;
}

// ------------------------------------------------------------------------------------------------ decoder

SnapshotDecoder::SnapshotDecoder(const SnapshotCodecConfig& config) : m_config(config) {}

CodecError SnapshotDecoder::decode(std::span<const std::uint8_t> payload, std::uint64_t currentTick,
                                   const SnapshotFrame* baseline, const SnapshotFrame* reference)
{
    m_bodies.clear();
    m_kept.clear();
    m_keptInfo.clear();
    m_created.clear();
    if (!validConfig(m_config))
    {
        return CodecError::InvalidInput;
    }
    const SliceHeaderResult headerResult = readSliceHeader(m_config, payload);
    if (!headerResult.ok())
    {
        return headerResult.error;
    }
    m_header = headerResult.header;
    const SliceHeader& h = m_header;
    if (h.hasBaseline != (baseline != nullptr) || h.hasReference != (reference != nullptr) ||
        (baseline != nullptr &&
         (currentTick < h.baselineAge || baseline->tick != currentTick - h.baselineAge)) ||
        (reference != nullptr &&
         (baseline->tick < h.referenceGap || reference->tick != baseline->tick - h.referenceGap)))
    {
        return CodecError::MissingBaseline;
    }
    RangeDecoder coder(payload.subspan(h.headerBytes));
    if (coder.corrupt())
    {
        return CodecError::Corrupt;
    }
    DecodeSide side(coder);
    Models m{};
    const CodeLimits limits(m_config.position);
    const auto before =
        baseline ? idRange(baseline->bodies, h.firstId, h.endId) : std::span<const QuantizedBody>{};
    const std::uint64_t idCount = h.endId - h.firstId;

    bool removedAny = false;
    if (baseline != nullptr)
    {
        side.bit(m.removedAny, removedAny);
    }
    for (const QuantizedBody& b : before)
    {
        bool kept = true;
        if (removedAny)
        {
            side.bit(m.kept, kept);
        }
        if (kept)
        {
            if (m_kept.size() >= m_config.maxBodies)
            {
                return CodecError::TooManyBodies;
            }
            m_kept.push_back(b);
        }
    }

    std::uint64_t created = 0;
    codeUnsigned(side, m.createdCount, created);
    const std::uint64_t roomInRange = idCount > m_kept.size() ? idCount - m_kept.size() : 0;
    if (created > m_config.maxBodies - m_kept.size() || created > roomInRange)
    {
        return CodecError::TooManyBodies;
    }
    {
        ForwardLookup kept(m_kept);
        ForwardLookup sameId(before);
        std::uint64_t nextFreeId = h.firstId;
        for (std::uint64_t i = 0; i < created; ++i)
        {
            std::uint64_t gap = 0;
            codeUnsigned(side, m.idGap, gap);
            const std::uint64_t id = nextFreeId + gap;
            if (id >= h.endId)
            {
                return CodecError::BadBodyId;
            }
            if (kept.find(static_cast<std::uint32_t>(id)) != nullptr)
            {
                return CodecError::BadBodyId; // a body cannot be kept and created at once
            }
            QuantizedBody body;
            body.id = static_cast<std::uint32_t>(id);
            const std::size_t n = m_created.size();
            const QuantizedBody* previous = n >= 1 ? &m_created[n - 1] : nullptr;
            const QuantizedBody* beforePrevious = n >= 2 ? &m_created[n - 2] : nullptr;
            const CodecError error =
                codeCreated(side, m, limits, previous, beforePrevious, sameId.find(body.id), body);
            if (error != CodecError::None)
            {
                return error;
            }
            m_created.push_back(body);
            nextFreeId = id + 1u;
        }
    }

    const auto baselineAge = static_cast<std::int64_t>(h.baselineAge);
    const auto referenceGap = static_cast<std::int64_t>(h.hasReference ? h.referenceGap : 1u);
    Extrapolation extrapolation;
    extrapolation.baselineAge = baselineAge;
    extrapolation.referenceGap = referenceGap;
    extrapolation.deceleration = baselineAge + referenceGap <= kDecelerationAgeLimit ? h.deceleration : 0;
    m_keptInfo.resize(m_kept.size());
    std::uint64_t quietCount = 0;
    {
        ForwardLookup referenceLookup(reference ? reference->bodies : std::span<const QuantizedBody>{});
        for (std::size_t i = 0; i < m_kept.size(); ++i)
        {
            KeptInfo& info = m_keptInfo[i];
            info.reference = referenceLookup.find(m_kept[i].id, m_kept[i].generation);
            info.motionClass =
                static_cast<std::uint8_t>(motionClassOf(m_kept[i], info.reference, referenceGap));
            info.changed = false;
            quietCount += isQuiet(info.motionClass) ? 1u : 0u;
        }
    }
    {
        std::uint64_t quietChanged = 0;
        codeUnsigned(side, m.quietChangedCount, quietChanged);
        if (quietChanged > quietCount)
        {
            return CodecError::Corrupt;
        }
        std::size_t next = 0;
        for (std::uint64_t n = 0; n < quietChanged; ++n)
        {
            std::uint64_t run = 0;
            codeUnsigned(side, m.quietRun, run);
            // Skip `run` unchanged quiet bodies; the next quiet one changed.
            for (;; ++next)
            {
                if (next >= m_keptInfo.size())
                {
                    return CodecError::Corrupt;
                }
                if (!isQuiet(m_keptInfo[next].motionClass))
                {
                    continue;
                }
                if (run == 0)
                {
                    break;
                }
                --run;
            }
            m_keptInfo[next++].changed = true;
        }
    }
    {
        bool previousChanged = false;
        for (std::size_t i = 0; i < m_kept.size(); ++i)
        {
            KeptInfo& info = m_keptInfo[i];
            if (!isQuiet(info.motionClass))
            {
                bool bodyChanged = false;
                side.bit(m.changed[info.motionClass][previousChanged ? 1 : 0], bodyChanged);
                previousChanged = bodyChanged;
                info.changed = bodyChanged;
            }
            if (info.changed)
            {
                const QuantizedBody base = m_kept[i];
                const Prediction p = predict(limits, base, info.reference, info.motionClass, extrapolation);
                const CodecError error =
                    codeChangedBody(side, m, limits, info.motionClass, base, p, m_kept[i]);
                if (error != CodecError::None)
                {
                    return error;
                }
            }
        }
    }

    m_bodies.resize(m_kept.size() + m_created.size());
    std::merge(m_kept.begin(), m_kept.end(), m_created.begin(), m_created.end(), m_bodies.begin(),
               [](const QuantizedBody& a, const QuantizedBody& b) { return a.id < b.id; });
    if (m_fault)
    {
        m_fault(currentTick, h, m_bodies);
    }
    if (quantizedStateChecksum(m_bodies) != h.checksum)
    {
        m_bodies.clear();
        return CodecError::ChecksumMismatch;
    }
    return CodecError::None;
}

void SnapshotDecoder::keptCoding(std::vector<KeptCoding>& out) const
{
    out.clear();
    const std::size_t count = std::min(m_kept.size(), m_keptInfo.size());
    for (std::size_t i = 0; i < count; ++i)
    {
        out.push_back({m_kept[i].id, m_keptInfo[i].motionClass, m_keptInfo[i].changed});
    }
}

} // namespace polytope::protocol

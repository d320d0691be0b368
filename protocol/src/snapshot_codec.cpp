#include "polytope/protocol/snapshot_codec.h"

#include <algorithm>
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

struct Prediction
{
    std::array<std::int64_t, 3> position{};
    QuantizedOrientation orientation;               ///< in the baseline's smallest-three frame
    std::uint8_t predictedLargest = 3;              ///< largestComponent(orientation)
    std::array<std::uint8_t, 3> positionTrend{};    ///< trendOf(baseline - reference), per axis
    std::array<std::uint8_t, 3> orientationTrend{}; ///< the same per component, in the baseline's frame
};

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
Prediction predict(const CodeLimits& limits, const QuantizedBody& base, const QuantizedBody* reference,
                   int motionClass, std::int64_t baselineAge, std::int64_t referenceGap)
{
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
    for (std::size_t a = 0; a < 3; ++a)
    {
        const std::int64_t dp = static_cast<std::int64_t>(base.position[a]) - reference->position[a];
        p.position[a] = std::clamp<std::int64_t>(
            base.position[a] + divideRounded(dp * baselineAge, referenceGap), 0, limits.maxPosition[a]);
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
                           const QuantizedBody* reference, std::int64_t baselineAge,
                           std::int64_t referenceGap, QuantizedBody& body)
{
    const Prediction p = predict(limits, base, reference, c, baselineAge, referenceGap);
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

/// A created body's generation and state (its id is coded by the caller), predicted from the previous created
/// body of the slice (or fixed values for the first) and, for the generation, from a removed body of the same
/// id.
template <class Side>
CodecError codeCreated(Side& side, Models& m, const CodeLimits& limits, const QuantizedBody* previous,
                       const QuantizedBody* replaced, QuantizedBody& body)
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
        const std::int64_t predicted =
            previous != nullptr ? static_cast<std::int64_t>(previous->position[a]) : top / 2;
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
    case CodecError::InvalidInput:
        return "invalid_input";
    case CodecError::PayloadTooLarge:
        return "payload_too_large";
    case CodecError::Count:
        break;
    }
    return "unknown";
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
    if (h.hasReference)
    {
        referenceGap = static_cast<std::uint64_t>(reader.readVarUint()) + 1u;
    }
    h.firstId = reader.readVarUint();
    h.endId = last ? kIdSpace : static_cast<std::uint64_t>(h.firstId) + reader.readVarUint() + 1u;
    reader.alignToByte();
    if (reader.failed())
    {
        result.error = CodecError::Truncated;
        return result;
    }
    h.headerBytes = reader.bytesRead();
    if ((h.hasReference && !h.hasBaseline) || h.endId > kIdSpace ||
        baselineAge + referenceGap > config.maxBaselineAgeTicks)
    {
        result.error = CodecError::BadHeader;
        return result;
    }
    h.baselineAge = static_cast<std::uint32_t>(baselineAge);
    h.referenceGap = static_cast<std::uint32_t>(referenceGap);
    return result;
}

// ------------------------------------------------------------------------------------------------ encoder

SnapshotEncoder::SnapshotEncoder(const SnapshotCodecConfig& config) : m_config(config) {}

CodecError SnapshotEncoder::encodeRange(const SnapshotFrame& current, const SnapshotFrame* baseline,
                                        const SnapshotFrame* reference, std::uint32_t firstId,
                                        std::uint64_t endId, std::span<std::uint8_t> out,
                                        std::size_t& written, bool recordStats, bool recordCosts)
{
    written = 0;
    BitWriter header(out);
    const bool last = endId == kIdSpace;
    header.writeBool(baseline != nullptr);
    header.writeBool(reference != nullptr);
    header.writeBool(last);
    const std::int64_t baselineAge = baseline ? static_cast<std::int64_t>(current.tick - baseline->tick) : 0;
    const std::int64_t referenceGap =
        reference ? static_cast<std::int64_t>(baseline->tick - reference->tick) : 1;
    if (baseline != nullptr)
    {
        header.writeVarUint(static_cast<std::uint32_t>(baselineAge - 1));
    }
    if (reference != nullptr)
    {
        header.writeVarUint(static_cast<std::uint32_t>(referenceGap - 1));
    }
    header.writeVarUint(firstId);
    if (!last)
    {
        header.writeVarUint(static_cast<std::uint32_t>(endId - firstId - 1u));
    }
    header.alignToByte();
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
    const auto before =
        baseline ? idRange(baseline->bodies, firstId, endId) : std::span<const QuantizedBody>{};

    // One walk over the two id-sorted lists. A current body is kept (same id and generation in the
    // baseline), replaces a baseline body (same id, new generation) or is new; a baseline body is kept or
    // removed. Kept bodies are classified at once (motion class; changed or not), using the caller's
    // unchanged-since ticks where they settle it: a body unchanged since the reference (or, without one,
    // the baseline) and asleep is quiet and unchanged.
    m_baselineKept.resize(before.size());
    m_createdBodies.clear();
    m_keptBodies.clear();
    m_quietRuns.clear();
    std::uint32_t removed = 0;
    std::uint32_t changed = 0;
    std::uint32_t quietRun = 0; ///< unchanged quiet bodies since the last changed one
    {
        const std::span<const std::uint64_t> since = current.unchangedSince;
        const auto nowOffset = static_cast<std::size_t>(now.data() - current.bodies.data());
        const std::uint64_t settledTick = reference ? reference->tick : (baseline ? baseline->tick : 0);
        ForwardLookup referenceLookup(reference ? reference->bodies : std::span<const QuantizedBody>{});
        std::size_t j = 0;
        for (std::size_t i = 0; i < now.size(); ++i)
        {
            const QuantizedBody& c = now[i];
            while (j < before.size() && before[j].id < c.id)
            {
                m_baselineKept[j++] = 0;
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
                m_baselineKept[j++] = 0;
                ++removed;
                continue;
            }
            const QuantizedBody& b = before[j];
            m_baselineKept[j++] = 1;
            KeptBody kept{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j - 1), nullptr,
                          kStillResting, false};
            if (!since.empty() && b.atRest && since[nowOffset + i] <= settledTick)
            {
                ++quietRun; // quiet and unchanged: only counted
                continue;
            }
            kept.reference = referenceLookup.find(b.id, b.generation);
            kept.motionClass = static_cast<std::uint8_t>(motionClassOf(b, kept.reference, referenceGap));
            kept.changed = !c.sameState(b);
            changed += kept.changed ? 1u : 0u;
            if (isQuiet(kept.motionClass))
            {
                if (!kept.changed)
                {
                    ++quietRun;
                    continue;
                }
                m_quietRuns.push_back(quietRun);
                quietRun = 0;
            }
            m_keptBodies.push_back(kept); // bodies needing a flag, or a change, coded one by one
        }
        for (; j < before.size(); ++j)
        {
            m_baselineKept[j] = 0;
            ++removed;
        }
    }
    std::uint64_t created = m_createdBodies.size();

    if (baseline != nullptr)
    {
        bool removedAny = removed != 0;
        side.bit(m.removedAny, removedAny);
        if (removedAny)
        {
            for (std::size_t j = 0; j < before.size(); ++j)
            {
                const std::size_t start = recordCosts ? side.approximateBytes() : 0;
                bool kept = m_baselineKept[j] != 0;
                side.bit(m.kept, kept);
                if (recordCosts)
                {
                    m_costs.push_back(
                        {before[j].id, static_cast<std::uint32_t>(side.approximateBytes() - start)});
                }
            }
        }
    }

    codeUnsigned(side, m.createdCount, created);
    {
        const QuantizedBody* previous = nullptr;
        std::uint64_t nextFreeId = firstId;
        for (const Match& match : m_createdBodies)
        {
            const QuantizedBody& c = now[match.currentIndex];
            const std::size_t start = recordCosts ? side.approximateBytes() : 0;
            std::uint64_t gap = c.id - nextFreeId;
            codeUnsigned(side, m.idGap, gap);
            QuantizedBody body = c;
            codeCreated(side, m, limits, previous,
                        match.replacedIndex != Match::kNone ? &before[match.replacedIndex] : nullptr, body);
            previous = &c;
            nextFreeId = static_cast<std::uint64_t>(c.id) + 1u;
            if (recordCosts)
            {
                m_costs.push_back({c.id, static_cast<std::uint32_t>(side.approximateBytes() - start)});
            }
        }
    }

    // Which quiet bodies changed: their count, then the number of unchanged quiet bodies before each.
    {
        std::uint64_t count = m_quietRuns.size();
        codeUnsigned(side, m.quietChangedCount, count);
        for (std::uint64_t run : m_quietRuns)
        {
            codeUnsigned(side, m.quietRun, run);
        }
    }
    // Then, in id order: a flag for every body that is not quiet, and how each changed body changed.
    {
        bool previousChanged = false;
        for (const KeptBody& kept : m_keptBodies)
        {
            const bool quiet = isQuiet(kept.motionClass);
            const QuantizedBody& c = now[kept.currentIndex];
            const QuantizedBody& b = before[kept.baselineIndex];
            const std::size_t start = recordCosts ? side.approximateBytes() : 0;
            if (!quiet)
            {
                bool bodyChanged = kept.changed;
                side.bit(m.changed[kept.motionClass][previousChanged ? 1 : 0], bodyChanged);
                previousChanged = bodyChanged;
            }
            if (kept.changed)
            {
                QuantizedBody body = c;
                codeChangedBody(side, m, limits, kept.motionClass, b, kept.reference, baselineAge,
                                referenceGap, body);
            }
            if (recordCosts)
            {
                m_costs.push_back({c.id, static_cast<std::uint32_t>(side.approximateBytes() - start)});
            }
        }
    }
    const std::size_t codedBytes = coder.finish();
    if (coder.overflowed())
    {
        return CodecError::PayloadTooLarge;
    }
    written = headerBytes + codedBytes;
    if (recordStats)
    {
        m_stats.changedBodies = changed;
        m_stats.createdBodies = static_cast<std::uint32_t>(created);
        m_stats.removedBodies = removed;
        m_stats.identicalToBaseline = baseline != nullptr && changed == 0 && created == 0 && removed == 0;
    }
    return CodecError::None;
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
                    std::span<std::uint8_t>(m_buffer).subspan(m_used, capacity), written, false, false);
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
    const auto begin = std::lower_bound(m_sortedCosts.begin(), m_sortedCosts.end(),
                                        static_cast<std::uint64_t>(firstId), byId);
    const auto end = std::lower_bound(begin, m_sortedCosts.end(), endId, byId);
    std::uint64_t total = 0;
    for (auto it = begin; it != end; ++it)
    {
        total += it->bytes;
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
        running += it->bytes;
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
    m_costs.clear();
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

    // First the whole snapshot as one payload, recording what each body cost; split only if it is too big.
    const std::size_t baselineCount = baseline ? baseline->bodies.size() : 0;
    const std::size_t scratchBytes = 256 + 64 * current.bodies.size() + baselineCount / 4;
    if (m_scratch.size() < scratchBytes)
    {
        m_scratch.resize(scratchBytes);
    }
    std::size_t written = 0;
    CodecError error =
        encodeRange(current, baseline, reference, 0, kIdSpace, m_scratch, written, true, false);
    if (error != CodecError::None)
    {
        return error;
    }
    if (written <= m_config.maxSlicePayloadBytes)
    {
        if (m_buffer.size() < written)
        {
            m_buffer.resize(std::max(written, m_config.maxSlicePayloadBytes));
        }
        std::memcpy(m_buffer.data(), m_scratch.data(), written);
        m_slices.push_back({std::span<const std::uint8_t>(m_buffer.data(), written), 0, kIdSpace,
                            static_cast<std::uint32_t>(current.bodies.size())});
        m_stats.payloadBytes = written;
        return CodecError::None;
    }

    // Too big for one datagram: encode again, recording what each body costs, to choose where to cut.
    m_costs.clear();
    error = encodeRange(current, baseline, reference, 0, kIdSpace, m_scratch, written, false, true);
    if (error != CodecError::None)
    {
        return error;
    }
    // Costs were recorded per section, each in id order: sort them all by id (ties are equal entries or
    // differ in bytes, so the order is fully determined).
    m_sortedCosts = m_costs;
    std::sort(m_sortedCosts.begin(), m_sortedCosts.end(),
              [](const BodyCost& a, const BodyCost& b)
              { return a.id != b.id ? a.id < b.id : a.bytes < b.bytes; });

    // Cut into ranges of about 3/4 of a slice (models start afresh in each slice, which costs a little), then
    // halve any that still does not fit.
    const std::uint64_t target = static_cast<std::uint64_t>(m_config.maxSlicePayloadBytes) * 3 / 4;
    std::uint64_t running = 0;
    std::uint64_t sliceStart = 0;
    for (const BodyCost& cost : m_sortedCosts)
    {
        if (running > 0 && running + cost.bytes > target && cost.id > sliceStart)
        {
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
        running += cost.bytes;
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
            const QuantizedBody* previous = m_created.empty() ? nullptr : &m_created.back();
            const CodecError error = codeCreated(side, m, limits, previous, sameId.find(body.id), body);
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
                const CodecError error =
                    codeChangedBody(side, m, limits, info.motionClass, base, info.reference, baselineAge,
                                    referenceGap, m_kept[i]);
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
    return CodecError::None;
}

} // namespace polytope::protocol

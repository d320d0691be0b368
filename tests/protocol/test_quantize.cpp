// Quantization: position error within half a step inside the bounds, clamping outside; orientation error
// measured over many random and adversarial rotations.
#include "polytope/protocol/quantize.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace polytope::protocol;

namespace
{

std::array<double, 4> toDouble(const std::array<float, 4>& q)
{
    return {q[0], q[1], q[2], q[3]};
}

std::array<float, 4> normalized(std::array<double, 4> q)
{
    const double length = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    return {static_cast<float>(q[0] / length), static_cast<float>(q[1] / length),
            static_cast<float>(q[2] / length), static_cast<float>(q[3] / length)};
}

} // namespace

TEST_CASE("default position quantization: 1/1024 m, 19 + 18 + 19 bits", "[quantize]")
{
    const PositionQuantization config;
    REQUIRE(config.isValid());
    CHECK(config.maxCode(0) == 512u * 1024u - 1u);
    CHECK(config.maxCode(1) == 256u * 1024u - 1u);
    CHECK(config.bitsForAxis(0) == 19);
    CHECK(config.bitsForAxis(1) == 18);
    CHECK(config.bitsForAxis(2) == 19);

    PositionQuantization bad = config;
    bad.boundsMax[1] = bad.boundsMin[1];
    CHECK_FALSE(bad.isValid());
    bad = config;
    bad.boundsMin[0] = std::nanf("");
    CHECK_FALSE(bad.isValid());
    bad = config;
    bad.stepsPerMetre = 0;
    CHECK_FALSE(bad.isValid());
    bad = config;
    bad.boundsMax[2] = 1e9f; // more than 2^30 codes
    CHECK_FALSE(bad.isValid());
}

TEST_CASE("positions inside the bounds come back within half a step", "[quantize]")
{
    std::mt19937_64 random(42);
    for (const std::uint32_t steps : {1024u, 512u, 100u, 4096u})
    {
        PositionQuantization config;
        config.boundsMin = {-100.0f, -10.0f, -300.5f};
        config.boundsMax = {100.0f, 50.0f, 20.25f};
        config.stepsPerMetre = steps;
        REQUIRE(config.isValid());
        const double halfStep = 0.5 / steps;
        std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
        for (int i = 0; i < 100000; ++i)
        {
            std::array<float, 3> p{};
            for (std::size_t a = 0; a < 3; ++a)
            {
                // The last half step below boundsMax rounds to a code past maxCode: stay below it.
                const double top =
                    config.boundsMin[a] + config.maxCode(static_cast<int>(a)) / static_cast<double>(steps);
                p[a] =
                    static_cast<float>(config.boundsMin[a] + uniform(random) * (top - config.boundsMin[a]));
            }
            const QuantizedPosition q = quantizePosition(config, p);
            REQUIRE_FALSE(q.clamped);
            const std::array<float, 3> back = dequantizePosition(config, q.codes);
            for (std::size_t a = 0; a < 3; ++a)
            {
                REQUIRE(q.codes[a] <= config.maxCode(static_cast<int>(a)));
                // Half a step, plus the float rounding of the input and of the result.
                REQUIRE(std::fabs(static_cast<double>(back[a]) - p[a]) <= halfStep + 4e-5);
            }
        }
    }
}

TEST_CASE("positions outside the bounds, or not finite, are clamped and flagged", "[quantize]")
{
    const PositionQuantization config;
    const QuantizedPosition low = quantizePosition(config, {-300.0f, 0.0f, 0.0f});
    CHECK(low.clamped);
    CHECK(low.codes[0] == 0);
    const QuantizedPosition high = quantizePosition(config, {0.0f, 1000.0f, 0.0f});
    CHECK(high.clamped);
    CHECK(high.codes[1] == config.maxCode(1));
    const QuantizedPosition nan = quantizePosition(config, {0.0f, 0.0f, std::nanf("")});
    CHECK(nan.clamped);
    CHECK(nan.codes[2] == 0);
    const QuantizedPosition inf = quantizePosition(config, {INFINITY, 0.0f, 0.0f});
    CHECK(inf.clamped);
    CHECK(inf.codes[0] == config.maxCode(0));
    const QuantizedPosition inside = quantizePosition(config, {1.0f, 2.0f, 3.0f});
    CHECK_FALSE(inside.clamped);
    CHECK(inside.codes[0] == 257u * 1024u);
    CHECK(inside.codes[1] == 66u * 1024u);
}

TEST_CASE("smallest-three orientations err by at most 0.05 degrees", "[quantize]")
{
    std::mt19937_64 random(1234);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> jitter(-1.0, 1.0);
    double worst = 0.0;
    for (int i = 0; i < 450000; ++i)
    {
        std::array<double, 4> q{};
        if (i % 3 == 0)
        {
            // Adversarial: near the corners where the dropped component is smallest (all four near 1/2),
            // where plain rounding is worst.
            for (double& c : q)
            {
                c = (random() % 2 ? 0.5 : -0.5) + jitter(random) * (i % 9 == 0 ? 0.05 : 0.002);
            }
        }
        else if (i % 3 == 1)
        {
            // Near the boundary between two largest components.
            const double a = 0.5 + jitter(random) * 0.2;
            q = {a, a + jitter(random) * 1e-4, jitter(random) * 0.3, jitter(random) * 0.3};
        }
        else
        {
            q = {normal(random), normal(random), normal(random), normal(random)};
        }
        const std::array<float, 4> input = normalized(q);
        const QuantizedOrientation quantized = quantizeOrientation(input);
        REQUIRE(isValidOrientation(quantized));
        const double error =
            rotationAngleDegrees(toDouble(input), toDouble(dequantizeOrientation(quantized)));
        worst = std::max(worst, error);
        REQUIRE(error <= 0.05);
    }
    INFO("worst orientation error, degrees: " << worst);
    CHECK(worst > 0.01); // the test did reach the hard cases (the bound is not vacuous)
}

TEST_CASE("a rotation and its negation quantize the same; identity and degenerate input", "[quantize]")
{
    std::mt19937_64 random(9);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int i = 0; i < 10000; ++i)
    {
        const std::array<float, 4> q =
            normalized({normal(random), normal(random), normal(random), normal(random)});
        const std::array<float, 4> negated{-q[0], -q[1], -q[2], -q[3]};
        REQUIRE(quantizeOrientation(q) == quantizeOrientation(negated));
    }
    const QuantizedOrientation identity = quantizeOrientation({0.0f, 0.0f, 0.0f, 1.0f});
    CHECK(identity.largest == 3);
    for (std::uint16_t code : identity.codes)
    {
        CHECK(code == kOrientationComponentMax);
    }
    CHECK(quantizeOrientation({0.0f, 0.0f, 0.0f, 0.0f}) == identity);
    CHECK(quantizeOrientation({std::nanf(""), 0.0f, 0.0f, 1.0f}) == identity);
    // Unnormalised input is normalised first.
    CHECK(quantizeOrientation({0.0f, 2.0f, 0.0f, 0.0f}) == quantizeOrientation({0.0f, 1.0f, 0.0f, 0.0f}));
}

TEST_CASE("any orientation code, valid or not, dequantizes to a finite unit quaternion", "[quantize]")
{
    std::mt19937_64 random(99);
    for (int i = 0; i < 100000; ++i)
    {
        QuantizedOrientation o;
        o.largest = static_cast<std::uint8_t>(random() % 256);
        for (auto& code : o.codes)
        {
            code = static_cast<std::uint16_t>(random());
        }
        const std::array<float, 4> q = dequantizeOrientation(o);
        const double length =
            std::sqrt(double(q[0]) * q[0] + double(q[1]) * q[1] + double(q[2]) * q[2] + double(q[3]) * q[3]);
        REQUIRE(std::isfinite(length));
        REQUIRE(std::fabs(length - 1.0) < 1e-5);
    }
    QuantizedOrientation tooLong;
    tooLong.codes = {0, 0, 0}; // three components of -K: |k|^2 = 3 K^2 > 2 K^2
    CHECK_FALSE(isValidOrientation(tooLong));
    tooLong.codes = {static_cast<std::uint16_t>(kOrientationCodeMax + 1), 0, 0};
    CHECK_FALSE(isValidOrientation(tooLong));
}

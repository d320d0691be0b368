// Snapshot delta codec: bit-exact round trips against baselines of every age, created/removed bodies,
// independent slices, rejection of bad payloads, and a lossy stream through the network simulator
// (support/codec_stream.h). (The codec's bandwidth on Fiedler's scene, built with the engine, is bench/'s
// "bandwidth" suite, through the same stream.)
//
// The test data is a caricature of physics, not a physics engine: 900 small cubes on a 30 x 30 grid
// and a large cube pushed along a scripted figure-eight through them. Cubes it strikes are thrown up and
// set tumbling (constant spin in flight, gravity), bounce on landing (losing energy, gaining a new tumble),
// slide with Coulomb friction while their tilt relaxes to the nearest face and their yaw spin decays,
// jitter by a tenth of a millimetre while awake (solver noise), push each other (as spheres), and fall
// asleep after half a second of stillness. It is deterministic (seeded, fixed order).
#include "polytope/protocol/snapshot_codec.h"
#include "support/codec_stream.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace polytope::protocol;

namespace
{

// ------------------------------------------------------------------------------------- the cube scene

using V3 = std::array<double, 3>;
using Q4 = std::array<double, 4>; // x, y, z, w

V3 add(V3 a, V3 b)
{
    return {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
}
V3 sub(V3 a, V3 b)
{
    return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
V3 scale(V3 a, double s)
{
    return {a[0] * s, a[1] * s, a[2] * s};
}
double dot(V3 a, V3 b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
double length(V3 a)
{
    return std::sqrt(dot(a, a));
}
V3 cross(V3 a, V3 b)
{
    return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

Q4 multiply(Q4 a, Q4 b)
{
    return {a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
            a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
            a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
            a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2]};
}
Q4 normalize(Q4 q)
{
    const double l = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    return {q[0] / l, q[1] / l, q[2] / l, q[3] / l};
}
Q4 axisAngle(V3 axis, double angle)
{
    const double l = length(axis);
    if (l < 1e-12)
    {
        return {0, 0, 0, 1};
    }
    const double s = std::sin(angle / 2) / l;
    return {axis[0] * s, axis[1] * s, axis[2] * s, std::cos(angle / 2)};
}
/// Where the body's local axis (0 x, 1 y, 2 z) points in the world.
V3 localAxis(Q4 q, int axis)
{
    const double x = q[0], y = q[1], z = q[2], w = q[3];
    switch (axis)
    {
    case 0:
        return {1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)};
    case 1:
        return {2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)};
    default:
        return {2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)};
    }
}

struct Cube
{
    enum class Mode : std::uint8_t
    {
        Flying,
        Ground,
        Asleep
    };
    V3 position{};
    V3 velocity{};
    Q4 orientation{0, 0, 0, 1};
    V3 angularVelocity{};
    double halfExtent = 0.25;
    Mode mode = Mode::Asleep;
    int stillTicks = 0;
    V3 jitter{}; ///< shown position = position + jitter (solver noise while awake)
};

struct CubeSceneConfig
{
    int gridSide = 30;
    double spacing = 1.0;
    double smallHalfExtent = 0.25;
    double bigHalfExtent = 1.5;
    double pathRadiusX = 11.0;
    double pathRadiusZ = 9.0;
    double pathRate = 0.16; ///< rad/s of the figure-eight's phase: 2-4 m/s along the path
    double jitterMetres = 0.0001;
    std::uint64_t seed = 7;
};

class CubeScene
{
  public:
    static constexpr double kDt = 1.0 / 60.0;
    static constexpr double kGravity = 9.81;

    explicit CubeScene(const CubeSceneConfig& config = {}) : m_config(config), m_random(config.seed)
    {
        Cube big;
        big.halfExtent = config.bigHalfExtent;
        big.mode = Cube::Mode::Flying;
        m_cubes.push_back(big);
        const double origin = -0.5 * (config.gridSide - 1) * config.spacing;
        for (int i = 0; i < config.gridSide; ++i)
        {
            for (int j = 0; j < config.gridSide; ++j)
            {
                Cube c;
                c.halfExtent = config.smallHalfExtent;
                c.position = {origin + i * config.spacing, config.smallHalfExtent,
                              origin + j * config.spacing};
                m_cubes.push_back(c);
            }
        }
        placeBig();
    }

    std::size_t size() const { return m_cubes.size(); }

    void step()
    {
        m_time += kDt;
        const V3 bigBefore = m_cubes[0].position;
        placeBig();
        m_bigVelocity = scale(sub(m_cubes[0].position, bigBefore), 1.0 / kDt);
        for (std::size_t i = 1; i < m_cubes.size(); ++i)
        {
            integrate(m_cubes[i]);
        }
        pushByBig();
        collideSmall();
        for (std::size_t i = 1; i < m_cubes.size(); ++i)
        {
            fallAsleep(m_cubes[i]);
        }
    }

    /// Body 0 is the large cube, 1..900 the small ones; all generation 1.
    std::vector<QuantizedBody> snapshot(const PositionQuantization& quantization) const
    {
        std::vector<QuantizedBody> bodies;
        bodies.reserve(m_cubes.size());
        for (std::size_t i = 0; i < m_cubes.size(); ++i)
        {
            const Cube& c = m_cubes[i];
            const V3 p = add(c.position, c.jitter);
            bodies.push_back(
                quantizeBody(quantization, static_cast<std::uint32_t>(i), 1, c.mode == Cube::Mode::Asleep,
                             {static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2])},
                             {static_cast<float>(c.orientation[0]), static_cast<float>(c.orientation[1]),
                              static_cast<float>(c.orientation[2]), static_cast<float>(c.orientation[3])}));
        }
        return bodies;
    }

  private:
    double uniform(double lo, double hi)
    {
        return lo + (hi - lo) * static_cast<double>(m_random() >> 11) * (1.0 / 9007199254740992.0);
    }
    V3 randomVector(double magnitude)
    {
        return {uniform(-magnitude, magnitude), uniform(-magnitude, magnitude),
                uniform(-magnitude, magnitude)};
    }

    void placeBig()
    {
        Cube& big = m_cubes[0];
        const double phase = m_config.pathRate * m_time;
        big.position = {m_config.pathRadiusX * std::sin(phase), m_config.bigHalfExtent,
                        m_config.pathRadiusZ * std::sin(2.0 * phase)};
        const V3 heading = {m_config.pathRadiusX * std::cos(phase), 0.0,
                            2.0 * m_config.pathRadiusZ * std::cos(2.0 * phase)};
        big.orientation = axisAngle({0, 1, 0}, std::atan2(heading[0], heading[2]));
    }

    /// Height of the centre above the lowest corner: the half extent projected on the world's up axis.
    static double supportHeight(const Cube& c)
    {
        return c.halfExtent *
               (std::fabs(localAxis(c.orientation, 0)[1]) + std::fabs(localAxis(c.orientation, 1)[1]) +
                std::fabs(localAxis(c.orientation, 2)[1]));
    }

    void integrate(Cube& c)
    {
        c.jitter = {0, 0, 0};
        if (c.mode == Cube::Mode::Asleep)
        {
            return;
        }
        if (c.mode == Cube::Mode::Flying)
        {
            c.velocity[1] -= kGravity * kDt;
            c.position = add(c.position, scale(c.velocity, kDt));
            c.orientation = normalize(
                multiply(axisAngle(c.angularVelocity, length(c.angularVelocity) * kDt), c.orientation));
            const double support = supportHeight(c);
            if (c.position[1] < support)
            {
                c.position[1] = support;
                if (c.velocity[1] < -1.5)
                {
                    // A bounce on a corner or an edge: energy lost, some turned into a new tumble.
                    const double impact = -c.velocity[1];
                    c.velocity[1] = 0.3 * impact;
                    c.velocity[0] *= 0.7;
                    c.velocity[2] *= 0.7;
                    c.angularVelocity = add(scale(c.angularVelocity, 0.4), randomVector(1.5 * impact));
                }
                else
                {
                    c.mode = Cube::Mode::Ground;
                    c.velocity[1] = 0.0;
                    c.angularVelocity = {0.0, c.angularVelocity[1] * 0.5, 0.0};
                }
            }
            return;
        }
        // On the ground: Coulomb friction, decaying yaw spin, tilt relaxing to the nearest face.
        const double speed = std::hypot(c.velocity[0], c.velocity[2]);
        const double slowed = std::max(0.0, speed - 0.5 * kGravity * kDt);
        if (speed > 0.0)
        {
            c.velocity[0] *= slowed / speed;
            c.velocity[2] *= slowed / speed;
        }
        if (slowed < 0.03)
        {
            c.velocity = {0, 0, 0};
        }
        c.position = add(c.position, scale(c.velocity, kDt));
        c.angularVelocity[1] *= 0.95;
        if (std::fabs(c.angularVelocity[1]) < 0.1)
        {
            c.angularVelocity[1] = 0.0;
        }
        c.orientation = normalize(multiply(axisAngle({0, 1, 0}, c.angularVelocity[1] * kDt), c.orientation));
        int up = 0;
        for (int a = 1; a < 3; ++a)
        {
            if (std::fabs(localAxis(c.orientation, a)[1]) > std::fabs(localAxis(c.orientation, up)[1]))
            {
                up = a;
            }
        }
        V3 axis = localAxis(c.orientation, up);
        if (axis[1] < 0)
        {
            axis = scale(axis, -1.0);
        }
        const V3 tiltAxis = cross(axis, {0, 1, 0});
        const double tilt = std::asin(std::min(1.0, length(tiltAxis)));
        if (tilt > 0.0)
        {
            c.orientation =
                normalize(multiply(axisAngle(tiltAxis, tilt > 1e-3 ? 0.2 * tilt : tilt), c.orientation));
        }
        c.position[1] = supportHeight(c);
        c.jitter = randomVector(m_config.jitterMetres);
    }

    static void wake(Cube& c)
    {
        if (c.mode == Cube::Mode::Asleep)
        {
            c.mode = Cube::Mode::Ground;
        }
        c.stillTicks = 0;
    }

    void pushByBig()
    {
        const Cube& big = m_cubes[0];
        const V3 forward = localAxis(big.orientation, 2);
        const V3 side = localAxis(big.orientation, 0);
        for (std::size_t i = 1; i < m_cubes.size(); ++i)
        {
            Cube& c = m_cubes[i];
            const V3 relative = sub(c.position, big.position);
            const double reach = big.halfExtent + c.halfExtent;
            const double f = dot(relative, forward);
            const double s = dot(relative, side);
            if (std::fabs(f) >= reach || std::fabs(s) >= reach || relative[1] >= reach)
            {
                continue;
            }
            const bool alongForward = std::fabs(f) > std::fabs(s); // out through the nearer face
            const V3 normal =
                alongForward ? scale(forward, f < 0 ? -1.0 : 1.0) : scale(side, s < 0 ? -1.0 : 1.0);
            c.position = add(c.position, scale(normal, reach - std::fabs(alongForward ? f : s)));
            const double approach = dot(m_bigVelocity, normal) - dot(c.velocity, normal);
            if (approach > 0.0)
            {
                c.velocity = add(c.velocity, scale(normal, approach * uniform(1.0, 1.6)));
                if (approach > 1.0 || c.mode == Cube::Mode::Asleep)
                {
                    // A real hit: thrown up and set tumbling.
                    c.velocity[1] += uniform(0.5, 2.5) * std::min(approach, 3.0);
                    c.velocity = add(c.velocity, scale(randomVector(0.5), approach));
                    c.angularVelocity = add(c.angularVelocity, randomVector(3.0 * approach + 2.0));
                    c.mode = Cube::Mode::Flying;
                }
            }
            wake(c);
        }
    }

    void collideSmall()
    {
        const double radius = 0.3;
        for (std::size_t i = 1; i < m_cubes.size(); ++i)
        {
            if (m_cubes[i].mode == Cube::Mode::Asleep)
            {
                continue;
            }
            for (std::size_t j = 1; j < m_cubes.size(); ++j)
            {
                if (j == i || (j < i && m_cubes[j].mode != Cube::Mode::Asleep))
                {
                    continue; // each awake pair once, from its lower index; sleeping partners always
                }
                Cube& a = m_cubes[i];
                Cube& b = m_cubes[j];
                const V3 d = sub(b.position, a.position);
                if (std::fabs(d[0]) >= 2 * radius || std::fabs(d[1]) >= 2 * radius ||
                    std::fabs(d[2]) >= 2 * radius)
                {
                    continue;
                }
                const double distance = length(d);
                if (distance >= 2.0 * radius || distance < 1e-9)
                {
                    continue;
                }
                const V3 normal = scale(d, 1.0 / distance);
                const double depth = 2.0 * radius - distance;
                a.position = add(a.position, scale(normal, -0.5 * depth));
                b.position = add(b.position, scale(normal, 0.5 * depth));
                const double closing = dot(sub(a.velocity, b.velocity), normal);
                if (closing > 0.0)
                {
                    const double impulse = 0.6 * closing; // equal masses, restitution 0.2
                    a.velocity = sub(a.velocity, scale(normal, impulse));
                    b.velocity = add(b.velocity, scale(normal, impulse));
                    if (closing > 1.0)
                    {
                        b.velocity[1] += uniform(0.0, 0.8) * closing;
                        b.angularVelocity = add(b.angularVelocity, randomVector(2.0 * closing));
                        a.angularVelocity = add(a.angularVelocity, randomVector(1.0 * closing));
                        b.mode = Cube::Mode::Flying;
                    }
                }
                wake(a);
                wake(b);
            }
        }
    }

    static void fallAsleep(Cube& c)
    {
        if (c.mode != Cube::Mode::Ground)
        {
            return;
        }
        const bool still = c.velocity[0] == 0.0 && c.velocity[2] == 0.0 && c.angularVelocity[1] == 0.0;
        c.stillTicks = still ? c.stillTicks + 1 : 0;
        if (c.stillTicks >= 30)
        {
            c.mode = Cube::Mode::Asleep;
            c.jitter = {0, 0, 0};
        }
    }

    CubeSceneConfig m_config;
    std::mt19937_64 m_random;
    std::vector<Cube> m_cubes;
    V3 m_bigVelocity{};
    double m_time = 0.0;
};

/// The scene's quantized snapshots, tick 0 first.
std::vector<std::vector<QuantizedBody>> sceneHistory(int ticks, const PositionQuantization& quantization = {})
{
    CubeScene scene;
    std::vector<std::vector<QuantizedBody>> history;
    for (int t = 0; t < ticks; ++t)
    {
        history.push_back(scene.snapshot(quantization));
        scene.step();
    }
    return history;
}

bool validDecodedBody(const SnapshotCodecConfig& config, const QuantizedBody& body)
{
    for (int a = 0; a < 3; ++a)
    {
        if (body.position[static_cast<std::size_t>(a)] > config.position.maxCode(a))
        {
            return false;
        }
    }
    return body.generation != 0 && isValidOrientation({body.largest, body.orientation});
}

/// Decodes every slice of the encoder's last output with a fresh decoder each, in the given order, and
/// reassembles the snapshot; checks the slices partition the id space.
std::vector<QuantizedBody> decodeAllSlices(const SnapshotCodecConfig& config, const SnapshotEncoder& encoder,
                                           std::uint64_t tick, const SnapshotFrame* baseline,
                                           const SnapshotFrame* reference, std::mt19937_64* shuffle = nullptr)
{
    std::vector<EncodedSlice> slices(encoder.slices().begin(), encoder.slices().end());
    if (shuffle != nullptr)
    {
        std::shuffle(slices.begin(), slices.end(), *shuffle);
    }
    std::vector<QuantizedBody> all;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (const EncodedSlice& slice : slices)
    {
        REQUIRE(slice.payload.size() <= config.maxSlicePayloadBytes);
        SnapshotDecoder decoder(config);
        const CodecError error = decoder.decode(slice.payload, tick, baseline, reference);
        INFO("decode error: " << codecErrorName(error));
        REQUIRE(error == CodecError::None);
        REQUIRE(decoder.header().firstId == slice.firstId);
        REQUIRE(decoder.header().endId == slice.endId);
        REQUIRE(decoder.bodies().size() == slice.bodyCount);
        // The checksum round-trips: the header's is that of the bodies decoded (decode() refuses otherwise).
        REQUIRE(decoder.header().checksum == quantizedStateChecksum(decoder.bodies()));
        ranges.push_back({decoder.header().firstId, decoder.header().endId});
        all.insert(all.end(), decoder.bodies().begin(), decoder.bodies().end());
    }
    std::sort(ranges.begin(), ranges.end());
    std::uint64_t next = 0;
    for (const auto& range : ranges)
    {
        REQUIRE(range.first == next);
        REQUIRE(range.second > range.first);
        next = range.second;
    }
    REQUIRE(next == (1ull << 32));
    std::sort(all.begin(), all.end(),
              [](const QuantizedBody& a, const QuantizedBody& b) { return a.id < b.id; });
    return all;
}

} // namespace

// ------------------------------------------------------------------------------------------------ tests

TEST_CASE("round trips are bit-exact against baselines of every age, with and without a reference", "[codec]")
{
    const auto history = sceneHistory(170);
    const SnapshotCodecConfig config;
    SnapshotEncoder encoder(config);
    std::size_t deltaBytes = 0, deltas = 0;
    for (const std::size_t now : {100u, 169u})
    {
        const SnapshotFrame current(now, history[now]);
        for (std::size_t age = 0; age <= 60; ++age) // 0: no baseline
        {
            for (const std::size_t gap : {0u, 1u, 3u, 17u}) // 0: no reference
            {
                if (age == 0 && gap != 0)
                {
                    continue;
                }
                const SnapshotFrame baseline(now - age, history[now - age]);
                const SnapshotFrame reference(now - age - gap, history[now - age - gap]);
                const SnapshotFrame* b = age > 0 ? &baseline : nullptr;
                const SnapshotFrame* r = gap > 0 ? &reference : nullptr;
                INFO("tick " << now << " age " << age << " gap " << gap);
                REQUIRE(encoder.encode(current, b, r) == CodecError::None);
                CHECK(decodeAllSlices(config, encoder, now, b, r) == history[now]);
                if (age > 0)
                {
                    deltaBytes += encoder.stats().payloadBytes;
                    ++deltas;
                }
            }
        }
    }
    // Delta coding does what it is for: far smaller than 28 bytes a body.
    CHECK(deltaBytes / deltas < 2000);
}

TEST_CASE("a snapshot too big for one datagram is cut into slices that decode alone, in any order", "[codec]")
{
    const auto history = sceneHistory(130);
    std::mt19937_64 random(5);
    for (const std::size_t budget : {64u, 200u, 1100u})
    {
        SnapshotCodecConfig config;
        config.maxSlicePayloadBytes = budget;
        SnapshotEncoder encoder(config);
        const SnapshotFrame current(129, history[129]);
        const SnapshotFrame baseline(120, history[120]);
        const SnapshotFrame reference(119, history[119]);

        REQUIRE(encoder.encode(current, nullptr, nullptr) == CodecError::None); // full: ~0.5 to 1 KB
        if (budget < 1100)
        {
            CHECK(encoder.slices().size() >= 2);
        }
        std::size_t bodies = 0;
        for (const EncodedSlice& slice : encoder.slices())
        {
            CHECK(slice.payload.size() <= budget);
            bodies += slice.bodyCount;
        }
        CHECK(bodies == history[129].size());
        CHECK(decodeAllSlices(config, encoder, 129, nullptr, nullptr, &random) == history[129]);

        REQUIRE(encoder.encode(current, &baseline, &reference) == CodecError::None);
        if (budget < 200)
        {
            CHECK(encoder.slices().size() >= 2);
        }
        CHECK(decodeAllSlices(config, encoder, 129, &baseline, &reference, &random) == history[129]);
    }
}

TEST_CASE("created, removed and replaced bodies round-trip", "[codec]")
{
    const auto history = sceneHistory(40);
    std::mt19937_64 random(17);
    const SnapshotCodecConfig config;
    SnapshotEncoder encoder(config);
    for (int trial = 0; trial < 60; ++trial)
    {
        // Baseline: the scene at some tick, with a few extra bodies and some missing.
        const std::size_t baseTick = 5 + random() % 20;
        std::vector<QuantizedBody> before;
        for (const QuantizedBody& b : history[baseTick])
        {
            if (random() % 10 != 0)
            {
                before.push_back(b);
            }
        }
        std::vector<QuantizedBody> now;
        std::uint32_t removed = 0, created = 0, replaced = 0;
        std::size_t j = 0;
        for (const QuantizedBody& b : history[baseTick + 10])
        {
            while (j < before.size() && before[j].id < b.id)
            {
                ++j;
            }
            const bool inBaseline = j < before.size() && before[j].id == b.id;
            const int fate = static_cast<int>(random() % 20);
            if (fate == 0)
            {
                removed += inBaseline ? 1 : 0; // gone now
                continue;
            }
            QuantizedBody body = b;
            if (fate == 1 && inBaseline)
            {
                body.generation =
                    before[j].generation + 1 + static_cast<std::uint32_t>(random() % 3); // slot reused
                ++replaced;
            }
            else if (!inBaseline)
            {
                ++created;
            }
            now.push_back(body);
        }
        // New ids beyond anything the baseline had, including the very last id.
        for (const std::uint32_t id : {5000u, 70000u, 0xFFFFFFFEu, 0xFFFFFFFFu})
        {
            if (random() % 2)
            {
                QuantizedBody body = history[baseTick][1 + random() % 900];
                body.id = id;
                body.generation = 1 + static_cast<std::uint32_t>(random() % 100000);
                now.push_back(body);
                ++created;
            }
        }
        const SnapshotFrame current(baseTick + 10, now);
        const SnapshotFrame baseline(baseTick, before);
        const SnapshotFrame reference(baseTick - 1, history[baseTick - 1]);
        REQUIRE(encoder.encode(current, &baseline, &reference) == CodecError::None);
        CHECK(encoder.stats().createdBodies == created + replaced);
        CHECK(encoder.stats().removedBodies ==
              before.size() - (now.size() - created - replaced)); // every baseline body not kept
        CHECK(decodeAllSlices(config, encoder, baseTick + 10, &baseline, &reference) == now);
        (void)removed;
    }
}

namespace
{

/// The bodies of `frame` with ids in [firstId, endId).
std::span<const QuantizedBody> bodiesInRange(std::span<const QuantizedBody> frame, std::uint32_t firstId,
                                             std::uint64_t endId)
{
    const auto byId = [](const QuantizedBody& b, std::uint64_t id) { return b.id < id; };
    const auto begin = std::lower_bound(frame.begin(), frame.end(), std::uint64_t{firstId}, byId);
    const auto end = std::lower_bound(begin, frame.end(), endId, byId);
    return {begin, end};
}

/// Every slice of the encoder's last output: its checksum is that of the current frame's bodies in its range;
/// it decodes; and it is refused as ChecksumMismatch when one decoded value is altered (each field in turn)
/// or one bit of the checksum flipped.
void checkSliceChecksums(const SnapshotCodecConfig& config, const SnapshotEncoder& encoder,
                         const SnapshotFrame& current, const SnapshotFrame* baseline,
                         const SnapshotFrame* reference, int& variant)
{
    for (const EncodedSlice& slice : encoder.slices())
    {
        const SliceHeaderResult header = readSliceHeader(config, slice.payload);
        REQUIRE(header.ok());
        const auto truth = bodiesInRange(current.bodies, slice.firstId, slice.endId);
        REQUIRE(header.header.checksum == quantizedStateChecksum(truth));

        SnapshotDecoder decoder(config);
        REQUIRE(decoder.decode(slice.payload, current.tick, baseline, reference) == CodecError::None);
        if (!truth.empty())
        {
            const int field = variant++ % 6;
            decoder.setFaultForTesting(
                [&](std::uint64_t, const SliceHeader&, std::span<QuantizedBody> bodies)
                {
                    QuantizedBody& b = bodies[static_cast<std::size_t>(variant) % bodies.size()];
                    switch (field)
                    {
                    case 0:
                        b.position[static_cast<std::size_t>(variant) % 3] ^= 1u;
                        break;
                    case 1:
                        b.orientation[static_cast<std::size_t>(variant) % 3] ^= 1u;
                        break;
                    case 2:
                        b.largest ^= 1u;
                        break;
                    case 3:
                        b.atRest = !b.atRest;
                        break;
                    case 4:
                        b.generation += 1;
                        break;
                    default:
                        b.id ^= 1u << 31; // an id the range need not hold: the checksum does not care
                        break;
                    }
                });
            CHECK(decoder.decode(slice.payload, current.tick, baseline, reference) ==
                  CodecError::ChecksumMismatch);
            CHECK(decoder.bodies().empty());
            decoder.setFaultForTesting({});
        }
        std::vector<std::uint8_t> flipped(slice.payload.begin(), slice.payload.end());
        flipped[header.header.headerBytes - 4 + static_cast<std::size_t>(variant) % 4] ^=
            static_cast<std::uint8_t>(1u << (variant % 8));
        ++variant;
        CHECK(decoder.decode(flipped, current.tick, baseline, reference) == CodecError::ChecksumMismatch);
    }
}

} // namespace

TEST_CASE("the checksum round-trips in every coding situation, and a wrong decoded value is refused",
          "[codec][checksum]")
{
    // Full snapshots, every baseline age with and without a reference (so every motion class, largest-index
    // changes and deceleration), slices, and created, removed and replaced bodies.
    const auto history = sceneHistory(170);
    int variant = 0;
    for (const std::size_t budget : {200u, 1100u})
    {
        SnapshotCodecConfig config;
        config.maxSlicePayloadBytes = budget;
        SnapshotEncoder encoder(config);
        for (const std::size_t now : {40u, 169u})
        {
            const SnapshotFrame current(now, history[now]);
            for (const std::size_t age : {0u, 1u, 3u, 7u, 13u, 30u})
            {
                for (const std::size_t gap : {0u, 1u, 4u})
                {
                    if (age == 0 && gap != 0)
                    {
                        continue;
                    }
                    const SnapshotFrame baseline(now - age, history[now - age]);
                    const SnapshotFrame reference(now - age - gap, history[now - age - gap]);
                    const SnapshotFrame* b = age > 0 ? &baseline : nullptr;
                    const SnapshotFrame* r = gap > 0 ? &reference : nullptr;
                    INFO("budget " << budget << " tick " << now << " age " << age << " gap " << gap);
                    REQUIRE(encoder.encode(current, b, r) == CodecError::None);
                    checkSliceChecksums(config, encoder, current, b, r, variant);
                }
            }
        }
        // Bodies created, removed and replaced since the baseline.
        std::vector<QuantizedBody> changed(history[60].begin(), history[60].end());
        changed.erase(changed.begin() + 10, changed.begin() + 20);
        changed[30].generation += 1;
        QuantizedBody extra = changed[40];
        extra.id = 0xFFFFFFFFu;
        changed.push_back(extra);
        const SnapshotFrame current(60, changed);
        const SnapshotFrame baseline(50, history[50]);
        const SnapshotFrame reference(49, history[49]);
        REQUIRE(encoder.encode(current, &baseline, &reference) == CodecError::None);
        CHECK(encoder.stats().createdBodies == 2);
        CHECK(encoder.stats().removedBodies == 11);
        checkSliceChecksums(config, encoder, current, &baseline, &reference, variant);
        // An empty slice's checksum is 0.
        const std::vector<QuantizedBody> none;
        REQUIRE(encoder.encode(SnapshotFrame(61, none), &baseline, nullptr) == CodecError::None);
        REQUIRE(readSliceHeader(config, encoder.slices()[0].payload).header.checksum == 0u);
        checkSliceChecksums(config, encoder, SnapshotFrame(61, none), &baseline, nullptr, variant);
    }
    CHECK(variant > 100);
}

TEST_CASE("an unchanged snapshot is flagged and costs a few bytes; an empty one too", "[codec]")
{
    const auto history = sceneHistory(2);
    const SnapshotCodecConfig config;
    SnapshotEncoder encoder(config);
    const SnapshotFrame baseline(10, history[0]);
    const SnapshotFrame reference(9, history[0]);
    const SnapshotFrame current(20, history[0]);
    REQUIRE(encoder.encode(current, &baseline, &reference) == CodecError::None);
    CHECK(encoder.stats().identicalToBaseline);
    CHECK(encoder.stats().payloadBytes <= 8);
    CHECK(decodeAllSlices(config, encoder, 20, &baseline, &reference) == history[0]);

    const std::vector<QuantizedBody> none;
    REQUIRE(encoder.encode(SnapshotFrame(21, none), nullptr, nullptr) == CodecError::None);
    CHECK(encoder.slices().size() == 1);
    CHECK(decodeAllSlices(config, encoder, 21, nullptr, nullptr).empty());
    REQUIRE(encoder.encode(SnapshotFrame(22, none), &baseline, nullptr) == CodecError::None);
    CHECK(encoder.stats().removedBodies == history[0].size());
    CHECK(decodeAllSlices(config, encoder, 22, &baseline, nullptr).empty());
}

TEST_CASE("the unchanged-since hint makes encoding faster, not different", "[codec]")
{
    const auto history = sceneHistory(200);
    std::vector<std::vector<std::uint64_t>> since(history.size());
    since[0].assign(history[0].size(), 0);
    for (std::size_t t = 1; t < history.size(); ++t)
    {
        updateUnchangedSince(SnapshotFrame(t - 1, history[t - 1], since[t - 1]), SnapshotFrame(t, history[t]),
                             since[t]);
    }
    // The hint agrees with the history it summarises.
    for (std::size_t t = 150; t < history.size(); t += 7)
    {
        for (std::size_t i = 0; i < history[t].size(); ++i)
        {
            const std::uint64_t s = since[t][i];
            REQUIRE(history[s][i].sameState(history[t][i]));
            REQUIRE((s == 0 || !history[s - 1][i].sameState(history[t][i])));
        }
    }
    const SnapshotCodecConfig config;
    SnapshotEncoder plain(config), hinted(config);
    for (std::size_t t = 60; t < history.size(); t += 3)
    {
        for (const std::size_t age : {1u, 7u, 30u})
        {
            const SnapshotFrame baseline(t - age, history[t - age]);
            const SnapshotFrame reference(t - age - 1, history[t - age - 1]);
            REQUIRE(plain.encode(SnapshotFrame(t, history[t]), &baseline, &reference) == CodecError::None);
            REQUIRE(hinted.encode(SnapshotFrame(t, history[t], since[t]), &baseline, &reference) ==
                    CodecError::None);
            REQUIRE(plain.slices().size() == hinted.slices().size());
            for (std::size_t s = 0; s < plain.slices().size(); ++s)
            {
                const auto a = plain.slices()[s].payload;
                const auto b = hinted.slices()[s].payload;
                REQUIRE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
            }
        }
    }
}

TEST_CASE("prediction: a body in steady motion costs almost nothing", "[codec]")
{
    // One body moving at a constant 5 codes per tick along x and turning steadily: with a reference the
    // decoder extrapolates it; without, it is coded as a 35-code jump.
    const SnapshotCodecConfig config;
    auto bodyAt = [](int tick)
    {
        QuantizedBody b;
        b.id = 3;
        b.position = {static_cast<std::uint32_t>(100000 + 5 * tick), 70000, 90000};
        b.orientation = {static_cast<std::uint16_t>(kOrientationZeroCode + 3 * tick), kOrientationZeroCode,
                         kOrientationZeroCode};
        return b;
    };
    const std::vector<QuantizedBody> r{bodyAt(92)}, b{bodyAt(93)}, c{bodyAt(100)};
    const SnapshotFrame current(100, c), baseline(93, b), reference(92, r);
    SnapshotEncoder encoder(config);
    REQUIRE(encoder.encode(current, &baseline, &reference) == CodecError::None);
    const std::size_t predicted = encoder.stats().payloadBytes;
    CHECK(decodeAllSlices(config, encoder, 100, &baseline, &reference) == c);
    REQUIRE(encoder.encode(current, &baseline, nullptr) == CodecError::None);
    const std::size_t unpredicted = encoder.stats().payloadBytes;
    CHECK(decodeAllSlices(config, encoder, 100, &baseline, nullptr) == c);
    CHECK(predicted + 2 <= unpredicted);
    CHECK(predicted <= 8); // of which 4 are the checksum
}

TEST_CASE("re-expressing an orientation with another dropped component keeps the rotation", "[codec]")
{
    std::mt19937_64 random(31);
    std::normal_distribution<double> normal(0.0, 1.0);
    double worst = 0.0;
    for (int i = 0; i < 50000; ++i)
    {
        std::array<double, 4> q{normal(random), normal(random), normal(random), normal(random)};
        const double l = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        for (double& c : q)
        {
            c /= l;
        }
        const QuantizedOrientation o =
            quantizeOrientation({static_cast<float>(q[0]), static_cast<float>(q[1]), static_cast<float>(q[2]),
                                 static_cast<float>(q[3])});
        CHECK(reexpressOrientation(o, o.largest) == o);
        // Re-express with the second largest component dropped (as when a rotation crosses over).
        std::array<std::size_t, 4> order{0, 1, 2, 3};
        std::sort(order.begin(), order.end(),
                  [&](std::size_t a, std::size_t b) { return std::fabs(q[a]) > std::fabs(q[b]); });
        const auto second = static_cast<std::uint8_t>(order[1]);
        if (std::fabs(q[order[0]]) > 0.7)
        {
            continue; // far from a crossing: the old largest would not fit in [-K, K]
        }
        const QuantizedOrientation moved = reexpressOrientation(o, second);
        REQUIRE(moved.largest == second);
        REQUIRE(isValidOrientation(moved));
        const auto a = dequantizeOrientation(o);
        const auto b = dequantizeOrientation(moved);
        worst = std::max(worst, rotationAngleDegrees({a[0], a[1], a[2], a[3]}, {b[0], b[1], b[2], b[3]}));
    }
    INFO("worst re-expression error, degrees: " << worst);
    CHECK(worst < 0.06);
}

TEST_CASE("the decoder refuses payloads whose baseline it lacks, and bad headers", "[codec]")
{
    const auto history = sceneHistory(20);
    const SnapshotCodecConfig config;
    SnapshotEncoder encoder(config);
    const SnapshotFrame current(19, history[19]), baseline(12, history[12]), reference(11, history[11]);
    REQUIRE(encoder.encode(current, &baseline, &reference) == CodecError::None);
    REQUIRE(encoder.slices().size() == 1);
    const auto payload = encoder.slices()[0].payload;
    SnapshotDecoder decoder(config);
    CHECK(decoder.decode(payload, 19, &baseline, &reference) == CodecError::None);
    CHECK(decoder.decode(payload, 19, nullptr, nullptr) == CodecError::MissingBaseline);
    CHECK(decoder.decode(payload, 19, &baseline, nullptr) == CodecError::MissingBaseline);
    CHECK(decoder.decode(payload, 20, &baseline, &reference) ==
          CodecError::MissingBaseline); // baseline is 12, not 13
    CHECK(decoder.decode(payload, 5, &baseline, &reference) ==
          CodecError::MissingBaseline); // tick before the age
    CHECK(decoder.decode(std::span<const std::uint8_t>{}, 19, nullptr, nullptr) == CodecError::Truncated);

    const SliceHeaderResult header = readSliceHeader(config, payload);
    REQUIRE(header.ok());
    CHECK(header.header.baselineAge == 7);
    CHECK(header.header.referenceGap == 1);
    CHECK(header.header.isLastSlice());

    // Ages beyond the configured window are refused.
    SnapshotCodecConfig strict = config;
    strict.maxBaselineAgeTicks = 7;
    CHECK(readSliceHeader(strict, payload).error == CodecError::BadHeader);

    // A reference without a baseline (hand-made header: no baseline, reference, last slice, gap 1,
    // deceleration 0, first id 0, then the checksum's 4 bytes).
    const std::vector<std::uint8_t> referenceOnly{0b01111100, 0, 0, 0, 0};
    CHECK(readSliceHeader(config, referenceOnly).error == CodecError::BadHeader);
    // Cut inside the checksum: truncated.
    const std::vector<std::uint8_t> shortChecksum{0b00111100, 0, 0, 0};
    CHECK(readSliceHeader(config, shortChecksum).error == CodecError::Truncated);
    CHECK(readSliceHeader(config, std::vector<std::uint8_t>{0b00111100, 0x78, 0x56, 0x34, 0x12})
              .header.checksum == 0x12345678u);
}

TEST_CASE("the encoder refuses invalid input without crashing", "[codec]")
{
    const auto history = sceneHistory(3);
    const SnapshotCodecConfig config;
    SnapshotEncoder encoder(config);
    const SnapshotFrame baseline(5, history[0]);
    auto broken = history[1];
    std::swap(broken[3], broken[4]);
    CHECK(encoder.encode(SnapshotFrame(6, broken), &baseline, nullptr) == CodecError::InvalidInput);
    broken = history[1];
    broken[7].id = broken[6].id;
    CHECK(encoder.encode(SnapshotFrame(6, broken), &baseline, nullptr) == CodecError::InvalidInput);
    broken = history[1];
    broken[8].generation = 0;
    CHECK(encoder.encode(SnapshotFrame(6, broken), &baseline, nullptr) == CodecError::InvalidInput);
    broken = history[1];
    broken[9].position[1] = config.position.maxCode(1) + 1;
    CHECK(encoder.encode(SnapshotFrame(6, broken), &baseline, nullptr) == CodecError::InvalidInput);
    broken = history[1];
    broken[9].orientation = {0, 0, 0};
    CHECK(encoder.encode(SnapshotFrame(6, broken), &baseline, nullptr) == CodecError::InvalidInput);
    CHECK(encoder.slices().empty());

    const SnapshotFrame current(6, history[1]);
    CHECK(encoder.encode(current, nullptr, &baseline) == CodecError::InvalidInput); // reference, no baseline
    CHECK(encoder.encode(SnapshotFrame(5, history[1]), &baseline, nullptr) ==
          CodecError::InvalidInput); // not older
    const SnapshotFrame ancient(2000 - config.maxBaselineAgeTicks - 1, history[0]);
    CHECK(encoder.encode(SnapshotFrame(2000, history[1]), &ancient, nullptr) == CodecError::InvalidInput);
    const std::vector<std::uint64_t> shortHint(3, 0);
    CHECK(encoder.encode(SnapshotFrame(6, history[1], shortHint), &baseline, nullptr) ==
          CodecError::InvalidInput);
    CHECK(encoder.encode(current, &baseline, nullptr) == CodecError::None);
}

TEST_CASE("a decoder never holds more bodies than its configuration allows", "[codec]")
{
    const auto history = sceneHistory(2);
    const SnapshotCodecConfig config;
    SnapshotEncoder encoder(config);
    REQUIRE(encoder.encode(SnapshotFrame(1, history[1]), nullptr, nullptr) == CodecError::None);
    SnapshotCodecConfig small = config;
    small.maxBodies = 100;
    SnapshotDecoder decoder(small);
    bool refused = false;
    for (const EncodedSlice& slice : encoder.slices())
    {
        const CodecError error = decoder.decode(slice.payload, 1, nullptr, nullptr);
        refused = refused || error == CodecError::TooManyBodies;
        CHECK(decoder.bodies().size() <= 100);
    }
    CHECK(refused);
}

TEST_CASE("random and mutated payloads are refused or decode to in-range bodies", "[codec]")
{
    const auto history = sceneHistory(80);
    SnapshotCodecConfig config;
    config.maxSlicePayloadBytes = 400;
    SnapshotEncoder encoder(config);
    // The client's store: every tick of the history, so a mutated header naming another age finds one.
    auto frameAt = [&](std::uint64_t tick) -> const std::vector<QuantizedBody>*
    { return tick < history.size() ? &history[tick] : nullptr; };
    std::vector<std::vector<std::uint8_t>> valid;
    for (const std::size_t age : {0u, 1u, 6u, 9u, 40u})
    {
        const SnapshotFrame b(79 - age, history[79 - age]), r(78 - age, history[78 - age]);
        REQUIRE(encoder.encode(SnapshotFrame(79, history[79]), age > 0 ? &b : nullptr,
                               age > 0 ? &r : nullptr) == CodecError::None);
        for (const EncodedSlice& slice : encoder.slices())
        {
            valid.emplace_back(slice.payload.begin(), slice.payload.end());
        }
    }

    std::mt19937_64 random(2718);
    SnapshotDecoder decoder(config);
    std::array<std::size_t, kCodecErrorCount> outcomes{};
    for (int trial = 0; trial < 6000; ++trial)
    {
        std::vector<std::uint8_t> bytes = valid[random() % valid.size()];
        switch (random() % 6)
        {
        case 0: // flip a few bits
            for (int flips = 1 + static_cast<int>(random() % 4); flips > 0 && !bytes.empty(); --flips)
            {
                bytes[random() % bytes.size()] ^= static_cast<std::uint8_t>(1u << (random() % 8));
            }
            break;
        case 1: // truncate
            bytes.resize(random() % (bytes.size() + 1));
            break;
        case 2: // overwrite a run with random bytes
            for (std::size_t i = random() % (bytes.size() + 1), n = random() % 16; n > 0 && i < bytes.size();
                 --n, ++i)
            {
                bytes[i] = static_cast<std::uint8_t>(random());
            }
            break;
        case 3: // append garbage
            for (int n = static_cast<int>(random() % 64); n > 0; --n)
            {
                bytes.push_back(static_cast<std::uint8_t>(random()));
            }
            break;
        case 4: // entirely random
            bytes.resize(random() % 200);
            for (auto& b : bytes)
            {
                b = static_cast<std::uint8_t>(random());
            }
            break;
        default: // splice two payloads
        {
            const auto& other = valid[random() % valid.size()];
            const std::size_t cut = random() % (bytes.size() + 1);
            bytes.resize(cut);
            bytes.insert(bytes.end(),
                         other.begin() + static_cast<std::ptrdiff_t>(random() % (other.size() + 1)),
                         other.end());
            break;
        }
        }
        // Give the decoder what the (possibly mutated) header asks for, when the store has it.
        const std::uint64_t tick = 79;
        const SliceHeaderResult header = readSliceHeader(config, bytes);
        SnapshotFrame b, r;
        const SnapshotFrame* bp = nullptr;
        const SnapshotFrame* rp = nullptr;
        if (header.ok() && header.header.hasBaseline && header.header.baselineAge <= tick)
        {
            if (const auto* f = frameAt(tick - header.header.baselineAge))
            {
                b = SnapshotFrame(tick - header.header.baselineAge, *f);
                bp = &b;
            }
            const std::uint64_t referenceAge =
                static_cast<std::uint64_t>(header.header.baselineAge) + header.header.referenceGap;
            if (header.header.hasReference && referenceAge <= tick)
            {
                if (const auto* f = frameAt(tick - referenceAge))
                {
                    r = SnapshotFrame(tick - referenceAge, *f);
                    rp = &r;
                }
            }
        }
        const CodecError error = decoder.decode(bytes, tick, bp, rp);
        ++outcomes[static_cast<std::size_t>(error)];
        if (error != CodecError::None)
        {
            continue;
        }
        const auto bodies = decoder.bodies();
        REQUIRE(bodies.size() <= config.maxBodies);
        for (std::size_t i = 0; i < bodies.size(); ++i)
        {
            REQUIRE(validDecodedBody(config, bodies[i]));
            REQUIRE(bodies[i].id >= decoder.header().firstId);
            REQUIRE(bodies[i].id < decoder.header().endId);
            REQUIRE((i == 0 || bodies[i - 1].id < bodies[i].id));
        }
    }
    // Both outcomes happen: most mutations are caught, some decode (to other, in-range, bodies).
    CHECK(outcomes[static_cast<std::size_t>(CodecError::None)] > 0);
    CHECK(outcomes[static_cast<std::size_t>(CodecError::None)] < 6000);
    CHECK(outcomes[static_cast<std::size_t>(CodecError::ValueOutOfRange)] > 0);
    CHECK(outcomes[static_cast<std::size_t>(CodecError::MissingBaseline)] > 0);
}

TEST_CASE("a lossy stream through the simulator decodes every complete tick bit-exactly", "[codec]")
{
    polytope::test::CodecStreamSettings settings;
    settings.seconds = 3.0;
    settings.firstTick = 1000; // not 0 or 1: ticks are arbitrary
    settings.network.latencySeconds = 0.05;
    settings.network.jitterSeconds = 0.01;
    settings.network.lossProbability = 0.1;
    settings.network.duplicateProbability = 0.02;
    settings.network.reorderProbability = 0.05;
    settings.codec.maxSlicePayloadBytes = 300; // force slices now and then
    CubeScene scene;
    polytope::test::CodecStreamHooks hooks;
    hooks.snapshot = [&](std::uint64_t)
    {
        auto bodies = scene.snapshot(settings.codec.position);
        scene.step();
        return bodies;
    };
    const polytope::test::CodecStreamResult result = polytope::test::runCodecStream(settings, hooks);
    // A second client with the same acknowledgements (its frame already checked) gets the same answer.
    REQUIRE(result.secondClientDisagreements == 0);
    REQUIRE(result.encodeError == CodecError::None);
    CHECK(result.mismatches == 0);
    CHECK(result.decodeErrors == 0);
    CHECK(result.ticksDecoded > 120);
    CHECK(result.largestPayload <= 300);
    CHECK(result.maxBaselineAge >= 4);
}

namespace
{
/// Bodies sliding on the ground in every direction, each slowing down by `decelerationCodes` per tick^2 until
/// it stops (the motion of the pushed cubes in the bandwidth benchmark), at tick `tick`.
std::vector<QuantizedBody> slidingBodies(int tick, double decelerationCodes)
{
    std::vector<QuantizedBody> bodies;
    for (std::uint32_t i = 0; i < 60; ++i)
    {
        const double angle = 0.37 * i;
        const double speed = 30.0 + 1.3 * i; // codes per tick
        const double stopTick = speed / std::max(decelerationCodes, 1e-9);
        const double t = std::min<double>(tick, stopTick);
        const double distance = speed * t - 0.5 * decelerationCodes * t * t;
        QuantizedBody b;
        b.id = 2 * i;
        b.position = {static_cast<std::uint32_t>(std::lround(200000 + distance * std::cos(angle))), 70000,
                      static_cast<std::uint32_t>(std::lround(200000 + distance * std::sin(angle)))};
        bodies.push_back(b);
    }
    return bodies;
}
} // namespace

TEST_CASE("sliding bodies: the encoder measures their deceleration and the prediction uses it", "[codec]")
{
    const SnapshotCodecConfig config;
    SnapshotEncoder encoder(config);
    for (const int age : {1, 7, 13})
    {
        for (const int gap : {1, 2})
        {
            const int now = 20;
            const auto c = slidingBodies(now, 1.5), b = slidingBodies(now - age, 1.5),
                       r = slidingBodies(now - age - gap, 1.5);
            const SnapshotFrame current(now, c), baseline(now - age, b), reference(now - age - gap, r);
            REQUIRE(encoder.encode(current, &baseline, &reference) == CodecError::None);
            REQUIRE(encoder.slices().size() == 1);
            const SliceHeaderResult header = readSliceHeader(config, encoder.slices()[0].payload);
            REQUIRE(header.ok());
            INFO("age " << age << " gap " << gap);
            // 1.5 codes per tick^2 is 24 sixteenths; the reference-to-baseline speed is itself a little off.
            CHECK(header.header.deceleration >= 20);
            CHECK(header.header.deceleration <= 28);
            CHECK(decodeAllSlices(config, encoder, now, &baseline, &reference) == c);
            // Linear extrapolation alone would miss by about 0.75 h (h + g) codes along the motion (37 codes
            // at h = 7): with the deceleration a body costs a few bits an axis.
            if (age == 7)
            {
                CHECK(encoder.stats().payloadBytes * 8 <= 12 * c.size());
            }
        }
    }
    // Without a reference nothing is extrapolated and the header has no deceleration.
    const auto c = slidingBodies(20, 1.5), b = slidingBodies(13, 1.5);
    const SnapshotFrame current(20, c), baseline(13, b);
    REQUIRE(encoder.encode(current, &baseline, nullptr) == CodecError::None);
    CHECK(readSliceHeader(config, encoder.slices()[0].payload).header.deceleration == 0);
    CHECK(decodeAllSlices(config, encoder, 20, &baseline, nullptr) == c);
}

TEST_CASE("deceleration: beyond an age of 1024 ticks it is not applied, and too large a value is refused",
          "[codec]")
{
    SnapshotCodecConfig config;
    config.maxBaselineAgeTicks = 4096;
    SnapshotEncoder encoder(config);
    const auto c = slidingBodies(20, 0.05), b = slidingBodies(19, 0.05), r = slidingBodies(18, 0.05);
    for (const std::uint64_t age : {1000u, 1023u, 1030u, 3000u})
    {
        // Same states, far-apart ticks: prediction extrapolates over `age` ticks.
        const SnapshotFrame current(5000, c), baseline(5000 - age, b), reference(5000 - age - 1, r);
        REQUIRE(encoder.encode(current, &baseline, &reference) == CodecError::None);
        INFO("age " << age);
        const SliceHeaderResult header = readSliceHeader(config, encoder.slices()[0].payload);
        REQUIRE(header.ok());
        if (age + 1 > 1024)
        {
            CHECK(header.header.deceleration == 0);
        }
        CHECK(decodeAllSlices(config, encoder, 5000, &baseline, &reference) == c);
    }

    const auto headerWith = [](std::uint32_t deceleration)
    {
        std::vector<std::uint8_t> bytes(16, 0);
        BitWriter writer(bytes);
        writer.writeBool(true); // baseline
        writer.writeBool(true); // reference
        writer.writeBool(true); // last slice
        writer.writeVarUint(0); // age 1
        writer.writeVarUint(0); // gap 1
        writer.writeVarUint(deceleration);
        writer.writeVarUint(0); // first id
        writer.alignToByte();
        return bytes;
    };
    const SliceHeaderResult ok = readSliceHeader(config, headerWith(4095));
    REQUIRE(ok.ok());
    CHECK(ok.header.deceleration == 4095);
    CHECK(readSliceHeader(config, headerWith(4096)).error == CodecError::BadHeader);
    CHECK(readSliceHeader(config, headerWith(0xFFFFFFFEu)).error == CodecError::BadHeader);
}

TEST_CASE("a full snapshot of a regular grid costs about a byte a body", "[codec]")
{
    // 30 x 30 resting cubes 1 m apart (the benchmark's scene before the pusher arrives): each created body is
    // predicted by continuing the step between the two before it.
    const SnapshotCodecConfig config;
    std::vector<QuantizedBody> grid;
    for (std::uint32_t i = 0; i < 30; ++i)
    {
        for (std::uint32_t k = 0; k < 30; ++k)
        {
            grid.push_back(quantizeBody(config.position, 30 * i + k, 1, true,
                                        {static_cast<float>(i) - 14.5f, 0.25f, static_cast<float>(k) - 14.5f},
                                        {0.0f, 0.0f, 0.0f, 1.0f}));
        }
    }
    SnapshotEncoder encoder(config);
    REQUIRE(encoder.encode(SnapshotFrame(1, grid), nullptr, nullptr) == CodecError::None);
    CHECK(encoder.slices().size() == 1);
    CHECK(encoder.stats().payloadBytes <= grid.size());
    CHECK(decodeAllSlices(config, encoder, 1, nullptr, nullptr) == grid);
}

TEST_CASE("every truncation of a valid payload is refused with a reason or decodes to valid bodies",
          "[codec]")
{
    const auto history = sceneHistory(60);
    SnapshotCodecConfig config;
    config.maxSlicePayloadBytes = 300;
    SnapshotEncoder encoder(config);
    const SnapshotFrame baseline(50, history[50]), reference(48, history[48]);
    for (const bool delta : {false, true})
    {
        REQUIRE(encoder.encode(SnapshotFrame(59, history[59]), delta ? &baseline : nullptr,
                               delta ? &reference : nullptr) == CodecError::None);
        for (const EncodedSlice& slice : encoder.slices())
        {
            const std::size_t headerBytes = readSliceHeader(config, slice.payload).header.headerBytes;
            SnapshotDecoder decoder(config);
            for (std::size_t length = 0; length < slice.payload.size(); ++length)
            {
                const auto cut = slice.payload.first(length);
                const CodecError error =
                    decoder.decode(cut, 59, delta ? &baseline : nullptr, delta ? &reference : nullptr);
                INFO("length " << length << " of " << slice.payload.size() << ": " << codecErrorName(error));
                if (length < headerBytes)
                {
                    CHECK(error == CodecError::Truncated);
                }
                else if (error == CodecError::None)
                {
                    for (const QuantizedBody& body : decoder.bodies())
                    {
                        CHECK(validDecodedBody(config, body));
                        CHECK(body.id >= slice.firstId);
                        CHECK(body.id < slice.endId);
                    }
                }
                else
                {
                    CHECK(std::string(codecErrorName(error)) != "unknown");
                }
            }
        }
    }
}

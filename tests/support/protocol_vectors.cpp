// Builds protocol/vectors/ (see protocol_vectors.h and protocol/vectors/README.md).
//
// Scenes are made of quantized bodies directly, from std::mt19937 (whose output the C++ standard fixes)
// through integer arithmetic only, so the vectors do not depend on the physics engine, on floating point or
// on a standard library's distributions. Each kept body of a delta scene is given a role (resting, jitter,
// sliding, a near tie of its largest component...) that puts it in a chosen motion class of CODEC.md 4.3;
// the generator then checks, from the decoder's own account, that every class was reached both changed
// and unchanged, so a vector set that stops covering something fails to build instead of shrinking.
#include "support/protocol_vectors.h"

#include "polytope/protocol/seal.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

namespace polytope::testing
{
namespace
{
using nlohmann::ordered_json;
using protocol::CodecError;
using protocol::DropReason;
using protocol::QuantizedBody;
using protocol::SnapshotCodecConfig;
using protocol::SnapshotFrame;
namespace wire = protocol::wire;

constexpr std::int32_t K = protocol::kOrientationComponentMax;

[[noreturn]] void fail(const std::string& what)
{
    throw std::runtime_error("protocol vectors: " + what);
}

/// A JSON text with one line per structured element and "leaf" values (scalars, arrays of scalars, and
/// objects or arrays holding only those) on one line: bodies and header fields read as rows, and a change to
/// one body is a one-line diff.
bool isLeaf(const ordered_json& value, int depth = 0)
{
    if (!value.is_structured())
    {
        return true;
    }
    if (depth >= 2)
    {
        return false;
    }
    for (const auto& element : value)
    {
        if (!isLeaf(element, depth + 1))
        {
            return false;
        }
    }
    return true;
}

void writeJson(const ordered_json& value, int indent, std::string& out)
{
    if (isLeaf(value))
    {
        out += value.dump();
        return;
    }
    const std::string inner(static_cast<std::size_t>(indent + 1), ' ');
    const bool object = value.is_object();
    out += object ? "{\n" : "[\n";
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it)
    {
        out += first ? "" : ",\n";
        first = false;
        out += inner;
        if (object)
        {
            out += ordered_json(it.key()).dump() + ": ";
        }
        writeJson(*it, indent + 1, out);
    }
    out += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + (object ? "}" : "]");
}

std::string jsonFileText(const ordered_json& value)
{
    std::string out;
    writeJson(value, 0, out);
    out += "\n";
    return out;
}

// ---------------------------------------------------------------------------------------------------------
// Scenes

struct Rng
{
    std::mt19937 engine;
    explicit Rng(std::uint32_t seed) : engine(seed) {}
    /// In [lo, hi], by modulo (a slight bias is harmless; what matters is that it is fixed).
    std::int64_t between(std::int64_t lo, std::int64_t hi)
    {
        return lo + static_cast<std::int64_t>(engine() % static_cast<std::uint32_t>(hi - lo + 1));
    }
    bool chance(std::uint32_t percent) { return engine() % 100u < percent; }
};

std::uint16_t codeOf(std::int64_t k)
{
    return static_cast<std::uint16_t>(std::clamp<std::int64_t>(k, -K, K) + K);
}

std::int32_t kOf(std::uint16_t code)
{
    return protocol::orientationComponent(code);
}

QuantizedBody makeBody(const SnapshotCodecConfig& config, std::uint32_t id, std::uint32_t generation,
                       std::array<std::int64_t, 3> position, std::uint8_t largest,
                       std::array<std::int64_t, 3> k, bool atRest)
{
    QuantizedBody body;
    body.id = id;
    body.generation = generation;
    for (int a = 0; a < 3; ++a)
    {
        body.position[a] =
            static_cast<std::uint32_t>(std::clamp<std::int64_t>(position[a], 0, config.position.maxCode(a)));
        body.orientation[a] = codeOf(k[a]);
    }
    body.largest = largest;
    body.atRest = atRest;
    return body;
}

std::array<std::int64_t, 3> positionOf(const QuantizedBody& body)
{
    return {body.position[0], body.position[1], body.position[2]};
}

/// Small random orientation components: |k_i| <= 1400 keeps every combination a valid smallest-three
/// orientation whose dropped component really is the largest.
std::array<std::int64_t, 3> randomSmallK(Rng& rng)
{
    return {rng.between(-1000, 1000), rng.between(-1000, 1000), rng.between(-1000, 1000)};
}

QuantizedBody withOrientation(QuantizedBody body, const protocol::QuantizedOrientation& orientation)
{
    body.largest = orientation.largest;
    body.orientation = orientation.codes;
    return body;
}

/// The three snapshots a delta vector needs: reference (may be empty), baseline and current.
struct Scene
{
    std::vector<QuantizedBody> reference;
    std::vector<QuantizedBody> baseline;
    std::vector<QuantizedBody> current;
};

void sortScene(Scene& scene)
{
    const auto byId = [](const QuantizedBody& a, const QuantizedBody& b) { return a.id < b.id; };
    std::sort(scene.reference.begin(), scene.reference.end(), byId);
    std::sort(scene.baseline.begin(), scene.baseline.end(), byId);
    std::sort(scene.current.begin(), scene.current.end(), byId);
}

/// A full snapshot's scene: bodies on a grid (the created-body prediction continues its step), a few
/// off-grid, mixed generations and rest flags.
Scene gridScene(const SnapshotCodecConfig& config, std::uint32_t seed, int count)
{
    Rng rng(seed);
    Scene scene;
    const std::int64_t cx = config.position.maxCode(0) / 2;
    const std::int64_t cy = config.position.maxCode(1) / 4;
    const std::int64_t cz = config.position.maxCode(2) / 2;
    for (int i = 0; i < count; ++i)
    {
        const std::uint32_t id = static_cast<std::uint32_t>(i + i / 7);
        const std::uint32_t generation = rng.chance(20) ? static_cast<std::uint32_t>(rng.between(2, 9)) : 1u;
        std::array<std::int64_t, 3> position{cx + (i % 4) * 1024, cy + ((i / 4) % 3) * 1024,
                                             cz + (i / 12) * 1024};
        if (rng.chance(15))
        {
            position = {cx + rng.between(-50000, 50000), cy + rng.between(0, 20000),
                        cz + rng.between(-50000, 50000)};
        }
        const bool plainOrientation = rng.chance(50);
        const std::uint8_t largest = rng.chance(20) ? static_cast<std::uint8_t>(rng.between(0, 2)) : 3;
        scene.current.push_back(makeBody(config, id, generation, position, largest,
                                         plainOrientation ? std::array<std::int64_t, 3>{} : randomSmallK(rng),
                                         rng.chance(60)));
    }
    sortScene(scene);
    return scene;
}

/// A delta scene without a reference: kept bodies resting (class 0) or awake (class 1), changed or not,
/// some turning past a largest-component change; removed bodies, new ids, and new generations in old slots.
Scene noReferenceScene(const SnapshotCodecConfig& config, std::uint32_t seed, int count)
{
    Rng rng(seed);
    Scene scene;
    const std::int64_t cx = config.position.maxCode(0) / 2;
    const std::int64_t cz = config.position.maxCode(2) / 2;
    for (int i = 0; i < count; ++i)
    {
        const std::uint32_t id = static_cast<std::uint32_t>(3 * i / 2);
        const bool atRest = i % 4 < 2;
        QuantizedBody base = makeBody(
            config, id, 1u + static_cast<std::uint32_t>(i % 3),
            {cx + rng.between(-40000, 40000), 2048 + rng.between(0, 8000), cz + rng.between(-40000, 40000)},
            3, randomSmallK(rng), atRest);
        scene.baseline.push_back(base);
        const int role = i % 10;
        if (role == 9)
        {
            continue; // removed
        }
        QuantizedBody now = base;
        if (role == 8)
        {
            // The same slot, a new body: created with a generation the decoder predicts (+1) or not.
            now.generation = base.generation + (i % 4 == 0 ? 1u : 5u);
            now.position[1] += 300;
        }
        else if (role == 1 || role == 3)
        {
            now.position[0] += static_cast<std::uint32_t>(rng.between(1, 40));
            now.position[1] += static_cast<std::uint32_t>(rng.between(0, 3000));
        }
        else if (role == 5)
        {
            // Turned past the tie of x and w: x is now the largest component (dropped, index 0).
            now.largest = 0;
            now.orientation = {codeOf(rng.between(-300, 300)), codeOf(0), codeOf(1997)};
            now.atRest = !now.atRest;
        }
        else if (role == 7)
        {
            now.atRest = !now.atRest; // only the rest flag changes
        }
        scene.current.push_back(now);
    }
    for (int i = 0; i < count / 8; ++i)
    {
        scene.current.push_back(makeBody(config, static_cast<std::uint32_t>(3 * count / 2 + 2 * i),
                                         i == 0 ? 1u : 4u, {cx + 512 * i, 9000, cz}, 3, randomSmallK(rng),
                                         false));
    }
    sortScene(scene);
    return scene;
}

/// A delta scene with a reference `gap` ticks before the baseline and the current tick `age` ticks after
/// it: every motion class of CODEC.md 4.3 (2 to 6 by the roles below, 0 and 1 from bodies newer than the
/// reference or with another generation there), sliding bodies that slow down (the deceleration), and the
/// orientations near a tie of their largest component where the prediction's largest index matters.
Scene motionScene(const SnapshotCodecConfig& config, std::uint32_t seed, int count, std::int64_t gap,
                  std::int64_t age)
{
    Rng rng(seed);
    Scene scene;
    const std::int64_t cx = config.position.maxCode(0) / 2;
    const std::int64_t cy = config.position.maxCode(1) / 3;
    const std::int64_t cz = config.position.maxCode(2) / 2;
    constexpr int kRoles = 20;
    for (int i = 0; i < count; ++i)
    {
        const std::uint32_t id = static_cast<std::uint32_t>(i + i / 5);
        const int role = i % kRoles;
        const std::array<std::int64_t, 3> start{cx + rng.between(-60000, 60000), cy + rng.between(0, 30000),
                                                cz + rng.between(-60000, 60000)};
        const std::array<std::int64_t, 3> k0 = randomSmallK(rng);
        std::array<std::int64_t, 3> velocity{}; // codes per tick
        std::array<std::int64_t, 3> spin{};     // k per tick
        std::int64_t slowdown = 0;              // 1/16 code per tick^2, horizontal, sliding roles only
        bool rest = false;
        bool changes = true;
        std::uint8_t largest = 3;
        std::array<std::int64_t, 3> kRef = k0;
        std::array<std::int64_t, 3> kBase = k0;
        std::array<std::int64_t, 3> kNow = k0;
        std::uint8_t largestNow = 3;
        bool explicitOrientation = false;
        switch (role)
        {
        case 0: // class 2, still resting, unchanged
        case 1: // class 2, still resting, unchanged
            rest = true;
            changes = false;
            break;
        case 2: // class 2, woken and nudged
            rest = true;
            break;
        case 3: // class 3, still awake, unchanged
            changes = false;
            break;
        case 4: // class 3, still awake, then moves a little
            break;
        case 5: // class 4, jitter
            velocity = {0, rng.chance(50) ? 1 : 0, 0};
            if (gap == 1 && velocity[1] == 0)
            {
                velocity[0] = 1;
            }
            velocity[1] = velocity[0] == 0 ? 1 : 0;
            velocity = gap <= 2 ? velocity : std::array<std::int64_t, 3>{};
            if (gap > 2)
            {
                kRef[0] = kBase[0] - 2; // jitter is measured over the whole gap: the same 2 whatever it is
            }
            break;
        case 6: // class 4, jitter, unchanged
            changes = false;
            kRef[1] = kBase[1] + 1;
            break;
        case 7: // class 5, moving slowly and turning
        case 8:
            velocity = {rng.between(-3, 3), rng.between(-3, 3), rng.between(-3, 3)};
            velocity[0] = velocity[0] == 0 ? 2 : velocity[0];
            spin = {rng.between(-2, 2), rng.between(-2, 2), rng.between(-2, 2)};
            break;
        case 9: // class 5, sliding on the ground and slowing down
            velocity = {rng.between(4, 12), 0, rng.between(-12, 12)};
            slowdown = rng.between(4, 40);
            break;
        case 10: // class 6, falling and tumbling
        case 11:
            velocity = {rng.between(-300, 300), -rng.between(100, 400), rng.between(-300, 300)};
            spin = {rng.between(-30, 30), rng.between(-30, 30), rng.between(-30, 30)};
            break;
        case 12: // class 6, sliding fast and slowing down
            velocity = {rng.between(40, 200), 0, rng.between(-200, 200)};
            slowdown = rng.between(16, 80);
            break;
        case 13: // extrapolated orientation passes a tie: P.largest' is 0, and the body's own largest is 0
        case 14: // the same, but the body keeps largest 3: its largest is sent explicitly
            kBase = {2020, 600, 0};
            kRef = {2020 - 5 * gap, 600, 0};
            kNow = {std::min<std::int64_t>(K, 2020 + 5 * age), 600, rng.between(-3, 3)};
            explicitOrientation = true;
            largestNow = role == 13 ? 0 : 3;
            break;
        case 15: // the extrapolation is too long: rejected, P keeps the baseline's orientation and largest
            kBase = {1800, 1800, 1200};
            kRef = {1800 - 100, 1800 - 100, 1200 - 100};
            kNow = {1802, 1799, 1201};
            explicitOrientation = true;
            break;
        case 16: // jitter (class 4) with a component larger than the dropped one: no search, largest stays
            kBase = {2000, 1000, 0};
            kRef = {1999, 1000, 0};
            kNow = {2001, 1000, 0};
            explicitOrientation = true;
            break;
        case 17: // the same body re-expressed with largest 0 (sent explicitly, trend 0)
            kBase = {2000, 1000, 0};
            kRef = {1999, 1000, 0};
            kNow = {2001, 1000, 0};
            explicitOrientation = true;
            largestNow = 0;
            break;
        case 18: // goes to sleep where it is
            rest = false;
            break;
        case 19: // class 3 awake body whose only change is its orientation
            kNow = {k0[0] + 7, k0[1], k0[2] - 3};
            explicitOrientation = true;
            break;
        }
        const bool slides = slowdown > 0;
        auto at = [&](std::int64_t t) // position t ticks after the reference
        {
            std::array<std::int64_t, 3> p{};
            for (int a = 0; a < 3; ++a)
            {
                p[a] = start[a] + velocity[a] * t;
            }
            if (slides)
            {
                p[1] = 2048;
                // Speed falls by about slowdown/16 code per tick^2 along the direction of motion (integers
                // only: the max norm stands for the length).
                const std::int64_t speed = std::max(std::abs(velocity[0]), std::abs(velocity[2]));
                for (int a : {0, 2})
                {
                    p[a] -= velocity[a] * slowdown * t * t / (512 * speed);
                }
            }
            return p;
        };
        if (!explicitOrientation)
        {
            for (int c = 0; c < 3; ++c)
            {
                kRef[c] = std::clamp<std::int64_t>(k0[c], -1400, 1400);
                kBase[c] = std::clamp<std::int64_t>(k0[c] + spin[c] * gap, -1400, 1400);
                kNow[c] = std::clamp<std::int64_t>(k0[c] + spin[c] * (gap + age), -1400, 1400);
            }
            if (role == 5 && gap > 2)
            {
                kRef[0] = kBase[0] - 2;
            }
            if (role == 6)
            {
                kRef[1] = kBase[1] + 1;
            }
        }
        const QuantizedBody ref = makeBody(config, id, 1, at(0), largest, kRef, rest);
        QuantizedBody base = makeBody(config, id, 1, at(gap), largest, kBase, rest);
        if (role == 0 || role == 1 || role == 2 || role == 3 || role == 4 || role == 18 || role == 19)
        {
            base = makeBody(config, id, 1, at(0), largest, kRef, rest); // the same as the reference
        }
        if (role == 6)
        {
            base = makeBody(config, id, 1, at(0), largest, kBase, rest);
        }
        QuantizedBody now = base;
        if (changes)
        {
            now = makeBody(config, id, 1, at(gap + age), largestNow, kNow, rest);
            if (role == 2 || role == 4)
            {
                now = base;
                now.position[0] += static_cast<std::uint32_t>(rng.between(1, 5));
                now.atRest = false;
            }
            if (role == 18)
            {
                now = base;
                now.atRest = true;
            }
            if (role == 19)
            {
                now = makeBody(config, id, 1, positionOf(base), 3, kNow, rest);
            }
            if (largestNow != 3)
            {
                // The same rotation with another dropped component (exactly, as the codec re-expresses).
                now = withOrientation(
                    now, protocol::reexpressOrientation(
                             {3, {codeOf(kNow[0]), codeOf(kNow[1]), codeOf(kNow[2])}}, largestNow));
            }
            if (role >= 7 && role <= 12 && !slides)
            {
                for (int a = 0; a < 3; ++a) // a small miss of the prediction
                {
                    now.position[a] = static_cast<std::uint32_t>(std::clamp<std::int64_t>(
                        now.position[a] + rng.between(-2, 2), 0, config.position.maxCode(a)));
                }
            }
        }
        scene.reference.push_back(ref);
        scene.baseline.push_back(base);
        scene.current.push_back(now);
    }
    // Bodies the reference does not know (classes 0 and 1): newer than it, or another generation there.
    const std::uint32_t next = static_cast<std::uint32_t>(count + count / 5 + 1);
    for (std::uint32_t i = 0; i < 6; ++i)
    {
        const bool rest = i % 2 == 0;
        QuantizedBody base =
            makeBody(config, next + i, 2, {cx + 4096 * i, cy, cz}, 3, randomSmallK(rng), rest);
        if (i >= 4)
        {
            QuantizedBody old = base;
            old.generation = 1;
            scene.reference.push_back(old);
        }
        scene.baseline.push_back(base);
        QuantizedBody now = base;
        if (i % 3 != 2)
        {
            now.position[2] += 10 + i;
        }
        scene.current.push_back(now);
    }
    // Removed since the baseline, replaced by a new generation, and created with new ids.
    for (std::uint32_t i = 0; i < 3; ++i)
    {
        const QuantizedBody gone = makeBody(config, next + 10 + i, 1, {cx, cy + 100 * i, cz}, 3, {}, true);
        scene.reference.push_back(gone);
        scene.baseline.push_back(gone);
        if (i == 1)
        {
            QuantizedBody again = gone;
            again.generation = 2;
            again.atRest = false;
            scene.current.push_back(again);
        }
    }
    for (std::uint32_t i = 0; i < 4; ++i)
    {
        scene.current.push_back(
            makeBody(config, next + 20 + 2 * i, 1, {cx - 2048 * i, cy + 700, cz + 33 * i}, 3, {}, false));
    }
    sortScene(scene);
    return scene;
}

// ---------------------------------------------------------------------------------------------------------
// Snapshot vectors

ordered_json frameJson(std::uint64_t tick, std::span<const QuantizedBody> bodies)
{
    ordered_json bodiesJson = ordered_json::array();
    for (const QuantizedBody& body : bodies)
    {
        bodiesJson.push_back(bodyJson(body));
    }
    return {{"tick", tick}, {"bodies", bodiesJson}};
}

ordered_json sliceHeaderJson(const protocol::SliceHeader& header, std::uint64_t tick)
{
    ordered_json out;
    out["hasBaseline"] = header.hasBaseline;
    out["hasReference"] = header.hasReference;
    out["baselineAge"] = header.baselineAge;
    out["baselineTick"] = header.hasBaseline ? ordered_json(tick - header.baselineAge) : ordered_json();
    out["referenceGap"] = header.referenceGap;
    out["referenceTick"] =
        header.hasReference ? ordered_json(tick - header.baselineAge - header.referenceGap) : ordered_json();
    out["deceleration"] = header.deceleration;
    out["firstId"] = header.firstId;
    out["endId"] = header.endId;
    out["isLastSlice"] = header.isLastSlice();
    out["checksum"] = header.checksum;
    out["headerBytes"] = header.headerBytes;
    return out;
}

/// Coverage gathered over all snapshot vectors (checked once at the end).
struct Coverage
{
    std::set<int> classesChanged;
    std::set<int> classesUnchanged;
    bool created = false, removed = false, generationChange = false, largestChange = false,
         multiSlice = false, oldestBaseline = false;
    bool searchTaken = false;   ///< P.largest' != b.largest and the body took it (largestAsPredicted 1)
    bool searchRefused = false; ///< P.largest' != b.largest and the body kept b.largest (sent explicitly)
    bool extrapolationRejected = false; ///< CODEC.md 4.3 step 8 rejected the orientation's extrapolation
    bool noSearchBelowClass5 = false;   ///< class 4 with a component larger than the dropped one
};

/// `rounded(n, d)` of CODEC.md 4.3: to nearest, halves away from zero.
std::int64_t roundedDivision(std::int64_t n, std::int64_t d)
{
    return n >= 0 ? (2 * n + d) / (2 * d) : -((-2 * n + d) / (2 * d));
}

/// P.largest' of a changed kept body (CODEC.md 4.3 steps 8 and 9), computed here from the text of CODEC.md
/// rather than taken from the codec, and written into the vectors to help an implementer find where a
/// decoder goes wrong. `rejected` tells whether step 8 rejected the extrapolation.
std::uint8_t predictedLargest(const QuantizedBody& b, const QuantizedBody* r, int motionClass, std::int64_t h,
                              std::int64_t g, bool& rejected)
{
    rejected = false;
    if (motionClass < 5 || r == nullptr)
    {
        return b.largest;
    }
    const protocol::QuantizedOrientation rPrime =
        protocol::reexpressOrientation({r->largest, r->orientation}, b.largest);
    std::array<std::int64_t, 3> k{};
    std::int64_t lengthSquared = 0;
    for (int i = 0; i < 3; ++i)
    {
        const std::int64_t bk = kOf(b.orientation[i]);
        k[i] = std::clamp<std::int64_t>(bk + roundedDivision((bk - kOf(rPrime.codes[i])) * h, g), -K, K);
        lengthSquared += k[i] * k[i];
    }
    if (lengthSquared > protocol::kOrientationNormSquared)
    {
        rejected = true;
        return b.largest;
    }
    std::int64_t best = protocol::kOrientationNormSquared - lengthSquared;
    std::uint8_t largest = b.largest;
    int component = 0;
    for (std::uint8_t index = 0; index < 4; ++index)
    {
        if (index == b.largest)
        {
            continue;
        }
        const std::int64_t c = k[component++];
        if (c * c > best)
        {
            best = c * c;
            largest = index;
        }
    }
    return largest;
}

struct SnapshotCase
{
    std::string name;
    std::string description;
    SnapshotCodecConfig config;
    std::uint64_t tick = 0;
    Scene scene;
    std::int64_t baselineAge = 0;  ///< 0: full snapshot
    std::int64_t referenceGap = 0; ///< 0: none
};

/// Encodes a case, decodes every slice back, and writes it with its meaning. Also returns the frames and
/// payloads for the malformed cases built from it.
struct EncodedCase
{
    ordered_json json;
    std::vector<std::vector<std::uint8_t>> payloads;
};

EncodedCase encodeCase(const SnapshotCase& c, Coverage& coverage)
{
    const std::uint64_t baselineTick = c.tick - static_cast<std::uint64_t>(c.baselineAge);
    const std::uint64_t referenceTick = baselineTick - static_cast<std::uint64_t>(c.referenceGap);
    const SnapshotFrame current(c.tick, c.scene.current);
    const SnapshotFrame baseline(baselineTick, c.scene.baseline);
    const SnapshotFrame reference(referenceTick, c.scene.reference);
    const SnapshotFrame* baselinePtr = c.baselineAge > 0 ? &baseline : nullptr;
    const SnapshotFrame* referencePtr = c.referenceGap > 0 ? &reference : nullptr;

    protocol::SnapshotEncoder encoder(c.config);
    const CodecError error = encoder.encode(current, baselinePtr, referencePtr);
    if (error != CodecError::None)
    {
        fail(c.name + ": encode failed: " + protocol::codecErrorName(error));
    }
    EncodedCase out;
    ordered_json& json = out.json;
    json["name"] = c.name;
    json["description"] = c.description;
    json["config"] = codecConfigJson(c.config);
    json["tick"] = c.tick;
    json["baseline"] = baselinePtr ? frameJson(baselineTick, c.scene.baseline) : ordered_json();
    json["reference"] = referencePtr ? frameJson(referenceTick, c.scene.reference) : ordered_json();
    json["slices"] = ordered_json::array();

    protocol::SnapshotDecoder decoder(c.config);
    std::vector<protocol::SnapshotDecoder::KeptCoding> kept;
    std::vector<QuantizedBody> decodedAll;
    for (const protocol::EncodedSlice& slice : encoder.slices())
    {
        out.payloads.emplace_back(slice.payload.begin(), slice.payload.end());
        const CodecError decoded = decoder.decode(slice.payload, c.tick, baselinePtr, referencePtr);
        if (decoded != CodecError::None)
        {
            fail(c.name + ": decode failed: " + protocol::codecErrorName(decoded));
        }
        decoder.keptCoding(kept);
        const protocol::SliceHeader& header = decoder.header();
        ordered_json sliceJson;
        sliceJson["payload"] = toHex(slice.payload);
        sliceJson["header"] = sliceHeaderJson(header, c.tick);
        ordered_json bodies = ordered_json::array();
        std::size_t keptIndex = 0;
        for (const QuantizedBody& body : decoder.bodies())
        {
            ordered_json row = bodyJson(body);
            if (keptIndex < kept.size() && kept[keptIndex].id == body.id)
            {
                const auto& coding = kept[keptIndex++];
                row["coding"] = "kept";
                row["class"] = coding.motionClass;
                row["changed"] = coding.changed;
                (coding.changed ? coverage.classesChanged : coverage.classesUnchanged)
                    .insert(coding.motionClass);
                const auto it =
                    std::lower_bound(c.scene.baseline.begin(), c.scene.baseline.end(), body.id,
                                     [](const QuantizedBody& b, std::uint32_t id) { return b.id < id; });
                coverage.largestChange |= coding.changed && it->largest != body.largest;
                if (coding.changed)
                {
                    const QuantizedBody* r = nullptr;
                    for (const QuantizedBody& candidate : c.scene.reference)
                    {
                        r = candidate.id == body.id && candidate.generation == body.generation &&
                                    referencePtr != nullptr
                                ? &candidate
                                : r;
                    }
                    bool rejected = false;
                    const std::uint8_t predicted =
                        predictedLargest(*it, r, coding.motionClass, c.baselineAge,
                                         std::max<std::int64_t>(c.referenceGap, 1), rejected);
                    row["predictedLargest"] = predicted;
                    coverage.searchTaken |= predicted != it->largest && body.largest == predicted;
                    coverage.searchRefused |= predicted != it->largest && body.largest == it->largest;
                    coverage.extrapolationRejected |= rejected;
                    std::int64_t lengthSquared = 0;
                    std::int64_t largestComponent = 0;
                    for (int i = 0; i < 3; ++i)
                    {
                        const std::int64_t bk = kOf(it->orientation[i]);
                        lengthSquared += bk * bk;
                        largestComponent = std::max(largestComponent, bk * bk);
                    }
                    coverage.noSearchBelowClass5 |=
                        coding.motionClass == 4 &&
                        largestComponent > protocol::kOrientationNormSquared - lengthSquared;
                }
            }
            else
            {
                row["coding"] = "created";
                coverage.created = true;
            }
            bodies.push_back(row);
            decodedAll.push_back(body);
        }
        ordered_json removed = ordered_json::array();
        if (baselinePtr)
        {
            for (const QuantizedBody& old : c.scene.baseline)
            {
                if (old.id < header.firstId || old.id >= header.endId)
                {
                    continue;
                }
                const auto& now = decoder.bodies();
                const auto it =
                    std::lower_bound(now.begin(), now.end(), old.id,
                                     [](const QuantizedBody& b, std::uint32_t id) { return b.id < id; });
                if (it == now.end() || it->id != old.id || it->generation != old.generation)
                {
                    removed.push_back(old.id);
                    coverage.removed = true;
                    coverage.generationChange |= it != now.end() && it->id == old.id;
                }
            }
        }
        sliceJson["removedIds"] = removed;
        sliceJson["bodies"] = bodies;
        json["slices"].push_back(sliceJson);
    }
    if (decodedAll != c.scene.current)
    {
        fail(c.name + ": the slices do not decode to the scene");
    }
    coverage.multiSlice |= encoder.slices().size() > 1;
    coverage.oldestBaseline |= c.baselineAge + c.referenceGap == c.config.maxBaselineAgeTicks;
    return out;
}

ordered_json malformedSnapshot(const std::string& name, const std::string& description,
                               const std::string& basedOn, const SnapshotCodecConfig& config,
                               std::uint64_t tick, bool withBaseline, bool withReference,
                               std::span<const std::uint8_t> payload, CodecError expected,
                               const SnapshotCase& scene)
{
    const std::uint64_t baselineTick = scene.tick - static_cast<std::uint64_t>(scene.baselineAge);
    const SnapshotFrame baseline(baselineTick, scene.scene.baseline);
    const SnapshotFrame reference(baselineTick - static_cast<std::uint64_t>(scene.referenceGap),
                                  scene.scene.reference);
    protocol::SnapshotDecoder decoder(config);
    const CodecError got = decoder.decode(payload, tick, withBaseline ? &baseline : nullptr,
                                          withReference ? &reference : nullptr);
    if (got != expected)
    {
        fail(name + ": expected " + protocol::codecErrorName(expected) + ", got " +
             protocol::codecErrorName(got));
    }
    ordered_json out;
    out["name"] = name;
    out["description"] = description;
    out["framesOf"] = basedOn;
    out["useBaseline"] = withBaseline;
    out["useReference"] = withReference;
    out["config"] = codecConfigJson(config);
    out["tick"] = tick;
    out["payload"] = toHex(payload);
    out["error"] = protocol::codecErrorName(expected);
    return out;
}

ordered_json snapshotVectors()
{
    SnapshotCodecConfig base;
    base.maxBaselineAgeTicks = 256; // what the reference server announces
    Coverage coverage;
    std::vector<SnapshotCase> cases;

    cases.push_back({"full-grid", "A full snapshot (no baseline): every body created, most on a grid.", base,
                     120, gridScene(base, 11, 48), 0, 0});
    {
        SnapshotCodecConfig big = base;
        cases.push_back({"full-multi-slice",
                         "A full snapshot too large for one datagram: several slices, each on its own.", big,
                         900, gridScene(big, 12, 500), 0, 0});
    }
    cases.push_back({"no-reference",
                     "Baseline only: kept bodies of classes 0 and 1 (changed or not, rest flag and largest "
                     "index changes), removed bodies, new ids, new generations in old slots.",
                     base, 500, noReferenceScene(base, 21, 60), 3, 0});
    cases.push_back({"reference-classes",
                     "Baseline and reference: every motion class 0-6, extrapolation with deceleration, the "
                     "largest-index search and its rejection, created and removed bodies.",
                     base, 1000, motionScene(base, 31, 80, 2, 3), 3, 2});
    cases.push_back({"reference-gap-1", "As reference-classes with a reference 1 tick before the baseline.",
                     base, 1100, motionScene(base, 32, 60, 1, 1), 1, 1});
    {
        SnapshotCodecConfig small = base;
        small.maxSlicePayloadBytes = 64;
        cases.push_back(
            {"delta-multi-slice",
             "A delta snapshot cut into many slices by the smallest maxSlicePayloadBytes allowed (64).",
             small, 2000, motionScene(small, 33, 60, 2, 2), 2, 2});
    }
    cases.push_back(
        {"oldest-baseline",
         "Baseline age + reference gap = maxBaselineAgeTicks (256), the oldest a payload may name.", base,
         5000, motionScene(base, 34, 40, 56, 200), 200, 56});
    {
        SnapshotCodecConfig long_ = base;
        long_.maxBaselineAgeTicks = 2048;
        cases.push_back({"deceleration-age-limit",
                         "Baseline age + reference gap > 1024: the deceleration is not applied (CODEC.md 4.3 "
                         "step 6).",
                         long_, 9000, motionScene(long_, 35, 40, 100, 1000), 1000, 100});
    }
    {
        SnapshotCase same{"identical-to-baseline",
                          "Nothing changed since the baseline.",
                          base,
                          3000,
                          motionScene(base, 36, 30, 2, 2),
                          2,
                          2};
        same.scene.current = same.scene.baseline;
        cases.push_back(same);
    }

    ordered_json vectors = ordered_json::array();
    std::map<std::string, EncodedCase> encoded;
    for (const SnapshotCase& c : cases)
    {
        EncodedCase e = encodeCase(c, coverage);
        vectors.push_back(e.json);
        encoded[c.name] = std::move(e);
    }
    for (int cls = 0; cls <= 6; ++cls)
    {
        if (!coverage.classesChanged.count(cls) || !coverage.classesUnchanged.count(cls))
        {
            fail("motion class " + std::to_string(cls) + " not covered both changed and unchanged");
        }
    }
    if (!coverage.created || !coverage.removed || !coverage.generationChange || !coverage.largestChange ||
        !coverage.multiSlice || !coverage.oldestBaseline || !coverage.searchTaken ||
        !coverage.searchRefused || !coverage.extrapolationRejected || !coverage.noSearchBelowClass5)
    {
        fail("a snapshot feature is not covered");
    }

    // Malformed payloads, each decoded against the frames of a valid vector ("framesOf").
    ordered_json malformed = ordered_json::array();
    const auto findCase = [&](const std::string& name) -> const SnapshotCase&
    {
        for (const SnapshotCase& c : cases)
        {
            if (c.name == name)
            {
                return c;
            }
        }
        fail("no case " + name);
    };
    {
        const SnapshotCase& c = findCase("reference-classes");
        const std::vector<std::uint8_t>& good = encoded[c.name].payloads[0];
        malformed.push_back(malformedSnapshot("truncated-header", "Cut inside the header's checksum.", c.name,
                                              c.config, c.tick, true, true, std::span(good).first(3),
                                              CodecError::Truncated, c));
        malformed.push_back(
            malformedSnapshot("missing-baseline", "A delta payload decoded without its baseline.", c.name,
                              c.config, c.tick, false, false, good, CodecError::MissingBaseline, c));
        malformed.push_back(malformedSnapshot(
            "wrong-tick",
            "The envelope's tick does not put the baseline where the client "
            "has it.",
            c.name, c.config, c.tick + 1, true, true, good, CodecError::MissingBaseline, c));
        SnapshotCodecConfig strict = c.config;
        strict.maxBaselineAgeTicks = 4;
        malformed.push_back(malformedSnapshot(
            "baseline-too-old", "baselineAge + referenceGap (5) above maxBaselineAgeTicks (4).", c.name,
            strict, c.tick, true, true, good, CodecError::BadHeader, c));
        std::vector<std::uint8_t> checksum = good;
        const auto header = protocol::readSliceHeader(c.config, good).header;
        checksum[header.headerBytes - 4] ^= 0x01;
        malformed.push_back(malformedSnapshot(
            "checksum-mismatch",
            "One bit of the checksum flipped: the bodies decode but are not "
            "the state the checksum describes.",
            c.name, c.config, c.tick, true, true, checksum, CodecError::ChecksumMismatch, c));
        // Raw headers (CODEC.md 4.1), written bit by bit.
        const auto rawHeader = [](auto write)
        {
            std::vector<std::uint8_t> bytes(16, 0);
            protocol::BitWriter writer(bytes);
            write(writer);
            return bytes;
        };
        malformed.push_back(malformedSnapshot("reference-without-baseline", "hasBaseline 0, hasReference 1.",
                                              c.name, c.config, c.tick, false, false,
                                              rawHeader(
                                                  [](protocol::BitWriter& w)
                                                  {
                                                      w.writeBool(false);
                                                      w.writeBool(true);
                                                      w.writeBool(true);
                                                      w.writeVarUint(0);
                                                      w.writeVarUint(0);
                                                      w.writeVarUint(0);
                                                  }),
                                              CodecError::BadHeader, c));
        malformed.push_back(malformedSnapshot("deceleration-too-large", "A deceleration of 4096.", c.name,
                                              c.config, c.tick, true, true,
                                              rawHeader(
                                                  [](protocol::BitWriter& w)
                                                  {
                                                      w.writeBool(true);
                                                      w.writeBool(true);
                                                      w.writeBool(true);
                                                      w.writeVarUint(2);
                                                      w.writeVarUint(1);
                                                      w.writeVarUint(4096);
                                                      w.writeVarUint(0);
                                                  }),
                                              CodecError::BadHeader, c));
        malformed.push_back(malformedSnapshot("id-range-past-2^32", "firstId 2^32 - 1 and a range of 2 ids.",
                                              c.name, c.config, c.tick, false, false,
                                              rawHeader(
                                                  [](protocol::BitWriter& w)
                                                  {
                                                      w.writeBool(false);
                                                      w.writeBool(false);
                                                      w.writeBool(false);
                                                      w.writeVarUint(0xFFFFFFFFu);
                                                      w.writeVarUint(1);
                                                  }),
                                              CodecError::BadHeader, c));
    }
    {
        const SnapshotCase& c = findCase("full-grid");
        const std::vector<std::uint8_t>& good = encoded[c.name].payloads[0];
        SnapshotCodecConfig few = c.config;
        few.maxBodies = 10;
        malformed.push_back(malformedSnapshot("too-many-bodies", "48 created bodies with maxBodies 10.",
                                              c.name, few, c.tick, false, false, good,
                                              CodecError::TooManyBodies, c));
        // Flipped bytes of the range-coded part, found by a fixed walk: the first that gives each error.
        const std::size_t start = protocol::readSliceHeader(c.config, good).header.headerBytes;
        std::set<CodecError> seen{CodecError::ChecksumMismatch};
        protocol::SnapshotDecoder decoder(c.config);
        for (std::size_t i = start; i < good.size(); ++i)
        {
            for (std::uint8_t mask : {0x80, 0x10, 0x01, 0xFF})
            {
                std::vector<std::uint8_t> bad = good;
                bad[i] ^= mask;
                const CodecError got = decoder.decode(bad, c.tick, nullptr, nullptr);
                if (got == CodecError::None || seen.count(got))
                {
                    continue;
                }
                seen.insert(got);
                malformed.push_back(malformedSnapshot(
                    std::string("flipped-") + protocol::codecErrorName(got),
                    "Byte " + std::to_string(i) + " of full-grid's payload xor " + std::to_string(mask) + ".",
                    c.name, c.config, c.tick, false, false, bad, got, c));
            }
        }
    }

    ordered_json out;
    out["format"] = "polytope-vectors snapshots";
    out["protocolVersion"] = protocol::kProtocolVersion;
    out["orientationComponentMax"] = K;
    out["vectors"] = vectors;
    out["malformed"] = malformed;
    return out;
}

// ---------------------------------------------------------------------------------------------------------
// Packet vectors

std::vector<std::uint8_t> bytesOf(std::span<const std::uint8_t> bytes)
{
    return {bytes.begin(), bytes.end()};
}

/// decodePacket wants 8-byte-aligned bytes.
protocol::DecodeResult decodeAligned(std::span<const std::uint8_t> bytes, std::vector<std::uint64_t>& storage)
{
    storage.assign((bytes.size() + 7) / 8, 0);
    std::memcpy(storage.data(), bytes.data(), bytes.size());
    return protocol::decodePacket({reinterpret_cast<const std::uint8_t*>(storage.data()), bytes.size()});
}

ordered_json plainPacket(const std::string& name, const std::string& description,
                         std::span<const std::uint8_t> datagram)
{
    std::vector<std::uint64_t> storage;
    const protocol::DecodeResult result = decodeAligned(datagram, storage);
    if (!result.ok())
    {
        fail(name + ": refused: " + protocol::dropReasonName(result.reason));
    }
    ordered_json out;
    out["name"] = name;
    out["description"] = description;
    out["datagram"] = toHex(datagram);
    out["packet"] = packetJson(*result.packet);
    return out;
}

/// The offset of the PacketHeader struct in a datagram this writer made (found by its first 6 bytes).
std::size_t headerOffset(std::span<const std::uint8_t> datagram)
{
    const std::array<std::uint8_t, 6> start{0x50, 0x4C, 0x54, 0x50, protocol::kProtocolVersion, 0};
    for (std::size_t i = 8; i + start.size() <= datagram.size(); ++i)
    {
        if (std::equal(start.begin(), start.end(), datagram.begin() + static_cast<std::ptrdiff_t>(i)))
        {
            return i;
        }
    }
    fail("no header found");
}

ordered_json malformedPacket(const std::string& name, const std::string& description,
                             std::span<const std::uint8_t> datagram, DropReason expected)
{
    std::vector<std::uint64_t> storage;
    const protocol::DecodeResult result = decodeAligned(datagram, storage);
    if (result.ok() || result.reason != expected)
    {
        fail(name + ": expected " + protocol::dropReasonName(expected) + ", got " +
             (result.ok() ? "ok" : protocol::dropReasonName(result.reason)));
    }
    ordered_json out;
    out["name"] = name;
    out["description"] = description;
    out["datagram"] = toHex(datagram);
    out["dropReason"] = protocol::dropReasonName(expected);
    if (result.connectRequestOfOtherVersion)
    {
        out["connectRequestOfVersion"] = result.otherVersion;
    }
    return out;
}

std::vector<std::uint8_t> sequenceBytes(std::uint8_t first, std::size_t count)
{
    std::vector<std::uint8_t> out(count);
    for (std::size_t i = 0; i < count; ++i)
    {
        out[i] = static_cast<std::uint8_t>(first + i);
    }
    return out;
}

ordered_json packetVectors()
{
    protocol::PacketWriter writer;
    ordered_json plain = ordered_json::array();
    std::map<std::string, std::vector<std::uint8_t>> datagrams;
    const auto add =
        [&](const std::string& name, const std::string& description, std::span<const std::uint8_t> datagram)
    {
        datagrams[name] = bytesOf(datagram);
        plain.push_back(plainPacket(name, description, datagram));
    };
    const protocol::HeaderFields first{};
    const protocol::HeaderFields acked{7, 41, 0x8000000Bu, protocol::kHeaderFlagAckValid};
    const protocol::HeaderFields askFull{
        8, 42, 0x1u, protocol::kHeaderFlagAckValid | protocol::kHeaderFlagFullSnapshotRequest};

    protocol::TokenCredentialFields token;
    token.expireTime = 1893456000; // 2030-01-01
    const auto nonce = sequenceBytes(0x60, token.nonce.size());
    std::copy(nonce.begin(), nonce.end(), token.nonce.begin());
    token.sealed = sequenceBytes(0x80, 96);
    const auto cookie = sequenceBytes(0x40, protocol::kCookieBytes);

    add("connect-request", "Tokenless ConnectRequest, padded to 512 bytes.",
        writer.connectRequest(first, "vector-client"));
    add("connect-request-token", "ConnectRequest with a room and a connect token (opaque sealed bytes here).",
        writer.connectRequest({1, 0, 0, 0}, "vector-client", "arena", &token));
    add("challenge", "Challenge: a 36-byte cookie, sequence 0, flags 0 (stateless).",
        writer.challenge(first, cookie));
    add("challenge-response", "ChallengeResponse asking 30 snapshots per second as a spectator.",
        writer.challengeResponse({2, 0, 0, 0}, cookie, "vector-client", "arena", 30, true, &token));
    {
        protocol::SessionParameters session;
        session.clientId = 3;
        session.tickRateHz = 60;
        session.snapshotRateHz = 20;
        session.scene = "pile1000";
        session.firstTick = 123456;
        session.room = "arena";
        add("connect-accepted", "ConnectAccepted with the default quantization and maxBaselineAgeTicks 256.",
            writer.connectAccepted(first, session));
    }
    add("connect-denied", "ConnectDenied: unknown room.",
        writer.connectDenied(first, wire::DenyReason::UnknownRoom));
    add("connect-denied-by-game", "ConnectDenied (version 6): the room's game logic refused, saying why.",
        writer.connectDenied(first, wire::DenyReason::RefusedByGame, std::string_view("the match is full")));
    {
        const auto payload = sequenceBytes(0x10, 40); // the envelope does not look inside the payload
        add("snapshot", "Snapshot of tick 6000 at 100 s; the payload is opaque to the envelope.",
            writer.snapshot(acked, 6000, 100.0, payload));
    }
    {
        std::vector<protocol::CatalogueEntry> entries(3);
        entries[0] = {0, 1, wire::ShapeKind::Plane, false, false, {0.0f, 1.0f, 0.0f}, 0};
        entries[1] = {1, 2, wire::ShapeKind::Box, false, true, {0.5f, 0.25f, 1.0f}, 0};
        entries[2] = {2, 1, wire::ShapeKind::Sphere, true, false, {0.0f, 0.0f, 0.0f}, 0};
        add("catalogue", "Catalogue of three entries (a plane, an owned box, a removed body), no geometry.",
            writer.catalogue(acked, entries));
        entries[2] = {2, 1, wire::ShapeKind::Hull, false, false, {0.5f, 0.5f, 0.5f}, 0x0123456789ABCDEFull};
        add("catalogue-geometry", "Catalogue whose hull entry names its geometry by hash.",
            writer.catalogue(acked, entries));
    }
    {
        const std::vector<protocol::InputCommand> inputs{
            {6001, 1, 4, 2, wire::InputKind::Force, {10.0f, 0.0f, -2.5f}},
            {6001, 2, 4, 2, wire::InputKind::TargetVelocity, {1.0f, 0.0f, 0.0f}},
            {6002, 3, 0, 0, wire::InputKind::Spawn, {0.0f, 5.0f, 0.0f}},
            {6003, 4, 4, 2, wire::InputKind::Remove, {0.0f, 0.0f, 0.0f}}};
        add("client-input",
            "ClientInput with four inputs, Spawn (id and generation 0) and Remove among them.",
            writer.clientInput(acked, inputs));
        add("client-input-empty", "ClientInput without inputs and asking for a full snapshot (flags 3).",
            writer.clientInput(askFull, {}));
        const std::string shot = "fire 12";
        const std::vector<std::uint8_t> blob = sequenceBytes(0x40, 5);
        const std::vector<protocol::GameMessageFields> messages{
            {7, 6004, 5990, 5993, 0.25f,
             std::span(reinterpret_cast<const std::uint8_t*>(shot.data()), shot.size())},
            {8, 6005, 5993, 5993, 0.0f, blob}};
        add("client-input-game-messages",
            "ClientInput (version 6) with one input and two game messages, the first seen between ticks 5990 "
            "and 5993 at a quarter of the way.",
            writer.clientInput(acked, std::span(inputs).first(1), messages));
    }
    {
        const std::string score = R"({"red":2,"blue":1})";
        add("game-state-room", "GameState (version 6): the room's state, version 3, JSON text of the game's.",
            writer.gameState(acked, wire::GameStateScope::Room, 3,
                             std::span(reinterpret_cast<const std::uint8_t*>(score.data()), score.size())));
        add("game-state-client", "GameState (version 6): the receiving client's own state, version 1, empty.",
            writer.gameState(acked, wire::GameStateScope::Client, 1, {}));
    }
    add("keep-alive", "KeepAlive at 12.5 s of the sender's clock.", writer.keepAlive(acked, 12.5));
    add("disconnect", "Disconnect: the client quits.",
        writer.disconnect(acked, wire::DisconnectReason::ClientQuit));
    add("disconnect-kicked", "Disconnect (version 6): kicked by the room's game logic, saying why.",
        writer.disconnect(acked, wire::DisconnectReason::Kicked, "idle for 60 s"));
    {
        protocol::AdminCommandFields command;
        command.room = "arena";
        command.nonce = 0x1122334455667788ull;
        command.time = 1800000000.0;
        command.op = wire::AdminOp::SetGravity;
        command.vector = {0.0f, -9.81f, 0.0f};
        const auto commandBytes = protocol::encodeAdminCommand(command);
        const protocol::AdminMacKey key = protocol::deriveAdminMacKey("vector-admin-key");
        const protocol::AdminMac mac = protocol::adminMac(key, commandBytes);
        add("admin-request",
            "AdminRequest (SetGravity) with its MAC under the admin key \"vector-admin-key\".",
            writer.adminRequest(first, commandBytes, mac));
        add("admin-reply", "AdminReply signed with the admin key \"vector-admin-key\".",
            writer.adminReply(first, command.nonce, true, "gravity set", &key));
    }
    {
        const auto data = sequenceBytes(0x00, 100);
        add("geometry-slice", "The last slice (offset 1024) of a 1124-byte hull geometry.",
            writer.geometrySlice(acked, 0xFEDCBA9876543210ull, wire::ShapeKind::Hull, 1124, 1024, data));
    }
    {
        protocol::JoinRequest join;
        join.clientName = "vector-client";
        join.room = "arena";
        join.snapshotFormat = wire::SnapshotFormat::Structured;
        join.snapshotVelocities = true;
        add("challenge-response-structured",
            "ChallengeResponse asking for structured snapshots with velocities (STANDARD.md 14.1).",
            writer.challengeResponse({2, 0, 0, 0}, cookie, join, &token));
        protocol::SessionParameters session;
        session.clientId = 3;
        session.tickRateHz = 60;
        session.snapshotRateHz = 20;
        session.scene = "pile1000";
        session.firstTick = 123456;
        session.room = "arena";
        session.snapshotFormat = wire::SnapshotFormat::Structured;
        session.snapshotVelocities = true;
        add("connect-accepted-structured", "ConnectAccepted granting structured snapshots with velocities.",
            writer.connectAccepted(first, session));
    }
    {
        // One structured slice against a held tick: body 1 moved and came to rest, body 2 is gone, body 3
        // is new; the unchanged body 0 is not listed but is in the checksum (STANDARD.md 14.2 to 14.4).
        const SnapshotCodecConfig config;
        const std::vector<QuantizedBody> baseline{
            makeBody(config, 0, 1, {1000, 2000, 3000}, 3, {0, 0, 0}, true),
            makeBody(config, 1, 1, {4000, 2100, 3000}, 3, {100, -200, 300}, false),
            makeBody(config, 2, 4, {5000, 2000, 3000}, 3, {0, 0, 0}, true)};
        const std::vector<QuantizedBody> current{
            baseline[0], makeBody(config, 1, 1, {4000, 2050, 3000}, 3, {100, -200, 300}, true),
            makeBody(config, 3, 1, {6000, 9000, 3000}, 0, {10, -20, 30}, false)};
        const std::vector<protocol::BodyVelocity> velocityById{
            {}, {{0.5f, -1.0f, 0.0f}, {0.0f, 0.25f, 0.0f}}, {}, {{0.0f, -9.75f, 0.0f}, {1.0f, 0.0f, -0.5f}}};
        const SnapshotFrame baselineFrame(5990, baseline);
        protocol::StructuredSnapshotEncoder encoder;
        encoder.encode(SnapshotFrame(6000, current), &baselineFrame, 100.0, velocityById, true);
        if (encoder.slices().size() != 1)
        {
            fail("structured-snapshot: expected one slice");
        }
        const protocol::StructuredSliceView& slice = encoder.slices()[0];
        std::vector<QuantizedBody> applied;
        if (protocol::applyStructuredSlice(config.position, slice, baseline, applied) != CodecError::None ||
            applied != current)
        {
            fail("structured-snapshot: the slice does not rebuild the current frame");
        }
        add("structured-snapshot",
            "StructuredSnapshot of tick 6000 against held tick 5990, the whole id space: two bodies listed "
            "with "
            "velocities, one id removed; checksum over all three bodies of tick 6000.",
            writer.structuredSnapshot(acked, slice));
    }

    // Sealed datagrams under a published test key.
    protocol::SessionKey clientToServer{};
    protocol::SessionKey serverToClient{};
    const auto c2s = sequenceBytes(0xA0, 32);
    const auto s2c = sequenceBytes(0xC0, 32);
    std::copy(c2s.begin(), c2s.end(), clientToServer.begin());
    std::copy(s2c.begin(), s2c.end(), serverToClient.begin());
    const std::span<const std::uint8_t, protocol::kSessionSaltBytes> salt(cookie.data(),
                                                                          protocol::kSessionSaltBytes);
    const protocol::SessionKeys clientKeys =
        protocol::deriveSessionKeys(clientToServer, serverToClient, salt, false);
    const protocol::SessionKeys serverKeys =
        protocol::deriveSessionKeys(clientToServer, serverToClient, salt, true);
    ordered_json sealed;
    sealed["tokenClientToServerKey"] = toHex(clientToServer);
    sealed["tokenServerToClientKey"] = toHex(serverToClient);
    sealed["salt"] = toHex(salt);
    sealed["sessionClientToServerKey"] = toHex(clientKeys.send);
    sealed["sessionServerToClientKey"] = toHex(serverKeys.send);
    ordered_json sealedDatagrams = ordered_json::array();
    ordered_json sealedMalformed = ordered_json::array();
    {
        protocol::SealedChannel client(clientKeys);
        protocol::SealedChannel server(serverKeys);
        const auto sealOne = [&](protocol::SealedChannel& channel, const std::string& direction,
                                 const std::string& plainName, int skip)
        {
            for (int i = 0; i < skip; ++i)
            {
                (void)channel.seal(datagrams[plainName]);
            }
            const std::uint64_t sequence = channel.nextSendSequence();
            const auto bytes = bytesOf(channel.seal(datagrams[plainName]));
            ordered_json entry;
            entry["name"] = "sealed-" + plainName;
            entry["direction"] = direction;
            entry["sequence"] = sequence;
            entry["plain"] = plainName;
            entry["datagram"] = toHex(bytes);
            sealedDatagrams.push_back(entry);
            return bytes;
        };
        const auto input = sealOne(client, "client-to-server", "client-input", 0);
        sealOne(client, "client-to-server", "keep-alive", 4);
        sealOne(server, "server-to-client", "snapshot", 0);
        sealOne(server, "server-to-client", "catalogue-geometry", 1);

        const auto expectOpen = [&](const std::string& name, const std::string& description,
                                    const std::vector<std::uint8_t>& bytes, protocol::OpenError expected,
                                    DropReason reason, bool replayAfterGood)
        {
            protocol::SealedChannel receiver(serverKeys);
            std::span<const std::uint8_t> plaintext;
            if (replayAfterGood && receiver.open(bytes, plaintext) != protocol::OpenError::None)
            {
                fail(name + ": the first copy does not open");
            }
            const protocol::OpenError got = receiver.open(bytes, plaintext);
            if (got != expected)
            {
                fail(name + ": expected " + openErrorName(expected) + ", got " + openErrorName(got));
            }
            ordered_json entry;
            entry["name"] = name;
            entry["description"] = description;
            entry["direction"] = "client-to-server";
            entry["datagram"] = toHex(bytes);
            entry["openedBefore"] = replayAfterGood;
            entry["openError"] = openErrorName(expected);
            entry["dropReason"] = protocol::dropReasonName(reason);
            sealedMalformed.push_back(entry);
        };
        std::vector<std::uint8_t> tampered = input;
        tampered[20] ^= 0x04;
        expectOpen("sealed-tampered", "sealed-client-input with one ciphertext bit flipped.", tampered,
                   protocol::OpenError::Forged, DropReason::BadSeal, false);
        std::vector<std::uint8_t> badTag = input;
        badTag.back() ^= 0x80;
        expectOpen("sealed-bad-tag", "sealed-client-input with one tag bit flipped.", badTag,
                   protocol::OpenError::Forged, DropReason::BadSeal, false);
        std::vector<std::uint8_t> otherSequence = input;
        otherSequence[4] = 1;
        expectOpen("sealed-wrong-sequence",
                   "sealed-client-input with its sequence changed to 1 (the nonce and "
                   "additional data no longer match).",
                   otherSequence, protocol::OpenError::Forged, DropReason::BadSeal, false);
        expectOpen("sealed-replayed", "sealed-client-input received a second time.", input,
                   protocol::OpenError::Replayed, DropReason::Replayed, true);
    }
    sealed["datagrams"] = sealedDatagrams;
    sealed["malformed"] = sealedMalformed;

    // Malformed plain datagrams.
    ordered_json malformed = ordered_json::array();
    const std::vector<std::uint8_t> keepAlive = datagrams["keep-alive"];
    const std::size_t h = headerOffset(keepAlive);
    const auto patched = [&](std::size_t offset, std::uint8_t value)
    {
        std::vector<std::uint8_t> bytes = keepAlive;
        bytes[offset] = value;
        return bytes;
    };
    malformed.push_back(
        malformedPacket("too-short", "31 bytes.", std::vector<std::uint8_t>(31, 0), DropReason::TooShort));
    {
        std::vector<std::uint8_t> big = datagrams["connect-request"];
        big.resize(protocol::kMaxDatagramBytes + 1, 0);
        malformed.push_back(malformedPacket("too-large", "connect-request followed by zeros to 1201 bytes.",
                                            big, DropReason::TooLarge));
    }
    malformed.push_back(malformedPacket("bad-identifier",
                                        "keep-alive with \"PLTP\" at bytes 4..7 changed to \"XLTP\".",
                                        patched(4, 'X'), DropReason::BadIdentifier));
    malformed.push_back(malformedPacket("bad-root-offset",
                                        "keep-alive whose root offset points past the end.", patched(1, 0x7F),
                                        DropReason::Malformed));
    malformed.push_back(malformedPacket("wrong-protocol-id", "keep-alive with header.protocol_id 0x50544C51.",
                                        patched(h, 0x51), DropReason::WrongProtocol));
    malformed.push_back(malformedPacket("wrong-version", "keep-alive with header.version 4.",
                                        patched(h + 4, 4), DropReason::WrongVersion));
    {
        std::vector<std::uint8_t> old = datagrams["connect-request"];
        old[headerOffset(old) + 4] = 4;
        malformed.push_back(
            malformedPacket("connect-request-version-4",
                            "connect-request with header.version 4: dropped, but answered with "
                            "connect-denied-version (STANDARD.md section 9).",
                            old, DropReason::WrongVersion));
    }
    malformed.push_back(
        malformedPacket("connect-denied-version-4",
                        "ConnectDenied (version) in version 4, as the server answers a version 4 "
                        "ConnectRequest: a version 4 client reads it, a version 5 one drops it.",
                        writer.connectDenied(first, wire::DenyReason::Version, 4), DropReason::WrongVersion));
    malformed.push_back(malformedPacket("type-mismatch", "keep-alive whose header.type says Disconnect (10).",
                                        patched(h + 6, 10), DropReason::TypeMismatch));
    malformed.push_back(malformedPacket("unknown-flag", "keep-alive with header.flags bit 2 set.",
                                        patched(h + 7, 1 | 4), DropReason::InvalidField));
    {
        std::vector<std::uint8_t> bytes = datagrams["disconnect"];
        bytes[headerOffset(bytes) + 7] = 1 | 2;
        malformed.push_back(
            malformedPacket("full-snapshot-flag-on-disconnect",
                            "disconnect with FullSnapshotRequest (bit 1), which only ClientInput "
                            "and KeepAlive may carry.",
                            bytes, DropReason::InvalidField));
    }
    malformed.push_back(malformedPacket("keep-alive-nan", "KeepAlive whose time is NaN.",
                                        writer.keepAlive(acked, std::numeric_limits<double>::quiet_NaN()),
                                        DropReason::InvalidField));
    {
        // Game messages (version 6) out of range: PacketWriter writes what it is given.
        const std::vector<std::uint8_t> one{1};
        const std::vector<std::uint8_t> tooLong(protocol::kMaxGameMessageBytes + 1, 2);
        const auto message =
            [&](std::string name, std::string description, protocol::GameMessageFields fields)
        {
            malformed.push_back(malformedPacket(std::move(name), std::move(description),
                                                writer.clientInput(acked, {}, std::span(&fields, 1)),
                                                DropReason::InvalidField));
        };
        message("game-message-sequence-0", "A game message numbered 0.", {0, 10, 5, 6, 0.5f, one});
        message("game-message-empty", "A game message without bytes.", {1, 10, 5, 6, 0.5f, {}});
        message("game-message-too-long", "A game message of kMaxGameMessageBytes + 1 bytes.",
                {1, 10, 5, 6, 0.5f, tooLong});
        message("game-message-view-backwards", "A game message whose view_from_tick is after view_to_tick.",
                {1, 10, 7, 6, 0.5f, one});
        message("game-message-view-nan", "A game message whose view_fraction is NaN.",
                {1, 10, 5, 6, std::numeric_limits<float>::quiet_NaN(), one});
        message("game-message-view-past-one", "A game message whose view_fraction is 1.5.",
                {1, 10, 5, 6, 1.5f, one});
        const std::vector<std::uint8_t> bigState(protocol::kMaxGameStateBytes + 1, 3);
        malformed.push_back(malformedPacket("game-state-version-0", "A GameState of version 0.",
                                            writer.gameState(acked, wire::GameStateScope::Room, 0, one),
                                            DropReason::InvalidField));
        malformed.push_back(malformedPacket(
            "game-state-too-long", "A GameState of kMaxGameStateBytes + 1 bytes.",
            writer.gameState(acked, wire::GameStateScope::Room, 1, bigState), DropReason::InvalidField));
    }
    {
        // Raw FlatBuffers for what PacketWriter refuses to write.
        flatbuffers::FlatBufferBuilder builder;
        const auto finish = [&](wire::PacketType type, flatbuffers::Offset<void> message)
        {
            const wire::PacketHeader header(protocol::kProtocolId, protocol::kProtocolVersion, type, 0, 0, 0,
                                            0);
            wire::FinishPacketBuffer(
                builder, wire::CreatePacket(builder, &header, static_cast<wire::Message>(type), message));
            return bytesOf({builder.GetBufferPointer(), builder.GetSize()});
        };
        const auto name = builder.CreateString("vector-client");
        malformed.push_back(malformedPacket(
            "connect-request-unpadded", "A ConnectRequest without padding.",
            finish(wire::PacketType::ConnectRequest, wire::CreateConnectRequest(builder, name).Union()),
            DropReason::TooShort));
        builder.Clear();
        const auto shortCookie = builder.CreateVector(cookie.data(), 35);
        malformed.push_back(malformedPacket(
            "challenge-short-cookie", "A Challenge whose cookie has 35 bytes.",
            finish(wire::PacketType::Challenge, wire::CreateChallenge(builder, shortCookie).Union()),
            DropReason::InvalidField));
        builder.Clear();
        const auto empty = builder.CreateVector(cookie.data(), 0);
        malformed.push_back(malformedPacket(
            "snapshot-empty-payload", "A Snapshot whose payload is empty.",
            finish(wire::PacketType::Snapshot, wire::CreateSnapshot(builder, 10, 0.5, empty).Union()),
            DropReason::InvalidField));
        builder.Clear();
        const std::vector<wire::CatalogueEntry> noEntries;
        const auto entries = builder.CreateVectorOfStructs(noEntries);
        malformed.push_back(malformedPacket(
            "catalogue-empty", "A Catalogue with no entries.",
            finish(wire::PacketType::Catalogue, wire::CreateCatalogue(builder, entries).Union()),
            DropReason::InvalidField));
        builder.Clear();
        const std::vector<wire::CatalogueEntry> zeroGeneration{
            wire::CatalogueEntry(5, 0, wire::ShapeKind::Sphere, false, 0, wire::Vec3f(1.0f, 1.0f, 1.0f))};
        const auto zeroEntries = builder.CreateVectorOfStructs(zeroGeneration);
        malformed.push_back(malformedPacket(
            "catalogue-generation-0", "A Catalogue entry of generation 0.",
            finish(wire::PacketType::Catalogue, wire::CreateCatalogue(builder, zeroEntries).Union()),
            DropReason::InvalidField));
        builder.Clear();
        const auto velocitiesCookie = builder.CreateVector(cookie.data(), cookie.size());
        const auto velocitiesPadding = builder.CreateVector(std::vector<std::uint8_t>(512, 0));
        const auto velocitiesName = builder.CreateString("vector-client");
        wire::ChallengeResponseBuilder response(builder);
        response.add_cookie(velocitiesCookie);
        response.add_client_name(velocitiesName);
        response.add_padding(velocitiesPadding);
        response.add_snapshot_format(wire::SnapshotFormat::Compressed);
        response.add_snapshot_velocities(true);
        const auto responseOffset = response.Finish();
        malformed.push_back(malformedPacket(
            "challenge-response-velocities-compressed",
            "A ChallengeResponse asking for velocities with Compressed snapshots (STANDARD.md 14.1).",
            finish(wire::PacketType::ChallengeResponse, responseOffset.Union()), DropReason::InvalidField));
        builder.Clear();
        const std::vector<wire::StructuredBody> outOfRange{
            wire::StructuredBody(9, 1, 0, 0, 0, 2047, 2047, 2047, 3, false)};
        const auto structuredBodies = builder.CreateVectorOfStructs(outOfRange);
        malformed.push_back(malformedPacket(
            "structured-snapshot-id-outside-range",
            "A StructuredSnapshot covering ids 0 .. 8 that lists body 9.",
            finish(wire::PacketType::StructuredSnapshot,
                   wire::CreateStructuredSnapshot(builder, 10, 0.5, false, 0, 0, 9, 0, structuredBodies)
                       .Union()),
            DropReason::InvalidField));
    }

    ordered_json out;
    out["format"] = "polytope-vectors packets";
    out["protocolVersion"] = protocol::kProtocolVersion;
    out["plain"] = plain;
    out["sealed"] = sealed;
    out["malformed"] = malformed;
    return out;
}

ordered_json checksumVectors()
{
    // CRC-32 of the 28-byte body records (CODEC.md 4.5), for checking a checksum routine alone.
    SnapshotCodecConfig config;
    const Scene scene = gridScene(config, 41, 5);
    ordered_json out = ordered_json::array();
    for (std::size_t n = 0; n <= scene.current.size(); n += 2)
    {
        const std::span<const QuantizedBody> bodies(scene.current.data(), n);
        ordered_json rows = ordered_json::array();
        for (const QuantizedBody& body : bodies)
        {
            rows.push_back(bodyJson(body));
        }
        out.push_back({{"bodies", rows}, {"checksum", protocol::quantizedStateChecksum(bodies)}});
    }
    return out;
}

} // namespace

const char* openErrorName(protocol::OpenError error)
{
    switch (error)
    {
    case protocol::OpenError::None:
        return "none";
    case protocol::OpenError::NotSealed:
        return "not_sealed";
    case protocol::OpenError::TooLarge:
        return "too_large";
    case protocol::OpenError::Forged:
        return "forged";
    case protocol::OpenError::Replayed:
        return "replayed";
    }
    return "?";
}

std::string toHex(std::span<const std::uint8_t> bytes)
{
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const std::uint8_t byte : bytes)
    {
        out += kDigits[byte >> 4];
        out += kDigits[byte & 15];
    }
    return out;
}

std::vector<std::uint8_t> fromHex(const std::string& hex)
{
    const auto digit = [](char c) -> int
    {
        if (c >= '0' && c <= '9')
        {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f')
        {
            return c - 'a' + 10;
        }
        fail("bad hex digit");
    };
    if (hex.size() % 2 != 0)
    {
        fail("odd hex length");
    }
    std::vector<std::uint8_t> out(hex.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i)
    {
        out[i] = static_cast<std::uint8_t>(digit(hex[2 * i]) * 16 + digit(hex[2 * i + 1]));
    }
    return out;
}

ordered_json bodyJson(const QuantizedBody& body)
{
    ordered_json out;
    out["id"] = body.id;
    out["generation"] = body.generation;
    out["position"] = body.position;
    out["largest"] = body.largest;
    out["k"] = {kOf(body.orientation[0]), kOf(body.orientation[1]), kOf(body.orientation[2])};
    out["atRest"] = body.atRest;
    return out;
}

QuantizedBody bodyFromJson(const nlohmann::json& value)
{
    QuantizedBody body;
    body.id = value.at("id").get<std::uint32_t>();
    body.generation = value.at("generation").get<std::uint32_t>();
    body.position = value.at("position").get<std::array<std::uint32_t, 3>>();
    body.largest = value.at("largest").get<std::uint8_t>();
    const auto k = value.at("k").get<std::array<std::int32_t, 3>>();
    for (int i = 0; i < 3; ++i)
    {
        body.orientation[i] = static_cast<std::uint16_t>(k[i] + K);
    }
    body.atRest = value.at("atRest").get<bool>();
    return body;
}

ordered_json codecConfigJson(const SnapshotCodecConfig& config)
{
    ordered_json out;
    out["boundsMin"] = config.position.boundsMin;
    out["boundsMax"] = config.position.boundsMax;
    out["stepsPerMetre"] = config.position.stepsPerMetre;
    out["maxCode"] = {config.position.maxCode(0), config.position.maxCode(1), config.position.maxCode(2)};
    out["maxBodies"] = config.maxBodies;
    out["maxBaselineAgeTicks"] = config.maxBaselineAgeTicks;
    out["maxSlicePayloadBytes"] = config.maxSlicePayloadBytes;
    return out;
}

SnapshotCodecConfig codecConfigFromJson(const nlohmann::json& value)
{
    SnapshotCodecConfig config;
    config.position.boundsMin = value.at("boundsMin").get<std::array<float, 3>>();
    config.position.boundsMax = value.at("boundsMax").get<std::array<float, 3>>();
    config.position.stepsPerMetre = value.at("stepsPerMetre").get<std::uint32_t>();
    config.maxBodies = value.at("maxBodies").get<std::uint32_t>();
    config.maxBaselineAgeTicks = value.at("maxBaselineAgeTicks").get<std::uint32_t>();
    config.maxSlicePayloadBytes = value.at("maxSlicePayloadBytes").get<std::size_t>();
    return config;
}

namespace
{
template <class Vector> ordered_json bytesJson(const Vector* vector)
{
    return vector ? ordered_json(toHex({vector->data(), vector->size()})) : ordered_json();
}

ordered_json stringJson(const flatbuffers::String* text)
{
    return text ? ordered_json(text->str()) : ordered_json();
}

ordered_json vec3Json(const wire::Vec3f* v)
{
    return v ? ordered_json::array({v->x(), v->y(), v->z()}) : ordered_json();
}

/// A FlatBuffers vector as a JSON array of fn(element), or null when the vector is absent (the vectors tell
/// an absent vector from an empty one).
template <class Vector, class Fn> ordered_json arrayOrNull(const Vector* vector, Fn&& fn)
{
    if (vector == nullptr)
    {
        return ordered_json();
    }
    ordered_json out = ordered_json::array();
    for (const auto element : *vector)
    {
        out.push_back(fn(element));
    }
    return out;
}

ordered_json tokenJson(const wire::TokenCredential* token)
{
    if (!token)
    {
        return nullptr;
    }
    return {{"expireTime", token->expire_time()},
            {"nonce", bytesJson(token->nonce())},
            {"sealed", bytesJson(token->sealed())}};
}
} // namespace

ordered_json packetJson(const wire::Packet& packet)
{
    const wire::PacketHeader& header = *packet.header();
    ordered_json out;
    out["header"] = {{"protocolId", header.protocol_id()},
                     {"version", header.version()},
                     {"type", wire::EnumNamePacketType(header.type())},
                     {"flags", header.flags()},
                     {"sequence", header.sequence()},
                     {"ack", header.ack()},
                     {"ackBits", header.ack_bits()}};
    ordered_json m;
    switch (header.type())
    {
    case wire::PacketType::ConnectRequest:
    {
        const auto* message = packet.message_as_ConnectRequest();
        m["clientName"] = stringJson(message->client_name());
        m["paddingBytes"] = message->padding() ? message->padding()->size() : 0u;
        m["room"] = stringJson(message->room());
        m["token"] = tokenJson(message->token());
        break;
    }
    case wire::PacketType::Challenge:
        m["cookie"] = bytesJson(packet.message_as_Challenge()->cookie());
        break;
    case wire::PacketType::ChallengeResponse:
    {
        const auto* message = packet.message_as_ChallengeResponse();
        m["cookie"] = bytesJson(message->cookie());
        m["clientName"] = stringJson(message->client_name());
        m["paddingBytes"] = message->padding() ? message->padding()->size() : 0u;
        m["room"] = stringJson(message->room());
        m["snapshotRateHz"] = message->snapshot_rate_hz();
        m["spectator"] = message->spectator();
        m["token"] = tokenJson(message->token());
        m["snapshotFormat"] = wire::EnumNameSnapshotFormat(message->snapshot_format());
        m["snapshotVelocities"] = message->snapshot_velocities();
        break;
    }
    case wire::PacketType::ConnectAccepted:
    {
        const auto* message = packet.message_as_ConnectAccepted();
        m["clientId"] = message->client_id();
        m["tickRateHz"] = message->tick_rate_hz();
        m["snapshotRateHz"] = message->snapshot_rate_hz();
        m["scene"] = stringJson(message->scene());
        m["boundsMin"] = vec3Json(message->bounds_min());
        m["boundsMax"] = vec3Json(message->bounds_max());
        m["stepsPerMetre"] = message->steps_per_metre();
        m["maxBaselineAgeTicks"] = message->max_baseline_age_ticks();
        m["firstTick"] = message->first_tick();
        m["room"] = stringJson(message->room());
        m["snapshotFormat"] = wire::EnumNameSnapshotFormat(message->snapshot_format());
        m["snapshotVelocities"] = message->snapshot_velocities();
        break;
    }
    case wire::PacketType::ConnectDenied:
        m["reason"] = wire::EnumNameDenyReason(packet.message_as_ConnectDenied()->reason());
        m["message"] = stringJson(packet.message_as_ConnectDenied()->message());
        break;
    case wire::PacketType::Snapshot:
    {
        const auto* message = packet.message_as_Snapshot();
        m["tick"] = message->tick();
        m["serverTime"] = message->server_time();
        m["payload"] = bytesJson(message->payload());
        break;
    }
    case wire::PacketType::Catalogue:
    {
        const auto* message = packet.message_as_Catalogue();
        ordered_json entries = ordered_json::array();
        for (const wire::CatalogueEntry* entry : *message->entries())
        {
            entries.push_back({{"id", entry->id()},
                               {"generation", entry->generation()},
                               {"shape", wire::EnumNameShapeKind(entry->shape())},
                               {"removed", entry->removed()},
                               {"flags", entry->flags()},
                               {"extent", vec3Json(&entry->extent())}});
        }
        m["entries"] = entries;
        m["geometry"] =
            arrayOrNull(message->geometry(), [](const std::uint64_t hash) -> ordered_json { return hash; });
        break;
    }
    case wire::PacketType::ClientInput:
    {
        const auto* message = packet.message_as_ClientInput();
        m["inputs"] = arrayOrNull(message->inputs(),
                                  [](const wire::Input* input) -> ordered_json
                                  {
                                      return {{"tick", input->tick()},
                                              {"sequence", input->sequence()},
                                              {"bodyId", input->body_id()},
                                              {"bodyGeneration", input->body_generation()},
                                              {"vector", vec3Json(&input->vector())},
                                              {"kind", wire::EnumNameInputKind(input->kind())}};
                                  });
        m["messages"] = arrayOrNull(
            message->messages(),
            [](const wire::GameMessage* game) -> ordered_json
            {
                return {{"sequence", game->sequence()},           {"tick", game->tick()},
                        {"viewFromTick", game->view_from_tick()}, {"viewToTick", game->view_to_tick()},
                        {"viewFraction", game->view_fraction()},  {"data", bytesJson(game->data())}};
            });
        break;
    }
    case wire::PacketType::KeepAlive:
        m["time"] = packet.message_as_KeepAlive()->time();
        break;
    case wire::PacketType::Disconnect:
        m["reason"] = wire::EnumNameDisconnectReason(packet.message_as_Disconnect()->reason());
        m["message"] = stringJson(packet.message_as_Disconnect()->message());
        break;
    case wire::PacketType::GameState:
    {
        const auto* message = packet.message_as_GameState();
        m["scope"] = wire::EnumNameGameStateScope(message->scope());
        m["version"] = message->version();
        m["data"] = bytesJson(message->data());
        break;
    }
    case wire::PacketType::AdminRequest:
    {
        const auto* message = packet.message_as_AdminRequest();
        m["command"] = bytesJson(message->command());
        protocol::AdminCommandFields command;
        if (message->command() &&
            protocol::decodeAdminCommand({message->command()->data(), message->command()->size()}, command))
        {
            m["commandFields"] = {{"room", command.room},     {"nonce", command.nonce},
                                  {"time", command.time},     {"op", wire::EnumNameAdminOp(command.op)},
                                  {"count", command.count},   {"value", command.value},
                                  {"vector", command.vector}, {"text", command.text}};
        }
        m["mac"] = bytesJson(message->mac());
        m["paddingBytes"] = message->padding() ? message->padding()->size() : 0u;
        break;
    }
    case wire::PacketType::AdminReply:
    {
        const auto* message = packet.message_as_AdminReply();
        m["nonce"] = message->nonce();
        m["ok"] = message->ok();
        m["message"] = stringJson(message->message());
        m["mac"] = bytesJson(message->mac());
        break;
    }
    case wire::PacketType::GeometrySlice:
    {
        const auto* message = packet.message_as_GeometrySlice();
        m["hash"] = message->hash();
        m["kind"] = wire::EnumNameShapeKind(message->kind());
        m["totalBytes"] = message->total_bytes();
        m["offset"] = message->offset();
        m["data"] = bytesJson(message->data());
        break;
    }
    case wire::PacketType::StructuredSnapshot:
    {
        const auto* message = packet.message_as_StructuredSnapshot();
        m["tick"] = message->tick();
        m["serverTime"] = message->server_time();
        m["hasBaseline"] = message->has_baseline();
        m["baselineTick"] = message->baseline_tick();
        m["firstId"] = message->first_id();
        m["endId"] = message->end_id();
        m["checksum"] = message->checksum();
        m["bodies"] = arrayOrNull(message->bodies(),
                                  [](const wire::StructuredBody* body) -> ordered_json
                                  {
                                      return {{"id", body->id()},
                                              {"generation", body->generation()},
                                              {"positionX", body->position_x()},
                                              {"positionY", body->position_y()},
                                              {"positionZ", body->position_z()},
                                              {"orientationA", body->orientation_a()},
                                              {"orientationB", body->orientation_b()},
                                              {"orientationC", body->orientation_c()},
                                              {"largest", body->largest()},
                                              {"atRest", body->at_rest()}};
                                  });
        m["removed"] =
            arrayOrNull(message->removed(), [](const std::uint32_t id) -> ordered_json { return id; });
        m["velocities"] =
            arrayOrNull(message->velocities(),
                        [](const wire::StructuredVelocity* v) -> ordered_json {
                            return {{"linear", vec3Json(&v->linear())}, {"angular", vec3Json(&v->angular())}};
                        });
        break;
    }
    default:
        break;
    }
    out["message"] = m;
    return out;
}

std::vector<VectorFile> buildProtocolVectors()
{
    ordered_json checksums;
    checksums["format"] = "polytope-vectors checksums";
    checksums["protocolVersion"] = protocol::kProtocolVersion;
    checksums["orientationComponentMax"] = K;
    checksums["vectors"] = checksumVectors();
    return {{"snapshots.json", jsonFileText(snapshotVectors())},
            {"packets.json", jsonFileText(packetVectors())},
            {"checksums.json", jsonFileText(checksums)}};
}

} // namespace polytope::testing

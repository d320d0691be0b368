// Snapshot bookkeeping on both ends: the server's shared history, one client's acknowledgement state, and
// the client's receiver, wired together directly (no envelope) to check baselines of every age.
#include "polytope/protocol/snapshot_channel.h"

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace polytope::protocol;

namespace
{
/// A deterministic little world: bodies wander, some sleep, one slot is recycled now and then.
struct Wanderers
{
    std::vector<QuantizedBody> bodies;
    std::mt19937 rng{7};
    explicit Wanderers(std::uint32_t count)
    {
        for (std::uint32_t i = 0; i < count; ++i)
        {
            QuantizedBody b;
            b.id = i * 2;
            b.position = {200000u + i * 100u, 60000u, 200000u};
            bodies.push_back(b);
        }
    }
    void step(std::uint64_t tick)
    {
        for (QuantizedBody& b : bodies)
        {
            b.atRest = (b.id / 2 + tick / 30) % 3 == 0;
            if (!b.atRest)
            {
                b.position[0] += rng() % 9;
                b.position[1] -= rng() % 5;
                b.orientation[0] = static_cast<std::uint16_t>(kOrientationZeroCode + (rng() % 200) - 100);
            }
        }
        if (tick % 17 == 0)
        {
            ++bodies[tick % bodies.size()].generation; // a slot reused by a new body
        }
    }
};
} // namespace

TEST_CASE("the history keeps each snapshot tick for maxBaselineAgeTicks and no longer", "[channel]")
{
    SnapshotHistory history(20);
    CHECK(history.newest() == nullptr);
    for (std::uint64_t tick = 3; tick <= 60; tick += 3)
    {
        auto& bodies = history.begin(tick);
        bodies.resize(2);
        bodies[1].id = 5;
        bodies[0].position[0] = static_cast<std::uint32_t>(tick);
        history.commit();
        REQUIRE(history.newest() != nullptr);
        CHECK(history.newest()->tick == tick);
        CHECK(history.newest()->unchangedSince.size() == 2);
    }
    CHECK(history.find(60) != nullptr);
    CHECK(history.find(42) != nullptr);
    CHECK(history.find(39) == nullptr); // 21 ticks old
    CHECK(history.find(41) == nullptr); // never made
    CHECK(history.find(61) == nullptr);
    CHECK(history.find(42)->bodies[0].position[0] == 42);
    // Body 1 (id 5) never changed: unchanged since the first snapshot.
    CHECK(history.find(60)->unchangedSince[1] == 3);
}

TEST_CASE("a tick is held once every datagram of its slices is acknowledged; baseline and reference follow",
          "[channel]")
{
    SnapshotHistory history(64);
    SnapshotSendState state(64);
    for (std::uint64_t tick = 1; tick <= 10; ++tick)
    {
        history.begin(tick).resize(1);
        history.commit();
    }
    state.onSliceSent(4, 100, 2);
    state.onSliceSent(4, 101, 2);
    state.onSliceSent(6, 102, 1);
    state.onSliceSent(8, 103, 1);
    const SnapshotFrame* baseline = nullptr;
    const SnapshotFrame* reference = nullptr;
    state.choose(history, 10, baseline, reference);
    CHECK(baseline == nullptr);
    state.onAcked(100);
    CHECK_FALSE(state.holds(4)); // one slice of two
    state.onAcked(100);          // repeated acks change nothing
    CHECK_FALSE(state.holds(4));
    state.onAcked(102);
    CHECK(state.holds(6));
    state.onAcked(101);
    CHECK(state.holds(4));
    state.onAcked(555); // never sent
    state.choose(history, 10, baseline, reference);
    REQUIRE(baseline != nullptr);
    REQUIRE(reference != nullptr);
    CHECK(baseline->tick == 6);
    CHECK(reference->tick == 4);
    state.onAcked(103);
    state.choose(history, 10, baseline, reference);
    CHECK(baseline->tick == 8);
    CHECK(reference->tick == 6);
    // A baseline past the age limit is not used.
    state.choose(history, 8 + 65, baseline, reference);
    CHECK(baseline == nullptr);
}

TEST_CASE("deltas against baselines of every age up to the limit decode bit-exactly through the channel",
          "[channel]")
{
    constexpr std::uint32_t kMaxAge = 40;
    SnapshotCodecConfig codec;
    codec.maxBaselineAgeTicks = kMaxAge;
    codec.maxSlicePayloadBytes = 300; // several slices per snapshot
    SnapshotHistory history(kMaxAge);
    SnapshotEncoder encoder(codec);
    Wanderers world(150);

    // Fill the history and let one client hold every tick (a receiver fed with full snapshots).
    SnapshotReceiver receiver(codec);
    for (std::uint64_t tick = 1; tick <= kMaxAge + 1; ++tick)
    {
        world.step(tick);
        history.begin(tick) = world.bodies;
        history.commit();
        REQUIRE(encoder.encode(*history.find(tick), nullptr, nullptr) == CodecError::None);
        for (const EncodedSlice& slice : encoder.slices())
        {
            REQUIRE(receiver.onSlice(tick, slice.payload).error == CodecError::None);
        }
        REQUIRE(receiver.find(tick) != nullptr);
        CHECK(*receiver.find(tick) == world.bodies);
    }
    // Now the current tick against each age, with and without a reference, each into a fresh copy.
    const std::uint64_t current = kMaxAge + 1;
    std::uint32_t checked = 0;
    for (std::uint32_t age = 1; age < kMaxAge; ++age)
    {
        for (std::uint32_t gap : {0u, 1u, kMaxAge - age})
        {
            if (age + gap > kMaxAge || (gap != 0 && current - age - gap < 1))
            {
                continue;
            }
            const SnapshotFrame* baseline = history.find(current - age);
            const SnapshotFrame* reference = gap ? history.find(current - age - gap) : nullptr;
            REQUIRE(baseline != nullptr);
            REQUIRE(encoder.encode(*history.find(current), baseline, reference) == CodecError::None);
            SnapshotDecoder decoder(codec);
            std::vector<QuantizedBody> decoded;
            for (const EncodedSlice& slice : encoder.slices())
            {
                const SliceHeaderResult header = readSliceHeader(codec, slice.payload);
                REQUIRE(header.ok());
                CHECK(header.header.baselineAge == age);
                const auto* b = receiver.find(current - header.header.baselineAge);
                REQUIRE(b != nullptr);
                const SnapshotFrame bf(current - age, *b);
                SnapshotFrame rf;
                if (header.header.hasReference)
                {
                    rf = SnapshotFrame(current - age - gap, *receiver.find(current - age - gap));
                }
                REQUIRE(decoder.decode(slice.payload, current, &bf,
                                       header.header.hasReference ? &rf : nullptr) == CodecError::None);
                decoded.insert(decoded.end(), decoder.bodies().begin(), decoder.bodies().end());
            }
            std::sort(decoded.begin(), decoded.end(),
                      [](const QuantizedBody& x, const QuantizedBody& y) { return x.id < y.id; });
            CHECK(decoded == world.bodies);
            ++checked;
        }
    }
    CHECK(checked > 2 * (kMaxAge - 2));
}

TEST_CASE("the receiver refuses slices whose baseline it lacks, and ignores duplicates and stale ticks",
          "[channel]")
{
    SnapshotCodecConfig codec;
    codec.maxBaselineAgeTicks = 30;
    SnapshotEncoder encoder(codec);
    SnapshotReceiver receiver(codec);
    Wanderers world(10);
    std::vector<std::vector<QuantizedBody>> frames;
    for (std::uint64_t tick = 0; tick <= 80; ++tick)
    {
        world.step(tick);
        frames.push_back(world.bodies);
    }
    REQUIRE(encoder.encode(SnapshotFrame(50, frames[50]), nullptr, nullptr) == CodecError::None);
    const std::vector<std::uint8_t> full50(encoder.slices()[0].payload.begin(),
                                           encoder.slices()[0].payload.end());
    SliceOutcome o = receiver.onSlice(50, full50);
    CHECK(o.completed);
    CHECK(receiver.onSlice(50, full50).duplicate);
    // Against tick 45, which the receiver never had.
    const SnapshotFrame b45(45, frames[45]);
    REQUIRE(encoder.encode(SnapshotFrame(52, frames[52]), &b45, nullptr) == CodecError::None);
    CHECK(receiver.onSlice(52, encoder.slices()[0].payload).error == CodecError::MissingBaseline);
    // Against 50, which it has.
    const SnapshotFrame b50(50, frames[50]);
    REQUIRE(encoder.encode(SnapshotFrame(80, frames[80]), &b50, nullptr) == CodecError::None);
    o = receiver.onSlice(80, encoder.slices()[0].payload);
    CHECK(o.completed);
    CHECK(*receiver.find(80) == frames[80]);
    // Tick 50 is now 30 ticks older than the newest: still kept; a slice for tick 40 is stale.
    CHECK(receiver.find(50) != nullptr);
    REQUIRE(encoder.encode(SnapshotFrame(40, frames[40]), nullptr, nullptr) == CodecError::None);
    CHECK(receiver.onSlice(40, encoder.slices()[0].payload).stale);
    // Garbage is refused with a reason.
    const std::vector<std::uint8_t> garbage{0xC0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    CHECK(receiver.onSlice(81, garbage).error != CodecError::None);
}

TEST_CASE("the history's frames keep their slices' checksums until their slot is reused",
          "[channel][checksum]")
{
    SnapshotCodecConfig config;
    config.maxBaselineAgeTicks = 8; // 9 slots: ticks 1 and 10 share one
    SnapshotHistory history(config.maxBaselineAgeTicks);
    SnapshotEncoder encoder(config);
    Wanderers world(300);
    const auto fill = [&](std::uint64_t tick)
    {
        history.begin(tick) = world.bodies;
        history.commit();
        return history.find(tick);
    };
    const auto headerChecksum = [&]
    {
        REQUIRE(encoder.slices().size() == 1);
        return readSliceHeader(config, encoder.slices()[0].payload).header.checksum;
    };

    const SnapshotFrame* first = fill(1);
    REQUIRE(first->checksums != nullptr);
    REQUIRE(encoder.encode(*first, nullptr, nullptr) == CodecError::None);
    CHECK(headerChecksum() == quantizedStateChecksum(world.bodies));
    REQUIRE(first->checksums->entries.size() == 1);
    REQUIRE(encoder.encode(*first, nullptr, nullptr) == CodecError::None); // another client: from the cache
    CHECK(first->checksums->entries.size() == 1);

    // The same state one tick later is identical to its baseline: it takes the baseline's checksum.
    const SnapshotFrame* same = fill(2);
    REQUIRE(encoder.encode(*same, first, nullptr) == CodecError::None);
    CHECK(encoder.stats().identicalToBaseline);
    CHECK(headerChecksum() == first->checksums->entries[0].checksum);

    // Tick 10 reuses tick 1's slot with other bodies: its checksum is computed afresh.
    for (std::uint64_t tick = 3; tick <= 10; ++tick)
    {
        world.step(tick);
        fill(tick);
    }
    const SnapshotFrame* reused = history.find(10);
    REQUIRE(reused->bodies.data() == first->bodies.data());
    REQUIRE(encoder.encode(*reused, nullptr, nullptr) == CodecError::None);
    CHECK(headerChecksum() == quantizedStateChecksum(world.bodies));
    SnapshotDecoder decoder(config);
    CHECK(decoder.decode(encoder.slices()[0].payload, 10, nullptr, nullptr) == CodecError::None);
}

// Structured snapshots (STANDARD.md section 14): the encoder's cut against a baseline, the datagrams it
// makes (always within kMaxPacketBytes), reading them back and applying them in a SnapshotReceiver, and the
// refusal of malformed slices, both by decodePacket and by applyStructuredSlice.
#include "polytope/protocol/packet.h"
#include "polytope/protocol/snapshot_channel.h"
#include "polytope/protocol/structured_snapshot.h"
#include "support/datagram_copy.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

using namespace polytope::protocol;

namespace
{
using polytope::test::Datagram;

std::uint32_t draw(std::mt19937& rng, std::uint32_t below)
{
    return static_cast<std::uint32_t>(rng() % below);
}

/// A random world of `count` bodies with ids spread over [0, 3 count).
std::vector<QuantizedBody> randomBodies(std::mt19937& rng, std::uint32_t count)
{
    std::vector<QuantizedBody> out;
    for (std::uint32_t id = 0; out.size() < count; ++id)
    {
        if (rng() % 3 != 0)
        {
            continue;
        }
        QuantizedBody b;
        b.id = id;
        b.generation = 1 + rng() % 4;
        b.position = {draw(rng, 500000), draw(rng, 250000), draw(rng, 500000)};
        b.orientation = {static_cast<std::uint16_t>(kOrientationZeroCode + rng() % 1000 - 500),
                         static_cast<std::uint16_t>(kOrientationZeroCode + rng() % 1000 - 500),
                         static_cast<std::uint16_t>(kOrientationZeroCode + rng() % 1000 - 500)};
        b.largest = static_cast<std::uint8_t>(rng() % 4);
        b.atRest = rng() % 2 == 0;
        out.push_back(b);
    }
    return out;
}

/// The next tick of a world: some bodies move, rest or wake, some are removed, replaced or created.
std::vector<QuantizedBody> evolve(std::mt19937& rng, const std::vector<QuantizedBody>& before)
{
    std::vector<QuantizedBody> out;
    std::uint32_t nextId = 0;
    for (QuantizedBody b : before)
    {
        for (; nextId < b.id; ++nextId)
        {
            if (rng() % 40 == 0)
            {
                QuantizedBody created;
                created.id = nextId;
                created.position = {draw(rng, 1000), draw(rng, 1000), draw(rng, 1000)};
                out.push_back(created);
            }
        }
        nextId = b.id + 1;
        const std::uint32_t roll = rng() % 100;
        if (roll < 3)
        {
            continue; // removed
        }
        if (roll < 5)
        {
            ++b.generation; // replaced in the same slot
        }
        else if (roll < 40)
        {
            b.position[0] = (b.position[0] + rng() % 50) % 500000u;
            b.atRest = false;
        }
        else if (roll < 45)
        {
            b.atRest = !b.atRest;
        }
        out.push_back(b);
    }
    return out;
}

/// Writes every slice of the encoder's cut, checks its size, decodes it and applies it to `receiver`.
/// Returns the number of slices.
std::size_t sendThrough(const StructuredSnapshotEncoder& encoder, SnapshotReceiver& receiver,
                        std::size_t& largestDatagram)
{
    PacketWriter writer;
    StructuredSlice read;
    for (const StructuredSliceView& slice : encoder.slices())
    {
        const Datagram datagram(writer.structuredSnapshot({}, slice));
        largestDatagram = std::max(largestDatagram, datagram.size);
        REQUIRE(datagram.size <= kMaxPacketBytes);
        const DecodeResult decoded = decodePacket(datagram.view());
        REQUIRE(decoded.ok());
        REQUIRE(decoded.type() == wire::PacketType::StructuredSnapshot);
        readStructuredSnapshot(*decoded.packet->message_as_StructuredSnapshot(), read);
        CHECK(read.bodies.size() == slice.bodies.size());
        CHECK(read.velocities.size() == slice.velocities.size());
        const SliceOutcome outcome = receiver.onStructuredSlice(read.view());
        REQUIRE(outcome.error == CodecError::None);
        REQUIRE(outcome.accepted());
    }
    return encoder.slices().size();
}
} // namespace

TEST_CASE("structured slices rebuild every tick exactly, against baselines of any age", "[structured]")
{
    std::mt19937 rng(19);
    SnapshotCodecConfig config;
    config.maxBaselineAgeTicks = 64;
    SnapshotReceiver receiver(config);
    StructuredSnapshotEncoder encoder;
    std::vector<std::vector<QuantizedBody>> ticks{randomBodies(rng, 2000)};
    std::size_t largest = 0;

    // A full snapshot: every body listed, many slices.
    encoder.encode(SnapshotFrame(1, ticks[0]), nullptr, 0.0);
    CHECK(encoder.listedBodies() == ticks[0].size());
    CHECK(sendThrough(encoder, receiver, largest) >=
          ticks[0].size() * kStructuredBodyBytes / kMaxPacketBytes);
    REQUIRE(receiver.find(1) != nullptr);
    CHECK(*receiver.find(1) == ticks[0]);

    for (std::uint64_t tick = 2; tick <= 40; ++tick)
    {
        ticks.push_back(evolve(rng, ticks.back()));
        // A baseline 1 to 8 ticks back, as lost acknowledgements make it.
        const std::uint64_t age = 1 + rng() % std::min<std::uint64_t>(8, tick - 1);
        const std::uint64_t baselineTick = tick - age;
        const SnapshotFrame baseline(baselineTick, ticks[baselineTick - 1]);
        const bool velocities = tick % 2 == 0;
        std::vector<BodyVelocity> byId(10000);
        for (std::size_t i = 0; i < byId.size(); ++i)
        {
            byId[i].linear = {static_cast<float>(i), 1.0f, -2.0f};
        }
        encoder.encode(SnapshotFrame(tick, ticks.back()), &baseline, 0.5, byId, velocities);
        sendThrough(encoder, receiver, largest);
        const auto* rebuilt = receiver.find(tick);
        REQUIRE(rebuilt != nullptr);
        CHECK(*rebuilt == ticks.back());
        for (const StructuredSliceView& slice : encoder.slices())
        {
            REQUIRE(slice.velocities.size() == (velocities ? slice.bodies.size() : 0));
            for (std::size_t i = 0; i < slice.velocities.size(); ++i)
            {
                CHECK(slice.velocities[i].linear[0] == static_cast<float>(slice.bodies[i].id));
            }
        }
    }
    INFO("largest datagram " << largest);
    CHECK(largest > kMaxPacketBytes - 100); // slices are filled
}

TEST_CASE("a structured slice stays within the datagram limit at its fullest", "[structured]")
{
    // Only removals (4 bytes each), then only bodies with velocities (52 bytes each): the two extremes of
    // what a slice holds, each cut as tight as the overhead bound allows.
    std::mt19937 rng(3);
    const std::vector<QuantizedBody> many = randomBodies(rng, 3000);
    StructuredSnapshotEncoder encoder;
    SnapshotCodecConfig config;
    SnapshotReceiver receiver(config);
    std::size_t largest = 0;
    encoder.encode(SnapshotFrame(1, many), nullptr, 0.0);
    sendThrough(encoder, receiver, largest);
    const SnapshotFrame full(1, many);
    const std::vector<QuantizedBody> none;
    encoder.encode(SnapshotFrame(2, none), &full, 0.0);
    CHECK(encoder.slices().size() > 5);
    sendThrough(encoder, receiver, largest);
    REQUIRE(receiver.find(2) != nullptr);
    CHECK(receiver.find(2)->empty());
    std::vector<BodyVelocity> velocities(10000);
    encoder.encode(SnapshotFrame(3, many), nullptr, 0.0, velocities, true);
    sendThrough(encoder, receiver, largest);
    CHECK(*receiver.find(3) == many);
    CHECK(largest <= kMaxPacketBytes);
}

TEST_CASE("an unchanged world is one empty slice, identical to its baseline", "[structured]")
{
    std::mt19937 rng(5);
    const std::vector<QuantizedBody> bodies = randomBodies(rng, 100);
    const SnapshotFrame baseline(10, bodies);
    StructuredSnapshotEncoder encoder;
    encoder.encode(SnapshotFrame(12, bodies), &baseline, 0.2);
    CHECK(encoder.identicalToBaseline());
    REQUIRE(encoder.slices().size() == 1);
    const StructuredSliceView& slice = encoder.slices()[0];
    CHECK(slice.bodies.empty());
    CHECK(slice.removed.empty());
    CHECK(slice.firstId == 0);
    CHECK(slice.endId == kIdSpaceEnd);
    CHECK(slice.hasBaseline);
    CHECK(slice.baselineTick == 10);
    CHECK(slice.checksum == quantizedStateChecksum(bodies));
}

TEST_CASE("applying a structured slice refuses what no server sends", "[structured]")
{
    std::mt19937 rng(11);
    const std::vector<QuantizedBody> base = randomBodies(rng, 20);
    PositionQuantization position;
    std::vector<QuantizedBody> out;
    std::vector<QuantizedBody> listed{base[3]};
    listed[0].position[1] = 1;
    std::vector<std::uint32_t> removed{base[5].id};
    StructuredSliceView slice;
    slice.tick = 9;
    slice.hasBaseline = true;
    slice.baselineTick = 8;
    slice.bodies = listed;
    slice.removed = removed;
    // The right checksum first: the slice applies.
    std::vector<QuantizedBody> expected = base;
    expected[3] = listed[0];
    expected.erase(expected.begin() + 5);
    slice.checksum = quantizedStateChecksum(expected);
    REQUIRE(applyStructuredSlice(position, slice, base, out) == CodecError::None);
    CHECK(out == expected);

    SECTION("a wrong checksum")
    {
        slice.checksum ^= 1;
        CHECK(applyStructuredSlice(position, slice, base, out) == CodecError::ChecksumMismatch);
    }
    SECTION("a removed id the baseline does not have")
    {
        removed[0] = base.back().id + 1;
        CHECK(applyStructuredSlice(position, slice, base, out) == CodecError::BadBodyId);
    }
    SECTION("an id both listed and removed")
    {
        removed[0] = base[3].id;
        CHECK(applyStructuredSlice(position, slice, base, out) == CodecError::BadBodyId);
    }
    SECTION("a position code past the bounds")
    {
        listed[0].position[2] = position.maxCode(2) + 1;
        CHECK(applyStructuredSlice(position, slice, base, out) == CodecError::ValueOutOfRange);
    }
    SECTION("a listed body outside the slice's range")
    {
        slice.endId = listed[0].id;
        CHECK(applyStructuredSlice(position, slice, base, out) == CodecError::BadBodyId);
    }
    SECTION("a baseline the receiver does not hold")
    {
        SnapshotCodecConfig config;
        SnapshotReceiver receiver(config);
        CHECK(receiver.onStructuredSlice(slice).error == CodecError::MissingBaseline);
    }
}

TEST_CASE("decodePacket refuses malformed structured snapshots and join requests", "[structured][packet]")
{
    flatbuffers::FlatBufferBuilder builder;
    // One StructuredSnapshot datagram built by hand, with one thing wrong at a time.
    struct Fields
    {
        std::uint64_t tick = 10;
        double serverTime = 1.0;
        bool hasBaseline = true;
        std::uint64_t baselineTick = 9;
        std::uint32_t firstId = 0;
        std::uint64_t endId = kIdSpaceEnd;
        std::vector<wire::StructuredBody> bodies{
            wire::StructuredBody(1, 1, 5, 5, 5, 2047, 2047, 2047, 3, false),
            wire::StructuredBody(4, 2, 5, 5, 5, 2047, 2047, 2047, 3, true)};
        std::vector<std::uint32_t> removed{2, 3};
        std::optional<std::vector<wire::StructuredVelocity>> velocities;
    };
    const auto build = [&](const Fields& f)
    {
        builder.Clear();
        const auto bodies = builder.CreateVectorOfStructs(f.bodies.data(), f.bodies.size());
        const auto removed = builder.CreateVector(f.removed);
        flatbuffers::Offset<flatbuffers::Vector<const wire::StructuredVelocity*>> velocities = 0;
        if (f.velocities)
        {
            velocities = builder.CreateVectorOfStructs(f.velocities->data(), f.velocities->size());
        }
        const auto message =
            wire::CreateStructuredSnapshot(builder, f.tick, f.serverTime, f.hasBaseline, f.baselineTick,
                                           f.firstId, f.endId, 0, bodies, removed, velocities);
        const wire::PacketHeader header(kProtocolId, kProtocolVersion, wire::PacketType::StructuredSnapshot,
                                        0, 0, 0, 0);
        wire::FinishPacketBuffer(
            builder,
            wire::CreatePacket(builder, &header, wire::Message::StructuredSnapshot, message.Union()));
        return Datagram({builder.GetBufferPointer(), builder.GetSize()});
    };
    const auto reason = [&](const Fields& f) { return decodePacket(build(f).view()).reason; };
    REQUIRE(decodePacket(build(Fields{}).view()).ok());

    Fields f;
    SECTION("ids not ascending")
    {
        f.bodies[1] = wire::StructuredBody(1, 2, 5, 5, 5, 2047, 2047, 2047, 3, true);
    }
    SECTION("a body outside the range")
    {
        f.firstId = 2;
    }
    SECTION("generation 0")
    {
        f.bodies[0] = wire::StructuredBody(1, 0, 5, 5, 5, 2047, 2047, 2047, 3, false);
    }
    SECTION("not a unit quaternion")
    {
        f.bodies[0] = wire::StructuredBody(1, 1, 5, 5, 5, 4094, 4094, 4094, 3, false);
    }
    SECTION("largest index 4")
    {
        f.bodies[0] = wire::StructuredBody(1, 1, 5, 5, 5, 2047, 2047, 2047, 4, false);
    }
    SECTION("removed ids not ascending")
    {
        f.removed = {3, 2};
    }
    SECTION("a removed id outside the range")
    {
        f.endId = 3;
        f.bodies.resize(1);
    }
    SECTION("an empty or inverted range")
    {
        f.firstId = 5;
        f.endId = 5;
        f.bodies.clear();
        f.removed.clear();
    }
    SECTION("a range past 2^32")
    {
        f.endId = kIdSpaceEnd + 1;
    }
    SECTION("a baseline not before the tick")
    {
        f.baselineTick = 10;
    }
    SECTION("velocities for some bodies only")
    {
        f.velocities = std::vector<wire::StructuredVelocity>(1);
    }
    SECTION("a velocity not finite")
    {
        f.velocities = std::vector<wire::StructuredVelocity>(2);
        (*f.velocities)[1] = wire::StructuredVelocity(wire::Vec3f(std::nanf(""), 0, 0), wire::Vec3f(0, 0, 0));
    }
    SECTION("a negative server time")
    {
        f.serverTime = -1.0;
    }
    CHECK(reason(f) == DropReason::InvalidField);
}

TEST_CASE("a join asks for its snapshot format, and a bad one is refused", "[structured][packet]")
{
    PacketWriter writer;
    const std::vector<std::uint8_t> cookie(kCookieBytes, 7);
    JoinRequest join;
    join.clientName = "reader";
    join.snapshotFormat = wire::SnapshotFormat::Structured;
    join.snapshotVelocities = true;
    const Datagram good(writer.challengeResponse({}, cookie, join));
    CHECK(good.size >= kMinConnectRequestBytes);
    const DecodeResult decoded = decodePacket(good.view());
    REQUIRE(decoded.ok());
    CHECK(decoded.packet->message_as_ChallengeResponse()->snapshot_format() ==
          wire::SnapshotFormat::Structured);
    CHECK(decoded.packet->message_as_ChallengeResponse()->snapshot_velocities());

    // Velocities with the compressed codec: refused.
    join.snapshotFormat = wire::SnapshotFormat::Compressed;
    CHECK(decodePacket(Datagram(writer.challengeResponse({}, cookie, join)).view()).reason ==
          DropReason::InvalidField);
    // A format this version does not know: refused.
    join.snapshotFormat = static_cast<wire::SnapshotFormat>(9);
    join.snapshotVelocities = false;
    CHECK(decodePacket(Datagram(writer.challengeResponse({}, cookie, join)).view()).reason ==
          DropReason::InvalidField);

    // ConnectAccepted announces the format granted.
    SessionParameters session;
    session.clientId = 3;
    session.snapshotFormat = wire::SnapshotFormat::Structured;
    session.snapshotVelocities = true;
    const Datagram accepted(writer.connectAccepted({}, session));
    const DecodeResult read = decodePacket(accepted.view());
    REQUIRE(read.ok());
    const SessionParameters back = readSessionParameters(*read.packet->message_as_ConnectAccepted());
    CHECK(back.snapshotFormat == wire::SnapshotFormat::Structured);
    CHECK(back.snapshotVelocities);
}

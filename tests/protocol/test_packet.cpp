// Datagram codec: round trips, and rejection (with a reason, without a crash) of bad datagrams.
#include "polytope/protocol/packet.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace polytope::protocol;
namespace wire = polytope::protocol::wire;

namespace
{
/// Copies a datagram into 8-byte-aligned storage, as a receive buffer is.
struct Datagram
{
    explicit Datagram(std::span<const std::uint8_t> bytes) : storage((bytes.size() + 7) / 8 + 1), size(bytes.size())
    {
        std::memcpy(storage.data(), bytes.data(), bytes.size());
    }
    std::span<const std::uint8_t> view() const { return {reinterpret_cast<const std::uint8_t*>(storage.data()), size}; }
    std::uint8_t* data() { return reinterpret_cast<std::uint8_t*>(storage.data()); }
    std::vector<std::uint64_t> storage;
    std::size_t size;
};

std::vector<SnapshotBody> someBodies(std::size_t count)
{
    std::vector<SnapshotBody> bodies(count);
    for (std::size_t i = 0; i < count; ++i)
    {
        SnapshotBody& b = bodies[i];
        b.id = static_cast<std::uint32_t>(i * 3);
        b.generation = static_cast<std::uint32_t>(i + 1);
        b.shape = static_cast<wire::ShapeKind>(i % 3);
        b.atRest = i % 2 == 0;
        b.position = {static_cast<float>(i), -2.5f, 1e3f};
        const float s = std::sqrt(0.5f);
        b.orientation = {0.0f, s, 0.0f, s};
        b.extent = {0.5f, 0.25f, 0.125f};
    }
    return bodies;
}
} // namespace

TEST_CASE("every message survives a round trip", "[protocol]")
{
    PacketWriter writer;
    const HeaderFields header{1234, 1200, 0xA5A5F00Fu};

    SECTION("connect request is padded to its minimum size")
    {
        Datagram d(writer.connectRequest(header, "tester"));
        CHECK(d.size >= kMinConnectRequestBytes);
        CHECK(d.size <= kMaxDatagramBytes);
        const DecodeResult r = decodePacket(d.view());
        REQUIRE(r.ok());
        CHECK(r.type() == wire::PacketType::ConnectRequest);
        CHECK(r.packet->header()->sequence() == 1234);
        CHECK(r.packet->header()->ack() == 1200);
        CHECK(r.packet->header()->ack_bits() == 0xA5A5F00Fu);
        CHECK(r.packet->message_as_ConnectRequest()->client_name()->str() == "tester");
    }
    SECTION("connect accepted is smaller than the request")
    {
        const std::size_t requestSize = writer.connectRequest(header, "x").size();
        Datagram d(writer.connectAccepted(header, 42, 60, 20, "default"));
        CHECK(d.size < requestSize);
        const DecodeResult r = decodePacket(d.view());
        REQUIRE(r.ok());
        const auto* m = r.packet->message_as_ConnectAccepted();
        CHECK(m->client_id() == 42);
        CHECK(m->tick_rate_hz() == 60);
        CHECK(m->snapshot_rate_hz() == 20);
        CHECK(m->scene()->str() == "default");
    }
    SECTION("connect denied, keep-alive, disconnect")
    {
        Datagram denied(writer.connectDenied(header, wire::DenyReason::ServerFull));
        REQUIRE(decodePacket(denied.view()).ok());
        CHECK(decodePacket(denied.view()).packet->message_as_ConnectDenied()->reason() == wire::DenyReason::ServerFull);
        Datagram keepAlive(writer.keepAlive(header, 12.5));
        REQUIRE(decodePacket(keepAlive.view()).ok());
        CHECK(decodePacket(keepAlive.view()).packet->message_as_KeepAlive()->time() == 12.5);
        Datagram bye(writer.disconnect(header, wire::DisconnectReason::ServerShutdown));
        REQUIRE(decodePacket(bye.view()).ok());
        CHECK(decodePacket(bye.view()).packet->message_as_Disconnect()->reason() ==
              wire::DisconnectReason::ServerShutdown);
    }
    SECTION("a full snapshot slice fits in one datagram and keeps every field")
    {
        const auto bodies = someBodies(kBodiesPerSnapshotSlice);
        Datagram d(writer.snapshotSlice(header, 987654321ull, 16.5, 2, 3, 3 * kBodiesPerSnapshotSlice, bodies));
        CHECK(d.size <= kMaxDatagramBytes);
        const DecodeResult r = decodePacket(d.view());
        REQUIRE(r.ok());
        const auto* s = r.packet->message_as_Snapshot();
        CHECK(s->tick() == 987654321ull);
        CHECK(s->server_time() == 16.5);
        CHECK(s->slice_index() == 2);
        CHECK(s->slice_count() == 3);
        REQUIRE(s->bodies()->size() == bodies.size());
        for (std::size_t i = 0; i < bodies.size(); ++i)
        {
            const wire::BodyState* b = s->bodies()->Get(static_cast<flatbuffers::uoffset_t>(i));
            CHECK(b->id() == bodies[i].id);
            CHECK(b->generation() == bodies[i].generation);
            CHECK(b->shape() == bodies[i].shape);
            CHECK(b->at_rest() == bodies[i].atRest);
            CHECK(b->position().x() == bodies[i].position[0]);
            CHECK(b->orientation().w() == bodies[i].orientation[3]);
            CHECK(b->extent().z() == bodies[i].extent[2]);
        }
    }
}

TEST_CASE("truncated, oversized, random and tampered datagrams are rejected with a reason", "[protocol]")
{
    PacketWriter writer;
    const auto bodies = someBodies(8);
    Datagram good(writer.snapshotSlice({}, 10, 1.0, 0, 1, 8, bodies));
    REQUIRE(decodePacket(good.view()).ok());
    DropCounters counters;

    SECTION("every truncation is refused unless it cut only trailing padding")
    {
        const auto* original = decodePacket(good.view()).packet->message_as_Snapshot();
        std::size_t accepted = 0;
        for (std::size_t n = 0; n < good.size; ++n)
        {
            const DecodeResult r = decodePacket(good.view().first(n));
            if (!r.ok())
            {
                counters.add(r.reason);
                continue;
            }
            // The Verifier vouches that every referenced byte is inside the first n: the content is whole.
            ++accepted;
            const auto* s = r.packet->message_as_Snapshot();
            REQUIRE(s);
            CHECK(s->tick() == original->tick());
            REQUIRE(s->bodies()->size() == original->bodies()->size());
            CHECK(std::memcmp(s->bodies()->Data(), original->bodies()->Data(),
                              original->bodies()->size() * sizeof(wire::BodyState)) == 0);
        }
        CHECK(accepted < 8); // at most the alignment padding at the end
        CHECK(counters.total() + accepted == good.size);
        CHECK(counters[DropReason::TooShort] == kMinDatagramBytes);
        CHECK(counters[DropReason::Malformed] > good.size / 2);
    }
    SECTION("oversized datagrams are refused before anything reads them")
    {
        std::vector<std::uint64_t> big(kMaxDatagramBytes / 8 + 2, 0);
        const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(big.data()), kMaxDatagramBytes + 1);
        CHECK(decodePacket(bytes).reason == DropReason::TooLarge);
    }
    SECTION("random bytes never pass, and never crash")
    {
        std::mt19937 rng(1234);
        std::vector<std::uint64_t> buffer(kMaxDatagramBytes / 8 + 1);
        for (int i = 0; i < 20000; ++i)
        {
            const std::size_t size = rng() % (kMaxDatagramBytes + 1);
            auto* bytes = reinterpret_cast<std::uint8_t*>(buffer.data());
            for (std::size_t j = 0; j < size; ++j)
            {
                bytes[j] = static_cast<std::uint8_t>(rng());
            }
            if (i % 2 == 0 && size >= 8)
            {
                std::memcpy(bytes + 4, "PLTP", 4); // get past the identifier check half of the time
            }
            const DecodeResult r = decodePacket({bytes, size});
            CHECK_FALSE(r.ok());
            counters.add(r.reason);
        }
        CHECK(counters.total() == 20000);
        CHECK(counters[DropReason::Malformed] > 0);
    }
    SECTION("single-byte corruption is either refused or still in range")
    {
        std::mt19937 rng(99);
        for (int i = 0; i < 5000; ++i)
        {
            Datagram d(good.view());
            d.data()[rng() % d.size] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
            const DecodeResult r = decodePacket(d.view());
            if (r.ok() && r.type() == wire::PacketType::Snapshot)
            {
                // What passes must satisfy every range check.
                for (const wire::BodyState* b : *r.packet->message_as_Snapshot()->bodies())
                {
                    CHECK(std::isfinite(b->position().x()));
                    CHECK(b->generation() != 0);
                }
            }
        }
    }
    SECTION("wrong protocol id, version and header/message type mismatch")
    {
        flatbuffers::FlatBufferBuilder fbb;
        auto make = [&](std::uint32_t id, std::uint16_t version, wire::PacketType type)
        {
            fbb.Clear();
            const wire::PacketHeader header(id, version, type, 0, 0, 0, 0);
            const auto msg = wire::CreateKeepAlive(fbb, 1.0);
            wire::FinishPacketBuffer(fbb, wire::CreatePacket(fbb, &header, wire::Message::KeepAlive, msg.Union()));
            return Datagram({fbb.GetBufferPointer(), fbb.GetSize()});
        };
        CHECK(decodePacket(make(kProtocolId, kProtocolVersion, wire::PacketType::KeepAlive).view()).ok());
        CHECK(decodePacket(make(0xDEADBEEF, kProtocolVersion, wire::PacketType::KeepAlive).view()).reason ==
              DropReason::WrongProtocol);
        CHECK(decodePacket(make(kProtocolId, kProtocolVersion + 1, wire::PacketType::KeepAlive).view()).reason ==
              DropReason::WrongVersion);
        CHECK(decodePacket(make(kProtocolId, kProtocolVersion, wire::PacketType::Snapshot).view()).reason ==
              DropReason::TypeMismatch);
    }
    SECTION("NaN, non-unit quaternions and bad slice indices are out of range")
    {
        auto bad = bodies;
        bad[3].position[1] = NAN;
        CHECK(decodePacket(Datagram(writer.snapshotSlice({}, 1, 0.0, 0, 1, 8, bad)).view()).reason ==
              DropReason::InvalidField);
        bad = bodies;
        bad[0].orientation = {0.0f, 0.0f, 0.0f, 2.0f};
        CHECK(decodePacket(Datagram(writer.snapshotSlice({}, 1, 0.0, 0, 1, 8, bad)).view()).reason ==
              DropReason::InvalidField);
        CHECK(decodePacket(Datagram(writer.snapshotSlice({}, 1, 0.0, 1, 1, 8, bodies)).view()).reason ==
              DropReason::InvalidField);
        CHECK(decodePacket(Datagram(writer.snapshotSlice({}, 1, NAN, 0, 1, 8, bodies)).view()).reason ==
              DropReason::InvalidField);
        CHECK(decodePacket(Datagram(writer.snapshotSlice({}, 1, 0.0, 0, 1, 4000000, bodies)).view()).reason ==
              DropReason::InvalidField);
    }
    SECTION("an unpadded connect request is refused")
    {
        flatbuffers::FlatBufferBuilder fbb;
        const wire::PacketHeader header(kProtocolId, kProtocolVersion, wire::PacketType::ConnectRequest, 0, 0, 0, 0);
        const auto msg = wire::CreateConnectRequest(fbb, fbb.CreateString("short"));
        wire::FinishPacketBuffer(fbb, wire::CreatePacket(fbb, &header, wire::Message::ConnectRequest, msg.Union()));
        CHECK(decodePacket(Datagram({fbb.GetBufferPointer(), fbb.GetSize()}).view()).reason == DropReason::TooShort);
    }
}

TEST_CASE("ack tracking reports the newest sequence and the 32 before it across wrap-around", "[protocol]")
{
    AckTracker acks;
    const std::uint16_t start = 65530;
    for (std::uint16_t i = 0; i < 40; ++i)
    {
        if (i % 5 == 3)
        {
            continue; // lost
        }
        CHECK(acks.onReceived(static_cast<std::uint16_t>(start + i)));
    }
    CHECK_FALSE(acks.onReceived(static_cast<std::uint16_t>(start + 39))); // duplicate
    const HeaderFields fields = acks.nextOutgoing();
    CHECK(fields.ack == static_cast<std::uint16_t>(start + 39));
    for (std::uint16_t age = 1; age <= 32; ++age)
    {
        const std::uint16_t i = static_cast<std::uint16_t>(39 - age);
        const bool received = i % 5 != 3;
        CHECK(((fields.ackBits >> (age - 1)) & 1u) == (received ? 1u : 0u));
    }
    CHECK(acks.onReceived(static_cast<std::uint16_t>(start + 38))); // late arrival inside the window
    CHECK_FALSE(acks.onReceived(static_cast<std::uint16_t>(start + 3))); // too old to track
    CHECK(sequenceGreaterThan(2, 65535));
    CHECK_FALSE(sequenceGreaterThan(65535, 2));
}

// Datagram codec: round trips, and rejection (with a reason, without a crash) of bad datagrams.
#include "polytope/protocol/packet.h"
#include "support/datagram_copy.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace polytope::protocol;
namespace wire = polytope::protocol::wire;

namespace
{
using polytope::test::Datagram;

/// Rewrites the version in a datagram's header, in place (the header struct: protocol id u32, version u16,
/// little-endian).
void setHeaderVersion(Datagram& datagram, std::uint16_t version)
{
    const auto* header = reinterpret_cast<const std::uint8_t*>(wire::GetPacket(datagram.data())->header());
    std::uint8_t* at = datagram.data() + (header - datagram.data()) + 4;
    at[0] = static_cast<std::uint8_t>(version & 0xFF);
    at[1] = static_cast<std::uint8_t>(version >> 8);
}

std::vector<std::uint8_t> somePayload(std::size_t size)
{
    std::vector<std::uint8_t> payload(size);
    for (std::size_t i = 0; i < size; ++i)
    {
        payload[i] = static_cast<std::uint8_t>(i * 37 + 11);
    }
    return payload;
}

std::vector<CatalogueEntry> someEntries(std::size_t count)
{
    std::vector<CatalogueEntry> entries(count);
    for (std::size_t i = 0; i < count; ++i)
    {
        CatalogueEntry& e = entries[i];
        e.id = static_cast<std::uint32_t>(i * 3);
        e.generation = static_cast<std::uint32_t>(i + 1);
        e.shape = static_cast<wire::ShapeKind>(i % 5);
        e.removed = i % 4 == 3;
        e.extent = {0.5f, 0.25f + static_cast<float>(i), 0.125f};
    }
    return entries;
}

std::vector<InputCommand> someInputs(std::size_t count)
{
    std::vector<InputCommand> inputs(count);
    for (std::size_t i = 0; i < count; ++i)
    {
        InputCommand& in = inputs[i];
        in.tick = 1000000007ull + i;
        in.sequence = static_cast<std::uint32_t>(i + 1);
        in.bodyId = static_cast<std::uint32_t>(i * 7);
        in.bodyGeneration = 2;
        in.kind = static_cast<wire::InputKind>(i % 4);
        in.vector = {1.5f, -2.0f * static_cast<float>(i), 3.0f};
    }
    return inputs;
}
} // namespace

TEST_CASE("every message survives a round trip", "[protocol]")
{
    PacketWriter writer;
    const HeaderFields header{1234, 1200, 0xA5A5F00Fu};

    SECTION("connect request is padded to its minimum size, and carries a token of the largest size")
    {
        TokenCredentialFields token;
        token.expireTime = 1900000000ull;
        token.nonce.fill(0x42);
        token.sealed = somePayload(kMaxTokenCredentialSealedBytes);
        Datagram withToken(writer.connectRequest(header, std::string(kMaxClientNameBytes, 'n'),
                                                 std::string(kMaxRoomNameBytes, 'r'), &token));
        CHECK(withToken.size <= kMaxPacketBytes);
        const DecodeResult t = decodePacket(withToken.view());
        REQUIRE(t.ok());
        TokenCredentialFields read;
        REQUIRE(readTokenCredential(t.packet->message_as_ConnectRequest()->token(), read));
        CHECK(read.expireTime == token.expireTime);
        CHECK(read.nonce == token.nonce);
        CHECK(read.sealed == token.sealed);
        Datagram response(writer.challengeResponse(header, somePayload(kCookieBytes),
                                                   std::string(kMaxClientNameBytes, 'n'),
                                                   std::string(kMaxRoomNameBytes, 'r'), 20, true, &token));
        CHECK(response.size <= kMaxPacketBytes);
        REQUIRE(decodePacket(response.view()).ok());
        // A token with a nonce or sealed part of the wrong size is refused.
        token.sealed.push_back(0);
        CHECK(decodePacket(Datagram(writer.connectRequest(header, "x", "", &token)).view()).reason ==
              DropReason::InvalidField);

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
        SessionParameters session;
        session.clientId = 42;
        session.tickRateHz = 60;
        session.snapshotRateHz = 20;
        session.scene = "default";
        session.position.boundsMin = {-10.0f, -1.0f, -20.0f};
        session.position.boundsMax = {10.0f, 50.0f, 20.0f};
        session.position.stepsPerMetre = 512;
        session.maxBaselineAgeTicks = 300;
        session.firstTick = 123456789012ull;
        Datagram d(writer.connectAccepted(header, session));
        CHECK(d.size < requestSize);
        const DecodeResult r = decodePacket(d.view());
        REQUIRE(r.ok());
        const SessionParameters read = readSessionParameters(*r.packet->message_as_ConnectAccepted());
        CHECK(read.clientId == 42);
        CHECK(read.tickRateHz == 60);
        CHECK(read.snapshotRateHz == 20);
        CHECK(read.scene == "default");
        CHECK(read.position.boundsMin == session.position.boundsMin);
        CHECK(read.position.boundsMax == session.position.boundsMax);
        CHECK(read.position.stepsPerMetre == 512);
        CHECK(read.maxBaselineAgeTicks == 300);
        CHECK(read.firstTick == 123456789012ull);
        // Bad codec parameters are refused.
        SessionParameters bad = session;
        bad.position.stepsPerMetre = 0;
        CHECK(decodePacket(Datagram(writer.connectAccepted(header, bad)).view()).reason ==
              DropReason::InvalidField);
        bad = session;
        bad.position.boundsMax[1] = -5.0f;
        CHECK(decodePacket(Datagram(writer.connectAccepted(header, bad)).view()).reason ==
              DropReason::InvalidField);
        bad = session;
        bad.maxBaselineAgeTicks = 0;
        CHECK(decodePacket(Datagram(writer.connectAccepted(header, bad)).view()).reason ==
              DropReason::InvalidField);
    }
    SECTION("connect denied, keep-alive, disconnect")
    {
        Datagram denied(writer.connectDenied(header, wire::DenyReason::ServerFull));
        REQUIRE(decodePacket(denied.view()).ok());
        CHECK(decodePacket(denied.view()).packet->message_as_ConnectDenied()->reason() ==
              wire::DenyReason::ServerFull);
        Datagram keepAlive(writer.keepAlive(header, 12.5));
        REQUIRE(decodePacket(keepAlive.view()).ok());
        CHECK(decodePacket(keepAlive.view()).packet->message_as_KeepAlive()->time() == 12.5);
        Datagram bye(writer.disconnect(header, wire::DisconnectReason::ServerShutdown));
        REQUIRE(decodePacket(bye.view()).ok());
        CHECK(decodePacket(bye.view()).packet->message_as_Disconnect()->reason() ==
              wire::DisconnectReason::ServerShutdown);
    }
    SECTION("challenge and challenge response carry the cookie; the response is padded")
    {
        const std::vector<std::uint8_t> cookie = somePayload(kCookieBytes);
        const std::size_t requestSize = writer.connectRequest(header, "x").size();
        Datagram challenge(writer.challenge(header, cookie));
        CHECK(challenge.size < requestSize);
        const DecodeResult c = decodePacket(challenge.view());
        REQUIRE(c.ok());
        CHECK(std::equal(cookie.begin(), cookie.end(), c.packet->message_as_Challenge()->cookie()->begin()));
        Datagram response(writer.challengeResponse(header, cookie, "tester"));
        CHECK(response.size >= kMinConnectRequestBytes);
        const DecodeResult r = decodePacket(response.view());
        REQUIRE(r.ok());
        const auto* m = r.packet->message_as_ChallengeResponse();
        CHECK(std::equal(cookie.begin(), cookie.end(), m->cookie()->begin()));
        CHECK(m->client_name()->str() == "tester");
        // A cookie of the wrong size is refused.
        const std::vector<std::uint8_t> shortCookie = somePayload(kCookieBytes - 1);
        CHECK(decodePacket(Datagram(writer.challenge(header, shortCookie)).view()).reason ==
              DropReason::InvalidField);
        CHECK(decodePacket(Datagram(writer.challengeResponse(header, shortCookie, "x")).view()).reason ==
              DropReason::InvalidField);
    }
    SECTION("a snapshot slice of the largest payload fits in one sealed datagram and keeps every byte")
    {
        const auto payload = somePayload(kMaxSnapshotPayloadBytes);
        Datagram d(writer.snapshot(header, 987654321ull, 16.5, payload));
        CHECK(d.size <= kMaxPacketBytes);
        const DecodeResult r = decodePacket(d.view());
        REQUIRE(r.ok());
        const auto* s = r.packet->message_as_Snapshot();
        CHECK(s->tick() == 987654321ull);
        CHECK(s->server_time() == 16.5);
        REQUIRE(s->payload()->size() == payload.size());
        CHECK(std::equal(payload.begin(), payload.end(), s->payload()->begin()));
    }
    SECTION("a full catalogue datagram fits and keeps every entry")
    {
        const auto entries = someEntries(kMaxCatalogueEntriesPerDatagram);
        Datagram d(writer.catalogue(header, entries));
        CHECK(d.size <= kMaxPacketBytes);
        const DecodeResult r = decodePacket(d.view());
        REQUIRE(r.ok());
        std::vector<CatalogueEntry> read;
        readCatalogue(*r.packet->message_as_Catalogue(), read);
        CHECK(read == entries);
    }
    SECTION("a full input datagram fits and keeps every input; an empty one is a plain acknowledgement")
    {
        const auto inputs = someInputs(kMaxInputsPerDatagram);
        Datagram d(writer.clientInput(header, inputs));
        CHECK(d.size <= kMaxPacketBytes);
        const DecodeResult r = decodePacket(d.view());
        REQUIRE(r.ok());
        std::vector<InputCommand> read;
        readInputs(*r.packet->message_as_ClientInput(), read);
        CHECK(read == inputs);
        Datagram empty(writer.clientInput(header, {}));
        const DecodeResult e = decodePacket(empty.view());
        REQUIRE(e.ok());
        readInputs(*e.packet->message_as_ClientInput(), read);
        CHECK(read.empty());
    }
}

TEST_CASE("truncated, oversized, random and tampered datagrams are rejected with a reason", "[protocol]")
{
    PacketWriter writer;
    const auto entries = someEntries(8);
    Datagram good(writer.catalogue({}, entries));
    REQUIRE(decodePacket(good.view()).ok());
    DropCounters counters;

    SECTION("every truncation is refused unless it cut only trailing padding")
    {
        const auto* original = decodePacket(good.view()).packet->message_as_Catalogue();
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
            const auto* c = r.packet->message_as_Catalogue();
            REQUIRE(c);
            REQUIRE(c->entries()->size() == original->entries()->size());
            CHECK(std::memcmp(c->entries()->Data(), original->entries()->Data(),
                              original->entries()->size() * sizeof(wire::CatalogueEntry)) == 0);
        }
        CHECK(accepted < 8); // at most the alignment padding at the end
        CHECK(counters.total() + accepted == good.size);
        CHECK(counters[DropReason::TooShort] == kMinDatagramBytes);
        CHECK(counters[DropReason::Malformed] > good.size / 2);
    }
    SECTION("oversized datagrams are refused before anything reads them")
    {
        std::vector<std::uint64_t> big(kMaxDatagramBytes / 8 + 2, 0);
        const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(big.data()),
                                                  kMaxDatagramBytes + 1);
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
            if (r.ok() && r.type() == wire::PacketType::Catalogue)
            {
                // What passes must satisfy every range check.
                for (const wire::CatalogueEntry* e : *r.packet->message_as_Catalogue()->entries())
                {
                    CHECK(std::isfinite(e->extent().x()));
                    CHECK(e->extent().y() >= 0.0f);
                    CHECK(e->generation() != 0);
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
            wire::FinishPacketBuffer(fbb,
                                     wire::CreatePacket(fbb, &header, wire::Message::KeepAlive, msg.Union()));
            return Datagram({fbb.GetBufferPointer(), fbb.GetSize()});
        };
        CHECK(decodePacket(make(kProtocolId, kProtocolVersion, wire::PacketType::KeepAlive).view()).ok());
        CHECK(decodePacket(make(0xDEADBEEF, kProtocolVersion, wire::PacketType::KeepAlive).view()).reason ==
              DropReason::WrongProtocol);
        CHECK(decodePacket(make(kProtocolId, kProtocolVersion + 1, wire::PacketType::KeepAlive).view())
                  .reason == DropReason::WrongVersion);
        CHECK(decodePacket(make(kProtocolId, kProtocolVersion, wire::PacketType::Snapshot).view()).reason ==
              DropReason::TypeMismatch);
        CHECK(decodePacket(make(kProtocolId, 1, wire::PacketType::KeepAlive).view()).reason ==
              DropReason::WrongVersion);
    }
    SECTION("NaN, negative or huge extents, bad shapes and generation 0 in the catalogue are out of range")
    {
        for (int variant = 0; variant < 5; ++variant)
        {
            auto bad = entries;
            switch (variant)
            {
            case 0:
                bad[3].extent[1] = NAN;
                break;
            case 1:
                bad[3].extent[0] = -1.0f;
                break;
            case 2:
                bad[3].extent[2] = 2.0f * kMaxShapeExtentMeters;
                break;
            case 3:
                bad[3].shape = static_cast<wire::ShapeKind>(9);
                break;
            default:
                bad[3].generation = 0;
                break;
            }
            CHECK(decodePacket(Datagram(writer.catalogue({}, bad)).view()).reason ==
                  DropReason::InvalidField);
        }
        CHECK(decodePacket(Datagram(writer.catalogue({}, {})).view()).reason == DropReason::InvalidField);
    }
    SECTION("inputs: NaN, out-of-range vectors, sequence or generation 0, unknown kinds are refused")
    {
        const auto inputs = someInputs(6);
        for (int variant = 0; variant < 7; ++variant)
        {
            auto bad = inputs;
            switch (variant)
            {
            case 0:
                bad[2].vector[0] = NAN;
                break;
            case 1:
                bad[2].vector[1] = INFINITY;
                break;
            case 2:
                bad[3].kind = wire::InputKind::TargetVelocity;
                bad[3].vector[2] = 1.01f * kMaxInputVelocity;
                break;
            case 3:
                bad[0].kind = wire::InputKind::Impulse;
                bad[0].vector[0] = -1.01f * kMaxInputImpulse;
                break;
            case 4:
                bad[1].sequence = 0;
                break;
            case 5:
                bad[1].bodyGeneration = 0;
                break;
            default:
                bad[5].kind = static_cast<wire::InputKind>(4);
                break;
            }
            CHECK(decodePacket(Datagram(writer.clientInput({}, bad)).view()).reason ==
                  DropReason::InvalidField);
        }
        // At the limit is fine.
        auto edge = inputs;
        edge[0].kind = wire::InputKind::Force;
        edge[0].vector = {kMaxInputForce, -kMaxInputForce, 0.0f};
        CHECK(decodePacket(Datagram(writer.clientInput({}, edge)).view()).ok());
    }
    SECTION("snapshots: empty or oversized payloads and bad server times are refused")
    {
        CHECK(decodePacket(Datagram(writer.snapshot({}, 1, 0.0, {})).view()).reason ==
              DropReason::InvalidField);
        const auto big = somePayload(kMaxSnapshotPayloadBytes + 1);
        CHECK(decodePacket(Datagram(writer.snapshot({}, 1, 0.0, big)).view()).reason ==
              DropReason::InvalidField);
        const auto small = somePayload(10);
        CHECK(decodePacket(Datagram(writer.snapshot({}, 1, NAN, small)).view()).reason ==
              DropReason::InvalidField);
        CHECK(decodePacket(Datagram(writer.snapshot({}, 1, -1.0, small)).view()).reason ==
              DropReason::InvalidField);
        CHECK(decodePacket(Datagram(writer.snapshot({}, 1, 0.5, small)).view()).ok());
    }
    SECTION("unknown header flags are refused")
    {
        HeaderFields flagged;
        flagged.flags = 0x80;
        CHECK(decodePacket(Datagram(writer.keepAlive(flagged, 1.0)).view()).reason ==
              DropReason::InvalidField);
    }
    SECTION("the full-snapshot request flag is allowed in ClientInput and KeepAlive only")
    {
        HeaderFields request;
        request.flags = kHeaderFlagAckValid | kHeaderFlagFullSnapshotRequest;
        const Datagram keepAliveDatagram(writer.keepAlive(request, 1.0)); // the decoded packet points into it
        const DecodeResult keepAlive = decodePacket(keepAliveDatagram.view());
        REQUIRE(keepAlive.ok());
        CHECK(keepAlive.packet->header()->flags() == (kHeaderFlagAckValid | kHeaderFlagFullSnapshotRequest));
        CHECK(decodePacket(Datagram(writer.clientInput(request, someInputs(2))).view()).ok());
        CHECK(decodePacket(Datagram(writer.disconnect(request, wire::DisconnectReason::ClientQuit)).view())
                  .reason == DropReason::InvalidField);
        CHECK(decodePacket(Datagram(writer.snapshot(request, 1, 0.5, somePayload(10))).view()).reason ==
              DropReason::InvalidField);
        CHECK(decodePacket(Datagram(writer.connectRequest(request, "alice")).view()).reason ==
              DropReason::InvalidField);
    }
    SECTION("a ConnectRequest of another version is recognised, to be answered with a Version denial")
    {
        for (const std::uint16_t version :
             {std::uint16_t{4}, std::uint16_t{1}, std::uint16_t{5}, std::uint16_t{7}})
        {
            Datagram request(writer.connectRequest({}, "old client"));
            setHeaderVersion(request, version);
            const DecodeResult decoded = decodePacket(request.view());
            CHECK(decoded.reason == DropReason::WrongVersion);
            CHECK(decoded.otherVersion == version);
            CHECK(decoded.connectRequestOfOtherVersion);

            // Its denial speaks the request's version and is far smaller than the request.
            Datagram denial(writer.connectDenied({}, wire::DenyReason::Version, version));
            CHECK(denial.size < request.size);
            const wire::Packet* packet = wire::GetPacket(denial.data());
            CHECK(packet->header()->version() == version);
            CHECK(packet->header()->type() == wire::PacketType::ConnectDenied);
            CHECK(packet->message_as_ConnectDenied()->reason() == wire::DenyReason::Version);
        }
        // Not a ConnectRequest, or smaller than a padded one: no denial is due.
        Datagram keepAlive(writer.keepAlive({}, 1.0));
        setHeaderVersion(keepAlive, 4);
        CHECK(decodePacket(keepAlive.view()).reason == DropReason::WrongVersion);
        CHECK_FALSE(decodePacket(keepAlive.view()).connectRequestOfOtherVersion);
        // The current version's denial is an ordinary, valid datagram of 64 bytes.
        const Datagram denial(writer.connectDenied({}, wire::DenyReason::Version));
        const DecodeResult current = decodePacket(denial.view());
        REQUIRE(current.ok());
        CHECK(current.bytes.size() == 64);
    }
    SECTION("a client input without inputs: the vector absent or empty means the same")
    {
        // The reference writer leaves the vector out; another FlatBuffers runtime may write an empty one.
        Datagram absent(writer.clientInput(HeaderFields{}, {}));
        const DecodeResult a = decodePacket(absent.view());
        REQUIRE(a.ok());
        CHECK(a.packet->message_as_ClientInput()->inputs() == nullptr);

        flatbuffers::FlatBufferBuilder fbb;
        const wire::PacketHeader fields(kProtocolId, kProtocolVersion, wire::PacketType::ClientInput, 0, 7, 0,
                                        0);
        const auto inputs = fbb.CreateVectorOfStructs(static_cast<const wire::Input*>(nullptr), 0);
        const auto msg = wire::CreateClientInput(fbb, inputs);
        wire::FinishPacketBuffer(fbb,
                                 wire::CreatePacket(fbb, &fields, wire::Message::ClientInput, msg.Union()));
        Datagram empty({fbb.GetBufferPointer(), fbb.GetSize()});
        const DecodeResult e = decodePacket(empty.view());
        // FlatBuffers' C++ builder does not align an empty vector of structs (with this builder its data
        // offset is 4 past an 8-byte boundary). Nothing is read from it: it must not be refused as
        // misaligned.
        REQUIRE(e.ok());
        REQUIRE(e.packet->message_as_ClientInput()->inputs() != nullptr);
        CHECK(e.packet->message_as_ClientInput()->inputs()->size() == 0);

        std::vector<InputCommand> read{InputCommand{}};
        readInputs(*a.packet->message_as_ClientInput(), read);
        CHECK(read.empty());
        read.push_back(InputCommand{});
        readInputs(*e.packet->message_as_ClientInput(), read);
        CHECK(read.empty());
    }
    SECTION("the stateless replies have the sizes STANDARD.md section 4 gives")
    {
        CHECK(writer.challenge({}, somePayload(kCookieBytes)).size() == 104);
        CHECK(writer.connectDenied({}, wire::DenyReason::UnknownRoom).size() < kMinConnectRequestBytes);
    }
    SECTION("an unpadded connect request or challenge response is refused")
    {
        {
            flatbuffers::FlatBufferBuilder fbb;
            const wire::PacketHeader header(kProtocolId, kProtocolVersion,
                                            wire::PacketType::ChallengeResponse, 0, 0, 0, 0);
            const std::vector<std::uint8_t> cookie(kCookieBytes, 1);
            const auto msg =
                wire::CreateChallengeResponse(fbb, fbb.CreateVector(cookie), fbb.CreateString("short"));
            wire::FinishPacketBuffer(
                fbb, wire::CreatePacket(fbb, &header, wire::Message::ChallengeResponse, msg.Union()));
            CHECK(decodePacket(Datagram({fbb.GetBufferPointer(), fbb.GetSize()}).view()).reason ==
                  DropReason::TooShort);
        }
        flatbuffers::FlatBufferBuilder fbb;
        const wire::PacketHeader header(kProtocolId, kProtocolVersion, wire::PacketType::ConnectRequest, 0, 0,
                                        0, 0);
        const auto msg = wire::CreateConnectRequest(fbb, fbb.CreateString("short"));
        wire::FinishPacketBuffer(
            fbb, wire::CreatePacket(fbb, &header, wire::Message::ConnectRequest, msg.Union()));
        CHECK(decodePacket(Datagram({fbb.GetBufferPointer(), fbb.GetSize()}).view()).reason ==
              DropReason::TooShort);
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
    CHECK(acks.onReceived(static_cast<std::uint16_t>(start + 38)));      // late arrival inside the window
    CHECK_FALSE(acks.onReceived(static_cast<std::uint16_t>(start + 3))); // too old to track
    CHECK(acks.hasReceived(static_cast<std::uint16_t>(start + 38)));
    CHECK_FALSE(acks.hasReceived(static_cast<std::uint16_t>(start + 8)));
    CHECK(fields.flags == kHeaderFlagAckValid);
    CHECK(AckTracker().nextOutgoing().flags == 0); // nothing received: the acks mean nothing
    CHECK(sequenceGreaterThan(2, 65535));
    CHECK_FALSE(sequenceGreaterThan(65535, 2));
}

TEST_CASE("admin replies are signed with the admin key and never larger than a request", "[protocol][admin]")
{
    const AdminMacKey key = deriveAdminMacKey("operator secret");
    const AdminMacKey other = deriveAdminMacKey("another secret");
    PacketWriter writer;
    const std::string longest(kMaxAdminMessageBytes + 50, 'x'); // cut to kMaxAdminMessageBytes
    const auto bytes = writer.adminReply({}, 0x1122334455667788ull, true, longest, &key);
    CHECK(bytes.size() <= kMinAdminRequestBytes);
    std::vector<std::uint64_t> aligned(bytes.size() / 8 + 1);
    std::memcpy(aligned.data(), bytes.data(), bytes.size());
    const DecodeResult decoded =
        decodePacket({reinterpret_cast<const std::uint8_t*>(aligned.data()), bytes.size()});
    REQUIRE(decoded.ok());
    const auto* reply = decoded.packet->message_as_AdminReply();
    REQUIRE(reply->mac());
    const std::string_view text(reply->message()->c_str(), reply->message()->size());
    CHECK(text.size() == kMaxAdminMessageBytes);
    const std::span<const std::uint8_t> mac(reply->mac()->data(), reply->mac()->size());
    CHECK(verifyAdminReplyMac(key, reply->nonce(), reply->ok(), text, mac));
    // Another key, another nonce, the other outcome or another message: refused.
    CHECK_FALSE(verifyAdminReplyMac(other, reply->nonce(), reply->ok(), text, mac));
    CHECK_FALSE(verifyAdminReplyMac(key, reply->nonce() + 1, reply->ok(), text, mac));
    CHECK_FALSE(verifyAdminReplyMac(key, reply->nonce(), false, text, mac));
    CHECK_FALSE(verifyAdminReplyMac(key, reply->nonce(), reply->ok(), text.substr(1), mac));
    // A request's mac over the same bytes is never a reply's.
    CHECK_FALSE(adminReplyMac(key, 0, false, "") == adminMac(key, {}));
}

// Game messages and game states (protocol version 6, STANDARD.md section 15): written, read back, bounded.
#include "polytope/protocol/packet.h"
#include "support/datagram_copy.h"

#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

using namespace polytope;
using namespace polytope::protocol;

TEST_CASE("game messages ride in ClientInput and read back field for field", "[protocol][game]")
{
    PacketWriter writer;
    std::vector<std::uint8_t> a(3, 9);
    std::vector<std::uint8_t> b(kMaxGameMessageBytes);
    std::iota(b.begin(), b.end(), std::uint8_t{0});
    const std::vector<GameMessageFields> sent{{5, 100, 90, 93, 0.5f, a}, {6, 101, 93, 93, 0.0f, b}};
    const std::vector<InputCommand> inputs{{100, 1, 2, 1, wire::InputKind::Force, {1.0f, 2.0f, 3.0f}}};
    const test::Datagram datagram(writer.clientInput({}, inputs, sent));
    const DecodeResult decoded = decodePacket(datagram.view());
    REQUIRE(decoded.ok());
    std::vector<GameMessageFields> read;
    readGameMessages(*decoded.packet->message_as_ClientInput(), read);
    REQUIRE(read.size() == 2);
    for (std::size_t i = 0; i < 2; ++i)
    {
        CHECK(read[i].sequence == sent[i].sequence);
        CHECK(read[i].tick == sent[i].tick);
        CHECK(read[i].viewFromTick == sent[i].viewFromTick);
        CHECK(read[i].viewToTick == sent[i].viewToTick);
        CHECK(read[i].viewFraction == sent[i].viewFraction);
        CHECK(std::equal(read[i].data.begin(), read[i].data.end(), sent[i].data.begin(), sent[i].data.end()));
    }
    std::vector<InputCommand> readInputsBack;
    readInputs(*decoded.packet->message_as_ClientInput(), readInputsBack);
    CHECK(readInputsBack == inputs);
}

TEST_CASE("gameMessageWireBytes bounds what a message adds to a ClientInput", "[protocol][game]")
{
    PacketWriter writer;
    const std::size_t without = writer.clientInput({}, {}, {}).size();
    for (std::size_t bytes = 1; bytes <= kMaxGameMessageBytes; ++bytes)
    {
        const std::vector<std::uint8_t> data(bytes, 1);
        const GameMessageFields one{1, 2, 3, 4, 0.5f, data};
        const std::size_t with = writer.clientInput({}, {}, std::span(&one, 1)).size();
        REQUIRE(with - without <= gameMessageWireBytes(bytes));
    }
    // A second message adds no more than its own bound either.
    const std::vector<std::uint8_t> data(100, 1);
    const std::vector<GameMessageFields> two{{1, 2, 3, 4, 0.5f, data}, {2, 2, 3, 4, 0.5f, data}};
    const std::size_t first = writer.clientInput({}, {}, std::span(two).first(1)).size();
    CHECK(writer.clientInput({}, {}, two).size() - first <= gameMessageWireBytes(100));
}

TEST_CASE("game states read back whole, and out-of-range ones are dropped", "[protocol][game]")
{
    PacketWriter writer;
    const std::vector<std::uint8_t> state(kMaxGameStateBytes, 0x5A);
    const test::Datagram datagram(writer.gameState({}, wire::GameStateScope::Client, 42, state));
    CHECK(datagram.view().size() <= kMaxPacketBytes);
    const DecodeResult decoded = decodePacket(datagram.view());
    REQUIRE(decoded.ok());
    const wire::GameState& message = *decoded.packet->message_as_GameState();
    CHECK(message.scope() == wire::GameStateScope::Client);
    CHECK(message.version() == 42);
    REQUIRE(message.data() != nullptr);
    CHECK(std::equal(message.data()->begin(), message.data()->end(), state.begin(), state.end()));
    // Eight messages of the largest size do not fit one datagram; the client packs by gameMessageWireBytes.
    CHECK(8 * gameMessageWireBytes(kMaxGameMessageBytes) > kMaxPacketBytes);
    const std::string reason(kMaxLogicReasonBytes + 50, 'r');
    const test::Datagram denied(writer.connectDenied({}, wire::DenyReason::RefusedByGame, reason));
    const DecodeResult deniedDecoded = decodePacket(denied.view());
    REQUIRE(deniedDecoded.ok());
    CHECK(deniedDecoded.packet->message_as_ConnectDenied()->message()->size() == kMaxLogicReasonBytes);
}

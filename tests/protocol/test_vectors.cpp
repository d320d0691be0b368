// The protocol's test vectors (protocol/vectors/): every committed vector decodes with this code to exactly
// the meaning it records, every malformed one is refused with its recorded reason, and the generator
// (support/protocol_vectors.cpp) still builds exactly the committed files, so a change to the wire that is
// not regenerated (and so not reviewed as a wire change) fails here.
#include "polytope/protocol/checksum.h"
#include "polytope/protocol/packet.h"
#include "polytope/protocol/seal.h"
#include "polytope/protocol/snapshot_codec.h"
#include "support/protocol_vectors.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace polytope;
using namespace polytope::protocol;
using nlohmann::json;
using testing::bodyFromJson;
using testing::fromHex;

namespace
{

std::string readVectorFile(const std::string& name)
{
    std::ifstream in(std::string(POLYTOPE_VECTORS_DIR) + "/" + name, std::ios::binary);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

json loadVectors(const std::string& name)
{
    return json::parse(readVectorFile(name));
}

std::vector<QuantizedBody> bodiesOf(const json& rows)
{
    std::vector<QuantizedBody> bodies;
    for (const json& row : rows)
    {
        bodies.push_back(bodyFromJson(row));
    }
    return bodies;
}

/// The frames a snapshot vector decodes against: nullopt-like empty when the vector has none.
struct Frames
{
    std::vector<QuantizedBody> baselineBodies;
    std::vector<QuantizedBody> referenceBodies;
    SnapshotFrame baseline;
    SnapshotFrame reference;
    bool hasBaseline = false;
    bool hasReference = false;

    explicit Frames(const json& vector)
    {
        if (!vector.at("baseline").is_null())
        {
            hasBaseline = true;
            baselineBodies = bodiesOf(vector["baseline"]["bodies"]);
            baseline = SnapshotFrame(vector["baseline"]["tick"].get<std::uint64_t>(), baselineBodies);
        }
        if (!vector.at("reference").is_null())
        {
            hasReference = true;
            referenceBodies = bodiesOf(vector["reference"]["bodies"]);
            reference = SnapshotFrame(vector["reference"]["tick"].get<std::uint64_t>(), referenceBodies);
        }
    }
    Frames(const Frames&) = delete;
};

/// decodePacket wants 8-byte-aligned bytes.
struct AlignedDatagram
{
    std::vector<std::uint64_t> words;
    std::size_t size = 0;
    explicit AlignedDatagram(const std::vector<std::uint8_t>& bytes)
        : words((bytes.size() + 7) / 8), size(bytes.size())
    {
        std::memcpy(words.data(), bytes.data(), bytes.size());
    }
    std::span<const std::uint8_t> bytes() const
    {
        return {reinterpret_cast<const std::uint8_t*>(words.data()), size};
    }
};

} // namespace

TEST_CASE("The committed protocol vectors are exactly what polytope-vectors builds")
{
    const std::vector<testing::VectorFile> files = testing::buildProtocolVectors();
    REQUIRE(files.size() == 3);
    for (const testing::VectorFile& file : files)
    {
        INFO(file.name << " differs from the generator's output: if the wire changed on purpose, run "
                          "polytope-vectors protocol/vectors and review the diff");
        CHECK(readVectorFile(file.name) == file.text);
    }
}

TEST_CASE("Snapshot vectors decode to their recorded headers, bodies, classes and checksums")
{
    const json file = loadVectors("snapshots.json");
    REQUIRE(file["protocolVersion"] == kProtocolVersion);
    REQUIRE(file["vectors"].size() >= 9);
    std::array<int, 7> changedPerClass{};
    for (const json& vector : file["vectors"])
    {
        INFO("vector " << vector["name"].get<std::string>());
        const SnapshotCodecConfig config = testing::codecConfigFromJson(vector["config"]);
        for (int axis = 0; axis < 3; ++axis)
        {
            REQUIRE(vector["config"]["maxCode"][axis] == config.position.maxCode(axis));
        }
        const Frames frames(vector);
        const std::uint64_t tick = vector["tick"].get<std::uint64_t>();
        SnapshotDecoder decoder(config);
        std::vector<SnapshotDecoder::KeptCoding> kept;
        std::uint64_t nextId = 0;
        for (const json& slice : vector["slices"])
        {
            const std::vector<std::uint8_t> payload = fromHex(slice["payload"]);
            const json& h = slice["header"];
            const SliceHeaderResult header = readSliceHeader(config, payload);
            REQUIRE(header.ok());
            CHECK(header.header.hasBaseline == h["hasBaseline"].get<bool>());
            CHECK(header.header.hasReference == h["hasReference"].get<bool>());
            CHECK(header.header.baselineAge == h["baselineAge"].get<std::uint32_t>());
            CHECK(header.header.referenceGap == h["referenceGap"].get<std::uint32_t>());
            CHECK(header.header.deceleration == h["deceleration"].get<std::uint32_t>());
            CHECK(header.header.firstId == h["firstId"].get<std::uint32_t>());
            CHECK(header.header.endId == h["endId"].get<std::uint64_t>());
            CHECK(header.header.checksum == h["checksum"].get<std::uint32_t>());
            CHECK(header.header.headerBytes == h["headerBytes"].get<std::size_t>());
            CHECK(header.header.isLastSlice() == h["isLastSlice"].get<bool>());
            if (frames.hasBaseline)
            {
                CHECK(h["baselineTick"] == frames.baseline.tick);
                CHECK(tick - header.header.baselineAge == frames.baseline.tick);
            }
            if (frames.hasReference)
            {
                CHECK(h["referenceTick"] == frames.reference.tick);
            }
            // The slices of a tick partition the id space in order.
            CHECK(header.header.firstId == nextId);
            nextId = header.header.endId;

            REQUIRE(decoder.decode(payload, tick, frames.hasBaseline ? &frames.baseline : nullptr,
                                   frames.hasReference ? &frames.reference : nullptr) == CodecError::None);
            const std::vector<QuantizedBody> expected = bodiesOf(slice["bodies"]);
            REQUIRE(std::vector<QuantizedBody>(decoder.bodies().begin(), decoder.bodies().end()) == expected);
            CHECK(quantizedStateChecksum(expected) == header.header.checksum);

            decoder.keptCoding(kept);
            std::size_t keptIndex = 0;
            for (const json& row : slice["bodies"])
            {
                if (row["coding"] == "created")
                {
                    CHECK((keptIndex == kept.size() || kept[keptIndex].id != row["id"].get<std::uint32_t>()));
                    continue;
                }
                REQUIRE(row["coding"] == "kept");
                REQUIRE(keptIndex < kept.size());
                const SnapshotDecoder::KeptCoding& coding = kept[keptIndex++];
                CHECK(coding.id == row["id"].get<std::uint32_t>());
                CHECK(coding.motionClass == row["class"].get<int>());
                CHECK(coding.changed == row["changed"].get<bool>());
                changedPerClass[coding.motionClass] += coding.changed ? 1 : 0;
            }
            CHECK(keptIndex == kept.size());

            std::vector<std::uint32_t> removed;
            for (const QuantizedBody& old : frames.baselineBodies)
            {
                if (old.id >= header.header.firstId && old.id < header.header.endId &&
                    std::none_of(expected.begin(), expected.end(),
                                 [&](const QuantizedBody& body)
                                 { return body.id == old.id && body.generation == old.generation; }))
                {
                    removed.push_back(old.id);
                }
            }
            CHECK(removed == slice["removedIds"].get<std::vector<std::uint32_t>>());
        }
        CHECK(nextId == (1ull << 32));
    }
    for (int cls = 0; cls < 7; ++cls)
    {
        INFO("motion class " << cls);
        CHECK(changedPerClass[cls] > 0);
    }
}

TEST_CASE("Malformed snapshot payloads are refused with their recorded error")
{
    const json file = loadVectors("snapshots.json");
    std::map<std::string, const json*> byName;
    for (const json& vector : file["vectors"])
    {
        byName[vector["name"].get<std::string>()] = &vector;
    }
    REQUIRE(file["malformed"].size() >= 10);
    for (const json& bad : file["malformed"])
    {
        INFO("malformed vector " << bad["name"].get<std::string>());
        REQUIRE(byName.count(bad["framesOf"].get<std::string>()) == 1);
        const Frames frames(*byName[bad["framesOf"].get<std::string>()]);
        SnapshotDecoder decoder(testing::codecConfigFromJson(bad["config"]));
        const CodecError error =
            decoder.decode(fromHex(bad["payload"]), bad["tick"].get<std::uint64_t>(),
                           bad["useBaseline"].get<bool>() ? &frames.baseline : nullptr,
                           bad["useReference"].get<bool>() ? &frames.reference : nullptr);
        CHECK(std::string(codecErrorName(error)) == bad["error"].get<std::string>());
        CHECK(decoder.bodies().empty());
    }
}

TEST_CASE("Packet vectors decode to their recorded fields")
{
    const json file = loadVectors("packets.json");
    std::vector<std::string> types;
    for (const json& vector : file["plain"])
    {
        INFO("packet vector " << vector["name"].get<std::string>());
        const AlignedDatagram datagram(fromHex(vector["datagram"]));
        const DecodeResult result = decodePacket(datagram.bytes());
        REQUIRE(result.ok());
        CHECK(json::parse(testing::packetJson(*result.packet).dump()) == vector["packet"]);
        types.push_back(vector["packet"]["header"]["type"]);
    }
    // Every message type has a vector.
    for (int type = 1; type <= static_cast<int>(wire::PacketType::MAX); ++type)
    {
        const std::string name = wire::EnumNamePacketType(static_cast<wire::PacketType>(type));
        INFO("message type " << name);
        CHECK(std::find(types.begin(), types.end(), name) != types.end());
    }
}

TEST_CASE("Malformed datagrams are dropped with their recorded reason")
{
    const json file = loadVectors("packets.json");
    REQUIRE(file["malformed"].size() >= 10);
    for (const json& bad : file["malformed"])
    {
        INFO("malformed datagram " << bad["name"].get<std::string>());
        const AlignedDatagram datagram(fromHex(bad["datagram"]));
        const DecodeResult result = decodePacket(datagram.bytes());
        REQUIRE_FALSE(result.ok());
        CHECK(std::string(dropReasonName(result.reason)) == bad["dropReason"].get<std::string>());
        CHECK(result.connectRequestOfOtherVersion == bad.contains("connectRequestOfVersion"));
    }
}

TEST_CASE("Sealed vectors open with the published test keys to their plain datagrams")
{
    const json file = loadVectors("packets.json");
    const json& sealed = file["sealed"];
    const auto key = [](const json& hex)
    {
        const std::vector<std::uint8_t> bytes = fromHex(hex);
        SessionKey out{};
        REQUIRE(bytes.size() == out.size());
        std::copy(bytes.begin(), bytes.end(), out.begin());
        return out;
    };
    const std::vector<std::uint8_t> salt = fromHex(sealed["salt"]);
    REQUIRE(salt.size() == kSessionSaltBytes);
    const std::span<const std::uint8_t, kSessionSaltBytes> saltSpan(salt.data(), kSessionSaltBytes);
    const SessionKeys server = deriveSessionKeys(key(sealed["tokenClientToServerKey"]),
                                                 key(sealed["tokenServerToClientKey"]), saltSpan, true);
    const SessionKeys client = deriveSessionKeys(key(sealed["tokenClientToServerKey"]),
                                                 key(sealed["tokenServerToClientKey"]), saltSpan, false);
    CHECK(server.receive == key(sealed["sessionClientToServerKey"]));
    CHECK(server.send == key(sealed["sessionServerToClientKey"]));
    CHECK(client.send == server.receive);
    CHECK(client.receive == server.send);

    std::map<std::string, std::vector<std::uint8_t>> plain;
    for (const json& vector : file["plain"])
    {
        plain[vector["name"].get<std::string>()] = fromHex(vector["datagram"]);
    }
    SealedChannel atServer(server);
    SealedChannel atClient(client);
    for (const json& vector : sealed["datagrams"])
    {
        INFO("sealed vector " << vector["name"].get<std::string>());
        const std::vector<std::uint8_t> bytes = fromHex(vector["datagram"]);
        REQUIRE(isSealed(bytes));
        std::uint64_t sequence = 0;
        for (int i = 0; i < 8; ++i)
        {
            sequence |= static_cast<std::uint64_t>(bytes[4 + i]) << (8 * i);
        }
        CHECK(sequence == vector["sequence"].get<std::uint64_t>());
        std::span<const std::uint8_t> opened;
        SealedChannel& receiver = vector["direction"] == "client-to-server" ? atServer : atClient;
        REQUIRE(receiver.open(bytes, opened) == OpenError::None);
        const std::vector<std::uint8_t>& expected = plain.at(vector["plain"].get<std::string>());
        CHECK(std::vector<std::uint8_t>(opened.begin(), opened.end()) == expected);
        CHECK(decodePacket(opened).ok());
    }
    for (const json& bad : sealed["malformed"])
    {
        INFO("malformed sealed vector " << bad["name"].get<std::string>());
        REQUIRE(bad["direction"] == "client-to-server");
        SealedChannel receiver(server);
        const std::vector<std::uint8_t> bytes = fromHex(bad["datagram"]);
        std::span<const std::uint8_t> opened;
        if (bad["openedBefore"].get<bool>())
        {
            REQUIRE(receiver.open(bytes, opened) == OpenError::None);
        }
        CHECK(std::string(testing::openErrorName(receiver.open(bytes, opened))) ==
              bad["openError"].get<std::string>());
    }
}

TEST_CASE("Checksum vectors match quantizedStateChecksum")
{
    const json file = loadVectors("checksums.json");
    REQUIRE(!file["vectors"].empty());
    for (const json& vector : file["vectors"])
    {
        CHECK(quantizedStateChecksum(bodiesOf(vector["bodies"])) == vector["checksum"].get<std::uint32_t>());
    }
}

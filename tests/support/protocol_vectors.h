// The protocol's test vectors (protocol/vectors/): built from seeded scenes by the reference encoder and
// PacketWriter, each with its decoded meaning. polytope-vectors writes them; tests/protocol/test_vectors.cpp
// decodes the committed files and checks that this code still builds exactly them.
#pragma once

#include "polytope/protocol/packet.h"
#include "polytope/protocol/seal.h"
#include "polytope/protocol/snapshot_codec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace polytope::testing
{

/// One file of protocol/vectors/: its name and its whole text.
struct VectorFile
{
    std::string name;
    std::string text;
};

/// Every vector file, deterministically (the same bytes on every run and platform). Throws
/// std::runtime_error when the reference code no longer produces what a vector claims (e.g. a malformed
/// input that is accepted, or a coding class no scene reaches).
std::vector<VectorFile> buildProtocolVectors();

/// Lower-case hex of bytes, and back (throws std::runtime_error on bad hex).
std::string toHex(std::span<const std::uint8_t> bytes);
std::vector<std::uint8_t> fromHex(const std::string& hex);

/// A body as the vectors write it: id, generation, position codes, largest, k (signed components), atRest.
nlohmann::ordered_json bodyJson(const protocol::QuantizedBody& body);
protocol::QuantizedBody bodyFromJson(const nlohmann::json& value);

/// The config object of a snapshot vector, both ways.
nlohmann::ordered_json codecConfigJson(const protocol::SnapshotCodecConfig& config);
protocol::SnapshotCodecConfig codecConfigFromJson(const nlohmann::json& value);

/// Stable snake_case name of a sealed datagram's OpenError, as packets.json writes it.
const char* openErrorName(protocol::OpenError error);

/// Every field of a verified packet (header and message) as the vectors write it.
nlohmann::ordered_json packetJson(const protocol::wire::Packet& packet);

} // namespace polytope::testing

#include "polytope/client/inspect_json.h"

#include "polytope/client/json_output.h"

#include <flatbuffers/idl.h>
#include <flatbuffers/reflection.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace polytope::client
{
namespace
{

template <std::size_t N> nlohmann::ordered_json floats(const std::array<float, N>& values)
{
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const float v : values)
    {
        out.push_back(shortestFloat(v));
    }
    return out;
}

} // namespace

nlohmann::ordered_json snapshotBodyJson(const SnapshotBody& body, const std::array<double, 3>* velocity)
{
    nlohmann::ordered_json out;
    out["id"] = body.id;
    out["generation"] = body.generation;
    out["shape"] = protocol::shapeKindName(body.shape);
    out["at_rest"] = body.atRest;
    out["position"] = floats(body.position);
    out["orientation"] = floats(body.orientation);
    if (velocity != nullptr)
    {
        out["velocity"] = {roundedSignificant((*velocity)[0], 6), roundedSignificant((*velocity)[1], 6),
                           roundedSignificant((*velocity)[2], 6)};
    }
    return out;
}

nlohmann::ordered_json snapshotJson(const ReceivedSnapshot& snapshot,
                                    const std::function<bool(const SnapshotBody&)>& accept)
{
    nlohmann::ordered_json out;
    out["tick"] = snapshot.tick;
    out["time"] = roundedDecimals(snapshot.serverTime, 6);
    nlohmann::ordered_json bodies = nlohmann::ordered_json::array();
    for (const SnapshotBody& body : snapshot.bodies)
    {
        if (!accept || accept(body))
        {
            bodies.push_back(snapshotBodyJson(body));
        }
    }
    out["bodies"] = std::move(bodies);
    return out;
}

nlohmann::ordered_json followedBodyJson(const ReceivedSnapshot& snapshot, const SnapshotBody* body,
                                        const std::array<double, 3>& velocity)
{
    nlohmann::ordered_json out;
    out["tick"] = snapshot.tick;
    out["time"] = roundedDecimals(snapshot.serverTime, 6);
    out["body"] = body != nullptr ? snapshotBodyJson(*body, &velocity) : nlohmann::ordered_json(nullptr);
    return out;
}

nlohmann::ordered_json recordingSummaryJson(const std::string& file, const RecordingHeader& header,
                                            const RecordingSummary& summary, bool indexRebuilt)
{
    nlohmann::ordered_json out;
    out["file"] = file;
    out["scene"] = header.scene;
    out["server"] = header.server;
    out["tick_rate_hz"] = header.tickRateHz;
    out["snapshot_rate_hz"] = header.snapshotRateHz;
    out["frames"] = summary.frames;
    out["first_tick"] = summary.firstTick;
    out["last_tick"] = summary.lastTick;
    out["duration_seconds"] = roundedDecimals(summary.durationSeconds, 6);
    out["snapshots_per_second"] = roundedDecimals(summary.snapshotsPerSecond, 3);
    out["mean_bodies"] = roundedDecimals(summary.meanBodies, 3);
    out["max_bodies"] = summary.maxBodies;
    out["snapshot_bytes"] = summary.snapshotBytes;
    out["file_bytes"] = summary.fileBytes;
    out["gaps"] = summary.gaps;
    out["missing_snapshots"] = summary.missingSnapshots;
    out["largest_gap_seconds"] = roundedDecimals(summary.largestGapSeconds, 6);
    out["corrupt_frames"] = summary.corruptFrames;
    out["index_rebuilt"] = indexRebuilt;
    // Hashes as 16 hex digits, as polytope-inspect geometry prints them (a u64 does not fit a JSON double).
    nlohmann::ordered_json geometry = nlohmann::ordered_json::array();
    for (const RecordingSummary::Geometry& g : summary.geometry)
    {
        char hash[24];
        std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(g.hash));
        nlohmann::ordered_json item;
        item["hash"] = hash;
        item["kind"] = protocol::shapeKindName(g.kind);
        item["bytes"] = g.bytes;
        item["bodies"] = g.bodies;
        item["stored"] = g.stored;
        geometry.push_back(std::move(item));
    }
    out["geometry"] = std::move(geometry);
    return out;
}

struct GameStateDecoder::Schema
{
    static flatbuffers::IDLOptions options()
    {
        flatbuffers::IDLOptions o;
        o.strict_json = true; // quoted names: what GenerateText writes is JSON
        o.indent_step = -1;   // one line
        return o;
    }
    flatbuffers::Parser parser{options()};
    std::vector<std::uint8_t> binary; ///< the schema as reflection data (.bfbs), for the Verifier
};

GameStateDecoder::GameStateDecoder() = default;
GameStateDecoder::~GameStateDecoder() = default;

bool GameStateDecoder::setSchema(const std::string& schemaText, std::string& error)
{
    auto schema = std::make_unique<Schema>();
    if (!schema->parser.Parse(schemaText.c_str()))
    {
        error = "the schema does not parse: " + schema->parser.error_;
        return false;
    }
    if (schema->parser.root_struct_def_ == nullptr)
    {
        error = "the schema names no root_type";
        return false;
    }
    schema->parser.Serialize();
    schema->binary.assign(schema->parser.builder_.GetBufferPointer(),
                          schema->parser.builder_.GetBufferPointer() + schema->parser.builder_.GetSize());
    m_schema = std::move(schema);
    return true;
}

nlohmann::ordered_json GameStateDecoder::decode(std::span<const std::uint8_t> bytes) const
{
    const auto raw = [&](const std::string& why)
    {
        static constexpr char kHex[] = "0123456789abcdef";
        std::string hex;
        hex.reserve(bytes.size() * 2);
        for (const std::uint8_t b : bytes)
        {
            hex.push_back(kHex[b >> 4]);
            hex.push_back(kHex[b & 15]);
        }
        nlohmann::ordered_json out = {{"bytes", bytes.size()}, {"hex", hex}};
        if (!why.empty())
        {
            out["error"] = why;
        }
        return out;
    };
    if (m_schema)
    {
        // The bytes are untrusted: verified against the schema before the text generator reads them. The
        // Verifier wants aligned data.
        std::vector<std::uint64_t> aligned((bytes.size() + 7) / 8);
        std::memcpy(aligned.data(), bytes.data(), bytes.size());
        const auto* data = reinterpret_cast<const std::uint8_t*>(aligned.data());
        const reflection::Schema& reflected = *reflection::GetSchema(m_schema->binary.data());
        std::string text;
        if (bytes.size() < 8 || reflected.root_table() == nullptr ||
            !flatbuffers::Verify(reflected, *reflected.root_table(), data, bytes.size(), 32, 10000))
        {
            return raw("the bytes do not verify as the schema's root table");
        }
        if (!flatbuffers::GenerateText(m_schema->parser, data, &text))
        {
            return raw("the bytes could not be printed with the schema");
        }
        try
        {
            return nlohmann::ordered_json::parse(text);
        }
        catch (const std::exception&)
        {
            return raw("the schema's text output is not JSON");
        }
    }
    try
    {
        if (!bytes.empty())
        {
            return nlohmann::ordered_json::parse(bytes.begin(), bytes.end());
        }
    }
    catch (const std::exception&)
    {
    }
    return raw({});
}

nlohmann::ordered_json gameStatesJson(std::uint64_t tick, const GameState& room, const GameState& player,
                                      const GameStateDecoder& decoder)
{
    const auto one = [&](const GameState& state) -> nlohmann::ordered_json
    {
        if (state.version == 0)
        {
            return nullptr;
        }
        return {{"version", state.version}, {"value", decoder.decode(state.data)}};
    };
    return {{"tick", tick}, {"room", one(room)}, {"client", one(player)}};
}

} // namespace polytope::client

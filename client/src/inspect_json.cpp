#include "polytope/client/inspect_json.h"

#include "polytope/client/json_output.h"

#include <cstdio>

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

} // namespace polytope::client

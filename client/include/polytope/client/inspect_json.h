// Polytope client library: the JSON records polytope-inspect prints (docs/INSPECT.md), one object per line.
// Here rather than in the tool so that tests can read them back; every string in them, the server's scene
// name included, is escaped by nlohmann-json.
#pragma once

#include "polytope/client/client.h"
#include "polytope/client/recording.h"

#include <nlohmann/json.hpp>

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace polytope::client
{

/// One body: id, generation, shape (its name), at_rest, position [x, y, z] (metres), orientation
/// [x, y, z, w], and velocity [x, y, z] (metres per second) when `velocity` is given.
nlohmann::ordered_json snapshotBodyJson(const SnapshotBody& body,
                                        const std::array<double, 3>* velocity = nullptr);

/// One snapshot: tick, time (server seconds), bodies (those `accept` takes; every one when it is empty).
nlohmann::ordered_json snapshotJson(const ReceivedSnapshot& snapshot,
                                    const std::function<bool(const SnapshotBody&)>& accept = {});

/// One followed body at one snapshot (--body): tick, time, body with its velocity, or null when `body` is
/// null (not in this snapshot).
nlohmann::ordered_json followedBodyJson(const ReceivedSnapshot& snapshot, const SnapshotBody* body,
                                        const std::array<double, 3>& velocity);

/// The summary of a recording (`stats FILE --json`): the file, the header's scene and server, rates, counts
/// and gaps, and whether the index was rebuilt.
nlohmann::ordered_json recordingSummaryJson(const std::string& file, const RecordingHeader& header,
                                            const RecordingSummary& summary, bool indexRebuilt);

/// Turns game state bytes (Client::roomState(), playerState()) into JSON text for a person: with a
/// FlatBuffers schema (the game's .fbs text), the bytes are verified and printed as its root table; without
/// one, bytes that are JSON text are taken as they are. Anything else (and a schema that does not parse, or
/// bytes that do not verify against it) comes back as {"bytes": N, "hex": "..."} with "error" saying why when
/// a schema was given.
class GameStateDecoder
{
  public:
    /// No schema: JSON text or hex.
    GameStateDecoder();
    ~GameStateDecoder();
    /// With the schema's text; false (and error) when it does not parse or names no root type.
    bool setSchema(const std::string& schemaText, std::string& error);
    nlohmann::ordered_json decode(std::span<const std::uint8_t> bytes) const;

  private:
    struct Schema;
    std::unique_ptr<Schema> m_schema;
};

/// The `state` record: tick, the room state and the client's own state (each version and decoded value, or
/// null when none arrived).
nlohmann::ordered_json gameStatesJson(std::uint64_t tick, const GameState& room, const GameState& player,
                                      const GameStateDecoder& decoder);

} // namespace polytope::client

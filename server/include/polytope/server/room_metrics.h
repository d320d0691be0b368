// polytope-server: the counters one room keeps.
#pragma once

#include "polytope/protocol/packet.h"
#include "polytope/server/tick_histogram.h"

#include <cstdint>

namespace polytope::server
{

/// One room's counters, for logs, tests, benchmarks and /metrics (metrics_text.h). The room's tick is not
/// one of them: Room::tick() is the authoritative counter.
struct RoomMetrics
{
    std::uint64_t overruns = 0;    ///< updates that hit maxCatchUpTicks and dropped simulation time
    std::uint64_t datagramsIn = 0; ///< accepted datagrams
    std::uint64_t bytesIn = 0;     ///< of every received datagram, accepted or not
    std::uint64_t datagramsOut = 0;
    std::uint64_t bytesOut = 0;
    std::uint64_t snapshotsSent = 0;    ///< snapshots (all their slices) sent, summed over clients
    std::uint64_t snapshotsSkipped = 0; ///< identical to the client's baseline and not due as heartbeat
    std::uint64_t fullSnapshots = 0;    ///< sent without a baseline
    /// Client datagrams asking for a full snapshot (header flag FullSnapshotRequest: a slice failed the
    /// client's checksum), every one counted.
    std::uint64_t fullSnapshotRequests = 0;
    /// Requests ignored because a full snapshot went to that client less than fullSnapshotResendSeconds ago
    /// (the rate limit: the client asks again if it still needs one).
    std::uint64_t fullSnapshotRequestsRefused = 0;
    std::uint64_t fullSnapshotsOnRequest = 0; ///< full snapshots sent in answer to a request
    std::uint64_t snapshotDatagrams = 0;
    std::uint64_t snapshotEncodeErrors = 0; ///< the encoder refused (a bug: logged)
    std::uint64_t catalogueDatagrams = 0;
    std::uint64_t catalogueEntriesSent = 0; ///< including resends
    std::uint64_t catalogueEntriesResent = 0;
    std::uint64_t geometryDatagrams = 0; ///< GeometrySlice datagrams, resends included
    std::uint64_t geometryBytes = 0;     ///< their datagram bytes
    std::uint64_t geometrySlicesResent = 0;
    std::uint64_t geometriesDelivered = 0; ///< geometries every slice of which a client acknowledged
    std::uint64_t clientsAccepted = 0;
    std::uint64_t clientsDenied = 0;
    std::uint64_t clientsTimedOut = 0;
    std::uint64_t clientsDisconnected = 0;
    std::uint64_t inputsReceived = 0;    ///< inputs in accepted ClientInput datagrams, duplicates included
    std::uint64_t inputsDuplicate = 0;   ///< already received (resends), ignored
    std::uint64_t inputsLate = 0;        ///< arrived after their tick ran: applied at the next tick
    std::uint64_t inputsRefused = 0;     ///< too far ahead, or the room's input queue was full
    std::uint64_t inputsApplied = 0;     ///< applied to the World
    std::uint64_t inputsFailed = 0;      ///< the World refused (stale body id, static body)
    std::uint64_t inputsNotOwned = 0;    ///< for a body the client does not own (or Spawn/Remove not allowed)
    std::uint64_t inputsRateLimited = 0; ///< over the client's input rate
    std::uint64_t bodiesSpawned = 0;     ///< player bodies created (joins and Spawn inputs)
    std::uint64_t bodiesRemoved = 0;     ///< owned bodies removed (Remove inputs, leaving clients)
    std::uint64_t clientsKicked = 0;
    // Game logic (room_logic.h)
    std::uint64_t logicErrors = 0;           ///< hooks that threw (script errors, budget stops included)
    std::uint64_t logicReloads = 0;          ///< admin reloads carried out
    std::uint64_t scriptBudgetStops = 0;     ///< the running logic's LogicStats::budgetStops (scripts)
    std::uint64_t scriptMemoryRefusals = 0;  ///< the running logic's LogicStats::memoryRefusals (scripts)
    std::uint64_t logicLogLinesDropped = 0;  ///< RoomContext::log lines over its rate limit
    std::uint64_t joinsRefusedByLogic = 0;   ///< onJoinAttempt refusals (and joins of a stopped room)
    std::uint64_t gameMessagesReceived = 0;  ///< in accepted ClientInput datagrams, duplicates included
    std::uint64_t gameMessagesDuplicate = 0; ///< already received (resends), ignored
    std::uint64_t gameMessagesRateLimited = 0;
    std::uint64_t gameMessagesRefused = 0; ///< too far ahead, queue full, or no logic to take them
    std::uint64_t gameMessagesLate = 0;    ///< arrived after their tick ran: delivered at the next tick
    std::uint64_t gameMessagesDelivered = 0;
    std::uint64_t gameStatesSent = 0; ///< GameState datagrams, resends included
    std::uint64_t gameStatesResent = 0;
    std::uint64_t rewoundQueries = 0;         ///< lag-compensated queries (RoomContext::castRayAsSeen, ...)
    std::uint64_t rewoundClamped = 0;         ///< of those, with a view outside the pose history (clamped)
    std::uint64_t rewoundInvalid = 0;         ///< of those, with a malformed view (nothing queried)
    std::uint64_t rewoundWithoutHistory = 0;  ///< of those, in a room keeping no history (live world queried)
    std::uint64_t adminCommands = 0;          ///< admin commands carried out (any outcome)
    std::uint64_t pausedTicks = 0;            ///< tick slots skipped while paused
    std::uint64_t bodiesDeferred = 0;         ///< changed bodies left out of a snapshot by a client's budget
    std::uint64_t budgetLimitedSnapshots = 0; ///< snapshots that left some changed body out
    std::uint64_t snapshotEncodes = 0;        ///< encoder runs (shared encodings count once)
    double encodeSeconds = 0.0;               ///< snapshot encoding time, when a profile clock is set
    TickTimeHistogram tickSeconds; ///< duration of each tick (step, catalogue, snapshots), when a profile
                                   ///< clock is set
    protocol::DropCounters drops;  ///< datagrams dropped, by reason
};

} // namespace polytope::server

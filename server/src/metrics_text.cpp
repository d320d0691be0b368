#include "polytope/server/metrics_text.h"

#include <fmt/format.h>

#include <cmath>

namespace polytope::server
{
namespace
{

struct CounterFamily
{
    const char* name;
    const char* help;
    std::uint64_t RoomMetrics::*field;
};

// Names follow Prometheus' conventions: a counter ends in _total, units in the name.
constexpr CounterFamily kCounters[] = {
    {"polytope_tick_overruns_total", "Updates that hit the catch-up cap and dropped simulation time.",
     &RoomMetrics::overruns},
    {"polytope_datagrams_received_total", "Received datagrams that were accepted.",
     &RoomMetrics::datagramsIn},
    {"polytope_received_bytes_total", "Bytes of every received datagram, accepted or dropped.",
     &RoomMetrics::bytesIn},
    {"polytope_datagrams_sent_total", "Datagrams sent.", &RoomMetrics::datagramsOut},
    {"polytope_sent_bytes_total", "Bytes of the datagrams sent.", &RoomMetrics::bytesOut},
    {"polytope_snapshots_sent_total", "Snapshots sent (all their slices), summed over clients.",
     &RoomMetrics::snapshotsSent},
    {"polytope_snapshots_skipped_total",
     "Snapshots not sent: identical to the client's baseline, no heartbeat due.",
     &RoomMetrics::snapshotsSkipped},
    {"polytope_snapshots_full_total", "Snapshots sent without a baseline.", &RoomMetrics::fullSnapshots},
    {"polytope_full_snapshot_requests_total",
     "Client datagrams asking for a full snapshot (a slice failed the client's checksum).",
     &RoomMetrics::fullSnapshotRequests},
    {"polytope_full_snapshot_requests_refused_total",
     "Full-snapshot requests ignored: a full snapshot went to that client within the pacing interval.",
     &RoomMetrics::fullSnapshotRequestsRefused},
    {"polytope_snapshots_full_on_request_total", "Full snapshots sent in answer to a client's request.",
     &RoomMetrics::fullSnapshotsOnRequest},
    {"polytope_snapshot_datagrams_total", "Datagrams carrying snapshot slices.",
     &RoomMetrics::snapshotDatagrams},
    {"polytope_snapshot_encode_errors_total", "Snapshots the encoder refused (a bug; logged).",
     &RoomMetrics::snapshotEncodeErrors},
    {"polytope_catalogue_datagrams_total", "Datagrams carrying shape catalogue entries.",
     &RoomMetrics::catalogueDatagrams},
    {"polytope_catalogue_entries_sent_total", "Catalogue entries sent, resends included.",
     &RoomMetrics::catalogueEntriesSent},
    {"polytope_catalogue_entries_resent_total", "Catalogue entries sent again after no acknowledgement.",
     &RoomMetrics::catalogueEntriesResent},
    {"polytope_geometry_datagrams_total", "Datagrams carrying geometry slices, resends included.",
     &RoomMetrics::geometryDatagrams},
    {"polytope_geometry_bytes_total", "Datagram bytes of geometry slices, resends included.",
     &RoomMetrics::geometryBytes},
    {"polytope_geometry_slices_resent_total", "Geometry slices sent again after no acknowledgement.",
     &RoomMetrics::geometrySlicesResent},
    {"polytope_geometries_delivered_total", "Geometries wholly acknowledged by a client.",
     &RoomMetrics::geometriesDelivered},
    {"polytope_clients_accepted_total", "Sessions opened.", &RoomMetrics::clientsAccepted},
    {"polytope_clients_denied_total", "Connection attempts refused (server full or not accepted).",
     &RoomMetrics::clientsDenied},
    {"polytope_clients_timed_out_total", "Sessions dropped after the client fell silent.",
     &RoomMetrics::clientsTimedOut},
    {"polytope_clients_disconnected_total", "Sessions the client closed itself.",
     &RoomMetrics::clientsDisconnected},
    {"polytope_inputs_received_total", "Inputs in accepted ClientInput datagrams, duplicates included.",
     &RoomMetrics::inputsReceived},
    {"polytope_inputs_duplicate_total", "Inputs received again (resends) and ignored.",
     &RoomMetrics::inputsDuplicate},
    {"polytope_inputs_late_total", "Inputs that arrived after their tick ran, applied at the next tick.",
     &RoomMetrics::inputsLate},
    {"polytope_inputs_refused_total", "Inputs too far ahead, or refused because the queue was full.",
     &RoomMetrics::inputsRefused},
    {"polytope_inputs_applied_total", "Inputs applied to the world.", &RoomMetrics::inputsApplied},
    {"polytope_inputs_not_owned_total", "Inputs for bodies the client does not own, or spawns not allowed.",
     &RoomMetrics::inputsNotOwned},
    {"polytope_inputs_rate_limited_total", "Inputs over the client's input rate, dropped.",
     &RoomMetrics::inputsRateLimited},
    {"polytope_bodies_spawned_total", "Player bodies created (joins and Spawn inputs).",
     &RoomMetrics::bodiesSpawned},
    {"polytope_bodies_removed_total", "Owned bodies removed (Remove inputs, leaving clients).",
     &RoomMetrics::bodiesRemoved},
    {"polytope_clients_kicked_total", "Sessions ended by a kick (admin or game logic).",
     &RoomMetrics::clientsKicked},
    {"polytope_admin_commands_total", "Admin commands carried out in this room.",
     &RoomMetrics::adminCommands},
    {"polytope_paused_ticks_total", "Tick slots skipped while paused.", &RoomMetrics::pausedTicks},
    {"polytope_snapshot_bodies_deferred_total", "Changed bodies left out of a snapshot by a client's budget.",
     &RoomMetrics::bodiesDeferred},
    {"polytope_snapshots_budget_limited_total", "Snapshots that left a changed body out for the budget.",
     &RoomMetrics::budgetLimitedSnapshots},
    {"polytope_snapshot_encodes_total", "Snapshot encoder runs (clients sharing baselines share one).",
     &RoomMetrics::snapshotEncodes},
    {"polytope_inputs_failed_total", "Inputs the world refused (stale body id, static body).",
     &RoomMetrics::inputsFailed},
    {"polytope_logic_errors_total", "Game logic hooks that failed (exceptions, script errors, budget stops).",
     &RoomMetrics::logicErrors},
    {"polytope_logic_reloads_total", "Game logic reloads carried out (admin reload).",
     &RoomMetrics::logicReloads},
    {"polytope_logic_log_lines_dropped_total", "Game logic log lines over the rate limit.",
     &RoomMetrics::logicLogLinesDropped},
    {"polytope_joins_refused_by_logic_total", "Joins the game logic refused (or a stopped room refused).",
     &RoomMetrics::joinsRefusedByLogic},
    {"polytope_game_messages_received_total", "Game messages in accepted datagrams, duplicates included.",
     &RoomMetrics::gameMessagesReceived},
    {"polytope_game_messages_duplicate_total", "Game messages received again (resends) and ignored.",
     &RoomMetrics::gameMessagesDuplicate},
    {"polytope_game_messages_rate_limited_total", "Game messages over the client's message rate, dropped.",
     &RoomMetrics::gameMessagesRateLimited},
    {"polytope_game_messages_refused_total", "Game messages too far ahead, over the queue, or without logic.",
     &RoomMetrics::gameMessagesRefused},
    {"polytope_game_messages_late_total",
     "Game messages that arrived after their tick, delivered at the next.", &RoomMetrics::gameMessagesLate},
    {"polytope_game_messages_delivered_total", "Game messages handed to the game logic.",
     &RoomMetrics::gameMessagesDelivered},
    {"polytope_game_states_sent_total", "GameState datagrams sent, resends included.",
     &RoomMetrics::gameStatesSent},
    {"polytope_game_states_resent_total", "GameState datagrams sent again, unacknowledged.",
     &RoomMetrics::gameStatesResent},
    {"polytope_rewound_queries_total", "Lag-compensated queries run by the game logic.",
     &RoomMetrics::rewoundQueries},
    {"polytope_rewound_clamped_total", "Lag-compensated queries whose view was outside the pose history.",
     &RoomMetrics::rewoundClamped},
    {"polytope_rewound_invalid_total", "Lag-compensated queries with a malformed view.",
     &RoomMetrics::rewoundInvalid},
    {"polytope_rewound_without_history_total", "Lag-compensated queries in a room keeping no poses.",
     &RoomMetrics::rewoundWithoutHistory},
};

void header(std::string& out, std::string_view name, std::string_view help, std::string_view type)
{
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

std::string roomLabel(std::string_view room)
{
    return "room=\"" + escapeLabelValue(room) + "\"";
}

/// A float as Prometheus reads it: shortest round-trip text, or +Inf/-Inf/NaN.
std::string number(double value)
{
    if (std::isnan(value))
    {
        return "NaN";
    }
    if (std::isinf(value))
    {
        return value > 0 ? "+Inf" : "-Inf";
    }
    return fmt::format("{}", value);
}

} // namespace

void TickTimeHistogram::observe(double seconds)
{
    if (!(seconds > 0.0))
    {
        seconds = 0.0;
    }
    std::size_t bucket = 0;
    while (bucket < kUpperBounds.size() && seconds > kUpperBounds[bucket])
    {
        ++bucket;
    }
    ++m_buckets[bucket];
    ++m_count;
    m_sum += seconds;
}

std::string escapeLabelValue(std::string_view value)
{
    std::string out;
    out.reserve(value.size());
    for (const char c : value)
    {
        if (c == '\\' || c == '"')
        {
            out += '\\';
            out += c;
        }
        else if (c == '\n')
        {
            out += "\\n";
        }
        else
        {
            out += c;
        }
    }
    return out;
}

std::string renderPrometheus(std::span<const RoomMetricsView> rooms)
{
    std::string out;
    out.reserve(8192);
    const auto each = [&](auto&& write)
    {
        for (const RoomMetricsView& room : rooms)
        {
            if (room.metrics)
            {
                write(room, roomLabel(room.room));
            }
        }
    };
    const auto line = [&](std::string_view name, const std::string& labels, auto value)
    { fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, value); };

    header(out, "polytope_clients", "Client sessions now.", "gauge");
    each([&](const RoomMetricsView& room, const std::string& label)
         { line("polytope_clients", label, room.clients); });
    header(out, "polytope_bodies", "Bodies in the world now.", "gauge");
    each([&](const RoomMetricsView& room, const std::string& label)
         { line("polytope_bodies", label, room.bodies); });

    header(out, "polytope_ticks_total", "Simulation ticks run.", "counter");
    each([&](const RoomMetricsView& room, const std::string& label)
         { line("polytope_ticks_total", label, room.ticks); });

    for (const CounterFamily& family : kCounters)
    {
        header(out, family.name, family.help, "counter");
        each([&](const RoomMetricsView& room, const std::string& label)
             { line(family.name, label, room.metrics->*family.field); });
    }

    header(out, "polytope_datagrams_dropped_total", "Received datagrams dropped, by reason.", "counter");
    each(
        [&](const RoomMetricsView& room, const std::string& label)
        {
            for (std::size_t i = 0; i < protocol::kDropReasonCount; ++i)
            {
                const auto reason = static_cast<protocol::DropReason>(i);
                line("polytope_datagrams_dropped_total",
                     label + ",reason=\"" + escapeLabelValue(protocol::dropReasonName(reason)) + "\"",
                     room.metrics->drops[reason]);
            }
        });

    header(out, "polytope_room_queue_drops_total",
           "Datagrams lost because the room's queue was full (the room's thread fell far behind).",
           "counter");
    each([&](const RoomMetricsView& room, const std::string& label)
         { line("polytope_room_queue_drops_total", label, room.queueDrops); });

    header(out, "polytope_send_errors_total", "Datagrams the socket refused to send.", "counter");
    each([&](const RoomMetricsView& room, const std::string& label)
         { line("polytope_send_errors_total", label, room.sendErrors); });

    header(out, "polytope_snapshot_encode_seconds_total", "Time spent encoding snapshots.", "counter");
    each([&](const RoomMetricsView& room, const std::string& label)
         { line("polytope_snapshot_encode_seconds_total", label, number(room.metrics->encodeSeconds)); });

    header(out, "polytope_tick_duration_seconds",
           "Wall time of each tick loop update that ran at least one tick (simulation, encoding, sending).",
           "histogram");
    each(
        [&](const RoomMetricsView& room, const std::string& label)
        {
            if (!room.tickTime)
            {
                return;
            }
            const TickTimeHistogram& histogram = *room.tickTime;
            std::uint64_t cumulative = 0;
            for (std::size_t i = 0; i < TickTimeHistogram::kBucketCount; ++i)
            {
                cumulative += histogram.bucketCounts()[i];
                const std::string le = i < TickTimeHistogram::kUpperBounds.size()
                                           ? number(TickTimeHistogram::kUpperBounds[i])
                                           : "+Inf";
                line("polytope_tick_duration_seconds_bucket", label + ",le=\"" + le + "\"", cumulative);
            }
            line("polytope_tick_duration_seconds_sum", label, number(histogram.sum()));
            line("polytope_tick_duration_seconds_count", label, histogram.count());
        });
    return out;
}

std::string renderServerPrometheus(const ServerMetrics& host, const SocketCounters* socket)
{
    std::string out;
    const auto counter = [&](std::string_view name, std::string_view help, const std::string& labels,
                             std::uint64_t value, bool withHeader)
    {
        if (withHeader)
        {
            header(out, name, help, "counter");
        }
        fmt::format_to(std::back_inserter(out), "{}{}{}{} {}\n", name, labels.empty() ? "" : "{", labels,
                       labels.empty() ? "" : "}", value);
    };
    header(out, "polytope_host_datagrams_dropped_total",
           "Datagrams dropped before reaching a room (no session, undecodable), by reason.", "counter");
    for (std::size_t i = 0; i < protocol::kDropReasonCount; ++i)
    {
        const auto reason = static_cast<protocol::DropReason>(i);
        counter("polytope_host_datagrams_dropped_total", "",
                "reason=\"" + escapeLabelValue(protocol::dropReasonName(reason)) + "\"", host.drops[reason],
                false);
    }
    counter("polytope_host_unknown_room_total", "Connection attempts naming no room.", "", host.unknownRoom,
            true);
    counter("polytope_connect_version_denied_total",
            "Connect requests of another protocol version, answered with a version denial.", "",
            host.versionDenied, true);
    counter("polytope_connect_challenges_sent_total", "Connect challenges sent.", "", host.challengesSent,
            true);
    counter("polytope_connect_cookies_forged_total",
            "Challenge responses with a forged, tampered or foreign cookie.", "", host.cookiesForged, true);
    counter("polytope_connect_cookies_expired_total", "Challenge responses with an expired cookie.", "",
            host.cookiesExpired, true);
    header(out, "polytope_sessions_opened_total", "Sessions opened, by kind (sealed: with a connect token).",
           "counter");
    counter("polytope_sessions_opened_total", "", "kind=\"sealed\"", host.sealedSessions, false);
    counter("polytope_sessions_opened_total", "", "kind=\"plain\"", host.plainSessions, false);
    counter("polytope_datagrams_sealed_total", "Datagrams encrypted and sent to sealed sessions.", "",
            host.datagramsSealed, true);
    counter("polytope_datagrams_opened_total", "Datagrams from sealed sessions that authenticated.", "",
            host.datagramsOpened, true);
    counter("polytope_datagrams_late_after_close_total",
            "Sealed datagrams from a session closed moments before (late copies of its goodbye): not forged.",
            "", host.lateAfterClose, true);
    counter("polytope_host_received_bytes_total",
            "Bytes of the datagrams the front door handled itself: dropped, handshakes, admin requests.", "",
            host.bytesIn, true);
    counter("polytope_host_datagrams_sent_total",
            "Datagrams the front door sent itself: challenges, denials (rooms send the rest).", "",
            host.datagramsOut, true);
    counter("polytope_host_sent_bytes_total",
            "Bytes of those, and the seal overhead of every sealed datagram.", "", host.bytesOut, true);
    if (socket != nullptr)
    {
        counter("polytope_socket_datagrams_received_total",
                "Datagrams read from the UDP socket, before any check.", "", socket->datagramsReceived, true);
        counter("polytope_socket_received_bytes_total", "Bytes read from the UDP socket, before any check.",
                "", socket->bytesReceived, true);
        counter("polytope_socket_datagrams_sent_total", "Datagrams the UDP socket sent.", "",
                socket->datagramsSent, true);
        counter("polytope_socket_sent_bytes_total", "Bytes the UDP socket sent.", "", socket->bytesSent,
                true);
        counter("polytope_socket_send_errors_total", "Datagrams the UDP socket refused to send.", "",
                socket->sendErrors, true);
        counter("polytope_socket_kernel_drops_total",
                "Datagrams the kernel dropped because the socket's receive buffer was full.", "",
                socket->kernelDrops, true);
        header(out, "polytope_socket_receive_buffer_bytes",
               "The receive buffer the kernel granted the socket.", "gauge");
        fmt::format_to(std::back_inserter(out), "polytope_socket_receive_buffer_bytes {}\n",
                       socket->receiveBufferBytes);
    }
    header(out, "polytope_admin_requests_total", "Admin requests, by outcome.", "counter");
    const std::pair<const char*, std::uint64_t> outcomes[] = {{"accepted", host.adminAccepted},
                                                              {"disabled", host.adminDisabled},
                                                              {"bad_mac", host.adminBadMac},
                                                              {"malformed", host.adminMalformed},
                                                              {"stale", host.adminStale},
                                                              {"replayed", host.adminReplayed},
                                                              {"unknown_room", host.adminUnknownRoom}};
    for (const auto& [name, value] : outcomes)
    {
        counter("polytope_admin_requests_total", "", std::string("outcome=\"") + name + "\"", value, false);
    }
    return out;
}

} // namespace polytope::server

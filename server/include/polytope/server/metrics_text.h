// polytope-server: metrics in Prometheus' text exposition format 0.0.4.
//
// renderPrometheus() turns the counters of one or more rooms into the page /metrics serves. Each metric
// family is written once (HELP and TYPE lines) with one series per room, labelled room="NAME", so that
// several rooms share one page. Not thread-safe: render on the thread that owns the servers, then hand the
// text to the HTTP thread (ops_http.h).
#pragma once

#include "polytope/server/server.h"
#include "polytope/server/tick_histogram.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace polytope::server
{

/// What one room contributes to the page. The pointers must stay valid during renderPrometheus().
struct RoomMetricsView
{
    std::string_view room;                       ///< the label value (escaped when written)
    const RoomMetrics* metrics = nullptr;        ///< required
    std::size_t clients = 0;                     ///< sessions now
    std::size_t bodies = 0;                      ///< bodies in the world now
    const TickTimeHistogram* tickTime = nullptr; ///< optional: the histogram is left out when null
    std::uint64_t sendErrors = 0;                ///< datagrams the socket refused to send
    std::uint64_t ticks = 0;                     ///< the room's tick (Room::tick())
    std::uint64_t queueDrops = 0;                ///< datagrams lost to the room's full queue (RoomStatus)
};

/// What crossed the socket, as the socket saw it (before any check).
struct SocketCounters
{
    std::uint64_t datagramsReceived = 0;
    std::uint64_t bytesReceived = 0;
    std::uint64_t datagramsSent = 0;
    std::uint64_t bytesSent = 0;
    std::uint64_t sendErrors = 0;         ///< datagrams the socket refused to send
    std::uint64_t kernelDrops = 0;        ///< datagrams the kernel dropped for a full receive buffer
    std::uint64_t receiveBufferBytes = 0; ///< the receive buffer the kernel granted
};

/// The Prometheus content type of renderPrometheus()'s text.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4";

/// Renders every metric family for every room (in the given order). Rooms with a null `metrics` are skipped.
std::string renderPrometheus(std::span<const RoomMetricsView> rooms);
/// The Server's own counters (datagrams dropped before any room, admin requests by outcome), appended to the
/// same page.
std::string renderServerPrometheus(const ServerMetrics& server, const SocketCounters* socket = nullptr);

/// Escapes a label value: backslash, double quote and line feed get a backslash.
std::string escapeLabelValue(std::string_view value);

} // namespace polytope::server

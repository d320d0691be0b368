// polytope-server: configuration, with defaults.
#pragma once

#include "polytope/physics/world.h"
#include "polytope/protocol/quantize.h"

#include <cstdint>
#include <functional>
#include <string>

namespace polytope::server
{

struct ServerConfig
{
    std::uint16_t port = 7777;        ///< UDP port; 0 picks an ephemeral port
    std::string bindAddress = "0.0.0.0";
    std::string scene = "default";    ///< built-in scene name
    /// When set, builds the world instead of the built-in scene (benchmarks, tests); `scene` is then only the
    /// name announced to clients. Returns false when the world refused a body.
    std::function<bool(physics::World&)> buildScene;
    int tickRateHz = 60;              ///< simulation steps per second, 1..1000
    int snapshotRateHz = 20;          ///< snapshots per second to each client, 1..tickRateHz
    double clientTimeoutSeconds = 10.0; ///< a client silent this long is dropped
    int maxClients = 64;              ///< sessions at once, 1..4096
    int maxCatchUpTicks = 4;          ///< ticks run in one update at most; the rest of the debt is dropped

    // Protocol version 2 (protocol/STANDARD.md); announced to each client in ConnectAccepted.
    protocol::PositionQuantization quantization; ///< world bounds and position resolution of snapshots
    std::uint32_t maxBaselineAgeTicks = 256; ///< oldest baseline a snapshot may name, 1..65536 ticks
    int idleHeartbeatTicks = 15;      ///< a snapshot identical to the client's baseline is sent only this often
    double cookieLifetimeSeconds = 5.0;   ///< a connect challenge cookie is honoured this long, 1..60 s
    double catalogueResendSeconds = 0.25; ///< an unacknowledged catalogue entry is resent after this
    int maxCatalogueDatagramsPerTick = 8; ///< catalogue datagrams per client per tick at most, >= 1
    int maxInputLeadTicks = 600;      ///< inputs for ticks further ahead than this are refused
    int maxQueuedInputs = 65536;      ///< inputs waiting for their tick, over all clients

    /// Empty when every field is in range, else a message naming the first bad field.
    std::string validate() const;
};

} // namespace polytope::server

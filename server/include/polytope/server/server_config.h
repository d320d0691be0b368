// polytope-server: configuration, with defaults.
#pragma once

#include <cstdint>
#include <string>

namespace polytope::server
{

struct ServerConfig
{
    std::uint16_t port = 7777;        ///< UDP port; 0 picks an ephemeral port
    std::string bindAddress = "0.0.0.0";
    std::string scene = "default";    ///< built-in scene name
    int tickRateHz = 60;              ///< simulation steps per second, 1..1000
    int snapshotRateHz = 20;          ///< snapshots per second to each client, 1..tickRateHz
    double clientTimeoutSeconds = 10.0; ///< a client silent this long is dropped
    int maxClients = 64;              ///< sessions at once, 1..4096
    int maxCatchUpTicks = 4;          ///< ticks run in one update at most; the rest of the debt is dropped

    /// Empty when every field is in range, else a message naming the first bad field.
    std::string validate() const;
};

} // namespace polytope::server

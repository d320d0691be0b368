#include "polytope/server/room_config.h"

#include "polytope/protocol/constants.h"

#include <cmath>

namespace polytope::server
{

std::string RoomConfig::validate() const
{
    if (tickRateHz < 1 || tickRateHz > 1000)
    {
        return "tick rate must be 1..1000 Hz, got " + std::to_string(tickRateHz);
    }
    if (snapshotRateHz < 1 || snapshotRateHz > tickRateHz)
    {
        return "snapshot rate must be 1..tick rate (" + std::to_string(tickRateHz) + ") Hz, got " +
               std::to_string(snapshotRateHz);
    }
    if (!(clientTimeoutSeconds > 0.0) || !std::isfinite(clientTimeoutSeconds))
    {
        return "client timeout must be a positive number of seconds";
    }
    if (maxClients < 1 || maxClients > 4096)
    {
        return "max clients must be 1..4096, got " + std::to_string(maxClients);
    }
    if (maxCatchUpTicks < 1)
    {
        return "max catch-up ticks must be at least 1";
    }
    if (!quantization.isValid())
    {
        return "snapshot quantization: bounds must be finite with max > min, resolution 1..65536 steps/m";
    }
    if (maxBaselineAgeTicks < 1 || maxBaselineAgeTicks > 65536)
    {
        return "max baseline age must be 1..65536 ticks, got " + std::to_string(maxBaselineAgeTicks);
    }
    if (idleHeartbeatTicks < 1)
    {
        return "idle heartbeat must be at least 1 tick";
    }
    if (!(catalogueResendSeconds > 0.0) || !std::isfinite(catalogueResendSeconds))
    {
        return "catalogue resend interval must be a positive number of seconds";
    }
    if (maxQueuedInputsPerClient < 1 || maxQueuedInputsPerClient > 65536)
    {
        return "max queued inputs per client must be 1..65536, got " +
               std::to_string(maxQueuedInputsPerClient);
    }
    if (maxCatalogueDatagramsPerTick < 1 || maxInputLeadTicks < 1)
    {
        return "catalogue datagrams per tick and input lead must be at least 1";
    }
    if (!(geometryShare > 0.0 && geometryShare <= 1.0) || geometryKbpsWithoutBudget < 1 ||
        maxGeometryDatagramsPerTick < 1 || !(geometryResendSeconds > 0.0) ||
        !std::isfinite(geometryResendSeconds))
    {
        return "geometry share must be in (0, 1], its rate, datagrams per tick and resend interval positive";
    }
    if (room.empty() || room.size() > protocol::kMaxRoomNameBytes)
    {
        return "room name must be 1..64 bytes";
    }
    if (maxBodiesPerClient < 0 || maxBodiesPerClient > 1024)
    {
        return "max bodies per client must be 0..1024, got " + std::to_string(maxBodiesPerClient);
    }
    if (!(maxInputsPerSecond > 0.0) || !std::isfinite(maxInputsPerSecond) || !(maxInputBurst >= 1.0) ||
        !std::isfinite(maxInputBurst))
    {
        return "input rate limit must be positive with a burst of at least 1";
    }
    if (!(maxGameMessagesPerSecond > 0.0) || !std::isfinite(maxGameMessagesPerSecond) ||
        !(maxGameMessageBurst >= 1.0) || !std::isfinite(maxGameMessageBurst))
    {
        return "game message rate limit must be positive with a burst of at least 1";
    }
    if (maxQueuedGameMessagesPerClient < 1 || maxQueuedGameMessagesPerClient > 1024)
    {
        return "queued game messages per client must be 1..1024, got " +
               std::to_string(maxQueuedGameMessagesPerClient);
    }
    if (!(gameStateResendSeconds >= 0.001 && gameStateResendSeconds <= 10.0))
    {
        return "game state resend interval must be 0.001..10 s";
    }
    if (!(lagCompensationSeconds >= 0.0 && lagCompensationSeconds <= 1.0))
    {
        return "lag compensation must be 0..1 s";
    }
    return {};
}

} // namespace polytope::server

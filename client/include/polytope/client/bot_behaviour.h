// Polytope client library: what a headless bot does with its connection (polytope-bots, the examples' tests).
//
// A bot is a Client plus a behaviour. Each frame a BotDriver takes the client's new snapshots into an
// InterpolationBuffer, samples it at the local time, and hands the behaviour what a player would see: the
// bodies shown, how they were obtained (SampleResult, for a game message's ViewTime), and the tick an input
// sent now should name (the newest snapshot's tick, plus the ticks stepped since it arrived, plus a lead of
// one round trip and two ticks, so that it reaches the server before its tick). The behaviour sends inputs
// and game messages through the Client; it has no physics of its own.
//
// Behaviours are registered by name (registerBotBehaviour); "push" (random impulses to the bot's first owned
// body, the load generator's original traffic) is always there. A game registers its own before making bots.
#pragma once

#include "polytope/client/client.h"
#include "polytope/client/interpolation.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::client
{

/// What a behaviour sent, summed over a bot's frames (the bots' report).
struct BotCounters
{
    std::uint64_t inputsQueued = 0;
    std::uint64_t inputsRefused = 0; ///< Client::sendInput returned 0 (not connected, invalid, queue full)
    std::uint64_t messagesQueued = 0;
    std::uint64_t messagesRefused = 0;
};

/// What a bot knows in one frame. Valid during BotBehaviour::update only.
struct BotFrame
{
    Client& client;
    double now = 0.0;                     ///< local seconds (the Client's clock)
    std::span<const SnapshotBody> bodies; ///< as shown at this frame (interpolated), sorted by id
    SampleResult sample;                  ///< how `bodies` were obtained (viewOf(sample) for messages)
    std::uint64_t newestTick = 0;         ///< the newest snapshot received; 0: none yet
    /// The tick to name in an input sent now (0 before any snapshot): the newest snapshot's tick, plus the
    /// ticks since it arrived, plus botInputLeadTicks.
    std::uint64_t inputTick = 0;
    double inputHz = 10.0; ///< the steady input rate asked for (polytope-bots --input-hz); 0: send none
    BotCounters& counters;

    /// Client::sendInput, counted. False when refused.
    bool sendInput(const protocol::InputCommand& input) const;
    /// Client::sendGameMessage for inputTick at what this frame shows, counted. False when refused.
    bool sendGameMessage(std::span<const std::uint8_t> data) const;
    /// The shown body of that id, or nullptr.
    const SnapshotBody* findBody(std::uint32_t id) const;
};

/// A bot's play. One instance per bot; update is called every frame the bot runs (about 60 to 120 Hz).
class BotBehaviour
{
  public:
    virtual ~BotBehaviour() = default;
    virtual void update(const BotFrame& frame) = 0;
};

/// Makes a behaviour for bot number `botIndex` (0-based), seeded with `seed` (deterministic given both).
using BotBehaviourFactory =
    std::function<std::unique_ptr<BotBehaviour>(std::size_t botIndex, std::uint32_t seed)>;

/// Registers a behaviour under `name`; a later registration of the same name replaces it. Thread-safe.
void registerBotBehaviour(std::string name, BotBehaviourFactory factory);
/// Makes the behaviour `name` names; nullptr when none is registered under it. Thread-safe.
std::unique_ptr<BotBehaviour> makeBotBehaviour(std::string_view name, std::size_t botIndex,
                                               std::uint32_t seed);
/// The registered names, sorted ("push" among them).
std::vector<std::string> botBehaviourNames();

/// Runs one bot's frames: snapshots into an interpolation buffer, a sample at `now`, the behaviour's update.
class BotDriver
{
  public:
    BotDriver(std::unique_ptr<BotBehaviour> behaviour, const InterpolationConfig& interpolation = {});

    /// One frame at local time `now`: call after the client took its datagrams and updated. `inputHz` is
    /// passed on as BotFrame::inputHz.
    void frame(Client& client, double now, double inputHz = 10.0);

    const BotCounters& counters() const { return m_counters; }
    std::uint64_t newestTick() const { return m_newestTick; }
    const InterpolationBuffer& interpolation() const { return m_buffer; }
    /// The bodies shown at the last frame.
    const std::vector<SnapshotBody>& shown() const { return m_shown; }

  private:
    std::unique_ptr<BotBehaviour> m_behaviour;
    InterpolationConfig m_interpolation;
    InterpolationBuffer m_buffer;
    bool m_configured = false; ///< the snapshot interval is set once the session says the rate
    ReceivedSnapshot m_snapshot;
    std::vector<SnapshotBody> m_shown;
    std::uint64_t m_newestTick = 0;
    double m_newestReceiveTime = 0.0; ///< local seconds
    BotCounters m_counters;
};

/// The input lead of BotFrame::inputTick: ticks in one smoothed round trip, rounded up, plus two.
std::uint64_t botInputLeadTicks(const Client& client);

} // namespace polytope::client

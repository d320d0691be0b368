// Polytope wire protocol: a seeded, deterministic network simulator for in-process tests and benchmarks.
//
// Like the simulator netcode and yojimbo inject under their transports: send() decides at once, from one
// seeded generator, whether a datagram is lost, when it arrives (latency plus uniform jitter, plus an
// extra delay for the share picked for reordering) and whether a duplicate follows it; receive() hands out
// what is due. Time is whatever the caller says it is (seconds, never the wall clock), so the same seed,
// conditions and calls give the same deliveries, byte for byte, on every run. Payloads are copied into
// 8-byte-aligned storage, as a real receive buffer is, because flatbuffers::Verifier checks alignment.
#pragma once

#include "polytope/protocol/address.h"

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace polytope::protocol
{

/// A span of time in which every datagram sent is lost (a link outage), [startSeconds, endSeconds).
struct BlackoutWindow
{
    double startSeconds = 0.0;
    double endSeconds = 0.0;
};

/// What the simulated link does to datagrams. Probabilities in [0, 1]; times in seconds, >= 0.
struct NetworkConditions
{
    double latencySeconds = 0.0;       ///< one-way delay of every datagram
    double jitterSeconds = 0.0;        ///< plus a uniform extra delay in [0, jitterSeconds)
    double lossProbability = 0.0;      ///< each datagram (and each duplicate) is lost with this probability
    double duplicateProbability = 0.0; ///< a delivered datagram is followed by a copy with its own delay
    double reorderProbability = 0.0;   ///< this share is held back by reorderDelaySeconds more
    double reorderDelaySeconds = 0.05;
    std::vector<BlackoutWindow> blackouts;
};

/// Counters since construction.
struct NetworkStats
{
    std::uint64_t sent = 0;       ///< send() calls
    std::uint64_t lost = 0;       ///< dropped by loss, blackout, size or a full queue
    std::uint64_t duplicated = 0; ///< extra copies scheduled
    std::uint64_t reordered = 0;  ///< datagrams held back for reordering
    std::uint64_t delivered = 0;  ///< copies handed out by receive()
};

/// One datagram handed out by receive(). `bytes` is 8-byte aligned and valid until the next receive() call.
struct SimulatedDatagram
{
    Address from;
    Address to;
    double sentSeconds = 0.0;
    double deliverySeconds = 0.0;
    std::span<const std::uint8_t> bytes;
};

class NetworkSimulator
{
  public:
    /// Largest datagram accepted (bytes); larger ones count as lost.
    static constexpr std::size_t kMaxDatagramBytes = 65536;

    /// `maxInFlight` bounds the queued datagrams; beyond it sends count as lost.
    NetworkSimulator(const NetworkConditions& conditions, std::uint64_t seed, std::size_t maxInFlight = 8192);

    /// Changes the conditions for datagrams sent from now on.
    void setConditions(const NetworkConditions& conditions) { m_conditions = conditions; }
    const NetworkConditions& conditions() const { return m_conditions; }

    /// Sends a datagram at time `nowSeconds` (non-decreasing across calls is not required).
    void send(const Address& from, const Address& to, std::span<const std::uint8_t> bytes, double nowSeconds);

    /// Every datagram for `to` due by `nowSeconds`, in delivery order (ties in send order). The views stay
    /// valid until the next receive() call.
    std::span<const SimulatedDatagram> receive(const Address& to, double nowSeconds);

    std::size_t inFlight() const { return m_inFlight.size(); }
    const NetworkStats& stats() const { return m_stats; }

  private:
    struct Entry
    {
        double deliverySeconds;
        std::uint64_t order; ///< send order, breaks delivery-time ties
        double sentSeconds;
        Address from;
        Address to;
        std::size_t size;
        std::vector<std::uint64_t> storage; ///< 8-byte-aligned copy of the bytes
    };

    double uniform(); ///< [0, 1), from the top 53 bits of the generator
    void schedule(const Address& from, const Address& to, std::span<const std::uint8_t> bytes,
                  double sentSeconds, double deliverySeconds);
    std::vector<std::uint64_t> takeStorage(std::size_t bytes);

    NetworkConditions m_conditions;
    std::mt19937_64 m_random;
    std::size_t m_maxInFlight;
    std::uint64_t m_nextOrder = 0;
    std::vector<Entry> m_inFlight;
    std::vector<Entry> m_delivered; ///< owns the bytes of the last receive()
    std::vector<SimulatedDatagram> m_views;
    std::vector<std::vector<std::uint64_t>> m_spareStorage;
    NetworkStats m_stats;
};

} // namespace polytope::protocol

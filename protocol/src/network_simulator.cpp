#include "polytope/protocol/network_simulator.h"

#include <algorithm>
#include <cstring>

namespace polytope::protocol
{

NetworkSimulator::NetworkSimulator(const NetworkConditions& conditions, std::uint64_t seed,
                                   std::size_t maxInFlight)
    : m_conditions(conditions), m_random(seed), m_maxInFlight(maxInFlight)
{
}

double NetworkSimulator::uniform()
{
    // Not std::uniform_real_distribution: its output differs between standard libraries.
    return static_cast<double>(m_random() >> 11) * (1.0 / 9007199254740992.0);
}

std::vector<std::uint64_t> NetworkSimulator::takeStorage(std::size_t bytes)
{
    std::vector<std::uint64_t> storage;
    if (!m_spareStorage.empty())
    {
        storage = std::move(m_spareStorage.back());
        m_spareStorage.pop_back();
    }
    storage.resize((bytes + 7) / 8 + 1);
    return storage;
}

void NetworkSimulator::schedule(const Address& from, const Address& to, std::span<const std::uint8_t> bytes,
                                double sentSeconds, double deliverySeconds)
{
    if (m_inFlight.size() >= m_maxInFlight)
    {
        ++m_stats.lost;
        return;
    }
    Entry entry{deliverySeconds,          m_nextOrder++, sentSeconds, from, to, bytes.size(),
                takeStorage(bytes.size())};
    if (!bytes.empty())
    {
        std::memcpy(entry.storage.data(), bytes.data(), bytes.size());
    }
    m_inFlight.push_back(std::move(entry));
}

void NetworkSimulator::send(const Address& from, const Address& to, std::span<const std::uint8_t> bytes,
                            double nowSeconds)
{
    ++m_stats.sent;
    // Draw every number for this datagram up front, in a fixed order, so that one datagram's fate never
    // shifts the random stream differently depending on another's.
    const double lossDraw = uniform();
    const double jitterDraw = uniform();
    const double reorderDraw = uniform();
    const double duplicateDraw = uniform();
    const double duplicateLossDraw = uniform();
    const double duplicateJitterDraw = uniform();

    bool blackedOut = false;
    for (const BlackoutWindow& window : m_conditions.blackouts)
    {
        blackedOut = blackedOut || (nowSeconds >= window.startSeconds && nowSeconds < window.endSeconds);
    }
    if (blackedOut || bytes.size() > kMaxDatagramBytes || lossDraw < m_conditions.lossProbability)
    {
        ++m_stats.lost;
        return;
    }
    double delay = m_conditions.latencySeconds + jitterDraw * m_conditions.jitterSeconds;
    if (reorderDraw < m_conditions.reorderProbability)
    {
        delay += m_conditions.reorderDelaySeconds;
        ++m_stats.reordered;
    }
    schedule(from, to, bytes, nowSeconds, nowSeconds + delay);
    if (duplicateDraw < m_conditions.duplicateProbability)
    {
        ++m_stats.duplicated;
        if (duplicateLossDraw < m_conditions.lossProbability)
        {
            ++m_stats.lost;
            return;
        }
        schedule(from, to, bytes, nowSeconds,
                 nowSeconds + m_conditions.latencySeconds + duplicateJitterDraw * m_conditions.jitterSeconds);
    }
}

std::span<const SimulatedDatagram> NetworkSimulator::receive(const Address& to, double nowSeconds)
{
    for (Entry& old : m_delivered)
    {
        m_spareStorage.push_back(std::move(old.storage));
    }
    m_delivered.clear();
    m_views.clear();

    // Move the due ones out, keeping the others in their order.
    auto keep = m_inFlight.begin();
    for (auto it = m_inFlight.begin(); it != m_inFlight.end(); ++it)
    {
        if (it->to == to && it->deliverySeconds <= nowSeconds)
        {
            m_delivered.push_back(std::move(*it));
        }
        else
        {
            if (keep != it)
            {
                *keep = std::move(*it);
            }
            ++keep;
        }
    }
    m_inFlight.erase(keep, m_inFlight.end());

    std::sort(m_delivered.begin(), m_delivered.end(),
              [](const Entry& a, const Entry& b)
              {
                  return a.deliverySeconds != b.deliverySeconds ? a.deliverySeconds < b.deliverySeconds
                                                                : a.order < b.order;
              });
    m_views.reserve(m_delivered.size());
    for (const Entry& entry : m_delivered)
    {
        m_views.push_back({entry.from,
                           entry.to,
                           entry.sentSeconds,
                           entry.deliverySeconds,
                           {reinterpret_cast<const std::uint8_t*>(entry.storage.data()), entry.size}});
    }
    m_stats.delivered += m_delivered.size();
    return m_views;
}

} // namespace polytope::protocol

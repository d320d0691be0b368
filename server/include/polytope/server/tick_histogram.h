// polytope-server: a histogram of tick durations, as Prometheus buckets it (metrics_text.h renders it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace polytope::server
{

/// Durations of the tick loop's updates, in fixed buckets (seconds) as a Prometheus histogram has them.
class TickTimeHistogram
{
  public:
    /// Upper bounds (inclusive, seconds) of the finite buckets; a last bucket, +Inf, takes the rest.
    static constexpr std::array<double, 11> kUpperBounds = {0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008,
                                                            0.01,    0.016,  0.025, 0.05,  0.1};
    static constexpr std::size_t kBucketCount = kUpperBounds.size() + 1;

    /// Counts one duration (seconds). A negative or NaN value is counted as 0.
    void observe(double seconds);
    std::uint64_t count() const { return m_count; }
    double sum() const { return m_sum; }
    /// Observations in each bucket alone (not cumulative); the last is the +Inf bucket.
    const std::array<std::uint64_t, kBucketCount>& bucketCounts() const { return m_buckets; }

  private:
    std::array<std::uint64_t, kBucketCount> m_buckets{};
    std::uint64_t m_count = 0;
    double m_sum = 0.0;
};

} // namespace polytope::server

// Tests: counting heap allocations. allocation_counter.cpp replaces the global operator new and delete for
// the whole test program that links it (a replacement is program-wide) with versions that count calls while
// counting is on. Switch it on only around the code under test, never around Catch2's own work.
#pragma once

#include <cstdint>

namespace polytope::test
{

/// Counts allocations from construction to stop() (or destruction), on every thread.
class AllocationCounter
{
  public:
    AllocationCounter();
    ~AllocationCounter();
    AllocationCounter(const AllocationCounter&) = delete;
    AllocationCounter& operator=(const AllocationCounter&) = delete;
    /// Stops counting; returns the allocations counted.
    std::int64_t stop();
    std::int64_t count() const;

  private:
    bool m_running = true;
};

/// Calls step(false) `warmSteps` times, then counts the allocations of `measuredSteps` calls of step(true):
/// a world's warm steps. `step` may tally what it sees in the measured steps only.
template <class Step> std::int64_t allocationsOfWarmSteps(int warmSteps, int measuredSteps, Step&& step)
{
    for (int i = 0; i < warmSteps; ++i)
    {
        step(false);
    }
    AllocationCounter counter;
    for (int i = 0; i < measuredSteps; ++i)
    {
        step(true);
    }
    return counter.stop();
}

} // namespace polytope::test

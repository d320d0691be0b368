// The task pool: every item exactly once, thread indices, back-to-back and sleeping round trips, nesting
// and concurrent callers, start-up and shut-down, and no allocation per call.
// Catch2's assertions are not thread-safe: callbacks only record (into atomics or per-item slots), and the
// test thread checks after parallelFor returns.
#include "polytope/physics/task_pool.h"
#include "support/allocation_counter.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

using namespace polytope::physics;

namespace
{

/// What a parallelFor did, recorded by its callbacks and checked afterwards.
struct Coverage
{
    explicit Coverage(std::uint32_t count) : visits(count), written(count, 0) {}

    std::vector<std::atomic<int>> visits;   ///< per item: how many chunks covered it
    std::vector<std::uint32_t> written;     ///< per item: a plain write, checked for visibility
    std::atomic<int> badChunks{0};          ///< chunks not aligned to the grain, or of the wrong length
    std::atomic<int> badThreadIndices{0};   ///< thread indices outside [0, threadCount)
    std::atomic<int> nonZeroThreadIndex{0}; ///< chunks run with a thread index other than 0
};

void runAndRecord(TaskPool& pool, std::uint32_t count, std::uint32_t grain, Coverage& coverage)
{
    const std::uint32_t effectiveGrain = grain == 0 ? 1 : grain;
    pool.parallelFor(count, grain,
                     [&](std::uint32_t begin, std::uint32_t end, int thread)
                     {
                         const std::uint32_t expectedEnd =
                             count - begin > effectiveGrain ? begin + effectiveGrain : count;
                         if (begin % effectiveGrain != 0 || end != expectedEnd)
                         {
                             coverage.badChunks.fetch_add(1);
                         }
                         if (thread < 0 || thread >= pool.threadCount())
                         {
                             coverage.badThreadIndices.fetch_add(1);
                         }
                         if (thread != 0)
                         {
                             coverage.nonZeroThreadIndex.fetch_add(1);
                         }
                         for (std::uint32_t i = begin; i < end && i < count; ++i)
                         {
                             coverage.visits[i].fetch_add(1, std::memory_order_relaxed);
                             coverage.written[i] = i * 3u + 1u;
                         }
                     });
}

/// Checks what every parallelFor must do: each of the `count` items covered once, its plain write seen, and
/// every chunk aligned and run with a valid thread index.
void checkCoverage(const Coverage& coverage, std::uint32_t count)
{
    int wrongVisits = 0;
    int wrongWrites = 0;
    for (std::uint32_t i = 0; i < count; ++i)
    {
        wrongVisits += coverage.visits[i].load() != 1 ? 1 : 0;
        wrongWrites += coverage.written[i] != i * 3u + 1u ? 1 : 0;
    }
    CHECK(wrongVisits == 0);
    CHECK(wrongWrites == 0);
    CHECK(coverage.badChunks.load() == 0);
    CHECK(coverage.badThreadIndices.load() == 0);
}

/// Waits until `flag` is set or two seconds have passed (a lost wake-up then fails a check, not hangs).
void waitUntilSet(const std::atomic<bool>& flag)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!flag.load() && std::chrono::steady_clock::now() < deadline)
    {
        std::this_thread::yield();
    }
}

} // namespace

TEST_CASE("parallelFor visits every item exactly once, in grain-sized chunks, for 1 to 4 threads", "[tasks]")
{
    struct Case
    {
        std::uint32_t count;
        std::uint32_t grain;
    };
    const Case cases[] = {{0, 1},       {0, 16},      {1, 1},     {1, 64},        {5, 10},
                          {7, 3},       {8, 4},       {9, 4},     {64, 1},        {100, 7},
                          {1000, 64},   {1023, 1},    {10000, 1}, {10000, 10000}, {3, 0},
                          {10001, 100}, {4096, 4095}, {50, 49},   {2, 1},         {65537, 256}};
    for (int threadCount = 1; threadCount <= 4; ++threadCount)
    {
        TaskPool pool(threadCount);
        REQUIRE(pool.threadCount() == threadCount);
        for (const Case& c : cases)
        {
            INFO("threads " << threadCount << ", count " << c.count << ", grain " << c.grain);
            Coverage coverage(c.count);
            runAndRecord(pool, c.count, c.grain, coverage);
            checkCoverage(coverage, c.count);
            if (threadCount == 1)
            {
                CHECK(coverage.nonZeroThreadIndex.load() == 0);
            }
        }
    }
}

TEST_CASE("parallelFor with a side task runs it once beside every chunk, for 1 to 4 threads", "[tasks]")
{
    const std::uint32_t counts[] = {0, 1, 2, 7, 64, 1000, 4097};
    for (int threadCount = 1; threadCount <= 4; ++threadCount)
    {
        TaskPool pool(threadCount);
        int sideByWorker = 0;
        for (int round = 0; round < 50; ++round)
        {
            for (const std::uint32_t count : counts)
            {
                INFO("threads " << threadCount << ", count " << count << ", round " << round);
                Coverage coverage(count);
                std::atomic<int> sideRuns{0};
                std::atomic<int> sideThread{-1};
                std::uint64_t sideWrite = 0; // a plain write, checked for visibility
                pool.parallelFor(
                    count, 3,
                    [&](std::uint32_t begin, std::uint32_t end, int thread)
                    {
                        if (thread < 0 || thread >= pool.threadCount())
                        {
                            coverage.badThreadIndices.fetch_add(1);
                        }
                        for (std::uint32_t i = begin; i < end; ++i)
                        {
                            coverage.visits[i].fetch_add(1, std::memory_order_relaxed);
                            coverage.written[i] = i * 3u + 1u;
                        }
                    },
                    [&](std::uint32_t begin, std::uint32_t end, int thread)
                    {
                        if (begin != 0 || end != 1)
                        {
                            coverage.badChunks.fetch_add(1);
                        }
                        sideRuns.fetch_add(1);
                        sideThread.store(thread);
                        sideWrite = 12345u + count;
                    });
                checkCoverage(coverage, count);
                CHECK(sideRuns.load() == 1);
                CHECK(sideWrite == 12345u + count);
                CHECK(sideThread.load() >= 0);
                CHECK(sideThread.load() < threadCount);
                sideByWorker += sideThread.load() > 0 ? 1 : 0;
            }
        }
        if (threadCount == 1)
        {
            CHECK(sideByWorker == 0);
        }
    }
}

TEST_CASE("a side task runs at the same time as the chunks, on another thread", "[tasks]")
{
    // The chunk and the side task each wait (at most two seconds) for the other to start: both see the
    // other only if they overlap, which a pool that ran the side task before or after the chunks would fail.
    TaskPool pool(2);
    for (int round = 0; round < 20; ++round)
    {
        std::atomic<bool> chunkStarted{false};
        std::atomic<bool> sideStarted{false};
        bool chunkSawSide = false;
        bool sideSawChunk = false;
        int chunkThread = -1;
        int sideThread = -1;
        pool.parallelFor(
            1, 1,
            [&](std::uint32_t, std::uint32_t, int thread)
            {
                chunkThread = thread;
                chunkStarted.store(true);
                waitUntilSet(sideStarted);
                chunkSawSide = sideStarted.load();
            },
            [&](std::uint32_t, std::uint32_t, int thread)
            {
                sideThread = thread;
                sideStarted.store(true);
                waitUntilSet(chunkStarted);
                sideSawChunk = chunkStarted.load();
            });
        CHECK(chunkSawSide);
        CHECK(sideSawChunk);
        CHECK(chunkThread != sideThread);
    }
}

TEST_CASE("the thread count is clamped to [1, kMaxTaskThreads]", "[tasks]")
{
    CHECK(TaskPool(0).threadCount() == 1);
    CHECK(TaskPool(-5).threadCount() == 1);
    TaskPool widest(kMaxTaskThreads + 100);
    REQUIRE(widest.threadCount() == kMaxTaskThreads);
    Coverage coverage(5000);
    runAndRecord(widest, 5000, 3, coverage);
    int wrongVisits = 0;
    for (std::atomic<int>& visits : coverage.visits)
    {
        wrongVisits += visits.load() != 1 ? 1 : 0;
    }
    CHECK(wrongVisits == 0);
    CHECK(coverage.badThreadIndices.load() == 0);
}

TEST_CASE("20,000 back-to-back small parallelFor calls on two threads all complete correctly", "[tasks]")
{
    TaskPool pool(2);
    // Per-thread partial sums, one cache line each, indexed by the thread the pool passes: two threads
    // given the same index would race here (ThreadSanitizer reports it) and lose updates.
    struct alignas(64) PartialSum
    {
        std::uint64_t value = 0;
    };
    std::array<PartialSum, 2> partial{};
    int wrongSums = 0;
    int forcedCallsWithoutWorker = 0;
    for (std::uint32_t call = 0; call < 20000; ++call)
    {
        const std::uint32_t count = 2 + call % 61;
        const std::uint32_t grain = 1 + call % 5;
        // Every tenth call the caller's chunks wait for the worker to run one, so the hand-over to the
        // worker and back is exercised, not only the caller taking every chunk before the worker looks.
        const bool forceWorker = call % 10 == 0 && (count - 1) / grain >= 1;
        std::atomic<bool> workerRan{false};
        partial = {};
        pool.parallelFor(count, grain,
                         [&](std::uint32_t begin, std::uint32_t end, int thread)
                         {
                             if (thread != 0)
                             {
                                 workerRan.store(true);
                             }
                             else if (forceWorker)
                             {
                                 waitUntilSet(workerRan);
                             }
                             for (std::uint32_t i = begin; i < end; ++i)
                             {
                                 partial[static_cast<std::size_t>(thread)].value += i + 1;
                             }
                         });
        const std::uint64_t expected = std::uint64_t{count} * (count + 1) / 2;
        wrongSums += partial[0].value + partial[1].value != expected ? 1 : 0;
        forcedCallsWithoutWorker += forceWorker && !workerRan.load() ? 1 : 0;
    }
    CHECK(wrongSums == 0);
    CHECK(forcedCallsWithoutWorker == 0);
}

TEST_CASE("jobs published while the workers sleep, and slow chunks the caller sleeps for, complete",
          "[tasks]")
{
    TaskPool pool(3);
    int wrongSums = 0;
    int roundsWithoutWorker = 0;
    for (int round = 0; round < 20; ++round)
    {
        // Long enough for the workers' spin to run out, so they are blocked when the job comes: the
        // caller's chunks then wait for a worker, which only a wake-up can bring.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::atomic<std::uint64_t> sum{0};
        std::atomic<bool> workerRan{false};
        pool.parallelFor(40, 1,
                         [&](std::uint32_t begin, std::uint32_t, int thread)
                         {
                             if (thread != 0)
                             {
                                 workerRan.store(true);
                                 // A slow chunk on a worker outlasts the caller's spin, so the caller blocks.
                                 if (begin % 8 == 0)
                                 {
                                     std::this_thread::sleep_for(std::chrono::microseconds(300));
                                 }
                             }
                             else
                             {
                                 waitUntilSet(workerRan);
                             }
                             sum.fetch_add(begin + 1);
                         });
        wrongSums += sum.load() != 40u * 41u / 2u ? 1 : 0;
        roundsWithoutWorker += workerRan.load() ? 0 : 1;
    }
    CHECK(wrongSums == 0);
    CHECK(roundsWithoutWorker == 0);
}

TEST_CASE("a parallelFor nested in a callback runs inline, serially, on the callback's thread", "[tasks]")
{
    TaskPool pool(3);
    constexpr std::uint32_t kOuter = 12;
    constexpr std::uint32_t kInner = 100;
    std::array<std::uint64_t, kOuter> innerSums{};
    std::atomic<int> wrongThread{0};
    std::atomic<int> outOfOrder{0};
    pool.parallelFor(kOuter, 1,
                     [&](std::uint32_t outerBegin, std::uint32_t, int outerThread)
                     {
                         std::uint32_t expectedBegin = 0;
                         pool.parallelFor(kInner, 7,
                                          [&](std::uint32_t begin, std::uint32_t end, int thread)
                                          {
                                              if (thread != outerThread)
                                              {
                                                  wrongThread.fetch_add(1);
                                              }
                                              if (begin != expectedBegin)
                                              {
                                                  outOfOrder.fetch_add(1);
                                              }
                                              expectedBegin = end;
                                              for (std::uint32_t i = begin; i < end; ++i)
                                              {
                                                  innerSums[outerBegin] += i;
                                              }
                                          });
                     });
    CHECK(wrongThread.load() == 0);
    CHECK(outOfOrder.load() == 0);
    for (std::uint64_t sum : innerSums)
    {
        CHECK(sum == kInner * (kInner - 1) / 2);
    }
    // The pool is usable afterwards.
    Coverage coverage(1000);
    runAndRecord(pool, 1000, 10, coverage);
    int wrongVisits = 0;
    for (std::atomic<int>& visits : coverage.visits)
    {
        wrongVisits += visits.load() != 1 ? 1 : 0;
    }
    CHECK(wrongVisits == 0);
}

TEST_CASE("parallelFor called from two threads at once still gives right results", "[tasks]")
{
    TaskPool pool(2);
    std::array<int, 2> wrongSums{};
    auto caller = [&](std::size_t slot)
    {
        for (std::uint32_t call = 0; call < 2000; ++call)
        {
            std::atomic<std::uint64_t> sum{0};
            pool.parallelFor(64, 4,
                             [&](std::uint32_t begin, std::uint32_t end, int)
                             {
                                 for (std::uint32_t i = begin; i < end; ++i)
                                 {
                                     sum.fetch_add(i, std::memory_order_relaxed);
                                 }
                             });
            wrongSums[slot] += sum.load() != 64u * 63u / 2u ? 1 : 0;
        }
    };
    std::thread other(caller, std::size_t{1});
    caller(0);
    other.join();
    CHECK(wrongSums[0] == 0);
    CHECK(wrongSums[1] == 0);
}

TEST_CASE("pools are started and stopped 200 times without hanging", "[tasks]")
{
    int wrongSums = 0;
    for (int round = 0; round < 200; ++round)
    {
        TaskPool pool(3);
        if (round % 2 == 0)
        {
            continue; // destroyed at once, possibly before its workers first run
        }
        std::atomic<std::uint32_t> sum{0};
        pool.parallelFor(30, 2,
                         [&](std::uint32_t begin, std::uint32_t end, int)
                         {
                             for (std::uint32_t i = begin; i < end; ++i)
                             {
                                 sum.fetch_add(i);
                             }
                         });
        wrongSums += sum.load() != 30u * 29u / 2u ? 1 : 0;
    }
    CHECK(wrongSums == 0);
}

TEST_CASE("parallelFor allocates nothing on a warm pool", "[tasks][allocation]")
{
    TaskPool pool(2);
    std::vector<float> values(4096, 1.0f);
    auto scale = [&](std::uint32_t begin, std::uint32_t end, int)
    {
        for (std::uint32_t i = begin; i < end; ++i)
        {
            values[i] *= 1.0001f;
        }
    };
    for (int call = 0; call < 10; ++call)
    {
        pool.parallelFor(4096, 64, scale);
    }
    polytope::test::AllocationCounter counter;
    for (int call = 0; call < 1000; ++call)
    {
        pool.parallelFor(4096, 64, scale); // an lvalue callable
        pool.parallelFor(100, 7, [&](std::uint32_t begin, std::uint32_t, int) { values[begin] += 0.0f; });
    }
    const std::int64_t allocations = counter.stop();
    REQUIRE(allocations == 0);
}

TEST_CASE("TaskFunction calls lambdas, function objects and function pointers held in variables", "[tasks]")
{
    struct Counter
    {
        std::uint32_t items = 0;
        void operator()(std::uint32_t begin, std::uint32_t end, int) { items += end - begin; }
    };
    Counter counter;
    TaskFunction byReference(counter);
    byReference(0, 10, 0);
    byReference(10, 15, 0);
    CHECK(counter.items == 15); // called the object itself, not a copy

    static std::uint32_t s_items = 0;
    void (*pointer)(std::uint32_t, std::uint32_t, int) = [](std::uint32_t begin, std::uint32_t end, int)
    { s_items += end - begin; };
    TaskFunction throughPointer(pointer);
    throughPointer(3, 9, 0);
    CHECK(s_items == 6);

    const auto constLambda = [](std::uint32_t, std::uint32_t, int) {};
    TaskFunction constant(constLambda);
    constant(0, 1, 0);
}

TEST_CASE("runStages runs every block of every stage once, each stage after the last, on 1 to 4 threads",
          "[tasks][stages]")
{
    // A chain of stages where each reads what the one before wrote: stage s sets value[i] from stage s - 1's
    // value of a neighbour, so any block started before its stage's predecessor finished reads a stale
    // value, and the sums come out wrong. Blocks of one stage write disjoint items.
    constexpr std::uint32_t kItems = 2000;
    constexpr std::uint32_t kPerBlock = 16;
    const std::vector<std::uint32_t> blocks = {125, 1, 0, 125, 3, 125, 60, 125, 1, 125};
    for (int threads = 1; threads <= 4; ++threads)
    {
        TaskPool pool(threads);
        for (int round = 0; round < 50; ++round)
        {
            std::vector<std::uint64_t> value(kItems, 1);
            std::vector<std::uint64_t> next(kItems, 0);
            std::vector<std::atomic<int>> visits(blocks.size() * 125);
            std::atomic<int> badThread{0};
            // A stage of n blocks writes items [0, n * kPerBlock) of one array from the other (the arrays
            // alternate), reading a neighbour item another block may have written in the stage before.
            pool.runStages(blocks,
                           [&](std::uint32_t stage, std::uint32_t block, int thread)
                           {
                               if (thread < 0 || thread >= pool.threadCount())
                               {
                                   badThread.fetch_add(1);
                               }
                               visits[stage * 125 + block].fetch_add(1, std::memory_order_relaxed);
                               std::vector<std::uint64_t>& from = stage % 2 == 0 ? value : next;
                               std::vector<std::uint64_t>& to = stage % 2 == 0 ? next : value;
                               for (std::uint32_t i = block * kPerBlock; i < (block + 1) * kPerBlock; ++i)
                               {
                                   to[i] = 2 * from[i] + from[(i + 1) % kItems] + stage;
                               }
                           });
            // The reference, serially.
            std::vector<std::uint64_t> refValue(kItems, 1);
            std::vector<std::uint64_t> refNext(kItems, 0);
            for (std::uint32_t stage = 0; stage < blocks.size(); ++stage)
            {
                std::vector<std::uint64_t>& from = stage % 2 == 0 ? refValue : refNext;
                std::vector<std::uint64_t>& to = stage % 2 == 0 ? refNext : refValue;
                for (std::uint32_t block = 0; block < blocks[stage]; ++block)
                {
                    for (std::uint32_t i = block * kPerBlock; i < (block + 1) * kPerBlock; ++i)
                    {
                        to[i] = 2 * from[i] + from[(i + 1) % kItems] + stage;
                    }
                }
            }
            int wrongVisits = 0;
            for (std::uint32_t stage = 0; stage < blocks.size(); ++stage)
            {
                for (std::uint32_t block = 0; block < 125; ++block)
                {
                    const int expected = block < blocks[stage] ? 1 : 0;
                    wrongVisits += visits[stage * 125 + block].load() != expected ? 1 : 0;
                }
            }
            INFO("threads " << threads << ", round " << round);
            CHECK(wrongVisits == 0);
            CHECK(badThread.load() == 0);
            CHECK(value == refValue);
            CHECK(next == refNext);
        }
    }
}

TEST_CASE("runStages nested in a parallelFor runs inline; empty lists and a warm pool allocate nothing",
          "[tasks][stages][allocation]")
{
    TaskPool pool(3);
    const std::vector<std::uint32_t> blocks = {4, 2, 5};
    std::array<std::uint32_t, 8> sums{};
    std::atomic<int> wrongThread{0};
    pool.parallelFor(8, 1,
                     [&](std::uint32_t outer, std::uint32_t, int outerThread)
                     {
                         pool.runStages(blocks,
                                        [&](std::uint32_t stage, std::uint32_t block, int thread)
                                        {
                                            wrongThread.fetch_add(thread != outerThread ? 1 : 0);
                                            sums[outer] += stage * 10 + block;
                                        });
                     });
    CHECK(wrongThread.load() == 0);
    for (std::uint32_t sum : sums)
    {
        CHECK(sum == (0 + 1 + 2 + 3) + (10 + 11) + (20 + 21 + 22 + 23 + 24));
    }
    pool.runStages({}, [&](std::uint32_t, std::uint32_t, int) { sums[0] = 0; });
    CHECK(sums[0] != 0);

    pool.reserveStages(64);
    std::vector<std::uint32_t> many(64, 3);
    std::atomic<int> runs{0};
    const auto count = [&](std::uint32_t, std::uint32_t, int)
    { runs.fetch_add(1, std::memory_order_relaxed); };
    pool.runStages(many, count);
    polytope::test::AllocationCounter counter;
    for (int call = 0; call < 200; ++call)
    {
        pool.runStages(many, count);
    }
    const std::int64_t allocations = counter.stop();
    CHECK(allocations == 0);
    CHECK(runs.load() == 201 * 64 * 3);
}

TEST_CASE("PerThread keeps each thread's value on cache lines of its own, and iterates them in order",
          "[tasks]")
{
    PerThread<std::vector<int>> lists;
    lists.resize(4);
    REQUIRE(lists.size() == 4);
    for (std::size_t t = 0; t + 1 < lists.size(); ++t)
    {
        const auto here = reinterpret_cast<std::uintptr_t>(&lists[t]);
        const auto next = reinterpret_cast<std::uintptr_t>(&lists[t + 1]);
        CHECK(here % kCacheLineBytes == 0);
        CHECK(next - here >= kCacheLineBytes);
    }
    for (std::size_t t = 0; t < lists.size(); ++t)
    {
        lists[t].push_back(static_cast<int>(t));
    }
    std::vector<int> seen;
    for (const std::vector<int>& list : std::as_const(lists))
    {
        seen.insert(seen.end(), list.begin(), list.end());
    }
    CHECK(seen == std::vector<int>{0, 1, 2, 3});
    for (std::vector<int>& list : lists)
    {
        list.clear();
    }
    CHECK(std::all_of(lists.begin(), lists.end(), [](const std::vector<int>& list) { return list.empty(); }));
}

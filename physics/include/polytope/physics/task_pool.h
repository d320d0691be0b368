// Polytope physics: a fork-join task pool that runs a step's phases on several threads.
//
// Rationale (the role of Box2D v3's task callbacks and Jolt's JobSystemThreadPool, much smaller; written
// afresh). A step is a chain of short data-parallel phases: a solver runs one per graph colour per substep,
// hundreds per 16 ms step, each tens of microseconds to a few milliseconds long. So the pool offers one
// operation, parallelFor, and is built for its round-trip latency:
// - Persistent workers. Threads are started once, in the constructor, never per call.
// - Dynamic chunks. [0, count) is cut into chunks of `grain` items that the threads (the caller included)
//   claim one at a time from an atomic counter, so a thread that is slow or descheduled (the machine may
//   be shared) holds back one chunk, not a fixed share of the work.
// - Spin, then sleep. An idle worker spins briefly on the job generation (a bounded loop of pause
//   instructions), which covers the gaps between the phases of one step, then blocks in
//   std::atomic::wait, so that an idle pool, a server between ticks, burns no CPU. The caller, once the
//   chunks run out, waits for the last chunks the same way. The generation counter is what the workers
//   wait on: a job published while a worker is going to sleep changes it, so no wake-up is lost.
// - No allocation per call. The callback is passed as a TaskFunction, a non-owning reference (an object
//   pointer and a function pointer), not std::function; the pool's state is fixed at construction.
// - One chunk or one thread: everything runs inline on the caller with no synchronisation at all.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <thread>
#include <type_traits>
#include <vector>

namespace polytope::physics
{

/// Bytes that data written by different threads is kept apart by (a cache line on this project's x86
/// machines): the pool's counters, PerThread's slots.
inline constexpr std::size_t kCacheLineBytes = 64;

/// Most threads a TaskPool runs, the caller included. TaskPool's constructor clamps to it.
inline constexpr int kMaxTaskThreads = 64;

/// The first of `count` items (blocks of a stage, chunks of a job) in thread `thread`'s run when `threads`
/// threads share them (thread == threads: the end). The pool hands out runs this way; work laid out for
/// it (the constraint graph's colour runs, the bundles' hand-out order) uses the same split.
constexpr std::uint32_t taskRunStart(std::uint32_t count, int thread, int threads)
{
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(thread) /
                                      static_cast<std::uint64_t>(threads));
}

/// One T per pool thread (indexed by the thread index callbacks get), each on cache lines of its own. A
/// thread that grows its own vector writes the vector's end on every push; with the vectors' headers side by
/// side in one array, those writes would bounce a cache line between the cores on every push (false
/// sharing: seen to make the broadphase's parallel pair search half again slower per thread).
template <typename T> class PerThread
{
    struct alignas(kCacheLineBytes) Slot
    {
        T value{};
    };

  public:
    template <typename SlotPointer, typename Value> class Iterator
    {
      public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = std::remove_const_t<Value>;
        using difference_type = std::ptrdiff_t;
        using pointer = Value*;
        using reference = Value&;

        Iterator() = default;
        explicit Iterator(SlotPointer slot) : m_slot(slot) {}
        Value& operator*() const { return m_slot->value; }
        Value* operator->() const { return &m_slot->value; }
        Iterator& operator++()
        {
            ++m_slot;
            return *this;
        }
        Iterator operator++(int)
        {
            Iterator before = *this;
            ++m_slot;
            return before;
        }
        bool operator==(const Iterator& other) const { return m_slot == other.m_slot; }

      private:
        SlotPointer m_slot = nullptr;
    };

    void resize(std::size_t threads) { m_slots.resize(threads); }
    std::size_t size() const { return m_slots.size(); }
    T& operator[](std::size_t thread) { return m_slots[thread].value; }
    const T& operator[](std::size_t thread) const { return m_slots[thread].value; }
    Iterator<Slot*, T> begin() { return Iterator<Slot*, T>(m_slots.data()); }
    Iterator<Slot*, T> end() { return Iterator<Slot*, T>(m_slots.data() + m_slots.size()); }
    Iterator<const Slot*, const T> begin() const { return Iterator<const Slot*, const T>(m_slots.data()); }
    Iterator<const Slot*, const T> end() const
    {
        return Iterator<const Slot*, const T>(m_slots.data() + m_slots.size());
    }

  private:
    std::vector<Slot> m_slots;
};

/// A non-owning reference to a callable `void(std::uint32_t begin, std::uint32_t end, int thread)`: a
/// lambda, a function object, or a pointer to such a function held in a variable. It does not copy the
/// callable: the callable, temporary or not, must outlive every use of the reference, which
/// TaskPool::parallelFor guarantees for a lambda written in its argument list. Two words, trivially
/// copyable, never allocates.
class TaskFunction
{
  public:
    template <typename Callable>
    requires(!std::same_as<std::remove_cvref_t<Callable>, TaskFunction> &&
             !std::is_function_v<std::remove_reference_t<Callable>> &&
             std::is_invocable_r_v<void, Callable&, std::uint32_t, std::uint32_t, int>)
        TaskFunction(Callable&& callable)
    noexcept // NOLINT: implicit, so that a lambda can be passed directly
        : m_object(const_cast<void*>(static_cast<const void*>(std::addressof(callable)))),
          m_invoke(&invokeAs<std::remove_reference_t<Callable>>)
    {
    }

    /// Calls the callable on items [begin, end) as thread `thread`. A callable that throws terminates the
    /// program: the pool's callbacks must not throw.
    void operator()(std::uint32_t begin, std::uint32_t end, int thread) const noexcept
    {
        m_invoke(m_object, begin, end, thread);
    }

  private:
    using Invoke = void (*)(void* object, std::uint32_t begin, std::uint32_t end, int thread) noexcept;

    template <typename Callable>
    static void invokeAs(void* object, std::uint32_t begin, std::uint32_t end, int thread) noexcept
    {
        (*static_cast<Callable*>(object))(begin, end, thread);
    }

    void* m_object;
    Invoke m_invoke;
};

/// A fixed set of threads that run parallelFor jobs. Non-copyable and non-movable (the workers point at
/// it). Not re-entrant: see parallelFor.
class TaskPool
{
  public:
    /// Starts threadCount - 1 worker threads; the thread that calls parallelFor is the other one.
    /// threadCount is clamped to [1, kMaxTaskThreads]. If the system refuses to start a thread, the pool
    /// keeps the ones it has: threadCount() tells how many there are.
    explicit TaskPool(int threadCount);
    /// Stops and joins the workers. No parallelFor may be running.
    ~TaskPool();
    TaskPool(const TaskPool&) = delete;
    TaskPool& operator=(const TaskPool&) = delete;

    /// Threads that run a parallelFor, the caller included: 1 .. kMaxTaskThreads.
    int threadCount() const { return m_threadCount; }

    /// Calls fn(begin, end, thread) over [0, count) cut into chunks of `grain` items (the last chunk may
    /// be shorter; a grain of 0 counts as 1), each chunk exactly once, on any of the pool's threads.
    /// `thread` is the index of the thread running the chunk: 0 for the caller, 1 .. threadCount() - 1
    /// for the workers, so callers can keep per-thread scratch indexed by it. Returns when every chunk
    /// has finished, with all of their writes visible to the caller. Chunks may run in any order and at
    /// the same time as each other. count == 0 returns at once; with one thread, or a single chunk,
    /// everything runs inline on the caller. Allocates nothing.
    ///
    /// fn must not throw: a callback that throws terminates the program.
    ///
    /// Not re-entrant. A parallelFor started while this pool is running one, from inside a callback
    /// (nesting) or from another thread at the same time, is a programming error. It is made safe by
    /// running the whole call inline, serially, on the thread that made it, with that thread's index (a
    /// worker's own index, 0 for any thread that is not one of this pool's workers): the results are
    /// right, but per-thread scratch of index 0 is then shared by two threads if the second call came
    /// from outside the pool.
    void parallelFor(std::uint32_t count, std::uint32_t grain, TaskFunction fn) noexcept;
    /// parallelFor over fn, and beside it one serial task: side(0, 1, thread), exactly once, on one of the
    /// threads, which then joins the chunks (Box2D v3 rebuilds its broadphase tree beside the narrowphase
    /// this way). A worker takes it as it joins, before any chunk; the caller takes it if no worker has by
    /// the time the chunks run out, so a late or sleeping worker delays nothing. fn and side must not touch
    /// the same data. Inline (fn's chunks, then side) where parallelFor would be.
    void parallelFor(std::uint32_t count, std::uint32_t grain, TaskFunction fn, TaskFunction side) noexcept;

    /// Runs stages 0 .. blocks.size() - 1 one after another, stage s as blocks[s] blocks that may run at the
    /// same time: fn(s, block, thread) for each block of each stage, exactly once. Every write of a stage is
    /// visible to the next. It is one job of the pool, not one per stage (after Box2D v3's solver stages):
    /// a stage's blocks are split into one run per thread, in order; a thread claims the blocks of its own
    /// run from the run's atomic counter, then those left in the others' runs from theirs, and, finding
    /// none left, waits, spinning, until the stage's last block is done, then goes on to the next stage.
    /// So a thread runs the same blocks in every stage unless another is late, and the data they touch
    /// stays in its core's cache (Box2D v3 likewise starts each worker at its own share of a stage). A stage
    /// boundary costs a few hundred nanoseconds rather than a parallelFor's round trip. No thread is waited
    /// for that has not claimed a block, so a worker that joins late (or never) only leaves more blocks to
    /// the others. With one thread, when nested, or for an empty list, runs inline on the caller. Allocates
    /// only when a longer list than any before comes (the per-stage counters).
    ///
    /// fn must not throw.
    void runStages(std::span<const std::uint32_t> blocks, TaskFunction fn) noexcept;
    /// Makes room for runStages lists of up to `stages` stages, so that they allocate nothing.
    void reserveStages(std::size_t stages);

  private:
    /// Runs runStages' stages as one of the joining threads.
    void runStageLoop(std::span<const std::uint32_t> blocks, const TaskFunction& fn, int thread) noexcept;
    std::uint32_t runStart(std::uint32_t count, int thread) const
    {
        return taskRunStart(count, thread, m_threadCount);
    }
    void workerLoop(int threadIndex, std::uint32_t firstGeneration) noexcept;
    /// Blocks (spins, then sleeps) until the job generation differs from `seen`; returns the new one.
    std::uint32_t waitForNextGeneration(std::uint32_t seen) noexcept;
    /// parallelFor with an optional side task (nullptr: none).
    void runJob(std::uint32_t count, std::uint32_t grain, const TaskFunction& fn,
                const TaskFunction* side) noexcept;
    /// Claims and runs chunks of the current job until none are left (and its side task: a worker first,
    /// the caller last).
    void runChunks(int threadIndex) noexcept;
    /// Runs the current job's side task if no thread has claimed it; returns whether this thread ran it.
    bool claimSide(int threadIndex) noexcept;
    /// The caller's wait for the job's units (chunks and side task) other threads are still running.
    void waitForChunks(std::uint32_t units) noexcept;

    // Each hot atomic on its own cache line: the workers spin on m_generation while the claim and the
    // completion counters are hammered.
    /// Bumped once per published job (and once to stop): what idle workers wait on.
    alignas(kCacheLineBytes) std::atomic<std::uint32_t> m_generation{0};
    /// Workers blocked (or about to block) in m_generation.wait: notify only when there are some.
    std::atomic<int> m_sleepingWorkers{0};
    std::atomic<bool> m_stopping{false};

    /// Chunks of the current job not yet claimed, per run: the chunks are split into one run per thread,
    /// in order, and a thread claims from its own run first, then from the others' (so a thread tends to
    /// run the same items job after job, and keeps their data in its core's cache). Signed: a claim that
    /// finds none left takes it below 0, which the next job's store overwrites.
    struct alignas(kCacheLineBytes) RunCounter
    {
        std::atomic<std::int64_t> left{0};
    };
    RunCounter m_chunksLeft[kMaxTaskThreads];

    /// Units of the current job finished (its chunks, and its side task if it has one); the job is done
    /// when it reaches m_jobUnits.
    alignas(kCacheLineBytes) std::atomic<std::uint32_t> m_chunksDone{0};
    /// The caller is blocked (or about to block) in m_chunksDone.wait.
    std::atomic<bool> m_callerSleeping{false};

    /// Set while a parallelFor uses the workers; detects nesting and concurrent calls.
    alignas(kCacheLineBytes) std::atomic<bool> m_busy{false};

    // The current job. Written by the caller before it publishes the job (m_chunksLeft, release) and read
    // by a thread only after it has claimed one of the job's chunks, so the job stays in place until that
    // chunk is counted done.
    const TaskFunction* m_function = nullptr;
    std::uint32_t m_count = 0;
    std::uint32_t m_grain = 1;
    std::uint32_t m_chunkCount = 0;
    std::uint32_t m_jobUnits = 0;         ///< m_chunkCount, plus one for a side task
    const TaskFunction* m_side = nullptr; ///< the current job's side task
    /// Claimed by exchange; false only while a published job's side task waits (true between jobs, and for
    /// a job without one). Its release store publishes m_side and m_jobUnits to the claimer.
    alignas(kCacheLineBytes) std::atomic<bool> m_sideTaken{true};

    /// runStages' counter of one stage, on its own cache line.
    struct alignas(kCacheLineBytes) StageCounters
    {
        std::atomic<std::uint32_t> done{0}; ///< blocks finished
    };
    std::unique_ptr<StageCounters[]> m_stages;
    /// runStages' claim counters: thread t's run of stage s at [t * m_stageCapacity + s], the next block
    /// to hand out (may pass the run's end). A thread's counters are contiguous: others touch them only to
    /// take what it left.
    std::unique_ptr<std::atomic<std::uint32_t>[]> m_runNext;
    std::size_t m_stageCapacity = 0;

    int m_threadCount = 1;
    std::vector<std::thread> m_workers;
};

} // namespace polytope::physics

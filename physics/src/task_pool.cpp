// The task pool's protocol (task_pool.h has the design). Three counters carry it:
// - m_chunksLeft: one counter per run of chunks (a thread's share: see task_pool.h). The caller stores each
//   run's chunk count (release) after writing the job; a thread claims a chunk of a run with fetch_sub
//   (acquire), so a successful claim sees the job, and each chunk is claimed once. A new job starts only
//   when every chunk of the last is done, so every run's counter is then at or below 0 and a claim racing
//   with the caller's stores either fails or takes a chunk of the new job.
//   A thread that was slow to wake may claim a chunk of a newer job than the one that woke it: that is
//   fine, because it reads the job only after the claim, and the job cannot change before that chunk is
//   counted done.
// - m_chunksDone: each thread adds the chunks it ran (release) when it runs out of claims; the caller
//   returns once it reads the chunk count (acquire), so the chunks' writes, and the threads' reads of
//   the job, happen before the caller's return and its next job.
// - m_generation: bumped once per job; idle workers wait for it to change.
// Sleeping without lost wake-ups: a thread about to block raises a flag (m_sleepingWorkers,
// m_callerSleeping) and only then re-reads the counter it waits on, inside std::atomic::wait; the other
// side changes the counter and only then reads the flag. All four are seq_cst, so at least one of the two
// sees the other's write: either the sleeper sees the new value and does not block, or the notifier sees
// the flag and notifies (and a notify after the change wakes a wait that read the old value).
#include "polytope/physics/task_pool.h"

#include <algorithm>
#include <system_error>

namespace polytope::physics
{

namespace
{

// How many pause instructions an idle thread spins through before it blocks: about 30 microseconds on
// this project's x86 machines (AMD Zen 5 at about 3 GHz). That covers the gap between a step's phases, so
// back-to-back parallelFor calls find the workers awake, while an idle pool stops using CPU at once. The
// spin is bounded because the threads may share their cores with other programs.
constexpr int kSpinIterations = 2000;

// Which pool, if any, the current thread is a worker of, and its index there; any other thread is 0.
thread_local const TaskPool* t_workerPool = nullptr;
thread_local int t_workerIndex = 0;

int threadIndexIn(const TaskPool* pool)
{
    return t_workerPool == pool ? t_workerIndex : 0;
}

// Tells the core this is a spin-wait: it saves power and leaves the pipeline (and an SMT sibling) to
// other work.
inline void cpuPause() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
}

// The whole job, in order, on the calling thread.
void runInline(std::uint32_t count, std::uint32_t grain, const TaskFunction& fn, int threadIndex) noexcept
{
    for (std::uint32_t begin = 0; begin < count;)
    {
        const std::uint32_t end = count - begin > grain ? begin + grain : count;
        fn(begin, end, threadIndex);
        begin = end;
    }
}

} // namespace

TaskPool::TaskPool(int threadCount) : m_threadCount(std::clamp(threadCount, 1, kMaxTaskThreads))
{
    m_workers.reserve(static_cast<std::size_t>(m_threadCount - 1));
    for (int index = 1; index < m_threadCount; ++index)
    {
        try
        {
            // Generation 0 is passed in rather than read by the worker: a job published before the
            // worker first runs must still look new to it.
            m_workers.emplace_back([this, index] { workerLoop(index, 0); });
        }
        catch (const std::system_error&)
        {
            m_threadCount = index; // the system refused a thread: run with those started
            break;
        }
    }
}

TaskPool::~TaskPool()
{
    m_stopping.store(true, std::memory_order_relaxed);
    m_generation.fetch_add(1, std::memory_order_seq_cst); // publishes m_stopping
    m_generation.notify_all();
    for (std::thread& worker : m_workers)
    {
        worker.join();
    }
}

void TaskPool::parallelFor(std::uint32_t count, std::uint32_t grain, TaskFunction fn) noexcept
{
    runJob(count, grain, fn, nullptr);
}

void TaskPool::parallelFor(std::uint32_t count, std::uint32_t grain, TaskFunction fn,
                           TaskFunction side) noexcept
{
    runJob(count, grain, fn, &side);
}

void TaskPool::runJob(std::uint32_t count, std::uint32_t grain, const TaskFunction& fn,
                      const TaskFunction* side) noexcept
{
    grain = std::max(grain, 1u);
    const std::uint32_t chunkCount = count == 0 ? 0 : (count - 1) / grain + 1;
    const bool runsInline = m_threadCount == 1 || chunkCount + (side != nullptr ? 1 : 0) <= 1;
    if (runsInline || m_busy.exchange(true, std::memory_order_acquire))
    {
        // One thread or one unit of work; or nested in a callback, or concurrent with another thread's
        // call: a programming error, made harmless by running serially here (task_pool.h).
        const int thread = threadIndexIn(this);
        runInline(count, grain, fn, thread);
        if (side != nullptr)
        {
            (*side)(0, 1, thread);
        }
        return;
    }

    m_function = &fn;
    m_count = count;
    m_grain = grain;
    m_chunkCount = chunkCount;
    const std::uint32_t units = chunkCount + (side != nullptr ? 1 : 0);
    m_jobUnits = units;
    m_chunksDone.store(0, std::memory_order_relaxed);
    if (side != nullptr)
    {
        m_side = side;
        m_sideTaken.store(false, std::memory_order_release);
    }
    for (int t = 0; t < m_threadCount; ++t)
    {
        m_chunksLeft[t].left.store(runStart(chunkCount, t + 1) - runStart(chunkCount, t),
                                   std::memory_order_release);
    }
    m_generation.fetch_add(1, std::memory_order_seq_cst);
    if (m_sleepingWorkers.load(std::memory_order_seq_cst) > 0)
    {
        m_generation.notify_all();
    }

    runChunks(0);
    waitForChunks(units);
    m_busy.store(false, std::memory_order_release);
}

void TaskPool::runStages(std::span<const std::uint32_t> blocks, TaskFunction fn) noexcept
{
    const int caller = threadIndexIn(this);
    if (m_threadCount == 1 || m_busy.load(std::memory_order_relaxed) || caller != 0)
    {
        // One thread, or nested in a job of this pool (see parallelFor): inline, in order.
        for (std::size_t s = 0; s < blocks.size(); ++s)
        {
            for (std::uint32_t b = 0; b < blocks[s]; ++b)
            {
                fn(static_cast<std::uint32_t>(s), b, caller);
            }
        }
        return;
    }
    reserveStages(blocks.size());
    for (std::size_t s = 0; s < blocks.size(); ++s)
    {
        // Published to the workers by parallelFor's release of the job below.
        m_stages[s].done.store(0, std::memory_order_relaxed);
        for (int t = 0; t < m_threadCount; ++t)
        {
            m_runNext[static_cast<std::size_t>(t) * m_stageCapacity + s].store(runStart(blocks[s], t),
                                                                               std::memory_order_relaxed);
        }
    }
    parallelFor(static_cast<std::uint32_t>(m_threadCount), 1,
                [&](std::uint32_t, std::uint32_t, int thread) { runStageLoop(blocks, fn, thread); });
}

void TaskPool::reserveStages(std::size_t stages)
{
    if (stages > m_stageCapacity)
    {
        m_stageCapacity = stages;
        m_stages = std::make_unique<StageCounters[]>(m_stageCapacity);
        m_runNext = std::make_unique<std::atomic<std::uint32_t>[]>(m_stageCapacity *
                                                                   static_cast<std::size_t>(m_threadCount));
    }
}

void TaskPool::runStageLoop(std::span<const std::uint32_t> blocks, const TaskFunction& fn,
                            int thread) noexcept
{
    for (std::size_t s = 0; s < blocks.size(); ++s)
    {
        StageCounters& stage = m_stages[s];
        const std::uint32_t count = blocks[s];
        std::uint32_t ran = 0;
        // This thread's run first, then what is left of the others' (a thread that came late, or never).
        for (int k = 0; k < m_threadCount; ++k)
        {
            const int owner = (thread + k) % m_threadCount;
            std::atomic<std::uint32_t>& next =
                m_runNext[static_cast<std::size_t>(owner) * m_stageCapacity + s];
            const std::uint32_t end = runStart(count, owner + 1);
            for (;;)
            {
                // Relaxed: what a block reads was made visible by the previous stage's done (acquire below).
                const std::uint32_t block = next.fetch_add(1, std::memory_order_relaxed);
                if (block >= end)
                {
                    break;
                }
                fn(static_cast<std::uint32_t>(s), block, thread);
                ++ran;
            }
        }
        if (ran > 0)
        {
            stage.done.fetch_add(ran, std::memory_order_acq_rel);
        }
        // Only threads that claimed blocks are waited for: they are running them.
        for (int spin = 0; stage.done.load(std::memory_order_acquire) < count; ++spin)
        {
            if (spin < kSpinIterations)
            {
                cpuPause();
            }
            else
            {
                std::this_thread::yield(); // the machine may be shared: let the one we wait for run
            }
        }
    }
}

void TaskPool::workerLoop(int threadIndex, std::uint32_t firstGeneration) noexcept
{
    t_workerPool = this;
    t_workerIndex = threadIndex;
    std::uint32_t seen = firstGeneration;
    for (;;)
    {
        seen = waitForNextGeneration(seen);
        if (m_stopping.load(std::memory_order_acquire))
        {
            return;
        }
        runChunks(threadIndex);
    }
}

std::uint32_t TaskPool::waitForNextGeneration(std::uint32_t seen) noexcept
{
    for (int spin = 0; spin < kSpinIterations; ++spin)
    {
        const std::uint32_t generation = m_generation.load(std::memory_order_acquire);
        if (generation != seen)
        {
            return generation;
        }
        cpuPause();
    }
    m_sleepingWorkers.fetch_add(1, std::memory_order_seq_cst);
    std::uint32_t generation = m_generation.load(std::memory_order_seq_cst);
    while (generation == seen)
    {
        m_generation.wait(seen, std::memory_order_seq_cst);
        generation = m_generation.load(std::memory_order_seq_cst);
    }
    m_sleepingWorkers.fetch_sub(1, std::memory_order_relaxed);
    return generation;
}

bool TaskPool::claimSide(int threadIndex) noexcept
{
    // The load first: between jobs, and in jobs without one, a claim would only bounce the cache line.
    if (m_sideTaken.load(std::memory_order_relaxed) || m_sideTaken.exchange(true, std::memory_order_acquire))
    {
        return false;
    }
    // Claimed: the job is stable until the side task is counted done.
    (*m_side)(0, 1, threadIndex);
    return true;
}

void TaskPool::runChunks(int threadIndex) noexcept
{
    std::uint32_t chunksRun = 0;
    std::uint32_t units = 0;
    // A worker takes the side task as it joins: the caller is already running chunks.
    if (threadIndex != 0 && claimSide(threadIndex))
    {
        units = m_jobUnits;
        ++chunksRun;
    }
    // This thread's run first, then what is left of the others'.
    for (int k = 0; k < m_threadCount; ++k)
    {
        const int owner = (threadIndex + k) % m_threadCount;
        for (;;)
        {
            const std::int64_t left = m_chunksLeft[owner].left.fetch_sub(1, std::memory_order_acquire);
            if (left <= 0)
            {
                break;
            }
            // Claimed: the job is stable until this chunk is counted done below.
            units = m_jobUnits;
            const std::uint32_t chunk = runStart(m_chunkCount, owner + 1) - static_cast<std::uint32_t>(left);
            const std::uint32_t begin = chunk * m_grain; // < m_count: no overflow
            const std::uint32_t end = m_count - begin > m_grain ? begin + m_grain : m_count;
            (*m_function)(begin, end, threadIndex);
            ++chunksRun;
        }
    }
    // The caller takes the side task last, if no worker came for it.
    if (threadIndex == 0 && claimSide(threadIndex))
    {
        units = m_jobUnits;
        ++chunksRun;
    }
    if (chunksRun == 0)
    {
        return;
    }
    // units was read before this add: after it, the caller may already be writing the next job.
    const std::uint32_t done = m_chunksDone.fetch_add(chunksRun, std::memory_order_seq_cst) + chunksRun;
    if (done == units && m_callerSleeping.load(std::memory_order_seq_cst))
    {
        m_chunksDone.notify_all();
    }
}

void TaskPool::waitForChunks(std::uint32_t units) noexcept
{
    for (int spin = 0; spin < kSpinIterations; ++spin)
    {
        if (m_chunksDone.load(std::memory_order_acquire) == units)
        {
            return;
        }
        cpuPause();
    }
    m_callerSleeping.store(true, std::memory_order_seq_cst);
    std::uint32_t done = m_chunksDone.load(std::memory_order_seq_cst);
    while (done != units)
    {
        m_chunksDone.wait(done, std::memory_order_seq_cst);
        done = m_chunksDone.load(std::memory_order_seq_cst);
    }
    m_callerSleeping.store(false, std::memory_order_relaxed);
}

} // namespace polytope::physics

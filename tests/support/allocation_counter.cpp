#include "support/allocation_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace
{
std::atomic<bool> g_countAllocations{false};
std::atomic<std::int64_t> g_allocations{0};

void* countedAllocation(std::size_t size) noexcept
{
    if (g_countAllocations.load(std::memory_order_relaxed))
    {
        g_allocations.fetch_add(1, std::memory_order_relaxed);
    }
    return std::malloc(size == 0 ? 1 : size);
}
} // namespace

namespace polytope::test
{
AllocationCounter::AllocationCounter()
{
    g_allocations = 0;
    g_countAllocations = true;
}
AllocationCounter::~AllocationCounter()
{
    stop();
}
std::int64_t AllocationCounter::stop()
{
    if (m_running)
    {
        g_countAllocations = false;
        m_running = false;
    }
    return g_allocations.load();
}
std::int64_t AllocationCounter::count() const
{
    return g_allocations.load();
}
} // namespace polytope::test

// Every non-aligned form, so that allocation and release always pair up (the sanitizer checks that).
void* operator new(std::size_t size)
{
    if (void* p = countedAllocation(size))
    {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new[](std::size_t size)
{
    if (void* p = countedAllocation(size))
    {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    return countedAllocation(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    return countedAllocation(size);
}
void operator delete(void* p) noexcept
{
    std::free(p);
}
void operator delete[](void* p) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept
{
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept
{
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept
{
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept
{
    std::free(p);
}

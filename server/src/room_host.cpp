#include "polytope/server/room_host.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <future>

namespace polytope::server
{

namespace
{
/// Datagrams queued for a room's thread at most. A room that stops taking its queue (a tick far longer than
/// its clients' resend intervals) loses the newest ones, counted, instead of growing without bound: about
/// 5 MB, several seconds of traffic from a full room.
constexpr std::size_t kMaxQueuedDatagrams = 4096;
/// A room that overruns says so at most this often (seconds), with the count since it last said so.
constexpr double kOverrunLogSeconds = 1.0;
} // namespace

RoomHost::RoomHost(Room& room) : m_room(room)
{
    publish();
}

RoomHost::~RoomHost()
{
    stop();
}

void RoomHost::start(std::function<double()> clock)
{
    if (m_thread.joinable())
    {
        return;
    }
    m_clock = std::move(clock);
    m_stopping = false;
    m_thread = std::thread([this] { run(); });
}

void RoomHost::stop()
{
    if (!m_thread.joinable())
    {
        return;
    }
    {
        const std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_one();
    m_thread.join();
}

void RoomHost::postDatagram(ClientSlot slot, const protocol::DecodeResult& decoded, std::size_t wireBytes,
                            double now)
{
    if (!m_thread.joinable())
    {
        m_room.receiveDatagram(slot, decoded, wireBytes, now);
        return;
    }
    {
        const std::lock_guard lock(m_mutex);
        if (m_queue.size() >= kMaxQueuedDatagrams)
        {
            m_queueDrops.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        Event& event = m_queue.emplace_back();
        event.task = nullptr;
        event.slot = slot;
        event.now = now;
        event.wireBytes = wireBytes;
        event.decoded = decoded.ok();
        event.reason = decoded.reason;
        event.size = std::min(decoded.bytes.size(), event.words.size() * 8);
        std::memcpy(event.words.data(), decoded.bytes.data(), event.size);
    }
    m_wake.notify_one();
}

void RoomHost::post(std::function<void(Room&)> task)
{
    if (!m_thread.joinable())
    {
        task(m_room);
        return;
    }
    {
        const std::lock_guard lock(m_mutex);
        m_queue.emplace_back().task = std::move(task); // tasks are never dropped: they are few
    }
    m_wake.notify_one();
}

void RoomHost::call(const std::function<void(Room&)>& task)
{
    if (!m_thread.joinable())
    {
        task(m_room);
        return;
    }
    std::promise<void> done;
    std::future<void> finished = done.get_future();
    post(
        [&task, &done](Room& room)
        {
            task(room);
            done.set_value();
        });
    finished.wait();
}

void RoomHost::update(double now)
{
    if (!m_thread.joinable())
    {
        runUpdate(now);
        publish();
    }
}

double RoomHost::nextUpdateTime() const
{
    return m_room.nextUpdateTime();
}

RoomStatus RoomHost::status() const
{
    const std::lock_guard lock(m_statusMutex);
    return m_status;
}

void RoomHost::publish()
{
    RoomStatus status;
    status.metrics = m_room.metrics();
    status.tick = m_room.tick();
    status.clients = m_room.clientCount();
    status.bodies = m_room.world().bodyCount();
    status.queueDrops = m_queueDrops.load(std::memory_order_relaxed);
    const std::lock_guard lock(m_statusMutex);
    m_status = status;
}

void RoomHost::runUpdate(double now)
{
    const std::uint64_t overrunsBefore = m_room.metrics().overruns;
    m_room.update(now);
    m_room.timeOutSilent(now);
    const std::uint64_t overruns = m_room.metrics().overruns;
    if (overruns != overrunsBefore && now - m_lastOverrunLog >= kOverrunLogSeconds)
    {
        spdlog::warn("room '{}' cannot keep up: {} update(s) dropped simulation time in the last {:.1f} s "
                     "(tick {}, {} bodies)",
                     m_room.config().room, overruns - m_overrunsLogged,
                     m_lastOverrunLog < 0.0 ? now : now - m_lastOverrunLog, m_room.tick(),
                     m_room.world().bodyCount());
        m_lastOverrunLog = now;
        m_overrunsLogged = overruns;
    }
}

void RoomHost::handle(Event& event)
{
    if (event.task)
    {
        event.task(m_room);
        event.task = nullptr;
        return;
    }
    const std::span<const std::uint8_t> copy(reinterpret_cast<const std::uint8_t*>(event.words.data()),
                                             event.size);
    m_room.receiveDatagram(event.slot, protocol::decodedCopy(copy, event.decoded, event.reason),
                           event.wireBytes, event.now);
}

void RoomHost::run()
{
    std::vector<Event> events;
    for (;;)
    {
        {
            std::unique_lock lock(m_mutex);
            if (m_queue.empty() && !m_stopping)
            {
                const double wait = m_room.nextUpdateTime() - m_clock();
                if (wait > 0.0)
                {
                    m_wake.wait_for(lock, std::chrono::duration<double>(wait),
                                    [this] { return !m_queue.empty() || m_stopping; });
                }
            }
            std::swap(events, m_queue); // both keep their capacity: no allocation once warm
            if (m_stopping && events.empty())
            {
                break;
            }
        }
        for (Event& event : events)
        {
            handle(event);
        }
        events.clear();
        runUpdate(m_clock());
        publish();
    }
    publish();
}

} // namespace polytope::server

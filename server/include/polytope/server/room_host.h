// polytope-server: where a room runs: inline, or on a thread of its own.
//
// The Server (server.h) hands a room everything through its RoomHost: the datagrams of the room's clients,
// joins, admin commands, checkpoint requests. Inline (tests, benchmarks, tools), each call runs the room at
// once on the caller's thread, and update() runs the room's due ticks. Threaded (polytope-server), the
// host queues the work and returns at once; the room's own thread takes the queue between ticks, runs the
// ticks as they fall due, times out silent clients, and publishes a copy of its status (counters, tick,
// clients, bodies) for /metrics. The network thread therefore never waits for a tick: however long a room
// overruns, datagrams keep being read, counted and answered, and other rooms keep their own pace.
//
// What a room's thread touches of the Server's state is the room's own clients' connection slots (their
// acks, time last heard and the sealing half of their channels) and the socket's send call; the network
// thread keeps the rest (the slot table's addresses, the opening half of the channels, the handshake and
// the gate). A slot is handed to the room by a join and back by the room's CloseConnection, through queues.
#pragma once

#include "polytope/server/connection_table.h"
#include "polytope/server/room.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace polytope::server
{

/// A copy of a room's figures, as its thread last published them.
struct RoomStatus
{
    RoomMetrics metrics;
    std::uint64_t tick = 0;
    std::size_t clients = 0;
    std::size_t bodies = 0;
    std::uint64_t queueDrops = 0; ///< datagrams lost because the room's queue was full (threaded only)
};

class RoomHost
{
  public:
    /// Inline until start().
    explicit RoomHost(Room& room);
    ~RoomHost();
    RoomHost(const RoomHost&) = delete;
    RoomHost& operator=(const RoomHost&) = delete;

    /// True while the room runs on its own thread.
    bool threaded() const { return m_thread.joinable(); }
    /// Runs the room on its own thread from now on, reading `clock` (seconds, the same clock the Server's
    /// owner passes as `now`).
    void start(std::function<double()> clock);
    /// Runs what is queued, then stops the thread; the host is inline again.
    void stop();

    /// A datagram of one of the room's clients as the Server decoded it (its plaintext, at most
    /// kMaxDatagramBytes; `wireBytes` as received), copied for the room's thread with the verdict.
    void postDatagram(ClientSlot slot, const protocol::DecodeResult& decoded, std::size_t wireBytes,
                      double now);
    /// Work for the room's thread, run in the order posted (inline: now).
    void post(std::function<void(Room&)> task);
    /// Runs `task` on the room's thread and waits for it (inline: now). Blocks for up to one tick of the
    /// room: for checkpoints and shutdown, never for traffic.
    void call(const std::function<void(Room&)>& task);
    /// Inline: runs the room's due ticks and times out silent clients. Threaded: nothing (the thread does).
    void update(double now);
    /// The room's figures: inline, read now; threaded, as last published.
    RoomStatus status() const;
    /// The time the room next has work to do (inline hosts; threaded hosts wake themselves).
    double nextUpdateTime() const;

  private:
    /// One piece of work for the room's thread: a task, or else a datagram. One queue keeps their order (a
    /// join before the joined client's first datagram).
    struct Event
    {
        std::function<void(Room&)> task;
        ClientSlot slot = kNoSlot;
        double now = 0.0;
        std::size_t size = 0;
        std::size_t wireBytes = 0;
        bool decoded = false;                                                   ///< decodePacket accepted it
        protocol::DropReason reason{};                                          ///< else why not
        std::array<std::uint64_t, (protocol::kMaxDatagramBytes + 7) / 8> words; ///< 8-byte aligned
    };
    void handle(Event& event);
    void run();
    void publish();
    void runUpdate(double now);

    Room& m_room;
    std::function<double()> m_clock;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::vector<Event> m_queue; ///< posted by the network thread (capacity kept)
    std::atomic<std::uint64_t> m_queueDrops{0};
    bool m_stopping = false;
    std::thread m_thread;
    mutable std::mutex m_statusMutex;
    RoomStatus m_status;
    double m_lastOverrunLog = -1e9;
    std::uint64_t m_overrunsLogged = 0;
};

} // namespace polytope::server

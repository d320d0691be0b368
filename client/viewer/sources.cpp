#include "viewer/sources.h"

#include "polytope/client/interpolation.h"
#include "polytope/client/recording.h"
#include "polytope/client/token_file.h"
#include "polytope/client/udp_client.h"
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

namespace polytope::viewer
{
namespace
{
/// A decoded body as the renderer takes it.
ViewBody toViewBody(const client::SnapshotBody& s)
{
    ViewBody b{};
    b.id = s.id;
    b.generation = s.generation;
    b.shape = s.shape;
    b.atRest = s.atRest;
    b.position = s.position;
    b.orientation = s.orientation;
    b.extent = s.extent;
    return b;
}
} // namespace

// ---------------------------------------------------------------------------------------------------------
// Interpolation between the two newest snapshots.

void blendFrames(const ViewFrame& a, const ViewFrame& b, float t, ViewFrame& out)
{
    out.tick = b.tick;
    out.time = a.time + (b.time - a.time) * static_cast<double>(t);
    out.bodies.resize(b.bodies.size());
    std::size_t j = 0;
    for (std::size_t i = 0; i < b.bodies.size(); ++i)
    {
        const ViewBody& to = b.bodies[i];
        ViewBody& o = out.bodies[i];
        o = to;
        while (j < a.bodies.size() && a.bodies[j].id < to.id)
        {
            ++j;
        }
        if (j == a.bodies.size() || a.bodies[j].id != to.id || a.bodies[j].generation != to.generation)
        {
            continue;
        }
        const ViewBody& from = a.bodies[j];
        for (std::size_t k = 0; k < 3; ++k)
        {
            o.position[k] = from.position[k] + (to.position[k] - from.position[k]) * t;
        }
        float d = 0.0f;
        for (std::size_t k = 0; k < 4; ++k)
        {
            d += from.orientation[k] * to.orientation[k];
        }
        const float sign = d < 0.0f ? -1.0f : 1.0f;
        float lengthSquared = 0.0f;
        for (std::size_t k = 0; k < 4; ++k)
        {
            o.orientation[k] = from.orientation[k] * (1.0f - t) + sign * to.orientation[k] * t;
            lengthSquared += o.orientation[k] * o.orientation[k];
        }
        if (lengthSquared > 1e-12f)
        {
            const float inv = 1.0f / std::sqrt(lengthSquared);
            for (float& c : o.orientation)
            {
                c *= inv;
            }
        }
        else
        {
            o.orientation = to.orientation;
        }
    }
}

void TwoSnapshotInterpolator::push(ViewFrame frame, double arrivalTime)
{
    if (m_count > 0)
    {
        const double interval = arrivalTime - m_newestArrival;
        m_intervals.push_back(interval);
        if (m_intervals.size() > 120)
        {
            m_intervals.pop_front();
        }
        m_interval = m_count == 1 ? interval : 0.9 * m_interval + 0.1 * interval;
        m_interval = std::clamp(m_interval, 1e-3, 1.0);
    }
    m_previous = std::move(m_newest);
    m_previousArrival = m_newestArrival;
    m_newest = std::move(frame);
    m_newestArrival = arrivalTime;
    ++m_count;
}

bool TwoSnapshotInterpolator::sample(double now, ViewFrame& out) const
{
    if (m_count == 0)
    {
        return false;
    }
    if (m_count == 1)
    {
        out = m_newest;
        return true;
    }
    const double t = std::clamp((now - m_newestArrival) / m_interval, 0.0, 1.0);
    blendFrames(m_previous, m_newest, static_cast<float>(t), out);
    return true;
}

double TwoSnapshotInterpolator::jitterSeconds() const
{
    if (m_intervals.size() < 2)
    {
        return 0.0;
    }
    double mean = 0.0;
    for (double v : m_intervals)
    {
        mean += v;
    }
    mean /= static_cast<double>(m_intervals.size());
    double variance = 0.0;
    for (double v : m_intervals)
    {
        variance += (v - mean) * (v - mean);
    }
    return std::sqrt(variance / static_cast<double>(m_intervals.size() - 1));
}

// ---------------------------------------------------------------------------------------------------------
// Local scenes.

namespace
{

using Clock = std::chrono::steady_clock;

/// "pile:4000" -> ("pile", 4000); false when there is no ":N" suffix.
bool parseSized(const std::string& name, std::string& kind, int& count)
{
    const auto colon = name.find(':');
    if (colon == std::string::npos)
    {
        return false;
    }
    kind = name.substr(0, colon);
    const char* first = name.data() + colon + 1;
    const char* last = name.data() + name.size();
    const auto [ptr, ec] = std::from_chars(first, last, count);
    return ec == std::errc{} && ptr == last && count > 0 && count <= 60000;
}

bool buildScene(physics::World& world, const std::string& name, std::string& error)
{
    std::string kind;
    int count = 0;
    bool ok = false;
    if (parseSized(name, kind, count))
    {
        if (kind == "pile")
        {
            ok = physics::buildPile(world, count);
        }
        else if (kind == "stack")
        {
            ok = physics::buildStack(world, count);
        }
        else if (kind == "pyramid")
        {
            ok = physics::buildPyramid(world, count);
        }
        else
        {
            error = "unknown scene '" + name + "' (sized scenes: pile:N, stack:N, pyramid:N)";
            return false;
        }
    }
    else
    {
        const physics::SceneInfo* scene = physics::findScene(name);
        if (scene == nullptr)
        {
            error = "unknown scene '" + name + "'; known: " + sceneNamesHelp();
            return false;
        }
        ok = scene->build(world);
    }
    if (!ok)
    {
        error = "scene '" + name + "' did not fit in the world";
    }
    return ok;
}

void captureFrame(const physics::World& world, const std::vector<std::array<float, 6>>& hullBoxes,
                  ViewFrame& out)
{
    out.tick = world.stepCount();
    out.time = static_cast<double>(world.stepCount()) / 60.0;
    out.bodies.clear();
    out.bodies.reserve(world.bodyCount());
    world.forEachBody(
        [&](const physics::BodyState& s)
        {
            ViewBody b;
            b.id = s.id.index;
            b.generation = s.id.generation;
            b.shape = static_cast<ShapeKind>(s.shape.type);
            b.atRest = s.sleeping;
            b.position = {s.transform.p.x, s.transform.p.y, s.transform.p.z};
            b.orientation = {s.transform.q.x, s.transform.q.y, s.transform.q.z, s.transform.q.w};
            switch (s.shape.type)
            {
            case physics::ShapeType::Sphere:
                b.extent = {s.shape.sphere.radius, s.shape.sphere.radius, s.shape.sphere.radius};
                break;
            case physics::ShapeType::Capsule:
                b.extent = {s.shape.capsule.radius, s.shape.capsule.halfHeight, s.shape.capsule.radius};
                break;
            case physics::ShapeType::Box:
                b.extent = {s.shape.box.halfExtents.x, s.shape.box.halfExtents.y, s.shape.box.halfExtents.z};
                break;
            case physics::ShapeType::Hull:
                if (s.shape.hullIndex < hullBoxes.size())
                {
                    const auto& box = hullBoxes[s.shape.hullIndex];
                    b.boxCenter = {box[0], box[1], box[2]};
                    b.hullIndex = static_cast<int>(s.shape.hullIndex);
                    b.extent = {box[3], box[4], box[5]};
                }
                break;
            case physics::ShapeType::Plane:
                break;
            }
            b.hasVelocity = true;
            b.linearVelocity = {s.linearVelocity.x, s.linearVelocity.y, s.linearVelocity.z};
            b.angularVelocity = {s.angularVelocity.x, s.angularVelocity.y, s.angularVelocity.z};
            b.mass = s.mass;
            out.bodies.push_back(b);
        });
    // Slot order is id order already; keep the promise explicit.
    std::sort(out.bodies.begin(), out.bodies.end(),
              [](const ViewBody& a, const ViewBody& b) { return a.id < b.id; });
}

class LocalSource final : public ViewSource
{
  public:
    explicit LocalSource(const LocalOptions& options) : m_options(options), m_paused(options.paused) {}

    ~LocalSource() override
    {
        m_stop = true;
        if (m_thread.joinable())
        {
            m_thread.join();
        }
    }

    bool build(std::string& error)
    {
        if (!buildScene(m_world, m_options.scene, error))
        {
            return false;
        }
        for (const physics::ConvexHull& hull : m_world.hulls())
        {
            physics::Vec3 lo = hull.vertices.empty() ? physics::Vec3{} : hull.vertices.front();
            physics::Vec3 hi = lo;
            for (const physics::Vec3& v : hull.vertices)
            {
                lo = physics::minPerElem(lo, v);
                hi = physics::maxPerElem(hi, v);
            }
            HullMesh mesh;
            for (const physics::HullFace& face : hull.faces)
            {
                // A fan over the face's loop (convex, counter-clockwise from outside).
                for (std::uint16_t k = 1; k + 1 < face.indexCount; ++k)
                {
                    for (const std::uint16_t corner :
                         {std::uint16_t{0}, k, static_cast<std::uint16_t>(k + 1)})
                    {
                        const physics::Vec3& v = hull.vertices[hull.faceVertices[face.firstIndex + corner]];
                        mesh.vertices.insert(mesh.vertices.end(),
                                             {v.x, v.y, v.z, face.normal.x, face.normal.y, face.normal.z});
                    }
                }
            }
            m_hullMeshes.push_back(std::move(mesh));
            m_hullBoxes.push_back({0.5f * (lo.x + hi.x), 0.5f * (lo.y + hi.y), 0.5f * (lo.z + hi.z),
                                   0.5f * (hi.x - lo.x), 0.5f * (hi.y - lo.y), 0.5f * (hi.z - lo.z)});
        }
        captureFrame(m_world, m_hullBoxes, m_current);
        if (!m_options.deterministic)
        {
            m_published = m_current;
            m_fresh = true;
            m_thread = std::thread([this] { run(); });
        }
        return true;
    }

    std::string description() const override
    {
        return "local scene '" + m_options.scene + "'" +
               (m_options.deterministic ? " (one step per frame)" : "");
    }

    bool update(double now) override
    {
        if (m_options.deterministic)
        {
            if (!m_paused)
            {
                stepOnce();
                captureFrame(m_world, m_hullBoxes, m_current);
            }
            return true;
        }
        std::lock_guard lock(m_mutex);
        if (m_fresh)
        {
            m_lerp.push(std::move(m_published), now);
            m_published = {};
            m_fresh = false;
        }
        return true;
    }

    bool frame(double now, ViewFrame& out) override
    {
        if (m_options.deterministic)
        {
            out = m_current;
            return true;
        }
        return m_lerp.sample(now, out);
    }

    SourceStats stats() const override
    {
        SourceStats s;
        s.stepMs = m_stepMs.load();
        if (!m_options.deterministic)
        {
            s.snapshotsPerSecond = 1.0 / m_lerp.intervalSeconds();
            s.snapshotJitterMs = 1000.0 * m_lerp.jitterSeconds();
            s.interpolationDelayMs = 1000.0 * m_lerp.intervalSeconds();
        }
        return s;
    }

    void setPaused(bool paused) override { m_paused = paused; }
    bool paused() const override { return m_paused; }
    const std::vector<HullMesh>& hullMeshes() const override { return m_hullMeshes; }

  private:
    void stepOnce()
    {
        const auto t0 = Clock::now();
        m_world.step(static_cast<float>(1.0 / m_options.stepRateHz));
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        m_stepMs = ms;
    }

    void run()
    {
        const auto period = std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(1.0 / m_options.stepRateHz));
        auto next = Clock::now();
        ViewFrame captured;
        while (!m_stop)
        {
            if (!m_paused)
            {
                stepOnce();
                captureFrame(m_world, m_hullBoxes, captured);
                std::lock_guard lock(m_mutex);
                std::swap(m_published, captured);
                m_fresh = true;
            }
            next += period;
            const auto now = Clock::now();
            if (now > next + 4 * period)
            {
                next = now; // fell behind (a slow step): do not try to catch up
            }
            std::this_thread::sleep_until(next);
        }
    }

    LocalOptions m_options;
    physics::World m_world;
    std::vector<std::array<float, 6>> m_hullBoxes; ///< per hull: local box centre, half extents
    std::vector<HullMesh> m_hullMeshes;
    ViewFrame m_current; ///< deterministic mode
    std::atomic<bool> m_paused;
    std::atomic<bool> m_stop{false};
    std::atomic<double> m_stepMs{-1.0};

    std::thread m_thread;
    std::mutex m_mutex;
    ViewFrame m_published; ///< guarded by m_mutex
    bool m_fresh = false;  ///< guarded by m_mutex
    TwoSnapshotInterpolator m_lerp;
};

// ---------------------------------------------------------------------------------------------------------
// Live servers.

class LiveSource final : public ViewSource
{
  public:
    LiveSource(std::string server, const client::ClientConfig& config)
        : m_server(std::move(server)), m_udp(config)
    {
    }

    bool connect(const std::string& host, std::uint16_t port, std::string& error)
    {
        return m_udp.connect(host, port, error);
    }

    std::string description() const override
    {
        const client::Client& c = m_udp.client();
        std::string text = "live " + m_server + " (" + client::clientStateName(c.state()) + ")";
        if (c.isConnected())
        {
            text += " scene '" + c.sceneName() + "'";
        }
        return text;
    }

    bool update(double now) override
    {
        m_udp.poll(0.0);
        client::Client& c = m_udp.client();
        while (c.popSnapshot(m_snapshot))
        {
            if (!m_buffer)
            {
                // The session announced its snapshot rate by now: the buffer's delay is built on it.
                client::InterpolationConfig config;
                config.snapshotIntervalSeconds = c.snapshotRateHz() > 0 ? 1.0 / c.snapshotRateHz() : 0.0;
                m_buffer.emplace(config);
            }
            m_buffer->add(std::move(m_snapshot));
        }
        if (now - m_rateTime >= 0.5)
        {
            const auto& s = c.stats();
            if (m_rateTime > 0.0)
            {
                const double dt = now - m_rateTime;
                m_snapshotsPerSecond = static_cast<double>(s.snapshotsCompleted - m_rateSnapshots) / dt;
                m_kbps = 8.0 * static_cast<double>(s.bytesReceived - m_rateBytes) / dt / 1000.0;
            }
            m_rateTime = now;
            m_rateSnapshots = s.snapshotsCompleted;
            m_rateBytes = s.bytesReceived;
        }
        return !c.isFinished();
    }

    bool frame(double, ViewFrame& out) override
    {
        if (!m_buffer)
        {
            return false;
        }
        // The buffer runs on the clock the Client stamped the snapshots with.
        m_last = m_buffer->sample(m_udp.now(), m_bodies);
        if (m_last.kind == client::SampleKind::Empty)
        {
            return false;
        }
        out.tick = m_last.fromTick;
        out.time = m_last.renderTime;
        out.bodies.resize(m_bodies.size());
        for (std::size_t i = 0; i < m_bodies.size(); ++i)
        {
            out.bodies[i] = toViewBody(m_bodies[i]);
        }
        return true;
    }

    SourceStats stats() const override
    {
        SourceStats s;
        const client::Client& c = m_udp.client();
        s.snapshotsPerSecond = m_snapshotsPerSecond;
        s.kilobitsPerSecond = m_kbps;
        if (c.stats().rttSamples > 0)
        {
            s.rttMs = 1000.0 * c.rttSeconds();
        }
        if (c.isConnected())
        {
            s.lossPercent = 100.0 * c.receiveLossFraction();
        }
        if (m_buffer)
        {
            s.snapshotJitterMs = 1000.0 * m_buffer->stats().jitterSeconds;
            s.interpolationDelayMs = 1000.0 * m_buffer->stats().currentDelaySeconds;
            s.extrapolating = m_last.kind == client::SampleKind::Extrapolated;
        }
        return s;
    }

    std::string error() const override
    {
        const client::Client& c = m_udp.client();
        if (c.state() == client::ClientState::ConnectTimedOut)
        {
            return "no answer from " + m_server +
                   " (is polytope-server running there? It needs a connect token unless --insecure: --token or "
                   "--token-key)";
        }
        return m_server + ": " + client::clientStateName(c.state());
    }

  private:
    std::string m_server;
    client::UdpClient m_udp;
    client::ReceivedSnapshot m_snapshot;
    std::optional<client::InterpolationBuffer> m_buffer;
    std::vector<client::SnapshotBody> m_bodies;
    client::SampleResult m_last;
    double m_rateTime = 0.0;
    std::uint64_t m_rateSnapshots = 0;
    std::uint64_t m_rateBytes = 0;
    double m_snapshotsPerSecond = -1.0;
    double m_kbps = -1.0;
};

// ---------------------------------------------------------------------------------------------------------
// Recordings.

void toViewFrame(const client::ReceivedSnapshot& snapshot, ViewFrame& out)
{
    out.tick = snapshot.tick;
    out.time = snapshot.serverTime;
    out.bodies.resize(snapshot.bodies.size());
    for (std::size_t i = 0; i < snapshot.bodies.size(); ++i)
    {
        out.bodies[i] = toViewBody(snapshot.bodies[i]);
    }
}

/// Plays a recording by its server time: the display clock maps to server time (at `speed`), and the two
/// recorded frames around it are blended. At the end the last frame is held.
class ReplaySource final : public ViewSource
{
  public:
    ReplaySource(std::string path, bool deterministic, double speed)
        : m_path(std::move(path)), m_deterministic(deterministic), m_speed(speed)
    {
    }

    bool open(std::string& error)
    {
        if (!m_reader.open(m_path, error))
        {
            return false;
        }
        if (m_reader.frameCount() == 0)
        {
            error = m_path + ": the recording holds no frames";
            return false;
        }
        if (!load(0, m_a, error))
        {
            return false;
        }
        m_aIndex = 0;
        m_playTime = m_a.time;
        return true;
    }

    std::string description() const override
    {
        char text[160];
        std::snprintf(text, sizeof text, " frame %zu / %zu%s", m_aIndex + 1, m_reader.frameCount(),
                      m_paused ? " (paused)" : "");
        return "replay " + m_path + " scene '" + m_reader.header().scene + "'" + text;
    }

    bool update(double now) override
    {
        const double elapsed = m_lastNow < 0.0 ? 0.0 : now - m_lastNow;
        m_lastNow = now;
        if (!m_paused)
        {
            m_playTime += m_deterministic ? 1.0 / 60.0 : elapsed * m_speed;
        }
        // Advance the pair (a, b) so that a.time <= playTime < b.time, or hold the last frame.
        std::string error;
        while (m_aIndex + 1 < m_reader.frameCount())
        {
            if (m_bIndex != m_aIndex + 1)
            {
                if (!load(m_aIndex + 1, m_b, error))
                {
                    m_error = error;
                    return false;
                }
                m_bIndex = m_aIndex + 1;
            }
            if (m_b.time > m_playTime)
            {
                break;
            }
            std::swap(m_a, m_b);
            m_aIndex = m_bIndex;
        }
        return true;
    }

    bool frame(double, ViewFrame& out) override
    {
        if (m_bIndex == m_aIndex + 1 && m_b.time > m_a.time && m_playTime >= m_a.time)
        {
            const double t = std::clamp((m_playTime - m_a.time) / (m_b.time - m_a.time), 0.0, 1.0);
            blendFrames(m_a, m_b, static_cast<float>(t), out);
            out.tick = m_a.tick;
            return true;
        }
        out = m_a;
        return true;
    }

    SourceStats stats() const override
    {
        SourceStats s;
        const double span = m_b.time - m_a.time;
        if (m_bIndex == m_aIndex + 1 && span > 0.0)
        {
            s.snapshotsPerSecond = 1.0 / span;
        }
        return s;
    }

    std::string error() const override { return m_error; }
    void setPaused(bool paused) override { m_paused = paused; }
    bool paused() const override { return m_paused; }

  private:
    bool load(std::size_t index, ViewFrame& out, std::string& error)
    {
        if (!m_reader.readFrame(index, m_snapshot, error))
        {
            return false;
        }
        toViewFrame(m_snapshot, out);
        return true;
    }

    std::string m_path;
    bool m_deterministic = false;
    double m_speed = 1.0;
    bool m_paused = false;
    client::RecordingReader m_reader;
    client::ReceivedSnapshot m_snapshot;
    ViewFrame m_a, m_b;
    std::size_t m_aIndex = 0;
    std::size_t m_bIndex = static_cast<std::size_t>(-1);
    double m_playTime = 0.0;
    double m_lastNow = -1.0;
    std::string m_error;
};

} // namespace

std::unique_ptr<ViewSource> makeLocalSource(const LocalOptions& options, std::string& error)
{
    auto source = std::make_unique<LocalSource>(options);
    if (!source->build(error))
    {
        return nullptr;
    }
    return source;
}

std::unique_ptr<ViewSource> makeLiveSource(const std::string& hostPort, double connectTimeoutSeconds,
                                           const std::string& tokenFile, const std::string& tokenKey,
                                           std::string& error)
{
    std::string host;
    std::uint16_t port = 0;
    if (!client::parseHostPort(hostPort, host, port, error))
    {
        return nullptr;
    }
    client::ClientConfig config;
    config.name = "polytope-viewer";
    config.spectator = true; // watches: no player body
    config.connectTimeoutSeconds = connectTimeoutSeconds;
    if (!client::toolToken(tokenFile, tokenKey, hostPort, {}, config.token, error))
    {
        return nullptr;
    }
    auto source = std::make_unique<LiveSource>(hostPort, config);
    if (!source->connect(host, port, error))
    {
        return nullptr;
    }
    return source;
}

std::unique_ptr<ViewSource> makeReplaySource(const std::string& path, bool deterministic, double speed,
                                             std::string& error)
{
    auto source = std::make_unique<ReplaySource>(path, deterministic, speed);
    if (!source->open(error))
    {
        return nullptr;
    }
    return source;
}

std::string sceneNamesHelp()
{
    std::string names;
    for (const physics::SceneInfo& scene : physics::builtinScenes())
    {
        names += std::string(scene.name) + ", ";
    }
    return names + "pile:N, stack:N, pyramid:N";
}

} // namespace polytope::viewer

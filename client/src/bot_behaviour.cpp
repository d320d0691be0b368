#include "polytope/client/bot_behaviour.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <random>

namespace polytope::client
{

bool BotFrame::sendInput(const protocol::InputCommand& input) const
{
    const bool queued = client.sendInput(input) != 0;
    ++(queued ? counters.inputsQueued : counters.inputsRefused);
    return queued;
}

bool BotFrame::sendGameMessage(std::span<const std::uint8_t> data) const
{
    const bool queued = client.sendGameMessage(data, inputTick, viewOf(sample)) != 0;
    ++(queued ? counters.messagesQueued : counters.messagesRefused);
    return queued;
}

const SnapshotBody* BotFrame::findBody(std::uint32_t id) const
{
    const auto it =
        std::lower_bound(bodies.begin(), bodies.end(), id,
                         [](const SnapshotBody& body, std::uint32_t key) { return body.id < key; });
    return it != bodies.end() && it->id == id ? &*it : nullptr;
}

namespace
{

/// Random impulses, mostly upward, to the bot's first owned body at the frame's inputHz.
class PushBehaviour final : public BotBehaviour
{
  public:
    explicit PushBehaviour(std::uint32_t seed) : m_rng(seed) {}

    void update(const BotFrame& frame) override
    {
        Client& client = frame.client;
        if (!client.isConnected() || frame.inputHz <= 0.0 || frame.newestTick == 0)
        {
            return;
        }
        if (!m_body || client.catalogue().count(m_body->id) == 0)
        {
            const std::vector<protocol::CatalogueEntry> owned = client.ownedBodies();
            m_body.reset();
            if (!owned.empty())
            {
                m_body = owned.front();
            }
        }
        if (!m_body)
        {
            return; // a scene without player bodies: nothing of ours to push
        }
        if (m_nextInputTime < 0.0)
        {
            m_nextInputTime = frame.now;
        }
        if (frame.now < m_nextInputTime)
        {
            return;
        }
        std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
        protocol::InputCommand input;
        input.tick = frame.inputTick;
        input.bodyId = m_body->id;
        input.bodyGeneration = m_body->generation;
        input.kind = protocol::wire::InputKind::Impulse;
        input.vector = {0.5f * unit(m_rng), 0.5f + 0.25f * unit(m_rng), 0.5f * unit(m_rng)}; // N s
        frame.sendInput(input);
        m_nextInputTime = std::max(m_nextInputTime + 1.0 / frame.inputHz, frame.now);
    }

  private:
    std::mt19937 m_rng;
    std::optional<protocol::CatalogueEntry> m_body;
    double m_nextInputTime = -1.0;
};

struct Registry
{
    std::mutex mutex;
    std::map<std::string, BotBehaviourFactory, std::less<>> factories;

    Registry()
    {
        factories.emplace("push", [](std::size_t, std::uint32_t seed)
                          { return std::make_unique<PushBehaviour>(seed); });
    }
};

Registry& registry()
{
    static Registry instance;
    return instance;
}

} // namespace

void registerBotBehaviour(std::string name, BotBehaviourFactory factory)
{
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    r.factories.insert_or_assign(std::move(name), std::move(factory));
}

std::unique_ptr<BotBehaviour> makeBotBehaviour(std::string_view name, std::size_t botIndex,
                                               std::uint32_t seed)
{
    BotBehaviourFactory factory;
    {
        Registry& r = registry();
        const std::lock_guard lock(r.mutex);
        const auto it = r.factories.find(name);
        if (it == r.factories.end())
        {
            return nullptr;
        }
        factory = it->second;
    }
    return factory(botIndex, seed);
}

std::vector<std::string> botBehaviourNames()
{
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    std::vector<std::string> names;
    for (const auto& entry : r.factories)
    {
        names.push_back(entry.first);
    }
    return names;
}

std::uint64_t botInputLeadTicks(const Client& client)
{
    return static_cast<std::uint64_t>(std::ceil(client.rttSeconds() * client.tickRateHz())) + 2;
}

BotDriver::BotDriver(std::unique_ptr<BotBehaviour> behaviour, const InterpolationConfig& interpolation)
    : m_behaviour(std::move(behaviour)), m_interpolation(interpolation), m_buffer(interpolation)
{
}

void BotDriver::frame(Client& client, double now, double inputHz)
{
    if (!m_configured && client.isConnected() && client.snapshotRateHz() > 0)
    {
        // The nominal interval makes the buffer's delay right from the first snapshots.
        m_interpolation.snapshotIntervalSeconds = 1.0 / client.snapshotRateHz();
        m_buffer = InterpolationBuffer(m_interpolation);
        m_configured = true;
    }
    while (client.popSnapshot(m_snapshot))
    {
        if (m_snapshot.tick > m_newestTick)
        {
            m_newestTick = m_snapshot.tick;
            m_newestReceiveTime = m_snapshot.receiveTime;
        }
        m_buffer.add(std::move(m_snapshot));
    }
    const SampleResult sample = m_buffer.sample(now, m_shown);
    if (!m_behaviour)
    {
        return;
    }
    // The server has gone on stepping since the newest snapshot arrived: count those ticks too, so that a
    // behaviour sending every frame names each tick about once.
    const double sinceNewest = std::max(0.0, now - m_newestReceiveTime) * client.tickRateHz();
    const std::uint64_t inputTick =
        m_newestTick == 0
            ? 0
            : m_newestTick + static_cast<std::uint64_t>(sinceNewest) + botInputLeadTicks(client);
    const BotFrame botFrame{client, now, m_shown, sample, m_newestTick, inputTick, inputHz, m_counters};
    m_behaviour->update(botFrame);
}

} // namespace polytope::client

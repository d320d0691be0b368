// Bot behaviours (bot_behaviour.h): the registry, and a BotDriver playing "push" against an in-process
// server as polytope-bots does.
#include "polytope/client/bot_behaviour.h"

#include "polytope/server/server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace polytope;

namespace
{

/// Counts its frames.
class CountingBehaviour final : public client::BotBehaviour
{
  public:
    explicit CountingBehaviour(int& frames) : m_frames(frames) {}
    void update(const client::BotFrame&) override { ++m_frames; }

  private:
    int& m_frames;
};

} // namespace

TEST_CASE("bot behaviours are made by name; push is always there", "[client][bots]")
{
    const std::vector<std::string> names = client::botBehaviourNames();
    CHECK(std::find(names.begin(), names.end(), "push") != names.end());
    CHECK(client::makeBotBehaviour("push", 0, 1) != nullptr);
    CHECK(client::makeBotBehaviour("no such behaviour", 0, 1) == nullptr);

    int frames = 0;
    client::registerBotBehaviour("test-counting", [&frames](std::size_t, std::uint32_t)
                                 { return std::make_unique<CountingBehaviour>(frames); });
    auto behaviour = client::makeBotBehaviour("test-counting", 3, 7);
    REQUIRE(behaviour != nullptr);
    client::Client unconnected({}, [](std::span<const std::uint8_t>) {});
    client::BotDriver driver(std::move(behaviour));
    driver.frame(unconnected, 0.0);
    CHECK(frames == 1); // called every frame, connected or not: the behaviour decides
    CHECK(driver.newestTick() == 0);
}

TEST_CASE("a push bot sends impulses to its own body at the input rate", "[client][bots]")
{
    test::InProcessNetwork net;
    net.frameSeconds = 1.0 / 60.0;
    const auto server = test::makeServer(net);
    client::Client& bot = net.addClient(2);
    bot.connect(net.now());
    client::BotDriver driver(client::makeBotBehaviour("push", 0, 1000));
    std::uint64_t lastTick = 0;
    bool newestMonotonic = true;
    net.run(3.0,
            [&]
            {
                driver.frame(bot, net.now(), 10.0);
                if (driver.newestTick() > 0)
                {
                    newestMonotonic = newestMonotonic && driver.newestTick() >= lastTick;
                    lastTick = driver.newestTick();
                }
            });
    REQUIRE(bot.isConnected());
    CHECK(newestMonotonic);
    CHECK(driver.interpolation().stats().snapshotsAdded > 0);
    CHECK_FALSE(driver.shown().empty());
    // About 10 a second from the first snapshot on (a little under 3 s).
    CHECK(driver.counters().inputsQueued >= 20);
    CHECK(driver.counters().inputsQueued <= 31);
    CHECK(driver.counters().inputsRefused == 0);
    const server::RoomMetrics& metrics = server->room(0).metrics();
    CHECK(metrics.inputsApplied + metrics.inputsLate >= 20);
    CHECK(metrics.inputsNotOwned == 0);
    CHECK(metrics.inputsRefused == 0);
}

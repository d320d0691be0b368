// The range example (examples/range/: a Lua room logic and its scene, run by the "lua" logic as
// polytope-server runs it) end to end: bots playing the "range" behaviour through client::Client and
// client::BotDriver, as polytope-bots runs them, for 60 simulated seconds at 100 ms of round trip with loss.
// Every bot shoots at the targets where its interpolation shows them; the script casts each shot as the
// shooter saw it, so hits must happen, almost every shot must hit, and every client must hold the scores the
// server holds.
#include "polytope/client/bot_behaviour.h"
#include "polytope/server/lua_logic.h"
#include "polytope/server/server.h"
#include "range/range_bot.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace polytope;

namespace
{
nlohmann::json parsed(std::span<const std::uint8_t> bytes)
{
    return nlohmann::json::parse(bytes.begin(), bytes.end());
}
} // namespace

TEST_CASE("range: bots shoot for 60 s at 100 ms round trip; hits score and every client agrees",
          "[examples][range]")
{
    server::registerLuaLogic();
    range::registerRangeBot();
    test::InProcessNetwork net;
    net.frameSeconds = 1.0 / 60.0;
    server::RoomConfig config;
    config.room = "range";
    config.scene = POLYTOPE_SOURCE_DIR "/examples/range/range.json";
    const auto server = test::makeServer(net, config);
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    conditions.jitterSeconds = 0.01;
    conditions.lossProbability = 0.03;
    net.simulate(conditions, 2026);

    constexpr int kBots = 4;
    std::vector<client::Client*> clients;
    std::vector<client::BotDriver> drivers;
    for (int i = 0; i < kBots; ++i)
    {
        client::ClientConfig clientConfig;
        clientConfig.name = "range-bot-" + std::to_string(i);
        clientConfig.spectator = true; // shooters stand at stations; they own no body
        client::Client& c = net.addClient(static_cast<std::uint8_t>(2 + i), clientConfig);
        c.connect(net.now());
        clients.push_back(&c);
        drivers.emplace_back(client::makeBotBehaviour("range", static_cast<std::size_t>(i), 0));
    }
    net.run(60.0,
            [&]
            {
                for (std::size_t i = 0; i < clients.size(); ++i)
                {
                    drivers[i].frame(*clients[i], net.now());
                }
            });
    // The last shots land and their states arrive (bots idle).
    const server::Room& room = server->room(0);
    for (int frame = 0; frame < 300; ++frame)
    {
        net.frame();
    }

    const nlohmann::json state = parsed(room.roomState());
    const int shots = state["shots"];
    const int hits = state["hits"];
    std::printf("range %d bots, 60 s at 100 ms RTT and 3%% loss: %d shots, %d hits\n", kBots, shots, hits);
    CHECK(shots >= 4 * 60 * 3); // about 7 shots a second each, a few dropped by the reload check
    CHECK(hits >= shots * 99 / 100);
    CHECK(room.metrics().logicErrors == 0);
    CHECK(room.metrics().rewoundQueries == static_cast<std::uint64_t>(shots));
    CHECK(room.metrics().rewoundClamped == 0);
    std::uint64_t sent = 0;
    for (std::size_t i = 0; i < clients.size(); ++i)
    {
        INFO("client " << i);
        REQUIRE(clients[i]->isConnected());
        CHECK(clients[i]->roomState().version == room.roomStateVersion());
        CHECK(parsed(clients[i]->roomState().data) == state); // the scores as the server holds them
        const nlohmann::json own = parsed(clients[i]->playerState().data);
        CHECK(own["hits"] == state["scores"][std::to_string(clients[i]->clientId())]);
        CHECK(own["hits"].get<int>() > 0);
        sent += drivers[i].counters().messagesQueued;
        CHECK(drivers[i].counters().messagesRefused == 0);
    }
    CHECK(sent == static_cast<std::uint64_t>(shots)); // every shot sent arrived once and was judged
}

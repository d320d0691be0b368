// The soccer example (examples/soccer/) end to end: its scene file and room logic in an in-process server,
// bots playing the "soccer" behaviour through client::Client and client::BotDriver, as polytope-bots runs
// them, for 60 simulated seconds. Goals and hits must happen, every client must decode the score the server
// holds and its own team, and nothing may be refused or fail.
#include "polytope/client/bot_behaviour.h"
#include "polytope/server/server.h"
#include "soccer/soccer_bot.h"
#include "soccer/soccer_logic.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace polytope;

namespace
{

struct MatchResult
{
    soccer::SoccerRoomState server;
    std::vector<soccer::SoccerRoomState> clients;
    std::vector<soccer::SoccerClientState> own;
    std::vector<bool> decoded; ///< per client: both states decoded
    server::RoomMetrics metrics;
    std::uint64_t inputsRefusedLocally = 0;
    double wallSeconds = 0.0;
};

/// Plays `bots` soccer bots for `seconds` over a network with `conditions` (none: instant delivery), then
/// lets the game run on (bots idle) until every client holds the room state the server last set.
MatchResult playMatch(int bots, double seconds,
                      const std::optional<protocol::NetworkConditions>& conditions = {})
{
    soccer::registerSoccerLogic();
    soccer::registerSoccerBot();
    test::InProcessNetwork net;
    net.frameSeconds = 1.0 / 60.0;
    server::RoomConfig config;
    config.room = "soccer";
    config.scene = POLYTOPE_SOURCE_DIR "/examples/soccer/soccer.json";
    const auto server = test::makeServer(net, config);
    if (conditions)
    {
        net.simulate(*conditions, 2026);
    }

    std::vector<client::Client*> clients;
    std::vector<client::BotDriver> drivers;
    for (int i = 0; i < bots; ++i)
    {
        client::ClientConfig clientConfig;
        clientConfig.name = "soccer-bot-" + std::to_string(i);
        client::Client& c = net.addClient(static_cast<std::uint8_t>(2 + i), clientConfig);
        c.connect(net.now());
        clients.push_back(&c);
        const auto index = static_cast<std::size_t>(i);
        drivers.emplace_back(client::makeBotBehaviour("soccer", index, static_cast<std::uint32_t>(i)));
    }
    const auto start = std::chrono::steady_clock::now();
    net.run(seconds,
            [&]
            {
                for (std::size_t i = 0; i < clients.size(); ++i)
                {
                    drivers[i].frame(*clients[i], net.now());
                }
            });

    const server::Room& room = server->room(0);
    const auto allCaughtUp = [&]
    {
        return std::all_of(clients.begin(), clients.end(),
                           [&](const client::Client* c)
                           { return c->roomState().version == room.roomStateVersion(); });
    };
    for (int frame = 0; frame < 600 && !allCaughtUp(); ++frame)
    {
        net.frame(); // the states in flight arrive (a state changes at least every second: the clock)
    }
    CHECK(allCaughtUp());

    MatchResult result;
    result.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    REQUIRE(soccer::decodeSoccerRoomState(room.roomState(), result.server));
    result.metrics = room.metrics();
    for (std::size_t i = 0; i < clients.size(); ++i)
    {
        CHECK(clients[i]->isConnected());
        soccer::SoccerRoomState state;
        soccer::SoccerClientState own;
        const bool ok = soccer::decodeSoccerRoomState(clients[i]->roomState().data, state) &&
                        soccer::decodeSoccerClientState(clients[i]->playerState().data, own);
        result.decoded.push_back(ok);
        result.clients.push_back(state);
        result.own.push_back(own);
        result.inputsRefusedLocally += drivers[i].counters().inputsRefused;
    }
    return result;
}

void checkMatch(const MatchResult& result, int bots)
{
    const soccer::SoccerRoomState& s = result.server;
    std::printf("soccer %d bots: %u - %u (%u goals, %u hits) in %.2f s of wall time\n", bots, s.score[0],
                s.score[1], s.goals, s.hits, result.wallSeconds);
    CHECK(s.goals >= 1);
    CHECK(s.score[0] + s.score[1] == s.goals); // one match: 60 s is shorter than soccer.json's
    CHECK(s.hits >= 1);
    CHECK(s.players.size() == static_cast<std::size_t>(bots));
    int teams[2] = {};
    std::uint32_t credited = 0;
    for (std::size_t i = 0; i < result.clients.size(); ++i)
    {
        INFO("client " << i);
        REQUIRE(result.decoded[i]);
        CHECK(result.clients[i] == s); // the whole state, the score included, as the server holds it
        ++teams[result.own[i].team];
        credited += result.own[i].goals + result.own[i].ownGoals;
    }
    CHECK(teams[0] == bots / 2);
    CHECK(teams[1] == bots / 2);
    CHECK(credited <= s.goals); // a goal after a kick-off with no touch since is nobody's
    CHECK(result.metrics.logicErrors == 0);
    CHECK(result.metrics.joinsRefusedByLogic == 0);
    CHECK(result.metrics.inputsRefused == 0);
    CHECK(result.metrics.inputsRateLimited == 0);
    CHECK(result.metrics.inputsNotOwned == 0);
    CHECK(result.metrics.inputsFailed == 0);
    CHECK(result.metrics.gameMessagesRefused == 0);
    CHECK(result.metrics.inputsApplied > 0);
    CHECK(result.inputsRefusedLocally == 0);
}

} // namespace

TEST_CASE("soccer: two against two bots score within 60 s and every client holds the server's score",
          "[examples][soccer]")
{
    checkMatch(playMatch(4, 60.0), 4);
}

TEST_CASE("soccer: three against three bots score within 60 s and every client holds the server's score",
          "[examples][soccer]")
{
    checkMatch(playMatch(6, 60.0), 6);
}

TEST_CASE("soccer: settings are checked, and bad state bytes do not decode", "[examples][soccer]")
{
    soccer::SoccerSettings settings;
    std::string error;
    CHECK(soccer::parseSoccerSettings("{}", settings, error));
    CHECK(soccer::parseSoccerSettings(R"({"half_length": 20, "match_seconds": 0})", settings, error));
    CHECK(settings.halfLengthMeters == 20.0f);
    CHECK_FALSE(soccer::parseSoccerSettings(R"({"half_lenght": 20})", settings, error));
    CHECK(error.find("half_lenght") != std::string::npos);
    CHECK_FALSE(soccer::parseSoccerSettings(R"({"ball_radius": -1})", settings, error));
    CHECK_FALSE(soccer::parseSoccerSettings(R"({"goal_half_width": 50})", settings, error));
    CHECK_FALSE(soccer::parseSoccerSettings("not json", settings, error));

    soccer::SoccerRoomState state;
    state.score = {3, 1};
    state.players = {{5, 1, soccer::kTeamEast}};
    std::vector<std::uint8_t> bytes;
    soccer::encodeSoccerRoomState(state, bytes);
    soccer::SoccerRoomState back;
    REQUIRE(soccer::decodeSoccerRoomState(bytes, back));
    CHECK(back == state);
    for (std::size_t cut = 0; cut < bytes.size(); cut += 3)
    {
        soccer::SoccerRoomState partial;
        CHECK_FALSE(soccer::decodeSoccerRoomState(std::span(bytes).first(cut), partial));
    }
    soccer::SoccerClientState own;
    own.team = 7; // no such team
    soccer::encodeSoccerClientState(own, bytes);
    CHECK_FALSE(soccer::decodeSoccerClientState(bytes, own));
}

TEST_CASE("soccer: three against three bots over 40 ms +- 10 ms of latency and 2% loss still score",
          "[examples][soccer]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.04;
    conditions.jitterSeconds = 0.01;
    conditions.lossProbability = 0.02;
    checkMatch(playMatch(6, 60.0, conditions), 6);
}

// For tuning the bot or the pitch (not run by default): goals over sixteen matches at rising latencies.
TEST_CASE("soccer: goals per match over several network delays", "[.][tuning]")
{
    for (int k = 0; k < 8; ++k)
    {
        protocol::NetworkConditions conditions;
        conditions.latencySeconds = 0.005 * k;
        conditions.jitterSeconds = 0.002 * k;
        const MatchResult twos = playMatch(4, 60.0, conditions);
        const MatchResult threes = playMatch(6, 60.0, conditions);
        std::printf("latency %.0f ms: 2 v 2 %u goals (%u hits), 3 v 3 %u goals (%u hits)\n",
                    conditions.latencySeconds * 1e3, twos.server.goals, twos.server.hits, threes.server.goals,
                    threes.server.hits);
    }
}

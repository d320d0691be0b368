// The range example (examples/range: a Lua room logic and its scene) run in-process: shooters fire at the
// targets where their interpolation shows them; the script scores hits by lag-compensated rays.
#include "polytope/client/interpolation.h"
#include "polytope/server/lua_logic.h"
#include "polytope/server/server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

using namespace polytope;

namespace
{
nlohmann::json parsed(const client::GameState& state)
{
    return state.version == 0 ? nlohmann::json()
                              : nlohmann::json::parse(state.data.begin(), state.data.end());
}
} // namespace

TEST_CASE("range: shots where the shooter saw the targets score, and every client agrees", "[server][range]")
{
    server::registerLuaLogic();
    test::InProcessNetwork net;
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    conditions.jitterSeconds = 0.01;
    conditions.lossProbability = 0.03;
    net.simulate(conditions, 5);
    server::RoomConfig config;
    config.scene = std::string(POLYTOPE_SOURCE_DIR) + "/examples/range/range.json";
    const auto server = test::makeServer(net, config);
    REQUIRE(server->room(0).logic() != nullptr);

    struct Shooter
    {
        client::Client* client = nullptr;
        client::InterpolationBuffer buffer;
        std::vector<client::SnapshotBody> shown;
        int frame = 0;
    };
    std::vector<Shooter> shooters(3);
    for (std::size_t i = 0; i < shooters.size(); ++i)
    {
        client::ClientConfig c;
        c.spectator = true;
        shooters[i].client = &net.addClient(static_cast<std::uint8_t>(2 + i), c);
        shooters[i].client->connect(net.now());
    }
    net.run(30.0,
            [&]
            {
                for (Shooter& s : shooters)
                {
                    client::ReceivedSnapshot snapshot;
                    while (s.client->popSnapshot(snapshot))
                    {
                        s.buffer.add(std::move(snapshot));
                    }
                    const client::SampleResult sample = s.buffer.sample(net.now(), s.shown);
                    const nlohmann::json room = parsed(s.client->roomState());
                    const nlohmann::json mine = parsed(s.client->playerState());
                    if (++s.frame % 15 != 0 || sample.kind != client::SampleKind::Interpolated ||
                        mine.is_null() || room.is_null() || room["targets"].empty())
                    {
                        continue;
                    }
                    const std::uint64_t target =
                        room["targets"][static_cast<std::size_t>(s.frame / 15) % room["targets"].size()];
                    for (const client::SnapshotBody& body : s.shown)
                    {
                        if (body.id != static_cast<std::uint32_t>(target & 0xFFFFFFFFu))
                        {
                            continue;
                        }
                        const float station[3] = {mine["station"][0], mine["station"][1], mine["station"][2]};
                        const float shot[6] = {station[0],
                                               station[1],
                                               station[2],
                                               body.position[0] - station[0],
                                               body.position[1] - station[1],
                                               body.position[2] - station[2]};
                        const auto tick =
                            static_cast<std::uint64_t>(std::ceil(sample.renderTime * s.client->tickRateHz()));
                        s.client->sendGameMessage(
                            std::span(reinterpret_cast<const std::uint8_t*>(shot), sizeof(shot)), tick,
                            client::viewOf(sample));
                    }
                }
            });
    net.run(1.0);
    const server::RoomMetrics& metrics = server->room(0).metrics();
    CHECK(metrics.logicErrors == 0);
    const nlohmann::json serverState =
        nlohmann::json::parse(server->room(0).roomState().begin(), server->room(0).roomState().end());
    WARN("range: " << serverState.dump());
    CHECK(serverState["shots"].get<int>() >= 100);
    CHECK(serverState["hits"].get<int>() == serverState["shots"].get<int>()); // every aimed shot hits
    for (const Shooter& s : shooters)
    {
        CHECK(parsed(s.client->roomState()) == serverState);
        const nlohmann::json mine = parsed(s.client->playerState());
        CHECK(mine["hits"] == serverState["scores"][std::to_string(s.client->clientId())]);
        CHECK(mine["hits"].get<int>() > 0);
    }
}

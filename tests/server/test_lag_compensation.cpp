// Lag compensation end to end (issue 20, must-have 4): a client 100 to 200 ms of round trip away shoots at a
// moving target where its interpolation shows it; the room's logic tests each shot against the target as
// that client saw it (RoomContext::castRayAsSeen) and, for comparison, against the live world.
#include "polytope/client/interpolation.h"
#include "polytope/server/room_logic.h"
#include "polytope/server/server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace polytope;

namespace
{

constexpr float kTargetRadius = 0.5f;
constexpr float kTargetSpeed = 6.0f; ///< m/s: 0.6 to 1.2 m (more than two radii) in 100 to 200 ms
constexpr float kTargetReach = 8.0f; ///< it turns back at x = +-8 m

struct Tally
{
    physics::BodyId target{};
    int shots = 0;
    int rewoundHits = 0;
    int liveHits = 0;
    int exactViews = 0;
};

/// A shot is six floats: the ray's origin and translation.
class Gallery final : public server::RoomLogic
{
  public:
    explicit Gallery(Tally& tally) : m_tally(tally) {}

    void onStart(server::RoomContext& room) override
    {
        physics::BodyDesc target;
        target.type = physics::BodyType::Kinematic;
        target.shape = physics::Shape::makeSphere(kTargetRadius);
        target.transform.p = {0.0f, 2.0f, 0.0f};
        target.linearVelocity = {kTargetSpeed, 0.0f, 0.0f};
        m_tally.target = room.world().createBody(target).id;
    }
    void onJoin(server::RoomContext& room, const server::ClientInfo& client) override
    {
        (void)room;
        (void)client; // spectators of the gallery: no body
    }
    void onTickBegin(server::RoomContext& room) override
    {
        physics::World& world = room.world();
        physics::BodyState state;
        REQUIRE(world.getBody(m_tally.target, state));
        const float x = state.transform.p.x;
        const float vx = state.linearVelocity.x;
        if ((x > kTargetReach && vx > 0.0f) || (x < -kTargetReach && vx < 0.0f))
        {
            world.setVelocity(m_tally.target, {-vx, 0.0f, 0.0f}, {});
        }
    }
    void onMessage(server::RoomContext& room, const server::GameMessage& message) override
    {
        if (message.data.size() != 6 * sizeof(float))
        {
            return; // not a shot: never trust a message
        }
        float f[6];
        std::memcpy(f, message.data.data(), sizeof(f));
        physics::RayCastInput ray;
        ray.origin = {f[0], f[1], f[2]};
        ray.translation = {f[3], f[4], f[5]};
        ++m_tally.shots;
        physics::RayQueryHit hit;
        server::RewindStatus status = server::RewindStatus::NoHistory;
        if (room.castRayAsSeen(message.view, ray, {}, hit, &status) && hit.body == m_tally.target)
        {
            ++m_tally.rewoundHits;
        }
        m_tally.exactViews += status == server::RewindStatus::Exact ? 1 : 0;
        physics::RayQueryHit live;
        if (room.world().castRayClosest(ray, {}, live) && live.body == m_tally.target)
        {
            ++m_tally.liveHits;
        }
    }

  private:
    Tally& m_tally;
};

} // namespace

TEST_CASE("a shot at a moving target where the client saw it hits, 100 to 200 ms away",
          "[server][logic][lag]")
{
    for (const double oneWaySeconds : {0.05, 0.075, 0.1})
    {
        INFO("one way " << oneWaySeconds << " s");
        Tally tally;
        test::InProcessNetwork net;
        protocol::NetworkConditions conditions;
        conditions.latencySeconds = oneWaySeconds;
        conditions.jitterSeconds = 0.01;
        conditions.lossProbability = 0.02;
        net.simulate(conditions, 11);
        server::RoomConfig config;
        config.scene = "gallery";
        config.buildScene = [](physics::World&) { return true; };
        config.logic = [&tally] { return std::make_unique<Gallery>(tally); };
        config.lagCompensationSeconds = 0.5;
        const auto server = test::makeServer(net, config);
        client::Client& shooter = net.addClient(2);
        shooter.connect(net.now());

        client::InterpolationConfig interpolation;
        interpolation.snapshotIntervalSeconds = 1.0 / 20.0;
        client::InterpolationBuffer buffer(interpolation);
        std::vector<client::SnapshotBody> shown;
        int frame = 0;
        net.run(8.0,
                [&]
                {
                    client::ReceivedSnapshot snapshot;
                    while (shooter.popSnapshot(snapshot))
                    {
                        buffer.add(std::move(snapshot));
                    }
                    const client::SampleResult sample = buffer.sample(net.now(), shown);
                    if (++frame % 12 != 0 || sample.kind != client::SampleKind::Interpolated ||
                        net.now() < 2.0)
                    {
                        return;
                    }
                    for (const client::SnapshotBody& body : shown)
                    {
                        if (body.id != tally.target.index)
                        {
                            continue;
                        }
                        // Straight at the target's centre as drawn, from 10 m in front of it.
                        const float shot[6] = {body.position[0], body.position[1], 10.0f, 0.0f, 0.0f, -20.0f};
                        const auto* bytes = reinterpret_cast<const std::uint8_t*>(shot);
                        const std::uint64_t tick =
                            static_cast<std::uint64_t>(std::ceil(sample.renderTime * shooter.tickRateHz()));
                        REQUIRE(shooter.sendGameMessage(std::span(bytes, sizeof(shot)), tick,
                                                        client::viewOf(sample)) != 0);
                    }
                });
        const server::RoomMetrics& metrics = server->room(0).metrics();
        WARN("one way " << oneWaySeconds << " s: " << tally.shots << " shots, " << tally.rewoundHits
                        << " hit as seen, " << tally.liveHits << " would hit the live world, "
                        << metrics.gameMessagesLate << " arrived after their tick");
        REQUIRE(tally.shots >= 40);
        CHECK(tally.rewoundHits == tally.shots);
        CHECK(tally.exactViews == tally.shots);
        // Without rewinding most of these shots miss: the target moved a radius or more since.
        CHECK(tally.liveHits < tally.shots / 2);
        CHECK(metrics.rewoundQueries == static_cast<std::uint64_t>(tally.shots));
    }
}

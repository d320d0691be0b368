// The client's round-trip and loss estimates (client.h) against a server over the seeded NetworkSimulator,
// whose latency and loss are known.
#include "polytope/client/client.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/server/server.h"
#include "support/in_process.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>

using namespace polytope;

namespace
{

const protocol::Address kClient = protocol::Address::ipv4(10, 0, 0, 2, 5000);
const server::ConnectCookies::Key kKey{9, 8, 7, 6,  5,  4,  3,  2,  1,  0,  1,  2,  3,  4,  5,  6,
                                       7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22};

/// The room of these tests: the default scene at `snapshotRateHz`.
server::RoomConfig linkRoom(int snapshotRateHz)
{
    server::RoomConfig config;
    config.snapshotRateHz = snapshotRateHz;
    return config;
}

double percentile(std::vector<double> samples, double p)
{
    std::sort(samples.begin(), samples.end());
    return samples[static_cast<std::size_t>(p * static_cast<double>(samples.size() - 1))];
}

} // namespace

TEST_CASE("client RTT estimate: 50 ms each way gives about 100 ms plus the server's ack delay",
          "[client][link]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    // 60 Hz snapshots: an acknowledgement waits at most 1/60 s in the server; frames add up to 2/240 s.
    test::InProcessNetwork net;
    net.simulate(conditions, 7);
    net.frameSeconds = 1.0 / 240.0;
    const auto server = test::makeServer(net, linkRoom(60), kKey);
    client::Client& c = net.addClient(kClient);
    c.connect(net.now());
    const auto dropSnapshots = [&] { test::dropSnapshots(c); };
    net.runUntil(5.0, dropSnapshots);
    REQUIRE(c.isConnected());
    CHECK(c.stats().rttSamples > 100);
    INFO("srtt " << c.rttSeconds() << " s, last " << c.lastRttSeconds() << " s, rttvar "
                 << c.rttVariationSeconds());
    CHECK(c.rttSeconds() >= 0.099);
    CHECK(c.rttSeconds() <= 0.100 + 1.0 / 60.0 + 2.0 / 240.0 + 0.001);
    const std::vector<double> samples(c.rttSamples().begin(), c.rttSamples().end());
    CHECK(samples.size() == client::Client::kRttHistory);
    CHECK(percentile(samples, 0.0) >= 0.099);
    CHECK(percentile(samples, 1.0) <= 0.100 + 1.0 / 60.0 + 2.0 / 240.0 + 0.001);
    // No loss on this link.
    CHECK(c.stats().packetsLost == 0);
    CHECK(c.stats().packetsAcknowledged > 100);
    CHECK(c.lossFraction() == 0.0);
    CHECK(c.stats().serverPacketsMissing == 0);
    CHECK(c.receiveLossFraction() == 0.0);

    SECTION("the estimate follows a change of latency")
    {
        conditions.latencySeconds = 0.1;
        net.simulator()->setConditions(conditions);
        net.runUntil(10.0, dropSnapshots);
        INFO("srtt " << c.rttSeconds() << " s");
        CHECK(c.rttSeconds() >= 0.199);
        CHECK(c.rttSeconds() <= 0.200 + 1.0 / 60.0 + 2.0 / 240.0 + 0.001);
    }
}

TEST_CASE("client loss estimates: 10% loss each way is measured as about 10%", "[client][link]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.03;
    conditions.jitterSeconds = 0.01;
    conditions.lossProbability = 0.10;
    test::InProcessNetwork net;
    net.simulate(conditions, 11);
    net.frameSeconds = 1.0 / 240.0;
    const auto server = test::makeServer(net, linkRoom(60), kKey);
    client::Client& c = net.addClient(kClient);
    c.connect(net.now());
    net.runUntil(30.0, [&] { test::dropSnapshots(c); });
    REQUIRE(c.isConnected());
    const client::ClientStats& s = c.stats();
    const double sentLoss =
        static_cast<double>(s.packetsLost) / static_cast<double>(s.packetsLost + s.packetsAcknowledged);
    const double receivedLoss = static_cast<double>(s.serverPacketsMissing) /
                                static_cast<double>(s.serverPacketsMissing + s.serverPacketsReceived);
    INFO("sent: " << s.packetsLost << " lost of " << s.packetsLost + s.packetsAcknowledged << " (recent "
                  << c.lossFraction() << "); received: " << s.serverPacketsMissing << " missing of "
                  << s.serverPacketsMissing + s.serverPacketsReceived << " (recent "
                  << c.receiveLossFraction() << ")");
    CHECK(s.packetsLost + s.packetsAcknowledged > 1000);
    CHECK(s.serverPacketsReceived > 1000);
    // About 1700 datagrams each way: one standard deviation of the measured share is 0.7 points.
    CHECK(sentLoss == Approx(0.10).margin(0.03));
    CHECK(receivedLoss == Approx(0.10).margin(0.03));
    // The recent windows hold 256 outcomes: wider spread.
    CHECK(c.lossFraction() == Approx(0.10).margin(0.06));
    CHECK(c.receiveLossFraction() == Approx(0.10).margin(0.06));
    // RTT is still measured, from the acks that arrive.
    CHECK(c.rttSeconds() >= 0.06);
    CHECK(c.rttSeconds() <= 0.08 + 1.0 / 60.0 + 2.0 / 240.0 + 0.001);
}

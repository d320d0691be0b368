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

const protocol::Address kServer = protocol::Address::ipv4(10, 0, 0, 1, 7777);
const protocol::Address kClient = protocol::Address::ipv4(10, 0, 0, 2, 5000);
const server::ConnectCookies::Key kKey{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6,
                                       7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22};

/// One server and one client over a simulated link, advanced in steps of 1/240 s.
struct Link
{
    Link(const protocol::NetworkConditions& conditions, int snapshotRateHz, std::uint64_t seed)
        : net(conditions, seed)
    {
        server::RoomConfig config;
        config.snapshotRateHz = snapshotRateHz;
        std::string error;
        server = test::makeServer(
            config, [this](const protocol::Address& to, std::span<const std::uint8_t> d) { net.send(kServer, to, d, now); },
            error, kKey);
        REQUIRE(server);
        client = std::make_unique<client::Client>(
            client::ClientConfig{}, [this](std::span<const std::uint8_t> d) { net.send(kClient, kServer, d, now); });
        client->connect(now);
    }

    void runUntil(double seconds)
    {
        while (now < seconds)
        {
            now += 1.0 / 240.0;
            for (const protocol::SimulatedDatagram& d : net.receive(kServer, now))
            {
                server->receive(d.from, d.bytes, now);
            }
            server->update(now);
            for (const protocol::SimulatedDatagram& d : net.receive(kClient, now))
            {
                client->receive(d.bytes, now);
            }
            client->update(now);
            client::ReceivedSnapshot ignored;
            while (client->popSnapshot(ignored))
            {
            }
        }
    }

    double now = 0.0;
    protocol::NetworkSimulator net;
    std::unique_ptr<server::Server> server;
    std::unique_ptr<client::Client> client;
};

double percentile(std::vector<double> samples, double p)
{
    std::sort(samples.begin(), samples.end());
    return samples[static_cast<std::size_t>(p * static_cast<double>(samples.size() - 1))];
}

} // namespace

TEST_CASE("client RTT estimate: 50 ms each way gives about 100 ms plus the server's ack delay", "[client][link]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.05;
    // 60 Hz snapshots: an acknowledgement waits at most 1/60 s in the server; frames add up to 2/240 s.
    Link link(conditions, 60, 7);
    link.runUntil(5.0);
    const client::Client& c = *link.client;
    REQUIRE(c.isConnected());
    CHECK(c.stats().rttSamples > 100);
    INFO("srtt " << c.rttSeconds() << " s, last " << c.lastRttSeconds() << " s, rttvar " << c.rttVariationSeconds());
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
        link.net.setConditions(conditions);
        link.runUntil(10.0);
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
    Link link(conditions, 60, 11);
    link.runUntil(30.0);
    const client::Client& c = *link.client;
    REQUIRE(c.isConnected());
    const client::ClientStats& s = c.stats();
    const double sentLoss =
        static_cast<double>(s.packetsLost) / static_cast<double>(s.packetsLost + s.packetsAcknowledged);
    const double receivedLoss =
        static_cast<double>(s.serverPacketsMissing) / static_cast<double>(s.serverPacketsMissing + s.serverPacketsReceived);
    INFO("sent: " << s.packetsLost << " lost of " << s.packetsLost + s.packetsAcknowledged << " (recent "
                  << c.lossFraction() << "); received: " << s.serverPacketsMissing << " missing of "
                  << s.serverPacketsMissing + s.serverPacketsReceived << " (recent " << c.receiveLossFraction() << ")");
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

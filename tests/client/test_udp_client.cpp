// UdpClient, the client library's socket around Client (client/udp_client.h), against no server.
#include "polytope/client/udp_client.h"
#include "polytope/server/udp_server.h"

#include <catch2/catch.hpp>

using namespace polytope;

TEST_CASE("a client with no server answering gives up after its connect time-out", "[client][udp]")
{
    client::ClientConfig config;
    config.connectTimeoutSeconds = 0.5;
    client::UdpClient udpClient(config);
    std::string error;
    // A port nobody listens on: bind one, learn it, close it.
    std::uint16_t port = 0;
    {
        server::RoomConfig sc;
        sc.port = 0;
        sc.bindAddress = "127.0.0.1";
        server::UdpServer probe;
        REQUIRE(probe.open(sc, error));
        port = probe.localPort();
    }
    REQUIRE(udpClient.connect("127.0.0.1", port, error));
    const double start = udpClient.now();
    while (!udpClient.client().isFinished() && udpClient.now() - start < 5.0)
    {
        udpClient.poll(0.02);
    }
    CHECK(udpClient.client().state() == client::ClientState::ConnectTimedOut);
    CHECK(udpClient.now() - start < 1.5);
}

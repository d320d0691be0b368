// Snapshot integrity end to end (protocol version 6, STANDARD.md 6.4): a client whose decoder gets slices
// wrong notices by their checksums, neither keeps nor acknowledges them, asks for a full snapshot, gets one
// within the server's pacing, and is back on the server's quantized state. The wrong decoder is made by the
// test hook SnapshotDecoder::setFaultForTesting, which alters decoded bodies before the checksum is checked.
#include "polytope/client/client.h"
#include "polytope/protocol/network_simulator.h"
#include "polytope/protocol/snapshot_codec.h"
#include "polytope/server/server.h"
#include "support/in_process.h"
#include "support/raw_peer.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <set>

using namespace polytope;

namespace
{

/// What the server sent a client in one Snapshot datagram.
struct SentSlice
{
    std::uint64_t tick = 0;
    protocol::SliceHeader header;
};

/// Reads the slice headers out of the Snapshot datagrams the server sent to `to` (plain sessions).
std::vector<SentSlice> sentSlices(const test::InProcessNetwork& net, const protocol::Address& to,
                                  const protocol::SnapshotCodecConfig& codec)
{
    std::vector<SentSlice> out;
    for (const test::AlignedDatagram* datagram : net.serverSentTo(to))
    {
        const protocol::DecodeResult decoded = datagram->decode();
        if (!decoded.ok() || decoded.type() != protocol::wire::PacketType::Snapshot)
        {
            continue;
        }
        const auto* snapshot = decoded.packet->message_as_Snapshot();
        const protocol::SliceHeaderResult header =
            protocol::readSliceHeader(codec, {snapshot->payload()->data(), snapshot->payload()->size()});
        REQUIRE(header.ok());
        out.push_back({snapshot->tick(), header.header});
    }
    return out;
}

/// Pops every complete snapshot the client holds; each must be exactly the server's quantized state of its
/// tick. Returns how many were compared.
std::size_t checkInSync(client::Client& c, const server::Room& room)
{
    std::size_t compared = 0;
    client::ReceivedSnapshot s;
    while (c.popSnapshot(s))
    {
        const protocol::SnapshotFrame* truth = room.history().find(s.tick);
        REQUIRE(truth != nullptr);
        INFO("tick " << s.tick);
        REQUIRE(s.quantized.size() == truth->bodies.size());
        CHECK(std::equal(s.quantized.begin(), s.quantized.end(), truth->bodies.begin()));
        ++compared;
    }
    return compared;
}

} // namespace

TEST_CASE("a decoder that gets slices wrong is caught by the checksum and recovers with a full snapshot",
          "[server][netcode][integrity]")
{
    protocol::NetworkConditions conditions;
    conditions.latencySeconds = 0.03;
    server::RoomConfig config;
    config.snapshotRateHz = 60;
    test::InProcessNetwork net;
    net.simulate(conditions, 7);
    const auto server = test::makeServer(net, config);
    const protocol::Address address = protocol::Address::ipv4(10, 0, 0, 2, 5000);
    client::Client& c = net.addClient(address);

    // The fault: while on, every slice decoded against a baseline comes out with one position code off by
    // one, as a decoder that mispredicts kept bodies would (issue 19's). Full slices decode correctly.
    bool faultOn = false;
    std::set<std::uint64_t> faultedTicks;
    c.setDecodeFaultForTesting(
        [&](std::uint64_t tick, const protocol::SliceHeader& header,
            std::span<protocol::QuantizedBody> bodies)
        {
            if (faultOn && header.hasBaseline && !bodies.empty())
            {
                bodies[bodies.size() / 2].position[0] ^= 1u;
                faultedTicks.insert(tick);
            }
        });
    c.connect(0.0);
    const server::Room& room = server->room(0);
    net.runUntil(2.0, [&] { checkInSync(c, room); });
    REQUIRE(c.isConnected());
    REQUIRE(c.stats().checksumMismatches == 0);
    REQUIRE(c.stats().snapshotsCompleted > 50);
    const std::uint64_t fullBefore = room.metrics().fullSnapshots;
    net.recordServerSends();

    // 1. The decoder goes wrong for 2 s: every delta slice fails its checksum.
    faultOn = true;
    const double faultStart = net.now();
    std::size_t shownDuringFault = 0;
    net.run(2.0, [&] { shownDuringFault += checkInSync(c, room); });
    faultOn = false;
    const double faultSeconds = net.now() - faultStart;

    const client::ClientStats& stats = c.stats();
    CHECK(stats.checksumMismatches > 60);
    CHECK(stats.checksumMismatches >= faultedTicks.size()); // a tick may have several slices
    CHECK(stats.sliceErrors[static_cast<std::size_t>(protocol::CodecError::ChecksumMismatch)] ==
          stats.checksumMismatches);
    CHECK(stats.fullSnapshotRequests > 0);
    const server::RoomMetrics& metrics = room.metrics();
    CHECK(metrics.fullSnapshotRequests > 0);
    CHECK(metrics.fullSnapshotsOnRequest >= 5);
    // The rate limit: requests came with nearly every client datagram, full snapshots at most one per
    // fullSnapshotResendSeconds (plus the one a request may find due at once).
    const double pacing = config.fullSnapshotResendSeconds;
    CHECK(metrics.fullSnapshotRequestsRefused > 0);
    CHECK(metrics.fullSnapshotRequests > 2 * metrics.fullSnapshotsOnRequest);
    CHECK(static_cast<double>(metrics.fullSnapshots - fullBefore) <= faultSeconds / pacing + 2.0);

    // Nothing faulted was kept, and nothing faulted was acknowledged: the server never names one as a
    // baseline or reference, and the client holds none of those ticks.
    const protocol::SnapshotCodecConfig& codec = c.receiver()->config();
    const std::vector<SentSlice> slices = sentSlices(net, address, codec);
    REQUIRE(!slices.empty());
    std::size_t fullSlices = 0;
    for (const SentSlice& slice : slices)
    {
        if (!slice.header.hasBaseline)
        {
            ++fullSlices;
            continue;
        }
        const std::uint64_t baselineTick = slice.tick - slice.header.baselineAge;
        INFO("tick " << slice.tick << " baseline " << baselineTick);
        CHECK(faultedTicks.count(baselineTick) == 0);
        if (slice.header.hasReference)
        {
            CHECK(faultedTicks.count(baselineTick - slice.header.referenceGap) == 0);
        }
    }
    CHECK(fullSlices >= 5);
    for (const std::uint64_t tick : faultedTicks)
    {
        CHECK(c.receiver()->find(tick) == nullptr);
    }
    // What the client did show meanwhile came from the full snapshots, and was the server's state
    // (checkInSync compared each).
    CHECK(shownDuringFault >= 5);

    // 2. The decoder is right again: delta slices decode, the requests stop, and every tick shown is the
    // server's.
    const std::uint64_t mismatches = stats.checksumMismatches;
    const std::uint64_t decodedBefore = stats.slicesDecoded;
    net.run(0.5, [&] { checkInSync(c, room); });
    CHECK_FALSE(c.wantsFullSnapshot());
    const std::uint64_t requests = metrics.fullSnapshotRequests;
    const std::uint64_t fullAfter = metrics.fullSnapshots;
    std::size_t shownAfter = 0;
    net.run(2.0, [&] { shownAfter += checkInSync(c, room); });
    CHECK(stats.checksumMismatches == mismatches);
    CHECK(stats.slicesDecoded > decodedBefore + 100);
    CHECK(metrics.fullSnapshotRequests == requests);
    CHECK(metrics.fullSnapshots == fullAfter);
    CHECK(shownAfter > 100);
    REQUIRE(c.isConnected());
}

TEST_CASE("one wrong slice costs one request and one full snapshot", "[server][netcode][integrity]")
{
    server::RoomConfig config;
    config.snapshotRateHz = 60;
    test::InProcessNetwork net;
    const auto server = test::makeServer(net, config);
    client::Client& c = net.addClient(2);
    c.connect(0.0);
    net.runUntil(1.0);
    REQUIRE(c.isConnected());
    REQUIRE(c.receiver()->anyComplete());
    const server::RoomMetrics& metrics = server->room(0).metrics();
    const std::uint64_t fullBefore = metrics.fullSnapshots;

    bool faultOnce = true;
    c.setDecodeFaultForTesting(
        [&](std::uint64_t, const protocol::SliceHeader& header, std::span<protocol::QuantizedBody> bodies)
        {
            if (faultOnce && header.hasBaseline && !bodies.empty())
            {
                bodies.front().atRest = !bodies.front().atRest;
                faultOnce = false;
            }
        });
    net.run(1.0, [&] { checkInSync(c, server->room(0)); });
    CHECK(c.stats().checksumMismatches == 1);
    CHECK_FALSE(c.wantsFullSnapshot());
    CHECK(metrics.fullSnapshotsOnRequest == 1);
    CHECK(metrics.fullSnapshots == fullBefore + 1);
}

TEST_CASE("a peer asking for a full snapshot in every datagram gets one per pacing interval",
          "[server][netcode][integrity]")
{
    server::RoomConfig config;
    config.snapshotRateHz = 60;
    test::InProcessNetwork net;
    const auto server = test::makeServer(net, config);
    test::RawPeer peer(net, protocol::Address::ipv4(10, 0, 0, 3, 5000));
    REQUIRE(peer.join());
    const server::RoomMetrics& metrics = server->room(0).metrics();

    // The peer acknowledges everything it receives (so it holds every tick and is sent deltas) with a
    // KeepAlive each frame, flagged or not.
    protocol::AckTracker acks;
    std::size_t seen = 0;
    const auto exchange = [&](bool requestFull)
    {
        std::vector<test::AlignedDatagram>& inbox = peer.received();
        for (; seen < inbox.size(); ++seen)
        {
            const protocol::DecodeResult decoded = inbox[seen].decode();
            if (decoded.ok())
            {
                acks.onReceived(decoded.packet->header()->sequence());
            }
        }
        protocol::HeaderFields header = acks.nextOutgoing();
        header.sequence = ++peer.sequence();
        header.flags |= requestFull ? protocol::kHeaderFlagFullSnapshotRequest : std::uint8_t{0};
        peer.send(peer.writer.keepAlive(header, net.now()));
    };
    net.run(1.0, [&] { exchange(false); });
    const std::uint64_t fullBefore = metrics.fullSnapshots;
    CHECK(fullBefore <= 3); // until the first acknowledgement

    const double seconds = 3.0;
    net.run(seconds, [&] { exchange(true); });
    const std::uint64_t fulls = metrics.fullSnapshots - fullBefore;
    const double pacing = config.fullSnapshotResendSeconds;
    CHECK(metrics.fullSnapshotRequests >= 350); // one a frame, 120 a second
    CHECK(metrics.fullSnapshotsOnRequest == fulls);
    CHECK(static_cast<double>(fulls) >= seconds / (2.0 * pacing));
    CHECK(static_cast<double>(fulls) <= seconds / pacing + 1.0);
    CHECK(metrics.fullSnapshotRequestsRefused > 300);

    // Requests that stop leave deltas: no more full snapshots.
    net.run(0.1, [&] { exchange(false); });
    const std::uint64_t fullAfter = metrics.fullSnapshots;
    net.run(1.0, [&] { exchange(false); });
    CHECK(metrics.fullSnapshots == fullAfter);
}

// Writes the seed corpora of the fuzz targets into DIR/<target>/: a valid datagram of every message type
// (packet), catalogue and input datagrams, real snapshot slices against the fuzz baselines, and cookies.
#include "corpus_writer.h"
#include "fuzz_snapshot_setup.h"
#include "polytope/protocol/admin_auth.h"
#include "polytope/protocol/packet.h"
#include "polytope/protocol/seal.h"
#include "polytope/protocol/token.h"
#include "polytope/server/connect_cookie.h"

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    using namespace polytope;
    using namespace polytope::protocol;
    if (argc != 2)
    {
        std::fprintf(stderr, "usage: make_packet_corpus DIR\n");
        return 1;
    }
    fuzz::CorpusWriter corpus(argv[1]);
    PacketWriter writer;
    const HeaderFields header{7, 5, 0x0Fu, kHeaderFlagAckValid};
    const std::vector<std::uint8_t> cookie(kCookieBytes, 0x5A);
    corpus.save("packet", "connect_request", writer.connectRequest(header, "fuzz"));
    corpus.save("packet", "challenge", writer.challenge(header, cookie));
    corpus.save("packet", "challenge_response", writer.challengeResponse(header, cookie, "fuzz"));
    SessionParameters session;
    session.clientId = 3;
    session.scene = "default";
    corpus.save("packet", "connect_accepted", writer.connectAccepted(header, session));
    corpus.save("packet", "connect_denied", writer.connectDenied(header, wire::DenyReason::ServerFull));
    corpus.save("packet", "keep_alive", writer.keepAlive(header, 1.5));
    corpus.save("packet", "disconnect", writer.disconnect(header, wire::DisconnectReason::ClientQuit));
    const std::vector<std::uint8_t> payload{0x20, 0x41, 0x00, 0x17, 0x99};
    corpus.save("packet", "snapshot", writer.snapshot(header, 99, 1.65, payload));
    JoinRequest join;
    join.clientName = "fuzz";
    join.snapshotFormat = wire::SnapshotFormat::Structured;
    join.snapshotVelocities = true;
    corpus.save("packet", "challenge_response_structured", writer.challengeResponse(header, cookie, join));
    {
        // A structured slice with a listed body, a removed id and velocities (STANDARD.md section 14).
        std::vector<QuantizedBody> bodies(2);
        bodies[0].id = 3;
        bodies[1].id = 9;
        bodies[1].atRest = true;
        const std::vector<std::uint32_t> removed{5};
        const std::vector<BodyVelocity> velocities(2);
        StructuredSliceView slice;
        slice.tick = 99;
        slice.serverTime = 1.65;
        slice.hasBaseline = true;
        slice.baselineTick = 96;
        slice.bodies = bodies;
        slice.removed = removed;
        slice.velocities = velocities;
        corpus.save("packet", "structured_snapshot", writer.structuredSnapshot(header, slice));
    }

    std::vector<CatalogueEntry> entries(6);
    for (std::size_t i = 0; i < entries.size(); ++i)
    {
        entries[i].id = static_cast<std::uint32_t>(i);
        entries[i].generation = 1;
        entries[i].shape = static_cast<wire::ShapeKind>(i % 5);
        entries[i].removed = i == 4;
        entries[i].extent = {0.5f, 0.5f + static_cast<float>(i), 0.5f};
    }
    corpus.save("packet", "catalogue", writer.catalogue(header, entries));
    corpus.save("catalogue", "catalogue6", writer.catalogue(header, entries));
    corpus.save("catalogue", "catalogue1", writer.catalogue(header, std::span(entries).first(1)));
    // Geometry (STANDARD.md section 12): a catalogue naming hashes, a whole one-slice geometry and the middle
    // slice of a larger one.
    std::vector<CatalogueEntry> named(entries.begin(), entries.end());
    for (CatalogueEntry& e : named)
    {
        e.geometry = 0x1122334455667788ull + e.id;
    }
    corpus.save("packet", "catalogue_geometry", writer.catalogue(header, named));
    const std::vector<std::uint8_t> geometryBytes(2500, 0x5a);
    corpus.save("packet", "geometry_slice_last",
                writer.geometrySlice(header, 0x0102030405060708ull, wire::ShapeKind::Mesh, 2500, 2048,
                                     std::span(geometryBytes).first(452)));
    corpus.save("packet", "geometry_slice_middle",
                writer.geometrySlice(header, 0x0102030405060708ull, wire::ShapeKind::HeightField, 2500, 1024,
                                     std::span(geometryBytes).first(1024)));

    std::vector<InputCommand> inputs(5);
    for (std::size_t i = 0; i < inputs.size(); ++i)
    {
        inputs[i].tick = 1000 + i;
        inputs[i].sequence = static_cast<std::uint32_t>(i + 1);
        inputs[i].bodyId = static_cast<std::uint32_t>(i * 2);
        inputs[i].kind = static_cast<wire::InputKind>(i % 4);
        inputs[i].vector = {1.0f, -2.0f, 3.0f};
    }
    corpus.save("packet", "client_input", writer.clientInput(header, inputs));
    AdminCommandFields admin;
    admin.room = "main";
    admin.nonce = 77;
    admin.time = 1.8e9;
    admin.op = wire::AdminOp::SetGravity;
    admin.vector = {0.0f, -1.6f, 0.0f};
    const std::vector<std::uint8_t> command = encodeAdminCommand(admin);
    const AdminMac mac = adminMac(deriveAdminMacKey("fuzz"), command);
    corpus.save("packet", "admin_request", writer.adminRequest(header, command, mac));
    corpus.save("packet", "admin_reply", writer.adminReply(header, 77, true, "room 'main' tick 5", nullptr));
    corpus.save("inputs", "inputs5", writer.clientInput(header, inputs));
    corpus.save("inputs", "inputs0", writer.clientInput(header, {}));
    {
        const std::vector<std::uint8_t> shot{1, 2, 3, 4, 5, 6};
        const std::vector<GameMessageFields> messages{{1, 1000, 990, 993, 0.5f, shot},
                                                      {2, 1001, 993, 993, 0.0f, shot}};
        corpus.save("inputs", "game_messages", writer.clientInput(header, inputs, messages));
        corpus.save("packet", "client_input_game_messages", writer.clientInput(header, inputs, messages));
        corpus.save("packet", "game_state", writer.gameState(header, wire::GameStateScope::Room, 3, shot));
        corpus.save("packet", "connect_denied_by_game",
                    writer.connectDenied(header, wire::DenyReason::RefusedByGame, std::string_view("full")));
        corpus.save("packet", "disconnect_kicked",
                    writer.disconnect(header, wire::DisconnectReason::Kicked, "idle"));
    }

    // Real slices for tick 120 against the baselines the fuzz target holds (100, 110), and a full one.
    const SnapshotCodecConfig config = fuzz::fuzzCodecConfig();
    SnapshotEncoder encoder(config);
    const auto b100 = fuzz::fuzzScene(100);
    const auto b110 = fuzz::fuzzScene(110);
    const auto current = fuzz::fuzzScene(120);
    const SnapshotFrame f100(100, b100), f110(110, b110), f120(120, current);
    int slices = 0;
    for (int variant = 0; variant < 3; ++variant)
    {
        const SnapshotFrame* baseline = variant == 0 ? nullptr : &f110;
        const SnapshotFrame* reference = variant == 2 ? &f100 : nullptr;
        if (encoder.encode(f120, baseline, reference) != CodecError::None)
        {
            return 1;
        }
        for (const EncodedSlice& slice : encoder.slices())
        {
            corpus.save("snapshot_payload", "slice" + std::to_string(slices++), slice.payload);
        }
    }

    // Cookies: address 10.0.0.2:5000 at t = 3 s, then the cookie (see fuzz_challenge.cpp).
    const server::ConnectCookies cookies(server::ConnectCookies::Key{7, 7, 7}, 5.0);
    const protocol::Address address = protocol::Address::ipv4(10, 0, 0, 2, 5000);
    const auto issued = cookies.issue(address, 3.0);
    std::vector<std::uint8_t> seed{10, 0, 0, 2, 5000 & 0xFF, 5000 >> 8, 3, 0};
    seed.insert(seed.end(), issued.begin(), issued.end());
    corpus.save("challenge", "valid", seed);
    seed[6] = 60; // expired
    corpus.save("challenge", "expired", seed);

    // Tokens: a token file, and a datagram with a token credential.
    TokenRequest request;
    request.clientId = 42;
    request.rooms = {"main"};
    request.serverAddresses = {"127.0.0.1:7777"};
    request.userData = {1, 2, 3};
    ConnectToken token;
    std::string error;
    if (!makeConnectToken(TokenKey{5, 5, 5}, request, 1800000000ull, token, error))
    {
        return 1;
    }
    corpus.save("token", "token_file", encodeConnectTokenFile(token));
    TokenCredentialFields credential;
    credential.expireTime = token.expireTime;
    credential.nonce = token.nonce;
    credential.sealed = token.sealed;
    corpus.save("packet", "connect_request_token",
                writer.connectRequest(header, "fuzz", "main", &credential));
    corpus.save("packet", "challenge_response_token",
                writer.challengeResponse(header, cookie, "fuzz", "main", 30, false, &credential));
    // Sealed datagrams: a sealed keep-alive (the target's own keys seal the rest).
    const std::array<std::uint8_t, kSessionSaltBytes> salt{1, 2, 3};
    SealedChannel client(deriveSessionKeys(SessionKey{9}, SessionKey{8}, salt, false));
    const std::span<const std::uint8_t> keepAliveView = writer.keepAlive(header, 2.0);
    const std::vector<std::uint8_t> keepAlive(keepAliveView.begin(), keepAliveView.end());
    corpus.save("sealed", "keep_alive", client.seal(keepAlive));
    corpus.save("sealed", "plain_keep_alive", keepAlive);

    std::printf("%d seed files in %s\n", corpus.written(), corpus.root().c_str());
    // 10 packets, 2 catalogues, 2 input datagrams, 3 slices, 2 cookies, a token file, 2 token datagrams, 2
    // sealed
    return corpus.written() >= 24 ? 0 : 1;
}

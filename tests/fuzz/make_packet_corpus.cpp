// Writes a seed corpus for fuzz_packet: one valid datagram of every message type.
#include "polytope/protocol/packet.h"

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    using namespace polytope::protocol;
    if (argc != 2)
    {
        std::fprintf(stderr, "usage: make_packet_corpus DIR\n");
        return 1;
    }
    const std::string dir = argv[1];
    PacketWriter writer;
    int written = 0;
    auto save = [&](const char* name, std::span<const std::uint8_t> bytes)
    {
        const std::string path = dir + "/" + name;
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (!f)
        {
            return;
        }
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
        ++written;
    };
    const HeaderFields header{7, 5, 0x0Fu};
    save("connect_request", writer.connectRequest(header, "fuzz"));
    save("connect_accepted", writer.connectAccepted(header, 3, 60, 20, "default"));
    save("connect_denied", writer.connectDenied(header, wire::DenyReason::ServerFull));
    save("keep_alive", writer.keepAlive(header, 1.5));
    save("disconnect", writer.disconnect(header, wire::DisconnectReason::ClientQuit));
    std::vector<SnapshotBody> bodies(5);
    for (std::size_t i = 0; i < bodies.size(); ++i)
    {
        bodies[i].id = static_cast<std::uint32_t>(i);
        bodies[i].generation = 1;
        bodies[i].position = {1.0f, static_cast<float>(i), 2.0f};
    }
    save("snapshot", writer.snapshotSlice(header, 99, 1.65, 0, 1, 5, bodies));
    std::printf("%d seed datagrams in %s\n", written, dir.c_str());
    return written == 6 ? 0 : 1;
}

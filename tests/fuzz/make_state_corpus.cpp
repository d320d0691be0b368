// Writes the seed corpora of the saved-state fuzz targets into DIR/<target>/: real World states of the
// "mixed" scene (fuzz_world_restore) and real checkpoints, framed and bare, of the one-room "stack10" server
// (fuzz_checkpoint). make_packet_corpus writes the protocol targets' seeds.
#include "corpus_writer.h"
#include "polytope/physics/scenes.h"
#include "polytope/physics/world.h"
#include "polytope/server/checkpoint.h"
#include "polytope/server/server.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    using namespace polytope;
    if (argc != 2)
    {
        std::fprintf(stderr, "usage: make_state_corpus DIR\n");
        return 1;
    }
    spdlog::set_level(spdlog::level::off);
    fuzz::CorpusWriter corpus(argv[1]);

    // The world as built, in flight, and come to rest (contacts, warm-start impulses, sleeping islands).
    physics::World world;
    if (!physics::findScene("mixed")->build(world))
    {
        return 1;
    }
    std::vector<std::uint8_t> state;
    int stepped = 0;
    for (const int steps : {0, 30, 300})
    {
        for (; stepped < steps; ++stepped)
        {
            (void)world.step(1.0f / 60.0f);
        }
        world.saveState(state);
        corpus.save("world_restore", "mixed_" + std::to_string(steps), state);
    }

    // The server of fuzz_checkpoint, before and after a second of ticks.
    server::ServerConfig config;
    server::RoomConfig room;
    room.room = "main";
    room.scene = "stack10";
    config.rooms = {room};
    config.security.insecure = true;
    std::string error;
    auto host = server::Server::create(
        config, [](const protocol::Address&, std::span<const std::uint8_t>) {}, error);
    if (!host)
    {
        std::fprintf(stderr, "make_state_corpus: %s\n", error.c_str());
        return 1;
    }
    for (const double seconds : {0.0, 1.0})
    {
        for (double now = 0.0; now < seconds; now += 1.0 / 60.0)
        {
            host->update(now);
        }
        std::vector<std::uint8_t> payload;
        host->saveState(payload);
        const std::string name = "stack10_" + std::to_string(static_cast<int>(seconds)) + "s";
        corpus.save("checkpoint", name + ".ckpt", server::frameCheckpoint(payload));
        corpus.save("checkpoint", name + ".payload", payload);
    }

    std::printf("%d seed files in %s\n", corpus.written(), corpus.root().c_str());
    return corpus.written() == 7 ? 0 : 1;
}

// libFuzzer target: checkpoint files (server/checkpoint.h) on arbitrary contents, then Server::restoreState
// of the payload into a one-room server, as polytope-server --checkpoint does at start. The file's hash
// stops nearly every mutation at the reader, so the input is also tried as a payload itself: that is the
// parser behind the hash. Promises: a refused file or payload changes nothing (room tick and world hash);
// a payload that frames and unframes comes back unchanged; a restored server runs a tick and saves a state
// it restores again. Seeds: real checkpoints of this server (make_state_corpus).
#include "polytope/server/checkpoint.h"
#include "polytope/server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace
{

/// One room named "main" running the built-in "stack10" scene; make_state_corpus makes the same server.
struct Target
{
    Target()
    {
        spdlog::set_level(spdlog::level::off);
        polytope::server::ServerConfig config;
        polytope::server::RoomConfig room;
        room.room = "main";
        room.scene = "stack10";
        config.rooms = {room};
        config.security.insecure = true;
        std::string error;
        server = polytope::server::Server::create(
            config, [](const polytope::protocol::Address&, std::span<const std::uint8_t>) {}, error);
        if (!server)
        {
            std::abort();
        }
        server->saveState(pristine);
    }

    /// Restores `payload`; checks the promises and puts the pristine state back.
    void restore(std::span<const std::uint8_t> payload)
    {
        const std::uint64_t tick = server->room(0).tick();
        const std::uint64_t hash = server->room(0).world().stateHash();
        std::string error;
        if (!server->restoreState(payload, error))
        {
            if (error.empty() || server->room(0).tick() != tick ||
                server->room(0).world().stateHash() != hash)
            {
                std::abort(); // refused without a reason, or not all-or-nothing
            }
            return;
        }
        now += 0.1; // the server's clock only moves forward: a few ticks each time
        server->update(now);
        std::vector<std::uint8_t> saved;
        server->saveState(saved);
        if (!server->restoreState(saved, error) || !server->restoreState(pristine, error))
        {
            std::abort();
        }
    }

    std::unique_ptr<polytope::server::Server> server;
    std::vector<std::uint8_t> pristine;
    double now = 0.0;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope;
    static Target target;
    const std::span<const std::uint8_t> input(data, size);

    // As a file.
    std::vector<std::uint8_t> payload;
    std::string error;
    if (server::unframeCheckpoint(input, payload, error))
    {
        target.restore(payload);
    }
    else if (error.empty())
    {
        std::abort(); // a refusal must say why
    }

    // As a payload: framed, it must come back the same; then restored.
    std::vector<std::uint8_t> back;
    if (!server::unframeCheckpoint(server::frameCheckpoint(input), back, error) ||
        !std::equal(back.begin(), back.end(), input.begin(), input.end()))
    {
        std::abort();
    }
    target.restore(input);
    return 0;
}

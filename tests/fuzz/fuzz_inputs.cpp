// libFuzzer target: ClientInput datagrams (decodePacket, then readInputs and readGameMessages as the server
// does). Every input of an accepted datagram must be one the server may apply (isValidInput), and every game
// message one it may queue (isValidGameMessage), its bytes inside the datagram.
#include "polytope/protocol/packet.h"

#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope::protocol;
    std::vector<std::uint64_t> storage(size / 8 + 1);
    std::memcpy(storage.data(), data, size);
    const DecodeResult result = decodePacket({reinterpret_cast<const std::uint8_t*>(storage.data()), size});
    if (!result.ok() || result.type() != wire::PacketType::ClientInput)
    {
        return 0;
    }
    std::vector<InputCommand> inputs;
    readInputs(*result.packet->message_as_ClientInput(), inputs);
    if (inputs.size() > kMaxInputsPerDatagram)
    {
        std::abort();
    }
    for (const InputCommand& in : inputs)
    {
        if (!isValidInput(in))
        {
            std::abort();
        }
    }
    std::vector<GameMessageFields> messages;
    readGameMessages(*result.packet->message_as_ClientInput(), messages);
    const auto* begin = reinterpret_cast<const std::uint8_t*>(storage.data());
    for (const GameMessageFields& m : messages)
    {
        if (messages.size() > kMaxGameMessagesPerDatagram || !isValidGameMessage(m) ||
            m.data.data() < begin || m.data.data() + m.data.size() > begin + size)
        {
            std::abort();
        }
    }
    return 0;
}

// libFuzzer target: sealed datagrams (seal.h). Arbitrary bytes go to SealedChannel::open, which must refuse
// them (only a key holder can make one that opens) without crashing; and the same bytes, sealed with the
// channel's key and opened by its peer, must come back exactly, with the replay window refusing a second
// copy. Whatever opens is then given to decodePacket, as the Server does.
#include "polytope/protocol/packet.h"
#include "polytope/protocol/seal.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope::protocol;
    static const std::array<std::uint8_t, kSessionSaltBytes> salt{1, 2, 3};
    static SealedChannel server(deriveSessionKeys(SessionKey{9}, SessionKey{8}, salt, true));
    static SealedChannel client(deriveSessionKeys(SessionKey{9}, SessionKey{8}, salt, false));

    std::span<const std::uint8_t> plain;
    const OpenError error = server.open({data, size}, plain);
    if (error == OpenError::None)
    {
        (void)decodePacket(plain); // forged by the fuzzer would be a cryptographic break: let it be checked
    }
    if (size == 0 || size > kMaxSealedPlaintextBytes)
    {
        return 0;
    }
    const std::span<const std::uint8_t> sealedView = client.seal({data, size});
    if (sealedView.size() != size + kSealOverheadBytes)
    {
        std::abort();
    }
    const std::vector<std::uint8_t> sealed(sealedView.begin(), sealedView.end());
    if (server.open(sealed, plain) != OpenError::None || plain.size() != size ||
        !std::equal(plain.begin(), plain.end(), data))
    {
        std::abort();
    }
    (void)decodePacket(plain);
    if (server.open(sealed, plain) != OpenError::Replayed)
    {
        std::abort();
    }
    return 0;
}

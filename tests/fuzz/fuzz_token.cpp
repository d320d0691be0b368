// libFuzzer target: connect tokens (token.h). The input is tried as a token file (decodeConnectTokenFile),
// as a decrypted private part (readTokenPrivate), and as a credential's sealed part under a fixed key
// (openConnectToken, which must refuse it: only the key holder can make one). Nothing may crash; whatever
// is accepted must be in range.
#include "polytope/protocol/token.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope::protocol;
    const std::span<const std::uint8_t> bytes(data, size);
    ConnectToken file;
    std::string error;
    if (decodeConnectTokenFile(bytes, file, error))
    {
        if (file.clientId == 0 || file.serverAddresses.empty() ||
            file.serverAddresses.size() > kMaxTokenAddresses || file.sealed.size() > kMaxSealedTokenBytes ||
            file.expireTime < file.createTime)
        {
            std::abort();
        }
    }
    ConnectTokenPrivate token;
    if (readTokenPrivate(bytes, token) == TokenError::None)
    {
        if (token.clientId == 0 || token.rooms.size() > kMaxTokenRooms || token.serverAddresses.empty() ||
            token.userData.size() > kMaxTokenUserDataBytes || token.timeoutSeconds == 0)
        {
            std::abort();
        }
    }
    static const TokenKey key{5, 5, 5};
    static const std::array<std::uint8_t, kTokenNonceBytes> nonce{1};
    if (openConnectToken(key, 2000000000ull, nonce, bytes, 1800000000ull, token) == TokenError::None)
    {
        std::abort(); // a forgery
    }
    return 0;
}

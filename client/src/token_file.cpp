#include "polytope/client/token_file.h"

#include <chrono>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

namespace polytope::client
{

bool readConnectTokenFile(const std::string& path, protocol::ConnectToken& out, std::string& error)
{
    std::ifstream file(path, std::ios::binary);
    if (!file)
    {
        error = "cannot read token file '" + path + "'";
        return false;
    }
    // A token file is about 1 KB; anything much larger is not one.
    std::vector<std::uint8_t> bytes;
    char c = 0;
    while (bytes.size() <= 16384 && file.get(c))
    {
        bytes.push_back(static_cast<std::uint8_t>(c));
    }
    std::string why;
    if (bytes.size() > 16384 || !protocol::decodeConnectTokenFile(bytes, out, why))
    {
        error = "token file '" + path + "': " + (why.empty() ? std::string("too large") : why);
        return false;
    }
    return true;
}

bool makeToolToken(const std::string& keyHex, const std::string& server, const std::string& room,
                   std::uint64_t lifetimeSeconds, protocol::ConnectToken& out, std::string& error)
{
    protocol::TokenKey key{};
    if (!protocol::parseTokenKeyHex(keyHex, key, error))
    {
        error = "token key: " + error;
        return false;
    }
    protocol::TokenRequest request;
    std::random_device random;
    request.clientId = (static_cast<std::uint64_t>(random()) << 32 | random()) | (1ull << 62); // never 0
    if (!room.empty())
    {
        request.rooms.push_back(room);
    }
    request.serverAddresses.push_back(server);
    request.lifetimeSeconds = lifetimeSeconds;
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    return protocol::makeConnectToken(key, request, static_cast<std::uint64_t>(now), out, error);
}

bool toolToken(const std::string& tokenFile, const std::string& keyHex, const std::string& server,
               const std::string& room, std::optional<protocol::ConnectToken>& out, std::string& error)
{
    out.reset();
    protocol::ConnectToken token;
    if (!tokenFile.empty())
    {
        if (!readConnectTokenFile(tokenFile, token, error))
        {
            return false;
        }
        out = std::move(token);
        return true;
    }
    if (!keyHex.empty())
    {
        if (!makeToolToken(keyHex, server, room, 3600, token, error))
        {
            return false;
        }
        out = std::move(token);
    }
    return true;
}

} // namespace polytope::client

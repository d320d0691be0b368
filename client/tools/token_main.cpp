// polytope-token: makes connect tokens (protocol version 6), for tests, for operators and for a backend to
// call. docs/SECURITY.md explains the model; protocol/STANDARD.md section 11 the format.
//
//   polytope-token keygen                       a new random key (64 hex digits)
//   polytope-token make --key HEX --client-id N --server HOST:PORT [--room R]... --out FILE [--json]
//   polytope-token show FILE [--keys]           the public fields of a token file
#include "polytope/client/json_output.h"
#include "polytope/client/token_file.h"
#include "polytope/protocol/sodium_ready.h"
#include "polytope/protocol/token.h"

#include <CLI/CLI.hpp>
#include <sodium.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace
{
using namespace polytope;

/// One JSON object with every field of the token (keys and sealed part in hex): what a backend forwards.
std::string tokenJson(const protocol::ConnectToken& t, bool withKeys)
{
    nlohmann::ordered_json out;
    out["version"] = protocol::kProtocolVersion;
    out["client_id"] = t.clientId;
    out["create_time"] = t.createTime;
    out["expire_time"] = t.expireTime;
    out["timeout_seconds"] = t.timeoutSeconds;
    out["server_addresses"] = t.serverAddresses;
    out["nonce"] = protocol::toHex(t.nonce);
    out["sealed"] = protocol::toHex(t.sealed);
    if (withKeys)
    {
        out["client_to_server_key"] = protocol::toHex(t.clientToServerKey);
        out["server_to_client_key"] = protocol::toHex(t.serverToClientKey);
    }
    return client::jsonText(out);
}

bool readKey(const std::string& hex, const std::string& file, protocol::TokenKey& key, std::string& error)
{
    std::string text = hex;
    if (text.empty() && !file.empty())
    {
        std::ifstream in(file);
        if (!in)
        {
            error = "cannot read key file '" + file + "'";
            return false;
        }
        std::getline(in, text);
    }
    if (text.empty())
    {
        error = "no key: give --key, --key-file or POLYTOPE_TOKEN_KEY";
        return false;
    }
    return protocol::parseTokenKeyHex(text, key, error);
}

int fail(const std::string& message)
{
    std::fprintf(stderr, "polytope-token: %s\n", message.c_str());
    return 2;
}
} // namespace

int main(int argc, char** argv)
{
    CLI::App app{"polytope-token: connect tokens for polytope-server (docs/SECURITY.md)"};
    app.require_subcommand(1);

    CLI::App* keygen = app.add_subcommand("keygen", "print a new random token key (64 hex digits)");

    CLI::App* make = app.add_subcommand("make", "make a connect token for one client session");
    std::string keyHex;
    std::string keyFile;
    std::uint64_t clientId = 0;
    std::vector<std::string> servers;
    std::vector<std::string> rooms;
    std::uint64_t lifetime = 30;
    std::uint32_t timeout = 10;
    std::string userDataHex;
    std::string outFile;
    bool json = false;
    make->add_option("--key", keyHex, "the token key shared with the servers (default: POLYTOPE_TOKEN_KEY)")
        ->envname("POLYTOPE_TOKEN_KEY");
    make->add_option("--key-file", keyFile, "read the key from this file instead");
    make->add_option("--client-id", clientId, "the client's id, chosen by the backend (>= 1)")->required();
    make->add_option("--server", servers, "HOST:PORT the token is good for (repeat; 1 to 8)")->required();
    make->add_option("--room", rooms, "a room the client may join (repeat; none: any room)");
    make->add_option("--lifetime", lifetime, "seconds until the token expires (1 to 86400)")
        ->capture_default_str();
    make->add_option("--timeout", timeout, "session time-out carried in the token, seconds (1 to 3600)")
        ->capture_default_str();
    make->add_option("--user-data", userDataHex, "opaque bytes for the server, in hex (at most 128 bytes)");
    make->add_option("--out", outFile, "write the token file here ('-': standard output)")->required();
    make->add_flag("--json", json, "also print the token as one JSON object, keys included, for a backend");

    CLI::App* show = app.add_subcommand("show", "print the public fields of a token file");
    std::string showFile;
    bool showKeys = false;
    show->add_option("file", showFile, "the token file")->required();
    show->add_flag("--keys", showKeys, "include the two session keys");

    try
    {
        app.parse(argc, argv);
    }
    catch (const CLI::ParseError& e)
    {
        return app.exit(e) == 0 ? 0 : 2;
    }

    protocol::ensureSodium(); // the one start-up policy: a libsodium that cannot start aborts
    std::string error;
    if (keygen->parsed())
    {
        protocol::TokenKey key{};
        randombytes_buf(key.data(), key.size());
        std::printf("%s\n", protocol::toHex(key).c_str());
        return 0;
    }
    if (show->parsed())
    {
        protocol::ConnectToken token;
        if (!client::readConnectTokenFile(showFile, token, error))
        {
            return fail(error);
        }
        std::printf("%s\n", tokenJson(token, showKeys).c_str());
        return 0;
    }

    protocol::TokenKey key{};
    if (!readKey(keyHex, keyFile, key, error))
    {
        return fail(error);
    }
    protocol::TokenRequest request;
    request.clientId = clientId;
    request.serverAddresses = servers;
    request.rooms = rooms;
    request.lifetimeSeconds = lifetime;
    request.timeoutSeconds = timeout;
    if (!userDataHex.empty() && !protocol::fromHex(userDataHex, request.userData))
    {
        return fail("--user-data: not hex");
    }
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    protocol::ConnectToken token;
    if (!protocol::makeConnectToken(key, request, static_cast<std::uint64_t>(now), token, error))
    {
        return fail(error);
    }
    const std::vector<std::uint8_t> bytes = protocol::encodeConnectTokenFile(token);
    if (outFile == "-")
    {
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
        return 0;
    }
    {
        std::ofstream out(outFile, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        if (!out)
        {
            return fail("cannot write '" + outFile + "'");
        }
    }
    if (json)
    {
        std::printf("%s\n", tokenJson(token, true).c_str());
    }
    return 0;
}

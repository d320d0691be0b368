// Polytope client library: reading the connect token file a backend (or polytope-token) made.
#pragma once

#include "polytope/protocol/token.h"

#include <cstdint>
#include <optional>
#include <string>

namespace polytope::client
{

/// Reads and checks a token file (protocol::decodeConnectTokenFile); false with an error naming the file.
bool readConnectTokenFile(const std::string& path, protocol::ConnectToken& out, std::string& error);

/// For tools run by whoever holds the server's token key (operators): makes a token the way a backend
/// would, for one session with `server` (HOST:PORT as the tool was given it), the room named (empty: any),
/// a random client id and a lifetime of `lifetimeSeconds`. False with an error on a bad key.
bool makeToolToken(const std::string& keyHex, const std::string& server, const std::string& room,
                   std::uint64_t lifetimeSeconds, protocol::ConnectToken& out, std::string& error);

/// The token a tool connects with: the file when `tokenFile` is set, else one made with `keyHex` when
/// that is set, else none (`out` reset). False with an error.
bool toolToken(const std::string& tokenFile, const std::string& keyHex, const std::string& server,
               const std::string& room, std::optional<protocol::ConnectToken>& out, std::string& error);

} // namespace polytope::client

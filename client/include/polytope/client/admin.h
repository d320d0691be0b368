// Polytope client library: sending one authenticated admin command to a server (protocol/STANDARD.md,
// section 10) and waiting for its reply. polytope-inspect's `admin` subcommand is built on it.
#pragma once

#include "polytope/protocol/packet.h"

#include <string>

namespace polytope::client
{

struct AdminOutcome
{
    bool replied = false; ///< a reply arrived (forged or replayed requests get none)
    bool ok = false;      ///< the server carried the command out
    std::string message;  ///< the server's one-line status or reason
};

/// Signs `command` with `adminKey` (filling its time with the Unix time and its nonce with a random one when
/// they are 0), sends it to host:port over UDP and waits up to `timeoutSeconds` for the reply carrying its
/// nonce. Sent once: a resend with the same nonce would be dropped as a replay, and one with a new nonce
/// could run the command twice. Returns false with an error for local failures (bad address, socket); no
/// reply is not an error here (outcome.replied stays false).
bool sendAdminCommand(const std::string& host, std::uint16_t port, protocol::AdminCommandFields command,
                      const std::string& adminKey, double timeoutSeconds, AdminOutcome& outcome,
                      std::string& error);

} // namespace polytope::client

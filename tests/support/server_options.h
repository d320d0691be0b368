// Tests of polytope-server's options: a clean POLYTOPE_* environment for one test, put back afterwards, and
// parseServerOptions over an argument list.
#pragma once

#include "polytope/server/options.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace polytope::test
{

/// Sets environment variables for one test and puts back what was there before. Starts from a clean slate:
/// every POLYTOPE_* variable of the server's options, and POLYTOPE_CONFIG, is unset, so that no setting of
/// the machine running the tests leaks in.
class ScopedEnvironment
{
  public:
    ScopedEnvironment();
    ~ScopedEnvironment();
    ScopedEnvironment(const ScopedEnvironment&) = delete;
    ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

    /// Sets `name` to `value`, or unsets it when `value` is empty, until this object goes.
    void set(const std::string& name, const std::optional<std::string>& value);

  private:
    std::vector<std::pair<std::string, std::optional<std::string>>> m_saved;
};

/// parseServerOptions of the command line `polytope-server ARGS...`.
server::OptionsResult parseArguments(std::vector<std::string> args, server::ServerOptions& out);

} // namespace polytope::test

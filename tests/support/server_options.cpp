#include "support/server_options.h"

#include <cstdlib>

namespace polytope::test
{

ScopedEnvironment::ScopedEnvironment()
{
    for (const server::OptionName& name : server::serverOptionNames())
    {
        set(name.variable, std::nullopt);
    }
    set("POLYTOPE_CONFIG", std::nullopt);
}

ScopedEnvironment::~ScopedEnvironment()
{
    for (auto it = m_saved.rbegin(); it != m_saved.rend(); ++it)
    {
        if (it->second)
        {
            ::setenv(it->first.c_str(), it->second->c_str(), 1);
        }
        else
        {
            ::unsetenv(it->first.c_str());
        }
    }
}

void ScopedEnvironment::set(const std::string& name, const std::optional<std::string>& value)
{
    const char* old = std::getenv(name.c_str());
    m_saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
    {
        ::setenv(name.c_str(), value->c_str(), 1);
    }
    else
    {
        ::unsetenv(name.c_str());
    }
}

server::OptionsResult parseArguments(std::vector<std::string> args, server::ServerOptions& out)
{
    args.insert(args.begin(), "polytope-server");
    std::vector<const char*> argv;
    for (const std::string& a : args)
    {
        argv.push_back(a.c_str());
    }
    return server::parseServerOptions(static_cast<int>(argv.size()), argv.data(), out);
}

} // namespace polytope::test

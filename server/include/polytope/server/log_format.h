// polytope-server: protocol::Address as an argument of spdlog/fmt, so that a log line's address is spelled
// out only when the line is written (a dropped datagram's debug line costs nothing while debug is off).
#pragma once

#include "polytope/protocol/address.h"

#include <fmt/format.h>

#include <string_view>

template <> struct fmt::formatter<polytope::protocol::Address> : fmt::formatter<std::string_view>
{
    template <class Context> auto format(const polytope::protocol::Address& address, Context& context) const
    {
        return fmt::formatter<std::string_view>::format(address.toString(), context);
    }
};

#include "polytope/protocol/address.h"

#include <cstdio>

namespace polytope::protocol
{

Address Address::ipv4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d, std::uint16_t port)
{
    Address out;
    out.family = Family::IPv4;
    out.bytes[0] = a;
    out.bytes[1] = b;
    out.bytes[2] = c;
    out.bytes[3] = d;
    out.port = port;
    return out;
}

std::string Address::toString() const
{
    char text[64];
    if (family == Family::IPv4)
    {
        std::snprintf(text, sizeof text, "%u.%u.%u.%u:%u", bytes[0], bytes[1], bytes[2], bytes[3], port);
        return text;
    }
    if (family == Family::IPv6)
    {
        std::string out = "[";
        for (int i = 0; i < 16; i += 2)
        {
            std::snprintf(text, sizeof text, "%s%x", i ? ":" : "", (bytes[i] << 8) | bytes[i + 1]);
            out += text;
        }
        std::snprintf(text, sizeof text, "]:%u", port);
        return out + text;
    }
    return "(none)";
}

} // namespace polytope::protocol

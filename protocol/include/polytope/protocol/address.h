// Polytope wire protocol: a peer's network address as plain, ordered data (no socket library types), so
// sessions can be keyed by it deterministically and the in-process transport can invent addresses.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>

namespace polytope::protocol
{

struct Address
{
    enum class Family : std::uint8_t
    {
        None = 0,
        IPv4 = 4,
        IPv6 = 6,
    };

    Family family = Family::None;
    std::array<std::uint8_t, 16> bytes{}; ///< IPv4 uses the first 4 bytes, network order
    std::uint16_t port = 0;               ///< host order

    static Address ipv4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d, std::uint16_t port);

    bool isValid() const { return family != Family::None; }
    /// "1.2.3.4:5" or "[::1]:5".
    std::string toString() const;

    auto operator<=>(const Address&) const = default;
};

} // namespace polytope::protocol

// libFuzzer target: the server's cookie check. Input: 4 address bytes, 2 port bytes, 2 bytes of time, then
// the echoed cookie. Nothing may crash; a cookie accepted as valid must be exactly the one the server would
// have issued to that address at the time it names (no forgery without the key).
#include "polytope/server/connect_cookie.h"

#include <algorithm>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope;
    static const server::ConnectCookies cookies(server::ConnectCookies::Key{7, 7, 7}, 5.0);
    if (size < 8)
    {
        return 0;
    }
    const protocol::Address address =
        protocol::Address::ipv4(data[0], data[1], data[2], data[3], static_cast<std::uint16_t>(data[4] | (data[5] << 8)));
    const double now = static_cast<double>(data[6] | (data[7] << 8));
    const std::span<const std::uint8_t> cookie(data + 8, size - 8);
    const server::CookieCheck check = cookies.verify(address, cookie, now);
    if (check == server::CookieCheck::Valid)
    {
        const std::uint32_t stamp = cookie[0] | (cookie[1] << 8) | (cookie[2] << 16) | (static_cast<std::uint32_t>(cookie[3]) << 24);
        const auto issued = cookies.issue(address, static_cast<double>(stamp));
        if (!std::equal(issued.begin(), issued.end(), cookie.begin(), cookie.end()))
        {
            std::abort();
        }
    }
    return 0;
}

// libFuzzer target: the server's cookie check. Input: 4 address bytes, 2 port bytes, 2 bytes of time, then
// the echoed cookie. Nothing may crash; a cookie accepted as valid must stop verifying when any byte of its
// salt or stamp changes (no forgery without the key), and a freshly issued one always verifies.
#include "polytope/server/connect_cookie.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace polytope;
    static const server::ConnectCookies cookies(server::ConnectCookies::Key{7, 7, 7}, 5.0);
    if (size < 8)
    {
        return 0;
    }
    const protocol::Address address = protocol::Address::ipv4(
        data[0], data[1], data[2], data[3], static_cast<std::uint16_t>(data[4] | (data[5] << 8)));
    const double now = static_cast<double>(data[6] | (data[7] << 8));
    const std::span<const std::uint8_t> cookie(data + 8, size - 8);
    const server::CookieCheck check = cookies.verify(address, cookie, now);
    if (check == server::CookieCheck::Valid)
    {
        // A forged cookie that verifies would be a bug: the hash covers salt and stamp, so changing any byte
        // of them must make it fail.
        std::vector<std::uint8_t> changed(cookie.begin(), cookie.end());
        changed[data[0] % (protocol::kCookieSaltBytes + 4)] ^= 1;
        if (cookies.verify(address, changed, now) != server::CookieCheck::Forged)
        {
            std::abort();
        }
    }
    // A cookie issued now always verifies now, at the address it was issued to only.
    const auto issued = cookies.issue(address, now);
    if (cookies.verify(address, issued, now) != server::CookieCheck::Valid)
    {
        std::abort();
    }
    return 0;
}

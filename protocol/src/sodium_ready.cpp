#include "polytope/protocol/sodium_ready.h"

#include <sodium.h>

#include <cstdlib>

namespace polytope::protocol
{

void ensureSodium()
{
    if (sodium_init() < 0)
    {
        std::abort();
    }
}

} // namespace polytope::protocol

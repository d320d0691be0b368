// Test support: a datagram copied into 8-byte-aligned storage, as a receive buffer is (flatbuffers'
// Verifier checks the alignment of what it reads), for the protocol tests that decode by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace polytope::test
{

struct Datagram
{
    explicit Datagram(std::span<const std::uint8_t> bytes)
        : storage((bytes.size() + 7) / 8 + 1), size(bytes.size())
    {
        std::memcpy(storage.data(), bytes.data(), bytes.size());
    }
    std::span<const std::uint8_t> view() const
    {
        return {reinterpret_cast<const std::uint8_t*>(storage.data()), size};
    }
    std::uint8_t* data() { return reinterpret_cast<std::uint8_t*>(storage.data()); }
    std::vector<std::uint64_t> storage;
    std::size_t size;
};

} // namespace polytope::test

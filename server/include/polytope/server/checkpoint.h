// polytope-server: checkpoint files (the whole server state, written atomically, checked when read).
//
// Layout (little-endian): "PLTPCKPT" (8 bytes), format version u32 (1), reserved u32 (0), payload size
// u64, the payload (Server::saveState), then BLAKE2b-256 of everything before it (32 bytes). A file that is
// truncated, has another magic or version, or whose hash does not match is refused whole.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace polytope::server
{

/// Writes `payload` to `path` atomically: a temporary file in the same directory, fsync, rename over
/// `path`, fsync of the directory. On failure `path` is untouched and error says why.
bool writeCheckpointFile(const std::string& path, std::span<const std::uint8_t> payload, std::string& error);
/// Reads and checks a checkpoint file; on success `payload` holds what writeCheckpointFile was given.
bool readCheckpointFile(const std::string& path, std::vector<std::uint8_t>& payload, std::string& error);

/// The same framing in memory (tests, fuzzing).
std::vector<std::uint8_t> frameCheckpoint(std::span<const std::uint8_t> payload);
bool unframeCheckpoint(std::span<const std::uint8_t> file, std::vector<std::uint8_t>& payload, std::string& error);

} // namespace polytope::server

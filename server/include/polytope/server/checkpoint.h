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

/// Largest checkpoint file written or read, framing included. 1 GiB: a room's state at the World's default
/// capacities (65536 bodies of about 300 bytes and 65536 contact pairs of about 200; hulls are not saved)
/// is about 33 MB, so this holds some thirty full rooms; past it a read would hold gigabytes in memory
/// before the hash could say anything. writeCheckpointFile refuses a larger state rather than write a file
/// that no server would read.
inline constexpr std::uint64_t kMaxCheckpointFileBytes = 1ull << 30;

/// Writes `payload` to `path` atomically: a temporary file next to it (checkpointTemporaryPath), fsync,
/// rename over `path`, fsync of the directory. The temporary file is opened without blocking and must be a
/// regular file (a FIFO or a link planted there is refused). On failure `path` is untouched and error says
/// why.
bool writeCheckpointFile(const std::string& path, std::span<const std::uint8_t> payload, std::string& error);
/// Reads and checks a checkpoint file (a regular file of at most kMaxCheckpointFileBytes, regular_file.h:
/// FIFOs and devices are refused without blocking); on success `payload` holds what writeCheckpointFile was
/// given.
bool readCheckpointFile(const std::string& path, std::vector<std::uint8_t>& payload, std::string& error);

/// The temporary file writeCheckpointFile writes before renaming it over `path`: `path` + ".tmp".
std::string checkpointTemporaryPath(const std::string& path);
/// Checks at start-up that writeCheckpointFile(path) can work, without touching an existing checkpoint:
/// `path` must be a regular file if it exists, and the temporary file must be creatable next to it. The
/// probe creates that file and removes it again (one left over from a crash is only opened, and kept). On
/// failure error says why; the caller names `path`.
bool probeCheckpointPath(const std::string& path, std::string& error);

/// The same framing in memory (tests, fuzzing).
std::vector<std::uint8_t> frameCheckpoint(std::span<const std::uint8_t> payload);
bool unframeCheckpoint(std::span<const std::uint8_t> file, std::vector<std::uint8_t>& payload,
                       std::string& error);

} // namespace polytope::server

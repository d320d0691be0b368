// polytope-server: reading the files an operator names (scene files, the config file, checkpoints) without
// trusting what the path turns out to be.
//
// A path may name a FIFO (opening it blocks until some writer comes), a device (/dev/zero never ends), a
// directory, or a file far larger than anything the server means to hold. Each is refused before a byte is
// read: the path is opened with O_NONBLOCK, so that opening a FIFO returns at once, and then fstat on the
// open descriptor decides (not stat on the path, which could be swapped between the check and the open): a
// regular file within the caller's size cap, or nothing. The read stops at the cap too, in case the file
// grows meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace polytope::server
{

/// The outcome of checking or reading a file.
enum class FileStatus : std::uint8_t
{
    Ok,
    CannotOpen, ///< missing, no permission, or a symbolic link where none is allowed
    NotRegular, ///< a FIFO, device, socket or directory
    TooLarge,   ///< larger than the caller's cap
    ReadError,  ///< read(2) failed part way
};

/// What a read accepts.
struct FileRules
{
    std::uint64_t maxBytes = 0; ///< larger files are refused
    bool followSymlinks = true; ///< false: a symbolic link as the last component is refused (O_NOFOLLOW)
};

/// Opens and checks `path` by FileRules without reading it (start-up checks of files read later). On
/// failure, error is one line without the path, which the caller names: "not a regular file (a FIFO)".
FileStatus checkRegularFile(const std::string& path, const FileRules& rules, std::string& error);

/// Reads the whole regular file at `path` into `out` (replacing what it held), by FileRules.
FileStatus readRegularFile(const std::string& path, const FileRules& rules, std::string& out,
                           std::string& error);
FileStatus readRegularFile(const std::string& path, const FileRules& rules, std::vector<std::uint8_t>& out,
                           std::string& error);

/// `text` made safe to print in a one-line message: printable ASCII kept, a backslash doubled, every other
/// byte (control characters, newlines, anything outside ASCII) written as \xNN, and cut to at most
/// `maxBytes` of output with "..." marking the cut. For quoting what a file, a variable or a client gave.
std::string printableExcerpt(std::string_view text, std::size_t maxBytes = 64);

} // namespace polytope::server

#include "polytope/server/checkpoint.h"

#include "polytope/protocol/sodium_ready.h"
#include "polytope/server/regular_file.h"

#include <sodium.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace polytope::server
{
namespace
{
constexpr char kMagic[8] = {'P', 'L', 'T', 'P', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kFormatVersion = 1;
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8;
constexpr std::size_t kHashBytes = 32;
constexpr std::uint64_t kMaxPayloadBytes = kMaxCheckpointFileBytes - kHeaderBytes - kHashBytes;

std::string systemError(const std::string& what, const std::string& path)
{
    return what + " '" + printableExcerpt(path, 256) + "': " + std::strerror(errno);
}

bool writeAll(int fd, const std::uint8_t* data, std::size_t size)
{
    while (size > 0)
    {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n <= 0)
        {
            return false;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}
} // namespace

std::vector<std::uint8_t> frameCheckpoint(std::span<const std::uint8_t> payload)
{
    std::vector<std::uint8_t> file(kHeaderBytes + payload.size() + kHashBytes);
    std::memcpy(file.data(), kMagic, 8);
    const std::uint32_t version = kFormatVersion, reserved = 0;
    const std::uint64_t size = payload.size();
    std::memcpy(file.data() + 8, &version, 4);
    std::memcpy(file.data() + 12, &reserved, 4);
    std::memcpy(file.data() + 16, &size, 8);
    if (!payload.empty())
    {
        std::memcpy(file.data() + kHeaderBytes, payload.data(), payload.size());
    }
    crypto_generichash(file.data() + kHeaderBytes + payload.size(), kHashBytes, file.data(),
                       kHeaderBytes + payload.size(), nullptr, 0);
    return file;
}

bool unframeCheckpoint(std::span<const std::uint8_t> file, std::vector<std::uint8_t>& payload,
                       std::string& error)
{
    if (file.size() < kHeaderBytes + kHashBytes)
    {
        error = "checkpoint truncated (" + std::to_string(file.size()) + " bytes)";
        return false;
    }
    if (std::memcmp(file.data(), kMagic, 8) != 0)
    {
        error = "not a polytope checkpoint (bad magic)";
        return false;
    }
    std::uint32_t version = 0, reserved = 0;
    std::uint64_t size = 0;
    std::memcpy(&version, file.data() + 8, 4);
    std::memcpy(&reserved, file.data() + 12, 4);
    std::memcpy(&size, file.data() + 16, 8);
    if (version != kFormatVersion || reserved != 0)
    {
        error = "checkpoint format version " + std::to_string(version) + " (this server reads " +
                std::to_string(kFormatVersion) + ")";
        return false;
    }
    if (size > kMaxPayloadBytes || file.size() != kHeaderBytes + size + kHashBytes)
    {
        error = "checkpoint truncated or padded: header says " + std::to_string(size) +
                " payload bytes, file has " + std::to_string(file.size()) + " bytes";
        return false;
    }
    std::uint8_t hash[kHashBytes];
    crypto_generichash(hash, kHashBytes, file.data(), kHeaderBytes + size, nullptr, 0);
    if (sodium_memcmp(hash, file.data() + kHeaderBytes + size, kHashBytes) != 0)
    {
        error = "checkpoint corrupt (hash mismatch)";
        return false;
    }
    payload.assign(file.begin() + kHeaderBytes,
                   file.begin() + static_cast<std::ptrdiff_t>(kHeaderBytes + size));
    return true;
}

std::string checkpointTemporaryPath(const std::string& path)
{
    return path + ".tmp";
}

bool probeCheckpointPath(const std::string& path, std::string& error)
{
    if (path.empty() || path.back() == '/')
    {
        error = "not a file name";
        return false;
    }
    struct stat info
    {
    };
    if (::stat(path.c_str(), &info) == 0)
    {
        if (!S_ISREG(info.st_mode))
        {
            error = S_ISDIR(info.st_mode) ? "is a directory" : "exists and is not a regular file";
            return false;
        }
    }
    else if (errno != ENOENT)
    {
        error = std::string("cannot be reached (") + std::strerror(errno) + ")";
        return false;
    }
    // The writer's temporary file, created as the writer would (without blocking, not through a link), and
    // removed again: the existing checkpoint, if any, is never touched.
    const std::string temporary = checkpointTemporaryPath(path);
    constexpr int kFlags = O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
    bool created = true;
    int fd = ::open(temporary.c_str(), kFlags | O_CREAT | O_EXCL, 0644);
    if (fd < 0 && errno == EEXIST)
    {
        created = false; // left over from a crash: the next write replaces it anyway
        fd = ::open(temporary.c_str(), kFlags);
    }
    if (fd < 0)
    {
        error = "cannot create the temporary file '" + printableExcerpt(temporary, 256) + "' (" +
                std::strerror(errno) + ")";
        return false;
    }
    const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
    ::close(fd);
    if (created)
    {
        ::unlink(temporary.c_str());
    }
    if (!regular)
    {
        error = "the temporary file '" + printableExcerpt(temporary, 256) + "' is not a regular file";
        return false;
    }
    return true;
}

bool writeCheckpointFile(const std::string& path, std::span<const std::uint8_t> payload, std::string& error)
{
    protocol::ensureSodium();
    if (payload.size() > kMaxPayloadBytes)
    {
        error = "the state is " + std::to_string(payload.size()) + " bytes, more than a checkpoint holds (" +
                std::to_string(kMaxPayloadBytes) + ")";
        return false;
    }
    const std::vector<std::uint8_t> file = frameCheckpoint(payload);
    const std::string temporary = checkpointTemporaryPath(path);
    const int fd =
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644);
    if (fd < 0)
    {
        error = systemError("cannot create", temporary);
        return false;
    }
    struct stat info
    {
    };
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))
    {
        error = "the temporary file '" + printableExcerpt(temporary, 256) + "' is not a regular file";
        ::close(fd); // not unlinked: it is not ours
        return false;
    }
    if (::ftruncate(fd, 0) != 0 || !writeAll(fd, file.data(), file.size()) || ::fsync(fd) != 0)
    {
        error = systemError("cannot write", temporary);
        ::close(fd);
        ::unlink(temporary.c_str());
        return false;
    }
    if (::close(fd) != 0 || std::rename(temporary.c_str(), path.c_str()) != 0)
    {
        error = systemError("cannot replace", path);
        ::unlink(temporary.c_str());
        return false;
    }
    // Make the rename itself durable.
    const std::size_t slash = path.find_last_of('/');
    const std::string directory =
        slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    const int dirFd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirFd >= 0)
    {
        ::fsync(dirFd);
        ::close(dirFd);
    }
    return true;
}

bool readCheckpointFile(const std::string& path, std::vector<std::uint8_t>& payload, std::string& error)
{
    protocol::ensureSodium();
    std::vector<std::uint8_t> file;
    if (readRegularFile(path, FileRules{kMaxCheckpointFileBytes, true}, file, error) != FileStatus::Ok)
    {
        error = "checkpoint '" + printableExcerpt(path, 256) + "': " + error;
        return false;
    }
    if (!unframeCheckpoint(file, payload, error))
    {
        error = "checkpoint '" + printableExcerpt(path, 256) + "': " + error;
        return false;
    }
    return true;
}

} // namespace polytope::server

#include "polytope/server/checkpoint.h"

#include <sodium.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace polytope::server
{
namespace
{
constexpr char kMagic[8] = {'P', 'L', 'T', 'P', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kFormatVersion = 1;
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8;
constexpr std::size_t kHashBytes = 32;
constexpr std::uint64_t kMaxPayloadBytes = 4ull << 30;

std::string systemError(const std::string& what, const std::string& path)
{
    return what + " '" + path + "': " + std::strerror(errno);
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

bool unframeCheckpoint(std::span<const std::uint8_t> file, std::vector<std::uint8_t>& payload, std::string& error)
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
        error = "checkpoint truncated or padded: header says " + std::to_string(size) + " payload bytes, file has " +
                std::to_string(file.size()) + " bytes";
        return false;
    }
    std::uint8_t hash[kHashBytes];
    crypto_generichash(hash, kHashBytes, file.data(), kHeaderBytes + size, nullptr, 0);
    if (sodium_memcmp(hash, file.data() + kHeaderBytes + size, kHashBytes) != 0)
    {
        error = "checkpoint corrupt (hash mismatch)";
        return false;
    }
    payload.assign(file.begin() + kHeaderBytes, file.begin() + static_cast<std::ptrdiff_t>(kHeaderBytes + size));
    return true;
}

bool writeCheckpointFile(const std::string& path, std::span<const std::uint8_t> payload, std::string& error)
{
    if (sodium_init() < 0)
    {
        error = "libsodium failed to initialise";
        return false;
    }
    const std::vector<std::uint8_t> file = frameCheckpoint(payload);
    const std::string temporary = path + ".tmp";
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
    {
        error = systemError("cannot create", temporary);
        return false;
    }
    if (!writeAll(fd, file.data(), file.size()) || ::fsync(fd) != 0)
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
    const std::string directory = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
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
    if (sodium_init() < 0)
    {
        error = "libsodium failed to initialise";
        return false;
    }
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f)
    {
        error = systemError("cannot open checkpoint", path);
        return false;
    }
    std::vector<std::uint8_t> file;
    std::uint8_t buffer[65536];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0)
    {
        file.insert(file.end(), buffer, buffer + n);
        if (file.size() > kMaxPayloadBytes + kHeaderBytes + kHashBytes)
        {
            std::fclose(f);
            error = "checkpoint '" + path + "' is too large";
            return false;
        }
    }
    const bool readError = std::ferror(f) != 0;
    std::fclose(f);
    if (readError)
    {
        error = systemError("cannot read checkpoint", path);
        return false;
    }
    if (!unframeCheckpoint(file, payload, error))
    {
        error = "'" + path + "': " + error;
        return false;
    }
    return true;
}

} // namespace polytope::server

// Reading operator-named files by regular_file.h's rules: stat, open without blocking, fstat, bounded read.
#include "polytope/server/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <utility>

namespace polytope::server
{
namespace
{

/// Read in steps of this size, so that a file whose size fstat understates (those of /proc say 0) still
/// reads.
constexpr std::size_t kReadChunkBytes = 64 * 1024;

const char* kindOf(mode_t mode)
{
    if (S_ISDIR(mode))
    {
        return "a directory";
    }
    if (S_ISFIFO(mode))
    {
        return "a FIFO";
    }
    if (S_ISCHR(mode))
    {
        return "a character device";
    }
    if (S_ISBLK(mode))
    {
        return "a block device";
    }
    if (S_ISSOCK(mode))
    {
        return "a socket";
    }
    if (S_ISLNK(mode))
    {
        return "a symbolic link";
    }
    return "of an unknown kind";
}

/// Closes a descriptor when it goes out of scope.
class Descriptor
{
  public:
    explicit Descriptor(int fd) : m_fd(fd) {}
    ~Descriptor()
    {
        if (m_fd >= 0)
        {
            ::close(m_fd);
        }
    }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    /// Hands the descriptor over: it is no longer closed here.
    int release() { return std::exchange(m_fd, -1); }

  private:
    int m_fd;
};

/// `size` is the file's size, or with `atLeast` as much as was read before the cap stopped the read.
FileStatus tooLarge(std::uint64_t size, bool atLeast, const FileRules& rules, std::string& error)
{
    error = "larger than " + std::to_string(rules.maxBytes) + " bytes (" + std::to_string(size) +
            (atLeast ? " or more)" : ")");
    return FileStatus::TooLarge;
}

/// Checks the path, then opens it and checks the descriptor; on Ok `fd` is open (the caller closes it) and
/// `size` is what fstat said.
FileStatus openChecked(const std::string& path, const FileRules& rules, int& fd, std::uint64_t& size,
                       std::string& error)
{
    fd = -1;
    // First the path, so that a FIFO or a device is never opened at all (opening some devices has effects);
    // then the descriptor, which is what is read, in case the path changed in between.
    struct stat info
    {
    };
    const int statResult = rules.followSymlinks ? ::stat(path.c_str(), &info) : ::lstat(path.c_str(), &info);
    if (statResult != 0)
    {
        error = std::string("cannot be opened (") + std::strerror(errno) + ")";
        return FileStatus::CannotOpen;
    }
    if (!S_ISREG(info.st_mode))
    {
        if (S_ISLNK(info.st_mode))
        {
            error = "a symbolic link, not allowed here";
            return FileStatus::CannotOpen;
        }
        error = std::string("not a regular file (") + kindOf(info.st_mode) + ")";
        return FileStatus::NotRegular;
    }
    const int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (rules.followSymlinks ? 0 : O_NOFOLLOW);
    int opened = -1;
    do
    {
        opened = ::open(path.c_str(), flags);
    } while (opened < 0 && errno == EINTR);
    if (opened < 0)
    {
        error = std::string("cannot be opened (") + std::strerror(errno) + ")";
        return FileStatus::CannotOpen;
    }
    Descriptor guard(opened);
    if (::fstat(opened, &info) != 0)
    {
        error = std::string("cannot be opened (") + std::strerror(errno) + ")";
        return FileStatus::CannotOpen;
    }
    if (!S_ISREG(info.st_mode))
    {
        error = std::string("not a regular file (") + kindOf(info.st_mode) + ")";
        return FileStatus::NotRegular;
    }
    size = static_cast<std::uint64_t>(info.st_size);
    if (size > rules.maxBytes)
    {
        return tooLarge(size, false, rules, error);
    }
    fd = guard.release();
    return FileStatus::Ok;
}

template <class Bytes>
FileStatus readInto(const std::string& path, const FileRules& rules, Bytes& out, std::string& error)
{
    out.clear();
    int fd = -1;
    std::uint64_t size = 0;
    const FileStatus status = openChecked(path, rules, fd, size, error);
    if (status != FileStatus::Ok)
    {
        return status;
    }
    Descriptor guard(fd);
    try
    {
        out.reserve(static_cast<std::size_t>(size));
        std::size_t used = 0;
        for (;;)
        {
            // One byte past the cap is read when there is one, to tell "exactly at the cap" from "over it".
            const std::uint64_t room = rules.maxBytes + 1 - used;
            const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kReadChunkBytes, room));
            out.resize(used + want);
            const ssize_t n = ::read(fd, reinterpret_cast<char*>(out.data()) + used, want);
            if (n < 0 && errno == EINTR)
            {
                continue;
            }
            if (n < 0)
            {
                error = std::string("read error (") + std::strerror(errno) + ")";
                out.clear();
                return FileStatus::ReadError;
            }
            used += static_cast<std::size_t>(n);
            out.resize(used);
            if (used > rules.maxBytes)
            {
                out.clear();
                return tooLarge(used, true, rules, error);
            }
            if (n == 0)
            {
                return FileStatus::Ok;
            }
        }
    }
    catch (const std::exception& e) // std::bad_alloc, std::length_error
    {
        out.clear();
        error = std::string("cannot be held in memory (") + e.what() + ")";
        return FileStatus::ReadError;
    }
}

} // namespace

FileStatus checkRegularFile(const std::string& path, const FileRules& rules, std::string& error)
{
    int fd = -1;
    std::uint64_t size = 0;
    const FileStatus status = openChecked(path, rules, fd, size, error);
    if (fd >= 0)
    {
        ::close(fd);
    }
    return status;
}

FileStatus readRegularFile(const std::string& path, const FileRules& rules, std::string& out,
                           std::string& error)
{
    return readInto(path, rules, out, error);
}

FileStatus readRegularFile(const std::string& path, const FileRules& rules, std::vector<std::uint8_t>& out,
                           std::string& error)
{
    return readInto(path, rules, out, error);
}

std::string printableExcerpt(std::string_view text, std::size_t maxBytes)
{
    static constexpr char kHex[] = "0123456789abcdef";
    constexpr std::string_view kCut = "...";
    const std::size_t budget = maxBytes > kCut.size() ? maxBytes - kCut.size() : 0;
    std::string out;
    std::size_t keep = std::string::npos; // where to cut, at an escape's boundary, if the text is too long
    for (const char ch : text)
    {
        const auto c = static_cast<unsigned char>(ch);
        const std::size_t before = out.size();
        if (c == '\\')
        {
            out += "\\\\";
        }
        else if (c >= 0x20 && c < 0x7f)
        {
            out += static_cast<char>(c);
        }
        else
        {
            out += {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
        }
        if (keep == std::string::npos && out.size() > budget)
        {
            keep = before;
        }
        if (out.size() > maxBytes)
        {
            out.resize(keep);
            out += kCut;
            return out;
        }
    }
    return out;
}

} // namespace polytope::server

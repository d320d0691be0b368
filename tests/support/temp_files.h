// Tests: files and directories in the temporary directory that remove themselves at the end of a test, and
// whole-file reads and writes. Names are polytope_LABEL_PID_N (N counts up within the program), so programs
// and tests running side by side never share one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace polytope::test
{

/// A fresh, empty directory under the temporary directory, removed with what is in it at the end.
class TempDirectory
{
  public:
    explicit TempDirectory(std::string_view label);
    ~TempDirectory();
    TempDirectory(const TempDirectory&) = delete;
    TempDirectory& operator=(const TempDirectory&) = delete;

    const std::filesystem::path& path() const { return m_path; }
    /// The path of `name` in this directory.
    std::string operator/(const std::string& name) const { return (m_path / name).string(); }

  private:
    std::filesystem::path m_path;
};

/// A file holding `text` in the temporary directory, its name ending in `extension` (".toml"), removed at the
/// end.
class TempFile
{
  public:
    TempFile(std::string_view label, std::string_view extension, const std::string& text);
    ~TempFile();
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    const std::string& path() const { return m_path; }

  private:
    std::string m_path;
};

/// Replaces the file at `path` with exactly `bytes`.
void writeFile(const std::filesystem::path& path, const std::string& bytes);
/// The whole file at `path` ("" when it cannot be read).
std::string readFile(const std::filesystem::path& path);
/// A file of `bytes` bytes that takes no disk space (one '{', then a hole): size checks must come before any
/// read.
void sparseFile(const std::filesystem::path& path, std::uintmax_t bytes);

} // namespace polytope::test

#include "support/temp_files.h"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <system_error>

namespace polytope::test
{
namespace
{

/// temp/polytope_LABEL_PID_N followed by `extension`, for a new N.
std::filesystem::path uniqueTempPath(std::string_view label, std::string_view extension)
{
    static int counter = 0;
    const std::string name = "polytope_" + std::string(label) + "_" + std::to_string(::getpid()) + "_" +
                             std::to_string(++counter) + std::string(extension);
    return std::filesystem::temp_directory_path() / name;
}

} // namespace

TempDirectory::TempDirectory(std::string_view label) : m_path(uniqueTempPath(label, ""))
{
    std::filesystem::remove_all(m_path);
    std::filesystem::create_directories(m_path);
}

TempDirectory::~TempDirectory()
{
    std::error_code ignored;
    std::filesystem::remove_all(m_path, ignored);
}

TempFile::TempFile(std::string_view label, std::string_view extension, const std::string& text)
    : m_path(uniqueTempPath(label, extension).string())
{
    writeFile(m_path, text);
}

TempFile::~TempFile()
{
    std::error_code ignored;
    std::filesystem::remove(m_path, ignored);
}

void writeFile(const std::filesystem::path& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary) << bytes;
}

std::string readFile(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void sparseFile(const std::filesystem::path& path, std::uintmax_t bytes)
{
    std::ofstream(path, std::ios::binary).put('{');
    std::filesystem::resize_file(path, bytes);
}

} // namespace polytope::test

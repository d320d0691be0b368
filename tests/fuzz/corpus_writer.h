// The seed-corpus programs (make_packet_corpus, make_state_corpus): seed files written into
// DIR/<target>/NAME, one folder per fuzz target, and counted, so that a program can tell when one went
// missing.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>

namespace polytope::fuzz
{

/// Writes seed files below one corpus directory.
class CorpusWriter
{
  public:
    explicit CorpusWriter(std::string root) : m_root(std::move(root)) {}

    /// Writes `bytes` to ROOT/target/name, making ROOT/target if needed; a file that cannot be opened is
    /// skipped (and not counted).
    void save(const std::string& target, const std::string& name, std::span<const std::uint8_t> bytes)
    {
        ::mkdir((m_root + "/" + target).c_str(), 0755);
        const std::string path = m_root + "/" + target + "/" + name;
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (!f)
        {
            return;
        }
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
        ++m_written;
    }

    /// The files written so far.
    int written() const { return m_written; }
    const std::string& root() const { return m_root; }

  private:
    std::string m_root;
    int m_written = 0;
};

} // namespace polytope::fuzz

// polytope-bench: the suite registry, result records and timing helpers shared by every suite.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace polytope::bench
{

/// One flat result record: case, impl, n, then named figures (snake_case, unit in the name).
struct Record
{
    std::string caseName;
    std::string impl;
    std::int64_t n = 0;
    std::vector<std::pair<std::string, double>> figures;

    Record& add(std::string name, double value)
    {
        figures.emplace_back(std::move(name), value);
        return *this;
    }
};

class Report
{
  public:
    explicit Report(std::string suite) : m_suite(std::move(suite)) {}
    Record& add(std::string caseName, std::string impl, std::int64_t n);
    void printJson(std::FILE* out) const;
    void printTable(std::FILE* out) const;

  private:
    std::string m_suite;
    std::vector<Record> m_records;
};

/// Options every suite may read; 0 means "the suite's default".
struct SuiteOptions
{
    std::int64_t count = 0; ///< --count N: problem size (e.g. pairs per class for narrowphase); not scenes
    double seconds = 0.0;   ///< --seconds S: simulated seconds per scene (scenes suite), > 0
    std::uint64_t seed = 1; ///< --seed S
    /// --scene NAME (repeatable): run only these scenes (scenes suite) or cases (queries suite)
    std::vector<std::string> scenes;
    int substeps = 0;          ///< --substeps N: Polytope's solver substeps (scenes suite); 0: the default
    double contactHertz = 0.0; ///< --contact-hertz H: Polytope's contact stiffness (scenes suite); 0: default
    /// --repeat N: passes per engine and scene (scenes suite), taken in rounds (every engine once, then
    /// again), so a slow spell of a shared machine falls on all of them; the median pass is reported.
    int repeat = 1;
};

struct Suite
{
    const char* name;
    const char* description;
    void (*run)(Report& report, const SuiteOptions& options);
};

std::span<const Suite> suites();
const Suite* findSuite(std::string_view name);

/// Median of the samples (sorted in place).
double median(std::vector<double>& samples);
/// The q-quantile (0..1) of the samples (sorted in place), nearest rank.
double quantile(std::vector<double>& samples, double q);

using Clock = std::chrono::steady_clock;
inline double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The engines of a stepping suite that runs Polytope on 1 and 2 threads beside Bullet, each a column of
/// its records (convex_vs_mesh, joints).
enum class PeerEngine : std::uint8_t
{
    Polytope1,
    Polytope2,
    Bullet,
};
inline constexpr PeerEngine kPeerEngines[] = {PeerEngine::Polytope1, PeerEngine::Polytope2,
                                              PeerEngine::Bullet};
inline constexpr const char* kPeerEngineNames[] = {"polytope_1t", "polytope_2t", "bullet"};

} // namespace polytope::bench

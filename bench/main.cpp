// polytope-bench SUITE [--json] [--count N] [--seconds S] [--scene NAME]... [--substeps N] [--contact-hertz
// H] [--repeat N] [--seed S]: benchmarks, with peers side by side in the same run where a suite has them.
//
// Output: a table for people, or with --json one object {"suite": ..., "results": [...]} whose results are
// flat records: case, impl, n, then figures in snake_case with the unit in the name (ns_median, ...).
#include "bench_common.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

namespace
{
/// --seconds: at least one 60 Hz step, at most a day (the step times are kept in memory).
constexpr double kMinSceneSeconds = 1.0 / 60.0;
constexpr double kMaxSceneSeconds = 86400.0;
} // namespace

int main(int argc, char** argv)
{
    using namespace polytope::bench;
    std::string suiteName;
    bool json = false;
    SuiteOptions options;
    std::string suiteList = "Suites:\n";
    for (const Suite& s : suites())
    {
        char line[256];
        std::snprintf(line, sizeof line, "  %-14s %s\n", s.name, s.description);
        suiteList += line;
    }

    CLI::App app{
        "polytope-bench: benchmarks, with peers side by side in the same run where a suite has them\n"
        "usage: polytope-bench SUITE [--json] [--count N] [--seconds S] [--scene NAME]... [--substeps N] "
        "[--contact-hertz H] [--repeat N] [--seed S]"};
    app.add_option("suite", suiteName, "the suite to run (listed below)");
    app.add_flag("--json", json,
                 "print one JSON object {\"suite\": ..., \"results\": [...]} instead of the table");
    app.add_option("--count", options.count,
                   "problem size, e.g. pairs per class for narrowphase, queries per pass for queries, rays "
                   "per pass for raycast (default: the suite's; scenes, convex_vs_mesh: not read)")
        ->check(CLI::Range(std::int64_t{1}, std::numeric_limits<std::int64_t>::max()));
    app.add_option("--seconds", options.seconds,
                   "scenes: simulated seconds per scene, at 60 steps a second (default: each scene's, "
                   "10 to 60); joints: timed seconds per case after the warm-up (default: 5 for joint_grid, "
                   "10 for ragdolls)")
        ->check(CLI::Range(kMinSceneSeconds, kMaxSceneSeconds));
    app.add_option(
           "--substeps", options.substeps,
           "scenes: Polytope's solver substeps per step (default: WorldConfig's, 4); Bullet keeps its own")
        ->check(CLI::Range(1, 64));
    app.add_option("--repeat", options.repeat,
                   "scenes: passes per engine and scene, in rounds (each engine once, then again), the "
                   "median pass reported with the fastest and slowest steps/s (default 1)")
        ->check(CLI::Range(1, 100));
    app.add_option(
           "--contact-hertz", options.contactHertz,
           "scenes: Polytope's contact stiffness in Hz (default: WorldConfig's, 30; the World caps it at "
           "a quarter of the substep rate)")
        ->check(CLI::Range(0.1, 10000.0));
    app.add_option("--scene", options.scenes,
                   "scenes: run only this scene; queries, convex_vs_mesh, raycast, joints: only this case "
                   "(repeat for several; default: every scene or case of the suite)");
    // Signed, so that "-3" is refused rather than wrapped round.
    std::int64_t seed = static_cast<std::int64_t>(options.seed);
    app.add_option("--seed", seed, "random seed")
        ->capture_default_str()
        ->check(CLI::Range(std::int64_t{1}, std::numeric_limits<std::int64_t>::max()));
    app.footer(suiteList);
    try
    {
        app.parse(argc, argv);
    }
    catch (const CLI::ParseError& e)
    {
        return app.exit(e) == 0 ? 0 : 1;
    }

    options.seed = static_cast<std::uint64_t>(seed);

    const Suite* suite = suiteName.empty() ? nullptr : findSuite(suiteName);
    if (!suite)
    {
        if (!suiteName.empty())
        {
            std::fprintf(stderr, "polytope-bench: unknown suite '%s'\n", suiteName.c_str());
        }
        std::fprintf(stderr,
                     "usage: polytope-bench SUITE [--json] [--count N] [--seconds S] [--scene NAME]... "
                     "[--substeps N] [--contact-hertz H] [--repeat N] [--seed S]\n%s",
                     suiteList.c_str());
        return suiteName.empty() ? 1 : 2;
    }
    Report report(suite->name);
    suite->run(report, options);
    if (json)
    {
        report.printJson(stdout);
    }
    else
    {
        report.printTable(stdout);
    }
    return 0;
}

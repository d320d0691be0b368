// polytope-bench SUITE [--json]: benchmarks, with peers side by side in the same run where a suite has them.
//
// Output: a table for people, or with --json one object {"suite": ..., "results": [...]} whose results are
// flat records: case, impl, n, then figures in snake_case with the unit in the name (ns_median, ...).
#include "bench_common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv)
{
    using namespace polytope::bench;
    std::string suiteName;
    bool json = false;
    SuiteOptions options;
    for (int i = 1; i < argc; ++i)
    {
        if (std::strcmp(argv[i], "--json") == 0)
        {
            json = true;
        }
        else if ((std::strcmp(argv[i], "--count") == 0 || std::strcmp(argv[i], "--seed") == 0) && i + 1 < argc)
        {
            char* end = nullptr;
            const long long value = std::strtoll(argv[i + 1], &end, 10);
            if (!end || *end != '\0' || value <= 0)
            {
                std::fprintf(stderr, "polytope-bench: %s takes a positive whole number, got '%s'\n", argv[i], argv[i + 1]);
                return 1;
            }
            if (std::strcmp(argv[i], "--count") == 0)
            {
                options.count = value;
            }
            else
            {
                options.seed = static_cast<std::uint64_t>(value);
            }
            ++i;
        }
        else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0)
        {
            suiteName.clear();
            break;
        }
        else if (argv[i][0] == '-')
        {
            std::fprintf(stderr, "polytope-bench: unknown option '%s'\n", argv[i]);
            return 1;
        }
        else if (suiteName.empty())
        {
            suiteName = argv[i];
        }
        else
        {
            std::fprintf(stderr, "polytope-bench: one suite at a time ('%s' and '%s')\n", suiteName.c_str(), argv[i]);
            return 1;
        }
    }
    const Suite* suite = suiteName.empty() ? nullptr : findSuite(suiteName);
    if (!suite)
    {
        std::fprintf(stderr, "usage: polytope-bench SUITE [--json] [--count N] [--seed S]\nsuites:\n");
        for (const Suite& s : suites())
        {
            std::fprintf(stderr, "  %-14s %s\n", s.name, s.description);
        }
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

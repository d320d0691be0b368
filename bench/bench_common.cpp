#include "bench_common.h"

#include "polytope/client/json_output.h"

#include <algorithm>
#include <cmath>

namespace polytope::bench
{

void runWorldSuite(Report& report, const SuiteOptions& options);
void runNarrowphaseSuite(Report& report, const SuiteOptions& options);
void runScenesSuite(Report& report, const SuiteOptions& options);
void runBandwidthSuite(Report& report, const SuiteOptions& options);
void runBroadphaseSuite(Report& report, const SuiteOptions& options);
void runQueriesSuite(Report& report, const SuiteOptions& options);
void runConvexVsMeshSuite(Report& report, const SuiteOptions& options);
void runRaycastSuite(Report& report, const SuiteOptions& options);
void runJointsSuite(Report& report, const SuiteOptions& options);

namespace
{
const Suite kSuites[] = {
    {"narrowphase", "box-box and hull-hull queries: Polytope, libccd and Bullet, speed and accuracy",
     &runNarrowphaseSuite},
    {"scenes",
     "stacks, pyramids, Jolt's pyramid, a heavy cube on light ones, piles: Polytope and Bullet, drift, sink, "
     "resting energy, ms per step (60 Hz, no sleep; --seconds S per scene)",
     &runScenesSuite},
    {"world", "World::step on the built-in scenes (ms per step)", &runWorldSuite},
    {"broadphase",
     "BroadphaseTree alone, 1000 and 4000 moving boxes (ms per step: move, new pairs, all pairs)",
     &runBroadphaseSuite},
    {"queries",
     "world rays, sphere casts, overlaps (1000 and 10000 bodies), 1M-triangle mesh and heightfield rays: "
     "Polytope and Bullet, queries per second and agreement",
     &runQueriesSuite},
    {"convex_vs_mesh",
     "Jolt's ConvexVsMesh scene (1764 boxes, spheres, capsules, pyramids on a 20,000-triangle mesh or "
     "heightfield), 500 steps: Polytope and Bullet, steps per second, bodies lost",
     &runConvexVsMeshSuite},
    {"raycast",
     "the ConvexVsMesh scene settled, then rays and sphere casts into it: Polytope and Bullet, queries per "
     "second and agreement of the closest hit",
     &runRaycastSuite},
    {"joints",
     "Box2D's joint_grid in 3D (10,000 spheres, 19,800 ball joints) and a pile of 20 ragdolls: Polytope and "
     "Bullet, steps per second and the largest joint error",
     &runJointsSuite},
    {"bandwidth", "snapshots of Fiedler's 900-cube scene through Server and Client at 5% loss (kbps)",
     &runBandwidthSuite},
};
} // namespace

std::span<const Suite> suites()
{
    return kSuites;
}

const Suite* findSuite(std::string_view name)
{
    for (const Suite& s : kSuites)
    {
        if (name == s.name)
        {
            return &s;
        }
    }
    return nullptr;
}

Record& Report::add(std::string caseName, std::string impl, std::int64_t n)
{
    m_records.push_back({std::move(caseName), std::move(impl), n, {}});
    return m_records.back();
}

namespace
{
void printNumber(std::FILE* out, double v)
{
    if (!std::isfinite(v))
    {
        std::fputs("null", out);
    }
    else if (v == std::floor(v) && std::fabs(v) < 1e15)
    {
        std::fprintf(out, "%.0f", v);
    }
    else
    {
        std::fprintf(out, "%.6g", v);
    }
}
} // namespace

namespace
{
/// A figure as the table prints it: whole numbers as integers, others to 6 significant digits, null when not
/// finite.
nlohmann::ordered_json figureJson(double v)
{
    if (!std::isfinite(v))
    {
        return nullptr;
    }
    if (v == std::floor(v) && std::fabs(v) < 1e15)
    {
        return static_cast<std::int64_t>(v);
    }
    return client::roundedSignificant(v, 6);
}
} // namespace

void Report::printJson(std::FILE* out) const
{
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (const Record& r : m_records)
    {
        nlohmann::ordered_json record;
        record["case"] = r.caseName;
        record["impl"] = r.impl;
        record["n"] = r.n;
        for (const auto& [name, value] : r.figures)
        {
            record[name] = figureJson(value);
        }
        results.push_back(std::move(record));
    }
    nlohmann::ordered_json report;
    report["suite"] = m_suite;
    report["results"] = std::move(results);
    std::fprintf(out, "%s\n", client::jsonText(report).c_str());
}

void Report::printTable(std::FILE* out) const
{
    std::fprintf(out, "suite %s\n", m_suite.c_str());
    for (const Record& r : m_records)
    {
        std::fprintf(out, "%-28s %-10s n=%-8lld", r.caseName.c_str(), r.impl.c_str(),
                     static_cast<long long>(r.n));
        for (const auto& [name, value] : r.figures)
        {
            std::fprintf(out, "  %s=", name.c_str());
            printNumber(out, value);
        }
        std::fputs("\n", out);
    }
}

double median(std::vector<double>& samples)
{
    return quantile(samples, 0.5);
}

double quantile(std::vector<double>& samples, double q)
{
    if (samples.empty())
    {
        return NAN;
    }
    std::sort(samples.begin(), samples.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples.size())));
    return samples[std::min(samples.size() - 1, rank == 0 ? 0 : rank - 1)];
}

} // namespace polytope::bench

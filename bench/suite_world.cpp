// Suite "world": World::step on each built-in scene, 600 steps at 60 Hz after a warm-up.
#include "bench_common.h"

#include "polytope/physics/scenes.h"

namespace polytope::bench
{

void runWorldSuite(Report& report, const SuiteOptions& /*options*/)
{
    constexpr float kDt = 1.0f / 60.0f;
    constexpr int kWarmupSteps = 60;
    constexpr int kSteps = 600;
    for (const physics::SceneInfo& scene : physics::builtinScenes())
    {
        physics::World world;
        if (!scene.build(world))
        {
            continue;
        }
        for (int i = 0; i < kWarmupSteps; ++i)
        {
            world.step(kDt);
        }
        std::vector<double> ms;
        ms.reserve(kSteps);
        for (int i = 0; i < kSteps; ++i)
        {
            const auto start = Clock::now();
            world.step(kDt);
            ms.push_back(secondsSince(start) * 1e3);
        }
        double sum = 0.0;
        for (double v : ms)
        {
            sum += v;
        }
        const double mean = sum / static_cast<double>(ms.size());
        report.add(std::string(scene.name), "polytope", world.bodyCount())
            .add("ms_per_step_mean", mean)
            .add("ms_per_step_median", median(ms))
            .add("ms_per_step_p99", quantile(ms, 0.99));
    }
}

} // namespace polytope::bench

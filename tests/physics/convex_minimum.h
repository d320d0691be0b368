// The minimum of a convex function of one variable by golden-section search, in double: the oracle of the
// tests that minimise a distance along a segment or over time, defined once.
#pragma once

#include <cmath>

namespace physics_test
{

/// Where golden-section search left the minimum, and the function's value there.
struct ConvexMinimum
{
    double x = 0.0;
    double value = 0.0;
};

/// The minimum of `f` (convex on [lo, hi]) by `iterations` golden-section steps: the better of the last two
/// probes, each inside the interval (the ends are not probed; callers that need them compare them).
template <class F> ConvexMinimum minimiseConvex(F f, double lo, double hi, int iterations)
{
    const double ratio = (std::sqrt(5.0) - 1.0) / 2.0;
    double x1 = hi - ratio * (hi - lo);
    double x2 = lo + ratio * (hi - lo);
    double f1 = f(x1);
    double f2 = f(x2);
    for (int i = 0; i < iterations; ++i)
    {
        if (f1 < f2)
        {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - ratio * (hi - lo);
            f1 = f(x1);
        }
        else
        {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + ratio * (hi - lo);
            f2 = f(x2);
        }
    }
    return f1 < f2 ? ConvexMinimum{x1, f1} : ConvexMinimum{x2, f2};
}

} // namespace physics_test

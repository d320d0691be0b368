#include "polytope/client/json_output.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace polytope::client
{

std::string jsonText(const nlohmann::ordered_json& value)
{
    return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

double roundedDecimals(double value, int decimals)
{
    if (!std::isfinite(value))
    {
        return value;
    }
    char text[400]; // "%.*f" of the largest double has 309 digits before the point
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return std::strtod(text, nullptr);
}

double roundedSignificant(double value, int digits)
{
    if (!std::isfinite(value))
    {
        return value;
    }
    char text[64];
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    return std::strtod(text, nullptr);
}

double shortestFloat(float value)
{
    if (!std::isfinite(value))
    {
        return static_cast<double>(value);
    }
    char text[32];
    const auto written = std::to_chars(text, text + sizeof text, value);
    double widened = static_cast<double>(value);
    std::from_chars(text, written.ptr, widened);
    return widened;
}

} // namespace polytope::client

// Polytope client library: the JSON the tools print (--json), built with nlohmann-json.
//
// Objects are nlohmann::ordered_json so that keys come out in the order they were added, as a reader of
// the output expects (tick before bodies, case before figures). Numbers keep the precision the tools have
// always printed: a value is rounded as printf would have shown it, then written in its shortest form
// (nlohmann-json's dump writes the shortest decimal that reads back as the same double).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace polytope::client
{

/// One line of compact JSON, without a newline. Bytes that are not valid UTF-8 (in a name a server sent)
/// are replaced by U+FFFD rather than thrown over; every other string is escaped as JSON requires.
std::string jsonText(const nlohmann::ordered_json& value);

/// `value` rounded to `decimals` places after the point, as printf("%.*f") rounds it. Values that are not
/// finite come back as they are (nlohmann-json writes them as null).
double roundedDecimals(double value, int decimals);
/// `value` rounded to `digits` significant digits, as printf("%.*g") rounds it.
double roundedSignificant(double value, int digits);
/// A float widened so that its JSON is the float's shortest form (0.1f gives 0.1, not 0.10000000149011612);
/// it still reads back as exactly the same float.
double shortestFloat(float value);

} // namespace polytope::client

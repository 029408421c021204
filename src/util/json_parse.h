// JSON from files and flags: parsed with a nesting limit, and described in error messages without
// printing it whole. nlohmann's parser is iterative but dump() recurses, so an input nested
// 100,000 deep would overflow the stack in an error message; no gattn file nests beyond a few
// levels.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gattn {

constexpr int kMaxJsonDepth = 64;

// An Error "<origin>: not valid JSON (...)" for bad syntax, nesting deeper than kMaxJsonDepth or a
// key that appears twice in one object.
nlohmann::json parse_json_text(std::string_view text, const std::string& origin);
nlohmann::json parse_json_file(const std::string& path);

// A short, non-recursive description for error messages: a scalar as written (long strings cut),
// a container by its type and size, e.g. `array of 3 elements`.
std::string json_summary(const nlohmann::json& value);

}  // namespace gattn

#include "util/json_parse.h"

#include <set>
#include <vector>

#include "io/file.h"
#include "util/error.h"

namespace gattn {

namespace {
// The deepest nesting of arrays and objects outside strings, up to the first byte past the limit.
void check_depth(std::string_view text, const std::string& origin) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        fail(origin, ": not valid JSON (arrays and objects nested deeper than ", kMaxJsonDepth,
             " levels at byte ", i, ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}
}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& origin) {
  check_depth(text, origin);
  // nlohmann keeps the last of two equal keys where other parsers keep the first or refuse: a file
  // that two readers would read differently is refused.
  std::vector<std::set<std::string>> keys;
  const auto reject_duplicate_keys = [&](int, nlohmann::json::parse_event_t event,
                                         nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) keys.emplace_back();
    if (event == Event::object_end) keys.pop_back();
    if (event == Event::key && !keys.back().insert(parsed.get<std::string>()).second)
      fail(origin, ": not valid JSON (key '", parsed.get<std::string>(),
           "' appears twice in one object)");
    return true;
  };
  try {
    return nlohmann::json::parse(text, reject_duplicate_keys);
  } catch (const nlohmann::json::exception& e) {
    fail(origin, ": not valid JSON (", e.what(), ")");
  }
}

nlohmann::json parse_json_file(const std::string& path) {
  return parse_json_text(read_text_file(path), path);
}

std::string json_summary(const nlohmann::json& value) {
  const auto count = [](size_t n, const char* noun) {
    return cat(n, " ", noun, n == 1 ? "" : "s");
  };
  if (value.is_array()) return "array of " + count(value.size(), "element");
  if (value.is_object()) return "object of " + count(value.size(), "field");
  std::string text = value.dump();  // a scalar: no recursion
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

}  // namespace gattn

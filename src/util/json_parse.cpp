#include "util/json_parse.h"

#include <unordered_set>
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

// A first pass over the text that refuses a key twice in one object. (nlohmann's parse callback
// could do it in the same pass, but its DOM builder then scans the parent object at the end of
// every child object: quadratic in a safetensors header's tensor count, minutes at 70k.)
class DuplicateKeys final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit DuplicateKeys(const std::string& origin) : origin_(origin) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (!keys_.back().insert(key).second)
      fail(origin_, ": not valid JSON (key '", key, "' appears twice in one object)");
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) override {
    fail(origin_, ": not valid JSON (", e.what(), ")");
  }

 private:
  const std::string& origin_;
  std::vector<std::unordered_set<std::string>> keys_;
};
}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& origin) {
  check_depth(text, origin);
  // nlohmann keeps the last of two equal keys where other parsers keep the first or refuse: a file
  // that two readers would read differently is refused.
  DuplicateKeys duplicates(origin);
  nlohmann::json::sax_parse(text, &duplicates);
  try {
    return nlohmann::json::parse(text);
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

// Reads the typed fields of one JSON object for a config loader, remembering which were given,
// and turns every mistake into an Error naming the source, the field, what was expected and
// what was found. Absent (or null) fields leave the output untouched: it holds the default.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace gattn {

class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string where);

  bool has(const char* name) const;
  [[noreturn]] void bad(const std::string& name, const std::string& expected) const;

  void read(const char* name, int& out);                     // a positive integer
  void read(const char* name, int64_t& out);                 // a positive integer
  void read_count(const char* name, int& out);               // a non-negative integer
  void read_in(const char* name, int& out, int lo, int hi);  // an integer in [lo, hi]
  void read(const char* name, double& out);                  // a positive finite number
  // A finite number in [lo, hi] (or [lo, hi) when hi_open).
  void read_in(const char* name, double& out, double lo, double hi, bool hi_open = false);
  void read(const char* name, bool& out);
  void read(const char* name, std::string& out);
  void read(const char* name, std::vector<std::string>& out);
  template <typename Enum>
  void read(const char* name, Enum& out, const std::map<std::string, Enum>& values) {
    if (!mark(name)) return;
    const nlohmann::json& v = object_.at(name);
    std::string choices;
    for (const auto& [key, value] : values) choices += (choices.empty() ? "" : " | ") + key;
    if (!v.is_string() || !values.count(v.get<std::string>())) bad(name, "one of " + choices);
    out = values.at(v.get<std::string>());
  }
  // The nested value, or null when absent; the caller parses it.
  const nlohmann::json* value(const char* name);
  void ignore(const char* name) { mark(name); }
  void reject_unknown() const;              // every field not read is unknown
  std::vector<std::string> unread() const;  // the fields not read (nor ignored) so far
  const std::string& where() const { return where_; }

 private:
  bool mark(const char* name);
  const nlohmann::json& object_;
  std::string where_;
  std::set<std::string> seen_;
};

template <typename Enum>
std::string name_of(const std::map<std::string, Enum>& values, Enum value) {
  for (const auto& [key, v] : values)
    if (v == value) return key;
  return "?";
}

}  // namespace gattn

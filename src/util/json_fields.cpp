#include "util/json_fields.h"

#include <cmath>

#include "util/error.h"
#include "util/json_parse.h"

namespace gattn {

using json = nlohmann::json;

JsonFields::JsonFields(const json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object.is_object()) fail(where_, ": expected a JSON object, found ", object.type_name());
}

bool JsonFields::has(const char* name) const {
  return object_.contains(name) && !object_.at(name).is_null();
}

void JsonFields::bad(const std::string& name, const std::string& expected) const {
  fail(where_, ": field '", name, "': expected ", expected, ", found ",
       object_.contains(name) ? json_summary(object_.at(name)) : "nothing");
}

bool JsonFields::mark(const char* name) {
  seen_.insert(name);
  return has(name);
}

void JsonFields::read(const char* name, int& out) {
  int64_t wide = out;
  read(name, wide);
  if (wide > (int64_t(1) << 30)) bad(name, "an integer up to 2^30");
  out = int(wide);
}

void JsonFields::read(const char* name, int64_t& out) {
  if (!mark(name)) return;
  const json& v = object_.at(name);
  if (!v.is_number_integer() || v.get<int64_t>() < 1) bad(name, "a positive integer");
  out = v.get<int64_t>();
}

void JsonFields::read_count(const char* name, int& out) {
  if (!mark(name)) return;
  const json& v = object_.at(name);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t(1) << 30))
    bad(name, "a non-negative integer");
  out = v.get<int>();
}

void JsonFields::read_in(const char* name, int& out, int lo, int hi) {
  if (!mark(name)) return;
  const json& v = object_.at(name);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    bad(name, cat("an integer in [", lo, ", ", hi, "]"));
  out = v.get<int>();
}

void JsonFields::read(const char* name, double& out) {
  if (!mark(name)) return;
  const json& v = object_.at(name);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    bad(name, "a positive number");
  out = v.get<double>();
}

void JsonFields::read_in(const char* name, double& out, double lo, double hi, bool hi_open) {
  if (!mark(name)) return;
  const json& v = object_.at(name);
  const bool ok = v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= lo &&
                  (hi_open ? v.get<double>() < hi : v.get<double>() <= hi);
  if (!ok) bad(name, cat("a number in [", lo, ", ", hi, hi_open ? ")" : "]"));
  out = v.get<double>();
}

void JsonFields::read(const char* name, bool& out) {
  if (!mark(name)) return;
  if (!object_.at(name).is_boolean()) bad(name, "true or false");
  out = object_.at(name).get<bool>();
}

void JsonFields::read(const char* name, std::string& out) {
  if (!mark(name)) return;
  if (!object_.at(name).is_string()) bad(name, "a string");
  out = object_.at(name).get<std::string>();
}

void JsonFields::read(const char* name, std::vector<std::string>& out) {
  if (!mark(name)) return;
  const json& v = object_.at(name);
  if (!v.is_array()) bad(name, "an array of strings");
  out.clear();
  for (const json& s : v) {
    if (!s.is_string()) bad(name, "an array of strings");
    out.push_back(s.get<std::string>());
  }
}

const json* JsonFields::value(const char* name) { return mark(name) ? &object_.at(name) : nullptr; }

void JsonFields::reject_unknown() const {
  for (const auto& [key, value] : object_.items())
    if (!seen_.count(key)) fail(where_, ": unknown field '", key, "'");
}

std::vector<std::string> JsonFields::unread() const {
  std::vector<std::string> names;
  for (const auto& [key, value] : object_.items())
    if (!seen_.count(key)) names.push_back(key);
  return names;
}

}  // namespace gattn

#include "infer/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "util/error.h"

namespace gattn::jinja {

namespace {
// Python's repr() of a float: the shortest digits that read back, fixed notation for exponents
// in [-4, 16), else d.ddde+XX.
std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  GATTN_ASSERT(ec == std::errc());
  const std::string sci(buf, end);  // -d.ddde+XX
  const size_t e = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t i = negative; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(size_t(-exponent - 1), '0') + digits;
    } else {
      if (digits.size() < size_t(exponent + 1)) digits.resize(size_t(exponent + 1), '0');
      out += digits.substr(0, size_t(exponent + 1)) + ".";
      const std::string rest = digits.substr(size_t(exponent + 1));
      out += rest.empty() ? "0" : rest;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp;
}

// A JSON string as json.dumps(ensure_ascii=False) writes it.
void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
          out += esc;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string python_string_repr(const std::string& s) {
  const bool double_quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = double_quote ? '"' : '\'';
  std::string out(1, q);
  for (const char c : s) {
    if (c == q || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + q;
}

void to_json(const Value& v, int indent, int depth, std::string& out) {
  const auto newline = [&](int d) {
    if (indent > 0) out += "\n" + std::string(size_t(indent * d), ' ');
  };
  const char* comma = indent > 0 ? "," : ", ";
  switch (v.kind()) {
    case Value::Kind::none:
      out += "null";
      return;
    case Value::Kind::boolean:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::integer:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::number: {
      const double d = v.as_double();
      out += std::isnan(d)   ? "NaN"
             : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                             : python_float(d);
      return;
    }
    case Value::Kind::string:
      json_string(v.str(), out);
      return;
    case Value::Kind::list:
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += comma;
        newline(depth + 1);
        to_json(v.items()[i], indent, depth + 1, out);
      }
      if (!v.items().empty()) newline(depth);
      out += ']';
      return;
    case Value::Kind::dict:
    case Value::Kind::ns: {
      const auto& items = v.entries().items;
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += comma;
        newline(depth + 1);
        json_string(items[i].first, out);
        out += ": ";
        to_json(items[i].second, indent, depth + 1, out);
      }
      if (!items.empty()) newline(depth);
      out += '}';
      return;
    }
    case Value::Kind::undefined:
    case Value::Kind::function:
      fail("tojson: a value of type ", v.kind_name(), " is not JSON");
  }
}
}  // namespace

Text Text::from_data(std::string s) {
  Text t{.s = std::move(s), .data = {}};
  if (!t.s.empty()) t.data.push_back({0, t.s.size()});
  return t;
}

void Text::append(const Text& t) {
  const size_t offset = s.size();
  s += t.s;
  for (const DataSpan& d : t.data) {
    if (!data.empty() && data.back().end == offset + d.begin) {
      data.back().end = offset + d.end;
    } else {
      data.push_back({offset + d.begin, offset + d.end});
    }
  }
}

Text Text::substr(size_t pos, size_t n) const {
  pos = std::min(pos, s.size());
  const size_t end = n == std::string::npos ? s.size() : std::min(s.size(), pos + n);
  Text t{.s = s.substr(pos, end - pos), .data = {}};
  for (const DataSpan& d : data) {
    const size_t b = std::max(d.begin, pos), e = std::min(d.end, end);
    if (b < e) t.data.push_back({b - pos, e - pos});
  }
  return t;
}

bool Text::is_data(size_t i) const {
  const auto it = std::upper_bound(data.begin(), data.end(), i,
                                   [](size_t x, const DataSpan& d) { return x < d.end; });
  return it != data.end() && it->begin <= i;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, old] : items)
    if (k == key) {
      old = std::move(v);
      return;
    }
  items.emplace_back(key, std::move(v));
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::none;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::boolean;
  v.b_ = b;
  v.i_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::integer;
  v.i_ = i;
  return v;
}
Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::number;
  v.d_ = d;
  return v;
}
Value Value::string(Text t) {
  Value v;
  v.kind_ = Kind::string;
  v.text_ = std::move(t);
  return v;
}
void Value::set_depth(int children_depth) {
  depth_ = children_depth + 1;
  if (depth_ > kMaxValueDepth)
    fail("values nested deeper than ", kMaxValueDepth, " lists or dicts");
}
Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::list;
  int deepest = 0;
  for (const Value& x : items) deepest = std::max(deepest, x.depth_);
  v.set_depth(deepest);
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}
Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::dict;
  int deepest = 0;
  for (const auto& [k, x] : d.items) deepest = std::max(deepest, x.depth_);
  v.set_depth(deepest);
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}
bool Value::holds_namespace() const {
  if (kind_ == Kind::ns) return true;
  if (kind_ == Kind::list)
    return std::any_of(list_->begin(), list_->end(),
                       [](const Value& x) { return x.holds_namespace(); });
  if (kind_ == Kind::dict)
    return std::any_of(dict_->items.begin(), dict_->items.end(),
                       [](const auto& kv) { return kv.second.holds_namespace(); });
  return false;
}
Value Value::ns(Dict d) {
  Value v = dict(std::move(d));
  v.kind_ = Kind::ns;
  return v;
}
Value Value::function(Function f) {
  Value v;
  v.kind_ = Kind::function;
  v.fn_ = std::make_shared<const Function>(std::move(f));
  return v;
}

Value Value::from_json(const nlohmann::json& j) { return any_json(j); }
Value Value::from_json(const nlohmann::ordered_json& j) { return any_json(j); }

template <typename Json>
Value Value::any_json(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return none();
    case nlohmann::json::value_t::boolean:
      return boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return j.template get<uint64_t>() > uint64_t(INT64_MAX)
                 ? number(j.template get<double>())
                 : integer(int64_t(j.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float:
      return number(j.template get<double>());
    case nlohmann::json::value_t::string:
      return string(Text::from_data(j.template get<std::string>()));
    case nlohmann::json::value_t::array: {
      List items;
      for (const auto& x : j) items.push_back(any_json(x));
      return list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (const auto& [k, x] : j.items()) d.items.emplace_back(k, any_json(x));
      return dict(std::move(d));
    }
    default:
      fail("a JSON value of type ", j.type_name(), " cannot be a template's data");
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::undefined:
    case Kind::none:
      return false;
    case Kind::boolean:
      return b_;
    case Kind::integer:
      return i_ != 0;
    case Kind::number:
      return d_ != 0;
    case Kind::string:
      return !text_.s.empty();
    case Kind::list:
      return !list_->empty();
    case Kind::dict:
      return !dict_->items.empty();
    case Kind::ns:
    case Kind::function:
      return true;
  }
  return false;
}

double Value::as_double() const { return kind_ == Kind::number ? d_ : double(i_); }

Text Value::to_text() const {
  switch (kind_) {
    case Kind::undefined:
      return {};
    case Kind::string:
      return text_;
    case Kind::none:
      return {.s = "None", .data = {}};
    case Kind::boolean:
      return {.s = b_ ? "True" : "False", .data = {}};
    case Kind::integer:
      return {.s = std::to_string(i_), .data = {}};
    case Kind::number:
      return {.s = python_float(d_), .data = {}};
    default: {
      // A container's text holds data's strings: all of it counts as data.
      std::string s = repr();
      return list_ || dict_ ? Text::from_data(std::move(s)) : Text{.s = std::move(s), .data = {}};
    }
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::string:
      return python_string_repr(text_.s);
    case Kind::list: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
      return out + "]";
    }
    case Kind::dict: {
      std::string out = "{";
      for (size_t i = 0; i < dict_->items.size(); ++i)
        out += (i ? ", " : "") + python_string_repr(dict_->items[i].first) + ": " +
               dict_->items[i].second.repr();
      return out + "}";
    }
    case Kind::ns:
      return "<Namespace>";
    case Kind::function:
      return "<function>";
    default:
      return to_text().s;
  }
}

std::string Value::to_json(int indent) const {
  std::string out;
  jinja::to_json(*this, indent, 0, out);
  return out;
}

const char* Value::kind_name() const {
  switch (kind_) {
    case Kind::undefined:
      return "undefined";
    case Kind::none:
      return "none";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::number:
      return "float";
    case Kind::string:
      return "string";
    case Kind::list:
      return "list";
    case Kind::dict:
      return "dict";
    case Kind::ns:
      return "namespace";
    case Kind::function:
      return "function";
  }
  return "?";
}

bool equal(const Value& a, const Value& b) {
  if (a.is_numeric() && b.is_numeric()) {
    if (a.is(Value::Kind::number) || b.is(Value::Kind::number))
      return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none:
      return true;
    case Value::Kind::string:
      return a.str() == b.str();
    case Value::Kind::list:
      return a.items().size() == b.items().size() &&
             std::equal(a.items().begin(), a.items().end(), b.items().begin(), equal);
    case Value::Kind::dict: {
      const auto& x = a.entries().items;
      if (x.size() != b.entries().items.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* other = b.entries().find(k);
        if (!other || !equal(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::ns:
      return &a.entries() == &b.entries();
    default:
      return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_numeric() && b.is_numeric()) {
    if (a.is(Value::Kind::number) || b.is(Value::Kind::number))
      return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  fail("'<' is not supported between ", a.kind_name(), " and ", b.kind_name());
}

}  // namespace gattn::jinja

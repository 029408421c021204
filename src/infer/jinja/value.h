// The values a chat template computes with: Python's types as Jinja sees them (undefined, None,
// bool, int, float, str, list, dict), a namespace() object, and callables (macros, builtins).
// Strings remember which of their bytes came from the caller's data (a message's content) rather
// than from the template's own literals, so that a message that writes "<|im_end|>" can be
// kept from becoming a control token (chat_format.h).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gattn::jinja {

// A run of bytes [begin, end) of a string that came from data.
struct DataSpan {
  size_t begin = 0, end = 0;
};

// A string and the spans of it that came from data (sorted, disjoint, not empty).
struct Text {
  std::string s;
  std::vector<DataSpan> data;

  // All of `s` came from data.
  static Text from_data(std::string s);
  void append(const Text& t);
  void append(std::string_view literal) { s += literal; }
  // The bytes [pos, pos + n), with their spans.
  Text substr(size_t pos, size_t n = std::string::npos) const;
  bool any_data() const { return !data.empty(); }
  // Whether byte i came from data.
  bool is_data(size_t i) const;
};

class Value;
using List = std::vector<Value>;
struct Dict {
  std::vector<std::pair<std::string, Value>> items;  // in insertion order, as Python's dict
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value v);
};
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
};
using Function = std::function<Value(CallArgs&)>;

inline constexpr int kMaxValueDepth = 64;  // lists and dicts nested deeper are an Error

class Value {
 public:
  enum class Kind { undefined, none, boolean, integer, number, string, list, dict, ns, function };

  Value() = default;  // undefined
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(Text t);
  static Value literal(std::string s) { return string({.s = std::move(s), .data = {}}); }
  static Value list(List items);
  static Value dict(Dict d);
  static Value ns(Dict d);  // namespace(): a dict whose attributes a template may set
  static Value function(Function f);
  // JSON data: every string in it counts as data. ordered_json keeps a dict's order (tojson).
  static Value from_json(const nlohmann::json& j);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is(Kind k) const { return kind_ == k; }
  bool is_undefined() const { return kind_ == Kind::undefined; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_numeric() const {
    return kind_ == Kind::integer || kind_ == Kind::number || kind_ == Kind::boolean;
  }
  bool truthy() const;

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_double() const;  // integer, number or boolean
  const Text& text() const { return text_; }
  const std::string& str() const { return text_.s; }
  const List& items() const { return *list_; }
  const Dict& entries() const { return *dict_; }
  Dict& ns_entries() const { return *dict_; }
  const Function& fn() const { return *fn_; }
  // How deeply lists and dicts nest in this value (0 for a scalar).
  int depth() const { return depth_; }
  // Whether a namespace() is in this value, itself or inside a list or dict.
  bool holds_namespace() const;

  // What Python's str() gives (None, True, 1.5, ['a', 1], {'k': 'v'}); undefined is "".
  Text to_text() const;
  // Python's repr(): strings quoted.
  std::string repr() const;
  // json.dumps(ensure_ascii=False) as Hugging Face's tojson filter calls it: separators ", " and
  // ": ", or with indent > 0 one item per line. An Error for an undefined value or a function.
  std::string to_json(int indent = -1) const;
  // The kind's name as a message shows it (undefined, none, bool, int, float, string, ...).
  const char* kind_name() const;

 private:
  void set_depth(int children_depth);
  template <typename Json>
  static Value any_json(const Json& j);

  Kind kind_ = Kind::undefined;
  int depth_ = 0;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  Text text_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Function> fn_;
};

// Python's == between values (1 == 1.0 == True; lists and dicts compared item by item).
bool equal(const Value& a, const Value& b);
// Python's < between two numbers or two strings; an Error otherwise.
bool less(const Value& a, const Value& b);

}  // namespace gattn::jinja

#include "infer/jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "infer/jinja/template.h"
#include "infer/jinja/text_ops.h"
#include "util/error.h"

namespace gattn::jinja {

namespace {
constexpr size_t kMaxItems = size_t(1) << 20;  // the longest list a template may build

// The arguments of one call, taken by position or name; unknown or extra ones are Errors.
class Args {
 public:
  Args(CallArgs& a, const std::string& where, const char* what)
      : a_(a), where_(where), what_(what) {}
  // The i-th parameter, `name`: positional or named; undefined when absent.
  Value get(size_t i, std::string_view name) {
    ++expected_;
    for (auto& [k, v] : a_.named)
      if (k == name) {
        if (i < a_.positional.size()) fail(where_, ": ", what_, " got '", name, "' twice");
        used_names_++;
        return v;
      }
    return i < a_.positional.size() ? a_.positional[i] : Value();
  }
  std::string text(size_t i, std::string_view name, std::string fallback) {
    const Value v = get(i, name);
    if (v.is_undefined() || v.is(Value::Kind::none)) return fallback;
    if (!v.is_string())
      fail(where_, ": ", what_, "'s '", name, "' must be a string, got ", v.kind_name());
    return v.str();
  }
  int64_t integer(size_t i, std::string_view name, int64_t fallback) {
    const Value v = get(i, name);
    if (v.is_undefined() || v.is(Value::Kind::none)) return fallback;
    if (!v.is(Value::Kind::integer) && !v.is(Value::Kind::boolean))
      fail(where_, ": ", what_, "'s '", name, "' must be an integer, got ", v.kind_name());
    return v.as_int();
  }
  // After the last get(): no argument was left unread.
  void done() const {
    if (a_.positional.size() > expected_ || a_.named.size() > used_names_)
      fail(where_, ": ", what_, " got more arguments than it takes");
  }

 private:
  CallArgs& a_;
  const std::string& where_;
  const char* what_;
  size_t expected_ = 0, used_names_ = 0;
};

const std::string& want_string(const Value& v, const std::string& where, const char* what) {
  if (!v.is_string()) fail(where, ": ", what, " needs a string, got ", v.kind_name());
  return v.str();
}

Value bounded_list(List items, const std::string& where) {
  if (items.size() > kMaxItems) fail(where, ": a list longer than ", kMaxItems, " items");
  return Value::list(std::move(items));
}
Value bounded_text(Text t, const std::string& where) {
  if (t.s.size() > kMaxOutputBytes)
    fail(where, ": a string longer than ", kMaxOutputBytes, " bytes");
  return Value::string(std::move(t));
}

Value key_text(const std::string& key) { return Value::string(Text::from_data(key)); }

List dict_items(const Value& d) {
  List out;
  for (const auto& [k, v] : d.entries().items) out.push_back(Value::list({key_text(k), v}));
  return out;
}

// --- str methods ----------------------------------------------------------------------------

Value split_method(const Value& self, CallArgs& call, const std::string& where, bool from_right) {
  Args a(call, where, from_right ? "rsplit" : "split");
  const Value sep = a.get(0, "sep");
  const int64_t max_split = a.integer(1, "maxsplit", -1);
  a.done();
  if (!sep.is_undefined() && !sep.is(Value::Kind::none) && !sep.is_string())
    fail(where, ": split's separator must be a string");
  const bool whitespace = !sep.is_string();
  if (!whitespace && sep.str().empty()) fail(where, ": split's separator is empty");
  List parts;
  for (const Text& t :
       split_text(self.text(), whitespace ? nullptr : &sep.str(), max_split, from_right))
    parts.push_back(Value::string(t));
  return bounded_list(std::move(parts), where);
}

Value strip_method(const Value& self, CallArgs& call, const std::string& where, StripSide side) {
  Args a(call, where, "strip");
  const Value chars = a.get(0, "chars");
  a.done();
  if (!chars.is_undefined() && !chars.is(Value::Kind::none) && !chars.is_string())
    fail(where, ": strip's characters must be a string");
  return Value::string(strip_text(self.text(), chars.is_string() ? &chars.str() : nullptr, side));
}

Value affix_method(const Value& self, CallArgs& call, const std::string& where, bool prefix) {
  Args a(call, where, prefix ? "startswith" : "endswith");
  const Value affix = a.get(0, "prefix");
  a.done();
  const std::string& s = self.str();
  const auto matches = [&](const Value& v) {
    const std::string& x = want_string(v, where, prefix ? "startswith" : "endswith");
    return s.size() >= x.size() && (prefix ? s.compare(0, x.size(), x) == 0
                                           : s.compare(s.size() - x.size(), x.size(), x) == 0);
  };
  if (affix.is(Value::Kind::list))
    return Value::boolean(std::any_of(affix.items().begin(), affix.items().end(), matches));
  return Value::boolean(matches(affix));
}

Value replace_text(const Value& self, const Value& from, const Value& to, int64_t count,
                   const std::string& where) {
  const std::string& old = want_string(from, where, "replace");
  const Text& with = to.is_string() ? to.text() : to.to_text();
  return bounded_text(replace_all(self.text(), old, with, count, kMaxOutputBytes, where), where);
}

Value join_text(const Value& separator, const Value& items, const std::string& attribute,
                const std::string& where) {
  Text out;
  bool first = true;
  for (const Value& v : iterate(items, where)) {
    if (!first) out.append(separator.to_text());
    first = false;
    const Value x = attribute.empty() ? v : item(v, Value::literal(attribute), where);
    out.append(x.to_text());
    if (out.s.size() > kMaxOutputBytes) fail(where, ": join made a string too long");
  }
  return Value::string(std::move(out));
}

Value string_method(const Value& self, const std::string& name, const std::string& where) {
  const auto bind = [&](auto f) {
    return Value::function([self, where, f](CallArgs& call) { return f(self, call, where); });
  };
  const auto no_args = [&](auto f) {
    return bind([f](const Value& s, CallArgs& call, const std::string& w) {
      Args(call, w, "this method").done();
      return f(s);
    });
  };
  if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    return bind([prefix](const Value& s, CallArgs& c, const std::string& w) {
      return affix_method(s, c, w, prefix);
    });
  }
  if (name == "split" || name == "rsplit") {
    const bool right = name == "rsplit";
    return bind([right](const Value& s, CallArgs& c, const std::string& w) {
      return split_method(s, c, w, right);
    });
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const StripSide side = name == "strip"    ? StripSide::both
                           : name == "lstrip" ? StripSide::left
                                              : StripSide::right;
    return bind([side](const Value& s, CallArgs& c, const std::string& w) {
      return strip_method(s, c, w, side);
    });
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    const CaseChange change = name == "upper"   ? CaseChange::upper
                              : name == "lower" ? CaseChange::lower
                              : name == "title" ? CaseChange::title
                                                : CaseChange::capitalize;
    return no_args(
        [change](const Value& s) { return Value::string(change_case(s.text(), change)); });
  }
  if (name == "replace")
    return bind([](const Value& s, CallArgs& c, const std::string& w) {
      Args a(c, w, "replace");
      const Value from = a.get(0, "old"), to = a.get(1, "new");
      const int64_t count = a.integer(2, "count", -1);
      a.done();
      return replace_text(s, from, to, count, w);
    });
  if (name == "find" || name == "count")
    return bind([name](const Value& s, CallArgs& c, const std::string& w) {
      Args a(c, w, name == "find" ? "find" : "count");
      const Value sub_value = a.get(0, "sub");
      const std::string& sub = want_string(sub_value, w, "find");
      a.done();
      return Value::integer(name == "find" ? find_chars(s.str(), sub) : count_text(s.str(), sub));
    });
  if (name == "join")
    return bind([](const Value& s, CallArgs& c, const std::string& w) {
      Args a(c, w, "join");
      const Value items = a.get(0, "iterable");
      a.done();
      return join_text(s, items, "", w);
    });
  return Value();
}

Value dict_method(const Value& self, const std::string& name, const std::string& where) {
  const auto bind = [&](auto f) {
    return Value::function([self, where, f](CallArgs& call) { return f(self, call, where); });
  };
  if (name == "items" || name == "keys" || name == "values")
    return bind([name](const Value& d, CallArgs& c, const std::string& w) {
      Args(c, w, "this method").done();
      List out;
      for (const auto& [k, v] : d.entries().items)
        out.push_back(name == "items"  ? Value::list({key_text(k), v})
                      : name == "keys" ? key_text(k)
                                       : v);
      return Value::list(std::move(out));
    });
  if (name == "get")
    return bind([](const Value& d, CallArgs& c, const std::string& w) {
      Args a(c, w, "get");
      const Value key_value = a.get(0, "key");
      const std::string& key = want_string(key_value, w, "get");
      const Value fallback = a.get(1, "default");
      a.done();
      const Value* v = d.entries().find(key);
      return v ? *v : fallback.is_undefined() ? Value::none() : fallback;
    });
  return Value();
}

// --- filters ---------------------------------------------------------------------------------

size_t length_of(const Value& v, const std::string& where) {
  switch (v.kind()) {
    case Value::Kind::undefined:
      return 0;
    case Value::Kind::string:
      return count_chars(v.str());
    case Value::Kind::list:
      return v.items().size();
    case Value::Kind::dict:
      return v.entries().items.size();
    default:
      fail(where, ": length of a value of type ", v.kind_name());
  }
}

Value to_number(const Value& v, bool integer, const Value& fallback) {
  if (v.is_numeric())
    return integer ? Value::integer(v.is(Value::Kind::number) ? int64_t(v.as_double()) : v.as_int())
                   : Value::number(v.as_double());
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string s = strip_text(v.text(), nullptr, StripSide::both).s;
      if (integer) {
        const int64_t x = std::stoll(s, &used, 10);
        if (used == s.size()) return Value::integer(x);
      } else {
        const double x = std::stod(s, &used);
        if (used == s.size()) return Value::number(x);
      }
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

// select / reject / selectattr / rejectattr: the items for which the test (default: truthy)
// holds, or does not.
Value select_items(const Value& input, CallArgs& call, const std::string& where, bool keep,
                   bool by_attribute) {
  CallArgs rest;
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (call.positional.empty()) fail(where, ": selectattr needs an attribute");
    attribute = want_string(call.positional[next++], where, "selectattr");
  }
  std::string test;
  if (next < call.positional.size()) test = want_string(call.positional[next++], where, "select");
  rest.positional.assign(call.positional.begin() + std::ptrdiff_t(next), call.positional.end());
  rest.named = call.named;
  List out;
  for (const Value& v : iterate(input, where)) {
    const Value x = by_attribute ? item(v, Value::literal(attribute), where) : v;
    CallArgs args = rest;
    const bool pass = test.empty() ? x.truthy() : apply_test(test, x, args, where);
    if (pass == keep) out.push_back(v);
  }
  return Value::list(std::move(out));
}

Value map_items(const Value& input, CallArgs& call, const std::string& where) {
  for (const auto& [k, v] : call.named)
    if (k == "attribute") {
      const Value fallback = [&] {
        for (const auto& [k2, v2] : call.named)
          if (k2 == "default") return v2;
        return Value();
      }();
      List out;
      for (const Value& x : iterate(input, where)) {
        Value got = item(x, v, where);
        out.push_back(got.is_undefined() ? fallback : got);
      }
      return Value::list(std::move(out));
    }
  if (call.positional.empty()) fail(where, ": map needs a filter name or attribute=");
  const std::string filter = want_string(call.positional[0], where, "map");
  CallArgs rest{.positional = {call.positional.begin() + 1, call.positional.end()},
                .named = call.named};
  List out;
  for (const Value& x : iterate(input, where)) {
    CallArgs args = rest;
    out.push_back(apply_filter(filter, x, args, where));
  }
  return Value::list(std::move(out));
}

Value first_or_last(const Value& input, bool first, const std::string& where) {
  const List items = iterate(input, where);
  if (items.empty()) return Value();
  return first ? items.front() : items.back();
}
// + - * / // % ** with Python's semantics for ints (overflow is an Error), floats, strings and
// lists.
Value arithmetic(const std::string& op, const Value& a, const Value& b, const std::string& where) {
  if (op == "+" && a.is_string() && b.is_string()) {
    Text t = a.text();
    t.append(b.text());
    return bounded_text(std::move(t), where);
  }
  if (op == "+" && a.is(Value::Kind::list) && b.is(Value::Kind::list)) {
    List items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    return bounded_list(std::move(items), where);
  }
  if (op == "*" && (a.is_string() || a.is(Value::Kind::list)) && b.is(Value::Kind::integer))
    return arithmetic(op, b, a, where);
  if (op == "*" && a.is(Value::Kind::integer) && (b.is_string() || b.is(Value::Kind::list))) {
    const int64_t times = std::max<int64_t>(a.as_int(), 0);
    const size_t unit = b.is_string() ? b.str().size() : b.items().size();
    if (unit && size_t(times) > kMaxOutputBytes / unit) fail(where, ": '*' made a value too long");
    if (b.is_string()) {
      Text t;
      for (int64_t i = 0; i < times; ++i) t.append(b.text());
      return Value::string(std::move(t));
    }
    List items;
    for (int64_t i = 0; i < times; ++i)
      items.insert(items.end(), b.items().begin(), b.items().end());
    return bounded_list(std::move(items), where);
  }
  if (!a.is_numeric() || !b.is_numeric())
    fail(where, ": '", op, "' is not supported between ", a.kind_name(), " and ", b.kind_name());
  const bool floats = a.is(Value::Kind::number) || b.is(Value::Kind::number) || op == "/";
  if (floats || (op == "**" && b.as_int() < 0)) {
    const double x = a.as_double(), y = b.as_double();
    if ((op == "/" || op == "//" || op == "%") && y == 0) fail(where, ": division by zero");
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (op == "/") return Value::number(x / y);
    if (op == "//") return Value::number(std::floor(x / y));
    if (op == "%") return Value::number(x - y * std::floor(x / y));
    return Value::number(std::pow(x, y));
  }
  const int64_t x = a.as_int(), y = b.as_int();
  int64_t r = 0;
  bool overflow = false;
  if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
  if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
  if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
  if (op == "//" || op == "%") {
    if (y == 0) fail(where, ": division by zero");
    if (x == INT64_MIN && y == -1) fail(where, ": integer overflow");
    const int64_t q = x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
    r = op == "//" ? q : x - q * y;
  }
  if (op == "**") {  // |x| >= 2 overflows within 64 steps
    r = 1;
    if (x == 0 || x == 1 || x == -1) {
      r = x == 0 ? (y == 0) : x == 1 ? 1 : (y % 2 ? -1 : 1);
    } else {
      for (int64_t i = 0; i < y && !overflow; ++i) overflow = __builtin_mul_overflow(r, x, &r);
    }
  }
  if (overflow) fail(where, ": integer overflow in '", op, "'");
  return Value::integer(r);
}
}  // namespace

Value apply_filter(const std::string& name, const Value& input, CallArgs& call,
                   const std::string& w) {
  const std::string where = cat(w, ": filter '", name, "'");
  if (name == "safe") return Args(call, where, "safe").done(), input;
  if (name == "trim")
    return strip_method(Value::string(input.to_text()), call, where, StripSide::both);
  if (name == "string") return Args(call, where, "string").done(), Value::string(input.to_text());
  if (name == "tojson") {
    Args a(call, where, "tojson");
    const int64_t indent = a.integer(0, "indent", -1);
    a.done();
    return bounded_text(Text::from_data(input.to_json(int(std::clamp<int64_t>(indent, -1, 64)))),
                        where);
  }
  if (name == "items") {
    Args(call, where, "items").done();
    if (input.is_undefined()) return Value::list({});
    if (!input.is(Value::Kind::dict)) fail(where, ": needs a mapping, got ", input.kind_name());
    return Value::list(dict_items(input));
  }
  if (name == "length" || name == "count")
    return Args(call, where, "length").done(), Value::integer(int64_t(length_of(input, where)));
  if (name == "first" || name == "last")
    return Args(call, where, "first").done(), first_or_last(input, name == "first", where);
  if (name == "join") {
    Args a(call, where, "join");
    const Value separator = Value::literal(a.text(0, "d", ""));
    const std::string attribute = a.text(1, "attribute", "");
    a.done();
    return join_text(separator, input, attribute, where);
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title")
    return string_method(Value::string(input.to_text()), name, where).fn()(call);
  if (name == "replace")
    return string_method(Value::string(input.to_text()), name, where).fn()(call);
  if (name == "default" || name == "d") {
    Args a(call, where, "default");
    const Value fallback = a.get(0, "default_value");
    const Value boolean = a.get(1, "boolean");
    a.done();
    const bool use = input.is_undefined() || (boolean.truthy() && !input.truthy());
    return use ? (fallback.is_undefined() ? Value::literal("") : fallback) : input;
  }
  if (name == "list") return Args(call, where, "list").done(), Value::list(iterate(input, where));
  if (name == "reverse") {
    Args(call, where, "reverse").done();
    if (input.is_string()) return slice(input, Value(), Value(), Value::integer(-1), where);
    List items = iterate(input, where);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "int" || name == "float") {
    Args a(call, where, "int");
    const Value fallback = a.get(0, "default");
    a.done();
    const bool integer = name == "int";
    const Value zero = integer ? Value::integer(0) : Value::number(0);
    return to_number(input, integer, fallback.is_undefined() ? zero : fallback);
  }
  if (name == "abs") {
    Args(call, where, "abs").done();
    if (input.is(Value::Kind::number)) return Value::number(std::fabs(input.as_double()));
    if (!input.is_numeric()) fail(where, ": needs a number, got ", input.kind_name());
    if (input.as_int() == INT64_MIN) fail(where, ": integer overflow");
    return Value::integer(std::llabs(input.as_int()));
  }
  if (name == "unique") {
    Args(call, where, "unique").done();
    List out;
    for (const Value& v : iterate(input, where))
      if (std::none_of(out.begin(), out.end(), [&](const Value& u) { return equal(u, v); }))
        out.push_back(v);
    return Value::list(std::move(out));
  }
  if (name == "map") return map_items(input, call, where);
  if (name == "select" || name == "reject")
    return select_items(input, call, where, name == "select", false);
  if (name == "selectattr" || name == "rejectattr")
    return select_items(input, call, where, name == "selectattr", true);
  fail(w, ": unknown filter '", name, "'");
}

bool apply_test(const std::string& name, const Value& v, CallArgs& call, const std::string& w) {
  const std::string where = cat(w, ": test '", name, "'");
  using K = Value::Kind;
  Args a(call, where, "test");
  const auto kind_test = [&](bool result) {
    a.done();
    return result;
  };
  if (name == "defined") return kind_test(!v.is_undefined());
  if (name == "undefined") return kind_test(v.is_undefined());
  if (name == "none") return kind_test(v.is(K::none));
  if (name == "boolean") return kind_test(v.is(K::boolean));
  if (name == "true") return kind_test(v.is(K::boolean) && v.as_bool());
  if (name == "false") return kind_test(v.is(K::boolean) && !v.as_bool());
  if (name == "integer") return kind_test(v.is(K::integer));
  if (name == "float") return kind_test(v.is(K::number));
  if (name == "number") return kind_test(v.is_numeric());
  if (name == "string") return kind_test(v.is_string());
  if (name == "mapping") return kind_test(v.is(K::dict));
  if (name == "iterable") return kind_test(v.is_string() || v.is(K::list) || v.is(K::dict));
  if (name == "sequence") return kind_test(v.is_string() || v.is(K::list) || v.is(K::dict));
  if (name == "callable") return kind_test(v.is(K::function));
  if (name == "lower" || name == "upper") {
    const std::string& s = want_string(v, where, name.c_str());
    const bool lower = name == "lower";
    return kind_test(std::none_of(s.begin(), s.end(), [&](char c) {
      return lower ? std::isupper(static_cast<unsigned char>(c))
                   : std::islower(static_cast<unsigned char>(c));
    }));
  }
  if (name == "even" || name == "odd") {
    if (!v.is(K::integer)) fail(where, ": needs an integer, got ", v.kind_name());
    return kind_test((v.as_int() % 2 == 0) == (name == "even"));
  }
  const Value other = a.get(0, "other");
  a.done();
  if (name == "divisibleby") {
    if (!v.is(K::integer) || !other.is(K::integer) || other.as_int() == 0)
      fail(where, ": needs two integers, the second not 0");
    return v.as_int() % other.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equal(v, other);
  if (name == "ne" || name == "!=") return !equal(v, other);
  if (name == "lt" || name == "lessthan" || name == "<") return less(v, other);
  if (name == "gt" || name == "greaterthan" || name == ">") return less(other, v);
  if (name == "le" || name == "<=") return !less(other, v);
  if (name == "ge" || name == ">=") return !less(v, other);
  if (name == "in") return binary_op("in", v, other, where).truthy();
  if (name == "sameas") {
    if (v.is_numeric() || v.is_string() || v.is(K::none) || v.is_undefined())
      return v.kind() == other.kind() && equal(v, other);
    return equal(v, other) && (v.is(K::list) ? &v.items() == &other.items() : true);
  }
  fail(w, ": unknown test '", name, "'");
}

Value method(const Value& self, const std::string& name, const std::string& where) {
  if (self.is_string()) return string_method(self, name, where);
  if (self.is(Value::Kind::dict)) return dict_method(self, name, where);
  return Value();
}

Value global(const std::string& name, const std::string& where) {
  if (name == "raise_exception")
    return Value::function([where](CallArgs& call) -> Value {
      Args a(call, where, "raise_exception");
      const Value message = a.get(0, "message");
      fail(where, ": the chat template refused the request: ", message.to_text().s);
    });
  if (name == "namespace" || name == "dict")
    return Value::function([name, where](CallArgs& call) {
      Dict d;
      for (const auto& [k, v] : call.named)
        if (v.holds_namespace()) fail(where, ": ", name, "() cannot hold a namespace");
      for (const Value& p : call.positional) {
        if (p.holds_namespace()) fail(where, ": ", name, "() cannot hold a namespace");
        if (!p.is(Value::Kind::dict)) fail(where, ": ", name, "() takes a dict or names");
        for (const auto& [k, v] : p.entries().items) d.set(k, v);
      }
      for (const auto& [k, v] : call.named) d.set(k, v);
      return name == "namespace" ? Value::ns(std::move(d)) : Value::dict(std::move(d));
    });
  if (name == "range")
    return Value::function([where](CallArgs& call) {
      if (call.positional.empty() || call.positional.size() > 3 || !call.named.empty())
        fail(where, ": range takes 1 to 3 integers");
      for (const Value& v : call.positional)
        if (!v.is(Value::Kind::integer)) fail(where, ": range takes integers");
      const auto& p = call.positional;
      const int64_t start = p.size() > 1 ? p[0].as_int() : 0;
      const int64_t stop = p.size() > 1 ? p[1].as_int() : p[0].as_int();
      const int64_t step = p.size() > 2 ? p[2].as_int() : 1;
      if (step == 0) fail(where, ": range's step is 0");
      List out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (out.size() >= kMaxItems) fail(where, ": a range longer than ", kMaxItems);
        out.push_back(Value::integer(i));
        if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
      }
      return Value::list(std::move(out));
    });
  if (name == "strftime_now")
    return Value::function([where](CallArgs& call) {
      Args a(call, where, "strftime_now");
      const std::string format = a.text(0, "format", "%Y-%m-%d");
      a.done();
      const std::time_t now = std::time(nullptr);
      std::tm local{};
      localtime_r(&now, &local);
      char buf[256];
      const size_t n =
          format.size() < 128 ? std::strftime(buf, sizeof buf, format.c_str(), &local) : 0;
      return Value::literal(std::string(buf, n));
    });
  return Value();
}

Value binary_op(const std::string& op, const Value& a, const Value& b, const std::string& where) {
  if (op == "~") {
    Text t = a.to_text();
    t.append(b.to_text());
    return bounded_text(std::move(t), where);
  }
  if (op == "==") return Value::boolean(equal(a, b));
  if (op == "!=") return Value::boolean(!equal(a, b));
  if (op == "<") return Value::boolean(less(a, b));
  if (op == ">") return Value::boolean(less(b, a));
  if (op == "<=") return Value::boolean(!less(b, a));
  if (op == ">=") return Value::boolean(!less(a, b));
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.is_string()) {
      found = want_string(a, where, "'in' of a string").empty() ||
              b.str().find(a.str()) != std::string::npos;
    } else if (b.is(Value::Kind::list)) {
      found = std::any_of(b.items().begin(), b.items().end(),
                          [&](const Value& x) { return equal(a, x); });
    } else if (b.is(Value::Kind::dict)) {
      found = a.is_string() && b.entries().find(a.str());
    } else if (!b.is_undefined()) {
      fail(where, ": 'in' needs a string, list or dict on its right, got ", b.kind_name());
    }
    return Value::boolean(found == (op == "in"));
  }
  return arithmetic(op, a, b, where);
}

Value item(const Value& a, const Value& index, const std::string& where) {
  switch (a.kind()) {
    case Value::Kind::undefined:
      fail(where, ": an undefined value has no item ", index.repr());
    case Value::Kind::list: {
      if (!index.is(Value::Kind::integer)) return Value();
      const int64_t n = int64_t(a.items().size());
      const int64_t i = index.as_int() < 0 ? index.as_int() + n : index.as_int();
      return i >= 0 && i < n ? a.items()[size_t(i)] : Value();
    }
    case Value::Kind::dict:
    case Value::Kind::ns: {
      if (!index.is_string()) return Value();
      const Value* v = a.entries().find(index.str());
      return v ? *v : Value();
    }
    case Value::Kind::string: {
      if (!index.is(Value::Kind::integer)) return Value();
      const int64_t i = index.as_int();
      return slice(a, index, i == -1 ? Value() : Value::integer(i + 1), Value(), where);
    }
    default:
      return Value();
  }
}

Value slice(const Value& a, const Value& start, const Value& stop, const Value& step,
            const std::string& where) {
  const auto bound = [&](const Value& v) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is(Value::Kind::none)) return std::nullopt;
    if (!v.is(Value::Kind::integer)) fail(where, ": slice indices must be integers");
    return v.as_int();
  };
  const int64_t by = bound(step).value_or(1);
  if (by == 0) fail(where, ": slice step cannot be zero");
  if (a.is(Value::Kind::list)) {
    List out;
    for (const size_t i : slice_indices(a.items().size(), bound(start), bound(stop), by))
      out.push_back(a.items()[i]);
    return Value::list(std::move(out));
  }
  if (a.is_string()) return Value::string(slice_text(a.text(), bound(start), bound(stop), by));
  fail(where, ": a value of type ", a.kind_name(), " cannot be sliced");
}

List iterate(const Value& v, const std::string& where) {
  switch (v.kind()) {
    case Value::Kind::undefined:
      return {};
    case Value::Kind::list:
      return v.items();
    case Value::Kind::dict: {
      List keys;
      for (const auto& [k, x] : v.entries().items) keys.push_back(key_text(k));
      return keys;
    }
    case Value::Kind::string: {
      List chars;
      for (Text& t : split_chars(v.text())) chars.push_back(Value::string(std::move(t)));
      return chars;
    }
    default:
      fail(where, ": a value of type ", v.kind_name(), " is not iterable");
  }
}

}  // namespace gattn::jinja

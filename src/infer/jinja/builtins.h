// What a chat template can call: Jinja's filters and tests, Python's str and dict methods, the
// globals of Hugging Face's chat template environment, and the operators' Python semantics.
// Every function throws an Error that starts with `where` when its arguments are wrong.
#pragma once
#include <string>

#include "infer/jinja/value.h"

namespace gattn::jinja {

// Filters: trim, tojson, safe, string, items, length / count, first, last, join, upper, lower,
// capitalize, title, replace, default / d, list, reverse, int, float, abs, unique, map
// (attribute=), select / reject, selectattr / rejectattr, indent, wordcount.
Value apply_filter(const std::string& name, const Value& input, CallArgs& args,
                   const std::string& where);
// Tests: defined, undefined, none, boolean, true, false, integer, float, number, string,
// mapping, iterable, sequence, callable, even, odd, divisibleby, eq / equalto / ==, ne / !=,
// lt / <, le / <=, gt / >, ge / >=, in, sameas, lower, upper.
bool apply_test(const std::string& name, const Value& input, CallArgs& args,
                const std::string& where);
// `self.name` for a str (startswith, endswith, split, rsplit, strip, lstrip, rstrip, upper,
// lower, title, capitalize, replace, find, count, join, format is not) or a dict (items, keys,
// values, get) as a bound function; undefined when there is no such method.
Value method(const Value& self, const std::string& name, const std::string& where);
// A global of the environment (raise_exception, namespace, range, dict, strftime_now);
// undefined for another name.
Value global(const std::string& name, const std::string& where);

// The operators, with Python's semantics: + - * / // % ** ~, the comparisons, in.
Value binary_op(const std::string& op, const Value& a, const Value& b, const std::string& where);
// a[i] for a list, a dict or a str (a character); undefined when there is no such item.
Value item(const Value& a, const Value& index, const std::string& where);
// a[start:stop:step] of a list or a str (by characters); absent parts are undefined values.
Value slice(const Value& a, const Value& start, const Value& stop, const Value& step,
            const std::string& where);
// What `for x in value` goes through: a list's items, a dict's keys, a str's characters.
List iterate(const Value& value, const std::string& where);

}  // namespace gattn::jinja

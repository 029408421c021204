// Python's str operations on UTF-8 text that keep track of which bytes came from data
// (value.h's Text): indices count characters, as Python's do; whitespace is Python's.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "infer/jinja/value.h"

namespace gattn::jinja {

enum class StripSide { left, right, both };
enum class CaseChange { upper, lower, title, capitalize };

// The byte offset where each character starts, then the size (an invalid byte is a character).
std::vector<size_t> char_starts(const std::string& s);
size_t count_chars(const std::string& s);
std::vector<Text> split_chars(const Text& t);

// str.strip / lstrip / rstrip: `chars` null means whitespace.
Text strip_text(const Text& t, const std::string* chars, StripSide side);
// str.split / rsplit: `separator` null means runs of whitespace; at most max_split cuts (< 0: all).
std::vector<Text> split_text(const Text& t, const std::string* separator, int64_t max_split,
                             bool from_right);
// str.replace; an Error starting with `where` when the result would pass max_bytes.
Text replace_all(const Text& t, const std::string& old, const Text& with, int64_t count,
                 size_t max_bytes, const std::string& where);
// ASCII letters only change case (other characters stay as they are).
Text change_case(const Text& t, CaseChange change);
// str.find (in characters; -1 when absent) and str.count.
int64_t find_chars(const std::string& s, const std::string& sub);
int64_t count_text(const std::string& s, const std::string& sub);

// Python's slice of a sequence of n items: the indices it takes.
std::vector<size_t> slice_indices(size_t n, std::optional<int64_t> start,
                                  std::optional<int64_t> stop, int64_t step);
Text slice_text(const Text& t, std::optional<int64_t> start, std::optional<int64_t> stop,
                int64_t step);

}  // namespace gattn::jinja

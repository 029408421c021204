#include "infer/jinja/text_ops.h"

#include <algorithm>
#include <cctype>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace gattn::jinja {

namespace {
// The character at byte i: its code point and length (an invalid byte stands for itself).
std::pair<uint32_t, size_t> decode_at(const std::string& s, size_t i) {
  uint32_t cp = 0;
  const size_t len = utf8::decode(s, i, &cp);
  if (len == 0) return {static_cast<unsigned char>(s[i]), 1};
  return {cp, len};
}

// Python's str.isspace().
bool python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

struct CharSet {
  const std::string* chars;  // null: whitespace
  bool has(uint32_t c) const {
    if (!chars) return python_space(c);
    for (size_t i = 0; i < chars->size();) {
      const auto [x, len] = decode_at(*chars, i);
      if (x == c) return true;
      i += len;
    }
    return false;
  }
};

// Where the whitespace run starting at or after `i` starts and ends ([begin, end)).
std::pair<size_t, size_t> next_space_run(const std::string& s, size_t i) {
  while (i < s.size()) {
    const auto [c, len] = decode_at(s, i);
    if (python_space(c)) break;
    i += len;
  }
  size_t end = i;
  while (end < s.size()) {
    const auto [c, len] = decode_at(s, end);
    if (!python_space(c)) break;
    end += len;
  }
  return {i, end};
}

std::vector<Text> split_whitespace(const Text& t, int64_t max_split) {
  const Text stripped = strip_text(t, nullptr, StripSide::left);
  std::vector<Text> parts;
  size_t pos = 0;
  const std::string& s = stripped.s;
  while (pos < s.size()) {
    if (max_split >= 0 && int64_t(parts.size()) == max_split) {
      parts.push_back(stripped.substr(pos));
      return parts;
    }
    const auto [begin, end] = next_space_run(s, pos);
    parts.push_back(stripped.substr(pos, begin - pos));
    pos = end;
  }
  return parts;
}

std::vector<Text> rsplit_whitespace(const Text& t, int64_t max_split) {
  // Split everything, then join back the leftmost parts beyond max_split with their spacing.
  const Text stripped = strip_text(t, nullptr, StripSide::right);
  std::vector<std::pair<size_t, size_t>> words;  // [begin, end) of each word
  size_t pos = 0;
  while (pos < stripped.s.size()) {
    const auto [begin, end] = next_space_run(stripped.s, pos);
    if (begin > pos) words.emplace_back(pos, begin);
    pos = end;
  }
  std::vector<Text> parts;
  const size_t keep = max_split < 0 ? words.size() : std::min(words.size(), size_t(max_split) + 1);
  if (keep == 0) return parts;
  const size_t first = words.size() - keep;
  parts.push_back(stripped.substr(0, words[first].second));
  for (size_t i = first + 1; i < words.size(); ++i)
    parts.push_back(stripped.substr(words[i].first, words[i].second - words[i].first));
  return parts;
}
}  // namespace

std::vector<size_t> char_starts(const std::string& s) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size();) {
    starts.push_back(i);
    i += decode_at(s, i).second;
  }
  starts.push_back(s.size());
  return starts;
}

size_t count_chars(const std::string& s) { return char_starts(s).size() - 1; }

std::vector<Text> split_chars(const Text& t) {
  const std::vector<size_t> starts = char_starts(t.s);
  std::vector<Text> out;
  for (size_t i = 0; i + 1 < starts.size(); ++i)
    out.push_back(t.substr(starts[i], starts[i + 1] - starts[i]));
  return out;
}

Text strip_text(const Text& t, const std::string* chars, StripSide side) {
  const CharSet set{chars};
  const std::string& s = t.s;
  size_t begin = 0, end = s.size();
  if (side != StripSide::right)
    while (begin < end) {
      const auto [c, len] = decode_at(s, begin);
      if (!set.has(c)) break;
      begin += len;
    }
  if (side != StripSide::left) {
    const std::vector<size_t> starts = char_starts(s);
    size_t k = starts.size() - 1;
    while (k > 0 && starts[k - 1] >= begin && set.has(decode_at(s, starts[k - 1]).first)) --k;
    end = std::max(begin, starts[k]);
  }
  return t.substr(begin, end - begin);
}

std::vector<Text> split_text(const Text& t, const std::string* separator, int64_t max_split,
                             bool from_right) {
  if (!separator)
    return from_right ? rsplit_whitespace(t, max_split) : split_whitespace(t, max_split);
  const std::string& sep = *separator;
  std::vector<Text> parts;
  if (!from_right) {
    size_t pos = 0;
    for (size_t at; (max_split < 0 || int64_t(parts.size()) < max_split) &&
                    (at = t.s.find(sep, pos)) != std::string::npos;
         pos = at + sep.size())
      parts.push_back(t.substr(pos, at - pos));
    parts.push_back(t.substr(pos));
    return parts;
  }
  size_t end = t.s.size();
  while (max_split < 0 || int64_t(parts.size()) < max_split) {
    if (end < sep.size()) break;
    const size_t at = t.s.rfind(sep, end - sep.size());
    if (at == std::string::npos) break;
    parts.push_back(t.substr(at + sep.size(), end - at - sep.size()));
    end = at;
  }
  parts.push_back(t.substr(0, end));
  std::reverse(parts.begin(), parts.end());
  return parts;
}

Text replace_all(const Text& t, const std::string& old, const Text& with, int64_t count,
                 size_t max_bytes, const std::string& where) {
  Text out;
  size_t pos = 0;
  int64_t done = 0;
  const auto check = [&] {
    if (out.s.size() > max_bytes)
      fail(where, ": replace made a string longer than ", max_bytes, " bytes");
  };
  if (old.empty()) {  // Python inserts `with` before every character and at the end
    for (const Text& c : split_chars(t)) {
      if (count < 0 || done++ < count) out.append(with);
      out.append(c);
      check();
    }
    if (count < 0 || done < count) out.append(with);
    check();
    return out;
  }
  for (size_t at; (count < 0 || done < count) && (at = t.s.find(old, pos)) != std::string::npos;
       pos = at + old.size(), ++done) {
    out.append(t.substr(pos, at - pos));
    out.append(with);
    check();
  }
  out.append(t.substr(pos));
  check();
  return out;
}

Text change_case(const Text& t, CaseChange change) {
  Text out = t;
  bool word_start = true;
  for (size_t i = 0; i < out.s.size(); ++i) {
    const auto c = static_cast<unsigned char>(out.s[i]);
    bool upper = false;
    switch (change) {
      case CaseChange::upper:
        upper = true;
        break;
      case CaseChange::lower:
        upper = false;
        break;
      case CaseChange::title:
        upper = word_start;
        break;
      case CaseChange::capitalize:
        upper = i == 0;
        break;
    }
    if (c < 0x80) out.s[i] = char(upper ? std::toupper(c) : std::tolower(c));
    word_start = !std::isalpha(c);
  }
  return out;
}

int64_t find_chars(const std::string& s, const std::string& sub) {
  const size_t at = s.find(sub);
  if (at == std::string::npos) return -1;
  return int64_t(count_chars(s.substr(0, at)));
}

int64_t count_text(const std::string& s, const std::string& sub) {
  if (sub.empty()) return int64_t(count_chars(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

std::vector<size_t> slice_indices(size_t size, std::optional<int64_t> start,
                                  std::optional<int64_t> stop, int64_t step) {
  const int64_t n = int64_t(size);
  const auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t from = adjust(start, step < 0 ? n - 1 : 0);
  const int64_t to = adjust(stop, step < 0 ? -1 : n);
  std::vector<size_t> out;
  for (int64_t i = from; step > 0 ? i < to : i > to;) {
    out.push_back(size_t(i));
    if (__builtin_add_overflow(i, step, &i)) break;  // a step past the end of int64
  }
  return out;
}

Text slice_text(const Text& t, std::optional<int64_t> start, std::optional<int64_t> stop,
                int64_t step) {
  const std::vector<size_t> starts = char_starts(t.s);
  Text out;
  for (const size_t i : slice_indices(starts.size() - 1, start, stop, step))
    out.append(t.substr(starts[i], starts[i + 1] - starts[i]));
  return out;
}

}  // namespace gattn::jinja

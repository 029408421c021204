// The one exception type for bad input: its message names the file, field or tensor,
// what was expected and what was found.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace gattn {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Streams every argument into one string: cat("tensor ", name, " has ", n, " rows").
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(cat(parts...));
}

}  // namespace gattn

// Two exception types, so a user can tell their mistake from gattn's:
// - Error, for bad input (a file, field, flag or path): its message names the file, field or
//   tensor, what was expected and what was found; the CLI exits 1.
// - InternalError, for a broken engine invariant (a bug): raised by GATTN_ASSERT with the source
//   line and the condition; the CLI exits 2.
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

struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

template <typename... Parts>
[[noreturn]] void internal_failure(const char* file, int line, const char* condition,
                                   const Parts&... parts) {
  throw InternalError(cat(file, ":", line, ": ", condition, " does not hold",
                          sizeof...(parts) ? ": " : "", parts...));
}

}  // namespace gattn

// Checks an engine invariant in every build (the checks are cheap and off the hot loops); the
// message parts are streamed like fail()'s.
#define GATTN_ASSERT(condition, ...)                                                        \
  do {                                                                                      \
    if (!(condition))                                                                       \
      ::gattn::internal_failure(__FILE__, __LINE__, #condition __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

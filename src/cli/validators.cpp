#include "cli/validators.h"

#include <charconv>
#include <cstdint>

namespace gattn {

namespace {
CLI::Validator integer_at_least(int64_t lowest, const char* expected) {
  return CLI::Validator(
      [lowest, expected](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (error != std::errc() || stop != end || value < lowest)
          return std::string("must be ") + expected + ", got " + text;
        return "";
      },
      "INT");
}
}  // namespace

CLI::Validator positive_integer() { return integer_at_least(1, "a positive integer"); }

CLI::Validator non_negative_integer() { return integer_at_least(0, "0 or a positive integer"); }

CLI::Option* add_threads_option(CLI::App* cmd, int& threads, const char* description) {
  return cmd->add_option("--threads", threads, description)->check(positive_integer());
}

}  // namespace gattn

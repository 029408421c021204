#include "cli/validators.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <string>

namespace gattn {

namespace {
CLI::Validator integer_between(int64_t lowest, int64_t highest, std::string expected) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (error != std::errc() || stop != end || value < lowest || value > highest)
          return "must be " + expected + ", got " + text;
        return "";
      },
      "INT");
}
}  // namespace

CLI::Validator positive_integer() {
  return integer_between(1, INT64_MAX, "a positive integer");
}

CLI::Validator non_negative_integer() {
  return integer_between(0, INT64_MAX, "0 or a positive integer");
}

CLI::Validator integer_in_range(int64_t lowest, int64_t highest) {
  return integer_between(lowest, highest,
                         "an integer from " + std::to_string(lowest) + " to " +
                             std::to_string(highest));
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(value) || value <= 0)
          return "must be a positive number, got " + text;
        return "";
      },
      "NUMBER");
}

CLI::Option* add_threads_option(CLI::App* cmd, int& threads, const char* description) {
  return cmd->add_option("--threads", threads, description)->check(positive_integer());
}

}  // namespace gattn

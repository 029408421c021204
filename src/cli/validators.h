// Checks of integer flags shared by every command, with messages in gattn's words
// ("--batch: must be a positive integer, got 0") instead of CLI11's numeric ranges.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>

namespace gattn {

CLI::Validator positive_integer();
CLI::Validator non_negative_integer();  // for counts where 0 means "all" or "none"
CLI::Validator integer_in_range(int64_t lowest, int64_t highest);  // both included
CLI::Validator positive_number();  // a finite real > 0

// --threads N: a positive integer; commands call use_threads (cli/inputs.h) when given.
CLI::Option* add_threads_option(CLI::App* cmd, int& threads, const char* description);

}  // namespace gattn

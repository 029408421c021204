// Small printing helpers shared by the subcommands.
#pragma once
#include <cstdint>
#include <string>

#include "model/config.h"

namespace gattn {

std::string with_commas(int64_t n);  // 1234567 -> "1,234,567"
// Prints the parameter table of a config, with the gate's share against the same model ungated.
void print_parameter_table(const Config& config, bool per_tensor);

}  // namespace gattn

// gattn tokenizer: placeholder until the tokenizer lands.
#include "cli/commands.h"

namespace gattn {

void add_tokenizer_command(CLI::App&) {}

}  // namespace gattn

// gattn corpus: placeholder until the corpus builder lands.
#include "cli/commands.h"

namespace gattn {

void add_corpus_command(CLI::App&) {}

}  // namespace gattn

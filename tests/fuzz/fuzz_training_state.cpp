// Fuzz target: a training checkpoint's state.json (checksum, step, counts, run config), read as
// --resume reads it for the checkpoint of step 4 of a 100-step run.
#include <string_view>

#include "fuzz_input.h"
#include "train/train_checkpoint.h"
#include "util/json_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gattn::fuzz::expect_only_errors([&] {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    gattn::parse_training_state(gattn::parse_json_text(text, "state.json"), "state.json", 4, 100);
  });
}

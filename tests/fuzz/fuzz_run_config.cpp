// Fuzz target: a training run config (the file, its inline model, data, optimizer, schedule).
#include "fuzz_input.h"
#include "train/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gattn::fuzz::expect_only_errors(
      [&] { gattn::load_run_config(gattn::fuzz::input_file(data, size), ""); });
}

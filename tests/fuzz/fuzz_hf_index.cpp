// Fuzz target: a Hugging Face model.safetensors.index.json (depth-limited parse, then the
// weight_map with every shard name checked to stay inside the model folder).
#include <string_view>

#include "fuzz_input.h"
#include "io/hf_weights.h"
#include "util/json_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gattn::fuzz::expect_only_errors([&] {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto map = gattn::hf_weight_map(
        gattn::parse_json_text(text, "model.safetensors.index.json"),
        "model.safetensors.index.json");
    for (const auto& [tensor, file] : map)
      if (file.empty() || file.find('/') != std::string::npos || file == "..") __builtin_trap();
  });
}

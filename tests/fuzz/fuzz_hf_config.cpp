// Fuzz target: a Hugging Face config.json (depth-limited parse, then the layout and every field
// read into a gattn Config).
#include <string_view>

#include "fuzz_input.h"
#include "io/hf_config.h"
#include "model/layout.h"
#include "util/json_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gattn::fuzz::expect_only_errors([&] {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const gattn::HfModelInfo info = gattn::hf_model_info_from_json(
        gattn::parse_json_text(text, "config.json"), "config.json");
    gattn::ParamLayout layout(info.config);  // counts only: no allocation
    (void)gattn::q_gate_blocks(info.config, info.layout);
  });
}

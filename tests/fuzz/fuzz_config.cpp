// Fuzz target: a model config.json (parse with the depth limit, then every field validated).
#include <string_view>

#include "fuzz_input.h"
#include "model/config.h"
#include "model/layout.h"
#include "util/json_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gattn::fuzz::expect_only_errors([&] {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const gattn::Config config =
        gattn::config_from_json(gattn::parse_json_text(text, "config.json"), "config.json");
    gattn::ParamLayout layout(config);  // counts only: no allocation
  });
}

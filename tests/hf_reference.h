// transformers' own outputs for a tests/fixtures/hf folder (tools/reference/make_hf_fixtures.py):
// the reference ids and the logits transformers gives for them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace gattn {

struct HfReference {
  explicit HfReference(const std::string& folder) {
    const SafetensorsReader file(folder + "/reference.safetensors");
    const std::vector<int64_t> ids64 = file.read_ints("input_ids");
    ids.assign(ids64.begin(), ids64.end());
    logits = file.read_floats("logits");
  }
  std::vector<int32_t> ids;
  std::vector<float> logits;
};

}  // namespace gattn

// Fuzz target: a safetensors file (header JSON, offsets, checksums) read and converted.
#include "fuzz_input.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gattn::fuzz::expect_only_errors([&] {
    const gattn::SafetensorsReader reader(gattn::fuzz::input_file(data, size));
    for (const gattn::TensorView& t : reader.tensors()) {
      if (t.numel > (1 << 20)) continue;  // reading is bounded by the file; keep runs fast
      if (t.dtype == gattn::Dtype::I64 || t.dtype == gattn::Dtype::I32)
        reader.read_ints(t.name);
      else
        reader.read_floats(t.name);
    }
  });
}

// How a parameter tensor is stored, and a read-only view of one that says so. The ops that read a
// weight matrix (ops/typed_linear.h, the embedding) switch on the view's dtype; nothing else needs
// to know. A quantized block format (Q8_0, Q4_K: blocks of values with their scales) is a new
// WeightDtype whose `data` points at the blocks, row r starting at r * row_bytes(); a weight on
// an accelerator is a view whose device is not host. See docs/CORE.md, "typed weight storage".
#pragma once
#include <cstdint>

namespace gattn {

enum class WeightDtype : uint8_t {
  f32,   // float
  bf16,  // the upper 16 bits of a float (Hugging Face's bfloat16), rounded to nearest even
};
const char* weight_dtype_name(WeightDtype dtype);
// Bytes of one row of `cols` values.
int64_t weight_row_bytes(WeightDtype dtype, int64_t cols);

enum class Device : uint8_t { host };

// A weight tensor of `rows` x `cols` values, row-major (a vector: one row).
struct WeightView {
  WeightDtype dtype = WeightDtype::f32;
  Device device = Device::host;
  const void* data = nullptr;
  int64_t rows = 0, cols = 0;

  const float* f32() const { return static_cast<const float*>(data); }
  const uint16_t* bf16() const { return static_cast<const uint16_t*>(data); }
};

}  // namespace gattn

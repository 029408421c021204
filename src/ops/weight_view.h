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
  // llama.cpp's block formats, as GGUF files store them (ops/ggml_blocks.h), read in place; their
  // products run on integer dot kernels against activations quantized as llama.cpp does
  // (ops/quant_dot.h).
  q8_0,  // 32 values a block: 34 bytes
  q4_0,  // 32 values a block: 18 bytes
  q4_k,  // 256 values a block: 144 bytes
  q6_k,  // 256 values a block: 210 bytes
};
const char* weight_dtype_name(WeightDtype dtype);  // ggml's spelling for the block formats
bool is_block_format(WeightDtype dtype);
// A K-quant (super-blocks of 256 values; its products take Q8_K activations): q4_k, q6_k. Static:
// each file has its own copy, compiled with its own flags (the AVX-512 kernels use it).
static inline bool is_k_quant(WeightDtype dtype) {
  return dtype == WeightDtype::q4_k || dtype == WeightDtype::q6_k;
}
// Values and bytes of one block (f32, bf16: one value).
int64_t weight_block_values(WeightDtype dtype);
int64_t weight_block_bytes(WeightDtype dtype);
// Bytes of one row of `cols` values (a block format: cols a multiple of its block).
int64_t weight_row_bytes(WeightDtype dtype, int64_t cols);
// The ggml type id (io/gguf.h GgmlType) of a dtype, and the dtype of a ggml type id (false where
// gattn has no such dtype).
uint32_t ggml_type_of(WeightDtype dtype);
bool weight_dtype_of_ggml(uint32_t ggml_type, WeightDtype* dtype);

enum class Device : uint8_t { host };

// A weight tensor of `rows` x `cols` values, row-major (a vector: one row).
struct WeightView {
  WeightDtype dtype = WeightDtype::f32;
  Device device = Device::host;
  const void* data = nullptr;
  int64_t rows = 0, cols = 0;

  const float* f32() const { return static_cast<const float*>(data); }
  const uint16_t* bf16() const { return static_cast<const uint16_t*>(data); }
  const uint8_t* bytes() const { return static_cast<const uint8_t*>(data); }
  int64_t row_bytes() const { return weight_row_bytes(dtype, cols); }
};

}  // namespace gattn

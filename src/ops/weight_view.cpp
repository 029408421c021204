#include "ops/weight_view.h"

#include "util/error.h"

namespace gattn {

namespace {
struct DtypeInfo {
  const char* name;
  int64_t block_values, block_bytes;
  uint32_t ggml_type;  // io/gguf.h GgmlType
};
DtypeInfo info(WeightDtype dtype) {
  switch (dtype) {
    case WeightDtype::f32:
      return {"f32", 1, 4, 0};
    case WeightDtype::bf16:
      return {"bf16", 1, 2, 30};
    case WeightDtype::q8_0:
      return {"q8_0", 32, 34, 8};
    case WeightDtype::q4_0:
      return {"q4_0", 32, 18, 2};
    case WeightDtype::q4_k:
      return {"q4_K", 256, 144, 12};
    case WeightDtype::q6_k:
      return {"q6_K", 256, 210, 14};
  }
  GATTN_ASSERT(false, "weight dtype ", int(dtype));
}
constexpr WeightDtype kAll[] = {WeightDtype::f32,  WeightDtype::bf16, WeightDtype::q8_0,
                                WeightDtype::q4_0, WeightDtype::q4_k, WeightDtype::q6_k};
}  // namespace

const char* weight_dtype_name(WeightDtype dtype) { return info(dtype).name; }
bool is_block_format(WeightDtype dtype) { return info(dtype).block_values > 1; }
int64_t weight_block_values(WeightDtype dtype) { return info(dtype).block_values; }
int64_t weight_block_bytes(WeightDtype dtype) { return info(dtype).block_bytes; }

int64_t weight_row_bytes(WeightDtype dtype, int64_t cols) {
  const DtypeInfo i = info(dtype);
  GATTN_ASSERT(cols % i.block_values == 0, "a ", i.name, " row of ", cols,
               " values is not a whole number of blocks");
  return cols / i.block_values * i.block_bytes;
}

uint32_t ggml_type_of(WeightDtype dtype) { return info(dtype).ggml_type; }

bool weight_dtype_of_ggml(uint32_t ggml_type, WeightDtype* dtype) {
  for (WeightDtype d : kAll)
    if (info(d).ggml_type == ggml_type) {
      *dtype = d;
      return true;
    }
  return false;
}

}  // namespace gattn

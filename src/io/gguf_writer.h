// GGUF files written (version 3, llama.cpp's gguf.cpp layout, 32-byte alignment): the metadata
// key-value pairs in the order added, the tensor infos, then each tensor's bytes at an aligned
// offset. The file is written atomically (io/file.h). The reader (io/gguf.h) reads it back; so
// does llama.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf.h"

namespace gattn {

class GgufWriter {
 public:
  void add_string(const std::string& key, const std::string& value);
  void add_u32(const std::string& key, uint32_t value);
  void add_f32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_strings(const std::string& key, const std::vector<std::string>& values);
  void add_i32s(const std::string& key, const std::vector<int32_t>& values);
  void add_bools(const std::string& key, const std::vector<bool>& values);
  // A tensor of ggml `type` and shape (ggml order: shape[0] a row's length), its bytes at `data`
  // (weight_row_bytes per row), which must stay valid until write().
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> shape,
                  const void* data, uint64_t bytes);
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> shape;
    const void* data;
    uint64_t bytes;
  };
  void key(const std::string& key, GgufValueType type);
  std::string metadata_;  // the encoded key-value pairs
  uint64_t pairs_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace gattn

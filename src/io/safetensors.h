// The safetensors format (Hugging Face): an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then the raw tensor bytes.
// The reader checks every claim the header makes against the file before anything is read.
// As strict as Hugging Face's safetensors library: the header is JSON padded with spaces only, no
// key twice, and the tensors' data ranges tile the data bytes exactly (no hole, no overlap, nothing
// after the last tensor).
// gattn writes an XXH3 checksum of each tensor's bytes into __metadata__ ("gattn.xxh3:<tensor>":
// 16 hex digits). A file that carries any gattn.* metadata must carry a valid checksum for every
// tensor (so editing the header cannot switch the check off); Checksums::required asks it of
// every file (gattn's own checkpoints); files from elsewhere carry none and load as before.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gattn {

enum class Dtype { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

size_t dtype_bytes(Dtype dtype);
const char* dtype_name(Dtype dtype);
bool is_float_dtype(Dtype dtype);  // F64, F32, F16, BF16
// count values of a float dtype at src (unaligned) to float; Error for other dtypes.
void convert_to_floats(Dtype dtype, const uint8_t* src, int64_t count, float* dst);

struct TensorView {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;
  int64_t numel;
  const uint8_t* data;  // unaligned; read through the converters below
};

std::string shape_string(const std::vector<int64_t>& shape);  // "[2, 3]"

// True if `head` (the first bytes of a file of `file_bytes`) starts as a safetensors file does:
// a header length that fits the file, then a JSON object.
bool looks_like_safetensors(std::string_view head, uint64_t file_bytes);

// Drops the mapped pages of [begin, begin + bytes) from this process (they stay in the page
// cache): file-backed pages count in the resident set until released.
void release_mapped_pages(const uint8_t* begin, size_t bytes);

enum class Checksums { if_present, required };

class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path, Checksums checksums = Checksums::if_present);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(const std::string& name) const;
  const TensorView& get(const std::string& name) const;      // Error naming the file if absent
  std::string metadata_value(const std::string& key) const;  // Error if absent

  // F64, F32, F16 and BF16 tensors converted to float; Error for other dtypes.
  std::vector<float> read_floats(const std::string& name) const;
  // I64, I32 tensors; Error for other dtypes.
  std::vector<int64_t> read_ints(const std::string& name) const;

 private:
  void verify_checksums(Checksums checksums) const;

  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> by_name_;  // index into tensors_: O(1) find
};

struct TensorToWrite {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;
  const void* data;  // numel * dtype_bytes bytes
};

// Written atomically (io/file.h).
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace gattn

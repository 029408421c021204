// The GGUF format (llama.cpp's model file, versions 2 and 3), read in place from a mapped file:
// "GGUF", a version, the tensor and key-value counts, the key-value pairs (typed metadata:
// integers, floats, bools, strings and one-level arrays of them), the tensor infos (name, up to 4
// dimensions with ne[0] the fastest, ggml type, offset) and, at the file's alignment, the tensors'
// bytes. Little-endian files only (a byte-swapped version is refused by name).
//
// The reader checks every claim the header makes against the file before anything is read, as
// strictly as llama.cpp's gguf.cpp: counts and lengths bounded by the bytes left in the file, no
// key or tensor name twice, names shorter than 64 bytes, a tensor's row a whole number of its
// type's blocks, each tensor's data at the running offset of the ones before it (each padded to
// the alignment) and inside the file. Tensor types it has no block size for (the IQ and ternary
// formats, MXFP4, ...) are refused by name at open.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/mapped_file.h"

namespace gattn {

// ggml's tensor types, by the ids GGUF files carry (ggml.h).
enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  bf16 = 30,
};
// ggml's name of a type id ("q4_K"), or "type <id>" for an id ggml does not define.
std::string ggml_type_name(uint32_t id);
// Values per block and bytes per block of the types the reader sizes; false for the others.
bool ggml_block_shape(uint32_t id, int64_t* block_values, int64_t* block_bytes);

// GGUF metadata value types (gguf.h).
enum class GgufValueType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};
const char* gguf_value_type_name(GgufValueType type);

// One metadata value: a scalar (is_array false) or a one-level array of scalars, all of
// `element_type`. Integers and bools are kept in `integers` (a u64 as its bits: the typed getters
// refuse one above INT64_MAX), floats in `reals`, strings in `strings`; a scalar holds one.
struct GgufValue {
  bool is_array = false;
  GgufValueType element_type = GgufValueType::u8;
  std::vector<int64_t> integers;
  std::vector<double> reals;
  std::vector<std::string> strings;
};

struct GgufTensor {
  std::string name;
  uint32_t type = 0;           // GgmlType id
  std::vector<int64_t> shape;  // ggml order: shape[0] is a row's length (the fastest)
  int64_t numel = 0;
  int64_t rows = 0;     // numel / shape[0]
  uint64_t offset = 0;  // from the start of the data section
  uint64_t bytes = 0;
  int64_t row_bytes = 0;
  const uint8_t* data = nullptr;
};

class GgufReader {
 public:
  explicit GgufReader(const std::string& path);
  GgufReader(const GgufReader&) = delete;
  GgufReader& operator=(const GgufReader&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find_value(const std::string& key) const;
  bool has(const std::string& key) const { return find_value(key) != nullptr; }

  // Typed getters: an Error naming the file and key if absent or of another type. get_int takes
  // any integer type (and checks the value fits int64); get_float f32 or f64.
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  const std::vector<std::string>& get_strings(const std::string& key) const;  // array of string
  std::vector<int64_t> get_ints(const std::string& key) const;                // array of integers
  std::vector<double> get_floats(const std::string& key) const;               // array of floats
  std::vector<bool> get_bools(const std::string& key) const;                  // array of bool

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find(const std::string& name) const;
  const GgufTensor& get(const std::string& name) const;  // Error naming the file if absent

 private:
  const GgufValue& value_of(const std::string& key, const char* expected) const;

  std::string path_;
  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_map<std::string, size_t> value_index_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

// True if `head` (a file's first bytes) starts with the GGUF magic.
bool looks_like_gguf(std::string_view head);

}  // namespace gattn

#include "io/gguf.h"

#include <cstring>
#include <limits>
#include <unordered_set>

#include "util/error.h"

namespace gattn {

namespace {

constexpr uint32_t kMaxVersion = 3;
constexpr size_t kMaxNameBytes = 64;  // ggml's GGML_MAX_NAME, the terminating NUL included
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kDefaultAlignment = 32;

const char* const kTypeNames[] = {
    "f32",     "f16",     "q4_0",    "q4_1",  "type 4",  "type 5",  "q5_0",    "q5_1",    "q8_0",
    "q8_1",    "q2_K",    "q3_K",    "q4_K",  "q5_K",    "q6_K",    "q8_K",    "iq2_xxs", "iq2_xs",
    "iq3_xxs", "iq1_s",   "iq4_nl",  "iq3_s", "iq2_s",   "iq4_xs",  "i8",      "i16",     "i32",
    "i64",     "f64",     "iq1_m",   "bf16",  "type 31", "type 32", "type 33", "tq1_0",   "tq2_0",
    "type 36", "type 37", "type 38", "mxfp4", "nvfp4",   "q1_0",    "q2_0"};

// Reads the header fields in order, every length checked against the bytes left: a count or
// length the file cannot hold is refused before anything is allocated for it.
class Cursor {
 public:
  Cursor(const uint8_t* begin, size_t size, const std::string& path)
      : p_(begin), begin_(begin), end_(begin + size), path_(path) {}

  size_t offset() const { return size_t(p_ - begin_); }
  size_t left() const { return size_t(end_ - p_); }

  template <typename T>
  T read(const char* what) {
    if (left() < sizeof(T))
      fail(path_, ": ends inside ", what, " (at byte ", offset(), " of ", offset() + left(), ")");
    T v;
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }

  // A count of items each at least `min_item_bytes` long.
  uint64_t count(const char* what, uint64_t min_item_bytes) {
    const uint64_t n = read<uint64_t>(what);
    if (min_item_bytes > 0 && n > left() / min_item_bytes)
      fail(path_, ": ", what, " is ", n, ", more than the ", left(),
           " bytes left in the file can hold (at byte ", offset(), ")");
    return n;
  }

  std::string string(const char* what) {
    const uint64_t n = count(what, 1);
    std::string s(reinterpret_cast<const char*>(p_), size_t(n));
    p_ += n;
    return s;
  }

 private:
  const uint8_t* p_;
  const uint8_t* begin_;
  const uint8_t* end_;
  const std::string& path_;
};

size_t scalar_bytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::u16:
    case GgufValueType::i16:
      return 2;
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::f32:
      return 4;
    case GgufValueType::u64:
    case GgufValueType::i64:
    case GgufValueType::f64:
    case GgufValueType::string:  // its length
      return 8;
    case GgufValueType::array:
      break;
  }
  return 0;
}

bool is_integer(GgufValueType t) {
  return t != GgufValueType::f32 && t != GgufValueType::f64 && t != GgufValueType::string &&
         t != GgufValueType::array;
}

void read_scalar(Cursor& in, GgufValueType type, GgufValue& v, const char* what) {
  switch (type) {
    case GgufValueType::u8:
      v.integers.push_back(in.read<uint8_t>(what));
      return;
    case GgufValueType::i8:
      v.integers.push_back(in.read<int8_t>(what));
      return;
    case GgufValueType::u16:
      v.integers.push_back(in.read<uint16_t>(what));
      return;
    case GgufValueType::i16:
      v.integers.push_back(in.read<int16_t>(what));
      return;
    case GgufValueType::u32:
      v.integers.push_back(in.read<uint32_t>(what));
      return;
    case GgufValueType::i32:
      v.integers.push_back(in.read<int32_t>(what));
      return;
    case GgufValueType::u64:
      v.integers.push_back(int64_t(in.read<uint64_t>(what)));
      return;
    case GgufValueType::i64:
      v.integers.push_back(in.read<int64_t>(what));
      return;
    case GgufValueType::boolean:
      v.integers.push_back(in.read<uint8_t>(what) != 0);
      return;
    case GgufValueType::f32:
      v.reals.push_back(in.read<float>(what));
      return;
    case GgufValueType::f64:
      v.reals.push_back(in.read<double>(what));
      return;
    case GgufValueType::string:
      v.strings.push_back(in.string(what));
      return;
    case GgufValueType::array:
      break;
  }
  GATTN_ASSERT(false, "read_scalar of an array");
}

GgufValueType value_type(uint32_t id, const std::string& path, const std::string& key) {
  if (id > uint32_t(GgufValueType::f64))
    fail(path, ": metadata '", key, "' has value type ", id, ", which GGUF does not define");
  return GgufValueType(id);
}

GgufValue read_value(Cursor& in, const std::string& path, const std::string& key) {
  GgufValue v;
  GgufValueType type = value_type(in.read<uint32_t>("a value type"), path, key);
  uint64_t n = 1;
  if (type == GgufValueType::array) {
    v.is_array = true;
    type = value_type(in.read<uint32_t>("an array's element type"), path, key);
    if (type == GgufValueType::array)
      fail(path, ": metadata '", key, "' is an array of arrays, which GGUF readers refuse");
    n = in.count("an array's length", scalar_bytes(type));
  }
  v.element_type = type;
  const char* what = "a metadata value";
  if (type == GgufValueType::string)
    v.strings.reserve(n);
  else if (is_integer(type))
    v.integers.reserve(n);
  else
    v.reals.reserve(n);
  for (uint64_t i = 0; i < n; ++i) read_scalar(in, type, v, what);
  return v;
}

uint64_t padded(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

std::string ggml_type_name(uint32_t id) {
  if (id < std::size(kTypeNames)) return kTypeNames[id];
  return cat("type ", id);
}

bool ggml_block_shape(uint32_t id, int64_t* block_values, int64_t* block_bytes) {
  struct Shape {
    GgmlType type;
    int64_t values, bytes;
  };
  static constexpr Shape kShapes[] = {
      {GgmlType::f32, 1, 4},      {GgmlType::f16, 1, 2},      {GgmlType::bf16, 1, 2},
      {GgmlType::f64, 1, 8},      {GgmlType::i8, 1, 1},       {GgmlType::i16, 1, 2},
      {GgmlType::i32, 1, 4},      {GgmlType::i64, 1, 8},      {GgmlType::q4_0, 32, 18},
      {GgmlType::q4_1, 32, 20},   {GgmlType::q5_0, 32, 22},   {GgmlType::q5_1, 32, 24},
      {GgmlType::q8_0, 32, 34},   {GgmlType::q8_1, 32, 36},   {GgmlType::q2_k, 256, 84},
      {GgmlType::q3_k, 256, 110}, {GgmlType::q4_k, 256, 144}, {GgmlType::q5_k, 256, 176},
      {GgmlType::q6_k, 256, 210}, {GgmlType::q8_k, 256, 292}};
  for (const Shape& s : kShapes)
    if (uint32_t(s.type) == id) {
      *block_values = s.values;
      *block_bytes = s.bytes;
      return true;
    }
  return false;
}

const char* gguf_value_type_name(GgufValueType type) {
  static const char* const kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                       "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = size_t(type);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

bool looks_like_gguf(std::string_view head) { return head.substr(0, 4) == "GGUF"; }

GgufReader::GgufReader(const std::string& path) : path_(path), file_(path) {
  Cursor in(file_.data(), file_.size(), path_);
  if (file_.size() < 4 || std::memcmp(file_.data(), "GGUF", 4) != 0)
    fail(path_, ": not a GGUF file (it does not start with \"GGUF\")");
  in.read<uint32_t>("the magic");
  version_ = in.read<uint32_t>("the version");
  if ((version_ & 0xffff) == 0 && version_ != 0)
    fail(path_, ": GGUF version ", version_,
         " reads as a big-endian file; gattn reads little-endian ones");
  if (version_ < 2 || version_ > kMaxVersion)
    fail(path_, ": GGUF version ", version_, " (gattn reads versions 2 and 3)");
  // A tensor info takes at least 8 (name length) + 4 (dims) + 4 (type) + 8 (offset) bytes; a
  // key-value pair 8 (key length) + 4 (type) + 1.
  const uint64_t n_tensors = in.count("the tensor count", 24);
  const uint64_t n_values = in.count("the metadata count", 13);

  for (uint64_t i = 0; i < n_values; ++i) {
    std::string key = in.string("a metadata key");
    if (key.empty()) fail(path_, ": metadata key ", i, " is empty");
    if (value_index_.count(key)) fail(path_, ": metadata '", key, "' appears twice");
    GgufValue value = read_value(in, path_, key);
    value_index_.emplace(key, metadata_.size());
    metadata_.emplace_back(std::move(key), std::move(value));
  }
  if (const GgufValue* a = find_value("general.alignment")) {
    if (a->is_array || a->element_type != GgufValueType::u32)
      fail(path_, ": metadata 'general.alignment' must be a u32");
    alignment_ = uint64_t(a->integers[0]);
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0)
      fail(path_, ": metadata 'general.alignment' is ", alignment_, ", not a power of 2");
  }

  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = in.string("a tensor name");
    if (t.name.size() >= kMaxNameBytes)
      fail(path_, ": tensor name '", t.name.substr(0, kMaxNameBytes), "...' is ", t.name.size(),
           " bytes long; GGUF allows at most ", kMaxNameBytes - 1);
    if (tensor_index_.count(t.name)) fail(path_, ": tensor '", t.name, "' appears twice");
    const std::string where = path_ + ": tensor '" + t.name + "'";
    const uint32_t dims = in.read<uint32_t>("a tensor's dimension count");
    if (dims > kMaxDims) fail(where, ": has ", dims, " dimensions; GGUF allows at most ", kMaxDims);
    t.numel = 1;
    for (uint32_t d = 0; d < dims; ++d) {
      const int64_t ne = in.read<int64_t>("a tensor's dimensions");
      if (ne < 0) fail(where, ": dimension ", d, " is ", ne);
      if (ne > 0 && t.numel > std::numeric_limits<int64_t>::max() / ne)
        fail(where, ": its shape holds more values than fit in 64 bits");
      t.shape.push_back(ne);
      t.numel *= ne;
    }
    if (t.shape.empty()) t.shape.push_back(1);
    t.type = in.read<uint32_t>("a tensor's type");
    int64_t block_values = 0, block_bytes = 0;
    if (!ggml_block_shape(t.type, &block_values, &block_bytes))
      fail(where, ": type ", ggml_type_name(t.type), " is not one gattn reads");
    if (t.shape[0] % block_values != 0)
      fail(where, ": ", t.shape[0], " values per row, not a whole number of ",
           ggml_type_name(t.type), " blocks of ", block_values);
    t.rows = t.shape[0] == 0 ? 0 : t.numel / t.shape[0];
    const uint64_t row_blocks = uint64_t(t.shape[0] / block_values);
    if (row_blocks > file_.size() / uint64_t(block_bytes))  // before the product can overflow
      fail(where, ": a row of ", t.shape[0], " values does not fit in the file of ", file_.size(),
           " bytes");
    t.row_bytes = int64_t(row_blocks) * block_bytes;
    if (t.rows > 0 && uint64_t(t.row_bytes) > file_.size() / uint64_t(t.rows))
      fail(where, ": its ", t.rows, " rows of ", t.row_bytes, " bytes do not fit in the file of ",
           file_.size(), " bytes");
    t.bytes = uint64_t(t.rows) * uint64_t(t.row_bytes);
    t.offset = in.read<uint64_t>("a tensor's offset");
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  const uint64_t data_start = padded(in.offset(), alignment_);
  uint64_t expected = 0;
  for (GgufTensor& t : tensors_) {
    if (t.offset != expected)
      fail(path_, ": tensor '", t.name, "' starts at data offset ", t.offset, ", expected ",
           expected, " (each tensor follows the one before it, padded to ", alignment_, " bytes)");
    if (data_start > file_.size() || t.bytes > file_.size() - data_start - t.offset)
      fail(path_, ": tensor '", t.name, "' (", t.bytes, " bytes at data offset ", t.offset,
           ") runs past the end of the file of ", file_.size(), " bytes");
    t.data = file_.data() + data_start + t.offset;
    expected = padded(t.offset + t.bytes, alignment_);
  }
}

const GgufValue* GgufReader::find_value(const std::string& key) const {
  const auto it = value_index_.find(key);
  return it == value_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufValue& GgufReader::value_of(const std::string& key, const char* expected) const {
  const GgufValue* v = find_value(key);
  if (!v) fail(path_, ": metadata '", key, "' is missing (expected ", expected, ")");
  return *v;
}

namespace {
[[noreturn]] void wrong_type(const std::string& path, const std::string& key, const GgufValue& v,
                             const char* expected) {
  fail(path, ": metadata '", key, "' is ", v.is_array ? "an array of " : "a ",
       gguf_value_type_name(v.element_type), ", expected ", expected);
}

int64_t checked_integer(const std::string& path, const std::string& key, const GgufValue& v,
                        int64_t x) {
  if (v.element_type == GgufValueType::u64 && x < 0)
    fail(path, ": metadata '", key, "' is ", uint64_t(x), ", more than gattn reads (2^63 - 1)");
  return x;
}
}  // namespace

std::string GgufReader::get_string(const std::string& key) const {
  const GgufValue& v = value_of(key, "a string");
  if (v.is_array || v.element_type != GgufValueType::string) wrong_type(path_, key, v, "a string");
  return v.strings[0];
}

int64_t GgufReader::get_int(const std::string& key) const {
  const GgufValue& v = value_of(key, "an integer");
  if (v.is_array || !is_integer(v.element_type) || v.element_type == GgufValueType::boolean)
    wrong_type(path_, key, v, "an integer");
  return checked_integer(path_, key, v, v.integers[0]);
}

double GgufReader::get_float(const std::string& key) const {
  const GgufValue& v = value_of(key, "a float");
  if (v.is_array || v.reals.empty()) wrong_type(path_, key, v, "a float");
  return v.reals[0];
}

bool GgufReader::get_bool(const std::string& key) const {
  const GgufValue& v = value_of(key, "a bool");
  if (v.is_array || v.element_type != GgufValueType::boolean) wrong_type(path_, key, v, "a bool");
  return v.integers[0] != 0;
}

const std::vector<std::string>& GgufReader::get_strings(const std::string& key) const {
  const GgufValue& v = value_of(key, "an array of strings");
  if (!v.is_array || v.element_type != GgufValueType::string)
    wrong_type(path_, key, v, "an array of strings");
  return v.strings;
}

std::vector<int64_t> GgufReader::get_ints(const std::string& key) const {
  const GgufValue& v = value_of(key, "an array of integers");
  if (!v.is_array || !is_integer(v.element_type) || v.element_type == GgufValueType::boolean)
    wrong_type(path_, key, v, "an array of integers");
  for (int64_t x : v.integers) checked_integer(path_, key, v, x);
  return v.integers;
}

std::vector<double> GgufReader::get_floats(const std::string& key) const {
  const GgufValue& v = value_of(key, "an array of floats");
  if (!v.is_array || (v.element_type != GgufValueType::f32 && v.element_type != GgufValueType::f64))
    wrong_type(path_, key, v, "an array of floats");
  return v.reals;
}

std::vector<bool> GgufReader::get_bools(const std::string& key) const {
  const GgufValue& v = value_of(key, "an array of bools");
  if (!v.is_array || v.element_type != GgufValueType::boolean)
    wrong_type(path_, key, v, "an array of bools");
  return std::vector<bool>(v.integers.begin(), v.integers.end());
}

const GgufTensor* GgufReader::find(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufReader::get(const std::string& name) const {
  const GgufTensor* t = find(name);
  if (!t) fail(path_, ": tensor '", name, "' is missing");
  return *t;
}

}  // namespace gattn

#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "io/file.h"
#include "util/checksum.h"
#include "util/error.h"
#include "util/fp16.h"
#include "util/json_parse.h"

namespace gattn {

namespace {
using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;
// __metadata__ key of a tensor's checksum (safetensors metadata maps strings to strings).
const std::string kChecksumPrefix = "gattn.xxh3:";

const std::pair<const char*, Dtype> kDtypes[] = {
    {"F64", Dtype::F64}, {"F32", Dtype::F32},  {"F16", Dtype::F16}, {"BF16", Dtype::BF16},
    {"I64", Dtype::I64}, {"I32", Dtype::I32},  {"I16", Dtype::I16}, {"I8", Dtype::I8},
    {"U8", Dtype::U8},   {"BOOL", Dtype::BOOL}};

uint64_t byte_size(const TensorToWrite& t) {
  uint64_t bytes = dtype_bytes(t.dtype);
  for (int64_t d : t.shape) bytes *= uint64_t(d);
  return bytes;
}

template <typename From>
From load(const uint8_t* p) {
  From v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
}  // namespace

size_t dtype_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::F64:
    case Dtype::I64:
      return 8;
    case Dtype::F32:
    case Dtype::I32:
      return 4;
    case Dtype::F16:
    case Dtype::BF16:
    case Dtype::I16:
      return 2;
    case Dtype::I8:
    case Dtype::U8:
    case Dtype::BOOL:
      return 1;
  }
  return 0;
}

const char* dtype_name(Dtype dtype) {
  for (const auto& [name, d] : kDtypes)
    if (d == dtype) return name;
  return "?";
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool looks_like_safetensors(std::string_view head, uint64_t file_bytes) {
  if (head.size() < 9 || head[8] != '{') return false;
  const uint64_t header_bytes = load<uint64_t>(reinterpret_cast<const uint8_t*>(head.data()));
  return header_bytes >= 2 && header_bytes <= file_bytes - 8;
}

namespace {
// serde_json, which the safetensors library parses with, allows only JSON whitespace after the
// header object; nlohmann stops at a NUL byte.
void check_header_padding(std::string_view header, const std::string& path) {
  const size_t nul = header.find('\0');
  if (nul != std::string_view::npos)
    fail(path, ": header has a NUL byte at header byte ", nul,
         " (padding must be spaces, as the safetensors library requires)");
}

// The data ranges, sorted, must tile [0, data_bytes): what the safetensors library validates.
void check_tiling(std::vector<std::pair<uint64_t, uint64_t>> ranges, uint64_t data_bytes,
                  const std::string& path) {
  std::sort(ranges.begin(), ranges.end());
  uint64_t expected = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin < expected) fail(path, ": tensors overlap at data bytes ", begin, "..", expected);
    if (begin > expected)
      fail(path, ": data bytes ", expected, "..", begin, " belong to no tensor (a hole)");
    expected = end;
  }
  if (expected != data_bytes)
    fail(path, ": ", data_bytes - expected, " data bytes after the last tensor (at ", expected,
         " of ", data_bytes, ") belong to no tensor");
}
}  // namespace

SafetensorsReader::SafetensorsReader(const std::string& path, Checksums checksums) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open (", std::strerror(errno), ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path, ": cannot stat (", std::strerror(errno), ")");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      ::close(fd);
      fail(path, ": cannot map (", std::strerror(errno), ")");
    }
  }
  ::close(fd);
  try {
    const auto* bytes = static_cast<const uint8_t*>(map_);
    if (size_ < 8)
      fail(path, ": not a safetensors file (", size_,
           " bytes, shorter than the 8-byte header length)");
    const uint64_t header_bytes = load<uint64_t>(bytes);
    if (header_bytes > kMaxHeaderBytes || header_bytes > size_ - 8)
      fail(path, ": header length ", header_bytes, " does not fit in the file of ", size_,
           " bytes");
    const std::string_view header_text(reinterpret_cast<const char*>(bytes) + 8, header_bytes);
    check_header_padding(header_text, path);
    const json header = parse_json_text(header_text, path + ": header");
    if (!header.is_object()) fail(path, ": header is not a JSON object");
    const uint8_t* data = bytes + 8 + header_bytes;
    const uint64_t data_bytes = size_ - 8 - header_bytes;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        if (!entry.is_object()) fail(path, ": __metadata__ is not an object");
        for (const auto& [key, value] : entry.items()) {
          if (!value.is_string()) fail(path, ": __metadata__ value '", key, "' is not a string");
          metadata_[key] = value.get<std::string>();
        }
        continue;
      }
      const std::string where = path + ": tensor '" + name + "'";
      if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
          !entry.contains("data_offsets"))
        fail(where, ": expected an object with dtype, shape and data_offsets");
      const json& dt = entry.at("dtype");
      const auto known = std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const auto& d) {
        return dt.is_string() && dt.get<std::string>() == d.first;
      });
      if (known == std::end(kDtypes)) fail(where, ": unsupported dtype ", json_summary(dt));
      TensorView t{name, known->second, {}, 1, nullptr};
      const json& shape = entry.at("shape");
      if (!shape.is_array()) fail(where, ": shape is not an array");
      for (const json& d : shape) {
        if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t(1) << 40))
          fail(where, ": shape ", json_summary(shape), " has an invalid dimension");
        t.shape.push_back(d.get<int64_t>());
        if (t.shape.back() != 0 && t.numel > (int64_t(1) << 50) / t.shape.back())
          fail(where, ": shape ", json_summary(shape), " is too large");
        t.numel *= t.shape.back();
      }
      const json& offsets = entry.at("data_offsets");
      if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
          !offsets[1].is_number_unsigned())
        fail(where, ": data_offsets must be two non-negative integers, found ",
             json_summary(offsets));
      const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
      const uint64_t expected = uint64_t(t.numel) * dtype_bytes(t.dtype);
      if (begin > end || end > data_bytes)
        fail(where, ": data_offsets [", begin, ", ", end, "] lie outside the ", data_bytes,
             " data bytes (truncated file?)");
      if (end - begin != expected)
        fail(where, ": data_offsets span ", end - begin, " bytes but ", dtype_name(t.dtype), " ",
             shape_string(t.shape), " needs ", expected);
      t.data = data + begin;
      ranges.emplace_back(begin, end);
      by_name_.emplace(t.name, tensors_.size());  // unique: the header has no key twice
      tensors_.push_back(std::move(t));
    }
    check_tiling(std::move(ranges), data_bytes, path);
    verify_checksums(checksums);
  } catch (...) {
    if (map_) ::munmap(map_, size_);
    throw;
  }
}

void release_mapped_pages(const uint8_t* begin, size_t bytes) {
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (uintptr_t(begin) + page - 1) / page * page;
  const uintptr_t hi = (uintptr_t(begin) + bytes) / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

void SafetensorsReader::verify_checksums(Checksums checksums) const {
  bool gattn_file = checksums == Checksums::required;
  for (const auto& [key, value] : metadata_) {
    if (!key.starts_with("gattn.")) continue;
    gattn_file = true;
    if (!key.starts_with(kChecksumPrefix))
      fail(path_, ": __metadata__ key '", key, "' is not one gattn writes (a corrupt header?)");
    const std::string name = key.substr(kChecksumPrefix.size());
    const TensorView* t = find(name);
    if (!t) fail(path_, ": __metadata__ has a checksum of tensor '", name, "', which is absent");
    const size_t bytes = size_t(t->numel) * dtype_bytes(t->dtype);
    const std::string actual = checksum_hex(checksum64(t->data, bytes));
    release_mapped_pages(t->data, bytes);
    if (actual != value)
      fail(path_, ": tensor '", name, "' is corrupt: its data has checksum ", actual,
           " but the file records ", value);
  }
  if (!gattn_file) return;
  for (const TensorView& t : tensors_)
    if (!metadata_.count(kChecksumPrefix + t.name))
      fail(path_, ": tensor '", t.name, "' has no checksum (__metadata__ '", kChecksumPrefix,
           t.name, "'); every tensor of a gattn file must have one");
}

SafetensorsReader::~SafetensorsReader() {
  if (map_) ::munmap(map_, size_);
}

const TensorView* SafetensorsReader::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorView& SafetensorsReader::get(const std::string& name) const {
  const TensorView* t = find(name);
  if (!t) fail(path_, ": tensor '", name, "' is missing");
  return *t;
}

std::string SafetensorsReader::metadata_value(const std::string& key) const {
  const auto it = metadata_.find(key);
  if (it == metadata_.end()) fail(path_, ": __metadata__ has no '", key, "'");
  return it->second;
}

bool is_float_dtype(Dtype dtype) {
  return dtype == Dtype::F64 || dtype == Dtype::F32 || dtype == Dtype::F16 || dtype == Dtype::BF16;
}

void convert_to_floats(Dtype dtype, const uint8_t* src, int64_t count, float* dst) {
  const size_t step = dtype_bytes(dtype);
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t* p = src + i * step;
    switch (dtype) {
      case Dtype::F64:
        dst[i] = float(load<double>(p));
        break;
      case Dtype::F32:
        dst[i] = load<float>(p);
        break;
      case Dtype::F16:
        dst[i] = half_to_float(load<uint16_t>(p));
        break;
      case Dtype::BF16: {
        const uint32_t bits = uint32_t(load<uint16_t>(p)) << 16;
        std::memcpy(&dst[i], &bits, 4);
        break;
      }
      default:
        fail("convert_to_floats: dtype ", dtype_name(dtype), " is not a float dtype");
    }
  }
}

std::vector<float> SafetensorsReader::read_floats(const std::string& name) const {
  const TensorView& t = get(name);
  if (!is_float_dtype(t.dtype))
    fail(path_, ": tensor '", name, "' has dtype ", dtype_name(t.dtype),
         ", expected a float dtype (F32, BF16, F16 or F64)");
  std::vector<float> out(t.numel);
  convert_to_floats(t.dtype, t.data, t.numel, out.data());
  return out;
}

std::vector<int64_t> SafetensorsReader::read_ints(const std::string& name) const {
  const TensorView& t = get(name);
  if (t.dtype != Dtype::I64 && t.dtype != Dtype::I32)
    fail(path_, ": tensor '", name, "' has dtype ", dtype_name(t.dtype), ", expected I64 or I32");
  std::vector<int64_t> out(t.numel);
  for (int64_t i = 0; i < t.numel; ++i)
    out[i] = t.dtype == Dtype::I64 ? load<int64_t>(t.data + i * 8) : load<int32_t>(t.data + i * 4);
  return out;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    const uint64_t bytes = byte_size(t);
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::map<std::string, std::string> metadata_and_checksums = metadata;
  for (const TensorToWrite& t : tensors)
    metadata_and_checksums[kChecksumPrefix + t.name] =
        checksum_hex(checksum64(t.data, byte_size(t)));
  if (!metadata_and_checksums.empty()) header["__metadata__"] = metadata_and_checksums;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  write_file_atomically(path, [&](const WriteChunk& write) {
    const uint64_t length = text.size();
    write(&length, 8);
    write(text.data(), text.size());
    for (const TensorToWrite& t : tensors) write(t.data, byte_size(t));
  });
}

}  // namespace gattn

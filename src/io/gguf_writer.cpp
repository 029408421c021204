#include "io/gguf_writer.h"

#include <cstring>

#include "io/file.h"
#include "util/error.h"

namespace gattn {

namespace {

constexpr uint64_t kAlignment = 32;

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

uint64_t aligned(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

void GgufWriter::key(const std::string& key, GgufValueType type) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, uint32_t(type));
  ++pairs_;
}

void GgufWriter::add_string(const std::string& k, const std::string& value) {
  key(k, GgufValueType::string);
  put_string(metadata_, value);
}

void GgufWriter::add_u32(const std::string& k, uint32_t value) {
  key(k, GgufValueType::u32);
  put(metadata_, value);
}

void GgufWriter::add_f32(const std::string& k, float value) {
  key(k, GgufValueType::f32);
  put(metadata_, value);
}

void GgufWriter::add_bool(const std::string& k, bool value) {
  key(k, GgufValueType::boolean);
  put<uint8_t>(metadata_, value ? 1 : 0);
}

void GgufWriter::add_strings(const std::string& k, const std::vector<std::string>& values) {
  key(k, GgufValueType::array);
  put<uint32_t>(metadata_, uint32_t(GgufValueType::string));
  put<uint64_t>(metadata_, values.size());
  for (const std::string& v : values) put_string(metadata_, v);
}

void GgufWriter::add_i32s(const std::string& k, const std::vector<int32_t>& values) {
  key(k, GgufValueType::array);
  put<uint32_t>(metadata_, uint32_t(GgufValueType::i32));
  put<uint64_t>(metadata_, values.size());
  for (int32_t v : values) put(metadata_, v);
}

void GgufWriter::add_bools(const std::string& k, const std::vector<bool>& values) {
  key(k, GgufValueType::array);
  put<uint32_t>(metadata_, uint32_t(GgufValueType::boolean));
  put<uint64_t>(metadata_, values.size());
  for (bool v : values) put<uint8_t>(metadata_, v ? 1 : 0);
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> shape,
                            const void* data, uint64_t bytes) {
  GATTN_ASSERT(!shape.empty() && shape.size() <= 4 && name.size() < 64, "GGUF tensor ", name);
  tensors_.push_back({name, type, std::move(shape), data, bytes});
}

void GgufWriter::write(const std::string& path) const {
  std::string head;
  head += "GGUF";
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, pairs_);
  head += metadata_;
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, uint32_t(t.shape.size()));
    for (int64_t d : t.shape) put<uint64_t>(head, uint64_t(d));
    put<uint32_t>(head, uint32_t(t.type));
    put<uint64_t>(head, offset);
    offset = aligned(offset + t.bytes);
  }
  head.resize(aligned(head.size()), '\0');
  write_file_atomically(path, [&](const WriteChunk& chunk) {
    chunk(head.data(), head.size());
    const char zeros[kAlignment] = {};
    for (const Tensor& t : tensors_) {
      chunk(t.data, t.bytes);
      if (const uint64_t pad = aligned(t.bytes) - t.bytes) chunk(zeros, pad);
    }
  });
}

}  // namespace gattn

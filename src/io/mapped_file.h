// A whole file mapped read-only (MAP_PRIVATE), unmapped when the object goes: the readers of
// large untrusted files (GGUF) read their headers and tensors in place through it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace gattn {

class MappedFile {
 public:
  // An Error naming the path if it cannot be opened, sized or mapped. An empty file maps to
  // nothing (data() null, size() 0).
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return static_cast<const uint8_t*>(map_); }
  size_t size() const { return size_; }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gattn

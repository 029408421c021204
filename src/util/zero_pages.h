// A buffer of zero-initialised values on anonymous memory pages, which cost memory only once
// written: a model's bf16 storage whose experts are read from the mapped checkpoint instead
// (model/weights.h) never touches, and so never holds, their pages.
#pragma once
#include <cstddef>
#include <utility>

namespace gattn {

// Page-aligned zero pages of `bytes` (std::bad_alloc when the address space is short); free
// them with unmap_zero_pages.
void* map_zero_pages(std::size_t bytes);
void unmap_zero_pages(void* p, std::size_t bytes);

template <typename T>
class ZeroPages {
 public:
  ZeroPages() = default;
  explicit ZeroPages(std::size_t n)
      : data_(n ? static_cast<T*>(map_zero_pages(n * sizeof(T))) : nullptr), size_(n) {}
  ~ZeroPages() {
    if (data_) unmap_zero_pages(data_, size_ * sizeof(T));
  }
  ZeroPages(ZeroPages&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  ZeroPages& operator=(ZeroPages&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace gattn

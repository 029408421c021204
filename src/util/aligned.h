// Storage whose first element is 64-byte aligned (a cache line, one AVX-512 vector): the
// parameter buffer, gradients and the activation arenas. Large buffers are also asked for on
// 2 MiB pages (Linux transparent huge pages, where enabled): a decode step streams every weight
// once, and with 4 KiB pages each 4 KiB weight row costs a TLB miss and restarts the hardware
// prefetcher.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace gattn {

inline constexpr std::size_t kBufferAlignment = 64;

// Allocates `bytes` aligned to kBufferAlignment, or for large buffers to 2 MiB with a hint
// that they be backed by 2 MiB pages (no effect where the kernel has them off).
void* allocate_aligned(std::size_t bytes);
void free_aligned(void* p, std::size_t bytes);

template <typename T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_aligned(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { free_aligned(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const AlignedAllocator<U>&) const {
    return true;
  }
};

using AlignedFloats = std::vector<float, AlignedAllocator<float>>;

}  // namespace gattn

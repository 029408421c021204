#include "util/aligned.h"

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace gattn {

namespace {
constexpr std::size_t kHugePage = std::size_t(2) << 20;
// From this size on a buffer starts on a huge page: the rounding wastes at most 2 MiB of
// address space (and nothing when transparent huge pages are off).
constexpr std::size_t kHugeFrom = std::size_t(8) << 20;

std::size_t alignment_for(std::size_t bytes) {
  return bytes >= kHugeFrom ? kHugePage : kBufferAlignment;
}
}  // namespace

void* allocate_aligned(std::size_t bytes) {
  void* p = ::operator new(bytes, std::align_val_t(alignment_for(bytes)));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Before the first touch, so the pages are faulted in huge. Only a hint: failure is harmless.
  if (bytes >= kHugeFrom) madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void free_aligned(void* p, std::size_t bytes) {
  ::operator delete(p, std::align_val_t(alignment_for(bytes)));
}

}  // namespace gattn

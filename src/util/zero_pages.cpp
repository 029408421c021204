#include "util/zero_pages.h"

#include <sys/mman.h>

#include <new>

namespace gattn {

void* map_zero_pages(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  // 2 MiB pages where the kernel has them (a decode step streams every weight once): a hint.
  if (bytes >= (std::size_t(8) << 20)) ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void unmap_zero_pages(void* p, std::size_t bytes) { ::munmap(p, bytes); }

}  // namespace gattn

#include "util/checksum.h"

#include <xxhash.h>

#include <cstdio>

namespace gattn {

uint64_t checksum64(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

std::string checksum_hex(uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(checksum));
  return text;
}

}  // namespace gattn

#include "util/checksum.h"

#include <xxhash.h>

#include <cstdio>
#include <new>

namespace gattn {

uint64_t checksum64(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

StreamingChecksum::StreamingChecksum() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

StreamingChecksum::~StreamingChecksum() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void StreamingChecksum::update(const void* data, size_t bytes) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, bytes);
}

uint64_t StreamingChecksum::value() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

std::string checksum_hex(uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(checksum));
  return text;
}

}  // namespace gattn

// Shared by the fuzz targets: the input as a temporary file (the readers under test take paths),
// and the one outcome bad input may have, gattn::Error; anything else escaping is a bug the fuzzer
// reports (an uncaught exception aborts).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "util/error.h"

namespace gattn::fuzz {

// A file holding the input, one per process, rewritten for every input.
inline const std::string& input_file(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/gattn_fuzz_input_" + std::to_string(::getpid());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) __builtin_trap();
  return path;
}

template <typename Body>
int expect_only_errors(Body body) {
  try {
    body();
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace gattn::fuzz

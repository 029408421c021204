// One buffer carved into named tensors: the whole memory plan of a pass is known before it runs,
// and entries() lists it (gattn bench --memory-plan prints it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/aligned.h"

namespace gattn {

class Arena {
 public:
  struct Entry {
    std::string name;
    int64_t floats;
  };
  // Registers a tensor; *slot points into the arena after allocate(). Every tensor starts on a
  // 64-byte boundary.
  void plan(float** slot, int64_t floats, std::string name);
  void allocate();
  void clear();
  int64_t bytes() const { return int64_t(storage_.size() * sizeof(float)); }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
  std::vector<std::pair<float**, int64_t>> slots_;  // slot, offset
  int64_t planned_ = 0;
  AlignedFloats storage_;
};

}  // namespace gattn

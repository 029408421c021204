// One buffer carved into named tensors: the whole memory plan of a step is visible in one place
// (entries()) and known before the step runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gattn {

class Arena {
 public:
  struct Entry {
    std::string name;
    int64_t floats;
  };
  // Registers a tensor; *slot points into the arena after allocate().
  void plan(float** slot, int64_t floats, std::string name);
  void allocate();
  void clear();
  int64_t bytes() const { return int64_t(storage_.size() * sizeof(float)); }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
  std::vector<std::pair<float**, int64_t>> slots_;  // slot, offset
  int64_t planned_ = 0;
  std::vector<float> storage_;
};

}  // namespace gattn

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
    bool shared = false;  // in a shared region (below)
  };
  // Registers a tensor; *slot points into the arena after allocate(). Every tensor starts on a
  // 64-byte boundary.
  void plan(float** slot, int64_t floats, std::string name);
  // A shared region: the tensors of several users that never hold data at the same time (the
  // blocks of an inference pass, the backward scratch of every layer) share memory.
  // begin_shared(); then for each user next_sharer() and its plan() calls; then end_shared().
  // Every user's tensors start at the region's start; the region is as large as the largest
  // user's. entries() lists each distinct list of tensors once.
  void begin_shared();
  void next_sharer();
  void end_shared();
  void allocate();
  void clear();
  int64_t bytes() const { return int64_t(storage_.size() * sizeof(float)); }
  int64_t planned_bytes() const { return planned_ * int64_t(sizeof(float)); }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  void close_sharer();

  std::vector<Entry> entries_;
  std::vector<std::pair<float**, int64_t>> slots_;  // slot, offset
  int64_t planned_ = 0;
  AlignedFloats storage_;
  // The shared region being planned: its start, the largest end so far, where the current
  // user's entries begin, and the entry lists of the users so far (each listed once).
  bool sharing_ = false;
  int64_t shared_start_ = 0, shared_end_ = 0;
  size_t sharer_entries_ = 0;
  std::vector<std::vector<Entry>> sharer_lists_;
};

}  // namespace gattn

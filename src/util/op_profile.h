// Wall time per named op, summed over calls, for `gattn bench --profile`. Code marks where each op
// starts with sections.next("name"); without a profile that is one pointer test.
#pragma once
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace gattn {

class OpProfile {
 public:
  void add(const char* op, double seconds);
  // (op, seconds) in the order the ops first ran.
  const std::vector<std::pair<std::string, double>>& totals() const { return totals_; }
  void clear() { totals_.clear(); }

 private:
  std::vector<std::pair<std::string, double>> totals_;
};

// Consecutive timed sections of one function: next() ends the running section and starts
// another; the destructor ends the last.
class OpSections {
 public:
  explicit OpSections(OpProfile* profile) : profile_(profile) {}
  ~OpSections() { next(nullptr); }
  OpSections(const OpSections&) = delete;
  OpSections& operator=(const OpSections&) = delete;
  void next(const char* op) {
    if (!profile_) return;
    const auto now = std::chrono::steady_clock::now();
    if (op_) profile_->add(op_, std::chrono::duration<double>(now - start_).count());
    op_ = op;
    start_ = now;
  }

 private:
  OpProfile* profile_;
  const char* op_ = nullptr;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gattn

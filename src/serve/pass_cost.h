// What a forward pass costs, learned from the passes the server runs: the scheduler prices the
// prompt tokens it may add beside decoding slots with these (serve/scheduler.cpp).
#pragma once
#include <cstdint>
#include <vector>

namespace gattn {

// fixed + per_unit x units, fitted by least squares on the recent samples (exponentially
// weighted, about the last 20). Attention's time per query-key pair: a row at position p scores
// p + 1 keys, and its reads and products grow with them.
class LineCost {
 public:
  void record(double seconds, double units);
  bool ready() const { return w_ > 0 && sx_ > 0 && sy_ > 0; }
  // The fitted slope; while the units hardly varied, time over units (which overstates a unit's
  // cost, so budgets err small).
  double per_unit() const;
  double seconds(double units) const;

 private:
  double w_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
};

// A pass's time outside attention by its number of token rows, measured per row count: it is
// not a line. At the 0.6B shape in bf16 (one thread) a decode-only pass of 3 rows took 39 ms, 5
// rows 56, 9 rows 75 and 18 rows 86: up to 8 rows the small-batch kernel is compute-bound and
// each row costs ~8 ms, above them oneDNN's GEMM costs far less per row; one line fitted over
// 3-18 rows priced a row at 2.2 ms and a 3-row pass at 54 ms, and let prompt tokens double a
// pass's time.
class RowsCost {
 public:
  void record(int rows, double seconds);  // rows >= 1
  bool ready() const { return !measured_.empty(); }
  // The recent mean at a measured count; between measured counts, linear; above the largest
  // one, its time per row for each row more (more than a row adds, as a pass's fixed part is in
  // it: such a count is priced high until it has run once); below the smallest, proportional.
  double seconds(int rows) const;

 private:
  double mean(int rows) const { return sum_[rows] / weight_[rows]; }
  std::vector<double> weight_, sum_;  // per row count, exponentially weighted
  std::vector<int> measured_;         // the counts with a sample, ascending
};

}  // namespace gattn

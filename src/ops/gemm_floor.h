// The GEMM-bound floor of a training step: every GEMM shape the step ran (ops/gemm_log.h), each
// timed alone on its own buffers, times the number of calls. A step can only approach it by doing
// nothing but its GEMMs, each at the rate BLAS reaches at that shape on this machine.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "ops/exec_context.h"
#include "ops/gemm_log.h"

namespace gattn {

struct GemmShapeTime {
  GemmShape shape;
  int64_t calls = 0;
  double ms = 0;  // all calls
};

struct GemmFloor {
  double ms = 0;         // the floor
  double weight_ms = 0;  // of it: GEMMs run from the main thread (BLAS uses every thread)
  double tile_ms = 0;    // of it: GEMMs run inside parallel regions (attention tiles)
  double gflop = 0;      // what the GEMMs compute
  std::vector<GemmShapeTime> per_shape;  // the largest share first

  int shapes() const { return int(per_shape.size()); }
  int64_t calls() const {
    int64_t n = 0;
    for (const GemmShapeTime& t : per_shape) n += t.calls;
    return n;
  }
};

// GEMMs that ran inside a parallel region are timed with every thread running its own copy at
// once and count 1 / threads of their time each. Each shape runs in the step's precision.
GemmFloor measure_gemm_floor(const ExecContext& step, const std::map<GemmShape, int64_t>& calls);

}  // namespace gattn

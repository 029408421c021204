// Denormal floats flushed to zero on the calling thread for a scope (x86: MXCSR's FTZ and DAZ
// bits), the thread's previous mode restored after: a kernel's own choice, never a process-wide
// one.
//
// The gated delta rule needs it: a fast-decaying head's decays exp(gamma_i - gamma_j) pass through
// the denormal range (|x| < 1.2e-38) on their way to zero, and every product that reads a denormal
// costs a microcode assist of ~100 cycles on x86, which made its chunks 3-9x slower at the decays
// a freshly initialised Qwen3.5 layer has (BENCHMARKS.md). Flushing changes a result by less than
// 1.2e-38 in absolute value.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace gattn {

class DenormalsFlushed {
 public:
  // enable false: a no-op (the double-precision oracles keep IEEE arithmetic unchanged).
  explicit DenormalsFlushed(bool enable = true) {
#if defined(__x86_64__) || defined(__i386__)
    if (!enable) return;
    active_ = true;
    saved_ = _mm_getcsr();
    _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero);
#else
    (void)enable;
#endif
  }
  ~DenormalsFlushed() {
#if defined(__x86_64__) || defined(__i386__)
    if (active_) _mm_setcsr(saved_);
#endif
  }
  DenormalsFlushed(const DenormalsFlushed&) = delete;
  DenormalsFlushed& operator=(const DenormalsFlushed&) = delete;

 private:
  static constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
  bool active_ = false;
  unsigned saved_ = 0;
};

}  // namespace gattn

#include "util/threads.h"

#include <cblas.h>
#include <omp.h>

#include "util/error.h"

namespace gattn {

void set_num_threads(int threads) {
  if (threads < 1) fail("thread count must be at least 1, got ", threads);
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int num_threads() { return omp_get_max_threads(); }

std::string blas_core_name() { return openblas_get_corename(); }

}  // namespace gattn

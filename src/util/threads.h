// One thread count for OpenMP loops and OpenBLAS (built for OpenMP, so they share one pool).
#pragma once
#include <string>

namespace gattn {

void set_num_threads(int threads);
int num_threads();
std::string blas_core_name();

}  // namespace gattn

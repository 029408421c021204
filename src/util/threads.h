// One thread count for OpenMP loops and OpenBLAS (built for OpenMP, so they share one pool).
#pragma once
#include <string>

namespace gattn {

// Fails for threads < 1; more threads than available_cores() are clamped with a message.
void set_num_threads(int threads);
int available_cores();  // the CPUs this process may run on
int num_threads();
std::string blas_core_name();

}  // namespace gattn

// An MPI call's error code as an Error naming the call (the MPI sources' helper).
#pragma once
#include <mpi.h>

#include <string>

#include "util/error.h"

namespace gattn {

inline void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail(call, " failed: ", std::string(text, size_t(length)));
}

}  // namespace gattn

// How much memory this process may still fill: the system's available memory (MemAvailable),
// or less where a cgroup limits it (v2 memory.max, v1 memory.limit_in_bytes, minus its usage).
#pragma once
#include <cstdint>

namespace gattn {

// Bytes; -1 where /proc/meminfo cannot be read.
int64_t available_memory_bytes();

}  // namespace gattn

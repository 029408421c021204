#include "util/memory_budget.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace gattn {

namespace {

int64_t read_number(const std::string& path) {  // -1: absent, unreadable or "max"
  std::ifstream f(path);
  std::string text;
  if (!(f >> text) || text == "max") return -1;
  try {
    return std::stoll(text);
  } catch (...) {
    return -1;
  }
}

// The limit minus the usage of this process's cgroup (v2, else v1's memory controller); -1: none.
int64_t cgroup_room() {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::string limit, usage;
    if (controllers.empty()) {  // v2
      limit = "/sys/fs/cgroup" + path + "/memory.max";
      usage = "/sys/fs/cgroup" + path + "/memory.current";
      if (read_number(limit) < 0) {  // a hybrid host: v2 under unified/
        limit = "/sys/fs/cgroup/unified" + path + "/memory.max";
        usage = "/sys/fs/cgroup/unified" + path + "/memory.current";
      }
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      limit = "/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes";
      usage = "/sys/fs/cgroup/memory" + path + "/memory.usage_in_bytes";
    } else {
      continue;
    }
    const int64_t max = read_number(limit), used = read_number(usage);
    if (max > 0 && max < (int64_t(1) << 60))
      return std::max<int64_t>(0, max - std::max<int64_t>(used, 0));
  }
  return -1;
}

}  // namespace

int64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  int64_t available = -1;
  while (std::getline(f, line))
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream(line.substr(13)) >> available;
      available *= 1024;
    }
  const int64_t room = cgroup_room();
  if (room >= 0) available = available < 0 ? room : std::min(available, room);
  return available;
}

}  // namespace gattn

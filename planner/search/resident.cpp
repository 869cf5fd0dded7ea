// ResidentBytes: the process's resident set, for the search's memory budget
// (PlanRequest::max_memory_bytes).
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include "meshplan/search.hpp"

namespace meshplan {

int64_t ResidentBytes() {
  // /proc/self/statm: size resident shared text lib data dt, in pages (proc(5)).
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    long long size = 0, resident = 0;
    const int n = std::fscanf(f, "%lld %lld", &size, &resident);
    std::fclose(f);
    const long page = sysconf(_SC_PAGESIZE);
    if (n == 2 && resident > 0 && page > 0) return static_cast<int64_t>(resident) * page;
  }
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0) return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // KiB on Linux
  return 0;
}

}  // namespace meshplan

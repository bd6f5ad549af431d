// example_util.h: the small helpers every example program needs, shared by
// examples/mpi/common/legacy_test_util.h and examples/tutorials/common/tutorial_util.h.
#ifndef EXAMPLES_COMMON_EXAMPLE_UTIL_H_
#define EXAMPLES_COMMON_EXAMPLE_UTIL_H_

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>

namespace exampleutil {

// Exit status of a program that this host cannot run (too few GPUs): `make gpu-test` counts it
// as skipped, not failed.
constexpr int kExitSkipped = 77;

// printf into a std::string (up to 1 KiB), for messages built before they are needed.
inline std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string strf(const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return buf;
}

// "4 B", "64 KiB", "1000003 B": sizes in table rows and messages.
inline std::string sizeText(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return strf("%llu %s", static_cast<unsigned long long>(bytes), units[u]);
}

#if defined(__CUDACC__)
// Nanoseconds of the GPU's global timer (wall-clock based, unlike clock64()).
__device__ inline uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

}  // namespace exampleutil

#endif  // EXAMPLES_COMMON_EXAMPLE_UTIL_H_

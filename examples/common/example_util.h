// example_util.h: the one helper header of the example programs (the tutorials of
// examples/tutorials). Each program is one translation unit, so the kernels below are defined
// here directly. Programs include it as "../../common/example_util.h" (the build adds no include
// path for it).
//
//   - CHECK_CUDA / CHECK_MSCCLPP: check a call, print "FAIL <program>: ..." with the call, the
//     source line and the error text, and end the program (or the whole MPI job, see abortJob);
//   - waitStreams: a host watchdog that waits for streams with a deadline, so that a kernel stuck
//     in a spin becomes a failure with a message instead of a hang;
//   - device helpers: a cycle-count spin and the GPU's nanosecond timer;
//   - a seeded byte pattern with fill and check kernels, for checking every byte that arrives;
//   - for programs run under mpirun: startMpi (MPI, the program's name in FAIL lines, which then
//     end the whole job) and, for the two-GPU tutorials, pairOfRanks (ranks 0 and 1).
//
// It does not include <mpi.h> (programs that do are run under mpirun, the others directly): the
// MPI helpers are defined when the program has included <mpi.h> before this header.
#ifndef EXAMPLES_COMMON_EXAMPLE_UTIL_H_
#define EXAMPLES_COMMON_EXAMPLE_UTIL_H_

#include <cuda_runtime.h>
#include <mscclpp.h>  // only for mscclppGetErrorString
#include <mscclpp/core.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace example {

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

// Nanoseconds of the GPU's global timer (wall-clock based, unlike clock64()).
__device__ inline uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Bound for the device-side waits that take one (wait(maxSpinCount), relaxedWait, flush): after
// this many unsuccessful polls the header calls __trap(), which aborts the kernel with an error
// (cudaErrorLaunchFailure) that the watchdog reports. A poll is a system-scope load of a few
// hundred nanoseconds, so this is seconds to minutes: far beyond any wait of these programs.
constexpr int64_t kMaxSpins = 100000000;

// How long the host lets a kernel run before it declares it stuck.
constexpr double kWatchdogSec = 60.0;

// Who is talking, for the FAIL lines, and how to end the job.
struct Identity {
  const char* program = "example";
  int rank = -1;    // -1: a single-process program
  int device = -1;  // -1: not known or several
  void (*abortJob)(int code) = nullptr;  // set by MPI programs (MPI_Abort); otherwise exit()
};
inline Identity g_id;

// "FAIL <program>: rank R (GPU D): message"; the rank and GPU parts appear when they are known.
inline std::string failPrefix() {
  std::string s = strf("FAIL %s: ", g_id.program);
  if (g_id.rank >= 0) s += strf("rank %d ", g_id.rank);
  if (g_id.device >= 0) s += strf("(GPU %d) ", g_id.device);
  if (g_id.rank >= 0 || g_id.device >= 0) s.back() = ':', s += ' ';
  return s;
}

// Prints the FAIL line and ends the program (every rank of the job, for MPI programs).
[[noreturn]] inline void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] inline void fail(const char* fmt, ...) {
  char msg[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  std::fprintf(stdout, "%s%s\n", failPrefix().c_str(), msg);
  std::fflush(stdout);
  std::fflush(stderr);
  if (g_id.abortJob != nullptr) g_id.abortJob(1);
  std::exit(1);
}

inline void checkCuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) {
    fail("%s:%d: %s failed: %s (%s)", file, line, call, cudaGetErrorString(err), cudaGetErrorName(err));
  }
}

inline void checkMscclpp(mscclppResult_t res, const char* call, const char* file, int line) {
  if (res != mscclppSuccess) {
    fail("%s:%d: %s failed: %s (mscclppResult_t %d)", file, line, call, mscclppGetErrorString(res),
         static_cast<int>(res));
  }
}

#define CHECK_CUDA(call) ::example::checkCuda((call), #call, __FILE__, __LINE__)
#define CHECK_MSCCLPP(call) ::example::checkMscclpp((call), #call, __FILE__, __LINE__)
// A launch error (bad configuration) shows at once; an execution error at the next wait.
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

// ---- Host watchdog -----------------------------------------------------------------------------

struct StreamOnDevice {
  int device;
  cudaStream_t stream;
};

// Waits until all work queued on `streams` has finished. An execution error, or a kernel still
// running after timeoutSec, ends the program with a FAIL line that names `what`. Restores the
// current device.
inline void waitStreams(const std::vector<StreamOnDevice>& streams, const std::string& what,
                        double timeoutSec = kWatchdogSec) {
  int current = 0;
  CHECK_CUDA(cudaGetDevice(&current));
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeoutSec));
  std::vector<bool> done(streams.size(), false);
  for (size_t remaining = streams.size(); remaining > 0;) {
    for (size_t i = 0; i < streams.size(); ++i) {
      if (done[i]) continue;
      CHECK_CUDA(cudaSetDevice(streams[i].device));
      const cudaError_t err = cudaStreamQuery(streams[i].stream);
      if (err == cudaSuccess) {
        done[i] = true;
        --remaining;
      } else if (err != cudaErrorNotReady) {
        fail("%s on GPU %d: %s (%s)%s", what.c_str(), streams[i].device, cudaGetErrorString(err),
             cudaGetErrorName(err),
             err == cudaErrorLaunchFailure ? ": a bounded device wait gave up (__trap), the peer never answered" : "");
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      fail("timeout: %s did not finish within %.0f s (a kernel is stuck waiting for its peer or the proxy)",
           what.c_str(), timeoutSec);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  CHECK_CUDA(cudaSetDevice(current));
}

inline void waitStream(int device, cudaStream_t stream, const std::string& what, double timeoutSec = kWatchdogSec) {
  waitStreams({StreamOnDevice{device, stream}}, what, timeoutSec);
}

// ---- Device helpers ------------------------------------------------------------------------------

// Busy-waits about `cycles` SM clock cycles (bounded by construction).
__device__ inline void spinCycles(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// ---- Data pattern --------------------------------------------------------------------------------

// A 32-bit mixing function: neighbouring inputs give unrelated outputs.
__host__ __device__ inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// The seed of one region's data: what it is (kind), who sent it and in which round.
__host__ __device__ inline uint32_t makeSeed(uint32_t kind, uint32_t sender, uint32_t round) {
  return mix32(mix32(mix32(kind + 1) ^ sender) ^ round);
}

// Byte `offset` of a region filled with `seed`.
__host__ __device__ inline uint8_t patternByte(uint32_t seed, uint64_t offset) {
  const uint64_t word = offset / 4;
  const uint32_t w = mix32(seed ^ mix32(static_cast<uint32_t>(word) ^ (static_cast<uint32_t>(word >> 32) * 0x9e3779b9u)));
  return static_cast<uint8_t>(w >> (8 * (offset % 4)));
}

// Fills bytes [0, size) of region with the pattern of `seed` (grid-stride).
__global__ void fillPatternKernel(uint8_t* region, uint64_t size, uint32_t seed) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += stride) region[i] = patternByte(seed, i);
}

// What a check found: the number of wrong bytes and the offset of the first one.
struct CheckResult {
  unsigned long long wrong;
  unsigned long long firstWrong;  // ~0 when none
};

// Compares bytes [0, size) of region with the pattern of `seed`; adds to *result.
__global__ void checkPatternKernel(const uint8_t* region, uint64_t size, uint32_t seed, CheckResult* result) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  unsigned long long wrong = 0, first = ~0ull;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += stride) {
    if (region[i] != patternByte(seed, i)) {
      ++wrong;
      if (i < first) first = i;
    }
  }
  if (wrong != 0) {
    atomicAdd(&result->wrong, wrong);
    atomicMin(&result->firstWrong, first);
  }
}

constexpr int kPatternThreads = 256;
constexpr int kPatternMaxBlocks = 2048;

inline unsigned int patternBlocks(uint64_t size) {
  uint64_t blocks = (size + kPatternThreads - 1) / kPatternThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > kPatternMaxBlocks) blocks = kPatternMaxBlocks;
  return static_cast<unsigned int>(blocks);
}

inline void launchFill(void* region, uint64_t size, uint32_t seed, cudaStream_t stream) {
  if (size == 0) return;
  fillPatternKernel<<<patternBlocks(size), kPatternThreads, 0, stream>>>(static_cast<uint8_t*>(region), size, seed);
  CHECK_LAUNCH();
}

// Resets *result (device memory) and queues the check of region on stream.
inline void launchCheck(const void* region, uint64_t size, uint32_t seed, CheckResult* result, cudaStream_t stream) {
  const CheckResult clean{0, ~0ull};
  CHECK_CUDA(cudaMemcpyAsync(result, &clean, sizeof(clean), cudaMemcpyHostToDevice, stream));
  if (size == 0) return;
  checkPatternKernel<<<patternBlocks(size), kPatternThreads, 0, stream>>>(static_cast<const uint8_t*>(region), size,
                                                                         seed, result);
  CHECK_LAUNCH();
}

// Fetches a check's result (after the stream has been waited for).
inline CheckResult readCheck(const CheckResult* result) {
  CheckResult r;
  CHECK_CUDA(cudaMemcpy(&r, result, sizeof(r), cudaMemcpyDeviceToHost));
  return r;
}

// ---- MPI programs (after <mpi.h>) -------------------------------------------------------------

#if defined(MPI_VERSION)
// Ends every rank of the job (g_id.abortJob of the MPI programs).
inline void abortMpiJob(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

// Starts MPI and names the program for the FAIL lines; returns this rank and stores the number of
// ranks in *nranks.
inline int startMpi(int* argc, char*** argv, const char* program, int* nranks) {
  MPI_Init(argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, nranks);
  g_id.program = program;
  g_id.rank = rank;
  g_id.abortJob = abortMpiJob;
  return rank;
}

// For the tutorials between two GPUs: the communicator of ranks 0 and 1 (fewer than two ranks is
// a failure). Further ranks, one per extra GPU, get MPI_COMM_NULL and only finalize and leave.
inline MPI_Comm pairOfRanks(int rank, int nranks) {
  if (nranks < 2) fail("run with 2 ranks (mpirun -np 2), got %d", nranks);
  MPI_Comm pair = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  return pair;
}
#endif  // MPI_VERSION

}  // namespace example

#endif  // EXAMPLES_COMMON_EXAMPLE_UTIL_H_

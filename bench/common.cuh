// common.cuh: what the benchmark programs of bench/ share (bench_*, profile_collective), which run
// one process per GPU under mpirun: their start-up and error checks, and the data pattern with
// which bench_channels and bench_legacy_putbw check what arrived.
//
//   - check / checkCuda: on failure print "FAIL <program>: rank R: <what>" to stderr (checkCuda
//     first prints the CUDA error on a line of its own) and end every rank of the job;
//   - startBench: MPI, this rank (kept in g_rank for the programs and the FAIL lines), the number
//     of ranks checked against the program's bounds, and this rank's GPU chosen and made current;
//   - pattern, fillKernel, checkKernel: a byte pattern that depends on the sender, written and
//     checked (wrong bytes counted) by grid-stride kernels.
//
// It needs only CUDA and MPI, so the programs written only against the legacy header mscclpp.h
// can use it. Programs include it as "../common.cuh" (the build adds no include path for it).
#ifndef MSCCLPP_BENCH_COMMON_CUH_
#define MSCCLPP_BENCH_COMMON_CUH_

#include <cuda_runtime.h>
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdio>

namespace benchmpi {

// Every benchmark measures traffic between at least two GPUs.
constexpr int kMinRanks = 2;
// BenchSetup::maxRanks when the program takes any number of ranks from kMinRanks up.
constexpr int kAnyNumberOfRanks = INT_MAX;
// Exit code of every rank when a check fails.
constexpr int kFailExitCode = 1;
// Room for the rank-count FAIL message startBench builds.
constexpr int kRankMessageBytes = 64;

// How a program starts: its name and what it needs.
struct BenchSetup {
  // Named in the FAIL lines.
  const char* program = "bench";
  // More ranks than this is a failure.
  int maxRanks = kAnyNumberOfRanks;
  // Rank r uses GPU r % (number of GPUs on the host); with gpuPerRank the host must also have a
  // GPU for every rank (so rank r uses GPU r).
  bool gpuPerRank = false;
  // Appended to checkCuda's error line: a hint on what an error of this program may mean.
  const char* cudaErrorNote = "";
};

// What startBench found out: this rank, the number of ranks and this rank's GPU.
struct BenchJob {
  int rank = 0;
  int nranks = 0;
  int device = 0;
};

// This process's rank in MPI_COMM_WORLD (set by startBench).
inline int g_rank = 0;
// The setup startBench was given, for the FAIL lines.
inline BenchSetup g_setup;

// Prints "FAIL <program>: rank R: <what>" and aborts every rank of the job unless ok.
inline void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "FAIL %s: rank %d: %s\n", g_setup.program, g_rank, what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kFailExitCode);
}

// check() of a CUDA call's result, after a line with the CUDA error text (and the program's note).
inline void checkCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    std::fprintf(stderr, "rank %d: %s: %s%s\n", g_rank, what, cudaGetErrorString(e), g_setup.cudaErrorNote);
  check(e == cudaSuccess, what);
}

// Starts MPI, checks the number of ranks and makes this rank's GPU current, as `setup` says.
inline BenchJob startBench(int* argc, char*** argv, const BenchSetup& setup) {
  g_setup = setup;
  MPI_Init(argc, argv);
  BenchJob job;
  MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &job.nranks);
  g_rank = job.rank;
  char rankNeed[kRankMessageBytes];
  if (setup.maxRanks == kAnyNumberOfRanks)
    std::snprintf(rankNeed, sizeof(rankNeed), "needs at least %d ranks", kMinRanks);
  else
    std::snprintf(rankNeed, sizeof(rankNeed), "needs %d to %d ranks", kMinRanks, setup.maxRanks);
  check(job.nranks >= kMinRanks && job.nranks <= setup.maxRanks, rankNeed);
  int ndev = 0;
  checkCuda(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
  if (setup.gpuPerRank) check(ndev >= job.nranks, "needs one GPU per rank on this host");
  job.device = job.rank % ndev;
  checkCuda(cudaSetDevice(job.device), "cudaSetDevice");
  return job;
}

// Byte i of the data `sender` sends.
__host__ __device__ inline uint8_t pattern(int sender, uint64_t i) {
  return static_cast<uint8_t>(sender * 37 + i * 7 + (i >> 12));
}

__global__ void fillKernel(uint8_t* p, uint64_t n, int sender) {
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    p[i] = pattern(sender, i);
}

// Adds to *wrong the bytes of p[0, n) that are not `sender`'s pattern.
__global__ void checkKernel(const uint8_t* p, uint64_t n, int sender, unsigned long long* wrong) {
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    if (p[i] != pattern(sender, i)) atomicAdd(wrong, 1ull);
}

}  // namespace benchmpi

#endif  // MSCCLPP_BENCH_COMMON_CUH_

// bench_mpi.h: the start-up and error checks of the benchmark programs examples/mpi/bench_*/main.cu,
// which run one process per GPU under mpirun.
//
//   - check / checkCuda: on failure print "FAIL <program>: rank R: <what>" to stderr (checkCuda
//     first prints the CUDA error on a line of its own) and end every rank of the job;
//   - startBench: MPI, this rank (kept in g_rank for the programs and the FAIL lines), the number
//     of ranks checked against the program's bounds, and this rank's GPU chosen and made current.
//
// It needs only CUDA and MPI, so the programs written only against the legacy header mscclpp.h
// can use it. Programs include it as "../common/bench_mpi.h" (the build adds no include path for
// it).
#ifndef EXAMPLES_MPI_COMMON_BENCH_MPI_H_
#define EXAMPLES_MPI_COMMON_BENCH_MPI_H_

#include <cuda_runtime.h>
#include <mpi.h>

#include <climits>
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

}  // namespace benchmpi

#endif  // EXAMPLES_MPI_COMMON_BENCH_MPI_H_

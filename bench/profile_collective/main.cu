// profile_collective: one collective at one size, through this library and then through NCCL,
// in a C++ main, for a profiler (Nsight Compute) to attach to.
//
//   mpirun -np N ./profile_collective allreduce|allgather BYTES [CALLS] [registered] [nccl]
//
// BYTES is the AllReduce buffer, or what each rank receives from an AllGather (as in
// mscclpp-bench). float32, sum, out of place. Each library gets kWarmupCalls untimed calls, then
// CALLS timed ones (default kDefaultCalls), so a profiler can skip the warm-up by launch count.
// "registered" registers the send and receive buffers with the library (zero-copy paths);
// "nccl" also runs the same calls through libnccl.so.2, dlopened here so nothing links NCCL at
// build time. Rank 0 prints the mean time per call (slowest rank) and the bus bandwidth; the
// result of the last call is checked at every kCheckStride-th element on every rank.
#include <dlfcn.h>
#include <mscclpp/collectives.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../common.cuh"

using benchmpi::check;
using benchmpi::checkCuda;

namespace {

constexpr int kWarmupCalls = 3;
constexpr int kDefaultCalls = 10;
// The result check reads one element in this many (a 1 GiB check stays quick on the host).
constexpr size_t kCheckStride = 4093;
constexpr double kMicrosPerMilli = 1e3;
constexpr double kBytesPerGB = 1e9;

// The parts of NCCL's ABI this program calls (nccl.h's types; NCCL itself is dlopened).
struct NcclUniqueId {
  char internal[128];
};
using NcclComm = void*;
constexpr int kNcclFloat32 = 7;
constexpr int kNcclSum = 0;

struct Nccl {
  int (*getUniqueId)(NcclUniqueId*) = nullptr;
  int (*commInitRank)(NcclComm*, int, NcclUniqueId, int) = nullptr;
  int (*allReduce)(const void*, void*, size_t, int, int, NcclComm, cudaStream_t) = nullptr;
  int (*allGather)(const void*, void*, size_t, int, NcclComm, cudaStream_t) = nullptr;
  int (*commDestroy)(NcclComm) = nullptr;
};

template <typename Fn>
void resolve(void* lib, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  check(*fn != nullptr, name);
}

Nccl openNccl() {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  check(lib != nullptr, "dlopen libnccl.so.2");
  Nccl n;
  resolve(lib, "ncclGetUniqueId", &n.getUniqueId);
  resolve(lib, "ncclCommInitRank", &n.commInitRank);
  resolve(lib, "ncclAllReduce", &n.allReduce);
  resolve(lib, "ncclAllGather", &n.allGather);
  resolve(lib, "ncclCommDestroy", &n.commDestroy);
  return n;  // never dlclosed: NCCL keeps threads for the life of the process
}

// Runs call() kWarmupCalls + calls times on stream and returns the slowest rank's mean
// milliseconds per timed call.
template <typename Call>
double timeCalls(int calls, cudaStream_t stream, Call call) {
  for (int i = 0; i < kWarmupCalls; ++i) call();
  checkCuda(cudaStreamSynchronize(stream), "warm-up");
  MPI_Barrier(MPI_COMM_WORLD);
  cudaEvent_t start, stop;
  checkCuda(cudaEventCreate(&start), "cudaEventCreate");
  checkCuda(cudaEventCreate(&stop), "cudaEventCreate");
  checkCuda(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < calls; ++i) call();
  checkCuda(cudaEventRecord(stop, stream), "cudaEventRecord");
  checkCuda(cudaEventSynchronize(stop), "timed calls");
  float ms = 0;
  checkCuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  double mean = ms / calls, slowest = 0;
  MPI_Allreduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// Checks the result of the last call: every element of an AllReduce is the sum of the ranks'
// inputs (rank r sends r + 1), block r of an AllGather is r + 1.
void checkResult(const char* who, bool allReduce, const float* recv, size_t recvCount, size_t sendCount, int nranks) {
  std::vector<float> host(recvCount);
  checkCuda(cudaMemcpy(host.data(), recv, recvCount * sizeof(float), cudaMemcpyDeviceToHost), "copy the result");
  size_t wrong = 0;
  for (size_t i = 0; i < recvCount; i += kCheckStride) {
    float want = allReduce ? nranks * (nranks + 1) / 2.0f : static_cast<float>(i / sendCount + 1);
    wrong += host[i] != want;
  }
  wrong += host[recvCount - 1] != (allReduce ? nranks * (nranks + 1) / 2.0f : static_cast<float>(nranks));
  size_t total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
  std::string what = std::string(who) + ": result checked";
  check(total == 0, what.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  benchmpi::BenchSetup setup;
  setup.program = "profile_collective";
  setup.gpuPerRank = true;
  benchmpi::BenchJob job = benchmpi::startBench(&argc, &argv, setup);
  const char* usage = "usage: profile_collective allreduce|allgather BYTES [CALLS] [registered] [nccl]";
  check(argc >= 3, usage);
  const bool allReduce = std::strcmp(argv[1], "allreduce") == 0;
  check(allReduce || std::strcmp(argv[1], "allgather") == 0, usage);
  const size_t bytes = std::strtoull(argv[2], nullptr, 0);
  int calls = kDefaultCalls;
  bool registered = false, withNccl = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "registered") == 0)
      registered = true;
    else if (std::strcmp(argv[i], "nccl") == 0)
      withNccl = true;
    else
      calls = std::atoi(argv[i]);
  }
  check(calls > 0, usage);
  const size_t recvCount = bytes / sizeof(float);
  const size_t sendCount = allReduce ? recvCount : recvCount / job.nranks;
  check(sendCount > 0 && recvCount == (allReduce ? sendCount : sendCount * job.nranks),
        "BYTES must hold at least one float per rank, and for AllGather a whole number per rank");

  mscclppUniqueId id;
  if (job.rank == 0) check(mscclppBootstrapCreateUniqueId(&id) == mscclppSuccess, "mscclppBootstrapCreateUniqueId");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppBootstrap_t bootstrap;
  mscclppContext_t context;
  mscclppCommunicator_t communicator;
  mscclppCollComm_t comm;
  check(mscclppBootstrapCreateFromId(&bootstrap, job.rank, job.nranks, id) == mscclppSuccess, "bootstrap");
  check(mscclppContextCreate(&context) == mscclppSuccess, "context");
  check(mscclppCommunicatorCreate(bootstrap, context, &communicator) == mscclppSuccess, "communicator");
  check(mscclppCollCommCreate(communicator, -1, &comm) == mscclppSuccess, "collective communicator");

  float *send, *recv;
  cudaStream_t stream;
  checkCuda(cudaMalloc(&send, sendCount * sizeof(float)), "cudaMalloc send");
  checkCuda(cudaMalloc(&recv, recvCount * sizeof(float)), "cudaMalloc recv");
  checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<float> input(sendCount, static_cast<float>(job.rank + 1));
  checkCuda(cudaMemcpy(send, input.data(), sendCount * sizeof(float), cudaMemcpyHostToDevice), "fill send");
  mscclppCollRegistration_t sendReg = nullptr, recvReg = nullptr;
  if (registered) {
    check(mscclppCollRegister(comm, send, sendCount * sizeof(float), &sendReg) == mscclppSuccess, "register send");
    check(mscclppCollRegister(comm, recv, recvCount * sizeof(float), &recvReg) == mscclppSuccess, "register recv");
  }

  const double busFactor = allReduce ? 2.0 * (job.nranks - 1) / job.nranks : double(job.nranks - 1) / job.nranks;
  auto report = [&](const char* who, double ms) {
    double busGBs = bytes / (ms / kMicrosPerMilli) / kBytesPerGB * busFactor;
    if (job.rank == 0)
      std::printf("%s %s %zu bytes, %d ranks%s: %.2f us per call, busbw %.1f GB/s\n", who, argv[1], bytes,
                  job.nranks, registered ? ", registered" : "", ms * kMicrosPerMilli, busGBs);
  };

  double ms = timeCalls(calls, stream, [&] {
    mscclppResult_t r = allReduce
                            ? mscclppAllReduce(send, recv, sendCount, mscclppFloat32, mscclppSum, comm, stream)
                            : mscclppAllGather(send, recv, sendCount, mscclppFloat32, comm, stream);
    check(r == mscclppSuccess, "mscclpp collective");
  });
  checkResult("mscclpp", allReduce, recv, recvCount, sendCount, job.nranks);
  report("mscclpp", ms);

  if (withNccl) {
    Nccl nccl = openNccl();
    NcclUniqueId ncclId;
    if (job.rank == 0) check(nccl.getUniqueId(&ncclId) == 0, "ncclGetUniqueId");
    MPI_Bcast(&ncclId, sizeof(ncclId), MPI_BYTE, 0, MPI_COMM_WORLD);
    NcclComm ncclComm = nullptr;
    check(nccl.commInitRank(&ncclComm, job.nranks, ncclId, job.rank) == 0, "ncclCommInitRank");
    checkCuda(cudaMemset(recv, 0, recvCount * sizeof(float)), "clear recv");
    ms = timeCalls(calls, stream, [&] {
      int r = allReduce ? nccl.allReduce(send, recv, sendCount, kNcclFloat32, kNcclSum, ncclComm, stream)
                        : nccl.allGather(send, recv, sendCount, kNcclFloat32, ncclComm, stream);
      check(r == 0, "nccl collective");
    });
    checkResult("nccl", allReduce, recv, recvCount, sendCount, job.nranks);
    report("nccl", ms);
    nccl.commDestroy(ncclComm);
  }

  if (registered) {
    check(mscclppCollDeregister(comm, recvReg) == mscclppSuccess, "deregister recv");
    check(mscclppCollDeregister(comm, sendReg) == mscclppSuccess, "deregister send");
  }
  checkCuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
  checkCuda(cudaFree(send), "cudaFree");
  checkCuda(cudaFree(recv), "cudaFree");
  check(mscclppCollCommDestroy(comm) == mscclppSuccess, "mscclppCollCommDestroy");
  check(mscclppCommunicatorDestroy(communicator) == mscclppSuccess, "mscclppCommunicatorDestroy");
  check(mscclppContextDestroy(context) == mscclppSuccess, "mscclppContextDestroy");
  check(mscclppBootstrapDestroy(bootstrap) == mscclppSuccess, "mscclppBootstrapDestroy");
  MPI_Finalize();
  return 0;
}

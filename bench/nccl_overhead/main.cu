// nccl_overhead: what a call through an NCCL-compatible library costs next to the same call
// through this library's C API (mscclppAllReduce, collectives.h), in one run, on the same GPU,
// buffers and stream. Float sum AllReduce, out of place, 8 B to 32 KiB.
//
//   mpirun -np N nccl_overhead LIB...     e.g. build/lib/libmscclpp_nccl.so /usr/lib/x86_64-linux-gnu/libnccl.so.2
//
// Each LIB is dlopen'd (RTLD_LOCAL, so NCCL's names of one do not meet the other's) and driven
// through its ncclAllReduce; this library's NCCL layer shares libmscclpp.so (and its Go runtime)
// with the C API column. A library whose communicator cannot be made (the real NCCL refuses ranks
// that share a GPU) is left out of the table with the reason. Per size and path:
//   enqueue: host time per call of 100 calls queued back to back (what the layer adds shows here);
//   direct:  time per call of 100 calls, queued and waited for (nccl-tests' number);
//   graph:   time per call of 100 calls captured in one CUDA graph and replayed.
// The paths take turns round by round; each figure is the median of 50 rounds.
// With ranks sharing a GPU only the enqueue column means anything.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>
#include <mscclpp/collectives.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

int g_rank = 0, g_nranks = 1;

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      std::fprintf(stderr, "[rank %d] ", g_rank);        \
      std::fprintf(stderr, __VA_ARGS__);                 \
      std::fprintf(stderr, "\n");                        \
      MPI_Abort(MPI_COMM_WORLD, 2);                      \
    }                                                    \
  } while (0)
#define CUDA(call)                                                                                  \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                             \
  } while (0)

constexpr int kCalls = 100;
constexpr int kRounds = 50;  // each figure is the median of this many rounds

// One way to run the AllReduce: a name and a call that queues it on a stream.
struct Path {
  std::string name;
  std::function<bool(const float*, float*, size_t, cudaStream_t)> call;
};

// An NCCL-compatible library's communicator, or why there is none.
Path ncclPath(const char* lib, std::string* why) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    *why = dlerror();
    return {};
  }
  auto getId = (ncclResult_t(*)(ncclUniqueId*))dlsym(h, "ncclGetUniqueId");
  auto init = (ncclResult_t(*)(ncclComm_t*, int, ncclUniqueId, int))dlsym(h, "ncclCommInitRank");
  auto allReduce = (ncclResult_t(*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                    cudaStream_t))dlsym(h, "ncclAllReduce");
  if (!getId || !init || !allReduce) {
    *why = "not an NCCL library";
    return {};
  }
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  int ok = g_rank != 0 || getId(&id) == ncclSuccess, all = 0;
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  ok = ok && init(&comm, g_nranks, id, g_rank) == ncclSuccess;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    *why = "its communicator could not be made on every rank";
    return {};
  }
  return {lib, [=](const float* s, float* r, size_t n, cudaStream_t st) {
            return allReduce(s, r, n, ncclFloat32, ncclSum, comm, st) == ncclSuccess;
          }};
}

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The three figures of one path at one size, in microseconds per call.
struct Figures {
  double enqueue, direct, graph;
};

// One path's graph of kCalls calls, captured after a warm-up.
cudaGraphExec_t capture(const Path& p, const float* send, float* recv, size_t n, cudaStream_t st) {
  for (int i = 0; i < 10; i++) CHECK(p.call(send, recv, n, st), "%s failed", p.name.c_str());
  CUDA(cudaStreamSynchronize(st));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kCalls; i++) CHECK(p.call(send, recv, n, st), "%s failed in capture", p.name.c_str());
  CUDA(cudaStreamEndCapture(st, &graph));
  CUDA(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  CUDA(cudaGraphDestroy(graph));
  CUDA(cudaGraphLaunch(exec, st));
  CUDA(cudaStreamSynchronize(st));
  return exec;
}

// Every path's figures at one size. The paths take turns round by round, so that drift (clocks,
// other processes) reaches them alike.
std::vector<Figures> measure(const std::vector<Path>& paths, const float* send, float* recv, size_t n, cudaStream_t st) {
  std::vector<cudaGraphExec_t> graphs;
  for (const Path& p : paths) graphs.push_back(capture(p, send, recv, n, st));
  std::vector<std::vector<double>> enq(paths.size()), dir(paths.size()), gr(paths.size());
  for (int round = 0; round < kRounds; round++) {
    for (size_t k = 0; k < paths.size(); k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = seconds();
      for (int i = 0; i < kCalls; i++) paths[k].call(send, recv, n, st);
      double t1 = seconds();
      CUDA(cudaStreamSynchronize(st));
      double t2 = seconds();
      enq[k].push_back((t1 - t0) / kCalls * 1e6);
      dir[k].push_back((t2 - t0) / kCalls * 1e6);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = seconds();
      CUDA(cudaGraphLaunch(graphs[k], st));
      CUDA(cudaStreamSynchronize(st));
      gr[k].push_back((seconds() - t0) / kCalls * 1e6);
    }
  }
  std::vector<Figures> f;
  for (size_t k = 0; k < paths.size(); k++) {
    CUDA(cudaGraphExecDestroy(graphs[k]));
    f.push_back({median(enq[k]), median(dir[k]), median(gr[k])});
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  int ndev = 0;
  CUDA(cudaGetDeviceCount(&ndev));
  CUDA(cudaSetDevice(g_rank % ndev));

  // This library's C API: bootstrap, context, communicator, collective communicator.
  mscclppUniqueId uid;
  if (g_rank == 0) CHECK(mscclppBootstrapCreateUniqueId(&uid) == mscclppSuccess, "unique id");
  MPI_Bcast(&uid, sizeof(uid), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppBootstrap_t boot;
  mscclppContext_t ctx;
  mscclppCommunicator_t comm;
  mscclppCollComm_t coll;
  CHECK(mscclppBootstrapCreateFromId(&boot, g_rank, g_nranks, uid) == mscclppSuccess, "bootstrap");
  CHECK(mscclppContextCreate(&ctx) == mscclppSuccess, "context");
  CHECK(mscclppCommunicatorCreate(boot, ctx, &comm) == mscclppSuccess, "communicator");
  CHECK(mscclppCollCommCreate(comm, -1, &coll) == mscclppSuccess, "collective communicator");
  std::vector<Path> paths = {{"mscclppAllReduce", [=](const float* s, float* r, size_t n, cudaStream_t st) {
                                return mscclppAllReduce(s, r, n, mscclppFloat32, mscclppSum, coll, st) == mscclppSuccess;
                              }}};
  for (int i = 1; i < argc; i++) {
    std::string why;
    Path p = ncclPath(argv[i], &why);
    if (p.call) paths.push_back(p);
    else if (g_rank == 0) std::printf("# %s left out: %s\n", argv[i], why.c_str());
  }

  const size_t maxBytes = 32 << 10;
  float *send, *recv;
  CUDA(cudaMalloc(&send, maxBytes));
  CUDA(cudaMalloc(&recv, maxBytes));
  CUDA(cudaMemset(send, 0, maxBytes));
  cudaStream_t st;
  CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CUDA(cudaGetDeviceProperties(&prop, g_rank % ndev));
  if (g_rank == 0) {
    std::printf("# nccl_overhead: %d ranks on %d GPU(s) (%s); us per call, median of %d rounds of %d calls\n", g_nranks,
                ndev, prop.name, kRounds, kCalls);
    for (size_t i = 0; i < paths.size(); i++) std::printf("# path %zu: %s\n", i, paths[i].name.c_str());
    std::printf("%8s %4s %10s %10s %10s %14s\n", "bytes", "path", "enqueue", "direct", "graph", "enqueue-vs-0");
  }
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 4) {
    std::vector<Figures> f = measure(paths, send, recv, bytes / sizeof(float), st);
    if (g_rank == 0) {
      for (size_t i = 0; i < paths.size(); i++) {
        std::printf("%8zu %4zu %10.2f %10.2f %10.2f %+14.2f\n", bytes, i, f[i].enqueue, f[i].direct, f[i].graph,
                    f[i].enqueue - f[0].enqueue);
      }
    }
  }
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  // The NCCL communicators are left to the process's end: only the order of teardown differs.
  mscclppCollCommDestroy(coll);
  mscclppCommunicatorDestroy(comm);
  mscclppContextDestroy(ctx);
  mscclppBootstrapDestroy(boot);
  MPI_Finalize();
  return 0;
}

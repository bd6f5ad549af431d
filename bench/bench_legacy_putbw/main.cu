// Bandwidth and latency of the legacy device connection, between ranks 0 and 1 (other ranks
// idle). Written only against mscclpp.h.
//
//   one-way: rank 0 runs N x (putWithSignal of `size` bytes + flush); rank 1 runs N x wait.
//   bidir:   both ranks run N x (putWithSignal + flush), then N x wait; GB/s per direction.
//   latency: 8-byte ping-pong, putWithSignal + wait each way; the round trip per iteration. Then
//            the same with signal() alone (no data copy), which parts the proxy's copy from the rest.
//
// Each figure is one kernel of N iterations timed with CUDA events (launch cost excluded), after
// a warm-up run. Every size's last transfer is checked byte by byte on the receiving GPU.
// Sizes travel in 32-bit trigger fields, so a put is at most 2^32-1 bytes; the largest is 1 GiB.
#include <mpi.h>
#include <mscclpp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "../common.cuh"

using benchmpi::check;
using benchmpi::checkCuda;
using benchmpi::checkKernel;
using benchmpi::fillKernel;
using benchmpi::g_rank;

namespace {

constexpr int kSender = 0, kReceiver = 1, kTag = 0;
constexpr uint64_t kMinBytes = 1 << 10, kMaxBytes = 1ull << 30;
// x4 steps up to kFineFrom, then x2, so the large sizes around the copy-engine ceiling are all measured.
constexpr uint64_t kCoarseStep = 4, kFineStep = 2, kFineFrom = 16 << 20;
constexpr uint64_t kTargetBytes = 8ull << 30;  // per timed run, within [kMinIters, kMaxIters]
constexpr uint64_t kMinIters = 20, kMaxIters = 2000;
constexpr uint64_t kLatencyIters = 10000, kLatencyBytes = 8;
constexpr unsigned kWatchdogMs = 60000;
constexpr double kBytesPerGB = 1e9;

__global__ void sendKernel(mscclppDevConn_t* conn, uint64_t dst, uint64_t size, uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    conn->putWithSignal(dst, 0, size);
    conn->flush();
  }
}

__global__ void waitKernel(mscclppDevConn_t* conn, uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) conn->wait();
}

__global__ void bidirKernel(mscclppDevConn_t* conn, uint64_t dst, uint64_t size, uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    conn->putWithSignal(dst, 0, size);
    conn->flush();
  }
  for (uint64_t i = 0; i < iters; i++) conn->wait();
}

__global__ void pingPongKernel(mscclppDevConn_t* conn, bool first, uint64_t dst, uint64_t iters, bool withData) {
  for (uint64_t i = 0; i < iters; i++) {
    if (!first) conn->wait();
    if (withData) conn->putWithSignal(dst, 0, kLatencyBytes);
    else conn->signal();
    if (first) conn->wait();
  }
  conn->flush();
}

void syncOrAbort(cudaStream_t s, const char* what) {
  for (unsigned ms = 0; ms < kWatchdogMs; ms++) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    checkCuda(e == cudaErrorNotReady ? cudaSuccess : e, what);
    struct timespec t = {0, 1000000};
    nanosleep(&t, nullptr);
  }
  check(false, what);
}

struct Bench {
  mscclppDevConn_t* conn;
  uint8_t* buf;  // [0, kMaxBytes): what this rank sends; [kMaxBytes, 2*kMaxBytes): what it receives
  cudaStream_t stream;
  cudaEvent_t start, stop;
  unsigned long long* wrong;
  bool active;

  // Runs launch(iters) once untimed and once timed; returns this rank's ms (0 if idle).
  template <typename Launch>
  float timed(uint64_t iters, Launch launch, const char* what) {
    if (active) {
      launch(std::max<uint64_t>(iters / 10, 2));
      syncOrAbort(stream, what);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    float ms = 0;
    if (active) {
      checkCuda(cudaEventRecord(start, stream), "event");
      launch(iters);
      checkCuda(cudaEventRecord(stop, stream), "event");
      syncOrAbort(stream, what);
      checkCuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return ms;
  }

  // Checks the received copy of `size` bytes from the peer; returns the wrong bytes over all ranks.
  unsigned long long verify(uint64_t size, bool received) {
    unsigned long long w = 0;
    if (active && received) {
      checkCuda(cudaMemsetAsync(wrong, 0, sizeof(*wrong), stream), "memset");
      checkKernel<<<264, 1024, 0, stream>>>(buf + kMaxBytes, size, 1 - g_rank, wrong);
      checkCuda(cudaMemcpyAsync(&w, wrong, sizeof(w), cudaMemcpyDeviceToHost, stream), "copy");
      syncOrAbort(stream, "verify");
      checkCuda(cudaMemsetAsync(buf + kMaxBytes, 0, size, stream), "clear");
      syncOrAbort(stream, "clear");
    }
    MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return w;
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmpi::BenchSetup setup;
  setup.program = "bench_legacy_putbw";
  const int nranks = benchmpi::startBench(&argc, &argv, setup).nranks;

  mscclppUniqueId id;
  if (g_rank == 0) check(mscclppGetUniqueId(&id) == mscclppSuccess, "mscclppGetUniqueId");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppComm_t comm;
  check(mscclppCommInitRankFromId(&comm, nranks, id, g_rank) == mscclppSuccess, "init");

  Bench b{};
  b.active = g_rank == kSender || g_rank == kReceiver;
  const int peer = g_rank == kSender ? kReceiver : kSender;
  checkCuda(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking), "stream");
  if (b.active) {
    checkCuda(cudaMalloc(&b.buf, 2 * kMaxBytes), "cudaMalloc");
    checkCuda(cudaMalloc(&b.wrong, sizeof(*b.wrong)), "cudaMalloc");
    checkCuda(cudaMalloc(&b.conn, sizeof(mscclppDevConn_t)), "cudaMalloc");
    checkCuda(cudaEventCreate(&b.start), "event");
    checkCuda(cudaEventCreate(&b.stop), "event");
    fillKernel<<<264, 1024, 0, b.stream>>>(b.buf, kMaxBytes, g_rank);
    checkCuda(cudaMemsetAsync(b.buf + kMaxBytes, 0, kMaxBytes, b.stream), "memset");
    syncOrAbort(b.stream, "fill");
    check(mscclppConnect(comm, peer, kTag, b.buf, 2 * kMaxBytes, mscclppTransportP2P) == mscclppSuccess, "connect");
  }
  check(mscclppConnectionSetup(comm) == mscclppSuccess, "setup");
  if (b.active) {
    mscclppDevConn_t* hostConn = nullptr;
    check(mscclppGetDeviceConnection(comm, peer, kTag, &hostConn) == mscclppSuccess, "get connection");
    checkCuda(cudaMemcpy(b.conn, hostConn, sizeof(*hostConn), cudaMemcpyHostToDevice), "copy connection");
  }
  check(mscclppProxyLaunch(comm) == mscclppSuccess, "proxy launch");

  unsigned long long totalWrong = 0;
  if (g_rank == 0) {
    std::printf("# bench_legacy_putbw: rank %d <-> rank %d, putWithSignal + flush per iteration, GB/s = 1e9 B/s\n",
                kSender, kReceiver);
    std::printf("# %12s %6s %14s %20s  %s\n", "bytes", "iters", "one-way GB/s", "bidir GB/s/direction", "check");
  }
  for (uint64_t size = kMinBytes; size <= kMaxBytes; size *= size >= kFineFrom ? kFineStep : kCoarseStep) {
    const uint64_t iters = std::clamp<uint64_t>(kTargetBytes / size, kMinIters, kMaxIters);
    float oneWay = b.timed(iters, [&](uint64_t n) {
      if (g_rank == kSender) sendKernel<<<1, 1, 0, b.stream>>>(b.conn, kMaxBytes, size, n);
      else waitKernel<<<1, 1, 0, b.stream>>>(b.conn, n);
    }, "one-way");
    unsigned long long wrong = b.verify(size, g_rank == kReceiver);
    float bidir = b.timed(iters, [&](uint64_t n) { bidirKernel<<<1, 1, 0, b.stream>>>(b.conn, kMaxBytes, size, n); },
                          "bidir");
    float bidirMax = bidir;
    MPI_Allreduce(MPI_IN_PLACE, &bidirMax, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &oneWay, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    wrong += b.verify(size, true);
    totalWrong += wrong;
    if (g_rank == 0)
      std::printf("  %12llu %6llu %14.1f %20.1f  %s\n", (unsigned long long)size, (unsigned long long)iters,
                  size * iters / (oneWay * 1e-3) / kBytesPerGB, size * iters / (bidirMax * 1e-3) / kBytesPerGB,
                  wrong == 0 ? "ok" : "WRONG");
  }
  for (bool withData : {true, false}) {
    float ms = b.timed(kLatencyIters, [&](uint64_t n) {
      pingPongKernel<<<1, 1, 0, b.stream>>>(b.conn, g_rank == kSender, kMaxBytes, n, withData);
    }, "ping-pong");
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0 && withData)
      std::printf("# round trip, %llu-byte putWithSignal + wait each way: %.2f us\n",
                  (unsigned long long)kLatencyBytes, ms * 1e3 / kLatencyIters);
    if (g_rank == 0 && !withData)
      std::printf("# round trip, signal + wait each way (no data): %.2f us\n", ms * 1e3 / kLatencyIters);
  }

  check(mscclppProxyStop(comm) == mscclppSuccess, "proxy stop");
  check(mscclppCommDestroy(comm) == mscclppSuccess, "destroy");
  if (g_rank == 0) std::printf("%s bench_legacy_putbw: %llu wrong bytes\n", totalWrong ? "FAIL" : "PASS", totalWrong);
  MPI_Finalize();
  return totalWrong ? 1 : 0;
}

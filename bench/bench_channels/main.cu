// Bandwidth and latency of the channel API (include/mscclpp/core.h and the *_device.h handles),
// between ranks 0 and 1 (other ranks idle but take part in the collective calls). Written only
// against the primitive C API; the setup goes through a Communicator (connect, exchange memory,
// build semaphores) and a ProxyService.
//
//   1. MemoryChannel put, one-way: rank 0 runs one cooperative kernel of B blocks x 1024 threads;
//      each iteration every thread takes its share of put(1 GiB + 0, 0, bytes) into rank 1's
//      receive half, a grid barrier (cooperative groups), then thread 0 signal()s. Rank 1 runs one
//      thread that waits once per iteration. B in {1, 4, 16, 64} and 132 when both GPUs have that
//      many SMs. Column "get64": rank 1 alone, 64 x 1024 threads, get() of rank 0's send half into
//      its own receive half, a grid barrier per iteration (rank 0 idle).
//   2. PortChannel (host proxy + copy engine), one thread per rank: bidirectional putWithSignal +
//      wait per iteration on both ranks (GB/s per direction, the slower rank's time), and one-way
//      putWithSignal + flush on rank 0 against N waits on rank 1.
//   3. Round-trip latency, one thread per rank: signal/wait and relaxedSignal/relaxedWait ping-pong
//      on a BaseMemoryChannel of the memory channel's semaphore, and an LL16 packet ping-pong
//      (8 data bytes each way: putPackets into the peer's packet scratch, unpackPackets from one's
//      own, flag = round number counted over the whole run, each value checked).
//
// Each figure is one kernel of N iterations per rank timed with CUDA events (launch cost
// excluded) after an untimed warm-up, the slower rank's time. Every bandwidth run is checked byte
// by byte on the receiving GPU (then the receive region is cleared); any wrong byte or packet
// value prints WRONG and makes the program exit 1. Device-side waits written here are bounded by
// %globaltimer; the header's own spins get a maxSpinCount (which traps) where they take one; a
// host watchdog turns any stuck kernel into FAIL + MPI_Abort. Each active rank allocates 2 GiB.
// Sizes travel in 32-bit trigger fields for port channels, so 1 GiB is the largest.
#include <cooperative_groups.h>
#include <mpi.h>
#include <mscclpp/core.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "../common.cuh"

namespace cg = cooperative_groups;

using benchmpi::check;
using benchmpi::checkCuda;
using benchmpi::checkKernel;
using benchmpi::fillKernel;
using benchmpi::g_rank;

namespace {

constexpr const char* kName = "bench_channels";
constexpr int kSender = 0, kReceiver = 1;
constexpr uint64_t kHalf = 1ull << 30;  // [0, kHalf): what this rank sends; [kHalf, 2*kHalf): what it receives
constexpr uint64_t kBufBytes = 2 * kHalf;
constexpr uint64_t kScratchBytes = 1 << 20;  // packet scratch (incoming packets)
constexpr uint64_t kMinBytes = 1 << 10, kMaxBytes = kHalf;
// x4 steps up to kFineFrom, then x2, as bench_legacy_putbw.
constexpr uint64_t kCoarseStep = 4, kFineStep = 2, kFineFrom = 16 << 20;
constexpr uint64_t kTargetBytes = 8ull << 30;  // per timed run, within [kMinIters, kMaxIters]
constexpr uint64_t kMinIters = 20, kMaxIters = 2000;
constexpr int kThreads = 1024;
constexpr int kBlockCounts[] = {1, 4, 16, 64, 132};
constexpr int kGetBlocks = 64;
constexpr uint64_t kPortBidirSizes[] = {1 << 10, 1 << 20, 128 << 20};
constexpr uint64_t kPortOneWaySizes[] = {128 << 20, 512 << 20, 1ull << 30};
constexpr uint64_t kLatencyIters = 10000;
// The packet ping-pong's own data: 8 bytes to send and 8 received, at the end of the receive half
// (only used after every bandwidth check).
constexpr uint64_t kPktSrcOff = kBufBytes - 64, kPktDstOff = kBufBytes - 32;
constexpr uint64_t kDeviceTimeoutNs = 20ull * 1000 * 1000 * 1000;  // waits written here
constexpr int64_t kMaxSpins = 1ll << 28;  // the header's spins (flush, wait, unpackPackets): trap, >= ~20 s
constexpr int kWatchdogS = 60;            // per kernel (host)
constexpr double kBytesPerGB = 1e9;
// Ends checkCuda's error line: what a trap (cudaErrorLaunchFailure) of these kernels means.
constexpr const char* kCudaErrorNote = " (a trap means a header spin hit maxSpinCount)";

// check() of an mscclpp call's result, after a line with the result code.
void checkMs(mscclppResult_t r, const char* what) {
  if (r != mscclppSuccess) std::fprintf(stderr, "rank %d: %s: mscclppResult_t %d\n", g_rank, what, int(r));
  check(r == mscclppSuccess, what);
}

// ---- device helpers ------------------------------------------------------------------------------

// Device-side state: the first wait that timed out (its code) and the wrong packet values seen.
struct DevState {
  unsigned long long timeout;
  unsigned long long wrongValues;
};
enum : unsigned long long { kTimeoutMemWait = 1, kTimeoutPortWait = 2 };
const char* timeoutName(unsigned long long c) {
  return c == kTimeoutMemWait ? "MemoryChannel wait (poll) timed out" : "PortChannel wait (poll) timed out";
}

__device__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The channel's wait() as poll() with a %globaltimer bound: false (and the code recorded) once
// kDeviceTimeoutNs passed without the signal. The timer is read every 256 polls only.
template <typename Channel>
__device__ bool boundedWait(Channel& ch, DevState* st, unsigned long long code) {
  if (ch.poll()) return true;
  const uint64_t start = globalTimerNs();
  for (uint32_t spins = 1;; ++spins) {
    if (ch.poll()) return true;
    if ((spins & 255) == 0 && globalTimerNs() - start > kDeviceTimeoutNs) {
      atomicCAS(&st->timeout, 0ull, code);
      return false;
    }
  }
}

// Table 1, sender: each iteration all gridDim.x * blockDim.x threads put their share, a grid
// barrier, then thread 0 signals (the release covers the writes the barrier ordered before it).
// With isGet: get() instead and no signal (the reader owns the completion).
__global__ void __launch_bounds__(kThreads, 1)
    memCopyKernel(mscclppMemoryChannelDeviceHandle ch, uint64_t dstOff, uint64_t srcOff, uint64_t bytes,
                  uint64_t iters, int isGet) {
  cg::grid_group grid = cg::this_grid();
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t n = gridDim.x * blockDim.x;
  for (uint64_t i = 0; i < iters; ++i) {
    if (isGet) {
      ch.get(dstOff, srcOff, bytes, tid, n);
      grid.sync();
    } else {
      ch.put(dstOff, srcOff, bytes, tid, n);
      grid.sync();
      if (tid == 0) ch.signal();
    }
  }
}

// Table 1, receiver: one thread waits once per iteration.
__global__ void memWaitKernel(mscclppMemoryChannelDeviceHandle ch, uint64_t iters, DevState* st) {
  for (uint64_t i = 0; i < iters; ++i)
    if (!boundedWait(ch, st, kTimeoutMemWait)) return;
}

// Table 2, bidirectional: putWithSignal of the send half into the peer's receive half, then wait
// for the peer's; a flush at the end so nothing is pending when the kernel returns.
__global__ void portBidirKernel(mscclppPortChannelDeviceHandle ch, uint64_t bytes, uint64_t iters, DevState* st) {
  for (uint64_t i = 0; i < iters; ++i) {
    ch.putWithSignal(kHalf, 0, bytes);
    if (!boundedWait(ch, st, kTimeoutPortWait)) return;
  }
  ch.flush(kMaxSpins);
}

// Table 2, one-way sender: putWithSignal + flush per iteration.
__global__ void portSendKernel(mscclppPortChannelDeviceHandle ch, uint64_t bytes, uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    ch.putWithSignal(kHalf, 0, bytes);
    ch.flush(kMaxSpins);
  }
}

__global__ void portWaitKernel(mscclppPortChannelDeviceHandle ch, uint64_t iters, DevState* st) {
  for (uint64_t i = 0; i < iters; ++i)
    if (!boundedWait(ch, st, kTimeoutPortWait)) return;
}

// Table 3: signal/wait ping-pong (relaxed or not) with the header's methods; their spins are
// bounded by kMaxSpins (trap).
template <bool Relaxed>
__global__ void semaPingPongKernel(mscclppBaseMemoryChannelDeviceHandle ch, int first, uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    if (first) {
      if (Relaxed) ch.relaxedSignal(); else ch.signal();
    }
    if (Relaxed) ch.relaxedWait(kMaxSpins); else ch.wait(kMaxSpins);
    if (!first) {
      if (Relaxed) ch.relaxedSignal(); else ch.signal();
    }
  }
}

__device__ uint64_t packetValue(int side, uint64_t round) {
  return 0x0123456789abcdefull ^ (round * 0x9e3779b97f4a7c15ull) ^ (uint64_t(side + 1) << 56);
}

// Table 3: LL16 ping-pong of 8 bytes. ch.dst is the peer's packet scratch, ch.packetBuffer this
// side's; both at offset 0, reused every round with flag = flagBase + round + 1. The first side
// sends then receives, the other receives then sends; every value received is checked.
__global__ void packetPingPongKernel(mscclppMemoryChannelDeviceHandle ch, int first, uint64_t flagBase,
                                     uint64_t iters, DevState* st) {
  const int me = first ? 0 : 1;
  volatile uint64_t* out = reinterpret_cast<uint64_t*>(static_cast<char*>(ch.src) + kPktSrcOff);
  volatile uint64_t* in = reinterpret_cast<uint64_t*>(static_cast<char*>(ch.src) + kPktDstOff);
  for (uint64_t i = 0; i < iters; ++i) {
    const uint64_t round = flagBase + i;
    const uint32_t flag = static_cast<uint32_t>(round + 1);
    if (!first) {
      ch.unpackPackets(kPktDstOff, 0, 8, 0, 1, flag, kMaxSpins);
      if (*in != packetValue(1 - me, round)) atomicAdd(&st->wrongValues, 1ull);
    }
    *out = packetValue(me, round);
    ch.putPackets(0, kPktSrcOff, 8, 0, 1, flag);
    if (first) {
      ch.unpackPackets(kPktDstOff, 0, 8, 0, 1, flag, kMaxSpins);
      if (*in != packetValue(1 - me, round)) atomicAdd(&st->wrongValues, 1ull);
    }
  }
}

// ---- host ----------------------------------------------------------------------------------------

// Waits for the stream with a deadline, so a stuck kernel is a failure, not a hang.
void syncOrAbort(cudaStream_t s, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kWatchdogS);
  for (;;) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) checkCuda(e, what);
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "FAIL %s: rank %d: timeout after %d s: %s (kernel stuck)\n", kName, g_rank, kWatchdogS,
                   what);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

uint64_t itersFor(uint64_t bytes) { return std::clamp<uint64_t>(kTargetBytes / bytes, kMinIters, kMaxIters); }

double gbps(uint64_t bytes, uint64_t iters, float ms) { return ms > 0 ? bytes * iters / (ms * 1e-3) / kBytesPerGB : 0; }

struct Bench {
  bool active = false;
  int peer = -1;
  uint8_t* buf = nullptr;      // 2 GiB: send half, receive half
  uint8_t* scratch = nullptr;  // packet scratch
  cudaStream_t stream{};
  cudaEvent_t start{}, stop{};
  unsigned long long* wrong = nullptr;
  DevState* state = nullptr;

  void checkState(const char* what) {
    DevState st{};
    checkCuda(cudaMemcpy(&st, state, sizeof(st), cudaMemcpyDeviceToHost), "read device state");
    if (st.timeout) {
      std::fprintf(stderr, "rank %d: %s: %s\n", g_rank, what, timeoutName(st.timeout));
      check(false, what);
    }
  }

  // Runs launch(iters) once untimed (iters/10, at least 2) and once timed on the active ranks;
  // returns the slower rank's ms. Barriers around each, for all ranks.
  template <typename Launch>
  float timed(uint64_t iters, Launch launch, const char* what) {
    if (active) {
      launch(std::max<uint64_t>(iters / 10, 2));
      syncOrAbort(stream, what);
      checkState(what);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    float ms = 0;
    if (active) {
      checkCuda(cudaEventRecord(start, stream), "event");
      launch(iters);
      checkCuda(cudaEventRecord(stop, stream), "event");
      syncOrAbort(stream, what);
      checkState(what);
      checkCuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    }
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    return ms;
  }

  // Checks `bytes` received from the peer in the receive half (when `received`), then clears
  // them; returns the wrong bytes over all ranks.
  unsigned long long verify(uint64_t bytes, bool received) {
    unsigned long long w = 0;
    if (active && received) {
      checkCuda(cudaMemsetAsync(wrong, 0, sizeof(*wrong), stream), "memset");
      checkKernel<<<264, 1024, 0, stream>>>(buf + kHalf, bytes, peer, wrong);
      checkCuda(cudaGetLastError(), "check kernel");
      checkCuda(cudaMemcpyAsync(&w, wrong, sizeof(w), cudaMemcpyDeviceToHost, stream), "copy");
      checkCuda(cudaMemsetAsync(buf + kHalf, 0, bytes, stream), "clear");
      syncOrAbort(stream, "verify");
    }
    MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return w;
  }
};

// Waits for a future, takes its result with get, destroys it.
template <typename T, typename Get>
T futureResult(mscclppFuture_t f, Get get, const char* what) {
  T v{};
  checkMs(get(f, &v), what);
  checkMs(mscclppFutureDestroy(f), "future destroy");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  benchmpi::BenchSetup setup;
  setup.program = kName;
  setup.cudaErrorNote = kCudaErrorNote;
  const benchmpi::BenchJob job = benchmpi::startBench(&argc, &argv, setup);
  const int nranks = job.nranks, device = job.device;

  Bench b;
  b.active = g_rank == kSender || g_rank == kReceiver;
  b.peer = g_rank == kSender ? kReceiver : kSender;
  checkCuda(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking), "stream");

  // The block counts both GPUs can run as one cooperative grid of 1024-thread blocks, one per SM.
  int maxCoopBlocks = 1 << 30;
  if (b.active) {
    int sms = 0, coop = 0, perSm = 0;
    checkCuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
    checkCuda(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device), "cooperative attribute");
    check(coop != 0, "the GPU does not support cooperative launches");
    checkCuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, memCopyKernel, kThreads, 0), "occupancy");
    check(perSm >= 1, "a 1024-thread block of the put kernel does not fit an SM");
    maxCoopBlocks = sms;  // at most one block per SM: B=132 only on GPUs with at least 132 SMs
  }
  MPI_Allreduce(MPI_IN_PLACE, &maxCoopBlocks, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  std::vector<int> blockCounts;
  for (int bc : kBlockCounts)
    if (bc <= maxCoopBlocks) blockCounts.push_back(bc);
  check(kGetBlocks <= maxCoopBlocks, "get64 needs GPUs with at least 64 SMs");

  // Bootstrap, context, communicator (every rank).
  mscclppUniqueId id;
  if (g_rank == 0) checkMs(mscclppBootstrapCreateUniqueId(&id), "mscclppBootstrapCreateUniqueId");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppBootstrap_t bootstrap = nullptr;
  checkMs(mscclppBootstrapCreateFromId(&bootstrap, g_rank, nranks, id), "mscclppBootstrapCreateFromId");
  mscclppContext_t context = nullptr;
  checkMs(mscclppContextCreate(&context), "mscclppContextCreate");
  mscclppCommunicator_t comm = nullptr;
  checkMs(mscclppCommunicatorCreate(bootstrap, context, &comm), "mscclppCommunicatorCreate");

  mscclppConnection_t conn = nullptr;
  mscclppRegMem_t localMem = nullptr, localScratch = nullptr, remoteMem = nullptr, remoteScratch = nullptr;
  mscclppSemaphore_t memSema = nullptr, portSema = nullptr;
  mscclppProxyService_t proxy = nullptr;
  mscclppMemoryChannelDeviceHandle memCh{}, pktCh{};
  mscclppBaseMemoryChannelDeviceHandle baseCh{};
  mscclppPortChannelDeviceHandle portCh{};
  if (b.active) {
    checkCuda(cudaMalloc(&b.buf, kBufBytes), "cudaMalloc buffer");
    checkCuda(cudaMalloc(&b.scratch, kScratchBytes), "cudaMalloc scratch");
    checkCuda(cudaMalloc(&b.wrong, sizeof(*b.wrong)), "cudaMalloc");
    checkCuda(cudaMalloc(&b.state, sizeof(*b.state)), "cudaMalloc");
    checkCuda(cudaMemset(b.state, 0, sizeof(*b.state)), "memset");
    checkCuda(cudaEventCreate(&b.start), "event");
    checkCuda(cudaEventCreate(&b.stop), "event");
    fillKernel<<<264, 1024, 0, b.stream>>>(b.buf, kHalf, g_rank);
    checkCuda(cudaGetLastError(), "fill kernel");
    checkCuda(cudaMemsetAsync(b.buf + kHalf, 0, kHalf, b.stream), "memset");
    checkCuda(cudaMemsetAsync(b.scratch, 0, kScratchBytes, b.stream), "memset");  // packet flags start at 0
    syncOrAbort(b.stream, "fill");

    mscclppFuture_t f = nullptr;
    checkMs(mscclppCommunicatorConnect(comm, mscclppTransportP2P, device, b.peer, 0, &f), "connect");
    conn = futureResult<mscclppConnection_t>(f, mscclppFutureGetConnection, "connection");

    checkMs(mscclppRegisterMemory(context, b.buf, kBufBytes, mscclppTransportP2P, &localMem), "register buffer");
    checkMs(mscclppRegisterMemory(context, b.scratch, kScratchBytes, mscclppTransportP2P, &localScratch),
            "register scratch");
    mscclppFuture_t sendMem = nullptr, sendScratch = nullptr, recvMem = nullptr, recvScratch = nullptr;
    checkMs(mscclppCommunicatorSendMemory(comm, localMem, b.peer, 0, &sendMem), "send memory");
    checkMs(mscclppCommunicatorSendMemory(comm, localScratch, b.peer, 1, &sendScratch), "send scratch");
    checkMs(mscclppCommunicatorRecvMemory(comm, b.peer, 0, &recvMem), "recv memory");
    checkMs(mscclppCommunicatorRecvMemory(comm, b.peer, 1, &recvScratch), "recv scratch");
    remoteMem = futureResult<mscclppRegMem_t>(recvMem, mscclppFutureGetMemory, "remote memory");
    remoteScratch = futureResult<mscclppRegMem_t>(recvScratch, mscclppFutureGetMemory, "remote scratch");
    checkMs(mscclppFutureWait(sendMem), "send memory wait");
    checkMs(mscclppFutureWait(sendScratch), "send scratch wait");
    checkMs(mscclppFutureDestroy(sendMem), "future destroy");
    checkMs(mscclppFutureDestroy(sendScratch), "future destroy");
    void* remotePtr = nullptr;
    size_t remoteSize = 0;
    checkMs(mscclppMemoryData(remoteMem, &remotePtr, &remoteSize), "remote memory data");
    check(remotePtr != nullptr && remoteSize == kBufBytes, "the peer's buffer has the wrong size");
    checkMs(mscclppMemoryData(remoteScratch, &remotePtr, &remoteSize), "remote scratch data");
    check(remotePtr != nullptr && remoteSize == kScratchBytes, "the peer's scratch has the wrong size");

    // One semaphore per kind: tag 0 for the memory channels, tag 1 for the port channel.
    mscclppFuture_t semaMemF = nullptr, semaPortF = nullptr;
    checkMs(mscclppCommunicatorBuildSemaphore(comm, conn, b.peer, 0, &semaMemF), "build semaphore 0");
    checkMs(mscclppCommunicatorBuildSemaphore(comm, conn, b.peer, 1, &semaPortF), "build semaphore 1");
    memSema = futureResult<mscclppSemaphore_t>(semaMemF, mscclppFutureGetSemaphore, "semaphore 0");
    portSema = futureResult<mscclppSemaphore_t>(semaPortF, mscclppFutureGetSemaphore, "semaphore 1");

    // memCh: data (dst = the peer's 2 GiB buffer). putPackets writes into dst, so the packets go
    // through pktCh, whose dst is the peer's scratch (the peer's packetBuffer); same semaphore.
    checkMs(mscclppMemoryChannelGetDeviceHandle(memSema, remoteMem, localMem, b.scratch, &memCh), "memory channel");
    checkMs(mscclppMemoryChannelGetDeviceHandle(memSema, remoteScratch, localMem, b.scratch, &pktCh),
            "packet channel");
    checkMs(mscclppBaseMemoryChannelGetDeviceHandle(memSema, &baseCh), "base memory channel");

    checkMs(mscclppProxyServiceCreate(0, &proxy), "proxy service");
    uint32_t semaId = 0, localId = 0, remoteId = 0;
    checkMs(mscclppProxyServiceAddSemaphore(proxy, portSema, &semaId), "add semaphore");
    checkMs(mscclppProxyServiceAddMemory(proxy, localMem, &localId), "add local memory");
    checkMs(mscclppProxyServiceAddMemory(proxy, remoteMem, &remoteId), "add remote memory");
    checkMs(mscclppProxyServicePortChannel(proxy, semaId, remoteId, localId, &portCh), "port channel");
    checkMs(mscclppProxyServiceStart(proxy), "proxy start");
  }
  checkMs(mscclppBootstrapBarrierAll(bootstrap), "bootstrap barrier");
  MPI_Barrier(MPI_COMM_WORLD);

  const bool sender = g_rank == kSender, receiver = g_rank == kReceiver;
  unsigned long long totalWrong = 0;
  auto okStr = [](unsigned long long w) { return w == 0 ? "ok" : "WRONG"; };
  auto launchCoop = [&](int blocks, mscclppMemoryChannelDeviceHandle ch, uint64_t dstOff, uint64_t srcOff,
                        uint64_t bytes, uint64_t iters, int isGet) {
    void* args[] = {&ch, &dstOff, &srcOff, &bytes, &iters, &isGet};
    checkCuda(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&memCopyKernel), dim3(blocks),
                                          dim3(kThreads), args, 0, b.stream),
              "cooperative launch");
  };

  // ---- 1. MemoryChannel put / get, one-way ----
  if (g_rank == 0) {
    std::printf("# %s: rank %d -> rank %d, GB/s = 1e9 B/s, the slower rank's time per run\n", kName, kSender,
                kReceiver);
    std::printf("# 1. MemoryChannel one-way: put(B blocks x %d threads) + grid barrier + signal per iteration on "
                "rank %d, wait on rank %d; get%d: rank %d get()s with %d blocks\n",
                kThreads, kSender, kReceiver, kGetBlocks, kReceiver, kGetBlocks);
    std::printf("# %12s %6s", "bytes", "iters");
    for (int bc : blockCounts) std::printf("  %5s%-3d", "B=", bc);
    std::printf("  %8s  %s\n", "get64", "check");
  }
  for (uint64_t size = kMinBytes; size <= kMaxBytes; size *= size >= kFineFrom ? kFineStep : kCoarseStep) {
    const uint64_t iters = itersFor(size);
    unsigned long long wrong = 0;
    std::vector<float> ms;
    for (int bc : blockCounts) {
      ms.push_back(b.timed(iters, [&](uint64_t n) {
        if (sender) launchCoop(bc, memCh, kHalf, 0, size, n, 0);
        else memWaitKernel<<<1, 1, 0, b.stream>>>(memCh, n, b.state);
        checkCuda(cudaGetLastError(), "launch");
      }, "memory channel put"));
      wrong += b.verify(size, receiver);
    }
    const float getMs = b.timed(iters, [&](uint64_t n) {
      if (receiver) launchCoop(kGetBlocks, memCh, 0, kHalf, size, n, 1);
    }, "memory channel get");
    wrong += b.verify(size, receiver);
    totalWrong += wrong;
    if (g_rank == 0) {
      std::printf("  %12llu %6llu", (unsigned long long)size, (unsigned long long)iters);
      for (float m : ms) std::printf("  %8.1f", gbps(size, iters, m));
      std::printf("  %8.1f  %s\n", gbps(size, iters, getMs), okStr(wrong));
      std::fflush(stdout);
    }
  }

  // ---- 2. PortChannel ----
  if (g_rank == 0) {
    std::printf("# 2a. PortChannel bidirectional: both ranks putWithSignal + wait per iteration (one thread), "
                "GB/s per direction\n");
    std::printf("# %12s %6s %10s  %s\n", "bytes", "iters", "GB/s/dir", "check");
  }
  for (uint64_t size : kPortBidirSizes) {
    const uint64_t iters = itersFor(size);
    const float ms = b.timed(iters, [&](uint64_t n) {
      portBidirKernel<<<1, 1, 0, b.stream>>>(portCh, size, n, b.state);
      checkCuda(cudaGetLastError(), "launch");
    }, "port channel bidirectional");
    const unsigned long long wrong = b.verify(size, true);
    totalWrong += wrong;
    if (g_rank == 0) {
      std::printf("  %12llu %6llu %10.1f  %s\n", (unsigned long long)size, (unsigned long long)iters,
                  gbps(size, iters, ms), okStr(wrong));
      std::fflush(stdout);
    }
  }
  if (g_rank == 0) {
    std::printf("# 2b. PortChannel one-way: putWithSignal + flush per iteration on rank %d, wait on rank %d\n",
                kSender, kReceiver);
    std::printf("# %12s %6s %10s  %s\n", "bytes", "iters", "GB/s", "check");
  }
  for (uint64_t size : kPortOneWaySizes) {
    const uint64_t iters = itersFor(size);
    const float ms = b.timed(iters, [&](uint64_t n) {
      if (sender) portSendKernel<<<1, 1, 0, b.stream>>>(portCh, size, n);
      else portWaitKernel<<<1, 1, 0, b.stream>>>(portCh, n, b.state);
      checkCuda(cudaGetLastError(), "launch");
    }, "port channel one-way");
    const unsigned long long wrong = b.verify(size, receiver);
    totalWrong += wrong;
    if (g_rank == 0) {
      std::printf("  %12llu %6llu %10.1f  %s\n", (unsigned long long)size, (unsigned long long)iters,
                  gbps(size, iters, ms), okStr(wrong));
      std::fflush(stdout);
    }
  }

  // ---- 3. Latency ----
  if (g_rank == 0)
    std::printf("# 3. round trip, one thread per rank, %llu iterations (us per round trip)\n",
                (unsigned long long)kLatencyIters);
  {
    const float ms = b.timed(kLatencyIters, [&](uint64_t n) {
      semaPingPongKernel<false><<<1, 1, 0, b.stream>>>(baseCh, sender, n);
      checkCuda(cudaGetLastError(), "launch");
    }, "signal/wait ping-pong");
    if (g_rank == 0)
      std::printf("  %-52s %8.2f us\n", "signal/wait (BaseMemoryChannel)", ms * 1e3 / kLatencyIters);
  }
  {
    const float ms = b.timed(kLatencyIters, [&](uint64_t n) {
      semaPingPongKernel<true><<<1, 1, 0, b.stream>>>(baseCh, sender, n);
      checkCuda(cudaGetLastError(), "launch");
    }, "relaxedSignal/relaxedWait ping-pong");
    if (g_rank == 0)
      std::printf("  %-52s %8.2f us\n", "relaxedSignal/relaxedWait (BaseMemoryChannel)", ms * 1e3 / kLatencyIters);
  }
  {
    // Flags continue over the warm-up and the timed run (never 0, never a value already there).
    uint64_t flagBase = 0;
    const float ms = b.timed(kLatencyIters, [&](uint64_t n) {
      packetPingPongKernel<<<1, 1, 0, b.stream>>>(pktCh, sender, flagBase, n, b.state);
      checkCuda(cudaGetLastError(), "launch");
      flagBase += n;
    }, "LL16 packet ping-pong");
    unsigned long long wrong = 0;
    if (b.active) {
      DevState st{};
      checkCuda(cudaMemcpy(&st, b.state, sizeof(st), cudaMemcpyDeviceToHost), "read device state");
      wrong = st.wrongValues;
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    totalWrong += wrong;
    if (g_rank == 0)
      std::printf("  %-52s %8.2f us  %s\n", "LL16 packets, 8 B each way (putPackets+unpackPackets)",
                  ms * 1e3 / kLatencyIters, okStr(wrong));
  }

  // ---- teardown ----
  MPI_Barrier(MPI_COMM_WORLD);  // every kernel on both GPUs is done
  if (b.active) {
    checkMs(mscclppProxyServiceStop(proxy), "proxy stop");
    checkMs(mscclppProxyServiceDestroy(proxy), "proxy destroy");
  }
  MPI_Barrier(MPI_COMM_WORLD);  // the peer's proxy no longer writes into this side
  if (b.active) {
    checkMs(mscclppSemaphoreDestroy(memSema), "semaphore destroy");
    checkMs(mscclppSemaphoreDestroy(portSema), "semaphore destroy");
    checkMs(mscclppMemoryRelease(remoteMem), "memory release");
    checkMs(mscclppMemoryRelease(remoteScratch), "memory release");
    checkMs(mscclppMemoryRelease(localMem), "memory release");
    checkMs(mscclppMemoryRelease(localScratch), "memory release");
    checkMs(mscclppConnectionRelease(conn), "connection release");
  }
  checkMs(mscclppCommunicatorDestroy(comm), "communicator destroy");
  checkMs(mscclppContextDestroy(context), "context destroy");
  MPI_Barrier(MPI_COMM_WORLD);  // no mapping of this side's memory is left on the peer
  if (b.active) {
    checkCuda(cudaFree(b.buf), "cudaFree");
    checkCuda(cudaFree(b.scratch), "cudaFree");
    checkCuda(cudaFree(b.wrong), "cudaFree");
    checkCuda(cudaFree(b.state), "cudaFree");
    checkCuda(cudaEventDestroy(b.start), "event");
    checkCuda(cudaEventDestroy(b.stop), "event");
  }
  checkCuda(cudaStreamDestroy(b.stream), "stream");
  checkMs(mscclppBootstrapDestroy(bootstrap), "bootstrap destroy");
  if (g_rank == 0) std::printf("%s %s: %llu wrong bytes or values\n", totalWrong ? "FAIL" : "PASS", kName, totalWrong);
  MPI_Finalize();
  return totalWrong ? 1 : 0;
}

// legacy_putsignal: point-to-point acceptance test of the legacy MSCCL++ 0.1 device connection.
//
// Every rank connects to every other rank (tag 0, P2P transport), each connection with its own
// buffer laid out as
//
//     [0, kMaxBytes)               send region: this rank's data, the source of its puts
//     [kMaxBytes, 2 * kMaxBytes)   receive region: where the peer's puts (or stores) land
//
// so that put(kRecvOffset, kSendOffset, n) moves my send region into the peer's receive region.
// Each mode below runs on all connections at once and checks every byte that arrived on the GPU,
// against a pattern that depends on (mode, sender rank, size, iteration), in a receive region that
// was poisoned first; the bytes just past the transfer must still be poison.
//
//   sweep        putWithSignal + flush + wait, 4 B .. 256 MiB (x4), once with the header's own
//                flush()/wait() and once with the bounded versions
//   pingpong     1000 iterations per size, 4 B .. 4 KiB: write new data, putWithSignal (or
//                putWithSignalAndFlush), wait, check in the kernel, then a signal/wait
//                acknowledgement so the sender never overwrites data not yet checked
//   direct       GPU threads store through remoteBuff with 16-byte stores, __threadfence_system(),
//                signal(); the peer waits and checks
//   chunked put  several put() calls (from different lanes) then one signal(), then flush()
//
// Built and run as every tests/gpu/legacy_* program (see tests/gpu/README.md):
//   mpirun -np <GPUs> ./legacy_putsignal
#include <cuda_runtime.h>
#include <mpi.h>
#include <mscclpp.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../legacy_util.cuh"

using namespace legacytest;

namespace {

constexpr const char* kTestName = "legacy_putsignal";
constexpr int kTag = 0;

// Transfer sizes of the sweep, direct and chunked modes.
constexpr uint64_t kMinBytes = 4;
constexpr uint64_t kMaxBytes = 256ull << 20;
constexpr uint64_t kSizeFactor = 4;
// The ping-pong modes use the sizes of the same series up to this one.
constexpr uint64_t kPingPongMaxBytes = 4096;
constexpr unsigned int kPingPongIterations = 1000;

// Layout of each connection's buffer (see the top of the file).
constexpr uint64_t kSendOffset = 0;
constexpr uint64_t kRecvOffset = kMaxBytes;
constexpr uint64_t kConnBufferBytes = 2 * kMaxBytes;
// Bytes past the end of a transfer that must still hold the poison afterwards.
constexpr uint64_t kGuardBytes = 256;

// Number of put() calls the chunked mode splits a transfer into (one per lane of a warp).
constexpr int kPutChunks = 8;
constexpr int kWarpSize = 32;
static_assert(kPutChunks <= kWarpSize, "one lane per chunk");
static_assert(kPutChunks == 8, "modeName(kModeChunkedPut) says x8");

constexpr int kBlockThreads = 256;
// Blocks per connection for the direct-store mode (each thread copies 16 bytes per step).
constexpr unsigned int kDirectMaxBlocksPerPeer = 512;

// Modes, also mixed into the data seed so data left over from another mode never passes a check.
enum Mode : uint32_t {
  kModeSweepHeader = 0,
  kModeSweepBounded,
  kModePingPongPutWithSignal,
  kModePingPongPutWithSignalAndFlush,
  kModeDirect,
  kModeChunkedPut,
};

const char* modeName(Mode m) {
  switch (m) {
    case kModeSweepHeader: return "putWithSignal+flush+wait (header flush/wait)";
    case kModeSweepBounded: return "putWithSignal+flush+wait (bounded flush/wait)";
    case kModePingPongPutWithSignal: return "pingpong putWithSignal";
    case kModePingPongPutWithSignalAndFlush: return "pingpong putWithSignalAndFlush";
    case kModeDirect: return "direct remoteBuff stores+signal";
    case kModeChunkedPut: return "chunked put x8+signal+flush";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Kernels. Block b (or blockIdx.y in the direct mode) serves connection b; status is indexed by
// the peer's rank.
// ---------------------------------------------------------------------------------------------

// One thread per connection: putWithSignal the whole transfer, flush, wait for the peer's.
__global__ void putWithSignalKernel(mscclppDevConn_t* conns, uint64_t size, SyncFlavor flavor, DeviceStatus* status,
                                    unsigned int iteration) {
  mscclppDevConn_t& conn = conns[blockIdx.x];
  DeviceStatus* st = &status[conn.remoteRank];
  conn.putWithSignal(kRecvOffset, kSendOffset, size);
  if (!flushWith(flavor, conn, st, iteration)) return;
  waitWith(flavor, conn, st, kStepWaitData, iteration);
}

// Ping-pong with acknowledgement, one block per connection, `iterations` rounds of:
//   1. all threads write this round's data into the send region;
//   2. thread 0 sends it (putWithSignal, or putWithSignalAndFlush) and waits for the peer's;
//   3. all threads check the peer's data in the receive region;
//   4. thread 0 signals "checked" and waits for the peer's "checked".
// After step 4 the peer has read what we sent, so our next put may overwrite its receive region,
// and our source is free too (the peer could only check data that had fully landed).
// Each end signals twice per round and waits twice, so the epochs stay paired.
__global__ void pingPongKernel(mscclppDevConn_t* conns, uint64_t size, Mode mode, int myRank, unsigned int iterations,
                               DeviceStatus* status) {
  mscclppDevConn_t& conn = conns[blockIdx.x];
  const int peer = conn.remoteRank;
  DeviceStatus* st = &status[peer];
  uint8_t* send = static_cast<uint8_t*>(conn.localBuff) + kSendOffset;
  const uint8_t* recv = static_cast<const uint8_t*>(conn.localBuff) + kRecvOffset;
  __shared__ bool ok;

  for (unsigned int it = 0; it < iterations; it++) {
    fillPattern(send, size, makeSeed(mode, myRank, size, it), threadIdx.x, blockDim.x);
    __threadfence_system();  // the data must be in memory before the proxy's DMA reads it
    __syncthreads();
    if (threadIdx.x == 0) {
      if (mode == kModePingPongPutWithSignalAndFlush)
        conn.putWithSignalAndFlush(kRecvOffset, kSendOffset, size);
      else
        conn.putWithSignal(kRecvOffset, kSendOffset, size);
      ok = boundedWait(conn, 1, st, kStepWaitData, it);
    }
    __syncthreads();
    if (!ok) return;

    checkRegion(recv, size, PatternExpect{makeSeed(mode, peer, size, it)}, threadIdx.x, blockDim.x, st, it);
    __syncthreads();  // every thread has finished reading before we let the peer overwrite
    if (threadIdx.x == 0) {
      conn.signal();
      ok = boundedWait(conn, 1, st, kStepWaitAck, it);
    }
    __syncthreads();
    if (!ok) return;
  }
}

// Direct stores: the blocks of connection blockIdx.y copy the send region into the peer's receive
// region through remoteBuff (16-byte loads and stores, byte stores for a tail), make their stores
// visible system-wide, and the last block to finish sends signal(). arrivals[c] counts finished
// blocks of connection c and must be zero at launch.
__global__ void directStoreKernel(mscclppDevConn_t* conns, uint64_t size, unsigned int* arrivals) {
  mscclppDevConn_t& conn = conns[blockIdx.y];
  const uint8_t* src = static_cast<const uint8_t*>(conn.localBuff) + kSendOffset;
  uint8_t* dst = static_cast<uint8_t*>(conn.remoteBuff) + kRecvOffset;
  const uint64_t fullUnits = size / kUnitBytes;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (uint64_t u = first; u < fullUnits; u += stride)
    reinterpret_cast<uint4*>(dst)[u] = reinterpret_cast<const uint4*>(src)[u];
  for (uint64_t i = fullUnits * kUnitBytes + first; i < size; i += stride) dst[i] = src[i];

  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {
    const bool lastBlock = atomicAdd(&arrivals[blockIdx.y], 1u) == gridDim.x - 1;
    if (lastBlock) {
      __threadfence_system();  // everything the other blocks stored comes before our signal
      conn.signal();
    }
  }
}

// One thread per connection: wait for one signal from the peer (bounded).
__global__ void waitKernel(mscclppDevConn_t* conns, DeviceStatus* status, unsigned int iteration) {
  mscclppDevConn_t& conn = conns[blockIdx.x];
  boundedWait(conn, 1, &status[conn.remoteRank], kStepWaitData, iteration);
}

// One warp per connection: lane c puts chunk c (lanes claim their FIFO slots concurrently); after
// the warp has pushed them all, lane 0 signals (its slot comes after every chunk), flushes and
// waits for the peer's signal.
__global__ void chunkedPutKernel(mscclppDevConn_t* conns, uint64_t size, DeviceStatus* status, unsigned int iteration) {
  mscclppDevConn_t& conn = conns[blockIdx.x];
  DeviceStatus* st = &status[conn.remoteRank];
  const int lane = threadIdx.x;
  if (lane < kPutChunks) {
    const uint64_t begin = size * lane / kPutChunks;
    const uint64_t end = size * (lane + 1) / kPutChunks;
    if (end > begin) conn.put(kRecvOffset + begin, kSendOffset + begin, end - begin);  // never an empty request
  }
  __syncwarp();
  if (lane == 0) {
    conn.signal();
    if (!boundedFlush(conn, st, iteration)) return;
    boundedWait(conn, 1, st, kStepWaitData, iteration);
  }
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

struct Connections {
  std::vector<int> peers;                  // peer rank of connection c
  std::vector<uint8_t*> buffers;           // this rank's buffer of connection c
  std::vector<mscclppDevConn_t> host;      // the structs as the library returned them
  mscclppDevConn_t* dev = nullptr;         // the same, in device memory
  int count() const { return static_cast<int>(peers.size()); }
};

struct Totals {
  int stepsPassed = 0;
  int stepsFailed = 0;
  unsigned long long bytesChecked = 0;  // over all ranks
};

class PutSignalTest {
 public:
  PutSignalTest(Connections& conns, cudaStream_t stream, DeviceStatus* status)
      : c_(conns), stream_(stream), status_(status), rank_(g_proc.rank), nranks_(g_proc.nranks) {}

  void runSweep(SyncFlavor flavor) {
    const Mode mode = flavor == kHeaderSync ? kModeSweepHeader : kModeSweepBounded;
    for (uint64_t size = kMinBytes; size <= kMaxBytes; size *= kSizeFactor) {
      prepare(mode, size, 0);
      putWithSignalKernel<<<c_.count(), 1, 0, stream_>>>(c_.dev, size, flavor, status_, 0);
      CHECK_LAUNCH();
      finish(mode, size, 0, 1);
    }
  }

  void runPingPong(Mode mode) {
    for (uint64_t size = kMinBytes; size <= kPingPongMaxBytes; size *= kSizeFactor) {
      prepare(mode, size, 0);
      pingPongKernel<<<c_.count(), kBlockThreads, 0, stream_>>>(c_.dev, size, mode, rank_, kPingPongIterations, status_);
      CHECK_LAUNCH();
      // The kernel checked every round itself; the data left is that of the last round.
      finish(mode, size, kPingPongIterations - 1, kPingPongIterations);
    }
  }

  // Every rank must reach remote memory on all its connections, or nobody runs the mode (a rank
  // that skipped it would leave its peers waiting for a signal).
  void runDirect() {
    int missing = 0;
    for (int c = 0; c < c_.count(); c++) {
      if (c_.host[c].remoteBuff == nullptr) {
        std::fprintf(stdout, "rank %d: connection to rank %d has remoteBuff == NULL\n", rank_, c_.peers[c]);
        missing++;
      }
    }
    if (sumOverRanks(missing) != 0) {
      if (rank_ == 0)
        std::fprintf(stdout, "FAIL %s: P2P connections have no remoteBuff (peer memory not mapped), mode skipped\n",
                     modeName(kModeDirect));
      totals_.stepsFailed++;
      return;
    }
    unsigned int* arrivals = nullptr;
    CHECK_CUDA(cudaMalloc(&arrivals, sizeof(unsigned int) * c_.count()));
    for (uint64_t size = kMinBytes; size <= kMaxBytes; size *= kSizeFactor) {
      prepare(kModeDirect, size, 0);
      CHECK_CUDA(cudaMemsetAsync(arrivals, 0, sizeof(unsigned int) * c_.count(), stream_));
      const uint64_t units = (size + kUnitBytes - 1) / kUnitBytes;
      uint64_t blocks = (units + kBlockThreads - 1) / kBlockThreads;
      if (blocks > kDirectMaxBlocksPerPeer) blocks = kDirectMaxBlocksPerPeer;
      directStoreKernel<<<dim3(static_cast<unsigned int>(blocks), c_.count()), kBlockThreads, 0, stream_>>>(c_.dev, size,
                                                                                                          arrivals);
      CHECK_LAUNCH();
      waitKernel<<<c_.count(), 1, 0, stream_>>>(c_.dev, status_, 0);
      CHECK_LAUNCH();
      finish(kModeDirect, size, 0, 1);
    }
    CHECK_CUDA(cudaFree(arrivals));
  }

  void runChunkedPut() {
    for (uint64_t size = kMinBytes; size <= kMaxBytes; size *= kSizeFactor) {
      prepare(kModeChunkedPut, size, 0);
      chunkedPutKernel<<<c_.count(), kWarpSize, 0, stream_>>>(c_.dev, size, status_, 0);
      CHECK_LAUNCH();
      finish(kModeChunkedPut, size, 0, 1);
    }
  }

  // Rank 0 prints the summary; returns the exit code.
  int summary() const {
    const bool pass = totals_.stepsFailed == 0;
    if (rank_ == 0) {
      std::fprintf(stdout, "%s %s: %d ranks, %d steps passed, %d failed, %llu bytes checked\n", pass ? "PASS" : "FAIL",
                   kTestName, nranks_, totals_.stepsPassed, totals_.stepsFailed, totals_.bytesChecked);
      std::fflush(stdout);
    }
    return pass ? 0 : 1;
  }

 private:
  uint8_t* sendRegion(int c) const { return c_.buffers[c] + kSendOffset; }
  uint8_t* recvRegion(int c) const { return c_.buffers[c] + kRecvOffset; }
  // status_[peer] collects data and timeouts of the connection to `peer`, status_[guardSlot(peer)]
  // the bytes past its transfers.
  int guardSlot(int peer) const { return nranks_ + peer; }
  int statusSlots() const { return 2 * nranks_; }
  static uint64_t guardBytes(uint64_t size) { return size + kGuardBytes <= kMaxBytes ? kGuardBytes : kMaxBytes - size; }

  // Fills every send region with this rank's data for `iteration`, poisons the receive regions
  // (transfer plus guard), resets the statuses and lines all ranks up, so no peer's data can
  // arrive before the poison.
  void prepare(Mode mode, uint64_t size, unsigned int iteration) {
    for (int c = 0; c < c_.count(); c++) {
      launchFillPattern(sendRegion(c), size, makeSeed(mode, rank_, size, iteration), stream_);
      poison(recvRegion(c), size + guardBytes(size), stream_);
    }
    resetStatus(status_, statusSlots(), stream_);  // also waits for the fill and poison
    MPI_Barrier(MPI_COMM_WORLD);
  }

  // Waits for the step's kernels, checks the receive regions (data of `iteration`, guard still
  // poison), gathers the results and prints one line on rank 0.
  void finish(Mode mode, uint64_t size, unsigned int iteration, unsigned int rounds) {
    const std::string what = strf("%s, %s", modeName(mode), sizeText(size).c_str());
    syncWithWatchdog(stream_, what);
    abortOnTimeouts(readStatus(status_, statusSlots(), stream_), what);

    for (int c = 0; c < c_.count(); c++) {
      const int peer = c_.peers[c];
      launchCheckPattern(recvRegion(c), size, makeSeed(mode, peer, size, iteration), &status_[peer], iteration, stream_);
      launchCheckPoison(recvRegion(c) + size, guardBytes(size), &status_[guardSlot(peer)], iteration, stream_);
    }
    syncWithWatchdog(stream_, what + " (check)");
    const std::vector<DeviceStatus> st = readStatus(status_, statusSlots(), stream_);

    unsigned long long wrong = 0;
    for (int c = 0; c < c_.count(); c++) {
      const int peer = c_.peers[c];
      const DeviceStatus& data = st[peer];
      if (data.mismatches != 0) {
        wrong += data.mismatches;
        // The region holds the last iteration's data; show the bytes when that is where the first error is.
        const bool lastIteration = data.firstBadKey >> kKeyIterationShift == iteration;
        std::fprintf(stdout, "rank %d: %s: data from rank %d: %llu wrong bytes, first at %s%s%s\n", rank_, what.c_str(),
                     peer, data.mismatches, firstBadText(data).c_str(), lastIteration ? ", " : "",
                     lastIteration ? firstBadBytes(data, recvRegion(c), makeSeed(mode, peer, size, iteration)).c_str() : "");
      }
      const DeviceStatus& guard = st[guardSlot(peer)];
      if (guard.mismatches != 0) {
        wrong += guard.mismatches;
        std::fprintf(stdout, "rank %d: %s: rank %d wrote %llu bytes past the transfer, first at guard %s\n", rank_,
                     what.c_str(), peer, guard.mismatches, firstBadText(guard).c_str());
      }
    }
    std::fflush(stdout);
    const unsigned long long totalWrong = sumOverRanks(wrong);
    const unsigned long long checked = sumOverRanks(static_cast<unsigned long long>(c_.count()) * size * rounds);
    totals_.bytesChecked += checked;
    if (totalWrong == 0)
      totals_.stepsPassed++;
    else
      totals_.stepsFailed++;
    if (rank_ == 0) {
      std::fprintf(stdout, "%-4s %-48s %10s: %u round(s), %llu bytes checked, %llu wrong\n", totalWrong == 0 ? "ok" : "FAIL",
                   modeName(mode), sizeText(size).c_str(), rounds, checked, totalWrong);
      std::fflush(stdout);
    }
  }

  Connections& c_;
  cudaStream_t stream_;
  DeviceStatus* status_;
  int rank_;
  int nranks_;
  Totals totals_;
};

}  // namespace

int main(int argc, char** argv) {
  mscclppComm_t comm = initProcess(&argc, &argv, kTestName);
  const int rank = g_proc.rank;

  // One connection per peer, each with its own buffer.
  Connections conns;
  conns.peers = otherRanks();
  std::vector<void*> buffs;
  for (int peer : conns.peers) {
    uint8_t* buf = nullptr;
    CHECK_CUDA(cudaMalloc(&buf, kConnBufferBytes));
    CHECK_CUDA(cudaMemset(buf, 0, kConnBufferBytes));
    conns.buffers.push_back(buf);
    buffs.push_back(buf);
    CHECK_MSCCLPP(mscclppConnect(comm, peer, kTag, buf, kConnBufferBytes, mscclppTransportP2P));
  }
  CHECK_MSCCLPP(mscclppConnectionSetup(comm));
  conns.dev = deviceConnections(comm, conns.peers, kTag, buffs, &conns.host);

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceStatus* status = nullptr;  // per peer rank: one for its data, one for the guard after it
  CHECK_CUDA(cudaMalloc(&status, sizeof(DeviceStatus) * 2 * g_proc.nranks));
  CHECK_CUDA(cudaDeviceSynchronize());

  CHECK_MSCCLPP(mscclppProxyLaunch(comm));
  if (rank == 0)
    std::fprintf(stdout, "%s: %d ranks, one connection per peer, %s per connection buffer\n", kTestName, g_proc.nranks,
                 sizeText(kConnBufferBytes).c_str());

  PutSignalTest test(conns, stream, status);
  test.runSweep(kHeaderSync);
  test.runSweep(kBoundedSync);
  test.runPingPong(kModePingPongPutWithSignal);
  test.runPingPong(kModePingPongPutWithSignalAndFlush);
  test.runDirect();
  test.runChunkedPut();

  CHECK_MSCCLPP(mscclppProxyStop(comm));
  CHECK_CUDA(cudaFree(status));
  CHECK_CUDA(cudaFree(conns.dev));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_MSCCLPP(mscclppCommDestroy(comm));
  for (uint8_t* buf : conns.buffers) CHECK_CUDA(cudaFree(buf));

  const int rc = test.summary();
  MPI_Finalize();
  return rc;
}

// legacy_util.cuh: shared pieces of the CUDA/MPI test programs in tests/gpu/legacy_*, all
// written only against the public MSCCL++ 0.1 header.
//
// What is here:
//   - error checks for CUDA and mscclpp calls that name the rank, the call and the error, then
//     abort the whole MPI job (CHECK_CUDA, CHECK_MSCCLPP, fatal);
//   - process setup: MPI, one GPU per rank (rank % device count), a communicator from rank 0's
//     unique id, and the device connections copied to GPU memory after sanity checks;
//   - bounded versions of mscclppDevConn::wait() and ::flush(): they poll the same conditions as
//     the header's functions but give up after kDeviceTimeoutNs without progress and record the
//     timeout in a DeviceStatus instead of spinning forever;
//   - a data pattern that depends on a seed (sender, size, iteration, ...) and the byte offset, with
//     fill and check helpers that count every wrong byte on the GPU;
//   - a host watchdog that waits for a stream with a deadline and aborts the job with a message.
//
// Programs include it as "../legacy_util.cuh" (the build adds no include path for it).
// Every program is a single translation unit, so the kernels and inline functions below are
// defined here directly.
#ifndef MSCCLPP_TESTS_GPU_LEGACY_UTIL_CUH_
#define MSCCLPP_TESTS_GPU_LEGACY_UTIL_CUH_

#include <cuda_runtime.h>
#include <mpi.h>
#include <mscclpp.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace legacytest {

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

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

// A device-side wait gives up when the value it polls has not moved for this long.
constexpr uint64_t kDeviceTimeoutNs = 10ull * 1000 * 1000 * 1000;
// The host gives a kernel this long to finish before declaring the job hung. It is larger than
// kDeviceTimeoutNs so that bounded device waits report first, with their more precise message.
constexpr double kHostTimeoutSec = 60.0;
// How often the host watchdog polls the stream.
constexpr auto kWatchdogPollInterval = std::chrono::microseconds(100);

// Byte written into receive regions before a transfer: whatever still holds it was never written.
constexpr uint8_t kPoison = 0xEE;

// dataSize of the flush requests pushed by boundedFlush. A trigger whose first word is zero reads
// as an empty slot, so a request that moves no data still needs a non-zero size (the header's own
// flush() uses the same value, privately).
constexpr uint64_t kNoDataRequestSize = 1;

// Fill and check kernels handle the data in 16-byte units, one uint4 per thread and step.
constexpr uint64_t kUnitBytes = 16;
constexpr int kUtilBlockThreads = 256;
constexpr int kUtilMaxBlocks = 4096;

// DeviceStatus::firstBadKey packs (iteration << kKeyIterationShift) | offset; this value means
// "no wrong byte seen".
constexpr int kKeyIterationShift = 40;
constexpr unsigned long long kNoBadKey = ~0ull;

// ---------------------------------------------------------------------------------------------
// Process identity, fatal errors and checks
// ---------------------------------------------------------------------------------------------

struct ProcessInfo {
  const char* testName = "legacy test";
  int rank = -1;
  int nranks = 0;
  int device = -1;
};
inline ProcessInfo g_proc;

// Prints "FAIL <test>: rank R (GPU D): <message>" and takes the whole MPI job down.
[[noreturn]] inline void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] inline void fatal(const char* fmt, ...) {
  char msg[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  std::fprintf(stdout, "FAIL %s: rank %d (GPU %d): %s\n", g_proc.testName, g_proc.rank, g_proc.device, msg);
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; this tells the compiler so
}


inline void checkCuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) fatal("%s:%d: %s failed: %s (%s)", file, line, call, cudaGetErrorString(err), cudaGetErrorName(err));
}

inline void checkMscclpp(mscclppResult_t res, const char* call, const char* file, int line) {
  if (res != mscclppSuccess) fatal("%s:%d: %s failed: %s (%d)", file, line, call, mscclppGetErrorString(res), res);
}

#define CHECK_CUDA(call) ::legacytest::checkCuda((call), #call, __FILE__, __LINE__)
#define CHECK_MSCCLPP(call) ::legacytest::checkMscclpp((call), #call, __FILE__, __LINE__)
// Checks that a kernel launch was accepted (bad configuration etc.); execution errors show up at
// the next synchronization.
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

// ---------------------------------------------------------------------------------------------
// Host watchdog
// ---------------------------------------------------------------------------------------------

// Waits until everything queued on `stream` has finished. If that takes longer than
// `timeoutSec`, the kernel is taken to be stuck (typically in one of the header's own unbounded
// spins, waiting for a proxy that does not answer) and the job is aborted with `what` in the
// message.
inline void syncWithWatchdog(cudaStream_t stream, const std::string& what, double timeoutSec = kHostTimeoutSec) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(timeoutSec));
  for (;;) {
    cudaError_t err = cudaStreamQuery(stream);
    if (err == cudaSuccess) return;
    if (err != cudaErrorNotReady) fatal("%s: GPU error: %s (%s)", what.c_str(), cudaGetErrorString(err), cudaGetErrorName(err));
    if (std::chrono::steady_clock::now() > deadline)
      fatal("timeout: %s did not finish within %.0f s (a kernel is stuck, most likely waiting for the proxy)",
            what.c_str(), timeoutSec);
    std::this_thread::sleep_for(kWatchdogPollInterval);
  }
}

// ---------------------------------------------------------------------------------------------
// Process setup
// ---------------------------------------------------------------------------------------------

// MPI_Init, picks GPU rank % deviceCount (before the communicator exists, as the library expects)
// and joins the communicator through rank 0's unique id. Needs at least minRanks ranks.
inline mscclppComm_t initProcess(int* argc, char*** argv, const char* testName, int minRanks = 2) {
  MPI_Init(argc, argv);
  g_proc.testName = testName;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_proc.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_proc.nranks);
  if (g_proc.nranks < minRanks) fatal("needs at least %d ranks (one per GPU), got %d", minRanks, g_proc.nranks);

  int deviceCount = 0;
  CHECK_CUDA(cudaGetDeviceCount(&deviceCount));
  if (deviceCount <= 0) fatal("no CUDA device");
  g_proc.device = g_proc.rank % deviceCount;
  CHECK_CUDA(cudaSetDevice(g_proc.device));

  mscclppUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (g_proc.rank == 0) CHECK_MSCCLPP(mscclppGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppComm_t comm = nullptr;
  CHECK_MSCCLPP(mscclppCommInitRankFromId(&comm, g_proc.nranks, id, g_proc.rank));

  int commRank = -1, commSize = -1;
  CHECK_MSCCLPP(mscclppCommRank(comm, &commRank));
  CHECK_MSCCLPP(mscclppCommSize(comm, &commSize));
  if (commRank != g_proc.rank || commSize != g_proc.nranks)
    fatal("communicator says rank %d of %d, MPI says %d of %d", commRank, commSize, g_proc.rank, g_proc.nranks);
  return comm;
}

// Fetches the device connections to `peers` (declared with mscclppConnect in exactly this order,
// all with `tag`, and no others) and checks them against what this rank registered:
//   - mscclppGetAllDeviceConnections returns one entry per mscclppConnect call, in call order;
//   - mscclppGetDeviceConnection(peer, tag) points at that same entry;
//   - remoteRank, tag and localBuff are those given to mscclppConnect, and the pointers the
//     device functions dereference are set.
// Returns a copy of the structs in device memory (kernels index it like `peers`) and, in
// *hostCopy if not null, the same structs on the host.
inline mscclppDevConn_t* deviceConnections(mscclppComm_t comm, const std::vector<int>& peers, int tag,
                                           const std::vector<void*>& localBuffs,
                                           std::vector<mscclppDevConn_t>* hostCopy = nullptr) {
  mscclppDevConn_t* all = nullptr;
  int nConns = -1;
  CHECK_MSCCLPP(mscclppGetAllDeviceConnections(comm, &all, &nConns));
  if (nConns != static_cast<int>(peers.size()))
    fatal("mscclppGetAllDeviceConnections returned %d connections, this rank declared %zu", nConns, peers.size());
  if (all == nullptr) fatal("mscclppGetAllDeviceConnections returned a NULL array");

  std::vector<mscclppDevConn_t> conns(peers.size());
  for (size_t k = 0; k < peers.size(); k++) {
    const mscclppDevConn_t& c = all[k];
    mscclppDevConn_t* byPeer = nullptr;
    CHECK_MSCCLPP(mscclppGetDeviceConnection(comm, peers[k], tag, &byPeer));
    if (byPeer != &all[k])
      fatal("mscclppGetDeviceConnection(rank %d, tag %d) = %p, want entry %zu of mscclppGetAllDeviceConnections (%p)",
            peers[k], tag, static_cast<void*>(byPeer), k, static_cast<const void*>(&all[k]));
    if (c.remoteRank != peers[k] || c.tag != tag)
      fatal("connection %zu is (rank %d, tag %d), declared as (rank %d, tag %d)", k, c.remoteRank, c.tag, peers[k], tag);
    if (c.localBuff != localBuffs[k])
      fatal("connection to rank %d: localBuff %p, registered %p", peers[k], c.localBuff, localBuffs[k]);
    if (c.localSignalEpochId == nullptr || c.waitEpochId == nullptr || c.fifo.triggerFifo == nullptr ||
        c.fifo.triggerFifoTail == nullptr || c.fifo.triggerFifoHead == nullptr)
      fatal("connection to rank %d has a NULL pointer (localSignalEpochId %p, waitEpochId %p, fifo %p/%p/%p)",
            peers[k], static_cast<void*>(c.localSignalEpochId), static_cast<void*>(c.waitEpochId),
            static_cast<void*>(c.fifo.triggerFifo), static_cast<void*>(c.fifo.triggerFifoTail),
            static_cast<void*>(c.fifo.triggerFifoHead));
    conns[k] = c;
  }

  mscclppDevConn_t* devConns = nullptr;
  CHECK_CUDA(cudaMalloc(&devConns, sizeof(mscclppDevConn_t) * peers.size()));
  CHECK_CUDA(cudaMemcpy(devConns, conns.data(), sizeof(mscclppDevConn_t) * peers.size(), cudaMemcpyHostToDevice));
  if (hostCopy != nullptr) *hostCopy = conns;
  return devConns;
}

// The transport the programs connect over: mscclppTransportP2P, or mscclppTransportIB when the
// environment has LEGACY_TRANSPORT=ib. Over IB every byte takes the network path (libfabric;
// MSCCLPP_NET_PROVIDER=tcp where there is no RDMA NIC), and the device connections have no
// remoteBuff; gpu-test runs it with each rank a host of its own (MSCCLPP_HOSTID).
inline mscclppTransport_t transportUnderTest() {
  const char* t = std::getenv("LEGACY_TRANSPORT");
  if (t == nullptr || std::strcmp(t, "p2p") == 0) return mscclppTransportP2P;
  if (std::strcmp(t, "ib") == 0) return mscclppTransportIB;
  fatal("LEGACY_TRANSPORT=%s: want p2p or ib", t);
}

// All ranks but this one, ascending: the peer order every program connects in.
inline std::vector<int> otherRanks() {
  std::vector<int> peers;
  for (int r = 0; r < g_proc.nranks; r++)
    if (r != g_proc.rank) peers.push_back(r);
  return peers;
}

// ---------------------------------------------------------------------------------------------
// Results recorded by kernels
// ---------------------------------------------------------------------------------------------

// What went wrong, as recorded on the GPU. Programs keep one per rank (indexed by the rank the data
// came from or the connection led to); the host resets it before a step and reads it after.
struct DeviceStatus {
  unsigned long long mismatches;   // bytes that differed from what was expected
  unsigned long long firstBadKey;  // (iteration << kKeyIterationShift) | offset of the first wrong byte, or kNoBadKey
  unsigned int timeouts;           // bounded waits that gave up
  unsigned int timeoutStep;        // WaitStep of the first timeout
  unsigned int timeoutIteration;   // iteration of the first timeout
};

// What a bounded wait was waiting for, for the timeout message.
enum WaitStep : unsigned int {
  kStepWaitData = 0,  // the peer's signal that its data has landed
  kStepWaitAck = 1,   // the peer's signal that it has checked our data
  kStepFlush = 2,     // the proxy completing our requests
  kStepHandshake = 3, // the peer's signal that it is ready to start
  kNumWaitSteps
};

inline const char* waitStepName(unsigned int step) {
  static const char* const names[kNumWaitSteps] = {"the peer's data signal", "the peer's acknowledgement signal",
                                                   "the proxy to complete a flush", "the peer's handshake signal"};
  return step < kNumWaitSteps ? names[step] : "?";
}

inline DeviceStatus cleanStatus() {
  DeviceStatus s;
  std::memset(&s, 0, sizeof(s));
  s.firstBadKey = kNoBadKey;
  return s;
}

// Queues a reset of n statuses on `stream`.
inline void resetStatus(DeviceStatus* devStatus, int n, cudaStream_t stream) {
  const std::vector<DeviceStatus> clean(n, cleanStatus());
  CHECK_CUDA(cudaMemcpyAsync(devStatus, clean.data(), sizeof(DeviceStatus) * n, cudaMemcpyHostToDevice, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
}

// Reads n statuses back (the stream must be idle, e.g. after syncWithWatchdog).
inline std::vector<DeviceStatus> readStatus(const DeviceStatus* devStatus, int n, cudaStream_t stream) {
  std::vector<DeviceStatus> out(n);
  CHECK_CUDA(cudaMemcpyAsync(out.data(), devStatus, sizeof(DeviceStatus) * n, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return out;
}

__device__ inline void recordTimeout(DeviceStatus* st, unsigned int step, unsigned int iteration) {
  if (atomicAdd(&st->timeouts, 1u) == 0) {
    st->timeoutStep = step;
    st->timeoutIteration = iteration;
  }
}

__device__ inline void recordMismatches(DeviceStatus* st, unsigned long long count, uint64_t firstOffset,
                                        unsigned int iteration) {
  atomicAdd(&st->mismatches, count);
  atomicMin(&st->firstBadKey, (static_cast<unsigned long long>(iteration) << kKeyIterationShift) | firstOffset);
}

// After the kernels of a step: sums the timeouts over all ranks. If any rank timed out, every rank
// prints its own timeouts, rank 0 prints the FAIL summary and the job is aborted (the connections'
// epoch counters are out of step after a wait gave up, so later steps could not mean anything).
inline void abortOnTimeouts(const std::vector<DeviceStatus>& status, const std::string& what) {
  unsigned long long local = 0, total = 0;
  for (const DeviceStatus& s : status) local += s.timeouts;
  MPI_Allreduce(&local, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (total == 0) return;
  for (size_t r = 0; r < status.size(); r++) {
    if (status[r].timeouts == 0) continue;
    std::fprintf(stdout, "rank %d: %s: gave up after %.0f s without progress waiting for %s (rank %zu, iteration %u)\n",
                 g_proc.rank, what.c_str(), kDeviceTimeoutNs / 1e9, waitStepName(status[r].timeoutStep), r,
                 status[r].timeoutIteration);
  }
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_proc.rank == 0) {
    std::fprintf(stdout, "FAIL %s: %s: %llu bounded wait(s) timed out, stopping\n", g_proc.testName, what.c_str(), total);
    std::fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// ---------------------------------------------------------------------------------------------
// Bounded waits (device)
// ---------------------------------------------------------------------------------------------


// Like `count` calls of mscclppDevConn::wait(): advances this end's wait epoch by `count` and
// polls the same counter (localSignalEpochId->proxy) until the peer's signals reach it. Gives up
// when the counter has not moved for kDeviceTimeoutNs, records the timeout in `st` and returns
// false. One thread per connection.
__device__ inline bool boundedWait(mscclppDevConn& conn, uint64_t count, DeviceStatus* st, unsigned int step,
                                   unsigned int iteration) {
  *conn.waitEpochId += count;
  const uint64_t target = *conn.waitEpochId;
  volatile uint64_t* signalled = &conn.localSignalEpochId->proxy;
  uint64_t lastSeen = *signalled;
  uint64_t deadline = globalTimerNs() + kDeviceTimeoutNs;
  for (;;) {
    const uint64_t now = *signalled;
    if (now >= target) break;
    const uint64_t t = globalTimerNs();
    if (now != lastSeen) {
      lastSeen = now;
      deadline = t + kDeviceTimeoutNs;
    } else if (t > deadline) {
      recordTimeout(st, step, iteration);
      return false;
    }
  }
  __threadfence();  // order the caller's reads of the delivered data after the signal
  return true;
}

// Like the private waitUntilConsumed of mscclppDevConn: spins until the proxy has cleared trigger
// slot `slot`, or its tail copy has moved past it, with a deadline.
__device__ inline bool boundedWaitConsumed(mscclppDevConn& conn, uint64_t slot, DeviceStatus* st,
                                           unsigned int iteration) {
  volatile uint64_t* slotWord = &conn.fifo.triggerFifo[slot % MSCCLPP_PROXY_FIFO_SIZE].value[0];
  volatile uint64_t* tail = conn.fifo.triggerFifoTail;
  const uint64_t deadline = globalTimerNs() + kDeviceTimeoutNs;
  while (*slotWord != 0 && *tail <= slot) {
    if (globalTimerNs() > deadline) {
      recordTimeout(st, kStepFlush, iteration);
      return false;
    }
  }
  return true;
}

// mscclppDevConn::flush() with a deadline: pushes a sync request and waits for the proxy to
// complete it (and with it every earlier request of the connection).
__device__ inline bool boundedFlush(mscclppDevConn& conn, DeviceStatus* st, unsigned int iteration) {
  const uint64_t slot = conn.fifo.push(mscclppSync, 0, 0, kNoDataRequestSize);
  return boundedWaitConsumed(conn, slot, st, iteration);
}

// Which implementation of flush/wait a kernel uses: the header's own (unbounded; a hang is caught
// by the host watchdog) or the bounded ones above. Tests run both so the header's functions are
// exercised as shipped.
enum SyncFlavor : int { kHeaderSync = 0, kBoundedSync = 1 };

inline const char* syncFlavorName(SyncFlavor f) { return f == kHeaderSync ? "header flush/wait" : "bounded flush/wait"; }

__device__ inline bool flushWith(SyncFlavor flavor, mscclppDevConn& conn, DeviceStatus* st, unsigned int iteration) {
  if (flavor == kHeaderSync) {
    conn.flush();
    return true;
  }
  return boundedFlush(conn, st, iteration);
}

__device__ inline bool waitWith(SyncFlavor flavor, mscclppDevConn& conn, DeviceStatus* st, unsigned int step,
                                unsigned int iteration) {
  if (flavor == kHeaderSync) {
    conn.wait();
    __threadfence();
    return true;
  }
  return boundedWait(conn, 1, st, step, iteration);
}

// ---------------------------------------------------------------------------------------------
// Data pattern
// ---------------------------------------------------------------------------------------------

// A 32-bit integer hash (xorshift-multiply rounds): good enough that neighbouring words, seeds and
// offsets give unrelated values.
__host__ __device__ inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// Seed of one transfer's data. Callers pass what should make it unique: test/mode, sender rank,
// size, iteration. Sizes are below 4 GiB here, so their low 32 bits suffice.
__host__ __device__ inline uint32_t makeSeed(uint32_t mode, uint32_t sender, uint64_t size, uint32_t iteration) {
  return mix32(mix32(mix32(mix32(mode + 1) ^ sender) ^ static_cast<uint32_t>(size)) ^ iteration);
}

// The 4 pattern bytes at offsets [4*wordIndex, 4*wordIndex + 4) of a region filled with `seed`.
__host__ __device__ inline uint32_t patternWord(uint32_t seed, uint64_t wordIndex) {
  return mix32(seed ^ mix32(static_cast<uint32_t>(wordIndex) ^ static_cast<uint32_t>(wordIndex >> 32) * 0x9e3779b9u));
}

__host__ __device__ inline uint8_t patternByte(uint32_t seed, uint64_t offset) {
  return static_cast<uint8_t>(patternWord(seed, offset / 4) >> (8 * (offset % 4)));
}

// Expected contents: the seeded pattern, or one constant byte (poison).
struct PatternExpect {
  uint32_t seed;
  __device__ uint8_t operator()(uint64_t offset) const { return patternByte(seed, offset); }
};
struct ConstantExpect {
  uint8_t value;
  __device__ uint8_t operator()(uint64_t) const { return value; }
};

__device__ inline bool isAligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & (kUnitBytes - 1)) == 0; }

// Writes the pattern for bytes [0, size) of `region`, 16-byte units firstUnit, firstUnit + unitStride, ...
// (so a whole grid, a block or a warp can share the work). Any alignment of `region` works; aligned
// full units use one 16-byte store.
__device__ inline void fillPattern(uint8_t* region, uint64_t size, uint32_t seed, uint64_t firstUnit, uint64_t unitStride) {
  const bool aligned = isAligned16(region);
  for (uint64_t u = firstUnit; u * kUnitBytes < size; u += unitStride) {
    const uint64_t begin = u * kUnitBytes;
    const uint64_t n = size - begin < kUnitBytes ? size - begin : kUnitBytes;
    if (aligned && n == kUnitBytes) {
      const uint64_t w = begin / 4;
      uint4 v = make_uint4(patternWord(seed, w), patternWord(seed, w + 1), patternWord(seed, w + 2), patternWord(seed, w + 3));
      *reinterpret_cast<uint4*>(region + begin) = v;
    } else {
      for (uint64_t k = 0; k < n; k++) region[begin + k] = patternByte(seed, begin + k);
    }
  }
}

// Compares bytes [0, size) of `region` with `expect` (same work split as fillPattern) and records
// the wrong ones in `st`, attributed to `iteration`. Reads bypass the L1 cache (__ldcv), so data
// written by a DMA engine or another GPU during this kernel is seen, not a stale cached copy.
template <typename Expect>
__device__ inline void checkRegion(const uint8_t* region, uint64_t size, Expect expect, uint64_t firstUnit,
                                   uint64_t unitStride, DeviceStatus* st, unsigned int iteration) {
  const bool aligned = isAligned16(region);
  unsigned long long wrong = 0;
  uint64_t firstWrong = ~0ull;
  for (uint64_t u = firstUnit; u * kUnitBytes < size; u += unitStride) {
    const uint64_t begin = u * kUnitBytes;
    const uint64_t n = size - begin < kUnitBytes ? size - begin : kUnitBytes;
    uint8_t got[kUnitBytes];
    if (aligned && n == kUnitBytes) {
      const uint4 v = __ldcv(reinterpret_cast<const uint4*>(region + begin));
      memcpy(got, &v, sizeof(v));
    } else {
      for (uint64_t k = 0; k < n; k++) got[k] = __ldcv(region + begin + k);
    }
    for (uint64_t k = 0; k < n; k++) {
      if (got[k] != expect(begin + k)) {
        wrong++;
        if (begin + k < firstWrong) firstWrong = begin + k;
      }
    }
  }
  if (wrong != 0) recordMismatches(st, wrong, firstWrong, iteration);
}

__global__ void fillPatternKernel(uint8_t* region, uint64_t size, uint32_t seed) {
  fillPattern(region, size, seed, blockIdx.x * blockDim.x + threadIdx.x, static_cast<uint64_t>(gridDim.x) * blockDim.x);
}

__global__ void checkPatternKernel(const uint8_t* region, uint64_t size, uint32_t seed, DeviceStatus* st,
                                   unsigned int iteration) {
  checkRegion(region, size, PatternExpect{seed}, blockIdx.x * blockDim.x + threadIdx.x,
              static_cast<uint64_t>(gridDim.x) * blockDim.x, st, iteration);
}

__global__ void checkPoisonKernel(const uint8_t* region, uint64_t size, DeviceStatus* st, unsigned int iteration) {
  checkRegion(region, size, ConstantExpect{kPoison}, blockIdx.x * blockDim.x + threadIdx.x,
              static_cast<uint64_t>(gridDim.x) * blockDim.x, st, iteration);
}

// Blocks for a grid-stride pass over `size` bytes in 16-byte units.
inline unsigned int blocksFor(uint64_t size) {
  const uint64_t units = (size + kUnitBytes - 1) / kUnitBytes;
  uint64_t blocks = (units + kUtilBlockThreads - 1) / kUtilBlockThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > static_cast<uint64_t>(kUtilMaxBlocks)) blocks = kUtilMaxBlocks;
  return static_cast<unsigned int>(blocks);
}

inline void launchFillPattern(void* region, uint64_t size, uint32_t seed, cudaStream_t stream) {
  if (size == 0) return;
  fillPatternKernel<<<blocksFor(size), kUtilBlockThreads, 0, stream>>>(static_cast<uint8_t*>(region), size, seed);
  CHECK_LAUNCH();
}

inline void launchCheckPattern(const void* region, uint64_t size, uint32_t seed, DeviceStatus* st,
                               unsigned int iteration, cudaStream_t stream) {
  if (size == 0) return;
  checkPatternKernel<<<blocksFor(size), kUtilBlockThreads, 0, stream>>>(static_cast<const uint8_t*>(region), size, seed,
                                                                       st, iteration);
  CHECK_LAUNCH();
}

inline void launchCheckPoison(const void* region, uint64_t size, DeviceStatus* st, unsigned int iteration,
                              cudaStream_t stream) {
  if (size == 0) return;
  checkPoisonKernel<<<blocksFor(size), kUtilBlockThreads, 0, stream>>>(static_cast<const uint8_t*>(region), size, st,
                                                                      iteration);
  CHECK_LAUNCH();
}

inline void poison(void* region, uint64_t size, cudaStream_t stream) {
  if (size != 0) CHECK_CUDA(cudaMemsetAsync(region, kPoison, size, stream));
}

// "offset X (iteration K)" for the first wrong byte of a status.
inline std::string firstBadText(const DeviceStatus& s) {
  if (s.firstBadKey == kNoBadKey) return "none";
  const unsigned long long offset = s.firstBadKey & ((1ull << kKeyIterationShift) - 1);
  const unsigned long long iteration = s.firstBadKey >> kKeyIterationShift;
  return strf("offset %llu (iteration %llu)", offset, iteration);
}

// For a region that still holds the checked data: "got 0x.. want 0x.." at the first wrong byte,
// noting when the byte is still the poison (never written).
inline std::string firstBadBytes(const DeviceStatus& s, const void* region, uint32_t seed) {
  if (s.firstBadKey == kNoBadKey) return "";
  const uint64_t offset = s.firstBadKey & ((1ull << kKeyIterationShift) - 1);
  uint8_t got = 0;
  CHECK_CUDA(cudaMemcpy(&got, static_cast<const uint8_t*>(region) + offset, 1, cudaMemcpyDeviceToHost));
  return strf("got 0x%02x%s want 0x%02x", got, got == kPoison ? " (poison: never written)" : "", patternByte(seed, offset));
}

// Sums a value over all ranks.
inline unsigned long long sumOverRanks(unsigned long long v) {
  unsigned long long total = 0;
  MPI_Allreduce(&v, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}


}  // namespace legacytest

#endif  // MSCCLPP_TESTS_GPU_LEGACY_UTIL_CUH_

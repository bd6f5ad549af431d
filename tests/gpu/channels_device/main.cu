// channels_device_test: the device handles of include/mscclpp/*_device.h on two GPUs of one
// process, with no library call at all. Every handle is built by hand from cudaMalloc'd memory
// (tokens, counters, buffers); peer access (enabled both ways) lets each GPU use the other's
// pointers directly, as an IPC mapping would. Checks, GPU 0 = A, GPU 1 = B:
//   1. MemoryChannel put (A -> B) and get (B <- A): sizes 1, 3, 17, 4093, 1 MiB + 5; source and
//      destination offsets that exercise every copy width (16, 8, 4, 1 bytes); 1 to 2048 threads.
//      Every byte of the 4 MiB destination region is checked (copied bytes and untouched ones).
//   2. read<T>/write<T> on the peer for T of 1, 2, 4, 8 and 16 bytes.
//   3. signal/wait ordering: 20 rounds in which A writes new data, puts 1 MiB + 5 bytes and
//      signals; B waits, checks every byte and acknowledges.
//   4. relaxedSignal/relaxedWait ping-pong, 1000 round trips, then the token counts.
//   5. poll: nothing before a signal, exactly one success per signal, and the data written
//      before the signal visible after a successful poll.
//   6. LL16 and LL8 packets, 10 rounds each (flag = round number), over putPackets+unpackPackets
//      and over local mscclppCopyToPackets + the peer's getPackets; sizes include a partial last
//      packet, and the byte after the data must stay untouched.
//   7. FIFO: 1024 GPU threads push 4096 triggers into a 64-slot host-pinned ring while a host
//      thread consumes them as the proxy does (read slot, fst != 0, decode, zero it, advance the
//      tail, publish the tail every 4); every trigger's fields are verified, each exactly once,
//      then head, tail and the ring.
//   8. PortChannel: one thread calls every method (put, signal, putWithSignal, putWithSignalAndFlush,
//      flush, wait, poll, including the size-0 forms) against the same host consumer, which checks
//      every trigger (connId = channelId, size 1 for requests without data) and answers each signal
//      by writing the channel's inbound token as the peer's proxy would. No data is moved.
// Nothing hangs: device-side waits are bounded by %globaltimer or by maxSpinCount (which traps),
// every kernel is watched by a host deadline, and the FIFO consumer gives up after a deadline.
// Prints "PASS channels_device_test: ..." or "FAIL channels_device_test: ..." lines; exit code 0
// means pass, kExitSkipped (77) that the host has fewer than 2 GPUs. Single process;
// needs 2 GPUs with peer access; no MPI.
#include <cuda_runtime.h>
#include <mscclpp/fifo_device.h>
#include <mscclpp/memory_channel_device.h>
#include <mscclpp/packet_device.h>
#include <mscclpp/port_channel_device.h>
#include <mscclpp/semaphore_device.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

// Exit status of a program that this host cannot run (too few GPUs): `make gpu-test` counts it
// as skipped, not failed.
constexpr int kExitSkipped = 77;
constexpr int kGpuA = 0;
constexpr int kGpuB = 1;
constexpr uint64_t kRegion = 4 << 20;        // each buffer: [0, kRegion) send side, [kRegion, 2*kRegion) receive side
constexpr uint64_t kBufBytes = 2 * kRegion;  //
constexpr uint64_t kPacketBytes = 4 << 20;   // packet scratch per GPU
constexpr unsigned char kSentinel = 0xEE;    // bytes nobody should write
constexpr uint64_t kDeviceTimeoutNs = 10ull * 1000 * 1000 * 1000;  // device-side bounded waits
constexpr int64_t kMaxSpins = 200 * 1000 * 1000;                    // bound for the header's own spins (traps)
constexpr int kHostTimeoutS = 60;                                   // per kernel (host watchdog)

int failures = 0;
int checks = 0;

void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stdout, "FAIL channels_device_test: ");
  std::vfprintf(stdout, fmt, ap);
  std::fprintf(stdout, "\n");
  std::fflush(stdout);
  va_end(ap);
  ++failures;
}

// Fatal CUDA error: the context may be gone (a trapped spin bound), so report and exit.
void cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::printf("FAIL channels_device_test: %s: %s (a trap here means a device wait hit its spin bound)\n", what,
              cudaGetErrorString(e));
  std::fflush(stdout);
  _exit(1);
}

// Waits for a stream with a deadline, so a stuck kernel is a failure, not a hang.
void syncOrDie(int device, cudaStream_t s, const char* what) {
  cuda(cudaSetDevice(device), "cudaSetDevice");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kHostTimeoutS);
  for (;;) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) cuda(e, what);
    if (std::chrono::steady_clock::now() > deadline) {
      std::printf("FAIL channels_device_test: %s: timeout after %d s (kernel stuck on GPU %d)\n", what, kHostTimeoutS,
                  device);
      std::fflush(stdout);
      _exit(1);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// ---------------------------------------------------------------------------------------------
// Device helpers.

// Error record in device memory of one GPU: a count and the first error's code and arguments.
struct DeviceErrors {
  unsigned long long count;
  unsigned long long first[4];
};

__device__ void record(DeviceErrors* err, unsigned long long code, unsigned long long a, unsigned long long b,
                       unsigned long long c) {
  if (atomicAdd(&err->count, 1ULL) == 0) {
    err->first[0] = code;
    err->first[1] = a;
    err->first[2] = b;
    err->first[3] = c;
  }
}

__device__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__host__ __device__ unsigned char pattern(uint64_t i, uint32_t seed) {
  return static_cast<unsigned char>((i * 2654435761ull + (i >> 11) + seed * 0x9e37ull + 1) & 0xff);
}

// poll() until a signal arrives or kDeviceTimeoutNs passes; returns whether it arrived.
template <typename Channel>
__device__ bool boundedPoll(Channel& ch) {
  const uint64_t start = globalTimerNs();
  while (!ch.poll()) {
    if (globalTimerNs() - start > kDeviceTimeoutNs) return false;
  }
  return true;
}

__global__ void fillPattern(unsigned char* p, uint64_t n, uint32_t seed) {
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = pattern(i, seed);
}

// Checks region[0, regionBytes): [dstOff, dstOff+bytes) must hold pattern(srcOff + k, seed), the
// rest kSentinel.
__global__ void checkRegion(const unsigned char* region, uint64_t regionBytes, uint64_t dstOff, uint64_t bytes,
                            uint64_t srcOff, uint32_t seed, DeviceErrors* err, unsigned long long code) {
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < regionBytes; i += gridDim.x * blockDim.x) {
    const bool inside = i >= dstOff && i < dstOff + bytes;
    const unsigned char want = inside ? pattern(srcOff + (i - dstOff), seed) : kSentinel;
    if (region[i] != want) record(err, code, i, region[i], want);
  }
}

// ---------------------------------------------------------------------------------------------
// Kernels under test.

__global__ void putOrGet(mscclppMemoryChannelDeviceHandle ch, bool get, uint64_t dstOffset, uint64_t srcOffset,
                         uint64_t bytes) {
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
  if (get) {
    ch.get(dstOffset, srcOffset, bytes, tid, n);
  } else {
    ch.put(dstOffset, srcOffset, bytes, tid, n);
  }
}

template <typename T>
__device__ T patternValue(uint64_t index, uint32_t seed) {
  T v;
  unsigned char* b = reinterpret_cast<unsigned char*>(&v);
  for (uint64_t k = 0; k < sizeof(T); ++k) b[k] = pattern(index * sizeof(T) + k, seed);
  return v;
}

template <typename T>
__device__ bool sameBytes(const T& x, const T& y) {
  const unsigned char* a = reinterpret_cast<const unsigned char*>(&x);
  const unsigned char* b = reinterpret_cast<const unsigned char*>(&y);
  for (uint64_t k = 0; k < sizeof(T); ++k)
    if (a[k] != b[k]) return false;
  return true;
}

template <typename T>
__global__ void writeElements(mscclppMemoryChannelDeviceHandle ch, uint64_t base, uint64_t count, uint32_t seed) {
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    ch.write<T>(base + i, patternValue<T>(i, seed));
}

template <typename T>
__global__ void readElements(mscclppMemoryChannelDeviceHandle ch, uint64_t base, uint64_t count, uint32_t seed,
                             DeviceErrors* err) {
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    if (!sameBytes(ch.read<T>(base + i), patternValue<T>(i, seed))) record(err, 20, sizeof(T), i, 0);
}

// Ordering test, sender (one block): new data in src[0, bytes), put to the peer's receive side,
// barrier, signal from thread 0; then wait for the peer's acknowledgement.
__global__ void orderSender(mscclppMemoryChannelDeviceHandle ch, uint64_t bytes, int rounds, DeviceErrors* err) {
  __shared__ bool abortRun;
  unsigned char* src = static_cast<unsigned char*>(ch.src);
  for (int r = 1; r <= rounds; ++r) {
    for (uint64_t i = threadIdx.x; i < bytes; i += blockDim.x) src[i] = pattern(i, 1000 + r);
    __syncthreads();
    ch.put(kRegion, 0, bytes, threadIdx.x, blockDim.x);
    __syncthreads();
    if (threadIdx.x == 0) {
      ch.signal();
      abortRun = !boundedPoll(ch);
      if (abortRun) record(err, 30, r, 0, 0);
    }
    __syncthreads();
    if (abortRun) return;
  }
}

// Ordering test, receiver (one block): thread 0 wait()s, barrier, every thread checks its bytes,
// barrier, thread 0 acknowledges.
__global__ void orderReceiver(mscclppMemoryChannelDeviceHandle ch, uint64_t bytes, int rounds, DeviceErrors* err) {
  const unsigned char* dst = static_cast<const unsigned char*>(ch.src) + kRegion;
  for (int r = 1; r <= rounds; ++r) {
    if (threadIdx.x == 0) ch.wait(kMaxSpins);
    __syncthreads();
    for (uint64_t i = threadIdx.x; i < bytes; i += blockDim.x) {
      const unsigned char want = pattern(i, 1000 + r);
      if (dst[i] != want) record(err, 31, r, i, dst[i]);
    }
    __syncthreads();
    if (threadIdx.x == 0) ch.signal();
  }
}

// Ping-pong with the relaxed variants (one thread each side).
__global__ void relaxedPingPong(mscclppMemoryChannelDeviceHandle ch, int iterations, bool first, DeviceErrors* err) {
  for (int i = 0; i < iterations; ++i) {
    if (first) {
      ch.relaxedSignal();
      ch.relaxedWait(kMaxSpins);
    } else {
      ch.relaxedWait(kMaxSpins);
      ch.relaxedSignal();
    }
  }
  if (*ch.semaphore.outboundToken != static_cast<uint64_t>(iterations)) record(err, 40, *ch.semaphore.outboundToken, 0, 0);
  if (*ch.semaphore.expectedInboundToken != static_cast<uint64_t>(iterations))
    record(err, 41, *ch.semaphore.expectedInboundToken, 0, 0);
  if (mscclppLoadRelaxedSys(ch.semaphore.inboundToken) != static_cast<uint64_t>(iterations))
    record(err, 42, mscclppLoadRelaxedSys(ch.semaphore.inboundToken), 0, 0);
}

// Writes `value` into the peer's receive side, then signals `signals` times (one thread).
__global__ void writeAndSignal(mscclppMemoryChannelDeviceHandle ch, uint64_t value, int signals) {
  ch.write<uint64_t>(kRegion / sizeof(uint64_t), value);
  for (int i = 0; i < signals; ++i) ch.signal();
}

// Polls `tries` times and stores how many succeeded; after the first success, checks `value` in
// the local receive side (one thread).
__global__ void pollCount(mscclppMemoryChannelDeviceHandle ch, int tries, uint64_t value, int* count,
                          DeviceErrors* err) {
  int n = 0;
  for (int i = 0; i < tries; ++i) {
    if (!ch.poll()) continue;
    if (n++ == 0) {
      const uint64_t got = static_cast<const uint64_t*>(ch.src)[kRegion / sizeof(uint64_t)];
      if (got != value) record(err, 50, got, value, 0);
    }
  }
  *count = n;
}

// Packets, sender (one block): new data in src[0, bytes); then either putPackets into the peer's
// packet scratch (viaGet false) or mscclppCopyToPackets into its own (viaGet true); then wait for
// the peer's acknowledgement before the next round overwrites the packets.
template <typename Packet>
__global__ void packetSender(mscclppMemoryChannelDeviceHandle ch, uint64_t bytes, int rounds, bool viaGet,
                             DeviceErrors* err) {
  __shared__ bool abortRun;
  unsigned char* src = static_cast<unsigned char*>(ch.src);
  for (int r = 1; r <= rounds; ++r) {
    for (uint64_t i = threadIdx.x; i < bytes; i += blockDim.x) src[i] = pattern(i, 2000 + r);
    __syncthreads();
    if (viaGet) {
      mscclppCopyToPackets<Packet>(ch.packetBuffer, src, bytes, threadIdx.x, blockDim.x, r);
    } else {
      ch.putPackets<Packet>(0, 0, bytes, threadIdx.x, blockDim.x, r);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      abortRun = !boundedPoll(ch);
      if (abortRun) record(err, 60, r, 0, 0);
    }
    __syncthreads();
    if (abortRun) return;
  }
}

// Packets, receiver (one block): unpackPackets from its own scratch (or getPackets from the
// peer's) into the receive side, check every byte and the one after, acknowledge.
template <typename Packet>
__global__ void packetReceiver(mscclppMemoryChannelDeviceHandle ch, uint64_t bytes, int rounds, bool viaGet,
                               DeviceErrors* err) {
  const unsigned char* dst = static_cast<const unsigned char*>(ch.src) + kRegion;
  for (int r = 1; r <= rounds; ++r) {
    if (viaGet) {
      ch.getPackets<Packet>(kRegion, 0, bytes, threadIdx.x, blockDim.x, r, kMaxSpins);
    } else {
      ch.unpackPackets<Packet>(kRegion, 0, bytes, threadIdx.x, blockDim.x, r, kMaxSpins);
    }
    __syncthreads();
    for (uint64_t i = threadIdx.x; i <= bytes; i += blockDim.x) {
      const unsigned char want = i < bytes ? pattern(i, 2000 + r) : kSentinel;
      if (dst[i] != want) record(err, 61, r, i, dst[i]);
    }
    __syncthreads();
    if (threadIdx.x == 0) ch.signal();
  }
}

// FIFO: every thread pushes `perThread` triggers whose fields encode (thread, iteration), then
// sync()s its last one.
constexpr int kFifoThreadsPerBlock = 128;
constexpr int kFifoBlocks = 8;
constexpr int kFifoPerThread = 4;
constexpr uint32_t kFifoSlots = 64;

__host__ __device__ uint64_t fifoType(uint64_t gid) { return gid % 7 + 1; }
__host__ __device__ uint64_t fifoConn(uint64_t gid) { return gid % 1024; }

__global__ void fifoPush(mscclppFifoDeviceHandle fifo, int perThread) {
  const uint64_t gid = blockIdx.x * blockDim.x + threadIdx.x;
  uint64_t last = 0;
  for (int it = 0; it < perThread; ++it) {
    const uint64_t id = gid * perThread + it;
    last = fifo.push(fifoType(gid), gid, it, id + 1, fifoConn(gid), kMaxSpins);
  }
  fifo.sync(last, kMaxSpins);
}

// ---------------------------------------------------------------------------------------------
// Host side.

struct Side {
  int device;
  cudaStream_t stream;
  unsigned char* buf;     // kBufBytes
  unsigned char* packet;  // kPacketBytes
  DeviceErrors* err;
};

// One channel per side over fresh semaphore tokens: A's dst is B's `dstB` memory, and so on.
struct ChannelPair {
  mscclppMemoryChannelDeviceHandle a, b;
};

uint64_t* allocTokens(int device) {
  uint64_t* t = nullptr;
  cuda(cudaSetDevice(device), "cudaSetDevice");
  cuda(cudaMalloc(&t, 4 * sizeof(uint64_t)), "cudaMalloc tokens");
  cuda(cudaMemset(t, 0, 4 * sizeof(uint64_t)), "cudaMemset tokens");
  return t;
}

std::vector<void*> tokenAllocations;

ChannelPair makePair(const Side& A, const Side& B, void* dstOfA, void* dstOfB) {
  uint64_t* ta = allocTokens(A.device);  // [0] inbound, [1] outbound, [2] expected
  uint64_t* tb = allocTokens(B.device);
  tokenAllocations.push_back(ta);
  tokenAllocations.push_back(tb);
  ChannelPair p;
  p.a.semaphore = mscclppMemorySemaphoreDeviceHandle{ta + 0, ta + 1, tb + 0, ta + 2};
  p.b.semaphore = mscclppMemorySemaphoreDeviceHandle{tb + 0, tb + 1, ta + 0, tb + 2};
  p.a.dst = dstOfA;
  p.a.src = A.buf;
  p.a.packetBuffer = A.packet;
  p.b.dst = dstOfB;
  p.b.src = B.buf;
  p.b.packetBuffer = B.packet;
  return p;
}

// Reads and clears a side's error record; reports the first error.
bool takeErrors(const Side& s, const char* test) {
  DeviceErrors e;
  cuda(cudaSetDevice(s.device), "cudaSetDevice");
  cuda(cudaMemcpy(&e, s.err, sizeof(e), cudaMemcpyDeviceToHost), "copy errors");
  cuda(cudaMemset(s.err, 0, sizeof(e)), "clear errors");
  ++checks;
  if (e.count == 0) return true;
  fail("%s: %llu errors on GPU %d; first: code %llu args %llu %llu %llu", test, e.count, s.device, e.first[0],
       e.first[1], e.first[2], e.first[3]);
  return false;
}

void clearReceive(const Side& s) {
  cuda(cudaSetDevice(s.device), "cudaSetDevice");
  cuda(cudaMemsetAsync(s.buf + kRegion, kSentinel, kRegion, s.stream), "memset receive side");
}

void testPutGet(Side& A, Side& B) {
  const ChannelPair ch = makePair(A, B, B.buf, A.buf);
  const uint64_t sizes[] = {1, 3, 17, 4093, (1 << 20) + 5};
  // (srcOffset, dstOffset) pairs whose relative misalignment selects 16-, 8-, 4- and 1-byte words.
  const uint64_t offsets[][2] = {{0, 0}, {16, 48}, {7, 7}, {8, 0}, {4, 12}, {4, 0}, {5, 9}, {1, 0}, {0, 3}, {3, 1}};
  const unsigned configs[][2] = {{1, 1}, {1, 32}, {1, 33}, {1, 256}, {1, 1024}, {3, 97}, {8, 256}};
  uint32_t seed = 1;
  cuda(cudaSetDevice(A.device), "cudaSetDevice");
  fillPattern<<<256, 256, 0, A.stream>>>(A.buf, kRegion, seed);
  syncOrDie(A.device, A.stream, "fill A");
  int cases = 0;
  for (int get = 0; get < 2; ++get) {
    for (uint64_t size : sizes) {
      for (const auto& off : offsets) {
        for (const auto& cfg : configs) {
          if (cfg[0] * cfg[1] == 1 && size > 65536) continue;  // one thread, one byte at a time: too slow
          const uint64_t srcOff = off[0], dstOff = off[1];
          clearReceive(B);
          syncOrDie(B.device, B.stream, "clear B");
          if (get) {
            // B reads A's memory: dstOffset names A's side (ch.b.dst), srcOffset B's own.
            cuda(cudaSetDevice(B.device), "cudaSetDevice");
            putOrGet<<<cfg[0], cfg[1], 0, B.stream>>>(ch.b, true, srcOff, kRegion + dstOff, size);
            syncOrDie(B.device, B.stream, "get");
          } else {
            cuda(cudaSetDevice(A.device), "cudaSetDevice");
            putOrGet<<<cfg[0], cfg[1], 0, A.stream>>>(ch.a, false, kRegion + dstOff, srcOff, size);
            syncOrDie(A.device, A.stream, "put");
          }
          cuda(cudaGetLastError(), "launch put/get");
          cuda(cudaSetDevice(B.device), "cudaSetDevice");
          checkRegion<<<256, 256, 0, B.stream>>>(B.buf + kRegion, kRegion, dstOff, size, srcOff, seed, B.err,
                                                  get ? 11 : 10);
          syncOrDie(B.device, B.stream, "check put/get");
          ++cases;
          char name[160];
          std::snprintf(name, sizeof(name), "%s size %llu srcOffset %llu dstOffset %llu grid %ux%u",
                        get ? "get" : "put", (unsigned long long)size, (unsigned long long)srcOff,
                        (unsigned long long)dstOff, cfg[0], cfg[1]);
          if (!takeErrors(B, name)) return;
        }
      }
    }
  }
  std::printf("ok   put/get: %d cases\n", cases);
}

template <typename T>
bool readWriteOne(Side& A, Side& B, const ChannelPair& ch, uint64_t count, uint32_t seed) {
  const uint64_t offset = 3 * sizeof(T);  // element 3 of the receive side
  const uint64_t base = (kRegion + offset) / sizeof(T);
  clearReceive(B);
  syncOrDie(B.device, B.stream, "clear B");
  cuda(cudaSetDevice(A.device), "cudaSetDevice");
  writeElements<T><<<4, 128, 0, A.stream>>>(ch.a, base, count, seed);
  syncOrDie(A.device, A.stream, "write<T>");
  cuda(cudaSetDevice(B.device), "cudaSetDevice");
  checkRegion<<<256, 256, 0, B.stream>>>(B.buf + kRegion, kRegion, offset, count * sizeof(T), 0, seed, B.err, 21);
  syncOrDie(B.device, B.stream, "check write<T>");
  cuda(cudaSetDevice(A.device), "cudaSetDevice");
  readElements<T><<<4, 128, 0, A.stream>>>(ch.a, base, count, seed, A.err);
  syncOrDie(A.device, A.stream, "read<T>");
  char name[64];
  std::snprintf(name, sizeof(name), "write<T>/read<T>, sizeof(T) = %zu", sizeof(T));
  return takeErrors(B, name) && takeErrors(A, name);
}

void testReadWrite(Side& A, Side& B) {
  const ChannelPair ch = makePair(A, B, B.buf, A.buf);
  if (readWriteOne<uint8_t>(A, B, ch, 4099, 3) && readWriteOne<uint16_t>(A, B, ch, 4099, 4) &&
      readWriteOne<uint32_t>(A, B, ch, 4099, 5) && readWriteOne<uint64_t>(A, B, ch, 4099, 6) &&
      readWriteOne<uint4>(A, B, ch, 4099, 7))
    std::printf("ok   read<T>/write<T>\n");
}

void testOrdering(Side& A, Side& B) {
  const ChannelPair ch = makePair(A, B, B.buf, A.buf);
  const uint64_t bytes = (1 << 20) + 5;
  const int rounds = 20;
  cuda(cudaSetDevice(B.device), "cudaSetDevice");
  orderReceiver<<<1, 1024, 0, B.stream>>>(ch.b, bytes, rounds, B.err);
  cuda(cudaGetLastError(), "launch orderReceiver");
  cuda(cudaSetDevice(A.device), "cudaSetDevice");
  orderSender<<<1, 1024, 0, A.stream>>>(ch.a, bytes, rounds, A.err);
  cuda(cudaGetLastError(), "launch orderSender");
  syncOrDie(A.device, A.stream, "signal/wait ordering, sender");
  syncOrDie(B.device, B.stream, "signal/wait ordering, receiver");
  if (takeErrors(A, "signal/wait ordering (sender)") && takeErrors(B, "signal/wait ordering (receiver)"))
    std::printf("ok   signal/wait ordering: %d rounds of %llu bytes\n", rounds, (unsigned long long)bytes);
}

void testRelaxedPingPong(Side& A, Side& B) {
  const ChannelPair ch = makePair(A, B, B.buf, A.buf);
  const int iterations = 1000;
  cuda(cudaSetDevice(B.device), "cudaSetDevice");
  relaxedPingPong<<<1, 1, 0, B.stream>>>(ch.b, iterations, false, B.err);
  cuda(cudaSetDevice(A.device), "cudaSetDevice");
  relaxedPingPong<<<1, 1, 0, A.stream>>>(ch.a, iterations, true, A.err);
  syncOrDie(A.device, A.stream, "relaxed ping-pong A");
  syncOrDie(B.device, B.stream, "relaxed ping-pong B");
  if (takeErrors(A, "relaxed ping-pong (A)") && takeErrors(B, "relaxed ping-pong (B)"))
    std::printf("ok   relaxedSignal/relaxedWait ping-pong x%d\n", iterations);
}

void testPoll(Side& A, Side& B) {
  const ChannelPair ch = makePair(A, B, B.buf, A.buf);
  const uint64_t value = 0x0123456789abcdefull;
  int* count = nullptr;
  cuda(cudaSetDevice(B.device), "cudaSetDevice");
  cuda(cudaMalloc(&count, sizeof(int)), "cudaMalloc count");
  int got = -1;
  auto pollOnB = [&](int tries, uint64_t want) {
    cuda(cudaSetDevice(B.device), "cudaSetDevice");
    pollCount<<<1, 1, 0, B.stream>>>(ch.b, tries, want, count, B.err);
    syncOrDie(B.device, B.stream, "poll");
    cuda(cudaMemcpy(&got, count, sizeof(int), cudaMemcpyDeviceToHost), "copy count");
    return got;
  };
  bool ok = true;
  if (pollOnB(10, 0) != 0) ok = false, fail("poll: %d successes before any signal, want 0", got);
  cuda(cudaSetDevice(A.device), "cudaSetDevice");
  writeAndSignal<<<1, 1, 0, A.stream>>>(ch.a, value, 3);
  syncOrDie(A.device, A.stream, "signal x3");
  if (pollOnB(10, value) != 3) ok = false, fail("poll: %d successes after 3 signals, want 3", got);
  if (pollOnB(10, value) != 0) ok = false, fail("poll: %d successes after consuming all signals, want 0", got);
  ok = takeErrors(B, "poll") && ok;
  cuda(cudaFree(count), "cudaFree");
  if (ok) std::printf("ok   poll\n");
}

template <typename Packet>
bool packetsOne(Side& A, Side& B, uint64_t bytes, bool viaGet, const char* packetName) {
  // putPackets: A's dst is B's packet scratch. getPackets: B's dst is A's packet scratch.
  const ChannelPair ch = makePair(A, B, B.packet, A.packet);
  const int rounds = 10;
  for (const Side* s : {&A, &B}) {
    cuda(cudaSetDevice(s->device), "cudaSetDevice");
    cuda(cudaMemsetAsync(s->packet, 0, kPacketBytes, s->stream), "clear packets");
  }
  clearReceive(B);
  syncOrDie(A.device, A.stream, "clear A");
  syncOrDie(B.device, B.stream, "clear B");
  cuda(cudaSetDevice(B.device), "cudaSetDevice");
  packetReceiver<Packet><<<1, 512, 0, B.stream>>>(ch.b, bytes, rounds, viaGet, B.err);
  cuda(cudaGetLastError(), "launch packetReceiver");
  cuda(cudaSetDevice(A.device), "cudaSetDevice");
  packetSender<Packet><<<1, 512, 0, A.stream>>>(ch.a, bytes, rounds, viaGet, A.err);
  cuda(cudaGetLastError(), "launch packetSender");
  syncOrDie(A.device, A.stream, "packets, sender");
  syncOrDie(B.device, B.stream, "packets, receiver");
  char name[96];
  std::snprintf(name, sizeof(name), "%s %s, %llu bytes", packetName, viaGet ? "getPackets" : "putPackets+unpackPackets",
                (unsigned long long)bytes);
  return takeErrors(A, name) && takeErrors(B, name);
}

void testPackets(Side& A, Side& B) {
  const uint64_t sizes[] = {4, 8, 4093, (64 << 10) + 3};
  int cases = 0;
  for (int viaGet = 0; viaGet < 2; ++viaGet) {
    for (uint64_t bytes : sizes) {
      if (!packetsOne<mscclppLL16Packet>(A, B, bytes, viaGet, "LL16")) return;
      if (!packetsOne<mscclppLL8Packet>(A, B, bytes, viaGet, "LL8")) return;
      cases += 2;
    }
  }
  std::printf("ok   packets: %d cases of 10 rounds\n", cases);
}

// A trigger ring as the proxy owns it: host-pinned slots mapped into GPU A, and the tail replica
// and head in GPU A's memory.
struct HostFifo {
  mscclppProxyTrigger* ringHost;
  uint64_t* counters;     // device: [0] tail replica, [1] head
  uint64_t* tailStaging;  // pinned host word the tail is copied from
  cudaStream_t publishStream;
  mscclppFifoDeviceHandle handle;
};

HostFifo makeFifo(int device, uint32_t slots) {
  HostFifo f;
  cuda(cudaSetDevice(device), "cudaSetDevice");
  cuda(cudaHostAlloc(&f.ringHost, slots * sizeof(mscclppProxyTrigger), cudaHostAllocMapped | cudaHostAllocPortable),
       "cudaHostAlloc ring");
  for (uint32_t i = 0; i < slots; ++i) f.ringHost[i].fst = f.ringHost[i].snd = 0;
  mscclppProxyTrigger* ringDevice = nullptr;
  cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&ringDevice), f.ringHost, 0), "cudaHostGetDevicePointer");
  cuda(cudaMalloc(&f.counters, 2 * sizeof(uint64_t)), "cudaMalloc counters");
  cuda(cudaMemset(f.counters, 0, 2 * sizeof(uint64_t)), "cudaMemset counters");
  cuda(cudaHostAlloc(&f.tailStaging, sizeof(uint64_t), cudaHostAllocDefault), "cudaHostAlloc tail");
  cuda(cudaStreamCreateWithFlags(&f.publishStream, cudaStreamNonBlocking), "cudaStreamCreate");
  f.handle.triggers = ringDevice;
  f.handle.tailReplica = f.counters + 0;
  f.handle.head = f.counters + 1;
  f.handle.size = slots;
  f.handle.reserved = 0;
  return f;
}

void freeFifo(HostFifo& f) {
  cuda(cudaStreamDestroy(f.publishStream), "cudaStreamDestroy");
  cuda(cudaFreeHost(f.tailStaging), "cudaFreeHost");
  cuda(cudaFree(f.counters), "cudaFree");
  cuda(cudaFreeHost(f.ringHost), "cudaFreeHost");
}

// Copies a value from the host into GPU memory while kernels run (non-blocking stream).
void hostToDevice(HostFifo& f, uint64_t* deviceWord, uint64_t value) {
  *f.tailStaging = value;
  cuda(cudaMemcpyAsync(deviceWord, f.tailStaging, sizeof(uint64_t), cudaMemcpyHostToDevice, f.publishStream),
       "copy to device");
  cuda(cudaStreamSynchronize(f.publishStream), "copy to device sync");
}

// The proxy's loop, on the calling thread: consumes `total` triggers; for each, handle(index, fst,
// snd) checks it (returns false and sets *problem on a mismatch) and may act on it before the slot
// is released (snd, then fst), the tail advances and, every 4, is published. Gives up after
// kHostTimeoutS without a trigger. Returns whether all went well.
template <typename Handle>
bool consume(HostFifo& f, int device, uint64_t total, Handle handle, std::string* problem) {
  cuda(cudaSetDevice(device), "cudaSetDevice (consumer)");
  uint64_t tail = 0;
  bool ok = true;
  auto lastProgress = std::chrono::steady_clock::now();
  while (tail < total) {
    uint64_t* slot = reinterpret_cast<uint64_t*>(&f.ringHost[tail % f.handle.size]);
    const uint64_t fst = __atomic_load_n(&slot[0], __ATOMIC_ACQUIRE);
    if (fst == 0) {
      if (std::chrono::steady_clock::now() - lastProgress > std::chrono::seconds(kHostTimeoutS)) {
        *problem = "no trigger at tail " + std::to_string(tail) + " of " + std::to_string(total) + " within the deadline";
        return false;
      }
      continue;
    }
    // The two 64-bit halves of the 128-bit store may land separately; every trigger of these tests
    // has a non-zero type, so its snd is non-zero.
    uint64_t snd = 0;
    while ((snd = __atomic_load_n(&slot[1], __ATOMIC_ACQUIRE)) == 0) {
    }
    if (!handle(tail, fst, snd)) ok = false;
    __atomic_store_n(&slot[1], 0, __ATOMIC_RELEASE);
    __atomic_store_n(&slot[0], 0, __ATOMIC_RELEASE);
    ++tail;
    lastProgress = std::chrono::steady_clock::now();
    if (tail % 4 == 0) hostToDevice(f, f.handle.tailReplica, tail);
  }
  hostToDevice(f, f.handle.tailReplica, tail);
  return ok;
}

struct Decoded {
  uint64_t type, dst, src, size, conn, reserved;
};

Decoded decode(uint64_t fst, uint64_t snd) {
  Decoded d;
  d.size = fst >> MSCCLPP_TRIGGER_SHIFT_SIZE & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_SIZE);
  d.src = fst >> MSCCLPP_TRIGGER_SHIFT_SRC_OFFSET & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_OFFSET);
  d.dst = snd >> MSCCLPP_TRIGGER_SHIFT_DST_OFFSET & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_OFFSET);
  d.conn = snd >> MSCCLPP_TRIGGER_SHIFT_CONNID & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_CONNID);
  d.type = snd >> MSCCLPP_TRIGGER_SHIFT_TYPE & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_TYPE);
  d.reserved = snd >> (MSCCLPP_TRIGGER_SHIFT_TYPE + MSCCLPP_TRIGGER_BITS_TYPE);
  return d;
}

// Checks the final state of a ring: head and tail replica at `total`, every slot empty.
bool checkFifoDrained(HostFifo& f, uint64_t total, const char* test) {
  uint64_t counters[2];
  cuda(cudaMemcpy(counters, f.counters, sizeof(counters), cudaMemcpyDeviceToHost), "copy counters");
  ++checks;
  if (counters[1] != total || counters[0] != total) {
    fail("%s: head %llu, tail replica %llu, want %llu", test, (unsigned long long)counters[1],
         (unsigned long long)counters[0], (unsigned long long)total);
    return false;
  }
  for (uint32_t i = 0; i < f.handle.size; ++i)
    if (f.ringHost[i].fst != 0 || f.ringHost[i].snd != 0) {
      fail("%s: slot %u not empty at the end", test, i);
      return false;
    }
  return true;
}

void testFifo(Side& A) {
  HostFifo f = makeFifo(A.device, kFifoSlots);
  const uint64_t threads = kFifoBlocks * kFifoThreadsPerBlock;
  const uint64_t total = threads * kFifoPerThread;
  std::vector<int> seen(total, 0);
  std::string problem;
  auto handle = [&](uint64_t tail, uint64_t fst, uint64_t snd) {
    const Decoded d = decode(fst, snd);
    const uint64_t id = d.size - 1, gid = id / kFifoPerThread, it = id % kFifoPerThread;
    if (d.size == 0 || id >= total) {
      if (problem.empty()) problem = "trigger size " + std::to_string(d.size) + " out of range at tail " + std::to_string(tail);
      return false;
    }
    if (seen[id]++ != 0 || d.dst != gid || d.src != it || d.conn != fifoConn(gid) || d.type != fifoType(gid) ||
        d.reserved != 0) {
      if (problem.empty()) problem = "trigger " + std::to_string(id) + " seen twice or with wrong fields";
      return false;
    }
    return true;
  };
  bool ok = true;
  std::thread consumer([&] { ok = consume(f, A.device, total, handle, &problem); });
  cuda(cudaSetDevice(A.device), "cudaSetDevice");
  fifoPush<<<kFifoBlocks, kFifoThreadsPerBlock, 0, A.stream>>>(f.handle, kFifoPerThread);
  cuda(cudaGetLastError(), "launch fifoPush");
  consumer.join();  // gives up on its own deadline, after which the kernel may stay stuck
  if (!ok && problem.find("deadline") != std::string::npos) {
    std::printf("FAIL channels_device_test: fifo: %s\n", problem.c_str());
    _exit(1);
  }
  syncOrDie(A.device, A.stream, "fifo push");
  ++checks;
  if (!ok) fail("fifo: %s", problem.c_str());
  for (uint64_t i = 0; ok && i < total; ++i)
    if (seen[i] != 1) {
      fail("fifo: trigger %llu seen %d times", (unsigned long long)i, seen[i]);
      ok = false;
    }
  ok = checkFifoDrained(f, total, "fifo") && ok;
  freeFifo(f);
  if (ok)
    std::printf("ok   fifo: %llu triggers from %llu threads through %u slots\n", (unsigned long long)total,
                (unsigned long long)threads, kFifoSlots);
}

// Port channel: one thread calls every method; the host consumer checks each trigger and, for a
// signal, writes the next count into the channel's own inbound token (standing in for the peer's
// proxy), so the kernel's wait()s return. Data is not moved (no copy engine here).
constexpr uint32_t kChannelId = 517;

__global__ void portChannelSequence(mscclppPortChannelDeviceHandle ch, int waits, DeviceErrors* err) {
  ch.put(8, 16, 100);
  ch.put(32, 0);  // moves nothing: no trigger
  ch.signal();
  ch.putWithSignal(1, 2, 3);
  ch.putWithSignal(5, 0);  // moves nothing: a signal alone
  ch.putWithSignalAndFlush(7, 9, 11);
  ch.putWithSignalAndFlush(13, 17);
  ch.flush(kMaxSpins);
  for (int i = 0; i < waits; ++i) ch.wait(kMaxSpins);
  if (ch.poll()) record(err, 70, 0, 0, 0);
}

void testPortChannel(Side& A) {
  HostFifo f = makeFifo(A.device, 8);
  uint64_t* tokens = allocTokens(A.device);  // [0] inbound, [1] expected
  tokenAllocations.push_back(tokens);
  mscclppPortChannelDeviceHandle ch;
  ch.channelId = kChannelId;
  ch.reserved = 0;
  ch.semaphore.inboundToken = tokens + 0;
  ch.semaphore.expectedInboundToken = tokens + 1;
  ch.fifo = f.handle;
  const uint64_t D = MSCCLPP_TRIGGER_DATA, F = MSCCLPP_TRIGGER_FLAG, S = MSCCLPP_TRIGGER_SYNC;
  const Decoded want[] = {
      {D, 8, 16, 100, kChannelId, 0},       {F, 0, 0, 1, kChannelId, 0},           {D | F, 1, 2, 3, kChannelId, 0},
      {F, 0, 0, 1, kChannelId, 0},          {D | F | S, 7, 9, 11, kChannelId, 0},  {D | F | S, 13, 13, 17, kChannelId, 0},
      {S, 0, 0, 1, kChannelId, 0},
  };
  const uint64_t total = sizeof(want) / sizeof(want[0]);
  int signals = 0;
  for (const Decoded& w : want) signals += (w.type & F) != 0;
  std::string problem;
  uint64_t signalled = 0;
  auto handle = [&](uint64_t tail, uint64_t fst, uint64_t snd) {
    const Decoded d = decode(fst, snd), w = want[tail];
    if (d.type != w.type || d.dst != w.dst || d.src != w.src || d.size != w.size || d.conn != w.conn ||
        d.reserved != 0) {
      if (problem.empty()) {
        char b[200];
        std::snprintf(b, sizeof(b), "trigger %llu: type %llu dst %llu src %llu size %llu conn %llu reserved %#llx",
                      (unsigned long long)tail, (unsigned long long)d.type, (unsigned long long)d.dst,
                      (unsigned long long)d.src, (unsigned long long)d.size, (unsigned long long)d.conn,
                      (unsigned long long)d.reserved);
        problem = b;
      }
      return false;
    }
    if (d.type & F) hostToDevice(f, ch.semaphore.inboundToken, ++signalled);
    return true;
  };
  bool ok = true;
  std::thread consumer([&] { ok = consume(f, A.device, total, handle, &problem); });
  cuda(cudaSetDevice(A.device), "cudaSetDevice");
  portChannelSequence<<<1, 1, 0, A.stream>>>(ch, signals, A.err);
  cuda(cudaGetLastError(), "launch portChannelSequence");
  consumer.join();
  if (!ok && problem.find("deadline") != std::string::npos) {
    std::printf("FAIL channels_device_test: port channel: %s\n", problem.c_str());
    _exit(1);
  }
  syncOrDie(A.device, A.stream, "port channel");
  ++checks;
  if (!ok) fail("port channel: %s", problem.c_str());
  uint64_t expected = 0;
  cuda(cudaMemcpy(&expected, tokens + 1, sizeof(expected), cudaMemcpyDeviceToHost), "copy expected");
  if (expected != static_cast<uint64_t>(signals)) {
    fail("port channel: expectedInboundToken %llu, want %d", (unsigned long long)expected, signals);
    ok = false;
  }
  ok = checkFifoDrained(f, total, "port channel") && takeErrors(A, "port channel") && ok;
  freeFifo(f);
  if (ok) std::printf("ok   port channel: %llu triggers, %d signals waited for\n", (unsigned long long)total, signals);
}

Side makeSide(int device) {
  Side s;
  s.device = device;
  cuda(cudaSetDevice(device), "cudaSetDevice");
  cuda(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda(cudaMalloc(&s.buf, kBufBytes), "cudaMalloc buf");
  cuda(cudaMalloc(&s.packet, kPacketBytes), "cudaMalloc packet");
  cuda(cudaMalloc(&s.err, sizeof(DeviceErrors)), "cudaMalloc err");
  cuda(cudaMemset(s.buf, kSentinel, kBufBytes), "cudaMemset buf");
  cuda(cudaMemset(s.packet, 0, kPacketBytes), "cudaMemset packet");
  cuda(cudaMemset(s.err, 0, sizeof(DeviceErrors)), "cudaMemset err");
  return s;
}

void enablePeer(int from, int to) {
  int can = 0;
  cuda(cudaDeviceCanAccessPeer(&can, from, to), "cudaDeviceCanAccessPeer");
  if (!can) {
    std::printf("FAIL channels_device_test: GPU %d cannot access GPU %d (peer access unsupported)\n", from, to);
    _exit(1);
  }
  cuda(cudaSetDevice(from), "cudaSetDevice");
  cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    return;
  }
  cuda(e, "cudaDeviceEnablePeerAccess");
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int ndev = 0;
  cuda(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
  if (ndev < 2) {
    std::printf("SKIP channels_device_test: needs 2 GPUs, found %d\n", ndev);
    return kExitSkipped;
  }
  enablePeer(kGpuA, kGpuB);
  enablePeer(kGpuB, kGpuA);
  Side A = makeSide(kGpuA);
  Side B = makeSide(kGpuB);

  testPutGet(A, B);
  testReadWrite(A, B);
  testOrdering(A, B);
  testRelaxedPingPong(A, B);
  testPoll(A, B);
  testPackets(A, B);
  testFifo(A);
  testPortChannel(A);

  for (void* p : tokenAllocations) cudaFree(p);
  for (Side* s : {&A, &B}) {
    cudaSetDevice(s->device);
    cudaFree(s->buf);
    cudaFree(s->packet);
    cudaFree(s->err);
    cudaStreamDestroy(s->stream);
  }
  if (failures != 0) {
    std::printf("FAIL channels_device_test: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  std::printf("PASS channels_device_test: %d checks (put/get, read/write, ordering, relaxed ping-pong, poll, "
              "LL16/LL8 packets, FIFO, port channel)\n",
              checks);
  return 0;
}

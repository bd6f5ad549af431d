// bench_legacy_put: bandwidth and latency of the legacy MSCCL++ 0.1 device connection between
// rank 0 and rank 1 (further ranks, if any, only take part in the collective calls).
// A benchmark, not a test: scripts/gpu-test.sh does not run it.
//
// Each rank has one buffer of 2 * max bytes: [0, max) is its send region, [max, 2 * max) the
// region the peer's puts land in. Measured, for each size from -b to -e (factor -f):
//
//   one-way        rank 0 runs N x { putWithSignal(whole message); flush() }, rank 1 waits for the
//                  N signals; time = rank 0's kernel. Every put is complete before the next is
//                  issued, so small sizes show the per-request cost of the proxy.
//   one-way x8     the same, but flush() only after every kInFlight puts: up to kInFlight requests
//                  queue at the proxy, which hides its per-request overhead behind the copies.
//   bidir          both ranks run the one-way loop towards each other at once (and then wait for
//                  the peer's N signals); time = the slower rank's kernel; reported per direction.
//
// and at the end the round-trip latency of an 8-byte putWithSignal + wait ping-pong, and of a
// signal-only ping-pong.
//
// Method: before every timed kernel, an untimed warm-up kernel runs the same loop, then a
// handshake kernel (signal + wait on both ranks) lines the two GPUs up; cudaEvents recorded on the
// stream right around the timed kernel (one launch of N iterations) give its time, so launch
// overhead and rank skew stay out of the numbers. GB/s means 1e9 bytes per second of payload.
// The receive regions are poisoned before each measurement and every byte is checked afterwards
// (column "check"), so a number cannot come from a broken transfer; the program exits 1 if any
// check fails. The timed loops use the header's own flush()/wait() (what applications call); a stuck
// proxy is caught by the host watchdog.
//
//   mpirun -np 2 ./bench_legacy_put [-b 1K] [-e 1G] [-f 2] [-n ITERS]
#include <cuda_runtime.h>
#include <mpi.h>
#include <mscclpp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../common/legacy_test_util.h"

using namespace legacytest;

namespace {

constexpr const char* kTestName = "bench_legacy_put";
constexpr int kTag = 0;
constexpr int kSender = 0;    // rank that sends in the one-way measurement
constexpr int kReceiver = 1;  // rank that receives in it
constexpr int kActiveRanks = 2;

// Defaults of -b, -e, -f.
constexpr uint64_t kDefaultMinBytes = 1ull << 10;
constexpr uint64_t kDefaultMaxBytes = 1ull << 30;
constexpr uint64_t kDefaultFactor = 2;
// Sizes and offsets travel in 32-bit trigger fields; the receive region starts at `max`.
constexpr uint64_t kLargestMaxBytes = (1ull << MSCCLPP_BITS_SIZE) / 2;

// Iterations per timed kernel when -n is not given: enough to move kTargetBytesPerRun, within
// [kMinIters, kMaxIters]. Warm-up: a tenth of that, at least kMinWarmupIters.
constexpr uint64_t kTargetBytesPerRun = 4ull << 30;
constexpr uint64_t kMinIters = 20;
constexpr uint64_t kMaxIters = 1000;
constexpr uint64_t kWarmupDivisor = 10;
constexpr uint64_t kMinWarmupIters = 2;

// Puts queued before each flush in the "one-way x8" column.
constexpr uint64_t kInFlight = 8;

// Latency measurements.
constexpr uint64_t kLatencyBytes = 8;
constexpr uint64_t kLatencyIters = 10000;
constexpr uint64_t kLatencyWarmupIters = 100;

constexpr uint32_t kSeedMode = 0x42;
constexpr double kBytesPerGB = 1e9;
constexpr double kUsPerMs = 1e3;
constexpr double kSecPerMs = 1e-3;

// ---------------------------------------------------------------------------------------------
// Kernels (one thread; the connection struct is in device memory)
// ---------------------------------------------------------------------------------------------

// Both ranks: tell the peer we are here and wait until it is too.
__global__ void handshakeKernel(mscclppDevConn_t* conn, DeviceStatus* st) {
  conn->signal();
  boundedWait(*conn, 1, st, kStepHandshake, 0);
}

// iters x putWithSignal of [0, size) into the peer's receive region, flush() after every
// `flushEvery` puts and after the last.
__global__ void sendLoopKernel(mscclppDevConn_t* conn, uint64_t recvOffset, uint64_t size, uint64_t iters,
                               uint64_t flushEvery) {
  for (uint64_t i = 0; i < iters; i++) {
    conn->putWithSignal(recvOffset, 0, size);
    if ((i + 1) % flushEvery == 0 || i + 1 == iters) conn->flush();
  }
}

// Waits until the peer has signalled `iters` more times (bounded: the wait is not on a timed path
// that matters, the sender's kernel is what is timed).
__global__ void receiveKernel(mscclppDevConn_t* conn, uint64_t iters, DeviceStatus* st) {
  boundedWait(*conn, iters, st, kStepWaitData, 0);
}

// Bidirectional: send like sendLoopKernel (flush after every put), then wait for the peer's puts,
// which have been arriving meanwhile.
__global__ void bidirKernel(mscclppDevConn_t* conn, uint64_t recvOffset, uint64_t size, uint64_t iters,
                            DeviceStatus* st) {
  for (uint64_t i = 0; i < iters; i++) {
    conn->putWithSignal(recvOffset, 0, size);
    conn->flush();
  }
  boundedWait(*conn, iters, st, kStepWaitData, 0);
}

// Ping-pong: the initiator sends then waits, the other waits then sends, iters times. A message
// is a putWithSignal of `size` bytes, or a bare signal() when size is 0. The final flush leaves no
// request behind when the kernel ends.
__global__ void pingPongKernel(mscclppDevConn_t* conn, bool initiator, uint64_t recvOffset, uint64_t size,
                               uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    if (!initiator) conn->wait();
    if (size > 0)
      conn->putWithSignal(recvOffset, 0, size);
    else
      conn->signal();
    if (initiator) conn->wait();
  }
  conn->flush();
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

struct Options {
  uint64_t minBytes = kDefaultMinBytes;
  uint64_t maxBytes = kDefaultMaxBytes;
  uint64_t factor = kDefaultFactor;
  uint64_t iters = 0;  // 0: automatic
};

// "1024", "64K", "1M", "1G" (binary multiples). Returns false on anything else.
bool parseSize(const char* s, uint64_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s) return false;
  uint64_t mult = 1;
  switch (*end) {
    case '\0': break;
    case 'k': case 'K': mult = 1ull << 10; end++; break;
    case 'm': case 'M': mult = 1ull << 20; end++; break;
    case 'g': case 'G': mult = 1ull << 30; end++; break;
    default: return false;
  }
  if (*end != '\0') return false;
  *out = v * mult;
  return true;
}

// Returns an empty string when the options are fine, else what is wrong.
std::string parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; i++) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") return "help";
    if (i + 1 >= argc) return "missing value after " + flag;
    uint64_t v = 0;
    if (!parseSize(argv[++i], &v)) return strf("bad value '%s' for %s", argv[i], flag.c_str());
    if (flag == "-b") o->minBytes = v;
    else if (flag == "-e") o->maxBytes = v;
    else if (flag == "-f") o->factor = v;
    else if (flag == "-n") o->iters = v;
    else return "unknown flag " + flag;
  }
  if (o->minBytes == 0 || o->minBytes > o->maxBytes) return "need 0 < -b <= -e";
  if (o->maxBytes > kLargestMaxBytes) return strf("-e may be at most %llu", static_cast<unsigned long long>(kLargestMaxBytes));
  if (o->factor < 2) return "-f must be at least 2";
  if (o->maxBytes < kLatencyBytes) return strf("-e must be at least %llu (latency message)", static_cast<unsigned long long>(kLatencyBytes));
  return "";
}

class Bench {
 public:
  Bench(const Options& opt, mscclppDevConn_t* conn, uint8_t* buffer, cudaStream_t stream, DeviceStatus* status)
      : opt_(opt), conn_(conn), buf_(buffer), stream_(stream), status_(status), rank_(g_proc.rank),
        active_(g_proc.rank < kActiveRanks), peer_(g_proc.rank == kSender ? kReceiver : kSender) {
    CHECK_CUDA(cudaEventCreate(&start_));
    CHECK_CUDA(cudaEventCreate(&stop_));
  }
  ~Bench() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }

  void bandwidthTable() {
    if (rank_ == 0) {
      std::printf("# %s: rank %d <-> rank %d, GB/s = 1e9 payload bytes/s, one kernel of N iterations per number\n",
                  kTestName, kSender, kReceiver);
      const std::string pipelined = strf("one-way x%llu GB/s", static_cast<unsigned long long>(kInFlight));
      std::printf("# %12s %7s %14s %16s %16s  %s\n", "size", "N", "one-way GB/s", pipelined.c_str(), "bidir GB/s/dir",
                  "check");
    }
    for (uint64_t size = opt_.minBytes; size <= opt_.maxBytes; size *= opt_.factor) {
      const uint64_t iters = itersFor(size);
      fillSend(size);
      bool ok = true;
      const double oneWayMs = measureOneWay(size, iters, 1, &ok);
      const double pipelinedMs = measureOneWay(size, iters, kInFlight, &ok);
      const double bidirMs = measureBidir(size, iters, &ok);
      if (rank_ == 0) {
        std::printf("  %12s %7llu %14.2f %16.2f %16.2f  %s\n", sizeText(size).c_str(),
                    static_cast<unsigned long long>(iters), gbps(size, iters, oneWayMs), gbps(size, iters, pipelinedMs),
                    gbps(size, iters, bidirMs), ok ? "ok" : "WRONG DATA");
        std::fflush(stdout);
      }
      if (size > opt_.maxBytes / opt_.factor) break;  // the next step would overflow or pass -e
    }
  }

  void latency() {
    fillSend(kLatencyBytes);
    bool ok = true;
    const double dataUs = measurePingPong(kLatencyBytes, &ok);
    const double signalUs = measurePingPong(0, &ok);
    if (rank_ == 0) {
      std::printf("# round trip, %llu B putWithSignal + wait each way: %8.2f us  (%s)\n",
                  static_cast<unsigned long long>(kLatencyBytes), dataUs, ok ? "data ok" : "WRONG DATA");
      std::printf("# round trip, signal + wait each way:             %8.2f us  (%llu round trips each)\n", signalUs,
                  static_cast<unsigned long long>(kLatencyIters));
      std::fflush(stdout);
    }
  }

  // Prints the final line on rank 0; returns the exit code.
  int summary() const {
    if (rank_ == 0) {
      if (wrongChecks_ == 0)
        std::printf("PASS %s: all transfers verified, %llu bytes checked\n", kTestName, bytesChecked_);
      else
        std::printf("FAIL %s: %d measurement(s) delivered wrong data; their numbers are meaningless\n", kTestName,
                    wrongChecks_);
      std::fflush(stdout);
    }
    return wrongChecks_ == 0 ? 0 : 1;
  }

 private:
  uint64_t recvOffset() const { return opt_.maxBytes; }
  uint8_t* recvRegion() const { return buf_ + recvOffset(); }

  uint64_t itersFor(uint64_t size) const {
    if (opt_.iters != 0) return opt_.iters;
    return std::min(kMaxIters, std::max(kMinIters, kTargetBytesPerRun / size));
  }
  static uint64_t warmupFor(uint64_t iters) { return std::max(kMinWarmupIters, iters / kWarmupDivisor); }
  static double gbps(uint64_t size, uint64_t iters, double ms) {
    return ms > 0 ? static_cast<double>(size) * iters / (ms * kSecPerMs) / kBytesPerGB : 0;
  }
  uint32_t seed(int sender, uint64_t size) const { return makeSeed(kSeedMode, sender, size, 0); }

  void fillSend(uint64_t size) {
    if (active_) launchFillPattern(buf_, size, seed(rank_, size), stream_);
  }

  // Poisons this rank's receive region (if it will receive), resets the status and lines all
  // ranks up.
  void beginMeasurement(uint64_t size, bool receives) {
    if (active_ && receives) poison(recvRegion(), size, stream_);
    resetStatus(status_, 1, stream_);
    MPI_Barrier(MPI_COMM_WORLD);
  }

  // Warm-up and handshake are already queued; queues `timed` between the two events, waits for it
  // and returns its time in ms (0 on idle ranks).
  template <typename Launch>
  double timedKernel(const std::string& what, Launch timed) {
    if (!active_) return 0;
    handshakeKernel<<<1, 1, 0, stream_>>>(conn_, status_);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaEventRecord(start_, stream_));
    timed();
    CHECK_LAUNCH();
    CHECK_CUDA(cudaEventRecord(stop_, stream_));
    syncWithWatchdog(stream_, what);
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

  // After a measurement: timeouts abort; checks the `size` bytes this rank received (if it did)
  // and clears *ok on all ranks if any rank saw wrong data.
  void endMeasurement(const std::string& what, uint64_t size, bool receives, bool* ok) {
    abortOnTimeouts(readStatus(status_, 1, stream_), what);
    unsigned long long wrong = 0, checked = 0;
    if (active_ && receives) {
      launchCheckPattern(recvRegion(), size, seed(peer_, size), status_, 0, stream_);
      syncWithWatchdog(stream_, what + " (check)");
      const DeviceStatus st = readStatus(status_, 1, stream_)[0];
      wrong = st.mismatches;
      checked = size;
      if (wrong != 0)
        std::printf("rank %d: %s: %llu wrong bytes from rank %d, first at %s, %s\n", rank_, what.c_str(), wrong, peer_,
                    firstBadText(st).c_str(), firstBadBytes(st, recvRegion(), seed(peer_, size)).c_str());
    }
    bytesChecked_ += sumOverRanks(checked);
    if (sumOverRanks(wrong) != 0) {
      *ok = false;
      wrongChecks_++;
    }
  }

  // Rank kSender -> kReceiver; flush after every `flushEvery` puts. Returns the sender's time in ms.
  double measureOneWay(uint64_t size, uint64_t iters, uint64_t flushEvery, bool* ok) {
    const std::string what = strf("one-way %s, flush every %llu", sizeText(size).c_str(), static_cast<unsigned long long>(flushEvery));
    const bool receives = rank_ == kReceiver;
    beginMeasurement(size, receives);
    auto launch = [&](uint64_t n) {
      if (rank_ == kSender)
        sendLoopKernel<<<1, 1, 0, stream_>>>(conn_, recvOffset(), size, n, flushEvery);
      else
        receiveKernel<<<1, 1, 0, stream_>>>(conn_, n, status_);
    };
    if (active_) {
      launch(warmupFor(iters));
      CHECK_LAUNCH();
    }
    double ms = timedKernel(what, [&] { launch(iters); });
    endMeasurement(what, size, receives, ok);
    double senderMs = rank_ == kSender ? ms : 0;
    MPI_Allreduce(MPI_IN_PLACE, &senderMs, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return senderMs;
  }

  // Both directions at once; returns the slower rank's time in ms.
  double measureBidir(uint64_t size, uint64_t iters, bool* ok) {
    const std::string what = strf("bidirectional %s", sizeText(size).c_str());
    beginMeasurement(size, true);
    if (active_) {
      bidirKernel<<<1, 1, 0, stream_>>>(conn_, recvOffset(), size, warmupFor(iters), status_);
      CHECK_LAUNCH();
    }
    double ms = timedKernel(what, [&] { bidirKernel<<<1, 1, 0, stream_>>>(conn_, recvOffset(), size, iters, status_); });
    endMeasurement(what, size, true, ok);
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return ms;
  }

  // Ping-pong of `size` bytes (0: signal only); returns the mean round trip in us as seen by kSender.
  double measurePingPong(uint64_t size, bool* ok) {
    const std::string what = size > 0 ? strf("ping-pong %llu B", static_cast<unsigned long long>(size)) : "signal ping-pong";
    beginMeasurement(size, size > 0);
    const bool initiator = rank_ == kSender;
    if (active_) {
      pingPongKernel<<<1, 1, 0, stream_>>>(conn_, initiator, recvOffset(), size, kLatencyWarmupIters);
      CHECK_LAUNCH();
    }
    double ms = timedKernel(what, [&] { pingPongKernel<<<1, 1, 0, stream_>>>(conn_, initiator, recvOffset(), size, kLatencyIters); });
    if (size > 0) endMeasurement(what, size, true, ok);
    else abortOnTimeouts(readStatus(status_, 1, stream_), what);
    double senderMs = initiator ? ms : 0;
    MPI_Allreduce(MPI_IN_PLACE, &senderMs, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return senderMs * kUsPerMs / kLatencyIters;
  }

  const Options opt_;
  mscclppDevConn_t* conn_;
  uint8_t* buf_;
  cudaStream_t stream_;
  DeviceStatus* status_;
  int rank_;
  bool active_;
  int peer_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  int wrongChecks_ = 0;
  unsigned long long bytesChecked_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  mscclppComm_t comm = initProcess(&argc, &argv, kTestName);
  const int rank = g_proc.rank;

  Options opt;
  const std::string err = parseOptions(argc, argv, &opt);
  if (!err.empty()) {
    if (rank == 0) {
      if (err != "help") std::printf("%s: %s\n", kTestName, err.c_str());
      std::printf("usage: mpirun -np 2 %s [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS]\n"
                  "  -b/-e: smallest/largest message (K, M, G suffixes), -f: size factor, -n: iterations per\n"
                  "  bandwidth measurement; defaults -b 1K -e 1G -f 2, -n automatic (%llu..%llu)\n",
                  kTestName, static_cast<unsigned long long>(kMinIters), static_cast<unsigned long long>(kMaxIters));
    }
    CHECK_MSCCLPP(mscclppCommDestroy(comm));
    MPI_Finalize();
    return err == "help" ? 0 : 2;
  }

  // Ranks 0 and 1 connect to each other; other ranks only take part in the collective calls.
  const bool active = rank < kActiveRanks;
  const int peer = rank == kSender ? kReceiver : kSender;
  const uint64_t bufferBytes = 2 * opt.maxBytes;
  uint8_t* buffer = nullptr;
  mscclppDevConn_t* conn = nullptr;
  if (active) {
    CHECK_CUDA(cudaMalloc(&buffer, bufferBytes));
    CHECK_CUDA(cudaMemset(buffer, 0, bufferBytes));
    CHECK_MSCCLPP(mscclppConnect(comm, peer, kTag, buffer, bufferBytes, mscclppTransportP2P));
  }
  CHECK_MSCCLPP(mscclppConnectionSetup(comm));
  if (active) conn = deviceConnections(comm, {peer}, kTag, {buffer});

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceStatus* status = nullptr;
  CHECK_CUDA(cudaMalloc(&status, sizeof(DeviceStatus)));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_MSCCLPP(mscclppProxyLaunch(comm));
  if (rank == 0 && g_proc.nranks > kActiveRanks)
    std::printf("# %d ranks: only ranks %d and %d transfer, the others idle\n", g_proc.nranks, kSender, kReceiver);

  int rc = 0;
  {
    Bench bench(opt, conn, buffer, stream, status);
    bench.bandwidthTable();
    bench.latency();
    rc = bench.summary();
  }

  CHECK_MSCCLPP(mscclppProxyStop(comm));
  CHECK_CUDA(cudaFree(status));
  if (conn != nullptr) CHECK_CUDA(cudaFree(conn));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_MSCCLPP(mscclppCommDestroy(comm));
  if (buffer != nullptr) CHECK_CUDA(cudaFree(buffer));
  MPI_Finalize();
  return rc;
}

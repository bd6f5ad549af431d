// collectives: the correctness checks of mscclppAllReduce, mscclppAllGather, mscclppReduceScatter
// and mscclppBroadcast (mscclpp/collectives.h) on real GPUs, one rank per GPU under mpirun, against
// results computed on the host.
//
//   every data type and operator, counts from 1 element to 4 Mi elements (odd ones, ones that no
//   rank count or 16 bytes divides; ReduceScatter and Broadcast from 0), up to 256 MiB for
//   float32 and bfloat16 (ReduceScatter and Broadcast: tens of MiB); in place and out of place;
//   16-byte aligned buffers and buffers one element off; guard elements around every output must
//   stay untouched; Broadcast from several roots; the fp8 types through AllGather and
//   Broadcast, which only move them;
//   1000 dependent in-place calls (each call's output is the next one's input);
//   the four collectives interleaved on one stream;
//   two collective communicators at once, on two streams;
//   a CUDA graph of six collectives captured once and replayed with new inputs;
//   mscclppScale (local): every reducible type, the factor in host and in device memory, in place
//   and not, aligned and not, compared bit for bit; in a CUDA graph whose device factor changes.
//
// Inputs are small integers, exact in every type (float16 and bfloat16 included) and so are
// their sums over up to 8 ranks; prod gets inputs of 1 and 2 (some negated in signed types), at
// most three 2s per element over 8 ranks, so products stay exact too: every result is compared
// exactly, but avg of the floating types, compared within one rounding step of sum / ranks
// (integer avg: the sum divided with truncation toward zero, exactly). Rank 0 prints one line per
// group of checks and "collectives: N passed, M failed"; the exit status is 0 only if all passed.
//
//   mpirun -np N ./collectives [quick | sanitize | hosts] [registered]
//   mpirun -x MSCCLPP_BROADCAST_ALGO=ring -np N ./collectives [quick] broadcast
//   mpirun -x MSCCLPP_COLL_MAX_SPINS=1048576 -np N ./collectives disagree
// Rank r uses GPU r % deviceCount (ranks that share a GPU get MSCCLPP_COLL_MAX_BLOCKS set so that
// two communicators' calls fit at once; see main); "quick" skips 256 MiB; "registered" carves
// every buffer out of one arena per rank registered with mscclppCollRegister (at an offset that
// differs between ranks), so that the large calls run zero-copy. MSCCLPP_ALLREDUCE_ALGO /
// MSCCLPP_ALLGATHER_ALGO force an algorithm for every size (ReduceScatter and Broadcast, which no
// variable forces, are then left out: they run in the runs that force nothing; "auto" forces
// nothing). "disagree" runs only the check of ranks that disagree about registration (see
// disagree() below). "broadcast" runs only the Broadcast sweeps and burst (for a forced
// MSCCLPP_BROADCAST_ALGO: the other collectives would run as in a run that forces nothing).
// "sanitize" is a run small enough for compute-sanitizer, which slows kernels 10-100x
// (scripts/gpu-test.sh, section 4d; a fifth of a full run's calls, none over 32 MiB): every
// collective and Scale, with sum and max, for one type of each element size (float32, float16,
// int8, float64; AllGather and Broadcast: float32, uint8, int64), at counts that reach each
// algorithm the sizes pick (kSanitizeCounts: packets, AllGather LL128 lines on 2 ranks, then
// oneshot on 2 ranks, rsag and put, and on more than 2 ranks packet2 and sag), in and out of
// place, aligned and not; then, unless "registered" is given,
// float32 AllReduce and AllGather again on registered buffers (direct, rsag_direct); the 1000
// small dependent calls, the interleaved calls, two communicators and the graph as in a full run.
// Forcing an algorithm reaches the rest (packet2 on 2 ranks, port, rsag_port).
// "hosts" is the run for ranks that span hosts (each rank given MSCCLPP_HOSTID by gpu-test):
// the sweeps of a "quick" run (every type, operator and count of the four collectives, Scale), the
// 1000 dependent calls and the interleaved calls, none in a CUDA graph (calls across hosts wait
// for their stream), and mscclppCollRegister refused with mscclppInvalidUsage.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <mscclpp/collectives.h>

#include "../common.cuh"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace {

constexpr size_t kGuard = 64;         // elements of guard before and after every output
constexpr unsigned char kPoison = 0x5A;  // the guards' bytes (and the outputs' before a call)
constexpr int kChainCalls = 1000;
constexpr int kInterleaveRounds = 50;
constexpr int kGraphReplays = 5;
constexpr int kConcurrentComms = 2;  // twoComms: the most communicators whose calls overlap

bool g_verbose = false;  // COLLECTIVES_VERBOSE=1: every case is printed before it runs

// Whether T holds no negative value (its inputs are then shifted up).
template <typename T>
constexpr bool isUnsigned() {
  return Type<T>::id == mscclppUint8 || Type<T>::id == mscclppUint32 || Type<T>::id == mscclppUint64 ||
         Type<T>::id == mscclppFloat8e4m3 || Type<T>::id == mscclppFloat8e5m2;
}

const mscclppRedOp_t kOps[] = {mscclppSum, mscclppProd, mscclppMax, mscclppMin, mscclppAvg};

const char* opName(mscclppRedOp_t op) {
  switch (op) {
    case mscclppSum: return "sum";
    case mscclppProd: return "prod";
    case mscclppMax: return "max";
    case mscclppMin: return "min";
    case mscclppAvg: return "avg";
    default: return "?";
  }
}

// Whether T is a floating type (its avg is checked within a rounding step).
template <typename T>
constexpr bool isFloating() {
  return Type<T>::id == mscclppFloat16 || Type<T>::id == mscclppBfloat16 || Type<T>::id == mscclppFloat32 ||
         Type<T>::id == mscclppFloat64;
}

// Rank r's element i: a small integer (unsigned types get no negatives). `salt` varies the data
// between calls of one test. For prod, 1 or 2 (negated in signed types where (i + r) % 5 == 0):
// the residues r * 13 % 17 of 8 ranks are 0 1 5 6 9 10 13 14, at most three in any window of
// 5, so an element's product is at most 8 in magnitude.
template <typename T>
double inputValue(int r, size_t i, int salt = 0, mscclppRedOp_t op = mscclppSum) {
  const long v = static_cast<long>((i * 7 + r * 13 + salt * 5) % 17);
  if (op == mscclppProd) {
    const double x = v < 5 ? 2 : 1;
    return !isUnsigned<T>() && (i + r) % 5 == 0 ? -x : x;
  }
  return isUnsigned<T>() ? v : v - 8;
}

// Combines two ranks' values (avg: sums them; avgOf divides at the end).
double reduce(mscclppRedOp_t op, double a, double b) {
  switch (op) {
    case mscclppProd: return a * b;
    case mscclppMax: return std::fmax(a, b);
    case mscclppMin: return std::fmin(a, b);
    default: return a + b;
  }
}

// avg of an exact sum over g_nranks ranks: integers truncate toward zero; floating types get the
// exact quotient (compared within a rounding step).
template <typename T>
double avgOf(double sum) {
  return isFloating<T>() ? sum / g_nranks : std::trunc(sum / g_nranks);
}

// One rounding step of T at x (relative): the gap between x and its neighbour, bounded by
// |x| * 2^-(mantissa bits).
template <typename T>
double roundingStep(double x) {
  const int bits = Type<T>::id == mscclppFloat16 ? 10 : Type<T>::id == mscclppBfloat16 ? 7
                   : Type<T>::id == mscclppFloat32 ? 23 : 52;
  return std::fabs(x) * std::ldexp(1.0, -bits);
}

// ---- Checks ------------------------------------------------------------------------------------

// One named group of checks: collects failures, prints at most a few details per rank.
// "registered": one registered allocation per rank from which the buffers are taken, last in
// first out (buffers are scoped, so they are freed in reverse order).
struct Arena {
  static constexpr size_t kBytes = size_t(640) << 20;  // the largest case needs 2 x 256 MiB
  static constexpr size_t kAlign = 256;
  char* base = nullptr;
  size_t used = 0;
  mscclppCollRegistration_t reg = nullptr;
  mscclppCollComm_t comm = nullptr;
  Arena(mscclppCollComm_t c) : comm(c) {
    CUDA(cudaMalloc(&base, kBytes));
    // The ranks' buffers sit at different offsets in their registrations.
    used = static_cast<size_t>(g_rank) * 4096;
    MSCCLPP(mscclppCollRegister(comm, base, kBytes, &reg));
  }
  ~Arena() {
    MSCCLPP(mscclppCollDeregister(comm, reg));
    cudaFree(base);
  }
  char* take(size_t bytes) {
    if (used + bytes > kBytes) fatal("arena", "out of memory");
    char* p = base + used;
    used += (bytes + kAlign - 1) / kAlign * kAlign;
    return p;
  }
  void give(char* p) { used = static_cast<size_t>(p - base); }
};
Arena* g_arena = nullptr;

// A device buffer of n elements of T with kGuard poisoned elements on each side, starting
// `offset` elements after a 256-byte boundary (offset 1: not 16-byte aligned).
template <typename T>
struct Buffer {
  char* base = nullptr;
  size_t n = 0, offset = 0;
  Arena* arena = nullptr;
  Buffer(size_t n_, size_t off) : n(n_), offset(off), arena(g_arena) {
    if (arena) {
      base = arena->take(bytesTotal());
    } else {
      CUDA(cudaMalloc(&base, bytesTotal()));
    }
    CUDA(cudaMemset(base, kPoison, bytesTotal()));
    CUDA(cudaDeviceSynchronize());  // the memset is asynchronous
  }
  ~Buffer() {
    if (arena) {
      arena->give(base);
    } else {
      cudaFree(base);
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  size_t bytesTotal() const { return (n + 2 * kGuard + offset) * sizeof(T); }
  T* data() const { return reinterpret_cast<T*>(base) + kGuard + offset; }
  // cudaMemcpy from pageable memory may return before the data lands, and the collectives run
  // on other streams: wait for the device.
  void upload(const std::vector<T>& h, size_t at = 0) {
    CUDA(cudaMemcpy(data() + at, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    CUDA(cudaDeviceSynchronize());
  }
  // Copies everything back; reports guard bytes that changed.
  std::vector<T> download(Group& g, const std::string& what) const {
    std::vector<unsigned char> all(bytesTotal());
    CUDA(cudaMemcpy(all.data(), base, all.size(), cudaMemcpyDeviceToHost));
    const size_t lo = (kGuard + offset) * sizeof(T), hi = lo + n * sizeof(T);
    for (size_t b = 0; b < all.size(); ++b) {
      if ((b < lo || b >= hi) && all[b] != kPoison) {
        g.fail(what + ": guard byte " + std::to_string(static_cast<long>(b) - static_cast<long>(lo)) + " changed");
        break;
      }
    }
    std::vector<T> h(n);
    std::memcpy(h.data(), all.data() + lo, n * sizeof(T));
    return h;
  }
};

// near: want is an exact real (a floating avg) and got may be one rounding step of T away from
// it; otherwise got must be want as T holds it.
template <typename T>
void compare(Group& g, const std::string& what, const std::vector<T>& got, const std::vector<double>& want,
             bool near = false) {
  ++g.checks;
  auto wrong = [&](size_t j) {
    if (near) return std::fabs(Type<T>::to(got[j]) - want[j]) > roundingStep<T>(want[j]);
    return Type<T>::to(got[j]) != Type<T>::to(Type<T>::from(want[j]));
  };
  for (size_t i = 0; i < want.size(); ++i) {
    if (wrong(i)) {
      size_t bad = 0, last = i;
      for (size_t j = i; j < want.size(); ++j)
        if (wrong(j)) ++bad, last = j;
      g.fail(what + ": element " + std::to_string(i) + " is " + std::to_string(Type<T>::to(got[i])) + ", want " +
             std::to_string(want[i]) + " (" + std::to_string(bad) + " wrong, the last at " + std::to_string(last) + ")");
      return;
    }
  }
}

template <typename T>
std::vector<T> inputs(size_t n, int rank, int salt, mscclppRedOp_t op = mscclppSum) {
  std::vector<T> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = Type<T>::from(inputValue<T>(rank, i, salt, op));
  return h;
}

template <typename T>
std::vector<double> allReduceExpected(size_t n, mscclppRedOp_t op, int salt);

// Elements [first, first + n) of the AllReduce of every rank's input: rank r's result of a
// ReduceScatter of n elements per rank is the block at first = r * n.
template <typename T>
std::vector<double> reduceScatterExpected(size_t first, size_t n, mscclppRedOp_t op, int salt) {
  std::vector<double> want(n);
  for (size_t i = 0; i < n; ++i) {
    double acc = inputValue<T>(0, first + i, salt, op);
    for (int r = 1; r < g_nranks; ++r) acc = reduce(op, acc, inputValue<T>(r, first + i, salt, op));
    want[i] = op == mscclppAvg ? avgOf<T>(acc) : acc;
  }
  return want;
}

template <typename T>
std::vector<double> broadcastExpected(size_t n, int root, int salt) {
  std::vector<double> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = inputValue<T>(root, i, salt);
  return want;
}

template <typename T>
std::vector<double> allGatherExpected(size_t n, int salt) {
  std::vector<double> want(n * g_nranks);
  for (int r = 0; r < g_nranks; ++r)
    for (size_t i = 0; i < n; ++i) want[r * n + i] = inputValue<T>(r, i, salt);
  return want;
}

template <typename T>
std::vector<double> allReduceExpected(size_t n, mscclppRedOp_t op, int salt) {
  return reduceScatterExpected<T>(0, n, op, salt);
}

template <typename T>
void checkAllReduce(Group& g, mscclppCollComm_t comm, cudaStream_t s, size_t n, mscclppRedOp_t op, bool inPlace,
                    size_t offset) {
  const std::string what = std::string(Type<T>::name) + " " + opName(op) + " count " + std::to_string(n) +
                           (inPlace ? " in place" : " out of place") + (offset ? " unaligned" : "");
  if (g_verbose) std::printf("[rank %d] allreduce %s\n", g_rank, what.c_str()), std::fflush(stdout);
  Buffer<T> send(n, offset);
  Buffer<T> recvBuf(inPlace ? 0 : n, offset);
  Buffer<T>& recv = inPlace ? send : recvBuf;
  send.upload(inputs<T>(n, g_rank, 0, op));
  mscclppResult_t r = mscclppAllReduce(send.data(), recv.data(), n, Type<T>::id, op, comm, s);
  if (r != mscclppSuccess) {
    ++g.checks;
    g.fail(what + ": " + mscclppGetErrorString(r));
    return;
  }
  CUDA(cudaStreamSynchronize(s));
  const std::vector<T> got = recv.download(g, what);
  compare(g, what, got, allReduceExpected<T>(n, op, 0), isFloating<T>() && op == mscclppAvg);
  if (isFloating<T>() && op == mscclppAvg && g_nranks > 1) {
    // Checked within a rounding step, but every rank must hold the same bits.
    std::vector<T> rank0(got);
    MPI_Bcast(rank0.data(), static_cast<int>(n * sizeof(T)), MPI_BYTE, 0, MPI_COMM_WORLD);
    ++g.checks;
    if (std::memcmp(rank0.data(), got.data(), n * sizeof(T)) != 0) g.fail(what + ": not the bits of rank 0's result");
  }
}

template <typename T>
void checkAllGather(Group& g, mscclppCollComm_t comm, cudaStream_t s, size_t n, bool inPlace, size_t offset) {
  const std::string what = std::string(Type<T>::name) + " count " + std::to_string(n) + " per rank" +
                           (inPlace ? " in place" : " out of place") + (offset ? " unaligned" : "");
  if (g_verbose) std::printf("[rank %d] allgather %s\n", g_rank, what.c_str()), std::fflush(stdout);
  Buffer<T> recv(n * g_nranks, offset);
  Buffer<T> sendBuf(inPlace ? 0 : n, offset);
  T* send = inPlace ? recv.data() + g_rank * n : sendBuf.data();
  const std::vector<T> in = inputs<T>(n, g_rank, 0);
  CUDA(cudaMemcpy(send, in.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA(cudaDeviceSynchronize());  // see Buffer::upload
  mscclppResult_t r = mscclppAllGather(send, recv.data(), n, Type<T>::id, comm, s);
  if (r != mscclppSuccess) {
    ++g.checks;
    g.fail(what + ": " + mscclppGetErrorString(r));
    return;
  }
  CUDA(cudaStreamSynchronize(s));
  compare(g, what, recv.download(g, what), allGatherExpected<T>(n, 0));
}

// The call's result, or a failed check when it was refused.
bool called(Group& g, const std::string& what, mscclppResult_t r) {
  if (r == mscclppSuccess) return true;
  ++g.checks;
  g.fail(what + ": " + mscclppGetErrorString(r));
  return false;
}

// ReduceScatter of n elements per rank; in place: recv is this rank's block of send.
template <typename T>
void checkReduceScatter(Group& g, mscclppCollComm_t comm, cudaStream_t s, size_t n, mscclppRedOp_t op, bool inPlace,
                        size_t offset) {
  const std::string what = std::string(Type<T>::name) + " " + opName(op) + " count " + std::to_string(n) +
                           " per rank" + (inPlace ? " in place" : " out of place") + (offset ? " unaligned" : "");
  if (g_verbose) std::printf("[rank %d] reducescatter %s\n", g_rank, what.c_str()), std::fflush(stdout);
  Buffer<T> send(n * g_nranks, offset);
  Buffer<T> recvBuf(inPlace ? 0 : n, offset);
  T* recv = inPlace ? send.data() + g_rank * n : recvBuf.data();
  send.upload(inputs<T>(n * g_nranks, g_rank, 0, op));
  if (!called(g, what, mscclppReduceScatter(send.data(), recv, n, Type<T>::id, op, comm, s))) return;
  CUDA(cudaStreamSynchronize(s));
  const std::vector<double> want = reduceScatterExpected<T>(g_rank * n, n, op, 0);
  const bool near = isFloating<T>() && op == mscclppAvg;
  if (inPlace) {
    const std::vector<T> all = send.download(g, what);
    compare(g, what, std::vector<T>(all.begin() + g_rank * n, all.begin() + (g_rank + 1) * n), want, near);
  } else {
    compare(g, what, recvBuf.download(g, what), want, near);
  }
}

// Broadcast of n elements from root; every rank's send holds its own input, so a rank whose
// output is not written fails.
template <typename T>
void checkBroadcast(Group& g, mscclppCollComm_t comm, cudaStream_t s, size_t n, int root, bool inPlace,
                    size_t offset) {
  const std::string what = std::string(Type<T>::name) + " count " + std::to_string(n) + " root " +
                           std::to_string(root) + (inPlace ? " in place" : " out of place") + (offset ? " unaligned" : "");
  if (g_verbose) std::printf("[rank %d] broadcast %s\n", g_rank, what.c_str()), std::fflush(stdout);
  Buffer<T> recv(n, offset);
  Buffer<T> sendBuf(inPlace ? 0 : n, offset);
  Buffer<T>& send = inPlace ? recv : sendBuf;
  send.upload(inputs<T>(n, g_rank, 0));
  if (!called(g, what, mscclppBroadcast(send.data(), recv.data(), n, Type<T>::id, root, comm, s))) return;
  CUDA(cudaStreamSynchronize(s));
  compare(g, what, recv.download(g, what), broadcastExpected<T>(n, root, 0));
}

// Element counts: 1, odd counts, counts around the packet limits and 16-byte multiples.
const std::vector<size_t> kCounts = {1, 2, 3, 5, 8, 31, 33, 100, 1023, 1025, 4097, 12345, 65537,
                                     131071, 262147, 500001, 1048583, 4194319};

// "sanitize": packets (1 element to 256 KiB of float32; two-shot from 128 KiB on more than 2
// ranks), LL128 lines on 2 ranks (AllReduce 256 and 768 KiB of float32, AllGather 768 KiB), then
// past every packet limit (4 MiB of float32: oneshot on 2 ranks, rsag on more, put; direct on
// registered buffers) and past direct's and oneshot's (16 MiB of float32: rsag_direct, rsag).
const std::vector<size_t> kSanitizeCounts = {1, 33, 1025, 65537, 196613, 1048579, 4194319};

// The counts and the operators of the sweeps: every one, or in "sanitize" mode a few.
const std::vector<size_t>* g_counts = &kCounts;
std::vector<mscclppRedOp_t> g_ops(std::begin(kOps), std::end(kOps));

template <typename T>
void allReduceSweep(mscclppCollComm_t comm, cudaStream_t s, bool big) {
  for (mscclppRedOp_t op : g_ops) {
    Group g(std::string("allreduce ") + Type<T>::name + " " + opName(op));
    for (size_t n : *g_counts)
      for (bool inPlace : {false, true})
        for (size_t offset : {0, 1}) checkAllReduce<T>(g, comm, s, n, op, inPlace, offset);
    if (big && op == mscclppSum && sizeof(T) != 8) {
      checkAllReduce<T>(g, comm, s, (64u << 20) / sizeof(T) + 3, op, false, 0);  // ~64 MiB, odd
      checkAllReduce<T>(g, comm, s, (256u << 20) / sizeof(T), op, true, 0);              // 256 MiB
    }
    g.finish();
  }
}

// ReduceScatter: every operator, 0 and g_counts elements per rank; with big, tens of MiB.
template <typename T>
void reduceScatterSweep(mscclppCollComm_t comm, cudaStream_t s, bool big) {
  for (mscclppRedOp_t op : g_ops) {
    Group g(std::string("reducescatter ") + Type<T>::name + " " + opName(op));
    checkReduceScatter<T>(g, comm, s, 0, op, false, 0);
    for (size_t n : *g_counts)
      for (bool inPlace : {false, true})
        for (size_t offset : {0, 1}) checkReduceScatter<T>(g, comm, s, n, op, inPlace, offset);
    if (big && op == mscclppSum && sizeof(T) != 8) {
      checkReduceScatter<T>(g, comm, s, (32u << 20) / sizeof(T) / g_nranks + 3, op, false, 0);  // ~32 MiB in, odd
      checkReduceScatter<T>(g, comm, s, (64u << 20) / sizeof(T) / g_nranks, op, true, 0);       // 64 MiB in
    }
    g.finish();
  }
}

// Broadcast: roots 0, 1 and the last rank, 0 and g_counts elements; with big, tens of MiB.
template <typename T>
void broadcastSweep(mscclppCollComm_t comm, cudaStream_t s, bool big) {
  Group g(std::string("broadcast ") + Type<T>::name);
  std::vector<int> roots = {0};
  for (int r : {1, g_nranks - 1})
    if (r < g_nranks && std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  checkBroadcast<T>(g, comm, s, 0, 0, false, 0);
  for (size_t n : *g_counts)
    for (int root : roots)
      for (bool inPlace : {false, true})
        for (size_t offset : {0, 1}) checkBroadcast<T>(g, comm, s, n, root, inPlace, offset);
  if (big) {
    checkBroadcast<T>(g, comm, s, (48u << 20) / sizeof(T) + 5, roots.back(), false, 1);  // ~48 MiB, odd, unaligned
    checkBroadcast<T>(g, comm, s, (64u << 20) / sizeof(T), 0, true, 0);                  // 64 MiB
  }
  g.finish();
}

template <typename T>
void allGatherSweep(mscclppCollComm_t comm, cudaStream_t s, bool big) {
  Group g(std::string("allgather ") + Type<T>::name);
  for (size_t n : *g_counts)
    for (bool inPlace : {false, true})
      for (size_t offset : {0, 1}) checkAllGather<T>(g, comm, s, n, inPlace, offset);
  if (big) checkAllGather<T>(g, comm, s, (256u << 20) / sizeof(T) / g_nranks + 1, false, 0);  // 256 MiB out
  g.finish();
}

// ---- mscclppScale (local) ------------------------------------------------------------------------

// x * f as NCCL's PreMulSum computes it: integers wrap (in unsigned arithmetic), float32 and
// float16/bfloat16 round the exact product (exact in double) once, float64 multiplies in double.
template <typename T>
T scaled(T x, T f) {
  if constexpr (std::is_integral<T>::value) {
    using Wide = typename std::conditional<sizeof(T) == 8, uint64_t, uint32_t>::type;
    return static_cast<T>(static_cast<Wide>(x) * static_cast<Wide>(f));
  } else if constexpr (std::is_same<T, double>::value) {
    return x * f;
  } else {
    return Type<T>::from(Type<T>::to(x) * Type<T>::to(f));
  }
}

// Each rank's factor: near 0.1 for the floating types (so that products round), a negative
// integer for the others (unsigned: its wrapped value, so that products wrap).
template <typename T>
T scaleFactor(int salt = 0) {
  if constexpr (std::is_integral<T>::value) return static_cast<T>(-3 - g_rank - salt);
  return Type<T>::from(0.1 * (1 + g_rank + salt));
}

// dst == src * factor bit for bit, element by element.
template <typename T>
void compareScaled(Group& g, const std::string& what, const std::vector<T>& got, const std::vector<T>& in, T factor) {
  ++g.checks;
  for (size_t i = 0; i < in.size(); ++i) {
    const T want = scaled(in[i], factor);
    if (std::memcmp(&got[i], &want, sizeof(T)) != 0) {
      g.fail(what + ": element " + std::to_string(i) + " is " + std::to_string(Type<T>::to(got[i])) + ", want " +
             std::to_string(Type<T>::to(want)));
      return;
    }
  }
}

// One mscclppScale of n elements, the factor in host or device memory.
template <typename T>
void checkScale(Group& g, mscclppCollComm_t comm, cudaStream_t s, size_t n, bool inPlace, bool onDevice,
                size_t offset) {
  const std::string what = std::string(Type<T>::name) + " count " + std::to_string(n) +
                           (inPlace ? " in place" : " out of place") + (onDevice ? ", factor on the device" : "") +
                           (offset ? " unaligned" : "");
  if (g_verbose) std::printf("[rank %d] scale %s\n", g_rank, what.c_str()), std::fflush(stdout);
  Buffer<T> src(n, offset);
  Buffer<T> dstBuf(inPlace ? 0 : n, offset);
  Buffer<T>& dst = inPlace ? src : dstBuf;
  const std::vector<T> in = inputs<T>(n, g_rank, 0);
  src.upload(in);
  const T factor = scaleFactor<T>();
  T* devFactor = nullptr;
  CUDA(cudaMalloc(&devFactor, sizeof(T)));
  CUDA(cudaMemcpy(devFactor, &factor, sizeof(T), cudaMemcpyHostToDevice));
  const void* f = onDevice ? static_cast<const void*>(devFactor) : &factor;
  if (called(g, what, mscclppScale(src.data(), dst.data(), n, Type<T>::id, f, onDevice, comm, s))) {
    CUDA(cudaStreamSynchronize(s));
    compareScaled(g, what, dst.download(g, what), in, factor);
  }
  CUDA(cudaFree(devFactor));
}

template <typename T>
void scaleSweep(mscclppCollComm_t comm, cudaStream_t s) {
  Group g(std::string("scale ") + Type<T>::name);
  for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(33), size_t(1025), size_t(65537), size_t(1048583)})
    for (bool inPlace : {false, true})
      for (bool onDevice : {false, true})
        for (size_t offset : {0, 1}) checkScale<T>(g, comm, s, n, inPlace, onDevice, offset);
  g.finish();
}

// A Scale by a factor in device memory, captured in a CUDA graph, reads the factor at each
// replay; one by a factor in host memory keeps the value it was captured with.
void scaleGraph(mscclppCollComm_t comm, cudaStream_t s) {
  Group g("scale in a CUDA graph, the factor changed between replays");
  const size_t n = 100003;
  Buffer<float> in(n, 0), byDevice(n, 0), byHost(n, 0);
  const std::vector<float> h = inputs<float>(n, g_rank, 0);
  in.upload(h);
  float* devFactor = nullptr;
  CUDA(cudaMalloc(&devFactor, sizeof(float)));
  const float hostFactor = scaleFactor<float>();
  cudaGraph_t graph;
  CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const bool ok = called(g, "capture", mscclppScale(in.data(), byDevice.data(), n, mscclppFloat32, devFactor, 1, comm, s)) &&
                  called(g, "capture", mscclppScale(in.data(), byHost.data(), n, mscclppFloat32, &hostFactor, 0, comm, s));
  CUDA(cudaStreamEndCapture(s, &graph));
  if (ok) {
    cudaGraphExec_t exec;
    CUDA(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
    for (int k = 0; k < kGraphReplays; ++k) {
      const float f = scaleFactor<float>(k + 1);
      CUDA(cudaMemcpy(devFactor, &f, sizeof(f), cudaMemcpyHostToDevice));
      CUDA(cudaGraphLaunch(exec, s));
      CUDA(cudaStreamSynchronize(s));
      compareScaled(g, "replay " + std::to_string(k), byDevice.download(g, "byDevice"), h, f);
      compareScaled(g, "replay " + std::to_string(k) + ", host factor", byHost.download(g, "byHost"), h, hostFactor);
    }
    CUDA(cudaGraphExecDestroy(exec));
  }
  CUDA(cudaGraphDestroy(graph));
  CUDA(cudaFree(devFactor));
  g.finish();
}

// kChainCalls in-place uint32 sums, each on the previous result: rank r starts with
// (i % 7) + r + 1, so after k calls every element is S_i * N^(k-1) mod 2^32.
void chain(mscclppCollComm_t comm, cudaStream_t s, size_t n) {
  Group g("1000 dependent in-place allreduce calls, count " + std::to_string(n));
  Buffer<uint32_t> buf(n, 0);
  std::vector<uint32_t> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<uint32_t>(i % 7 + g_rank + 1);
  buf.upload(h);
  for (int k = 0; k < kChainCalls; ++k) {
    mscclppResult_t r = mscclppAllReduce(buf.data(), buf.data(), n, mscclppUint32, mscclppSum, comm, s);
    if (r != mscclppSuccess) {
      ++g.checks;
      g.fail(std::string("call ") + std::to_string(k) + ": " + mscclppGetErrorString(r));
      g.finish();
      return;
    }
  }
  CUDA(cudaStreamSynchronize(s));
  const std::vector<uint32_t> got = buf.download(g, "chain");
  ++g.checks;
  for (size_t i = 0; i < n; ++i) {
    uint32_t want = 0;
    for (int r = 0; r < g_nranks; ++r) want += static_cast<uint32_t>(i % 7 + r + 1);
    for (int k = 1; k < kChainCalls; ++k) want *= static_cast<uint32_t>(g_nranks);
    if (got[i] != want) {
      g.fail("element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " + std::to_string(want));
      break;
    }
  }
  g.finish();
}

// kBurst one-element Broadcasts from rank 0 queued back to back, the last rank queuing its calls
// late: the root, which reads no data, must not run ahead and overwrite packets that the late
// rank has yet to read (4 ranks sharing a GPU hung here before the root waited for its receivers).
void broadcastBurst(mscclppCollComm_t comm, cudaStream_t s) {
  constexpr size_t kBurst = 200;
  Group g("broadcast burst: " + std::to_string(kBurst) + " calls from one root, one rank late");
  Buffer<float> send(kBurst, 0), recv(kBurst, 0);
  send.upload(inputs<float>(kBurst, g_rank, 0));
  if (g_rank == g_nranks - 1) usleep(200 * 1000);
  for (size_t i = 0; i < kBurst; ++i) {
    if (!called(g, "call " + std::to_string(i), mscclppBroadcast(send.data() + i, recv.data() + i, 1, mscclppFloat32, 0, comm, s))) {
      break;
    }
  }
  CUDA(cudaStreamSynchronize(s));
  compare(g, "burst", recv.download(g, "burst"), broadcastExpected<float>(kBurst, 0, 0));
  g.finish();
}

// A mix of collectives queued back to back on one stream, with new inputs each round.
struct Mix {
  static constexpr int kCalls = 6;
  size_t arSmall = 1000, arLarge = 300001, agSmall = 777, agLarge = 100003, rs = 200003, bc = 4099;
  int bcRoot = g_nranks - 1;
  Buffer<float> arSmallIn{arSmall, 0}, arSmallOut{arSmall, 0};
  Buffer<__nv_bfloat16> arLargeIn{arLarge, 0}, arLargeOut{arLarge, 0};
  Buffer<__half> agSmallIn{agSmall, 0}, agSmallOut{agSmall * g_nranks, 0};
  Buffer<float> agLargeIn{agLarge, 0}, agLargeOut{agLarge * g_nranks, 1};
  Buffer<int32_t> rsIn{rs * g_nranks, 0}, rsOut{rs, 0};
  Buffer<uint8_t> bcIn{bc, 0}, bcOut{bc, 0};

  void upload(int salt) {
    arSmallIn.upload(inputs<float>(arSmall, g_rank, salt));
    arLargeIn.upload(inputs<__nv_bfloat16>(arLarge, g_rank, salt));
    agSmallIn.upload(inputs<__half>(agSmall, g_rank, salt));
    agLargeIn.upload(inputs<float>(agLarge, g_rank, salt));
    rsIn.upload(inputs<int32_t>(rs * g_nranks, g_rank, salt));
    bcIn.upload(inputs<uint8_t>(bc, g_rank, salt));
  }
  bool enqueue(Group& g, mscclppCollComm_t comm, cudaStream_t s) {
    mscclppResult_t r[kCalls] = {
        mscclppAllReduce(arSmallIn.data(), arSmallOut.data(), arSmall, mscclppFloat32, mscclppSum, comm, s),
        mscclppAllGather(agSmallIn.data(), agSmallOut.data(), agSmall, mscclppFloat16, comm, s),
        mscclppAllReduce(arLargeIn.data(), arLargeOut.data(), arLarge, mscclppBfloat16, mscclppMax, comm, s),
        mscclppAllGather(agLargeIn.data(), agLargeOut.data(), agLarge, mscclppFloat32, comm, s),
        mscclppReduceScatter(rsIn.data(), rsOut.data(), rs, mscclppInt32, mscclppMin, comm, s),
        mscclppBroadcast(bcIn.data(), bcOut.data(), bc, mscclppUint8, bcRoot, comm, s),
    };
    for (mscclppResult_t x : r) {
      if (x != mscclppSuccess) {
        ++g.checks;
        g.fail(std::string("enqueue: ") + mscclppGetErrorString(x));
        return false;
      }
    }
    return true;
  }
  void check(Group& g, int salt) {
    const std::string at = " (salt " + std::to_string(salt) + ")";
    compare(g, "allreduce float32 sum" + at, arSmallOut.download(g, "arSmall"), allReduceExpected<float>(arSmall, mscclppSum, salt));
    compare(g, "allreduce bfloat16 max" + at, arLargeOut.download(g, "arLarge"),
            allReduceExpected<__nv_bfloat16>(arLarge, mscclppMax, salt));
    compare(g, "allgather float16" + at, agSmallOut.download(g, "agSmall"), allGatherExpected<__half>(agSmall, salt));
    compare(g, "allgather float32" + at, agLargeOut.download(g, "agLarge"), allGatherExpected<float>(agLarge, salt));
    compare(g, "reducescatter int32 min" + at, rsOut.download(g, "rs"),
            reduceScatterExpected<int32_t>(g_rank * rs, rs, mscclppMin, salt));
    compare(g, "broadcast uint8" + at, bcOut.download(g, "bc"), broadcastExpected<uint8_t>(bc, bcRoot, salt));
  }
};

void interleaved(mscclppCollComm_t comm, cudaStream_t s) {
  Group g("allreduce, allgather, reducescatter and broadcast interleaved on one stream, " +
          std::to_string(kInterleaveRounds) + " rounds");
  Mix m;
  m.upload(3);
  for (int k = 0; k < kInterleaveRounds; ++k)
    if (!m.enqueue(g, comm, s)) break;
  CUDA(cudaStreamSynchronize(s));
  m.check(g, 3);
  g.finish();
}

void twoComms(mscclppCollComm_t a, mscclppCollComm_t b, cudaStream_t sa, cudaStream_t sb) {
  Group g("two communicators at once on two streams");
  Mix ma, mb;
  ma.upload(1);
  mb.upload(2);
  for (int k = 0; k < 20; ++k) {
    if (!ma.enqueue(g, a, sa) || !mb.enqueue(g, b, sb)) break;
  }
  CUDA(cudaStreamSynchronize(sa));
  CUDA(cudaStreamSynchronize(sb));
  ma.check(g, 1);
  mb.check(g, 2);
  g.finish();
}

void graph(mscclppCollComm_t comm, cudaStream_t s) {
  Group g("CUDA graph of " + std::to_string(Mix::kCalls) + " collectives, captured once, replayed " +
          std::to_string(kGraphReplays) + " times");
  Mix m;
  cudaGraph_t graph;
  CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const bool ok = m.enqueue(g, comm, s);
  CUDA(cudaStreamEndCapture(s, &graph));
  if (ok) {
    cudaGraphExec_t exec;
    CUDA(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
    for (int k = 0; k < kGraphReplays; ++k) {
      m.upload(10 + k);
      CUDA(cudaGraphLaunch(exec, s));
      CUDA(cudaStreamSynchronize(s));
      m.check(g, 10 + k);
    }
    CUDA(cudaGraphExecDestroy(exec));
  }
  CUDA(cudaGraphDestroy(graph));
  g.finish();
}

// Refusals: bad arguments fail with mscclppInvalidArgument and queue nothing.
void refusals(mscclppCollComm_t comm, cudaStream_t s) {
  Group g("refusals");
  Buffer<float> buf(64, 0);
  struct Case {
    const char* what;
    mscclppResult_t got;
  } cases[] = {
      {"bad datatype", mscclppAllReduce(buf.data(), buf.data(), 4, static_cast<mscclppDataType_t>(12), mscclppSum, comm, s)},
      {"bad op", mscclppAllReduce(buf.data(), buf.data(), 4, mscclppFloat32, static_cast<mscclppRedOp_t>(5), comm, s)},
      {"NULL buffer", mscclppAllReduce(nullptr, buf.data(), 4, mscclppFloat32, mscclppSum, comm, s)},
      {"misaligned float", mscclppAllReduce(reinterpret_cast<char*>(buf.data()) + 2, buf.data(), 4, mscclppFloat32, mscclppSum, comm, s)},
      {"overlapping buffers", mscclppAllReduce(buf.data(), buf.data() + 1, 8, mscclppFloat32, mscclppSum, comm, s)},
      {"allgather send inside recv, not at its part", mscclppAllGather(buf.data() + 1, buf.data(), 2, mscclppFloat32, comm, s)},
      {"NULL communicator", mscclppAllReduce(buf.data(), buf.data(), 4, mscclppFloat32, mscclppSum, nullptr, s)},
      {"allreduce of fp8 (no reduction kernel)", mscclppAllReduce(buf.data(), buf.data(), 4, mscclppFloat8e4m3, mscclppSum, comm, s)},
      {"reducescatter of fp8 (no reduction kernel)",
       mscclppReduceScatter(buf.data(), buf.data() + 32, 2, mscclppFloat8e5m2, mscclppAvg, comm, s)},
      {"reducescatter bad op", mscclppReduceScatter(buf.data(), buf.data() + 32, 2, mscclppFloat32, static_cast<mscclppRedOp_t>(5), comm, s)},
      {"misaligned int64", mscclppAllReduce(reinterpret_cast<char*>(buf.data()) + 4, buf.data(), 4, mscclppInt64, mscclppProd, comm, s)},
      {"reducescatter recv overlapping another rank's block",
       mscclppReduceScatter(buf.data(), buf.data() + g_rank * 4 + 1, 4, mscclppFloat32, mscclppSum, comm, s)},
      {"broadcast root too large", mscclppBroadcast(buf.data(), buf.data(), 4, mscclppFloat32, g_nranks, comm, s)},
      {"broadcast negative root", mscclppBroadcast(buf.data(), buf.data(), 4, mscclppFloat32, -1, comm, s)},
      {"broadcast bad datatype", mscclppBroadcast(buf.data(), buf.data(), 4, static_cast<mscclppDataType_t>(12), 0, comm, s)},
      {"scale of fp8", mscclppScale(buf.data(), buf.data(), 4, mscclppFloat8e4m3, buf.data(), 1, comm, s)},
      {"scale, NULL factor", mscclppScale(buf.data(), buf.data(), 4, mscclppFloat32, nullptr, 0, comm, s)},
      {"scale, overlapping buffers", mscclppScale(buf.data(), buf.data() + 1, 4, mscclppFloat32, buf.data(), 1, comm, s)},
      {"scale, misaligned device factor",
       mscclppScale(buf.data(), buf.data(), 4, mscclppFloat64, reinterpret_cast<char*>(buf.data()) + 4, 1, comm, s)},
  };
  for (const Case& c : cases) {
    ++g.checks;
    if (c.got == mscclppSuccess) g.fail(std::string(c.what) + " was accepted");
  }
  ++g.checks;
  if (mscclppAllReduce(nullptr, nullptr, 0, mscclppFloat32, mscclppSum, comm, s) != mscclppSuccess) g.fail("count 0 was refused");
  ++g.checks;
  if (mscclppReduceScatter(nullptr, nullptr, 0, mscclppFloat32, mscclppSum, comm, s) != mscclppSuccess ||
      mscclppBroadcast(nullptr, nullptr, 0, mscclppFloat32, 0, comm, s) != mscclppSuccess)
    g.fail("reducescatter or broadcast of count 0 was refused");
  ++g.checks;
  const float two = 2;
  if (mscclppScale(nullptr, nullptr, 0, mscclppFloat32, &two, 0, comm, s) != mscclppSuccess) g.fail("scale of count 0 was refused");
  CUDA(cudaStreamSynchronize(s));
  g.finish();
}

// "disagree": rank 0 calls AllReduce on registered buffers and the other ranks on unregistered
// ones, a usage error no rank can see on the host (each knows only its own registrations): rank 0
// runs a zero-copy kernel (rsag_direct) and the others a scratch one (rsag), which wait for
// messages the other side never sends. Every rank's kernel must give up after
// MSCCLPP_COLL_MAX_SPINS polls (kernels/src/wait.cuh) and its communicator report it
// (mscclppCollCommGetAsyncError), with no CUDA error on the stream: never hang, never complete
// as if nothing were wrong (on 2 GPUs a rank once did, with the other's stray write killing its
// context, before the kernels' barriers after a wait ended every thread of a block whose thread
// gave up). Run it with a small bound.
int disagree() {
  constexpr size_t kCount = size_t(4) << 20;  // 16 MiB of float32: past the one-shot sizes
  constexpr double kLimitSeconds = 120;       // a call still running by then counts as a hang
  Comm* c = new Comm;                         // never destroyed: the communicator is dead
  cudaStream_t s;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t bytes = 2 * kCount * sizeof(float);  // send, then receive
  char* registered = nullptr;  // registered on every rank (registration is collective), used by rank 0
  CUDA(cudaMalloc(&registered, bytes));
  mscclppCollRegistration_t reg = nullptr;
  MSCCLPP(mscclppCollRegister(c->coll, registered, bytes, &reg));
  float* buf = reinterpret_cast<float*>(registered);
  if (g_rank != 0) CUDA(cudaMalloc(&buf, bytes));
  CUDA(cudaMemset(buf, 0, bytes));
  CUDA(cudaDeviceSynchronize());
  MSCCLPP(mscclppAllReduce(buf, buf + kCount, kCount, mscclppFloat32, mscclppSum, c->coll, s));
  const double start = MPI_Wtime();
  cudaError_t e;
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady && MPI_Wtime() - start < kLimitSeconds) usleep(1000);
  mscclppResult_t asyncErr = mscclppSuccess;
  char reason[256] = "";
  MSCCLPP(mscclppCollCommGetAsyncError(c->coll, &asyncErr, reason, sizeof reason));
  const int reported = e == cudaSuccess && asyncErr != mscclppSuccess;
  std::printf("[rank %d] disagreeing registration: %s after %.1f s (%s); communicator: %s (%s)\n", g_rank,
              e == cudaErrorNotReady ? "still running" : e == cudaSuccess ? "kernel ended" : "failed on the GPU",
              MPI_Wtime() - start, cudaGetErrorName(e), mscclppGetErrorString(asyncErr), reason);
  std::fflush(stdout);
  int all = 0;
  MPI_Allreduce(&reported, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (g_rank == 0) {
    std::printf("%s disagreeing registration: %s\n", all ? "ok  " : "FAIL",
                all ? "every rank's kernel gave up and its communicator reports it" : "a call hung, completed or broke its context");
    std::printf("collectives: %d passed, %d failed\n", all ? 1 : 0, all ? 0 : 1);
  }
  MPI_Finalize();
  return all ? 0 : 1;
}

// Every Broadcast sweep and the burst of a full or "quick" run (and of a "broadcast" one).
void broadcastSweeps(mscclppCollComm_t comm, cudaStream_t s, bool big) {
  broadcastSweep<float>(comm, s, big);
  broadcastSweep<__half>(comm, s, false);
  broadcastSweep<uint8_t>(comm, s, big);
  broadcastSweep<int8_t>(comm, s, false);
  broadcastSweep<int64_t>(comm, s, false);
  broadcastSweep<uint64_t>(comm, s, false);
  broadcastSweep<Fp8E4M3>(comm, s, false);
  broadcastBurst(comm, s);
}

// The sweeps of a full or "quick" run; reduceScatterAndBroadcast: nothing is forced (ReduceScatter
// and Broadcast run).
void fullSweeps(mscclppCollComm_t comm, cudaStream_t s, bool big, bool reduceScatterAndBroadcast) {
  allReduceSweep<float>(comm, s, big);
  allReduceSweep<__half>(comm, s, false);
  allReduceSweep<__nv_bfloat16>(comm, s, big);
  allReduceSweep<int32_t>(comm, s, false);
  allReduceSweep<uint32_t>(comm, s, false);
  allReduceSweep<double>(comm, s, false);
  allReduceSweep<int8_t>(comm, s, false);
  allReduceSweep<uint8_t>(comm, s, false);
  allReduceSweep<int64_t>(comm, s, false);
  allReduceSweep<uint64_t>(comm, s, false);
  allGatherSweep<float>(comm, s, big);
  allGatherSweep<__half>(comm, s, false);
  allGatherSweep<double>(comm, s, false);
  allGatherSweep<uint8_t>(comm, s, false);
  allGatherSweep<int64_t>(comm, s, false);
  allGatherSweep<Fp8E5M2>(comm, s, false);
  if (reduceScatterAndBroadcast) {
    // ReduceScatter and Broadcast choose their algorithm by size alone: once per run suffices.
    reduceScatterSweep<float>(comm, s, big);
    reduceScatterSweep<__half>(comm, s, false);
    reduceScatterSweep<__nv_bfloat16>(comm, s, big);
    reduceScatterSweep<int32_t>(comm, s, false);
    reduceScatterSweep<uint32_t>(comm, s, false);
    reduceScatterSweep<double>(comm, s, false);
    reduceScatterSweep<int8_t>(comm, s, false);
    reduceScatterSweep<uint8_t>(comm, s, false);
    reduceScatterSweep<int64_t>(comm, s, false);
    reduceScatterSweep<uint64_t>(comm, s, false);
    broadcastSweeps(comm, s, big);
    scaleSweep<float>(comm, s);
    scaleSweep<__half>(comm, s);
    scaleSweep<__nv_bfloat16>(comm, s);
    scaleSweep<int32_t>(comm, s);
    scaleSweep<uint32_t>(comm, s);
    scaleSweep<double>(comm, s);
    scaleSweep<int8_t>(comm, s);
    scaleSweep<uint8_t>(comm, s);
    scaleSweep<int64_t>(comm, s);
    scaleSweep<uint64_t>(comm, s);
    scaleGraph(comm, s);
  }
}

// The sweeps of "sanitize" mode (see the top of the file); reduceScatterAndBroadcast: nothing is
// forced (ReduceScatter and Broadcast run); registered: every buffer is registered already.
void sanitizeSweeps(mscclppCollComm_t comm, cudaStream_t s, bool reduceScatterAndBroadcast, bool registered) {
  allReduceSweep<float>(comm, s, false);
  allReduceSweep<__half>(comm, s, false);
  allReduceSweep<int8_t>(comm, s, false);
  allReduceSweep<double>(comm, s, false);
  allGatherSweep<float>(comm, s, false);
  allGatherSweep<uint8_t>(comm, s, false);
  allGatherSweep<int64_t>(comm, s, false);
  if (reduceScatterAndBroadcast) {
    reduceScatterSweep<float>(comm, s, false);
    reduceScatterSweep<__half>(comm, s, false);
    reduceScatterSweep<int8_t>(comm, s, false);
    reduceScatterSweep<double>(comm, s, false);
    broadcastSweep<float>(comm, s, false);
    broadcastSweep<uint8_t>(comm, s, false);
    broadcastSweep<int64_t>(comm, s, false);
    broadcastBurst(comm, s);
    scaleSweep<float>(comm, s);
    scaleSweep<int8_t>(comm, s);
    scaleGraph(comm, s);
  }
  if (!registered) {
    g_arena = new Arena(comm);
    allReduceSweep<float>(comm, s, false);
    allGatherSweep<float>(comm, s, false);
    delete g_arena;
    g_arena = nullptr;
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  bool big = true, registered = false, disagreeing = false, sanitize = false, hosts = false, broadcastOnly = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "quick") == 0) big = false;
    if (std::strcmp(argv[i], "sanitize") == 0) sanitize = true, big = false;
    if (std::strcmp(argv[i], "registered") == 0) registered = true;
    if (std::strcmp(argv[i], "disagree") == 0) disagreeing = true;
    if (std::strcmp(argv[i], "hosts") == 0) hosts = true, big = false;
    if (std::strcmp(argv[i], "broadcast") == 0) broadcastOnly = true;
  }
  g_verbose = std::getenv("COLLECTIVES_VERBOSE") != nullptr;
  int devices = 0;
  CUDA(cudaGetDeviceCount(&devices));
  CUDA(cudaSetDevice(g_rank % devices));
  CUDA(cudaFree(nullptr));
  if (disagreeing) return disagree();
  if (g_nranks > devices && std::getenv("MSCCLPP_COLL_MAX_BLOCKS") == nullptr) {
    // Ranks share GPUs (one host assumed). The library already gives each call a share of the
    // GPU's SMs; twoComms runs two communicators' calls at once, whose blocks must fit together.
    int sms = 0;
    CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g_rank % devices));
    const int ranksPerGpu = (g_nranks + devices - 1) / devices;
    const int blocks = std::max(2, sms / (ranksPerGpu * kConcurrentComms));
    setenv("MSCCLPP_COLL_MAX_BLOCKS", std::to_string(blocks).c_str(), 1);
    if (g_rank == 0) {
      std::printf("collectives: %d ranks share %d GPU(s): MSCCLPP_COLL_MAX_BLOCKS=%d, so that %d communicators' calls fit at once\n",
                  g_nranks, devices, blocks, kConcurrentComms);
    }
  }
  auto algo = [](const char* name) -> const char* {  // a forced algorithm, or nullptr
    const char* v = std::getenv(name);
    return v && *v && std::strcmp(v, "auto") != 0 ? v : nullptr;
  };
  const char* ar = algo("MSCCLPP_ALLREDUCE_ALGO");
  const char* ag = algo("MSCCLPP_ALLGATHER_ALGO");
  const char* bc = algo("MSCCLPP_BROADCAST_ALGO");
  const char* forced = ar ? ar : ag;  // an algorithm forced: the run is for AllReduce and AllGather
  if (sanitize) {
    g_counts = &kSanitizeCounts;
    g_ops = {mscclppSum, mscclppMax};  // sum has entry points of its own; the other operators share one
  }
  if (g_rank == 0) {
    std::printf("collectives: %d ranks, allreduce algo %s, allgather algo %s, broadcast algo %s, %s buffers%s\n",
                g_nranks, ar ? ar : "auto", ag ? ag : "auto", bc ? bc : "auto", registered ? "registered" : "unregistered",
                sanitize ? ", sanitize mode" : hosts ? ", ranks across hosts" : "");
  }
  if (broadcastOnly) {
    Comm c1;
    cudaStream_t s;
    CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    broadcastSweeps(c1.coll, s, big);
    CUDA(cudaStreamDestroy(s));
  } else if (hosts) {
    Comm c1;
    cudaStream_t s;
    CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    {
      Group g("registration refused across hosts");
      void* buf = nullptr;
      CUDA(cudaMalloc(&buf, 1 << 21));
      mscclppCollRegistration_t reg = nullptr;
      const mscclppResult_t res = mscclppCollRegister(c1.coll, buf, 1 << 21, &reg);
      ++g.checks;
      if (res != mscclppInvalidUsage) g.fail("mscclppCollRegister returned " + std::to_string(res) + ", want mscclppInvalidUsage");
      CUDA(cudaFree(buf));
      g.finish();
    }
    fullSweeps(c1.coll, s, false, true);
    chain(c1.coll, s, 1000);
    interleaved(c1.coll, s);
    CUDA(cudaStreamDestroy(s));
  } else {
    Comm c1;
    cudaStream_t s, s2;
    CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    if (registered) g_arena = new Arena(c1.coll);
    refusals(c1.coll, s);
    if (sanitize) {
      sanitizeSweeps(c1.coll, s, forced == nullptr, registered);
    } else {
      fullSweeps(c1.coll, s, big, forced == nullptr);
    }
    chain(c1.coll, s, 1000);
    if (!sanitize) chain(c1.coll, s, 300001);
    interleaved(c1.coll, s);
    {
      Comm c2;
      twoComms(c1.coll, c2.coll, s, s2);
    }
    graph(c1.coll, s);
    delete g_arena;
    g_arena = nullptr;
    CUDA(cudaStreamDestroy(s));
    CUDA(cudaStreamDestroy(s2));
  }
  if (g_rank == 0) std::printf("collectives: %d passed, %d failed\n", g_passed, g_failed);
  const int failed = g_failed;
  MPI_Finalize();
  return failed ? 1 : 0;
}

// common.cuh: what every collective kernel shares: the kernel argument, the per-communicator
// state in device memory, the scratch layout, element types and reduction operators, and the
// end-of-call bookkeeping. Mirrored on the host by collectives/kernel_args.go.
#ifndef MSCCLPP_KERNELS_COMMON_CUH_
#define MSCCLPP_KERNELS_COMMON_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include <mscclpp/memory_channel_device.h>
#include <mscclpp/port_channel_device.h>

#include "wait.cuh"

namespace coll {

// The most thread blocks a collective launches; the channels array and the per-block round
// counters are sized by it. Must equal collectives.maxBlocks.
constexpr uint32_t kMaxBlocks = 128;

// The most ranks the kernels' per-element loops unroll for (more ranks still work, rolled).
constexpr uint32_t kUnrollRanks = 8;
// Block sizes; they must equal collectives.packetThreads, rsagThreads and putThreads (every
// "must equal" of the kernels' sources is checked by collectives' TestKernelConstantsMatch). The
// reduce-scatter kernel keeps one 16-byte word per rank in registers, hence its smaller blocks.
// kPacketThreads is the largest block of the packet and line kernels: they index by blockDim, and
// the packet AllReduce and AllGather run smaller ones where that spreads their stores over more
// SMs (collectives.packetGrid).
constexpr uint32_t kPacketThreads = 512;
constexpr uint32_t kRsagThreads = 512;
constexpr uint32_t kPutThreads = 1024;
// 16-byte words each thread keeps in flight in copyBytes.
constexpr int kCopyUnroll = 4;

// Registered buffers (zero-copy): the capacity of a communicator's registration table. Must
// equal collectives.maxRegistrations.
constexpr uint32_t kMaxRegistrations = 256;
// The most peers the zero-copy kernels handle (their peers' buffers sit in shared memory). Must
// equal collectives.maxZeroCopyPeers.
constexpr uint32_t kMaxZeroCopyPeers = 63;
// A buffer descriptor is ((registration + 1) << kDescShift) | (offset of the buffer in it); 0 is
// "no descriptor" and traps where one is needed.
constexpr uint32_t kDescShift = 48;
// The most bytes one port-channel copy request moves (its size field has 32 bits); the kernels
// split larger copies (the host never needs the bound).
constexpr uint64_t kMaxPortBytes = uint64_t(1) << 30;

// Reduction operators, numbered as NCCL's ncclRedOp_t. kAvg combines as kSum; the final sum is
// then divided by the number of ranks once (finish). kAnyOp is not an operator but a kernel's
// template argument: the operator is then Args.op, chosen at run time (COLL_REDUCE_ENTRIES).
enum ReduceOp : uint32_t { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4, kAnyOp = 0xff };

// Per-communicator state in device memory; zeroed at setup, kept across launches (and CUDA graph
// replays), identical on every rank after every call because every rank runs the same calls.
struct State {
  uint64_t ticks;               // kCallTicks per collective finished (finishCall): see callsBefore
  uint32_t rounds[kMaxBlocks];  // semaphore rounds block b has run: its data bank = rounds[b] & 1
  uint32_t waves[kMaxBlocks];   // rsag_port, port: waves block b has reduced in the running call (0 between calls)
  uint32_t landed;              // port: waves whose pieces from every peer have landed here (0 between calls)
  uint32_t blocksDone;          // AllGather port: blocks of the running kernel that queued their copies
};

// One rank's buffer of a registration, as this rank reaches it: registration k of rank r is
// regs[k * nRanks + r]. size 0: no such registration (closed, or never made).
struct Registration {
  uint64_t base;  // its address in this process (a peer's is mapped through CUDA IPC)
  uint64_t size;  // its bytes
};

// The one kernel parameter, passed by value. Only 8-byte fields, so the Go mirror
// (collectives.kernelArgs) needs no padding rules.
struct Args {
  const void* send;   // the caller's send buffer
  void* recv;         // the caller's receive buffer
  uint64_t count;     // AllReduce: elements; ReduceScatter: elements per rank; AllGather: bytes per rank; Broadcast: bytes
  uint64_t op;        // ReduceOp (AllReduce, ReduceScatter); Broadcast: the root rank
  const mscclppMemoryChannelDeviceHandle* channels;  // [block][peer]: kMaxBlocks * (nRanks - 1)
  char* scratch;      // this rank's scratch (the peers' are channels[.].dst)
  State* state;       // this communicator's State
  uint64_t rank;      // this rank
  uint64_t nRanks;    // ranks in the communicator
  uint64_t slotBytes;   // packet region: bytes of one rank's slot
  uint64_t chunkBytes;  // data banks: bytes of one (rank, block) slot, a multiple of 16
  uint64_t dataOffset;  // where the data banks start in the scratch
  int64_t maxSpins;     // the most failed polls of one wait (wait.cuh); < 0: no bound
  const Registration* regs;  // zero-copy: the registration table, [kMaxRegistrations][nRanks]
  uint64_t sendDesc;    // zero-copy: where send is (a descriptor, see kDescShift)
  uint64_t recvDesc;    // zero-copy: where recv is
  uint64_t descOffset;  // where the descriptor packets start in the scratch
  // Copy engine: the port channels, [2 * portRows][nRanks - 1]. Channel (k, p) for k < portRows
  // copies from this rank's buffer of registration k to peer p's; channel (portRows + k, p) from
  // this rank's buffer of registration k to peer p's scratch.
  mscclppPortChannelDeviceHandle* ports;
  uint64_t portRows;  // registrations [0, portRows) may have port channels
  uint32_t* abort;    // the communicator's abort words, host memory mapped into the device (wait.cuh)
};

static_assert(sizeof(Args) == 160 && offsetof(Args, abort) == 152, "Args is mirrored by collectives.kernelArgs");
static_assert(sizeof(State) == 16 + 8 * kMaxBlocks, "State is sized by collectives.stateBytes");

// A call adds kCallTicks to State.ticks, in parts, one per block: block 0 adds
// kCallTicks - (gridDim.x - 1), every other block 1. While a call runs, the parts of the blocks
// that finished sum to less than kCallTicks, so ticks / kCallTicks is the number of calls before
// it, whichever blocks have added theirs, in every block that has not added its own: a block
// counts the call with an atomic whose result it does not wait for (a reduction), instead of
// finding the last block with a returning atomic (an L2 round trip at the end of every call).
// kCallTicks is 2^32: the high half of ticks counts the calls (wrapping after 2^32), the low half
// the parts added during one, and the last part's carry moves the count on.
constexpr uint64_t kCallTicks = uint64_t(1) << 32;
static_assert(kCallTicks > kMaxBlocks, "a call's parts must sum to kCallTicks");

// Collectives finished before the running one: packet flag = packetFlag(callsBefore(s)), packet
// parity = callsBefore(s) & 1. Valid in a block until that block calls finishCall. It loads the
// high half of ticks alone (little-endian): a 64-bit load and shift made a packet kernel spill
// on sm_80. A plain load: while the block reads it, other blocks' reductions change only the low
// half, and an aligned 32-bit load is single-copy atomic.
__device__ __forceinline__ uint32_t callsBefore(const State* s) { return reinterpret_cast<const uint32_t*>(&s->ticks)[1]; }

// Scratch layout (the same on every rank):
//   packet region: 2 parities x 3 phases x nRanks slots x slotBytes; slot r holds rank r's
//     packets (the one-shot kernels use phase kPacketReduce only; phase kPacketLines holds LL128
//     lines, ll128.cuh, and nothing else)
//   descriptor packets at descOffset: 2 parities x kMaxBlocks x nRanks x kDescWords LL16 packets
//   data banks at dataOffset: 2 banks x 2 regions x nRanks x kMaxBlocks x chunkBytes
enum PacketPhase : uint32_t { kPacketReduce = 0, kPacketGather = 1, kPacketLines = 2, kPacketPhases = 3 };
__device__ __forceinline__ uint64_t packetSlotOffset(const Args& a, uint32_t parity, uint32_t phase, uint64_t slot) {
  return ((uint64_t(parity) * kPacketPhases + phase) * a.nRanks + slot) * a.slotBytes;
}
__device__ __forceinline__ uint64_t dataSlotOffset(const Args& a, uint32_t bank, uint32_t region, uint64_t slot,
                                                   uint32_t block) {
  return a.dataOffset + (((uint64_t(bank) * 2 + region) * a.nRanks + slot) * kMaxBlocks + block) * a.chunkBytes;
}

// Descriptor packets: rank r's words for block `block` of the call of `parity`.
enum DescWord : uint32_t { kDescSend = 0, kDescRecv = 1, kDescWords = 2 };
__device__ __forceinline__ uint64_t descSlotOffset(const Args& a, uint32_t parity, uint32_t block, uint64_t r) {
  return a.descOffset + ((uint64_t(parity) * kMaxBlocks + block) * a.nRanks + r) * kDescWords * sizeof(mscclppLL16Packet);
}

// The rank of peer index p (peers are the other ranks in increasing order).
__device__ __forceinline__ uint64_t peerRank(const Args& a, uint32_t p) { return p < a.rank ? p : p + 1; }
// The peer index of the i-th peer a rank visits (i in [0, nRanks-1)): rank+1, rank+2, ... around
// the ring, so that at each step the ranks write to different peers.
__device__ __forceinline__ uint32_t rotatedPeer(const Args& a, uint32_t i) {
  const uint64_t r = (a.rank + 1 + i) % a.nRanks;
  return r < a.rank ? r : r - 1;
}
// The peer index of rank r (r != this rank).
__device__ __forceinline__ uint32_t peerIndex(const Args& a, uint64_t r) { return r < a.rank ? r : r - 1; }
// This block's channel to peer index p.
__device__ __forceinline__ const mscclppMemoryChannelDeviceHandle& channel(const Args& a, uint32_t block,
                                                                           uint32_t p) {
  return a.channels[block * (a.nRanks - 1) + p];
}

__device__ __forceinline__ uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
__device__ __forceinline__ uint64_t roundUp(uint64_t a, uint64_t b) { return ceilDiv(a, b) * b; }
__device__ __forceinline__ uint64_t clampLen(uint64_t begin, uint64_t len, uint64_t end) {
  return begin >= end ? 0 : (end - begin < len ? end - begin : len);
}

// ---- Elements and operators -------------------------------------------------------------------

// The operator functions below take the operator as a template argument Op and, for Op ==
// kAnyOp, as the run-time value op (Args.op; ignored for any other Op). op is the same for every
// thread of a launch, so its dispatch is a branch that all threads take the same way; it is made
// per element or per word, not around the kernel's loops, so that one instantiation of a kernel
// serves every operator (each operator compiled in would be a copy of the whole kernel).

// The type integers of type T are summed and multiplied in: the unsigned type of their width, so
// that they wrap (a signed overflow would be undefined) and a signed type's sum has the same bits
// as the unsigned type's (the host runs unsigned sums on the signed types' kernels). 1-byte types
// promote to int, and are truncated back.
template <typename T, bool = std::is_integral<T>::value>
struct Wrapping {
  using type = T;
};
template <typename T>
struct Wrapping<T, true> {
  using type = typename std::make_unsigned<T>::type;
};

// Combines two values (kAvg: sums them). Integers wrap (Wrapping).
template <uint32_t Op, typename T>
__device__ __forceinline__ T apply(T a, T b, uint32_t op) {
  if constexpr (Op == kAnyOp) {
    if (op == kMax) return apply<kMax>(a, b, op);
    if (op == kMin) return apply<kMin>(a, b, op);
    if (op == kProd) return apply<kProd>(a, b, op);
    return apply<kSum>(a, b, op);  // kSum, kAvg
  } else if constexpr (Op == kMax) {
    return a > b ? a : b;
  } else if constexpr (Op == kMin) {
    return a < b ? a : b;
  } else if constexpr (Op == kProd) {
    using W = typename Wrapping<T>::type;
    return T(W(a) * W(b));
  } else {
    using W = typename Wrapping<T>::type;
    return T(W(a) + W(b));
  }
}
// Half types reduce through float, so the rule is the same on every architecture.
template <uint32_t Op>
__device__ __forceinline__ __half apply(__half a, __half b, uint32_t op) {
  return __float2half(apply<Op>(__half2float(a), __half2float(b), op));
}
template <uint32_t Op>
__device__ __forceinline__ __nv_bfloat16 apply(__nv_bfloat16 a, __nv_bfloat16 b, uint32_t op) {
  return __float2bfloat16(apply<Op>(__bfloat162float(a), __bfloat162float(b), op));
}

// Four 1-byte lanes of a 32-bit word combined at once with the SIMD video intrinsics (kProd has
// none: the caller multiplies lane by lane). The same bits as apply lane by lane.
template <typename T, uint32_t Op>
__device__ __forceinline__ uint32_t applyBytes4(uint32_t a, uint32_t b) {
  static_assert(sizeof(T) == 1 && Op != kProd, "1-byte lanes, not kProd");
  constexpr bool kSigned = std::is_signed<T>::value;
  if constexpr (Op == kMax) return kSigned ? __vmaxs4(a, b) : __vmaxu4(a, b);
  if constexpr (Op == kMin) return kSigned ? __vmins4(a, b) : __vminu4(a, b);
  return __vadd4(a, b);
}

// Reduces the elements of type T packed in two words of type W (uint64_t or uint4), lane by lane.
template <typename T, uint32_t Op, typename W>
__device__ __forceinline__ W applyWord(W a, const W& b, uint32_t op) {
  if constexpr (Op == kAnyOp) {
    switch (op) {
      case kMax: return applyWord<T, kMax>(a, b, op);
      case kMin: return applyWord<T, kMin>(a, b, op);
      case kProd: return applyWord<T, kProd>(a, b, op);
      default: return applyWord<T, kSum>(a, b, op);  // kSum, kAvg
    }
  } else if constexpr (sizeof(T) == 1 && Op != kProd) {
    constexpr int kWords = sizeof(W) / sizeof(uint32_t);
    uint32_t* x = reinterpret_cast<uint32_t*>(&a);
    const uint32_t* y = reinterpret_cast<const uint32_t*>(&b);
#pragma unroll
    for (int i = 0; i < kWords; ++i) x[i] = applyBytes4<T, Op>(x[i], y[i]);
  } else {
    constexpr int kLanes = sizeof(W) / sizeof(T);
    T* x = reinterpret_cast<T*>(&a);
    const T* y = reinterpret_cast<const T*>(&b);
#pragma unroll
    for (int i = 0; i < kLanes; ++i) x[i] = apply<Op>(x[i], y[i], op);
  }
  return a;
}

// x / n for n < 2^16 (ranks), in 32-bit divisions: long division in base 2^16. A 64-bit division
// (integer or double) calls a subroutine, and that call made packet2's 8-byte kernels spill.
__device__ __forceinline__ uint64_t divideByRanks(uint64_t x, uint32_t n) {
  const uint32_t hi = uint32_t(x >> 32), lo = uint32_t(x);
  const uint32_t mid = (hi % n) << 16 | lo >> 16;     // < n * 2^16
  const uint32_t low = (mid % n) << 16 | (lo & 0xffffu);  // < n * 2^16
  return uint64_t(hi / n) << 32 | uint64_t(mid / n) << 16 | (low / n);
}
// x / n for a double, without a division: the reciprocal of n from the float unit's estimate
// (about 23 bits) refined by two Newton steps to double precision, the quotient corrected once by
// its residual. Within one rounding step of x / n (exact when n is a power of 2).
__device__ __forceinline__ double divideByRanks(double x, uint32_t n) {
  const double dn = double(n);
  double r = double(__fdividef(1.0f, float(n)));
  r = r * fma(-dn, r, 2.0);
  r = r * fma(-dn, r, 2.0);
  const double q = x * r;
  return isfinite(q) ? fma(fma(-q, dn, x), r, q) : q;
}

// The last step of a reduction of n ranks' values, applied once to the result: kAvg divides the
// sum by n (n < 2^16); the other operators keep it as it is. Integers truncate toward zero, 1- to
// 4-byte ones divided in 32 bits, 8-byte ones by divideByRanks; float32 divides with IEEE round to
// nearest; float16 and bfloat16 divide their sum, as the type holds it, in float and round once
// to the type (the correctly rounded quotient); float64 by divideByRanks (within a rounding step).
template <uint32_t Op, typename T>
__device__ __forceinline__ T finish(T acc, uint32_t n, uint32_t op) {
  if constexpr (Op == kAnyOp) {
    return op == kAvg ? finish<kAvg>(acc, n, op) : acc;
  } else if constexpr (Op != kAvg) {
    return acc;
  } else if constexpr (std::is_same<T, __half>::value) {
    return __float2half(__half2float(acc) / float(n));
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    return __float2bfloat16(__bfloat162float(acc) / float(n));
  } else if constexpr (std::is_same<T, double>::value) {
    return divideByRanks(acc, n);
  } else if constexpr (std::is_integral<T>::value && sizeof(T) == 8) {
    const bool negative = std::is_signed<T>::value && acc < 0;
    const uint64_t magnitude = negative ? 0 - uint64_t(acc) : uint64_t(acc);
    const uint64_t q = divideByRanks(magnitude, n);
    return T(negative ? 0 - q : q);
  } else if constexpr (std::is_integral<T>::value) {
    using Wide = typename std::conditional<std::is_signed<T>::value, int32_t, uint32_t>::type;
    return T(Wide(acc) / Wide(n));
  } else {
    return acc / T(n);
  }
}
// finish for every lane of a word of type W (uint64_t or uint4) of elements of type T.
template <typename T, uint32_t Op, typename W>
__device__ __forceinline__ W finishWord(W a, uint32_t n, uint32_t op) {
  if constexpr (Op == kAnyOp) {
    return op == kAvg ? finishWord<T, kAvg>(a, n, op) : a;
  } else if constexpr (Op == kAvg) {
    constexpr int kLanes = sizeof(W) / sizeof(T);
    T* x = reinterpret_cast<T*>(&a);
#pragma unroll
    for (int i = 0; i < kLanes; ++i) x[i] = finish<Op>(x[i], n, op);
  }
  return a;
}

// ---- 8-byte words of byte streams of any alignment ---------------------------------------------

// p is n-byte aligned (n a power of two).
__device__ __forceinline__ bool aligned(const void* p, uint64_t n) { return (reinterpret_cast<uintptr_t>(p) & (n - 1)) == 0; }

// Word i (bytes [8i, 8i+8)) of the `bytes` bytes at p; bytes past the end read as zero.
// wordAligned: p is 8-byte aligned (then whole words are read with one load).
__device__ __forceinline__ uint64_t loadWord(const char* p, uint64_t i, uint64_t bytes, bool wordAligned) {
  const uint64_t at = i * 8;
  if (wordAligned && at + 8 <= bytes) return reinterpret_cast<const uint64_t*>(p)[i];
  // A partial word (the end of the buffer, or an unaligned one): its first half with one 32-bit
  // load where that is 4-byte aligned and whole, the rest with byte loads, unrolled so that they
  // are in flight at once, into two 32-bit halves (a 64-bit accumulator made packet kernels spill
  // on sm_80; a loop that used each byte before loading the next waited a memory latency per
  // byte). storeWord stores the same way. The 32-bit halves took the 2-rank AllGather of 8 B (a
  // float per rank) from 2.35-2.37 us to 2.21-2.23 (2 x H200, graph, session 22).
  const uint64_t n = bytes - at;
  uint32_t lo = 0, hi = 0;
  if (n >= 4 && aligned(p + at, 4)) {
    lo = *reinterpret_cast<const uint32_t*>(p + at);
  } else {
#pragma unroll
    for (uint32_t k = 0; k < 4; ++k) {
      if (k < n) lo |= uint32_t(static_cast<unsigned char>(p[at + k])) << (8 * k);
    }
  }
#pragma unroll
  for (uint32_t k = 0; k < 4; ++k) {
    if (k + 4 < n) hi |= uint32_t(static_cast<unsigned char>(p[at + 4 + k])) << (8 * k);
  }
  return uint64_t(hi) << 32 | lo;
}
// Stores word i at p, only the bytes before `bytes`.
__device__ __forceinline__ void storeWord(char* p, uint64_t i, uint64_t bytes, bool wordAligned, uint64_t v) {
  const uint64_t at = i * 8;
  if (wordAligned && at + 8 <= bytes) {
    reinterpret_cast<uint64_t*>(p)[i] = v;
    return;
  }
  // A partial word: a 32-bit store for its first half where that is 4-byte aligned and whole
  // (loadWord says why), byte stores for the rest.
  uint64_t k = 0;
  if (at + 4 <= bytes && aligned(p + at, 4)) {
    *reinterpret_cast<uint32_t*>(p + at) = uint32_t(v);
    k = 4;
  }
  for (; k < 8 && at + k < bytes; ++k) p[at + k] = static_cast<char>(v >> (8 * k));
}

// ---- Copies ------------------------------------------------------------------------------------

// Copies `bytes` bytes from src to nDst destinations, dst(0) .. dst(nDst - 1), over numThreads
// threads. When src and every destination are 16-byte aligned, each thread loads kCopyUnroll
// 16-byte words per step, all before storing any (one word at a time leaves NVLink idle while a
// load waits), and stores each to every destination; otherwise mscclppCopy per destination.
template <typename DstFn>
__device__ __forceinline__ void broadcastBytes(DstFn dst, uint32_t nDst, const char* src, uint64_t bytes,
                                               uint32_t threadId, uint32_t numThreads) {
  bool vectors = aligned(src, 16);
  for (uint32_t d = 0; d < nDst; ++d) vectors = vectors && aligned(dst(d), 16);
  if (!vectors) {
    for (uint32_t d = 0; d < nDst; ++d) mscclppCopy(dst(d), src, bytes, threadId, numThreads);
    return;
  }
  const uint4* s = reinterpret_cast<const uint4*>(src);
  const uint64_t words = bytes / 16;
  const uint64_t step = uint64_t(numThreads) * kCopyUnroll;
  uint64_t i = threadId;
  for (; i + (kCopyUnroll - 1) * numThreads < words; i += step) {
    uint4 v[kCopyUnroll];
#pragma unroll
    for (int k = 0; k < kCopyUnroll; ++k) v[k] = s[i + k * numThreads];
    for (uint32_t d = 0; d < nDst; ++d) {
      uint4* o = reinterpret_cast<uint4*>(dst(d));
#pragma unroll
      for (int k = 0; k < kCopyUnroll; ++k) o[i + k * numThreads] = v[k];
    }
  }
  for (; i < words; i += numThreads) {
    const uint4 v = s[i];
    for (uint32_t d = 0; d < nDst; ++d) reinterpret_cast<uint4*>(dst(d))[i] = v;
  }
  for (uint64_t b = words * 16 + threadId; b < bytes; b += numThreads) {
    for (uint32_t d = 0; d < nDst; ++d) dst(d)[b] = src[b];
  }
}

// Copies n pieces, piece d of bytes[d] bytes from src[d] to dst[d] (arrays every thread reads,
// e.g. in shared memory), interleaved: each step moves kCopyUnroll 16-byte words per thread of
// every piece before the next step, so the stores reach every destination at once instead of one
// destination after the other. The words past the shortest piece, and pieces that are not 16-byte
// aligned, are copied per piece.
__device__ __forceinline__ void scatterBytes(const char* const* src, char* const* dst, const uint64_t* bytes,
                                             uint32_t n, uint32_t threadId, uint32_t numThreads) {
  if (n == 0) return;
  uint64_t words = ~uint64_t(0);  // the words every piece has, 16-byte aligned on both sides
  for (uint32_t d = 0; d < n; ++d) {
    const bool vectors = aligned(src[d], 16) && aligned(dst[d], 16);
    words = vectors ? min(words, bytes[d] / 16) : 0;
  }
  const uint64_t step = uint64_t(numThreads) * kCopyUnroll;
  uint64_t i = threadId;
  for (; i + (kCopyUnroll - 1) * numThreads < words; i += step) {
    for (uint32_t d = 0; d < n; ++d) {
      const uint4* s = reinterpret_cast<const uint4*>(src[d]);
      uint4* o = reinterpret_cast<uint4*>(dst[d]);
      uint4 v[kCopyUnroll];
#pragma unroll
      for (int k = 0; k < kCopyUnroll; ++k) v[k] = s[i + k * numThreads];
#pragma unroll
      for (int k = 0; k < kCopyUnroll; ++k) o[i + k * numThreads] = v[k];
    }
  }
  for (; i < words; i += numThreads) {
    for (uint32_t d = 0; d < n; ++d) reinterpret_cast<uint4*>(dst[d])[i] = reinterpret_cast<const uint4*>(src[d])[i];
  }
  for (uint32_t d = 0; d < n; ++d) {
    mscclppCopy(dst[d] + words * 16, src[d] + words * 16, bytes[d] - words * 16, threadId, numThreads);
  }
}

// Copies `bytes` bytes from src to dst over numThreads threads: broadcastBytes to one destination.
__device__ __forceinline__ void copyBytes(void* dst, const void* src, uint64_t bytes, uint32_t threadId,
                                          uint32_t numThreads) {
  broadcastBytes([dst](uint32_t) { return static_cast<char*>(dst); }, 1, static_cast<const char*>(src), bytes,
                 threadId, numThreads);
}

// The packet flag of call number `calls`: never 0, the value of packet memory nobody wrote, so
// after 2^32 - 1 calls the flags wrap to 1 instead of 0.
__device__ __forceinline__ uint32_t packetFlag(uint32_t calls) { return calls % 0xffffffffu + 1; }

// ---- Waiting (wait.cuh) -------------------------------------------------------------------------

// Polls ready() until it returns true; the wait ends early as wait.cuh says.
template <typename Ready>
__device__ __forceinline__ void waitUntil(const Args& a, Ready ready) {
  spinUntil(a.abort, a.maxSpins, ready);
}
// Waits for packet *p to carry flag and returns its word.
__device__ __forceinline__ uint64_t waitPacket(const Args& a, const mscclppLL16Packet* p, uint32_t flag) {
  uint64_t v = 0;
  waitUntil(a, [&] { return p->readOnce(flag, &v); });
  return v;
}
// Waits for the next signal of a memory or port channel (its poll() consumes it, with acquire).
template <typename Channel>
__device__ __forceinline__ void waitSignal(const Args& a, Channel& ch) {
  waitUntil(a, [&] { return ch.poll(); });
}
// A port channel's flush(): returns once the proxy has completed every earlier request of the
// channel's FIFO. Queuing the request itself spins only while the ring is full, which the proxy,
// running until the communicator closes, ends.
__device__ __forceinline__ void flushPorts(const Args& a, mscclppPortChannelDeviceHandle& ch) {
  const uint64_t n = ch.fifo.push(MSCCLPP_TRIGGER_SYNC, 0, 0, MSCCLPP_TRIGGER_NO_DATA_SIZE, ch.channelId);
  waitUntil(a, [&] { return ch.fifo.released(n); });
  mscclppFenceSys();
}

// ---- Packets ------------------------------------------------------------------------------------

// Writes word v, flagged, as packet i of the slot at slotOffset in every peer's scratch.
__device__ __forceinline__ void writePacketToPeers(const Args& a, uint64_t slotOffset, uint64_t i, uint64_t v,
                                                   uint32_t flag) {
  for (uint32_t p = 0; p < a.nRanks - 1; ++p) {
    char* peerScratch = static_cast<char*>(a.channels[p].dst);
    reinterpret_cast<mscclppLL16Packet*>(peerScratch + slotOffset)[i].write(v, flag);
  }
}
// Waits for packet i of the slot at slotOffset in this rank's scratch and returns its word.
__device__ __forceinline__ uint64_t readPacket(const Args& a, uint64_t slotOffset, uint64_t i, uint32_t flag) {
  return waitPacket(a, reinterpret_cast<const mscclppLL16Packet*>(a.scratch + slotOffset) + i, flag);
}

// Writes the `bytes` bytes at src, as packets flagged with flag, into the slot at slotOffset of
// every peer's scratch, and stores them at out too unless out is src; thread tid of nThreads.
__device__ __forceinline__ void sendPackets(const Args& a, uint64_t slotOffset, const char* src, char* out,
                                            uint64_t bytes, uint32_t flag, uint64_t tid, uint64_t nThreads) {
  const uint64_t words = ceilDiv(bytes, mscclppLL16Packet::kPayloadBytes);
  const bool srcAligned = aligned(src, 8), outAligned = aligned(out, 8), copy = out != src;
  for (uint64_t i = tid; i < words; i += nThreads) {
    const uint64_t v = loadWord(src, i, bytes, srcAligned);
    writePacketToPeers(a, slotOffset, i, v, flag);
    if (copy) storeWord(out, i, bytes, outAligned, v);
  }
}
// Waits for the `bytes` bytes of packets in the slot at slotOffset of this rank's scratch and
// stores them at out; thread tid of nThreads.
__device__ __forceinline__ void receivePackets(const Args& a, uint64_t slotOffset, char* out, uint64_t bytes,
                                               uint32_t flag, uint64_t tid, uint64_t nThreads) {
  const uint64_t words = ceilDiv(bytes, mscclppLL16Packet::kPayloadBytes);
  const bool outAligned = aligned(out, 8);
  for (uint64_t i = tid; i < words; i += nThreads) storeWord(out, i, bytes, outAligned, readPacket(a, slotOffset, i, flag));
}

// Word i of this rank's `bytes` bytes at mine (mineAligned: 8-byte aligned) reduced, in rank
// order, with word i of every peer's packets in its reduce slot of `parity`, and finished (kAvg:
// divided by the number of ranks; lanes past `bytes` are zeros, divided harmlessly).
template <typename T, uint32_t Op>
__device__ __forceinline__ uint64_t reducePacketWord(const Args& a, uint32_t parity, uint32_t flag, const char* mine,
                                                     uint64_t bytes, bool mineAligned, uint64_t i) {
  uint64_t acc = 0;
  for (uint32_t r = 0; r < a.nRanks; ++r) {
    uint64_t v;
    if (r == a.rank) {
      v = loadWord(mine, i, bytes, mineAligned);
    } else {
      v = readPacket(a, packetSlotOffset(a, parity, kPacketReduce, r), i, flag);
    }
    acc = r == 0 ? v : applyWord<T, Op>(acc, v, uint32_t(a.op));
  }
  return finishWord<T, Op>(acc, uint32_t(a.nRanks), uint32_t(a.op));
}

// The reduce-scatter of the two-shot packet kernels (AllReduce packet2, ReduceScatter packet):
// the `total` bytes at send are cut into shards of shardBytes (the last may be shorter), a
// multiple of the element size. This rank's bytes of every peer's shard go, as packets, into its
// reduce slot on that peer; then every word of this rank's shard, reduced in rank order, goes to
// out(i, word).
template <typename T, uint32_t Op, typename Out>
__device__ __forceinline__ void packetReduceScatter(const Args& a, uint32_t parity, uint32_t flag, const char* send,
                                                    uint64_t shardBytes, uint64_t total, Out out) {
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nThreads = uint64_t(gridDim.x) * blockDim.x;
  const uint64_t mySlot = packetSlotOffset(a, parity, kPacketReduce, a.rank);
  for (uint32_t p = 0; p < a.nRanks - 1; ++p) {
    const uint64_t begin = peerRank(a, p) * shardBytes;
    const uint64_t n = clampLen(begin, shardBytes, total);
    const char* src = send + begin;
    const bool srcAligned = aligned(src, 8);
    mscclppLL16Packet* dst = reinterpret_cast<mscclppLL16Packet*>(static_cast<char*>(a.channels[p].dst) + mySlot);
    const uint64_t words = ceilDiv(n, mscclppLL16Packet::kPayloadBytes);
    for (uint64_t i = tid; i < words; i += nThreads) dst[i].write(loadWord(src, i, n, srcAligned), flag);
  }
  const uint64_t begin = a.rank * shardBytes;
  const uint64_t n = clampLen(begin, shardBytes, total);
  const char* mine = send + begin;
  const bool mineAligned = aligned(mine, 8);
  const uint64_t words = ceilDiv(n, mscclppLL16Packet::kPayloadBytes);
  for (uint64_t i = tid; i < words; i += nThreads) out(i, reducePacketWord<T, Op>(a, parity, flag, mine, n, mineAligned, i));
}

// ---- Registered buffers (zero-copy) -------------------------------------------------------------

// The registration and the offset in it that descriptor desc names (for 0, "no descriptor",
// the registration wraps to a huge value, which registeredBuffer refuses).
__device__ __forceinline__ uint64_t descRegistration(uint64_t desc) { return (desc >> kDescShift) - 1; }
__device__ __forceinline__ uint64_t descOffset(uint64_t desc) { return desc & ((uint64_t(1) << kDescShift) - 1); }

// The address of rank r's buffer that descriptor desc names, checked to hold `bytes` bytes: a
// descriptor outside the registration table, a closed registration or a buffer running past its
// registration traps (the ranks disagree about the call: an error, never a stray write).
__device__ __forceinline__ char* registeredBuffer(const Args& a, uint64_t r, uint64_t desc, uint64_t bytes) {
  const uint64_t k = descRegistration(desc);
  const uint64_t offset = descOffset(desc);
  if (a.regs == nullptr || k >= kMaxRegistrations) __trap();
  const Registration reg = a.regs[k * a.nRanks + r];
  if (offset > reg.size || bytes > reg.size - offset) __trap();
  return reinterpret_cast<char*>(reg.base + offset);
}

// The zero-copy handshake of block `block`: one thread per peer writes this rank's descriptors
// (flagged with this call's packet flag) into the peer's descriptor slot for this rank and waits
// for the peer's into ours. After it, every peer has entered this call (so its send buffer holds
// the call's input and its receive buffer may be written), and peerSend[p] / peerRecv[p] (shared
// memory, one entry per peer index) are the peer's buffers, checked to hold sendBytes and
// recvBytes (a zero count skips the check and the pointer).
__device__ __forceinline__ void exchangeDescriptors(const Args& a, uint32_t block, uint64_t sendBytes,
                                                    uint64_t recvBytes, char** peerSend, char** peerRecv) {
  const uint32_t flag = packetFlag(callsBefore(a.state));
  const uint32_t parity = callsBefore(a.state) & 1;
  const uint32_t p = threadIdx.x;
  if (p < a.nRanks - 1) {
    const uint64_t peer = peerRank(a, p);
    mscclppLL16Packet* theirs =
        reinterpret_cast<mscclppLL16Packet*>(static_cast<char*>(a.channels[p].dst) + descSlotOffset(a, parity, block, a.rank));
    theirs[kDescSend].write(a.sendDesc, flag);
    theirs[kDescRecv].write(a.recvDesc, flag);
    const mscclppLL16Packet* ours =
        reinterpret_cast<const mscclppLL16Packet*>(a.scratch + descSlotOffset(a, parity, block, peer));
    const uint64_t sendDesc = waitPacket(a, &ours[kDescSend], flag);
    const uint64_t recvDesc = waitPacket(a, &ours[kDescRecv], flag);
    if (sendBytes > 0) peerSend[p] = registeredBuffer(a, peer, sendDesc, sendBytes);
    if (recvBytes > 0) peerRecv[p] = registeredBuffer(a, peer, recvDesc, recvBytes);
  }
  syncAfterWaits();
}

// ---- Port channels (copy engines) ----------------------------------------------------------------

// Where peer p's buffer at peerBuf is in that peer's buffer of registration k (a port channel of
// registration k addresses it by that offset), checked to hold `bytes` bytes from there: a buffer
// outside it traps (the ranks disagree about the registration).
__device__ __forceinline__ uint64_t portOffset(const Args& a, uint64_t k, uint32_t p, const char* peerBuf,
                                               uint64_t bytes) {
  const Registration theirs = a.regs[k * a.nRanks + peerRank(a, p)];
  const uint64_t addr = reinterpret_cast<uint64_t>(peerBuf);
  if (addr < theirs.base || addr - theirs.base > theirs.size || bytes > theirs.size - (addr - theirs.base)) {
    __trap();
  }
  return addr - theirs.base;
}

// Queues a copy of n bytes through port channel ch, in requests of at most kMaxPortBytes.
__device__ __forceinline__ void portPut(mscclppPortChannelDeviceHandle& ch, uint64_t dstOffset, uint64_t srcOffset,
                                        uint64_t n) {
  for (uint64_t off = 0; off < n; off += kMaxPortBytes) {
    ch.put(dstOffset + off, srcOffset + off, n - off < kMaxPortBytes ? n - off : kMaxPortBytes);
  }
}

// The end of a call's copies through the port channels of one registration (ports, one per
// peer): signals every peer (after this rank's earlier requests, in FIFO order), waits for the
// proxy to finish this rank's copies (flush) and for every peer's signal (its copies into this
// rank's buffer have landed). Every thread of the block calls it.
__device__ __forceinline__ void finishPortCopies(const Args& a, mscclppPortChannelDeviceHandle* ports) {
  const uint32_t nPeers = a.nRanks - 1;
  if (threadIdx.x == 0) {
    for (uint32_t p = 0; p < nPeers; ++p) ports[p].signal();
    flushPorts(a, ports[0]);  // one FIFO serves every port channel: one flush covers them all
  }
  if (threadIdx.x < nPeers) waitSignal(a, ports[threadIdx.x]);
  syncAfterWaits();
}

// ---- Calls --------------------------------------------------------------------------------------

// Adds this block's part of the call to State.ticks. The next kernel on the stream (or the next
// graph replay) sees the sum: a kernel's end publishes its writes to the kernels after it, so no
// fence is needed (a fence would wait for the block's NVLink stores to be acknowledged, about 0.9
// us on H200, at the end of every call).
// A grid of one block adds with a plain store: the reduction cost it about 0.1 us per call on
// H200 (8 B AllReduce, graph mode, 2.27 us against 2.18). Not inlined: inlined, the branch made
// four packet AllReduce kernels (8- and 16-bit types) and a packet ReduceScatter one spill on sm_80.
__device__ __noinline__ void countBlock(State* s) {
  if (gridDim.x == 1) {
    s->ticks += kCallTicks;
    return;
  }
  atomicAdd(reinterpret_cast<unsigned long long*>(&s->ticks),
            blockIdx.x == 0 ? kCallTicks - (gridDim.x - 1) : 1ull);
}

// Every block calls it last, once its threads no longer need callsBefore.
__device__ __forceinline__ void finishCall(State* s) {
  __syncthreads();
  if (threadIdx.x == 0) countBlock(s);
}

// One thread per peer signals the peer's matching block, then waits for its signal: after the
// barriers, this block's writes before the call are visible to the peer's block, and the peer
// block's writes before its call are visible here (release/acquire, cumulative through bar.sync).
__device__ __forceinline__ void exchangeSignals(const Args& a, uint32_t block) {
  __syncthreads();
  if (threadIdx.x < a.nRanks - 1) {
    mscclppMemoryChannelDeviceHandle ch = channel(a, block, threadIdx.x);
    ch.signal();
    waitSignal(a, ch);
  }
  syncAfterWaits();
}

}  // namespace coll

// The least number of blocks per SM an entry point is compiled for (__launch_bounds__'s second
// argument). COLL_ANY_BLOCKS_PER_SM leaves the register budget to ptxas's heuristic;
// COLL_ONE_BLOCK_PER_SM lets a block have every register of an SM, which the rsag kernels need: every launch has at
// most one block per SM, and without it ptxas capped them at 64 registers and spilled.
#define COLL_ANY_BLOCKS_PER_SM 0
#define COLL_ONE_BLOCK_PER_SM 1

// One extern "C" entry point NAME running KERNEL<T, OP>, for blocks of at most THREADS threads
// and at least MIN_BLOCKS blocks per SM (COLL_*_PER_SM).
#define COLL_REDUCE_ENTRY(NAME, KERNEL, T, OP, THREADS, MIN_BLOCKS)                              \
  extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) NAME(const coll::Args args) { \
    coll::startWaits();                                                                           \
    KERNEL<T, OP>(args);                                                                          \
  }

// The entry points of a reducing kernel, suffixed as collectives.DataType's kernel suffixes:
//   PREFIX_<type>, for the ten element types: every operator, args.op read at run time (kAnyOp);
//   PREFIX_sum_<type>, sum compiled in, the path that matters most, for the seven types whose
//     sums differ: an unsigned type adds as the signed type of its width (two's complement, the
//     same bits), so the host launches that one for it.
// Two instantiations per type rather than one per operator: the kernels' PTX, and the driver's
// time to compile it at the first load, grow with the instantiations.
#define COLL_REDUCE_ENTRIES(PREFIX, KERNEL, THREADS, MIN_BLOCKS)                                \
  COLL_REDUCE_ENTRY(PREFIX##_sum_f32, KERNEL, float, coll::kSum, THREADS, MIN_BLOCKS)           \
  COLL_REDUCE_ENTRY(PREFIX##_sum_f16, KERNEL, __half, coll::kSum, THREADS, MIN_BLOCKS)          \
  COLL_REDUCE_ENTRY(PREFIX##_sum_bf16, KERNEL, __nv_bfloat16, coll::kSum, THREADS, MIN_BLOCKS)  \
  COLL_REDUCE_ENTRY(PREFIX##_sum_f64, KERNEL, double, coll::kSum, THREADS, MIN_BLOCKS)          \
  COLL_REDUCE_ENTRY(PREFIX##_sum_i8, KERNEL, int8_t, coll::kSum, THREADS, MIN_BLOCKS)           \
  COLL_REDUCE_ENTRY(PREFIX##_sum_i32, KERNEL, int32_t, coll::kSum, THREADS, MIN_BLOCKS)         \
  COLL_REDUCE_ENTRY(PREFIX##_sum_i64, KERNEL, int64_t, coll::kSum, THREADS, MIN_BLOCKS)         \
  COLL_REDUCE_ENTRY(PREFIX##_f32, KERNEL, float, coll::kAnyOp, THREADS, MIN_BLOCKS)             \
  COLL_REDUCE_ENTRY(PREFIX##_f16, KERNEL, __half, coll::kAnyOp, THREADS, MIN_BLOCKS)            \
  COLL_REDUCE_ENTRY(PREFIX##_bf16, KERNEL, __nv_bfloat16, coll::kAnyOp, THREADS, MIN_BLOCKS)    \
  COLL_REDUCE_ENTRY(PREFIX##_f64, KERNEL, double, coll::kAnyOp, THREADS, MIN_BLOCKS)            \
  COLL_REDUCE_ENTRY(PREFIX##_i8, KERNEL, int8_t, coll::kAnyOp, THREADS, MIN_BLOCKS)             \
  COLL_REDUCE_ENTRY(PREFIX##_u8, KERNEL, uint8_t, coll::kAnyOp, THREADS, MIN_BLOCKS)            \
  COLL_REDUCE_ENTRY(PREFIX##_i32, KERNEL, int32_t, coll::kAnyOp, THREADS, MIN_BLOCKS)           \
  COLL_REDUCE_ENTRY(PREFIX##_u32, KERNEL, uint32_t, coll::kAnyOp, THREADS, MIN_BLOCKS)          \
  COLL_REDUCE_ENTRY(PREFIX##_i64, KERNEL, int64_t, coll::kAnyOp, THREADS, MIN_BLOCKS)           \
  COLL_REDUCE_ENTRY(PREFIX##_u64, KERNEL, uint64_t, coll::kAnyOp, THREADS, MIN_BLOCKS)

#endif  // MSCCLPP_KERNELS_COMMON_CUH_

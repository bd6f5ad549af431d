// allreduce_direct.cu: zero-copy AllReduce, for send and receive buffers registered on every rank.
//
// The buffer is cut into one shard per rank and each shard into one part per thread block. After
// the descriptor handshake (every peer has entered the call and said where its buffers are), rank
// r reads its shard straight from every rank's send buffer, reduces it in rank order and writes
// the result straight into every rank's receive buffer; then it signals the peers and waits for
// theirs. No scratch: each element crosses the links once to be reduced and once to be
// delivered. In place is safe: only rank r reads or writes shard r, and each element is read
// before the same thread writes it.
#include "common.cuh"

namespace coll {

// Vectors each thread keeps in flight per rank: the reads cross the links, so several per thread
// hide their latency.
constexpr uint32_t kDirectUnroll = 2;

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreduceDirect(const Args& a) {
  constexpr uint64_t kVec = sizeof(uint4) / sizeof(T);
  __shared__ char* peerSend[kMaxZeroCopyPeers];
  __shared__ char* peerRecv[kMaxZeroCopyPeers];
  const uint32_t block = blockIdx.x;
  const uint32_t nPeers = a.nRanks - 1;
  const uint64_t count = a.count;
  exchangeDescriptors(a, block, count * sizeof(T), count * sizeof(T), peerSend, peerRecv);

  const uint64_t shard = roundUp(ceilDiv(count, a.nRanks), kVec);
  const uint64_t part = roundUp(ceilDiv(shard, gridDim.x), kVec);
  const uint64_t partBegin = block * part;
  const uint64_t begin = a.rank * shard + partBegin;
  const uint64_t len = clampLen(begin, clampLen(partBegin, part, shard), count);
  // Rank r's send and receive buffers, from element `begin` on.
  auto sendOf = [&](uint32_t r) -> const T* {
    const char* base = r == a.rank ? static_cast<const char*>(a.send) : peerSend[peerIndex(a, r)];
    return reinterpret_cast<const T*>(base) + begin;
  };
  auto recvOf = [&](uint32_t p) -> T* { return reinterpret_cast<T*>(peerRecv[p]) + begin; };
  T* out = static_cast<T*>(a.recv) + begin;

  bool vectors = aligned(sendOf(a.rank), 16) && aligned(out, 16);
  for (uint32_t p = 0; p < nPeers; ++p) vectors = vectors && aligned(peerSend[p], 16) && aligned(peerRecv[p], 16);
  uint64_t done = 0;
  if (vectors) {
    const uint64_t vecs = len / kVec;
    const uint64_t step = uint64_t(blockDim.x) * kDirectUnroll;
    uint64_t v = threadIdx.x;
    for (; v + (kDirectUnroll - 1) * blockDim.x < vecs; v += step) {
      // Every rank's vectors are loaded before any is reduced, so the loads overlap.
      uint4 x[kUnrollRanks][kDirectUnroll];
#pragma unroll
      for (uint32_t r = 0; r < kUnrollRanks; ++r) {
        if (r < a.nRanks) {
#pragma unroll
          for (uint32_t u = 0; u < kDirectUnroll; ++u) x[r][u] = reinterpret_cast<const uint4*>(sendOf(r))[v + u * blockDim.x];
        }
      }
#pragma unroll
      for (uint32_t u = 0; u < kDirectUnroll; ++u) {
        uint4 acc = x[0][u];
#pragma unroll
        for (uint32_t r = 1; r < kUnrollRanks; ++r) {
          if (r < a.nRanks) acc = applyWord<T, Op>(acc, x[r][u]);
        }
        for (uint32_t r = kUnrollRanks; r < a.nRanks; ++r) {
          acc = applyWord<T, Op>(acc, reinterpret_cast<const uint4*>(sendOf(r))[v + u * blockDim.x]);
        }
        reinterpret_cast<uint4*>(out)[v + u * blockDim.x] = acc;
        for (uint32_t i = 0; i < nPeers; ++i) {
          reinterpret_cast<uint4*>(recvOf(rotatedPeer(a, i)))[v + u * blockDim.x] = acc;
        }
      }
    }
    for (; v < vecs; v += blockDim.x) {
      uint4 acc = reinterpret_cast<const uint4*>(sendOf(0))[v];
      for (uint32_t r = 1; r < a.nRanks; ++r) acc = applyWord<T, Op>(acc, reinterpret_cast<const uint4*>(sendOf(r))[v]);
      reinterpret_cast<uint4*>(out)[v] = acc;
      for (uint32_t p = 0; p < nPeers; ++p) reinterpret_cast<uint4*>(recvOf(p))[v] = acc;
    }
    done = vecs * kVec;
  }
  for (uint64_t e = done + threadIdx.x; e < len; e += blockDim.x) {
    T acc = sendOf(0)[e];
    for (uint32_t r = 1; r < a.nRanks; ++r) acc = apply<Op>(acc, sendOf(r)[e]);
    out[e] = acc;
    for (uint32_t p = 0; p < nPeers; ++p) recvOf(p)[e] = acc;
  }
  exchangeSignals(a, block);
  finishCall(a.state);
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_allreduce_direct, coll::allreduceDirect, coll::kRsagThreads)

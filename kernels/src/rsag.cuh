// rsag.cuh: the reduce-scatter round that the rsag AllReduce kernels (allreduce_rsag.cu,
// allreduce_rsag_port.cu) and the ReduceScatter put kernel (reducescatter_put.cu) share: this
// rank's pieces of the peers' shards go into the peers' reduce slots, and after a signal exchange
// this rank reduces its own shard's piece.
#ifndef MSCCLPP_KERNELS_RSAG_CUH_
#define MSCCLPP_KERNELS_RSAG_CUH_

#include "common.cuh"
#include "reduce.cuh"

namespace coll {

// The two regions of a data bank: the peers' inputs to reduce, and the reduced pieces they send.
enum Region : uint32_t { kReduceSlots = 0, kGatherSlots = 1 };

// AllReduces of at least kScatterTogetherMinBytes on 3 to kMaxZeroCopyPeers + 1 ranks store the
// pieces of a round to every peer at once (interleaved, scatterBytes) instead of one peer after
// the other: on 4 x H200 that made 1 GiB 2-4 % faster and 128 MiB 1 % slower (docs/PERFORMANCE.md).
constexpr uint64_t kScatterTogetherMinBytes = uint64_t(256) << 20;

// Ranks whose words the rsag kernels' reduction loads at once. 4 rather than kUnrollRanks: the
// kernel is smaller (f32 on sm_90: 100 registers against 127) and ran 2-rank AllReduces of 1-4
// MiB 0.4-0.9 us faster on H200s (docs/PERFORMANCE.md); past 4 ranks the rest are loaded one at a
// time.
constexpr uint32_t kRsagBatch = 4;

// Step 1 of a round: copies this rank's n elements at `off` of every peer's shard (shard elements
// each, the input count elements in all) from send into that peer's reduce slot for this rank in
// `bank`, the peers in ring order from this rank.
template <typename T>
__device__ __forceinline__ void scatterPieces(const Args& a, uint32_t bank, uint32_t block, const T* send,
                                              uint64_t shard, uint64_t count, uint64_t off, uint64_t n) {
  const uint32_t nPeers = a.nRanks - 1;
  auto piece = [&](uint32_t i, const char*& src, char*& dst, uint64_t& bytes) {
    const uint32_t p = rotatedPeer(a, i);
    const uint64_t begin = peerRank(a, p) * shard + off;
    src = reinterpret_cast<const char*>(send + begin);
    dst = static_cast<char*>(channel(a, block, p).dst) + dataSlotOffset(a, bank, kReduceSlots, a.rank, block);
    bytes = clampLen(begin, n, count) * sizeof(T);
  };
  if (nPeers < 2 || nPeers > kMaxZeroCopyPeers || count * sizeof(T) < kScatterTogetherMinBytes) {
    for (uint32_t i = 0; i < nPeers; ++i) {
      const char* src;
      char* dst;
      uint64_t bytes;
      piece(i, src, dst, bytes);
      copyBytes(dst, src, bytes, threadIdx.x, blockDim.x);
    }
    return;
  }
  __shared__ const char* srcs[kMaxZeroCopyPeers];
  __shared__ char* dsts[kMaxZeroCopyPeers];
  __shared__ uint64_t sizes[kMaxZeroCopyPeers];
  if (threadIdx.x < nPeers) piece(threadIdx.x, srcs[threadIdx.x], dsts[threadIdx.x], sizes[threadIdx.x]);
  __syncthreads();
  scatterBytes(srcs, dsts, sizes, nPeers, threadIdx.x, blockDim.x);
}

// Step 3 of a round: reduces len elements of this rank's shard: this rank's input at `in` and the
// peers' reduce slots of `bank`, in rank order; stores the result at out and at peerOut(p) for the
// first nPeerOut peers around the ring (where that piece goes on that peer: its gather slot for
// this rank, or its receive buffer; none when nPeerOut is 0).
// Batch: how many ranks' words are loaded at once (reduceWords).
template <typename T, uint32_t Op, uint32_t Batch = kUnrollRanks, typename PeerOut>
__device__ __forceinline__ void reduceAndBroadcast(const Args& a, uint32_t bank, uint32_t block, const T* in, T* out,
                                                   uint64_t len, PeerOut peerOut, uint32_t nPeerOut) {
  auto src = [&](uint32_t r) -> const T* {
    return r == a.rank ? in : reinterpret_cast<const T*>(a.scratch + dataSlotOffset(a, bank, kReduceSlots, r, block));
  };
  auto dst = [&](uint32_t i) -> T* { return i == 0 ? out : peerOut(rotatedPeer(a, i - 1)); };
  reduceToAll<T, Op, 1, Batch>(src, a.nRanks, dst, 1 + nPeerOut, len, threadIdx.x, blockDim.x, uint32_t(a.op));
}

// The rounds of the scratch's data banks: block b of every rank handles part b of `total`
// elements, in rounds of at most a data slot, alternating between the two banks (State.rounds).
// Each round calls fill(bank, off, n) (this rank's stores into the peers' slots), exchanges
// signals with the peers, and calls rest(bank, off, n) for the rest of the round: n elements at
// `off`. A round writes the bank the peers read two rounds before, and they signalled the round
// between only after that read.
template <typename T, typename Fill, typename Rest>
__device__ __forceinline__ void bankRounds(const Args& a, uint64_t total, Fill fill, Rest rest) {
  constexpr uint64_t kVec = sizeof(uint4) / sizeof(T);
  const uint32_t block = blockIdx.x;
  const uint64_t part = roundUp(ceilDiv(total, gridDim.x), kVec);
  const uint64_t chunk = a.chunkBytes / sizeof(T);
  const uint64_t partBegin = block * part;
  const uint64_t partEnd = partBegin + clampLen(partBegin, part, total);
  uint32_t round = a.state->rounds[block];
  for (uint64_t off = partBegin; off < partEnd; off += chunk, ++round) {
    const uint32_t bank = round & 1;
    const uint64_t n = partEnd - off < chunk ? partEnd - off : chunk;
    fill(bank, off, n);
    exchangeSignals(a, block);
    rest(bank, off, n);
  }
  __syncthreads();
  if (threadIdx.x == 0) a.state->rounds[block] = round;
}

// The rounds of a reduce-scatter: bankRounds over a shard (shard elements of each rank's, count
// in all), each round scattering this rank's pieces of every peer's shard (step 1) before the
// signal exchange (step 2); rest(bank, off, n) gets n elements at `off` of every shard.
template <typename T, typename Rest>
__device__ __forceinline__ void reduceScatterRounds(const Args& a, uint64_t shard, uint64_t count, Rest rest) {
  bankRounds<T>(
      a, shard,
      [&](uint32_t bank, uint64_t off, uint64_t n) {
        scatterPieces(a, bank, blockIdx.x, static_cast<const T*>(a.send), shard, count, off, n);
      },
      rest);
}

}  // namespace coll

#endif  // MSCCLPP_KERNELS_RSAG_CUH_

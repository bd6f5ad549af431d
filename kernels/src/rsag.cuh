// rsag.cuh: the reduce-scatter round that the rsag AllReduce kernels share (allreduce_rsag.cu,
// allreduce_rsag_port.cu): this rank's pieces of the peers' shards go into the peers' reduce
// slots, and after a signal exchange this rank reduces its own shard's piece.
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

// Step 1 of a round: copies this rank's n elements at `off` of every peer's shard (shard elements
// each) from send into that peer's reduce slot for this rank in `bank`, the peers in ring order
// from this rank.
template <typename T>
__device__ __forceinline__ void scatterPieces(const Args& a, uint32_t bank, uint32_t block, const T* send,
                                              uint64_t shard, uint64_t off, uint64_t n) {
  const uint32_t nPeers = a.nRanks - 1;
  auto piece = [&](uint32_t i, const char*& src, char*& dst, uint64_t& bytes) {
    const uint32_t p = rotatedPeer(a, i);
    const uint64_t begin = peerRank(a, p) * shard + off;
    src = reinterpret_cast<const char*>(send + begin);
    dst = static_cast<char*>(channel(a, block, p).dst) + dataSlotOffset(a, bank, kReduceSlots, a.rank, block);
    bytes = clampLen(begin, n, a.count) * sizeof(T);
  };
  if (nPeers < 2 || nPeers > kMaxZeroCopyPeers || a.count * sizeof(T) < kScatterTogetherMinBytes) {
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

// Step 3 of a round: reduces len elements of this rank's shard at element `begin`: this rank's
// input and the peers' reduce slots of `bank`, in rank order; stores the result in the output
// and at peerOut(p) for the first nPeerOut peers around the ring (where element `begin` goes on
// that peer: its gather slot for this rank, or its receive buffer; none when nPeerOut is 0).
// Batch: how many ranks' words are loaded at once (reduceWords).
template <typename T, uint32_t Op, uint32_t Batch = kUnrollRanks, typename PeerOut>
__device__ __forceinline__ void reduceAndBroadcast(const Args& a, uint32_t bank, uint32_t block, uint64_t begin,
                                                   uint64_t len, PeerOut peerOut, uint32_t nPeerOut) {
  const T* in = static_cast<const T*>(a.send) + begin;
  T* out = static_cast<T*>(a.recv) + begin;
  auto src = [&](uint32_t r) -> const T* {
    return r == a.rank ? in : reinterpret_cast<const T*>(a.scratch + dataSlotOffset(a, bank, kReduceSlots, r, block));
  };
  auto dst = [&](uint32_t i) -> T* { return i == 0 ? out : peerOut(rotatedPeer(a, i - 1)); };
  reduceToAll<T, Op, 1, Batch>(src, a.nRanks, dst, 1 + nPeerOut, len, threadIdx.x, blockDim.x);
}

}  // namespace coll

#endif  // MSCCLPP_KERNELS_RSAG_CUH_

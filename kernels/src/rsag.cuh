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

// Step 1 of a round: copies this rank's n elements at `off` of every peer's shard (shard elements
// each) from send into that peer's reduce slot for this rank in `bank`, the peers around the ring.
template <typename T>
__device__ __forceinline__ void scatterPieces(const Args& a, uint32_t bank, uint32_t block, const T* send,
                                              uint64_t shard, uint64_t off, uint64_t n) {
  for (uint32_t i = 0; i < a.nRanks - 1; ++i) {
    const uint32_t p = rotatedPeer(a, i);
    const uint64_t begin = peerRank(a, p) * shard + off;
    char* slot = static_cast<char*>(channel(a, block, p).dst) + dataSlotOffset(a, bank, kReduceSlots, a.rank, block);
    copyBytes(slot, send + begin, clampLen(begin, n, a.count) * sizeof(T), threadIdx.x, blockDim.x);
  }
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

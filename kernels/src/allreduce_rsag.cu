// allreduce_rsag.cu: two-shot AllReduce (reduce-scatter, then all-gather) over memory channels,
// for medium and large messages.
//
// The buffer is cut into one shard per rank and each shard into one part per thread block; block
// b of every rank handles part b of every shard, in rounds of at most chunkBytes, and talks only
// to block b of the peers (its own semaphores, its own scratch slots). One round:
//   1. scatter: copy this rank's piece of each peer's shard into the peer's reduce slot for us;
//   2. signal the peers, wait for theirs;
//   3. reduce our shard's piece (all ranks, in rank order), store it in the output and in every
//      peer's gather slot for us;
//   4. signal, wait;
//   5. copy the peers' reduced pieces from our gather slots into the output.
// Rounds alternate between two banks of slots (State.rounds), so the writes of the next round
// never land on slots a slow peer still reads; the signals of each round order the rest.
// mscclpp_allreduce_rsag_direct is the zero-copy variant for registered receive buffers: step 3
// writes into the peers' receive buffers, steps 4 and 5 drop out (see allreduceRsag).
#include "rsag.cuh"

namespace coll {

// Direct: the receive buffers are registered: step 3 writes the reduced piece straight into
// every peer's receive buffer (found by the descriptor handshake first), so steps 4 and 5 drop
// out and one signal exchange after the last round says that every peer's writes have landed.
template <typename T, uint32_t Op, bool Direct>
__device__ __forceinline__ void allreduceRsag(const Args& a) {
  constexpr uint64_t kVec = sizeof(uint4) / sizeof(T);
  __shared__ char* peerRecv[Direct ? kMaxZeroCopyPeers : 1];
  const uint32_t block = blockIdx.x;
  const uint32_t nPeers = a.nRanks - 1;
  const uint64_t count = a.count;
  if (Direct) exchangeDescriptors(a, block, 0, count * sizeof(T), nullptr, peerRecv);
  const uint64_t shard = roundUp(ceilDiv(count, a.nRanks), kVec);  // the same nominal size for every rank
  const T* send = static_cast<const T*>(a.send);
  T* recv = static_cast<T*>(a.recv);

  reduceScatterRounds<T>(a, shard, count, [&](uint32_t bank, uint64_t off, uint64_t n) {
    const uint64_t mine = a.rank * shard + off;
    const uint64_t len = clampLen(mine, n, count);
    if (Direct) {
      reduceAndBroadcast<T, Op, kRsagBatch>(a, bank, block, send + mine, recv + mine, len,
                                            [&](uint32_t p) { return reinterpret_cast<T*>(peerRecv[p]) + mine; },
                                            nPeers);
      return;
    }
    const uint64_t gatherSlot = dataSlotOffset(a, bank, kGatherSlots, a.rank, block);
    reduceAndBroadcast<T, Op, kRsagBatch>(a, bank, block, send + mine, recv + mine, len, [&](uint32_t p) {
      return reinterpret_cast<T*>(static_cast<char*>(channel(a, block, p).dst) + gatherSlot);
    }, nPeers);
    exchangeSignals(a, block);
    for (uint32_t i = 0; i < nPeers; ++i) {
      const uint64_t r = peerRank(a, rotatedPeer(a, i));
      const uint64_t begin = r * shard + off;
      copyBytes(recv + begin, a.scratch + dataSlotOffset(a, bank, kGatherSlots, r, block),
                clampLen(begin, n, count) * sizeof(T), threadIdx.x, blockDim.x);
    }
  });
  if (Direct) exchangeSignals(a, block);
  finishCall(a.state);
}

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreduceRsagScratch(const Args& a) {
  allreduceRsag<T, Op, false>(a);
}
template <typename T, uint32_t Op>
__device__ __forceinline__ void allreduceRsagDirect(const Args& a) {
  allreduceRsag<T, Op, true>(a);
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_allreduce_rsag, coll::allreduceRsagScratch, coll::kRsagThreads, COLL_ONE_BLOCK_PER_SM)
COLL_REDUCE_ENTRIES(mscclpp_allreduce_rsag_direct, coll::allreduceRsagDirect, coll::kRsagThreads, COLL_ONE_BLOCK_PER_SM)

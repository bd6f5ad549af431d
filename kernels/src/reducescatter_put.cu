// reducescatter_put.cu: ReduceScatter over memory channels, for medium and large messages: the
// reduce-scatter rounds of AllReduce's rsag kernels (rsag.cuh), each rank's shard reduced into
// its output.
//
// The input holds one shard of args.count elements per rank; block b of every rank handles part
// b of every shard, in rounds of at most chunkBytes, and talks only to block b of the peers. One
// round:
//   1. scatter: copy this rank's piece of each peer's shard into the peer's reduce slot for us;
//   2. signal the peers, wait for theirs;
//   3. reduce our shard's piece (all ranks, in rank order) into the output.
// Rounds alternate between two banks (State.rounds): a peer still reducing round R out of its
// slots has not yet signalled round R+1, which the writer of round R+2 into the same bank waits for.
#include "rsag.cuh"

namespace coll {

template <typename T, uint32_t Op>
__device__ __forceinline__ void reducescatterPut(const Args& a) {
  const uint64_t shard = a.count;
  const T* mine = static_cast<const T*>(a.send) + a.rank * shard;
  T* recv = static_cast<T*>(a.recv);
  reduceScatterRounds<T>(a, shard, shard * a.nRanks, [&](uint32_t bank, uint64_t off, uint64_t n) {
    reduceAndBroadcast<T, Op, kRsagBatch>(a, bank, blockIdx.x, mine + off, recv + off, n,
                                          [](uint32_t) -> T* { return nullptr; }, 0);
  });
  finishCall(a.state);
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_reducescatter_put, coll::reducescatterPut, coll::kRsagThreads, COLL_ONE_BLOCK_PER_SM)

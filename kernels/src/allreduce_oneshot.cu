// allreduce_oneshot.cu: one-shot AllReduce through the scratch, without packets: every rank copies
// its whole input into every peer's scratch, one signal exchange, then every rank reduces all the
// inputs itself. On 2 ranks it moves as many bytes over the links as rsag (the whole buffer each
// way) with one signal exchange per round instead of two, and half the bytes of the packet
// kernel; for the sizes between the packet limit and a few MiB.
//
// The buffer is cut into one part per thread block; block b of every rank handles part b, in
// rounds of at most chunkBytes, and talks only to block b of the peers. One round:
//   1. copy this rank's piece of part b into every peer's reduce slot for this rank;
//   2. signal the peers, wait for theirs;
//   3. reduce the piece of every rank (this rank's input, the peers' slots), in rank order, into
//      the output.
// The rounds are bankRounds' (rsag.cuh), as the reduce-scatter's.
#include "rsag.cuh"

namespace coll {

// Ranks whose words the reduction loads at once: the two of the 2-rank calls it is picked for.
constexpr uint32_t kOneShotBatch = 2;

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreduceOneshot(const Args& a) {
  __shared__ char* peerSlot[kMaxZeroCopyPeers];
  const uint32_t block = blockIdx.x;
  const uint32_t nPeers = a.nRanks - 1;
  const T* send = static_cast<const T*>(a.send);
  T* recv = static_cast<T*>(a.recv);
  bankRounds<T>(
      a, a.count,
      [&](uint32_t bank, uint64_t off, uint64_t n) {
        const uint64_t mySlot = dataSlotOffset(a, bank, kReduceSlots, a.rank, block);
        if (threadIdx.x < nPeers) peerSlot[threadIdx.x] = static_cast<char*>(channel(a, block, threadIdx.x).dst) + mySlot;
        __syncthreads();
        broadcastBytes([](uint32_t p) { return peerSlot[p]; }, nPeers, reinterpret_cast<const char*>(send + off),
                       n * sizeof(T), threadIdx.x, blockDim.x);
      },
      [&](uint32_t bank, uint64_t off, uint64_t n) {
        auto src = [&](uint32_t r) -> const T* {
          return r == a.rank ? send + off
                             : reinterpret_cast<const T*>(a.scratch + dataSlotOffset(a, bank, kReduceSlots, r, block));
        };
        reduceToAll<T, Op, 1, kOneShotBatch>(src, a.nRanks, [&](uint32_t) { return recv + off; }, 1, n, threadIdx.x,
                                             blockDim.x, uint32_t(a.op));
      });
  finishCall(a.state);
}

}  // namespace coll

// The entry points are compiled for blocks of up to kPutThreads threads, which holds ptxas to 64
// registers, and launched with kRsagThreads: on 2 x H200 that ran a 2 MiB AllReduce in 12.75-12.85
// us, against 12.87-12.98 with a batch of 4 ranks and no bound (80 registers) and 13.06-13.08 with
// 1024 threads (docs/PERFORMANCE.md).
COLL_REDUCE_ENTRIES(mscclpp_allreduce_oneshot, coll::allreduceOneshot, coll::kPutThreads, COLL_ONE_BLOCK_PER_SM)

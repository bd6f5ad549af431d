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
#include "reduce.cuh"

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
  const uint64_t count = a.count;
  exchangeDescriptors(a, block, count * sizeof(T), count * sizeof(T), peerSend, peerRecv);

  const uint64_t shard = roundUp(ceilDiv(count, a.nRanks), kVec);
  const uint64_t part = roundUp(ceilDiv(shard, gridDim.x), kVec);
  const uint64_t partBegin = block * part;
  const uint64_t begin = a.rank * shard + partBegin;
  const uint64_t len = clampLen(begin, clampLen(partBegin, part, shard), count);
  // Rank r's send buffer from element `begin` on; destination 0 is this rank's output, then the
  // peers' receive buffers around the ring.
  auto src = [&](uint32_t r) -> const T* {
    const char* base = r == a.rank ? static_cast<const char*>(a.send) : peerSend[peerIndex(a, r)];
    return reinterpret_cast<const T*>(base) + begin;
  };
  T* out = static_cast<T*>(a.recv) + begin;
  auto dst = [&](uint32_t i) -> T* {
    return i == 0 ? out : reinterpret_cast<T*>(peerRecv[rotatedPeer(a, i - 1)]) + begin;
  };
  reduceToAll<T, Op, kDirectUnroll>(src, a.nRanks, dst, a.nRanks, len, threadIdx.x, blockDim.x, uint32_t(a.op));
  exchangeSignals(a, block);
  finishCall(a.state);
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_allreduce_direct, coll::allreduceDirect, coll::kRsagThreads, COLL_ANY_BLOCKS_PER_SM)

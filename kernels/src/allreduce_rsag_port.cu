// allreduce_rsag_port.cu: two-shot AllReduce whose all-gather runs on the copy engines, while
// the SMs reduce-scatter the next part of the buffer.
//
// For send and receive buffers registered on every rank, the receive buffer's registration bound
// to port channels (collectives/ports.go). The grid is G reducing blocks and one issuing block.
// The reducing blocks reduce-scatter as rsag does (rsag.cuh: scatter into the peers' reduce slots,
// exchange signals, reduce), in waves of equal size: in wave w, block b handles the chunk at
// w * W + b * chunk of every shard (W = G chunks), so one wave of this rank's shard is one
// contiguous range. In every wave but the last, a block stores its reduced chunk in this rank's
// own receive buffer only, then counts the wave in State.waves; the issuing block does the
// descriptor handshake (every peer has entered the call, and where its receive buffer is), then,
// wave after wave, waits until every reducing block has counted the wave and asks this rank's
// proxy to copy the wave's range of this rank's shard into every peer's receive buffer, the peers
// around the ring: the copy engines move wave w while the SMs reduce wave w + 1. The last wave
// has nothing left to overlap with, so the reducing blocks write it into the peers' receive
// buffers themselves, as rsag_direct does, and end with a signal exchange (the peers' writes
// have landed here). The issuing block, after the last copy wave, signals every peer, waits for
// this rank's copies and for every peer's signal, and clears the wave counters.
//
// In place is safe: a peer's copy or write into this rank's buffer covers a wave of the peer's
// shard that the peer reduced, after this rank scattered its input of that wave (the round's
// signals).
#include "rsag.cuh"
#include "waves.cuh"

namespace coll {

// The waves of a call: n waves of `wave` elements of each shard, G chunks of `chunk` elements each;
// the last one is written by the SMs, the others are copied by the copy engines.
struct Waves {
  uint64_t shard;  // elements of every rank's shard (the same nominal size on every rank)
  uint64_t chunk;  // elements of one block's part of a wave
  uint64_t wave;   // elements of a shard per wave: G chunks
  uint64_t n;      // waves
  __device__ __forceinline__ uint64_t copied() const { return n - 1; }  // waves the copy engines move
};

// Waves of equal size (so that the last one, which nothing overlaps, is no larger than the rest):
// as few as the scratch slots (chunkBytes per block) allow.
template <typename T>
__device__ __forceinline__ Waves planWaves(const Args& a, uint32_t nReducers) {
  constexpr uint64_t kVec = sizeof(uint4) / sizeof(T);
  Waves v;
  v.shard = roundUp(ceilDiv(a.count, a.nRanks), kVec);
  v.n = ceilDiv(v.shard, (a.chunkBytes / sizeof(T)) * nReducers);
  v.chunk = roundUp(ceilDiv(v.shard, v.n * nReducers), kVec);  // at most chunkBytes: kVec divides it
  v.wave = v.chunk * nReducers;
  return v;
}

// One round of a reducing block: its chunk of wave w (if the shard reaches it), reduced and
// stored here and, for the first nPeerOut peers around the ring, in their receive buffers
// (peerRecv, by peer index).
template <typename T, uint32_t Op>
__device__ __forceinline__ void reduceChunk(const Args& a, const Waves& v, uint64_t w, uint32_t& round,
                                            char* const* peerRecv, uint32_t nPeerOut) {
  const uint32_t block = blockIdx.x;
  const uint64_t off = w * v.wave + block * v.chunk;
  const uint64_t n = clampLen(off, v.chunk, v.shard);
  if (n == 0) return;  // the same on every rank: the shard's nominal size decides it
  const uint32_t bank = round++ & 1;
  scatterPieces(a, bank, block, static_cast<const T*>(a.send), v.shard, a.count, off, n);
  exchangeSignals(a, block);
  const uint64_t mine = a.rank * v.shard + off;
  reduceAndBroadcast<T, Op>(a, bank, block, static_cast<const T*>(a.send) + mine, static_cast<T*>(a.recv) + mine,
                            clampLen(mine, n, a.count),
                            [&](uint32_t p) { return reinterpret_cast<T*>(peerRecv[p]) + mine; }, nPeerOut);
}

// One reducing block: its chunk of every wave; the copied waves counted in State.waves once
// stored here, the last wave stored here and in every peer's receive buffer.
template <typename T, uint32_t Op>
__device__ __forceinline__ void reduceWaves(const Args& a, const Waves& v) {
  __shared__ char* peerRecv[kMaxZeroCopyPeers];
  const uint32_t block = blockIdx.x;
  exchangeDescriptors(a, block, 0, a.count * sizeof(T), nullptr, peerRecv);
  uint32_t round = a.state->rounds[block];
  for (uint64_t w = 0; w < v.copied(); ++w) {
    reduceChunk<T, Op>(a, v, w, round, peerRecv, 0);
    __syncthreads();
    if (threadIdx.x == 0) countWaves(a, block, uint32_t(w + 1));
  }
  reduceChunk<T, Op>(a, v, v.copied(), round, peerRecv, a.nRanks - 1);
  exchangeSignals(a, block);  // every peer's writes of the last wave have landed here
  if (threadIdx.x == 0) a.state->rounds[block] = round;
}

// The issuing block: a copy request per copied wave and peer, then the end of the call's copies.
template <typename T>
__device__ __forceinline__ void gatherWaves(const Args& a, const Waves& v) {
  if (v.copied() == 0) return;  // one wave: the SMs write all of it (the same on every rank)
  __shared__ char* peerRecv[kMaxZeroCopyPeers];
  const uint32_t nReducers = gridDim.x - 1;
  const uint32_t nPeers = a.nRanks - 1;
  const uint64_t bytes = a.count * sizeof(T);
  exchangeDescriptors(a, blockIdx.x, 0, bytes, nullptr, peerRecv);
  const uint64_t k = descRegistration(a.recvDesc);
  mscclppPortChannelDeviceHandle* ports = a.ports + k * nPeers;
  if (threadIdx.x == 0) {
    for (uint64_t w = 0; w < v.copied(); ++w) {
      waitWaves(a, nReducers, uint32_t(w + 1));
      const uint64_t shardOff = w * v.wave;
      const uint64_t begin = a.rank * v.shard + shardOff;
      const uint64_t n = clampLen(begin, clampLen(shardOff, v.wave, v.shard), a.count) * sizeof(T);
      const uint64_t at = begin * sizeof(T);  // where the range is in every receive buffer
      for (uint32_t i = 0; i < nPeers && n > 0; ++i) {
        const uint32_t p = rotatedPeer(a, i);
        portPut(ports[p], portOffset(a, k, p, peerRecv[p], bytes) + at, descOffset(a.recvDesc) + at, n);
      }
    }
  }
  syncAfterWaits();
  finishPortCopies(a, ports);
  clearWaves(a, nReducers);  // every reducing block counted every copied wave (seen above)
}

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreduceRsagPort(const Args& a) {
  runWaves<Waves>(
      a, [&] { return planWaves<T>(a, gridDim.x - 1); }, [&](const Waves& v) { reduceWaves<T, Op>(a, v); },
      [&](const Waves& v) { gatherWaves<T>(a, v); });
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_allreduce_rsag_port, coll::allreduceRsagPort, coll::kRsagThreads, COLL_ONE_BLOCK_PER_SM)

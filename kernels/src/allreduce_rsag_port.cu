// allreduce_rsag_port.cu: two-shot AllReduce whose all-gather runs on the copy engines, while
// the SMs reduce-scatter the next part of the buffer.
//
// For send and receive buffers registered on every rank, the receive buffer's registration bound
// to port channels (collectives/ports.go). The grid is G reducing blocks and one issuing block.
// The reducing blocks reduce-scatter as rsag does (rsag.cuh: scatter into the peers' reduce slots,
// exchange signals, reduce), in waves: in wave w, block b handles the chunk at w * W + b * chunk
// of every shard (W = G chunks), so one wave of this rank's shard is one contiguous range. A
// block stores its reduced chunk in this rank's own receive buffer only, then counts the wave in
// State.waves. The issuing block does the descriptor handshake (every peer has entered the call,
// and where its receive buffer is), then, wave after wave, waits until every reducing block has
// counted the wave and asks this rank's proxy to copy the wave's range of this rank's shard into
// every peer's receive buffer, the peers around the ring: the copy engines move wave w while the
// SMs reduce wave w + 1. After the last wave it signals every peer, waits for this rank's copies
// and for every peer's signal (the peers' shards have landed here), and clears the wave counters.
//
// In place is safe: a peer's copy into this rank's buffer covers a wave of the peer's shard that
// the peer reduced, after this rank scattered its input of that wave (the round's signals).
#include "rsag.cuh"

namespace coll {

// One reducing block: the waves of its chunks, each counted in State.waves once stored.
template <typename T, uint32_t Op>
__device__ __forceinline__ void reduceWaves(const Args& a, uint64_t shard, uint64_t chunk, uint64_t wave,
                                            uint64_t nWaves) {
  const uint32_t block = blockIdx.x;
  const T* send = static_cast<const T*>(a.send);
  auto noPeer = [](uint32_t) { return static_cast<T*>(nullptr); };
  uint32_t round = a.state->rounds[block];
  for (uint64_t w = 0; w < nWaves; ++w) {
    const uint64_t off = w * wave + block * chunk;
    const uint64_t n = clampLen(off, chunk, shard);
    if (n > 0) {  // the same on every rank: the shard's nominal size decides it
      const uint32_t bank = round++ & 1;
      scatterPieces(a, bank, block, send, shard, off, n);
      exchangeSignals(a, block);
      const uint64_t mine = a.rank * shard + off;
      reduceAndBroadcast<T, Op>(a, bank, block, mine, clampLen(mine, n, a.count), noPeer, 0);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();  // the block's reduced chunk is visible to the copy engines
      atomicExch(&a.state->waves[block], uint32_t(w + 1));
    }
  }
  if (threadIdx.x == 0) a.state->rounds[block] = round;
}

// Waits until each of the first nReducers blocks has counted wave `waves` (1-based).
__device__ __forceinline__ void waitWave(const Args& a, uint32_t nReducers, uint32_t waves) {
  for (uint32_t b = 0; b < nReducers; ++b) {
    const volatile uint32_t* counted = &a.state->waves[b];
    for (int64_t spins = 1; *counted < waves; ++spins) mscclppSpinCheck(spins, a.maxSpins);
  }
  __threadfence_system();  // the chunks the counters announce are read after the counters
}

// The issuing block: a copy request per wave and peer, then the end of the call's copies.
template <typename T>
__device__ __forceinline__ void gatherWaves(const Args& a, uint64_t shard, uint64_t wave, uint64_t nWaves) {
  __shared__ char* peerRecv[kMaxZeroCopyPeers];
  const uint32_t nReducers = gridDim.x - 1;
  const uint32_t nPeers = a.nRanks - 1;
  const uint64_t bytes = a.count * sizeof(T);
  exchangeDescriptors(a, blockIdx.x, 0, bytes, nullptr, peerRecv);
  const uint64_t k = descRegistration(a.recvDesc);
  mscclppPortChannelDeviceHandle* ports = a.ports + k * nPeers;
  if (threadIdx.x == 0) {
    for (uint64_t w = 0; w < nWaves; ++w) {
      waitWave(a, nReducers, uint32_t(w + 1));
      const uint64_t shardOff = w * wave;
      const uint64_t begin = a.rank * shard + shardOff;
      const uint64_t n = clampLen(begin, clampLen(shardOff, wave, shard), a.count) * sizeof(T);
      const uint64_t at = begin * sizeof(T);  // where the range is in every receive buffer
      for (uint32_t i = 0; i < nPeers && n > 0; ++i) {
        const uint32_t p = rotatedPeer(a, i);
        portPut(ports[p], portOffset(a, k, p, peerRecv[p], bytes) + at, descOffset(a.recvDesc) + at, n);
      }
    }
  }
  __syncthreads();
  finishPortCopies(a, ports);
  // Every reducing block counted every wave (seen above) and counts no more in this call.
  for (uint32_t b = threadIdx.x; b < nReducers; b += blockDim.x) a.state->waves[b] = 0;
}

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreduceRsagPort(const Args& a) {
  constexpr uint64_t kVec = sizeof(uint4) / sizeof(T);
  const uint64_t shard = roundUp(ceilDiv(a.count, a.nRanks), kVec);  // the same nominal size for every rank
  const uint64_t chunk = a.chunkBytes / sizeof(T);
  const uint64_t wave = chunk * (gridDim.x - 1);  // elements of a shard per wave
  const uint64_t nWaves = ceilDiv(shard, wave);
  if (blockIdx.x + 1 < gridDim.x) {
    reduceWaves<T, Op>(a, shard, chunk, wave, nWaves);
  } else {
    gatherWaves<T>(a, shard, wave, nWaves);
  }
  finishCall(a.state);
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_allreduce_rsag_port, coll::allreduceRsagPort, coll::kRsagThreads)

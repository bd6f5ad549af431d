// allreduce_port.cu: AllReduce whose NVLink traffic all runs on the copy engines; the SMs only
// reduce, from local memory (docs/design/allreduce-copy-engines.md).
//
// For send and receive buffers registered on every rank, both registrations bound to port
// channels (collectives/ports.go). Each rank's shard of the buffer is cut into waves of at most a
// scratch slot. Every rank's proxy runs its requests, each a copy and a signal, on one stream,
// one after the other, and a GPU's copy engines move one copy at a time at the full NVLink rate
// whatever stream it is on (bench_ce_bound's timeline, docs/PERFORMANCE.md). So the order is
// what matters: two ranks copying to one GPU at once share its links while another GPU receives
// nothing. Every rank queues the same global order:
//   S(0, 1), S(0, 2), ..., S(0, n-1), S(1, 1), ..., S(W-1, n-1), G(0, 1), ..., G(W-1, n-1)
// where (w, i) names wave w and the i-th peer around the ring from this rank (rank + i), Sw
// (scatter) copies this rank's input of wave w of the peer's shard into the peer's scratch slot
// for this rank (bank w & 1), and Gw (gather) copies this rank's reduced wave w from its receive
// buffer into the peer's receive buffer. While the ranks keep in step, every step of that order
// is a permutation: each GPU sends one copy and receives one. Between them, the reducing blocks
// reduce wave w of this rank's shard (its own input and the peers' slots, all local) into its
// receive buffer once the wave has landed from every peer.
//
// One thread of the issuing block (the grid's last) runs the order: it polls the peers' port
// signals (from a peer, its W scatters land here first, then its W gathers, in order),
// publishes in State.landed how many waves have landed from every peer (the reducing blocks
// wait for it), tells every peer through the block's memory channel each wave this rank has
// reduced, and queues the next request once it may go:
//   Sw to peer p when w < 2, or once p has said it reduced wave w - 2 (bank w & 1 of its
//      scratch is free again);
//   Gw once every reducing block has counted wave w in State.waves.
// Scatters wait only on reductions of earlier waves, which wait only on scatters, so the ranks
// cannot wait on each other in a circle; while they keep in step the waits are already met. The
// call ends when this rank's copies are done (flush), every peer's gathers have landed and every
// peer's reductions have been heard.
//
// Entering: the issuing block's descriptor handshake (every peer has entered the call, so it is
// done with its scratch from earlier calls, and where its receive buffer is) comes first.
// In place is safe: a peer's Gw into this rank's receive buffer covers a range of the peer's
// shard that this rank scattered in Sw, which landed before the peer could reduce wave w.
#include "reduce.cuh"
#include "waves.cuh"

namespace coll {

// Fewest waves a call is cut into (more where a wave would not fit a scratch slot): with two,
// the reduction of the last wave runs while the copy engines gather the first, and the copies
// are as few and as large as they can be.
constexpr uint64_t kPortMinWaves = 2;

// The scratch as this algorithm sees it: its data banks cut into 2 x nRanks slots, slot (bank, r)
// holding rank r's piece of this rank's shard for the waves of parity bank.
__device__ __forceinline__ uint64_t portSlotBytes(const Args& a) { return 2 * kMaxBlocks * a.chunkBytes; }
__device__ __forceinline__ uint64_t portSlotOffset(const Args& a, uint32_t bank, uint64_t r) {
  return a.dataOffset + (uint64_t(bank) * a.nRanks + r) * portSlotBytes(a);
}

// The waves of a call, in elements: n waves of `wave` elements of every rank's shard.
struct PortWaves {
  uint64_t shard;  // elements of every rank's shard (the same nominal size on every rank)
  uint64_t wave;   // elements of a shard per wave: a multiple of 16 bytes, at most a slot (so at most
                   // kMaxPortBytes: one request each)
  uint64_t n;      // waves
};

template <typename T>
__device__ __forceinline__ PortWaves planPortWaves(const Args& a) {
  constexpr uint64_t kVec = sizeof(uint4) / sizeof(T);
  PortWaves v;
  v.shard = roundUp(ceilDiv(a.count, a.nRanks), kVec);
  const uint64_t fewest = ceilDiv(v.shard, portSlotBytes(a) / sizeof(T));
  v.wave = roundUp(ceilDiv(v.shard, fewest > kPortMinWaves ? fewest : kPortMinWaves), kVec);
  v.n = ceilDiv(v.shard, v.wave);
  return v;
}

// Where rank r's range of wave w is in the buffer: elements [*begin, *begin + return value).
__device__ __forceinline__ uint64_t waveRange(const Args& a, const PortWaves& v, uint64_t r, uint64_t w,
                                              uint64_t* begin) {
  const uint64_t shardOff = w * v.wave;
  *begin = r * v.shard + shardOff;
  return clampLen(*begin, clampLen(shardOff, v.wave, v.shard), a.count);
}

// A reducing block: its part of every wave of this rank's shard, once the wave has landed from
// every peer; counts each wave in State.waves.
template <typename T, uint32_t Op>
__device__ __forceinline__ void reducePortWaves(const Args& a, const PortWaves& v) {
  constexpr uint64_t kVec = sizeof(uint4) / sizeof(T);
  const uint32_t block = blockIdx.x;
  const uint32_t nReducers = gridDim.x - 1;
  const T* send = static_cast<const T*>(a.send);
  T* recv = static_cast<T*>(a.recv);
  for (uint32_t w = 0; w < v.n; ++w) {
    if (threadIdx.x == 0) {
      const volatile uint32_t* landed = &a.state->landed;
      waitUntil(a, [&] { return *landed > w; });
      __threadfence();  // the slots the counter announces are read after it
    }
    syncAfterWaits();
    uint64_t begin;
    const uint64_t len = waveRange(a, v, a.rank, w, &begin);
    const uint64_t part = roundUp(ceilDiv(len, nReducers), kVec);
    const uint64_t off = block * part;
    const uint64_t n = clampLen(off, part, len);
    if (n > 0) {
      const uint32_t bank = w & 1;
      auto src = [&](uint32_t r) -> const T* {
        return r == a.rank ? send + begin + off : reinterpret_cast<const T*>(a.scratch + portSlotOffset(a, bank, r)) + off;
      };
      auto dst = [&](uint32_t) { return recv + begin + off; };
      reduceToAll<T, Op, 1>(src, a.nRanks, dst, 1, n, threadIdx.x, blockDim.x, uint32_t(a.op));
    }
    __syncthreads();
    if (threadIdx.x == 0) countWaves(a, block, w + 1);
  }
}

// The issuing block: the call's requests in their global order, driven by thread 0.
template <typename T>
__device__ __forceinline__ void issuePortWaves(const Args& a, const PortWaves& v) {
  __shared__ char* peerRecv[kMaxZeroCopyPeers];
  __shared__ uint32_t arrived[kMaxZeroCopyPeers];  // port signals from peer p: its scatters, then its gathers
  __shared__ uint32_t heard[kMaxZeroCopyPeers];    // waves peer p has said it reduced
  const uint32_t nReducers = gridDim.x - 1;
  const uint32_t nPeers = a.nRanks - 1;
  const uint32_t waves = uint32_t(v.n);
  const uint64_t bytes = a.count * sizeof(T);
  exchangeDescriptors(a, blockIdx.x, 0, bytes, nullptr, peerRecv);
  const uint64_t kSend = descRegistration(a.sendDesc);
  const uint64_t kRecv = descRegistration(a.recvDesc);
  mscclppPortChannelDeviceHandle* toScratch = a.ports + (a.portRows + kSend) * nPeers;
  mscclppPortChannelDeviceHandle* toRecv = a.ports + kRecv * nPeers;
  if (threadIdx.x == 0) {
    const uint32_t scatters = waves * nPeers, requests = 2 * scatters;
    for (uint32_t p = 0; p < nPeers; ++p) arrived[p] = heard[p] = 0;
    uint32_t next = 0, published = 0, reduced = 0, told = 0;
    for (int64_t spins = 1;; ++spins) {
      bool progress = false, done = next == requests && told == waves;
      uint32_t landed = waves;
      for (uint32_t p = 0; p < nPeers; ++p) {
        if (arrived[p] < 2 * waves && toRecv[p].poll()) {  // every port channel to p shares one semaphore
          ++arrived[p];
          progress = true;
        }
        mscclppMemoryChannelDeviceHandle ch = channel(a, blockIdx.x, p);
        if (heard[p] < waves && ch.poll()) {
          ++heard[p];
          progress = true;
        }
        landed = min(landed, min(arrived[p], waves));
        done = done && arrived[p] == 2 * waves && heard[p] == waves;
      }
      if (landed > published) {
        __threadfence();  // the pieces the signals announce are read after the counter
        *reinterpret_cast<volatile uint32_t*>(&a.state->landed) = landed;
        published = landed;
      }
      if (done) break;
      const uint32_t r = leastWaves(a, nReducers);
      if (r > reduced) {
        __threadfence_system();  // the reduced waves are read by the copy engines after the counters
        reduced = r;
        progress = true;
      }
      for (; told < reduced; ++told) {  // the reducing blocks are done with this wave's slots
        for (uint32_t p = 0; p < nPeers; ++p) {
          mscclppMemoryChannelDeviceHandle ch = channel(a, blockIdx.x, p);
          ch.signal();
        }
      }
      for (; next < requests; ++next, progress = true) {
        const bool gather = next >= scatters;
        const uint32_t k = gather ? next - scatters : next;
        const uint32_t w = k / nPeers;
        const uint32_t p = rotatedPeer(a, k % nPeers);
        uint64_t begin;
        if (gather) {
          if (w >= reduced) break;
          const uint64_t n = waveRange(a, v, a.rank, w, &begin) * sizeof(T);
          const uint64_t at = begin * sizeof(T);  // where the range is in every receive buffer
          toRecv[p].putWithSignal(portOffset(a, kRecv, p, peerRecv[p], bytes) + at, descOffset(a.recvDesc) + at, n);
        } else {
          if (w >= 2 && heard[p] + 2 <= w) break;
          const uint64_t n = waveRange(a, v, peerRank(a, p), w, &begin) * sizeof(T);
          toScratch[p].putWithSignal(portSlotOffset(a, w & 1, a.rank), descOffset(a.sendDesc) + begin * sizeof(T), n);
        }
      }
      if (progress) spins = 0;
      spinCheck(a.abort, a.maxSpins, spins);
    }
    flushPorts(a, toRecv[0]);  // one FIFO serves every port channel: this rank's copies are done
    a.state->landed = 0;       // no reducing block reads it again in this call
  }
  syncAfterWaits();
  clearWaves(a, nReducers);  // every reducing block counted every wave (seen above)
}

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreducePort(const Args& a) {
  runWaves<PortWaves>(
      a, [&] { return planPortWaves<T>(a); }, [&](const PortWaves& v) { reducePortWaves<T, Op>(a, v); },
      [&](const PortWaves& v) { issuePortWaves<T>(a, v); });
}

}  // namespace coll

// One block per SM, as every launch has: with COLL_ANY_BLOCKS_PER_SM, ptxas's heuristic capped
// most entry points at 64 registers, and they spilled (sm_90).
COLL_REDUCE_ENTRIES(mscclpp_allreduce_port, coll::allreducePort, coll::kRsagThreads, COLL_ONE_BLOCK_PER_SM)

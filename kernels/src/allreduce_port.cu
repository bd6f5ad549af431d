// allreduce_port.cu: AllReduce whose NVLink traffic all runs on the copy engines; the SMs only
// reduce, from local memory (docs/design/allreduce-copy-engines.md).
//
// For send and receive buffers registered on every rank, both registrations bound to port
// channels (collectives/ports.go). Each rank's shard of the buffer is cut into n waves. Per peer,
// this rank's proxy executes 2n requests, each a copy and a signal, in this order:
//   S0, S1, G0, S2, G1, ..., S(n-1), G(n-2), G(n-1)
// where Sw (scatter) copies this rank's input of wave w of the peer's shard into the peer's
// scratch slot for this rank (bank w & 1), and Gw (gather) copies this rank's reduced wave w
// from its receive buffer into the peer's receive buffer. Between them, the G reducing blocks
// reduce wave w of this rank's shard (its own input and the peers' slots, all in local memory)
// into its receive buffer.
//
// Every peer sends the same sequence, so the k-th signal from a peer says which request of it
// has landed here. One thread of the issuing block (the grid's last) runs every peer's sequence:
// it polls the peers' signals, publishes in State.landed how many waves have landed from every
// peer (the reducing blocks wait for it), and queues a request once it may go:
//   Sw to peer p when w < 2, or once p's G(w-2) has landed here: p then has reduced wave w - 2
//      and bank w & 1 of its scratch is free again;
//   Gw once every reducing block has counted wave w in State.waves.
// Each dependency points to an earlier request of the same sequence, so the ranks cannot wait on
// each other in a circle, and the copy engines always have the next request queued while the
// SMs reduce. The call ends when this rank's copies are done (flush) and every peer's Gs have
// landed.
//
// Entering: the issuing block's descriptor handshake (every peer has entered the call, so it is
// done with its scratch from earlier calls, and where its receive buffer is) comes first.
// In place is safe: a peer's Gw into this rank's receive buffer covers a range of the peer's
// shard that this rank scattered in Sw, which landed before the peer could reduce wave w.
#include "reduce.cuh"
#include "waves.cuh"

namespace coll {

// Fewest waves a call is cut into (more where a wave would not fit a scratch slot): the first
// scatter and the last gather overlap nothing, so they should be short.
constexpr uint64_t kPortMinWaves = 4;

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

// Request i of a peer's sequence: a gather (else a scatter) of wave `wave`.
struct PortRequest {
  bool gather;
  uint32_t wave;
};
__device__ __forceinline__ PortRequest portRequest(uint32_t i, uint32_t n) {
  if (i == 0) return {false, 0};
  if (i == 2 * n - 1) return {true, n - 1};
  return (i & 1) ? PortRequest{false, (i + 1) / 2} : PortRequest{true, i / 2 - 1};
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
      for (int64_t spins = 1; *landed <= w; ++spins) mscclppSpinCheck(spins, a.maxSpins);
      __threadfence();  // the slots the counter announces are read after it
    }
    __syncthreads();
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
      reduceToAll<T, Op, 1>(src, a.nRanks, dst, 1, n, threadIdx.x, blockDim.x);
    }
    __syncthreads();
    if (threadIdx.x == 0) countWaves(a, block, w + 1);
  }
}

// The issuing block: every peer's sequence of requests, driven by thread 0.
template <typename T>
__device__ __forceinline__ void issuePortWaves(const Args& a, const PortWaves& v) {
  __shared__ char* peerRecv[kMaxZeroCopyPeers];
  __shared__ uint32_t queued[kMaxZeroCopyPeers];    // requests queued to peer p
  __shared__ uint32_t arrived[kMaxZeroCopyPeers];   // signals consumed from peer p
  __shared__ uint32_t scatters[kMaxZeroCopyPeers];  // peer p's scatters landed here
  __shared__ uint32_t gathers[kMaxZeroCopyPeers];   // peer p's gathers landed here
  const uint32_t nReducers = gridDim.x - 1;
  const uint32_t nPeers = a.nRanks - 1;
  const uint64_t bytes = a.count * sizeof(T);
  exchangeDescriptors(a, blockIdx.x, 0, bytes, nullptr, peerRecv);
  const uint64_t kSend = descRegistration(a.sendDesc);
  const uint64_t kRecv = descRegistration(a.recvDesc);
  mscclppPortChannelDeviceHandle* toScratch = a.ports + (a.portRows + kSend) * nPeers;
  mscclppPortChannelDeviceHandle* toRecv = a.ports + kRecv * nPeers;
  if (threadIdx.x == 0) {
    const uint32_t requests = 2 * uint32_t(v.n);
    for (uint32_t p = 0; p < nPeers; ++p) queued[p] = arrived[p] = scatters[p] = gathers[p] = 0;
    uint32_t published = 0, reduced = 0;
    for (int64_t spins = 1;; ++spins) {
      bool progress = false, done = true;
      uint32_t landed = 0xffffffffu;
      for (uint32_t i = 0; i < nPeers; ++i) {
        const uint32_t p = rotatedPeer(a, i);
        if (arrived[p] < requests && toRecv[p].poll()) {  // every channel to p shares one semaphore
          (portRequest(arrived[p]++, v.n).gather ? gathers[p] : scatters[p])++;
          progress = true;
        }
        if (queued[p] < requests) {
          const PortRequest q = portRequest(queued[p], v.n);
          if (q.gather ? q.wave < reduced : q.wave < 2 || gathers[p] + 1 >= q.wave) {
            uint64_t begin;
            if (q.gather) {
              const uint64_t n = waveRange(a, v, a.rank, q.wave, &begin) * sizeof(T);
              const uint64_t at = begin * sizeof(T);  // where the range is in every receive buffer
              toRecv[p].putWithSignal(portOffset(a, kRecv, p, peerRecv[p], bytes) + at, descOffset(a.recvDesc) + at, n);
            } else {
              const uint64_t n = waveRange(a, v, peerRank(a, p), q.wave, &begin) * sizeof(T);
              toScratch[p].putWithSignal(portSlotOffset(a, q.wave & 1, a.rank), descOffset(a.sendDesc) + begin * sizeof(T),
                                         n);
            }
            ++queued[p];
            progress = true;
          }
        }
        landed = scatters[p] < landed ? scatters[p] : landed;
        done = done && queued[p] == requests && arrived[p] == requests;
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
      if (progress) spins = 0;
      mscclppSpinCheck(spins, a.maxSpins);
    }
    toRecv[0].flush(a.maxSpins);  // one FIFO serves every port channel: this rank's copies are done
    a.state->landed = 0;          // no reducing block reads it again in this call
  }
  __syncthreads();
  clearWaves(a, nReducers);  // every reducing block counted every wave (seen above)
}

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreducePort(const Args& a) {
  runWaves<PortWaves>(
      a, [&] { return planPortWaves<T>(a); }, [&](const PortWaves& v) { reducePortWaves<T, Op>(a, v); },
      [&](const PortWaves& v) { issuePortWaves<T>(a, v); });
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_allreduce_port, coll::allreducePort, coll::kRsagThreads, COLL_ANY_BLOCKS_PER_SM)

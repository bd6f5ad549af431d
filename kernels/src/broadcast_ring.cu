// broadcast_ring.cu: Broadcast along a chain, over memory channels, for large messages on 3 or
// more ranks.
//
// The ranks form a chain from the root: root, root + 1, ..., root - 1 (mod nRanks). Each rank
// receives the message from its predecessor into its scratch and stores it on to its successor's
// scratch in the same pass that copies it into its own output, so every rank's links carry the
// message at most once in each direction and no rank stores to more than one peer (sag's root
// stores to every peer at once). Block b of every rank moves part b of the message and talks only
// to block b of its neighbours. The part is cut into rounds, as in sag, so that a chunk moves
// down the chain while the next one follows it (a pipeline of nRanks - 1 hops). One round:
//   1. a rank with a successor first takes the successor's "slot free" signal that makes the
//      round's bank free (see below), and a rank with a predecessor waits for its "ready";
//   2. it stores the round's range, from its send buffer (the root) or from its slot of the bank
//      (the others), into its successor's slot and into its output (the root: unless in place);
//   3. it signals "ready" to the successor and "slot free" to the predecessor.
// A block has four slots in its successor's scratch, used in turn: the two banks (State.rounds)
// of each of two regions (the region changes every second round of the call). Before it stores
// round k of the call into a slot, a rank takes its successor's signals up to that of round
// k - 4, which used the slot, and for rounds 1 to 3 that of round 0: their slots were last used
// by the call before, whose kernel (any algorithm) may still be reading them on the successor
// until then; as in sag. Four slots instead of two let a rank run up to three rounds ahead of its
// successor (4 x H200, 256 MiB: 810-814 us against 842-847 with two). At the end a rank takes the
// signals still owed, so that no call after this one finds one.
#include "common.cuh"

namespace coll {

// The rounds a block's part is cut into at least, and the smallest piece that cut may make.
constexpr uint64_t kRingRounds = 16;
constexpr uint64_t kRingMinPiece = 16 << 10;

__device__ __forceinline__ void broadcastRing(const Args& a) {
  constexpr uint64_t kAlign = 16;
  const uint32_t block = blockIdx.x;
  const uint32_t n = a.nRanks;
  const uint32_t pos = (a.rank + n - a.op) % n;  // place in the chain; the root's is 0
  const bool hasPred = pos > 0, hasSucc = pos + 1 < n;
  const uint32_t pred = (a.rank + n - 1) % n, succ = (a.rank + 1) % n;
  const uint32_t predPeer = peerIndex(a, pred), succPeer = peerIndex(a, succ);
  const uint64_t part = roundUp(ceilDiv(a.count, gridDim.x), kAlign);
  const uint64_t partBegin = block * part;
  const uint64_t partEnd = partBegin + clampLen(partBegin, part, a.count);
  const uint64_t rounds = max(ceilDiv(part, a.chunkBytes), min(kRingRounds, max(uint64_t(1), part / kRingMinPiece)));
  const uint64_t piece = roundUp(ceilDiv(part, rounds), kAlign);
  const bool copyOut = hasPred || a.send != a.recv;
  const uint32_t nDst = (hasSucc ? 1 : 0) + (copyOut ? 1 : 0);
  uint32_t round = a.state->rounds[block];
  uint32_t k = 0, taken = 0;  // this call's rounds; the successor's signals taken (thread 0)

  for (uint64_t off = partBegin; off < partEnd; off += piece, ++round, ++k) {
    const uint32_t bank = round & 1, region = (k >> 1) & 1;  // four slots, in turn
    if (threadIdx.x == 0) {
      if (hasSucc) {
        const uint32_t owed = k == 0 ? 0 : max(1u, k < 3 ? 0u : k - 3);
        mscclppMemoryChannelDeviceHandle ch = channel(a, block, succPeer);
        for (; taken < owed; ++taken) waitSignal(a, ch);
      }
      if (hasPred) {
        mscclppMemoryChannelDeviceHandle ch = channel(a, block, predPeer);
        waitSignal(a, ch);
      }
    }
    syncAfterWaits();
    const char* src = hasPred ? a.scratch + dataSlotOffset(a, bank, region, pred, block)
                              : static_cast<const char*>(a.send) + off;
    char* const out = static_cast<char*>(a.recv) + off;
    char* const first =
        hasSucc ? static_cast<char*>(channel(a, block, succPeer).dst) + dataSlotOffset(a, bank, region, a.rank, block) : out;
    broadcastBytes([first, out](uint32_t d) { return d == 0 ? first : out; }, nDst, src, clampLen(off, piece, partEnd),
                   threadIdx.x, blockDim.x);
    __syncthreads();
    if (threadIdx.x == 0) {
      if (hasSucc) {
        mscclppMemoryChannelDeviceHandle ch = channel(a, block, succPeer);
        ch.signal();  // ready
      }
      if (hasPred) {
        mscclppMemoryChannelDeviceHandle ch = channel(a, block, predPeer);
        ch.signal();  // slot free
      }
    }
  }
  if (threadIdx.x == 0 && hasSucc) {
    mscclppMemoryChannelDeviceHandle ch = channel(a, block, succPeer);
    for (; taken < k; ++taken) waitSignal(a, ch);
  }
  syncAfterWaits();
  if (threadIdx.x == 0) a.state->rounds[block] = round;
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPutThreads) mscclpp_broadcast_ring(const coll::Args args) {
  coll::startWaits();
  coll::broadcastRing(args);
}

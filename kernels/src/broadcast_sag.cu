// broadcast_sag.cu: Broadcast as a scatter and then an all-gather, over memory channels, for
// large messages on 3 to kMaxZeroCopyPeers + 1 ranks.
//
// In broadcast_put the root stores every byte into every peer's scratch: its links carry the
// message nRanks - 1 times. Here each round's range is cut into one piece per receiver (the other
// ranks, in rank order): the root stores piece j into receiver j's scratch only, and receiver j
// passes it on to the other receivers, so every rank's links carry about the message once. Block
// b of every rank moves part b of the message and talks only to block b of the peers. One round:
//   1. the root stores piece j into receiver j's root slot (and the round's range into its own
//      output unless in place), and signals every receiver (ready);
//   2. each receiver waits for the root's ready, stores its piece into its output and into its
//      slot on every other receiver, then signals the root (its root slot is free again) and
//      every other receiver, and waits for theirs;
//   3. each receiver copies the other receivers' pieces from its slots into its output.
// The root does not wait for the receivers between its rounds, so its stores of round R + 1 run
// while the receivers pass round R on (both ends' links busy at once); before it stores round R
// into a bank it waits for the receivers' signals of round R - 2, which used that bank (round R -
// 1's, for the call's second round: the bank's last use was the call before), and at the end it
// takes the signals still owed, so that no call after this one finds one. A block's part is cut
// into up to kSagRounds rounds while pieces stay at least kSagMinPiece bytes, for the overlap.
// Rounds alternate between two banks of slots (State.rounds): a receiver's stores of round R + 2
// into another receiver's bank wait for that receiver's signal of round R + 1, sent after its
// reads of round R; as in rsag.
#include "common.cuh"

namespace coll {

// The two regions of a data bank here: the piece from the root, the pieces from the receivers.
enum SagRegion : uint32_t { kFromRoot = 0, kFromReceivers = 1 };
// The rounds a block's part is cut into at least, and the smallest piece that cut may make.
constexpr uint64_t kSagRounds = 8;
constexpr uint64_t kSagMinPiece = 16 << 10;

// Root: thread p < receivers takes n signals of receiver p (peer index p), then the block goes on.
__device__ __forceinline__ void takeSignals(const Args& a, uint32_t block, uint32_t n) {
  if (threadIdx.x < a.nRanks - 1) {
    mscclppMemoryChannelDeviceHandle ch = channel(a, block, threadIdx.x);
    for (uint32_t i = 0; i < n; ++i) waitSignal(a, ch);
  }
  syncAfterWaits();
}

__device__ __forceinline__ void broadcastSag(const Args& a) {
  constexpr uint64_t kAlign = 16;
  const uint32_t block = blockIdx.x;
  const uint64_t root = a.op;
  const uint32_t nReceivers = a.nRanks - 1;
  const uint64_t bytes = a.count;
  const uint64_t part = roundUp(ceilDiv(bytes, gridDim.x), kAlign);
  const uint64_t partBegin = block * part;
  const uint64_t partEnd = partBegin + clampLen(partBegin, part, bytes);
  // Rounds: as many as the slots need, and up to kSagRounds while pieces stay kSagMinPiece long;
  // the part is then cut evenly (pieces of one length, so that every receiver has as much to pass on).
  const uint64_t rounds = max(ceilDiv(part, nReceivers * a.chunkBytes),
                              min(kSagRounds, max(uint64_t(1), part / (nReceivers * kSagMinPiece))));
  const uint64_t piece = roundUp(ceilDiv(part, nReceivers * rounds), kAlign);
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const bool isRoot = a.rank == root;
  // Receiver j is rank j before the root and rank j + 1 after it: from the root, receiver j is
  // peer index j.
  auto receiver = [&](uint64_t r) -> uint32_t { return r < root ? r : r - 1; };
  const uint32_t me = receiver(a.rank);
  const uint32_t rootPeer = isRoot ? 0 : peerIndex(a, root);
  // The other receivers' scratch buffers, around the ring from this rank (receivers only).
  __shared__ char* others[kMaxZeroCopyPeers];
  if (!isRoot && threadIdx.x == 0) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < a.nRanks - 1; ++i) {
      const uint32_t p = rotatedPeer(a, i);
      if (peerRank(a, p) != root) others[n++] = static_cast<char*>(channel(a, block, p).dst);
    }
  }
  __syncthreads();
  uint32_t round = a.state->rounds[block];
  uint32_t k = 0, taken = 0;  // this call's rounds; the root: receivers' signals taken

  for (uint64_t off = partBegin; off < partEnd; off += piece * nReceivers, ++round, ++k) {
    const uint32_t bank = round & 1;
    auto pieceAt = [&](uint32_t j) { return off + j * piece; };
    auto pieceLen = [&](uint32_t j) { return clampLen(pieceAt(j), piece, partEnd); };
    if (isRoot) {
      const uint32_t owed = k == 0 ? 0 : max(1u, k - 1);
      if (taken < owed) takeSignals(a, block, owed - taken);
      taken = max(taken, owed);
      for (uint32_t i = 0; i < nReceivers; ++i) {
        const uint32_t j = rotatedPeer(a, i);
        char* slot = static_cast<char*>(channel(a, block, j).dst) + dataSlotOffset(a, bank, kFromRoot, a.rank, block);
        copyBytes(slot, send + pieceAt(j), pieceLen(j), threadIdx.x, blockDim.x);
      }
      __syncthreads();
      if (threadIdx.x < nReceivers) {
        mscclppMemoryChannelDeviceHandle ch = channel(a, block, threadIdx.x);
        ch.signal();
      }
      if (send != recv) copyBytes(recv + off, send + off, clampLen(off, piece * nReceivers, partEnd), threadIdx.x, blockDim.x);
      continue;
    }
    if (threadIdx.x == 0) {
      mscclppMemoryChannelDeviceHandle ch = channel(a, block, rootPeer);
      waitSignal(a, ch);
    }
    syncAfterWaits();
    const uint64_t slot = dataSlotOffset(a, bank, kFromReceivers, a.rank, block);
    auto dst = [&](uint32_t d) -> char* { return d == 0 ? recv + pieceAt(me) : others[d - 1] + slot; };
    broadcastBytes(dst, nReceivers, a.scratch + dataSlotOffset(a, bank, kFromRoot, root, block), pieceLen(me),
                   threadIdx.x, blockDim.x);
    __syncthreads();
    if (threadIdx.x < a.nRanks - 1) {
      mscclppMemoryChannelDeviceHandle ch = channel(a, block, threadIdx.x);
      ch.signal();
      if (threadIdx.x != rootPeer) waitSignal(a, ch);
    }
    syncAfterWaits();
    for (uint32_t p = 0; p < a.nRanks - 1; ++p) {
      const uint64_t r = peerRank(a, p);
      if (r == root) continue;
      const uint32_t j = receiver(r);
      copyBytes(recv + pieceAt(j), a.scratch + dataSlotOffset(a, bank, kFromReceivers, r, block), pieceLen(j),
                threadIdx.x, blockDim.x);
    }
  }
  if (isRoot && taken < k) takeSignals(a, block, k - taken);
  __syncthreads();
  if (threadIdx.x == 0) a.state->rounds[block] = round;
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPutThreads) mscclpp_broadcast_sag(const coll::Args args) {
  coll::startWaits();
  coll::broadcastSag(args);
}

// broadcast_sag.cu: Broadcast as a scatter and then an all-gather, over memory channels, for
// large messages on 3 to kMaxZeroCopyPeers + 1 ranks.
//
// In broadcast_put the root stores every byte into every peer's scratch: its links carry the
// message nRanks - 1 times. Here each round's range is cut into one piece per receiver (the other
// ranks, in rank order): the root stores piece j into receiver j's scratch only, and receiver j
// passes it on to the other receivers, so every rank's links carry about the message once. Block
// b of every rank moves part b of the message and talks only to block b of the peers. One round:
//   1. the root stores piece j into receiver j's root slot (and the round's range into its own
//      output unless in place);
//   2. signal every peer, wait for theirs;
//   3. each receiver stores its piece into its output and into its slot on every other receiver;
//   4. signal, wait;
//   5. each receiver copies the other receivers' pieces from its slots into its output.
// Rounds alternate between two banks of slots (State.rounds): the writes of round R + 2 into a
// bank wait for the signals of round R + 1, sent after the reads of round R; as in rsag.
#include "common.cuh"

namespace coll {

// The two regions of a data bank here: the piece from the root, the pieces from the receivers.
enum SagRegion : uint32_t { kFromRoot = 0, kFromReceivers = 1 };

__device__ __forceinline__ void broadcastSag(const Args& a) {
  constexpr uint64_t kAlign = 16;
  const uint32_t block = blockIdx.x;
  const uint64_t root = a.op;
  const uint32_t nReceivers = a.nRanks - 1;
  const uint64_t bytes = a.count;
  const uint64_t part = roundUp(ceilDiv(bytes, gridDim.x), kAlign);
  const uint64_t partBegin = block * part;
  const uint64_t partEnd = partBegin + clampLen(partBegin, part, bytes);
  const uint64_t piece = min(a.chunkBytes, roundUp(ceilDiv(part, nReceivers), kAlign));
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const bool isRoot = a.rank == root;
  // Receiver j is rank j before the root and rank j + 1 after it: from the root, receiver j is
  // peer index j.
  auto receiver = [&](uint64_t r) -> uint32_t { return r < root ? r : r - 1; };
  const uint32_t me = receiver(a.rank);
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

  for (uint64_t off = partBegin; off < partEnd; off += piece * nReceivers, ++round) {
    const uint32_t bank = round & 1;
    auto pieceAt = [&](uint32_t j) { return off + j * piece; };
    auto pieceLen = [&](uint32_t j) { return clampLen(pieceAt(j), piece, partEnd); };
    if (isRoot) {
      for (uint32_t i = 0; i < nReceivers; ++i) {
        const uint32_t j = rotatedPeer(a, i);
        char* slot = static_cast<char*>(channel(a, block, j).dst) + dataSlotOffset(a, bank, kFromRoot, a.rank, block);
        copyBytes(slot, send + pieceAt(j), pieceLen(j), threadIdx.x, blockDim.x);
      }
      if (send != recv) copyBytes(recv + off, send + off, clampLen(off, piece * nReceivers, partEnd), threadIdx.x, blockDim.x);
    }
    exchangeSignals(a, block);
    if (!isRoot) {
      const uint64_t slot = dataSlotOffset(a, bank, kFromReceivers, a.rank, block);
      auto dst = [&](uint32_t d) -> char* { return d == 0 ? recv + pieceAt(me) : others[d - 1] + slot; };
      broadcastBytes(dst, nReceivers, a.scratch + dataSlotOffset(a, bank, kFromRoot, root, block), pieceLen(me),
                     threadIdx.x, blockDim.x);
    }
    exchangeSignals(a, block);
    if (!isRoot) {
      for (uint32_t p = 0; p < a.nRanks - 1; ++p) {
        const uint64_t r = peerRank(a, p);
        if (r == root) continue;
        const uint32_t j = receiver(r);
        copyBytes(recv + pieceAt(j), a.scratch + dataSlotOffset(a, bank, kFromReceivers, r, block), pieceLen(j),
                  threadIdx.x, blockDim.x);
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) a.state->rounds[block] = round;
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPutThreads) mscclpp_broadcast_sag(const coll::Args args) {
  coll::startWaits();
  coll::broadcastSag(args);
}

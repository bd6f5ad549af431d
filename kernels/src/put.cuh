// put.cuh: the rounds that the put kernels share (allgather_put.cu, broadcast_put.cu): the senders
// store each round's piece into their slot of every peer's scratch, signal, and the receivers
// copy the senders' pieces out of their own slots.
#ifndef MSCCLPP_KERNELS_PUT_CUH_
#define MSCCLPP_KERNELS_PUT_CUH_

#include "common.cuh"

namespace coll {

// A block whose part holds at least kSplitPartBytes moves it in at least kMinRounds rounds, even
// when fewer slots would hold it. Within a round a block first stores (NVLink) and then copies out
// (local memory): in a single round every block does the two one after the other, over several
// the blocks' phases overlap. On 4 x H200 that made 128 MiB AllGathers 10 % faster (2 x H200: 128
// MiB 10 %, 256 MiB 3 %); with parts of 128 KiB, rounds of 32 KiB were 12 % slower on 2 GPUs
// (docs/PERFORMANCE.md).
constexpr uint64_t kSplitPartBytes = 256 << 10;
constexpr uint64_t kMinRounds = 4;

// Moves `bytes` bytes from every sending rank to every other rank: from args.send on a sender to
// out(sender) on every rank (on the sender itself too, unless out(sender) is args.send). The
// senders are every rank (root < 0) or the root alone. Block b of every rank moves part b, in
// rounds of at most chunkBytes (and, for large parts, at least kMinRounds): each sender stores the
// round's piece into its slot of every peer's scratch (and into its own output), signals the
// peers, waits for theirs, and every rank copies the senders' pieces from its scratch slots into
// their outputs. Rounds alternate between two banks (State.rounds): a peer that still copies round
// R out of its slots has not yet signalled round R+1, which the writer of round R+2 into the same
// bank waits for.
//
// kPerPeer: each destination rank r gets its own `bytes` bytes, at src(r) (AlltoAll), instead of
// every rank the same bytes at args.send; the sender then stores each peer's piece with its own
// loads, and copies its own piece from src(rank) unless that is out(rank) (in place).
template <bool kPerPeer = false, typename OutFn, typename SrcFn = const char* (*)(uint64_t)>
__device__ __forceinline__ void putRounds(const Args& a, uint64_t bytes, int64_t root, OutFn out,
                                          SrcFn src = nullptr) {
  constexpr uint64_t kAlign = 16;
  const uint32_t block = blockIdx.x;
  const uint32_t nPeers = a.nRanks - 1;
  const uint64_t part = roundUp(ceilDiv(bytes, gridDim.x), kAlign);
  const uint64_t partBegin = block * part;
  const uint64_t partEnd = partBegin + clampLen(partBegin, part, bytes);
  const uint64_t roundBytes =
      part < kSplitPartBytes ? a.chunkBytes : min(a.chunkBytes, roundUp(ceilDiv(part, kMinRounds), kAlign));
  const char* send = kPerPeer ? src(a.rank) : static_cast<const char*>(a.send);
  char* mine = out(a.rank);
  const bool sends = root < 0 || uint64_t(root) == a.rank;
  const bool inPlace = mine == send;
  uint32_t round = a.state->rounds[block];
  // The peers' scratch buffers in the order this rank visits them (for up to kMaxZeroCopyPeers).
  __shared__ char* peerScratch[kMaxZeroCopyPeers];
  if (threadIdx.x < nPeers && threadIdx.x < kMaxZeroCopyPeers) {
    peerScratch[threadIdx.x] = static_cast<char*>(channel(a, block, rotatedPeer(a, threadIdx.x)).dst);
  }
  __syncthreads();

  for (uint64_t off = partBegin; off < partEnd; off += roundBytes, ++round) {
    const uint32_t bank = round & 1;
    const uint64_t n = partEnd - off < roundBytes ? partEnd - off : roundBytes;
    const uint64_t slot = dataSlotOffset(a, bank, 0, a.rank, block);
    if (kPerPeer) {
      for (uint32_t d = 0; d < nPeers; ++d) {  // around the ring from this rank, as below
        const uint32_t p = rotatedPeer(a, d);
        copyBytes(static_cast<char*>(channel(a, block, p).dst) + slot, src(peerRank(a, p)) + off, n, threadIdx.x,
                  blockDim.x);
      }
      if (!inPlace) copyBytes(mine + off, send + off, n, threadIdx.x, blockDim.x);
    } else if (sends && nPeers <= kMaxZeroCopyPeers) {
      // Each word is loaded once and stored to every peer's slot (around the ring from this
      // rank, so the ranks' writes spread over the links) and, out of place, to this rank's output.
      auto dst = [&](uint32_t d) -> char* { return d < nPeers ? peerScratch[d] + slot : mine + off; };
      broadcastBytes(dst, nPeers + (inPlace ? 0 : 1), send + off, n, threadIdx.x, blockDim.x);
    } else if (sends) {
      for (uint32_t p = 0; p < nPeers; ++p) {
        copyBytes(static_cast<char*>(channel(a, block, p).dst) + slot, send + off, n, threadIdx.x, blockDim.x);
      }
      if (!inPlace) copyBytes(mine + off, send + off, n, threadIdx.x, blockDim.x);
    }
    exchangeSignals(a, block);
    for (uint32_t p = 0; p < nPeers; ++p) {
      const uint64_t r = peerRank(a, p);
      if (root >= 0 && r != uint64_t(root)) continue;
      copyBytes(out(r) + off, a.scratch + dataSlotOffset(a, bank, 0, r, block), n, threadIdx.x, blockDim.x);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) a.state->rounds[block] = round;
}

}  // namespace coll

#endif  // MSCCLPP_KERNELS_PUT_CUH_

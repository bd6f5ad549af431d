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

// The peers' scratch buffers as block `block` reaches them, in the order this rank visits them
// (up to kMaxZeroCopyPeers), into peerScratch (shared memory); every thread calls it.
__device__ __forceinline__ void findPeerScratch(const Args& a, uint32_t block, char** peerScratch) {
  const uint32_t nPeers = a.nRanks - 1;
  if (threadIdx.x < nPeers && threadIdx.x < kMaxZeroCopyPeers) {
    peerScratch[threadIdx.x] = static_cast<char*>(channel(a, block, rotatedPeer(a, threadIdx.x)).dst);
  }
  __syncthreads();
}

// A sender's piece of a round: n bytes at `off` of send go into this rank's data slot of `bank`
// for `block` on every peer and, out of place, to mine + off. Each word is loaded once and stored
// to every peer's slot (around the ring from this rank, so the ranks' writes spread over the
// links) and to this rank's output.
__device__ __forceinline__ void storePiece(const Args& a, uint32_t block, uint32_t bank, char* const* peerScratch,
                                           const char* send, char* mine, uint64_t off, uint64_t n) {
  const uint32_t nPeers = a.nRanks - 1;
  const bool inPlace = mine == send;
  const uint64_t slot = dataSlotOffset(a, bank, 0, a.rank, block);
  if (nPeers <= kMaxZeroCopyPeers) {
    auto dst = [&](uint32_t d) -> char* { return d < nPeers ? peerScratch[d] + slot : mine + off; };
    broadcastBytes(dst, nPeers + (inPlace ? 0 : 1), send + off, n, threadIdx.x, blockDim.x);
    return;
  }
  for (uint32_t p = 0; p < nPeers; ++p) {
    copyBytes(static_cast<char*>(channel(a, block, p).dst) + slot, send + off, n, threadIdx.x, blockDim.x);
  }
  if (!inPlace) copyBytes(mine + off, send + off, n, threadIdx.x, blockDim.x);
}

// Moves `bytes` bytes from every sending rank to every other rank: from args.send on a sender to
// out(sender) on every rank (on the sender itself too, unless out(sender) is args.send). The
// senders are every rank (root < 0) or the root alone. Block b of every rank moves part b, in
// rounds of at most chunkBytes (and, for large parts, at least kMinRounds): each sender stores the
// round's piece into its slot of every peer's scratch (and into its own output), signals the
// peers, waits for theirs, and every rank copies the senders' pieces from its scratch slots into
// their outputs. Rounds alternate between two banks (State.rounds): a peer that still copies round
// R out of its slots has not yet signalled round R+1, which the writer of round R+2 into the same
// bank waits for.
template <typename OutFn>
__device__ __forceinline__ void putRounds(const Args& a, uint64_t bytes, int64_t root, OutFn out) {
  constexpr uint64_t kAlign = 16;
  const uint32_t block = blockIdx.x;
  const uint32_t nPeers = a.nRanks - 1;
  const uint64_t part = roundUp(ceilDiv(bytes, gridDim.x), kAlign);
  const uint64_t partBegin = block * part;
  const uint64_t partEnd = partBegin + clampLen(partBegin, part, bytes);
  const uint64_t roundBytes =
      part < kSplitPartBytes ? a.chunkBytes : min(a.chunkBytes, roundUp(ceilDiv(part, kMinRounds), kAlign));
  const char* send = static_cast<const char*>(a.send);
  char* mine = out(a.rank);
  const bool sends = root < 0 || uint64_t(root) == a.rank;
  uint32_t round = a.state->rounds[block];
  // The peers' scratch buffers in the order this rank visits them (for up to kMaxZeroCopyPeers).
  __shared__ char* peerScratch[kMaxZeroCopyPeers];
  findPeerScratch(a, block, peerScratch);

  for (uint64_t off = partBegin; off < partEnd; off += roundBytes, ++round) {
    const uint32_t bank = round & 1;
    const uint64_t n = partEnd - off < roundBytes ? partEnd - off : roundBytes;
    if (sends) storePiece(a, block, bank, peerScratch, send, mine, off, n);
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

// The pipelined AllGather (pipe): the first half of the grid sends and the second half copies
// out, so that NVLink carries the next rounds while the last ones are copied out of the scratch
// (in putRounds every block does the two one after the other). Sender b and copier b form pair
// b: the sender moves part b of this rank's input, in kPipeRounds or more rounds, into its slots
// (bank round & 1) on every peer and signals each round on channel b; the peer's copier b waits
// for it, copies the piece out and answers on channel senders + b, which frees the bank. The
// copier also answers once when it starts (its rank's earlier calls no longer read the scratch),
// before any of its peers' senders write; a sender ends only when every peer has copied out
// everything it sent, so the next call finds every slot free and State.rounds is left alone.
constexpr uint64_t kPipeRounds = 4;

// Waits, in thread p < nPeers, for `times` signals of peer p on channel `block`; every thread calls it.
__device__ __forceinline__ void waitPeers(const Args& a, uint32_t block, uint32_t times) {
  if (threadIdx.x < a.nRanks - 1) {
    mscclppMemoryChannelDeviceHandle ch = channel(a, block, threadIdx.x);
    for (uint32_t i = 0; i < times; ++i) waitSignal(a, ch);
  }
  syncAfterWaits();
}

// Signals every peer on channel `block` once its threads' earlier stores and loads are done
// (cumulative through bar.sync); every thread calls it.
__device__ __forceinline__ void signalPeers(const Args& a, uint32_t block) {
  __syncthreads();
  if (threadIdx.x < a.nRanks - 1) {
    mscclppMemoryChannelDeviceHandle ch = channel(a, block, threadIdx.x);
    ch.signal();
  }
}

// The geometry of pipe pair `pair`: its part of each rank's `bytes` bytes and the rounds over it.
struct PipePart {
  uint64_t begin, len, roundBytes;
  uint32_t rounds;
};
__device__ __forceinline__ PipePart pipePart(const Args& a, uint64_t bytes, uint32_t senders, uint32_t pair) {
  const uint64_t part = roundUp(ceilDiv(bytes, senders), 16);
  PipePart p;
  p.begin = pair * part;
  p.len = clampLen(p.begin, part, bytes);
  p.roundBytes = min(a.chunkBytes, roundUp(ceilDiv(part, kPipeRounds), 16));
  p.rounds = uint32_t(ceilDiv(p.len, p.roundBytes));
  return p;
}

// A sender of pipeRounds.
__device__ __forceinline__ void pipeSend(const Args& a, uint64_t bytes, uint32_t pair, uint32_t answers, PipePart part) {
  __shared__ char* peerScratch[kMaxZeroCopyPeers];
  findPeerScratch(a, pair, peerScratch);
  const char* send = static_cast<const char*>(a.send);
  char* mine = static_cast<char*>(a.recv) + a.rank * bytes;
  for (uint32_t r = 0; r < part.rounds; ++r) {
    // Round 0 waits for the copiers' start, round r >= 2 for their copy of round r - 2.
    if (r != 1) waitPeers(a, answers, 1);
    const uint64_t off = part.begin + r * part.roundBytes;
    storePiece(a, pair, r & 1, peerScratch, send, mine, off, min(part.roundBytes, part.begin + part.len - off));
    signalPeers(a, pair);
  }
  waitPeers(a, answers, part.rounds < 2 ? part.rounds : 2);  // the copies of the last rounds
}

// A copier of pipeRounds.
__device__ __forceinline__ void pipeCopy(const Args& a, uint64_t bytes, uint32_t pair, uint32_t answers, PipePart part) {
  char* recv = static_cast<char*>(a.recv);
  signalPeers(a, answers);  // started
  for (uint32_t r = 0; r < part.rounds; ++r) {
    waitPeers(a, pair, 1);
    const uint64_t off = part.begin + r * part.roundBytes;
    const uint64_t n = min(part.roundBytes, part.begin + part.len - off);
    for (uint32_t i = 0; i < a.nRanks - 1; ++i) {
      const uint64_t from = peerRank(a, rotatedPeer(a, i));
      copyBytes(recv + from * bytes + off, a.scratch + dataSlotOffset(a, r & 1, 0, from, pair), n, threadIdx.x,
                blockDim.x);
    }
    signalPeers(a, answers);
  }
}

__device__ __forceinline__ void pipeRounds(const Args& a, uint64_t bytes) {
  const uint32_t senders = gridDim.x / 2;
  const bool sender = blockIdx.x < senders;
  const uint32_t pair = sender ? blockIdx.x : blockIdx.x - senders;
  const uint32_t answers = senders + pair;  // the channel of the copiers' answers
  const PipePart part = pipePart(a, bytes, senders, pair);
  if (part.rounds == 0) return;  // the same on every rank: neither the pair nor its peers signal
  if (sender) {
    pipeSend(a, bytes, pair, answers, part);
  } else {
    pipeCopy(a, bytes, pair, answers, part);
  }
}

}  // namespace coll

#endif  // MSCCLPP_KERNELS_PUT_CUH_

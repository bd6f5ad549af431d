// allgather_direct.cu: zero-copy AllGather, for receive buffers registered on every rank.
//
// After the descriptor handshake (every peer has entered the call and said where its receive
// buffer is), every rank copies its input straight into its part of every peer's receive buffer
// and of its own (each word loaded once, stored to every destination), signals the peers and
// waits for their signals: no scratch and no copy out of it. Block b moves part b of the input;
// the peers are visited around the ring from this rank, so that the ranks' writes spread over
// the links.
#include "common.cuh"

namespace coll {

__device__ __forceinline__ void allgatherDirect(const Args& a) {
  constexpr uint64_t kAlign = 16;
  __shared__ char* peerRecv[kMaxZeroCopyPeers];
  const uint32_t block = blockIdx.x;
  const uint64_t bytes = a.count;
  exchangeDescriptors(a, block, 0, bytes * a.nRanks, nullptr, peerRecv);

  const uint64_t part = roundUp(ceilDiv(bytes, gridDim.x), kAlign);
  const uint64_t begin = block * part;
  const uint64_t n = clampLen(begin, part, bytes);
  const char* src = static_cast<const char*>(a.send) + begin;
  const uint64_t at = a.rank * bytes + begin;  // where this part goes in every receive buffer
  char* mine = static_cast<char*>(a.recv) + at;
  // Destinations: the peers around the ring, then this rank's own output unless in place.
  const uint32_t nDst = a.nRanks - 1 + (mine != src ? 1 : 0);
  auto dst = [&](uint32_t d) -> char* { return d < a.nRanks - 1 ? peerRecv[rotatedPeer(a, d)] + at : mine; };
  broadcastBytes(dst, nDst, src, n, threadIdx.x, blockDim.x);
  exchangeSignals(a, block);
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPutThreads) mscclpp_allgather_direct(const coll::Args args) {
  coll::startWaits();
  coll::allgatherDirect(args);
}

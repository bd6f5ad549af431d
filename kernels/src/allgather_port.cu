// allgather_port.cu: zero-copy AllGather through port channels: the copy engines move the data.
//
// For receive buffers registered on every rank and bound to port channels (collectives/ports.go).
// Block b handles part b of this rank's input: after the descriptor handshake (every peer has
// entered the call and said where its receive buffer is), it copies the part into this rank's
// own receive buffer when out of place, then asks this rank's proxy to copy it into every peer's
// receive buffer, the peers around the ring from this rank (one proxy's copies run in order, so
// the ranks' copies spread over the peers). The last block to get that far asks for a signal to
// every peer (after every part's copy, in FIFO order), waits for every peer's signal (its parts
// have landed here) and for the proxy to finish this rank's copies (this rank's part may be
// overwritten once the call is over). The SMs move no data between the GPUs; out of place, the
// copy engines copy the first parts while the blocks still copy the later ones.
#include "common.cuh"

namespace coll {

__device__ __forceinline__ void allgatherPort(const Args& a) {
  constexpr uint64_t kAlign = 16;
  __shared__ char* peerRecv[kMaxZeroCopyPeers];
  __shared__ bool last;
  const uint32_t block = blockIdx.x;
  const uint64_t bytes = a.count;
  const uint32_t nPeers = a.nRanks - 1;
  exchangeDescriptors(a, block, 0, bytes * a.nRanks, nullptr, peerRecv);

  const uint64_t part = roundUp(ceilDiv(bytes, gridDim.x), kAlign);
  const uint64_t begin = block * part;
  const uint64_t n = clampLen(begin, part, bytes);
  const char* send = static_cast<const char*>(a.send);
  char* mine = static_cast<char*>(a.recv) + a.rank * bytes;
  if (mine != send) copyBytes(mine + begin, send + begin, n, threadIdx.x, blockDim.x);
  __syncthreads();
  const uint64_t k = descRegistration(a.recvDesc);
  mscclppPortChannelDeviceHandle* ports = a.ports + k * nPeers;
  if (threadIdx.x == 0) {
    __threadfence_system();  // the block's copy is visible to the copy engines
    const uint64_t at = a.rank * bytes + begin;  // where the part goes in every receive buffer
    const uint64_t src = descOffset(a.recvDesc) + at;
    for (uint32_t i = 0; i < nPeers && n > 0; ++i) {
      const uint32_t p = rotatedPeer(a, i);
      portPut(ports[p], portOffset(a, k, p, peerRecv[p], bytes * a.nRanks) + at, src, n);
    }
    // Counted after the block's requests are queued: the last block's signals follow them all.
    last = atomicAdd(&a.state->blocksDone, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last) finishPortCopies(a, ports);
  if (threadIdx.x == 0) {
    if (last) a.state->blocksDone = 0;
    countBlock(a.state);
  }
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPutThreads, COLL_ONE_BLOCK_PER_SM) mscclpp_allgather_port(const coll::Args args) {
  coll::startWaits();
  coll::allgatherPort(args);
}

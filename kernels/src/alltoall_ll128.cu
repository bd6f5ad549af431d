// alltoall_ll128.cu: AlltoAll with LL128 lines (ll128.cuh), for blocks of up to a line slot
// (2.1 MiB) on ranks joined by NVLink.
//
// Every rank writes block r of its input (a.count bytes at send + r * a.count), as lines flagged
// with this call's flag, into its slot of peer r's line region, and copies its own block into its
// output; then it unpacks each peer's slot into that peer's block of the output. Line regions
// alternate between calls, as in allgather_ll128.cu, which is safe for the same reason: every rank
// receives from every peer, so a rank that writes call N + 2 into a peer's region has received
// that peer's lines of call N + 1, which the peer wrote only after it had read all of call N.
//
// In place (send == recv) needs no copy: a warp unpacks exactly the lines of each block that it
// packed from the same place before (the same warp takes the same groups of a block in both
// loops), so no line is overwritten before it was sent, and the rank's own block stays put.
//
// It runs on the collectives' scratch and State, not on the p2p lanes of sendrecv.cu: an
// AlltoAll is a collective that every rank calls in the same order, as the other collectives.
#include "ll128.cuh"

namespace coll {

__device__ __forceinline__ void alltoallLL128(const Args& a) {
  const uint64_t flag = packetFlag(callsBefore(a.state));
  const uint32_t parity = callsBefore(a.state) & 1;
  const uint64_t bytes = a.count;
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t nWarps = uint64_t(gridDim.x) * blockDim.x / 32;
  const uint64_t mySlot = packetSlotOffset(a, parity, kPacketLines, a.rank);

  for (uint32_t p = 0; p < a.nRanks - 1; ++p) {
    sendLines(a, p, p + 1, mySlot, send + peerRank(a, p) * bytes, nullptr, bytes, flag, warp, nWarps);
  }
  if (send != recv) {
    copyBytes(recv + a.rank * bytes, send + a.rank * bytes, bytes, blockIdx.x * blockDim.x + threadIdx.x,
              gridDim.x * blockDim.x);
  }
  receivePeersLines(a, parity, recv, bytes, flag, warp, nWarps);
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_alltoall_ll128(const coll::Args args) {
  coll::startWaits();
  coll::alltoallLL128(args);
}

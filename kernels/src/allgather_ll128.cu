// allgather_ll128.cu: AllGather with LL128 lines (ll128.cuh), for medium messages.
//
// Every rank writes its input, as lines flagged with this call's flag, into its slot of every
// peer's line region and copies it into its own part of the output; then it unpacks each peer's
// slot into that peer's part of the output. Line regions alternate between calls, as packet
// regions do (see State).
#include "ll128.cuh"

namespace coll {

__device__ __forceinline__ void allgatherLL128(const Args& a) {
  const uint64_t flag = packetFlag(callsBefore(a.state));
  const uint32_t parity = callsBefore(a.state) & 1;
  const uint64_t bytes = a.count;
  char* recv = static_cast<char*>(a.recv);
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t nWarps = uint64_t(gridDim.x) * blockDim.x / 32;

  sendLines(a, 0, a.nRanks - 1, packetSlotOffset(a, parity, kPacketLines, a.rank), static_cast<const char*>(a.send),
            recv + a.rank * bytes, bytes, flag, warp, nWarps);
  receivePeersLines(a, parity, recv, bytes, flag, warp, nWarps);
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_allgather_ll128(const coll::Args args) {
  coll::startWaits();
  coll::allgatherLL128(args);
}

// allgather_packet.cu: AllGather with LL16 packets, for small messages.
//
// Every rank writes its input, as packets flagged with this call's flag, into its slot of every
// peer's packet region and copies it into its own part of the output; then it unpacks each peer's
// slot into that peer's part of the output. Packet regions alternate between calls (see State).
#include "common.cuh"

namespace coll {

__device__ __forceinline__ void allgatherPacket(const Args& a) {
  const uint32_t flag = packetFlag(callsBefore(a.state));
  const uint32_t parity = callsBefore(a.state) & 1;
  const uint64_t bytes = a.count;
  char* recv = static_cast<char*>(a.recv);
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nThreads = uint64_t(gridDim.x) * blockDim.x;

  sendPackets(a, packetSlotOffset(a, parity, kPacketReduce, a.rank), static_cast<const char*>(a.send),
              recv + a.rank * bytes, bytes, flag, tid, nThreads);
  for (uint32_t p = 0; p < a.nRanks - 1; ++p) {
    const uint64_t r = peerRank(a, p);
    receivePackets(a, packetSlotOffset(a, parity, kPacketReduce, r), recv + r * bytes, bytes, flag, tid, nThreads);
  }
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_allgather_packet(const coll::Args args) {
  coll::startWaits();
  coll::allgatherPacket(args);
}

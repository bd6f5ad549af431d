// broadcast_packet.cu: Broadcast with LL16 packets, for small messages.
//
// The root writes its input, as packets flagged with this call's flag, into its slot of every
// peer's packet region and copies it into its output (unless in place); every other rank unpacks
// the root's slot into its output. Packet regions alternate between calls (see State).
#include "common.cuh"

namespace coll {

__device__ __forceinline__ void broadcastPacket(const Args& a) {
  const uint32_t flag = packetFlag(a.state->calls);
  const uint64_t slot = packetSlotOffset(a, a.state->calls & 1, kPacketReduce, a.op);  // args.op: the root
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nThreads = uint64_t(gridDim.x) * blockDim.x;
  char* recv = static_cast<char*>(a.recv);
  if (a.rank == a.op) {
    sendPackets(a, slot, static_cast<const char*>(a.send), recv, a.count, flag, tid, nThreads);
  } else {
    receivePackets(a, slot, recv, a.count, flag, tid, nThreads);
  }
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_broadcast_packet(const coll::Args args) {
  coll::broadcastPacket(args);
}

// broadcast_packet.cu: Broadcast with LL16 packets, for small messages.
//
// Every other rank (a receiver) first tells the root that it has entered the call (one packet,
// flagged with this call's flag, in its slot of the root's packet region), then unpacks the
// root's slot into its output. The root waits for every receiver's packet, then writes its input,
// as packets flagged with this call's flag, into its slot of every peer's packet region and
// copies it into its output (unless in place). Packet regions alternate between calls (see
// State), which is safe only if no rank finishes a call before every rank has entered it: the
// root reads no data, so without the wait it could run calls ahead and overwrite packets a slow
// receiver still reads (seen: 4 ranks sharing an H100 hung in a run of Broadcasts), and a
// receiver done with the root's data could run ahead of another receiver.
#include "common.cuh"

namespace coll {

__device__ __forceinline__ void broadcastPacket(const Args& a) {
  const uint32_t flag = packetFlag(callsBefore(a.state));
  const uint32_t parity = callsBefore(a.state) & 1;
  const uint64_t root = a.op;
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nThreads = uint64_t(gridDim.x) * blockDim.x;
  char* recv = static_cast<char*>(a.recv);
  if (a.rank == root) {
    // Every block waits, for every block writes: thread p reads receiver p's packet.
    if (threadIdx.x < a.nRanks - 1) readPacket(a, packetSlotOffset(a, parity, kPacketReduce, peerRank(a, threadIdx.x)), 0, flag);
    syncAfterWaits();
    sendPackets(a, packetSlotOffset(a, parity, kPacketReduce, root), static_cast<const char*>(a.send), recv, a.count,
                flag, tid, nThreads);
  } else {
    if (tid == 0) {
      char* rootScratch = static_cast<char*>(a.channels[peerIndex(a, root)].dst);
      reinterpret_cast<mscclppLL16Packet*>(rootScratch + packetSlotOffset(a, parity, kPacketReduce, a.rank))[0].write(0, flag);
    }
    receivePackets(a, packetSlotOffset(a, parity, kPacketReduce, root), recv, a.count, flag, tid, nThreads);
  }
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_broadcast_packet(const coll::Args args) {
  coll::startWaits();
  coll::broadcastPacket(args);
}

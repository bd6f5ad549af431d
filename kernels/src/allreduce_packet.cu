// allreduce_packet.cu: one-shot AllReduce with LL16 packets, for small messages.
//
// Every rank writes its whole input, as packets flagged with this call's flag, into its slot of
// every peer's packet region; then each rank waits for the peers' packets in its own scratch and
// reduces all ranks' data in rank order (so every rank computes bit-identical results). No
// separate signal: a packet's flag says its data has landed. The two packet regions alternate
// between calls, so a fast rank never overwrites packets a slow peer still reads (see State).
#include "common.cuh"

namespace coll {

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreducePacket(const Args& a) {
  const uint32_t flag = packetFlag(callsBefore(a.state));
  const uint32_t parity = callsBefore(a.state) & 1;
  const uint64_t bytes = a.count * sizeof(T);
  const uint64_t words = ceilDiv(bytes, mscclppLL16Packet::kPayloadBytes);
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const bool sendAligned = aligned(send, 8), recvAligned = aligned(recv, 8);
  const uint64_t mySlot = packetSlotOffset(a, parity, kPacketReduce, a.rank);
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nThreads = uint64_t(gridDim.x) * blockDim.x;

  // 1. This rank's words to every peer.
  for (uint64_t i = tid; i < words; i += nThreads) {
    writePacketToPeers(a, mySlot, i, loadWord(send, i, bytes, sendAligned), flag);
  }
  // 2. Every rank's word i, reduced in rank order.
  for (uint64_t i = tid; i < words; i += nThreads) {
    storeWord(recv, i, bytes, recvAligned, reducePacketWord<T, Op>(a, parity, flag, send, bytes, sendAligned, i));
  }
  finishCall(a.state);
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_allreduce_packet, coll::allreducePacket, coll::kPacketThreads, COLL_ANY_BLOCKS_PER_SM)

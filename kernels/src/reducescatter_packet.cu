// reducescatter_packet.cu: ReduceScatter with LL16 packets, for small messages: the first half of
// AllReduce's packet2 (packetReduceScatter, common.cuh).
//
// The input holds one shard of args.count elements per rank. Every rank writes its part of shard
// r, as packets flagged with this call's flag, into its reduce slot on rank r; rank r waits for
// them and reduces its shard in rank order into its output. No semaphore: every packet carries
// its own flag. Packet regions alternate between calls (see State).
#include "common.cuh"

namespace coll {

template <typename T, uint32_t Op>
__device__ __forceinline__ void reducescatterPacket(const Args& a) {
  const uint32_t flag = packetFlag(callsBefore(a.state));
  const uint64_t shardBytes = a.count * sizeof(T);
  char* recv = static_cast<char*>(a.recv);
  const bool recvAligned = aligned(recv, 8);
  packetReduceScatter<T, Op>(a, callsBefore(a.state) & 1, flag, static_cast<const char*>(a.send), shardBytes,
                             shardBytes * a.nRanks,
                             [&](uint64_t i, uint64_t acc) { storeWord(recv, i, shardBytes, recvAligned, acc); });
  finishCall(a.state);
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_reducescatter_packet, coll::reducescatterPacket, coll::kPacketThreads, COLL_ANY_BLOCKS_PER_SM)

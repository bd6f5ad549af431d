// allreduce_packet2.cu: two-shot AllReduce with LL16 packets, for medium messages on more than
// two ranks (on two, the one-shot packet kernel moves the same bytes in one step).
//
// The buffer is cut into one shard of 8-byte words per rank. Every rank writes its words of
// shard r, as packets flagged with this call's flag, into its reduce slot on rank r; rank r waits
// for them, reduces its shard in rank order, stores the result and writes it as packets into its
// gather slot on every peer; every rank unpacks the peers' gather slots into the output. No
// semaphore and no barrier: every packet carries its own flag, and all blocks are resident (the
// grid is at most kMaxBlocks blocks). Packet regions alternate between calls (see State).
#include "common.cuh"

namespace coll {

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreducePacket2(const Args& a) {
  const uint32_t flag = packetFlag(callsBefore(a.state));
  const uint32_t parity = callsBefore(a.state) & 1;
  const uint64_t bytes = a.count * sizeof(T);
  const uint64_t words = ceilDiv(bytes, mscclppLL16Packet::kPayloadBytes);
  const uint64_t shardBytes = ceilDiv(words, a.nRanks) * mscclppLL16Packet::kPayloadBytes;  // whole words
  const uint32_t nPeers = a.nRanks - 1;
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const bool recvAligned = aligned(recv, 8);
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nThreads = uint64_t(gridDim.x) * blockDim.x;
  const uint64_t myGatherSlot = packetSlotOffset(a, parity, kPacketGather, a.rank);
  const uint64_t myFirst = a.rank * shardBytes / mscclppLL16Packet::kPayloadBytes;  // our shard's first word

  // 1-2. Our words of every peer's shard, to that peer; our shard, every rank's words reduced in
  // rank order, to the output and to every peer.
  packetReduceScatter<T, Op>(a, parity, flag, send, shardBytes, bytes,
                             [&](uint64_t i, uint64_t acc) {
                               storeWord(recv, myFirst + i, bytes, recvAligned, acc);
                               writePacketToPeers(a, myGatherSlot, i, acc, flag);
                             });
  // 3. The peers' reduced shards.
  for (uint32_t p = 0; p < nPeers; ++p) {
    const uint64_t r = peerRank(a, p);
    receivePackets(a, packetSlotOffset(a, parity, kPacketGather, r), recv + r * shardBytes,
                   clampLen(r * shardBytes, shardBytes, bytes), flag, tid, nThreads);
  }
  finishCall(a.state);
}

}  // namespace coll

// One block per SM, as every launch has (the grid is at most the SM count): with
// COLL_ANY_BLOCKS_PER_SM, ptxas's heuristic gave the 8-byte types' entry points, five operators
// each, 32 registers and spilled (sm_90); with this budget they take about 46 and do not.
COLL_REDUCE_ENTRIES(mscclpp_allreduce_packet2, coll::allreducePacket2, coll::kPacketThreads, COLL_ONE_BLOCK_PER_SM)

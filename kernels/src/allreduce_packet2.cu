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
  const uint32_t flag = packetFlag(a.state->calls);
  const uint32_t parity = a.state->calls & 1;
  const uint64_t bytes = a.count * sizeof(T);
  const uint64_t words = ceilDiv(bytes, mscclppLL16Packet::kPayloadBytes);
  const uint64_t shardWords = ceilDiv(words, a.nRanks);
  const uint32_t nPeers = a.nRanks - 1;
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const bool sendAligned = aligned(send, 8), recvAligned = aligned(recv, 8);
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nThreads = uint64_t(gridDim.x) * blockDim.x;
  const uint64_t myReduceSlot = packetSlotOffset(a, parity, kPacketReduce, a.rank);
  const uint64_t myGatherSlot = packetSlotOffset(a, parity, kPacketGather, a.rank);
  const uint64_t myFirst = a.rank * shardWords;
  const uint64_t myWords = clampLen(myFirst, shardWords, words);

  // 1. Our words of every peer's shard, to that peer.
  for (uint32_t p = 0; p < nPeers; ++p) {
    const uint64_t first = peerRank(a, p) * shardWords;
    const uint64_t n = clampLen(first, shardWords, words);
    mscclppLL16Packet* dst = reinterpret_cast<mscclppLL16Packet*>(static_cast<char*>(a.channels[p].dst) + myReduceSlot);
    for (uint64_t i = tid; i < n; i += nThreads) dst[i].write(loadWord(send, first + i, bytes, sendAligned), flag);
  }
  // 2. Our shard: every rank's words in rank order; the result to the output and to every peer.
  for (uint64_t i = tid; i < myWords; i += nThreads) {
    uint64_t acc = 0;
    for (uint32_t r = 0; r < a.nRanks; ++r) {
      uint64_t v;
      if (r == a.rank) {
        v = loadWord(send, myFirst + i, bytes, sendAligned);
      } else {
        v = readPacket(a, packetSlotOffset(a, parity, kPacketReduce, r), i, flag);
      }
      acc = r == 0 ? v : applyWord<T, Op>(acc, v);
    }
    storeWord(recv, myFirst + i, bytes, recvAligned, acc);
    writePacketToPeers(a, myGatherSlot, i, acc, flag);
  }
  // 3. The peers' reduced shards.
  for (uint32_t p = 0; p < nPeers; ++p) {
    const uint64_t r = peerRank(a, p);
    const uint64_t first = r * shardWords;
    const uint64_t n = clampLen(first, shardWords, words);
    const uint64_t slot = packetSlotOffset(a, parity, kPacketGather, r);
    for (uint64_t i = tid; i < n; i += nThreads) storeWord(recv, first + i, bytes, recvAligned, readPacket(a, slot, i, flag));
  }
  finishCall(a.state);
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_allreduce_packet2, coll::allreducePacket2, coll::kPacketThreads, COLL_ANY_BLOCKS_PER_SM)

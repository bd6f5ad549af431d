// allgather_packet.cu: AllGather with LL16 packets, for small messages.
//
// Every rank writes its input, as packets flagged with this call's flag, into its slot of every
// peer's packet region and copies it into its own part of the output; then it unpacks each peer's
// slot into that peer's part of the output. Packet regions alternate between calls (see State).
#include "common.cuh"

namespace coll {

__device__ __forceinline__ void allgatherPacket(const Args& a) {
  const uint32_t flag = packetFlag(a.state->calls);
  const uint32_t parity = a.state->calls & 1;
  const uint64_t bytes = a.count;
  const uint64_t words = ceilDiv(bytes, mscclppLL16Packet::kPayloadBytes);
  const uint32_t nPeers = a.nRanks - 1;
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  char* mine = recv + a.rank * bytes;
  const bool inPlace = mine == send;
  const bool sendAligned = aligned(send, 8), mineAligned = aligned(mine, 8);
  const uint64_t mySlot = packetSlotOffset(a, parity, kPacketReduce, a.rank);
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nThreads = uint64_t(gridDim.x) * blockDim.x;

  for (uint64_t i = tid; i < words; i += nThreads) {
    const uint64_t v = loadWord(send, i, bytes, sendAligned);
    writePacketToPeers(a, mySlot, i, v, flag);
    if (!inPlace) storeWord(mine, i, bytes, mineAligned, v);
  }
  for (uint32_t p = 0; p < nPeers; ++p) {
    const uint64_t r = peerRank(a, p);
    const uint64_t slot = packetSlotOffset(a, parity, kPacketReduce, r);
    char* out = recv + r * bytes;
    const bool outAligned = aligned(out, 8);
    for (uint64_t i = tid; i < words; i += nThreads) storeWord(out, i, bytes, outAligned, readPacket(a, slot, i, flag));
  }
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_allgather_packet(const coll::Args args) {
  coll::allgatherPacket(args);
}

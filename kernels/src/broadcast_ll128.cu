// broadcast_ll128.cu: Broadcast along a chain in LL128 lines (ll128.cuh), for medium messages on
// 3 or more ranks.
//
// The ranks form the chain of broadcast_ring.cu (root, root + 1, ..., root - 1 mod nRanks), but
// the message moves in lines instead of signalled rounds: the root writes its input, as lines
// flagged with this call's flag, into its successor's line region; every other rank waits for
// each line in its own region, stores it on unchanged to its successor (the last rank has none)
// and its data into its output. A line is passed on as soon as it arrives, so the chain's hops
// overlap down to a warp's four lines, and no rank fences or signals: the flag that arrives with
// each line is the only synchronization. The message fills the line regions of all nRanks slots
// of the call's parity (nRanks x 2.1 MiB), which only the predecessor writes in this call.
//
// Line regions alternate between calls (see State), and a rank that only receives from its
// predecessor could run calls ahead of its successor and overwrite lines that a slow successor
// still reads. So every rank but the root first tells its predecessor that it has entered the
// call (one LL16 packet, flagged with this call's flag, in its slot of the predecessor's packet
// region), and a rank with a successor waits for that packet before it stores any line there;
// as in broadcast_packet.cu.
#include "ll128.cuh"

namespace coll {

__device__ __forceinline__ void broadcastLL128(const Args& a) {
  const uint32_t flag = packetFlag(callsBefore(a.state));
  const uint32_t parity = callsBefore(a.state) & 1;
  const uint32_t n = a.nRanks;
  const uint32_t pos = (a.rank + n - a.op) % n;  // place in the chain; the root's is 0
  const bool hasPred = pos > 0, hasSucc = pos + 1 < n;
  const uint32_t pred = (a.rank + n - 1) % n, succ = (a.rank + 1) % n;
  const uint64_t region = packetSlotOffset(a, parity, kPacketLines, 0);

  if (hasPred && blockIdx.x == 0 && threadIdx.x == 0) {
    char* predScratch = static_cast<char*>(a.channels[peerIndex(a, pred)].dst);
    reinterpret_cast<mscclppLL16Packet*>(predScratch + packetSlotOffset(a, parity, kPacketReduce, a.rank))[0].write(0, flag);
  }
  if (hasSucc && threadIdx.x == 0) readPacket(a, packetSlotOffset(a, parity, kPacketReduce, succ), 0, flag);
  syncAfterWaits();

  const LinePlace at;
  const uint64_t bytes = a.count;
  const uint64_t words = ceilDiv(bytes, 8);
  const uint64_t lines = linesOf(bytes);
  const char* send = static_cast<const char*>(a.send);
  char* out = static_cast<char*>(a.recv);
  char* succLines = hasSucc ? static_cast<char*>(a.channels[peerIndex(a, succ)].dst) + region : nullptr;
  const bool sendAligned = aligned(send, 8), outAligned = aligned(out, 8);
  const bool copyOut = hasPred || a.send != a.recv;
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t nWarps = uint64_t(gridDim.x) * blockDim.x / 32;
  for (uint64_t group = warp; group * kLinesPerWarp < lines; group += nWarps) {
    const uint64_t line = group * kLinesPerWarp + at.lineLane;
    const uint64_t w0 = line * kLineDataWords + 2 * at.piece;
    uint64_t v0, v1;
    if (hasPred) {
      waitLines(a, region, at, line, lines, flag, v0, v1);
    } else {
      v0 = w0 < words ? loadWord(send, w0, bytes, sendAligned) : 0;
      v1 = at.flagLane ? flag : w0 + 1 < words ? loadWord(send, w0 + 1, bytes, sendAligned) : 0;
      __syncwarp();
    }
    if (hasSucc && line < lines) mscclppStoreVolatile128(succLines + line * kLineBytes + at.piece * 16, v0, v1);
    storeLineWords(out, bytes, outAligned, at, copyOut, w0, v0, v1);
  }
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_broadcast_ll128(const coll::Args args) {
  coll::startWaits();
  coll::broadcastLL128(args);
}

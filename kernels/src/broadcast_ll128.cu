// broadcast_ll128.cu: Broadcast along a chain in LL128 lines (ll128.cuh), for medium messages on
// 3 or more ranks.
//
// The ranks form the chain of broadcast_ring.cu (root, root + 1, ..., root - 1 mod nRanks), but
// the message moves in lines instead of signalled rounds: the root writes its input, as lines
// flagged with this call's flag, into its successor's line region; every other rank waits for
// each line in its own region, stores it on unchanged to its successor (the last rank has none)
// and its data into its output. A line is passed on as soon as it arrives, so the chain's hops
// overlap down to a warp's four lines, and no rank fences or signals for the data: the flag that
// arrives with each line is its only synchronization.
//
// The line region of a rank is all nRanks line slots of the call's parity (nRanks x 2.1 MiB of
// data), which only the predecessor writes in this call. A message that fits it goes in one
// wave; a larger one in waves of half of it, alternating between the halves, each wave's lines
// flagged with the call's flag in the low half of the flag word and the wave's number in the
// high half. Before block b of a rank writes wave w >= 2 into a half, it waits for block b of its
// successor to report (a "credit" packet) that it has read wave w - 2 there: the grid is the
// same on every rank, so block b reads exactly the lines that block b of its predecessor writes.
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
  // Packets to the predecessor, in its slot of our rank: 0 "entered", 1 + block "credit".
  mscclppLL16Packet* toPred =
      hasPred ? reinterpret_cast<mscclppLL16Packet*>(static_cast<char*>(a.channels[peerIndex(a, pred)].dst) +
                                                     packetSlotOffset(a, parity, kPacketReduce, a.rank))
              : nullptr;
  const mscclppLL16Packet* fromSucc =
      reinterpret_cast<const mscclppLL16Packet*>(a.scratch + packetSlotOffset(a, parity, kPacketReduce, succ));

  if (hasPred && blockIdx.x == 0 && threadIdx.x == 0) toPred[0].write(0, flag);
  if (hasSucc && threadIdx.x == 0) waitPacket(a, &fromSucc[0], flag);
  syncAfterWaits();

  const LinePlace at;
  const uint64_t bytes = a.count;
  const uint64_t words = ceilDiv(bytes, 8);
  const uint64_t lines = linesOf(bytes);
  const uint64_t regionLines = n * a.slotBytes / kLineBytes;
  const uint64_t waveLines = lines <= regionLines ? lines : regionLines / 2 / kLinesPerWarp * kLinesPerWarp;
  const uint64_t waves = ceilDiv(lines, waveLines);
  const char* send = static_cast<const char*>(a.send);
  char* out = static_cast<char*>(a.recv);
  char* succRegion = hasSucc ? static_cast<char*>(a.channels[peerIndex(a, succ)].dst) + region : nullptr;
  const bool sendAligned = aligned(send, 8), outAligned = aligned(out, 8);
  const bool copyOut = hasPred || a.send != a.recv;
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t nWarps = uint64_t(gridDim.x) * blockDim.x / 32;
  for (uint64_t w = 0; w < waves; ++w) {
    const uint64_t first = w * waveLines, end = min(lines, first + waveLines);
    const uint64_t half = (w & 1) * waveLines * kLineBytes;  // where the wave's lines go
    const uint64_t waveFlag = flag | (w << 32);
    if (w >= 2 && hasSucc) {  // the successor's block has read wave w - 2 from the same half
      if (threadIdx.x == 0) {
        waitUntil(a, [&] {
          uint64_t done = 0;
          return fromSucc[1 + blockIdx.x].readOnce(flag, &done) && done >= w - 1;
        });
      }
      syncAfterWaits();
    }
    for (uint64_t group = warp; first + group * kLinesPerWarp < end; group += nWarps) {
      const uint64_t line = first + group * kLinesPerWarp + at.lineLane;  // of the message
      const uint64_t slot = half + (line - first) * kLineBytes + at.piece * 16;
      const uint64_t w0 = line * kLineDataWords + 2 * at.piece;
      uint64_t v0, v1;
      if (hasPred) {
        waitLines(a, region + half, at, line - first, end - first, waveFlag, v0, v1);
      } else {
        v0 = w0 < words ? loadWord(send, w0, bytes, sendAligned) : 0;
        v1 = at.flagLane ? waveFlag : w0 + 1 < words ? loadWord(send, w0 + 1, bytes, sendAligned) : 0;
        __syncwarp();
      }
      if (hasSucc && line < end) mscclppStoreVolatile128(succRegion + slot, v0, v1);
      storeLineWords(out, bytes, outAligned, at, copyOut && line < end, w0, v0, v1);
    }
    if (hasPred && w + 2 < waves) {  // tell the predecessor's block that this wave's half is free
      __syncthreads();
      if (threadIdx.x == 0) toPred[1 + blockIdx.x].write(w + 1, flag);
    }
  }
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_broadcast_ll128(const coll::Args args) {
  coll::startWaits();
  coll::broadcastLL128(args);
}

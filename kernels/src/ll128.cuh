// ll128.cuh: LL128 lines, the packet format for medium sizes: 128 bytes, the first 120 data and
// the last 8 a flag, written by 8 threads of a warp with one 16-byte volatile store each, in one
// warp instruction. NVLink delivers such a line to the peer whole, so a reader that loads the line
// the same way and finds the flag has the data too (the property NCCL's LL128 protocol rests on;
// NCCL enables it on NVLink from Volta on). The links carry 128 bytes per 120 of data, where LL16
// packets carry 16 per 8.
//
// Lines live in their own scratch region (phase kPacketLines), never read as LL16 packets: an
// LL16 reader would take a line's data for flags. A line's flag is a 64-bit word whose low half is
// the call's packet flag and whose high half is 0, or in a Broadcast chain the wave's number
// (broadcast_ll128.cu), so a line never mistakes anything but a line of the same call and wave
// for its own.
#ifndef MSCCLPP_KERNELS_LL128_CUH_
#define MSCCLPP_KERNELS_LL128_CUH_

#include "common.cuh"

namespace coll {

constexpr uint32_t kLineBytes = 128;
constexpr uint32_t kLineDataWords = 15;  // 8-byte data words per line (kLineBytes / 8 - 1); the 16th is the flag
constexpr uint32_t kLineLanes = 8;       // threads per line: two words each
constexpr uint32_t kLinesPerWarp = 32 / kLineLanes;
constexpr unsigned kFullWarp = 0xffffffffu;

// Where a thread works: lane l of a warp holds words 2 (l % 8) and 2 (l % 8) + 1 of line l / 8 of
// the warp's group of kLinesPerWarp lines; the group's lines are g * kLinesPerWarp + [0, 4) for
// group g. The last lane of a line (piece kLineLanes - 1) holds data word 14 and the flag.
struct LinePlace {
  uint32_t piece;     // lane % kLineLanes
  uint32_t lineLane;  // lane / kLineLanes: the line of the group
  bool flagLane;      // piece == kLineLanes - 1
  __device__ __forceinline__ LinePlace() {
    const uint32_t lane = threadIdx.x % 32;
    piece = lane % kLineLanes;
    lineLane = lane / kLineLanes;
    flagLane = piece == kLineLanes - 1;
  }
};

// Lines that carry `bytes` bytes.
__device__ __forceinline__ uint64_t linesOf(uint64_t bytes) { return ceilDiv(ceilDiv(bytes, 8), kLineDataWords); }

// Stores this lane's data words of a line, v0 and (but on the flag lane) v1, whose first is word
// w0 of the `bytes` bytes at out: only when `store` holds, and only the words before the end.
__device__ __forceinline__ void storeLineWords(char* out, uint64_t bytes, bool outAligned, const LinePlace& at,
                                               bool store, uint64_t w0, uint64_t v0, uint64_t v1) {
  const uint64_t words = ceilDiv(bytes, 8);
  if (store && w0 < words) storeWord(out, w0, bytes, outAligned, v0);
  if (store && !at.flagLane && w0 + 1 < words) storeWord(out, w0 + 1, bytes, outAligned, v1);
}

// Loads this lane's words of a line, whose first is word w0 of the `bytes` bytes (`words` words)
// at src, into v0 and v1: zero past the end, and the flag in v1 on the flag lane.
__device__ __forceinline__ void loadLineWords(const char* src, uint64_t words, uint64_t bytes, bool srcAligned,
                                              const LinePlace& at, uint64_t w0, uint64_t flag, uint64_t& v0,
                                              uint64_t& v1) {
  v0 = w0 < words ? loadWord(src, w0, bytes, srcAligned) : 0;
  v1 = at.flagLane ? flag : w0 + 1 < words ? loadWord(src, w0 + 1, bytes, srcAligned) : 0;
}

// Writes the `bytes` bytes at src, as lines flagged with flag, into the slot at slotOffset of the
// scratch of peers [peerBegin, peerEnd) (peer indices), and stores them at out too unless out is
// src or null; warp `warp` of nWarps (the loops are uniform across a warp, which stays converged
// at the stores).
__device__ __forceinline__ void sendLines(const Args& a, uint32_t peerBegin, uint32_t peerEnd, uint64_t slotOffset,
                                          const char* src, char* out, uint64_t bytes, uint64_t flag, uint64_t warp,
                                          uint64_t nWarps) {
  const LinePlace at;
  const uint64_t words = ceilDiv(bytes, 8);
  const uint64_t lines = linesOf(bytes);
  const bool srcAligned = aligned(src, 8), outAligned = aligned(out, 8), copy = out != nullptr && out != src;
  for (uint64_t group = warp; group * kLinesPerWarp < lines; group += nWarps) {
    const uint64_t line = group * kLinesPerWarp + at.lineLane;
    const uint64_t w0 = line * kLineDataWords + 2 * at.piece;
    uint64_t v0, v1;
    loadLineWords(src, words, bytes, srcAligned, at, w0, flag, v0, v1);
    __syncwarp();
    if (line < lines) {
      for (uint32_t p = peerBegin; p < peerEnd; ++p) {
        char* peerScratch = static_cast<char*>(a.channels[p].dst);
        mscclppStoreVolatile128(peerScratch + slotOffset + line * kLineBytes + at.piece * 16, v0, v1);
      }
    }
    storeLineWords(out, bytes, outAligned, at, copy, w0, v0, v1);
  }
}

// Loads this lane's 16 bytes of `line` in the slot at slotOffset of this rank's scratch into v0
// and v1 until the flag lane of every line of the warp's group holds flag (lines past `lines`
// are not loaded). Every lane of the warp calls it together. A is Args or P2PArgs (sendrecv.cuh):
// what it reads of them, scratch, abort and maxSpins, means the same in both.
template <typename A>
__device__ __forceinline__ void waitLines(const A& a, uint64_t slotOffset, const LinePlace& at, uint64_t line,
                                          uint64_t lines, uint64_t flag, uint64_t& v0, uint64_t& v1) {
  const bool valid = line < lines;
  const char* src = a.scratch + slotOffset + line * kLineBytes + at.piece * 16;
  v0 = 0;
  v1 = flag;
  for (int64_t spins = 0;; ++spins) {
    if (valid) mscclppLoadVolatile128(src, &v0, &v1);
    if (__all_sync(kFullWarp, !valid || !at.flagLane || v1 == flag)) return;
    spinCheck(a.abort, a.maxSpins, spins);
  }
}

// Waits for the `bytes` bytes of lines flagged with flag in the slot at slotOffset of this rank's
// scratch and stores them at out; warp `warp` of nWarps.
__device__ __forceinline__ void receiveLines(const Args& a, uint64_t slotOffset, char* out, uint64_t bytes, uint64_t flag,
                                             uint64_t warp, uint64_t nWarps) {
  const LinePlace at;
  const uint64_t lines = linesOf(bytes);
  const bool outAligned = aligned(out, 8);
  for (uint64_t group = warp; group * kLinesPerWarp < lines; group += nWarps) {
    const uint64_t line = group * kLinesPerWarp + at.lineLane;
    uint64_t v0, v1;
    waitLines(a, slotOffset, at, line, lines, flag, v0, v1);
    const uint64_t w0 = line * kLineDataWords + 2 * at.piece;
    storeLineWords(out, bytes, outAligned, at, line < lines, w0, v0, v1);
  }
}

// receiveLines for every peer r: its lines in r's slot of this call's half (parity) of this
// rank's line region, `bytes` bytes stored at r's block of recv.
__device__ __forceinline__ void receivePeersLines(const Args& a, uint32_t parity, char* recv, uint64_t bytes,
                                                  uint64_t flag, uint64_t warp, uint64_t nWarps) {
  for (uint32_t p = 0; p < a.nRanks - 1; ++p) {
    const uint64_t r = peerRank(a, p);
    receiveLines(a, packetSlotOffset(a, parity, kPacketLines, r), recv + r * bytes, bytes, flag, warp, nWarps);
  }
}

}  // namespace coll

#endif  // MSCCLPP_KERNELS_LL128_CUH_

// allreduce_ll128.cu: one-shot AllReduce with LL128 lines (ll128.cuh), for medium messages.
//
// Every rank writes its whole input, as lines flagged with this call's flag, into its slot of
// every peer's line region; then each warp, line by line, reduces every rank's words in rank
// order (its own from its input, the peers' from its scratch once their lines have come), so
// every rank computes bit-identical results. Line regions alternate between calls, as packet
// regions do (see State).
#include "ll128.cuh"

namespace coll {

template <typename T, uint32_t Op>
__device__ __forceinline__ void allreduceLL128(const Args& a) {
  const uint64_t flag = packetFlag(callsBefore(a.state));
  const uint32_t parity = callsBefore(a.state) & 1;
  const uint64_t bytes = a.count * sizeof(T);
  const uint64_t words = ceilDiv(bytes, 8);
  const uint64_t lines = linesOf(bytes);
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const bool sendAligned = aligned(send, 8), recvAligned = aligned(recv, 8);
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t nWarps = uint64_t(gridDim.x) * blockDim.x / 32;
  const LinePlace at;

  // 1. This rank's input to every peer.
  sendLines(a, 0, a.nRanks - 1, packetSlotOffset(a, parity, kPacketLines, a.rank), send, nullptr, bytes, flag, warp, nWarps);
  // 2. Every rank's words of each line, reduced in rank order.
  for (uint64_t group = warp; group * kLinesPerWarp < lines; group += nWarps) {
    const uint64_t line = group * kLinesPerWarp + at.lineLane;
    const uint64_t w0 = line * kLineDataWords + 2 * at.piece;
    uint64_t acc0 = 0, acc1 = 0;
    for (uint32_t r = 0; r < a.nRanks; ++r) {
      uint64_t v0, v1;
      if (r == a.rank) {  // (the flag lane's v1 is reduced too, and never stored)
        v0 = w0 < words ? loadWord(send, w0, bytes, sendAligned) : 0;
        v1 = !at.flagLane && w0 + 1 < words ? loadWord(send, w0 + 1, bytes, sendAligned) : 0;
      } else {
        waitLines(a, packetSlotOffset(a, parity, kPacketLines, r), at, line, lines, flag, v0, v1);
      }
      acc0 = r == 0 ? v0 : applyWord<T, Op>(acc0, v0, uint32_t(a.op));
      acc1 = r == 0 ? v1 : applyWord<T, Op>(acc1, v1, uint32_t(a.op));
    }
    if (line < lines && w0 < words) storeWord(recv, w0, bytes, recvAligned, finishWord<T, Op>(acc0, uint32_t(a.nRanks), uint32_t(a.op)));
    if (line < lines && !at.flagLane && w0 + 1 < words) {
      storeWord(recv, w0 + 1, bytes, recvAligned, finishWord<T, Op>(acc1, uint32_t(a.nRanks), uint32_t(a.op)));
    }
  }
  finishCall(a.state);
}

}  // namespace coll

COLL_REDUCE_ENTRIES(mscclpp_allreduce_ll128, coll::allreduceLL128, coll::kPacketThreads, COLL_ONE_BLOCK_PER_SM)

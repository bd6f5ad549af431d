// sendrecv_ll128.cu: the transfers of a Send/Recv call of at most a line slot (4.2 MiB) as LL128
// lines (ll128.cuh), on ranks joined by NVLink; sendrecv.cu carries the larger ones.
//
// Whether a transfer goes as lines depends on its size only, so its sender and its receiver agree
// (the host launches this kernel, then sendrecv.cu's for the rest, on the same stream). The k-th
// transfer in lines from rank s to rank r (k from 0, counted on each side: P2PLineCounters) is
// flagged k + 1 and goes into slot k % 2 of s's two line slots in r's p2p scratch, so a line
// never mistakes an earlier transfer's line in the same place for its own. Before s writes
// transfer k >= 2 into a slot, it waits until r has finished reading transfer k - 2 from there:
// the last block of r's launch to finish writes how many of s's transfers it has read into s's
// counters (read), after a system fence. So a sender runs at most two transfers ahead of its
// receiver, as on the lanes (two chunk slots each).
//
// Every warp first packs its groups of lines of every send (a copy to this rank is a plain copy
// over the grid), then waits for and unpacks its groups of every receive. In place with a peer
// (send and receive on the same bytes, of the same size) needs nothing more: the warp that
// unpacks a group of lines packed the same group from the same place before (both loops deal the
// groups to the warps alike), so no byte is overwritten before it was sent. A warp's receive may
// wait on lines that a peer's block packs in its first loop, so every block of a launch must be
// resident at once: the grid is at most the Comm's maxGrid, as for the collectives.
//
// A launch that gives up a wait (wait.cuh) leaves the counters behind (blocksDone among them);
// the communicator takes no call after that (collectives.Comm.checkUsable), so nothing reads them.
// Nothing here touches coll::State, the collectives' scratch or the lanes' slots and semaphores.
#include "ll128.cuh"
#include "sendrecv.cuh"

namespace coll {

__device__ __forceinline__ void sendRecvLL128(const P2PArgs& a) {
  const LinePlace at;
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t nWarps = uint64_t(gridDim.x) * blockDim.x / 32;
  const P2PLineCounters count = p2pLineCounters(a.scratch, a.nRanks);

  // A send may write its slot once the receiver has read what was there (transfer k - 2).
  if (threadIdx.x == 0) {
    for (uint64_t e = 0; e < a.nEntries; ++e) {
      const P2PEntry& en = a.entries[e];
      if (en.peer == a.rank || en.sendBytes == 0) continue;
      const uint64_t k = count.sent[en.peer];
      for (int64_t spins = 0; k >= 2 && count.read[en.peer] < k - 1; ++spins) spinCheck(a.abort, a.maxSpins, spins);
    }
  }
  syncAfterWaits();

  for (uint64_t e = 0; e < a.nEntries; ++e) {
    const P2PEntry& en = a.entries[e];
    const char* src = static_cast<const char*>(en.send);
    if (en.peer == a.rank) {
      copyBytes(en.recv, src, en.sendBytes, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
      continue;
    }
    if (en.sendBytes == 0) continue;
    const uint64_t k = count.sent[en.peer];
    char* slot = static_cast<char*>(p2pChannel(a, en.peer, kP2PSend, 0).dst) +
                 p2pLineSlotOffset(a.nRanks, a.rank, k % 2);
    const uint64_t words = ceilDiv(en.sendBytes, 8), lines = linesOf(en.sendBytes);
    const bool srcAligned = aligned(src, 8);
    for (uint64_t group = warp; group * kLinesPerWarp < lines; group += nWarps) {
      const uint64_t line = group * kLinesPerWarp + at.lineLane;
      uint64_t v0, v1;
      loadLineWords(src, words, en.sendBytes, srcAligned, at, line * kLineDataWords + 2 * at.piece, k + 1, v0, v1);
      __syncwarp();
      if (line < lines) mscclppStoreVolatile128(slot + line * kLineBytes + at.piece * 16, v0, v1);
    }
  }

  for (uint64_t e = 0; e < a.nEntries; ++e) {
    const P2PEntry& en = a.entries[e];
    if (en.peer == a.rank || en.recvBytes == 0) continue;
    const uint64_t k = count.received[en.peer];
    const uint64_t slot = p2pLineSlotOffset(a.nRanks, en.peer, k % 2);
    char* out = static_cast<char*>(en.recv);
    const uint64_t lines = linesOf(en.recvBytes);
    const bool outAligned = aligned(out, 8);
    for (uint64_t group = warp; group * kLinesPerWarp < lines; group += nWarps) {
      const uint64_t line = group * kLinesPerWarp + at.lineLane;
      uint64_t v0, v1;
      waitLines(a, slot, at, line, lines, k + 1, v0, v1);
      storeLineWords(out, en.recvBytes, outAligned, at, line < lines, line * kLineDataWords + 2 * at.piece, v0, v1);
    }
  }

  // The last block to finish counts the launch's transfers and tells each sender what was read.
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence_system();
  if (atomicAdd(count.blocksDone, 1) != gridDim.x - 1) return;
  __threadfence_system();
  for (uint64_t e = 0; e < a.nEntries; ++e) {
    const P2PEntry& en = a.entries[e];
    if (en.peer == a.rank) continue;
    if (en.sendBytes > 0) count.sent[en.peer] = count.sent[en.peer] + 1;
    if (en.recvBytes > 0) {
      const uint64_t k = count.received[en.peer] + 1;
      count.received[en.peer] = k;
      char* peerScratch = static_cast<char*>(p2pChannel(a, en.peer, kP2PSend, 0).dst);
      p2pLineCounters(peerScratch, a.nRanks).read[a.rank] = k;
    }
  }
  *count.blocksDone = 0;
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_sendrecv_ll128(const coll::P2PArgs args) {
  coll::startWaits();
  coll::sendRecvLL128(args);
}

// sendrecv_ll128.cu: the transfers of a Send/Recv call of at most p2pLinesMaxBytes as LL128
// lines (ll128.cuh), on ranks joined by NVLink; sendrecv.cu carries the larger ones.
//
// Whether a transfer goes as lines depends on its size only, so its sender and its receiver agree
// (the host launches this kernel, then sendrecv.cu's for the rest, on the same stream). A transfer
// goes in pieces of kP2PLinePieceBytes, a slot's lines each. The q-th piece in lines from rank s
// to rank r (q from 0, counted on each side: P2PLineCounters) is flagged q + 1 and goes into slot
// q % 2 of s's two line slots in r's p2p scratch, so a line never mistakes an earlier piece's
// line in the same place for its own. Before s writes piece q >= 2 into a slot, each of its
// blocks waits until r has finished reading piece q - 2 from there, which r acks by writing the
// count of pieces read into s's counters (read), after a system fence: a launch whose transfers
// are one piece each acks from its last block to finish (one ack per launch: 1 us less at 1-4 MiB
// on 4 x H200 than an ack per piece); a streamed launch (a transfer of two or more pieces) acks
// each piece from the last of its blocks to read it, so the sender refills the slot while the
// launch runs. So a sender runs at most two pieces ahead of its receiver, as on the lanes (two
// chunk slots each).
//
// The pieces go in rounds: in round i every warp packs its groups of lines of piece i of every
// send, then waits for and unpacks its groups of piece i of every receive (a copy to this rank is
// a plain copy over the grid first). A block waits for a slot only before its sends of round i,
// for the peers' reads of round i - 2, which the peers' blocks finish without waiting on round i
// of this rank; so a ring of ranks each sending to the next cannot deadlock. In place with a peer
// (send and receive on the same bytes, of the same size) needs nothing more: the warp that
// unpacks a group of lines of a piece packed the same group from the same place earlier in the
// round, so no byte is overwritten before it was sent. A warp's receive may wait on lines that a
// peer's block packs, so every block of a launch must be resident at once: the grid is at most
// the Comm's maxGrid, as for the collectives.
//
// A launch that gives up a wait (wait.cuh) leaves the counters behind (blocksDone and piecesRead
// among them); the communicator takes no call after that (collectives.Comm.checkUsable), so
// nothing reads them. Nothing here touches coll::State, the collectives' scratch or the lanes'
// slots and semaphores.
#include "ll128.cuh"
#include "sendrecv.cuh"

namespace coll {

__device__ __forceinline__ void sendRecvLL128(const P2PArgs& a) {
  const LinePlace at;
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t nWarps = uint64_t(gridDim.x) * blockDim.x / 32;
  const P2PLineCounters count = p2pLineCounters(a.scratch, a.nRanks);

  uint64_t rounds = 0;
  for (uint64_t e = 0; e < a.nEntries; ++e) {
    const P2PEntry& en = a.entries[e];
    if (en.peer == a.rank) {
      copyBytes(en.recv, en.send, en.sendBytes, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
      continue;
    }
    rounds = max(rounds, max(p2pLinePieces(en.sendBytes), p2pLinePieces(en.recvBytes)));
  }

  // A launch of one piece per transfer acks its reads once, from its last block to finish; a
  // streamed one acks each piece as soon as its last block has read it.
  const bool streamed = rounds > 1;
  for (uint64_t i = 0; i < rounds; ++i) {
    // The sends of round i may write their slots once the receivers have read piece q - 2.
    if (threadIdx.x == 0) {
      for (uint64_t e = 0; e < a.nEntries; ++e) {
        const P2PEntry& en = a.entries[e];
        if (en.peer == a.rank || i >= p2pLinePieces(en.sendBytes)) continue;
        const uint64_t q = count.sent[en.peer] + i;
        for (int64_t spins = 0; q >= 2 && count.read[en.peer] < q - 1; ++spins) spinCheck(a.abort, a.maxSpins, spins);
      }
    }
    syncAfterWaits();
    for (uint64_t e = 0; e < a.nEntries; ++e) {
      const P2PEntry& en = a.entries[e];
      if (en.peer == a.rank || i >= p2pLinePieces(en.sendBytes)) continue;
      const uint64_t q = count.sent[en.peer] + i;
      const char* src = static_cast<const char*>(en.send) + i * kP2PLinePieceBytes;
      const uint64_t bytes = min(en.sendBytes - i * kP2PLinePieceBytes, kP2PLinePieceBytes);
      char* slot = static_cast<char*>(p2pChannel(a, en.peer, kP2PSend, 0).dst) +
                   p2pLineSlotOffset(a.nRanks, a.rank, q % 2);
      const uint64_t words = ceilDiv(bytes, 8), lines = linesOf(bytes);
      const bool srcAligned = aligned(src, 8);
      for (uint64_t group = warp; group * kLinesPerWarp < lines; group += nWarps) {
        const uint64_t line = group * kLinesPerWarp + at.lineLane;
        uint64_t v0, v1;
        loadLineWords(src, words, bytes, srcAligned, at, line * kLineDataWords + 2 * at.piece, q + 1, v0, v1);
        __syncwarp();
        if (line < lines) mscclppStoreVolatile128(slot + line * kLineBytes + at.piece * 16, v0, v1);
      }
    }
    for (uint64_t e = 0; e < a.nEntries; ++e) {
      const P2PEntry& en = a.entries[e];
      if (en.peer == a.rank || i >= p2pLinePieces(en.recvBytes)) continue;
      const uint64_t q = count.received[en.peer] + i;
      const uint64_t slot = p2pLineSlotOffset(a.nRanks, en.peer, q % 2);
      char* out = static_cast<char*>(en.recv) + i * kP2PLinePieceBytes;
      const uint64_t bytes = min(en.recvBytes - i * kP2PLinePieceBytes, kP2PLinePieceBytes);
      const uint64_t lines = linesOf(bytes);
      const bool outAligned = aligned(out, 8);
      for (uint64_t group = warp; group * kLinesPerWarp < lines; group += nWarps) {
        const uint64_t line = group * kLinesPerWarp + at.lineLane;
        uint64_t v0, v1;
        waitLines(a, slot, at, line, lines, q + 1, v0, v1);
        storeLineWords(out, bytes, outAligned, at, line < lines, line * kLineDataWords + 2 * at.piece, v0, v1);
      }
      if (!streamed) continue;
      // This block has read its lines of piece q; the last block to do so tells the sender.
      syncAfterWaits();
      if (threadIdx.x == 0) {
        __threadfence();  // the block's loads have returned; the ack below is fenced at system scope
        uint64_t* done = count.piecesRead + en.peer * 2 + q % 2;
        if (atomicAdd(reinterpret_cast<unsigned long long*>(done), 1ull) == gridDim.x - 1) {
          *reinterpret_cast<volatile uint64_t*>(done) = 0;
          __threadfence_system();
          char* peerScratch = static_cast<char*>(p2pChannel(a, en.peer, kP2PSend, 0).dst);
          p2pLineCounters(peerScratch, a.nRanks).read[a.rank] = q + 1;
        }
      }
    }
  }

  // The last block to finish counts the launch's pieces and, unless streamed, tells each sender
  // what was read (every block's reads fenced at system scope first).
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (streamed) {
    __threadfence();
  } else {
    __threadfence_system();
  }
  if (atomicAdd(count.blocksDone, 1) != gridDim.x - 1) return;
  __threadfence_system();
  for (uint64_t e = 0; e < a.nEntries; ++e) {
    const P2PEntry& en = a.entries[e];
    if (en.peer == a.rank) continue;
    count.sent[en.peer] = count.sent[en.peer] + p2pLinePieces(en.sendBytes);
    const uint64_t received = count.received[en.peer] + p2pLinePieces(en.recvBytes);
    count.received[en.peer] = received;
    if (!streamed && en.recvBytes > 0) {
      char* peerScratch = static_cast<char*>(p2pChannel(a, en.peer, kP2PSend, 0).dst);
      p2pLineCounters(peerScratch, a.nRanks).read[a.rank] = received;
    }
  }
  *count.blocksDone = 0;
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPacketThreads, 1) mscclpp_sendrecv_ll128(const coll::P2PArgs args) {
  coll::startWaits();
  coll::sendRecvLL128(args);
}

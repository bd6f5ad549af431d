// sendrecv.cuh: point-to-point transfers (Send/Recv, AlltoAll): their kernel argument, which is
// not coll::Args, and the layout of the point-to-point scratch. Mirrored on the host by
// collectives/p2p.go.
//
// Every ordered pair of ranks (sender s, receiver r) is a stream of kP2PLanes lanes. Lane l of a
// stream owns two chunk slots in r's p2p scratch (a buffer of its own, apart from the collectives'
// scratch) and one memory-channel semaphore pair (built for the p2p only): s signals "chunk in
// slot" into r, r signals "slot free again" back into s. The semaphores' own counters, kept in
// device memory across calls and graph replays, are the stream's sequence numbers: chunk k of a
// lane (counted over every call) goes to slot k & 1, and s writes it only once r has freed chunk
// k - 2. Sender and receiver cut a transfer into lanes and chunks from its byte count alone, so the
// k-th send from s to r meets the k-th receive of r from s whatever else either rank did in
// between (calls with other peers touch other streams; the collectives touch none of this).
#ifndef MSCCLPP_KERNELS_SENDRECV_CUH_
#define MSCCLPP_KERNELS_SENDRECV_CUH_

#include "common.cuh"

namespace coll {

// The most peers (this rank included) one launch serves; must equal collectives.maxP2PPeers.
constexpr uint32_t kMaxP2PPeers = 16;
// Lanes per stream and the bytes of one chunk slot. A transfer takes a lane per kP2PLaneBytes up
// to kP2PBaseLanes, past that a lane per two chunks, up to the launch's maxLanes (at most
// kP2PLanes); a small one spreads over up to kP2PSmallLanes lanes of at least kP2PLaneMinBytes
// (see p2pLanes). Must equal collectives.p2pLanes, p2pBaseLanes, p2pChunkBytes, p2pLaneBytes,
// p2pSmallLanes and p2pLaneMinBytes.
constexpr uint32_t kP2PLanes = 64;
constexpr uint32_t kP2PBaseLanes = 32;
constexpr uint64_t kP2PChunkBytes = 256 << 10;
constexpr uint64_t kP2PLaneBytes = 128 << 10;
constexpr uint32_t kP2PSmallLanes = 8;
constexpr uint64_t kP2PLaneMinBytes = 16 << 10;
// Block size; must equal collectives.p2pThreads.
constexpr uint32_t kP2PThreads = 1024;
// Bytes of one line slot of the p2p scratch (sendrecv_ll128.cu): a slot holds one piece of a
// transfer in lines, kP2PLinePieceBytes (4.2 MiB) of data. Must equal collectives.p2pLineSlotBytes.
constexpr uint64_t kP2PLineSlotBytes = 9 << 19;
// The data bytes of one slot's lines: a transfer in lines goes in pieces of this many bytes, each
// through a slot (sendrecv_ll128.cu).
constexpr uint64_t kP2PLinePieceBytes = kP2PLineSlotBytes / 128 * 120;
// The most (peer, direction, lane) work items of one launch.
constexpr uint32_t kP2PMaxItems = kMaxP2PPeers * 2 * kP2PLanes;
// Bytes of one stream's region in the receiver's p2p scratch: kP2PLanes x 2 slots.
constexpr uint64_t kP2PStreamBytes = kP2PLanes * 2 * kP2PChunkBytes;

// What this rank does with one peer in a launch: send sendBytes from send and receive recvBytes
// into recv (0: nothing in that direction). peer == rank: a copy from send to recv (sendBytes ==
// recvBytes).
struct P2PEntry {
  uint64_t peer;
  const void* send;
  void* recv;
  uint64_t sendBytes;
  uint64_t recvBytes;
};

// The one parameter of mscclpp_sendrecv, by value (8-byte fields only, mirrored by
// collectives.p2pArgs).
struct P2PArgs {
  // [peer index][direction][lane]: kP2PSend is the stream from this rank to the peer, kP2PRecv
  // the one from the peer; dst is the peer's p2p scratch.
  const mscclppMemoryChannelDeviceHandle* channels;
  char* scratch;        // this rank's p2p scratch: one region of kP2PStreamBytes per sending rank
  uint64_t rank;
  uint64_t nRanks;
  int64_t maxSpins;     // bound of the polling loop's idle sweeps (wait.cuh); < 0: no bound
  uint32_t* abort;      // the communicator's abort words, host memory mapped into the device (wait.cuh)
  uint64_t nEntries;    // entries used
  uint64_t maxLanes;    // the most lanes of one transfer in this launch (kP2PLanes, see p2pLanes)
  P2PEntry entries[kMaxP2PPeers];
};

static_assert(sizeof(P2PEntry) == 40, "P2PEntry is mirrored by collectives.p2pEntry");
static_assert(sizeof(P2PArgs) == 64 + 40 * kMaxP2PPeers && offsetof(P2PArgs, entries) == 64,
              "P2PArgs is mirrored by collectives.p2pArgs");

enum P2PDir : uint32_t { kP2PSend = 0, kP2PRecv = 1 };

// The lanes a transfer of `bytes` bytes uses (0 for none) in a launch of at most maxLanes lanes per
// transfer; sender and receiver agree (both launches have the same maxLanes, kP2PLanes since
// AlltoAll on one host left the lanes for alltoall_put.cu). A lane per kP2PLaneBytes keeps the
// blocks of a call with many peers few; a small transfer's lanes of kP2PLaneMinBytes move it in
// fewer rounds of chunks and spread its latency over more blocks; past kP2PBaseLanes a lane of two
// chunks overlaps its sender's second chunk with its receiver's copy of the first (measured on 4
// and 2 x H200, PERFORMANCE.md).
__device__ __forceinline__ uint32_t p2pLanes(uint64_t bytes, uint64_t maxLanes) {
  const uint64_t small = ceilDiv(bytes, kP2PLaneMinBytes);
  uint64_t n = ceilDiv(bytes, kP2PLaneBytes);
  if (n < kP2PSmallLanes) n = small < kP2PSmallLanes ? small : kP2PSmallLanes;
  if (n > kP2PBaseLanes) n = kP2PBaseLanes;
  const uint64_t wide = ceilDiv(bytes, 2 * kP2PChunkBytes);  // past kP2PBaseLanes, two chunks per lane
  if (wide > n) n = wide;
  return n < maxLanes ? uint32_t(n) : uint32_t(maxLanes);
}
// Where lane `lane` of a transfer of `bytes` bytes starts, and its bytes (16-byte aligned parts).
__device__ __forceinline__ uint64_t p2pLaneBegin(uint64_t bytes, uint64_t maxLanes, uint32_t lane) {
  return lane * roundUp(ceilDiv(bytes, p2pLanes(bytes, maxLanes)), 16);
}
__device__ __forceinline__ uint64_t p2pLaneBytes(uint64_t bytes, uint64_t maxLanes, uint32_t lane) {
  return clampLen(p2pLaneBegin(bytes, maxLanes, lane), roundUp(ceilDiv(bytes, p2pLanes(bytes, maxLanes)), 16), bytes);
}
// Whether an entry is in place with a peer: it receives into the bytes it sends from (sendrecv.cu).
// Both directions then have the same lanes and chunks (one byte count).
__device__ __forceinline__ bool p2pInPlace(const P2PEntry& en, uint64_t rank) {
  return en.peer != rank && en.send == en.recv && en.sendBytes == en.recvBytes && en.sendBytes > 0;
}
// The in-place counters of lane `lane` with rank `peer`, [kP2PSend] chunks sent, [kP2PRecv]
// received: after the streams' regions in this rank's p2p scratch (local; zero at the start).
__device__ __forceinline__ volatile uint64_t* p2pInPlaceCount(const P2PArgs& a, uint64_t peer, uint32_t lane) {
  return reinterpret_cast<volatile uint64_t*>(a.scratch + a.nRanks * kP2PStreamBytes) + (peer * kP2PLanes + lane) * 2;
}
// The p2p scratch past the in-place counters: for each sending rank two line slots (LL128 lines
// of its transfers to this rank, alternating between them: sendrecv_ll128.cu), then this rank's
// line counters.
__device__ __forceinline__ uint64_t p2pLineSlotOffset(uint64_t nRanks, uint64_t sender, uint64_t parity) {
  return nRanks * (kP2PStreamBytes + kP2PLanes * 2 * 8) + (sender * 2 + parity) * kP2PLineSlotBytes;
}
// A rank's line counters, each an array of one word per rank: `sent` and `received` count the
// pieces in lines this rank sent to and received from each rank (local); `read[r]` is how many of
// this rank's pieces rank r has finished reading (written by r). `blocksDone` counts the blocks
// of the running launch that have finished (the last resets it); `piecesRead[2r + s]` the blocks
// that have read the piece from rank r in slot s (the last resets it). All zero at the start.
struct P2PLineCounters {
  volatile uint64_t* sent;
  volatile uint64_t* received;
  volatile uint64_t* read;
  uint32_t* blocksDone;
  uint64_t* piecesRead;
};
__device__ __forceinline__ P2PLineCounters p2pLineCounters(char* scratch, uint64_t nRanks) {
  uint64_t* base = reinterpret_cast<uint64_t*>(scratch + p2pLineSlotOffset(nRanks, nRanks, 0));
  return {base, base + nRanks, base + 2 * nRanks, reinterpret_cast<uint32_t*>(base + 3 * nRanks),
          base + 3 * nRanks + 1};
}
// The pieces of a transfer of `bytes` bytes in lines.
__device__ __forceinline__ uint64_t p2pLinePieces(uint64_t bytes) { return ceilDiv(bytes, kP2PLinePieceBytes); }
// Where slot `slot` of lane `lane` of the stream from rank `sender` is in the receiver's p2p scratch.
__device__ __forceinline__ uint64_t p2pSlotOffset(uint64_t sender, uint32_t lane, uint64_t slot) {
  return sender * kP2PStreamBytes + (uint64_t(lane) * 2 + slot) * kP2PChunkBytes;
}
// This rank's channel of lane `lane` of the stream in direction `dir` with rank `peer` (not this rank).
__device__ __forceinline__ mscclppMemoryChannelDeviceHandle p2pChannel(const P2PArgs& a, uint64_t peer, uint32_t dir,
                                                                       uint32_t lane) {
  const uint64_t p = peer < a.rank ? peer : peer - 1;
  return a.channels[(p * 2 + dir) * kP2PLanes + lane];
}

}  // namespace coll

#endif  // MSCCLPP_KERNELS_SENDRECV_CUH_

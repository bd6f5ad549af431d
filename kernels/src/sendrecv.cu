// sendrecv.cu: Send/Recv with any set of peers in one launch (and AlltoAll's transfers within a
// host when its ranks span hosts, and a one-rank AlltoAll's copy; on one host AlltoAll has
// collective kernels: alltoall_ll128.cu, alltoall_put.cu), through the receivers' p2p scratch
// (see sendrecv.cuh).
//
// The launch's work items are (entry, direction, lane) triples, dealt round robin to the blocks.
// A block does not finish one item before the next: it sweeps over its items and moves a chunk
// of each one that can move (a send whose slot the receiver has freed, a receive whose chunk has
// landed), polling the semaphores instead of waiting on them, so that every transfer of the launch
// progresses together whatever the grid's size: a ring in which every rank sends to its right and
// receives from its left in one launch cannot deadlock, not even on a grid of one block. Sending
// a chunk: every thread stores into the slot of the receiver's scratch, __syncthreads, thread 0
// signals (release, cumulative through bar.sync). Receiving: thread 0 polls (acquire),
// __syncthreads, every thread copies the slot out, __syncthreads, thread 0 signals the slot free
// (release: the reads are done before the sender may overwrite). A copy to this rank (peer ==
// rank) is a plain copy. In place (a peer's entry whose send and receive are the same bytes, as
// an exchange with a peer in one buffer has: p2pInPlace), a lane's receive takes chunk c out of
// its slot only once the lane's send has sent chunk c from those bytes: two counters per (peer,
// lane) in this rank's p2p scratch, chunks sent and chunks received in place, equal between
// launches (both directions of such an entry have the same chunks); a receive goes while sent >
// received. The sent counter is a volatile store after the barrier that ends the chunk's copy,
// without a fence: every load of the copy has returned its value by then (the block's stores of
// those values were issued before the barrier), so no later store can change what was sent.
// Nothing here touches coll::State or the collectives' scratch and semaphores: the collectives'
// calls counter and rounds stay what they were.
#include "sendrecv.cuh"

namespace coll {

__device__ __forceinline__ void sendRecv(const P2PArgs& a) {
  __shared__ uint32_t items[kP2PMaxItems];  // this block's items: entry << 16 | direction << 8 | lane
  __shared__ uint32_t done[kP2PMaxItems];   // chunks of each item moved in this launch
  __shared__ uint32_t total[kP2PMaxItems];  // chunks of each item (a copy to this rank: 1)
  __shared__ uint64_t stride[kMaxP2PPeers][2];  // bytes per lane of each entry's transfer in each direction
  __shared__ uint32_t nItems;
  __shared__ uint32_t go;    // thread 0's verdict for the current item: it can move a chunk
  __shared__ uint32_t slot;  // and the slot that chunk uses
  if (threadIdx.x == 0) {
    uint32_t i = 0, n = 0;
    for (uint32_t e = 0; e < a.nEntries; ++e) {
      const P2PEntry& en = a.entries[e];
      for (uint32_t dir = kP2PSend; dir <= kP2PRecv; ++dir) {
        if (dir == kP2PRecv && en.peer == a.rank) continue;  // the copy is the send's
        const uint64_t bytes = dir == kP2PSend ? en.sendBytes : en.recvBytes;
        const uint32_t lanes = p2pLanes(bytes, a.maxLanes);
        stride[e][dir] = lanes > 0 ? roundUp(ceilDiv(bytes, lanes), 16) : 0;
        for (uint32_t lane = 0; lane < lanes; ++lane, ++i) {
          if (i % gridDim.x != blockIdx.x) continue;
          items[n] = e << 16 | dir << 8 | lane;
          done[n] = 0;
          const uint64_t len = p2pLaneBytes(bytes, a.maxLanes, lane);
          total[n] = en.peer == a.rank ? (len > 0 ? 1 : 0) : uint32_t(ceilDiv(len, kP2PChunkBytes));
          ++n;
        }
      }
    }
    nItems = n;
  }
  __syncthreads();
  const uint32_t n = nItems;
  int64_t idle = 0;
  for (;;) {
    bool left = false, moved = false;  // uniform: from shared memory read after a barrier
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t c = done[j];
      if (c == total[j]) continue;
      left = true;
      const P2PEntry& en = a.entries[items[j] >> 16];
      const uint32_t dir = (items[j] >> 8) & 0xff;
      const uint32_t lane = items[j] & 0xff;
      const uint64_t bytes = dir == kP2PSend ? en.sendBytes : en.recvBytes;
      const uint64_t begin = lane * stride[items[j] >> 16][dir];  // p2pLaneBegin, without its division
      const uint64_t len = clampLen(begin, stride[items[j] >> 16][dir], bytes);
      if (en.peer == a.rank) {
        copyBytes(static_cast<char*>(en.recv) + begin, static_cast<const char*>(en.send) + begin, len, threadIdx.x,
                  blockDim.x);
        __syncthreads();
        if (threadIdx.x == 0) done[j] = 1;
        moved = true;
        __syncthreads();
        continue;
      }
      mscclppMemoryChannelDeviceHandle ch = p2pChannel(a, en.peer, dir, lane);
      if (threadIdx.x == 0) {
        if (dir == kP2PSend) {
          // Chunks sent on this lane so far (every call) and slot frees consumed: at most 2 in flight.
          const uint64_t sent = *ch.semaphore.outboundToken;
          go = sent - *ch.semaphore.expectedInboundToken < 2 || ch.semaphore.poll();
          slot = sent & 1;
        } else if (p2pInPlace(en, a.rank) && p2pInPlaceCount(a, en.peer, lane)[kP2PSend] <=
                                                 p2pInPlaceCount(a, en.peer, lane)[kP2PRecv]) {
          go = false;  // in place: the chunk's bytes here are not yet sent from where it is to land
        } else {
          go = ch.semaphore.poll();  // consumes chunk number *expectedInboundToken - 1 of the lane
          slot = (*ch.semaphore.expectedInboundToken - 1) & 1;
        }
      }
      __syncthreads();
      if (go) {
        const uint64_t off = begin + uint64_t(c) * kP2PChunkBytes;
        const uint64_t m = len - uint64_t(c) * kP2PChunkBytes < kP2PChunkBytes ? len - uint64_t(c) * kP2PChunkBytes
                                                                              : kP2PChunkBytes;
        if (dir == kP2PSend) {
          copyBytes(static_cast<char*>(ch.dst) + p2pSlotOffset(a.rank, lane, slot),
                    static_cast<const char*>(en.send) + off, m, threadIdx.x, blockDim.x);
        } else {
          copyBytes(static_cast<char*>(en.recv) + off, a.scratch + p2pSlotOffset(en.peer, lane, slot), m, threadIdx.x,
                    blockDim.x);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
          if (p2pInPlace(en, a.rank)) p2pInPlaceCount(a, en.peer, lane)[dir] += 1;  // see the top of the file
          ch.semaphore.signal();  // sent: the chunk is in the slot; received: the slot is free
          done[j] = c + 1;
        }
        moved = true;
      }
      __syncthreads();
    }
    if (!left) break;
    if (moved) {
      idle = 0;
    } else {
      spinCheck(a.abort, a.maxSpins, idle++);  // every thread: each may exit (wait.cuh)
    }
  }
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kP2PThreads) mscclpp_sendrecv(const coll::P2PArgs args) {
  coll::sendRecv(args);
}

/*
 * nccl/p2p.c: ncclSend and ncclRecv on this library (mscclppSendRecv). Outside a group each is
 * one call; inside a group they are kept per thread and run at the outermost ncclGroupEnd, as
 * one mscclppSendRecv per communicator and stream (several when a peer appears twice in the same
 * direction: the library's call holds one send and one receive per peer, and the order per pair
 * of ranks is what matches sends with receives).
 */
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* A send or receive waiting for the end of its group. */
typedef struct {
  ncclComm_t comm;
  cudaStream_t stream;
  mscclppP2POp op;
} pendingOp;

static _Thread_local pendingOp* pending;
static _Thread_local int npending, cappending;

/* The most peers one mscclppSendRecv takes (collectives.h). */
enum { maxPeersPerCall = 16 };

/* Runs ops[0..n) (one communicator, one stream) as few library calls as the library's rules
 * allow (one send and one receive per peer, at most maxPeersPerCall peers), in order. */
static ncclResult_t runBatches(ncclComm_t comm, cudaStream_t stream, const mscclppP2POp* ops, int n) {
  ncclResult_t res = ncclSuccess;
  for (int start = 0; start < n && res == ncclSuccess;) {
    int end = start + 1, peers = 1;
    for (; end < n; end++) {
      bool repeat = false, known = false;
      for (int j = start; j < end; j++) {
        repeat = repeat || (ops[j].peer == ops[end].peer && ops[j].isSend == ops[end].isSend);
        known = known || ops[j].peer == ops[end].peer;
      }
      if (repeat || (!known && peers == maxPeersPerCall)) break;
      peers += !known;
    }
    mscclppResult_t m = mscclppSendRecv(ops + start, end - start, comm->coll, stream);
    if (m != mscclppSuccess) {
      res = shimFail(shimResult(m), comm, ops[start].isSend ? "ncclSend" : "ncclRecv", "%s (the library's log says why)",
                     mscclppGetErrorString(m));
    }
    start = end;
  }
  return res;
}

ncclResult_t shimP2P(ncclComm_t comm, cudaStream_t stream, const mscclppP2POp* op) {
  if (!shimInGroup()) return runBatches(comm, stream, op, 1);
  if (npending == cappending) {
    int cap = cappending ? 2 * cappending : 16;
    pendingOp* grown = realloc(pending, (size_t)cap * sizeof(*grown));
    if (grown == NULL) return shimFail(ncclSystemError, comm, op->isSend ? "ncclSend" : "ncclRecv", "out of memory");
    pending = grown, cappending = cap;
  }
  pending[npending++] = (pendingOp){comm, stream, *op};
  return ncclSuccess;
}

ncclResult_t shimP2PFlush(void) {
  ncclResult_t res = ncclSuccess;
  mscclppP2POp* ops = npending ? malloc((size_t)npending * sizeof(*ops)) : NULL;
  if (npending && ops == NULL) res = shimFail(ncclSystemError, NULL, "ncclGroupEnd", "out of memory");
  /* One (communicator, stream) at a time, in the order of their first operation. */
  for (int i = 0; i < npending && res == ncclSuccess; i++) {
    if (pending[i].comm == NULL) continue; /* taken by an earlier pass */
    ncclComm_t comm = pending[i].comm;
    cudaStream_t stream = pending[i].stream;
    int n = 0;
    for (int j = i; j < npending; j++) {
      if (pending[j].comm == comm && pending[j].stream == stream) {
        ops[n++] = pending[j].op;
        pending[j].comm = NULL;
      }
    }
    res = runBatches(comm, stream, ops, n);
  }
  free(ops);
  npending = 0;
  return res;
}

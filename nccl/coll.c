/*
 * nccl/coll.c: the collectives and point-to-point calls. Each is checked as NCCL checks it, then
 * routed: served by this library (collectives.h) when it can and MSCCLPP_NCCL_FALLBACK does not
 * send its kind to the real NCCL, else passed to the real NCCL's communicator beside ours. Which
 * path each kind took is logged at INFO once per communicator.
 */
#include <stdio.h>
#include <string.h>

#include "shim.h"

size_t shimTypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

const char* shimTypeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "int8";
    case ncclUint8: return "uint8";
    case ncclInt32: return "int32";
    case ncclUint32: return "uint32";
    case ncclInt64: return "int64";
    case ncclUint64: return "uint64";
    case ncclFloat16: return "float16";
    case ncclFloat32: return "float32";
    case ncclFloat64: return "float64";
    case ncclBfloat16: return "bfloat16";
    case ncclFloat8e4m3: return "float8e4m3";
    case ncclFloat8e5m2: return "float8e5m2";
    default: return "unknown";
  }
}

/* The types this library's kernels reduce (collectives.h): all but fp8. AllGather, Broadcast,
 * Send/Recv and AlltoAll move every type. Every operator runs natively: the built-in ones, and
 * PreMulSum ones as mscclppScale followed by a sum (redop.c). */
static bool nativeReducible(ncclDataType_t t) { return shimTypeSize(t) != 0 && t != ncclFloat8e4m3 && t != ncclFloat8e5m2; }

/* The checks every call shares: a ready communicator, a known type, a count whose bytes (times
 * `blocks` per rank) fit a size_t, and buffers where there are bytes. */
static ncclResult_t checkCall(ncclComm_t comm, const char* call, ncclDataType_t type, size_t count, size_t blocks,
                              const void* send, const void* recv) {
  ncclResult_t res = shimCommReady(comm, call);
  if (res != ncclSuccess) return res;
  size_t size = shimTypeSize(type);
  if (size == 0) return shimFail(ncclInvalidArgument, comm, call, "unknown data type %d", (int)type);
  if (count > SIZE_MAX / size / blocks) {
    return shimFail(ncclInvalidArgument, comm, call, "count %zu of %zu-byte elements overflows", count, size);
  }
  if (count > 0 && (send == NULL || recv == NULL)) {
    return shimFail(ncclInvalidArgument, comm, call, "a buffer is NULL (send %p, receive %p) for %zu elements", send,
                    recv, count);
  }
  return ncclSuccess;
}

static ncclResult_t checkRank(ncclComm_t comm, const char* call, const char* what, int rank) {
  if (rank < 0 || rank >= comm->nranks) {
    return shimFail(ncclInvalidArgument, comm, call, "%s %d is outside [0, %d)", what, rank, comm->nranks);
  }
  return ncclSuccess;
}

/* Where a call goes: this library (native), or the real NCCL with its communicator. */
typedef struct {
  bool native;
  ncclComm_t real;
  const shimRealNccl* nccl;
} callPath;

/* The path of a call of kind that this library could serve (servable) or not. */
static ncclResult_t route(ncclComm_t comm, shimKind kind, bool servable, const char* call, callPath* p) {
  p->native = servable && comm->coll != NULL && !(comm->cfg.forced & (1u << kind));
  ncclResult_t res = ncclSuccess;
  if (!p->native) {
    res = shimRealComm(comm, call, &p->real, &p->nccl);
    if (res == ncclSuccess && shimInGroup()) res = shimJoinRealGroup(p->nccl);
  }
  if (res == ncclSuccess && !(atomic_load_explicit(&comm->loggedKinds, memory_order_relaxed) & (1u << kind))) {
    uint32_t was = atomic_fetch_or(&comm->loggedKinds, 1u << kind);
    if (!(was & (1u << kind))) {
      shimLog(shimLogInfo, comm, "%s runs on %s%s", shimKindName(kind), p->native ? "this library" : "the real NCCL",
              p->native ? "" : (comm->cfg.forced & (1u << kind)) ? " (MSCCLPP_NCCL_FALLBACK)" : " (no native path for it)");
    }
  }
  return res;
}

/* The result of a native call, with the thread's last error set on failure. */
static ncclResult_t nativeResult(ncclComm_t comm, const char* call, mscclppResult_t m) {
  if (m == mscclppSuccess) return ncclSuccess;
  return shimFail(shimResult(m), comm, call, "%s (the library's log says why)", mscclppGetErrorString(m));
}

/* Returns res from a call, recording it as the group's error inside a group. */
#define CHECK(expr)                                   \
  do {                                                \
    ncclResult_t res_ = (expr);                       \
    if (res_ != ncclSuccess) return shimGroupError(res_); \
  } while (0)

/* The native AllReduce of ncclAllReduce and ncclReduce, into out: a PreMulSum operator first
 * multiplies this rank's input by its scalar into out, and the sum then runs there, in place. */
static ncclResult_t nativeAllReduce(ncclComm_t comm, const char* call, const shimOp* o, const void* sendbuff, void* out,
                                    size_t count, ncclDataType_t datatype, cudaStream_t stream) {
  if (o->preMulSum) {
    CHECK(shimPreMulScale(comm, call, o, sendbuff, out, count, datatype, stream));
    sendbuff = out;
  }
  return shimGroupError(nativeResult(comm, call, mscclppAllReduce(sendbuff, out, count, (mscclppDataType_t)datatype,
                                                                  shimNativeOp(o), comm->coll, stream)));
}

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const char* call = "ncclAllReduce";
  SHIM_FOREIGN(call, comm, ncclAllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
  CHECK(checkCall(comm, call, datatype, count, 1, sendbuff, recvbuff));
  shimOp o;
  CHECK(shimResolveOp(comm, call, op, datatype, &o));
  callPath p;
  CHECK(route(comm, shimAllReduce, nativeReducible(datatype), call, &p));
  if (p.native) return nativeAllReduce(comm, call, &o, sendbuff, recvbuff, count, datatype, stream);
  ncclRedOp_t realOp;
  CHECK(shimRealOp(comm, call, &o, p.real, p.nccl, &realOp));
  return shimGroupError(p.nccl->ncclAllReduce(sendbuff, recvbuff, count, datatype, realOp, p.real, stream));
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  const char* call = "ncclAllGather";
  SHIM_FOREIGN(call, comm, ncclAllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream);
  CHECK(checkCall(comm, call, datatype, sendcount, (size_t)comm->nranks, sendbuff, recvbuff));
  callPath p;
  CHECK(route(comm, shimAllGather, true, call, &p));
  if (p.native) {
    return shimGroupError(nativeResult(
        comm, call, mscclppAllGather(sendbuff, recvbuff, sendcount, (mscclppDataType_t)datatype, comm->coll, stream)));
  }
  return shimGroupError(p.nccl->ncclAllGather(sendbuff, recvbuff, sendcount, datatype, p.real, stream));
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const char* call = "ncclReduceScatter";
  SHIM_FOREIGN(call, comm, ncclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  CHECK(checkCall(comm, call, datatype, recvcount, (size_t)comm->nranks, sendbuff, recvbuff));
  shimOp o;
  CHECK(shimResolveOp(comm, call, op, datatype, &o));
  callPath p;
  CHECK(route(comm, shimReduceScatter, nativeReducible(datatype), call, &p));
  if (p.native) {
    if (o.preMulSum) {
      /* This rank's input times its scalar, into the staging buffer: the output holds one block,
       * and in place the other blocks of the input must stay as they are. */
      size_t n = recvcount * (size_t)comm->nranks;
      void* scaled;
      CHECK(shimStagingBuffer(comm, call, n * shimTypeSize(datatype), &scaled));
      CHECK(shimPreMulScale(comm, call, &o, sendbuff, scaled, n, datatype, stream));
      sendbuff = scaled;
    }
    return shimGroupError(nativeResult(comm, call,
                                       mscclppReduceScatter(sendbuff, recvbuff, recvcount, (mscclppDataType_t)datatype,
                                                            shimNativeOp(&o), comm->coll, stream)));
  }
  ncclRedOp_t realOp;
  CHECK(shimRealOp(comm, call, &o, p.real, p.nccl, &realOp));
  return shimGroupError(p.nccl->ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, realOp, p.real, stream));
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  const char* call = "ncclBroadcast";
  SHIM_FOREIGN(call, comm, ncclBroadcast, sendbuff, recvbuff, count, datatype, root, comm, stream);
  CHECK(checkRank(comm, call, "root", root));
  /* Only the root reads sendbuff. */
  CHECK(checkCall(comm, call, datatype, count, 1, comm->rank == root ? sendbuff : recvbuff, recvbuff));
  callPath p;
  CHECK(route(comm, shimBroadcast, true, call, &p));
  if (p.native) {
    return shimGroupError(nativeResult(
        comm, call, mscclppBroadcast(sendbuff, recvbuff, count, (mscclppDataType_t)datatype, root, comm->coll, stream)));
  }
  return shimGroupError(p.nccl->ncclBroadcast(sendbuff, recvbuff, count, datatype, root, p.real, stream));
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  const char* call = "ncclReduce";
  SHIM_FOREIGN(call, comm, ncclReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  CHECK(checkRank(comm, call, "root", root));
  /* Only the root writes recvbuff. */
  CHECK(checkCall(comm, call, datatype, count, 1, sendbuff, comm->rank == root ? recvbuff : sendbuff));
  shimOp o;
  CHECK(shimResolveOp(comm, call, op, datatype, &o));
  callPath p;
  CHECK(route(comm, shimReduce, nativeReducible(datatype), call, &p));
  if (p.native) {
    /* An AllReduce whose result the other ranks write into a buffer of the communicator's. */
    void* out = recvbuff;
    if (comm->rank != root) CHECK(shimStagingBuffer(comm, call, count * shimTypeSize(datatype), &out));
    return nativeAllReduce(comm, call, &o, sendbuff, out, count, datatype, stream);
  }
  ncclRedOp_t realOp;
  CHECK(shimRealOp(comm, call, &o, p.real, p.nccl, &realOp));
  return shimGroupError(p.nccl->ncclReduce(sendbuff, recvbuff, count, datatype, realOp, root, p.real, stream));
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  const char* call = "ncclAlltoAll";
  SHIM_FOREIGN(call, comm, ncclAlltoAll, sendbuff, recvbuff, count, datatype, comm, stream);
  CHECK(checkCall(comm, call, datatype, count, (size_t)comm->nranks, sendbuff, recvbuff));
  callPath p;
  CHECK(route(comm, shimAlltoAll, true, call, &p));
  if (p.native) {
    /* In place (send == recv) too: the library's AlltoAll takes it. */
    return shimGroupError(nativeResult(
        comm, call, mscclppAlltoAll(sendbuff, recvbuff, count, (mscclppDataType_t)datatype, comm->coll, stream)));
  }
  if (p.nccl->ncclAlltoAll == NULL) {
    return shimGroupError(shimFail(ncclInvalidUsage, comm, call, "the real NCCL (%s) has no ncclAlltoAll", p.nccl->path));
  }
  return shimGroupError(p.nccl->ncclAlltoAll(sendbuff, recvbuff, count, datatype, p.real, stream));
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  const char* call = "ncclGather";
  SHIM_FOREIGN(call, comm, ncclGather, sendbuff, recvbuff, count, datatype, root, comm, stream);
  CHECK(checkRank(comm, call, "root", root));
  CHECK(checkCall(comm, call, datatype, count, (size_t)comm->nranks, sendbuff, comm->rank == root ? recvbuff : sendbuff));
  callPath p;
  CHECK(route(comm, shimGather, false, call, &p));
  if (p.nccl->ncclGather == NULL) {
    return shimGroupError(shimFail(ncclInvalidUsage, comm, call, "the real NCCL (%s) has no ncclGather", p.nccl->path));
  }
  return shimGroupError(p.nccl->ncclGather(sendbuff, recvbuff, count, datatype, root, p.real, stream));
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  const char* call = "ncclScatter";
  SHIM_FOREIGN(call, comm, ncclScatter, sendbuff, recvbuff, count, datatype, root, comm, stream);
  CHECK(checkRank(comm, call, "root", root));
  CHECK(checkCall(comm, call, datatype, count, (size_t)comm->nranks, comm->rank == root ? sendbuff : recvbuff, recvbuff));
  callPath p;
  CHECK(route(comm, shimScatter, false, call, &p));
  if (p.nccl->ncclScatter == NULL) {
    return shimGroupError(shimFail(ncclInvalidUsage, comm, call, "the real NCCL (%s) has no ncclScatter", p.nccl->path));
  }
  return shimGroupError(p.nccl->ncclScatter(sendbuff, recvbuff, count, datatype, root, p.real, stream));
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  const char* call = "ncclSend";
  SHIM_FOREIGN(call, comm, ncclSend, sendbuff, count, datatype, peer, comm, stream);
  CHECK(checkRank(comm, call, "peer", peer));
  CHECK(checkCall(comm, call, datatype, count, 1, sendbuff, sendbuff));
  callPath p;
  CHECK(route(comm, shimSendRecv, true, call, &p));
  if (p.native) {
    mscclppP2POp op = {peer, 1, (void*)sendbuff, count, (mscclppDataType_t)datatype};
    return shimGroupError(shimP2P(comm, stream, &op));
  }
  return shimGroupError(p.nccl->ncclSend(sendbuff, count, datatype, peer, p.real, stream));
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  const char* call = "ncclRecv";
  SHIM_FOREIGN(call, comm, ncclRecv, recvbuff, count, datatype, peer, comm, stream);
  CHECK(checkRank(comm, call, "peer", peer));
  CHECK(checkCall(comm, call, datatype, count, 1, recvbuff, recvbuff));
  callPath p;
  CHECK(route(comm, shimSendRecv, true, call, &p));
  if (p.native) {
    mscclppP2POp op = {peer, 0, recvbuff, count, (mscclppDataType_t)datatype};
    return shimGroupError(shimP2P(comm, stream, &op));
  }
  return shimGroupError(p.nccl->ncclRecv(recvbuff, count, datatype, peer, p.real, stream));
}

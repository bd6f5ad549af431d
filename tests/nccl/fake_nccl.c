/*
 * tests/nccl/fake_nccl.c: a stand-in for the real libnccl.so.2 on machines without NCCL (CI):
 * just enough of NCCL's API for the layer's fallback to reach it, each call recorded in a log
 * that routing.c reads through fakeNcclLog. It moves no data.
 */
#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

/* A communicator of the fake: NCCL's starts with a magic too, which the layer must not take for
 * its own. */
struct ncclComm {
  unsigned long long startMagic;
  int rank, nranks;
};

#include "call_log.h"

/* The calls so far, one per line ("name args"). */
API const char* fakeNcclLog(void) { return calls; }

static int rankOf(ncclComm_t comm) { return comm ? comm->rank : -1; }

API ncclResult_t ncclGetVersion(int* v) {
  *v = 22803;
  return ncclSuccess;
}

API ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  memset(id, 0, sizeof(*id));
  snprintf(id->internal, sizeof(id->internal), "fake-id-%d", (int)getpid());
  record("ncclGetUniqueId");
  return ncclSuccess;
}

API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (strncmp(id.internal, "fake-id-", 8) != 0) return ncclInvalidArgument;
  *comm = calloc(1, sizeof(**comm));
  (*comm)->startMagic = 0x0280028002800280ULL;
  (*comm)->rank = rank, (*comm)->nranks = nranks;
  record("ncclCommInitRank %d %d %s", nranks, rank, id.internal);
  return ncclSuccess;
}

API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  record("ncclCommDestroy %d", rankOf(comm));
  free(comm);
  return ncclSuccess;
}

API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  record("ncclCommAbort %d", rankOf(comm));
  free(comm);
  return ncclSuccess;
}

API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  record("ncclCommFinalize %d", rankOf(comm));
  return ncclSuccess;
}

API ncclResult_t ncclCommCount(const ncclComm_t comm, int* n) {
  *n = comm->nranks;
  return ncclSuccess;
}

API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* r) {
  *r = comm->rank;
  record("ncclCommUserRank %d", comm->rank);
  return ncclSuccess;
}

API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* d) {
  (void)comm;
  *d = 0;
  return ncclSuccess;
}

API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* e) {
  (void)comm;
  *e = ncclSuccess;
  return ncclSuccess;
}

API const char* ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return "fake NCCL";
}

API ncclResult_t ncclGroupStart(void) {
  record("ncclGroupStart");
  return ncclSuccess;
}

API ncclResult_t ncclGroupEnd(void) {
  record("ncclGroupEnd");
  return ncclSuccess;
}

API ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t st) {
  (void)s, (void)r, (void)st;
  record("ncclAllReduce %d %zu %d %d", rankOf(comm), n, (int)t, (int)op);
  return ncclSuccess;
}

API ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t comm, cudaStream_t st) {
  (void)s, (void)r, (void)st;
  record("ncclAllGather %d %zu %d", rankOf(comm), n, (int)t);
  return ncclSuccess;
}

API ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                                   cudaStream_t st) {
  (void)s, (void)r, (void)st;
  record("ncclReduceScatter %d %zu %d %d", rankOf(comm), n, (int)t, (int)op);
  return ncclSuccess;
}

API ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                               cudaStream_t st) {
  (void)s, (void)r, (void)st;
  record("ncclBroadcast %d %zu %d root=%d", rankOf(comm), n, (int)t, root);
  return ncclSuccess;
}

API ncclResult_t ncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                            ncclComm_t comm, cudaStream_t st) {
  (void)s, (void)r, (void)st;
  record("ncclReduce %d %zu %d %d root=%d", rankOf(comm), n, (int)t, (int)op, root);
  return ncclSuccess;
}

API ncclResult_t ncclAlltoAll(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t comm, cudaStream_t st) {
  (void)s, (void)r, (void)st;
  record("ncclAlltoAll %d %zu %d", rankOf(comm), n, (int)t);
  return ncclSuccess;
}

API ncclResult_t ncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t st) {
  (void)s, (void)st;
  record("ncclSend %d %zu %d peer=%d", rankOf(comm), n, (int)t, peer);
  return ncclSuccess;
}

API ncclResult_t ncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t st) {
  (void)r, (void)st;
  record("ncclRecv %d %zu %d peer=%d", rankOf(comm), n, (int)t, peer);
  return ncclSuccess;
}

/* The scalar is recorded as NCCL reads it: its bytes from host memory (a hexadecimal number,
 * little-endian), or its device address. Every operator of the fake is ncclNumOps + 1. */
API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t t, ncclScalarResidence_t res,
                                          ncclComm_t comm) {
  *op = (ncclRedOp_t)(ncclNumOps + 1);
  if (res == ncclScalarDevice) {
    record("ncclRedOpCreatePreMulSum %d %d res=%d device=%p", rankOf(comm), (int)t, (int)res, scalar);
    return ncclSuccess;
  }
  size_t size = t == ncclFloat16 || t == ncclBfloat16 ? 2
                : t == ncclInt64 || t == ncclUint64 || t == ncclFloat64 ? 8
                : t == ncclInt32 || t == ncclUint32 || t == ncclFloat32 ? 4 : 1;
  unsigned long long bits = 0;
  memcpy(&bits, scalar, size);
  record("ncclRedOpCreatePreMulSum %d %d res=%d host=%llx", rankOf(comm), (int)t, (int)res, bits);
  return ncclSuccess;
}

API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  record("ncclRedOpDestroy %d %d", rankOf(comm), (int)op);
  return ncclSuccess;
}

/* The rest of what routing.c calls, so that it links against the fake alone too. */
API const char* ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "fake NCCL error"; }

API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  (void)config;
  return ncclCommInitRank(comm, nranks, id, rank);
}

API ncclResult_t ncclBcast(void* buff, size_t n, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t st) {
  return ncclBroadcast(buff, buff, n, t, root, comm, st);
}

API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  (void)comm, (void)color, (void)key, (void)newcomm, (void)config;
  return ncclInvalidUsage;
}

API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* sim) {
  (void)sim;
  return ncclGroupEnd();
}

API ncclResult_t ncclCommShrink(ncclComm_t comm, int* exclude, int n, ncclComm_t* newcomm, ncclConfig_t* config, int flags) {
  (void)comm, (void)exclude, (void)n, (void)newcomm, (void)config, (void)flags;
  return ncclInvalidUsage;
}

/*
 * tests/nccl/fake_native.c: a stand-in for this library's GPU side on machines without a GPU (CI),
 * so that routing.c can see what the NCCL layer runs natively. Under LD_PRELOAD its functions take
 * the place of libmscclpp.so's collective communicator and calls with data for the layer (the
 * bootstrap, context and communicator stay the library's); named by MSCCLPP_CUDA_LIBRARY, it is
 * also the CUDA driver the layer opens for its staging buffer. Every call is recorded in a log
 * that routing.c reads through fakeNativeLog. It moves no data and touches no device pointer.
 */
#include <mscclpp/collectives.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

#include "call_log.h"

/* The calls so far, one per line ("name args"). */
API const char* fakeNativeLog(void) { return calls; }

/* ---- The collective communicator and its calls (mscclpp/collectives.h) ------------------------ */

struct mscclppCollComm_s {
  int device;
};

API mscclppResult_t mscclppCollCommCreate(mscclppCommunicator_t comm, int deviceId, mscclppCollComm_t* collComm) {
  (void)comm;
  *collComm = calloc(1, sizeof(**collComm));
  record("mscclppCollCommCreate %d", deviceId);
  return *collComm ? mscclppSuccess : mscclppSystemError;
}

API mscclppResult_t mscclppCollCommDestroy(mscclppCollComm_t collComm) {
  record("mscclppCollCommDestroy");
  free(collComm);
  return mscclppSuccess;
}

API mscclppResult_t mscclppCollCommDevice(mscclppCollComm_t collComm, int* deviceId) {
  *deviceId = collComm->device;
  return mscclppSuccess;
}

API mscclppResult_t mscclppAllReduce(const void* sendbuff, void* recvbuff, size_t count, mscclppDataType_t datatype,
                                     mscclppRedOp_t op, mscclppCollComm_t collComm, mscclppStream_t stream) {
  (void)collComm, (void)stream;
  record("mscclppAllReduce %p %p %zu %d %d", sendbuff, recvbuff, count, (int)datatype, (int)op);
  return mscclppSuccess;
}

API mscclppResult_t mscclppReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, mscclppDataType_t datatype,
                                         mscclppRedOp_t op, mscclppCollComm_t collComm, mscclppStream_t stream) {
  (void)collComm, (void)stream;
  record("mscclppReduceScatter %p %p %zu %d %d", sendbuff, recvbuff, recvcount, (int)datatype, (int)op);
  return mscclppSuccess;
}

API mscclppResult_t mscclppAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, mscclppDataType_t datatype,
                                     mscclppCollComm_t collComm, mscclppStream_t stream) {
  (void)collComm, (void)stream;
  record("mscclppAllGather %p %p %zu %d", sendbuff, recvbuff, sendcount, (int)datatype);
  return mscclppSuccess;
}

API mscclppResult_t mscclppBroadcast(const void* sendbuff, void* recvbuff, size_t count, mscclppDataType_t datatype,
                                     int root, mscclppCollComm_t collComm, mscclppStream_t stream) {
  (void)collComm, (void)stream;
  record("mscclppBroadcast %p %p %zu %d root=%d", sendbuff, recvbuff, count, (int)datatype, root);
  return mscclppSuccess;
}

API mscclppResult_t mscclppAlltoAll(const void* sendbuff, void* recvbuff, size_t count, mscclppDataType_t datatype,
                                    mscclppCollComm_t collComm, mscclppStream_t stream) {
  (void)collComm, (void)stream;
  record("mscclppAlltoAll %p %p %zu %d", sendbuff, recvbuff, count, (int)datatype);
  return mscclppSuccess;
}

API mscclppResult_t mscclppSendRecv(const mscclppP2POp* ops, int nops, mscclppCollComm_t collComm,
                                    mscclppStream_t stream) {
  (void)ops, (void)collComm, (void)stream;
  record("mscclppSendRecv %d", nops);
  return mscclppSuccess;
}

/* The scalar is recorded as the library reads it: its bytes from host memory (as a hexadecimal
 * number, little-endian), or its device address. */
API mscclppResult_t mscclppScale(const void* src, void* dst, size_t count, mscclppDataType_t datatype, const void* scalar,
                                 int scalarOnDevice, mscclppCollComm_t collComm, mscclppStream_t stream) {
  (void)collComm, (void)stream;
  if (scalarOnDevice) {
    record("mscclppScale %p %p %zu %d device=%p", src, dst, count, (int)datatype, scalar);
    return mscclppSuccess;
  }
  size_t size = datatype == mscclppFloat16 || datatype == mscclppBfloat16 ? 2
                : datatype == mscclppInt64 || datatype == mscclppUint64 || datatype == mscclppFloat64 ? 8
                : datatype == mscclppInt8 || datatype == mscclppUint8 ? 1 : 4;
  uint64_t bits = 0;
  memcpy(&bits, scalar, size);
  record("mscclppScale %p %p %zu %d host=%llx", src, dst, count, (int)datatype, (unsigned long long)bits);
  return mscclppSuccess;
}

/* ---- The CUDA driver calls of nccl/cuda.c --------------------------------------------------------- */

typedef int CUresult;
typedef void* CUcontext;
typedef unsigned long long CUdeviceptr;

/* Device addresses handed out by cuMemAlloc: never dereferenced. */
static CUdeviceptr nextAddress = 0xd000000000ULL;

API CUresult cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = (CUcontext)(uintptr_t)0xc0;
  return 0;
}
API CUresult cuCtxSetCurrent(CUcontext ctx) { return ctx == NULL; }
API CUresult cuCtxSynchronize(void) { return 0; }
API CUresult cuDeviceGet(int* dev, int ordinal) {
  *dev = ordinal;
  return 0;
}
API CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, int dev) {
  (void)dev;
  *ctx = (CUcontext)(uintptr_t)0xc0;
  return 0;
}
API CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  *p = nextAddress;
  nextAddress += (bytes + 0xfffff) & ~0xfffffULL;
  record("cuMemAlloc %zu at %p", bytes, (void*)(uintptr_t)*p);
  return 0;
}
API CUresult cuMemFree_v2(CUdeviceptr p) {
  record("cuMemFree %p", (void*)(uintptr_t)p);
  return 0;
}
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void* stream) {
  (void)stream;
  record("cuMemcpyDtoDAsync %p %p %zu", (void*)(uintptr_t)dst, (void*)(uintptr_t)src, bytes);
  return 0;
}

/*
 * nccl/cuda.c: the few CUDA driver calls the NCCL layer makes itself: which context the caller's
 * thread has current (so that a thread the layer starts works on the same GPU), and device
 * memory for ncclMemAlloc, the staging buffer. The driver is dlopen'd, as the library does (the
 * same MSCCLPP_CUDA_LIBRARY, libcuda.so.1 by default), so the layer loads on machines without one.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "shim.h"

typedef int CUresult;
typedef void* CUcontext;
typedef unsigned long long CUdeviceptr;
enum { cudaSuccess_ = 0 };

static struct {
  CUresult (*ctxGetCurrent)(CUcontext*);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*ctxSynchronize)(void);
  CUresult (*deviceGet)(int*, int);
  CUresult (*primaryCtxRetain)(CUcontext*, int);
  CUresult (*memAlloc)(CUdeviceptr*, size_t);
  CUresult (*memFree)(CUdeviceptr);
  bool loaded;
} drv;
static pthread_once_t drvOnce = PTHREAD_ONCE_INIT;

/* The driver library: MSCCLPP_CUDA_LIBRARY names it, as it does for libmscclpp.so (docs/CONFIG.md). */
static void loadDriver(void) {
  const char* lib = getenv("MSCCLPP_CUDA_LIBRARY");
  void* h = dlopen(lib != NULL && *lib != '\0' ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) return;
  *(void**)&drv.ctxGetCurrent = dlsym(h, "cuCtxGetCurrent");
  *(void**)&drv.ctxSetCurrent = dlsym(h, "cuCtxSetCurrent");
  *(void**)&drv.ctxSynchronize = dlsym(h, "cuCtxSynchronize");
  *(void**)&drv.deviceGet = dlsym(h, "cuDeviceGet");
  *(void**)&drv.primaryCtxRetain = dlsym(h, "cuDevicePrimaryCtxRetain");
  *(void**)&drv.memAlloc = dlsym(h, "cuMemAlloc_v2");
  *(void**)&drv.memFree = dlsym(h, "cuMemFree_v2");
  drv.loaded = drv.ctxGetCurrent && drv.ctxSetCurrent && drv.ctxSynchronize &&
               drv.deviceGet && drv.primaryCtxRetain && drv.memAlloc && drv.memFree;
}

static bool driver(void) {
  pthread_once(&drvOnce, loadDriver);
  return drv.loaded;
}

void* shimCurrentContext(void) {
  CUcontext ctx = NULL;
  if (driver() && drv.ctxGetCurrent(&ctx) != cudaSuccess_) ctx = NULL;
  return ctx;
}

bool shimSetContext(void* ctx) { return driver() && drv.ctxSetCurrent(ctx) == cudaSuccess_; }

bool shimSetDevice(int device) {
  int dev;
  CUcontext ctx;
  if (!driver() || drv.deviceGet(&dev, device) != cudaSuccess_) return false;
  /* The runtime's cudaSetDevice makes the same primary context current. The reference is kept
   * for the life of the process, as the runtime's is. */
  if (drv.primaryCtxRetain(&ctx, dev) != cudaSuccess_) return false;
  return drv.ctxSetCurrent(ctx) == cudaSuccess_;
}

bool shimSynchronize(void) { return driver() && shimCurrentContext() != NULL && drv.ctxSynchronize() == cudaSuccess_; }

ncclResult_t shimStagingBuffer(ncclComm_t comm, const char* call, size_t bytes, void** out) {
  if (bytes <= comm->stagingBytes) {
    *out = comm->staging;
    return ncclSuccess;
  }
  if (!driver() || shimCurrentContext() == NULL) {
    return shimFail(ncclInvalidUsage, comm, call, "no CUDA context is current on this thread (cudaSetDevice first)");
  }
  /* Grow by doubling, so that sizes creeping up allocate rarely; the old buffer is freed after
   * the GPU is done with it (cuMemFree waits). */
  size_t grown = comm->stagingBytes ? comm->stagingBytes : 1u << 20;
  while (grown < bytes) grown *= 2;
  CUdeviceptr p = 0;
  CUresult r = drv.memAlloc(&p, grown);
  if (r != cudaSuccess_) {
    return shimFail(ncclUnhandledCudaError, comm, call, "allocating the %zu-byte staging buffer failed (CUDA error %d%s)", grown,
                    r, "; inside a CUDA graph capture, run one call of this size before capturing");
  }
  shimFreeStagingBuffer(comm);
  comm->staging = (void*)(uintptr_t)p, comm->stagingBytes = grown;
  *out = comm->staging;
  return ncclSuccess;
}

void shimFreeStagingBuffer(ncclComm_t comm) {
  if (comm->staging != NULL && driver()) drv.memFree((CUdeviceptr)(uintptr_t)comm->staging);
  comm->staging = NULL, comm->stagingBytes = 0;
}

/* ncclMemAlloc rounds sizes up to this: the copy engines write into a peer's allocation of another
 * size at about four fifths of their speed (collectives.h). */
#define memAllocAlign (2u << 20)

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  if (ptr == NULL) return shimFail(ncclInvalidArgument, NULL, "ncclMemAlloc", "ptr is NULL");
  *ptr = NULL;
  if (size == 0) return ncclSuccess;
  if (!driver()) return shimFail(ncclSystemError, NULL, "ncclMemAlloc", "the CUDA driver (libcuda.so.1) is not loadable");
  if (shimCurrentContext() == NULL) {
    return shimFail(ncclInvalidUsage, NULL, "ncclMemAlloc", "no CUDA context is current on this thread (cudaSetDevice first)");
  }
  if (size > SIZE_MAX - memAllocAlign) return shimFail(ncclInvalidArgument, NULL, "ncclMemAlloc", "size %zu is too large", size);
  CUdeviceptr p = 0;
  CUresult r = drv.memAlloc(&p, (size + memAllocAlign - 1) / memAllocAlign * memAllocAlign);
  if (r != cudaSuccess_) {
    return shimFail(ncclUnhandledCudaError, NULL, "ncclMemAlloc", "cuMemAlloc of %zu bytes failed (CUDA error %d)", size, r);
  }
  *ptr = (void*)(uintptr_t)p;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  if (ptr == NULL) return ncclSuccess;
  if (!driver()) return shimFail(ncclSystemError, NULL, "ncclMemFree", "the CUDA driver (libcuda.so.1) is not loadable");
  CUresult r = drv.memFree((CUdeviceptr)(uintptr_t)ptr);
  if (r != cudaSuccess_) return shimFail(ncclUnhandledCudaError, NULL, "ncclMemFree", "cuMemFree failed (CUDA error %d)", r);
  return ncclSuccess;
}

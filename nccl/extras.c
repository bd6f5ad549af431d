/*
 * nccl/extras.c: buffer registration, windows and device communicators.
 *
 * ncclCommRegister is local in NCCL, and this library's zero-copy registration
 * (mscclppCollRegister) is collective, so a registration here only records the buffer (and
 * registers it with the real NCCL's communicator when there is one): calls run through the
 * scratch buffers as for any buffer. Windows and device communicators are the real NCCL's
 * (PreMulSum operators are in redop.c).
 */
#include <stdlib.h>

#include "shim.h"

/* A registration handle of ours. */
typedef struct {
  uint64_t magic;
  void* buff;
  size_t size;
  ncclComm_t comm;
  void* real; /* the real NCCL's handle, or NULL */
} registration;

#define REGISTRATION_MAGIC 0x4745524c4343534dULL

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  const char* call = "ncclCommRegister";
  SHIM_FOREIGN(call, comm, ncclCommRegister, comm, buff, size, handle);
  if (handle == NULL) return shimFail(ncclInvalidArgument, comm, call, "handle is NULL");
  *handle = NULL;
  if (buff == NULL || size == 0) return shimFail(ncclInvalidArgument, comm, call, "buffer %p of %zu bytes", buff, size);
  ncclResult_t res = shimCommReady(comm, call);
  if (res != ncclSuccess) return res;
  registration* reg = calloc(1, sizeof(*reg));
  if (reg == NULL) return shimFail(ncclSystemError, comm, call, "out of memory");
  *reg = (registration){.magic = REGISTRATION_MAGIC, .buff = buff, .size = size, .comm = comm};
  if (comm->real != NULL) {
    char why[64];
    const shimRealNccl* r = shimReal(why, sizeof(why));
    if (r != NULL && r->ncclCommRegister != NULL && (res = r->ncclCommRegister(comm->real, buff, size, &reg->real)) != ncclSuccess) {
      free(reg);
      return res;
    }
  }
  *handle = reg;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  const char* call = "ncclCommDeregister";
  SHIM_FOREIGN(call, comm, ncclCommDeregister, comm, handle);
  registration* reg = handle;
  if (reg == NULL || reg->magic != REGISTRATION_MAGIC || reg->comm != comm) {
    return shimFail(ncclInvalidArgument, comm, call, "handle %p is not a registration of this communicator", handle);
  }
  ncclResult_t res = ncclSuccess;
  if (reg->real != NULL && comm->real != NULL) {
    char why[64];
    const shimRealNccl* r = shimReal(why, sizeof(why));
    if (r != NULL && r->ncclCommDeregister != NULL) res = r->ncclCommDeregister(comm->real, reg->real);
  }
  reg->magic = 0;
  free(reg);
  return res;
}

/* The calls that only the real NCCL serves: its communicator beside ours, made on first need. */
#define REAL_ONLY(call, comm, fn, ...)                                                                 \
  do {                                                                                                 \
    SHIM_FOREIGN(call, comm, fn, __VA_ARGS__);                                                         \
    ncclResult_t res_ = shimCommReady(comm, call);                                                     \
    if (res_ != ncclSuccess) return res_;                                                              \
    ncclComm_t real_;                                                                                  \
    const shimRealNccl* nccl_;                                                                         \
    if ((res_ = shimRealComm(comm, call, &real_, &nccl_)) != ncclSuccess) return res_;                 \
    if (nccl_->fn == NULL) return shimFail(ncclInvalidUsage, comm, call, "the real NCCL (%s) lacks it", nccl_->path); \
    comm = real_;                                                                                      \
    return nccl_->fn(__VA_ARGS__);                                                                     \
  } while (0)

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) {
  REAL_ONLY("ncclCommWindowRegister", comm, ncclCommWindowRegister, comm, buff, size, win, winFlags);
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  REAL_ONLY("ncclCommWindowDeregister", comm, ncclCommWindowDeregister, comm, win);
}

NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs, ncclDevComm_t* outDevComm) {
  REAL_ONLY("ncclDevCommCreate", comm, ncclDevCommCreate, comm, (const void*)reqs, (void*)outDevComm);
}

NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm) {
  REAL_ONLY("ncclDevCommDestroy", comm, ncclDevCommDestroy, comm, (const void*)devComm);
}

/* Deprecated in NCCL and without effect here: the layer reads MSCCLPP_DEBUG on each line. */
__attribute__((visibility("default"))) void ncclResetDebugInit(void) {}
__attribute__((visibility("default"), alias("ncclResetDebugInit"))) void pncclResetDebugInit(void);

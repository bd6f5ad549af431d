/*
 * nccl/redop.c: PreMulSum operators (ncclRedOpCreatePreMulSum, ncclRedOpDestroy) on our
 * communicators. An operator is a slot of its communicator's table: its type, the residence of
 * its scalar, and the scalar itself (its bytes, read at creation, for ncclScalarHostImmediate) or
 * where it is (ncclScalarDevice: each call reads it when it runs). A call with such an operator
 * runs natively as mscclppScale of this rank's input by the scalar, then a sum; a call that goes
 * to the real NCCL gets the operator's twin on the real communicator, made there on first need.
 *
 * Handles are numbered after ncclNumOps, as NCCL numbers its own: ncclNumOps + (tag << 16 |
 * slot), tag being a number of the communicator's (1 to 16383), so that an operator used on
 * another communicator is refused instead of taken for one of that communicator's.
 */
#include <stdlib.h>
#include <string.h>

#include "shim.h"

enum {
  slotBits = 16,                       /* a handle's low bits: the slot */
  maxSlots = 1 << slotBits,            /* live operators per communicator */
  maxTag = (1 << 14) - 1,              /* ncclNumOps + (maxTag << 16 | slot) stays below ncclMaxRedOp */
};

/* The tag of the next communicator that makes an operator. */
static _Atomic uint32_t nextTag;

static ncclRedOp_t handleOf(const ncclComm_t comm, int slot) {
  return (ncclRedOp_t)((int)ncclNumOps + (int)(comm->opTag << slotBits | (uint32_t)slot));
}

/* The slot of op in comm's table, or -1 with the reason in why. comm->mu is held. */
static int slotOf(ncclComm_t comm, ncclRedOp_t op, const char** why) {
  int v = (int)op - (int)ncclNumOps;
  if ((uint32_t)v >> slotBits != comm->opTag || comm->opTag == 0) {
    *why = "is not an operator of this communicator (one made on another communicator, or none)";
    return -1;
  }
  int slot = v & (maxSlots - 1);
  if (slot >= comm->nOps || !comm->ops[slot].used) {
    *why = slot >= comm->nOps ? "was never made" : "was destroyed";
    return -1;
  }
  return slot;
}

ncclResult_t shimResolveOp(ncclComm_t comm, const char* call, ncclRedOp_t op, ncclDataType_t type, shimOp* out) {
  memset(out, 0, sizeof(*out));
  out->op = op;
  if ((int)op < 0) return shimFail(ncclInvalidArgument, comm, call, "unknown reduction operator %d", (int)op);
  if (op < ncclNumOps) return ncclSuccess;
  const char* why = NULL;
  pthread_mutex_lock(&comm->mu);
  int slot = slotOf(comm, op, &why);
  if (slot >= 0) out->preMulSum = true, out->slot = slot, out->def = comm->ops[slot];
  pthread_mutex_unlock(&comm->mu);
  if (slot < 0) return shimFail(ncclInvalidArgument, comm, call, "reduction operator %d %s", (int)op, why);
  if (out->def.datatype != type) {
    return shimFail(ncclInvalidArgument, comm, call, "PreMulSum operator %d was made for %s, and the call reduces %s",
                    (int)op, shimTypeName(out->def.datatype), shimTypeName(type));
  }
  return ncclSuccess;
}

mscclppRedOp_t shimNativeOp(const shimOp* op) { return op->preMulSum ? mscclppSum : (mscclppRedOp_t)op->op; }

ncclResult_t shimPreMulScale(ncclComm_t comm, const char* call, const shimOp* op, const void* src, void* dst,
                             size_t count, ncclDataType_t type, cudaStream_t stream) {
  bool onDevice = op->def.residence == ncclScalarDevice;
  const void* scalar = onDevice ? op->def.devScalar : (const void*)&op->def.value;
  mscclppResult_t m = mscclppScale(src, dst, count, (mscclppDataType_t)type, scalar, onDevice, comm->coll, stream);
  if (m != mscclppSuccess) {
    return shimFail(shimResult(m), comm, call, "multiplying the input by the PreMulSum scalar failed: %s (the library's "
                    "log says why)", mscclppGetErrorString(m));
  }
  return ncclSuccess;
}

ncclResult_t shimRealOp(ncclComm_t comm, const char* call, const shimOp* op, ncclComm_t real, const shimRealNccl* nccl,
                        ncclRedOp_t* out) {
  *out = op->op;
  if (!op->preMulSum) return ncclSuccess;
  if (nccl->ncclRedOpCreatePreMulSum == NULL) {
    return shimFail(ncclInvalidUsage, comm, call, "the real NCCL (%s) has no ncclRedOpCreatePreMulSum", nccl->path);
  }
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->mu);
  shimPreMulSum* o = &comm->ops[op->slot];
  if (!o->used) {
    pthread_mutex_unlock(&comm->mu); /* destroyed by another thread since shimResolveOp */
    return shimFail(ncclInvalidArgument, comm, call, "reduction operator %d was destroyed", (int)op->op);
  }
  if (!o->hasReal) {
    void* scalar = o->residence == ncclScalarDevice ? o->devScalar : (void*)&o->value;
    res = nccl->ncclRedOpCreatePreMulSum(&o->real, scalar, o->datatype, o->residence, real);
    o->hasReal = res == ncclSuccess;
  }
  *out = o->real;
  pthread_mutex_unlock(&comm->mu);
  if (res != ncclSuccess) {
    return shimFail(res, comm, call, "making the PreMulSum operator on the real NCCL's communicator failed: %s",
                    nccl->ncclGetLastError ? nccl->ncclGetLastError(real) : ncclGetErrorString(res));
  }
  return ncclSuccess;
}

void shimFreeOps(ncclComm_t comm) {
  free(comm->ops);
  comm->ops = NULL, comm->nOps = 0;
}

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* call = "ncclRedOpCreatePreMulSum";
  SHIM_FOREIGN(call, comm, ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
  ncclResult_t res = shimCommReady(comm, call);
  if (res != ncclSuccess) return res;
  size_t size = shimTypeSize(datatype);
  if (op == NULL) return shimFail(ncclInvalidArgument, comm, call, "op is NULL");
  if (scalar == NULL) return shimFail(ncclInvalidArgument, comm, call, "scalar is NULL");
  if (size == 0) return shimFail(ncclInvalidArgument, comm, call, "unknown data type %d", (int)datatype);
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    return shimFail(ncclInvalidArgument, comm, call, "unknown scalar residence %d", (int)residence);
  }
  shimPreMulSum def = {.used = true, .datatype = datatype, .residence = residence};
  if (residence == ncclScalarHostImmediate) {
    memcpy(&def.value, scalar, size); /* the low bytes: the library reads the element there */
  } else {
    def.devScalar = scalar;
  }
  pthread_mutex_lock(&comm->mu);
  if (comm->opTag == 0) comm->opTag = atomic_fetch_add(&nextTag, 1) % maxTag + 1;
  int slot = 0;
  while (slot < comm->nOps && comm->ops[slot].used) slot++;
  if (slot == comm->nOps && slot < maxSlots) {
    int grown = comm->nOps ? 2 * comm->nOps : 4;
    shimPreMulSum* ops = realloc(comm->ops, (size_t)grown * sizeof(*ops));
    if (ops != NULL) {
      memset(ops + comm->nOps, 0, (size_t)(grown - comm->nOps) * sizeof(*ops));
      comm->ops = ops, comm->nOps = grown;
    }
  }
  bool made = slot < comm->nOps;
  if (made) comm->ops[slot] = def, *op = handleOf(comm, slot);
  pthread_mutex_unlock(&comm->mu);
  if (!made) {
    return slot >= maxSlots ? shimFail(ncclInvalidUsage, comm, call, "%d operators are alive: destroy some first", maxSlots)
                            : shimFail(ncclSystemError, comm, call, "out of memory");
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  const char* call = "ncclRedOpDestroy";
  SHIM_FOREIGN(call, comm, ncclRedOpDestroy, op, comm);
  if ((int)op >= 0 && op < ncclNumOps) {
    return shimFail(ncclInvalidArgument, comm, call, "operator %d is built in", (int)op);
  }
  const char* why = "is not an operator";
  ncclRedOp_t real = op;
  bool hasReal = false;
  pthread_mutex_lock(&comm->mu);
  int slot = (int)op < 0 ? -1 : slotOf(comm, op, &why);
  if (slot >= 0) {
    hasReal = comm->ops[slot].hasReal, real = comm->ops[slot].real;
    memset(&comm->ops[slot], 0, sizeof(comm->ops[slot]));
  }
  ncclComm_t realComm = comm->real;
  pthread_mutex_unlock(&comm->mu);
  if (slot < 0) return shimFail(ncclInvalidArgument, comm, call, "reduction operator %d %s", (int)op, why);
  if (hasReal && realComm != NULL) {
    char whyReal[64];
    const shimRealNccl* nccl = shimReal(whyReal, sizeof(whyReal));
    if (nccl != NULL && nccl->ncclRedOpDestroy != NULL) return nccl->ncclRedOpDestroy(real, realComm);
  }
  return ncclSuccess;
}

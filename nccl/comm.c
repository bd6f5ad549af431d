/*
 * nccl/comm.c: NCCL communicators on this library: unique ids, init (blocking, nonblocking,
 * several GPUs of one process), split and shrink, queries, finalize, destroy and abort.
 *
 * An NCCL communicator of ours joins a bootstrap through the 128-byte ncclUniqueId (which is a
 * mscclppUniqueId), builds a context, a communicator and a collective communicator over it (the
 * native path), and agrees with its peers on whether every rank's native side came up: if one did
 * not (no GPU the kernels run on, say), every call goes to the real NCCL instead, or init fails
 * when there is none or MSCCLPP_NCCL_FALLBACK=off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* Bootstrap tags of the layer's own messages: the real NCCL's id (real.c) and split ids. They lie
 * below the tags the library's communicator uses (core/communicator.go). */
enum { splitIdTagBase = 0x0e440000 };

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  _Static_assert(sizeof(ncclUniqueId) == sizeof(mscclppUniqueId), "the ids have one size");
  if (uniqueId == NULL) return shimFail(ncclInvalidArgument, NULL, "ncclGetUniqueId", "uniqueId is NULL");
  mscclppResult_t m = mscclppBootstrapCreateUniqueId((mscclppUniqueId*)uniqueId);
  if (m != mscclppSuccess) {
    return shimFail(shimResult(m), NULL, "ncclGetUniqueId", "making the bootstrap's id failed: %s", mscclppGetErrorString(m));
  }
  return ncclSuccess;
}

/* Releases what a communicator holds, in the reverse order of setup. */
static void commRelease(ncclComm_t comm, bool abort) {
  if (comm->real != NULL) {
    char why[64];
    const shimRealNccl* r = shimReal(why, sizeof(why));
    if (r != NULL) {
      if (abort && r->ncclCommAbort) r->ncclCommAbort(comm->real);
      else if (r->ncclCommDestroy) r->ncclCommDestroy(comm->real);
    }
    comm->real = NULL;
  }
  shimFreeStagingBuffer(comm);
  shimFreeOps(comm);
  if (comm->coll != NULL) mscclppCollCommDestroy(comm->coll);
  if (comm->communicator != NULL) mscclppCommunicatorDestroy(comm->communicator);
  if (comm->context != NULL) mscclppContextDestroy(comm->context);
  if (comm->bootstrap != NULL) mscclppBootstrapDestroy(comm->bootstrap);
  comm->coll = NULL, comm->communicator = NULL, comm->context = NULL, comm->bootstrap = NULL;
}

static void commFree(ncclComm_t comm) {
  comm->magic = SHIM_COMM_DEAD;
  pthread_mutex_destroy(&comm->mu);
  free(comm);
}

/* The native path: builds this rank's collective communicator, then agrees with the peers on
 * whether every rank has one; drops it when one rank does not. */
static ncclResult_t setupNative(ncclComm_t comm, const char* call) {
  int ok = 1;
  mscclppResult_t m = mscclppCollCommCreate(comm->communicator, -1, &comm->coll);
  if (m != mscclppSuccess) {
    ok = 0;
    comm->coll = NULL;
    snprintf(comm->nativeWhy, sizeof(comm->nativeWhy), "this rank's collective communicator failed: %s",
             mscclppGetErrorString(m));
  }
  int* oks = calloc((size_t)comm->nranks, sizeof(int));
  if (oks == NULL) return shimFail(ncclSystemError, comm, call, "out of memory");
  oks[comm->rank] = ok;
  m = mscclppBootstrapAllGatherBytes(comm->bootstrap, oks, sizeof(int));
  int firstBad = -1;
  for (int r = 0; r < comm->nranks && m == mscclppSuccess; r++) {
    if (!oks[r] && firstBad < 0) firstBad = r;
  }
  free(oks);
  if (m != mscclppSuccess) {
    return shimFail(shimResult(m), comm, call, "agreeing on the native path failed: %s", mscclppGetErrorString(m));
  }
  if (firstBad >= 0 && comm->coll != NULL) {
    mscclppCollCommDestroy(comm->coll);
    comm->coll = NULL;
    snprintf(comm->nativeWhy, sizeof(comm->nativeWhy), "rank %d's collective communicator failed", firstBad);
  }
  if (comm->coll != NULL) mscclppCollCommDevice(comm->coll, &comm->device);
  return ncclSuccess;
}

/* Everything init does once the communicator's fields are set: bootstrap, context, communicator,
 * native path, and the real NCCL's communicator when it is needed from the start. */
static ncclResult_t commSetup(ncclComm_t comm, ncclUniqueId id, const char* call) {
  mscclppUniqueId mid;
  memcpy(&mid, &id, sizeof(mid));
  mscclppResult_t m = mscclppBootstrapCreateFromId(&comm->bootstrap, comm->rank, comm->nranks, mid);
  if (m != mscclppSuccess) {
    comm->bootstrap = NULL;
    return shimFail(shimResult(m), comm, call, "joining the bootstrap failed: %s", mscclppGetErrorString(m));
  }
  if ((m = mscclppContextCreate(&comm->context)) != mscclppSuccess) {
    comm->context = NULL;
    return shimFail(shimResult(m), comm, call, "creating a context failed: %s", mscclppGetErrorString(m));
  }
  if ((m = mscclppCommunicatorCreate(comm->bootstrap, comm->context, &comm->communicator)) != mscclppSuccess) {
    comm->communicator = NULL;
    return shimFail(shimResult(m), comm, call, "creating a communicator failed: %s", mscclppGetErrorString(m));
  }
  ncclResult_t res = setupNative(comm, call);
  if (res != ncclSuccess) return res;
  if (comm->coll == NULL) {
    if (comm->cfg.off) {
      return shimFail(ncclInvalidUsage, comm, call,
                      "this library cannot serve the communicator (%s), and MSCCLPP_NCCL_FALLBACK=off", comm->nativeWhy);
    }
    char why[512];
    if (shimReal(why, sizeof(why)) == NULL) {
      return shimFail(ncclSystemError, comm, call, "this library cannot serve the communicator (%s), and %s",
                      comm->nativeWhy, why);
    }
    shimLog(shimLogWarn, comm, "this library cannot serve the communicator (%s): every call goes to the real NCCL",
            comm->nativeWhy);
  }
  if (comm->coll == NULL || comm->cfg.eager) {
    ncclComm_t real;
    const shimRealNccl* nccl;
    if ((res = shimRealComm(comm, call, &real, &nccl)) != ncclSuccess) return res;
    if (comm->device < 0 && nccl->ncclCommCuDevice != NULL) nccl->ncclCommCuDevice(real, &comm->device);
  }
  shimLog(shimLogInfo, comm, "%s: rank %d of %d on GPU %d, native path %s%s%s", call, comm->rank, comm->nranks,
          comm->device, comm->coll ? "ready" : "unavailable: ", comm->coll ? "" : comm->nativeWhy,
          comm->cfg.off ? ", fallback off" : "");
  return ncclSuccess;
}

/* A nonblocking init's thread: the caller's CUDA context, then the setup. */
typedef struct {
  ncclComm_t comm;
  ncclUniqueId id;
  void* ctx;
  const char* call;
} initJob;

static void* initThread(void* arg) {
  initJob* job = arg;
  ncclResult_t res = ncclSuccess;
  if (job->ctx != NULL && !shimSetContext(job->ctx)) {
    res = shimFail(ncclUnhandledCudaError, job->comm, job->call, "cannot make the caller's CUDA context current");
  }
  if (res == ncclSuccess) res = commSetup(job->comm, job->id, job->call);
  if (res != ncclSuccess) {
    commRelease(job->comm, true);
    atomic_store(&job->comm->asyncError, res);
  }
  atomic_store(&job->comm->initResult, res);
  free(job);
  return NULL;
}

/* Reads what the layer uses of an ncclConfig_t (NULL: the defaults). */
static ncclResult_t readNcclConfig(const ncclConfig_t* config, bool* blocking, const char* call) {
  *blocking = true;
  if (config == NULL) return ncclSuccess;
  if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, cgaClusterSize)) {
    return shimFail(ncclInvalidArgument, NULL, call, "config was not made with NCCL_CONFIG_INITIALIZER (magic %#x, size %zu)",
                    config->magic, config->size);
  }
  if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1) {
    return shimFail(ncclInvalidArgument, NULL, call, "config->blocking is %d (want 0 or 1)", config->blocking);
  }
  *blocking = config->blocking != 0;
  return ncclSuccess;
}

/* Creates this rank's communicator: blocking, it returns when ready; nonblocking, it returns
 * ncclInProgress at once with *out set, and ncclCommGetAsyncError tells when it is ready. */
static ncclResult_t commInit(ncclComm_t* out, int nranks, ncclUniqueId id, int rank, const ncclConfig_t* config,
                             const char* call) {
  if (out == NULL) return shimFail(ncclInvalidArgument, NULL, call, "comm is NULL");
  *out = NULL;
  if (nranks < 1) return shimFail(ncclInvalidArgument, NULL, call, "nranks is %d (want at least 1)", nranks);
  if (rank < 0 || rank >= nranks) return shimFail(ncclInvalidArgument, NULL, call, "rank %d is outside [0, %d)", rank, nranks);
  bool blocking;
  ncclResult_t res = readNcclConfig(config, &blocking, call);
  if (res != ncclSuccess) return res;
  ncclComm_t comm = calloc(1, sizeof(*comm));
  if (comm == NULL) return shimFail(ncclSystemError, NULL, call, "out of memory");
  comm->magic = SHIM_COMM_MAGIC;
  comm->rank = rank, comm->nranks = nranks, comm->device = -1, comm->blocking = blocking;
  pthread_mutex_init(&comm->mu, NULL);
  atomic_init(&comm->initResult, ncclInProgress);
  atomic_init(&comm->asyncError, ncclSuccess);
  char why[512];
  if (shimReadConfig(&comm->cfg, why, sizeof(why)) != ncclSuccess) {
    res = shimFail(ncclInvalidUsage, comm, call, "%s", why);
    commFree(comm);
    return res;
  }
  if (!blocking) {
    initJob* job = malloc(sizeof(*job));
    if (job == NULL) {
      commFree(comm);
      return shimFail(ncclSystemError, NULL, call, "out of memory");
    }
    *job = (initJob){.comm = comm, .id = id, .ctx = shimCurrentContext(), .call = call};
    if (pthread_create(&comm->initThread, NULL, initThread, job) != 0) {
      free(job);
      commFree(comm);
      return shimFail(ncclSystemError, NULL, call, "cannot start the init thread");
    }
    comm->initThreadStarted = true;
    *out = comm;
    return ncclInProgress;
  }
  res = commSetup(comm, id, call);
  if (res != ncclSuccess) {
    commRelease(comm, true);
    commFree(comm);
    return res;
  }
  atomic_store(&comm->initResult, ncclSuccess);
  *out = comm;
  return ncclSuccess;
}

ncclResult_t shimCommReady(ncclComm_t comm, const char* call) {
  ncclResult_t res = atomic_load(&comm->initResult);
  if (res == ncclInProgress) {
    /* A call on a communicator still being made waits for it (NCCL would queue the call). */
    pthread_mutex_lock(&comm->mu);
    if (comm->initThreadStarted) {
      pthread_join(comm->initThread, NULL);
      comm->initThreadStarted = false;
    }
    pthread_mutex_unlock(&comm->mu);
    res = atomic_load(&comm->initResult);
  }
  if (res != ncclSuccess) return shimFail(ncclInvalidUsage, comm, call, "the communicator's init failed (%s)", ncclGetErrorString(res));
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return commInit(comm, nranks, commId, rank, NULL, "ncclCommInitRank");
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
         ncclConfig_t* config) {
  return commInit(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
         ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == NULL) {
    return shimFail(ncclInvalidArgument, NULL, "ncclCommInitRankScalable", "want at least one id (nId %d, commIds %p)",
                    nId, (void*)commIds);
  }
  /* One bootstrap root serves every rank here: the first id is the one every rank has. */
  return commInit(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}

/* ncclCommInitAll: one thread per GPU, each making one rank's communicator. */
typedef struct {
  ncclComm_t comm;
  ncclUniqueId id;
  int rank, nranks, device;
  ncclResult_t res;
} initAllJob;

static void* initAllThread(void* arg) {
  initAllJob* job = arg;
  if (!shimSetDevice(job->device)) {
    job->res = shimFail(ncclInvalidArgument, NULL, "ncclCommInitAll", "cannot use CUDA device %d", job->device);
    return NULL;
  }
  job->res = commInit(&job->comm, job->nranks, job->id, job->rank, NULL, "ncclCommInitAll");
  return NULL;
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == NULL) return shimFail(ncclInvalidArgument, NULL, "ncclCommInitAll", "comms is NULL");
  if (ndev < 1) return shimFail(ncclInvalidArgument, NULL, "ncclCommInitAll", "ndev is %d (want at least 1)", ndev);
  /* A device may be listed twice: this library lets ranks share a GPU (NCCL does not). */
  ncclUniqueId id;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res != ncclSuccess) return res;
  initAllJob* jobs = calloc((size_t)ndev, sizeof(*jobs));
  pthread_t* threads = calloc((size_t)ndev, sizeof(*threads));
  if (jobs == NULL || threads == NULL) {
    free(jobs), free(threads);
    return shimFail(ncclSystemError, NULL, "ncclCommInitAll", "out of memory");
  }
  int started = 0;
  for (int i = 0; i < ndev; i++) {
    jobs[i] = (initAllJob){.id = id, .rank = i, .nranks = ndev, .device = devlist ? devlist[i] : i};
    if (pthread_create(&threads[i], NULL, initAllThread, &jobs[i]) != 0) {
      res = shimFail(ncclSystemError, NULL, "ncclCommInitAll", "cannot start a thread");
      break;
    }
    started++;
  }
  for (int i = 0; i < started; i++) {
    pthread_join(threads[i], NULL);
    if (res == ncclSuccess && jobs[i].res != ncclSuccess) res = jobs[i].res;
  }
  for (int i = 0; i < ndev; i++) {
    comms[i] = res == ncclSuccess ? jobs[i].comm : NULL;
    if (res != ncclSuccess && jobs[i].comm != NULL) ncclCommDestroy(jobs[i].comm);
  }
  free(jobs), free(threads);
  return res;
}

/* Split and shrink: the members agree on a fresh id from the new rank 0 over the parent's
 * bootstrap, then build the new communicator like init. */
static ncclResult_t commFromParent(ncclComm_t parent, const int* members, int n, int newRank, int tag, ncclComm_t* out,
                                   ncclConfig_t* config, const char* call) {
  ncclUniqueId id;
  mscclppResult_t m = mscclppSuccess;
  ncclResult_t res = ncclSuccess;
  if (newRank == 0) {
    res = ncclGetUniqueId(&id);
    if (res != ncclSuccess) memset(&id, 0, sizeof(id)); /* the peers then fail to join, they do not wait */
    for (int i = 1; i < n; i++) {
      mscclppResult_t e = mscclppBootstrapSend(parent->bootstrap, &id, sizeof(id), members[i], tag);
      if (m == mscclppSuccess) m = e;
    }
  } else {
    m = mscclppBootstrapRecv(parent->bootstrap, &id, sizeof(id), members[0], tag);
  }
  if (res != ncclSuccess) return res;
  if (m != mscclppSuccess) return shimFail(shimResult(m), parent, call, "sharing the new id failed: %s", mscclppGetErrorString(m));
  return commInit(out, n, id, newRank, config, call);
}

/* The bootstrap tag of the next split or shrink of parent: every rank that takes part takes one,
 * so they stay in step (a rank with NCCL_SPLIT_NOCOLOR too). */
static int nextSplitTag(ncclComm_t parent) {
  pthread_mutex_lock(&parent->mu);
  int tag = splitIdTagBase + (int)(parent->splits++ & 0xffff);
  pthread_mutex_unlock(&parent->mu);
  return tag;
}

/* The order of ranks in a split: by key, then by the parent's rank. */
typedef struct {
  int color, key, rank;
} splitEntry;

static int bySplitOrder(const void* a, const void* b) {
  const splitEntry *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  SHIM_FOREIGN("ncclCommSplit", comm, ncclCommSplit, comm, color, key, newcomm, config);
  const char* call = "ncclCommSplit";
  if (newcomm == NULL) return shimFail(ncclInvalidArgument, comm, call, "newcomm is NULL");
  *newcomm = NULL;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return shimFail(ncclInvalidArgument, comm, call, "color %d is negative (want >= 0 or NCCL_SPLIT_NOCOLOR)", color);
  }
  ncclResult_t res = shimCommReady(comm, call);
  if (res != ncclSuccess) return res;
  int tag = nextSplitTag(comm);
  splitEntry* all = calloc((size_t)comm->nranks, sizeof(*all));
  int* members = calloc((size_t)comm->nranks, sizeof(int));
  if (all == NULL || members == NULL) {
    free(all), free(members);
    return shimFail(ncclSystemError, comm, call, "out of memory");
  }
  all[comm->rank] = (splitEntry){color, key, comm->rank};
  mscclppResult_t m = mscclppBootstrapAllGatherBytes(comm->bootstrap, all, sizeof(*all));
  if (m != mscclppSuccess) {
    free(all), free(members);
    return shimFail(shimResult(m), comm, call, "exchanging colors failed: %s", mscclppGetErrorString(m));
  }
  int n = 0;
  splitEntry* mine = calloc((size_t)comm->nranks, sizeof(*mine));
  for (int r = 0; mine != NULL && r < comm->nranks; r++) {
    if (all[r].color == color) mine[n++] = all[r];
  }
  if (mine == NULL) res = shimFail(ncclSystemError, comm, call, "out of memory");
  if (res == ncclSuccess && color != NCCL_SPLIT_NOCOLOR) {
    qsort(mine, (size_t)n, sizeof(*mine), bySplitOrder);
    int newRank = 0;
    for (int i = 0; i < n; i++) {
      members[i] = mine[i].rank;
      if (mine[i].rank == comm->rank) newRank = i;
    }
    res = commFromParent(comm, members, n, newRank, tag, newcomm, config, call);
  }
  free(all), free(members), free(mine);
  return res;
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
         ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  SHIM_FOREIGN("ncclCommShrink", comm, ncclCommShrink, comm, excludeRanksList, excludeRanksCount, newcomm, config,
               shrinkFlags);
  const char* call = "ncclCommShrink";
  if (newcomm == NULL) return shimFail(ncclInvalidArgument, comm, call, "newcomm is NULL");
  *newcomm = NULL;
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == NULL)) {
    return shimFail(ncclInvalidArgument, comm, call, "excludeRanksList is NULL or excludeRanksCount (%d) negative",
                    excludeRanksCount);
  }
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    return shimFail(ncclInvalidArgument, comm, call, "unknown shrinkFlags %#x", shrinkFlags);
  }
  ncclResult_t res = shimCommReady(comm, call);
  if (res != ncclSuccess) return res;
  int* members = calloc((size_t)comm->nranks, sizeof(int));
  if (members == NULL) return shimFail(ncclSystemError, comm, call, "out of memory");
  int n = 0, newRank = -1;
  for (int r = 0; r < comm->nranks; r++) {
    bool excluded = false;
    for (int i = 0; i < excludeRanksCount; i++) {
      if (excludeRanksList[i] < 0 || excludeRanksList[i] >= comm->nranks) {
        free(members);
        return shimFail(ncclInvalidArgument, comm, call, "excluded rank %d is outside [0, %d)", excludeRanksList[i],
                        comm->nranks);
      }
      excluded = excluded || excludeRanksList[i] == r;
    }
    if (excluded) continue;
    if (r == comm->rank) newRank = n;
    members[n++] = r;
  }
  if (newRank < 0) res = shimFail(ncclInvalidUsage, comm, call, "this rank is in the exclusion list");
  else if (n == 0) res = shimFail(ncclInvalidArgument, comm, call, "every rank is excluded");
  else res = commFromParent(comm, members, n, newRank, nextSplitTag(comm), newcomm, config, call);
  free(members);
  return res;
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  SHIM_FOREIGN("ncclCommFinalize", comm, ncclCommFinalize, comm);
  ncclResult_t res = shimCommReady(comm, "ncclCommFinalize");
  if (res != ncclSuccess) return res;
  /* This rank's work is done when the GPU is; the barrier then lets ncclCommDestroy free the
   * buffers that peers read. */
  if (comm->real != NULL) {
    char why[64];
    const shimRealNccl* r = shimReal(why, sizeof(why));
    if (r != NULL && r->ncclCommFinalize != NULL && (res = r->ncclCommFinalize(comm->real)) != ncclSuccess) return res;
  }
  if (shimCurrentContext() != NULL && !shimSynchronize()) {
    return shimFail(ncclUnhandledCudaError, comm, "ncclCommFinalize", "waiting for the GPU failed");
  }
  mscclppResult_t m = mscclppBootstrapBarrierAll(comm->bootstrap);
  if (m != mscclppSuccess) return shimFail(shimResult(m), comm, "ncclCommFinalize", "the barrier failed: %s", mscclppGetErrorString(m));
  return ncclSuccess;
}

/* Destroy and abort: wait for a nonblocking init, then release everything. */
static ncclResult_t commEnd(ncclComm_t comm, bool abort);

/* An abort's teardown, on a thread of its own. */
static void* abortThread(void* comm) {
  commEnd(comm, true);
  return NULL;
}

static ncclResult_t commEnd(ncclComm_t comm, bool abort) {
  if (abort && comm->magic == SHIM_COMM_MAGIC) {
    /* ncclCommAbort returns at once. The library's kernels that wait for a peer give up within
     * milliseconds (mscclppCollCommAbort); the teardown, on a thread, waits for them (freeing GPU
     * memory does) and for a nonblocking init (the bootstrap timeout). Calls on the communicator
     * fail from now. */
    if (atomic_load(&comm->initResult) == ncclSuccess && comm->coll != NULL) mscclppCollCommAbort(comm->coll);
    comm->magic = SHIM_COMM_DEAD;
    pthread_t t;
    if (pthread_create(&t, NULL, abortThread, comm) == 0) {
      pthread_detach(t);
      return ncclSuccess;
    }
  }
  pthread_mutex_lock(&comm->mu);
  if (comm->initThreadStarted) {
    pthread_join(comm->initThread, NULL);
    comm->initThreadStarted = false;
  }
  pthread_mutex_unlock(&comm->mu);
  if (atomic_load(&comm->initResult) == ncclSuccess) commRelease(comm, abort);
  commFree(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess; /* as NCCL: destroying NULL does nothing */
  SHIM_FOREIGN("ncclCommDestroy", comm, ncclCommDestroy, comm);
  return commEnd(comm, false);
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  SHIM_FOREIGN("ncclCommAbort", comm, ncclCommAbort, comm);
  return commEnd(comm, true);
}

NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  SHIM_FOREIGN("ncclCommRevoke", comm, ncclCommRevoke, comm, revokeFlags);
  if (revokeFlags != NCCL_REVOKE_DEFAULT) return shimFail(ncclInvalidArgument, comm, "ncclCommRevoke", "revokeFlags must be 0");
  /* Calls of this library's kernels end by themselves; the real NCCL's are revoked there. */
  if (comm->real != NULL) {
    char why[64];
    const shimRealNccl* r = shimReal(why, sizeof(why));
    if (r != NULL && r->ncclCommRevoke != NULL) return r->ncclCommRevoke(comm->real, revokeFlags);
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  SHIM_FOREIGN("ncclCommGetAsyncError", comm, ncclCommGetAsyncError, comm, asyncError);
  if (asyncError == NULL) return shimFail(ncclInvalidArgument, comm, "ncclCommGetAsyncError", "asyncError is NULL");
  ncclResult_t init = atomic_load(&comm->initResult);
  if (init == ncclInProgress) {
    *asyncError = ncclInProgress;
    return ncclSuccess;
  }
  *asyncError = atomic_load(&comm->asyncError);
  if (*asyncError == ncclSuccess && comm->coll != NULL) {
    /* A peer that died or closed under a waiting kernel, or a frozen one: the first report is
     * kept, logged and left in this thread's ncclGetLastError. */
    mscclppResult_t m = mscclppSuccess;
    char reason[640];
    if (mscclppCollCommGetAsyncError(comm->coll, &m, reason, sizeof(reason)) == mscclppSuccess && m != mscclppSuccess) {
      int none = ncclSuccess;
      if (atomic_compare_exchange_strong(&comm->asyncError, &none, (int)shimResult(m))) {
        shimFail(shimResult(m), comm, "ncclCommGetAsyncError", "%s", reason);
      }
      *asyncError = atomic_load(&comm->asyncError);
    }
  }
  if (*asyncError == ncclSuccess && comm->real != NULL) {
    char why[64];
    const shimRealNccl* r = shimReal(why, sizeof(why));
    if (r != NULL && r->ncclCommGetAsyncError != NULL) return r->ncclCommGetAsyncError(comm->real, asyncError);
  }
  return ncclSuccess;
}

/* The queries: a property of a ready communicator. */
static ncclResult_t commQuery(ncclComm_t comm, int* out, const char* call, int value) {
  if (out == NULL) return shimFail(ncclInvalidArgument, comm, call, "output is NULL");
  ncclResult_t res = shimCommReady(comm, call);
  if (res != ncclSuccess) return res;
  *out = value;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  SHIM_FOREIGN("ncclCommCount", comm, ncclCommCount, comm, count);
  return commQuery(comm, count, "ncclCommCount", comm->nranks);
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  SHIM_FOREIGN("ncclCommUserRank", comm, ncclCommUserRank, comm, rank);
  return commQuery(comm, rank, "ncclCommUserRank", comm->rank);
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  SHIM_FOREIGN("ncclCommCuDevice", comm, ncclCommCuDevice, comm, device);
  /* The device is known once a nonblocking init is done: wait for it before reading it. */
  ncclResult_t res = shimCommReady(comm, "ncclCommCuDevice");
  return res != ncclSuccess ? res : commQuery(comm, device, "ncclCommCuDevice", comm->device);
}

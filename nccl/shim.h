/*
 * nccl/shim.h: the internals of libmscclpp_nccl.so, the NCCL API (include/nccl.h) served by this
 * library. Not installed.
 *
 * The layer is a client of libmscclpp.so's public C API (mscclpp/core.h, mscclpp/collectives.h),
 * like any program: an NCCL communicator is a bootstrap, a context, a communicator and a
 * collective communicator of that API, plus, when a call needs it, a communicator of the real
 * NCCL created alongside (real.c). Each call is served natively or sent to the real NCCL
 * (route.c decides); a communicator handle that is not ours is passed to the real NCCL unchanged.
 */
#ifndef MSCCLPP_NCCL_SHIM_H_
#define MSCCLPP_NCCL_SHIM_H_

#include <nccl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <mscclpp/collectives.h>
#include <mscclpp/core.h>

/* Defines an exported NCCL function and its profiling twin pNAME (the same code). */
#define NCCL_API(ret, name, ...)                                                              \
  __attribute__((visibility("default"), alias(#name))) ret p##name(__VA_ARGS__);             \
  __attribute__((visibility("default"))) ret name(__VA_ARGS__)

/* The kinds of calls that route.c routes, one bit each in a routing mask. */
typedef enum {
  shimAllReduce,
  shimAllGather,
  shimReduceScatter,
  shimBroadcast,
  shimReduce,
  shimSendRecv,
  shimAlltoAll,
  shimGather,
  shimScatter,
  shimNumKinds
} shimKind;

/* The lower-case name of a kind, as MSCCLPP_NCCL_FALLBACK spells it. */
const char* shimKindName(shimKind kind);

/* What the environment asks of a communicator, read when it is created (env.c). */
typedef struct {
  bool off;          /* MSCCLPP_NCCL_FALLBACK=off: never use the real NCCL */
  bool eager;        /* "eager" in the list: create the real NCCL communicator at init */
  uint32_t forced;   /* kinds (bit per shimKind) always sent to the real NCCL */
} shimConfig;

/* Reads MSCCLPP_NCCL_FALLBACK into *cfg; on a bad value writes why into why and fails. */
ncclResult_t shimReadConfig(shimConfig* cfg, char* why, size_t whyLen);

/* Marks an NCCL communicator of ours ("MSCCLNC1"); a real NCCL communicator starts otherwise. */
#define SHIM_COMM_MAGIC 0x31434e4c4343534dULL
/* Marks one of ours that was destroyed or aborted (while its memory is still there to read). */
#define SHIM_COMM_DEAD 0x44434e4c4343534dULL

/* A PreMulSum operator of one of our communicators (ncclRedOpCreatePreMulSum, redop.c). */
typedef struct {
  bool used;                       /* false: a free slot */
  ncclDataType_t datatype;         /* the one type it reduces */
  ncclScalarResidence_t residence;
  uint64_t value;                  /* ncclScalarHostImmediate: the scalar's bytes, read at creation */
  void* devScalar;                 /* ncclScalarDevice: where the scalar is, read by each call */
  bool hasReal;                    /* its twin on the real NCCL's communicator was made */
  ncclRedOp_t real;                /* that twin */
} shimPreMulSum;

/* Where a communicator's initialisation stands (nonblocking init runs on a thread). */
typedef enum { shimInitRunning, shimInitDone } shimInitState;

struct ncclComm {
  uint64_t magic;  /* SHIM_COMM_MAGIC while alive, SHIM_COMM_DEAD once destroyed or aborted */
  int rank, nranks;
  int device;      /* CUDA device ordinal; -1 when the native path is unavailable */
  shimConfig cfg;
  bool blocking;   /* ncclConfig_t.blocking (default 1) */

  mscclppBootstrap_t bootstrap;
  mscclppContext_t context;
  mscclppCommunicator_t communicator;
  mscclppCollComm_t coll;   /* the native path; NULL when unavailable (nativeWhy says why) */
  char nativeWhy[256];

  void* staging;            /* the layer's own GPU buffer: ncclReduce's result on the ranks other
                             * than the root, a PreMulSum ncclReduceScatter's scaled input */
  size_t stagingBytes;

  pthread_mutex_t mu;       /* guards real, the split counter, loggedKinds and the operators */
  ncclComm_t real;          /* the real NCCL's communicator, made on first need; NULL before */
  shimPreMulSum* ops;       /* the PreMulSum operators, by slot (redop.c) */
  int nOps;                 /* slots in ops */
  uint32_t opTag;           /* this communicator's part of its operators' handles; 0 before the first */
  _Atomic uint32_t loggedKinds; /* kinds whose path has been logged */
  uint32_t splits;          /* splits and shrinks made from this communicator (their tags) */

  /* Nonblocking initialisation: the thread and its result (ncclInProgress while it runs). */
  pthread_t initThread;
  bool initThreadStarted;
  _Atomic int initResult;
  _Atomic int asyncError;   /* first error seen after init; ncclSuccess when none */
};

/* ---- Errors and logging (env.c) ------------------------------------------------------------- */

/* Records a failure of `call` on comm (NULL allowed) as the thread's last error, logs it at WARN
 * and returns res. */
ncclResult_t shimFail(ncclResult_t res, ncclComm_t comm, const char* call, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Maps a libmscclpp result to NCCL's (the values are the same; kept explicit). */
ncclResult_t shimResult(mscclppResult_t res);

typedef enum { shimLogWarn = 1, shimLogInfo = 2, shimLogTrace = 3 } shimLogLevel;
/* Writes a line in the library's log format when MSCCLPP_DEBUG allows level. */
void shimLog(shimLogLevel level, ncclComm_t comm, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- Communicators (comm.c) ----------------------------------------------------------------- */

/* Whether comm is one of ours (alive). NULL and the real NCCL's communicators are not. */
static inline bool shimIsOurs(ncclComm_t comm) { return comm != NULL && comm->magic == SHIM_COMM_MAGIC; }

/* Waits for a nonblocking init to finish; returns its result. */
ncclResult_t shimCommReady(ncclComm_t comm, const char* call);

/* ---- The CUDA driver (cuda.c) -------------------------------------------------------------- */

/* The calling thread's current CUDA context (NULL: none, or no driver). */
void* shimCurrentContext(void);
/* Makes ctx current on the calling thread. */
bool shimSetContext(void* ctx);
/* Makes device's primary context current on the calling thread (what cudaSetDevice does). */
bool shimSetDevice(int device);
/* Waits for the current context's work to finish. */
bool shimSynchronize(void);
/* comm's staging buffer, of at least bytes: kept by comm and grown (in the current context) when
 * a call needs more, so the first call of a larger size allocates: capture such calls in a CUDA
 * graph only after one ran. Calls of one communicator run one after the other on the GPU (as the
 * library requires), so they may all use it. */
ncclResult_t shimStagingBuffer(ncclComm_t comm, const char* call, size_t bytes, void** out);
/* Frees comm's staging buffer. */
void shimFreeStagingBuffer(ncclComm_t comm);

/* ---- The real NCCL (real.c) ----------------------------------------------------------------- */

/* The real NCCL's functions this layer calls; a NULL field is missing from that library. */
#define SHIM_REAL_FUNCS(X)                                                                              \
  X(ncclResult_t, ncclGetVersion, (int*))                                                               \
  X(ncclResult_t, ncclGetUniqueId, (ncclUniqueId*))                                                     \
  X(ncclResult_t, ncclCommInitRank, (ncclComm_t*, int, ncclUniqueId, int))                              \
  X(ncclResult_t, ncclCommInitRankConfig, (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))         \
  X(ncclResult_t, ncclCommFinalize, (ncclComm_t))                                                       \
  X(ncclResult_t, ncclCommDestroy, (ncclComm_t))                                                        \
  X(ncclResult_t, ncclCommAbort, (ncclComm_t))                                                          \
  X(ncclResult_t, ncclCommSplit, (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))                    \
  X(ncclResult_t, ncclCommShrink, (ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int))             \
  X(ncclResult_t, ncclCommRevoke, (ncclComm_t, int))                                                    \
  X(const char*, ncclGetLastError, (ncclComm_t))                                                        \
  X(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t, ncclResult_t*))                                   \
  X(ncclResult_t, ncclCommCount, (const ncclComm_t, int*))                                              \
  X(ncclResult_t, ncclCommCuDevice, (const ncclComm_t, int*))                                           \
  X(ncclResult_t, ncclCommUserRank, (const ncclComm_t, int*))                                           \
  X(ncclResult_t, ncclCommRegister, (const ncclComm_t, void*, size_t, void**))                          \
  X(ncclResult_t, ncclCommDeregister, (const ncclComm_t, void*))                                        \
  X(ncclResult_t, ncclCommWindowRegister, (ncclComm_t, void*, size_t, ncclWindow_t*, int))              \
  X(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t, ncclWindow_t))                                 \
  X(ncclResult_t, ncclDevCommCreate, (ncclComm_t, const void*, void*))                                  \
  X(ncclResult_t, ncclDevCommDestroy, (ncclComm_t, const void*))                                        \
  X(ncclResult_t, ncclMemAlloc, (void**, size_t))                                                       \
  X(ncclResult_t, ncclMemFree, (void*))                                                                 \
  X(ncclResult_t, ncclRedOpCreatePreMulSum,                                                             \
    (ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t))                           \
  X(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t, ncclComm_t))                                          \
  X(ncclResult_t, ncclReduce,                                                                           \
    (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t))           \
  X(ncclResult_t, ncclBroadcast, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) \
  X(ncclResult_t, ncclAllReduce,                                                                        \
    (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))                \
  X(ncclResult_t, ncclReduceScatter,                                                                    \
    (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))                \
  X(ncclResult_t, ncclAllGather, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)) \
  X(ncclResult_t, ncclAlltoAll, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)) \
  X(ncclResult_t, ncclGather, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) \
  X(ncclResult_t, ncclScatter, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) \
  X(ncclResult_t, ncclSend, (const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))        \
  X(ncclResult_t, ncclRecv, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))              \
  X(ncclResult_t, ncclGroupStart, (void))                                                               \
  X(ncclResult_t, ncclGroupEnd, (void))                                                                 \
  X(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t*))

/* The real NCCL: its functions and where it was loaded from. */
typedef struct {
#define SHIM_REAL_FIELD(ret, name, args) ret(*name) args;
  SHIM_REAL_FUNCS(SHIM_REAL_FIELD)
#undef SHIM_REAL_FIELD
  char path[1024];
} shimRealNccl;

/* The real NCCL, loaded on first use (MSCCLPP_NCCL_LIB_PATH, else the first libnccl.so.2 that is
 * not this library); NULL when there is none, with the reason in why. */
const shimRealNccl* shimReal(char* why, size_t whyLen);

/* The real NCCL's communicator beside comm, created on first need: rank 0 makes the real unique
 * id and sends it over comm's bootstrap. Collective in the sense of NCCL: every rank's first
 * call that needs it is the same call. Fails (with the thread's last error set) when there is no
 * real NCCL or fallback is off. */
ncclResult_t shimRealComm(ncclComm_t comm, const char* call, ncclComm_t* real, const shimRealNccl** nccl);

/* ---- Calls with data (coll.c) -------------------------------------------------------------- */

/* The size of one element of an NCCL type (0: not a type). */
size_t shimTypeSize(ncclDataType_t type);
/* The lower-case name of an NCCL type ("float32"), or "unknown". */
const char* shimTypeName(ncclDataType_t type);

/* ---- Reduction operators (redop.c) ---------------------------------------------------------- */

/* A call's operator, resolved on its communicator. */
typedef struct {
  ncclRedOp_t op;        /* as the call gave it */
  bool preMulSum;        /* one of the communicator's PreMulSum operators (else a built-in one) */
  int slot;              /* PreMulSum: its slot */
  shimPreMulSum def;     /* PreMulSum: a copy of its definition */
} shimOp;

/* Resolves op for a call reducing `type` on comm: a built-in operator, or a live PreMulSum
 * operator of comm made for `type`; anything else fails with ncclInvalidArgument and a message. */
ncclResult_t shimResolveOp(ncclComm_t comm, const char* call, ncclRedOp_t op, ncclDataType_t type, shimOp* out);
/* The operator the library applies after shimPreMulScale: op itself, or sum for PreMulSum. */
mscclppRedOp_t shimNativeOp(const shimOp* op);
/* Queues dst = src * the PreMulSum factor of op (count elements of type) on comm's GPU. */
ncclResult_t shimPreMulScale(ncclComm_t comm, const char* call, const shimOp* op, const void* src, void* dst,
                             size_t count, ncclDataType_t type, cudaStream_t stream);
/* The real NCCL's operator for op on real (comm's real communicator): op itself when built in,
 * else the PreMulSum operator's twin there, made on first need with the same scalar. */
ncclResult_t shimRealOp(ncclComm_t comm, const char* call, const shimOp* op, ncclComm_t real,
                        const shimRealNccl* nccl, ncclRedOp_t* out);
/* Frees comm's operators (their real twins go with the real communicator). */
void shimFreeOps(ncclComm_t comm);

/* ---- Groups (group.c) ----------------------------------------------------------------------- */

/* Called by each real NCCL call made for comm inside a group: opens the real NCCL's group on this
 * thread once, so that the calls of one ncclGroupStart/End are one group there too. */
ncclResult_t shimJoinRealGroup(const shimRealNccl* nccl);
/* Returns res; inside a group it also records the group's first error, which ncclGroupEnd
 * returns. */
ncclResult_t shimGroupError(ncclResult_t res);
/* Whether this thread is inside ncclGroupStart/End. */
bool shimInGroup(void);

/* ---- Point-to-point (p2p.c) ----------------------------------------------------------------- */

/* A native send or receive: run now, or kept until the end of the thread's group. */
ncclResult_t shimP2P(ncclComm_t comm, cudaStream_t stream, const mscclppP2POp* op);
/* Runs the sends and receives kept by the thread's group (ncclGroupEnd). */
ncclResult_t shimP2PFlush(void);

/* Passes a call on a communicator that is not ours (NCCL's own, as PyTorch's copy of NCCL calls
 * its exported functions) to the real NCCL unchanged; refuses NULL. */
#define SHIM_FOREIGN(call, comm, fn, ...)                                                              \
  do {                                                                                                 \
    if (!shimIsOurs(comm)) {                                                                           \
      if ((comm) == NULL) return shimGroupError(shimFail(ncclInvalidArgument, NULL, call, "comm is NULL")); \
      if ((comm)->magic == SHIM_COMM_DEAD) {                                                           \
        return shimGroupError(shimFail(ncclInvalidUsage, NULL, call, "the communicator was destroyed or aborted")); \
      }                                                                                                \
      char why_[512];                                                                                  \
      const shimRealNccl* r_ = shimReal(why_, sizeof(why_));                                           \
      if (r_ == NULL || r_->fn == NULL) {                                                              \
        return shimGroupError(                                                                         \
            shimFail(ncclInvalidArgument, NULL, call, "comm is not a communicator of this library"));  \
      }                                                                                                \
      return r_->fn(__VA_ARGS__);                                                                      \
    }                                                                                                  \
  } while (0)

#endif  // MSCCLPP_NCCL_SHIM_H_

/*
 * nccl.h: the NCCL 2.28 API of MSCCL++ in Go.
 *
 * This header matches NVIDIA's nccl.h of NCCL 2.28.3, plus ncclCommRevoke of 2.28.9: the same
 * types, sizes, layouts, enum values, macros and prototypes, so a program compiled against either
 * header runs against either library. libmscclpp_nccl.so serves these calls with MSCCL++; to use
 * it, LD_PRELOAD it, put the folder of its libnccl.so.2 first on LD_LIBRARY_PATH, or link with
 * -lmscclpp_nccl. The calls it does not serve itself go to the real NCCL, which
 * MSCCLPP_NCCL_LIB_PATH locates and MSCCLPP_NCCL_FALLBACK steers (see docs/CONFIG.md).
 *
 * Each function nccl<Name> has a profiling twin pnccl<Name> with the same prototype and
 * behaviour, so that a tool which intercepts nccl<Name> can still reach the library.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#if CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if defined(__cplusplus) && CUDART_VERSION >= 11080
#include <cuda_fp8.h>
#endif

/* Major version of the NCCL API this header describes. */
#define NCCL_MAJOR 2
/* Minor version of the NCCL API this header describes. */
#define NCCL_MINOR 28
/* Patch number of the NCCL API this header describes. */
#define NCCL_PATCH 3
/* Release suffix of the NCCL API this header describes (none). */
#define NCCL_SUFFIX ""

/* The version above as one integer, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH). */
#define NCCL_VERSION_CODE 22803
/* Encodes a version as an integer: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z after. */
#define NCCL_VERSION(X,Y,Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

#include <limits.h>

/* Handle of a communicator: one rank's membership of a group of ranks. */
typedef struct ncclComm* ncclComm_t;
/* Handle of a buffer registered as a window with ncclCommWindowRegister. */
typedef struct ncclWindow_vidmem* ncclWindow_t;
/* The null communicator (what ncclCommSplit gives a rank that asked for no color). */
#define NCCL_COMM_NULL NULL

/* Size in bytes of a ncclUniqueId. */
#define NCCL_UNIQUE_ID_BYTES 128
/* Opaque token that names a communicator being created; rank 0 makes it, every rank gets a copy. */
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;

/* Status returned by every call. */
typedef enum { ncclSuccess                 =  0, /* the call did what it was asked */
               ncclUnhandledCudaError      =  1, /* a CUDA call failed */
               ncclSystemError             =  2, /* a system call or the network failed */
               ncclInternalError           =  3, /* the library broke one of its own invariants */
               ncclInvalidArgument         =  4, /* an argument is out of range or null */
               ncclInvalidUsage            =  5, /* the call is not allowed here or now */
               ncclRemoteError             =  6, /* another rank failed or went away */
               ncclInProgress              =  7, /* a non-blocking operation has not finished yet */
               ncclNumResults              =  8  /* the number of statuses above */ } ncclResult_t;

/* "Not set" for an int field of ncclConfig_t: the library picks the value. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
/* "Not set" for a pointer field of ncclConfig_t: the library picks the value. */
#define NCCL_CONFIG_UNDEF_PTR NULL
/* Color that keeps a rank out of every communicator ncclCommSplit makes. */
#define NCCL_SPLIT_NOCOLOR -1
/* "Not set" for a float field, such as ncclSimInfo_t.estimatedTime. */
#define NCCL_UNDEF_FLOAT -1.0f

/* ncclCommWindowRegister flag: an ordinary window. */
#define NCCL_WIN_DEFAULT 0x00
/* ncclCommWindowRegister flag: every rank uses the window at the same offsets (symmetric). */
#define NCCL_WIN_COLL_SYMMETRIC 0x01

/* Alignment in bytes a window's buffer must have. */
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy: the library's usual choice of thread blocks. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
/* ncclConfig_t.CTAPolicy: fewer thread blocks, leaving more of the GPU to the program. */
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
/* ncclConfig_t.CTAPolicy: no thread blocks where the transfer can do without them. */
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink flag: shrink a communicator that is idle. */
#define NCCL_SHRINK_DEFAULT 0x00
/* ncclCommShrink flag: abort the parent's pending operations first, then shrink. */
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke flag: the only value allowed so far. */
#define NCCL_REVOKE_DEFAULT 0x00

/* Options for creating a communicator; start from NCCL_CONFIG_INITIALIZER, then set fields. */
typedef struct ncclConfig_v22800 {
  size_t size;             /* sizeof(ncclConfig_t), set by the initializer */
  unsigned int magic;      /* marks an initialized struct, set by the initializer */
  unsigned int version;    /* NCCL_VERSION_CODE of the header, set by the initializer */
  int blocking;            /* 0: calls may return ncclInProgress; 1 (default): they wait */
  int cgaClusterSize;      /* thread-block cluster size of the kernels (sm_90 and later) */
  int minCTAs;             /* least number of thread blocks a collective uses */
  int maxCTAs;             /* most thread blocks a collective uses */
  const char *netName;     /* network plugin or transport to use, by name */
  int splitShare;          /* 1: a communicator split from this one shares its resources */
  int trafficClass;        /* network traffic class of the communicator's transfers */
  const char *commName;    /* name of the communicator in logs */
  int collnetEnable;       /* 1: allow in-network reductions (CollNet) */
  int CTAPolicy;           /* one of NCCL_CTA_POLICY_* */
  int shrinkShare;         /* 1: a communicator shrunk from this one shares its resources */
  int nvlsCTAs;            /* thread blocks of NVLink SHARP collectives */
  int nChannelsPerNetPeer; /* channels for point-to-point transfers to each network peer */
  int nvlinkCentricSched;  /* 1: launch kernels with CUDA's NVLink-centric scheduling */
} ncclConfig_t;

/* Value of a fresh ncclConfig_t: size, magic and version filled in, every option not set. */
#define NCCL_CONFIG_INITIALIZER {                                       \
  sizeof(ncclConfig_t),                                                 \
  0xcafebeef,                                                           \
  NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),                     \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_PTR,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_PTR,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
  NCCL_CONFIG_UNDEF_INT,                                                \
}

/* What ncclGroupSimulateEnd reports; start from NCCL_SIM_INFO_INITIALIZER. */
typedef struct ncclSimInfo_v22200 {
    size_t size;          /* sizeof(ncclSimInfo_t), set by the initializer */
    unsigned int magic;   /* marks an initialized struct, set by the initializer */
    unsigned int version; /* NCCL_VERSION_CODE of the header, set by the initializer */
    float estimatedTime;  /* the group's estimated duration in microseconds */
} ncclSimInfo_t;

/* Value of a fresh ncclSimInfo_t: size, magic and version filled in, no estimate yet. */
#define NCCL_SIM_INFO_INITIALIZER {                                         \
  sizeof(ncclSimInfo_t),                                                    \
  0x74685283,                                                               \
  NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),                         \
  NCCL_UNDEF_FLOAT                                                          \
}

/* Allocates size bytes of GPU memory suited to registration (possibly rounded up). */
ncclResult_t  ncclMemAlloc(void** ptr, size_t size);
/* Profiling twin of ncclMemAlloc. */
ncclResult_t pncclMemAlloc(void** ptr, size_t size);

/* Frees memory that ncclMemAlloc returned. */
ncclResult_t  ncclMemFree(void *ptr);
/* Profiling twin of ncclMemFree. */
ncclResult_t pncclMemFree(void *ptr);

/* Stores the library's version, encoded as NCCL_VERSION_CODE is, in *version. */
ncclResult_t  ncclGetVersion(int *version);
/* Profiling twin of ncclGetVersion. */
ncclResult_t pncclGetVersion(int *version);

/* Makes a new unique id (on one rank, which then hands it to the others). */
ncclResult_t  ncclGetUniqueId(ncclUniqueId* uniqueId);
/* Profiling twin of ncclGetUniqueId. */
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* ncclCommInitRank with options (config may be NULL for the defaults). */
ncclResult_t  ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
/* Profiling twin of ncclCommInitRankConfig. */
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);

/* Joins rank (0..nranks-1) to the communicator commId names, on the current GPU; ranks may share a GPU. */
ncclResult_t  ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
/* Profiling twin of ncclCommInitRank. */
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);

/* Creates ndev communicators in this process, one per GPU of devlist (NULL: GPUs 0..ndev-1). */
ncclResult_t  ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
/* Profiling twin of ncclCommInitAll. */
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

/* Completes the communicator's pending work and releases what it shares with other ranks. */
ncclResult_t  ncclCommFinalize(ncclComm_t comm);
/* Profiling twin of ncclCommFinalize. */
ncclResult_t pncclCommFinalize(ncclComm_t comm);

/* Frees this rank's part of the communicator. */
ncclResult_t  ncclCommDestroy(ncclComm_t comm);
/* Profiling twin of ncclCommDestroy. */
ncclResult_t pncclCommDestroy(ncclComm_t comm);

/* Frees the communicator without waiting, abandoning operations still running on the GPU. */
ncclResult_t  ncclCommAbort(ncclComm_t comm);
/* Profiling twin of ncclCommAbort. */
ncclResult_t pncclCommAbort(ncclComm_t comm);

/* Stops the communicator's operations in flight (revokeFlags: NCCL_REVOKE_DEFAULT); NCCL 2.28.9. */
ncclResult_t  ncclCommRevoke(ncclComm_t comm, int revokeFlags);
/* Profiling twin of ncclCommRevoke. */
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* Makes one communicator per color, ordered by key; config NULL inherits comm's options. */
ncclResult_t  ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t* config);
/* Profiling twin of ncclCommSplit. */
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t* config);

/* Makes a communicator of comm's ranks less those listed, renumbered without gaps (NCCL_SHRINK_*). */
ncclResult_t  ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
/* Profiling twin of ncclCommShrink. */
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);

/* ncclCommInitRankConfig with nId unique ids (the same on every rank) to spread the start-up. */
ncclResult_t  ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config);
/* Profiling twin of ncclCommInitRankScalable. */
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config);

/* A short description of a status code. */
const char*  ncclGetErrorString(ncclResult_t result);
/* Profiling twin of ncclGetErrorString. */
const char* pncclGetErrorString(ncclResult_t result);

/* The message of the latest error (comm may be NULL). */
const char*  ncclGetLastError(ncclComm_t comm);
/* Profiling twin of ncclGetLastError. */
const char* pncclGetLastError(ncclComm_t comm);

#if defined(__GNUC__) || defined(__clang__)
#define MSCCLPP_NCCL_DEPRECATED_(msg) __attribute__((deprecated(msg)))
#else
#define MSCCLPP_NCCL_DEPRECATED_(msg)
#endif
/* Reads the logging variables of the environment again; deprecated, as in NCCL. */
MSCCLPP_NCCL_DEPRECATED_("ncclResetDebugInit is not part of the supported NCCL API")
void  ncclResetDebugInit(void);
/* Profiling twin of ncclResetDebugInit; deprecated too. */
MSCCLPP_NCCL_DEPRECATED_("pncclResetDebugInit is not part of the supported NCCL API")
void pncclResetDebugInit(void);
#undef MSCCLPP_NCCL_DEPRECATED_

/* Stores the communicator's state in *asyncError: a background error, ncclInProgress or ncclSuccess. */
ncclResult_t  ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
/* Profiling twin of ncclCommGetAsyncError. */
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);

/* Stores the communicator's number of ranks in *count. */
ncclResult_t  ncclCommCount(const ncclComm_t comm, int* count);
/* Profiling twin of ncclCommCount. */
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);

/* Stores the CUDA device of this rank in *device (ranks may share one). */
ncclResult_t  ncclCommCuDevice(const ncclComm_t comm, int* device);
/* Profiling twin of ncclCommCuDevice. */
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);

/* Stores this rank's number in the communicator in *rank. */
ncclResult_t  ncclCommUserRank(const ncclComm_t comm, int* rank);
/* Profiling twin of ncclCommUserRank. */
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/* Registers size bytes of GPU memory at buff with the communicator for zero-copy transfers. */
ncclResult_t  ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
/* Profiling twin of ncclCommRegister. */
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);

/* Undoes ncclCommRegister. */
ncclResult_t  ncclCommDeregister(const ncclComm_t comm, void* handle);
/* Profiling twin of ncclCommDeregister. */
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);

/* Registers a buffer as a window of the communicator (collective: every rank calls it; NCCL_WIN_*). */
ncclResult_t  ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
/* Profiling twin of ncclCommWindowRegister. */
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);

/* Undoes ncclCommWindowRegister. */
ncclResult_t  ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
/* Profiling twin of ncclCommWindowDeregister. */
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

/* Helper whose size bounds ncclMaxRedOp, so that ncclRedOp_t stays as wide as it always was. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
/* Reduction operator: a built-in one, or one made by ncclRedOpCreatePreMulSum. */
typedef enum { ncclSum        = 0, /* sum */
               ncclProd       = 1, /* product */
               ncclMax        = 2, /* maximum */
               ncclMin        = 3, /* minimum */
               ncclAvg        = 4, /* sum divided by the number of ranks */
               ncclNumOps     = 5, /* how many operators are built in; created ones are numbered from here */
               ncclMaxRedOp   = 0x7fffffff>>(32-8*sizeof(ncclRedOp_dummy_t)) /* the largest operator value */
             } ncclRedOp_t;

/* Element type of a buffer. */
typedef enum { ncclInt8       = 0, ncclChar       = 0, /* signed 8-bit integer */
               ncclUint8      = 1,                     /* unsigned 8-bit integer */
               ncclInt32      = 2, ncclInt        = 2, /* signed 32-bit integer */
               ncclUint32     = 3,                     /* unsigned 32-bit integer */
               ncclInt64      = 4,                     /* signed 64-bit integer */
               ncclUint64     = 5,                     /* unsigned 64-bit integer */
               ncclFloat16    = 6, ncclHalf       = 6, /* IEEE half precision */
               ncclFloat32    = 7, ncclFloat      = 7, /* IEEE single precision */
               ncclFloat64    = 8, ncclDouble     = 8, /* IEEE double precision */
               ncclBfloat16   = 9,                     /* bfloat16 */
               ncclFloat8e4m3 = 10,                    /* 8-bit float, 4 exponent and 3 mantissa bits */
               ncclFloat8e5m2 = 11,                    /* 8-bit float, 5 exponent and 2 mantissa bits */
               ncclNumTypes   = 12                     /* the number of types above */
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives, and when it is read. */
typedef enum {
  ncclScalarDevice = 0,       /* in GPU-visible memory, read by each collective as it runs */
  ncclScalarHostImmediate = 1 /* in host memory, read once, before ncclRedOpCreatePreMulSum returns */
} ncclScalarResidence_t;

/* Makes an operator that multiplies each input by *scalar, then sums; valid with comm and datatype only. */
ncclResult_t  ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm);
/* Profiling twin of ncclRedOpCreatePreMulSum. */
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm);

/* Frees an operator made by ncclRedOpCreatePreMulSum on the same communicator. */
ncclResult_t  ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
/* Profiling twin of ncclRedOpDestroy. */
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/*
 * Collectives and point-to-point calls. Each rank of the communicator makes the call; it returns
 * once the work is queued on stream. Between ncclGroupStart and ncclGroupEnd calls are only
 * recorded, and start together at ncclGroupEnd.
 */

/* Reduces count elements of every rank's sendbuff with op into recvbuff of rank root. */
ncclResult_t  ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclReduce. */
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);

/* Copies count elements of root's buff into buff of every rank (the older, in-place ncclBroadcast). */
ncclResult_t  ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
    ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclBcast. */
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
    ncclComm_t comm, cudaStream_t stream);

/* Copies count elements of root's sendbuff into recvbuff of every rank. */
ncclResult_t  ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
    ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclBroadcast. */
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
    ncclComm_t comm, cudaStream_t stream);

/* Reduces count elements of every rank's sendbuff with op into every rank's recvbuff. */
ncclResult_t  ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclAllReduce. */
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

/* Reduces nranks*recvcount elements with op; rank i receives block i of the result. */
ncclResult_t  ncclReduceScatter(const void* sendbuff, void* recvbuff,
    size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
    cudaStream_t stream);
/* Profiling twin of ncclReduceScatter. */
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff,
    size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
    cudaStream_t stream);

/* Gathers sendcount elements from each rank into every rank's recvbuff, rank i's at i*sendcount. */
ncclResult_t  ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclAllGather. */
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* Sends block j (count elements) of sendbuff to rank j and receives rank i's into block i of recvbuff. */
ncclResult_t  ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclAlltoAll. */
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* Collects count elements from each rank into root's recvbuff, rank i's at i*count. */
ncclResult_t  ncclGather(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclGather. */
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* Hands block i (count elements) of root's sendbuff to rank i's recvbuff. */
ncclResult_t  ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclScatter. */
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* Sends count elements of sendbuff to rank peer, which calls ncclRecv to match. */
ncclResult_t  ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclSend. */
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);

/* Receives into recvbuff the count elements that rank peer sends with its matching ncclSend. */
ncclResult_t  ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);
/* Profiling twin of ncclRecv. */
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);

/* Opens a group: the calls that follow are recorded until ncclGroupEnd (groups nest). */
ncclResult_t  ncclGroupStart(void);
/* Profiling twin of ncclGroupStart. */
ncclResult_t pncclGroupStart(void);

/* Closes a group and starts its calls; their work is queued, not finished, when it returns. */
ncclResult_t  ncclGroupEnd(void);
/* Profiling twin of ncclGroupEnd. */
ncclResult_t pncclGroupEnd(void);

/* Closes a group without running it and reports its estimated time in *simInfo. */
ncclResult_t  ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
/* Profiling twin of ncclGroupSimulateEnd. */
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/*
 * Host functions of NCCL's device API (nccl_device/core.h) that PyTorch calls, with their types
 * left opaque. Skipped when that header is already in, which declares them itself; declared
 * here first, its own declarations agree with these.
 */
#ifndef _NCCL_DEVICE_CORE_H_
/* A communicator's device-side handle (defined by nccl_device/core.h). */
struct ncclDevComm;
/* A communicator's device-side handle. */
typedef struct ncclDevComm ncclDevComm_t;
/* What a device communicator must provide (defined by nccl_device/core.h). */
struct ncclDevCommRequirements;
/* What a device communicator must provide. */
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;

/* Creates comm's device communicator meeting the requirements, into *outDevComm. */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm);
/* Frees a device communicator made by ncclDevCommCreate. */
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const* devComm);
#endif

#ifdef __cplusplus
}
#endif

#endif

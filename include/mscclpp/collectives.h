/*
 * mscclpp/collectives.h: AllReduce, AllGather, ReduceScatter and Broadcast in C, with NCCL's
 * meaning of counts, types and operators, Send/Recv and AlltoAll, and a local Scale. C-compatible; exported by libmscclpp.so next to
 * mscclpp.h and mscclpp/core.h.
 *
 * A collective communicator is built once per rank over a communicator of core.h (every rank
 * calls mscclppCollCommCreate, each with its own GPU). After that, a collective only queues one
 * kernel on the caller's stream and returns: no allocation, no host synchronisation, so calls can
 * be captured in a CUDA graph and replayed. Every rank must issue the same collectives in the same
 * order, and the collectives of one communicator must run one after the other on the GPU: queue
 * them on one stream (or order the streams with events); for collectives that overlap, create one
 * collective communicator per stream. A call's thread blocks wait on each other and on the peers',
 * so they must all be resident at once: calls of communicators that overlap on a GPU need their
 * blocks to fit together (MSCCLPP_COLL_MAX_BLOCKS limits them), or the same order on every rank.
 * Buffers are device memory of the communicator's GPU, aligned to their element size; any count
 * works (0 does nothing).
 *
 * Ranks may share a GPU (for tests: more ranks than GPUs): each call then launches at most the
 * GPU's SMs divided by the ranks on it, and their kernels run side by side only under MPS (else
 * the driver takes turns between the processes). Slow, but the checks pass; a warning says so.
 * Under MPS the port channels' copies needed more hardware queues per process
 * (CUDA_DEVICE_MAX_CONNECTIONS; docs/GPU-HOSTS.md).
 *
 * Data moves through the communicator's scratch buffers over CUDA IPC (NVLink or PCIe between
 * GPUs of one host), or, for large AllReduces and AllGathers in buffers registered with
 * mscclppCollRegister, straight between the ranks' buffers (zero-copy; large in-place AllGathers,
 * and on 2 ranks AllReduces from 256 MiB with both buffers registered, through the GPU's copy
 * engines, driven by a proxy thread of the communicator). ReduceScatter and Broadcast always go
 * through the scratch. The algorithm is chosen by message size, rank count and registration
 * (MSCCLPP_ALLREDUCE_ALGO / MSCCLPP_ALLGATHER_ALGO force one for those two, see docs/CONFIG.md).
 */
#ifndef MSCCLPP_COLLECTIVES_H_
#define MSCCLPP_COLLECTIVES_H_

#include <stddef.h>

#include <mscclpp/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types; the values are NCCL's ncclDataType_t. Every type moves (AllGather, Broadcast);
 * AllReduce and ReduceScatter reduce every type but the fp8 ones, which they refuse with
 * mscclppInvalidArgument. */
typedef enum {
  mscclppInt8 = 0,         /* int8_t */
  mscclppUint8 = 1,        /* uint8_t */
  mscclppInt32 = 2,        /* int32_t */
  mscclppUint32 = 3,       /* uint32_t */
  mscclppInt64 = 4,        /* int64_t */
  mscclppUint64 = 5,       /* uint64_t */
  mscclppFloat16 = 6,      /* IEEE half (__half) */
  mscclppFloat32 = 7,      /* float */
  mscclppFloat64 = 8,      /* double */
  mscclppBfloat16 = 9,     /* bfloat16 (__nv_bfloat16) */
  mscclppFloat8e4m3 = 10,  /* fp8 with 4 exponent bits (__nv_fp8_e4m3) */
  mscclppFloat8e5m2 = 11   /* fp8 with 5 exponent bits (__nv_fp8_e5m2) */
} mscclppDataType_t;

/* Reduction operators; the values are NCCL's ncclRedOp_t. Integer sums and products wrap around. */
typedef enum {
  mscclppSum = 0,  /* a + b */
  mscclppProd = 1, /* a * b */
  mscclppMax = 2,  /* the larger */
  mscclppMin = 3,  /* the smaller */
  mscclppAvg = 4   /* the sum divided once, at the end, by the number of ranks: integers truncate toward
                    * zero; floating types round to nearest (float16, bfloat16: their sum, as the type
                    * holds it, divided and rounded once) */
} mscclppRedOp_t;

/* A CUDA stream: the same type as cudaStream_t and CUstream; NULL is the legacy default stream. */
typedef struct CUstream_st* mscclppStream_t;

/* A collective communicator: one GPU per rank (ranks may share one, see above). */
typedef struct mscclppCollComm_s* mscclppCollComm_t;

/* Builds this rank's collective communicator over `comm` (whose bootstrap and context must
 * outlive it) on CUDA device `deviceId`, or on the calling thread's current device (the one
 * cudaSetDevice chose) when deviceId < 0. Connects to every peer, exchanges scratch buffers
 * (about 512 MiB plus 13.5 MiB per rank of GPU memory, up to 16 ranks, and Send/Recv's 41 MiB
 * per rank: below), builds the memory and port channels and starts the port channels' proxy
 * thread (it polls while requests flow, naps when idle). Collective: blocks until every rank's
 * side is ready (bootstrap timeout).
 * Ranks on several hosts (host ids differ; MSCCLPP_HOSTID sets one): each host's ranks get a
 * collective communicator of their own, and every call crosses hosts over libfabric links
 * (MSCCLPP_NET_PROVIDER) with the bytes staged in host memory (8 MiB of it per peer); such calls
 * wait for their stream and return when done (they cannot be captured in a CUDA graph), and
 * mscclppCollRegister returns mscclppInvalidUsage. */
mscclppResult_t mscclppCollCommCreate(mscclppCommunicator_t comm, int deviceId, mscclppCollComm_t* collComm);
/* Stops the proxy thread and releases the collective communicator's GPU memory and channels. Local: call it once no
 * collective of it is running, here or on a peer. */
mscclppResult_t mscclppCollCommDestroy(mscclppCollComm_t collComm);
/* Makes the collectives of collComm that wait for a peer give up within milliseconds (their results are undefined;
 * the GPU and its CUDA context stay usable) and every later call fail with mscclppInvalidUsage. Local, any thread,
 * any time; mscclppCollCommDestroy is still needed. */
mscclppResult_t mscclppCollCommAbort(mscclppCollComm_t collComm);
/* Why collComm can no longer be used, without blocking: *asyncError is mscclppSuccess, mscclppRemoteError (a peer's
 * process died or closed its communicator while a collective waited for it, or before a later call: its kernels gave
 * up within milliseconds), mscclppSystemError (a kernel waited MSCCLPP_COLL_MAX_SPINS polls for a frozen peer) or
 * mscclppInvalidUsage (mscclppCollCommAbort). The reason, NUL-terminated and cut to reasonBytes, goes to reason
 * unless it is NULL. */
mscclppResult_t mscclppCollCommGetAsyncError(mscclppCollComm_t collComm, mscclppResult_t* asyncError, char* reason,
                                             size_t reasonBytes);
/* This rank, the number of ranks and the CUDA device of the collective communicator. */
mscclppResult_t mscclppCollCommRank(mscclppCollComm_t collComm, int* rank);
mscclppResult_t mscclppCollCommSize(mscclppCollComm_t collComm, int* nranks);
mscclppResult_t mscclppCollCommDevice(mscclppCollComm_t collComm, int* deviceId);

/* A buffer registered for zero-copy collectives. */
typedef struct mscclppCollRegistration_s* mscclppCollRegistration_t;

/* Registers `size` bytes of device memory at buff (cudaMalloc'd on the communicator's GPU) for
 * zero-copy collectives: a large AllReduce whose send and receive buffers lie in registered
 * buffers, or a large AllGather whose receive buffer does, then moves data straight between the
 * ranks' buffers. Collective: every rank registers its own buffer, in the same order (the k-th
 * registration of every rank is one logical buffer; sizes may differ). Registrations must not
 * overlap. Deregister before freeing the buffer: a collective that finds it freed fails. Allocate
 * in multiples of 2 MiB: the copy engines write into a peer's allocation of any other size at
 * about four fifths of their speed. */
mscclppResult_t mscclppCollRegister(mscclppCollComm_t collComm, void* buff, size_t size,
                                    mscclppCollRegistration_t* reg);
/* Drops a registration of collComm on this rank; later collectives copy that buffer through the
 * scratch. Every rank deregisters between the same two collectives (in a collective in which ranks
 * disagree, every rank's kernel gives up after MSCCLPP_COLL_MAX_SPINS polls and the communicator
 * reports mscclppSystemError; no rank completes it as if nothing were wrong or writes astray). */
mscclppResult_t mscclppCollDeregister(mscclppCollComm_t collComm, mscclppCollRegistration_t reg);

/* Reduces `count` elements of `datatype` at sendbuff across all ranks with `op` and writes the
 * result to recvbuff on every rank (sendbuff == recvbuff: in place); every rank gets
 * bit-identical results (the ranks' values are combined in rank order). Queued on `stream`. */
mscclppResult_t mscclppAllReduce(const void* sendbuff, void* recvbuff, size_t count, mscclppDataType_t datatype,
                                 mscclppRedOp_t op, mscclppCollComm_t collComm, mscclppStream_t stream);
/* Gathers `sendcount` elements of `datatype` at sendbuff from every rank into recvbuff, rank r's
 * at element r * sendcount (in place when sendbuff is this rank's part of recvbuff). Queued on
 * `stream`. */
mscclppResult_t mscclppAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, mscclppDataType_t datatype,
                                 mscclppCollComm_t collComm, mscclppStream_t stream);
/* Reduces the `recvcount` elements at sendbuff + r * recvcount across all ranks with `op` into
 * recvbuff on rank r (in rank order, as mscclppAllReduce): sendbuff holds nranks * recvcount
 * elements (in place when recvbuff is this rank's block of sendbuff). Queued on `stream`. */
mscclppResult_t mscclppReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, mscclppDataType_t datatype,
                                     mscclppRedOp_t op, mscclppCollComm_t collComm, mscclppStream_t stream);
/* Copies `count` elements at sendbuff on rank `root` to recvbuff on every rank (sendbuff ==
 * recvbuff: in place; the other ranks' sendbuff is not read). Queued on `stream`. */
mscclppResult_t mscclppBroadcast(const void* sendbuff, void* recvbuff, size_t count, mscclppDataType_t datatype,
                                 int root, mscclppCollComm_t collComm, mscclppStream_t stream);

/* Writes src[i] * scalar to dst[i] for the `count` elements of `datatype` at src (src == dst: in
 * place; every type mscclppAllReduce reduces), on collComm's GPU only: a local kernel queued on
 * `stream`, not a collective (no peer takes part, and the collectives' order is not affected),
 * capturable in CUDA graphs. `scalar` is one element of `datatype`: in host memory, read during the
 * call, when scalarOnDevice is 0; else in device memory, read when the kernel runs (a CUDA graph
 * replay reads the value it holds then). The product is NCCL's PreMulSum's: integers wrap, float16
 * and bfloat16 round the exact product once. */
mscclppResult_t mscclppScale(const void* src, void* dst, size_t count, mscclppDataType_t datatype, const void* scalar,
                             int scalarOnDevice, mscclppCollComm_t collComm, mscclppStream_t stream);

/* ---- Point-to-point: Send/Recv and AlltoAll ----------------------------------------------------
 * NCCL's meaning: the k-th send from rank a to rank b meets the k-th receive of rank b from rank a
 * (same size in bytes), whatever other calls the two make in between; a call waits only for the
 * peers it names. They move data through a scratch buffer of their own, apart from the
 * collectives' (41 MiB of GPU memory per rank of the communicator plus up to 2 MiB, on every
 * rank), and can be captured in CUDA graphs like them. */

/* One send or receive of mscclppSendRecv. */
typedef struct {
  int peer;                    /* the rank sent to or received from (may be this rank) */
  int isSend;                  /* 1: send count elements from buff; 0: receive them into buff */
  void* buff;                  /* device memory of the communicator's GPU */
  size_t count;                /* elements */
  mscclppDataType_t datatype;  /* element type */
} mscclppP2POp;

/* Queues the nops sends and receives of ops on `stream`, NCCL's ncclSend/ncclRecv between
 * ncclGroupStart/End: at most one send and one receive per peer and at most 16 peers per call
 * (else mscclppInvalidArgument), all progressing together; a send to this rank needs a receive
 * from it of the same size in the same call (a copy). A send to a peer and a receive from it of
 * the same size on the same buffer exchange it in place. Where the GPUs are joined by NVLink,
 * transfers of up to 16 MiB go as LL128 lines in one launch, the larger ones in a second. */
mscclppResult_t mscclppSendRecv(const mscclppP2POp* ops, int nops, mscclppCollComm_t collComm, mscclppStream_t stream);
/* Sends block j of sendbuff (`count` elements at element j * count) to rank j and receives block
 * i of recvbuff from rank i, on every rank (ncclAlltoAll). In place when sendbuff == recvbuff;
 * other overlapping buffers are refused. Queued on `stream`. On one host it is a collective kernel:
 * LL128 lines for blocks of up to 2.1 MiB where the GPUs are joined by NVLink, else rounds through
 * the peers' scratch. */
mscclppResult_t mscclppAlltoAll(const void* sendbuff, void* recvbuff, size_t count, mscclppDataType_t datatype,
                                mscclppCollComm_t collComm, mscclppStream_t stream);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // MSCCLPP_COLLECTIVES_H_

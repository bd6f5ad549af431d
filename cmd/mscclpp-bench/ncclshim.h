/*
 * The C side of mscclpp-bench's NCCL loader. NCCL is dlopened at run time; no nccl.h is needed
 * at build time: the few types the benchmark uses are declared here, with NCCL's ABI.
 */
#ifndef MSCCLPP_BENCH_NCCLSHIM_H
#define MSCCLPP_BENCH_NCCLSHIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	char internal[128];
} ncclUniqueId;
typedef void *ncclComm_t;
typedef void *cudaStream_t;
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;

/* What a trampoline returns when the library lacks the function (no ncclResult_t is negative). */
#define BENCH_NCCL_MISSING (-1)

/*
 * bench_nccl_open dlopens path and resolves every entry point. It returns 0 on success; -1 when
 * dlopen fails and -2 when a required symbol is missing, with dlerror's message in err. The
 * optional ones (ncclAlltoAll, NCCL 2.28's; ncclSend, ncclRecv, ncclGroupStart, ncclGroupEnd,
 * NCCL 2.7's) are resolved when present: see bench_nccl_has. dlopen, dlsym and dlerror run in
 * this one call, hence on one thread (dlerror's state is per thread). Nothing is kept from a
 * failed attempt.
 */
int bench_nccl_open(const char *path, char *err, size_t err_len);
/* bench_nccl_has reports whether the loaded library defines the optional entry point name. */
int bench_nccl_has(const char *name);

ncclResult_t bench_ncclGetVersion(int *version);
ncclResult_t bench_ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t bench_ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t bench_ncclCommDestroy(ncclComm_t comm);
/* Device addresses travel as integers (CUdeviceptr) and are cast here. */
ncclResult_t bench_ncclAllReduce(uintptr_t send, uintptr_t recv, size_t count, ncclDataType_t dt,
				 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t bench_ncclAllGather(uintptr_t send, uintptr_t recv, size_t sendcount,
				 ncclDataType_t dt, ncclComm_t comm, cudaStream_t stream);
ncclResult_t bench_ncclReduceScatter(uintptr_t send, uintptr_t recv, size_t recvcount, ncclDataType_t dt,
				     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t bench_ncclBroadcast(uintptr_t send, uintptr_t recv, size_t count, ncclDataType_t dt,
				 int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t bench_ncclAlltoAll(uintptr_t send, uintptr_t recv, size_t count, ncclDataType_t dt,
				ncclComm_t comm, cudaStream_t stream);
/*
 * bench_ncclSendRecv is one group: ncclGroupStart, ncclSend of count elements at send to
 * send_peer, ncclRecv of count elements into recv from recv_peer, ncclGroupEnd (called even when
 * a call inside the group failed). On failure *failed names the first function that failed.
 */
ncclResult_t bench_ncclSendRecv(uintptr_t send, uintptr_t recv, size_t count, ncclDataType_t dt,
				int send_peer, int recv_peer, ncclComm_t comm, cudaStream_t stream,
				const char **failed);
const char *bench_ncclGetErrorString(ncclResult_t r);

#endif

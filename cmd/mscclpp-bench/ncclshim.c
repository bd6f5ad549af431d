/* See ncclshim.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "ncclshim.h"

/* ncclInternalError: what a call through an unresolved pointer returns. */
enum { nccl_internal_error = 3 };

static ncclResult_t (*pfn_ncclGetVersion)(int *);
static ncclResult_t (*pfn_ncclGetUniqueId)(ncclUniqueId *);
static ncclResult_t (*pfn_ncclCommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
static ncclResult_t (*pfn_ncclCommDestroy)(ncclComm_t);
static ncclResult_t (*pfn_ncclAllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
					 ncclComm_t, cudaStream_t);
static ncclResult_t (*pfn_ncclAllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
					 cudaStream_t);
static ncclResult_t (*pfn_ncclReduceScatter)(const void *, void *, size_t, ncclDataType_t,
					     ncclRedOp_t, ncclComm_t, cudaStream_t);
static ncclResult_t (*pfn_ncclBroadcast)(const void *, void *, size_t, ncclDataType_t, int,
					 ncclComm_t, cudaStream_t);
static const char *(*pfn_ncclGetErrorString)(ncclResult_t);
static ncclResult_t (*pfn_ncclAlltoAll)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
					cudaStream_t);
static ncclResult_t (*pfn_ncclSend)(const void *, size_t, ncclDataType_t, int, ncclComm_t,
				    cudaStream_t);
static ncclResult_t (*pfn_ncclRecv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
static ncclResult_t (*pfn_ncclGroupStart)(void);
static ncclResult_t (*pfn_ncclGroupEnd)(void);

/* The optional entry points, in the order bench_nccl_open stores them. */
static const char *const optional_names[] = {
	"ncclAlltoAll", "ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd",
};
enum { n_optional = sizeof optional_names / sizeof optional_names[0] };
static int optional_found[n_optional];

static void copy_dlerror(char *err, size_t err_len, const char *prefix)
{
	const char *msg = dlerror();
	snprintf(err, err_len, "%s%s", prefix, msg != NULL ? msg : "unknown error");
}

int bench_nccl_open(const char *path, char *err, size_t err_len)
{
	static const char *const names[] = {
		"ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy",
		"ncclAllReduce",  "ncclAllGather",   "ncclGetErrorString", "ncclReduceScatter",
		"ncclBroadcast",
	};
	enum { n = sizeof names / sizeof names[0] };
	void *syms[n];
	void *opt[n_optional];

	dlerror();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		copy_dlerror(err, err_len, "");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		dlerror();
		syms[i] = dlsym(h, names[i]);
		if (syms[i] == NULL) {
			copy_dlerror(err, err_len, "");
			dlclose(h);
			return -2;
		}
	}
	for (int i = 0; i < n_optional; i++)
		opt[i] = dlsym(h, optional_names[i]);
	dlerror();
	/* Never dlclose a library in use: NCCL keeps threads alive for the life of the process. */
	pfn_ncclGetVersion = syms[0];
	pfn_ncclGetUniqueId = syms[1];
	pfn_ncclCommInitRank = syms[2];
	pfn_ncclCommDestroy = syms[3];
	pfn_ncclAllReduce = syms[4];
	pfn_ncclAllGather = syms[5];
	pfn_ncclGetErrorString = syms[6];
	pfn_ncclReduceScatter = syms[7];
	pfn_ncclBroadcast = syms[8];
	pfn_ncclAlltoAll = opt[0];
	pfn_ncclSend = opt[1];
	pfn_ncclRecv = opt[2];
	pfn_ncclGroupStart = opt[3];
	pfn_ncclGroupEnd = opt[4];
	for (int i = 0; i < n_optional; i++)
		optional_found[i] = opt[i] != NULL;
	return 0;
}

int bench_nccl_has(const char *name)
{
	for (int i = 0; i < n_optional; i++)
		if (strcmp(name, optional_names[i]) == 0)
			return optional_found[i];
	return 0;
}

ncclResult_t bench_ncclGetVersion(int *version)
{
	return pfn_ncclGetVersion ? pfn_ncclGetVersion(version) : nccl_internal_error;
}

ncclResult_t bench_ncclGetUniqueId(ncclUniqueId *id)
{
	return pfn_ncclGetUniqueId ? pfn_ncclGetUniqueId(id) : nccl_internal_error;
}

ncclResult_t bench_ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	return pfn_ncclCommInitRank ? pfn_ncclCommInitRank(comm, nranks, id, rank) : nccl_internal_error;
}

ncclResult_t bench_ncclCommDestroy(ncclComm_t comm)
{
	return pfn_ncclCommDestroy ? pfn_ncclCommDestroy(comm) : nccl_internal_error;
}

ncclResult_t bench_ncclAllReduce(uintptr_t send, uintptr_t recv, size_t count, ncclDataType_t dt,
				 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	if (!pfn_ncclAllReduce)
		return nccl_internal_error;
	return pfn_ncclAllReduce((const void *)send, (void *)recv, count, dt, op, comm, stream);
}

ncclResult_t bench_ncclAllGather(uintptr_t send, uintptr_t recv, size_t sendcount,
				 ncclDataType_t dt, ncclComm_t comm, cudaStream_t stream)
{
	if (!pfn_ncclAllGather)
		return nccl_internal_error;
	return pfn_ncclAllGather((const void *)send, (void *)recv, sendcount, dt, comm, stream);
}

ncclResult_t bench_ncclReduceScatter(uintptr_t send, uintptr_t recv, size_t recvcount, ncclDataType_t dt,
				     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	if (!pfn_ncclReduceScatter)
		return nccl_internal_error;
	return pfn_ncclReduceScatter((const void *)send, (void *)recv, recvcount, dt, op, comm, stream);
}

ncclResult_t bench_ncclBroadcast(uintptr_t send, uintptr_t recv, size_t count, ncclDataType_t dt,
				 int root, ncclComm_t comm, cudaStream_t stream)
{
	if (!pfn_ncclBroadcast)
		return nccl_internal_error;
	return pfn_ncclBroadcast((const void *)send, (void *)recv, count, dt, root, comm, stream);
}

ncclResult_t bench_ncclAlltoAll(uintptr_t send, uintptr_t recv, size_t count, ncclDataType_t dt,
				ncclComm_t comm, cudaStream_t stream)
{
	if (!pfn_ncclAlltoAll)
		return BENCH_NCCL_MISSING;
	return pfn_ncclAlltoAll((const void *)send, (void *)recv, count, dt, comm, stream);
}

ncclResult_t bench_ncclSendRecv(uintptr_t send, uintptr_t recv, size_t count, ncclDataType_t dt,
				int send_peer, int recv_peer, ncclComm_t comm, cudaStream_t stream,
				const char **failed)
{
	if (!pfn_ncclGroupStart || !pfn_ncclSend || !pfn_ncclRecv || !pfn_ncclGroupEnd) {
		*failed = !pfn_ncclGroupStart ? "ncclGroupStart"
			  : !pfn_ncclSend     ? "ncclSend"
			  : !pfn_ncclRecv     ? "ncclRecv"
					      : "ncclGroupEnd";
		return BENCH_NCCL_MISSING;
	}
	ncclResult_t r = pfn_ncclGroupStart();
	if (r != 0) {
		*failed = "ncclGroupStart";
		return r;
	}
	r = pfn_ncclSend((const void *)send, count, dt, send_peer, comm, stream);
	if (r != 0)
		*failed = "ncclSend";
	else if ((r = pfn_ncclRecv((void *)recv, count, dt, recv_peer, comm, stream)) != 0)
		*failed = "ncclRecv";
	ncclResult_t end = pfn_ncclGroupEnd();
	if (r == 0 && end != 0) {
		*failed = "ncclGroupEnd";
		r = end;
	}
	return r;
}

const char *bench_ncclGetErrorString(ncclResult_t r)
{
	return pfn_ncclGetErrorString ? pfn_ncclGetErrorString(r) : "NCCL not loaded";
}

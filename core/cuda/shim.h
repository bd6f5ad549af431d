/*
 * Declarations of the C side of package cuda: one trampoline per entry point in entrypoints.h,
 * the entry-point table, and the loader. Nothing here links against libcuda: cuda.h supplies
 * only types and prototypes, and every call goes through a pointer resolved with dlsym.
 */
#ifndef MSCCLPP_CUDA_SHIM_H
#define MSCCLPP_CUDA_SHIM_H

#include <stddef.h>
#include <cuda.h>

/* The shim is internal to the library: keep its symbols out of libmscclpp.so's exports. */
#pragma GCC visibility push(hidden)

#define CU_OPTIONAL 0
#define CU_REQUIRED 1

/* mscclpp_<name> calls the resolved <name>, or returns CUDA_ERROR_NOT_SUPPORTED if it is not. */
#define CU_FN(name, need, min_version, params, args) CUresult mscclpp_##name params;
#include "entrypoints.h"
#undef CU_FN

/* One row of the entry-point table. */
struct mscclpp_cu_entry {
	const char *name;   /* as listed in entrypoints.h, e.g. "cuMemAlloc" */
	const char *symbol; /* as cuda.h maps it, e.g. "cuMemAlloc_v2" */
	int required;       /* CU_REQUIRED or CU_OPTIONAL */
	int min_version;    /* lowest driver version that has it; 0 for any */
};

/* mscclpp_cu_entries returns the table and stores its length in *n. */
const struct mscclpp_cu_entry *mscclpp_cu_entries(int *n);

/*
 * mscclpp_cu_open dlopens path and forgets any symbol resolved before. On failure it returns -1
 * and copies dlerror's message into err (err_len bytes, NUL-terminated).
 */
int mscclpp_cu_open(const char *path, char *err, size_t err_len);

/*
 * mscclpp_cu_resolve looks up entry i in the library mscclpp_cu_open opened. On failure it
 * returns -1, leaves the entry unresolved and copies dlerror's message into err.
 */
int mscclpp_cu_resolve(int i, char *err, size_t err_len);

/* The steps of mscclpp_launch_in_context, to name the one that failed. */
enum mscclpp_launch_step {
	MSCCLPP_LAUNCH_GET_CONTEXT = 0, /* cuCtxGetCurrent */
	MSCCLPP_LAUNCH_PUSH = 1,        /* cuCtxPushCurrent */
	MSCCLPP_LAUNCH_LAUNCH = 2,      /* cuLaunchKernel */
	MSCCLPP_LAUNCH_POP = 3,         /* cuCtxPopCurrent */
};

/*
 * mscclpp_launch_in_context launches f with one kernel parameter, the bytes at param, with ctx
 * current on the calling thread: pushed first and popped after when another context (or none)
 * is current, left alone when ctx already is. On failure *failed_step names the step. The
 * driver copies the parameter during the launch; param is not kept.
 */
CUresult mscclpp_launch_in_context(CUcontext ctx, CUfunction f, unsigned int grid_x, unsigned int block_x,
				   CUstream stream, void *param, int *failed_step);

#pragma GCC visibility pop

#endif /* MSCCLPP_CUDA_SHIM_H */

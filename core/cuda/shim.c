/*
 * The C side of package cuda, generated from entrypoints.h. See shim.h and doc.go.
 *
 * Each dlopen or dlsym and the dlerror that explains its failure run inside one C call, so they
 * run on one OS thread: dlerror's state is per thread.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "shim.h"

#define CU_STR_(x) #x
/* CU_STR expands its argument first: CU_STR(cuMemAlloc) is "cuMemAlloc_v2" under cuda.h. */
#define CU_STR(x) CU_STR_(x)

/*
 * Function-pointer storage, typed from cuda.h's own prototype. The assertion fails the build when
 * a params list in entrypoints.h differs from cuda.h. __typeof__ does not evaluate its operand, so
 * naming the prototype does not reference the symbol.
 */
#define CU_FN(name, need, min_version, params, args)                                          \
	static __typeof__(&name) pfn_##name;                                                       \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), CUresult(CUDAAPI *) params), \
		       #name ": params in entrypoints.h differ from cuda.h");
#include "entrypoints.h"
#undef CU_FN

#define CU_FN(name, need, min_version, params, args)            \
	CUresult mscclpp_##name params                           \
	{                                                        \
		if (pfn_##name == NULL)                          \
			return CUDA_ERROR_NOT_SUPPORTED;         \
		return pfn_##name args;                          \
	}
#include "entrypoints.h"
#undef CU_FN

static const struct mscclpp_cu_entry entries[] = {
#define CU_FN(name, need, min_version, params, args) {#name, CU_STR(name), need, min_version},
#include "entrypoints.h"
#undef CU_FN
};

/* slots[i] is where entries[i] is stored once resolved. */
static void **const slots[] = {
#define CU_FN(name, need, min_version, params, args) (void **)&pfn_##name,
#include "entrypoints.h"
#undef CU_FN
};

_Static_assert(sizeof entries / sizeof entries[0] == sizeof slots / sizeof slots[0],
	       "entries and slots differ in length");

enum { num_entries = sizeof entries / sizeof entries[0] };

static void *handle;

const struct mscclpp_cu_entry *mscclpp_cu_entries(int *n)
{
	*n = num_entries;
	return entries;
}

static void copy_dlerror(char *err, size_t err_len, const char *fallback)
{
	const char *msg = dlerror();
	if (msg == NULL)
		msg = fallback;
	snprintf(err, err_len, "%s", msg);
}

int mscclpp_cu_open(const char *path, char *err, size_t err_len)
{
	dlerror(); /* clear any earlier error */
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		copy_dlerror(err, err_len, "dlopen failed");
		return -1;
	}
	/* Never dlclose: the driver keeps threads and state alive for the life of the process. */
	handle = h;
	for (int i = 0; i < num_entries; i++)
		*slots[i] = NULL;
	return 0;
}

int mscclpp_cu_resolve(int i, char *err, size_t err_len)
{
	if (i < 0 || i >= num_entries || handle == NULL) {
		snprintf(err, err_len, "entry %d: no such entry or no library open", i);
		return -1;
	}
	*slots[i] = NULL;
	dlerror();
	void *sym = dlsym(handle, entries[i].symbol);
	if (sym == NULL) {
		copy_dlerror(err, err_len, "symbol is NULL");
		return -1;
	}
	*slots[i] = sym;
	return 0;
}

CUresult mscclpp_launch_in_context(CUcontext ctx, CUfunction f, unsigned int grid_x, unsigned int block_x,
				   CUstream stream, void *param, int *failed_step)
{
	CUcontext current = NULL;
	CUresult r = mscclpp_cuCtxGetCurrent(&current);
	if (r != CUDA_SUCCESS) {
		*failed_step = MSCCLPP_LAUNCH_GET_CONTEXT;
		return r;
	}
	const int push = current != ctx;
	if (push && (r = mscclpp_cuCtxPushCurrent(ctx)) != CUDA_SUCCESS) {
		*failed_step = MSCCLPP_LAUNCH_PUSH;
		return r;
	}
	void *params[1] = {param};
	r = mscclpp_cuLaunchKernel(f, grid_x, 1, 1, block_x, 1, 1, 0, stream, params, NULL);
	*failed_step = MSCCLPP_LAUNCH_LAUNCH;
	if (push) {
		CUcontext popped;
		const CUresult p = mscclpp_cuCtxPopCurrent(&popped);
		if (r == CUDA_SUCCESS && p != CUDA_SUCCESS) {
			*failed_step = MSCCLPP_LAUNCH_POP;
			r = p;
		}
	}
	return r;
}

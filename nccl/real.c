/*
 * nccl/real.c: the real NCCL, for the calls this library does not serve itself. Loaded with
 * dlopen on first need, from MSCCLPP_NCCL_LIB_PATH, else the first libnccl.so.2 that is not this
 * layer: one already in the process (PyTorch loads its own), then the dynamic linker's search,
 * then the folders of LD_LIBRARY_PATH and the usual system ones.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

static pthread_once_t loadOnce = PTHREAD_ONCE_INIT;
static shimRealNccl real;
static bool realLoaded;
static char realWhy[1536];

/* Whether the library behind handle is this layer (the copy installed as libnccl.so.2 or
 * libmscclpp_nccl.so itself). */
static bool isThisLayer(void* handle) { return dlsym(handle, "mscclppNcclLayer") != NULL; }

/* Opens path as the real NCCL: RTLD_DEEPBIND, so that its calls of its own exported functions
 * (ncclBcast calls ncclBroadcast) reach itself and not this layer; NULL when it is this layer or
 * cannot be opened. */
static void* openCandidate(const char* path, char* why, size_t whyLen) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (h == NULL) {
    snprintf(why, whyLen, "%s", dlerror());
    return NULL;
  }
  if (isThisLayer(h)) {
    snprintf(why, whyLen, "%s is this library's own NCCL layer", path);
    dlclose(h);
    return NULL;
  }
  return h;
}

/* dl_iterate_phdr callback: the first loaded libnccl.so* that is not this layer. */
static int findLoaded(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  const char* name = info->dlpi_name;
  const char* base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (strncmp(base, "libnccl.so", 10) != 0) return 0;
  void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) return 0;
  bool ours = isThisLayer(h);
  dlclose(h);
  if (ours) return 0;
  snprintf((char*)data, sizeof(real.path), "%s", name);
  return 1;
}

/* Tries dir/libnccl.so.2 for each folder of a colon-separated list. */
static void* searchDirs(const char* dirs, char* path, size_t pathLen) {
  char why[256];
  const char* p = dirs;
  while (p != NULL && *p != '\0') {
    const char* end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0 && n < 900) {
      snprintf(path, pathLen, "%.*s/libnccl.so.2", (int)n, p);
      void* h = openCandidate(path, why, sizeof(why));
      if (h != NULL) return h;
    }
    p = end ? end + 1 : NULL;
  }
  return NULL;
}

static void load(void) {
  char why[512] = "";
  void* h = NULL;
  const char* env = getenv("MSCCLPP_NCCL_LIB_PATH");
  if (env != NULL && *env != '\0') {
    snprintf(real.path, sizeof(real.path), "%s", env);
    h = openCandidate(env, why, sizeof(why));
    if (h == NULL) {
      snprintf(realWhy, sizeof(realWhy), "MSCCLPP_NCCL_LIB_PATH=%s: %s", env, why);
      return;
    }
  } else {
    char loaded[sizeof(real.path)] = "";
    if (dl_iterate_phdr(findLoaded, loaded) != 0) {
      snprintf(real.path, sizeof(real.path), "%s", loaded);
      h = openCandidate(loaded, why, sizeof(why));
    }
    if (h == NULL) {
      snprintf(real.path, sizeof(real.path), "libnccl.so.2");
      h = openCandidate("libnccl.so.2", why, sizeof(why));
    }
    if (h == NULL) h = searchDirs(getenv("LD_LIBRARY_PATH"), real.path, sizeof(real.path));
    if (h == NULL) {
      h = searchDirs("/usr/lib/x86_64-linux-gnu:/usr/lib/aarch64-linux-gnu:/usr/lib64:/usr/local/cuda/lib64:"
                     "/usr/local/lib:/usr/lib",
                     real.path, sizeof(real.path));
    }
    if (h == NULL) {
      snprintf(realWhy, sizeof(realWhy),
               "no libnccl.so.2 other than this library's was found (set MSCCLPP_NCCL_LIB_PATH to the real one)");
      return;
    }
  }
#define SHIM_REAL_LOAD(ret, name, args) *(void**)&real.name = dlsym(h, #name);
  SHIM_REAL_FUNCS(SHIM_REAL_LOAD)
#undef SHIM_REAL_LOAD
  if (real.ncclGetUniqueId == NULL || real.ncclCommInitRank == NULL || real.ncclGroupStart == NULL ||
      real.ncclGroupEnd == NULL) {
    snprintf(realWhy, sizeof(realWhy), "%s is not an NCCL library (ncclCommInitRank or ncclGroupStart is missing)",
             real.path);
    return;
  }
  int version = 0;
  if (real.ncclGetVersion != NULL) real.ncclGetVersion(&version);
  shimLog(shimLogInfo, NULL, "the real NCCL for fallback: %s, version %d", real.path, version);
  realLoaded = true;
}

const shimRealNccl* shimReal(char* why, size_t whyLen) {
  pthread_once(&loadOnce, load);
  if (!realLoaded) {
    snprintf(why, whyLen, "%.*s", (int)whyLen - 1, realWhy);
    return NULL;
  }
  return &real;
}

/* The bootstrap tag of the real NCCL's unique id (the layer's own tags start here). */
enum { realIdTag = 0x4e43 };

ncclResult_t shimRealComm(ncclComm_t comm, const char* call, ncclComm_t* out, const shimRealNccl** nccl) {
  if (comm->cfg.off) {
    return shimFail(ncclInvalidUsage, comm, call,
                    "this library does not serve this call natively, and MSCCLPP_NCCL_FALLBACK=off forbids "
                    "sending it to the real NCCL");
  }
  char why[512];
  const shimRealNccl* r = shimReal(why, sizeof(why));
  if (r == NULL) {
    return shimFail(ncclInvalidUsage, comm, call,
                    "this library does not serve this call natively, and there is no real NCCL to send it to: %s",
                    why);
  }
  *nccl = r;
  pthread_mutex_lock(&comm->mu);
  if (comm->real != NULL) {
    *out = comm->real;
    pthread_mutex_unlock(&comm->mu);
    return ncclSuccess;
  }
  /* Rank 0 makes the real id and sends it to every peer; each then joins. */
  ncclUniqueId id;
  ncclResult_t res = ncclSuccess;
  mscclppResult_t mres = mscclppSuccess;
  if (comm->rank == 0) {
    res = r->ncclGetUniqueId(&id);
    for (int peer = 1; peer < comm->nranks; peer++) {
      /* Send the id even when making it failed, so that no peer waits; a zeroed id fails there. */
      if (res != ncclSuccess) memset(&id, 0, sizeof(id));
      mscclppResult_t m = mscclppBootstrapSend(comm->bootstrap, &id, sizeof(id), peer, realIdTag);
      if (m != mscclppSuccess && mres == mscclppSuccess) mres = m;
    }
  } else {
    mres = mscclppBootstrapRecv(comm->bootstrap, &id, sizeof(id), 0, realIdTag);
  }
  if (res == ncclSuccess && mres != mscclppSuccess) res = shimResult(mres);
  ncclComm_t rc = NULL;
  if (res == ncclSuccess) res = r->ncclCommInitRank(&rc, comm->nranks, id, comm->rank);
  if (res == ncclSuccess) comm->real = rc;
  pthread_mutex_unlock(&comm->mu);
  if (res != ncclSuccess) {
    return shimFail(res, comm, call, "creating the real NCCL's communicator (%s) failed: %s", r->path,
                    r->ncclGetLastError ? r->ncclGetLastError(NULL) : ncclGetErrorString(res));
  }
  shimLog(shimLogInfo, comm, "the real NCCL's communicator is ready (%s), made for %s", r->path, call);
  *out = rc;
  return ncclSuccess;
}

/*
 * tests/nccl/routing.c: the NCCL layer on a machine without a GPU, under mpirun. With no GPU this
 * library cannot serve a communicator, so every call must reach the real NCCL, here the fake
 * libnccl.so.2 that MSCCLPP_NCCL_LIB_PATH names (fake_nccl.c): the test reads the fake's log to
 * see which calls got there and with which communicator, and checks the refusals and the group
 * rules along the way.
 *
 *   routing fallback   every call reaches the fake, once, with the fake's own communicator
 *                      (the program linked with the layer, or with the fake under LD_PRELOAD, or
 *                      with the layer's libnccl.so.2 first on LD_LIBRARY_PATH)
 *   routing off        MSCCLPP_NCCL_FALLBACK=off: init fails, naming the variable
 *   routing missing    MSCCLPP_NCCL_LIB_PATH names no library: init fails, naming the path
 *   routing badenv     MSCCLPP_NCCL_FALLBACK has an unknown word: init fails, naming it
 *   routing native...  the native side stood in for by fake_native.c (LD_PRELOAD, and
 *                      MSCCLPP_CUDA_LIBRARY for the layer's driver calls): PreMulSum operators
 *                      natively and on the real NCCL (testNative)
 */
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <nccl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks, failures;

#define EXPECT(cond, ...)                                        \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "rank %d: %s:%d: FAIL %s: ", rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, "\n");                                     \
      failures++;                                                \
    }                                                            \
  } while (0)

#define EXPECT_RESULT(want, expr)                                                                        \
  do {                                                                                                   \
    ncclResult_t got_ = (expr);                                                                          \
    EXPECT(got_ == (want), "%s returned %d (%s), want %d; last error: %s", #expr, got_,                   \
           ncclGetErrorString(got_), want, ncclGetLastError(NULL));                                      \
  } while (0)

/* A symbol looked up in every loaded object, and what was found. */
typedef struct {
  const char* name;
  void* found;
} symbolSearch;

/* dl_iterate_phdr callback: the symbol, from whichever loaded object has it. */
static int findSymbol(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  symbolSearch* s = data;
  void* h = dlopen(info->dlpi_name[0] ? info->dlpi_name : NULL, RTLD_NOW | RTLD_NOLOAD);
  void* f = h ? dlsym(h, s->name) : NULL;
  if (h) dlclose(h);
  if (f) s->found = f;
  return f != NULL;
}

/* The call log of a fake: fakeNcclLog (fake_nccl.c) or fakeNativeLog (fake_native.c); "" when
 * that fake is not loaded. */
static const char* logOf(const char* fn) {
  symbolSearch s = {fn, NULL};
  dl_iterate_phdr(findSymbol, &s);
  const char* (*get)(void) = (const char* (*)(void))s.found;
  return get ? get() : "";
}
static const char* fakeLog(void) { return logOf("fakeNcclLog"); }
static const char* nativeLog(void) { return logOf("fakeNativeLog"); }

/* How many lines of a log start with prefix (exact: are prefix). */
static int countLines(const char* log, const char* prefix, bool exact) {
  int n = 0;
  size_t len = strlen(prefix);
  for (const char* line = log; *line;) {
    const char* nl = strchr(line, '\n');
    if (strncmp(line, prefix, len) == 0 && (!exact || line[len] == '\n' || line[len] == '\0')) n++;
    if (!nl) break;
    line = nl + 1;
  }
  return n;
}
/* How many calls the fake NCCL (fake_nccl.c) got whose line starts with prefix, or is line. */
static int countCalls(const char* prefix) { return countLines(fakeLog(), prefix, false); }
static int countCallsExactly(const char* line) { return countLines(fakeLog(), line, true); }
/* How many calls the fake native side (fake_native.c) got whose line starts with prefix, or is line. */
static int countNative(const char* prefix) { return countLines(nativeLog(), prefix, false); }
static int countNativeExactly(const char* line) { return countLines(nativeLog(), line, true); }

static ncclResult_t initComm(ncclComm_t* comm) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (rank == 0) EXPECT_RESULT(ncclSuccess, ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  return ncclCommInitRank(comm, nranks, id, rank);
}

static void testFallback(void) {
  ncclComm_t comm = NULL;
  EXPECT_RESULT(ncclSuccess, initComm(&comm));
  if (comm == NULL) return;
  /* The real NCCL's communicator was made with rank 0's id, on every rank. */
  char want[64];
  snprintf(want, sizeof(want), "ncclCommInitRank %d %d fake-id-", nranks, rank);
  EXPECT(countCalls(want) == 1, "want one '%s...' in the fake's log:\n%s", want, fakeLog());
  char id0[128] = "", line[128];
  const char* at = strstr(fakeLog(), "fake-id-");
  if (at) sscanf(at, "%127s", line), snprintf(id0, sizeof(id0), "%s", line);
  char all[16][128];
  MPI_Allgather(id0, 128, MPI_CHAR, all, 128, MPI_CHAR, MPI_COMM_WORLD);
  for (int r = 1; r < nranks && r < 16; r++) EXPECT(strcmp(all[0], all[r]) == 0, "ranks 0 and %d joined different ids", r);

  int v = 0;
  EXPECT_RESULT(ncclSuccess, ncclCommCount(comm, &v));
  EXPECT(v == nranks, "count %d", v);
  EXPECT_RESULT(ncclSuccess, ncclCommUserRank(comm, &v));
  EXPECT(v == rank, "rank %d", v);
  EXPECT(countCalls("ncclCommUserRank") == 0, "the layer answered ncclCommUserRank itself");
  ncclResult_t async = ncclInternalError;
  EXPECT_RESULT(ncclSuccess, ncclCommGetAsyncError(comm, &async));
  EXPECT(async == ncclSuccess, "async error %d", async);

  /* Device pointers are never dereferenced by the fake. */
  void* buf = (void*)(uintptr_t)0x10000;
  void* buf2 = (void*)(uintptr_t)0x20000;
  cudaStream_t s = NULL;
  int peer = (rank + 1) % nranks;
  EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, buf2, 1000, ncclFloat32, ncclSum, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, buf, 7, ncclBfloat16, ncclAvg, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclAllGather(buf, buf2, 5, ncclInt8, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclReduceScatter(buf, buf2, 3, ncclFloat16, ncclMax, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclBroadcast(buf, buf2, 9, ncclUint64, 0, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclBcast(buf, 9, ncclUint64, nranks - 1, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclReduce(buf, buf2, 4, ncclInt32, ncclMin, 0, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclAlltoAll(buf, buf2, 2, ncclFloat64, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, buf2, 0, ncclFloat32, ncclSum, comm, s));
  char expect[64];
  snprintf(expect, sizeof(expect), "ncclAllReduce %d 1000 7 0", rank);
  EXPECT(countCalls(expect) == 1, "want '%s' once:\n%s", expect, fakeLog());
  snprintf(expect, sizeof(expect), "ncclAllReduce %d 7 9 4", rank);
  EXPECT(countCalls(expect) == 1, "want '%s' (avg) once", expect);
  EXPECT(countCalls("ncclAllGather") == 1 && countCalls("ncclReduceScatter") == 1 && countCalls("ncclReduce ") == 1 &&
             countCalls("ncclAlltoAll") == 1,
         "each collective once:\n%s", fakeLog());
  /* ncclBcast is ncclBroadcast in place; both reach the fake as ncclBroadcast. */
  EXPECT(countCalls("ncclBroadcast") == 2, "two broadcasts:\n%s", fakeLog());
  snprintf(expect, sizeof(expect), "ncclBroadcast %d 9 5 root=%d", rank, nranks - 1);
  EXPECT(countCalls(expect) == 1, "want '%s'", expect);

  /* Sends and receives inside one group form one group of the real NCCL's. */
  int starts = countCalls("ncclGroupStart"), ends = countCalls("ncclGroupEnd");
  EXPECT_RESULT(ncclSuccess, ncclGroupStart());
  EXPECT_RESULT(ncclSuccess, ncclGroupStart());
  EXPECT_RESULT(ncclSuccess, ncclSend(buf, 16, ncclFloat32, peer, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclRecv(buf2, 16, ncclFloat32, (rank + nranks - 1) % nranks, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclGroupEnd());
  EXPECT(countCalls("ncclGroupEnd") == ends, "the inner ncclGroupEnd reached the fake");
  EXPECT_RESULT(ncclSuccess, ncclGroupEnd());
  EXPECT(countCalls("ncclGroupStart") == starts + 1 && countCalls("ncclGroupEnd") == ends + 1,
         "one group of the fake's around the sends:\n%s", fakeLog());
  EXPECT(countCalls("ncclSend") == 1 && countCalls("ncclRecv") == 1, "one send, one receive");

  /* A PreMulSum operator is the layer's; the real NCCL gets its twin on the first call that goes
   * there (every call, here), made once, and destroyed with it. One never used there is not made
   * there at all. */
  ncclRedOp_t op, unused;
  float scalar = 0.5f;
  EXPECT_RESULT(ncclSuccess, ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  EXPECT_RESULT(ncclSuccess, ncclRedOpCreatePreMulSum(&unused, buf, ncclFloat64, ncclScalarDevice, comm));
  EXPECT(countCalls("ncclRedOpCreatePreMulSum") == 0, "the twin was made before a call needed it:\n%s", fakeLog());
  EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, buf2, 3, ncclFloat32, op, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclReduceScatter(buf, buf2, 3, ncclFloat32, op, comm, s));
  snprintf(expect, sizeof(expect), "ncclRedOpCreatePreMulSum %d 7 res=1 host=3f000000", rank);
  EXPECT(countCallsExactly(expect) == 1, "want '%s' once:\n%s", expect, fakeLog());
  snprintf(expect, sizeof(expect), "ncclReduceScatter %d 3 7 %d", rank, ncclNumOps + 1);
  EXPECT(countCallsExactly(expect) == 1, "want '%s' (the fake's operator) once:\n%s", expect, fakeLog());
  EXPECT_RESULT(ncclSuccess, ncclRedOpDestroy(op, comm));
  EXPECT_RESULT(ncclSuccess, ncclRedOpDestroy(unused, comm));
  EXPECT(countCalls("ncclRedOpCreatePreMulSum") == 1 && countCalls("ncclRedOpDestroy") == 1, "user operator calls:\n%s",
         fakeLog());

  /* Refusals, each with the thread's last error naming the call. */
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(buf, buf2, 4, (ncclDataType_t)99, ncclSum, comm, s));
  EXPECT(strstr(ncclGetLastError(comm), "ncclAllReduce") != NULL, "last error: %s", ncclGetLastError(comm));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(buf, buf2, 4, ncclFloat32, ncclSum, NULL, s));
  EXPECT(strstr(ncclGetLastError(NULL), "comm is NULL") != NULL, "last error: %s", ncclGetLastError(NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(NULL, buf2, 4, ncclFloat32, ncclSum, comm, s));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(buf, buf2, SIZE_MAX / 2, ncclFloat32, ncclSum, comm, s));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllGather(buf, buf2, SIZE_MAX / 2 + 1, ncclInt8, comm, s));
  EXPECT_RESULT(ncclInvalidArgument, ncclBroadcast(buf, buf2, 4, ncclFloat32, nranks, comm, s));
  EXPECT_RESULT(ncclInvalidArgument, ncclSend(buf, 4, ncclFloat32, -1, comm, s));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(buf, buf2, 4, ncclFloat32, (ncclRedOp_t)-1, comm, s));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommCount(comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommSplit(comm, -5, 0, NULL, NULL));

  /* An error inside a group is returned by the call and again by the outermost ncclGroupEnd. */
  EXPECT_RESULT(ncclSuccess, ncclGroupStart());
  EXPECT_RESULT(ncclInvalidArgument, ncclSend(buf, 4, ncclFloat32, nranks, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclSend(buf, 4, ncclFloat32, peer, comm, s));
  EXPECT_RESULT(ncclInvalidArgument, ncclGroupEnd());
  EXPECT_RESULT(ncclSuccess, ncclGroupStart());
  EXPECT_RESULT(ncclSuccess, ncclGroupEnd());

  /* Split into even and odd ranks (reversed by key); each half's real communicator is made from
   * its own new id. */
  ncclComm_t half = NULL;
  EXPECT_RESULT(ncclSuccess, ncclCommSplit(comm, rank % 2, -rank, &half, NULL));
  int halfSize = (nranks - rank % 2 + 1) / 2, halfRank = -1;
  if (half != NULL) {
    EXPECT_RESULT(ncclSuccess, ncclCommCount(half, &v));
    EXPECT(v == halfSize, "half has %d ranks, want %d", v, halfSize);
    EXPECT_RESULT(ncclSuccess, ncclCommUserRank(half, &halfRank));
    EXPECT(halfRank == halfSize - 1 - rank / 2, "rank %d in its half, want %d (keys reverse the order)", halfRank,
           halfSize - 1 - rank / 2);
    snprintf(expect, sizeof(expect), "ncclCommInitRank %d %d fake-id-", halfSize, halfRank);
    EXPECT(countCalls(expect) == 1, "want '%s...':\n%s", expect, fakeLog());
    int before = countCalls("ncclAllReduce");
    EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, buf2, 11, ncclFloat32, ncclSum, half, s));
    EXPECT(countCalls("ncclAllReduce") == before + 1, "the half's AllReduce reached the fake");
    EXPECT_RESULT(ncclSuccess, ncclCommDestroy(half));
  }
  ncclComm_t none = (ncclComm_t)1;
  EXPECT_RESULT(ncclSuccess, ncclCommSplit(comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 1, 0, &none, NULL));
  EXPECT((rank == 0) == (none == NULL), "NCCL_SPLIT_NOCOLOR gives NULL, and only it");
  if (none != NULL) EXPECT_RESULT(ncclSuccess, ncclCommDestroy(none));

  /* Shrink without the last rank: the others get a communicator of nranks-1 (the last calls
   * nothing, as a dead rank would not). */
  if (nranks > 1 && rank != nranks - 1) {
    int excluded = nranks - 1;
    ncclComm_t smaller = NULL;
    EXPECT_RESULT(ncclSuccess, ncclCommShrink(comm, &excluded, 1, &smaller, NULL, NCCL_SHRINK_DEFAULT));
    if (smaller != NULL) {
      EXPECT_RESULT(ncclSuccess, ncclCommCount(smaller, &v));
      EXPECT(v == nranks - 1, "shrunk to %d ranks", v);
      EXPECT_RESULT(ncclSuccess, ncclCommDestroy(smaller));
    }
    EXPECT_RESULT(ncclInvalidUsage, ncclCommShrink(comm, &rank, 1, &smaller, NULL, NCCL_SHRINK_DEFAULT));
  }

  EXPECT_RESULT(ncclSuccess, ncclCommFinalize(comm));
  EXPECT_RESULT(ncclSuccess, ncclCommDestroy(comm));
  EXPECT(countCalls("ncclCommFinalize") == 1 && countCalls("ncclCommDestroy") >= 1, "finalize and destroy reached the fake");

  /* A nonblocking init returns ncclInProgress (or success), then reports through
   * ncclCommGetAsyncError. */
  ncclUniqueId id;
  if (rank == 0) EXPECT_RESULT(ncclSuccess, ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t nb = NULL;
  ncclResult_t res = ncclCommInitRankConfig(&nb, nranks, id, rank, &config);
  EXPECT(res == ncclInProgress || res == ncclSuccess, "nonblocking init returned %d", res);
  ncclResult_t state = ncclInProgress;
  while (nb != NULL && state == ncclInProgress) EXPECT_RESULT(ncclSuccess, ncclCommGetAsyncError(nb, &state));
  EXPECT(state == ncclSuccess, "nonblocking init ended with %d", state);
  if (nb != NULL) {
    EXPECT_RESULT(ncclSuccess, ncclAllGather(buf, buf2, 3, ncclFloat32, nb, s));
    EXPECT_RESULT(ncclSuccess, ncclCommAbort(nb));
  }
}

/* The address of the layer's staging buffer: the fake driver's last allocation (0 for none). */
static uintptr_t lastStaging(void) {
  uintptr_t at = 0;
  for (const char* line = strstr(nativeLog(), "cuMemAlloc "); line; line = strstr(line + 1, "cuMemAlloc ")) {
    void* p = NULL;
    if (sscanf(line, "cuMemAlloc %*u at %p", &p) == 1) at = (uintptr_t)p;
  }
  return at;
}

/* Whether the fake native side got the line, once. */
#define EXPECT_NATIVE(...)                                                                       \
  do {                                                                                           \
    char line_[160];                                                                             \
    snprintf(line_, sizeof(line_), __VA_ARGS__);                                                 \
    EXPECT(countNativeExactly(line_) == 1, "want '%s' once natively:\n%s", line_, nativeLog());  \
  } while (0)
/* Whether the fake NCCL got the line, once. */
#define EXPECT_REAL(...)                                                                         \
  do {                                                                                           \
    char line_[160];                                                                             \
    snprintf(line_, sizeof(line_), __VA_ARGS__);                                                 \
    EXPECT(countCallsExactly(line_) == 1, "want '%s' once on the real NCCL:\n%s", line_, fakeLog()); \
  } while (0)

/* PreMulSum operators with the native side present (fake_native.c stands in for the GPU):
 *   native        MSCCLPP_NCCL_FALLBACK=auto: PreMulSum calls run natively (mscclppScale of the
 *                 input by this rank's scalar, then a sum); fp8 ones on the real NCCL, with the
 *                 operator's twin made there once
 *   native-all    MSCCLPP_NCCL_FALLBACK=all: every call on the real NCCL, with twins
 *   native-list   MSCCLPP_NCCL_FALLBACK=reducescatter: ReduceScatter there, the rest native
 *   native-off    MSCCLPP_NCCL_FALLBACK=off: native calls run, fp8 ones are refused
 * and in every mode: named errors for a wrong type, a wrong communicator, a destroyed or built-in
 * operator; a real NCCL communicator passed to the layer passes through unchanged. */
static void testNative(const char* mode) {
  bool all = strcmp(mode, "native-all") == 0, list = strcmp(mode, "native-list") == 0;
  bool off = strcmp(mode, "native-off") == 0;
  ncclComm_t comm = NULL;
  EXPECT_RESULT(ncclSuccess, initComm(&comm));
  if (comm == NULL) return;
  EXPECT(countNative("mscclppCollCommCreate") == 1, "the native side was not made:\n%s", nativeLog());
  EXPECT(countCalls("ncclCommInitRank") == 0, "a real communicator was made at init:\n%s", fakeLog());
  const char* buf = (const char*)(uintptr_t)0x10000;
  char* buf2 = (char*)(uintptr_t)0x20000;
  void* devScalar = (void*)(uintptr_t)0x30000;
  cudaStream_t s = NULL;
  const int fakeOp = ncclNumOps + 1; /* every operator of the fake NCCL */

  /* A built-in operator, for reference. */
  EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, buf2, 1000, ncclFloat32, ncclSum, comm, s));
  if (all) EXPECT_REAL("ncclAllReduce %d 1000 7 0", rank);
  else EXPECT_NATIVE("mscclppAllReduce %p %p 1000 7 0", (void*)buf, (void*)buf2);

  /* Two operators: a scalar per rank, read at creation, and one in device memory. */
  ncclRedOp_t hostOp = ncclSum, devOp = ncclSum;
  float scalar = 0.5f * (float)(rank + 1);
  uint32_t bits;
  memcpy(&bits, &scalar, sizeof(bits));
  EXPECT_RESULT(ncclSuccess, ncclRedOpCreatePreMulSum(&hostOp, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  scalar = 99; /* not read again */
  EXPECT_RESULT(ncclSuccess, ncclRedOpCreatePreMulSum(&devOp, devScalar, ncclFloat32, ncclScalarDevice, comm));
  EXPECT((int)hostOp >= (int)ncclNumOps && (int)devOp >= (int)ncclNumOps && hostOp != devOp, "handles %d and %d",
         (int)hostOp, (int)devOp);
  EXPECT(countCalls("ncclRedOpCreatePreMulSum") == 0, "made on the real NCCL before a call needed it:\n%s", fakeLog());

  /* AllReduce out of place: the scaled input goes into the output, summed there in place. */
  EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, buf2, 3, ncclFloat32, hostOp, comm, s));
  if (all) {
    EXPECT_REAL("ncclRedOpCreatePreMulSum %d 7 res=1 host=%x", rank, bits);
    EXPECT_REAL("ncclAllReduce %d 3 7 %d", rank, fakeOp);
  } else {
    EXPECT_NATIVE("mscclppScale %p %p 3 7 host=%x", (void*)buf, (void*)buf2, bits);
    EXPECT_NATIVE("mscclppAllReduce %p %p 3 7 0", (void*)buf2, (void*)buf2);
  }
  /* In place, the scalar in device memory. */
  EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, (void*)buf, 5, ncclFloat32, devOp, comm, s));
  if (all) {
    EXPECT_REAL("ncclRedOpCreatePreMulSum %d 7 res=0 device=%p", rank, devScalar);
    EXPECT_REAL("ncclAllReduce %d 5 7 %d", rank, fakeOp);
  } else {
    EXPECT_NATIVE("mscclppScale %p %p 5 7 device=%p", (void*)buf, (void*)buf, devScalar);
    EXPECT_NATIVE("mscclppAllReduce %p %p 5 7 0", (void*)buf, (void*)buf);
  }
  /* ReduceScatter: the scaled input goes into the staging buffer (the output holds one block). */
  EXPECT_RESULT(ncclSuccess, ncclReduceScatter(buf, buf2, 4, ncclFloat32, hostOp, comm, s));
  if (all || list) {
    EXPECT_REAL("ncclReduceScatter %d 4 7 %d", rank, fakeOp);
    if (list) EXPECT_REAL("ncclRedOpCreatePreMulSum %d 7 res=1 host=%x", rank, bits);
  } else {
    void* staging = (void*)lastStaging();
    EXPECT(staging != NULL, "no staging buffer was allocated:\n%s", nativeLog());
    EXPECT_NATIVE("mscclppScale %p %p %d 7 host=%x", (void*)buf, staging, 4 * nranks, bits);
    EXPECT_NATIVE("mscclppReduceScatter %p %p 4 7 0", staging, (void*)buf2);
  }
  /* Reduce to rank 0: the root scales into its output; the others into the staging buffer. */
  EXPECT_RESULT(ncclSuccess, ncclReduce(buf, buf2, 6, ncclFloat32, devOp, 0, comm, s));
  if (all) {
    EXPECT_REAL("ncclReduce %d 6 7 %d root=0", rank, fakeOp);
  } else {
    void* out = rank == 0 ? (void*)buf2 : (void*)lastStaging();
    EXPECT_NATIVE("mscclppScale %p %p 6 7 device=%p", (void*)buf, out, devScalar);
    EXPECT_NATIVE("mscclppAllReduce %p %p 6 7 0", out, out);
  }
  if (!all) EXPECT(countNative("mscclppScale") == (list ? 3 : 4), "a scaled input per native call:\n%s", nativeLog());
  EXPECT(countCalls("ncclRedOpCreatePreMulSum") == (all ? 2 : list ? 1 : 0), "each twin made once:\n%s", fakeLog());

  /* Named errors. */
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(buf, buf2, 3, ncclFloat16, hostOp, comm, s));
  EXPECT(strstr(ncclGetLastError(comm), "made for float32") && strstr(ncclGetLastError(comm), "float16"),
         "last error: %s", ncclGetLastError(comm));
  ncclComm_t other = NULL;
  EXPECT_RESULT(ncclSuccess, ncclCommSplit(comm, 0, rank, &other, NULL));
  if (other != NULL) {
    EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(buf, buf2, 3, ncclFloat32, hostOp, other, s));
    EXPECT(strstr(ncclGetLastError(other), "not an operator of this communicator"), "last error: %s",
           ncclGetLastError(other));
    ncclRedOp_t theirs = ncclSum;
    EXPECT_RESULT(ncclSuccess, ncclRedOpCreatePreMulSum(&theirs, devScalar, ncclFloat32, ncclScalarDevice, other));
    EXPECT(theirs != hostOp && theirs != devOp, "the split's first operator %d is one of its parent's", (int)theirs);
    EXPECT_RESULT(ncclInvalidArgument, ncclReduceScatter(buf, buf2, 3, ncclFloat32, theirs, comm, s));
    EXPECT_RESULT(ncclInvalidArgument, ncclRedOpDestroy(theirs, comm));
    EXPECT(strstr(ncclGetLastError(comm), "ncclRedOpDestroy") != NULL, "last error: %s", ncclGetLastError(comm));
    EXPECT_RESULT(ncclSuccess, ncclRedOpDestroy(theirs, other));
    EXPECT_RESULT(ncclSuccess, ncclCommDestroy(other));
  }
  EXPECT_RESULT(ncclInvalidArgument, ncclRedOpDestroy(ncclSum, comm));
  EXPECT(strstr(ncclGetLastError(comm), "built in") != NULL, "last error: %s", ncclGetLastError(comm));
  EXPECT_RESULT(ncclInvalidArgument, ncclRedOpCreatePreMulSum(NULL, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  EXPECT_RESULT(ncclInvalidArgument, ncclRedOpCreatePreMulSum(&hostOp, NULL, ncclFloat32, ncclScalarDevice, comm));
  EXPECT_RESULT(ncclInvalidArgument,
                ncclRedOpCreatePreMulSum(&hostOp, &scalar, (ncclDataType_t)99, ncclScalarHostImmediate, comm));
  EXPECT_RESULT(ncclInvalidArgument,
                ncclRedOpCreatePreMulSum(&hostOp, &scalar, ncclFloat32, (ncclScalarResidence_t)7, comm));
  int creates = countCalls("ncclRedOpCreatePreMulSum"), destroys = countCalls("ncclRedOpDestroy");
  EXPECT_RESULT(ncclSuccess, ncclRedOpDestroy(hostOp, comm));
  EXPECT(countCalls("ncclRedOpDestroy") == destroys + (all || list), "the twin goes with the operator:\n%s", fakeLog());
  EXPECT_RESULT(ncclInvalidArgument, ncclRedOpDestroy(hostOp, comm));
  EXPECT(strstr(ncclGetLastError(comm), "was destroyed") != NULL, "last error: %s", ncclGetLastError(comm));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(buf, buf2, 3, ncclFloat32, hostOp, comm, s));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(buf, buf2, 3, ncclFloat32, (ncclRedOp_t)(ncclNumOps + 12345), comm, s));

  /* fp8 has no native kernel: the real NCCL, with the operator's twin made there once; refused
   * under off. */
  ncclRedOp_t fp8Op = ncclSum;
  unsigned char one = 0x38; /* 1.0 in e4m3 */
  EXPECT_RESULT(ncclSuccess, ncclRedOpCreatePreMulSum(&fp8Op, &one, ncclFloat8e4m3, ncclScalarHostImmediate, comm));
  for (int k = 0; k < 2; k++) {
    EXPECT_RESULT(off ? ncclInvalidUsage : ncclSuccess, ncclAllReduce(buf, buf2, 8, ncclFloat8e4m3, fp8Op, comm, s));
  }
  if (off) {
    EXPECT(strstr(ncclGetLastError(comm), "MSCCLPP_NCCL_FALLBACK=off") != NULL, "last error: %s", ncclGetLastError(comm));
    EXPECT(countCalls("ncclRedOpCreatePreMulSum") == 0 && countCalls("ncclAllReduce") == 0, "off reached the real NCCL:\n%s",
           fakeLog());
  } else {
    EXPECT_REAL("ncclRedOpCreatePreMulSum %d 10 res=1 host=38", rank);
    EXPECT(countCalls("ncclRedOpCreatePreMulSum") == creates + 1, "the fp8 twin made once:\n%s", fakeLog());
    char line[64];
    snprintf(line, sizeof(line), "ncclAllReduce %d 8 10 %d", rank, fakeOp);
    EXPECT(countCallsExactly(line) == 2, "want '%s' twice:\n%s", line, fakeLog());
  }
  destroys = countCalls("ncclRedOpDestroy");
  EXPECT_RESULT(ncclSuccess, ncclRedOpDestroy(fp8Op, comm));
  EXPECT_RESULT(ncclSuccess, ncclRedOpDestroy(devOp, comm));
  EXPECT(countCalls("ncclRedOpDestroy") == destroys + !off + all, "twins destroyed:\n%s", fakeLog());
  EXPECT_RESULT(ncclSuccess, ncclCommDestroy(comm));

  /* A real NCCL communicator passes through unchanged, its operators too. */
  const char* lib = getenv("MSCCLPP_NCCL_LIB_PATH");
  void* h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND) : NULL;
  ncclResult_t (*realInit)(ncclComm_t*, int, ncclUniqueId, int) = h ? (ncclResult_t(*)(ncclComm_t*, int, ncclUniqueId, int))dlsym(h, "ncclCommInitRank") : NULL;
  ncclResult_t (*realDestroy)(ncclComm_t) = h ? (ncclResult_t(*)(ncclComm_t))dlsym(h, "ncclCommDestroy") : NULL;
  EXPECT(realInit != NULL && realDestroy != NULL, "the fake NCCL %s cannot be opened", lib ? lib : "(unset)");
  if (realInit != NULL && realDestroy != NULL) {
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    snprintf(id.internal, sizeof(id.internal), "fake-id-foreign");
    ncclComm_t foreign = NULL;
    EXPECT_RESULT(ncclSuccess, realInit(&foreign, 1, id, 0));
    creates = countCalls("ncclRedOpCreatePreMulSum"), destroys = countCalls("ncclRedOpDestroy");
    ncclRedOp_t op = ncclSum;
    scalar = 2;
    EXPECT_RESULT(ncclSuccess, ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, foreign));
    EXPECT(op == (ncclRedOp_t)fakeOp, "the foreign communicator's operator is %d, want the fake's", (int)op);
    EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, buf2, 9, ncclFloat32, op, foreign, s));
    EXPECT_RESULT(ncclSuccess, ncclRedOpDestroy(op, foreign));
    EXPECT(countCalls("ncclRedOpCreatePreMulSum") == creates + 1 && countCalls("ncclRedOpDestroy") == destroys + 1,
           "the foreign communicator's operator calls:\n%s", fakeLog());
    EXPECT_REAL("ncclAllReduce 0 9 7 %d", fakeOp);
    EXPECT_RESULT(ncclSuccess, realDestroy(foreign));
  }
}

/* A communicator whose init must fail with want, its message containing what. */
static void testInitFails(ncclResult_t want, const char* what) {
  ncclComm_t comm = (ncclComm_t)1;
  EXPECT_RESULT(want, initComm(&comm));
  EXPECT(comm == NULL, "comm is %p after a failed init", (void*)comm);
  EXPECT(strstr(ncclGetLastError(NULL), what) != NULL, "last error \"%s\" does not name \"%s\"", ncclGetLastError(NULL), what);
}

/* The group rules that need no communicator. */
static void testGroups(void) {
  EXPECT_RESULT(ncclInvalidUsage, ncclGroupEnd());
  EXPECT(strstr(ncclGetLastError(NULL), "ncclGroupEnd") != NULL, "last error: %s", ncclGetLastError(NULL));
  EXPECT_RESULT(ncclSuccess, ncclGroupStart());
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, NULL, NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclGroupEnd());
  EXPECT_RESULT(ncclInvalidArgument, ncclGroupSimulateEnd(NULL));
}

static void testBasics(void) {
  int version = 0;
  EXPECT_RESULT(ncclSuccess, ncclGetVersion(&version));
  EXPECT(version == NCCL_VERSION_CODE, "version %d", version);
  EXPECT_RESULT(ncclInvalidArgument, ncclGetVersion(NULL));
  EXPECT(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0, "%s", ncclGetErrorString(ncclSuccess));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRank(NULL, 2, (ncclUniqueId){{0}}, 0));
  ncclComm_t c;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRank(&c, 2, (ncclUniqueId){{0}}, 2));
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRankConfig(&c, 1, (ncclUniqueId){{0}}, 0, &bad));
  EXPECT_RESULT(ncclSuccess, ncclCommDestroy(NULL));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char* mode = argc > 1 ? argv[1] : "fallback";
  testBasics();
  testGroups();
  if (strcmp(mode, "fallback") == 0) testFallback();
  else if (strncmp(mode, "native", 6) == 0) testNative(mode);
  else if (strcmp(mode, "off") == 0) testInitFails(ncclInvalidUsage, "MSCCLPP_NCCL_FALLBACK=off");
  else if (strcmp(mode, "missing") == 0) testInitFails(ncclSystemError, "MSCCLPP_NCCL_LIB_PATH=");
  else if (strcmp(mode, "badenv") == 0) testInitFails(ncclInvalidUsage, "bogus");
  else EXPECT(0, "unknown mode %s", mode);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("tests/nccl/routing %s: %s (%d failures over %d ranks)\n", mode, total ? "FAIL" : "ok", total, nranks);
  MPI_Finalize();
  return total ? 1 : 0;
}

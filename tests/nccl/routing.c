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
 */
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <nccl.h>
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

/* dl_iterate_phdr callback: the fake's log function, from whichever loaded object has it. */
static int findFake(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  void* h = dlopen(info->dlpi_name[0] ? info->dlpi_name : NULL, RTLD_NOW | RTLD_NOLOAD);
  void* f = h ? dlsym(h, "fakeNcclLog") : NULL;
  if (h) dlclose(h);
  if (f) *(void**)data = f;
  return f != NULL;
}

/* The fake's call log (fake_nccl.c), or "" when the fake is not loaded. */
static const char* fakeLog(void) {
  const char* (*get)(void) = NULL;
  dl_iterate_phdr(findFake, &get);
  return get ? get() : "";
}

/* How many lines of the fake's log start with prefix. */
static int countCalls(const char* prefix) {
  int n = 0;
  size_t len = strlen(prefix);
  for (const char* line = fakeLog(); *line;) {
    if (strncmp(line, prefix, len) == 0) n++;
    const char* nl = strchr(line, '\n');
    if (!nl) break;
    line = nl + 1;
  }
  return n;
}

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

  /* PreMulSum operators are the real NCCL's, and so are the calls that use them. */
  ncclRedOp_t op;
  float scalar = 0.5f;
  EXPECT_RESULT(ncclSuccess, ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  EXPECT_RESULT(ncclSuccess, ncclAllReduce(buf, buf2, 3, ncclFloat32, op, comm, s));
  EXPECT_RESULT(ncclSuccess, ncclRedOpDestroy(op, comm));
  EXPECT(countCalls("ncclRedOpCreatePreMulSum") == 1 && countCalls("ncclRedOpDestroy") == 1, "user operator calls");

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

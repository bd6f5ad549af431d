/*
 * The primitive C API (mscclpp/core.h) seen from C11, on a host without a GPU: every function
 * family refuses NULL pointers and released or foreign handles with the documented codes and a
 * logged reason; the bootstrap works with one rank and with two ranks in two threads (send, recv,
 * a size mismatch, all-gather, barrier); endpoints for a GPU fail with a CUDA error and IB is
 * refused; proxy services check their FIFO size; a communicator's Connect between the two threads
 * fails through its future instead of hanging. One process, no MPI.
 * Prints "capi core refusals: N passed, M failed" and exits non-zero on any failure.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, getpid under -std=c11 */

#include <mscclpp/collectives.h>
#include <mscclpp/core.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static char logged[1 << 16];
static size_t loggedLen;

static void captureLog(const char* msg) {
  pthread_mutex_lock(&mu);
  size_t n = strlen(msg);
  if (loggedLen + n + 1 < sizeof(logged)) {
    memcpy(logged + loggedLen, msg, n);
    loggedLen += n;
    logged[loggedLen++] = '\n';
    logged[loggedLen] = 0;
  }
  pthread_mutex_unlock(&mu);
}

static void clearLog(void) {
  pthread_mutex_lock(&mu);
  loggedLen = 0;
  logged[0] = 0;
  pthread_mutex_unlock(&mu);
}

static int loggedContains(const char* needle) {
  pthread_mutex_lock(&mu);
  int found = strstr(logged, needle) != NULL;
  pthread_mutex_unlock(&mu);
  return found;
}

/* A refused call, single-threaded: the result code, and its reason in the log. */
#define EXPECT_REFUSED(call, want, reason)                                       \
  do {                                                                           \
    clearLog();                                                                  \
    mscclppResult_t r_ = (call);                                                 \
    expectResult(r_, want, #call);                                               \
    char m_[512];                                                                \
    snprintf(m_, sizeof(m_), "%s: log names the reason \"%s\"", #call, reason); \
    expect(loggedContains(reason), m_);                                          \
  } while (0)

#define EXPECT_OK(call) expectResult((call), mscclppSuccess, #call)

static void nullRefusals(void) {
  mscclppBootstrap_t b = NULL;
  mscclppContext_t ctx = NULL;
  mscclppConnection_t conn = NULL;
  mscclppRegMem_t mem = NULL;
  mscclppSemaphore_t sema = NULL;
  mscclppProxyService_t svc = NULL;
  mscclppCommunicator_t comm = NULL;
  mscclppFuture_t fut = NULL;
  mscclppUniqueId id;
  mscclppEndpoint ep;
  mscclppSemaphoreStub stub;
  mscclppMemoryDesc desc;
  mscclppBaseMemoryChannelDeviceHandle baseHandle;
  mscclppMemoryChannelDeviceHandle memHandle;
  mscclppPortChannelDeviceHandle portHandle;
  int i;
  size_t sz;
  void* ptr;
  uint32_t u32;
  char buf[8];
  memset(&id, 0, sizeof(id));
  memset(&ep, 0, sizeof(ep));
  memset(&stub, 0, sizeof(stub));
  memset(&desc, 0, sizeof(desc));

  /* Bootstrap. */
  EXPECT_REFUSED(mscclppBootstrapCreateUniqueId(NULL), mscclppInvalidArgument, "id is NULL");
  EXPECT_REFUSED(mscclppBootstrapCreateFromId(NULL, 0, 1, id), mscclppInvalidArgument, "bootstrap is NULL");
  EXPECT_REFUSED(mscclppBootstrapCreateFromId(&b, 1, 1, id), mscclppInvalidArgument, "out of range");
  EXPECT_REFUSED(mscclppBootstrapCreateFromId(&b, 0, 0, id), mscclppInvalidArgument, "nranks is 0");
  EXPECT_REFUSED(mscclppBootstrapCreateFromId(&b, 0, 2000000, id), mscclppInvalidArgument,
                 "nranks is 2000000, want 1 to 1048576");
  EXPECT_REFUSED(mscclppBootstrapCreate(NULL, 0, 1, "127.0.0.1:1"), mscclppInvalidArgument, "bootstrap is NULL");
  EXPECT_REFUSED(mscclppBootstrapCreate(&b, 0, 1, NULL), mscclppInvalidArgument, "ifIpPort is NULL");
  expect(b == NULL, "refused bootstrap create leaves NULL");
  EXPECT_REFUSED(mscclppBootstrapRank(NULL, &i), mscclppInvalidArgument, "bootstrap is NULL");
  EXPECT_REFUSED(mscclppBootstrapSize(NULL, &i), mscclppInvalidArgument, "bootstrap is NULL");
  EXPECT_REFUSED(mscclppBootstrapSend(NULL, buf, 1, 0, 0), mscclppInvalidArgument, "bootstrap is NULL");
  EXPECT_REFUSED(mscclppBootstrapRecv(NULL, buf, 1, 0, 0), mscclppInvalidArgument, "bootstrap is NULL");
  EXPECT_REFUSED(mscclppBootstrapAllGatherBytes(NULL, buf, 1), mscclppInvalidArgument, "bootstrap is NULL");
  EXPECT_REFUSED(mscclppBootstrapBarrierAll(NULL), mscclppInvalidArgument, "bootstrap is NULL");
  EXPECT_REFUSED(mscclppBootstrapDestroy(NULL), mscclppInvalidArgument, "bootstrap is NULL");

  /* Context, endpoints, connections. */
  EXPECT_REFUSED(mscclppContextCreate(NULL), mscclppInvalidArgument, "context is NULL");
  EXPECT_REFUSED(mscclppContextDestroy(NULL), mscclppInvalidArgument, "context is NULL");
  EXPECT_REFUSED(mscclppEndpointCreate(NULL, mscclppTransportP2P, mscclppDeviceGPU, 0, &ep), mscclppInvalidArgument,
                 "context is NULL");
  EXPECT_REFUSED(mscclppContextConnect(NULL, &ep, &ep, &conn), mscclppInvalidArgument, "context is NULL");
  EXPECT_REFUSED(mscclppContextConnect(ctx, &ep, &ep, NULL), mscclppInvalidArgument, "connection is NULL");
  EXPECT_REFUSED(mscclppConnectionRelease(NULL), mscclppInvalidArgument, "connection is NULL");

  /* Registered memory. */
  EXPECT_REFUSED(mscclppRegisterMemory(NULL, buf, 8, mscclppTransportP2P, &mem), mscclppInvalidArgument,
                 "context is NULL");
  EXPECT_REFUSED(mscclppRegisterMemory(ctx, buf, 8, mscclppTransportP2P, NULL), mscclppInvalidArgument,
                 "memory is NULL");
  EXPECT_REFUSED(mscclppMemorySerialize(NULL, &desc), mscclppInvalidArgument, "registered memory is NULL");
  EXPECT_REFUSED(mscclppMemoryOpen(NULL, &desc, &mem), mscclppInvalidArgument, "context is NULL");
  EXPECT_REFUSED(mscclppMemoryOpen(ctx, &desc, NULL), mscclppInvalidArgument, "memory is NULL");
  EXPECT_REFUSED(mscclppMemoryData(NULL, &ptr, &sz), mscclppInvalidArgument, "registered memory is NULL");
  EXPECT_REFUSED(mscclppMemoryRelease(NULL), mscclppInvalidArgument, "registered memory is NULL");

  /* Semaphores and memory channels. */
  EXPECT_REFUSED(mscclppSemaphoreStubCreate(NULL, &stub), mscclppInvalidArgument, "connection is NULL");
  EXPECT_REFUSED(mscclppSemaphoreCreate(NULL, &stub, &stub, &sema), mscclppInvalidArgument, "connection is NULL");
  EXPECT_REFUSED(mscclppSemaphoreCreate(conn, &stub, &stub, NULL), mscclppInvalidArgument, "semaphore is NULL");
  EXPECT_REFUSED(mscclppSemaphoreDestroy(NULL), mscclppInvalidArgument, "semaphore is NULL");
  EXPECT_REFUSED(mscclppBaseMemoryChannelGetDeviceHandle(NULL, &baseHandle), mscclppInvalidArgument,
                 "semaphore is NULL");
  EXPECT_REFUSED(mscclppMemoryChannelGetDeviceHandle(NULL, mem, mem, NULL, &memHandle), mscclppInvalidArgument,
                 "semaphore is NULL");

  /* Proxy service. */
  EXPECT_REFUSED(mscclppProxyServiceCreate(0, NULL), mscclppInvalidArgument, "service is NULL");
  EXPECT_REFUSED(mscclppProxyServiceAddSemaphore(NULL, sema, &u32), mscclppInvalidArgument, "proxy service is NULL");
  EXPECT_REFUSED(mscclppProxyServiceAddMemory(NULL, mem, &u32), mscclppInvalidArgument, "proxy service is NULL");
  EXPECT_REFUSED(mscclppProxyServicePortChannel(NULL, 0, 0, 0, &portHandle), mscclppInvalidArgument,
                 "proxy service is NULL");
  EXPECT_REFUSED(mscclppProxyServiceStart(NULL), mscclppInvalidArgument, "proxy service is NULL");
  EXPECT_REFUSED(mscclppProxyServiceStop(NULL), mscclppInvalidArgument, "proxy service is NULL");
  EXPECT_REFUSED(mscclppProxyServiceDestroy(NULL), mscclppInvalidArgument, "proxy service is NULL");
  (void)svc;

  /* Communicator and futures. */
  EXPECT_REFUSED(mscclppCommunicatorCreate(b, ctx, NULL), mscclppInvalidArgument, "communicator is NULL");
  EXPECT_REFUSED(mscclppCommunicatorCreate(NULL, ctx, &comm), mscclppInvalidArgument, "bootstrap is NULL");
  EXPECT_REFUSED(mscclppCommunicatorDestroy(NULL), mscclppInvalidArgument, "communicator is NULL");
  EXPECT_REFUSED(mscclppCommunicatorConnect(NULL, mscclppTransportP2P, 0, 1, 0, &fut), mscclppInvalidArgument,
                 "communicator is NULL");
  EXPECT_REFUSED(mscclppCommunicatorConnect(comm, mscclppTransportP2P, 0, 1, 0, NULL), mscclppInvalidArgument,
                 "future is NULL");
  EXPECT_REFUSED(mscclppCommunicatorBuildSemaphore(NULL, conn, 1, 0, &fut), mscclppInvalidArgument,
                 "communicator is NULL");
  EXPECT_REFUSED(mscclppCommunicatorSendMemory(NULL, mem, 1, 0, &fut), mscclppInvalidArgument,
                 "communicator is NULL");
  EXPECT_REFUSED(mscclppCommunicatorRecvMemory(NULL, 1, 0, &fut), mscclppInvalidArgument, "communicator is NULL");
  EXPECT_REFUSED(mscclppFutureWait(NULL), mscclppInvalidArgument, "future is NULL");
  EXPECT_REFUSED(mscclppFutureGetConnection(NULL, &conn), mscclppInvalidArgument, "future is NULL");
  EXPECT_REFUSED(mscclppFutureGetConnection(fut, NULL), mscclppInvalidArgument, "connection is NULL");
  EXPECT_REFUSED(mscclppFutureGetSemaphore(NULL, &sema), mscclppInvalidArgument, "future is NULL");
  EXPECT_REFUSED(mscclppFutureGetSemaphore(fut, NULL), mscclppInvalidArgument, "semaphore is NULL");
  EXPECT_REFUSED(mscclppFutureGetMemory(NULL, &mem), mscclppInvalidArgument, "future is NULL");
  EXPECT_REFUSED(mscclppFutureGetMemory(fut, NULL), mscclppInvalidArgument, "memory is NULL");
  EXPECT_REFUSED(mscclppFutureDestroy(NULL), mscclppInvalidArgument, "future is NULL");
}

/* Calls with live handles but NULL out-pointers or bad arguments, and with released handles. */
static void liveAndReleasedRefusals(void) {
  mscclppUniqueId id;
  mscclppBootstrap_t b = NULL;
  mscclppContext_t ctx = NULL;
  mscclppProxyService_t svc = NULL;
  mscclppCommunicator_t comm = NULL;
  mscclppConnection_t conn = NULL;
  mscclppRegMem_t mem = NULL;
  mscclppEndpoint ep, zeroEp;
  mscclppMemoryDesc desc;
  mscclppPortChannelDeviceHandle portHandle;
  char buf[8] = {0};
  int i;
  memset(&zeroEp, 0, sizeof(zeroEp));
  memset(&desc, 0, sizeof(desc));

  EXPECT_OK(mscclppBootstrapCreateUniqueId(&id));
  EXPECT_OK(mscclppBootstrapCreateFromId(&b, 0, 1, id));
  EXPECT_OK(mscclppContextCreate(&ctx));
  expect(b != NULL && ctx != NULL, "handles are set");

  EXPECT_REFUSED(mscclppBootstrapRank(b, NULL), mscclppInvalidArgument, "rank is NULL");
  EXPECT_REFUSED(mscclppBootstrapSize(b, NULL), mscclppInvalidArgument, "nranks is NULL");
  EXPECT_REFUSED(mscclppBootstrapSend(b, NULL, 4, 0, 0), mscclppInvalidArgument, "data is NULL");
  EXPECT_REFUSED(mscclppBootstrapRecv(b, NULL, 4, 0, 0), mscclppInvalidArgument, "data is NULL");
  EXPECT_REFUSED(mscclppBootstrapAllGatherBytes(b, NULL, 4), mscclppInvalidArgument, "data is NULL");
  EXPECT_REFUSED(mscclppBootstrapSend(b, buf, 4, 3, 0), mscclppInvalidArgument, "peer 3");
  EXPECT_REFUSED(mscclppBootstrapSend(b, buf, 4, 0, -1), mscclppInvalidArgument, "tag");
  /* Sizes beyond a message's 2^30 bytes: refused at once, no slice made, no wait. */
  EXPECT_REFUSED(mscclppBootstrapSend(b, buf, SIZE_MAX, 0, 0), mscclppInvalidArgument, "a bootstrap message carries");
  EXPECT_REFUSED(mscclppBootstrapRecv(b, buf, SIZE_MAX, 0, 0), mscclppInvalidArgument, "a bootstrap message carries");
  EXPECT_REFUSED(mscclppBootstrapAllGatherBytes(b, buf, SIZE_MAX), mscclppInvalidArgument,
                 "a bootstrap message carries");
  EXPECT_REFUSED(mscclppBootstrapSend(b, buf, ((size_t)1 << 30) + 1, 0, 0), mscclppInvalidArgument,
                 "a bootstrap message carries");
  double start = now();
  EXPECT_REFUSED(mscclppBootstrapRecv(b, buf, ((size_t)1 << 30) + 1, 0, 0), mscclppInvalidArgument,
                 "a bootstrap message carries");
  expect(now() - start < 1, "Recv of more than 2^30 bytes is refused at once, not after the timeout");

  /* Endpoints: no GPU here; IB is not available; CPU endpoints are. */
  EXPECT_REFUSED(mscclppEndpointCreate(ctx, mscclppTransportP2P, mscclppDeviceGPU, 0, NULL), mscclppInvalidArgument,
                 "endpoint is NULL");
  expectResult(mscclppEndpointCreate(ctx, mscclppTransportP2P, mscclppDeviceGPU, 0, &ep), mscclppUnhandledCudaError,
               "EndpointCreate(GPU 0) without a GPU");
  expectResult(mscclppEndpointCreate(ctx, mscclppTransportIB, mscclppDeviceGPU, 0, &ep), mscclppUnhandledCudaError,
               "EndpointCreate(IB, GPU 0) without a GPU (its memory would be staged through host buffers)");
  EXPECT_REFUSED(mscclppEndpointCreate(ctx, mscclppTransportP2P, (mscclppDeviceType_t)7, 0, &ep),
                 mscclppInvalidArgument, "device type 7");
  memset(&ep, 0, sizeof(ep));
  EXPECT_OK(mscclppEndpointCreate(ctx, mscclppTransportP2P, mscclppDeviceCPU, 0, &ep));
  expect(memcmp(&ep, &zeroEp, sizeof(ep)) != 0, "a CPU endpoint is serialized");
  EXPECT_REFUSED(mscclppContextConnect(ctx, NULL, &ep, &conn), mscclppInvalidArgument, "endpoint is NULL");
  EXPECT_REFUSED(mscclppContextConnect(ctx, &zeroEp, &ep, &conn), mscclppInvalidArgument, "malformed endpoint");
  expect(mscclppContextConnect(ctx, &ep, &ep, &conn) != mscclppSuccess && conn == NULL,
         "ContextConnect between CPU endpoints is refused");

  /* Memory: NULL pointer and a corrupt descriptor. */
  EXPECT_REFUSED(mscclppRegisterMemory(ctx, NULL, 8, mscclppTransportP2P, &mem), mscclppInvalidArgument,
                 "ptr is NULL");
  EXPECT_REFUSED(mscclppMemoryOpen(ctx, NULL, &mem), mscclppInvalidArgument, "desc is NULL");
  EXPECT_REFUSED(mscclppMemoryOpen(ctx, &desc, &mem), mscclppInvalidArgument, "malformed registered memory");
  expect(mem == NULL, "refused MemoryOpen leaves NULL");

  /* Proxy service: FIFO sizes, an empty service, unknown ids. */
  EXPECT_REFUSED(mscclppProxyServiceCreate(3, &svc), mscclppInvalidArgument, "FIFO");
  EXPECT_REFUSED(mscclppProxyServiceCreate(-4, &svc), mscclppInvalidArgument, "FIFO");
  EXPECT_REFUSED(mscclppProxyServiceCreate(24, &svc), mscclppInvalidArgument, "FIFO");
  expect(svc == NULL, "refused ProxyServiceCreate leaves NULL");
  EXPECT_OK(mscclppProxyServiceCreate(4, &svc));
  EXPECT_OK(mscclppProxyServiceDestroy(svc));
  EXPECT_OK(mscclppProxyServiceCreate(0, &svc));
  EXPECT_REFUSED(mscclppProxyServicePortChannel(svc, 0, 0, 0, NULL), mscclppInvalidArgument, "handle is NULL");
  EXPECT_REFUSED(mscclppProxyServicePortChannel(svc, 0, 0, 0, &portHandle), mscclppInvalidArgument, "unknown");
  EXPECT_REFUSED(mscclppProxyServiceAddSemaphore(svc, NULL, NULL), mscclppInvalidArgument, "semaphore is NULL");
  EXPECT_REFUSED(mscclppProxyServiceAddMemory(svc, NULL, NULL), mscclppInvalidArgument, "memory is NULL");
  EXPECT_OK(mscclppProxyServiceStart(svc));
  EXPECT_OK(mscclppProxyServiceStop(svc));
  EXPECT_OK(mscclppProxyServiceDestroy(svc));
  EXPECT_REFUSED(mscclppProxyServiceStart(svc), mscclppInvalidUsage, "released");
  EXPECT_REFUSED(mscclppProxyServiceDestroy(svc), mscclppInvalidUsage, "released");

  /* Communicator: NULL arguments with a live one; released. */
  EXPECT_REFUSED(mscclppCommunicatorCreate(b, NULL, &comm), mscclppInvalidArgument, "context is NULL");
  EXPECT_OK(mscclppCommunicatorCreate(b, ctx, &comm));
  mscclppFuture_t fut = NULL;
  EXPECT_REFUSED(mscclppCommunicatorBuildSemaphore(comm, NULL, 0, 0, &fut), mscclppInvalidArgument,
                 "connection is NULL");
  EXPECT_REFUSED(mscclppCommunicatorSendMemory(comm, NULL, 0, 0, &fut), mscclppInvalidArgument,
                 "registered memory is NULL");
  expect(fut == NULL, "refused communicator calls leave the future NULL");
  EXPECT_OK(mscclppCommunicatorDestroy(comm));
  EXPECT_REFUSED(mscclppCommunicatorRecvMemory(comm, 0, 0, &fut), mscclppInvalidUsage, "released");
  EXPECT_REFUSED(mscclppCommunicatorDestroy(comm), mscclppInvalidUsage, "released");

  /* Released contexts and bootstraps; a handle this library did not make. */
  EXPECT_OK(mscclppContextDestroy(ctx));
  EXPECT_REFUSED(mscclppEndpointCreate(ctx, mscclppTransportP2P, mscclppDeviceCPU, 0, &ep), mscclppInvalidUsage,
                 "released or not created by this library");
  EXPECT_REFUSED(mscclppContextDestroy(ctx), mscclppInvalidUsage, "released");
  EXPECT_OK(mscclppBootstrapDestroy(b));
  EXPECT_REFUSED(mscclppBootstrapRank(b, &i), mscclppInvalidUsage, "released");
  EXPECT_REFUSED(mscclppBootstrapBarrierAll(b), mscclppInvalidUsage, "released");
  EXPECT_REFUSED(mscclppBootstrapDestroy(b), mscclppInvalidUsage, "released");
  long fake[4] = {0};
  EXPECT_REFUSED(mscclppContextDestroy((mscclppContext_t)(void*)fake), mscclppInvalidUsage,
                 "not created by this library");
  EXPECT_REFUSED(mscclppSemaphoreDestroy((mscclppSemaphore_t)(void*)fake), mscclppInvalidUsage,
                 "not created by this library");
  EXPECT_REFUSED(mscclppMemoryRelease((mscclppRegMem_t)(void*)fake), mscclppInvalidUsage,
                 "not created by this library");
  EXPECT_REFUSED(mscclppConnectionRelease((mscclppConnection_t)(void*)fake), mscclppInvalidUsage,
                 "not created by this library");
  EXPECT_REFUSED(mscclppFutureWait((mscclppFuture_t)(void*)fake), mscclppInvalidUsage,
                 "not created by this library");
}

/* One rank: through a unique id and through an address. */
static void oneRank(void) {
  mscclppUniqueId id;
  mscclppBootstrap_t b = NULL;
  int rank = -1, nranks = -1;
  char data[16] = "one rank";
  EXPECT_OK(mscclppBootstrapCreateUniqueId(&id));
  EXPECT_OK(mscclppBootstrapCreateFromId(&b, 0, 1, id));
  EXPECT_OK(mscclppBootstrapRank(b, &rank));
  EXPECT_OK(mscclppBootstrapSize(b, &nranks));
  expect(rank == 0 && nranks == 1, "1 rank: rank 0 of 1");
  EXPECT_OK(mscclppBootstrapAllGatherBytes(b, data, sizeof(data)));
  expect(strcmp(data, "one rank") == 0, "1 rank: all-gather keeps the data");
  EXPECT_OK(mscclppBootstrapAllGatherBytes(b, NULL, 0));
  EXPECT_OK(mscclppBootstrapBarrierAll(b));
  EXPECT_OK(mscclppBootstrapDestroy(b));

  char addr[64];
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", 20000 + (int)(getpid() % 20000));
  b = NULL;
  EXPECT_OK(mscclppBootstrapCreate(&b, 0, 1, addr));
  EXPECT_OK(mscclppBootstrapBarrierAll(b));
  EXPECT_OK(mscclppBootstrapDestroy(b));
}

/* Two ranks in two threads of this process. */
typedef struct {
  int rank;
  mscclppUniqueId id;
} rankArgs;

static void* twoRanks(void* arg) {
  const rankArgs* a = (const rankArgs*)arg;
  const int me = a->rank, peer = 1 - a->rank;
  mscclppBootstrap_t b = NULL;
  int rank = -1, nranks = -1;
  EXPECT_OK(mscclppBootstrapCreateFromId(&b, me, 2, a->id));
  if (b == NULL) return NULL;
  EXPECT_OK(mscclppBootstrapRank(b, &rank));
  EXPECT_OK(mscclppBootstrapSize(b, &nranks));
  expect(rank == me && nranks == 2, "2 ranks: rank and size");

  int gathered[2] = {0, 0};
  gathered[me] = 100 + me;
  EXPECT_OK(mscclppBootstrapAllGatherBytes(b, gathered, sizeof(int)));
  expect(gathered[0] == 100 && gathered[1] == 101, "2 ranks: all-gather");

  char msg[6] = "hello", got[6] = {0}, small[4] = "abc", big[8];
  if (me == 0) {
    EXPECT_OK(mscclppBootstrapSend(b, msg, sizeof(msg), peer, 7));
    EXPECT_OK(mscclppBootstrapSend(b, small, sizeof(small), peer, 8));
    EXPECT_OK(mscclppBootstrapSend(b, NULL, 0, peer, 9));
  } else {
    EXPECT_OK(mscclppBootstrapRecv(b, got, sizeof(got), peer, 7));
    expect(strcmp(got, "hello") == 0, "2 ranks: recv the message");
    expectResult(mscclppBootstrapRecv(b, big, sizeof(big), peer, 8), mscclppRemoteError,
                 "2 ranks: recv of 8 bytes of a 4-byte message");
    EXPECT_OK(mscclppBootstrapRecv(b, NULL, 0, peer, 9));
  }
  EXPECT_OK(mscclppBootstrapBarrierAll(b));

  /* A communicator's Connect fails on both sides (no GPU), through the future, quickly. */
  mscclppContext_t ctx = NULL;
  mscclppCommunicator_t comm = NULL;
  mscclppFuture_t fut = NULL;
  mscclppConnection_t conn = NULL;
  mscclppSemaphore_t sema = NULL;
  EXPECT_OK(mscclppContextCreate(&ctx));
  EXPECT_OK(mscclppCommunicatorCreate(b, ctx, &comm));
  double start = now();
  EXPECT_OK(mscclppCommunicatorConnect(comm, mscclppTransportP2P, 0, peer, 0, &fut));
  mscclppResult_t r = mscclppFutureGetConnection(fut, &conn);
  char what[256];
  snprintf(what, sizeof(what), "rank %d: FutureGetConnection fails without a GPU (got %d: %s)", me, (int)r,
           mscclppGetErrorString(r));
  expect(r == mscclppUnhandledCudaError || r == mscclppRemoteError, what);
  expect(conn == NULL, "failed FutureGetConnection leaves NULL");
  expect(mscclppFutureWait(fut) == r, "FutureWait returns the same result");
  expect(now() - start < 8, "the failed Connect ends well before the bootstrap timeout");
  expectResult(mscclppFutureGetSemaphore(fut, &sema), mscclppInvalidUsage, "FutureGetSemaphore of a connection future");
  expectResult(mscclppFutureGetMemory(fut, NULL), mscclppInvalidArgument, "FutureGetMemory(NULL)");
  EXPECT_OK(mscclppFutureDestroy(fut));
  expectResult(mscclppFutureWait(fut), mscclppInvalidUsage, "FutureWait of a destroyed future");
  expectResult(mscclppFutureGetConnection(fut, &conn), mscclppInvalidUsage, "FutureGetConnection of a destroyed future");

  EXPECT_OK(mscclppBootstrapBarrierAll(b));
  EXPECT_OK(mscclppCommunicatorDestroy(comm));
  EXPECT_OK(mscclppContextDestroy(ctx));
  EXPECT_OK(mscclppBootstrapDestroy(b));
  return NULL;
}

/* The collectives' C API (mscclpp/collectives.h): NULL and released handles are refused before any
 * GPU work; the calls with valid handles run on the GPU host (tests/gpu/collectives). */
static void collectiveRefusals(void) {
  mscclppCollComm_t cc = NULL;
  int i = 0;
  char buf[64];
  EXPECT_REFUSED(mscclppCollCommCreate(NULL, 0, &cc), mscclppInvalidArgument, "communicator is NULL");
  EXPECT_REFUSED(mscclppCollCommDestroy(NULL), mscclppInvalidArgument, "collective communicator is NULL");
  EXPECT_REFUSED(mscclppCollCommRank(NULL, &i), mscclppInvalidArgument, "collective communicator is NULL");
  EXPECT_REFUSED(mscclppCollCommSize(NULL, &i), mscclppInvalidArgument, "collective communicator is NULL");
  EXPECT_REFUSED(mscclppCollCommDevice(NULL, &i), mscclppInvalidArgument, "collective communicator is NULL");
  EXPECT_REFUSED(mscclppCollCommAbort(NULL), mscclppInvalidArgument, "collective communicator is NULL");
  mscclppResult_t asyncError;
  EXPECT_REFUSED(mscclppCollCommGetAsyncError(NULL, &asyncError, NULL, 0), mscclppInvalidArgument,
                 "collective communicator is NULL");
  EXPECT_REFUSED(mscclppCollCommGetAsyncError(NULL, NULL, NULL, 0), mscclppInvalidArgument, "asyncError is NULL");
  EXPECT_REFUSED(mscclppAllReduce(buf, buf, 4, mscclppFloat32, mscclppSum, NULL, NULL), mscclppInvalidArgument,
                 "collective communicator is NULL");
  EXPECT_REFUSED(mscclppAllGather(buf, buf, 4, mscclppFloat32, NULL, NULL), mscclppInvalidArgument,
                 "collective communicator is NULL");
  float factor = 2;
  EXPECT_REFUSED(mscclppScale(buf, buf, 4, mscclppFloat32, &factor, 0, NULL, NULL), mscclppInvalidArgument,
                 "collective communicator is NULL");
  /* A handle that was never the library's. */
  EXPECT_REFUSED(mscclppAllReduce(buf, buf, 4, mscclppFloat32, mscclppSum, (mscclppCollComm_t)buf, NULL),
                 mscclppInvalidUsage, "collective communicator");
  EXPECT_REFUSED(mscclppScale(buf, buf, 4, mscclppFloat32, &factor, 1, (mscclppCollComm_t)buf, NULL),
                 mscclppInvalidUsage, "collective communicator");
  expect(cc == NULL, "a refused mscclppCollCommCreate leaves *collComm NULL");

  mscclppCollRegistration_t reg = (mscclppCollRegistration_t)buf;
  EXPECT_REFUSED(mscclppCollRegister(NULL, buf, sizeof(buf), &reg), mscclppInvalidArgument,
                 "collective communicator is NULL");
  expect(reg == NULL, "a refused mscclppCollRegister leaves *reg NULL");
  EXPECT_REFUSED(mscclppCollRegister(NULL, buf, sizeof(buf), NULL), mscclppInvalidArgument, "registration is NULL");
  EXPECT_REFUSED(mscclppCollRegister((mscclppCollComm_t)buf, buf, sizeof(buf), &reg), mscclppInvalidUsage,
                 "collective communicator");
  EXPECT_REFUSED(mscclppCollDeregister(NULL, NULL), mscclppInvalidArgument, "collective communicator is NULL");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  expectResult(mscclppSetLogHandler(captureLog), mscclppSuccess, "SetLogHandler");
  expectResult(mscclppSetBootstrapConnTimeout(20), mscclppSuccess, "SetBootstrapConnTimeout(20)");

  nullRefusals();
  collectiveRefusals();
  liveAndReleasedRefusals();
  oneRank();

  rankArgs args[2];
  EXPECT_OK(mscclppBootstrapCreateUniqueId(&args[0].id));
  args[1].id = args[0].id;
  pthread_t threads[2];
  for (int r = 0; r < 2; r++) {
    args[r].rank = r;
    if (pthread_create(&threads[r], NULL, twoRanks, &args[r]) != 0) {
      printf("FAIL: pthread_create\n");
      return 1;
    }
  }
  for (int r = 0; r < 2; r++) pthread_join(threads[r], NULL);

  printf("capi core refusals: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

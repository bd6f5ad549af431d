// fabric_hostmem checks the C face of the libfabric transport: two ranks (threads of this
// process, one bootstrap) connect host memory over IB (the network provider: MSCCLPP_NET_PROVIDER,
// else the best the machine offers; tcp on loopback here) and over SHM through core.h's
// communicator, exchange registered memory, and each writes 1 MiB plus a signal into the other's
// buffer, five rounds (odd ones with mscclppConnectionWriteWithSignal); the receiver waits for the signal (mscclppContextProgress) and checks
// every byte. Real providers, no GPU. Prints "fabric hostmem: N passed, M failed".
#define _POSIX_C_SOURCE 200112L

#include <mscclpp/core.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

/* A call that must succeed: on failure the rank gives up. */
#define REQUIRE_OK(call)                                 \
  do {                                                   \
    mscclppResult_t r_ = (call);                         \
    expectResult(r_, mscclppSuccess, #call);             \
    if (r_ != mscclppSuccess) return NULL;               \
  } while (0)

enum { kBytes = 1 << 20, kRounds = 5 };

typedef struct {
  int rank;
  mscclppTransport_t transport;
  mscclppUniqueId id;
} rankArgs;

static void* rank(void* arg) {
  const rankArgs* a = (const rankArgs*)arg;
  const int me = a->rank, peer = 1 - a->rank;
  mscclppBootstrap_t b = NULL;
  mscclppContext_t ctx = NULL;
  mscclppCommunicator_t comm = NULL;
  mscclppFuture_t fut = NULL;
  mscclppConnection_t conn = NULL;
  mscclppRegMem_t src = NULL, dst = NULL, peerDst = NULL;
  REQUIRE_OK(mscclppBootstrapCreateFromId(&b, me, 2, a->id));
  REQUIRE_OK(mscclppContextCreate(&ctx));
  REQUIRE_OK(mscclppCommunicatorCreate(b, ctx, &comm));
  REQUIRE_OK(mscclppCommunicatorConnect(comm, a->transport, MSCCLPP_DEVICE_ID_CPU, peer, 0, &fut));
  REQUIRE_OK(mscclppFutureGetConnection(fut, &conn));
  REQUIRE_OK(mscclppFutureDestroy(fut));

  unsigned char* out = malloc(kBytes);
  unsigned char* in = aligned_alloc(64, kBytes + 64);
  memset(in, 0, kBytes + 64);
  volatile uint64_t* signal = (volatile uint64_t*)(in + kBytes);
  REQUIRE_OK(mscclppRegisterMemory(ctx, out, kBytes, a->transport, &src));
  REQUIRE_OK(mscclppRegisterMemory(ctx, in, kBytes + 64, a->transport, &dst));
  REQUIRE_OK(mscclppCommunicatorSendMemory(comm, dst, peer, 1, &fut));
  REQUIRE_OK(mscclppFutureWait(fut));
  REQUIRE_OK(mscclppFutureDestroy(fut));
  REQUIRE_OK(mscclppCommunicatorRecvMemory(comm, peer, 1, &fut));
  REQUIRE_OK(mscclppFutureGetMemory(fut, &peerDst));
  REQUIRE_OK(mscclppFutureDestroy(fut));

  for (uint64_t k = 1; k <= kRounds; k++) {
    for (int i = 0; i < kBytes; i++) out[i] = (unsigned char)(i * 7 + me + (int)k);
    if (k % 2) {  /* odd rounds: the write and its signal as one call */
      REQUIRE_OK(mscclppConnectionWriteWithSignal(conn, peerDst, 0, src, 0, kBytes, peerDst, kBytes, k));
    } else {
      REQUIRE_OK(mscclppConnectionWrite(conn, peerDst, 0, src, 0, kBytes));
      REQUIRE_OK(mscclppConnectionUpdateAndSync(conn, peerDst, kBytes, k));
    }
    double deadline = now() + 30;
    mscclppResult_t progress = mscclppSuccess;
    while (*signal != k && now() < deadline && progress == mscclppSuccess)
      progress = mscclppContextProgress(ctx, a->transport);
    expect(progress == mscclppSuccess, "mscclppContextProgress while waiting");
    char what[128];
    snprintf(what, sizeof(what), "transport %d, rank %d, round %d: the signal came", (int)a->transport, me, (int)k);
    expect(*signal == k, what);
    int wrong = 0;
    for (int i = 0; i < kBytes; i++) wrong += in[i] != (unsigned char)(i * 7 + peer + (int)k);
    snprintf(what, sizeof(what), "transport %d, rank %d, round %d: %d of %d bytes wrong", (int)a->transport, me,
             (int)k, wrong, kBytes);
    expect(wrong == 0, what);
    REQUIRE_OK(mscclppConnectionFlush(conn, 30000));
    REQUIRE_OK(mscclppBootstrapBarrierAll(b));  // both have read round k before round k+1 lands
  }
  expect(mscclppConnectionWrite(conn, peerDst, kBytes, src, 0, 128) == mscclppInvalidArgument,
         "a write past the peer's memory is refused");
  REQUIRE_OK(mscclppMemoryRelease(peerDst));
  REQUIRE_OK(mscclppMemoryRelease(src));
  REQUIRE_OK(mscclppMemoryRelease(dst));
  REQUIRE_OK(mscclppConnectionRelease(conn));
  REQUIRE_OK(mscclppCommunicatorDestroy(comm));
  REQUIRE_OK(mscclppContextDestroy(ctx));
  REQUIRE_OK(mscclppBootstrapDestroy(b));
  free(out);
  free(in);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const mscclppTransport_t transports[] = {mscclppTransportIB, mscclppTransportSHM};
  for (int t = 0; t < 2; t++) {
    rankArgs args[2];
    if (mscclppBootstrapCreateUniqueId(&args[0].id) != mscclppSuccess) {
      printf("FAIL: unique id\n");
      return 1;
    }
    args[1].id = args[0].id;
    pthread_t threads[2];
    for (int r = 0; r < 2; r++) {
      args[r].rank = r;
      args[r].transport = transports[t];
      if (pthread_create(&threads[r], NULL, rank, &args[r]) != 0) {
        printf("FAIL: pthread_create\n");
        return 1;
      }
    }
    for (int r = 0; r < 2; r++) pthread_join(threads[r], NULL);
  }
  printf("fabric hostmem: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

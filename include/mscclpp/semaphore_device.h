/*
 * mscclpp/semaphore_device.h: the device side of semaphores, counters that let one GPU tell a
 * peer that data is ready.
 *
 * A semaphore is a pair of monotonically increasing 64-bit counts: the signaller writes the number
 * of signals it has sent into the waiter's inbound token; the waiter counts the signals it has
 * waited for in expectedInboundToken and waits until the inbound token reaches that count. The
 * counters live in device memory and persist across kernel launches.
 *
 * Threads: the methods of one handle update plain (non-atomic) counters, so one GPU thread at a
 * time may call them; use one handle per signalling or waiting thread.
 */
#ifndef MSCCLPP_SEMAPHORE_DEVICE_H_
#define MSCCLPP_SEMAPHORE_DEVICE_H_

#include <mscclpp/device.h>

#if defined(__CUDACC__)
/* The waits and polls of both semaphore kinds, on a pair of counters. mscclppWaitInbound: waits
 * for one more signal (++*expected, then spins on acquire loads of *inbound until it reaches
 * that count, bounded by maxSpinCount). mscclppPollInbound: one acquire load; consumes a signal
 * beyond those waited for, if one has arrived. */
MSCCLPP_DEVICE_INLINE void mscclppWaitInbound(const uint64_t* inbound, uint64_t* expected, int64_t maxSpinCount) {
  const uint64_t want = ++*expected;
  for (int64_t spins = 0; mscclppLoadAcquireSys(inbound) < want; ++spins) mscclppSpinCheck(spins, maxSpinCount);
}
MSCCLPP_DEVICE_INLINE bool mscclppPollInbound(const uint64_t* inbound, uint64_t* expected) {
  if (mscclppLoadAcquireSys(inbound) <= *expected) return false;
  ++*expected;
  return true;
}
#endif

/* A semaphore whose peer is a GPU thread writing directly (memory channels). */
typedef struct mscclppMemorySemaphoreDeviceHandle {
  uint64_t* inboundToken;         /* local device memory: the peer's signal count lands here */
  uint64_t* outboundToken;        /* local device memory: signals this side has sent */
  uint64_t* remoteInboundToken;   /* the peer's inboundToken, mapped into this device */
  uint64_t* expectedInboundToken; /* local device memory: signals this side has waited for */

#if defined(__CUDACC__)
  /* Sends one signal: ++*outboundToken, then a release store (st.release.sys) of the new count to
   * *remoteInboundToken, so every write the thread made before is visible to the peer once its
   * wait() returns. Never blocks. */
  MSCCLPP_DEVICE_INLINE void signal() { mscclppStoreReleaseSys(remoteInboundToken, ++*outboundToken); }

  /* signal() with a relaxed store (st.relaxed.sys): synchronises execution only; earlier writes
   * are not ordered before it. Never blocks. */
  MSCCLPP_DEVICE_INLINE void relaxedSignal() { mscclppStoreRelaxedSys(remoteInboundToken, ++*outboundToken); }

  /* Waits for one more signal: ++*expectedInboundToken, then spins on an acquire load
   * (ld.acquire.sys) of *inboundToken until it reaches that count; the peer's writes before its
   * signal() are visible afterwards. maxSpinCount bounds the spin (see mscclpp/device.h). */
  MSCCLPP_DEVICE_INLINE void wait(int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    mscclppWaitInbound(inboundToken, expectedInboundToken, maxSpinCount);
  }

  /* wait() with relaxed loads (ld.relaxed.sys): synchronises execution only. */
  MSCCLPP_DEVICE_INLINE void relaxedWait(int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    const uint64_t expected = ++*expectedInboundToken;
    for (int64_t spins = 0; mscclppLoadRelaxedSys(inboundToken) < expected; ++spins) {
      mscclppSpinCheck(spins, maxSpinCount);
    }
  }

  /* Non-blocking wait(): one acquire load; when a signal beyond those waited for has arrived,
   * consumes it (++*expectedInboundToken) and returns true, else returns false. */
  MSCCLPP_DEVICE_INLINE bool poll() { return mscclppPollInbound(inboundToken, expectedInboundToken); }
#endif
} mscclppMemorySemaphoreDeviceHandle;

MSCCLPP_STATIC_ASSERT(sizeof(mscclppMemorySemaphoreDeviceHandle) == 32, "mscclppMemorySemaphoreDeviceHandle is 32 bytes");

/* A semaphore whose peer is a host proxy (port channels): the peer's proxy writes the count. */
typedef struct mscclppHostSemaphoreDeviceHandle {
  uint64_t* inboundToken;         /* local device memory, written by the peer's proxy */
  uint64_t* expectedInboundToken; /* local device memory: signals this side has waited for */

#if defined(__CUDACC__)
  /* As mscclppMemorySemaphoreDeviceHandle::wait(): ++expected, acquire spin on *inboundToken. */
  MSCCLPP_DEVICE_INLINE void wait(int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    mscclppWaitInbound(inboundToken, expectedInboundToken, maxSpinCount);
  }

  /* As mscclppMemorySemaphoreDeviceHandle::poll(): one acquire load, consumes a signal if any. */
  MSCCLPP_DEVICE_INLINE bool poll() { return mscclppPollInbound(inboundToken, expectedInboundToken); }
#endif
} mscclppHostSemaphoreDeviceHandle;

MSCCLPP_STATIC_ASSERT(sizeof(mscclppHostSemaphoreDeviceHandle) == 16, "mscclppHostSemaphoreDeviceHandle is 16 bytes");

#endif /* MSCCLPP_SEMAPHORE_DEVICE_H_ */

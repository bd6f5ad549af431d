/*
 * mscclpp/fifo_device.h: the trigger ring between GPU threads (many producers) and the host proxy
 * (one consumer), as port channels use it.
 *
 * A trigger keeps the bit layout of the legacy mscclppTrigger (include/mscclppfifo.h), written
 * here with named shifts and widths instead of bit-fields:
 *   fst = size      [0, 32) | srcOffset [32, 64)
 *   snd = dstOffset [0, 32) | connId    [32, 42) | type [42, 45) | reserved, zero [45, 64)
 * A slot whose fst is 0 is empty, so a request must never have size == 0 and srcOffset == 0;
 * requests that move no data carry size 1. Values wider than their field are truncated.
 */
#ifndef MSCCLPP_FIFO_DEVICE_H_
#define MSCCLPP_FIFO_DEVICE_H_

#include <mscclpp/device.h>

/* Field widths (equal to MSCCLPP_BITS_* of the legacy header). */
#define MSCCLPP_TRIGGER_BITS_SIZE 32
#define MSCCLPP_TRIGGER_BITS_OFFSET 32
#define MSCCLPP_TRIGGER_BITS_CONNID 10
#define MSCCLPP_TRIGGER_BITS_TYPE 3

/* Field positions: size and srcOffset in fst, the others in snd. */
#define MSCCLPP_TRIGGER_SHIFT_SIZE 0
#define MSCCLPP_TRIGGER_SHIFT_SRC_OFFSET (MSCCLPP_TRIGGER_SHIFT_SIZE + MSCCLPP_TRIGGER_BITS_SIZE)
#define MSCCLPP_TRIGGER_SHIFT_DST_OFFSET 0
#define MSCCLPP_TRIGGER_SHIFT_CONNID (MSCCLPP_TRIGGER_SHIFT_DST_OFFSET + MSCCLPP_TRIGGER_BITS_OFFSET)
#define MSCCLPP_TRIGGER_SHIFT_TYPE (MSCCLPP_TRIGGER_SHIFT_CONNID + MSCCLPP_TRIGGER_BITS_CONNID)

/* Request kinds; the bits combine (equal to mscclppData, mscclppFlag, mscclppSync). */
#define MSCCLPP_TRIGGER_DATA 0x1 /* copy size bytes from the local src+srcOffset to the remote dst+dstOffset */
#define MSCCLPP_TRIGGER_FLAG 0x2 /* signal the peer's semaphore, after the data of this trigger */
#define MSCCLPP_TRIGGER_SYNC 0x4 /* complete every earlier request, then release the slot */

/* Size field of requests that move no data: keeps fst non-zero. */
#define MSCCLPP_TRIGGER_NO_DATA_SIZE 1

/* One request. Written by a GPU thread with one 128-bit store, read and cleared by the proxy. */
typedef struct mscclppProxyTrigger {
  MSCCLPP_ALIGNAS(16) uint64_t fst; /* size and srcOffset (see above); 0 means the slot is empty */
  uint64_t snd;                     /* dstOffset, connId and type (see above) */
} mscclppProxyTrigger;

MSCCLPP_STATIC_ASSERT(sizeof(mscclppProxyTrigger) == 16, "mscclppProxyTrigger is 16 bytes");
MSCCLPP_STATIC_ASSERT(MSCCLPP_ALIGNOF(mscclppProxyTrigger) == 16, "mscclppProxyTrigger is 16-byte aligned");

/* MSCCLPP_TRIGGER_MASK(bits): the low `bits` bits set. */
#define MSCCLPP_TRIGGER_MASK(bits) ((((uint64_t)1) << (bits)) - 1)

/* Builds the trigger of a request (host, device and C). Each value is truncated to its field. */
MSCCLPP_HOST_DEVICE_INLINE mscclppProxyTrigger mscclppProxyTriggerEncode(uint64_t type, uint64_t dstOffset,
                                                                       uint64_t srcOffset, uint64_t size,
                                                                       uint64_t connId) {
  mscclppProxyTrigger t;
  t.fst = ((size & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_SIZE)) << MSCCLPP_TRIGGER_SHIFT_SIZE) |
          ((srcOffset & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_OFFSET)) << MSCCLPP_TRIGGER_SHIFT_SRC_OFFSET);
  t.snd = ((dstOffset & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_OFFSET)) << MSCCLPP_TRIGGER_SHIFT_DST_OFFSET) |
          ((connId & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_CONNID)) << MSCCLPP_TRIGGER_SHIFT_CONNID) |
          ((type & MSCCLPP_TRIGGER_MASK(MSCCLPP_TRIGGER_BITS_TYPE)) << MSCCLPP_TRIGGER_SHIFT_TYPE);
  return t;
}

/*
 * The producer side of a ring, passed to kernels by value (inside a port channel). Head and tail
 * are free-running counters; request n goes to triggers[n % size].
 */
typedef struct mscclppFifoDeviceHandle {
  mscclppProxyTrigger* triggers; /* host-pinned ring of `size` slots, mapped into the device */
  uint64_t* tailReplica;         /* device memory: requests the proxy has released, published every few (may lag) */
  uint64_t* head;                /* device memory: next request number to claim; only GPU threads touch it */
  uint32_t size;                 /* number of slots, a power of two, at least the proxy's publication interval */
  uint32_t reserved;             /* zero */

#if defined(__CUDACC__)
  /*
   * Queues `trigger` (its fst must be non-zero) and returns its request number, for sync().
   * Any number of threads at once. Claims a number with atomicAdd on *head; spins (relaxed loads)
   * while the ring is a whole lap ahead of *tailReplica, then while the slot still holds an older
   * request; then a release fence (fence.acq_rel.sys: the thread's earlier writes, such as the
   * data to send, are visible system-wide first) and one 128-bit store of the trigger.
   * maxSpinCount bounds each of the two spins (see mscclpp/device.h); unbounded by default.
   */
  MSCCLPP_DEVICE_INLINE uint64_t push(mscclppProxyTrigger trigger, int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    uint64_t number = atomicAdd(reinterpret_cast<unsigned long long*>(head), 1ULL);
    for (int64_t spins = 0; number >= mscclppLoadRelaxedSys(tailReplica) + size; ++spins) {
      mscclppSpinCheck(spins, maxSpinCount);
    }
    mscclppProxyTrigger* slot = &triggers[number & (size - 1)];
    /* A stale tail may let the thread in before the proxy has cleared the slot. */
    for (int64_t spins = 0; mscclppLoadRelaxedSys(&slot->fst) != 0; ++spins) {
      mscclppSpinCheck(spins, maxSpinCount);
    }
    mscclppFenceSys();
    mscclppStoreVolatile128(slot, trigger.fst, trigger.snd);
    return number;
  }

  /* push() of mscclppProxyTriggerEncode(type, dstOffset, srcOffset, size, connId). */
  MSCCLPP_DEVICE_INLINE uint64_t push(uint64_t type, uint64_t dstOffset, uint64_t srcOffset, uint64_t size,
                                      uint64_t connId, int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    return push(mscclppProxyTriggerEncode(type, dstOffset, srcOffset, size, connId), maxSpinCount);
  }

  /*
   * Waits until request `number` (a return value of push) has been released by the proxy: its
   * slot's fst is 0, or *tailReplica has passed it. Relaxed polling, then fence.acq_rel.sys, so
   * the caller's later accesses (reusing a source buffer) follow the release. For a request with
   * MSCCLPP_TRIGGER_SYNC that means every earlier request of the ring has completed. maxSpinCount
   * bounds the spin; unbounded by default (the legacy header's flush has no bound either).
   */
  MSCCLPP_DEVICE_INLINE void sync(uint64_t number, int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    for (int64_t spins = 0; !released(number); ++spins) mscclppSpinCheck(spins, maxSpinCount);
    mscclppFenceSys();
  }

  /* Non-blocking sync() without its fence: one relaxed poll of whether request `number` has been
   * released. Never blocks; after it returns true, mscclppFenceSys() before reusing a source. */
  MSCCLPP_DEVICE_INLINE bool released(uint64_t number) const {
    const mscclppProxyTrigger* slot = &triggers[number & (size - 1)];
    return mscclppLoadRelaxedSys(&slot->fst) == 0 || mscclppLoadRelaxedSys(tailReplica) > number;
  }
#endif
} mscclppFifoDeviceHandle;

MSCCLPP_STATIC_ASSERT(sizeof(mscclppFifoDeviceHandle) == 32, "mscclppFifoDeviceHandle is 32 bytes");

#endif /* MSCCLPP_FIFO_DEVICE_H_ */

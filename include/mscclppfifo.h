/*
 * mscclppfifo.h: the request queue between GPU kernels and the CPU proxy (MSCCL++ 0.1 ABI).
 *
 * GPU threads push 16-byte triggers into a ring that lives in host-pinned memory mapped into the
 * device; one proxy thread on the host pops them, performs the transfer, signal or flush they ask
 * for, and clears the slot. Many GPU threads may push concurrently; there is a single consumer.
 *
 * The layouts below are part of the binary interface: the Go mirrors in core/fifo and the layout
 * tests in core/fifo, internal/abi and tests/abi pin every size, offset and bit position.
 */
#ifndef MSCCLPPFIFO_H_
#define MSCCLPPFIFO_H_

#include <stdint.h>

#include <mscclpp/fifo_device.h>

/* Number of trigger slots in the ring. mscclpp.h defines it before including this header; the
 * fallback keeps this header usable on its own and must agree with mscclpp.h. */
#ifndef MSCCLPP_PROXY_FIFO_SIZE
#define MSCCLPP_PROXY_FIFO_SIZE 128
#endif

/* What a trigger asks the proxy to do; the bits combine (e.g. mscclppData | mscclppFlag). */
typedef enum : uint64_t {
  mscclppData = 0x1, /* copy dataSize bytes from srcDataOffset (local) to dstDataOffset (remote) */
  mscclppFlag = 0x2, /* publish this connection's signal epoch to the remote side */
  mscclppSync = 0x4, /* complete every earlier request of the connection, then clear the slot */
} mscclppTriggerType_t;

/* Widths of the trigger bit-fields. */
#define MSCCLPP_BITS_SIZE 32   /* dataSize: bytes to move */
#define MSCCLPP_BITS_OFFSET 32 /* srcDataOffset and dstDataOffset: byte offsets in the registered buffers */
#define MSCCLPP_BITS_TYPE 3    /* type: a combination of mscclppTriggerType_t bits */
#define MSCCLPP_BITS_CONNID 10 /* connId: index of the connection within its proxy */

/*
 * One request, written by a GPU thread with a single 128-bit store and read by the proxy.
 * A slot whose value[0] is 0 is empty, so a request must never have dataSize == 0 together with
 * srcDataOffset == 0 (the device functions of mscclppDevConn push dataSize 1 for signal and flush).
 */
union alignas(16) mscclppTrigger {
  uint64_t value[2]; /* the two raw words: value[0] holds size and source offset, value[1] the rest */
  struct {
    uint64_t dataSize : MSCCLPP_BITS_SIZE;        /* value[0] bits 0-31: bytes to move */
    uint64_t srcDataOffset : MSCCLPP_BITS_OFFSET; /* value[0] bits 32-63: offset in the local buffer */
    uint64_t dstDataOffset : MSCCLPP_BITS_OFFSET; /* value[1] bits 0-31: offset in the remote buffer */
    uint64_t connId : MSCCLPP_BITS_CONNID;        /* value[1] bits 32-41: the connection's proxy index */
    uint64_t type : MSCCLPP_BITS_TYPE;            /* value[1] bits 42-44: mscclppTriggerType_t bits */
    uint64_t : (64 - MSCCLPP_BITS_OFFSET - MSCCLPP_BITS_CONNID - MSCCLPP_BITS_TYPE); /* reserved, zero */
  } fields; /* the same 16 bytes seen as named bit-fields */
};

/* Pointer to a trigger slot, as the proxy handles it. */
typedef mscclppTrigger* mscclppTrigger_t;

/*
 * The producer side of the ring, one per connection, held in device memory inside mscclppDevConn.
 * Head and tail are free-running counters; slot n is triggerFifo[n % MSCCLPP_PROXY_FIFO_SIZE].
 */
struct mscclppConcurrentFifo {
#ifdef __CUDACC__
  /*
   * Device only, any number of threads at once. Claims the next slot, waits until the ring has room
   * and the slot has been cleared by the proxy, then writes the request in one 128-bit store
   * (mscclppFifoDeviceHandle::push, after a system-wide release fence). Blocks (spins) while the
   * ring is full. Returns the claimed slot number, which flush-style callers use to wait for
   * completion. Arguments must fit their bit-fields (see MSCCLPP_BITS_*); larger values are
   * truncated to their field.
   */
  __forceinline__ __device__ uint64_t push(uint64_t type, uint64_t dstDataOffset, uint64_t srcDataOffset,
                                           uint64_t dataSize) {
    /* The ring is the one of mscclpp/fifo_device.h (same trigger bits, same slot protocol), seen
     * through this connection's fields: one producer implementation for both headers. */
    mscclppFifoDeviceHandle ring;
    ring.triggers = reinterpret_cast<mscclppProxyTrigger*>(triggerFifo);
    ring.tailReplica = triggerFifoTail;
    ring.head = triggerFifoHead;
    ring.size = MSCCLPP_PROXY_FIFO_SIZE;
    ring.reserved = 0;
    return ring.push(type, dstDataOffset, srcDataOffset, dataSize, static_cast<uint64_t>(connId));
  }
#endif
  mscclppTrigger* triggerFifo; /* ring of MSCCLPP_PROXY_FIFO_SIZE slots, host-pinned and mapped into the device */
  uint64_t* triggerFifoTail;   /* device memory: a copy of the proxy's tail, refreshed now and then (may lag) */
  uint64_t* triggerFifoHead;   /* device memory: next slot number to claim; only the GPU touches it */
  int connId;                  /* this connection's index at the proxy, copied into every trigger */
};

#endif /* MSCCLPPFIFO_H_ */
